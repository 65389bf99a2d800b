"""judged: honest NDCG evaluation of search runs against relevance judgments.

The installed package `judged` is this file; its subpackages are the repository's folders `schemas/` (table
contracts, the spec, provenance), `transforms/` (pure LazyFrame functions) and `flows/` (I/O, Prefect flows, the
CLI). Importing `judged` loads nothing heavy: the command line starts from `judged.flows.cli` and must stay quick,
so the Python API (`judged.evaluate`, `judged.compare`, `judged.worklist`, `judged.agreement`,
`judged.ingest_judgments`, `judged.Warehouse`, in `judged.flows.api`) is loaded on first use.

The API refuses what the command line refuses, with the same messages: `judged.evaluate(qrels, run, ...,
allow_empty=False)` raises on an input without rows unless `allow_empty=True` (the CLI's `--allow-empty`) and on a
null grade; every bad input raises `judged.InputError`, every bad option or argument `judged.SpecError` (both
one-line ValueErrors), never another exception.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judged.flows.api import (
        Agreement, Comparison, Evaluation, Warehouse, agreement, compare, evaluate, ingest_judgments, worklist,
    )
    from judged.schemas.spec import EvaluationSpec, SpecError
    from judged.transforms.errors import InputError

# Public name -> the module that defines it, imported when the name is first used.
_LAZY = {
    "evaluate": "judged.flows.api",
    "compare": "judged.flows.api",
    "worklist": "judged.flows.api",
    "agreement": "judged.flows.api",
    "ingest_judgments": "judged.flows.api",
    "Agreement": "judged.flows.api",
    "Comparison": "judged.flows.api",
    "Evaluation": "judged.flows.api",
    "Warehouse": "judged.flows.api",
    "EvaluationSpec": "judged.schemas.spec",
    "SpecError": "judged.schemas.spec",
    "InputError": "judged.transforms.errors",
}
__all__ = ["__version__", *_LAZY]


def _installed_version() -> str:
    """The installed distribution's version (looking it up scans the environment: done on first use only)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("judged")
    except PackageNotFoundError:  # a checkout used without installing it
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _installed_version()
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'judged' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
