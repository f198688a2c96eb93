"""Provenance of a run: git state, versions, argv. The only place ragqual asks git.

Credentials in argv and params are masked here already (ragqual.core.redact), so neither the
history nor a report built from the provenance ever holds one. Every run's params also record
whether it ran against the project's goldens lock (`goldens_lock`: locked / drifted / no lock)."""

from __future__ import annotations

import platform
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragqual import __version__
from ragqual.adapters.lock_files import lock_state
from ragqual.config import find_project_root
from ragqual.core.lockfile import lock_params
from ragqual.core.redact import redact_argv, redact_value
from ragqual.store.records import Provenance


def git_state(cwd: Path) -> tuple[str | None, bool | None, str]:
    """(sha, dirty, note). Outside a checkout: (None, None, "not a git checkout")."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, None, f"git unavailable: {exc}"
    if sha.returncode != 0:
        if "not a git repository" in sha.stderr.lower():
            return None, None, "not a git checkout"
        return None, None, "git checkout without commits"
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=cwd, capture_output=True, text=True, timeout=10,
    )
    return sha.stdout.strip(), bool(status.stdout.strip()), "ok"


GitState = tuple[str | None, bool | None, str]


def git_state_ahead(cwd: Path | None = None) -> Callable[[], GitState]:
    """`git_state` asked on a daemon thread now; the returned function waits for it.

    The one or two `git` processes (start-up, and `git status` reading the work tree) take 10-60 ms
    of waiting that a run can spend searching instead; the answer is the same as asking later,
    since a run does not write inside the checkout before it records its provenance. Should the
    thread fail, the answer is asked again in the foreground, where the error shows."""
    here = cwd or Path.cwd()
    answer: list[GitState] = []

    def ask() -> None:
        try:
            answer.append(git_state(here))
        except Exception:  # noqa: BLE001 - asked again in the foreground, which raises it there
            return

    thread = threading.Thread(target=ask, name="ragqual-git-state", daemon=True)
    thread.start()

    def take() -> GitState:
        thread.join()
        return answer[0] if answer else git_state(here)

    return take


def capture(
    *,
    argv: Sequence[str] | None = None,
    cwd: Path | None = None,
    params: dict[str, Any] | None = None,
    corpus_fingerprint: str | None = None,
    dataset_hash: str | None = None,
    prompt_hashes: Sequence[str] = (),
    git: Callable[[], GitState] | None = None,
) -> Provenance:
    """The run's provenance; `git` gives the git state asked ahead (`git_state_ahead`), else it is asked now."""
    here = cwd or Path.cwd()
    sha, dirty, note = git() if git is not None else git_state(here)
    status, drifted = lock_state(find_project_root(here) or here, prompt_hashes)
    params = {**(params or {}), **lock_params(status, drifted)}
    return Provenance(
        git_sha=sha,
        git_dirty=dirty,
        git_note=note,
        ragqual_version=__version__,
        python_version=platform.python_version(),
        argv=tuple(redact_argv(sys.argv if argv is None else argv)),
        corpus_fingerprint=corpus_fingerprint,
        dataset_hash=dataset_hash,
        prompt_hashes=tuple(prompt_hashes),
        params=redact_value(dict(params or {})),
    )
