"""The `ragqual` command: global options, the command groups, and error translation.

Exit codes: 0 ok, 1 a gate failed or a regression (or `verify` found a change), 2 bad input or
usage, 3 a service unreachable, 4 the history storage failed (disk full, read-only, database
deleted or replaced), 70 an internal error (a bug: one line naming the command and the file that
holds the traceback; `-v` prints it too), 130 interrupted (Ctrl-C, or SIGTERM, which takes the
same path: a run is marked `interrupted` and named with the command that resumes it).
"""

from __future__ import annotations

import sys
import threading

import click

from ragqual import __version__
from ragqual.app.collector import imports_given_back, imports_settled
from ragqual.cli import endings
from ragqual.cli.commands import COMMANDS, SUMMARIES
from ragqual.errors import EXIT_INTERRUPTED, RagqualError


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
        if module in sys.modules:
            return getattr(sys.modules[module], attr)
        with imports_settled():  # the collector stays off what the imports make (app.collector)
            return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context) -> object:
        with imports_given_back():  # the command's import freeze ends with it unless a run took it over
            return super().invoke(ctx)

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


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    with endings.sigterm_as_ctrl_c(), endings.one_line_warnings(endings.verbosity(args)):
        _main(args)


def _main(args: list[str]) -> None:
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
        from ragqual.store.faults import disk_fault, translate

        fault = translate(exc) or disk_fault(exc)  # a storage failure no layer below translated: exit 4
        if fault is not None:
            _fail(fault)
        endings.internal_error(exc, *endings.invocation(args, cli))
    sys.exit(0)


_ENDS_WITH_COMMAND: list[bool] = []


def end_with_the_command() -> None:
    """Called by a command that closes everything it opened before it returns (`retrieval`): when
    the process is the program (`run`), it then ends as soon as its exit handlers have run."""
    _ENDS_WITH_COMMAND.append(True)


def run() -> None:
    """The program (`python -m ragqual`, the `ragqual` script): `main`, and then, after a command
    that asked for it (`end_with_the_command`) and with no other thread to wait for, the exit
    handlers run, the output is flushed and the process ends without the interpreter's teardown
    (freeing every module and object one by one: ~0.02-0.03 s of a warm bundled `ragqual
    retrieval`, which has nothing left to close by then). Anything else ends as it always did, and
    so does a process under a profiler or tracer (`python -m cProfile`, pyinstrument, coverage),
    which writes its results when the program returns."""
    try:
        main()
    except SystemExit as stop:
        if _ENDS_WITH_COMMAND and isinstance(stop.code, int) and not _watched() and not _other_threads():
            _end_now(stop.code)
        raise


def _watched() -> bool:
    return sys.getprofile() is not None or sys.gettrace() is not None


def _other_threads() -> bool:
    main_thread = threading.main_thread()
    return any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate())


def _end_now(code: int) -> None:
    import atexit
    import os

    atexit._run_exitfuncs()  # what the interpreter runs first on its way out (and then forgets)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # the interpreter's own exit reports it, as it always did
    os._exit(code)


def _fail(exc: RagqualError) -> None:
    """One line; the values of credentials ragqual holds are masked here too, whatever built the
    message (core.redact)."""
    from ragqual.core.redact import redact_text

    message = redact_text(str(exc).strip() or exc.__class__.__name__)
    click.echo(f"ragqual: error: {message}", err=True)
    sys.exit(exc.exit_code)
