import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragqual.cli.main import cli
from ragqual.store import db

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One embedding/response cache for the session, so the corpus is embedded once."""
    return tmp_path_factory.mktemp("cache")


def make_bundled_project(root: Path) -> Path:
    """A project folder holding a copy of the bundled corpus, goldens and acronym glossary (named in
    its [tool.ragqual], as this repository names it), as a user would have."""
    shutil.copytree(REPO / "corpus", root / "corpus")
    shutil.copytree(REPO / "goldens", root / "goldens")
    shutil.copy(REPO / "glossary.txt", root / "glossary.txt")
    (root / "pyproject.toml").write_text('[tool.ragqual]\nglossary = "glossary.txt"\n', encoding="utf-8")
    (root / "eval-results").mkdir()  # what makes the folder a ragqual project (config.find_project_root)
    return root


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, shared_cache):
    """The bundled project (`make_bundled_project`), the working directory of the module's tests."""
    root = make_bundled_project(tmp_path_factory.mktemp("project"))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for var in ("RAGQUAL_DB", "QDRANT_URL", "OLLAMA_HOST"):
            mp.delenv(var, raising=False)
        mp.setenv("RAGQUAL_CACHE_DIR", str(shared_cache))
        mp.setenv("RAGQUAL_QDRANT_WAIT", "5")
        yield root


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def ragqual(db, args, capsys):
    """Run the real entry point against a database; (exit code, stdout, stderr)."""
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(["--db", str(db), *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


@pytest.fixture
def store(head_db):
    from ragqual.store.runstore import RunStore

    opened = RunStore.open(f"sqlite:///{head_db}")
    yield opened
    opened.engine.dispose()


@pytest.fixture
def empty_history(tmp_path) -> Path:
    """A history database upgraded to head, with no run in it."""
    path = tmp_path / "eval.db"
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    engine.dispose()
    return path


def one_document_project(root: Path, monkeypatch, answer: str) -> Path:
    """A project in `root` with one document holding `answer` and one answerable golden about it;
    the mock model answers with the document's text. The working directory moves there."""
    (root / "corpus").mkdir()
    (root / "corpus" / "water-safety.md").write_text(f"# Water safety\n\n{answer}\n", encoding="utf-8")
    (root / "goldens").mkdir()
    golden = {"id": "water-safe-01", "query": "Is the spring water safe to drink?", "turns": [],
              "relevantDocIds": ["water-safety"], "mustInclude": [r"\b1 minute"], "mustNotInclude": [],
              "expectRefusal": False, "tags": ["water"], "split": "test"}
    (root / "goldens" / "q.jsonl").write_text(json.dumps(golden) + "\n", encoding="utf-8")
    return isolated_project(root, monkeypatch)


def isolated_project(root: Path, monkeypatch) -> Path:
    """`root` as the working directory of a project with its own history folder and cache, and no
    database, Qdrant or Ollama address from the environment."""
    (root / "eval-results").mkdir()
    monkeypatch.chdir(root)
    for var in ("RAGQUAL_DB", "QDRANT_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(root / "cache"))
    return root
