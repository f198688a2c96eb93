"""Prediction-powered inference (PPI++) for the mean of a judged criterion.

A judge scores every trial of a run cheaply but may be biased; people label only a random
sample. PPI++ (Angelopoulos, Duchi and Zrnic, 2023, "PPI++: Efficient Prediction-Powered
Inference") combines the two:

    estimate = lam * mean(judge on unlabelled) + mean(human - lam * judge on labelled)

The second term measures the judge's bias on the labelled sample and takes it back out, so the
estimate is unbiased for the human mean however wrong the judge is; a weak judge only widens
the interval. `lam` in [0, 1] is tuned from the data to minimise the variance (lam = 0 is the
labels-only estimate, lam = 1 plain PPI). The interval is the normal (CLT) one.

The formulas follow ppi-python 0.2.3 (`ppi_mean_ci`, `ppi_mean_pointestimate`, `_calc_lam_glm`
for a scalar mean) so results can be checked against it; the tests do.

The labelled trials must be a uniform random sample of the judged ones, and `yhat_unlabeled`
holds the judge's scores of the other trials (the two sets disjoint). The judge-only interval
is here to be shown beside the others as what not to trust: it covers the judge's mean, not
the human one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

from ragqual.errors import InputError

Values = Sequence[float] | np.ndarray

ZERO_SPREAD = ("no spread in the sample: the normal interval has zero width and understates the "
               "uncertainty; label more trials")


@dataclass(frozen=True)
class Estimate:
    """A mean with its (1 - alpha) normal interval.

    `method` is `ppi++`, `labels-only` or `judge-only`; `lam` is the PPI weight given to the
    judge (None for the other two); `n` counts human labels, `N` judge-only trials.
    """

    estimate: float
    low: float
    high: float
    se: float
    lam: float | None
    n: int
    N: int
    method: str
    alpha: float = 0.05
    note: str | None = None

    @property
    def width(self) -> float:
        """Full width of the interval (high - low)."""
        return self.high - self.low

    def as_dict(self) -> dict[str, object]:
        """Plain JSON-ready fields, width included (for audit payloads and JSON reports)."""
        return {**asdict(self), "width": self.width}


def _array(values: Values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a flat sequence of numbers")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} holds a value that is not a finite number")
    return arr


def _z(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}")
    return NormalDist().inv_cdf(1 - alpha / 2)


def _interval(estimate: float, se: float, alpha: float, lam: float | None, n: int, N: int, method: str) -> Estimate:
    half = _z(alpha) * se
    note = ZERO_SPREAD if se == 0 else None
    return Estimate(estimate, estimate - half, estimate + half, se, lam, n, N, method, alpha, note)


def tuned_lambda(y_labeled: Values, yhat_labeled: Values, yhat_unlabeled: Values) -> float:
    """The variance-minimising PPI++ weight, clipped to [0, 1].

    lam = Cov(Y, f) / ((1 + n/N) Var(f)), with the covariance from the labelled pairs (divided
    by n) and the judge's variance from all its scores (divided by n + N - 1), as ppi-python
    computes it. A judge whose scores never vary carries no information: lam = 0.
    """
    y, f, fu = _checked(y_labeled, yhat_labeled, yhat_unlabeled)
    return _tuned_lambda(y, f, fu)


def _tuned_lambda(y: np.ndarray, f: np.ndarray, fu: np.ndarray) -> float:
    n, N = len(y), len(fu)
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    var_f = float(np.var(np.concatenate([f, fu]), ddof=1))
    if var_f == 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / N) * var_f), 0.0, 1.0))


def _checked(y_labeled: Values, yhat_labeled: Values, yhat_unlabeled: Values) -> tuple[np.ndarray, ...]:
    y, f = _array(y_labeled, "human labels"), _array(yhat_labeled, "judge scores of labelled trials")
    fu = _array(yhat_unlabeled, "judge scores of unlabelled trials")
    if len(y) != len(f):
        raise InputError(f"{len(y)} human labels but {len(f)} judge scores for them")
    if len(y) < 2:
        raise InputError(f"an interval needs at least 2 human labels, got {len(y)}")
    if len(fu) < 1:
        raise InputError("no judge-scored trial without a label: use the labels-only interval")
    return y, f, fu


def ppi_mean_ci(y_labeled: Values, yhat_labeled: Values, yhat_unlabeled: Values, alpha: float = 0.05,
                lam: float | None = None) -> Estimate:
    """PPI++ estimate of the human mean with its normal (1 - alpha) interval.

    `lam=None` tunes the weight from the data (PPI++); `lam=1` is plain PPI, `lam=0` the
    labels-only mean. The standard error adds the judge term's and the correction term's
    variances (population variances, as ppi-python does), the two samples being independent.
    """
    y, f, fu = _checked(y_labeled, yhat_labeled, yhat_unlabeled)
    weight = _tuned_lambda(y, f, fu) if lam is None else float(lam)
    estimate = float(weight * fu.mean() + (y - weight * f).mean())
    se = math.sqrt(float(np.var(weight * fu)) / len(fu) + float(np.var(y - weight * f)) / len(y))
    return _interval(estimate, se, alpha, lam=weight, n=len(y), N=len(fu), method="ppi++")


def classical_mean_ci(y_labeled: Values, alpha: float = 0.05) -> Estimate:
    """Labels-only mean with its normal interval (what the labels say without the judge)."""
    y = _array(y_labeled, "human labels")
    if len(y) < 2:
        raise InputError(f"an interval needs at least 2 human labels, got {len(y)}")
    se = float(np.std(y)) / math.sqrt(len(y))
    return _interval(float(y.mean()), se, alpha, lam=None, n=len(y), N=0, method="labels-only")


def judge_only_mean_ci(yhat_all: Values, alpha: float = 0.05) -> Estimate:
    """The naive interval from judge scores alone: valid for the judge's mean, not the human one.

    Shown beside the PPI interval so a reader sees how far a biased judge would mislead.
    """
    f = _array(yhat_all, "judge scores")
    if len(f) < 2:
        raise InputError(f"an interval needs at least 2 judge scores, got {len(f)}")
    se = float(np.std(f)) / math.sqrt(len(f))
    return _interval(float(f.mean()), se, alpha, lam=None, n=0, N=len(f), method="judge-only")


def ppi_paired_diff_ci(y_a: Values, y_b: Values, yhat_a: Values, yhat_b: Values, yhat_a_unlabeled: Values,
                       yhat_b_unlabeled: Values, alpha: float = 0.05, lam: float | None = None) -> Estimate:
    """PPI++ interval for mean(run a) - mean(run b) on the same questions.

    Both runs answered the same questions; people labelled both answers on one random sample of
    them (`y_a[i]`, `y_b[i]` and the judge's `yhat_a[i]`, `yhat_b[i]` belong to the same
    question), and the judge scored both answers to the other questions. PPI is applied to the
    per-question difference, so what the questions share cancels out.
    """
    ya, yb = _array(y_a, "human labels of run a"), _array(y_b, "human labels of run b")
    fa, fb = _array(yhat_a, "judge scores of run a"), _array(yhat_b, "judge scores of run b")
    ua, ub = _array(yhat_a_unlabeled, "unlabelled judge scores of run a"), _array(
        yhat_b_unlabeled, "unlabelled judge scores of run b")
    if not len(ya) == len(yb) == len(fa) == len(fb):
        raise InputError(f"paired labels and scores differ in length: {len(ya)}, {len(yb)}, {len(fa)}, {len(fb)}")
    if len(ua) != len(ub):
        raise InputError(f"unlabelled judge scores differ in length: {len(ua)} for run a, {len(ub)} for run b")
    return ppi_mean_ci(ya - yb, fa - fb, ua - ub, alpha=alpha, lam=lam)


@dataclass(frozen=True)
class Moments:
    """What a power analysis needs from a pilot: the human labels' variance, the judge's
    variance and their covariance (population moments)."""

    var_y: float
    var_f: float
    cov: float


def pilot_moments(y_pilot: Values, yhat_pilot: Values, yhat_all: Values | None = None) -> Moments:
    """Moments from a pilot sample; the judge's variance from all its scores when given."""
    y, f = _array(y_pilot, "pilot labels"), _array(yhat_pilot, "pilot judge scores")
    if len(y) != len(f) or len(y) < 2:
        raise InputError(f"a pilot needs at least 2 labelled trials with judge scores, got {len(y)} and {len(f)}")
    var_f = float(np.var(f)) if yhat_all is None else float(np.var(_array(yhat_all, "judge scores")))
    return Moments(float(np.var(y)), var_f, float(np.mean((y - y.mean()) * (f - f.mean()))))


def planned_se(n: int, n_unlabeled: int, moments: Moments) -> float:
    """Standard error of the PPI++ mean with n labels, n_unlabeled judge-only trials and the
    lambda PPI++ would tune for them (the estimator's variance formula, at the pilot moments)."""
    return float(_planned_se(np.asarray(n, dtype=float), np.asarray(n_unlabeled, dtype=float), moments))


def _planned_se(n: np.ndarray, n_unlabeled: np.ndarray, moments: Moments) -> np.ndarray:
    m = moments
    if m.var_f == 0:
        lam = np.zeros_like(n, dtype=float)
    else:
        lam = np.clip(m.cov / ((1 + n / n_unlabeled) * m.var_f), 0.0, 1.0)
    var = lam**2 * m.var_f / n_unlabeled + (m.var_y - 2 * lam * m.cov + lam**2 * m.var_f) / n
    se: np.ndarray = np.sqrt(np.maximum(var, 0.0))
    return se


def planned_width(n: int, n_total: int, moments: Moments, alpha: float = 0.05) -> float:
    """Expected full width of the PPI++ interval with n of the n_total judged trials labelled."""
    if not 2 <= n < n_total:
        raise InputError(f"a plan labels between 2 and {n_total - 1} of {n_total} trials, got {n}")
    return 2 * _z(alpha) * planned_se(n, n_total - n, moments)


def labels_needed(width: float, y_pilot: Values, yhat_pilot: Values, n_total: int, alpha: float = 0.05,
                  yhat_all: Values | None = None) -> int:
    """Fewest labels (in all, pilot included) for a PPI++ interval of the given full width.

    The run has `n_total` judge-scored trials; labelling n of them leaves n_total - n judge-only.
    The width follows the estimator's variance with the tuned lambda, at the moments of the
    pilot labels (so a better judge needs fewer labels). Every n is tried (a clipped lambda can
    make the width non-monotone near n_total), and a width no n reaches is refused naming the
    narrowest one reachable.
    """
    if width <= 0:
        raise InputError(f"the target width must be positive, got {width}")
    if n_total < 3:
        raise InputError(f"a plan needs a run of at least 3 judged trials, got {n_total}")
    moments = pilot_moments(y_pilot, yhat_pilot, yhat_all)
    ns = np.arange(2, n_total)
    widths = 2 * _z(alpha) * _planned_se(ns, n_total - ns, moments)
    reached = np.flatnonzero(widths <= width)
    if len(reached) == 0:
        raise InputError(f"a width of {width:g} is out of reach with {n_total} judged trials: the narrowest "
                         f"planned interval is about {float(widths.min()):.3g} wide")
    return int(ns[reached[0]])
