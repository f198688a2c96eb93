"""`ragqual retrieval` on standard collections: the shipped Vaswani collection (a documented subset,
to keep CI short: its first SUBSET_DOCS documents and the judgements on them) and a small BEIR set.

The tier's exported qrels and runs are evaluated by pytrec_eval and must give the numbers
ragqual reports; the full collection runs in benchmarks/bench_scale.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import pytrec_eval

from tests.adapters.test_collection_files import make_beir, make_trec

REPO = Path(__file__).resolve().parents[2]
VASWANI = REPO / "datasets" / "vaswani-npl"
SUBSET_DOCS = 400
MEASURES = {"map": "map", "ndcg": "ndcg", "ndcg@10": "ndcg_cut_10", "recall@5": "recall_5",
            "recall@100": "recall_100", "mrr": "recip_rank"}


def vaswani_subset(target: Path, n_docs: int = SUBSET_DOCS) -> Path:
    """The first `n_docs` documents, every topic, and the judgements naming those documents."""
    text = (VASWANI / "corpus" / "doc-text.trec").read_text(encoding="utf-8")
    docs = re.findall(r"<DOC>.*?</DOC>\n", text, re.S)[:n_docs]
    ids = {re.search(r"<DOCNO>(.*?)</DOCNO>", d).group(1) for d in docs}
    (target / "corpus").mkdir(parents=True)
    (target / "corpus" / "doc-text.trec").write_text("".join(docs), encoding="utf-8")
    qrels = [line for line in (VASWANI / "qrels").read_text().splitlines() if line.split()[2] in ids]
    (target / "qrels").write_text("\n".join(qrels) + "\n")
    (target / "query-text.trec").write_bytes((VASWANI / "query-text.trec").read_bytes())
    return target


def _main(capsys, *args: str) -> tuple[int, str, str]:
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def _read_trec(path: Path, run: bool) -> dict[str, dict[str, float]]:
    out: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        f = line.split()
        out.setdefault(f[0], {})[f[2]] = float(f[4]) if run else int(f[3])
    return out


def test_the_shipped_collection_is_complete():
    from ragqual.adapters.collection_files import read_any

    loaded = read_any(VASWANI, VASWANI)
    assert (len(loaded.documents), len(loaded.goldens)) == (11429, 93)
    assert sum(len(g.relevant_doc_ids) for g in loaded.goldens) == 2083
    assert "MPL" in (VASWANI / "README.md").read_text()


def test_vaswani_subset_exports_evaluate_to_the_reported_numbers(workdir, tmp_path, capsys):
    collection = vaswani_subset(tmp_path / "vaswani")
    out = tmp_path / "trec"
    code, stdout, err = _main(capsys, "--json", "retrieval", "--corpus", str(collection), "--goldens", str(collection),
                              "--export-trec", str(out))
    assert code == 0, err
    report = json.loads(stdout)
    assert report["run"]["bm25_stemming"] is True and report["run"]["goldens_layout"] == "trec"
    qrels = _read_trec(out / "qrels.txt", run=False)
    assert len(qrels) == report["quality"]["bm25"]["overall"]["questions"] > 20
    for strategy in ("dense", "bm25", "hybrid"):
        quality = report["quality"][strategy]
        assert quality["config"]["candidate_k"] == 1000 and quality["config"]["rerank"] is False
        evaluated = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values())).evaluate(
            _read_trec(out / f"run.{strategy}.txt", run=True))
        for ours, theirs in MEASURES.items():
            expected = sum(evaluated.get(q, {}).get(theirs, 0.0) for q in qrels) / len(qrels)
            assert quality["overall"][ours] == pytest.approx(expected, abs=6e-5), (strategy, ours)


def test_stemming_changes_bm25_and_can_be_switched_off(workdir, tmp_path, capsys):
    collection = vaswani_subset(tmp_path / "vaswani", 150)
    runs = {}
    for flag in ("--stem", "--no-stem"):
        code, stdout, err = _main(capsys, "--json", "retrieval", "--corpus", str(collection), "--goldens", str(collection),
                                  "--strategy", "bm25", flag)
        assert code == 0, err
        report = json.loads(stdout)
        runs[flag] = [q["retrieved"] for q in report["quality"]["bm25"]["perQuestion"]]
        assert report["run"]["bm25_stemming"] is (flag == "--stem")
    assert runs["--stem"] != runs["--no-stem"]


def test_generation_tier_refuses_relevance_only_goldens(workdir, tmp_path, capsys):
    collection = make_trec(tmp_path / "trec")
    code, _, err = _main(capsys, "generation", "--corpus", str(collection), "--goldens", str(collection))
    assert code == 2
    assert "needs goldens with answer expectations" in err and "ragqual retrieval" in err


def test_beir_collection_reports_each_split(workdir, tmp_path, capsys):
    collection = make_beir(tmp_path / "beir")
    code, stdout, err = _main(capsys, "--json", "retrieval", "--corpus", str(collection), "--goldens", str(collection),
                              "--strategy", "bm25")
    assert code == 0, err
    by_tag = json.loads(stdout)["quality"]["bm25"]["byTag"]
    assert set(by_tag) == {"dev", "test"} and by_tag["test"]["questions"] == 1


def test_a_broken_collection_is_refused_with_every_problem_and_nothing_written(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGQUAL_DB", raising=False)
    collection = make_trec(tmp_path / "trec", qrels="1 0 10 1\n1 0 404 1\n")
    (collection / "docs" / "part2").write_bytes(b"<DOC>\n<DOCNO>11</DOCNO>\nagain\n</DOC>\n")
    code, _, err = _main(capsys, "retrieval", "--corpus", str(collection), "--goldens", str(collection))
    assert code == 2
    assert "trec/docs/part2:1: document id '11' is also used at" in err
    assert "trec/qrels.txt:2: qrels name document '404'" in err
    assert not (tmp_path / "eval-results").exists()


def test_distractors_run_side_by_side_and_only_push_relevant_documents_down(workdir, tmp_path, capsys):
    folder = make_trec(tmp_path / "distractors")
    copy = (workdir / "corpus" / "water-boiling.md").read_text(encoding="utf-8").replace("<", " ")
    (folder / "docs" / "copies").write_text(f"<DOC>\n<DOCNO>boil-copy</DOCNO>\n{copy}\n</DOC>\n", encoding="utf-8")
    code, stdout, err = _main(capsys, "--json", "retrieval", "--strategy", "dense", "--distractors", str(folder))
    assert code == 0, err
    section = json.loads(stdout)["distractors"]
    assert section["documents"] == 3 and section["run_id"] == json.loads(stdout)["run"]["run_id"] + 1
    without, with_ = section["overall"]["dense"]["without"], section["overall"]["dense"]["with"]
    assert without["questions"] == with_["questions"]
    for metric in ("recall@1", "mrr", "ndcg@10"):  # exact search: added documents can only push relevant ones down
        assert with_[metric] <= without[metric]
    assert with_["mrr"] < without["mrr"]  # the copy of a relevant document outranks or ties it somewhere

    code, stdout, err = _main(capsys, "retrieval", "--strategy", "dense", "--distractors", str(folder))
    assert code == 0, err
    assert "dense without" in stdout and "dense with" in stdout and "Δ dense" in stdout


def test_split_selects_a_beir_collections_own_split_and_names_them_when_unknown(workdir, tmp_path, capsys):
    collection = make_beir(tmp_path / "beir")
    code, stdout, err = _main(capsys, "--json", "retrieval", "--corpus", str(collection), "--goldens", str(collection),
                              "--strategy", "bm25", "--split", "dev")
    assert code == 0, err
    overall = json.loads(stdout)["quality"]["bm25"]
    assert set(overall["byTag"]) == {"dev"}
    code, _, err = _main(capsys, "retrieval", "--corpus", str(collection), "--goldens", str(collection),
                         "--strategy", "bm25", "--split", "validation")
    assert code == 2 and "no golden has split 'validation'; splits present: dev, test" in err


def test_topic_field_chooses_which_part_of_a_trec_topic_is_the_question(workdir, tmp_path, capsys):
    root = tmp_path / "trec-desc"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "part1").write_text("<DOC>\n<DOCNO>10</DOCNO>\nboiling water at altitude\n</DOC>\n"
                                         "<DOC>\n<DOCNO>11</DOCNO>\npressure canning jars\n</DOC>\n")
    (root / "topics.txt").write_text("<top>\n<num> Number: 1\n<title> zebra\n<desc> Description:\nboiling water\n</top>\n")
    (root / "qrels.txt").write_text("1 0 10 1\n")

    def mrr(*extra: str) -> float:
        code, stdout, err = _main(capsys, "--json", "retrieval", "--corpus", str(root), "--goldens", str(root),
                                  "--strategy", "bm25", *extra)
        assert code == 0, err
        return json.loads(stdout)["quality"]["bm25"]["overall"]["mrr"]

    assert mrr() == 0.0  # the title alone names nothing in the corpus
    assert mrr("--topic-field", "desc") == 1.0
