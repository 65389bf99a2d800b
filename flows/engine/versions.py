"""What code runs: judged's installed version and git commit, and the versions of the libraries it uses.

Belongs here: everything the provenance record names that has to be looked up outside the program (package metadata,
a `git` subprocess). `judged.schemas.provenance` takes these values as arguments and never looks them up itself.
"""

from __future__ import annotations

import platform
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path

RECORDED_LIBRARIES = ("polars", "pyarrow", "duckdb", "prefect")


def implementation_version() -> str:
    """The installed version of the judged package."""
    try:
        return metadata.version("judged")
    except metadata.PackageNotFoundError:
        return "0+unknown"


@cache
def implementation_commit() -> str:
    """The git commit of the code that runs (with `-dirty` when the work tree has changes), or `unknown` (an
    installed wheel has no git work tree)."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def library_versions() -> dict[str, str]:
    """Python's version and each recorded library's, `not installed` for one that is absent."""
    versions = {"python": platform.python_version()}
    for package in RECORDED_LIBRARIES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions
