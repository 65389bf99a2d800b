"""The error of a spec that cannot be: kept apart from the model (schemas/spec.py) so that the command line can
catch it without importing pydantic before it has started hashing its inputs.

Belongs here: exception types of the schemas, nothing else.
"""

from __future__ import annotations


class SpecError(ValueError):
    """An option value that cannot be part of a valid spec (bad text, unknown preset, contradictory options)."""
