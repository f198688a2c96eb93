"""The history page: each headline metric across runs, points coloured by corpus fingerprint."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from ragqual.reports import page

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
    return out.dropna(subset=["value"]).sort_values(["metric", "run_id", "group"], kind="stable")


def metric_chart(rows: pd.DataFrame, metric: str, order: Sequence[str]) -> alt.LayerChart:
    base = alt.Chart(alt.Data(values=page.records(rows[["run", "group", "fingerprint", "value"]]))).encode(
        x=alt.X("run:N", sort=list(order), title="run (id, git sha, date)", axis=alt.Axis(labelAngle=-40)),
        y=alt.Y("value:Q", title=metric, scale=alt.Scale(zero=False)),
    )
    line = base.mark_line(color="#b8c2cc", strokeWidth=1).encode(detail="group:N")
    points = base.mark_point(filled=True, size=70).encode(
        color=alt.Color("fingerprint:N", title="corpus fingerprint"), shape=alt.Shape("group:N", title="group"),
        tooltip=["run:N", "group:N", "fingerprint:N", alt.Tooltip("value:Q", format=".4f")])
    return alt.layer(line, points).properties(title=metric, width=760, height=190)


def history_page(frame: pd.DataFrame, display: pd.DataFrame, title: str = "ragqual history") -> str:
    """`frame`: history_frame's rows (oldest first); `display`: the same rows as the table shows them."""
    rows = long_frame(frame)
    order = list(dict.fromkeys(rows.sort_values("run_id", kind="stable")["run"]))
    parts = [page.note(f"{frame['run_id'].nunique()} run(s), oldest first. A change of colour is a change of "
                       "corpus (a re-baseline): values before and after it measure different corpora.")]
    for i, metric in enumerate(dict.fromkeys(rows["metric"])):
        parts.append(page.chart(f"history-{i}", metric_chart(rows[rows["metric"] == metric], metric, order)))
    if rows.empty:
        parts.append(page.note("no metric values to plot yet"))
    parts.append(page.section("runs", page.table(display)))
    return page.render(title, parts)
