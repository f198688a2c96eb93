"""`ragqual compare` of two baseline files whose binary metric flipped on more than 1,024 questions:
the exact McNemar test gives scipy's p-value and the gate its verdict, never a traceback."""

from __future__ import annotations

import json

import pytest
from scipy import stats as sp

from tests.cli.conftest import ragqual
from tests.store.test_queries import FP, retrieval_run

QUESTIONS = 1_100
ONES_IN_BASE = 600  # base holds hit@5 on 600 questions, new on the other 500: every question flips


@pytest.fixture
def baselines(store, head_db, tmp_path, capsys):
    """Two baseline files written by `ragqual baseline promote`, one per retrieval run."""
    base_values = {f"q{i:04d}": {"hit@5": 1.0 if i < ONES_IN_BASE else 0.0} for i in range(QUESTIONS)}
    new_values = {q: {"hit@5": 1.0 - v["hit@5"]} for q, v in base_values.items()}
    paths = []
    for name, values in (("base", base_values), ("new", new_values)):
        run = retrieval_run(store, {"dense": values})
        code, _, err = ragqual(head_db, ["baseline", "promote", str(run), "--dir", str(tmp_path / name)], capsys)
        assert code == 0, err
        paths.append(str(tmp_path / name / FP[:12] / "retrieval.json"))
    return paths


def test_a_worse_new_file_is_a_regression_with_scipys_p_value_and_a_better_one_passes(baselines, tmp_path, capsys):
    base, new = baselines
    no_db = tmp_path / "none" / "eval.db"
    code, out, err = ragqual(no_db, ["--json", "compare", base, new, "--metric", "hit@5"], capsys)
    assert code == 1, err
    assert "Traceback" not in err
    [row] = json.loads(out)["metrics"]
    assert (row["test"], row["b"], row["c"], row["verdict"]) == ("mcnemar-exact", 600, 500, "regression")
    expected = sp.binomtest(500, QUESTIONS, 0.5).pvalue
    assert row["p_value"] == pytest.approx(expected, rel=1e-12)
    assert row["p_value"] == pytest.approx(0.0028, abs=5e-5)

    # the same files the other way round: an improvement, and the gate passes
    code, out, err = ragqual(no_db, ["--json", "compare", new, base, "--metric", "hit@5"], capsys)
    assert code == 0, err
    [row] = json.loads(out)["metrics"]
    assert (row["b"], row["c"], row["verdict"]) == (500, 600, "improvement")
