"""Eight processes start `ragqual run` on a database that does not exist yet: all succeed.

Reproduction of the issue: some died with `table runs already exists` (exit 1) or a false
"run `ragqual db upgrade`" (exit 2) while another process was creating the schema.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from ragqual.store import db

PROCESSES = 8
REPO = Path(__file__).resolve().parents[2]
GATE = """
import os, sys, time
gate = sys.argv.pop(1)
while not os.path.exists(gate):
    time.sleep(0.005)
from ragqual.cli.main import main
main(sys.argv[1:])
"""


@pytest.mark.slow
def test_eight_processes_create_a_missing_database_together(store_url, tmp_path):
    gate = tmp_path / "go"
    env = {**os.environ, "RAGQUAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("RAGQUAL_DB", None)
    procs = [subprocess.Popen(
        [sys.executable, "-c", GATE, str(gate), "--db", store_url, "run", "--subject", "sentiment",
         "--model", "mock", "--trial-count", "1", "--case-slugs", "neg-broken-package"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(PROCESSES)]
    import time
    time.sleep(3)  # let every process import ragqual and wait at the gate
    gate.touch()
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert results == [(0, "")] * PROCESSES
    engine = db.make_engine(store_url)
    with engine.connect() as conn:
        statuses = conn.execute(text("SELECT status FROM v_run_status")).scalars().all()
        version = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    engine.dispose()
    assert statuses == ["finished"] * PROCESSES
    assert version == [db.HEAD_REVISION]
