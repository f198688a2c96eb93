"""How a long run shows itself on the terminal, and the one format of a share in its tables."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from ragqual.app.context import AppContext
from ragqual.cli.endings import STARTED
from ragqual.core.display import fmt_rate
from ragqual.engine import loop

def elapsed_since_start() -> float:
    """Seconds since this process started, interpreter start-up and imports included
    (`ragqual.cli.endings.STARTED`), not counting a parent shell that exec'd it."""
    return max(0.0, time.monotonic() - STARTED)


def progress_printer(app: AppContext, label: str):
    """A tqdm bar on stderr (silent in --json mode)."""
    from tqdm import tqdm

    state: dict[str, Any] = {}

    interactive = sys.stderr.isatty()

    def update(p: loop.Progress) -> None:
        if app.as_json:
            return
        if not interactive:  # a log, not a bar: one line per tenth of the run
            step = max(1, p.total // 10)
            if p.total and (p.done % step == 0 or p.done == p.total):
                click.echo(f"{label}: {p.done}/{p.total} trials", err=True)
            return
        if p.done == 0:
            state["bar"] = tqdm(total=p.total, desc=label, unit="trial", file=sys.stderr, leave=False)
            return
        state["bar"].update(1)
        if p.done == p.total:
            state["bar"].close()

    return update


def fmt3(value: float | None) -> str:
    """A share with three decimals, or a dash when there is none (`ragqual.core.display`)."""
    return fmt_rate(value)
