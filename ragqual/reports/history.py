"""The history page: each headline metric across runs, points coloured by the run's name (or its kind
when it has none), the corpus fingerprint in the tooltip."""

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

SERIES_TITLE = "run name (or kind)"
FIXED = ("run_id", "kind", "subject", "started_at", "status", "git_sha", "git_dirty", "corpus_fingerprint", "group",
         "name")


def run_label(run_id: int, git_sha: object, started_at: object) -> str:
    sha = git_sha[:7] if isinstance(git_sha, str) and git_sha else "no-git"
    return f"#{run_id} {sha} {str(started_at)[:10]}"


def series_of(run_id: int, kind: object, names: Mapping[int, str]) -> str:
    """What a point's colour says: the run's name when it was given one (`--name`), else its kind."""
    name = names.get(int(run_id))
    return str(name) if name else str(kind)


def long_frame(frame: pd.DataFrame, names: Mapping[int, str] | None = None) -> pd.DataFrame:
    """One row per run, group and metric with a value: what the charts plot."""
    metrics = [c for c in frame.columns if c not in FIXED]
    if names is None and "name" in frame.columns:
        names = {int(r): str(n) for r, n in zip(frame["run_id"], frame["name"]) if isinstance(n, str) and n}
    out = frame.assign(
        run=[run_label(r, s, t) for r, s, t in zip(frame["run_id"], frame["git_sha"], frame["started_at"])],
        fingerprint=frame["corpus_fingerprint"].map(lambda v: v[:12] if isinstance(v, str) and v else "(none)"),
        series=[series_of(r, k, names or {}) for r, k in zip(frame["run_id"], frame["kind"])],
    )
    out = out.melt(id_vars=["run_id", "run", "fingerprint", "series", "group"], value_vars=metrics,
                   var_name="metric")
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


def metric_chart(rows: pd.DataFrame, metric: str, order: Sequence[str],
                 series: Sequence[str] = ()) -> alt.LayerChart | alt.FacetChart:
    """`series`: every colour of the page, so a run name keeps its colour from chart to chart."""
    data = alt.Data(values=page.records(rows[["run", "group", "series", "fingerprint", "value", "low", "high"]]))
    base = alt.Chart(data).encode(
        x=alt.X("run:N", sort=list(order), title="run (id, git sha, date)", axis=alt.Axis(labelAngle=-40)),
        y=alt.Y("value:Q", title=metric, scale=alt.Scale(zero=False)),
    )
    line = base.mark_line(color="#b8c2cc", strokeWidth=1).encode(detail="group:N")
    colour = alt.Color("series:N", title=SERIES_TITLE, legend=alt.Legend(orient="bottom", columns=4, labelLimit=220),
                       scale=alt.Scale(domain=list(series)) if series else alt.Undefined)
    bars = base.mark_rule(strokeWidth=1.5).encode(y="low:Q", y2="high:Q", color=colour)
    points = base.mark_point(filled=True, size=70).encode(
        color=colour, shape=alt.Shape("group:N", title="group", legend=alt.Legend(orient="bottom", columns=4)),
        tooltip=["run:N", alt.Tooltip("series:N", title=SERIES_TITLE), "group:N",
                 alt.Tooltip("fingerprint:N", title="corpus fingerprint"), alt.Tooltip("value:Q", format=display.RATE_D3),
                 alt.Tooltip("low:Q", format=display.RATE_D3), alt.Tooltip("high:Q", format=display.RATE_D3)])
    return alt.layer(line, bars, points).properties(title=metric, width=760, height=190)


def history_page(frame: pd.DataFrame, display: pd.DataFrame, widths: pd.DataFrame | None = None,
                 title: str = "ragqual history", header: Mapping[str, Any] | None = None,
                 names: Mapping[int, str] | None = None) -> str:
    """`frame`: history_frame's rows (oldest first); `display`: the same rows as the table shows them;
    `widths`: `intervals(...)` (none drawn without it); `header`: shown first (the history head);
    `names`: run id -> the name it was given."""
    rows = long_frame(frame, names)
    empty = pd.DataFrame(columns=["run_id", "group", "metric", "halfwidth"])
    rows = with_intervals(rows, empty if widths is None else widths)
    order = list(dict.fromkeys(rows.sort_values("run_id", kind="stable")["run"]))
    series = list(dict.fromkeys(rows.sort_values("run_id", kind="stable")["series"]))
    parts = [page.note(f"{frame['run_id'].nunique()} run(s), oldest first. Colour: the run's name, or its kind when it "
                       "has none; the corpus fingerprint is in each point's tooltip and the table (values on "
                       "different corpora measure different things). Vertical "
                       "bars: 95% interval of each mean over its questions (normal approximation, each question's "
                       "repeats averaged first); none where a group has fewer than two questions.")]
    if header:
        parts.insert(0, page.header_list(header))
    for i, metric in enumerate(dict.fromkeys(rows["metric"])):
        parts.append(page.chart(f"history-{i}", metric_chart(rows[rows["metric"] == metric], metric, order, series)))
    if rows.empty:
        parts.append(page.note("no metric values to plot yet"))
    parts.append(page.section("runs", page.table(display)))
    return page.render(title, parts)
