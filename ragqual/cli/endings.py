"""How a ragqual command ends when it does not end well, and when it started.

* An internal error (a bug) exits 70 (EX_SOFTWARE), never 1, which a CI gate reads as a
  regression: one line names the command and the file holding the traceback; `-v` prints it too.
* SIGTERM (a CI runner's cancel, `docker stop`, `kill`) takes Ctrl-C's path: a KeyboardInterrupt
  in the main thread, so a run is marked `interrupted` and named with its resume command (exit 130).
* Python's warnings print as ragqual's one line, `ragqual: warning: ...`.
* `STARTED`: when this process started, for the elapsed times a command prints.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import click

from ragqual import __version__
from ragqual.errors import EXIT_INTERNAL

# When this process started, on the monotonic clock, as ragqual counts it: now (the CLI's first
# import) less the CPU time the process has used so far (interpreter start-up and the imports that
# led here). Not the kernel's start time of the process: a shell that exec's ragqual
# (`bash -c "sleep 15 && ragqual eval"`) hands over its own, and the shell's wait would count.
STARTED = time.monotonic() - time.process_time()

_VALUED_OPTIONS = ("--db", "--cache")  # the global options that take a value
_SUMMARY_CHARS = 300


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """While the command runs, SIGTERM raises KeyboardInterrupt in the main thread, as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def one_line_warnings(verbose: int) -> Iterator[None]:
    """Warnings (ragqual's own, e.g. from an adapter, and its libraries') as `ragqual: warning: ...`
    instead of a file, a line number and a source line; `-v` adds the category and the origin."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: object = None, line: str | None = None) -> None:
        text = " ".join(str(message).split())
        origin = f" ({category.__name__} at {filename}:{lineno})" if verbose else ""
        click.echo(f"ragqual: warning: {text}{origin}", err=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def internal_error(exc: BaseException, command: str, verbose: int) -> None:
    """Exit 70 with one line naming the command and where the traceback went (-v: printed too)."""
    import traceback

    from ragqual.core.redact import redact_text

    text = redact_text("".join(traceback.format_exception(exc)))
    summary = " ".join(redact_text(f"{type(exc).__name__}: {exc}").split())
    if len(summary) > _SUMMARY_CHARS:
        summary = summary[: _SUMMARY_CHARS - 1] + "…"
    if verbose:
        click.echo(text.rstrip(), err=True)
    try:
        where = f"traceback written to {write_traceback(text, command)}"
    except OSError as problem:
        where = f"the traceback could not be written ({problem.strerror or problem})"
    hint = "" if verbose else " (run with -v to print it)"
    click.echo(f"ragqual: internal error in `{command}`: {summary}; {where}{hint}", err=True)
    sys.exit(EXIT_INTERNAL)


def write_traceback(text: str, command: str) -> str:
    """A new file in the temporary folder (readable by its owner only; never inside a project,
    which may be committed or read-only): ragqual-crash-<command>-<UTC time>-<random>.txt."""
    import os
    import tempfile
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    slug = "-".join(command.split()[1:]) or "ragqual"
    fd, path = tempfile.mkstemp(prefix=f"ragqual-crash-{slug}-{stamp}-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
        handle.write(f"ragqual {__version__}: {command}\n\n{text}")
    return path


def invocation(args: list[str], group: click.Group) -> tuple[str, int]:
    """The command a command line runs (`ragqual corpus reset`) and its -v count, read from the
    arguments alone: it has to work whatever state click was in when the error happened."""
    words = ["ragqual"]
    current: click.Command = group
    for arg in _global_options_skipped(args):
        found = _subcommand(current, arg)
        if found is not None:
            words.append(arg)
            current = found
            if not isinstance(found, click.Group):
                break
        elif current is group:  # an unknown command is still named
            words.append(arg)
            break
        # else the value of a group's own option (`baseline --dir X promote`): read on
    return " ".join(words), verbosity(args)


def verbosity(args: list[str]) -> int:
    """How many -v the global options (those before the command) hold; `-vv` and `--verbose` too."""
    count, skip = 0, False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--" or not arg.startswith("-"):
            break
        elif arg in _VALUED_OPTIONS:
            skip = True
        elif arg == "--verbose" or (arg.startswith("-v") and set(arg[1:]) == {"v"}):
            count += 1 if arg == "--verbose" else len(arg) - 1
    return count


def _global_options_skipped(args: list[str]) -> Iterator[str]:
    """The words of a command line that are not options or option values."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            return
        elif arg in _VALUED_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            yield arg


def _subcommand(command: click.Command, name: str) -> click.Command | None:
    if not isinstance(command, click.Group):
        return None
    try:
        return command.get_command(click.Context(command), name)
    except Exception:  # noqa: BLE001 - the command's own module may be what failed to import
        return None
