"""Batched appends: where the trial loop cuts its batches, and that every ending appends what waits."""

from __future__ import annotations

import pytest

from ragqual.adapters.cache import ResponseCache
from ragqual.engine import loop
from ragqual.engine.batching import BatchPolicy, batch_policy
from ragqual.engine.breaker import CircuitOpen
from ragqual.engine.services import services_for
from ragqual.engine.subject import Variant
from ragqual.errors import InputError, ServiceUnavailable
from tests.engine.support import ToySubject, echo_case, rows, status

MOCK = [Variant("mock", "mock")]


class SpyStore:
    """Wraps a RunStore: records the size of every append_trials batch."""

    def __init__(self, store):
        self._store = store
        self.batches: list[int] = []

    def append_trials(self, recs):
        self.batches.append(len(recs))
        return self._store.append_trials(recs)

    def __getattr__(self, name):
        return getattr(self._store, name)


def cases(n):
    return [echo_case(f"c{i}", f"w{i}") for i in range(n)]


def run(subject, store, cache, policy, **kw):
    services = kw.pop("services", None) or services_for(subject, cache)
    return loop.run(subject, kw.pop("variants", MOCK), subject.cases(), store=store, services=services,
                    argv=["test"], batching=policy, **kw)


# -- the policy (pure) --------------------------------------------------------------------------------

def test_a_batch_is_due_at_n_trials_t_ms_or_a_case_end_whichever_first():
    policy = BatchPolicy(trials=3, ms=100.0, per_case=True)
    assert not policy.due(0, 10_000.0, True)  # nothing waits: nothing to append
    assert not policy.due(2, 99.9, False)
    assert policy.due(3, 0.0, False)
    assert policy.due(1, 100.0, False)
    assert policy.due(1, 0.0, True)
    assert not BatchPolicy(trials=3, ms=100.0).due(1, 0.0, True)  # per case only when asked


def test_the_policy_is_read_from_the_environment_and_bad_values_are_refused():
    assert batch_policy({}) == BatchPolicy(500, 1000.0, False)
    assert batch_policy({"RAGQUAL_APPEND_BATCH": "7", "RAGQUAL_APPEND_BATCH_MS": "25.5",
                         "RAGQUAL_APPEND_PER_CASE": "1"}) == BatchPolicy(7, 25.5, True)
    for env, name in (({"RAGQUAL_APPEND_BATCH": "0"}, "RAGQUAL_APPEND_BATCH"),
                      ({"RAGQUAL_APPEND_BATCH": "ten"}, "RAGQUAL_APPEND_BATCH"),
                      ({"RAGQUAL_APPEND_BATCH_MS": "-1"}, "RAGQUAL_APPEND_BATCH_MS"),
                      ({"RAGQUAL_APPEND_BATCH_MS": "nan"}, "RAGQUAL_APPEND_BATCH_MS"),
                      ({"RAGQUAL_APPEND_PER_CASE": "maybe"}, "RAGQUAL_APPEND_PER_CASE")):
        with pytest.raises(InputError, match=name):
            batch_policy(env)


# -- the appender with a fake store and a fake clock ----------------------------------------------------

class FakeStore:
    def __init__(self):
        self.batches: list[list[str]] = []
        self.next_id = 0

    def append_trials(self, recs):
        self.batches.append(list(recs))
        ids = list(range(self.next_id + 1, self.next_id + 1 + len(recs)))
        self.next_id += len(recs)
        return ids


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def slot(case: int, mode: str, variant: int = 1, repeat: int = 0) -> loop.Slot:
    c = echo_case(f"c{case}", "w")
    return loop.Slot(Variant("mock", "mock"), variant, c, case, mode, repeat)


def appender(policy, slots, clock, durable=lambda: True):
    store, told = FakeStore(), []
    sink = loop._Appender(store, policy, slots, lambda done, trial_id: told.append((done.slot.key, trial_id)),
                          durable, clock)
    return sink, store, told


def feed(sink, slots, clock, step_ms=0.0):
    for s in slots:
        clock.now += step_ms / 1000
        sink.add(loop._Done(s, None, None), s.key)


def test_every_n_trials_is_one_batch_and_the_rest_waits_for_the_flush():
    slots = [slot(c, m) for c in range(3) for m in ("a", "b")]
    clock = Clock()
    sink, store, told = appender(BatchPolicy(trials=4, ms=1e9), slots, clock)
    feed(sink, slots, clock)
    assert [len(b) for b in store.batches] == [4]
    assert len(told) == 4 and sink.waiting  # the last two wait
    sink.flush()
    assert [len(b) for b in store.batches] == [4, 2]
    assert [key for key, _ in told] == [s.key for s in slots]  # reported in order, once each
    assert [trial_id for _, trial_id in told] == [1, 2, 3, 4, 5, 6]


def test_t_ms_since_the_last_append_cuts_a_batch_and_a_slow_trial_goes_alone():
    slots = [slot(c, "a") for c in range(7)]
    clock = Clock()
    sink, store, _ = appender(BatchPolicy(trials=100, ms=50.0), slots, clock)
    feed(sink, slots[:5], clock, step_ms=20.0)  # 20, 40, 60 ms: the third trial cuts a batch
    assert [len(b) for b in store.batches] == [3]
    feed(sink, slots[5:6], clock, step_ms=200.0)  # one trial slower than T: appended as it finishes
    assert [len(b) for b in store.batches] == [3, 3]
    feed(sink, slots[6:], clock, step_ms=1.0)
    sink.tick()
    assert [len(b) for b in store.batches] == [3, 3]
    clock.now += 0.06  # nothing finishes, but the loop's wait ticks: T has passed
    sink.tick()
    assert [len(b) for b in store.batches] == [3, 3, 1]


def test_per_case_ends_a_batch_with_the_last_mode_of_a_case_in_any_finishing_order():
    slots = [slot(c, m) for c in range(2) for m in ("a", "b", "c")]
    clock = Clock()
    sink, store, _ = appender(BatchPolicy(trials=100, ms=1e9, per_case=True), slots, clock)
    order = [slots[1], slots[3], slots[0], slots[4], slots[2], slots[5]]  # threads finish out of order
    feed(sink, order, clock)
    assert [[r[0] for r in b] for b in store.batches] == [[0, 1, 0, 1, 0], [1]]


def test_without_a_cache_that_keeps_answers_every_trial_is_appended_alone():
    slots = [slot(c, "a") for c in range(3)]
    clock = Clock()
    sink, store, _ = appender(BatchPolicy(trials=100, ms=1e9), slots, clock, durable=lambda: False)
    feed(sink, slots, clock)
    assert [len(b) for b in store.batches] == [1, 1, 1]


# -- the loop: batches and every ending ------------------------------------------------------------------

def test_a_run_appends_in_batches_of_n_and_stores_every_trial_once(store, cache):
    spy = SpyStore(store)
    outcome, = [run(ToySubject(cases(5)), spy, cache, BatchPolicy(trials=4, ms=1e9), repeats=2)]
    assert spy.batches == [4, 4, 2]
    db = store.engine.url.database
    assert rows(db, "SELECT COUNT(*), COUNT(DISTINCT case_pk || '-' || repeat_index) FROM trials") == [(10, 10)]
    assert rows(db, "SELECT COUNT(*) FROM seals WHERE run_id=1") == [(1 + 3 + 1,)]  # start, 3 batches, end
    assert status(db, outcome.run_id) == "finished"


def test_cache_off_appends_each_trial_on_its_own(store):
    spy = SpyStore(store)
    run(ToySubject(cases(3)), spy, ResponseCache(None, "off"), BatchPolicy(trials=100, ms=1e9))
    assert spy.batches == [1, 1, 1]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_an_interrupt_appends_the_waiting_trials_before_the_end_event(store, cache, concurrency):
    spy = SpyStore(store)
    with pytest.raises(KeyboardInterrupt):
        run(ToySubject(cases(6), interrupt_at=5), spy, cache, BatchPolicy(trials=100, ms=1e9),
            max_concurrency=concurrency)
    db = store.engine.url.database
    stored = rows(db, "SELECT COUNT(*) FROM trials")[0][0]
    assert stored == sum(spy.batches) and len(spy.batches) == 1
    assert stored == 4 if concurrency == 1 else 1 <= stored <= 4
    assert status(db, 1) == "interrupted"
    assert f'"trials_stored": {stored}' in rows(db, "SELECT detail FROM run_events WHERE event='interrupted'")[0][0]


def test_a_failure_appends_the_waiting_trials_before_the_end_event(store, cache):
    spy = SpyStore(store)
    with pytest.raises(ServiceUnavailable):
        run(ToySubject(cases(5), raise_at=4, error=ServiceUnavailable("gone")), spy, cache,
            BatchPolicy(trials=100, ms=1e9))
    db = store.engine.url.database
    assert spy.batches == [3]
    assert rows(db, "SELECT COUNT(*) FROM trial_scores") == [(3,)]
    assert status(db, 1) == "failed"


def test_a_breaker_stop_appends_the_waiting_trials_before_the_end_event(store, cache):
    spy = SpyStore(store)
    with pytest.raises(CircuitOpen):
        run(ToySubject(cases(5), raise_at=3, error=CircuitOpen(5, "timed out")), spy, cache,
            BatchPolicy(trials=100, ms=1e9))
    db = store.engine.url.database
    assert spy.batches == [2]
    assert status(db, 1) == "failed"


def test_the_last_batch_is_appended_before_finished_and_progress_sees_every_trial(store, cache):
    spy, seen = SpyStore(store), []
    run(ToySubject(cases(3)), spy, cache, BatchPolicy(trials=2, ms=1e9), progress=seen.append)
    assert spy.batches == [2, 1]
    assert [p.done for p in seen] == [0, 1, 2, 3] and all(p.trial_id for p in seen[1:])
    db = store.engine.url.database
    events = rows(db, "SELECT event, id FROM run_events ORDER BY id")
    last_trial_seal = rows(db, "SELECT MAX(id) FROM seals WHERE rows LIKE '%\"trials\"%'")[0][0]
    finished_seal = rows(db, "SELECT MAX(id) FROM seals")[0][0]
    assert events[-1][0] == "finished" and last_trial_seal < finished_seal


def test_an_interrupt_between_a_batch_commit_and_its_count_still_counts_every_stored_trial(store, cache):
    # SIGTERM and Ctrl-C raise KeyboardInterrupt wherever the main thread is: here, while the
    # trials of a committed batch of 3 are being reported (the second report). The run keeps 3.
    seen = []

    def progress(p):
        seen.append(p)
        if p.done == 2:
            raise KeyboardInterrupt

    with pytest.raises(loop.RunInterrupted) as caught:
        run(ToySubject(cases(6)), store, cache, BatchPolicy(trials=3, ms=1e9), progress=progress)
    db = store.engine.url.database
    assert rows(db, "SELECT COUNT(*) FROM trials") == [(3,)]
    assert caught.value.stored == 3
    assert '"trials_stored": 3' in rows(db, "SELECT detail FROM run_events WHERE event='interrupted'")[0][0]
