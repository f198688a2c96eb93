"""Metric speed: ragqual vs pytrec_eval vs ranx on 10,000 topics x 100 documents.

Each library computes MAP, nDCG@10, MRR and recall@10 on the same seeded data, starting from
plain Python dicts (so each one's conversion of the inputs is timed with its scoring); two
more rows time pytrec_eval and ranx with their input objects built beforehand. The best of a
few repeats is reported. ranx compiles its kernels with numba on first use, so it
is called once untimed and then timed warm.

    python benchmarks/bench_metrics.py [--topics 10000] [--docs 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field

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


def best_of(repeats: int, contenders: dict[str, Callable[[], dict[str, float]]]) -> dict[str, Timing]:
    """Best wall and CPU time of each contender; the repeats take turns, so a burst of load
    on a shared machine hits every contender alike."""
    timings = {name: Timing() for name in contenders}
    for _ in range(repeats):
        for name, work in contenders.items():
            wall, cpu = time.perf_counter(), time.process_time()
            means = work()
            best = timings[name]
            best.wall = min(best.wall, time.perf_counter() - wall)
            best.cpu = min(best.cpu, time.process_time() - cpu)
            best.means = means
    return timings


def run_ragqual(qrels: dict, run: dict) -> dict[str, float]:
    means = mean_scores(evaluate(qrels, run, RAGQUAL_MEASURES))
    return dict(zip(RANX_MEASURES, (means[m] for m in RAGQUAL_MEASURES)))


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


def scoring_only(qrels: dict, run: dict) -> dict[str, Callable[[], dict[str, float]]]:
    """The two libraries with their input objects built beforehand (untimed)."""
    import pytrec_eval
    from ranx import Qrels, Run, evaluate as ranx_evaluate

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
    ranx_qrels, ranx_run = Qrels(qrels), Run(run)
    return {
        "pytrec_eval, evaluator prebuilt": lambda: pytrec_means(evaluator.evaluate(run)),
        "ranx (warm), Qrels/Run prebuilt": lambda: ranx_evaluate(ranx_qrels, ranx_run, RANX_MEASURES),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()

    qrels, run = build_data(args.topics, args.docs, args.seed)
    run_ranx(qrels, run)  # numba compiles here; the timed calls below are warm
    contenders = {
        "ragqual": lambda: run_ragqual(qrels, run),
        "pytrec_eval": lambda: run_pytrec_eval(qrels, run),
        "ranx (warm)": lambda: run_ranx(qrels, run),
        **scoring_only(qrels, run),
    }
    print_table(best_of(args.repeats, contenders), args)


def print_table(timings: dict[str, Timing], args: argparse.Namespace) -> None:
    ours = timings["ragqual"]
    print(f"{args.topics:,} topics x {args.docs} docs; map, ndcg@10, mrr, recall@10; "
          f"best of {args.repeats}\n")
    print("Each row starts from plain dicts unless it says prebuilt; ragqual has no separate step.")
    print("ranx breaks score ties its own way, so its values can differ slightly from trec_eval's.")
    print("Ratios are ragqual's time over the library's: below 1 means ragqual is faster.\n")
    print("| library | wall s | CPU s | ratio (wall) | ratio (CPU) | map | ndcg@10 | mrr | recall@10 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, t in timings.items():
        values = " | ".join(f"{t.means[m]:.4f}" for m in RANX_MEASURES)
        print(f"| {name} | {t.wall:.3f} | {t.cpu:.3f} | {ours.wall / t.wall:.2f} | {ours.cpu / t.cpu:.2f} "
              f"| {values} |")


if __name__ == "__main__":
    main()
