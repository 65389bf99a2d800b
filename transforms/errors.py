"""Errors raised on bad input: each names where (file or source, line) and what is wrong, in one line."""

from __future__ import annotations


class InputError(ValueError):
    """A problem in an input table: a malformed line, a duplicate pair, a grade the spec cannot use."""

    def __init__(self, source: str, problem: str, line: int | None = None, unit: str = "line", more: int = 0) -> None:
        """`more`: how many further bad lines (rows) the input has beyond this one, said after the problem; kept
        apart (`first_problem`, `more`) so that the problems of pieces of one file read apart (a scaled-out ingest)
        add up to the whole file's."""
        self.source = source
        self.line = line
        self.first_problem = problem
        self.more = more
        self.problem = f"{problem} ({more} more bad {unit}s)" if more else problem
        self.unit = unit
        where = source if line is None else f"{source}, {unit} {line}"
        super().__init__(f"{where}: {self.problem}")

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # Rebuilt from its fields, not its message: it crosses processes (a Dask worker's task raises it), and a
        # subclass's own constructor may take other arguments.
        return _rebuilt, (type(self), self.source, self.first_problem, self.line, self.unit, self.more)


def _rebuilt(cls: type[InputError], source: str, problem: str, line: int | None, unit: str, more: int) -> InputError:
    error = cls.__new__(cls)
    InputError.__init__(error, source, problem, line, unit, more)
    return error


class UsageError(InputError):
    """Options that contradict each other or cannot apply: how the caller asked, not what an input holds (the command
    line's usage exit code, 2). An InputError still, so callers that catch those catch these."""
