"""Poisson-sampled noisy SGD: ``noisy_sgd`` and ``nsgd_moreau`` (Bassily, Feldman, Talwar, Thakurta 2019).

References
----------
.. [1] R. Bassily, V. Feldman, K. Talwar and A. Thakurta, "Private stochastic convex
   optimization with optimal rates", NeurIPS 2019. <https://arxiv.org/abs/1908.09970>
.. [2] M. Abadi, A. Chu, I. Goodfellow, H. B. McMahan, I. Mironov, K. Talwar and L. Zhang, "Deep
   learning with differential privacy", ACM CCS 2016. <https://doi.org/10.1145/2976749.2978318>
.. [3] I. Mironov, K. Talwar and L. Zhang, "Rényi differential privacy of the sampled Gaussian
   mechanism", arXiv preprint, 2019. <https://arxiv.org/abs/1908.10530>
"""

import math
from functools import lru_cache

import numpy as np

from ..losses import clip_derivatives, moreau_hinge_derivative
from ..penalties import NormBall
from ..privacy import PoissonGaussianEvent, calibrate, gaussian_noise_steps
from ._base import Solver, SolverPlan, SolverResult, batch_rows, register, report_rows
from .gradient import poisson_batches

__all__ = ["NoisySGD", "NoisySGDMoreau"]


@lru_cache(maxsize=256)
def _noise_multiplier(q, T, epsilon, delta, relation):
    z, _ = calibrate(lambda z: [PoissonGaussianEvent(q, z, T)], epsilon, delta, relation=relation,
                     initial=1.0, rtol=1e-4)
    return z


@register
class NoisySGD(Solver):
    """``noisy_sgd``: multi-pass noisy projected SGD with Poisson sampling, averaged iterate.

    Bassily, Feldman, Talwar and Thakurta 2019, Alg. 1 (``A_NSGD``), with its
    privacy step replaced (see :doc:`/papers/bassily_feldman_talwar_thakurta2019`): the paper's Thm 3.1
    appeals to the moments accountant (Abadi et al. 2016, Thm 1), whose
    constants are unspecified, and its fixed-size, with-replacement batches and
    its constant ``8`` are **not** priced by any accountant under replace-one,
    so each step includes every row
    independently with probability ``q = m/n`` (Poisson), sums the
    per-example gradients clipped to ``G`` and divides by the public expected
    size ``m``; the Gaussian noise on that mean has std ``z G / m`` with the
    noise multiplier ``z`` calibrated by the shared RDP accountant for the
    replace-one Poisson mixture pair (:doc:`/user_guide/accounting`) over the
    ``T`` steps actually run. Iterates are projected on the L2 ball of radius
    ``M``; the output is the average of ``w_1 .. w_T``. The L2 penalty enters
    as the exact, data-independent term ``alpha w``.

    Defaults (Thm 3.2): ``T0 = min(n/8, eps^2 n^2 / (32 d ln(1/delta)))``,
    ``m = ceil(n sqrt(eps / (4 T0)))``; the run takes ``T = min(T0, 2000)``
    steps (skdp's cap, for run time; ``max_iter`` sets ``T = T0``) and
    ``eta = M / (G sqrt(T))``. When the cap binds (``n > 16000``) the batch
    stays Thm 3.2's for ``T0``: the accountant's noise on the mean gradient
    ``z G / m`` is then about what the larger batch ``n sqrt(eps / (4 T))``
    would get (with Poisson subsampling the noise multiplier ``z`` falls
    roughly in proportion to the sampling rate, so ``z / m`` depends little on
    ``m``; :doc:`/user_guide/defaults` compares the two), for a fraction of the
    per-example gradients.
    Privacy needs no smoothness, so the hinge loss is accepted (use
    ``nsgd_moreau`` for its utility).

    ``solver_options``: ``batch_size`` (expected ``m``), ``learning_rate``.
    """

    name = "noisy_sgd"
    release_ignores_penalty = True
    card = "Alg. 1 on Poisson batches, noise multiplier calibrated by the replace-one RDP accountant"
    reference = "doc/papers/bassily_feldman_talwar_thakurta2019.rst"
    source = "Bassily, Feldman, Talwar, Thakurta 2019, Alg. 1"
    geometry = "l2"
    requires = frozenset({"scalar"})  # privacy needs no smoothness (the gradient bound only)
    summary = "multi-pass noisy projected SGD, Poisson sampling, RDP-calibrated, averaged iterate"
    defaults = ("T0 = min(n/8, eps^2 n^2/(32 d ln(1/delta))), m = n sqrt(eps/(4 T0)), T = min(T0, 2000), "
                "eta = M/(G sqrt T)")
    option_keys = {"batch_size": "expected Poisson batch size m", "learning_rate": "step eta"}
    secure_noise_refusal = ("its Poisson-subsampled Gaussian steps are priced by the tight RDP of the subsampled "
                            "continuous Gaussian (Mironov, Talwar, Zhang 2019), which the accountant does not "
                            "extend to the discrete Gaussian; use solver='dp_gd' for floating-point-safe gradients")
    default_max_steps = 2000
    #: its steps read their rows through :meth:`Problem.batch_sum`, so they can be gathered ahead
    prefetch_rows = True

    def make_constraint(self, options, radius):
        return NormBall(2.0, radius)

    def gradient_norm_bound(self, problem, budget):
        return problem.gradient_bound

    def schedule(self, problem, budget):
        n, d = problem.n, problem.p
        eps, delta = budget.epsilon, budget.delta
        if problem.max_iter:
            T = T_batch = int(problem.max_iter)
        else:
            # Thm 3.2's T; the run-time cap shortens the run but keeps Thm 3.2's batch for that T
            T_batch = max(int(min(n / 8, eps**2 * n**2 / (32 * d * math.log(1 / delta)))), 1)
            T = min(T_batch, self.default_max_steps)
        m = problem.options.get("batch_size")
        m = int(math.ceil(max(n * math.sqrt(eps / (4 * T_batch)), 1))) if m is None else int(m)
        if m < 1:
            raise ValueError(f"batch_size must be >= 1, got {m!r}.")
        return T, min(m, n)

    def noise(self, problem, budget, T, m):
        """(noise multiplier z, std on the mean gradient)."""
        z = _noise_multiplier(m / problem.n, T, budget.epsilon, budget.delta, budget.relation)
        return z, z * self.gradient_norm_bound(problem, budget) / m

    def make_plan(self, problem, budget):
        T, m = self.schedule(problem, budget)
        z, sigma = self.noise(problem, budget, T, m)
        settings = {"T": T, "m": m, "z": z, "sigma": sigma, "eta": self.learning_rate(problem, budget, T),
                    **self.extra_settings(problem, budget)}
        return SolverPlan((PoissonGaussianEvent(m / problem.n, z, T),), sigma, settings)

    def extra_settings(self, problem, budget):
        """Further public settings of a variant (e.g. a smoothing parameter)."""
        return {}

    def learning_rate(self, problem, budget, T):
        eta = problem.options.get("learning_rate")
        if eta is not None:
            return float(eta)
        return problem.constraint.radius / (self.gradient_norm_bound(problem, budget) * math.sqrt(T))

    def batch_gradient(self, problem, plan, w, rows, m):
        return problem.batch_gradient(w, rows, m)

    def run(self, problem, plan, rng):
        ball = problem.constraint
        n = problem.n
        T, m, z, sigma, eta = (plan.settings[k] for k in ("T", "m", "z", "sigma", "eta"))
        alpha = problem.penalty.alpha
        q = m / n
        w = np.zeros(problem.coef_shape)
        avg = np.zeros_like(w)
        # every step's batch and noise drawn by chunks of steps (the same law as step by step)
        for rows, noise in zip(poisson_batches(rng, n, q, T, problem if self.prefetch_rows else None),
                               gaussian_noise_steps(rng, sigma, T, w.shape)):
            g = self.batch_gradient(problem, plan, w, rows, m) if rows.size else 0.0
            w = ball.project(w - eta * (g + alpha * w + noise))
            avg += w
        info = {"batch_size": m, "learning_rate": eta, "noise_multiplier": z}
        return SolverResult(avg / T, T, info)


@register
class NoisySGDMoreau(NoisySGD):
    """``nsgd_moreau``: ``noisy_sgd`` on the Moreau envelope of a non-smooth loss (hinge).

    Bassily, Feldman, Talwar and Thakurta 2019, section 4 (Thm 4.4), with the
    **unconstrained** envelope (see :doc:`/papers/bassily_feldman_talwar_thakurta2019`): the envelope
    ``f_beta(w) = min_v f(v) + (beta/2)||w - v||^2`` is convex, ``beta``-smooth and
    ``G``-Lipschitz (its gradient is a subgradient at the prox point), so the
    noise is calibrated to ``G`` (not ``2G``; the constrained envelope of
    Def. 4.1 would need ``2G``). For the hinge loss the envelope gradient has
    a closed form (:func:`skdp.losses.moreau_hinge_derivative`),
    a Huberised hinge of width ``||x_i||^2 / beta``; it is clipped to ``G``
    anyway (a no-op up to rounding). ``beta = (G/M) min(sqrt(n)/4,
    eps n / (8 sqrt(d ln(1/delta))))`` (the smoothing of Thm 4.4), from public values
    only. Everything else (Poisson sampling, accountant, projection,
    averaging) is ``noisy_sgd``.
    """

    name = "nsgd_moreau"
    card = "Thm 4.4 with the unconstrained Moreau envelope (G-Lipschitz, not 2G) in closed form"
    reference = "doc/papers/bassily_feldman_talwar_thakurta2019.rst"
    source = "Bassily, Feldman, Talwar, Thakurta 2019, Sec. 4 (Thm 4.4)"
    requires = frozenset({"moreau_envelope"})
    release_ignores_penalty = False  # its smoothing (a planned setting) depends on the ball's radius
    prefetch_rows = False  # its envelope gradient gathers the rows itself
    summary = "noisy SGD on the Moreau envelope of the hinge loss (closed-form prox), Poisson sampling"
    defaults = "beta = (G/M) min(sqrt(n)/4, eps n/(8 sqrt(d ln(1/delta)))); T, m, eta as noisy_sgd"

    def smoothing(self, problem, budget):
        G, M = problem.gradient_bound, problem.constraint.radius
        n, d = problem.n, problem.p
        return (G / M) * min(math.sqrt(n) / 4,
                             budget.epsilon * n / (8 * math.sqrt(d * math.log(1 / budget.delta))))

    def extra_settings(self, problem, budget):
        return {"beta": self.smoothing(problem, budget)}

    def batch_gradient(self, problem, plan, w, rows, m):
        beta = plan.settings["beta"]
        report_rows(problem, rows.size)
        X = batch_rows(problem.X, rows)
        norms = problem.norms[rows]
        S = moreau_hinge_derivative(X @ w, problem.y[rows], norms**2, beta)
        S = clip_derivatives(S, norms, problem.unit_gradient_bound)
        return np.asarray(X.T @ problem.weigh(S, rows)) / m
