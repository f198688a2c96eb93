"""OTLP/JSON traces of a production RAG system -> `answers:` rows and draft goldens. Pure: bytes in.

Read: one `ExportTraceServiceRequest` object, or JSON lines of them (what the collector's file
exporter writes). A chat span is one with `gen_ai.operation.name` = chat / text_completion /
generate_content (OpenTelemetry GenAI conventions), or `openinference.span.kind` = LLM
(OpenInference); a retrieval span has `gen_ai.operation.name` = retrieval, or
`openinference.span.kind` = RETRIEVER. Each chat span with an answer becomes:

- one answers row (SPEC: id, answer, context, model, latency_ms, prompt_tokens, completion_tokens,
  mode) whose answer is the assistant's output message;
- one draft golden: the question (the retrieval query, else the last user message), the retrieved
  documents as candidate `relevantDocIds`, `"draft": true`. The goldens loader refuses a draft
  until a person has reviewed it and removed the flag (ragqual.core.goldens).

The id is `ragqual.case.id` when the span has one (a trace ragqual exported), else
`otel-<first 16 hex of the trace id>-<span id>`: stable for the same trace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ragqual.errors import InputError

CHAT_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_HEX = re.compile(r"[0-9a-fA-F]+")
_OI_DOC = re.compile(r"retrieval\.documents\.(\d+)\.document\.(id|score|content)")
_OI_MSG = re.compile(r"llm\.(input|output)_messages\.(\d+)\.message\.(role|content)")
DRAFT_TAG = "from-traces"


@dataclass
class Imported:
    answers: list[dict[str, Any]] = field(default_factory=list)
    drafts: list[dict[str, Any]] = field(default_factory=list)
    spans: int = 0
    skipped: list[str] = field(default_factory=list)  # why a chat span gave no row


@dataclass(frozen=True)
class Span:
    where: str  # "FILE:LINE span ID" for messages
    trace_id: str
    span_id: str
    parent_id: str
    start: int
    end: int
    attrs: dict[str, Any]


# -- AnyValue --------------------------------------------------------------------------------------

def decode_value(value: Any) -> Any:
    """An OTLP/JSON AnyValue as a Python value (kvlist -> dict, array -> list)."""
    if not isinstance(value, dict) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "intValue":
        return int(inner)
    if kind == "doubleValue":
        return float(inner)
    if kind == "arrayValue":
        return [decode_value(v) for v in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return decode_attributes((inner or {}).get("values", []))
    return inner  # stringValue, boolValue, bytesValue (base64 text)


def decode_attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        raise ValueError("attributes is not a list")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ValueError("an attribute without a string key")
        out[item["key"]] = decode_value(item.get("value"))
    return out


# -- reading the file -----------------------------------------------------------------------------

def _requests(name: str, text: str) -> Iterator[tuple[str, Any]]:
    """(where, request object): the whole file as one object (messages then name the span, not a line),
    or one object per non-blank line (`FILE:LINE`)."""
    try:
        yield name, json.loads(text)
        return
    except json.JSONDecodeError as whole:
        if whole.msg != "Extra data":
            raise InputError(f"{name}:{whole.lineno}: invalid JSON: {whole.msg} at column {whole.colno}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"{name}:{number}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{name}:{number}: invalid JSON: {exc.msg} at column {exc.colno}") from None


def _hex(value: Any, size: int) -> bool:
    return isinstance(value, str) and len(value) == size and _HEX.fullmatch(value) is not None


def _span(place: str, index: int, raw: Any) -> Span:
    if not isinstance(raw, dict):
        raise InputError(f"{place}: span #{index} is not an object")
    sid = raw.get("spanId")
    where = f"{place}: span {sid}" if isinstance(sid, str) and sid else f"{place}: span #{index}"
    if not _hex(sid, 16):
        raise InputError(f"{where}: spanId must be 16 hex digits (OTLP/JSON), got {sid!r}")
    if not _hex(raw.get("traceId"), 32):
        raise InputError(f"{where}: traceId must be 32 hex digits (OTLP/JSON), got {raw.get('traceId')!r}")
    parent = raw.get("parentSpanId") or ""
    if parent and not _hex(parent, 16):
        raise InputError(f"{where}: parentSpanId must be 16 hex digits, got {parent!r}")
    try:
        start, end = int(raw.get("startTimeUnixNano") or 0), int(raw.get("endTimeUnixNano") or 0)
        attrs = decode_attributes(raw.get("attributes", []))
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: {exc}") from None
    return Span(where, str(raw["traceId"]).lower(), str(sid).lower(), parent.lower(), start, end, attrs)


def read_spans(name: str, data: bytes) -> list[Span]:
    """Every span of the file, checked; bad input names the file, the line and the span."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise InputError(f"{name}: empty file: expected OTLP/JSON traces (an object with resourceSpans)")
    spans: list[Span] = []
    for place, request in _requests(name, text):
        if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
            raise InputError(f"{place}: not OTLP/JSON traces: expected an object with a resourceSpans list")
        for resource in request["resourceSpans"]:
            for scope in (resource or {}).get("scopeSpans") or []:
                for raw in (scope or {}).get("spans") or []:
                    spans.append(_span(place, len(spans) + 1, raw))
    return spans


# -- what a span says ------------------------------------------------------------------------------

def _kind(span: Span) -> str | None:
    op = span.attrs.get("gen_ai.operation.name")
    oi = str(span.attrs.get("openinference.span.kind") or "").upper()
    if op in CHAT_OPERATIONS or oi == "LLM":
        return "chat"
    if op == "retrieval" or oi == "RETRIEVER":
        return "retrieval"
    return None


def _json_attr(span: Span, key: str) -> Any:
    value = span.attrs.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise InputError(f"{span.where}: {key} is not JSON") from None
    return value


def _text_of(message: Any) -> str | None:
    """The text of a GenAI message ({role, parts: [{type: text, content}]}) or a {role, content} one."""
    if not isinstance(message, dict):
        return None
    if isinstance(message.get("content"), str):
        return str(message["content"])
    texts = [str(p["content"]) for p in message.get("parts") or []
             if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)]
    return "".join(texts) if texts else None


def _messages(span: Span, direction: str) -> list[tuple[str, str]]:
    """(role, text) of the span's input or output messages, GenAI or OpenInference attributes."""
    value = _json_attr(span, f"gen_ai.{direction}.messages")
    if value is not None:
        if not isinstance(value, list):
            raise InputError(f"{span.where}: gen_ai.{direction}.messages is not a list of messages")
        return [(str(m.get("role", "")), t) for m in value if (t := _text_of(m)) is not None]
    flat: dict[int, dict[str, str]] = {}
    for key, v in span.attrs.items():
        m = _OI_MSG.fullmatch(key)
        if m and m.group(1) == direction:
            flat.setdefault(int(m.group(2)), {})[m.group(3)] = str(v)
    return [(m.get("role", ""), m["content"]) for _, m in sorted(flat.items()) if "content" in m]


def documents(span: Span) -> list[dict[str, Any]]:
    """[{id, score?, content?}] from gen_ai.retrieval.documents or OpenInference's flattened keys."""
    value = _json_attr(span, "gen_ai.retrieval.documents")
    if value is not None:
        if not isinstance(value, list) or not all(isinstance(d, dict) and isinstance(d.get("id"), str) for d in value):
            raise InputError(f"{span.where}: gen_ai.retrieval.documents must be a list of objects with a string id")
        return value
    flat: dict[int, dict[str, Any]] = {}
    for key, v in span.attrs.items():
        m = _OI_DOC.fullmatch(key)
        if m:
            flat.setdefault(int(m.group(1)), {})[m.group(2)] = v
    return [d for _, d in sorted(flat.items()) if isinstance(d.get("id"), str)]


def _query(span: Span | None) -> str | None:
    if span is None:
        return None
    value = span.attrs.get("gen_ai.retrieval.query.text") or span.attrs.get("input.value")
    return value if isinstance(value, str) and value.strip() else None


def _retrieval_for(chat: Span, retrievals: list[Span]) -> Span | None:
    """The chat span's retrieval: its child, else the last one of its trace started before it."""
    same = [r for r in retrievals if r.trace_id == chat.trace_id]
    children = [r for r in same if r.parent_id == chat.span_id]
    if children:
        return children[0]
    before = [r for r in same if r.start <= chat.start] or same
    return before[-1] if before else None


def _int(span: Span, *keys: str) -> int | None:
    for key in keys:
        value = span.attrs.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return None


def _answer_row(chat: Span, row_id: str, answer: str, docs: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"id": row_id, "answer": answer}
    context = [{"doc_id": d["id"], "text": d["content"]} for d in docs if isinstance(d.get("content"), str)]
    if context:
        row["context"] = context
    model = (chat.attrs.get("gen_ai.response.model") or chat.attrs.get("gen_ai.request.model")
             or chat.attrs.get("llm.model_name"))
    if isinstance(model, str):
        row["model"] = model
    if chat.end >= chat.start > 0:
        row["latency_ms"] = (chat.end - chat.start) / 1_000_000
    row["prompt_tokens"] = _int(chat, "gen_ai.usage.input_tokens", "llm.token_count.prompt")
    row["completion_tokens"] = _int(chat, "gen_ai.usage.output_tokens", "llm.token_count.completion")
    mode = chat.attrs.get("ragqual.trial.mode")
    if isinstance(mode, str) and mode in ("oracle", "noretrieval"):
        row["mode"] = mode
    return {k: v for k, v in row.items() if v is not None}


def draft_golden(row_id: str, question: str, doc_ids: list[str]) -> dict[str, Any]:
    return {"id": row_id, "query": question, "turns": [{"role": "user", "content": question}],
            "relevantDocIds": doc_ids, "mustInclude": [], "mustNotInclude": [], "expectRefusal": False,
            "tags": [DRAFT_TAG], "draft": True}


def parse_trace_file(name: str, data: bytes) -> Imported:
    spans = read_spans(name, data)
    out = Imported(spans=len(spans))
    retrievals = [s for s in spans if _kind(s) == "retrieval"]
    seen: set[tuple[str, str]] = set()
    drafts: dict[str, tuple[bool, dict[str, Any]]] = {}
    for chat in (s for s in spans if _kind(s) == "chat"):
        outputs = [text for role, text in _messages(chat, "output") if role in ("assistant", "") and text.strip()]
        if not outputs:
            out.skipped.append(f"{chat.where}: no output message (was content capture on?)")
            continue
        case = chat.attrs.get("ragqual.case.id")
        row_id = case if isinstance(case, str) and case else f"otel-{chat.trace_id[:16]}-{chat.span_id}"
        retrieval = _retrieval_for(chat, retrievals)
        docs = documents(retrieval) if retrieval is not None else []
        row = _answer_row(chat, row_id, outputs[-1], docs)
        key = (row_id, str(row.get("mode", "e2e")))
        if key in seen:
            out.skipped.append(f"{chat.where}: a second answer for {row_id} ({key[1]}): kept the first")
            continue
        seen.add(key)
        out.answers.append(row)
        users = [text for role, text in _messages(chat, "input") if role == "user"]
        question = _query(retrieval) or (users[-1] if users else None)
        # one draft per id, from a span that retrieved when there is one (its query and documents)
        if question and (row_id not in drafts or (retrieval is not None and not drafts[row_id][0])):
            ids = list(dict.fromkeys(str(d["id"]) for d in docs))
            drafts[row_id] = (retrieval is not None, draft_golden(row_id, question, ids))
    out.drafts = [draft for _, draft in drafts.values()]
    if not out.answers:
        raise InputError(f"{name}: no chat span with an output message among {len(spans)} span(s): "
                         "expected gen_ai.operation.name=chat with gen_ai.output.messages (or OpenInference LLM spans)")
    return out
