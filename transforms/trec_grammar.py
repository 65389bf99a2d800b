"""The TREC text grammar of qrels and runs, declared once. docs/trec-format.md says it in words, case by case, with
what trec_eval 10 does with each and where judged deliberately differs.

Belongs here: what a line of TREC text is made of (where it ends, its blanks, its fields, which lines are skipped),
each kind's columns, and what is built from them: the exact parser's patterns and expressions (transforms/parse.py),
the tests by which a reader that splits lines on one separator byte (the fast reader, flows/store/readers.py) tells
that the fields it split are the grammar's, and the first field of a line of bytes (where a run may be cut into
pieces, flows/store/scaled.py). Nothing here reads a file.

The grammar, in short: text is UTF-8 (a byte order mark at the start of the file is no part of it); a line ends at a
line feed; the blanks are the other bytes C's `isspace` counts (space, tab, carriage return, vertical tab, form
feed), and any run of them separates two fields, blanks at either end of a line being no field; a line of blanks
only, and a line whose first field begins with `#`, is skipped; every other line holds the kind's columns (a run's
fields beyond its sixth are ignored).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

# The blanks: the bytes trec_eval splits fields on (C's isspace), less the line feed, which ends a line. A CRLF line's
# carriage return is a blank at its end. Every other character, non-ASCII white space included, belongs to a field.
BLANKS = " \t\r\v\f"
# A line whose first field begins with this is a comment.
COMMENT = "#"
# Skipped at the start of a file (and only there): an encoding mark, not part of the first query id.
BYTE_ORDER_MARK = "\ufeff"

_BLANK = "[ \\t\\r\\x0B\\x0C]"
_FIELD = "[^ \\t\\r\\x0B\\x0C]+"
_FIRST_FIELD = re.compile(rb"[ \t\r\x0b\x0c]*([^ \t\r\n\x0b\x0c]+)")
_FIELDS = re.compile("[^ \t\r\n\x0b\x0c]+")


@dataclass(frozen=True)
class Columns:
    """A kind's columns in TREC text: their names in the file's order (the contract's, `q0` aside), how messages
    show them, and whether fields after them are ignored (a run, as trec_eval ignores them) or refused (qrels)."""

    names: tuple[str, ...]
    usage: str
    extra_ignored: bool

    @property
    def count(self) -> int:
        return len(self.names)

    @property
    def line_pattern(self) -> str:
        """A line of these columns, each field a capture group named as its column."""
        fields = f"{_BLANK}+".join(f"(?<{name}>{_FIELD})" for name in self.names)
        end = f"(?:{_BLANK}.*)?" if self.extra_ignored else f"{_BLANK}*"
        return f"^{_BLANK}*{fields}{end}$"

    def fields(self, line: pl.Expr) -> pl.Expr:
        """A struct of the line's fields by column name; null when the line does not hold these columns."""
        return line.str.extract_groups(self.line_pattern)

    def expected(self) -> str:
        """How a problem names these columns: "expected 6 columns `qid Q0 docid rank score tag`"."""
        return f"expected {self.count} columns `{self.usage}`"


QRELS_COLUMNS = Columns(("query_id", "iteration", "doc_id", "relevance"), "qid iter docid grade",
                        extra_ignored=False)
RUN_COLUMNS = Columns(("query_id", "q0", "doc_id", "source_rank", "score", "run_tag"),
                      "qid Q0 docid rank score tag", extra_ignored=True)
# The values a run's second column may hold: trec_eval ignores it, judged reads another value as shifted columns.
RUN_Q0 = ("Q0", "0")


def field_count(line: pl.Expr) -> pl.Expr:
    """The fields of a line."""
    return line.str.count_matches(_FIELD)


def is_skipped(line: pl.Expr) -> pl.Expr:
    """Whether a line is skipped: blanks only, or a comment."""
    return line.str.contains(f"^{_BLANK}*(?:{COMMENT}|$)")


def holds_blank(field: pl.Expr) -> pl.Expr:
    """Whether a field holds a blank: then it is several fields of the grammar, or one with blanks beside it, which a
    split on one separator byte (Polars' CSV reader) kept whole."""
    return field.str.contains(_BLANK)


def is_not_a_first_field(field: pl.Expr) -> pl.Expr:
    """Whether a line's first field, as a split on one separator byte made it, is not the grammar's first field of a
    line it reads: it begins a comment, or holds a blank."""
    return field.str.contains(f"^{COMMENT}|{_BLANK}")


def first_field(line: bytes) -> bytes | None:
    """A line's first field (a run's query id) from its bytes; None for a line that is skipped (blank, comment)."""
    match = _FIRST_FIELD.match(line)
    if match is None or match.group(1).startswith(COMMENT.encode()):
        return None
    return match.group(1)


def fields_of_line(line: str) -> list[str]:
    """A line's fields (none for a line that is skipped: blank, or a comment), for the small files of TREC-like
    lines judged reads line by line (query weights)."""
    fields = _FIELDS.findall(line)
    return [] if not fields or fields[0].startswith(COMMENT) else fields
