import json

import pytest

from ragqual.core.scoring import ScoreResult
from ragqual.engine import loop
from ragqual.engine.aggregate import summarise_run
from ragqual.engine.assertions import Assertion, JsonPath
from ragqual.engine.rescore import load_assertion_overrides, rescore
from ragqual.engine.services import services_for
from ragqual.engine.subject import Variant
from ragqual.errors import InputError
from ragqual.subjects.sentiment.subject import SentimentSubject, keyword_label
from tests.engine.support import ToySubject, echo_case, rows
from tests.support.fake_ollama import FakeOllama

ALL_ASSERTIONS = "SELECT id, trial_id, batch, assertion_id, assertion_version, passed, detail FROM assertion_results"
ALL_SCORES = "SELECT id, trial_id, batch, scorer_name, scorer_version, score, perfect FROM trial_scores"


def mock_run(store, cache, subject=None, repeats=1):
    subject = subject or SentimentSubject()
    return loop.run(subject, [Variant("mock", "mock")], subject.cases(), store=store,
                    services=services_for(subject, cache), repeats=repeats, argv=["test"])


def case_of(slug):
    return next(c for c in SentimentSubject().cases() if c.slug == slug)


def loosened_overrides(slug="pos-not-bad-at-all"):
    """The label check of one case, version 2: neutral is now accepted too."""
    case = case_of(slug)
    label = case.assertions[0]
    v2 = Assertion(label.id, 2, "label is positive or neutral", JsonPath("label", "in", ["positive", "neutral"]),
                   label.category, label.weight)
    return {case.id: [v2.spec(), *(a.spec() for a in case.assertions[1:])]}


def test_rescore_appends_and_never_updates(store, cache):
    outcome = mock_run(store, cache)
    db = store.engine.url.database
    before_a, before_s = rows(db, ALL_ASSERTIONS), rows(db, ALL_SCORES)
    summary = rescore(store, outcome.run_id, SentimentSubject())
    after_a, after_s = rows(db, ALL_ASSERTIONS), rows(db, ALL_SCORES)
    assert set(before_a) <= set(after_a) and set(before_s) <= set(after_s)  # old rows untouched
    assert len(after_a) == 2 * len(before_a) and len(after_s) == 2 * len(before_s)
    assert len({r[2] for r in after_s}) == 2 * len({r[2] for r in before_s})  # a new batch per trial
    assert (summary.rescored, summary.changed) == (15, 0)
    assert summary.mean_before == summary.mean_after


def test_a_changed_assertion_version_changes_the_score_without_any_model_call(store, cache, tmp_path):
    subject = SentimentSubject()
    replies = {c.input: keyword_label(c.input) for c in subject.cases()}  # the baseline, served over HTTP

    def reply(body):
        return replies.get((body.get("messages") or [{}])[-1].get("content"), "ready")

    with FakeOllama(models={"tiny": "sha256:" + "cd" * 32}, reply=reply) as server:
        outcome = loop.run(subject, [Variant("tiny", "ollama:tiny")], subject.cases(), store=store,
                           services=services_for(subject, cache, ollama_host=server.url), argv=["test"])
        calls_before = dict(server.calls)
        path = tmp_path / "v2.json"
        path.write_text(json.dumps(loosened_overrides()), encoding="utf-8")
        summary = rescore(store, outcome.run_id, subject, assertions_override=load_assertion_overrides(path))
        assert dict(server.calls) == calls_before  # nothing at all reached the server
    db = store.engine.url.database
    target = case_of("pos-not-bad-at-all")
    scores = rows(db, "SELECT s.score, a.assertion_version FROM trial_scores s JOIN trials t ON t.id = s.trial_id "
                      "JOIN cases c ON c.id = t.case_pk JOIN assertion_results a ON a.batch = s.batch "
                      "AND a.assertion_id = ? WHERE c.slug = ? ORDER BY s.id", target.assertions[0].id, target.slug)
    assert scores == [(pytest.approx(0.4), 1), (1.0, 2)]  # neutral was wrong under v1, accepted under v2
    assert summary.changed == 1
    assert summary.mean_after - summary.mean_before == pytest.approx(0.6 / 15)
    (definition,) = rows(db, "SELECT definition FROM assertion_defs WHERE assertion_id=? AND version=2",
                         target.assertions[0].id)[0]
    assert json.loads(definition)["check"]["kind"] == "json_path"  # the audit can show what v2 meant


def test_reports_show_the_newest_scorer_version_and_can_show_any(store, cache):
    outcome = mock_run(store, cache)

    class Strict:
        name, version = "weighted-assertions", 2

        def score(self, outcomes, *, trial_error):
            perfect = all(o.counts_as_passed for o in outcomes)
            return ScoreResult(1.0 if perfect else 0.0, perfect, {})

    rescore(store, outcome.run_id, SentimentSubject(), scorers=[Strict()])
    newest = summarise_run(store.engine, outcome.run_id)
    v1 = summarise_run(store.engine, outcome.run_id, scorer_version=1)
    # under v2 a trial scores 1 only when every assertion passed, informational ones included
    assert newest.variants[0].aggregate.mean_score == pytest.approx(10 / 15)
    assert v1.variants[0].aggregate.mean_score == pytest.approx((10 + 0.4 * 3 + 0.2 * 2) / 15)


def test_an_errored_trial_stays_failed_when_rescored(store, cache):
    from ragqual.adapters.ollama_chat import ModelCallFailed

    subject = ToySubject([echo_case("a", "x"), echo_case("b", "y")], raise_at=1, error=ModelCallFailed("timeout"))
    outcome = mock_run(store, cache, subject)
    summary = rescore(store, outcome.run_id, ToySubject(subject.cases()))
    assert summary.rescored == 2
    latest = rows(store.engine.url.database,
                  "SELECT score FROM trial_scores WHERE trial_id = (SELECT MIN(id) FROM trials) ORDER BY id")
    assert latest == [(0.0,), (0.0,)]


def test_an_unknown_run_is_an_input_error(store):
    with pytest.raises(InputError, match="no run with id 99"):
        rescore(store, 99, SentimentSubject())


def test_overrides_file_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": [\n  1,,\n]}', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.json:2: not valid JSON"):
        load_assertion_overrides(bad)
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="expected an object"):
        load_assertion_overrides(bad)
    bad.write_text(json.dumps({"c": [{"id": "x"}], "d": "nope"}), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_assertion_overrides(bad)
    assert "case c, assertion 0" in str(info.value) and "case d" in str(info.value)
    with pytest.raises(InputError, match="cannot read"):
        load_assertion_overrides(tmp_path / "missing.json")


def test_a_predicate_override_needs_a_live_function(tmp_path):
    path = tmp_path / "p.json"
    spec = {"id": "aaaaaaaa-0000-4000-8000-000000000001", "version": 1, "name": "p",
            "check": {"kind": "predicate", "name": "f", "code_sha256": "0" * 64}}
    path.write_text(json.dumps({"case": [spec]}), encoding="utf-8")
    with pytest.raises(InputError, match="live registry"):
        load_assertion_overrides(path)
