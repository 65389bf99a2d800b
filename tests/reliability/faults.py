"""The writers the fault-injection suite kills, and what it checks of a warehouse afterwards.

Imported by the test and, through its fork server, by its child processes (`write_in_child`): each trial's writer is one
of the Prefect flows (ingest-run, ingest-judgments, evaluate, nightly) on the bundled TREC DL 2020 sample, with inputs
made unique per trial (metadata for ingests, cutoffs for evaluations, fresh files for the nightly), so a trial always
has something new to write. The newer writers run as the CLI commands (in process, as `judged` would): a stored
comparison (`compare --warehouse`, its seed per trial), `report --warehouse` (a comparison stored and an HTML file
written; its seed per trial), `worklist` (its budget per trial, an assessor file written) and a new judgment version by
`ingest-judgments --extends` (a new pair per trial) or `--extends --revise` (a regraded pair per trial). Their --out
files go in the trial's own folder (`inbox`), the answers files beside it (`answers/`).
"""

from __future__ import annotations

import shutil
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path

import duckdb

from judged.flows.store.sql import open_readonly
from judged.flows.store.warehouse import Store
from judged.schemas.spec import PRESETS, EvaluationSpec

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "trec-dl-2020-sample"
QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUN = SAMPLE / "runs" / "input.p_bm25.gz"
SECOND_RUN = SAMPLE / "runs" / "input.pash_r3.gz"  # compared with RUN by the comparison writers
CLI_WRITERS = ("compare", "report", "worklist", "extends", "revise")
WRITERS = ("ingest-run", "ingest-judgments", "evaluate", "nightly", *CLI_WRITERS)
# The files a CLI writer writes outside the warehouse (--out), in its trial's folder.
OUTPUTS = {"report": "report.html", "worklist": "worklist.qrels"}
# Small enough to keep a trial short; the statistics' values do not matter here, only that they are stored whole.
STATISTICS = ("--resamples", "200", "--permutations", "200")
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


def cli_arguments(writer: str, warehouse: Path, trial: int, judgment_set_id: str, run_id: str, folder: Path,
                  evaluations: list[str]) -> list[str]:
    """The `judged` command line of a CLI writer's trial (its answers file written into `folder` first)."""
    folder.mkdir(parents=True, exist_ok=True)
    stored = ["--warehouse", str(warehouse)]
    if writer == "compare":
        return ["compare", *evaluations, *stored, "--seed", str(trial), *STATISTICS]
    if writer == "report":
        return ["report", *evaluations, *stored, "--out", str(folder / OUTPUTS["report"]), "--seed",
                str(1000 + trial), *STATISTICS]
    if writer == "worklist":
        return ["worklist", "--judgments", judgment_set_id, "--runs", run_id, "--budget", str(20 + trial), *stored,
                "--out", str(folder / OUTPUTS["worklist"])]
    # One answers file for both warehouses: its path is part of the new version's metadata, hence of its id.
    answers = folder.parent / "answers" / f"{writer}-{trial:03d}.txt"
    answers.parent.mkdir(exist_ok=True)
    if writer == "extends":
        answers.write_text(f"23849 0 faults-{trial:03d} 1\n")  # a pair the qrels do not judge
        return ["ingest-judgments", str(answers), "--extends", judgment_set_id, "--version", f"ext-{trial:03d}",
                *stored]
    if writer == "revise":
        query, _, document, grade = QRELS.read_text().splitlines()[trial].split()
        answers.write_text(f"{query} 0 {document} {(int(grade) + 1) % 4}\n")  # a judged pair, regraded
        return ["ingest-judgments", str(answers), "--extends", judgment_set_id, "--version", f"rev-{trial:03d}",
                "--revise", *stored]
    raise ValueError(f"unknown writer {writer!r}")


def run_cli(arguments: list[str]) -> None:
    """`judged ARGUMENTS` in this process; AssertionError with its output when it fails."""
    from typer.testing import CliRunner

    from judged.flows.cli.app import app

    result = CliRunner().invoke(app, arguments)
    if result.exit_code != 0:
        raise AssertionError(f"judged {' '.join(arguments)} exited {result.exit_code}: {result.output[-2000:]}"
                             f"{result.exception!r}")


def write(writer: str, warehouse: Path, trial: int, judgment_set_id: str, run_id: str, inbox: Path,
          evaluations: list[str] | None = None) -> None:
    """One trial's write, through its Prefect flow (the CLI writers: through the command, `evaluations` being the
    two stored evaluations they compare)."""
    from judged.flows.pipeline.flows import evaluate_flow, ingest_judgments, ingest_run, nightly
    from judged.schemas.provenance import JudgmentSetMetadata, RunMetadata

    if writer in CLI_WRITERS:
        run_cli(cli_arguments(writer, warehouse, trial, judgment_set_id, run_id, inbox, evaluations or []))
    elif writer == "ingest-run":
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
    "comparison_records": "SELECT c.comparison_id FROM comparison_records c WHERE NOT EXISTS (SELECT 1 FROM "
                          "comparisons p WHERE p.comparison_id = c.comparison_id) OR NOT EXISTS (SELECT 1 FROM "
                          "comparison_per_query q WHERE q.comparison_id = c.comparison_id)",
    # A lineage row whose version has no judgments (its record shows it; the judgments are its rows).
    "judgment_lineage": "SELECT l.judgment_set_id FROM judgment_lineage l WHERE NOT EXISTS (SELECT 1 FROM judgments j "
                        "WHERE j.judgment_set_id = l.judgment_set_id)",
    # A worklist's rows are one file: each has the rows its budget allows, or all its runs' unjudged pairs.
    "worklists": "SELECT worklist_id FROM worklists GROUP BY worklist_id HAVING count(*) > any_value(budget)",
}
VIEWS = ("judgment_sets", "judgments", "runs", "run_rows", "evaluations", "per_query", "summary", "judged_run_rows",
         "nightly", "judgment_lineage", "comparison_records", "comparisons", "comparison_per_query", "worklists")
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
    "judgment_lineage": "SELECT judgment_set_id, parent_id, version, n_added, n_revised, n_confirmed FROM "
                        "judgment_lineage ORDER BY ALL",
    "comparison_records": "SELECT comparison_id, evaluation_ids, baseline FROM comparison_records ORDER BY ALL",
    "comparisons": "SELECT comparison_id, count(*) FROM comparisons GROUP BY ALL ORDER BY ALL",
    "comparison_per_query": "SELECT comparison_id, count(*) FROM comparison_per_query GROUP BY ALL ORDER BY ALL",
    "worklists": "SELECT worklist_id, budget, count(*), string_agg(query_id || ' ' || doc_id, ',' ORDER BY "
                 "query_id, doc_id) FROM worklists GROUP BY ALL ORDER BY ALL",
}


def output_problems(writer: str, folder: Path, killed: bool, warehouse: Path, trial: int) -> list[str]:
    """What is wrong with the file a CLI writer writes outside the warehouse (`--out`): after a kill it is absent or
    whole (never a part); after a clean run or a rerun it is there and whole. A whole report ends its HTML; a whole
    assessor file has one `query 0 doc ` line per row of the stored worklist it lists."""
    name = OUTPUTS.get(writer)
    if name is None:
        return []
    path = folder / name
    if not path.exists():
        return [] if killed else [f"{path} was not written"]
    text = path.read_text(errors="replace")
    if writer == "report":
        whole = text.rstrip().endswith("</html>")
    else:
        connection = open_readonly(Store(warehouse))
        try:
            stored = connection.execute("SELECT count(*) FROM worklists WHERE budget = ?", [20 + trial]).fetchone()
        finally:
            connection.close()
        lines = text.splitlines(keepends=True)
        whole = len(lines) == (stored[0] if stored else -1) and all(
            line.endswith(" \n") and len(line.split()) == 3 for line in lines)
    return [] if whole else [f"{path} is partial ({len(text)} characters)"]


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


def write_in_child(connection: Connection, args: list) -> None:
    """A trial's `write` in a child process (tests/reliability/test_faults.py): sends "ready", then the write's
    seconds, or ("failed", traceback) before raising."""
    writer, warehouse, trial, judgment_set_id, run_id, inbox, *evaluations = args
    connection.send("ready")
    started = time.perf_counter()
    try:
        write(writer, Path(warehouse), trial, judgment_set_id, run_id, Path(inbox), evaluations)
    except BaseException:
        connection.send(("failed", traceback.format_exc()))
        raise
    connection.send(time.perf_counter() - started)
