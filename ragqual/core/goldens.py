"""Golden questions: parse and validate JSONL bytes strictly, in one pass.

A golden that names a missing document, or expects a refusal while listing relevant
documents, would otherwise go unnoticed and lower every score from then on, so
every line is checked at load and every problem found is reported together as
one `ValidationFailed`. This module never opens a file: the adapter hands it bytes.

One golden per line:

    {"id": "water-boil-altitude-01", "query": "...", "turns": [{"role": "user", "content": "..."}],
     "relevantDocIds": ["water-boiling"], "mustInclude": ["\\\\b(3|three) minutes?"],
     "mustNotInclude": ["distill"], "expectRefusal": false, "tags": ["single-hop"],
     "split": "validation", "relevanceGrades": {"water-boiling": 2}}

`split`, `relevanceGrades` and `critical` are optional; `"critical": true` marks a question whose
regression fails the gate by itself (`ragqual.core.critical`); any other key is an error (usually a typo).
`mustInclude` / `mustNotInclude` are case-insensitive patterns of the `regex` package,
compiled here at load by `ragqual.core.textmatch.compile_pattern`, the same function
(and cache) the answer checks match with later; a pattern an earlier run checked under the same
rules and `regex` version (ragqual.adapters.pattern_memo) is taken as checked and compiled
when first searched with.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragqual.core import jsonline
from ragqual.core.hashing import hash_value
from ragqual.core.textmatch import InvalidPattern, compile_pattern, compiled, is_vouched
from ragqual.errors import InputError, Issue, ValidationFailed

if TYPE_CHECKING:
    import regex  # only for annotations: patterns are compiled by core.textmatch, when needed

ROLES = ("user", "assistant")
SPLITS = ("validation", "test")
MIN_GRADE, MAX_GRADE = 1, 3
DEFAULT_GRADE = 1
PATTERN_CHECKS = 1  # the rules of `_pattern_problem`: bump when they change, so no remembered pattern is taken as checked

REQUIRED_FIELDS = (
    "id", "query", "turns", "relevantDocIds", "mustInclude", "mustNotInclude", "expectRefusal", "tags",
)
OPTIONAL_FIELDS = ("split", "relevanceGrades", "critical")
ALL_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS

_BOM = b"\xef\xbb\xbf"

# `ragqual import-traces` writes goldens drafted from production traces with `"draft": true`: the
# retrieved documents are only candidates and no answer check exists yet, so a draft is refused until
# a person has reviewed it and removed the flag.
DRAFT_REFUSED = ('is a draft ("draft": true, from `ragqual import-traces`): review its query and '
                 'relevantDocIds, add mustInclude patterns, then delete the "draft" key')


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a golden's conversation."""

    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Golden:
    """One validated question. `grades` maps every relevant document to its grade (default 1)."""

    id: str
    query: str
    turns: tuple[Turn, ...]
    relevant_doc_ids: tuple[str, ...]
    must_include: tuple[str, ...]
    must_not_include: tuple[str, ...]
    expect_refusal: bool
    tags: tuple[str, ...]
    split: str | None = None
    grades: dict[str, int] = field(default_factory=dict, hash=False)  # read-only by convention
    source: str = ""  # "goldens/water.jsonl:12"
    critical: bool = False  # any regression on it fails the gate (core.critical)

    def __post_init__(self) -> None:
        for name in ("turns", "relevant_doc_ids", "must_include", "must_not_include", "tags"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        resolved = {doc: DEFAULT_GRADE for doc in self.relevant_doc_ids}
        resolved.update(self.grades)
        object.__setattr__(self, "grades", resolved)

    @property
    def include_patterns(self) -> tuple[regex.Pattern[str], ...]:
        return tuple(compiled(p) for p in self.must_include)

    @property
    def exclude_patterns(self) -> tuple[regex.Pattern[str], ...]:
        return tuple(compiled(p) for p in self.must_not_include)

    def to_json_dict(self) -> dict[str, Any]:
        """The golden in its file form (camelCase keys), with grades resolved; `source` is not data."""
        out: dict[str, Any] = {
            "id": self.id,
            "query": self.query,
            "turns": [{"role": t.role, "content": t.content} for t in self.turns],
            "relevantDocIds": list(self.relevant_doc_ids),
            "mustInclude": list(self.must_include),
            "mustNotInclude": list(self.must_not_include),
            "expectRefusal": self.expect_refusal,
            "tags": list(self.tags),
            "relevanceGrades": dict(self.grades),
        }
        if self.split is not None:
            out["split"] = self.split
        if self.critical:  # only when set, so the hashes of unmarked goldens never change
            out["critical"] = True
        return out


# --- parsing -------------------------------------------------------------------------------


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


@dataclass
class _FileResult:
    """What one goldens file gave: its goldens, its problems, and the ids it used (for duplicates)."""

    goldens: list[Golden] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    ids: list[tuple[str, int]] = field(default_factory=list)  # (id, line) of every line with a usable id


def parse_goldens(
    files: Sequence[tuple[str, bytes]],
    known_doc_ids: Collection[str],
    *,
    source_dir: str = "goldens",
) -> list[Golden]:
    """Parse `(display name, bytes)` pairs into goldens ordered by file then line.

    Raises ValidationFailed listing every problem in every file; `source_dir` names
    the place that held no files at all.
    """
    if not files:
        raise ValidationFailed([Issue(source_dir, None, "no golden files (*.jsonl) found")])
    known = frozenset(known_doc_ids)
    goldens: list[Golden] = []
    issues: list[Issue] = []
    seen: dict[str, str] = {}
    for name, data in sorted(files, key=lambda f: f[0]):
        result = _parse_file(name, data, known)
        goldens.extend(result.goldens)
        issues.extend(result.issues)
        issues.extend(_duplicate_ids(name, result.ids, seen))
    if issues:
        raise ValidationFailed(sorted(issues, key=_issue_order))
    return goldens


def _issue_order(issue: Issue) -> tuple[str, int]:
    return issue.file, issue.line or 0


def _duplicate_ids(name: str, ids: list[tuple[str, int]], seen: dict[str, str]) -> list[Issue]:
    issues = []
    for golden_id, line in ids:
        if golden_id in seen:
            issues.append(Issue(name, line, f"duplicate id {golden_id!r} (first used at {seen[golden_id]})"))
        else:
            seen[golden_id] = f"{name}:{line}"
    return issues


def _parse_file(name: str, data: bytes, known: frozenset[str]) -> _FileResult:
    result = _FileResult()
    lines = 0
    for number, raw in _lines(data):
        if not raw.strip():
            continue
        lines += 1
        obj, problems = _load_line(raw)
        if isinstance(obj, dict) and _usable_id(obj.get("id")):
            result.ids.append((obj["id"], number))
        if obj is not None and not problems:
            problems = _validate(obj, known)
        result.issues.extend(Issue(name, number, p) for p in problems)
        if obj is not None and not problems:
            result.goldens.append(_build(obj, f"{name}:{number}"))
    if lines == 0:
        result.issues.append(Issue(name, None, "no questions: the file is empty or holds only blank lines"))
    return result


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """1-based lines split on LF only (JSONL), a leading BOM and a CR before each LF dropped."""
    data = data.removeprefix(_BOM)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        yield number, raw.removesuffix(b"\r")


def _load_line(raw: bytes) -> tuple[Any, list[str]]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"]
    try:
        obj, problem = jsonline.load(text, _DECODER)
    except _DuplicateKey as exc:
        return None, [f"key {exc.key!r} appears twice in one object"]
    if problem is not None:
        return None, [problem]
    if not isinstance(obj, dict):
        return None, [f"expected a JSON object, got {_json_type(obj)}"]
    return obj, []


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)


def _usable_id(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


# --- field checks: each returns a list of problems, empty when the value is well typed -------


def _nonblank_string(key: str, value: Any) -> list[str]:
    if isinstance(value, str) and value.strip():
        return []
    return [f"{key} must be a non-empty string, got {_describe(value)}"]


def _string_list(key: str, value: Any) -> list[str]:
    if not isinstance(value, list):
        return [f"{key} must be a list of strings, got {_json_type(value)}"]
    return [f"{key}[{i}] must be a string, got {_json_type(v)}" for i, v in enumerate(value) if not isinstance(v, str)]


def _tags(key: str, value: Any) -> list[str]:
    problems = _string_list(key, value)
    if problems:
        return problems
    if not value:
        return [f"{key} must list at least one tag"]
    return [f"{key}[{i}] must not be blank" for i, v in enumerate(value) if not v.strip()]


def _boolean(key: str, value: Any) -> list[str]:
    return [] if isinstance(value, bool) else [f"{key} must be true or false, got {_describe(value)}"]


def _turns(key: str, value: Any) -> list[str]:
    if not isinstance(value, list):
        return [f"{key} must be a list of {{role, content}} objects, got {_json_type(value)}"]
    problems: list[str] = []
    for i, turn in enumerate(value):
        problems.extend(_turn(f"{key}[{i}]", turn))
    return problems


def _turn(where: str, turn: Any) -> list[str]:
    if not isinstance(turn, dict):
        return [f"{where} must be a {{role, content}} object, got {_json_type(turn)}"]
    problems = [f"{where} has unknown field {k!r}" for k in turn if k not in ("role", "content")]
    problems += [f"{where} is missing {k!r}" for k in ("role", "content") if k not in turn]
    if "role" in turn and turn["role"] not in ROLES:
        problems.append(f"{where}.role must be 'user' or 'assistant', got {_describe(turn['role'])}")
    if "content" in turn and not isinstance(turn["content"], str):
        problems.append(f"{where}.content must be a string, got {_json_type(turn['content'])}")
    return problems


def _split(key: str, value: Any) -> list[str]:
    if value in SPLITS and isinstance(value, str):
        return []
    return [f"{key} must be 'validation' or 'test', got {_describe(value)}"]


def _grades(key: str, value: Any) -> list[str]:
    if not isinstance(value, dict):
        return [f"{key} must be an object mapping document id to grade, got {_json_type(value)}"]
    return [
        f"{key}[{doc!r}] must be an integer from {MIN_GRADE} to {MAX_GRADE}, got {_describe(grade)}"
        for doc, grade in value.items()
        if not _is_grade(grade)
    ]


def _is_grade(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and MIN_GRADE <= value <= MAX_GRADE


def _describe(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 40 else _json_type(value)


_TYPE_CHECKS: dict[str, Callable[[str, Any], list[str]]] = {
    "id": _nonblank_string,
    "query": _nonblank_string,
    "turns": _turns,
    "relevantDocIds": _string_list,
    "mustInclude": _string_list,
    "mustNotInclude": _string_list,
    "expectRefusal": _boolean,
    "tags": _tags,
    "split": _split,
    "relevanceGrades": _grades,
    "critical": _boolean,
}


def _validate(obj: dict[str, Any], known: frozenset[str]) -> list[str]:
    """Every problem with one golden object: shape first, then meaning of the well-typed fields."""
    if "draft" in obj:
        return [DRAFT_REFUSED]
    problems = [f"unknown field {k!r}{_suggest(k, ALL_FIELDS)}" for k in obj if k not in ALL_FIELDS]
    problems += [f"missing field {k!r}" for k in REQUIRED_FIELDS if k not in obj]
    typed: dict[str, Any] = {}
    for key, check in _TYPE_CHECKS.items():
        if key in obj:
            found = check(key, obj[key])
            problems += found
            if not found:
                typed[key] = obj[key]
    problems += _check_doc_ids(typed, known)
    problems += _check_patterns(typed)
    problems += _check_refusal(typed)
    problems += _check_grade_keys(typed)
    return problems


def _suggest(word: str, choices: Collection[str]) -> str:
    import difflib  # only to name a typo's likely fix

    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_doc_ids(typed: dict[str, Any], known: frozenset[str]) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for doc in typed.get("relevantDocIds", []):
        if doc in seen:
            problems.append(f"relevantDocIds lists {doc!r} twice")
        elif doc not in known:
            problems.append(f"relevantDocIds names unknown document {doc!r}{_suggest(doc, known)}")
        seen.add(doc)
    return problems


def _check_patterns(typed: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for key in ("mustInclude", "mustNotInclude"):
        for i, pattern in enumerate(typed.get(key, [])):
            problems.extend(_pattern_problem(f"{key}[{i}]", pattern))
    return problems


def _pattern_problem(where: str, pattern: str) -> list[str]:
    """What is wrong with one pattern (PATTERN_CHECKS names this check's rules; a pattern an
    earlier run found right under the same rules is vouched for: ragqual.core.textmatch.vouch)."""
    if not pattern:
        return [f"{where} is an empty pattern, which matches every answer"]
    if is_vouched(pattern):
        return []
    try:
        checked = compile_pattern(pattern)
    except InvalidPattern as exc:
        return [f"{where} {pattern!r} does not compile: {exc.reason}"]
    except RecursionError:
        return [f"{where} does not compile: groups nested too deeply"]
    if checked.search("") is not None:
        effect = "always passes" if where.startswith("mustInclude") else "always fails"
        return [f"{where} {pattern!r} matches the empty string, so it matches every answer and {effect}: "
                "require at least one character (e.g. `+` instead of `*`, no trailing `?`)"]
    return []


def _check_refusal(typed: dict[str, Any]) -> list[str]:
    refusal = typed.get("expectRefusal")
    docs = typed.get("relevantDocIds")
    if refusal is True:
        problems = []
        if docs:
            problems.append("expectRefusal is true but relevantDocIds is not empty: "
                            "a question the corpus cannot answer has no relevant documents")
        if typed.get("mustInclude"):
            problems.append("expectRefusal is true but mustInclude is not empty: a refusal has no required content")
        return problems
    if refusal is False and docs == []:
        return ["expectRefusal is false but relevantDocIds is empty: an answerable question needs a relevant document"]
    return []


def _check_grade_keys(typed: dict[str, Any]) -> list[str]:
    grades, docs = typed.get("relevanceGrades"), typed.get("relevantDocIds")
    if grades is None or docs is None:
        return []
    return [f"relevanceGrades names {doc!r}, which is not in relevantDocIds" for doc in grades if doc not in docs]


def _build(obj: dict[str, Any], source: str) -> Golden:
    return Golden(
        id=obj["id"],
        query=obj["query"],
        turns=tuple(Turn(t["role"], t["content"]) for t in obj["turns"]),
        relevant_doc_ids=tuple(obj["relevantDocIds"]),
        must_include=tuple(obj["mustInclude"]),
        must_not_include=tuple(obj["mustNotInclude"]),
        expect_refusal=obj["expectRefusal"],
        tags=tuple(obj["tags"]),
        split=obj.get("split"),
        grades=dict(obj.get("relevanceGrades", {})),
        source=source,
        critical=obj.get("critical") is True,
    )


# --- whole-set helpers ----------------------------------------------------------------------


def missing_split_warning(goldens: Collection[Golden]) -> str | None:
    """A warning when questions carry no `split`: `ragqual sweep` tunes on the validation split and
    reports the test split, so it cannot use them. None when every question has one."""
    missing = [g for g in goldens if g.split is None]
    if not missing:
        return None
    first = ", ".join(g.source for g in missing[:3]) + (", ..." if len(missing) > 3 else "")
    return (f"{len(missing)} of {len(goldens)} questions have no `split` field (\"validation\" or \"test\"), "
            f"which `ragqual sweep` needs: {first}")


def golden_patterns(goldens: Iterable[Golden]) -> set[str]:
    """Every mustInclude and mustNotInclude pattern of `goldens` (each passed the pattern check)."""
    return {p for g in goldens for p in (*g.must_include, *g.must_not_include)}


def goldens_hash(goldens: Collection[Golden]) -> str:
    """sha256 of the question set's content, independent of file layout, order and formatting."""
    return hash_value(sorted((g.to_json_dict() for g in goldens), key=lambda d: d["id"]))


def select(
    goldens: Sequence[Golden],
    *,
    tags: Collection[str] | None = None,
    ids: Collection[str] | None = None,
    split: str | None = None,
    limit: int | None = None,
) -> list[Golden]:
    """Goldens having any of `tags`, one of `ids` and the `split`, first `limit` in load order.

    A tag or id that no golden has is an InputError (almost always a typo in a flag).
    """
    _check_selectors(goldens, tags, ids, split, limit)
    chosen = [
        g for g in goldens
        if (tags is None or set(g.tags) & set(tags))
        and (ids is None or g.id in ids)
        and (split is None or g.split == split)
    ]
    return chosen if limit is None else chosen[:limit]


def _check_selectors(
    goldens: Sequence[Golden],
    tags: Collection[str] | None,
    ids: Collection[str] | None,
    split: str | None,
    limit: int | None,
) -> None:
    known_splits = sorted({g.split for g in goldens if g.split})
    if split is not None and split not in known_splits:
        shown = ", ".join(known_splits) or "none (the goldens have no `split` field)"
        raise InputError(f"no golden has split {split!r}; splits present: {shown}")
    if limit is not None and limit < 1:
        raise InputError(f"limit must be at least 1, got {limit}")
    known_tags = {t for g in goldens for t in g.tags}
    missing_tags = sorted(set(tags or ()) - known_tags)
    if missing_tags:
        raise InputError(f"no golden has tag(s) {', '.join(missing_tags)}; known tags: {', '.join(sorted(known_tags))}")
    missing_ids = sorted(set(ids or ()) - {g.id for g in goldens})
    if missing_ids:
        raise InputError(f"no golden has id(s) {', '.join(missing_ids)}")
