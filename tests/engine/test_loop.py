import json
import warnings

import pytest

from ragqual.adapters.cache import ResponseCache
from ragqual.adapters.ollama_chat import ModelCallFailed
from ragqual.engine import loop
from ragqual.engine.assertions import Assertion, Equals
from ragqual.engine.cases import Case
from ragqual.engine.services import services_for
from ragqual.engine.subject import SubjectContractError, Variant
from ragqual.errors import CacheMiss, InputError, ServiceUnavailable
from tests.engine.support import ToySubject, echo_case, rows, status, uid

MOCK = [Variant("mock", "mock")]


def cases(n=3):
    # "w1" passes (echo equals itself); the others expect something else and fail the weight-3 check
    return [echo_case("c0", "alpha", weight=3.0)] + [
        echo_case(f"c{i}", f"w{i}", expected="other", weight=3.0) for i in range(1, n)
    ]


def run(subject, store, cache, **kw):
    kw.setdefault("repeats", 1)
    services = kw.pop("services", None) or services_for(subject, cache)
    return loop.run(subject, kw.pop("variants", MOCK), kw.pop("cases", subject.cases()), store=store,
                    services=services, argv=["test"], **kw), services


def db_path(store):
    return store.engine.url.database


def test_every_slot_is_stored_with_assertions_scores_and_metrics(store, cache):
    subject = ToySubject(cases(3), metrics=True)
    outcome, services = run(subject, store, cache, repeats=2)
    db = db_path(store)
    # repeats are distinct samples: the repeat index is in the cache key, so all six are misses
    assert (outcome.status, outcome.trials_run, outcome.model_calls, outcome.cache_hits) == ("finished", 6, 6, 0)
    assert rows(db, "SELECT COUNT(*) FROM trials WHERE run_id=?", outcome.run_id) == [(6,)]
    assert rows(db, "SELECT COUNT(*) FROM assertion_results") == [(12,)]
    # hand-computed: c0 passes both (3+1)/4 = 1; the others pass only the weight-1 regex: 1/4
    scores = rows(db, "SELECT c.slug, s.score, s.perfect, s.scorer_name, s.scorer_version FROM trial_scores s "
                      "JOIN trials t ON t.id = s.trial_id JOIN cases c ON c.id = t.case_pk ORDER BY t.id")
    assert scores == [("c0", 1.0, 1, "weighted-assertions", 1), ("c1", 0.25, 0, "weighted-assertions", 1),
                      ("c2", 0.25, 0, "weighted-assertions", 1)] * 2
    assert rows(db, "SELECT metric, value FROM metric_values ORDER BY id LIMIT 2") == [("length", 5.0), ("length", 2.0)]
    assert status(db, outcome.run_id) == "finished"


def test_definitions_and_provenance_are_recorded(store, cache):
    subject = ToySubject(cases(2))
    outcome, _ = run(subject, store, cache, repeats=2)
    db = db_path(store)
    assert rows(db, "SELECT COUNT(*) FROM cases WHERE subject='toy'") == [(2,)]
    assert rows(db, "SELECT COUNT(*) FROM assertion_defs") == [(4,)]
    assert rows(db, "SELECT text FROM system_prompts") == [("Repeat the word.",)]
    (params,) = rows(db, "SELECT params FROM runs WHERE id=?", outcome.run_id)[0]
    params = json.loads(params)
    assert params["repeats"] == 2 and params["case_slugs"] == ["c0", "c1"]
    assert params["variants"] == [{"name": "mock", "model": "mock", "options": {}, "system_prompt": None}]
    (config,) = rows(db, "SELECT config FROM variant_configs")[0]
    assert json.loads(config)["digest"].startswith("mock-v1:")


def test_a_second_run_is_all_cache_hits_and_calls_no_model(store, cache):
    subject = ToySubject(cases(3))
    run(subject, store, cache, repeats=2)
    outcome, services = run(ToySubject(cases(3)), store, cache, repeats=2)
    assert services.model_calls == 0 and services.warm_ups == 0
    assert outcome.cache_hits == 6
    assert rows(db_path(store), "SELECT COUNT(*) FROM trials WHERE run_id=? AND cache_hit", outcome.run_id) == [(6,)]


def test_replay_mode_makes_no_call_and_a_miss_stops_the_run(store, cache_dir):
    writer = ResponseCache.at(cache_dir)
    run(ToySubject(cases(2)), store, writer)
    writer.close()
    replay = ResponseCache.at(cache_dir, "replay")
    outcome, services = run(ToySubject(cases(2)), store, replay)
    assert services.model_calls == 0 and outcome.cache_hits == 2
    subject = ToySubject(cases(3))  # c2 was never cached
    with pytest.raises(CacheMiss):
        run(subject, store, replay, services=services_for(subject, replay))
    replay.close()
    db = db_path(store)
    last = rows(db, "SELECT MAX(id) FROM runs")[0][0]
    assert status(db, last) == "failed"
    assert rows(db, "SELECT COUNT(*) FROM trials WHERE run_id=?", last) == [(2,)]


def test_a_subject_without_telemetry_is_an_error_naming_it(store, cache):
    with pytest.raises(SubjectContractError, match="subject 'toy' returned no telemetry"):
        run(ToySubject(cases(2), no_telemetry=True), store, cache)
    db = db_path(store)
    assert status(db, 1) == "failed"
    assert rows(db, "SELECT COUNT(*) FROM trials") == [(0,)]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_ctrl_c_on_the_nth_trial_keeps_the_finished_ones(store, cache, concurrency):
    subject = ToySubject(cases(4), interrupt_at=3)
    with pytest.raises(KeyboardInterrupt):
        run(subject, store, cache, repeats=2, max_concurrency=concurrency)
    db = db_path(store)
    assert status(db, 1) == "interrupted"
    stored = rows(db, "SELECT COUNT(*) FROM trials WHERE run_id=1")[0][0]
    if concurrency == 1:
        assert stored == 2
    else:  # a trial started after the interrupted one cannot be stored before the interrupt is seen
        assert stored <= 2
    assert rows(db, "SELECT COUNT(*) FROM trial_scores")[0][0] == stored


def test_resume_runs_only_the_missing_slots(store, cache):
    with pytest.raises(KeyboardInterrupt):
        run(ToySubject(cases(3), interrupt_at=4), store, cache, repeats=2)
    db = db_path(store)
    assert rows(db, "SELECT COUNT(*) FROM trials WHERE run_id=1") == [(3,)]
    resumed = ToySubject(cases(3))
    outcome, _ = run(resumed, store, ResponseCache(None, "off"), repeats=2, resume_run_id=1)
    assert resumed.trials_started == 3  # only the missing slots ran
    assert (outcome.run_id, outcome.trials_run, outcome.trials_skipped) == (1, 3, 3)
    assert outcome.model_calls == 3  # cache off: every missing slot is a real call, no finished one is
    events = [e for (e,) in rows(db, "SELECT event FROM run_events WHERE run_id=1 ORDER BY id")]
    assert events == ["started", "interrupted", "resumed", "finished"]
    assert rows(db, "SELECT COUNT(DISTINCT case_pk || '-' || repeat_index) FROM trials WHERE run_id=1") == [(6,)]


def test_resume_refuses_when_a_case_changed(store, cache):
    with pytest.raises(KeyboardInterrupt):
        run(ToySubject(cases(2), interrupt_at=2), store, cache)
    changed = [Case(c.id, c.slug, c.input, c.assertions, source="EDITED") for c in cases(2)]
    with pytest.raises(InputError, match="changed since it started"):
        run(ToySubject(changed), store, cache, resume_run_id=1)


def test_resume_rejects_another_subjects_run(store, cache):
    run(ToySubject(cases(1)), store, cache)

    class Other(ToySubject):
        name = "other"

    with pytest.raises(InputError, match="run of subject 'toy'"):
        run(Other(cases(1)), store, cache, resume_run_id=1)


def test_plan_from_run_rebuilds_the_selection(store, cache):
    subject = ToySubject(cases(3))
    outcome, _ = run(subject, store, cache, cases=subject.cases()[1:], repeats=2,
                     variants=[Variant("m", "mock", {"temperature": 0.5})])
    plan = loop.plan_from_run(store, outcome.run_id, subject)
    assert [c.slug for c in plan.cases] == ["c1", "c2"]
    assert plan.repeats == 2 and plan.variants == [Variant("m", "mock", {"temperature": 0.5})]


def test_a_failed_model_call_is_recorded_on_its_trial_and_the_run_goes_on(store, cache):
    subject = ToySubject(cases(3), raise_at=2, error=ModelCallFailed("model 'x' timed out after 3 attempts"))
    outcome, _ = run(subject, store, cache)
    assert (outcome.status, outcome.trials_run, outcome.trial_errors) == ("finished", 3, 1)
    db = db_path(store)
    (error, raw, score) = rows(db, "SELECT t.error, x.raw_output, s.score FROM trials t " + "JOIN v_trial_texts x ON x.trial_id = t.id "
                                   "JOIN trial_scores s ON s.trial_id = t.id WHERE t.error IS NOT NULL")[0]
    assert "timed out" in error and raw is None and score == 0.0
    details = rows(db, "SELECT passed, detail FROM assertion_results a JOIN trials t ON t.id = a.trial_id "
                       "WHERE t.error IS NOT NULL")
    assert details and all(p == 0 and d.startswith("not evaluated") for p, d in details)


def test_a_dead_server_fails_the_run_and_keeps_what_finished(store, cache):
    subject = ToySubject(cases(3), raise_at=3, error=ServiceUnavailable("Ollama is not reachable"))
    with pytest.raises(ServiceUnavailable, match="not reachable"):
        run(subject, store, cache)
    db = db_path(store)
    assert status(db, 1) == "failed"
    assert rows(db, "SELECT COUNT(*) FROM trials") == [(2,)]
    (detail,) = rows(db, "SELECT detail FROM run_events WHERE event='failed'")[0]
    assert "not reachable" in detail


def test_concurrent_trials_store_the_same_results_as_sequential(store, cache):
    first, _ = run(ToySubject(cases(5)), store, ResponseCache(None, "off"), repeats=3, max_concurrency=4)
    second, _ = run(ToySubject(cases(5)), store, ResponseCache(None, "off"), repeats=3, max_concurrency=1)
    db = db_path(store)
    query = ("SELECT t.case_pk, t.repeat_index, s.score FROM trials t JOIN trial_scores s ON s.trial_id=t.id "
             "WHERE t.run_id=? ORDER BY 1, 2")
    assert rows(db, query, first.run_id) == rows(db, query, second.run_id)
    assert len(rows(db, query, first.run_id)) == 15


@pytest.mark.parametrize("kwargs, message", [
    ({"repeats": 0}, "trial count"),
    ({"max_concurrency": 0}, "max-concurrency"),
    ({"variants": []}, "no variants"),
    ({"variants": [Variant("a", "mock"), Variant("a", "mock")]}, "unique"),
    ({"modes": ["oracle"]}, "no mode 'oracle'"),
    ({"cases": []}, "no cases"),
])
def test_bad_run_arguments_are_input_errors(store, cache, kwargs, message):
    with pytest.raises(InputError, match=message):
        run(ToySubject(cases(1)), store, cache, **kwargs)
    assert rows(db_path(store), "SELECT COUNT(*) FROM runs") == [(0,)]


def test_modes_multiply_the_slots_and_reach_the_checks(store, cache):
    class Moded(ToySubject):
        modes = ("oracle", "e2e")

        def build_request(self, case, variant, mode):
            request = super().build_request(case, variant, mode)
            from dataclasses import replace

            from ragqual.adapters.llm import ChatMessage
            return replace(request, messages=(ChatMessage("user", f"{case.input} {mode}"),))

    case = Case(uid("m"), "m", "x", (Assertion(uid("m/eq"), 1, "eq", Equals("x oracle")),))
    outcome, _ = run(Moded([case]), store, cache, repeats=1)
    got = rows(db_path(store), "SELECT t.mode, s.score FROM trials t JOIN trial_scores s ON s.trial_id=t.id "
                               "WHERE t.run_id=? ORDER BY t.mode", outcome.run_id)
    assert got == [("e2e", 0.0), ("oracle", 1.0)]


def test_progress_reports_start_and_every_trial(store, cache):
    seen = []
    run(ToySubject(cases(2)), store, cache, repeats=2, progress=seen.append)
    assert [(p.done, p.total) for p in seen] == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert seen[-1].trial_id is not None and seen[1].score == 1.0


def test_a_check_changed_without_a_version_bump_is_warned_about(store, cache):
    run(ToySubject(cases(1)), store, cache)
    original = cases(1)[0]
    edited = original.assertions[0]

    def with_check(version):
        changed = Assertion(edited.id, version, edited.name, Equals("changed"), edited.category, edited.weight)
        return Case(original.id, original.slug, original.input, (changed, original.assertions[1]))

    with pytest.warns(UserWarning, match="changed its check but kept version 1"):
        run(ToySubject([with_check(1)]), store, cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(ToySubject([with_check(2)]), store, cache)


def test_the_store_is_handed_the_raw_response_as_the_loop_encoded_it_and_a_cut_one_is_left_to_encode(
        store, cache, monkeypatch):
    """Each trial's raw response is encoded once: the record carries the loop's text
    (`TrialRecord.raw_output_json`, exactly what the store's encoding gives), except for a raw
    response the output cap cut, whose text the loop never encoded."""
    from ragqual.engine.output_cap import CAP_ENV
    from ragqual.store.runstore import RunStore

    handed = []
    original = RunStore.append_trials

    def spy(self, recs):
        handed.extend(recs)
        return original(self, recs)

    monkeypatch.setattr(RunStore, "append_trials", spy)
    run(ToySubject(cases(2)), store, cache)
    assert len(handed) == 2
    for rec in handed:
        assert rec.raw_output_json == json.dumps(rec.raw_output, ensure_ascii=False, sort_keys=True)
    handed.clear()
    monkeypatch.setenv(CAP_ENV, "1024")
    run(ToySubject([echo_case("long", "x" * 5000)]), store, cache)
    assert len(handed) == 1 and handed[0].output_truncated and handed[0].raw_output_json is None


def test_a_trial_is_given_its_interned_system_prompt_id_without_copying_its_record(store, cache, monkeypatch):
    """Only a trial whose system prompt is not interned yet has its record copied to take the id
    (`dataclasses.replace`, ~30 fields); the others are built with it, to the same rows."""
    calls = []
    real = loop.replace
    monkeypatch.setattr(loop, "replace", lambda *a, **kw: calls.append(kw) or real(*a, **kw))
    outcome, _ = run(ToySubject(cases(3)), store, cache, repeats=2)
    assert outcome.trials_run == 6
    assert [sorted(kw) for kw in calls] == [["system_prompt_id"]]  # the first trial's only
    prompt_ids = rows(db_path(store), "SELECT DISTINCT system_prompt_id FROM trials WHERE run_id=?", outcome.run_id)
    assert prompt_ids == rows(db_path(store), "SELECT id FROM system_prompts WHERE text='Repeat the word.'")


def test_a_dataset_hash_the_subject_gives_is_stored_and_the_cases_are_not_hashed_for_it(store, cache, monkeypatch):
    """The cases' own hash is the fallback for a subject that gives none: a subject's own
    `dataset_hash` (the RAG subject hashes its goldens) is stored, with no hash of every case
    definition made and dropped; without one, the hash of the definitions is stored as before."""
    hashed = []
    real = loop.hash_value
    monkeypatch.setattr(loop, "hash_value", lambda value: hashed.append(value) or real(value))
    subject = ToySubject(cases(2))
    given, _ = run(subject, store, cache, provenance_extras={"dataset_hash": "f" * 64})
    assert hashed == []
    own, _ = run(subject, store, cache)
    assert len(hashed) == 1
    stored = dict(rows(db_path(store), "SELECT id, dataset_hash FROM runs"))
    assert stored == {given.run_id: "f" * 64, own.run_id: real([c.definition() for c in subject.cases()])}
