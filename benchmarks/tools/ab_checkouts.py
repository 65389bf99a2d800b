"""Two checkouts of judged, alternating, on the same data: each path's wall seconds and peak RSS, per round and as
medians. The harness's medians move by several percent between runs of the same code on a shared machine;
alternating the two commands round by round puts both under the same conditions.

    python benchmarks/tools/ab_checkouts.py DATA_DIR ROUNDS OLD_JUDGED OLD_STORED NEW_JUDGED NEW_STORED

DATA_DIR holds the harness's qrels.txt, run.txt and run.parquet; *_JUDGED is each checkout's `judged` executable,
*_STORED the run stored by that checkout's own `judged ingest-run` (W/run_rows/<run_id>). Every command is
`judged evaluate qrels.txt INPUT --preset trec_eval --cutoffs 10 --format trec`, stdout discarded.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one process, from /usr/bin/time."""
    done = subprocess.run(["/usr/bin/time", "-f", "%e %M", *command], cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=True)
    wall, kb = done.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kb) / 1024


def main() -> int:
    if len(sys.argv) != 7:
        print(__doc__, file=sys.stderr)
        return 2
    data, rounds, old, old_stored, new, new_stored = sys.argv[1:7]
    sides = {"old": (old, old_stored), "new": (new, new_stored)}
    measured: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(int(rounds)):
        for path in ("text", "parquet", "stored"):
            for side, (judged, stored) in sides.items():
                source = {"text": "run.txt", "parquet": "run.parquet", "stored": stored}[path]
                command = [judged, "evaluate", "qrels.txt", source, "--preset", "trec_eval", "--cutoffs", "10",
                           "--format", "trec"]
                measured.setdefault((path, side), []).append(timed(command, Path(data)))
    for (path, side), values in measured.items():
        walls = [wall for wall, _ in values]
        peak = statistics.median(mib for _, mib in values)
        print(f"{path} {side}: median {statistics.median(walls):.2f} s (rounds: "
              f"{' / '.join(f'{w:.2f}' for w in walls)}), peak RSS median {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
