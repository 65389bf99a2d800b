"""Where the time of one piece of work goes: wall and CPU seconds per named phase, for `judged ingest-run --profile`
and the benchmark harness.

Belongs here: the `Phases` accumulator and its printed form, nothing else. The work passes one `Phases` down to
whoever does each part; a phase that runs several times (one per shard) adds up. CPU seconds are the whole
process's (every thread: Polars' pool, the background hash), so beside a wall time they show how busy both cores
were. Phases measured in several threads at once (shards written two at a time) add up each thread's wall
seconds, and their CPU seconds overlap: the phase around them gives the true wall and CPU. Nothing heavy is imported
here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Phases:
    """Seconds (wall, CPU) per phase name, in the order the phases first ran."""

    seconds: dict[str, tuple[float, float]] = field(default_factory=dict)
    _adding: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        """Add the block's wall and CPU seconds to phase `name`."""
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            with self._adding:
                spent_wall, spent_cpu = self.seconds.get(name, (0.0, 0.0))
                self.seconds[name] = (spent_wall + wall, spent_cpu + cpu)

    def as_tuples(self) -> tuple[tuple[str, float, float], ...]:
        """(name, wall seconds, CPU seconds) per phase, hashable for a frozen report."""
        return tuple((name, wall, cpu) for name, (wall, cpu) in self.seconds.items())


def profile_lines(phases: tuple[tuple[str, float, float], ...]) -> list[str]:
    """One line per phase: `phase NAME: W s wall, C s CPU` (the benchmark harness reads these lines)."""
    return [f"phase {name}: {wall:.2f} s wall, {cpu:.2f} s CPU" for name, wall, cpu in phases]
