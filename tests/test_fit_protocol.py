"""One fit protocol for every estimator: charge the plan, release, price; the same privacy attributes.

Every skdp estimator (the multi-party one included) charges ``planned_events(n, d)`` to a ledger before
the data is read, and after the fit reports what ran in the same attributes. These tests hold every
estimator to that, so a new estimator that sets its attributes by hand, or forgets the ledger, fails here.
"""

import inspect
import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skdp import (DPLasso, DPLinearSVC, DPLogisticRegression, DPMinMaxScaler, DPRidge, DPSparseLinearRegression,
                  DPSparseLogisticRegression, DPStandardScaler, PrivacyBudget, PrivacyLedger, fit_diagnostics)
from skdp import BudgetExceededError
from skdp.distributed import MultiPartyDPLogisticRegression
from skdp.exceptions import SpentFitError
from skdp.privacy import BoundedRangeEvent, price
from skdp.solvers import SOLVERS, Solver, register

from ._helpers import CORE_SOLVERS, make_clf, make_reg

PRIVACY_ATTRIBUTES = {"privacy_spent_", "privacy_nominal_", "privacy_events_", "accountant_", "noise_scale_",
                      "noise_source_"}

MODELS = [
    DPLogisticRegression(classes=[0, 1]),
    DPLogisticRegression(classes=[0, 1, 2]),
    DPLogisticRegression(classes=[0, 1], data_norm=2.0, solver="obj_pert"),
    DPRidge(label_bound=(-3, 3)),
    DPRidge(epsilon=2.0, label_bound="auto"),  # 3 private bounds need epsilon >= 273 / n (a regressor refuses)
    DPLasso(label_bound=(-3, 3)),
    DPLinearSVC(classes=[0, 1]),
    DPSparseLinearRegression(n_nonzero_coefs=2, label_bound=(-3, 3)),
    DPSparseLogisticRegression(n_nonzero_coefs=2, classes=[0, 1]),
    MultiPartyDPLogisticRegression(classes=[0, 1], n_parties=3),
    MultiPartyDPLogisticRegression(classes=[0, 1], solver="mpc_output_pert", n_parties=4),
]
SCALERS = [DPStandardScaler(bounds=(-3, 3)), DPMinMaxScaler(bounds=(-3, 3))]


def _data(est, n=300, d=4, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, d)) / 2
    k = len(getattr(est, "classes", None) or [0, 1])
    if is_classifier(est):
        y = (X[:, 0] > 0).astype(int) if k == 2 else np.digitize(X[:, 0], [-1 / 6, 1 / 6])
    else:
        y = 2 * X[:, 0] - X[:, 1] + 0.1 * rng.randn(n)
    return X, y


@pytest.mark.parametrize("est", MODELS + SCALERS, ids=lambda e: type(e).__name__)
def test_every_estimator_reports_the_same_privacy_attributes(est):
    X, y = _data(est)
    fitted = clone(est).fit(X, y)
    missing = PRIVACY_ATTRIBUTES - set(vars(fitted))
    assert not missing, f"{type(est).__name__} lacks {sorted(missing)}"
    report = price(fitted.privacy_events_, fitted.delta)
    assert fitted.accountant_ == report.method
    assert fitted.privacy_nominal_ == report.budget == fitted.privacy_spent_
    assert fitted.privacy_spent_.epsilon <= fitted.epsilon * (1 + 1e-9)
    assert np.all(np.asarray(fitted.noise_scale_) > 0) and fitted.noise_source_ == "os-entropy"


@pytest.mark.parametrize("est", MODELS + SCALERS, ids=lambda e: type(e).__name__)
def test_the_ledger_is_charged_the_plan_before_the_data_is_read(est):
    X, y = _data(est)
    planned = clone(est).planned_events(*X.shape)
    assert planned, "a fit with public bounds has a finite plan"
    ledger = PrivacyLedger(100.0, est.delta)
    with ledger:
        fitted = clone(est).fit(X, y)
    assert ledger.n_fits == 1
    assert ledger.spent().epsilon == pytest.approx(price(planned, fitted.delta).budget.epsilon, rel=1e-9)
    # what ran is priced like what was planned (equal events where no bound is chosen privately)
    assert price(fitted.privacy_events_, fitted.delta).budget.epsilon == pytest.approx(
        price(planned, fitted.delta).budget.epsilon, rel=1e-9)
    # a ledger too small refuses the fit before any row is read (X of the wrong type would fail validation)
    with PrivacyLedger(1e-3, est.delta), pytest.raises(Exception, match="budget|exceed"):
        clone(est).fit(X, y)


def test_multi_party_plan_uses_the_public_party_sizes():
    X, y = _data(MODELS[-2], n=400)
    parties = np.repeat([0, 1, 2], [50, 150, 200])  # the smallest party (50 rows) sets the sensitivity
    est = MultiPartyDPLogisticRegression(classes=[0, 1], max_iter=3)
    planned = est.planned_events(400, 4, parties=parties)
    equal = est.planned_events(400, 4)  # 2 contiguous blocks of 200
    assert planned[0].sensitivity > equal[0].sensitivity
    # replace-one in the smallest party moves the average of the m party means by 2 G / (m n_min), G = K / 2,
    # plus the fixed-point rounding allowance sqrt(d) 2^-f (d = 4 features + intercept)
    K, m, n_min, d = est.data_norm, 3, 50, 5
    rounding = math.sqrt(d) * 2.0 ** -est.frac_bits
    assert planned[0].sensitivity == pytest.approx((2 * (K / 2) / n_min + rounding) / m, rel=1e-12)
    fitted = clone(est).fit(X, y, parties=parties)
    assert fitted.privacy_events_ == list(planned)
    ledger = PrivacyLedger(50.0, est.delta)
    clone(est).fit(X, y, parties=parties, privacy_ledger=ledger)
    assert ledger.spent().epsilon == pytest.approx(fitted.privacy_spent_.epsilon, rel=1e-9)
    assert MultiPartyDPLogisticRegression(classes=None).planned_events(400, 4) is None  # read from the data


@pytest.mark.parametrize("est", [DPLogisticRegression(classes=None), DPLinearSVC(classes=None),
                                 DPSparseLogisticRegression(classes=None),
                                 MultiPartyDPLogisticRegression(classes=None)], ids=lambda e: type(e).__name__)
def test_a_class_set_read_from_the_data_voids_the_guarantee_everywhere(est):
    X, y = _data(est)
    with pytest.warns(Warning, match="classes was not given"):
        fitted = clone(est).fit(X, y)
    assert math.isinf(fitted.privacy_spent_.epsilon) and math.isfinite(fitted.privacy_nominal_.epsilon)


@pytest.mark.parametrize("est", [DPLogisticRegression, DPLinearSVC, DPSparseLogisticRegression,
                                 MultiPartyDPLogisticRegression], ids=lambda e: e.__name__)
@pytest.mark.parametrize("classes, match", [([0, 0, 1], "repeat"), ([1], "at least 2")])
def test_class_set_rules_are_the_same_for_every_classifier(est, classes, match):
    X, y = _data(est())
    with pytest.raises(ValueError, match=match):
        est(classes=classes).fit(X, y)
    with pytest.raises(ValueError, match="not in classes"):
        est(classes=[0, 5]).fit(X, y)


@pytest.mark.parametrize("est", [DPLinearSVC, DPSparseLogisticRegression, MultiPartyDPLogisticRegression],
                         ids=lambda e: e.__name__)
def test_binary_only_classifiers_plan_one_vs_rest_before_reading_the_data(est):
    planned = est(classes=[0, 1, 2]).planned_events(300, 2)  # public: three one-vs-rest fits
    binary = est(classes=[0, 1]).planned_events(300, 2)
    assert planned != binary
    assert price(planned, 1e-5).budget.epsilon <= price(binary, 1e-5).budget.epsilon * (1 + 1e-12)


@pytest.mark.parametrize("est", MODELS, ids=lambda e: type(e).__name__)
def test_no_exact_statistic_travels_with_the_model(est):
    X, y = _data(est)
    X[::5] *= 20  # some rows above every bound used above
    fitted = clone(est).fit(X, y)
    assert "n_rows_clipped" in fit_diagnostics(fitted)
    assert not [k for k in vars(fitted) if "clipped" in k or "residual" in k]
    assert fit_diagnostics(pickle.loads(pickle.dumps(fitted))) == {}


@pytest.mark.parametrize("est", [m for m in MODELS if is_classifier(m)], ids=lambda e: type(e).__name__)
def test_classifier_predictions_are_consistent(est):
    X, y = _data(est)
    fitted = clone(est).fit(X, y)
    scores = fitted.decision_function(X)
    pred = fitted.predict(X)
    idx = (scores > 0).astype(int) if scores.ndim == 1 else np.argmax(scores, axis=1)
    np.testing.assert_array_equal(pred, fitted.classes_[idx])
    if hasattr(fitted, "predict_proba"):
        P = fitted.predict_proba(X)
        np.testing.assert_allclose(P.sum(axis=1), 1.0)
        np.testing.assert_array_equal(fitted.classes_[np.argmax(P, axis=1)], pred)
        logP = fitted.predict_log_proba(X)
        assert np.all(np.isfinite(logP))
        np.testing.assert_allclose(np.exp(logP), P, atol=1e-12)


def test_lasso_radius_is_coef_norm_with_a_deprecation():
    from skdp import DPLasso

    X, y = _data(DPLasso())
    new = DPLasso(coef_norm=2.0, label_bound=(-3, 3), random_state=0).fit(X, y)
    with pytest.warns(FutureWarning, match="renamed 'coef_norm'"):
        old = DPLasso(radius=2.0, label_bound=(-3, 3), random_state=0).fit(X, y)
    np.testing.assert_array_equal(old.coef_, new.coef_)
    assert np.abs(new.coef_).sum() <= 2.0 + 1e-9


def test_multi_party_mechanism_is_solver_with_a_deprecation():
    X, y = _data(MODELS[-1])
    new = MultiPartyDPLogisticRegression(solver="mpc_output_pert", classes=[0, 1], random_state=0).fit(X, y)
    with pytest.warns(FutureWarning, match="renamed 'solver'"):
        old = MultiPartyDPLogisticRegression(mechanism="mpc_output_pert", classes=[0, 1], random_state=0).fit(X, y)
    np.testing.assert_array_equal(old.coef_, new.coef_)
    assert old.privacy_events_ == new.privacy_events_


@pytest.mark.parametrize("est", MODELS + SCALERS, ids=lambda e: type(e).__name__)
def test_delta_of_at_least_one_over_n_is_warned_with_both_numbers(est):
    from skdp import WeakDeltaWarning

    X, y = _data(est, n=200)
    with pytest.warns(WeakDeltaWarning, match=r"delta=0.005 is at least 1/n = 1/200"):
        clone(est).set_params(delta=0.005).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WeakDeltaWarning)
        clone(est).set_params(delta=1e-4).fit(X, y)  # 1e-4 < 1/200: silent


@pytest.mark.parametrize("est", [m for m in MODELS if is_classifier(m)], ids=lambda e: type(e).__name__)
def test_classifier_attributes_have_sklearns_shapes(est):
    X, y = _data(est)
    fitted = clone(est).fit(X, y)
    k = len(fitted.classes_)
    rows = 1 if k == 2 else k
    assert fitted.coef_.shape == (rows, X.shape[1]) and np.shape(fitted.intercept_) == (rows,)


# ------------------------------------------------------------------ budgets
@pytest.mark.parametrize("solver", CORE_SOLVERS)
@pytest.mark.parametrize("eps, delta", [(0.5, 1e-5), (2.0, 1e-6)])
def test_privacy_spent_meets_target(clf_data, reg_data, solver, eps, delta):
    for est, (X, y) in ((make_clf(epsilon=eps, delta=delta, solver=solver), clf_data),
                        (make_reg(epsilon=eps, delta=delta, solver=solver), reg_data)):
        est.fit(X, y)
        spent = est.privacy_spent_
        assert isinstance(spent, PrivacyBudget) and spent.relation == "replace_one"
        assert spent <= PrivacyBudget(eps, delta)
        assert spent.epsilon >= 0.99 * eps  # calibrated to the target, not wasteful


# -- the fit protocol's guards (skdp._fit.private_fit) -------------------------------------------------------------
class _RowsOfUnreadableShape:
    """An array-like whose shape sklearn's ``_num_features`` cannot read (its first row is a string) while
    ``np.asarray`` (and so the input validation) accepts it as numbers."""

    def __init__(self, a):
        self.a = a

    def __len__(self):
        return len(self.a)

    def __getitem__(self, i):
        return "row"

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


@pytest.mark.parametrize("est", MODELS + SCALERS, ids=lambda e: type(e).__name__)
def test_an_input_whose_shape_cannot_be_read_is_refused_uncharged_and_unfitted(est):
    """The ledger is charged from the public shape before any row is read; an input whose shape cannot be read
    but that validation would accept is refused (TypeError naming X) before anything is drawn or released."""
    X, y = _data(est)
    ledger = PrivacyLedger(10.0, 1e-3)
    args = (y,) if not isinstance(est, (DPStandardScaler, DPMinMaxScaler)) else ()
    with pytest.raises(TypeError, match="shape .* of X could not be read"):
        clone(est).fit(_RowsOfUnreadableShape(X), *args, privacy_ledger=ledger)
    assert ledger.n_fits == 0


WEIGHTED = [e for e in MODELS + SCALERS if "sample_weight" in inspect.signature(type(e).fit).parameters]


@pytest.mark.parametrize("est", WEIGHTED, ids=lambda e: type(e).__name__)
def test_a_bad_sample_weight_is_refused_before_the_ledger_is_charged(est):
    X, y = _data(est)
    args = (y,) if not isinstance(est, (DPStandardScaler, DPMinMaxScaler)) else ()
    for bad, match in ((-np.ones(len(X)), "non-negative"), (np.ones(len(X) - 1), "sample_weight"),
                       (np.full(len(X), np.nan), "sample_weight|NaN")):
        ledger = PrivacyLedger(10.0, 1e-3)
        with pytest.raises(ValueError, match=match):
            clone(est).fit(X, *args, sample_weight=bad, privacy_ledger=ledger)
        assert ledger.n_fits == 0, bad


@pytest.mark.parametrize("est", MODELS + SCALERS, ids=lambda e: type(e).__name__)
def test_a_failed_refit_leaves_the_estimator_unfitted(est):
    """A fit replaces the model: one that fails after the parameters' checks (here the ledger refuses it) leaves
    nothing of the earlier fit, so the estimator cannot look fitted with attributes of another fit."""
    X, y = _data(est)
    args = (y,) if not isinstance(est, (DPStandardScaler, DPMinMaxScaler)) else ()
    model = clone(est).set_params(random_state=0).fit(X, *args)
    check_is_fitted(model)
    with pytest.raises(BudgetExceededError):
        model.set_params(random_state=1).fit(X, *args, privacy_ledger=PrivacyLedger(0.5 * model.epsilon, 1e-3))
    assert not [k for k in vars(model) if k.endswith("_") and not k.startswith("_")]
    with pytest.raises(NotFittedError):
        check_is_fitted(model)


def test_a_dataframe_column_named_like_a_marker_is_just_a_column():
    """Rows that live elsewhere (Dask) are recognised by their type, never by an attribute: a DataFrame with a
    column named ``reduced_rows`` (an attribute of the DataFrame) fits as any other."""
    pd = pytest.importorskip("pandas")
    X, y = _data(DPLogisticRegression(classes=[0, 1]))
    df = pd.DataFrame(X, columns=["reduced_rows", "n", "d", "X"])
    for est in (DPLogisticRegression(classes=[0, 1], random_state=0), DPStandardScaler(bounds=(-3, 3), random_state=0)):
        fitted = est.fit(df, y) if is_classifier(est) else est.fit(df)
        assert list(fitted.feature_names_in_) == list(df.columns)


def test_a_refusal_after_private_bounds_reports_every_selection_that_ran():
    """A solver that refuses after the label set, the feature scaling and the row bound were chosen privately:
    the SpentFitError carries all of their events (the price the rows paid), not only the label set's."""
    class Refusing(Solver):
        name = "demo_refusing"
        source = card = summary = "a solver of the test suite that refuses when run"
        reference = "doc/user_guide/solvers.rst"
        requires = frozenset({"smooth"})

        def plan(self, problem, budget):
            return []

        def solve(self, problem, budget, rng):
            raise ValueError("this solver refuses the bounded problem")

    register(Refusing)
    try:
        rng = np.random.RandomState(0)
        X = rng.randn(3000, 3)
        y = (X[:, 0] > 0).astype(int)
        with pytest.raises(SpentFitError, match="refuses the bounded problem") as info:
            DPLogisticRegression(solver="demo_refusing", random_state=0).fit(X, y)
        kinds = [type(ev) for ev in info.value.privacy_events]
        assert BoundedRangeEvent in kinds and len(kinds) >= 2, kinds  # the row bound and the label set
    finally:
        del SOLVERS[Refusing.name]
