"""Private bounds (skdp/privacy/quantile.py): data_norm and label ranges selected from a public grid, paid for
from the estimator's budget.

data_norm="auto": a private row bound, paid for from the estimator's budget.

Private bounds when the data sit between two grid points, and label ranges that widen with n * epsilon
(issue 33, item 4; user guide: doc/user_guide/bounds.rst).
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from skdp import DPLogisticRegression, DPRidge, PrivacyBudget, PrivacyLedger
from skdp.bounds import label_spread_level, label_width_at, private_label_range, row_norms
from skdp.privacy import BoundedRangeEvent, GaussianEvent, gdp_mu, price, private_quantile
from skdp.linear_model._base import selection_epsilon
from skdp.privacy.quantile import DEFAULT_NORM_GRID, DEFAULT_SIGNED_GRID, grid_counts, point_scores


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = 2 * rng.randn(500, 6)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y


@pytest.mark.parametrize("solver", ["dp_gd", "output_pert", "obj_pert", "dp_svrg"])
def test_auto_bound_is_paid_for_and_never_warns(data, solver):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = DPLogisticRegression(1.0, data_norm="auto", classes=[0, 1], solver=solver, alpha=0.05,
                                   bound_budget_fraction=0.2,
                                   random_state=0).fit(X, y)
        reg = DPRidge(1.0, data_norm="auto", label_bound=3.0, solver=solver, bound_budget_fraction=0.2,
                      random_state=0).fit(X, X[:, 0])
    for est in (clf, reg):
        assert est.privacy_events_[0] == BoundedRangeEvent(0.2)
        assert est.privacy_spent_ <= PrivacyBudget(1.0, 1e-5)
        # the solver is calibrated so that the whole plan costs what was asked (never more)
        assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
        # the bound is a factor x a grid point (the private median), widened for the intercept column
        raw = (est.data_norm_ * math.sqrt(1 - est._intercept_fraction_for(X.shape[1]) ** 2)
               / est._auto_norm_factor_for(X.shape[0]))
        assert np.isclose(DEFAULT_NORM_GRID, raw, rtol=1e-12).sum() == 1, est.data_norm_
        assert est.data_norm == "auto"  # the parameter is never overwritten


def test_auto_bound_noise_scale_independent(data):
    X, y = data
    est = DPLogisticRegression(1.0, data_norm="auto", classes=[0, 1], solver="dp_gd", max_iter=10,
                               bound_budget_fraction=0.2,
                               random_state=0).fit(X, y)
    K = est.data_norm_
    n = X.shape[0]
    # logistic gradients clipped at K/2 (seed000 0.3): 10 releases of sensitivity 2 (K/2) / n. The
    # basic split would give the solver (0.8, 1e-5); the solver is instead calibrated so that the
    # selection and its releases together cost exactly (1, 1e-5), so it gets less noise than that.
    basic = 2 * (K / 2) * math.sqrt(10) / (n * gdp_mu(0.8, 1e-5))
    assert est.noise_scale_ < 0.99 * basic
    together = [BoundedRangeEvent(0.2), GaussianEvent(2 * (K / 2) / n, est.noise_scale_, 10)]
    assert price(together, 1e-5).budget.epsilon == pytest.approx(1.0, rel=1e-6)
    # the chosen bound is near the median raw row norm (divided by sqrt(1 - 0.5^2) for the intercept column)
    med = np.median(np.linalg.norm(X, axis=1))
    assert 0.5 * med < K * math.sqrt(0.75) < 2 * med


def test_auto_bound_with_ledger(data):
    X, y = data
    ledger = PrivacyLedger(2.0, 1e-5)
    est = DPLogisticRegression(1.0, data_norm="auto", classes=[0, 1], random_state=0).fit(
        X, y, privacy_ledger=ledger)
    assert ledger.spent().epsilon == pytest.approx(est.privacy_spent_.epsilon, rel=1e-9)


def test_private_quantile_selection_probabilities():
    """The selection follows exp(epsilon u / 2) exactly (chi-square over 20k draws)."""
    rng = np.random.RandomState(0)
    values = np.array([0.5, 1.5, 1.6, 2.5, 3.5, 3.6, 3.7])
    grid = np.array([1.0, 2.0, 3.0, 4.0])
    eps = 1.0
    draws = [np.searchsorted(grid, private_quantile(values, 0.5, eps, rng, grid)[0]) for _ in range(20000)]
    # -|R - t| alone: at n = 7 and epsilon = 1 the window term of point_scores lifts nothing (c = h = 3.5)
    u = -np.abs(np.searchsorted(np.sort(values), grid, side="right") - 0.5 * len(values))
    p = np.exp(eps * u / 2) / np.exp(eps * u / 2).sum()
    assert stats.chisquare(np.bincount(draws, minlength=4), p * 20000).pvalue > 1e-3


@pytest.mark.parametrize("q, epsilon, err, match", [
    (-0.5, 1.0, ValueError, "q must be a quantile level in \\(0, 1\\), got -0.5"),
    (1.5, 1.0, ValueError, "q must be a quantile level in \\(0, 1\\), got 1.5"),
    (0.0, 1.0, ValueError, "q must be"),
    (1.0, 1.0, ValueError, "q must be"),
    (float("nan"), 1.0, ValueError, "q must be a quantile level in \\(0, 1\\), got nan"),
    ("0.5", 1.0, TypeError, "q must be a real number"),
    (0.5, 0.0, ValueError, "epsilon must be positive"),
    (0.5, float("inf"), ValueError, "epsilon must be positive and finite"),
])
def test_private_quantile_refuses_a_bad_level_before_reading_the_values(q, epsilon, err, match):
    """A port of a peer library's tests: q = -0.5 and 1.5 returned a grid point, q = nan raised an unclear
    "scores must be finite"."""

    class Unreadable:  # the values are not touched before the parameters are checked
        def __array__(self, *a, **k):
            raise AssertionError("the values were read")

    with pytest.raises(err, match=match):
        private_quantile(Unreadable(), q, epsilon, np.random.RandomState(0), np.array([1.0, 2.0]))


def test_private_quantile_is_private_on_neighbours(under_noise):
    """Replace one value (low -> high): every outcome's probability moves by <= e^epsilon."""
    rng = np.random.RandomState(1)
    grid = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    d0 = np.array([0.5, 1.5, 2.5, 2.6, 3.5, 4.5])
    d1 = d0.copy()
    d1[0] = 4.9
    eps, n = 1.0, 40000

    def freqs(d, e):  # the Gumbel draw (160,000 of them); the exact draw's law is tested in test_mechanisms_discrete.py
        idx = [np.searchsorted(grid, private_quantile(d, 0.5, e, rng, grid, secure=False)[0]) for _ in range(n)]
        return np.bincount(idx, minlength=5) / n

    f0, f1 = freqs(d0, eps), freqs(d1, eps)
    ok = (f0 > 0.01) & (f1 > 0.01)
    assert np.max(np.abs(np.log(f1[ok] / f0[ok]))) <= eps + 0.05
    # power: with 1/4 of the noise (the Gumbel scale of 4x the claimed epsilon) the same test sees a larger ratio
    with under_noise(0.25):
        g0, g1 = freqs(d0, eps), freqs(d1, eps)
    ok = (g0 > 0.01) & (g1 > 0.01)
    assert np.max(np.abs(np.log(g1[ok] / g0[ok]))) > eps + 0.5


def test_planned_events_price_like_the_fit(data):
    X, y = data
    est = DPRidge(0.7, data_norm="auto", label_bound=3.0, solver="output_pert", random_state=0)
    planned = est.planned_events(X.shape[0])
    est.fit(X, X[:, 1])
    assert price(planned, 1e-5).budget.epsilon == pytest.approx(est.privacy_spent_.epsilon, rel=1e-9)


def test_auto_label_range_is_private_and_composed():
    rng = np.random.RandomState(0)
    X = rng.randn(3000, 3)
    y = 50 + 10 * X[:, 0] + rng.randn(3000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = DPRidge(2.0, label_bound="auto", bound_budget_fraction=0.2, random_state=0).fit(X, y)
    assert est.privacy_events_[:3] == [BoundedRangeEvent(0.4 / 3)] * 3
    assert est.privacy_spent_ <= PrivacyBudget(2.0, 1e-5)
    low, high = est.label_bound_
    assert low < 50 < high and high - low < 200
    assert est.score(X, y) > 0.5
    assert est.label_bound == "auto"
    # planned events price like the fit (ledger consistency)
    planned = est.planned_events(3000)
    assert price(planned, 1e-5).budget.epsilon == pytest.approx(est.privacy_spent_.epsilon, rel=1e-9)


def test_small_n_selections_get_what_they_need_and_warn_when_they_cannot():
    """At small n each bound selection is raised to 45.5 / n (a median located on the grid with
    probability ~0.999); when even half of epsilon cannot pay for that, the fit warns."""
    rng = np.random.RandomState(0)
    X = rng.randn(300, 3)
    y = 10 + X[:, 0] + 0.1 * rng.randn(300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 45.5 / 300 = 0.152 per selection fits in half of epsilon = 2
        est = DPRidge(2.0, random_state=0).fit(X, y)
    needed = 2 * math.log(DEFAULT_SIGNED_GRID.size / 0.001) / (0.5 * 300)
    assert needed == pytest.approx(45.49 / 300, rel=1e-3)
    assert est.privacy_events_[:3] == [BoundedRangeEvent(needed)] * 3  # above the 0.05 * 2 / 3 share
    assert est.privacy_spent_.epsilon == pytest.approx(2.0, rel=1e-6)
    # a regressor refuses where the capped selections cannot be reliable: before the ledger or the data
    ledger = PrivacyLedger(math.inf, 1e-5)
    with pytest.raises(ValueError, match="too few to choose 3 bound"):
        DPRidge(0.5, random_state=0).fit(X, y, privacy_ledger=ledger)
    assert ledger.n_fits == 0
    # a classifier still fits, with capped selections (half of epsilon) and a warning
    with pytest.warns(UserWarning, match="too few to choose 1 bound"):
        low = DPLogisticRegression(0.1, classes=[0, 1], random_state=0).fit(X, (y > 10).astype(int))
    assert low.privacy_events_[:1] == [BoundedRangeEvent(0.5 * 0.1)]  # capped: half of epsilon
    assert low.privacy_spent_ <= PrivacyBudget(0.1, 1e-5)


#: log of the default norm grid's ratio (about 1.47)
STEP = math.log(DEFAULT_NORM_GRID[1] / DEFAULT_NORM_GRID[0])
#: where the data start, as a fraction of a grid step above a grid point (0: on it)
OFFSETS = (0.0, 0.3, 0.6, 0.85)


def _concentrated(a, n, d, seed):
    """Rows with norms uniform on [a, 1.3 a] (all within one or two grid cells) and a noisy linear rule."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    X *= (rng.uniform(a, 1.3 * a, n) / np.linalg.norm(X, axis=1))[:, None]
    y = (X @ rng.randn(d) + 0.3 * a * rng.randn(n) > 0).astype(int)
    return X, y


# ---------------------------------------------------------------------------------------------
# the score, against hand values and its sensitivity
# ---------------------------------------------------------------------------------------------
def test_point_scores_between_grid_points_by_hand():
    """Ten values in (2, 3) on the grid 1..5, the median: the points 2 and 3 bound the data's cell."""
    values = np.linspace(2.1, 2.9, 10)
    grid = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    # R = #{v <= c} = 0, 0, 10, 10, 10, t = 5, h = min(t, n - t) = 5: -|R - t| = -5 everywhere (the failure: a
    # flat score). The window term is 0 for k = 1, 2 (t within a grid step), -5 for k = 0 (R(c_1) = 0 below t),
    # -5 for k = 3, 4 (R(c_(k-1)) = 10 above t). At epsilon = 20, c = max(h / 2, (4 / 20) ln(5 / 0.05) = 0.92)
    # = 2.5: the points 2 and 3 score -2.5
    np.testing.assert_array_equal(point_scores(grid_counts(values, grid), 10, 0.5, 20.0), [-5, -2.5, -2.5, -5, -5])
    # at epsilon = 1, (4 / 1) ln(100) = 18.4 > h: c = h, no lift (the noise would swamp a lead of h - c anyway)
    np.testing.assert_array_equal(point_scores(grid_counts(values, grid), 10, 0.5, 1.0), [-5.0] * 5)
    # spread data, by hand: R = 1, 3, 4, 7, 8, t = 4, -|R - t| = -3, -1, 0, -3, -4; the window term is
    # -1, 0, 0, 0, -3 minus c = 2 (epsilon = 20): -3, -2, -2, -2, -5; the first term decides next to the median
    spread = np.array([0.5, 1.5, 1.6, 2.5, 3.5, 3.6, 3.7, 4.5])
    np.testing.assert_array_equal(point_scores(grid_counts(spread, grid), 8, 0.5, 20.0), [-3, -1, 0, -2, -4])


def test_point_scores_replace_one_sensitivity_one():
    """Every replacement of one value moves every score by at most 1 (n public), and some by exactly 1."""
    rng = np.random.RandomState(0)
    grid = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    worst = 0.0
    for _ in range(300):
        n = rng.randint(2, 30)
        x = rng.choice([0.5, 1.5, 2.2, 2.5, 2.8, 3.5, 4.5, 5.5], size=n)
        level = rng.choice([0.1, 0.25, 0.5, 0.9, 0.99])
        eps = rng.choice([0.5, 5.0, 50.0])
        base = point_scores(grid_counts(x, grid), n, level, eps)
        for i in range(n):
            for new in (0.5, 2.5, 4.5, 6.0):
                x2 = x.copy()
                x2[i] = new
                worst = max(worst, np.max(np.abs(point_scores(grid_counts(x2, grid), n, level, eps) - base)))
    assert worst == pytest.approx(1.0, abs=1e-12)  # up to the rounding of level * n


def test_concentrated_selection_is_private_on_neighbours(under_noise):
    """80 values, 60 in the cell (2, 3] and 20 in (3, 4], the median at epsilon = 1 (c = max(h / 2 = 20,
    (4 / 1) ln(5 / 0.05) = 18.4) = 20: the window term lifts the point 2 to -20): one value of the cell replaced
    by 4.5 moves the point 3's score from -20 to -19. Every outcome's frequency moves by at most e^epsilon; with
    1/5 of the noise the same test sees more."""
    rng = np.random.RandomState(3)
    grid = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    d0 = np.concatenate([np.linspace(2.1, 2.9, 60), np.linspace(3.1, 3.9, 20)])
    d1 = d0.copy()
    d1[0] = 4.5
    np.testing.assert_array_equal(point_scores(grid_counts(d0, grid), 80, 0.5, 1.0), [-40, -20, -20, -40, -40])
    np.testing.assert_array_equal(point_scores(grid_counts(d1, grid), 80, 0.5, 1.0), [-40, -20, -19, -39, -40])
    eps, n = 1.0, 25000

    def freqs(d):
        idx = [np.searchsorted(grid, private_quantile(d, 0.5, eps, rng, grid, secure=False)[0]) for _ in range(n)]
        return np.bincount(idx, minlength=grid.size) / n

    f0, f1 = freqs(d0), freqs(d1)
    ok = (f0 > 0.02) & (f1 > 0.02)
    assert ok.sum() >= 2
    assert np.max(np.abs(np.log(f1[ok] / f0[ok]))) <= eps + 0.08
    with under_noise(0.2):
        g0, g1 = freqs(d0), freqs(d1)
    ok = (g0 > 0.02) & (g1 > 0.02)
    assert np.max(np.abs(np.log(g1[ok] / g0[ok]))) > eps + 0.5


@pytest.mark.parametrize("offset", OFFSETS)
def test_every_quantile_level_within_a_grid_step_of_concentrated_data(offset):
    """private_quantile (the row bound, the scalers' clip radius, the sparse models' clip norm) on 1000 values
    uniform on [a, 1.3 a], epsilon = 0.5, 20 draws at each level: always within a factor 1.5 (one step of the
    grid) of the data's quantile (before: any point of the grid, 1e-2 to 1e5)."""
    a = DEFAULT_NORM_GRID[20] * math.exp(offset * STEP)
    v = np.random.RandomState(0).uniform(a, 1.3 * a, 1000)
    rng = np.random.RandomState(1)
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        exact = np.quantile(v, q)
        for _ in range(20):
            value, event = private_quantile(v, q, 0.5, rng)
            assert exact / 1.5 <= value <= 1.5 * exact, (q, value, exact)
    assert event == BoundedRangeEvent(0.5)


# ---------------------------------------------------------------------------------------------
# data_norm="auto" on rows whose norms sit between grid points (the acceptance bullet)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("offset", OFFSETS)
def test_data_norm_near_the_median_norm_and_no_single_class_fit(offset):
    """Norms uniform on [a, 1.3 a], a at several offsets from a grid point, epsilon = 1, 20 fits: data_norm_
    within a factor 2 of the median row norm every time, and no fit predicts a single class (before: data_norm_
    from 0.0003 to 3000 times the median, and a third of the fits one class)."""
    a = DEFAULT_NORM_GRID[20] * math.exp(offset * STEP)
    X, y = _concentrated(a, 2000, 5, 0)
    median = np.median(row_norms(X))
    for seed in range(20):
        est = DPLogisticRegression(epsilon=1.0, random_state=seed).fit(X, y)
        assert 0.5 < est.data_norm_ / median < 2.0, (seed, est.data_norm_, median)
        assert np.unique(est.predict(X)).size == 2, seed
        assert est.privacy_events_[0] == BoundedRangeEvent(selection_epsilon(1.0, est.bound_budget_fraction, 1,
                                                                             X.shape[0]))


# ---------------------------------------------------------------------------------------------
# label_bound="auto": concentrated labels, and heavy tails as n * epsilon grows
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("a", [DEFAULT_NORM_GRID[20] * math.exp(o * STEP) for o in OFFSETS[:3]]
                         + [-DEFAULT_NORM_GRID[20]])
def test_label_range_on_labels_between_grid_points(a):
    """Labels uniform between a and 1.3 a (between two points of the signed grid), 10,000 rows (each of DPRidge's
    three selections gets epsilon / 60), epsilon = 1, 20 fits of
    DPRidge: the range holds the median label and its half-width is between half the labels' interdecile
    half-range and 4 times their largest magnitude (before: ranges 0.008 to 8,000 times the labels' span)."""
    rng = np.random.RandomState(0)
    X = rng.randn(10000, 3)
    y = a * rng.uniform(1.0, 1.3, 10000)
    med, (q10, q90) = np.median(y), np.quantile(y, [0.1, 0.9])
    for seed in range(20):
        low, high = DPRidge(epsilon=1.0, random_state=seed).fit(X, y).label_bound_
        assert low <= med <= high, (seed, low, high)
        assert 0.25 * (q90 - q10) <= (high - low) / 2 <= 4 * np.max(np.abs(y)), (seed, low, high)


def test_label_spread_level_pinned():
    """The spread's level: the median at small n * epsilon, 1 - 4 (2 / eps) ln(43 / 0.05) / n above."""
    assert label_spread_level(309, 0.147) == 0.5  # diabetes at epsilon = 1: the MAD, as before
    assert label_spread_level(20000, 1000.0) == pytest.approx(1 - 4 * 0.002 * 6.756932389247553 / 20000, rel=1e-12)
    assert label_spread_level(1000, 1.0) == pytest.approx(1 - 8 * 6.756932389247553 / 1000, rel=1e-12)
    # the width: 2.5 MADs at the median level; z(0.8) = Phi^-1(0.9) = 1.2815515655446004, z(0.5) = Phi^-1(0.75)
    assert label_width_at(2.5, 0.5) == 2.5
    assert label_width_at(2.5, 0.8) == pytest.approx(2.5 * 0.6744897501960817 / 1.2815515655446004, rel=1e-12)
    assert label_width_at(2.5, 0.99) == 1.0  # 2.5 MADs of a normal are its 0.908-quantile: the spread itself


def test_label_range_on_normal_labels_keeps_the_former_width_until_the_level_passes_it():
    """Normal labels: the range is the former median +- 2.5 MADs at every level up to 0.9 (up to the grid's
    resolution, ratio 1.47, on the spread), and wider beyond."""
    y = 3 * np.random.RandomState(0).randn(4000)
    former = 2.5 * np.median(np.abs(y - np.median(y)))
    for level in (0.5, 0.7, 0.9, 0.99):
        (low, high), _ = private_label_range(y, 1e3, np.random.RandomState(1), width=2.5, level=level)
        assert former / 1.47 <= (high - low) / 2 <= former * (1.47 if level <= 0.9 else 1.47 * 1.6), (level, low, high)


def test_heavy_tailed_label_range_widens_with_n_epsilon():
    """Lognormal labels: at small n * epsilon the range is the former median +- 2.5 MADs (it clips the tail);
    at epsilon = 1e4 it reaches the labels' 0.99-quantile, as sklearn's unclipped labels do."""
    y = np.exp(np.random.RandomState(0).randn(2000))
    q99 = np.quantile(y, 0.99)
    (low, high), events = private_label_range(y, 1e4, np.random.RandomState(0), width=2.5)
    assert events == [BoundedRangeEvent(1e4)] * 2
    assert high >= q99 and low <= np.min(y)
    assert high <= 2 * np.max(y)
    (low, high), _ = private_label_range(y, 0.01, np.random.RandomState(0), width=2.5)  # level 0.5
    assert high < q99
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = DPRidge(epsilon=1e4, random_state=0).fit(np.random.RandomState(1).randn(2000, 3), y)
    assert est.label_bound_[1] >= q99
