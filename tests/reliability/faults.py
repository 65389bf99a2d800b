"""The writers the fault-injection suite kills, and what it checks of a warehouse afterwards.

Imported by the test and by its child processes (`python -c` in the repository): each trial's writer is one of the
Prefect flows (ingest-run, ingest-judgments, evaluate, nightly) on the bundled TREC DL 2020 sample, with inputs made
unique per trial (metadata for ingests, cutoffs for evaluations, fresh files for the nightly), so a trial always has
something new to write.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from judged.flows.store.sql import open_readonly
from judged.flows.store.warehouse import Store
from judged.schemas.spec import PRESETS, EvaluationSpec

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "trec-dl-2020-sample"
QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUN = SAMPLE / "runs" / "input.p_bm25.gz"
WRITERS = ("ingest-run", "ingest-judgments", "evaluate", "nightly")
NIGHTLY_FILES_PER_TRIAL = 2


def trial_spec(trial: int) -> EvaluationSpec:
    """A spec of its own per trial (its cutoffs), so each trial's evaluation is new."""
    return PRESETS["trec_eval"].with_options(cutoffs=(10, 20 + trial))


def nightly_spec() -> EvaluationSpec:
    return PRESETS["trec_eval"].with_options(cutoffs=(10,))


def make_inbox(inbox: Path, trial: int) -> list[str]:
    """The nightly trial's inbox: copies of the sample run, each with a sidecar giving it a tag of its own."""
    inbox.mkdir(parents=True, exist_ok=True)
    names = []
    for copy in range(NIGHTLY_FILES_PER_TRIAL):
        name = f"trial-{trial:03d}-{copy}.gz"
        shutil.copy(RUN, inbox / name)
        (inbox / f"{name}.meta.toml").write_text(f'tag = "trial-{trial:03d}-{copy}"\n')
        names.append(name)
    return names


def write(writer: str, warehouse: Path, trial: int, judgment_set_id: str, run_id: str, inbox: Path) -> None:
    """One trial's write, through its Prefect flow."""
    from judged.flows.pipeline.flows import evaluate_flow, ingest_judgments, ingest_run, nightly
    from judged.schemas.provenance import JudgmentSetMetadata, RunMetadata

    if writer == "ingest-run":
        ingest_run(str(RUN), str(warehouse), RunMetadata(system="p_bm25", tag=f"trial-{trial:03d}"))
    elif writer == "ingest-judgments":
        ingest_judgments(str(QRELS), str(warehouse), JudgmentSetMetadata(name="faults", version=f"trial-{trial:03d}"))
    elif writer == "evaluate":
        evaluate_flow(judgment_set_id, [run_id], trial_spec(trial).canonical_json(), str(warehouse))
    elif writer == "nightly":
        nightly(str(inbox), judgment_set_id, [nightly_spec().canonical_json()], str(warehouse))
    else:
        raise ValueError(f"unknown writer {writer!r}")


# What must hold of every table a view shows: no record without all its rows (a partial table).
PARTIAL_TABLES = {
    "runs": "SELECT r.run_id FROM runs r LEFT JOIN (SELECT run_id, count(*) AS n FROM run_rows GROUP BY run_id) c "
            "USING (run_id) WHERE c.n IS DISTINCT FROM r.n_rows",
    "judgment_sets": "SELECT s.judgment_set_id FROM judgment_sets s LEFT JOIN (SELECT judgment_set_id, count(*) AS n "
                     "FROM judgments GROUP BY judgment_set_id) c USING (judgment_set_id) WHERE c.n IS DISTINCT FROM s.n_rows",
    "evaluations": "SELECT e.evaluation_id FROM evaluations e WHERE NOT EXISTS (SELECT 1 FROM summary s WHERE "
                   "s.evaluation_id = e.evaluation_id) OR NOT EXISTS (SELECT 1 FROM per_query p WHERE "
                   "p.evaluation_id = e.evaluation_id)",
}
VIEWS = ("judgment_sets", "judgments", "runs", "run_rows", "evaluations", "per_query", "summary", "judged_run_rows",
         "nightly")
# A warehouse's content, free of times and flow run ids: equal between a faulted and a clean warehouse.
CONTENT = {
    "runs": "SELECT run_id, n_rows FROM runs ORDER BY ALL",
    "run_rows": "SELECT run_id, count(*) FROM run_rows GROUP BY ALL ORDER BY ALL",
    "judgment_sets": "SELECT judgment_set_id, n_rows FROM judgment_sets ORDER BY ALL",
    "judgments": "SELECT judgment_set_id, count(*) FROM judgments GROUP BY ALL ORDER BY ALL",
    "evaluations": "SELECT evaluation_id FROM evaluations ORDER BY ALL",
    "per_query": "SELECT evaluation_id, count(*), round(sum(value), 9) FROM per_query GROUP BY ALL ORDER BY ALL",
    "summary": "SELECT evaluation_id, cutoff, round(value, 9) FROM summary ORDER BY ALL",
    "nightly": "SELECT file, outcome, run_id, count(*) FROM nightly GROUP BY ALL ORDER BY ALL",
}


def problems(warehouse: Path) -> list[str]:
    """What is wrong with the warehouse as an analyst sees it: a view that fails, or a partial table."""
    found = []
    try:
        connection = open_readonly(Store(warehouse))
    except Exception as error:  # the point is to report any failure, whatever it is
        return [f"cannot open: {error}"]
    try:
        for view in VIEWS:
            try:
                connection.execute(f"SELECT count(*) FROM {view}").fetchall()
            except duckdb.Error as error:
                found.append(f"view {view}: {str(error).splitlines()[0]}")
        for table, query in PARTIAL_TABLES.items():
            try:
                partial = connection.execute(query).fetchall()
            except duckdb.Error as error:
                found.append(f"check {table}: {str(error).splitlines()[0]}")
                continue
            found += [f"partial {table} {row[0]}" for row in partial]
    finally:
        connection.close()
    return found


def content(warehouse: Path) -> dict[str, list[tuple]]:
    connection = open_readonly(Store(warehouse))
    try:
        return {name: connection.execute(query).fetchall() for name, query in CONTENT.items()}
    finally:
        connection.close()
