"""Worlds in which judged documents have several possible gains (the assessor models `set` and `range`), many at
once: the batched form of `transforms.intervals.interval_with_disputes`.

Belongs here: the vectorised kernel (`disputed_ends_batch`) and the columnar preparation every caller shares (the
gain levels of a batch, the judged and ideal-only documents per level, the credited disputed documents as arrays).
Which worlds a caller builds from them (the paired difference's, the per-run interval's) stays with the caller.
No I/O.

One task is one world: `(fixed + sum_d a_d u_d + sum_i b_i w_i) / IDCG(base + a + b)` over every gain `a_d` in
the allowed set of each credited disputed document `d` (weight `u_d`, of either sign) and every gain `b_i` of the
assignable levels for each unjudged slot `i` (weight `w_i`); `base` holds the documents whose gain is fixed in
this world (the judged ones, and the ideal-only ones at the gain the caller chose).

Method (exact, the same value as `interval_with_disputes`). The ideal DCG at k of a multiset of gains depends only
on how many documents lie at or above each positive gain, each count capped at k (the discounts end there). So the
disputed documents are taken one by one by a dynamic programme whose state is that count vector for them alone,
each entry capped at k less the base's documents at or above that gain (beyond it the count cannot change the
ideal): per state, the largest and the smallest credit of the assignments reaching it. For a fixed positive ideal
the ratio's extremes are those credits' (over a fixed ideal it is monotone in the numerator), so merging states of
one ideal loses nothing. The unjudged slots' multisets are enumerated and laid over the slots by rearrangement, as
in `transforms.intervals._enumerated_ends`; every (state, multiset) is one ideal and two numerators, evaluated
together. A world whose ideal can be 0 scores 0 there (`zero_if_no_ideal`) or leaves that assignment out.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from judged.transforms.intervals import (
    ENUMERATED_MULTISETS_MAX, count_vectors, counts_at_levels, discount_prefix, distinct_rows, level_index, multisets,
    padded_rows,
)

DISPUTED_TABLE_CELLS_MAX = 4_000_000
"""Tasks x states x unjudged multisets x gain levels held at once by `disputed_ends_batch` (doubles: 32 MB a
temporary); larger groups of tasks are taken in parts."""

DISPUTED_WORLD_CELLS_MAX = 1_000_000
"""States of a world's programme (the product of its capped counts plus one) x multisets of its unjudged slots'
grades above which the world is left to `interval_with_disputes`' other path (one `ndcg_interval` per multiset of
the disputed documents' gains)."""


def fits_the_kernel(n_disputed: np.ndarray, cutoff: np.ndarray, positive: int, slots: np.ndarray,
                    levels: int) -> np.ndarray:
    """Which worlds the kernel takes: `n_disputed` credited disputed documents, `slots` unjudged slots taking one of
    `levels` grades, `positive` positive gain levels, and the cutoff (-1: none), each an array over the worlds.
    Enumerable multisets of grades, and a programme table (at its widest caps, rounded as the kernel rounds them)
    times those multisets within DISPUTED_WORLD_CELLS_MAX."""
    cap = np.where(cutoff >= 0, np.minimum(n_disputed, np.maximum(cutoff, 0)), n_disputed)
    states = (_coarse_caps(cap.astype(np.int64)).astype(np.float64) + 1.0) ** positive
    counts = np.array([multisets(int(s), levels) for s in slots], dtype=np.float64).reshape(np.shape(slots))
    return (counts <= ENUMERATED_MULTISETS_MAX) & (states * counts <= DISPUTED_WORLD_CELLS_MAX)


def disputed_ends_batch(
    fixed: np.ndarray,
    slot_weights: np.ndarray,
    disputed_weights: np.ndarray,
    disputed_allowed: np.ndarray,
    n_disputed: np.ndarray,
    task_world: np.ndarray,
    base_counts: np.ndarray,
    zero_if_no_ideal: np.ndarray,
    gains: np.ndarray,
    assignable: np.ndarray,
    cutoff: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest value of each task (NaN where no assignment has a value).

    Per world (W): `fixed`, `slot_weights` (W x S, the unjudged slots), its `n_disputed` credited disputed
    documents, the first columns of `disputed_weights` (W x D) and `disputed_allowed` (W x D x levels, the gains
    each may take; the columns after them are ignored). Per task (T): its world (`task_world`), `base_counts`
    (T x levels, the documents fixed in the ideal at each level) and `zero_if_no_ideal` (bool). `gains`: the gain
    levels, descending, all >= 0; `assignable` (levels, bool): the gains an unjudged slot may take. The tasks of a
    world share its programme, cut at the widest caps they need."""
    tasks = task_world.shape[0]
    low, high = np.full(tasks, np.nan), np.full(tasks, np.nan)
    if tasks == 0:
        return low, high
    positive = int((gains > 0).sum())
    base_at_or_above = np.cumsum(base_counts[:, :positive], axis=1)
    needed = np.repeat(n_disputed[task_world][:, None], positive, axis=1)
    if cutoff is not None:
        needed = np.clip(cutoff - base_at_or_above, 0, needed)
    world_caps = np.zeros((fixed.shape[0], positive), dtype=np.int64)
    np.maximum.at(world_caps, task_world, needed.astype(np.int64))
    distinct, caps_of_world = distinct_rows(_coarse_caps(world_caps))
    unjudged = _UnjudgedSlots(slot_weights, gains, assignable)
    unjudged_at_or_above = unjudged.at_or_above(positive)
    credits = {1.0: unjudged.credit(1.0), -1.0: unjudged.credit(-1.0)}
    local = np.full(fixed.shape[0], -1)
    for which, cap in enumerate(distinct):
        in_group = np.flatnonzero(caps_of_world == which)
        in_group = in_group[np.argsort(-n_disputed[in_group], kind="stable")]  # the programme's active worlds first
        per_world = 2 * int(np.prod(cap + 1))
        world_step = max(1, DISPUTED_TABLE_CELLS_MAX // per_world)
        for world_start in range(0, in_group.size, world_step):
            worlds = in_group[world_start:world_start + world_step]
            tables = _credit_tables(disputed_weights[worlds], disputed_allowed[worlds], n_disputed[worlds], gains,
                                    positive, cap)
            most, least = (table.reshape(worlds.size, -1) for table in tables)
            reached = np.flatnonzero(np.isfinite(most).any(axis=0))
            most, least = most[:, reached], least[:, reached]
            states = np.indices(tuple(cap + 1)).reshape(positive, -1).T[reached]  # one count vector per state
            local[worlds] = np.arange(worlds.size)
            members = np.flatnonzero(np.isin(task_world, worlds))
            step = max(1, DISPUTED_TABLE_CELLS_MAX // max(1, states.shape[0] * unjudged.count * max(positive, 1)))
            for start in range(0, members.size, step):
                part = members[start:start + step]
                world, row = task_world[part], local[task_world[part]]
                # The ideal depends on a task only through its base's counts, capped at the cutoff: once per
                # distinct one.
                base = base_at_or_above[part] if cutoff is None else np.minimum(base_at_or_above[part], cutoff)
                bases, task_base = distinct_rows(base)
                ideal = _ideal_dcg(bases, states, unjudged_at_or_above, gains[:positive], cutoff)[task_base]
                defined = ideal > 0
                safe_ideal = np.where(defined, ideal, 1.0)
                zero = zero_if_no_ideal[part][:, None, None]
                for sign, table, ends in ((1.0, most[row], high), (-1.0, least[row], low)):
                    left_out = -sign * np.inf
                    numerator = fixed[world][:, None, None] + table[:, :, None] + credits[sign][world][:, None, :]
                    values = np.where(defined, numerator / safe_ideal, np.where(zero, 0.0, left_out))
                    values = np.where(np.isfinite(table)[:, :, None], values, left_out)
                    extreme = values.max(axis=(1, 2)) if sign > 0 else values.min(axis=(1, 2))
                    ends[part] = np.where(np.isinf(extreme), np.nan, extreme)
    return low, high


class _UnjudgedSlots:
    """The unjudged slots of a batch's tasks: every multiset of assignable gains over them (counts per level),
    the documents each puts at or above every positive gain, and its best (sign 1) or worst (sign -1) credit per
    task by rearrangement."""

    def __init__(self, slot_weights: np.ndarray, gains: np.ndarray, assignable: np.ndarray) -> None:
        slots = slot_weights.shape[1]
        levels = int(assignable.sum())
        self.counts = np.zeros((multisets(slots, levels) if levels else 1, gains.size), dtype=np.int64)
        if levels:
            self.counts[:, np.flatnonzero(assignable)] = count_vectors(slots, levels)
        self.count = self.counts.shape[0]
        self.weights = slot_weights
        self.gains = gains

    def at_or_above(self, positive: int) -> np.ndarray:
        return np.cumsum(self.counts[:, :positive], axis=1)

    def credit(self, sign: float) -> np.ndarray:
        """Tasks x multisets: the highest gains on the largest weights (sign 1) or on the smallest (sign -1)."""
        used_after = np.cumsum(self.counts, axis=1)
        used_before = used_after - self.counts
        ordered = np.sort(self.weights, axis=1)
        if sign > 0:
            ordered = ordered[:, ::-1]
        prefix = np.concatenate([np.zeros((ordered.shape[0], 1)), np.cumsum(ordered, axis=1)], axis=1)
        return ((prefix[:, used_after] - prefix[:, used_before]) * self.gains).sum(axis=2)


def _ideal_dcg(
    base_at_or_above: np.ndarray, states: np.ndarray, unjudged_at_or_above: np.ndarray, positive_gains: np.ndarray,
    cutoff: int | None,
) -> np.ndarray:
    """Tasks x states x multisets: the ideal DCG of the documents at or above every positive gain (base, the
    disputed documents' state, the unjudged slots' multiset), capped at the cutoff."""
    at_or_above = (base_at_or_above[:, None, None, :] + states[None, :, None, :]
                   + unjudged_at_or_above[None, None, :, :])
    if cutoff is not None:
        at_or_above = np.minimum(at_or_above, cutoff)
    discounts = discount_prefix(int(at_or_above.max(initial=0)), cutoff)
    after = discounts[at_or_above]
    before = np.concatenate([np.zeros((*after.shape[:3], 1)), after[..., :-1]], axis=3)
    return ((after - before) * positive_gains).sum(axis=3)


CAP_STEPS = np.array([0, 1, 2, 4, 7, 10, 15, 22, 33, 50, 75, 100])
"""The capped counts a programme's table is cut at (a count's cap rounded up to the next step; above the last,
kept): tasks whose caps round alike share one programme, which is what makes the batch pay, a cap above the
one needed costing only table cells."""


def _coarse_caps(needed: np.ndarray) -> np.ndarray:
    """`needed` (the caps each task needs) rounded up to `CAP_STEPS`. Any cap at or above the needed one gives the
    same ideal: the count stays exact below it, and at or above it the ideal is cut at k already."""
    rounded = CAP_STEPS[np.minimum(np.searchsorted(CAP_STEPS, needed), CAP_STEPS.size - 1)]
    return np.where(needed > CAP_STEPS[-1], needed, rounded)


def _credit_tables(
    weights: np.ndarray, allowed: np.ndarray, n_disputed: np.ndarray, gains: np.ndarray, positive: int,
    cap: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The programme over the disputed documents of tasks sharing the caps `cap` (ordered by `n_disputed`,
    descending; each has its first `n_disputed` columns): per task and state (the count of documents at or above
    each positive gain, capped), the largest and the smallest credit of the assignments reaching it (-inf / +inf
    where none does). A document of gain g moves the counts of every positive gain <= g up by one (a gain of 0
    moves none). The smallest credit is minus the largest with the weights negated, so one maximising pass takes
    each task and its negation (rows 2i and 2i + 1)."""
    tasks = weights.shape[0]
    both = np.stack([weights, -weights], axis=1).reshape(2 * tasks, -1)
    may = np.repeat(allowed, 2, axis=0)
    # A gain a document may not take is one it reaches at -inf.
    offsets = gains * both[:, :, None] + np.where(may, 0.0, -np.inf)
    spread = (-1,) + (1,) * positive
    table = np.full((2 * tasks, *(cap + 1)), -np.inf)
    table[(slice(None), *(0,) * positive)] = 0.0
    for document in range(int(n_disputed.max(initial=0))):
        active = 2 * int((n_disputed > document).sum())
        moved, grown = table[:active], None
        for level in range(gains.size - 1, -1, -1):  # lowest gain first: each positive one shifts one axis more
            if level < positive:
                moved = _shift_capped(moved, level + 1)
            offset = offsets[:active, document, level]
            if np.isneginf(offset).all():
                continue
            candidate = moved + offset.reshape(spread)
            grown = candidate if grown is None else np.maximum(grown, candidate, out=grown)
        table[:active] = grown
    return table[0::2], -table[1::2]


def _shift_capped(table: np.ndarray, axis: int) -> np.ndarray:
    """`table` with every state's count along `axis` one higher, the count staying at its cap (the last index),
    where two states meet keeping the larger."""
    size = table.shape[axis]
    if size == 1:
        return table

    def at(part: slice) -> tuple[slice, ...]:
        return (slice(None),) * axis + (part,)

    shifted = np.empty_like(table)
    shifted[at(slice(0, 1))] = -np.inf
    shifted[at(slice(1, size))] = table[at(slice(0, size - 1))]
    last = at(slice(size - 1, size))
    np.maximum(shifted[last], table[last], out=shifted[last])
    return shifted


# -- the columnar side: what every caller needs of a frame of worlds ------------------------------------------------


def batch_gains(frame: pl.DataFrame) -> np.ndarray | None:
    """Every gain a world of `frame` may hold (the scale's assignable levels, judged, disputed and ideal-only
    documents' gains), descending; None when one is negative (the kernel assumes gains >= 0) or none is positive."""
    found = pl.concat([
        frame["levels"].explode(),
        frame["judged_ideal"].explode(),
        frame["disputed_sets"].explode().explode(),
        frame["disputed_universe_sets"].explode().explode(),
    ]).drop_nulls().unique()
    gains = np.sort(found.cast(pl.Float64).to_numpy())[::-1]
    if gains.size == 0 or gains[-1] < 0 or gains[0] <= 0:
        return None
    return gains


def ideal_only_counts(frame: pl.DataFrame, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per world, its ideal-only disputed documents (`disputed_universe_docs` not among its credited
    `disputed_docs`) counted at each level with the lowest gain of their set, and with the highest (worlds x
    levels each)."""
    universe = (
        frame.select("disputed_universe_docs", "disputed_universe_sets")
        .with_row_index("world")
        .explode("disputed_universe_docs", "disputed_universe_sets")
        .drop_nulls("disputed_universe_docs")
    )
    credited = frame.select(pl.col("disputed_docs").alias("disputed_universe_docs")).with_row_index("world").explode(
        "disputed_universe_docs").drop_nulls()
    ideal_only = universe.join(credited, on=["world", "disputed_universe_docs"], how="anti").select(
        "world",
        lowest=pl.col("disputed_universe_sets").list.min().cast(pl.Float64),
        highest=pl.col("disputed_universe_sets").list.max().cast(pl.Float64),
    )
    world = ideal_only["world"].to_numpy()
    return (counts_at_levels(world, ideal_only["lowest"].to_numpy(), gains, frame.height),
            counts_at_levels(world, ideal_only["highest"].to_numpy(), gains, frame.height))


def credited_disputes(frame: pl.DataFrame, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The credited disputed documents of every world: their weights (worlds x D, D the most any world has, 0 after
    its own, `padded_rows`), the gains each may take (worlds x D x levels, bool) and how many each world has."""
    weights, count = padded_rows(frame["disputed_weights"])
    allowed = np.zeros((*weights.shape, gains.size), dtype=bool)
    sets = (
        frame.select("disputed_sets").with_row_index("world").explode("disputed_sets").drop_nulls()
        .with_columns(position=pl.int_range(pl.len()).over("world")).explode("disputed_sets")
    )
    if sets.height:
        allowed[sets["world"].to_numpy(), sets["position"].to_numpy(),
                level_index(sets["disputed_sets"].cast(pl.Float64).to_numpy(), gains)] = True
    return weights, allowed, count
