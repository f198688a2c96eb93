"""A user's own project: the acronym glossary applies only when named in [tool.ragqual] (and a bad
one is refused by file and line), and `--goldens` takes one .jsonl file as well as a folder."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ragqual.cli.main import main
from tests.cli.test_corpus_cmd import TINY_DOCS, TINY_GOLDENS, write_project

ACRONYM_GOLDEN = {"id": "vhf-1", "query": "Which VHF channel is for distress?", "turns": [], "relevantDocIds": ["radio"],
                  "mustInclude": ["16"], "mustNotInclude": [], "expectRefusal": False, "tags": ["acronym"]}


def run(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


@pytest.fixture
def project(tmp_path: Path, monkeypatch, shared_cache) -> Path:
    (tmp_path / "kb").mkdir()
    root = write_project(tmp_path / "kb")
    with (root / "goldens" / "tiny.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(ACRONYM_GOLDEN) + "\n")
    (root / "eval-results").mkdir()
    monkeypatch.chdir(root)
    for var in ("RAGQUAL_DB", "QDRANT_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(shared_cache))
    return root


def stored_configs(root: Path) -> dict:
    db = sqlite3.connect(root / "eval-results" / "eval.db")
    params = db.execute("SELECT params FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    return json.loads(params)["configs"]


def name_glossary(root: Path, text: str) -> None:
    (root / "glossary.txt").write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text('[tool.ragqual]\nglossary = "glossary.txt"\n', encoding="utf-8")


def test_no_glossary_is_applied_unless_the_project_names_one(project, capsys):
    code, out, err = run(["retrieval", "--strategy", "dense"], capsys)
    assert code == 0, err
    assert stored_configs(project)["dense"]["expand_acronyms"] is False
    assert stored_configs(project)["dense"]["glossary"] is None
    code, out, err = run(["retrieval", "--strategy", "dense", "--expand"], capsys)
    assert code == 2 and "--expand needs an acronym glossary" in err
    code, out, err = run(["corpus", "check"], capsys)
    assert code == 0 and "glossary none (no acronym expansion)" in out


def test_a_named_glossary_expands_and_its_digest_is_recorded(project, capsys):
    from ragqual.core.glossary import parse_glossary

    name_glossary(project, "# radio\nVHF = very high frequency\n")
    code, out, err = run(["corpus", "check"], capsys)
    assert code == 0 and "glossary glossary.txt: 1 acronym" in out
    code, out, err = run(["retrieval", "--strategy", "dense", "--ablate"], capsys)
    assert code == 0, err
    configs = stored_configs(project)
    digest = parse_glossary("VHF = very high frequency\n", "x").digest
    assert configs["full"]["expand_acronyms"] is True and configs["full"]["glossary"] == digest
    assert configs["no-acronym-expansion"]["glossary"] is None
    # another corpus than the project's own is not expanded with the project's glossary
    other = project / "other"
    other.mkdir()
    for doc_id, text in TINY_DOCS.items():
        (other / f"{doc_id}.md").write_text(text, encoding="utf-8")
    (other / "extra.md").write_text("# Extra\n\nA second corpus, so a second ingest.\n", encoding="utf-8")
    code, out, err = run(["retrieval", "--strategy", "dense", "--corpus", "other"], capsys)
    assert code == 0, err
    assert stored_configs(project)["dense"]["glossary"] is None


def test_a_bad_glossary_is_refused_by_file_and_line(project, capsys):
    name_glossary(project, "VHF = very high frequency\nVHF: very high\n")
    code, out, err = run(["retrieval", "--strategy", "dense"], capsys)
    assert code == 2
    assert "glossary.txt:2: expected `ACRONYM = expansion`" in err
    assert not (project / "eval-results" / "eval.db").exists() or not stored_configs_or_none(project)
    (project / "pyproject.toml").write_text('[tool.ragqual]\nglossary = "missing.txt"\n', encoding="utf-8")
    code, out, err = run(["retrieval", "--strategy", "dense"], capsys)
    assert code == 2 and "glossary missing.txt does not exist" in err


def stored_configs_or_none(root: Path):
    db = sqlite3.connect(root / "eval-results" / "eval.db")
    return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def test_goldens_may_be_one_jsonl_file(project, capsys):
    code, out, err = run(["corpus", "check", "--goldens", "goldens/tiny.jsonl"], capsys)
    assert code == 0, err
    assert f"{len(TINY_GOLDENS) + 1} questions" in out
    bad = project / "one.jsonl"
    bad.write_text(json.dumps(TINY_GOLDENS[0]) + "\n{not json\n", encoding="utf-8")
    code, out, err = run(["corpus", "check", "--goldens", "one.jsonl"], capsys)
    assert code == 2 and "one.jsonl:2:" in err
    code, out, err = run(["corpus", "check", "--goldens", "nowhere.jsonl"], capsys)
    assert code == 2 and "golden file nowhere.jsonl does not exist" in err
