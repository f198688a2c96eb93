"""A cached rerun's cost per trial after start-up: `ragqual generation --model mock --all-modes`.

In a throwaway project (a copy of the bundled corpus and goldens, its own history and cache), the
command runs once to fill the response cache (untimed), then, alternately, in full (1,539 trials:
171 goldens x 3 modes x 3 repeats) and with `--limit` (`--small`, default 10 goldens: 90 trials),
each time as a fresh `python -m ragqual` process. A run's cost per trial after start-up is the
difference of the two, divided by the difference in trials: what one more trial costs (its cache
look-ups, scoring, rows, seal and its share of the report), start-up (imports, corpus, index,
definitions) left out. With `--baseline DIR` (another ragqual source tree, say `git archive`
of an older commit), the same runs of that tree alternate with this one's, in their own project
folder, and both are printed side by side. CPU time is the child's user + system time (getrusage), the figure to
compare on a loaded machine; wall time is printed beside it, with the load average.

    python benchmarks/bench_rerun.py [--repeats 2] [--small 10] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from source_trees import with_own_migrations

REPO = Path(__file__).resolve().parents[1]
COMMAND = ["generation", "--model", "mock", "--all-modes"]


def child_env(root: Path, source: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OLLAMA_HOST", "QDRANT_URL", "PYTHONWARNINGS")}
    env["RAGQUAL_DB"] = str(root / "history.db")
    env["RAGQUAL_CACHE_DIR"] = str(root / "cache")
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def prepare(root: Path, source: Path | None) -> None:
    """A project folder whose response cache holds every answer (the first, untimed run)."""
    if not (root / "goldens").exists():
        root.mkdir(parents=True, exist_ok=True)
        shutil.copytree(REPO / "corpus", root / "corpus")
        shutil.copytree(REPO / "goldens", root / "goldens")
    first = subprocess.run([sys.executable, "-m", "ragqual", *COMMAND], cwd=root, env=child_env(root, source),
                           capture_output=True, text=True, check=False)
    if first.returncode != 0:
        raise SystemExit(first.stderr)


def run(root: Path, source: Path | None, *extra: str) -> tuple[int, float, float]:
    """(trials run, CPU seconds, wall seconds) of one `ragqual generation` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragqual", *COMMAND, *extra], cwd=root,
                          env=child_env(root, source), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ragqual generation failed ({done.returncode}):\n{done.stderr}")
    found = re.search(r"run \d+: (\d+) trials \(\d+ already done\), (\d+) model calls", done.stdout)
    if not found or int(found.group(2)) != 0:
        raise SystemExit(f"not a cached rerun:\n{done.stdout[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return int(found.group(1)), cpu, wall


def measure(root: Path, source: Path | None, small: int) -> tuple[list, list]:
    return ([(*run(root, source, "--limit", str(small)), os.getloadavg()[0])],
            [(*run(root, source), os.getloadavg()[0])])


def summary(name: str, full: list, small: list, limit: int) -> list[str]:
    n_full, n_small = full[0][0], small[0][0]
    cpu_full, cpu_small = min(r[1] for r in full), min(r[1] for r in small)
    wall_full, wall_small = min(r[2] for r in full), min(r[2] for r in small)
    per_cpu = (cpu_full - cpu_small) / (n_full - n_small) * 1000
    per_wall = (wall_full - wall_small) / (n_full - n_small) * 1000
    return [
        f"| {name} | `--limit {limit}` | {n_small:,} | {cpu_small:.2f} s | {wall_small:.2f} s |",
        f"| {name} | all | {n_full:,} | {cpu_full:.2f} s | {wall_full:.2f} s |",
        f"| {name} | **per trial after start-up** | | **{per_cpu:.3f} ms** | {per_wall:.3f} ms |",
        f"| {name} | start-up (short run less its trials) | | {cpu_small - per_cpu * n_small / 1000:.2f} s | "
        f"{wall_small - per_wall * n_small / 1000:.2f} s |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--small", type=int, default=10, help="Goldens in the short run (--limit).")
    parser.add_argument("--baseline", type=Path, help="Another ragqual source tree to time side by side.")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        baseline = args.baseline and with_own_migrations(args.baseline)
        trees = {"this tree": None, **({f"baseline {baseline.name}": baseline} if baseline else {})}
        roots = {name: Path(tmp) / f"project-{i}" for i, name in enumerate(trees)}
        for name, source in trees.items():
            prepare(roots[name], source)
        timed: dict[str, tuple[list, list]] = {name: ([], []) for name in trees}
        loads = []
        for _ in range(args.repeats):
            for name, source in trees.items():
                small, full = measure(roots[name], source, args.small)
                timed[name][0].extend(small)
                timed[name][1].extend(full)
                loads += [small[0][3], full[0][3]]
        print(f"`ragqual {' '.join(COMMAND)}`, cached rerun; {os.cpu_count()} cores; load average "
              f"{min(loads):.1f}-{max(loads):.1f} while timing; best of {args.repeats}, alternating")
        print("| tree | run | trials | CPU | wall |")
        print("|---|---|---|---|---|")
        for name in trees:
            small, full = timed[name]
            print("\n".join(summary(name, full, small, args.small)))


if __name__ == "__main__":
    main()
