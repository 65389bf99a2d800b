"""judged: honest NDCG evaluation of search runs against relevance judgments.

The installed package `judged` is this file; its subpackages are the repository's folders `schemas/` (table
contracts, the spec, provenance), `transforms/` (pure LazyFrame functions) and `flows/` (I/O, Prefect flows, the
CLI). Importing `judged` loads nothing heavy: the command line starts from `judged.flows.cli` and must stay quick.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("judged")
except PackageNotFoundError:  # a checkout used without installing it
    __version__ = "0+unknown"
