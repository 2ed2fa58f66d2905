"""Floating-point-safe release: the exact discrete Gaussian on a power-of-two grid.

Textbook samplers add a floating-point Laplace or Gaussian draw to a
floating-point value; the set of doubles such a sum can take depends on the
value, and an observer of the low-order bits can tell neighbouring datasets
apart (Mironov 2012). The remedy is the discrete Gaussian of
Canonne-Kamath-Steinke 2020 (CKS20) on a grid.

:func:`secure_gaussian_release` avoids floating point where it matters:

1. the value is rounded to a public grid ``gamma Z^d``, ``gamma`` a power of
   two; rounding moves each coordinate by at most ``gamma/2``, so two
   neighbours' rounded values differ by at most ``Delta + gamma sqrt(d)`` in
   L2 (the **cost of rounding**, charged below: ``gamma`` is chosen so that it
   is at most 0.1% of ``Delta``);
2. integer noise from the discrete Gaussian ``N_Z(0, (sigma/gamma)^2)`` is
   added in grid units, sampled **exactly** with integer and rational
   arithmetic (CKS20, Algorithms 1-3: Bernoulli(exp(-gamma)), discrete
   Laplace, then rejection), from uniform integers drawn from the given
   generator;
3. the result, an integer times a power of two, is exactly representable as a
   double, so the output carries no information beyond the grid point.

Two implementations draw the same laws: the pure-Python reference samplers
(:func:`discrete_gaussian_reference`, one coordinate at a time with
:class:`fractions.Fraction`) and the vectorised ones used by every release
(:func:`discrete_gaussian`, :func:`discrete_laplace`,
:func:`bernoulli_exp_neg`): the same CKS20 algorithms over numpy int64
arrays (Python integers in object arrays where the rationals outgrow 64
bits), batched so that only rejected proposals are redrawn, with no
floating-point ``exp`` or ``log`` in any decision. The vectorised samplers
are much faster than the reference (their costs: :doc:`/user_guide/verifying`).

Privacy: the discrete Gaussian with integer-valued query of L2 sensitivity
``Delta_z`` and scale ``sigma_z`` is ``Delta_z^2 / (2 sigma_z^2)``-zCDP
(CKS20, Thm. 4; the zCDP-to-(epsilon, delta) conversion is CKS20 Cor. 13).
In grid units
``Delta_z = (Delta + gamma sqrt(d)) / gamma``, so ``sigma = (Delta + gamma
sqrt(d)) / sqrt(2 rho)`` gives ``rho``-zCDP, reported as
``ZCDPEvent(rho)``. The zCDP-to-(epsilon, delta) conversion is not tight
against the analytic continuous Gaussian (priced exactly), so the same target
needs somewhat more noise: the price of a release that is safe bit for bit
(:doc:`/user_guide/verifying` gives the measured cost).

References
----------
.. [1] I. Mironov, "On significance of the least significant bits for differential privacy", ACM
   CCS 2012.
.. [2] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
   privacy", NeurIPS 2020. <https://arxiv.org/abs/2004.00010>
.. [3] A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally utility-maximizing privacy
   mechanisms", STOC 2009.
.. [4] D. Durfee and R. Rogers, "Practical differentially private top-k selection with
   pay-what-you-get composition", NeurIPS 2019.
   <https://papers.nips.cc/paper/2019/hash/b139e104214a08ae3f2ebcce149cdf6e-Abstract.html>
"""

import math
from fractions import Fraction

import numpy as np

from .calibration import gumbel_scale
from .events import PureDPEvent, ZCDPEvent
from .mechanisms import _m, _out, _record, _selected, report_noisy_max

__all__ = ["bernoulli_exp_neg", "discrete_gaussian", "discrete_gaussian_reference", "discrete_laplace",
           "exponential_mechanism", "secure_gaussian_release", "secure_gaussian_sensitivity", "secure_grid",
           "secure_laplace_release", "secure_l1_grid", "secure_selection_grid", "secure_selection_plan", "select"]

_CHUNK = 32


def _uniform_below(rng, b):
    """Exact uniform integer in ``[0, b)`` (``b`` a Python int >= 1) by rejection on 32-bit chunks."""
    k = (b - 1).bit_length()
    if k == 0:
        return 0
    while True:
        x = 0
        for _ in range((k + _CHUNK - 1) // _CHUNK):
            x = (x << _CHUNK) | int(rng.randint(0, 1 << _CHUNK, dtype=np.int64))
        x >>= (-k) % _CHUNK
        if x < b:
            return x


def _bernoulli(rng, p):
    """Exact Bernoulli(p) for a rational ``p`` in [0, 1]."""
    return _uniform_below(rng, p.denominator) < p.numerator


def _bernoulli_exp_neg(rng, gamma):
    """Exact Bernoulli(exp(-gamma)) for a rational ``gamma >= 0`` (CKS20, Alg. 1)."""
    one = Fraction(1)
    while gamma > 1:
        if not _bernoulli_exp_neg(rng, one):
            return False
        gamma -= 1
    k = 1
    while _bernoulli(rng, gamma / k):
        k += 1
    return k % 2 == 1


def _discrete_laplace(rng, t):
    """Exact sample with ``P(y) proportional to exp(-|y|/t)``, ``t`` a positive integer (CKS20, Alg. 2)."""
    one = Fraction(1)
    while True:
        u = _uniform_below(rng, t)
        if not _bernoulli_exp_neg(rng, Fraction(u, t)):
            continue
        v = 0
        while _bernoulli_exp_neg(rng, one):
            v += 1
        x = u + t * v
        negative = _bernoulli(rng, Fraction(1, 2))
        if negative and x == 0:
            continue
        return -x if negative else x


def discrete_gaussian_reference(rng, sigma2, size):
    """Exact samples of ``N_Z(0, sigma2)``, one coordinate at a time in pure Python (the reference sampler).

    Slow (Python arithmetic on :class:`fractions.Fraction` per coordinate);
    :func:`discrete_gaussian` draws the same distribution vectorised.

    ``sigma2`` is a positive rational (a :class:`fractions.Fraction`, an int,
    or a float, taken exactly). CKS20 Alg. 3: discrete Laplace proposals with
    ``t = floor(sigma) + 1``, accepted with probability
    ``exp(-(|y| - sigma2/t)^2 / (2 sigma2))``. Returns an int64 array.
    """
    s2 = Fraction(sigma2)
    if s2 <= 0:
        raise ValueError(f"sigma2 must be positive, got {sigma2!r}.")
    t = math.isqrt(math.floor(s2)) + 1
    shift = s2 / t
    out = np.empty(int(np.prod(size)), dtype=np.int64)
    for i in range(out.size):
        while True:
            y = _discrete_laplace(rng, t)
            if _bernoulli_exp_neg(rng, (abs(y) - shift) ** 2 / (2 * s2)):
                out[i] = y
                break
    return out.reshape(size)


# ------------------------------------------------------------------------------------------
# vectorised exact samplers: the same algorithms over arrays, redrawing only what is rejected
# ------------------------------------------------------------------------------------------
#: bits of the fixed-point uniforms of the big-denominator Bernoulli trials
_B = 55
#: the largest ``K`` of CKS20 Alg. 1 decided in int64 (``K * 2^_B <= 2^62``); later trials finish in Python
_KMAX = 1 << (62 - _B)
#: Bernoulli trials of CKS20 Alg. 1 drawn per entry and round (the chain stops early with probability >= 1 - 1/6!)
_W = 6


def _first_failure(go):
    """Per row of the boolean matrix ``go``: the index of its first ``False``, or its width when none."""
    fail = ~go
    first = np.argmax(fail, axis=1)
    first[~fail.any(axis=1)] = go.shape[1]
    return first


def _chain(rng, n, trials):
    """CKS20 Alg. 1's chain for ``n`` entries: ``K`` (from 1) grows while Bernoulli(``x / K``) succeeds.

    ``trials(idx, Kmat)`` returns the boolean outcomes of independent
    Bernoulli(``x_i / K``) trials for the entries ``idx`` at the ``K`` of each
    cell of ``Kmat`` (``_W`` consecutive values per row). Returns the final
    ``K`` of every entry; the Bernoulli(exp(-x)) outcome is ``K`` odd.
    """
    K = np.ones(n, dtype=np.int64)
    idx = np.arange(n)
    steps = np.arange(_W, dtype=np.int64)
    while idx.size:
        go = trials(idx, K[idx, None] + steps)
        first = _first_failure(go)
        K[idx] += first
        idx = idx[first == _W]
    return K


#: ``20! / k!`` for ``k = 20, ..., 1`` (increasing): a uniform integer below ``20!`` is below ``20!/k!`` w.p. ``1/k!``
_EXP1_CUTS = np.array([math.factorial(20) // math.factorial(k) for k in range(20, 0, -1)], dtype=np.int64)


def _bernoulli_exp_minus_one(rng, n):
    """``n`` independent exact Bernoulli(exp(-1)) (CKS20 Alg. 1 with ``gamma = 1``): a boolean array.

    Alg. 1's chain of Bernoulli(1/K) trials (``K = 1, 2, ...``) has ``S >= k``
    successes with probability ``1/k!`` and returns ``S`` even. One uniform
    integer ``U`` below ``20!`` gives ``S`` exactly up to 20: ``S >= k`` iff
    ``U < 20!/k!``; ``U = 0`` (all 20 succeed) continues the chain in Python.
    """
    U = rng.randint(0, math.factorial(20), size=n, dtype=np.int64)
    S = len(_EXP1_CUTS) - np.searchsorted(_EXP1_CUTS, U, side="right")
    out = S % 2 == 0
    for i in np.flatnonzero(S == len(_EXP1_CUTS)):  # pragma: no cover - probability 1 / 20!
        K = len(_EXP1_CUTS) + 1
        while _bernoulli(rng, Fraction(1, K)):
            K += 1
        out[i] = K % 2 == 1
    return out


def _bernoulli_exp_neg_fraction(rng, r, den):
    """Exact Bernoulli(exp(-r/den)) for integer arrays ``0 <= r < den`` (object dtype for big ones).

    CKS20 Alg. 1 (:func:`_chain`), each Bernoulli(``x / K``) decided with
    integers only: ``F = floor(x 2^55)`` is computed exactly with Python
    integers once per entry, and a uniform ``U`` below ``2^55`` decides ``K (U
    + U') < x 2^55`` (``U'`` uniform in [0, 1), never drawn) whenever ``K U +
    K <= F`` (yes) or ``K U >= x 2^55`` (no); the rest (probability about ``K
    2^-55``) and any ``K > 128`` (probability below ``1/128!``) finish with the
    pure-Python exact Bernoulli of what is left, so every decision is exact.
    """
    n = len(r)
    if n == 0:
        return np.zeros(0, dtype=bool)
    r_obj, den_obj = np.asarray(r, dtype=object), np.asarray(den, dtype=object)
    if np.max(den_obj) < 2**40:  # floor(r 2^55 / den) by long division in int64: 22 + 22 + 11 bits
        rest, den64, F = r_obj.astype(np.int64), den_obj.astype(np.int64), np.zeros(n, dtype=np.int64)
        for bits in (22, 22, 11):
            rest = rest << bits
            F = (F << bits) | (rest // den64)
            rest = rest % den64
        zero = rest == 0
    else:
        scaled = r_obj * (1 << _B)
        f_obj = scaled // den_obj
        F = f_obj.astype(np.int64)
        zero = (scaled - f_obj * den_obj) == 0

    def trials(idx, Kmat):
        U = rng.randint(0, 1 << _B, size=Kmat.shape, dtype=np.int64)
        kU = np.minimum(Kmat, _KMAX) * U
        f = F[idx, None]
        go = kU + Kmat <= f
        no = (kU > f) | ((kU == f) & zero[idx, None])
        for a, b in zip(*np.nonzero(~(go | no) | (Kmat > _KMAX))):
            i, K = idx[a], int(Kmat[a, b])
            if K > _KMAX:  # pragma: no cover - probability below 1 / 128!
                go[a, b] = _bernoulli(rng, Fraction(int(r_obj[i]), int(den_obj[i]) * K))
            else:  # K U <= F < K U + K: decide on the exact rest of the interval
                go[a, b] = _bernoulli(rng, (Fraction(int(r_obj[i]) << _B, int(den_obj[i])) - int(kU[a, b])) / K)
        return go

    return _chain(rng, n, trials) % 2 == 1


def bernoulli_exp_neg(rng, num, den):
    """Exact Bernoulli(exp(-num/den)) for arrays of non-negative integers ``num`` and positive ``den``.

    Vectorised CKS20 Alg. 1 with integer and rational arithmetic only (no
    floating-point ``exp`` or ``log``): the integer part ``floor(num/den)``
    needs that many Bernoulli(exp(-1)) successes, the fractional part is one
    :func:`_bernoulli_exp_neg_fraction`. ``num`` and ``den`` may be int64 or
    object (Python int) arrays; ``den`` may be a scalar. Returns a boolean array.
    """
    num = np.asarray(num, dtype=object).ravel()
    den = np.broadcast_to(np.asarray(den, dtype=object), num.shape).ravel()
    if num.size and (np.min(num) < 0 or np.min(den) <= 0):
        raise ValueError("bernoulli_exp_neg needs num >= 0 and den > 0.")
    whole = num // den
    if num.size and np.max(whole) >= 2**62:
        raise ValueError("bernoulli_exp_neg: exp(-num/den) is below exp(-2^62); refusing to loop.")
    remaining = whole.astype(np.int64)
    alive = np.ones(num.size, dtype=bool)
    idx = np.flatnonzero(remaining > 0)
    steps = np.arange(_W)
    while idx.size:  # _W of the needed Bernoulli(exp(-1)) successes per entry and round
        go = _bernoulli_exp_minus_one(rng, idx.size * _W).reshape(idx.size, _W)
        ok = (go | (steps >= remaining[idx, None])).all(axis=1)
        alive[idx[~ok]] = False
        remaining[idx] -= _W
        idx = idx[ok & (remaining[idx] > 0)]
    idx = np.flatnonzero(alive)
    if idx.size:
        alive[idx] = _bernoulli_exp_neg_fraction(rng, num[idx] - whole[idx] * den[idx], den[idx])
    return alive


def _shape_of(size):
    return (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)


def _fill(rng, size, propose, surplus):
    """Fill an int64 array of ``size`` from batches of i.i.d. ``propose(rng, m) -> (values, accepted)``.

    Each round proposes ``surplus`` times the entries still missing (plus 8)
    and gives the accepted values, in order, to the missing entries; accepted
    values left over are discarded (whatever their value), so every entry is
    an independent draw of the accepted law.
    """
    shape = _shape_of(size)
    out = np.empty(int(np.prod(shape)), dtype=np.int64)
    done = 0
    while done < out.size:
        values, accepted = propose(rng, int(math.ceil((out.size - done) * surplus)) + 8)
        values = values[accepted][: out.size - done]
        out[done:done + values.size] = values
        done += values.size
    return out.reshape(shape)


def discrete_laplace(rng, scale, size):
    """Exact samples with ``P(y) proportional to exp(-|y| / scale)`` on the integers, vectorised.

    ``scale`` is a positive rational ``t/s`` (a :class:`fractions.Fraction`,
    an int or a float, taken exactly). CKS20 Alg. 2 over arrays: ``U``
    uniform below ``t`` kept with probability ``exp(-U/t)``, ``V`` the number
    of Bernoulli(exp(-1)) successes before the first failure, ``|y| =
    floor((U + t V) / s)`` with a fair sign, ``-0`` rejected; rejected
    proposals are replaced by new ones. Returns an int64 array of shape ``size``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy.discrete import discrete_laplace
    >>> discrete_laplace(np.random.RandomState(0), 3, 5)
    array([ 7,  1,  1, -5,  3])
    """
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale!r}.")
    t, s = scale.numerator, scale.denominator
    if t >= 2**40 or s >= 2**40:  # keeps U + t V in int64 (V is geometric with ratio 1/e)
        raise ValueError(f"scale {scale!r} is out of the sampler's range (numerator and denominator < 2^40).")
    return _fill(rng, size, lambda rng, m: _laplace_proposals(rng, m, t, s), 1.7 if s == 1 else 2.2)


def _laplace_proposals(rng, m, t, s):
    """``m`` proposals of CKS20 Alg. 2 and whether each is accepted."""
    U = rng.randint(0, t, size=m, dtype=np.int64)
    accepted = _bernoulli_exp_neg_fraction(rng, U, np.full(m, t, dtype=np.int64))
    keep = np.flatnonzero(accepted)
    V = np.zeros(keep.size, dtype=np.int64)
    idx = np.arange(keep.size)
    while idx.size:  # V: Bernoulli(exp(-1)) successes before the first failure, _W trials per round
        first = _first_failure(_bernoulli_exp_minus_one(rng, idx.size * _W).reshape(idx.size, _W))
        V[idx] += first
        idx = idx[first == _W]
    Y = (U[keep] + t * V) // s
    negative = rng.randint(0, 2, size=keep.size) == 1
    values = np.zeros(m, dtype=np.int64)
    values[keep] = np.where(negative, -Y, Y)
    accepted[keep[negative & (Y == 0)]] = False
    return values, accepted


def discrete_gaussian(rng, sigma2, size):
    """Exact samples of ``N_Z(0, sigma2)``: ``P(y) proportional to exp(-y^2 / (2 sigma2))`` on the integers.

    ``sigma2`` is a positive rational (a :class:`fractions.Fraction`, an int,
    or a float, taken exactly). CKS20 Alg. 3, vectorised: discrete Laplace
    proposals (:func:`discrete_laplace`, ``t = floor(sigma) + 1``), each
    accepted with probability ``exp(-(|y| - sigma2/t)^2 / (2 sigma2))`` by
    :func:`bernoulli_exp_neg` on the exact rational ``(|y| t q - p)^2 / (2 p
    q t^2)`` (``sigma2 = p/q``); rejected proposals are replaced by new ones.
    Same law as :func:`discrete_gaussian_reference`, one to two orders of
    magnitude faster. Returns an int64 array.

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction
    >>> from skdp.privacy.discrete import discrete_gaussian
    >>> discrete_gaussian(np.random.RandomState(0), Fraction(9, 4), 5)
    array([ 1,  2,  1, -1,  1])
    """
    s2 = Fraction(sigma2)
    if s2 <= 0:
        raise ValueError(f"sigma2 must be positive, got {sigma2!r}.")
    t = math.isqrt(math.floor(s2)) + 1
    p, q = s2.numerator, s2.denominator
    if t >= 2**40:
        raise ValueError(f"sigma2 {sigma2!r} is out of the sampler's range (sigma < 2^40).")
    den = 2 * p * q * t * t

    def propose(rng, m):  # the accepted discrete Laplace proposals, each accepted again with the Gaussian ratio
        y, accepted = _laplace_proposals(rng, m, t, 1)
        y = y[accepted]
        dev = np.abs(y).astype(object) * (q * t) - p
        return y, bernoulli_exp_neg(rng, dev * dev, den)

    return _fill(rng, size, propose, 2.6)


def secure_grid(sensitivity, d):
    """The public grid step: the largest power of two with ``gamma sqrt(d) <= sensitivity / 1000``."""
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be positive and finite, got {sensitivity!r}.")
    return 2.0 ** math.floor(math.log2(sensitivity / (1000.0 * math.sqrt(d))))


def secure_gaussian_release(rng, value, sensitivity, rho):
    """Release ``value`` (L2 sensitivity ``sensitivity``, replace-one) with ``rho``-zCDP, floating-point safe.

    Returns ``(released, event, sigma, gamma)``: the released array (grid
    points of step ``gamma``), ``ZCDPEvent(rho)``, and the noise standard
    deviation ``sigma`` in the value's units (the discrete Gaussian's scale
    parameter; its variance is within ``1e-12`` of ``sigma^2`` at these scales).
    """
    value = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(value)):
        raise ValueError("value must be finite.")
    if not (rho > 0 and math.isfinite(rho)):
        raise ValueError(f"rho must be positive and finite, got {rho!r}.")
    d = max(value.size, 1)
    gamma = secure_grid(sensitivity, d)
    sens = secure_gaussian_sensitivity(sensitivity, d)  # the rounding's cost
    sigma = sens / math.sqrt(2.0 * rho)
    units = value / gamma
    if value.size and np.max(np.abs(units)) >= 2.0**52:
        raise ValueError("value is too large for the release grid (|value| / gamma >= 2^52).")
    # sigma_z^2 rounded *up* to a multiple of 2^-20 (and past float error): more noise, never less
    s2 = (sigma / gamma) ** 2 * (1 + 1e-12) * _m() ** 2
    sigma2 = Fraction(math.ceil(s2 * 2**20), 2**20)
    draw = _record("discrete_gaussian", math.sqrt(float(sigma2)) * gamma, value.shape)
    # integers times a power of two: the sum below is exact, the released value a grid point
    noise = _out(draw, discrete_gaussian(rng, sigma2, value.shape) * gamma)
    released = np.rint(units) * gamma + noise  # audit mode: the rounded value is the query recorded
    return released, ZCDPEvent(float(rho)), sigma, gamma


def secure_gaussian_sensitivity(sensitivity, d):
    """The L2 sensitivity of the rounded value: ``sensitivity + gamma sqrt(d)``, ``gamma = secure_grid(...)``.

    Rounding to ``gamma Z^d`` moves each coordinate by at most ``gamma / 2``, so
    two neighbours' rounded values are at most ``gamma sqrt(d)`` further apart
    in L2 than the values themselves (replace-one, public ``n``, like ``sensitivity``).
    """
    return float(sensitivity) + secure_grid(sensitivity, d) * math.sqrt(d)


def secure_l1_grid(sensitivity, d):
    """The public grid step of an L1 release: the largest power of two with ``gamma d <= sensitivity / 1000``."""
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be positive and finite, got {sensitivity!r}.")
    return 2.0 ** math.floor(math.log2(sensitivity / (1000.0 * d)))


def _rational_up(x, bits=30):
    """A rational ``t/s >= x`` (``s`` a power of two) within a relative ``2^-bits`` of ``x > 0``."""
    k = max(0, bits - math.ceil(math.log2(x)))
    return Fraction(math.ceil(x * (1 + 1e-12) * 2**k), 2**k)


def secure_laplace_release(rng, value, sensitivity, epsilon):
    """Release ``value`` (L1 sensitivity ``sensitivity``, replace-one) with pure ``epsilon``-DP, floating-point safe.

    The geometric (discrete Laplace) mechanism on a grid (Ghosh, Roughgarden
    and Sundararajan 2009; sampler of CKS20, Alg. 2):

    1. ``value`` is rounded to the public grid ``gamma Z^d``
       (:func:`secure_l1_grid`: ``gamma d <= sensitivity / 1000``); each
       coordinate moves by at most ``gamma / 2``, so neighbours' rounded values
       differ by at most ``Delta_1 = sensitivity + gamma d`` in L1 (the cost of
       rounding, charged);
    2. i.i.d. integer noise with ``P(y) proportional to exp(-|y| / b)``, ``b =
       Delta_1 / (gamma epsilon)`` grid units (rounded up to a dyadic rational:
       more noise, never less), is added in grid units. For an integer-valued
       query with L1 sensitivity ``Delta_1 / gamma`` the ratio of output
       probabilities is at most ``exp(||q(D) - q(D')||_1 / b) <= exp(epsilon)``
       (the normalising constant does not depend on the integer shift), so the
       release is ``epsilon``-DP;
    3. the result, an integer times a power of two, is exactly a double.

    Returns ``(released, PureDPEvent(epsilon), scale, gamma)``, ``scale`` the
    Laplace scale ``Delta_1 / epsilon`` in the value's units. Recorded as a
    ``"discrete_laplace"`` draw (its scale in the value's units).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy.discrete import secure_laplace_release
    >>> out, event, scale, gamma = secure_laplace_release(np.random.RandomState(0), [0.25, -1.0], 0.1, 1.0)
    >>> event, gamma == 2.0**-15, bool(np.all(out / gamma == np.rint(out / gamma)))
    (PureDPEvent(epsilon=1.0, count=1), True, True)
    """
    value = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(value)):
        raise ValueError("value must be finite.")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be positive and finite, got {epsilon!r}.")
    d = max(value.size, 1)
    gamma = secure_l1_grid(sensitivity, d)
    scale = (float(sensitivity) + gamma * d) / float(epsilon)
    units = value / gamma
    if value.size and np.max(np.abs(units)) >= 2.0**52:
        raise ValueError("value is too large for the release grid (|value| / gamma >= 2^52).")
    b = _rational_up(scale / gamma * _m())
    draw = _record("discrete_laplace", float(b) * gamma, value.shape)
    noise = _out(draw, discrete_laplace(rng, b, value.shape) * gamma)
    released = np.rint(units) * gamma + noise
    return released, PureDPEvent(float(epsilon)), scale, gamma


def secure_selection_grid(sensitivity):
    """The public grid of :func:`exponential_mechanism`'s scores: the largest power of two ``<= sensitivity / 1000``.

    Rounded scores have sensitivity at most ``sensitivity + gamma``; plan the
    selection's scale with that (e.g. ``gumbel_scale(sensitivity + gamma, epsilon)``).
    """
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be positive and finite, got {sensitivity!r}.")
    return 2.0 ** math.floor(math.log2(sensitivity / 1000.0))


#: proposals decided per round of the exact exponential mechanism: the candidates' count, within these bounds
_PROPOSALS = (64, 4096)


def exponential_mechanism(rng, scores, scale, grid):
    """Index drawn exactly from ``P(i) proportional to exp(round(score_i) / scale)``: a floating-point-safe selection.

    The floating-point-free counterpart of :func:`skdp.privacy.report_noisy_max`
    (the Gumbel argmax draws the same exponential mechanism in floating
    point). The scores are rounded to the public grid ``grid Z`` (a power of
    two from :func:`secure_selection_grid`); rounding moves each by at most
    ``grid / 2``, so rounded scores have sensitivity ``s + grid`` when the
    scores have sensitivity ``s`` (replace-one, public ``n``). The law is
    sampled exactly by rejection: a candidate ``i`` uniform among the finite
    scores is accepted with probability ``exp(-k_i grid / scale)``, ``k_i``
    the (integer) number of grid steps of its rounded score below the
    largest, by :func:`bernoulli_exp_neg` on the exact rational
    ``k_i grid / scale``; the first accepted candidate is returned. The
    accepted law is exactly ``P(i) prop. to exp(-k_i grid / scale)``, the
    exponential mechanism on the rounded scores, which for score sensitivity
    ``Delta`` is ``2 Delta / scale``-bounded-range (Durfee and Rogers 2019),
    priced as :class:`~skdp.privacy.BoundedRangeEvent` like the Gumbel form;
    ties are drawn with equal probability. Scores of ``-inf`` (excluded
    candidates, public) are never chosen. Recorded as an ``"exponential"``
    draw of ``scale`` (in audit mode with its scores and index, like
    :func:`skdp.privacy.report_noisy_max`; it has no noise values).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy.discrete import exponential_mechanism, secure_selection_plan
    >>> scale, grid = secure_selection_plan(1.0, 2.0, secure=True)  # score sensitivity 1, epsilon 2
    >>> exponential_mechanism(np.random.RandomState(0), [0.0, 3.0, 1.0], scale, grid)
    1
    """
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if np.any(np.isnan(scores)) or np.any(scores == np.inf):
        raise ValueError("scores must be finite or -inf.")
    live = np.flatnonzero(np.isfinite(scores))
    if live.size == 0:
        raise ValueError("exponential_mechanism needs at least one finite score.")
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be positive and finite, got {scale!r}.")
    beta = float(scale) * _m()
    draw = _record("exponential", beta, (1,))
    units = scores[live] / float(grid)
    if np.max(np.abs(units)) >= 2.0**52:
        raise ValueError("scores are too large for the selection grid (|score| / grid >= 2^52).")
    steps = np.rint(units)
    gaps = (steps.max() - steps).astype(np.int64).astype(object)  # exact integers below 2^53
    ratio = Fraction(float(grid)) / Fraction(beta)  # floats are dyadic rationals: exact
    batch = int(np.clip(live.size, *_PROPOSALS))
    while True:
        proposals = rng.randint(0, live.size, size=batch)
        accepted = np.flatnonzero(bernoulli_exp_neg(rng, gaps[proposals] * ratio.numerator, ratio.denominator))
        if accepted.size:  # audit mode: the scores are recorded and a replayed index returned
            return _selected(draw, scores, np.zeros(0), int(live[proposals[accepted[0]]]))


def secure_selection_plan(sensitivity, epsilon, secure):
    """``(scale, grid)`` of an ``epsilon``-bounded-range selection with score sensitivity ``sensitivity``.

    Default (``secure`` false): the Gumbel scale ``2 sensitivity / epsilon``
    and no grid (:func:`skdp.privacy.report_noisy_max`). With ``secure``: the
    scores are rounded to a power-of-two grid (at most 0.1% of the
    sensitivity), whose cost is charged, ``scale = 2 (sensitivity + grid) /
    epsilon``, and :func:`select` draws the exact exponential mechanism
    (:func:`exponential_mechanism`). Either way the
    selection is ``epsilon``-bounded-range, ``BoundedRangeEvent(epsilon)``.
    """
    if not secure:
        return gumbel_scale(sensitivity, epsilon), None
    grid = secure_selection_grid(sensitivity)
    return gumbel_scale(float(sensitivity) + grid, epsilon), grid


def select(rng, scores, scale, grid=None):
    """The selection :func:`secure_selection_plan` planned: Gumbel report-noisy-max, or with a grid the exact one
    (:func:`exponential_mechanism`)."""
    if grid is None:
        return report_noisy_max(rng, scores, scale)
    return exponential_mechanism(rng, scores, scale, grid)
