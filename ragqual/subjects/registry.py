"""Which subjects `ragqual run --subject NAME` knows: the built-ins and installed plug-ins.

A built-in is one line in BUILTIN ("name": "module:factory"), imported only when asked for.
Another installed package can add a subject without touching ragqual by declaring an entry
point in the `ragqual.subjects` group whose object is a Subject class or a no-argument factory:

    [project.entry-points."ragqual.subjects"]
    tickets = "my_package.tickets:TicketSubject"

A built-in name wins over an entry point of the same name.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any
from importlib.metadata import entry_points

from ragqual.engine.subject import Subject
from ragqual.errors import InputError

ENTRY_POINT_GROUP = "ragqual.subjects"

BUILTIN: dict[str, str] = {
    "sentiment": "ragqual.subjects.sentiment.subject:SentimentSubject",
    "rag": "ragqual.app.rag_subject:default_rag_subject",
}

# Modules that register subject-specific check kinds (`register_check`), imported before a run
# is rescored from its stored definitions, so that their specs can be rebuilt.
CHECK_MODULES: tuple[str, ...] = ("ragqual.subjects.rag_checks",)

Factory = Callable[[], Subject]


def _parameters(factory: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return set()


def _import(target: str) -> Factory:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def _plugins() -> dict[str, object]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN}


def subject_names() -> list[str]:
    return sorted({*BUILTIN, *_plugins()})


def is_known(name: str) -> bool:
    return name in BUILTIN or name in _plugins()


def load_check_kinds() -> None:
    """Import every module that registers check kinds (a missing one is skipped)."""
    for module in CHECK_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError:
            continue


def get_subject(name: str, **context: Any) -> Subject:
    """A fresh subject by name; an unknown name lists the valid ones.

    `context` (the running application, as `app=`) is passed to a factory that declares a
    parameter of that name, so a subject such as `rag` builds on the application's settings and
    cache mode instead of defaults of its own."""
    if name in BUILTIN:
        factory = _import(BUILTIN[name])
    else:
        plugin = _plugins().get(name)
        if plugin is None:
            raise InputError(f"unknown subject {name!r}: valid subjects are {', '.join(subject_names())}")
        factory = plugin.load()  # type: ignore[attr-defined]
    accepted = _parameters(factory)
    subject = factory(**{k: v for k, v in context.items() if k in accepted})
    if not isinstance(subject, Subject):
        raise InputError(f"subject {name!r} does not build a ragqual Subject (got {type(subject).__name__})")
    return subject
