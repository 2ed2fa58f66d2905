"""Calibration: the accountant inverted, the noise a release needs for a target ``(epsilon, delta)``.

Every noise scale in skdp comes from here or from :func:`calibrate` run on
the events of a plan: closed forms where the accountant's price has one
(Gaussian releases composed by Gaussian DP, Laplace), else a search on
:func:`~skdp.privacy.accounting.price` itself, so the returned parameter is
priced at or below the target by the same computation that reports the fit.
"""

import math
from numbers import Real

import numpy as np
from scipy import optimize

from ..exceptions import PrivacyAccountingError
from .accounting import _price_cached, gdp_epsilon, gdp_mu, price, supports, zcdp_rho
from .events import BoundedRangeEvent

__all__ = ["calibrate", "calibrate_gaussian", "calibrate_bounded_range", "generalized_gaussian_sigma",
           "gumbel_scale", "pure_noise_scale", "weight_coordinate_scale"]


def calibrate_gaussian(sum_squared_sensitivity, epsilon, delta):
    """Common sigma for Gaussian releases with ``sum_t count_t Delta_t^2 = sum_squared_sensitivity``.

    Closed form (Dong-Roth-Su 2022, Cor. 3.3): ``sigma = sqrt(sum count Delta^2) / mu*``,
    where ``mu*`` is the largest mu-GDP meeting (epsilon, delta). This is the exact
    inverse of :func:`price` on those events.

    Examples
    --------
    >>> round(calibrate_gaussian(100 * 0.002**2, 1.0, 1e-5), 10)   # T = 100, Delta = 2/1000
    0.0746126327
    """
    if delta <= 0:
        raise ValueError("Gaussian noise cannot give delta = 0; use a pure-epsilon mechanism.")
    mu = gdp_mu(float(epsilon), float(delta))
    root = math.sqrt(sum_squared_sensitivity)
    sigma = root / mu
    # Make sure the accountant itself (root-finding included) prices it at <= epsilon.
    while root > 0 and gdp_epsilon(root / sigma, delta) > epsilon:
        sigma *= 1 + 1e-12
    return sigma


def pure_noise_scale(sensitivity, epsilon):
    """Scale of a single Laplace / L2-Laplace release: ``sensitivity / epsilon``.

    No search is needed (Dwork-Roth 2014, Thm 3.6; Chaudhuri-Monteleoni-Sarwate 2011
    for the L2 version); the event it prices to exactly ``epsilon`` is
    ``L2LaplaceEvent(sensitivity, scale)``.
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    return float(sensitivity) / float(epsilon)


def weight_coordinate_scale(noise_scale, sensitivity, row_norm, weight_step, gaussian=True):
    """Noise scale of one more coordinate, affine in the rows' weights, that a weighted release carries for free.

    Setting: a release ``q(D) = sum_i w_i v_i`` plus noise of scale
    ``noise_scale`` (Gaussian std ``sigma``, or L2-Laplace scale ``b`` when
    ``gaussian=False``), where row ``i`` holds a private weight ``w_i`` in
    ``[0, W]`` and a vector with ``||w_i v_i|| <= row_norm``, and ``q`` has L2
    sensitivity ``sensitivity`` (``S``) under **replace-one** neighbours with
    public ``n`` (both the vector and the weight of the row may change). The
    extra coordinate is ``g(D) = sum_i (a + c w_i)`` (e.g. a total weight),
    released with independent noise of the returned scale; ``weight_step =
    |c| W`` is the most one row moves it.

    Returns ``sigma weight_step / sqrt(S^2 - row_norm^2)`` (Gaussian) or
    ``b weight_step / (S - row_norm)`` (L2-Laplace; a Laplace coordinate).
    With it the pair ``(q + noise, g + noise')`` is priced exactly as the
    release of ``q`` alone, ``GaussianEvent(S, sigma)`` or
    ``L2LaplaceEvent(S, b)``. Proof: for a row changing from ``(w, v)`` to
    ``(w', v')``, the Gaussian pair's squared sensitivity after rescaling the
    coordinate by ``sigma / sigma'`` is ``||w v - w' v'||^2 + (sigma c /
    sigma')^2 (w - w')^2``, and the L2-Laplace pair's privacy loss is at most
    ``||w v - w' v'|| / b + |c| |w - w'| / b'`` (triangle inequality on the
    two independent densities). Both are convex in ``(w, w')``, so their
    maximum over ``[0, W]^2`` is at a vertex: ``(0, 0)`` gives 0, ``w = w' =
    W`` at most ``S^2`` (``S / b``), as the release of ``q`` alone, and ``w =
    W, w' = 0`` (or the reverse) at most ``row_norm^2 + (sigma weight_step /
    sigma')^2`` (``row_norm / b + weight_step / b'``), which the returned scale
    makes equal to ``S^2`` (``S / b``). So the Gaussian pair is the Gaussian
    mechanism of sensitivity ``S`` at std ``sigma``, and the L2-Laplace pair is
    ``S / b``-DP. Needs ``S > row_norm``.
    """
    values = {"noise_scale": noise_scale, "sensitivity": sensitivity, "row_norm": row_norm,
              "weight_step": weight_step}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite non-negative number, got {value!r}.")
    S, r, step = float(sensitivity), float(row_norm), float(weight_step)
    if not float(noise_scale) > 0:
        raise ValueError(f"noise_scale must be positive, got {noise_scale!r}.")
    if not S > r:
        raise ValueError(f"sensitivity must exceed row_norm (the pair's worst case is a row of weight W "
                         f"against one of weight 0), got sensitivity={sensitivity!r}, row_norm={row_norm!r}.")
    if gaussian:
        return float(noise_scale) * step / math.sqrt(S * S - r * r)
    return float(noise_scale) * step / (S - r)


def gumbel_scale(sensitivity, epsilon):
    """Gumbel scale ``beta = 2 s / epsilon`` for epsilon-bounded-range report-noisy-max.

    The argmax of ``u + Gumbel(beta)`` is the exponential mechanism
    ``P(v) ~ exp(u_v / beta)``, which is ``2s/beta``-BR for score sensitivity ``s``
    (Durfee-Rogers 2019); priced as ``BoundedRangeEvent(epsilon)``.
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    return 2.0 * float(sensitivity) / float(epsilon)


def calibrate_bounded_range(count, epsilon, delta, relation="replace_one"):
    """Largest per-selection ``eps0`` with ``price(count x BoundedRangeEvent(eps0)) <= (epsilon, delta)``.

    The exponential mechanism / Gumbel report-noisy-max is ``eps0``-bounded-range,
    hence ``eps0^2/8``-zCDP (Cesar-Rogers 2021), the calibration skdp uses instead
    of the Laplace noise and advanced composition of Bassily-Guzman-Nandi 2021,
    Alg. 2 (see :doc:`/papers/bassily_guzman_nandi2021`); the accountant prices the
    composition by the best of zCDP, RDP and basic composition, and this
    inverts it. Used by every Frank-Wolfe solver.
    """
    p, _ = calibrate(lambda q: [BoundedRangeEvent(1.0 / q, int(count))], epsilon, delta,
                     relation=relation, initial=max(1.0, count / float(epsilon)))
    return 1.0 / p


def generalized_gaussian_sigma(sensitivity, kappa, epsilon, delta):
    """Scale ``sigma`` of the generalized Gaussian mechanism for ``rho*(epsilon, delta)``-zCDP.

    Bassily-Guzman-Nandi 2021, Cor. 3.3: GG noise ``exp(-||x||_+^2 / (2 sigma^2))``
    on a query whose dual-norm sensitivity is ``s`` in a ``kappa``-regular dual
    space is ``kappa s^2 / (2 sigma^2)``-zCDP, so
    ``sigma = s sqrt(kappa / (2 rho*))`` with ``rho*`` the largest zCDP level the
    accountant converts to at most ``(epsilon, delta)`` (:func:`zcdp_rho`, the
    tight CKS20 conversion rather than the paper's simpler one; never the naive
    ``s sqrt(2 kappa ln(1/delta))/epsilon``, which is too small). Priced as
    ``ZCDPEvent(rho*)``. For ``kappa = 1`` the mechanism is Gaussian.
    """
    if not delta > 0:
        raise ValueError("The generalized Gaussian mechanism needs delta > 0.")
    rho = zcdp_rho(float(epsilon), float(delta))
    return float(sensitivity) * math.sqrt(float(kappa) / (2.0 * rho)), rho


def calibrate(make_events, epsilon, delta, *, relation="replace_one", initial=1.0, rtol=1e-5, max_steps=400,
              bracket=None, xtol=1e-13):
    """Smallest noise parameter ``p`` with ``price(make_events(p), delta).epsilon <= epsilon``.

    ``make_events(p)`` must describe mechanisms whose privacy loss does not
    increase as ``p`` grows (``p`` a noise std, noise multiplier or Gumbel
    scale); :doc:`/user_guide/accounting` explains why all the events here are.
    The price is then non-increasing and continuous in ``p`` (a minimum over
    orders and bounds of continuous monotone curves), so:

    1. bracket ``[lo, hi]`` by factors of 4 from ``initial`` with
       ``price(hi) <= epsilon < price(lo)``;
    2. find the root in ``log p`` with Brent's method to ``1e-12`` relative (on the
       fast shared-grid curve for Poisson-subsampled events, see :func:`_rdp_epsilon`);
    3. step up to the private side with the reported :func:`price` itself: the returned
       ``p`` always satisfies the target by the same computation that prices the fit,
       and, where the price strictly decreases, ``p (1 - 1e-9)`` does not.

    Parameters
    ----------
    rtol : float, default=1e-5
        Accepted relative distance above the smallest feasible ``p``; an upper
        bound only (the root is located to about 1e-12 whatever ``rtol`` is).
    bracket : (float, float) or None, default=None
        ``(lo, hi)`` believed to hold the root (``hi`` feasible, ``lo`` not):
        step 1 is skipped when the prices confirm it, else it starts from the
        end that failed.
    xtol : float, default=1e-13
        Width in ``log p`` to which step 2 locates the root (step 3 makes any
        width feasible; a wider one spends a little less than ``epsilon``).

    Returns
    -------
    param : float
    report : PrivacyReport
        The price at ``param``.
    """
    epsilon = float(epsilon)
    memo = {}

    def events_of(p):
        if p not in memo:
            evs = tuple(make_events(p))
            for ev in evs:
                if not supports(ev):
                    raise PrivacyAccountingError(f"The accountant cannot price {ev!r}; refusing to guess.")
            memo[p] = evs
        return memo[p]

    def search_eps(p):  # the fast pricing: the same function up to ~1e-12, used to locate the root
        return _price_cached(events_of(p), delta, relation, False).budget.epsilon

    def exact(p):
        return price(events_of(p), delta, relation)

    if bracket is not None:
        lo, hi = float(bracket[0]), float(bracket[1])
        e_hi = search_eps(hi)
        if e_hi <= epsilon:
            e_lo = search_eps(lo)
            if e_lo > epsilon:
                return _private_side(exact, _root_in(search_eps, lo, hi, e_hi, epsilon, xtol), epsilon)
            initial = lo
        else:
            initial = hi
    hi = float(initial)
    e_hi = search_eps(hi)
    steps = 0
    while e_hi > epsilon:
        hi *= 4.0
        e_hi = search_eps(hi)
        steps += 1
        if steps > max_steps:
            raise PrivacyAccountingError("Could not find enough noise to meet the privacy target.")
    lo = hi / 4.0
    e_lo = search_eps(lo)
    while e_lo <= epsilon:
        hi, e_hi = lo, e_lo
        lo = lo / 4.0
        e_lo = search_eps(lo)
        steps += 1
        if steps > max_steps:
            return _private_side(exact, hi, epsilon)  # essentially no noise is needed
    return _private_side(exact, _root_in(search_eps, lo, hi, e_hi, epsilon, xtol), epsilon)


def _root_in(search_eps, lo, hi, e_hi, epsilon, xtol):
    """The ``p`` in ``[lo, hi]`` where ``search_eps`` crosses ``epsilon`` (``hi`` feasible), by Brent's method in ``log p``."""
    if e_hi == epsilon:
        return hi
    t_lo, t_hi = math.log(lo), math.log(hi)

    def g(t):  # the bracket's ends are the points already priced (exp(log(p)) may differ from p)
        p = lo if t == t_lo else hi if t == t_hi else math.exp(t)
        return search_eps(p) - epsilon

    t = optimize.brentq(g, t_lo, t_hi, xtol=xtol, rtol=4 * np.finfo(float).eps, maxiter=200)
    return lo if t == t_lo else hi if t == t_hi else min(max(math.exp(t), lo), hi)


def _private_side(exact, p, epsilon, max_tries=60):
    """Smallest ``p * (1 + s)``, ``s`` in ``0, 1e-12, 4e-12, ...``, that the reported price puts at ``<= epsilon``."""
    rep = exact(p)
    step = 1e-12
    tries = 0
    while rep.budget.epsilon > epsilon:
        tries += 1
        if tries > max_tries:  # pragma: no cover - the price is monotone in p
            raise PrivacyAccountingError("Calibration could not reach the privacy target.")
        p = p * (1.0 + step)
        step *= 4.0
        rep = exact(p)
    return p, rep
