"""skdp/bounds.py: the one place rows and labels are clipped to their public bounds.

Every DP proof needs ``||x_i|| <= K`` for the augmented row (the intercept's
constant column included) and ``|y_i - c| <= B``. The tests: no row or label
ever leaves its bound, the intercept column counts in the norm, rows inside the
bound are untouched, the counts are right, and the caller's arrays are never
modified.

A given bound that clips most of the data is told to the data holder at fit time, never stored on the model.

diabetes as loaded: ``DPRidge(label_bound=(0, 100))`` clips 294 of the 442 labels and scored R^2 -0.8 with no
hint but :func:`skdp.fit_diagnostics`.
"""

import math
import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_diabetes

from skdp import DPLasso, DPLogisticRegression, DPRidge, PrivacyLeakWarning, fit_diagnostics
from skdp.bounds import (ENTRY_CAP, append_intercept_column, bound_features, bound_labels, check_label_bound,
                         clip_features, clipped_design, row_norms)


def _adversarial_rows(seed=0, n=300, d=6):
    """Rows of every size: tiny, moderate, huge (1e6), exactly zero, and one on a coordinate axis."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * 10 ** rng.uniform(-3, 6, (n, 1))
    X[:3] = 0.0
    X[3] = 0.0
    X[3, 0] = 1e8
    return X


def _dense(M):
    return M.toarray() if sp.issparse(M) else np.asarray(M)


# ------------------------------------------------------------------------------------------
# rows: bound_features
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sparse_input", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept, intercept_scaling", [(False, None), (True, None), (True, 1.2)])
def test_bound_features_never_leaves_a_row_above_the_bound(sparse_input, fit_intercept, intercept_scaling):
    K = 2.0
    X = _adversarial_rows()
    Xin = sp.csr_matrix(X) if sparse_input else X
    before = Xin.copy()
    b = bound_features(Xin, K, fit_intercept, intercept_scaling)
    assert sp.issparse(b.X) == sparse_input
    Xb = _dense(b.X)
    norms = np.linalg.norm(Xb, axis=1)
    assert np.all(norms <= K * (1 + 1e-12))
    np.testing.assert_allclose(b.row_norms, norms, rtol=1e-12)
    assert b.data_norm == K and not b.data_derived
    # the intercept column counts in the norm: raw rows are clipped to sqrt(K^2 - c0^2)
    c0 = (0.5 * K if intercept_scaling is None else intercept_scaling) if fit_intercept else 0.0
    assert b.intercept_scaling == c0
    if fit_intercept:
        assert Xb.shape == (X.shape[0], X.shape[1] + 1)
        np.testing.assert_array_equal(Xb[:, -1], c0)
        raw = Xb[:, :-1]
    else:
        assert Xb.shape == X.shape
        raw = Xb
    k_x = math.sqrt(K**2 - c0**2)
    raw_norms = np.linalg.norm(X, axis=1)
    over = raw_norms > k_x
    assert b.n_clipped == int(over.sum()) and 0 < b.n_clipped < X.shape[0]
    np.testing.assert_array_equal(raw[~over], X[~over])  # rows inside the bound are untouched
    np.testing.assert_allclose(np.linalg.norm(raw[over], axis=1), k_x, rtol=1e-12)  # the others shrunk...
    cos = np.einsum("ij,ij->i", raw[over], X[over]) / (k_x * raw_norms[over])
    np.testing.assert_allclose(cos, 1.0, rtol=1e-12)  # ...along their own direction
    # the caller's array is not modified
    np.testing.assert_array_equal(_dense(Xin), _dense(before))
    if sparse_input:
        np.testing.assert_array_equal(Xin.indptr, before.indptr)
        np.testing.assert_array_equal(Xin.indices, before.indices)


def test_intercept_scaling_must_leave_room_in_the_bound():
    X = np.ones((4, 2))
    for c0 in (2.0, 3.0):
        with pytest.raises(ValueError, match="intercept_scaling"):
            bound_features(X, 2.0, True, c0)
    bound_features(X, 2.0, False, 3.0)  # no intercept column: its scaling is unused


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_data_derived_row_bound_warns_and_covers_every_row(fit_intercept):
    X = _adversarial_rows(1)
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        b = bound_features(X, None, fit_intercept, None)
    assert b.data_derived and b.n_clipped == 0
    assert np.all(b.row_norms <= b.data_norm * (1 + 1e-12))
    max_norm = np.linalg.norm(X, axis=1).max()
    # with the default intercept column (half of K), K is the smallest bound that clips no raw row
    expected = max_norm / math.sqrt(1 - 0.5**2) if fit_intercept else max_norm
    assert b.data_norm == pytest.approx(expected, rel=1e-12)


def test_rows_clipped_and_counted(clf_data):
    X, y = clf_data
    Xbig = X.copy()
    Xbig[:10] *= 100
    b = bound_features(Xbig, 3.0, True, 1.0)
    norms = np.linalg.norm(b.X, axis=1)
    assert np.all(norms <= 3.0 * (1 + 1e-12))
    np.testing.assert_allclose(norms[:10], 3.0, rtol=1e-12)
    small = np.linalg.norm(Xbig, axis=1) ** 2 + 1 <= 9
    np.testing.assert_array_equal(b.X[small, :-1], Xbig[small])
    assert b.n_clipped == int(np.sum(np.linalg.norm(Xbig, axis=1) > math.sqrt(8)))
    est = DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=0, intercept_scaling=1.0).fit(Xbig, y)
    assert fit_diagnostics(est)["n_rows_clipped"] == b.n_clipped


def test_row_norms_and_intercept_column_dense_and_csr():
    X = _adversarial_rows(2, n=50)
    S = sp.csr_matrix(X)
    np.testing.assert_allclose(row_norms(S), row_norms(X), rtol=1e-12)
    np.testing.assert_allclose(row_norms(X), np.linalg.norm(X, axis=1), rtol=1e-12)
    A, As = append_intercept_column(X, 0.7), append_intercept_column(S, 0.7)
    assert sp.issparse(As) and As.format == "csr"
    np.testing.assert_array_equal(As.toarray(), A)
    np.testing.assert_array_equal(A[:, :-1], X)
    np.testing.assert_array_equal(A[:, -1], 0.7)


# ------------------------------------------------------------------------------------------
# labels: bound_labels
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("label_bound", [2.0, (-1.0, 3.0)], ids=["B", "range"])
def test_bound_labels_clips_and_centres(label_bound, fit_intercept):
    rng = np.random.RandomState(3)
    y = rng.randn(500) * 3
    y_before = y.copy()
    y_c, centre, bound, n_clipped, derived = bound_labels(y, label_bound, fit_intercept)
    np.testing.assert_array_equal(y, y_before)
    low, high = (-2.0, 2.0) if np.ndim(label_bound) == 0 else label_bound
    assert n_clipped == int(np.sum((y < low) | (y > high))) > 0 and not derived
    np.testing.assert_allclose(y_c + centre, np.clip(y, low, high), rtol=0, atol=1e-15)
    assert np.all(np.abs(y_c) <= bound)
    if fit_intercept:  # centred at the public midpoint: the intercept absorbs it
        assert centre == (low + high) / 2 and bound == (high - low) / 2
    else:
        assert centre == 0.0 and bound == max(abs(low), abs(high))
    assert np.max(np.abs(y_c)) == bound  # the bound is attained by the clipped labels: not loose


def test_data_derived_label_range_warns():
    y = np.array([-1.0, 0.5, 4.0])
    with pytest.warns(PrivacyLeakWarning, match="label_bound"):
        y_c, centre, bound, n_clipped, derived = bound_labels(y, None, True)
    assert derived and n_clipped == 0 and centre == 1.5 and bound == 2.5
    with pytest.warns(PrivacyLeakWarning):
        _, _, bound, _, _ = bound_labels(np.zeros(3), None, True)
    assert bound == 1.0  # a constant label still gets a positive bound


def test_check_label_bound():
    for ok in (None, 1.0, (0.0, 2.0), [-1, 1], np.array([-3.0, 5.0])):
        check_label_bound(ok)
    for bad in (math.inf, math.nan, (1.0, 1.0), (2.0, 0.0), (0.0, math.inf), (1.0, 2.0, 3.0), [[0.0, 1.0]]):
        with pytest.raises(ValueError, match="label_bound"):
            check_label_bound(bad)


# ------------------------------------------------------------------------------------------
# coordinates: clip_features and the lazy clipped design
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sparse_input", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("intercept", [None, 0.7])
def test_clip_features_bounds_every_entry_and_copies(sparse_input, intercept):
    rng = np.random.RandomState(4)
    X = rng.randn(200, 5) * (rng.rand(200, 5) < 0.4) * 3  # sparse-ish, many entries beyond 1
    Xin = sp.csr_matrix(X) if sparse_input else X
    before = Xin.copy()
    out, n_rows = clip_features(Xin, 1.0, intercept=intercept)
    assert sp.issparse(out) == sparse_input and out.dtype == np.float64
    D = _dense(out)
    assert D.shape == (200, 5 + (intercept is not None))
    np.testing.assert_array_equal(D[:, :5], np.clip(X, -1.0, 1.0))
    if intercept is not None:
        np.testing.assert_array_equal(D[:, 5], intercept)
    assert n_rows == int(np.sum(np.abs(X).max(axis=1) > 1.0)) > 0
    np.testing.assert_array_equal(_dense(Xin), _dense(before))
    # integer input is converted, not clipped in place
    Xi = np.array([[5, -7], [0, 1]])
    out_i, n_i = clip_features(Xi, 2.0)
    np.testing.assert_array_equal(out_i, [[2.0, -2.0], [0.0, 1.0]])
    assert n_i == 1 and Xi[0, 0] == 5


@pytest.mark.parametrize("scale", [0.5, 3.0])  # 0.5: entries out of range (clipped); 3.0: none clipped
@pytest.mark.parametrize("intercept", [None, 0.7])
def test_lazy_clipped_design_matches_the_clipped_copy(scale, intercept):
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (20000, 7)) * 2.0
    X_before = X.copy()
    ref, n_ref = clip_features(X, scale, intercept=intercept)
    design, n_rows = clipped_design(X, scale, intercept=intercept)
    assert n_rows == n_ref == int(np.sum(np.abs(X).max(axis=1) > scale))
    assert design.shape == ref.shape
    rows = rng.permutation(X.shape[0])[:300]
    np.testing.assert_array_equal(design[rows], ref[rows])
    w, W = rng.randn(ref.shape[1]), rng.randn(ref.shape[1], 2)
    v, V = rng.randn(X.shape[0]), rng.randn(X.shape[0], 3)
    np.testing.assert_allclose(design @ w, ref @ w, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(design @ W, ref @ W, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(design.T @ v, ref.T @ v, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(design.T @ V, ref.T @ V, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(design.toarray(), ref)
    np.testing.assert_array_equal(X, X_before)  # only read


def test_clipped_design_of_csr_input_is_the_clipped_copy():
    X = sp.csr_matrix(np.array([[0.0, 3.0], [-0.5, 0.0], [0.0, 0.0]]))
    design, n_rows = clipped_design(X, 1.0, intercept=2.0)
    assert sp.issparse(design) and n_rows == 1
    np.testing.assert_array_equal(design.toarray(), [[0.0, 1.0, 2.0], [-0.5, 0.0, 2.0], [0.0, 0.0, 2.0]])
    assert X[0, 1] == 3.0


def _float_max_rows():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 4)
    y = X @ [1.0, 2.0, 3.0, 4.0] + 0.1 * rng.randn(300)
    X_max = X.copy()
    X_max[0] = np.finfo(np.float64).max  # validation accepts it: finite
    X_max[1, 2] = -1e200
    X_cap = np.clip(X_max, -ENTRY_CAP, ENTRY_CAP)
    return X_max, X_cap, y


@pytest.mark.parametrize("solver", ["adassp", "dp_gd", "output_pert", "noisy_sgd", "dp_accmd", "dp_svrg",
                                    "noisy_sfw", "phased_sgd"])
def test_a_row_at_the_float_maximum_is_clipped_like_any_other(solver):
    """Before: one row at the float64 maximum overflowed the products (noisy_sgd, dp_accmd: nan coefficients
    on D', finite on D: neighbours told apart). Every entry is winsorised to +-ENTRY_CAP first, a fixed
    map of each row, so the fit is the one on the capped rows, and finite."""
    from skdp import DPRidge

    X_max, X_cap, y = _float_max_rows()
    fits = []
    for X in (X_max, X_cap, sp.csr_matrix(X_max)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(DPRidge(epsilon=1.0, solver=solver, data_norm=3.0, label_bound=30.0,
                                random_state=0).fit(X, y))
    assert np.all(np.isfinite(fits[0].coef_)) and np.isfinite(fits[0].intercept_)
    np.testing.assert_allclose(fits[0].coef_, fits[1].coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fits[2].coef_, fits[1].coef_, rtol=1e-6, atol=1e-9)


def test_a_row_at_the_float_maximum_default_logistic():
    X_max, X_cap, y = _float_max_rows()
    yc = (y > 0).astype(int)
    a, b = (DPLogisticRegression(epsilon=1.0, random_state=0).fit(X, yc) for X in (X_max, X_cap))
    assert np.all(np.isfinite(a.coef_))
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)


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


@pytest.fixture(scope="module")
def diabetes_as_loaded():
    return load_diabetes(return_X_y=True)


def _fit(est, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return [str(w.message) for w in caught if "clips more than half" in str(w.message)]


@pytest.mark.parametrize("make, name, what", [
    (lambda: DPRidge(label_bound=(0, 100), data_norm=1.0), "label_bound=(0, 100)", "labels"),
    (lambda: DPLasso(label_bound=(0, 100)), "label_bound=(0, 100)", "labels"),
    (lambda: DPRidge(label_bound=(0, 400), data_norm=0.01), "data_norm=0.01", "rows"),
], ids=["ridge-labels", "lasso-labels", "ridge-rows"])
def test_a_given_bound_that_clips_most_of_the_data_warns_without_the_count(diabetes_as_loaded, make, name, what):
    X, y = diabetes_as_loaded
    est = make().set_params(random_state=0)
    (message,) = _fit(est, X, y)
    assert name in message and f"more than half of the {what}" in message and "'auto'" in message
    count = fit_diagnostics(est)[f"n_{what}_clipped"]
    assert count > len(y) / 2  # the warning is true
    assert not re.search(rf"\b{count}\b", message)  # and carries no count
    # nothing about it travels with the model
    state = pickle.dumps(est)
    assert b"clipped" not in state and not [k for k in vars(est) if "clip" in k and "norm" not in k]


@pytest.mark.parametrize("make", [
    lambda: DPRidge(label_bound=(0, 400), data_norm=1.0),  # clips nothing
    lambda: DPRidge(label_bound=(100, 400), data_norm=1.0),  # clips some labels, fewer than half
    lambda: DPRidge(epsilon=5.0),  # private bounds: not the user's to check
], ids=["wide", "some", "auto"])
def test_no_warning_when_most_of_the_data_is_kept_or_the_bound_is_private(diabetes_as_loaded, make):
    X, y = diabetes_as_loaded
    est = make().set_params(random_state=0)
    assert _fit(est, X, y) == []
    if est.label_bound == (100, 400):
        assert 0 < fit_diagnostics(est)["n_labels_clipped"] < len(y) / 2  # the threshold is what is tested


def test_a_classifier_row_bound_warns_too():
    rng = np.random.RandomState(0)
    X = rng.randn(400, 3) * 10
    (message,) = _fit(DPLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0), X, (X[:, 0] > 0) * 1)
    assert "data_norm=1.0" in message and "rows" in message
