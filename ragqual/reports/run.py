"""The run page: provenance, the report's tables, charts of the groups, and a sortable, filterable
per-question table whose rows open a question's detail (question, context, answers, every
assertion with its verdict, every scoring it has had)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import altair as alt
import pandas as pd
from sqlalchemy import Engine

from ragqual.app.failures import cause, not_passed
from ragqual.app.retrieval_run import ABLATION_FULL, ABLATION_ORDER
from ragqual.app.whatif_run import PageWhatif, VariantWhatif
from ragqual.core import display
from ragqual.core import whatif as whatif_core
from ragqual.core.histogram import DEFAULT_BINS, histogram
from ragqual.core.metric_names import PAGE_QUESTION_METRICS, gated_names
from ragqual.reports import page
from ragqual.store.case_reads import case_definitions
from ragqual.store.failure_reads import run_failure_trials
from ragqual.store.generation_reads import ModeLine, mode_lines
from ragqual.store.queries import metric_frame
from ragqual.store.records import RunInfo
from ragqual.store.retrieval_reads import retrieval_scores
from ragqual.store.trial_reads import Scoring, StoredTrial, run_answers, run_scorings, run_trials

QUESTION_TABLE = "questions"
READER_CEILING = "readerCeiling"


def _golden(definition: dict[str, Any]) -> dict[str, Any]:
    given = definition.get("input")
    return given if isinstance(given, dict) else definition


def _tags(definition: dict[str, Any]) -> list[str]:
    tags = definition.get("tags") or _golden(definition).get("tags") or []
    return [str(t) for t in tags] if isinstance(tags, list) else []


# -- charts -------------------------------------------------------------------------------------------

CHART_WIDTH = 1000  # the widest a chart may draw inside the page's main column (1180 px less padding and legend)


def bars(frame: pd.DataFrame, category: str, metrics: Sequence[str], title: str, legend: str = "metric") -> alt.Chart:
    """Grouped bars: one bar per column of `metrics` within each category value; `legend` names what
    those columns are (metrics, strategies). The chart is never wider than the page."""
    long = frame.melt(id_vars=[category], value_vars=list(metrics), var_name="metric").dropna(subset=["value"])
    data = alt.Data(values=page.records(long.astype({category: str})))
    return alt.Chart(data).mark_bar().encode(
        x=alt.X(f"{category}:N", title=None, axis=alt.Axis(labelAngle=-30, labelLimit=160), sort=list(dict.fromkeys(long[category].astype(str)))),
        xOffset=alt.XOffset("metric:N", sort=list(metrics)),
        y=alt.Y("value:Q", title=None),
        color=alt.Color("metric:N", sort=list(metrics), title=legend, legend=alt.Legend(orient="top")),
        tooltip=[f"{category}:N", alt.Tooltip("metric:N", title=legend), alt.Tooltip("value:Q", format=display.RATE_D3)],
    ).properties(title=title, width=min(CHART_WIDTH, max(240, 22 * len(long))), height=220)


MOCK = "mock"
MOCK_COLOUR = "#4c78a8"


def decomposition_chart(lines: Sequence[ModeLine]) -> alt.LayerChart | alt.FacetChart:
    """Correctness per mode for each model, the mock model's value as a tick to compare with; a run
    of the mock alone draws the mock's own bars (nothing to compare with, so no tick and no legend)."""
    rows = [{"model": ln.variant, "mode": ln.mode, "correctness": ln.correctness} for ln in lines]
    frame = pd.DataFrame(rows, columns=["model", "mode", "correctness"]).dropna(subset=["correctness"])
    modes = list(dict.fromkeys(frame["mode"]))
    tooltip = ["model:N", "mode:N", alt.Tooltip("correctness:Q", format=display.RATE_D3)]
    x = alt.X("mode:N", sort=modes, title=None, axis=alt.Axis(labelAngle=0))
    y = alt.Y("correctness:Q", scale=alt.Scale(domain=[0, 1]))
    models, mock = frame[frame["model"] != MOCK], frame[frame["model"] == MOCK]
    if models.empty:
        only = alt.Chart(alt.Data(values=page.records(mock))).mark_bar(color=MOCK_COLOUR, size=48).encode(
            x=x, y=y, tooltip=tooltip)
        return only.properties(title="the mock's correctness per mode (the echo reference; no other model in this run)",
                               width=max(240, 120 * len(modes)), height=220)
    layers: list[alt.Chart] = [alt.Chart(alt.Data(values=page.records(models))).mark_bar().encode(
        x=x, xOffset="model:N", y=y, color=alt.Color("model:N", title="model"), tooltip=tooltip)]
    if not mock.empty:
        layers.append(alt.Chart(alt.Data(values=page.records(mock))).mark_tick(
            color="#222", thickness=3, size=60).encode(x=x, y="correctness:Q", tooltip=tooltip))
    return alt.layer(*layers).properties(title="correctness per mode (black tick: the mock line)",
                                         width=max(240, 120 * len(modes)), height=220)


HIT_KINDS = ("relevant", "non-relevant", "refusal question")
HIT_COLOURS = ("#2e7d32", "#9e9e9e", "#c62828")
SCORE_D3 = ".4~g"  # a bin's edges in the tooltip: cosine, BM25 and fused-rank scores differ in scale


def hit_kinds(doc_ids: Sequence[str], golden: dict[str, Any]) -> list[str]:
    """Each hit of one question's ranking: of a question that expects a refusal, of one of its
    relevant documents, or neither."""
    if golden.get("expectRefusal"):
        return [HIT_KINDS[2]] * len(doc_ids)
    relevant = set(golden.get("relevantDocIds") or ())
    return [HIT_KINDS[0] if doc_id in relevant else HIT_KINDS[1] for doc_id in doc_ids]


def hit_kind(doc_id: str, golden: dict[str, Any]) -> str:
    """One hit's kind (`hit_kinds`)."""
    return hit_kinds([doc_id], golden)[0]


def hit_bins(engine: Engine, run_id: int, bins: int = DEFAULT_BINS) -> pd.DataFrame:
    """The run's hit scores binned per strategy, each on its own range (cosine, BM25 and fused ranks
    have their own scales), counted per kind: one row (strategy, kind, start, end, hits) per bin
    that holds a hit, so a chart gets at most strategies x kinds x bins records, not one per hit."""
    rankings = retrieval_scores(engine, run_id)
    definitions = case_definitions(engine, sorted({r.query_id for r in rankings}))
    scores: dict[str, list[float]] = {}
    kinds: dict[str, list[str]] = {}
    for ranking in rankings:
        scores.setdefault(ranking.strategy, []).extend(ranking.scores)
        kinds.setdefault(ranking.strategy, []).extend(
            hit_kinds(ranking.doc_ids, _golden(definitions.get(ranking.query_id, {}))))
    rows = [(strategy, *bar) for strategy, values in scores.items()
            for bar in histogram(values, kinds[strategy], HIT_KINDS, bins)]
    return pd.DataFrame(rows, columns=["strategy", "kind", "start", "end", "hits"])


CUT_STRATEGY = "dense"  # the only score --threshold compares with
CUT_NAMES = (CUT_STRATEGY, "dense-only")  # the strategy, and the ablation's stage that runs it alone
OWN_SCALE_NAMES = ("bm25", "hybrid", "bm25-only")


def score_title(strategy: str) -> str:
    """A panel's axis title: the dense cosine is what --threshold cuts; BM25 and fused scores are
    each on their own scale, which no threshold reads."""
    if strategy in CUT_NAMES:
        return f"{strategy}: cosine similarity of the hit (the score --threshold cuts)"
    if strategy in OWN_SCALE_NAMES:
        return f"{strategy}: its own score scale (not cosine; --threshold does not apply to it)"
    return f"{strategy}: score of the hit (cosine only when this configuration is dense; --threshold cuts dense cosine)"


def similarity_histograms(bins: pd.DataFrame) -> alt.VConcatChart:
    """Overlaid histograms of hit scores by kind, one panel per strategy, drawn from `hit_bins`'
    counts (the bars' edges and heights; Vega bins nothing)."""
    colour = alt.Color("kind:N", scale=alt.Scale(domain=list(HIT_KINDS), range=list(HIT_COLOURS)), title="hit of")
    panels = [
        alt.Chart(alt.Data(values=page.records(bins[bins["strategy"] == strategy]))).mark_bar(
            opacity=0.55, binSpacing=0).encode(
            x=alt.X("start:Q", bin="binned", title=score_title(strategy)), x2="end:Q",
            y=alt.Y("hits:Q", stack=None, title="hits"), color=colour,
            tooltip=["kind:N", alt.Tooltip("hits:Q", title="hits"),
                     alt.Tooltip("start:Q", title="score from", format=SCORE_D3),
                     alt.Tooltip("end:Q", title="score to", format=SCORE_D3)],
        ).properties(width=700, height=130)
        for strategy in sorted(dict.fromkeys(bins["strategy"]), key=lambda name: name not in CUT_NAMES)
    ]
    return alt.vconcat(*panels)


# -- the per-question table ---------------------------------------------------------------------------

def _question_table(rows: list[tuple[list[str], list[str], str, str]], headers: Sequence[str]) -> str:
    """rows: (cells, tags, detail html, text the filter searches)."""
    head = "".join(f"<th data-sort>{page.esc(h)}</th>" for h in headers) + "<th>detail</th>"
    body = "".join(
        f'<tr data-text="{page.esc(search)}">' + "".join(cells) + f"<td>{detail}</td></tr>"
        for cells, _tags, detail, search in rows)
    return (page.filter_box(QUESTION_TABLE) +
            f'<div class="tablewrap"><table id="{QUESTION_TABLE}" data-sortable><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _cell(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<td class="num">{page.esc(page.fmt_value(value))}</td>'
    return f"<td>{page.esc(page.fmt_value(value))}</td>"


def _pre(label: str, value: Any) -> str:
    text = page.fmt_value(value) if not isinstance(value, str) else value
    return f"<div><b>{page.esc(label)}</b><pre>{page.esc(text or '(none)')}</pre></div>"


def _scorings_html(scorings: Sequence[Scoring]) -> str:
    parts = []
    for n, scoring in enumerate(scorings, start=1):
        scores = ", ".join(f"{s.scorer_name} v{s.scorer_version}: {display.fmt_rate(s.score)}"
                           f"{' (pass)' if s.perfect else ' (fail)'}" for s in scoring.scores)
        items = "".join(
            f'<li class="{"pass" if a.passed else "fail"}">{"PASS" if a.passed else "FAIL"} '
            f"{page.esc(a.category)} (assertion {page.esc(a.assertion_id[:8])} v{a.version}, weight {a.weight:g})"
            f"{': ' + page.esc(a.detail) if a.detail else ''}</li>" for a in scoring.assertions)
        parts.append(f"<div>scoring {n}: {page.esc(scores) or 'no score'}"
                     f"<ul>{items}</ul></div>")
    return "".join(parts)


def _newest_pass(scorings: Sequence[Scoring]) -> int | None:
    scores = [s for scoring in scorings for s in scoring.scores]
    return int(scores[-1].perfect) if scores else None


def _repeats_html(trials: Sequence[StoredTrial], answers: dict[int, Any],
                  scorings: dict[int, list[Scoring]]) -> str:
    """Each distinct outcome once (answer and scorings), naming the repeats that gave it."""
    outcomes: dict[str, list[int]] = {}
    for t in trials:
        answer = f"ERROR: {t.error}" if t.error else answers.get(t.trial_id, t.raw_output)
        body = _pre("answer", answer) + _scorings_html(scorings.get(t.trial_id, []))
        outcomes.setdefault(body, []).append(t.repeat_index)
    return "".join(f"<div><b>repeat{'s' if len(r) > 1 else ''} {', '.join(map(str, r))}</b>{body}</div>"
                   for body, r in outcomes.items())


def _trial_rows(engine: Engine, run_id: int) -> tuple[list[tuple[list[str], list[str], str, str]], list[str]]:
    slots: dict[tuple[str, str, str], list[StoredTrial]] = {}
    for trial in run_trials(engine, run_id):
        slots.setdefault((trial.variant, trial.mode, trial.case_id), []).append(trial)
    answers, scorings = run_answers(engine, run_id), run_scorings(engine, run_id)
    causes = trial_causes(engine, run_id)
    rows = []
    for (variant, mode, _case), trials in sorted(slots.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[1][0].slug)):
        first = trials[0]
        golden, tags = _golden(first.case_definition), _tags(first.case_definition)
        scored = [p for p in (_newest_pass(scorings.get(t.trial_id, [])) for t in trials) if p is not None]
        contexts = list(dict.fromkeys(t.context or "" for t in trials))
        detail = (f'<details class="q"><summary>open</summary>{_pre("question", golden.get("query") or golden)}'
                  + "".join(_pre("context", c) for c in contexts)
                  + _repeats_html(trials, answers, scorings) + "</details>")
        why = slot_cause(causes, trials)
        cells = [_cell(first.slug), _cell(variant), _cell(mode), _cell(" ".join(tags)),
                 _cell(f"{sum(scored)}/{len(scored)}"), _cell(float(sum(scored) / len(scored)) if scored else None),
                 _cell(why)]
        rows.append((cells, tags, detail, " ".join([first.slug, variant, mode, *tags, why])))
    return rows, ["question", "variant", "mode", "tags", "passed", "pass share", "cause"]


def trial_causes(engine: Engine, run_id: int) -> dict[int, str]:
    """Trial id -> the measured cause of each trial that did not pass (`ragqual report --failures`'s)."""
    return {t.trial_id: cause(t) for t in run_failure_trials(engine, run_id) if not_passed(t)}


def slot_cause(causes: dict[int, str], trials: Sequence[StoredTrial]) -> str:
    """The causes of a question's failing repeats, each once (`-` when every repeat passed)."""
    found = list(dict.fromkeys(causes[t.trial_id] for t in trials if t.trial_id in causes))
    return ", ".join(found) or "-"


def _retrieval_rows(engine: Engine, questions: pd.DataFrame) -> tuple[list[tuple[list[str], list[str], str, str]], list[str]]:
    metrics = [m for m in PAGE_QUESTION_METRICS if m in set(questions["metric"])]
    wide = questions[questions["metric"].isin(metrics)].pivot_table(
        index="case_id", columns=["group_key", "metric"], values="value", aggfunc="mean")
    # Two column levels, so a MultiIndex of (group_key, metric) pairs; the stubs type it Index[str].
    columns = cast(list[tuple[str, str]], sorted(wide.columns))
    definitions = case_definitions(engine, list(wide.index))
    rows = []
    for case_id in sorted(wide.index):
        definition = definitions.get(case_id, {})
        golden, tags = _golden(definition), _tags(definition)
        detail = (f'<details class="q"><summary>open</summary>{_pre("question", golden.get("query") or golden)}'
                  f'{_pre("relevant documents", ", ".join(golden.get("relevantDocIds") or []) or "(none: refusal)")}'
                  "</details>")
        cells = [_cell(case_id), _cell(" ".join(tags))] + [_cell(float(wide.loc[case_id, c])) for c in columns]
        rows.append((cells, tags, detail, " ".join([case_id, *tags])))
    return rows, ["question", "tags", *(f"{s} {m}" for s, m in columns)]


def per_tag_frame(engine: Engine, questions: pd.DataFrame, metric: str) -> pd.DataFrame:
    chosen = questions[questions["metric"] == metric]
    definitions = case_definitions(engine, chosen["case_id"].unique().tolist())
    tagged = chosen.assign(tag=chosen["case_id"].map(lambda c: _tags(definitions.get(c, {})) or ["(untagged)"]))
    tagged = tagged.explode("tag")
    means = tagged.groupby(["tag", "group_key"])["value"].mean().unstack("group_key").reset_index()
    return means


# -- the ceilings and the whatif curve ---------------------------------------------------------------

def ceiling_frame(engine: Engine, run_id: int, metrics: pd.DataFrame, lines: Sequence[ModeLine]) -> pd.DataFrame:
    """Per model and mode with a readerCeiling: the model's correctness and pass share (for the mock,
    the echo line) beside the mean readerCeiling of its trials (a perfect reader on the same context)."""
    columns = ["variant", "mode", "correctness", "pass", READER_CEILING]
    if metrics.empty:
        return pd.DataFrame(columns=columns)
    ceiling = metrics[(metrics["metric"] == READER_CEILING) & metrics["trial_id"].notna()]
    slots = {t.trial_id: (t.variant, t.mode) for t in run_trials(engine, run_id)}
    means: dict[tuple[str, str], list[float]] = {}
    for trial_id, value in zip(ceiling["trial_id"], ceiling["value"]):
        if int(trial_id) in slots and not pd.isna(value):
            means.setdefault(slots[int(trial_id)], []).append(float(value))
    rows = [(ln.variant, ln.mode, ln.correctness, ln.pass_rate, sum(v) / len(v))
            for ln in lines if (v := means.get((ln.variant, ln.mode)))]
    return pd.DataFrame(rows, columns=columns)


def ceiling_section(frame: pd.DataFrame) -> list[str]:
    if frame.empty:
        return []
    return [page.section("the echo line and the reader ceiling", page.table(frame, sortable=False), page.note(
        "correctness and pass: the model's own (for the mock, the echo line: it repeats every chunk it is given, "
        f"so a twin document anywhere in the context can fail it). {READER_CEILING}: the share of trials a perfect "
        "reader could pass on the same context — every mustInclude fact in it and, for a refusal question, an "
        "empty context. The gap between the two is the reader's; what the ceiling misses is retrieval's."))]


WHATIF_MEASURES = ("refusals declined", "answerable lost")


def whatif_frame(result: VariantWhatif) -> pd.DataFrame:
    """threshold, measure, value: the objective (mock pass or reader ceiling), the share of refusal
    questions whose context would be empty and of answerable ones that would lose a relevant chunk."""
    rows = []
    for row in result.rows:
        if row.setting.threshold is None or row.setting.context_k != result.own.context_k:
            continue
        for measure, value in ((result.objective, row.objective()), (WHATIF_MEASURES[0], row.refusals_empty),
                               (WHATIF_MEASURES[1], row.answerable_lost)):
            rows.append({"threshold": row.setting.threshold, "measure": measure, "value": value})
    return pd.DataFrame(rows, columns=["threshold", "measure", "value"]).dropna(subset=["value"])


def whatif_chart(result: VariantWhatif) -> alt.LayerChart | alt.FacetChart:
    frame = whatif_frame(result)
    measures = [result.objective, *WHATIF_MEASURES]
    colour = alt.Color("measure:N", sort=measures, title="measure",
                       scale=alt.Scale(domain=measures, range=["#4c78a8", "#2e7d32", "#c62828"]),
                       legend=alt.Legend(orient="top"))
    base = alt.Chart(alt.Data(values=page.records(frame))).encode(
        x=alt.X("threshold:Q", title="dense similarity cut-off (--threshold)", scale=alt.Scale(zero=False)),
        y=alt.Y("value:Q", title="share", scale=alt.Scale(domain=[0, 1])), color=colour,
        tooltip=[alt.Tooltip("threshold:Q", format=".2f"), "measure:N", alt.Tooltip("value:Q", format=display.RATE_D3)])
    own = (result.rows[0] if result.rows else None)
    layers: list[alt.Chart] = [base.mark_line(), base.mark_point(filled=True, size=36)]
    if own is not None and result.own.threshold is None and own.setting == result.own and own.objective() is not None:
        layers.append(alt.Chart(alt.Data(values=[{"value": own.objective(), "what": "at the run's own setting (no cut-off)"}]))
                      .mark_rule(strokeDash=[4, 3], color="#4c78a8").encode(y="value:Q", tooltip=["what:N", alt.Tooltip("value:Q", format=display.RATE_D3)]))
    return alt.layer(*layers).properties(
        title=f"{result.variant}: what a cut-off would give ({result.objective}, chosen on {result.chosen_on})",
        width=640, height=220)


def whatif_section(whatif: PageWhatif, prefix: str = "") -> list[str]:
    """The whatif curve of each model, or the note saying why there is none."""
    if not whatif.results:
        return [page.section("whatif: other similarity cut-offs", page.note(
            f"No whatif curve: {whatif.skipped or 'no e2e trial to recompute'}."))]
    parts = []
    for n, result in enumerate(whatif.results):
        advice = result.advice or whatif_core.no_cut_off(result.overlap, result.objective, result.chosen_on)
        parts.append(page.chart(f"{prefix}whatif-{n}", whatif_chart(result),
                                "Recomputed from the candidates the run's e2e trials stored (no search, no model "
                                f"call), at context-k {result.own.context_k}; the dashed line is the run's own "
                                f"setting. {advice}"))
    return [page.section("whatif: other similarity cut-offs", *parts)]


# -- the page ------------------------------------------------------------------------------------------

def run_page(engine: Engine, info: RunInfo, title: str, header: dict[str, Any],
             sections: Sequence[tuple[str, pd.DataFrame]], notes: Sequence[str] = (),
             verdict_text: str | None = None, whatif: PageWhatif | None = None) -> str:
    """`header`, `sections`, `notes`: the text report's (provenance and tables); `whatif`: a generation
    run's counterfactual curves (`ragqual.app.whatif_run.page_whatif`)."""
    parts = [page.section("provenance", page.header_list(header))]
    if verdict_text:
        parts.insert(0, page.verdict(verdict_text))
    parts += run_body(engine, info, sections, whatif=whatif)
    parts += [page.note(n) for n in notes]
    return page.render(title, parts)


def run_body(engine: Engine, info: RunInfo, sections: Sequence[tuple[str, pd.DataFrame]], prefix: str = "",
             whatif: PageWhatif | None = None) -> list[str]:
    metrics = metric_frame(engine, info.id)
    questions = metrics[metrics["trial_id"].isna()] if not metrics.empty else metrics
    if info.kind in ("retrieval", "sweep") or (not questions.empty and not run_trials_exist(engine, info.id)):
        return _retrieval_body(engine, info.id, questions, sections, prefix)
    return _trial_body(engine, info, sections, prefix, metrics, whatif)


def run_trials_exist(engine: Engine, run_id: int) -> bool:
    return bool(run_trials(engine, run_id))


def is_ablation(table: pd.DataFrame) -> bool:
    """A retrieval table whose strategies are an ablation's stages (`ragqual retrieval --ablate`)."""
    return ("strategy" in table.columns and "tag" not in table.columns
            and ABLATION_FULL in set(table["strategy"]) and set(table["strategy"]) <= set(ABLATION_ORDER))


def ablation_table(table: pd.DataFrame) -> pd.DataFrame:
    """The stages in the order the pipeline runs them, each gated metric followed by its change
    against the full pipeline (`Δ metric`, blank on the full row), as `retrieval --ablate` prints."""
    rank = {name: i for i, name in enumerate(ABLATION_ORDER)}
    out = table.sort_values("strategy", key=lambda c: c.map(rank), kind="stable").reset_index(drop=True)
    full = out[out["strategy"] == ABLATION_FULL].iloc[0]
    for metric in [m for m in gated_names() if m in out.columns]:
        delta = [None if name == ABLATION_FULL or pd.isna(v) or pd.isna(full[metric]) else float(v - full[metric])
                 for name, v in zip(out["strategy"], out[metric])]
        out.insert(list(out.columns).index(metric) + 1, f"Δ {metric}", delta)
    return out


def _retrieval_body(engine: Engine, run_id: int, questions: pd.DataFrame,
                    sections: Sequence[tuple[str, pd.DataFrame]], prefix: str) -> list[str]:
    parts: list[str] = []
    table = sections[0][1] if sections else pd.DataFrame()
    if is_ablation(table):
        table = ablation_table(table)
        sections = [(f"{sections[0][0]} (ablation: stages in pipeline order, Δ against the full pipeline)", table),
                     *sections[1:]]
    key = "strategy" if "strategy" in table.columns else None
    shown = [m for m in gated_names() if m in table.columns]
    if key and shown and "tag" not in table.columns:
        parts.append(page.chart(f"{prefix}strategies", bars(table, key, shown, "headline metrics per strategy"),
                                "Which strategy finds the relevant documents: higher is better except for "
                                "nonEmptyRefusal (refusal questions that still got hits)."))
    parts += page.sections_html(sections)
    if not questions.empty:
        first = PAGE_QUESTION_METRICS[0]
        metric = first if first in set(questions["metric"]) else sorted(set(questions["metric"]))[0]
        tags = per_tag_frame(engine, questions, metric)
        strategies = [c for c in tags.columns if c != "tag"]
        parts += hits_section(engine, run_id, prefix)
        parts.append(page.section(f"{metric} per tag", page.chart(
            f"{prefix}tags", bars(tags, "tag", strategies, f"{metric} per tag and strategy", legend="strategy"),
            "Which kinds of question each strategy misses.")))
        rows, headers = _retrieval_rows(engine, questions)
        parts.append(page.section("per question", _question_table(rows, headers)))
    return parts


def hits_section(engine: Engine, run_id: int, prefix: str = "") -> list[str]:
    """The histograms of the hits' scores (none when the run stored no hit)."""
    bins = hit_bins(engine, run_id)
    if bins.empty:
        return []
    return [page.section("similarity of the hits", page.chart(
        f"{prefix}similarity", similarity_histograms(bins),
        "Where a similarity cut-off (--threshold) could separate relevant hits from the rest: green overlapping "
        "grey means no cut-off keeps one without the other; red is what a refusal question retrieves. "
        "--threshold cuts the dense cosine similarity only: read a cut-off on the dense panel; the bm25 and "
        "hybrid panels are each on their own score scale (BM25 weights, fused reciprocal ranks), where the "
        "same number means something else."))]


def _trial_body(engine: Engine, info: RunInfo, sections: Sequence[tuple[str, pd.DataFrame]], prefix: str,
                metrics: pd.DataFrame, whatif: PageWhatif | None) -> list[str]:
    parts: list[str] = []
    groups = sections[0][1] if sections else pd.DataFrame()
    if not groups.empty and "score" in groups.columns:
        keys = [c for c in ("variant", "mode", "tag") if c in groups.columns]
        frame = groups.assign(group=groups[keys].astype(str).agg(" / ".join, axis=1),
                              **{"pass": groups["pass_rate"]})
        parts.append(page.chart(f"{prefix}groups", bars(frame, "group", ["score", "pass"], "score and pass share per group"),
                                "Mean trial score and the share of trials whose every weighted assertion passed."))
    lines = mode_lines(engine, info.id) if info.kind == "generation" else []
    if lines:
        parts.append(page.section("mode decomposition", page.chart(
            f"{prefix}modes", decomposition_chart(lines),
            "oracle: the relevant documents injected; e2e: retrieved; noretrieval: none. The gap between "
            "oracle and e2e is what retrieval costs; a model below the mock line is worse than a deterministic stub.")))
        parts += ceiling_section(ceiling_frame(engine, info.id, metrics, lines))
        if whatif is not None:
            parts += whatif_section(whatif, prefix)
    parts += page.sections_html(sections)
    rows, headers = _trial_rows(engine, info.id)
    if rows:
        parts.append(page.section("per question", _question_table(rows, headers)))
    return parts


def eval_page(engine: Engine, tiers: Sequence[tuple[str, RunInfo, dict[str, Any], Sequence[tuple[str, pd.DataFrame]]]],
              verdict_text: str | None = None, whatif: PageWhatif | None = None) -> str:
    """`ragqual eval`'s page: each tier's run (label, info, header, report tables) one after the other;
    `whatif`: the generation tier's counterfactual curves."""
    parts = [page.verdict(verdict_text)] if verdict_text else []
    for n, (label, info, header, sections) in enumerate(tiers):
        parts.append(f"<h2>{page.esc(label)}: run {info.id}</h2>")
        parts.append(f'<details><summary>provenance</summary>{page.header_list(header)}</details>')
        parts += run_body(engine, info, sections, prefix=f"t{n}-", whatif=whatif if info.kind == "generation" else None)
    return page.render("ragqual evaluation", parts)
