"""A private quantile by the exponential mechanism over a public grid.

Used to choose a clipping bound (``data_norm="auto"``) without reading it from
the data in the clear. For a candidate ``c`` of a public grid the score is
``u(c) = -| #{i : v_i <= c} - q n |`` (Smith 2011), floored where the quantile
lies within one grid step of ``c`` so that data between two grid points are
still located (:func:`point_scores`; :doc:`/user_guide/bounds`). Under
replace-one with public ``n`` a swap changes every count by at most 1, so the
score sensitivity is ``s = 1``; the candidate is ``argmax(u + Gumbel(2 s / epsilon))``,
which is the exponential mechanism and epsilon-bounded-range (Durfee-Rogers 2019),
priced as ``BoundedRangeEvent(epsilon)``.

:func:`private_feature_ranges` is the same mechanism without any public range
(the scalers' ``bounds="auto"``): a low and a high quantile of every feature
over one wide public geometric grid on ``[-1e12, 1e12]``
(:func:`signed_geometric_grid`; Smith 2011's exponential-mechanism quantile on
a discrete candidate set, as in Durfee 2023's unbounded setting).

Every selection here is floating-point safe by default (``secure=True``): the
scores are rounded to a power-of-two grid of at most 1/1000 (whose cost is
charged: score sensitivity ``1 + grid``) and the exponential mechanism is
sampled exactly (:func:`skdp.privacy.discrete.exponential_mechanism`); the
event is the same ``BoundedRangeEvent(epsilon)``. The rounding costs a
fraction of the grid step in noise, and the exact sampler time linear in the
number of candidates (:doc:`/user_guide/verifying` gives the measured cost);
``secure=False`` draws Gumbel report-noisy-max instead (the scalers'
per-feature ranges do: thousands of candidates per feature).

References
----------
.. [1] A. Smith, "Privacy-preserving statistical estimation with optimal convergence rates",
   STOC 2011.
.. [2] D. Durfee and R. Rogers, "Practical differentially private top-k selection with
   pay-what-you-get composition", NeurIPS 2019.
   <https://papers.nips.cc/paper/2019/hash/b139e104214a08ae3f2ebcce149cdf6e-Abstract.html>
.. [3] D. Durfee, "Unbounded differentially private quantile and maximum estimation", NeurIPS
   2023.
"""

import math
from numbers import Real

import numpy as np
from scipy import sparse

from .discrete import secure_selection_plan, select
from .events import BoundedRangeEvent, GaussianEvent
from .mechanisms import gaussian_noise

__all__ = ["private_quantile", "private_quantile_from_counts", "private_feature_ranges",
           "private_feature_ranges_from_counts", "grid_counts", "quantile_scores", "cell_scores", "point_scores",
           "range_quantile_level",
           "signed_geometric_grid", "DEFAULT_NORM_GRID", "DEFAULT_SIGNED_GRID", "WIDE_SIGNED_GRID",
           "SCALE_EDGES", "signed_log_edges", "feature_bin_counts", "private_feature_histograms",
           "histogram_quantile_bins", "bin_values"]

#: Public candidate bounds for row norms: 1e-2 .. 1e5, 6 per decade (ratio ~1.47). A coarse
#: grid keeps the total mass of the candidates far above the data (all scored -q n) small,
#: which matters at small epsilon * n (see :doc:`/user_guide/defaults`).
DEFAULT_NORM_GRID = np.geomspace(1e-2, 1e5, 43)

#: Public candidates for a signed location (e.g. the median label): -1e5 .. 1e5 through 0.
DEFAULT_SIGNED_GRID = np.concatenate([-DEFAULT_NORM_GRID[::-1], [0.0], DEFAULT_NORM_GRID])


def signed_geometric_grid(smallest=1e-12, largest=1e12, ratio=0.01):
    """Public signed geometric grid ``{-p_J, ..., -p_0, 0, p_0, ..., p_J}``.

    ``p_j = min(smallest (1 + ratio)^j, largest)`` with
    ``J = ceil(ln(largest / smallest) / ln(1 + ratio))``: every magnitude in
    ``[smallest, largest]`` is within a relative ``ratio`` of a point, and
    magnitudes below ``smallest`` collapse to 0. The defaults give 11111 points
    (``ratio=0.001``: 110583). A function of its arguments only, never of data.
    """
    if not (0 < smallest < largest and math.isfinite(largest) and ratio > 0):
        raise ValueError(f"need 0 < smallest < largest < inf and ratio > 0, got {smallest!r}, {largest!r}, {ratio!r}.")
    J = math.ceil(math.log(largest / smallest) / math.log1p(ratio))
    p = np.minimum(smallest * (1.0 + ratio) ** np.arange(J + 1), largest)
    p[-1] = largest
    return np.concatenate([-p[::-1], [0.0], p])


#: The wide public grid of ``bounds="auto"``: [-1e12, 1e12], relative resolution 1%, 11111 points.
WIDE_SIGNED_GRID = signed_geometric_grid()
WIDE_SIGNED_GRID.setflags(write=False)

#: failure probability the quantile level of ``bounds="auto"`` is sized for (:func:`range_quantile_level`)
RANGE_FAILURE = 0.05


def private_quantile(values, q, epsilon, rng, grid=DEFAULT_NORM_GRID, secure=True):
    """Epsilon-DP estimate of the ``q``-quantile of ``values`` among ``grid``.

    Parameters
    ----------
    values : array of shape (n,)
        One value per row (a row's contribution is this single value).
    q : float in (0, 1)
    epsilon : float > 0
    rng : numpy RandomState / Generator
    grid : sorted array of public candidates
    secure : bool, default True
        Draw the selection floating-point safely (see the module docstring).

    Returns
    -------
    value : float, a grid point
    event : BoundedRangeEvent
    """
    _check_quantile_args(q, epsilon)  # before the values are read
    values = np.asarray(values, dtype=float)
    return private_quantile_from_counts(grid_counts(values, grid), values.size, q, epsilon, rng, grid, secure)


def _check_quantile_args(q, epsilon):
    """``ValueError`` naming ``q`` / ``epsilon`` unless ``0 < q < 1`` and ``0 < epsilon < inf`` (real numbers)."""
    for name, value in (("q", q), ("epsilon", epsilon)):
        if isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(f"{name} must be a real number, got {value!r}.")
    if not 0.0 < q < 1.0:  # also refuses nan
        raise ValueError(f"q must be a quantile level in (0, 1), got {q!r}.")
    if not 0.0 < epsilon < math.inf:
        raise ValueError(f"epsilon must be positive and finite, got {epsilon!r}.")


def grid_counts(values, grid, side="right"):
    """``#{i : v_i <= c}`` (``side="right"``) or ``#{i : v_i < c}`` (``"left"``) for every candidate ``c``.

    The only statistic of the data the grid quantiles read: counts are sums
    over rows, so the counts of row blocks add up to the counts of the whole
    (a distributed fit computes them block by block). ``values`` of shape
    ``(n,)`` gives ``(grid.size,)``; ``(n, d)`` gives ``(d, grid.size)``, one row of
    counts per column.
    """
    values = np.asarray(values, dtype=float)
    grid = np.asarray(grid, dtype=float)
    if values.ndim == 1:
        if side == "right":
            return _counts_at_most(values, grid)
        return np.searchsorted(np.sort(values), grid, side=side)
    Xs = np.sort(values, axis=0)
    return np.stack([np.searchsorted(Xs[:, j], grid, side=side) for j in range(values.shape[1])])


def private_quantile_from_counts(counts, n, q, epsilon, rng, grid=DEFAULT_NORM_GRID, secure=True):
    """:func:`private_quantile` from the counts ``#{i : v_i <= c}`` of the candidates (:func:`grid_counts`).

    ``n`` is the public number of rows. The candidates are scored by
    :func:`point_scores` (replace-one sensitivity 1) and the pick is
    ``argmax(score + Gumbel(2 / epsilon))`` (``secure``: the exact exponential
    mechanism on the rounded scores), ``BoundedRangeEvent(epsilon)``.
    """
    _check_quantile_args(q, epsilon)
    idx = select(rng, point_scores(counts, n, q, epsilon), *secure_selection_plan(1.0, epsilon, secure))
    return float(np.asarray(grid, dtype=float)[idx]), BoundedRangeEvent(float(epsilon))


#: failure probability the window term of :func:`point_scores` is sized for
WINDOW_FAILURE = 0.05


def point_scores(counts, n, level, epsilon):
    """Scores of the grid points for the ``level``-quantile: ``max(-|R(c_k) - t|, w_k - c)``.

    ``counts`` are ``R(c) = #{v_i <= c}`` at the sorted public grid points
    ``c_0 < ... < c_(m-1)`` (:func:`grid_counts`), ``t = level n``, and
    ``w_k = -max(0, R(c_(k-1)) - t, t - R(c_(k+1)))`` (with ``R(c_(-1)) = 0``,
    ``R(c_m) = n``) is 0 when the quantile lies within one grid step of
    ``c_k`` and minus the number of rows between otherwise.

    The first term is the exponential-mechanism quantile score at the
    candidates (Smith 2011). Alone it fails when the data lie between two grid
    points: every point then scores about ``-h``, ``h = min(t, n - t)``, like
    the points far from the data, and the pick is near uniform over the grid.
    The second term lifts the points next to the quantile to ``-c`` at worst,
    ``h - c`` above the far points (which score ``-h`` under both terms), with
    ``c = max(h / 2, 2 beta ln(m / failure))``, ``beta = 2 / epsilon``
    the selection's Gumbel scale and ``m`` the number of points. Once
    ``h >= 4 beta ln(m / failure)`` the lift is half-way, a lead of ``h / 2``
    over the far points (all ``m`` of them together then weigh at most
    ``failure^2 / m`` of a point scoring ``-h / 2``); below, it is smaller or
    nothing (``c >= h``: the first term alone), where the noise would swamp
    the lead anyway. A lifted point weighs at most ``(failure / m)^2`` of one
    scoring 0, so where the data spread over several grid steps (the point
    nearest the quantile scores near 0) the first term decides, as before.
    See :doc:`/user_guide/bounds`.

    Replace-one with public ``n``: each count moves by at most 1, so each term,
    and their maximum, moves by at most 1 (``t`` and ``c`` are public):
    sensitivity 1.
    """
    R = np.asarray(counts, dtype=float)
    n = int(n)
    t = float(level) * n
    h = min(t, n - t)
    c = max(0.5 * h, 4.0 / float(epsilon) * math.log(R.size / WINDOW_FAILURE))
    if c >= h:  # no lead to give: the score at the candidates alone
        return -np.abs(R - t)
    below = np.concatenate([[0.0], R[:-1]])
    above = np.concatenate([R[1:], [float(n)]])
    window = -np.maximum(0.0, np.maximum(below - t, t - above))
    return np.maximum(-np.abs(R - t), window - c)


def _counts_at_most(values, grid):
    """``#{i : v_i <= t}`` for every ``t`` of ``grid``, exactly as ``searchsorted(sort(values), grid, "right")``.

    For a strictly increasing grid without sorting the values: ``v <= t_j``
    exactly when fewer than ``j + 1`` grid points lie below ``v``, so the counts
    are the cumulative histogram of ``searchsorted(grid, v, "left")``
    (``O(n log m)`` for ``m`` candidates instead of a sort of the ``n`` values).
    """
    if grid.size < 2 or not np.all(np.diff(grid) > 0) or np.isnan(values).any():
        return np.searchsorted(np.sort(values), grid, side="right")
    below = np.searchsorted(grid, values, side="left")
    return np.cumsum(np.bincount(below, minlength=grid.size + 1)[: grid.size])


def quantile_scores(sorted_values, q, grid):
    """Scores ``u(c) = -|L(c) - q n|``, ``L(c) = #{i : x_i < c}``, of the candidates ``grid``.

    ``sorted_values`` must be sorted ascending (one value per row). Replacing
    one row moves every ``L(c)`` by at most 1 and ``n`` is public, so
    ``|u(c) - u'(c)| <= 1`` for every candidate (replace-one sensitivity 1).
    """
    counts = np.searchsorted(sorted_values, grid, side="left")
    return -np.abs(counts - q * sorted_values.shape[0])


def cell_scores(counts, n, level):
    """Scores ``u(c_k) = -max(0, L(c_k) - t, t - L(c_(k+1)))``, ``t = level n``, of the grid cells ``[c_k, c_(k+1))``.

    ``counts`` are ``L(c) = #{x_i < c}`` over the sorted public grid
    (:func:`grid_counts` with ``side="left"``) and ``L`` after the last point
    is ``n``. A cell scores 0 when it holds the ``level``-quantile
    (``L(c_k) <= t <= L(c_(k+1))``) and minus the number of rows between it
    and the quantile otherwise. ``-|L(c) - t|`` is flat over every cell with no
    data, so where the quantile sits on a repeated value (a binary feature),
    the thousands of empty cells below the data or between two values tie
    with the right answer; the cell score puts the value's own cell ahead of
    them by the rows on either side (Smith 2011 scores intervals between data
    points the same way). Replace-one with public ``n`` moves each ``L`` by at
    most 1, and a maximum of functions that each move by at most 1 moves by at
    most 1: sensitivity 1, as for ``-|L(c) - t|``.
    """
    counts = np.asarray(counts, dtype=float)
    t = float(level) * int(n)
    upper = np.append(counts[1:], float(n))
    return -np.maximum(0.0, np.maximum(counts - t, t - upper))


def range_quantile_level(n_samples, selection_epsilon, n_candidates=WIDE_SIGNED_GRID.size, failure=RANGE_FAILURE):
    """Public quantile level of ``bounds="auto"``: the range is ``[q, 1 - q]``-quantiles.

    ``q = min(0.25, max(0.01, 2 beta ln(m / failure) / n))`` with
    ``beta = 2 / selection_epsilon`` the Gumbel scale and ``m`` candidates.
    Every candidate beyond the data scores ``-q n``; the exponential mechanism
    returns one of them (a value far outside the data) with probability at most
    about ``m exp(-q n / beta)``, which is below ``failure`` once
    ``q n >= beta ln(m / failure)``. The factor 2 leaves a margin; the cap 0.25
    keeps a range. A function of public ``n``, epsilon and ``m`` only.

    Returns
    -------
    q : float
    located : bool
        ``False`` when even ``q = 0.25`` misses ``q n >= beta ln(m / failure)``:
        then the selections may land far outside the data.
    """
    beta = 2.0 / float(selection_epsilon)
    need = beta * math.log(n_candidates / failure)
    n = max(int(n_samples), 1)
    q = min(0.25, max(0.01, 2.0 * need / n))
    return q, q * n >= need


def private_feature_ranges(X, q, epsilon, rng, grid=WIDE_SIGNED_GRID, secure=True):
    """Private ``q``- and ``(1 - q)``-quantiles of every column of ``X`` over the public ``grid``.

    Each column is sorted once; both selections reuse its counts
    ``L(c) = #{x_ij < c}``, scored per grid cell (:func:`cell_scores`,
    sensitivity 1 under replace-one with public ``n``, so that a binary or
    few-valued column's bound lands at its value, not anywhere in the empty
    cells around it), and each is the exponential mechanism
    ``argmax(u + Gumbel(2 / epsilon))``, ``epsilon``-bounded-range: ``2 d``
    selections, ``BoundedRangeEvent(epsilon, 2 d)``. Where the low pick is not
    below the high one, the pair is widened to the grid points just outside it
    (post-processing: a rule on the released indices and the public grid).

    Returns
    -------
    lower, upper : ndarrays of shape (n_features,), grid points with lower < upper
    event : BoundedRangeEvent
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d, got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite for private_feature_ranges.")
    if not 0.0 < q < 0.5:
        raise ValueError(f"q must be in (0, 0.5), got {q!r}.")
    return private_feature_ranges_from_counts(grid_counts(X, grid, side="left"), X.shape[0], q, epsilon, rng, grid,
                                              secure)


def private_feature_ranges_from_counts(counts, n, q, epsilon, rng, grid=WIDE_SIGNED_GRID, secure=True):
    """:func:`private_feature_ranges` from the counts ``L(c) = #{x_ij < c}`` of every column.

    ``counts`` has shape ``(n_features, grid.size)`` (:func:`grid_counts` with
    ``side="left"``); ``n`` is the public number of rows.
    """
    counts = np.asarray(counts)
    grid = np.asarray(grid, dtype=float)
    plan = secure_selection_plan(1.0, epsilon, secure)
    d = counts.shape[0]
    lo_idx, hi_idx = np.empty(d, dtype=np.intp), np.empty(d, dtype=np.intp)
    for j in range(d):
        lo_idx[j] = select(rng, cell_scores(counts[j], n, q), *plan)
        hi_idx[j] = select(rng, cell_scores(counts[j], n, 1.0 - q), *plan)
    a, b = np.minimum(lo_idx, hi_idx), np.maximum(lo_idx, hi_idx)
    tied = a == b
    a = np.where(tied, np.maximum(a - 1, 0), a)
    b = np.where(tied, np.minimum(b + 1, grid.size - 1), b)
    return grid[a].copy(), grid[b].copy(), BoundedRangeEvent(float(epsilon), 2 * d)


# ---------------------------------------------------------------------------------------------
# Noisy per-feature histograms (a linear model's ``feature_scaling="auto"``)
# ---------------------------------------------------------------------------------------------
def signed_log_edges(smallest_exp=-16, largest_exp=20, per_octave=4):
    """Public bin edges ``{-p_J, ..., -p_0, p_0, ..., p_J}``, ``p_k = 2^(smallest_exp + k / per_octave)``.

    ``m = 2 (J + 1)`` edges make ``m + 1`` bins: ``(-inf, -p_J)``, the
    signed geometric bins, ``[-p_0, p_0)`` (which holds 0) and
    ``[p_J, inf)``. A function of its arguments only, never of data.
    """
    k = np.arange((largest_exp - smallest_exp) * per_octave + 1)
    p = 2.0 ** (smallest_exp + k / per_octave)
    return np.concatenate([-p[::-1], p])


#: The edges of :func:`private_feature_histograms`: magnitudes 2^-16 (1.5e-5) .. 2^20 (1.05e6), four bins per
#: octave (ratio 1.19), 290 edges, 291 bins.
SCALE_EDGES = signed_log_edges()
SCALE_EDGES.setflags(write=False)


def feature_bin_counts(X, edges=SCALE_EDGES):
    """``(d, m + 1)`` counts: how many rows of each column fall in each bin of ``edges`` (dense or sparse ``X``).

    A value ``v`` is in bin ``searchsorted(edges, v, "right")``. Every row
    adds 1 to exactly one bin of every column, so replacing one row moves at
    most two counts of each column, each by 1: L2 sensitivity ``sqrt(2 d)``
    (replace-one, public ``n``).
    """
    edges = np.asarray(edges, dtype=float)
    n, d = X.shape
    m = edges.size + 1
    if sparse.issparse(X):  # the stored entries, then every column's implicit zeros in the bin that holds 0
        Xc = sparse.csc_matrix(X, copy=True)
        Xc.sum_duplicates()  # one value per row and column: a row stored with repeated entries counts once
        cols = np.repeat(np.arange(d), np.diff(Xc.indptr))
        keys = cols * m + np.searchsorted(edges, Xc.data, side="right")
        out = np.bincount(keys, minlength=d * m).reshape(d, m).astype(float)
        out[:, int(np.searchsorted(edges, 0.0, side="right"))] += n - np.diff(Xc.indptr)
        return out
    bins = np.searchsorted(edges, np.asarray(X, dtype=float), side="right")  # (n, d), one pass
    keys = bins + (np.arange(d) * m)[None, :]
    return np.bincount(keys.ravel(), minlength=d * m).reshape(d, m).astype(float)


def private_feature_histograms(X, mu, rng, edges=SCALE_EDGES):
    """``(noisy_counts, event)``: every column's bin counts (:func:`feature_bin_counts`) plus ``N(0, sigma^2)``.

    The Gaussian mechanism on the ``d (m + 1)`` counts at once, L2
    sensitivity ``sqrt(2 d)`` under replace-one with public ``n``, with
    ``sigma = sqrt(2 d) / mu``: ``mu``-GDP whatever the width ``d``,
    ``GaussianEvent(sqrt(2 d), sigma)``.
    """
    if not 0.0 < float(mu) < math.inf:
        raise ValueError(f"mu must be positive and finite, got {mu!r}.")
    if not sparse.issparse(X):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d, got shape {X.shape}.")
    sens = math.sqrt(2.0 * X.shape[1])
    sigma = sens / float(mu)
    counts = feature_bin_counts(X, edges)
    return counts + gaussian_noise(rng, sigma, counts.shape), GaussianEvent(sens, sigma)


def histogram_quantile_bins(noisy_counts, n, level):
    """Post-processing: per column, the first bin at which the noisy cumulative count reaches ``level * n``."""
    cdf = np.cumsum(np.asarray(noisy_counts, dtype=float), axis=1)
    reached = cdf >= float(level) * int(n)
    idx = np.argmax(reached, axis=1)
    return np.where(reached.any(axis=1), idx, cdf.shape[1] - 1)


def bin_values(bins, edges=SCALE_EDGES):
    """A public representative of each bin: the geometric midpoint (signed), 0 for the bin holding 0, the edge
    itself for the two outer bins."""
    edges = np.asarray(edges, dtype=float)
    b = np.asarray(bins)
    lo = edges[np.clip(b - 1, 0, edges.size - 1)]
    hi = edges[np.clip(b, 0, edges.size - 1)]
    mid = np.sign(lo + hi) * np.sqrt(np.abs(lo * hi))
    mid = np.where(lo * hi < 0, 0.0, mid)
    return np.where(b == 0, edges[0], np.where(b == edges.size, edges[-1], mid))
