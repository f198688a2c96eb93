"""Start-up time of the CLI against its import floor, side by side.

Two pairs, each command run N times in a fresh subprocess, the pair alternating so that a burst
of load on a shared machine hits both alike, after one untimed warm-up run of each:

* `ragqual --help` against `python -c "import click"` (the CLI cannot start faster than its own
  framework): goal ratio <= 2;
* a warm bundled `ragqual retrieval` (the bundled corpus and goldens in a scratch project,
  already ingested and embedded by the warm-up run) against
  `python -c "import click, numpy, sqlalchemy.orm"` (the libraries every history command needs):
  goal ratio <= 1.5.

Each row gives the median and minimum wall time, the median CPU time of the child (user + sys,
from the kernel's accounting) and the load average when the row finished; the ratios compare
medians. "Warm" includes Python's bytecode cache: the children run without
PYTHONDONTWRITEBYTECODE, so the warm-up writes the .pyc files a normal install has.

    python benchmarks/bench_startup.py            # N = 15
    python benchmarks/bench_startup.py -n 30 --only retrieval
    git archive 09ca843 | tar -x -C /tmp/before   # an older checkout, to compare side by side:
    python benchmarks/bench_startup.py --before /tmp/before

With `--before DIR` each pair gets a third row: the same command importing ragqual from DIR
(PYTHONPATH), run in turn with the other two.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from source_trees import with_own_migrations

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ("corpus", "goldens", "glossary.txt", "pyproject.toml")


@dataclass
class Pair:
    name: str
    floor: tuple[str, list[str]]
    command: tuple[str, list[str]]
    goal: float
    cwd: Path | None = None


@dataclass
class Times:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    load: float = 0.0


def child_env(pythonpath: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def timed(argv: list[str], cwd: Path | None, pythonpath: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, cwd=cwd, env=child_env(pythonpath),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(pair: Pair, n: int, before: Path | None) -> dict[str, Times]:
    """Times of the floor, the command and (with `before`) the command from the older checkout."""
    runs: list[tuple[str, list[str], Path | None]] = [(pair.floor[0], pair.floor[1], None),
                                                      (pair.command[0], pair.command[1], None)]
    if before is not None:
        runs.append((f"{pair.command[0]}, before", pair.command[1], before))
    for _, argv, path in runs:
        timed(argv, pair.cwd, path)
    times = {label: Times() for label, _, _ in runs}
    for _ in range(n):
        for label, argv, path in runs:
            wall, cpu = timed(argv, pair.cwd, path)
            times[label].wall.append(wall)
            times[label].cpu.append(cpu)
    for t in times.values():
        t.load = os.getloadavg()[0]
    return times


def scratch_project() -> Path:
    """A temporary project holding the bundled corpus and goldens."""
    directory = Path(tempfile.mkdtemp(prefix="ragqual-startup-"))
    for name in BUNDLED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, directory / name)
        else:
            shutil.copy2(source, directory / name)
    return directory


def pairs(only: str | None, project: Path | None) -> list[Pair]:
    python = sys.executable
    chosen = [
        Pair("help", ('python -c "import click"', [python, "-c", "import click"]),
             ("ragqual --help", [python, "-m", "ragqual", "--help"]), 2.0),
        Pair("retrieval", ('python -c "import click, numpy, sqlalchemy.orm"',
                           [python, "-c", "import click, numpy, sqlalchemy.orm"]),
             ("ragqual retrieval (bundled, warm)", [python, "-m", "ragqual", "retrieval"]), 1.5, project),
    ]
    return [p for p in chosen if only in (None, p.name)]


def row(label: str, times: Times, floor: Times | None) -> str:
    wall, cpu = statistics.median(times.wall), statistics.median(times.cpu)
    ratios = "| | " if floor is None else (
        f"| {wall / statistics.median(floor.wall):.2f} | {cpu / statistics.median(floor.cpu):.2f} ")
    return (f"| {label} | {len(times.wall)} | {1000 * wall:.0f} | {1000 * min(times.wall):.0f} | {1000 * cpu:.0f} "
            f"{ratios}| {times.load:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--only", choices=("help", "retrieval"), default=None, help="measure one pair only")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="an older checkout of ragqual to time side by side")
    args = parser.parse_args()
    project = scratch_project() if args.only in (None, "retrieval") else None
    try:
        print(f"machine: {os.cpu_count()} CPUs; runs alternate; load average (1 min) when each pair finished\n")
        print("| command | runs | median wall ms | min wall ms | median CPU ms | ratio (wall) | ratio (CPU) | load |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        verdicts = []
        for pair in pairs(args.only, project):
            times = measure(pair, args.n, args.before and with_own_migrations(args.before))
            floor = times[pair.floor[0]]
            for label, t in times.items():
                print(row(label, t, None if t is floor else floor))
            for label, t in times.items():
                if t is not floor:
                    ratio = statistics.median(t.wall) / statistics.median(floor.wall)
                    met = "met" if ratio <= pair.goal else "NOT met"
                    verdicts.append(f"{label} / floor: {ratio:.2f} wall (goal <= {pair.goal:.1f}: {met})")
        print()
        print("\n".join(verdicts))
    finally:
        if project is not None:
            shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    main()
