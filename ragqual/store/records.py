"""Plain records passed into and out of the store (never ORM rows)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from ragqual.core.runlabel import RunLabel


@dataclass(frozen=True)
class Provenance:
    """What a run ran with (git state, versions, command line, inputs' hashes, parameters): stored
    in its `runs` row, `as_dict()` as the `provenance` JSON."""

    git_sha: str | None
    git_dirty: bool | None
    git_note: str  # "ok" or why there is no sha ("not a git checkout")
    ragqual_version: str
    python_version: str
    argv: tuple[str, ...]
    corpus_fingerprint: str | None = None
    dataset_hash: str | None = None
    prompt_hashes: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "git_sha": self.git_sha,
            "git_dirty": self.git_dirty,
            "git_note": self.git_note,
            "ragqual_version": self.ragqual_version,
            "python_version": self.python_version,
            "argv": list(self.argv),
            "corpus_fingerprint": self.corpus_fingerprint,
            "dataset_hash": self.dataset_hash,
            "prompt_hashes": list(self.prompt_hashes),
            "params": self.params,
        }


@dataclass(frozen=True)
class RunInfo:
    """One run as read back: its `runs` row, the last event it recorded (`status`) and when it ended."""

    id: int
    kind: str
    subject: str | None
    started_at: datetime
    status: str | None
    ended_at: datetime | None
    argv: list[str]
    params: dict[str, Any]
    provenance: dict[str, Any]
    corpus_fingerprint: str | None
    dataset_hash: str | None
    git_sha: str | None
    git_dirty: bool | None

    @property
    def label(self) -> RunLabel:
        """The run's name and tags (kept in its params; ragqual.core.runlabel)."""
        return RunLabel.from_params(self.params)


@dataclass(frozen=True)
class AssertionRow:
    """One check's verdict on one trial (an `assertion_results` row)."""

    assertion_id: str
    version: int
    category: str
    weight: float
    passed: bool
    detail: str | None = None


@dataclass(frozen=True)
class ScoreRow:
    """One scorer's score of one trial, with its per-category scores (a `trial_scores` row)."""

    scorer_name: str
    scorer_version: int
    score: float
    perfect: bool
    per_category: dict[str, float]


@dataclass(frozen=True)
class TrialRecord:
    """A finished trial with its scoring, appended in one transaction."""

    run_id: int
    case_pk: int
    variant_id: int
    mode: str
    repeat_index: int
    system_prompt_id: int | None
    rendered_prompt: Any
    context: str | None
    raw_output: Any
    parsed_output: Any
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float | None
    load_ms: float | None
    cost: float | None
    cache_key: str | None
    cache_hit: bool
    assertions: tuple[AssertionRow, ...] = ()
    scores: tuple[ScoreRow, ...] = ()
    metrics: dict[str, float | None] = field(default_factory=dict)
    case_id: str = ""
    raw_output_bytes: int | None = None  # size of the raw output before the cap (engine.output_cap)
    output_truncated: bool | None = None  # the stored raw output was cut to the cap
    metrics_version: int = 1  # the subject's metrics version, stored as metric_values.scorer_version
    raw_output_json: str | None = field(default=None, compare=False, repr=False)
    """`raw_output` as JSON, `json.dumps(raw_output, ensure_ascii=False, sort_keys=True)`, when the
    caller has that text already (the trial loop encodes each raw response once,
    `engine.loop._raw_json`): the store writes it instead of encoding the value again, unless the
    value is None or a string (stored as it is) or masking a credential changes it."""


class RetrievalRow(NamedTuple):
    """One ranked hit of a retrieval run, as read back (a named tuple: a standard collection's run
    holds ~280,000)."""

    strategy: str
    query_id: str
    rank: int
    chunk_id: str
    doc_id: str
    score: float


class RankingRow(NamedTuple):
    """One strategy's ranked candidates for one question, rank order: what a retrieval run stores
    (one `retrieval_rankings` row; `RetrievalRow`s are what reading it back gives, one per rank)."""

    strategy: str
    query_id: str
    chunk_ids: Sequence[str]
    doc_ids: Sequence[str]
    scores: Sequence[float]


class RankedScores(NamedTuple):
    """One stored ranking read back as the two columns a chart of scores needs, rank order: what
    `retrieval_scores` gives instead of one `RetrievalRow` per hit."""

    strategy: str
    query_id: str
    doc_ids: list[str]
    scores: list[float]


OPEN_EVENTS = ("started", "resumed")


def run_status(last_event: str | None) -> str | None:
    """What a person is told about a run: one whose last event opened it and that never recorded
    an end is `incomplete` (still running, or killed: `--resume RUN_ID` finishes it)."""
    return "incomplete" if last_event in OPEN_EVENTS else last_event
