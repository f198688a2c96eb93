"""The disk edge: folders, links, sizes and special files, against a real temporary file system."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ragqual.adapters import files
from ragqual.adapters.files import (
    read_corpus_and_goldens,
    read_corpus_dir,
    read_goldens_dir,
    resolve_source_in_corpus,
)
from ragqual.errors import InputError, Issue, ValidationFailed


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding corpus/, goldens/ and an unrelated outside/ folder."""
    monkeypatch.chdir(tmp_path)
    for name in ("corpus", "goldens", "outside"):
        (tmp_path / name).mkdir()
    (tmp_path / "corpus" / "water-boiling.md").write_text("Boil for one minute.\n")
    (tmp_path / "corpus" / "bleach.md").write_text("Eight drops per gallon.\n")
    (tmp_path / "outside" / "faq.md").write_text("Not part of the corpus.\n")
    return tmp_path


def golden_line(**overrides: Any) -> str:
    obj = {
        "id": "q1", "query": "How long?", "turns": [], "relevantDocIds": ["water-boiling"],
        "mustInclude": ["minute"], "mustNotInclude": [], "expectRefusal": False, "tags": ["numeric"],
    }
    return json.dumps({**obj, **overrides}) + "\n"


def failure(call: Any, *args: Any) -> list[Issue]:
    with pytest.raises(ValidationFailed) as caught:
        call(*args)
    return caught.value.issues


# --- corpus ------------------------------------------------------------------------------------


def test_reads_documents_directly_inside_skipping_notes_hidden_and_other_files(work: Path) -> None:
    corpus = work / "corpus"
    (corpus / "SOURCES.md").write_text("Where each safety figure comes from.\n")
    (corpus / ".#water-boiling.md").symlink_to("/nonexistent/editor-lock")
    (corpus / "notes.txt").write_text("not a document")
    (corpus / "sub").mkdir()
    (corpus / "sub" / "nested.md").write_text("not read")
    docs = read_corpus_dir("corpus")
    assert [(d.doc_id, d.text) for d in docs] == [
        ("bleach", "Eight drops per gallon.\n"), ("water-boiling", "Boil for one minute.\n"),
    ]


def test_missing_or_non_directory_corpus_is_an_input_error_naming_it(work: Path) -> None:
    with pytest.raises(InputError, match="corpus directory no-such-dir does not exist") as caught:
        read_corpus_dir("no-such-dir")
    assert not isinstance(caught.value, ValidationFailed)
    with pytest.raises(InputError, match="corpus/bleach.md is not a directory"):
        read_corpus_dir(work / "corpus" / "bleach.md")
    with pytest.raises(InputError, match="goldens directory nope does not exist"):
        read_goldens_dir("nope", set())


def test_symlink_leaving_the_corpus_is_refused_on_its_resolved_path(work: Path) -> None:
    corpus = work / "corpus"
    (corpus / "faq.md").symlink_to(work / "outside" / "faq.md")
    # The name and the link's own location look innocent; only the resolved path shows it leaves.
    (corpus / "inner").symlink_to(work / "outside", target_is_directory=True)
    (corpus / "sneaky.md").symlink_to(Path("inner") / "faq.md")
    (corpus / "alias.md").symlink_to("bleach.md")  # stays inside: accepted
    found = failure(read_corpus_dir, "corpus")
    assert [(i.file, i.line) for i in found] == [("corpus/faq.md", None), ("corpus/sneaky.md", None)]
    assert all("outside corpus" in i.message and "refused" in i.message for i in found)


def test_broken_link_fifo_and_directory_are_refused_without_hanging(work: Path) -> None:
    corpus = work / "corpus"
    (corpus / "gone.md").symlink_to(corpus / "deleted.md")
    os.mkfifo(corpus / "pipe.md")  # reading this would block forever
    (corpus / "folder.md").mkdir()
    found = failure(read_corpus_dir, "corpus")
    assert [(i.file, i.message) for i in found] == [
        ("corpus/folder.md", "not a regular file"),
        ("corpus/gone.md", "broken link: its target does not exist"),
        ("corpus/pipe.md", "not a regular file"),
    ]


def test_document_over_one_megabyte_is_refused(work: Path) -> None:
    (work / "corpus" / "huge.md").write_bytes(b"a" * 1_000_001)
    (work / "corpus" / "limit.md").write_bytes(b"a" * 1_000_000)  # exactly at the limit: fine
    [issue] = failure(read_corpus_dir, "corpus")
    assert issue.file == "corpus/huge.md" and "1,000,001 bytes is over the limit of 1 MB per document" in issue.message


def test_every_corpus_problem_is_reported_in_one_pass(work: Path) -> None:
    corpus = work / "corpus"
    (corpus / "latin1.md").write_bytes("first line\nd\u00e9j\u00e0 vu\n".encode("latin-1"))
    (corpus / "empty.md").write_bytes(b"")
    (corpus / "Bad.md").write_text("capital letters are not an id, and not a note either")
    (corpus / "huge.md").write_bytes(b"a" * (files.MAX_DOCUMENT_BYTES + 1))
    (corpus / "link.md").symlink_to(work / "outside" / "faq.md")
    found = failure(read_corpus_dir, "corpus")
    assert [(i.file, i.line) for i in found] == [
        ("corpus/Bad.md", None), ("corpus/empty.md", None), ("corpus/huge.md", None),
        ("corpus/latin1.md", 2), ("corpus/link.md", None),
    ]


def test_empty_corpus_folder_is_rejected(work: Path) -> None:
    empty = work / "kb"
    empty.mkdir()
    assert [(i.file, i.line) for i in failure(read_corpus_dir, "kb")] == [("kb", None)]


def test_paths_outside_the_working_directory_are_shown_absolute(
    work: Path, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "x.md").write_bytes(b"")
    [issue] = failure(read_corpus_dir, elsewhere)
    assert issue.file == (elsewhere / "x.md").as_posix()


# --- goldens -----------------------------------------------------------------------------------


def test_goldens_are_read_and_checked_against_the_corpus(work: Path) -> None:
    (work / "goldens" / "water.jsonl").write_text(golden_line() + "\n" + golden_line(id="q2"))
    (work / "goldens" / "README.md").write_text("ignored")
    [q1, q2] = read_goldens_dir("goldens", {"water-boiling"})
    assert (q1.source, q2.source) == ("goldens/water.jsonl:1", "goldens/water.jsonl:3")


def test_golden_issues_name_the_file_relative_to_the_working_directory(work: Path) -> None:
    lines = [golden_line(id=f"q{i}") for i in range(11)] + [golden_line(id="q99", relevantDocIds=["ghost"])]
    (work / "goldens" / "water.jsonl").write_text("".join(lines))
    [issue] = failure(read_goldens_dir, "goldens", {"water-boiling"})
    assert str(issue).startswith("goldens/water.jsonl:12: relevantDocIds names unknown document 'ghost'")


def test_fifty_megabyte_golden_file_is_refused_by_size_without_being_read(
    work: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = work / "goldens" / "big.jsonl"
    with big.open("wb") as handle:
        handle.truncate(50_000_000)  # sparse: 50 MB by size, no disk used
    (work / "goldens" / "ok.jsonl").write_text(golden_line())
    opened: list[str] = []
    real_open = files.open_regular

    def spy(path: Any) -> Any:
        opened.append(Path(path).name)
        return real_open(path)

    monkeypatch.setattr(files, "open_regular", spy)
    [issue] = failure(read_goldens_dir, "goldens", {"water-boiling"})
    assert issue.file == "goldens/big.jsonl"
    assert "50,000,000 bytes is over the limit of 10 MB per golden file" in issue.message
    assert opened == ["ok.jsonl"]


def test_no_golden_files_is_rejected(work: Path) -> None:
    assert [(i.file, i.line) for i in failure(read_goldens_dir, "goldens", set())] == [("goldens", None)]


def test_symlinked_golden_file_leaving_the_folder_is_refused(work: Path) -> None:
    (work / "outside" / "stolen.jsonl").write_text(golden_line())
    (work / "goldens" / "stolen.jsonl").symlink_to(work / "outside" / "stolen.jsonl")
    [issue] = failure(read_goldens_dir, "goldens", {"water-boiling"})
    assert issue.file == "goldens/stolen.jsonl" and "outside goldens" in issue.message


def test_corpus_and_goldens_problems_come_in_one_failure(work: Path) -> None:
    (work / "corpus" / "latin1.md").write_bytes(b"caf\xe9")
    (work / "goldens" / "water.jsonl").write_text(
        golden_line(relevantDocIds=["latin1"])  # names the refused document: not also "unknown"
        + golden_line(id="q2", relevantDocIds=["ghost"])
    )
    found = failure(read_corpus_and_goldens, "corpus", "goldens")
    assert [(i.file, i.line) for i in found] == [("corpus/latin1.md", 1), ("goldens/water.jsonl", 2)]


def test_corpus_and_goldens_together_when_valid(work: Path) -> None:
    (work / "goldens" / "water.jsonl").write_text(golden_line())
    documents, goldens = read_corpus_and_goldens("corpus", "goldens")
    assert [d.doc_id for d in documents] == ["bleach", "water-boiling"] and [g.id for g in goldens] == ["q1"]


# --- the leak guard's path check ---------------------------------------------------------------------


def test_source_in_the_corpus_resolves_to_its_doc_id(work: Path) -> None:
    assert resolve_source_in_corpus("corpus/water-boiling.md", "corpus") == "water-boiling"
    assert resolve_source_in_corpus(str(work / "corpus" / "bleach.md"), "corpus") == "bleach"
    assert resolve_source_in_corpus("goldens/../corpus/bleach.md", work / "corpus") == "bleach"


@pytest.mark.parametrize(
    "source",
    [
        "outside/faq.md",  # a plausible name elsewhere must not pass for a document
        "corpus/../outside/faq.md",
        "corpus/faq.md",  # does not exist
        "corpus/link-out.md",  # a link inside the corpus that resolves outside it
        "corpus/sub/nested.md",  # not directly inside
        "corpus/notes.txt",
        "corpus/SOURCES.md",
        "corpus/folder.md",
        "corpus",
        "",
        "corpus/water-boiling.md\x00",
    ],
)
def test_anything_else_does_not_resolve(work: Path, source: str) -> None:
    corpus = work / "corpus"
    (corpus / "link-out.md").symlink_to(work / "outside" / "faq.md")
    (corpus / "sub").mkdir()
    (corpus / "sub" / "nested.md").write_text("x")
    (corpus / "notes.txt").write_text("x")
    (corpus / "SOURCES.md").write_text("x")
    (corpus / "folder.md").mkdir()
    assert resolve_source_in_corpus(source, "corpus") is None


def test_missing_corpus_dir_resolves_nothing(work: Path) -> None:
    assert resolve_source_in_corpus("corpus/bleach.md", "no-such-corpus") is None
