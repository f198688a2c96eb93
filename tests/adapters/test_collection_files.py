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


# --- files that hung or were skipped: one rule (files.open_regular) and a capped gunzip --------------


def _within(seconds, work, fifos):
    """work() in a thread; when it blocks past `seconds` (a FIFO opened for reading waits for a
    writer), the FIFOs get a writer that closes at once so the thread ends, and the test fails."""
    import threading

    outcome = {}

    def run():
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        thread.join(5)
        pytest.fail(f"blocked on a FIFO for more than {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _refused(work, fifos=()):
    with pytest.raises(ValidationFailed) as caught:
        _within(10, work, fifos)
    return [(i.file.rsplit("/", 2)[-2:], i.line, i.message) for i in caught.value.issues]


@pytest.mark.parametrize("where", ["corpus.jsonl", "queries.jsonl"])
def test_a_fifo_in_a_beir_folder_is_refused_by_name_without_blocking(tmp_path, where):
    root = make_beir(tmp_path / "beir")
    (root / where).unlink()
    os.mkfifo(root / where)
    issues = _refused(lambda: read_any(root, root), [root / where])
    assert (["beir", where], None, "not a regular file") in issues


def test_a_fifo_in_a_trec_folder_is_refused_by_name_once_without_blocking(tmp_path):
    root = make_trec(tmp_path / "trec")
    os.mkfifo(root / "docs" / "part2")
    assert _refused(lambda: read_any(root, root), [root / "docs" / "part2"]) == [
        (["docs", "part2"], None, "not a regular file")]  # the corpus and goldens folders are one: said once


def test_a_fifo_among_ragqual_goldens_is_refused_by_name_without_blocking(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "water.md").write_text("# Water\n\nBoil it.\n")
    (tmp_path / "goldens").mkdir()
    os.mkfifo(tmp_path / "goldens" / "q.jsonl")
    issues = _refused(lambda: read_any(tmp_path / "corpus", tmp_path / "goldens"), [tmp_path / "goldens" / "q.jsonl"])
    assert issues == [(["goldens", "q.jsonl"], None, "not a regular file")]


def test_open_regular_refuses_a_fifo_a_folder_and_opens_a_file(tmp_path):
    from ragqual.adapters.files import open_regular

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_bytes(b"data")
    assert _within(10, lambda: open_regular(tmp_path / "pipe"), [tmp_path / "pipe"]) is None
    assert open_regular(tmp_path / "folder") is None
    with open_regular(tmp_path / "file") as handle:
        assert handle.read() == b"data"


def test_a_gzip_is_inflated_only_up_to_the_limit(tmp_path, monkeypatch):
    """64 MiB of zeros against a 1 MiB limit: refused, and the reading never held more than a few MiB
    (inflating it whole, as before, allocated the 64 MiB and more)."""
    import tracemalloc

    import ragqual.adapters.collection_files as collection_files

    monkeypatch.setattr(collection_files, "MAX_COLLECTION_FILE_BYTES", 2**20)
    root = make_trec(tmp_path / "trec")
    (root / "docs" / "bomb.gz").write_bytes(gzip.compress(b"<DOC><DOCNO>b</DOCNO>" + bytes(64 * 2**20)))
    tracemalloc.start()
    try:
        with pytest.raises(ValidationFailed) as caught:
            read_any(root, root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    [issue] = caught.value.issues
    assert issue.file.endswith("trec/docs/bomb.gz") and "once decompressed" in issue.message
    assert peak < 8 * 2**20, f"{peak:,} bytes allocated while reading"


def test_a_gzip_just_under_the_limit_is_read_whole(tmp_path, monkeypatch):
    import ragqual.adapters.collection_files as collection_files

    docs = b"<DOC>\n<DOCNO>10</DOCNO>\nboiling water at altitude\n</DOC>\n<DOC>\n<DOCNO>11</DOCNO>\npressure canning\n</DOC>\n"
    monkeypatch.setattr(collection_files, "MAX_COLLECTION_FILE_BYTES", len(docs))
    root = make_trec(tmp_path / "trec", gz=True)
    assert [d.doc_id for d in read_any(root, root).documents] == ["10", "11"]


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_bad_gzip_is_named_whether_alone_or_beside_good_files(tmp_path, damage):
    root = make_trec(tmp_path / "trec", gz=True)
    whole = (root / "docs" / "part1.gz").read_bytes()
    bad = whole[: len(whole) // 2] if damage == "truncated" else b"\x1f\x8b\x08\x00" + bytes(range(256)) * 2
    if damage == "truncated":  # alone: no document left to recognise the folder by
        (root / "docs" / "part1.gz").write_bytes(bad)
    else:
        (root / "docs" / "part2.gz").write_bytes(bad)
    with pytest.raises(ValidationFailed) as caught:
        read_any(root, root)
    named = [i for i in caught.value.issues if i.file.endswith(".gz")]
    assert len(named) == 1 and "not a valid gzip file" in named[0].message, caught.value.issues
    assert not any("no documents (*.md)" in i.message for i in caught.value.issues)
