"""`ragqual sql`'s engine: one read-only statement, bounded in time, rows and reach.

SQLite (the default history):

- the file is opened `mode=ro` with `PRAGMA query_only=ON`, so nothing can be written;
- an authorizer allows reading only (SELECT, reads of tables and views, functions, recursive
  CTEs, and read-only PRAGMAs such as table_info). ATTACH, DETACH, every write and every
  schema change are refused while the statement is prepared, before any file is created;
  a statement that does not start with SELECT, WITH, VALUES, EXPLAIN or PRAGMA (VACUUM
  INTO, REINDEX, ANALYZE...) is refused before it reaches SQLite at all;
- functions and virtual tables that expose pointers, load code or reach files
  (`fts3_tokenizer`, `fts5`, `load_extension`, `readfile`, `sqlite_dbpage`...) are refused by
  the same authorizer (DENIED_FUNCTIONS, DENIED_TABLES);
- a progress handler stops the statement at its time limit (`timeout` seconds, default 30)
  and within a fraction of a second of Ctrl-C;
- rows are streamed: `limit` rows at most (default 1000; 0 = all), fetched in small batches,
  so memory stays constant however many rows the statement would produce;
- the rows returned hold `max_bytes` bytes at most (default 64 MiB; 0 = no bound). Each value
  is bounded before SQLite builds it: SQLITE_LIMIT_LENGTH is set to `max_bytes` shared by the
  statement's result columns (read from its EXPLAIN), so `zeroblob(300000000)` fails inside
  SQLite; the rows are then counted one by one as they are fetched, and the statement stops
  at the first row past the bound (QueryStopped, exit 2).

PostgreSQL: the same first-word rule, a READ ONLY transaction with `statement_timeout`, rows
streamed through a server-side cursor in fetches sized from the rows so far and counted the same
way, rolled back at the end. A statement naming a function that reads server files, large
objects or other servers, runs SQL from a string or changes settings (PG_DENIED_FUNCTIONS) is
refused before it is sent; the name is looked for anywhere in the text, quoted or not, so a
string that merely mentions one is refused too. A single PostgreSQL value (at most 1 GB) is
received whole before it is counted.
"""

from __future__ import annotations

import itertools
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

from ragqual.errors import InputError
from ragqual.store import db

DEFAULT_TIMEOUT = 30.0
DEFAULT_LIMIT = 1000
DEFAULT_MAX_BYTES = 64 * 2**20
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
DENIED_FUNCTIONS = frozenset({  # SQLite: return or take pointers, load code, read or write files
    "fts3_tokenizer", "fts5", "load_extension", "readfile", "writefile", "edit", "sqlite_dbpage",
    "sqlite_dbdata", "sqlite_dbptr", "fsdir", "zipfile", "carray",
})
DENIED_TABLES = frozenset({  # SQLite virtual tables over raw pages, pointers or files
    "sqlite_dbpage", "sqlite_dbdata", "sqlite_dbptr", "fsdir", "zipfile", "carray",
})
PG_DENIED_FUNCTIONS = frozenset({
    "pg_read_file", "pg_read_binary_file", "pg_stat_file", "pg_ls_dir", "pg_ls_logdir", "pg_ls_waldir",
    "pg_ls_tmpdir", "pg_ls_archive_statusdir", "pg_ls_logicalsnapdir", "pg_ls_logicalmapdir",
    "pg_ls_replslotdir", "pg_file_write", "pg_file_rename", "pg_file_unlink", "pg_logdir_ls",
    "loread", "lowrite", "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema",
    "cursor_to_xml", "cursor_to_xmlschema", "set_config", "pg_terminate_backend", "pg_cancel_backend",
    "pg_reload_conf", "pg_rotate_logfile", "pg_promote", "pg_switch_wal", "pg_notify",
})
_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})
_PG_DENIED_PREFIXES = ("lo_", "dblink")  # every large-object function; dblink's whole family
_PG_WORDS = re.compile(r"[a-z_][a-z0-9_$]*")


class QueryStopped(InputError):
    """The statement ran past its time limit, or its rows past their byte bound, and was stopped."""


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
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_READ and (arg1 or "").lower() in DENIED_TABLES:
        return sqlite3.SQLITE_DENY
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and (arg1 or "").lower() in _SCHEMA_TABLES and db_name == "main":
        # SQLite asks this when it builds an eponymous virtual table (json_each, pragma_table_info...)
        # on first use; nothing is written: the file is opened read-only with query_only=ON
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


def open_query(url: str, sql: str, *, timeout: float = DEFAULT_TIMEOUT, limit: int = DEFAULT_LIMIT,
               max_bytes: int = DEFAULT_MAX_BYTES) -> QueryStream:
    """Start one read-only statement on the history at `url`; see the module docstring."""
    if timeout < 0 or limit < 0 or max_bytes < 0:
        raise InputError("--timeout, --limit and --max-bytes must be 0 or more")
    parsed = db.parse_url(url)
    backend = parsed.get_backend_name()
    bounds = _Bounds(timeout, limit, max_bytes)
    if backend == "sqlite":
        return _sqlite(parsed.database or "", sql, bounds)
    if backend == "postgresql":
        return _postgres(url, sql, bounds)
    raise InputError(f"read-only queries are supported on SQLite and PostgreSQL, not {backend}")


class _Bounds:
    """A statement's limits, and the bytes of the rows counted so far against `max_bytes`."""

    def __init__(self, timeout: float, limit: int, max_bytes: int):
        self.timeout = timeout
        self.limit = limit
        self.max_bytes = max_bytes
        self.columns = 1  # result columns sharing max_bytes, value by value (SQLite)
        self.used = 0
        self.counted = 0

    @property
    def per_value(self) -> int:
        """The longest string or blob SQLite may build: max_bytes shared by the result columns."""
        return max(1, self.max_bytes // max(1, self.columns))

    def take(self, row: Sequence[Any]) -> None:
        """Count one fetched row (not the one past `limit`, which is only looked at); raise
        once the rows hold more than `max_bytes`. Written for speed: it runs once per row."""
        if self.limit and self.counted >= self.limit:
            return
        self.counted += 1
        if not self.max_bytes:
            return
        used = self.used
        for value in row:
            kind = type(value)
            if kind is str:
                used += len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
            elif kind is int or kind is float or value is None:
                used += 8
            else:
                used += value_bytes(value)
        self.used = used
        if used > self.max_bytes:
            raise too_many_bytes(self)

    def next_fetch(self) -> int:
        """How many rows to fetch next: BATCH while rows are small, fewer as they grow, so one
        fetch holds about half the bytes still allowed."""
        most = min(BATCH, self.limit + 1 - self.counted) if self.limit else BATCH  # +1: the row that says "more"
        if not self.max_bytes or not self.counted:
            return 1 if self.max_bytes else max(1, most)
        per_row = max(1, self.used // self.counted)
        return max(1, min(most, (self.max_bytes - self.used) // (2 * per_row)))


def value_bytes(value: Any) -> int:
    """The bytes one value counts for: a string's UTF-8 length, a blob's length, 8 for a number
    or NULL, and the length of its text for anything else (PostgreSQL JSON, arrays, decimals)."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    if value is None or isinstance(value, (int, float)):
        return 8
    return len(str(value))


def too_many_bytes(bounds: _Bounds, single: bool = False) -> QueryStopped:
    shared = f", shared by {bounds.columns} columns" if bounds.columns > 1 else ""
    what = (f"a value in the result (or one computed on the way to it) is longer than {bounds.per_value:,} "
            f"bytes (--max-bytes {bounds.max_bytes:,}{shared})" if single
            else f"its rows hold more than --max-bytes {bounds.max_bytes:,} bytes")
    return QueryStopped(f"the query was stopped: {what}; nothing more is printed. Select fewer rows or "
                        f"columns (substr(), length(), LIMIT), or allow more with --max-bytes N (0 = no bound)")


# -- SQLite ------------------------------------------------------------------------------------------

def _sqlite(database: str, sql: str, bounds: _Bounds) -> QueryStream:
    if not database or database == ":memory:" or not Path(database).is_file():
        raise InputError(f"no history database at {database or ':memory:'}: run a command that records one first")
    check_statement(sql)
    conn = sqlite3.connect(f"file:{quote(str(Path(database).resolve()))}?mode=ro", uri=True,
                           check_same_thread=False)
    stop = _Stop(bounds.timeout)
    try:
        conn.execute("PRAGMA query_only=ON")
        conn.set_authorizer(authorize)
        conn.set_progress_handler(stop, _PROGRESS_STEPS)
        with _ctrl_c_sets(stop):
            if bounds.max_bytes:
                bounds.columns = _translated(lambda: result_columns(conn, sql), stop, bounds)
                text_bytes = len(sql.encode("utf-8", "surrogatepass")) + 1  # SQLite bounds the statement too
                conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(bounds.per_value, text_bytes))
            cursor = _translated(lambda: conn.execute(sql), stop, bounds)
    except BaseException:
        conn.close()
        raise
    names = [d[0] for d in cursor.description] if cursor.description is not None else None
    stream = QueryStream(names, iter(()), conn.close)
    if names is not None:
        stream._rows = _sqlite_rows(cursor, stop, bounds, stream)
    return stream


def result_columns(conn: sqlite3.Connection, sql: str) -> int:
    """How many columns the statement returns, from its bytecode (EXPLAIN prepares it, through
    the same authorizer, without running it): the widest ResultRow. 8 for an EXPLAIN itself."""
    if first_keyword(sql) == "explain":
        return 8
    widths = [row[3] for row in conn.execute("EXPLAIN " + sql) if row[1] == "ResultRow"]
    return max(widths, default=1)


def _sqlite_rows(cursor: sqlite3.Cursor, stop: _Stop, bounds: _Bounds, stream: QueryStream) -> Iterator[tuple[Any, ...]]:
    limit = bounds.limit

    def fetch(want: int) -> list[Any]:
        if not bounds.max_bytes:
            return cursor.fetchmany(want)
        rows = []
        for row in itertools.islice(cursor, want):  # one row at a time: the count stops within one row
            bounds.take(row)
            rows.append(row)
        return rows

    def batches() -> Iterator[list[Any]]:
        want = BATCH if limit == 0 else min(BATCH, limit + 1)  # one row past the limit says "more"
        while True:
            with _ctrl_c_sets(stop):
                batch = _translated(lambda: fetch(want), stop, bounds)
            yield batch
            if stop.interrupted:
                raise KeyboardInterrupt

    yield from _limited(batches(), limit, stream)


def _translated(step: Any, stop: _Stop, bounds: _Bounds) -> Any:
    try:
        result = step()
    except (sqlite3.Error, sqlite3.Warning) as exc:
        raise _sqlite_error(str(exc), stop, bounds) from None
    if stop.interrupted:
        raise KeyboardInterrupt
    return result


def _sqlite_error(message: str, stop: _Stop, bounds: _Bounds) -> BaseException:
    if stop.interrupted:
        return KeyboardInterrupt()
    if stop.timed_out:
        return QueryStopped(f"the query ran longer than {stop.timeout:g} s and was stopped: narrow it, or allow "
                            f"more time with --timeout SECONDS (0 = no limit)")
    lowered = message.lower()
    if "string or blob too big" in lowered and bounds.max_bytes:
        return too_many_bytes(bounds, single=True)
    if "not authorized" in lowered or "readonly" in lowered or "read-only" in lowered:
        return _refused(f"ragqual sql is read-only and the statement would write or reach outside the history "
                        f"({message}); ATTACH, VACUUM, every write and the functions that expose pointers, load "
                        f"code or read files are refused, and the history is changed only by ragqual's own commands")
    return _refused(f"the query failed: {message}")


# -- PostgreSQL ----------------------------------------------------------------------------------------

def check_postgres_statement(sql: str) -> None:
    """Refuse, before PostgreSQL sees it, a statement that is not a read or names a function
    of PG_DENIED_FUNCTIONS anywhere in its text."""
    if first_keyword(sql) != "table":
        check_statement(sql)
    lowered = sql.lower()
    if "u&'" in lowered or 'u&"' in lowered:
        raise _refused("ragqual sql refuses U& escapes in names and strings: write them plainly")
    for word in sorted(set(_PG_WORDS.findall(lowered))):
        if word in PG_DENIED_FUNCTIONS or word.startswith(_PG_DENIED_PREFIXES):
            raise _refused(f"ragqual sql refuses {word}: functions that read server files, large objects or "
                           f"other servers, run SQL from a string or change settings are not run, even when "
                           f"the name only appears in a string or a comment")


def _postgres(url: str, sql: str, bounds: _Bounds) -> QueryStream:
    from sqlalchemy.exc import DBAPIError

    check_postgres_statement(sql)
    engine = db.make_engine(url)
    conn = engine.connect()

    def close() -> None:
        try:
            conn.rollback()
            conn.close()
        finally:
            engine.dispose()

    try:
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(bounds.timeout * 1000)}")
        result = conn.execution_options(stream_results=True, max_row_buffer=BATCH).exec_driver_sql(sql)
    except DBAPIError as exc:
        close()
        raise _postgres_error(str(exc.orig).strip(), bounds.timeout) from None
    except BaseException:
        close()
        raise
    if not result.returns_rows:
        return QueryStream(None, iter(()), close)
    stream = QueryStream(list(result.keys()), iter(()), close)
    stream._rows = _postgres_rows(result, bounds, stream)
    return stream


def _postgres_rows(result: Any, bounds: _Bounds, stream: QueryStream) -> Iterator[tuple[Any, ...]]:
    from sqlalchemy.exc import DBAPIError

    def batches() -> Iterator[Sequence[Any]]:
        while True:
            try:
                batch = result.fetchmany(bounds.next_fetch())
            except DBAPIError as exc:
                raise _postgres_error(str(exc.orig).strip(), bounds.timeout) from None
            for row in batch:
                bounds.take(row)
            yield batch

    yield from _limited(batches(), bounds.limit, stream)


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
