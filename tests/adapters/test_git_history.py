"""Where a baseline's commit stands against HEAD, asked of a real git."""

import subprocess

from ragqual.adapters.git_history import ancestry

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
       "PATH": "/usr/bin:/bin"}


def _git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=ENV).stdout.strip()


def test_no_repository_no_sha_and_an_unknown_commit_are_said(tmp_path):
    assert ancestry("abc", tmp_path).note == "no git repository here"
    assert "recorded no git sha" in ancestry(None, tmp_path).note
    _git(tmp_path, "init", "-q")
    assert ancestry("abc", tmp_path).note == "the git checkout has no commit"
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "one")
    assert "commit 0123456789ab is not in this checkout" in ancestry("0123456789abcdef" * 2 + "01234567", tmp_path).note


def test_behind_and_not_an_ancestor(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "one")
    first = _git(tmp_path, "rev-parse", "HEAD")
    for n in range(3):
        _git(tmp_path, "commit", "-q", "--allow-empty", "-m", f"more {n}")
    found = ancestry(first, tmp_path)
    assert (found.note, found.is_ancestor, found.commits_behind) == ("ok", True, 3)
    assert found.days_behind is not None and found.days_behind >= 0
    _git(tmp_path, "checkout", "-q", "--orphan", "other")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    assert ancestry(first, tmp_path).is_ancestor is False
