"""Solvers for possibly nonconvex smooth objectives: ``dp_lssgd``, ``rrpsgd``, ``dp_srm``.

All three are Poisson-subsampled noisy gradient methods. Because the
accountant prices Poisson sampling (and nothing looser), every
step includes each row independently with probability ``q = b/n`` and divides
the sum of clipped per-example contributions by the **public** expected batch
size ``b``; the Gaussian noise on that mean has std ``z S / b``, where ``S`` is
the per-example contribution bound and the noise multiplier ``z`` is
calibrated by the shared RDP accountant for the replace-one Poisson pair
(:doc:`/user_guide/accounting`) over every step the schedule allows. The
papers' fixed-size batches without replacement (and their closed-form
constants, which are non-private outside the conditions of the lemmas they
rest on; see :doc:`/papers/wang2021` and :doc:`/papers/zhang_zheng_mou_wang2017`) are
not offered. The L2 penalty, and any other data-independent regulariser, is
added outside the clipping.

References
----------
.. [1] L. Wang, "Towards efficient and effective privacy-preserving machine learning", PhD
   dissertation, University of California, Los Angeles, 2021.
   <https://escholarship.org/uc/item/3t58b68j>
.. [2] J. Zhang, K. Zheng, W. Mou and L. Wang, "Efficient private ERM for smooth objectives",
   IJCAI 2017. <https://arxiv.org/abs/1703.09947>
.. [3] S. Ghadimi and G. Lan, "Stochastic first- and zeroth-order methods for nonconvex
   stochastic programming", SIAM Journal on Optimization 23(4), 2013.
.. [4] I. Mironov, K. Talwar and L. Zhang, "Rényi differential privacy of the sampled Gaussian
   mechanism", arXiv preprint, 2019. <https://arxiv.org/abs/1908.10530>
"""

import math
from functools import lru_cache

import numpy as np

from ..losses import clip_derivatives, take_rows, weigh
from ..privacy import PoissonGaussianEvent, calibrate, gaussian_noise, gaussian_noise_steps
from ._base import Solver, SolverPlan, SolverResult, batch_rows, register, report_rows
from .gradient import poisson_batches, poisson_sample
from .sgd import _noise_multiplier

__all__ = ["DPLSSGD", "DPSRM", "RRPSGD", "laplacian_smooth", "ls_gamma", "ls_beta"]


# ---------------------------------------------------------------------------------------
# Laplacian smoothing (Wang 2021, dissertation, ch. 5, eq. 5.2.3)
# ---------------------------------------------------------------------------------------
def _ls_eigenvalues(sigma, d):
    k = np.arange(d)
    return 1.0 + 2.0 * sigma - 2.0 * sigma * np.cos(2.0 * np.pi * k / d)


def laplacian_smooth(v, sigma, axis=0):
    """``A_sigma^{-1} v`` along ``axis``: ``A_sigma = I - sigma L``, ``L`` the periodic 1-D discrete Laplacian.

    ``A_sigma`` is circulant with eigenvalues ``1 + 2 sigma - 2 sigma cos(2 pi k/d)``
    (periodic boundary, Wang 2021, eq. 5.2.3), so the solve is one real FFT pair, ``O(d log d)``. ``sigma = 0``
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


#: up to this many smoothed rows, ``A_sigma^{-1}`` is applied as a dense matrix built once (by the FFT, from the
#: identity): one small product per step instead of an FFT pair (same values up to summation order)
DENSE_SMOOTHING_MAX = 256


@lru_cache(maxsize=32)
def _smoothing_matrix(sigma, d):
    """``A_sigma^{-1}`` for ``d`` rows as a read-only dense array (its columns smoothed by :func:`laplacian_smooth`)."""
    M = laplacian_smooth(np.eye(d), sigma, axis=0)
    M.setflags(write=False)
    return M


def ls_gamma(sigma, d):
    """``(1/d) sum_i 1/lambda_i``, the variance factor of the smoothed noise (Wang 2021, Prop. 5.3.5)."""
    if sigma == 0:
        return 1.0
    w = (2 * sigma + 1 - math.sqrt(4 * sigma + 1)) / (2 * sigma)
    return (1 + w**d) / ((1 - w**d) * math.sqrt(4 * sigma + 1))


def ls_beta(sigma, d):
    """``(1/d) sum_i 1/lambda_i^2`` (Wang 2021, Prop. 5.3.8)."""
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

    default_max_steps = 2000
    explicit_penalty = True
    release_ignores_penalty = True
    secure_noise_refusal = ("its Poisson-subsampled Gaussian steps are priced by the tight RDP of the subsampled "
                            "continuous Gaussian (Mironov, Talwar, Zhang 2019), which the accountant does not "
                            "extend to the discrete Gaussian; use solver='dp_gd' for floating-point-safe gradients")
    #: k regression targets: one (p, k) gradient (and difference) per example, clipped jointly (Frobenius)
    multi_output = True

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

    def make_plan(self, problem, budget):
        """``T`` Poisson-sampled Gaussian steps of expected batch ``b``: std ``z G / b`` on the batch mean."""
        b = self.batch_size(problem)
        T = self.steps(problem, b)
        q = b / problem.n
        z = self.multiplier(problem, budget, q, T)
        std = z * problem.gradient_bound / b
        return SolverPlan((PoissonGaussianEvent(q, z, T),), std, {"b": b, "T": T, "q": q, "z": z, "std": std})

    @staticmethod
    def batch_mean(problem, w, rows, b):
        """Sum of the clipped per-example gradients over ``rows`` divided by the public ``b``."""
        if rows.size == 0:
            return np.zeros_like(w)
        return problem.batch_gradient(w, rows, b)

    @staticmethod
    def penalty_gradient(problem, w):
        return problem.penalty.gradient(w)

    def learning_rate(self, problem):
        eta = problem.options.get("learning_rate")
        if eta is not None:
            eta = float(eta)
            if not eta > 0:
                raise ValueError(f"learning_rate must be > 0, got {eta!r}.")
            return eta
        return 1.0 / (problem.smoothness + problem.penalty.smoothness)


# ---------------------------------------------------------------------------------------
# dp_lssgd
# ---------------------------------------------------------------------------------------
@register
class DPLSSGD(_PoissonSolver):
    """``dp_lssgd``: DP-SGD with Laplacian smoothing of the noisy gradient.

    Wang 2021 (dissertation), ch. 5, Alg. 5, with the Laplacian-smoothing
    operator of eq. 5.2.3. The closed-form noise of Thm 5.3.2 is not used: it
    is non-private outside the conditions of Lemma 5.5.3 (e.g. ``n = 10^4``,
    ``b = 10``, ``T = 100`` at a target of ``epsilon = 1`` is priced at
    ``epsilon ~ 2860``; see :doc:`/papers/wang2021`); the noise multiplier is
    calibrated by the accountant for Poisson batches (module docstring). Each step

    ``w <- w - eta_t A_sigma^{-1}(g + n)``,  ``g`` the clipped batch mean plus the
    regulariser's gradient, ``n ~ N(0, (z G / b)^2 I)``,

    adds the noise **before** smoothing, so smoothing is post-processing and
    privacy does not depend on ``ls_sigma`` (Remark 5.5.6's "stronger privacy"
    from smoothing is not implemented: it would need noise after smoothing).
    ``ls_sigma = 0`` is exactly DP-SGD. Smoothing runs along the feature axis
    of each output's coefficients (the dissertation does not say how to
    flatten multi-output parameters); the intercept is not smoothed.
    Per-example gradients are clipped to the estimator's bound ``G``.

    Defaults: ``b = ceil(sqrt(n))`` (expected), ``T = min(2000, 5 n / b)``
    (five passes), ``eta_t = eta / sqrt(t)`` with ``eta = 1/(beta + alpha)``,
    ``ls_sigma = 2`` (the middle of the experiments' grid {1, 2, 3}, Sec. 5.4.1),
    last iterate (``output="average"``
    returns the average of the iterates, as in Thms 5.3.4 / 5.3.7).

    ``solver_options``: ``batch_size``, ``learning_rate``, ``ls_sigma``, ``output``.
    """

    name = "dp_lssgd"
    card = "Alg. 5 on Poisson batches, noise calibrated by the accountant (not Thm 5.3.2), noise before smoothing"
    reference = "doc/papers/wang2021.rst"
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

    def smooth(self, problem, v, sigma):
        """``A_sigma^{-1}`` on the feature rows of ``v`` (not the intercept row)."""
        if sigma == 0:
            return v
        out = np.array(v, dtype=float, copy=True)
        rows = slice(None) if problem.intercept_index is None else slice(0, problem.intercept_index)
        k = out[rows].shape[0]
        if 1 < k <= DENSE_SMOOTHING_MAX:
            out[rows] = _smoothing_matrix(float(sigma), k) @ out[rows]
        else:
            out[rows] = laplacian_smooth(out[rows], sigma, axis=0)
        return out

    def run(self, problem, plan, rng):
        n = problem.n
        sigma_ls, output = self.ls_sigma(problem), self.output(problem)
        b, T, q, z, std = (plan.settings[k] for k in ("b", "T", "q", "z", "std"))
        eta = self.learning_rate(problem)
        w = np.zeros(problem.coef_shape)
        avg = np.zeros_like(w)
        steps = zip(poisson_batches(rng, n, q, T, problem), gaussian_noise_steps(rng, std, T, w.shape))
        for t, (rows, noise) in enumerate(steps, start=1):
            g = self.batch_mean(problem, w, rows, b) + self.penalty_gradient(problem, w)
            g = g + noise  # noise first, then smoothing (post-processing)
            w = w - (eta / math.sqrt(t)) * self.smooth(problem, g, sigma_ls)
            avg += w
        coef = w if output == "last" else avg / T
        info = {"batch_size": b, "learning_rate": eta, "noise_multiplier": z, "ls_sigma": sigma_ls}
        return SolverResult(coef, T, info)


# ---------------------------------------------------------------------------------------
# rrpsgd
# ---------------------------------------------------------------------------------------
@register
class RRPSGD(_PoissonSolver):
    """``rrpsgd``: random-round private SGD; returns the iterate after a random number of rounds.

    Zhang, Zheng, Mou and Wang 2017, Alg. 2, with the noise calibrated by the
    accountant instead of the paper's closed form, on Poisson batches (see
    :doc:`/papers/zhang_zheng_mou_wang2017`): each round adds Gaussian noise to
    the clipped mean gradient of a **Poisson** batch (expected size ``b``;
    ``b = 1`` is the paper's one example per round) and steps
    ``w <- w - eta (g + z)``. The number of rounds ``R`` is drawn before the
    data is touched, uniformly from ``{1, ..., N}`` (the paper's distribution
    ``P``, uniform for a constant step), and ``w_R`` is returned: neither the last
    iterate of ``N`` nor an average. Privacy is counted over all ``N`` rounds
    whatever ``R`` turns out to be (``w_R`` is post-processing of the first
    ``R <= N`` releases), so ``privacy_spent_`` does not depend on ``R``. The
    paper's closed-form noise (valid only for epsilon <= 1 and one-of-n
    sampling, which the accountant does not price) is not offered.

    Defaults: ``b = ceil(sqrt(n))``; ``N = min(2000, ceil(n^2 / b))`` (the
    paper's ``n^2`` single-example rounds read ``n^2`` examples; ``N`` rounds of
    ``b`` read as many, capped for run time; ``max_iter`` sets ``N``); constant
    step ``eta = min(1/beta, 1/(sigma_G sqrt(N)))`` with
    ``sigma_G^2 = G^2 + p s^2`` the second-moment bound of the noisy gradient
    (the constant-step rule of Ghadimi and Lan 2013 behind the paper's Thm 5,
    with ``s`` the noise std and ``p`` the dimension).

    ``solver_options``: ``batch_size``, ``learning_rate``.
    """

    name = "rrpsgd"
    card = "Alg. 2 on Poisson batches, noise calibrated by the RDP accountant over all N rounds"
    reference = "doc/papers/zhang_zheng_mou_wang2017.rst"
    source = "Zhang, Zheng, Mou, Wang 2017, Alg. 2 (RRPSGD)"
    summary = "private SGD stopped after a uniformly random number of rounds, Poisson sampling, RDP-calibrated"
    defaults = "b = ceil(sqrt n), N = min(2000, n^2/b) rounds, R ~ U{1..N}, eta = min(1/beta, 1/(sigma_G sqrt N))"
    option_keys = {
        "batch_size": "expected Poisson batch size b (1 = the paper)",
        "learning_rate": "constant step eta",
    }

    def steps(self, problem, b):
        if problem.max_iter:
            return int(problem.max_iter)
        return int(min(self.default_max_steps, max(1, math.ceil(problem.n**2 / b))))

    def step_size(self, problem, std, N):
        eta = problem.options.get("learning_rate")
        if eta is not None:
            return self.learning_rate(problem)
        G = problem.gradient_bound
        sigma_g = math.sqrt(G**2 + int(np.prod(problem.coef_shape)) * std**2)
        beta = problem.smoothness + problem.penalty.smoothness
        return min(1.0 / beta, 1.0 / (sigma_g * math.sqrt(N)))

    def run(self, problem, plan, rng):
        n = problem.n
        b, N, q, z, std = (plan.settings[k] for k in ("b", "T", "q", "z", "std"))
        eta = self.step_size(problem, std, N)
        R = int(rng.randint(1, N + 1))  # drawn before the data is read; P is uniform for a constant step
        w = np.zeros(problem.coef_shape)
        for rows, noise in zip(poisson_batches(rng, n, q, R, problem), gaussian_noise_steps(rng, std, R, w.shape)):
            g = self.batch_mean(problem, w, rows, b) + self.penalty_gradient(problem, w)
            w = w - eta * (g + noise)
        info = {"batch_size": b, "learning_rate": eta, "noise_multiplier": z, "rounds": R, "max_rounds": N}
        return SolverResult(w, N, info)


# ---------------------------------------------------------------------------------------
# dp_srm
# ---------------------------------------------------------------------------------------
@register
class DPSRM(_PoissonSolver):
    """``dp_srm``: differentially private stochastic recursive momentum, clipped mode.

    Wang 2021 (dissertation), ch. 4, Alg. 4, in its clipped mode (what the
    experiments of Sec. 4.7 run), corrected (see :doc:`/papers/wang2021`): the
    closed-form noise of Thm 4.5.1 is not used (non-private outside its
    lemma's conditions) and the accountant prices the releases actually made. The estimator is the STORM recursion on the
    **released** noisy estimate:

    * ``v_p^0 = (1/b0) sum_{i in B_0} clip(grad l_i(theta^0), C1) + grad r(theta^0) + u^0``;
    * ``theta^{t+1} = theta^t - eta v_p^t``;
    * ``v_p^{t+1} = (1/b) sum_{i in B} [gamma a_i + (1 - gamma) d_i] + (1 - gamma) v_p^t
      + grad r(theta^{t+1}) - (1 - gamma) grad r(theta^t) + u^{t+1}``,
      with ``a_i = clip(grad l_i(theta^{t+1}), C1)`` and
      ``d_i = clip(grad l_i(theta^{t+1}) - grad l_i(theta^t), C2)`` on the **same** batch;

    ``r`` the data-independent penalty (outside the clipping). Replace-one
    changes one per-example term by at most ``2 C1`` at step 0 and
    ``2 S = 2 (gamma C1 + (1 - gamma) C2)`` after, so each release is a Poisson
    subsampled Gaussian with noise std ``z C1 / b0`` (step 0) and ``z S / b``
    (later steps), one multiplier ``z`` calibrated by the accountant for the
    ``T`` releases ``v_p^0 .. v_p^{T-1}`` (``v_p^T`` is never computed). The
    returned ``theta`` is drawn uniformly from ``theta^0 .. theta^{T-1}``
    (Alg. 4, ``iterate="random"``) or is the last one; privacy is the same.

    ``C1`` is the estimator's per-example gradient bound ``G``. Defaults:
    ``C2 = 0.1 G`` and ``gamma = 0.1`` (the experiments, Sec. 4.7, use ``C2 = gamma = 0.01`` with
    ``C1 = 1`` for thousands of steps; on a few hundred rows and ``T`` of order
    100 the first release's noise must decay faster), ``b = b0 = ceil(sqrt(n))``,
    ``T = min(2000, 4 n / b)`` (four passes), ``eta = 1/(beta + alpha)``.
    :meth:`theory_constants` gives Thm 4.5.4's constants for reproduction.

    ``solver_options``: ``batch_size``, ``initial_batch_size``, ``diff_clip``
    (``C2``), ``momentum`` (``gamma``), ``learning_rate``, ``iterate``.
    """

    name = "dp_srm"
    card = "Alg. 4, clipped mode, recursion on the released estimate, noise calibrated by the accountant (not Thm 4.5.1)"
    reference = "doc/papers/wang2021.rst"
    source = "Wang 2021 (dissertation), ch. 4, Alg. 4 (DP-SRM)"
    summary = "DP stochastic recursive momentum (STORM) with gradient and gradient-difference clipping"
    defaults = ("b = b0 = ceil(sqrt n), T = min(2000, 4n/b), C2 = 0.1 G, gamma = 0.1, eta = 1/(beta + alpha), "
                "random iterate")
    option_keys = {
        "batch_size": "expected Poisson batch size b",
        "initial_batch_size": "expected size b0 of the first batch",
        "diff_clip": "clip norm C2 of the per-example gradient differences",
        "momentum": "gamma in (0, 1]",
        "learning_rate": "constant step eta",
        "iterate": '"random" (Alg. 4) or "last"',
    }
    default_passes = 4

    def params(self, problem):
        G = float(problem.gradient_bound)
        C2 = float(problem.options.get("diff_clip", 0.1 * G))
        gamma = float(problem.options.get("momentum", 0.1))
        if not (C2 > 0 and math.isfinite(C2)):
            raise ValueError(f"diff_clip must be a positive number, got {C2!r}.")
        if not 0 < gamma <= 1:
            raise ValueError(f"momentum must be in (0, 1], got {gamma!r}.")
        iterate = problem.options.get("iterate", "random")
        if iterate not in ("random", "last"):
            raise ValueError(f"iterate must be 'random' or 'last', got {iterate!r}.")
        b = self.batch_size(problem)
        b0 = problem.options.get("initial_batch_size")
        b0 = b if b0 is None else int(b0)
        if b0 < 1:
            raise ValueError(f"initial_batch_size must be >= 1, got {b0!r}.")
        return G, C2, gamma, iterate, b, min(b0, problem.n)

    @staticmethod
    def _events(n, b0, b, T, z):
        events = [PoissonGaussianEvent(b0 / n, z, 1)]
        if T > 1:
            events.append(PoissonGaussianEvent(b / n, z, T - 1))
        return events

    def multiplier_srm(self, problem, budget, b0, b, T):
        z, _ = calibrate(lambda z: self._events(problem.n, b0, b, T, z), budget.epsilon, budget.delta,
                         relation=budget.relation, initial=1.0, rtol=1e-4)
        return z

    def make_plan(self, problem, budget):
        G, C2, gamma, _, b, b0 = self.params(problem)
        T = self.steps(problem, b)
        z = self.multiplier_srm(problem, budget, b0, b, T)
        std = z * (gamma * G + (1 - gamma) * C2) / b
        return SolverPlan(tuple(self._events(problem.n, b0, b, T, z)), std,
                          {"T": T, "z": z, "std0": z * G / b0, "std": std})

    @staticmethod
    def _derivatives(problem, rows, *points):
        """The gathered rows, the loss derivatives at each of ``points`` on them, and their norms (one gather)."""
        report_rows(problem, rows.size * len(points))
        Xb, y = batch_rows(problem.X, rows), take_rows(problem.y, rows)
        if problem.loss.scalar and np.ndim(points[0]) == 1:  # the points as the columns of one product
            S = problem.loss.derivative(Xb @ np.column_stack(points), y[:, None])
            return (Xb, *S.T, take_rows(problem.norms, rows))
        return (Xb, *(problem.loss.derivative(Xb @ w, y) for w in points), take_rows(problem.norms, rows))

    def run(self, problem, plan, rng):
        n = problem.n
        G, C2, gamma, iterate, b, b0 = self.params(problem)
        T, z, std0, std = (plan.settings[k] for k in ("T", "z", "std0", "std"))
        eta = self.learning_rate(problem)
        pick = int(rng.randint(T)) if iterate == "random" else None  # before the data is read
        theta = np.zeros(problem.coef_shape)
        rows = poisson_sample(rng, n, b0 / n)
        v = (self._clipped_sum(problem, rows, theta, G) / b0 + self.penalty_gradient(problem, theta)
             + gaussian_noise(rng, std0, theta.shape))
        chosen = theta if pick == 0 else None
        steps = zip(poisson_batches(rng, n, b / n, T - 1, problem), gaussian_noise_steps(rng, std, T - 1, theta.shape))
        for t, (rows, noise) in enumerate(steps, start=1):
            new = theta - eta * v
            contrib = np.zeros_like(theta)
            if rows.size:
                contrib = self._contribution(problem, rows, new, theta, G, C2, gamma)
            v = (contrib / b + (1 - gamma) * v + self.penalty_gradient(problem, new)
                 - (1 - gamma) * self.penalty_gradient(problem, theta) + noise)
            theta = new
            if pick == t:
                chosen = theta
        coef = chosen if iterate == "random" else theta - eta * v
        info = {"batch_size": b, "initial_batch_size": b0, "diff_clip": C2, "momentum": gamma,
                "learning_rate": eta, "noise_multiplier": z, "returned_iterate": pick if pick is not None else T}
        return SolverResult(coef, T, info)

    @classmethod
    def _contribution(cls, problem, rows, new, old, G, C2, gamma):
        """``sum_{i in rows} gamma a_i + (1 - gamma) d_i`` (one gather of the rows).

        ``a_i`` is row ``i``'s gradient at ``new`` and ``d_i`` its gradient
        difference between ``new`` and ``old``, clipped to ``G / W`` and
        ``C2 / W`` (``W`` the weight bound), then weighted: each row's terms
        stay within ``G`` and ``C2``.
        """
        W = problem.weight_bound
        if problem.loss.scalar and np.ndim(new) == 1:
            report_rows(problem, 2 * rows.size)

            def combined(Z, terms):  # column 0: the margins at new, column 1: at old
                S = problem.loss.derivative(Z, terms["y"][:, None])
                norms = terms["norms"]  # clipped to this solver's own norms (G and C2), whatever problem.clip is
                a = weigh(clip_derivatives(S[:, 0], norms, G / W), terms["weights"])
                dlt = weigh(clip_derivatives(S[:, 0] - S[:, 1], norms, C2 / W), terms["weights"])
                return gamma * a + (1 - gamma) * dlt

            return problem.batch_sum((new, old), combined, rows)
        Xb, S_new, S_old, norms = cls._derivatives(problem, rows, new, old)
        vector = np.ndim(S_new) == 2
        a = problem.weigh(clip_derivatives(S_new, norms, G / W, vector=vector), rows)
        dlt = problem.weigh(clip_derivatives(S_new - S_old, norms, C2 / W, vector=vector), rows)
        return np.asarray(Xb.T @ (gamma * a + (1 - gamma) * dlt))

    @staticmethod
    def _clipped_sum(problem, rows, w, G):
        if rows.size == 0:
            return np.zeros_like(w)
        report_rows(problem, rows.size)
        Xb = batch_rows(problem.X, rows)
        S = problem.loss.derivative(Xb @ w, problem.y[rows])
        S = clip_derivatives(S, problem.norms[rows], G / problem.weight_bound, vector=np.ndim(S) == 2)
        return np.asarray(Xb.T @ problem.weigh(S, rows))

    @staticmethod
    def theory_constants(G, L, D_F, d, n, epsilon, delta):
        """Thm 4.5.4's hyperparameters (as its proof sets them), for reproducing the paper's setting.

        Returns a dict with ``zeta``, ``n0``, ``momentum`` (``gamma``), ``batch_size`` (``b``),
        ``initial_batch_size`` (``b0``) and ``T``. ``D_F`` must be a public bound on
        ``F(theta^0) - inf F`` (e.g. ``ln 2`` for the logistic loss at 0). Privacy is still the
        accountant's for the schedule run; these only set the schedule.
        """
        zeta = math.sqrt(G) * (L * D_F * d * math.log(1 / delta)) ** 0.25 / math.sqrt(n * epsilon)
        n0 = L * D_F / zeta
        return {"zeta": zeta, "n0": n0, "momentum": min(1.0, math.sqrt(2) * zeta / n0),
                "batch_size": max(1, int(round(G**2 / (L * D_F)))),
                "initial_batch_size": max(1, int(round(G**2 / (zeta * L * D_F)))),
                "T": int(4 * n0 * L * D_F / zeta**2) + 1}
