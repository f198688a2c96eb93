"""A `--db` URL that is malformed or names a server that cannot be reached is one line, never a
traceback, and never shows the password.

Reproductions of the issue: `--db 'sqlite://alice:pw@//path'` ended in an `ArgumentError`
traceback and `--db postgresql://u:pw@127.0.0.1:1/x` in an `OperationalError` traceback, both
with exit 1 (the code a CI gate reads as "regression").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from ragqual.cli.main import main
from ragqual.errors import EXIT_INPUT, EXIT_STORAGE, InputError
from ragqual.store.db import parse_url

PASSWORD = "s3cr3t-pw"
UNREACHABLE = f"postgresql://u:{PASSWORD}@127.0.0.1:1/x"  # port 1: nothing listens, refused at once
COMMANDS = [["history"], ["report", "--last"], ["sql", "SELECT 1"], ["db", "current"], ["db", "upgrade"],
            ["verify"], ["run", "--subject", "sentiment", "--model", "mock", "--trial-count", "1"]]
MALFORMED = [
    f"sqlite://alice:{PASSWORD}@//path/eval.db",  # a SQLite URL with a user and password
    f"sqlite://alice:{PASSWORD}@host/eval.db",  # ... and a host
    f"postgresql://u:{PASSWORD}@host:notaport/x",  # a port that is not a number
    f"postgresql://u:{PASSWORD}@[::1/x",  # an unclosed IPv6 bracket
    f"nosuchdialect://u:{PASSWORD}@host/x",  # no such SQLAlchemy dialect
    f"postgresql+nosuchdriver://u:{PASSWORD}@host/x",  # no such driver
    f"mysql://u:{PASSWORD}@host/x",  # a dialect whose driver is not installed
    f"://u:{PASSWORD}@host/x",  # no scheme at all
]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "eval-results").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RAGQUAL_DB", raising=False)
    return tmp_path


def _ragqual(args: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    return caught.value.code, out + err


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    assert lines[0].startswith("ragqual: error: "), text
    return lines[0]


@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.parametrize("command", [COMMANDS[0], COMMANDS[2], COMMANDS[-1]], ids=lambda c: c[0])
def test_a_malformed_url_is_one_line_exit_2_with_the_password_masked(project, capsys, url, command):
    code, text = _ragqual(["--db", url, *command], capsys)
    line = _one_line(text)
    assert code == EXIT_INPUT, text
    assert PASSWORD not in text and "***" in line
    assert "--db" in line


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_url_from_the_environment_is_refused_the_same_way(project, capsys, monkeypatch, url):
    monkeypatch.setenv("RAGQUAL_DB", url)
    code, text = _ragqual(["history"], capsys)
    assert code == EXIT_INPUT and PASSWORD not in _one_line(text)


@pytest.mark.parametrize("url", MALFORMED)
def test_parse_url_refuses_each_shape_with_input_error(url):
    with pytest.raises(InputError) as caught:
        parse_url(url)
    assert PASSWORD not in str(caught.value)


def test_parse_url_given_a_path_object_is_an_input_error_not_a_crash(tmp_path):
    # a pathlib.Path is not a URL SQLAlchemy reads; the message used to crash building its text
    with pytest.raises(InputError, match="cannot be used"):
        parse_url(tmp_path / "eval.db")  # type: ignore[arg-type]


def test_parse_url_accepts_the_usual_shapes(tmp_path):
    for url in (f"sqlite:///{tmp_path}/eval.db", "sqlite://", "sqlite:///:memory:",
                "postgresql://u:pw@127.0.0.1:5432/x", "postgresql+psycopg://u@host/x"):
        assert parse_url(url) == make_url(url)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_an_unreachable_postgresql_is_one_line_exit_4_with_the_password_masked(project, capsys, command):
    code, text = _ragqual(["--db", UNREACHABLE, *command], capsys)
    line = _one_line(text)
    assert code == EXIT_STORAGE, text
    assert PASSWORD not in text
    assert "postgresql://***@127.0.0.1:1/x" in line and "cannot be reached" in line


@pytest.mark.parametrize(("password", "code"), [(f"{PASSWORD} with space", EXIT_STORAGE),
                                                (f"{PASSWORD}@second-at", EXIT_INPUT)])
def test_a_password_with_odd_characters_is_masked_whole(project, capsys, password, code):
    got, text = _ragqual(["--db", f"postgresql://u:{password}@127.0.0.1:1/x", "history"], capsys)
    line = _one_line(text)
    assert got == code, text
    assert PASSWORD not in text and "second-at" not in text and "postgresql://***@127.0.0.1:1/x" in line


@pytest.mark.postgres
@pytest.mark.parametrize("change", ["password", "database"])
def test_a_refused_login_or_a_missing_database_is_one_line_exit_4(project, capsys, change):
    server = os.environ.get("RAGQUAL_TEST_PG_URL")
    if not server:
        pytest.skip("needs RAGQUAL_TEST_PG_URL")
    parsed = make_url(server)
    url = (parsed.set(password=PASSWORD) if change == "password"
           else parsed.set(database="ragqual_no_such_db")).render_as_string(hide_password=False)
    code, text = _ragqual(["--db", url, "history"], capsys)
    line = _one_line(text)
    assert code == EXIT_STORAGE, text
    assert PASSWORD not in text and "://***@127.0.0.1" in line
    assert ("user or password" if change == "password" else "does not exist") in line
