"""The history page: each headline metric across runs, points coloured by corpus fingerprint."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd

from sqlalchemy import Engine

from ragqual.core import display
from ragqual.core.metric_names import PASS, SCORE
from ragqual.core.stats import question_mean_halfwidth
from ragqual.reports import page
from ragqual.store.queries import metric_frame, trial_frame

FIXED = ("run_id", "kind", "subject", "started_at", "status", "git_sha", "git_dirty", "corpus_fingerprint", "group")


def run_label(run_id: int, git_sha: object, started_at: object) -> str:
    sha = git_sha[:7] if isinstance(git_sha, str) and git_sha else "no-git"
    return f"#{run_id} {sha} {str(started_at)[:10]}"


def long_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run, group and metric with a value: what the charts plot."""
    metrics = [c for c in frame.columns if c not in FIXED]
    out = frame.assign(
        run=[run_label(r, s, t) for r, s, t in zip(frame["run_id"], frame["git_sha"], frame["started_at"])],
        fingerprint=frame["corpus_fingerprint"].map(lambda v: v[:12] if isinstance(v, str) and v else "(none)"),
    )
    out = out.melt(id_vars=["run_id", "run", "fingerprint", "group"], value_vars=metrics, var_name="metric")
    out = out.astype({"value": float})
    return out.dropna(subset=["value"]).sort_values(["metric", "run_id", "group"], kind="stable")


def _question_values(engine: Engine, run_id: int, scorer_name: str, scorer_version: int | None) -> pd.DataFrame:
    """(group, metric, case_id, value) of one run: each question's mean over its repeats, in the
    groups `history` shows (the strategy of a retrieval row, the mode of a trial)."""
    metrics = metric_frame(engine, run_id, scorer_version)
    trials = trial_frame(engine, run_id, scorer_name, scorer_version)
    parts = []
    if not metrics.empty:
        linked = metrics["trial_id"].notna()
        loose = metrics[~linked].rename(columns={"group_key": "group"})[["group", "metric", "case_id", "value"]]
        parts.append(loose)
        if linked.any() and not trials.empty:
            modes = trials.set_index("trial_id")["mode"]
            tied = metrics[linked].assign(group=lambda f: f["trial_id"].astype("int64").map(modes))
            parts.append(tied[["group", "metric", "case_id", "value"]])
    if not trials.empty:
        scored = trials[trials["score"].notna()]
        for metric, column in ((SCORE, "score"), (PASS, "perfect")):
            parts.append(pd.DataFrame({"group": scored["mode"], "metric": metric, "case_id": scored["case_id"],
                                       "value": scored[column].astype(float)}))
    if not parts:
        return pd.DataFrame(columns=["group", "metric", "case_id", "value"])
    rows = pd.concat(parts, ignore_index=True).dropna(subset=["value"])
    return rows.groupby(["group", "metric", "case_id"], as_index=False).agg(value=("value", "mean"))


def intervals(engine: Engine, frame: pd.DataFrame, scorer_name: str, scorer_version: int | None = None) -> pd.DataFrame:
    """run_id, group, metric, halfwidth: the 95% interval half-width of each plotted mean, over questions."""
    rows = []
    for run_id in frame["run_id"].unique().tolist():
        values = _question_values(engine, int(run_id), scorer_name, scorer_version)
        for (group, metric), chunk in values.groupby(["group", "metric"]):
            rows.append((run_id, group, metric, question_mean_halfwidth(chunk["value"].tolist())))
    return pd.DataFrame(rows, columns=["run_id", "group", "metric", "halfwidth"])


def with_intervals(rows: pd.DataFrame, widths: pd.DataFrame) -> pd.DataFrame:
    out = rows.merge(widths, on=["run_id", "group", "metric"], how="left")
    return out.assign(low=out["value"] - out["halfwidth"], high=out["value"] + out["halfwidth"])


def metric_chart(rows: pd.DataFrame, metric: str, order: Sequence[str]) -> alt.LayerChart | alt.FacetChart:
    data = alt.Data(values=page.records(rows[["run", "group", "fingerprint", "value", "low", "high"]]))
    base = alt.Chart(data).encode(
        x=alt.X("run:N", sort=list(order), title="run (id, git sha, date)", axis=alt.Axis(labelAngle=-40)),
        y=alt.Y("value:Q", title=metric, scale=alt.Scale(zero=False)),
    )
    line = base.mark_line(color="#b8c2cc", strokeWidth=1).encode(detail="group:N")
    bars = base.mark_rule(strokeWidth=1.5).encode(
        y="low:Q", y2="high:Q", color=alt.Color("fingerprint:N", title="corpus fingerprint"))
    points = base.mark_point(filled=True, size=70).encode(
        color=alt.Color("fingerprint:N", title="corpus fingerprint"), shape=alt.Shape("group:N", title="group"),
        tooltip=["run:N", "group:N", "fingerprint:N", alt.Tooltip("value:Q", format=display.RATE_D3),
                 alt.Tooltip("low:Q", format=display.RATE_D3), alt.Tooltip("high:Q", format=display.RATE_D3)])
    return alt.layer(line, bars, points).properties(title=metric, width=760, height=190)


def history_page(frame: pd.DataFrame, display: pd.DataFrame, widths: pd.DataFrame | None = None,
                 title: str = "ragqual history", header: Mapping[str, Any] | None = None) -> str:
    """`frame`: history_frame's rows (oldest first); `display`: the same rows as the table shows them;
    `widths`: `intervals(...)` (none drawn without it); `header`: shown first (the history head)."""
    rows = long_frame(frame)
    empty = pd.DataFrame(columns=["run_id", "group", "metric", "halfwidth"])
    rows = with_intervals(rows, empty if widths is None else widths)
    order = list(dict.fromkeys(rows.sort_values("run_id", kind="stable")["run"]))
    parts = [page.note(f"{frame['run_id'].nunique()} run(s), oldest first. A change of colour is a change of "
                       "corpus (a re-baseline): values before and after it measure different corpora. Vertical "
                       "bars: 95% interval of each mean over its questions (normal approximation, each question's "
                       "repeats averaged first); none where a group has fewer than two questions.")]
    if header:
        parts.insert(0, page.header_list(header))
    for i, metric in enumerate(dict.fromkeys(rows["metric"])):
        parts.append(page.chart(f"history-{i}", metric_chart(rows[rows["metric"] == metric], metric, order)))
    if rows.empty:
        parts.append(page.note("no metric values to plot yet"))
    parts.append(page.section("runs", page.table(display)))
    return page.render(title, parts)
