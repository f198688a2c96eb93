"""The four verdicts and the tolerance rule, by hand and as properties."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragqual.core.verdicts import (
    EQUIVALENT,
    IMPROVEMENT,
    INCONCLUSIVE,
    REGRESSION,
    tolerance_regressed,
    verdict,
)
from ragqual.errors import InputError


@pytest.mark.parametrize("delta, lo, hi, p, expected", [
    (-0.05, -0.08, -0.02, 0.01, REGRESSION),
    (-0.05, -0.08, -0.02, 0.06, INCONCLUSIVE),     # not significant after adjustment
    (-0.01, -0.015, -0.005, 0.001, EQUIVALENT),    # significant but smaller than the tolerance: interval inside
    (-0.02, -0.05, 0.01, 0.001, INCONCLUSIVE),     # exactly the tolerance is not beyond it; interval too wide
    (0.05, 0.02, 0.08, 0.01, IMPROVEMENT),
    (0.0, -0.019, 0.019, 1.0, EQUIVALENT),
    (0.0, -0.021, 0.019, 1.0, INCONCLUSIVE),
    (-0.05, -0.08, -0.02, 0.049999, REGRESSION),
    (-0.05, -0.08, -0.02, 0.05, INCONCLUSIVE),     # p must be below alpha
])
def test_verdicts_by_hand(delta, lo, hi, p, expected):
    assert verdict(delta, lo, hi, p, tolerance=0.02) == expected


def test_lower_is_better_reads_a_rise_as_the_regression():
    assert verdict(0.05, 0.02, 0.08, 0.01, 0.02, lower_is_better=True) == REGRESSION
    assert verdict(-0.05, -0.08, -0.02, 0.01, 0.02, lower_is_better=True) == IMPROVEMENT


def test_alpha_is_a_parameter():
    assert verdict(-0.05, -0.08, -0.02, 0.03, 0.02, alpha=0.01) == INCONCLUSIVE


def test_bad_tolerance_or_alpha_is_refused():
    with pytest.raises(InputError):
        verdict(0, 0, 0, 1, tolerance=-1)
    with pytest.raises(InputError):
        verdict(0, 0, 0, 1, tolerance=0.02, alpha=1.5)


@pytest.mark.parametrize("delta, tolerance, expected", [(-0.25, 0.25, False), (-0.26, 0.25, True),
                                                        (0.48 - 0.5, 0.02, False), (0.47 - 0.5, 0.02, True),
                                                        (0.0, 0.0, False)])
def test_tolerance_rule_keeps_the_float_slack(delta, tolerance, expected):
    assert tolerance_regressed(delta, tolerance) is expected


finite = st.floats(-1, 1, allow_nan=False)


@given(finite, finite, finite, st.floats(0, 1), st.floats(0, 0.5), st.booleans())
def test_swapping_sides_mirrors_the_verdict(delta, a, b, p, tolerance, lower):
    lo, hi = min(a, b), max(a, b)
    forward = verdict(delta, lo, hi, p, tolerance, lower)
    backward = verdict(-delta, -hi, -lo, p, tolerance, lower)
    mirror = {REGRESSION: IMPROVEMENT, IMPROVEMENT: REGRESSION, EQUIVALENT: EQUIVALENT, INCONCLUSIVE: INCONCLUSIVE}
    assert backward == mirror[forward]


@given(st.floats(0, 1), st.floats(0, 0.5), st.floats(0, 0.3), st.booleans())
def test_no_change_is_never_a_regression(p, tolerance, half_width, lower):
    assert verdict(0.0, -half_width, half_width, p, tolerance, lower) in (EQUIVALENT, INCONCLUSIVE)
