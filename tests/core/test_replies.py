"""Where a raw output holds the answer: every layout the history has reads the same text."""

from __future__ import annotations

import pytest

from ragqual.core.replies import answer_in, holding, without_copy
from ragqual.engine.subject import SubjectContractError, reply_text

BACKEND = {"model": "m", "message": {"role": "assistant", "content": "Boil it."}, "done": True}


def test_the_old_and_the_new_rag_layouts_read_the_same_answer():
    old = {"message": {"role": "assistant", "content": "Boil it."}, "backend": BACKEND, "injected": ["a"]}
    new = {"backend": BACKEND, "injected": ["a"]}
    assert answer_in(old) == answer_in(new) == reply_text(old) == reply_text(new) == "Boil it."


def test_a_backend_response_a_replayed_answer_and_ollama_generate_shape():
    assert answer_in(BACKEND) == "Boil it."
    assert answer_in({"message": {"role": "assistant", "content": "x"}, "source": "answers"}) == "x"
    assert answer_in({"response": "y"}) == "y"
    assert answer_in({"backend": {"response": "z"}}) == "z"
    assert answer_in({"backend": {}}) is None and answer_in("text") is None and answer_in(None) is None
    with pytest.raises(SubjectContractError):
        reply_text({"backend": {"done": True}})


def test_the_answer_is_written_once_when_the_backend_holds_it():
    assert without_copy("Boil it.", BACKEND) == {"backend": BACKEND}


def test_an_answer_the_backend_does_not_hold_verbatim_keeps_its_own_copy():
    assert without_copy("Boil", BACKEND) == {"message": {"role": "assistant", "content": "Boil"}, "backend": BACKEND}
    assert without_copy("a", {"choices": []}) == {"message": {"role": "assistant", "content": "a"},
                                                  "backend": {"choices": []}}


OPENAI = {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": "In 1843."}}]}
LLAMA_COMPLETION = {"object": "text_completion", "choices": [{"index": 0, "text": "Yes."}]}


def test_openai_and_llamacpp_bodies_are_read_where_the_server_put_the_answer():
    assert answer_in(OPENAI) == "In 1843." and answer_in(LLAMA_COMPLETION) == "Yes."
    assert answer_in({"backend": OPENAI, "injected": []}) == "In 1843."
    cached_before = {**OPENAI, "message": {"role": "assistant", "content": "In 1843."}}  # two copies
    assert answer_in(cached_before) == answer_in(OPENAI)


def test_a_backend_body_gets_a_message_only_when_it_lacks_the_exact_answer():
    assert holding("In 1843.", OPENAI) is OPENAI
    assert holding("Yes.", LLAMA_COMPLETION) is LLAMA_COMPLETION
    empty = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]}
    assert holding("", empty) == {**empty, "message": {"role": "assistant", "content": ""}}
    assert answer_in(holding("", empty)) == ""
