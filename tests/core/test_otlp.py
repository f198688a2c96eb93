"""ragqual.core.otlp: a run's trials as OTLP/JSON, checked by opentelemetry-proto's own parser."""

import json

from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragqual.core.otlp import Evaluation, RetrievedDoc, TrialTrace, any_value, trace_request

END = 1_796_188_538_902_834_000


def _trial(trial_id: int, mode: str, **extra) -> TrialTrace:
    retrieved = (RetrievedDoc("cpr-adult", 0.71, "cpr-adult#0"), RetrievedDoc("burns", 0.11, "burns#2"))
    base = dict(run_id=7, trial_id=trial_id, case_id=f"case-{trial_id}", mode=mode, repeat_index=0, provider="ollama",
                model="qwen3:4b", end_unix_nano=END, latency_ms=250.5, options={"temperature": 0.0, "seed": 42,
                                                                               "num_predict": 256, "num_ctx": 4096},
                response_model="qwen3:4b", prompt_tokens=801, completion_tokens=40, system="Answer from the context.",
                messages=(("user", "Question: how fast?"),), answer="100 to 120 a minute.",
                retrieval_query="how fast?", retrieved=retrieved if mode == "e2e" else None,
                evaluations=(Evaluation("weighted-assertions", 0.5, "fail", '{"correctness": 0.0}'),
                             Evaluation("assertion:correctness", 0.0, "fail", "no pattern matched"),
                             Evaluation("contextRecall", 1.0)))
    base.update(extra)
    return TrialTrace(**base)


def _parse(request: dict) -> ExportTraceServiceRequest:
    """protobuf's JSON parser, strict about field names and value types. OTLP/JSON writes trace and span ids
    as hex where protobuf's mapping expects base64, so ids are compared with each other here, and their hex
    form is checked on the raw JSON (test_ids_are_deterministic_and_distinct_per_run_and_trial)."""
    return Parse(json.dumps(request), ExportTraceServiceRequest())


def _attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind)
    return out


def test_spans_parentage_and_attributes_parse_as_export_trace_service_request():
    request = trace_request([_trial(1, "e2e"), _trial(2, "oracle")], {"service.name": "ragqual"}, "0.1.0")
    spans = list(_parse(request).resource_spans[0].scope_spans[0].spans)
    assert [s.name for s in spans] == ["chat qwen3:4b", "retrieval", "chat qwen3:4b"]
    chat, retrieval, oracle = spans
    assert retrieval.parent_span_id == chat.span_id and retrieval.trace_id == chat.trace_id
    assert oracle.trace_id != chat.trace_id and not chat.parent_span_id
    assert chat.kind == Span.SPAN_KIND_CLIENT and retrieval.kind == Span.SPAN_KIND_INTERNAL
    assert chat.end_time_unix_nano - chat.start_time_unix_nano == 250_500_000
    attrs = _attrs(chat)
    assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "ollama"
    assert attrs["gen_ai.request.model"] == "qwen3:4b" and attrs["gen_ai.response.model"] == "qwen3:4b"
    assert attrs["gen_ai.request.temperature"] == 0.0 and attrs["gen_ai.request.seed"] == 42
    assert attrs["gen_ai.request.max_tokens"] == 256 and "gen_ai.request.num_ctx" not in attrs
    assert attrs["gen_ai.usage.input_tokens"] == 801 and attrs["gen_ai.usage.output_tokens"] == 40
    docs = _attrs(retrieval)["gen_ai.retrieval.documents"].values
    assert [{kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in d.kvlist_value.values} for d in docs] == [
        {"id": "cpr-adult", "score": 0.71, "ragqual.chunk_id": "cpr-adult#0"},
        {"id": "burns", "score": 0.11, "ragqual.chunk_id": "burns#2"}]


def test_every_score_is_an_evaluation_event_on_its_chat_span():
    chat = _parse(trace_request([_trial(1, "e2e")], {}, "0.1.0")).resource_spans[0].scope_spans[0].spans[0]
    events = [(e.name, _attrs(e)) for e in chat.events]
    assert [name for name, _ in events] == ["gen_ai.evaluation.result"] * 3
    assert events[0][1] == {"gen_ai.evaluation.name": "weighted-assertions", "gen_ai.evaluation.score.value": 0.5,
                            "gen_ai.evaluation.score.label": "fail",
                            "gen_ai.evaluation.explanation": '{"correctness": 0.0}'}
    assert events[2][1] == {"gen_ai.evaluation.name": "contextRecall", "gen_ai.evaluation.score.value": 1.0}


def test_content_only_when_asked():
    content_keys = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                    "gen_ai.retrieval.query.text"}
    bare = json.dumps(trace_request([_trial(1, "e2e")], {}, "0.1.0"))
    assert not any(key in bare for key in content_keys) and "100 to 120" not in bare and "how fast?" not in bare
    full = _parse(trace_request([_trial(1, "e2e")], {}, "0.1.0", with_content=True))
    chat, retrieval = full.resource_spans[0].scope_spans[0].spans
    attrs = _attrs(chat)
    assert json.loads(attrs["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "100 to 120 a minute."}], "finish_reason": "stop"}]
    assert json.loads(attrs["gen_ai.input.messages"])[0]["parts"][0]["content"] == "Question: how fast?"
    assert _attrs(retrieval)["gen_ai.retrieval.query.text"] == "how fast?"


def test_ids_are_deterministic_and_distinct_per_run_and_trial():
    one = trace_request([_trial(1, "e2e")], {}, "0.1.0")
    assert json.dumps(one) == json.dumps(trace_request([_trial(1, "e2e")], {}, "0.1.0"))
    other_run = trace_request([_trial(1, "e2e", run_id=8)], {}, "0.1.0")
    span = one["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
    assert int(span["traceId"], 16) and int(span["spanId"], 16) and span["traceId"] == span["traceId"].lower()
    assert span["traceId"] != other_run["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]


def test_a_trial_error_sets_the_span_status():
    chat = _parse(trace_request([_trial(1, "oracle", error="model call failed: timeout", answer=None)], {}, "0.1.0"))
    span = chat.resource_spans[0].scope_spans[0].spans[0]
    assert span.status.code == 2 and span.status.message == "model call failed: timeout"
    assert _attrs(span)["error.type"] == "ragqual.trial_error"


def test_any_value_types():
    assert any_value(True) == {"boolValue": True}
    assert any_value(3) == {"intValue": "3"}
    assert any_value(0.5) == {"doubleValue": 0.5}
    assert any_value(["a", 1]) == {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}
    assert any_value({"k": None, "j": "x"}) == {"kvlistValue": {"values": [{"key": "j", "value": {"stringValue": "x"}}]}}
