"""The label file format of `ragqual labels import` / `labels export`: CSV with a header, or JSONL.

Fields (one label per line or record):

  trial_id      the trial (an id of the run), or instead:
  case_id       the golden / case id, with `mode` (default e2e), `repeat` (default 0) and `model`
                (the variant's name or model, needed only when the run has several)
  criterion     faithfulness | completeness | relevance
  verdict       yes | no | unsure
  note          optional free text
  labeller      optional: default `--labeller`, else $USER
  labelled_at   optional ISO 8601 time (no zone: UTC); default the time of the import
  sample_seed, sample_size   optional: the random sample the label belongs to

Any other field is refused, and so is a line that breaks a rule: one message naming the file and
the line, and nothing is written (the import is one transaction). Export writes the same fields,
so an exported file imports back to the same current labels. Pure: text in, records out.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragqual.core import jsonline
from ragqual.core.label_queue import CRITERIA, VERDICTS
from ragqual.errors import InputError

FIELDS: tuple[str, ...] = ("trial_id", "case_id", "mode", "repeat", "model", "criterion", "verdict", "note",
                           "labeller", "labelled_at", "sample_seed", "sample_size")
FORMATS = ("csv", "jsonl")


@dataclass(frozen=True)
class LabelLine:
    """One label as the file gives it, with the line it came from."""

    line: int
    criterion: str
    verdict: str
    trial_id: int | None = None
    case_id: str | None = None
    mode: str = "e2e"
    repeat: int = 0
    model: str | None = None
    note: str | None = None
    labeller: str | None = None
    labelled_at: datetime | None = None
    sample_seed: int | None = None
    sample_size: int | None = None


def format_of(name: str, explicit: str | None = None) -> str:
    """csv or jsonl: `explicit`, else from the file name (.csv, else JSONL)."""
    if explicit is not None:
        if explicit not in FORMATS:
            raise InputError(f"unknown label file format {explicit!r}: use csv or jsonl")
        return explicit
    return "csv" if name.lower().endswith(".csv") else "jsonl"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {json.dumps(value)}")
    return value.strip() or None


def _int(name: str, value: Any) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{name} must be a whole number, not {json.dumps(value)}")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {value!r}") from None


def _time(value: Any) -> datetime | None:
    text = _text(value)
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"labelled_at must be an ISO 8601 time, not {text!r}") from None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(UTC)


def _choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    text = _text(value)
    if text is None:
        raise ValueError(f"{name} is missing")
    if text.lower() not in allowed:
        raise ValueError(f"{name} {text!r} is not one of {', '.join(allowed)}")
    return text.lower()


def record(line: int, fields: Mapping[str, Any]) -> LabelLine:
    """One record's fields as a LabelLine; ValueError saying what is wrong with it."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}: the fields are {', '.join(FIELDS)}")
    trial_id, case_id = _int("trial_id", fields.get("trial_id")), _text(fields.get("case_id"))
    if trial_id is None and case_id is None:
        raise ValueError("give trial_id or case_id")
    repeat = _int("repeat", fields.get("repeat"))
    size = _int("sample_size", fields.get("sample_size"))
    if size is not None and size < 1:
        raise ValueError(f"sample_size must be at least 1, not {size}")
    return LabelLine(
        line=line, criterion=_choice("criterion", fields.get("criterion"), CRITERIA),
        verdict=_choice("verdict", fields.get("verdict"), VERDICTS), trial_id=trial_id, case_id=case_id,
        mode=_text(fields.get("mode")) or "e2e", repeat=0 if repeat is None else repeat,
        model=_text(fields.get("model")), note=_text(fields.get("note")), labeller=_text(fields.get("labeller")),
        labelled_at=_time(fields.get("labelled_at")), sample_seed=_int("sample_seed", fields.get("sample_seed")),
        sample_size=size,
    )


def parse(name: str, text: str, fmt: str) -> list[LabelLine]:
    """Every label of a file; InputError naming `name` and the line of the first problem."""
    records = _csv_records(name, text) if fmt == "csv" else _jsonl_records(text)
    out = []
    for line, fields in records:
        if isinstance(fields, str):
            raise InputError(f"{name}:{line}: {fields}")
        try:
            out.append(record(line, fields))
        except ValueError as exc:
            raise InputError(f"{name}:{line}: {exc}") from None
    if not out:
        raise InputError(f"{name}: no labels in the file")
    return out


def _jsonl_records(text: str) -> list[tuple[int, Mapping[str, Any] | str]]:
    out: list[tuple[int, Mapping[str, Any] | str]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        value, problem = jsonline.load(raw)
        if problem is None and not isinstance(value, dict):
            problem = "a label is a JSON object"
        out.append((n, problem if problem is not None else value))
    return out


def _csv_records(name: str, text: str) -> list[tuple[int, Mapping[str, Any] | str]]:
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        if header is None:
            raise InputError(f"{name}: no labels in the file")
        header = [h.strip() for h in header]
        unknown = sorted(set(header) - set(FIELDS))
        if unknown:
            raise InputError(f"{name}:1: unknown column(s) {', '.join(unknown)}: the fields are {', '.join(FIELDS)}")
        out: list[tuple[int, Mapping[str, Any] | str]] = []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                out.append((reader.line_num, f"{len(row)} field(s), the header names {len(header)}"))
                continue
            out.append((reader.line_num, {h: v for h, v in zip(header, row, strict=True) if v.strip() or h in
                                          ("criterion", "verdict")}))
    except csv.Error as exc:
        raise InputError(f"{name}:{reader.line_num}: not CSV: {exc}") from None
    return out


def render(rows: Sequence[Mapping[str, Any]], fmt: str) -> str:
    """Rows of FIELDS as a label file (None fields left empty in CSV, out of JSONL)."""
    def plain(value: Any) -> Any:
        return value.isoformat() if isinstance(value, datetime) else value

    if fmt == "jsonl":
        return "".join(json.dumps({k: plain(r[k]) for k in FIELDS if r.get(k) is not None}, ensure_ascii=False) + "\n"
                       for r in rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(FIELDS)
    for r in rows:
        writer.writerow(["" if r.get(k) is None else plain(r[k]) for k in FIELDS])
    return buffer.getvalue()
