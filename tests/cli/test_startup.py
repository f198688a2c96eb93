"""`ragqual --help` starts without importing any command: it lists them from the registry's
summaries, and those print exactly what each command's own help would. (Which modules load is
tested here; the wall time is measured by benchmarks/bench_startup.py.)"""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest

from ragqual.cli.commands import COMMANDS, SUMMARIES
from ragqual.cli.main import cli

HEAVY = ("pandas", "numpy", "sqlalchemy", "qdrant_client", "qdrant_edge", "ollama", "diskcache", "altair",
         "alembic", "onnxruntime", "httpx", "tqdm")


def _imported_by(args: list[str], code: int = 0) -> set[str]:
    """Every module `python -X importtime -m ragqual ARGS` imports (its stderr names each one)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "ragqual", *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == code, proc.stderr[-2000:]
    assert "Commands:" in proc.stdout + proc.stderr or "Did you mean 'retrieval'?" in proc.stderr
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize(("args", "code"), [(["--help"], 0), (["-h"], 0), ([], 2), (["retreival"], 2)],
                         ids=["--help", "-h", "no-args", "typo"])
def test_top_level_help_imports_no_command_and_no_heavy_library(args, code):
    modules = _imported_by(args, code)
    assert "click" in modules  # the parse worked
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    commands = sorted(m for m in modules if m in {module for module, _ in COMMANDS.values()})
    assert heavy == [] and commands == []


def test_every_command_has_a_summary_and_nothing_else_does():
    assert set(SUMMARIES) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_summary_shortens_like_the_commands_own_help(name):
    module, attr = COMMANDS[name]
    command = getattr(importlib.import_module(module), attr)
    summary = click.Command(name, help=SUMMARIES[name])
    for limit in (20, 45, 60, 74, 200):
        assert summary.get_short_help_str(limit) == command.get_short_help_str(limit), (
            f"update SUMMARIES[{name!r}] in ragqual/cli/commands.py to the first paragraph of its help")


@pytest.mark.parametrize("width", [60, 80, 120])
def test_help_lists_the_commands_as_click_would_with_every_command_loaded(width):
    ctx = click.Context(cli, info_name="ragqual", terminal_width=width)
    lazy, loaded = ctx.make_formatter(), ctx.make_formatter()
    cli.format_commands(ctx, lazy)
    click.Group.format_commands(cli, ctx, loaded)
    assert lazy.getvalue() == loaded.getvalue() and "Commands:" in lazy.getvalue()
