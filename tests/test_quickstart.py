"""The README's main command, end to end, as a user runs it: `ragqual eval` in a fresh project."""

import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_first_command_is_ragqual_eval():
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [ln for ln in block.strip().splitlines() if ln.strip()]
    assert len(lines) == 2
    assert lines[0].endswith("&& ragqual eval")
    ci = (REPO / ".ci" / "run").read_text()
    assert lines[1] in ci, ".ci/run must run the README's test command"


def test_ragqual_eval_runs_end_to_end_on_embedded_defaults(tmp_path):
    shutil.copytree(REPO / "corpus", tmp_path / "corpus")
    shutil.copytree(REPO / "goldens", tmp_path / "goldens")
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("RAGQUAL_DB", "RAGQUAL_CACHE_DIR", "QDRANT_URL", "OLLAMA_HOST")}
    proc = subprocess.run([sys.executable, "-m", "ragqual", "eval"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"retrieval tier: run \d+ \(document level\)", proc.stdout) and "| mock | oracle |" in proc.stdout
    report = re.search(r"report: (\S+\.md)", proc.stdout).group(1)
    assert Path(report).is_file() and "## Generation" in Path(report).read_text()
    page = Path(report).with_suffix(".html")  # the bundled evaluation's page: one file, at most 5 MB
    assert page.is_file() and page.stat().st_size <= 5 * 1024 * 1024
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    db = sqlite3.connect(tmp_path / "eval-results" / "eval.db")
    runs = dict(db.execute("SELECT kind, status FROM v_run_status").fetchall())
    assert runs == {"retrieval": "finished", "generation": "finished"}
    trials = db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    goldens = sum(1 for f in (REPO / "goldens").glob("*.jsonl") for ln in f.read_text().splitlines() if ln.strip())
    assert trials == goldens * 3 * 3  # every golden x three modes x three repeats
    assert (tmp_path / "eval-results" / "qdrant-edge").is_dir()
