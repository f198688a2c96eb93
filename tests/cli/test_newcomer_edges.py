"""The rough edges a newcomer hit: each one reproduced through the real entry point."""

from __future__ import annotations

import json
import os
import stat

import pandas as pd
import pytest

from tests.cli.conftest import ragqual
from tests.store.test_queries import generation_run, retrieval_run


@pytest.fixture
def generation(store):
    return generation_run(store, [{"case": "q1"}, {"case": "q2", "score": 0.0, "passed": False}])


# -- --json after the command -------------------------------------------------------------------------

def test_report_last_json_after_the_command(head_db, store, generation, capsys):
    code, out, err = ragqual(head_db, ["report", "--last", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["header"]["run_id"] == generation


def test_history_json_after_the_command(head_db, generation, capsys):
    code, out, err = ragqual(head_db, ["history", "--json"], capsys)
    assert code == 0, err
    assert [row["run_id"] for row in json.loads(out)] == [generation]


def test_json_after_the_double_dash_is_left_alone(head_db, generation, capsys):
    code, _, err = ragqual(head_db, ["report", "--", "--json"], capsys)
    assert code == 2 and "--json" in err


# -- a top-level typo --------------------------------------------------------------------------------

def test_top_level_typo_suggests_the_command(head_db, capsys):
    code, _, err = ragqual(head_db, ["retreival"], capsys)
    assert code == 2
    assert "No such command 'retreival'" in err and "Did you mean 'retrieval'?" in err


def test_top_level_nonsense_suggests_nothing(head_db, capsys):
    code, _, err = ragqual(head_db, ["zzzzqqq"], capsys)
    assert code == 2 and "No such command" in err and "Did you mean" not in err


# -- export on a quick-start install --------------------------------------------------------------------

def _hide_pyarrow(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("no pyarrow")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)


def test_export_without_pyarrow_writes_csv_by_default(head_db, generation, tmp_path, capsys, monkeypatch):
    _hide_pyarrow(monkeypatch)
    code, out, err = ragqual(head_db, ["export", str(generation), "--out", str(tmp_path / "x")], capsys)
    monkeypatch.undo()  # pandas itself looks for pyarrow when reading back
    assert code == 0, err
    assert len(pd.read_csv(tmp_path / "x" / "trials.csv")) == 2
    assert not list((tmp_path / "x").glob("*.parquet"))


def test_export_parquet_asked_without_pyarrow_names_the_checkout_install(head_db, generation, tmp_path, capsys,
                                                                          monkeypatch):
    _hide_pyarrow(monkeypatch)
    args = ["export", str(generation), "--format", "parquet", "--out", str(tmp_path / "y")]
    code, _, err = ragqual(head_db, args, capsys)
    assert code == 2 and "pip install -e '.[parquet]'" in err and "--format csv" in err
    assert not (tmp_path / "y").exists()


# -- baseline files are meant to be committed -------------------------------------------------------

def test_baseline_file_is_world_readable(head_db, store, tmp_path, capsys):
    run = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}}, fingerprint="b" * 64)
    old = os.umask(0o022)
    try:
        code, _, err = ragqual(head_db, ["baseline", "promote", str(run), "--dir", str(tmp_path)], capsys)
    finally:
        os.umask(old)
    assert code == 0, err
    path = tmp_path / ("b" * 12) / "retrieval.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


# -- report's params line ------------------------------------------------------------------------------

def test_report_params_line_summarises_case_ids(head_db, store, capsys):
    ids = [f"question-{i:04d}" for i in range(500)]
    run = generation_run(store, [{"case": "q1"}], params={"case_ids": ids, "variants": ["m1"], "k": 5})
    code, out, err = ragqual(head_db, ["report", str(run)], capsys)
    assert code == 0, err
    params_line = next(line for line in out.splitlines() if line.strip().startswith("params"))
    assert "question-0499" not in params_line and "500" in params_line and "question-0000" in params_line
    assert len(params_line) < 300
    code, out, _ = ragqual(head_db, ["report", str(run), "--format", "json"], capsys)
    assert json.loads(out)["header"]["params"]["k"] == 5


# -- a relative `db` in [tool.ragqual] ------------------------------------------------------------------

def test_relative_db_in_pyproject_is_beside_it_from_a_subfolder(head_db, store, generation, tmp_path, monkeypatch,
                                                                 capsys):
    from ragqual.cli.main import main

    project = tmp_path / "proj"
    (project / "corpus").mkdir(parents=True)
    store.engine.dispose()
    head_db.rename(project / "runs.db")
    (project / "pyproject.toml").write_text('[tool.ragqual]\ndb = "runs.db"\n', encoding="utf-8")
    monkeypatch.chdir(project / "corpus")
    with pytest.raises(SystemExit) as caught:
        main(["--json", "history"])
    out, err = capsys.readouterr()
    assert caught.value.code == 0, err
    assert [row["run_id"] for row in json.loads(out)] == [generation]
    assert not (project / "corpus" / "runs.db").exists()
