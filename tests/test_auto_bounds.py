"""data_norm="auto": a private row bound, paid for from the estimator's budget."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from skdp import DPLogisticRegression, DPRidge, PrivacyBudget, PrivacyLedger
from skdp.privacy import BoundedRangeEvent, GaussianEvent, gdp_mu, price, private_quantile
from skdp.privacy.quantile import DEFAULT_NORM_GRID, DEFAULT_SIGNED_GRID


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

    def freqs(d, e):  # the Gumbel draw (160,000 of them); the exact draw's law is tested in test_secure_noise.py
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
