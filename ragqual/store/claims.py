"""Claims on a run's slots, so that several processes (or machines) finish one run with no slot done twice.

`ragqual generation --resume RUN --worker` and `ragqual run --resume RUN --worker` share one
PostgreSQL history. Each worker holds one extra connection, in autocommit, on which it takes
PostgreSQL session advisory locks:

    slot lock      pg_try_advisory_lock(run_id, slot_key)   one per (case, variant, mode, repeat)
    finishing lock pg_try_advisory_lock(-run_id, 0)          the one worker that ends the run

A worker claims a slot by taking its lock without waiting, then asking whether the run already
holds the slot's trial (a new statement, so it sees every commit made before the lock was
taken). The claim is held until the slot's trial is committed and only then released, so a
worker that takes the lock after the release always sees the trial and skips it. A worker that
dies (kill -9, a lost machine) loses its connection, PostgreSQL drops its locks, and the slots
it held become claimable again. Two slots whose 32-bit keys collide only wait for each other.
No row is written for a claim: the history stays append-only and the schema is unchanged;
`uq_trials_slot` stays the last guard against a slot stored twice.

SQLite has no such locks between processes: `--worker` is refused there (exit 2); separate
SQLite histories are combined with `ragqual merge` instead.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from ragqual.core.hashing import sha256_hex
from ragqual.errors import InputError

SlotKey = tuple[int, int, str, int]  # (case_pk, variant_id, mode, repeat_index), as the trial loop has it


def slot_lock_key(key: SlotKey) -> int:
    """A slot's advisory-lock key: the first 32 bits of sha256 over its four parts, as a signed int4."""
    case_pk, variant_id, mode, repeat_index = key
    return int.from_bytes(bytes.fromhex(sha256_hex(f"{case_pk}|{variant_id}|{mode}|{repeat_index}")[:8]),
                          "big", signed=True)


def require_shared(engine: Engine, command: str = "ragqual generation") -> None:
    """InputError (exit 2) unless the history is on PostgreSQL, the one engine `--worker` shares."""
    if engine.dialect.name != "postgresql":
        raise InputError(
            f"{command} --worker shares one run between processes through PostgreSQL advisory locks, but this history "
            f"is {engine.dialect.name} ({engine.url.render_as_string(hide_password=True)}): use --db "
            "postgresql://... for the workers, or run each machine into its own SQLite history and combine them "
            "with `ragqual merge A.db B.db --into C.db`")


class SlotClaims:
    """The slot claims of one worker on one run (thread-safe: trial threads claim, the main thread releases)."""

    def __init__(self, engine: Engine, run_id: int):
        require_shared(engine)
        self.run_id = run_id
        self._conn: Connection = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        self._mutex = threading.Lock()
        self._held: Counter[int] = Counter()
        self.claimed = 0

    def claim(self, key: SlotKey) -> bool:
        """Take the slot if no other worker holds it and the run does not hold its trial yet."""
        lock = slot_lock_key(key)
        with self._mutex:
            if not self._scalar("SELECT pg_try_advisory_lock(%s, %s)", (self.run_id, lock)):
                return False
            if self._scalar("SELECT EXISTS (SELECT 1 FROM trials WHERE run_id = %s AND case_pk = %s AND "
                            "variant_id = %s AND mode = %s AND repeat_index = %s)", (self.run_id, *key)):
                self._scalar("SELECT pg_advisory_unlock(%s, %s)", (self.run_id, lock))
                return False
            self._held[lock] += 1
            self.claimed += 1
            return True

    def release(self, key: SlotKey) -> None:
        """Give the slot back: call only once its trial is committed (or when it was not run)."""
        lock = slot_lock_key(key)
        with self._mutex:
            if self._held[lock] <= 0:
                return
            self._held[lock] -= 1
            self._scalar("SELECT pg_advisory_unlock(%s, %s)", (self.run_id, lock))

    @contextmanager
    def finishing(self) -> Iterator[bool]:
        """True inside for the one worker that may end the run (price it, write `finished`)."""
        with self._mutex:
            mine = bool(self._scalar("SELECT pg_try_advisory_lock(%s, 0)", (-self.run_id,)))
        try:
            yield mine
        finally:
            if mine:
                with self._mutex:
                    self._scalar("SELECT pg_advisory_unlock(%s, 0)", (-self.run_id,))

    def close(self) -> None:
        """Drop every lock this worker still holds and give the connection back."""
        with self._mutex:
            self._held.clear()
            if self._conn.closed:
                return
            try:
                self._conn.exec_driver_sql("SELECT pg_advisory_unlock_all()")
            except DBAPIError:  # the connection is gone, and its locks with it
                pass
            with suppress(DBAPIError):
                self._conn.close()

    def _scalar(self, sql: str, params: tuple[object, ...]) -> object:
        return self._conn.exec_driver_sql(sql, params).scalar()
