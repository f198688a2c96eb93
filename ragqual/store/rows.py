"""A batch of trial records as the rows it appends, built column by column.

The run store appends a batch's trials and their assertion, score and metric rows with one
executemany per table, and its seal digests the same values (ragqual.store.sealing). Both work
column by column, so the rows are built that way: one list per column, filled by C-level maps
over the records (a repeated value by `repeated`, a batch's `created_at` once per row), not one
tuple or dict per row that is then taken apart again. Each builder returns its table's columns
in the order of its *_COLUMNS names; the values are those the row-by-row builders gave before.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ragqual.core.redact import redact_known, redact_text
from ragqual.store.records import AssertionRow, ScoreRow, TrialRecord

T = TypeVar("T")
Columns = list[Sequence[Any]]

ASSERTION_COLUMNS = ("trial_id", "batch", "assertion_id", "assertion_version", "category", "weight", "passed",
                     "detail", "created_at")
SCORE_COLUMNS = ("trial_id", "batch", "scorer_name", "scorer_version", "score", "perfect", "per_category",
                 "created_at")
METRIC_COLUMNS = ("run_id", "trial_id", "case_id", "group_key", "metric", "value", "scorer_version", "created_at")
TRIAL_COLUMNS = ("run_id", "case_pk", "variant_id", "system_prompt_id", "mode", "repeat_index", "error",
                 "prompt_tokens", "completion_tokens", "latency_ms", "load_ms", "cost", "cache_key", "cache_hit",
                 "created_at")
"""A trial's columns other than its texts (ragqual.store.texts) and output cap (`cap_columns`)."""
CAP_COLUMNS = ("raw_output_bytes", "output_truncated")  # migration 0006, only when some trial carries them


_VALUES = operator.methodcaller("values")


def repeated(values: Iterable[T], counts: Iterable[int]) -> list[T]:
    """Each value as many times as its count says, in order: [a, b], [2, 1] -> [a, a, b]."""
    return list(itertools.chain.from_iterable(map(itertools.repeat, values, counts)))


def _attributes(items: Sequence[Any], names: Sequence[str]) -> Columns:
    return [list(map(operator.attrgetter(name), items)) for name in names]


def trial_columns(recs: Sequence[TrialRecord], now: datetime) -> Columns:
    """The TRIAL_COLUMNS of each record, its error masked (ragqual.core.redact)."""
    columns = _attributes(recs, TRIAL_COLUMNS[:-1])
    at = TRIAL_COLUMNS.index("error")
    columns[at] = [None if error is None else redact_text(error) for error in columns[at]]
    columns.append([now] * len(recs))
    return columns


def cap_columns(recs: Sequence[TrialRecord]) -> Columns | None:
    """The CAP_COLUMNS of each record, NULL for a trial that carries no cap; None when none does."""
    sizes = [rec.raw_output_bytes for rec in recs]
    if sizes.count(None) == len(sizes):
        return None
    return [sizes, [None if size is None else rec.output_truncated for size, rec in zip(sizes, recs, strict=True)]]


def assertion_columns(trial_ids: Sequence[int], batches: Sequence[str], groups: Sequence[Sequence[AssertionRow]],
                      now: datetime) -> Columns:
    """The ASSERTION_COLUMNS of each trial's assertion rows (`groups[i]` those of `trial_ids[i]`,
    scored in `batches[i]`), their details masked."""
    counts = list(map(len, groups))
    rows = list(itertools.chain.from_iterable(groups))
    return [repeated(trial_ids, counts), repeated(batches, counts),
            *_attributes(rows, ("assertion_id", "version", "category", "weight", "passed")),
            list(map(redact_known, map(operator.attrgetter("detail"), rows))), [now] * len(rows)]


def score_columns(trial_ids: Sequence[int], batches: Sequence[str], groups: Sequence[Sequence[ScoreRow]],
                  now: datetime, per_category: Callable[[Any], str | None]) -> Columns:
    """The SCORE_COLUMNS of each trial's score rows (`per_category`: canonical_json, or the same
    text made once per object, ragqual.store.runstore._OncePerObject)."""
    counts = list(map(len, groups))
    rows = list(itertools.chain.from_iterable(groups))
    return [repeated(trial_ids, counts), repeated(batches, counts),
            *_attributes(rows, ("scorer_name", "scorer_version", "score", "perfect")),
            list(map(per_category, map(operator.attrgetter("per_category"), rows))), [now] * len(rows)]


def metric_columns(run_id: int, trial_ids: Sequence[int], recs: Sequence[TrialRecord], now: datetime) -> Columns:
    """The METRIC_COLUMNS of each trial's metrics (its case id, mode as the group, metrics version)."""
    metrics = [rec.metrics for rec in recs]
    counts = list(map(len, metrics))
    total = sum(counts)
    return [[run_id] * total, repeated(trial_ids, counts), repeated((rec.case_id for rec in recs), counts),
            repeated((rec.mode for rec in recs), counts), list(itertools.chain.from_iterable(metrics)),
            list(itertools.chain.from_iterable(map(_VALUES, metrics))),
            repeated((rec.metrics_version for rec in recs), counts), [now] * total]
