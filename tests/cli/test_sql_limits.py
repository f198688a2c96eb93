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

from ragqual.store.queries import QueryRefused
from ragqual.store.sql_console import DEFAULT_MAX_BYTES, QueryStopped, first_keyword, open_query, value_bytes

COUNT_FOREVER = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
WAIT = 120.0  # how long a test waits for a child before failing; the old code never ends
ADDRESS_SPACE = 1536 * 2**20  # the bounded children's RLIMIT_AS: the old code needed 3.8-4.4 GB
BOUNDED = (  # run the CLI with its address space capped: a MemoryError would be a traceback, exit 1
    "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({n}, {n})); "
    "from ragqual.cli.main import main; main(sys.argv[1:])"
).format(n=ADDRESS_SPACE)
THOUSAND_MEGABYTES = ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 1000) "
                      "SELECT randomblob(1000000) FROM r")


@pytest.fixture
def history(empty_history) -> Path:
    return empty_history


def sql(history: Path, *args: str, cwd: Path, bounded: bool = False) -> subprocess.CompletedProcess:
    start = ["-c", BOUNDED] if bounded else ["-m", "ragqual"]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # one BLAS thread: its buffers are address space too
    child = subprocess.Popen([sys.executable, *start, "--db", str(history), "sql", *args], cwd=cwd, env=env,
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
    with pytest.raises(QueryRefused, match="may not be modified"):  # the authorizer lets SQLite build json_each
        open_query(url, "WITH a AS (SELECT 1) UPDATE sqlite_master SET sql = ''")


def test_the_first_keyword_skips_comments_and_blanks():
    assert first_keyword("  -- a\n/* b */ select 1") == "select"
    assert first_keyword("/* only a comment */") == ""


def test_a_timeout_in_process_is_query_stopped(history):
    with pytest.raises(QueryStopped):
        with open_query(f"sqlite:///{history}", COUNT_FOREVER + "SELECT count(*) FROM c", timeout=0.3) as stream:
            list(stream)


# -- bytes -------------------------------------------------------------------------------------------

def _stopped_for_bytes(result: subprocess.CompletedProcess, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ragqual: error: the query was stopped: ") and f"--max-bytes {max_bytes:,}" in lines[0]
    return lines[0]


@pytest.mark.parametrize("statement", [
    "SELECT zeroblob(300000000)",
    "SELECT length(zeroblob(300000000))",  # built on the way, never returned
    THOUSAND_MEGABYTES,
    "SELECT " + ", ".join(["zeroblob(30000000)"] * 40),  # one row of 1.2 GB, each value under the bound
    "SELECT hex(zeroblob(40000000))",  # 80 MB of text from a 40 MB blob
])
def test_a_result_past_max_bytes_is_one_line_exit_2_in_bounded_memory(history, tmp_path, statement):
    result = sql(history, statement, cwd=tmp_path, bounded=True)
    _stopped_for_bytes(result)
    assert result.stdout == ""  # nothing printed as if it were the result


def test_streamed_rows_stop_at_max_bytes_and_say_so(history, tmp_path):
    result = sql(history, THOUSAND_MEGABYTES, "--limit", "0", "--format", "csv", cwd=tmp_path, bounded=True)
    line = _stopped_for_bytes(result)
    assert "nothing more is printed" in line
    assert len(result.stdout.splitlines()) < 1001


def test_max_bytes_counts_the_values_of_the_rows(history, tmp_path):
    rows = COUNT_FOREVER + "SELECT printf('%.*c', 1000, 'x') AS v FROM c LIMIT {n}"
    fits = sql(history, rows.format(n=4), "--max-bytes", "4000", "--format", "csv", cwd=tmp_path)
    assert fits.returncode == 0, fits.stderr
    assert fits.stdout.splitlines() == ["v"] + ["x" * 1000] * 4
    _stopped_for_bytes(sql(history, rows.format(n=5), "--max-bytes", "4000", cwd=tmp_path), 4000)


def test_max_bytes_zero_means_no_bound(history, tmp_path):
    statement = "SELECT length(zeroblob(100000000)) AS n"
    _stopped_for_bytes(sql(history, statement, cwd=tmp_path))
    result = sql(history, statement, "--max-bytes", "0", "--format", "csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["n", "100000000"]


def test_the_row_past_the_limit_does_not_count(history):
    """--limit 2 looks at a third row to say "more"; its bytes are not part of the result."""
    statement = COUNT_FOREVER + "SELECT CASE WHEN x < 3 THEN 'ab' ELSE '" + "y" * 30 + "' END FROM c"
    with open_query(f"sqlite:///{history}", statement, limit=2, max_bytes=32) as stream:
        assert list(stream) == [("ab",), ("ab",)] and stream.more
    with pytest.raises(QueryStopped, match="rows hold more than --max-bytes 32 bytes"):
        with open_query(f"sqlite:///{history}", statement, limit=3, max_bytes=32) as stream:
            list(stream)


def test_value_bytes_counts_utf8_blobs_and_numbers():
    assert [value_bytes(v) for v in ("abc", "é", b"\x00" * 5, 7, 2.5, None, ["a", "b"])] == [3, 2, 5, 8, 8, 8, 10]


# -- functions that expose pointers, load code or read files ------------------------------------------

@pytest.mark.parametrize("statement", [
    "SELECT fts3_tokenizer('simple')",
    "SELECT hex(fts3_tokenizer('simple'))",
    "SELECT FTS3_TOKENIZER('porter')",
    "SELECT fts5(NULL)",
    "SELECT load_extension('/tmp/x')",
    "SELECT name FROM sqlite_master WHERE name = fts3_tokenizer('simple')",
])
def test_functions_that_expose_pointers_or_load_code_are_refused(history, tmp_path, statement):
    result = sql(history, statement, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "not authorized" in result.stderr


def test_ordinary_functions_and_table_valued_functions_still_work(history):
    with open_query(f"sqlite:///{history}", "SELECT upper('a'), length(randomblob(10)), "
                    "(SELECT count(*) FROM json_each('[1,2]')), (SELECT count(*) > 0 FROM pragma_function_list)") as s:
        assert list(s) == [("A", 10, 2, 1)]


# -- PostgreSQL ----------------------------------------------------------------------------------------

@pytest.fixture
def pg_url() -> str:
    url = os.environ.get("RAGQUAL_TEST_PG_URL")
    if not url:
        pytest.skip("needs RAGQUAL_TEST_PG_URL")
    return url


@pytest.mark.postgres
def test_postgres_rows_past_max_bytes_are_stopped(pg_url):
    statement = "SELECT repeat('x', 1000000) FROM generate_series(1, 1000)"
    with pytest.raises(QueryStopped, match="--max-bytes 67,108,864"):
        with open_query(pg_url, statement) as stream:
            list(stream)
    with open_query(pg_url, statement, max_bytes=0, limit=3) as stream:
        assert [len(row[0]) for row in stream] == [1000000] * 3


@pytest.mark.postgres
def test_postgres_fetches_shrink_as_rows_grow(pg_url):
    """Rows of 1 MB against a 10 MB bound: stopped after about ten rows, not after a batch of 500."""
    statement = "SELECT repeat('x', 1000000) FROM generate_series(1, 100000)"
    seen = 0
    with pytest.raises(QueryStopped):
        with open_query(pg_url, statement, limit=0, max_bytes=10_000_000) as stream:
            for _ in stream:
                seen += 1
    assert seen == 10


@pytest.mark.postgres
@pytest.mark.parametrize("statement", [
    "SELECT pg_read_file('/etc/hostname')",
    "SELECT pg_catalog.PG_READ_BINARY_FILE('/etc/hostname')",
    'SELECT "pg_ls_dir"(\'.\')',
    "SELECT lo_import('/etc/hostname')",
    "SELECT lo_export(1, '/tmp/x')",
    "SELECT set_config('statement_timeout', '0', true)",
    "SELECT query_to_xml('select 1', true, true, '')",
    "SELECT dblink('host=x', 'select 1')",
    'SELECT U&"\\0070g_read_file"(\'/etc/hostname\')',
    "DO $$ BEGIN PERFORM 1; END $$",
])
def test_postgres_functions_that_reach_files_or_run_strings_are_refused(pg_url, statement):
    with pytest.raises(QueryRefused):
        open_query(pg_url, statement)


@pytest.mark.postgres
def test_postgres_reads_still_work(pg_url):
    with open_query(pg_url, "SELECT upper('a'), count(*) FROM generate_series(1, 3)") as stream:
        assert list(stream) == [("A", 3)]
