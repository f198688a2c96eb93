"""The statistical gate on the bundled corpus and goldens, with the mock model (no service)."""

import json
import sqlite3

import pytest

from ragqual.core.stats import mcnemar_exact
from tests.cli.conftest import invoke, ragqual

pytestmark = pytest.mark.slow


def _generation(workdir, *extra: str) -> int:
    result = invoke("generation", "--model", "mock", "--mode", "e2e", "--repeats", "1", *extra)
    assert result.exit_code == 0, result.output
    db = sqlite3.connect(workdir / "eval-results" / "eval.db")
    return db.execute("SELECT MAX(id) FROM runs").fetchone()[0]


def _rows(out: str) -> dict[str, dict]:
    return {r["metric"]: r for r in json.loads(out)["metrics"]}


def _compare(workdir, capsys, *args: str) -> tuple[int, str, str]:
    """The real entry point, so a failed gate is its exit code."""
    return ragqual(workdir / "eval-results" / "eval.db", ["--json", "compare", *args], capsys)


@pytest.fixture(scope="module")
def runs(workdir):
    return {"k5": _generation(workdir, "--context-k", "5"), "k1": _generation(workdir, "--context-k", "1"),
            "cut": _generation(workdir, "--threshold", "0.5")}


def test_a_run_compared_with_itself_exits_0(runs, workdir, capsys):
    code, out, err = _compare(workdir, capsys, str(runs["k5"]), str(runs["k5"]))
    assert code == 0, err
    assert {r["verdict"] for r in _rows(out).values()} <= {"equivalent", "inconclusive"}


def test_context_k_1_against_5_is_a_regression_of_what_the_model_was_given(runs, workdir, capsys):
    # With one chunk of context the golden's relevant documents and facts are missing from the
    # context of many questions: contextRecall, factCoverage and with them the reader ceiling regress
    # (exit 1). The mock's pass
    # share drops too, but it also gains near-miss questions (fewer competing numbers), so over 171
    # questions the exact McNemar test cannot tell that drop from noise: `inconclusive`, with an MDE
    # above it. The tolerance gate fails it on pass alone.
    code, out, err = _compare(workdir, capsys, str(runs["k5"]), str(runs["k1"]))
    rows = _rows(out)
    assert code == 1 and "REGRESSION" in err
    for metric in ("contextRecall", "factCoverage"):
        row = rows[metric]
        assert row["verdict"] == "regression" and row["test"] == "randomization", row
        assert row["base_mean"] == 1.0 and row["delta"] < -0.02 and row["p_adjusted"] < 0.05
        assert row["n"] < 171  # out-of-corpus questions have no relevant documents or facts
    passed = rows["pass"]
    assert passed["n"] == 171 and passed["b"] > passed["c"] and passed["delta"] < -0.02
    assert passed["p_value"] == mcnemar_exact(passed["b"], passed["c"]) > 0.05
    assert passed["verdict"] == "inconclusive" and passed["mde"] > abs(passed["delta"])
    assert {m for m, r in rows.items() if r["verdict"] == "regression"} == {"contextRecall", "factCoverage",
                                                                            "readerCeiling"}
    assert rows["readerCeiling"]["test"] == "mcnemar-exact" and rows["readerCeiling"]["p_adjusted"] < 0.05
    code, _, err = _compare(workdir, capsys, str(runs["k5"]), str(runs["k1"]), "--gate", "tolerance")
    assert code == 1 and "mock/e2e pass (-0.041)" in err


def test_a_similarity_cut_off_that_starves_the_context_is_a_regression_with_exit_1(runs, workdir, capsys):
    code, out, err = _compare(workdir, capsys, str(runs["k5"]), str(runs["cut"]))
    rows = _rows(out)
    assert code == 1 and "REGRESSION" in err
    regressed = [m for m, r in rows.items() if r["verdict"] == "regression"]
    assert regressed and all(rows[m]["p_adjusted"] < 0.05 and rows[m]["delta"] < -0.02 for m in regressed)
