"""Standard IR test collections (BEIR and TREC layouts): parse and validate bytes, every problem in one pass.

Such a collection has documents, queries and relevance judgements (qrels) and nothing else:
its questions become Goldens with relevant documents and grades but no answer expectations,
so they serve the retrieval tier only. This module never opens a file (the adapter
`ragqual.adapters.collection_files` finds the files, decompresses gzip and hands bytes here).

BEIR:  corpus.jsonl   {"_id": "d1", "title": "...", "text": "..."}   (other keys ignored)
       queries.jsonl  {"_id": "q1", "text": "..."}
       qrels/<split>.tsv   header `query-id<TAB>corpus-id<TAB>score`, one graded judgement per row
TREC:  documents      <DOC><DOCNO> d1 </DOCNO> text </DOC>  (many per file; other tags stripped)
       topics         <top><num> 1 </num><title> text </title> [<desc>..] [<narr>..] </top>
       qrels          `qid 0 docno rel`

Relevance is a label of 1 or more; judgements of 0 (or less) are kept out of the goldens, and a
query with no relevant document is not a golden (trec_eval scores such a query 0 only when it is
in the qrels; ragqual exports only the goldens' qrels, so both tools see the same queries).
Document ids are taken verbatim; they may not contain white space (TREC files split on it), '#' or '/'.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from dataclasses import dataclass, field

from ragqual.core import jsonline
from ragqual.core.corpus import Document
from ragqual.core.corpus import decode_utf8 as decode
from ragqual.core.goldens import Golden
from ragqual.core.hashing import sha256_hex
from ragqual.core.layouts import TOPIC_FIELDS
from ragqual.errors import Issue

BEIR_QRELS_HEADER = ("query-id", "corpus-id", "score")
_ID = re.compile(r"\S+")
_DOC = re.compile(rb"<DOC>(.*?)</DOC>", re.S | re.I)
_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.S | re.I)
_DOC_OPEN = re.compile(r"<DOC>", re.I)
_DOC_CLOSE = re.compile(r"</DOC>", re.I)
_TAG = re.compile(r"<[^>]*>")
_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_FIELD_PREFIX = {"num": "Number:", "title": "Topic:", "desc": "Description:", "narr": "Narrative:"}


@dataclass(frozen=True)
class Judgement:
    """One qrels line: a document's relevance to a query, with the file and line it came from."""

    query_id: str
    doc_id: str
    relevance: int
    file: str
    line: int
    split: str | None = None


@dataclass(frozen=True)
class Query:
    """One query or topic as read, with the file and line it came from."""

    query_id: str
    text: str
    file: str
    line: int


@dataclass
class Parsed:
    """What a pass over some files produced, with the problems found on the way."""

    documents: list[tuple[Document, str, int]] = field(default_factory=list)  # with its file and line
    queries: list[Query] = field(default_factory=list)
    judgements: list[Judgement] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)

    def extend(self, other: Parsed) -> Parsed:
        self.documents += other.documents
        self.queries += other.queries
        self.judgements += other.judgements
        self.issues += other.issues
        return self


# --- decoding -----------------------------------------------------------------------------


def _check_id(value: str, what: str, name: str, line: int) -> Issue | None:
    if not value:
        return Issue(name, line, f"empty {what}")
    if _ID.fullmatch(value) is None:
        return Issue(name, line, f"{what} {value!r} contains white space")
    if "#" in value or "/" in value:
        return Issue(name, line, f"{what} {value!r} contains '#' or '/', which ragqual uses to join a file and a document id")
    return None


def document(doc_id: str, text: str, container: str) -> Document:
    """A collection document: its bytes hash is the UTF-8 of its text; `container` its file."""
    return Document(doc_id=doc_id, filename=container.rsplit("/", 1)[-1], text=text,
                    sha256=sha256_hex(text.encode("utf-8")), container=container)


# --- BEIR ----------------------------------------------------------------------------------------


def _json_lines(name: str, text: str) -> Iterator[tuple[int, dict[str, Any] | None, Issue | None]]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        value, problem = jsonline.load(line)
        if problem is not None:
            yield number, None, Issue(name, number, problem)
            continue
        if not isinstance(value, dict):
            yield number, None, Issue(name, number, "each line must be a JSON object")
            continue
        yield number, value, None


def _string_field(value: dict[str, Any], key: str, name: str, line: int, *, required: bool = True) -> tuple[str, Issue | None]:
    raw = value.get(key)
    if raw is None and not required:
        return "", None
    if not isinstance(raw, str):
        state = "missing" if key not in value else f"must be a string, got {type(raw).__name__}"
        return "", Issue(name, line, f"field {key!r} {state}")
    return raw, None


def _text(name: str, data: bytes, out: Parsed) -> str | None:
    """The file's text, or None with the reason added to `out` (bad UTF-8, unreadable)."""
    text, problem = decode(name, data)
    if problem is not None or text is None:
        out.issues.append(problem or Issue(name, None, "unreadable"))
        return None
    return text


def _objects(name: str, data: bytes, out: Parsed) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSON-lines file with their line numbers; every problem goes to `out`."""
    text = _text(name, data, out)
    if text is None:
        return
    for line, value, issue in _json_lines(name, text):
        if issue is not None or value is None:
            out.issues.append(issue or Issue(name, line, "unreadable line"))
            continue
        yield line, value


def parse_beir_corpus(name: str, data: bytes, container: str) -> Parsed:
    """corpus.jsonl: one document per line; the title (if any) leads the text."""
    out = Parsed()
    for line, value in _objects(name, data, out):
        doc_id, id_issue = _string_field(value, "_id", name, line)
        body, body_issue = _string_field(value, "text", name, line)
        title, title_issue = _string_field(value, "title", name, line, required=False)
        problems = [p for p in (id_issue, body_issue, title_issue) if p] or [p for p in [_check_id(doc_id, "document id", name, line)] if p]
        full = "\n\n".join(part.strip() for part in (title, body) if part.strip())
        if not problems and not full:
            problems.append(Issue(name, line, f"document {doc_id!r} has an empty title and text"))
        out.issues += problems
        if not problems:
            out.documents.append((document(doc_id, full, container), name, line))
    if not out.documents and not out.issues:
        out.issues.append(Issue(name, None, "no documents in the file"))
    return out


def parse_beir_queries(name: str, data: bytes) -> Parsed:
    out = Parsed()
    for line, value in _objects(name, data, out):
        query_id, id_issue = _string_field(value, "_id", name, line)
        body, body_issue = _string_field(value, "text", name, line)
        problems = [p for p in (id_issue, body_issue) if p] or [p for p in [_check_id(query_id, "query id", name, line)] if p]
        if not problems and not body.strip():
            problems.append(Issue(name, line, f"query {query_id!r} has an empty text"))
        out.issues += problems
        if not problems:
            out.queries.append(Query(query_id, body.strip(), name, line))
    return out


def parse_beir_qrels(name: str, data: bytes, split: str) -> Parsed:
    """qrels/<split>.tsv with its header line; scores are integers."""
    out = Parsed()
    text = _text(name, data, out)
    if text is None:
        return out
    lines = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if not lines or tuple(lines[0][1].strip().split("\t")) != BEIR_QRELS_HEADER:
        where = lines[0][0] if lines else None
        out.issues.append(Issue(name, where, "the first line must be the header 'query-id<TAB>corpus-id<TAB>score'"))
        return out
    for number, line in lines[1:]:
        fields = line.strip().split("\t")
        if len(fields) != 3:
            out.issues.append(Issue(name, number, f"expected 3 tab-separated fields (query-id, corpus-id, score), got {len(fields)}"))
            continue
        _judgement(out, name, number, fields[0], fields[1], fields[2], split)
    return out


def _judgement(out: Parsed, name: str, number: int, query_id: str, doc_id: str, score: str, split: str | None) -> None:
    try:
        relevance = int(score)
    except ValueError:
        out.issues.append(Issue(name, number, f"relevance {score!r} is not an integer"))
        return
    out.judgements.append(Judgement(query_id, doc_id, relevance, name, number, split))


# --- TREC -----------------------------------------------------------------------------------------


def parse_trec_documents(name: str, data: bytes, container: str) -> Parsed:
    """Every <DOC> element of one file: its DOCNO and the rest of its text with tags removed."""
    out = Parsed()
    text = _text(name, data, out)
    if text is None:
        return out
    position, line = 0, 1
    for start, body_end, end in _doc_elements(text):
        _stray(out, name, text, position, start, line)
        line += text.count("\n", position, start)
        position = end
        if body_end == end:
            out.issues.append(Issue(name, line, "<DOC> is not closed by </DOC>"))
        else:
            _trec_document(out, name, line, text[start + len("<DOC>"):body_end], container)
        line += text.count("\n", start, end)
    _stray(out, name, text, position, len(text), line)
    if not out.documents and not out.issues:
        out.issues.append(Issue(name, None, "no <DOC> elements in the file"))
    return out


def _doc_elements(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, end of body, end) of each <DOC> element: its body runs to the first </DOC>, or, when
    the element is not closed, to the next <DOC> or the end of the text (body end == end then).
    Two literal searches instead of one lazy pattern with a look-ahead at every character."""
    opens = [m.start() for m in _DOC_OPEN.finditer(text)]
    for i, start in enumerate(opens):
        limit = opens[i + 1] if i + 1 < len(opens) else len(text)
        close = _DOC_CLOSE.search(text, start + len("<DOC>"), limit)
        if close is None:
            yield start, limit, limit
        else:
            yield start, close.start(), close.end()


def _stray(out: Parsed, name: str, text: str, start: int, end: int, line: int) -> None:
    """Text between elements; `line` is the line number at `start`."""
    stray = text[start:end]
    if stray.strip():
        offset = len(stray) - len(stray.lstrip())
        out.issues.append(Issue(name, line + stray.count("\n", 0, offset), "text outside any <DOC>...</DOC> element"))


def _trec_document(out: Parsed, name: str, line: int, body: str, container: str) -> None:
    numbers = _DOCNO.findall(body)
    if len(numbers) != 1:
        out.issues.append(Issue(name, line, f"a <DOC> needs exactly one <DOCNO>, found {len(numbers)}"))
        return
    doc_id = numbers[0].strip()
    issue = _check_id(doc_id, "DOCNO", name, line)
    if issue is not None:
        out.issues.append(issue)
        return
    content = _TAG.sub(" ", _DOCNO.sub(" ", body, count=1))
    content = "\n".join(" ".join(row.split()) for row in content.strip().split("\n")).strip()
    if not content:
        out.issues.append(Issue(name, line, f"document {doc_id!r} has no text"))
        return
    out.documents.append((document(doc_id, content, container), name, line))


def parse_trec_topics(name: str, data: bytes, topic_field: str = "title") -> Parsed:
    """Every <top> of one file as a query, its text taken from `topic_field` (title by default)."""
    out = Parsed()
    if topic_field not in TOPIC_FIELDS:
        out.issues.append(Issue(name, None, f"unknown topic field {topic_field!r}: use one of {', '.join(TOPIC_FIELDS)}"))
        return out
    text = _text(name, data, out)
    if text is None:
        return out
    position, line = 0, 1
    for match in _TOP.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        fields = _topic_fields(match.group(1))
        query_id = fields.get("num", "")
        issue = _check_id(query_id, "topic number (<num>)", name, line)
        if issue is not None:
            out.issues.append(issue)
            continue
        body = fields.get(topic_field, "")
        if not body:
            out.issues.append(Issue(name, line, f"topic {query_id!r} has no <{topic_field}> text"))
            continue
        out.queries.append(Query(query_id, body, name, line))
    if not out.queries and not out.issues:
        out.issues.append(Issue(name, None, "no <top> elements in the file"))
    return out


def _topic_fields(body: str) -> dict[str, str]:
    """num/title/desc/narr of one topic; closing tags are optional, as in the TREC originals."""
    out: dict[str, str] = {}
    for match in re.finditer(r"<(num|title|desc|narr)>(.*?)(?=<|\Z)", body, re.S | re.I):
        key = match.group(1).lower()
        value = " ".join(match.group(2).split())
        out[key] = value.removeprefix(_FIELD_PREFIX[key]).strip()
    return out


def parse_trec_qrels(name: str, data: bytes) -> Parsed:
    """`qid iteration docno relevance`, one judgement per line."""
    out = Parsed()
    text = _text(name, data, out)
    if text is None:
        return out
    for number, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            out.issues.append(Issue(name, number, f"expected 4 fields (qid iteration docno relevance), got {len(fields)}"))
            continue
        _judgement(out, name, number, fields[0], fields[2], fields[3], None)
    if not out.judgements and not out.issues:
        out.issues.append(Issue(name, None, "no judgements in the file"))
    return out


# --- one collection -------------------------------------------------------------------------------


def unique_documents(located: Sequence[tuple[Document, str, int]], issues: list[Issue]) -> list[Document]:
    """The documents, each id once; every repeat of an id is an Issue at its file and line."""
    seen: dict[str, tuple[str, int]] = {}
    out = []
    for doc, file, line in located:
        if doc.doc_id in seen:
            first_file, first_line = seen[doc.doc_id]
            issues.append(Issue(file, line, f"document id {doc.doc_id!r} is also used at {first_file}:{first_line}"))
            continue
        seen[doc.doc_id] = (file, line)
        out.append(doc)
    return out


def build_goldens(queries: Sequence[Query], judgements: Sequence[Judgement], known_docs: set[str],
                  issues: list[Issue]) -> list[Golden]:
    """One golden per (query, split) with at least one relevant document; problems go into `issues`."""
    texts: dict[str, Query] = {}
    for query in queries:
        if query.query_id in texts:
            issues.append(Issue(query.file, query.line, f"query id {query.query_id!r} is also at line {texts[query.query_id].line}"))
        else:
            texts[query.query_id] = query
    grades: dict[tuple[str | None, str], dict[str, int]] = {}
    seen: dict[tuple[str | None, str, str], int] = {}
    for j in judgements:
        bad = _judgement_issue(j, texts, known_docs, seen)
        if bad is not None:
            issues.append(bad)
            continue
        seen[(j.split, j.query_id, j.doc_id)] = j.line
        if j.relevance >= 1:
            grades.setdefault((j.split, j.query_id), {})[j.doc_id] = j.relevance
    return _goldens(grades, texts)


def _judgement_issue(j: Judgement, texts: Mapping[str, Query], known_docs: set[str],
                     seen: Mapping[tuple[str | None, str, str], int]) -> Issue | None:
    if j.query_id not in texts:
        return Issue(j.file, j.line, f"qrels name query {j.query_id!r}, which is not among the queries")
    if j.doc_id not in known_docs:
        return Issue(j.file, j.line, f"qrels name document {j.doc_id!r}, which is not in the corpus")
    if (j.split, j.query_id, j.doc_id) in seen:
        return Issue(j.file, j.line, f"query {j.query_id!r} and document {j.doc_id!r} are judged twice "
                                     f"(also line {seen[(j.split, j.query_id, j.doc_id)]})")
    return None


def _goldens(grades: Mapping[tuple[str | None, str], dict[str, int]], texts: Mapping[str, Query]) -> list[Golden]:
    splits_of: dict[str, int] = {}
    for _, query_id in grades:
        splits_of[query_id] = splits_of.get(query_id, 0) + 1
    out = []
    for (split, query_id), relevant in sorted(grades.items(), key=lambda kv: (kv[0][0] or "", _natural(kv[0][1]))):
        query = texts[query_id]
        golden_id = query_id if splits_of[query_id] == 1 else f"{query_id}@{split}"
        out.append(Golden(
            id=golden_id, query=query.text, turns=(), relevant_doc_ids=tuple(sorted(relevant)),
            must_include=(), must_not_include=(), expect_refusal=False,
            tags=(split,) if split else (), split=split, grades=dict(relevant), source=f"{query.file}:{query.line}",
        ))
    return out


def _natural(identifier: str) -> tuple[int, int, str]:
    """Numeric ids in numeric order (TREC topics 1, 2, ... 10), others after them by text."""
    return (0, int(identifier), "") if identifier.isdigit() else (1, 0, identifier)


def has_expectations(goldens: Sequence[Golden]) -> bool:
    """True when the goldens can drive the generation tier (some answer expectation or refusal)."""
    return any(g.must_include or g.must_not_include or g.expect_refusal for g in goldens)
