"""DPLogisticRegression: its default path, pure-epsilon variants, reproducibility, sparse input, multiclass and
sklearn integration.

DPLogisticRegression's default path: dp_gd's schedule for the logistic losses, the per-feature clip
(``feature_clip``) and the intercept column's share of the row bound.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression
from skdp.losses import LogisticLoss, MultinomialLoss
from skdp.penalties import L2Penalty
from skdp.privacy import GaussianEvent, PrivacyBudget, gdp_mu
from skdp.privacy.mechanisms import record_draws
from skdp.solvers import PublicProblem, get_solver

from ._helpers import CORE_SOLVERS, make_clf


def _problem(n, p, loss, K=2.0, **kw):
    k = getattr(loss, "n_classes", 1) if loss.name == "multinomial" else 1
    return PublicProblem(loss=loss, penalty=L2Penalty(1.0 / n), data_norm=K, n_outputs=k, n_samples=n, n_features=p,
                         clip_norm=K * loss.initial_derivative_bound(), **kw)


@pytest.mark.parametrize("n, p, loss, eps", [(1257, 65, MultinomialLoss(10), 1.0), (398, 31, LogisticLoss(), 1.0),
                                             (398, 31, LogisticLoss(), 0.3), (3000, 11, MultinomialLoss(3), 0.5)])
def test_noisy_regime_schedule_matches_an_independent_computation(n, p, loss, eps):
    """Clip at half the bound at w = 0, horizon n mu / (p k)^(1/4) (<= 1600), T = max(10, ceil(H / 8))."""
    problem = _problem(n, p, loss)
    budget = PrivacyBudget(eps, 1e-5)
    plan = get_solver("dp_gd").make_plan(problem, budget)
    k = problem.n_outputs
    G0 = 2.0 * loss.initial_derivative_bound()
    H = min(n * gdp_mu(eps, 1e-5) / (p * k) ** 0.25, 1600.0)
    T = max(10, math.ceil(H / 8))
    assert plan.settings["T"] == T and plan.settings["clip"] == pytest.approx(0.5 * G0)
    assert plan.settings["step_factor"] == pytest.approx(H / (T * 0.5))
    (event,) = plan.events
    assert isinstance(event, GaussianEvent) and event.count == T
    assert event.sensitivity == pytest.approx(2 * 0.5 * G0 / n)  # replace-one, public n, the clipped bound
    # the schedule's horizon grows with n * mu: more budget, never fewer steps
    assert get_solver("dp_gd").make_plan(problem, PrivacyBudget(2 * eps, 1e-5)).settings["T"] >= T


def test_small_noise_keeps_fista_and_max_iter_overrides():
    loss = LogisticLoss()
    plan = get_solver("dp_gd").make_plan(_problem(200_000, 11, loss), PrivacyBudget(5.0, 1e-5))
    # FISTA with the private curvature release (24 steps of 1.3 / L); without it, 100 steps of 1.9 / beta
    assert plan.settings["T"] == 24 and plan.settings["clip"] is None and plan.settings["accelerate"]
    assert plan.settings["curvature"] > 0 and len(plan.events) == 2
    plan = get_solver("dp_gd").make_plan(_problem(200_000, 11, loss, options={"curvature": False}),
                                         PrivacyBudget(5.0, 1e-5))
    assert plan.settings["T"] == 100 and plan.settings["clip"] is None and plan.settings["accelerate"]
    assert "curvature" not in plan.settings and len(plan.events) == 1
    plan = get_solver("dp_gd").make_plan(_problem(398, 31, loss, max_iter=7), PrivacyBudget(1.0, 1e-5))
    assert plan.settings["T"] == 7 and plan.settings["clip"] is None


def test_the_fit_clips_gradients_at_the_planned_clip_and_draws_the_planned_noise():
    rng = np.random.RandomState(0)
    X = 3.0 * rng.randn(400, 5)
    y = (X[:, 0] > 0).astype(int)
    with record_draws() as draws:
        clf = DPLogisticRegression(1.0, data_norm=4.0, classes=[0, 1], random_state=0).fit(X, y)
    (event,) = clf.privacy_events_
    info = clf.solver_info_
    assert info["gradient_clip"] == pytest.approx(0.5 * 0.5 * 4.0)
    assert event.sensitivity == pytest.approx(2 * info["gradient_clip"] / 400)
    gaussian = [d for d in draws if d.kind == "gaussian"]
    assert len(gaussian) == event.count and all(d.scale == pytest.approx(event.sigma) for d in gaussian)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_feature_clip_is_released_bounds_only_and_used_when_scoring(digits):
    X, y = digits
    clf = DPLogisticRegression(1.0, random_state=0).fit(X, y)
    d = X.shape[1]
    # the intercept column is one more feature of average size: c0 = K / sqrt(d + 1)
    assert clf.intercept_scaling_ == pytest.approx(clf.data_norm_ / math.sqrt(d + 1))
    k_x = math.sqrt(clf.data_norm_**2 - clf.intercept_scaling_**2)
    assert clf.feature_clip_ == pytest.approx(3.0 * k_x / math.sqrt(d))
    Xc = np.clip(X, -clf.feature_clip_, clf.feature_clip_)
    assert (X != Xc).any()  # the clip binds on digits' rare pixels
    np.testing.assert_allclose(clf.decision_function(X), Xc @ clf.coef_.T + clf.intercept_, rtol=1e-12)
    np.testing.assert_allclose(clf.decision_function(sp.csr_matrix(X)), clf.decision_function(X), rtol=1e-12,
                               atol=1e-14)  # summation order: scores near 0 differ in the last bit
    # clipping the features is a fixed map of each row: the privacy events do not change
    plain = DPLogisticRegression(1.0, feature_clip=None, random_state=0).fit(X, y)
    assert plain.feature_clip_ is None and plain.privacy_events_ == clf.privacy_events_
    np.testing.assert_allclose(plain.decision_function(X), X @ plain.coef_.T + plain.intercept_, rtol=1e-12)
    given = DPLogisticRegression(1.0, feature_clip=0.5, random_state=0).fit(X, y)
    assert given.feature_clip_ == 0.5


def test_a_huge_row_is_winsorised_then_row_clipped():
    """Neighbouring datasets differing in one huge row: the same events, and the fit (same seed, so the same
    noise) equals the fit with that row winsorised and row-clipped by hand: nothing else of it is used."""
    rng = np.random.RandomState(1)
    X = rng.randn(300, 4)
    y = (X[:, 0] > 0).astype(int)
    X2 = X.copy()
    X2[0] = [1e6, -1e6, 1e6, 0.0]
    kw = dict(data_norm=3.0, classes=[0, 1], random_state=0)
    a, b = DPLogisticRegression(1.0, **kw).fit(X, y), DPLogisticRegression(1.0, **kw).fit(X2, y)
    assert a.privacy_events_ == b.privacy_events_ and a.feature_clip_ == b.feature_clip_
    r, k_x = b.feature_clip_, math.sqrt(9.0 - b.intercept_scaling_**2)
    X3 = X2.copy()
    X3[0] = np.clip(X2[0], -r, r)
    X3[0] *= min(1.0, k_x / np.linalg.norm(X3[0]))
    c = DPLogisticRegression(1.0, **kw).fit(X3, y)
    np.testing.assert_allclose(b.coef_, c.coef_, rtol=1e-10, atol=1e-12)
    assert not np.allclose(a.coef_, b.coef_)


def test_bad_feature_clip_is_named():
    X, y = np.zeros((10, 2)), np.array([0, 1] * 5)
    for bad in (-1.0, 0.0, "median"):
        with pytest.raises((ValueError, TypeError), match="feature_clip"):
            DPLogisticRegression(feature_clip=bad, classes=[0, 1], data_norm=1.0).fit(X, y)


@pytest.mark.parametrize("solver", ["output_pert", "obj_pert"])
def test_pure_epsilon_variants(clf_data, solver):
    X, y = clf_data
    est = make_clf(epsilon=1.0, delta=0.0, solver=solver).fit(X, y)
    assert est.privacy_spent_ == PrivacyBudget(1.0, 0.0)


@pytest.mark.parametrize("solver", ["dp_gd", "dp_svrg"])
def test_delta_zero_refused_for_gaussian_only_solvers(clf_data, solver):
    X, y = clf_data
    with pytest.raises(ValueError, match="delta=0"):
        make_clf(delta=0.0, solver=solver).fit(X, y)


def test_reproducible_and_fresh_entropy(clf_data):
    X, y = clf_data
    a = make_clf(random_state=3).fit(X, y).coef_
    b = make_clf(random_state=3).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    np.random.seed(0)
    c = make_clf(random_state=None).fit(X, y).coef_
    np.random.seed(0)
    d = make_clf(random_state=None).fit(X, y).coef_
    assert not np.array_equal(c, d)  # None ignores numpy's global seed


def test_sparse_input_matches_dense(clf_data):
    X, y = clf_data
    for solver in CORE_SOLVERS:
        dense = make_clf(solver=solver, alpha=0.05).fit(X, y)
        sparse = make_clf(solver=solver, alpha=0.05).fit(sp.csr_matrix(X), y)
        np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dense.predict_proba(X), sparse.predict_proba(sp.csr_matrix(X)), atol=1e-8)


def test_multiclass(clf_data):
    rng = np.random.RandomState(0)
    centers = np.array([[2, 0], [-2, 0], [0, 2.5]])
    y = rng.randint(0, 3, 600)
    X = centers[y] + 0.5 * rng.randn(600, 2)
    for solver in CORE_SOLVERS:
        est = DPLogisticRegression(epsilon=2.0, solver=solver, data_norm=4.0, classes=[0, 1, 2],
                                   random_state=0).fit(X, y)
        assert est.coef_.shape == (3, 2) and est.intercept_.shape == (3,)
        P = est.predict_proba(X)
        np.testing.assert_allclose(P.sum(axis=1), 1.0)
        assert est.score(X, y) > 0.6
        assert est.privacy_spent_ <= PrivacyBudget(2.0, 1e-5)
    assert est.multi_class_ == "multinomial"
    ovr = DPLogisticRegression(epsilon=2.0, solver="obj_pert", data_norm=4.0, classes=[0, 1, 2]).fit(X, y)
    assert ovr.multi_class_ == "ovr" and ovr.accountant_ == "basic"


def test_predict_proba_is_stable_for_huge_scores(clf_data):
    X, y = clf_data
    est = make_clf().fit(X, y)
    P = est.predict_proba(X * 1e6)
    assert np.all(np.isfinite(P)) and np.all((P >= 0) & (P <= 1))
    assert np.all(np.isfinite(est.predict_log_proba(X * 1e6)))


def test_pipeline_and_grid_search(clf_data):
    X, y = clf_data
    pipe = make_pipeline(StandardScaler(), make_clf())
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.7
    grid = GridSearchCV(pipe, {"dplogisticregression__alpha": [0.01, 0.1],
                               "dplogisticregression__epsilon": [0.5, 2.0]}, cv=3)
    grid.fit(X, y)
    assert set(grid.best_params_) == {"dplogisticregression__alpha", "dplogisticregression__epsilon"}
    assert grid.best_estimator_[-1].privacy_spent_.epsilon <= 2.0
