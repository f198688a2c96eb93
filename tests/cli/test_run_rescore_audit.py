"""`ragqual run`, `rescore` and `audit` end to end on a migrated SQLite file and a temp cache."""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest
from click.testing import CliRunner

from ragqual.cli.main import cli, main
from ragqual.engine.assertions import Assertion, JsonPath
from ragqual.store import db as store_db
from ragqual.subjects.sentiment.subject import SentimentSubject

BASELINE_MEAN = (10 + 0.4 * 3 + 0.2 * 2) / 15  # hand-computed: 10 right, 3 near misses, 2 opposite labels


@pytest.fixture
def env(head_db, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    return head_db


def ragqual(db, args, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--db", str(db), *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def query(db, sql, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def case_of(slug):
    return next(c for c in SentimentSubject().cases() if c.slug == slug)


@pytest.mark.parametrize("command", ["run", "rescore", "audit"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as caught:
        main([command, "--help"])
    out, _ = capsys.readouterr()
    assert caught.value.code == 0
    assert f"Usage: ragqual {command}" in out


def test_run_prints_the_variant_summary_and_a_rerun_calls_no_model(env, capsys):
    code, out, err = ragqual(env, ["run", "--subject", "sentiment", "--model", "mock", "--trial-count", "2"], capsys)
    assert code == 0, err
    assert "mean_score" in out and "pass_rate" in out and "p95_ms" in out and "cache_hits" in out
    assert f"{BASELINE_MEAN:.3f}" in out and "0.667" in out
    assert "run 1 finished: 30 trial(s) run, 30 model call(s), 0 cache hit(s), 0 error(s)" in out
    code, out, _ = ragqual(env, ["run", "--subject", "sentiment", "--trial-count", "2"], capsys)
    assert code == 0
    assert "run 2 finished: 30 trial(s) run, 0 model call(s), 30 cache hit(s)" in out
    assert query(env, "SELECT COUNT(*) FROM trials") == [(60,)]


def test_run_json_and_case_selection(env, capsys):
    code, out, _ = ragqual(env, ["--json", "run", "--subject", "sentiment", "--case-slugs",
                                 "pos-love-phone,neg-not-happy", "--trial-count", "1"], capsys)
    assert code == 0
    body = json.loads(out)
    assert body["status"] == "finished" and body["trials_run"] == 2
    (variant,) = body["variants"]
    assert variant["mean_score"] == pytest.approx((1.0 + 0.2) / 2)
    assert variant["pass_rate"] == 0.5


@pytest.mark.parametrize("args, message", [
    (["run", "--subject", "nope"], "unknown subject 'nope': valid subjects are rag, sentiment"),
    (["run", "--subject", "sentiment", "--case-slugs", "pos-love-phone,zzz"], "unknown case slug(s) zzz"),
    (["run", "--subject", "sentiment", "--model", "gpt:4"], "valid models are mock, ollama:<model>"),
    (["run"], "--subject is required"),
    (["run", "--resume", "1", "--model", "mock"], "no run with id 1"),
    (["rescore", "7"], "no run with id 7"),
    (["audit", "7"], "no trial with id 7"),
])
def test_bad_input_exits_2_with_one_line(env, capsys, args, message):
    code, _, err = ragqual(env, args, capsys)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_replay_with_an_empty_cache_stops_with_exit_2(env, capsys):
    code, _, err = ragqual(env, ["--cache", "replay", "run", "--subject", "sentiment", "--trial-count", "1"], capsys)
    assert code == 2
    assert "replay mode: no cached answer" in err
    assert "`ragqual run --resume 1` completes it" in err
    assert query(env, "SELECT event FROM run_events ORDER BY id DESC LIMIT 1") == [("failed",)]


@pytest.fixture
def flaky_plugin(tmp_path, monkeypatch):
    """An installed plug-in subject (a real dist-info entry point) that is interrupted on a given trial."""
    (tmp_path / "flaky_subject.py").write_text(textwrap.dedent("""
        import os
        from ragqual.subjects.sentiment.subject import SentimentSubject

        class FlakySubject(SentimentSubject):
            name = "flaky"
            started = 0

            def run_one(self, *args):
                FlakySubject.started += 1
                if str(FlakySubject.started) == os.environ.get("FLAKY_INTERRUPT_AT"):
                    raise KeyboardInterrupt
                return super().run_one(*args)
    """), encoding="utf-8")
    info = tmp_path / "flaky_subject-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flaky-subject\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[ragqual.subjects]\nflaky = flaky_subject:FlakySubject\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FLAKY_INTERRUPT_AT", "6")


def test_ctrl_c_exits_130_and_resume_completes_the_run(env, capsys, flaky_plugin, monkeypatch):
    code, _, err = ragqual(env, ["run", "--subject", "flaky", "--trial-count", "1"], capsys)
    assert code == 130
    assert "ragqual: interrupted: run 1" in err and f"`ragqual --db {env} run --resume 1`" in err
    assert query(env, "SELECT COUNT(*) FROM trials") == [(5,)]
    monkeypatch.delenv("FLAKY_INTERRUPT_AT")
    code, out, err = ragqual(env, ["run", "--resume", "1"], capsys)
    assert code == 0, err
    assert "run 1 finished: 10 trial(s) run, 5 already held, 10 model call(s)" in out
    assert query(env, "SELECT COUNT(*) FROM trials WHERE run_id = 1") == [(15,)]
    events = [e for (e,) in query(env, "SELECT event FROM run_events WHERE run_id = 1 ORDER BY id")]
    assert events == ["started", "interrupted", "resumed", "finished"]


def write_v2(tmp_path):
    """Version 2 of one label check: neutral is now accepted for 'Not bad at all...'."""
    case = case_of("pos-not-bad-at-all")
    label = case.assertions[0]
    v2 = Assertion(label.id, 2, "label is positive or neutral", JsonPath("label", "in", ["positive", "neutral"]),
                   label.category, label.weight)
    path = tmp_path / "v2.json"
    path.write_text(json.dumps({case.id: [v2.spec(), *(a.spec() for a in case.assertions[1:])]}), encoding="utf-8")
    return path, label.id


def test_rescore_with_a_new_assertion_version_then_audit_shows_every_score(env, capsys, tmp_path):
    assert ragqual(env, ["run", "--subject", "sentiment", "--trial-count", "1"], capsys)[0] == 0
    path, label_id = write_v2(tmp_path)
    code, out, err = ragqual(env, ["rescore", "1", "--assertions-from", str(path)], capsys)
    assert code == 0, err
    after = BASELINE_MEAN + 0.6 / 15
    assert f"mean score {BASELINE_MEAN:.3f} -> {after:.3f}, 1 trial score(s) changed" in out
    assert "old rows kept" in out
    (trial_id,) = query(env, "SELECT t.id FROM trials t JOIN cases c ON c.id = t.case_pk "
                             "WHERE c.slug = 'pos-not-bad-at-all'")[0]
    result = CliRunner().invoke(cli, ["--db", str(env), "audit", str(trial_id)])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "scores over time (2 scoring(s), oldest first)" in text
    assert "weighted-assertions v1  score 0.400" in text and "weighted-assertions v1  score 1.000" in text
    assert f"FAIL {label_id} v1" in text and f"PASS {label_id} v2" in text
    assert "(used by a rescoring)" in text and '"kind": "json_path"' in text
    for needle in ("git ", "dataset ", "argv", "params", "system prompt (sha256", "You classify the sentiment",
                   "rendered prompt", "Not bad at all", "raw output", '"content": "neutral"', "telemetry",
                   "cache      key", "label_correct=0.0", "difficulty medium"):
        assert needle in text, needle

    as_json = CliRunner().invoke(cli, ["--db", str(env), "--json", "audit", str(trial_id)])
    data = json.loads(as_json.output)
    assert [s["scores"][0]["score"] for s in data["scorings"]] == [pytest.approx(0.4), 1.0]
    assert {(d["assertion_id"], d["version"]) for d in data["assertion_defs"]} >= {(label_id, 1), (label_id, 2)}
    assert data["run"]["params"]["subject"] == "sentiment"
    assert data["trial"]["cache_hit"] is False and len(data["trial"]["cache_key"]) == 64


def test_audit_reads_a_run_recorded_before_a_later_migration(tmp_path, capsys):
    """A history written at 0001, in the SQL ragqual wrote then (the live store writes columns
    that later migrations added), is refused until upgraded and then audited."""
    from tests.store.test_upgrade_keeps_data import OldHistory, fill

    path = tmp_path / "old.db"
    engine = store_db.make_engine(f"sqlite:///{path}")
    store_db.upgrade(engine, "0001")
    ids = fill(OldHistory(engine))
    engine.dispose()
    code, _, err = ragqual(path, ["audit", str(ids["t1"])], capsys)
    assert code == 2 and "ragqual db upgrade" in err  # the old file is refused, with the fix named
    assert ragqual(path, ["db", "upgrade"], capsys)[0] == 0
    code, out, err = ragqual(path, ["audit", str(ids["t1"])], capsys)
    assert code == 0, err
    assert "argv         ragqual generation" in out and "scores over time (2 scoring(s)" in out


def test_rescore_of_a_subject_missing_from_the_registry_uses_the_stored_definitions(env, capsys):
    from ragqual.adapters.cache import ResponseCache
    from ragqual.engine import loop
    from ragqual.engine.services import services_for
    from ragqual.engine.subject import Variant
    from ragqual.store.runstore import RunStore
    from tests.engine.support import ToySubject, echo_case

    subject = ToySubject([echo_case("kept", "x"), echo_case("lost", "y", expected="z")])  # "toy": not registered
    store = RunStore.open(f"sqlite:///{env}")
    loop.run(subject, [Variant("mock", "mock")], subject.cases(), store=store,
             services=services_for(subject, ResponseCache(None, "off")), argv=["toy"])
    store.engine.dispose()
    code, out, err = ragqual(env, ["rescore", "1"], capsys)
    assert code == 0, err
    assert "subject 'toy' is not in the registry here" in err
    assert "rescored 2 of 2 trial(s)" in out and "mean score 0.750 -> 0.750, 0 trial score(s) changed" in out
    assert query(env, "SELECT COUNT(*) FROM trial_scores") == [(4,)]


def test_audit_prints_the_trial_first_and_summarises_long_parameter_lists(env, capsys):
    """The question, answer and verdict open the audit; the run's case ids (one per case) come last,
    as their count and first three, as `ragqual report` shows them; --json keeps them whole."""
    assert ragqual(env, ["run", "--subject", "sentiment", "--trial-count", "1"], capsys)[0] == 0
    case = case_of("pos-not-bad-at-all")
    (trial_id,) = query(env, "SELECT t.id FROM trials t JOIN cases c ON c.id = t.case_pk WHERE c.slug = ?", case.slug)[0]
    code, out, err = ragqual(env, ["audit", str(trial_id)], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"trial {trial_id}, created ") and "case pos-not-bad-at-all" in lines[0]
    assert lines[1] == "question" and "Not bad at all" in lines[2]
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict "))
    assert lines[3] == "answer (parsed output)" and '"label": "neutral"' in "\n".join(lines[4:verdict])
    assert verdict < 12 and lines[verdict].startswith("verdict FAIL  score 0.400")
    assert f"  FAIL {case.assertions[0].name} [" in lines[verdict + 1]
    order = [next(i for i, line in enumerate(lines) if line.startswith(head))
             for head in ("question", "scores over time", "case ", "system prompt", "run ")]
    assert order == sorted(order)
    cases = len(SentimentSubject().cases())
    first = ", ".join(c.id for c in SentimentSubject().cases()[:3])
    assert f'"case_ids": "{cases} items: {first}, ..."' in out
    assert not [line for line in lines if line.strip().strip('",') in {c.id for c in SentimentSubject().cases()}]
    code, as_json, _ = ragqual(env, ["--json", "audit", str(trial_id)], capsys)
    assert json.loads(as_json)["run"]["params"]["case_ids"] == [c.id for c in SentimentSubject().cases()]
