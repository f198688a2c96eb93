"""The matrix page: a heatmap of models x modes x metrics (correctness, refusal, pass rate)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd

from ragqual.core import display
from ragqual.reports import page
from ragqual.store.generation_reads import ModeLine

METRICS = (("correctness", "correctness"), ("refusal", "refusal"), ("pass_rate", "pass"))
NEUTRAL = "#e3e6ea"  # a cell whose value is what the design expects, not a grade
EXPECTED_NOTE = ("Grey cells: the mock in noretrieval mode is given no context, so it declines every question by "
                 "design; its 0 on the answerable questions (only refusal questions pass) is expected, not a fault.")


def expected_by_design(model: str, mode: str, metric: str) -> bool:
    """Every cell of the mock in noretrieval mode: it gets no context and declines every question, so
    its near-0 correctness, refusal and pass (only the refusal questions pass) are its design, not a grade."""
    return model == "mock" and mode == "noretrieval" and metric in {label for _, label in METRICS}


def matrix_frame(lines: Sequence[ModeLine], modes: Sequence[str]) -> pd.DataFrame:
    rows = [{"model": ln.variant, "mode": ln.mode, "metric": label, "value": getattr(ln, attr),
             "expected": expected_by_design(ln.variant, ln.mode, label)}
            for ln in lines if ln.mode in modes for attr, label in METRICS]
    return pd.DataFrame(rows, columns=["model", "mode", "metric", "value", "expected"])


def heatmap(frame: pd.DataFrame, modes: Sequence[str]) -> alt.FacetChart:
    models = list(dict.fromkeys(frame["model"]))
    data = alt.Data(values=page.records(frame))
    base = alt.Chart(data).encode(
        x=alt.X("mode:N", sort=list(modes), title=None), y=alt.Y("model:N", sort=models, title=None))
    graded = alt.Color("value:Q", scale=alt.Scale(domain=[0, 1], scheme="redyellowgreen"), title="value")
    cells = base.mark_rect().encode(
        color=alt.condition("datum.expected", alt.value(NEUTRAL), graded),
        tooltip=["model:N", "mode:N", "metric:N", alt.Tooltip("value:Q", format=display.RATE_D3),
                 alt.Tooltip("expected:N", title="expected by design")])
    text = base.mark_text(fontSize=12).encode(text=alt.Text("value:Q", format=display.RATE_D3))
    return alt.layer(cells, text).properties(width=70 * len(modes), height=max(40, 32 * len(models))).facet(
        column=alt.Column("metric:N", sort=[label for _, label in METRICS], title=None))


def matrix_page(lines: Sequence[ModeLine], modes: Sequence[str], run_id: int, table_frame: pd.DataFrame,
                flag: str | None = None, header: Mapping[str, Any] | None = None,
                costs: pd.DataFrame | None = None) -> str:
    frame = matrix_frame(lines, modes)
    parts = [page.header_list(header)] if header else []
    parts += [page.note(f"run {run_id}. A user's model scoring near its row is at its ceiling; well below it is "
                       "worth investigating (their config or our code). The mock row is the reference line.")]
    if flag:
        parts.append(page.verdict(f"incomplete run: {flag}"))
    if not frame.dropna(subset=["value"]).empty:
        caption = "Each cell: the model's mean in that mode (0 red .. 1 green); blank = no value."
        if frame["expected"].any():
            caption += " " + EXPECTED_NOTE
        parts.append(page.chart("matrix-heatmap", heatmap(frame, modes), caption))
    parts.append(page.section("capability table", page.table(table_frame)))
    if costs is not None and not costs.empty:
        parts.append(page.section("cost per variant", page.note("All modes; per passing answer; - = unpriced."),
                                  page.table(costs)))
    return page.render(f"ragqual matrix: run {run_id}", parts)
