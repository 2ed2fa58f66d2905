"""Private per-feature scaling inside a linear model's fit (``feature_scaling="auto"``).

Raw, unstandardised columns whose scales differ by orders of magnitude stall
a fixed schedule of noisy gradient steps. The fit releases, once, a noisy
histogram of every column over public bins (one Gaussian release whose price
does not depend on the width) and, reading only those noisy counts, maps
badly scaled columns to a common scale before the row bound; the model's
coefficients are mapped back to the user's units.
"""

import math

import numpy as np
import scipy.sparse as sp

from .privacy.accounting import gdp_mu
from .privacy.quantile import SCALE_EDGES, bin_values, histogram_quantile_bins, private_feature_histograms

__all__ = ["SCALE_MU_SHARE", "feature_scaling_mu", "scaling_reliable", "private_feature_scaling"]


#: share of the fit's squared GDP parameter ``mu^2`` (``mu`` of ``(epsilon, delta)``) the histograms take: the
#: main release's noise then grows by ``1 / sqrt(1 - share)`` (about 1%) at most
SCALE_MU_SHARE = 0.02
#: the quartiles are trusted when ``SCALE_Z`` standard deviations of the noisy cumulative count stay below
#: ``n / SCALE_RANK_SLACK`` rows (the picked ranks then lie between the 1/8 and 3/8 quantiles, 5/8 and 7/8)
SCALE_Z, SCALE_RANK_SLACK = 3.0, 8.0
#: the design counts as badly scaled when the largest magnitude ``max(|q1|, |q3|)`` of a column is more than
#: ``SCALE_RATIO`` times the smallest (columns whose quartiles share a bin left out); then every column whose
#: middle half is not already within ``[-SCALE_STANDARD, SCALE_STANDARD]`` with a half-spread of at least
#: ``1 / SCALE_STANDARD`` is centred and scaled
SCALE_RATIO, SCALE_STANDARD = 20.0, 3.0


def feature_scaling_mu(n_samples, epsilon, delta, share=SCALE_MU_SHARE, edges=None):
    """GDP parameter of :func:`private_feature_scaling`'s histograms, or ``None`` (the fit does not scale).

    A function of public quantities only (``n``, ``epsilon``, ``delta``; never
    the width, so a model behind a private encoder is planned exactly):
    ``mu_s = sqrt(share) * gdp_mu(epsilon, delta)``, released only when even a
    single column's quartiles could be trusted (:func:`scaling_reliable` at
    ``d = 1``); with ``delta = 0`` never.
    """
    if not (0.0 < float(delta) < 1.0) or not math.isfinite(float(epsilon)):
        return None
    mu = math.sqrt(share) * gdp_mu(float(epsilon), float(delta))
    if not mu > 0 or not scaling_reliable(int(n_samples), 1, mu, SCALE_EDGES if edges is None else edges):
        return None
    return mu


def scaling_reliable(n_samples, n_features, mu, edges):
    """Whether noisy cumulative counts of ``n_features`` columns at ``mu`` locate the quartiles (public)."""
    sigma = math.sqrt(2.0 * n_features) / float(mu)
    return SCALE_Z * sigma * math.sqrt(len(edges) + 1) <= n_samples / SCALE_RANK_SLACK


def private_feature_scaling(X, mu, rng):
    """``(centre, scale, event)``: a private affine map ``z = (x - centre) / scale`` of every column, or
    ``centre = scale = None`` (the identity).

    One release: :func:`skdp.privacy.quantile.private_feature_histograms`
    (``mu``-GDP, ``GaussianEvent``). Everything after it is post-processing
    of the noisy counts with public constants: the quartile bins of every
    column (:func:`~skdp.privacy.quantile.histogram_quantile_bins`); the
    identity unless the quartiles are trusted at this width
    (:func:`scaling_reliable`) and the design is badly scaled (largest to
    smallest column magnitude above :data:`SCALE_RATIO`, among columns whose
    quartiles fall in different bins); then the columns whose middle half is
    not already standard-like are centred at the quartiles' midpoint and
    divided by their half-distance. A column whose quartiles share a bin (one
    value holds half of it: a one-hot or zero-heavy column) is left alone
    unless that value is larger than :data:`SCALE_STANDARD` in magnitude
    (then it is centred there and scaled by the bin's half-width). Sparse
    ``X`` is only scaled, never centred (centring would densify it).
    """
    n, d = X.shape
    noisy, event = private_feature_histograms(X, mu, rng, SCALE_EDGES)
    if not scaling_reliable(n, d, mu, SCALE_EDGES):
        return None, None, event
    a, b = histogram_quantile_bins(noisy, n, 0.25), histogram_quantile_bins(noisy, n, 0.75)
    b = np.maximum(a, b)
    lo, hi = bin_values(a, SCALE_EDGES), bin_values(b, SCALE_EDGES)
    tie = a == b
    mag = np.maximum(np.abs(lo), np.abs(hi))
    spread = 0.5 * (hi - lo)
    free = ~tie & (mag > 0)
    if not free.any() or mag[free].max() <= SCALE_RATIO * mag[free].min():
        return None, None, event
    ratio = SCALE_EDGES[SCALE_EDGES > 0][1] / SCALE_EDGES[SCALE_EDGES > 0][0]
    standard = (mag <= SCALE_STANDARD) & (tie | (spread >= 1.0 / SCALE_STANDARD))
    centre = np.where(standard, 0.0, 0.5 * (lo + hi))
    scale = np.where(standard, 1.0, np.where(tie, 0.5 * (ratio - 1.0) * mag, spread))
    if sp.issparse(X):
        centre = np.zeros(d)
    return centre, scale, event
