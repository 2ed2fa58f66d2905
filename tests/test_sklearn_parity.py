"""Each skdp estimator against its scikit-learn counterpart: methods, fitted shapes, sample_weight semantics.

For every pair: the same public methods (up to the few listed, each with why skdp does not offer it),
the same ``fit`` signature up to skdp's ``privacy_ledger``, every fitted attribute of the counterpart with
the same type and shape (binary and three-class for the classifiers, arrays and DataFrames, ``DPRidge``
with a direct and an iterative solver), and ``sample_weight`` meaning what it
means in scikit-learn: integer weights give the fit on the rows repeated that many times. A DP fit's noise
depends on the public number of rows, so the last check is made in the noiseless limit (every noise scale
times ``1e-12``, through the ``under_noise`` fixture, at a large epsilon so that no noise-led schedule,
ridge or floor is active), with the objectives matched: skdp minimises ``(1/n) sum w_i phi_i +
(alpha/2) ||w||^2``, so the repeated fit (``n' = sum w_i`` rows) uses ``alpha n / n'``.
"""

import inspect

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.linear_model import Lasso, LogisticRegression, Ridge
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.svm import LinearSVC

from skdp import (
    DPLasso,
    DPLinearSVC,
    DPLogisticRegression,
    DPMinMaxScaler,
    DPRidge,
    DPSparseLinearRegression,
    DPSparseLogisticRegression,
    DPStandardScaler,
)
from skdp.distributed import MultiPartyDPLogisticRegression

PAIRS = [
    (DPLogisticRegression, LogisticRegression),
    (DPRidge, Ridge),
    (DPLasso, Lasso),
    (DPLinearSVC, LinearSVC),
    (DPSparseLinearRegression, Lasso),
    (DPSparseLogisticRegression, LogisticRegression),
    (MultiPartyDPLogisticRegression, LogisticRegression),
    (DPStandardScaler, StandardScaler),
    (DPMinMaxScaler, MinMaxScaler),
]

#: public methods of the sklearn counterpart that skdp does not offer, and why
NOT_OFFERED = {
    "densify": "coef_ stays a dense array (a noisy DP model has no exact zeros to exploit)",
    "sparsify": "coef_ stays a dense array (a noisy DP model has no exact zeros to exploit)",
    "path": "Lasso.path computes a non-private regularisation path; each point would be a release",
    "partial_fit": "incremental fits would each be a release on the same rows; not offered",
    "set_callbacks": "sklearn's experimental fit callbacks see the iterates, which are not released",
    "set_partial_fit_request": "no partial_fit",
    "set_transform_request": "transform takes no metadata (sklearn's takes copy=)",
    "set_inverse_transform_request": "inverse_transform takes no metadata (sklearn's takes copy=)",
}

#: fitted attributes of the sklearn counterpart that skdp does not set, and why
NOT_SET = {
    "dual_gap_": "the exact duality gap is a statistic of the data (see skdp.fit_diagnostics)",
}


def _public_methods(cls):
    return {name for name, _ in inspect.getmembers(cls, callable) if not name.startswith("_")}


@pytest.mark.parametrize("ours, theirs", PAIRS, ids=[f"{a.__name__}-{b.__name__}" for a, b in PAIRS])
def test_same_public_methods(ours, theirs):
    missing = _public_methods(theirs) - _public_methods(ours) - set(NOT_OFFERED)
    assert not missing, f"{ours.__name__} lacks {sorted(missing)} of {theirs.__name__}"


@pytest.mark.parametrize("ours, theirs", PAIRS, ids=[f"{a.__name__}-{b.__name__}" for a, b in PAIRS])
def test_same_fit_signature(ours, theirs):
    """sklearn's fit parameters in sklearn's order (``check_input`` aside), then skdp's ``privacy_ledger``
    (the multi-party estimator: ``parties``, the data holders' row blocks, first)."""
    theirs_params = [p for p in inspect.signature(theirs.fit).parameters if p != "check_input"]
    ours_params = list(inspect.signature(ours.fit).parameters)
    assert ours_params[:len(theirs_params)] == theirs_params
    extra = ["parties"] if ours is MultiPartyDPLogisticRegression else []
    assert ours_params[len(theirs_params):] == extra + ["privacy_ledger"]


def _iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _fitted_attributes(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _kind(value):
    """Type and shape of a fitted attribute: an array's shape and dtype kind, a scalar's kind, else the type.

    A Python scalar and the NumPy scalar of the same kind count as the same (``float`` / ``np.float64``).
    """
    if isinstance(value, np.ndarray):
        kind = {"i": "int", "u": "int", "f": "float", "b": "bool"}.get(value.dtype.kind, value.dtype.kind)
        return ("ndarray", value.shape, kind)
    for name, types in (("bool", (bool, np.bool_)), ("int", (int, np.integer)), ("float", (float, np.floating))):
        if isinstance(value, types):
            return (name,)
    return (type(value).__name__,)


MODELS = [
    ("binary", DPLogisticRegression(classes=[0, 1], data_norm=3.0), LogisticRegression()),
    ("3 classes", DPLogisticRegression(classes=[0, 1, 2], data_norm=3.0), LogisticRegression()),
    ("binary", DPLinearSVC(classes=[0, 1], data_norm=3.0), LinearSVC()),
    ("3 classes", DPLinearSVC(classes=[0, 1, 2], data_norm=3.0), LinearSVC()),
    ("binary", DPSparseLogisticRegression(classes=[0, 1]), LogisticRegression()),
    ("3 classes", DPSparseLogisticRegression(classes=[0, 1, 2]), LogisticRegression()),
    # Ridge's n_iter_ is None for its direct solvers, one count per target for its iterative ones
    ("regression", DPRidge(data_norm=3.0, label_bound=3.0), Ridge(solver="sag")),  # dp_gd
    ("regression", DPRidge(solver="adassp", data_norm=3.0, label_bound=3.0), Ridge()),
    ("regression", DPLasso(label_bound=3.0), Lasso()),
    ("regression", DPSparseLinearRegression(label_bound=3.0), Lasso()),
    ("binary", MultiPartyDPLogisticRegression(classes=[0, 1], n_parties=2), LogisticRegression()),
    ("3 classes", MultiPartyDPLogisticRegression(classes=[0, 1, 2], n_parties=2), LogisticRegression()),
    ("transform", DPStandardScaler(bounds=(-3.0, 3.0)), StandardScaler()),
    ("transform", DPMinMaxScaler(bounds=(-3.0, 3.0)), MinMaxScaler()),
]


@pytest.mark.parametrize("frame", [False, True], ids=["array", "DataFrame"])
@pytest.mark.parametrize("kind, ours, theirs", MODELS,
                         ids=[f"{type(a).__name__}-{k}-{getattr(b, 'solver', '')}" for k, a, b in MODELS])
def test_fitted_attribute_shapes(kind, ours, theirs, frame):
    """Every fitted attribute of the sklearn counterpart, of the same type and shape (``feature_names_in_``
    with a DataFrame)."""
    X, y = _iris()
    if frame:
        X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    target = {"binary": (y > 0).astype(int), "3 classes": y, "regression": X[:, 0] - X[:, 1] if not frame
              else X["a"] - X["b"], "transform": None}[kind]
    ours = clone(ours).set_params(random_state=0).fit(X, target)
    theirs = clone(theirs).fit(X, target)
    mine = _fitted_attributes(ours)
    expected = _fitted_attributes(theirs)
    assert ("feature_names_in_" in expected) == frame
    for name, value in expected.items():
        if name in NOT_SET:
            continue
        assert name in mine, f"{type(ours).__name__} has no {name}"
        assert _kind(mine[name]) == _kind(value), f"{name}: {_kind(mine[name])} vs sklearn's {_kind(value)}"


RIDGE_SOLVERS = [("adassp", "cholesky"), ("dp_gd", "sag")]


@pytest.mark.parametrize("ours, theirs", RIDGE_SOLVERS, ids=[a for a, _ in RIDGE_SOLVERS])
@pytest.mark.parametrize("n_targets", [None, 2])
def test_ridge_n_iter_is_none_for_a_direct_solver_else_one_per_target(ours, theirs, n_targets):
    """As sklearn's ``Ridge``: ``None`` for a direct solver, an array of shape (n_targets,) for an iterative one."""
    X, _ = _iris()
    y = X[:, 0] - X[:, 1] if n_targets is None else np.column_stack([X[:, 0] - X[:, 1], X[:, 2]])
    mine = DPRidge(solver=ours, data_norm=3.0, label_bound=3.0, max_iter=5, random_state=0).fit(X, y).n_iter_
    expected = Ridge(solver=theirs).fit(X, y).n_iter_
    assert _kind(mine) == _kind(expected)
    assert (mine is None) == (ours == "adassp")


# --- sample_weight: integer weights == repeated rows, in the noiseless limit --------------------------------
N, W = 60, 3.0


def _weighted_problem(kind):
    rng = np.random.RandomState(0)
    X = rng.uniform(-0.5, 0.5, (N, 4))
    if kind == "clf":
        y = (X[:, 0] + 0.5 * X[:, 1] + 0.2 * rng.randn(N) > 0).astype(int)
    else:
        y = X @ [1.0, -1.0, 0.5, 0.0] + 0.05 * rng.randn(N)
    w = rng.randint(0, int(W) + 1, N)
    return X, y, w


def _alpha(alpha, w):
    """The repeated fit's alpha for the same objective: (1/n) sum w phi + a/2 |w|^2 = (n'/n) ((1/n') ... )."""
    return alpha * N / w.sum()


def _noiseless_cases():
    a = 0.1
    return [
        # (name, kind, make(weighted: bool, w) -> estimator, relative tolerance)
        ("DPLogisticRegression", "clf", lambda wt, w: DPLogisticRegression(
            epsilon=50.0, solver="obj_pert", data_norm=5.0, classes=[0, 1], random_state=0,
            alpha=a if wt else _alpha(a, w), max_sample_weight=W if wt else 1.0), 1e-8),
        ("DPRidge", "reg", lambda wt, w: DPRidge(
            epsilon=1e4, solver="adassp", data_norm=1.5, label_bound=5.0, random_state=0,
            alpha=a if wt else _alpha(a, w), max_sample_weight=W if wt else 1.0), 1e-8),
        ("DPLasso", "reg", lambda wt, w: DPLasso(
            epsilon=1e7, coef_norm=1.0, label_bound=5.0, max_iter=300, random_state=0,
            max_sample_weight=W if wt else 1.0), 1e-2),
        # projected SGD on the hinge loss, full batches: the averaged iterate converges like 1/sqrt(T)
        ("DPLinearSVC", "clf", lambda wt, w: DPLinearSVC(
            epsilon=1e4, solver="noisy_sgd", data_norm=5.0, classes=[0, 1], coef_norm=10.0, max_iter=5000,
            solver_options={"batch_size": 10**6}, random_state=0,
            alpha=a if wt else _alpha(a, w), max_sample_weight=W if wt else 1.0), 0.1),
        ("DPSparseLinearRegression", "reg", lambda wt, w: DPSparseLinearRegression(
            epsilon=1e4, n_nonzero_coefs=2, clip_norm=100.0, label_bound=5.0, max_iter=300, random_state=0,
            max_sample_weight=W if wt else 1.0), 1e-3),
        ("DPSparseLogisticRegression", "clf", lambda wt, w: DPSparseLogisticRegression(
            epsilon=1e4, n_nonzero_coefs=2, clip_norm=100.0, classes=[0, 1], max_iter=300, random_state=0,
            max_sample_weight=W if wt else 1.0), 1e-2),
    ]


CASES = _noiseless_cases()


@pytest.mark.parametrize("name, kind, make, rtol", CASES, ids=[c[0] for c in CASES])
def test_integer_weights_are_repeated_rows(name, kind, make, rtol, under_noise):
    X, y, w = _weighted_problem(kind)
    Xr, yr = np.repeat(X, w, axis=0), np.repeat(y, w)
    with under_noise(1e-12):
        weighted = make(True, w).fit(X, y, sample_weight=w.astype(float))
        repeated = make(False, w).fit(Xr, yr)
        ignored = make(True, w).fit(X, y)  # the weights left out: the check can fail
    scale = np.abs(repeated.coef_).max()
    gap = np.abs(np.ravel(weighted.coef_) - np.ravel(repeated.coef_)).max() / scale
    assert gap <= rtol, f"{name}: weighted vs repeated rows differ by {gap:.3g} (relative)"
    assert np.abs(np.ravel(weighted.intercept_) - np.ravel(repeated.intercept_)).max() <= rtol * max(scale, 1.0)
    assert np.abs(np.ravel(ignored.coef_) - np.ravel(repeated.coef_)).max() / scale > rtol


def test_standard_scaler_integer_weights_are_repeated_rows(under_noise):
    X, _, w = _weighted_problem("reg")
    with under_noise(1e-12):
        weighted = DPStandardScaler(epsilon=1e4, bounds=(-1, 1), max_sample_weight=W, random_state=0).fit(
            X, sample_weight=w.astype(float))
        repeated = DPStandardScaler(epsilon=1e4, bounds=(-1, 1), random_state=0).fit(np.repeat(X, w, axis=0))
    np.testing.assert_allclose(weighted.mean_, repeated.mean_, rtol=1e-9)
    np.testing.assert_allclose(weighted.var_, repeated.var_, rtol=1e-9)
    reference = StandardScaler().fit(X, sample_weight=w)  # and sklearn's weighted statistics
    np.testing.assert_allclose(weighted.mean_, reference.mean_, rtol=1e-9)
    np.testing.assert_allclose(weighted.var_, reference.var_, rtol=1e-9)
