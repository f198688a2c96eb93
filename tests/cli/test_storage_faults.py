"""Storage faults are one line naming the file and the fix, exit 4, and never a false success.

Reproductions of the issue: a full disk and a read-only database ended in a raw SQLAlchemy
traceback with exit 1 ("gate failed"); deleting eval.db while a run wrote let the run report
"finished" with exit 0 and nothing on disk.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ragqual.cli.main import main
from ragqual.errors import EXIT_STORAGE
from ragqual.store import db as store_db
from ragqual.store.runstore import RunStore

RUN = ["run", "--subject", "sentiment", "--model", "mock", "--trial-count", "3"]


def _ragqual(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RAGQUAL_DB", raising=False)
    store = RunStore.open(f"sqlite:///{tmp_path / 'eval.db'}")
    store.engine.dispose()
    return tmp_path


def _statuses(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return [r[0] for r in con.execute("SELECT status FROM v_run_status ORDER BY run_id")]
    finally:
        con.close()


def test_a_full_disk_is_one_line_exit_4_and_keeps_the_history_consistent(project, monkeypatch, capsys):
    db = project / "eval.db"
    con = sqlite3.connect(db)
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    con.close()
    original = store_db._sqlite_pragmas

    def full_soon(dbapi_conn, record):  # SQLite's own SQLITE_FULL, a few pages from now
        original(dbapi_conn, record)
        dbapi_conn.execute(f"PRAGMA max_page_count={pages + 3}")

    monkeypatch.setattr(store_db, "_sqlite_pragmas", full_soon)
    code, out, err = _ragqual(["--db", str(db), *RUN[:-1], "40"], capsys)
    line = _one_line(err)
    assert code == EXIT_STORAGE == 4
    assert str(db) in line and "full" in line and "free some space" in line
    monkeypatch.setattr(store_db, "_sqlite_pragmas", original)
    assert _ragqual(["--db", str(db), "verify"], capsys)[0] == 0


def _immutable(path: Path) -> None:
    """Read-only for everyone, root included (chattr +i), else plain permissions."""
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("running as root on a file system without chattr +i: nothing is read-only")
    else:
        path.chmod(0o555 if path.is_dir() else 0o444)


def _writable(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_read_only_database_file_is_one_line_exit_4(project, capsys):
    db = project / "eval.db"
    _immutable(db)
    try:
        code, _, err = _ragqual(["--db", str(db), *RUN], capsys)
    finally:
        _writable(db)
    line = _one_line(err)
    assert code == 4
    assert str(db) in line and ("read-only" in line or "cannot be opened" in line)


def test_a_read_only_folder_is_one_line_exit_4(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "results"
    folder.mkdir()
    _immutable(folder)
    try:
        code, _, err = _ragqual(["--db", str(folder / "eval.db"), *RUN], capsys)
    finally:
        _writable(folder)
    line = _one_line(err)
    assert code == 4
    assert str(folder / "eval.db") in line and "writable" in line


def _fault_after(monkeypatch, trials: int, fault) -> None:
    """Run `fault` once, right after the n-th trial is stored (a file removed under the run); trials
    are appended one at a time here, so the run has more to write after the fault."""
    monkeypatch.setenv("RAGQUAL_APPEND_BATCH", "1")
    real = RunStore.append_trials
    seen = [0]

    def append_trials(self, recs):
        trial_ids = real(self, recs)
        before, seen[0] = seen[0], seen[0] + len(recs)
        if before < trials <= seen[0]:
            fault()
        return trial_ids

    monkeypatch.setattr(RunStore, "append_trials", append_trials)


def test_a_database_deleted_under_a_run_is_not_a_success(project, monkeypatch, capsys):
    db = project / "eval.db"

    def delete() -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)

    _fault_after(monkeypatch, 2, delete)
    code, out, err = _ragqual(["--db", str(db), *RUN[:-1], "6"], capsys)
    line = _one_line(err)
    assert code == 4
    assert str(db) in line and "deleted" in line
    assert "finished" not in out


def test_a_database_replaced_under_a_run_is_not_a_success(project, monkeypatch, capsys):
    db = project / "eval.db"
    other = project / "other.db"
    RunStore.open(f"sqlite:///{other}").engine.dispose()

    def replace() -> None:  # e.g. a backup restored over it: the old WAL goes with the old file
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        shutil.move(str(other), str(db))

    _fault_after(monkeypatch, 2, replace)
    code, out, err = _ragqual(["--db", str(db), *RUN[:-1], "6"], capsys)
    line = _one_line(err)
    assert code == 4
    assert str(db) in line and "replaced" in line
    assert _statuses(db) == []  # the replacement holds nothing of the run
