"""Secrets never reach the history: one pure redaction, applied before anything is stored.

Rules (the history is append-only, so a stored secret could never be removed):

* URL userinfo is replaced by `***` in any string: `http://alice:pw@host/v1` ->
  `http://***@host/v1`; SQLAlchemy URLs (`postgresql://u:pw@host/db`) are URLs too.
* Options and variables whose name contains KEY, TOKEN, SECRET or PASSWORD (any case) have
  their value replaced by `***`: `--api-key X`, `--api-key=X`, `OPENAI_API_KEY=X` in a command
  line, `{"api_key": "X"}` in parameters. Numbers are never masked (`--chunk-tokens 256`,
  `chars_per_token: 4` are sizes, not credentials).

`secret_digest` gives the sha256 of whatever was masked, so a cache key can still change when a
credential changes without the credential being stored anywhere.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

MASK = "***"
CREDENTIAL_WORDS = ("key", "token", "secret", "password")
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^\s/?#]*)@")
_ASSIGNMENT = re.compile(r"^(?P<name>-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)=(?P<value>.*)$", re.S)
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def is_credential_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in CREDENTIAL_WORDS)


def _maskable(value: Any) -> bool:
    if isinstance(value, bool) or isinstance(value, (int, float)) or value is None:
        return False
    return not (isinstance(value, str) and (value == "" or _NUMBER.match(value.strip())))


def redact_text(text: str) -> str:
    """The string with every URL's userinfo replaced by ***."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@" if m["userinfo"] else m[0], text)


def redact_value(value: Any, name: str | None = None) -> Any:
    """A JSON-like value with URL userinfo stripped and credential-named entries masked."""
    if name is not None and is_credential_name(name) and _maskable(value):
        return MASK
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_value(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v) for v in value)
    return value


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with credential option values and URL userinfo masked."""
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            mask_next = False
            if _maskable(arg) and not arg.startswith("-"):
                out.append(MASK)
                continue
        assignment = _ASSIGNMENT.match(arg)
        if assignment and is_credential_name(assignment["name"]) and _maskable(assignment["value"]):
            out.append(f"{assignment['name']}={MASK}")
            continue
        if arg.startswith("-") and "=" not in arg and is_credential_name(arg):
            mask_next = True
        out.append(redact_text(arg))
    return out


def secrets_in(text: str) -> list[str]:
    """The userinfo parts redact_text would remove."""
    if "@" not in text or "://" not in text:
        return []
    return [m["userinfo"] for m in _USERINFO.finditer(text) if m["userinfo"]]


def secret_digest(text: str) -> str | None:
    """sha256 of the credentials in `text` (None when it has none): a key part, never stored raw."""
    found = secrets_in(text)
    if not found:
        return None
    return hashlib.sha256("\x00".join(found).encode("utf-8")).hexdigest()
