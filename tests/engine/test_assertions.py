import pytest

from ragqual.engine.assertions import (
    Assertion,
    Equals,
    JsonPath,
    Predicate,
    RegexExcludes,
    RegexIncludes,
    TrialContext,
    assertion_from_spec,
    check_from_spec,
    code_hash,
)
from ragqual.engine.cases import Case
from ragqual.engine.paths import PathNotFound, parse_path, resolve_path
from ragqual.engine.scorers import evaluate
from ragqual.errors import InputError
from tests.engine.support import uid

CASE = Case(id=uid("c"), slug="c", input="q")
CTX = TrialContext(case=CASE, mode="oracle", context="Paris is in France.")
DOC = {"label": "positive", "items": [{"n": 3}, {"n": 12, "tags": ["a", "b"]}], "text": "Positive!"}


def test_paths_parse_and_resolve():
    assert parse_path("items[1].tags[0]") == ("items", 1, "tags", 0)
    assert parse_path("$.label") == ("label",)
    assert resolve_path(DOC, "items[1].tags[0]") == "a"
    assert resolve_path(DOC, "$.items[0].n") == 3


@pytest.mark.parametrize("path", ["items[1].nope", "items[5]", "label.x", "label[0]"])
def test_missing_path_raises_path_not_found(path):
    with pytest.raises(PathNotFound):
        resolve_path(DOC, path)


@pytest.mark.parametrize("path", ["", "a..b", "a[x]", "a[0]b", "$"])
def test_malformed_path_is_an_input_error(path):
    with pytest.raises(InputError):
        parse_path(path)


def test_regex_includes_is_case_insensitive_and_reads_a_path():
    assert RegexIncludes(r"^positive\W*$", path="text").evaluate(DOC, CTX) == (True, None)
    passed, detail = RegexIncludes("negative").evaluate("all good", CTX)
    assert not passed and "negative" in detail


def test_regex_excludes():
    assert RegexExcludes(r"\bbecause\b").evaluate("positive", CTX) == (True, None)
    passed, detail = RegexExcludes(r"\bbecause\b").evaluate("positive because", CTX)
    assert not passed and "unwanted" in detail


def test_a_regex_that_does_not_compile_is_rejected_at_load():
    with pytest.raises(InputError, match="invalid regex"):
        RegexIncludes("(unclosed")


def test_equals_whole_output_and_path():
    assert Equals("x").evaluate("x", CTX) == (True, None)
    assert Equals(12, path="items[1].n").evaluate(DOC, CTX)[0]
    passed, detail = Equals("negative", path="label").evaluate(DOC, CTX)
    assert not passed and "positive" in detail and "negative" in detail


def test_a_missing_path_fails_with_a_detail_not_an_error():
    passed, detail = Equals("x", path="nope").evaluate(DOC, CTX)
    assert not passed and "nope" in detail


@pytest.mark.parametrize("op, value, expected", [
    ("eq", "positive", True), ("eq", "negative", False),
    ("ne", "negative", True), ("ne", "positive", False),
    ("in", ["neutral", "positive"], True), ("in", ["neutral"], False),
])
def test_json_path_ops_on_label(op, value, expected):
    assert JsonPath("label", op, value).evaluate(DOC, CTX)[0] is expected


@pytest.mark.parametrize("path, op, value, expected", [
    ("items[1].tags", "contains", "b", True),
    ("items[1].tags", "contains", "z", False),
    ("text", "contains", "Posi", True),
    ("items[1].n", "gt", 10, True),
    ("items[0].n", "gt", 10, False),
    ("items[0].n", "lt", 3.5, True),
    ("label", "gt", 1, False),  # not a number: fails rather than raising
])
def test_json_path_ops_on_nested_values(path, op, value, expected):
    assert JsonPath(path, op, value).evaluate(DOC, CTX)[0] is expected


def test_json_path_reads_a_json_string_output_and_fails_plain_text():
    assert JsonPath("a", "eq", 1).evaluate('{"a": 1}', CTX) == (True, None)
    assert JsonPath("a", "eq", 1).evaluate("plain words", CTX) == (False, "the output is text, not JSON")


@pytest.mark.parametrize("args", [("a", "like", 1), ("a", "in", "abc"), ("a", "gt", "ten"), ("a..b", "eq", 1)])
def test_json_path_rejects_bad_arguments(args):
    with pytest.raises(InputError):
        JsonPath(*args)


@pytest.mark.parametrize("check", [
    RegexIncludes("a+b", path="text"), RegexExcludes("zzz"), Equals({"k": [1, 2]}), Equals("x", path="a.b[0]"),
    JsonPath("items[1].n", "gt", 10), JsonPath("label", "in", ["a", "b"]),
])
def test_declarative_checks_round_trip_through_their_spec(check):
    rebuilt = check_from_spec(check.spec())
    assert rebuilt == check
    assert rebuilt.spec() == check.spec()


def is_short(output):
    return len(output) < 5


def test_predicate_spec_carries_the_code_hash_and_needs_a_registry():
    check = Predicate(is_short)
    spec = check.spec()
    assert spec["kind"] == "predicate" and spec["code_sha256"] == code_hash(is_short)
    assert len(spec["code_sha256"]) == 64
    with pytest.raises(InputError, match="live registry"):
        check_from_spec(spec)
    rebuilt = check_from_spec(spec, {spec["code_sha256"]: is_short})
    assert rebuilt.evaluate("abc", CTX) == (True, None)


def test_predicates_with_different_source_have_different_hashes():
    assert code_hash(lambda o: o == "a") != code_hash(lambda o: o == "b")


def test_predicate_may_use_the_context_and_return_a_detail():
    def grounded(output, ctx):
        return output in ctx.context, f"mode {ctx.mode}"

    assert Predicate(grounded).evaluate("Paris", CTX) == (True, "mode oracle")
    assert Predicate(grounded).evaluate("Rome", CTX) == (False, "mode oracle")


def test_unknown_check_kind_lists_the_valid_ones():
    with pytest.raises(InputError, match="regex_includes"):
        check_from_spec({"kind": "llm_judge"})


def test_assertion_spec_round_trip():
    a = Assertion(uid("a1"), 2, "label ok", Equals("positive", path="label"), "SENTIMENT", 3.0)
    assert assertion_from_spec(a.spec()) == a


@pytest.mark.parametrize("kwargs, message", [
    ({"id": "not-a-uuid"}, "UUID"),
    ({"version": 0}, "version"),
    ({"version": 1.5}, "version"),
    ({"weight": float("nan")}, "weight"),
    ({"weight": "heavy"}, "weight"),
    ({"name": " "}, "name"),
])
def test_assertion_validation_raises_input_errors(kwargs, message):
    base = dict(id=uid("a"), version=1, name="n", check=Equals(1))
    with pytest.raises(InputError, match=message):
        Assertion(**{**base, **kwargs})


def test_a_regex_timeout_is_an_error_on_that_assertion_only():
    slow = Assertion(uid("slow"), 1, "catastrophic", RegexIncludes(r"(a+)+$", timeout=0.01))
    evaluated = evaluate(slow, "a" * 5000 + "b", CTX)
    assert evaluated.outcome.passed is False
    assert "RegexTimeout" in evaluated.outcome.error
    assert evaluated.detail.startswith("error:")


def test_an_exception_in_a_predicate_is_recorded_not_raised():
    boom = Assertion(uid("boom"), 1, "divides", Predicate(lambda o: 1 / 0))
    evaluated = evaluate(boom, "x", CTX)
    assert not evaluated.outcome.counts_as_passed
    assert "ZeroDivisionError" in evaluated.outcome.error
    assert evaluated.row().passed is False


def test_a_subject_can_register_its_own_declarative_check(monkeypatch):
    from dataclasses import dataclass

    from ragqual.engine import assertions

    monkeypatch.setattr(assertions, "DECLARATIVE", dict(assertions.DECLARATIVE))

    @assertions.register_check
    @dataclass(frozen=True)
    class Shouts:
        min_letters: int
        kind = "test-shouts"

        def evaluate(self, output, ctx):
            return output.isupper() and len(output) >= self.min_letters, None

        def spec(self):
            return {"kind": self.kind, "min_letters": self.min_letters}

    rebuilt = check_from_spec({"kind": "test-shouts", "min_letters": 3})
    assert rebuilt == Shouts(3) and rebuilt.evaluate("HEY", CTX) == (True, None)

    class Impostor:
        kind = "test-shouts"

    with pytest.raises(InputError, match="already taken"):
        assertions.register_check(Impostor)
    with pytest.raises(InputError, match="bad arguments"):
        check_from_spec({"kind": "test-shouts", "loudness": 3})
