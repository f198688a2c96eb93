"""What the CLI adds around a run: the command that resumes an interrupted one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ragqual.app.context import AppContext


@contextmanager
def resumable(app: AppContext, command: str) -> Iterator[None]:
    """Ctrl-C inside: the interrupt names the exact command that resumes the run."""
    from ragqual.errors import RunInterrupted

    try:
        yield
    except RunInterrupted as exc:
        db = f" --db {app.db_url_override}" if app.db_url_override else ""
        exc.resume_command = f"ragqual{db} {command} --resume {exc.run_id}"
        raise
