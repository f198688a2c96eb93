"""Which embedded engine a project uses: qdrant-edge by default; a project that has only a
qdrant-client local-mode folder keeps it until `ragqual corpus migrate` copies it over."""

from __future__ import annotations

import json
import shutil

import pytest

from ragqual.cli.main import main
from tests.cli.conftest import REPO


def run(args, capsys):
    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return caught.value.code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch, shared_cache):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("water-boiling.md", "water-storage.md"):
        shutil.copy(REPO / "corpus" / name, corpus / name)
    monkeypatch.chdir(tmp_path)
    for var in ("RAGQUAL_DB", "QDRANT_URL", "RAGQUAL_EMBEDDED_ENGINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(shared_cache))
    return tmp_path


def test_a_local_mode_folder_keeps_working_and_migrates_in_one_command(project, capsys, monkeypatch):
    monkeypatch.setenv("RAGQUAL_EMBEDDED_ENGINE", "local")
    code, out, err = run(["--json", "corpus", "ingest"], capsys)
    assert code == 0, err
    chunks = json.loads(out)["chunks"]
    assert (project / "eval-results" / "qdrant" / "meta.json").is_file()
    monkeypatch.delenv("RAGQUAL_EMBEDDED_ENGINE")

    code, out, err = run(["--json", "corpus", "status"], capsys)  # the old folder is still the store
    assert code == 0, err
    assert json.loads(out)["state"] == "up to date"
    assert not (project / "eval-results" / "qdrant-edge").exists()

    code, out, err = run(["--json", "corpus", "migrate"], capsys)
    assert code == 0, err
    assert json.loads(out)["points"] == chunks

    code, out, err = run(["--json", "corpus", "status"], capsys)  # now qdrant-edge, already current
    assert code == 0, err
    status = json.loads(out)
    assert status["state"] == "up to date" and "qdrant-edge" in status["store"]

    code, _, err = run(["corpus", "migrate"], capsys)
    assert code == 2 and "already exists" in err


def test_a_fresh_project_uses_qdrant_edge_and_a_bad_engine_name_is_refused(project, capsys, monkeypatch):
    code, _, err = run(["corpus", "ingest"], capsys)
    assert code == 0, err
    assert (project / "eval-results" / "qdrant-edge" / "ragqual_kb" / "edge_config.json").is_file()
    assert not (project / "eval-results" / "qdrant").exists()
    monkeypatch.setenv("RAGQUAL_EMBEDDED_ENGINE", "fast")
    code, _, err = run(["corpus", "status"], capsys)
    assert code == 2 and "RAGQUAL_EMBEDDED_ENGINE" in err


def test_a_migration_that_fails_half_way_leaves_the_old_store_in_use(project, capsys, monkeypatch):
    """A copy stopped part-way (here: after the first page of points) leaves no qdrant-edge folder
    behind, so the project keeps using its local-mode store and a second `migrate` starts afresh."""
    import ragqual.adapters.qdrant_edge_store as edge_store

    monkeypatch.setenv("RAGQUAL_EMBEDDED_ENGINE", "local")
    code, out, err = run(["--json", "corpus", "ingest"], capsys)
    assert code == 0, err
    monkeypatch.delenv("RAGQUAL_EMBEDDED_ENGINE")
    real_upsert = edge_store.EdgeClient.upsert

    def upsert_then_fail(self, name, points, **kw):
        real_upsert(self, name, points, **kw)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(edge_store.EdgeClient, "upsert", upsert_then_fail)
    code, _, err = run(["corpus", "migrate"], capsys)
    assert code == 4, err  # a storage fault, in one line
    results = project / "eval-results"
    assert not (results / "qdrant-edge").exists()
    assert [p.name for p in results.iterdir() if "edge" in p.name] == []
    code, out, err = run(["--json", "corpus", "status"], capsys)
    assert code == 0, err
    assert json.loads(out)["state"] == "up to date" and "qdrant-edge" not in json.loads(out)["store"]

    monkeypatch.setattr(edge_store.EdgeClient, "upsert", real_upsert)
    code, out, err = run(["--json", "corpus", "migrate"], capsys)
    assert code == 0, err
    code, out, err = run(["--json", "corpus", "status"], capsys)
    assert json.loads(out)["state"] == "up to date" and "qdrant-edge" in json.loads(out)["store"]
