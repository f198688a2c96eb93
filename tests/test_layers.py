"""The layering of the package, checked by import-linter against the contracts in pyproject.toml.

core imports nothing of ragqual but errors; store and adapters never reach up into the engine,
pipeline, subjects, app, reports or CLI; nothing imports the CLI; the top-level packages form no
cycle. A failure prints import-linter's own report (which import broke which contract).
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lint_imports() -> Path:
    tool = Path(sys.executable).parent / "lint-imports"
    if not tool.exists():
        pytest.fail("lint-imports is missing: pip install -e '.[test]'")
    return tool


def test_import_contracts_are_kept() -> None:
    done = subprocess.run([str(lint_imports()), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_a_broken_contract_is_reported(tmp_path: Path) -> None:
    """The check can fail: a contract the code breaks (core must not import errors) is reported."""
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "ragqual"\n\n'
        '[[tool.importlinter.contracts]]\nname = "core without errors"\ntype = "forbidden"\n'
        'source_modules = ["ragqual.core"]\nforbidden_modules = ["ragqual.errors"]\n'
    )
    done = subprocess.run([str(lint_imports()), "--no-cache", "--config", str(config)], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "ragqual.core" in done.stdout and "BROKEN" in done.stdout
