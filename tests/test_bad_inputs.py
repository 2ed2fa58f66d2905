"""Bad-input matrix: every public estimator against every kind of bad input.

Each case must end in a clear ``ValueError`` / ``TypeError`` whose message names
what was wrong (or, for data beyond the public bounds, in documented clipping
with a count), never a crash from deep inside numpy, and never a modified
input array. The matrix size is ``len(DATA_CASES) x len(ESTIMATORS)`` plus one
invalid-parameter case per parameter and kind of bad value.
"""

import inspect
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.exceptions import NotFittedError

from skdp import (DPLasso, DPLinearSVC, DPLogisticRegression, DPMinMaxScaler, DPRidge, DPSparseLinearRegression,
                  DPSparseLogisticRegression, DPStandardScaler, PrivacyLeakWarning, fit_diagnostics)
from skdp.distributed import MultiPartyDPLogisticRegression
from skdp.model_selection import DPGridSearchCV

from ._helpers import CORE_SOLVERS, make_clf, make_reg

TRANSFORMERS = (DPStandardScaler, DPMinMaxScaler)
ESTIMATORS = {
    "DPLogisticRegression": DPLogisticRegression(data_norm=2.0, classes=[0, 1], random_state=0),
    "DPLinearSVC": DPLinearSVC(data_norm=2.0, classes=[0, 1], random_state=0),
    "DPSparseLogisticRegression": DPSparseLogisticRegression(classes=[0, 1], n_nonzero_coefs=2, random_state=0),
    "DPRidge": DPRidge(data_norm=2.0, label_bound=3.0, random_state=0),
    "DPLasso": DPLasso(label_bound=3.0, random_state=0),
    "DPSparseLinearRegression": DPSparseLinearRegression(label_bound=3.0, n_nonzero_coefs=2, random_state=0),
    "DPStandardScaler": DPStandardScaler(bounds=(-1.0, 1.0), random_state=0),
    "DPMinMaxScaler": DPMinMaxScaler(bounds=(-1.0, 1.0), random_state=0),
    "MultiPartyDPLogisticRegression": MultiPartyDPLogisticRegression(classes=[0, 1], n_parties=2, random_state=0),
    "DPGridSearchCV": DPGridSearchCV(DPRidge(data_norm=2.0, label_bound=3.0), {"alpha": [0.1, 1.0]},
                                     random_state=0),
}


def _data(est, n=30, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-0.5, 0.5, (n, d))
    if is_classifier(est):
        y = (X[:, 0] > 0).astype(int)
        y[:2] = [0, 1]
    else:
        y = X[:, 0] - X[:, 1]
    return X, y


def _fit(est, X, y):
    if isinstance(est, TRANSFORMERS):
        return est.fit(X)
    return est.fit(X, y)


def _call_and_check_untouched(fn, *arrays):
    """Run ``fn``; assert it did not modify any of ``arrays``; return its result or raise its error."""
    copies = [a.copy() for a in arrays]
    try:
        return fn()
    finally:
        for a, c in zip(arrays, copies):
            if sp.issparse(a):
                assert (a != c).nnz == 0 or np.array_equal(a.data, c.data, equal_nan=True)
            else:
                np.testing.assert_array_equal(a, c)


# --- data cases: (name, build(est) -> (X, y), expected error type or None, message regex) -------------------
def _with(value):
    def build(est):
        X, y = _data(est)
        X = X.astype(object) if isinstance(value, str) else X.astype(complex) if isinstance(value, complex) else X
        X[3, 1] = value
        return X, y
    return build


def _sparse_nan(est):
    X, y = _data(est)
    X = sp.csr_matrix(X)
    X.data[0] = np.nan
    return X, y


def _y_nan(est):
    X, y = _data(est)
    y = y.astype(float)
    y[4] = np.nan
    return X, y


def _mismatch(est):
    X, y = _data(est)
    return X, y[:-1]


def _empty(est):
    X, y = _data(est)
    return X[:0], y[:0]


def _one_d(est):
    X, y = _data(est)
    return X[:, 0], y


def _three_d(est):
    X, y = _data(est)
    return X[:, :, None], y


def _no_features(est):
    X, y = _data(est)
    return X[:, :0], y


def _string_y(est):
    X, _ = _data(est)
    return X, np.array(["a", "b"] * 15, dtype=object)


def _unseen_label(est):
    X, y = _data(est)
    y = y.copy()
    y[5] = 7
    return X, y


DATA_CASES = [
    ("nan", _with(np.nan), ValueError, "NaN"),
    ("inf", _with(np.inf), ValueError, "infinity|inf"),
    ("-inf", _with(-np.inf), ValueError, "infinity|inf"),
    ("object string", _with("x"), ValueError, "convert|string|float"),
    ("complex", _with(1 + 2j), ValueError, "[Cc]omplex"),
    ("sparse with explicit NaN", _sparse_nan, (ValueError, TypeError), "NaN|[Ss]parse"),
    ("y with NaN", _y_nan, ValueError, "NaN|label|class"),
    ("mismatched lengths", _mismatch, ValueError, "inconsistent numbers of samples"),
    ("empty", _empty, ValueError, "0 sample"),
    ("1-D X", _one_d, ValueError, "2D array"),
    ("3-D X", _three_d, ValueError, "dim"),
    ("no features", _no_features, ValueError, "0 feature"),
    ("string labels for a regressor / undeclared class", _string_y, ValueError, "class|label|numeric|convert"),
    ("label outside the declared classes", _unseen_label, ValueError, "class|label"),
]


@pytest.mark.parametrize("case", DATA_CASES, ids=[c[0] for c in DATA_CASES])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_bad_data(name, case):
    label, build, err, match = case
    est = clone(ESTIMATORS[name])
    X, y = build(est)
    if isinstance(est, TRANSFORMERS) and label in ("y with NaN", "mismatched lengths", "string labels for a "
                                                       "regressor / undeclared class", "label outside the declared "
                                                       "classes"):
        pytest.skip("a transformer ignores y")  # documented: DPStandardScaler.fit(X, y=None)
    if label == "label outside the declared classes" and not is_classifier(est):
        # for a regressor 7 is a number like any other; beyond label_bound it is clipped (see below)
        _call_and_check_untouched(lambda: _fit(est, X, y), X, y)
        return
    if label.startswith("string labels") and is_classifier(est):
        # undeclared classes: the public class set is [0, 1]
        match = "class"
    if label == "nan" and isinstance(est, TRANSFORMERS):
        # the DP scalers ignore missing values in fit and keep them in transform, as sklearn's scalers do
        _call_and_check_untouched(lambda: _fit(est, X, y), X)
        assert np.isnan(est.transform(X)).sum() == np.isnan(X).sum() > 0
        return
    with pytest.raises(err, match=match):
        _call_and_check_untouched(lambda: _fit(est, X, y), *(a for a in (X, y) if hasattr(a, "shape")))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_one_row_fits_or_says_why(name):
    est = clone(ESTIMATORS[name])
    X, y = _data(est)
    X1, y1 = X[:1].copy(), y[:1].copy()
    try:
        _call_and_check_untouched(lambda: _fit(est, X1, y1), X1, y1)
    except ValueError as exc:
        assert str(exc), "empty error message"
    else:
        out = est.transform(X1) if isinstance(est, TRANSFORMERS) else est.predict(X1)
        assert np.all(np.isfinite(out))


@pytest.mark.parametrize("name", [n for n in ESTIMATORS if is_classifier(ESTIMATORS[n])])
def test_one_class(name):
    X, y = _data(ESTIMATORS[name])
    y1 = np.ones_like(y)
    # the class set is public here, so one observed class is a legitimate training set
    est = _call_and_check_untouched(lambda: clone(ESTIMATORS[name]).fit(X, y1), X, y1)
    assert list(est.classes_) == [0, 1]
    # without a public class set there is nothing to learn and no private way to find the classes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match="class"):
            clone(ESTIMATORS[name]).set_params(classes=None).fit(X, y1)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_data_beyond_the_bounds_is_clipped_and_counted(name):
    est = clone(ESTIMATORS[name])
    X, y = _data(est)
    X = X * 50.0  # far beyond every public bound above
    y = y * 50.0 if is_regressor(est) or (isinstance(est, DPGridSearchCV)) else y
    _call_and_check_untouched(lambda: _fit(est, X, y), X, y)
    fitted = est.best_estimator_ if isinstance(est, DPGridSearchCV) else est
    assert fit_diagnostics(fitted)["n_rows_clipped"] > 0
    assert math.isfinite(fitted.privacy_spent_.epsilon)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_predict_side(name):
    est = clone(ESTIMATORS[name])
    X, y = _data(est)
    method = est.transform if isinstance(est, TRANSFORMERS) else est.predict
    with pytest.raises(NotFittedError):
        method(X)
    _fit(est, X, y)
    method = est.transform if isinstance(est, TRANSFORMERS) else est.predict
    with pytest.raises(ValueError, match="features"):
        method(X[:, :2])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    if isinstance(est, TRANSFORMERS):  # a missing value is kept where it is, as sklearn's scalers keep it
        out = _call_and_check_untouched(lambda: method(Xn), Xn)
        assert np.isnan(out[0, 0]) and np.isnan(out).sum() == 1
    else:
        with pytest.raises(ValueError, match="NaN"):
            _call_and_check_untouched(lambda: method(Xn), Xn)
    _call_and_check_untouched(lambda: method(X * 50), X)


# --- invalid parameters: every parameter, two kinds of bad value ----------------------------------------------
class _Junk:
    def __repr__(self):
        return "<junk>"


def _param_cases():
    cases = []
    for name, est in ESTIMATORS.items():
        for param in sorted(est.get_params(deep=False)):
            if param == "estimator":
                continue
            cases.append((name, param, _Junk()))
            if param not in ("solver", "bounds", "label_bound", "classes", "param_grid"):
                cases.append((name, param, "not-a-valid-value"))
    return cases


PARAM_CASES = _param_cases()


@pytest.mark.parametrize("name, param, value", PARAM_CASES,
                         ids=[f"{n}-{p}-{type(v).__name__}" for n, p, v in PARAM_CASES])
def test_invalid_parameter_is_named(name, param, value):
    est = clone(ESTIMATORS[name]).set_params(**{param: value})
    X, y = _data(est)
    with pytest.raises((ValueError, TypeError), match=param):
        _call_and_check_untouched(lambda: _fit(est, X, y), X, y)


@pytest.mark.parametrize("name", [n for n in ESTIMATORS if "epsilon" in ESTIMATORS[n].get_params()])
@pytest.mark.parametrize("value", [0.0, -1.0, math.inf, math.nan])
def test_bad_epsilon_values(name, value):
    est = clone(ESTIMATORS[name]).set_params(epsilon=value)
    X, y = _data(est)
    with pytest.raises(ValueError, match="epsilon"):
        _fit(est, X, y)


def test_matrix_size():
    """The size reported in the closing note (cases x estimators)."""
    n_data = len(DATA_CASES) * len(ESTIMATORS)
    assert n_data == 14 * 10 and len(PARAM_CASES) > 150


# --- multi-output DPRidge: bad per-target bounds, bad 2-D targets, single-target solvers --------------------
def _two_targets(n=30, seed=0):
    X, y = _data(DPRidge(), n=n, seed=seed)
    return X, np.column_stack([y, 2.0 * y])


MULTI_OUTPUT_PARAM_CASES = [
    ("label_bound of the wrong length", {"label_bound": [1.0, 2.0, 3.0]}, "label_bound"),
    ("one bound for two targets in a list", {"label_bound": [1.0]}, "label_bound"),
    ("negative per-target bound", {"label_bound": [1.0, -2.0]}, "label_bound"),
    ("zero per-target bound", {"label_bound": [0.0, 1.0]}, "label_bound"),
    ("NaN per-target bound", {"label_bound": [1.0, np.nan]}, "label_bound"),
    ("infinite per-target bound", {"label_bound": [1.0, np.inf]}, "label_bound"),
    ("per-target range with low >= high", {"label_bound": [[1.0, 0.0], [0.0, 1.0]]}, "label_bound"),
    ("per-target ranges of the wrong shape", {"label_bound": [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]}, "label_bound"),
    ("ranges for three targets", {"label_bound": [[0.0, 1.0]] * 3}, "label_bound"),
    ("3-D label_bound", {"label_bound": np.ones((2, 2, 1))}, "label_bound"),
    ("string bounds", {"label_bound": ["a", "b"]}, "label_bound"),
    ("shared range with low >= high", {"label_bound": (2.0, 1.0)}, "label_bound"),
    ("a solver that fits one target", {"solver": "noisy_sfw", "coef_norm": 1.0}, "noisy_sfw.*multi-output"),
    ("objective perturbation", {"solver": "obj_pert"}, "obj_pert.*multi-output"),
]


@pytest.mark.parametrize("case", MULTI_OUTPUT_PARAM_CASES, ids=[c[0] for c in MULTI_OUTPUT_PARAM_CASES])
def test_multi_output_bad_parameters_are_refused_before_the_data(case):
    from skdp import PrivacyLedger

    _, params, match = case
    X, Y = _two_targets()
    ledger = PrivacyLedger(1.0, 1e-5)
    est = clone(ESTIMATORS["DPRidge"]).set_params(**params)
    with pytest.raises(ValueError, match=match):
        _call_and_check_untouched(lambda: est.fit(X, Y, privacy_ledger=ledger), X, Y)
    assert ledger.n_fits == 0  # refused before the fit was charged, i.e. before any row was read
    with pytest.raises(ValueError, match=match):
        est.planned_events(*X.shape, n_targets=2)


def _y_nan_2d(_):
    X, Y = _two_targets()
    Y[3, 1] = np.nan
    return X, Y


MULTI_OUTPUT_DATA_CASES = [
    ("2-D y with NaN", _y_nan_2d, "NaN"),
    ("2-D y with infinity", lambda _: (_two_targets()[0], np.where(np.eye(30, 2) > 0, np.inf, _two_targets()[1])),
     "infinity|inf"),
    ("3-D y", lambda _: (_two_targets()[0], _two_targets()[1][:, :, None]), "y|dim|shape"),
    ("2-D y with no column", lambda _: (_two_targets()[0], _two_targets()[1][:, :0]), "y|shape"),
    ("2-D y with one row less", lambda _: (_two_targets()[0], _two_targets()[1][:-1]), "inconsistent numbers"),
    ("2-D string y", lambda _: (_two_targets()[0], np.full((30, 2), "a", dtype=object)), "numeric|convert|float"),
]


@pytest.mark.parametrize("case", MULTI_OUTPUT_DATA_CASES, ids=[c[0] for c in MULTI_OUTPUT_DATA_CASES])
def test_multi_output_bad_targets(case):
    _, build, match = case
    X, Y = build(None)
    est = clone(ESTIMATORS["DPRidge"])
    with pytest.raises(ValueError, match=match):
        _call_and_check_untouched(lambda: est.fit(X, Y), X, Y)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2", "two"])
def test_planned_events_bad_n_targets(value):
    with pytest.raises((ValueError, TypeError), match="n_targets"):
        clone(ESTIMATORS["DPRidge"]).planned_events(30, 3, n_targets=value)


# --- sample_weight: every estimator whose fit takes it (sklearn's DPMinMaxScaler counterpart does not) -------
def _takes_weights(est):
    return isinstance(est, DPGridSearchCV) or "sample_weight" in inspect.signature(est.fit).parameters


def _weights_with(value, n=30):
    w = np.ones(n)
    w[4] = value
    return w


WEIGHT_CASES = [
    ("negative", lambda n: _weights_with(-1.0, n), "sample_weight must be non-negative"),
    ("NaN", lambda n: _weights_with(np.nan, n), "sample_weight contains NaN"),
    ("inf", lambda n: _weights_with(np.inf, n), "sample_weight contains infinity"),
    ("wrong length", lambda n: np.ones(n - 1), r"sample_weight\.shape"),
    ("2-D", lambda n: np.ones((n, 2)), "Sample weights must be 1D"),
    ("all zero", lambda n: np.zeros(n), "at least one non-zero"),
    ("strings", lambda n: np.array(["a"] * n, dtype=object), "sample_weight: could not convert"),
]


@pytest.mark.parametrize("case", WEIGHT_CASES, ids=[c[0] for c in WEIGHT_CASES])
@pytest.mark.parametrize("name", [n for n in ESTIMATORS if _takes_weights(ESTIMATORS[n])])
def test_bad_sample_weight(name, case):
    label, build, match = case
    est = clone(ESTIMATORS[name])
    X, y = _data(est)
    w = build(len(y))
    fit = (lambda: est.fit(X, sample_weight=w)) if isinstance(est, TRANSFORMERS) else (
        lambda: est.fit(X, y, sample_weight=w))
    with pytest.raises(ValueError, match=match):
        _call_and_check_untouched(fit, X, y, w)


def test_the_weight_parameters_are_in_the_matrix():
    """max_sample_weight (every estimator taking sample_weight) and class_weight (the classifiers) are covered."""
    covered = {(name, param) for name, param, _ in PARAM_CASES}
    for name, est in ESTIMATORS.items():
        if _takes_weights(est) and not isinstance(est, DPGridSearchCV):
            assert (name, "max_sample_weight") in covered
        if is_classifier(est) and not isinstance(est, DPGridSearchCV):
            assert (name, "class_weight") in covered


@pytest.mark.parametrize("name", [n for n, e in ESTIMATORS.items() if "max_sample_weight" in e.get_params()])
@pytest.mark.parametrize("value", [0.0, -1.0, math.inf, math.nan])
def test_bad_max_sample_weight_values(name, value):
    est = clone(ESTIMATORS[name]).set_params(max_sample_weight=value)
    X, y = _data(est)
    with pytest.raises(ValueError, match="max_sample_weight"):
        _fit(est, X, y)


@pytest.mark.parametrize("name", [n for n, e in ESTIMATORS.items() if "class_weight" in e.get_params()])
@pytest.mark.parametrize("value, match", [("balanced", "class_weight='balanced'"), ({1: -1.0}, "class_weight"),
                                          ({1: math.inf}, "class_weight"), ({5: 2.0}, "class_weight")])
def test_bad_class_weight_values(name, value, match):
    est = clone(ESTIMATORS[name]).set_params(class_weight=value)
    X, y = _data(est)
    with pytest.raises(ValueError, match=match):
        _call_and_check_untouched(lambda: _fit(est, X, y), X, y)


@pytest.mark.parametrize("kwargs, match", [
    ({"noise_scale": 0.0}, "noise_scale must be positive"),
    ({"noise_scale": math.nan}, "noise_scale must be a finite"),
    ({"sensitivity": -1.0}, "sensitivity must be a finite"),
    ({"sensitivity": 0.5}, "sensitivity must exceed row_norm"),
    ({"row_norm": math.inf}, "row_norm must be a finite"),
    ({"weight_step": -1.0}, "weight_step must be a finite"),
    ({"weight_step": "1"}, "weight_step must be a finite"),
])
def test_bad_weight_coordinate_scale_arguments(kwargs, match):
    """skdp.privacy.weight_coordinate_scale (the weighted scaler's total weight) names the bad argument."""
    from skdp.privacy import weight_coordinate_scale

    args = dict(noise_scale=1.0, sensitivity=2.0, row_norm=1.0, weight_step=1.0) | kwargs
    with pytest.raises(ValueError, match=match):
        weight_coordinate_scale(**args)
    assert weight_coordinate_scale(1.0, 2.0, 1.0, 1.0) == pytest.approx(1 / math.sqrt(3))


# ----------------------------------------------------------------------------- refused before the ledger is charged
def _late_error_cases():
    from skdp.distributed import MultiPartyDPLogisticRegression

    rng = np.random.RandomState(0)
    X = rng.randn(300, 4)
    y = (X[:, 0] > 0).astype(int)
    yr = X @ [1.0, 2.0, 3.0, 4.0]
    y2 = np.where(np.arange(300) == 0, 2, y)
    return [
        pytest.param(lambda: DPLogisticRegression(classes=[0, 1]), X, y2, "classes", id="logistic-label-not-in-classes"),
        pytest.param(lambda: DPLinearSVC(classes=[0, 1]), X, y2, "classes", id="svc-label-not-in-classes"),
        pytest.param(lambda: MultiPartyDPLogisticRegression(classes=[0, 1]), X, y2, "classes",
                     id="multiparty-label-not-in-classes"),
        pytest.param(lambda: DPLogisticRegression(), X, yr, "label type", id="logistic-continuous-y"),
        pytest.param(lambda: DPLinearSVC(classes=[0, 1]), X, np.c_[y, y], "1d array", id="svc-2d-y"),
        pytest.param(lambda: DPLogisticRegression(), X, np.c_[y, y], "1d array", id="logistic-2d-y"),
        pytest.param(lambda: DPLasso(), X, np.c_[yr, yr], "1d array", id="lasso-2d-y"),
        pytest.param(lambda: DPRidge(label_bound=5.0), X, yr[:-1], "inconsistent numbers", id="ridge-y-length"),
        pytest.param(lambda: DPLogisticRegression(), X[:, :0], y, "0 feature", id="logistic-no-feature"),
        pytest.param(lambda: DPLogisticRegression(classes=[0, 1], class_weight={5: 2.0}), X, y, "class_weight",
                     id="class-weight-unknown-label"),
        pytest.param(lambda: DPSparseLogisticRegression(classes=[0, 1]), X, y2, "classes",
                     id="sparse-logistic-label-not-in-classes"),
        pytest.param(lambda: DPSparseLinearRegression(label_bound=5.0), X, np.c_[yr, yr], "1d array",
                     id="sparse-linear-2d-y"),
    ]


@pytest.mark.parametrize("make, X, y, match", _late_error_cases())
def test_bad_input_is_refused_before_the_ledger_is_charged(make, X, y, match):
    """Before: each of these fits charged the ledger, then raised while validating y or a parameter."""
    from skdp import PrivacyLedger

    ledger = PrivacyLedger(10.0, 1e-4)
    X_before, y_before = X.copy(), y.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=match):
            make().fit(X, y, privacy_ledger=ledger)
    assert ledger.n_fits == 0
    assert np.array_equal(X, X_before) and np.array_equal(y, y_before)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearSVC, DPSparseLogisticRegression, "multiparty"])
def test_a_two_dimensional_classes_is_refused(cls):
    """Before: classes=[[0, 1]] was accepted silently by the four classifiers."""
    from skdp.distributed import MultiPartyDPLogisticRegression

    make = MultiPartyDPLogisticRegression if cls == "multiparty" else cls
    X = np.random.RandomState(0).randn(100, 3)
    with pytest.raises(ValueError, match="classes must be a 1-D"):
        make(classes=[[0, 1]]).fit(X, (X[:, 0] > 0).astype(int))


def _epsilon_doc(cls):
    """The ``epsilon`` entry of a class's numpydoc Parameters (up to the next parameter line)."""
    import re

    doc = cls.__doc__
    match = re.search(r"\n    (epsilon(?:, delta)? : [^\n]*\n(?:        [^\n]*\n)*)", doc)
    return " ".join(match.group(1).split()) if match else ""  # one line: the entry's words


def test_every_estimator_says_that_infinite_epsilon_is_refused_and_refuses_it():
    import skdp
    from skdp.distributed import MultiPartyDPLogisticRegression

    classes = [getattr(skdp, name) for name in skdp.__all__ if isinstance(getattr(skdp, name), type)]
    classes = [c for c in classes + [MultiPartyDPLogisticRegression]
               if hasattr(c, "get_params") and "epsilon" in c().get_params()]
    assert len(classes) >= 9
    X, y = np.random.RandomState(0).randn(40, 2), np.arange(40) % 2
    from skdp.model_selection import DPGridSearchCV

    assert "``inf`` is refused" in _epsilon_doc(DPGridSearchCV)
    for cls in classes:
        assert "``inf`` is refused" in _epsilon_doc(cls), cls.__name__
        with pytest.raises(ValueError, match="'epsilon' parameter"):
            cls(epsilon=float("inf")).fit(X, y)


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
    for make, (X, y) in ((make_clf, clf_data), (make_reg, reg_data)):
        with pytest.raises((ValueError, TypeError), match=name):
            make(**params).fit(X, y)


def test_bad_params_checked_before_data():
    # invalid data AND invalid params: the parameter error comes first
    with pytest.raises(ValueError, match="epsilon"):
        make_clf(epsilon=-1).fit([[np.nan]], [0])


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
def test_bad_data_refused_with_a_clear_message(X, y, match):
    with pytest.raises(ValueError, match=match):
        make_clf().fit(X, y)


def test_one_class_and_unknown_labels(clf_data):
    X, y = clf_data
    with pytest.raises(ValueError, match="class"):
        DPLogisticRegression(data_norm=3.0).fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="not in classes"):
        make_clf(classes=[0, 1]).fit(X, y + 1)
    with pytest.raises(ValueError, match="classes"):
        make_clf(classes=[1]).fit(X, y)
    with pytest.raises(ValueError, match="label_bound"):
        make_reg(label_bound=(2.0, 1.0)).fit(X, y.astype(float))


def test_one_sample():
    # Without a public class set one row is one class: refused with a clear error.
    with pytest.raises(ValueError, match="class"):
        DPLogisticRegression(data_norm=3.0).fit([[1.0, 2.0]], [0])
    # With public classes, one row is a legal (if useless) private fit.
    assert make_clf().fit([[1.0, 2.0]], [0]).predict([[1.0, 2.0]]).shape == (1,)
    # A single row is a legal (if useless) regression problem.
    est = make_reg().fit([[1.0, 2.0]], [0.5])
    assert np.isfinite(est.coef_).all()


def test_inputs_not_modified(clf_data, reg_data):
    X, y = clf_data
    Xc, yc = X.copy() * 10, y.copy()
    Xkeep = Xc.copy()
    for solver in CORE_SOLVERS:
        make_clf(solver=solver).fit(Xc, yc)
    np.testing.assert_array_equal(Xc, Xkeep)
    np.testing.assert_array_equal(yc, y)
    Xr, yr = reg_data[0].copy() * 5, reg_data[1].copy() * 10
    Xr0, yr0 = Xr.copy(), yr.copy()
    make_reg().fit(Xr, yr)
    np.testing.assert_array_equal(Xr, Xr0)
    np.testing.assert_array_equal(yr, yr0)
