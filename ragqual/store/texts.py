"""A trial's long texts stored once, by content hash (migration 0012).

Rendered prompts, contexts and outputs repeat: every repeat of a case sends the same prompt with
the same context, a cached model gives the same answer, and the modes share contexts. From
migration 0012 the run store writes each such text once into `texts` (sha256 unique, the body
exactly as the trial column would have held it) and the trial names it in `<column>_sha256`,
leaving `<column>` NULL. A text no longer than its hash (`INLINE_MAX` characters) stays inline.

Rows written before 0012 keep their inline text; every reader takes the inline text when there
is one and the stored text by hash otherwise (`resolved_sql` for SQL, `resolved` for ORM
selects, `trial_texts` for one loaded trial). `texts` is history like any other table: its rows
are sealed in the transaction that appends the trial, and readers use only sealed text rows.
The view `v_trial_texts` shows every trial's four texts from either layout, so an audit with
plain `sqlite3` or `psql` is one query:

    SELECT rendered_prompt, context, raw_output FROM v_trial_texts WHERE trial_id = 42;
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, func, select, text
from sqlalchemy.orm import Session, aliased

from ragqual.core.hashing import sha256_hex
from ragqual.store.models import StoredText, Trial
from ragqual.store.sealed_rows import covered

TABLE = "texts"
TEXT_COLUMNS: tuple[str, ...] = ("rendered_prompt", "context", "raw_output", "parsed_output")
INLINE_MAX = 64  # a text this short costs no more inline than its hash
LOOKUP_CHUNK = 10_000  # hashes per look-up statement (SQLite allows 32,766 parameters, PostgreSQL 65,535)


def hash_column(column: str) -> str:
    """The trial column naming `column`'s stored text."""
    return f"{column}_sha256"


def split(values: Mapping[str, str | None],
          digests: dict[str, str] | None = None) -> tuple[dict[str, str | None], dict[str, str]]:
    """A trial's text columns as stored from 0012 on: (the trial row's columns, {sha256: body}
    to store). Each text longer than INLINE_MAX goes by hash, a shorter one (or NULL) inline.
    `digests` (text -> its sha256, filled here) spares hashing a text again: the trials of a run
    repeat their prompts, contexts and answers, within a batch and across batches (the run store
    keeps one for its lifetime; a dict look-up of an equal text costs a fraction of its sha256)."""
    columns, bodies = split_columns({column: [value] for column, value in values.items()}, digests)
    row: dict[str, str | None] = {}
    for column in values:
        digest = columns[hash_column(column)][0]
        if digest is None:
            row[column] = columns[column][0]
        else:
            row[hash_column(column)] = digest
    return row, bodies


def by_hash(value: str | None) -> bool:
    """Whether a text column's value goes by hash (longer than INLINE_MAX) rather than inline."""
    return isinstance(value, str) and len(value) > INLINE_MAX


def split_columns(values: Mapping[str, Sequence[str | None]],
                  digests: dict[str, str] | None = None) -> tuple[dict[str, list[str | None]], dict[str, str]]:
    """`split` of a batch of trials at once, column by column (`values[column][i]` the i-th
    trial's): (each column and its `<column>_sha256` column, a long text NULL in the first and named
    by its hash in the second; {sha256: body} to store, in the order `split` trial by trial would
    add them). `digests` as for `split`."""
    digests = {} if digests is None else digests
    columns: dict[str, list[str | None]] = {}
    found: dict[str, str] = {}
    for column, given in values.items():
        inline: list[str | None] = list(given)
        hashes: list[str | None] = [None] * len(inline)
        for n, value in enumerate(inline):
            if value is None or not by_hash(value):
                continue
            digest = digests.get(value)
            if digest is None:
                digest = digests[value] = sha256_hex(value)
            found[digest] = value
            inline[n] = None
            hashes[n] = digest
        columns[column], columns[hash_column(column)] = inline, hashes
    named = dict.fromkeys(itertools.chain.from_iterable(zip(*(columns[hash_column(c)] for c in values))))
    named.pop(None, None)
    return columns, {digest: found[digest] for digest in named if digest is not None}


STORED_COLUMNS = ("sha256", "body")


def missing(session: Session, bodies: Mapping[str, str]) -> list[tuple[str, str]]:
    """(sha256, body) of the texts among `bodies` that `texts` does not hold yet, to append."""
    if not bodies:
        return []
    conn = session.connection()
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    hashes = list(bodies)
    known: set[str] = set()
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None, "a checked-out connection has a driver connection"
    cursor = dbapi.cursor()  # plain SQL through the driver's cursor: no result rows built per text
    try:
        for at in range(0, len(hashes), LOOKUP_CHUNK):
            part = hashes[at:at + LOOKUP_CHUNK]
            cursor.execute(f"SELECT sha256 FROM texts WHERE sha256 IN ({', '.join([mark] * len(part))})", tuple(part))
            known.update(map(operator.itemgetter(0), cursor.fetchall()))
    finally:
        cursor.close()
    return [(h, b) for h, b in bodies.items() if h not in known]


def store(session: Session, bodies: Mapping[str, str]) -> None:
    """Append the texts not yet stored. Called under the writers' lock (the run store's
    transaction), so no other writer can append the same hash in between."""
    rows = missing(session, bodies)
    if rows:
        mark = "?" if session.connection().dialect.name == "sqlite" else "%s"
        session.connection().exec_driver_sql(f"INSERT INTO texts (sha256, body) VALUES ({mark}, {mark})", rows)


def resolved_sql(alias: str, column: str) -> str:
    """SQL for `alias`.`column` of trials in either layout: the inline text, else the sealed text
    its hash names."""
    ref = f"{alias}.{hash_column(column)}"
    return (f"COALESCE({alias}.{column}, (SELECT x.body FROM texts x WHERE x.sha256 = {ref} "
            f"AND {covered(TABLE, 'x.id')}))")


def resolved(column: str) -> ColumnElement[Any]:
    """`resolved_sql` for an ORM select over `Trial`, labelled `column`."""
    name = f"text_{column}"
    stored = aliased(StoredText, name=name)
    body = (select(stored.body).where(stored.sha256 == getattr(Trial, hash_column(column)),
                                      text(covered(TABLE, f"{name}.id"))).scalar_subquery())
    return func.coalesce(getattr(Trial, column), body).label(column)


def load(session: Session, hashes: Iterable[str]) -> dict[str, str]:
    """sha256 -> body of the sealed texts among `hashes`."""
    wanted = sorted(set(hashes))
    if not wanted:
        return {}
    query = select(StoredText.sha256, StoredText.body).where(StoredText.sha256.in_(wanted),
                                                             text(covered(TABLE, "texts.id")))
    return {h: b for h, b in session.execute(query).all()}


def resolved_text(inline: str | None, digest: str | None, bodies: Mapping[str, str]) -> str | None:
    """`resolved_sql` in Python: the inline text, else the text its hash names among `bodies`
    (sha256 -> body of sealed texts), else None."""
    return inline if inline is not None or digest is None else bodies.get(digest)


def trial_texts(session: Session, trial: Trial) -> dict[str, str | None]:
    """One loaded trial's four texts, from either layout."""
    refs = {c: getattr(trial, hash_column(c)) for c in TEXT_COLUMNS}
    bodies = load(session, (h for h in refs.values() if h))
    return {c: resolved_text(getattr(trial, c), refs[c], bodies) for c in TEXT_COLUMNS}

