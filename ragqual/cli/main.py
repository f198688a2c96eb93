"""The `ragqual` command: global options, the command groups, and error translation.

Exit codes: 0 ok, 1 a gate failed or a regression (or `verify` found a change), 2 bad input or
usage, 3 a service unreachable, 4 the history storage failed (disk full, read-only, database
deleted or replaced), 70 an internal error (a bug: one line naming the command and the file that
holds the traceback; `-v` prints it too), 130 interrupted (Ctrl-C, or SIGTERM, which takes the
same path: a run is marked `interrupted` and named with the command that resumes it).
"""

from __future__ import annotations

import sys
import time

import click

from ragqual import __version__
from ragqual.cli.commands import COMMANDS, SUMMARIES
from ragqual.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, RagqualError

# When this process started, on the monotonic clock, as ragqual counts it: now (the CLI's first
# import) less the CPU time the process has used so far (interpreter start-up and the imports that
# led here). Not the kernel's start time of the process: a shell that exec's ragqual
# (`bash -c "sleep 15 && ragqual eval"`) hands over its own, and the shell's wait would count.
STARTED = time.monotonic() - time.process_time()


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs, so start-up stays fast:
    `ragqual history` never loads Qdrant or onnxruntime, and `ragqual --help` lists the commands
    from their registered summaries without importing any of them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing (same width rule, same shortening), from `SUMMARIES`."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        import importlib

        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_json(args))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command names the closest one, as subcommands of a group already do."""
        name = click.utils.make_str(args[0]) if args else None
        if name is not None and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)


def hoist_json(args: list[str]) -> list[str]:
    """`ragqual report --last --json` means `ragqual --json report --last`: the flag is global, and
    newcomers put it after the command. Anything after `--` is left as it is."""
    end = args.index("--") if "--" in args else len(args)
    if "--json" not in args[:end]:
        return args
    head = [a for a in args[:end] if a != "--json"]
    return ["--json", *head, *args[end:]]


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragqual")
@click.option("--db", "db_url", metavar="URL", help="History database: a SQLAlchemy URL or a file (env RAGQUAL_DB; default eval-results/eval.db).")
@click.option("--cache", "cache_mode", type=click.Choice(["auto", "write-only", "replay", "off"]), default="auto", show_default=True, help="Response-cache mode.")
@click.option("-v", "--verbose", count=True, help="More output (-vv for debug logs).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output where a command supports it.")
@click.pass_context
def cli(ctx: click.Context, db_url: str | None, cache_mode: str, verbose: int, as_json: bool) -> None:
    """Measure the quality of a RAG pipeline and keep every measurement as history."""
    import logging

    from ragqual.app.context import AppContext

    logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("bm25s", "httpx", "urllib3"):  # libraries that log routine steps at DEBUG/INFO
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbose > 2 else logging.WARNING)
    ctx.obj = AppContext.create(db_url=db_url, cache_mode=cache_mode, verbose=verbose, as_json=as_json)
    ctx.call_on_close(ctx.obj.close)


def _interrupted(exc: BaseException | None) -> None:
    """Exit 130; a stopped run is named with the command that finishes it."""
    from ragqual.errors import RunInterrupted

    if isinstance(exc, RunInterrupted):
        click.echo(f"ragqual: {exc.message()}", err=True)
    else:
        click.echo("ragqual: interrupted", err=True)
    sys.exit(EXIT_INTERRUPTED)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (a CI runner's cancel, `docker stop`, `kill`) becomes a Ctrl-C in the main thread,
    so a run stops the same way: its `interrupted` event stored, the resume command printed."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    import signal
    import threading
    import warnings

    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if on_main_thread else None
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_printer(invocation(list(sys.argv[1:] if argv is None else argv))[1])
            _main(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _warning_printer(verbose: int):
    """Python's warnings (ragqual's own, e.g. from an adapter, and its libraries') as ragqual's one
    line, `ragqual: warning: ...`, instead of a file, a line number and a source line; `-v` adds
    the category and where it was raised."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: object = None, line: str | None = None) -> None:
        text = " ".join(str(message).split())
        origin = f" ({category.__name__} at {filename}:{lineno})" if verbose else ""
        click.echo(f"ragqual: warning: {text}{origin}", err=True)

    return show


def _main(argv: list[str] | None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=args, prog_name="ragqual", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:
        _interrupted(exc.__cause__)
    except KeyboardInterrupt as exc:
        _interrupted(exc)
    except RagqualError as exc:
        _fail(exc)
    except Exception as exc:
        from ragqual.store.faults import translate

        fault = translate(exc)  # a storage failure no layer below translated: still one line, exit 4
        if fault is not None:
            _fail(fault)
        _internal_error(exc, args)
    sys.exit(0)


def _fail(exc: RagqualError) -> None:
    message = str(exc).strip() or exc.__class__.__name__
    click.echo(f"ragqual: error: {message}", err=True)
    sys.exit(exc.exit_code)


def _internal_error(exc: Exception, args: list[str]) -> None:
    """A bug, not a verdict: exit 70 (never 1, which a CI gate reads as a regression), one line
    naming the command and the file holding the traceback; `-v` prints the traceback as well."""
    import traceback

    from ragqual.core.redact import redact_text

    text = redact_text("".join(traceback.format_exception(exc)))
    command, verbose = invocation(args)
    summary = " ".join(redact_text(f"{type(exc).__name__}: {exc}").split())
    if len(summary) > 300:
        summary = summary[:299] + "…"
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
    """A new file in the temporary folder (private to the user, never inside a project that may
    be committed or read-only): ragqual-crash-<command>-<UTC time>-<random>.txt."""
    import os
    import tempfile
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    slug = "-".join(command.split()[1:]) or "ragqual"
    fd, path = tempfile.mkstemp(prefix=f"ragqual-crash-{slug}-{stamp}-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
        handle.write(f"ragqual {__version__}: {command}\n\n{text}")
    return path


_VALUED_OPTIONS = ("--db", "--cache")


def _is_group(name: str) -> bool:
    try:
        return isinstance(cli.get_command(click.Context(cli), name), click.Group)
    except Exception:  # the command's own module may be what failed to import
        return False


def invocation(args: list[str]) -> tuple[str, int]:
    """The command a command line runs (`ragqual corpus reset`) and its -v count, read from the
    arguments alone: it has to work whatever state click was in when the error happened."""
    words, verbose, skip = ["ragqual"], 0, False
    rest = iter(args)
    for arg in rest:
        if skip:
            skip = False
        elif arg == "--":
            break
        elif arg in _VALUED_OPTIONS:
            skip = True
        elif arg == "--verbose" and len(words) == 1:
            verbose += 1
        elif arg.startswith("-v") and len(words) == 1 and set(arg[1:]) == {"v"}:
            verbose += len(arg) - 1
        elif not arg.startswith("-"):
            words.append(arg)
            if len(words) == 2 and not _is_group(arg):
                break
            if len(words) == 3:
                break
    return " ".join(words), verbose
