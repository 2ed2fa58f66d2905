"""Estimator behaviour: budgets, noise scales, bounds, bad input, sklearn integration."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, DPRidge, PrivacyBudget, PrivacyLeakWarning, fit_diagnostics, list_solvers
from skdp.privacy import gdp_mu, objective_perturbation_gaussian, objective_perturbation_pure
from skdp.solvers import get_solver

SOLVERS = ["dp_gd", "output_pert", "obj_pert", "dp_svrg"]


# clf_data, reg_data: fixtures of conftest.py


def _clf(**kw):
    base = dict(data_norm=3.0, classes=[0, 1], random_state=0)
    base.update(kw)
    return DPLogisticRegression(**base)


def _reg(**kw):
    base = dict(data_norm=2.5, label_bound=3.0, random_state=0)
    base.update(kw)
    return DPRidge(**base)


# ------------------------------------------------------------------ budgets
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("eps, delta", [(0.5, 1e-5), (2.0, 1e-6)])
def test_privacy_spent_meets_target(clf_data, reg_data, solver, eps, delta):
    for est, (X, y) in ((_clf(epsilon=eps, delta=delta, solver=solver), clf_data),
                        (_reg(epsilon=eps, delta=delta, solver=solver), reg_data)):
        est.fit(X, y)
        spent = est.privacy_spent_
        assert isinstance(spent, PrivacyBudget) and spent.relation == "replace_one"
        assert spent <= PrivacyBudget(eps, delta)
        assert spent.epsilon >= 0.99 * eps  # calibrated to the target, not wasteful


@pytest.mark.parametrize("solver", ["output_pert", "obj_pert"])
def test_pure_epsilon_variants(clf_data, solver):
    X, y = clf_data
    est = _clf(epsilon=1.0, delta=0.0, solver=solver).fit(X, y)
    assert est.privacy_spent_ == PrivacyBudget(1.0, 0.0)


@pytest.mark.parametrize("solver", ["dp_gd", "dp_svrg"])
def test_delta_zero_refused_for_gaussian_only_solvers(clf_data, solver):
    X, y = clf_data
    with pytest.raises(ValueError, match="delta=0"):
        _clf(delta=0.0, solver=solver).fit(X, y)


def test_obj_pert_squared_loss_has_no_pure_mode(reg_data):
    with pytest.raises(ValueError, match="delta"):
        _reg(delta=0.0, solver="obj_pert").fit(*reg_data)


def test_data_derived_bounds_warn_and_void_guarantee(clf_data, reg_data):
    X, y = clf_data
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        est = DPLogisticRegression(data_norm=None, classes=[0, 1], random_state=0).fit(X, y)
    assert math.isinf(est.privacy_spent_.epsilon)
    assert est.privacy_nominal_.epsilon == pytest.approx(1.0, rel=1e-6)
    assert est.data_norm is None and est.data_norm_ > 0  # parameter untouched
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        est = DPLogisticRegression(data_norm=3.0, classes=None, random_state=0).fit(X, y)
    assert math.isinf(est.privacy_spent_.epsilon)
    with pytest.warns(PrivacyLeakWarning, match="label_bound"):
        est = DPRidge(data_norm=2.5, label_bound=None, random_state=0).fit(*reg_data)
    assert math.isinf(est.privacy_spent_.epsilon) and est.label_bound is None


# ------------------------------------------------------------------ noise scales
def test_dp_gd_noise_scale_independent(clf_data):
    X, y = clf_data
    est = _clf(solver="dp_gd", max_iter=20).fit(X, y)
    n, K = X.shape[0], 3.0
    # sigma = 2 G sqrt(T) / (n mu*) (seed000 0.3) with G = K/2: logistic per-example
    # gradients are clipped at their largest norm at w = 0, ||x|| |phi'(0)| <= K/2.
    assert est.noise_scale_ == pytest.approx(2 * (K / 2) * math.sqrt(20) / (n * gdp_mu(1.0, 1e-5)), rel=1e-9)


def test_output_pert_noise_scale_independent(clf_data):
    X, y = clf_data
    est = _clf(solver="output_pert", alpha=0.1, max_iter=50).fit(X, y)
    n, K, a = X.shape[0], 3.0, 0.1
    eta = 1 / (K**2 / 4 + 2 * a)
    sens = 2 * (K / 2) / (n * a) * (1 - (1 - eta * a) ** 50)  # G = K/2 (clipped at w = 0 norm)
    assert est.noise_scale_ == pytest.approx(sens / gdp_mu(1.0, 1e-5), rel=1e-9)
    est0 = _clf(solver="output_pert", alpha=0.1, max_iter=50, delta=0.0).fit(X, y)
    assert est0.noise_scale_ == pytest.approx(sens / 1.0, rel=1e-12)


def test_obj_pert_noise_scale_independent(clf_data):
    X, y = clf_data
    n, K = X.shape[0], 3.0
    est = _clf(solver="obj_pert", alpha=0.05).fit(X, y)
    c = math.sqrt(2 * math.log(1e5))
    assert est.noise_scale_ == pytest.approx(2 * K * (c + math.sqrt(c * c + 1.0)) / 1.0, rel=1e-12)
    est0 = _clf(solver="obj_pert", alpha=0.05, delta=0.0).fit(X, y)
    eps_prime = 1.0 - 2 * math.log1p(K**2 / 4 / (n * 0.05))
    assert est0.noise_scale_ == pytest.approx(2 * K / eps_prime, rel=1e-12)


def test_dp_svrg_noise_prices_to_target(clf_data):
    X, y = clf_data
    est = _clf(solver="dp_svrg", alpha=0.05).fit(X, y)
    from skdp.privacy import price

    assert price(est.privacy_events_, 1e-5).budget.epsilon == pytest.approx(1.0, rel=1e-2)
    # 4 times less noise must cost far more than the claim (the calibration is not slack).
    from dataclasses import replace

    weaker = [replace(e, sigma=e.sigma / 4) if hasattr(e, "sigma") else
              replace(e, noise_multiplier=e.noise_multiplier / 4) for e in est.privacy_events_]
    assert price(weaker, 1e-5).budget.epsilon > 3.0


def test_objective_perturbation_card_fixtures():
    assert objective_perturbation_gaussian(1.0, 0.25, 10**4, 1.0, 1.0, 1e-8)[0] == pytest.approx(24.4425, abs=1e-4)
    s, extra = objective_perturbation_pure(1.0, 0.25, 1000, 1e-3, 1.0)
    assert (s, extra) == (pytest.approx(3.61198, abs=1e-5), 0.0)
    s, extra = objective_perturbation_pure(1.0, 0.25, 1000, 1e-4, 1.0)
    assert s == pytest.approx(4.0) and extra == pytest.approx(7.802e-4, rel=1e-3)
    s, _ = objective_perturbation_pure(math.sqrt(2), 0.25 * 2, 1000, 1e-3, 1.0)
    assert s == pytest.approx(14.9597, rel=1e-4)


def test_output_pert_sensitivity_bound_holds_empirically(clf_data):
    """Noiseless neighbouring runs move by at most the claimed sensitivity (seed002 hook 3)."""
    X, y = clf_data
    solver = get_solver("output_pert")
    from skdp.bounds import bound_features
    from skdp.losses import LogisticLoss
    from skdp.penalties import L2Penalty
    from skdp.solvers import Problem

    def run(Xr, yr):
        b = bound_features(Xr, 3.0, True, 1.0)
        prob = Problem(b.X, yr, b.row_norms, LogisticLoss(), L2Penalty(0.1), 3.0, max_iter=200)
        w = np.zeros(prob.coef_shape)
        eta = solver.learning_rate(prob)
        for _ in range(200):
            w = w - eta * (prob.mean_gradient(w) + 0.1 * w)
        return w, solver.sensitivity(prob, 200)

    ys = np.where(y == 1, 1.0, -1.0)
    w1, sens = run(X, ys)
    X2, y2 = X.copy(), ys.copy()
    X2[0] = -10 * X[0]
    y2[0] = -ys[0]
    w2, _ = run(X2, y2)
    assert 0 < np.linalg.norm(w1 - w2) <= sens


# ------------------------------------------------------------------ utility & determinism
@pytest.mark.parametrize("solver", SOLVERS)
def test_learns_something(clf_data, reg_data, solver):
    X, y = clf_data
    assert _clf(epsilon=5.0, solver=solver, alpha=0.01 if solver != "output_pert" else 0.1).fit(X, y).score(X, y) > 0.8
    Xr, yr = reg_data
    # obj_pert's squared-loss bound K (K M + B) needs a tight public coefficient ball
    assert _reg(epsilon=10.0, solver=solver, coef_norm=2.0).fit(Xr, yr).score(Xr, yr) > 0.3


def test_reproducible_and_fresh_entropy(clf_data):
    X, y = clf_data
    a = _clf(random_state=3).fit(X, y).coef_
    b = _clf(random_state=3).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    np.random.seed(0)
    c = _clf(random_state=None).fit(X, y).coef_
    np.random.seed(0)
    d = _clf(random_state=None).fit(X, y).coef_
    assert not np.array_equal(c, d)  # None ignores numpy's global seed


def test_sparse_input_matches_dense(clf_data):
    X, y = clf_data
    for solver in SOLVERS:
        dense = _clf(solver=solver, alpha=0.05).fit(X, y)
        sparse = _clf(solver=solver, alpha=0.05).fit(sp.csr_matrix(X), y)
        np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dense.predict_proba(X), sparse.predict_proba(sp.csr_matrix(X)), atol=1e-8)


def test_multiclass(clf_data):
    rng = np.random.RandomState(0)
    centers = np.array([[2, 0], [-2, 0], [0, 2.5]])
    y = rng.randint(0, 3, 600)
    X = centers[y] + 0.5 * rng.randn(600, 2)
    for solver in SOLVERS:
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
    est = _clf().fit(X, y)
    P = est.predict_proba(X * 1e6)
    assert np.all(np.isfinite(P)) and np.all((P >= 0) & (P <= 1))
    assert np.all(np.isfinite(est.predict_log_proba(X * 1e6)))


def test_pipeline_and_grid_search(clf_data):
    X, y = clf_data
    pipe = make_pipeline(StandardScaler(), _clf())
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.7
    grid = GridSearchCV(pipe, {"dplogisticregression__alpha": [0.01, 0.1],
                               "dplogisticregression__epsilon": [0.5, 2.0]}, cv=3)
    grid.fit(X, y)
    assert set(grid.best_params_) == {"dplogisticregression__alpha", "dplogisticregression__epsilon"}
    assert grid.best_estimator_[-1].privacy_spent_.epsilon <= 2.0


def test_list_solvers():
    rows = {r["solver"]: r for r in list_solvers()}
    assert set(SOLVERS) <= set(rows)
    assert rows["output_pert"]["pure_dp"] and not rows["dp_gd"]["pure_dp"]


# ------------------------------------------------------------------ bounds
def test_labels_clipped_and_centred(reg_data):
    X, y = reg_data
    est = DPRidge(data_norm=2.5, label_bound=(-1.0, 2.0), random_state=0).fit(X, y)
    assert est.label_bound_ == (-1.0, 2.0)
    assert fit_diagnostics(est)["n_labels_clipped"] == int(np.sum((y < -1) | (y > 2)))


# ------------------------------------------------------------------ bad input
BAD_PARAMS = [
    ({"epsilon": 0}, "epsilon"),
    ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("inf")}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": "1"}, "epsilon"),
    ({"delta": 1.0}, "delta"),
    ({"delta": -1e-5}, "delta"),
    ({"data_norm": 0.0}, "data_norm"),
    ({"data_norm": -2.0}, "data_norm"),
    ({"data_norm": float("inf")}, "data_norm"),
    ({"solver": "sgd"}, "solver"),
    ({"alpha": -1.0}, "alpha"),
    ({"max_iter": 0}, "max_iter"),
    ({"intercept_scaling": 5.0}, "intercept_scaling"),
    ({"solver": "output_pert", "alpha": 0.0}, "alpha"),
    ({"solver": "dp_gd", "delta": 0.0}, "delta"),
]


@pytest.mark.parametrize("params, name", BAD_PARAMS)
def test_bad_params_name_the_parameter(clf_data, reg_data, params, name):
    for make, (X, y) in ((_clf, clf_data), (_reg, reg_data)):
        with pytest.raises((ValueError, TypeError), match=name):
            make(**params).fit(X, y)


def test_bad_params_checked_before_data():
    # invalid data AND invalid params: the parameter error comes first
    with pytest.raises(ValueError, match="epsilon"):
        _clf(epsilon=-1).fit([[np.nan]], [0])


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.array([[np.nan, 1.0], [1.0, 2.0]]), [0, 1], "NaN"),
        (np.array([[np.inf, 1.0], [1.0, 2.0]]), [0, 1], "infinity"),
        (np.zeros((0, 2)), [], "0 sample"),
        (np.ones((3, 2)), [0, 1], "inconsistent"),
        (np.array([[1 + 1j, 1.0], [1.0, 2.0]]), [0, 1], "omplex"),
    ],
)
def test_bad_data(X, y, match):
    with pytest.raises(ValueError, match=match):
        _clf().fit(X, y)


def test_one_class_and_unknown_labels(clf_data):
    X, y = clf_data
    with pytest.raises(ValueError, match="class"):
        DPLogisticRegression(data_norm=3.0).fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="not in classes"):
        _clf(classes=[0, 1]).fit(X, y + 1)
    with pytest.raises(ValueError, match="classes"):
        _clf(classes=[1]).fit(X, y)
    with pytest.raises(ValueError, match="label_bound"):
        _reg(label_bound=(2.0, 1.0)).fit(X, y.astype(float))


def test_one_sample():
    # Without a public class set one row is one class: refused with a clear error.
    with pytest.raises(ValueError, match="class"):
        DPLogisticRegression(data_norm=3.0).fit([[1.0, 2.0]], [0])
    # With public classes, one row is a legal (if useless) private fit.
    assert _clf().fit([[1.0, 2.0]], [0]).predict([[1.0, 2.0]]).shape == (1,)
    # A single row is a legal (if useless) regression problem.
    est = _reg().fit([[1.0, 2.0]], [0.5])
    assert np.isfinite(est.coef_).all()


def test_inputs_not_modified(clf_data, reg_data):
    X, y = clf_data
    Xc, yc = X.copy() * 10, y.copy()
    Xkeep = Xc.copy()
    for solver in SOLVERS:
        _clf(solver=solver).fit(Xc, yc)
    np.testing.assert_array_equal(Xc, Xkeep)
    np.testing.assert_array_equal(yc, y)
    Xr, yr = reg_data[0].copy() * 5, reg_data[1].copy() * 10
    Xr0, yr0 = Xr.copy(), yr.copy()
    _reg().fit(Xr, yr)
    np.testing.assert_array_equal(Xr, Xr0)
    np.testing.assert_array_equal(yr, yr0)
