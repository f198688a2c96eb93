"""Start-up time of `ragqual --help` against `python -c "import click"` (the floor: the CLI cannot
start faster than its own framework). The goal: the ratio of the medians is at most 2.

Each command runs N times in a fresh subprocess, alternating, after one untimed warm-up run of
each (so both read the same warm file cache). Prints a table with the median, min and max wall
times and the ratio.

    python benchmarks/bench_startup.py            # N = 15
    python benchmarks/bench_startup.py -n 30
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    'python -c "import click"': [sys.executable, "-c", "import click"],
    "ragqual --help": [sys.executable, "-m", "ragqual", "--help"],
}
GOAL = 2.0


def wall(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def measure(n: int) -> dict[str, list[float]]:
    for argv in COMMANDS.values():
        wall(argv)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(n):
        for name, argv in COMMANDS.items():
            times[name].append(wall(argv))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs of each command (default 15)")
    n = parser.parse_args().n
    times = measure(n)
    print(f"{'command':<28} {'runs':>4} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for name, values in times.items():
        print(f"{name:<28} {len(values):>4} {1000 * statistics.median(values):>10.1f} "
              f"{1000 * min(values):>8.1f} {1000 * max(values):>8.1f}")
    floor, cli = (statistics.median(v) for v in times.values())
    ratio = cli / floor
    print(f"ratio ragqual --help / import click: {ratio:.2f} (goal <= {GOAL:.1f}: {'met' if ratio <= GOAL else 'NOT met'})")


if __name__ == "__main__":
    main()
