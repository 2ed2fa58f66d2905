"""DPRidge: single and multi-output fits, label clipping, its defaults and the penalty it scales.

Multi-output DPRidge: a 2-D ``y`` is fitted as one joint release.

Shapes follow scikit-learn's ``Ridge``; the joint sensitivity is checked against
an explicit worst-case pair of neighbours; the release passes the black-box
neighbouring-datasets test of ``_helpers.py`` and an under-noised copy fails it.
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import DataConversionWarning
from sklearn.linear_model import Ridge
from sklearn.utils.estimator_checks import check_regressor_multioutput, check_supervised_y_2d

from skdp import DPRidge, PrivacyLeakWarning, PrivacyLedger, fit_diagnostics, list_solvers
from skdp.linear_model._ridge import SCALED_ALPHA_SOLVERS
from skdp.model_selection import DPGridSearchCV
from skdp.privacy import BoundedRangeEvent, GaussianEvent, price
from skdp.privacy.mechanisms import record_draws

from ._helpers import CLAIM, DELTA, N_FITS, UNDER, canary_worlds, empirical_epsilon_lower_bound, make_reg


def _data(n=400, k=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    W = np.array([[1.0, -0.5, 0.25], [-1.0, 2.0, 0.5], [0.3, 0.0, -0.7]])[:k]
    Y = X @ W.T + 0.05 * rng.randn(n, k) + np.array([1.0, -2.0, 0.5])[:k]
    return X, Y


# ---------------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("y_shape", ["1d", "column", "3 targets"])
@pytest.mark.parametrize("solver", ["auto", "adassp", "dp_gd", "output_pert"])
def test_shapes_match_sklearn_ridge(solver, y_shape, fit_intercept):
    X, Y = _data(k=3)
    y = {"1d": Y[:, 0], "column": Y[:, :1], "3 targets": Y}[y_shape]
    ref = Ridge(fit_intercept=fit_intercept).fit(X, y)
    est = DPRidge(solver=solver, data_norm=2.0, label_bound=5.0, fit_intercept=fit_intercept,
                  random_state=0).fit(X, y)
    assert est.coef_.shape == ref.coef_.shape
    assert np.shape(est.intercept_) == np.shape(ref.intercept_)
    assert type(est.intercept_) is type(ref.intercept_) or np.ndim(ref.intercept_) == 0
    assert est.predict(X).shape == ref.predict(X).shape
    assert est.predict(X).dtype == np.float64
    if y_shape == "1d":
        assert isinstance(est.label_bound_, tuple)
    else:
        assert est.label_bound_.shape == (y.shape[1], 2)


def test_column_vector_is_the_one_target_fit():
    """``y`` of shape (n, 1) releases exactly what the 1-D fit releases (same events, same noise)."""
    X, Y = _data(k=1)
    a = DPRidge(random_state=3).fit(X, Y[:, 0])
    b = DPRidge(random_state=3).fit(X, Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert b.intercept_.shape == (1,) and b.intercept_[0] == a.intercept_
    assert a.privacy_events_ == b.privacy_events_
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_single_output_solver_takes_a_column_vector_like_sklearn():
    """A solver that fits one target treats a column vector as sklearn's single-output estimators do."""
    X, Y = _data(k=1)
    est = DPRidge(solver="noisy_sgd", data_norm=2.0, label_bound=5.0, random_state=0)
    assert not est.__sklearn_tags__().target_tags.multi_output
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        est.fit(X, Y)
    assert est.coef_.shape == (3,) and np.ndim(est.intercept_) == 0


@pytest.mark.parametrize("check", [check_regressor_multioutput, check_supervised_y_2d])
def test_sklearn_multi_output_checks_on_the_default_solver(check):
    """test_common.py checks every named solver; this is the default ``solver="auto"``, with its private
    bounds at an epsilon where sklearn's 11- and 30-row data can pay for them (a regressor refuses below)."""
    check("DPRidge", DPRidge(epsilon=1000.0, random_state=0))


def test_multi_output_tags():
    assert DPRidge().__sklearn_tags__().target_tags.multi_output
    assert DPRidge().__sklearn_tags__().target_tags.single_output
    for solver in ("adassp", "dp_gd", "dp_svrg", "output_pert"):
        assert DPRidge(solver=solver).__sklearn_tags__().target_tags.multi_output
    for solver in ("obj_pert", "noisy_sfw", "noisy_sgd", "phased_sgd"):
        assert not DPRidge(solver=solver).__sklearn_tags__().target_tags.multi_output
    # the solver table says the same
    for row in list_solvers(DPRidge):
        assert row["multi_output"] == DPRidge(solver=row["solver"]).__sklearn_tags__().target_tags.multi_output
    assert {r["solver"] for r in list_solvers(DPRidge) if r["multi_output"]} == {
        "adassp", "dp_gd", "dp_svrg", "dp_svrg_pp", "output_pert", "dp_lssgd", "rrpsgd", "dp_srm"}


@pytest.mark.parametrize("label_bound, expected", [
    (2.0, [[-2.0, 2.0]] * 3),
    ((-1.0, 3.0), [[-1.0, 3.0]] * 3),  # a tuple: one range for every target
    ([1.0, 2.0, 3.0], [[-1.0, 1.0], [-2.0, 2.0], [-3.0, 3.0]]),  # one bound per target
    (np.array([[0.0, 1.0], [-2.0, 0.0], [1.0, 5.0]]), [[0.0, 1.0], [-2.0, 0.0], [1.0, 5.0]]),
])
def test_per_target_label_bounds(label_bound, expected):
    X, Y = _data(k=3)
    est = DPRidge(solver="adassp", data_norm=2.0, label_bound=label_bound, random_state=0).fit(X, Y)
    np.testing.assert_allclose(est.label_bound_, expected)
    # each target is clipped to its own range, so the noise is relative to each target's width:
    # the solver sees every target in [-1, 1], and the joint bound is sqrt(3) whatever the widths
    assert est.privacy_events_[2].sensitivity == pytest.approx(2 * 2.0 * math.sqrt(3))


# ---------------------------------------------------------------------------------------------------
# accuracy in the noiseless limit
# ---------------------------------------------------------------------------------------------------
def test_two_targets_approach_sklearn_adassp():
    X, Y = _data(n=2000)
    est = DPRidge(epsilon=1e7, data_norm=3.0, label_bound=[5.0, 6.0], random_state=0).fit(X, Y)
    ref = Ridge(alpha=1e-8).fit(X, Y)
    assert est.solver_ == "adassp"
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-3)
    np.testing.assert_allclose(est.intercept_, ref.intercept_, atol=1e-3)


def test_two_targets_approach_sklearn_dp_gd():
    """dp_gd penalises the mean loss by alpha: sklearn's Ridge(alpha = n alpha), here without intercept."""
    X, Y = _data(n=500)
    Y = Y - Y.mean(axis=0)
    alpha = 0.01
    est = DPRidge(epsilon=1e7, solver="dp_gd", alpha=alpha, data_norm=3.0, label_bound=[6.0, 8.0],
                  fit_intercept=False, max_iter=400, random_state=0).fit(X, Y)
    ref = Ridge(alpha=alpha * X.shape[0], fit_intercept=False).fit(X, Y)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=2e-3)
    # per-target fits agree with the joint one in this limit (the targets separate)
    one = DPRidge(epsilon=1e7, solver="dp_gd", alpha=alpha, data_norm=3.0, label_bound=8.0,
                  fit_intercept=False, max_iter=400, random_state=0).fit(X, Y[:, 1])
    np.testing.assert_allclose(est.coef_[1], one.coef_, atol=2e-3)


# ---------------------------------------------------------------------------------------------------
# the joint sensitivity, computed independently
# ---------------------------------------------------------------------------------------------------
def _worst_xty_change(K, bounds):
    """``||X^T Y - X'^T Y'||_F`` for the worst replace-one pair, in the solver's units (labels / bounds).

    Row ``x = K e_1`` with every label at its bound, against ``x' = -K e_1`` with the same labels:
    ``x y^T - x' y^T = 2 K e_1 y^T``.
    """
    y = np.asarray(bounds, dtype=float) / np.asarray(bounds, dtype=float)
    x = np.zeros(4)
    x[0] = K
    return float(np.linalg.norm(np.outer(x, y) - np.outer(-x, y)))


def test_adassp_joint_release_of_xty_has_the_frobenius_sensitivity():
    K, B = 2.0, 3.0
    X, Y = _data(k=1)
    y = Y[:, 0]
    one, two = [], []
    for target, out in ((y, one), (np.column_stack([y, y]), two)):
        est = DPRidge(data_norm=K, label_bound=B, fit_intercept=False, solver="adassp", random_state=0)
        with record_draws() as draws:
            est.fit(X, target)
        out.extend([est, draws])
    (e1, d1), (e2, d2) = one, two
    assert [type(e) for e in e2.privacy_events_] == [GaussianEvent] * 3
    xty1, xty2 = e1.privacy_events_[2], e2.privacy_events_[2]
    assert xty1.sensitivity == pytest.approx(_worst_xty_change(K, [B]))
    assert xty2.sensitivity == pytest.approx(_worst_xty_change(K, [B, B]))
    assert xty2.sensitivity == pytest.approx(math.sqrt(2) * xty1.sensitivity)
    # X^T X and lambda_min are one release shared by the targets: unchanged
    assert e2.privacy_events_[:2] == e1.privacy_events_[:2]
    assert e2.noise_scale_ == e1.noise_scale_
    # one unit scale for the three releases: sigma / sensitivity is common, so X^T Y's std grows by sqrt(2)
    assert xty2.sigma / xty2.sensitivity == pytest.approx(xty1.sigma / xty1.sensitivity)
    assert xty2.sigma == pytest.approx(math.sqrt(2) * xty1.sigma)
    # both cost the same epsilon; the draws are the released ones, at the priced scale
    assert e1.privacy_spent_.epsilon == pytest.approx(e2.privacy_spent_.epsilon)
    assert e2.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
    p = X.shape[1]  # no intercept column
    sizes = (1, p * (p + 1) // 2, p * 2)  # lambda_min, upper triangle of X^T X, X^T Y (p x 2)
    assert [(d.scale, d.size) for d in d2] == [(e.sigma, s) for e, s in zip(e2.privacy_events_, sizes)]


def test_dp_gd_clips_the_joint_gradient():
    """Per-example gradient at w = 0 is ``-y x^T``: Frobenius norm ``K ||y / B||`` = ``K sqrt(k)``; the mean moves by twice that over n."""
    K = 2.0
    X, Y = _data(k=3)
    n = X.shape[0]
    est = DPRidge(solver="dp_gd", data_norm=K, label_bound=[1.0, 2.0, 3.0], fit_intercept=False, max_iter=5,
                  random_state=0).fit(X, Y)
    single = DPRidge(solver="dp_gd", data_norm=K, label_bound=1.0, fit_intercept=False, max_iter=5,
                     random_state=0).fit(X, Y[:, 0])
    (ev,), (ev1,) = est.privacy_events_, single.privacy_events_
    assert ev.sensitivity == pytest.approx(_worst_xty_change(K, [1.0, 2.0, 3.0]) / n)
    assert ev.sensitivity == pytest.approx(math.sqrt(3) * ev1.sensitivity)
    assert ev.count == ev1.count == 5
    assert est.privacy_spent_.epsilon == pytest.approx(single.privacy_spent_.epsilon)
    # Y = [y, y]: the same data twice is sqrt(2) times the sensitivity and the noise, at the same price
    twice = DPRidge(solver="dp_gd", data_norm=K, label_bound=1.0, fit_intercept=False, max_iter=5, random_state=0)
    with record_draws() as draws:
        twice.fit(X, np.column_stack([Y[:, 0], Y[:, 0]]))
    (ev2,) = twice.privacy_events_
    assert ev2.sensitivity == pytest.approx(math.sqrt(2) * ev1.sensitivity)
    assert twice.noise_scale_ == pytest.approx(math.sqrt(2) * single.noise_scale_) == ev2.sigma
    assert twice.privacy_spent_.epsilon == pytest.approx(single.privacy_spent_.epsilon)
    # every step drew one (p, 2) noise matrix at the priced std
    assert [(d.kind, d.scale, d.size) for d in draws] == [("gaussian", ev2.sigma, X.shape[1] * 2)] * ev2.count


def test_auto_label_bounds_are_chosen_per_target_and_paid():
    X, Y = _data(n=1000, k=3)  # enough rows for 1 + 6 selections at epsilon = 1 (no UserWarning)
    est = DPRidge(data_norm=2.0, random_state=0)
    ledger = PrivacyLedger(1.0, 1e-5)
    est.fit(X, Y, privacy_ledger=ledger)
    selections = [e for e in est.privacy_events_ if isinstance(e, BoundedRangeEvent)]
    assert len(selections) == 2 * 3  # a private median and MAD per target
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-4)
    assert est.privacy_events_ == est.planned_events(*X.shape, n_targets=3)
    assert ledger.spent().epsilon == pytest.approx(est.privacy_spent_.epsilon)
    assert np.all(est.label_bound_[:, 0] < est.label_bound_[:, 1])
    # every target's own range: the centres follow the targets' means (1, -2, 0.5)
    centres = est.label_bound_.mean(axis=1)
    assert np.argsort(centres).tolist() == [1, 2, 0]


def test_planned_events_depend_on_the_number_of_targets():
    est = DPRidge(data_norm=1.0, label_bound=1.0, solver="adassp")
    one, three = est.planned_events(500, 3), est.planned_events(500, 3, n_targets=3)
    assert one[2].sensitivity * math.sqrt(3) == pytest.approx(three[2].sensitivity)
    assert est.planned_events(500, 3, n_targets=1) == one
    assert price(one, 1e-5).budget.epsilon == pytest.approx(price(three, 1e-5).budget.epsilon)


# ---------------------------------------------------------------------------------------------------
# black-box privacy test of the joint release
# ---------------------------------------------------------------------------------------------------
def _two_target_worlds():
    """The canary worlds of ``_helpers.py`` with a second target; the canary's label vector is (1, 1)."""
    out = []
    for X, y in canary_worlds("reg"):
        y2 = np.append(X[:-1, 0] + X[:-1, 1], 1.0)
        out.append((X, np.column_stack([y, y2])))
    return out


def _make(solver):
    return lambda s: DPRidge(epsilon=CLAIM, delta=DELTA, solver=solver, alpha=0.5, data_norm=1.0, label_bound=1.0,
                             coef_norm=1.5, fit_intercept=False, random_state=s, max_iter=3)


def _scores(make, worlds, n_fits=N_FITS):
    """The canary direction's coefficient summed over the targets (the direction the canary moves X^T Y)."""
    return [np.array([make(s).fit(X, Y).coef_[:, 2].sum() for s in range(n_fits)]) for X, Y in worlds]


@pytest.mark.parametrize("solver", ["adassp", "dp_gd"])
def test_multi_output_release_passes_the_neighbouring_datasets_test(solver):
    s0, s1 = _scores(_make(solver), _two_target_worlds())
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb <= CLAIM, f"{solver}: empirical epsilon lower bound {eps_lb:.3f} > claim {CLAIM}"


@pytest.mark.parametrize("solver", ["adassp", "dp_gd"])
def test_neighbouring_datasets_test_detects_an_under_noised_multi_output_release(solver, under_noise):
    with under_noise(1 / UNDER):
        s0, s1 = _scores(_make(solver), _two_target_worlds())
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb > CLAIM, f"{solver}: the test did not detect an under-noised release ({eps_lb:.3f})"


# ---------------------------------------------------------------------------------------------------
# refusals
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["obj_pert", "noisy_sfw", "noisy_sfw_lp", "dp_accmd", "phased_sgd", "noisy_sgd"])
def test_single_target_solvers_refuse_multi_output_before_the_data(solver):
    X, Y = _data()
    X[0, 0] = np.nan  # never read: the refusal comes first
    ledger = PrivacyLedger(1.0, 1e-5)
    est = DPRidge(solver=solver, data_norm=2.0, label_bound=5.0, coef_norm=3.0)
    with pytest.raises(ValueError, match=f"solver '{solver}' does not support multi-output y"):
        est.fit(X, Y, privacy_ledger=ledger)
    assert ledger.n_fits == 0
    with pytest.raises(ValueError, match="does not support multi-output y"):
        est.planned_events(400, 3, n_targets=2)


def test_grid_search_refuses_multi_output_y():
    X, Y = _data()
    search = DPGridSearchCV(DPRidge(data_norm=2.0, label_bound=5.0), {"alpha": [0.1, 1.0]})
    with pytest.raises(ValueError, match="y must be 1-D"):
        search.fit(X, Y)


def test_caller_arrays_are_not_modified():
    X, Y = _data()
    Xc, Yc = X.copy(), Y.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*clips more than half")  # the tight bounds clip on purpose
        DPRidge(data_norm=0.5, label_bound=[0.5, 0.5], random_state=0).fit(X, Y)
    np.testing.assert_array_equal(X, Xc)
    np.testing.assert_array_equal(Y, Yc)


def test_search_privacy_cost_prices_the_multi_output_fits_it_runs():
    """A plain GridSearchCV over multi-output DPRidge: the cost is the price of the fits actually run."""
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, KFold

    from skdp.model_selection import search_privacy_cost

    X, Y = _data(n=1400, k=3)  # folds of 700 rows: enough for 1 + 6 selections at epsilon = 1
    base = DPRidge(solver="adassp")  # data_norm and label_bound "auto": 1 + 2 selections per target
    search = GridSearchCV(base, {"alpha": [0.0, 0.1]}, cv=KFold(2))
    cost = search_privacy_cost(search, X, Y)
    events = []
    for alpha in (0.0, 0.1):
        for train, _ in KFold(2).split(X):
            events += clone(base).set_params(alpha=alpha).fit(X[train], Y[train]).privacy_events_
    refits = [price(events + clone(base).set_params(alpha=a).fit(X, Y).privacy_events_, 1e-5).budget.epsilon
              for a in (0.0, 0.1)]
    assert cost.epsilon == pytest.approx(max(refits), rel=1e-9)


def test_label_bound_read_from_the_data_voids_the_guarantee():
    from skdp import PrivacyLeakWarning

    X, Y = _data(k=2)
    est = DPRidge(data_norm=2.0, label_bound=None, random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="label_bound was not given"):
        est.fit(X, Y)
    assert math.isinf(est.privacy_spent_.epsilon)
    assert est.planned_events(*X.shape, n_targets=2) is None
    np.testing.assert_allclose(est.label_bound_, np.column_stack([Y.min(axis=0), Y.max(axis=0)]))


def test_a_solver_that_drops_targets_is_caught(monkeypatch):
    """The estimator checks the solver's coefficient shape: a merge or a new solver that fits only the
    first column of a 2-D y fails loudly instead of broadcasting one target's coefficients."""
    from skdp.solvers import SOLVERS

    solver = SOLVERS["adassp"]
    run = type(solver).run

    def first_target_only(self, problem, plan, rng):
        result = run(self, problem, plan, rng)
        result.coef = result.coef[:, 0]
        return result

    monkeypatch.setattr(type(solver), "run", first_target_only)
    X, Y = _data(k=2)
    with pytest.raises(RuntimeError, match="returned coefficients of shape"):
        DPRidge(solver="adassp", data_norm=2.0, label_bound=5.0, random_state=0).fit(X, Y)


def test_obj_pert_squared_loss_has_no_pure_mode(reg_data):
    with pytest.raises(ValueError, match="delta"):
        make_reg(delta=0.0, solver="obj_pert").fit(*reg_data)


# ------------------------------------------------------------------ bounds
def test_labels_clipped_and_centred(reg_data):
    X, y = reg_data
    est = DPRidge(data_norm=2.5, label_bound=(-1.0, 2.0), random_state=0).fit(X, y)
    assert est.label_bound_ == (-1.0, 2.0)
    assert fit_diagnostics(est)["n_labels_clipped"] == int(np.sum((y < -1) | (y > 2)))


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        return est.fit(X, y) if y is not None else est.fit(X)


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
