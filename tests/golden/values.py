"""The golden values: what the method computes on fixed inputs, stored with the method version they belong to, so
that a value that changes while `METHOD_VERSION` (schemas/provenance.py) does not fails tests/golden/.

Each case evaluates fixed inputs through the Python API (the CLI's and the flows' engine) and keeps every value a
measure, an interval or a comparison computes (RBP's mean residual too, which the outputs print beside its summary): the seed (data/seed) under each preset and with every measure,
trec_eval's own fixtures (../shared/conformance/trec_eval) with the flags of their expected outputs, one TREC DL 2020
run per measure (data/trec-dl-2020-sample), a comparison of the three DL runs, and their judging worklists.

Regenerate, after bumping METHOD_VERSION, from the repository root (../shared must be there):

    .venv/bin/python -m tests.golden.values

It writes tests/golden/values-<METHOD_VERSION>.json and removes the file of any other version. It refuses to
rewrite a case of the current version's file with other values: a changed value needs a new method version.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from judged.schemas.provenance import METHOD_VERSION
from judged.schemas.spec import TREC_EVAL_CUTOFFS

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
SEED = REPO / "data" / "seed"
DL = REPO / "data" / "trec-dl-2020-sample"
DL_QRELS = DL / "qrels.dl20-passage.txt"
DL_RUNS = {name: DL / "runs" / f"input.{name}.gz" for name in ("DoRA_Large", "p_bm25", "pash_r3")}
REGENERATE = "bump METHOD_VERSION (schemas/provenance.py) and regenerate: .venv/bin/python -m tests.golden.values"

# The per-query columns a measure or an interval computes (the others are counts of the evidence, which the summary's
# counts cover).
PER_QUERY_VALUES = ("query_id", "measure", "cutoff", "status", "value", "value_min", "value_max", "residual")
# A comparison's statistics without its ids (they hold judged's version, which changes with every release).
COMPARISON_IDS = ("comparison_id", "baseline_evaluation_id", "run_evaluation_id", "judgment_set_id")

SEED_MEASURES = ["nDCG@1", "nDCG@2", "nDCG@3", "nDCG", "AP", "AP@2", "RR", "RR@1", "P@2", "R@2", "R-Prec",
                 "Judged@2", "Judged(convention=trec_eval)@2", "RBP(p=0.8)", "AP(rel=3)"]
# Each measure on one DL run, the runs taken in turn.
DL_MEASURES = {"nDCG@10": "DoRA_Large", "AP": "p_bm25", "RR@10": "pash_r3", "P@10": "DoRA_Large",
               "R@100": "p_bm25", "R-Prec": "pash_r3", "Judged@10": "DoRA_Large", "RBP(p=0.8)": "p_bm25"}
# trec_eval's expected outputs: qrels, run, relevance threshold (-l) and options (flags), as in
# tests/e2e/test_trec_eval_measures.py.
TREC_EVAL_FIXTURES = {
    "aq": ("qrels.test", "results.test", 1, {}),
    "aqc": ("qrels.test", "results.trunc", 1, {}),
    "aqcM": ("qrels.test", "results.trunc", 1, {"depth": 100}),
    "aql": ("qrels.rel_level", "results.test", 2, {}),
}

Table = dict[str, Any]  # {"columns": [...], "rows": [[...], ...]}
Case = dict[str, Table]


def table(frame: pl.DataFrame) -> Table:
    return {"columns": frame.columns, "rows": [list(row) for row in frame.rows()]}


def evaluation_tables(qrels: Path, run: Path, preset: str, measures: list[str] | None = None,
                      **options: Any) -> Case:
    from judged.flows.api import evaluate

    from judged.transforms.summary import residual_means

    result = evaluate(qrels, run, measures=measures, preset=preset, **options)
    case = {"per_query": table(result.per_query.select(PER_QUERY_VALUES)), "summary": table(result.summary)}
    residuals = residual_means(result.per_query.lazy(), result.spec).collect()
    return case | ({"residual_means": table(residuals)} if residuals.height else {})


def seed_case(preset: str, measures: list[str] | None) -> Callable[[Path | None], Case]:
    def compute(shared: Path | None) -> Case:
        options = {"cutoffs": (1, 2, 3)} if measures is None else {}
        return evaluation_tables(SEED / "qrels.txt", SEED / "run.txt", preset, measures, **options)

    return compute


def trec_eval_case(name: str) -> Callable[[Path | None], Case]:
    qrels, run, rel, options = TREC_EVAL_FIXTURES[name]

    def compute(shared: Path | None) -> Case:
        assert shared is not None
        at = "" if rel == 1 else f"(rel={rel})"
        measures = [f"nDCG@{k}" for k in TREC_EVAL_CUTOFFS] + ["nDCG", f"AP{at}", f"RR{at}", f"R-Prec{at}"]
        measures += [f"{m}{at}@{k}" for m in ("AP", "P", "R") for k in TREC_EVAL_CUTOFFS]
        measures += [f"Judged(convention=trec_eval)@{k}" for k in (5, 10, 20)] + [f"RBP(p=0.9{at and f',rel={rel}'})"]
        fixtures = shared / "conformance" / "trec_eval"
        return evaluation_tables(fixtures / qrels, fixtures / run, "trec_eval", measures, **options)

    return compute


def dl_case(run: str) -> Callable[[Path | None], Case]:
    def compute(shared: Path | None) -> Case:
        measures = [measure for measure, on in DL_MEASURES.items() if on == run]
        return evaluation_tables(DL_QRELS, DL_RUNS[run], "judged", measures)

    return compute


def dl_comparison(shared: Path | None) -> Case:
    from judged.flows.engine.compare import compare
    from judged.schemas.comparison import ComparisonSettings
    from judged.schemas.spec import build_spec

    spec = build_spec("judged", measures="nDCG@10,AP")
    settings = ComparisonSettings(permutations=1_000, bootstrap_resamples=1_000, seed=7)
    result = compare(DL_QRELS, list(DL_RUNS.values()), spec, settings)
    return {"pairs": table(result.pairs.drop(COMPARISON_IDS))}


def dl_worklists(shared: Path | None) -> Case:
    """The judging worklists of the three DL runs, by each objective: their priorities are the method's too."""
    import judged

    lists = {}
    for objective in ("pairs", "width"):
        listed = judged.worklist(DL_QRELS, list(DL_RUNS.values()), budget=40, cutoff=10, objective=objective)
        lists[objective] = table(listed)
    return lists


SEED_PRESETS = ("judged", "trec_eval", "trec_eval9", "sklearn")
# Case name -> (whether it needs ../shared, how to compute it).
CASES: dict[str, tuple[bool, Callable[[Path | None], Case]]] = {
    **{f"seed/{preset}": (False, seed_case(preset, None)) for preset in SEED_PRESETS},
    "seed/every-measure": (False, seed_case("judged", SEED_MEASURES)),
    **{f"trec_eval/{name}": (True, trec_eval_case(name)) for name in TREC_EVAL_FIXTURES},
    **{f"dl2020/{run}": (False, dl_case(run)) for run in DL_RUNS},
    "dl2020/comparison": (False, dl_comparison),
    "dl2020/worklists": (False, dl_worklists),
}


def golden_file(version: str = METHOD_VERSION) -> Path:
    return GOLDEN / f"values-{version}.json"


def read_golden(version: str = METHOD_VERSION) -> dict[str, Case]:
    """The stored cases of a method version; an error naming what to do when there are none."""
    path = golden_file(version)
    if not path.is_file():
        raise FileNotFoundError(f"no golden values for method version {version} ({path.name}): {REGENERATE}")
    stored = json.loads(path.read_text())
    if stored["method_version"] != version:
        raise ValueError(f"{path.name} holds method version {stored['method_version']}, not {version}")
    return stored["cases"]


def differences(expected: Case, computed: Case) -> list[str]:
    """Every stored value that `computed` no longer has: exact for text and counts, to 1e-12 for floats.

    A column the method now adds is new evidence, not a changed value: it is compared from the regeneration that
    stores it on. A stored column that is gone, or a row count that differs, is a change."""
    found = []
    for name in sorted(set(expected) | set(computed)):
        if name not in expected or name not in computed:
            found.append(f"{name}: table {'added' if name in computed else 'missing'}")
            continue
        old, new = expected[name], computed[name]
        gone = [column for column in old["columns"] if column not in new["columns"]]
        if gone or len(old["rows"]) != len(new["rows"]):
            found.append(f"{name}: columns {gone} gone or row count changed "
                         f"({len(old['rows'])} rows -> {len(new['rows'])})")
            continue
        positions = [new["columns"].index(column) for column in old["columns"]]
        for index, (before, after) in enumerate(zip(old["rows"], new["rows"], strict=True)):
            for column, a, position in zip(old["columns"], before, positions, strict=True):
                if not same(a, after[position]):
                    found.append(f"{name} row {index} {dict(zip(old['columns'][:3], before[:3]))}: "
                                 f"{column} {a!r} -> {after[position]!r}")
    return found


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return type(a) is type(b) and a == b


def compute(name: str, shared: Path | None) -> Case:
    """One case, as JSON stores it (so a computed case and a stored one compare alike)."""
    return json.loads(json.dumps(CASES[name][1](shared)))


def dumps(cases: dict[str, Case]) -> str:
    """The golden file: one row per line, so that a regeneration reads as a diff of rows."""
    lines = ["{", f' "method_version": {json.dumps(METHOD_VERSION)},', ' "cases": {']
    for c, (case, tables) in enumerate(cases.items()):
        lines.append(f"  {json.dumps(case)}: {{")
        for t, (name, data) in enumerate(tables.items()):
            lines.append(f"   {json.dumps(name)}: {{\"columns\": {json.dumps(data['columns'])}, \"rows\": [")
            rows = [f"    {json.dumps(row)}" for row in data["rows"]]
            lines.append(",\n".join(rows))
            lines.append("   ]}" + ("," if t < len(tables) - 1 else ""))
        lines.append("  }" + ("," if c < len(cases) - 1 else ""))
    lines += [" }", "}", ""]
    return "\n".join(line for line in lines if line)


def main() -> None:
    from tests.conftest import SHARED as shared

    if not (shared / "conformance" / "trec_eval").is_dir():
        sys.exit(f"the golden values need trec_eval's fixtures at {shared / 'conformance' / 'trec_eval'} "
                 "(set JUDGED_SHARED or place shared/ beside the clone)")
    computed = {name: compute(name, shared) for name in CASES}
    path = golden_file()
    if path.is_file():
        stored = read_golden()
        changed = [d for name in computed if name in stored for d in differences(stored[name], computed[name])]
        if changed:
            sys.exit(f"{path.name}: {len(changed)} values changed under method version {METHOD_VERSION} "
                     f"(first: {changed[0]}); a changed value needs a new method version: bump METHOD_VERSION in "
                     "schemas/provenance.py, then run this again")
    path.write_text(dumps(computed))
    for other in GOLDEN.glob("values-*.json"):
        if other != path:
            other.unlink()
            print(f"removed {other.name}")
    print(f"wrote {path.relative_to(REPO)}: {len(computed)} cases")


if __name__ == "__main__":
    main()
