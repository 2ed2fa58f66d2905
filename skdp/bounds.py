"""Bounded data: the one place where rows and labels are clipped.

Every DP proof in skdp needs public bounds: ``||x_i||_2 <= K`` for each row
(the intercept's constant column included), ``|y_i - c| <= B`` for regression
labels around a public centre ``c``, and for some solvers ``||w||_2 <= M``.
This module applies them and reports what it did. Wang, Ye and Xu 2017 and
Zhang, Zheng, Mou and Wang 2017 assume such bounds without enforcing them;
the strongly convex sensitivities need the intercept penalised like every
other coordinate (see :doc:`/papers/zhang_zheng_mou_wang2017`), and objective perturbation's
constants must bound the augmented row, intercept column included (see
:doc:`/papers/bassily_feldman_talwar_thakurta2019`; user guide: :doc:`/user_guide/bounds`).

The intercept is an extra constant feature of value ``intercept_scaling``
(``c0``). Raw rows are clipped to ``K_x = sqrt(K^2 - c0^2)`` *before* the column
is appended, so that the augmented row has norm at most ``K``.

A bound the user did not give is computed from the data; that emits
:class:`~skdp.exceptions.PrivacyLeakWarning`, is stored on the estimator as a
fitted attribute, and voids the guarantee (``privacy_spent_.epsilon`` is
``inf``). A bound is never written back into a parameter.

References
----------
.. [1] J. Zhang, K. Zheng, W. Mou and L. Wang, "Efficient private ERM for smooth objectives",
   IJCAI 2017. <https://arxiv.org/abs/1703.09947>
.. [2] D. Wang, M. Ye and J. Xu, "Differentially private empirical risk minimization revisited:
   faster and more general", NeurIPS 2017. <https://arxiv.org/abs/1802.05251>
"""

import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk as _syrk
from scipy.special import ndtri as _ndtri

from ._blas import SMALL_GRAM_COLUMNS, blas_threads_for, cpus
from .exceptions import PrivacyLeakWarning
from .losses import take_rows
from .privacy.quantile import (DEFAULT_NORM_GRID, DEFAULT_SIGNED_GRID, grid_counts, private_quantile,
                               private_quantile_from_counts)

__all__ = [
    "private_row_bound",
    "augmented_row_bound",
    "private_label_range",
    "label_range_from_counts",
    "label_spread_level",
    "label_width_at",
    "private_clip_norm",
    "BoundedData",
    "BoundedDesign",
    "bound_features",
    "bound_labels",
    "public_label_range",
    "row_norms",
    "clipped_row_norms",
    "append_intercept_column",
    "clip_features",
    "CoordinateClippedDesign",
    "clipped_design",
    "check_label_bound",
    "target_label_bounds",
    "raw_row_bound",
    "ENTRY_CAP",
]


#: rows per block of the blockwise passes over a dense design
BLOCK_ROWS = 4096

#: :func:`bound_features` winsorises every entry to ``[-ENTRY_CAP, ENTRY_CAP]`` (public, fixed): squares and
#: products of such entries stay finite in float64, so a row near the float64 maximum is clipped like any other
ENTRY_CAP = 1e150


def row_norms(X):
    """L2 norm of every row of a dense array or sparse matrix, in ``float64`` (also for ``float32`` input)."""
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))


def clipped_row_norms(X, bound, block=BLOCK_ROWS):
    """:func:`row_norms` of ``clip(X, -bound, bound)`` without a copy of dense ``X`` (by blocks of rows)."""
    if sp.issparse(X):
        return row_norms(clip_features(X, bound, count=False)[0])
    out = np.empty(X.shape[0])
    for lo in range(0, X.shape[0], block):
        B = np.clip(X[lo: lo + block], -bound, bound, dtype=np.float64)
        out[lo: lo + block] = np.sqrt(np.einsum("ij,ij->i", B, B))
    return out


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


class BoundedDesign:
    """The clipped, augmented design ``[f_i x_i, c_i]`` of a dense ``X``, as a read-only operator.

    What :func:`bound_features` returns with ``lazy=True`` for dense input:
    the same matrix as its array (row ``i`` of ``X`` scaled by the clipping
    factor ``f_i``, then the intercept column ``c_i``), without copying ``X``.
    Products fold the factors into the vectors (``A w = f * (X w_x) + c w_c``,
    ``A^T v = [X^T (f v), c . v]``), so they agree with the array's up to
    floating-point summation order, and the bounds (and every sensitivity built
    on them) are unchanged. ``float32`` input stays ``float32`` in memory; every
    product is computed in ``float64`` (by blocks of rows), as on the array.

    Supports what the solvers use: ``shape``, ``dtype``, ``ndim``, ``A[rows]``
    (a dense ``float64`` copy of those rows), ``A @ w``, ``A.T @ v``, ``A.T @ A``
    (:meth:`gram`), :meth:`gradient_sum` (one fused pass for a GLM gradient),
    :meth:`toarray`.
    """

    #: rows per block of the fused and float32 passes (a block of 50 float64 columns fits in L2)
    _block = BLOCK_ROWS

    def __init__(self, X, factors=None, intercept=None, feature_clip=None):
        self._X = X
        #: every raw entry is winsorised to ``[-feature_clip, feature_clip]`` first (``None``: not at all)
        self._clip = None if feature_clip is None else float(feature_clip)
        self._f = None if factors is None else np.asarray(factors, dtype=np.float64)
        self._c = intercept  # None (no column), a float (constant column) or an (n,) array
        self.shape = (X.shape[0], X.shape[1] + (intercept is not None))
        self.dtype = np.dtype(np.float64)
        self.ndim = 2

    @property
    def T(self):
        return _TransposedBoundedDesign(self)

    @property
    def raw(self):
        """The caller's rows, unclipped (never modified; read only by the design's own passes and a solver's
        mini-batch steps, which apply :attr:`row_factors` and :attr:`feature_clip` to them)."""
        return self._X

    @property
    def feature_clip(self):
        """The radius every raw entry is winsorised to, or ``None``."""
        return self._clip

    @property
    def row_factors(self):
        """Each row's scale factor (``(n,)``: its clipping to the row bound), or ``None`` (all 1)."""
        return self._f

    @property
    def intercept_column(self):
        """The intercept column: ``None`` (no column), a float (a constant) or an ``(n,)`` array."""
        return self._c

    def gather(self, rows):
        """``A[rows]`` as a design over the gathered raw rows ``X[rows]`` (a mini-batch step's rows).

        Only ``X[rows]`` is copied (no augmented array is built): products with
        it are those of ``A[rows]``, as for the whole design.
        """
        return BoundedDesign(take_rows(self._X, rows), *self._row_terms(rows), feature_clip=self._clip)

    def astype(self, dtype, copy=True):
        """``self`` for ``float64`` without a copy (products are computed in ``float64``)."""
        if np.dtype(dtype) != np.float64 or copy:
            return self.toarray().astype(dtype, copy=False)
        return self

    def with_rows_zeroed(self, keep):
        """The design whose rows outside the boolean mask ``keep`` are zero (intercept column included)."""
        keep = np.asarray(keep, dtype=bool)
        f = keep.astype(np.float64) if self._f is None else np.where(keep, self._f, 0.0)
        c = self._c
        if c is not None:
            c = np.where(keep, c, 0.0)
        return BoundedDesign(self._X, f, c, feature_clip=self._clip)

    # -- pieces -----------------------------------------------------------------------------
    def _raw(self, rows, reuse=False):
        """``X[rows]`` in ``float64`` (a view for a slice of ``float64`` rows), winsorised when asked.

        ``reuse=True`` (a full pass's blocks ``rows``, slices, one at a time):
        the winsorised block is written into one buffer kept by the design,
        not a new array; a block the winsorising left unchanged on the first
        pass is read as it is on the next passes (the same values).
        """
        B = take_rows(self._X, rows)
        if self._clip is not None:  # a float64 copy of the block, compared in float64 (float32 input)
            if not reuse:
                return np.clip(B, -self._clip, self._clip, dtype=np.float64)
            unchanged = getattr(self, "_unchanged", None)
            if unchanged is None:
                unchanged = self._unchanged = {}
            key = (rows.start, rows.stop)
            if unchanged.get(key):
                return B if B.dtype == np.float64 else B.astype(np.float64)
            if getattr(self, "_buffer", None) is None or self._buffer.shape[0] < B.shape[0]:
                self._buffer = np.empty((self._block, B.shape[1]))
            out = np.clip(B, -self._clip, self._clip, out=self._buffer[: B.shape[0]], dtype=np.float64)
            if key not in unchanged:
                unchanged[key] = bool(np.array_equal(out, B))
            return out
        return B if B.dtype == np.float64 else B.astype(np.float64)

    def _blocks(self):
        n = self.shape[0]
        for lo in range(0, n, self._block):
            yield slice(lo, min(lo + self._block, n))

    def _fill(self, out, rows):
        """Write the augmented rows ``A[rows]`` into ``out`` (shape ``(m, p)``)."""
        d = self._X.shape[1]
        B = take_rows(self._X, rows)
        f, c = self._row_terms(rows)
        if self._clip is not None:
            np.clip(B, -self._clip, self._clip, out=out[:, :d], dtype=np.float64)
            B = out[:, :d]
        if f is None:
            out[:, :d] = B
        else:
            np.multiply(B, f[:, None], out=out[:, :d])
        if c is not None:
            out[:, d] = c
        return out

    def __getitem__(self, rows):
        if np.ndim(rows) == 0 and not isinstance(rows, slice):  # one row
            return self[np.atleast_1d(rows)][0]
        m = len(range(*rows.indices(self.shape[0]))) if isinstance(rows, slice) else (
            int(np.count_nonzero(rows)) if np.asarray(rows).dtype == bool else len(rows))
        return self._fill(np.empty((m, self.shape[1])), rows)

    def toarray(self):
        """The design as a dense ``float64`` array (tests, small data)."""
        return self[slice(None)]

    def _row_terms(self, rows):
        """The clipping factors and intercept values of ``rows`` (``None``, a float or an array each)."""
        c = take_rows(self._c, rows) if isinstance(self._c, np.ndarray) else self._c
        return (None if self._f is None else take_rows(self._f, rows)), c

    @staticmethod
    def _margins(B, f, c, w):
        """``A[rows] @ w`` from the raw rows ``B = X[rows]`` and their terms ``f, c`` (:meth:`_row_terms`)."""
        d = B.shape[1]
        Z = B @ w[:d]
        if f is not None:
            Z *= f if Z.ndim == 1 else f[:, None]
        if c is not None:
            if isinstance(c, np.ndarray):
                Z += c * w[d] if Z.ndim == 1 else np.outer(c, w[d])
            else:
                Z += c * w[d]
        return Z

    @staticmethod
    def _transpose_parts(B, f, c, v):
        """``A[rows]^T v`` from the raw rows and their terms: (the ``X`` part, the intercept part or None)."""
        top = B.T @ (v if f is None else v * (f if v.ndim == 1 else f[:, None]))
        if c is None:
            return top, None
        if isinstance(c, np.ndarray):
            return top, c @ v
        # column sums by a product: numpy's axis-0 sum of a narrow (m, k) array is many times slower
        return top, c * (v.sum() if v.ndim == 1 else np.ones(v.shape[0]) @ v)

    def _stack(self, parts):
        top, col = parts
        if col is None:
            return top
        out = np.empty((top.shape[0] + 1,) + top.shape[1:])
        out[:-1] = top
        out[-1] = col
        return out

    # -- products -----------------------------------------------------------------------------
    def __matmul__(self, w):
        w = np.asarray(w, dtype=np.float64)
        if self._X.dtype == np.float64 and self._clip is None:
            return self._margins(self._X, *self._row_terms(slice(None)), w)
        out = np.empty((self.shape[0],) + w.shape[1:])
        for rows in self._blocks():
            out[rows] = self._margins(self._raw(rows, reuse=True), *self._row_terms(rows), w)
        return out

    def _rmatmul(self, v):
        """``A^T v``."""
        if v is self:
            return self.gram()
        v = np.asarray(v, dtype=np.float64)
        if self._X.dtype == np.float64 and self._clip is None:
            return self._stack(self._transpose_parts(self._X, *self._row_terms(slice(None)), v))
        out = np.zeros((self.shape[1],) + v.shape[1:])
        for rows in self._blocks():
            out += self._stack(self._transpose_parts(self._raw(rows, reuse=True), *self._row_terms(rows), v[rows]))
        return out

    def gradient_sum(self, w, derivative, rows=None):
        """``sum_i S_i a_i^T`` with ``S = derivative(A @ w, rows)``, in one pass over ``X``.

        ``derivative(Z, r)`` gets the linear predictors of the rows ``r`` (a
        block's slice, or the index array ``rows``) and returns their
        per-example loss derivatives (clipped as the caller wants; with a
        mini-batch ``rows`` and ``(p, k)`` points it may combine them into
        fewer columns, e.g. one). Each block
        is read once from memory for both products; with ``rows`` (a
        mini-batch) only those rows are gathered, once.
        """
        w = np.asarray(w, dtype=np.float64)
        if rows is not None:
            return self._batch_gradient_sum(w, derivative, rows)
        d = self._X.shape[1]
        top, col = np.zeros((d,) + w.shape[1:]), 0.0
        for block in self._blocks():
            B, (f, c) = self._raw(block, reuse=True), self._row_terms(block)
            t, c = self._transpose_parts(B, f, c, derivative(self._margins(B, f, c, w), block))
            top += t
            if c is not None:
                col = col + c
        return self._stack((top, None if self._c is None else col))

    def _batch_gradient_sum(self, w, derivative, rows):
        """:meth:`gradient_sum` over the gathered ``rows``: the same products, inlined (a mini-batch step's few
        rows make the per-call overhead count)."""
        B = take_rows(self._X, rows)
        if self._clip is not None:  # the winsorised rows (the norms and factors are theirs)
            B = np.clip(B, -self._clip, self._clip, dtype=np.float64)
        elif B.dtype != np.float64:
            B = B.astype(np.float64)
        f = None if self._f is None else take_rows(self._f, rows)
        c = self._c
        d = B.shape[1]
        vector = w.ndim == 1
        Z = B @ (w if c is None else w[:d])
        if f is not None:
            fc = f if vector else f[:, None]
            Z *= fc
        if c is not None:
            if isinstance(c, np.ndarray):
                c = take_rows(c, rows)
                Z += c * w[d] if vector else np.outer(c, w[d])
            else:
                Z += c * w[d]
        S = derivative(Z, rows)
        if f is not None and S.ndim != Z.ndim:  # one combined column from several points
            fc = f if S.ndim == 1 else f[:, None]
        out = np.empty((w.shape[0],) + S.shape[1:])
        out[:d] = B.T @ (S if f is None else S * fc)
        if c is not None:
            if isinstance(c, np.ndarray):
                out[d] = c @ S
            else:  # column sums by a product: numpy's axis-0 sum of a narrow (m, k) array is slow
                out[d] = c * (S.sum() if vector else np.ones(S.shape[0]) @ S)
        return out

    def gram(self, weights=None, extra=None):
        """``A^T diag(weights) A`` as a dense ``(p, p)`` array, by blocks of rows (no copy of ``X``).

        ``extra`` (``(n,)`` or ``(n, e)``): columns appended to ``A`` first, so one
        pass gives ``[A, extra]^T [A, extra]`` (e.g. ``X^T y`` with ``X^T X``).
        A narrow product (at most :data:`~skdp._blas.SMALL_GRAM_COLUMNS` columns)
        runs on one BLAS thread per half of the blocks: the first half here, the
        second on a worker thread when the process may use two CPUs (else here
        too), their sums added at the end: a fixed split, so the result is the
        same on one CPU or two, whatever the threads' timing.
        """
        e = 0 if extra is None else (1 if np.ndim(extra) == 1 else np.shape(extra)[1])
        columns = self.shape[1] + e
        small = columns <= SMALL_GRAM_COLUMNS
        blocks = list(self._blocks())
        with blas_threads_for(columns):  # a small block's product: one thread (see skdp._blas)
            if small and len(blocks) >= 8:
                half = len(blocks) // 2
                if cpus() >= 2:
                    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="skdp-gram") as pool:
                        second = pool.submit(self._gram_blocks, blocks[half:], weights, extra, e, small)
                        out = self._gram_blocks(blocks[:half], weights, extra, e, small)
                        out += second.result()
                else:
                    out = self._gram_blocks(blocks[:half], weights, extra, e, small)
                    out += self._gram_blocks(blocks[half:], weights, extra, e, small)
            else:
                out = self._gram_blocks(blocks, weights, extra, e, small)
        return np.triu(out) + np.triu(out, 1).T

    def _gram_blocks(self, blocks, weights, extra, e, small):
        """The upper triangle (at least) of ``[A, extra]^T diag(weights) [A, extra]`` over the row ``blocks``
        (``e`` columns of ``extra``)."""
        p = self.shape[1]
        out = np.zeros((p + e, p + e), order="F")
        buf = np.empty((min(self._block, self.shape[0]), p + e))
        for rows in blocks:
            B = self._fill(buf[: rows.stop - rows.start], rows)
            if e:
                B[:, p:] = extra[rows] if e > 1 or np.ndim(extra) == 2 else extra[rows][:, None]
            if weights is not None:  # B^T diag(w) B = (sqrt(w) B)^T (sqrt(w) B), the weights being >= 0
                B *= np.sqrt(weights[rows])[:, None]
            if small:  # on one thread, a narrow block's product beats OpenBLAS's syrk (bench_blas_threads.py)
                out += B.T @ B
            else:  # the upper triangle of B^T B by syrk (half the flops), accumulated in place
                out = _syrk(1.0, B.T, beta=1.0, c=out, trans=0, lower=0, overwrite_c=1)  # B.T: Fortran, no copy
        return out


class _TransposedBoundedDesign:
    def __init__(self, design):
        self._design = design
        self.shape = design.shape[::-1]

    def __matmul__(self, v):
        return self._design._rmatmul(v)


def bound_features(X, data_norm, fit_intercept, intercept_scaling, default_fraction=0.5, *, norms=None,
                   lazy=False, feature_clip=None):
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
    norms : ndarray of shape (n_samples,), optional
        The row norms of ``X`` (:func:`row_norms`) when the caller has them already.
    lazy : bool, default=False
        Dense ``X`` only: return the clipped, augmented design as a
        :class:`BoundedDesign` over ``X`` (no copy) instead of an array.
    feature_clip : float, optional
        Winsorise every entry to ``[-feature_clip, feature_clip]`` before the
        row clipping (as :func:`clip_features`; ``norms`` must then be the
        norms of the winsorised rows, :func:`clipped_row_norms`). Lazily for a
        :class:`BoundedDesign`, by a copy otherwise.

    Returns
    -------
    BoundedData
    """
    half = intercept_scaling is None
    c0 = (0.0 if half else float(intercept_scaling)) if fit_intercept else 0.0
    if feature_clip is not None and not (lazy and not sp.issparse(X)):
        X = clip_features(X, feature_clip, count=False)[0]
        feature_clip = None
    if norms is None:
        norms = row_norms(X) if feature_clip is None else clipped_row_norms(X, feature_clip)
    if np.any(norms > ENTRY_CAP):
        # every entry is first winsorised to +-ENTRY_CAP (a fixed map of each row, the same for every
        # dataset): a row of huge entries (up to the float64 maximum, which validation accepts) then has
        # a finite norm and clipping factor, and no product overflows to inf or nan. Without such a row
        # the map changes nothing (every entry is at most its row's norm), so it is skipped.
        feature_clip = ENTRY_CAP if feature_clip is None else min(float(feature_clip), ENTRY_CAP)
        if not (lazy and not sp.issparse(X)):
            X = clip_features(X, feature_clip, count=False)[0]
            feature_clip = None
        norms = clipped_row_norms(X, feature_clip) if feature_clip is not None else row_norms(X)
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
    if lazy and not sp.issparse(X):
        factors = None
        if n_clipped:
            factors = np.ones_like(norms)
            factors[over] = k_x / norms[over]
            norms = np.where(over, k_x, norms)
        if fit_intercept:
            norms = np.sqrt(norms**2 + c0**2)
        return BoundedData(BoundedDesign(X, factors, c0 if fit_intercept else None, feature_clip=feature_clip), K,
                           n_clipped, derived, norms, c0)
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


def clip_features(X, bound, intercept=None, count=True):
    """Clip every entry to ``[-bound, bound]`` (an L-infinity row bound, as the sparse solvers use).

    Returns the clipped float64 copy and the number of rows touched (``None``
    with ``count=False``, which saves two passes over dense input). The
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
    n_rows = _rows_out_of_range(X, bound) if count else None
    d = X.shape[1]
    out = np.empty((X.shape[0], d + (intercept is not None)), dtype=np.float64)
    np.clip(X, -bound, bound, out=out[:, :d], dtype=np.float64)  # compared in float64 (float32 input)
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


def target_label_bounds(label_bound, n_targets):
    """The label bound of each of ``n_targets`` regression targets (``y`` of shape ``(n, n_targets)``), checked.

    ``label_bound`` is ``None`` or ``"auto"`` (for every target), a number
    ``B > 0`` (every target in ``[-B, B]``), a tuple ``(low, high)`` (every
    target in ``[low, high]``), any other 1-D array-like of ``n_targets``
    positive numbers (target ``j`` in ``[-B_j, B_j]``), or a 2-D array-like
    of shape ``(n_targets, 2)`` (target ``j`` in ``[low_j, high_j]``).
    Returns a list of ``n_targets`` bounds, each in the form
    :func:`bound_labels` takes; raises ``ValueError`` naming ``label_bound``
    otherwise. Reads no data (``n_targets`` is public, like ``n``).
    """
    k = int(n_targets)
    lb = label_bound
    if lb is None or isinstance(lb, str):
        return [lb] * k
    if isinstance(lb, tuple) and len(lb) == 2 and all(np.ndim(v) == 0 for v in lb):
        check_label_bound(lb)
        return [tuple(float(v) for v in lb)] * k
    expected = (f"label_bound for a y with {k} target(s) must be a positive number, a tuple (low, high) for every "
                f"target, an array of {k} positive bounds (one per target), or an array of shape ({k}, 2) of "
                "ranges (low, high) with low < high")
    try:
        arr = np.asarray(lb, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{expected}; got {lb!r}.") from None
    if arr.ndim == 0 and math.isfinite(arr) and arr > 0:
        return [float(arr)] * k
    if arr.ndim == 1 and arr.shape == (k,) and np.all(np.isfinite(arr)) and np.all(arr > 0):
        return [float(b) for b in arr]
    if arr.ndim == 2 and arr.shape == (k, 2) and np.all(np.isfinite(arr)) and np.all(arr[:, 0] < arr[:, 1]):
        return [(float(lo), float(hi)) for lo, hi in arr]
    raise ValueError(f"{expected}; got {lb!r}.")


# ---------------------------------------------------------------------------------------------
# Bounds chosen privately (``"auto"``): each is one or two exponential-mechanism selections on a
# public grid (replace-one, a quantile's score moves by at most 1), priced as BoundedRangeEvents.
# ---------------------------------------------------------------------------------------------
def private_row_bound(X, epsilon, rng, *, norms=None, quantile=0.5, factor=0.7, fit_intercept=True,
                      intercept_scaling=None, intercept_fraction=0.5, secure=True):
    """``data_norm="auto"``: ``(K, event)`` with ``K`` the bound on the augmented rows.

    The raw rows are to be clipped to ``factor`` times a private ``quantile`` of
    their norms (:func:`skdp.privacy.private_quantile` at ``epsilon``); the
    intercept column, when there is one, is added to that in the norm
    (``intercept_scaling``, or the share ``intercept_fraction`` of ``K``).
    ``norms``: the row norms of ``X`` when the caller has them already.
    ``secure``: the selection is drawn floating-point safely (the exact
    exponential mechanism, see :mod:`skdp.privacy.quantile`).
    """
    value, event = private_quantile(row_norms(X) if norms is None else norms, quantile, epsilon, rng,
                                    secure=secure)
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


def private_label_range(y, epsilon, rng, *, width=3.0, level=None, secure=True):
    """``label_bound="auto"``: ``((low, high), events)``, the private median +- a multiple of a private spread.

    Two selections at ``epsilon`` each (:func:`label_range_from_counts`): the
    median on a signed grid, then the ``level``-quantile of the absolute
    deviations from it on a norm grid (``level=None``: :func:`label_spread_level`,
    which rises from the median absolute deviation towards the largest deviation
    as ``n * epsilon`` grows).
    """
    y = np.asarray(y, dtype=float)

    def counts(grid, centre=None):
        return grid_counts(y if centre is None else np.abs(y - centre), grid)

    return label_range_from_counts(counts, y.size, epsilon, rng, width=width, level=level, secure=secure)


#: failure probability the spread's quantile level is sized for (:func:`label_spread_level`)
LABEL_SPREAD_FAILURE = 0.05


def label_spread_level(n_samples, selection_epsilon, n_candidates=DEFAULT_NORM_GRID.size,
                       failure=LABEL_SPREAD_FAILURE):
    """Public quantile level of the label spread: ``1 - min(0.5, 4 beta ln(m / failure) / n)``.

    ``beta = 2 / selection_epsilon`` is the Gumbel scale of the selection and
    ``m`` the number of grid points. Every point above all the deviations
    scores ``-(1 - level) n`` and the points next to the quantile
    ``-(1 - level) n / 2`` or more (:func:`skdp.privacy.quantile.point_scores`),
    so the exponential mechanism picks one of the former with probability at
    most about ``m exp(-(1 - level) n / (2 beta))``, below ``failure`` once
    ``(1 - level) n >= 2 beta ln(m / failure)``; the factor 4 leaves a margin of
    2, as :func:`skdp.privacy.range_quantile_level` does. So the level is the
    median (the median absolute deviation) at small ``n * epsilon`` and tends
    to 1 (the largest deviation: nothing clipped, like sklearn's labels) as the
    selection's noise vanishes. A function of public ``n``, epsilon and ``m`` only.
    """
    beta = 2.0 / float(selection_epsilon)
    tail = 4.0 * beta * math.log(n_candidates / failure) / max(int(n_samples), 1)
    return 1.0 - min(0.5, tail)


def label_width_at(width, level):
    """Multiple of the ``level``-quantile of ``|y - centre|`` that the auto label range spans on either side.

    ``max(1, width z(0.5) / z(level))`` with ``z(q) = Phi^-1((1 + q) / 2)``, the
    ``q``-quantile of ``|Z|`` for a standard normal ``Z``: ``width`` times the
    median absolute deviation at ``level = 0.5``; for normal labels the same
    half-width at every higher level until that reaches the spread itself, and
    never less than the spread. Labels with a heavier tail than the normal's
    get a wider range as the level rises, lighter-tailed ones no wider (their
    noise is not spent on a range they do not fill). Post-processing of
    public values.
    """
    if level <= 0.5:
        return float(width)
    return max(1.0, float(width) * _ndtri(0.75) / _ndtri(0.5 * (1.0 + level)))


def label_range_from_counts(counts, n_samples, epsilon, rng, *, width=3.0, level=None, secure=True):
    """:func:`private_label_range` from grid counts of the labels.

    ``counts(grid, centre)`` returns ``#{i : y_i <= c}`` for every ``c`` of
    ``grid`` (``centre=None``), or ``#{i : |y_i - centre| <= c}``: sums over
    rows, which a distributed fit adds up block by block; the second is asked
    for only after the centre is released. ``n_samples`` is public.
    Each selection is :func:`skdp.privacy.quantile.private_quantile_from_counts` (replace-one with
    public ``n``: score sensitivity 1, ``BoundedRangeEvent(epsilon)``).
    The spread is the ``level``-quantile of the deviations (``None``:
    :func:`label_spread_level` of ``n`` and ``epsilon``) and the half-width
    :func:`label_width_at` times it.
    ``secure``: both selections floating-point safe (:mod:`skdp.privacy.quantile`).
    """
    if level is None:
        level = label_spread_level(n_samples, epsilon)
    centre, ev1 = private_quantile_from_counts(counts(DEFAULT_SIGNED_GRID, None), n_samples, 0.5, epsilon, rng,
                                               DEFAULT_SIGNED_GRID, secure)
    spread, ev2 = private_quantile_from_counts(counts(DEFAULT_NORM_GRID, centre), n_samples, level, epsilon, rng,
                                               DEFAULT_NORM_GRID, secure)
    half = label_width_at(width, level) * spread
    return (centre - half, centre + half), [ev1, ev2]


def private_clip_norm(gradient_norms, quantile, epsilon, rng, secure=True):
    """``clip_norm="auto"``: ``(clip, event)``, a private ``quantile`` of per-example gradient norms
    (``secure``: drawn floating-point safely)."""
    return private_quantile(gradient_norms, quantile, epsilon, rng, secure=secure)


def raw_row_bound(data_norm, fit_intercept, intercept_scaling, fraction):
    """Bound ``K_x`` on the raw rows' norm when the augmented rows have norm ``<= data_norm``.

    The intercept column holds ``intercept_scaling``, or ``fraction * data_norm``
    when that is ``None`` (as :func:`bound_features` appends it); ``K_x =
    sqrt(K^2 - c_0^2)``. A function of public quantities (or released ones).
    """
    K = float(data_norm)
    c0 = (fraction * K if intercept_scaling is None else float(intercept_scaling)) if fit_intercept else 0.0
    return math.sqrt(max(K * K - c0 * c0, 0.0))
