"""A private quantile by the exponential mechanism over a public grid.

Used to choose a clipping bound (``data_norm="auto"``) without reading it from
the data in the clear. For a candidate ``t`` of a public grid the score is
``u(t) = -| #{i : v_i <= t} - q n |``. Under replace-one with public ``n`` a swap
changes every count by at most 1, so the score sensitivity is ``s = 1``; the
candidate is ``argmax(u + Gumbel(2 s / epsilon))``, which is the exponential
mechanism and epsilon-bounded-range (Durfee-Rogers 2019), priced as
``BoundedRangeEvent(epsilon)``.
"""

import numpy as np

from .accounting import gumbel_scale
from .events import BoundedRangeEvent
from .mechanisms import report_noisy_max

__all__ = ["private_quantile", "DEFAULT_NORM_GRID", "DEFAULT_SIGNED_GRID"]

#: Public candidate bounds for row norms: 1e-2 .. 1e5, 6 per decade (ratio ~1.47). A coarse
#: grid keeps the total mass of the candidates far above the data (all scored -q n) small,
#: which matters at small epsilon * n (chosen on benchmarks/bench_utility.py).
DEFAULT_NORM_GRID = np.geomspace(1e-2, 1e5, 43)

#: Public candidates for a signed location (e.g. the median label): -1e5 .. 1e5 through 0.
DEFAULT_SIGNED_GRID = np.concatenate([-DEFAULT_NORM_GRID[::-1], [0.0], DEFAULT_NORM_GRID])


def private_quantile(values, q, epsilon, rng, grid=DEFAULT_NORM_GRID):
    """Epsilon-DP estimate of the ``q``-quantile of ``values`` among ``grid``.

    Parameters
    ----------
    values : array of shape (n,)
        One value per row (a row's contribution is this single value).
    q : float in (0, 1)
    epsilon : float > 0
    rng : numpy RandomState / Generator
    grid : sorted array of public candidates

    Returns
    -------
    value : float, a grid point
    event : BoundedRangeEvent
    """
    values = np.sort(np.asarray(values, dtype=float))
    grid = np.asarray(grid, dtype=float)
    counts = np.searchsorted(values, grid, side="right")
    scores = -np.abs(counts - q * values.size)
    idx = report_noisy_max(rng, scores, gumbel_scale(1.0, epsilon))
    return float(grid[idx]), BoundedRangeEvent(float(epsilon))
