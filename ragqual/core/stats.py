"""Paired statistics over questions: the same questions scored by a base run and a new run.

Every function works on the per-question differences new - base. Randomness comes only from the
`numpy.random.Generator` passed in, so a seeded comparison is reproducible.
"""

from __future__ import annotations

import itertools
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from ragqual.errors import InputError

# Resampled means are computed in blocks of about this many cells to bound memory.
_BLOCK_CELLS = 1_000_000
# Exact enumeration builds all 2**n sign patterns at once; beyond this it would not fit in memory.
_EXACT_LIMIT = 16
_SIGNS = np.array([1.0, -1.0])
_SIGN_BIT = np.uint64(1 << 63)
_ONE_BITS = np.uint64(0x3FF0000000000000)  # the bits of 1.0; with the sign bit set, -1.0


def signed_sums(signs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each sign pattern's sum of +-values (`signs @ values`), without BLAS: a matrix-vector
    product of a few thousand patterns is ~1 ms in numpy's own loop, but OpenBLAS spreads it over
    every core and took 6-8 ms on a 2-core machine with other work running, and its result's last
    bit depended on its thread count."""
    sums: np.ndarray = np.einsum("ij,j->i", signs, values)
    return sums


def flip_signs(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """`rng.choice([1.0, -1.0], size=(rows, n))`: the same numbers, leaving the generator in the
    same state, about four times faster (it was most of a `compare`'s randomization tests).

    For a range of two, numpy draws each index from one 32-bit half of the generator's 64-bit
    words (low half first; a half left over waits in the generator for the next draw) and takes
    its top bit. Here the words are drawn raw and each half's top bit becomes the sign bit of 1.0,
    so no index array and no float take is built. Any generator other than PCG64 on a
    little-endian machine goes through `choice` itself.
    """
    bits = rng.bit_generator
    count = rows * n
    if count == 0 or type(bits) is not np.random.PCG64 or sys.byteorder != "little":
        return rng.choice(_SIGNS, size=(rows, n))
    state = bits.state
    lead = int(state["has_uint32"])
    if lead:  # the half a previous draw left waiting comes first
        bits.state = {**state, "has_uint32": 0}
    words = (count - lead + 1) // 2
    raw = bits.random_raw(words)
    halves = np.empty(lead + 2 * words, np.uint64)
    if lead:
        halves[0] = np.uint64(state["uinteger"]) << np.uint64(32)
    np.left_shift(raw, np.uint64(32), out=halves[lead::2])  # a low half's top bit moved to bit 63
    halves[lead + 1::2] = raw  # a high half's top bit is bit 63 already
    if (count - lead) % 2:  # the last word's high half is left waiting, as numpy leaves it
        bits.state = {**bits.state, "has_uint32": 1, "uinteger": int(raw[-1] >> np.uint64(32))}
    halves &= _SIGN_BIT
    halves |= _ONE_BITS
    return halves[:count].view(np.float64).reshape(rows, n)


# A comparison keeps drawn sign patterns up to this many cells (8 bytes each) for reuse.
_KEEP_CELLS = 8_000_000


class SignPatterns:
    """Random sign patterns for sign-flip tests, drawn once per stream and width and shared.

    A comparison tests many metrics over the same questions; under each metric's null hypothesis
    any fixed set of random sign patterns gives a valid test, so the metrics of one group can
    share one set instead of drawing 10,000 x n signs each (most of a `compare`'s time). The
    patterns of a (stream, width) come from `generator(stream, width)` alone, so a test's result
    does not depend on which tests ran before it or on whether its patterns were kept: patterns
    over the `keep_cells` budget are dropped (least recently used first) and drawn again, the same,
    when asked. `from_generator` wraps one generator for a single test, drawing exactly as before.
    """

    def __init__(self, generator: Callable[[str, int], np.random.Generator], keep_cells: int = _KEEP_CELLS):
        self._generator = generator
        self._keep_cells = keep_cells
        self._kept: dict[tuple[str, int, int], list[np.ndarray]] = {}
        self._unit_sums: dict[tuple[str, int, int], np.ndarray] = {}

    @classmethod
    def from_generator(cls, rng: np.random.Generator) -> SignPatterns:
        """Patterns drawn from `rng` for one test, in the blocks and order the tests always used."""
        return cls(lambda stream, width: rng, keep_cells=0)

    def sums(self, stream: str, values: np.ndarray, sizes: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """For each of `count` patterns s of width `values.size`: (s . values, s . sizes)."""
        key = (stream, values.size, count)
        kept = self._kept.pop(key, None)
        if kept is not None:  # the most recently used set is the last to be dropped
            self._kept[key] = kept
        blocks = kept if kept is not None else self._draw(key)
        unit = bool(np.all(sizes == 1.0))
        if unit and key in self._unit_sums:
            return np.concatenate([signed_sums(b, values) for b in blocks]), self._unit_sums[key]
        parts, part_sizes = [], []
        for signs in blocks:
            parts.append(signed_sums(signs, values))
            part_sizes.append(signed_sums(signs, sizes))
        flipped, flipped_sizes = np.concatenate(parts), np.concatenate(part_sizes)
        if unit and key in self._kept:
            self._unit_sums[key] = flipped_sizes
        return flipped, flipped_sizes

    def _draw(self, key: tuple[str, int, int]) -> Iterable[np.ndarray]:
        stream, width, count = key
        rng = self._generator(stream, width)
        block = max(1, _BLOCK_CELLS // width)
        drawn = (flip_signs(rng, min(block, count - start), width) for start in range(0, count, block))
        if width * count > self._keep_cells:
            return drawn
        while self._kept and sum(k[1] * k[2] for k in self._kept) + width * count > self._keep_cells:
            oldest = next(iter(self._kept))
            del self._kept[oldest]
            self._unit_sums.pop(oldest, None)
        kept = self._kept[key] = list(drawn)
        return kept


class BootstrapCI(NamedTuple):
    mean_diff: float
    lo: float
    hi: float


def paired_differences(base: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray) -> np.ndarray:
    """new - base per question; both sequences must be non-empty, equally long and finite."""
    b = np.asarray(base, dtype=float)
    n = np.asarray(new, dtype=float)
    if b.ndim != 1 or b.shape != n.shape:
        raise InputError(f"paired values need equal lengths, got {len(base)} and {len(new)}")
    if b.size == 0:
        raise InputError("paired values: no questions")
    if not (np.isfinite(b).all() and np.isfinite(n).all()):
        raise InputError("paired values must be finite numbers")
    diffs: np.ndarray = n - b
    return diffs


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
    base: Sequence[float] | np.ndarray,
    new: Sequence[float] | np.ndarray,
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
        signs = flip_signs(rng, rows, diffs.size)
        hits += int(np.count_nonzero(np.abs(signed_sums(signs, diffs)) >= threshold))
    return hits


def win_tie_loss(base: Sequence[float], new: Sequence[float], eps: float = 1e-9) -> tuple[int, int, int]:
    """Questions where new beats base by more than eps, is within eps, and falls behind by more."""
    if not (eps >= 0 and math.isfinite(eps)):
        raise InputError(f"eps must be a non-negative number, got {eps!r}")
    diffs = paired_differences(base, new)
    wins = int(np.count_nonzero(diffs > eps))
    losses = int(np.count_nonzero(diffs < -eps))
    return wins, diffs.size - wins - losses, losses


# -- binary metrics: McNemar and Newcombe ----------------------------------------------------------

class PairedCounts(NamedTuple):
    """The 2 x 2 table of a binary metric over paired questions (1 = the metric holds).

    `b`: 1 in base, 0 in new; `c`: 0 in base, 1 in new; `a` both 1; `d` both 0.
    """

    a: int
    b: int
    c: int
    d: int

    @property
    def n(self) -> int:
        return self.a + self.b + self.c + self.d


def is_binary(values: Sequence[float]) -> bool:
    """Every value is exactly 0 or 1."""
    return all(v in (0.0, 1.0) for v in values)


def paired_counts(base: Sequence[float], new: Sequence[float]) -> PairedCounts:
    """The 2 x 2 table of two 0/1 sequences over the same questions."""
    paired_differences(base, new)
    if not (is_binary(base) and is_binary(new)):
        raise InputError("paired counts need values that are all 0 or 1")
    pairs = list(zip(base, new, strict=True))
    return PairedCounts(
        a=sum(1 for x, y in pairs if x == 1 and y == 1), b=sum(1 for x, y in pairs if x == 1 and y == 0),
        c=sum(1 for x, y in pairs if x == 0 and y == 1), d=sum(1 for x, y in pairs if x == 0 and y == 0),
    )


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: the binomial test of b against b + c trials at one half.

    Twice the smaller tail, capped at 1 (as statsmodels' `mcnemar(exact=True)` and scipy's
    `binomtest(b, b + c, 0.5)`); no discordant question at all gives 1. Exact for any b + c: the
    tail is summed from its largest term down, each term a ratio of the one before, with the
    largest term computed without forming C(n, k) or 2**n (see `binomial_half_pmf`).
    """
    if b < 0 or c < 0:
        raise InputError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if abs(b - c) <= 1:  # the smaller tail holds half the mass or more: exactly 1
        return 1.0
    return min(1.0, 2.0 * binomial_half_lower_tail(min(b, c), n))


def binomial_half_lower_tail(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2) and 0 <= k <= n / 2.

    The terms P(X = j) shrink by j / (n - j + 1) < 1 from j = k down, so the sum starts at the
    largest term and stops once what is left (at most term * r / (1 - r)) cannot change it.
    """
    if not 0 <= 2 * k <= n:
        raise InputError(f"the lower tail needs 0 <= k <= n / 2, got k={k}, n={n}")
    term = binomial_half_pmf(k, n)
    total = 0.0
    for j in range(k, -1, -1):
        total += term
        ratio = j / (n - j + 1)
        term *= ratio
        if term * ratio <= total * (1.0 - ratio) * 2.0**-60:
            break
    return min(1.0, total)


_LN_SQRT_2PI = 0.5 * math.log(2 * math.pi)
# Stirling-series coefficients of log(n!) - log(sqrt(2 pi n) (n / e)**n): 1/12, 1/360, 1/1260, ...
_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188


def binomial_half_pmf(k: int, n: int) -> float:
    """P(X = k) for X ~ Binomial(n, 1/2), to a few units in the last place for any n.

    Loader's saddle-point form (the one R's `dbinom` uses): the error terms of Stirling's
    formula and the deviance `bd0` are each small and computed directly, so no large logarithm
    has to cancel against another (as log C(n, k) - n log 2 would, losing n * 1e-16).
    """
    if not 0 <= k <= n:
        return 0.0
    if k in (0, n):
        return math.ldexp(1.0, -n)  # exactly 2**-n, 0.0 below the smallest subnormal
    half = n / 2
    log_core = (_stirling_error(n) - _stirling_error(k) - _stirling_error(n - k)
                - _deviance(k, half) - _deviance(n - k, half))
    return math.exp(log_core) * math.sqrt(n / (2 * math.pi * k * (n - k)))


def _stirling_error(n: int) -> float:
    """log(n!) - log(sqrt(2 pi n) (n / e)**n)."""
    if n <= 15:
        return math.lgamma(n + 1) - (n + 0.5) * math.log(n) + n - _LN_SQRT_2PI
    nn = float(n) * n
    if n > 500:
        return (_S0 - _S1 / nn) / n
    if n > 80:
        return (_S0 - (_S1 - _S2 / nn) / nn) / n
    if n > 35:
        return (_S0 - (_S1 - (_S2 - _S3 / nn) / nn) / nn) / n
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / n


def _deviance(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x, without cancellation: by its series in v = (x - mean) / (x + mean),
    whose terms all have one sign, unless |v| > 0.9, where the two parts no longer nearly cancel."""
    if abs(x - mean) > 0.9 * (x + mean):
        return x * math.log(x / mean) + mean - x
    v = (x - mean) / (x + mean)
    s = (x - mean) * v
    ej = 2 * x * v
    v *= v
    for j in range(1, 1000):
        ej *= v
        s_next = s + ej / (2 * j + 1)
        if s_next == s:
            return s
        s = s_next
    return s


def mcnemar_min_discordant(alpha: float = 0.05) -> int:
    """The fewest discordant questions, all moving one way, that the exact McNemar test calls
    significant at `alpha` (6 at 0.05: 2 / 2**6 = 0.031)."""
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha!r}")
    k = 1
    while mcnemar_exact(k, 0) >= alpha:
        k += 1
    return k


def normal_quantile(p: float) -> float:
    """The standard normal distribution's p-quantile."""
    return NormalDist().inv_cdf(p)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (no continuity correction)."""
    if n <= 0 or not 0 <= successes <= n:
        raise InputError(f"a proportion needs 0 <= successes <= n and n > 0, got {successes}/{n}")
    z = normal_quantile(1 - (1 - confidence) / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def question_mean_halfwidth(per_question: Sequence[float], confidence: float = 0.95) -> float | None:
    """Half-width of the normal-approximation interval of a mean over questions (z * sd / sqrt(n),
    sample sd); None with fewer than two questions, where no spread can be measured."""
    n = len(per_question)
    if n < 2:
        return None
    z = normal_quantile(1 - (1 - confidence) / 2)
    return z * statistics.stdev(per_question) / math.sqrt(n)


def newcombe_paired_interval(counts: PairedCounts, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe's (1998, method 10) interval for p_new - p_base over paired binary outcomes.

    Square-and-add of the two Wilson intervals, corrected by the continuity-adjusted correlation
    phi of the 2 x 2 table (0 when a margin is empty), as in Newcombe, Stat. Med. 17:2635-2650.
    """
    n = counts.n
    if n == 0:
        raise InputError("paired counts: no questions")
    p_new, p_base = (counts.a + counts.c) / n, (counts.a + counts.b) / n
    l_new, u_new = wilson_interval(counts.a + counts.c, n, confidence)
    l_base, u_base = wilson_interval(counts.a + counts.b, n, confidence)
    phi = _newcombe_phi(counts)
    delta = p_new - p_base
    below = math.sqrt(max(0.0, (p_new - l_new) ** 2 - 2 * phi * (p_new - l_new) * (u_base - p_base)
                          + (u_base - p_base) ** 2))
    above = math.sqrt(max(0.0, (u_new - p_new) ** 2 - 2 * phi * (u_new - p_new) * (p_base - l_base)
                          + (p_base - l_base) ** 2))
    return max(-1.0, delta - below), min(1.0, delta + above)


def _newcombe_phi(counts: PairedCounts) -> float:
    a, b, c, d = counts
    n = counts.n
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    cross = a * d - b * c
    corrected = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0.0)
    return corrected / math.sqrt(margins)


# -- clusters: questions that are not independent ---------------------------------------------------

def shared_item_clusters(items: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Question -> cluster number, where questions sharing any item (a relevant document) are one
    cluster, transitively; a question with no items is a cluster of its own. Clusters are
    numbered in the sorted order of their first question, so the result is deterministic."""
    parent = {q: q for q in items}

    def root(q: str) -> str:
        while parent[q] != q:
            parent[q] = parent[parent[q]]
            q = parent[q]
        return q

    owner: dict[str, str] = {}
    for q in sorted(items):
        for item in items[q]:
            if item in owner:
                parent[root(q)] = root(owner[item])
            else:
                owner[item] = q
    numbers: dict[str, int] = {}
    return {q: numbers.setdefault(root(q), len(numbers)) for q in sorted(items)}


def _cluster_sums(diffs: np.ndarray, clusters: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(clusters)
    if labels.shape != diffs.shape:
        raise InputError(f"one cluster per question needed, got {labels.size} for {diffs.size}")
    _, index = np.unique(labels, return_inverse=True)
    return np.bincount(index, weights=diffs), np.bincount(index)


def cluster_bootstrap_ci(
    base: Sequence[float], new: Sequence[float], clusters: Sequence[int], rng: np.random.Generator,
    n_resamples: int = 10_000, confidence: float = 0.95,
) -> BootstrapCI:
    """Percentile bootstrap of the mean difference resampling whole clusters with replacement;
    each resample's mean is its summed differences over its question count."""
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be between 0 and 1, got {confidence!r}")
    if n_resamples < 1:
        raise InputError(f"n_resamples must be at least 1, got {n_resamples!r}")
    diffs = paired_differences(base, new)
    sums, sizes = _cluster_sums(diffs, clusters)
    k = sums.size
    block = max(1, _BLOCK_CELLS // k)
    means = []
    for start in range(0, n_resamples, block):
        picks = rng.integers(0, k, size=(min(block, n_resamples - start), k))
        means.append(sums[picks].sum(axis=1) / sizes[picks].sum(axis=1))
    alpha = 1 - confidence
    lo, hi = np.quantile(np.concatenate(means), [alpha / 2, 1 - alpha / 2])
    return BootstrapCI(float(diffs.mean()), float(lo), float(hi))


def cluster_randomization_test(
    base: Sequence[float], new: Sequence[float], clusters: Sequence[int], rng: np.random.Generator,
    n_permutations: int = 10_000, exact_max_n: int = 12,
) -> float:
    """The sign-flip test with one sign per cluster: under the null hypothesis a cluster's summed
    difference is as likely to have either sign (the same p-value rules as
    `paired_randomization_test`, over cluster sums)."""
    diffs = paired_differences(base, new)
    sums, _ = _cluster_sums(diffs, clusters)
    return paired_randomization_test(np.zeros_like(sums), sums, rng, n_permutations, exact_max_n)


# -- power -------------------------------------------------------------------------------------------

def standard_error(base: Sequence[float], new: Sequence[float], clusters: Sequence[int] | None = None) -> float:
    """Standard error of the mean paired difference: sd / sqrt(n), or with clusters the
    cluster-robust (sandwich) form sqrt(sum over clusters of (cluster sum - size * mean)^2) / n."""
    diffs = paired_differences(base, new)
    n = diffs.size
    if clusters is None:
        return float(diffs.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    sums, sizes = _cluster_sums(diffs, clusters)
    if sums.size < 2:
        return 0.0
    residual = sums - sizes * diffs.mean()
    correction = sums.size / (sums.size - 1)
    return float(math.sqrt(correction * float(np.sum(residual**2))) / n)


def minimum_detectable_effect(se: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true mean difference a two-sided test at `alpha` detects with `power`,
    given the standard error of the mean difference: (z_{1-alpha/2} + z_{power}) * se."""
    if not (0 < alpha < 1 and 0 < power < 1):
        raise InputError(f"alpha and power must be between 0 and 1, got {alpha!r} and {power!r}")
    if not (se >= 0 and math.isfinite(se)):
        raise InputError(f"standard error must be a non-negative number, got {se!r}")
    return (normal_quantile(1 - alpha / 2) + normal_quantile(power)) * se


# Relative size below which a standard error is float noise around zero (the std of n equal
# differences is ~1e-17 of their size, not 0).
_NO_SPREAD = 1e-12


def too_few_to_detect(units: int, alpha: float = 0.05) -> bool:
    """True when a two-sided sign-flip test over `units` paired units can never reach `alpha`:
    its smallest p-value, every unit moving the same way, is 2 / 2**units."""
    return units < 1 or 2.0 ** (1 - units) > alpha


def detectable_effect(
    base: Sequence[float], new: Sequence[float], *, binary: bool, clusters: Sequence[int] | None = None,
    alpha: float = 0.05, power: float = 0.8,
) -> float | None:
    """The minimum detectable effect of a paired comparison, or None when there is none to state.

    The rule, for the unit the tests resample (questions, or clusters with `clusters`):

    * From the observed paired variance: `minimum_detectable_effect(standard_error(...))`.
    * A graded metric whose paired differences have no spread (standard error 0: every pair
      identical, every question moved by the same amount, a single question or cluster, or cluster
      means all equal) has no MDE: None, shown as `-`. The normal approximation would give 0,
      claiming any change visible, while the data hold no estimate of how much a real change would
      vary from question to question. Such a metric is still judged: identical pairs give the
      interval [0, 0] and so `equivalent`; a uniform move is judged by its p-value and interval.
    * A graded metric compared over too few units for the sign-flip test to ever reach `alpha`
      has no MDE either (None): with m questions (or clusters) its smallest two-sided p-value is
      2 / 2**m, above 0.05 for m <= 5, so no change of any size can be called significant.
    * A binary metric (exact McNemar) is never below k / n, where k is the fewest questions that
      must all flip one way for the test to reach `alpha` (6 at 0.05) and 1 / n the step the metric
      moves in: a smaller change can never be significant. This floor holds without spread too.
    """
    if not binary and too_few_to_detect(len(set(clusters)) if clusters is not None else len(base), alpha):
        return None
    se = standard_error(base, new, clusters)
    scale = max(1.0, float(np.max(np.abs(paired_differences(base, new)))))
    mde = minimum_detectable_effect(se, alpha, power) if se > _NO_SPREAD * scale else None
    if not binary:
        return mde
    floor = mcnemar_min_discordant(alpha) / len(base)
    return floor if mde is None else max(mde, floor)


# -- intervals by inverting the test beside them -----------------------------------------------------
#
# An interval printed beside a p-value must agree with it: it excludes 0 exactly when the test
# rejects "no difference" at alpha. Each interval below is the set of shifts delta that the same
# test, run on the data moved by delta, does not reject at alpha (a test-inverted interval).

class TestInterval(NamedTuple):
    """A test's two-sided p-value for "no difference" and its inverted interval for the mean
    difference (bounds may be infinite when no shift at all can be rejected)."""

    mean_diff: float
    lo: float
    hi: float
    p_value: float


# Bisection stops when the bracket is this small relative to the spread of the units.
_BISECT_RELATIVE = 1e-10
_BISECT_STEPS = 200


def randomization_interval(
    base: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray,
    rng: np.random.Generator | SignPatterns, n_permutations: int = 10_000, exact_max_n: int = 12,
    confidence: float = 0.95, stream: str = "",
) -> TestInterval:
    """The sign-flip randomization test of `paired_randomization_test` and its inverted interval.

    One set of sign patterns (all 2**n with at most `exact_max_n` questions, else `n_permutations`
    drawn from `rng` exactly as `paired_randomization_test` draws them, so the same generator state
    gives the same p-value) serves every shift delta: p(delta) is the test of the differences
    d_i - delta. The interval is {delta : p(delta) >= 1 - confidence}, its ends found by bisection.
    Given `SignPatterns` instead of a generator, the random patterns are that object's `stream`.
    """
    diffs = paired_differences(base, new)
    return _inverted_sign_flip(diffs, np.ones_like(diffs), _patterns(rng), stream, n_permutations, exact_max_n,
                               confidence)


def cluster_randomization_interval(
    base: Sequence[float], new: Sequence[float], clusters: Sequence[int], rng: np.random.Generator | SignPatterns,
    n_permutations: int = 10_000, exact_max_n: int = 12, confidence: float = 0.95, stream: str = "",
) -> TestInterval:
    """`cluster_randomization_test` and its inverted interval: the same inversion over cluster sums,
    a shift delta of every question moving a cluster's sum by delta times its size."""
    diffs = paired_differences(base, new)
    sums, sizes = _cluster_sums(diffs, clusters)
    return _inverted_sign_flip(sums, sizes.astype(float), _patterns(rng), stream, n_permutations, exact_max_n,
                               confidence, mean_diff=float(diffs.mean()))


def _patterns(rng: np.random.Generator | SignPatterns) -> SignPatterns:
    return rng if isinstance(rng, SignPatterns) else SignPatterns.from_generator(rng)


def _inverted_sign_flip(
    sums: np.ndarray, sizes: np.ndarray, patterns: SignPatterns, stream: str, count: int, exact_max_n: int,
    confidence: float, mean_diff: float | None = None,
) -> TestInterval:
    if count < 1:
        raise InputError(f"n_permutations must be at least 1, got {count!r}")
    if not 0 <= exact_max_n <= _EXACT_LIMIT:
        raise InputError(f"exact_max_n must be between 0 and {_EXACT_LIMIT}, got {exact_max_n!r}")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be between 0 and 1, got {confidence!r}")
    flipped, flipped_sizes, exact = _sign_pattern_sums(sums, sizes, patterns, stream, count, exact_max_n)
    total, weight = float(sums.sum()), float(sizes.sum())

    def p_at(delta: float) -> float:
        observed = abs(total - delta * weight)
        threshold = observed - 1e-9 * max(1.0, float(np.abs(sums - delta * sizes).sum()))
        hits = int(np.count_nonzero(np.abs(flipped - delta * flipped_sizes) >= threshold))
        return hits / flipped.size if exact else (hits + 1) / (count + 1)

    alpha = 1 - confidence
    centre = total / weight
    p_zero = p_at(0.0)
    per_unit = sums / sizes
    span = float(per_unit.max() - per_unit.min()) + 1.0
    lo = _boundary(p_at, alpha, centre, float(per_unit.min()) - span, p_zero)
    hi = _boundary(p_at, alpha, centre, float(per_unit.max()) + span, p_zero)
    return TestInterval(centre if mean_diff is None else mean_diff, min(lo, hi), max(lo, hi), p_zero)


def _sign_pattern_sums(sums: np.ndarray, sizes: np.ndarray, patterns: SignPatterns, stream: str, count: int,
                       exact_max_n: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """For each sign pattern s: (s . sums, s . sizes). The random patterns are drawn in the blocks
    and order `_random_flip_hits` uses."""
    if sums.size <= exact_max_n:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=sums.size)))
        return signs @ sums, signs @ sizes, True
    flipped, flipped_sizes = patterns.sums(stream, sums, sizes, count)
    return flipped, flipped_sizes, False


def _boundary(p_at: Callable[[float], float], alpha: float, centre: float, far: float, p_zero: float) -> float:
    """The end of {delta : p(delta) >= alpha} between `centre` (p = 1) and `far`, where every unit
    has one sign and p is at its smallest; infinite when even there p >= alpha. The bracket is
    [rejected, accepted]; 0, if it lies inside, is placed by the p-value already computed at 0, so
    the interval excludes 0 exactly when that p-value is below alpha. The accepted end is returned."""
    if p_at(far) >= alpha:
        return math.copysign(math.inf, far - centre)
    rejected, accepted = far, centre
    if min(far, centre) < 0.0 < max(far, centre):
        if p_zero < alpha:
            rejected = 0.0
        else:
            accepted = 0.0
    tolerance = _BISECT_RELATIVE * max(1.0, abs(far - centre))
    for _ in range(_BISECT_STEPS):
        if abs(accepted - rejected) <= tolerance:
            break
        middle = (rejected + accepted) / 2
        if p_at(middle) >= alpha:
            accepted = middle
        else:
            rejected = middle
    return accepted


def mcnemar_interval(counts: PairedCounts, confidence: float = 0.95) -> TestInterval:
    """The exact McNemar test (`mcnemar_exact`) and its inverted interval for p_new - p_base.

    Given the m = b + c discordant questions, c is binomial(m, pi) with pi the share that moved
    0 -> 1; the test is the two-sided binomial test of pi = 1/2. The conditional Clopper-Pearson
    interval for pi (alpha / 2 in each tail) is mapped to the difference scale as (m / n)(2 pi - 1):
    p_new - p_base = (c - b) / n. It excludes 0 exactly when the McNemar p-value is below alpha
    (the side of 1/2 is decided by that p-value). No discordant question gives [0, 0] and p = 1.
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be between 0 and 1, got {confidence!r}")
    n, b, c = counts.n, counts.b, counts.c
    if n == 0:
        raise InputError("paired counts: no questions")
    p = mcnemar_exact(b, c)
    m = b + c
    if m == 0:
        return TestInterval(0.0, 0.0, 0.0, p)
    alpha = 1 - confidence
    rejects_half = p < alpha
    pi_lo = _clopper_pearson_end(c, m, alpha / 2, lower=True, half_rejected=rejects_half and c > b)
    pi_hi = _clopper_pearson_end(c, m, alpha / 2, lower=False, half_rejected=rejects_half and c < b)
    scale = m / n
    return TestInterval((c - b) / n, scale * (2 * pi_lo - 1), scale * (2 * pi_hi - 1), p)


def clopper_pearson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion, (1 - confidence) / 2 per tail."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise InputError(f"a proportion needs 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be between 0 and 1, got {confidence!r}")
    tail = (1 - confidence) / 2
    return (_clopper_pearson_end(successes, trials, tail, lower=True, half_rejected=None),
            _clopper_pearson_end(successes, trials, tail, lower=False, half_rejected=None))


def _clopper_pearson_end(k: int, m: int, tail: float, *, lower: bool, half_rejected: bool | None) -> float:
    """The lower end: the pi with P(X >= k | pi) = tail (0 when k = 0); the upper end: the pi with
    P(X <= k | pi) = tail (1 when k = m). Found by bisection on pi. With `half_rejected` given, 1/2
    is placed on the side that decision says instead of by the tail computed here."""
    if lower and k == 0:
        return 0.0
    if not lower and k == m:
        return 1.0
    estimate = k / m

    def accepted(pi: float) -> bool:
        return (_upper_tail(k, m, pi) if lower else _lower_tail(k, m, pi)) > tail

    rejected_end, accepted_end = (0.0, estimate) if lower else (1.0, estimate)
    if half_rejected is not None and min(rejected_end, accepted_end) < 0.5 < max(rejected_end, accepted_end):
        if half_rejected:
            rejected_end = 0.5
        else:
            accepted_end = 0.5
    for _ in range(_BISECT_STEPS):
        if abs(accepted_end - rejected_end) <= 1e-15:
            break
        middle = (rejected_end + accepted_end) / 2
        if accepted(middle):
            accepted_end = middle
        else:
            rejected_end = middle
    return accepted_end


def _log_binomial_pmf(k: int, m: int, pi: float) -> float:
    return (math.lgamma(m + 1) - math.lgamma(k + 1) - math.lgamma(m - k + 1)
            + (k * math.log(pi) if k else 0.0) + ((m - k) * math.log1p(-pi) if m - k else 0.0))


def _upper_tail(k: int, m: int, pi: float) -> float:
    """P(X >= k) for X ~ binomial(m, pi), 0 < pi < 1, summed in log space (no overflow)."""
    return min(1.0, math.fsum(math.exp(_log_binomial_pmf(j, m, pi)) for j in range(k, m + 1)))


def _lower_tail(k: int, m: int, pi: float) -> float:
    """P(X <= k) for X ~ binomial(m, pi), 0 < pi < 1."""
    return min(1.0, math.fsum(math.exp(_log_binomial_pmf(j, m, pi)) for j in range(k + 1)))
