"""Tamper evidence: every write transaction seals the rows it appended, in one hash chain.

Design (what `ragqual verify` recomputes):

* A row's digest is sha256 over the canonical JSON of its columns except `id`, NULL columns
  left out (so a later migration that adds a nullable column leaves old digests valid),
  datetimes in ISO form (UTC when the database returns them with a zone), truncated to 16 hex
  characters (64 bits) to keep seals small.
* Each write transaction of the run store ends by appending one `seals` row naming every row
  it inserted — per table the id ranges and the row digests in id order — so rows appended
  later (a rescore, a resumed run, a shared definition interned by another run) get their own
  seal instead of looking like tampering.
* The seal's digest is sha256 over the previous seal's digest (a database-wide chain, the first
  link being the genesis seal of migration 0004), the previous digest of the same run (a
  per-run chain), the run id and the row list. A run's end event records the run's head digest
  at that moment; `verify` prints the database-wide head so it can be published and checked
  later with `verify --expect`.
* The seal's id ranges are also appended to `seal_spans`, one row per table and range, so that
  readers can ask in SQL whether a row is covered (ragqual.store.sealed_rows; migration 0008).
* Writers are serialised while they append and seal: SQLite through `BEGIN IMMEDIATE` (its
  write lock), PostgreSQL through a transaction-scoped advisory lock. While the lock is held no
  other ragqual writer inserts, so "rows with an id above the table's highest id at the start
  of the transaction" are exactly this transaction's rows, whatever statement inserted them
  (RETURNING or a driver-level executemany).

What it proves and what it cannot: any edit, deletion, re-ordering or insertion made outside
ragqual after a row was sealed breaks a digest or leaves a row outside every seal. Someone with
write access who recomputes every later seal can forge a consistent chain; only a head digest
kept elsewhere (committed, published) and checked with `--expect` defeats that.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import Any

from sqlalchemy import Connection, Table, func, inspect, select
from sqlalchemy.orm import Session

from ragqual.core.hashing import canonical_json, sha256_hex
from ragqual.core.published_head import PublishedHead
from ragqual.store import sealed_rows
from ragqual.store.models import Base, Seal, SEALED_TABLES

GENESIS_PREV = "0" * 64
ROW_DIGEST_CHARS = 16
PG_LOCK_KEY = 0x7261_6771  # "ragq": the advisory lock every PostgreSQL writer takes


# -- canonical rows -----------------------------------------------------------------------------

def _norm(value: Any) -> Any:
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo else value).isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, bytes):
        return value.hex()
    return value


def row_digest(values: Mapping[str, Any]) -> str:
    """The digest of one row's content: every non-NULL column but `id`."""
    body = {k: _norm(v) for k, v in values.items() if k != "id" and v is not None}
    return sha256_hex(canonical_json(body))[:ROW_DIGEST_CHARS]


# The same digests, many rows at a time. A retrieval run before migration 0007 sealed ~280,000
# ranked rows, and a cached rerun seals ~12 rows per trial; building a dict, normalising it and
# running json.dumps for each cost ~10 µs a row. For the value types a driver returns for
# ragqual's columns, the canonical JSON is assembled here column by column and then through one
# %-template per batch (keys in sorted order, exactly as json.dumps(sort_keys=True,
# separators=(",", ":"), ensure_ascii=False) writes them, a non-finite float as `_norm` writes
# it, a datetime and bytes as `_norm` writes them): a column holding one value in every row is
# written into the template once, a column of a few repeated values is encoded once per value,
# ints and finite floats are formatted by the template itself, and a column NULL in some rows
# passes each row's `"key":value` text or "" (`_batch_template`). Then every row is hashed by a
# chain of C-level maps. A value of any other type sends its row through `row_digest`.
# tests/store/test_row_digests.py checks the digests against the frozen 58a616b implementation
# and against `row_digest`, over every type and column shape.

def _json_float(value: float) -> str:
    if not math.isfinite(value):
        return encode_basestring(repr(value))  # _norm: a non-finite float is stored as its repr
    return float.__repr__(value)


_ENCODE: dict[type, Callable[[Any], str | None]] = {
    str: encode_basestring,
    int: int.__repr__,
    float: _json_float,
    bool: lambda v: "true" if v else "false",
    datetime: lambda v: encode_basestring(_norm(v)),  # as PostgreSQL's driver returns a timestamp
    bytes: lambda v: encode_basestring(v.hex()),
    type(None): lambda v: None,  # NULL: the column is left out of the row's JSON
}


_PLAIN: dict[type, Callable[[Any], str]] = {str: encode_basestring, int: int.__repr__, float: float.__repr__,
                                          bool: lambda v: "true" if v else "false"}
NONES = itertools.repeat(None)


def _encode_column(values: Sequence[Any], slow: set[int]) -> list[str | None]:
    """Each value as canonical JSON text (None for NULL); positions it cannot write join `slow`."""
    kinds = set(map(type, values))
    if kinds == {str}:
        return list(map(encode_basestring, values))
    if kinds == {int}:
        return list(map(int.__repr__, values))
    if kinds == {float} and all(map(math.isfinite, values)):
        return list(map(float.__repr__, values))
    if len(kinds) == 2 and type(None) in kinds:  # one type and NULLs (a metric without a value)
        (kind,) = kinds - {type(None)}
        plain = _PLAIN.get(kind)
        if plain is not None and (kind is not float or all(math.isfinite(v) for v in values if v is not None)):
            return [None if v is None else plain(v) for v in values]
    out: list[str | None] = []
    for n, value in enumerate(values):
        encode = _ENCODE.get(type(value))
        if encode is None:
            slow.add(n)
            out.append("")
        else:
            out.append(encode(value))
    return out


def row_digests(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[tuple[int, str]]:
    """(id, digest) of each row, `names` naming the rows' columns (one of them `id`);
    each digest equal to `row_digest(dict(zip(names, row)))`."""
    if not rows:
        return []
    return column_digests(names, list(zip(*rows, strict=True)))


def column_digests(names: Sequence[str], columns: Sequence[Sequence[Any]]) -> list[tuple[int, str]]:
    """`row_digests` of rows given column by column (`columns[i]` the values of `names[i]`, all of
    one length): what a writer that built its rows as columns hands the seal, not transposed."""
    if not columns or not len(columns[0]):
        return []
    at = names.index("id")
    order = sorted((i for i in range(len(names)) if i != at), key=lambda i: names[i])
    slow: set[int] = set()
    keys = [encode_basestring(names[i]) for i in order]
    template, cells = _batch_template(keys, [columns[i] for i in order], slow)
    texts: Iterable[str]
    if template is None:  # every column NULL in some row: one template per NULL pattern
        whole = "{" + ",".join(k.replace("%", "%%") + ":%s" for k in keys) + "}"
        texts = _with_nulls(keys, whole, list(zip(*(_encode_column(columns[i], slow) for i in order))))
    elif cells:
        texts = map(template.__mod__, zip(*cells))
    else:
        texts = itertools.repeat(template % (), len(columns[at]))  # every column the same in every row
    # sha256(text)[:16] of every row as one chain of C-level maps: no Python frame per row
    digests = list(map(_FIRST_CHARS, map(_HEX, map(hashlib.sha256, map(str.encode, texts)))))
    for n in slow:
        digests[n] = row_digest({name: column[n] for name, column in zip(names, columns, strict=True)})
    return list(zip(columns[at], digests, strict=True))


_FIRST_CHARS = operator.itemgetter(slice(0, ROW_DIGEST_CHARS))
_HEX = operator.methodcaller("hexdigest")
_NOT_NULL = functools.partial(operator.is_not, None)
# Equal values of these types encode equally; not floats (0.0 == -0.0), and datetimes only of one
# `fold`: two equal datetimes of one zone may differ in fold, and so in their UTC time, while equal
# datetimes of different zones are one instant (a batch's `created_at` as PostgreSQL returns it).
_CONSTANT_KINDS = (str, int, bool, datetime)
_FOLD = operator.attrgetter("fold")


def _batch_template(keys: Sequence[str], columns: Sequence[Sequence[Any]],
                    slow: set[int]) -> tuple[str | None, list[Sequence[Any]]]:
    """One %-template that writes every row of a batch as `row_digest` would, and the columns of
    values it takes; (None, []) when every column is NULL in some row.

    A column NULL in every row is left out; one holding the same str, int, bool or datetime in every row
    (a batch's run id, its `created_at`) is written into the template once; exact ints and finite
    floats are formatted by the template itself (`%d` of an int is int.__repr__, `%r` of a float
    float.__repr__: what json.dumps writes), text is passed encoded. A column NULL in some rows
    only is passed as each row's `"key":value` text ("" where NULL), its comma on the side away
    from the anchor: the first column, in key order, that no row holds NULL in."""
    nulls = [None in column for column in columns]
    anchor = next((n for n, null in enumerate(nulls) if not null), None)
    if anchor is None:
        return None, []
    pieces: list[str] = []
    cells: list[Sequence[Any]] = []
    for n, (key, values, null) in enumerate(zip(keys, columns, nulls, strict=True)):
        name = key.replace("%", "%%")
        if null:
            if values.count(None) == len(values):
                continue  # NULL in every row: left out of every row
            pieces.append("%s")
            cells.append(_sometimes_null(values, (f"{name}:", ",") if n < anchor else (f",{name}:", ""), slow))
            continue
        sep = "" if n == anchor else ","
        first = values[0]
        kind = type(first)
        if kind in _CONSTANT_KINDS and values.count(first) == len(values) and set(map(type, values)) == {kind} and (
                kind is not datetime or len(set(map(_FOLD, values))) == 1):
            pieces.append(f"{sep}{key}:{_ENCODE[kind](first)}".replace("%", "%%"))
            continue
        kinds = set(map(type, values))
        if kinds == {int}:
            pieces.append(f"{sep}{name}:%d")
            cells.append(values)
            continue
        pieces.append(f"{sep}{name}:%s")
        texts = _few_distinct(values, kinds, "%s")
        if texts is not None:
            cells.append(texts)
        elif kinds == {float} and all(map(math.isfinite, values)):
            pieces[-1] = f"{sep}{name}:%r"
            cells.append(values)
        else:
            cells.append(_encode_column(values, slow))
    return "{" + "".join(pieces) + "}", cells


_FEW = 4  # a column is encoded value by value unless it holds at least this many rows per distinct value


def _few_distinct(values: Sequence[Any], kinds: set[type], form: str) -> list[str] | None:
    """`form % json` of each value ("" for NULL), each distinct value encoded once, when `values`
    are of one plain type and repeat (a trial's id and batch over its assertion rows, metric and
    case names, a metric's value); None otherwise. Floats only when every one is finite and of
    positive sign: equal floats encode equally except 0.0 and -0.0."""
    plain = kinds - {type(None)}
    if len(plain) != 1:
        return None
    (kind,) = plain
    encode = _PLAIN.get(kind)
    if encode is None:
        return None
    distinct = set(values)
    if len(distinct) * _FEW > len(values):
        return None
    distinct.discard(None)
    if kind is float and not (all(map(math.isfinite, distinct))
                              and min(map(math.copysign, itertools.repeat(1.0), filter(_NOT_NULL, values))) > 0):
        return None
    done: dict[Any, str] = {value: form % encode(value) for value in distinct}
    done[None] = ""
    return list(map(done.__getitem__, values))


def _sometimes_null(values: Sequence[Any], around: tuple[str, str], slow: set[int]) -> list[str]:
    """Each row's `"key":value` text (`around` the value's JSON: the key, %-escaped, and a comma
    on one side), "" where the row holds NULL. For one plain type the texts are made by C-level
    maps: `%s` of None writes `None`, which no JSON value is, and that text alone is mapped to ""."""
    before, after = around
    form = f"{before}%s{after}"
    kinds = set(map(type, values))
    few = _few_distinct(values, kinds, form)
    if few is not None:
        return few
    kinds.discard(type(None))
    null_text = form % (None,)
    if kinds == {int}:
        texts = list(map(form.__mod__, values))  # %s of an exact int: int.__repr__
    elif kinds == {float} and all(map(math.isfinite, filter(_NOT_NULL, values))):
        form = f"{before}%r{after}"
        null_text = form % (None,)
        texts = list(map(form.__mod__, values))
    elif kinds == {str}:
        texts = list(map(form.__mod__, [None if v is None else encode_basestring(v) for v in values]))
    else:
        texts = [null_text if v is None else form % (v,) for v in _encode_column(values, slow)]
    return list(map({null_text: ""}.get, texts, texts))


def _with_nulls(keys: Sequence[str], template: str, rows: Sequence[tuple[str | None, ...]]) -> list[str]:
    """Each row's canonical JSON when some rows hold NULLs: the rows of a batch share a few NULL
    patterns (a trial's texts go by hash, its error and cost are NULL), so each pattern gets its
    own %-template once and its rows are joined by it (the same text `_without_nulls` joins)."""
    templates: dict[tuple[bool, ...], tuple[str, Callable[[tuple[str | None, ...]], Any] | None]] = {}
    out = []
    for values in rows:
        if None not in values:
            out.append(template % values)
            continue
        pattern = tuple(map(operator.is_, values, NONES))
        found = templates.get(pattern)
        if found is None:
            kept = [n for n, null in enumerate(pattern) if not null]
            form = "{" + ",".join(keys[n].replace("%", "%%") + ":%s" for n in kept) + "}"
            getter: Callable[[tuple[str | None, ...]], Any] | None = (
                operator.itemgetter(*kept) if len(kept) > 1 else None)
            found = templates[pattern] = (form, getter)
        form, pick = found
        if pick is not None:
            out.append(form % pick(values))
        else:
            out.append(_without_nulls(keys, values))
    return out


def _without_nulls(keys: Sequence[str], values: Sequence[str | None]) -> str:
    """One row's canonical JSON with its NULL columns left out (as `row_digest` leaves them out)."""
    return "{" + ",".join(f"{k}:{v}" for k, v in zip(keys, values, strict=True) if v is not None) + "}"


def seal_digest(prev: str, run_prev: str | None, run_id: int | None, rows_text: str) -> str:
    return sha256_hex("\n".join([prev, run_prev or "", "" if run_id is None else str(run_id), rows_text]))


def ranges(ids: Iterable[int]) -> list[list[int]]:
    """Sorted ids as [first, last] runs: [1, 2, 3, 7] -> [[1, 3], [7, 7]]."""
    out: list[list[int]] = []
    for i in sorted(ids):
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def expand(spans: Sequence[Sequence[int]]) -> list[int]:
    return [i for first, last in spans for i in range(first, last + 1)]


def _table(name: str) -> Table:
    return Base.metadata.tables[name]


# -- reading rows as stored ------------------------------------------------------------------------
# Seals are computed and verified from the values the driver returns, read with plain SQL
# through the DB-API cursor: the same read path at both ends, no ORM type processing in
# between, and a few times cheaper per transaction than SQLAlchemy statements.

def _ph(dialect: str) -> str:
    return "?" if dialect == "sqlite" else "%s"


def columns(table: str) -> list[str]:
    """The columns a row digest covers: the model's (a column added outside ragqual is not)."""
    return [c.name for c in _table(table).columns]


def read_rows(cursor: Any, dialect: str, table: str, above: int = 0) -> list[tuple[int, str]]:
    """(id, digest) of every row of `table` with an id above `above`, in id order."""
    names = columns(table)
    cursor.execute(f"SELECT {', '.join(names)} FROM {table} WHERE id > {_ph(dialect)} ORDER BY id", (above,))
    return row_digests(names, cursor.fetchall())


# -- rows as bound, when SQLite returns them unchanged ----------------------------------------------
# A batch's seal would read its rows back only to digest them (a third of what sealing a cached
# rerun's batch cost). On SQLite the run store gives every row its id and knows each value it
# bound; a value comes back from SQLite exactly as bound when its type fits the column's
# affinity (https://sqlite.org/datatype3.html): text in a TEXT column, an integer in an INTEGER
# or NUMERIC column, a float in a REAL column unless it is NaN (stored as NULL) or -0.0 (read
# back as 0.0), and in a NUMERIC column text that does not read as a number (a datetime as
# SQLAlchemy writes it). A column holding anything else is read back as before.

def sqlite_affinity(declared: str) -> str:
    """The affinity SQLite gives a column declared with type `declared` (its rules, in order)."""
    name = declared.upper()
    if "INT" in name:
        return "integer"
    if "CHAR" in name or "CLOB" in name or "TEXT" in name:
        return "text"
    if "BLOB" in name or not name:
        return "blob"
    if "REAL" in name or "FLOA" in name or "DOUB" in name:
        return "real"
    return "numeric"


def _reads_as_number(text: str) -> bool:
    try:
        float(text)  # wider than SQLite's numeric literals: a doubt only sends the column to be read back
    except ValueError:
        return False
    return True


def returned_as_bound(affinity: str, column: Sequence[Any]) -> bool:
    """Whether SQLite returns every value of `column`, bound into a column of `affinity`, as it was bound."""
    kinds = set(map(type, column)) - {type(None)}
    if not kinds:
        return True
    if kinds == {str}:
        return affinity == "text" or (affinity == "numeric" and not any(map(_reads_as_number, set(column) - {None})))
    if kinds == {int}:
        return affinity in ("integer", "numeric")
    if kinds == {float} and affinity == "real":
        # no NaN (the one value unequal to itself; None equals None) and no -0.0 among the zeros
        return (not any(map(operator.ne, column, column))
                and min(map(math.copysign, itertools.repeat(1.0), filter(_IS_ZERO, column)), default=1.0) > 0)
    return False


_IS_ZERO = functools.partial(operator.eq, 0.0)


def _dbapi(session: Session) -> tuple[Any, str]:
    conn = session.connection()
    return _cursor(conn), conn.dialect.name


def _cursor(conn: Connection) -> Any:
    """A DB-API cursor on the connection's live driver connection (open while `conn` is)."""
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None, "a checked-out connection has a driver connection"
    return dbapi.cursor()


# -- writing --------------------------------------------------------------------------------------

def lock(session: Session) -> None:
    """Serialise writers: SQLite already holds its write lock (BEGIN IMMEDIATE)."""
    if session.get_bind().dialect.name == "postgresql":
        session.connection().exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_LOCK_KEY})")


def high_water_sql(tables: Sequence[str] = SEALED_TABLES) -> str:
    return "SELECT " + ", ".join(f"(SELECT COALESCE(MAX(id), 0) FROM {t})" for t in tables)


def high_water(session: Session, tables: Sequence[str] = SEALED_TABLES) -> dict[str, int]:
    """Each table's highest id, in one statement."""
    cursor, _ = _dbapi(session)
    cursor.execute(high_water_sql(tables))
    return dict(zip(tables, (int(v) for v in cursor.fetchone()), strict=True))


@dataclass
class SealDraft:
    """What one transaction appended: {table: [(id, digest), ...]}, id order."""

    rows: dict[str, list[tuple[int, str]]] = field(default_factory=dict)

    def text(self) -> str:
        return canonical_json({
            t: {"ids": _id_ranges(list(map(_FIRST, rows))), "digests": "".join(map(_SECOND, rows))}
            for t, rows in sorted(self.rows.items()) if rows
        })


_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


def _id_ranges(ids: list[int]) -> list[list[int]]:
    """`ranges(ids)`, at once when they are one ascending run (a batch's rows of a table are)."""
    if ids[-1] - ids[0] + 1 == len(ids) and all(map(operator.lt, ids, itertools.islice(ids, 1, None))):
        return [[ids[0], ids[-1]]]
    return ranges(ids)


def head(session: Session | Connection, run_id: int | None = None) -> str | None:
    """The newest seal's digest: database-wide, or of one run."""
    seals = _table("seals")  # Core: a run's writes never configure the ORM mappers
    query = select(seals.c.digest).order_by(seals.c.id.desc()).limit(1)
    if run_id is not None:
        query = query.where(seals.c.run_id == run_id)
    return session.execute(query).scalar_one_or_none()


def published_head(session: Session | Connection) -> PublishedHead | None:
    """The head to publish in a report, page or baseline file: the newest seal and how many there are."""
    row = session.execute(select(Seal.id, Seal.digest).order_by(Seal.id.desc()).limit(1)).first()
    if row is None:
        return None
    count = session.execute(select(func.count()).select_from(Seal)).scalar_one()
    return PublishedHead(row.digest, int(row.id), int(count))


def _heads(cursor: Any, dialect: str, run_id: int | None) -> tuple[str, str | None]:
    p = _ph(dialect)
    cursor.execute(f"SELECT (SELECT digest FROM seals ORDER BY id DESC LIMIT 1), "
                   f"(SELECT digest FROM seals WHERE run_id = {p} ORDER BY id DESC LIMIT 1)", (run_id,))
    prev, run_prev = cursor.fetchone()
    return prev or GENESIS_PREV, run_prev


Bound = tuple[Sequence[str], Sequence[Sequence[Any]]]
"""(column names with "id", the rows' values column by column), as the database returns them."""


def seal(session: Session, before: Mapping[str, int], run_id: int | None, *, spans: bool = True,
         known: Mapping[str, Bound] | None = None) -> str | None:
    """Append the seal of every row inserted since `before` (None when nothing was), and its
    spans (`spans=False` only to write as ragqual did before migration 0008). `known` holds, per
    table, rows the caller inserted with the values the database returns for them
    (`returned_as_bound`): a table whose new rows are exactly those is digested from them, any
    other is read back."""
    cursor, dialect = _dbapi(session)
    tables = tuple(before)
    cursor.execute(high_water_sql(tables))
    after = dict(zip(tables, (int(v) for v in cursor.fetchone()), strict=True))
    known = known or {}
    draft = SealDraft({t: _known_digests(known.get(t), before[t], after[t]) or read_rows(cursor, dialect, t, before[t])
                       for t in tables if after[t] > before[t]})
    if not any(draft.rows.values()):
        return None
    if run_id is None and draft.rows.get("runs"):
        run_id = draft.rows["runs"][0][0]
    prev, run_prev = _heads(cursor, dialect, run_id)
    rows_text = draft.text()
    digest = seal_digest(prev, run_prev, run_id, rows_text)
    p = _ph(dialect)
    cursor.execute(f"INSERT INTO seals (kind, run_id, prev_digest, run_prev_digest, rows, digest) "
                   f"VALUES ('rows', {p}, {p}, {p}, {p}, {p}) RETURNING id", (run_id, prev, run_prev, rows_text, digest))
    seal_id = int(cursor.fetchone()[0])
    if spans:
        sealed_rows.insert_spans(cursor, dialect, seal_id, sealed_rows.seal_spans("rows", rows_text, {}))
    return digest


def _known_digests(bound: Bound | None, before: int, after: int) -> list[tuple[int, str]] | None:
    """The digests of `bound` when its rows are exactly the ids before+1..after, in order (else None)."""
    if bound is None:
        return None
    names, columns = bound
    ids = columns[list(names).index("id")]
    expected = range(before + 1, after + 1)
    if len(ids) != len(expected) or (ids != expected and list(ids) != list(expected)):
        return None
    return column_digests(names, columns)


def append_watermark(conn: Connection, tables: Sequence[str]) -> str:
    """For a migration that writes history rows itself (a backfill): mark every row of `tables`
    written so far as written before sealing covered them, in a `watermark` seal on the chain.
    `verify` then reports those rows as unsealed instead of inserted outside ragqual.

        from ragqual.store.sealing import append_watermark
        append_watermark(op.get_bind(), ["case_aliases"])   # after the backfill
    """
    cursor = _cursor(conn)
    dialect = conn.dialect.name
    cursor.execute(high_water_sql(tables))
    marks = dict(zip(tables, (int(v) for v in cursor.fetchone()), strict=True))
    prev, _ = _heads(cursor, dialect, None)
    rows_text = canonical_json({"watermark": marks})
    digest = seal_digest(prev, None, None, rows_text)
    p = _ph(dialect)
    cursor.execute(f"INSERT INTO seals (kind, run_id, prev_digest, run_prev_digest, rows, digest) "
                   f"VALUES ('watermark', NULL, {p}, NULL, {p}, {p}) RETURNING id", (prev, rows_text, digest))
    seal_id = int(cursor.fetchone()[0])
    if inspect(conn).has_table(sealed_rows.SPANS_TABLE):  # from migration 0008 on, readers read the spans
        reach = sealed_rows.reach_of(cursor, tables)
        sealed_rows.insert_spans(cursor, dialect, seal_id, sealed_rows.seal_spans("watermark", rows_text, reach))
    return digest
