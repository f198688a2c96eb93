"""Comparing two runs (or baseline files): per-question values paired, tested and judged.

The unit is the question. A summary already holds one value per question and metric (repeats
averaged); a question unstable on either side (passed in some repeats, failed in others) is left
out and counted. For each metric of each group present on both sides:

* a binary metric (pass, correctness, hit@k ... with every value 0 or 1) gets the exact McNemar
  test on the discordant counts b (1 -> 0) and c (0 -> 1);
* any other metric gets the paired sign-flip randomization test;
* with clusters (`cluster="doc"`: questions sharing a relevant document, transitively) both kinds
  get the sign-flip test with one sign per cluster, and the standard error is the cluster-robust one;
* every interval is inverted from the test beside it (`stats.mcnemar_interval`,
  `stats.randomization_interval`, `stats.cluster_randomization_interval`), so it excludes 0 exactly
  when the unadjusted p-value is below alpha; an interval no data could close (too few questions
  for the test ever to reject) is shown as the metric's whole range;
* the minimum detectable effect at `power` and `alpha` from the observed paired variance and n
  (for a McNemar metric never below the share of questions the exact test needs, 6 / n at 0.05;
  None for a graded metric whose paired differences have no spread: `stats.detectable_effect`);
* intervals at confidence 1 - alpha.

Holm adjusts the p-values over the gate family (every metric x group compared); the verdict is
`ragqual.core.verdicts.verdict` on the adjusted p-value. The exploratory per-tag table uses
Benjamini-Hochberg over all its rows and decides nothing. The random sign patterns of the
sign-flip tests are shared by the metrics of one group (and tag) of the same width: drawn from a
generator seeded from `seed`, the group (and tag) name and the number of units
(`sign_patterns`), so a result does not depend on what else ran or in which order.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragqual.app.context import AppContext
from ragqual.app.gates import gated_summary, incomplete_sources
from ragqual.app.history_reads import history_head
from ragqual.core import paramdiff, stats
from ragqual.core.critical import CriticalRegression, metric_regressed, pass_regressed
from ragqual.core.metric_names import FLIP_METRICS, PASS, is_binary, is_gated, is_informational, lower_is_better
from ragqual.core.multiplicity import benjamini_hochberg, holm
from ragqual.core.runlabel import RunLabel
from ragqual.core.scoring import SCORER_NAME
from ragqual.core.verdicts import DEFAULT_ALPHA, REGRESSION, tolerance_regressed, verdict
from ragqual.errors import InputError
from ragqual.store.case_reads import CaseInfo, case_infos
from ragqual.store.runstore import RunStore
from ragqual.store.summaries import GroupSummary, Summary, load_baseline

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_TOLERANCE = 0.02
DEFAULT_RESAMPLES = 10_000
DEFAULT_POWER = 0.8
GATES = ("stats", "tolerance")
CLUSTERINGS = ("doc",)


@dataclass(frozen=True)
class Options:
    gate: str = "stats"
    tolerance: float = DEFAULT_TOLERANCE
    alpha: float = DEFAULT_ALPHA
    power: float = DEFAULT_POWER
    metrics: tuple[str, ...] = ()
    every_metric: bool = False
    seed: int = 0
    resamples: int = DEFAULT_RESAMPLES
    cluster: str | None = None
    by_tag: bool = False
    across_configs: bool = False  # pair runs of the same goldens over another corpus, chunking or embedder


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one group (of one tag, in the exploratory table)."""

    group: str
    metric: str
    better: str  # "higher" or "lower"
    n: int
    base_mean: float
    new_mean: float
    delta: float  # new - base
    ci_low: float
    ci_high: float
    test: str  # "mcnemar-exact", "randomization", "cluster-randomization"
    p_value: float
    p_adjusted: float
    mde: float | None  # None: no spread in the paired differences (see stats.detectable_effect)
    verdict: str
    b: int | None  # binary metrics: questions 1 -> 0
    c: int | None  # binary metrics: questions 0 -> 1
    wins: int
    ties: int
    losses: int
    unstable_excluded: int
    clusters: int | None = None
    tag: str | None = None
    regressed: bool = False  # what the chosen gate decided


@dataclass(frozen=True)
class Flip:
    group: str
    metric: str
    question: str  # the id the summaries use
    golden_id: str
    tags: tuple[str, ...]
    direction: str  # "pass->fail" or "fail->pass"


@dataclass(frozen=True)
class Unstable:
    group: str
    question: str
    golden_id: str
    sides: str  # "base", "new" or "both"


@dataclass(frozen=True)
class Comparison:
    base: Summary
    new: Summary
    options: Options
    rows: list[MetricComparison]
    tag_rows: list[MetricComparison] = field(default_factory=list)
    flips: list[Flip] = field(default_factory=list)
    unstable: list[Unstable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    history: dict[str, str] = field(default_factory=dict)  # the history head, when a side was read from it
    differences: list[str] = field(default_factory=list)  # the two runs' settings that differ
    critical: list[CriticalRegression] = field(default_factory=list)  # regressions on critical goldens
    costs: pd.DataFrame | None = None  # cost per variant of both runs (ragqual.app.pricing.compare_costs)
    judge: pd.DataFrame | None = None  # `compare --judge`: PPI++ paired difference per criterion (outside the gate)

    def extra_sections(self) -> list[tuple[str, pd.DataFrame]]:
        """Cost per variant, and the judge's section when `compare --judge` added it."""
        from ragqual.app.pricing import cost_sections

        judge = [] if self.judge is None else [
            ("judge: NEW - BASE per criterion (PPI++ paired interval; an LLM's opinion corrected by human labels, "
             "outside the default gate)", self.judge)]
        return cost_sections(self.costs) + judge

    def cost_records(self) -> list[dict[str, Any]]:
        from ragqual.app.pricing import cost_records

        return cost_records(self.costs)

    @property
    def regressions(self) -> list[MetricComparison]:
        return [r for r in self.rows if r.regressed]

    @property
    def gate_failed(self) -> bool:
        """A metric regressed under the chosen gate, or a critical golden regressed."""
        return bool(self.regressions or self.critical)

    def unstable_by_group(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for item in self.unstable:
            out.setdefault(item.group, []).append(item.question)
        return out


# -- loading ---------------------------------------------------------------------------------------

def is_baseline_file(spec: str) -> bool:
    return parse_side(spec).is_file


@dataclass(frozen=True)
class Side:
    """`12`, `12:hybrid`, `path.json` or `path.json:mock/e2e`: a run or baseline file, and
    optionally the one group of it to compare."""

    target: str
    group: str | None
    is_file: bool


def parse_side(spec: str) -> Side:
    """A group label may itself hold colons (`llamacpp:gemma3-270m/e2e`): after a run id (digits)
    the group is everything past the first colon; after a file, everything past the file's path."""
    if Path(spec).is_file():
        return Side(spec, None, True)
    for cut in (i for i, ch in enumerate(spec) if ch == ":"):
        if Path(spec[:cut]).is_file():
            return Side(spec[:cut], spec[cut + 1:] or None, True)
    target, _, group = spec.partition(":")
    if not target.isdigit():
        raise InputError(f"{spec!r} is neither a run id nor an existing baseline file (either may end in :GROUP)")
    return Side(target, group or None, False)


def load_side(spec: str, open_store: Callable[[], RunStore], scorer_name: str = SCORER_NAME,
              scorer_version: int | None = None, allow_incomplete: bool = False) -> Summary:
    """A baseline file or a run of the history (refused unless finished, see app.gates); with
    `:group`, only that group of it."""
    side = parse_side(spec)
    if side.is_file:
        summary = load_baseline(side.target)
    else:
        summary = gated_summary(open_store(), int(side.target), scorer_name, scorer_version, allow_incomplete)
    return summary if side.group is None else only_group(summary, side.group)


def only_group(summary: Summary, label: str) -> Summary:
    if label not in summary.groups:
        known = ", ".join(sorted(summary.groups)) or "none"
        raise InputError(f"{summary.source} has no group {label!r} (it has: {known})")
    return replace(summary, source=f"{summary.source}:{label}", groups={label: summary.groups[label]})


def pair_single_groups(base: Summary, new: Summary) -> tuple[Summary, Summary]:
    """Two sides narrowed to one group each (`12:dense` against `12:hybrid`) are compared with
    each other under the joint label `dense->hybrid`, whatever their names."""
    if len(base.groups) != 1 or len(new.groups) != 1 or set(base.groups) == set(new.groups):
        return base, new
    (b_label, b_group), (n_label, n_group) = next(iter(base.groups.items())), next(iter(new.groups.items()))
    label = f"{b_label}->{n_label}"
    return (replace(base, groups={label: replace(b_group, label=label)}),
            replace(new, groups={label: replace(n_group, label=label)}))


def load_case_infos(base: Summary, new: Summary, open_store: Callable[[], RunStore],
                    from_history: bool) -> dict[str, CaseInfo]:
    """Tags and relevant documents of the compared questions, from the history. Without
    `from_history` (both sides baseline files) nothing is read: such a comparison opens no
    database, and has no tags or relevant documents."""
    if not from_history:
        return {}
    ids = {q for s in (base, new) for g in s.groups.values() for q in g.questions}
    return case_infos(open_store().engine, sorted(ids))


# -- comparing -------------------------------------------------------------------------------------

def check_comparable(base: Summary, new: Summary, across_configs: bool = False) -> None:
    """Same kind always; the same corpus fingerprint unless `across_configs`, which pairs two
    runs (never a baseline file) of the same goldens over another corpus, chunking or embedder."""
    if base.kind != new.kind:
        raise InputError(
            f"refusing to compare a {base.kind} summary ({base.source}) with a {new.kind} one ({new.source})"
        )
    if base.corpus_fingerprint == new.corpus_fingerprint:
        return
    if not across_configs:
        raise InputError(
            f"refusing to compare: corpus fingerprints differ ({base.source}: {base.corpus_fingerprint}, "
            f"{new.source}: {new.corpus_fingerprint}). The two measured different corpora, chunking or "
            "embedders, so a difference would not be a regression. Re-baseline instead: "
            "`ragqual baseline promote <run id>` on a run over the current corpus; or, to measure what a "
            "change of corpus, chunking or embedder did, compare two runs with --across-configs."
        )
    if base.from_baseline_file or new.from_baseline_file:
        raise InputError("--across-configs pairs two runs of the history: a baseline file is never compared with "
                         "another corpus (re-baseline instead)")
    if base.header.get("dataset_hash") != new.header.get("dataset_hash"):
        raise InputError(
            f"refusing to compare across configurations: the goldens differ ({base.source}: "
            f"{str(base.header.get('dataset_hash'))[:12]}, {new.source}: {str(new.header.get('dataset_hash'))[:12]}); "
            "--across-configs pairs runs of the same questions in the same versions"
        )


def setting_differences(base: Summary, new: Summary) -> list[str]:
    """`key: base -> new` for each stored setting (and the corpus fingerprint) that differs, the
    runs' names and tags left out; a baseline file carries its run's settings in its header."""
    return paramdiff.describe(paramdiff.setting_changes(base.header.get("params"), base.corpus_fingerprint,
                                                        new.header.get("params"), new.corpus_fingerprint))


def source_label(summary: Summary) -> str:
    """`run 12 "chunks-128" [dataset=v2]`: the source with the run's name and tags, when it has them."""
    label = RunLabel.from_params(summary.header).text()
    return f"{summary.source} {label}" if label else summary.source


def pattern_stream(group: str, tag: str | None = None) -> str:
    """The name of a group's (or a group's tag's) sign patterns in `sign_patterns`."""
    return group if tag is None else f"{group}\0{tag}"


def pattern_rng(seed: int, stream: str, width: int) -> np.random.Generator:
    """The generator of a stream's patterns of `width` units: one seed per (seed, stream, width)."""
    return np.random.default_rng([seed, zlib.crc32(f"{stream}\0{width}".encode())])


def sign_patterns(seed: int) -> stats.SignPatterns:
    """One comparison's sign patterns: every metric of a group (and tag) with the same number of
    units is tested on the same patterns, drawn once (see `stats.SignPatterns`)."""
    return stats.SignPatterns(lambda stream, width: pattern_rng(seed, stream, width))


def default_metrics(base: GroupSummary, new: GroupSummary, every: bool = False) -> list[str]:
    """Metrics both groups hold, sizes left out; strategy groups only their headline unless `every`."""
    shared = [m for m in base.metrics() if m in set(new.metrics()) and not is_informational(m)]
    if every or base.trials or new.trials:
        return shared
    return [m for m in shared if is_gated(m)]


def _check_options(options: Options) -> None:
    if not (options.tolerance >= 0 and math.isfinite(options.tolerance)):
        raise InputError(f"--tolerance must be a non-negative number, got {options.tolerance!r}")
    if not 0 < options.alpha < 1 or not 0 < options.power < 1:
        raise InputError(f"--alpha and --power must lie between 0 and 1, got {options.alpha} and {options.power}")
    if options.gate not in GATES:
        raise InputError(f"--gate must be one of {', '.join(GATES)}, got {options.gate!r}")
    if options.cluster is not None and options.cluster not in CLUSTERINGS:
        raise InputError(f"--cluster must be one of {', '.join(CLUSTERINGS)}, got {options.cluster!r}")


def compare(base: Summary, new: Summary, options: Options = Options(),
            cases: Mapping[str, CaseInfo] | None = None) -> Comparison:
    """The whole comparison of NEW against BASE (see the module doc)."""
    _check_options(options)
    check_comparable(base, new, options.across_configs)
    cases = cases or {}
    notes = _group_notes(base, new)
    rows: list[MetricComparison] = []
    tag_rows: list[MetricComparison] = []
    flips: list[Flip] = []
    unstable: list[Unstable] = []
    critical: list[CriticalRegression] = []
    patterns = sign_patterns(options.seed)
    for label in sorted(set(base.groups) & set(new.groups)):
        b, n = base.groups[label], new.groups[label]
        unstable += _unstable(label, b, n, cases)
        excluded = {u.question for u in unstable if u.group == label}
        for metric in list(options.metrics) or default_metrics(b, n, options.every_metric):
            pairs = _paired(label, metric, b, n, excluded, notes)
            if pairs is None:
                continue
            clusters = _clusters(pairs[0], cases, options)
            rows.append(_test(label, metric, pairs, clusters, len(excluded), options, patterns))
            if options.by_tag:
                tag_rows += _tag_tests(label, metric, pairs, cases, len(excluded), options, patterns)
        flips += _flips(label, b, n, excluded, cases)
        critical += critical_regressions(label, b, n, cases, options.tolerance)
    if not rows:
        notes.append("no metric was present on both sides for any shared group: nothing was compared")
    if options.by_tag and not cases:
        notes.append("per-tag table: the questions' tags come from the history, and neither side is a run")
    rows = _judge(rows, holm, options, gate=True)
    notes += [f"{c.text()}: this fails the gate" for c in critical]
    return Comparison(base, new, options, rows, _judge(tag_rows, benjamini_hochberg, options, gate=False),
                      flips, unstable, notes, differences=setting_differences(base, new), critical=critical)


def _group_notes(base: Summary, new: Summary) -> list[str]:
    notes = []
    for label in sorted(set(base.groups) - set(new.groups)):
        notes.append(f"group {label!r} is only in BASE ({base.source}): not compared")
    for label in sorted(set(new.groups) - set(base.groups)):
        notes.append(f"group {label!r} is only in NEW ({new.source}): not compared")
    return notes


def _unstable(label: str, b: GroupSummary, n: GroupSummary, cases: Mapping[str, CaseInfo]) -> list[Unstable]:
    out = []
    for q in sorted(set(b.unstable) | set(n.unstable)):
        sides = "both" if q in b.unstable and q in n.unstable else ("base" if q in b.unstable else "new")
        out.append(Unstable(label, q, _golden(q, cases), sides))
    return out


def _golden(question: str, cases: Mapping[str, CaseInfo]) -> str:
    info = cases.get(question)
    return info.golden_id if info else question


Pairs = tuple[list[str], list[float], list[float]]


def _paired(label: str, metric: str, b: GroupSummary, n: GroupSummary, excluded: set[str],
            notes: list[str]) -> Pairs | None:
    base_values, new_values = b.values(metric), n.values(metric)
    questions = sorted((set(base_values) & set(new_values)) - excluded)
    if not questions:
        notes.append(f"{label} {metric}: no question has it on both sides")
        return None
    return questions, [base_values[q] for q in questions], [new_values[q] for q in questions]


def _clusters(questions: Sequence[str], cases: Mapping[str, CaseInfo], options: Options) -> list[int] | None:
    if options.cluster is None:
        return None
    missing = [q for q in questions if q not in cases]
    if missing:
        raise InputError(
            f"--cluster doc needs each question's relevant documents from the history; {len(missing)} "
            f"question(s) have none there (e.g. {missing[0]!r}). Compare against a run id, not two baseline files."
        )
    numbers = stats.shared_item_clusters({q: cases[q].relevant_doc_ids for q in questions})
    return [numbers[q] for q in questions]


def _is_binary(metric: str, base: Sequence[float], new: Sequence[float]) -> bool:
    return is_binary(metric) and stats.is_binary(base) and stats.is_binary(new)


def _test(label: str, metric: str, pairs: Pairs, clusters: list[int] | None, unstable_count: int,
          options: Options, patterns: stats.SignPatterns, tag: str | None = None) -> MetricComparison:
    _, base, new = pairs
    stream = pattern_stream(label, tag)
    binary = _is_binary(metric, base, new)
    counts = stats.paired_counts(base, new) if binary else None
    confidence = 1 - options.alpha
    if clusters is not None:
        test = "cluster-randomization"
        lo, hi, p = _cluster_statistics(base, new, clusters, patterns, stream, options.resamples, confidence)
    elif counts is not None:
        test = "mcnemar-exact"
        inverted = stats.mcnemar_interval(counts, confidence)
        lo, hi, p = inverted.lo, inverted.hi, inverted.p_value
    else:
        test = "randomization"
        lo, hi, p = _graded_statistics(base, new, patterns, stream, options.resamples, confidence)
    wins, ties, losses = stats.win_tie_loss(base, new)
    lower = lower_is_better(metric)
    if lower:
        wins, losses = losses, wins
    base_mean, new_mean = math.fsum(base) / len(base), math.fsum(new) / len(new)
    mde = stats.detectable_effect(base, new, binary=counts is not None, clusters=clusters, alpha=options.alpha,
                                  power=options.power)
    return MetricComparison(
        group=label, metric=metric, better="lower" if lower else "higher", n=len(base), base_mean=base_mean,
        new_mean=new_mean, delta=new_mean - base_mean, ci_low=lo, ci_high=hi, test=test, p_value=p,
        p_adjusted=p, mde=mde, verdict="",
        b=counts.b if counts else None, c=counts.c if counts else None, wins=wins, ties=ties, losses=losses,
        unstable_excluded=unstable_count, clusters=len(set(clusters)) if clusters is not None else None, tag=tag,
    )


def _graded_statistics(base: list[float], new: list[float], patterns: stats.SignPatterns, stream: str,
                       resamples: int, confidence: float) -> tuple[float, float, float]:
    """The randomization test and its inverted interval; identical questions give (0, 0) and 1
    without resampling, which is exactly what the test would return."""
    if base == new:
        return 0.0, 0.0, 1.0
    inverted = stats.randomization_interval(base, new, patterns, n_permutations=resamples, confidence=confidence,
                                              stream=stream)
    return _bounded(inverted.lo, base, new), _bounded(inverted.hi, base, new), inverted.p_value


def _cluster_statistics(base: list[float], new: list[float], clusters: list[int], patterns: stats.SignPatterns,
                        stream: str, resamples: int, confidence: float) -> tuple[float, float, float]:
    if base == new:
        return 0.0, 0.0, 1.0
    inverted = stats.cluster_randomization_interval(base, new, clusters, patterns, n_permutations=resamples,
                                                    confidence=confidence, stream=stream)
    return _bounded(inverted.lo, base, new), _bounded(inverted.hi, base, new), inverted.p_value


def _bounded(end: float, base: Sequence[float], new: Sequence[float]) -> float:
    """An infinite interval end (too few questions for the test ever to reject) as the largest
    difference the metric can show: +-1 for a metric between 0 and 1, else +- the observed range."""
    if math.isfinite(end):
        return end
    values = [*base, *new]
    span = 1.0 if min(values) >= 0.0 and max(values) <= 1.0 else max(values) - min(values)
    return math.copysign(span, end)


def _tag_tests(label: str, metric: str, pairs: Pairs, cases: Mapping[str, CaseInfo], unstable_count: int,
               options: Options, patterns: stats.SignPatterns) -> list[MetricComparison]:
    questions, base, new = pairs
    by_tag: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        for tag in cases[q].tags if q in cases else ():
            by_tag.setdefault(tag, []).append(i)
    out = []
    for tag in sorted(by_tag):
        picked = by_tag[tag]
        sub = ([questions[i] for i in picked], [base[i] for i in picked], [new[i] for i in picked])
        clusters = _clusters(sub[0], cases, options)
        out.append(_test(label, metric, sub, clusters, unstable_count, options, patterns, tag))
    return out


def _judge(rows: list[MetricComparison], adjust: Callable[[Sequence[float]], list[float]], options: Options,
           gate: bool) -> list[MetricComparison]:
    adjusted = adjust([r.p_value for r in rows]) if rows else []
    out = []
    for row, p_adj in zip(rows, adjusted, strict=True):
        lower = row.better == "lower"
        said = verdict(row.delta, row.ci_low, row.ci_high, p_adj, options.tolerance, lower, options.alpha)
        if not gate:
            regressed = False
        elif options.gate == "tolerance":
            regressed = tolerance_regressed(row.delta, options.tolerance, lower)
        else:
            regressed = said == REGRESSION
        out.append(replace(row, p_adjusted=p_adj, verdict=said, regressed=regressed))
    return out


def _flips(label: str, b: GroupSummary, n: GroupSummary, excluded: set[str],
           cases: Mapping[str, CaseInfo]) -> list[Flip]:
    metric = next((m for m in FLIP_METRICS if m in b.metrics() and m in n.metrics()), None)
    if metric is None:
        return []
    base_values, new_values = b.values(metric), n.values(metric)
    out = []
    for q in sorted((set(base_values) & set(new_values)) - excluded):
        before, after = base_values[q], new_values[q]
        if before in (0.0, 1.0) and after in (0.0, 1.0) and before != after:
            info = cases.get(q)
            out.append(Flip(label, metric, q, _golden(q, cases), info.tags if info else (),
                            "pass->fail" if before == 1.0 else "fail->pass"))
    return sorted(out, key=lambda f: (f.direction != "pass->fail", f.golden_id))


def critical_regressions(label: str, b: GroupSummary, n: GroupSummary, cases: Mapping[str, CaseInfo],
                         tolerance: float) -> list[CriticalRegression]:
    """Regressions on the critical goldens of one group (the definition is `ragqual.core.critical`);
    unstable questions count here, since a critical question failing in one repeat is the point."""
    out = []
    for q in sorted(set(b.questions) & set(n.questions)):
        info = cases.get(q)
        if info is None or not info.critical:
            continue
        before, after = b.questions[q], n.questions[q]
        if b.trials or n.trials:
            if PASS in before and PASS in after and pass_regressed(before[PASS], after[PASS]):
                out.append(CriticalRegression(label, info.golden_id, PASS, before[PASS], after[PASS]))
            continue
        for metric in (m for m in sorted(set(before) & set(after)) if is_gated(m)):
            if metric_regressed(before[metric], after[metric], tolerance, lower_is_better(metric)):
                out.append(CriticalRegression(label, info.golden_id, metric, before[metric], after[metric]))
    return out


def mark_incomplete(comparison: Comparison, label: str) -> Comparison:
    """With --allow-incomplete, every metric row names the unfinished run(s) it was computed from."""
    if not label:
        return comparison
    return replace(
        comparison,
        rows=[replace(r, group=f"{r.group} [{label}]") for r in comparison.rows],
        tag_rows=[replace(r, group=f"{r.group} [{label}]") for r in comparison.tag_rows],
        notes=[*comparison.notes, f"{label}: compared with --allow-incomplete"],
    )


def compare_sources(app: AppContext, base: str, new: str, options: Options, scorer_name: str = SCORER_NAME,
                    scorer_version: int | None = None, allow_incomplete: bool = False) -> Comparison:
    """`ragqual compare BASE NEW`: each side a run id (optionally RUN:GROUP) or a baseline file, read
    from the project's history; with `allow_incomplete`, rows name the unfinished run(s)."""
    def read_store() -> RunStore:
        return app.store(auto_create=False)

    base_summary = load_side(base, read_store, scorer_name, scorer_version, allow_incomplete)
    new_summary = load_side(new, read_store, scorer_name, scorer_version, allow_incomplete)
    if parse_side(base).group and parse_side(new).group:
        base_summary, new_summary = pair_single_groups(base_summary, new_summary)
    from_history = not (is_baseline_file(base) and is_baseline_file(new))
    cases = load_case_infos(base_summary, new_summary, read_store, from_history)
    comparison = compare(base_summary, new_summary, options, cases)
    if from_history:
        comparison = replace(comparison, history=history_head(read_store().engine))
    return mark_incomplete(comparison, incomplete_sources(base_summary, new_summary))


def compare_metric(base: Summary, base_group: str, new: Summary, new_group: str, metric: str,
                   options: Options = Options()) -> MetricComparison | None:
    """One metric of one group of NEW against one group of BASE, tested as `compare` tests it (None
    when no question has it on both sides)."""
    b, n = pair_single_groups(only_group(base, base_group), only_group(new, new_group))
    result = compare(b, n, replace(options, metrics=(metric,)))
    return result.rows[0] if result.rows else None
