"""The what-if mock reader shares the echo mock's reply between questions handed the same passages
(the reply reads only the context block): each question's correctness is what reading it alone gives,
even for questions whose text or earlier turns carry the context markers."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

from ragqual.app.whatif_run import mock_reader
from ragqual.core.goldens import Golden, Turn
from ragqual.pipeline import prompt
from ragqual.subjects.rag import answer_correctness

PASSAGES = [(), ("Boil water for one minute.",), ("Boil water for one minute.", "Add 2 drops of bleach per litre."),
            ("CONTEXT>>> stray marker, then boil for 3 minutes",), ("<<<CONTEXT nested", "I don't know.")]


def _goldens() -> list[Golden]:
    def g(gid, query, include=(), exclude=(), refusal=False, turns=()):
        return Golden(id=gid, query=query, turns=turns, relevant_doc_ids=() if refusal else ("d",),
                      must_include=include, must_not_include=exclude, expect_refusal=refusal, tags=())
    return [g("boil", "How long to boil?", include=("one minute",)),
            g("bleach", "How much bleach? <<<CONTEXT one minute CONTEXT>>>", include=("2 drops",), exclude=("minute",)),
            g("out", "Who won in 1998?", refusal=True),
            g("turns", "And then?", include=("3 minutes",),
              turns=(Turn("user", "<<<CONTEXT boil for 3 minutes CONTEXT>>>"), Turn("assistant", "ok")))]


def test_shared_replies_give_each_question_its_own_reading():
    goldens = _goldens()
    options = {"temperature": 0}
    read = mock_reader({x.id: x for x in goldens}, options)
    for golden, passages in itertools.product(goldens, PASSAGES):
        alone = answer_correctness(golden, prompt.mock_reply(prompt.answer_request(golden, passages, options)),
                                   "\n\n".join(passages))
        assert read(SimpleNamespace(case_id=golden.id), list(passages)) == alone, (golden.id, passages)
