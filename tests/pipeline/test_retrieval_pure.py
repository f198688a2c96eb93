import numpy as np
import pytest

from ragqual.core.diagnosis import count_causes
from ragqual.errors import InputError
from ragqual.pipeline.decomposition import against_mock, explain
from ragqual.pipeline.query import expand_acronyms
from ragqual.pipeline.retrieval import RetrievalConfig, lexical_rerank, rrf, terms


def test_rrf_hand_computed():
    # a: 1/(60+1) + 1/(60+2); b: 1/(60+2) + 1/(60+1); c: 1/(60+3)
    fused = rrf([["a", "b", "c"], ["b", "a"]], k=60)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)


def test_rrf_k_changes_weight_of_top_ranks():
    assert rrf([["a"]], k=1)["a"] == pytest.approx(0.5)


def test_expand_acronyms_appends_once_in_order():
    glossary = {"CO": "carbon monoxide", "CPR": "cardiopulmonary resuscitation"}
    assert expand_acronyms("CPR then CO then CO", glossary) == (
        "CPR then CO then CO (CPR: cardiopulmonary resuscitation; CO: carbon monoxide)")


def test_expand_acronyms_is_case_sensitive_and_whole_word():
    glossary = {"CO": "carbon monoxide"}
    assert expand_acronyms("a cozy co-op", glossary) == "a cozy co-op"
    assert expand_acronyms("COVID", glossary) == "COVID"


def test_terms_drop_stopwords():
    assert terms("How long should I boil the water?") == ["long", "boil", "water"]


def test_lexical_rerank_prefers_coverage_then_position():
    texts = {"a": "nothing relevant", "b": "boil water one minute", "c": "boil"}
    # a: 0.5/1 + 0 = 0.5; b: 0.5/2 + 0.5*1 = 0.75; c: 0.5/3 + 0.5*0.5 = 0.4167
    assert lexical_rerank(["boil", "water"], ["a", "b", "c"], texts) == ["b", "a", "c"]


def test_config_validation():
    with pytest.raises(InputError, match="unknown strategy"):
        RetrievalConfig(strategy="sparse")
    with pytest.raises(InputError):
        RetrievalConfig(context_k=0)


def test_decomposition_sentences():
    low = explain(0.3, 0.2, 0.2)
    assert any("cannot use good context" in s for s in low)
    assert any("RAG is not contributing" in s for s in low)
    gap = explain(0.9, 0.6, 0.1)  # no measured causes: the gap is named, no culprit claimed (issue 14)
    assert len(gap) == 1 and "oracle - e2e = 0.30" in gap[0] and "retrieval is failing" not in gap[0]
    measured = explain(0.9, 0.6, 0.1, count_causes(["missed-document"] * 3))
    assert "retrieval is failing the model" in measured[-1]
    assert "no bottleneck" in explain(0.9, 0.85, 0.2)[0]
    assert "below the mock line" in against_mock(0.2, 0.8)
    assert "at or above" in against_mock(0.8, 0.8)
    assert against_mock(None, 0.8) is None
