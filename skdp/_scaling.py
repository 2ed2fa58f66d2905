"""What the DP scalers share: reading their rows, public, private and data-read feature bounds, the unit
box the rows are mapped to, and the split of the budget between their releases.

References
----------
.. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
.. [2] M. Cesar and R. Rogers, "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT 2021. <https://arxiv.org/abs/2004.07223>
"""

import functools
import math
import warnings

import numpy as np
from sklearn.utils.validation import validate_data

from .exceptions import PrivacyLeakWarning
from ._warnings import caller_stacklevel as _caller_stacklevel
from .privacy import BoundedRangeEvent, GaussianEvent, calibrate, calibrate_bounded_range, calibrate_gaussian
from .privacy.discrete import secure_selection_plan, select
from .privacy.search import PLAN_MARGIN
from .privacy.quantile import WIDE_SIGNED_GRID, cell_scores, grid_counts, range_quantile_level

__all__ = ["is_auto_bounds", "public_bounds", "scaler_rows", "given_bounds", "bounds_from_data",
           "missing_aware_feature_ranges", "unit_box", "clip_unit_rows", "planned_features", "warn_unlocated",
           "scaler_selection_epsilon", "release_unit"]


def is_auto_bounds(bounds):
    return isinstance(bounds, str) and bounds == "auto"


def public_bounds(bounds, n_features):
    """Validated per-feature ``(lower, upper)`` arrays from public ``bounds`` (``None`` and ``"auto"`` give ``None``)."""
    if bounds is None or is_auto_bounds(bounds):
        return None
    if isinstance(bounds, str):
        raise ValueError(f"bounds must be 'auto', None or a pair (lower, upper), got {bounds!r}.")
    if len(bounds) != 2:
        raise ValueError(f"bounds must be a pair (lower, upper), got {len(bounds)} items.")
    try:
        lo = np.broadcast_to(np.asarray(bounds[0], dtype=float), (n_features,)).copy()
        hi = np.broadcast_to(np.asarray(bounds[1], dtype=float), (n_features,)).copy()
    except (TypeError, ValueError):
        shapes = " and ".join(str(getattr(b, "shape", ())) if not isinstance(b, (list, tuple)) else f"{len(b)} items"
                              for b in bounds)
        raise ValueError(f"bounds must be numbers or arrays of shape ({n_features},), got {shapes}.") from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        bad = int(np.sum(~(np.isfinite(lo) & np.isfinite(hi) & (lo < hi))))
        raise ValueError(f"bounds must be finite with lower < upper for every feature ({bad} of {n_features} "
                         "features are not).")
    return lo, hi


def scaler_rows(scaler, X):
    """The validated rows of a scaler's fit (float64 or float32; NaN allowed, inf refused), after the charge.

    Missing values (NaN) are ignored by the fit and kept by ``transform``, as
    scikit-learn's scalers do. ``validate_data`` sets ``n_features_in_`` (and
    ``feature_names_in_``); the caller's array is not modified.
    """
    return validate_data(scaler, X, dtype=[np.float64, np.float32], reset=True, ensure_all_finite="allow-nan")


def given_bounds(scaler, X):
    """``(lower, upper, derived)``: a scaler's bounds that no private selection chooses.

    The public ``bounds`` (checked by :func:`public_bounds`), or with
    ``bounds=None`` the ones read from the data (:func:`bounds_from_data`,
    ``derived=True``: the caller reports an infinite epsilon). With
    ``bounds="auto"`` both are ``None``: the caller selects them privately.
    """
    if is_auto_bounds(scaler.bounds):
        return None, None, False
    pb = public_bounds(scaler.bounds, X.shape[1])
    if pb is not None:
        return pb[0], pb[1], False
    return (*bounds_from_data(X), True)


def bounds_from_data(X):
    """Per-column ``(lower, upper)`` read from the data (min and max of the observed values), warned about.

    Warns with a :class:`~skdp.PrivacyLeakWarning`: the bounds void the
    guarantee. An all-missing column gets ``(0, 1)``, a constant one
    ``(v, v + 1)``.
    """
    with warnings.catch_warnings():  # an all-missing column has no minimum: it gets (0, 1)
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanmin(X, axis=0).astype(float), np.nanmax(X, axis=0).astype(float)
    lo, hi = np.where(np.isnan(lo), 0.0, lo), np.where(np.isnan(hi), 1.0, hi)
    warnings.warn("bounds were not given, so they were read from the data; this voids the privacy guarantee "
                  "(privacy_spent_.epsilon is inf). Pass public bounds.", PrivacyLeakWarning,
                  stacklevel=_caller_stacklevel())
    return lo, np.where(hi > lo, hi, lo + 1.0)


def missing_aware_feature_ranges(X, q, epsilon, rng, grid=WIDE_SIGNED_GRID):
    """:func:`skdp.privacy.quantile.private_feature_ranges` for columns with missing values (NaN).

    The low bound is the ``q``-quantile with every missing entry counted above
    every candidate (``L(c) = #{observed x_ij < c}``), the high bound the
    ``(1 - q)``-quantile with every missing entry counted below every candidate
    (``L(c) + m_j``, ``m_j`` the column's missing count), so both land ``q n``
    observed values inside the observed range (``n`` public). Replace-one moves
    each of these counts by at most 1 (a value that moves, or turns missing or
    observed), so each cell score keeps sensitivity 1 and each selection is
    ``epsilon``-bounded-range: ``BoundedRangeEvent(epsilon, 2 d)``, as without
    missing values. Without missing values ``m_j = 0`` and the draws and the
    result are exactly those of ``private_feature_ranges(..., secure=False)``
    (Gumbel report-noisy-max over the 11,111 candidates).
    """
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    grid = np.asarray(grid, dtype=float)
    counts = grid_counts(X, grid, side="left")  # NaN sorts last: counted below no candidate
    n_missing = np.count_nonzero(np.isnan(X), axis=0)
    plan = secure_selection_plan(1.0, epsilon, False)
    lo_idx, hi_idx = np.empty(d, dtype=np.intp), np.empty(d, dtype=np.intp)
    for j in range(d):
        lo_idx[j] = select(rng, cell_scores(counts[j], n, q), *plan)
        hi_idx[j] = select(rng, cell_scores(counts[j] + n_missing[j], n, 1.0 - q), *plan)
    a, b = np.minimum(lo_idx, hi_idx), np.maximum(lo_idx, hi_idx)
    tied = a == b  # post-processing, as private_feature_ranges: one grid step at least
    a = np.where(tied, np.maximum(a - 1, 0), a)
    b = np.where(tied, np.minimum(b + 1, grid.size - 1), b)
    return grid[a].copy(), grid[b].copy(), BoundedRangeEvent(float(epsilon), 2 * d)


def unit_box(X, lo, hi):
    """Every feature clipped to its bounds and mapped to ``[-1/2, 1/2]``."""
    return (np.clip(X, lo, hi) - lo) / (hi - lo) - 0.5


def clip_unit_rows(U, radius, norms=None):
    """Rows of ``U`` scaled down to L2 norm ``radius`` (``None``: unchanged; ``U`` may be modified)."""
    if radius is None:
        return U
    norms = np.linalg.norm(U, axis=1) if norms is None else norms
    U *= np.minimum(1.0, radius / np.maximum(norms, np.finfo(float).tiny))[:, None]
    return U


def planned_features(scaler, n_features):
    """Number of features for ``planned_events`` (needed with ``bounds="auto"``)."""
    if n_features is not None:
        return max(int(n_features), 1)
    if is_auto_bounds(scaler.bounds):
        raise ValueError(f"n_features is needed to plan {type(scaler).__name__}(bounds='auto'): "
                         "its 2 * n_features private quantile selections depend on it.")
    return max(int(np.size(scaler.bounds[0])), 1)


def warn_unlocated(scaler, n, eps0):
    """Warn (public quantities only) when ``bounds="auto"`` has too few rows for its selection budget."""
    q, located = range_quantile_level(n, eps0)
    if not located:
        need = (2.0 / eps0) * math.log(WIDE_SIGNED_GRID.size / 0.05)
        warnings.warn(
            f"{type(scaler).__name__}(bounds='auto'): {n} rows are too few for private quantiles at a selection "
            f"epsilon of {eps0:.3g} per bound ({q:g} * n = {q * n:.3g} < {need:.3g} rows needed), so a bound may "
            "land far outside the data. Give public bounds, a larger epsilon or bound_budget_fraction, or fewer "
            "features.", UserWarning, stacklevel=_caller_stacklevel())
    return q


@functools.lru_cache(maxsize=512)
def scaler_selection_epsilon(k, fraction, epsilon, delta):
    """Epsilon of each of ``k`` bounded-range selections that together cost ``fraction * epsilon``.

    The accountant's price of the ``k`` selections alone is ``fraction * epsilon``
    (at ``delta``; :func:`~skdp.privacy.calibrate_bounded_range`); basic
    composition for one selection or ``delta = 0``. Public quantities only.
    """
    if k == 0:
        return 0.0
    if k == 1 or delta == 0:
        return fraction * epsilon / k
    return calibrate_bounded_range(k, fraction * epsilon, delta)


@functools.lru_cache(maxsize=512)
def release_unit(k, eps0, epsilon, delta, mean_fraction):
    """Noise std per unit of sensitivity of the scaler's two Gaussian releases.

    The mean release gets std ``unit / sqrt(f)``, the second moment
    ``unit / sqrt(1 - f)`` (times their sensitivities). Without selections
    ``unit = 1 / mu*(epsilon, delta)`` (the two releases are exactly
    ``(epsilon, delta)``, Dong-Roth-Su 2022); with ``k`` selections at ``eps0``
    the smallest ``unit`` for which the accountant prices the selections and
    the releases together at ``epsilon`` (bisection on the same price,
    :func:`~skdp.privacy.calibrate`), so the fit costs what was asked, never more.
    """
    # the releases are built with their own sensitivities, which prices them a rounding away from these unit
    # events: aim PLAN_MARGIN below epsilon so that the fit never reports a rounding above it
    target = epsilon * (1.0 - PLAN_MARGIN)
    base = calibrate_gaussian(1.0, target, delta)
    if k == 0:
        return base
    f = mean_fraction
    pre = [BoundedRangeEvent(eps0, k)]
    unit, _ = calibrate(lambda p: pre + [GaussianEvent(1.0, p / math.sqrt(f)), GaussianEvent(1.0, p / math.sqrt(1 - f))],
                        target, delta, initial=base)
    return unit
