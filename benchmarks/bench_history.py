"""History read speed: `report`, `history` and `compare` over a large synthetic history (SQLite, PostgreSQL).

Fills a history migrated to head with `--trials` generation trials (default 1,000,000) in runs of
`--per-run` trials (3 variants x 3 modes x 3 repeats x cases), each trial with one assertion
row, one score row and three metric rows, plus `--retrieval-runs` retrieval runs (3 strategies,
17 metrics per question). The fill uses plain `executemany` in large transactions; it measures
reads, but its rate is printed too, beside the rate of `RunStore.append_trial` (one transaction
per trial, as a run appends) on a `--sample` of trials.

Each command is invoked through the real CLI entry (`ragqual --db ... report ...`, output
discarded) in this process, so the time includes opening the store and its schema check but not
Python start-up. `first` is the first call on a fresh engine (SQLite's page cache cold, the
operating system's warm; imports and the schema check are paid once before timing); `best` the
best of `--repeats`. `--reuse` times the reads again on a kept `--db` without refilling it.

With `--pg-url URL` the same history is filled into (and read from) that PostgreSQL database as
well, and the table shows both side by side; each figure has the machine's load average beside it.

The fill writes each run's `finished` event directly, so its runs have no summary row (migration
0013) and `history` reads their rows. `--summaries` first appends one for every filled run that
has no current summary, through `RunStore.append_summary` (the same computation and seal a
finishing run's `finished` transaction makes), prints how long that took, and then times the
reads, which use them. `--only history` times only the commands whose name starts with a word given.

    python benchmarks/bench_history.py [--trials 1000000] [--per-run 5000] [--db PATH] [--pg-url URL] [--reuse]
                                       [--summaries] [--only history]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any
from datetime import UTC, datetime, timedelta
from pathlib import Path

from source_trees import check_one_tree

check_one_tree()  # before anything opens a history

from ragqual.cli.commands import COMMANDS  # noqa: E402
from ragqual.cli.main import cli  # noqa: E402
from ragqual.errors import RagqualError  # noqa: E402
from ragqual.store import db  # noqa: E402
from ragqual.store.models import SEALED_TABLES  # noqa: E402
from ragqual.store.sealing import append_watermark  # noqa: E402
from ragqual.store.records import AssertionRow, Provenance, ScoreRow, TrialRecord  # noqa: E402
from ragqual.store.runstore import RunStore  # noqa: E402

VARIANTS = ("llama3.2:1b", "qwen2.5:3b", "mock")
MODES = ("oracle", "e2e", "noretrieval")
REPEATS = 3
STRATEGIES = ("dense", "sparse", "hybrid")
RETRIEVAL_METRICS = (
    "recall@1", "recall@3", "recall@5", "recall@10", "hit@1", "hit@3", "hit@5", "hit@10", "mrr",
    "ndcg@5", "ndcg@10", "map@10", "rprec", "precision@5", "contextRecall", "contextPrecision@3", "contextChars",
)
FINGERPRINT = "c0ffee" * 10 + "abcd"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TAGS = ("single-hop", "numeric", "multi-hop", "acronym", "out-of-corpus", "near-miss")


def _text(n: int, seed: int) -> str:
    word = f"token{seed % 997} "
    return (word * (n // len(word) + 1))[:n]


class Filler:
    """Bulk rows with explicit ids, so nothing has to be read back while filling."""

    def __init__(self, conn: sqlite3.Connection, per_run: int, text_chars: int, rng: random.Random):
        self.conn, self.rng = conn, rng
        self.cases = max(1, per_run // (len(VARIANTS) * len(MODES) * REPEATS))
        self.run_id = self.trial_id = self.event_id = self.row_id = 0
        self.prompt = json.dumps([{"role": "system", "content": _text(text_chars * 2 // 5, 1)},
                                  {"role": "user", "content": _text(text_chars // 10, 2)}])
        self.context = _text(text_chars * 3 // 10, 3)
        self.raw = json.dumps({"message": {"content": _text(text_chars // 10, 4)}, "done": True})
        self.parsed = json.dumps(_text(text_chars // 10, 5))

    def definitions(self) -> None:
        cur = self.conn.cursor()
        cur.executemany(
            "INSERT INTO cases (id, subject, case_id, slug, sha256, definition) VALUES (?, 'rag', ?, ?, ?, ?)",
            [(i + 1, f"q{i:04d}", f"q{i:04d}", f"{i:064x}",
              json.dumps({"id": f"q{i:04d}", "query": "?", "tags": [TAGS[i % len(TAGS)], TAGS[(i * 7) % len(TAGS)]]}))
             for i in range(self.cases)],
        )
        cur.executemany(
            "INSERT INTO variant_configs (id, sha256, name, provider, model, config) "
            "VALUES (?, ?, ?, 'ollama', ?, '{}')",
            [(i + 1, f"{i + 1:064x}", name, name) for i, name in enumerate(VARIANTS)],
        )

    def _run(self, kind: str, at: datetime) -> int:
        self.run_id += 1
        prov = json.dumps({"git_sha": f"{self.run_id:040x}", "params": {"repeats": REPEATS}})
        self.conn.execute(
            "INSERT INTO runs (id, kind, subject, started_at, argv, params, git_sha, git_dirty, ragqual_version, "
            "python_version, corpus_fingerprint, dataset_hash, prompt_hashes, provenance) "
            "VALUES (?, ?, 'rag', ?, '[]', '{}', ?, FALSE, '0.1.0', '3.11', ?, ?, '[]', ?)",
            (self.run_id, kind, at.isoformat(" "), f"{self.run_id:040x}", FINGERPRINT, "d" * 64, prov),
        )
        for offset, event in ((0, "started"), (30, "finished")):
            self.event_id += 1
            self.conn.execute("INSERT INTO run_events (id, run_id, event, at) VALUES (?, ?, ?, ?)",
                              (self.event_id, self.run_id, event, (at + timedelta(minutes=offset)).isoformat(" ")))
        return self.run_id

    def generation_run(self, at: datetime) -> int:
        run_id = self._run("generation", at)
        trials, assertions, scores, metrics = [], [], [], []
        stamp = at.isoformat(" ")
        rng = self.rng
        for case in range(self.cases):
            for variant in range(1, len(VARIANTS) + 1):
                for mode in MODES:
                    for repeat in range(REPEATS):
                        self.trial_id += 1
                        t = self.trial_id
                        passed = rng.random() < 0.8
                        score = 1.0 if passed else round(rng.random(), 3)
                        trials.append((t, run_id, case + 1, variant, mode, repeat, self.prompt, self.context,
                                       self.raw, self.parsed, rng.randint(300, 900), rng.randint(20, 200),
                                       rng.uniform(200, 3000), f"{t:064x}", rng.random() < 0.3, stamp))
                        assertions.append((t, t, f"{t:036x}", passed, stamp))
                        scores.append((t, t, f"{t:036x}", score, passed, stamp))
                        grounded = None if rng.random() < 0.3 else round(rng.random(), 3)
                        for metric, value in (("correctness", score), ("leakage", float(rng.random() < 0.05)),
                                              ("groundedness", grounded)):
                            self.row_id += 1
                            metrics.append((self.row_id, run_id, t, f"q{case:04d}", mode, metric, value, stamp))
        self.conn.executemany(
            "INSERT INTO trials (id, run_id, case_pk, variant_id, mode, repeat_index, rendered_prompt, context, "
            "raw_output, parsed_output, prompt_tokens, completion_tokens, latency_ms, cache_key, cache_hit, "
            "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", trials)
        self.conn.executemany(
            "INSERT INTO assertion_results (id, trial_id, batch, assertion_id, assertion_version, category, weight, "
            "passed, created_at) VALUES (?, ?, ?, 'must-include', 1, 'correctness', 1.0, ?, ?)", assertions)
        self.conn.executemany(
            "INSERT INTO trial_scores (id, trial_id, batch, scorer_name, scorer_version, score, perfect, "
            "per_category, created_at) VALUES (?, ?, ?, 'weighted-assertions', 1, ?, ?, '{}', ?)", scores)
        self._metrics(metrics)
        return run_id

    def _metrics(self, rows: list[tuple]) -> None:
        self.conn.executemany(
            "INSERT INTO metric_values (id, run_id, trial_id, case_id, group_key, metric, value, scorer_version, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)", rows)

    def retrieval_run(self, at: datetime) -> int:
        run_id = self._run("retrieval", at)
        stamp = at.isoformat(" ")
        rows = []
        for strategy in STRATEGIES:
            for case in range(self.cases):
                for metric in RETRIEVAL_METRICS:
                    self.row_id += 1
                    rows.append((self.row_id, run_id, None, f"q{case:04d}", strategy, metric,
                                 round(self.rng.random(), 3), stamp))
        self._metrics(rows)
        return run_id


class PgConnection:
    """The few sqlite3.Connection calls the filler makes, on a psycopg connection (`?` -> `%s`)."""

    def __init__(self, url: str):
        import psycopg

        self.raw = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)

    def execute(self, sql: str, params: tuple = ()) -> Any:
        if sql.startswith("PRAGMA"):
            return self.raw.execute("SELECT 1")
        return self.raw.execute(sql.replace("?", "%s"), params)

    def executemany(self, sql: str, rows: list) -> None:
        with self.raw.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), rows)

    def cursor(self) -> PgConnection:
        return self

    def close(self) -> None:
        self.raw.close()


def connect(url: str) -> Any:
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        return conn
    return PgConnection(url)


def fill(url: str, trials: int, per_run: int, retrieval_runs: int, text_chars: int, seed: int) -> dict:
    engine = db.make_engine(url)
    db.upgrade(engine)
    engine.dispose()
    conn = connect(url)
    filler = Filler(conn, per_run, text_chars, random.Random(seed))
    per_run_actual = filler.cases * len(VARIANTS) * len(MODES) * REPEATS
    runs = max(2, round(trials / per_run_actual))
    start = time.perf_counter()
    conn.execute("BEGIN")
    filler.definitions()
    ids: dict[str, list[int]] = {"generation": [], "retrieval": []}
    schedule = ["generation"] * runs + ["retrieval"] * retrieval_runs
    random.Random(seed).shuffle(schedule)
    for i, kind in enumerate(schedule):
        at = T0 + timedelta(hours=i)
        ids[kind].append(filler.generation_run(at) if kind == "generation" else filler.retrieval_run(at))
        if i % 10 == 9:
            conn.execute("COMMIT")
            conn.execute("BEGIN")
            print(f"  filled {filler.trial_id:,} trials", file=sys.stderr, end="\r")
    conn.execute("COMMIT")
    seconds = time.perf_counter() - start
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    _mark_filled(url)
    if not url.startswith("sqlite"):  # the planner's statistics, as autovacuum would gather them in time
        pg = connect(url)
        pg.execute("ANALYZE")
        pg.close()
    print(file=sys.stderr)
    return {"trials": filler.trial_id, "seconds": seconds, "runs": ids, "per_run": per_run_actual,
            "metric_rows": filler.row_id}


def _mark_filled(url: str) -> None:
    """The fill bypasses the run store, so no seal covers its rows and readers would leave them out:
    one watermark seal marks them as written before sealing covered them (as a backfill would)."""
    engine = db.make_engine(url)
    with engine.begin() as conn:
        append_watermark(conn, SEALED_TABLES)
    engine.dispose()


def sample_record(run_id: int, case_pk: int, variant_id: int, i: int, case_id: str) -> TrialRecord:
    """The i-th synthetic trial the append benchmarks store (10 repeats per case)."""
    return TrialRecord(
        run_id=run_id, case_pk=case_pk, variant_id=variant_id, mode="e2e", repeat_index=i % 10,
        system_prompt_id=None, rendered_prompt=[{"role": "user", "content": _text(600, i)}],
        context=_text(300, i), raw_output={"content": _text(100, i)}, parsed_output=_text(100, i), error=None,
        prompt_tokens=500, completion_tokens=80, latency_ms=900.0, load_ms=None, cost=None,
        cache_key=f"{i:064x}", cache_hit=False,
        assertions=(AssertionRow("must-include", 1, "correctness", 1.0, True),),
        scores=(ScoreRow("weighted-assertions", 1, 1.0, True, {"correctness": 1.0}),),
        metrics={"correctness": 1.0, "leakage": 0.0, "groundedness": None}, case_id=case_id,
    )


def sample_appends(url: str, count: int) -> float:
    """Trials per second through RunStore.append_trial, one transaction per trial."""
    store = RunStore.open(url, auto_create=False)
    run = store.start_run("generation", "bench-sample", Provenance(
        git_sha=None, git_dirty=None, git_note="benchmark", ragqual_version="0.1.0", python_version="3.11",
        argv=("bench",), corpus_fingerprint=FINGERPRINT))
    variant = store.intern_variant("bench", "mock", "bench", {})
    case_pks = [store.record_case("rag", f"s{i}", f"s{i}", {"id": f"s{i}", "tags": ["x"]})
                for i in range(count // 10 + 1)]
    start = time.perf_counter()
    for i in range(count):
        store.append_trial(sample_record(run, case_pks[i // 10], variant, i, f"s{i // 10}"))
    seconds = time.perf_counter() - start
    store.add_event(run, "finished")
    store.engine.dispose()
    return count / seconds


def invoke(args: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            cli.main(args=args, prog_name="ragqual", standalone_mode=False)
        except RagqualError as exc:  # compare exits 1 on a regression: still a finished command
            if exc.exit_code != 1:
                raise


def timed(fn: Callable[[], None], repeats: int) -> tuple[float, float, float, float]:
    """(first wall time, best wall time, CPU time of this process in the best call, the machine's
    1-minute load average just after the calls).

    CPU time is what the command itself costs; on a busy machine the wall time also holds the
    time it waited for a core (and with PostgreSQL, the server's own time is in neither).
    """
    times = []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - start, time.process_time() - cpu))
    best = min(times)
    return times[0][0], best[0], best[1], os.getloadavg()[0]


def existing(url: str) -> dict:
    """What a kept benchmark database holds, for timing it again without refilling it."""
    conn = connect(url)
    try:
        runs = {kind: [r for (r,) in conn.execute(
            "SELECT id FROM runs WHERE kind = ? AND subject = 'rag' AND git_sha IS NOT NULL ORDER BY id", (kind,))]
            for kind in ("generation", "retrieval")}
        trials = conn.execute("SELECT COUNT(*) FROM trials t JOIN runs r ON r.id = t.run_id "
                              "WHERE r.subject = 'rag' AND r.git_sha IS NOT NULL").fetchone()[0]
        metric_rows = conn.execute("SELECT MAX(id) FROM metric_values").fetchone()[0]
    finally:
        conn.close()
    per_run = trials // max(1, len(runs["generation"]))
    return {"trials": trials, "seconds": None, "runs": runs, "per_run": per_run, "metric_rows": metric_rows}


def pg_size(url: str) -> int:
    conn = connect(url)
    try:
        return int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])
    finally:
        conn.close()


def commands_for(filled: dict) -> dict[str, list[str]]:
    gen, ret = filled["runs"]["generation"], filled["runs"]["retrieval"]
    return {
        f"report {gen[-1]} ({filled['per_run']:,} trials)": ["report", str(gen[-1])],
        "report --by tag (same run)": ["report", str(gen[-1]), "--by", "tag"],
        f"report {ret[-1]} (retrieval)": ["report", str(ret[-1])],
        "history (newest 20 runs)": ["history"],
        "history --limit 50": ["history", "--limit", "50"],
        "history --limit 0 (all runs)": ["history", "--limit", "0"],
        f"compare {gen[-2]} {gen[-1]}": ["compare", str(gen[-2]), str(gen[-1])],
        f"compare {ret[-2]} {ret[-1]} (retrieval)": ["compare", str(ret[-2]), str(ret[-1])],
        "compare --all-metrics (retrieval)": ["compare", str(ret[-2]), str(ret[-1]), "--all-metrics"],
    }


def is_filled(url: str) -> bool:
    if url.startswith("sqlite"):
        return Path(url.removeprefix("sqlite:///")).is_file()
    engine = db.make_engine(url)
    try:
        return db.current_revision(engine) is not None
    finally:
        engine.dispose()


def measure(url: str, args: argparse.Namespace) -> dict:
    """Fill (or, with --reuse, find) the history at `url` and time the reads on it."""
    if is_filled(url) and not args.reuse:
        raise SystemExit(f"{url} already holds a history; give a new one or --reuse")
    if is_filled(url):  # a history kept from an older ragqual: upgraded in place, as `ragqual db upgrade` does
        engine = db.make_engine(url)
        db.upgrade(engine)
        engine.dispose()
    filled = existing(url) if is_filled(url) else fill(url, args.trials, args.per_run, args.retrieval_runs,
                                                      args.text_chars, args.seed)
    size = Path(url.removeprefix("sqlite:///")).stat().st_size if url.startswith("sqlite") else pg_size(url)
    invoke(["--db", url, "history", "--limit", "1"])  # the schema check (and an upgrade), untimed
    summarised = add_summaries(url, filled) if args.summaries else None
    rows = {name: timed(lambda a=argv: invoke(["--db", url, *a]), args.repeats)
            for name, argv in commands_for(filled).items() if not args.only or argv[0] in args.only}
    sample = url.startswith("sqlite") and filled["seconds"] is not None and args.sample > 0
    return {"filled": filled, "size": size, "rows": rows, "summaries": summarised, "current": current_summaries(url, filled),
            "append_rate": sample_appends(url, args.sample) if sample else None}


def current_summaries(url: str, filled: dict) -> int:
    """How many of the filled runs `history` reads from a current summary."""
    from ragqual.store import run_summaries

    engine = db.make_engine(url)
    runs = [r for kind in ("generation", "retrieval") for r in filled["runs"][kind]]
    with engine.connect() as conn:
        held = run_summaries.current_rows(conn, runs)
    engine.dispose()
    return len(held)


def add_summaries(url: str, filled: dict) -> tuple[int, float, float]:
    """Append a summary for every filled run without a current one, as its `finished` transaction
    would have: (summaries appended, wall seconds, load average after)."""
    from ragqual.store import run_summaries

    store = RunStore.open(url, auto_create=False)
    runs = [r for kind in ("generation", "retrieval") for r in filled["runs"][kind]]
    with store.engine.connect() as conn:
        held = run_summaries.current_rows(conn, runs)
    missing = [r for r in runs if r not in held]
    start = time.perf_counter()
    for n, run in enumerate(missing):
        store.append_summary(run)
        print(f"  summarised {n + 1}/{len(missing)} runs", file=sys.stderr, end="\r")
    seconds = time.perf_counter() - start
    store.engine.dispose()
    return len(missing), seconds, os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--per-run", type=int, default=5000, help="Generation trials per run (rounded to whole cases).")
    parser.add_argument("--retrieval-runs", type=int, default=20)
    parser.add_argument("--text-chars", type=int, default=1500, help="Synthetic prompt/context/output text per trial.")
    parser.add_argument("--sample", type=int, default=2000, help="Trials appended through RunStore.append_trial.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", type=Path, help="Keep the filled SQLite database here (default: a temporary folder).")
    parser.add_argument("--pg-url", help="Also fill and time the same history on this PostgreSQL database "
                                         "(empty, or filled by an earlier run with --reuse).")
    parser.add_argument("--no-sqlite", action="store_true", help="Time PostgreSQL only.")
    parser.add_argument("--reuse", action="store_true", help="Time the reads on a history filled earlier "
                                                             "(--db, --pg-url); fill only what is empty.")
    parser.add_argument("--summaries", action="store_true", help="Append a summary row for each filled run "
                                                                 "before timing (as a finishing run does).")
    parser.add_argument("--only", nargs="+", metavar="COMMAND", help="Time only these commands (history, report, compare).")
    args = parser.parse_args()

    for name in ("history", "report", "compare"):  # imports, once, untimed
        importlib.import_module(COMMANDS[name][0])
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        if not args.no_sqlite:
            results["SQLite"] = measure(f"sqlite:///{args.db or Path(tmp) / 'bench.db'}", args)
        if args.pg_url:
            results["PostgreSQL"] = measure(args.pg_url, args)
    print_results(args, results)


def print_results(args: argparse.Namespace, results: dict) -> None:
    for backend, result in results.items():
        filled, size = result["filled"], result["size"]
        total, runs = filled["trials"], filled["runs"]
        print(f"\n{backend} history: {total:,} generation trials in {len(runs['generation'])} runs of "
              f"{filled['per_run']:,} + {len(runs['retrieval'])} retrieval runs; {filled['metric_rows']:,} metric rows; "
              f"{size / 1e6:,.1f} MB = {size / total:,.0f} bytes per trial")
        if filled["seconds"]:
            print(f"  bulk fill (executemany): {total / filled['seconds']:,.0f} trials/s "
                  f"(each with 1 assertion, 1 score, 3 metric rows; ~{args.text_chars} chars of text)")
        if result["summaries"]:
            count, seconds, load = result["summaries"]
            print(f"  summaries appended for {count} runs in {seconds:.1f} s (load {load:.1f})")
        runs_total = len(runs["generation"]) + len(runs["retrieval"])
        print(f"  {result['current']} of {runs_total} runs have a current summary (read from it); "
              "the others are read from their rows")
        if result["append_rate"]:
            print(f"  RunStore.append_trial ({args.sample:,}): {result['append_rate']:,.0f} trials/s (one transaction each)")
    print(f"\nbest of {args.repeats} wall time (s), the CPU time of this process in that call (s), and the 1-minute "
          f"load average on {os.cpu_count()} cores just after the calls\n")
    names = list(next(iter(results.values()))["rows"]) if results else []
    header = " | ".join(f"{b} best | {b} CPU | load" for b in results)
    print(f"| command | {header} |")
    print("|---" * (1 + 3 * len(results)) + "|")
    for i, name in enumerate(names):
        cells = []
        for result in results.values():
            row = list(result["rows"].values())[i]
            cells += [f"{row[1]:.3f}", f"{row[2]:.3f}", f"{row[3]:.1f}"]
        print(f"| `{name}` | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
