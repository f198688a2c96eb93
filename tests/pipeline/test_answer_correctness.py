"""`answer_correctness` (what the what-if reader asks of each counterfactual answer) equals
`answer_scores(...)["correctness"]`, which evaluates every assertion: on the bundled goldens
with the echo mock's answers from corpus passages, and on hand-made edge cases."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ragqual.core.goldens import Golden, parse_goldens
from ragqual.pipeline import prompt
from ragqual.subjects.rag import answer_correctness, answer_scores, golden_case

ROOT = Path(__file__).resolve().parents[2]
DOCS = {p.stem: p.read_text(encoding="utf-8") for p in sorted((ROOT / "corpus").glob("*.md"))}
GOLDENS = parse_goldens([(p.name, p.read_bytes()) for p in sorted((ROOT / "goldens").glob("*.jsonl"))], DOCS)
PARAGRAPHS = [para for text in DOCS.values() for para in text.split("\n\n") if para.strip()]


def _golden(**over) -> Golden:
    base = dict(id="g1", query="How long do I boil water?", turns=(), relevant_doc_ids=("water-boiling",),
                must_include=(r"\b(1|one) minute",), must_not_include=("distill",), expect_refusal=False, tags=())
    base.update(over)
    return Golden(**base)


EDGE_GOLDENS = [
    _golden(),
    _golden(must_include=(), must_not_include=()),  # nothing to check: correct
    _golden(must_include=(r"minute", r"\bboil"), must_not_include=(r"know",)),  # several patterns of each kind
    _golden(must_include=(), must_not_include=(r"minute",)),  # only a pattern that must not match
    _golden(id="r1", must_include=(), must_not_include=(), relevant_doc_ids=(), expect_refusal=True),
]
EDGE_ANSWERS = ["", prompt.MOCK_DECLINE, "Boil it for 1 minute.", "Distill it for one minute.",
                "I don't know. Boil it for 1 minute.", "I'm not sure, but boil it for one minute.",
                "According to the context, 1 minute.", "<think>hmm</think> 1 minute"]


@pytest.mark.parametrize("golden", EDGE_GOLDENS, ids=lambda g: f"{g.id}-{g.must_include}-{g.must_not_include}")
def test_edge_cases(golden):
    for answer in EDGE_ANSWERS:
        want = answer_scores(golden, answer, answer)["correctness"]
        assert answer_correctness(golden, answer, answer) == want
        assert answer_correctness(golden, answer, answer, golden_case(golden)) == want


def test_bundled_goldens_with_mock_answers():
    rng = random.Random(28)
    for golden in GOLDENS:
        case = golden_case(golden)
        for passages in ([], rng.sample(PARAGRAPHS, 1), rng.sample(PARAGRAPHS, 3),
                         [DOCS[d] for d in golden.relevant_doc_ids[:2]]):
            answer = prompt.mock_reply(prompt.answer_request(golden, passages, {}))
            context = "\n\n".join(passages)
            want = answer_scores(golden, answer, context)["correctness"]
            got = answer_correctness(golden, answer, context, case)
            assert got == want and type(got) is type(want), golden.id
