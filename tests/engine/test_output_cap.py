"""The raw-output cap and the breaker's settings: pure, hand-checked."""

from __future__ import annotations

import pytest

from ragqual.engine.breaker import THRESHOLD_ENV, breaker_threshold
from ragqual.engine.output_cap import CAP_ENV, DEFAULT_CAP, cap_result, cut_strings, json_size, output_cap
from ragqual.engine.subject import SubjectResult
from ragqual.errors import InputError


def result(text: str, extra: dict | None = None) -> SubjectResult:
    raw = {"message": {"role": "assistant", "content": text}, "backend": {"choices": [{"content": text}]},
           **(extra or {})}
    return SubjectResult(output=text, raw=raw, telemetry=None, rendered_prompt=None)


def test_a_small_output_is_kept_whole_with_its_size():
    capped = cap_result(result("short answer"), 2048)
    assert not capped.truncated
    assert capped.result.output == "short answer"
    assert capped.original_bytes == json_size(capped.result.raw)


def test_a_large_output_is_cut_under_the_cap_and_scored_on_what_is_kept():
    big = result("ab" * 50_000, {"retrievalQuery": "q"})
    capped = cap_result(big, 4096)
    assert capped.truncated and capped.original_bytes == json_size(big.raw) > 200_000
    assert json_size(capped.result.raw) <= 4096
    kept = capped.result.raw["message"]["content"]
    assert capped.result.output == kept == capped.result.raw["backend"]["choices"][0]["content"]
    assert "ab" * 100 in kept and len(kept) < 2048  # two copies of the text share the budget
    assert capped.result.raw["retrievalQuery"] == "q"  # short fields are untouched


def test_the_cut_is_the_longest_that_fits():
    raw = {"a": "x" * 1000}
    cap = json_size({"a": "x" * 300})
    capped = cap_result(SubjectResult(output="x" * 1000, raw=raw, telemetry=None, rendered_prompt=None), cap)
    assert capped.result.raw == {"a": "x" * 300}


def test_multibyte_text_is_measured_in_bytes():
    capped = cap_result(result("é" * 10_000), 4096)
    assert json_size(capped.result.raw) <= 4096


def test_cut_strings_reaches_nested_lists():
    assert cut_strings({"a": ["xyz", {"b": "uvw"}], "n": 5}, 2) == {"a": ["xy", {"b": "uv"}], "n": 5}


def test_the_cap_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(CAP_ENV, raising=False)
    assert output_cap() == DEFAULT_CAP == 262144
    monkeypatch.setenv(CAP_ENV, "4096")
    assert output_cap() == 4096
    for bad in ("12", "lots", "-5"):
        monkeypatch.setenv(CAP_ENV, bad)
        with pytest.raises(InputError, match=CAP_ENV):
            output_cap()


def test_the_breaker_threshold_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(THRESHOLD_ENV, raising=False)
    assert breaker_threshold() == 5
    monkeypatch.setenv(THRESHOLD_ENV, "0")
    assert breaker_threshold() == 0
    assert breaker_threshold(9) == 9
    monkeypatch.setenv(THRESHOLD_ENV, "five")
    with pytest.raises(InputError, match=THRESHOLD_ENV):
        breaker_threshold()
