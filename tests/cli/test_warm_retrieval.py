"""A warm `ragqual retrieval` reuses earlier searches, gives the same numbers, and still sees tampering."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ragqual.adapters.qdrant_edge_store import open_edge

from tests.cli.conftest import invoke

PROBE = """
import sys
from ragqual.cli.main import main
try:
    main(["--json", "retrieval"])
except SystemExit as stop:
    code = stop.code
heavy = sorted(m for m in ("qdrant_client", "bm25s", "onnxruntime", "alembic", "ollama", "pandas", "tqdm")
               if m in sys.modules)
models = sys.modules.get("ragqual.store.models")
configured = models is not None and models.Run.__mapper__.configured  # the ORM set up for queries
print(json.dumps({"code": code, "loaded": heavy, "orm_configured": configured}), file=sys.stderr)
"""


def _probe(workdir) -> tuple[dict, dict]:
    env = {k: v for k, v in os.environ.items() if k != "RAGQUAL_DB"}
    done = subprocess.run([sys.executable, "-c", "import json\n" + PROBE], cwd=workdir, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    status = json.loads(done.stderr.strip().splitlines()[-1])
    return status, json.loads(done.stdout) if status["code"] == 0 else {}


def test_a_warm_run_loads_neither_qdrant_nor_bm25s_nor_the_model(workdir):
    """Nor pandas, tqdm or the ORM's mapper set-up: it appends rows through Core statements only."""
    cold = invoke("--json", "retrieval")
    assert cold.exit_code == 0, cold.output
    status, warm = _probe(workdir)
    assert status == {"code": 0, "loaded": [], "orm_configured": False}
    assert warm["quality"] == json.loads(cold.stdout)["quality"]


LAZY_PROBE = """
import json, sys
from ragqual.cli.main import main
try:
    main(["retrieval"])
except SystemExit as stop:
    code = stop.code
lazy = ("regex", "pkgutil", "ragqual.core.numbers", "ragqual.core.collections")
print(json.dumps({"code": code, "loaded": sorted(m for m in lazy if m in sys.modules)}), file=sys.stderr)
"""


def test_a_warm_run_imports_nothing_only_answers_or_case_discovery_need(workdir):
    """`regex` (golden and answer patterns: a warm run's golden patterns are remembered as checked,
    and it reads no answer), the numbers grammar (groundedness), `pkgutil` (case discovery) and the
    BEIR/TREC parsers (a ragqual corpus) are imported where they are used, not with the retrieval
    command: ~0.02 s of its start-up."""
    assert invoke("retrieval").exit_code == 0
    env = {k: v for k, v in os.environ.items() if k != "RAGQUAL_DB"}
    done = subprocess.run([sys.executable, "-c", LAZY_PROBE], cwd=workdir, env=env, capture_output=True,
                          text=True, check=False, timeout=300)
    assert json.loads(done.stderr.strip().splitlines()[-1]) == {"code": 0, "loaded": []}, done.stderr[-2000:]


def test_without_the_cache_the_searches_run_again_to_the_same_numbers(workdir):
    warm = invoke("--json", "retrieval")
    fresh = invoke("--json", "--cache", "write-only", "retrieval")
    off = invoke("--json", "--cache", "off", "retrieval")
    assert warm.exit_code == fresh.exit_code == off.exit_code == 0, warm.output + fresh.output + off.output
    quality = json.loads(warm.stdout)["quality"]
    assert json.loads(fresh.stdout)["quality"] == quality == json.loads(off.stdout)["quality"]


def _main(capsys, *args: str) -> tuple[int, str]:
    """The real entry point (one-line errors, exit codes); (exit code, stdout + stderr)."""
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return caught.value.code, out + err


def test_an_eval_point_changed_after_a_warm_run_trips_the_leak_guard(workdir, tmp_path, capsys):
    assert invoke("retrieval").exit_code == 0
    client = open_edge(workdir / "eval-results" / "qdrant-edge")
    points, _ = client.scroll("ragqual_kb", limit=100, with_payload=True)
    target = next(p for p in points if p.payload["doc_id"] == "larchwood-cabin-field-manual")
    stranger = tmp_path / "notes.md"
    stranger.write_text("# Notes\n", encoding="utf-8")
    client.set_payload("ragqual_kb", payload={"source": str(stranger)}, points=[target.id])
    client.close()

    code, output = _main(capsys, "retrieval")
    assert code == 1
    assert f"chunk {target.payload['chunk_id']!r} comes from {stranger}" in output

    # ragqual's own point, edited by someone: ingest rebuilds it from the corpus, with a warning
    with pytest.warns(UserWarning, match="edited after they were ingested"):
        assert invoke("corpus", "ingest").exit_code == 0  # the fix the message names
    assert invoke("retrieval").exit_code == 0


def test_the_run_appends_with_the_settled_objects_frozen_and_unfreezes_them(workdir, monkeypatch):
    """The searches and appends run with the objects that existed before them out of the garbage
    collector's reach (`gc.freeze`), and the run gives them back afterwards."""
    import gc

    from ragqual.store.runstore import RunStore

    assert invoke("retrieval").exit_code == 0
    seen: list[int] = []
    original = RunStore.append_metrics

    def spy(self, run_id, rows):
        seen.append(gc.get_freeze_count())
        return original(self, run_id, rows)

    monkeypatch.setattr(RunStore, "append_metrics", spy)
    before = gc.get_freeze_count()
    assert invoke("retrieval").exit_code == 0
    assert len(seen) == 3 and all(count > 0 for count in seen)
    assert gc.get_freeze_count() == before == 0


def _collectable(obj: object) -> bool:
    """Whether the collector can see `obj` (frozen objects sit in the permanent generation, which
    `gc.get_objects` leaves out). Counting frozen objects instead is unreliable in a large test
    process: frozen objects freed meanwhile by reference counting leave the count."""
    import gc

    return any(o is obj for o in gc.get_objects())


def test_settled_objects_frozen_nests_and_leaves_another_freeze_and_a_disabled_collector_alone():
    import gc

    from ragqual.app.collector import settled_objects_frozen

    enabled = gc.isenabled()
    try:
        gc.enable()
        with pytest.raises(ZeroDivisionError), settled_objects_frozen():
            assert gc.get_freeze_count() > 0
            1 / 0
        assert gc.get_freeze_count() == 0
        with settled_objects_frozen():
            made_since = [[] for _ in range(1000)]
            assert _collectable(made_since)
            with settled_objects_frozen():  # nested: what was made since is frozen too
                assert not _collectable(made_since)
            assert not _collectable(made_since)  # given back by the outer block only
        assert gc.get_freeze_count() == 0 and _collectable(made_since)
        gc.freeze()
        outer = gc.get_freeze_count()
        with settled_objects_frozen():
            pass
        assert gc.get_freeze_count() == outer  # another owner's freeze is not undone
        gc.unfreeze()
        gc.disable()
        with settled_objects_frozen():
            assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        (gc.enable if enabled else gc.disable)()


EXIT_PROBE = """
import atexit, gc, sys
atexit.register(lambda: print(f"frozen at exit: {gc.get_freeze_count()}", file=sys.stderr))  # runs last
from ragqual.cli.main import main
print(f"frozen before: {gc.get_freeze_count()}", file=sys.stderr)
main(["retrieval"])
"""


def test_the_command_freezes_every_object_as_the_process_exits(workdir):
    """The interpreter's last collections skip the objects (`gc.freeze` at exit); the run itself
    unfroze them, and its output and history are as without it."""
    assert invoke("retrieval").exit_code == 0
    env = {k: v for k, v in os.environ.items() if k != "RAGQUAL_DB"}
    done = subprocess.run([sys.executable, "-c", EXIT_PROBE], cwd=workdir, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "frozen before: 0" in done.stderr
    frozen = int(done.stderr.split("frozen at exit: ")[1].split()[0])
    assert frozen > 10_000
    assert "run " in done.stdout + done.stderr and "appended to the history" in done.stdout + done.stderr


def test_freeze_at_exit_is_registered_once(monkeypatch):
    import gc

    from ragqual.app import collector

    registered = []
    monkeypatch.setattr(collector.atexit, "register", registered.append)
    monkeypatch.setattr(collector, "_EXIT_FREEZE", [])
    collector.freeze_at_exit()
    collector.freeze_at_exit()
    assert registered == [gc.freeze]


def test_the_program_ends_with_every_database_closed_and_the_same_report(workdir, shared_cache):
    """`python -m ragqual retrieval` ends without the interpreter's teardown (cli.main.run): the
    history and the caches are closed before that, so no write-ahead log is left behind."""
    cold = invoke("--json", "retrieval")
    assert cold.exit_code == 0, cold.output
    env = {k: v for k, v in os.environ.items() if k != "RAGQUAL_DB"}
    done = subprocess.run([sys.executable, "-m", "ragqual", "--json", "retrieval"], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["quality"] == json.loads(cold.stdout)["quality"]
    left = [p for root in (workdir / "eval-results", shared_cache) for p in root.rglob("*")
            if p.name.endswith(("-wal", "-shm"))]
    assert left == []
