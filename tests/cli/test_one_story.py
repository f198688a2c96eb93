"""Issue 14: one golden, one story — identity across tiers, one scoring path, rescore that moves
the metrics, resume that keeps to the stored plan, gates that refuse unfinished runs."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from tests.cli.conftest import invoke


def _db(root):
    return sqlite3.connect(root / "eval-results" / "eval.db")


def _json(*args):
    result = invoke("--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _report_line(run_id: int, mode: str) -> dict:
    doc = _json("report", str(run_id))
    groups = dict(doc["sections"])["groups"] if isinstance(doc.get("sections"), list) else doc["groups"]
    return next(g for g in groups if g["mode"] == mode)


def test_after_eval_one_case_id_per_golden_over_both_tiers(workdir):
    out = _json("eval", "--limit", "5", "--repeats", "1")
    db = _db(workdir)
    ids = db.execute(
        "SELECT COUNT(DISTINCT case_id) FROM ("
        " SELECT case_id FROM metric_values WHERE run_id IN (?, ?)"
        " UNION ALL SELECT c.case_id FROM trials t JOIN cases c ON c.id = t.case_pk WHERE t.run_id = ?)",
        (out["retrieval_run"], out["generation_run"], out["generation_run"])).fetchone()[0]
    assert ids == 5
    # both tiers record the same case row for a golden
    assert db.execute("SELECT COUNT(*) FROM cases WHERE subject = 'rag'").fetchone()[0] == 5


def _unmatchable_goldens(workdir, tmp_path, ids):
    """A copy of the goldens where these goldens' mustInclude can never match."""
    target = tmp_path / "goldens-edited"
    shutil.copytree(workdir / "goldens", target)
    for path in target.glob("*.jsonl"):
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                obj = json.loads(line)
                if obj["id"] in ids:
                    obj["mustInclude"] = ["\\bzzz-never-in-any-answer-zzz\\b"]
                line = json.dumps(obj)
            lines.append(line)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def test_rescore_moves_the_reported_correctness_without_a_model_call(workdir, tmp_path, monkeypatch):
    run = _json("generation", "--model", "mock", "--mode", "oracle", "--limit", "5", "--repeats", "1",
                "--tag", "single-hop")
    run_id = run["run_id"]
    assert _report_line(run_id, "oracle")["correctness"] == 1.0
    db = _db(workdir)
    golden_ids = [r[0] for r in db.execute(
        "SELECT DISTINCT c.case_id FROM trials t JOIN cases c ON c.id = t.case_pk WHERE t.run_id = ?", (run_id,))]
    before = {t: db.execute(f"SELECT * FROM {t} ORDER BY id").fetchall()
              for t in ("trials", "assertion_results", "trial_scores", "metric_values")}
    edited = _unmatchable_goldens(workdir, tmp_path, set(golden_ids))

    from ragqual.engine.services import TrialServices

    def no_call(*args, **kwargs):
        raise AssertionError("rescore called a model")

    monkeypatch.setattr(TrialServices, "call", no_call)
    result = invoke("rescore", str(run_id), "--goldens", str(edited))
    assert result.exit_code == 0, result.output

    line = _report_line(run_id, "oracle")
    assert line["correctness"] == 0.0
    assert f"{line['correctness']:.3f}" == "0.000"
    after = {t: db.execute(f"SELECT * FROM {t} ORDER BY id").fetchall() for t in before}
    for table, rows in before.items():
        assert after[table][: len(rows)] == rows, f"{table}: an old row changed"
    run_metrics = db.execute("SELECT COUNT(*) FROM metric_values WHERE run_id = ? AND id <= ?",
                             (run_id, before["metric_values"][-1][0])).fetchone()[0]
    assert len(after["metric_values"]) - len(before["metric_values"]) == run_metrics == 5 * 5
    assert len(after["trials"]) == len(before["trials"])
    history = _json("history", "--kind", "generation", "--limit", "0")
    row = next(r for r in history if r["run_id"] == run_id)
    assert row["correctness"] == 0.0




# -- resume keeps its word ------------------------------------------------------------------------------

def _main(args, capsys):
    """The real entry point in the current folder: (exit code, stdout, stderr)."""
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def _interrupt_after(monkeypatch, stored: int):
    """Ctrl-C in the trial loop once `stored` trials are finished (the waiting batch is appended as the run stops)."""
    from ragqual.engine import loop

    real = loop._Trials.prepare
    seen = {"n": 0}

    def prepare(self, done):
        if seen["n"] == stored:
            raise KeyboardInterrupt
        seen["n"] += 1
        return real(self, done)

    monkeypatch.setattr(loop._Trials, "prepare", prepare)
    return lambda: monkeypatch.setattr(loop._Trials, "prepare", real)


def _trials(workdir, run_id):
    return _db(workdir).execute("SELECT COUNT(*) FROM trials WHERE run_id = ?", (run_id,)).fetchone()[0]


def _params(workdir, run_id):
    return json.loads(_db(workdir).execute("SELECT params FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


def test_readme_resume_form_finishes_an_interrupted_all_modes_run(workdir, monkeypatch, capsys):
    restore = _interrupt_after(monkeypatch, 5)
    code, _, err = _main(["generation", "--model", "mock", "--all-modes", "--limit", "3", "--repeats", "2"], capsys)
    restore()
    run_id = _db(workdir).execute("SELECT MAX(id) FROM runs").fetchone()[0]
    assert code == 130
    assert f"`ragqual generation --resume {run_id}`" in err and f"run {run_id}" in err
    assert _trials(workdir, run_id) == 5
    code, out, err = _main(["generation", "--resume", str(run_id)], capsys)  # the README's form: no other flag
    assert code == 0, err
    assert _trials(workdir, run_id) == 3 * 3 * 2
    assert "(5 already done)" in out and "| mock | noretrieval |" in out


def test_resume_refuses_flags_that_conflict_with_the_stored_plan(workdir, capsys):
    code, _, err = _main(["--json", "generation", "--model", "mock", "--mode", "e2e", "--limit", "2", "--repeats", "3"],
                         capsys)
    assert code == 0, err
    run_id = _db(workdir).execute("SELECT MAX(id) FROM runs").fetchone()[0]
    before, params = _trials(workdir, run_id), _params(workdir, run_id)
    code, _, err = _main(["generation", "--resume", str(run_id), "--strategy", "bm25", "--context-k", "1"], capsys)
    assert code == 2
    assert f"--strategy bm25 (run {run_id} has hybrid)" in err and f"--context-k 1 (run {run_id} has 5)" in err
    code, _, err = _main(["generation", "--repeats", "5", "--resume", str(run_id)], capsys)
    assert code == 2 and f"--repeats 5 (run {run_id} has 3)" in err
    code, _, err = _main(["generation", "--resume", str(run_id), "--limit", "3"], capsys)
    assert code == 2 and "--limit/--tag/--case/--split" in err
    assert (_trials(workdir, run_id), _params(workdir, run_id)) == (before, params)
    # flags equal to the stored plan are accepted, and nothing is run twice
    code, out, err = _main(["--json", "generation", "--resume", str(run_id), "--repeats", "3", "--mode", "e2e",
                            "--model", "mock"], capsys)
    assert code == 0, err
    assert json.loads(out)["trials"] == 0 and _trials(workdir, run_id) == before


def test_the_loop_never_grows_a_run_beyond_its_stored_plan(workdir):
    from ragqual.app.context import AppContext
    from ragqual.engine import loop
    from ragqual.engine.services import services_for
    from ragqual.errors import InputError
    from ragqual.subjects.sentiment.subject import SentimentSubject

    app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    subject = SentimentSubject()
    variants = subject.default_variants(["mock"])
    services = services_for(subject, app.response_cache())
    first = loop.run(subject, variants, subject.cases()[:2], store=app.store(), services=services, repeats=1)
    with pytest.raises(InputError, match="another plan"):
        loop.run(subject, variants, subject.cases()[:2], store=app.store(), services=services, repeats=2,
                 resume_run_id=first.run_id)
    app.close()
    assert _trials(workdir, first.run_id) == 2


def test_run_resume_refuses_a_conflicting_trial_count(workdir, capsys):
    code, out, err = _main(["--json", "run", "--subject", "sentiment", "--trial-count", "1"], capsys)
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    code, _, err = _main(["run", "--resume", str(run_id), "--trial-count", "2"], capsys)
    assert code == 2 and f"--trial-count 2 (run {run_id} has 1)" in err
    code, _, err = _main(["run", "--resume", str(run_id), "--trial-count", "1", "--model", "mock"], capsys)
    assert code == 0, err


# -- gates refuse what is not finished -----------------------------------------------------------------

BASELINE = "eval-results/baselines/e7649b5416cf/retrieval.json"


@pytest.fixture
def killed_retrieval(head_db):
    """A retrieval run killed with kill -9 after its dense group: no end event."""
    from tests.cli.conftest import REPO

    from ragqual.store.runstore import RunStore
    from tests.store.test_queries import retrieval_run

    base = json.loads((REPO / BASELINE).read_text())
    dense = base["groups"]["dense"]["questions"]
    store = RunStore.open(f"sqlite:///{head_db}")
    run_id = retrieval_run(store, {"dense": dense}, fingerprint=base["corpus_fingerprint"], finished=False)
    finished = retrieval_run(store, {"dense": dense}, fingerprint=base["corpus_fingerprint"])
    store.engine.dispose()
    return REPO / BASELINE, run_id, finished


def test_compare_refuses_a_killed_run_unless_allowed(head_db, killed_retrieval, capsys):
    from tests.cli.conftest import ragqual

    baseline, run_id, _ = killed_retrieval
    code, out, err = ragqual(head_db, ["compare", str(baseline), str(run_id)], capsys)
    assert code == 2 and "OK" not in out
    assert err.strip() == (f"ragqual: error: run {run_id} is incomplete (its last event), not finished: retrieval "
                           "runs are not resumable: run `ragqual retrieval` again for a finished run, or pass "
                           "--allow-incomplete to use the partial run anyway")
    code, out, err = ragqual(head_db, ["compare", str(baseline), str(run_id), "--allow-incomplete", "--format", "csv"],
                             capsys)
    assert code == 0, err
    rows = [line for line in out.strip().splitlines()[1:]]
    assert rows and all(f"INCOMPLETE run {run_id} (incomplete)" in line for line in rows)


def test_promote_adopt_and_matrix_refuse_unfinished_runs(head_db, killed_retrieval, tmp_path, capsys):
    from tests.cli.conftest import ragqual

    _, run_id, finished = killed_retrieval
    for args in (["baseline", "promote", str(run_id), "--dir", str(tmp_path / "b")],
                 ["adopt", f"{finished}:dense", f"{run_id}:dense"],
                 ["matrix", "--run", str(run_id)]):
        code, _, err = ragqual(head_db, args, capsys)
        assert code == 2 and f"run {run_id} is incomplete" in err, args
    assert not (tmp_path / "b").exists()
    code, out, err = ragqual(head_db, ["adopt", f"{finished}:dense", f"{run_id}:dense", "--allow-incomplete",
                                       "--format", "json"], capsys)
    assert code == 0, err
    marks = {row["name"]: row["incomplete"] for row in json.loads(out)["candidates"]}
    assert marks == {f"{finished}:dense": "", f"{run_id}:dense": f"INCOMPLETE run {run_id} (incomplete)"}


# -- the rest of (5): cache, project root ------------------------------------------------------------------

def test_cache_off_is_honoured_by_run_subject_rag(workdir, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "fresh-cache"
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(cache))
    code, _, err = _main(["--cache", "off", "run", "--subject", "rag", "--model", "mock", "--trial-count", "1",
                          "--mode", "e2e", "--case-slugs", "water-boil-altitude-01"], capsys)
    assert code == 0, err
    written = sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()) if cache.exists() else []
    assert written == []


def test_commands_in_a_subfolder_use_the_project_above(workdir, monkeypatch, capsys):
    _json("generation", "--model", "mock", "--mode", "oracle", "--limit", "1", "--repeats", "1")
    code, out, err = _main(["--json", "history", "--limit", "0"], capsys)
    assert code == 0, err
    runs_at_root = len(json.loads(out))
    monkeypatch.chdir(workdir / "corpus")
    code, out, err = _main(["--json", "history", "--limit", "0"], capsys)
    assert code == 0, err
    assert len(json.loads(out)) == runs_at_root > 0
    assert not (workdir / "corpus" / "eval-results").exists()


def test_read_only_commands_outside_a_project_name_the_folder_and_create_nothing(tmp_path, monkeypatch, capsys):
    lost = tmp_path / "not-a-project"
    lost.mkdir()
    monkeypatch.chdir(lost)
    for args in (["history"], ["report", "--last"], ["compare", "1", "2"], ["audit", "1"], ["rescore", "1"],
                 ["sql", "SELECT 1"], ["export", "1"], ["adopt", "1", "2"], ["baseline", "promote", "1"],
                 ["matrix", "--run", "1"]):
        code, _, err = _main(args, capsys)
        assert code == 2, args
        assert f"no ragqual project in {lost}" in err and "mkdir eval-results" in err, args
    assert list(lost.iterdir()) == []


def test_read_only_commands_never_create_the_database(tmp_path, monkeypatch, capsys):
    project = tmp_path / "p"
    (project / "eval-results").mkdir(parents=True)
    monkeypatch.chdir(project)
    code, _, err = _main(["history"], capsys)
    assert code == 2 and "no history database at" in err
    assert list((project / "eval-results").iterdir()) == []


# -- the decomposition says what it knows ----------------------------------------------------------------

def test_decomposition_names_measured_causes_and_report_lists_failures(workdir):
    result = invoke("generation", "--model", "mock", "--all-modes", "--repeats", "1",
                    "--tag", "out-of-corpus", "--tag", "near-miss")
    assert result.exit_code == 0, result.output
    assert "| mock | oracle | 1.000 |" in result.output
    assert "retrieval is failing the model" not in result.output
    assert "answered an out-of-corpus question from a non-empty context" in result.output
    assert "repeated a mustNotInclude phrase from a near-miss document that outranked the relevant one" in result.output
    assert "although the relevant document ranked first and every fact was in the context" in result.output
    assert "measured on this run:" in result.output  # the cut-off advice carries its numbers
    run_id = _db(workdir).execute("SELECT MAX(id) FROM runs").fetchone()[0]
    doc = _json("report", str(run_id), "--failures")
    e2e = [f for f in doc["failures"] if f["mode"] == "e2e"]
    assert e2e and {f["cause"] for f in e2e} == {"answered-out-of-corpus", "near-miss", "reader-confusion"}
    for f in e2e:
        assert f["failed_checks"] != "-"
        if f["cause"] in ("near-miss", "reader-confusion"):
            assert "excludes /" in f["failed_checks"] and "unwanted match" in f["failed_checks"]
            assert f["doc_recall"] == 1.0  # the document was there: not a retrieval miss
        else:
            assert "answered instead of declining" in f["failed_checks"]
    assert doc["header"]["failing_trials"] == len(doc["failures"])


def test_rescore_reads_the_projects_edited_goldens(workdir, tmp_path, monkeypatch, capsys):
    """The README's workflow without --goldens: edit the project's goldens, rescore, report."""
    project = tmp_path / "own"
    (project / "eval-results").mkdir(parents=True)
    shutil.copytree(workdir / "corpus", project / "corpus")
    monkeypatch.chdir(project)
    shutil.copytree(workdir / "goldens", project / "goldens")
    code, out, err = _main(["--json", "generation", "--model", "mock", "--mode", "oracle", "--limit", "5",
                            "--repeats", "1", "--tag", "single-hop"], capsys)
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    ids = {r[0] for r in sqlite3.connect(project / "eval-results" / "eval.db").execute(
        "SELECT DISTINCT c.case_id FROM trials t JOIN cases c ON c.id = t.case_pk")}
    edited = _unmatchable_goldens(project, tmp_path, ids)
    shutil.rmtree(project / "goldens")
    shutil.copytree(edited, project / "goldens")
    code, _, err = _main(["rescore", str(run_id)], capsys)
    assert code == 0, err
    code, out, err = _main(["--json", "report", str(run_id)], capsys)
    assert code == 0, err
    assert json.loads(out)["groups"][0]["correctness"] == 0.0


def test_failures_of_any_subject_are_its_trials_that_did_not_pass(workdir, capsys):
    code, out, err = _main(["--json", "run", "--subject", "sentiment", "--trial-count", "1"], capsys)
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    (group,) = _json("report", str(run_id))["groups"]
    doc = _json("report", str(run_id), "--failures")
    assert len(doc["failures"]) == round(group["trials"] * (1 - group["pass_rate"])) > 0
    assert all(f["cause"] == "-" and "expected" in f["failed_checks"] for f in doc["failures"])
