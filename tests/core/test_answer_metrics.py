import pytest

from ragqual.core.answer_metrics import correctness, extract_numbers, groundedness
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


# Refusals, hedges, leakage and think tags: tests/core/test_answer_phrases.py (a labelled table).


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
