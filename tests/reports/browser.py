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


# A page opened in a frame of a probe page, which reads the frame's live DOM once every chart is
# drawn (or the time is up) and writes what it found as JSON: counts of elements, the headings,
# each chart's state, and whether a payload set `window.__pwned`. The DOM as loaded, not a dump
# of it re-parsed (a dump re-parsed can rebuild elements the browser swallowed into a script).
PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<iframe id="frame" width="1200" height="900"></iframe><pre id="probe">pending</pre>
<script>
var frame = document.getElementById("frame"), tags = %(tags)s, started = Date.now();
function report() {
  var d = frame.contentDocument, w = frame.contentWindow, counts = {};
  tags.forEach(function (t) { counts[t] = d.querySelectorAll(t).length; });
  var charts = Array.prototype.map.call(d.querySelectorAll("div[data-chart]"), function (c) {
    return {id: c.id, drawn: c.getAttribute("data-drawn") === "1",
            marks: c.querySelectorAll('[role="graphics-symbol"]').length};
  });
  if (charts.some(function (c) { return !c.drawn; }) && Date.now() - started < 8000) { return false; }
  document.getElementById("probe").textContent = JSON.stringify({
    counts: counts, charts: charts,
    headings: Array.prototype.map.call(d.querySelectorAll("h2"), function (h) { return h.textContent; }),
    pwned: (w.__pwned !== undefined) || d.documentElement.hasAttribute("data-pwned")});
  return true;
}
frame.addEventListener("load", function () {
  var timer = setInterval(function () { if (report()) { clearInterval(timer); } }, 100);
});
frame.src = %(src)s;
</script></body></html>
"""
PROBE_RESULT = re.compile(r'<pre id="probe">(.*?)</pre>', re.DOTALL)


@dataclass(frozen=True)
class Inspected:
    counts: dict[str, int]
    charts: list[dict]
    headings: list[str]
    pwned: bool
    console: list[str]


def inspect(path: Path, tags: tuple[str, ...], probe_dir: Path) -> Inspected:
    """Load `path` in a frame and read its live DOM (see PROBE)."""
    import html
    import json

    probe = probe_dir / f"probe-{path.stem}.html"
    probe.write_text(PROBE % {"tags": json.dumps(list(tags)), "src": json.dumps(path.resolve().as_uri())},
                     encoding="utf-8")
    proc = subprocess.run([chromium(), *FLAGS, "--allow-file-access-from-files", "--enable-logging=stderr", "--v=0",
                           "--dump-dom", probe.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = PROBE_RESULT.search(proc.stdout)
    assert found and found.group(1) != "pending", f"the probe did not report: {proc.stderr[-2000:]}"
    data = json.loads(html.unescape(found.group(1)))
    console = [m.group(1) for line in proc.stderr.splitlines() if (m := CONSOLE.search(line))]
    return Inspected(data["counts"], data["charts"], data["headings"], data["pwned"], console)
