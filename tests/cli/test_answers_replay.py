"""`--model answers:FILE`: answers produced elsewhere, scored like any run (generation and run)."""

import json
import sqlite3

import pytest

from tests.cli.conftest import ragqual

GOOD = "Boil it for 1 minute at a rolling boil."
BAD = "Dig it 2 feet deep."
CASES = ("water-boil-sea-level-01", "sanitation-cathole-depth-01", "water-boil-altitude-01")


def _db(root):
    return sqlite3.connect(root / "eval-results" / "eval.db")


def _answers(root, *objects, name="answers.jsonl"):
    path = root / name
    path.write_text("\n".join(o if isinstance(o, str) else json.dumps(o) for o in objects) + "\n", encoding="utf-8")
    return name


def _count(root, table):
    path = root / "eval-results" / "eval.db"
    if not path.exists():
        return 0
    return sqlite3.connect(path).execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def _generation(root, capsys, answers, *extra):
    args = ["--json", "generation", "--model", f"answers:{answers}", "--repeats", "1", "--no-mock-line"]
    for case in CASES:
        args += ["--case", case]
    return ragqual(root / "eval-results" / "eval.db", [*args, *extra], capsys)


def test_replayed_answers_are_scored_with_provenance_and_missing_ids_are_trial_errors(workdir, capsys):
    name = _answers(workdir,
                    {"id": CASES[0], "answer": GOOD, "model": "prod-v3", "latency_ms": 812, "prompt_tokens": 400,
                     "completion_tokens": 12},
                    "",
                    {"id": CASES[1], "answer": BAD,
                     "context": [{"doc_id": "sanitation-catholes", "text": "A cathole is 6 to 8 inches deep."}]})
    code, out, err = _generation(workdir, capsys, name)
    assert code == 0, err
    body = json.loads(out)
    db = _db(workdir)
    rows = {r[0]: r[1:] for r in db.execute(
        "SELECT c.case_id, t.error, x.raw_output, x.context, t.latency_ms, t.prompt_tokens, t.cache_key "
        "FROM trials t JOIN v_trial_texts x ON x.trial_id = t.id JOIN cases c ON c.id = t.case_pk WHERE t.run_id=?", (body["run_id"],))}
    assert set(rows) == set(CASES)
    error, raw, context, latency, tokens, key = rows[CASES[0]]
    raw = json.loads(raw)
    assert error is None and raw["source"] == "answers" and raw["file"] == name and raw["line"] == 1
    assert len(raw["sha256"]) == 64 and raw["model"] == "prod-v3" and raw["contextFrom"] == "pipeline"
    assert latency == 812 and tokens == 400 and key is None
    assert "Boiling" in context  # no context in the file: the pipeline's e2e retrieval
    _, raw1, context1, *_ = rows[CASES[1]]
    assert json.loads(raw1)["line"] == 3 and context1 == "A cathole is 6 to 8 inches deep."
    assert rows[CASES[2]][0] == f"no answer for {CASES[2]} in {name}"
    scores = dict(db.execute("SELECT c.case_id, s.score FROM v_trials s JOIN cases c ON c.case_id = s.case_id "
                             "WHERE s.run_id=?", (body["run_id"],)).fetchall())
    assert scores[CASES[0]] == 1.0 and scores[CASES[1]] < 1.0  # scored like any answer
    recall = db.execute("SELECT m.value FROM metric_values m JOIN trials t ON t.id = m.trial_id JOIN cases c "
                        "ON c.id = t.case_pk WHERE m.run_id=? AND c.case_id=? AND m.metric='contextRecall'",
                        (body["run_id"], CASES[1])).fetchone()[0]
    assert recall == 1.0  # the file's doc ids are the injected documents


@pytest.mark.parametrize("lines, message", [
    (['{"id": "water-boil-sea-level-01", "answer": "x"}', "{oops"], "answers.jsonl:2: not JSON"),
    (['{"id": "water-boil-sea-level-01"}'], "answers.jsonl:1: 'answer' must be a non-blank string"),
    (['{"id": "water-boil-sea-level-01", "answer": "x"}', '{"id": "water-boil-sea-level-01", "answer": "y"}'],
     "answers.jsonl:2: id 'water-boil-sea-level-01' (e2e) was already given on line 1"),
    (['{"id": "water-boil-sea-level-01", "answer": "x"}', '{"id": "not-a-golden", "answer": "y"}'],
     "answers.jsonl:2: id 'not-a-golden' is not a golden of this project"),
])
def test_bad_answers_file_exits_2_and_writes_nothing(tmp_path, workdir, capsys, lines, message):
    before = (_count(workdir, "runs"), _count(workdir, "trials"), _count(workdir, "variant_configs"))
    name = _answers(workdir, *lines, name="bad.jsonl")
    code, _, err = _generation(workdir, capsys, name)
    assert code == 2
    assert message.replace("answers.jsonl", "bad.jsonl") in err and "Traceback" not in err
    assert (_count(workdir, "runs"), _count(workdir, "trials"), _count(workdir, "variant_configs")) == before


def test_ragqual_run_replays_too(workdir, capsys):
    name = _answers(workdir, {"id": CASES[0], "answer": GOOD}, name="run.jsonl")
    code, out, err = ragqual(workdir / "eval-results" / "eval.db",
                             ["--json", "run", "--subject", "rag", "--model", f"answers:{name}", "--mode", "oracle",
                              "--trial-count", "1", "--case-slugs", CASES[0]], capsys)
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    (error, raw), = _db(workdir).execute("SELECT t.error, x.raw_output FROM trials t JOIN v_trial_texts x ON x.trial_id = t.id WHERE t.run_id=?", (run_id,)).fetchall()
    assert error == f"no answer for {CASES[0]} (oracle) in {name}"  # the line is for e2e only


def test_labels_may_name_the_model_that_produced_a_replayed_answer(workdir, capsys, tmp_path):
    name = _answers(workdir, {"id": CASES[0], "answer": GOOD, "model": "prod-v3"},
                    {"id": CASES[1], "answer": BAD, "model": "prod-v3"})
    code, out, err = _generation(workdir, capsys, name)
    assert code == 0, err
    run = json.loads(out)["run_id"]
    labels = tmp_path / "labels.jsonl"
    line = {"case_id": CASES[0], "model": "prod-v3", "criterion": "faithfulness", "verdict": "yes", "labeller": "ann"}
    labels.write_text(json.dumps(line) + "\n", encoding="utf-8")
    db = workdir / "eval-results" / "eval.db"
    code, _, err = ragqual(db, ["labels", "import", str(labels), "--run", str(run)], capsys)
    assert code == 0, err
    labels.write_text(json.dumps({**line, "model": "prod-v4"}) + "\n", encoding="utf-8")
    code, _, err = ragqual(db, ["labels", "import", str(labels), "--run", str(run)], capsys)
    assert code == 2 and "labels.jsonl:1: the run has no trial for" in err and "model prod-v4" in err
    assert _count(workdir, "labels") == 1
