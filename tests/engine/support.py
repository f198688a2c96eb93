"""A tiny subject whose behaviour each test controls, and helpers to read the history raw."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from dataclasses import replace
from pathlib import Path

from ragqual.adapters.llm import ChatRequest
from ragqual.engine.assertions import Assertion, Equals, RegexIncludes
from ragqual.engine.cases import Case
from ragqual.engine.subject import Subject, reply_text

NS = uuid.UUID("6f1d3c1e-0000-4000-8000-000000000000")


def uid(name: str) -> str:
    return str(uuid.uuid5(NS, name))


def echo_case(slug: str, word: str, expected: str | None = None, *, weight: float = 1.0) -> Case:
    """A case whose input is `word`; it passes when the reply equals `expected` (default: word)."""
    return Case(
        id=uid(slug), slug=slug, input=word,
        assertions=(
            Assertion(uid(slug + "/eq"), 1, "reply equals", Equals(expected or word), "EXACT", weight),
            Assertion(uid(slug + "/re"), 1, "has letters", RegexIncludes(r"[a-z]"), "FORMAT", 1.0),
        ),
    )


class ToySubject(Subject):
    """Echoes the input through the chat model; can be told to misbehave on the n-th trial."""

    name = "toy"
    system_prompt = "Repeat the word."

    def __init__(self, cases, *, interrupt_at=None, raise_at=None, error=None, no_telemetry=False,
                 metrics=False):
        self._cases = list(cases)
        self.interrupt_at = interrupt_at
        self.raise_at = raise_at
        self.error = error
        self.no_telemetry = no_telemetry
        self.metrics = metrics
        self.trials_started = 0
        self._lock = threading.Lock()

    def cases(self):
        return list(self._cases)

    def run_one(self, case, variant, mode, repeat_index, services):
        with self._lock:
            self.trials_started += 1
            n = self.trials_started
        if n == self.interrupt_at:
            raise KeyboardInterrupt
        if n == self.raise_at:
            raise self.error
        result = super().run_one(case, variant, mode, repeat_index, services)
        return replace(result, telemetry=None) if self.no_telemetry else result

    def parse(self, raw):
        return reply_text(raw)

    def mock_reply(self, request: ChatRequest) -> str:
        return request.messages[-1].content

    def extra_metrics(self, case, mode, output, result):
        return {"length": float(len(output))} if self.metrics else {}


def rows(db: Path, sql: str, *args) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def status(db: Path, run_id: int) -> str:
    return rows(db, "SELECT event FROM run_events WHERE run_id = ? ORDER BY id DESC LIMIT 1", run_id)[0][0]
