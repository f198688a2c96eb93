"""Whole runs against an OpenAI-compatible stand-in server that misbehaves, through the real CLI.

A server that drops every 3rd connection costs retries, never the run (exit 0); a hung server
trips the circuit breaker after K failed attempts in a row (exit 3, the run `failed`, one line
that says how to resume); a 10 MB answer is stored capped, with its original size and a flag.
"""

from __future__ import annotations

import json

from ragqual.adapters.model_registry import RETRIES_ENV, TIMEOUT_ENV
from ragqual.engine.breaker import THRESHOLD_ENV
from ragqual.engine.output_cap import DEFAULT_CAP
from tests.reliability.conftest import assert_no_traceback, count_trials, only_run_id, run_events
from tests.support.fake_openai import FakeOpenAI, always, every


def openai_args(server: FakeOpenAI, limit: int) -> list[str]:
    return ["--cache", "off", "generation", "--model", f"openai:{server.base_url}#m", "--no-mock-line",
            "--mode", "oracle", "--limit", str(limit), "--repeats", "1"]


def trial_errors(project, run_id: int) -> list[str | None]:
    return [row[0] for row in project.query("SELECT error FROM trials WHERE run_id=? ORDER BY id", (run_id,))]


def test_every_third_connection_dropped_costs_retries_and_the_run_finishes(project):
    with FakeOpenAI(faults=every(3, "drop")) as server:
        result = project.run(*openai_args(server, 6))
        served = list(server.served)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    run_id = only_run_id(project)
    assert run_events(project, run_id) == ["started", "finished"]
    assert trial_errors(project, run_id) == [None] * 6
    assert served.count("drop") == len(served) // 3 >= 2  # the drops happened and were retried


def test_without_retries_the_dropped_trials_are_recorded_as_errors_and_the_run_finishes(project):
    with FakeOpenAI(faults=every(3, "drop")) as server:
        # request 1 is the warm-up, so trials 2 and 5 (requests 3 and 6) meet a dropped connection
        result = project.run(*openai_args(server, 6), env={RETRIES_ENV: "0"})
        base = server.base_url
    assert result.returncode == 0, result.stderr
    assert "2 trial errors" in result.stdout
    run_id = only_run_id(project)
    assert run_events(project, run_id) == ["started", "finished"]
    errors = trial_errors(project, run_id)
    assert [e is not None for e in errors] == [False, True, False, False, True, False]
    assert errors[1].startswith(f"{base} failed on 'm' after 1 attempts: RemoteProtocolError")


def test_a_hung_server_trips_the_breaker_after_k_attempts_and_the_run_can_be_resumed(project):
    with FakeOpenAI(faults=always("hang")) as server:
        result = project.run(*openai_args(server, 8), env={TIMEOUT_ENV: "0.5", THRESHOLD_ENV: "5"})
        requests = server.requests
    assert result.returncode == 3, result.stderr
    assert_no_traceback(result.stderr)
    run_id = only_run_id(project)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ragqual: error: the model server failed 5 calls in a row (last: ReadTimeout)")
    assert f"run {run_id} stopped as failed" in last and f"`ragqual generation --resume {run_id}`" in last
    # the warm-up's 3 attempts (not repeated per trial), then 2 attempts of trial 2: 5 requests in all
    assert requests == 5
    assert run_events(project, run_id) == ["started", "failed"]
    assert count_trials(project) == 1  # trial 1 carries the failed warm-up; the rest is left to --resume
    detail = json.loads(project.scalar("SELECT detail FROM run_events WHERE event='failed'"))
    assert detail["error"].startswith("CircuitOpen: the model server failed 5 calls in a row")


def test_a_ten_megabyte_answer_is_stored_capped_with_its_size_and_a_flag(project):
    with FakeOpenAI(faults=lambda i: "huge" if i > 1 else None, huge_chars=10_000_000) as server:
        result = project.run(*openai_args(server, 3))
    assert result.returncode == 0, result.stderr
    rows = project.query("SELECT length(CAST(raw_output AS BLOB)), length(parsed_output), raw_output_bytes, "
                         "output_truncated FROM trials ORDER BY id")
    assert len(rows) == 3
    for raw_len, parsed_len, original, truncated in rows:
        assert raw_len <= DEFAULT_CAP
        assert parsed_len <= DEFAULT_CAP
        assert original > 10_000_000 and truncated == 1
    scored = project.query("SELECT parsed_output FROM trials LIMIT 1")[0][0]
    assert set(scored) == {"x"}  # the kept text is what was scored: the answer's first part
    assert project.db_path.stat().st_size < 4 * 1024 * 1024
