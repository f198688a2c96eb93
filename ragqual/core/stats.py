"""Paired statistics over questions: the same questions scored by a base run and a new run.

Every function works on the per-question differences new - base. Randomness comes only from the
`numpy.random.Generator` passed in, so a seeded comparison is reproducible.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ragqual.errors import InputError

# Resampled means are computed in blocks of about this many cells to bound memory.
_BLOCK_CELLS = 1_000_000
# Exact enumeration builds all 2**n sign patterns at once; beyond this it would not fit in memory.
_EXACT_LIMIT = 16


class BootstrapCI(NamedTuple):
    mean_diff: float
    lo: float
    hi: float


def paired_differences(base: Sequence[float], new: Sequence[float]) -> np.ndarray:
    """new - base per question; both sequences must be non-empty, equally long and finite."""
    b = np.asarray(base, dtype=float)
    n = np.asarray(new, dtype=float)
    if b.ndim != 1 or b.shape != n.shape:
        raise InputError(f"paired values need equal lengths, got {len(base)} and {len(new)}")
    if b.size == 0:
        raise InputError("paired values: no questions")
    if not (np.isfinite(b).all() and np.isfinite(n).all()):
        raise InputError("paired values must be finite numbers")
    return n - b


def paired_bootstrap_ci(
    base: Sequence[float],
    new: Sequence[float],
    rng: np.random.Generator,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> BootstrapCI:
    """Percentile bootstrap interval for the mean of new - base, resampling whole questions.

    Each resample draws n questions with replacement and keeps the mean difference; the interval
    is the (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of those means (numpy's linear
    interpolation).
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be between 0 and 1, got {confidence!r}")
    if n_resamples < 1:
        raise InputError(f"n_resamples must be at least 1, got {n_resamples!r}")
    diffs = paired_differences(base, new)
    means = _resampled_means(diffs, rng, n_resamples)
    alpha = 1 - confidence
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return BootstrapCI(float(diffs.mean()), float(lo), float(hi))


def _resampled_means(diffs: np.ndarray, rng: np.random.Generator, n_resamples: int) -> np.ndarray:
    size = diffs.size
    block = max(1, _BLOCK_CELLS // size)
    parts = []
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        parts.append(diffs[rng.integers(0, size, size=(rows, size))].mean(axis=1))
    return np.concatenate(parts)


def paired_randomization_test(
    base: Sequence[float],
    new: Sequence[float],
    rng: np.random.Generator,
    n_permutations: int = 10_000,
    exact_max_n: int = 12,
) -> float:
    """Two-sided p-value for "mean of new - base is 0" by flipping the sign of each difference.

    Under the null hypothesis each question's difference is as likely to have either sign. With
    at most `exact_max_n` questions all 2**n sign patterns are enumerated and the p-value is the
    exact share whose |sum| reaches the observed |sum|. Above that, `n_permutations` random
    patterns are drawn and the p-value is (count + 1) / (n_permutations + 1), which counts the
    observed pattern itself and so is never 0.
    """
    if n_permutations < 1:
        raise InputError(f"n_permutations must be at least 1, got {n_permutations!r}")
    if not 0 <= exact_max_n <= _EXACT_LIMIT:
        raise InputError(f"exact_max_n must be between 0 and {_EXACT_LIMIT}, got {exact_max_n!r}")
    diffs = paired_differences(base, new)
    observed = abs(float(diffs.sum()))
    # Flipped sums can differ from the observed one by rounding alone; treat those as equal.
    threshold = observed - 1e-9 * max(1.0, float(np.abs(diffs).sum()))
    if diffs.size <= exact_max_n:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=diffs.size)))
        return float(np.mean(np.abs(signs @ diffs) >= threshold))
    hits = _random_flip_hits(diffs, rng, n_permutations, threshold)
    return (hits + 1) / (n_permutations + 1)


def _random_flip_hits(diffs: np.ndarray, rng: np.random.Generator, count: int, threshold: float) -> int:
    block = max(1, _BLOCK_CELLS // diffs.size)
    hits = 0
    for start in range(0, count, block):
        rows = min(block, count - start)
        signs = rng.choice(np.array([1.0, -1.0]), size=(rows, diffs.size))
        hits += int(np.count_nonzero(np.abs(signs @ diffs) >= threshold))
    return hits


def win_tie_loss(base: Sequence[float], new: Sequence[float], eps: float = 1e-9) -> tuple[int, int, int]:
    """Questions where new beats base by more than eps, is within eps, and falls behind by more."""
    if not (eps >= 0 and math.isfinite(eps)):
        raise InputError(f"eps must be a non-negative number, got {eps!r}")
    diffs = paired_differences(base, new)
    wins = int(np.count_nonzero(diffs > eps))
    losses = int(np.count_nonzero(diffs < -eps))
    return wins, diffs.size - wins - losses, losses
