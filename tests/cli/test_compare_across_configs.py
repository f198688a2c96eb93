"""`compare --across-configs`: two runs of the same goldens over another chunking are paired and
gated, with what differs printed; without the flag, and for baseline files, the fingerprint rule
stands."""

import json

import pytest

from .conftest import invoke, ragqual

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(workdir):
    ids = {}
    for tokens in ("256", "128"):
        result = invoke("--json", "retrieval", "--strategy", "hybrid", "--chunk-tokens", tokens)
        assert result.exit_code == 0, result.output
        ids[tokens] = json.loads(result.stdout)["run"]["run_id"]
    return ids


def test_without_the_flag_two_chunkings_are_refused(workdir, runs, capsys):
    code, _, err = ragqual(workdir / "eval-results" / "eval.db", ["compare", str(runs["256"]), str(runs["128"])], capsys)
    assert code == 2 and "corpus fingerprints differ" in err and "--across-configs" in err


def test_across_configs_gives_per_metric_verdicts_and_the_diff(workdir, runs, capsys):
    code, out, _ = ragqual(workdir / "eval-results" / "eval.db",
                           ["--json", "compare", str(runs["256"]), str(runs["128"]), "--across-configs"], capsys)
    assert code in (0, 1)
    doc = json.loads(out)
    assert "chunking.chunk_tokens: 256 -> 128" in doc["differences"]
    assert any(d.startswith("corpus_fingerprint: ") for d in doc["differences"])
    verdicts = {r["metric"]: r["verdict"] for r in doc["metrics"]}
    assert {"recall@5", "ndcg@10", "contextRecall", "precision@5"} <= set(verdicts)
    assert set(verdicts.values()) <= {"regression", "improvement", "equivalent", "inconclusive"}
    assert code == (1 if doc["header"]["regressions"] else 0)  # gated as usual
    text = invoke("compare", str(runs["256"]), str(runs["128"]), "--across-configs").output
    assert "settings that differ (BASE -> NEW)" in text


def test_a_baseline_file_is_never_paired_with_another_corpus(workdir, runs, tmp_path, capsys):
    db = workdir / "eval-results" / "eval.db"
    code, out, _ = ragqual(db, ["--json", "baseline", "promote", str(runs["256"]), "--dir", str(tmp_path)], capsys)
    assert code == 0, out
    (path,) = [p for p in tmp_path.rglob("*.json")]
    code, _, err = ragqual(db, ["compare", str(path), str(runs["128"]), "--across-configs"], capsys)
    assert code == 2 and "baseline file is never compared with another corpus" in err


def test_other_goldens_are_refused_even_across_configs(workdir, runs, capsys):
    other = invoke("--json", "retrieval", "--strategy", "hybrid", "--chunk-tokens", "128", "--tag", "water")
    assert other.exit_code == 0, other.output
    run_id = json.loads(other.stdout)["run"]["run_id"]
    code, _, err = ragqual(workdir / "eval-results" / "eval.db",
                           ["compare", str(runs["256"]), str(run_id), "--across-configs"], capsys)
    assert code == 2 and "the goldens differ" in err
