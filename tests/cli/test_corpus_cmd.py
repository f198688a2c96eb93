"""`ragqual corpus ...` end to end: real files, the real MiniLM embedder, embedded Qdrant on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from qdrant_client.http import models
from sqlalchemy import create_engine, select

from ragqual.adapters.qdrant_edge_store import open_edge
from ragqual.adapters.qdrant_store import EVAL_TAG, INGEST_KEY, TAG_KEY, open_qdrant, owned_payload, point_id
from ragqual.cli.main import main
from ragqual.core.corpus import is_corpus_note

REPO = Path(__file__).resolve().parents[2]

TINY_DOCS = {
    "water-boiling": "# Boiling water\n\nBring clear water to a rolling boil for one minute. "
                     "Above 2,000 metres keep it boiling for three minutes.\n",
    "bleach": "# Bleach\n\nAdd two drops of plain unscented bleach per litre of clear water, then wait thirty minutes.\n",
    "radio": "# Radio\n\nMarine VHF channel 16 is the distress and calling channel.\n",
}
TINY_GOLDENS = [
    {"id": "boil-1", "query": "How long should I boil water?", "turns": [], "relevantDocIds": ["water-boiling"],
     "mustInclude": ["minute"], "mustNotInclude": [], "expectRefusal": False, "tags": ["water", "numeric"],
     "split": "validation"},
    {"id": "bleach-1", "query": "How much bleach per litre?", "turns": [], "relevantDocIds": ["bleach"],
     "mustInclude": ["two drops"], "mustNotInclude": [], "expectRefusal": False, "tags": ["water"], "split": "test"},
    {"id": "moon-1", "query": "What is the moon made of?", "turns": [], "relevantDocIds": [],
     "mustInclude": [], "mustNotInclude": [], "expectRefusal": True, "tags": ["out-of-corpus"]},
]


def run(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def write_project(root: Path) -> Path:
    (root / "corpus").mkdir()
    for doc_id, text in TINY_DOCS.items():
        (root / "corpus" / f"{doc_id}.md").write_text(text, encoding="utf-8")
    (root / "goldens").mkdir()
    lines = [json.dumps(g) for g in TINY_GOLDENS]
    (root / "goldens" / "tiny.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_project(tmp_path)


# --- check ------------------------------------------------------------------------------------


def test_check_counts_tags_and_splits_and_writes_nothing(project, capsys):
    before = tree(project)
    code, out, err = run(["--json", "corpus", "check"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert (data["documents"], data["questions"]) == (3, 3)
    assert data["tags"] == {"water": 2, "numeric": 1, "out-of-corpus": 1}
    assert data["splits"] == {"validation": 1, "test": 1, "(none)": 1}
    assert tree(project) == before
    assert "warning: 1 of 3 questions have no `split` field" in err and "goldens/tiny.jsonl:3" in err
    assert data["warnings"] and "`split`" in data["warnings"][0]


def test_check_refuses_a_must_include_pattern_matching_the_empty_string(project, capsys):
    loose = json.dumps(TINY_GOLDENS[0] | {"id": "loose-1", "mustInclude": ["(one|three)? minutes?", "(minute)?"]})
    (project / "goldens" / "loose.jsonl").write_text(loose + "\n", encoding="utf-8")
    code, _, err = run(["corpus", "check"], capsys)
    assert code == 2
    assert "goldens/loose.jsonl:1" in err and "mustInclude[1] '(minute)?' matches the empty string" in err
    assert "mustInclude[0]" not in err


def test_check_reads_folders_from_pyproject(project, capsys):
    (project / "corpus").rename(project / "kb")
    (project / "goldens").rename(project / "questions")
    (project / "pyproject.toml").write_text('[tool.ragqual]\ncorpus = "kb"\ngoldens = "questions"\n', encoding="utf-8")
    code, out, err = run(["corpus", "check"], capsys)
    assert code == 0, err
    assert "kb: 3 documents" in out and "questions: 3 questions" in out


@pytest.mark.skipif(not (REPO / "corpus").is_dir() or not (REPO / "goldens").is_dir(), reason="bundled data not present")
def test_check_accepts_the_bundled_corpus_and_goldens(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["--json", "corpus", "check", "--corpus", str(REPO / "corpus"), "--goldens", str(REPO / "goldens")], capsys)
    assert code == 0, err
    data = json.loads(out)
    documents = [p for p in (REPO / "corpus").glob("*.md") if not is_corpus_note(p.name)]
    questions = [line for p in (REPO / "goldens").glob("*.jsonl") for line in p.read_text("utf-8").splitlines() if line.strip()]
    assert data["documents"] == len(documents)
    assert data["questions"] == len(questions)
    assert sum(data["splits"].values()) == len(questions)
    assert list(tmp_path.iterdir()) == []


def test_check_reports_every_problem_with_file_and_line_and_writes_nothing(project, capsys):
    bad = project / "goldens" / "bad.jsonl"
    good = json.dumps(TINY_GOLDENS[0] | {"id": "ok-1"})
    unknown = json.dumps(TINY_GOLDENS[0] | {"id": "ghost-1", "relevantDocIds": ["no-such-doc"]})
    bad.write_text(good + "\n{not json\n" + unknown + "\n", encoding="utf-8")
    (project / "corpus" / "empty.md").write_text("", encoding="utf-8")
    before = tree(project)

    code, out, err = run(["corpus", "check"], capsys)

    assert code == 2
    assert "goldens/bad.jsonl:2" in err
    assert "goldens/bad.jsonl:3" in err and "no-such-doc" in err
    assert "corpus/empty.md" in err
    assert "Traceback" not in err
    assert tree(project) == before
    assert not (project / "eval-results").exists()


def test_bad_chunk_settings_are_input_errors(project, capsys):
    code, _, err = run(["corpus", "check", "--chunk-tokens", "10", "--overlap-tokens", "10"], capsys)
    assert code == 2
    assert "overlap_tokens (10) must be smaller than chunk_tokens (10)" in err


# --- ingest / status / search / reset with the real embedder ------------------------------------------


def corpus_snapshot_rows(project: Path) -> list[tuple[str, str]]:
    engine = create_engine(f"sqlite:///{project / 'eval-results' / 'eval.db'}")
    from ragqual.store.models import CorpusSnapshot

    with engine.connect() as conn:
        rows = conn.execute(select(CorpusSnapshot.fingerprint, CorpusSnapshot.embedder_id)).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def test_ingest_status_search_reset_on_a_tiny_corpus(project, capsys):
    code, out, err = run(["--json", "corpus", "status"], capsys)
    assert code == 0, err
    status = json.loads(out)
    assert status["state"] == "not ingested"
    assert not (project / "eval-results" / "qdrant-edge").exists()  # status does not create the store

    code, out, err = run(["--json", "corpus", "ingest"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["fingerprint"] == status["fingerprint"]
    assert report["chunks_per_document"] == {"bleach": 1, "radio": 1, "water-boiling": 1}
    assert corpus_snapshot_rows(project) == [(status["fingerprint"], status["embedder"])]

    code, out, err = run(["corpus", "status"], capsys)
    assert code == 0, err
    assert "up to date" in out and status["fingerprint"] in out and "3 chunks of 3 documents" in out

    code, out, err = run(["--json", "corpus", "search", "how many drops of bleach per litre", "-k", "2"], capsys)
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert [h["doc_id"] for h in hits][0] == "bleach" and len(hits) == 2

    (project / "corpus" / "radio.md").write_text(TINY_DOCS["radio"] + "\nChannel 9 is for calling on CB.\n", encoding="utf-8")
    code, out, err = run(["--json", "corpus", "status"], capsys)
    assert json.loads(out)["state"] == "stale"
    assert json.loads(out)["fingerprint"] != status["fingerprint"]

    code, out, err = run(["corpus", "reset"], capsys)
    assert code == 0, err
    assert "removed 3 eval chunks" in out and "0 other points untouched" in out
    code, out, err = run(["--json", "corpus", "status"], capsys)
    assert json.loads(out)["state"] == "not ingested"


def test_search_stops_at_a_planted_point_from_outside_the_corpus(project, capsys):
    code, _, err = run(["corpus", "ingest"], capsys)
    assert code == 0, err
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "faq.md").write_text("# FAQ\n\nBoil water.\n", encoding="utf-8")
    client = open_edge(project / "eval-results" / "qdrant-edge")
    try:
        first = client.scroll("ragqual_kb", limit=1, with_vectors=True)[0][0]  # a vector the query will find
        payload = {TAG_KEY: EVAL_TAG, "doc_id": "faq", "chunk_id": "faq#0", "index": 0, "text": "Boil water.",
                   "source": str(elsewhere / "faq.md")}
        client.upsert("ragqual_kb", points=[models.PointStruct(id=point_id("faq#0"), vector=first.vector, payload=payload)])
        query = first.payload["text"]
    finally:
        client.close()

    code, out, err = run(["corpus", "search", query, "-k", "3"], capsys)

    assert code == 1
    assert "faq#0" in err and str(elsewhere / "faq.md") in err
    assert out == ""


def test_search_before_any_ingest_says_what_to_run(project, capsys):
    code, _, err = run(["corpus", "search", "anything"], capsys)
    assert code == 2
    assert "ragqual corpus ingest" in err


def test_reset_without_a_store_creates_nothing(project, capsys):
    code, out, err = run(["corpus", "reset"], capsys)
    assert code == 0, err
    assert "removed 0 eval chunks" in out
    assert not (project / "eval-results").exists()


def test_reset_keeps_the_users_points(project, capsys):
    client = open_edge(project / "eval-results" / "qdrant-edge")
    try:
        client.create_collection("ragqual_kb", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
        vectors = np.random.default_rng(1).normal(size=(5, 384))
        client.upsert("ragqual_kb", points=[models.PointStruct(id=i, vector=v.tolist(), payload={"n": i}) for i, v in enumerate(vectors)])
        eval_point = {TAG_KEY: EVAL_TAG, "doc_id": "radio", "chunk_id": "radio#0", "source": "/x", INGEST_KEY: "0" * 32}
        written = owned_payload(point_id("radio#0"), eval_point)  # as ragqual writes its own points
        client.upsert("ragqual_kb", points=[models.PointStruct(id=point_id("radio#0"), vector=vectors[0].tolist(), payload=written)])
    finally:
        client.close()

    code, out, err = run(["corpus", "reset"], capsys)

    assert code == 0, err
    assert "removed 1 eval chunks" in out and "5 other points untouched" in out


# --- two processes, one embedded folder ---------------------------------------------------------------

HOLDER = """
import sys
from ragqual.adapters.qdrant_edge_store import open_edge
client = open_edge(sys.argv[1], wait_seconds=0)
print("ready", flush=True)
sys.stdin.read()
client.close()
"""


def test_a_held_store_fails_the_command_with_one_line_naming_the_holder(tmp_path):
    folder = tmp_path / "eval-results" / "qdrant-edge"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), "held-for-the-test"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        env = {**os.environ, "RAGQUAL_QDRANT_WAIT": "0.5"}
        for var in ("QDRANT_URL", "RAGQUAL_DB", "RAGQUAL_CACHE_DIR"):
            env.pop(var, None)
        result = subprocess.run([sys.executable, "-m", "ragqual", "corpus", "reset"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert result.returncode == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ragqual: error: ")
    assert str(folder) in lines[0] and f"process {holder.pid}" in lines[0] and "held-for-the-test" in lines[0]
    assert "Traceback" not in result.stderr


# --- the shared options and context other commands reuse ------------------------------------------


def test_corpus_options_reach_the_command_and_override_the_settings(project):
    import click
    from click.testing import CliRunner

    from ragqual.app.context import AppContext
    from ragqual.app.corpus import load_corpus_context
    from ragqual.cli.corpus_options import corpus_options

    seen = {}

    @click.command()
    @click.option("--other", default="x")
    @corpus_options
    def probe(other, corpus_opts):
        seen["opts"], seen["other"] = corpus_opts, other

    result = CliRunner().invoke(probe, ["--chunk-tokens", "64", "--collection", "team", "--query-prefix", "q: "])
    assert result.exit_code == 0, result.output
    assert seen["other"] == "x"
    app = AppContext.create(db_url=None, cache_mode="off", verbose=0, as_json=False)
    corpus = load_corpus_context(app, seen["opts"])
    assert (corpus.chunk_config.chunk_tokens, corpus.chunk_config.overlap_tokens) == (64, 32)  # 32: the default
    assert corpus.chunk_config.query_prefix == "q: "
    assert corpus.collection == "team"
    assert [d.doc_id for d in corpus.documents] == ["bleach", "radio", "water-boiling"]
    assert len(corpus.goldens) == 3
    assert corpus.corpus_dir == project / "corpus"


def test_ensure_ingested_ingests_once_per_fingerprint_and_records_it(project, capsys):
    from ragqual.app.context import AppContext
    from ragqual.app.corpus import CorpusOptions, ensure_ingested, load_corpus_context

    app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    try:
        with load_corpus_context(app, CorpusOptions()) as corpus:
            first = ensure_ingested(corpus, progress=False)
            assert first is not None and first.fingerprint == corpus.fingerprint
            assert ensure_ingested(corpus, progress=False) is None
            assert corpus.index.count() == first.total_chunks
        with load_corpus_context(app, CorpusOptions(chunk_tokens=20, overlap_tokens=2)) as corpus:
            second = ensure_ingested(corpus, progress=False)
            assert second is not None and second.total_chunks > first.total_chunks
    finally:
        app.close()
    assert sorted(corpus_snapshot_rows(project)) == sorted([(first.fingerprint, first.embedder_id),
                                                            (second.fingerprint, second.embedder_id)])
    assert "ingested 3 chunks of 3 documents" in capsys.readouterr().err
