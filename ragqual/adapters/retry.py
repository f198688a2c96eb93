"""One retry policy for every model backend: exponential backoff, then a per-trial failure."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ragqual.errors import ModelCallFailed

T = TypeVar("T")


class Retryable(Exception):
    """A failure worth another attempt, carrying what to say if none succeeds."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason  # "timeout" | "server_error" | ...
        self.detail = detail


def with_retries(attempt: Callable[[], T], *, retries: int, backoff: float, sleep: Callable[[float], None],
                 gave_up: Callable[[Retryable, int], ModelCallFailed]) -> T:
    """Call `attempt` up to retries + 1 times, waiting backoff * 2**k between tries; a Retryable
    that outlives them becomes the ModelCallFailed that `gave_up(failure, attempts)` builds."""
    attempts, failed = retries + 1, 0
    while True:
        try:
            return attempt()
        except Retryable as failure:
            failed += 1
            if failed == attempts:
                raise gave_up(failure, attempts) from None
            sleep(backoff * 2 ** (failed - 1))
