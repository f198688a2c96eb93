"""Property tests for the golden parser: hostile bytes fail cleanly, valid goldens round-trip."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragqual.core.goldens import Golden, goldens_hash, parse_goldens
from ragqual.errors import ValidationFailed

DOCS = ("water-boiling", "bleach-dosing", "canning-pressure", "radio-bands")
FILE = "goldens/gen.jsonl"
FIELDS = ("id", "query", "turns", "relevantDocIds", "mustInclude", "mustNotInclude", "expectRefusal", "tags",
          "split", "relevanceGrades", "role", "content")

text = st.text(min_size=1, max_size=30).filter(lambda s: s.strip())
pattern = st.sampled_from([r"\b(3|three) minutes?", "distill", "[0-9]+ ?ml", "ppm", "boil(ing)?", "ß", "ÉTÉ"])
turn = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": st.text(max_size=30)})


@st.composite
def golden_objects(draw: st.DrawFn) -> dict[str, Any]:
    refusal = draw(st.booleans())
    docs = [] if refusal else draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=3, unique=True))
    obj: dict[str, Any] = {
        "id": draw(text),
        "query": draw(text),
        "turns": draw(st.lists(turn, max_size=3)),
        "relevantDocIds": docs,
        "mustInclude": [] if refusal else draw(st.lists(pattern, max_size=2)),
        "mustNotInclude": draw(st.lists(pattern, max_size=2)),
        "expectRefusal": refusal,
        "tags": draw(st.lists(text, min_size=1, max_size=3)),
    }
    if draw(st.booleans()):
        obj["split"] = draw(st.sampled_from(["validation", "test"]))
    graded_too: bool = draw(st.booleans())
    if docs and graded_too:
        graded = draw(st.lists(st.sampled_from(docs), unique=True))
        obj["relevanceGrades"] = {d: draw(st.integers(1, 3)) for d in graded}
    return obj


def parse_or_fail(data: bytes) -> list[Golden] | None:
    try:
        return parse_goldens([(FILE, data)], DOCS)
    except ValidationFailed as failed:
        assert failed.issues, "a ValidationFailed must carry at least one issue"
        assert all(i.file == FILE for i in failed.issues)
        return None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_parse_or_raise_validation_failed_only(data: bytes) -> None:
    parse_or_fail(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS + ("x",)), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_values, min_size=1, max_size=4))
def test_arbitrary_json_lines_parse_or_raise_validation_failed_only(values: list[Any]) -> None:
    parse_or_fail("\n".join(json.dumps(v) for v in values).encode())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(golden_objects(), st.lists(st.text(alphabet="()[]{}?*+|\\^$.-,:<>=!0123456789aAbpPNx ", max_size=12),
                                  min_size=1, max_size=3))
def test_any_pattern_text_compiles_or_is_reported(obj: dict[str, Any], patterns: list[str]) -> None:
    result = parse_or_fail(json.dumps({**obj, "mustNotInclude": patterns}).encode())
    if result is not None:
        assert list(result[0].must_not_include) == patterns


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(golden_objects(), st.sampled_from(["id", "query", "turns", "relevantDocIds", "expectRefusal", "tags"]),
       json_values)
def test_a_broken_field_is_reported_on_its_line(obj: dict[str, Any], key: str, value: Any) -> None:
    data = b"\n" + json.dumps({**obj, key: value}).encode() + b"\n"
    try:
        result = parse_goldens([(FILE, data)], DOCS)
    except ValidationFailed as failed:
        assert {i.line for i in failed.issues} == {2}
    else:  # the random value happened to be valid for that field
        assert [g.source for g in result] == [f"{FILE}:2"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(golden_objects(), min_size=1, max_size=6, unique_by=lambda o: o["id"]), st.booleans())
def test_valid_goldens_round_trip(objects: list[dict[str, Any]], crlf: bool) -> None:
    newline = "\r\n" if crlf else "\n"
    data = newline.join(json.dumps(o, ensure_ascii=False) for o in objects).encode()
    parsed = parse_goldens([(FILE, data)], DOCS)

    assert [g.id for g in parsed] == [o["id"] for o in objects]
    for g, o in zip(parsed, objects, strict=True):
        assert g.query == o["query"]
        assert [{"role": t.role, "content": t.content} for t in g.turns] == o["turns"]
        assert list(g.relevant_doc_ids) == o["relevantDocIds"]
        assert list(g.must_include) == o["mustInclude"] and list(g.must_not_include) == o["mustNotInclude"]
        assert g.expect_refusal is o["expectRefusal"] and list(g.tags) == o["tags"]
        assert g.split == o.get("split")
        assert dict(g.grades) == {d: o.get("relevanceGrades", {}).get(d, 1) for d in o["relevantDocIds"]}

    again = parse_goldens([(FILE, "\n".join(json.dumps(g.to_json_dict()) for g in parsed).encode())], DOCS)
    assert [(g.id, g.source) for g in again] == [(g.id, g.source) for g in parsed]
    assert again == parsed
    assert goldens_hash(again) == goldens_hash(parsed)
