"""Four processes append 1,000 trials each into one database at the same time: none may fail or be lost."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from ragqual.store import db

WRITERS = 4
TRIALS_EACH = 1_000
WRITER = Path(__file__).with_name("writer_process.py")
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600


def _launch(url: str, tmp_path: Path) -> list[subprocess.Popen]:
    go = tmp_path / "go"
    procs = []
    for n in range(WRITERS):
        procs.append(subprocess.Popen(
            [sys.executable, str(WRITER), url, f"writer-{n}", str(TRIALS_EACH), str(tmp_path / f"ready-{n}"), str(go)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{n}").exists() for n in range(WRITERS)):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    go.touch()
    return procs


def _finish(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        results.append((proc.returncode, out, err))
    return results


def _scalar(conn, sql: str) -> int:
    return conn.execute(text(sql)).scalar_one()


@pytest.mark.slow
def test_four_writers_lose_nothing(store_head_url, tmp_path):
    results = _finish(_launch(store_head_url, tmp_path))
    assert [(code, err) for code, _, err in results] == [(0, "")] * WRITERS
    run_ids = sorted(int(out.strip()) for _, out, _ in results)

    engine = db.make_engine(store_head_url)
    with engine.connect() as conn:
        total = WRITERS * TRIALS_EACH
        assert _scalar(conn, "SELECT COUNT(*) FROM trials") == total
        assert _scalar(conn, "SELECT COUNT(*) FROM trial_scores") == total
        assert _scalar(conn, "SELECT COUNT(*) FROM assertion_results") == total
        assert _scalar(conn, "SELECT COUNT(DISTINCT trial_id) FROM trial_scores") == total
        assert _scalar(conn, "SELECT COUNT(*) FROM cases") == 1
        assert _scalar(conn, "SELECT COUNT(*) FROM variant_configs") == 1
        assert _scalar(conn, "SELECT COUNT(*) FROM system_prompts") == 1
        per_run = conn.execute(text(
            "SELECT run_id, COUNT(*), COUNT(DISTINCT repeat_index), MIN(repeat_index), MAX(repeat_index) "
            "FROM trials GROUP BY run_id ORDER BY run_id")).all()
        statuses = conn.execute(text("SELECT run_id, status FROM v_run_status ORDER BY run_id")).all()
        passed = conn.execute(text("SELECT COUNT(*) FROM v_trials WHERE perfect = :yes AND score = 1.0"),
                              {"yes": True}).scalar_one()
        order = [row[0] for row in conn.execute(text("SELECT run_id FROM trials ORDER BY id"))]
    engine.dispose()

    assert [tuple(r) for r in per_run] == [(r, TRIALS_EACH, TRIALS_EACH, 0, TRIALS_EACH - 1) for r in run_ids]
    assert [tuple(r) for r in statuses] == [(r, "finished") for r in run_ids]
    # index % 3 != 0 passes: 666 of 0..999 per writer
    assert passed == WRITERS * sum(1 for i in range(TRIALS_EACH) if i % 3 != 0)
    # The writers really ran side by side: their trials interleave rather than come in four blocks.
    switches = sum(1 for a, b in zip(order, order[1:]) if a != b)
    assert switches > WRITERS - 1
