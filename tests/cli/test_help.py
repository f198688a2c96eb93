import click
import pytest
from click.testing import CliRunner

from ragqual.cli.commands import COMMANDS
from ragqual.cli.main import cli


def _all_paths():
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        yield [name]
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                yield [name, sub]


@pytest.mark.parametrize("path", list(_all_paths()), ids=lambda p: " ".join(p))
def test_every_command_has_help(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: " in result.output and len(result.output.splitlines()) > 3


def test_top_level_help_lists_every_command():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


def test_version():
    from ragqual import __version__

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_the_commands_page_mentions_every_command():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "commands.md").read_text()
    missing = [name for name in COMMANDS if f"ragqual {name}" not in page]
    assert not missing, f"docs/reference/commands.md does not list: {missing}"
