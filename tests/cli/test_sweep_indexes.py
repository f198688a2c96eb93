"""`ragqual sweep` over chunking and embedders: each index configuration in its own collection,
ingested once, read back from the history when finished; the gate against the first configuration;
`--split-by hash` for goldens without splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import ragqual
from tests.support.fake_ollama import FakeOllama

TOPICS = {
    "kettle-descaling": ("Descaling a kettle", "Fill the kettle with equal parts white vinegar and water. Boil it, "
                         "leave it for an hour, then rinse it three times. Limescale builds up faster in hard water "
                         "areas, where descaling once a month keeps the element efficient."),
    "bicycle-chain": ("Oiling a bicycle chain", "Clean the chain with a degreaser and a rag before oiling. Apply one "
                      "drop of chain oil to each roller while turning the pedals backwards, wait five minutes, then "
                      "wipe off the excess so the chain does not collect grit."),
    "houseplant-watering": ("Watering houseplants", "Most houseplants want water when the top two centimetres of soil "
                            "are dry. Water until it runs from the drainage hole and empty the saucer after fifteen "
                            "minutes; roots standing in water rot."),
    "bread-proofing": ("Proofing bread dough", "Let the dough rise in a warm place at about 26 degrees until it has "
                       "doubled, usually one to two hours. A finger pressed into proofed dough leaves a dent that "
                       "springs back slowly."),
}
QUESTIONS = [
    ("kettle-1", "How do I descale a kettle?", "kettle-descaling"),
    ("kettle-2", "How often should a kettle be descaled in hard water?", "kettle-descaling"),
    ("chain-1", "How do I oil a bike chain?", "bicycle-chain"),
    ("chain-2", "How long to wait before wiping chain oil?", "bicycle-chain"),
    ("plant-1", "When should I water a houseplant?", "houseplant-watering"),
    ("plant-2", "Why empty the saucer under a plant pot?", "houseplant-watering"),
    ("bread-1", "At what temperature should dough rise?", "bread-proofing"),
    ("bread-2", "How can I tell bread dough has proofed?", "bread-proofing"),
    ("bread-3", "How long does dough take to double?", "bread-proofing"),
    ("kettle-3", "What mixture removes limescale from a kettle?", "kettle-descaling"),
]


def _golden(qid: str, query: str, doc: str, split: str | None) -> str:
    item = {"id": qid, "query": query, "turns": [], "relevantDocIds": [doc], "mustInclude": [], "mustNotInclude": [],
            "expectRefusal": False, "tags": ["tiny"]}
    return json.dumps(item if split is None else {**item, "split": split})


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A tiny project of four documents and ten questions without splits; its own caches."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "goldens").mkdir()
    (tmp_path / "eval-results").mkdir()
    for doc, (title, body) in TOPICS.items():
        (tmp_path / "corpus" / f"{doc}.md").write_text(f"# {title}\n\n{body}\n\n{body}\n", encoding="utf-8")
    (tmp_path / "goldens" / "tiny.jsonl").write_text(
        "\n".join(_golden(q, text, doc, None) for q, text, doc in QUESTIONS) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGQUAL_QDRANT_WAIT", "5")
    return tmp_path


def _sweep(project: Path, capsys, *args: str) -> dict:
    code, out, err = ragqual(project / "eval-results" / "eval.db", ["--json", "sweep", *args], capsys)
    assert code == 0, err
    return json.loads(out)


def _sweep_runs(project: Path) -> int:
    import sqlite3

    db = project / "eval-results" / "eval.db"
    if not db.exists():  # a refusal before anything was recorded creates no history
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM runs WHERE kind = 'sweep'").fetchone()[0]


TWO_SIZES = ("--chunk-tokens", "48,96", "--overlap-tokens", "0", "--split-by", "hash", "--split-seed", "1")


def test_each_chunking_is_ingested_once_into_its_own_collection_and_reused(project, capsys):
    first = _sweep(project, capsys, *TWO_SIZES)
    indexes = first["indexes"]
    assert [i["index"] for i in indexes] == ["chunk48/overlap0/minilm", "chunk96/overlap0/minilm"]
    collections = {i["collection"] for i in indexes}
    assert len(collections) == 2 and all(c.startswith("ragqual_kb-sweep-") for c in collections)
    assert all((project / "eval-results" / "qdrant-edge" / c).is_dir() for c in collections)
    assert not (project / "eval-results" / "qdrant-edge" / "ragqual_kb").exists()  # the project's own index untouched
    assert len({i["fingerprint"] for i in indexes}) == 2
    assert indexes[0]["chunks"] > indexes[1]["chunks"] > 0
    assert all(i["ingestMs"] is not None and i["ingestMs"] > 0 and not i["reused"] for i in indexes)
    assert _sweep_runs(project) == 2

    again = _sweep(project, capsys, *TWO_SIZES)  # the same plan: both read back, nothing opened
    assert [i["reused"] for i in again["indexes"]] == [True, True]
    assert again["run"]["run_ids"] == first["run"]["run_ids"] and _sweep_runs(project) == 2
    assert again["quality"]["grid"] == {n: {**r, "reused": True} for n, r in first["quality"]["grid"].items()}

    fresh = _sweep(project, capsys, *TWO_SIZES, "--rerun")  # evaluated again: each index found current
    assert _sweep_runs(project) == 4
    for index in fresh["indexes"]:
        assert index["ingestMs"] is None and index["embeddedTexts"] == 0 and not index["reused"]
    for name, row in fresh["quality"]["grid"].items():
        assert row["selection"] == first["quality"]["grid"][name]["selection"]


def test_the_report_gates_against_the_first_configuration_on_validation_and_reports_test(project, capsys):
    doc = _sweep(project, capsys, *TWO_SIZES)
    quality = doc["quality"]
    first, second = "chunk48/overlap0/minilm/hybrid/c20/k5", "chunk96/overlap0/minilm/hybrid/c20/k5"
    assert list(quality["grid"]) == [first, second] and quality["baseline"] == first
    assert quality["selectionSplit"] == "validation" and quality["reportedSplit"] == "test"
    assert "seed 1" in quality["splits"]
    gate = quality["gates"][second]
    assert gate["verdict"] in ("regression", "improvement", "equivalent", "inconclusive")
    assert "(validation)" in gate["base"] and {m["metric"] for m in gate["metrics"]} >= {"recall@5", "mrr"}
    assert "chunking.chunk_tokens: 48 -> 96" in gate["differs"]
    row = quality["grid"][second]
    assert row["selection"]["questions"] + row["reported"]["questions"] == len(QUESTIONS)
    assert row["selection"]["questions"] > 0 and row["reported"]["questions"] > 0
    held = quality["heldOutGate"]
    if quality["verdict"]["best"] is not None:
        assert "(test)" in held["base"] and held["new"].startswith(f"run {row['runId']} {second}")
    else:
        assert held is None


def test_the_markdown_table_shows_index_size_ingest_time_context_and_the_gate(project, capsys):
    code, out, err = ragqual(project / "eval-results" / "eval.db", ["sweep", *TWO_SIZES], capsys)
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("| config"))
    for column in ("contextChars (validation)", "index chunks", "index bytes", "ingest ms", "embedded",
                   "gate vs first (validation)"):
        assert column in header
    assert "splits: by hash of the question id with seed 1" in out
    assert any(line.startswith("| chunk96/overlap0/minilm/hybrid/c20/k5") for line in out.splitlines())
    reports = sorted((project / "eval-results" / "reports").glob("sweep-run*.md"))
    assert [p.name for p in reports] == ["sweep-run1-2.md"]


def test_a_second_embedder_gets_its_own_collection(project, capsys, monkeypatch):
    """Only minilm embeds offline; the second embedder is a stand-in Ollama server on 127.0.0.1."""
    with FakeOllama() as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        doc = _sweep(project, capsys, "--embedder", "minilm,ollama:tiny", "--split-by", "hash")
        assert server.calls["/api/embed"] > 0
    indexes = doc["indexes"]
    assert [i["index"] for i in indexes] == ["chunk256/overlap32/minilm", "chunk256/overlap32/ollama:tiny"]
    assert indexes[1]["embedder"].startswith("ollama:tiny") and indexes[1]["indexVectorBytes"] == indexes[1]["chunks"] * 8 * 4
    assert len({i["collection"] for i in indexes}) == 2 and len({i["fingerprint"] for i in indexes}) == 2
    assert "chunk256/overlap32/ollama:tiny/hybrid/c20/k5" in doc["quality"]["gates"]


def test_goldens_without_splits_are_refused_without_split_by_hash(project, capsys):
    code, _, err = ragqual(project / "eval-results" / "eval.db", ["sweep", "--chunk-tokens", "48"], capsys)
    assert code == 2 and "--split-by hash" in err and "found 0 / 0" in err
    assert _sweep_runs(project) == 0


def _write_goldens(project: Path, splits: list[str | None]) -> None:
    lines = [_golden(q, text, doc, s) for (q, text, doc), s in zip(QUESTIONS, splits, strict=True)]
    (project / "goldens" / "tiny.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_split_by_hash_is_ignored_with_a_note_when_every_golden_carries_a_split(project, capsys):
    _write_goldens(project, ["validation", "test"] * 5)
    doc = _sweep(project, capsys, "--chunk-tokens", "96", "--overlap-tokens", "0", "--split-by", "hash")
    assert "--split-by hash ignored" in doc["quality"]["splits"]
    row = next(iter(doc["quality"]["grid"].values()))
    assert row["selection"]["questions"] == 5 and row["reported"]["questions"] == 5


def test_split_by_hash_refuses_goldens_split_only_in_part(project, capsys):
    _write_goldens(project, ["validation", "test"] + [None] * 8)
    code, _, err = ragqual(project / "eval-results" / "eval.db",
                           ["sweep", "--chunk-tokens", "96", "--split-by", "hash"], capsys)
    assert code == 2 and "2 of 10 questions carry a `split`" in err
    assert _sweep_runs(project) == 0


def test_another_seed_gives_another_split_and_other_runs(project, capsys):
    one = _sweep(project, capsys, "--chunk-tokens", "96", "--overlap-tokens", "0", "--split-by", "hash", "--split-seed", "1")
    two = _sweep(project, capsys, "--chunk-tokens", "96", "--overlap-tokens", "0", "--split-by", "hash", "--split-seed", "2")
    assert one["quality"]["splits"] != two["quality"]["splits"] or one["run"] != two["run"]
    assert two["indexes"][0]["reused"] is False and two["indexes"][0]["ingestMs"] is None  # same index, new plan


def test_an_impossible_chunking_is_refused_before_anything_is_ingested(project, capsys):
    code, _, err = ragqual(project / "eval-results" / "eval.db",
                           ["sweep", "--chunk-tokens", "96,32", "--split-by", "hash"], capsys)
    assert code == 2 and "chunk32/overlap32/minilm" in err
    assert not (project / "eval-results" / "qdrant-edge").exists()


def test_a_sweep_stopped_part_way_resumes_with_the_configurations_it_finished(project, capsys):
    """A sweep killed after its first configuration left that configuration's finished run: the
    whole plan run again reads it back and evaluates only the rest."""
    part = _sweep(project, capsys, "--chunk-tokens", "48", "--overlap-tokens", "0", "--split-by", "hash")
    whole = _sweep(project, capsys, *TWO_SIZES[:4], "--split-by", "hash")
    assert [i["reused"] for i in whole["indexes"]] == [True, False]
    assert whole["indexes"][0]["run_id"] == part["run"]["run_ids"][0] and _sweep_runs(project) == 2


def test_a_run_stopped_before_it_finished_is_evaluated_again(project, capsys, monkeypatch):
    from ragqual.store.runstore import RunStore

    real = RunStore.add_event

    def stop_at_finish(self, run_id, event, detail=None):
        if event == "finished":
            raise KeyboardInterrupt  # Ctrl-C after the rows, before the run is marked finished
        return real(self, run_id, event, detail)

    monkeypatch.setattr(RunStore, "add_event", stop_at_finish)
    code, _, _ = ragqual(project / "eval-results" / "eval.db",
                         ["sweep", "--chunk-tokens", "48", "--overlap-tokens", "0", "--split-by", "hash"], capsys)
    assert code == 130 and _sweep_runs(project) == 1
    monkeypatch.setattr(RunStore, "add_event", real)
    again = _sweep(project, capsys, "--chunk-tokens", "48", "--overlap-tokens", "0", "--split-by", "hash")
    assert again["indexes"][0]["reused"] is False and again["run"]["run_ids"] == [2]
    assert again["indexes"][0]["ingestMs"] is None  # the index itself was complete: not ingested again


def _sweep_params(project: Path) -> list[dict]:
    import sqlite3

    with sqlite3.connect(project / "eval-results" / "eval.db") as conn:
        return [json.loads(p) for (p,) in conn.execute("SELECT params FROM runs WHERE kind = 'sweep' ORDER BY id")]


def test_every_index_run_carries_the_name_and_tags_and_reuse_keeps_to_the_same_label(project, capsys):
    labelled = (*TWO_SIZES, "--name", "chunk-sizes", "--tag", "idea=smaller", "--tag", "corpus=tiny")
    first = _sweep(project, capsys, *labelled)
    assert first["run"]["name"] == "chunk-sizes" and first["run"]["tags"] == {"corpus": "tiny", "idea": "smaller"}
    stored = _sweep_params(project)
    assert len(stored) == 2
    for params in stored:
        assert params["name"] == "chunk-sizes" and params["tags"] == {"corpus": "tiny", "idea": "smaller"}
        assert params["sweep"]["entry"]  # the sweep's own record kept beside the label

    again = _sweep(project, capsys, *labelled)  # the same plan and label: read back
    assert [i["reused"] for i in again["indexes"]] == [True, True] and _sweep_runs(project) == 2

    renamed = _sweep(project, capsys, *TWO_SIZES, "--name", "chunk-sizes-2")  # another label: runs of its own
    assert [i["reused"] for i in renamed["indexes"]] == [False, False] and _sweep_runs(project) == 4
    assert [p.get("name") for p in _sweep_params(project)[2:]] == ["chunk-sizes-2", "chunk-sizes-2"]
    assert all("tags" not in p for p in _sweep_params(project)[2:])
    for name, row in renamed["quality"]["grid"].items():
        assert row["selection"] == first["quality"]["grid"][name]["selection"]

    code, out, err = ragqual(project / "eval-results" / "eval.db", ["history", "--kind", "sweep"], capsys)
    assert code == 0, err
    assert out.count("chunk-sizes-2") == 2 and "corpus=tiny idea=smaller" in out


def test_a_bad_sweep_tag_is_refused_before_anything_is_recorded(project, capsys):
    code, _, err = ragqual(project / "eval-results" / "eval.db", ["sweep", *TWO_SIZES, "--tag", "novalue"], capsys)
    assert code == 2 and "--tag 'novalue'" in err
    assert _sweep_runs(project) == 0


def test_an_edited_glossary_is_evaluated_again_not_read_back(project, capsys):
    """The glossary's digest is in each configuration and so in the sweep's reuse key."""
    (project / "pyproject.toml").write_text('[tool.ragqual]\nglossary = "glossary.txt"\n', encoding="utf-8")
    (project / "glossary.txt").write_text("PC = proofing chamber\n", encoding="utf-8")
    first = _sweep(project, capsys, "--split-by", "hash", "--split-seed", "1")
    again = _sweep(project, capsys, "--split-by", "hash", "--split-seed", "1")
    assert [i["reused"] for i in again["indexes"]] == [True] and _sweep_runs(project) == 1
    (project / "glossary.txt").write_text("PC = personal computer\n", encoding="utf-8")
    edited = _sweep(project, capsys, "--split-by", "hash", "--split-seed", "1")
    assert [i["reused"] for i in edited["indexes"]] == [False] and _sweep_runs(project) == 2
    assert edited["run"]["run_ids"] != first["run"]["run_ids"]
