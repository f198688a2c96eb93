"""Retrieval-tier speed: `ragqual retrieval` wall time (cold and warm) and metric computation vs peers.

Prints, in one run:
  (a) wall time of `ragqual retrieval` on the bundled goldens, process start included:
      cold (empty caches, empty Qdrant folder, fresh database), warm (later runs), warm with
      the search cache bypassed (`--cache write-only`: embeddings reused, every search run
      again), and, for scale, the bare imports of the libraries any run loads;
  (b) metric computation for TOPICS x DOCS (map, ndcg@10, mrr, recall@10): ragqual vs
      pytrec_eval and ranx on the same data (see bench_metrics.py), as time ratios.

    python benchmarks/bench_retrieval.py [--warm-runs 3] [--topics 10000] [--docs 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_metrics  # noqa: E402


FLOOR = "import click, numpy, sqlalchemy.orm"  # what every run needs before doing anything


def timed(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def timed_cli(project: Path, env: dict[str, str], *options: str) -> float:
    return timed([sys.executable, "-m", "ragqual", *options, "retrieval"], project, env)


def cli_timings(warm_runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        shutil.copytree(REPO / "corpus", project / "corpus")
        shutil.copytree(REPO / "goldens", project / "goldens")
        env = {k: v for k, v in os.environ.items() if k not in ("RAGQUAL_DB", "RAGQUAL_CACHE_DIR", "QDRANT_URL")}
        cold = timed_cli(project, env)
        warm = [timed_cli(project, env) for _ in range(warm_runs)]
        researched = min(timed_cli(project, env, "--cache", "write-only") for _ in range(warm_runs))
    floor = min(timed([sys.executable, "-c", FLOOR]) for _ in range(warm_runs))
    bare = min(timed([sys.executable, "-c", "import ragqual.cli.main"]) for _ in range(warm_runs))
    return {"cold": cold, "warm (best)": min(warm), "warm (median)": sorted(warm)[len(warm) // 2],
            "warm, searches not reused (best)": researched, f"python -c '{FLOOR}' (best)": floor,
            "python + CLI import only (best)": bare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print("\n(a) ragqual retrieval on the bundled goldens (3 strategies, process start included)\n")
    print("| run | wall s | goal |\n|---|---:|---|")
    goals = {"cold": "≤ 10 s", "warm (best)": "≤ 1.0 s", "warm (median)": "≤ 1.0 s"}
    for name, seconds in cli_timings(args.warm_runs).items():
        print(f"| {name} | {seconds:.2f} | {goals.get(name, '–')} |")
    print(f"\n(b) metrics for {args.topics} topics x {args.docs} documents: map, ndcg@10, mrr, recall@10\n")
    qrels, run = bench_metrics.build_data(args.topics, args.docs, 20240601)
    bench_metrics.run_ranx(qrels, run)  # numba compiles here; the timed calls are warm
    contenders = {
        "ragqual": lambda: bench_metrics.run_ragqual(qrels, run),
        "pytrec_eval": lambda: bench_metrics.run_pytrec_eval(qrels, run),
        "ranx (warm)": lambda: bench_metrics.run_ranx(qrels, run),
        **bench_metrics.scoring_only(qrels, run),
    }
    timings = bench_metrics.best_of(args.repeats, contenders)
    bench_metrics.print_table(timings, argparse.Namespace(topics=args.topics, docs=args.docs, repeats=args.repeats))


if __name__ == "__main__":
    main()
