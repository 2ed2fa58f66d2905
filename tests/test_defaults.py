"""What a drop-in user gets: every estimator and transformer, constructed with its defaults, fits
without reading a bound in the clear and reports a finite privacy spend within what it was given
(issue "accurate and private by default")."""

import math
import warnings

import numpy as np
import pytest

from skdp import (DPLasso, DPLinearSVC, DPLogisticRegression, DPMinMaxScaler, DPRidge, DPSparseLinearRegression,
                  DPSparseLogisticRegression, DPStandardScaler, PrivacyBudget)
from skdp.distributed import MultiPartyDPLogisticRegression
from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model._ridge import SCALED_ALPHA_SOLVERS

CLASSIFIERS = [DPLogisticRegression, DPLinearSVC, DPSparseLogisticRegression, MultiPartyDPLogisticRegression]
REGRESSORS = [DPRidge, DPLasso, DPSparseLinearRegression]
TRANSFORMERS = [DPStandardScaler, DPMinMaxScaler]


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(3000, 6)
    w = np.array([1.0, -2.0, 0.5, 0.0, 0.0, 1.5])
    y_reg = 3.0 + X @ w + 0.3 * rng.randn(3000)
    y_clf = (X @ w + 0.3 * rng.randn(3000) > 0).astype(int)
    return X, y_reg, y_clf


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        return est.fit(X, y) if y is not None else est.fit(X)


@pytest.mark.parametrize("cls", CLASSIFIERS + REGRESSORS + TRANSFORMERS, ids=lambda c: c.__name__)
def test_defaults_fit_privately_within_the_budget(cls, data):
    X, y_reg, y_clf = data
    y = y_clf if cls in CLASSIFIERS else (y_reg if cls in REGRESSORS else None)
    est = _fit(cls(random_state=0), X, y)
    spent = est.privacy_spent_
    assert math.isfinite(spent.epsilon)
    assert spent <= PrivacyBudget(est.epsilon, est.delta)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPRidge, DPLasso, DPLinearSVC, DPSparseLinearRegression,
                                 DPSparseLogisticRegression, DPStandardScaler], ids=lambda c: c.__name__)
def test_defaults_spend_what_was_asked(cls, data):
    """The private bound choices and the solver are calibrated together: nothing is left unspent
    (DPLinearSVC's default is Poisson-subsampled: the search prices those plans too)."""
    X, y_reg, y_clf = data
    y = y_clf if cls in CLASSIFIERS else (y_reg if cls in REGRESSORS else None)
    est = _fit(cls(epsilon=0.8, random_state=0), X, y)
    assert est.privacy_spent_.epsilon == pytest.approx(0.8, rel=1e-5)
    assert est.privacy_spent_.epsilon <= 0.8


def test_defaults_learn(data):
    """Not a benchmark (see benchmarks/bench_defaults.py): the defaults fit a clean problem well."""
    X, y_reg, y_clf = data
    # DPRidge here (n epsilon = 3000) clips rows at 0.7 times the private median norm, which biases the fit:
    # R^2 0.61 to 0.83 over seeds 0-4 (0.96 with data_norm=4), so the bar is on the mean of five seeds
    r2 = [_fit(DPRidge(epsilon=1.0, random_state=s), X, y_reg).score(X, y_reg) for s in range(5)]
    assert np.mean(r2) > 0.6, r2
    assert _fit(DPLogisticRegression(epsilon=1.0, random_state=0), X, y_clf).score(X, y_clf) > 0.9


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


def test_ridge_default_on_diabetes_beats_the_short_schedule():
    """diabetes (n = 309) at epsilon = 1: the default's 4 steps beat the 3 of the former linear rule
    (20 splits: R^2 0.33 against 0.29; the bound selections leave the solver n epsilon = 232)."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(return_X_y=True)
    scores = {None: [], 3: []}
    for seed in range(20):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        for max_iter in scores:
            est = _fit(DPRidge(epsilon=1.0, max_iter=max_iter, random_state=seed), Xtr, ytr)
            scores[max_iter].append(est.score(Xte, yte))
            if max_iter is None:
                assert est.solver_ == "dp_gd" and est.n_iter_[0] == 4
    assert np.mean(scores[None]) > 0.3
    assert np.mean(scores[None]) > np.mean(scores[3]) + 0.02, {k: np.mean(v) for k, v in scores.items()}


def test_ridge_auto_solver_crossover():
    """adassp from n epsilon = 100 p, or 400 p with at most 12 columns (p counts the intercept column)."""
    est = DPRidge(epsilon=1.0)
    assert est._auto_solver("squared", (2100, 11)) == "dp_gd"  # 191 p
    assert est._auto_solver("squared", (4400, 11)) == "adassp"  # 400 p
    assert est._auto_solver("squared", (4399, 11)) == "dp_gd"
    assert est._auto_solver("squared", (1300, 13)) == "adassp"  # 100 p
    assert est._auto_solver("squared", (1299, 13)) == "dp_gd"
    assert DPRidge(epsilon=1.0, delta=0.0)._auto_solver("squared", (10**6, 5)) == "output_pert"


def test_ridge_default_with_few_columns_at_moderate_n_epsilon():
    """X ~ N(0, I/10), w ~ N(0, I), noise 0.3, n = 2,100, epsilon = 1 (191 p): AdaSSP's release of X^T y is
    barely above its noise there (R^2 about 0.1 over seeds, some negative); dp_gd, the default, about 0.58."""
    scores = {"auto": [], "adassp": []}
    for seed in range(5):
        rng = np.random.RandomState(seed)
        X = rng.randn(3000, 10) / np.sqrt(10)
        y = X @ rng.randn(10) + 0.3 * rng.randn(3000)
        for solver in scores:
            est = _fit(DPRidge(epsilon=1.0, label_bound=(-4, 4), solver=solver, random_state=seed), X[:2100], y[:2100])
            scores[solver].append(est.score(X[2100:], y[2100:]))
    means = {k: np.mean(v) for k, v in scores.items()}
    assert means["auto"] > 0.45 and means["auto"] > means["adassp"] + 0.15, means


def _dp_gd_problem(monkeypatch, est, X, y):
    """The problem ``est``'s dp_gd run gets (captured from the solver's run)."""
    from skdp.solvers import get_solver

    seen = []
    solver_cls = type(get_solver("dp_gd"))
    run = solver_cls.run

    def capture(self, problem, plan, rng):
        seen.append(problem)
        return run(self, problem, plan, rng)

    monkeypatch.setattr(solver_cls, "run", capture)
    _fit(est, X, y)
    (problem,) = seen
    return problem


def test_ridge_dp_gd_default_penalty_follows_the_row_bound(monkeypatch):
    """alpha=None with dp_gd: min(0.1, 0.2 K^2) (K the row bound the solver sees), and the coefficient ball
    B / sqrt(alpha) with it (reported in coef_norm_); at K >= 1/sqrt(2) both are the former 0.1 and B / sqrt(0.1);
    an explicit alpha and the other iterative solvers are unchanged; the release does not depend on alpha."""
    from skdp.linear_model._ridge import scaled_alpha
    from skdp.solvers import get_solver

    rng = np.random.RandomState(0)
    X = rng.randn(400, 5)
    y = X @ rng.randn(5) + rng.randn(400)
    for K in (0.05, 0.5, 0.8, 3.0):
        kw = dict(data_norm=K, label_bound=(-20, 20), solver="dp_gd", random_state=0)
        Xs = X * (K / 3.0)
        problem = _dp_gd_problem(monkeypatch, DPRidge(2.0, **kw), Xs, y)
        monkeypatch.undo()
        Kp = problem.data_norm
        assert problem.penalty.alpha == scaled_alpha(Kp) == pytest.approx(min(0.1, 0.2 * Kp**2), rel=1e-12)
        old_est = DPRidge(2.0, alpha=0.1, **kw)
        old = _dp_gd_problem(monkeypatch, old_est, Xs, y)
        monkeypatch.undo()
        assert old.penalty.alpha == 0.1
        scale = np.sqrt(0.1 / problem.penalty.alpha)
        assert problem.penalty.radius == pytest.approx(old.penalty.radius * scale, rel=1e-12)
        est = _fit(DPRidge(2.0, **kw), Xs, y)
        assert est.coef_norm_ == pytest.approx(old_est.coef_norm_ * scale, rel=1e-12)
        assert est.privacy_spent_ == old_est.privacy_spent_
        if Kp >= 1 / np.sqrt(2):
            assert problem.penalty.alpha == 0.1 and est.coef_norm_ == old_est.coef_norm_
    problem = _dp_gd_problem(monkeypatch, DPRidge(1.0, alpha=0.5, data_norm=0.05, label_bound=(-20, 20),
                                                  solver="dp_gd", random_state=0), X * 0.01, y)
    assert problem.penalty.alpha == 0.5
    assert DPRidge(1.0)._alpha_for(get_solver("noisy_sgd"), 400, 0.05) == pytest.approx(0.0005, rel=1e-12)
    assert DPRidge(1.0)._alpha_for(get_solver("output_pert"), 400, 0.05) == 0.1
    assert DPRidge(1.0)._alpha_for(get_solver("adassp"), 400, 0.05) == 0.0


@pytest.mark.parametrize("solver", sorted(SCALED_ALPHA_SOLVERS - {"rrpsgd"}))
def test_ridge_default_penalty_does_not_depend_on_the_features_scale(solver):
    """Below the row bound 1/sqrt(2), features times s with the row bound times s give the same predictions
    (penalty and ball scale as the curvature and the coefficients do); with the former fixed alpha = 0.1 the
    smaller scales fit almost nothing. (rrpsgd's own step, min(1/beta, 1/(sigma_G sqrt N)), takes the smaller
    of a 1/K^2 and a 1/K term, so it is not scale-free by itself.)"""
    rng = np.random.RandomState(1)
    X = rng.randn(500, 4)
    w = np.array([1.0, -0.5, 0.3, 2.0])
    y = X @ w + 0.2 * rng.randn(500)
    preds = []
    for s in (0.1, 0.01, 0.001):
        est = _fit(DPRidge(5.0, solver=solver, data_norm=3.0 * s, label_bound=(-8, 8), random_state=3), X * s, y)
        preds.append(est.predict(X[:50] * s))
    np.testing.assert_allclose(preds[1], preds[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(preds[2], preds[0], rtol=1e-6, atol=1e-8)
    assert np.corrcoef(preds[0], X[:50] @ w)[0, 1] > 0.8


def test_ridge_scaled_alpha_solvers_are_the_gradient_solvers():
    assert SCALED_ALPHA_SOLVERS == {"dp_gd", "noisy_sgd", "dp_svrg", "dp_svrg_pp", "dp_srm", "dp_lssgd", "rrpsgd"}


@pytest.mark.parametrize("solver", sorted(SCALED_ALPHA_SOLVERS | {"output_pert", "noisy_sfw_lp"}))
def test_ridge_scaled_alpha_solvers_release_the_same_whatever_alpha_and_ball(solver):
    """The solvers that say their release ignores the penalty (``release_ignores_penalty``), whose default penalty
    and ball follow the private row bound, must release the same (noise, events, price) whatever alpha and the
    ball: their plan is made before the bound is chosen. output_pert and noisy_sfw_lp do depend on them, and do
    not say so."""
    rng = np.random.RandomState(0)
    X = rng.randn(800, 5)
    y = X @ rng.randn(5)
    fits = [_fit(DPRidge(2.0, solver=solver, alpha=a, data_norm=3.0, label_bound=(-8, 8), random_state=0), X, y)
            for a in (0.1, 0.001)]
    same = (fits[0].privacy_spent_ == fits[1].privacy_spent_ and fits[0].noise_scale_ == fits[1].noise_scale_
            and fits[0].planned_events(800, 5) == fits[1].planned_events(800, 5))
    assert same == (solver in SCALED_ALPHA_SOLVERS)


def test_ridge_default_on_diabetes_as_loaded():
    """sklearn's diabetes as loaded (features of small scale, rows of norm about 0.15) at the defaults: R^2 about
    0.38 at epsilon = 5 over 20 splits (0.03 at every epsilon with the former fixed alpha = 0.1)."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    scores = []
    for seed in range(6):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
        est = _fit(DPRidge(epsilon=5.0, random_state=seed), Xtr, ytr)
        assert est.solver_ == "dp_gd"
        scores.append(est.score(Xte, yte))
    assert np.mean(scores) > 0.3, scores


def test_regressors_refuse_rather_than_release_a_wild_model_at_small_n_epsilon():
    """diabetes as loaded (309 training rows): default DPRidge scored R^2 about -5,000 at epsilon = 0.1 (the
    private bounds land far from the data). Where the bound selections cannot be reliable (each needs
    45.5 / n within half of epsilon), a regressor now refuses; elsewhere R^2 >= -1 on every split."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    for epsilon in (0.1, 0.5, 1.0, 2.0, 5.0, 100.0):
        k, n = 3, 309  # data_norm and the label range's two selections
        refuses = 45.5 / n > 0.5 * epsilon / k
        for seed in range(20):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
            est = DPRidge(epsilon=epsilon, random_state=seed)
            if refuses:
                with pytest.raises(ValueError, match="too few to choose 3 bound.*Give public bounds"):
                    est.fit(Xtr, ytr)
                assert not hasattr(est, "coef_")
            else:
                assert est.fit(Xtr, ytr).score(Xte, yte) >= -1.0, (epsilon, seed)


@pytest.mark.parametrize("make, k, n", [
    (lambda e: DPRidge(epsilon=e), 3, 200),
    (lambda e: DPLasso(epsilon=e), 2, 150),  # the label range's two selections only
    (lambda e: DPSparseLinearRegression(epsilon=e, n_nonzero_coefs=2), 3, 200),
], ids=["ridge", "lasso", "sparse"])
def test_the_refusal_comes_before_the_ledger_and_the_data_and_public_bounds_avoid_it(make, k, n):
    from skdp import PrivacyLedger

    epsilon = 1.0
    assert 45.5 / n > 0.5 * epsilon / k  # the regime
    X = np.full((n, 3), np.nan)  # never read: a NaN would raise another error
    ledger = PrivacyLedger(math.inf, 1e-5)
    with pytest.raises(ValueError, match=f"{n} rows at epsilon=1 are too few to choose {k} bound"):
        make(epsilon).fit(X, np.zeros(n), privacy_ledger=ledger)
    assert ledger.n_fits == 0
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (n, 3))
    public = make(epsilon).set_params(label_bound=(-3.0, 3.0), random_state=0)
    if "data_norm" in public.get_params():
        public.set_params(data_norm=2.0)
    assert np.isfinite(public.fit(X, X[:, 0]).privacy_spent_.epsilon)
