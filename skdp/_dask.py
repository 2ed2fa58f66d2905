"""Fits on Dask collections: every pass over the data is a reduction on the workers.

``DPLogisticRegression``, ``DPRidge`` and ``DPStandardScaler`` wrap ``X``
(a ``dask.array.Array`` or a ``dask.dataframe.DataFrame``) as :class:`DaskRows`
at the top of ``fit`` and pass it into the one fit protocol,
:func:`skdp._fit.private_fit`: the same plan and steps as in memory (charge,
private bound choices, bounding, solver, pricing) with one difference: the
data stays in its row blocks on the workers. Each pass maps
one function over the blocks and adds up what it returns (a gradient sum, the
Gram matrix, counts on a public grid); only that small statistic reaches the
client, where the existing mechanism adds the noise once (the same code and
the same draws from the fit's generator as in memory). So a Dask fit has the
same ``privacy_events_`` and ``privacy_spent_`` as the in-memory fit on the
same rows and, for a given seed, the same coefficients up to the order of
floating-point summation.

A Dask fit takes no ``sample_weight``; as in memory, every row's weight is
then 1 clipped to ``max_sample_weight`` (``min(1, max_sample_weight)``,
:func:`skdp._weights.default_weight`), so that no row contributes more than
the bound its noise is priced for.

What is public: the number of rows ``n`` (from the chunk shapes; a
dataframe's partition lengths are computed once, which reads nothing but the
lengths) and the number of columns, as in memory. Every guarantee is for
replace-one neighbours with ``n`` public.

Supported: the full-batch solvers ``dp_gd`` and ``output_pert`` (the logistic
and squared losses) and ``adassp`` (the squared loss's sufficient
statistics); the private bound choices ``data_norm="auto"``,
``classes="auto"``, ``label_bound="auto"`` and the scaler's ``bounds="auto"``
(their workers compute only counts on the mechanisms' public grids).
Anything else these three estimators are asked on Dask input (another
solver, ``sample_weight``, a bound read from the data) is refused with a
``ValueError`` before the data is read, never computed into one process. The
other estimators have no Dask path: they read a Dask collection as any
array-like, into this process (``validate_data``). This module imports Dask
lazily, so skdp imports without it (install ``skdp[dask]``).
"""

import dataclasses
import math

import numpy as np
from sklearn.utils.validation import _check_feature_names, _check_n_features

from ._classes import ClassSelection, class_indices, zero_rows
from ._plan import RowsElsewhere
from .bounds import bound_features, bound_labels, clip_features, row_norms
from .losses import clipped_mean_gradient
from .privacy.quantile import DEFAULT_NORM_GRID, grid_counts
from .solvers._problem import Problem


__all__ = ["is_dask_collection", "refuse_unsupported", "DaskRows", "DaskDesign", "DaskProblem", "DASK_SOLVERS",
           "validated_block", "first_pass", "abs_dev_counts", "ClassTargets", "RegressionTargets", "check_solver", "refuse_none",
           "set_features"]

#: the solvers that run on Dask input: full-batch passes only (no row sampling, no X in memory)
DASK_SOLVERS = ("adassp", "dp_gd", "output_pert")


def refuse_unsupported(estimator, sample_weight=None, y=None):
    """Refuse, before any pass, what the Dask fits do not support: ``sample_weight`` and a 2-D ``y``."""
    if sample_weight is not None:
        raise ValueError(f"{type(estimator).__name__}.fit on Dask input does not take sample_weight yet; fit "
                         "in memory, or without weights.")
    if getattr(estimator, "class_weight", None) is not None:
        raise ValueError(f"{type(estimator).__name__}.fit on Dask input does not take class_weight yet.")
    if y is not None and getattr(y, "ndim", 1) == 2:
        raise ValueError(f"{type(estimator).__name__}.fit on Dask input fits one target: y must be 1-D.")


def is_dask_collection(obj):
    """Whether ``obj`` is a Dask collection (checked by its type's module: Dask is not imported)."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")


def _dask():
    try:
        import dask
        import dask.array  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the [dask] extra is installed in the test environment
        raise ImportError("Fitting on Dask input needs dask: pip install 'skdp[dask]'.") from exc
    return dask


def _compute(*graphs):
    """``dask.compute`` of small reduced statistics (the one place a result reaches the client)."""
    return _dask().compute(*graphs)


# ---------------------------------------------------------------------------------------------
# The rows, as blocks that stay on the workers
# ---------------------------------------------------------------------------------------------
def _as_array(obj, name, ndim):
    """A Dask array with known row chunks from a Dask array, DataFrame or Series (or a NumPy array)."""
    da = _dask().array
    if is_dask_collection(obj) and hasattr(obj, "to_dask_array"):
        obj = obj.to_dask_array(lengths=True)  # the partition lengths: n is public
    elif not is_dask_collection(obj):
        obj = np.asarray(obj)
    if not isinstance(obj, da.Array) and not isinstance(obj, np.ndarray):
        raise TypeError(f"{name} must be a dask array or dataframe, got {type(obj).__name__}.")
    if ndim == 1 and obj.ndim == 2 and obj.shape[1] == 1:
        obj = obj[:, 0]
    if obj.ndim != ndim:
        raise ValueError(f"Expected a {ndim}-D {name}, got {obj.ndim}-D input of shape {obj.shape}.")
    if isinstance(obj, da.Array) and any(math.isnan(c) for c in obj.chunks[0]):
        obj = obj.compute_chunk_sizes()  # the block lengths only (n is public)
    return obj


class DaskRows(RowsElsewhere):
    """``X`` (and ``y``) of a fit on Dask: aligned row blocks, never gathered into one process.

    ``reduce(fn, *args)`` runs ``fn(X_block, y_block, *args)`` on every block
    (on the workers of the active ``distributed.Client``, or Dask's default
    scheduler) and adds up the returned tuples of arrays in a tree; only the
    sum is computed on the client. ``n`` (rows) and ``d`` (columns) come from
    the chunk shapes.
    """

    def __init__(self, X, y=None, *, y_name="y"):
        """``y_name=None``: no targets (a transformer's fit)."""
        dask = _dask()
        self.meta = getattr(X, "_meta", None) if hasattr(X, "columns") else None
        X = _as_array(X, "X", 2)
        if not isinstance(X, dask.array.Array):
            raise TypeError("X must be a dask array or dataframe.")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise TypeError(f"X must hold numbers, got dtype {X.dtype}.")
        self.dtype = np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64)
        X = X.rechunk({1: -1})  # whole rows in each block
        self.X = X
        self.n, self.d = int(X.shape[0]), int(X.shape[1])
        if self.n == 0 or self.d == 0:
            raise ValueError(f"Found array with shape {X.shape}: at least one row and one feature are required.")
        xs = list(X.to_delayed().ravel())
        if y is None and y_name is not None:
            raise ValueError(f"{y_name} is required: the target y is None.")
        if y is None:
            self.y, ys = None, [None] * len(xs)
        else:
            y = _as_array(y, y_name, 1)
            if int(y.shape[0]) != self.n:
                raise ValueError(f"{y_name} must have one label per row: X has {self.n} rows, {y_name} has "
                                 f"{y.shape[0]}.")
            y = dask.array.from_array(y, chunks=(X.chunks[0],)) if isinstance(y, np.ndarray) \
                else y.rechunk((X.chunks[0],))
            self.y = y
            ys = list(y.to_delayed().ravel())
        self.blocks = list(zip(xs, ys))

    def reduce(self, fn, *args, combine=None):
        """``sum over blocks of fn(X_block, y_block, *args)`` (a tuple), computed on the client."""
        dask = _dask()
        combine = _add if combine is None else combine
        parts = [dask.delayed(fn, pure=True)(xb, yb, *args) for xb, yb in self.blocks]
        while len(parts) > 1:  # a tree of fan-in _FAN_IN: few task hops, small partial sums
            parts = [dask.delayed(_combine, pure=True)(combine, *parts[i:i + _FAN_IN]) if i + 1 < len(parts)
                     else parts[i] for i in range(0, len(parts), _FAN_IN)]
        return _compute(parts[0])[0]


#: partial sums combined per task in :meth:`DaskRows.reduce`
_FAN_IN = 8


def _combine(combine, first, *rest):
    for part in rest:
        first = combine(first, part)
    return first


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def validated_block(xb, dtype):
    """A block as validated features: ``dtype`` (float32 kept, else float64), finite."""
    xb = np.asarray(xb, dtype=dtype)
    if not np.all(np.isfinite(xb)):
        raise ValueError("Input X contains NaN or infinity.")
    return xb


def _check_targets(yb, numeric):
    yb = np.asarray(yb)
    if numeric:
        yb = yb.astype(np.float64)
        if not np.all(np.isfinite(yb)):
            raise ValueError("Input y contains NaN or infinity.")
    return yb


def first_pass(xb, yb, dtype, norm_counts, labels, y_grid, numeric):
    """Validation, and the counts the private bound choices need, in one pass over a block.

    Returns ``(norm grid counts, (labels, counts), signed-grid counts of y)``;
    a part not asked for is ``0``. Counts are sums over rows (sensitivity 1
    per row under replace-one); nothing else leaves the block.
    """
    xb = validated_block(xb, dtype)
    out = [0, 0, 0]
    if norm_counts:
        out[0] = grid_counts(row_norms(xb), DEFAULT_NORM_GRID)
    if yb is not None:
        yb = _check_targets(yb, numeric)
        if labels:
            out[1] = _LabelCounts(*np.unique(yb, return_counts=True))
        if y_grid is not None:
            out[2] = grid_counts(yb, y_grid)
    return tuple(out)


class _LabelCounts:
    """Sorted distinct labels and their counts; ``+`` merges two blocks' counts."""

    def __init__(self, labels, counts):
        self.labels, self.counts = labels, counts

    def __add__(self, other):
        if not isinstance(other, _LabelCounts):
            return self
        labels, inverse = np.unique(np.concatenate([self.labels, other.labels]), return_inverse=True)
        counts = np.bincount(inverse, weights=np.concatenate([self.counts, other.counts]), minlength=labels.size)
        return _LabelCounts(labels, counts.astype(np.int64))

    __radd__ = __add__


def abs_dev_counts(xb, yb, centre, grid):
    return (grid_counts(np.abs(_check_targets(yb, True) - centre), grid),)


# ---------------------------------------------------------------------------------------------
# The bounded design of a linear model, applied block by block
# ---------------------------------------------------------------------------------------------
class ClassTargets:
    """Labels of a block -> the loss's encoding, and the rows whose label was selected (``classes``)."""

    def __init__(self, classes, binary, auto):
        self.classes, self.binary, self.auto = classes, binary, auto

    def __call__(self, yb):
        yb = np.asarray(yb)
        active = np.isin(yb, self.classes) if self.auto else None
        if active is not None and active.all():
            active = None
        y_idx = class_indices(ClassSelection(self.classes, False, active, []), yb)
        return (np.where(y_idx == 1, 1.0, -1.0) if self.binary else y_idx), active


class RegressionTargets:
    """Labels of a block -> clipped to the public range, centred, in units of the bound (as ``DPRidge``)."""

    def __init__(self, label_bound, fit_intercept):
        self.label_bound, self.fit_intercept = label_bound, fit_intercept

    def __call__(self, yb):
        # every pass validates its block's labels (a fit with public bounds makes no first pass)
        yc, _, bound, n_clipped, _ = bound_labels(_check_targets(yb, True), self.label_bound, self.fit_intercept)
        return yc / bound, None, n_clipped


class DaskDesign:
    """The bounded design matrix of a Dask fit: rows clipped and augmented on the workers, block by block.

    Stands in for ``Problem.X``: it has the public ``shape`` ``(n, p)`` and is
    never materialised. Each block is bounded with
    :func:`skdp.bounds.bound_features` at the public ``data_norm`` (the same
    function as in memory), rows whose label was not selected are zeroed
    (:func:`skdp._classes.zero_rows`), and the labels are encoded there too.
    ``n_rows_clipped`` / ``n_labels_clipped`` are the counts of the last pass
    (non-private diagnostics for the data holder).
    """

    def __init__(self, rows, data_norm, fit_intercept, intercept_scaling, intercept_fraction, targets,
                 feature_clip=None):
        self.rows = rows
        self.bounding = (float(data_norm), bool(fit_intercept), intercept_scaling, intercept_fraction)
        self.feature_clip = feature_clip
        self.targets = targets
        self.shape = (rows.n, rows.d + int(fit_intercept))
        self.dtype = np.dtype(np.float64)
        self.ndim = 2
        self.n_rows_clipped = None
        self.n_labels_clipped = None

    def _reduce(self, fn, *args):
        out = self.rows.reduce(_bounded_pass, self.rows.dtype, (self.feature_clip, self.bounding), self.targets,
                               fn, *args)
        self.n_rows_clipped, self.n_labels_clipped = int(out[-2]), int(out[-1])
        return out[:-2]


def _bounded_pass(xb, yb, dtype, bounding, targets, fn, *args):
    """Bound a block as the in-memory fit bounds the whole ``X``, then ``fn(X, norms, y, *args)``.

    ``bounding`` is ``(feature_clip, bound_features' arguments)``: every feature is first clipped to
    ``feature_clip`` when it is not ``None`` (``DPLogisticRegression(feature_clip=...)``).
    """
    radius, bounding = bounding
    block = validated_block(xb, dtype)
    if radius is not None:
        block = clip_features(block, radius, count=False)[0]
    bounded = bound_features(block, *bounding)
    encoded = targets(yb)
    y_enc, active = encoded[0], encoded[1]
    n_lab = encoded[2] if len(encoded) > 2 else 0
    X, norms = bounded.X, bounded.row_norms
    if active is not None:
        X, norms = zero_rows(X, active), np.where(active, norms, 0.0)
    return tuple(fn(X.astype(np.float64, copy=False), norms, y_enc, *args)) + (bounded.n_clipped, n_lab)


def _gradient_sum(X, norms, y, loss, coef, clip):
    return (clipped_mean_gradient(loss, X, y, coef, norms, clip, n_total=1),)


def _gram(X, norms, y):
    return X.T @ X, X.T @ np.asarray(y, dtype=float)


@dataclasses.dataclass
class DaskProblem(Problem):
    """A :class:`~skdp.solvers.Problem` whose ``X`` is a :class:`DaskDesign`: full-batch passes as reductions.

    ``mean_gradient`` adds up the clipped per-example gradients of every block
    (:func:`skdp.losses.clipped_mean_gradient`, the in-memory code, on each
    block) and divides by the public ``n``; ``gram`` adds up ``X^T X`` and
    ``X^T y``. Both are weighted by ``row_weight``, every row's weight (a Dask
    fit takes no ``sample_weight``: each row weighs 1 clipped to
    ``max_sample_weight``, :func:`skdp._weights.default_weight`, as in
    memory). The solver adds its noise to these sums on the client, as in
    memory. Row sampling (``rows=``) is refused: only full-batch solvers run.
    """

    #: every row's weight, ``min(1, max_sample_weight)`` (public; the in-memory fit's ``sample_weight`` then)
    row_weight: float = 1.0

    def mean_gradient(self, coef, rows=None, n_total=None):
        if rows is not None:
            raise ValueError("Dask input runs full-batch solvers only (no row sampling); use one of "
                             f"{list(DASK_SOLVERS)}.")
        (total,) = self.X._reduce(_gradient_sum, self.loss, np.asarray(coef), self.clip)
        return self.row_weight * total / (self.n if n_total is None else n_total)

    def gram(self):
        XtX, Xty = self.X._reduce(_gram)
        return (self.row_weight * np.asarray(XtX, dtype=float),
                self.row_weight * np.asarray(Xty, dtype=float).ravel())

    def objective(self, coef):
        raise ValueError("The objective of a Dask fit is not computed (it would be another pass over X).")


# ---------------------------------------------------------------------------------------------
# The estimators' fits
# ---------------------------------------------------------------------------------------------
def check_solver(estimator, solver):
    if solver.name not in DASK_SOLVERS:
        raise ValueError(f"solver={solver.name!r} does not support Dask input (it samples rows or needs X in one "
                         f"process); {type(estimator).__name__} fits Dask input with solver in "
                         f"{[s for s in DASK_SOLVERS if s in type(estimator)._parameter_constraints['solver'][0].options]}.")


def refuse_none(estimator, name):
    if getattr(estimator, name) is None:
        raise ValueError(f"{name}=None (read from the data) is not supported for Dask input; give a public "
                         f"{name} or use the default 'auto' (chosen privately).")


def set_features(estimator, rows):
    """``n_features_in_`` and ``feature_names_in_`` from the public schema (never the values)."""
    _check_feature_names(estimator, rows.meta if rows.meta is not None else rows.X, reset=True)
    _check_n_features(estimator, rows.X, reset=True)
