"""`history` on the bundled corpus and goldens (mock model): the runs' summary rows give the same
output, byte for byte, as their rows, after an eval, a rescore and an interrupted, resumed run."""

from __future__ import annotations

import json
import sqlite3

import pytest

from ragqual.store import run_summaries
from tests.cli.conftest import invoke

pytestmark = pytest.mark.slow


def _db(root):
    return sqlite3.connect(root / "eval-results" / "eval.db")


def _main(args, capsys):
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def _unmatchable(workdir, tmp_path):
    """The goldens with every mustInclude made unmatchable (a rescore then moves every score)."""
    target = tmp_path / "goldens-edited"
    target.mkdir()
    for path in (workdir / "goldens").glob("*.jsonl"):
        goldens = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        lines = [json.dumps(g if g.get("expectRefusal") else {**g, "mustInclude": ["\\bzzz-never-zzz\\b"]})
                 for g in goldens]
        (target / path.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def runs(workdir, tmp_path_factory):
    """An eval (retrieval + generation), a rescored generation run and an interrupted, resumed one."""
    result = invoke("--json", "eval", "--limit", "12", "--repeats", "2")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    result = invoke("--json", "generation", "--model", "mock", "--mode", "oracle", "--limit", "6", "--repeats", "1")
    assert result.exit_code == 0, result.output
    rescored = json.loads(result.stdout)["run_id"]
    result = invoke("rescore", str(rescored), "--goldens", str(_unmatchable(workdir, tmp_path_factory.mktemp("g"))))
    assert result.exit_code == 0, result.output
    return {"retrieval": out["retrieval_run"], "generation": out["generation_run"], "rescored": rescored}


def _resumed(workdir, monkeypatch, capsys) -> int:
    from ragqual.engine import loop

    real, seen = loop._Trials.prepare, {"n": 0}

    def prepare(self, done):
        if seen["n"] == 4:
            raise KeyboardInterrupt
        seen["n"] += 1
        return real(self, done)

    monkeypatch.setattr(loop._Trials, "prepare", prepare)
    code, _, err = _main(["generation", "--model", "mock", "--all-modes", "--limit", "3", "--repeats", "2"], capsys)
    monkeypatch.setattr(loop._Trials, "prepare", real)
    assert code == 130, err
    run_id = _db(workdir).execute("SELECT MAX(id) FROM runs").fetchone()[0]
    code, _, err = _main(["generation", "--resume", str(run_id)], capsys)
    assert code == 0, err
    return run_id


def test_history_from_summaries_matches_history_from_rows_on_the_bundled_eval(runs, workdir, monkeypatch, capsys):
    resumed = _resumed(workdir, monkeypatch, capsys)
    from ragqual.store import db

    engine = db.make_engine(f"sqlite:///{workdir / 'eval-results' / 'eval.db'}")
    all_runs = [*runs.values(), resumed]
    read = run_summaries.history_means(engine, all_runs, ["correctness", "recall@5"])
    engine.dispose()
    assert set(read.from_summaries) == {runs["retrieval"], runs["generation"], resumed}  # the rescore made its stale
    for args in (["history", "--limit", "0"], ["history", "--kind", "generation"],
                 ["history", "--limit", "0", "--metric", "pass", "--metric", "mrr", "--metric", "factCoverage"]):
        for fmt in ("table", "json", "csv"):
            code, summarised, err = _main([*args, "--format", fmt], capsys)
            assert code == 0, err
            with monkeypatch.context() as m:
                m.setattr(run_summaries, "current", lambda conn, run_ids: {})
                code, from_rows, err = _main([*args, "--format", fmt], capsys)
            assert code == 0, err
            assert summarised == from_rows, (args, fmt)
    code, out, err = _main(["verify"], capsys)
    assert code == 0, out + err


def test_db_summarise_makes_a_stale_run_current_again_and_history_reads_the_same(runs, workdir, capsys):
    from ragqual.store import db

    def held() -> set[int]:
        engine = db.make_engine(f"sqlite:///{workdir / 'eval-results' / 'eval.db'}")
        try:
            return set(run_summaries.history_means(engine, list(runs.values()), ["correctness"]).from_summaries)
        finally:
            engine.dispose()

    code, before, err = _main(["history", "--limit", "0", "--format", "json"], capsys)
    assert code == 0, err
    assert runs["rescored"] not in held()  # the rescore made its summary stale
    code, out, err = _main(["db", "summarise"], capsys)
    assert code == 0, err
    assert out.startswith("summarised ") and f"{runs['rescored']}" in out.split(";")[0]
    assert runs["rescored"] in held()
    code, after, err = _main(["history", "--limit", "0", "--format", "json"], capsys)
    assert code == 0 and after == before, err
    code, out, err = _main(["db", "summarise"], capsys)  # nothing left to do
    assert code == 0 and out.startswith("summarised 0 finished run(s);"), out + err
    code, out, err = _main(["verify"], capsys)
    assert code == 0, out + err
