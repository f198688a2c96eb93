"""Layout detection and reading of BEIR / TREC folders, against real files in a temporary folder."""

import gzip
import json
import os

import pytest

from ragqual.adapters.collection_files import corpus_layout, goldens_layout, read_any
from ragqual.adapters.files import resolve_source_in_corpus, shared_file_source
from ragqual.errors import ValidationFailed


def make_trec(root, *, gz=False, qrels="1 0 10 1\n1 0 11 0\n2 0 11 2\n"):
    docs = b"<DOC>\n<DOCNO>10</DOCNO>\nboiling water at altitude\n</DOC>\n<DOC>\n<DOCNO>11</DOCNO>\npressure canning\n</DOC>\n"
    (root / "docs").mkdir(parents=True)
    if gz:
        (root / "docs" / "part1.gz").write_bytes(gzip.compress(docs))
    else:
        (root / "docs" / "part1").write_bytes(docs)
    (root / "topics.txt").write_text("<top>\n<num> Number: 1\n<title> boil water\n</top>\n<top><num>2</num><title>canning</title></top>\n")
    (root / "qrels.txt").write_text(qrels)
    (root / "README.md").write_text("# notes\n")
    return root


def make_beir(root, qrels_test="query-id\tcorpus-id\tscore\nq1\td1\t1\n", extra_split=True):
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "Water", "text": "boil it"}) + "\n"
                                       + json.dumps({"_id": "d2", "title": "", "text": "can it"}) + "\n")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "how to boil"}) + "\n"
                                        + json.dumps({"_id": "q2", "text": "how to can"}) + "\n")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(qrels_test)
    if extra_split:
        (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td2\t2\n")
    return root


def test_trec_folder_is_detected_and_read_with_gzip(tmp_path):
    root = make_trec(tmp_path / "trec", gz=True)
    assert (corpus_layout(root), goldens_layout(root)) == ("trec", "trec")
    loaded = read_any(root, root)
    assert [d.doc_id for d in loaded.documents] == ["10", "11"]
    assert loaded.documents[0].container == "docs/part1.gz"
    assert [(g.id, g.query, g.grades) for g in loaded.goldens] == [("1", "boil water", {"10": 1}), ("2", "canning", {"11": 2})]


def test_beir_folder_is_detected_and_split_by_qrels_file(tmp_path):
    root = make_beir(tmp_path / "beir")
    assert (corpus_layout(root), goldens_layout(root)) == ("beir", "beir")
    loaded = read_any(root, root)
    assert [(d.doc_id, d.text) for d in loaded.documents] == [("d1", "Water\n\nboil it"), ("d2", "can it")]
    assert [(g.id, g.split, g.tags) for g in loaded.goldens] == [("q2", "dev", ("dev",)), ("q1", "test", ("test",))]


def test_bundled_layout_is_still_the_default(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "faq.md").write_text("hello")
    assert corpus_layout(tmp_path / "c") == "ragqual" and goldens_layout(tmp_path / "c") == "ragqual"


def test_every_problem_of_documents_and_qrels_in_one_pass(tmp_path):
    root = make_trec(tmp_path / "trec", qrels="1 0 10 1\n1 0 99 1\n7 0 10 1\nbad line\n")
    (root / "docs" / "part2").write_bytes(b"<DOC>\n<DOCNO>10</DOCNO>\nagain\n</DOC>\n")
    (root / "docs" / "part3").write_bytes(b"<DOC>\n<DOCNO>12</DOCNO>\n\xff\n</DOC>\n")  # a bad byte refuses its file
    with pytest.raises(ValidationFailed) as failed:
        read_any(root, root)
    found = sorted(str(i) for i in failed.value.issues)
    assert any("docs/part2:1: document id '10' is also used at" in s for s in found)
    assert any("docs/part3:3: not valid UTF-8" in s for s in found)
    assert any("qrels.txt:2: qrels name document '99'" in s for s in found)
    assert any("qrels.txt:3: qrels name query '7'" in s for s in found)
    assert any("qrels.txt:4: expected 4 fields" in s for s in found)


def test_bad_gzip_and_links_out_of_the_folder_are_refused(tmp_path):
    root = make_trec(tmp_path / "trec")
    (root / "docs" / "broken.gz").write_bytes(gzip.compress(b"<DOC>\n<DOCNO>5</DOCNO> x </DOC>")[:30])
    outside = tmp_path / "outside.trec"
    outside.write_bytes(b"<DOC><DOCNO>6</DOCNO> y </DOC>")
    os.symlink(outside, root / "docs" / "link")
    with pytest.raises(ValidationFailed) as failed:
        read_any(root, root)
    messages = [str(i) for i in failed.value.issues]
    assert any("link" in m and "outside" in m for m in messages), messages


def test_beir_qrels_without_header_name_the_file(tmp_path):
    root = make_beir(tmp_path / "beir", qrels_test="q1\td1\t1\n", extra_split=False)
    with pytest.raises(ValidationFailed) as failed:
        read_any(root, root)
    assert [str(i) for i in failed.value.issues][0].endswith("qrels/test.tsv:1: the first line must be the header "
                                                             "'query-id<TAB>corpus-id<TAB>score'")


def test_shared_file_sources_pass_the_leak_guard_only_inside_the_corpus(tmp_path):
    root = make_trec(tmp_path / "trec")
    inside = shared_file_source(root / "docs" / "part1", "10")
    assert resolve_source_in_corpus(inside, root) == "10"
    elsewhere = tmp_path / "other.trec"
    elsewhere.write_text("x")
    assert resolve_source_in_corpus(shared_file_source(elsewhere, "10"), root) is None
    assert resolve_source_in_corpus(shared_file_source(root / "docs" / "missing", "10"), root) is None
    (root / "faq.md").write_text("a note")
    assert resolve_source_in_corpus(shared_file_source(root / "faq.md", "faq"), root) is None
