"""How counts, rates and statement names read in messages: plurals, articles and units that suit the number.

Belongs here: small pure helpers that turn numbers and words into message text, shared by the CLI, the flows' logs
and the SQL refusals. Nothing that computes results.
"""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 file`, `0 files`, `2 queries`: the count with its noun in the right number."""
    if count == 1:
        return f"{count} {noun}"
    if plural is None:
        plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{count} {plural}"


def rows_per_second(rows: int, seconds: float) -> str:
    """A throughput in the unit that shows its digits: `850 rows/s`, `12.3k rows/s`, `2.28M rows/s`."""
    rate = rows / seconds
    if rate >= 1e6:
        return f"{rate / 1e6:.2f}M rows/s"
    if rate >= 1e4:
        return f"{rate / 1e3:.1f}k rows/s"
    return f"{rate:.0f} rows/s"


def with_article(word: str) -> str:
    """`a CREATE`, `an ATTACH`, `an UPDATE`, `a USE`: the indefinite article by how the word is spoken (statement
    keywords are spoken as words, and U reads as a vowel only in UPDATE and UN...)."""
    spoken_vowel = word[:1].upper() in "AEIO" or word.upper().startswith(("UP", "UN"))
    return f"{'an' if spoken_vowel else 'a'} {word}"


def distinct_names(names: list[str], ids: list[str]) -> list[str]:
    """The names, with the first eight characters of the id added where two share a name (`p_bm25 [1a2b3c4d]`): how
    a comparison's runs and a worklist's runs are told apart when their tags are equal."""
    return [f"{name} [{identifier[:8]}]" if names.count(name) > 1 else name
            for name, identifier in zip(names, ids, strict=True)]
