"""`--name` and `--tag key=value` on the commands that record runs: stored with the run, shown by
`history` (with what changed since the previous run of the same kind), `compare`, `report` and
the pages; bad labels refused before anything runs; a resumed run keeps its label."""

import json
import sqlite3

import pytest

from .conftest import invoke, ragqual

pytestmark = pytest.mark.slow

RETRIEVAL = ["retrieval", "--strategy", "hybrid", "--limit", "12"]
GENERATION = ["generation", "--limit", "3", "--repeats", "1"]


def _db(workdir):
    return workdir / "eval-results" / "eval.db"


def _run(*args):
    result = invoke("--json", *args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return doc["run"]["run_id"] if "run" in doc else doc["run_id"]


@pytest.fixture(scope="module")
def runs(workdir):
    """Two retrieval runs with a generation run between them, then two more generation runs."""
    return {
        "chunks-256": _run(*RETRIEVAL, "--name", "chunks-256", "--tag", "dataset=v1", "--tag", "owner=ana"),
        "e2e-k5": _run(*GENERATION, "--name", "e2e-k5", "--tag", "model=mock"),
        "chunks-128": _run(*RETRIEVAL, "--chunk-tokens", "128", "--name", "chunks-128", "--tag", "dataset=v1"),
        "e2e-k3": _run(*GENERATION, "--context-k", "3", "--name", "e2e-k3"),
        "e2e-k1": _run(*GENERATION, "--context-k", "1", "--name", "e2e-k1"),
    }


def _history_rows(*args):
    result = invoke("history", "--limit", "0", *args)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def _row(lines, name):
    (line,) = [ln for ln in lines if f" {name} " in ln]
    return line


def test_history_shows_names_tags_and_what_changed_since_the_previous_run_of_its_kind(runs):
    lines = _history_rows()
    assert "name" in lines[0] and "tags" in lines[0] and "changed" in lines[0]
    assert "dataset=v1 owner=ana" in _row(lines, "chunks-256")
    # the previous *retrieval* run, not the generation run recorded between them
    assert "chunking.chunk_tokens 256->128" in _row(lines, "chunks-128")
    generation = _history_rows("--kind", "generation")
    assert "retrieval.context_k 5->3" in _row(generation, "e2e-k3")
    assert "retrieval.context_k 3->1" in _row(generation, "e2e-k1")
    assert _row(generation, "e2e-k5").rstrip().endswith(" -")  # the first generation run: nothing before it


def test_history_json_carries_name_tags_and_every_change_in_full(runs):
    result = invoke("history", "--limit", "0", "--format", "json")
    rows = {r["run_id"]: r for r in json.loads(result.stdout)}
    first, second = rows[runs["chunks-256"]], rows[runs["chunks-128"]]
    assert first["name"] == "chunks-256" and first["tags"] == {"dataset": "v1", "owner": "ana"}
    assert first["previous_run"] is None and first["changed"] == []
    assert second["name"] == "chunks-128" and second["tags"] == {"dataset": "v1"}
    assert second["previous_run"] == runs["chunks-256"]
    assert "chunking.chunk_tokens: 256 -> 128" in second["changed"]
    assert any(c.startswith("corpus_fingerprint: ") for c in second["changed"])
    assert not any(c.startswith(("name", "tags")) for c in second["changed"])  # a label is not a setting
    k1 = rows[runs["e2e-k1"]]
    assert k1["previous_run"] == runs["e2e-k3"] and k1["changed"] == ["retrieval.context_k: 3 -> 1"]
    assert rows[runs["e2e-k5"]]["tags"] == {"model": "mock"} and rows[runs["e2e-k3"]]["tags"] == {}


def test_history_csv_holds_tags_and_changes_as_json_text(runs):
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(invoke("history", "--limit", "0", "--format", "csv").stdout)))
    (row,) = [r for r in rows if r["name"] == "chunks-128"]
    assert json.loads(row["tags"]) == {"dataset": "v1"} and "chunking.chunk_tokens: 256 -> 128" in json.loads(row["changed"])


def test_three_e2e_runs_are_told_apart_by_name_in_compare(runs):
    text = invoke("compare", str(runs["e2e-k3"]), str(runs["e2e-k1"])).stdout
    assert f'BASE run {runs["e2e-k3"]} "e2e-k3" -> NEW run {runs["e2e-k1"]} "e2e-k1"' in text
    assert "retrieval.context_k: 3 -> 1" in text
    doc = json.loads(invoke("--json", "compare", str(runs["e2e-k5"]), str(runs["e2e-k1"])).stdout)
    assert doc["header"]["base"]["name"] == "e2e-k5" and doc["header"]["base"]["tags"] == {"model": "mock"}
    assert doc["header"]["new"]["name"] == "e2e-k1" and doc["header"]["new"]["tags"] == {}
    assert "retrieval.context_k: 5 -> 1" in doc["differences"]


def test_report_names_the_run_and_diffs_it_against_the_previous_run_of_its_kind(runs):
    text = invoke("report", str(runs["e2e-k1"])).stdout
    assert text.startswith(f'Run {runs["e2e-k1"]} "e2e-k1" (generation')
    assert f'settings changed since run {runs["e2e-k3"]} (the previous generation run)' in text
    assert "retrieval.context_k" in text
    doc = json.loads(invoke("report", str(runs["chunks-128"]), "--format", "json").stdout)
    assert doc["header"]["name"] == "chunks-128" and doc["header"]["tags"] == {"dataset": "v1"}
    assert doc["header"]["previous_run"] == runs["chunks-256"]
    assert "name" not in doc["header"]["params"]  # the label has its own lines
    (section,) = [k for k in doc if k.startswith("settings changed since run")]
    assert {"setting": "chunking.chunk_tokens", "previous run": "256", "this run": "128"} in doc[section]
    first = invoke("report", str(runs["chunks-256"])).stdout
    assert "the first retrieval run: no earlier one" in first


def test_the_run_and_compare_pages_show_names_and_the_diff(runs):
    run_page = invoke("report", str(runs["chunks-128"]), "--format", "html").stdout
    assert "chunks-128" in run_page and "settings changed since run" in run_page and "chunking.chunk_tokens" in run_page
    compare_page = invoke("compare", str(runs["e2e-k3"]), str(runs["e2e-k1"]), "--format", "html").stdout
    assert "e2e-k3" in compare_page and "e2e-k1" in compare_page and "retrieval.context_k: 3 -&gt; 1" in compare_page


def test_the_history_page_colours_each_named_run_by_its_name(runs):
    from tests.reports.pages import chart_spec, inline_records

    result = invoke("history", "--limit", "0", "--format", "html")
    assert result.exit_code == 0, result.output
    series = {r["series"] for r in inline_records(chart_spec(result.stdout, "history-0"))}
    assert series and series <= set(runs) | {"retrieval", "generation"}
    assert series & set(runs)  # the names given with --name, not only the kinds

def _run_count(workdir):
    with sqlite3.connect(_db(workdir)) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


@pytest.mark.parametrize("args, flag", [
    (["retrieval", "--tag", "bad key=1"], "--tag 'bad key=1'"),
    (["retrieval", "--name", "  "], "--name"),
    (["generation", "--limit", "1", "--tag", "team="], "--tag team="),
    (["eval", "--limit", "1", "--tag", "a=1", "--tag", "a=2"], "--tag a"),
    (["run", "--subject", "sentiment", "--tag", "dataset"], "--tag 'dataset'"),
    (["sweep", "--tag", "=v"], "--tag '=v'"),
    (["matrix", "--models", "mock", "--tag", "team"], "--tag 'team'"),
    (["matrix", "--run", "1", "--name", "x"], "--name and --tag"),
])
def test_bad_labels_exit_2_with_one_line_and_record_nothing(runs, workdir, capsys, args, flag):
    before = _run_count(workdir)
    code, out, err = ragqual(_db(workdir), args, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and flag in err, err
    assert _run_count(workdir) == before


def test_a_resumed_run_keeps_its_name_and_tags(runs, workdir, capsys):
    run_id = runs["e2e-k5"]
    code, _, err = ragqual(_db(workdir), ["generation", "--resume", str(run_id), "--name", "renamed"], capsys)
    assert code == 2 and f"--name renamed (run {run_id} has e2e-k5)" in err
    code, _, err = ragqual(_db(workdir), ["generation", "--resume", str(run_id), "--tag", "model=other"], capsys)
    assert code == 2 and f"--tag model=other (run {run_id} has model=mock)" in err
    code, _, err = ragqual(_db(workdir), ["generation", "--resume", str(run_id), "--name", "e2e-k5",
                                          "--tag", "model=mock"], capsys)
    assert code == 0, err
    code, _, _ = ragqual(_db(workdir), ["generation", "--resume", str(run_id)], capsys)
    assert code == 0
    rows = {r["run_id"]: r for r in json.loads(invoke("history", "--limit", "0", "--format", "json").stdout)}
    assert rows[run_id]["name"] == "e2e-k5" and rows[run_id]["tags"] == {"model": "mock"}


def test_a_resumed_subject_run_keeps_its_name(workdir, capsys):
    code, out, err = ragqual(_db(workdir), ["--json", "run", "--subject", "sentiment", "--trial-count", "1",
                                            "--case-slugs", "pos-love-phone", "--name", "sentiment-a",
                                            "--tag", "suite=smoke"], capsys)
    assert code == 0, err
    run_id = int(json.loads(out)["run_id"])
    code, _, err = ragqual(_db(workdir), ["run", "--resume", str(run_id), "--name", "sentiment-b"], capsys)
    assert code == 2 and f"--name sentiment-b (run {run_id} has sentiment-a)" in err
    code, _, err = ragqual(_db(workdir), ["run", "--resume", str(run_id), "--tag", "suite=smoke"], capsys)
    assert code == 0, err


def test_the_python_api_names_and_tags_a_run(workdir):
    import ragqual as rq
    from ragqual.errors import InputError

    project = rq.Project(".")
    result = project.retrieval(strategies=["hybrid"], limit=5, name="from-python", run_tags={"via": "api"})
    with project.history() as history:
        info = history.run(result.run_id)
    assert info.label.name == "from-python" and info.label.tag_dict() == {"via": "api"}
    with pytest.raises(InputError, match="--tag"):
        project.retrieval(strategies=["hybrid"], limit=5, run_tags={"bad key": "x"})


@pytest.mark.parametrize("args, runs_recorded", [
    (["matrix", "--models", "mock", "--limit", "2"], 1),
    (["sweep", "--strategies", "hybrid", "--candidate-k", "20", "--context-k", "5"], 1),
    (["eval", "--limit", "2", "--repeats", "1"], 2),
    (["run", "--subject", "sentiment", "--case-slugs", "pos-love-phone", "--trial-count", "1"], 1),
])
def test_every_command_that_records_a_run_stores_its_label(runs, workdir, capsys, args, runs_recorded):
    before = _run_count(workdir)
    code, _, err = ragqual(_db(workdir), [*args, "--name", f"{args[0]}-named", "--tag", "via=cli"], capsys)
    assert code == 0, err
    with sqlite3.connect(_db(workdir)) as conn:
        rows = conn.execute("SELECT params FROM runs WHERE id > ?", (before,)).fetchall()
    assert len(rows) == runs_recorded
    for (params,) in rows:
        stored = json.loads(params)
        assert stored["name"] == f"{args[0]}-named" and stored["tags"] == {"via": "cli"}
