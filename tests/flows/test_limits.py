"""The limits that choose how an evaluation runs (judged.flows.engine.limits): one frozen object, checked when made."""

from __future__ import annotations

import dataclasses

import pytest

from judged.flows.engine.limits import DEFAULT_LIMITS, Limits


@pytest.mark.parametrize("value", [0, -5, 1.5, True, "10"])
def test_a_limit_must_be_a_positive_integer(value: object) -> None:
    with pytest.raises(ValueError, match=r"Limits\.candidate_part_rows must be a positive integer"):
        Limits(candidate_part_rows=value)  # type: ignore[arg-type]


def test_limits_are_frozen_and_compare_by_value() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_LIMITS.rows_per_shard = 10  # type: ignore[misc]
    assert Limits() == DEFAULT_LIMITS and hash(Limits()) == hash(DEFAULT_LIMITS)
    assert Limits(rows_per_shard=10) != DEFAULT_LIMITS
