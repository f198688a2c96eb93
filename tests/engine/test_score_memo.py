"""A run scores each distinct (case, variant, mode, answer, context, raw response) once when its
scoring is pure: repeats of a deterministic model share the rows, answers that differ between
repeats are each scored, and what a check cannot promise (an impure check, an error) is never
remembered. Stored rows are compared with a run whose subject does not declare pure scoring."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ragqual.engine import loop
from ragqual.engine.assertions import Assertion, Equals, Predicate, RegexIncludes
from ragqual.engine.cases import Case
from ragqual.engine.services import services_for
from ragqual.engine.subject import Variant
from ragqual.store.runstore import RunStore
from tests.engine.support import ToySubject, echo_case, rows, uid

MOCK = [Variant("mock", "mock")]
ROWS_SQL = {
    "assertions": "SELECT t.case_pk, t.mode, t.repeat_index, r.assertion_id, r.category, r.weight, r.passed, r.detail "
                  "FROM assertion_results r JOIN trials t ON t.id = r.trial_id ORDER BY r.id",
    "scores": "SELECT t.case_pk, t.repeat_index, s.scorer_name, s.score, s.perfect, s.per_category "
              "FROM trial_scores s JOIN trials t ON t.id = s.trial_id ORDER BY s.id",
    "metrics": "SELECT t.case_pk, t.repeat_index, m.metric, m.value, m.scorer_version "
               "FROM metric_values m JOIN trials t ON t.id = m.trial_id ORDER BY m.id",
}


class CountingSubject(ToySubject):
    """The toy subject with metrics, counting how often its metrics are derived; `varying`: the
    answer of odd repeats differs (a sampled model), so those trials score differently."""

    def __init__(self, cases, *, pure: bool, varying: bool = False):
        super().__init__(cases, metrics=True)
        self.pure_scoring = pure
        self.varying = varying
        self.derived = 0

    def run_one(self, case, variant, mode, repeat_index, services):
        result = super().run_one(case, variant, mode, repeat_index, services)
        if self.varying and repeat_index % 2:
            text = "other" if case.slug == "c1" else result.output + "!"
            result = replace(result, output=text, raw={**result.raw, "message": {"role": "assistant", "content": text}})
        return result

    def derive_metrics(self, case, mode, output, context, outcomes, raw=None):
        self.derived += 1
        return super().derive_metrics(case, mode, output, context, outcomes, raw=raw)


def cases() -> list[Case]:
    return [echo_case("c0", "alpha"), echo_case("c1", "beta", expected="other"), echo_case("c2", "gamma")]


def stored(subject, tmp_path, name: str, cache, repeats: int = 4) -> dict[str, list[tuple]]:
    db = tmp_path / f"{name}.db"
    store = RunStore.open(f"sqlite:///{db}")
    try:
        loop.run(subject, MOCK, subject.cases(), store=store, services=services_for(subject, cache),
                 repeats=repeats, argv=["test"])
    finally:
        store.engine.dispose()
    return {what: rows(db, sql) for what, sql in ROWS_SQL.items()}


def test_repeats_of_one_answer_are_scored_once_with_the_same_rows(tmp_path, cache):
    pure, plain = CountingSubject(cases(), pure=True), CountingSubject(cases(), pure=False)
    assert stored(pure, tmp_path, "pure", cache) == stored(plain, tmp_path, "plain", cache)
    assert plain.derived == 12
    assert pure.derived == 3  # one per case: the four repeats answer alike


def test_answers_that_differ_between_repeats_are_each_scored(tmp_path, cache):
    pure = CountingSubject(cases(), pure=True, varying=True)
    plain = CountingSubject(cases(), pure=False, varying=True)
    memo, fresh = stored(pure, tmp_path, "pure", cache), stored(plain, tmp_path, "plain", cache)
    assert memo == fresh
    assert pure.derived == 6  # two distinct answers per case
    # the odd repeats really scored differently: c1 passes its Equals("other") only there
    passed = {(r[2], r[6]) for r in memo["assertions"] if r[3] == uid("c1/eq")}
    assert passed == {(0, 0), (1, 1), (2, 0), (3, 1)}


def test_a_check_that_is_not_declared_pure_is_evaluated_on_every_trial(tmp_path, cache):
    calls = []

    def counted(output: Any) -> bool:
        calls.append(output)
        return True

    case = Case(id=uid("p"), slug="p", input="delta", assertions=(
        Assertion(uid("p/eq"), 1, "equals", Equals("delta"), "EXACT", 1.0),
        Assertion(uid("p/fn"), 1, "counted", Predicate(counted), "FN", 1.0),
    ))
    subject = CountingSubject([case], pure=True)
    stored(subject, tmp_path, "impure", cache, repeats=3)
    assert len(calls) == 3
    assert subject.derived == 3


@dataclass(frozen=True)
class FailsFirst:
    """A check declared pure that raises on its first evaluation (a regex running out of time)."""

    state: list
    kind = "test-fails-first"
    pure = True

    def evaluate(self, output: Any, ctx: Any) -> tuple[bool, str | None]:
        self.state.append(output)
        if len(self.state) == 1:
            raise TimeoutError("ran out of time")
        return True, None

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind}


def test_a_scoring_with_an_error_on_a_check_is_not_remembered(tmp_path, cache):
    state: list = []
    case = Case(id=uid("f"), slug="f", input="eps", assertions=(
        Assertion(uid("f/re"), 1, "letters", RegexIncludes("[a-z]"), "FORMAT", 1.0),
        Assertion(uid("f/ff"), 1, "fails first", FailsFirst(state), "SLOW", 1.0),
    ))
    subject = CountingSubject([case], pure=True)
    got = stored(subject, tmp_path, "errors", cache, repeats=3)
    slow = [(r[2], r[6], r[7]) for r in got["assertions"] if r[3] == uid("f/ff")]
    assert slow == [(0, 0, "error: TimeoutError: ran out of time"), (1, 1, None), (2, 1, None)]
    assert len(state) == 2  # the failed scoring was redone once, then remembered
    assert subject.derived == 2
