"""SQLAlchemy 2.x models of the history database.

The models describe the schema for reading and writing; the schema itself is
created only by the Alembic migrations in `migrations/`. A committed snapshot
(`tests/store/schema_snapshot.json`) and a test keep the two from drifting.

Every table below is history: the migrations install triggers that refuse UPDATE, DELETE
and (SQLite) an INSERT over an existing key, and `alembic_version` only moves forward. A run's end is an appended
`run_events` row, never an edit of `runs`.
"""

# No `from __future__ import annotations` here: with it every `Mapped[...]` annotation is a string that
# SQLAlchemy parses and evaluates again when it maps the class (~0.01-0.02 s of this module's import).

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Run(Base):
    """One invocation: what was asked for and the provenance it ran with."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_kind_started", "kind", "started_at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))  # retrieval | generation | subject | sweep
    subject: Mapped[str | None] = mapped_column(String(128))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    argv: Mapped[str] = mapped_column(Text)  # JSON list, the exact command line
    params: Mapped[str] = mapped_column(Text)  # JSON object, every parameter
    git_sha: Mapped[str | None] = mapped_column(String(64))
    git_dirty: Mapped[bool | None] = mapped_column(Boolean)
    ragqual_version: Mapped[str] = mapped_column(String(32))
    python_version: Mapped[str] = mapped_column(String(32))
    corpus_fingerprint: Mapped[str | None] = mapped_column(String(64), index=True)
    dataset_hash: Mapped[str | None] = mapped_column(String(64))
    prompt_hashes: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of sha256
    provenance: Mapped[str] = mapped_column(Text)  # JSON object, the full record


class RunEvent(Base):
    """started / finished / interrupted / failed / resumed: the run's status is its last event."""

    __tablename__ = "run_events"
    __table_args__ = (Index("ix_run_events_run", "run_id", "id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    event: Mapped[str] = mapped_column(String(32))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    detail: Mapped[str | None] = mapped_column(Text)


class SystemPrompt(Base):
    __tablename__ = "system_prompts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    text: Mapped[str] = mapped_column(Text)


class VariantConfig(Base):
    __tablename__ = "variant_configs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(256))
    provider: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(512))
    config: Mapped[str] = mapped_column(Text)  # JSON: options, prompt override, digest


class CaseDef(Base):
    """A case (or golden) exactly as it was when a trial ran, by id + content hash."""

    __tablename__ = "cases"
    __table_args__ = (UniqueConstraint("subject", "case_id", "sha256", name="uq_cases_version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    subject: Mapped[str] = mapped_column(String(128))
    case_id: Mapped[str] = mapped_column(String(128), index=True)
    slug: Mapped[str] = mapped_column(String(256))
    sha256: Mapped[str] = mapped_column(String(64))
    definition: Mapped[str] = mapped_column(Text)  # JSON, assertions included


class CaseAlias(Base):
    """An older id of a case and the id that replaced it (migration 0005: the generation tier's
    uuid5 ids of the goldens -> the golden ids both tiers use now). Views read case ids through it."""

    __tablename__ = "case_aliases"
    __table_args__ = (UniqueConstraint("subject", "alias", name="uq_case_aliases_alias"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    subject: Mapped[str] = mapped_column(String(128))
    alias: Mapped[str] = mapped_column(String(128))
    case_id: Mapped[str] = mapped_column(String(128), index=True)
    note: Mapped[str] = mapped_column(Text)


class AssertionDef(Base):
    __tablename__ = "assertion_defs"
    __table_args__ = (
        UniqueConstraint("assertion_id", "version", "sha256", name="uq_assertion_defs_version"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assertion_id: Mapped[str] = mapped_column(String(128), index=True)
    version: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    category: Mapped[str] = mapped_column(String(128))
    weight: Mapped[float] = mapped_column(Float)
    name: Mapped[str] = mapped_column(Text)
    definition: Mapped[str] = mapped_column(Text)  # JSON: kind + arguments, or a code hash


class CorpusSnapshot(Base):
    __tablename__ = "corpus_snapshots"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    documents: Mapped[str] = mapped_column(Text)  # JSON list of {doc_id, sha256, chars}
    chunk_config: Mapped[str] = mapped_column(Text)
    embedder_id: Mapped[str] = mapped_column(String(256))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Trial(Base):
    """One (variant x case x mode x repeat) execution with everything needed to audit it."""

    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint(
            "run_id", "case_pk", "variant_id", "mode", "repeat_index", name="uq_trials_slot"
        ),
        Index("ix_trials_run_mode", "run_id", "mode"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    case_pk: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    variant_id: Mapped[int] = mapped_column(ForeignKey("variant_configs.id"))
    system_prompt_id: Mapped[int | None] = mapped_column(ForeignKey("system_prompts.id"))
    mode: Mapped[str] = mapped_column(String(32), default="")
    repeat_index: Mapped[int] = mapped_column(Integer)
    rendered_prompt: Mapped[str | None] = mapped_column(Text)  # JSON list of messages
    context: Mapped[str | None] = mapped_column(Text)
    raw_output: Mapped[str | None] = mapped_column(Text)  # JSON, as the backend returned it
    parsed_output: Mapped[str | None] = mapped_column(Text)  # JSON
    error: Mapped[str | None] = mapped_column(Text)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    load_ms: Mapped[float | None] = mapped_column(Float)
    cost: Mapped[float | None] = mapped_column(Float)
    cache_key: Mapped[str | None] = mapped_column(String(64))
    cache_hit: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    raw_output_bytes: Mapped[int | None] = mapped_column(Integer)  # before the output cap
    output_truncated: Mapped[bool | None] = mapped_column(Boolean)  # raw output cut to the cap
    # Migration 0012: a long text is stored once in `texts` and named here by its sha256; the
    # column above it is then NULL (ragqual.store.texts reads both layouts).
    rendered_prompt_sha256: Mapped[str | None] = mapped_column(String(64))
    context_sha256: Mapped[str | None] = mapped_column(String(64))
    raw_output_sha256: Mapped[str | None] = mapped_column(String(64))
    parsed_output_sha256: Mapped[str | None] = mapped_column(String(64))


class AssertionResult(Base):
    __tablename__ = "assertion_results"
    __table_args__ = (Index("ix_assertion_results_trial_batch", "trial_id", "batch"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"), index=True)
    batch: Mapped[str] = mapped_column(String(36))  # shared with the trial_scores row of the same scoring
    assertion_id: Mapped[str] = mapped_column(String(128))
    assertion_version: Mapped[int] = mapped_column(Integer)
    category: Mapped[str] = mapped_column(String(128))
    weight: Mapped[float] = mapped_column(Float)
    passed: Mapped[bool] = mapped_column(Boolean)
    detail: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class TrialScore(Base):
    __tablename__ = "trial_scores"
    __table_args__ = (
        Index("ix_trial_scores_trial_version", "trial_id", "scorer_version", "id"),
        Index("ix_trial_scores_trial_scorer", "trial_id", "scorer_name", "scorer_version", "id", "score", "perfect"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"), index=True)
    batch: Mapped[str] = mapped_column(String(36))
    scorer_name: Mapped[str] = mapped_column(String(128))
    scorer_version: Mapped[int] = mapped_column(Integer)
    score: Mapped[float] = mapped_column(Float)
    perfect: Mapped[bool] = mapped_column(Boolean)
    per_category: Mapped[str] = mapped_column(Text)  # JSON
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class MetricValue(Base):
    """One named number for one question of one run (retrieval or generation), for SQL reports."""

    __tablename__ = "metric_values"
    __table_args__ = (
        Index("ix_metric_values_run_metric_version", "run_id", "metric", "scorer_version", "group_key", "value"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    trial_id: Mapped[int | None] = mapped_column(ForeignKey("trials.id"), index=True)
    case_id: Mapped[str] = mapped_column(String(128))
    group_key: Mapped[str] = mapped_column(String(64), default="")  # strategy or mode
    metric: Mapped[str] = mapped_column(String(64))
    value: Mapped[float | None] = mapped_column(Float)
    scorer_version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RetrievalResult(Base):
    """One ranked chunk of a retrieval run written before migration 0007 (kept, never rewritten;
    later runs store `retrieval_rankings`)."""

    __tablename__ = "retrieval_results"
    __table_args__ = (Index("ix_retrieval_results_run_query", "run_id", "query_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    strategy: Mapped[str] = mapped_column(String(64))
    query_id: Mapped[str] = mapped_column(String(128))
    rank: Mapped[int] = mapped_column(Integer)
    chunk_id: Mapped[str] = mapped_column(String(256))
    doc_id: Mapped[str] = mapped_column(String(256))
    score: Mapped[float] = mapped_column(Float)


class RetrievalRanking(Base):
    """One strategy's ranked candidates for one question of a retrieval run (migration 0007): the
    chunk ids, document ids and scores as JSON arrays in rank order (rank = position + 1), `depth`
    their length. Replaces one `retrieval_results` row per rank; the view `v_retrieval_hits` shows
    both layouts as one row per ranked chunk, and ragqual.store.rankings encodes and expands them."""

    __tablename__ = "retrieval_rankings"
    __table_args__ = (UniqueConstraint("run_id", "strategy", "query_id", name="uq_retrieval_rankings_query"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    strategy: Mapped[str] = mapped_column(String(64))
    query_id: Mapped[str] = mapped_column(String(128))
    depth: Mapped[int] = mapped_column(Integer)
    chunk_ids: Mapped[str] = mapped_column(Text)  # JSON array of str
    doc_ids: Mapped[str] = mapped_column(Text)  # JSON array of str
    scores: Mapped[str] = mapped_column(Text)  # JSON array of numbers


class Seal(Base):
    """One link of the tamper-evidence chain: the rows one write transaction appended.

    `rows` is canonical JSON {table: {"ids": [[first, last], ...], "digests": "<16 hex per row>"}}
    (the genesis seal holds {"watermark": {table: highest id at upgrade}} instead); `digest` is
    sha256 over prev_digest, run_prev_digest, run_id and `rows` (ragqual.store.sealing).
    """

    __tablename__ = "seals"
    __table_args__ = (Index("ix_seals_run", "run_id", "id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # genesis | rows
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    prev_digest: Mapped[str] = mapped_column(String(64))
    run_prev_digest: Mapped[str | None] = mapped_column(String(64))
    rows: Mapped[str] = mapped_column(Text)
    digest: Mapped[str] = mapped_column(String(64))


class SealSpan(Base):
    """One id range a seal covers in one table (migration 0008): `seals.rows` in a form SQL can
    test, so that readers use only covered rows (ragqual.store.sealed_rows). `ragqual verify`
    recomputes every span from the seals."""

    __tablename__ = "seal_spans"
    __table_args__ = (Index("ix_seal_spans_lookup", "table_name", "first_id", "last_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seal_id: Mapped[int] = mapped_column(ForeignKey("seals.id"))
    table_name: Mapped[str] = mapped_column(String(64))
    first_id: Mapped[int] = mapped_column(Integer)
    last_id: Mapped[int] = mapped_column(Integer)


class Label(Base):
    """One verdict a person gave one trial on one criterion (migration 0009): `ragqual label` and
    `ragqual labels import` append them; a correction is a newer row for the same (trial,
    criterion, labeller) and readers take the newest (ragqual.store.labels)."""

    __tablename__ = "labels"
    __table_args__ = (Index("ix_labels_run_trial", "run_id", "trial_id", "criterion", "labeller", "id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"))
    criterion: Mapped[str] = mapped_column(String(32))  # faithfulness | completeness | relevance
    verdict: Mapped[str] = mapped_column(String(16))  # yes | no | unsure
    note: Mapped[str | None] = mapped_column(Text)
    labeller: Mapped[str] = mapped_column(String(128))
    labelled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    source: Mapped[str] = mapped_column(String(80))  # tui | import:<sha256 prefix of the file>
    sample_seed: Mapped[int | None] = mapped_column(BigInteger)
    sample_size: Mapped[int | None] = mapped_column(Integer)


class PricingSnapshot(Base):
    """A price list exactly as a run or a reprice used it (migration 0011), interned by hash like
    `system_prompts`: canonical JSON of ragqual.core.pricing.PriceList.canonical()."""

    __tablename__ = "pricing_snapshots"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class TrialCost(Base):
    """A trial's cost under one pricing snapshot (migration 0011); NULL cost = unpriced. Readers
    take a trial's newest row, or the row of a pinned snapshot, else `trials.cost`."""

    __tablename__ = "trial_costs"
    __table_args__ = (Index("ix_trial_costs_trial", "trial_id", "id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"))
    snapshot_id: Mapped[int] = mapped_column(ForeignKey("pricing_snapshots.id"))
    cost: Mapped[float | None] = mapped_column(Float)
    currency: Mapped[str | None] = mapped_column(String(3))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

class Judgement(Base):
    """One judge verdict on one stored trial (migration 0010): written by a run of kind `judge`
    (`run_id`) about a trial of `target_run_id`. `criterion` is `judge:<criterion>`; `score` is in
    [0, 1] (P(yes) from token probabilities, or 1/0 from a constrained yes/no), NULL with `error`
    when the judge's reply could not be read. The rubric text is interned in `system_prompts`
    under `rubric_sha256`."""

    __tablename__ = "judgements"
    __table_args__ = (Index("ix_judgements_target", "target_run_id", "criterion"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    target_run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"))
    criterion: Mapped[str] = mapped_column(String(64))
    score: Mapped[float | None] = mapped_column(Float)
    verdict: Mapped[str | None] = mapped_column(String(8))
    method: Mapped[str] = mapped_column(String(16))
    rubric_version: Mapped[int] = mapped_column(Integer)
    rubric_sha256: Mapped[str] = mapped_column(String(64))
    judge_model: Mapped[str] = mapped_column(String(512))
    judge_digest: Mapped[str | None] = mapped_column(String(128))
    sample_index: Mapped[int] = mapped_column(Integer)
    cache_key: Mapped[str | None] = mapped_column(String(64))
    cache_hit: Mapped[bool] = mapped_column(Boolean)
    raw: Mapped[str] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class JudgeAudit(Base):
    """An agreement audit of a judge against human labels on one run (migration 0010), keyed on
    the rubric hash and the judge model's digest so an old audit can be re-read and compared."""

    __tablename__ = "judge_audits"
    __table_args__ = (Index("ix_judge_audits_run", "run_id", "criterion"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    criterion: Mapped[str] = mapped_column(String(64))
    rubric_sha256: Mapped[str] = mapped_column(String(64))
    judge_model: Mapped[str] = mapped_column(String(512))
    judge_digest: Mapped[str | None] = mapped_column(String(128))
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class StoredText(Base):
    """A trial's long text stored once by content (migration 0012): a rendered prompt, a context, a
    raw or parsed output, exactly as the trial column would hold it. Trials name it by `sha256`;
    the view `v_trial_texts` shows every trial's texts from either layout."""

    __tablename__ = "texts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    body: Mapped[str] = mapped_column(Text)


class RunSummary(Base):
    """What `history` shows of one finished run (migration 0013), appended and sealed in the
    transaction of its `finished` event: `body` is JSON holding the rows of the two aggregates
    `history` reads (mean score, pass share and trials per mode under `scorer_name`; mean and
    count per metric, scorer version and group). `seal_id` is the run's newest seal when it was
    computed. Readers use it only while it is current (no newer seal of the run, no later
    watermark) and read the rows otherwise; `ragqual verify` recomputes every current summary
    (ragqual.store.run_summaries)."""

    __tablename__ = "run_summaries"
    __table_args__ = (Index("ix_run_summaries_run", "run_id", "id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    seal_id: Mapped[int | None] = mapped_column(ForeignKey("seals.id"))
    scorer_name: Mapped[str] = mapped_column(String(128))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


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
