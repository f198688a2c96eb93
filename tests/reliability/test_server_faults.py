"""Whole runs against an OpenAI-compatible stand-in server that misbehaves, through the real CLI.

A server that drops every 3rd connection costs retries, never the run (exit 0); a hung server
trips the circuit breaker after K failed attempts in a row (exit 3, the run `failed`, one line
that says how to resume); a 10 MB answer is stored capped, with its original size and a flag.
A server that never answers is refused before any run is recorded; the warm-up has the retries
of any call; a key that a server echoes back is stored and printed nowhere.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from ragqual.adapters.model_registry import RETRIES_ENV, TIMEOUT_ENV
from ragqual.engine.breaker import THRESHOLD_ENV
from ragqual.engine.output_cap import DEFAULT_CAP
from tests.reliability.conftest import assert_no_traceback, count_trials, only_run_id, run_events
from tests.support.fake_ollama import refused_url
from tests.support.fake_openai import FakeOpenAI, always, every, is_warm_up


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
    rows = project.query("SELECT length(CAST(x.raw_output AS BLOB)), length(x.parsed_output), raw_output_bytes, "
                         "output_truncated FROM trials t JOIN v_trial_texts x ON x.trial_id = t.id ORDER BY id")
    assert len(rows) == 3
    for raw_len, parsed_len, original, truncated in rows:
        assert raw_len <= DEFAULT_CAP
        assert parsed_len <= DEFAULT_CAP
        assert original > 10_000_000 and truncated == 1
    scored = project.query("SELECT parsed_output FROM v_trial_texts LIMIT 1")[0][0]
    assert set(scored) == {"x"}  # the kept text is what was scored: the answer's first part
    assert project.db_path.stat().st_size < 4 * 1024 * 1024


# -- a server that never answers: refused before a run is recorded ---------------------------------

UNREACHABLE_COMMANDS = {
    "generation": ["generation", "--model", "{m}", "--no-mock-line", "--mode", "oracle", "--limit", "2",
                   "--repeats", "1"],
    "eval": ["eval", "--model", "{m}", "--limit", "2", "--repeats", "1"],
    "matrix": ["matrix", "--models", "{m}", "--limit", "2", "--repeats", "1"],
    "run": ["run", "--subject", "sentiment", "--model", "{m}", "--trial-count", "1"],
}


def run_count(project) -> int:
    return int(project.scalar("SELECT COUNT(*) FROM runs")) if project.db_path.exists() else 0


@pytest.mark.parametrize("command", sorted(UNREACHABLE_COMMANDS))
def test_an_unreachable_openai_server_is_refused_before_any_run_is_recorded(project, command):
    model = f"openai:{refused_url()}/v1#m"
    result = project.run("--cache", "off", *[a.replace("{m}", model) for a in UNREACHABLE_COMMANDS[command]])
    assert result.returncode == 3, result.stderr
    assert_no_traceback(result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ragqual: error: no OpenAI-compatible server is reachable at http://127.0.0.1:")
    assert "never answered" in lines[0]
    assert run_count(project) == 0


def test_an_unreachable_server_leaves_report_last_on_the_previous_run(project):
    first = project.run("--cache", "off", "generation", "--model", "mock", "--no-mock-line", "--mode", "oracle",
                        "--limit", "2", "--repeats", "1")
    assert first.returncode == 0, first.stderr
    result = project.run("--cache", "off", "generation", "--model", f"openai:{refused_url()}/v1#m",
                         "--no-mock-line", "--mode", "oracle", "--limit", "2", "--repeats", "1")
    assert result.returncode == 3, result.stderr
    assert run_count(project) == 1
    assert project.query("SELECT event FROM run_events ORDER BY id") == [("started",), ("finished",)]


# -- the warm-up has the retries of a trial --------------------------------------------------------

def drop_first_warm_up_of_each_model() -> Any:
    seen: set[str] = set()

    def fault(i: int, body: dict[str, Any]) -> str | None:
        if is_warm_up(body) and body["model"] not in seen:
            seen.add(body["model"])
            return "drop"
        return None

    return fault


def test_a_warm_up_that_meets_one_dropped_connection_is_retried_and_the_run_finishes(project):
    with FakeOpenAI(fault_for=drop_first_warm_up_of_each_model()) as server:
        result = project.run(*openai_args(server, 3))
        served = list(server.served)
    assert result.returncode == 0, result.stderr
    run_id = only_run_id(project)
    assert run_events(project, run_id) == ["started", "finished"]
    assert trial_errors(project, run_id) == [None] * 3
    assert served == ["drop", "ok", "ok", "ok", "ok"]  # the warm-up twice, then 3 trials


def test_the_second_models_warm_up_meeting_a_dropped_connection_mid_run_is_retried(project):
    with FakeOpenAI(fault_for=drop_first_warm_up_of_each_model()) as server:
        result = project.run("--cache", "off", "generation", "--model", f"openai:{server.base_url}#m",
                             "--model", f"openai:{server.base_url}#m2", "--no-mock-line", "--mode", "oracle",
                             "--limit", "3", "--repeats", "1")
        served = list(server.served)
    assert result.returncode == 0, result.stderr
    run_id = only_run_id(project)
    assert run_events(project, run_id) == ["started", "finished"]
    assert trial_errors(project, run_id) == [None] * 6
    assert served.count("drop") == 2 and served[5] == "drop"  # m2's warm-up comes after m's 3 trials


def test_a_warm_up_failing_every_attempt_after_the_server_answered_is_not_called_unreachable(project):
    with FakeOpenAI(fault_for=lambda i, body: "drop" if is_warm_up(body) else None) as server:
        result = project.run(*openai_args(server, 3))
        base, gets = server.base_url, server.gets
    assert gets >= 1  # the server answered GET /models before the run started
    assert result.returncode == 0, result.stderr
    run_id = only_run_id(project)
    errors = trial_errors(project, run_id)
    assert errors[1:] == [None, None]
    assert errors[0].startswith(f"the warm-up call failed: {base} failed on 'm' after 3 attempts: "
                                "RemoteProtocolError")
    assert "reachable" not in errors[0] and "reachable" not in result.stderr


# -- a key echoed by a server is stored and printed nowhere ----------------------------------------

def test_an_api_key_echoed_by_the_server_reaches_no_file_and_no_output(project, tmp_path):
    key = "sk-test-" + secrets.token_hex(16)
    env = {"OPENAI_API_KEY": key, RETRIES_ENV: "0"}
    faults = {3: "echo_auth_500", 4: "echo_auth", 5: "echo_auth_500"}  # 1: the warm-up; trial k is k + 1
    with FakeOpenAI(faults=faults.get) as server:
        result = project.run(*openai_args(server, 4), env=env)
    assert result.returncode == 0, result.stderr
    run_id = only_run_id(project)
    errors = trial_errors(project, run_id)
    assert [e is not None for e in errors] == [False, True, False, True]
    assert "Authorization: Bearer ***" in errors[1]  # the server did echo it: it was masked
    raw = project.scalar("SELECT raw_output FROM v_trial_texts WHERE run_id=? ORDER BY trial_id LIMIT 1 OFFSET 2", (run_id,))
    assert "Bearer ***" in raw
    printed = result.stdout + result.stderr
    for args in (["report", "--last", "--failures"], ["report", "--last", "--format", "html", "-o", "page.html"],
                 ["export", str(run_id), "--format", "csv", "--out", "export"], ["audit", "2"]):
        shown = project.run(*args, env=env)
        assert shown.returncode == 0, shown.stderr
        printed += shown.stdout + shown.stderr
    assert "Bearer ***" in printed  # report --failures shows the masked error
    files = [project.db_path, *project.db_path.parent.glob("eval.db-*"), project.root / "page.html",
             *(project.root / "export").rglob("*")]
    assert any(p.name.endswith(".csv") for p in files)
    holding = [str(p) for p in files if p.is_file() and key.encode() in p.read_bytes()]
    assert holding == [] and key not in printed


def test_an_api_key_echoed_in_an_answer_reaches_neither_the_history_nor_the_response_cache(project):
    key = "sk-test-" + secrets.token_hex(16)
    with FakeOpenAI(faults=lambda i: "echo_auth" if i > 1 else None) as server:
        args = ["generation", "--model", f"openai:{server.base_url}#m", "--no-mock-line", "--mode", "oracle",
                "--limit", "2", "--repeats", "1"]  # the cache is on (auto)
        result = project.run(*args, env={"OPENAI_API_KEY": key})
    assert result.returncode == 0, result.stderr
    answers = [row[0] for row in project.query("SELECT parsed_output FROM v_trial_texts ORDER BY trial_id")]
    assert len(answers) == 2 and all("Authorization: Bearer ***" in a for a in answers)
    files = [p for p in project.root.rglob("*") if p.is_file()]
    assert any("cache" in p.parts for p in files)
    assert [str(p) for p in files if key.encode() in p.read_bytes()] == []
    assert key not in result.stdout + result.stderr
