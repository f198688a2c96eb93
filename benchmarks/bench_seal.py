"""The cost of sealing: ms per 1,000 trials appended with and without seals, and of `verify`.

Each trial is appended the way a run appends it — `RunStore.append_trial`, one transaction with
the trial, one assertion row, one score row and three metric rows — into a fresh history at head,
once with sealing on (the default) and once with `RunStore(..., seal=False)`. A retrieval run's
bulk append (`append_rankings`: 20 questions ranked 1000 deep, 20,000 ranked chunks stored as 20
`retrieval_rankings` rows in one transaction, migration 0007) is timed the same way. `verify` is timed over the sealed history. Best of `--repeats` per line. SQLite always;
PostgreSQL too when RAGQUAL_TEST_PG_URL names a server whose role may create databases.

A second table stores one Vaswani-sized retrieval run (3 strategies x 93 questions ranked 1000
deep: 279,000 ranked chunks) both ways, each into a fresh history at head, sealed: as ragqual did
before migration 0007 (one `retrieval_results` row per rank, built as one tuple per rank and
appended in one sealed transaction, exactly what `append_retrieval_results` was) and as it does now
(`append_rankings`, one `retrieval_rankings` row per strategy and question). Each line times building
the rows from the same candidate lists plus appending and sealing them, reading the run back with
`retrieval_reads.retrieval_hits` (every hit as a row), `verify`, and the database's growth.

    python benchmarks/bench_seal.py [--trials 1000] [--repeats 3] [--no-vaswani]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from ragqual.store import db, sealing
from ragqual.store.models import RetrievalResult
from ragqual.store.records import AssertionRow, Provenance, RankingRow, RetrievalRow, ScoreRow, TrialRecord
from ragqual.store.retrieval_reads import retrieval_hits
from ragqual.store.runstore import RunStore, bulk_insert_tuples, table_of
from ragqual.store.verify import verify

PROVENANCE = Provenance(git_sha="abc", git_dirty=False, git_note="ok", ragqual_version="0", python_version="3",
                        argv=("bench",), params={"k": 5})
RANKINGS, DEPTH = 20, 1000
RETRIEVAL_ROWS = RANKINGS * DEPTH


def _trial(run_id: int, case_pk: int, variant: int, n: int) -> TrialRecord:
    return TrialRecord(
        run_id=run_id, case_pk=case_pk, variant_id=variant, mode="e2e", repeat_index=n, system_prompt_id=None,
        rendered_prompt=[{"role": "user", "content": f"question {n}"}], context="context " * 40,
        raw_output={"text": f"answer {n}"}, parsed_output=f"answer {n}", error=None, prompt_tokens=120,
        completion_tokens=20, latency_ms=35.0, load_ms=None, cost=None, cache_key=f"{n:064d}", cache_hit=False,
        assertions=(AssertionRow("a1", 1, "correctness", 1.0, n % 2 == 0),),
        scores=(ScoreRow("weighted-assertions", 1, float(n % 2 == 0), n % 2 == 0, {"correctness": 1.0}),),
        metrics={"correctness": 1.0, "refusal": 0.0, "groundedness": 1.0}, case_id="case-1",
    )


STRATEGIES, QUESTIONS, VASWANI_DEPTH = ("bm25", "dense", "hybrid"), 93, 1000
Candidates = dict[tuple[str, str], list[tuple[str, str, float]]]


def _candidates() -> Candidates:
    """(strategy, question) -> ranked (chunk_id, doc_id, score), shaped like Vaswani's."""
    rnd = random.Random(16)
    out: Candidates = {}
    for strategy in STRATEGIES:
        for q in range(1, QUESTIONS + 1):
            docs = rnd.sample(range(1, 11430), VASWANI_DEPTH)
            scores = sorted((round(rnd.uniform(0, 20), 6) for _ in docs), reverse=True)
            out[(strategy, str(q))] = [(f"{d}#0", str(d), s) for d, s in zip(docs, scores)]
    return out


def _one_row_per_rank(engine: Engine, run: int, candidates: Candidates) -> None:
    """How a run stored its rankings before migration 0007 (RunStore.append_retrieval_results)."""
    rows = [RetrievalRow(s, q, rank, c, d, score) for (s, q), ranked in candidates.items()
            for rank, (c, d, score) in enumerate(ranked, start=1)]
    columns = ("run_id", "strategy", "query_id", "rank", "chunk_id", "doc_id", "score")
    with Session(engine) as session, session.begin():
        sealing.lock(session)
        before = sealing.high_water(session)
        bulk_insert_tuples(session, table_of(RetrievalResult), columns, [(run, *r) for r in rows])
        sealing.seal(session, before, run)


def _one_row_per_ranking(store: RunStore, run: int, candidates: Candidates) -> None:
    store.append_rankings(run, [RankingRow(s, q, [c for c, _, _ in ranked], [d for _, d, _ in ranked],
                                           [score for _, _, score in ranked]) for (s, q), ranked in candidates.items()])


def _size(engine: Engine) -> int:
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            return int(conn.exec_driver_sql("SELECT page_count * page_size FROM pragma_page_count(), "
                                            "pragma_page_size()").scalar_one())
        return int(conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar_one())


def _measure_layout(url: str, compact: bool, candidates: Candidates) -> tuple[float, float, float, float]:
    """(build + append + seal ms, read back ms, verify ms, growth MB) of one Vaswani-sized run."""
    engine = db.make_engine(url)
    db.ensure_at_head(engine, auto_create=True)
    store = RunStore(engine)
    run = store.start_run("retrieval", "bench", PROVENANCE)
    empty = _size(engine)
    write = _timed(lambda: _one_row_per_ranking(store, run, candidates) if compact
                   else _one_row_per_rank(engine, run, candidates))
    growth = (_size(engine) - empty) / 1e6
    hits: list[RetrievalRow] = []
    read = _timed(lambda: hits.extend(retrieval_hits(engine, run)))
    assert len(hits) == len(STRATEGIES) * QUESTIONS * VASWANI_DEPTH
    checked = _timed(lambda: verify(engine))
    engine.dispose()
    return write, read, checked, growth


def _vaswani_table(databases: _Databases, repeats: int) -> None:
    candidates = _candidates()
    print(f"\none Vaswani-sized retrieval run: {len(STRATEGIES)} strategies x {QUESTIONS} questions x "
          f"{VASWANI_DEPTH} ranked chunks, sealed; best of {repeats}\n")
    print("| backend | layout | rows | build + append + seal ms | read back ms | verify ms | MB |")
    print("|---|---|---|---|---|---|---|")
    for backend in databases.backends():
        runs: dict[bool, list[tuple[float, float, float, float]]] = {False: [], True: []}
        for _ in range(repeats):
            for compact in (False, True):
                runs[compact].append(_measure_layout(databases.fresh(backend), compact, candidates))
        for compact, (layout, rows) in ((False, ("one row per rank (before 0007)", len(STRATEGIES) * QUESTIONS
                                                 * VASWANI_DEPTH)), (True, ("one row per ranking", len(candidates)))):
            best = [min(r[i] for r in runs[compact]) for i in range(4)]
            print(f"| {backend} | {layout} | {rows:,} | {best[0]:.0f} | {best[1]:.0f} | {best[2]:.0f} | {best[3]:.1f} |")


def _timed(action: Callable[[], None]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def _measure(url: str, trials: int, seal: bool) -> tuple[float, float, float | None]:
    engine = db.make_engine(url)
    db.ensure_at_head(engine, auto_create=True)
    store = RunStore(engine, seal=seal)
    run = store.start_run("generation", "bench", PROVENANCE)
    case_pk = store.record_case("bench", "case-1", "case-1", {"q": "?"})
    variant = store.intern_variant("mock", "mock", "mock", {})
    append = _timed(lambda: [store.append_trial(_trial(run, case_pk, variant, n)) for n in range(trials)])
    rankings = [RankingRow("dense", f"q{q}", [f"doc-{q}-{r}#0" for r in range(DEPTH)],
                           [f"doc-{q}-{r}" for r in range(DEPTH)], [round(1 / (r + 1), 6) for r in range(DEPTH)])
                for q in range(RANKINGS)]
    bulk = _timed(lambda: store.append_rankings(run, rankings))
    store.add_event(run, "finished")
    checked = _timed(lambda: verify(engine)) if seal else None
    engine.dispose()
    return append * 1000 / trials, bulk, checked


class _Databases:
    """Fresh databases: SQLite files in a temp folder, PostgreSQL ones on the server given."""

    def __init__(self, folder: Path):
        self.folder = folder
        pg = os.environ.get("RAGQUAL_TEST_PG_URL", "").strip()
        self.pg = make_url(pg) if pg else None
        self.admin = create_engine(pg, isolation_level="AUTOCOMMIT", poolclass=NullPool) if pg else None
        self.made: list[str] = []

    def backends(self) -> list[str]:
        return ["sqlite"] + (["postgresql"] if self.pg is not None else [])

    def fresh(self, backend: str) -> str:
        name = f"ragqual_bench_{uuid.uuid4().hex[:10]}"
        if backend == "sqlite":
            return f"sqlite:///{self.folder / (name + '.db')}"
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        self.made.append(name)
        return self.pg.set(database=name).render_as_string(hide_password=False)

    def close(self) -> None:
        if self.admin is None:
            return
        with self.admin.connect() as conn:
            for name in self.made:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-vaswani", action="store_true", help="skip the Vaswani-sized layout table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        databases = _Databases(Path(tmp))
        try:
            print(f"{args.trials} trials (1 assertion, 1 score, 3 metric rows each, one transaction per trial); "
                  f"{RETRIEVAL_ROWS} ranked chunks ({RANKINGS} rankings of {DEPTH}) in one transaction; "
                  f"best of {args.repeats}\n")
            print("| backend | sealing | ms per 1,000 trials | ms per 20,000 ranked chunks | verify ms |")
            print("|---|---|---|---|---|")
            for backend in databases.backends():
                runs: dict[bool, list[tuple[float, float, float | None]]] = {False: [], True: []}
                for _ in range(args.repeats):  # alternate, so a busy moment of the machine hits both
                    for seal in (False, True):
                        runs[seal].append(_measure(databases.fresh(backend), args.trials, seal))
                for seal in (False, True):
                    per_k = min(r[0] for r in runs[seal])
                    bulk = min(r[1] for r in runs[seal])
                    checked = "-" if not seal else f"{min(r[2] for r in runs[seal]):.0f}"
                    print(f"| {backend} | {'on' if seal else 'off'} | {per_k:.0f} | {bulk:.0f} | {checked} |")
            if not args.no_vaswani:
                _vaswani_table(databases, args.repeats)
        finally:
            databases.close()


if __name__ == "__main__":
    main()
