"""Corpus documents: validate `(name, bytes)` pairs into Documents, every problem in one pass.

A document's id is its file name without `.md`, and must match DOC_ID_PATTERN so it
can be used in goldens, payloads and folder names unchanged. Files named in capitals
(README.md, SOURCES.md) are notes about the corpus, not documents: the adapter skips
them (see `is_corpus_note`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ragqual.core.hashing import sha256_hex
from ragqual.errors import Issue, ValidationFailed

DOC_SUFFIX = ".md"
DOC_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]*")
_NOTE_PATTERN = re.compile(r"[A-Z][A-Z0-9_-]*\.md")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Document:
    """One corpus document: its id, its file's name, its text and the hash of its bytes."""

    doc_id: str
    filename: str  # base name, e.g. "water-boiling.md"
    text: str  # decoded, BOM dropped, line endings normalised to "\n"
    sha256: str  # of the file's exact bytes (of the text's UTF-8 for a document sharing its file)
    container: str = ""  # for a document of a standard collection: its file, relative to the corpus folder


def is_corpus_note(filename: str) -> bool:
    """True for README.md / SOURCES.md style files that describe the corpus rather than belong to it."""
    return _NOTE_PATTERN.fullmatch(filename) is not None


def doc_id_for(filename: str) -> str | None:
    """The document id a base file name stands for, or None when it is not a valid document name."""
    if not filename.endswith(DOC_SUFFIX):
        return None
    stem = filename[: -len(DOC_SUFFIX)]
    return stem if DOC_ID_PATTERN.fullmatch(stem) else None


def parse_corpus(files: Sequence[tuple[str, bytes]], *, source_dir: str = "corpus") -> list[Document]:
    """Documents sorted by id; ValidationFailed lists every bad file (`source_dir` names an empty corpus)."""
    documents: list[Document] = []
    issues: list[Issue] = []
    seen: dict[str, str] = {}
    for name, data in sorted(files, key=lambda f: f[0]):
        document, problems = _parse_document(name, data)
        issues.extend(problems)
        if document is None:
            continue
        if document.doc_id in seen:
            issues.append(Issue(name, None, f"document id {document.doc_id!r} is also used by {seen[document.doc_id]}"))
            continue
        seen[document.doc_id] = name
        documents.append(document)
    if not files:
        issues.append(Issue(source_dir, None, f"no documents (*{DOC_SUFFIX}) found"))
    if issues:
        raise ValidationFailed(issues)
    return sorted(documents, key=lambda d: d.doc_id)


def _parse_document(name: str, data: bytes) -> tuple[Document | None, list[Issue]]:
    filename = PurePosixPath(name.replace("\\", "/")).name
    doc_id = doc_id_for(filename)
    issues = []
    if doc_id is None:
        issues.append(Issue(name, None, f"bad document file name {filename!r}: it must be <id>{DOC_SUFFIX} "
                                        f"with an id of lower-case letters, digits, '.', '_' or '-'"))
    text, problem = _decode(name, data)
    if problem is not None:
        issues.append(problem)
    if issues or doc_id is None or text is None:
        return None, issues
    return Document(doc_id=doc_id, filename=filename, text=text, sha256=sha256_hex(data)), []


def decode_utf8(name: str, data: bytes) -> tuple[str | None, Issue | None]:
    """UTF-8 text (BOM dropped, line endings normalised), or the Issue naming the bad byte's line.
    One rule for every file ragqual reads as text: corpus documents and standard collections."""
    body = data.removeprefix(_BOM)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + len(data) - len(body)
        line = data.count(b"\n", 0, offset) + 1
        return None, Issue(name, line, f"not valid UTF-8 (byte 0x{data[offset]:02x}); save the file as UTF-8")
    return text.replace("\r\n", "\n").replace("\r", "\n"), None


def _decode(name: str, data: bytes) -> tuple[str | None, Issue | None]:
    """Text of a document, or the Issue saying why it has none."""
    text, problem = decode_utf8(name, data)
    if text is None:
        return None, problem
    if not text.strip():
        return None, Issue(name, None, "empty document (no text)" if not text else "document holds only white space")
    return text, None
