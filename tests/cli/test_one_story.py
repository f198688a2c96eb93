"""Issue 14: one golden, one story — identity across tiers, one scoring path, rescore that moves
the metrics, resume that keeps to the stored plan, gates that refuse unfinished runs."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from tests.cli.conftest import invoke


def _db(root):
    return sqlite3.connect(root / "eval-results" / "eval.db")


def _json(*args):
    result = invoke("--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _report_line(run_id: int, mode: str) -> dict:
    doc = _json("report", str(run_id))
    groups = dict(doc["sections"])["groups"] if isinstance(doc.get("sections"), list) else doc["groups"]
    return next(g for g in groups if g["mode"] == mode)


def test_after_eval_one_case_id_per_golden_over_both_tiers(workdir):
    out = _json("eval", "--limit", "5", "--repeats", "1")
    db = _db(workdir)
    ids = db.execute(
        "SELECT COUNT(DISTINCT case_id) FROM ("
        " SELECT case_id FROM metric_values WHERE run_id IN (?, ?)"
        " UNION ALL SELECT c.case_id FROM trials t JOIN cases c ON c.id = t.case_pk WHERE t.run_id = ?)",
        (out["retrieval_run"], out["generation_run"], out["generation_run"])).fetchone()[0]
    assert ids == 5
    # both tiers record the same case row for a golden
    assert db.execute("SELECT COUNT(*) FROM cases WHERE subject = 'rag'").fetchone()[0] == 5


def _unmatchable_goldens(workdir, tmp_path, ids):
    """A copy of the goldens where these goldens' mustInclude can never match."""
    target = tmp_path / "goldens-edited"
    shutil.copytree(workdir / "goldens", target)
    for path in target.glob("*.jsonl"):
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                obj = json.loads(line)
                if obj["id"] in ids:
                    obj["mustInclude"] = ["\\bzzz-never-in-any-answer-zzz\\b"]
                line = json.dumps(obj)
            lines.append(line)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def test_rescore_moves_the_reported_correctness_without_a_model_call(workdir, tmp_path, monkeypatch):
    run = _json("generation", "--model", "mock", "--mode", "oracle", "--limit", "5", "--repeats", "1",
                "--tag", "single-hop")
    run_id = run["run_id"]
    assert _report_line(run_id, "oracle")["correctness"] == 1.0
    db = _db(workdir)
    golden_ids = [r[0] for r in db.execute(
        "SELECT DISTINCT c.case_id FROM trials t JOIN cases c ON c.id = t.case_pk WHERE t.run_id = ?", (run_id,))]
    before = {t: db.execute(f"SELECT * FROM {t} ORDER BY id").fetchall()
              for t in ("trials", "assertion_results", "trial_scores", "metric_values")}
    edited = _unmatchable_goldens(workdir, tmp_path, set(golden_ids))

    from ragqual.engine.services import TrialServices

    def no_call(*args, **kwargs):
        raise AssertionError("rescore called a model")

    monkeypatch.setattr(TrialServices, "call", no_call)
    result = invoke("rescore", str(run_id), "--goldens", str(edited))
    assert result.exit_code == 0, result.output

    line = _report_line(run_id, "oracle")
    assert line["correctness"] == 0.0
    assert f"{line['correctness']:.3f}" == "0.000"
    after = {t: db.execute(f"SELECT * FROM {t} ORDER BY id").fetchall() for t in before}
    for table, rows in before.items():
        assert after[table][: len(rows)] == rows, f"{table}: an old row changed"
    run_metrics = db.execute("SELECT COUNT(*) FROM metric_values WHERE run_id = ? AND id <= ?",
                             (run_id, before["metric_values"][-1][0])).fetchone()[0]
    assert len(after["metric_values"]) - len(before["metric_values"]) == run_metrics == 5 * 5
    assert len(after["trials"]) == len(before["trials"])
    history = _json("history", "--kind", "generation", "--limit", "0")
    row = next(r for r in history if r["run_id"] == run_id)
    assert row["correctness"] == 0.0


