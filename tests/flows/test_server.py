"""Which SQLite file a Prefect server keeps its database in, from its environment (flows/pipeline/server.py
`database_file`): what tells judged that a server it did not start is on the database its own would use."""

from __future__ import annotations

import os
from pathlib import Path

from judged.flows.pipeline.server import database_file


def test_the_database_is_the_homes_unless_a_connection_url_names_another(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert database_file({"PREFECT_HOME": str(home)}) == Path(os.path.realpath(home)) / "prefect.db"
    assert database_file({"HOME": str(tmp_path)}) == Path(os.path.realpath(tmp_path)) / ".prefect" / "prefect.db"
    named = tmp_path / "elsewhere.db"
    for variable in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        assert database_file({"PREFECT_HOME": str(home), variable: f"sqlite+aiosqlite:///{named}"}) == named
    postgres = "postgresql+asyncpg://user:secret@db:5432/prefect"
    assert database_file({"PREFECT_HOME": str(home), "PREFECT_SERVER_DATABASE_CONNECTION_URL": postgres}) is None
