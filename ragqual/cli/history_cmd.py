"""`ragqual history`: the runs over time with their provenance and headline metrics.

One row per run and group: the strategy for retrieval runs, the mode for generation runs (a run
with no rows yet shows one empty row). `score` and `pass` are the mean trial score and the share
of trials whose every weight-bearing assertion passed; any other name is a metric row's mean.
Only sealed rows count: a run holding rows no seal covers gets an `unsealed_rows` column (and a
warning on stderr) saying how many were left out.

Each run also shows its name and tags (`--name`, `--tag key=value` when it was recorded) and what
changed since the previous run of its kind: the settings that differ, shortened in the table
(`changed`), every one in full in JSON (`changed`, with `previous_run`).

`--case GOLDEN_ID` shows one question across every run instead: its pass share, mean score and
stability per variant/mode over its repeats (trial runs), or its metric values per strategy
(retrieval runs), each with the run's git sha.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import click
import pandas as pd
from sqlalchemy import Engine

from ragqual.app.context import AppContext
from ragqual.app.history_reads import history_head, unsealed_rows
from ragqual.app.run_changes import changes_since_previous
from ragqual.cli.output import (check_output, emit_frame, emit_page, format_option, output_format, output_option,
                                warn_unsealed)
from ragqual.core.runlabel import RunLabel
from ragqual.core.scoring import SCORER_NAME
from ragqual.store.queries import runs_frame
from ragqual.store.run_summaries import history_means
from ragqual.core.metric_names import HISTORY_HEADLINES as HEADLINES
from ragqual.core.metric_names import PASS, SCORE

DEFAULT_LIMIT = 20
PROVENANCE_COLUMNS = ["run_id", "kind", "subject", "started_at", "status", "git_sha", "git_dirty",
                      "corpus_fingerprint"]
LABEL_COLUMNS = ["name", "tags", "changed", "previous_run"]  # name first, the others after the metrics
SHORT_CHANGED = "changed_short"  # the table's one-line summary of `changed`


def headline_metrics(kinds: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(m for kind in kinds for m in HEADLINES.get(kind, (SCORE, PASS))))


def history_frame(
    engine: Engine, kind: str | None = None, metrics: Sequence[str] = (), limit: int | None = DEFAULT_LIMIT,
    scorer_name: str = SCORER_NAME, scorer_version: int | None = None,
) -> pd.DataFrame:
    """Runs (oldest first) joined with their per-group headline metrics."""
    runs = runs_frame(engine, kind, limit)
    if runs.empty:
        return pd.DataFrame(columns=[*_order(metrics), SHORT_CHANGED])
    wanted = list(metrics) or headline_metrics(runs["kind"].unique().tolist())
    values = _group_values(engine, runs["run_id"].tolist(), wanted, scorer_name, scorer_version)
    frame = runs[PROVENANCE_COLUMNS].merge(values, on="run_id", how="left")
    frame = frame.merge(_label_values(engine, runs["run_id"].tolist()), on="run_id", how="left")
    frame["group"] = frame["group"].fillna("")
    for metric in wanted:
        if metric not in frame.columns:
            frame[metric] = float("nan")
    return frame[[*_order(wanted), SHORT_CHANGED]].sort_values(["run_id", "group"], kind="stable")


def _order(metrics: Sequence[str]) -> list[str]:
    return ["run_id", LABEL_COLUMNS[0], *PROVENANCE_COLUMNS[1:], "group", *metrics, *LABEL_COLUMNS[1:]]


def _label_values(engine: Engine, run_ids: list[int]) -> pd.DataFrame:
    """Per run: its name, tags, the settings changed since the previous run of its kind (in full,
    and shortened for the table) and that run's id."""
    changes = changes_since_previous(engine, run_ids)
    rows = [{"run_id": run_id, "name": c.label.name, "tags": c.label.tag_dict(), "changed": c.lines(),
             "previous_run": c.previous, SHORT_CHANGED: c.summary()} for run_id, c in changes.items()]
    frame = pd.DataFrame(rows, columns=["run_id", *LABEL_COLUMNS, SHORT_CHANGED])
    return frame.astype({"previous_run": "Int64"})


def _group_values(engine: Engine, run_ids: list[int], metrics: list[str], scorer_name: str,
                  scorer_version: int | None = None) -> pd.DataFrame:
    named = [m for m in metrics if m not in (SCORE, PASS)]
    read = history_means(engine, run_ids, named, scorer_name, scorer_version)  # finished runs: their summaries
    wide = read.metrics.pivot_table(index=["run_id", "group_key"], columns="metric", values="mean", aggfunc="first")
    if SCORE in metrics or PASS in metrics:
        scores = read.scores.set_index(["run_id", "group_key"])
        wide = wide.join(scores[[m for m in (SCORE, PASS) if m in metrics]], how="outer")
    if wide.empty:
        return pd.DataFrame(columns=["run_id", "group"])
    wide.columns = [str(c) for c in wide.columns]
    return wide.reset_index().rename(columns={"group_key": "group"})


def with_unsealed(frame: pd.DataFrame, counts: dict[int, dict[str, int]]) -> pd.DataFrame:
    """An `unsealed_rows` column (rows no seal covers, left out of the figures) when any run has them."""
    if not counts or frame.empty:
        return frame
    return frame.assign(unsealed_rows=[sum(counts.get(int(r), {}).values()) for r in frame["run_id"]])


def run_names(frame: pd.DataFrame) -> dict[int, str]:
    """Run id -> the name the run was given (`--name`, `params["name"]`), for the runs that have one."""
    return {int(r): str(n) for r, n in zip(frame["run_id"], frame["name"]) if isinstance(n, str) and n}


def _for_display(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.drop(columns=["changed", "previous_run"]).rename(columns={SHORT_CHANGED: "changed"})
    out["tags"] = out["tags"].map(lambda t: RunLabel.from_params({"tags": t}).tag_text() or None)
    out["git_sha"] = out["git_sha"].map(lambda v: v[:10] if isinstance(v, str) else v)
    out["corpus_fingerprint"] = out["corpus_fingerprint"].map(lambda v: v[:12] if isinstance(v, str) else v)
    out["started_at"] = out["started_at"].map(lambda v: str(v)[:19])
    out["git_dirty"] = out["git_dirty"].map(lambda v: None if v is None or pd.isna(v) else bool(v))
    return out.rename(columns={"corpus_fingerprint": "fingerprint", "git_dirty": "dirty"})


def _raw(frame: pd.DataFrame, fmt: str) -> pd.DataFrame:
    """JSON keeps tags as an object and the changes as a list; CSV holds them as JSON text."""
    out = frame.drop(columns=[SHORT_CHANGED])
    if fmt == "csv":
        for column in ("tags", "changed"):
            out[column] = out[column].map(lambda v: json.dumps(v, sort_keys=True))
    return out


def _for_case_display(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["git_sha"] = out["git_sha"].map(lambda v: v[:10] if isinstance(v, str) else v)
    out["started_at"] = out["started_at"].map(lambda v: str(v)[:19])
    return out


@click.command("history")
@click.option("--kind", type=click.Choice(["retrieval", "generation", "subject", "sweep"]),
              help="Only runs of this kind.")
@click.option("--metric", "metrics", multiple=True, metavar="M",
              help="A metric column (repeatable; `score` and `pass` come from the trial scores). "
                   f"Default: {', '.join(HEADLINES['retrieval'])} for retrieval; "
                   f"{', '.join(HEADLINES['generation'])} for generation.")
@click.option("--limit", type=int, default=DEFAULT_LIMIT, show_default=True, help="Only the newest N runs (0: all).")
@click.option("--scorer", "scorer_name", default=SCORER_NAME, show_default=True,
              help="Scorer behind `score` and `pass`.")
@click.option("--case", "golden_id", metavar="GOLDEN_ID",
              help="One question across every run: pass/score per run (trials) or its metrics (retrieval).")
@click.option("--scorer-version", type=int,
              help="Pin the scorer version (default: each trial's newest scoring, e.g. after `ragqual rescore`).")
@format_option(html=True)
@output_option()
@click.pass_obj
def history_cmd(app: AppContext, kind: str | None, metrics: tuple[str, ...], limit: int, scorer_name: str,
                golden_id: str | None, scorer_version: int | None, fmt: str, output: str | None) -> None:
    """List the runs over time: git sha, corpus fingerprint, status and headline metrics."""
    check_output(fmt, output)
    fmt = output_format(fmt, app.as_json)
    engine = app.history()
    if golden_id is not None:
        from ragqual.app.case_history import case_history

        frame = case_history(engine, golden_id, metrics, scorer_name)
        if fmt == "html":
            from ragqual.reports.page import document_page

            emit_page(document_page(f"ragqual history of {golden_id}", history_head(engine),
                                    [("runs", _for_case_display(frame))]),
                      output)
            return
        emit_frame(_for_case_display(frame) if fmt in ("table", "markdown") else frame, fmt)
        return
    frame = history_frame(engine, kind, metrics, limit or None, scorer_name, scorer_version)
    unsealed = unsealed_rows(app, sorted({int(r) for r in frame["run_id"]})) if not frame.empty else {}
    warn_unsealed(unsealed)
    frame = with_unsealed(frame, unsealed)
    if fmt == "html":
        from ragqual.reports.history import history_page, intervals

        widths = intervals(engine, frame, scorer_name, scorer_version)
        plotted = frame.drop(columns=[*LABEL_COLUMNS, SHORT_CHANGED])
        emit_page(history_page(plotted, _for_display(frame), widths, header=history_head(engine),
                               names=run_names(frame)), output)
        return
    if frame.empty and fmt == "table":
        click.echo("no runs in the history yet")
        return
    emit_frame(_for_display(frame) if fmt in ("table", "markdown") else _raw(frame, fmt), fmt)
