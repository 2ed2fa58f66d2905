"""One accountant: events -> (epsilon, delta); calibration, its inverse, is in :mod:`skdp.privacy.calibration`.

Every formula here is a published result, cited where it is used (the one
derived for skdp, the replace-one Poisson pair, is explained on the
documentation page :doc:`/user_guide/accounting`). The module has no knowledge
of solvers or data: it prices the numbers it is given.

Methods, in the order :func:`price` tries them:

``"basic"``
    delta = 0: pure-DP events compose by adding epsilons.
``"gdp_exact"``
    Only unsampled Gaussian releases: they compose exactly into mu-GDP with
    ``mu = sqrt(sum count (Delta/sigma)^2)`` (Dong-Roth-Su 2022, Cor. 3.3) and
    ``delta(epsilon)`` is the analytic Gaussian curve (Balle-Wang 2018, Thm 8).
    Nothing is tighter.
``"rdp"``, ``"zcdp"``, ``"gdp+pure"``
    Otherwise every applicable bound is computed and the smallest is returned
    (each is valid at the same delta, so the minimum is valid). ``"gdp+pure"``
    (:func:`gdp_pure_epsilon`) composes unsampled Gaussian releases with pure
    and bounded-range events exactly through their dominating pairs; it is never
    above adding the pure epsilons to the Gaussian part's epsilon.

Events of type :class:`~skdp.privacy.events.ApproxDPEvent` (mechanisms with
their own (epsilon, delta) theorem, such as objective perturbation) are
composed with the rest by basic composition: their deltas are subtracted from
the target delta first, and their epsilons are added at the end.

References
----------
.. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
.. [2] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy:
   analytical calibration and optimal denoising", ICML 2018. <https://arxiv.org/abs/1805.06530>
.. [3] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions,
   and lower bounds", TCC 2016. <https://arxiv.org/abs/1605.02065>
.. [4] P. Kairouz, S. Oh and P. Viswanath, "The composition theorem for differential privacy",
   ICML 2015; IEEE Transactions on Information Theory, 2017. <https://arxiv.org/abs/1311.0776>
.. [5] Y. Zhu, J. Dong and Y.-X. Wang, "Optimal accounting of differential privacy via
   characteristic function", AISTATS 2022. <https://arxiv.org/abs/2106.08567>
.. [6] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
   privacy", NeurIPS 2020. <https://arxiv.org/abs/2004.00010>
.. [7] B. Balle, G. Barthe, M. Gaboardi, J. Hsu and T. Sato, "Hypothesis testing interpretations
   and Rényi differential privacy", AISTATS 2020.
.. [8] I. Mironov, "Rényi differential privacy", IEEE CSF 2017.
   <https://arxiv.org/abs/1702.07476>
.. [9] I. Mironov, K. Talwar and L. Zhang, "Rényi differential privacy of the sampled Gaussian
   mechanism", arXiv preprint, 2019. <https://arxiv.org/abs/1908.10530>
.. [10] C. Dwork and A. Roth, "The algorithmic foundations of differential privacy", Foundations
   and Trends in Theoretical Computer Science 9(3-4), 2014. <https://doi.org/10.1561/0400000042>
.. [11] K. Chaudhuri, C. Monteleoni and A. D. Sarwate, "Differentially private empirical risk
   minimization", Journal of Machine Learning Research 12, 2011.
   <https://arxiv.org/abs/0912.0071>
.. [12] D. Durfee and R. Rogers, "Practical differentially private top-k selection with
   pay-what-you-get composition", NeurIPS 2019.
   <https://papers.nips.cc/paper/2019/hash/b139e104214a08ae3f2ebcce149cdf6e-Abstract.html>
.. [13] M. Cesar and R. Rogers, "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT 2021. <https://arxiv.org/abs/2004.07223>
.. [14] R. Bassily, C. Guzmán and A. Nandi, "Non-Euclidean differentially private stochastic
   convex optimization", COLT 2021. <https://arxiv.org/abs/2103.01278>
"""

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize, special

from ..exceptions import PrivacyAccountingError
from .budget import NEIGHBOURING_RELATIONS, PrivacyBudget
from .events import (
    ApproxDPEvent,
    BoundedRangeEvent,
    GaussianEvent,
    L2LaplaceEvent,
    LaplaceEvent,
    PoissonGaussianEvent,
    PureDPEvent,
    ZCDPEvent,
)

__all__ = [
    "PrivacyReport",
    "price",
    "supports",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gdp_pure_epsilon",
    "classic_gaussian_sigma",
    "zcdp_epsilon",
    "zcdp_rho",
    "rdp_to_epsilon",
    "rdp_gaussian",
    "rdp_poisson_gaussian",
    "rdp_pure",
    "rdp_laplace_1d",
    "DEFAULT_RDP_ORDERS",
]

_PURE_TYPES = (PureDPEvent, LaplaceEvent, L2LaplaceEvent)
_SUPPORTED = (
    GaussianEvent,
    PoissonGaussianEvent,
    PureDPEvent,
    LaplaceEvent,
    L2LaplaceEvent,
    BoundedRangeEvent,
    ZCDPEvent,
    ApproxDPEvent,
)

#: Orders for curves with Poisson-subsampled events, whose RDP is a quadrature per order.
_SAMPLED_ORDERS = np.concatenate(
    [np.round(np.arange(1.1, 2.0, 0.1), 10), np.arange(2.0, 10.0, 0.25), np.arange(10.0, 20.0), np.arange(20.0, 64.0, 2.0),
     [64.0, 80.0, 96.0, 128.0, 192.0, 256.0]]
)

#: dp-accounting's default orders (``DEFAULT_RDP_ORDERS`` of Google's dp-accounting library).
DEFAULT_RDP_ORDERS = np.concatenate(
    [np.round(np.arange(1.1, 10.95, 0.1), 10), np.arange(11.0, 64.0), [128.0, 256.0, 512.0, 1024.0]]
)


# --------------------------------------------------------------------------------------
# Gaussian differential privacy (Dong, Roth, Su 2022; Balle, Wang 2018)
# --------------------------------------------------------------------------------------
def _gdp_log_delta(eps, mu):
    """log delta(eps; mu) = log[Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)], stably."""
    if mu == 0:
        return -math.inf
    if math.isinf(mu):
        return 0.0
    a = special.log_ndtr(-eps / mu + mu / 2)
    b = eps + special.log_ndtr(-eps / mu - mu / 2)
    if b >= a:
        return -math.inf
    return a + math.log1p(-math.exp(b - a))


def gdp_delta(epsilon, mu):
    """delta(epsilon) of a mu-GDP mechanism (Balle-Wang 2018 Thm 8 = DRS22 Cor 2.13).

    Examples
    --------
    >>> round(gdp_delta(1.0, 1.0), 10)
    0.1269367375
    """
    return math.exp(_gdp_log_delta(float(epsilon), float(mu)))


def gdp_epsilon(mu, delta):
    """Smallest epsilon such that a mu-GDP mechanism is (epsilon, delta)-DP.

    ``delta(eps; mu)`` decreases in ``eps`` (Balle-Wang 2018, Thm 8), so brentq
    on ``log delta(eps; mu) = log delta`` over ``[0, mu^2/2 + mu sqrt(2 log(1/delta))]``
    (the upper end is the zCDP bound of Bun-Steinke 2016, Prop. 1.3, always valid).
    """
    mu = float(mu)
    delta = float(delta)
    if mu == 0:
        return 0.0
    if delta <= 0 or math.isinf(mu):
        return math.inf
    log_delta = math.log(delta)
    if _gdp_log_delta(0.0, mu) <= log_delta:
        return 0.0
    hi = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta))
    while _gdp_log_delta(hi, mu) > log_delta:  # pragma: no cover - zCDP bound is valid
        hi *= 2
    return optimize.brentq(
        lambda e: _gdp_log_delta(e, mu) - log_delta, 0.0, hi, xtol=1e-12, rtol=1e-14
    )


@lru_cache(maxsize=4096)
def gdp_mu(epsilon, delta):
    """The largest mu such that mu-GDP implies (epsilon, delta)-DP (``mu*``).

    Examples
    --------
    >>> round(gdp_mu(1.0, 1e-5), 10)
    0.2680511232
    """
    epsilon = float(epsilon)
    delta = float(delta)
    if not epsilon >= 0 or not 0 < delta < 1:
        raise ValueError("gdp_mu needs epsilon >= 0 and 0 < delta < 1.")
    log_delta = math.log(delta)
    lo, hi = 0.0, 1.0
    while _gdp_log_delta(epsilon, hi) < log_delta:
        lo, hi = hi, hi * 2
    f = lambda m: _gdp_log_delta(epsilon, m) - log_delta  # noqa: E731
    if lo == 0.0:
        lo = 1e-300
        if f(lo) >= 0:  # pragma: no cover
            return 0.0
    mu = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=1e-15)
    # Return the private side of the root.
    while f(mu) > 0:  # pragma: no cover - brentq tolerance
        mu = math.nextafter(mu, 0.0)
    return mu


#: most support points of the pure events' privacy-loss distribution :func:`gdp_pure_epsilon` convolves
_PURE_SUPPORT_LIMIT = 4096


def _pure_loss_distribution(pure):
    """Support and log-probabilities of the summed privacy loss of pure events' dominating pairs.

    An ``epsilon``-DP mechanism is dominated by randomised response, whose
    privacy loss under the first distribution is ``+epsilon`` with
    probability ``e^epsilon / (1 + e^epsilon)`` and ``-epsilon`` otherwise
    (Kairouz, Oh, Viswanath 2017, Thm. 2.1); ``count`` repetitions add
    ``epsilon (2 B - count)`` with ``B`` binomial. ``None`` when the support
    would exceed :data:`_PURE_SUPPORT_LIMIT` points.
    """
    values, logp = np.zeros(1), np.zeros(1)
    for eps, count in pure:
        count = int(count)
        k = np.arange(count + 1)
        log_up = eps - np.logaddexp(0.0, eps)
        log_down = -np.logaddexp(0.0, eps)
        log_binom = special.gammaln(count + 1) - special.gammaln(k + 1) - special.gammaln(count - k + 1)
        v = eps * (2 * k - count)
        lp = log_binom + k * log_up + (count - k) * log_down
        if values.size * v.size > _PURE_SUPPORT_LIMIT:
            return None
        values = (values[:, None] + v[None, :]).ravel()
        logp = (logp[:, None] + lp[None, :]).ravel()
        # merge equal losses (equal epsilons give a lattice)
        key = np.round(values, 12)
        uniq, inverse = np.unique(key, return_inverse=True)
        merged = np.full(uniq.size, -np.inf)
        np.logaddexp.at(merged, inverse, logp)
        values, logp = uniq, merged
    return values, logp


def _gdp_pure_log_delta(eps, mu, values, logp):
    """``log delta(eps)`` of a ``mu``-GDP release composed with pure events of loss distribution ``(values, logp)``.

    Vectorised over the support: ``log delta_mu(x)`` as in :func:`_gdp_log_delta`, for every ``x = eps - v``.
    """
    x = eps - values
    if mu == 0:
        with np.errstate(divide="ignore"):
            ld = np.where(x < 0, np.log(-np.expm1(np.minimum(x, 0.0))), -np.inf)
    else:
        a = special.log_ndtr(-x / mu + mu / 2)
        b = x + special.log_ndtr(-x / mu - mu / 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            ld = np.where(b < a, a + np.log1p(-np.exp(np.minimum(b - a, 0.0))), -np.inf)
    terms = logp + ld
    return float(special.logsumexp(terms)) if np.any(terms > -np.inf) else -math.inf


def gdp_pure_epsilon(mu, pure, delta):
    """Exact epsilon at ``delta`` of a ``mu``-GDP mechanism composed with pure-DP mechanisms.

    ``pure`` lists ``(epsilon_i, count_i)``: mechanisms that are each
    ``epsilon_i``-DP (pure, Laplace and bounded-range events). A composition is
    dominated by the product of its parts' dominating pairs (Zhu, Dong, Wang
    2022, Thm. 10): the Gaussian pair ``N(0, 1), N(mu, 1)`` (Dong, Roth, Su
    2022) and randomised response for each pure part (Kairouz, Oh, Viswanath
    2017). With ``L`` the pure parts' summed privacy loss
    (:func:`_pure_loss_distribution`), ``delta(eps) = E[delta_mu(eps - L)]``,
    ``delta_mu`` the Gaussian curve (:func:`gdp_delta`, valid for negative
    arguments too; ``1 - e^x`` for ``x < 0`` when ``mu = 0``). The returned
    epsilon solves ``delta(eps) = delta`` on its private side; it is at most
    ``gdp_epsilon(mu, delta) + sum(count_i epsilon_i)``, which it returns when
    the pure parts' support is too large to enumerate.

    Examples
    --------
    >>> basic = gdp_epsilon(0.25, 1e-5) + 0.05
    >>> exact = gdp_pure_epsilon(0.25, [(0.05, 1)], 1e-5)
    >>> bool(exact < basic - 0.02)
    True
    """
    mu, delta = float(mu), float(delta)
    pure = [(float(e), int(c)) for e, c in pure if e > 0 and c > 0]
    basic = (gdp_epsilon(mu, delta) if mu > 0 else 0.0) + sum(e * c for e, c in pure)
    if not pure or delta <= 0 or math.isinf(basic):
        return basic
    dist = _pure_loss_distribution(pure)
    if dist is None:
        return basic
    values, logp = dist
    log_delta = math.log(delta)

    def f(e):
        return _gdp_pure_log_delta(e, mu, values, logp) - log_delta

    if f(0.0) <= 0:
        return 0.0
    if f(basic) > 0:  # pragma: no cover - the basic bound is valid
        return basic
    eps = optimize.brentq(f, 0.0, basic, xtol=1e-13, rtol=1e-14)
    while f(eps) > 0:  # the private side of the root
        eps = math.nextafter(eps, math.inf)
    return min(eps, basic)


def classic_gaussian_sigma(sensitivity, epsilon, delta):
    """Dwork-Roth Thm A.1 ``sigma = Delta sqrt(2 ln(1.25/delta))/epsilon``; for comparison only.

    Only valid for ``epsilon < 1``; raises otherwise (above 1 it can be unsafe:
    at ``epsilon = 10``, ``delta = 1e-5`` its sigma really gives ``delta = 2.3e-5``).
    Never used by a solver.
    """
    if not 0 < epsilon < 1:
        raise ValueError("The classic Gaussian mechanism bound only holds for 0 < epsilon < 1.")
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


# --------------------------------------------------------------------------------------
# zCDP (Bun, Steinke 2016)
# --------------------------------------------------------------------------------------
def _rdp_conversion(alpha, rdp, log_delta):
    # Canonne-Kamath-Steinke 2020, Prop. 12 = Balle et al. 2020, Thm 21.
    return rdp + np.log1p(-1.0 / alpha) - (log_delta + np.log(alpha)) / (alpha - 1.0)


def zcdp_epsilon(rho, delta):
    """Tight rho-zCDP -> (epsilon, delta) conversion (CKS20 Cor 13), continuous alpha."""
    rho = float(rho)
    if rho == 0:
        return 0.0
    if delta <= 0 or math.isinf(rho):
        return math.inf
    log_delta = math.log(delta)

    def f(t):
        alpha = 1.0 + math.exp(t)
        return _rdp_conversion(alpha, alpha * rho, log_delta)

    t0 = math.log(math.sqrt(-log_delta / rho))
    res = optimize.minimize_scalar(f, bounds=(min(-10.0, t0 - 5), max(15.0, t0 + 5)), method="bounded",
                                   options={"xatol": 1e-10})
    simple = rho + 2 * math.sqrt(rho * -log_delta)
    return max(0.0, min(float(res.fun), f(t0), simple))


def zcdp_rho(epsilon, delta):
    """Largest rho whose tight conversion (CKS20 Cor 13) is <= (epsilon, delta); brentq above the simple bound."""
    log_inv = math.log(1 / delta)
    rho_simple = (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2
    hi = rho_simple * 2
    while zcdp_epsilon(hi, delta) < epsilon:
        hi *= 2
    rho = optimize.brentq(lambda r: zcdp_epsilon(r, delta) - epsilon, rho_simple, hi, xtol=1e-15, rtol=1e-13)
    step = math.ulp(rho)  # back off until feasible, the step doubling (one ulp at a time took 1e6 steps)
    while zcdp_epsilon(rho, delta) > epsilon:
        rho, step = max(rho - step, 0.0), 2 * step
    return rho


# --------------------------------------------------------------------------------------
# Renyi DP (Mironov 2017; Mironov, Talwar, Zhang 2019)
# --------------------------------------------------------------------------------------
def rdp_gaussian(orders, sensitivity, sigma, count=1):
    """RDP curve ``count * alpha Delta^2 / (2 sigma^2)`` (Mironov 2017)."""
    orders = np.asarray(orders, dtype=float)
    return count * orders * (sensitivity / sigma) ** 2 / 2.0


def rdp_pure(orders, epsilon):
    """Tight RDP curve of any epsilon-DP mechanism (Bun-Steinke 2016, proof of Prop. 3.3; binary randomized response)."""
    a = np.asarray(orders, dtype=float)
    eps = float(epsilon)
    if eps == 0:
        return np.zeros_like(a)
    val = (np.logaddexp(a * eps, (1 - a) * eps) - np.logaddexp(0.0, eps)) / (a - 1)
    return np.minimum(np.maximum(val, 0.0), np.minimum(eps, a * eps * eps / 2))


def rdp_laplace_1d(orders, epsilon):
    """Exact RDP of the scalar Laplace mechanism (Mironov 2017, Prop. 6)."""
    a = np.asarray(orders, dtype=float)
    eps = float(epsilon)
    if eps == 0:
        return np.zeros_like(a)
    inner = np.log(a / (2 * a - 1) + (a - 1) / (2 * a - 1) * np.exp(-(2 * a - 1) * eps))
    return np.maximum(eps + inner / (a - 1), 0.0)


def _log_pair_densities(x, q, z, relation):
    """Log densities on ``x`` of the worst pair of one Poisson-subsampled Gaussian step (units of C).

    ``replace_one``: ``(1-q) N(0, z^2) + q N(+-1, z^2)``; ``add_remove``: the ``+`` mixture against ``N(0, z^2)``.
    """
    inv2z2 = 1.0 / (2 * z * z)
    base = -x * x * inv2z2 - math.log(z * math.sqrt(2 * math.pi))
    log1mq = math.log1p(-q)
    logq = math.log(q)
    lp = base + np.logaddexp(log1mq, logq + (2 * x - 1) * inv2z2)
    if relation == "replace_one":
        lm = base + np.logaddexp(log1mq, logq + (-2 * x - 1) * inv2z2)
    else:
        lm = base
    return lp, lm


@lru_cache(maxsize=65536)
def _poisson_rdp_one(alpha, q, z, relation):
    """One order of the Poisson-subsampled Gaussian RDP by 1-D quadrature.

    Units of the per-row bound C. ``replace_one``: D_alpha(P+ || P-) with
    P+- = (1-q) N(0, z^2) + q N(+-1, z^2), the pair derived for skdp (see
    :doc:`/user_guide/accounting`; it is dp-accounting's ``REPLACE_ONE`` pair).
    ``add_remove``: D_alpha(P+ || N(0, z^2)) (Mironov-Talwar-Zhang 2019, section 3.3).
    """
    if math.isinf(z):
        return 0.0
    if q == 1.0:
        return (2.0 * alpha / z**2) if relation == "replace_one" else alpha / (2 * z**2)
    h = min(z, z * z, 1.0) / 100.0
    lo = -12 * z - 2
    hi = 2 * (alpha - 1) + 12 * z + 3
    npts = int(min(max((hi - lo) / h, 2000), 400000)) | 1
    x, h = np.linspace(lo, hi, npts, retstep=True)
    lp, lm = _log_pair_densities(x, q, z, relation)
    logw = np.full(npts, math.log(h))
    logw[0] = logw[-1] = math.log(h / 2)
    val = special.logsumexp(alpha * lp + (1 - alpha) * lm + logw) / (alpha - 1)
    return max(float(val), 0.0)


def rdp_poisson_gaussian(orders, sampling_rate, noise_multiplier, count=1, relation="replace_one"):
    """RDP curve of ``count`` Poisson-subsampled Gaussian steps (fractional and integer orders).

    The reference quadrature (:func:`_poisson_rdp_one`, one fine grid per order); every epsilon that
    :func:`price` reports for a Poisson-subsampled event is computed by it.
    """
    q = float(sampling_rate)
    z = float(noise_multiplier)
    return count * np.array([_poisson_rdp_one(float(a), q, z, relation) for a in np.atleast_1d(orders)])


#: Step of the shared grid of the fast curve, ``min(z, z^2) / _FAST_STEP_DIV``. The integrand is analytic:
#: Gaussian of width ``z`` times ``log(1 - q + q e^((+-2x - 1)/(2 z^2)))`` terms whose nearest complex
#: singularities lie ``pi z^2`` off the real axis, so the trapezoid error decays like
#: ``exp(-2 pi^2 _FAST_STEP_DIV)`` -- far below round-off (checked against the reference in the tests).
_FAST_STEP_DIV = 16.0
_FAST_MAX_POINTS = 400_000
_FAST_CHUNK = 4_000_000  # matrix elements per block (memory bound of the vectorised sum)


@lru_cache(maxsize=1024)
def _poisson_rdp_fast(orders, q, z, relation):
    """The curve of :func:`_poisson_rdp_one` at ``orders`` (a tuple), from one shared grid (read-only array).

    Used only to *search* (calibration's root finding, and which orders can be optimal); the
    reported epsilon is re-evaluated by the reference quadrature. Same windows per order as the
    reference (``[-12 z - 2, 2 (alpha - 1) + 12 z + 3]``), one grid of step ``min(z, z^2)/16`` for
    all of them, and one matrix ``alpha * lp + (1 - alpha) * lm`` summed in log space.
    Agrees with the reference to about 1e-12 relative in ``log A_alpha``.
    """
    a = np.asarray(orders, dtype=float)
    if math.isinf(z):
        out = np.zeros_like(a)
    elif q == 1.0:
        out = (2.0 * a / z**2) if relation == "replace_one" else a / (2 * z**2)
    else:
        lo = -12 * z - 2
        ends = 2 * (a - 1) + 12 * z + 3
        hi = float(ends.max())
        h = min(z, z * z) / _FAST_STEP_DIV
        npts = int(min(max((hi - lo) / h, 2000), _FAST_MAX_POINTS)) + 1
        x, h = np.linspace(lo, hi, npts, retstep=True)
        lp, lm = _log_pair_densities(x, q, z, relation)
        d = lp - lm
        stop = np.searchsorted(x, ends, side="right")
        out = np.empty_like(a)
        order = np.argsort(a)
        i = 0
        while i < a.size:  # blocks of orders whose windows are within a factor 2 of each other
            j = i + 1
            while (j < a.size and stop[order[j]] <= 2 * stop[order[i]]
                   and (j - i + 1) * stop[order[j]] <= _FAST_CHUNK):
                j += 1
            idx = order[i:j]
            k = int(stop[order[j - 1]])
            m = lm[None, :k] + a[idx, None] * d[None, :k]
            m[np.arange(k)[None, :] >= stop[idx, None]] = -np.inf
            top = m.max(axis=1)  # finite: the first grid point is in every window
            out[idx] = top + np.log(np.exp(m - top[:, None]).sum(axis=1)) + math.log(h)
            i = j
        out = np.maximum(out / (a - 1), 0.0)
    out.setflags(write=False)
    return out


def _rdp_poisson_gaussian_fast(orders, sampling_rate, noise_multiplier, count=1, relation="replace_one"):
    a = tuple(float(o) for o in np.atleast_1d(orders))
    return count * _poisson_rdp_fast(a, float(sampling_rate), float(noise_multiplier), relation)


def rdp_poisson_gaussian_add_remove_integer(alpha, q, z):
    """MTZ19 closed form for integer alpha under add/remove (used as a test oracle)."""
    k = np.arange(alpha + 1)
    logc = special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)
    terms = logc + k * math.log(q) + (alpha - k) * math.log1p(-q) + (k * k - k) / (2 * z * z)
    return float(special.logsumexp(terms) / (alpha - 1))


def _order_epsilons(orders, rdp, delta, zero_margin=0.0):
    """(orders used, epsilon at each of them) of the CKS20 Prop. 12 conversion.

    ``zero_margin``: an absolute error allowance of ``rdp`` (a quadrature's round-off) that the
    epsilon = 0 shortcut must survive; it decides the shortcut, never the epsilon value.
    """
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    keep = orders > 1.01
    orders, rdp = orders[keep], np.maximum(rdp[keep], 0.0)
    log_delta = math.log(delta)
    with np.errstate(over="ignore", invalid="ignore"):
        eps = _rdp_conversion(orders, rdp, log_delta)
        # epsilon = 0 is exact when delta^2 + expm1(-r) > 0 (CKS20 Prop. 12).
        zero = delta * delta + np.expm1(-(rdp + zero_margin)) > 0
    eps = np.where(zero, 0.0, eps)
    eps = np.where(np.isnan(eps), np.inf, eps)
    return orders, eps


def rdp_to_epsilon(orders, rdp, delta, zero_margin=0.0):
    """(epsilon, best order) from an RDP curve (Canonne-Kamath-Steinke 2020, Prop. 12)."""
    orders, eps = _order_epsilons(orders, rdp, delta, zero_margin)
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(orders[i])


# --------------------------------------------------------------------------------------
# Pricing
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrivacyReport:
    """What the accountant said: the budget, the method that gave it, the RDP order if any."""

    budget: PrivacyBudget
    method: str
    order: float = None


def supports(event):
    """True for event types this accountant can price; unknown events are never priced as zero."""
    return isinstance(event, _SUPPORTED)


def _pure_eps(ev):
    return ev.epsilon


def _rdp_curve(events, orders, relation, fast=False):
    total = np.zeros_like(orders)
    poisson = _rdp_poisson_gaussian_fast if fast else rdp_poisson_gaussian
    for ev in events:
        if isinstance(ev, GaussianEvent):
            total += rdp_gaussian(orders, ev.sensitivity, ev.sigma, ev.count)
        elif isinstance(ev, PoissonGaussianEvent):
            total += poisson(orders, ev.sampling_rate, ev.noise_multiplier, ev.count, relation)
        elif isinstance(ev, _PURE_TYPES):
            if ev.one_dimensional_laplace:
                total += ev.count * rdp_laplace_1d(orders, ev.epsilon)
            else:
                total += ev.count * rdp_pure(orders, ev.epsilon)
        elif isinstance(ev, BoundedRangeEvent):
            total += ev.count * np.minimum(orders * ev.epsilon**2 / 8, rdp_pure(orders, ev.epsilon))
        elif isinstance(ev, ZCDPEvent):
            total += ev.count * orders * ev.rho
        else:  # pragma: no cover - filtered by caller
            raise PrivacyAccountingError(f"No RDP curve for {ev!r}.")
    return total


#: Orders whose fast epsilon is within this (relative to 1 + epsilon) of the fast minimum are
#: re-evaluated by the reference quadrature; the fast curve agrees with it to ~1e-12.
_CANDIDATE_RTOL = 1e-6
#: Round-off allowance of one step's quadrature r(alpha) near r = 0, where it matters (against the
#: closed forms at alpha = 2, 3: |error| <= 1e-15; at alpha = 1.1 the reference quadrature returns
#: 0 for a true r of 5.5e-15). Only gates the epsilon = 0 shortcut, never an epsilon value.
_QUADRATURE_MARGIN = 2e-14


def _rdp_epsilon(events, delta, relation, exact=True):
    """RDP epsilon: the CKS20 conversion minimised over the orders (the grid extended at its edges).

    With Poisson-subsampled events the per-order quadratures are the cost. The fast shared-grid
    curve (:func:`_poisson_rdp_fast`) picks the orders that can be optimal; with ``exact`` those
    (usually one) are re-evaluated by the reference quadrature and the reported value is the
    smallest of them. A minimum over a subset of the orders is never below the minimum over all of
    them, so this never reports less than the reference over the whole grid, and equals it whenever
    the reference's best order is among the candidates (the tests check it is, on a grid of events).
    ``exact=False`` (calibration's search only) returns the fast curve's value.
    """
    has_sampled = any(isinstance(e, PoissonGaussianEvent) for e in events)
    orders = DEFAULT_RDP_ORDERS if not has_sampled else _SAMPLED_ORDERS
    fast = has_sampled and not exact
    # The quadrature's r(alpha) carries round-off of up to ~1e-14 (absolute, per step); the epsilon = 0
    # shortcut (r < ~delta^2) must not be decided by it (at delta = 1e-9, delta^2 = 1e-18 is below it).
    margin = _QUADRATURE_MARGIN * sum(e.count for e in events if isinstance(e, PoissonGaussianEvent))

    def curve(o):
        return _rdp_curve(events, o, relation, fast=fast)

    if has_sampled and exact:
        kept, eps_fast = _order_epsilons(orders, _rdp_curve(events, orders, relation, fast=True), delta, margin)
        best = float(np.min(eps_fast))
        if math.isfinite(best):
            candidates = kept[eps_fast <= best + _CANDIDATE_RTOL * (1.0 + best)]
        else:
            candidates = kept
        eps, order = rdp_to_epsilon(candidates, curve(candidates), delta, margin)
    else:
        eps, order = rdp_to_epsilon(orders, curve(orders), delta, margin)
    # Extend the grid when the optimum sits on its edge (a grid-edge optimum is not the minimum).
    max_order = 2**16 if not has_sampled else 2**12
    while order == orders[-1] and orders[-1] < max_order and math.isfinite(eps):
        orders = np.array([orders[-1] * 1.5, orders[-1] * 2.0])
        e2, o2 = rdp_to_epsilon(orders, curve(orders), delta, margin)
        if e2 < eps:
            eps, order = e2, o2
        else:
            break
    if order == DEFAULT_RDP_ORDERS[0]:
        low = np.array([1.02, 1.03, 1.05, 1.075])
        e2, o2 = rdp_to_epsilon(low, curve(low), delta, margin)
        if e2 < eps:
            eps, order = e2, o2
    return eps, order


def _zcdp_total(events):
    rho = 0.0
    for ev in events:
        if isinstance(ev, GaussianEvent):
            rho += ev.mu_squared / 2
        elif isinstance(ev, _PURE_TYPES):
            rho += ev.count * ev.epsilon**2 / 2
        elif isinstance(ev, BoundedRangeEvent):
            rho += ev.count * ev.epsilon**2 / 8
        elif isinstance(ev, ZCDPEvent):
            rho += ev.count * ev.rho
        else:
            return None
    return rho


def price(events, delta, relation="replace_one"):
    """Price a composition of events at ``delta``.

    Parameters
    ----------
    events : iterable of events
        Mechanism descriptions from :mod:`skdp.privacy.events`.
    delta : float
        Target delta in ``[0, 1)``.
    relation : {"replace_one", "add_remove"}, default="replace_one"
        Neighbouring relation; it only changes how Poisson-subsampled events
        are priced (the caller computed every other sensitivity for it).

    Returns
    -------
    report : PrivacyReport
        ``report.budget`` is the (epsilon, delta) guarantee, ``report.method``
        the bound that gave it.

    Examples
    --------
    >>> from skdp.privacy import GaussianEvent, price
    >>> r = price([GaussianEvent(sensitivity=1.0, sigma=10.0, count=100)], delta=1e-5)
    >>> round(r.budget.epsilon, 8), r.method
    (4.3771781, 'gdp_exact')
    """
    if relation not in NEIGHBOURING_RELATIONS:
        raise ValueError(f"relation must be one of {NEIGHBOURING_RELATIONS}, got {relation!r}.")
    delta = float(delta)
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    events = tuple(events)
    for ev in events:
        if not supports(ev):
            raise PrivacyAccountingError(f"The accountant cannot price {ev!r}; refusing to guess.")
    return _price_cached(events, delta, relation, True)


def _price_cached(events, delta, relation, exact):
    """:func:`_price` memoised on its (immutable, public) inputs: a fit plans twice (the ledger charge
    and the fit) and calibration revisits the same events; the answer is a pure function of them."""
    try:
        hash(events)
    except TypeError:  # pragma: no cover - an unhashable user subclass of an event
        return _price(events, delta, relation, exact)
    return _price_lru(events, delta, relation, exact)


@lru_cache(maxsize=8192)
def _price_lru(events, delta, relation, exact):
    return _price(events, delta, relation, exact)


def _price(events, delta, relation, exact=True):
    """:func:`price` on validated events; ``exact=False`` prices Poisson-subsampled events with the fast
    curve (calibration's search), never a reported value."""

    def report(eps, method, order=None, d=delta):
        return PrivacyReport(PrivacyBudget(max(0.0, eps), d, relation), method, order)

    approx = [e for e in events if isinstance(e, ApproxDPEvent)]
    rest = [e for e in events if not isinstance(e, ApproxDPEvent)]
    # Events that release nothing about the data cost nothing.
    rest = [
        e
        for e in rest
        if not (
            (isinstance(e, GaussianEvent) and (e.sensitivity == 0 or math.isinf(e.sigma)))
            or (isinstance(e, PoissonGaussianEvent) and math.isinf(e.noise_multiplier))
            or (isinstance(e, (ZCDPEvent,)) and e.rho == 0)
            or (isinstance(e, _PURE_TYPES + (BoundedRangeEvent,)) and e.epsilon == 0)
        )
    ]
    eps_a = sum(e.count * e.epsilon for e in approx)
    delta_a = sum(e.count * e.delta for e in approx)
    delta_rest = delta - delta_a
    if delta_rest < -1e-15 * max(delta, 1e-300):
        return report(math.inf, "basic")
    delta_rest = max(delta_rest, 0.0)
    tag = "+basic" if approx else ""

    if not rest:
        return report(eps_a, "basic")

    all_pure = all(isinstance(e, _PURE_TYPES + (BoundedRangeEvent,)) for e in rest)
    basic_eps = sum(e.count * e.epsilon for e in rest) if all_pure else math.inf
    if delta_rest == 0:
        return report(eps_a + basic_eps, "basic")

    if all(isinstance(e, GaussianEvent) for e in rest):
        mu = math.sqrt(sum(e.mu_squared for e in rest))
        return report(eps_a + gdp_epsilon(mu, delta_rest), "gdp_exact" + tag)

    candidates = []
    if all_pure:
        candidates.append((basic_eps, "basic", None))
    eps_rdp, order = _rdp_epsilon(rest, delta_rest, relation, exact)
    candidates.append((eps_rdp, "rdp", order))
    rho = _zcdp_total(rest)
    if rho is not None:
        candidates.append((zcdp_epsilon(rho, delta_rest), "zcdp", None))
    if all(isinstance(e, (GaussianEvent, BoundedRangeEvent) + _PURE_TYPES) for e in rest):
        mu = math.sqrt(sum(e.mu_squared for e in rest if isinstance(e, GaussianEvent)))
        pure = [(e.epsilon, e.count) for e in rest if not isinstance(e, GaussianEvent)]
        candidates.append((gdp_pure_epsilon(mu, pure, delta_rest), "gdp+pure", None))
    eps, method, order = min(candidates, key=lambda c: c[0])
    return report(eps_a + eps, method + tag, order)
