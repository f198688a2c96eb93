"""Corpus validation: every bad document named in one pass."""

from __future__ import annotations

import hashlib

import pytest

from ragqual.core.corpus import Document, doc_id_for, is_corpus_note, parse_corpus
from ragqual.errors import Issue, ValidationFailed


def issues_of(files: list[tuple[str, bytes]]) -> list[Issue]:
    with pytest.raises(ValidationFailed) as caught:
        parse_corpus(files)
    return caught.value.issues


def test_documents_are_sorted_by_id_with_hash_of_exact_bytes() -> None:
    raw = b"Boil for one minute.\r\nAbove 2000 m, three minutes.\r\n"
    docs = parse_corpus([("corpus/water-boiling.md", raw), ("corpus/bleach.md", "Eau de Javel ✓".encode())])
    assert [d.doc_id for d in docs] == ["bleach", "water-boiling"]
    water = docs[1]
    assert water == Document(
        doc_id="water-boiling",
        filename="water-boiling.md",
        text="Boil for one minute.\nAbove 2000 m, three minutes.\n",
        sha256=hashlib.sha256(raw).hexdigest(),
    )
    assert docs[0].text == "Eau de Javel ✓"


def test_bom_is_dropped_from_the_text_but_kept_in_the_hash() -> None:
    raw = b"\xef\xbb\xbfHello"
    [doc] = parse_corpus([("corpus/a.md", raw)])
    assert doc.text == "Hello"
    assert doc.sha256 == hashlib.sha256(raw).hexdigest()


def test_non_utf8_names_the_line_of_the_first_bad_byte() -> None:
    [issue] = issues_of([("corpus/latin1.md", b"line one\nline two\ncaf\xe9 on line three\n\xff")])
    assert (issue.file, issue.line) == ("corpus/latin1.md", 3)
    assert "not valid UTF-8 (byte 0xe9)" in issue.message


def test_non_utf8_after_a_bom_counts_lines_from_the_file_start() -> None:
    [issue] = issues_of([("corpus/a.md", b"\xef\xbb\xbfok\n\x80")])
    assert (issue.line, "0x80" in issue.message) == (2, True)


@pytest.mark.parametrize(("data", "fragment"), [(b"", "empty document"), (b" \n\t\r\n", "only white space")])
def test_empty_and_blank_documents_are_rejected(data: bytes, fragment: str) -> None:
    [issue] = issues_of([("corpus/blank.md", data)])
    assert (issue.file, issue.line) == ("corpus/blank.md", None)
    assert fragment in issue.message


@pytest.mark.parametrize("name", ["corpus/Water.md", "corpus/-x.md", "corpus/water boil.md", "corpus/water.txt",
                                  "corpus/.md", "corpus/été.md"])
def test_bad_file_names_are_rejected(name: str) -> None:
    [issue] = issues_of([(name, b"text")])
    assert issue.file == name and "bad document file name" in issue.message


def test_every_bad_file_is_reported_in_one_pass() -> None:
    found = issues_of([
        ("corpus/good.md", b"fine"),
        ("corpus/empty.md", b""),
        ("corpus/Bad Name.md", b"\xff"),  # two problems in one file
        ("corpus/latin.md", b"\xe9"),
    ])
    assert [(i.file, i.line) for i in found] == [
        ("corpus/Bad Name.md", None), ("corpus/Bad Name.md", 1), ("corpus/empty.md", None), ("corpus/latin.md", 1),
    ]


def test_same_id_from_two_places_is_rejected() -> None:
    [issue] = issues_of([("a/water.md", b"one"), ("b/water.md", b"two")])
    assert issue.file == "b/water.md" and "also used by a/water.md" in issue.message


def test_no_documents_at_all_is_rejected() -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_corpus([], source_dir="kb")
    assert [(i.file, i.line) for i in caught.value.issues] == [("kb", None)]


def test_names() -> None:
    assert doc_id_for("water-boiling.md") == "water-boiling"
    assert doc_id_for("v1.2_notes.md") == "v1.2_notes"
    assert doc_id_for("Water.md") is None and doc_id_for("water.markdown") is None
    assert is_corpus_note("SOURCES.md") and is_corpus_note("README.md")
    assert not is_corpus_note("sources.md") and not is_corpus_note("Readme.md")
