"""Hostile golden files in whole runs: a catastrophic regex cannot hang a run, and a broken
golden file stops every command with file and line before anything is written.

`(a|aa)+$` backtracks exponentially on a run of a's that does not end the text. (The classic
`(a+)+$` is no test here: the `regex` package simplifies that one and answers at once.)
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from tests.reliability.conftest import RUN_TIMEOUT, assert_no_traceback, only_run_id, run_events
from tests.support.fake_ollama import FakeOllama

CATASTROPHIC = "(a|aa)+$"
MARKER = "zebracrossing"  # in the hostile questions, so the stand-in server knows whom to answer badly
HOSTILE_ANSWER = "a" * 40 + "!"
PLAIN_ANSWER = "Bring the water to a rolling boil for one minute."


def golden(gid: str, query: str, must_include: list[str], must_not_include: list[str] = (), *,
           tags: tuple[str, ...] = ("hostile",)) -> dict:
    return {"id": gid, "query": query, "turns": [], "relevantDocIds": ["water-boiling"],
            "mustInclude": list(must_include), "mustNotInclude": list(must_not_include),
            "expectRefusal": False, "tags": list(tags), "split": "validation"}


def jsonl(rows: list[dict], newline: str = "\n") -> str:
    return "".join(json.dumps(r) + newline for r in rows)


def use_goldens(project, files: dict[str, bytes]) -> None:
    folder = project.root / "goldens"
    shutil.rmtree(folder)
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)


def answer(body: dict) -> str:
    question = body["messages"][-1]["content"] if "messages" in body else ""
    return HOSTILE_ANSWER if MARKER in question else PLAIN_ANSWER


def test_a_catastrophic_regex_is_an_error_on_its_assertion_and_the_run_finishes(project):
    use_goldens(project, {"hostile.jsonl": jsonl([
        golden("hostile-include", f"{MARKER} include?", [CATASTROPHIC]),
        golden("hostile-exclude", f"{MARKER} exclude?", ["a{5}"], [CATASTROPHIC]),
        golden("plain", "How long should water boil?", [r"rolling boil"]),
    ]).encode()})
    with FakeOllama(reply=answer) as server:
        result = project.run("--cache", "off", "generation", "--model", "ollama:tiny", "--ollama-host", server.url,
                             "--mode", "oracle", "--repeats", "1", "--no-mock-line")
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    run_id = only_run_id(project)
    assert run_events(project, run_id) == ["started", "finished"]

    rows = project.query(
        "SELECT c.slug, t.error, x.parsed_output, s.score FROM trials t JOIN v_trial_texts x ON x.trial_id = t.id JOIN cases c ON c.id = t.case_pk "
        "JOIN trial_scores s ON s.trial_id = t.id WHERE t.run_id=?", (run_id,))
    trials = {slug: (error, output, score) for slug, error, output, score in rows}
    assert set(trials) == {"hostile-include", "hostile-exclude", "plain"}
    assert all(error is None for error, _, _ in trials.values())  # the model call itself was fine
    assert trials["hostile-include"][1] == HOSTILE_ANSWER

    for slug in ("hostile-include", "hostile-exclude"):
        verdicts = assertion_verdicts(project, run_id, slug)
        passed, detail = next(v for name, v in verdicts.items() if CATASTROPHIC in name)
        assert not passed
        assert "RegexTimeout" in detail and "did not finish within" in detail
    # weights: the regex checks and the refusal check 1 each (leakage and think tags 0);
    # the refusal check passes (a run of a's is no refusal), the timed-out check counts as failed
    assert trials["hostile-include"][2] == 1 / 2   # include timed out, refusal passed
    assert trials["hostile-exclude"][2] == 2 / 3   # a{5} passed, exclude timed out, refusal passed
    assert trials["plain"][2] == 1.0
    correctness = dict(project.query(
        "SELECT c.slug, m.value FROM metric_values m JOIN trials t ON t.id = m.trial_id "
        "JOIN cases c ON c.id = t.case_pk WHERE m.run_id=? AND m.metric='correctness'", (run_id,)))
    assert correctness == {"hostile-include": 0.0, "hostile-exclude": 0.0, "plain": 1.0}


def assertion_verdicts(project, run_id: int, slug: str) -> dict[str, tuple[bool, str | None]]:
    rows = project.query(
        "SELECT d.name, a.passed, a.detail FROM assertion_results a "
        "JOIN trials t ON t.id = a.trial_id JOIN cases c ON c.id = t.case_pk "
        "JOIN assertion_defs d ON d.assertion_id = a.assertion_id AND d.version = a.assertion_version "
        "WHERE t.run_id=? AND c.slug=?", (run_id, slug))
    return {name: (bool(passed), detail) for name, passed, detail in rows}


def test_a_goldens_file_with_bom_crlf_and_blank_lines_is_accepted(project):
    rows = [golden("crlf-one", "How long should water boil?", ["boil"], tags=("crlf-file",)),
            golden("crlf-two", "At altitude?", ["minutes?"], tags=("crlf-file",))]
    body = "\ufeff" + jsonl(rows[:1], "\r\n") + "\r\n" + jsonl(rows[1:], "\r\n") + "\r\n"
    use_goldens(project, {"windows.jsonl": body.encode("utf-8")})
    result = project.run("corpus", "check")
    assert result.returncode == 0, result.stderr
    assert "goldens: 2 questions" in result.stdout
    assert re.search(r"^\s*crlf-file\s+2\s*$", result.stdout, re.MULTILINE), result.stdout


def test_a_broken_goldens_file_names_file_and_line_and_nothing_is_written(project):
    good = golden("fine-one", "How long should water boil?", ["boil"])
    broken = (jsonl([good, {**good, "id": "fine-two"}]) + '{"id": "broken", "query": \n'
              + jsonl([{**good, "id": "after"}]))
    use_goldens(project, {"broken.jsonl": broken.encode()})
    # the default db and cache live under eval-results/, so "nothing written" means no such folder
    env = {k: v for k, v in project.env.items() if k not in ("RAGQUAL_DB", "RAGQUAL_CACHE_DIR")}
    commands = {
        "check": ["corpus", "check"],
        "generation": ["generation", "--model", "mock", "--mode", "oracle", "--repeats", "1"],
    }
    children = {name: subprocess.Popen(project.command(*args), cwd=project.root, env=env, text=True,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for name, args in commands.items()}
    project.children.extend(children.values())
    outputs = {name: child.communicate(timeout=RUN_TIMEOUT) for name, child in children.items()}

    for name, child in children.items():
        _, stderr = outputs[name]
        assert child.returncode == 2, (name, stderr)
        assert_no_traceback(stderr)
        assert re.search(r"(^|[\s/])broken\.jsonl:3: invalid JSON", stderr), (name, stderr)
        assert "broken.jsonl:1" not in stderr and "broken.jsonl:4" not in stderr
    assert sorted(p.name for p in project.root.iterdir()) == ["corpus", "goldens", "history"]
    assert list(Path(project.root / "history").iterdir()) == []
