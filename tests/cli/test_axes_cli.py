"""`--axis` on run, generation and matrix; `report --by axis:NAME`; matrix's axis columns."""

import json

import pytest

from tests.cli.conftest import invoke
from ragqual.cli.matrix_cmd import capability_table
from ragqual.store.generation_reads import ModeLine


def _exit(capsys, *args):
    """The real entry point (errors become one line and an exit code): (code, stderr)."""
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(list(args))
    return caught.value.code, capsys.readouterr().err


def test_run_crosses_the_axes_and_report_groups_by_one(workdir, capsys):
    result = invoke("--json", "run", "--subject", "sentiment", "--axis", "temperature=0,0.7", "--axis",
                    "prompt=v1,v2", "--trial-count", "1")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert sorted(v["variant"] for v in body["variants"]) == [
        "mock temperature=0 prompt=v1", "mock temperature=0 prompt=v2",
        "mock temperature=0.7 prompt=v1", "mock temperature=0.7 prompt=v2"]
    report = json.loads(invoke("--json", "report", str(body["run_id"]), "--by", "axis:prompt").stdout)
    assert [(g["axis:prompt"], g["trials"]) for g in report["groups"]] == [("v1", 30), ("v2", 30)]
    code, err = _exit(capsys, "report", str(body["run_id"]), "--by", "axis:context_k")
    assert code == 2 and "has no axis 'context_k': its axes are model, num_predict, prompt" in err


def test_an_unknown_axis_or_value_is_refused_naming_the_subjects_axes(workdir, capsys):
    code, err = _exit(capsys, "run", "--subject", "sentiment", "--axis", "context_k=1,3")
    assert code == 2 and "its axes are model, temperature, seed, num_predict, prompt" in err
    code, err = _exit(capsys, "generation", "--axis", "strategy=magic", "--limit", "1")
    assert code == 2 and "allowed: dense, bm25, hybrid" in err


def test_generation_over_axes_stores_them_and_matrix_shows_a_column_each(workdir):
    result = invoke("--json", "generation", "--axis", "context_k=1,3", "--mode", "oracle", "--limit", "2",
                    "--repeats", "1")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    table = invoke("matrix", "--run", str(run_id)).stdout
    assert "| model | context_k | oracle correct" in table
    assert "| mock | 1 |" in table and "| mock | 3 |" in table
    # a declared axis enters the key even where the request is the same (oracle ignores retrieval)
    again = json.loads(invoke("--json", "generation", "--axis", "context_k=1,5", "--mode", "oracle", "--limit", "2",
                              "--repeats", "1").stdout)
    assert (again["cache_hits"], again["model_calls"]) == (2, 2)


def test_the_capability_table_has_a_column_per_varied_axis_only():
    line = ModeLine("mock t", "e2e", 1.0, 1.0, 1.0, 0, 1)
    other = ModeLine("mock u", "e2e", 0.5, 1.0, 0.5, 0, 1)
    axes = {"mock t": {"model": "mock", "temperature": 0, "seed": 42},
            "mock u": {"model": "mock", "temperature": 0.7, "seed": 42}}
    rows = capability_table([line, other], ["e2e"], axes).splitlines()
    assert rows[0] == "| model | temperature | e2e correct | e2e refusal | e2e pass |"
    assert rows[3] == "| mock | 0.7 | 0.500 | 1.000 | 0.500 |"
