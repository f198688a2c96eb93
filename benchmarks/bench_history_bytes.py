"""History bytes per trial: where the quick-start `ragqual eval` puts its bytes, table by table.

Runs `ragqual --db <temp file> eval` (the bundled corpus and goldens, every default: the mock
model, 3 repeats, all three modes) from the repository root into a fresh SQLite history, then
reads SQLite's `dbstat` table: the pages each table uses with its indexes, in bytes and in bytes
per generation trial, and the total (the file's size). A second table shows what the trials' text
columns hold (inline and in `texts`). `--measure FILE` reads an existing history instead, e.g.
one written by an older ragqual, to put the two side by side. The machine's load average is
printed beside the figures (the bytes do not depend on it; the eval's wall time does).

A third table is the floor the text alone sets: the distinct texts the eval produced, each stored
once as it is (what any plain-text layout must hold at least), each compressed on its own with
zlib (the format the sqlite3 shell's `sqlar_uncompress` reads), and all of them as one zlib stream
(how much of the text repeats across texts: contexts share chunks, answers echo contexts).

With `--pg` (and RAGQUAL_TEST_PG_URL naming a server whose role may create databases) the eval
runs into a throwaway PostgreSQL database instead, and the table shows `pg_total_relation_size`
per table (TOAST and indexes included); the database is dropped afterwards.

    python benchmarks/bench_history_bytes.py [--measure FILE] [--keep] [--pg]
"""

from __future__ import annotations

import argparse
import os
import zlib
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT_COLUMNS = ("rendered_prompt", "context", "raw_output", "parsed_output")


def _load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def run_eval(db: Path | str) -> float:
    """The quick-start eval into `db` (a file or a URL); its wall time in seconds."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragqual", "--db", str(db), "eval"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ragqual eval failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def table_bytes(con: sqlite3.Connection) -> dict[str, int]:
    """table -> bytes of its pages and of its indexes' pages (dbstat)."""
    owner = dict(con.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')"))
    out: dict[str, int] = {}
    for name, size in con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
        table = owner.get(name, name)
        out[table] = out.get(table, 0) + int(size)
    return out


def text_columns(con: sqlite3.Connection) -> list[tuple[str, int, int]]:
    """(column, bytes held inline in trials, bytes of the distinct texts it names in `texts`)."""
    has_texts = con.execute("SELECT 1 FROM sqlite_schema WHERE name = 'texts'").fetchone() is not None
    rows = []
    for column in TEXT_COLUMNS:
        inline = con.execute(f"SELECT COALESCE(SUM(LENGTH(CAST({column} AS BLOB))), 0) FROM trials").fetchone()[0]
        stored = 0
        if has_texts:
            stored = con.execute(
                f"SELECT COALESCE(SUM(LENGTH(CAST(x.body AS BLOB))), 0) FROM texts x WHERE x.sha256 IN "
                f"(SELECT {column}_sha256 FROM trials)").fetchone()[0]
        rows.append((column, int(inline), int(stored)))
    return rows


def report(db_path: Path, label: str) -> None:
    con = sqlite3.connect(db_path)
    trials = con.execute("SELECT COUNT(*) FROM trials t JOIN runs r ON r.id = t.run_id "
                         "WHERE r.kind = 'generation'").fetchone()[0]
    sizes = table_bytes(con)
    total = db_path.stat().st_size
    print(f"\n{label}: {db_path.name}, {trials} generation trials, {total:,} bytes "
          f"= {total / max(trials, 1):,.0f} B per trial   ({_load()})")
    print(f"| table (with its indexes) | bytes | B per trial | share |\n|---|---:|---:|---:|")
    for table, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        if size >= 40_000:
            print(f"| {table} | {size:,} | {size / max(trials, 1):,.0f} | {size / total:.1%} |")
    rest = sum(s for s in sizes.values() if s < 40_000)
    print(f"| (every other table) | {rest:,} | {rest / max(trials, 1):,.0f} | {rest / total:.1%} |")
    print(f"| **total** | **{total:,}** | **{total / max(trials, 1):,.0f}** | 100% |")
    print("\n| trial text column | inline in trials (bytes) | distinct texts in `texts` (bytes) |\n|---|---:|---:|")
    for column, inline, stored in text_columns(con):
        print(f"| {column} | {inline:,} | {stored:,} |")
    text_floor(con, trials, total - sizes.get("texts", 0))
    con.close()


def text_floor(con: sqlite3.Connection, trials: int, other_bytes: int) -> None:
    """The bytes the eval's distinct texts need, whatever the rows around them take."""
    has_texts = con.execute("SELECT 1 FROM sqlite_schema WHERE name = 'texts'").fetchone() is not None
    if not has_texts:
        return
    bodies = [str(b).encode() for (b,) in con.execute("SELECT body FROM texts ORDER BY id")]
    plain = sum(map(len, bodies))
    each = sum(len(zlib.compress(b, 9)) for b in bodies)
    stream = len(zlib.compress(b"".join(bodies), 9))
    per = max(trials, 1)
    print(f"\n| the text alone ({len(bodies):,} distinct texts) | bytes | B per trial |\n|---|---:|---:|")
    print(f"| stored once, as it is | {plain:,} | {plain / per:,.0f} |")
    print(f"| stored once, each text compressed (zlib) | {each:,} | {each / per:,.0f} |")
    print(f"| every text in one zlib stream (shared passages) | {stream:,} | {stream / per:,.0f} |")
    print(f"| every table but `texts`, with indexes | {other_bytes:,} | {other_bytes / per:,.0f} |")


def pg_report(server_url: str) -> None:
    """The eval into a throwaway PostgreSQL database: bytes per table, then drop it."""
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    server = make_url(server_url)
    name = f"ragqual_bytes_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = server.set(database=name)
    try:
        print(f"running `ragqual --db postgresql://.../{name} eval` ({_load()})")
        seconds = run_eval(url.render_as_string(hide_password=False))
        print(f"eval took {seconds:.1f} s wall ({_load()})")
        engine = create_engine(url, poolclass=NullPool)
        with engine.connect() as conn:
            trials = conn.execute(text("SELECT COUNT(*) FROM trials t JOIN runs r ON r.id = t.run_id "
                                       "WHERE r.kind = 'generation'")).scalar_one()
            sizes = dict(conn.execute(text(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public' AND c.relkind = 'r'")).all())
        engine.dispose()
        total = sum(sizes.values())
        print(f"\nPostgreSQL: {trials} generation trials, {total:,} bytes in tables "
              f"= {total / max(trials, 1):,.0f} B per trial   ({_load()})")
        print("| table (with TOAST and indexes) | bytes | B per trial |\n|---|---:|---:|")
        for table, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
            if size >= 100_000:
                print(f"| {table} | {size:,} | {size / max(trials, 1):,.0f} |")
        rest = sum(s for s in sizes.values() if s < 100_000)
        print(f"| (every other table) | {rest:,} | {rest / max(trials, 1):,.0f} |")
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", type=Path, help="measure this history instead of running the eval")
    parser.add_argument("--keep", action="store_true", help="keep the temporary history and print its path")
    parser.add_argument("--pg", action="store_true", help="run into a throwaway database on RAGQUAL_TEST_PG_URL")
    args = parser.parse_args()
    if args.pg:
        server = os.environ.get("RAGQUAL_TEST_PG_URL")
        if not server:
            raise SystemExit("--pg needs RAGQUAL_TEST_PG_URL (a server whose role may create databases)")
        pg_report(server)
        return
    if args.measure:
        report(args.measure, "measured")
        return
    folder = Path(tempfile.mkdtemp(prefix="ragqual-bytes-"))
    path = folder / "eval.db"
    print(f"running `ragqual --db {path} eval` from {ROOT} ({_load()})")
    seconds = run_eval(path)
    print(f"eval took {seconds:.1f} s wall ({_load()})")
    report(path, "quick-start eval")
    if args.keep:
        print(f"\nkept {path}")
    else:
        for leftover in folder.iterdir():
            leftover.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
