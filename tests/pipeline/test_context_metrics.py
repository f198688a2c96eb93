"""The per-trial context metrics of the RAG subject: what retrieval handed the model in e2e."""

from ragqual.engine.cases import Case
from ragqual.subjects.rag import RagSubject, context_metrics

GOLDEN = {"relevantDocIds": ["water", "power"], "mustInclude": [r"\b20 litres\b", r"\b12 V\b"],
          "mustNotInclude": [], "expectRefusal": False}


def test_recall_counts_documents_not_chunks_and_coverage_counts_facts():
    raw = {"injected": ["water#0", "water#3", "food#1"]}
    got = context_metrics(GOLDEN, raw, "Store 20 litres per person.")
    assert got == {"contextRecall": 0.5, "factCoverage": 0.5, "readerCeiling": 0.0}


def test_everything_injected_is_one():
    raw = {"injected": ["power#2", "water#0"]}
    assert context_metrics(GOLDEN, raw, "20 litres ... a 12 V bank") == {
        "contextRecall": 1.0, "factCoverage": 1.0, "readerCeiling": 1.0}


def test_an_empty_context_is_zero_and_an_out_of_corpus_question_has_no_value():
    assert context_metrics(GOLDEN, {"injected": []}, "") == {"contextRecall": 0.0, "factCoverage": 0.0, "readerCeiling": 0.0}
    refusal = {"relevantDocIds": [], "mustInclude": [], "expectRefusal": True}
    assert context_metrics(refusal, {"injected": ["water#0"]}, "text") == {
        "contextRecall": None, "factCoverage": None, "readerCeiling": 0.0}
    assert context_metrics(refusal, {"injected": []}, "")["readerCeiling"] == 1.0  # nothing to answer from


def test_a_raw_response_without_injected_ids_gives_no_context_metrics():
    assert context_metrics(GOLDEN, {"message": {}}, "20 litres") == {}
    assert context_metrics(GOLDEN, None, "20 litres") == {}


def test_only_e2e_trials_carry_them():
    subject = RagSubject([], [])
    case = Case(id="g", slug="g", input=GOLDEN, assertions=())
    outcomes: list = []
    raw = {"injected": ["water#0"]}
    e2e = subject.derive_metrics(case, "e2e", "20 litres", "20 litres", outcomes, raw=raw)
    oracle = subject.derive_metrics(case, "oracle", "20 litres", "20 litres", outcomes, raw={"injected": ["water"]})
    assert e2e["contextRecall"] == 0.5 and e2e["factCoverage"] == 0.5
    assert "contextRecall" not in oracle and "factCoverage" not in oracle
