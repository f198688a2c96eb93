"""ragqual: measure the quality of a RAG pipeline and keep every measurement as history.

The Python API (`ragqual.open_history`, `ragqual.History`, `ragqual.Project`) is imported on first use, so
`import ragqual` stays as cheap as the CLI's start-up needs.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import ...`: importing ragqual stays free of typing's cost
__version__ = "0.1.0"
__all__ = ["History", "Project", "open_history", "__version__"]

if TYPE_CHECKING:
    from ragqual.api import History, Project, open_history

_LAZY = {"open_history": "ragqual.api", "History": "ragqual.api", "Project": "ragqual.api"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragqual' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
