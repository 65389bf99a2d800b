"""Errors raised on bad input: each names where (file or source, line) and what is wrong, in one line."""

from __future__ import annotations


class InputError(ValueError):
    """A problem in an input table: a malformed line, a duplicate pair, a grade the spec cannot use."""

    def __init__(self, source: str, problem: str, line: int | None = None, unit: str = "line") -> None:
        self.source = source
        self.line = line
        self.problem = problem
        self.unit = unit
        where = source if line is None else f"{source}, {unit} {line}"
        super().__init__(f"{where}: {problem}")


class UsageError(InputError):
    """Options that contradict each other or cannot apply: how the caller asked, not what an input holds (the command
    line's usage exit code, 2). An InputError still, so callers that catch those catch these."""
