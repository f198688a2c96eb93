import json
import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from ragqual.errors import SchemaOutOfDate
from ragqual.store import db
from ragqual.store.models import HISTORY_TABLES, Base
from tests.store.schema_tools import describe

SNAPSHOT = Path(__file__).with_name("schema_snapshot.json")


def test_fresh_database_is_created_at_head(sqlite_url):
    engine = db.make_engine(sqlite_url)
    db.ensure_at_head(engine, auto_create=True)
    assert db.current_revision(engine) == db.head_revision()
    names = set(describe(engine)["tables"])
    assert set(HISTORY_TABLES) <= names


def test_upgrade_step_by_step_from_empty(sqlite_url):
    engine = db.make_engine(sqlite_url)
    db.upgrade(engine, "0001")
    assert db.current_revision(engine) == "0001"
    db.upgrade(engine, "head")
    assert db.current_revision(engine) == db.head_revision()


def test_out_of_date_database_is_refused_with_the_fix(sqlite_url):
    engine = db.make_engine(sqlite_url)
    db.upgrade(engine, "0001")
    with pytest.raises(SchemaOutOfDate) as err:
        db.ensure_at_head(engine, auto_create=True)
    assert "ragqual db upgrade" in str(err.value)


def test_foreign_database_is_not_touched(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (x TEXT)")
    con.commit()
    con.close()
    engine = db.make_engine(f"sqlite:///{path}")
    with pytest.raises(SchemaOutOfDate):
        db.ensure_at_head(engine, auto_create=True)
    assert db.current_revision(engine) is None


def test_models_and_migrations_agree(sqlite_url):
    engine = db.make_engine(sqlite_url)
    db.upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == [], (
        "ragqual/store/models.py and migrations/ disagree. Write a new migration in "
        f"migrations/versions/ that brings the schema to the models. Differences: {diff}"
    )


def test_schema_matches_committed_snapshot(sqlite_url):
    engine = db.make_engine(sqlite_url)
    db.upgrade(engine)
    actual = describe(engine)
    expected = json.loads(SNAPSHOT.read_text())
    assert actual == expected, (
        "The migrated schema differs from tests/store/schema_snapshot.json. If the change is "
        "intended (a new migration), regenerate it with: python -m tests.store.make_snapshot"
    )


def test_wal_and_foreign_keys_are_on(sqlite_url):
    engine = db.make_engine(sqlite_url)
    db.upgrade(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() > 0
