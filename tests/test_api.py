"""The Python API (`ragqual.open_history`): the CLI's rows as DataFrames, and the example of docs/how-to/sql-and-pandas.md."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ragqual.errors import InputError
from ragqual.store.records import AssertionRow, ScoreRow
from ragqual.store.runstore import RunStore
from tests.store.test_queries import FP, generation_run, retrieval_run

REPO = Path(__file__).resolve().parents[1]
PROVENANCE = ["run_id", "git_sha", "git_dirty", "corpus_fingerprint", "dataset_hash", "ragqual_version"]


@pytest.fixture
def history_db(head_db):
    """Two generation runs (q1 in both) and one retrieval run, through the real store."""
    store = RunStore.open(f"sqlite:///{head_db}")
    first = generation_run(store, [{"case": "q1"}, {"case": "q2", "score": 0.0, "passed": False}])
    second = generation_run(store, [{"case": "q1", "score": 0.5, "passed": False, "metrics": {"correctness": 0.0}},
                                    {"case": "q1", "repeat": 1, "metrics": {"correctness": 1.0}}])
    retrieval = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}})
    store.engine.dispose()
    return head_db, first, second, retrieval


def test_package_import_is_lazy():
    code = "import sys, ragqual; print('pandas' in sys.modules, 'sqlalchemy' in sys.modules, 'ragqual.api' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]
    import ragqual

    assert callable(ragqual.open_history) and ragqual.History.__name__ == "History"
    with pytest.raises(AttributeError):
        ragqual.no_such_name  # noqa: B018


def test_runs_lists_every_run_oldest_first(history_db):
    import ragqual

    db, first, second, retrieval = history_db
    with ragqual.open_history(str(db)) as history:
        runs = history.runs()
        assert runs["run_id"].tolist() == [first, second, retrieval]
        assert runs["kind"].tolist() == ["generation", "generation", "retrieval"]
        assert history.runs(kind="generation", limit=1)["run_id"].tolist() == [second]


def test_trials_carry_provenance_and_newest_scores(history_db):
    import ragqual

    db, first, _, _ = history_db
    with ragqual.open_history(f"sqlite:///{db}") as history:
        trials = history.trials(first)
    assert set(PROVENANCE) <= set(trials.columns)
    assert trials["case_id"].tolist() == ["q1", "q2"] and trials["score"].tolist() == [1.0, 0.0]
    assert set(trials["corpus_fingerprint"]) == {FP} and set(trials["git_sha"]) == {"abc123"}
    assert set(trials["ragqual_version"]) == {"0.1.0"}


def test_scores_and_assertions_keep_every_scoring(history_db):
    import ragqual

    db, first, _, _ = history_db
    store = RunStore.open(f"sqlite:///{db}")
    with ragqual.open_history(str(db)) as history:
        q2 = int(history.trials(first).set_index("case_id").loc["q2", "trial_id"])
        store.append_rescoring(first, q2, "q2", "e2e", [AssertionRow("a1", 2, "correctness", 1.0, True, "now found")],
                               [ScoreRow("weighted-assertions", 2, 1.0, True, {"correctness": 1.0})],
                               {"correctness": 1.0}, 2)
        store.engine.dispose()
        scores = history.scores(first)
        assertions = history.assertions(first)
        metrics = history.metrics(first)
        trials = history.trials(first)
    assert set(PROVENANCE) <= set(scores.columns) and set(PROVENANCE) <= set(assertions.columns)
    mine = scores[scores["trial_id"] == q2]
    assert mine["scorer_version"].tolist() == [1, 2] and mine["score"].tolist() == [0.0, 1.0]
    assert mine["batch"].nunique() == 2 and set(mine["case_id"]) == {"q2"} and set(mine["mode"]) == {"e2e"}
    verdicts = assertions[assertions["trial_id"] == q2]
    assert verdicts["passed"].tolist() == [False, True] and verdicts["detail"].tolist()[-1] == "now found"
    assert len(scores) == 3 and len(assertions) == 3
    assert trials.set_index("case_id").loc["q2", "score"] == 1.0  # the newest scoring
    assert sorted(metrics[metrics["trial_id"] == q2]["scorer_version"].tolist()) == [2]


def test_case_history_follows_one_question(history_db):
    import ragqual

    db, first, second, retrieval = history_db
    with ragqual.open_history(str(db)) as history:
        frame = history.case_history("q1")
        assert frame["run_id"].tolist() == [first, second, retrieval]
        assert frame["pass"].tolist()[:2] == [1.0, 0.5]
        with pytest.raises(InputError, match="no run in the history holds question 'nope'"):
            history.case_history("nope")


def test_unknown_run_and_missing_database_are_clear(history_db, tmp_path):
    import ragqual

    db, *_ = history_db
    with ragqual.open_history(str(db)) as history, pytest.raises(InputError, match="no run with id 999"):
        history.trials(999)
    missing = tmp_path / "nowhere" / "eval.db"
    with pytest.raises(InputError, match="no history database at"):
        ragqual.open_history(str(missing))
    assert not missing.parent.exists()


def readme_example() -> str:
    text = (REPO / "docs" / "how-to" / "sql-and-pandas.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return next(block for block in blocks if "open_history" in block)


def test_readme_example_runs_against_a_project_history(history_db, tmp_path, monkeypatch):
    db, first, second, _ = history_db
    project = tmp_path / "project"
    (project / "eval-results").mkdir(parents=True)
    db.rename(project / "eval-results" / "eval.db")
    monkeypatch.chdir(project)
    namespace: dict = {}
    exec(compile(readme_example(), "docs/how-to/sql-and-pandas.md", "exec"), namespace)  # noqa: S102
    assert namespace["run_id"] == second
    assert isinstance(namespace["trials"], pd.DataFrame) and len(namespace["trials"]) == 2
    assert namespace["by_group"].loc[("m1", "e2e")] == 0.75
    assert namespace["failed"].to_dict() == {"correctness": 1}
    assert namespace["wide"].loc["q1", "correctness"] == 0.5
    assert namespace["across_runs"]["run_id"].tolist()[:2] == [first, second]


# -- Project -------------------------------------------------------------------------------------------

def test_project_reads_its_tool_ragqual_db(history_db, tmp_path):
    import ragqual

    db, first, second, retrieval = history_db
    project = tmp_path / "proj"
    project.mkdir()
    db.rename(project / "runs.db")
    (project / "pyproject.toml").write_text('[tool.ragqual]\ndb = "runs.db"\n', encoding="utf-8")
    with ragqual.Project(project).history() as history:
        assert history.runs()["run_id"].tolist() == [first, second, retrieval]
    with pytest.raises(InputError, match="no history database at"):
        ragqual.Project(tmp_path / "empty").history()


def test_project_rescore_appends_a_scoring_like_the_cli(head_db, tmp_path, monkeypatch):
    import ragqual
    from ragqual.adapters.cache import ResponseCache
    from ragqual.engine import loop
    from ragqual.engine.services import services_for
    from ragqual.engine.subject import Variant
    from tests.engine.support import ToySubject, echo_case

    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "proj"
    (project / "eval-results").mkdir(parents=True)
    target = project / "eval-results" / "eval.db"
    head_db.rename(target)
    subject = ToySubject([echo_case("kept", "x"), echo_case("lost", "y", expected="z")])  # "toy": not registered
    store = RunStore.open(f"sqlite:///{target}")
    loop.run(subject, [Variant("mock", "mock")], subject.cases(), store=store,
             services=services_for(subject, ResponseCache(None, "off")), argv=["toy"])
    store.engine.dispose()

    result = ragqual.Project(project).rescore(1)

    assert (result.run_id, result.summary.trials, result.summary.rescored, result.summary.changed) == (1, 2, 2, 0)
    assert result.summary.mean_before == result.summary.mean_after == 0.75
    assert "subject 'toy' is not in the registry here" in result.note
    frame = result.to_frame()
    assert sorted(frame["score"].tolist()) == [0.5, 1.0] and set(frame["run_id"]) == {1}
    with ragqual.open_history(str(target)) as history:
        assert len(history.scores(1)) == 4  # the first scoring and the rescoring, both kept
    with pytest.raises(InputError, match="no run with id 9"):
        ragqual.Project(project).rescore(9)


def test_project_report_is_the_cli_report(history_db, tmp_path, capsys):
    import json

    import ragqual
    from ragqual.cli.main import main

    db, first, second, retrieval = history_db
    project = tmp_path / "proj"
    (project / "eval-results").mkdir(parents=True)
    db.rename(project / "eval-results" / "eval.db")
    report = ragqual.Project(project).report(second)
    assert report.run_id == second
    groups = report.to_frame()
    assert groups[["variant", "mode", "trials"]].values.tolist() == [["m1", "e2e", 2]]
    assert groups["score"].tolist() == [0.75] and groups["pass_rate"].tolist() == [0.5]
    with pytest.raises(SystemExit):
        main(["--db", str(project / "eval-results" / "eval.db"), "--json", "report", str(second)])
    printed = json.loads(capsys.readouterr().out)
    assert printed["groups"] == json.loads(groups.to_json(orient="records"))
    assert ragqual.Project(project).report().run_id == retrieval  # the newest run
    assert list(ragqual.Project(project).report(retrieval).to_frame()["strategy"]) == ["dense"]
