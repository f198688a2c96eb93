"""report, history, compare and audit read the same history on SQLite and PostgreSQL."""

import json

import pytest

from ragqual.cli.main import main
from ragqual.store.runstore import RunStore
from tests.store.test_queries import generation_run, retrieval_run


def _cli(url, capsys, *args):
    with pytest.raises(SystemExit) as caught:
        main(["--db", url, *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


@pytest.fixture
def filled(store_head_url):
    store = RunStore.open(store_head_url)
    base = generation_run(store, [{"case": f"q{i}", "score": 1.0, "passed": True, "metrics": {"correctness": 1.0}}
                                  for i in range(6)])
    worse = generation_run(store, [{"case": f"q{i}", "score": 0.0 if i < 3 else 1.0, "passed": i >= 3,
                                    "metrics": {"correctness": 0.0 if i < 3 else 1.0}} for i in range(6)])
    r1 = retrieval_run(store, {"hybrid": {f"g{i}": {"recall@5": 1.0, "mrr": 1.0} for i in range(4)}})
    r2 = retrieval_run(store, {"hybrid": {f"g{i}": {"recall@5": 1.0, "mrr": 0.5} for i in range(4)}})
    store.engine.dispose()
    return store_head_url, base, worse, r1, r2


def test_report_history_compare_audit(filled, capsys):
    url, base, worse, r1, r2 = filled
    code, out, _ = _cli(url, capsys, "report", str(base), "--format", "json")
    assert code == 0 and json.loads(out)["header"]["run_id"] == base
    code, out, _ = _cli(url, capsys, "history", "--format", "csv")
    assert code == 0 and len(out.strip().splitlines()) >= 5
    code, _, _ = _cli(url, capsys, "compare", str(base), str(worse), "--gate", "tolerance")
    assert code == 1  # correctness fell from 1.0 to 0.5
    code, _, _ = _cli(url, capsys, "compare", str(base), str(base))
    assert code == 0
    code, _, _ = _cli(url, capsys, "compare", str(r1), str(r2), "--gate", "tolerance")
    assert code == 1  # mrr fell from 1.0 to 0.5
    code, out, _ = _cli(url, capsys, "--json", "compare", str(base), str(worse))
    passed = next(r for r in json.loads(out)["metrics"] if r["metric"] == "pass")
    assert code == 0 and (passed["b"], passed["verdict"]) == (3, "inconclusive")  # 3 of 6: no evidence yet
    code, out, _ = _cli(url, capsys, "sql", "SELECT COUNT(*) AS n FROM trials", "--format", "csv")
    assert code == 0 and out.strip().splitlines()[-1] == "12"
    code, out, _ = _cli(url, capsys, "--json", "audit", "1")
    assert code == 0 and "weighted-assertions" in out
