"""Append rate into a large history: trials per second through `RunStore.append_trials`, by batch size.

Fills a history migrated to head with `--trials` generation trials (default 1,000,000; the filler
of benchmarks/bench_history.py, explicit ids, one watermark seal), then appends `--sample` trials
as a run appends them — each with one assertion row, one score row and three metric rows and
~1,100 characters of prompt, context and answer — in batches of 1 (one transaction per trial,
`append_trial` as ragqual did before batching), 10, 100 and 500 trials, every batch one sealed
transaction. Each line is one pass of its own trials, with the load average and this process's CPU
time beside the wall time: the machine is shared, so compare the lines side by side.

SQLite always; PostgreSQL too when RAGQUAL_TEST_PG_URL names a server whose role may create
databases (a throwaway database, dropped at the end; `--pg-trials` sets its size).

    python benchmarks/bench_append.py [--trials 1000000] [--pg-trials 1000000] [--sample 2000] [--db PATH]
                                      [--batches 1,10,100,500]

With PYTHONPATH naming another source tree (say `git archive` of an older commit), that tree's
ragqual appends instead: run both alternately on one kept `--db` to compare them side by side.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_history import FINGERPRINT, MODES, REPEATS, T0, VARIANTS, Filler, existing, fill, sample_record  # noqa: E402
from sqlalchemy import create_engine  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402
from sqlalchemy.pool import NullPool  # noqa: E402

from ragqual.store import db  # noqa: E402
from ragqual.store.models import SEALED_TABLES  # noqa: E402
from ragqual.store.records import Provenance, TrialRecord  # noqa: E402
from ragqual.store.runstore import RunStore  # noqa: E402
from ragqual.store.sealing import append_watermark  # noqa: E402

BATCHES = (1, 10, 100, 500)
PROVENANCE = Provenance(git_sha=None, git_dirty=None, git_note="benchmark", ragqual_version="0.1.0",
                        python_version="3.11", argv=("bench",), corpus_fingerprint=FINGERPRINT)


def records(store: RunStore, run_id: int, count: int, tag: str) -> list[TrialRecord]:
    """`count` trials shaped like bench_history's `sample_appends` (10 repeats per case)."""
    variant = store.intern_variant("bench", "mock", "bench", {})
    cases = store.record_cases("rag", [(f"{tag}{i}", f"{tag}{i}", {"id": f"{tag}{i}", "tags": ["x"]})
                                       for i in range(count // 10 + 1)])
    return [sample_record(run_id, cases[f"{tag}{i // 10}"], variant, i, f"{tag}{i // 10}") for i in range(count)]


def rate(url: str, batch: int, count: int) -> tuple[float, float, float]:
    """(trials/s by wall time, CPU ms per trial, load average) for `count` trials in batches of `batch`."""
    store = RunStore.open(url, auto_create=False)
    run_id = store.start_run("generation", "bench-append", PROVENANCE)
    recs = records(store, run_id, count, f"b{batch}-{uuid.uuid4().hex[:6]}-")
    start, cpu = time.perf_counter(), time.process_time()
    if batch == 1:
        for rec in recs:
            store.append_trial(rec)
    else:
        for at in range(0, count, batch):
            store.append_trials(recs[at:at + batch])
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    store.add_event(run_id, "finished")
    store.engine.dispose()
    return count / wall, used * 1000 / count, os.getloadavg()[0]


# -- PostgreSQL: the same filler through psycopg --------------------------------------------------------

class PgShim:
    """The sqlite3-connection surface `Filler` uses, over a psycopg connection: `?` becomes `%s`,
    and the two integer flags the SQLite filler writes become booleans."""

    def __init__(self, conn: Any):
        self.conn = conn

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s").replace("'[]', '{}', %s, 0, '0.1.0'", "'[]', '{}', %s, false, '0.1.0'")

    @staticmethod
    def _rows(sql: str, rows: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
        if sql.startswith("INSERT INTO trials"):  # cache_hit
            return [(*r[:14], bool(r[14]), *r[15:]) for r in rows]
        return list(rows)

    def cursor(self) -> PgShim:
        return self

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(self._sql(sql), self._rows(sql, [params])[0] if params else None)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(self._sql(sql), self._rows(sql, rows))


def fill_pg(url: str, trials: int, per_run: int, seed: int) -> tuple[int, float]:
    """Fill a PostgreSQL history at head like `bench_history.fill`: (trials, seconds)."""
    import psycopg

    engine = db.make_engine(url)
    db.upgrade(engine)
    engine.dispose()
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    start = time.perf_counter()
    with psycopg.connect(plain) as conn:
        filler = Filler(PgShim(conn), per_run, 1500, random.Random(seed))  # type: ignore[arg-type]
        per = filler.cases * len(VARIANTS) * len(MODES) * REPEATS
        filler.definitions()
        for i in range(max(2, round(trials / per))):
            filler.generation_run(T0)
            if i % 10 == 9:
                conn.commit()
                print(f"  filled {filler.trial_id:,} trials", file=sys.stderr, end="\r")
        for table in (*SEALED_TABLES, "seals", "seal_spans"):  # explicit ids: move the sequences on
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                         f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table}), false)")
        conn.commit()
    seconds = time.perf_counter() - start
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as connection:
        append_watermark(connection, SEALED_TABLES)
    engine.dispose()
    print(file=sys.stderr)
    return filler.trial_id, seconds


def pg_database() -> tuple[str, Any, str] | None:
    server = os.environ.get("RAGQUAL_TEST_PG_URL", "").strip()
    if not server:
        return None
    admin = create_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    name = f"ragqual_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    return make_url(server).set(database=name).render_as_string(hide_password=False), admin, name


def table(backend: str, trials: int, url: str, sample: int, batches: Sequence[int] = BATCHES) -> list[str]:
    lines = []
    for batch in batches:
        count = min(sample, 1000) if batch == 1 else sample
        per_second, cpu_ms, load = rate(url, batch, count)
        lines.append(f"| {backend} | {trials:,} | {batch} | {count:,} | {per_second:,.0f} | {cpu_ms:.3f} | {load:.1f} |")
        print(lines[-1], flush=True)
    return lines


def sqlite_table(path: Path, args: argparse.Namespace) -> None:
    """Fill the SQLite history at `path` (unless it exists: then it is reused) and time the appends."""
    url = f"sqlite:///{path}"
    if path.exists():
        trials = existing(url)["trials"]
    else:
        filled = fill(url, args.trials, args.per_run, 0, 1500, args.seed)
        trials = filled["trials"]
        print(f"(SQLite fill: {trials:,} trials in {filled['seconds']:.0f} s)", file=sys.stderr)
    table("SQLite", trials, url, args.sample, args.batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--pg-trials", type=int, default=1_000_000)
    parser.add_argument("--per-run", type=int, default=5000)
    parser.add_argument("--sample", type=int, default=2000, help="Trials appended per batch size.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", type=Path, help="Keep the SQLite history here; an existing file is reused, not refilled.")
    parser.add_argument("--batches", type=lambda v: [int(b) for b in v.split(",")], default=list(BATCHES),
                        help="Batch sizes to time, comma-separated (default 1,10,100,500).")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    args = parser.parse_args()

    import ragqual

    print(f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}; "
          f"ragqual from {Path(ragqual.__file__).parent.parent}")
    print("| backend | history trials | batch | trials appended | trials/s | CPU ms per trial | load |")
    print("|---|---|---|---|---|---|---|")
    if not args.no_sqlite:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite_table(args.db or Path(tmp) / "append.db", args)
    pg = None if args.no_pg else pg_database()
    if pg is not None:
        url, admin, name = pg
        try:
            trials, seconds = fill_pg(url, args.pg_trials, args.per_run, args.seed)
            print(f"(PostgreSQL fill: {trials:,} trials in {seconds:.0f} s)", file=sys.stderr)
            table("PostgreSQL", trials, url, args.sample, args.batches)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.dispose()


if __name__ == "__main__":
    main()
