"""Static types, checked by mypy with the settings of [tool.mypy] in pyproject.toml.

The whole package passes at mypy's default strictness, and the pure core and the store also under
--strict. A failure prints mypy's own report.
"""

import sys
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api", reason="mypy is part of the test extra: pip install -e '.[test]'")

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "pyproject.toml")


def mypy(*args: str) -> tuple[str, int]:
    limit = sys.getrecursionlimit()  # mypy raises it for its own run; later tests rely on the default
    try:
        out, err, status = api.run(["--config-file", CONFIG, *args])
    finally:
        sys.setrecursionlimit(limit)
    return out + err, status


def test_the_package_type_checks() -> None:
    report, status = mypy(str(ROOT / "ragqual"))
    assert status == 0, report


def test_core_and_store_type_check_strictly() -> None:
    # modules they import are checked (for the types they export) but judged by the test above
    report, status = mypy("--strict", "--follow-imports=silent", str(ROOT / "ragqual" / "core"),
                          str(ROOT / "ragqual" / "store"))
    assert status == 0, report


def test_a_type_error_is_reported(tmp_path: Path) -> None:
    """The check can fail: a wrong annotation in a module is reported with its file and line."""
    bad = tmp_path / "bad.py"
    bad.write_text("def half(n: int) -> str:\n    return n // 2\n")
    report, status = mypy(str(bad))
    assert status == 1
    assert "bad.py:2: error" in report
