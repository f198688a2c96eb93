"""`ragqual export RUN --format otlp-json` and `ragqual import-traces`: a real run out and back in."""

import json
import sqlite3

import pytest
from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.cli.conftest import invoke


@pytest.fixture(scope="module")
def run_id(workdir):
    result = json.loads(invoke("--json", "generation", "--model", "mock", "--all-modes", "--limit", "3",
                               "--repeats", "1").stdout)
    return result["run_id"]


def _spans(path):
    request = Parse(path.read_text(encoding="utf-8"), ExportTraceServiceRequest())
    return list(request.resource_spans[0].scope_spans[0].spans)


def _attr(span, key):
    for kv in span.attributes:
        if kv.key == key:
            return getattr(kv.value, kv.value.WhichOneof("value"))
    return None


def test_export_otlp_spans_parentage_and_scores(workdir, run_id, tmp_path):
    out = tmp_path / "run.otlp.json"
    result = invoke("export", str(run_id), "--format", "otlp-json", "-o", str(out))
    assert result.exit_code == 0, result.output
    spans = _spans(out)
    chats = [s for s in spans if _attr(s, "gen_ai.operation.name") == "chat"]
    retrievals = [s for s in spans if _attr(s, "gen_ai.operation.name") == "retrieval"]
    assert len(chats) == 9 and len(retrievals) == 3  # 3 questions x 3 modes, e2e retrieves
    assert f"({len(spans)} spans)" in result.output
    e2e = {c.span_id: c for c in chats if _attr(c, "ragqual.trial.mode") == "e2e"}
    assert {r.parent_span_id for r in retrievals} == set(e2e)
    for chat in chats:
        assert chat.name == "chat mock" and _attr(chat, "gen_ai.request.model") == "mock"
        assert _attr(chat, "gen_ai.request.seed") == 42 and _attr(chat, "gen_ai.usage.output_tokens") > 0
        names = [_attr(e, "gen_ai.evaluation.name") for e in chat.events]
        assert "weighted-assertions" in names and "correctness" in names
        assert {e.name for e in chat.events} == {"gen_ai.evaluation.result"}
    db = sqlite3.connect(workdir / "eval-results" / "eval.db")
    metrics = db.execute("SELECT COUNT(*) FROM metric_values WHERE run_id=? AND value IS NOT NULL AND trial_id IS NOT NULL", (run_id,)).fetchone()[0]
    assertions = db.execute("SELECT COUNT(*) FROM assertion_results a JOIN trials t ON t.id=a.trial_id "
                            "WHERE t.run_id=?", (run_id,)).fetchone()[0]
    assert sum(len(c.events) for c in chats) == metrics + assertions + 9  # + one trial score each
    docs = _attr(retrievals[0], "gen_ai.retrieval.documents").values
    assert len(docs) == _attr(retrievals[0], "gen_ai.retrieval.top_k") > 0
    # no content without --with-content; the same bytes on a second export
    text = out.read_text(encoding="utf-8")
    for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                "gen_ai.retrieval.query.text", "<<<CONTEXT"):
        assert key not in text
    again = tmp_path / "again.json"
    invoke("export", str(run_id), "--format", "otlp-json", "-o", str(again))
    assert again.read_bytes() == out.read_bytes()


def test_round_trip_answers_match_the_run(workdir, run_id, tmp_path):
    trace = tmp_path / "run.otlp.json"
    assert invoke("export", str(run_id), "--format", "otlp-json", "-o", str(trace), "--with-content").exit_code == 0
    result = invoke("import-traces", str(trace), "--out", str(tmp_path / "imported"))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "imported" / "answers.jsonl").read_text().splitlines()]
    db = sqlite3.connect(workdir / "eval-results" / "eval.db")
    stored = db.execute("SELECT c.case_id, t.mode, x.parsed_output, t.prompt_tokens, t.completion_tokens FROM trials t "
                        "JOIN v_trial_texts x ON x.trial_id = t.id JOIN cases c ON c.id=t.case_pk WHERE t.run_id=? ORDER BY t.id", (run_id,)).fetchall()
    assert [(r["id"], r.get("mode", "e2e"), r["answer"], r["prompt_tokens"], r["completion_tokens"]) for r in rows] \
        == [(case, mode, json.loads(out) if out.startswith('"') else out, p, c) for case, mode, out, p, c in stored]
    assert {r["model"] for r in rows} == {"mock"}
    drafts = [json.loads(line) for line in (tmp_path / "imported" / "goldens-draft.jsonl").read_text().splitlines()]
    goldens = {json.loads(line)["id"]: json.loads(line) for f in (workdir / "goldens").glob("*.jsonl")
               for line in f.read_text().splitlines() if line.strip()}
    assert len(drafts) == 3
    for draft in drafts:
        assert draft["draft"] is True and draft["query"] == goldens[draft["id"]]["query"] and draft["relevantDocIds"]


def _main(args, capsys):
    """The real entry point (its error handling and exit codes): (exit code, stdout, stderr)."""
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def test_import_bad_input_exits_2_and_writes_nothing(workdir, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [\n{"traceId": "zz", "spanId": "00f067aa0ba902b7"}]}]}]}')
    out = tmp_path / "out"
    code, _, err = _main(["import-traces", str(bad), "--out", str(out)], capsys)
    assert code == 2
    assert f"{bad}: span 00f067aa0ba902b7: traceId must be 32 hex digits" in err
    assert not out.exists()
    # a good file into a folder that already has answers from an earlier import: both files replaced together
    good = tmp_path / "good.json"
    good.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", '
                    '"spanId": "00f067aa0ba902b7", "attributes": [{"key": "gen_ai.operation.name", "value": '
                    '{"stringValue": "chat"}}, {"key": "gen_ai.output.messages", "value": {"stringValue": '
                    '"[{\\"role\\": \\"assistant\\", \\"content\\": \\"hi\\"}]"}}]}]}]}]}')
    assert _main(["import-traces", str(good), "--out", str(out)], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {"answers.jsonl", "goldens-draft.jsonl"}
    assert _main(["import-traces", str(bad), "--out", str(out)], capsys)[0] == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_otlp_needs_an_output_file(workdir, run_id, capsys):
    code, _, err = _main(["export", str(run_id), "--format", "otlp-json"], capsys)
    assert code == 2 and "-o FILE" in err
