"""SIGTERM (what a CI runner's cancel, `docker stop` and `kill` send) stops a run the way Ctrl-C
does: the run is marked `interrupted`, keeps its finished trials, and the command that resumes it
is printed (exit 130), instead of dying with 143 and no trace.

The run is the real CLI in a child process against a stand-in Ollama server whose answers take
0.3 s each, so the signal arrives while model trials remain.
"""

from __future__ import annotations

import json
import signal
import time

from tests.reliability.conftest import (
    SlowReply,
    assert_no_traceback,
    count_trials,
    only_run_id,
    run_events,
    stop_with,
    wait_for_trials,
)
from tests.support.fake_ollama import FakeOllama

LIMIT, REPEATS = 8, 2
TOTAL = 2 * LIMIT * REPEATS  # ollama:tiny and the mock line beside it


def generation_args(host: str) -> list[str]:
    return ["--cache", "off", "generation", "--model", "ollama:tiny", "--ollama-host", host,
            "--mode", "oracle", "--limit", str(LIMIT), "--repeats", str(REPEATS)]


def test_sigterm_marks_the_run_interrupted_and_prints_the_resume_command(project):
    reply = SlowReply(0.3)
    with FakeOllama(reply=reply) as server:
        child = project.start(*generation_args(server.url))
        wait_for_trials(project, child, at_least=3)
        _, stderr = stop_with(child, signal.SIGTERM, bound=15.0)

        assert child.returncode == 130, stderr
        assert_no_traceback(stderr)
        run_id = only_run_id(project)
        finished = count_trials(project)
        assert 3 <= finished < TOTAL
        assert stderr.strip().splitlines()[-1] == (
            f"ragqual: interrupted: run {run_id} keeps the {finished} trial(s) it finished this time; "
            f"`ragqual generation --resume {run_id}` runs the rest")
        assert run_events(project, run_id) == ["started", "interrupted"]
        detail = json.loads(project.scalar(
            "SELECT detail FROM run_events WHERE run_id=? AND event='interrupted'", (run_id,)))
        assert detail["trials_stored"] == finished and detail["of"] == TOTAL
        assert project.scalar("SELECT status FROM v_run_status WHERE run_id=?", (run_id,)) == "interrupted"

        # and the printed command finishes it
        reply.delay = 0
        resumed = project.run("generation", "--resume", str(run_id), env={"OLLAMA_HOST": server.url})
        assert resumed.returncode == 0, resumed.stderr
    assert count_trials(project) == TOTAL
    assert run_events(project, run_id) == ["started", "interrupted", "resumed", "finished"]


def test_sigterm_while_waiting_on_the_warm_up_exits_130_with_one_line(project):
    """A run that has stored no trial yet (waiting on the model's warm-up, which never answers
    here) also stops on SIGTERM as `interrupted`, with the command that resumes it."""
    with FakeOllama(reply=SlowReply(60.0)) as server:
        child = project.start(*generation_args(server.url))
        deadline = time.monotonic() + 120
        while server.calls["/api/generate"] == 0:  # the warm-up request has arrived
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.05)
        _, stderr = stop_with(child, signal.SIGTERM, bound=15.0)
    assert child.returncode == 130, stderr
    assert_no_traceback(stderr)
    run_id = only_run_id(project)
    assert stderr.strip().splitlines()[-1] == (
        f"ragqual: interrupted: run {run_id} keeps the 0 trial(s) it finished this time; "
        f"`ragqual generation --resume {run_id}` runs the rest")
    assert run_events(project, run_id) == ["started", "interrupted"]
