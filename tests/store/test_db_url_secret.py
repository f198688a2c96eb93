"""`--db postgresql://user:password@...` is not stored in the run's argv, params or provenance."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.store.conftest import raw_connect

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.postgres
def test_the_database_password_is_not_stored(pg_head_url, tmp_path):
    password = make_url(pg_head_url).password
    assert password, "the test server's URL carries a password"
    env = {**os.environ, "RAGQUAL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "ragqual", "--db", pg_head_url, "run", "--subject", "sentiment",
                           "--model", "mock", "--trial-count", "1", "--case-slugs", "neg-broken-package"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert password not in done.stdout + done.stderr
    con = raw_connect(pg_head_url)
    stored = con.execute("SELECT argv, params, provenance FROM runs").fetchall()
    con.close()
    text = " ".join(map(str, stored[0]))
    assert f":{password}@" not in text
    assert "://***@127.0.0.1" in text  # the host is kept, the credentials are not
