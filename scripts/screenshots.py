"""Regenerate the screenshots of the HTML pages in docs/screenshots/ with headless Chromium.

    python scripts/screenshots.py [--out docs/screenshots] [--width 800] [--height 860]

Builds a fresh copy of the bundled project in a temporary folder (corpus, goldens, glossary;
the mock model; embedded Qdrant), records two generation runs of 40 questions (five chunks of
context, then one), writes the run page and the comparison page with `--format html`, and
photographs each with `chromium --headless --screenshot` (offline: every host lookup fails, and
the pages fetch nothing anyway). Needs `chromium` on PATH (`apt-get install -y chromium`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--virtual-time-budget=10000"]
RUNS = [
    ["generation", "--mode", "e2e", "--repeats", "1", "--limit", "40", "--name", "k5"],
    ["generation", "--mode", "e2e", "--repeats", "1", "--limit", "40", "--context-k", "1", "--name", "k1"],
]
PAGES = {  # screenshot name -> the command that writes the page
    "run-report.png": ["report", "1", "--format", "html", "-o", "run.html"],
    "compare.png": ["compare", "1", "2", "--format", "html", "-o", "compare.html"],
}


def project(root: Path) -> Path:
    for folder in ("corpus", "goldens"):
        shutil.copytree(REPO / folder, root / folder)
    shutil.copy(REPO / "glossary.txt", root / "glossary.txt")
    (root / "pyproject.toml").write_text('[tool.ragqual]\nglossary = "glossary.txt"\n', encoding="utf-8")
    (root / "eval-results").mkdir()
    return root


def ragqual(args: list[str], cwd: Path, check: bool = True) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RAGQUAL_DB", "QDRANT_URL", "OLLAMA_HOST")}
    proc = subprocess.run([sys.executable, "-m", "ragqual", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if check and proc.returncode not in (0, 1):  # compare exits 1 on a regression: the page is written
        sys.exit(f"ragqual {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")


def screenshot(page: Path, out: Path, width: int, height: int) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("chromium not found: apt-get install -y chromium")
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([browser, *FLAGS, f"--window-size={width},{height}", f"--screenshot={out}", page.as_uri()],
                   check=True, capture_output=True, timeout=180)
    print(f"wrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--width", type=int, default=800)
    parser.add_argument("--height", type=int, default=860)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragqual-screenshots-") as folder:
        root = project(Path(folder) / "project")
        for run in RUNS:
            ragqual(run, root)
        for name, command in PAGES.items():
            ragqual(command, root)
            screenshot(root / command[-1], args.out.resolve() / name, args.width, args.height)


if __name__ == "__main__":
    main()
