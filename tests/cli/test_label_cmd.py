"""`ragqual label` driven headless with Textual's Pilot, and `ragqual labels import / export`, on a
generation run of the mock over the bundled goldens. Rows are asserted in the database."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence

import pytest

from ragqual.app.context import AppContext
from ragqual.app.labelling import ReviewQueue, open_queue
from ragqual.cli.label_tui import LabelApp
from tests.cli.conftest import invoke, ragqual


@pytest.fixture(scope="module")
def run_id(workdir) -> int:
    """A generation run of the mock: 5 goldens x (oracle, e2e, noretrieval), so some trials fail."""
    result = invoke("--json", "generation", "--model", "mock", "--all-modes", "--limit", "5", "--repeats", "1")
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout)["run_id"])


def _db(workdir) -> sqlite3.Connection:
    return sqlite3.connect(workdir / "eval-results" / "eval.db")


def _labels(workdir, run: int, labeller: str) -> list[tuple]:
    with _db(workdir) as con:
        return con.execute("SELECT trial_id, criterion, verdict, note, source, sample_seed, sample_size FROM labels "
                           "WHERE run_id = ? AND labeller = ? ORDER BY id", (run, labeller)).fetchall()


def _queue(run: int, labeller: str, **options) -> ReviewQueue:
    app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    return open_queue(app, run, labeller, **options)


def drive(queue: ReviewQueue, keys: Sequence[str]) -> LabelApp:
    """Run the app headless and press the keys (then q)."""
    app = LabelApp(queue)

    async def go() -> None:
        async with app.run_test(size=(120, 50)) as pilot:
            await pilot.pause()
            for key in [*keys, "q"]:
                await pilot.press(key)
            await pilot.pause()

    asyncio.run(go())
    return app


def test_keys_append_label_rows_and_a_second_session_resumes(workdir, run_id):
    queue = _queue(run_id, "ann")
    first, second = queue.session.order[:2]
    assert queue.session.order == sorted(queue.items)  # no sample: every trial, in id order
    drive(queue, ["1", "2", "4", "n", *"cites it", "enter", "9", "8", "5", "7"])
    rows = _labels(workdir, run_id, "ann")
    assert [(t, c, v, n) for t, c, v, n, *_ in rows] == [
        (first, "faithfulness", "yes", None),
        (first, "faithfulness", "no", None),  # a correction: a newer row, the old one kept
        (first, "completeness", "yes", None),
        (first, "faithfulness", "no", "cites it"),  # the note rewrites the verdicts given so far
        (first, "completeness", "yes", "cites it"),
        (first, "relevance", "unsure", "cites it"),  # completes the trial: the queue moves on
        (second, "relevance", "no", None),
        (second, "completeness", "no", None),
        (second, "relevance", "yes", None),
    ]
    assert {r[4] for r in rows} == {"tui"} and {r[5:] for r in rows} == {(None, None)}
    resumed = _queue(run_id, "ann")
    assert resumed.session.order[0] == second and first not in resumed.session.order
    assert resumed.session.given(second) == {"relevance": "yes", "completeness": "no"}
    drive(resumed, ["3"])
    assert _labels(workdir, run_id, "ann")[-1][:3] == (second, "faithfulness", "unsure")
    assert second not in _queue(run_id, "ann").session.order
    assert _queue(run_id, "bob").session.order[0] == first  # progress is per labeller


def burst(queue: ReviewQueue, keys: Sequence[str]) -> LabelApp:
    """Post every key at once, as a fast typist or a terminal multiplexer sends them: each key is
    queued before the one before it is handled."""
    from textual import events

    app = LabelApp(queue)

    async def go() -> None:
        async with app.run_test(size=(120, 50)) as pilot:
            await pilot.pause()
            for key in keys:
                app.post_message(events.Key(key, key if len(key) == 1 else None))
            for _ in range(10):
                await pilot.pause()
            await pilot.press("q")

    asyncio.run(go())
    return app


def test_a_note_typed_fast_is_saved_and_the_verdict_after_it_is_not_swallowed(workdir, run_id):
    queue = _queue(run_id, "ida")
    first, second = queue.session.order[:2]
    burst(queue, ["1", "4", "n", *"cites it", "enter", "7", "2"])
    rows = [(t, c, v, n) for t, c, v, n, *_ in _labels(workdir, run_id, "ida")]
    assert rows == [
        (first, "faithfulness", "yes", None),
        (first, "completeness", "yes", None),
        (first, "faithfulness", "yes", "cites it"),
        (first, "completeness", "yes", "cites it"),
        (first, "relevance", "yes", "cites it"),
        (second, "faithfulness", "no", None),
    ]


def test_escape_typed_fast_cancels_the_note_and_keys_after_it_reach_the_queue(workdir, run_id):
    queue = _queue(run_id, "jo")
    first = queue.session.order[0]
    burst(queue, ["n", *"draft", "backspace", "escape", "3", "6", "9"])
    rows = [(t, c, v, n) for t, c, v, n, *_ in _labels(workdir, run_id, "jo")]
    assert rows == [(first, c, "unsure", None) for c in ("faithfulness", "completeness", "relevance")]


def test_skip_and_back_move_without_writing(workdir, run_id):
    queue = _queue(run_id, "cy")
    order = queue.session.order
    drive(queue, ["s", "right", "left", "6"])  # skip and → move on, ← goes back
    assert _labels(workdir, run_id, "cy") == [(order[1], "completeness", "unsure", None, "tui", None, None)]


def test_a_sample_is_reproducible_and_recorded_on_each_row(workdir, run_id):
    one = _queue(run_id, "dee", sample=4, seed=5)
    assert one.session.order == _queue(run_id, "dee", sample=4, seed=5).session.order
    assert one.session.order != _queue(run_id, "dee", sample=4, seed=6).session.order
    assert len(one.session.order) == 4
    drive(one, ["1", "4", "7"])
    assert _labels(workdir, run_id, "dee") == [(one.session.order[0], c, "yes", None, "tui", 5, 4)
                                                for c in ("faithfulness", "completeness", "relevance")]
    assert _queue(run_id, "dee", sample=4, seed=5).session.order == one.session.order[1:]


def test_failures_walks_only_failing_trials(workdir, run_id):
    queue = _queue(run_id, "eve", failures=True)
    assert queue.session.order and all(queue.items[t].passed is False for t in queue.session.order)
    assert len(queue.session.order) < len(queue.items)


def test_the_screen_shows_the_trial(workdir, run_id):
    queue = _queue(run_id, "fay")
    app = LabelApp(queue)
    item = queue.items[queue.session.order[0]]

    async def go() -> str:
        async with app.run_test(size=(140, 60)) as pilot:
            await pilot.pause()
            return "\n".join(str(w.render()) for w in app.query("Static"))

    shown = asyncio.run(go())
    assert item.question in shown and "deterministic verdict" in shown
    assert any(relevant for _, relevant in item.chunks) == ("★ " in shown)


def test_a_multi_turn_question_is_shown_after_its_earlier_turns(workdir):
    import re

    result = invoke("--json", "generation", "--model", "mock", "--mode", "e2e", "--repeats", "1",
                    "--tag", "multi-turn")
    assert result.exit_code == 0, result.output
    run = int(json.loads(result.stdout)["run_id"])
    queue = _queue(run, "hal")
    item = queue.items[queue.session.order[0]]
    golden = next(json.loads(line) for path in sorted((workdir / "goldens").glob("*.jsonl"))
                  for line in path.read_text(encoding="utf-8").splitlines()
                  if line.strip() and json.loads(line)["id"] == item.case_id)
    assert golden["turns"] and item.turns == tuple((t["role"], t["content"]) for t in golden["turns"])
    app = LabelApp(queue)

    async def go() -> str:
        async with app.run_test(size=(140, 80)) as pilot:
            await pilot.pause()
            return "\n".join(str(w.render()) for w in app.query("Static"))

    shown = re.sub(r"\s+", " ", asyncio.run(go()))
    first, *_ = golden["turns"]
    assert re.sub(r"\s+", " ", first["content"]) in shown and "(after the earlier turns)" in shown
    assert shown.index(re.sub(r"\s+", " ", first["content"])) < shown.index(re.sub(r"\s+", " ", golden["query"]))


def test_arrow_and_page_keys_scroll_a_tall_trial_and_write_nothing(workdir, run_id):
    queue = _queue(run_id, "gil")
    app = LabelApp(queue)

    async def go() -> list[float]:
        async with app.run_test(size=(80, 20)) as pilot:  # a short terminal: the trial is taller
            await pilot.pause()
            body = app.query_one("#body")
            seen = [body.scroll_y]
            for key in ("pagedown", "down", "end", "up", "home"):
                await pilot.press(key)
                await pilot.pause()
                seen.append(body.scroll_y)
            return [*seen, body.max_scroll_y]

    start, page, line, end, up, home, most = asyncio.run(go())
    assert start == 0 and 0 < page < line < end == most and up == end - 1 and home == 0
    assert _labels(workdir, run_id, "gil") == [] and queue.session.position == 0


def test_label_command_refuses_without_a_terminal(workdir, run_id, capsys):
    code, out, err = ragqual(workdir / "eval-results" / "eval.db", ["label", str(run_id)], capsys)
    assert code == 2 and out == ""
    assert "needs a terminal" in err and f"ragqual labels import FILE --run {run_id}" in err


def test_label_command_on_a_terminal_runs_the_queue(workdir, run_id, monkeypatch):
    monkeypatch.setattr("ragqual.cli.label_cmd.on_terminal", lambda: True)
    monkeypatch.setattr(LabelApp, "run", lambda self: drive(self.queue, ["1", "5", "9"]) and None)
    result = invoke("label", str(run_id), "--labeller", "gus", "--sample", "3", "--seed", "2")
    assert result.exit_code == 0, result.output
    assert "3 label row(s) appended by gus; 1 of 3 trial(s) in this queue labelled on every criterion" in result.output
    assert len(_labels(workdir, run_id, "gus")) == 3


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_then_import_round_trips(workdir, run_id, tmp_path, fmt):
    out = tmp_path / f"labels.{fmt}"
    assert invoke("labels", "export", str(run_id), "-o", str(out)).exit_code == 0
    exported = out.read_text()
    with _db(workdir) as con:
        before = con.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
    result = invoke("labels", "import", str(out), "--run", str(run_id))
    assert result.exit_code == 0, result.output
    with _db(workdir) as con:
        after = con.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
        sources = con.execute("SELECT DISTINCT source FROM labels WHERE id > ?", (before,)).fetchall()
    assert after - before == len(exported.strip().splitlines()) - (1 if fmt == "csv" else 0)
    assert len(sources) == 1 and sources[0][0].startswith("import:")
    assert invoke("labels", "export", str(run_id), "--format", fmt).stdout == exported  # same current labels


def test_import_by_case_id_and_labeller_default(workdir, run_id, tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "hal")
    with _db(workdir) as con:
        case_id, trial = con.execute("SELECT case_id, trial_id FROM v_trials WHERE run_id = ? AND mode = 'oracle' "
                                     "ORDER BY trial_id LIMIT 1", (run_id,)).fetchone()
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"case_id": case_id, "mode": "oracle", "criterion": "relevance", "verdict": "yes",
                                "labelled_at": "2026-11-30T12:00:00Z"}) + "\n")
    result = invoke("labels", "import", str(path), "--run", str(run_id))
    assert result.exit_code == 0, result.output
    with _db(workdir) as con:
        row = con.execute("SELECT trial_id, labeller, labelled_at FROM labels ORDER BY id DESC LIMIT 1").fetchone()
    assert row == (trial, "hal", "2026-11-30 12:00:00.000000")


@pytest.mark.parametrize(("body", "message"), [
    ("trial_id,criterion,verdict\n{trial},faithfulness,yes\n{trial},faithfulness,perhaps\n", ":3: verdict 'perhaps'"),
    ("trial_id,criterion,verdict\n{trial},faithfulness,yes\n999999,faithfulness,yes\n",
     ":3: trial 999999 is not a trial of this run"),
    ("case_id,criterion,verdict\nno-such-golden,relevance,no\n", ":2: the run has no trial for case no-such-golden"),
])
def test_a_bad_line_is_refused_naming_file_and_line_and_nothing_is_written(workdir, run_id, tmp_path, body, message,
                                                                           capsys):
    with _db(workdir) as con:
        trial = con.execute("SELECT MIN(id) FROM trials WHERE run_id = ?", (run_id,)).fetchone()[0]
        before = con.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
    path = tmp_path / "bad.csv"
    path.write_text(body.format(trial=trial))
    code, _, err = ragqual(workdir / "eval-results" / "eval.db",
                           ["labels", "import", str(path), "--run", str(run_id), "--labeller", "ivy"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{path}{message}" in err
    with _db(workdir) as con:
        assert con.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == before


def test_labels_are_verified_with_their_run(workdir, run_id):
    result = invoke("verify", str(run_id))
    assert result.exit_code == 0, result.output


def test_a_sample_is_drawn_from_answered_trials_only(workdir):
    # answers for two goldens only: the other trials of the run are trial errors, with nothing to
    # label and nothing a judge scores, so a sample (the labels PPI pairs with judge scores) skips them
    answers = workdir / "two-answers.jsonl"
    answers.write_text("".join(json.dumps({"id": cid, "answer": "Push hard and fast."}) + "\n"
                               for cid in ("first-aid-cpr-rate-acronym-01", "first-aid-aed-acronym-01")))
    result = invoke("--json", "generation", "--model", f"answers:{answers}", "--no-mock-line", "--mode", "e2e",
                    "--limit", "5", "--repeats", "1")
    assert result.exit_code == 0, result.output
    run = int(json.loads(result.stdout)["run_id"])
    with _db(workdir) as con:
        answered = {t for (t,) in con.execute("SELECT id FROM trials WHERE run_id = ? AND error IS NULL", (run,))}
        errored = {t for (t,) in con.execute("SELECT id FROM trials WHERE run_id = ? AND error IS NOT NULL", (run,))}
    assert len(answered) == 2 and errored
    assert sorted(_queue(run, "gil", sample=5, seed=0).session.order) == sorted(answered)
    assert set(_queue(run, "gil").session.order) == answered | errored  # the whole queue still walks every trial
    assert errored <= set(_queue(run, "gil", failures=True, sample=5).session.order)  # so do failures
