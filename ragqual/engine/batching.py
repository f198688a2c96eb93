"""When the trial loop appends its finished trials: in batches, each one transaction with one seal.

A finished trial waits in memory until its batch is appended. A batch is cut at whichever comes
first:

* `trials` finished trials are waiting (RAGQUAL_APPEND_BATCH, default 500);
* `ms` milliseconds have passed since the last append (RAGQUAL_APPEND_BATCH_MS, default 1000),
  so a trial that alone takes longer than that (a real model call) is appended as soon as it
  finishes, and the history shows a live run's progress at least that often;
* the end of a case's trials, when `per_case` is set (RAGQUAL_APPEND_PER_CASE=1): slots run
  variant-major, so a case's trials for one variant and repeat are its modes.

The loop also appends whatever waits when the run ends in any way (finished, interrupted,
failed, stopped by the circuit breaker). A kill -9 loses at most the trials waiting, and their
answers are already in the response cache, so `--resume` calls no model for them. Without a
response cache that keeps answers (`--cache off`, or a cache folder that could not be used) a
lost trial would cost its model call again, so every trial is then appended on its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ragqual.errors import InputError

TRIALS_ENV = "RAGQUAL_APPEND_BATCH"
MS_ENV = "RAGQUAL_APPEND_BATCH_MS"
PER_CASE_ENV = "RAGQUAL_APPEND_PER_CASE"
DEFAULT_TRIALS = 500
DEFAULT_MS = 1000.0


@dataclass(frozen=True)
class BatchPolicy:
    """Cut a batch at `trials` waiting trials, `ms` since the last append, or (per_case) a case's end."""

    trials: int = DEFAULT_TRIALS
    ms: float = DEFAULT_MS
    per_case: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise InputError(f"{TRIALS_ENV} must be a whole number of trials, 1 or more, got {self.trials!r}")
        if not self.ms >= 0:
            raise InputError(f"{MS_ENV} must be a number of milliseconds, 0 or more, got {self.ms!r}")

    def due(self, waiting: int, since_append_ms: float, case_ended: bool = False) -> bool:
        """Whether `waiting` finished trials are appended now."""
        if waiting <= 0:
            return False
        return (waiting >= self.trials or since_append_ms >= self.ms
                or (self.per_case and case_ended))

    def one_by_one(self) -> BatchPolicy:
        """The policy when a lost trial would cost a model call again: every trial on its own."""
        return BatchPolicy(1, self.ms, self.per_case)


def batch_policy(environ: dict[str, str] | None = None) -> BatchPolicy:
    """The policy from RAGQUAL_APPEND_BATCH, RAGQUAL_APPEND_BATCH_MS and RAGQUAL_APPEND_PER_CASE."""
    env = os.environ if environ is None else environ
    trials_text = env.get(TRIALS_ENV, "").strip() or str(DEFAULT_TRIALS)
    ms_text = env.get(MS_ENV, "").strip() or str(DEFAULT_MS)
    per_case_text = env.get(PER_CASE_ENV, "").strip().lower() or "0"
    if not trials_text.isdigit() or int(trials_text) < 1:
        raise InputError(f"{TRIALS_ENV} must be a whole number of trials, 1 or more, got {trials_text!r}")
    try:
        ms = float(ms_text)
    except ValueError:
        ms = -1.0
    if not ms >= 0 or ms == float("inf"):
        raise InputError(f"{MS_ENV} must be a number of milliseconds, 0 or more, got {ms_text!r}")
    if per_case_text not in ("0", "1", "true", "false", "yes", "no"):
        raise InputError(f"{PER_CASE_ENV} must be 1 or 0, got {per_case_text!r}")
    return BatchPolicy(int(trials_text), ms, per_case_text in ("1", "true", "yes"))
