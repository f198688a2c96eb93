"""One retry policy for every model backend: exponential backoff, then a per-trial failure.

An optional `AttemptObserver` sees every attempt (the trial loop's circuit breaker is one): it
is asked before each attempt, which lets it stop a call that a run no longer wants, and told
how each attempt ended. A plain `ServiceUnavailable` (nothing can succeed) is not reported:
it stops the run by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from ragqual.errors import ModelCallFailed, ServiceUnavailable

T = TypeVar("T")


class Retryable(Exception):
    """A failure worth another attempt, carrying what to say if none succeeds."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason  # "timeout" | "server_error" | "transport" | ...
        self.detail = detail


class AttemptObserver(Protocol):
    def before_attempt(self) -> None:
        """Called before every attempt; may raise to stop the call (a tripped breaker)."""

    def attempt_succeeded(self) -> None: ...

    def attempt_failed(self, detail: str) -> None: ...


def with_retries(attempt: Callable[[], T], *, retries: int, backoff: float, sleep: Callable[[float], None],
                 gave_up: Callable[[Retryable, int], ServiceUnavailable],
                 observer: AttemptObserver | None = None) -> T:
    """Call `attempt` up to retries + 1 times, waiting backoff * 2**k between tries; a Retryable
    that outlives them becomes the error `gave_up(failure, attempts)` builds: a ModelCallFailed
    (recorded on one trial), or a plain ServiceUnavailable when no attempt reached the server."""
    attempts, failed = retries + 1, 0
    while True:
        if observer is not None:
            observer.before_attempt()
        try:
            result = attempt()
        except Retryable as failure:
            if observer is not None:
                observer.attempt_failed(failure.detail)
            failed += 1
            if failed == attempts:
                raise gave_up(failure, attempts) from None
            sleep(backoff * 2 ** (failed - 1))
            continue
        except ModelCallFailed as failure:
            if observer is not None:
                observer.attempt_failed(str(failure))
            raise
        if observer is not None:
            observer.attempt_succeeded()
        return result
