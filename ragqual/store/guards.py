"""The SQL that makes a table append-only, for SQLite and PostgreSQL: one definition.

Migrations call these functions for the tables they create, so a later migration guards a
new history table with one line (`for s in guard_statements(dialect, "t", [("k",)]): op.execute(s)`)
and the guard SQL is the same for every table. What each dialect gets:

SQLite
  BEFORE UPDATE / BEFORE DELETE triggers that RAISE(ABORT);
  BEFORE INSERT triggers that refuse a row whose primary key, or any unique key, already
  exists. `REPLACE`, `INSERT OR REPLACE` and UPSERT delete the conflicting row without firing
  DELETE triggers (unless a connection turns on `recursive_triggers`); refusing the insert
  itself closes that path whatever the connection's settings.
PostgreSQL
  a row-level BEFORE UPDATE OR DELETE trigger and a statement-level BEFORE TRUNCATE trigger
  calling `ragqual_refuse_change()`. `INSERT ... ON CONFLICT DO UPDATE` and `MERGE` fire the
  UPDATE / DELETE triggers, so they are refused too.

The strings are part of the migrations that emit them: change them only by adding new
functions, never by editing these, or an old migration would start meaning something else.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

PG_REFUSE_FUNCTION = """
CREATE OR REPLACE FUNCTION ragqual_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only history: % refused', TG_TABLE_NAME, TG_OP;
END
$$
"""

PG_ALEMBIC_FUNCTION = """
CREATE OR REPLACE FUNCTION ragqual_guard_alembic_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' AND EXISTS (SELECT 1 FROM alembic_version) THEN
    RAISE EXCEPTION 'alembic_version is append-only history: a second revision row refused';
  ELSIF TG_OP = 'UPDATE' AND NEW.version_num <= OLD.version_num THEN
    RAISE EXCEPTION 'alembic_version is append-only history: moving back to % refused', NEW.version_num;
  ELSIF TG_OP IN ('DELETE', 'TRUNCATE') THEN
    RAISE EXCEPTION 'alembic_version is append-only history: % refused', TG_OP;
  END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END
$$
"""


def _check_dialect(dialect: str) -> None:
    if dialect not in ("sqlite", "postgresql"):
        raise NotImplementedError(f"append-only guards are written for sqlite and postgresql, not {dialect}")


def _sqlite_refuse(table: str, what: str) -> str:
    return f"SELECT RAISE(ABORT, '{table} is append-only history: {what} refused')"


def update_delete_guards(dialect: str, table: str) -> list[str]:
    """UPDATE, DELETE (and TRUNCATE on PostgreSQL) refused: what migration 0001 installed."""
    _check_dialect(dialect)
    if dialect == "sqlite":
        return [
            f"CREATE TRIGGER {table}_append_only_update BEFORE UPDATE ON {table} "
            f"BEGIN {_sqlite_refuse(table, 'UPDATE')}; END",
            f"CREATE TRIGGER {table}_append_only_delete BEFORE DELETE ON {table} "
            f"BEGIN {_sqlite_refuse(table, 'DELETE')}; END",
        ]
    return [
        PG_REFUSE_FUNCTION,
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION ragqual_refuse_change()",
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION ragqual_refuse_change()",
    ]


def insert_guards(dialect: str, table: str, unique_keys: Sequence[Sequence[str]] = ()) -> list[str]:
    """SQLite: refuse an INSERT that would meet an existing primary or unique key (REPLACE, UPSERT).

    The unique-key message says "unique key" so callers that recognise a duplicate by the
    word "unique" (a concurrent writer interning the same definition) still do. PostgreSQL
    needs nothing here: it has no REPLACE, and its upserts fire the UPDATE trigger.
    """
    _check_dialect(dialect)
    if dialect != "sqlite":
        return []
    statements = [
        f"CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table} "
        f"WHEN EXISTS (SELECT 1 FROM {table} WHERE id = NEW.id) "
        f"BEGIN {_sqlite_refuse(table, 'an INSERT over an existing row (REPLACE or UPSERT)')}; END"
    ]
    for n, columns in enumerate(unique_keys, start=1):
        match = " AND ".join(f"{c} = NEW.{c}" for c in columns)
        key = ", ".join(columns)
        statements.append(
            f"CREATE TRIGGER {table}_no_replace_key{n} BEFORE INSERT ON {table} "
            f"WHEN EXISTS (SELECT 1 FROM {table} WHERE {match}) "
            f"BEGIN {_sqlite_refuse(table, f'a second row with the unique key ({key})')}; END"
        )
    return statements


def guard_statements(dialect: str, table: str, unique_keys: Sequence[Sequence[str]] = ()) -> list[str]:
    """Every guard a new history table needs on `dialect`: run each with op.execute()."""
    return update_delete_guards(dialect, table) + insert_guards(dialect, table, unique_keys)


def alembic_version_guards(dialect: str) -> list[str]:
    """alembic_version: one row, moved forward only (Alembic's own upgrades), never deleted."""
    _check_dialect(dialect)
    if dialect == "sqlite":
        refuse = "alembic_version is append-only history"
        return [
            "CREATE TRIGGER alembic_version_one_row BEFORE INSERT ON alembic_version "
            "WHEN EXISTS (SELECT 1 FROM alembic_version) "
            f"BEGIN SELECT RAISE(ABORT, '{refuse}: a second revision row refused'); END",
            "CREATE TRIGGER alembic_version_forward_only BEFORE UPDATE ON alembic_version "
            "WHEN NEW.version_num <= OLD.version_num "
            f"BEGIN SELECT RAISE(ABORT, '{refuse}: moving back refused'); END",
            "CREATE TRIGGER alembic_version_no_delete BEFORE DELETE ON alembic_version "
            f"BEGIN SELECT RAISE(ABORT, '{refuse}: DELETE refused'); END",
        ]
    return [
        PG_ALEMBIC_FUNCTION,
        "CREATE TRIGGER alembic_version_guard BEFORE INSERT OR UPDATE OR DELETE ON alembic_version "
        "FOR EACH ROW EXECUTE FUNCTION ragqual_guard_alembic_version()",
        "CREATE TRIGGER alembic_version_no_truncate BEFORE TRUNCATE ON alembic_version "
        "FOR EACH STATEMENT EXECUTE FUNCTION ragqual_guard_alembic_version()",
    ]


def trigger_names(statements: Sequence[str]) -> list[str]:
    """The trigger names a list of guard statements creates."""
    return [m[1] for s in statements for m in [re.search(r"CREATE TRIGGER (\w+)", s)] if m]
