"""`ragqual compare BASE NEW`: the regression gate, with paired statistics per metric.

BASE and NEW are run ids or baseline files. Groups (strategies, or variant/mode pairs) are
matched by name and questions by id; a question unstable on either side (passed in some
repeats, failed in others) is left out and counted. For each metric over the questions present
in both:

* the flat gate (by default on every metric of a variant/mode group and on the headline
  metrics `RETRIEVAL_GATE` of a strategy group): a metric regresses when its mean moves the
  wrong way by more than the tolerance (a move of exactly the tolerance passes; a float slack
  of 1e-9 absorbs rounding);
* paired statistics, for judging whether a move is noise: a bootstrap confidence interval of
  the mean difference (new - base), a sign-flip randomization p-value and win/tie/loss counts
  (a win is a move the better way). Each metric gets its own generator seeded from `--seed`
  and the group and metric names, so a result does not depend on which other metrics ran.
  1000 resamples by default (as sacrebleu's paired bootstrap); `--resamples` raises it.

Runs over different corpus fingerprints measured different things and are refused.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from ragqual.app.gates import gated_summary, incomplete_sources
from ragqual.cli.context import AppContext
from ragqual.cli.output import emit_document, format_option, output_format
from ragqual.core.scoring import SCORER_NAME
from ragqual.core.stats import BootstrapCI, paired_bootstrap_ci, paired_randomization_test, win_tie_loss
from ragqual.errors import GateFailed, InputError
from ragqual.store.summaries import (
    INFORMATIONAL,
    LOWER_IS_BETTER,
    RETRIEVAL_GATE,
    GroupSummary,
    Summary,
    load_baseline,
)

SLACK = 1e-9
DEFAULT_TOLERANCE = 0.02
DEFAULT_RESAMPLES = 1000


@dataclass(frozen=True)
class MetricComparison:
    group: str
    metric: str
    better: str  # "higher" or "lower"
    n: int
    base: float
    new: float
    diff: float  # new - base
    ci_low: float
    ci_high: float
    p_value: float
    wins: int
    ties: int
    losses: int
    unstable_excluded: int
    regressed: bool


@dataclass(frozen=True)
class Comparison:
    base: Summary
    new: Summary
    tolerance: float
    seed: int
    resamples: int
    rows: list[MetricComparison]
    unstable: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[MetricComparison]:
        return [r for r in self.rows if r.regressed]


def check_comparable(base: Summary, new: Summary) -> None:
    if base.corpus_fingerprint != new.corpus_fingerprint:
        raise InputError(
            f"refusing to compare: corpus fingerprints differ ({base.source}: {base.corpus_fingerprint}, "
            f"{new.source}: {new.corpus_fingerprint}). The two measured different corpora, chunking or "
            "embedders, so a difference would not be a regression. Re-baseline instead: "
            "`ragqual baseline promote <run id>` on a run over the current corpus."
        )
    if base.kind != new.kind:
        raise InputError(
            f"refusing to compare a {base.kind} summary ({base.source}) with a {new.kind} one ({new.source})"
        )


def metric_rng(seed: int, group: str, metric: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(f"{group}\0{metric}".encode())])


def default_metrics(base: GroupSummary, new: GroupSummary, every: bool = False) -> list[str]:
    """Metrics both groups hold, sizes left out; strategy groups only their headline unless `every`."""
    shared = [m for m in base.metrics() if m in set(new.metrics()) and m not in INFORMATIONAL]
    if every or base.trials or new.trials:
        return shared
    return [m for m in shared if m in RETRIEVAL_GATE]


def compare_summaries(
    base: Summary, new: Summary, tolerance: float = DEFAULT_TOLERANCE, metrics: Sequence[str] = (),
    seed: int = 0, resamples: int = DEFAULT_RESAMPLES, every_metric: bool = False,
) -> Comparison:
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise InputError(f"--tolerance must be a non-negative number, got {tolerance!r}")
    check_comparable(base, new)
    rows: list[MetricComparison] = []
    unstable: dict[str, list[str]] = {}
    notes = _group_notes(base, new)
    for label in sorted(set(base.groups) & set(new.groups)):
        b, n = base.groups[label], new.groups[label]
        excluded = sorted(set(b.unstable) | set(n.unstable))
        if excluded:
            unstable[label] = excluded
        wanted = list(metrics) or default_metrics(b, n, every_metric)
        for metric in wanted:
            row = _compare_metric(label, metric, b.values(metric), n.values(metric), set(excluded),
                                  tolerance, seed, resamples, notes)
            if row is not None:
                rows.append(row)
    if not rows:
        notes.append("no metric was present on both sides for any shared group: nothing was compared")
    return Comparison(base, new, tolerance, seed, resamples, rows, unstable, notes)


def _group_notes(base: Summary, new: Summary) -> list[str]:
    notes = []
    for label in sorted(set(base.groups) - set(new.groups)):
        notes.append(f"group {label!r} is only in BASE ({base.source}): not compared")
    for label in sorted(set(new.groups) - set(base.groups)):
        notes.append(f"group {label!r} is only in NEW ({new.source}): not compared")
    return notes


def _compare_metric(
    label: str, metric: str, base: dict[str, float], new: dict[str, float], excluded: set[str],
    tolerance: float, seed: int, resamples: int, notes: list[str],
) -> MetricComparison | None:
    paired = sorted((set(base) & set(new)) - excluded)
    if not paired:
        notes.append(f"{label} {metric}: no question has it on both sides")
        return None
    b = [base[q] for q in paired]
    n = [new[q] for q in paired]
    ci, p_value = _statistics(b, n, metric_rng(seed, label, metric), resamples)
    wins, ties, losses = win_tie_loss(b, n)
    lower = metric in LOWER_IS_BETTER
    if lower:
        wins, losses = losses, wins
    base_mean, new_mean = sum(b) / len(b), sum(n) / len(n)
    worsening = (new_mean - base_mean) if lower else (base_mean - new_mean)
    return MetricComparison(
        group=label, metric=metric, better="lower" if lower else "higher", n=len(paired), base=base_mean,
        new=new_mean, diff=new_mean - base_mean, ci_low=ci.lo, ci_high=ci.hi, p_value=p_value,
        wins=wins, ties=ties, losses=losses, unstable_excluded=len(excluded),
        regressed=worsening > tolerance + SLACK,
    )


def _statistics(
    base: list[float], new: list[float], rng: np.random.Generator, resamples: int
) -> tuple[BootstrapCI, float]:
    """Bootstrap interval and p-value; identical questions give (0, 0, 0) and 1 without resampling,
    which is exactly what resampling would return."""
    if base == new:
        return BootstrapCI(0.0, 0.0, 0.0), 1.0
    ci = paired_bootstrap_ci(base, new, rng, n_resamples=resamples)
    return ci, paired_randomization_test(base, new, rng, n_permutations=resamples)


# -- loading either side ---------------------------------------------------------------------------

def load_side(app: AppContext, spec: str, scorer_name: str = SCORER_NAME, scorer_version: int | None = None,
              allow_incomplete: bool = False) -> Summary:
    """A baseline file when `spec` names an existing path, else a run id (refused unless finished)."""
    if Path(spec).is_file():
        return load_baseline(spec)
    if not spec.isdigit():
        raise InputError(f"{spec!r} is neither a run id nor an existing baseline file")
    return gated_summary(app.store(auto_create=False), int(spec), scorer_name, scorer_version, allow_incomplete)


# -- output ----------------------------------------------------------------------------------------

def comparison_frame(comparison: Comparison) -> pd.DataFrame:
    rows = [asdict(r) | {"status": "REGRESSED" if r.regressed else "ok"} for r in comparison.rows]
    frame = pd.DataFrame(rows, columns=[*MetricComparison.__dataclass_fields__, "status"])
    return frame.drop(columns=["regressed"])


def _side(summary: Summary) -> dict[str, Any]:
    return {"source": summary.source, "run_id": summary.run_id, "kind": summary.kind, "tier": summary.tier,
            "corpus_fingerprint": summary.corpus_fingerprint, "git_sha": summary.header.get("git_sha")}


def comparison_header(comparison: Comparison) -> dict[str, Any]:
    return {
        "base": _side(comparison.base), "new": _side(comparison.new), "tolerance": comparison.tolerance,
        "seed": comparison.seed, "resamples": comparison.resamples,
        "unstable_excluded": comparison.unstable,
        "regressions": [f"{r.group} {r.metric}" for r in comparison.regressions],
        "passed": not comparison.regressions,
    }


def _text_header(comparison: Comparison) -> dict[str, Any]:
    def side(summary: Summary) -> str:
        return f"{summary.source} (git {summary.header.get('git_sha') or '-'}, tier {summary.tier})"

    counts = {label: len(ids) for label, ids in comparison.unstable.items()}
    return {"base": side(comparison.base), "new": side(comparison.new),
            "corpus": comparison.base.corpus_fingerprint or "-", "tolerance": comparison.tolerance,
            "seed": comparison.seed, "resamples": comparison.resamples,
            "unstable_excluded": ", ".join(f"{k}: {v}" for k, v in counts.items()) or "none"}


def _verdict_line(comparison: Comparison) -> str:
    if comparison.regressions:
        return f"FAIL: {len(comparison.regressions)} metric(s) regressed beyond the tolerance {comparison.tolerance}"
    return f"OK: no metric regressed beyond the tolerance {comparison.tolerance}"


@click.command("compare")
@click.argument("base")
@click.argument("new")
@click.option("--tolerance", type=float, default=DEFAULT_TOLERANCE, show_default=True,
              help="Largest move the wrong way that still passes (absolute, in the metric's units).")
@click.option("--metric", "metrics", multiple=True, metavar="M",
              help="Compare only this metric (repeatable). Default: every metric of a variant/mode group and "
                   "the headline metrics of a strategy group (recall@1/5, hit@5, mrr, ndcg@10, map@10, "
                   "precision@5, contextRecall, nonEmptyRefusal).")
@click.option("--all-metrics", "every_metric", is_flag=True,
              help="Compare every metric both sides hold (sizes excepted).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and randomization test.")
@click.option("--resamples", type=click.IntRange(min=1), default=DEFAULT_RESAMPLES, show_default=True,
              help="Bootstrap resamples and random sign flips per metric.")
@click.option("--scorer", "scorer_name", default=SCORER_NAME, show_default=True,
              help="Scorer behind `score` and `pass` of a run.")
@click.option("--scorer-version", type=int, help="Scorer version for runs (default: each trial's newest).")
@click.option("--allow-incomplete", is_flag=True, help="Compare a run whose last event is not `finished` "
              "(every row then names it).")
@format_option()
@click.pass_obj
def compare_cmd(app: AppContext, base: str, new: str, tolerance: float, metrics: tuple[str, ...],
                every_metric: bool, seed: int, resamples: int, scorer_name: str, scorer_version: int | None,
                allow_incomplete: bool, fmt: str) -> None:
    """Compare NEW with BASE (run ids or baseline files); exit 1 on a regression beyond the tolerance."""
    comparison = compare_summaries(
        load_side(app, base, scorer_name, scorer_version, allow_incomplete),
        load_side(app, new, scorer_name, scorer_version, allow_incomplete),
        tolerance, metrics, seed, resamples, every_metric,
    )
    fmt = output_format(fmt, app.as_json)
    title = f"compare: BASE {comparison.base.source} -> NEW {comparison.new.source}"
    notes = comparison.notes + ([] if fmt == "json" else [_verdict_line(comparison)])
    header = comparison_header(comparison) if fmt == "json" else _text_header(comparison)
    frame = comparison_frame(comparison)
    if incomplete := incomplete_sources(comparison.base, comparison.new):
        frame["incomplete"], notes = incomplete, [*notes, f"{incomplete}: compared with --allow-incomplete"]
    emit_document(title, header, [("metrics", frame)], fmt, notes)
    if comparison.regressions:
        names = ", ".join(f"{r.group} {r.metric} ({r.diff:+.4f})" for r in comparison.regressions)
        raise GateFailed(f"{len(comparison.regressions)} metric(s) regressed beyond the tolerance {tolerance}: {names}")
