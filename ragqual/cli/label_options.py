"""`--name TEXT` and `--tag key=value` on every command that records a run (ragqual.core.runlabel).

On `eval`, `retrieval` and `generation`, `--tag` already selects goldens by tag: there a value
holding `=` tags the run and a bare word selects goldens. Elsewhere `--tag` only tags the run."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from ragqual.core.runlabel import parse_tag, split_tag_values
from ragqual.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

NAME_HELP = "A name for the run, shown by history, compare, report and the pages."
RUN_TAG_HELP = "Tag the run KEY=VALUE (repeatable), shown beside its name."
GOLDEN_OR_RUN_TAG_HELP = ("Only goldens with this tag (repeatable); a KEY=VALUE value tags the run instead "
                          "(shown beside its name).")


def name_option(fn: F) -> F:
    return click.option("--name", "name", metavar="TEXT", default=None, help=NAME_HELP)(fn)


def run_tag_option(fn: F) -> F:
    return click.option("--tag", "run_tags", multiple=True, metavar="KEY=VALUE", help=RUN_TAG_HELP)(fn)


def golden_and_run_tags(values: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(golden tags, run tags) of a command whose `--tag` does both."""
    golden, run = split_tag_values(values)
    return tuple(golden), tuple(run)


def run_tags_only(values: Iterable[str]) -> tuple[str, ...]:
    """A command that selects no goldens by tag: every `--tag` must be key=value."""
    given = tuple(values)
    for value in given:
        parse_tag(value)
    return given


def refuse_label(name: str | None, run_tags: tuple[str, ...], why: str) -> None:
    """`--name`/`--tag` where no run is recorded."""
    if name is not None or run_tags:
        raise InputError(f"--name and --tag label a run this command records; {why}")
