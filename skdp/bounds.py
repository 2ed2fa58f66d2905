"""Bounded data: the one place where rows and labels are clipped.

Every DP proof in skdp needs public bounds: ``||x_i||_2 <= K`` for each row
(the intercept's constant column included), ``|y_i - c| <= B`` for regression
labels around a public centre ``c``, and for some solvers ``||w||_2 <= M``.
This module applies them and reports what it did. Wang, Ye and Xu 2017 and
Zhang, Zheng, Mou and Wang 2017 assume such bounds without enforcing them;
the strongly convex sensitivities need the intercept penalised like every
other coordinate (see :doc:`/papers/seed002`), and objective perturbation's
constants must bound the augmented row, intercept column included (see
:doc:`/papers/seed003`; user guide: :doc:`/user_guide/bounds`).

The intercept is an extra constant feature of value ``intercept_scaling``
(``c0``). Raw rows are clipped to ``K_x = sqrt(K^2 - c0^2)`` *before* the column
is appended, so that the augmented row has norm at most ``K``.

A bound the user did not give is computed from the data; that emits
:class:`~skdp.exceptions.PrivacyLeakWarning`, is stored on the estimator as a
fitted attribute, and voids the guarantee (``privacy_spent_.epsilon`` is
``inf``). A bound is never written back into a parameter.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .exceptions import PrivacyLeakWarning
from .privacy.quantile import (DEFAULT_NORM_GRID, DEFAULT_SIGNED_GRID, grid_counts, private_quantile,
                               private_quantile_from_counts)

__all__ = [
    "private_row_bound",
    "augmented_row_bound",
    "private_label_range",
    "label_range_from_counts",
    "private_clip_norm",
    "BoundedData",
    "bound_features",
    "bound_labels",
    "public_label_range",
    "row_norms",
    "append_intercept_column",
    "clip_features",
    "CoordinateClippedDesign",
    "clipped_design",
    "check_label_bound",
]


def row_norms(X):
    """L2 norm of every row of a dense array or sparse matrix."""
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def _scale_rows(X, factors):
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(factors) @ X)
    return X * factors[:, None]


def append_intercept_column(X, value):
    """Return ``[X, value * 1]`` (CSR stays CSR)."""
    n = X.shape[0]
    if sp.issparse(X):
        col = sp.csr_matrix(np.full((n, 1), float(value)))
        return sp.hstack([X, col], format="csr")
    return np.hstack([X, np.full((n, 1), float(value), dtype=X.dtype)])


@dataclass
class BoundedData:
    """Clipped, augmented design matrix and the bounds that hold for it."""

    X: object  # (n, p) with the intercept column last when fit_intercept
    data_norm: float  # K: every row of X has norm <= K
    n_clipped: int  # raw rows that were shrunk
    data_derived: bool  # True if K was read from the data
    row_norms: np.ndarray  # norms of the rows of X (after clipping)
    intercept_scaling: float = 0.0  # value c0 of the appended column


def bound_features(X, data_norm, fit_intercept, intercept_scaling, default_fraction=0.5):
    """Clip rows to the public norm bound and append the intercept column.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Validated features. Never modified.
    data_norm : float or None
        Bound ``K`` on the L2 norm of each augmented row. ``None`` reads it from
        the data (max row norm), with a :class:`PrivacyLeakWarning`.
    fit_intercept : bool
    intercept_scaling : float or None
        Value ``c0`` of the constant column; must be ``< data_norm``. ``None``
        uses ``default_fraction * data_norm``.
    default_fraction : float, default=0.5
        Fraction of ``K`` given to the intercept column when
        ``intercept_scaling`` is ``None`` (raw rows are clipped to
        ``K sqrt(1 - fraction^2)``).

    Returns
    -------
    BoundedData
    """
    half = intercept_scaling is None
    c0 = (0.0 if half else float(intercept_scaling)) if fit_intercept else 0.0
    norms = row_norms(X)
    derived = data_norm is None
    if derived:
        max_norm = float(np.max(norms, initial=0.0)) or 1.0
        if half and fit_intercept:
            K = max_norm / math.sqrt(1.0 - default_fraction**2)
        else:
            K = math.sqrt(max_norm**2 + c0**2)
        warnings.warn(
            "data_norm was not given, so the row norm bound was computed from the data "
            f"(data_norm_={K:.4g}). This leaks information and voids the privacy guarantee "
            "(privacy_spent_.epsilon is inf). Pass a data_norm chosen without looking at "
            "the data to get a real guarantee.",
            PrivacyLeakWarning,
            stacklevel=4,
        )
    else:
        K = float(data_norm)
    if half and fit_intercept:
        c0 = default_fraction * K
    if c0 >= K:
        raise ValueError(
            f"intercept_scaling={c0!r} must be smaller than data_norm={K!r}: the constant "
            "intercept column counts towards the row norm bound."
        )
    k_x = math.sqrt(K * K - c0 * c0)
    over = norms > k_x
    n_clipped = int(np.count_nonzero(over))
    if n_clipped:
        factors = np.ones_like(norms)
        factors[over] = k_x / norms[over]
        Xc = _scale_rows(X, factors)
        norms = np.where(over, k_x, norms)
    else:
        Xc = X
    if fit_intercept:
        Xc = append_intercept_column(Xc, c0)
        norms = np.sqrt(norms**2 + c0**2)
    return BoundedData(Xc, K, n_clipped, derived, norms, c0)


def public_label_range(label_bound, fit_intercept):
    """(low, high, centre, bound) from a public ``label_bound`` (``B`` or ``(low, high)``)."""
    if np.ndim(label_bound) == 0:
        low, high = -float(label_bound), float(label_bound)
    else:
        low, high = (float(v) for v in label_bound)
    if fit_intercept:
        return low, high, (low + high) / 2, (high - low) / 2
    return low, high, 0.0, max(abs(low), abs(high))


def bound_labels(y, label_bound, fit_intercept):
    """Clip regression labels to a public range.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
    label_bound : float, (low, high) or None
        ``B`` means ``|y| <= B``; ``(low, high)`` means ``low <= y <= high``.
        With an intercept, labels are centred at the public midpoint
        ``(low + high)/2`` (the intercept absorbs it), so the bound used by the
        proofs is ``(high - low)/2``. ``None`` reads the range from the data,
        with a :class:`PrivacyLeakWarning`.
    fit_intercept : bool

    Returns
    -------
    y_centred : ndarray, the clipped labels minus the centre
    centre : float
    bound : float, the bound ``B`` on ``|y_centred|``
    n_clipped : int
    derived : bool
    """
    if label_bound is not None:
        low, high, centre, bound = public_label_range(label_bound, fit_intercept)
        derived = False
    else:
        low, high = float(np.min(y)), float(np.max(y))
        warnings.warn(
            "label_bound was not given, so the label range was computed from the data "
            f"([{low:.4g}, {high:.4g}]). This leaks information and voids the privacy "
            "guarantee (privacy_spent_.epsilon is inf). Pass label_bound chosen without "
            "looking at the data to get a real guarantee.",
            PrivacyLeakWarning,
            stacklevel=4,
        )
        low, high, centre, bound = public_label_range((low, high), fit_intercept)
        bound = bound or 1.0
        derived = True
    n_clipped = int(np.count_nonzero((y < low) | (y > high)))
    return np.clip(y, low, high) - centre, centre, bound, n_clipped, derived


def _rows_out_of_range(X, bound):
    """Number of rows of dense ``X`` with an entry outside ``[-bound, bound]``."""
    if not X.size or (X.max() <= bound and X.min() >= -bound):  # flat reductions: half the row-wise cost
        return 0
    return int(np.count_nonzero((X.max(axis=1) > bound) | (X.min(axis=1) < -bound)))


def clip_features(X, bound, intercept=None):
    """Clip every entry to ``[-bound, bound]`` (an L-infinity row bound, as the sparse solvers use).

    Returns the clipped float64 copy and the number of rows touched. The
    caller's array is never modified; CSR input stays CSR (zeros are in range).
    With ``intercept`` set, a constant column of that value is appended in the
    same pass (dense input: one allocation, no second copy).
    """
    if sp.issparse(X):
        Xc = X.astype(np.float64, copy=True).tocsr()
        over = np.abs(Xc.data) > bound
        rows = np.unique(np.repeat(np.arange(Xc.shape[0]), np.diff(Xc.indptr))[over])
        np.clip(Xc.data, -bound, bound, out=Xc.data)
        if intercept is not None:
            Xc = append_intercept_column(Xc, intercept)
        return Xc, int(rows.size)
    X = np.asarray(X)
    n_rows = _rows_out_of_range(X, bound)
    d = X.shape[1]
    out = np.empty((X.shape[0], d + (intercept is not None)), dtype=np.float64)
    np.clip(X, -bound, bound, out=out[:, :d])
    if intercept is not None:
        out[:, d] = float(intercept)
    return out, n_rows


class CoordinateClippedDesign:
    """``[clip(X, -R, R), c]`` as a read-only operator, without copying ``X``.

    The design a coordinate-clipped solver sees (every entry clipped to
    ``[-R, R]``, then an optional constant intercept column ``c``), applied
    lazily: when no entry of ``X`` is out of range (checked once) products use
    ``X`` directly; otherwise they clip blocks of rows on the fly. Row gathers
    ``design[rows]`` return a dense clipped copy of just those rows. Supports
    what the one-pass and mirror-descent solvers use: ``shape``, ``dtype``,
    ``design[rows]``, ``design @ w``, ``design.T @ v`` (vectors or 2-D).
    Clipping is the same map as :func:`clip_features`, so the bounds (and every
    sensitivity built on them) are unchanged; only the memory traffic differs.
    """

    _block = 8192

    def __init__(self, X, bound, intercept=None, needs_clip=True):
        self._X = X
        self._bound = float(bound)
        self._c = None if intercept is None else float(intercept)
        self._clip = bool(needs_clip)
        self.shape = (X.shape[0], X.shape[1] + (intercept is not None))
        self.dtype = np.dtype(np.float64)
        self.ndim = 2

    def _rows(self, block):
        d = block.shape[1]
        out = np.empty((block.shape[0], self.shape[1]))
        if self._clip:
            np.clip(block, -self._bound, self._bound, out=out[:, :d])
        else:
            out[:, :d] = block
        if self._c is not None:
            out[:, d] = self._c
        return out

    def __getitem__(self, rows):
        return self._rows(self._X[rows])

    def toarray(self):
        """The clipped design as a dense array (tests, small data)."""
        return self._rows(self._X)

    def _blocks(self):
        n = self._X.shape[0]
        for i in range(0, n, self._block):
            yield i, np.clip(self._X[i:i + self._block], -self._bound, self._bound)

    def __matmul__(self, w):
        w = np.asarray(w, dtype=np.float64)
        d = self._X.shape[1]
        wx, wc = w[:d], (w[d] if self._c is not None else None)
        if self._clip:
            out = np.empty((self.shape[0],) + w.shape[1:])
            for i, B in self._blocks():
                out[i:i + B.shape[0]] = B @ wx
        else:
            out = self._X @ wx
        return out if wc is None else out + self._c * wc

    @property
    def T(self):
        return _TransposedDesign(self)


class _TransposedDesign:
    def __init__(self, design):
        self._design = design
        self.shape = design.shape[::-1]

    def __matmul__(self, v):
        D = self._design
        v = np.asarray(v, dtype=np.float64)
        if D._clip:
            out = np.zeros((D._X.shape[1],) + v.shape[1:])
            for i, B in D._blocks():
                out += B.T @ v[i:i + B.shape[0]]
        else:
            out = D._X.T @ v
        if D._c is None:
            return out
        return np.concatenate([out, D._c * v.sum(axis=0, keepdims=True)], axis=0)


def clipped_design(X, bound, intercept=None):
    """:func:`clip_features` without the copy for dense input.

    Returns ``(design, n_rows_clipped)``: a :class:`CoordinateClippedDesign`
    over ``X`` for dense input (the caller's array is only read), or the CSR
    copy of :func:`clip_features` for sparse input.
    """
    if sp.issparse(X):
        return clip_features(X, bound, intercept=intercept)
    X = np.asarray(X)
    n_rows = _rows_out_of_range(X, bound)
    return CoordinateClippedDesign(X, bound, intercept, needs_clip=n_rows > 0), n_rows


def check_label_bound(label_bound):
    """Validate a public ``label_bound`` (``None``, ``B > 0`` or ``(low, high)``) before any data is read."""
    lb = label_bound
    if lb is None:
        return
    if np.ndim(lb) == 0:
        if not math.isfinite(lb):
            raise ValueError(f"label_bound must be finite, got {lb!r}.")
        return
    arr = np.asarray(lb, dtype=float) if np.ndim(lb) == 1 else None
    if arr is None or arr.shape != (2,) or not np.all(np.isfinite(arr)) or not arr[0] < arr[1]:
        raise ValueError(
            f"label_bound must be a positive number B or a pair (low, high) with low < high, got {lb!r}."
        )


# ---------------------------------------------------------------------------------------------
# Bounds chosen privately (``"auto"``): each is one or two exponential-mechanism selections on a
# public grid (replace-one, a quantile's score moves by at most 1), priced as BoundedRangeEvents.
# ---------------------------------------------------------------------------------------------
def private_row_bound(X, epsilon, rng, *, quantile=0.5, factor=0.7, fit_intercept=True, intercept_scaling=None,
                      intercept_fraction=0.5):
    """``data_norm="auto"``: ``(K, event)`` with ``K`` the bound on the augmented rows.

    The raw rows are to be clipped to ``factor`` times a private ``quantile`` of
    their norms (:func:`skdp.privacy.private_quantile` at ``epsilon``); the
    intercept column, when there is one, is added to that in the norm
    (``intercept_scaling``, or the share ``intercept_fraction`` of ``K``).
    """
    value, event = private_quantile(row_norms(X), quantile, epsilon, rng)
    return augmented_row_bound(value * factor, fit_intercept, intercept_scaling, intercept_fraction), event


def augmented_row_bound(k_x, fit_intercept=True, intercept_scaling=None, intercept_fraction=0.5):
    """The bound ``K`` on the augmented rows when the raw rows are clipped to ``k_x`` (post-processing).

    The intercept column, when there is one, adds ``intercept_scaling`` (or the
    share ``intercept_fraction`` of ``K``) in the norm.
    """
    if not fit_intercept:
        return k_x
    if intercept_scaling is None:
        return k_x / math.sqrt(1.0 - intercept_fraction**2)
    return math.sqrt(k_x**2 + float(intercept_scaling) ** 2)


def private_label_range(y, epsilon, rng, *, width=3.0):
    """``label_bound="auto"``: ``((low, high), events)``, the private median +- ``width`` private MADs.

    Two selections at ``epsilon`` each: the median on a signed grid, then the
    median absolute deviation from it on a norm grid.
    """
    y = np.asarray(y, dtype=float)

    def counts(grid, centre=None):
        return grid_counts(y if centre is None else np.abs(y - centre), grid)

    return label_range_from_counts(counts, y.size, epsilon, rng, width=width)


def label_range_from_counts(counts, n_samples, epsilon, rng, *, width=3.0):
    """:func:`private_label_range` from grid counts of the labels.

    ``counts(grid, centre)`` returns ``#{i : y_i <= c}`` for every ``c`` of
    ``grid`` (``centre=None``), or ``#{i : |y_i - centre| <= c}``: sums over
    rows, which a distributed fit adds up block by block; the second is asked
    for only after the centre is released. ``n_samples`` is public.
    """
    centre, ev1 = private_quantile_from_counts(counts(DEFAULT_SIGNED_GRID, None), n_samples, 0.5, epsilon, rng,
                                               DEFAULT_SIGNED_GRID)
    spread, ev2 = private_quantile_from_counts(counts(DEFAULT_NORM_GRID, centre), n_samples, 0.5, epsilon, rng,
                                               DEFAULT_NORM_GRID)
    half = width * spread
    return (centre - half, centre + half), [ev1, ev2]


def private_clip_norm(gradient_norms, quantile, epsilon, rng):
    """``clip_norm="auto"``: ``(clip, event)``, a private ``quantile`` of per-example gradient norms."""
    return private_quantile(gradient_norms, quantile, epsilon, rng)
