"""`ragqual pick` driven headless by key presses (Textual's Pilot): the plan it builds, the CLI
command it prints, and a run that lands on its summary; plus the pure plan rules."""

import asyncio
import shutil
import subprocess
import time

import pytest

from ragqual.app.context import AppContext
from ragqual.app.pick_run import PickBackend
from ragqual.cli.pick_cmd import summary_text
from ragqual.cli.pick_tui import PickerApp
from ragqual.engine import pick
from ragqual.engine.pick import CaseFilter
from ragqual.subjects.sentiment.subject import SentimentSubject


def _backend():
    return PickBackend(AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False))


async def _type(pilot, widget_id, text, clear=False):
    pilot.app.screen.query_one(widget_id).focus()
    await pilot.pause()
    await pilot.press("end")  # focusing an input selects its text: keep it, type after it
    if clear:
        widget = pilot.app.screen.query_one(widget_id)
        await pilot.press(*(["backspace"] * len(widget.value)))
    await pilot.press(*text)
    await pilot.pause()


async def _finish(pilot, app):
    for _ in range(600):
        if app.outcome is not None:
            return
        await pilot.pause(0.05)
    raise AssertionError("the run did not finish")


def test_the_pure_plan_counts_trials_and_writes_the_command():
    subject = SentimentSubject()
    cases = subject.cases()
    plan = pick.initial_plan("sentiment", subject.axes, subject.modes, cases)
    assert pick.trial_count(plan) == 15
    plan = pick.set_axis(plan, subject.axes, "0,0.7", "temperature")
    plan = pick.tick(plan, [c.slug for c in cases[2:]], False, cases)
    assert pick.trial_count(plan) == 4
    assert pick.cli_command(plan, subject.axes, cases, subject.modes) == (
        f"ragqual run --subject sentiment --case-slugs {cases[0].slug},{cases[1].slug} "
        "--axis temperature=0,0.7 --trial-count 1")
    shown = pick.filter_cases(cases, CaseFilter(text="not happy"))
    assert [c.slug for c in shown] == ["neg-not-happy"]


def test_sentiment_picked_by_keys_runs_and_lands_on_its_summary(workdir):
    asyncio.run(_sentiment())


async def _sentiment():
    app = PickerApp(_backend(), None, summary_text)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        names = app.backend.subject_names()
        await pilot.press(*(["down"] * names.index("sentiment")), "enter")
        await pilot.pause()
        assert app.plan.subject == "sentiment" and len(app.plan.cases) == 15
        await _type(pilot, "#filter-text", "not")
        shown = [c.slug for c in pick.filter_cases(app.subject.cases(), app.plan.case_filter)]
        assert len(shown) >= 2
        app.screen.query_one("#cases").focus()
        await pilot.press("space")  # unticks the first case shown
        await pilot.pause()
        assert shown[0] not in app.plan.cases and len(app.plan.cases) == 14
        await _type(pilot, "#axis-temperature", ",0.7")
        await _type(pilot, "#axis-prompt", ",v2")
        assert dict(app.plan.axes)["temperature"] == (0, 0.7) and dict(app.plan.axes)["prompt"] == ("v1", "v2")
        assert pick.trial_count(app.plan) == 14 * 4
        command = app.command()
        assert "--axis temperature=0,0.7 --axis prompt=v1,v2 --trial-count 1" in command
        assert f"--case-slugs " in command and shown[0] not in command
        summary = str(app.screen.query_one("#summary").render())
        assert "= 56 trial(s)" in summary and "0 of 56 expected cache hits" in summary
        await _type(pilot, "#axis-temperature", ",9")  # 0,0.7,9: out of range, refused on screen
        assert "out of range" in str(app.screen.query_one("#summary").render())
        await _type(pilot, "#axis-temperature", "", clear=True)
        await _type(pilot, "#axis-temperature", "0,0.7")
        await pilot.press("ctrl+r")
        await _finish(pilot, app)
        result = str(app.screen.query_one("#result").render())
        assert f"run {app.outcome.run_id} finished: 56 trial(s)" in result
        assert "mock temperature=0.7 prompt=v2" in result
        await pilot.press("q")
    assert app.return_value is app.outcome
    # the same plan again: the picker now expects every trial from the cache
    again = PickBackend(app.backend.app).expected(app.plan)
    assert (again.hits, again.total) == (56, 56)


def test_rag_picked_by_keys_builds_its_plan_from_the_axes(workdir):
    asyncio.run(_rag())


async def _rag():
    app = PickerApp(_backend(), "rag", summary_text)
    async with app.run_test(size=(160, 60)) as pilot:
        await pilot.pause()
        assert {a.name for a in app.subject.axes} >= {"context_k", "strategy", "num_ctx"}
        await _type(pilot, "#modes", "", clear=True)
        await _type(pilot, "#modes", "oracle")
        app.screen.query_one("#cases").focus()
        await pilot.press("ctrl+n")  # untick every case shown (all of them)
        await pilot.pause()
        assert app.plan.cases == ()
        await _type(pilot, "#filter-case_id", app.subject.cases()[0].slug)
        app.screen.query_one("#cases").focus()
        await pilot.press("space")
        await pilot.pause()
        assert app.plan.cases == (app.subject.cases()[0].slug,)
        await _type(pilot, "#axis-context_k", "", clear=True)
        await _type(pilot, "#axis-context_k", "1,3")
        await _type(pilot, "#axis-num_ctx", "", clear=True)
        await _type(pilot, "#axis-num_ctx", "none,4096")
        assert dict(app.plan.axes)["context_k"] == (1, 3) and dict(app.plan.axes)["num_ctx"] == (None, 4096)
        assert app.plan.modes == ("oracle",) and pick.trial_count(app.plan) == 4
        assert app.command() == (f"ragqual run --subject rag --case-slugs {app.plan.cases[0]} "
                                 "--axis num_ctx=none,4096 --axis context_k=1,3 --mode oracle --trial-count 1")
        assert "of 4 expected cache hits" in str(app.screen.query_one("#summary").render())


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_pick_in_a_real_terminal_under_tmux(workdir, tmp_path):
    session = f"ragqual-pick-{time.time_ns()}"
    ragqual = shutil.which("ragqual")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "150", "-y", "45", "-c", str(workdir),
                    f"{ragqual} pick --subject sentiment"], check=True)
    try:
        screen = ""
        for _ in range(100):
            time.sleep(0.2)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                                    text=True).stdout
            if "expected cache hits" in screen:
                break
        assert "ragqual run --subject sentiment --axis model=mock --trial-count 1" in screen
        assert "temperature (call;" in screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
