"""`--worker`: several processes of the real CLI finish one run on one PostgreSQL history.

A stand-in OpenAI-compatible server on 127.0.0.1 holds every answer until the test lets them go,
so each worker is known to hold a claimed slot at the same moment; then they interleave. The
trial set must be the one a single process produces, with no slot twice, one `finished` event
and a history that passes `verify`. On SQLite `--worker` is refused (exit 2) before anything is
recorded.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.reliability.conftest import RUN_TIMEOUT, Project, assert_no_traceback
from tests.support.fake_openai import FakeOpenAI, is_warm_up

TRIALS_SQL = ("SELECT c.case_id, v.name, t.mode, t.repeat_index, t.parsed_output, t.error, s.score "
              "FROM trials t JOIN cases c ON c.id = t.case_pk JOIN variant_configs v ON v.id = t.variant_id "
              "JOIN trial_scores s ON s.trial_id = t.id WHERE t.run_id = {p}")
JOINED = re.compile(r"run (\d+): worker started, (\d+) slot\(s\) missing")
RAN = re.compile(r"this worker ran (\d+) trial\(s\)")


@pytest.fixture
def pg_url() -> Iterator[str]:
    from tests.store.conftest import throwaway_pg_database

    with throwaway_pg_database() as url:
        yield url


class GatedServer:
    """Answers (a fixed text per prompt) only once `go` is set; counts the answers waiting for it."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.waiting = 0
        self.lock = threading.Lock()
        self.server = FakeOpenAI(reply=self.reply)

    def reply(self, body: dict[str, Any]) -> str:
        if is_warm_up(body):
            return "ready"
        with self.lock:
            self.waiting += 1
        self.go.wait(RUN_TIMEOUT)
        time.sleep(0.005)  # a little work, so that the workers' appends interleave
        text = body["messages"][-1]["content"]
        return "positive" if len(text) % 3 == 0 else ("negative" if len(text) % 3 == 1 else "neutral")

    def wait_for(self, answers: int, children: list[subprocess.Popen]) -> None:
        deadline = time.monotonic() + RUN_TIMEOUT
        while time.monotonic() < deadline:
            with self.lock:
                if self.waiting >= answers:
                    return
            for child in children:
                if child.poll() is not None:
                    pytest.fail(f"a worker ended (exit {child.returncode}) early: {child.communicate()}")
            time.sleep(0.05)
        pytest.fail(f"fewer than {answers} answers were asked for")


def pg_rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    from tests.store.conftest import raw_connect

    con = raw_connect(url)
    try:
        return [tuple(r) for r in con.execute(sql, params).fetchall()]
    finally:
        con.close()


def joined_run(child: subprocess.Popen) -> int:
    """The run id from the worker's first stderr line (read while it keeps running)."""
    line = child.stderr.readline()
    found = JOINED.search(line)
    if not found:
        out, err = child.communicate(timeout=RUN_TIMEOUT)
        pytest.fail(f"no 'worker started' line: {line}{err}{out}")
    return int(found.group(1))


def finish(child: subprocess.Popen) -> tuple[str, str]:
    out, err = child.communicate(timeout=RUN_TIMEOUT)
    assert child.returncode == 0, err
    assert_no_traceback(err)
    return out, err


def run_workers(project: Project, pg_url: str, args: tuple[str, ...], command: str, workers: int) -> tuple[int, list[int]]:
    """`workers` processes on one run (the first starts it); each holds a claim before any answer comes."""
    gate = GatedServer()
    with gate.server as server:
        model = f"openai:{server.base_url}#m"
        full = tuple(a.replace("{m}", model) for a in args)
        first = project.start("--cache", "off", "--db", pg_url, *full, "--worker")
        run_id = joined_run(first)
        others = [project.start("--cache", "off", "--db", pg_url, command, "--resume", str(run_id), "--worker")
                  for _ in range(workers - 1)]
        for child in others:
            assert joined_run(child) == run_id
        children = [first, *others]
        gate.wait_for(workers, children)
        gate.go.set()
        ran = []
        for child in children:
            _, err = finish(child)
            ran.append(int(RAN.search(err).group(1)))
        reference = project.run("--cache", "off", *full)
    assert reference.returncode == 0, reference.stderr
    return run_id, ran


def same_trials(project: Project, pg_url: str, run_id: int) -> None:
    shared = pg_rows(pg_url, TRIALS_SQL.format(p="%s"), (run_id,))
    with sqlite3.connect(project.db_path) as con:
        ref_run = con.execute("SELECT MAX(id) FROM runs").fetchone()[0]
        single = con.execute(TRIALS_SQL.format(p="?"), (ref_run,)).fetchall()
    assert len(shared) == len(set(shared)) == len(single)  # no slot twice
    assert sorted(map(str, shared)) == sorted(map(str, single))


def run_ended_once(pg_url: str, run_id: int, joined: int) -> None:
    events = [e for (e,) in pg_rows(pg_url, "SELECT event FROM run_events WHERE run_id = %s ORDER BY id", (run_id,))]
    assert events[0] == "started" and events[-1] == "finished", events
    assert events.count("finished") == 1, events
    assert events.count("resumed") <= joined, events
    assert not {"failed", "interrupted"} & set(events), events


def verified(project: Project, pg_url: str) -> None:
    result = project.run("--db", pg_url, "verify")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.postgres
def test_four_workers_finish_one_subject_run_as_one_process_does(project, pg_url):
    args = ("run", "--subject", "sentiment", "--model", "{m}", "--trial-count", "2")
    run_id, ran = run_workers(project, pg_url, args, "run", workers=4)
    assert all(n >= 1 for n in ran), ran  # each held a claim while the answers were held back
    assert sum(ran) == 30  # 15 cases x 2 repeats, each run by exactly one worker
    same_trials(project, pg_url, run_id)
    run_ended_once(pg_url, run_id, joined=3)
    verified(project, pg_url)


@pytest.mark.postgres
def test_two_workers_finish_one_generation_run_as_one_process_does(project, pg_url):
    args = ("generation", "--model", "{m}", "--no-mock-line", "--mode", "oracle", "--mode", "noretrieval",
            "--limit", "3", "--repeats", "2")
    run_id, ran = run_workers(project, pg_url, args, "generation", workers=2)
    assert all(n >= 1 for n in ran) and sum(ran) == 12, ran
    same_trials(project, pg_url, run_id)
    run_ended_once(pg_url, run_id, joined=1)
    verified(project, pg_url)


@pytest.mark.postgres
def test_a_killed_worker_frees_its_claim_and_another_finishes_the_run(project, pg_url):
    gate = GatedServer()
    with gate.server as server:
        args = ("run", "--subject", "sentiment", "--model", f"openai:{server.base_url}#m", "--trial-count", "1")
        doomed = project.start("--cache", "off", "--db", pg_url, *args, "--worker")
        run_id = joined_run(doomed)
        survivor = project.start("--cache", "off", "--db", pg_url, "run", "--resume", str(run_id), "--worker")
        assert joined_run(survivor) == run_id
        gate.wait_for(2, [doomed, survivor])
        doomed.kill()  # kill -9 while it holds a claimed slot
        doomed.communicate(timeout=30)
        gate.go.set()
        _, err = finish(survivor)
    assert int(RAN.search(err).group(1)) == 15  # the dead worker's slot too
    slots = pg_rows(pg_url, "SELECT case_pk, variant_id, mode, repeat_index FROM trials WHERE run_id = %s", (run_id,))
    assert len(slots) == len(set(slots)) == 15
    run_ended_once(pg_url, run_id, joined=1)
    verified(project, pg_url)


@pytest.mark.postgres
def test_a_worker_on_a_finished_run_finds_nothing_to_claim_and_writes_nothing(project, pg_url):
    first = project.run("--cache", "off", "--db", pg_url, "run", "--subject", "sentiment", "--trial-count", "1")
    assert first.returncode == 0, first.stderr
    before = pg_rows(pg_url, "SELECT id, event FROM run_events ORDER BY id")
    again = project.run("--db", pg_url, "run", "--resume", "1", "--worker")
    assert again.returncode == 0, again.stderr
    assert "run 1: nothing left to claim: all its slots are stored (run finished)" in again.stderr
    assert pg_rows(pg_url, "SELECT id, event FROM run_events ORDER BY id") == before


@pytest.mark.parametrize("args", [
    ("run", "--subject", "sentiment", "--trial-count", "1", "--worker"),
    ("generation", "--mode", "oracle", "--limit", "1", "--repeats", "1", "--worker"),
])
def test_worker_on_sqlite_is_refused_before_anything_is_recorded(project, args):
    result = project.run("--cache", "off", *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "--worker shares one run between processes through PostgreSQL" in lines[0]
    assert "ragqual merge" in lines[0]
    if project.db_path.exists():
        assert project.scalar("SELECT COUNT(*) FROM runs") == 0
