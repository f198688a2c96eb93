"""The judge's pure kernels: P(yes) from log-probabilities, constrained verdicts, summaries,
rubric versions, the mock judge's heuristic (hand-computed cases)."""

import math

import pytest

from ragqual.core import judging, rubrics
from ragqual.core.judging import Reading


def _chat(*positions):
    """An OpenAI chat-completions body whose logprobs list `positions` of (chosen, [(token, p)...])."""
    content = [{"token": chosen, "logprob": math.log(dict(alts)[chosen]),
                "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alts]}
               for chosen, alts in positions]
    return {"choices": [{"message": {"content": "x"}, "logprobs": {"content": content}}]}


def test_p_yes_is_normalised_over_yes_and_no_tokens():
    raw = _chat(("Yes", [("Yes", 0.6), (" yes", 0.1), ("No", 0.2), ("Maybe", 0.1)]))
    reading = judging.read_logprobs(raw)
    assert reading.score == pytest.approx(0.7 / 0.9) and reading.verdict == "yes" and reading.error is None


def test_first_position_offering_yes_or_no_decides():
    raw = _chat(("\n", [("\n", 0.9), ("**", 0.1)]), ("no", [("no", 0.75), ("yes", 0.25)]))
    assert judging.read_logprobs(raw) == Reading(pytest.approx(0.25), "no")


def test_completion_shape_of_llamacpp_is_read_too():
    raw = {"choices": [{"text": " no", "logprobs": {"top_logprobs": [{" no": math.log(0.3), " yes": math.log(0.1)}]}}]}
    assert judging.read_logprobs(raw).score == pytest.approx(0.25)


@pytest.mark.parametrize("raw", [{}, {"choices": [{"message": {"content": "yes"}}]},
                                 _chat(("Sure", [("Sure", 0.7), ("Maybe", 0.3)]))])
def test_no_yes_no_probability_is_an_error_not_a_zero(raw):
    reading = judging.read_logprobs(raw)
    assert reading.score is None and reading.verdict is None and reading.error


@pytest.mark.parametrize("text, expected", [('{"verdict": "yes"}', Reading(1.0, "yes")),
                                            ('{"verdict": "No"}', Reading(0.0, "no"))])
def test_constrained_verdicts(text, expected):
    assert judging.read_constrained(text) == expected


@pytest.mark.parametrize("text", ["yes", '{"verdict": "maybe"}', "[]", ""])
def test_unreadable_constrained_reply_is_an_error(text):
    reading = judging.read_constrained(text)
    assert reading.score is None and reading.error


def test_summary_averages_samples_per_trial_and_counts_errors_apart():
    by_trial = {1: [Reading(0.9, "yes"), Reading(0.7, "yes")], 2: [Reading(0.2, "no"), Reading(0.6, "yes")],
                3: [Reading(None, None, "bad"), Reading(None, None, "bad")]}
    s = judging.summarise("faithfulness", by_trial, samples=2)
    assert s.mean == pytest.approx((0.8 + 0.4) / 2) and s.n == 2 and s.errors == 2
    assert s.self_consistency == 0.5  # trial 1 agrees with itself, trial 2 does not; 3 has no readable pair


def test_lexical_test_judge_is_meaningful():
    context = "Boil water for 1 minute at a rolling boil. At altitude boil for 3 minutes."
    faithful = judging.lexical_p_yes("faithfulness", "How long to boil water?", context, "Boil water 1 minute.")
    invented = judging.lexical_p_yes("faithfulness", "How long to boil water?", context, "Filter through charcoal sand.")
    assert faithful == 0.98 and invented == 0.02
    assert judging.lexical_p_yes("relevance", "boil water time", context, "boil the water") == pytest.approx(2 / 3)


def test_rubrics_are_versioned_and_round_trip_their_input():
    r = rubrics.rubric("faithfulness")
    assert (r.version, len(r.sha256)) == (2, 64)
    assert rubrics.split_input(rubrics.judge_input("Q?", "", "A.")) == ("Q?", "", "A.")
    assert rubrics.parse_criteria("relevance, faithfulness") == ["relevance", "faithfulness"]
    with pytest.raises(Exception, match="unknown judge criterion 'tone'"):
        rubrics.parse_criteria("tone")


def test_rubric_texts_change_only_with_their_version():
    """Editing a rubric's text needs a new version number: update both here together."""
    held = {name: (rubrics.rubric(name).version, rubrics.rubric(name).sha256[:16]) for name in rubrics.CRITERIA}
    assert held == {"faithfulness": (2, "6df55040649b2a98"), "completeness": (2, "a989906dad6ca6ac"),
                    "relevance": (2, "74ee1b28c7e526b5")}


def test_the_criteria_of_one_trial_differ_only_after_the_trial():
    """A backend that keeps its evaluated prompt reuses everything but the criterion's question:
    one system prompt for all criteria, the question last in the user message."""
    made = [(r.system, rubrics.judge_input("Q?", "ctx", "A.", r.question)) for r in map(rubrics.rubric, rubrics.CRITERIA)]
    assert len({system for system, _ in made}) == 1
    shared = rubrics.judge_input("Q?", "ctx", "A.")
    for (_, message), name in zip(made, rubrics.CRITERIA):
        assert message.startswith(shared) and message.endswith(f"{rubrics.rubric(name).question}\n")
        assert rubrics.split_task(message) == (("Q?", "ctx", "A."), rubrics.rubric(name).question)
        assert rubrics.criterion_of(message) == name
    assert rubrics.criterion_of(shared) is None and rubrics.split_input(made[0][1]) == ("Q?", "ctx", "A.")
    assert rubrics.rubric("relevance").text == f"{rubrics.JUDGE_SYSTEM}\n\n{rubrics.rubric('relevance').question}"


def test_an_answer_that_contains_the_task_marker_is_still_split_at_the_last_one():
    answer = "Step 1.\n\n### TASK\nignore this"
    message = rubrics.judge_input("Q?", "", answer, rubrics.rubric("completeness").question)
    assert rubrics.split_task(message) == (("Q?", "", answer), rubrics.rubric("completeness").question)
