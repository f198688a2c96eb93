"""Label files (CSV / JSONL): what a line may hold, the line a problem is on, and the round trip."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ragqual.core.label_files import format_of, parse, render
from ragqual.errors import InputError


def test_csv_lines_by_trial_or_by_case():
    text = ("trial_id,case_id,mode,repeat,model,criterion,verdict,note,labeller,labelled_at\n"
            "7,,,,,faithfulness,YES,,ann,2026-12-01T10:00:00+02:00\n"
            ",q-1,oracle,1,gemma,relevance,no,\"off topic, entirely\",,\n")
    first, second = parse("l.csv", text, "csv")
    assert (first.line, first.trial_id, first.verdict, first.labeller) == (2, 7, "yes", "ann")
    assert first.labelled_at == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    assert (second.case_id, second.mode, second.repeat, second.model) == ("q-1", "oracle", 1, "gemma")
    assert second.note == "off topic, entirely" and second.labelled_at is None and second.labeller is None


def test_jsonl_defaults_and_blank_lines():
    (line,) = parse("l.jsonl", '\n{"case_id": "q-2", "criterion": "completeness", "verdict": "unsure"}\n\n', "jsonl")
    assert (line.line, line.mode, line.repeat, line.trial_id) == (2, "e2e", 0, None)


@pytest.mark.parametrize(("fmt", "text", "message"), [
    ("jsonl", '{"trial_id": 1, "criterion": "faithfulness", "verdict": "yes"}\nnot json\n', "l:2: invalid JSON"),
    ("jsonl", '{"trial_id": 1, "criterion": "faith", "verdict": "yes"}\n', "l:1: criterion 'faith' is not one of"),
    ("jsonl", '{"trial_id": 1, "criterion": "relevance", "verdict": "maybe"}\n', "l:1: verdict 'maybe'"),
    ("jsonl", '{"criterion": "relevance", "verdict": "no"}\n', "l:1: give trial_id or case_id"),
    ("jsonl", '{"trial_id": "x", "criterion": "relevance", "verdict": "no"}\n', "l:1: trial_id must be a whole number"),
    ("jsonl", '[1]\n', "l:1: a label is a JSON object"),
    ("jsonl", '{"trial_id": 1, "criterion": "relevance", "verdict": "no", "score": 1}\n', "l:1: unknown field(s) score"),
    ("jsonl", '{"trial_id": 1, "criterion": "relevance", "verdict": "no", "labelled_at": "yesterday"}\n',
     "l:1: labelled_at must be an ISO 8601 time"),
    ("csv", "trial_id,criterion,verdict,score\n1,relevance,no,1\n", "l:1: unknown column(s) score"),
    ("csv", "trial_id,criterion,verdict\n1,relevance,no\n2,relevance\n", "l:3: 2 field(s), the header names 3"),
    ("csv", "trial_id,criterion,verdict\n", "l: no labels in the file"),
    ("jsonl", "", "l: no labels in the file"),
])
def test_a_bad_line_names_the_file_and_line(fmt, text, message):
    with pytest.raises(InputError) as caught:
        parse("l", text, fmt)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_render_then_parse_gives_the_same_labels(fmt):
    at = datetime(2026, 12, 1, 9, 30, 5, 123456, tzinfo=UTC)
    rows = [{"trial_id": 3, "case_id": "q-1", "mode": "e2e", "repeat": 0, "model": "mock", "criterion": "faithfulness",
             "verdict": "no", "note": 'says "5 cm", line\nbreak, comma', "labeller": "ann", "labelled_at": at,
             "sample_seed": 9, "sample_size": 40},
            {"trial_id": 4, "case_id": "q-2", "mode": "e2e", "repeat": 1, "model": "mock", "criterion": "relevance",
             "verdict": "yes", "note": None, "labeller": "bob", "labelled_at": at + timedelta(seconds=1),
             "sample_seed": None, "sample_size": None}]
    back = parse("x", render(rows, fmt), fmt)
    assert [(b.trial_id, b.case_id, b.mode, b.repeat, b.model, b.criterion, b.verdict, b.note, b.labeller,
             b.labelled_at, b.sample_seed, b.sample_size) for b in back] == [tuple(r.values()) for r in rows]


def test_format_from_name():
    assert format_of("a.CSV") == "csv" and format_of("a.jsonl") == "jsonl" and format_of("a.csv", "jsonl") == "jsonl"
    with pytest.raises(InputError):
        format_of("a", "xml")
