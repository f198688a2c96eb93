"""`ragqual adopt BASE CANDIDATE...`: apply the adoption rule; report the verdict, change nothing.

Each argument is a run id or a baseline file, optionally followed by `:strategy` to pick one
group of it. A baseline holding several strategies must name one; a candidate without a
strategy stands for each of its strategies (the baseline's own group left out). The rule itself
is `ragqual.core.adoption.decide` over the group means of its priority metrics
(`ragqual.core.metric_names.ADOPTION_PRIORITY`); beside it, each candidate's deciding metric is
tested against the baseline question by question as `ragqual compare` tests it
(`ragqual.app.comparison.compare_metric`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
import pandas as pd

from ragqual.app.gates import incomplete_sources
from ragqual.app.comparison import Options, check_comparable, compare_metric
from ragqual.app.context import AppContext
from ragqual.app.history_reads import run_summary
from ragqual.cli.output import emit_document, format_option, output_format
from ragqual.core.adoption import PRIORITY, PairedEvidence, Verdict, decide, with_evidence
from ragqual.core.verdicts import DEFAULT_ALPHA
from ragqual.errors import InputError
from ragqual.store.summaries import Summary, load_baseline


@dataclass(frozen=True)
class Spec:
    target: str  # run id or file path
    strategy: str | None
    is_file: bool


def parse_spec(spec: str, source: str) -> Spec:
    """`12`, `12:hybrid`, `path.json` or `path.json:hybrid`; `source` forces run or file."""
    if source != "run" and Path(spec).is_file():
        return Spec(spec, None, True)
    head, sep, tail = spec.rpartition(":")
    if sep and source != "run" and Path(head).is_file():
        return Spec(head, tail or None, True)
    if source == "file":
        raise InputError(f"{spec!r}: no such baseline file")
    target, strategy = (head, tail or None) if sep else (spec, None)
    if not target.isdigit():
        raise InputError(f"{spec!r} is neither a run id (optionally RUN_ID:strategy) nor an existing baseline file")
    return Spec(target, strategy, False)


class _Loader:
    def __init__(self, app: AppContext, allow_incomplete: bool = False):
        self.app = app
        self.allow_incomplete = allow_incomplete
        self.cache: dict[tuple[str, bool], Summary] = {}

    def __call__(self, spec: Spec) -> Summary:
        key = (spec.target, spec.is_file)
        if key not in self.cache:
            if spec.is_file:
                self.cache[key] = load_baseline(spec.target)
            else:
                self.cache[key] = run_summary(self.app, int(spec.target), allow_incomplete=self.allow_incomplete)
        return self.cache[key]


def _baseline_group(spec: Spec, summary: Summary) -> str:
    if spec.strategy is not None:
        _require_group(spec, summary, spec.strategy)
        return spec.strategy
    if len(summary.groups) != 1:
        options = ", ".join(f"{spec.target}:{g}" for g in summary.groups) or "none"
        raise InputError(f"{spec.target} holds {len(summary.groups)} groups; name the baseline one: {options}")
    return next(iter(summary.groups))


def _require_group(spec: Spec, summary: Summary, group: str) -> None:
    if group not in summary.groups:
        raise InputError(f"{spec.target} has no strategy {group!r}; it has: {', '.join(summary.groups) or 'none'}")


def _candidates(spec: Spec, summary: Summary, base_key: tuple[str, str]) -> list[str]:
    if spec.strategy is not None:
        _require_group(spec, summary, spec.strategy)
        return [spec.strategy]
    return [g for g in summary.groups if (spec.target, g) != base_key]


@dataclass(frozen=True)
class Gathered:
    base_label: str
    base: tuple[Summary, str]  # the baseline's summary and group
    candidates: dict[str, tuple[Summary, str]]  # candidate label -> its summary and group

    def means(self) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        summary, group = self.base
        return summary.groups[group].means(), {k: s.groups[g].means() for k, (s, g) in self.candidates.items()}


def gather(app: AppContext, base: str, candidates: tuple[str, ...], source: str, allow_incomplete: bool = False,
           ) -> Gathered:
    """The baseline and each candidate group named by the arguments."""
    load = _Loader(app, allow_incomplete)
    base_spec = parse_spec(base, source)
    base_summary = load(base_spec)
    base_group = _baseline_group(base_spec, base_summary)
    out: dict[str, tuple[Summary, str]] = {}
    for raw in candidates:
        spec = parse_spec(raw, source)
        summary = load(spec)
        check_comparable(base_summary, summary)
        for group in _candidates(spec, summary, (base_spec.target, base_group)):
            out[f"{spec.target}:{group}"] = (summary, group)
    if not out:
        raise InputError("no candidate left to judge (a candidate equal to the baseline is skipped)")
    return Gathered(f"{base_spec.target}:{base_group}", (base_summary, base_group), out)


def paired_evidence(gathered: Gathered, metric: str | None, options: Options) -> dict[str, PairedEvidence]:
    """Each candidate's deciding metric tested against the baseline over the paired questions."""
    if metric is None:
        return {}
    out = {}
    base_summary, base_group = gathered.base
    for name, (summary, group) in gathered.candidates.items():
        row = compare_metric(base_summary, base_group, summary, group, metric, options)
        if row is not None:
            out[name] = PairedEvidence(row.test, row.n, row.delta, row.ci_low, row.ci_high, row.p_value, row.mde,
                                       row.verdict)
    return out


def verdict_frame(base_label: str, base: dict[str, float], candidates: dict[str, dict[str, float]],
                  verdict: Verdict, evidence: dict[str, PairedEvidence] | None = None) -> pd.DataFrame:
    """One row per side: the priority metrics' means and the rule's outcome, then the paired test of
    the deciding metric (`delta`, `ci_low`, `ci_high`, `p_value`, `mde`, `test_verdict`)."""
    evidence = evidence or {}
    rows = [{"name": base_label, "role": "baseline", **{m: base.get(m) for m in PRIORITY},
             "cleared": None, **_evidence_cells(None), "reason": ""}]
    for name, metrics in candidates.items():
        outcome = verdict.outcomes[name]
        rows.append({"name": name, "role": "candidate", **{m: metrics.get(m) for m in PRIORITY},
                     "cleared": outcome.cleared, **_evidence_cells(evidence.get(name)), "reason": outcome.reason})
    return pd.DataFrame(rows)


def _evidence_cells(e: PairedEvidence | None) -> dict[str, object]:
    if e is None:
        return {"delta": None, "ci_low": None, "ci_high": None, "p_value": None, "mde": None, "test_verdict": None}
    return {"delta": e.delta, "ci_low": e.ci_low, "ci_high": e.ci_high, "p_value": e.p_value, "mde": e.mde,
            "test_verdict": e.verdict}


def _incomplete_of(app: AppContext, name: str) -> str:
    """The incomplete-run label of a row's run ('' for a finished run or a baseline file)."""
    target = name.rpartition(":")[0] or name
    if not target.isdigit() or Path(target).is_file():
        return ""
    return incomplete_sources(run_summary(app, int(target), allow_incomplete=True))


@click.command("adopt")
@click.argument("base")
@click.argument("candidates", nargs=-1, required=True)
@click.option("--metric-source", "source", type=click.Choice(["auto", "run", "file"]), default="auto",
              show_default=True,
              help="Read the arguments as run ids, as baseline files, or decide by whether the path exists.")
@click.option("--allow-incomplete", is_flag=True, help="Judge runs whose last event is not `finished` "
              "(their rows then say so).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the paired test's random sign flips.")
@click.option("--alpha", type=float, default=DEFAULT_ALPHA, show_default=True,
              help="Significance level of the paired test (its interval is at 1 - alpha).")
@format_option()
@click.pass_obj
def adopt_cmd(app: AppContext, base: str, candidates: tuple[str, ...], source: str, allow_incomplete: bool,
              seed: int, alpha: float, fmt: str) -> None:
    """Apply the adoption rule to CANDIDATE(s) against BASE; print the verdict with the paired test of
    the deciding metric beside it; change no default."""
    gathered = gather(app, base, candidates, source, allow_incomplete)
    base_label = gathered.base_label
    base_means, candidate_means = gathered.means()
    rule = decide(base_means, candidate_means)
    evidence = paired_evidence(gathered, rule.deciding_metric, Options(alpha=alpha, seed=seed))
    verdict = with_evidence(rule, evidence, 1 - alpha)
    header = {"baseline": base_label, "saturated": list(verdict.saturated) or "none",
              "deciding_metric": verdict.deciding_metric or "none", "best": verdict.best or "none",
              "verdict": verdict.sentence}
    table = verdict_frame(base_label, base_means, candidate_means, verdict, evidence)
    if allow_incomplete:
        table["incomplete"] = [_incomplete_of(app, name) for name in table["name"]]
    fmt = output_format(fmt, app.as_json)
    if fmt == "table":  # each reason is printed in full below the table
        table = table.drop(columns="reason")
    notes = [] if fmt == "json" else [verdict.sentence, *(f"{n}: {o.reason}" for n, o in verdict.outcomes.items())]
    emit_document("adoption rule", header, [("candidates", table)], fmt, notes)
