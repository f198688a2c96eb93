"""The judge tier: how narrow a valid interval gets for a given number of human labels.

Part 1 (this file so far): the PPI++ interval width against the number of human labels (25, 50,
100, 150), beside the labels-only and judge-only widths, and the planned width of the power
analysis (`ragqual.core.ppi.planned_width`) at the same n.

The data come from a *source*: a function that, given a random generator, returns one judged
run as `JudgedRun` (human labels of the labellable trials, the judge's scores of the same
trials, the judge's scores of the other trials, and the true mean when it is known). For each
label count n the benchmark draws n of the labellable trials uniformly at random (the sampling
PPI needs), treats the rest as judge-only, and averages over `--repeats` draws.

- `simulated_source` (the default): every run has 1,000 trials. A trial's latent truth is yes
  with probability 0.6; the human label is that truth with 10 % of labels flipped (label
  noise), so the human mean, the estimand, is 0.58. The judge says yes whenever the truth is yes
  and also on a share of the no's that puts its yes-rate at 0.73: biased by +0.15. Each repeat
  is a fresh run, so the coverage of the true mean can be counted.
- `fixed_source(human, judge_labelled, judge_unlabelled)`: real data, e.g. the committed labels
  of a run and a judge run over it; every repeat redraws the labelled subsample of the same
  data, and coverage is not shown (the truth is unknown).

    python benchmarks/bench_judge.py [--repeats 500] [--seed 26] [--labels 25,50,100,150]
                                     [--scenario biased|good|poor]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragqual.core.ppi import classical_mean_ci, judge_only_mean_ci, pilot_moments, planned_width, ppi_mean_ci


@dataclass(frozen=True)
class JudgedRun:
    """One judged run: `human[i]` and `judge_labelled[i]` are the same trial; `judge_unlabelled`
    holds the judge's scores of trials nobody can label; `truth` the human mean if known."""

    human: np.ndarray
    judge_labelled: np.ndarray
    judge_unlabelled: np.ndarray
    truth: float | None = None


Source = Callable[[np.random.Generator], JudgedRun]


def simulated_source(trials: int = 1000, base_rate: float = 0.6, label_noise: float = 0.1,
                     bias: float = 0.15, judge_noise: float = 0.0) -> Source:
    """A fresh simulated run per call (see the module docstring); every trial can be labelled.

    `judge_noise` flips that share of the judge's verdicts before the bias is added (0 in the
    default simulation: the judge errs only by saying yes too often)."""
    human_mean = (1 - label_noise) * base_rate + label_noise * (1 - base_rate)
    judge_rate = (1 - judge_noise) * base_rate + judge_noise * (1 - base_rate)
    extra_yes = (human_mean + bias - judge_rate) / (1 - judge_rate)  # share of no's the judge turns to yes
    if not 0 <= extra_yes <= 1:
        raise ValueError(f"a bias of {bias} is out of reach of this judge (its yes-rate is {judge_rate:.3f})")

    def draw(rng: np.random.Generator) -> JudgedRun:
        truth = rng.binomial(1, base_rate, trials)
        human = np.where(rng.random(trials) < label_noise, 1 - truth, truth).astype(float)
        judge = np.where(rng.random(trials) < judge_noise, 1 - truth, truth)
        judge = np.maximum(judge, rng.binomial(1, extra_yes, trials)).astype(float)
        return JudgedRun(human, judge, np.empty(0), human_mean)

    return draw


def fixed_source(human: Sequence[float], judge_labelled: Sequence[float],
                 judge_unlabelled: Sequence[float]) -> Source:
    """Real data: the same labelled and judge-only trials on every call."""
    run = JudgedRun(np.asarray(human, float), np.asarray(judge_labelled, float), np.asarray(judge_unlabelled, float))
    return lambda rng: run


@dataclass
class Row:
    labels: int
    ppi_width: float
    ppi_planned: float
    lam: float
    labels_width: float
    judge_width: float
    ppi_cover: float | None
    labels_cover: float | None
    judge_cover: float | None


def _covers(low: float, high: float, truth: float | None) -> float:
    return float(low <= truth <= high) if truth is not None else float("nan")


def _one_draw(source: Source, n: int, rng: np.random.Generator) -> list[float]:
    """Widths, planned width, lambda and coverage (NaN when the truth is unknown) of one draw."""
    run = source(rng)
    pick = np.zeros(len(run.human), bool)
    pick[rng.choice(len(run.human), n, replace=False)] = True
    rest = np.concatenate([run.judge_labelled[~pick], run.judge_unlabelled])
    ppi = ppi_mean_ci(run.human[pick], run.judge_labelled[pick], rest)
    lab = classical_mean_ci(run.human[pick])
    jud = judge_only_mean_ci(np.concatenate([run.judge_labelled, run.judge_unlabelled]))
    planned = planned_width(n, n + len(rest), pilot_moments(run.human[pick], run.judge_labelled[pick]))
    return [ppi.width, planned, ppi.lam or 0.0, lab.width, jud.width, _covers(ppi.low, ppi.high, run.truth),
            _covers(lab.low, lab.high, run.truth), _covers(jud.low, jud.high, run.truth)]


def measure(source: Source, n: int, repeats: int, rng: np.random.Generator) -> Row:
    """Average widths (and coverage when the truth is known) over `repeats` draws of n labels."""
    means = np.mean([_one_draw(source, n, rng) for _ in range(repeats)], axis=0)
    cover = [None if np.isnan(c) else float(c) for c in means[5:]]
    return Row(n, *(float(x) for x in means[:5]), *cover)


def width_table(source: Source, label_counts: Sequence[int], repeats: int, seed: int) -> list[Row]:
    rng = np.random.default_rng(seed)
    return [measure(source, n, repeats, rng) for n in label_counts]


def _pct(value: float | None) -> str:
    return "   -" if value is None else f"{100 * value:4.1f}%"


def format_table(rows: Sequence[Row]) -> str:
    head = (f"{'labels':>6}  {'PPI++ width':>11}  {'planned':>7}  {'lambda':>6}  {'labels-only':>11}  "
            f"{'judge-only':>10}  {'PPI cover':>9}  {'labels cover':>12}  {'judge cover':>11}")
    lines = [head]
    for r in rows:
        lines.append(f"{r.labels:>6}  {r.ppi_width:>11.3f}  {r.ppi_planned:>7.3f}  {r.lam:>6.2f}  {r.labels_width:>11.3f}  "
                     f"{r.judge_width:>10.3f}  {_pct(r.ppi_cover):>9}  {_pct(r.labels_cover):>12}  "
                     f"{_pct(r.judge_cover):>11}")
    return "\n".join(lines)


SCENARIOS: dict[str, tuple[str, dict[str, float]]] = {
    "biased": ("judge +0.15 biased, 10 % label noise", {}),
    "good": ("unbiased judge, 5 % of its verdicts and 5 % of labels flipped", {"bias": 0.0, "label_noise": 0.05,
                                                                              "judge_noise": 0.05}),
    "poor": ("judge +0.15 biased and 20 % of its verdicts flipped, 10 % label noise", {"judge_noise": 0.2}),
}


def main(argv: Sequence[str] | None = None, source: Source | None = None) -> list[Row]:
    """Print the width table; `source` plugs in real data (see `fixed_source`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=500)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--labels", default="25,50,100,150")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="biased",
                        help="which simulated judge (ignored when a source is given)")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.labels.split(",")]
    started = time.perf_counter()
    title, params = SCENARIOS[args.scenario]
    rows = width_table(source or simulated_source(**params), counts, args.repeats, args.seed)  # type: ignore[arg-type]
    print(f"Full widths of nominal 95 % intervals, mean over {args.repeats} draws"
          + (f" of simulated 1,000-trial runs ({title})" if source is None else ""))
    print(format_table(rows))
    print(f"({time.perf_counter() - started:.1f} s)")
    return rows


if __name__ == "__main__":
    main()
