import pytest
import regex

from ragqual.core.answer_metrics import (
    HEDGE_PATTERNS,
    LEAKAGE_PATTERNS,
    REFUSAL_PATTERNS,
    THINK_TAG_PATTERN,
    correctness,
    extract_numbers,
    groundedness,
    has_think_tags,
    is_hedge,
    is_refusal,
    leaks_retrieval,
    refusal_correct,
)
from ragqual.core.textmatch import RegexTimeout

# --- correctness -----------------------------------------------------------------------------


def test_correctness_needs_every_include_and_no_exclude():
    answer = "Bring the water to a rolling boil for 3 minutes above 6,500 ft."
    assert correctness(answer, [r"\b(3|three) minutes?", r"rolling boil"], [r"distill"])
    assert not correctness(answer, [r"\b(3|three) minutes?", r"filter"], [])
    assert not correctness(answer, [r"rolling boil"], [r"6,500"])


def test_correctness_with_no_patterns_is_true():
    assert correctness("anything", [], [])


def test_spelled_out_number_matches_only_a_pattern_that_allows_it():
    spelled = "Boil it for three minutes."
    digits = "Boil it for 3 minutes."
    assert correctness(spelled, [r"\b(3|three) minutes?"], [])
    assert correctness(digits, [r"\b(3|three) minutes?"], [])
    assert not correctness(spelled, [r"\b3 minutes?"], [])


def test_word_boundary_keeps_13_from_matching_3():
    assert not correctness("Boil for 13 minutes.", [r"\b(3|three) minutes?"], [])


def test_include_patterns_are_case_insensitive():
    assert correctness("USE A PRESSURE CANNER", [r"pressure canner"], [r"water[- ]bath"])


def test_catastrophic_pattern_in_a_golden_raises_regex_timeout():
    with pytest.raises(RegexTimeout):
        correctness("a" * 5000 + "!", [r"(a+)+$"], [], timeout=0.05)


# --- refusals and hedges ---------------------------------------------------------------------

DECLINES = [
    "I don't know.",
    "I don’t know the warranty terms of the TR-88.",  # typographic apostrophe
    "I couldn't find anything about that.",
    "Sorry, I wasn't able to find specific context for this question.",
    "The provided information does not cover the warranty.",
    "I'm not able to find that in my sources.",
    "There is no information about the TR-88 warranty.",
    "I cannot answer this question.",
    "I'm unable to answer that.",
    "I do not have enough information to answer.",
    "The manual does not mention a warranty period.",
    "That is not mentioned in the material I have.",
    "I have no information on the TR-88.",
]

ANSWERS = [
    "Boil water for 3 minutes at altitudes above 6,500 feet.",
    "Water-bath canning does not provide enough heat for low-acid foods; use a pressure canner.",
    "Boiling does not remove lead, so use a certified filter.",
    "I know this one: add 8 drops of bleach per gallon.",
    "Keep the person dry; in the context of hypothermia, warm the core first.",
    "Nothing found in the water should be drunk without treatment.",
    "Water damage is not covered by most pump warranties, so check yours.",
]


@pytest.mark.parametrize("answer", DECLINES)
def test_declines_are_refusals(answer):
    assert is_refusal(answer)


@pytest.mark.parametrize("answer", ANSWERS)
def test_plain_answers_are_not_refusals(answer):
    assert not is_refusal(answer)


def unexercised(patterns, examples):
    """Patterns that no example triggers: each pattern in a list should earn its place."""
    folded = [e.replace("\u2019", "'") for e in examples]
    return [p for p in patterns if not any(regex.search(p, e, regex.IGNORECASE) for e in folded)]


def test_every_refusal_pattern_is_exercised_by_some_decline():
    assert unexercised(REFUSAL_PATTERNS, DECLINES) == []


HEDGES = [
    "I'm not sure, but I think it's about 5 years.",
    "I am not entirely certain; maybe 20 minutes.",
    "I’m unsure whether it is 3 or 5 minutes.",
    "I can't be certain, but boil it for 1 minute.",
    "I cannot confirm the dose; 8 drops is common.",
    "To the best of my knowledge, boil for 1 minute.",
    "If I remember correctly, it is 10 psi.",
    "It's unclear, though 8 drops per gallon is common.",
    "The filter may or may not remove viruses.",
    "I'm guessing 15 minutes.",
]


@pytest.mark.parametrize("answer", HEDGES)
def test_hedges(answer):
    assert is_hedge(answer)
    assert not refusal_correct(answer, expect_refusal=False)


def test_every_hedge_pattern_is_exercised_by_some_hedge():
    assert unexercised(HEDGE_PATTERNS, HEDGES) == []


def test_sure_answers_are_not_hedges():
    assert not is_hedge("I'm sure it's 3 minutes. Make sure the boil is rolling.")


def test_refusal_correct_both_ways():
    decline = "I couldn't find information about the TR-88 warranty."
    answer = "Boil water for 3 minutes above 6,500 feet."
    assert refusal_correct(decline, expect_refusal=True)
    assert not refusal_correct(answer, expect_refusal=True)
    assert refusal_correct(answer, expect_refusal=False)
    assert not refusal_correct(decline, expect_refusal=False)


def test_a_hedged_guess_is_not_a_refusal():
    guess = "I'm not sure, but the warranty is probably 5 years."
    assert not refusal_correct(guess, expect_refusal=True)


# --- leakage ---------------------------------------------------------------------------------

LEAKS = [
    "According to the context, boil for 3 minutes.",
    "Based on the provided context, use 8 drops of bleach.",
    "The knowledge base says to boil for 3 minutes.",
    "As Context 1 explains, the pump needs priming.",
    "Context 2 states the pressure is 10 psi.",
    "The documents provided do not mention a warranty.",
    "In the passage, the author says to boil water.",
    "According to the documents, the canner needs 10 psi.",
    "The context says to keep the person dry.",
    "From the retrieved passages, the answer is 3 minutes.",
    "The provided information does not mention it.",
    "As mentioned in the sources, wear gloves.",
    "Document 3 lists the dose.",
    "In the context, the answer is 3 minutes.",
    "According to the information provided, the pump is rated for 40 psi.",
]

CLEAN = [
    "In the context of hypothermia, warm the core before the limbs.",
    "Boil water for 3 minutes above 6,500 feet.",
    "Context matters: at altitude water boils at a lower temperature.",
    "Keep a copy of your documents in a waterproof bag.",
    "The passage of time weakens the seal, so check it yearly.",
    "According to the CDC, 8 drops of bleach per gallon is enough.",
    "Knowledge of first aid is useful; take a base layer too.",
    "Store the jars in a cool, dark place.",
]


@pytest.mark.parametrize("answer", LEAKS)
def test_retrieval_narration_is_leakage(answer):
    assert leaks_retrieval(answer)


@pytest.mark.parametrize("answer", CLEAN)
def test_ordinary_prose_is_not_leakage(answer):
    assert not leaks_retrieval(answer)


def test_every_leakage_pattern_is_exercised_by_some_leak():
    assert unexercised(LEAKAGE_PATTERNS, LEAKS) == []


# --- think tags ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "<think>The user wants...</think>Boil for 3 minutes.",
        "Boil for 3 minutes.</think>",
        "<reasoning>step</reasoning> 3 minutes",
        "<|thinking|> hmm <|/thinking|> 3 minutes",
        "<THINKING>x</THINKING>",
        "[THINK]x[/THINK] answer",
    ],
)
def test_think_tags_detected(answer):
    assert has_think_tags(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "I think you should boil it for 3 minutes.",
        "Use <b>bold</b> text.",
        "Reasoning: boil it.",
        "Thoughts?",
    ],
)
def test_plain_text_has_no_think_tags(answer):
    assert not has_think_tags(answer)


def test_think_tag_pattern_is_public():
    assert regex.search(THINK_TAG_PATTERN, "<think>", regex.IGNORECASE)


# --- groundedness ----------------------------------------------------------------------------


def test_extract_numbers_normalises_commas_decimals_and_units():
    text = "Take 120mg twice; above 6,500 ft boil 3 min; 1,000,000 jars; 2.50 L; 10,20,40."
    assert extract_numbers(text) == {120.0, 6500.0, 3.0, 1_000_000.0, 2.5, 10.0, 20.0, 40.0}


def test_extract_numbers_does_not_glue_a_bad_thousands_group():
    assert extract_numbers("1,0000") == {1.0, 0.0}


def test_groundedness_commas_and_units_match_plain_context():
    answer = "Above 6,500 ft, boil for 3 minutes; the dose is 120mg."
    context = "At elevations over 6500 feet boil three minutes. Adults take 120 mg."
    assert groundedness(answer, context) == 1.0


def test_groundedness_counts_distinct_numbers_above_ten():
    # Claims > 10: 120 (twice, counted once), 999, 15.5. Context has 120 and 15.5.
    answer = "Use 120 mg, then 120 mg again, never 999 mg, at 15.5 degrees; 3 doses, step 10."
    context = "The dose is 120 mg at 15.5 degrees."
    assert groundedness(answer, context) == pytest.approx(2 / 3)


def test_groundedness_is_none_without_numbers_above_ten():
    assert groundedness("Boil it for three minutes, 3 times, at step 10.", "anything 42") is None


def test_groundedness_zero_when_every_number_is_invented():
    assert groundedness("The pressure is 15 psi for 75 minutes.", "Use 10 psi for 40 minutes.") == 0.0


def test_groundedness_accepts_a_list_of_context_passages():
    assert groundedness("1,000 litres and 250 m", ["holds 1000 litres", "pipe of 250 m"]) == 1.0


def test_groundedness_treats_equal_decimals_as_equal():
    assert groundedness("Add 12.50 ml.", "add 12.5 ml") == 1.0
