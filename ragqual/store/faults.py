"""Storage faults in one line: which database, what went wrong, what to do (exit 4).

SQLite and PostgreSQL report a full disk, a read-only file or folder, or a vanished file as
driver errors; `translate` turns the ones that are about the storage (not about ragqual's SQL)
into a StorageFault naming the database and the fix; so are a PostgreSQL server that cannot be
reached, refuses the login or lacks the database (store.db raises them wherever an engine fails
to connect), the URL always shown with its user and password as ***. `check_identity` notices a
SQLite file deleted or replaced under a running process, which SQLite itself never reports.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError

from ragqual.core.redact import MASK
from ragqual.errors import StorageFault

_LAST_URL: list[str] = []

# (substring of the driver's message or SQLSTATE, what happened, the fix)
_SQLITE = (
    ("database or disk is full", "the disk holding it is full", "free some space and run again"),
    ("readonly database", "it is read-only", "make the file, its folder and its -wal/-shm files writable, or pass another --db"),
    ("unable to open database file", "it cannot be opened", "check that its folder exists and is writable, or pass another --db"),
    ("disk i/o error", "a disk I/O error occurred", "check the disk, then run again"),
    ("malformed", "the file is corrupt", "restore it from a copy, or pass another --db"),
    ("file is not a database", "the file is not a SQLite database", "pass the right file with --db"),
)
_POSTGRES = (
    ("53100", "the server's disk is full", "free space on the PostgreSQL server and run again"),
    ("53200", "the server ran out of memory", "retry, or check the PostgreSQL server"),
    ("25006", "the database is read-only", "point --db at a writable primary"),
    ("57p01", "the server shut down", "restart PostgreSQL and run again"),
    ("08006", "the connection to the server failed", "check that PostgreSQL is running"),
)
_OS = ("read-only file system", "no space left", "permission denied")
# A server that never opened a connection (psycopg 3 and psycopg2 wordings); it has no SQLSTATE.
_NOT_CONNECTED = (
    (("password authentication failed", "authentication failed", "no password supplied"),
     "the server refused the user or password", "check the credentials in --db"),
    (("does not exist",), "the server has no such database or user", "create it, or fix the name in --db"),
    (("connection failed", "could not connect", "connection refused", "failed to resolve host",
      "could not translate host name", "timeout expired", "no route to host", "network is unreachable"),
     "the server cannot be reached", "check that PostgreSQL is running there and accepts connections, "
                                     "or pass another --db"),
)


def remember(url: str) -> None:
    """The database the CLI opened last, for errors that reach the CLI untranslated."""
    _LAST_URL[:] = [url]


def masked_url(url: str | URL) -> str:
    """A URL for a message: everything between `://` and the last `@` (its user and password)
    becomes ***, whether or not SQLAlchemy could parse it."""
    text = url.render_as_string(hide_password=True) if isinstance(url, URL) else str(url)  # a Path too
    scheme, sep, rest = text.partition("://")
    if sep and "@" in rest:
        rest = f"{MASK}@{rest.rsplit('@', 1)[1]}"
    return scheme + sep + rest


def shown(url: str | URL | None) -> str:
    if url is None:
        url = _LAST_URL[0] if _LAST_URL else None
    if url is None:
        return "the history database"
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.get_backend_name() == "sqlite":
        return str(parsed.database or ":memory:")
    return masked_url(parsed)


def _not_connected(exc: BaseException, url: str | URL | None) -> tuple[str, str] | None:
    """(what happened, the fix) for a server that refused or never answered a connection."""
    if not isinstance(exc, DBAPIError) or isinstance(exc.orig, sqlite3.Error) or _sqlstate(exc):
        return None
    lines = str(exc.orig or exc).strip().splitlines()
    first = lines[0] if lines else ""
    for needles, what, fix in _NOT_CONNECTED:
        if any(n in first.lower() for n in needles):
            reason = first.rsplit("failed: ", 1)[-1].removeprefix("FATAL:").strip()
            password = (make_url(url) if isinstance(url, str) else url).password if url is not None else None
            return f"{what} ({reason.replace(str(password), MASK) if password else reason})", fix
    return None


def _sqlstate(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(getattr(orig, "sqlstate", "") or "").lower()


def translate(exc: BaseException, url: str | URL | None = None) -> StorageFault | None:
    """A StorageFault for a storage failure, None for anything else (re-raise that).

    Without `url` (an error that reached the CLI untranslated, of unknown origin) only an error
    raised through SQLAlchemy, which nothing but the history uses, is taken for the history's: a
    raw sqlite3 or OS error there comes from a cache folder, Qdrant's local mode or a report file.
    """
    if not isinstance(exc, (DBAPIError, OSError, sqlite3.Error)):
        return None
    if url is None and not isinstance(exc, DBAPIError):
        return None
    message = str(getattr(exc, "orig", None) or exc).lower()
    if url is None:
        url = _LAST_URL[0] if _LAST_URL else None
    where = "the history database" if url is None else f"history database {shown(url)}"
    if isinstance(exc, OSError) and not any(k in message for k in _OS):
        return None
    for needle, what, fix in _SQLITE:
        if needle in message:
            return StorageFault(f"{where}: {what}: {fix}")
    not_connected = _not_connected(exc, url)
    if not_connected is not None:
        return StorageFault(f"{where}: {not_connected[0]}: {not_connected[1]}")
    state = _sqlstate(exc)
    for code, what, fix in _POSTGRES:
        if state == code:
            return StorageFault(f"{where}: {what}: {fix}")
    if isinstance(exc, OSError):
        return StorageFault(f"{where}: {exc.strerror or exc}: make its folder writable, or pass another --db")
    return None


# Conditions of the disk itself: a storage failure whichever file met them.
_DISK = (
    _SQLITE[0],  # database or disk is full
    ("no space left", "the disk holding it is full", "free some space and run again"),
    ("disk quota exceeded", "the disk quota is used up", "free some space and run again"),
    ("read-only file system", "the file system is read-only", "write to another folder (--db, RAGQUAL_CACHE_DIR)"),
    _SQLITE[3],  # disk i/o error
)


def disk_fault(exc: BaseException) -> StorageFault | None:
    """A raw sqlite3 or OS error of unknown origin (a cache folder, Qdrant's local store, a report
    file) that is a condition of the disk: still a storage fault (exit 4), never an internal
    error, and worded without blaming the history (`translate` leaves these to it)."""
    if not isinstance(exc, (OSError, sqlite3.Error)):
        return None
    message = str(exc).lower()
    where = getattr(exc, "filename", None) or "a file ragqual writes"
    for needle, what, fix in _DISK:
        if needle in message:
            return StorageFault(f"{where}: {what}: {fix}")
    return None


@dataclass(frozen=True)
class FileIdentity:
    """A SQLite file's identity (`file_identity`): its path, device and inode."""

    path: Path
    device: int
    inode: int


def file_identity(url: str | URL) -> FileIdentity | None:
    """The SQLite file's identity (device, inode) now; None for servers, memory or a missing file."""
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    path = Path(parsed.database)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileIdentity(path, st.st_dev, st.st_ino)


def check_identity(expected: FileIdentity | None) -> None:
    """Raise when the file this process writes to was deleted or replaced by another one."""
    if expected is None:
        return
    try:
        st = os.stat(expected.path)
    except FileNotFoundError:
        raise StorageFault(
            f"history database {expected.path} was deleted while ragqual was writing to it: the rows written "
            "since are lost with it; restore the file from a copy or run again on a new database"
        ) from None
    if (st.st_dev, st.st_ino) != (expected.device, expected.inode):
        raise StorageFault(
            f"history database {expected.path} was replaced by another file while ragqual was writing to it: "
            "this run's rows went to the old file; restore the right file and run again"
        )
