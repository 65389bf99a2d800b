"""What an evaluation or a comparison names as an input, read as the engine takes it, storing nothing: a file
(read and validated), a stored table's folder, or the id or name of a table in a warehouse.

Belongs here: resolving those references to tables (`input_judgments`, `input_runs`, `input_run`). Reading a file is
flows/store/readers.py's, storing one flows/store/warehouse.py's; the flows and the comparison service take inputs
through these.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from judged.flows.store.readers import LoadedTable, Metadata, load_table, open_stored
from judged.flows.store.warehouse import ReadRun, Store, read_run


def input_judgments(
    warehouse: Store, judgments: str, judgments_metadata: Metadata | None = None, allow_empty: bool = False
) -> LoadedTable:
    """The judgments `evaluate_flow` takes, read without storing anything: a file read and validated, else a stored
    set's id or name (its latest version)."""
    if Path(judgments).is_file():
        return load_table(judgments, "judgments", judgments_metadata, allow_empty=allow_empty)
    return warehouse.load_stored("judgments", warehouse.resolve_judgment_set(judgments))


def input_runs(warehouse: Store, runs: list[str], allow_empty: bool = False) -> Iterator[LoadedTable]:
    """The runs `evaluate_flow` takes, read one at a time without storing anything (`input_run`)."""
    for run in runs:
        yield input_run(warehouse, run, allow_empty).table


def input_run(warehouse: Store, run: str, allow_empty: bool = False, staging: Path | None = None) -> ReadRun:
    """A run `evaluate_flow` takes, read without storing anything: a file read and validated (with a `staging` folder, a
    large text run's or a Parquet run's shards staged there by its reading pass: `read_run`), a stored run's folder,
    else a run id of the warehouse."""
    if Path(run).is_file():
        return read_run(run, staging, allow_empty=allow_empty)
    if Path(run).is_dir():
        return ReadRun(open_stored(Path(run), "run").load())
    return ReadRun(warehouse.load_stored("run", warehouse.require_run(run)))
