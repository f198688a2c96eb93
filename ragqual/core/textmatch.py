"""Case-insensitive regex matching with a time bound.

Golden files carry user-written regular expressions (mustInclude / mustNotInclude). A pattern
such as ``(a+)+$`` backtracks exponentially on a long answer, so every search runs with the
``regex`` package's ``timeout=``; running out of time raises `RegexTimeout`, which the caller
records as an error on that one assertion instead of letting the run hang.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ragqual.errors import InputError, RagqualError

if TYPE_CHECKING:
    import regex

DEFAULT_TIMEOUT = 1.0


class RegexTimeout(RagqualError):
    """A pattern did not finish matching within its time bound."""

    def __init__(self, pattern: str, timeout: float):
        self.pattern = pattern
        self.timeout = timeout
        super().__init__(f"regex {pattern!r} did not finish within {timeout:g} s")


class InvalidPattern(InputError):
    """A pattern does not compile; `reason` is the regex engine's own message."""

    def __init__(self, pattern: str, reason: str):
        self.pattern = pattern
        self.reason = reason
        super().__init__(f"invalid regex {pattern!r}: {reason}")


_VOUCHED: set[str] = set()  # golden patterns an earlier run checked (see `vouch`)


def vouch(patterns: Iterable[str]) -> None:
    """Take `patterns` as checked: each one passed the golden pattern check (it compiles and does
    not match the empty string) in an earlier run, with this same `regex` version (remembered by
    ragqual.adapters.pattern_memo). `compile_pattern` then leaves each one's compilation to its
    first search, and `ragqual.core.goldens` does not check it again. Compiling the bundled
    goldens' ~200 patterns only to check them was ~0.05 s of every run that loads them."""
    _VOUCHED.update(patterns)


def is_vouched(pattern: str) -> bool:
    return pattern in _VOUCHED


class DeferredPattern:
    """A vouched pattern, compiled on its first search (with `compile_pattern`'s flags)."""

    __slots__ = ("pattern",)

    def __init__(self, pattern: str):
        self.pattern = pattern

    @property
    def flags(self) -> int:
        return compiled(self.pattern).flags

    def search(self, string: str, *, timeout: float | None = None) -> regex.Match[str] | None:
        return compiled(self.pattern).search(string, timeout=timeout)


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> regex.Pattern[str] | DeferredPattern:
    """Compile `pattern` case-insensitively, once per distinct pattern; a vouched pattern (`vouch`)
    is compiled when first searched with. Raises InvalidPattern for one that does not compile."""
    if pattern in _VOUCHED:
        return DeferredPattern(pattern)
    return compiled(pattern)


@functools.lru_cache(maxsize=4096)
def compiled(pattern: str) -> regex.Pattern[str]:
    """`pattern` compiled case-insensitively now, vouched or not (InvalidPattern if it does not compile)."""
    import regex  # here, not at import: a run whose golden patterns are all vouched for (`vouch`) and
    # that reads no answer (the retrieval tier) never compiles one, and importing `regex` is ~0.01 s

    try:
        return regex.compile(pattern, regex.IGNORECASE)
    except regex.error as exc:
        raise InvalidPattern(pattern, str(exc)) from None


@functools.cache
def compiled_as_written(pattern: str) -> regex.Pattern[str]:
    """One of ragqual's own patterns, compiled with no flags (case matters) when first used, for
    the same reason as `compiled`: a command that reads no answer never imports `regex`. Unbounded:
    the patterns are the package's, a fixed few."""
    import regex

    return regex.compile(pattern)


def search(pattern: str, text: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """True when `pattern` matches anywhere in `text`; raises `RegexTimeout` past `timeout` seconds."""
    if not (timeout > 0 and math.isfinite(timeout)):
        raise InputError(f"regex timeout must be a positive number of seconds, got {timeout!r}")
    return _matches(pattern, text, timeout)


@functools.lru_cache(maxsize=16384)
def _matches(pattern: str, text: str, timeout: float) -> bool:
    """`search` itself, remembered: a run asks the same pattern of the same answer or context once
    per repeat, mode and what-if setting (a timeout is raised each time, never remembered)."""
    try:
        return compiled(pattern).search(text, timeout=timeout) is not None
    except TimeoutError:
        raise RegexTimeout(pattern, timeout) from None


def found(pattern: str, text: str) -> bool:
    """`search` for readings that must not stop on one slow pattern: running out of time counts
    as no match (the diagnosis and the context metrics of a trial)."""
    try:
        return search(pattern, text)
    except RegexTimeout:
        return False
