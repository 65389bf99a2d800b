"""Staging outside the views: files are written under `_staging/<uuid>/`, locked by their writer, and a writer that
starts removes only the staging no live process holds.

A dead writer is made by a child process that takes a staging folder, writes a partial file into it, and is killed
with SIGKILL; a live one is this test process itself.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl

from judged.flows.store.readers import load_table
from judged.flows.store.sql import run_query
from judged.flows.store.kinds import STORED_TABLES
from judged.flows.store.warehouse import STAGING, Store, remove_dead_staging, staged

RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq2 Q0 d1 1 1.0 t\n"

HOLD_STAGING = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from judged.flows.store.warehouse import staged

    root, marker = Path(sys.argv[1]), Path(sys.argv[2])
    with staged(root, root / "run_rows" / "some-run") as folder:
        folder.mkdir()
        (folder / "part-0000-of-0001.parquet").write_bytes(b"PAR1 half a file")
        marker.write_text(str(folder))
        time.sleep(600)
    """
)


def _dead_writers_staging(root: Path, tmp_path: Path) -> Path:
    """A staging folder whose writer was killed (SIGKILL) in the middle of writing."""
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", HOLD_STAGING, str(root), str(marker)])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        assert marker.exists(), "the child never took its staging folder"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    return Path(marker.read_text())


def test_no_view_glob_reaches_staging() -> None:
    for table in STORED_TABLES.values():
        assert not table.glob.startswith(STAGING) and not table.glob.startswith("*")


def test_a_dead_writers_staging_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    store = Store(root).ensure()
    dead = _dead_writers_staging(root, tmp_path)
    assert dead.is_relative_to(root / STAGING) and dead.exists()
    with staged(root, root / "runs" / "live.parquet") as live:
        live.write_bytes(b"being written")
        remove_dead_staging(root)
        assert live.exists()  # held by this process
        assert not dead.exists()
    assert sorted(p.name for p in (root / STAGING).iterdir()) == []
    store.refresh_catalog()


def test_a_crashed_writers_partial_rows_never_reach_a_view_or_a_rerun(tmp_path: Path) -> None:
    """Finding 2 and 3 of issue 15: a half-written part file in a temporary folder broke the views, and complete
    parts left there showed up twice after a rerun. Here a dead writer's staging holds a broken part file for the
    very run that is then stored: every view still answers, and the run has its 3 rows, not more."""
    root = tmp_path / "warehouse"
    store = Store(root).ensure()
    (tmp_path / "run.txt").write_text(RUN)
    table = load_table(tmp_path / "run.txt", "run")
    _dead_writers_staging(root, tmp_path)
    report = store.store_table(table)
    store.refresh_catalog()
    for view in [*STORED_TABLES, "judged_run_rows"]:
        run_query(store, f"SELECT count(*) FROM {view}")
    result = run_query(store, f"SELECT count(*) FROM run_rows WHERE run_id = '{report.id}'")
    assert result.rows == [(3,)]
    assert list((root / STAGING).iterdir()) == []
    assert pl.read_parquet(root / "run_rows" / report.id).height == 3
