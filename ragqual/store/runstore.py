"""The append-only run store: the only code that writes history rows.

Each public write is one short transaction, retried when SQLite reports the
database as locked, so several processes can append to one file at once. Every
transaction ends by sealing the rows it appended (ragqual.store.sealing); a storage
failure (disk full, read-only, the file deleted or replaced) becomes a one-line
StorageFault (ragqual.store.faults).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import operator
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

from sqlalchemy import Connection, Engine, Table, func, insert, inspect, select
from sqlalchemy.engine import processors
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session

from ragqual.core.hashing import canonical_json, sha256_hex
from ragqual.core.redact import redact_argv, redact_known, redact_text, redact_value
from ragqual.errors import InputError
from ragqual.store import db, faults, rows, run_summaries, sealing, texts
from ragqual.store.sealed_rows import SPANS_TABLE, is_covered
from ragqual.store import rankings as rankings_layout
from ragqual.store.models import (
    AssertionDef,
    AssertionResult,
    StoredText,
    CaseAlias,
    CaseDef,
    CorpusSnapshot,
    MetricValue,
    PricingSnapshot,
    RetrievalRanking,
    Run,
    RunEvent,
    SystemPrompt,
    Trial,
    TrialCost,
    TrialScore,
    VariantConfig,
)
from ragqual.store.records import (
    AssertionRow,
    Provenance,
    RankingRow,
    RunInfo,
    ScoreRow,
    TrialRecord,
)
from ragqual.store.rows import ASSERTION_COLUMNS, METRIC_COLUMNS, SCORE_COLUMNS

T = TypeVar("T")
Clock = Callable[[], datetime]
RunRef = int | Callable[[], int | None] | None
LOCK_RETRIES = 60
END_EVENTS = ("finished", "interrupted", "failed")
WAL_CHECKPOINT_PAGES = 10_000  # ~40 MB of write-ahead log between checkpoints (SQLite's default: 1,000)
WAL_CHECKPOINT_SET = "ragqual_wal_autocheckpoint"
KNOWN_ROWS = "ragqual_known_rows"  # session.info: rows inserted with given ids, as SQLite returns them (the seal's)
HIGH_WATER = "ragqual_high_water"  # session.info: each sealed table's highest id when the transaction took the lock
ENCODINGS_HELD = 4096  # texts an `_OncePerObject` (or the texts' digests) keeps; past that many it starts afresh


def utcnow() -> datetime:
    return datetime.now(UTC)


_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)  # json.dumps(..., ensure_ascii=False, sort_keys=True), built once


def _dump(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return _JSON.encode(value)


def _raw_output_text(rec: TrialRecord) -> str | None:
    """A trial's `raw_output` column (before texts go by hash): `_dump` of the masked raw output,
    or the record's `raw_output_json` when masking leaves the value as it is (the same object) and
    the caller encoded it already (the same text: `_JSON`'s options, `TrialRecord.raw_output_json`)."""
    raw = redact_known(rec.raw_output)
    encoded = rec.raw_output_json
    if encoded is not None and raw is rec.raw_output and raw is not None and not isinstance(raw, str):
        return encoded
    return _dump(raw)


class _OncePerObject:
    """`encode(value)` once per object: a value handed again (the same object: the repeats of a
    question share their rendered prompt and, scored once, their score rows) gets the text made
    the first time. For the values of trial records, which are not changed once handed over; each
    object is held with its text, so its id names it while the text is kept (ENCODINGS_HELD)."""

    def __init__(self, encode: Callable[[Any], str | None]) -> None:
        self._encode = encode
        self._held: dict[int, tuple[Any, str | None]] = {}

    def __call__(self, value: Any) -> str | None:
        held = self._held.get(id(value))
        if held is not None and held[0] is value:
            return held[1]
        text = self._encode(value)
        if len(self._held) >= ENCODINGS_HELD:
            self._held.clear()
        self._held[id(value)] = (value, text)
        return text


def table_of(model: type[Any]) -> Table:
    """The Core table of a mapped class (declarative types `__table__` as a plain FromClause)."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


def bulk_insert(session: Session, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Append many rows of one shape with a single executemany straight through the driver.

    SQLAlchemy's own executemany builds and processes the parameters row by row, about
    12 µs a row on a 2-core machine; a retrieval run appends ~20,000 rows. Here the
    statement is compiled once for the connection's dialect and each column's bind
    processor (SQLite's datetime-to-text, for one) is applied directly, so the stored
    values are exactly those SQLAlchemy would write (tests/store/test_bulk_insert.py).
    """
    if not rows:
        return
    keys = list(rows[0])
    get = operator.itemgetter(*keys)
    bulk_insert_tuples(session, table, keys, [get(row) for row in rows] if len(keys) > 1 else [(row[keys[0]],) for row in rows])


def bulk_insert_tuples(session: Session, table: Table, keys: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """`bulk_insert` for rows given as tuples of the `keys` columns: a tuple per row is all they
    cost when no column needs a bind processor and the driver takes the columns in the same order."""
    if not rows:
        return
    conn = session.connection()
    sql, _, _, params = _bound(conn, table, keys, rows)
    conn.exec_driver_sql(sql, params)


def _bound(conn: Connection, table: Table, keys: Sequence[str], rows: Sequence[Sequence[Any]],
           ) -> tuple[str, list[str], list[Sequence[Any]] | None, list[Any]]:
    """(the INSERT, its columns in bind order, the bound values column by column when they were
    built that way (else None), the driver's parameters): every value as SQLAlchemy would bind it."""
    sql, order, _, plain, _ = _statement(conn.dialect, table, tuple(keys))
    if plain:
        return sql, order, None, list(rows)
    return _bound_columns(conn, table, keys, list(zip(*rows, strict=True)))


def _bound_columns(conn: Connection, table: Table, keys: Sequence[str], columns: Sequence[Sequence[Any]],
                   ) -> tuple[str, list[str], list[Sequence[Any]] | None, list[Any]]:
    """`_bound` for rows given column by column (`columns[i]` the values of `keys[i]`, all of one
    length): the processors run over whole columns and the rows are zipped in C."""
    sql, order, ordered, positional = _ordered_columns(conn, table, keys, columns)
    tuples = zip(*ordered, strict=True)
    params: list[Any] = list(tuples) if positional else [dict(zip(order, v, strict=True)) for v in tuples]
    return sql, order, ordered, params


def _executemany(conn: Connection, sql: str, rows: Iterable[Sequence[Any]]) -> None:
    """`sql` once per row of `rows` (an iterator will do) in one executemany straight on the driver's
    cursor: each row is bound as it comes (SQLAlchemy wants a list, every row's tuple alive until
    the statement ends). A driver error is raised as SQLAlchemy raises it (IntegrityError, ...)."""
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None, "a checked-out connection has a driver connection"
    error = conn.dialect.loaded_dbapi.Error
    cursor: Any = dbapi.cursor()  # SQLite's takes any iterable of rows (SQLAlchemy's type says a sequence)
    try:
        cursor.executemany(sql, rows)
    except error as exc:
        raise DBAPIError.instance(sql, None, exc, error, dialect=conn.dialect, ismulti=True) from exc
    finally:
        cursor.close()


def _without_null_columns(table: Table, keys: Sequence[str], columns: Sequence[Sequence[Any]],
                          ) -> tuple[list[str], list[Sequence[Any]]]:
    """`keys` and `columns` without the columns NULL in every row that the INSERT may leave out
    (nullable, no default of SQLAlchemy's or the database's: left out, the row holds NULL all the
    same, and a row digest leaves NULL columns out). SQLite's driver binds a None several times
    slower than a number (each one goes through its adaptation protocol): a batch's trials leave
    a third of their text columns, error and load time NULL."""
    kept = [n for n, column in enumerate(columns)
            if column.count(None) != len(column) or not _may_leave_out(table.c[keys[n]])]
    if len(kept) == len(columns):
        return list(keys), list(columns)
    return [keys[n] for n in kept], [columns[n] for n in kept]


def _may_leave_out(column: Any) -> bool:
    return bool(column.nullable) and column.default is None and column.server_default is None


def _ordered_columns(conn: Connection, table: Table, keys: Sequence[str], columns: Sequence[Sequence[Any]],
                     ) -> tuple[str, list[str], list[Sequence[Any]], bool]:
    """(the INSERT, its columns in bind order, their bound values column by column, whether the
    driver takes each row as a tuple) for rows given column by column: each column's bind
    processor run over the whole column (not at all when it would leave every value as it is)."""
    sql, order, convert, plain, positional = _statement(conn.dialect, table, tuple(keys))
    if plain:
        return sql, order, list(columns), positional
    return sql, order, [columns[i] if p is None or _as_is(p, columns[i]) else _processed(p, columns[i])
                        for i, p in convert], positional


Statement = tuple[str, list[str], list[tuple[int, Any]], bool, bool]
_STATEMENTS: dict[tuple[Any, Table, tuple[str, ...]], Statement] = {}


def _statement(dialect: Any, table: Table, keys: tuple[str, ...]) -> Statement:
    """(the INSERT of `keys` into `table` compiled for `dialect`, its columns in bind order, per
    bound column its position in `keys` and bind processor (or None), whether the rows bind as
    they are, whether the driver takes each row as a tuple),
    compiled once per dialect, table and columns: a batch appends to the same tables every time."""
    found = _STATEMENTS.get((dialect, table, keys))
    if found is not None:
        return found
    compiled = insert(table).compile(dialect=dialect, column_keys=list(keys))
    at = {k: i for i, k in enumerate(keys)}
    process = {k: table.c[k].type.dialect_impl(dialect).bind_processor(dialect) for k in keys}
    order = list(compiled.positiontup) if compiled.positional and compiled.positiontup else list(keys)
    convert = [(at[k], process[k]) for k in order]
    positional = bool(compiled.positional)
    plain = positional and order == list(keys) and all(p is None for _, p in convert)
    if len(_STATEMENTS) > 256:
        _STATEMENTS.clear()
    made: Statement = (compiled.string, order, convert, plain, positional)
    _STATEMENTS[(dialect, table, keys)] = made
    return made


_FLOATS = {float, type(None)}


def _as_is(process: Callable[[Any], Any], column: Sequence[Any]) -> bool:
    """Whether `process` leaves every value of `column` as it is: float() of a float or None
    (a Float column's processor on SQLite) is the value itself."""
    return process is processors.to_float and set(map(type, column)) <= _FLOATS


def _processed(process: Callable[[Any], Any], column: Sequence[Any]) -> list[Any]:
    """`process` over a column, once per distinct object: a batch's rows share one `created_at`
    (the same datetime object), which SQLite's processor would otherwise format once per row."""
    first = column[0] if len(column) else None
    if all(map(operator.is_, column, itertools.repeat(first))):  # one object in every row
        return [process(first)] * len(column)
    done = {key: process(value) for key, value in dict(zip(map(id, column), column)).items()}
    return list(map(done.__getitem__, map(id, column)))


def redact_provenance(provenance: Provenance) -> Provenance:
    """The provenance with credentials masked in argv and params."""
    return dataclasses.replace(provenance, argv=tuple(redact_argv(provenance.argv)),
                               params=redact_value(provenance.params))


def _with_seal_head(detail: str | None, head: str | None) -> str:
    """The end event's detail as a JSON object with the run's seal head added."""
    try:
        body = json.loads(detail) if detail else {}
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"detail": detail}
    return json.dumps({**body, "seal_head": head}, sort_keys=True)


def _slot_taken(recs: Sequence[TrialRecord]) -> str:
    rec = recs[0] if len(recs) == 1 else None
    if rec is None:
        return (f"run {recs[0].run_id} already holds one of the {len(recs)} trials being appended: "
                "is another process resuming this run?")
    return (f"run {rec.run_id} already holds the trial for case {rec.case_id or rec.case_pk}, mode "
            f"{rec.mode or '-'}, repeat {rec.repeat_index}: is another process resuming this run?")


def _is_locked(exc: OperationalError) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text or "busy" in text


def _checkpoint_less_often(session: Session) -> None:
    """SQLite: let the write-ahead log grow to WAL_CHECKPOINT_PAGES before a commit checkpoints it
    (set once per driver connection). SQLite's default, 1,000 pages (4 MB), is less than one batch
    of 500 trials writes (~1,100 pages into a large history), so every batch's commit copied the
    log back into the database and synced it; now one commit in ~10 does. What a commit makes
    durable does not change (WAL, synchronous=NORMAL: ragqual.store.db)."""
    conn = session.connection()
    if conn.dialect.name != "sqlite":
        return
    info = conn.connection.info
    if not info.get(WAL_CHECKPOINT_SET):
        conn.exec_driver_sql(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        info[WAL_CHECKPOINT_SET] = True


class RunStore:
    """Append rows to the history; read runs back as plain records."""

    def __init__(self, engine: Engine, clock: Clock = utcnow, *, seal: bool = True):
        self.engine = engine
        self.clock = clock
        self.seal = seal  # False only to measure what sealing costs (benchmarks/bench_seal.py)
        self._writer = db.writer(engine)
        self._identity = faults.file_identity(engine.url)
        self._spans: bool | None = None
        self._texts: bool | None = None
        self._summaries: bool | None = None
        self._affinity: dict[str, dict[str, str]] = {}
        self._prompts = _OncePerObject(_dump)  # rendered prompts (`_prompt_text`)
        self._per_category = _OncePerObject(canonical_json)  # score rows' per-category scores (`append_trials`)
        self._digests: dict[str, str] = {}  # text -> sha256 of the long texts appended (`_trial_columns`)

    @classmethod
    def open(cls, url: str, *, auto_create: bool = True, clock: Clock = utcnow) -> RunStore:
        engine = db.make_engine(url)
        try:
            db.ensure_at_head(engine, auto_create=auto_create)
        except (DBAPIError, OSError) as exc:
            raise (faults.translate(exc, engine.url) or exc) from exc
        return cls(engine, clock)

    # -- plumbing -------------------------------------------------------------
    def _write(self, work: Callable[[Session], T], run_id: RunRef = None) -> T:
        """One transaction: take the writers' lock, do `work`, seal what it appended, commit."""
        faults.check_identity(self._identity)
        delay = 0.02
        for attempt in range(LOCK_RETRIES):
            try:
                result = self._transaction(work, run_id)
                break
            except OperationalError as exc:
                if not _is_locked(exc) or attempt == LOCK_RETRIES - 1:
                    self._raise_fault(exc)
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
            except IntegrityError:
                raise
            except (DBAPIError, sqlite3.Error) as exc:  # sealing writes through the raw driver cursor
                self._raise_fault(exc)
        else:
            raise AssertionError("unreachable")
        faults.check_identity(self._identity)
        if self._identity is None:
            self._identity = faults.file_identity(self.engine.url)
        return result

    def _transaction(self, work: Callable[[Session], T], run_id: RunRef) -> T:
        with Session(self._writer) as session, session.begin():
            _checkpoint_less_often(session)
            if not self.seal:
                return work(session)
            sealing.lock(session)
            before = sealing.high_water(session)
            session.info[HIGH_WATER] = before
            result = work(session)
            sealing.seal(session, before, run_id() if callable(run_id) else run_id, spans=self._has_spans(session),
                         known=session.info.get(KNOWN_ROWS))
            return result

    def _has_spans(self, session: Session) -> bool:
        """Whether the database has `seal_spans` (migration 0008; a store opened on an older
        schema writes as ragqual did then), asked once per store."""
        if self._spans is None:
            self._spans = inspect(session.connection()).has_table(SPANS_TABLE)
        return self._spans

    def _has_texts(self, session: Session) -> bool:
        """Whether the database has `texts` (migration 0012: long texts go by hash; on an older
        schema they stay inline), asked once per store."""
        if self._texts is None:
            self._texts = inspect(session.connection()).has_table(texts.TABLE)
        return self._texts

    def _append_rows(self, session: Session, table: Table, keys: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """`_append_columns` of rows given as tuples of `keys`."""
        if rows:
            self._append_columns(session, table, keys, list(zip(*rows, strict=True)))

    def _append_columns(self, session: Session, table: Table, keys: Sequence[str],
                        columns: Sequence[Sequence[Any]]) -> None:
        """Insert rows given column by column (`columns[i]` the values of `keys[i]`) with one
        executemany. On SQLite, in a sealed transaction, each row is given its id (the table's
        highest id when the transaction took the lock, plus 1, 2, ...: the ids SQLite would
        assign), and when SQLite returns every bound value as bound
        (ragqual.store.sealing.returned_as_bound) the columns are kept for the seal, which then
        digests them instead of reading the rows back. The stored rows are the same either way."""
        count = len(columns[0]) if columns else 0
        if not count:
            return
        conn = session.connection()
        marks = session.info.get(HIGH_WATER)
        if conn.dialect.name != "sqlite" or marks is None:
            bulk_insert_tuples(session, table, keys, list(zip(*columns, strict=True)))
            return
        known: dict[str, sealing.Bound | None] = session.info.setdefault(KNOWN_ROWS, {})
        first = marks[table.name] + 1
        if table.name in known:  # a second insert into the table: ids follow the rows already there
            known[table.name] = None
            first = int(conn.exec_driver_sql(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {table.name}").scalar_one())
        keys, columns = _without_null_columns(table, keys, columns)
        sql, order, ordered, positional = _ordered_columns(conn, table, ["id", *keys],
                                                           [range(first, first + count), *columns])
        _executemany(conn, sql, zip(*ordered, strict=True))
        if table.name in known:
            return
        affinity = self._affinities(conn, table.name)
        kept = positional and all(sealing.returned_as_bound(affinity[name], column)
                                  for name, column in zip(order, ordered, strict=True))
        known[table.name] = (order, ordered) if kept else None

    def _affinities(self, conn: Connection, table: str) -> dict[str, str]:
        """Each column's SQLite affinity, from the types the database declares (asked once per store)."""
        found = self._affinity.get(table)
        if found is None:
            declared = conn.exec_driver_sql(f"PRAGMA table_info({table})").all()
            found = self._affinity[table] = {row[1]: sealing.sqlite_affinity(row[2] or "") for row in declared}
        return found

    def _raise_fault(self, exc: DBAPIError | sqlite3.Error) -> NoReturn:
        """A StorageFault naming the file and the fix; any other error as it is."""
        fault = faults.translate(exc, self.engine.url)
        if fault is None:
            raise exc
        raise fault from exc

    def _intern(self, model: type[Any], lookup: dict[str, Any], values: dict[str, Any]) -> int:
        def find(session: Session) -> int | None:
            query = select(model.id).filter_by(**lookup)
            return session.execute(query).scalar_one_or_none()

        def work(session: Session) -> int:
            found = find(session)
            if found is not None:
                return found
            new_id: int = session.execute(insert(model).values(**lookup, **values).returning(model.id)).scalar_one()
            return new_id

        try:
            return self._write(work)
        except IntegrityError:  # another process interned the same row first
            with Session(self.engine) as session:
                found = find(session)
            if found is None:
                raise
            return found

    # -- runs -----------------------------------------------------------------
    def start_run(self, kind: str, subject: str | None, provenance: Provenance) -> int:
        """A new run with its provenance, credentials masked (ragqual.core.redact)."""
        provenance = redact_provenance(provenance)

        def work(session: Session) -> int:
            now = self.clock()
            runs = table_of(Run)
            run_id: int = session.execute(
                insert(runs)
                .values(
                    kind=kind,
                    subject=subject,
                    started_at=now,
                    argv=json.dumps(list(provenance.argv)),
                    params=canonical_json(provenance.params),
                    git_sha=provenance.git_sha,
                    git_dirty=provenance.git_dirty,
                    ragqual_version=provenance.ragqual_version,
                    python_version=provenance.python_version,
                    corpus_fingerprint=provenance.corpus_fingerprint,
                    dataset_hash=provenance.dataset_hash,
                    prompt_hashes=json.dumps(list(provenance.prompt_hashes)),
                    provenance=canonical_json(provenance.as_dict()),
                )
                .returning(runs.c.id)
            ).scalar_one()
            session.execute(insert(table_of(RunEvent)).values(run_id=run_id, event="started", at=now))
            return run_id

        return self._write(work)

    def add_event(self, run_id: int, event: str, detail: str | None = None) -> None:
        """Append an event; an end event (finished / interrupted / failed) records the run's
        seal head at that moment under "seal_head" in its JSON detail."""

        def work(session: Session) -> None:
            text = None if detail is None else redact_text(detail)
            if self.seal and event in END_EVENTS:
                text = _with_seal_head(text, sealing.head(session, run_id))
            session.execute(insert(table_of(RunEvent)).values(run_id=run_id, event=event, at=self.clock(), detail=text))
            if event == "finished":
                self._summarise(session, run_id)

        self._write(work, run_id)

    def append_summary(self, run_id: int) -> None:
        """Append the run's summary (ragqual.store.run_summaries) in a sealed transaction of its own,
        as a `finished` event appends it: for runs that finished without one (before migration 0013,
        or a benchmark's bulk fill)."""
        self._write(lambda session: self._summarise(session, run_id), run_id)

    def _summarise(self, session: Session, run_id: int) -> None:
        """The run's summary, in the transaction that writes its `finished` event (so one seal covers
        both); none when this store does not seal, or on a schema before migration 0013."""
        if self._summaries is None:
            self._summaries = inspect(session.connection()).has_table(run_summaries.TABLE)
        if self.seal and self._summaries:
            run_summaries.append(session, run_id, self.clock())

    def add_worker_event(self, run_id: int, event: str, detail: str | None, slots: int) -> bool:
        """`add_event` for one of several workers sharing a run (ragqual.store.claims): decided and
        written in one transaction under the writers' lock. `finished` is written only when the run
        holds all of its `slots` trials and its last event is not `finished` yet (so exactly once);
        any other event only while some slot is still missing (so no worker's `resumed`,
        `interrupted` or `failed` lands after the run's end). True when the event was written."""

        def work(session: Session) -> bool:
            held = session.execute(select(func.count()).select_from(Trial).where(Trial.run_id == run_id)).scalar_one()
            last = session.execute(select(RunEvent.event).where(RunEvent.run_id == run_id)
                                   .order_by(RunEvent.id.desc()).limit(1)).scalar_one_or_none()
            wanted = (held >= slots and last != "finished") if event == "finished" else held < slots
            if not wanted:
                return False
            text = None if detail is None else redact_text(detail)
            if self.seal and event in END_EVENTS:
                text = _with_seal_head(text, sealing.head(session, run_id))
            session.execute(insert(RunEvent).values(run_id=run_id, event=event, at=self.clock(), detail=text))
            if event == "finished":
                self._summarise(session, run_id)
            return True

        return self._write(work, run_id)

    def last_event(self, run_id: int) -> str | None:
        """The run's newest event (its status), sealed or not."""
        with Session(self.engine) as session:
            return session.execute(select(RunEvent.event).where(RunEvent.run_id == run_id)
                                   .order_by(RunEvent.id.desc()).limit(1)).scalar_one_or_none()

    # -- deduplicated definitions ---------------------------------------------
    def intern_system_prompt(self, text: str) -> int:
        return self._intern(SystemPrompt, {"sha256": sha256_hex(text)}, {"text": text})

    def intern_variant(self, name: str, provider: str, model: str, config: dict[str, Any]) -> int:
        """A variant's definition, credentials masked: variants that differ only by a password
        share one row (their cache keys still differ: ragqual.core.cachekey)."""
        name, model, config = redact_text(name), redact_text(model), redact_value(config)
        body = {"name": name, "provider": provider, "model": model, "config": config}
        return self._intern(
            VariantConfig,
            {"sha256": sha256_hex(canonical_json(body))},
            {"name": name, "provider": provider, "model": model, "config": canonical_json(config)},
        )

    def record_case(self, subject: str, case_id: str, slug: str, definition: dict[str, Any]) -> int:
        digest = sha256_hex(canonical_json(definition))
        return self._intern(
            CaseDef,
            {"subject": subject, "case_id": case_id, "sha256": digest},
            {"slug": slug, "definition": canonical_json(definition)},
        )

    def record_cases(self, subject: str, cases: Sequence[tuple[str, str, dict[str, Any]]]) -> dict[str, int]:
        """Many (case_id, slug, definition) at once, in one transaction: case_id -> row id."""
        wanted = {cid: (slug, canonical_json(d)) for cid, slug, d in cases}
        digests = {cid: sha256_hex(body) for cid, (_, body) in wanted.items()}

        defs = table_of(CaseDef)  # Core, not the ORM: a warm run never configures the mappers
        known_cases = select(defs.c.case_id, defs.c.sha256, defs.c.id).where(defs.c.subject == subject)

        def work(session: Session) -> dict[str, int]:
            rows = session.execute(known_cases).all()
            known = {(cid, sha): pk for cid, sha, pk in rows}
            missing = [
                {"subject": subject, "case_id": cid, "slug": wanted[cid][0], "sha256": digests[cid], "definition": wanted[cid][1]}
                for cid in wanted if (cid, digests[cid]) not in known
            ]
            if missing:
                session.execute(insert(defs), missing)
                rows = session.execute(known_cases).all()
                known = {(cid, sha): pk for cid, sha, pk in rows}
            return {cid: known[(cid, digests[cid])] for cid in wanted}

        try:
            return self._write(work)
        except IntegrityError:  # a concurrent writer recorded some of them first: read again
            return self._write(work)

    def record_assertion_def(
        self, assertion_id: str, version: int, category: str, weight: float, name: str, definition: dict[str, Any]
    ) -> int:
        digest = sha256_hex(canonical_json(definition))
        return self._intern(
            AssertionDef,
            {"assertion_id": assertion_id, "version": version, "sha256": digest},
            {"category": category, "weight": weight, "name": name, "definition": canonical_json(definition)},
        )

    def record_assertion_defs(
        self, defs: Sequence[tuple[str, int, str, float, str, dict[str, Any]]]
    ) -> dict[tuple[str, int, str], int]:
        """Many (assertion_id, version, category, weight, name, definition) at once, in one
        transaction (a run over 171 goldens holds ~750): (assertion_id, version, sha256) -> row id.
        Each is stored once, as `record_assertion_def` stores it."""
        wanted: dict[tuple[str, int, str], dict[str, Any]] = {}
        for assertion_id, version, category, weight, name, definition in defs:
            body = canonical_json(definition)
            wanted[(assertion_id, version, sha256_hex(body))] = {
                "category": category, "weight": weight, "name": name, "definition": body}
        ids = sorted({k[0] for k in wanted})

        def known(session: Session) -> dict[tuple[str, int, str], int]:
            found: dict[tuple[str, int, str], int] = {}
            for at in range(0, len(ids), 500):
                query = select(AssertionDef.assertion_id, AssertionDef.version, AssertionDef.sha256,
                               AssertionDef.id).where(AssertionDef.assertion_id.in_(ids[at:at + 500]))
                found.update({(a, v, h): pk for a, v, h, pk in session.execute(query)})
            return found

        def work(session: Session) -> dict[tuple[str, int, str], int]:
            found = known(session)
            missing = [{"assertion_id": a, "version": v, "sha256": h, **wanted[(a, v, h)]}
                       for (a, v, h) in wanted if (a, v, h) not in found]
            if missing:
                session.execute(insert(AssertionDef), missing)
                found = known(session)
            return {key: found[key] for key in wanted}

        if not wanted:
            return {}
        try:
            return self._write(work)
        except IntegrityError:  # a concurrent writer recorded some of them first: read again
            return self._write(work)

    def record_corpus_snapshot(
        self, fingerprint: str, documents: list[dict[str, Any]], chunk_config: dict[str, Any], embedder_id: str
    ) -> int:
        return self._intern(
            CorpusSnapshot,
            {"fingerprint": fingerprint},
            {
                "documents": canonical_json(documents),
                "chunk_config": canonical_json(chunk_config),
                "embedder_id": embedder_id,
                "created_at": self.clock(),
            },
        )

    # -- trials and scores -----------------------------------------------------
    def append_trial(self, rec: TrialRecord) -> int:
        """The trial, its assertion rows, score rows and metrics: all or nothing."""
        return self.append_trials([rec])[0]

    def append_trials(self, recs: Sequence[TrialRecord]) -> list[int]:
        """Many trials of one run, each with its assertion, score and metric rows, in one
        transaction with one seal: all or nothing. Returns the trial ids in the order given.

        Every row goes in through one driver-level executemany per table, so a batch costs a
        fixed number of statements (and PostgreSQL round trips) whatever its size; the seal
        reads the batch's rows back once per table (ragqual.store.sealing)."""
        if not recs:
            return []
        run_ids = {rec.run_id for rec in recs}
        if len(run_ids) != 1:
            raise ValueError(f"append_trials takes the trials of one run, got runs {sorted(run_ids)}")
        run_id = recs[0].run_id

        def work(session: Session) -> list[int]:
            now = self.clock()
            keys, columns, bodies = self._trial_columns(session, recs, now)
            if bodies:
                self._append_rows(session, table_of(StoredText), texts.STORED_COLUMNS, texts.missing(session, bodies))
            trial_ids = self._insert_trials(session, keys, columns)
            batches = [str(uuid.uuid4()) for _ in recs]
            self._append_columns(session, table_of(AssertionResult), ASSERTION_COLUMNS,
                                 rows.assertion_columns(trial_ids, batches, [rec.assertions for rec in recs], now))
            self._append_columns(session, table_of(TrialScore), SCORE_COLUMNS,
                                 rows.score_columns(trial_ids, batches, [rec.scores for rec in recs], now,
                                                    self._per_category))
            self._append_columns(session, table_of(MetricValue), METRIC_COLUMNS,
                                 rows.metric_columns(run_id, trial_ids, recs, now))
            return trial_ids

        try:
            return self._write(work, run_id)
        except IntegrityError as exc:
            if "uq_trials_slot" in str(exc) or "trials.run_id" in str(exc) or "unique" in str(exc).lower():
                raise InputError(_slot_taken(recs)) from None
            raise

    def _trial_columns(self, session: Session, recs: Sequence[TrialRecord], now: datetime,
                       ) -> tuple[list[str], list[Sequence[Any]], dict[str, str]]:
        """The `trials` rows of the records column by column, credentials masked: (their column
        names, the columns, {sha256: body} of the texts they name, to store once per batch). The
        one place a trial row is built (append_trial and append_trials both go through it). Long
        texts go by hash (migration 0012, ragqual.store.texts); inline on an older schema."""
        keys: list[str] = list(rows.TRIAL_COLUMNS)
        columns = rows.trial_columns(recs, now)
        values: dict[str, list[str | None]] = {
            "rendered_prompt": [self._prompt_text(rec.rendered_prompt) for rec in recs],
            "context": [redact_known(rec.context) for rec in recs],
            "raw_output": list(map(_raw_output_text, recs)),
            "parsed_output": [_dump(redact_known(rec.parsed_output)) for rec in recs],
        }
        bodies: dict[str, str] = {}
        if self._has_texts(session):
            if len(self._digests) >= ENCODINGS_HELD:
                self._digests.clear()
            values, bodies = texts.split_columns(values, self._digests)
        keys += values
        columns += values.values()
        cap = rows.cap_columns(recs)
        if cap is not None:
            keys += rows.CAP_COLUMNS
            columns += cap
        return keys, columns, bodies

    def _prompt_text(self, prompt: Any) -> str | None:
        """A trial's `rendered_prompt` column (before texts go by hash), `_dump` of the masked
        prompt, encoded once per prompt object while masking leaves it as it is: a subject that
        hands every repeat of a question the same rendered prompt (the RAG subject does) has it
        encoded once, not once per repeat."""
        masked = redact_known(prompt)
        if masked is not prompt or prompt is None or isinstance(prompt, str):
            return _dump(masked)
        return self._prompts(prompt)

    def _insert_trials(self, session: Session, keys: Sequence[str], columns: Sequence[Sequence[Any]]) -> list[int]:
        """Insert `trials` rows with one executemany; their ids in the order given. Writers hold
        the writers' lock (ragqual.store.sealing.lock), so the ids above the table's highest id
        before the insert are exactly these rows, ascending in insertion order.

        On SQLite the ids are given explicitly: the table's highest id, read once when the
        transaction took the lock (`high_water`), plus 1, 2, ... — the ids SQLite would assign
        itself, so nothing is read back. On PostgreSQL the serial sequence assigns them (an id
        given here would leave the sequence behind) and they are read back in one SELECT."""
        count = len(columns[0])
        conn = session.connection()
        top = session.info.get(HIGH_WATER, {}).get("trials") if conn.dialect.name == "sqlite" else None
        if top is not None and "trials" not in session.info.get(KNOWN_ROWS, {}):
            self._append_columns(session, table_of(Trial), keys, columns)
            return list(range(top + 1, top + 1 + count))
        top = int(conn.exec_driver_sql("SELECT COALESCE(MAX(id), 0) FROM trials").scalar_one())
        bulk_insert_tuples(session, table_of(Trial), keys, list(zip(*columns, strict=True)))
        ids = [int(i) for i in session.execute(select(Trial.id).where(Trial.id > top).order_by(Trial.id)).scalars()]
        if len(ids) != count:
            raise RuntimeError(f"expected {count} new trial ids above {top}, found {len(ids)}: "
                               "another writer inserted trials without the writers' lock")
        return ids

    def _insert_scoring(
        self, session: Session, trial_id: int, assertions: Sequence[AssertionRow],
        scores: Sequence[ScoreRow], now: datetime,
    ) -> str:
        batch = str(uuid.uuid4())
        bulk_insert_tuples(session, table_of(AssertionResult), ASSERTION_COLUMNS,
                           list(zip(*rows.assertion_columns([trial_id], [batch], [assertions], now), strict=True)))
        bulk_insert_tuples(session, table_of(TrialScore), SCORE_COLUMNS,
                           list(zip(*rows.score_columns([trial_id], [batch], [scores], now, canonical_json),
                                    strict=True)))
        return batch

    def append_scoring(
        self, trial_id: int, assertions: Sequence[AssertionRow], scores: Sequence[ScoreRow]
    ) -> str:
        """A re-scoring of an old trial: new rows beside the old ones, which stay (sealed to its run)."""
        owner: list[int | None] = [None]

        def work(session: Session) -> str:
            owner[0] = session.execute(select(Trial.run_id).where(Trial.id == trial_id)).scalar_one_or_none()
            return self._insert_scoring(session, trial_id, assertions, scores, self.clock())

        return self._write(work, lambda: owner[0])

    def _insert_metrics(
        self, session: Session, run_id: int,
        rows: Iterable[tuple[int | None, str, str, str, float | None, int]], now: datetime,
    ) -> None:
        """`metric_values` rows through `_append_columns`: on SQLite each row gets its id and is kept
        for the seal (no read-back), as `append_trials` writes its metrics; PostgreSQL as before.
        The rows are turned into columns in one transposition, the run id and time added as
        whole columns (a retrieval run appends ~2,700 rows per strategy)."""
        given = list(rows)
        if not given:
            return
        count = len(given)
        trials, cases, groups, metrics, values, versions = zip(*given, strict=True)
        self._append_columns(session, table_of(MetricValue), METRIC_COLUMNS,
                             [(run_id,) * count, trials, cases, groups, metrics, values, versions, (now,) * count])

    def append_metrics(
        self, run_id: int, rows: Sequence[tuple[int | None, str, str, str, float | None, int]]
    ) -> None:
        """(trial_id, case_id, group_key, metric, value, scorer_version) rows."""
        self._write(lambda s: self._insert_metrics(s, run_id, rows, self.clock()), run_id)

    def append_rescoring(
        self, run_id: int, trial_id: int, case_id: str, mode: str, assertions: Sequence[AssertionRow],
        scores: Sequence[ScoreRow], metrics: Mapping[str, float | None], metrics_version: int,
    ) -> str:
        """A re-scoring of an old trial with its metrics, in one transaction: new rows beside the
        old ones, which stay (readers take the newest version, then the newest row). Sealed as the
        run's, so the run's summary stops being current (ragqual.store.run_summaries)."""

        def work(session: Session) -> str:
            now = self.clock()
            batch = self._insert_scoring(session, trial_id, assertions, scores, now)
            self._insert_metrics(session, run_id, [(trial_id, case_id, mode, k, v, metrics_version)
                                                   for k, v in metrics.items()], now)
            return batch

        return self._write(work, run_id)

    # -- prices ----------------------------------------------------------------
    def intern_pricing_snapshot(self, body: dict[str, Any]) -> tuple[int, str]:
        """A price list (ragqual.core.pricing.PriceList.canonical()) stored once by hash: (id, sha256)."""
        text = canonical_json(body)
        digest = sha256_hex(text)
        return self._intern(PricingSnapshot, {"sha256": digest}, {"body": text, "created_at": self.clock()}), digest

    def append_costs(self, run_id: int, snapshot_id: int, costs: Sequence[tuple[int, float | None, str | None]]) -> int:
        """One cost row per (trial id, cost, currency) under `snapshot_id`, in one sealed
        transaction of the run; earlier rows stay as they are. Returns the rows appended."""
        if not costs:
            return 0

        def work(session: Session) -> int:
            now = self.clock()
            session.execute(insert(table_of(TrialCost)), [
                {"trial_id": t, "snapshot_id": snapshot_id, "cost": c, "currency": cur, "created_at": now}
                for t, c, cur in costs
            ])
            return len(costs)

        return self._write(work, run_id)

    def record_case_alias(self, subject: str, alias: str, case_id: str, note: str) -> int:
        """Say that `alias` is an older id of `case_id` (once; recording it again is a no-op)."""
        return self._intern(CaseAlias, {"subject": subject, "alias": alias}, {"case_id": case_id, "note": note})

    def case_aliases(self) -> dict[str, str]:
        """Older case ids -> the case id that replaced them (the `case_aliases` table)."""
        with Session(self.engine) as session:
            return {old: new for old, new in session.execute(select(CaseAlias.alias, CaseAlias.case_id))}

    def append_rankings(self, run_id: int, rankings: Sequence[RankingRow]) -> None:
        """Each (strategy, question)'s ranked candidates as one `retrieval_rankings` row (migration
        0007; ragqual.store.rankings), all in one transaction. A run stores each pair once: a second
        ranking for the same run, strategy and question is refused by the unique key. Written
        through `_append_rows`, so on SQLite the seal digests the rows as bound instead of reading
        ~3 KB of JSON per question back."""
        if not rankings:
            return
        payload = [rankings_layout.encode(run_id, r) for r in rankings]
        self._write(lambda s: self._append_rows(s, table_of(RetrievalRanking), rankings_layout.COLUMNS, payload),
                    run_id)

    # -- reads -------------------------------------------------------------------
    def get_run(self, run_id: int) -> RunInfo:
        with Session(self.engine) as session:
            run = session.get(Run, run_id)
            if run is None:
                raise InputError(f"no run with id {run_id}: `ragqual history` lists the runs")
            last = session.execute(
                select(RunEvent).where(RunEvent.run_id == run_id, is_covered("run_events"))
                .order_by(RunEvent.id.desc()).limit(1)
            ).scalar_one_or_none()
            ended = last.at if last is not None and last.event in ("finished", "interrupted", "failed") else None
            return RunInfo(
                id=run.id, kind=run.kind, subject=run.subject, started_at=run.started_at,
                status=last.event if last is not None else None, ended_at=ended,
                argv=json.loads(run.argv), params=json.loads(run.params),
                provenance=json.loads(run.provenance), corpus_fingerprint=run.corpus_fingerprint,
                dataset_hash=run.dataset_hash, git_sha=run.git_sha, git_dirty=run.git_dirty,
            )

    def last_run_id(self, kind: str | None = None) -> int:
        query = select(Run.id).order_by(Run.id.desc()).limit(1)
        if kind:
            query = query.where(Run.kind == kind)
        with Session(self.engine) as session:
            found = session.execute(query).scalar_one_or_none()
        if found is None:
            raise InputError("the history has no runs yet" + (f" of kind {kind}" if kind else ""))
        return found

    def run_ids(self, kind: str) -> list[int]:
        """The ids of every run of `kind`, newest first."""
        with Session(self.engine) as session:
            return list(session.execute(select(Run.id).where(Run.kind == kind).order_by(Run.id.desc())).scalars())

    def finished_slots(self, run_id: int) -> set[tuple[int, int, str, int]]:
        """(case_pk, variant_id, mode, repeat_index) of every trial the run already holds."""
        query = select(Trial.case_pk, Trial.variant_id, Trial.mode, Trial.repeat_index).where(
            Trial.run_id == run_id
        )
        with Session(self.engine) as session:
            return {tuple(row) for row in session.execute(query)}  # type: ignore[misc]
