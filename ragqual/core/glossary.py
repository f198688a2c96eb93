"""An acronym glossary: parsed and validated from a text file named in `[tool.ragqual]`.

The format is one entry a line, `ACRONYM = expansion`; blank lines and lines starting with `#`
are skipped. An acronym is one word of letters and digits ("CO", "DoD", "LiFePO4") and is
matched case-sensitively as written, so everyday words that share its letters are left alone.
Every problem is reported with the file and line, all of them in one pass.

The glossary's digest (of its entries, not its comments or layout) enters the retrieval
configuration, so a search remembered under one glossary is never read back under another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ragqual.core.hashing import canonical_json, sha256_hex
from ragqual.errors import Issue, ValidationFailed

ACRONYM = re.compile(r"[A-Za-z0-9]+")
"""What an acronym may be: exactly one of the words query expansion matches."""


@dataclass(frozen=True)
class Glossary:
    """Acronym -> expansion, in file order, with the digest of those entries."""

    entries: tuple[tuple[str, str], ...]
    source: str = ""

    @property
    def digest(self) -> str:
        return sha256_hex(canonical_json([list(pair) for pair in self.entries]))

    def as_mapping(self) -> Mapping[str, str]:
        return MappingProxyType(dict(self.entries))


def parse_glossary(text: str, source: str) -> Glossary:
    """The glossary in `text` (read from `source`), or ValidationFailed naming each bad line."""
    entries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    issues: list[Issue] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        problem = _entry_problem(line, first_line)
        if problem is not None:
            issues.append(Issue(source, number, problem))
            continue
        acronym, expansion = (part.strip() for part in line.split("=", 1))
        entries[acronym], first_line[acronym] = expansion, number
    if not entries and not issues:
        issues.append(Issue(source, None, "the glossary has no entries (write one `ACRONYM = expansion` a line)"))
    if issues:
        raise ValidationFailed(issues)
    return Glossary(tuple(entries.items()), source)


def _entry_problem(line: str, first_line: Mapping[str, int]) -> str | None:
    if "=" not in line:
        return f"expected `ACRONYM = expansion`, got {line[:60]!r}"
    acronym, expansion = (part.strip() for part in line.split("=", 1))
    if not ACRONYM.fullmatch(acronym):
        return f"the acronym {acronym[:40]!r} must be one word of letters and digits"
    if not expansion:
        return f"{acronym} has an empty expansion"
    if acronym in first_line:
        return f"{acronym} is defined twice (first on line {first_line[acronym]})"
    return None
