"""Chunking by an estimated-token budget: hand-checked cuts plus invariants on random text."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragqual.core.corpus import Document
from ragqual.errors import InputError
from ragqual.pipeline.chunking import (
    Chunk,
    ChunkConfig,
    chunk_corpus,
    chunk_document,
    embed_text_for_chunk,
    embed_text_for_query,
)


def doc(text: str, doc_id: str = "d") -> Document:
    return Document(doc_id=doc_id, filename=f"{doc_id}.md", text=text, sha256="0" * 64)


def spans(text: str, **config: float) -> list[tuple[int, int, str]]:
    return [(c.start, c.end, c.text) for c in chunk_document(doc(text), ChunkConfig(**config))]  # type: ignore[arg-type]


# Budget 10 characters: 5 estimated tokens at 2 characters per token.
TEN = {"chunk_tokens": 5, "chars_per_token": 2.0, "overlap_tokens": 0}


def test_short_document_is_one_trimmed_chunk() -> None:
    [chunk] = chunk_document(doc("  Hello world.  \n", "water"), ChunkConfig())
    assert chunk == Chunk(chunk_id="water#0", doc_id="water", index=0, text="Hello world.", start=2, end=14)


def test_cuts_at_the_last_space_within_the_budget() -> None:
    assert spans("aaaa bbbb cccc dddd", **TEN) == [(0, 9, "aaaa bbbb"), (10, 19, "cccc dddd")]


def test_overlap_repeats_the_last_word() -> None:
    # 2 tokens of overlap = 4 characters: each chunk starts at the word that began 4 characters before the cut.
    assert spans("aaaa bbbb cccc dddd eeee", **{**TEN, "overlap_tokens": 2}) == [
        (0, 9, "aaaa bbbb"),
        (5, 14, "bbbb cccc"),
        (10, 19, "cccc dddd"),
        (15, 24, "dddd eeee"),
    ]


def test_paragraph_break_beats_a_later_space() -> None:
    text = "One two three.\n\nFour five six seven"  # paragraph break at 14, a space at 20
    assert spans(text, chunk_tokens=5, chars_per_token=4.0, overlap_tokens=0) == [
        (0, 14, "One two three."),
        (16, 35, "Four five six seven"),
    ]


def test_sentence_end_beats_a_later_space() -> None:
    text = "Alpha beta. Gamma delta epsilon"  # sentence ends at 11, a space at 17
    assert spans(text, chunk_tokens=5, chars_per_token=4.0, overlap_tokens=0) == [
        (0, 11, "Alpha beta."),
        (12, 31, "Gamma delta epsilon"),
    ]


def test_boundary_earlier_than_half_the_budget_is_not_used() -> None:
    # "Hi." ends at 3, before half of 20; the last space within 20 characters (at 18) wins.
    text = "Hi. aaaa bbbb cccc dddd"
    assert spans(text, chunk_tokens=5, chars_per_token=4.0, overlap_tokens=0)[0] == (0, 18, "Hi. aaaa bbbb cccc")


def test_text_without_boundaries_is_cut_hard_with_overlap() -> None:
    text = "abcdefghijklmnopqrstuvwxyz"
    assert spans(text, **TEN) == [(0, 10, "abcdefghij"), (10, 20, "klmnopqrst"), (20, 26, "uvwxyz")]
    assert [s[:2] for s in spans(text, **{**TEN, "overlap_tokens": 1})] == [(0, 10), (8, 18), (16, 26)]


def test_trailing_white_space_makes_no_extra_chunk() -> None:
    assert spans("aaaa bbbb" + " " * 30, **{**TEN, "overlap_tokens": 2}) == [(0, 9, "aaaa bbbb")]


def test_ids_indices_and_corpus_order() -> None:
    config = ChunkConfig(**TEN)  # type: ignore[arg-type]
    chunks = chunk_corpus([doc("aaaa bbbb cccc", "b"), doc("zz", "a")], config)
    assert [(c.chunk_id, c.doc_id, c.index) for c in chunks] == [("b#0", "b", 0), ("b#1", "b", 1), ("a#0", "a", 0)]


def test_prefixes_are_added_for_embedding_only() -> None:
    config = ChunkConfig(doc_prefix="search_document: ", query_prefix="search_query: ")
    [chunk] = chunk_document(doc("Boil water."), config)
    assert chunk.text == "Boil water."
    assert embed_text_for_chunk(chunk, config) == "search_document: Boil water."
    assert embed_text_for_query("how long?", config) == "search_query: how long?"
    assert embed_text_for_query("how long?", ChunkConfig()) == "how long?"


def test_document_without_text_is_refused() -> None:
    with pytest.raises(InputError, match="no text"):
        chunk_document(doc(" \n\t "), ChunkConfig())


def test_as_dict_names_every_setting() -> None:
    assert ChunkConfig(chars_per_token=3).as_dict() == {
        "chunk_tokens": 256, "overlap_tokens": 32, "chars_per_token": 3.0, "doc_prefix": "", "query_prefix": "",
    }


@pytest.mark.parametrize(
    "config",
    [
        {"chunk_tokens": 0},
        {"chunk_tokens": -5},
        {"chunk_tokens": 2.5},
        {"chunk_tokens": True},
        {"overlap_tokens": -1},
        {"chunk_tokens": 32, "overlap_tokens": 32},
        {"chunk_tokens": 10, "overlap_tokens": 40},
        {"chars_per_token": 0},
        {"chars_per_token": -4.0},
        {"chars_per_token": math.nan},
        {"chars_per_token": math.inf},
        {"chars_per_token": "4"},
        {"doc_prefix": None},
        {"chunk_tokens": 3, "overlap_tokens": 2, "chars_per_token": 0.1},  # rounds to an empty budget
        {"chunk_tokens": 3, "overlap_tokens": 2, "chars_per_token": 0.5},  # 1 char of budget, 1 of overlap
    ],
)
def test_bad_configs_are_input_errors(config: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(InputError):
        ChunkConfig(**config)


words = st.lists(st.sampled_from(["a", "bb", "water", "boil.", "minutes!", "\n\n", "\n", " ", "\t", "x" * 30]),
                 min_size=1, max_size=80)


@settings(max_examples=150, deadline=None)
@given(words.map(" ".join), st.integers(1, 20), st.integers(0, 19), st.sampled_from([1.0, 2.5, 4.0]))
def test_chunks_cover_the_text_within_budget(text: str, size: int, overlap: int, ratio: float) -> None:
    try:
        config = ChunkConfig(chunk_tokens=size, overlap_tokens=overlap, chars_per_token=ratio)
    except InputError:
        return
    if not text.strip():
        return
    chunks = chunk_document(doc(text), config)
    assert chunks == chunk_document(doc(text), config)  # deterministic
    covered: set[int] = set()
    for i, c in enumerate(chunks):
        assert c.index == i and c.chunk_id == f"d#{i}"
        assert c.text and c.text == text[c.start:c.end] and c.text == c.text.strip()
        assert c.end - c.start <= config.budget_chars
        covered.update(range(c.start, c.end))
    assert all(b.start > a.start and b.end > a.end for a, b in zip(chunks, chunks[1:], strict=False))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
