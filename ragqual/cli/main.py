"""The `ragqual` command: global options, the command groups, and error translation.

Exit codes: 0 ok, 1 a gate failed or a regression (or `verify` found a change), 2 bad input or
usage, 3 a service unreachable, 4 the history storage failed (disk full, read-only, database
deleted or replaced), 130 interrupted.
"""

from __future__ import annotations

import logging
import sys

import click

from ragqual import __version__
from ragqual.cli.context import AppContext
from ragqual.errors import RagqualError


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (or help lists it), so start-up
    stays fast: `ragqual history` never loads Qdrant or onnxruntime."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from ragqual.cli.commands import COMMANDS

        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        import importlib

        from ragqual.cli.commands import COMMANDS

        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragqual")
@click.option("--db", "db_url", metavar="URL", help="History database: a SQLAlchemy URL or a file (env RAGQUAL_DB; default eval-results/eval.db).")
@click.option("--cache", "cache_mode", type=click.Choice(["auto", "write-only", "replay", "off"]), default="auto", show_default=True, help="Response-cache mode.")
@click.option("-v", "--verbose", count=True, help="More output (-vv for debug logs).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output where a command supports it.")
@click.pass_context
def cli(ctx: click.Context, db_url: str | None, cache_mode: str, verbose: int, as_json: bool) -> None:
    """Measure the quality of a RAG pipeline and keep every measurement as history."""
    logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("bm25s", "httpx", "urllib3"):  # libraries that log routine steps at DEBUG/INFO
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbose > 2 else logging.WARNING)
    ctx.obj = AppContext.create(db_url=db_url, cache_mode=cache_mode, verbose=verbose, as_json=as_json)
    ctx.call_on_close(ctx.obj.close)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="ragqual", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("ragqual: interrupted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("ragqual: interrupted", err=True)
        sys.exit(130)
    except RagqualError as exc:
        _fail(exc)
    except Exception as exc:  # a storage failure no layer below translated: still one line, exit 4
        from ragqual.store.faults import translate

        fault = translate(exc)
        if fault is None:
            raise
        _fail(fault)
    sys.exit(0)


def _fail(exc: RagqualError) -> None:
    message = str(exc).strip() or exc.__class__.__name__
    click.echo(f"ragqual: error: {message}", err=True)
    sys.exit(exc.exit_code)
