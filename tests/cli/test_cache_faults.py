"""A cache folder that cannot be written, or that is full of damaged entries, is the cache's
problem, said once: never blamed on the history, never a crash, never one line per entry.

Reproductions of the issue: with the cache folder read-only, `ragqual retrieval` and e2e
`ragqual generation` exited 4 saying the *history database* could not be opened; a search cache
whose every entry was planted printed 1,287 warning lines on one retrieval run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

RETRIEVAL = ["--json", "retrieval", "--limit", "6"]
E2E = ["--json", "generation", "--model", "mock", "--mode", "e2e", "--limit", "3", "--repeats", "1"]


def _ragqual(workdir: Path, cache: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """The real command in its own process (warnings reach stderr as a user sees them)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAGQUAL_DB", "PYTHONWARNINGS")}
    env["RAGQUAL_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "ragqual", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def _quality(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["quality"]


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "warn" in line.lower()]


def _read_only(folder: Path) -> None:
    """Read-only for everyone, root included (chattr +i on every entry), else plain permissions."""
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "-R", "+i", str(folder)], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip("running as root on a file system without chattr +i: nothing is read-only")
    else:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)


def _writable(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-R", "-i", str(folder)], capture_output=True, check=False)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.fixture(scope="module")
def filled(workdir, shared_cache, tmp_path_factory) -> tuple[Path, dict]:
    """A cache folder every cache of a retrieval and an e2e run has written to, and the numbers of
    that retrieval run."""
    folder = tmp_path_factory.mktemp("filled") / "cache"
    shutil.copytree(shared_cache, folder)  # the session's embeddings: nothing to embed again
    quality = _quality(_ragqual(workdir, folder, RETRIEVAL))
    assert _ragqual(workdir, folder, E2E).returncode == 0
    return folder, quality


@pytest.fixture
def read_only_cache(filled, tmp_path):
    folder = tmp_path / "cache"
    shutil.copytree(filled[0], folder)
    _read_only(folder)
    yield folder
    _writable(folder)


def _one_cache_warning(stderr: str, folder: Path) -> str:
    found = _warnings(stderr)
    assert len(found) == 1, stderr
    assert "Traceback" not in stderr and "history" not in stderr, stderr
    assert found[0].startswith("ragqual: warning:") and str(folder) in found[0], found[0]
    assert "RAGQUAL_CACHE_DIR" in found[0] and "writable" in found[0], found[0]
    return found[0]


def test_retrieval_with_a_read_only_cache_runs_without_it_to_the_same_numbers(workdir, filled, read_only_cache):
    done = _ragqual(workdir, read_only_cache, RETRIEVAL)
    assert done.returncode == 0, done.stderr
    _one_cache_warning(done.stderr, read_only_cache)
    assert _quality(done) == filled[1]


def test_e2e_generation_with_a_read_only_cache_runs_without_it(workdir, read_only_cache):
    done = _ragqual(workdir, read_only_cache, E2E)
    assert done.returncode == 0, done.stderr
    _one_cache_warning(done.stderr, read_only_cache)


def test_a_cache_folder_that_cannot_be_created_is_named_and_the_run_goes_on(workdir, filled, tmp_path):
    """A cache path under a regular file: creating the folder fails for every user, root too."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should go\n")
    done = _ragqual(workdir, blocker / "cache", RETRIEVAL)
    assert done.returncode == 0, done.stderr
    _one_cache_warning(done.stderr, blocker / "cache")
    assert _quality(done) == filled[1]


def _plant(database: Path) -> int:
    """Replace every stored value with bytes that are no entry ragqual wrote; the number replaced."""
    con = sqlite3.connect(database)
    try:
        with con:
            changed = con.execute("UPDATE Cache SET value = CAST('planted' AS BLOB), filename = NULL, mode = 1").rowcount
    finally:
        con.close()
    return changed


def test_a_cache_full_of_planted_entries_is_one_warning_per_cache_with_a_count(workdir, filled, tmp_path):
    folder = tmp_path / "cache"
    shutil.copytree(filled[0], folder)
    assert _plant(folder / "search" / "cache.db") > 10
    assert _plant(folder / "embeddings" / "cache.db") > 10
    done = _ragqual(workdir, folder, RETRIEVAL)
    assert _quality(done) == filled[1]
    found = _warnings(done.stderr)
    assert "Traceback" not in done.stderr
    search = [line for line in found if "search-cache" in line]
    embedding = [line for line in found if "embedding-cache" in line]
    assert len(search) == 1 and len(embedding) == 1 and len(found) == 2, done.stderr
    for line, where in ((search[0], folder / "search"), (embedding[0], folder / "embeddings")):
        count = re.match(r"ragqual: warning: (\d+) \S+ entries in (\S+) were unreadable or inconsistent and were ignored", line)
        assert count is not None and int(count.group(1)) > 1 and count.group(2) == str(where), line
