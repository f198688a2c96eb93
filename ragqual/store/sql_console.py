"""`ragqual sql`'s engine: one read-only statement, bounded in time, rows and reach.

SQLite (the default history):

- the file is opened `mode=ro` with `PRAGMA query_only=ON`, so nothing can be written;
- an authorizer allows reading only (SELECT, reads of tables and views, functions, recursive
  CTEs, and read-only PRAGMAs such as table_info). ATTACH, DETACH, every write and every
  schema change are refused while the statement is prepared, before any file is created;
  a statement that does not start with SELECT, WITH, VALUES, EXPLAIN or PRAGMA (VACUUM
  INTO, REINDEX, ANALYZE...) is refused before it reaches SQLite at all;
- a progress handler stops the statement at its time limit (`timeout` seconds, default 30)
  and within a fraction of a second of Ctrl-C;
- rows are streamed: `limit` rows at most (default 1000; 0 = all), fetched in small batches,
  so memory stays constant however many rows the statement would produce.

PostgreSQL: a READ ONLY transaction with `statement_timeout`, rows streamed through a
server-side cursor, rolled back at the end.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy.engine import make_url

from ragqual.errors import InputError

DEFAULT_TIMEOUT = 30.0
DEFAULT_LIMIT = 1000
BATCH = 500
_PROGRESS_STEPS = 10_000  # SQLite VM instructions between two checks of the clock and of Ctrl-C
_STARTS = ("select", "with", "values", "explain", "pragma")
_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.S)
_NAMED_PRAGMAS = frozenset({  # PRAGMA x(name): the argument names a table or an index
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list",
})
_READ_ONLY_PRAGMAS = _NAMED_PRAGMAS | frozenset({  # allowed without an argument (no assignment)
    "collation_list", "function_list", "pragma_list", "compile_options", "database_list", "user_version",
    "schema_version", "application_id", "encoding", "page_size", "page_count", "freelist_count", "data_version",
})
_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                              getattr(sqlite3, "SQLITE_RECURSIVE", 33)})


class QueryStopped(InputError):
    """The statement ran past its time limit and was stopped."""


def _refused(message: str) -> InputError:
    from ragqual.store.queries import QueryRefused

    return QueryRefused(message)


def first_keyword(sql: str) -> str:
    """The statement's first word, lower-cased, after leading blanks and comments."""
    leading = _COMMENTS.match(sql)  # always matches: every part of the pattern is optional
    rest = sql[leading.end():] if leading else sql
    match = re.match(r"[A-Za-z]+", rest)
    return match.group(0).lower() if match else ""


def check_statement(sql: str) -> None:
    """Refuse, before SQLite sees it, a statement that cannot be a read."""
    word = first_keyword(sql)
    if word not in _STARTS:
        raise _refused(f"ragqual sql is read-only and runs only SELECT, WITH, VALUES, EXPLAIN or read-only "
                       f"PRAGMA statements, not {word.upper() or 'an empty statement'}; the history is changed "
                       f"only by ragqual's own commands")


def authorize(action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None) -> int:
    """The SQLite authorizer of `ragqual sql`: reads only (see the module docstring)."""
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _NAMED_PRAGMAS or (name in _READ_ONLY_PRAGMAS and arg2 is None):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class _Stop:
    """Deadline and Ctrl-C, polled by SQLite's progress handler."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout if timeout > 0 else None
        self.interrupted = False
        self.timed_out = False

    def __call__(self) -> int:
        if self.interrupted:
            return 1
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.timed_out = True
            return 1
        return 0


@contextmanager
def _ctrl_c_sets(stop: _Stop) -> Iterator[None]:
    """While the block runs, Ctrl-C asks SQLite to stop instead of waiting for it to finish."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        stop.interrupted = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class QueryStream:
    """One statement's columns and rows, read lazily; use as a context manager.

    `columns` is None for a statement that returns no rows. Iterating yields at most `limit`
    rows (all when 0); `more` is True afterwards when the statement had rows beyond them.
    """

    def __init__(self, columns: list[str] | None, rows: Iterator[tuple[Any, ...]], close: Any):
        self.columns = columns
        self._rows = rows
        self._close = close
        self.more = False

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return self._rows

    def __enter__(self) -> QueryStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()


def open_query(url: str, sql: str, *, timeout: float = DEFAULT_TIMEOUT, limit: int = DEFAULT_LIMIT) -> QueryStream:
    """Start one read-only statement on the history at `url`; see the module docstring."""
    if timeout < 0 or limit < 0:
        raise InputError("--timeout and --limit must be 0 or more")
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite(parsed.database or "", sql, timeout, limit)
    if backend == "postgresql":
        return _postgres(url, sql, timeout, limit)
    raise InputError(f"read-only queries are supported on SQLite and PostgreSQL, not {backend}")


# -- SQLite ------------------------------------------------------------------------------------------

def _sqlite(database: str, sql: str, timeout: float, limit: int) -> QueryStream:
    if not database or database == ":memory:" or not Path(database).is_file():
        raise InputError(f"no history database at {database or ':memory:'}: run a command that records one first")
    check_statement(sql)
    conn = sqlite3.connect(f"file:{quote(str(Path(database).resolve()))}?mode=ro", uri=True,
                           check_same_thread=False)
    stop = _Stop(timeout)
    try:
        conn.execute("PRAGMA query_only=ON")
        conn.set_authorizer(authorize)
        conn.set_progress_handler(stop, _PROGRESS_STEPS)
        with _ctrl_c_sets(stop):
            cursor = _translated(lambda: conn.execute(sql), stop)
    except BaseException:
        conn.close()
        raise
    columns = [d[0] for d in cursor.description] if cursor.description is not None else None
    stream = QueryStream(columns, iter(()), conn.close)
    if columns is not None:
        stream._rows = _sqlite_rows(cursor, stop, limit, stream)
    return stream


def _sqlite_rows(cursor: sqlite3.Cursor, stop: _Stop, limit: int, stream: QueryStream) -> Iterator[tuple[Any, ...]]:
    def batches() -> Iterator[list[Any]]:
        want = BATCH if limit == 0 else min(BATCH, limit + 1)  # one row past the limit says "more"
        while True:
            with _ctrl_c_sets(stop):
                batch = _translated(lambda: cursor.fetchmany(want), stop)
            yield batch
            if stop.interrupted:
                raise KeyboardInterrupt

    yield from _limited(batches(), limit, stream)


def _translated(step: Any, stop: _Stop) -> Any:
    try:
        result = step()
    except (sqlite3.Error, sqlite3.Warning) as exc:
        raise _sqlite_error(str(exc), stop) from None
    if stop.interrupted:
        raise KeyboardInterrupt
    return result


def _sqlite_error(message: str, stop: _Stop) -> BaseException:
    if stop.interrupted:
        return KeyboardInterrupt()
    if stop.timed_out:
        return QueryStopped(f"the query ran longer than {stop.timeout:g} s and was stopped: narrow it, or allow "
                            f"more time with --timeout SECONDS (0 = no limit)")
    lowered = message.lower()
    if "not authorized" in lowered or "readonly" in lowered or "read-only" in lowered:
        return _refused(f"ragqual sql is read-only and the statement would write or reach outside the history "
                        f"({message}); ATTACH, VACUUM and every write are refused, and the history is changed "
                        f"only by ragqual's own commands")
    return _refused(f"the query failed: {message}")


# -- PostgreSQL ----------------------------------------------------------------------------------------

def _postgres(url: str, sql: str, timeout: float, limit: int) -> QueryStream:
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DBAPIError

    engine = create_engine(url)
    conn = engine.connect()

    def close() -> None:
        try:
            conn.rollback()
            conn.close()
        finally:
            engine.dispose()

    try:
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout * 1000)}")
        result = conn.execution_options(stream_results=True, yield_per=BATCH).exec_driver_sql(sql)
    except DBAPIError as exc:
        close()
        raise _postgres_error(str(exc.orig).strip(), timeout) from None
    except BaseException:
        close()
        raise
    if not result.returns_rows:
        return QueryStream(None, iter(()), close)
    stream = QueryStream(list(result.keys()), iter(()), close)
    stream._rows = _postgres_rows(result, limit, stream, timeout)
    return stream


def _postgres_rows(result: Any, limit: int, stream: QueryStream, timeout: float) -> Iterator[tuple[Any, ...]]:
    from sqlalchemy.exc import DBAPIError

    def batches() -> Iterator[Sequence[Any]]:
        while True:
            try:
                yield result.fetchmany(BATCH)
            except DBAPIError as exc:
                raise _postgres_error(str(exc.orig).strip(), timeout) from None

    yield from _limited(batches(), limit, stream)


def _limited(batches: Iterator[Sequence[Any]], limit: int, stream: QueryStream) -> Iterator[tuple[Any, ...]]:
    """Rows of the batches until an empty batch or `limit` rows (0 = all); a row past the
    limit sets `stream.more`."""
    sent = 0
    for batch in batches:
        if not batch:
            return
        for row in batch:
            if limit and sent == limit:
                stream.more = True
                return
            sent += 1
            yield tuple(row)


def _postgres_error(message: str, timeout: float) -> InputError:
    lowered = message.lower()
    if "statement timeout" in lowered:
        return QueryStopped(f"the query ran longer than {timeout:g} s and was stopped: narrow it, or allow "
                            f"more time with --timeout SECONDS (0 = no limit)")
    if "read-only" in lowered or "read only" in lowered:
        return _refused(f"ragqual sql is read-only and the statement would write ({message}); "
                        "the history is changed only by ragqual's own commands")
    return _refused(f"the query failed: {message}")
