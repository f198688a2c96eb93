"""Headless Debian chromium for the report tests: load a page offline, dump its DOM after the
scripts ran, collect what the page printed to its console, take a screenshot."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE = "RAGQUAL_REQUIRE_BROWSER"
FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: any host lookup fails
         "--hide-scrollbars", "--virtual-time-budget=10000"]
CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?:?\d*\]\s*(.*)")


def chromium() -> str:
    """The browser's path; skips the test (fails under RAGQUAL_REQUIRE_BROWSER=1) when it is absent."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    reason = "needs Debian's chromium (apt-get install chromium); .ci/run installs it"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but chromium is absent: {reason}")
    pytest.skip(reason)


@dataclass(frozen=True)
class Loaded:
    dom: str
    console: list[str]


def load(path: Path, fragment: str = "") -> Loaded:
    """The DOM after the page's scripts ran, and every console line it printed (errors included)."""
    url = path.resolve().as_uri() + fragment
    proc = subprocess.run([chromium(), *FLAGS, "--enable-logging=stderr", "--v=0", "--dump-dom", url],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [m.group(1) for line in proc.stderr.splitlines() if (m := CONSOLE.search(line))]
    return Loaded(proc.stdout, console)


def screenshot(path: Path, out: Path, width: int = 1200, height: int = 1500) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([chromium(), *FLAGS, f"--window-size={width},{height}", f"--screenshot={out}",
                           path.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and out.is_file(), proc.stderr[-2000:]
    return out
