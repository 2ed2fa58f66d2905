"""DPLasso: its defaults, the L1 ball it keeps and lazy clipping.

DPLasso's defaults learn (issue 18): coef_norm="auto" scales the L1 ball with the label range.
"""

import warnings

import numpy as np
import pytest

from skdp import DPLasso, fit_diagnostics
from skdp.linear_model._lasso import _auto_span
from skdp.penalties import project_l1_ball


def _constrained_ls(X, y, r, iters=2000):
    """Non-private least squares over ``||w||_1 <= r`` (FISTA with exact L1-ball projection)."""
    n = X.shape[0]
    L = np.linalg.norm(X, 2) ** 2 / n
    w = z = np.zeros(X.shape[1])
    t = 1.0
    for _ in range(iters):
        w_new = project_l1_ball(z - X.T @ (X @ z - y) / (n * L), r)
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        z, w, t = w_new + (t - 1) / t_new * (w_new - w), w_new, t_new
    return w


def _problem(n=1500, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, 8))
    y = 150 + 40 * X[:, 0] - 25 * X[:, 1] + 10 * rng.randn(n)  # labels in the hundreds, off-centre
    return X, y


def _r2(y, pred):
    return 1 - np.mean((y - pred) ** 2) / np.var(y)


@pytest.mark.parametrize("solver", ["auto", "dp_accmd"])
def test_large_epsilon_reaches_the_nonprivate_constrained_fit(solver):
    # labels in the hundreds with a public range: the former default coef_norm=1.0 (||coef_||_1 <= 1 in label units)
    # fitted the centre 200 (R^2 about -1.1 here); at epsilon = 1e4 the noise is negligible, so the fit must be
    # close to the non-private least squares over the same L1 ball on the same clipped, centred data
    X, y = _problem()
    Xt, yt = _problem(seed=1)
    lb = (0.0, 400.0)
    reg = DPLasso(epsilon=1e4, label_bound=lb, solver=solver, random_state=0).fit(X, y)
    centre, B = 200.0, 200.0
    r = _auto_span(X.shape[0], 1e4)  # feature_bound = 1: the intercept column is 1
    w = _constrained_ls(np.hstack([X, np.ones((X.shape[0], 1))]), (y - centre) / B, r)
    r2_ref = _r2(yt, (Xt @ w[:-1] + w[-1]) * B + centre)
    assert r2_ref > 0.85  # the noise caps R^2 at 0.88
    assert reg.coef_norm_ == pytest.approx(r * B)
    assert np.abs(reg.coef_).sum() + abs(reg.intercept_ - centre) <= reg.coef_norm_ * (1 + 1e-9)
    assert reg.score(Xt, yt) >= r2_ref - 0.02


def test_defaults_learn_and_improve_with_epsilon():
    X, y = _problem()
    Xt, yt = _problem(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = {e: np.mean([DPLasso(epsilon=e, random_state=s).fit(X, y).score(Xt, yt) for s in range(3)])
                  for e in (1.0, 100.0)}
    assert scores[100.0] > 0.85
    assert scores[1.0] > 0.3
    assert scores[100.0] >= scores[1.0]


def test_auto_radius_is_public_and_planned_events_do_not_depend_on_it():
    # the rule reads only n and epsilon; with label_bound="auto" the planned events equal the released ones
    assert _auto_span(309, 0.5) == 0.5 and _auto_span(10**9, 1.0) == 4.0
    assert _auto_span(2000, 100.0) == pytest.approx(np.sqrt(2e5) / 300)
    X, y = _problem(n=600)
    reg = DPLasso(epsilon=2.0, random_state=0).fit(X, y)
    assert reg.privacy_events_ == DPLasso(epsilon=2.0).planned_events(600, 8)
    assert reg.privacy_spent_.epsilon <= 2.0 + 1e-9


def test_dplasso_keeps_the_ball_and_beats_null_on_easy_data():
    rng = np.random.RandomState(0)
    n, d = 20000, 50
    X = rng.uniform(-1, 1, (n, d))
    w = np.zeros(d)
    w[:3] = [1.0, -1.0, 0.5]
    y = X @ w + 0.1 * rng.randn(n)
    for solver in ("noisy_sfw", "dp_accmd"):
        reg = DPLasso(epsilon=2.0, coef_norm=2.5, label_bound=3.0, solver=solver, random_state=0).fit(X, y)
        assert reg.privacy_spent_.epsilon <= 2.0
        # the intercept column has value feature_bound = 1, so (coef, intercept - centre) lies in the ball
        assert np.abs(reg.coef_).sum() + abs(reg.intercept_) <= 2.5 * (1 + 1e-9)
        assert reg.score(X, y) > 0.1, solver  # better than the null model (R^2 = 0)


@pytest.mark.parametrize("solver", ["noisy_sfw", "dp_accmd"])
def test_dplasso_lazy_clipping_equals_clipping_first(solver):
    rng = np.random.RandomState(3)
    X = rng.randn(400, 6) * 1.5  # many entries beyond feature_bound=1
    y = X[:, 0] - X[:, 1] + 0.1 * rng.randn(400)
    a = DPLasso(epsilon=2, coef_norm=2, label_bound=4, solver=solver, random_state=0).fit(X, y)
    b = DPLasso(epsilon=2, coef_norm=2, label_bound=4, solver=solver, random_state=0).fit(np.clip(X, -1, 1), y)
    assert fit_diagnostics(a)["n_rows_clipped"] > 0 and fit_diagnostics(b)["n_rows_clipped"] == 0
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    assert a.intercept_ == pytest.approx(b.intercept_, rel=1e-9, abs=1e-12)
