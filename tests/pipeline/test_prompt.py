from ragqual.core.answer_metrics import is_refusal, leaks_retrieval
from ragqual.core.goldens import Golden, Turn
from ragqual.pipeline import prompt
from ragqual.subjects.rag import answer_scores, golden_case


def _golden(**over):
    base = dict(id="g1", query="How long do I boil water?", turns=(), relevant_doc_ids=("water-boiling",),
                must_include=(r"\b(1|one) minute",), must_not_include=("distill",), expect_refusal=False,
                tags=("water",))
    base.update(over)
    return Golden(**base)


def test_mock_echoes_the_injected_context():
    request = prompt.answer_request(_golden(), ["Boil for 1 minute.", "At altitude, 3 minutes."], {"temperature": 0})
    assert prompt.injected_context(request).startswith("[1] Boil for 1 minute.")
    assert prompt.mock_reply(request) == "Boil for 1 minute. At altitude, 3 minutes."


def test_mock_declines_without_context_and_the_decline_counts_as_refusal():
    request = prompt.answer_request(_golden(), [], {})
    answer = prompt.mock_reply(request)
    assert answer == prompt.MOCK_DECLINE and is_refusal(answer) and not leaks_retrieval(answer)


def test_multi_turn_keeps_history_and_rewrite_mock_joins_user_turns():
    golden = _golden(turns=(Turn("user", "Tell me about boiling water."), Turn("assistant", "Sure.")),
                     query="How long should I do it?")
    request = prompt.answer_request(golden, ["x"], {})
    assert [m.role for m in request.messages] == ["user", "assistant", "user"]
    rewrite = prompt.mock_reply(prompt.rewrite_request(golden, {}))
    assert rewrite == "Tell me about boiling water. How long should I do it?"


def test_golden_case_ids_are_stable_and_weights_as_documented():
    a, b = golden_case(_golden()), golden_case(_golden())
    assert a.id == b.id and [x.id for x in a.assertions] == [x.id for x in b.assertions]
    weights = {x.category: x.weight for x in a.assertions}
    assert weights == {"correctness": 1, "refusal": 1, "leakage": 0, "think-tags": 0}


def test_answer_scores_hand_checked():
    good = answer_scores(_golden(), "Boil it for one minute (1,000 ft).", "Boil for 1 minute below 1,000 ft.")
    assert good["correctness"] == 1.0 and good["refusalCorrectness"] == 1.0
    assert good["groundedness"] == 1.0 and good["leakage"] == 0.0
    bad = answer_scores(_golden(), "According to the context, distill it for 20 minutes.", "Boil for 1 minute.")
    assert bad["correctness"] == 0.0 and bad["leakage"] == 1.0 and bad["groundedness"] == 0.0
    refusal = _golden(relevant_doc_ids=(), must_include=(), must_not_include=(), expect_refusal=True)
    assert answer_scores(refusal, prompt.MOCK_DECLINE, "")["correctness"] == 1.0
    assert answer_scores(refusal, "The warranty is 5 years.", "")["refusalCorrectness"] == 0.0
