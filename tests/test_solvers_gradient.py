"""The gradient solvers (skdp/solvers/gradient.py: dp_gd, dp_svrg, dp_svrg_pp): noise scales, schedules and
dp_gd's private curvature release.

dp_gd's private curvature release: its noise scale, its draw, its step size and a neighbouring-worlds audit.
"""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from skdp import DPLogisticRegression, PrivacyBudget
from skdp.audit import audit_events
from skdp.losses import LogisticLoss
from skdp.penalties import L2Penalty
from skdp.privacy import GaussianEvent, gdp_mu, price
from skdp.privacy.mechanisms import record_draws, scaled_noise
from skdp.solvers import Problem, get_solver
from skdp.solvers.gradient import DPGradientDescent

from ._helpers import make_clf


# ------------------------------------------------------------------ noise scales
def test_dp_gd_noise_scale_independent(clf_data):
    X, y = clf_data
    est = make_clf(solver="dp_gd", max_iter=20).fit(X, y)
    n, K = X.shape[0], 3.0
    # sigma = 2 G sqrt(T) / (n mu*) (seed000 0.3) with G = K/2: logistic per-example
    # gradients are clipped at their largest norm at w = 0, ||x|| |phi'(0)| <= K/2.
    assert est.noise_scale_ == pytest.approx(2 * (K / 2) * math.sqrt(20) / (n * gdp_mu(1.0, 1e-5)), rel=1e-9)


def test_dp_svrg_noise_prices_to_target(clf_data):
    X, y = clf_data
    est = make_clf(solver="dp_svrg", alpha=0.05).fit(X, y)
    from skdp.privacy import price

    assert price(est.privacy_events_, 1e-5).budget.epsilon == pytest.approx(1.0, rel=1e-2)
    # 4 times less noise must cost far more than the claim (the calibration is not slack).
    from dataclasses import replace

    weaker = [replace(e, sigma=e.sigma / 4) if hasattr(e, "sigma") else
              replace(e, noise_multiplier=e.noise_multiplier / 4) for e in est.privacy_events_]
    assert price(weaker, 1e-5).budget.epsilon > 3.0


def test_squared_loss_default_steps():
    """The squared loss's dp_gd schedule: at least ceil(0.21 sqrt(n epsilon)) steps, else the linear rule."""
    from skdp.solvers.gradient import DPGradientDescent
    steps = DPGradientDescent.default_steps
    # n epsilon -> T, worked by hand: max(2, ceil(x / 80), ceil(0.21 sqrt(x))), at most 40
    for n_eps, T in [(1, 2), (50, 2), (90, 2), (100, 3), (185, 3), (204, 3), (205, 4), (232, 4), (400, 5),
                     (1000, 13), (5000, 40)]:
        assert steps(n_eps, 1.0, "squared") == T, n_eps
    assert steps(232, 1.0, "logistic") == 8  # the other losses keep ceil(n epsilon / 30)
    Ts = [steps(n, 1.0, "squared") for n in range(1, 6000, 7)]
    assert all(a <= b for a, b in zip(Ts, Ts[1:]))


def test_dp_svrg_pp_counts_every_inner_step():
    solver = get_solver("dp_svrg_pp")
    assert solver.total_steps(3, 5) == 70  # card hook 11
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (400, 3)) / 2
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    prob = Problem(X=X, y=y, norms=np.linalg.norm(X, axis=1), loss=LogisticLoss(), penalty=L2Penalty(0.0),
                   data_norm=1.0, max_iter=3)
    res = solver.solve(prob, PrivacyBudget(1.0, 1e-5), np.random.RandomState(0))
    T, m, b = solver.schedule(prob)
    assert res.info["inner_steps"] == m * (2 ** (T + 1) - 2)
    assert res.events == solver.plan(prob, PrivacyBudget(1.0, 1e-5))
    assert price(res.events, 1e-5).budget.epsilon <= 1.0


def _mu_by_formula(epsilon, delta):
    """The GDP mu at (epsilon, delta) from the analytic Gaussian curve, root-found here (not the library's)."""
    def f(mu):
        return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2) - delta
    return optimize.brentq(f, 1e-6, 50.0, xtol=1e-14)


def _data(n=400, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) / math.sqrt(d)
    return X, (X[:, 0] + 0.1 * rng.randn(n) > 0).astype(int)


def test_curvature_noise_scales_and_draws_match_an_independent_calibration():
    X, y = _data()
    K, T, eps, delta = 2.0, 5, 1.0, 1e-5
    with record_draws() as draws:
        clf = DPLogisticRegression(eps, data_norm=K, classes=[0, 1], max_iter=T, random_state=0,
                                   solver_options={"curvature": True}).fit(X, y)
    curv, steps = clf.privacy_events_
    mu = _mu_by_formula(eps, delta)
    n = X.shape[0]
    sens = 2 * (K / 2) / n  # replace-one, public n: 2 G / n, G = K / 2 the logistic clip at w = 0
    # the T steps keep 99% of mu^2, the curvature release (sensitivity K^2, by Weyl) the other 1%
    assert steps.count == T and steps.sensitivity == pytest.approx(sens, rel=1e-12)
    assert steps.sigma == pytest.approx(math.sqrt(T) * sens / (mu * math.sqrt(0.99)), rel=1e-6)
    assert curv.count == 1 and curv.sensitivity == pytest.approx(K**2)
    assert curv.sigma == pytest.approx(K**2 / (mu * 0.1), rel=1e-6)
    assert price(clf.privacy_events_, delta).budget.epsilon <= eps
    assert price(clf.privacy_events_, delta).budget.epsilon == pytest.approx(eps, rel=1e-9)
    # one draw of one coordinate at the curvature's scale, first; then T gradient draws
    assert [(d.kind, d.size) for d in draws] == [("gaussian", 1)] + [("gaussian", 4)] * T
    assert draws[0].scale == pytest.approx(curv.sigma, rel=1e-12)
    assert all(d.scale == pytest.approx(steps.sigma, rel=1e-12) for d in draws[1:])


def test_step_size_comes_from_the_released_curvature(monkeypatch):
    X, y = _data()
    K, n = 2.0, X.shape[0]
    seen = {}
    original = DPGradientDescent.released_curvature

    def spy(problem, sigma_c, rng):
        seen["L"] = original(problem, sigma_c, rng)
        seen["worst"] = problem.smoothness
        seen["sigma_c"] = sigma_c
        seen["lam"] = np.linalg.eigvalsh(problem.gram()[0])[-1]
        return seen["L"]

    monkeypatch.setattr(DPGradientDescent, "released_curvature", staticmethod(spy))
    with scaled_noise(1e-9):  # the release is then lambda_max itself (the margin stays the planned 3 sigma)
        clf = DPLogisticRegression(1.0, data_norm=K, classes=[0, 1], max_iter=5, random_state=0,
                                   solver_options={"curvature": True}).fit(X, y)
    assert seen["L"] == pytest.approx(0.25 * (seen["lam"] + 3 * seen["sigma_c"]) / n, rel=1e-6)
    assert seen["L"] < seen["worst"] == pytest.approx(0.25 * K**2)
    factor = DPGradientDescent._CURVATURE_STEP_FACTOR
    assert 1.0 <= factor < 4.0 / 3.0  # FISTA's stability limit on a quadratic of curvature L
    assert clf.solver_info_["learning_rate"] == pytest.approx(factor / (seen["L"] + 1.0 / n), rel=1e-6)


def test_default_uses_the_curvature_only_in_the_accelerated_regime():
    X, y = _data(n=20_000, d=5)
    big = DPLogisticRegression(5.0, random_state=0).fit(X, y)
    assert any(e.count == 1 and isinstance(e, GaussianEvent) and e.sigma > 1 for e in big.privacy_events_[-2:])
    assert big.n_iter_[0] == DPGradientDescent._CURVATURE_STEPS
    small = DPLogisticRegression(1.0, random_state=0).fit(*_data(n=300))
    assert small.n_iter_[0] != DPGradientDescent._CURVATURE_STEPS or len(small.privacy_events_) == len(
        DPLogisticRegression(1.0, random_state=0, solver_options={"curvature": False}).fit(*_data(n=300))
        .privacy_events_)
    off = DPLogisticRegression(5.0, random_state=0, solver_options={"curvature": False}).fit(X, y)
    assert off.n_iter_[0] == DPGradientDescent._ACCELERATED_STEPS
    assert len(off.privacy_events_) == len(big.privacy_events_) - 1
    assert abs(big.score(X, y) - off.score(X, y)) < 0.01


def test_curvature_option_is_validated_and_refused_where_it_cannot_apply():
    X, y = _data()
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match=r"solver_options\['curvature'\]"):
            DPLogisticRegression(1.0, data_norm=2.0, classes=[0, 1], solver_options={"curvature": bad}).fit(X, y)
    with pytest.raises(ValueError, match="curvature"):
        DPLogisticRegression(1.0, data_norm=2.0, classes=[0, 1], solver="noisy_sgd",
                             solver_options={"curvature": True}).fit(X, y)


def test_curvature_release_neighbouring_worlds_audit():
    """Zero background, one canary row: lambda_max moves by exactly K^2; a quarter of the noise is caught."""
    est = DPLogisticRegression(2.0, data_norm=1.0, classes=[0, 1], fit_intercept=False, max_iter=2,
                               solver_options={"curvature": True})
    X0, y0 = np.zeros((40, 2)), np.arange(40) % 2
    full = audit_events(est, X0, y0, n_fits=60, random_state=0)
    assert full.passed, full
    quarter = audit_events(est, X0, y0, n_fits=60, random_state=0, noise_multiplier=0.25)
    assert not quarter.passed, quarter


def test_a_plan_the_accountant_prices_above_budget_is_refused_not_looped_on(monkeypatch):
    """The closed-form split is nudged up for float rounding only: a plan the accountant prices clearly above
    the budget (a wrong split, here a price 1% high) raises instead of looping for ever."""
    from skdp.solvers import gradient

    real = gradient.price
    monkeypatch.setattr(gradient, "price", lambda events, delta: real(
        [GaussianEvent(e.sensitivity * 1.01, e.sigma, e.count) for e in events], delta))
    X, y = _data()
    est = DPLogisticRegression(1.0, data_norm=2.0, classes=[0, 1], max_iter=5, random_state=0,
                               solver_options={"curvature": True})
    with pytest.raises(RuntimeError, match="does not meet its budget"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
