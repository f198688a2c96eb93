"""Counterfactual contexts from stored candidates, hand-checked (no I/O)."""

import re

import pytest

from ragqual.core import whatif
from ragqual.core.whatif import Question, Setting, context_indices
from ragqual.errors import InputError


def matches(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


TEXTS = {"boil#0": "Boil water for one minute.", "still#0": "Distill it with a still.",
         "poem#0": "Rain on the cistern.", "long#0": "Long text.", "long#1": "More long text."}


def q(case_id, *, refusal=False, ids=(), sims=(), relevant=("boil",), facts=(r"one minute",), split=None):
    return Question(case_id, split, refusal, () if refusal else relevant, () if refusal else facts, (),
                    tuple(ids), tuple(sims))


def test_the_context_rule_is_the_first_k_that_reach_the_cut_off():
    sims = [0.9, 0.4, 0.7, 0.2]
    assert context_indices(sims, None, 2) == [0, 1]
    assert context_indices(sims, 0.5, 5) == [0, 2]
    assert context_indices(sims, 0.5, 1) == [0]
    assert context_indices(sims, 0.95, 3) == []


def test_outcomes_count_declines_lost_documents_and_the_ceiling():
    own = Setting(None, 2)
    answerable = q("a", ids=("poem#0", "boil#0"), sims=(0.6, 0.5))
    refusal = q("r", refusal=True, ids=("poem#0",), sims=(0.45,))
    questions = [answerable, refusal]
    outs = whatif.evaluate(questions, [own, Setting(0.55, 2), Setting(0.4, 2)], own, TEXTS, matches)
    rows = {r.setting: r for r in whatif.rows_for(questions, outs)}
    assert rows[own].refusals_empty == 0.0 and rows[own].answerable_lost == 0.0
    assert rows[own].reader_ceiling == 0.5  # the answerable passes, the refusal has a context
    cut = rows[Setting(0.55, 2)]
    assert cut.refusals_empty == 1.0 and cut.answerable_lost == 1.0 and cut.context_recall == 0.0
    assert cut.reader_ceiling == 0.5  # the refusal now passes, the answerable lost its fact
    assert rows[Setting(0.4, 2)].reader_ceiling == 0.5 and rows[Setting(0.4, 2)].refusals_empty == 0.0


def test_advice_names_a_setting_only_when_it_raises_the_objective():
    own = Setting(None, 2)
    questions = [q("a", ids=("boil#0", "poem#0"), sims=(0.8, 0.3)), q("r", refusal=True, ids=("poem#0",), sims=(0.3,))]
    settings = [own, Setting(0.5, 2)]
    rows = whatif.rows_for(questions, whatif.evaluate(questions, settings, own, TEXTS, matches))
    text = whatif.advice(rows, own, "reader ceiling", "all questions")
    assert text is not None and "threshold 0.50" in text and "from 0.500 to 1.000" in text
    # overlapping similarities: the refusal question scores above the answerable one
    overlapping = [q("a", ids=("boil#0",), sims=(0.5,)), q("r", refusal=True, ids=("poem#0",), sims=(0.7,))]
    rows = whatif.rows_for(overlapping, whatif.evaluate(overlapping, settings + [Setting(0.6, 2)], own, TEXTS, matches))
    assert whatif.advice(rows, own, "reader ceiling", "all questions") is None
    said = whatif.no_cut_off(whatif.overlap(overlapping), "reader ceiling", "all questions")
    assert "no cut-off" in said and "0.700" in said and "1.000 of the out-of-corpus questions" in said


def test_a_tie_keeps_the_runs_own_setting():
    own = Setting(None, 5)
    questions = [q("a", ids=("boil#0",), sims=(0.9,))]
    rows = whatif.rows_for(questions, whatif.evaluate(questions, [Setting(0.3, 5), own], own, TEXTS, matches))
    assert whatif.best(rows, own).setting == own
    assert whatif.advice(rows, own, "reader ceiling", "all questions") is None


def test_selection_reads_one_split():
    own = Setting(None, 1)
    questions = [q("v", ids=("boil#0",), sims=(0.9,), split="validation"), q("t", ids=("poem#0",), sims=(0.9,), split="test")]
    outs = whatif.evaluate(questions, [own], own, TEXTS, matches)
    assert whatif.rows_for(questions, outs, "validation")[0].reader_ceiling == 1.0
    assert whatif.rows_for(questions, outs, "test")[0].reader_ceiling == 0.0
    assert whatif.rows_for(questions, outs)[0].questions == 2


def test_a_reader_is_asked_with_the_counterfactual_passages():
    seen = []
    own = Setting(None, 1)
    question = q("a", ids=("poem#0", "boil#0"), sims=(0.9, 0.8))

    def reader(qq, passages):
        seen.append(list(passages))
        return 1.0 if any("one minute" in p for p in passages) else 0.0

    outs = whatif.evaluate([question], [own, Setting(None, 2)], own, TEXTS, matches, reader)
    rows = {r.setting: r for r in whatif.rows_for([question], outs)}
    assert seen == [[TEXTS["poem#0"]], [TEXTS["poem#0"], TEXTS["boil#0"]]]
    assert rows[own].reader == 0.0 and rows[Setting(None, 2)].reader == 1.0
    assert rows[own].objective() == 0.0  # the reader decides when there is one


def test_ranges_and_lists_parse_and_bad_ones_are_refused():
    assert whatif.parse_range("0.3:0.5:0.1") == [0.3, 0.4, 0.5]
    assert whatif.parse_range("0.3,0.55") == [0.3, 0.55]
    assert whatif.parse_ks("1,3,5") == [1, 3, 5]
    for bad in ("0.5:0.3:0.1", "a:b:c", "0.3:0.5:0"):
        with pytest.raises(InputError):
            whatif.parse_range(bad)
    for bad in ("0,3", "x", ""):
        with pytest.raises(InputError):
            whatif.parse_ks(bad)
