"""The `answers:PATH` model: answers produced elsewhere, replayed from a JSONL file.

A production system's outputs can then be scored, labelled and judged like any run. One object
per line (blank lines skipped):

    id                 the golden (case) id, required
    answer             the answer text the system gave, required
    context            optional: a list of strings, or of {"doc_id": str, "text": str} objects
                       (the chunks the system gave its model)
    model              optional: the producing model's name
    latency_ms         optional number; prompt_tokens, completion_tokens optional ints
    mode               optional: e2e (default) | oracle | noretrieval

A bad line (not JSON, a missing or blank id or answer, a wrong type) is refused naming the file
and the line; an id given twice for the same mode is refused naming both lines; an id that is
not a case of the run is refused (`check_ids`) before anything is recorded. A case with no
answer in the file is that trial's error ("no answer for <id> in <file>"), never a crash.

The model calls nothing: `chat` refuses, and the trial loop asks `lookup` instead (the subject's
`replay_one`). Its digest is the file's sha256, so two different files never look alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragqual.core.hashing import sha256_hex
from ragqual.errors import InputError, ModelCallFailed
from ragqual.vocab import ChatRequest, ChatResponse

MODES = ("oracle", "e2e", "noretrieval")
_INTS = ("prompt_tokens", "completion_tokens")


@dataclass(frozen=True)
class ContextChunk:
    text: str
    doc_id: str | None = None


@dataclass(frozen=True)
class AnswerEntry:
    """One line of an answers file."""

    id: str
    answer: str
    line: int
    mode: str = "e2e"
    context: tuple[ContextChunk, ...] | None = None
    model: str | None = None
    latency_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class AnswersFile:
    path: str  # as given
    sha256: str
    entries: dict[tuple[str, str], AnswerEntry]  # (mode, id) -> entry

    def provenance(self, entry: AnswerEntry) -> dict[str, Any]:
        """Where a trial's answer came from, as its raw output records it."""
        out: dict[str, Any] = {"source": "answers", "file": self.path, "sha256": self.sha256, "line": entry.line}
        if entry.model is not None:
            out["model"] = entry.model
        return out


def _fail(path: str, line: int, why: str) -> InputError:
    return InputError(f"{path}:{line}: {why}")


def _context(path: str, line: int, value: Any) -> tuple[ContextChunk, ...]:
    if not isinstance(value, list):
        raise _fail(path, line, "context must be a list of strings or of {doc_id, text} objects")
    chunks = []
    for item in value:
        if isinstance(item, str):
            chunks.append(ContextChunk(item))
        elif (isinstance(item, dict) and isinstance(item.get("text"), str)
              and isinstance(item.get("doc_id"), str) and item["doc_id"].strip()):
            chunks.append(ContextChunk(item["text"], item["doc_id"]))
        else:
            raise _fail(path, line, "context must be a list of strings or of {doc_id, text} objects")
    return tuple(chunks)


def _number(path: str, line: int, obj: dict[str, Any], key: str, whole: bool) -> Any:
    value = obj.get(key)
    if value is None:
        return None
    ok = isinstance(value, int) if whole else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value < 0:
        raise _fail(path, line, f"{key} must be a {'whole ' if whole else ''}number of 0 or more, got {value!r}")
    return value


def parse_line(path: str, line: int, text: str) -> AnswerEntry:
    """One non-blank line as an entry; InputError naming file and line when it is not one."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise _fail(path, line, f"not JSON ({err.msg})") from None
    if not isinstance(obj, dict):
        raise _fail(path, line, "each line must be a JSON object")
    for key in ("id", "answer"):
        if not isinstance(obj.get(key), str) or not obj[key].strip():
            raise _fail(path, line, f"'{key}' must be a non-blank string")
    mode = obj.get("mode", "e2e")
    if mode not in MODES:
        raise _fail(path, line, f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    model = obj.get("model")
    if model is not None and not isinstance(model, str):
        raise _fail(path, line, "model must be a string")
    context = None if obj.get("context") is None else _context(path, line, obj["context"])
    return AnswerEntry(id=obj["id"].strip(), answer=obj["answer"], line=line, mode=mode, context=context,
                       model=model, latency_ms=_number(path, line, obj, "latency_ms", False),
                       prompt_tokens=_number(path, line, obj, "prompt_tokens", True),
                       completion_tokens=_number(path, line, obj, "completion_tokens", True))


def parse_answers(path: str, text: str) -> dict[tuple[str, str], AnswerEntry]:
    entries: dict[tuple[str, str], AnswerEntry] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        entry = parse_line(path, number, raw)
        first = entries.get((entry.mode, entry.id))
        if first is not None:
            raise _fail(path, number, f"id {entry.id!r} ({entry.mode}) was already given on line {first.line}")
        entries[(entry.mode, entry.id)] = entry
    return entries


def load_answers(path: str) -> AnswersFile:
    """Read and check an answers file (InputError, exit 2, when unreadable or malformed)."""
    if not path:
        raise InputError("an answers model URI needs a file: answers:<path.jsonl>")
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the answers file {path}: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    return AnswersFile(path=path, sha256=sha256_hex(data), entries=parse_answers(path, text))


def check_ids(answers: AnswersFile, case_ids: Iterable[str]) -> None:
    """Refuse an id that is not one of `case_ids`, naming its line (before a run is recorded)."""
    known = set(case_ids)
    for entry in sorted(answers.entries.values(), key=lambda e: e.line):
        if entry.id not in known:
            raise _fail(answers.path, entry.line, f"id {entry.id!r} is not a golden of this project")


class AnswersModel:
    """A `ChatModel` that calls nothing: each trial's answer is looked up by case id and mode."""

    provider = "answers"

    def __init__(self, path: str):
        self.answers = load_answers(path)
        self.name = path

    def digest(self) -> str:
        return f"sha256:{self.answers.sha256}"

    def warm_up(self) -> None:
        """Nothing to load."""

    def lookup(self, case_id: str, mode: str) -> AnswerEntry:
        """The file's answer for one trial; ModelCallFailed (a recorded trial error) when it has none."""
        entry = self.answers.entries.get((mode or "e2e", case_id))
        if entry is None:
            where = "" if mode in ("e2e", "") else f" ({mode})"
            raise ModelCallFailed(f"no answer for {case_id}{where} in {self.answers.path}", reason="no_answer")
        return entry

    def chat(self, request: ChatRequest) -> ChatResponse:
        raise ModelCallFailed(f"answers:{self.name} replays a file and cannot answer a new request "
                              "(a multi-turn rewrite or a judge call)", reason="no_answer")
