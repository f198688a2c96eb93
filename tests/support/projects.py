"""A project of one's own on disk for command tests: corpus/, goldens/own.jsonl, eval-results/."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

GOLDEN_DEFAULTS = {"turns": [], "relevantDocIds": [], "mustInclude": [], "mustNotInclude": [],
                   "expectRefusal": False, "tags": ["own"]}


@contextmanager
def own_project(root: Path, docs: Mapping[str, str], goldens: Sequence[Mapping[str, object]],
                cache: Path) -> Iterator[Path]:
    """Write the project under `root` (each golden over GOLDEN_DEFAULTS) and work in it, with no
    history, Qdrant or Ollama from the environment and the tests' shared response cache."""
    (root / "corpus").mkdir()
    for doc_id, text in docs.items():
        (root / "corpus" / f"{doc_id}.md").write_text(text, encoding="utf-8")
    (root / "goldens").mkdir()
    lines = [json.dumps({**GOLDEN_DEFAULTS, **g}) for g in goldens]
    (root / "goldens" / "own.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "eval-results").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for var in ("RAGQUAL_DB", "QDRANT_URL", "OLLAMA_HOST"):
            mp.delenv(var, raising=False)
        mp.setenv("RAGQUAL_CACHE_DIR", str(cache))
        yield root
