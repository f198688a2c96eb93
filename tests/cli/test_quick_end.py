"""`run` (the program's entry) ends the process right after the exit handlers once a command asked
for it (`end_with_the_command`): the handlers run, the output is complete, the exit code is the
command's; without the request, with another thread to wait for, or under a profiler (which writes its
results after the program returns), the process ends as before."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = r"""
import atexit, os, sys, threading
from ragqual.cli import main as cli_main

class Teardown:
    def __del__(self):
        os.write(1, b"teardown\n")  # only the interpreter's teardown frees this (stdout is flushed by then)

keep = Teardown()
witness = {"real_exit": os._exit}  # its own globals: holding __main__'s would keep `keep` alive
exec("def quick(code):\n    print('quick end', flush=True)\n    real_exit(code)\n", witness)
os._exit = witness["quick"]
atexit.register(lambda: print("handler", flush=True))
if "ask" in sys.argv[1:]:
    cli_main.end_with_the_command()
if "profiled" in sys.argv[1:]:
    sys.setprofile(lambda frame, event, arg: None)
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
    assert done.stdout.splitlines() == ["unflushed ragqual, version 0.1.0", "handler", "quick end"]


def test_the_exit_code_is_the_commands():
    done = _run("ask", "bad")
    assert done.returncode == 2 and "No such command" in done.stderr
    assert done.stdout.splitlines() == ["unflushed handler", "quick end"]


@pytest.mark.parametrize("flags", [(), ("ask", "thread")])
def test_otherwise_the_interpreter_ends_it_as_always(flags):
    done = _run(*flags)
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["unflushed ragqual, version 0.1.0", "handler", "teardown"]


def test_a_profiled_process_ends_as_always_so_the_profiler_can_write():
    done = _run("ask", "profiled")
    assert done.returncode == 0
    assert "quick end" not in done.stdout and done.stdout.splitlines()[:2] == ["unflushed ragqual, version 0.1.0", "handler"]
