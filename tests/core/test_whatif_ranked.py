"""Counterfactuals over a retrieval run's stored rankings, and e2e strategy counterfactuals,
hand-checked on tiny cases (no I/O)."""

import re

import pytest

from ragqual.core import whatif
from ragqual.core.whatif import Question, RankedQuestion, Setting
from ragqual.errors import InputError


def ranked(case_id, docs, sims, *, refusal=False, grades=None, floor=None, split=None):
    return RankedQuestion(case_id, split, refusal, {} if refusal else (grades or {"boil": 1}), tuple(docs),
                          tuple(sims), floor)


# two answerable questions and two out-of-corpus ones, similarities chosen so that a cut-off at
# 0.5 empties one refusal's context and drops one relevant document:
#   a: boil 0.8, still 0.3            -> at 0.5 keeps boil (recall 1)
#   b: poem 0.6, boil 0.45            -> at 0.5 keeps poem only: loses boil (recall 1 -> 0)
#   r1: poem 0.4, still 0.2            -> at 0.5 empty
#   r2: still 0.7                      -> at 0.5 not empty
QUESTIONS = [
    ranked("a", ["boil", "still"], [0.8, 0.3]),
    ranked("b", ["poem", "boil"], [0.6, 0.45]),
    ranked("r1", ["poem", "still"], [0.4, 0.2], refusal=True),
    ranked("r2", ["still"], [0.7], refusal=True),
]


def test_refusal_and_lost_relevant_shares_by_hand():
    own = Setting(None, 2)
    rows, undecided = whatif.ranked_rows("dense", QUESTIONS, [own, Setting(0.5, 2), Setting(0.5, 1)], own)
    assert undecided == []
    at_own, cut, cut1 = rows
    assert (at_own.refusals, at_own.answerable) == (2, 2)
    assert at_own.refusals_empty == 0.0 and at_own.answerable_lost == 0.0
    assert at_own.context_recall == 1.0 and at_own.recall_at_k == 1.0
    assert cut.refusals_empty == 0.5  # r1 only
    assert cut.answerable_lost == 0.5  # b only
    assert cut.context_recall == 0.5 and cut.recall_at_k == 1.0  # the ranking itself is unchanged
    assert cut1.context_recall == 0.5 and cut1.recall_at_k == 0.5  # b's boil is at rank 2


def test_an_unknown_similarity_decides_nothing_unless_the_dense_floor_puts_it_below_the_cut_off():
    hybrid = ranked("h", ["poem", "boil"], [None, 0.7], floor=0.35)
    own = Setting(None, 2)
    assert whatif.known_context(hybrid, None, 2) == [0, 1]
    assert whatif.known_context(hybrid, 0.5, 2) == [1]  # the unknown one is below the floor 0.35
    assert whatif.known_context(hybrid, 0.3, 2) is None  # it could reach 0.3
    assert whatif.known_context(ranked("n", ["poem"], [None]), 0.9, 1) is None  # nothing bounds it
    rows, undecided = whatif.ranked_rows("hybrid", [hybrid], [own, Setting(0.3, 2), Setting(0.5, 2)], own)
    assert undecided == [Setting(0.3, 2)]
    assert [r.setting for r in rows] == [own, Setting(0.5, 2)]


def test_retrieval_advice_names_a_strategy_only_when_it_raises_context_recall():
    own = {"dense": Setting(None, 2), "bm25": Setting(None, 1)}
    bm25 = [ranked("a", ["boil", "still"], [0.8, 0.3]), ranked("b", ["poem", "boil"], [0.6, 0.45])]
    dense = [ranked("a", ["boil", "still"], [0.8, 0.3]), ranked("b", ["poem", "still"], [0.6, 0.3])]
    rows = (whatif.ranked_rows("dense", dense, [own["dense"], Setting(None, 1)], own["dense"])[0]
            + whatif.ranked_rows("bm25", bm25, [own["bm25"], Setting(None, 2)], own["bm25"])[0])
    assert [r.context_recall for r in rows] == [0.5, 0.5, 0.5, 1.0]
    text = whatif.ranked_advice(rows, own, "all questions")
    assert text is not None and text.startswith("bm25 at threshold -, context-k 2 would raise contextRecall "
                                                "from 0.500 (dense as run) to 1.000 on all questions")
    # nothing beats the best strategy as run: nothing is named
    assert whatif.ranked_advice(rows[:3], own, "all questions") is None


TEXTS = {"boil#0": "Boil water for one minute.", "still#0": "Distill it with a still.", "poem#0": "Rain on the cistern."}


def matches(pattern, text):
    return re.search(pattern, text, re.IGNORECASE) is not None


def test_a_strategy_counterfactual_reads_that_strategys_stored_candidates():
    question = Question("a", None, False, ("boil",), (r"one minute",), (), ("poem#0", "still#0"), (0.6, 0.5),
                        by_strategy={"bm25": (("boil#0", "poem#0"), (0.45, 0.6))})
    own = Setting(None, 1)
    outs = whatif.evaluate([question], [own, Setting(None, 1, "bm25")], own, TEXTS, matches)
    assert outs[own][0].reader_ceiling == 0.0 and outs[own][0].context_recall == 0.0
    got = outs[Setting(None, 1, "bm25")][0]
    assert got.reader_ceiling == 1.0 and got.context_recall == 1.0 and not got.lost_relevant
    assert Setting(0.5, 3, "bm25").label() == "threshold 0.50, context-k 3, strategy bm25"
    with pytest.raises(InputError, match="no stored candidates of strategy 'dense'"):
        question.candidates("dense")


def test_parse_strategies_refuses_an_unknown_name():
    assert whatif.parse_strategies("dense, bm25,dense", ("dense", "bm25", "hybrid")) == ["dense", "bm25"]
    with pytest.raises(InputError, match="--strategy 'dense,vector'"):
        whatif.parse_strategies("dense,vector", ("dense", "bm25", "hybrid"))


def test_a_similarity_within_the_margin_of_the_cut_off_decides_nothing():
    close = RankedQuestion("c", None, False, {"boil": 1}, ("boil", "poem"), (0.5000009, 0.2), None, 2e-6)
    assert whatif.known_context(close, 0.5, 2) is None
    assert whatif.known_context(close, 0.45, 2) == [0]
    bounded = RankedQuestion("b", None, False, {"boil": 1}, ("boil", "poem"), (0.7, None), 0.4999995, 2e-6)
    assert whatif.known_context(bounded, 0.5, 2) is None  # the floor is too close to say the unknown one is below
    assert whatif.known_context(bounded, 0.6, 2) == [0]


def test_the_advice_names_a_strategy_only_when_it_raises_the_objective():
    own = Setting(None, 1)
    helps = Question("a", None, False, ("boil",), (r"one minute",), (), ("poem#0", "still#0"), (0.6, 0.5),
                     by_strategy={"bm25": (("boil#0", "poem#0"), (0.45, 0.6)), "dense": (("poem#0",), (0.6,))})
    settings = [own, Setting(None, 1, "bm25"), Setting(None, 1, "dense")]
    rows = whatif.rows_for([helps], whatif.evaluate([helps], settings, own, TEXTS, matches))
    text = whatif.advice(rows, own, "reader ceiling", "all questions")
    assert text is not None and text.startswith(
        "threshold -, context-k 1, strategy bm25 would raise reader ceiling from 0.000 to 1.000 on all questions")
    # dense gives the same as the run's own strategy: nothing is named
    assert whatif.advice([r for r in rows if r.setting.strategy != "bm25"], own, "reader ceiling", "all questions") is None
