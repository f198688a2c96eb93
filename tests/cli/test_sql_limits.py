"""`ragqual sql` is bounded: time, rows, memory, Ctrl-C, and what a statement may reach.

The history is a real database upgraded to head; the statements are the ones an operator (or
an attacker with the command line) would try. Runs that would hang the old code are child
processes with a bound on how long the test waits for them, never an assertion on wall time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ragqual.store import db
from ragqual.store.queries import QueryRefused
from ragqual.store.sql_console import QueryStopped, first_keyword, open_query

COUNT_FOREVER = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
WAIT = 120.0  # how long a test waits for a child before failing; the old code never ends


@pytest.fixture
def history(tmp_path) -> Path:
    path = tmp_path / "eval.db"
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    engine.dispose()
    return path


def sql(history: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    child = subprocess.Popen([sys.executable, "-m", "ragqual", "--db", str(history), "sql", *args], cwd=cwd,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail(f"ragqual sql {args[0]!r} was still running after {WAIT:g} s")
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def test_an_endless_query_prints_the_default_number_of_rows_and_says_there_are_more(history, tmp_path):
    result = sql(history, COUNT_FOREVER + "SELECT x FROM c", "--format", "csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["x"] + [str(i) for i in range(1, 1001)]
    assert "only the first 1000 rows are shown" in result.stderr


def test_limit_bounds_the_rows(history, tmp_path):
    result = sql(history, COUNT_FOREVER + "SELECT x FROM c", "--limit", "3", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('"x"') == 3


def test_a_query_past_its_time_limit_is_stopped_with_exit_2(history, tmp_path):
    result = sql(history, COUNT_FOREVER + "SELECT count(*) FROM c", "--timeout", "1", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == ("ragqual: error: the query ran longer than 1 s and was stopped: narrow it, "
                                     "or allow more time with --timeout SECONDS (0 = no limit)")


def test_limit_zero_streams_every_row(history, tmp_path):
    result = sql(history, COUNT_FOREVER + "SELECT x FROM c LIMIT 2500", "--limit", "0", "--format", "csv",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "2500" and len(result.stdout.splitlines()) == 2501


def test_rows_are_fetched_lazily(history):
    """An endless statement with no limit yields rows one batch at a time: nothing is gathered."""
    with open_query(f"sqlite:///{history}", COUNT_FOREVER + "SELECT x FROM c", limit=0) as stream:
        rows = iter(stream)
        firsts = [next(rows)[0] for _ in range(3)]
    assert firsts == [1, 2, 3]


def test_ctrl_c_stops_a_running_query(history):
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with open_query(f"sqlite:///{history}", COUNT_FOREVER + "SELECT count(*) FROM c", timeout=0) as stream:
                list(stream)
    finally:
        timer.cancel()


def test_ctrl_c_ends_the_command_with_exit_130(history, tmp_path):
    child = subprocess.Popen([sys.executable, "-m", "ragqual", "--db", str(history), "sql", "--timeout", "0",
                              COUNT_FOREVER + "SELECT count(*) FROM c"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        child.communicate(timeout=3)  # started and counting; it would count for minutes
    except subprocess.TimeoutExpired:
        pass
    child.send_signal(signal.SIGINT)
    try:
        _, err = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("ragqual sql ignored Ctrl-C")
    assert child.returncode == 130, err


@pytest.mark.parametrize("statement", [
    "ATTACH DATABASE '{target}' AS x",
    "VACUUM INTO '{target}'",
    "/* hidden */ VACUUM INTO '{target}'",
    "SELECT 1; ATTACH DATABASE '{target}' AS x",
    "WITH a AS (SELECT 1) SELECT * FROM a; VACUUM INTO '{target}'",
    "PRAGMA journal_mode = WAL",
    "REINDEX",
    "ANALYZE",
])
def test_statements_that_attach_or_create_files_are_refused_before_any_file_exists(history, tmp_path, statement):
    target = tmp_path / "created.db"
    before = sorted(p.name for p in history.parent.iterdir())
    result = sql(history, statement.format(target=target), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("ragqual: error: ") and "Traceback" not in result.stderr
    assert not target.exists()
    assert sorted(p.name for p in history.parent.iterdir()) == before


def test_reads_pragmas_and_views_still_work(history):
    url = f"sqlite:///{history}"
    with open_query(url, "PRAGMA table_info(runs)") as stream:
        assert "kind" in {row[1] for row in stream}
    with open_query(url, "-- the runs\nSELECT COUNT(*) FROM v_run_status") as stream:
        assert list(stream) == [(0,)]
    with pytest.raises(QueryRefused, match="read-only"):
        open_query(url, "DELETE FROM runs")


def test_the_first_keyword_skips_comments_and_blanks():
    assert first_keyword("  -- a\n/* b */ select 1") == "select"
    assert first_keyword("/* only a comment */") == ""


def test_a_timeout_in_process_is_query_stopped(history):
    with pytest.raises(QueryStopped):
        with open_query(f"sqlite:///{history}", COUNT_FOREVER + "SELECT count(*) FROM c", timeout=0.3) as stream:
            list(stream)
