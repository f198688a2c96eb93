import json
import sqlite3

import pytest

from ragqual.cli.main import cli
from ragqual.pipeline.report import quality_text
from tests.cli.conftest import invoke


def _report(root, run_id):
    base = root / "eval-results" / "reports" / f"retrieval-run{run_id}"
    return json.loads(base.with_suffix(".json").read_text()), base.with_suffix(".md").read_text()


def test_two_runs_give_byte_identical_quality_sections(workdir):
    first = invoke("retrieval", "--report")
    second = invoke("retrieval", "--report")
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    json1, md1 = _report(workdir, 1)
    json2, md2 = _report(workdir, 2)
    assert json.dumps(json1["quality"], sort_keys=True) == json.dumps(json2["quality"], sort_keys=True)
    assert quality_text(md1) == quality_text(md2)
    assert json1["run"]["run_id"] == 1 and json2["run"]["run_id"] == 2
    assert set(json1["quality"]) == {"dense", "bm25", "hybrid"}
    overall = json1["quality"]["hybrid"]["overall"]
    assert 0.5 < overall["recall@5"] <= 1.0 and overall["questions"] > 99


def test_run_is_appended_with_per_question_rows(workdir):
    db = sqlite3.connect(workdir / "eval-results" / "eval.db")
    kinds = db.execute("SELECT kind FROM v_run_status WHERE status = 'finished'").fetchall()
    assert ("retrieval",) in kinds
    n_questions = db.execute("SELECT COUNT(DISTINCT case_id) FROM metric_values WHERE run_id = 1").fetchone()[0]
    assert n_questions > 99
    # one compact ranking per (strategy, question), none of the old one-row-per-rank layout
    rankings = db.execute("SELECT strategy, COUNT(*), COUNT(DISTINCT query_id), SUM(depth) FROM retrieval_rankings "
                          "WHERE run_id = 1 GROUP BY strategy ORDER BY strategy").fetchall()
    assert [r[:3] for r in rankings] == [(s, n_questions, n_questions) for s in ("bm25", "dense", "hybrid")]
    assert db.execute("SELECT COUNT(*) FROM retrieval_results").fetchone()[0] == 0
    ranks = db.execute("SELECT MIN(rank), COUNT(*) FROM v_retrieval_hits WHERE run_id = 1").fetchone()
    assert ranks[0] == 1 and ranks[1] == sum(r[3] for r in rankings) > 0
    # the stored per-question mean is the report's number
    stored = db.execute("SELECT AVG(value) FROM metric_values WHERE run_id=1 AND group_key='hybrid' AND metric='recall@5'").fetchone()[0]
    report, _ = _report(workdir, 1)
    assert stored == pytest.approx(report["quality"]["hybrid"]["overall"]["recall@5"], rel=1e-12)  # full precision


def test_exported_trec_files_evaluate_to_the_same_numbers(workdir):
    out = workdir / "trec"
    result = invoke("retrieval", "--strategy", "hybrid", "--export-trec", str(out))
    assert result.exit_code == 0, result.output
    trec = invoke("trec-eval", str(out / "qrels.txt"), str(out / "run.hybrid.txt"), "-m", "recall.5", "-m", "recip_rank")
    values = {line.split()[0]: float(line.split()[2]) for line in trec.output.splitlines() if line.split()[1] == "all" and line.split()[0] != "runid"}
    db = sqlite3.connect(workdir / "eval-results" / "eval.db")
    run_id = db.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    ours = dict(db.execute("SELECT metric, AVG(value) FROM metric_values WHERE run_id=? AND metric IN ('recall@5','mrr') GROUP BY metric", (run_id,)).fetchall())
    assert abs(values["recall_5"] - ours["recall@5"]) < 5e-5
    assert abs(values["recip_rank"] - ours["mrr"]) < 5e-5


def test_ablation_prints_each_stage_with_deltas(workdir):
    result = invoke("retrieval", "--ablate", "--tag", "acronym")
    assert result.exit_code == 0, result.output
    for stage in ("full", "no-acronym-expansion", "no-rerank", "dense-only", "bm25-only", "Δ no-rerank"):
        assert stage in result.output


def test_unknown_tag_is_a_usage_error(workdir):
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["retrieval", "--tag", "no-such-tag"])
    assert result.exit_code != 0
    assert "no-such-tag" in str(result.exception) or "no-such-tag" in result.output


def test_a_history_behind_the_current_migration_is_refused_before_any_search(workdir, tmp_path, capsys, monkeypatch):
    from ragqual.app import retrieval_run
    from tests.cli.conftest import ragqual

    from ragqual.store import db as store_db

    db = tmp_path / "old.db"
    engine = store_db.make_engine(f"sqlite:///{db}")
    store_db.upgrade(engine, "0006")  # a history written by the previous release
    engine.dispose()
    monkeypatch.setattr(retrieval_run, "build_retriever", lambda corpus: (_ for _ in ()).throw(AssertionError("searched")))
    code, _, err = ragqual(db, ["retrieval", "--strategy", "bm25"], capsys)
    assert code == 2 and "is at 0006, this ragqual needs" in err and "ragqual db upgrade" in err


def test_git_is_asked_off_the_main_thread_while_the_run_searches(workdir, monkeypatch):
    import threading

    import ragqual.adapters.provenance as provenance

    asked_on = []
    real = provenance.git_state

    def recorded(cwd):
        asked_on.append(threading.current_thread().name)
        return real(cwd)

    monkeypatch.setattr(provenance, "git_state", recorded)
    result = invoke("retrieval", "--strategy", "bm25")
    assert result.exit_code == 0, result.output
    assert asked_on == ["ragqual-git-state"]
