"""The measured causes of a failing answer, hand-checked (no I/O)."""

import re

from ragqual.core.diagnosis import (
    evidence_from,
    Evidence,
    cause_of,
    count_causes,
    doc_of,
    document_recall,
    fact_coverage,
    gap_verdict,
    outranked,
    reader_ceiling,
)
from ragqual.pipeline.decomposition import explain


def matches(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


def ev(**over) -> Evidence:
    base = dict(expect_refusal=False, relevant_docs=("boil",), injected=("boil#0", "poem#1"),
                context="Boil water for one minute. Rain on the cistern.", answer="Boil it for one minute.",
                must_include=(r"\bone minute",), must_not_include=(r"distill",))
    return Evidence(**{**base, **over})


def test_doc_of_and_the_measures():
    assert doc_of("water-boiling#3") == "water-boiling" and doc_of("water-boiling") == "water-boiling"
    assert document_recall(ev(relevant_docs=("boil", "filter"))) == 0.5
    assert fact_coverage(ev(must_include=(r"one minute", r"three minutes")), matches) == 0.5


def test_each_cause_in_its_order():
    assert cause_of(ev(expect_refusal=True, relevant_docs=(), answer="Boil it."), matches) == "answered-out-of-corpus"
    assert cause_of(ev(expect_refusal=True, relevant_docs=(), context="", injected=()), matches) == "model"
    assert cause_of(ev(injected=("poem#1",), answer="No idea."), matches) == "missed-document"
    near = ev(injected=("still#0", "boil#0"), context="Distill it with a still. Boil for one minute.", answer="Distill it.")
    assert cause_of(near, matches) == "near-miss"
    echoed = ev(context="Boil for one minute. Distill it with a still.", answer="Distill it.")
    assert cause_of(echoed, matches) == "reader-confusion"
    assert cause_of(ev(context="Boiling kills germs.", answer="Boil it."), matches) == "fact-not-in-context"
    assert cause_of(ev(answer="Filter it."), matches) == "model"


def test_a_gap_with_the_documents_present_is_not_blamed_on_retrieval():
    """Recall 1.0 (every relevant document injected), e2e far below oracle."""
    counts = count_causes(["fact-not-in-context"] * 5 + ["answered-out-of-corpus"] * 3 + ["model"])
    text = " ".join(explain(1.0, 0.5, 0.0, counts))
    assert "retrieval is failing the model" not in text
    assert "5 got every relevant document but not the chunk holding the fact" in text
    assert "largest cause, fact-not-in-context" in text


def test_missing_documents_are_blamed_on_retrieval():
    text = " ".join(gap_verdict(0.4, count_causes(["missed-document"] * 4 + ["model"])))
    assert "4 did not get a relevant document" in text and "retrieval is failing the model" in text


def test_without_measured_causes_the_gap_sentence_claims_no_culprit():
    text = " ".join(explain(1.0, 0.5, 0.0))
    assert "retrieval is failing the model" not in text and "--failures" in text


def test_evidence_is_read_from_the_golden_and_the_raw_response():
    golden = {"relevantDocIds": ["water"], "mustInclude": ["20 l"], "mustNotInclude": ["40 l"], "expectRefusal": False}
    e = evidence_from(golden, {"injected": ["water#0", 3]}, "ctx", "answer")
    assert (e.relevant_docs, e.injected, e.must_include, e.must_not_include) == (("water",), ("water#0", "3"), ("20 l",), ("40 l",))
    assert (e.context, e.answer, e.expect_refusal) == ("ctx", "answer", False)
    assert evidence_from({"expectRefusal": True}, "not a dict", "", "").injected == ()
    assert evidence_from({"expectRefusal": True}, None, "", "").expect_refusal is True



def test_the_wrong_document_outranks_the_right_one_only_when_it_holds_the_first_slot():
    assert outranked(ev(injected=("still#0", "boil#1")))
    assert not outranked(ev(injected=("boil#1", "still#0")))
    assert not outranked(ev(injected=()))
    assert not outranked(ev(relevant_docs=()))


def test_a_twin_in_the_context_with_every_fact_present_and_the_fact_missing_differ():
    """The echo repeats a twin's value with the right document first and the fact present:
    reader-confusion (the reader ceiling passes it). With the fact absent, a near-miss."""
    twin = dict(context="Boil for one minute. Distill it with a still.", answer="Distill it.")
    assert cause_of(ev(**twin), matches) == "reader-confusion"
    assert reader_ceiling(ev(**twin), matches)
    missing = dict(context="Boiling kills germs. Distill it with a still.", answer="Distill it.")
    assert cause_of(ev(**missing), matches) == "near-miss"
    assert not reader_ceiling(ev(**missing), matches)


def test_the_reader_ceiling():
    assert reader_ceiling(ev(expect_refusal=True, relevant_docs=(), context="", injected=()), matches)
    assert not reader_ceiling(ev(expect_refusal=True, relevant_docs=(), context="Boil it."), matches)
    assert reader_ceiling(ev(), matches)
    assert not reader_ceiling(ev(must_include=(r"one minute", r"three minutes")), matches)
    assert reader_ceiling(ev(must_include=()), matches)  # no facts: every relevant document is there
    assert not reader_ceiling(ev(must_include=(), injected=("poem#1",)), matches)


def test_questions_are_counted_first_and_trials_beside_them():
    """Three repeats of two failing questions: people read 2 questions, not 6 trials."""
    causes = ["answered-out-of-corpus"] * 3 + ["near-miss"] * 3
    ids = ["q1"] * 3 + ["q2"] * 3
    text = " ".join(gap_verdict(0.3, count_causes(causes, ids)))
    assert "of the 2 question(s) the oracle answered and e2e failed (6 failing trials over the repeats)" in text
    assert "1 answered an out-of-corpus question" in text
    once = " ".join(gap_verdict(0.3, count_causes(causes[:1], ids[:1])))
    assert "of the 1 question(s) the oracle answered and e2e failed:" in once
