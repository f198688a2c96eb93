"""The CLI is a skin over ragqual.app: it parses flags, calls the app layer, and formats.

Checked on the source of every module under ragqual/cli/: none is longer than 200 lines; none
calls what opens a history store, a Qdrant index, an embedder or a model (the app layer does,
behind one call per command); and no command module imports another command module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[1] / "ragqual" / "cli"
MAX_LINES = 200
# Calls that open (or build) a store, an index, an embedder, a model or their services.
OPENERS = frozenset({
    "store", "load_corpus_context", "make_engine", "RunStore", "services_for", "response_cache", "open_query",
    "open_qdrant", "open_edge", "make_embedder", "make_model", "EvalIndex", "require_existing", "client",
    "maintenance_index", "build_retriever", "open_history",
})
# Attributes that hand out an opened index or embedder.
OPENED_ATTRIBUTES = frozenset({"embedder", "raw_embedder", "dense_index"})


def cli_modules() -> list[Path]:
    return sorted(CLI.glob("*.py"))


def opening_calls(source: str) -> list[str]:
    """`name (line N)` for each call of an opener and each use of an opened attribute in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in OPENERS:
                found.append(f"{name} (line {node.lineno})")
        elif isinstance(node, ast.Attribute) and node.attr in OPENED_ATTRIBUTES:
            found.append(f"{node.attr} (line {node.lineno})")
    return found


def command_imports(source: str) -> list[str]:
    """The command modules (`ragqual.cli.*_cmd`) that `source` imports."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return [n for n in names if n.startswith("ragqual.cli.") and n.endswith("_cmd")]


@pytest.mark.parametrize("path", cli_modules(), ids=lambda p: p.name)
def test_cli_module_is_short(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines (at most {MAX_LINES}): move logic to ragqual/app/"


@pytest.mark.parametrize("path", cli_modules(), ids=lambda p: p.name)
def test_cli_module_opens_nothing(path: Path) -> None:
    assert opening_calls(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", cli_modules(), ids=lambda p: p.name)
def test_commands_never_import_each_other(path: Path) -> None:
    assert command_imports(path.read_text(encoding="utf-8")) == []


def test_the_checks_can_fail() -> None:
    source = (
        "from ragqual.cli.retrieval_cmd import x\n"
        "def cmd(app, corpus):\n"
        "    store = app.store(auto_create=False)\n"
        "    with load_corpus_context(app, opts) as c:\n"
        "        c.embedder.embed(['q'])\n"
    )
    assert opening_calls(source) == ["store (line 3)", "load_corpus_context (line 4)", "embedder (line 5)"]
    assert command_imports(source) == ["ragqual.cli.retrieval_cmd"]
