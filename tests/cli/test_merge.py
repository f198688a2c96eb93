"""`ragqual merge A.db B.db --into C.db`: several SQLite histories appended to one that passes verify."""

from __future__ import annotations

import csv
import re
import sqlite3
from pathlib import Path

import pytest

from ragqual.store import db
from tests.reliability.conftest import copy_project
from tests.store.conftest import execute_raw
from tests.store.test_upgrade_keeps_data import OldHistory, fill

PREVIOUS = re.compile(r"^(settings changed since run|the first \w+ run)")
RUN_LINES = re.compile(r"^\s*(run_id|history_head|previous_run)\b|^Run \d+ ")


def _main(args, capsys):
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def ok(capsys, *args: str) -> str:
    code, out, err = _main(args, capsys)
    assert code == 0, err + out
    return out


@pytest.fixture
def histories(tmp_path, monkeypatch, capsys) -> tuple[Path, Path]:
    """Two histories made by the real CLI: A (a subject run, a generation run), B (a generation run)."""
    copy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    ok(capsys, "--db", str(a), "run", "--subject", "sentiment", "--trial-count", "2")
    ok(capsys, "--db", str(a), "generation", "--mode", "oracle", "--limit", "3", "--repeats", "2")
    ok(capsys, "--db", str(b), "generation", "--mode", "oracle", "--mode", "noretrieval", "--limit", "2",
       "--repeats", "1")
    return a, b


def report(capsys, path: Path, run_id: int) -> list[str]:
    """The run's report up to its comparison with the history's previous run of its kind (which
    differs by design: the merged history has other runs before it)."""
    lines = ok(capsys, "--db", str(path), "report", str(run_id)).splitlines()
    end = next((n for n, ln in enumerate(lines) if PREVIOUS.search(ln)), len(lines))
    return [ln for ln in lines[:end] if not RUN_LINES.search(ln)]


def exported(capsys, path: Path, run_id: int, out: Path) -> dict[str, list[dict[str, str]]]:
    ok(capsys, "--db", str(path), "export", str(run_id), "--format", "csv", "--out", str(out))
    files = {}
    for file in sorted(out.glob("*.csv")):
        with file.open(newline="", encoding="utf-8") as handle:
            files[file.name] = [{k: v for k, v in row.items() if k not in ("run_id", "trial_id", "id")}
                                for row in csv.DictReader(handle)]
    return files


def count(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as con:
        return int(con.execute(sql).fetchone()[0])


def test_the_merged_history_passes_verify_and_reads_each_run_as_its_source(histories, tmp_path, capsys):
    a, b = histories
    c = tmp_path / "c.db"
    out = ok(capsys, "merge", str(a), str(b), "--into", str(c))
    assert "a.db: 2 run(s) copied as run(s) 1, 2" in out and "b.db: 1 run(s) copied as run(s) 3" in out
    assert ok(capsys, "--db", str(c), "verify").splitlines()[0].startswith("3 sealed run(s), 0 unsealed")
    assert count(c, "SELECT COUNT(DISTINCT run_id) FROM run_summaries") == 3  # each finished run summarised there
    for source, source_run, merged_run in ((a, 1, 1), (a, 2, 2), (b, 1, 3)):
        assert report(capsys, source, source_run) == report(capsys, c, merged_run)
        assert (exported(capsys, source, source_run, tmp_path / f"x-{source.stem}{source_run}")
                == exported(capsys, c, merged_run, tmp_path / f"y-{merged_run}"))
    # definitions stored once: the cases both sources ran are one row each
    assert count(c, "SELECT COUNT(*) FROM cases") == count(a, "SELECT COUNT(*) FROM cases")
    # each source's head is recorded, and the source still proves it
    with sqlite3.connect(a) as con:
        head_a = con.execute("SELECT digest FROM seals ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert count(c, f"SELECT COUNT(*) FROM run_events WHERE event = 'merged' AND detail LIKE '%{head_a}%'") == 2
    assert ok(capsys, "--db", str(a), "verify", "--expect", head_a)


def test_merging_a_source_again_copies_nothing(histories, tmp_path, capsys):
    a, b = histories
    c = tmp_path / "c.db"
    ok(capsys, "merge", str(a), "--into", str(c))
    seals = count(c, "SELECT COUNT(*) FROM seals")
    out = ok(capsys, "merge", str(a), str(b), "--into", str(c))
    assert "a.db: 0 run(s) copied; 2 merged before (run(s) 1, 2), skipped" in out
    assert "b.db: 1 run(s) copied as run(s) 3" in out
    assert count(c, "SELECT COUNT(*) FROM runs") == 3
    again = ok(capsys, "merge", str(a), str(b), "--into", str(c))
    assert "0 run(s) copied" in again and count(c, "SELECT COUNT(*) FROM runs") == 3
    assert count(c, "SELECT COUNT(*) FROM seals") > seals
    ok(capsys, "--db", str(c), "verify")


def test_a_run_that_changed_since_it_was_merged_is_refused(histories, tmp_path, capsys):
    a, _ = histories
    c = tmp_path / "c.db"
    ok(capsys, "merge", str(a), "--into", str(c))
    ok(capsys, "--db", str(a), "rescore", "1")  # appends rows to run 1: its head moves
    before = count(c, "SELECT COUNT(*) FROM seals")
    code, out, err = _main(["merge", str(a), "--into", str(c)], capsys)
    assert code == 2, out + err
    assert "run 1 of a.db changed since it was merged as run 1" in err and "nothing was written" in err
    assert count(c, "SELECT COUNT(*) FROM seals") == before


def test_a_source_that_fails_verify_is_refused_and_nothing_is_written(histories, tmp_path, capsys):
    a, b = histories
    execute_raw(f"sqlite:///{b}", "DROP TRIGGER trial_scores_append_only_update",
                "UPDATE trial_scores SET score = 0.5 WHERE id = 1")
    c = tmp_path / "c.db"
    code, out, err = _main(["merge", str(a), str(b), "--into", str(c)], capsys)
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "b.db fails verify" in lines[0] and "nothing was written" in lines[0]
    assert f"ragqual --db {b} verify" in lines[0]
    assert not c.exists()


def test_two_histories_begun_with_the_same_command_are_two_sources(histories, tmp_path, capsys):
    _, b = histories
    twin = tmp_path / "twin.db"
    ok(capsys, "--db", str(twin), "generation", "--mode", "oracle", "--mode", "noretrieval", "--limit", "2",
       "--repeats", "1")
    out = ok(capsys, "merge", str(b), str(twin), "--into", str(tmp_path / "c.db"))
    assert "b.db: 1 run(s) copied as run(s) 1" in out and "twin.db: 1 run(s) copied as run(s) 2" in out


def test_a_copy_of_a_source_is_refused_beside_it(histories, tmp_path, capsys):
    import shutil

    a, _ = histories
    shutil.copyfile(a, tmp_path / "copy.db")
    code, out, err = _main(["merge", str(a), str(tmp_path / "copy.db"), "--into", str(tmp_path / "c.db")], capsys)
    assert code == 2 and "two sources are copies of one history" in err, out + err
    assert not (tmp_path / "c.db").exists()


@pytest.mark.parametrize("bad", ["twice", "target", "missing"])
def test_sources_that_cannot_be_merged_are_refused(histories, tmp_path, capsys, bad):
    a, b = histories
    args = {"twice": [str(a), str(a), "--into", str(tmp_path / "c.db")],
            "target": [str(a), str(b), "--into", str(b)],
            "missing": [str(tmp_path / "none.db"), "--into", str(tmp_path / "c.db")]}[bad]
    code, out, err = _main(["merge", *args], capsys)
    assert code == 2, out + err
    assert "nothing was written" in err
    assert not (tmp_path / "c.db").exists()


def test_a_source_at_an_older_schema_is_upgraded_in_a_copy(tmp_path, capsys):
    old_path = tmp_path / "old.db"
    engine = db.make_engine(f"sqlite:///{old_path}")
    db.upgrade(engine, "0001")
    fill(OldHistory(engine))
    engine.dispose()
    c = tmp_path / "c.db"
    out = ok(capsys, "merge", str(old_path), "--into", str(c))
    assert "old.db: 2 run(s) copied as run(s) 1, 2" in out
    assert "read from a copy upgraded from schema 0001" in out
    with sqlite3.connect(old_path) as con:
        assert con.execute("SELECT version_num FROM alembic_version").fetchone()[0] == "0001"  # left as it was
    assert ok(capsys, "--db", str(c), "verify").splitlines()[0].startswith("2 sealed run(s), 0 unsealed")
    assert count(c, "SELECT COUNT(*) FROM trials") == 3
    assert count(c, "SELECT COUNT(*) FROM retrieval_results") == 2


@pytest.mark.postgres
def test_sqlite_histories_merge_into_a_postgresql_history(histories, capsys):
    from tests.store.conftest import PgDatabases, _pg_server_url

    a, b = histories
    databases = PgDatabases(_pg_server_url())
    name = databases.create()
    try:
        url = databases.url(name)
        out = ok(capsys, "merge", str(a), str(b), "--into", url)
        assert "b.db: 1 run(s) copied as run(s) 3" in out
        assert f":{databases.server.password}@" not in out and ":***@" in out  # the password masked
        assert ok(capsys, "--db", url, "verify").splitlines()[0].startswith("3 sealed run(s), 0 unsealed")
        assert "0 run(s) copied" in ok(capsys, "merge", str(a), "--into", url)
    finally:
        databases.drop(name)
        databases.admin.dispose()


def texts_of(path: Path, run_id: int) -> list[tuple]:
    with sqlite3.connect(path) as con:
        return con.execute(
            "SELECT t.mode, t.repeat_index, v.rendered_prompt, v.context, v.raw_output, v.parsed_output "
            "FROM v_trial_texts v JOIN trials t ON t.id = v.trial_id WHERE t.run_id = ? "
            "ORDER BY t.case_pk, t.mode, t.repeat_index", (run_id,)).fetchall()


def test_texts_stored_by_hash_come_along_once(histories, tmp_path, capsys):
    a, b = histories
    c = tmp_path / "c.db"
    ok(capsys, "merge", str(a), str(b), "--into", str(c))
    assert count(a, "SELECT COUNT(*) FROM texts") > 0
    for source, source_run, merged_run in ((a, 1, 1), (a, 2, 2), (b, 1, 3)):
        rows = texts_of(c, merged_run)
        assert rows == texts_of(source, source_run) and all(r[2] is not None for r in rows)
    # every hash a trial names is held, and a text both sources hold is stored once
    assert count(c, "SELECT COUNT(*) FROM trials t LEFT JOIN texts x ON x.sha256 = t.context_sha256 "
                    "WHERE t.context_sha256 IS NOT NULL AND x.id IS NULL") == 0
    assert count(c, "SELECT COUNT(*) FROM texts") == count(c, "SELECT COUNT(DISTINCT sha256) FROM texts")


def test_run_and_trial_ids_inside_json_are_remapped(histories, tmp_path, capsys):
    """A judge run names its target run in its params, and a judge audit names the judge run and
    trials in its payload: in the merged history they name the merged rows, not the source's ids."""
    import json

    a, b = histories
    ok(capsys, "--db", str(b), "judge", "1", "--judge", "mock", "--criteria", "faithfulness")  # run 2 of b
    with sqlite3.connect(b) as con:
        trials = [t for (t,) in con.execute("SELECT id FROM trials WHERE run_id = 1 ORDER BY id")]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"trial_id": t, "criterion": "faithfulness", "verdict": v}) + "\n"
                              for t, v in zip(trials, ["yes", "no", "no", "yes"])))
    ok(capsys, "--db", str(b), "labels", "import", str(labels), "--run", "1")
    ok(capsys, "--db", str(b), "judge", "audit", "1")
    c = tmp_path / "c.db"
    out = ok(capsys, "merge", str(a), str(b), "--into", str(c))
    assert "b.db: 2 run(s) copied as run(s) 3, 4" in out
    with sqlite3.connect(c) as con:
        params = json.loads(con.execute("SELECT params FROM runs WHERE id = 4").fetchone()[0])
        payload = json.loads(con.execute("SELECT payload FROM judge_audits WHERE run_id = 3").fetchone()[0])
        merged = [t for (t,) in con.execute("SELECT id FROM trials WHERE run_id = 3 ORDER BY id")]
    with sqlite3.connect(b) as con:
        source = json.loads(con.execute("SELECT payload FROM judge_audits WHERE run_id = 1").fetchone()[0])
    to_merged = dict(zip(trials, merged, strict=True))
    assert params["target_run"] == 3
    assert payload["judge_run"] == 4
    assert source["disagreements"] and payload["disagreements"] == [to_merged[t] for t in source["disagreements"]]
    assert ok(capsys, "--db", str(c), "verify").splitlines()[0].startswith("4 sealed run(s), 0 unsealed")
    assert "judge run 4" in ok(capsys, "--db", str(c), "judge", "audit", "3")
