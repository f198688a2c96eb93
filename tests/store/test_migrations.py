import json
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from ragqual.errors import SchemaOutOfDate
from ragqual.store import db
from ragqual.store.models import HISTORY_TABLES, Base
from tests.store.conftest import raw_connect
from tests.store.schema_tools import describe

SNAPSHOT = Path(__file__).with_name("schema_snapshot.json")


def test_fresh_database_is_created_at_head(store_url):
    engine = db.make_engine(store_url)
    db.ensure_at_head(engine, auto_create=True)
    assert db.current_revision(engine) == db.head_revision()
    names = set(describe(engine)["tables"])
    assert set(HISTORY_TABLES) <= names
    engine.dispose()


def test_upgrade_step_by_step_from_empty(store_url):
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0001")
    assert db.current_revision(engine) == "0001"
    db.upgrade(engine, "head")
    assert db.current_revision(engine) == db.head_revision()
    engine.dispose()


def test_out_of_date_database_is_refused_with_the_fix(store_url):
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0001")
    with pytest.raises(SchemaOutOfDate) as err:
        db.ensure_at_head(engine, auto_create=True)
    assert "ragqual db upgrade" in str(err.value)
    assert db.current_revision(engine) == "0001"
    engine.dispose()


def test_foreign_database_is_not_touched(store_url):
    con = raw_connect(store_url)
    con.execute("CREATE TABLE notes (x TEXT)")
    con.commit()
    con.close()
    engine = db.make_engine(store_url)
    with pytest.raises(SchemaOutOfDate):
        db.ensure_at_head(engine, auto_create=True)
    assert db.current_revision(engine) is None
    assert inspect(engine).get_table_names() == ["notes"]
    engine.dispose()


def test_models_and_migrations_agree(store_url):
    engine = db.make_engine(store_url)
    db.upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
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


def _shape(described: dict) -> dict:
    """What every backend must agree on: tables, column names and nullability, plain indexes, views.

    Types and the names of unique constraints are each backend's own spelling.
    """
    tables = {
        name: {
            "columns": [(c["name"], c["nullable"]) for c in table["columns"]],
            "indexes": sorted(set(table["indexes"]) - set(table["unique"])),
        }
        for name, table in described["tables"].items()
    }
    return {"tables": tables, "views": described["views"]}


def test_schema_shape_matches_snapshot_on_every_backend(store_url):
    engine = db.make_engine(store_url)
    db.upgrade(engine)
    actual = _shape(describe(engine))
    engine.dispose()
    assert actual == _shape(json.loads(SNAPSHOT.read_text()))


def test_wal_and_foreign_keys_are_on(sqlite_url):
    engine = db.make_engine(sqlite_url)
    db.upgrade(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() > 0


def test_head_constant_is_the_script_folders_head():
    """Commands compare against db.HEAD_REVISION; a new migration must move it (fix: set it to the new revision)."""
    assert db.HEAD_REVISION == db.script_head_revision()


def test_current_revision_reads_what_alembic_reads(store_url):
    engine = db.make_engine(store_url)
    assert db.current_revision(engine) is None
    for revision in ("0001", "0002", "head"):
        db.upgrade(engine, revision)
        with engine.connect() as conn:
            assert db.current_revision(engine) == MigrationContext.configure(conn).get_current_revision()
    engine.dispose()
