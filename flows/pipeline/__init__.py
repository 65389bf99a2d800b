"""Prefect flows and tasks that wire I/O around the engine: ingest, evaluate, nightly, comparisons and judgment
versions, and the local Prefect server they report to.
"""
