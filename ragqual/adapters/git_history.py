"""Where a baseline's commit stands relative to HEAD, asked of git through subprocess (the rule
that turns it into a warning is `ragqual.core.staleness`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ragqual.core.staleness import Ancestry


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _commit_time(cwd: Path, rev: str) -> int | None:
    done = _git(cwd, "show", "-s", "--format=%ct", rev)
    return int(done.stdout.strip()) if done and done.returncode == 0 and done.stdout.strip().isdigit() else None


def ancestry(sha: str | None, cwd: Path) -> Ancestry:
    """Is `sha` an ancestor of HEAD in the checkout at `cwd`, and how far behind is it."""
    if not sha:
        return Ancestry("the baseline recorded no git sha (it was measured outside a git checkout)")
    head = _git(cwd, "rev-parse", "HEAD")
    if head is None:
        return Ancestry("git is not available")
    if head.returncode != 0:
        not_repo = "not a git repository" in head.stderr.lower()
        return Ancestry("no git repository here" if not_repo else "the git checkout has no commit")
    head_sha = head.stdout.strip()
    known = _git(cwd, "cat-file", "-e", f"{sha}^{{commit}}")
    if known is None or known.returncode != 0:
        return Ancestry(f"commit {sha[:12]} is not in this checkout (a shallow clone? fetch with fetch-depth: 0)",
                        head_sha)
    merge_base = _git(cwd, "merge-base", "--is-ancestor", sha, "HEAD")
    is_ancestor = merge_base is not None and merge_base.returncode == 0
    counted = _git(cwd, "rev-list", "--count", f"{sha}..HEAD")
    behind = int(counted.stdout.strip()) if counted and counted.returncode == 0 else None
    base_time, head_time = _commit_time(cwd, sha), _commit_time(cwd, "HEAD")
    days = (head_time - base_time) / 86400 if base_time is not None and head_time is not None else None
    return Ancestry("ok", head_sha, is_ancestor, behind, days)
