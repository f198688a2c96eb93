"""The comparison page: a forest plot of the paired deltas with their intervals, the verdicts and
the flipped questions, from the `Comparison` that `ragqual.app.comparison.compare` returns."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from ragqual.app.comparison import Comparison, MetricComparison
from ragqual.core import display
from ragqual.core.verdicts import EQUIVALENT, IMPROVEMENT, INCONCLUSIVE, REGRESSION
from ragqual.reports import page

VERDICT_COLOURS = {REGRESSION: "#c62828", IMPROVEMENT: "#2e7d32", EQUIVALENT: "#4c78a8", INCONCLUSIVE: "#9e9e9e"}


def forest_frame(rows: Sequence[MetricComparison]) -> pd.DataFrame:
    data = [{"row": f"{r.group} | {r.metric}", "group": r.group, "metric": r.metric, "delta": r.delta,
             "ci_low": r.ci_low, "ci_high": r.ci_high, "verdict": r.verdict, "p_adjusted": r.p_adjusted, "n": r.n}
            for r in rows]
    return pd.DataFrame(data, columns=["row", "group", "metric", "delta", "ci_low", "ci_high", "verdict",
                                       "p_adjusted", "n"])


def forest_plot(frame: pd.DataFrame, tolerance: float) -> alt.LayerChart | alt.FacetChart:
    order = list(frame["row"])
    present = [v for v in VERDICT_COLOURS if v in set(frame["verdict"])] or list(VERDICT_COLOURS)
    colour = alt.Color("verdict:N", scale=alt.Scale(domain=present, range=[VERDICT_COLOURS[v] for v in present]))
    base = alt.Chart(alt.Data(values=page.records(frame))).encode(
        y=alt.Y("row:N", sort=order, title=None, axis=alt.Axis(labelLimit=320)))
    interval = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("ci_low:Q", title="delta (NEW - BASE) with its interval"), x2="ci_high:Q", color=colour)
    point = base.mark_point(filled=True, size=80).encode(
        x="delta:Q", color=colour,
        tooltip=["group:N", "metric:N", "n:Q", alt.Tooltip("delta:Q", format=display.DELTA_D3),
                 alt.Tooltip("ci_low:Q", format=display.DELTA_D3), alt.Tooltip("ci_high:Q", format=display.DELTA_D3),
                 alt.Tooltip("p_adjusted:Q", format=display.P_D3), "verdict:N"])
    marks = alt.Data(values=[{"x": 0.0, "kind": "no change"}, {"x": -tolerance, "kind": "tolerance"},
                             {"x": tolerance, "kind": "tolerance"}])
    lines = alt.Chart(marks).mark_rule(color="#555").encode(
        x="x:Q", strokeDash=alt.StrokeDash("kind:N", scale=alt.Scale(domain=["no change", "tolerance"],
                                                                      range=[[1, 0], [4, 3]]), title=None))
    return alt.layer(lines, interval, point).properties(width=640, height=max(60, 24 * len(order)))


def compare_page(comparison: Comparison, verdict_text: str, sections: Sequence[tuple[str, pd.DataFrame]],
                 header: dict[str, object]) -> str:
    """`sections` and `header` are the text report's tables and header, shown as tables."""
    title = f"ragqual compare: BASE {comparison.base.source} -> NEW {comparison.new.source}"
    parts = [page.verdict(verdict_text), page.header_list(header)]
    frame = forest_frame(comparison.rows)
    if not frame.empty:
        parts.append(page.section(
            "paired deltas",
            page.chart("forest", forest_plot(frame, comparison.options.tolerance),
                       "Each row: the mean paired change of one metric in one group, with its "
                       f"{1 - comparison.options.alpha:.0%} interval. Inside the dashed lines (+-tolerance) is a "
                       "change too small to matter; colour is the verdict.")))
    if comparison.options.by_tag and comparison.tag_rows:
        tags = forest_frame(comparison.tag_rows)
        tags["row"] = [f"{r.tag} | {r.group} | {r.metric}" for r in comparison.tag_rows]
        parts.append(page.section("per tag (exploratory)",
                                  page.chart("forest-tags", forest_plot(tags, comparison.options.tolerance))))
    parts += page.sections_html(sections)
    parts += [page.note(n) for n in comparison.notes]
    return page.render(title, parts)
