"""Store tests run on every backend: SQLite always, PostgreSQL when a server is given.

`RAGQUAL_TEST_PG_URL` names a PostgreSQL database whose role may create databases
(`.ci/postgres.sh start` prints one); each test gets its own fresh database, dropped
afterwards. Without the URL the PostgreSQL cases are skipped, unless
`RAGQUAL_REQUIRE_PG=1`, which turns the missing server into a failure.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.pool import NullPool

from ragqual.store import db

PG_URL_VAR = "RAGQUAL_TEST_PG_URL"
REQUIRE_PG_VAR = "RAGQUAL_REQUIRE_PG"


def _pg_server_url() -> URL:
    value = os.environ.get(PG_URL_VAR, "").strip()
    if value:
        return make_url(value)
    reason = f"PostgreSQL tests need {PG_URL_VAR} (start a server with `.ci/postgres.sh start`)"
    if os.environ.get(REQUIRE_PG_VAR) == "1":
        pytest.fail(f"{REQUIRE_PG_VAR}=1 but {PG_URL_VAR} is not set: {reason}", pytrace=False)
    pytest.skip(reason)


def _render(url: URL) -> str:
    return url.render_as_string(hide_password=False)


class PgDatabases:
    """Creates and drops throwaway databases on the server named by RAGQUAL_TEST_PG_URL."""

    def __init__(self, server: URL):
        self.server = server
        self.admin = create_engine(_render(server), isolation_level="AUTOCOMMIT", poolclass=NullPool)
        self.template: str | None = None

    def create(self, template: str | None = None) -> str:
        name = f"ragqual_t_{uuid.uuid4().hex[:12]}"
        clause = f" TEMPLATE {template}" if template else ""
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}{clause}")
        return name

    def drop(self, name: str) -> None:
        """FORCE ends sessions a failed test left open; a role that may not end them still
        drops the database once they are gone (PostgreSQL stops autovacuum on its own)."""
        try:
            with self.admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        except ProgrammingError:  # insufficient privilege to end another role's session
            with self.admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")

    def url(self, name: str) -> str:
        return _render(self.server.set(database=name))

    def head_template(self) -> str:
        """A database migrated to head once per session; tests clone it."""
        if self.template is None:
            name = self.create()
            engine = db.make_engine(self.url(name))
            db.upgrade(engine)
            engine.dispose()
            self.template = name
        return self.template


@contextmanager
def throwaway_pg_database() -> Iterator[str]:
    """The URL of an empty database on the RAGQUAL_TEST_PG_URL server, dropped afterwards (for
    tests outside tests/store that start the CLI against PostgreSQL)."""
    databases = PgDatabases(_pg_server_url())
    name = databases.create()
    try:
        yield databases.url(name)
    finally:
        databases.drop(name)
        databases.admin.dispose()


@pytest.fixture(scope="session")
def _pg_databases() -> Iterator[PgDatabases]:
    databases = PgDatabases(_pg_server_url())
    try:
        with databases.admin.connect():
            pass
    except Exception as exc:  # a URL was given, so an unreachable server is an error
        pytest.fail(f"cannot reach the PostgreSQL server in {PG_URL_VAR}: {exc}", pytrace=False)
    yield databases
    if databases.template is not None:
        databases.drop(databases.template)
    databases.admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request) -> str:
    """The database backend a store test runs on."""
    return request.param


def _pg_database(request, *, at_head: bool) -> Iterator[str]:
    databases: PgDatabases = request.getfixturevalue("_pg_databases")
    name = databases.create(databases.head_template() if at_head else None)
    try:
        yield databases.url(name)
    finally:
        databases.drop(name)


@pytest.fixture
def store_url(backend, request, tmp_path: Path) -> Iterator[str]:
    """The URL of a fresh, empty database on the backend."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    yield from _pg_database(request, at_head=False)


def head_database(backend: str, request, target: Path) -> Iterator[str]:
    """A fresh database migrated to head on the backend: a copy of the migrated template at
    `target` on SQLite, a throwaway database on PostgreSQL."""
    if backend == "sqlite":
        shutil.copyfile(request.getfixturevalue("_migrated_template"), target)
        yield f"sqlite:///{target}"
        return
    yield from _pg_database(request, at_head=True)


@pytest.fixture
def store_head_url(backend, request, tmp_path: Path) -> Iterator[str]:
    """The URL of a fresh database already migrated to head on the backend."""
    yield from head_database(backend, request, tmp_path / "head.db")


@pytest.fixture
def read_back_tables(monkeypatch) -> list[str]:
    """The tables a seal reads rows back from (`sealing.read_rows`), in order, as it happens."""
    from ragqual.store import sealing

    read: list[str] = []
    original = sealing.read_rows

    def counting(cursor, dialect, table, above=0):
        read.append(table)
        return original(cursor, dialect, table, above)

    monkeypatch.setattr(sealing, "read_rows", counting)
    return read


@pytest.fixture
def pg_head_url(request) -> Iterator[str]:
    """A fresh PostgreSQL database at head, for what only PostgreSQL has (TRUNCATE, plpgsql)."""
    yield from _pg_database(request, at_head=True)


def raw_connect(url: str):
    """A plain DB-API connection, outside SQLAlchemy and the engine's settings."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        import sqlite3

        return sqlite3.connect(parsed.database)
    import psycopg

    return psycopg.connect(_render(parsed.set(drivername="postgresql")))


def execute_raw(url: str, *statements: str) -> None:
    """Run statements on a plain DB-API connection (tampering as an outsider would) and commit."""
    con = raw_connect(url)
    try:
        for statement in statements:
            con.execute(statement)
        con.commit()
    finally:
        con.close()


def dbapi_error(url: str) -> type[Exception]:
    """The DB-API base error class of the backend of `url`."""
    if make_url(url).get_backend_name() == "sqlite":
        import sqlite3

        return sqlite3.Error
    import psycopg

    return psycopg.Error
