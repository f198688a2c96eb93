"""Gates never pass on a run that did not finish.

`compare`, `baseline promote`, `adopt` and `matrix --run` read runs through `gated_summary` (or
`require_finished`): a run whose last event is not `finished` (killed: `incomplete`; Ctrl-C:
`interrupted`; an error: `failed`) is refused with exit 2, naming its status and how to finish it,
unless `--allow-incomplete` is given. Then every line the run feeds carries `incomplete_label`.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Engine

from ragqual.core.scoring import SCORER_NAME
from ragqual.errors import InputError
from ragqual.store.records import RunInfo, run_status
from ragqual.store.runstore import RunStore
from ragqual.store.summaries import Summary, summarise_run

ALLOW_FLAG = "--allow-incomplete"


def how_to_finish(info: RunInfo) -> str:
    if info.kind == "generation":
        return f"`ragqual generation --resume {info.id}` finishes it"
    if info.kind == "subject":
        return f"`ragqual run --resume {info.id}` finishes it"
    return f"{info.kind} runs are not resumable: run `ragqual {info.kind}` again for a finished run"


def incomplete_label(info: RunInfo) -> str:
    return f"INCOMPLETE run {info.id} ({run_status(info.status) or 'no events'})"


def require_finished(info: RunInfo, allow_incomplete: bool = False) -> str | None:
    """None for a finished run; the label to print on its lines when incomplete runs are allowed;
    otherwise an InputError (exit 2) naming the run's status and how to finish it."""
    if info.status == "finished":
        return None
    status = run_status(info.status) or "without any event"
    if not allow_incomplete:
        raise InputError(f"run {info.id} is {status} (its last event), not finished: {how_to_finish(info)}, "
                         f"or pass {ALLOW_FLAG} to use the partial run anyway")
    return incomplete_label(info)


def gated_summary(store: RunStore | Engine, run_id: int, scorer_name: str = SCORER_NAME,
                  scorer_version: int | None = None, allow_incomplete: bool = False) -> Summary:
    """A run's summary for a gate; an allowed incomplete run is named so in its source."""
    runs = store if isinstance(store, RunStore) else RunStore(store)
    info = runs.get_run(run_id)
    label = require_finished(info, allow_incomplete)
    summary = summarise_run(runs.engine, info, scorer_name, scorer_version)
    if label is None:
        return summary
    return replace(summary, source=f"{summary.source} [{label}]", header={**summary.header, "incomplete": label})


def incomplete_sources(*summaries: Summary) -> str:
    """The incomplete-run labels of these summaries ('' when every run finished), for a column."""
    labels = [s.header["incomplete"] for s in summaries if s.header.get("incomplete")]
    return "; ".join(dict.fromkeys(labels))
