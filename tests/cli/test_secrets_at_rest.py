"""Credentials given on the command line reach no file: not the database, its WAL, the caches,
the embedded-folder holder file, nor what the commands print.

Reproductions of the issue: `--model 'openai:http://alice:pw@host/v1#m'`, `--ollama-host
http://bob:pw@...` and `--db postgresql://u:pw@...` used to be stored verbatim in runs.argv,
runs.params, the provenance and variant_configs, forever.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ragqual.adapters import qdrant_store
from ragqual.adapters.provenance import capture
from ragqual.cli.main import main
from ragqual.store.runstore import RunStore

ALICE, BOB, DB_PASSWORD = "S3cr3tAlice", "S3cr3tBob", "S3cr3tDbPass"


class _Chat(BaseHTTPRequestHandler):
    """An OpenAI-compatible stand-in: every chat completion answers `positive`."""

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": '{"label": "positive"}'}}],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 3}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def chat_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _files_holding(root: Path, secret: str) -> list[str]:
    needle = secret.encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


def _ragqual(args: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    return caught.value.code, out + err


def test_model_and_host_credentials_reach_no_file(tmp_path, monkeypatch, capsys, chat_server):
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "eval.db"
    model = f"openai:http://alice:{ALICE}@127.0.0.1:{chat_server}/v1#m"
    code, printed = _ragqual(["--db", str(db), "run", "--subject", "sentiment", "--model", model,
                              "--ollama-host", f"http://bob:{BOB}@127.0.0.1:9", "--trial-count", "1"], capsys)
    assert code == 0, printed
    for command in (["report", "--last"], ["history"], ["audit", "1"], ["--json", "report", "--last"],
                    ["report", "--last", "--format", "markdown"]):
        code, out = _ragqual(["--db", str(db), *command], capsys)
        assert code == 0, out
        printed += out
    assert "127.0.0.1" in printed  # the endpoint is still named; only its credentials are not
    assert {s: _files_holding(tmp_path, s) for s in (ALICE, BOB)} == {ALICE: [], BOB: []}
    assert ALICE not in printed and BOB not in printed


def test_an_unreachable_model_with_credentials_fails_without_storing_them(tmp_path, monkeypatch, capsys):
    """The failure message names the URL: the failed event and the trial errors must not hold the secret."""
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGQUAL_MODEL_TIMEOUT", "2")
    db = tmp_path / "eval.db"
    model = f"openai:http://alice:{ALICE}@127.0.0.1:9/v1#m"
    code, printed = _ragqual(["--db", str(db), "run", "--subject", "sentiment", "--model", model,
                              "--trial-count", "1", "--case-slugs", "neg-broken-package"], capsys)
    assert code != 0
    assert _files_holding(tmp_path, ALICE) == []


def test_database_url_password_is_not_stored(tmp_path):
    db = tmp_path / "eval.db"
    store = RunStore.open(f"sqlite:///{db}")
    argv = ["ragqual", "--db", f"postgresql://u:{DB_PASSWORD}@127.0.0.1/eval", "history"]
    store.start_run("retrieval", None, capture(argv=argv, params={"db": argv[2], "api_key": DB_PASSWORD}))
    store.engine.dispose()
    assert _files_holding(tmp_path, DB_PASSWORD) == []


def test_the_qdrant_holder_file_masks_credentials(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.argv", ["ragqual", "--db", f"postgresql://u:{DB_PASSWORD}@h/x", "retrieval"])
    qdrant_store._write_holder(tmp_path / qdrant_store.HOLDER_FILE)
    assert "postgresql://***@h/x" in (tmp_path / qdrant_store.HOLDER_FILE).read_text()
    assert _files_holding(tmp_path, DB_PASSWORD) == []
