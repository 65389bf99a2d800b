"""Shared fixtures: where ../shared is, and a skip with a clear reason when a clone has no ../shared beside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGED_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared() -> Path:
    """The reference data directory; tests that need it skip when it is absent."""
    if not (SHARED / "SPEC.md").is_file():
        pytest.skip(f"reference data not found at {SHARED} (set JUDGED_SHARED or place shared/ beside the clone)")
    return SHARED


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
