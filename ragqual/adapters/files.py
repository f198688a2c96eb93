"""Read the corpus and golden folders from disk, guarding the edge before the pure parsers.

Only files directly inside the folder are read, sorted by name: `*.md` documents
(capitalised notes such as SOURCES.md skipped) and `*.jsonl` goldens; hidden files
(editor locks and backups) are skipped. A file is refused, with the rest still checked, when its resolved
path leaves the folder (a symlink to elsewhere), when it is not a regular file, or
when it is over the size limit; an oversized file is never read past the limit.
Everything found goes into one ValidationFailed together with the parsers' findings.
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import BinaryIO, TypeVar

from ragqual.core.corpus import DOC_SUFFIX, Document, doc_id_for, is_corpus_note, parse_corpus
from ragqual.core.glossary import Glossary, parse_glossary
from ragqual.core.goldens import Golden, parse_goldens
from ragqual.errors import InputError, Issue, ValidationFailed

MAX_DOCUMENT_BYTES = 1_000_000  # 1 MB per corpus document
MAX_GOLDENS_FILE_BYTES = 10_000_000  # 10 MB per golden file
MAX_GLOSSARY_BYTES = 1_000_000  # 1 MB for the acronym glossary
GOLDENS_SUFFIX = ".jsonl"

T = TypeVar("T")


def read_corpus_dir(path: str | os.PathLike[str]) -> list[Document]:
    """Every `*.md` document directly in `path` (README.md / SOURCES.md style notes skipped), sorted by id."""
    root = _existing_dir(path, "corpus")
    names = [n for n in _names(root, DOC_SUFFIX) if not is_corpus_note(n)]
    files, issues = _read_all(path, root, names, MAX_DOCUMENT_BYTES, "1 MB per document (MAX_DOCUMENT_BYTES)")
    return _parse_or_raise(files, issues, lambda f: parse_corpus(f, source_dir=display_path(path)))


def read_goldens_dir(path: str | os.PathLike[str], known_doc_ids: Collection[str]) -> list[Golden]:
    """Every `*.jsonl` golden file directly in `path`, or the one `.jsonl` file `path` names,
    validated against the corpus's document ids (problems named by file and line either way)."""
    folder, root, names = _goldens_files(path)
    limit_name = "10 MB per golden file (MAX_GOLDENS_FILE_BYTES)"
    files, issues = _read_all(folder, root, names, MAX_GOLDENS_FILE_BYTES, limit_name)
    return _parse_or_raise(files, issues, lambda f: parse_goldens(f, known_doc_ids, source_dir=display_path(path)))


def is_goldens_file(path: str | os.PathLike[str]) -> bool:
    """`path` names one golden file (`--goldens questions.jsonl`) rather than a folder of them."""
    return Path(path).name.endswith(GOLDENS_SUFFIX) and not Path(path).is_dir()


def _goldens_files(path: str | os.PathLike[str]) -> tuple[Path, Path, list[str]]:
    """(the folder as given, the folder resolved, the golden file names to read in it)."""
    if not is_goldens_file(path):
        return Path(path), _existing_dir(path, "goldens"), _names(_existing_dir(path, "goldens"), GOLDENS_SUFFIX)
    given = Path(path)
    if not os.path.lexists(given):
        raise InputError(f"golden file {display_path(path)} does not exist (set it with --goldens FILE.jsonl or DIR)")
    folder = given.parent
    return folder, folder.resolve(), [given.name]


def read_glossary(path: str | os.PathLike[str]) -> Glossary:
    """The acronym glossary file named by `glossary` in [tool.ragqual], validated line by line."""
    candidate = Path(path)
    name = display_path(path)
    if not candidate.is_file():
        state = "is not a file" if candidate.exists() else "does not exist"
        raise InputError(f"glossary {name} {state} (set `glossary` in [tool.ragqual] to the file, or remove the key)")
    data, problem = _read_guarded(candidate.resolve().parent, candidate, MAX_GLOSSARY_BYTES,
                                  "1 MB (MAX_GLOSSARY_BYTES)")
    if problem is not None or data is None:
        raise ValidationFailed([Issue(name, None, problem or "could not be read")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationFailed([Issue(name, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})")]) from None
    return parse_glossary(text, name)


def read_corpus_and_goldens(
    corpus_dir: str | os.PathLike[str], goldens_dir: str | os.PathLike[str],
) -> tuple[list[Document], list[Golden]]:
    """Both folders checked in one pass: the problems of both go into one ValidationFailed.

    When the corpus itself is broken the goldens are still checked, against the ids its
    file names stand for, so a refused document does not also show up as an unknown id.
    """
    issues: list[Issue] = []
    try:
        documents = read_corpus_dir(corpus_dir)
        known = {d.doc_id for d in documents}
    except ValidationFailed as failed:
        documents, issues = [], failed.issues
        known = {n.removesuffix(DOC_SUFFIX) for n in _names(_existing_dir(corpus_dir, "corpus"), DOC_SUFFIX)}
    try:
        goldens = read_goldens_dir(goldens_dir, known)
    except ValidationFailed as failed:
        raise ValidationFailed(issues + failed.issues) from None
    if issues:
        raise ValidationFailed(issues)
    return documents, goldens


def resolve_source_in_corpus(source: str, corpus_dir: str | os.PathLike[str]) -> str | None:
    """The doc id a stored chunk `source` stands for, or None when it is not a corpus document.

    Decided on resolved paths, not names: the source must resolve to an existing regular
    `.md` file directly inside the resolved corpus folder, so a `faq.md` elsewhere (or a
    link out of the corpus) does not pass for the document "faq".
    """
    if not source:
        return None
    shared = _shared_file_document(source, corpus_dir)
    if shared is not None:
        return shared
    try:
        root = Path(corpus_dir).resolve(strict=True)
        target = Path(source).resolve(strict=True)
        regular = stat.S_ISREG(target.stat().st_mode)
    except (OSError, ValueError, RuntimeError):  # missing, NUL byte, symlink loop
        return None
    if target.parent != root or not regular or is_corpus_note(target.name):
        return None
    return doc_id_for(target.name)


def shared_file_source(path: str | os.PathLike[str], doc_id: str) -> str:
    """The `source` of a document that shares its file with others (a BEIR or TREC collection)."""
    return f"{path}#{doc_id}"


def _shared_file_document(source: str, corpus_dir: str | os.PathLike[str]) -> str | None:
    """The doc id of a `<file>#<doc id>` source whose file is a collection file inside the corpus
    folder (at any depth, never a `.md` document); None for any other source."""
    path, sep, doc_id = source.rpartition("#")
    if not sep or not doc_id or "/" in doc_id or path.endswith(DOC_SUFFIX):
        return None
    return doc_id if _collection_file_inside(path, os.fspath(corpus_dir)) else None


_INSIDE: dict[tuple[str, str], tuple[tuple[int, int, int], tuple[int, int, int], bool]] = {}


def _collection_file_inside(path: str, corpus_dir: str) -> bool:
    """True when `path` resolves to a regular file inside the resolved `corpus_dir`.

    Thousands of retrieved chunks share one collection file, so the verdict is kept per
    (path, folder) and reused while both still stat the same (device, inode, mtime): resolving
    every path again cost seconds on the Vaswani tier.
    """
    try:
        now = (_identity(path), _identity(corpus_dir))
    except (OSError, ValueError):
        return False
    known = _INSIDE.get((path, corpus_dir))
    if known is not None and known[:2] == now:
        return known[2]
    try:
        root = Path(corpus_dir).resolve(strict=True)
        target = Path(path).resolve(strict=True)
        inside = stat.S_ISREG(target.stat().st_mode) and target.is_relative_to(root) and target != root
    except (OSError, ValueError, RuntimeError):
        return False
    if len(_INSIDE) > 10_000:
        _INSIDE.clear()
    _INSIDE[(path, corpus_dir)] = (*now, inside)
    return inside


def _identity(path: str) -> tuple[int, int, int]:
    info = os.stat(path)
    return info.st_dev, info.st_ino, info.st_mtime_ns


def display_path(path: str | os.PathLike[str]) -> str:
    """`path` relative to the working directory when it lies under it, with '/' separators."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


def _existing_dir(path: str | os.PathLike[str], what: str) -> Path:
    candidate = Path(path)
    if not candidate.is_dir():
        state = "is not a directory" if candidate.exists() else "does not exist"
        raise InputError(f"{what} directory {display_path(path)} {state} (set it with --{what} DIR)")
    return candidate.resolve()


def _names(root: Path, suffix: str) -> list[str]:
    """Names ending in `suffix` directly in `root`, sorted; hidden files (editor locks, backups) skipped."""
    return sorted(n for n in os.listdir(root) if n.endswith(suffix) and not n.startswith("."))


def _read_all(
    given: str | os.PathLike[str], root: Path, names: list[str], limit: int, limit_name: str,
) -> tuple[list[tuple[str, bytes]], list[Issue]]:
    """Bytes of every acceptable file, named as the user wrote the folder, and an Issue per refused one."""
    files: list[tuple[str, bytes]] = []
    issues: list[Issue] = []
    for entry_name in names:
        name = display_path(Path(given) / entry_name)
        data, problem = _read_guarded(root, root / entry_name, limit, limit_name)
        if problem is not None:
            issues.append(Issue(name, None, problem))
        elif data is not None:
            files.append((name, data))
    return files, issues


NOT_REGULAR = "not a regular file"
READ_CHUNK = 8 * 2**20  # bytes of decompressed output read at a time: a bomb is stopped at the limit


def open_regular(path: str | os.PathLike[str]) -> BinaryIO | None:
    """`path` opened for reading when it is a regular file; None for a FIFO, socket, device or folder.

    The one rule for every file ragqual reads as input (documents, goldens, collection files, and
    the sniffing that detects a layout): opened non-blocking, so a FIFO with no writer cannot
    hang the open, and checked on the open descriptor, so a file swapped after a stat is seen.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _read_guarded(root: Path, entry: Path, limit: int, limit_name: str, *,
                  gunzip: bool = False) -> tuple[bytes | None, str | None]:
    """The file's bytes (decompressed with `gunzip`), or why it is refused; checks run on the
    resolved path, and no more than `limit` bytes (+1) are ever read or inflated."""
    try:
        target = entry.resolve(strict=True)
    except (OSError, RuntimeError):
        return None, "broken link: its target does not exist"
    if not target.is_relative_to(root):
        return None, f"resolves to {target}, outside {display_path(root)}; links out of the folder are refused"
    try:
        info = target.stat()
        if not stat.S_ISREG(info.st_mode):  # a socket cannot even be opened: said the same way
            return None, NOT_REGULAR
        if not gunzip and info.st_size > limit:
            return None, f"{info.st_size:,} bytes is over the limit of {limit_name}"
        handle = open_regular(target)
        if handle is None:
            return None, NOT_REGULAR
        with handle:
            data = _read_gzip(handle, limit) if gunzip else _read_plain(handle, info.st_size, limit)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        return None, f"not a valid gzip file ({exc})"
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    if data is None or len(data) > limit:
        return None, f"over the limit of {limit_name}" + (" once decompressed" if gunzip else "")
    return data, None


def _read_plain(handle: BinaryIO, size: int, limit: int) -> bytes:
    """Its bytes, up to limit + 1 (the file may have grown since its size was read)."""
    data = handle.read(min(size, limit) + 1)
    if len(data) > size:
        data += handle.read(limit + 1 - len(data))
    return data


def _read_gzip(handle: BinaryIO, limit: int) -> bytes | None:
    """The inflated bytes, read chunk by chunk; None as soon as they pass `limit`: a gzip bomb
    costs the limit in memory and time, never what it would inflate to."""
    chunks: list[bytes] = []
    total = 0
    with gzip.GzipFile(fileobj=handle, mode="rb") as stream:
        while chunk := stream.read(min(READ_CHUNK, limit + 1 - total)):
            total += len(chunk)
            if total > limit:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


def _parse_or_raise(
    files: list[tuple[str, bytes]], issues: list[Issue], parse: Callable[[list[tuple[str, bytes]]], T],
) -> T:
    """Run the pure parser on the readable files and raise its findings together with the edge's."""
    if issues and not files:
        raise ValidationFailed(issues)
    try:
        result = parse(files)
    except ValidationFailed as failed:
        raise ValidationFailed(sorted(issues + failed.issues, key=lambda i: (i.file, i.line or 0))) from None
    if issues:
        raise ValidationFailed(issues)
    return result
