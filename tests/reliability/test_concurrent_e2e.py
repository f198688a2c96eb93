"""The issue's reproduction as a user runs it: e2e with four workers on a fresh cache.

Before the fix two runs in three crashed with `AttributeError: 'BM25' object has no attribute
'scores'` (the retriever published its BM25 index before it was built); the deterministic
reproduction is tests/pipeline/test_lazy_concurrency.py, this one is the whole command.
"""

from __future__ import annotations

from tests.reliability.conftest import assert_no_traceback, only_run_id, run_events


def test_e2e_with_four_workers_on_a_fresh_cache_finishes(project):
    result = project.run("generation", "--model", "mock", "--mode", "e2e", "--repeats", "1", "--limit", "20",
                         "--max-concurrency", "4")
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    run_id = only_run_id(project)
    assert run_events(project, run_id) == ["started", "finished"]
    assert project.scalar("SELECT COUNT(*) FROM trials WHERE run_id=? AND error IS NULL", (run_id,)) == 20
