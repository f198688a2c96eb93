"""ragqual.core.otlp_in: production traces (hand-written, tests/data/otel/) -> answers rows and draft goldens."""

import json
from pathlib import Path

import pytest

from ragqual.core.goldens import parse_goldens
from ragqual.core.otlp_in import parse_trace_file
from ragqual.errors import InputError, ValidationFailed

DATA = Path(__file__).resolve().parents[1] / "data" / "otel"


def _parse(name: str):
    return parse_trace_file(name, (DATA / name).read_bytes())


def test_genai_traces_give_answers_and_drafts():
    got = _parse("production_rag_traces.json")
    assert got.spans == 7
    assert got.answers == [
        {"id": "otel-4bf92f3577b34da6-2f3e4d5c6b7a8990",
         "answer": "At 3,000 m, keep the water at a rolling boil for 3 minutes.",
         "context": [{"doc_id": "water-boiling",
                      "text": "Bring water to a rolling boil for 1 minute; above 2,000 m (6,500 ft) boil for 3 minutes."},
                     {"doc_id": "water-filters", "text": "A filter removes protozoa and bacteria but not viruses."},
                     {"doc_id": "water-boiling", "text": "Let boiled water cool naturally; do not add ice."}],
         "model": "gpt-4o-mini-2024-07-18", "latency_ms": 1802.0, "prompt_tokens": 412, "completion_tokens": 38},
        {"id": "otel-5c1e6b0a9d2f4e3b-c3d4e5f60718293a",
         "answer": "Scrape the stinger out sideways, wash the spot and cool it; watch for swelling of the face or "
                   "trouble breathing.",
         "model": "gpt-4o-mini", "latency_ms": 1118.5, "prompt_tokens": 301, "completion_tokens": 52},
    ]
    assert [(d["id"], d["query"], d["relevantDocIds"], d["draft"]) for d in got.drafts] == [
        ("otel-4bf92f3577b34da6-2f3e4d5c6b7a8990", "How long should I boil water at 3000 m to make it safe?",
         ["water-boiling", "water-filters"], True),
        ("otel-5c1e6b0a9d2f4e3b-c3d4e5f60718293a", "what do I do for a bee sting", ["stings-bites", "allergic-reactions"],
         True)]
    # the third chat span recorded no content: named, not guessed
    assert got.skipped == ["production_rag_traces.json: span d4e5f60718293a4b: no output message (was content capture on?)"]


def test_openinference_json_lines():
    got = _parse("openinference_traces.jsonl")
    assert got.answers == [{"id": "otel-7e3a8d2c1f0b4a5e-f60718293a4b5c6d",
                            "answer": "No: treat it first, even when it looks clear.",
                            "context": [{"doc_id": "water-filters", "text": "Treat all surface water, even clear glacier melt."}],
                            "model": "llama3.1:8b", "latency_ms": 700.0, "prompt_tokens": 210, "completion_tokens": 31}]
    assert got.drafts[0]["query"] == "Is it safe to drink from a glacier stream?"
    assert got.drafts[0]["relevantDocIds"] == ["water-filters", "water-boiling"]


def test_ids_are_stable():
    assert _parse("production_rag_traces.json").answers == _parse("production_rag_traces.json").answers


@pytest.mark.parametrize("text, message", [
    ('{"resourceSpans": [\n  {"scopeSpans": [}\n]}', "t.json:2: invalid JSON"),
    ('{"resourceSpans": []}\n{"resourceSpans": [\n', "t.json:2: invalid JSON"),
    ('{"spans": []}', "t.json: not OTLP/JSON traces"),
    ('{"resourceSpans": []}\n{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", '
     '"spanId": "00f067aa0ba9"}]}]}]}', "t.json:2: span 00f067aa0ba9: spanId must be 16 hex digits"),
    ('', "t.json: empty file"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", '
     '"spanId": "xyz"}]}]}]}', "t.json: span xyz: spanId must be 16 hex digits"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf9", "spanId": "00f067aa0ba902b7"}]}]}]}',
     "t.json: span 00f067aa0ba902b7: traceId must be 32 hex digits"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", '
     '"spanId": "00f067aa0ba902b7", "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},'
     '{"key": "gen_ai.output.messages", "value": {"stringValue": "[{oops"}}]}]}]}]}',
     "t.json: span 00f067aa0ba902b7: gen_ai.output.messages is not JSON"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", '
     '"spanId": "00f067aa0ba902b7"}]}]}]}', "t.json: no chat span with an output message among 1 span(s)"),
])
def test_bad_input_names_file_and_line_or_span(text, message):
    with pytest.raises(InputError) as caught:
        parse_trace_file("t.json", text.encode())
    assert str(caught.value).startswith(message), str(caught.value)


def test_a_draft_golden_is_refused_by_the_goldens_loader_until_reviewed():
    draft = _parse("production_rag_traces.json").drafts[0]
    known = frozenset({"water-boiling", "water-filters"})
    line = json.dumps(draft).encode() + b"\n"
    with pytest.raises(ValidationFailed) as caught:
        parse_goldens([("drafts.jsonl", line)], known)
    assert 'is a draft ("draft": true' in str(caught.value) and "drafts.jsonl:1" in str(caught.value)
    reviewed = {k: v for k, v in draft.items() if k != "draft"}
    assert [g.id for g in parse_goldens([("drafts.jsonl", json.dumps(reviewed).encode())], known)] == [draft["id"]]
