"""Noise samplers. They draw only from the generator they are given.

Estimators pass the one generator of their fit (``skdp._random.fit_randomness``):
``random_state=None`` means a generator seeded with 128 bits of fresh OS
entropy for that fit (never numpy's global one), and an ``int`` gives
reproducible draws.

Sources: Chaudhuri, Monteleoni and Sarwate 2011, Alg. 1 (L2-Laplace
sampler, the pure-epsilon noise of Zhang et al. 2017, Alg. 1) and Bassily,
Guzman and Nandi 2021, section 3 (generalized Gaussian).

References
----------
.. [1] K. Chaudhuri, C. Monteleoni and A. D. Sarwate, "Differentially private empirical risk
   minimization", Journal of Machine Learning Research 12, 2011.
   <https://arxiv.org/abs/0912.0071>
.. [2] J. Zhang, K. Zheng, W. Mou and L. Wang, "Efficient private ERM for smooth objectives",
   IJCAI 2017. <https://arxiv.org/abs/1703.09947>
.. [3] R. Bassily, C. Guzmán and A. Nandi, "Non-Euclidean differentially private stochastic
   convex optimization", COLT 2021. <https://arxiv.org/abs/2103.01278>
"""

import contextlib
import math
import threading
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "generalized_gaussian_noise", "gaussian_noise", "gaussian_noise_steps", "GaussianNoiseSteps", "l2_laplace_noise",
    "laplace_noise", "report_noisy_max", "scaled_noise", "record_draws", "Draw",
]


_STATE = threading.local()


def _m():
    """Noise multiplier of this thread: 1 except inside :func:`scaled_noise` (audit positive controls)."""
    return getattr(_STATE, "multiplier", 1.0)


@contextlib.contextmanager
def scaled_noise(multiplier):
    """Multiply every noise scale drawn in this thread by ``multiplier`` (positive controls only).

    **Voids every privacy guarantee of what is fitted inside.** It exists so
    that :func:`skdp.audit.audit` can show that it detects an under-noised
    mechanism (``noise_multiplier=0.25``); the audit never returns the models
    it fits. Every sampler in this module honours it, and every noise in skdp
    is drawn here, so one switch under-noises any solver.
    """
    multiplier = float(multiplier)
    if not (multiplier > 0 and math.isfinite(multiplier)):
        raise ValueError(f"noise multiplier must be a positive finite number, got {multiplier!r}.")
    previous = _m()
    _STATE.multiplier = multiplier
    try:
        yield
    finally:
        _STATE.multiplier = previous


@dataclass(frozen=True)
class Draw:
    """One noise draw: its distribution, the scale actually used and how many coordinates it had.

    ``kind`` is ``"gaussian"`` (``scale`` = standard deviation), ``"laplace"``,
    ``"l2_laplace"`` (the scale of the norm's Gamma), ``"gumbel"`` (one
    report-noisy-max selection), ``"generalized_gaussian"`` or
    ``"discrete_gaussian"`` (``scale`` = standard deviation in the released units).

    ``audit`` is ``None`` unless recorded with ``record_draws(audit=True)``;
    then it is a dict with ``"noise"`` (the values drawn) and, once the noise
    is added to the value it protects, ``"query"`` (that noiseless value) and
    ``"released"`` (the sum); for a selection ``"query"`` holds the scores and
    ``"index"`` the selected one.
    """

    kind: str
    scale: float
    size: int
    audit: dict = field(default=None, compare=False, repr=False)


@contextlib.contextmanager
def record_draws(audit=False, replay=None):
    """Record every noise draw made in this thread inside the block (for tests and audits).

    Yields the list the :class:`Draw` records are appended to, in the order
    drawn. The scale recorded is the one actually used (so a draw made under
    :func:`scaled_noise` shows its reduced scale). Off by default; when off the
    samplers only check one thread-local attribute.

    ``audit=True`` (used by :func:`skdp.audit.audit_events`; it voids the
    guarantee of what is fitted inside) also keeps the values: every additive
    draw is returned as a thin array subclass whose first addition records the
    noiseless value it is added to (``Draw.audit["query"]``) and the sum,
    and every selection records its scores. ``replay`` (a list, one dict or
    ``None`` per draw, in draw order) makes draw ``t`` behave as in another
    fit: ``"released"`` is returned by its addition instead of the sum (the
    other fit's released value, so both fits share one history),
    ``"index"`` is the selection made, and ``"noise"`` replaces the values
    drawn. The generator is always advanced exactly as in a normal fit.
    """
    records = []
    previous = (getattr(_STATE, "records", None), getattr(_STATE, "audit", None))
    _STATE.records = records
    _STATE.audit = (list(replay or ()),) if audit else None
    try:
        yield records
    finally:
        _STATE.records, _STATE.audit = previous


def _record(kind, scale, size):
    records = getattr(_STATE, "records", None)
    if records is not None:
        mode = getattr(_STATE, "audit", None)
        draw = Draw(kind, float(scale), int(np.prod(size)), None if mode is None else {"index_in_fit": len(records)})
        records.append(draw)
        return draw
    return None


class _Traced(np.ndarray):
    """Audit mode only: noise that records the value it is first added to (and may return a replayed sum)."""

    _draw = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        draw = self._draw
        plain = tuple(x.view(np.ndarray) if isinstance(x, _Traced) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, _Traced) else x for x in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        if draw is None or ufunc is not np.add or method != "__call__" or len(inputs) != 2 \
                or "query" in draw.audit:
            return result
        other = plain[1] if inputs[0] is self else plain[0]
        draw.audit["query"] = np.array(np.broadcast_to(other, np.shape(result)), dtype=float)
        replayed = draw.audit.get("replay_released")
        if replayed is not None and np.shape(replayed) == np.shape(result):
            result[...] = replayed
        draw.audit["released"] = np.array(result, dtype=float)
        return result


def _out(draw, noise):
    """The noise a sampler returns: itself, or in audit mode the recorded / replayed / traced version."""
    if draw is None or draw.audit is None:
        return noise
    (replay,) = _STATE.audit
    t = draw.audit["index_in_fit"]
    entry = replay[t] if t < len(replay) and replay[t] is not None else {}
    if "noise" in entry:
        noise = np.array(entry["noise"], dtype=float).reshape(np.shape(noise))
    draw.audit["noise"] = np.array(noise, dtype=float)
    if "released" in entry:
        draw.audit["replay_released"] = np.asarray(entry["released"], dtype=float)
    traced = np.array(noise, dtype=float).view(_Traced)
    traced._draw = draw
    return traced


def _shape(size):
    return (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)


def gaussian_noise(rng, sigma, size):
    """Draw ``N(0, sigma^2 I)`` of the given shape."""
    shape = _shape(size)
    draw = _record("gaussian", float(sigma) * _m(), shape)
    return _out(draw, rng.normal(0.0, 1.0, size=shape) * (float(sigma) * _m()))


#: :func:`gaussian_noise_steps` draws about this many coordinates (or one step's, if more) per call of the generator
NOISE_CHUNK = 1 << 16


class GaussianNoiseSteps:
    """The Gaussian noise of up to ``steps`` releases of shape ``size``, each at the scale given when it is drawn.

    ``draw(sigma)`` returns ``N(0, sigma^2 I)``: the same law and the same
    record as :func:`gaussian_noise` (one :class:`Draw` per call, at the scale
    used, traced and replayed on its own in audit mode), but the standard
    normals come from one call of the generator per chunk of about
    :data:`NOISE_CHUNK` coordinates (a different use of the stream), drawn
    ahead of the releases and independent of everything else.
    """

    def __init__(self, rng, steps, size):
        self.rng, self.shape, self.left = rng, _shape(size), int(steps)
        self.chunk = max(1, NOISE_CHUNK // max(int(np.prod(self.shape)), 1))
        self.block, self.next = None, 0

    def draw(self, sigma):
        if self.block is None or self.next == len(self.block):
            if self.left < 1:
                raise RuntimeError("more Gaussian draws than the steps this stream was made for")
            k = min(self.chunk, self.left)
            self.block, self.next = self.rng.normal(0.0, 1.0, size=(k,) + self.shape), 0
            self.left -= k
        scale = float(sigma) * _m()
        draw = _record("gaussian", scale, self.shape)
        noise = self.block[self.next] * scale
        self.next += 1
        return _out(draw, noise)


def gaussian_noise_steps(rng, sigma, steps, size):
    """The noise of ``steps`` releases, ``N(0, sigma^2 I)`` of shape ``size`` each: an iterator, one array per step
    (:class:`GaussianNoiseSteps` at one scale)."""
    stream = GaussianNoiseSteps(rng, steps, size)
    for _ in range(int(steps)):
        yield stream.draw(sigma)


def laplace_noise(rng, scale, size):
    """Draw i.i.d. ``Laplace(0, scale)`` coordinates (needs an L1 sensitivity)."""
    draw = _record("laplace", float(scale) * _m(), _shape(size))
    return _out(draw, rng.laplace(0.0, float(scale) * _m(), size=_shape(size)))


def l2_laplace_noise(rng, scale, size):
    """Draw ``b`` with density proportional to ``exp(-||b||_2 / scale)``.

    ``||b|| ~ Gamma(shape=d, scale=scale)`` times a direction uniform on the
    sphere (Chaudhuri-Monteleoni-Sarwate 2011, Alg. 1). This is *not* i.i.d. Laplace:
    ``E||b|| = d scale`` and each coordinate has variance ``(d + 1) scale^2``.
    ``size`` may be a shape; ``d`` is the total number of entries.
    """
    shape = _shape(size)
    d = int(np.prod(shape))
    draw = _record("l2_laplace", float(scale) * _m(), shape)
    direction = rng.normal(0.0, 1.0, size=d)
    norm = np.linalg.norm(direction)
    while norm == 0:  # pragma: no cover - probability zero
        direction = rng.normal(0.0, 1.0, size=d)
        norm = np.linalg.norm(direction)
    radius = rng.gamma(shape=d, scale=float(scale) * _m())
    return _out(draw, (radius * direction / norm).reshape(shape))


def report_noisy_max(rng, scores, scale):
    """Index of ``argmax(scores + Gumbel(scale))``: the exponential mechanism ``P ~ exp(score/scale)``."""
    scores = np.asarray(scores, dtype=float)
    draw = _record("gumbel", float(scale) * _m(), (1,))
    gumbel = rng.gumbel(0.0, float(scale) * _m(), size=scores.shape)
    return _selected(draw, scores, gumbel, int(np.argmax(scores + gumbel)))


def _selected(draw, scores, noise, index):
    """The index a selection returns: ``index``, or in audit mode the replayed one (scores and noise recorded)."""
    if draw is None or draw.audit is None:
        return index
    (replay,) = _STATE.audit
    t = draw.audit["index_in_fit"]
    entry = replay[t] if t < len(replay) and replay[t] is not None else {}
    draw.audit.update(noise=noise, query=np.array(scores, dtype=float))
    index = int(entry["index"]) if "index" in entry else int(index)
    draw.audit["index"] = index
    return index


def generalized_gaussian_noise(rng, sigma, size, r=2.0):
    """Draw from the generalized Gaussian ``GG_r(0, sigma^2)``: density prop. to ``exp(-||x||_r^2 / (2 sigma^2))``.

    Exact polar sampler of the generalized Gaussian of Bassily-Guzman-Nandi 2021: a
    direction ``Y/||Y||_r`` with i.i.d. ``Y_i`` of density prop. to
    ``exp(-|y|^r)`` (``sign * Gamma(1/r)^(1/r)``) is the cone measure on the
    ``l_r`` sphere; the radius is an independent ``sigma * chi_d``. ``r = 2`` is
    exactly ``N(0, sigma^2 I)``. The ``l_r`` norm is computed after dividing by
    ``max |Y_i|`` so that large ``r`` does not overflow.
    """
    shape = _shape(size)
    r = float(r)
    if r == 2.0:
        return gaussian_noise(rng, sigma, shape)
    d = int(np.prod(shape))
    draw = _record("generalized_gaussian", float(sigma) * _m(), shape)
    while True:
        Y = rng.gamma(1.0 / r, 1.0, size=d) ** (1.0 / r) * rng.choice([-1.0, 1.0], size=d)
        top = np.max(np.abs(Y))
        if top > 0:
            break
    h = Y / top
    direction = h / np.linalg.norm(h, ord=r)
    radius = float(sigma) * _m() * math.sqrt(rng.chisquare(d))
    return _out(draw, (radius * direction).reshape(shape))
