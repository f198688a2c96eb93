"""Find and read a corpus / goldens folder in any supported layout, detected by what is in it.

    ragqual   *.md documents, *.jsonl goldens (ragqual.adapters.files)
    BEIR      corpus.jsonl; queries.jsonl + qrels/<split>.tsv
    TREC      files whose content starts with <DOC> (documents, optionally .gz) anywhere under the
              folder; files starting with <top> (topics) and files named qrels* (judgements)

The corpus and the goldens folder may be the same folder (a collection as downloaded). Every
file goes through the same edge guards as the bundled format (no link out of the folder, regular
files only, a size limit) and every problem of documents, queries and qrels is reported in one
ValidationFailed with file and line.
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from ragqual.adapters import files
from ragqual.core.corpus import DOC_SUFFIX, Document, is_corpus_note
from ragqual.core.goldens import Golden
from ragqual.core.layouts import BEIR, TREC
from ragqual.errors import InputError, Issue, ValidationFailed

RAGQUAL = "ragqual"
MAX_COLLECTION_FILE_BYTES = 2_000_000_000  # per file, after decompression
LIMIT_NAME = "2 GB per collection file (MAX_COLLECTION_FILE_BYTES)"
SNIFF_BYTES = 4096
BEIR_CORPUS, BEIR_QUERIES, BEIR_QRELS = "corpus.jsonl", "queries.jsonl", "qrels"
QRELS_PREFIX = "qrels"


@dataclass(frozen=True)
class Loaded:
    """A corpus and its goldens as read, with the layout each was found in (ragqual, BEIR or TREC)."""

    documents: list[Document]
    goldens: list[Golden]
    corpus_layout: str
    goldens_layout: str


# --- detection -------------------------------------------------------------------------------------


def corpus_layout(path: str | os.PathLike[str]) -> str:
    root = Path(path)
    if os.path.lexists(root / BEIR_CORPUS):  # read (or refused by name) whatever it is
        return BEIR
    if root.is_dir() and _looks_like(root, b"<doc>", DOC_SUFFIX):
        return TREC
    return RAGQUAL


def goldens_layout(path: str | os.PathLike[str]) -> str:
    root = Path(path)
    if os.path.lexists(root / BEIR_QUERIES) and (root / BEIR_QRELS).is_dir():
        return BEIR
    if root.is_dir() and _looks_like(root, b"<top>", files.GOLDENS_SUFFIX):
        return TREC
    return RAGQUAL


def _looks_like(root: Path, head: bytes, native_suffix: str) -> bool:
    """True when a file under `root` starts with `head`; also when none does but some file cannot be
    read and none of ragqual's own files (`native_suffix`; notes such as README.md do not count) is
    there: a collection whose files are broken (a truncated .gz, a FIFO), named by the reader,
    rather than an empty ragqual folder."""
    tree = _tree(root)
    if any(_sniff(p).head.startswith(head) for p in tree):
        return True
    native = [n for n in os.listdir(root) if n.endswith(native_suffix) and not n.startswith(".") and not is_corpus_note(n)]
    return not native and any(_sniff(p).problem for p in tree)


def _tree(root: Path) -> list[Path]:
    """Every visible file under `root`, sorted, skipping *.md notes (links are not followed into folders)."""
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out += [Path(folder) / n for n in sorted(names) if not n.startswith(".") and not n.endswith(DOC_SUFFIX)]
    return out


@dataclass(frozen=True)
class Sniffed:
    """The start of a file, enough to tell its layout (`_sniff`)."""

    head: bytes  # the first bytes (decompressed for .gz), stripped and lower-cased; b"" when unreadable
    problem: bool  # not a regular file, not valid gzip, or unreadable: the reader names why


def _sniff(path: Path) -> Sniffed:
    """The first bytes of a file, opened by the same rule as every input (files.open_regular)."""
    try:
        handle = files.open_regular(path)
        if handle is None:
            return Sniffed(b"", True)
        with handle:
            if path.name.endswith(".gz"):
                with gzip.GzipFile(fileobj=handle, mode="rb") as stream:
                    head = stream.read(SNIFF_BYTES)
            else:
                head = handle.read(SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):
        return Sniffed(b"", True)
    return Sniffed(head.removeprefix(b"\xef\xbb\xbf").lstrip().lower(), False)


def _collection_files(tree: list[Path], head: bytes) -> list[Path]:
    """The files of a TREC folder starting with `head`, and those that cannot be read at all (so
    the reader names them instead of skipping them)."""
    out = []
    for path in tree:
        sniffed = _sniff(path)
        if sniffed.problem or sniffed.head.startswith(head):
            out.append(path)
    return out


# --- reading -------------------------------------------------------------------------------------


def read_any(corpus_dir: str | os.PathLike[str], goldens_dir: str | os.PathLike[str] | None,
             topic_field: str = "title") -> Loaded:
    """Documents and goldens (none when `goldens_dir` is None), whatever their layouts."""
    c_layout = corpus_layout(corpus_dir)
    g_layout = goldens_layout(goldens_dir) if goldens_dir is not None else RAGQUAL
    if c_layout == RAGQUAL and (goldens_dir is None or g_layout == RAGQUAL):
        if goldens_dir is None:
            return Loaded(files.read_corpus_dir(corpus_dir), [], c_layout, g_layout)
        documents, goldens = files.read_corpus_and_goldens(corpus_dir, goldens_dir)
        return Loaded(documents, goldens, c_layout, g_layout)
    issues: list[Issue] = []
    documents, known = _documents(corpus_dir, c_layout, issues)
    goldens = []
    if goldens_dir is not None:
        goldens = _goldens(goldens_dir, g_layout, known, issues, topic_field)
    if issues:
        raise ValidationFailed(list(dict.fromkeys(issues)))  # a file in both folders is named once
    return Loaded(documents, goldens, c_layout, g_layout)


def _documents(corpus_dir: str | os.PathLike[str], layout: str, issues: list[Issue]) -> tuple[list[Document], set[str]]:
    if layout == RAGQUAL:
        try:
            documents = files.read_corpus_dir(corpus_dir)
        except ValidationFailed as failed:
            issues += failed.issues
            root = Path(corpus_dir)
            return [], {n.removesuffix(DOC_SUFFIX) for n in os.listdir(root) if n.endswith(DOC_SUFFIX)}
        return documents, {d.doc_id for d in documents}
    from ragqual.core import collections as col  # here: a ragqual corpus (every bundled run) parses no collection

    root = _existing(corpus_dir, "corpus")
    parsed = col.Parsed()
    if layout == BEIR:
        for name, container, data in _read(corpus_dir, root, [root / BEIR_CORPUS], issues):
            parsed.extend(col.parse_beir_corpus(name, data, container))
    else:
        for name, container, data in _read(corpus_dir, root, _collection_files(_tree(root), b"<doc>"), issues):
            parsed.extend(col.parse_trec_documents(name, data, container))
    issues += parsed.issues
    known = {doc.doc_id for doc, _, _ in parsed.documents}
    return col.unique_documents(parsed.documents, issues), known


def _goldens(goldens_dir: str | os.PathLike[str], layout: str, known: set[str], issues: list[Issue],
             topic_field: str) -> list[Golden]:
    if layout == RAGQUAL:
        try:
            return files.read_goldens_dir(goldens_dir, known)
        except ValidationFailed as failed:
            issues += failed.issues
            return []
    from ragqual.core import collections as col  # here, as in `_documents`

    root = _existing(goldens_dir, "goldens")
    parsed = col.Parsed()
    if layout == BEIR:
        for name, _, data in _read(goldens_dir, root, [root / BEIR_QUERIES], issues):
            parsed.extend(col.parse_beir_queries(name, data))
        splits = sorted(p for p in (root / BEIR_QRELS).iterdir() if p.name.endswith(".tsv") and not p.name.startswith("."))
        if not splits:
            issues.append(Issue(files.display_path(root / BEIR_QRELS), None, "no <split>.tsv qrels files"))
        for name, container, data in _read(goldens_dir, root, splits, issues):
            parsed.extend(col.parse_beir_qrels(name, data, Path(container).name.removesuffix(".tsv")))
    else:
        tree = _tree(root)
        qrels = [p for p in tree if p.name.lower().startswith(QRELS_PREFIX) or p.parent.name.lower() == QRELS_PREFIX]
        topics = [p for p in _collection_files(tree, b"<top>") if p not in qrels]
        if not qrels:
            issues.append(Issue(files.display_path(goldens_dir), None, "no qrels file (a file named qrels*)"))
        for name, _, data in _read(goldens_dir, root, topics, issues):
            parsed.extend(col.parse_trec_topics(name, data, topic_field))
        for name, _, data in _read(goldens_dir, root, qrels, issues):
            parsed.extend(col.parse_trec_qrels(name, data))
    issues += parsed.issues
    goldens = col.build_goldens(parsed.queries, parsed.judgements, known, issues)
    if not goldens and not parsed.issues:
        issues.append(Issue(files.display_path(goldens_dir), None, "no query has a relevant document in the qrels"))
    return goldens


def _existing(path: str | os.PathLike[str], what: str) -> Path:
    candidate = Path(path)
    if not candidate.is_dir():
        state = "is not a directory" if candidate.exists() else "does not exist"
        raise InputError(f"{what} directory {files.display_path(path)} {state} (set it with --{what} DIR)")
    return candidate.resolve()


def _read(given: str | os.PathLike[str], root: Path, paths: list[Path],
          issues: list[Issue]) -> list[tuple[str, str, bytes]]:
    """(display name, path relative to the folder, bytes) of each readable file; gzip decompressed
    as it is read, never past the limit."""
    out = []
    for path in paths:
        relative = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        name = files.display_path(Path(given) / relative)
        data, problem = files._read_guarded(root, path, MAX_COLLECTION_FILE_BYTES, LIMIT_NAME,
                                            gunzip=path.name.endswith(".gz"))
        if problem is not None or data is None:
            issues.append(Issue(name, None, problem or "unreadable"))
            continue
        out.append((name, relative, data))
    return out
