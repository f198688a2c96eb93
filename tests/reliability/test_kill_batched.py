"""kill -9 at random points of a run that appends in batches, then `--resume`: no slot lost, none
stored twice, no model answer computed twice.

The run is the real CLI in a child process against a stand-in Ollama server on 127.0.0.1. Trials are
appended five at a time (RAGQUAL_APPEND_BATCH=5, no time limit), so a kill loses the trials that
were waiting for their batch. The server holds its k-th answer (k drawn at random) until the child
is killed while waiting for it, so every answer the server gave reached the child and its response
cache: the resumed runs must ask the server exactly for the answers it never gave. The same runs
go to PostgreSQL when RAGQUAL_TEST_PG_URL names a server.
"""

from __future__ import annotations

import random
import re
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.reliability.conftest import RUN_TIMEOUT, assert_no_traceback
from tests.support.fake_ollama import FakeOllama

LIMIT, REPEATS = 10, 2
MODEL_SLOTS = LIMIT * REPEATS  # ollama:tiny in oracle mode
TOTAL = 2 * MODEL_SLOTS  # and the mock line beside it
BATCH = {"RAGQUAL_APPEND_BATCH": "5", "RAGQUAL_APPEND_BATCH_MS": "600000"}


class HeldAnswer:
    """Answers chat calls at once, except the `hold_at`-th (1-based, counted over every child),
    which waits until released and is never delivered. `answered` counts delivered answers."""

    def __init__(self) -> None:
        self.asked = 0
        self.answered = 0
        self.hold_at: int | None = None
        self.holding = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        if "messages" not in body:  # the warm-up
            return "ok"
        with self._lock:
            self.asked += 1
            held = self.asked == self.hold_at
        if held:
            self.holding.set()
            self.release.wait(RUN_TIMEOUT)
            return "never delivered: the child was killed while waiting"
        with self._lock:
            self.answered += 1
        return "The answer is 42."


class History:
    def __init__(self, url: str):
        self.engine = create_engine(url, poolclass=NullPool)

    def rows(self, sql: str, **params: Any) -> list[tuple]:
        try:
            with self.engine.connect() as conn:
                return [tuple(r) for r in conn.execute(text(sql), params)]
        except Exception:  # noqa: BLE001 - not created or not migrated yet
            return []

    def scalar(self, sql: str, **params: Any) -> Any:
        found = self.rows(sql, **params)
        return found[0][0] if found else 0


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def history_url(request, project) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{project.db_path}"
        return
    from tests.store.conftest import throwaway_pg_database

    with throwaway_pg_database() as url:
        yield url


def args(host: str, *extra: str) -> list[str]:
    return ["generation", "--model", "ollama:tiny", "--ollama-host", host, "--mode", "oracle",
            "--limit", str(LIMIT), "--repeats", str(REPEATS), *extra]


def kill_while_held(project, env: dict[str, str], reply: HeldAnswer, at: int, *argv: str) -> None:
    """Start the run; SIGKILL it while the server holds its `at`-th answer."""
    reply.hold_at, reply.holding, reply.release = at, threading.Event(), threading.Event()
    child = project.start(*argv, env=env)
    if not reply.holding.wait(RUN_TIMEOUT):
        child.kill()
        pytest.fail(f"the run never asked for answer {at}: {child.communicate()}")
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    reply.release.set()


def kill_points(rng: random.Random) -> tuple[int, int]:
    """Two answers to hold, at least one of them in the middle of a batch. A kill while answer k is
    held finds k - 1 answers delivered, (k - 1) % 5 of them waiting for their batch; when both
    kills land on a batch boundary nothing is waiting, and the run would test no batch."""
    while True:
        first, second = sorted(rng.sample(range(2, MODEL_SLOTS), 2))
        if (first - 1) % 5 or (second - 1) % 5:
            return first, second


def test_kill_points_always_leave_a_trial_waiting_for_its_batch():
    for seed in (275224, *range(300)):
        first, second = kill_points(random.Random(seed))
        assert 2 <= first < second < MODEL_SLOTS
        assert (first - 1) % 5 + (second - 1) % 5 > 0, seed


def test_kill_9_at_random_points_then_resume_loses_nothing_and_recomputes_no_answer(project, history_url):
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    first, second = kill_points(rng)
    note = f"seed {seed}: killed while answers {first} and {second} were held"
    env = {"RAGQUAL_DB": history_url, **BATCH}
    history = History(history_url)
    reply = HeldAnswer()
    lost = []
    with FakeOllama(reply=reply) as server:
        kill_while_held(project, env, reply, first, *args(server.url))
        run_id = int(history.scalar("SELECT MIN(id) FROM runs"))
        assert run_id, note
        for at in (second, None):
            stored = history.scalar("SELECT COUNT(*) FROM trials WHERE run_id = :r", r=run_id)
            # each answer the server gave is a finished trial, stored or waiting for its batch
            lost.append(reply.answered - stored)
            assert 0 <= lost[-1] < 5, note
            assert stored % 5 == 0, note  # whole batches only
            if at is not None:
                kill_while_held(project, env, reply, at + 1, *args(server.url, "--resume", str(run_id)))
        reply.hold_at = None
        asked_before = reply.asked
        done = project.start(*args(server.url, "--resume", str(run_id)), env=env)
        out, err = done.communicate(timeout=RUN_TIMEOUT)
        assert done.returncode == 0, err
        assert_no_traceback(err)
        calls_on_resume = reply.asked - asked_before

    # no model answer computed twice: every answer the server delivered was used once
    assert reply.answered == MODEL_SLOTS, note
    assert history.scalar("SELECT COUNT(*) FROM trials WHERE run_id = :r", r=run_id) == TOTAL, note
    final = re.search(r"run \d+: (\d+) trials \((\d+) already done\), (\d+) model calls, (\d+) cache hits", out)
    assert final, out
    ran, already, calls, hits = map(int, final.groups())
    # the mock line runs after the model's trials, all of it in this last run: its calls are misses too
    assert (ran + already, calls) == (TOTAL, calls_on_resume + MODEL_SLOTS), note
    assert hits == ran - calls, note  # the trials lost at the kill came back from the response cache
    assert sum(lost) > 0, f"{note}: no kill lost a waiting trial; the test did not exercise a batch"
    assert history.rows("SELECT case_pk, variant_id, mode, repeat_index FROM trials WHERE run_id = :r "
                        "GROUP BY case_pk, variant_id, mode, repeat_index HAVING COUNT(*) > 1", r=run_id) == []
    assert history.scalar("SELECT COUNT(*) FROM trials t WHERE t.run_id = :r AND NOT EXISTS "
                          "(SELECT 1 FROM trial_scores s WHERE s.trial_id = t.id)", r=run_id) == 0
    events = [e for (e,) in history.rows("SELECT event FROM run_events WHERE run_id = :r ORDER BY id", r=run_id)]
    assert events == ["started", "resumed", "resumed", "finished"], note
    verified = project.run("verify", env={"RAGQUAL_DB": history_url})
    assert verified.returncode == 0, verified.stdout + verified.stderr
