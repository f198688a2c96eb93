"""A crash is not a verdict: an unexpected exception exits 70 (EX_SOFTWARE), never 1 (what a CI
gate reads as a regression), with one line naming the command and the file holding the traceback;
`-v` prints the traceback too. Storage faults keep their own translation (exit 4)."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ragqual.cli.endings import invocation
from ragqual.cli.main import cli
from ragqual.errors import EXIT_INTERNAL, EXIT_STORAGE
from tests.cli.conftest import ragqual

LINE = re.compile(r"^ragqual: internal error in `ragqual compare`: RuntimeError: boom in the comparison; "
                  r"traceback written to (?P<path>\S+\.txt) \(run with -v to print it\)$")

CRASHING_COMPARE = """
import sys
import ragqual.cli.compare_cmd as compare_cmd

def crash(*args, **kwargs):
    raise RuntimeError("boom in the comparison")

compare_cmd.compare_sources = crash
from ragqual.cli.main import main
main(sys.argv[1:])
"""


def run_crashing_compare(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(temp), "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", CRASHING_COMPARE, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_an_internal_error_in_compare_exits_70_with_one_line_naming_the_traceback_file(tmp_path):
    done = run_crashing_compare(tmp_path, "--db", str(tmp_path / "h.db"), "compare", "1", "2")
    assert done.returncode == EXIT_INTERNAL == 70, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    match = LINE.match(lines[0])
    assert match, lines[0]
    written = Path(match["path"])
    assert written.parent == tmp_path / "tmp" and written.name.startswith("ragqual-crash-compare-")
    text = written.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "RuntimeError: boom in the comparison" in text
    assert "ragqual compare" in text.splitlines()[0]


def test_with_v_the_traceback_is_printed_as_well(tmp_path):
    done = run_crashing_compare(tmp_path, "-v", "compare", "1", "2")
    assert done.returncode == 70
    assert "Traceback (most recent call last)" in done.stderr and ", in crash\n" in done.stderr
    assert "\nRuntimeError: boom in the comparison\n" in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ragqual: internal error in `ragqual compare`: RuntimeError: boom in the comparison; "
                           "traceback written to ")
    assert "run with -v" not in last


def test_in_process_the_entry_point_exits_70_not_1(head_db, monkeypatch, tmp_path, capsys):
    def crash(*args, **kwargs):
        raise KeyError("no such group")

    monkeypatch.setattr("ragqual.cli.compare_cmd.compare_sources", crash)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, out, err = ragqual(head_db, ["compare", "1", "2"], capsys)
    assert code == 70 and out == ""
    assert err.startswith("ragqual: internal error in `ragqual compare`: KeyError: 'no such group'; traceback written to ")
    assert len(list(tmp_path.glob("ragqual-crash-compare-*.txt"))) == 1


def test_an_unwritable_temporary_folder_is_said_in_the_same_line(head_db, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr("ragqual.cli.compare_cmd.compare_sources", lambda *a, **k: 1 / 0)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    code, _, err = ragqual(head_db, ["compare", "1", "2"], capsys)
    assert code == 70
    assert err.count("\n") == 1 and "ZeroDivisionError: division by zero; the traceback could not be written" in err


def test_a_storage_fault_is_still_exit_4(head_db, monkeypatch, capsys):
    def full(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("ragqual.cli.compare_cmd.compare_sources", full)
    code, _, err = ragqual(head_db, ["compare", "1", "2"], capsys)
    assert code == EXIT_STORAGE and "the disk holding it is full" in err and "internal error" not in err


@pytest.mark.parametrize("args, expected", [
    (["compare", "1", "2"], ("ragqual compare", 0)),
    (["--db", "x.db", "-vv", "corpus", "reset", "--yes"], ("ragqual corpus reset", 2)),
    (["--verbose", "--cache", "off", "baseline", "promote", "3"], ("ragqual baseline promote", 1)),
    (["--json", "report", "--last"], ("ragqual report", 0)),
    (["baseline", "--help-me", "promote", "3"], ("ragqual baseline promote", 0)),
    (["corpus"], ("ragqual corpus", 0)),
    (["no-such-command", "x"], ("ragqual no-such-command", 0)),
    ([], ("ragqual", 0)),
    (["--db", "x.db", "-v", "--cache=off", "-v", "history", "-v"], ("ragqual history", 2)),
])
def test_the_command_and_verbosity_are_read_from_the_arguments(args, expected):
    assert invocation(args, cli) == expected
