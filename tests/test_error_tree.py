"""One error tree: every exception class ragqual defines is a RagqualError, drawn in errors.py.

Each module of the package is imported (pkgutil.walk_packages) and every exception class defined
in it is checked. The few that are not RagqualErrors on purpose are listed below with the reason;
a new exception class outside the tree fails here until it joins the tree or the list.
"""

import importlib
import inspect
import pkgutil

import ragqual
from ragqual import errors
from ragqual.errors import RagqualError

NOT_IMPORTED = {
    "ragqual.__main__": "the `python -m ragqual` entry point: importing it runs the CLI",
}
# Internal signals: raised and caught inside ragqual, never shown to a user; or Ctrl-C on purpose.
INTENDED = {
    "ragqual.errors.RunInterrupted": "a KeyboardInterrupt on purpose, so no `except Exception` swallows Ctrl-C",
    "ragqual.core.goldens._DuplicateKey": "raised by the JSON pairs hook, turned into an Issue by the same module",
    "ragqual.engine.paths.PathNotFound": "a LookupError the assertions turn into a failed verdict with a detail",
    "ragqual.adapters.retry.Retryable": "one failed attempt; with_retries retries it or raises ModelCallFailed",
    "ragqual.adapters.ollama_chat._Malformed": "an unusable reply, turned into a Retryable by the same method",
    "ragqual.adapters.cache.UnsafeEntry": "raised inside diskcache's fetch; the cache logs it as a miss",
    "ragqual.core.prefilter._Unsupported": "syntax the literal reading does not model; caught by `need`, which then needs nothing",
}


def _modules():
    for info in pkgutil.walk_packages(ragqual.__path__, "ragqual."):
        if info.name not in NOT_IMPORTED:
            yield importlib.import_module(info.name)


def _exception_classes() -> dict[str, type[BaseException]]:
    found = {}
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def test_the_walk_reaches_every_layer():
    modules = {m.__name__ for m in _modules()}
    for layer in ("core", "engine", "pipeline", "adapters", "store", "app", "cli", "reports", "subjects"):
        assert any(name.startswith(f"ragqual.{layer}.") for name in modules), layer


def test_every_exception_ragqual_defines_is_a_ragqual_error_or_listed_with_a_reason():
    classes = _exception_classes()
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, RagqualError))
    assert outside == sorted(INTENDED), (
        "exception classes outside ragqual.errors.RagqualError: derive them from the tree, or list them in "
        "INTENDED with the reason")
    assert all(INTENDED.values())


def test_the_tree_in_errors_py_names_every_ragqual_error():
    tree = errors.__doc__ or ""
    members = sorted(cls.__name__ for cls in _exception_classes().values() if issubclass(cls, RagqualError))
    assert "ModelCallFailed" in members and "CircuitOpen" in members
    assert [name for name in members if name not in tree] == []


def test_every_exit_code_is_documented_in_the_tree_the_cli_and_the_readme():
    import re
    from pathlib import Path

    from ragqual.cli import main as cli_main

    codes = {name: value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert codes["EXIT_INTERNAL"] == 70 and codes["EXIT_INTERRUPTED"] == 130
    page = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    paragraph = page[page.index("Exit codes:"):][:1200]
    for name, value in codes.items():
        assert value == 0 or re.search(rf"\s{value}\s", errors.__doc__ or ""), f"{name} missing from errors.py's tree"
        assert re.search(rf"\b{value} ", cli_main.__doc__ or ""), f"{name} missing from cli/main.py's docstring"
        assert f"`{value}`" in paragraph, f"{name} missing from docs/reference/exit-codes.md"
