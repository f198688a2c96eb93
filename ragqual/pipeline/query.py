"""Query preprocessing: acronym expansion from the project's glossary (core.glossary)."""

from __future__ import annotations

import re
from collections.abc import Mapping


_WORD = re.compile(r"[A-Za-z0-9]+")


def expand_acronyms(query: str, glossary: Mapping[str, str]) -> str:
    """Append each acronym's expansion once, in order of first appearance.

    "Where do I put a CO alarm?" -> "Where do I put a CO alarm? (CO: carbon monoxide)".
    Matching is case-sensitive and whole-word, so ordinary words are left alone.
    """
    seen: list[str] = []
    for token in _WORD.findall(query):
        if token in glossary and token not in seen:
            seen.append(token)
    if not seen:
        return query
    notes = "; ".join(f"{t}: {glossary[t]}" for t in seen)
    return f"{query} ({notes})"
