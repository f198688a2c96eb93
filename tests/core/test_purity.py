"""The one arrow that matters: ragqual.core imports nothing from the edges and does no I/O."""

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "ragqual" / "core"
EDGES = ("sqlalchemy", "alembic", "qdrant_client", "ollama", "diskcache", "onnxruntime", "tokenizers", "httpx",
         "llama_cpp", "pandas", "click", "subprocess", "socket", "sqlite3", "requests", "ragqual.adapters",
         "ragqual.store", "ragqual.cli", "ragqual.engine", "ragqual.pipeline")


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_core_modules_import_nothing_from_the_edges():
    offenders = []
    for path in sorted(CORE.glob("*.py")):
        tree = ast.parse(path.read_text())
        offenders += [f"{path.name}: {name}" for name in _imports(tree) if name.split(".")[0] in EDGES
                      or any(name == e or name.startswith(e + ".") for e in EDGES)]
    assert offenders == []


def test_core_modules_do_not_open_files():
    calls = []
    for path in sorted(CORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                calls.append(f"{path.name}:{node.lineno}")
    assert calls == []
