"""The gate's rules: four verdicts for one metric of one group, and the flat tolerance rule.

Deltas are new - base; for a metric where lower is better, the caller passes `lower_is_better`
and the rules read "worse" as a rise. With `tolerance` t and significance level alpha:

* `regression`: the metric moved the wrong way by more than t and the adjusted p-value is below
  alpha;
* `improvement`: the mirror image;
* `equivalent`: the confidence interval of the difference lies inside [-t, +t], so any real
  change is smaller than the tolerance;
* `inconclusive`: none of these. The data cannot tell; the minimum detectable effect says how
  large a change this comparison could have seen.

The tolerance rule (`--gate tolerance`, the earlier behaviour) ignores the statistics: a metric
regresses when it moves the wrong way by more than t. Both compare with a float slack of 1e-9,
so a move of exactly t is within the tolerance.
"""

from __future__ import annotations

import math

from ragqual.errors import InputError

REGRESSION = "regression"
IMPROVEMENT = "improvement"
EQUIVALENT = "equivalent"
INCONCLUSIVE = "inconclusive"
VERDICTS = (REGRESSION, IMPROVEMENT, EQUIVALENT, INCONCLUSIVE)
SLACK = 1e-9
DEFAULT_ALPHA = 0.05


def _check(tolerance: float, alpha: float) -> None:
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise InputError(f"tolerance must be a non-negative number, got {tolerance!r}")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha!r}")


def verdict(
    delta: float, ci_low: float, ci_high: float, p_adjusted: float, tolerance: float,
    lower_is_better: bool = False, alpha: float = DEFAULT_ALPHA,
) -> str:
    """One of VERDICTS for a metric's difference new - base (see the module doc)."""
    _check(tolerance, alpha)
    gain = -delta if lower_is_better else delta
    significant = p_adjusted < alpha
    if significant and gain < -(tolerance + SLACK):
        return REGRESSION
    if significant and gain > tolerance + SLACK:
        return IMPROVEMENT
    if -(tolerance + SLACK) <= ci_low and ci_high <= tolerance + SLACK:
        return EQUIVALENT
    return INCONCLUSIVE


def tolerance_regressed(delta: float, tolerance: float, lower_is_better: bool = False) -> bool:
    """The flat rule: the metric moved the wrong way by more than the tolerance."""
    _check(tolerance, DEFAULT_ALPHA)
    worsening = delta if lower_is_better else -delta
    return worsening > tolerance + SLACK
