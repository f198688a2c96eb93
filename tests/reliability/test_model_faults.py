"""Model server faults seen through the CLI: the real `ollama` client against a stand-in server.

A server that cannot serve at all (refused at the start, model not pulled) stops the run with
exit 3 and one line saying what to run; a server gone mid-run fails calls until the circuit
breaker trips (exit 3, one line saying how to resume); a fault in one call (a reply that never ends, a 500,
malformed JSON) is retried where that makes sense and then recorded on that trial, and the run
goes on. Whatever finished before a fault is kept.
"""

from __future__ import annotations

import json

import pytest

from ragqual.adapters.model_registry import TIMEOUT_ENV, make_model, model_timeout
from ragqual.engine.breaker import THRESHOLD_ENV
from ragqual.errors import InputError
from tests.reliability.conftest import (
    SlowReply,
    assert_no_traceback,
    count_trials,
    only_run_id,
    run_events,
    wait_for_trials,
)
from tests.support.fake_ollama import FakeOllama, refused_url

MODEL_TIMEOUT = "0.75"  # seconds; the client default (120 s) would make a hang test take minutes
ATTEMPTS = 3  # the Ollama backend retries a timeout or a 5xx twice


def generation_args(host: str, limit: int, *extra: str) -> list[str]:
    return ["--cache", "off", "generation", "--model", "ollama:tiny", "--ollama-host", host,
            "--mode", "oracle", "--limit", str(limit), "--repeats", "1", *extra]


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


class ScheduledFaults(FakeOllama):
    """Serves the faults of `schedule` to successive chat requests, one each, then answers normally."""

    def __init__(self, schedule: list[str], **kwargs):
        super().__init__(**kwargs)
        self.schedule = list(schedule)

    def take_fault(self, path: str) -> str | None:
        with self._lock:
            if path != "/api/chat" or not self.schedule:
                return None
            self.faults_served += 1
            return self.schedule.pop(0)


# -- the server cannot serve: exit 3, one line ------------------------------------------------------

def test_connection_refused_is_one_line_naming_the_host_and_how_to_start_it(project):
    host = refused_url()
    result = project.run(*generation_args(host, 2))
    assert result.returncode == 3
    assert_no_traceback(result.stderr)
    assert result.stderr.strip() == (f"ragqual: error: Ollama is not reachable at {host}: start it with "
                                     "`ollama serve` or pass --ollama-host / set OLLAMA_HOST")
    assert count_trials(project) == 0


def test_missing_model_names_ollama_pull(project):
    with FakeOllama(models={"other:latest": "sha256:" + "1" * 64}) as server:
        host = server.url
        result = project.run(*generation_args(host, 2))
        chats = server.calls["/api/chat"]
    assert result.returncode == 3
    assert_no_traceback(result.stderr)
    assert last_line(result.stderr) == (f"ragqual: error: model 'tiny' is not present on {host}: "
                                        "run `ollama pull tiny`")
    assert chats == 0
    # refused before the run starts (before the history is even opened): no empty failed run
    assert not project.db_path.exists() or project.scalar("SELECT COUNT(*) FROM runs") == 0
    assert count_trials(project) == 0


def test_a_server_gone_mid_run_trips_the_breaker_with_exit_3_and_keeps_what_finished(project):
    reply = SlowReply(0.3)
    with FakeOllama(reply=reply) as server:
        host = server.url
        child = project.start(*generation_args(host, 8, "--no-mock-line"))
        seen_alive = wait_for_trials(project, child, at_least=2)
        server.stop()  # every later request is refused: retried, recorded, then the breaker trips
        stdout, stderr = child.communicate(timeout=120)

    assert child.returncode == 3, stderr
    assert_no_traceback(stderr)
    run_id = only_run_id(project)
    assert last_line(stderr) == (
        # the server answered before it went: "cannot connect", never "not reachable"
        f"ragqual: error: the model server failed 5 calls in a row (last: ConnectionError: cannot connect "
        f"to Ollama at {host}); "
        f"run {run_id} stopped as failed: when the server answers again, finish it with "
        f"`ragqual generation --resume {run_id}` (the limit is RAGQUAL_MAX_FAILURES, default 5)")
    kept = count_trials(project)
    answered = project.scalar("SELECT COUNT(*) FROM trials WHERE error IS NULL")
    failed = project.query("SELECT error FROM trials WHERE error IS NOT NULL")
    assert seen_alive <= answered < 8
    assert reply.answered - 1 <= answered <= reply.answered
    # 3 attempts of one trial, recorded as its error, then 2 attempts of the next: the breaker trips
    assert [e for (e,) in failed] == [f"Ollama at {host} failed on 'tiny' after 3 attempts: ConnectionError: "
                                      f"cannot connect to Ollama at {host}"]
    assert run_events(project, run_id) == ["started", "failed"]
    detail = json.loads(project.scalar("SELECT detail FROM run_events WHERE run_id=? AND event='failed'", (run_id,)))
    assert detail["trials_stored"] == kept and detail["error"].startswith("CircuitOpen: the model server failed 5")


# -- one call fails: recorded on its trial, the run goes on -----------------------------------------

def test_hang_500_and_malformed_json_are_recorded_per_trial_and_the_run_finishes(project):
    schedule = (["hang"] * ATTEMPTS                 # trial 1: every attempt times out
                + ["http_500"] * ATTEMPTS           # trial 2: every attempt gets a 500
                + ["malformed_json"]                # trial 3: not retried
                + ["http_500"] * (ATTEMPTS - 1))    # trial 4: the last retry succeeds
    with ScheduledFaults(schedule, hang_seconds=10.0) as server:
        result = project.run(*generation_args(server.url, 5, "--no-mock-line"),
                             env={TIMEOUT_ENV: MODEL_TIMEOUT, THRESHOLD_ENV: "10"})  # 6 failures in a row here
        host, chats, left = server.url, server.calls["/api/chat"], server.schedule

    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    assert left == []
    assert chats == 3 * ATTEMPTS + 1 + 1  # trials 1, 2 and 4 used every attempt; 3 and 5 one each
    assert "5 trials (0 already done)" in result.stdout and "3 trial errors" in result.stdout

    run_id = only_run_id(project)
    assert run_events(project, run_id) == ["started", "finished"]
    rows = project.query(
        "SELECT t.id, t.error, s.score FROM trials t JOIN trial_scores s ON s.trial_id = t.id "
        "WHERE t.run_id=? ORDER BY t.id", (run_id,))
    errors = [error for _, error, _ in rows]
    assert errors[0] == f"model 'tiny' on {host} timed out after {ATTEMPTS} attempts ({MODEL_TIMEOUT} s each)"
    assert errors[1] == (f"Ollama at {host} failed on 'tiny' after {ATTEMPTS} attempts: "
                         "HTTP 500: llama runner process has terminated: exit status 2")
    assert errors[2].startswith(f"malformed response from Ollama at {host}: ")
    assert errors[3:] == [None, None]
    assert [score for _, _, score in rows[:3]] == [0.0, 0.0, 0.0]
    for trial_id, error, _ in rows[:3]:
        details = project.query("SELECT passed, detail FROM assertion_results WHERE trial_id=?", (trial_id,))
        assert details and all(not passed and detail == f"not evaluated: the trial failed: {error}"
                               for passed, detail in details)
    answered = project.query("SELECT x.parsed_output FROM trials t JOIN v_trial_texts x ON x.trial_id = t.id WHERE t.run_id=? AND t.error IS NULL", (run_id,))
    assert len(answered) == 2 and all(out.startswith("echo: ") for (out,) in answered)


# -- the timeout setting -----------------------------------------------------------------------------

def test_model_timeout_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert model_timeout() == 120.0
    monkeypatch.setenv(TIMEOUT_ENV, "2.5")
    assert model_timeout() == 2.5
    assert model_timeout(7.0) == 7.0  # an explicit timeout wins
    assert make_model("ollama:tiny", ollama_host="http://127.0.0.1:9").timeout == 2.5


@pytest.mark.parametrize("value", ["soon", "0", "-1", "inf", "nan"])
def test_a_bad_model_timeout_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(TIMEOUT_ENV, value)
    with pytest.raises(InputError, match=TIMEOUT_ENV):
        model_timeout()
