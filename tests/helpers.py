"""Helpers shared by tests."""

from __future__ import annotations

from pathlib import Path


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
