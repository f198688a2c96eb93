import pytest

from ragqual.core.scoring import SCORER_NAME, SCORER_VERSION
from ragqual.engine.assertions import Assertion, Equals, Predicate, TrialContext
from ragqual.engine.cases import Case
from ragqual.engine.scorers import default_scorers, evaluate_all, get_scorer, not_evaluated, score_rows
from ragqual.errors import InputError
from tests.engine.support import uid

CTX = TrialContext(case=Case(uid("c"), "c", "x"))


def a(name, expected, category="A", weight=1.0):
    return Assertion(uid(name), 1, name, Equals(expected), category, weight)


def scored(assertions, output="yes", error=None):
    (row,) = score_rows(default_scorers(), evaluate_all(assertions, output, CTX), error)
    return row


def test_weighted_fraction_and_categories():
    # passes: w3 (A), w1 (B); fails: w2 (A), w0 informational (B) -> 4 / 6
    row = scored([a("p3", "yes", "A", 3), a("f2", "no", "A", 2), a("p1", "yes", "B", 1), a("f0", "no", "B", 0)])
    assert (row.scorer_name, row.scorer_version) == (SCORER_NAME, SCORER_VERSION)
    assert row.score == pytest.approx(4 / 6)
    assert row.perfect is False
    assert row.per_category == pytest.approx({"A": 3 / 5, "B": 1.0})


def test_a_failing_informational_assertion_neither_moves_the_score_nor_breaks_perfect():
    row = scored([a("p", "yes", weight=2), a("info", "no", weight=0)])
    assert (row.score, row.perfect) == (1.0, True)


def test_no_assertions_and_all_zero_weights_score_one():
    assert scored([]).score == 1.0
    assert scored([a("z1", "no", weight=0), a("z2", "no", weight=0)]).score == 1.0


def test_an_errored_assertion_counts_as_failed():
    broken = Assertion(uid("boom"), 1, "boom", Predicate(lambda o: 1 / 0), "A", 1.0)
    row = scored([a("p", "yes"), broken])
    assert row.score == 0.5 and row.perfect is False


def test_an_errored_trial_scores_zero_even_without_weight_bearing_assertions():
    assertions = [a("z", "yes", weight=0)]
    (row,) = score_rows(default_scorers(), not_evaluated(assertions, "timeout"), "timeout")
    assert (row.score, row.perfect, row.per_category) == (0.0, False, {"A": 0.0})
    assert not_evaluated(assertions, "timeout")[0].row().detail == "not evaluated: timeout"


def test_unknown_scorer_lists_the_valid_ones():
    assert get_scorer(SCORER_NAME).version == SCORER_VERSION
    with pytest.raises(InputError, match="valid scorers are weighted-assertions"):
        get_scorer("judge")
