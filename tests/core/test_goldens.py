"""Strict golden validation: every problem is reported with its file and line, in one pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragqual.core.goldens import Golden, Turn, goldens_hash, parse_goldens, select
from ragqual.errors import InputError, Issue, ValidationFailed

DOCS = {"water-boiling", "bleach-dosing", "canning-pressure"}
FILE = "goldens/water.jsonl"


def golden(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "water-boil-altitude-01",
        "query": "How long should I boil water at altitude?",
        "turns": [],
        "relevantDocIds": ["water-boiling"],
        "mustInclude": [r"\b(3|three) minutes?"],
        "mustNotInclude": ["distill"],
        "expectRefusal": False,
        "tags": ["single-hop", "numeric"],
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()


def jsonl(*objects: Any) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode("utf-8")


def issues_of(files: list[tuple[str, bytes]], known: set[str] = DOCS) -> list[Issue]:
    with pytest.raises(ValidationFailed) as caught:
        parse_goldens(files, known)
    return caught.value.issues


def only_issue(obj_or_line: Any) -> Issue:
    data = obj_or_line if isinstance(obj_or_line, bytes) else jsonl(obj_or_line)
    found = issues_of([(FILE, data)])
    assert len(found) == 1, found
    return found[0]


# --- accepted input ---------------------------------------------------------------------------


def test_valid_golden_maps_every_field() -> None:
    obj = golden(
        turns=[{"role": "user", "content": "Tell me about boiling."}, {"role": "assistant", "content": "Sure."}],
        relevantDocIds=["water-boiling", "bleach-dosing"],
        split="validation",
        relevanceGrades={"water-boiling": 3},
    )
    [g] = parse_goldens([(FILE, jsonl(obj))], DOCS)
    assert g.id == "water-boil-altitude-01"
    assert g.query == "How long should I boil water at altitude?"
    assert g.turns == (Turn("user", "Tell me about boiling."), Turn("assistant", "Sure."))
    assert g.relevant_doc_ids == ("water-boiling", "bleach-dosing")
    assert g.must_include == (r"\b(3|three) minutes?",)
    assert g.must_not_include == ("distill",)
    assert g.expect_refusal is False
    assert g.tags == ("single-hop", "numeric")
    assert g.split == "validation"
    assert dict(g.grades) == {"water-boiling": 3, "bleach-dosing": 1}  # unlisted relevant docs default to 1
    assert g.source == "goldens/water.jsonl:1"


def test_patterns_are_case_insensitive() -> None:
    [g] = parse_goldens([(FILE, jsonl(golden()))], DOCS)
    assert g.include_patterns[0].search("Boil for THREE MINUTES above 2000 m")
    assert g.exclude_patterns[0].search("DISTILLATION")
    assert not g.include_patterns[0].search("boil for 30 minutes")


def test_refusal_golden_without_documents_is_valid() -> None:
    obj = golden(id="tr88-warranty", relevantDocIds=[], mustInclude=[], expectRefusal=True, tags=["out-of-corpus"])
    [g] = parse_goldens([(FILE, jsonl(obj))], DOCS)
    assert g.expect_refusal and g.relevant_doc_ids == () and dict(g.grades) == {}


def test_bom_crlf_and_blank_lines_are_accepted_and_lines_counted() -> None:
    a, b = golden(id="a"), golden(id="b")
    data = b"\xef\xbb\xbf" + json.dumps(a).encode() + b"\r\n\r\n   \r\n" + json.dumps(b).encode() + b"\r\n"
    found = parse_goldens([(FILE, data)], DOCS)
    assert [(g.id, g.source) for g in found] == [("a", f"{FILE}:1"), ("b", f"{FILE}:4")]


def test_missing_final_newline_is_fine() -> None:
    data = json.dumps(golden()).encode()
    assert [g.id for g in parse_goldens([(FILE, data)], DOCS)] == ["water-boil-altitude-01"]


def test_goldens_come_back_ordered_by_file_then_line() -> None:
    files = [
        ("goldens/b.jsonl", jsonl(golden(id="b1"), golden(id="b2"))),
        ("goldens/a.jsonl", jsonl(golden(id="a2-first-line"), golden(id="a1-second-line"))),
    ]
    assert [g.id for g in parse_goldens(files, DOCS)] == ["a2-first-line", "a1-second-line", "b1", "b2"]


# --- each rejection, with file and line ------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        (golden(tags=_DROP), "missing field 'tags'"),
        (golden(expectRefusal="false"), "expectRefusal must be true or false"),
        (golden(expectRefusal=0), "expectRefusal must be true or false"),
        (golden(id=""), "id must be a non-empty string"),
        (golden(id="   "), "id must be a non-empty string"),
        (golden(query=3), "query must be a non-empty string"),
        (golden(turns="hello"), "turns must be a list"),
        (golden(turns=[{"role": "system", "content": "x"}]), "turns[0].role must be 'user' or 'assistant'"),
        (golden(turns=[{"role": "user"}]), "turns[0] is missing 'content'"),
        (golden(turns=[{"role": "user", "content": 5}]), "turns[0].content must be a string"),
        (golden(turns=[{"role": "user", "content": "x", "name": "bob"}]), "turns[0] has unknown field 'name'"),
        (golden(turns=["hi"]), "turns[0] must be a {role, content} object"),
        (golden(relevantDocIds="water-boiling"), "relevantDocIds must be a list of strings"),
        (golden(mustInclude=[3]), "mustInclude[0] must be a string"),
        (golden(mustNotInclude=None), "mustNotInclude must be a list of strings"),
        (golden(tags=[]), "tags must list at least one tag"),
        (golden(tags=["ok", " "]), "tags[1] must not be blank"),
        (golden(mustInclud=["x"]), "unknown field 'mustInclud' (did you mean 'mustInclude'?)"),
        (golden(relevantDocIds=["water-boilng"]), "unknown document 'water-boilng' (did you mean 'water-boiling'?)"),
        (golden(relevantDocIds=["water-boiling", "water-boiling"]), "relevantDocIds lists 'water-boiling' twice"),
        (golden(expectRefusal=True, mustInclude=[]), "expectRefusal is true but relevantDocIds is not empty"),
        (golden(expectRefusal=True, relevantDocIds=[]), "expectRefusal is true but mustInclude is not empty"),
        (golden(relevantDocIds=[]), "expectRefusal is false but relevantDocIds is empty"),
        (golden(mustInclude=["(3|three minutes"]), "mustInclude[0] '(3|three minutes' does not compile: missing )"),
        (golden(mustNotInclude=["ok", "[z-a]"]), "mustNotInclude[1] '[z-a]' does not compile: bad character range"),
        (golden(mustInclude=[""]), "mustInclude[0] is an empty pattern"),
        (golden(mustInclude=["minutes?", "(3|three)?"]),
         "mustInclude[1] '(3|three)?' matches the empty string, so it matches every answer and always passes"),
        (golden(mustInclude=["x*"]), "mustInclude[0] 'x*' matches the empty string"),
        (golden(mustNotInclude=["a|"]), "mustNotInclude[0] 'a|' matches the empty string, so it matches every answer "
                                        "and always fails"),
        (golden(mustInclude=["(" * 5000 + "a" + ")" * 5000]), "does not compile: groups nested too deeply"),
        (golden(split="train"), "split must be 'validation' or 'test', got \"train\""),
        (golden(relevanceGrades={"water-boiling": 4}), "relevanceGrades['water-boiling'] must be an integer from 1"),
        (golden(relevanceGrades={"water-boiling": True}), "must be an integer from 1 to 3, got true"),
        (golden(relevanceGrades={"water-boiling": 2.0}), "must be an integer from 1 to 3"),
        (golden(relevanceGrades=["water-boiling"]), "relevanceGrades must be an object"),
        (golden(relevanceGrades={"bleach-dosing": 2}), "names 'bleach-dosing', which is not in relevantDocIds"),
    ],
)
def test_each_bad_field_is_one_issue_on_its_line(obj: dict[str, Any], fragment: str) -> None:
    data = jsonl(golden(id="fine-first-line")) + b"\n" + jsonl(obj)  # the bad golden sits on line 3
    [issue] = issues_of([(FILE, data)])
    assert (issue.file, issue.line) == (FILE, 3)
    assert fragment in issue.message


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (b'{"id": "x", "query": ', "invalid JSON"),
        (b"{'id': 'single-quoted'}", "invalid JSON"),
        (b"[1, 2, 3]", "expected a JSON object, got a list"),
        (b'"just a string"', "expected a JSON object, got a string"),
        (b"null", "expected a JSON object, got null"),
        (b'{"id": "a", "id": "b"}', "key 'id' appears twice"),
        (b'{"id": "caf\xe9"}', "not valid UTF-8 (byte 0xe9 at column 12)"),
        (b'{"id": "\\ud800"}', "lone UTF-16 surrogate"),
        (b"[" * 100_000, "nested too deeply"),
        (b"1" * 5000, "invalid JSON"),
    ],
)
def test_unreadable_lines_are_reported_with_their_line(line: bytes, fragment: str) -> None:
    issue = only_issue(line)
    assert (issue.file, issue.line) == (FILE, 1)
    assert fragment in issue.message


def test_duplicate_id_names_the_first_file_and_line() -> None:
    files = [
        ("goldens/b.jsonl", jsonl(golden(id="other"), golden(id="dup"))),
        ("goldens/a.jsonl", b"\n" + jsonl(golden(id="dup"))),
    ]
    [issue] = issues_of(files)
    assert (issue.file, issue.line) == ("goldens/b.jsonl", 2)
    assert "duplicate id 'dup' (first used at goldens/a.jsonl:2)" in issue.message


def test_duplicate_id_is_caught_even_when_the_first_copy_has_other_problems() -> None:
    data = jsonl(golden(id="dup", relevantDocIds=["nope"]), golden(id="dup"))
    found = issues_of([(FILE, data)])
    assert [(i.line, "duplicate" in i.message) for i in found] == [(1, False), (2, True)]


@pytest.mark.parametrize("data", [b"", b"\n\n", b"\xef\xbb\xbf", b"  \r\n\t\r\n"])
def test_file_with_no_questions_is_rejected(data: bytes) -> None:
    issue = only_issue(data)
    assert (issue.file, issue.line) == (FILE, None)
    assert "no questions" in issue.message


def test_no_golden_files_at_all_is_rejected() -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_goldens([], DOCS, source_dir="my/goldens")
    assert [(i.file, i.line) for i in caught.value.issues] == [("my/goldens", None)]


def test_every_problem_in_every_file_is_reported_in_one_pass() -> None:
    water = b"".join([
        jsonl(golden(id="ok-1")),
        b"not json\n",
        jsonl(golden(id="bad-regex", mustInclude=["("], relevantDocIds=["ghost"])),  # two problems, one line
        jsonl(golden(id="ok-2")),
        jsonl(golden(id="refuses", expectRefusal=True)),
    ])
    canning = jsonl(golden(id="ok-1"), golden(id="no-tags", tags=_DROP))
    found = issues_of([(FILE, water), ("goldens/canning.jsonl", canning), ("goldens/empty.jsonl", b"")])
    # canning.jsonl sorts first, so its ok-1 is the original and water.jsonl's is the duplicate
    assert [(i.file, i.line) for i in found] == [
        ("goldens/canning.jsonl", 2),  # missing tags
        ("goldens/empty.jsonl", None),  # no questions
        (FILE, 1),  # duplicate id
        (FILE, 2),  # invalid JSON
        (FILE, 3),  # unknown document
        (FILE, 3),  # regex
        (FILE, 5),  # refusal with documents
        (FILE, 5),  # refusal with mustInclude
    ]
    messages = "\n".join(str(i) for i in found)
    assert "goldens/water.jsonl:1: duplicate id 'ok-1' (first used at goldens/canning.jsonl:1)" in messages
    assert "goldens/water.jsonl:2: invalid JSON" in messages
    assert "goldens/canning.jsonl:2: missing field 'tags'" in messages
    assert "goldens/empty.jsonl: no questions" in messages


def test_unknown_documents_are_checked_against_the_given_ids() -> None:
    [issue] = issues_of([(FILE, jsonl(golden()))], known=set())
    assert "unknown document 'water-boiling'" in issue.message


# --- dataset hash -----------------------------------------------------------------------------


def test_hash_ignores_file_layout_order_and_formatting() -> None:
    a, b = golden(id="a"), golden(id="b", relevanceGrades={"water-boiling": 1})
    one = parse_goldens([("g/x.jsonl", jsonl(a, b))], DOCS)
    spaced = json.dumps(golden(id="a"), indent=None, separators=(" , ", " : ")).encode()
    two = parse_goldens([("g/y.jsonl", jsonl(b)), ("g/z.jsonl", spaced)], DOCS)
    assert goldens_hash(one) == goldens_hash(two)
    assert goldens_hash(one) == goldens_hash(list(reversed(one)))


@pytest.mark.parametrize(
    "change",
    [
        {"query": "How long should I boil water at altitude??"},
        {"mustNotInclude": ["distil"]},
        {"relevanceGrades": {"water-boiling": 2}},
        {"split": "test"},
        {"tags": ["single-hop"]},
    ],
)
def test_hash_changes_with_content(change: dict[str, Any]) -> None:
    before = parse_goldens([(FILE, jsonl(golden()))], DOCS)
    after = parse_goldens([(FILE, jsonl(golden(**change)))], DOCS)
    assert goldens_hash(before) != goldens_hash(after)


# --- select ------------------------------------------------------------------------------------


@pytest.fixture()
def three() -> list[Golden]:
    data = jsonl(
        golden(id="g1", tags=["numeric"], split="validation"),
        golden(id="g2", tags=["multi-hop", "numeric"], split="test"),
        golden(id="g3", tags=["multi-hop"]),
    )
    return parse_goldens([(FILE, data)], DOCS)


def test_select_filters_combine(three: list[Golden]) -> None:
    ids = lambda gs: [g.id for g in gs]  # noqa: E731
    assert ids(select(three)) == ["g1", "g2", "g3"]
    assert ids(select(three, tags=["multi-hop"])) == ["g2", "g3"]
    assert ids(select(three, tags=["numeric"], split="test")) == ["g2"]
    assert ids(select(three, ids={"g3", "g1"})) == ["g1", "g3"]
    assert ids(select(three, split="validation")) == ["g1"]
    assert ids(select(three, tags=["numeric", "multi-hop"], limit=2)) == ["g1", "g2"]


@pytest.mark.parametrize(
    "kwargs", [{"tags": ["numerc"]}, {"ids": ["g4"]}, {"split": "train"}, {"limit": 0}],
)
def test_select_rejects_unknown_or_impossible_selectors(three: list[Golden], kwargs: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        select(three, **kwargs)


def test_missing_split_warning_names_the_field_and_the_lines() -> None:
    from ragqual.core.goldens import missing_split_warning

    data = jsonl(golden(id="a-1", split="validation"), golden(id="b-1"), golden(id="c-1", split="test"))
    parsed = parse_goldens([(FILE, data)], DOCS)
    warning = missing_split_warning(parsed)
    assert warning is not None
    assert warning.startswith("1 of 3 questions have no `split` field") and "ragqual sweep" in warning
    assert f"{FILE}:2" in warning
    assert missing_split_warning([g for g in parsed if g.split]) is None


def test_select_by_a_split_no_golden_has_names_the_splits_present(three: list[Golden]) -> None:
    with pytest.raises(InputError, match=r"no golden has split 'dev'; splits present: test, validation"):
        select(three, split="dev")


def test_select_by_split_accepts_any_split_a_collection_brings(three: list[Golden]) -> None:
    from dataclasses import replace

    dev = replace(three[2], split="dev")  # a BEIR collection's split is its qrels file's name
    assert [g.id for g in select([three[0], dev], split="dev")] == ["g3"]
