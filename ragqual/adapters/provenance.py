"""Provenance of a run: git state, versions, argv. The only place ragqual asks git.

Credentials in argv and params are masked here already (ragqual.core.redact), so neither the
history nor a report built from the provenance ever holds one. Every run's params also record
whether it ran against the project's goldens lock (`goldens_lock`: locked / drifted / no lock)."""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Sequence
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


def capture(
    *,
    argv: Sequence[str] | None = None,
    cwd: Path | None = None,
    params: dict[str, Any] | None = None,
    corpus_fingerprint: str | None = None,
    dataset_hash: str | None = None,
    prompt_hashes: Sequence[str] = (),
) -> Provenance:
    here = cwd or Path.cwd()
    sha, dirty, note = git_state(here)
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
