"""ragqual.core.ppi against ppi-python 0.2.3 (the authors' reference code) and by simulation."""

import numpy as np
import pytest

from ragqual.core.ppi import (
    classical_mean_ci,
    judge_only_mean_ci,
    labels_needed,
    pilot_moments,
    planned_width,
    ppi_mean_ci,
    ppi_paired_diff_ci,
    tuned_lambda,
)
from ragqual.errors import InputError

ppi_py = pytest.importorskip("ppi_py")
from ppi_py.ppi import _calc_lam_glm  # noqa: E402  (the function ppi_mean_ci tunes lambda with)

RTOL = 1e-9


def _judged(rng, n, N, bias=0.15, noise=0.2, binary_judge=False):
    """Binary human labels; a judge score that follows them with bias and noise."""
    y = rng.binomial(1, 0.6, n + N).astype(float)
    f = np.clip(y * 0.7 + bias + rng.normal(0, noise, n + N), 0, 1)
    if binary_judge:
        f = (f > 0.5).astype(float)
    return y[:n], f[:n], f[n:]


def _scalar(value):
    return float(np.ravel(value)[0])


def _reference_lambda(y, f, fu):
    est = ppi_py.ppi_mean_pointestimate(y, f, fu, lam=1)
    return _calc_lam_glm(y[:, None] - est, f[:, None] - est, fu[:, None] - est, np.eye(1), clip=True)


CASES = [(seed, n, N, binary) for seed, (n, N) in enumerate([(30, 300), (100, 1000), (150, 150), (12, 5000),
                                                             (500, 80)]) for binary in (False, True)]


@pytest.mark.parametrize("seed, n, N, binary", CASES)
def test_estimate_lambda_and_interval_match_ppi_python(seed, n, N, binary):
    y, f, fu = _judged(np.random.default_rng(seed), n, N, binary_judge=binary)
    ours = ppi_mean_ci(y, f, fu, alpha=0.05)
    assert ours.lam == pytest.approx(_reference_lambda(y, f, fu), rel=RTOL, abs=1e-15)
    assert ours.estimate == pytest.approx(_scalar(ppi_py.ppi_mean_pointestimate(y, f, fu)), rel=RTOL)
    low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
    assert (ours.low, ours.high) == (pytest.approx(float(low[0]), rel=RTOL), pytest.approx(float(high[0]), rel=RTOL))
    assert (ours.n, ours.N, ours.method) == (n, N, "ppi++")


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_fixed_lambda_and_other_alphas_match_ppi_python(lam, alpha):
    y, f, fu = _judged(np.random.default_rng(42), 60, 400)
    ours = ppi_mean_ci(y, f, fu, alpha=alpha, lam=lam)
    low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=alpha, lam=lam)
    assert ours.low == pytest.approx(float(low[0]), rel=RTOL)
    assert ours.high == pytest.approx(float(high[0]), rel=RTOL)
    assert ours.estimate == pytest.approx(_scalar(ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)), rel=RTOL)


def test_lambda_is_clipped_like_ppi_python():
    rng = np.random.default_rng(5)
    y = rng.binomial(1, 0.5, 400).astype(float)
    squeezed = 0.45 + 0.1 * y  # strongly informative but compressed: unclipped lambda > 1
    against = 1 - y  # anti-correlated: unclipped lambda < 0
    for f in (squeezed, against):
        lam = tuned_lambda(y[:100], f[:100], f[100:])
        assert lam in (0.0, 1.0)
        assert lam == pytest.approx(_reference_lambda(y[:100], f[:100], f[100:]))


@pytest.mark.parametrize("seed", range(4))
def test_classical_interval_matches_ppi_python(seed):
    y = np.random.default_rng(seed).binomial(1, 0.3, 40 + 20 * seed).astype(float)
    ours = classical_mean_ci(y)
    low, high = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert (ours.low, ours.high) == (pytest.approx(low, rel=RTOL), pytest.approx(high, rel=RTOL))
    assert ours.lam is None and ours.method == "labels-only"


def test_lambda_zero_is_the_labels_only_interval():
    y, f, fu = _judged(np.random.default_rng(9), 80, 500)
    ppi0, classical = ppi_mean_ci(y, f, fu, lam=0), classical_mean_ci(y)
    assert (ppi0.low, ppi0.high) == (pytest.approx(classical.low), pytest.approx(classical.high))


def test_a_judge_that_never_varies_gets_no_weight_and_no_nan():
    y = np.array([1.0, 0, 1, 1, 0])
    est = ppi_mean_ci(y, np.ones(5), np.ones(50))
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(0.6)
    assert np.isfinite([est.low, est.high]).all()


def test_zero_spread_is_flagged():
    est = classical_mean_ci([1.0, 1.0, 1.0])
    assert est.width == 0 and "zero width" in est.note
    assert classical_mean_ci([1.0, 0.0]).note is None


def test_bad_inputs_are_refused_with_a_reason():
    with pytest.raises(InputError, match="at least 2 human labels"):
        ppi_mean_ci([1.0], [1.0], [0.5, 0.5])
    with pytest.raises(InputError, match="3 human labels but 2"):
        ppi_mean_ci([1.0, 0, 1], [1.0, 0], [0.5])
    with pytest.raises(InputError, match="no judge-scored trial without a label"):
        ppi_mean_ci([1.0, 0], [1.0, 0], [])
    with pytest.raises(InputError, match="not a finite number"):
        ppi_mean_ci([1.0, float("nan")], [1.0, 0], [0.5])
    with pytest.raises(InputError, match="alpha"):
        ppi_mean_ci([1.0, 0], [1.0, 0], [0.5], alpha=1.5)


# --- paired difference -------------------------------------------------------------------------

def test_paired_difference_is_ppi_on_the_per_question_difference():
    rng = np.random.default_rng(11)
    ya, fa, ua = _judged(rng, 80, 600)
    yb, fb, ub = _judged(rng, 80, 600, bias=0.05)
    ours = ppi_paired_diff_ci(ya, yb, fa, fb, ua, ub)
    low, high = ppi_py.ppi_mean_ci(ya - yb, fa - fb, ua - ub, alpha=0.05)
    assert ours.low == pytest.approx(float(low[0]), rel=RTOL)
    assert ours.high == pytest.approx(float(high[0]), rel=RTOL)
    with pytest.raises(InputError, match="differ in length"):
        ppi_paired_diff_ci(ya, yb[:-1], fa, fb, ua, ub)


def test_paired_difference_covers_a_true_gap_that_the_judge_misreports():
    """Run a is truly 0.10 better; the judge is biased +0.15 on run b only (it prefers b's style),
    so the judge-only difference points the wrong way. PPI covers the true +0.10 in ~95 % of
    2,000 simulated comparisons; the judge-only difference interval almost never does."""
    rng = np.random.default_rng(2026)
    sims, n, N = 2000, 100, 900
    ya = rng.binomial(1, 0.6, (sims, n + N)).astype(float)
    yb = rng.binomial(1, 0.5, (sims, n + N)).astype(float)  # true difference = 0.1
    fa = np.where(rng.random((sims, n + N)) < 0.9, ya, 1 - ya)
    fb = np.where(rng.random((sims, n + N)) < 0.9, yb, 1 - yb)
    fb = np.maximum(fb, rng.binomial(1, 0.3, (sims, n + N)))  # judge says yes 0.15 more often on b
    truth = 0.1
    ppi_hits = naive_hits = 0
    for s in range(sims):
        est = ppi_paired_diff_ci(ya[s, :n], yb[s, :n], fa[s, :n], fb[s, :n], fa[s, n:], fb[s, n:])
        ppi_hits += est.low <= truth <= est.high
        naive = judge_only_mean_ci(fa[s] - fb[s])
        naive_hits += naive.low <= truth <= naive.high
    assert ppi_hits / sims >= 0.93
    assert naive_hits / sims < 0.05


# --- the coverage simulation of the issue ------------------------------------------------------

def _simulated_runs(rng, sims, n, N):
    """Each trial has a latent truth T ~ Bernoulli(0.6). The human label is T with 10 % of
    labels flipped (label noise), so the human mean, the estimand, is 0.9*0.6 + 0.1*0.4 = 0.58.
    The judge says yes whenever T is yes and also on a share of the no's chosen so that its
    yes-rate is 0.73: biased by +0.15 over the human mean."""
    truth = rng.binomial(1, 0.6, (sims, n + N))
    human = np.where(rng.random((sims, n + N)) < 0.1, 1 - truth, truth).astype(float)
    judge = np.maximum(truth, rng.binomial(1, 0.13 / 0.4, (sims, n + N))).astype(float)
    return human, judge, 0.58


def test_ppi_intervals_cover_the_true_mean_however_biased_the_judge_while_judge_only_ones_do_not():
    """150 labels (the most the issue plans for) beside 1,000 judge-only trials. Measured over
    seeds 0-3: PPI covers 94.2-94.5 %, judge-only 0 %; with 100 labels PPI is at 93.5-93.9 %,
    the normal interval's usual shortfall on a small binary sample (labels-only: 93.6-94.5 %)."""
    rng = np.random.default_rng(26)
    sims, n, N = 2000, 150, 1000
    human, judge, true_mean = _simulated_runs(rng, sims, n, N)
    assert judge.mean() - human.mean() == pytest.approx(0.15, abs=0.005)  # the simulation is what it says
    ppi_hits = naive_hits = labels_hits = 0
    ppi_width = labels_width = 0.0
    for s in range(sims):
        est = ppi_mean_ci(human[s, :n], judge[s, :n], judge[s, n:])
        ppi_hits += est.low <= true_mean <= est.high
        ppi_width += est.width
        naive = judge_only_mean_ci(judge[s])
        naive_hits += naive.low <= true_mean <= naive.high
        labels = classical_mean_ci(human[s, :n])
        labels_hits += labels.low <= true_mean <= labels.high
        labels_width += labels.width
    assert ppi_hits / sims >= 0.93
    assert naive_hits / sims < 0.05
    assert labels_hits / sims >= 0.93
    assert ppi_width < labels_width  # the judge, though biased, narrows the interval


# --- power analysis ----------------------------------------------------------------------------

def test_planned_labels_give_about_the_target_width_in_simulation():
    rng = np.random.default_rng(7)
    n_total, target = 2000, 0.10
    pilot_h, pilot_j, _ = _simulated_runs(rng, 1, 300, 0)
    n = labels_needed(target, pilot_h[0], pilot_j[0], n_total)
    assert 2 < n < n_total
    human, judge, _ = _simulated_runs(rng, 400, n, n_total - n)
    widths = [ppi_mean_ci(human[s, :n], judge[s, :n], judge[s, n:]).width for s in range(400)]
    assert np.mean(widths) == pytest.approx(target, rel=0.08)
    # and it is close to the fewest: 20 % fewer labels would miss the target clearly
    fewer = int(0.8 * n)
    human, judge, _ = _simulated_runs(rng, 400, fewer, n_total - fewer)
    widths = [ppi_mean_ci(human[s, :fewer], judge[s, :fewer], judge[s, fewer:]).width for s in range(400)]
    assert np.mean(widths) > target * 1.05


def test_planned_width_is_the_estimators_width_at_known_moments():
    rng = np.random.default_rng(8)
    human, judge, _ = _simulated_runs(rng, 1, 200_000, 0)
    moments = pilot_moments(human[0], judge[0])
    planned = planned_width(100, 1100, moments)
    human, judge, _ = _simulated_runs(rng, 1000, 100, 1000)
    widths = [ppi_mean_ci(human[s, :100], judge[s, :100], judge[s, 100:]).width for s in range(1000)]
    assert np.mean(widths) == pytest.approx(planned, rel=0.03)


def test_a_better_judge_needs_fewer_labels():
    rng = np.random.default_rng(10)
    y = rng.binomial(1, 0.6, 300).astype(float)
    good = np.where(rng.random(300) < 0.95, y, 1 - y)
    poor = np.where(rng.random(300) < 0.70, y, 1 - y)
    assert labels_needed(0.1, y, good, 5000) < labels_needed(0.1, y, poor, 5000)


def test_an_unreachable_width_is_refused_naming_the_best_one():
    y = np.array([1.0, 0, 1, 0, 1, 1, 0, 1])
    with pytest.raises(InputError, match="out of reach with 20 judged trials: the narrowest .* about 0"):
        labels_needed(0.01, y, y * 0.5, 20)
    with pytest.raises(InputError, match="positive"):
        labels_needed(0, y, y, 20)


def test_as_dict_carries_the_width_and_is_json_ready():
    import json

    est = classical_mean_ci([1.0, 0.0, 1.0, 1.0])
    payload = json.loads(json.dumps(est.as_dict()))
    assert payload["width"] == pytest.approx(est.high - est.low)
    assert payload["method"] == "labels-only" and payload["lam"] is None and payload["n"] == 4
