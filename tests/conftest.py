import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.db'}"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test reads the developer's own database, cache or Ollama host by accident."""
    for var in ("RAGQUAL_DB", "RAGQUAL_CACHE_DIR", "QDRANT_URL", "QDRANT_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    yield


@pytest.fixture(scope="session")
def _migrated_template(tmp_path_factory) -> Path:
    """One SQLite file migrated to head; tests copy it instead of migrating again."""
    from ragqual.store import db

    path = tmp_path_factory.mktemp("template") / "head.db"
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path


@pytest.fixture
def head_db(tmp_path, _migrated_template) -> Path:
    """A fresh history database at head, as a file path."""
    import shutil

    target = tmp_path / "history.db"
    shutil.copyfile(_migrated_template, target)
    return target
