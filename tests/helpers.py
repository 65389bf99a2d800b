"""Helpers shared by tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tree_listing(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under root with its size and sha256: equal listings mean a byte-for-byte equal tree."""
    import hashlib

    if not root.exists():
        return {}
    return {
        str(path.relative_to(root)): (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def assert_refused(result: Any, code: int, message: str, names: str | None = None) -> None:
    """A CLI result (typer's CliRunner) that refused its input as the bad-input catalogue demands: exit `code`, one
    line `judged: error: ...` holding `message` (and `names`), no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("judged: error: "), result.stderr
    assert message in lines[0], lines[0]
    if names is not None:
        assert names in lines[0], lines[0]
    assert "Traceback" not in result.output
