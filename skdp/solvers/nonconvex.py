"""Solvers for possibly nonconvex smooth objectives: ``dp_lssgd``, ``rrpsgd``, ``dp_srm``.

All three are Poisson-subsampled noisy gradient methods. Per the library
decision on subsampled solvers (``../shared/algorithms/README.md``), every
step includes each row independently with probability ``q = b/n`` and divides
the sum of clipped per-example contributions by the **public** expected batch
size ``b``; the Gaussian noise on that mean has std ``z S / b``, where ``S`` is
the per-example contribution bound and the noise multiplier ``z`` is
calibrated by the shared RDP accountant for the replace-one Poisson pair
(``privacy_core.md`` section 4) over every step the schedule allows. The
papers' fixed-size batches without replacement (and their closed-form
constants, which the cards show are non-private outside their conditions) are
not offered. The L2 penalty, and any other data-independent regulariser, is
added outside the clipping.
"""

import math

import numpy as np

from ..privacy import PoissonGaussianEvent, gaussian_noise
from ._base import Solver, SolverResult, register
from .gradient import poisson_sample
from .sgd import _noise_multiplier

__all__ = ["DPLSSGD", "laplacian_smooth", "ls_gamma", "ls_beta"]


# ---------------------------------------------------------------------------------------
# Laplacian smoothing (seed004_nonconvex_lssgd_distributed.md, section D)
# ---------------------------------------------------------------------------------------
def _ls_eigenvalues(sigma, d):
    k = np.arange(d)
    return 1.0 + 2.0 * sigma - 2.0 * sigma * np.cos(2.0 * np.pi * k / d)


def laplacian_smooth(v, sigma, axis=0):
    """``A_sigma^{-1} v`` along ``axis``: ``A_sigma = I - sigma L``, ``L`` the periodic 1-D discrete Laplacian.

    ``A_sigma`` is circulant with eigenvalues ``1 + 2 sigma - 2 sigma cos(2 pi k/d)``
    (card D.3), so the solve is one real FFT pair, ``O(d log d)``. ``sigma = 0``
    returns ``v`` unchanged (DP-LSSGD is then DP-SGD exactly).
    """
    v = np.asarray(v, dtype=float)
    if sigma == 0 or v.shape[axis] <= 1:
        return v
    d = v.shape[axis]
    lam = _ls_eigenvalues(sigma, d)[: d // 2 + 1]
    shape = [1] * v.ndim
    shape[axis] = lam.size
    return np.fft.irfft(np.fft.rfft(v, axis=axis) / lam.reshape(shape), n=d, axis=axis)


def ls_gamma(sigma, d):
    """``(1/d) sum_i 1/lambda_i``, the variance factor of the smoothed noise (card D.3, Prop. 5.3.5)."""
    if sigma == 0:
        return 1.0
    w = (2 * sigma + 1 - math.sqrt(4 * sigma + 1)) / (2 * sigma)
    return (1 + w**d) / ((1 - w**d) * math.sqrt(4 * sigma + 1))


def ls_beta(sigma, d):
    """``(1/d) sum_i 1/lambda_i^2`` (card D.3, Prop. 5.3.8)."""
    if sigma == 0:
        return 1.0
    w = (2 * sigma + 1 - math.sqrt(4 * sigma + 1)) / (2 * sigma)
    xi = -math.sqrt(1 + 4 * sigma) / sigma
    num = 2 * w ** (2 * d + 1) - xi * w ** (2 * d) + 2 * xi * d * w**d - 2 * w + xi
    return num / (sigma**2 * xi**3 * (1 - w**d) ** 2)


# ---------------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------------
class _PoissonSolver(Solver):
    """Schedule, calibration and batch gradients shared by the Poisson-sampled solvers here."""

    losses = ("logistic", "multinomial", "squared")
    default_max_steps = 2000

    def batch_size(self, problem):
        b = problem.options.get("batch_size")
        b = int(math.ceil(math.sqrt(problem.n))) if b is None else int(b)
        if b < 1:
            raise ValueError(f"batch_size must be >= 1, got {b!r}.")
        return min(b, problem.n)

    def steps(self, problem, b):
        if problem.max_iter:
            return int(problem.max_iter)
        return int(min(self.default_max_steps, max(1, math.ceil(self.default_passes * problem.n / b))))

    @staticmethod
    def multiplier(problem, budget, q, T):
        return _noise_multiplier(float(q), int(T), budget.epsilon, budget.delta, budget.relation)

    @staticmethod
    def batch_mean(problem, w, rows, b):
        """Sum of the clipped per-example gradients over ``rows`` divided by the public ``b``."""
        if rows.size == 0:
            return np.zeros_like(w)
        return problem.mean_gradient(w, rows=rows, n_total=b)

    @staticmethod
    def penalty_gradient(problem, w):
        return problem.penalty.alpha * w

    def learning_rate(self, problem):
        eta = problem.options.get("learning_rate")
        if eta is not None:
            eta = float(eta)
            if not eta > 0:
                raise ValueError(f"learning_rate must be > 0, got {eta!r}.")
            return eta
        return 1.0 / (problem.smoothness + problem.penalty.alpha)


# ---------------------------------------------------------------------------------------
# dp_lssgd
# ---------------------------------------------------------------------------------------
@register
class DPLSSGD(_PoissonSolver):
    """``dp_lssgd``: DP-SGD with Laplacian smoothing of the noisy gradient.

    Card: ``seed004_nonconvex_lssgd_distributed.md`` section E (Alg. 5) with
    the Laplacian-smoothing operator of section D and the reviewer correction
    of E.4: the paper's closed-form noise is not used (it is non-private
    outside its lemma's conditions); the noise multiplier is calibrated by the
    accountant for Poisson batches (module docstring). Each step

    ``w <- w - eta_t A_sigma^{-1}(g + n)``,  ``g`` the clipped batch mean plus the
    regulariser's gradient, ``n ~ N(0, (z G / b)^2 I)``,

    adds the noise **before** smoothing, so smoothing is post-processing and
    privacy does not depend on ``ls_sigma`` (Remark 5.5.6's "stronger privacy"
    from smoothing is not implemented: it would need noise after smoothing).
    ``ls_sigma = 0`` is exactly DP-SGD. Smoothing runs along the feature axis
    of each output's coefficients; the intercept is not smoothed (card D.9).
    Per-example gradients are clipped to the estimator's bound ``G``.

    Defaults: ``b = ceil(sqrt(n))`` (expected), ``T = min(2000, 5 n / b)``
    (five passes), ``eta_t = eta / sqrt(t)`` with ``eta = 1/(beta + alpha)``,
    ``ls_sigma = 2`` (card E.6 suggestion), last iterate (``output="average"``
    returns the average of the iterates, as in Thms 5.3.4 / 5.3.7).

    ``solver_options``: ``batch_size``, ``learning_rate``, ``ls_sigma``, ``output``.
    """

    name = "dp_lssgd"
    card = "seed004_nonconvex_lssgd_distributed.md, sections D and E (Alg. 5), reviewer correction of E.4"
    source = "Wang 2021 (dissertation), ch. 5, Alg. 5 (DP-LSSGD)"
    summary = "DP-SGD with Laplacian smoothing of the noisy gradient (FFT), Poisson sampling, RDP-calibrated"
    defaults = "b = ceil(sqrt n), T = min(2000, 5n/b), eta_t = (1/(beta + alpha))/sqrt(t), ls_sigma = 2, last iterate"
    option_keys = {
        "batch_size": "expected Poisson batch size b",
        "learning_rate": "base step eta (eta_t = eta / sqrt(t))",
        "ls_sigma": "Laplacian smoothing constant (0 = DP-SGD)",
        "output": '"last" (Alg. 5) or "average"',
    }
    default_passes = 5

    @staticmethod
    def ls_sigma(problem):
        s = problem.options.get("ls_sigma", 2.0)
        s = float(s)
        if not (s >= 0 and math.isfinite(s)):
            raise ValueError(f"ls_sigma must be a finite number >= 0, got {s!r}.")
        return s

    @staticmethod
    def output(problem):
        out = problem.options.get("output", "last")
        if out not in ("last", "average"):
            raise ValueError(f"output must be 'last' or 'average', got {out!r}.")
        return out

    def plan(self, problem, budget):
        b = self.batch_size(problem)
        T = self.steps(problem, b)
        q = b / problem.n
        return [PoissonGaussianEvent(q, self.multiplier(problem, budget, q, T), T)]

    def smooth(self, problem, v, sigma):
        """``A_sigma^{-1}`` on the feature rows of ``v`` (not the intercept row)."""
        if sigma == 0:
            return v
        out = np.array(v, dtype=float, copy=True)
        rows = slice(None) if problem.intercept_index is None else slice(0, problem.intercept_index)
        out[rows] = laplacian_smooth(out[rows], sigma, axis=0)
        return out

    def solve(self, problem, budget, rng):
        n = problem.n
        sigma_ls, output = self.ls_sigma(problem), self.output(problem)
        b = self.batch_size(problem)
        T = self.steps(problem, b)
        q = b / n
        z = self.multiplier(problem, budget, q, T)
        std = z * problem.gradient_bound / b
        eta = self.learning_rate(problem)
        w = np.zeros(problem.coef_shape)
        avg = np.zeros_like(w)
        for t in range(1, T + 1):
            rows = poisson_sample(rng, n, q)
            g = self.batch_mean(problem, w, rows, b) + self.penalty_gradient(problem, w)
            g = g + gaussian_noise(rng, std, w.shape)  # noise first, then smoothing (card E.5)
            w = w - (eta / math.sqrt(t)) * self.smooth(problem, g, sigma_ls)
            avg += w
        coef = w if output == "last" else avg / T
        event = PoissonGaussianEvent(q, z, T)
        info = {"batch_size": b, "learning_rate": eta, "noise_multiplier": z, "ls_sigma": sigma_ls}
        return SolverResult(coef, T, [event], std, info)
