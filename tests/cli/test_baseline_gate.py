"""The gate CI would run: today's retrieval tier against the committed baseline of the bundled corpus."""

import json
import sqlite3
from pathlib import Path

from tests.cli.conftest import invoke

BASELINES = Path(__file__).resolve().parents[2] / "eval-results" / "baselines"


def test_committed_baseline_matches_the_bundled_corpus_and_today_passes_the_gate(workdir):
    files = sorted(BASELINES.glob("*/retrieval.json"))
    assert files, "no committed retrieval baseline under eval-results/baselines/"
    baseline = json.loads(files[-1].read_text())
    result = invoke("retrieval", "--strategy", "dense", "--strategy", "bm25", "--strategy", "hybrid")
    assert result.exit_code == 0, result.output
    run_id = sqlite3.connect(workdir / "eval-results" / "eval.db").execute("SELECT MAX(id) FROM runs").fetchone()[0]
    gate = invoke("compare", str(files[-1]), str(run_id), "--tolerance", "0.02")
    assert gate.exit_code == 0, gate.output
    assert baseline["corpus_fingerprint"].startswith(files[-1].parent.name)
