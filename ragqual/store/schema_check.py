"""The schema a history should have, read back from the catalog and compared: part of `ragqual verify`.

A view redefined, a trigger dropped or disabled, a table or column dropped, an index added: none of
these touches a sealed row, yet each changes what readers show or what the database refuses. So
`verify` also compares every schema object with what the migrations at head create.

The expectation is never written down here. A scratch database of the same dialect is upgraded to
head with the project's own Alembic migrations and read through the same catalog queries:

SQLite      an in-memory database;
PostgreSQL  a scratch schema created inside one transaction of the history's own database and
            rolled back afterwards (nothing is left behind; the role needs CREATE on the database).

The result is kept per process, keyed on the dialect and the migrations' head, so a new migration
changes the expectation by itself.

Objects are `(kind, name) -> definition`, the definition normalised (whitespace, identifier
quoting, keyword case, comments, the schema's own name) so that a database upgraded through every
migration compares equal to a fresh one:

  table      SQLite: its CREATE TABLE text; PostgreSQL: its kind and row-security flags
  column     `table.column`: declared type, NOT NULL, default, primary-key position
  constraint PostgreSQL, `table.name`: pg_get_constraintdef
  index, trigger, view: their CREATE text (SQLite, sqlite_master) or pg_get_*def (PostgreSQL);
             a PostgreSQL trigger's definition includes whether it is enabled
  function, sequence, rule, policy: PostgreSQL objects of the schema (extensions' own left out)
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, text

from ragqual.store import db

Schema = dict[tuple[str, str], str]
CHILD_KINDS = ("column", "constraint")  # objects named `table.name`, reported with their table


# -- normalising SQL text (pure) -------------------------------------------------------------------

_TOKENS = re.compile(r"""
    (?P<string>'(?:[^']|'')*')
  | (?P<quoted>"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\])
  | (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<space>\s+)
  | (?P<word>[^\s'"`\[\-/(),;=.]+)
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)
_PUNCT = set("(),;=.")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def normalise_sql(sql: str, dialect: str = "sqlite", schema: str | None = None) -> str:
    """SQL text compared by meaning of layout: one space between words, none around punctuation,
    comments dropped, simple quoted identifiers unquoted, everything but string literals lower
    case, the trailing `;` dropped, and `schema.` qualifiers of `schema` removed."""
    parts: list[str] = []
    for m in _TOKENS.finditer(sql):
        kind, token = m.lastgroup, m.group()
        if kind == "string":
            parts.append(token)
        elif kind == "quoted":
            inner = token[1:-1]
            if token[0] in "[`" and dialect != "sqlite":  # `[` is an array subscript outside SQLite
                parts.append(token.lower())
            else:
                parts.append(inner.lower() if _IDENT.fullmatch(inner) else token)
        elif kind in ("comment", "space"):
            parts.append(" ")
        else:
            parts.append(token.lower())
    out: list[str] = []
    for part in parts:
        if part == " " and (not out or out[-1] == " " or out[-1] in _PUNCT):
            continue
        if part in _PUNCT and out and out[-1] == " ":
            out.pop()
        out.append(part)
    joined = "".join(out).strip().rstrip(";").strip()
    if schema:
        joined = re.sub(rf"(?<![\w$.]){re.escape(schema.lower())}\.", "", joined)
    return joined


# -- comparing (pure) --------------------------------------------------------------------------------

@dataclass(frozen=True)
class SchemaDifference:
    kind: str  # table | column | index | trigger | view | ...
    name: str
    change: str  # missing | extra | different

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.change}"


def _table_of(kind: str, name: str) -> str | None:
    return name.split(".", 1)[0] if kind in CHILD_KINDS else None


def compare(expected: Mapping[tuple[str, str], str], actual: Mapping[tuple[str, str], str]) -> list[SchemaDifference]:
    """Each object missing, extra or different. A missing or extra table stands for its columns and
    constraints; a table whose columns differ is not reported again for its CREATE TABLE text."""
    gone_or_new = {name for (kind, name) in set(expected) ^ set(actual) if kind == "table"}
    found: list[SchemaDifference] = []
    for key in sorted(set(expected) | set(actual)):
        kind, name = key
        if _table_of(kind, name) in gone_or_new:
            continue
        if key not in actual:
            found.append(SchemaDifference(kind, name, "missing"))
        elif key not in expected:
            found.append(SchemaDifference(kind, name, "extra"))
        elif expected[key] != actual[key]:
            found.append(SchemaDifference(kind, name, "different"))
    columns_differ = {_table_of(d.kind, d.name) for d in found if d.kind == "column"}
    return [d for d in found if not (d.kind == "table" and d.change == "different" and d.name in columns_differ)]


def readable(schema: Mapping[tuple[str, str], str], table: str, columns: list[str]) -> bool:
    """Whether `table` exists with every one of `columns` (what a reader selects)."""
    return ("table", table) in schema and all(("column", f"{table}.{c}") in schema for c in columns)


# -- reading the catalog --------------------------------------------------------------------------------

def _sqlite_schema(conn: Connection) -> Schema:
    found: Schema = {}
    rows = conn.exec_driver_sql(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND substr(name, 1, 7) != 'sqlite_'"
    ).all()
    for kind, name, sql in rows:
        found[(kind, name)] = normalise_sql(sql)
        if kind != "table":
            continue
        for _cid, column, ctype, notnull, default, pk, hidden in conn.exec_driver_sql(
                "SELECT * FROM pragma_table_xinfo(?)", (name,)).all():
            found[("column", f"{name}.{column}")] = (
                f"{normalise_sql(ctype or '')} {'not null' if notnull else 'null'} "
                f"default {normalise_sql(str(default)) if default is not None else '-'} pk {pk} hidden {hidden}")
    return found


_PG_IN_SCHEMA = "relnamespace = current_schema()::regnamespace"
_PG_NOT_EXTENSION = ("NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = {oid} AND d.deptype = 'e')")
_PG_RELKINDS = {"r": "table", "p": "table", "v": "view", "m": "view", "S": "sequence", "f": "table"}

_PG_QUERIES: dict[str, str] = {
    "relations": f"""
        SELECT c.relname, c.relkind, c.relrowsecurity, c.relforcerowsecurity,
               CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END
        FROM pg_class c WHERE c.{_PG_IN_SCHEMA} AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
          AND {_PG_NOT_EXTENSION.format(oid='c.oid')}""",
    "columns": f"""
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(ad.adbin, ad.adrelid), a.attidentity, a.attgenerated
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
        WHERE c.{_PG_IN_SCHEMA} AND c.relkind IN ('r', 'p', 'f') AND a.attnum > 0 AND NOT a.attisdropped
          AND {_PG_NOT_EXTENSION.format(oid='c.oid')}""",
    "constraints": f"""
        SELECT c.relname, k.conname, pg_get_constraintdef(k.oid)
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE c.{_PG_IN_SCHEMA}""",
    "indexes": f"""
        SELECT i.relname, pg_get_indexdef(i.oid)
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE i.{_PG_IN_SCHEMA}
          AND {_PG_NOT_EXTENSION.format(oid='x.indrelid')}""",
    "triggers": f"""
        SELECT t.tgname, c.relname, pg_get_triggerdef(t.oid), t.tgenabled
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal AND c.{_PG_IN_SCHEMA}""",
    "functions": f"""
        SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', pg_get_functiondef(p.oid)
        FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind IN ('f', 'p')
          AND {_PG_NOT_EXTENSION.format(oid='p.oid')}""",
    "rules": f"""
        SELECT r.rulename, c.relname, pg_get_ruledef(r.oid)
        FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class WHERE r.rulename <> '_RETURN' AND c.{_PG_IN_SCHEMA}""",
    "policies": """
        SELECT policyname, tablename, permissive || ' ' || cmd || ' ' || roles::text || ' ' ||
               COALESCE(qual, '-') || ' ' || COALESCE(with_check, '-')
        FROM pg_policies WHERE schemaname = current_schema()""",
}


def _put(found: Schema, kind: str, name: str, table: str, definition: str) -> None:
    """Trigger, rule and policy names are unique per table only: a second one names its table."""
    key = (kind, name) if (kind, name) not in found else (kind, f"{name} on {table}")
    found[key] = definition


def _postgres_schema(conn: Connection) -> Schema:
    schema = conn.exec_driver_sql("SELECT current_schema()").scalar_one()

    def norm(sql: str) -> str:
        return normalise_sql(sql, "postgresql", schema)

    def run(name: str) -> list[Any]:
        return list(conn.exec_driver_sql(_PG_QUERIES[name]).all())

    found: Schema = {}
    for name, relkind, rls, force_rls, viewdef in run("relations"):
        kind = _PG_RELKINDS[relkind]
        found[(kind, name)] = norm(viewdef) if viewdef is not None else f"{relkind} rls {rls} force {force_rls}"
    for table, column, ctype, notnull, default, identity, generated in run("columns"):
        found[("column", f"{table}.{column}")] = (
            f"{ctype} {'not null' if notnull else 'null'} default {norm(default) if default else '-'} "
            f"identity {identity or '-'} generated {generated or '-'}")
    for table, name, definition in run("constraints"):
        found[("constraint", f"{table}.{name}")] = norm(definition)
    for name, definition in run("indexes"):
        found[("index", name)] = norm(definition)
    for name, table, definition, enabled in run("triggers"):
        _put(found, "trigger", name, table, f"{norm(definition)} enabled {enabled}")
    for name, definition in run("functions"):
        found[("function", name)] = norm(definition)
    for name, table, definition in run("rules"):
        _put(found, "rule", name, table, norm(definition))
    for name, table, definition in run("policies"):
        _put(found, "policy", name, table, norm(f"{table} {definition}"))
    return found


def read_schema(conn: Connection) -> Schema:
    """Every schema object of the database `conn` is connected to (its current schema on PostgreSQL)."""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        return _sqlite_schema(conn)
    if dialect == "postgresql":
        return _postgres_schema(conn)
    raise NotImplementedError(f"the schema check reads sqlite and postgresql catalogs, not {dialect}")


# -- what the migrations create ------------------------------------------------------------------------

_EXPECTED: dict[tuple[str, str], Schema] = {}


def _sqlite_expected() -> Schema:
    engine = db.make_engine("sqlite://", scratch=True)
    try:
        db.upgrade(engine)
        with engine.connect() as conn:
            return read_schema(conn)
    finally:
        engine.dispose()


def _postgres_expected(engine: Engine) -> Schema:
    """Upgrade a scratch schema to head inside one transaction, read it, roll everything back."""
    scratch = f"ragqual_expected_{uuid.uuid4().hex[:12]}"
    with engine.connect() as conn:
        transaction = conn.begin()
        try:
            conn.exec_driver_sql(f"CREATE SCHEMA {scratch}")
            conn.exec_driver_sql(f"SET LOCAL search_path TO {scratch}")
            db.upgrade_on(conn, "head")
            return read_schema(conn)
        finally:
            transaction.rollback()


def expected_schema(engine: Engine) -> Schema:
    """What the migrations at head create on `engine`'s dialect (computed once per process)."""
    dialect = engine.dialect.name
    key = (dialect, db.head_revision())
    if key not in _EXPECTED:
        _EXPECTED[key] = _sqlite_expected() if dialect == "sqlite" else _postgres_expected(engine)
    return _EXPECTED[key]


def check_schema(engine: Engine) -> tuple[list[SchemaDifference], Schema]:
    """The differences from head, and the schema as found (to know which tables can be read)."""
    with engine.connect() as conn:
        actual = read_schema(conn)
    return compare(expected_schema(engine), actual), actual
