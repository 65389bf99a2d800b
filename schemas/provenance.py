"""Identity and provenance of evaluations: how an evaluation's identifier is derived, and the record it carries.

Belongs here: pure descriptions (no I/O beyond reading installed package versions).
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata


def implementation_version() -> str:
    """The installed version of the judged package."""
    try:
        return metadata.version("judged")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def evaluation_id(run_content: str, judgments_content: str, spec_hash: str, version: str) -> str:
    """Same inputs, same spec, same implementation: same identifier, so a rerun is recognisable."""
    payload = json.dumps(
        {"run": run_content, "judgments": judgments_content, "spec": spec_hash, "implementation": version},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]
