"""Build small, real histories for store and report tests."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, inspect
from sqlalchemy.orm import Session

from ragqual.store import sealing
from ragqual.store.models import SEALED_TABLES, RetrievalResult
from ragqual.store.records import AssertionRow, Provenance, RetrievalRow, ScoreRow, TrialRecord
from ragqual.store.runstore import RunStore, bulk_insert_tuples, table_of

CONTEXT = "[1] ctx: the chunks the retrieval pipeline injected for this question, stored once by hash"
OLD_RETRIEVAL_COLUMNS = ("run_id", "strategy", "query_id", "rank", "chunk_id", "doc_id", "score")


def provenance(**over) -> Provenance:
    base = dict(git_sha="abc123", git_dirty=False, git_note="ok", ragqual_version="0.1.0",
                python_version="3.11.7", argv=("ragqual", "test"), corpus_fingerprint="f" * 64,
                dataset_hash="d" * 64, params={"k": 5})
    base.update(over)
    return Provenance(**base)


def add_trial(store: RunStore, run_id: int, *, case: str = "case-1", repeat: int = 0, mode: str = "e2e",
              passed: bool = True, score: float = 1.0) -> int:
    case_pk = store.record_case("rag", case, case, {"id": case, "query": "q?"})
    variant = store.intern_variant("mock", "mock", "mock", {"temperature": 0})
    prompt = store.intern_system_prompt("You answer from context.")
    return store.append_trial(TrialRecord(
        run_id=run_id, case_pk=case_pk, variant_id=variant, mode=mode, repeat_index=repeat,
        system_prompt_id=prompt, rendered_prompt=[{"role": "user", "content": "q?"}], context=CONTEXT,
        raw_output={"text": "answer"}, parsed_output="answer", error=None, prompt_tokens=10,
        completion_tokens=3, latency_ms=12.5, load_ms=None, cost=None, cache_key="k" * 64, cache_hit=False,
        assertions=(AssertionRow("a1", 1, "correctness", 1.0, passed),),
        scores=(ScoreRow("weighted-assertions", 1, score, passed, {"correctness": score}),),
        metrics={"correctness": 1.0 if passed else 0.0}, case_id=case,
    ))


def append_old_layout_hits(engine: Engine, run_id: int, rows: Sequence[RetrievalRow]) -> None:
    """Ranked hits the way ragqual stored them before migration 0007: one `retrieval_results` row
    per rank, appended and sealed in one transaction (on a database at 0004-0006 as well as at head)."""
    present = set(inspect(engine).get_table_names())
    tables = tuple(t for t in SEALED_TABLES if t in present)
    with Session(engine) as session, session.begin():
        sealing.lock(session)
        before = sealing.high_water(session, tables)
        bulk_insert_tuples(session, table_of(RetrievalResult), OLD_RETRIEVAL_COLUMNS, [(run_id, *r) for r in rows])
        sealing.seal(session, before, run_id, spans="seal_spans" in present)


def add_review_rows(store: RunStore, run_id: int, trial_id: int) -> None:
    """One row in each table of the judge tier and of prices for `trial_id` of `run_id`: a human
    label, a judge run with one verdict (with a `run_summaries` row), an audit, a
    price snapshot and a cost row."""
    from datetime import UTC, datetime

    from ragqual.store.judgements import AuditRow, JudgementRow, append_audit, append_judgements
    from ragqual.store.labels import LabelRow, append_labels

    append_labels(store, [LabelRow(run_id, trial_id, "faithfulness", "yes", "ann",
                                   datetime(2026, 12, 1, tzinfo=UTC), "tui")])
    judge = store.start_run("judge", "rag", provenance())
    append_judgements(store, judge, run_id, [JudgementRow(trial_id, "faithfulness", 0.8, "yes", "logprobs", 1,
                                                          "a" * 64, "mock", "mock-judge-v1", 0, "k" * 64, False,
                                                          {"text": "yes"})])
    store.append_summary(judge)
    append_audit(store, AuditRow(run_id, "judge:faithfulness", "a" * 64, "mock", "mock-judge-v1", {"kappa": 0.5}))
    snapshot, _ = store.intern_pricing_snapshot({"models": []})
    store.append_costs(run_id, snapshot, [(trial_id, None, None)])
