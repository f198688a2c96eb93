"""One line of a JSON-lines file as a value, or why it is none: the rule every JSON-lines reader
shares (goldens, and a BEIR collection's corpus and queries).

Besides invalid JSON, two lines that Python's `json` accepts or chokes on are refused here, so
they become a problem at their file and line instead of a traceback later: nesting deeper than
the parser's recursion allows, and a lone UTF-16 surrogate escape (`"\\udc80"`), which decodes to
a string that cannot be encoded as UTF-8 (hashed, stored or printed).
"""

from __future__ import annotations

import json
import re
from typing import Any

NESTED = "invalid JSON: nested too deeply"
SURROGATE = "contains a lone UTF-16 surrogate escape (\\ud800-\\udfff), which is not text"
_PLAIN = json.JSONDecoder()
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # an escape in D800-DFFF: maybe half of a pair


def load(text: str, decoder: json.JSONDecoder = _PLAIN) -> tuple[Any, str | None]:
    """(value, None), or (None, the problem). Exceptions a decoder's hooks raise pass through."""
    try:
        value = decoder.decode(text)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return None, NESTED
    except ValueError as exc:  # e.g. an integer literal longer than Python converts
        return None, f"invalid JSON: {exc}"
    if _SURROGATE_ESCAPE.search(text) is not None and not _is_text(value):
        return None, SURROGATE
    return value, None


def _is_text(value: Any) -> bool:
    """True when every string in `value` encodes as UTF-8 (a surrogate pair decodes to one character)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
