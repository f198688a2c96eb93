"""[tool.ragqual] accepts only the keys ragqual reads."""

from pathlib import Path

import pytest

from ragqual.config import load_pyproject_settings
from ragqual.errors import InputError


def write(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text("[tool.ragqual]\n" + body, encoding="utf-8")


def test_a_key_nothing_reads_is_refused_by_name(tmp_path: Path) -> None:
    """`cache` was accepted and silently ignored; the cache mode is the --cache flag."""
    write(tmp_path, 'corpus = "corpus"\ncache = "off"\n')
    with pytest.raises(InputError, match=r"unknown keys in \[tool.ragqual\]: cache"):
        load_pyproject_settings(tmp_path)


def test_the_keys_that_are_read_load(tmp_path: Path) -> None:
    write(tmp_path, 'corpus = "kb"\ndb = "sqlite:///x.db"\n')
    assert load_pyproject_settings(tmp_path) == {"corpus": "kb", "db": "sqlite:///x.db"}
