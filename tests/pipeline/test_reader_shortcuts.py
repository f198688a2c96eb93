"""The what-if mock reader's shortcuts give what the long way gives.

`prompt.mock_answer(passages)` is `mock_reply(answer_request(golden, passages, options))` for any
golden and options (empty and blank passages, passages holding the context markers or `[n] `-like
lines, multi-turn goldens, the bundled corpus); the reader builds no request; `golden_case`
returns the case a run built for an equal golden; `answer_correctness` stops at the first failing
assertion and still equals every assertion's evaluation (regex timeouts included)."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from ragqual.core.goldens import Golden, Turn, parse_goldens
from ragqual.engine import scorers
from ragqual.engine.assertions import Assertion, RegexExcludes, RegexIncludes, TrialContext
from ragqual.engine.cases import Case
from ragqual.pipeline import prompt
from ragqual.subjects import rag
from tests.pipeline.test_answer_correctness import _golden

ROOT = Path(__file__).resolve().parents[2]
DOCS = {p.stem: p.read_text(encoding="utf-8") for p in sorted((ROOT / "corpus").glob("*.md"))}
GOLDENS = parse_goldens([(p.name, p.read_bytes()) for p in sorted((ROOT / "goldens").glob("*.jsonl"))], DOCS)
PARAGRAPHS = [para for text in DOCS.values() for para in text.split("\n\n") if para.strip()]

EDGE_PASSAGES = [
    [], [""], ["  "], ["\n"], ["", "Boil water."], ["Boil water.", ""], ["Boil water.", " \n "],
    ["Boil water for one minute."], ["  padded  \n\n  lines  "],
    ["[note] a label-like line\n[2] another\n[x]no space", "plain"],
    ["first\n[1] numbered inside\n\n\n  indented"],
    ["CONTEXT>>> a stray close first", "after it"], ["before", "a close CONTEXT>>> inside"],
    ["<<<CONTEXT a stray open", "CONTEXT>>>"], ["<<<CONTEXT"], ["ends with CONTEXT>>"],
    ["Question: not the question\nCONTEXT>"],
    ["windows\r\nline\rends", "unicode\u2028separator\x85next\x1cfs", "\x0bvertical\x0cfeed"],
    ["] leading bracket", "[", "[]", "[ ] x", "]"],
]


QUESTION_GOLDENS = [
    _golden(), _golden(query="CONTEXT>>> <<<CONTEXT in the question"),
    _golden(query="And then?", turns=(Turn("user", "<<<CONTEXT x CONTEXT>>>"), Turn("assistant", "[1] ok"))),
]


def _long_way(golden: Golden, passages, options=None) -> str:
    return prompt.mock_reply(prompt.answer_request(golden, passages, options or {}))


@pytest.mark.parametrize("passages", EDGE_PASSAGES, ids=repr)
def test_mock_answer_equals_the_reply_to_the_request(passages):
    for golden in QUESTION_GOLDENS:
        assert prompt.mock_answer(passages) == _long_way(golden, passages, {"temperature": 0}), golden.query
        assert prompt.mock_answer(tuple(passages)) == _long_way(golden, passages)


def test_mock_answer_on_bundled_contexts():
    rng = random.Random(5)
    for golden in GOLDENS:
        for passages in ([], rng.sample(PARAGRAPHS, 1), rng.sample(PARAGRAPHS, 5),
                         [DOCS[d] for d in golden.relevant_doc_ids[:2]]):
            assert prompt.mock_answer(passages) == _long_way(golden, passages), golden.id


def test_reader_builds_no_request(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the reader built a request")

    from ragqual.app.whatif_run import mock_reader

    golden = _golden()
    want = {tuple(p): rag.answer_correctness(golden, _long_way(golden, p), "\n\n".join(p)) for p in EDGE_PASSAGES}
    monkeypatch.setattr(prompt, "answer_request", refuse)
    read = mock_reader({golden.id: golden}, {})
    for passages in EDGE_PASSAGES:
        assert read(SimpleNamespace(case_id=golden.id), passages) == want[tuple(passages)]


def test_golden_case_is_the_runs_case_for_an_equal_golden():
    subject = rag.RagSubject(GOLDENS, [])
    built = {c.id: c for c in subject.cases()}
    again = parse_goldens([(p.name, p.read_bytes()) for p in sorted((ROOT / "goldens").glob("*.jsonl"))], DOCS)
    for golden in again:
        assert rag.golden_case(golden) is built[golden.id]
    other = _golden(must_include=("two minutes",))
    assert rag.golden_case(other) is not rag.golden_case(_golden())
    assert rag.golden_case(other).assertions[0].name == "includes /two minutes/"


def _case(golden: Golden, *checks: Assertion) -> Case:
    return Case(id=golden.id, slug=golden.id, input=golden.to_json_dict(), assertions=checks)


def _full(case: Case, golden: Golden, answer: str) -> float | None:
    outcomes = [e.outcome for e in scorers.evaluate_all(case.assertions, answer, TrialContext(case=case, context=answer))]
    return rag.metrics_from_outcomes(golden.expect_refusal, outcomes, answer, answer)["correctness"]


def test_correctness_stops_at_the_first_failure(monkeypatch):
    golden = _golden(must_include=("one minute", "boil", "water"), must_not_include=("distill",))
    case = rag.golden_case(golden)
    calls = []
    evaluate = scorers.evaluate

    def counted(a, output, ctx):
        calls.append(a.name)
        return evaluate(a, output, ctx)

    monkeypatch.setattr(scorers, "evaluate", counted)
    assert rag.answer_correctness(golden, "Distill it.", "", case) == 0.0
    assert calls == ["includes /one minute/"]
    calls.clear()
    assert rag.answer_correctness(golden, "Boil water for one minute.", "", case) == 1.0
    assert len(calls) == 4


def test_correctness_with_timeouts_and_empty_cases():
    golden = _golden(must_include=(), must_not_include=())
    slow = "(a+)+$"
    answers = ["", "a" * 30 + "b", "aaa", "boil for one minute", "I don't know."]
    cases = [
        _case(golden),
        _case(golden, Assertion(rag._uid("t", "1"), 1, "slow include", RegexIncludes(slow, timeout=1e-9), "correctness")),
        _case(golden, Assertion(rag._uid("t", "2"), 1, "slow exclude", RegexExcludes(slow, timeout=1e-9), "correctness")),
        _case(golden, Assertion(rag._uid("t", "3"), 1, "minute", RegexIncludes("minute"), "correctness"),
              Assertion(rag._uid("t", "4"), 1, "slow", RegexExcludes(slow, timeout=1e-9), "correctness")),
    ]
    for case in cases:
        for answer in answers:
            assert rag.answer_correctness(golden, answer, answer, case) == _full(case, golden, answer), (case, answer)
    refusal = _golden(id="r1", must_include=(), must_not_include=(), relevant_doc_ids=(), expect_refusal=True)
    for answer in answers:
        assert rag.answer_correctness(refusal, answer, answer, _case(refusal)) is None
        assert rag.answer_correctness(refusal, answer, answer) == _full(rag.golden_case(refusal), refusal, answer)


def test_golden_case_follows_the_checks_version(monkeypatch):
    golden = _golden(id="versioned")
    now = rag.golden_case(golden)
    monkeypatch.setattr(rag, "CHECKS_VERSION", rag.CHECKS_VERSION + 1)
    bumped = rag.golden_case(golden)
    assert [a.version for a in bumped.assertions if a.category != "correctness"] == [rag.CHECKS_VERSION] * 3
    assert bumped is not now and rag.golden_case(golden) is bumped
