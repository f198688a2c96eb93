"""The corpus fingerprint: stable across processes, moved by anything that changes retrieval."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragqual.core.corpus import parse_corpus
from ragqual.core.fingerprint import corpus_fingerprint
from ragqual.errors import InputError
from ragqual.pipeline.chunking import ChunkConfig

FILES = [("corpus/water.md", b"Boil for one minute.\n"), ("corpus/bleach.md", b"Eight drops per gallon.\n")]
EMBEDDER = "ollama:nomic-embed-text"

_SCRIPT = textwrap.dedent("""
    from ragqual.core.corpus import parse_corpus
    from ragqual.core.fingerprint import corpus_fingerprint
    from ragqual.pipeline.chunking import ChunkConfig
    files = [("corpus/water.md", b"Boil for one minute.\\n"), ("corpus/bleach.md", b"Eight drops per gallon.\\n")]
    config = ChunkConfig(chunk_tokens=128, overlap_tokens=16, doc_prefix="search_document: ")
    print(corpus_fingerprint(parse_corpus(files), config.as_dict(), "ollama:nomic-embed-text"))
""")


def fingerprint(files=FILES, embedder=EMBEDDER, **config) -> str:  # type: ignore[no-untyped-def]
    base = {"chunk_tokens": 128, "overlap_tokens": 16, "doc_prefix": "search_document: "}
    return corpus_fingerprint(parse_corpus(files), ChunkConfig(**{**base, **config}).as_dict(), embedder)


def test_same_in_another_process_with_another_hash_seed(tmp_path: Path) -> None:
    mine = fingerprint()
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True,
                             cwd=tmp_path, env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.stdout.strip() == mine
    assert len(mine) == 64 and int(mine, 16) >= 0


def test_independent_of_document_order() -> None:
    assert fingerprint(list(reversed(FILES))) == fingerprint()


@pytest.mark.parametrize(
    "changed",
    [
        {"files": [("corpus/water.md", b"Boil for one minute!\n"), FILES[1]]},  # one byte of one document
        {"files": [("corpus/water.md", b"Boil for one minute.\r\n"), FILES[1]]},  # same text, other bytes
        {"files": [("corpus/water2.md", FILES[0][1]), FILES[1]]},  # renamed document
        {"files": FILES[:1]},  # a document removed
        {"chunk_tokens": 129},
        {"overlap_tokens": 17},
        {"chars_per_token": 3.5},
        {"doc_prefix": ""},
        {"query_prefix": "search_query: "},
        {"embedder": "ollama:nomic-embed-text:v1.5"},
        {"embedder": "minilm-int8"},
    ],
)
def test_changes_with_anything_that_changes_retrieval(changed: dict) -> None:  # type: ignore[type-arg]
    assert fingerprint(**changed) != fingerprint()


def test_integer_and_float_ratio_are_the_same_setting() -> None:
    assert fingerprint(chars_per_token=4) == fingerprint(chars_per_token=4.0)


def test_empty_embedder_is_refused() -> None:
    with pytest.raises(InputError):
        fingerprint(embedder=" ")
