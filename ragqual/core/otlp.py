"""A ragqual run as OpenTelemetry traces in OTLP/JSON: pure mapping, no I/O.

Conventions: OpenTelemetry GenAI semantic conventions v0.1.0 (the first release of
open-telemetry/semantic-conventions-genai, built on semantic-conventions v1.45.0), all of it at
status "Development". OTLP/JSON as the `ExportTraceServiceRequest` of opentelemetry-proto v1
(trace and span ids as lowercase hex, times as unix nanoseconds in strings, 64-bit ints as strings).

One trace per trial:

    chat {model}                      span kind CLIENT, gen_ai.operation.name = chat
    ├── event gen_ai.evaluation.result    one per score: trial score, each assertion, each metric
    └── retrieval                     (e2e trials) span kind INTERNAL, gen_ai.operation.name = retrieval,
                                      gen_ai.retrieval.documents = [{id, score}, ...]

Ids are sha256 of the run and trial ids, so exporting the same run twice gives the same bytes.
Content (system instructions, input and output messages, the retrieval query) is written only
when asked: the conventions make it opt-in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragqual.core.hashing import sha256_hex

SEMCONV_VERSION = "0.1.0"  # open-telemetry/semantic-conventions-genai
SCHEMA_URL = "https://opentelemetry.io/schemas/1.45.0"
SCOPE_NAME = "ragqual"
EVALUATION_EVENT = "gen_ai.evaluation.result"
SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_ERROR = 2

# ragqual / backend option name -> GenAI request attribute (value type follows the conventions)
REQUEST_OPTIONS: dict[str, tuple[str, type]] = {
    "temperature": ("gen_ai.request.temperature", float),
    "seed": ("gen_ai.request.seed", int),
    "top_p": ("gen_ai.request.top_p", float),
    "top_k": ("gen_ai.request.top_k", int),
    "max_tokens": ("gen_ai.request.max_tokens", int),
    "num_predict": ("gen_ai.request.max_tokens", int),
    "presence_penalty": ("gen_ai.request.presence_penalty", float),
    "frequency_penalty": ("gen_ai.request.frequency_penalty", float),
}


@dataclass(frozen=True)
class Evaluation:
    """One score as a `gen_ai.evaluation.result` event."""

    name: str
    value: float | None
    label: str | None = None
    explanation: str | None = None


@dataclass(frozen=True)
class RetrievedDoc:
    doc_id: str
    score: float | None
    chunk_id: str | None = None


@dataclass(frozen=True)
class TrialTrace:
    """What one trial contributes to the trace file, read from the history by the app layer."""

    run_id: int
    trial_id: int
    case_id: str
    mode: str
    repeat_index: int
    provider: str
    model: str
    end_unix_nano: int
    latency_ms: float | None
    options: dict[str, Any] = field(default_factory=dict)
    response_model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    system: str | None = None
    messages: tuple[tuple[str, str], ...] = ()  # (role, content) as sent
    answer: str | None = None
    retrieval_query: str | None = None
    retrieved: tuple[RetrievedDoc, ...] | None = None  # None: the trial did not retrieve
    evaluations: tuple[Evaluation, ...] = ()


# -- typed AnyValue ------------------------------------------------------------------------------

def any_value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON AnyValue (bool before int: bool is an int in Python)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": attributes(value)}}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Key/value list in the given order; None values are left out."""
    return [{"key": k, "value": any_value(v)} for k, v in values.items() if v is not None]


# -- ids and times -------------------------------------------------------------------------------

def trace_id(run_id: int, trial_id: int) -> str:
    return sha256_hex(f"ragqual/run/{run_id}/trial/{trial_id}")[:32]


def span_id(run_id: int, trial_id: int, what: str) -> str:
    return sha256_hex(f"ragqual/run/{run_id}/trial/{trial_id}/{what}")[:16]


def _start(t: TrialTrace) -> int:
    return t.end_unix_nano - round((t.latency_ms or 0.0) * 1_000_000)


# -- spans ---------------------------------------------------------------------------------------

def _text_messages(messages: Sequence[tuple[str, str]]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": content}]}
                       for role, content in messages], ensure_ascii=False)


def request_attributes(options: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in sorted(options.items()):
        known = REQUEST_OPTIONS.get(name)
        if known is None or value is None or isinstance(value, bool):
            continue
        key, kind = known
        try:
            out[key] = kind(value)
        except (TypeError, ValueError):
            continue
    return out


def chat_attributes(t: TrialTrace, with_content: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": t.provider,
        "gen_ai.system": t.provider,  # the name before v1.37, still read by some back ends
        "gen_ai.request.model": t.model,
        **request_attributes(t.options),
        "gen_ai.response.model": t.response_model or t.model,
        "gen_ai.usage.input_tokens": t.prompt_tokens,
        "gen_ai.usage.output_tokens": t.completion_tokens,
        "error.type": "ragqual.trial_error" if t.error else None,
        "ragqual.run.id": t.run_id,
        "ragqual.trial.id": t.trial_id,
        "ragqual.case.id": t.case_id,
        "ragqual.trial.mode": t.mode,
        "ragqual.trial.repeat": t.repeat_index,
    }
    if with_content:
        if t.system:
            attrs["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": t.system}],
                                                             ensure_ascii=False)
        attrs["gen_ai.input.messages"] = _text_messages(t.messages)
        if t.answer is not None:
            attrs["gen_ai.output.messages"] = json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": t.answer}], "finish_reason": "stop"}],
                ensure_ascii=False)
    return attrs


def evaluation_event(e: Evaluation, time_unix_nano: int) -> dict[str, Any]:
    return {
        "timeUnixNano": str(time_unix_nano),
        "name": EVALUATION_EVENT,
        "attributes": attributes({
            "gen_ai.evaluation.name": e.name,
            "gen_ai.evaluation.score.value": None if e.value is None else float(e.value),
            "gen_ai.evaluation.score.label": e.label,
            "gen_ai.evaluation.explanation": e.explanation,
        }),
    }


def chat_span(t: TrialTrace, with_content: bool) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace_id(t.run_id, t.trial_id),
        "spanId": span_id(t.run_id, t.trial_id, "chat"),
        "name": f"chat {t.model}",
        "kind": SPAN_KIND_CLIENT,
        "startTimeUnixNano": str(_start(t)),
        "endTimeUnixNano": str(t.end_unix_nano),
        "attributes": attributes(chat_attributes(t, with_content)),
        "events": [evaluation_event(e, t.end_unix_nano) for e in t.evaluations],
        "status": {"code": STATUS_ERROR, "message": t.error} if t.error else {},
    }
    return span


def retrieval_span(t: TrialTrace, with_content: bool) -> dict[str, Any]:
    docs = [{"id": d.doc_id, "score": d.score, "ragqual.chunk_id": d.chunk_id} for d in t.retrieved or ()]
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.retrieval.top_k": len(docs),
        "gen_ai.retrieval.documents": docs,
        "gen_ai.retrieval.query.text": t.retrieval_query if with_content else None,
        "ragqual.trial.id": t.trial_id,
    }
    start = _start(t)
    return {
        "traceId": trace_id(t.run_id, t.trial_id),
        "spanId": span_id(t.run_id, t.trial_id, "retrieval"),
        "parentSpanId": span_id(t.run_id, t.trial_id, "chat"),
        "name": "retrieval",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start),
        "attributes": attributes(attrs),
        "status": {},
    }


def trace_request(trials: Sequence[TrialTrace], resource: dict[str, Any], version: str,
                  with_content: bool = False) -> dict[str, Any]:
    """The whole file: one ExportTraceServiceRequest with every trial's spans, in trial order."""
    spans: list[dict[str, Any]] = []
    for t in trials:
        spans.append(chat_span(t, with_content))
        if t.retrieved is not None:
            spans.append(retrieval_span(t, with_content))
    return {"resourceSpans": [{
        "resource": {"attributes": attributes(resource)},
        "scopeSpans": [{"scope": {"name": SCOPE_NAME, "version": version}, "spans": spans,
                        "schemaUrl": SCHEMA_URL}],
        "schemaUrl": SCHEMA_URL,
    }]}
