"""Metric speed: ragqual vs pytrec_eval vs ranx on 10,000 topics x 100 documents.

Each library computes MAP, nDCG@10, MRR and recall@10 on the same seeded data, starting from
plain Python dicts (so each one's conversion of the inputs is timed with its scoring); two
more rows time pytrec_eval and ranx with their input objects built beforehand. The best of a
few repeats is reported. ranx compiles its kernels with numba on first use, so it
is called once untimed and then timed warm.

    python benchmarks/bench_metrics.py [--topics 10000] [--docs 100] [--repeats 3] [--no-ranx]
    git archive 09ca843 ragqual | tar -x -C /tmp/before     # an older ragqual, side by side:
    python benchmarks/bench_metrics.py --before /tmp/before

Each row carries the load average (1 min) when its last repeat finished; the machine may be
shared, so compare ratios measured side by side rather than seconds from different runs. A
second table gives each ragqual row's ratio to pytrec_eval within each round (median and
spread), which moves less with the load than a ratio of two bests.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragqual.core.metrics import evaluate, mean_scores

RAGQUAL_MEASURES = ["map", "ndcg_cut_10", "recip_rank", "recall_10"]
PYTREC_MEASURES = {"map", "ndcg_cut.10", "recip_rank", "recall.10"}
RANX_MEASURES = ["map", "ndcg@10", "mrr", "recall@10"]


def build_data(topics: int, docs: int, seed: int) -> tuple[dict, dict]:
    """Each topic: a pool of 2*docs doc ids, 30% of it judged with labels 0-2, and a run of
    `docs` documents from the pool; scores rounded to 3 decimals, so some tie."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    pool = np.array([f"d{i}" for i in range(2 * docs)])
    for t in range(topics):
        qid = f"q{t}"
        judged = rng.choice(pool, size=int(0.6 * docs), replace=False)
        labels = rng.choice([0, 0, 1, 2], size=len(judged))
        qrels[qid] = dict(zip(judged.tolist(), labels.tolist()))
        retrieved = rng.choice(pool, size=docs, replace=False)
        scores = np.round(rng.random(docs), 3)
        run[qid] = dict(zip(retrieved.tolist(), scores.tolist()))
    return qrels, run


@dataclass
class Timing:
    wall: float = float("inf")
    cpu: float = float("inf")
    means: dict[str, float] = field(default_factory=dict)
    load: float = 0.0
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)


def best_of(repeats: int, contenders: dict[str, Callable[[], dict[str, float]]]) -> dict[str, Timing]:
    """Best wall and CPU time of each contender; the repeats take turns, so a burst of load
    on a shared machine hits every contender alike."""
    timings = {name: Timing() for name in contenders}
    for _ in range(repeats):
        for name, work in contenders.items():
            wall, cpu = time.perf_counter(), time.process_time()
            means = work()
            best = timings[name]
            best.walls.append(time.perf_counter() - wall)
            best.cpus.append(time.process_time() - cpu)
            best.loads.append(os.getloadavg()[0])
            best.wall, best.cpu = min(best.walls), min(best.cpus)
            best.means = means
            best.load = best.loads[-1]
    return timings


def run_ragqual(qrels: dict, run: dict) -> dict[str, float]:
    means = mean_scores(evaluate(qrels, run, RAGQUAL_MEASURES))
    return dict(zip(RANX_MEASURES, (means[m] for m in RAGQUAL_MEASURES)))


def older_ragqual(checkout: Path) -> Callable[[dict, dict], dict[str, float]]:
    """`run_ragqual` with the metrics module of an older checkout (its own file, loaded apart)."""
    spec = importlib.util.spec_from_file_location("ragqual_before_metrics", checkout / "ragqual/core/metrics.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no ragqual/core/metrics.py under {checkout}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)

    def run(qrels: dict, run: dict) -> dict[str, float]:
        means = module.mean_scores(module.evaluate(qrels, run, RAGQUAL_MEASURES))
        return dict(zip(RANX_MEASURES, (means[m] for m in RAGQUAL_MEASURES)))

    return run


def pytrec_means(per_query: dict) -> dict[str, float]:
    names = ("map", "ndcg_cut_10", "recip_rank", "recall_10")
    return {
        label: sum(q[name] for q in per_query.values()) / len(per_query)
        for label, name in zip(RANX_MEASURES, names)
    }


def run_pytrec_eval(qrels: dict, run: dict) -> dict[str, float]:
    import pytrec_eval

    return pytrec_means(pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run))


def run_ranx(qrels: dict, run: dict) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate as ranx_evaluate

    return ranx_evaluate(Qrels(qrels), Run(run), RANX_MEASURES, make_comparable=True)


def scoring_only(qrels: dict, run: dict, ranx: bool) -> dict[str, Callable[[], dict[str, float]]]:
    """The libraries with their input objects built beforehand (untimed)."""
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
    contenders: dict[str, Callable[[], dict[str, float]]] = {
        "pytrec_eval, evaluator prebuilt": lambda: pytrec_means(evaluator.evaluate(run))}
    if ranx:
        from ranx import Qrels, Run, evaluate as ranx_evaluate

        ranx_qrels, ranx_run = Qrels(qrels), Run(run)
        contenders["ranx (warm), Qrels/Run prebuilt"] = lambda: ranx_evaluate(ranx_qrels, ranx_run, RANX_MEASURES)
    return contenders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--no-ranx", dest="ranx", action="store_false", help="leave ranx out (it compiles for a minute)")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="an older checkout of ragqual whose metrics run side by side")
    args = parser.parse_args()

    qrels, run = build_data(args.topics, args.docs, args.seed)
    contenders: dict[str, Callable[[], dict[str, float]]] = {"ragqual": lambda: run_ragqual(qrels, run)}
    if args.before is not None:
        before = older_ragqual(args.before)
        contenders["ragqual, before"] = lambda: before(qrels, run)
    contenders["pytrec_eval"] = lambda: run_pytrec_eval(qrels, run)
    if args.ranx:
        run_ranx(qrels, run)  # numba compiles here; the timed calls below are warm
        contenders["ranx (warm)"] = lambda: run_ranx(qrels, run)
    contenders.update(scoring_only(qrels, run, args.ranx))
    print_table(best_of(args.repeats, contenders), args)


GOAL = 0.5
"""ragqual's time over pytrec_eval's (building its evaluator from the dicts and evaluating)."""


def print_table(timings: dict[str, Timing], args: argparse.Namespace) -> None:
    ours = timings["ragqual"]
    print(f"{args.topics:,} topics x {args.docs} docs; map, ndcg@10, mrr, recall@10; "
          f"best of {args.repeats}; {os.cpu_count()} CPUs\n")
    print("Each row starts from plain dicts unless it says prebuilt; ragqual has no separate step.")
    print("ranx breaks score ties its own way, so its values can differ slightly from trec_eval's.")
    print("Ratios are ragqual's time over the row's: below 1 means ragqual is faster. The last")
    print("columns put each ragqual row over pytrec_eval (build + evaluate), the goal's measure.\n")
    reference = timings["pytrec_eval"]
    print("| library | wall s | CPU s | ragqual / row (wall) | ragqual / row (CPU) | row / pytrec_eval (wall) "
          "| row / pytrec_eval (CPU) | load | map | ndcg@10 | mrr | recall@10 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, t in timings.items():
        values = " | ".join(f"{t.means[m]:.4f}" for m in RANX_MEASURES)
        versus = (f"{t.wall / reference.wall:.2f} | {t.cpu / reference.cpu:.2f}" if name.startswith("ragqual")
                  else " | ")
        print(f"| {name} | {t.wall:.3f} | {t.cpu:.3f} | {ours.wall / t.wall:.2f} | {ours.cpu / t.cpu:.2f} "
              f"| {versus} | {t.load:.2f} | {values} |")
    ratio = ours.wall / reference.wall
    print(f"\nragqual / pytrec_eval (build + evaluate): {ratio:.2f} wall, {ours.cpu / reference.cpu:.2f} CPU "
          f"(goal <= {GOAL}: {'met' if ratio <= GOAL else 'NOT met'})")
    print_rounds(timings, args)


def print_rounds(timings: dict[str, Timing], args: argparse.Namespace) -> None:
    """Each ragqual row over pytrec_eval within each round (the two ran seconds apart, so a change
    of load touches both): the median and the spread of those ratios, with the rounds' loads."""
    reference = timings["pytrec_eval"]
    loads = [load for t in timings.values() for load in t.loads]
    print(f"\nPer round ({args.repeats} rounds, load {min(loads):.2f}-{max(loads):.2f}), row / pytrec_eval "
          "(build + evaluate):\n")
    print("| row | wall median | wall min-max | CPU median | CPU min-max |")
    print("|---|---:|---:|---:|---:|")
    for name, t in timings.items():
        if not name.startswith("ragqual"):
            continue
        walls = [ours / theirs for ours, theirs in zip(t.walls, reference.walls)]
        cpus = [ours / theirs for ours, theirs in zip(t.cpus, reference.cpus)]
        print(f"| {name} | {statistics.median(walls):.3f} | {min(walls):.3f}-{max(walls):.3f} "
              f"| {statistics.median(cpus):.3f} | {min(cpus):.3f}-{max(cpus):.3f} |")


if __name__ == "__main__":
    main()
