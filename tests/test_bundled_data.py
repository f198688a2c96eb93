"""Checks on the bundled evaluation corpus, golden questions and acronym glossary.

These read the files with plain `json` and file reads on purpose: they guard the
data itself (counts, traps, and that every answer is reachable from its
documents), independently of the loader that validates user-supplied goldens.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest
import regex

from ragqual.adapters.files import read_glossary

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
GOLDENS = ROOT / "goldens"
GLOSSARY = dict(read_glossary(ROOT / "glossary.txt").entries)  # named in pyproject.toml's [tool.ragqual]

DOC_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SHORT_MAX, LONG_MIN = 900, 4_500
FIELDS = {"id", "query", "turns", "relevantDocIds", "mustInclude", "mustNotInclude",
          "expectRefusal", "tags", "split"}
OPTIONAL = {"relevanceGrades"}
DOMAINS = {"water", "food", "first-aid", "shelter", "power", "radio", "navigation",
           "sanitation", "fire", "general"}
TAG_MINIMUMS = {"distractor": 5, "near-miss": 6, "fictional": 8, "out-of-corpus": 14,
                "adversarial": 5, "acronym": 8, "acronym-control": 8, "chunk-boundary": 5,
                "multi-hop": 8, "multi-turn": 6}
KNOWN_TAGS = set(TAG_MINIMUMS) | DOMAINS | {"single-hop", "numeric"}
POEM = "poem-rain-on-the-cistern"
NEAR_MISS_PAIR = {"canning-water-bath", "canning-pressure"}
FICTIONAL_DOCS = {"hollowmere-hx731-pump", "quillfeather-relay-protocol"}
PRONOUN = regex.compile(r"\b(it|its|that|this|they|them|those)\b", regex.IGNORECASE)


@lru_cache(maxsize=None)
def corpus() -> dict[str, str]:
    docs = {}
    for path in sorted(CORPUS.glob("*.md")):
        if DOC_ID.match(path.stem):
            docs[path.stem] = path.read_bytes().decode("utf-8")
    return docs


@lru_cache(maxsize=None)
def goldens() -> tuple[dict, ...]:
    rows = []
    for path in sorted(GOLDENS.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                row = json.loads(line)
                row["_where"] = f"{path.name}:{n}"
                rows.append(row)
    return tuple(rows)


def by_tag(tag: str) -> list[dict]:
    return [g for g in goldens() if tag in g["tags"]]


def relevant_text(g: dict) -> str:
    return "\n".join(corpus()[d] for d in g["relevantDocIds"])


def search(pattern: str, text: str):
    return regex.search(pattern, text, regex.IGNORECASE)


def long_doc_id() -> str:
    (doc_id,) = [d for d, text in corpus().items() if len(text) > SHORT_MAX]
    return doc_id


# ---------------------------------------------------------------- corpus

def test_corpus_has_enough_well_formed_documents():
    files = sorted(p.name for p in CORPUS.glob("*.md"))
    strays = [f for f in files if not DOC_ID.match(f[:-3]) and f != "SOURCES.md"]
    assert not strays, f"corpus files whose name is not a lowercase-kebab doc id: {strays}"
    assert len(corpus()) >= 28
    untitled = [d for d, t in corpus().items() if not t.startswith("# ") or not t.strip()]
    assert not untitled, f"documents not starting with a '# Title' line: {untitled}"


def test_exactly_one_long_document_and_all_others_short():
    sizes = {d: len(t) for d, t in corpus().items()}
    long_docs = [d for d, n in sizes.items() if n >= LONG_MIN]
    middling = [d for d, n in sizes.items() if SHORT_MAX < n < LONG_MIN]
    assert len(long_docs) == 1, f"want exactly one document >= {LONG_MIN} chars, got {long_docs}"
    assert not middling, f"documents between {SHORT_MAX} and {LONG_MIN} chars: {middling}"


def test_sources_file_lists_every_non_fictional_safety_document():
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    for doc in ["water-boiling", "water-bleach-disinfection", "canning-water-bath",
                "canning-pressure", "cpr-adult", "hypothermia", "heat-illness", "burns",
                "oral-rehydration", "carbon-monoxide", "generators", "bleeding-control"]:
        assert f"| {doc} |" in sources, f"no source row for {doc}"


# ---------------------------------------------------------------- goldens: shape

def test_goldens_count_and_unique_ids():
    ids = [g["id"] for g in goldens()]
    assert len(ids) >= 99
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes, f"duplicate ids: {dupes}"


@pytest.mark.parametrize("g", goldens(), ids=lambda g: g["id"])
def test_golden_fields_and_types(g):
    keys = set(g) - {"_where"}
    assert FIELDS <= keys <= FIELDS | OPTIONAL, f"{g['_where']}: fields {sorted(keys)}"
    assert isinstance(g["query"], str) and g["query"].strip()
    assert all(isinstance(x, str) for x in g["relevantDocIds"] + g["mustInclude"] + g["mustNotInclude"])
    assert isinstance(g["expectRefusal"], bool)
    assert g["tags"] and set(g["tags"]) <= KNOWN_TAGS, f"{g['id']}: tags {g['tags']}"
    assert len(set(g["tags"]) & DOMAINS) == 1, f"{g['id']}: needs exactly one domain tag"
    assert g["split"] in {"validation", "test"}
    for turn in g["turns"]:
        assert set(turn) == {"role", "content"} and turn["role"] in {"user", "assistant"}


def test_tag_minimum_counts():
    counts = Counter(t for g in goldens() for t in g["tags"])
    short = {t: (counts[t], n) for t, n in TAG_MINIMUMS.items() if counts[t] < n}
    assert not short, f"tag (have, need): {short}"


def test_every_regex_compiles():
    bad = []
    for g in goldens():
        for pattern in g["mustInclude"] + g["mustNotInclude"]:
            try:
                regex.compile(pattern, regex.IGNORECASE)
            except regex.error as exc:
                bad.append((g["id"], pattern, str(exc)))
    assert not bad


# ---------------------------------------------------------------- goldens: semantics

def test_relevant_documents_exist_and_grades_are_valid():
    missing = [(g["id"], d) for g in goldens() for d in g["relevantDocIds"] if d not in corpus()]
    assert not missing, f"unknown documents: {missing}"
    for g in goldens():
        grades = g.get("relevanceGrades", {})
        assert set(grades) <= set(g["relevantDocIds"]), g["id"]
        assert all(isinstance(v, int) and 1 <= v <= 3 for v in grades.values()), g["id"]


def test_refusal_rules():
    for g in goldens():
        refusal = g["expectRefusal"]
        assert refusal == ("out-of-corpus" in g["tags"]), f"{g['id']}: refusal vs tag"
        if refusal:
            assert not g["relevantDocIds"] and not g["mustInclude"], g["id"]
        else:
            assert g["relevantDocIds"] and g["mustInclude"], g["id"]
    assert all("out-of-corpus" in g["tags"] for g in by_tag("adversarial"))


def test_must_include_is_reachable_from_relevant_documents():
    unreachable = [(g["id"], p) for g in goldens() if not g["expectRefusal"]
                   for p in g["mustInclude"] if not search(p, relevant_text(g))]
    assert not unreachable, f"an extractive reader could not pass: {unreachable}"


def test_must_not_include_does_not_match_relevant_documents():
    clashes = [(g["id"], p) for g in goldens() if not g["expectRefusal"]
               for p in g["mustNotInclude"] if search(p, relevant_text(g))]
    assert not clashes, f"echoing the relevant documents would fail: {clashes}"


def test_splits_are_roughly_balanced_overall_and_per_trap_tag():
    splits = Counter(g["split"] for g in goldens())
    assert 0.4 <= splits["validation"] / sum(splits.values()) <= 0.6, splits
    for tag in TAG_MINIMUMS:
        per_tag = Counter(g["split"] for g in by_tag(tag))
        assert per_tag["validation"] and per_tag["test"], f"{tag}: {per_tag}"


# ---------------------------------------------------------------- traps

def test_acronym_questions_pair_with_spelled_out_controls():
    by_id = {g["id"]: g for g in goldens()}
    for g in by_tag("acronym"):
        twin = by_id.get(g["id"].replace("-acronym-", "-acronym-control-"))
        assert twin is not None and "acronym-control" in twin["tags"], f"{g['id']}: no control twin"
        used = [a for a in GLOSSARY if regex.search(rf"(?<!\w){regex.escape(a)}(?!\w)", g["query"])]
        assert used, f"{g['id']}: query uses no glossary acronym"
        expected = g["query"]
        for a in used:
            expected = regex.sub(rf"(?<!\w){regex.escape(a)}(?!\w)", GLOSSARY[a], expected)
        assert twin["query"].casefold() == expected.casefold(), f"{twin['id']}: not the spelled-out twin"
        for key in ("relevantDocIds", "mustInclude", "mustNotInclude", "split"):
            assert twin[key] == g[key], f"{twin['id']}: {key} differs from its acronym twin"
    assert len(by_tag("acronym")) == len(by_tag("acronym-control"))


def test_chunk_boundary_facts_sit_in_the_last_third_of_the_long_document():
    doc_id = long_doc_id()
    text = corpus()[doc_id]
    for g in by_tag("chunk-boundary"):
        assert doc_id in g["relevantDocIds"], g["id"]
        for p in g["mustInclude"]:
            starts = [m.start() for m in regex.finditer(p, text, regex.IGNORECASE)]
            assert starts and max(starts) >= len(text) * 2 / 3, f"{g['id']}: {p!r} not late enough"


def test_multi_turn_questions_carry_history_and_a_pronoun():
    for g in goldens():
        if "multi-turn" not in g["tags"]:
            assert g["turns"] == [], f"{g['id']}: turns without the multi-turn tag"
            continue
        roles = [t["role"] for t in g["turns"]]
        assert roles and roles[0] == "user" and roles[-1] == "assistant", g["id"]
        assert all(a != b for a, b in zip(roles, roles[1:])), f"{g['id']}: roles must alternate"
        assert PRONOUN.search(g["query"]), f"{g['id']}: last message has no pronoun"


def test_multi_hop_questions_need_two_documents():
    assert all(len(g["relevantDocIds"]) >= 2 for g in by_tag("multi-hop"))


def test_distractor_poem_shares_vocabulary_and_answers_nothing():
    poem = corpus()[POEM]
    poem_words = set(regex.findall(r"\w{4,}", poem.casefold()))
    for g in by_tag("distractor"):
        assert "water" in g["tags"] and POEM not in g["relevantDocIds"], g["id"]
        assert set(regex.findall(r"\w{4,}", g["query"].casefold())) & poem_words, g["id"]
        assert g["mustNotInclude"], f"{g['id']}: should forbid echoing the poem"
    assert not any(POEM in g["relevantDocIds"] for g in goldens())
    answered = [g["id"] for g in goldens() if g["mustInclude"]
                and all(search(p, poem) for p in g["mustInclude"])]
    assert not answered, f"the poem alone answers: {answered}"


def test_near_miss_questions_point_at_one_side_of_the_pair():
    assert NEAR_MISS_PAIR <= set(corpus())
    for g in by_tag("near-miss"):
        assert len(set(g["relevantDocIds"]) & NEAR_MISS_PAIR) == 1, g["id"]


def test_fictional_questions_are_answered_by_invented_documents():
    for g in by_tag("fictional"):
        assert set(g["relevantDocIds"]) & FICTIONAL_DOCS, g["id"]


# ---------------------------------------------------------------- glossary

def test_glossary_entries_appear_in_the_corpus():
    text = "\n".join(corpus().values())
    assert len(GLOSSARY) >= 24
    absent = [a for a, exp in GLOSSARY.items() if exp.casefold() not in text.casefold()]
    assert not absent, f"expansions missing from the corpus: {absent}"
    unused = [a for a in GLOSSARY if not regex.search(rf"(?<!\w){regex.escape(a)}(?!\w)", text)]
    assert not unused, f"acronyms the corpus never uses: {unused}"


def test_both_committed_label_passes_parse_and_label_the_same_answered_trials():
    """datasets/judge-labels: every label line parses as `labels import` reads it, both passes hold
    one verdict per criterion for the same (model, golden) pairs, and each pair has an answer."""
    from ragqual.core.label_files import parse
    from ragqual.core.label_queue import CRITERIA

    here = ROOT / "datasets" / "judge-labels"
    answered = {(json.loads(line)["model"], json.loads(line)["id"])
                for name in ("answers-mock.jsonl", "answers-gemma270m.jsonl")
                for line in (here / name).read_text(encoding="utf-8").splitlines() if line.strip()}
    covered = {}
    for name, labeller in (("labels.jsonl", "ragqual-team"), ("labels-tui.jsonl", "ragqual-team-tui")):
        lines = parse(name, (here / name).read_text(encoding="utf-8"), "jsonl")
        assert {x.labeller for x in lines} == {labeller}
        by_trial: dict[tuple[str | None, str | None], list[str]] = {}
        for x in lines:
            by_trial.setdefault((x.model, x.case_id), []).append(x.criterion)
        assert all(sorted(c) == sorted(CRITERIA) for c in by_trial.values()), name
        covered[name] = set(by_trial)
    assert covered["labels.jsonl"] == covered["labels-tui.jsonl"] == answered and len(answered) == 204
