import pytest
import regex

from ragqual.core import textmatch
from ragqual.core.textmatch import InvalidPattern, RegexTimeout, compile_pattern, search
from ragqual.errors import InputError, RagqualError


def test_search_is_case_insensitive():
    assert search(r"boil for \d+ minutes", "BOIL FOR 3 MINUTES at sea level")
    assert not search(r"boil for \d+ minutes", "simmer for 3 minutes")


def test_search_matches_anywhere_not_only_at_start():
    assert search("pressure", "Use a pressure canner.")


def test_compile_pattern_is_cached_and_ignorecase():
    first = compile_pattern(r"caching\s+test")
    assert compile_pattern(r"caching\s+test") is first
    assert first.flags & regex.IGNORECASE


def test_catastrophic_pattern_raises_regex_timeout():
    answer = "a" * 5000 + "b"
    with pytest.raises(RegexTimeout) as info:
        search(r"(a+)+$", answer, timeout=0.05)
    assert info.value.pattern == r"(a+)+$"
    assert isinstance(info.value, RagqualError)


def test_same_catastrophic_pattern_matches_fast_on_a_matching_answer():
    assert search(r"(a+)+$", "a" * 5000, timeout=0.5)


def test_invalid_pattern_is_an_input_error_naming_the_pattern():
    with pytest.raises(InvalidPattern) as info:
        search(r"(unclosed", "text")
    assert isinstance(info.value, InputError)
    assert info.value.pattern == "(unclosed"
    assert "(unclosed" in str(info.value)


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_timeout_must_be_positive_and_finite(timeout):
    with pytest.raises(InputError):
        search("a", "a", timeout=timeout)
