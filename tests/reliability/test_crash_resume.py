"""A generation run killed part-way keeps every finished trial, and `--resume` finishes it.

The run is the real CLI in a child process against a stand-in Ollama server whose answers take
0.3 s each, so the test can stop it while model trials remain. `--cache off` makes every
remaining slot reach the server on resume, so the server's call count shows exactly which
slots the resumed run did (a cache would hide a slot that was run twice).
"""

from __future__ import annotations

import json
import signal

from click.testing import CliRunner

from ragqual.cli.main import cli
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
MODEL_SLOTS = LIMIT * REPEATS  # ollama:tiny in oracle mode
TOTAL = 2 * MODEL_SLOTS  # and the mock line beside it
SLOW = 0.3


def generation_args(host: str, *extra: str) -> list[str]:
    return ["--cache", "off", "generation", "--model", "ollama:tiny", "--ollama-host", host,
            "--mode", "oracle", "--limit", str(LIMIT), "--repeats", str(REPEATS), *extra]


def model_trials(project, run_id: int) -> int:
    return project.scalar(
        "SELECT COUNT(*) FROM trials t JOIN variant_configs v ON v.id = t.variant_id "
        "WHERE t.run_id=? AND v.provider='ollama'", (run_id,))


def assert_every_trial_is_whole(project, run_id: int) -> None:
    """Each stored trial carries its score and assertion rows (one transaction per trial)."""
    unscored = project.scalar(
        "SELECT COUNT(*) FROM trials t WHERE t.run_id=? AND NOT EXISTS "
        "(SELECT 1 FROM trial_scores s WHERE s.trial_id = t.id)", (run_id,))
    unchecked = project.scalar(
        "SELECT COUNT(*) FROM trials t WHERE t.run_id=? AND NOT EXISTS "
        "(SELECT 1 FROM assertion_results a WHERE a.trial_id = t.id)", (run_id,))
    assert (unscored, unchecked) == (0, 0)


def duplicate_slots(project, run_id: int) -> list[tuple]:
    return project.query(
        "SELECT case_pk, variant_id, mode, repeat_index, COUNT(*) FROM trials WHERE run_id=? "
        "GROUP BY case_pk, variant_id, mode, repeat_index HAVING COUNT(*) > 1", (run_id,))


def assert_no_retriever_was_built(project) -> None:
    """Oracle mode injects the golden's own documents: no ingest, no Qdrant folder, no embeddings."""
    assert not (project.root / "eval-results" / "qdrant-edge").exists()
    assert not (project.root / "cache" / "embeddings").exists()


def in_process(project, monkeypatch, *args: str):
    """Read-only commands run in this process (no model, no writes), inside the project."""
    monkeypatch.chdir(project.root)
    return CliRunner().invoke(cli, list(args), env={"RAGQUAL_DB": str(project.db_path)}, catch_exceptions=False)


def test_sigkill_keeps_finished_trials_and_resume_calls_the_model_only_for_the_rest(project, monkeypatch):
    reply = SlowReply(SLOW)
    with FakeOllama(reply=reply) as server:
        child = project.start(*generation_args(server.url))
        seen_alive = wait_for_trials(project, child, at_least=3)
        stop_with(child, signal.SIGKILL)
        assert child.returncode == -signal.SIGKILL

        run_id = only_run_id(project)
        finished = count_trials(project)
        finished_model = model_trials(project, run_id)
        # committed as they finished: what the live run showed is still there, and at most the
        # one answer in flight at the kill is missing
        assert finished >= seen_alive >= 3
        assert reply.answered - 1 <= finished_model <= reply.answered
        assert finished_model < MODEL_SLOTS, "the kill came after the model trials: slow the reply down"
        assert_every_trial_is_whole(project, run_id)
        assert run_events(project, run_id) == ["started"]
        assert project.scalar("SELECT status FROM v_run_status WHERE run_id=?", (run_id,)) == "started"
        assert project.scalar("SELECT ended_at FROM v_run_status WHERE run_id=?", (run_id,)) is None

        # the history and the report show it as incomplete (no end event), with what it holds
        history = in_process(project, monkeypatch, "history")
        assert history.exit_code == 0 and "incomplete" in history.output and "finished" not in history.output
        report = json.loads(in_process(project, monkeypatch, "report", str(run_id), "--format", "json").output)
        assert report["header"]["status"] == "incomplete"

        chats_before, generates_before = server.calls["/api/chat"], server.calls["/api/generate"]
        resumed = project.run(*generation_args(server.url, "--resume", str(run_id)))
        assert resumed.returncode == 0, resumed.stderr
        assert_no_traceback(resumed.stderr)
        assert server.calls["/api/chat"] - chats_before == MODEL_SLOTS - finished_model
        assert server.calls["/api/generate"] - generates_before == 1  # the warm-up, not an answer

    assert f"({finished} already done)" in resumed.stdout
    assert_no_retriever_was_built(project)
    assert only_run_id(project) == run_id
    assert count_trials(project) == TOTAL
    assert model_trials(project, run_id) == MODEL_SLOTS
    assert duplicate_slots(project, run_id) == []
    assert_every_trial_is_whole(project, run_id)
    assert project.scalar("SELECT COUNT(*) FROM trials WHERE run_id=? AND error IS NOT NULL", (run_id,)) == 0
    assert run_events(project, run_id) == ["started", "resumed", "finished"]
    held = json.loads(project.scalar("SELECT detail FROM run_events WHERE run_id=? AND event='resumed'", (run_id,)))
    assert held == {"held": finished, "missing": TOTAL - finished}


def test_ctrl_c_stops_promptly_marks_the_run_interrupted_and_keeps_finished_trials(project):
    reply = SlowReply(SLOW)
    with FakeOllama(reply=reply) as server:
        child = project.start(*generation_args(server.url))
        seen_alive = wait_for_trials(project, child, at_least=3)
        _, stderr = stop_with(child, signal.SIGINT, bound=15.0)

        assert child.returncode == 130, stderr
        assert_no_traceback(stderr)
        run_id = only_run_id(project)
        finished = count_trials(project)
        # the interrupt names the run and the exact command that finishes it (issue 14)
        assert stderr.strip().splitlines()[-1] == (
            f"ragqual: interrupted: run {run_id} keeps the {finished} trial(s) it finished this time; "
            f"`ragqual generation --resume {run_id}` runs the rest")
        assert finished >= seen_alive
        assert reply.answered - 1 <= model_trials(project, run_id) <= reply.answered
        assert model_trials(project, run_id) < MODEL_SLOTS
        assert_every_trial_is_whole(project, run_id)
        assert run_events(project, run_id) == ["started", "interrupted"]
        detail = json.loads(project.scalar(
            "SELECT detail FROM run_events WHERE run_id=? AND event='interrupted'", (run_id,)))
        assert len(detail.pop("seal_head")) == 64  # the run's seal head when it stopped
        assert detail == {"trials_stored": finished, "of": TOTAL}
        assert project.scalar("SELECT status FROM v_run_status WHERE run_id=?", (run_id,)) == "interrupted"
        assert_no_retriever_was_built(project)

        # the printed command, as typed (the server comes from OLLAMA_HOST, not a flag): every other
        # setting of the plan (model, mode, limit, repeats, cache) is read from the stored run
        reply.delay = 0
        resumed = project.run("generation", "--resume", str(run_id), env={"OLLAMA_HOST": server.url})
        assert resumed.returncode == 0, resumed.stderr
    assert count_trials(project) == TOTAL
    assert duplicate_slots(project, run_id) == []
    assert run_events(project, run_id) == ["started", "interrupted", "resumed", "finished"]

