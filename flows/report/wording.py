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


def pair_verdict(row: dict, baseline: str, label: str) -> str | None:
    """One line on whether the unjudged documents could reverse a pair's conclusion, from a comparison's pair row
    (`decided`, `decided_direction`, `unjudged_documents`, `open_queries`); None when the pair has no difference
    interval."""
    if row.get("decided") is None:
        return None
    documents = row.get("unjudged_documents")
    if row["decided"]:
        better, worse = (row["run"], baseline) if row["decided_direction"] == "run" else (baseline, row["run"])
        which = "the unjudged documents are" if documents is None else f"the {documents:,} unjudged documents are"
        return f"{better} > {worse} on {label} whatever {which}"
    where = counted(row["open_queries"] or 0, "query", "queries")
    what = ("the unjudged documents" if documents is None
            else f"{documents:,} unjudged document{'' if documents == 1 else 's'}")
    return f"{row['run']} vs {baseline} on {label} undecided: depends on {what} in {where}"


def doubt_legend(confidence_level: float, correction: str, assessors: bool) -> str:
    """One line on what each kind of doubt in a pair table means: the unjudged documents (the interval, `decided`),
    the assessors (in how many single-assessor worlds the direction holds) and query sampling (the CI, the
    corrected p and `significant`, computed on the point values, which count unjudged documents as non-relevant)."""
    alpha = 1 - confidence_level
    return ("Three kinds of doubt. Unjudged documents: 'over unjudged' is the mean difference's range over every "
            "grading of the unjudged documents; decided = that range excludes 0. "
            + ("Assessors: in how many single-assessor worlds the direction holds. " if assessors else "")
            + f"Query sampling: the {confidence_level:.0%} bootstrap CI and p {correction} (significant = p {correction}"
            f" < {alpha:g}) use the point values, which count unjudged documents as non-relevant.")
