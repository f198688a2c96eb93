"""The history's head as reports, pages and baseline files publish it, and reading it back.

Every file ragqual writes about a history records the seal chain's head at that moment under the
key `history_head`, as one line of text:

    sha256:<64 hex> at seal <id> (<n> seals)

`ragqual verify --expect-from FILE` finds it again in any of those files: JSON (a baseline, a
`--format json` report) by the key at any depth; Markdown, text and HTML by the key followed by
the value (`- **history_head**: …`, `history_head  …`, `<dt>history_head</dt><dd>…</dd>`).
The first occurrence counts: every format writes it in the header, before any stored text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

HEAD_KEY = "history_head"
_VALUE = r"sha256:([0-9a-f]{64}) at seal (\d+) \((\d+) seals?\)"
_IN_TEXT = HEAD_KEY + r"(?:\s|[*:|=\"]|</?[a-z]+>){0,12}" + _VALUE  # the value after its key, in any format


@dataclass(frozen=True)
class PublishedHead:
    """The newest seal when a file was written: its digest, its id, how many seals there were."""

    digest: str
    seal_id: int
    seals: int

    def text(self) -> str:
        return f"sha256:{self.digest} at seal {self.seal_id} ({self.seals} seals)"


def parse_head(value: str) -> PublishedHead | None:
    """The head in its one-line form (None when `value` is not one)."""
    m = re.fullmatch(_VALUE, value.strip())  # re's own cache: compiled on first use
    return PublishedHead(m[1], int(m[2]), int(m[3])) if m else None


def _in_json(data: Any) -> PublishedHead | None:
    if isinstance(data, dict):
        value = data.get(HEAD_KEY)
        if isinstance(value, str) and (head := parse_head(value)):
            return head
        children: Any = data.values()
    elif isinstance(data, list):
        children = data
    else:
        return None
    for child in children:
        if head := _in_json(child):
            return head
    return None


def find_head(document: str) -> PublishedHead | None:
    """The head a report, page or baseline file records, whatever its format (None: none recorded)."""
    if document.lstrip().startswith(("{", "[")):
        try:
            return _in_json(json.loads(document))
        except ValueError:
            pass  # not JSON after all: read it as text
    m = re.search(_IN_TEXT, document)
    return PublishedHead(m[1], int(m[2]), int(m[3])) if m else None
