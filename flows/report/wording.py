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


def pair_sentence(row: dict, label: str, correction: str) -> str:
    """One short sentence on a pair, from a row of a pair table (`transforms.compare.pair_table`: `better`,
    `worse`, `decided`, the counts of what the measure reads at its cutoff, the assessor worlds, `significant`,
    `p_adjusted`): whether the unjudged documents (and the assessors) could reverse it, and whether the paired test
    is significant. E.g. "pash_r3 > p_bm25 on nDCG@10 whatever the 73 unjudged documents it reads are and
    whichever assessor is right; significant (p holm 0.0060)"."""
    better, worse = row["better"], row["worse"]
    documents, worlds, agree = row.get("unjudged_documents"), row.get("assessor_worlds"), row.get("assessor_worlds_agree")
    disputed = row.get("disputed_documents")
    in_worlds = f"decided in {agree} of {worlds} single-assessor worlds"
    if row.get("decided") is None:
        head = f"{better} {row['direction']} {worse} on {label} (no interval over the unjudged documents)"
    elif row["decided"]:
        read = [f"{counted(n, noun)}" for n, noun in ((documents, "unjudged document"), (disputed, "disputed judgment"))
                if n]
        which = (f"the {' and the '.join(read)} it reads {'is' if read == ['1 unjudged document'] else 'are'}" if read
                 else "the unjudged documents are" if documents is None else "every document it reads judged")
        head = f"{better} > {worse} on {label} " + ("with" if which.startswith("every") else "whatever") + f" {which}"
        if worlds:
            head += " and whichever assessor is right" if agree == worlds else f", though {in_worlds}"
    else:
        reasons = []
        if documents:
            reasons.append(f"{counted(documents, 'unjudged document')} in "
                           f"{counted(row.get('open_queries') or 0, 'query', 'queries')}")
        if disputed:
            reasons.append(f"{counted(disputed, 'disputed judgment')} in "
                           f"{counted(row.get('disputed_queries') or 0, 'query', 'queries')}")
        head = (f"{better} vs {worse} on {label} is undecided: it depends on "
                + (" and ".join(reasons) if reasons else "the unjudged documents"))
        if worlds:
            head += f" ({in_worlds})"
    p_value = row.get("p_adjusted")
    if p_value is None:
        return head + "; no paired test."
    shown = "<0.0001" if p_value < 1e-4 else f"{p_value:.4f}"
    return head + f"; {'significant' if row.get('significant') else 'not significant'} (p {correction} {shown})."


def doubt_legend(confidence_level: float, correction: str, assessors: bool) -> str:
    """One line on what each kind of doubt in a pair table means: the unjudged documents (the interval, `decided`),
    the assessors (in how many single-assessor worlds the direction holds) and query sampling (the CI, the
    corrected p and `significant`, computed on the point values, which count unjudged documents as non-relevant)."""
    alpha = 1 - confidence_level
    return ("Three kinds of doubt. Unjudged documents: 'over unjudged' is the mean difference's range over every "
            "grading of the unjudged documents; decided = that range excludes 0. "
            + ("Assessors: in how many single-assessor worlds (one assessor's grades where they judged) the pair is "
               "decided the same way. " if assessors else "")
            + f"Query sampling: the {confidence_level:.0%} bootstrap CI and p {correction} (significant = p {correction}"
            f" < {alpha:g}) use the point values, which count unjudged documents as non-relevant.")
