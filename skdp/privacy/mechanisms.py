"""Noise samplers. They draw only from the generator they are given.

Estimators pass the one generator of their fit (``skdp._random.fit_randomness``):
``random_state=None`` means a generator seeded with 128 bits of fresh OS
entropy for that fit (never numpy's global one), and an ``int`` gives
reproducible draws.

References: Chaudhuri, Monteleoni and Sarwate 2011, Alg. 1 (L2-Laplace
sampler, the pure-epsilon noise of Zhang et al. 2017, Alg. 1) and Bassily,
Guzman and Nandi 2021, section 3 (generalized Gaussian).
"""

import contextlib
import math
import threading
from dataclasses import dataclass

import numpy as np

__all__ = [
    "generalized_gaussian_noise", "gaussian_noise", "l2_laplace_noise", "laplace_noise", "report_noisy_max",
    "scaled_noise", "record_draws", "Draw",
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
    """

    kind: str
    scale: float
    size: int


@contextlib.contextmanager
def record_draws():
    """Record every noise draw made in this thread inside the block (for tests and audits).

    Yields the list the :class:`Draw` records are appended to, in the order
    drawn. The scale recorded is the one actually used (so a draw made under
    :func:`scaled_noise` shows its reduced scale). Off by default; when off the
    samplers only check one thread-local attribute.
    """
    records = []
    previous = getattr(_STATE, "records", None)
    _STATE.records = records
    try:
        yield records
    finally:
        _STATE.records = previous


def _record(kind, scale, size):
    records = getattr(_STATE, "records", None)
    if records is not None:
        records.append(Draw(kind, float(scale), int(np.prod(size))))


def _shape(size):
    return (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)


def gaussian_noise(rng, sigma, size):
    """Draw ``N(0, sigma^2 I)`` of the given shape."""
    shape = _shape(size)
    _record("gaussian", float(sigma) * _m(), shape)
    return rng.normal(0.0, 1.0, size=shape) * (float(sigma) * _m())


def laplace_noise(rng, scale, size):
    """Draw i.i.d. ``Laplace(0, scale)`` coordinates (needs an L1 sensitivity)."""
    _record("laplace", float(scale) * _m(), _shape(size))
    return rng.laplace(0.0, float(scale) * _m(), size=_shape(size))


def l2_laplace_noise(rng, scale, size):
    """Draw ``b`` with density proportional to ``exp(-||b||_2 / scale)``.

    ``||b|| ~ Gamma(shape=d, scale=scale)`` times a direction uniform on the
    sphere (Chaudhuri-Monteleoni-Sarwate 2011, Alg. 1). This is *not* i.i.d. Laplace:
    ``E||b|| = d scale`` and each coordinate has variance ``(d + 1) scale^2``.
    ``size`` may be a shape; ``d`` is the total number of entries.
    """
    shape = _shape(size)
    d = int(np.prod(shape))
    _record("l2_laplace", float(scale) * _m(), shape)
    direction = rng.normal(0.0, 1.0, size=d)
    norm = np.linalg.norm(direction)
    while norm == 0:  # pragma: no cover - probability zero
        direction = rng.normal(0.0, 1.0, size=d)
        norm = np.linalg.norm(direction)
    radius = rng.gamma(shape=d, scale=float(scale) * _m())
    return (radius * direction / norm).reshape(shape)


def report_noisy_max(rng, scores, scale):
    """Index of ``argmax(scores + Gumbel(scale))``: the exponential mechanism ``P ~ exp(score/scale)``."""
    scores = np.asarray(scores, dtype=float)
    _record("gumbel", float(scale) * _m(), (1,))
    return int(np.argmax(scores + rng.gumbel(0.0, float(scale) * _m(), size=scores.shape)))


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
    d = int(np.prod(shape))
    r = float(r)
    if r == 2.0:
        return gaussian_noise(rng, sigma, shape)
    _record("generalized_gaussian", float(sigma) * _m(), shape)
    while True:
        Y = rng.gamma(1.0 / r, 1.0, size=d) ** (1.0 / r) * rng.choice([-1.0, 1.0], size=d)
        top = np.max(np.abs(Y))
        if top > 0:
            break
    h = Y / top
    direction = h / np.linalg.norm(h, ord=r)
    radius = float(sigma) * _m() * math.sqrt(rng.chisquare(d))
    return (radius * direction).reshape(shape)
