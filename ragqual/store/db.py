"""Engines and migrations: open a history database at head, or say how to get it there."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from ragqual.errors import InputError, SchemaOutOfDate
from ragqual.store import faults

if TYPE_CHECKING:  # alembic loads only to migrate or to list the script folder
    from alembic.config import Config

BUSY_TIMEOUT_MS = 30_000

HEAD_REVISION = "0014"
"""The newest migration. Every command checks the database against it, so it is a constant
rather than a read of the script folder (~0.2 s of Alembic import and parsing per command);
tests/store/test_migrations.py keeps it equal to the script folder's head."""


def migrations_dir() -> Path:
    """The Alembic script folder: the installed ragqual.migrations package, else the checkout's."""
    try:
        packaged = Path(str(resources.files("ragqual.migrations")))
        if (packaged / "env.py").is_file():
            return packaged
    except ModuleNotFoundError:
        pass
    checkout = Path(__file__).resolve().parents[2] / "migrations"
    if (checkout / "env.py").is_file():
        return checkout
    raise InputError("the ragqual migrations are missing from this installation")


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


WRITE_OPTION = "ragqual_write"
"""Execution option of the writers' engine: SQLite transactions begin IMMEDIATE (take the write
lock first), PostgreSQL writers take the advisory lock (ragqual.store.sealing.lock)."""


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
    # SQLAlchemy, not the driver, begins transactions (see _sqlite_begin): DDL becomes
    # transactional and a writer can take the write lock before it reads.
    dbapi_conn.isolation_level = None


def _sqlite_begin(conn: Connection) -> None:
    immediate = conn.get_execution_options().get(WRITE_OPTION)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def writer(engine: Engine) -> Engine:
    """The same engine, for write transactions (serialised; see WRITE_OPTION)."""
    return engine.execution_options(**{WRITE_OPTION: True})


def lock_writers(conn: Connection) -> None:
    """PostgreSQL: the transaction-scoped advisory lock every writer takes (SQLite: BEGIN IMMEDIATE)."""
    if conn.dialect.name == "postgresql":
        from ragqual.store.sealing import PG_LOCK_KEY

        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PG_LOCK_KEY})


URL_FORMS = ("postgresql://user:password@host:port/database, sqlite:////absolute/path/eval.db, "
             "sqlite:///relative/path/eval.db, or a plain file path")


def parse_url(url: str | URL) -> URL:
    """The history URL, parsed and checked without connecting: SQLAlchemy can read it, knows its
    dialect, has its driver installed, and the dialect accepts its parts (a SQLite URL has no
    user, password, host or port). Anything else is an InputError (exit 2) that shows the URL
    with its credentials masked."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise _bad_url(url, "it is not a URL SQLAlchemy can read") from None
    except ValueError:  # make_url's int() of the port
        raise _bad_url(url, "its port is not a number") from None
    if parsed.host and "@" in parsed.host:
        raise _bad_url(url, "it has a second @ (write an @ in a user or password as %40)")
    try:
        dialect = parsed.get_dialect()
    except NoSuchModuleError:
        raise _bad_url(url, f"SQLAlchemy has no dialect or driver named {parsed.drivername!r}") from None
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        raise _bad_url(url, f"its driver ({exc.name or parsed.drivername}) is not installed: install it "
                            f"(PostgreSQL: pip install 'psycopg[binary]')") from None
    try:
        dialect().create_connect_args(parsed)
    except ArgumentError:
        why = ("a SQLite URL has no user, password, host or port" if parsed.get_backend_name() == "sqlite"
               else "SQLAlchemy cannot connect with its parts")
        raise _bad_url(url, why) from None
    return parsed


def _bad_url(url: str | URL, why: str) -> InputError:
    return InputError(f"the history database URL {faults.masked_url(url)} cannot be used: {why}; give --db (or "
                      f"RAGQUAL_DB) one of {URL_FORMS}")


def _connect_failed(context: ExceptionContext) -> None:
    """A connection that could not be opened is a StorageFault naming the database (exit 4),
    wherever the engine is used; errors on an open connection go on as they are."""
    if context.connection is None and context.engine is not None:
        fault = faults.translate(context.sqlalchemy_exception or context.original_exception, context.engine.url)
        if fault is not None:
            raise fault


def make_engine(url: str, *, scratch: bool = False) -> Engine:
    """An engine with SQLite set up for many writers: WAL, foreign keys, a busy timeout. A
    malformed URL is an InputError, a server or file that cannot be opened a StorageFault.
    `scratch`: a throwaway database of ragqual's own (not the one error messages name)."""
    parsed = parse_url(url)
    if not scratch:
        faults.remember(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            try:
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise (faults.translate(exc, url) or exc) from None
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    event.listen(engine, "handle_error", _connect_failed)
    return engine


def script_head_revision() -> str:
    """The head of the Alembic script folder itself (what HEAD_REVISION must equal)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    head = script.get_current_head()
    if head is None:
        raise InputError("no migrations found")
    return head


def head_revision() -> str:
    return HEAD_REVISION


def current_revision(engine: Engine) -> str | None:
    """The revision stamped in `alembic_version`, or None when the table is absent or empty."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(rows) > 1:
        raise InputError(f"database {engine.url.render_as_string(hide_password=True)} has several Alembic heads: {', '.join(rows)}")
    return rows[0] if rows else None


def _revision_on(conn: Connection) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return rows[0] if len(rows) == 1 else None


def _upgrade_on(conn: Connection, url: str, revision: str) -> None:
    from alembic import command

    cfg = alembic_config(url)
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, revision)


def upgrade_on(conn: Connection, revision: str = "head") -> None:
    """Run the migrations on an open connection, inside the transaction the caller holds."""
    _upgrade_on(conn, conn.engine.url.render_as_string(hide_password=False), revision)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate under the writers' lock, so two processes never migrate one database at once."""
    with writer(engine).begin() as conn:
        lock_writers(conn)
        _upgrade_on(conn, engine.url.render_as_string(hide_password=False), revision)


def _create_if_fresh(engine: Engine) -> bool:
    """Under the writers' lock: create a fresh database at head. True when it is at head after.

    Several processes starting on a missing database all get here; the first creates the
    schema, the others wait for the lock and then find it at head.
    """
    with writer(engine).begin() as conn:
        lock_writers(conn)
        current = _revision_on(conn)
        if current == head_revision():
            return True
        if current is not None or engine.dialect.get_table_names(conn):
            return False
        _upgrade_on(conn, engine.url.render_as_string(hide_password=False), "head")
        return True


def is_fresh(engine: Engine) -> bool:
    with engine.connect() as conn:
        return not engine.dialect.get_table_names(conn)


def ensure_at_head(engine: Engine, *, auto_create: bool) -> None:
    """Fresh database: create it at head when allowed. Behind head: refuse, naming the fix."""
    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return
    if current is None and auto_create and _create_if_fresh(engine):
        return
    shown = current or "no ragqual schema"
    raise SchemaOutOfDate(
        f"database {engine.url.render_as_string(hide_password=True)} is at {shown}, "
        f"this ragqual needs {head}: run `ragqual db upgrade`"
    )


def require_existing(url: str) -> None:
    """Refuse a SQLite file that does not exist, before anything could create it (read-only
    commands must not leave an empty database behind)."""
    parsed = parse_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return
    if not Path(parsed.database).is_file():
        raise InputError(f"no history database at {parsed.database}: run `ragqual eval` (or another command "
                         "that records runs) in this project first, or pass --db URL")


def normalise_url(value: str) -> str:
    """Accept a SQLAlchemy URL (checked by parse_url) or a plain file path (taken as SQLite)."""
    if "://" in value:
        parse_url(value)
        return value
    return f"sqlite:///{Path(value).resolve()}"


def missing_guards(engine: Engine) -> list[str]:
    """Append-only triggers a database at head should have and does not (someone dropped them)."""
    from ragqual.store import guards
    from ragqual.store.models import HISTORY_TABLES

    dialect = engine.dialect.name
    if dialect not in ("sqlite", "postgresql"):
        return []
    expected = guards.trigger_names(guards.alembic_version_guards(dialect))
    for table in HISTORY_TABLES:
        expected += guards.trigger_names(guards.update_delete_guards(dialect, table))
        expected += [n for n in guards.trigger_names(guards.insert_guards(dialect, table)) if n.endswith("_no_replace")]
    query = ("SELECT name FROM sqlite_master WHERE type = 'trigger'" if dialect == "sqlite"
             else "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
    with engine.connect() as conn:
        present = set(conn.execute(text(query)).scalars())
    return [name for name in expected if name not in present]
