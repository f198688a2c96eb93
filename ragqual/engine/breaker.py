"""The circuit breaker: a run stops after K model-call attempts in a row have failed.

Without it a hung server costs (retries + 1) x timeout for every trial, and a 500-trial run
spends hours recording the same timeout. Every attempt of every model call of a run (warm-up
included) reports to one breaker, from any worker thread: a success resets the count; the K-th
failure in a row opens the breaker, which raises `CircuitOpen` in the attempt that tripped it and
in every attempt after. `CircuitOpen` is a plain `ServiceUnavailable` (exit 3), so the trial
loop ends the run as `failed`, keeps every finished trial, and the run can be resumed.

K comes from RAGQUAL_MAX_FAILURES (default 5; 0 turns the breaker off). A hung server is thus
stopped after about K x timeout plus the backoff waits between those attempts.
"""

from __future__ import annotations

import os
import threading

from ragqual.errors import InputError, ServiceUnavailable

THRESHOLD_ENV = "RAGQUAL_MAX_FAILURES"
DEFAULT_THRESHOLD = 5


class CircuitOpen(ServiceUnavailable):
    """K consecutive model-call attempts failed: the run stops (exit 3)."""

    def __init__(self, failures: int, last: str):
        self.failures, self.last = failures, last
        super().__init__(f"the model server failed {failures} calls in a row (last: {last})")

    def for_run(self, run_id: int, resume_command: str) -> CircuitOpen:
        """The same failure, with the line that says how to finish the run."""
        stopped = CircuitOpen(self.failures, self.last)
        stopped.args = (f"{self}; run {run_id} stopped as failed: when the server answers again, "
                        f"finish it with `{resume_command} --resume {run_id}` "
                        f"(the limit is {THRESHOLD_ENV}, default {DEFAULT_THRESHOLD})",)
        return stopped


def breaker_threshold(value: int | None = None) -> int:
    """K: `value`, else RAGQUAL_MAX_FAILURES, else 5; 0 means never trip."""
    if value is not None:
        raw: str = str(value)
    else:
        raw = os.environ.get(THRESHOLD_ENV, "").strip() or str(DEFAULT_THRESHOLD)
    if not raw.isdigit():
        raise InputError(f"{THRESHOLD_ENV} must be a whole number of failures (0 = never stop), got {raw!r}")
    return int(raw)


class CircuitBreaker:
    """Counts consecutive failed attempts across threads; see the module docstring."""

    def __init__(self, threshold: int = DEFAULT_THRESHOLD):
        if threshold < 0:
            raise InputError(f"the failure threshold must be 0 or more, got {threshold}")
        self.threshold = threshold
        self.consecutive = 0
        self.tripped: CircuitOpen | None = None
        self._lock = threading.Lock()

    def before_attempt(self) -> None:
        with self._lock:
            if self.tripped is not None:
                raise self.tripped

    def attempt_succeeded(self) -> None:
        with self._lock:
            self.consecutive = 0

    def attempt_failed(self, detail: str) -> None:
        with self._lock:
            if self.tripped is not None:
                raise self.tripped
            self.consecutive += 1
            if self.threshold and self.consecutive >= self.threshold:
                self.tripped = CircuitOpen(self.consecutive, detail)
                raise self.tripped
