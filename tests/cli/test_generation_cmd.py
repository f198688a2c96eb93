import json
import sqlite3

from tests.cli.conftest import invoke


def _db(root):
    return sqlite3.connect(root / "eval-results" / "eval.db")


def test_mock_all_modes_runs_end_to_end_and_appends_rows(workdir):
    result = invoke("generation", "--model", "mock", "--all-modes", "--limit", "6", "--repeats", "2")
    assert result.exit_code == 0, result.output
    for mode in ("oracle", "e2e", "noretrieval"):
        assert f"| mock | {mode} |" in result.output
    db = _db(workdir)
    run_id = db.execute("SELECT MAX(run_id) FROM v_run_status WHERE kind='generation'").fetchone()[0]
    assert db.execute("SELECT status FROM v_run_status WHERE run_id=?", (run_id,)).fetchone()[0] == "finished"
    assert db.execute("SELECT COUNT(*) FROM trials WHERE run_id=?", (run_id,)).fetchone()[0] == 6 * 3 * 2
    # oracle injects the golden's documents verbatim: the mock (an extractive reader) passes every answerable one
    oracle = db.execute("SELECT AVG(mv.value) FROM metric_values mv JOIN trials t ON t.id = mv.trial_id "
                        "WHERE mv.run_id=? AND t.mode='oracle' AND mv.metric='correctness'", (run_id,)).fetchone()[0]
    assert oracle == 1.0
    noretrieval = db.execute("SELECT AVG(mv.value) FROM metric_values mv JOIN trials t ON t.id = mv.trial_id "
                             "WHERE mv.run_id=? AND t.mode='noretrieval' AND mv.metric='refusalCorrectness'", (run_id,)).fetchone()[0]
    assert noretrieval < 1.0  # declining answerable questions is wrong
    row = db.execute("SELECT t.cache_key, x.rendered_prompt, x.context, t.system_prompt_id FROM trials t "
                      "JOIN v_trial_texts x ON x.trial_id = t.id WHERE t.run_id=? AND t.mode='e2e' LIMIT 1", (run_id,)).fetchone()
    assert len(row[0]) == 64 and "<<<CONTEXT" in row[1] and row[2] and row[3] is not None


def test_rerun_is_all_cache_hits_and_replay_makes_no_call(workdir):
    args = ("generation", "--model", "mock", "--mode", "e2e", "--limit", "4", "--repeats", "1")
    first = json.loads(invoke("--json", *args).stdout)
    again = json.loads(invoke("--json", *args).stdout)
    assert first["trials"] == 4
    assert again["model_calls"] == 0 and again["cache_hits"] == 4
    replay = json.loads(invoke("--json", "--cache", "replay", *args).stdout)
    assert replay["model_calls"] == 0 and replay["cache_hits"] == again["cache_hits"]
    hits = _db(workdir).execute("SELECT COUNT(*) FROM trials WHERE run_id=? AND cache_hit", (replay["run_id"],)).fetchone()[0]
    assert hits == 4


def test_replay_miss_fails_clearly(workdir):
    from click.testing import CliRunner

    from ragqual.cli.main import cli

    result = CliRunner().invoke(cli, ["--cache", "replay", "generation", "--model", "mock", "--mode", "oracle",
                                      "--limit", "2", "--repeats", "1", "--seed", "999"])
    assert result.exit_code != 0
    assert "replay" in str(result.exception)


def test_unknown_model_lists_valid_ones(workdir):
    from click.testing import CliRunner

    from ragqual.cli.main import cli

    result = CliRunner().invoke(cli, ["generation", "--model", "gpt:x", "--limit", "1"])
    assert result.exit_code != 0 and "ollama" in str(result.exception)


def test_matrix_shows_each_model_row(workdir):
    result = invoke("matrix", "--models", "mock", "--limit", "3", "--all-modes")
    assert result.exit_code == 0, result.output
    assert "| mock |" in result.output and "oracle correct" in result.output


def test_summary_explains_the_extra_calls_of_multi_turn_rewrites(workdir):
    args = ("generation", "--model", "mock", "--mode", "e2e", "--tag", "multi-turn", "--repeats", "1")
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    multi_turn = sum(1 for p in (workdir / "goldens").glob("*.jsonl")
                     for line in p.read_text("utf-8").splitlines() if '"multi-turn"' in line)
    assert f"{multi_turn} trials" in result.output
    assert f"{multi_turn} of the model calls and cache hits rewrote a multi-turn conversation" in result.output
    data = json.loads(invoke("--json", *args).stdout)
    assert data["rewrites"] == multi_turn and data["model_calls"] + data["cache_hits"] == 2 * multi_turn


def test_summary_of_single_turn_questions_has_no_rewrite_note(workdir):
    result = invoke("generation", "--model", "mock", "--mode", "e2e", "--limit", "2", "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert "rewrote" not in result.output


def test_e2e_trials_store_what_the_context_held_and_a_rescore_reads_it_again(workdir):
    result = invoke("--json", "generation", "--model", "mock", "--all-modes", "--limit", "8", "--repeats", "1")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    db = _db(workdir)
    sql = ("SELECT t.mode, mv.metric, COUNT(*), MIN(mv.value), MAX(mv.value) FROM metric_values mv "
           "JOIN trials t ON t.id = mv.trial_id WHERE mv.run_id=? AND mv.metric IN ('contextRecall', 'factCoverage') "
           "GROUP BY t.mode, mv.metric")
    stored = {(mode, metric): (n, low, high) for mode, metric, n, low, high in db.execute(sql, (run_id,))}
    assert set(stored) == {("e2e", "contextRecall"), ("e2e", "factCoverage")}  # oracle and noretrieval have none
    assert all(0.0 <= low <= high <= 1.0 for _, low, high in stored.values())
    # each value is the share of the golden's relevant documents among the injected chunks' documents
    rows = db.execute("SELECT c.definition, x.raw_output, mv.value FROM metric_values mv JOIN trials t ON t.id = mv.trial_id "
                      "JOIN v_trial_texts x ON x.trial_id = t.id "
                      "JOIN cases c ON c.id = t.case_pk WHERE mv.run_id=? AND mv.metric='contextRecall'", (run_id,)).fetchall()
    for definition, raw, value in rows:
        golden = json.loads(definition)["input"]
        injected = {i.rpartition("#")[0] for i in json.loads(raw)["injected"]}
        relevant = golden["relevantDocIds"]
        assert value == sum(d in injected for d in relevant) / len(relevant)
    rescored = invoke("--json", "rescore", str(run_id))
    assert rescored.exit_code == 0, rescored.output
    again = db.execute(sql.replace("COUNT(*)", "COUNT(*) / 2"), (run_id,)).fetchall()
    assert {(mode, metric): (n, low, high) for mode, metric, n, low, high in again} == stored


def test_the_trial_loop_runs_with_the_settled_objects_frozen_and_unfreezes_them(workdir, monkeypatch):
    """The trials are run and appended with the objects that existed before the loop (modules,
    corpus, goldens, index) out of the garbage collector's reach (`gc.freeze`, as `ragqual
    retrieval` appends), and the loop gives them back afterwards."""
    import gc

    from ragqual.store.runstore import RunStore

    seen: list[int] = []
    original = RunStore.append_trials

    def spy(self, recs):
        seen.append(gc.get_freeze_count())
        return original(self, recs)

    monkeypatch.setattr(RunStore, "append_trials", spy)
    before = gc.get_freeze_count()
    result = invoke("generation", "--model", "mock", "--all-modes", "--limit", "2", "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert seen and all(count > 0 for count in seen)
    assert gc.get_freeze_count() == before == 0


def test_the_command_freezes_every_object_as_the_process_exits(monkeypatch, workdir):
    """`ragqual generation` ends its process, so, as `ragqual retrieval` does, it has the objects
    frozen at exit (`collector.freeze_at_exit`): the interpreter's last collections skip them."""
    import gc

    from ragqual.app import collector

    registered: list[object] = []
    monkeypatch.setattr(collector.atexit, "register", registered.append)
    monkeypatch.setattr(collector, "_EXIT_FREEZE", [])
    result = invoke("generation", "--model", "mock", "--all-modes", "--limit", "2", "--repeats", "1")
    assert result.exit_code == 0, result.output
    assert registered == [gc.freeze]
