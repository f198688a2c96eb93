"""Secrets never reach the history: one pure redaction, applied before anything is stored.

Rules (the history is append-only, so a stored secret could never be removed):

* URL userinfo is replaced by `***` in any string: `http://alice:pw@host/v1` ->
  `http://***@host/v1`; SQLAlchemy URLs (`postgresql://u:pw@host/db`) are URLs too.
* Options and variables whose name contains KEY, TOKEN, SECRET or PASSWORD (any case) have
  their value replaced by `***`: `--api-key X`, `--api-key=X`, `OPENAI_API_KEY=X` in a command
  line, `{"api_key": "X"}` in parameters. Numbers are never masked (`--chunk-tokens 256`,
  `chars_per_token: 4` are sizes, not credentials).
* The VALUES of the credentials ragqual holds are replaced by `***` wherever they appear, under
  any name or none: a server that echoes the request's `Authorization` header in its error body
  cannot put the key into a trial's error. Values are registered explicitly where ragqual reads
  them (`remember_secret`, `remember_url_secrets`): the OpenAI API key variables, the Qdrant API
  key, URL passwords in `--db`/`RAGQUAL_DB`, model URLs, `OLLAMA_HOST` and `QDRANT_URL`, and the
  Basic / Bearer header values built from them. The registry is process-wide and only grows. A value shorter
  than MIN_SECRET_CHARS (8) is not registered: masking every "pw", "1234" or a password that is
  also a common word (a test server's "ragqual") would blank ordinary words in answers and messages; such short values are still masked in URLs and under
  credential names by the two rules above.

`redact_text` / `redact_value` apply all three rules (stored errors, params, event details, and
the server texts the model adapters put into error messages); `redact_known` applies only the third (a model's raw output or answer, which may
quote URLs or name keys of its own). `secret_digest` gives the sha256 of whatever was masked, so
a cache key can still change when a credential changes without the credential being stored
anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"
MIN_SECRET_CHARS = 8
_KNOWN: set[str] = set()
_KNOWN_LOCK = threading.Lock()
_known_pattern: re.Pattern[str] | None = None
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


def remember_secret(value: str | None) -> None:
    """Register a credential's value: from now on every redaction replaces it by ***.
    None, blank and values shorter than MIN_SECRET_CHARS are ignored (see the module docstring)."""
    global _known_pattern
    if value is None:
        return
    value = value.strip()
    if len(value) < MIN_SECRET_CHARS:
        return
    with _KNOWN_LOCK:
        if value in _KNOWN:
            return
        _KNOWN.add(value)
        longest_first = sorted(_KNOWN, key=lambda v: (-len(v), v))
        _known_pattern = re.compile("|".join(re.escape(v) for v in longest_first))


def remember_url_secrets(url: str | None) -> None:
    """Register the password (and the user:password pair, raw, decoded and as the Basic header
    value an HTTP client builds from it) of a URL that carries userinfo."""
    if not url or "@" not in url:
        return
    for found in secrets_in(url):
        user, sep, password = found.partition(":")
        if not sep:  # https://TOKEN@host: the user part is the credential
            user, password = "", user
        for raw in {password, unquote(password)}:
            remember_secret(raw)
        plain_user, plain_password = unquote(user), unquote(password)
        if plain_password:
            pair = f"{plain_user}:{plain_password}".encode("utf-8")
            remember_secret(base64.b64encode(pair).decode("ascii"))
    try:  # what a URL parser reads, in case it differs from the pattern above
        parsed = urlsplit(url.split("#", 1)[0])
        remember_secret(parsed.password)
    except ValueError:
        pass


def remember_bearer(token: str | None) -> None:
    """Register a bearer token (the key in `Authorization: Bearer <key>`)."""
    remember_secret(token)


def known_secret_count() -> int:
    with _KNOWN_LOCK:
        return len(_KNOWN)


def forget_secrets() -> None:
    """Empty the registry (tests only: a process forgets nothing it has read)."""
    global _known_pattern
    with _KNOWN_LOCK:
        _KNOWN.clear()
        _known_pattern = None


def mask_userinfo(text: str) -> str:
    """The string with every URL's userinfo replaced by *** (the first rule alone)."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@" if m["userinfo"] else m[0], text)


def mask_known(text: str) -> str:
    """The string with every registered credential value replaced by *** (the third rule alone)."""
    pattern = _known_pattern
    if pattern is None or not text:
        return text
    return pattern.sub(MASK, text)


def redact_text(text: str) -> str:
    """The string with every URL's userinfo and every registered credential value replaced by ***."""
    return mask_known(mask_userinfo(text))


def redact_known(value: Any) -> Any:
    """A JSON-like value (a model's raw output or answer) with registered credential values
    replaced by *** in every string, keys included; nothing else is touched."""
    if _known_pattern is None:
        return value
    if isinstance(value, str):
        return mask_known(value)
    if isinstance(value, dict):
        return {redact_known(k) if isinstance(k, str) else k: redact_known(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_known(v) for v in value)
    return value


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
