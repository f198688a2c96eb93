"""The command line imports a command's modules with the collector paused and their objects frozen
(app.collector.imports_settled); a run block takes that freeze over, and whatever is left is given
back when the command ends."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from ragqual.app import collector

PROBE = """
import gc, sys
seen = []
gc.callbacks.append(lambda phase, info: phase == "start" and seen.append(info["generation"]))
from ragqual.cli.main import LazyGroup
import click
before = len(seen)
command = LazyGroup().get_command(click.Context(click.Command("x")), sys.argv[1])
print("frozen", gc.get_freeze_count(), "collections", len(seen) - before, "enabled", gc.isenabled(), command.name,
      "store", "ragqual.store.runstore" in sys.modules)
"""


def _probe(command: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, "-c", PROBE, command], capture_output=True, text=True, env=env, check=True,
                          timeout=120)
    return done.stdout.split()


@pytest.mark.parametrize("command", ["history", "retrieval", "generation"])
def test_a_commands_imports_run_without_collections_and_end_frozen(command):
    """Importing a command (SQLAlchemy, the models, the store; for a run, the history's store and
    caches too, which it always opens) sets off no collection, and what the imports made is frozen
    afterwards, with the collector on again."""
    words = _probe(command)
    assert words[0] == "frozen" and int(words[1]) > 50_000
    assert words[2:] == ["collections", "0", "enabled", "True", command, "store", "True"]


@pytest.fixture
def collector_on():
    enabled = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    collector._IMPORTS_FROZEN.clear()
    (gc.enable if enabled else gc.disable)()


def test_a_run_block_takes_the_import_freeze_over_and_gives_everything_back(collector_on):
    with collector.imports_settled():
        assert not gc.isenabled()
        made = [[] for _ in range(100)]
    assert gc.isenabled() and gc.get_freeze_count() >= len(made)
    with collector.settled_objects_frozen():  # taken over, not left alone as another owner's freeze
        assert gc.get_freeze_count() >= len(made)
        with collector.imports_given_back():
            pass
        assert gc.get_freeze_count() >= len(made)  # the run block owns it now
    assert gc.get_freeze_count() == 0
    assert not collector._IMPORTS_FROZEN


def test_an_import_freeze_no_block_took_is_given_back_when_the_command_ends(collector_on):
    with collector.imports_given_back():
        with collector.imports_settled():
            made = [[] for _ in range(100)]
        assert gc.get_freeze_count() >= len(made)
    assert gc.get_freeze_count() == 0 and not collector._IMPORTS_FROZEN


def test_another_owners_freeze_and_a_disabled_collector_are_left_alone(collector_on):
    gc.freeze()
    outer = gc.get_freeze_count()
    with collector.imports_given_back():
        with collector.imports_settled():
            assert gc.isenabled()  # not paused: someone else manages the collector
        with collector.settled_objects_frozen():
            pass
    assert gc.get_freeze_count() == outer and not collector._IMPORTS_FROZEN
    gc.unfreeze()
    gc.disable()
    with collector.imports_settled():
        pass
    assert gc.get_freeze_count() == 0 and not gc.isenabled()


def test_the_command_line_leaves_no_freeze_behind_in_process(workdir):
    """`history` runs no run block: its import freeze (if it imported anything) ends with it."""
    from tests.cli.conftest import invoke

    assert invoke("retrieval").exit_code == 0  # a history to list
    sys.modules.pop("ragqual.cli.history_cmd", None)
    assert invoke("history").exit_code == 0
    assert "ragqual.cli.history_cmd" in sys.modules  # imported again, under the freeze
    assert gc.get_freeze_count() == 0 and not collector._IMPORTS_FROZEN
