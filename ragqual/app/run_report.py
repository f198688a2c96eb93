"""One run's summary computed from its stored rows (never a re-run): what `ragqual report` prints
and `ragqual.Project.report` returns.

Generation and subject runs are summarised per group of trials (default: variant and mode):
trials, mean score and its population variance, the pass rate (the share of trials whose every
weight-bearing assertion passed), each metric's mean, unstable questions (passed in some repeats
and failed in others), errors, latency p50/p95, tokens in/out, cost and the cache-hit rate. Rates
are fractions from 0 to 1, as everywhere in ragqual. Retrieval runs are summarised per strategy
(and per tag with `by=["tag"]`): each metric's mean over the questions that have it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from ragqual.app.context import AppContext
from ragqual.app.history_reads import history_head
from ragqual.app.pricing import cost_frame, pricing_note, scored_variant_costs
from ragqual.app.run_changes import changes_since_previous
from ragqual.core.display import brief_params
from ragqual.core.metric_names import display_order
from ragqual.core.runlabel import LABEL_KEYS
from ragqual.core.scoring import SCORER_NAME, is_unstable, percentile
from ragqual.engine import axes as axes_mod
from ragqual.errors import InputError
from ragqual.store.bulk_reads import collector_paused
from ragqual.store.queries import case_tags_by_id, case_tags_by_pk, metric_frame, trial_frame
from ragqual.store.cost_reads import trial_costs
from ragqual.store.records import RunInfo
from ragqual.store.sealed_rows import unsealed_counts, unsealed_warning
from ragqual.store.summaries import run_header

UNTAGGED = "(untagged)"


@dataclass(frozen=True)
class Report:
    """A titled header (the run's provenance), named tables and notes."""

    title: str
    header: dict[str, Any]
    sections: list[tuple[str, pd.DataFrame]]
    notes: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> int:
        return int(self.header["run_id"])

    def to_frame(self) -> pd.DataFrame:
        """The first table: the groups (generation and subject runs) or the metrics per strategy."""
        return self.sections[0][1]


def group_keys(by: Sequence[str], retrieval: bool) -> list[str]:
    """The columns a report groups by; retrieval runs are never pooled across strategies."""
    if retrieval:
        return ["strategy"] + (["tag"] if "tag" in by else [])
    keys = [{"strategy": "variant"}.get(k, k) for k in by] or ["variant", "mode"]
    return list(dict.fromkeys(keys))


def build_report(
    engine: Engine, info: RunInfo, by: Sequence[str] = (), scorer_name: str = SCORER_NAME,
    scorer_version: int | None = None, pricing_snapshot: int | None = None,
) -> Report:
    with collector_paused():
        trials = trial_frame(engine, info.id, scorer_name, scorer_version)
        metrics = metric_frame(engine, info.id, scorer_version)
    header = run_header(info) | history_head(engine)
    # the name and tags have their own header lines
    header["params"] = brief_params({k: v for k, v in (info.params or {}).items() if k not in LABEL_KEYS})
    label = info.label.text()
    title = f"Run {info.id}{' ' + label if label else ''} ({info.kind}{', ' + info.subject if info.subject else ''})"
    unsealed = unsealed_counts(engine, [info.id]).get(info.id)
    notes = [unsealed_warning(info.id, unsealed)] if unsealed else []
    if unsealed:
        header["unsealed_rows"] = unsealed
    if trials.empty:
        questions = metrics[metrics["trial_id"].isna()] if not metrics.empty else metrics
        table = _retrieval_table(engine, info, questions, group_keys(by, retrieval=True))
        return _with_changes(engine, info, Report(title, header, [("metrics", table)], notes))
    header["scorer"] = f"{scorer_name} v{scorer_version}" if scorer_version else f"{scorer_name} (newest version)"
    legacy = [None if math.isnan(cost) else cost for cost in trials["cost"].tolist()]
    costs = trial_costs(engine, info.id, pricing_snapshot, legacy=dict(zip(trials["trial_id"].tolist(), legacy)))
    trials["cost"] = trials["trial_id"].map(lambda t: costs[t].cost if t in costs else None).astype(float)
    per_variant = scored_variant_costs(zip(trials["trial_id"].tolist(), trials["variant"].tolist(),
                                           trials["perfect"].tolist(), trials["score"].notna().tolist(), legacy),
                                       costs)
    header["pricing"] = pricing_note(engine, info.id, pricing_snapshot)
    keys = group_keys(by, retrieval=False)
    trials = with_axis_columns(trials, keys, info)
    report = _trial_report(engine, title, header, trials, metrics, keys)
    cost = ("cost per variant", cost_frame(per_variant))
    return _with_changes(engine, info, Report(report.title, report.header, [*report.sections, cost],
                                              [*report.notes, *notes]))


AXIS_PREFIX = "axis:"


def with_axis_columns(trials: pd.DataFrame, keys: Sequence[str], info: RunInfo) -> pd.DataFrame:
    """One `axis:NAME` column per such key: each trial's value of that axis, read from its
    variant's stored axis values. A name no variant of the run has is refused, naming those it has."""
    wanted = [k[len(AXIS_PREFIX):] for k in keys if k.startswith(AXIS_PREFIX)]
    if not wanted:
        return trials
    by_variant = axes_mod.run_axes(info.params or {})
    known = list(dict.fromkeys(n for values in by_variant.values() for n in values))
    for name in wanted:
        if name not in known:
            have = f"its axes are {', '.join(known)}" if known else "its variants were not built from axes (--axis)"
            raise InputError(f"run {info.id} has no axis {name!r}: {have}")
        trials = trials.assign(**{AXIS_PREFIX + name: trials["variant"].map(
            lambda v, n=name: axes_mod.show_value(by_variant.get(v, {}).get(n)))})
    return trials


def _with_changes(engine: Engine, info: RunInfo, report: Report) -> Report:
    """The report with the settings that differ from the previous run of its kind, as a last table
    (a note for the first run of its kind)."""
    changes = changes_since_previous(engine, [info.id])[info.id]
    report.header["previous_run"] = changes.previous
    if changes.previous is None:
        return Report(report.title, report.header, report.sections,
                      [*report.notes, f"the first {info.kind} run: no earlier one to compare its settings with"])
    section = (f"settings changed since run {changes.previous} (the previous {info.kind} run)", changes.frame())
    return Report(report.title, report.header, [*report.sections, section], report.notes)


# -- retrieval --------------------------------------------------------------------------------------

def _retrieval_table(engine: Engine, info: RunInfo, rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if rows.empty:
        return pd.DataFrame(columns=[*keys, "questions"])
    rows = rows.rename(columns={"group_key": "strategy"})
    if "tag" in keys:
        tags = case_tags_by_id(engine, rows["case_id"].unique().tolist(), info.subject)
        rows = _with_tags(rows, rows["case_id"].map(lambda c: tags.get(c, ())))
    wide = rows.pivot_table(index=[*keys, "case_id"], columns="metric", values="value", aggfunc="mean")
    table = wide.groupby(level=keys).mean()
    table.insert(0, "questions", wide.groupby(level=keys).size())
    return table[["questions", *display_order(list(wide.columns))]].reset_index()


def _with_tags(rows: pd.DataFrame, tags: pd.Series) -> pd.DataFrame:
    """One copy of each row per tag of its question (untagged questions under one label)."""
    out = rows.assign(tag=pd.Series([list(t) if t else [UNTAGGED] for t in tags], index=rows.index, dtype=object))
    return out.explode("tag").reset_index(drop=True)


# -- generation and subjects --------------------------------------------------------------------------

def _trial_report(
    engine: Engine, title: str, header: dict[str, Any], trials: pd.DataFrame, metrics: pd.DataFrame,
    keys: list[str],
) -> Report:
    trials = _with_metrics(trials, metrics)
    metric_names = display_order([c[2:] for c in trials.columns if c.startswith("m:")])
    unstable, flagged = _unstable_slots(trials)
    trials["slot"] = list(zip(trials["variant"], trials["mode"], trials["case_id"]))
    if "tag" in keys:
        tags = case_tags_by_pk(engine, trials["case_pk"].unique().tolist())
        trials = _with_tags(trials, trials["case_pk"].map(lambda p: tags.get(p, ())))
    groups = _group_table(trials, keys, metric_names, flagged)
    notes = []
    unscored = int(trials.drop_duplicates("trial_id")["score"].isna().sum())
    if unscored:
        notes.append(f"{unscored} trial(s) have no score of this scorer and are left out of score and pass rate.")
    return Report(title, header, [("groups", groups), ("unstable questions", unstable)], notes)


def _with_metrics(trials: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    if metrics.empty or metrics["trial_id"].notna().sum() == 0:
        return trials
    linked = metrics[metrics["trial_id"].notna()].astype({"trial_id": "int64"})
    wide = linked.groupby(["trial_id", "metric"])["value"].mean().unstack("metric")
    wide.columns = [f"m:{c}" for c in wide.columns]
    return trials.merge(wide, left_on="trial_id", right_index=True, how="left")


UNSTABLE_COLUMNS = ["variant", "mode", "case_id", "slug", "passed", "repeats"]


def _unstable_slots(trials: pd.DataFrame) -> tuple[pd.DataFrame, set[tuple[str, str, str]]]:
    """(variant, mode, case) whose scored repeats both passed and failed: a table and the keys."""
    scored = trials[trials["score"].notna()]
    flags: dict[tuple[str, str, str], list[bool]] = {}
    slugs: dict[tuple[str, str, str], str] = {}
    columns = (scored[c].tolist() for c in ("variant", "mode", "case_id", "slug", "perfect"))
    for variant, mode, case_id, slug, perfect in zip(*columns):
        flags.setdefault((variant, mode, case_id), []).append(bool(perfect))
        slugs[(variant, mode, case_id)] = slug
    flagged = {k for k, f in flags.items() if is_unstable(f)}
    rows = [(*k, slugs[k], sum(flags[k]), len(flags[k])) for k in sorted(flagged)]
    return pd.DataFrame(rows, columns=UNSTABLE_COLUMNS), flagged


def _group_table(
    trials: pd.DataFrame, keys: list[str], metric_names: list[str], flagged: set[tuple[str, str, str]]
) -> pd.DataFrame:
    """One row per group: the figures listed in the module doc (NaN where nothing was recorded)."""
    frame = trials.assign(
        passed=trials["perfect"].map({True: 1.0, False: 0.0}).astype(float),
        unstable_slot=pd.Series([slot if slot in flagged else None for slot in trials["slot"]], index=trials.index,
                                dtype=object),
        errored=trials["error"].notna(),
        hit=trials["cache_hit"].astype(float),
    )
    g = frame.groupby(keys, sort=True)
    table = pd.DataFrame({
        "trials": g.size(),
        "score": g["score"].mean(),
        "score_var": g["score"].var(ddof=0),  # population variance, as core.scoring.case_aggregate
        "pass_rate": g["passed"].mean(),
        **{m: g[f"m:{m}"].mean() for m in metric_names},
        "unstable": g["unstable_slot"].nunique(),
        "errors": g["errored"].sum().astype(int),
        "latency_p50_ms": g["latency_ms"].agg(lambda s: _percentile(s, 50)),
        "latency_p95_ms": g["latency_ms"].agg(lambda s: _percentile(s, 95)),
        "tokens_in": g["prompt_tokens"].sum().astype(int),
        "tokens_out": g["completion_tokens"].sum().astype(int),
        "cost": g["cost"].sum(min_count=1),
        "cache_hit_rate": g["hit"].mean(),
    })
    return table.reset_index()


def _percentile(values: pd.Series, p: float) -> float:
    present = values.dropna().tolist()
    return percentile(present, p) if present else float("nan")


def stored_reports(app: AppContext, run_ids: Sequence[int]) -> tuple[Engine, list[tuple[RunInfo, Report]]]:
    """Each run's report from the history (and the engine the pages read charts from)."""
    store = app.store()
    return store.engine, [(info, build_report(store.engine, info)) for info in map(store.get_run, run_ids)]
