"""benchmarks/source_trees.py: an older source tree run beside this one uses its own migrations."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from source_trees import with_own_migrations  # noqa: E402

REPO = BENCHMARKS.parent


def _older_tree(root: Path) -> Path:
    """A copy of this checkout laid out as `git archive` leaves it: migrations/ only at the top."""
    tree = root / "older"
    shutil.copytree(REPO / "ragqual", tree / "ragqual", ignore=shutil.ignore_patterns("__pycache__", "minilm"))
    shutil.copytree(REPO / "migrations", tree / "migrations", ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _check(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{BENCHMARKS}"}
    code = "from source_trees import check_one_tree; check_one_tree(); print('one tree')"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tree)


def test_an_archived_tree_borrowing_this_checkouts_migrations_is_refused(tmp_path: Path) -> None:
    tree = _older_tree(tmp_path)
    done = _check(tree)
    assert done.returncode != 0
    assert f"comes from {tree}" in done.stderr and "migrations" in done.stderr


def test_with_own_migrations_links_the_trees_own_migrations(tmp_path: Path) -> None:
    tree = _older_tree(tmp_path)
    assert with_own_migrations(tree) == tree
    link = tree / "ragqual" / "migrations"
    assert link.is_symlink() and link.resolve() == (tree / "migrations").resolve()
    assert with_own_migrations(tree) == tree  # a second call leaves the link as it is
    done = _check(tree)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "one tree"


def test_a_folder_that_is_not_a_source_tree_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="not a ragqual source tree"):
        with_own_migrations(tmp_path)
    (tmp_path / "ragqual").mkdir()
    (tmp_path / "ragqual" / "__init__.py").write_text("")
    with pytest.raises(SystemExit, match="no migrations/ of its own"):
        with_own_migrations(tmp_path)
