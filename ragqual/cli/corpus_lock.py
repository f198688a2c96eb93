"""`ragqual corpus lock` and `corpus check --locked` (the lock itself: `ragqual.app.corpus_lock`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.cli.corpus_options import corpus_options


def _shown(path: Path) -> str:
    from ragqual.adapters.files import display_path

    return display_path(path)


@click.command("lock")
@corpus_options
@click.pass_obj
def lock_cmd(app: AppContext, corpus_opts: CorpusOptions) -> None:
    """Pin the corpus, goldens, glossary and prompts by content hash in ragqual.lock.json.

    The goldens are validated first (exit 2 on a problem, nothing written). Commit the lock file;
    `ragqual corpus check --locked` then fails (exit 1) when any locked file drifts, and every run
    records whether it ran against the lock.
    """
    from ragqual.app.corpus_lock import write_project_lock

    path, lock = write_project_lock(app, corpus_opts)
    data = {"lock": str(path), "files": len(lock.files), "prompts": len(lock.prompts), "roots": lock.roots}
    roots = ", ".join(f"{k} {v}" for k, v in lock.roots.items() if v)
    line = f"wrote {_shown(path)}: {len(lock.files)} files, {len(lock.prompts)} prompt versions ({roots})"
    click.echo(json.dumps(data, indent=2) if app.as_json else line)


def check_locked(app: AppContext) -> None:
    """Exit 1 naming each file that drifted from the project's lock (stdout, one line each)."""
    from ragqual.app.corpus_lock import project_drift
    from ragqual.errors import GateFailed

    path, found = project_drift(app)
    if found:
        for item in found:
            click.echo(f"drifted {item.text()}")
        raise GateFailed(f"{len(found)} locked file(s) drifted from {_shown(path)}: "
                         f"{', '.join(d.text() for d in found)}; re-lock with `ragqual corpus lock` if intended")
    click.echo(f"lock     {_shown(path)}: every locked file matches", err=True)
