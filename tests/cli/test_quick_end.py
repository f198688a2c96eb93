"""`run` (the program's entry) ends the process right after the exit handlers once a command asked
for it (`end_with_the_command`): the handlers run, the output is complete, the exit code is the
command's; without the request, or with another thread to wait for, the process ends as before."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import atexit, sys, threading
from ragqual.cli import main as cli_main

class Teardown:
    def __del__(self):
        print("teardown", flush=True)  # only the interpreter's teardown frees this

keep = Teardown()
atexit.register(lambda: print("handler", flush=True))
if "ask" in sys.argv[1:]:
    cli_main.end_with_the_command()
if "thread" in sys.argv[1:]:
    threading.Thread(target=threading.Event().wait, args=(0.5,)).start()
sys.stdout.write("unflushed ")
sys.argv = ["ragqual", *(["--version"] if "bad" not in sys.argv[1:] else ["no-such-command"])]
cli_main.run()
"""


def _run(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, *flags], capture_output=True, text=True, timeout=120)


def test_asked_for_the_process_ends_after_the_handlers_without_teardown():
    done = _run("ask")
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["unflushed ragqual, version 0.1.0", "handler"]


def test_the_exit_code_is_the_commands():
    done = _run("ask", "bad")
    assert done.returncode == 2 and "No such command" in done.stderr
    assert done.stdout.splitlines() == ["unflushed handler"]


@pytest.mark.parametrize("flags", [(), ("ask", "thread")])
def test_otherwise_the_interpreter_ends_it_as_always(flags):
    done = _run(*flags)
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["unflushed ragqual, version 0.1.0", "handler", "teardown"]
