"""Readers use only rows a seal covers: a plain INSERT (every trigger in place) cannot forge a
report, a history line, a comparison, an export or a view, and `verify RUN` names such rows.

Two finished sentiment runs through the real CLI (mock model, 15 cases x 2 repeats: mean score
0.773, pass rate 0.667), then 30 `trial_scores` rows and 30 `metric_values` rows of a perfect
scoring inserted into run 2 with plain SQL, as the issue did with the sqlite3 shell.
"""

from __future__ import annotations

import csv
import json

import pytest

from ragqual.cli.main import main
from tests.cli.test_run_rescore_audit import BASELINE_MEAN, write_v2
from tests.store.conftest import raw_connect

PASS_RATE = 10 / 15
FORGED = 30


def ragqual(url: str, args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(["--db", url, *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def _sql(url: str, *statements: str) -> list[tuple]:
    con = raw_connect(url)
    try:
        rows: list[tuple] = []
        for statement in statements:
            cursor = con.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
        con.commit()
        return rows
    finally:
        con.close()


def forge(url: str, run_id: int) -> None:
    """A perfect score and label_correct = 1 for every trial of the run, by plain INSERTs."""
    _sql(url,
         "INSERT INTO trial_scores (trial_id, batch, scorer_name, scorer_version, score, perfect, per_category, "
         "created_at) SELECT t.id, 'forged', s.scorer_name, s.scorer_version, 1.0, TRUE, s.per_category, s.created_at "
         f"FROM trials t JOIN trial_scores s ON s.trial_id = t.id WHERE t.run_id = {run_id}",
         "INSERT INTO metric_values (run_id, trial_id, case_id, group_key, metric, value, scorer_version, created_at) "
         "SELECT m.run_id, m.trial_id, m.case_id, m.group_key, m.metric, 1.0, m.scorer_version, m.created_at "
         f"FROM metric_values m WHERE m.run_id = {run_id}")


@pytest.fixture
def two_runs(store_head_url, tmp_path, monkeypatch, capsys) -> str:
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):
        code, _, err = ragqual(store_head_url, ["run", "--subject", "sentiment", "--model", "mock",
                                                "--trial-count", "2"], capsys)
        assert code == 0, err
    return store_head_url


def _group(url: str, run_id: int, capsys) -> tuple[dict, str]:
    code, out, err = ragqual(url, ["report", str(run_id), "--format", "json"], capsys)
    assert code == 0, err
    body = json.loads(out)
    return body, err


def _failing(url: str, capsys) -> int:
    code, out, err = ragqual(url, ["report", "2", "--failures", "--format", "json"], capsys)
    assert code == 0, err
    return int(json.loads(out)["header"]["failing_trials"])


def test_forged_rows_change_no_report_and_are_named(two_runs, capsys):
    url = two_runs
    before, err = _group(url, 2, capsys)
    (group,) = before["groups"]
    assert (group["score"], group["pass_rate"], group["label_correct"]) == (
        pytest.approx(BASELINE_MEAN), pytest.approx(PASS_RATE), pytest.approx(PASS_RATE))
    assert "unsealed_rows" not in before["header"] and "seal" not in err
    failing = _failing(url, capsys)
    assert failing == 10  # 5 of 15 cases fail, twice each
    forge(url, 2)
    assert _failing(url, capsys) == failing

    after, err = _group(url, 2, capsys)
    assert after["groups"] == before["groups"]
    assert after["header"]["unsealed_rows"] == {"metric_values": FORGED, "trial_scores": FORGED}
    assert "run 2 has 60 row(s) no seal covers" in err and "ragqual verify 2" in err
    _, err = _group(url, 1, capsys)
    assert err == ""  # run 1 was not touched

    code, out, err = ragqual(url, ["history", "--format", "json"], capsys)
    assert code == 0, err
    rows = {r["run_id"]: r for r in json.loads(out)}
    assert rows[2]["score"] == pytest.approx(BASELINE_MEAN) and rows[2]["pass"] == pytest.approx(PASS_RATE)
    assert rows[2]["unsealed_rows"] == 60 and rows[1]["unsealed_rows"] == 0
    assert "run 2 has 60 row(s) no seal covers" in err

    code, out, err = ragqual(url, ["--json", "compare", "1", "2"], capsys)
    assert code == 0, err
    metrics = {r["metric"]: r for r in json.loads(out)["metrics"]}
    assert metrics["score"]["delta"] == pytest.approx(0.0) and metrics["pass"]["delta"] == pytest.approx(0.0)
    assert json.loads(out)["header"]["new"]["unsealed_rows"] == {"metric_values": FORGED, "trial_scores": FORGED}
    assert "run 2 has 60 row(s) no seal covers" in err

    code, out, err = ragqual(url, ["report", "2", "--format", "html"], capsys)
    assert code == 0 and "no seal covers" in out

    code, out, err = ragqual(url, ["sql", "--format", "csv",
                                   "SELECT AVG(score) AS s, COUNT(*) AS n FROM v_trials WHERE run_id = 2"], capsys)
    assert code == 0, err
    mean, n = out.strip().splitlines()[-1].split(",")
    assert (float(mean), int(n)) == (pytest.approx(BASELINE_MEAN), 30)
    code, out, err = ragqual(url, ["sql", "--format", "csv", "SELECT mean FROM v_metric_means WHERE run_id = 2 "
                                   "AND metric = 'label_correct'"], capsys)
    assert code == 0 and float(out.strip().splitlines()[-1]) == pytest.approx(PASS_RATE)
    code, out, err = ragqual(url, ["sql", "--format", "csv", "SELECT COUNT(*) FROM v_case_metrics "
                                   "WHERE run_id = 2"], capsys)
    assert code == 0 and int(out.strip().splitlines()[-1]) == 30


def test_export_leaves_forged_rows_out(two_runs, capsys, tmp_path):
    url = two_runs
    forge(url, 2)
    code, out, err = ragqual(url, ["export", "2", "--format", "csv", "--out", str(tmp_path / "x")], capsys)
    assert code == 0, err
    with (tmp_path / "x" / "trials.csv").open() as handle:
        scores = [float(r["score"]) for r in csv.DictReader(handle)]
    assert len(scores) == 30 and sum(scores) / 30 == pytest.approx(BASELINE_MEAN)
    with (tmp_path / "x" / "metric_values.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 30
    assert "run 2 has 60 row(s) no seal covers" in err


def test_verify_run_names_unsealed_rows(two_runs, capsys):
    url = two_runs
    code, out, _ = ragqual(url, ["--json", "verify", "2"], capsys)
    assert code == 0
    head = json.loads(out)["head"]
    forge(url, 2)
    code, out, err = ragqual(url, ["verify", "2", "--expect", head], capsys)
    assert code == 1
    assert "rows no seal covers (left out by every reader): 30 in metric_values, 30 in trial_scores" in out
    assert "trial_scores row" in out and "inserted: a row of run 2 no seal covers" in out
    code, out, _ = ragqual(url, ["--json", "verify", "2"], capsys)
    findings = json.loads(out)["findings"]
    assert sum(f["kind"] == "inserted" and f["table"] == "trial_scores" for f in findings) == FORGED
    assert ragqual(url, ["verify", "1"], capsys)[0] == 0  # the other run is intact


def test_a_forged_seal_span_is_caught_by_verify(two_runs, capsys):
    """Covering the forged rows with a forged span fools readers only until `verify` runs."""
    url = two_runs
    forge(url, 2)
    (high,) = _sql(url, "SELECT MAX(id) FROM trial_scores")[0]
    (seal,) = _sql(url, "SELECT MAX(id) FROM seals")[0]
    _sql(url, "INSERT INTO seal_spans (seal_id, table_name, first_id, last_id) "
              f"VALUES ({seal}, 'trial_scores', {high - FORGED + 1}, {high})")
    code, out, _ = ragqual(url, ["--json", "verify", "2"], capsys)
    assert code == 1
    kinds = {(f["kind"], f["table"]) for f in json.loads(out)["findings"]}
    assert ("inserted", "trial_scores") in kinds and ("seal", "seal_spans") in kinds


def test_a_rescore_is_sealed_and_still_changes_what_readers_show(two_runs, capsys, tmp_path):
    url = two_runs
    path, _ = write_v2(tmp_path)
    code, _, err = ragqual(url, ["rescore", "2", "--assertions-from", str(path)], capsys)
    assert code == 0, err
    after, err = _group(url, 2, capsys)
    assert after["groups"][0]["score"] == pytest.approx(BASELINE_MEAN + 2 * 0.6 / 30)
    assert "unsealed_rows" not in after["header"] and err == ""
    assert ragqual(url, ["verify", "2"], capsys)[0] == 0
