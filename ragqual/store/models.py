"""SQLAlchemy 2.x models of the history database.

The models describe the schema for reading and writing; the schema itself is
created only by the Alembic migrations in `migrations/`. A committed snapshot
(`tests/store/schema_snapshot.json`) and a test keep the two from drifting.

Every table below is history: the migrations install triggers that refuse UPDATE, DELETE
and (SQLite) an INSERT over an existing key, and `alembic_version` only moves forward. A run's end is an appended
`run_events` row, never an edit of `runs`.
"""

# Each class is mapped imperatively over a Core `Table` written out beside its typed attributes, not
# declaratively from `mapped_column()`s: SQLAlchemy's declarative scan of the annotations and columns
# was about a third of this module's import (~10 ms, paid by every command at start-up). Its
# `Mapped[...]` annotations now only type the attributes for mypy, so they stay unevaluated strings.
# The schema is the same: tests/store/test_models.py compares each class's annotations with its
# table, tests/store/test_migrations.py the tables with the migrations.

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, TypeVar

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    FromClause,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped
from sqlalchemy.orm import registry as Registry
from sqlalchemy.schema import SchemaItem
from sqlalchemy.types import TypeEngine


class Base:
    """The base of every mapped class: `Base.metadata` holds every table, `Base.registry` every mapper."""

    metadata: ClassVar[MetaData] = MetaData()
    registry: ClassVar[Registry] = Registry(metadata=metadata)
    __table__: ClassVar[FromClause]


_Model = TypeVar("_Model", bound=Base)


def _mapped(cls: type[_Model]) -> type[_Model]:
    """Map a class over the `__table__` it declares (every column an attribute of its name)."""
    Base.registry.map_imperatively(cls, cls.__table__)
    return cls


def _table(name: str, *items: SchemaItem) -> FromClause:
    """A table of `Base.metadata`, typed as a mapped class's `__table__` (a FromClause, as declarative types it)."""
    return Table(name, Base.metadata, *items)


def _column(name: str, type_: TypeEngine[Any] | type[TypeEngine[Any]], *args: SchemaItem, nullable: bool = False,
            **kwargs: Any) -> Column[Any]:
    """A column NOT NULL unless `nullable` (what `Mapped[X]` and `Mapped[X | None]` declare)."""
    return Column(name, type_, *args, nullable=nullable, **kwargs)


@_mapped
class Run(Base):
    """One invocation: what was asked for and the provenance it ran with."""

    __table__ = _table(
        "runs",
        _column("id", Integer, primary_key=True),
        _column("kind", String(32)),  # retrieval | generation | subject | sweep
        _column("subject", String(128), nullable=True),
        _column("started_at", DateTime(timezone=True)),
        _column("argv", Text),  # JSON list, the exact command line
        _column("params", Text),  # JSON object, every parameter
        _column("git_sha", String(64), nullable=True),
        _column("git_dirty", Boolean, nullable=True),
        _column("ragqual_version", String(32)),
        _column("python_version", String(32)),
        _column("corpus_fingerprint", String(64), index=True, nullable=True),
        _column("dataset_hash", String(64), nullable=True),
        _column("prompt_hashes", Text, default="[]"),  # JSON list of sha256
        _column("provenance", Text),  # JSON object, the full record
        Index("ix_runs_kind_started", "kind", "started_at"),
    )
    id: Mapped[int]
    kind: Mapped[str]
    subject: Mapped[str | None]
    started_at: Mapped[datetime]
    argv: Mapped[str]
    params: Mapped[str]
    git_sha: Mapped[str | None]
    git_dirty: Mapped[bool | None]
    ragqual_version: Mapped[str]
    python_version: Mapped[str]
    corpus_fingerprint: Mapped[str | None]
    dataset_hash: Mapped[str | None]
    prompt_hashes: Mapped[str]
    provenance: Mapped[str]


@_mapped
class RunEvent(Base):
    """started / finished / interrupted / failed / resumed: the run's status is its last event."""

    __table__ = _table(
        "run_events",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id"), index=True),
        _column("event", String(32)),
        _column("at", DateTime(timezone=True)),
        _column("detail", Text, nullable=True),
        Index("ix_run_events_run", "run_id", "id"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    event: Mapped[str]
    at: Mapped[datetime]
    detail: Mapped[str | None]


@_mapped
class SystemPrompt(Base):
    __table__ = _table(
        "system_prompts",
        _column("id", Integer, primary_key=True),
        _column("sha256", String(64), unique=True),
        _column("text", Text),
    )
    id: Mapped[int]
    sha256: Mapped[str]
    text: Mapped[str]


@_mapped
class VariantConfig(Base):
    __table__ = _table(
        "variant_configs",
        _column("id", Integer, primary_key=True),
        _column("sha256", String(64), unique=True),
        _column("name", String(256)),
        _column("provider", String(64)),
        _column("model", String(512)),
        _column("config", Text),  # JSON: options, prompt override, digest
    )
    id: Mapped[int]
    sha256: Mapped[str]
    name: Mapped[str]
    provider: Mapped[str]
    model: Mapped[str]
    config: Mapped[str]


@_mapped
class CaseDef(Base):
    """A case (or golden) exactly as it was when a trial ran, by id + content hash."""

    __table__ = _table(
        "cases",
        _column("id", Integer, primary_key=True),
        _column("subject", String(128)),
        _column("case_id", String(128), index=True),
        _column("slug", String(256)),
        _column("sha256", String(64)),
        _column("definition", Text),  # JSON, assertions included
        UniqueConstraint("subject", "case_id", "sha256", name="uq_cases_version"),
    )
    id: Mapped[int]
    subject: Mapped[str]
    case_id: Mapped[str]
    slug: Mapped[str]
    sha256: Mapped[str]
    definition: Mapped[str]


@_mapped
class CaseAlias(Base):
    """An older id of a case and the id that replaced it (migration 0005: the generation tier's
    uuid5 ids of the goldens -> the golden ids both tiers use now). Views read case ids through it."""

    __table__ = _table(
        "case_aliases",
        _column("id", Integer, primary_key=True),
        _column("subject", String(128)),
        _column("alias", String(128)),
        _column("case_id", String(128), index=True),
        _column("note", Text),
        UniqueConstraint("subject", "alias", name="uq_case_aliases_alias"),
    )
    id: Mapped[int]
    subject: Mapped[str]
    alias: Mapped[str]
    case_id: Mapped[str]
    note: Mapped[str]


@_mapped
class AssertionDef(Base):
    __table__ = _table(
        "assertion_defs",
        _column("id", Integer, primary_key=True),
        _column("assertion_id", String(128), index=True),
        _column("version", Integer),
        _column("sha256", String(64)),
        _column("category", String(128)),
        _column("weight", Float),
        _column("name", Text),
        _column("definition", Text),  # JSON: kind + arguments, or a code hash
        UniqueConstraint("assertion_id", "version", "sha256", name="uq_assertion_defs_version"),
    )
    id: Mapped[int]
    assertion_id: Mapped[str]
    version: Mapped[int]
    sha256: Mapped[str]
    category: Mapped[str]
    weight: Mapped[float]
    name: Mapped[str]
    definition: Mapped[str]


@_mapped
class CorpusSnapshot(Base):
    __table__ = _table(
        "corpus_snapshots",
        _column("id", Integer, primary_key=True),
        _column("fingerprint", String(64), unique=True),
        _column("documents", Text),  # JSON list of {doc_id, sha256, chars}
        _column("chunk_config", Text),
        _column("embedder_id", String(256)),
        _column("created_at", DateTime(timezone=True)),
    )
    id: Mapped[int]
    fingerprint: Mapped[str]
    documents: Mapped[str]
    chunk_config: Mapped[str]
    embedder_id: Mapped[str]
    created_at: Mapped[datetime]


@_mapped
class Trial(Base):
    """One (variant x case x mode x repeat) execution with everything needed to audit it."""

    __table__ = _table(
        "trials",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id"), index=True),
        _column("case_pk", Integer, ForeignKey("cases.id"), index=True),
        _column("variant_id", Integer, ForeignKey("variant_configs.id")),
        _column("system_prompt_id", Integer, ForeignKey("system_prompts.id"), nullable=True),
        _column("mode", String(32), default=""),
        _column("repeat_index", Integer),
        _column("rendered_prompt", Text, nullable=True),  # JSON list of messages
        _column("context", Text, nullable=True),
        _column("raw_output", Text, nullable=True),  # JSON, as the backend returned it
        _column("parsed_output", Text, nullable=True),  # JSON
        _column("error", Text, nullable=True),
        _column("prompt_tokens", Integer, nullable=True),
        _column("completion_tokens", Integer, nullable=True),
        _column("latency_ms", Float, nullable=True),
        _column("load_ms", Float, nullable=True),
        _column("cost", Float, nullable=True),
        _column("cache_key", String(64), nullable=True),
        _column("cache_hit", Boolean, default=False),
        _column("created_at", DateTime(timezone=True)),
        _column("raw_output_bytes", Integer, nullable=True),  # before the output cap
        _column("output_truncated", Boolean, nullable=True),  # raw output cut to the cap
        # Migration 0012: a long text is stored once in `texts` and named here by its sha256; the
        # column above it is then NULL (ragqual.store.texts reads both layouts).
        _column("rendered_prompt_sha256", String(64), nullable=True),
        _column("context_sha256", String(64), nullable=True),
        _column("raw_output_sha256", String(64), nullable=True),
        _column("parsed_output_sha256", String(64), nullable=True),
        UniqueConstraint("run_id", "case_pk", "variant_id", "mode", "repeat_index", name="uq_trials_slot"),
        Index("ix_trials_run_mode", "run_id", "mode"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    case_pk: Mapped[int]
    variant_id: Mapped[int]
    system_prompt_id: Mapped[int | None]
    mode: Mapped[str]
    repeat_index: Mapped[int]
    rendered_prompt: Mapped[str | None]
    context: Mapped[str | None]
    raw_output: Mapped[str | None]
    parsed_output: Mapped[str | None]
    error: Mapped[str | None]
    prompt_tokens: Mapped[int | None]
    completion_tokens: Mapped[int | None]
    latency_ms: Mapped[float | None]
    load_ms: Mapped[float | None]
    cost: Mapped[float | None]
    cache_key: Mapped[str | None]
    cache_hit: Mapped[bool]
    created_at: Mapped[datetime]
    raw_output_bytes: Mapped[int | None]
    output_truncated: Mapped[bool | None]
    rendered_prompt_sha256: Mapped[str | None]
    context_sha256: Mapped[str | None]
    raw_output_sha256: Mapped[str | None]
    parsed_output_sha256: Mapped[str | None]


@_mapped
class AssertionResult(Base):
    __table__ = _table(
        "assertion_results",
        _column("id", Integer, primary_key=True),
        _column("trial_id", Integer, ForeignKey("trials.id"), index=True),
        _column("batch", String(36)),  # shared with the trial_scores row of the same scoring
        _column("assertion_id", String(128)),
        _column("assertion_version", Integer),
        _column("category", String(128)),
        _column("weight", Float),
        _column("passed", Boolean),
        _column("detail", Text, nullable=True),
        _column("created_at", DateTime(timezone=True)),
        Index("ix_assertion_results_trial_batch", "trial_id", "batch"),
    )
    id: Mapped[int]
    trial_id: Mapped[int]
    batch: Mapped[str]
    assertion_id: Mapped[str]
    assertion_version: Mapped[int]
    category: Mapped[str]
    weight: Mapped[float]
    passed: Mapped[bool]
    detail: Mapped[str | None]
    created_at: Mapped[datetime]


@_mapped
class TrialScore(Base):
    __table__ = _table(
        "trial_scores",
        _column("id", Integer, primary_key=True),
        _column("trial_id", Integer, ForeignKey("trials.id"), index=True),
        _column("batch", String(36)),
        _column("scorer_name", String(128)),
        _column("scorer_version", Integer),
        _column("score", Float),
        _column("perfect", Boolean),
        _column("per_category", Text),  # JSON
        _column("created_at", DateTime(timezone=True)),
        Index("ix_trial_scores_trial_version", "trial_id", "scorer_version", "id"),
        Index("ix_trial_scores_trial_scorer", "trial_id", "scorer_name", "scorer_version", "id", "score", "perfect"),
    )
    id: Mapped[int]
    trial_id: Mapped[int]
    batch: Mapped[str]
    scorer_name: Mapped[str]
    scorer_version: Mapped[int]
    score: Mapped[float]
    perfect: Mapped[bool]
    per_category: Mapped[str]
    created_at: Mapped[datetime]


@_mapped
class MetricValue(Base):
    """One named number for one question of one run (retrieval or generation), for SQL reports."""

    __table__ = _table(
        "metric_values",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id")),
        _column("trial_id", Integer, ForeignKey("trials.id"), index=True, nullable=True),
        _column("case_id", String(128)),
        _column("group_key", String(64), default=""),  # strategy or mode
        _column("metric", String(64)),
        _column("value", Float, nullable=True),
        _column("scorer_version", Integer, default=1),
        _column("created_at", DateTime(timezone=True)),
        Index("ix_metric_values_run_metric_version", "run_id", "metric", "scorer_version", "group_key", "value"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    trial_id: Mapped[int | None]
    case_id: Mapped[str]
    group_key: Mapped[str]
    metric: Mapped[str]
    value: Mapped[float | None]
    scorer_version: Mapped[int]
    created_at: Mapped[datetime]


@_mapped
class RetrievalResult(Base):
    """One ranked chunk of a retrieval run written before migration 0007 (kept, never rewritten;
    later runs store `retrieval_rankings`)."""

    __table__ = _table(
        "retrieval_results",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id")),
        _column("strategy", String(64)),
        _column("query_id", String(128)),
        _column("rank", Integer),
        _column("chunk_id", String(256)),
        _column("doc_id", String(256)),
        _column("score", Float),
        Index("ix_retrieval_results_run_query", "run_id", "query_id"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    strategy: Mapped[str]
    query_id: Mapped[str]
    rank: Mapped[int]
    chunk_id: Mapped[str]
    doc_id: Mapped[str]
    score: Mapped[float]


@_mapped
class RetrievalRanking(Base):
    """One strategy's ranked candidates for one question of a retrieval run (migration 0007): the
    chunk ids, document ids and scores as JSON arrays in rank order (rank = position + 1), `depth`
    their length. Replaces one `retrieval_results` row per rank; the view `v_retrieval_hits` shows
    both layouts as one row per ranked chunk, and ragqual.store.rankings encodes and expands them."""

    __table__ = _table(
        "retrieval_rankings",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id")),
        _column("strategy", String(64)),
        _column("query_id", String(128)),
        _column("depth", Integer),
        _column("chunk_ids", Text),  # JSON array of str
        _column("doc_ids", Text),  # JSON array of str
        _column("scores", Text),  # JSON array of numbers
        UniqueConstraint("run_id", "strategy", "query_id", name="uq_retrieval_rankings_query"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    strategy: Mapped[str]
    query_id: Mapped[str]
    depth: Mapped[int]
    chunk_ids: Mapped[str]
    doc_ids: Mapped[str]
    scores: Mapped[str]


@_mapped
class Seal(Base):
    """One link of the tamper-evidence chain: the rows one write transaction appended.

    `rows` is canonical JSON {table: {"ids": [[first, last], ...], "digests": "<16 hex per row>"}}
    (the genesis seal holds {"watermark": {table: highest id at upgrade}} instead); `digest` is
    sha256 over prev_digest, run_prev_digest, run_id and `rows` (ragqual.store.sealing).
    """

    __table__ = _table(
        "seals",
        _column("id", Integer, primary_key=True),
        _column("kind", String(16)),  # genesis | rows
        _column("run_id", Integer, ForeignKey("runs.id"), nullable=True),
        _column("prev_digest", String(64)),
        _column("run_prev_digest", String(64), nullable=True),
        _column("rows", Text),
        _column("digest", String(64)),
        Index("ix_seals_run", "run_id", "id"),
    )
    id: Mapped[int]
    kind: Mapped[str]
    run_id: Mapped[int | None]
    prev_digest: Mapped[str]
    run_prev_digest: Mapped[str | None]
    rows: Mapped[str]
    digest: Mapped[str]


@_mapped
class SealSpan(Base):
    """One id range a seal covers in one table (migration 0008): `seals.rows` in a form SQL can
    test, so that readers use only covered rows (ragqual.store.sealed_rows). `ragqual verify`
    recomputes every span from the seals."""

    __table__ = _table(
        "seal_spans",
        _column("id", Integer, primary_key=True),
        _column("seal_id", Integer, ForeignKey("seals.id")),
        _column("table_name", String(64)),
        _column("first_id", Integer),
        _column("last_id", Integer),
        Index("ix_seal_spans_lookup", "table_name", "first_id", "last_id"),
    )
    id: Mapped[int]
    seal_id: Mapped[int]
    table_name: Mapped[str]
    first_id: Mapped[int]
    last_id: Mapped[int]


@_mapped
class Label(Base):
    """One verdict a person gave one trial on one criterion (migration 0009): `ragqual label` and
    `ragqual labels import` append them; a correction is a newer row for the same (trial,
    criterion, labeller) and readers take the newest (ragqual.store.labels)."""

    __table__ = _table(
        "labels",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id")),
        _column("trial_id", Integer, ForeignKey("trials.id")),
        _column("criterion", String(32)),  # faithfulness | completeness | relevance
        _column("verdict", String(16)),  # yes | no | unsure
        _column("note", Text, nullable=True),
        _column("labeller", String(128)),
        _column("labelled_at", DateTime(timezone=True)),
        _column("source", String(80)),  # tui | import:<sha256 prefix of the file>
        _column("sample_seed", BigInteger, nullable=True),
        _column("sample_size", Integer, nullable=True),
        Index("ix_labels_run_trial", "run_id", "trial_id", "criterion", "labeller", "id"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    trial_id: Mapped[int]
    criterion: Mapped[str]
    verdict: Mapped[str]
    note: Mapped[str | None]
    labeller: Mapped[str]
    labelled_at: Mapped[datetime]
    source: Mapped[str]
    sample_seed: Mapped[int | None]
    sample_size: Mapped[int | None]


@_mapped
class PricingSnapshot(Base):
    """A price list exactly as a run or a reprice used it (migration 0011), interned by hash like
    `system_prompts`: canonical JSON of ragqual.core.pricing.PriceList.canonical()."""

    __table__ = _table(
        "pricing_snapshots",
        _column("id", Integer, primary_key=True),
        _column("sha256", String(64), unique=True),
        _column("body", Text),
        _column("created_at", DateTime(timezone=True)),
    )
    id: Mapped[int]
    sha256: Mapped[str]
    body: Mapped[str]
    created_at: Mapped[datetime]


@_mapped
class TrialCost(Base):
    """A trial's cost under one pricing snapshot (migration 0011); NULL cost = unpriced. Readers
    take a trial's newest row, or the row of a pinned snapshot, else `trials.cost`."""

    __table__ = _table(
        "trial_costs",
        _column("id", Integer, primary_key=True),
        _column("trial_id", Integer, ForeignKey("trials.id")),
        _column("snapshot_id", Integer, ForeignKey("pricing_snapshots.id")),
        _column("cost", Float, nullable=True),
        _column("currency", String(3), nullable=True),
        _column("created_at", DateTime(timezone=True)),
        Index("ix_trial_costs_trial", "trial_id", "id"),
    )
    id: Mapped[int]
    trial_id: Mapped[int]
    snapshot_id: Mapped[int]
    cost: Mapped[float | None]
    currency: Mapped[str | None]
    created_at: Mapped[datetime]


@_mapped
class Judgement(Base):
    """One judge verdict on one stored trial (migration 0010): written by a run of kind `judge`
    (`run_id`) about a trial of `target_run_id`. `criterion` is `judge:<criterion>`; `score` is in
    [0, 1] (P(yes) from token probabilities, or 1/0 from a constrained yes/no), NULL with `error`
    when the judge's reply could not be read. The rubric text is interned in `system_prompts`
    under `rubric_sha256`."""

    __table__ = _table(
        "judgements",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id")),
        _column("target_run_id", Integer, ForeignKey("runs.id")),
        _column("trial_id", Integer, ForeignKey("trials.id")),
        _column("criterion", String(64)),
        _column("score", Float, nullable=True),
        _column("verdict", String(8), nullable=True),
        _column("method", String(16)),
        _column("rubric_version", Integer),
        _column("rubric_sha256", String(64)),
        _column("judge_model", String(512)),
        _column("judge_digest", String(128), nullable=True),
        _column("sample_index", Integer),
        _column("cache_key", String(64), nullable=True),
        _column("cache_hit", Boolean),
        _column("raw", Text),
        _column("error", Text, nullable=True),
        _column("created_at", DateTime(timezone=True)),
        Index("ix_judgements_target", "target_run_id", "criterion"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    target_run_id: Mapped[int]
    trial_id: Mapped[int]
    criterion: Mapped[str]
    score: Mapped[float | None]
    verdict: Mapped[str | None]
    method: Mapped[str]
    rubric_version: Mapped[int]
    rubric_sha256: Mapped[str]
    judge_model: Mapped[str]
    judge_digest: Mapped[str | None]
    sample_index: Mapped[int]
    cache_key: Mapped[str | None]
    cache_hit: Mapped[bool]
    raw: Mapped[str]
    error: Mapped[str | None]
    created_at: Mapped[datetime]


@_mapped
class JudgeAudit(Base):
    """An agreement audit of a judge against human labels on one run (migration 0010), keyed on
    the rubric hash and the judge model's digest so an old audit can be re-read and compared."""

    __table__ = _table(
        "judge_audits",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id")),
        _column("criterion", String(64)),
        _column("rubric_sha256", String(64)),
        _column("judge_model", String(512)),
        _column("judge_digest", String(128), nullable=True),
        _column("payload", Text),
        _column("created_at", DateTime(timezone=True)),
        Index("ix_judge_audits_run", "run_id", "criterion"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    criterion: Mapped[str]
    rubric_sha256: Mapped[str]
    judge_model: Mapped[str]
    judge_digest: Mapped[str | None]
    payload: Mapped[str]
    created_at: Mapped[datetime]


@_mapped
class StoredText(Base):
    """A trial's long text stored once by content (migration 0012): a rendered prompt, a context, a
    raw or parsed output, exactly as the trial column would hold it. Trials name it by `sha256`;
    the view `v_trial_texts` shows every trial's texts from either layout."""

    __table__ = _table(
        "texts",
        _column("id", Integer, primary_key=True),
        _column("sha256", String(64), unique=True),
        _column("body", Text),
    )
    id: Mapped[int]
    sha256: Mapped[str]
    body: Mapped[str]


@_mapped
class RunSummary(Base):
    """What `history` shows of one finished run (migration 0013), appended and sealed in the
    transaction of its `finished` event: `body` is JSON holding the rows of the two aggregates
    `history` reads (mean score, pass share and trials per mode under `scorer_name`; mean and
    count per metric, scorer version and group). `seal_id` is the run's newest seal when it was
    computed. Readers use it only while it is current (no newer seal of the run, no later
    watermark) and read the rows otherwise; `ragqual verify` recomputes every current summary
    (ragqual.store.run_summaries)."""

    __table__ = _table(
        "run_summaries",
        _column("id", Integer, primary_key=True),
        _column("run_id", Integer, ForeignKey("runs.id")),
        _column("seal_id", Integer, ForeignKey("seals.id"), nullable=True),
        _column("scorer_name", String(128)),
        _column("body", Text),
        _column("created_at", DateTime(timezone=True)),
        Index("ix_run_summaries_run", "run_id", "id"),
    )
    id: Mapped[int]
    run_id: Mapped[int]
    seal_id: Mapped[int | None]
    scorer_name: Mapped[str]
    body: Mapped[str]
    created_at: Mapped[datetime]


SEALED_TABLES: tuple[str, ...] = (
    "runs",
    "run_events",
    "system_prompts",
    "variant_configs",
    "cases",
    "assertion_defs",
    "corpus_snapshots",
    "trials",
    "assertion_results",
    "trial_scores",
    "metric_values",
    "retrieval_results",
    "case_aliases",
    "retrieval_rankings",
    "labels",
    "pricing_snapshots",
    "trial_costs",
    "judgements",
    "judge_audits",
    "texts",
    "run_summaries",
)
"""The tables whose rows are sealed: a migration that adds a history table adds it here too
(and to HISTORY_TABLES through this tuple); `ragqual verify` then expects its rows sealed."""

HISTORY_TABLES: tuple[str, ...] = (*SEALED_TABLES, "seals", "seal_spans")
"""Every append-only table (the seal chain and its spans included); `alembic_version` is guarded as well."""
