"""Whole-run reliability fixtures: a throwaway project, the real CLI in a subprocess, the history db.

Every scenario runs `python -m ragqual` as a child process inside a temporary project that holds
a copy of the bundled corpus and goldens, with its own history database and cache, so a killed
run can only damage its own files. The children are tracked and killed at teardown (by pid) if a
test fails before they end.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 180.0  # a bound for one CLI run on a loaded machine, never asserted on
POLL_SECONDS = 0.05


@dataclass
class Project:
    """A user's project folder with its own history db and cache; runs the CLI as a subprocess."""

    root: Path
    env: dict[str, str]
    children: list[subprocess.Popen] = field(default_factory=list)

    @property
    def db_path(self) -> Path:
        return Path(self.env["RAGQUAL_DB"])

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "ragqual", *args]

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start `ragqual ARGS` in the background; stdout and stderr are captured as text."""
        child = subprocess.Popen(
            self.command(*args), cwd=self.root, env={**self.env, **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.children.append(child)
        return child

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run `ragqual ARGS` to its end."""
        child = self.start(*args, env=env)
        out, err = child.communicate(timeout=RUN_TIMEOUT)
        return subprocess.CompletedProcess(child.args, child.returncode, out, err)

    def db(self) -> sqlite3.Connection:
        """A read-only connection to the history database (raises while it does not exist)."""
        return sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self.db() as conn:
            return conn.execute(sql, tuple(params)).fetchall()

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.query(sql, params)[0][0]

    def reap(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
                child.communicate(timeout=30)


def copy_project(root: Path, *, goldens: bool = True) -> None:
    shutil.copytree(REPO / "corpus", root / "corpus")
    if goldens:
        shutil.copytree(REPO / "goldens", root / "goldens")


def child_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("OLLAMA_HOST", "QDRANT_URL", "RAGQUAL_MODEL_TIMEOUT", "PYTHONWARNINGS"):
        env.pop(var, None)
    env["RAGQUAL_DB"] = str(root / "history" / "eval.db")
    env["RAGQUAL_CACHE_DIR"] = str(root / "cache")
    env["RAGQUAL_QDRANT_WAIT"] = "5"
    return env


@pytest.fixture
def project(tmp_path: Path):
    """A project folder with the bundled corpus and goldens, its own db and cache."""
    root = tmp_path / "project"
    root.mkdir()
    copy_project(root)
    (root / "history").mkdir()
    proj = Project(root, child_env(root))
    yield proj
    proj.reap()


def count_trials(project: Project) -> int:
    """Trials stored so far (0 while the database or its tables do not exist yet)."""
    if not project.db_path.exists():
        return 0
    try:
        return int(project.scalar("SELECT COUNT(*) FROM trials"))
    except sqlite3.OperationalError:  # created but not migrated yet
        return 0


def wait_for_trials(project: Project, child: subprocess.Popen, at_least: int, bound: float = RUN_TIMEOUT) -> int:
    """Poll the db until `at_least` trials are stored; fail if the child ends first."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        seen = count_trials(project)
        if seen >= at_least:
            return seen
        if child.poll() is not None:
            out, err = child.communicate()
            pytest.fail(f"the run ended (exit {child.returncode}) before {at_least} trials were stored:\n{out}\n{err}")
        time.sleep(POLL_SECONDS)
    pytest.fail(f"fewer than {at_least} trials stored after {bound:g} s")


def stop_with(child: subprocess.Popen, sig: signal.Signals, bound: float = 15.0) -> tuple[str, str]:
    """Send `sig` to the one child process; wait (bounded) for it to end; its stdout and stderr."""
    child.send_signal(sig)
    try:
        return child.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate(timeout=30)
        pytest.fail(f"the run did not end within {bound:g} s of {sig.name}")


class SlowReply:
    """A FakeOllama reply that takes `delay` seconds and counts the answers it has given."""

    def __init__(self, delay: float, text: str | Callable[[dict[str, Any]], str] = "The answer is 42."):
        self.delay = delay
        self.text = text
        self.answered = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        time.sleep(self.delay)
        with self._lock:
            if "messages" in body:
                self.answered += 1
        return self.text(body) if callable(self.text) else self.text


def run_events(project: Project, run_id: int) -> list[str]:
    return [row[0] for row in project.query("SELECT event FROM run_events WHERE run_id=? ORDER BY id", (run_id,))]


def only_run_id(project: Project) -> int:
    ids = project.query("SELECT id FROM runs")
    assert len(ids) == 1, f"expected one run, found {ids}"
    return int(ids[0][0])


def assert_no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
