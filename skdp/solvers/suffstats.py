"""``adassp``: sufficient-statistics perturbation for the squared loss (Wang 2018, AdaSSP).

References
----------
.. [1] Y.-X. Wang, "Revisiting differentially private linear regression: optimal and adaptive
   prediction & estimation in unbounded domain", UAI 2018. <https://arxiv.org/abs/1803.02596>
"""

import math

import numpy as np

from ..privacy import GaussianEvent, ZCDPEvent, calibrate_gaussian
from ..privacy.discrete import secure_gaussian_sensitivity
from .._blas import blas_threads_for
from ._base import (Solver, SolverPlan, SolverResult, noisy_release, register, report_phase, report_rows,
                    secure_noise_option, secure_zcdp_rho, unit_interval_option)

__all__ = ["AdaSSP"]


@register
class AdaSSP(Solver):
    """``adassp``: noisy ``X^T X`` and ``X^T y`` with a privately chosen ridge term, one ``p x p`` solve.

    Wang 2018 ("Revisiting differentially private linear regression", Alg. 2,
    AdaSSP), with the three releases composed exactly by the shared accountant
    (Gaussian DP) instead of three ``epsilon/3`` shares (see
    :doc:`/papers/wang2018`). On the bounded problem
    (rows ``||x_i|| <= K``, intercept column included; labels ``|y_i| <= B``),
    each of the three releases is one Gaussian mechanism under **replace-one**
    neighbours with public ``n``:

    1. ``lambda_min(X^T X) + N(0, sigma_1^2)``: replacing one row moves every
       eigenvalue by at most ``K^2`` (Weyl), sensitivity ``K^2``;
    2. the upper triangle (diagonal included) of ``X^T X`` plus Gaussian noise,
       mirrored to a symmetric matrix: the change ``x' x'^T - x x^T`` has
       upper-triangle L2 norm at most ``sqrt(2) K^2`` (attained by orthogonal rows);
    3. ``X^T y + N(0, sigma_3^2 I)``: sensitivity ``2 K B``. With ``k`` targets
       (``y`` of shape ``(n, k)``, ``||y_i||_2 <= B``: see
       :class:`~skdp.solvers.Problem`) this is one release of the ``p x k``
       matrix ``X^T Y``: replacing row ``i`` changes it by ``x y^T - x' y'^T``,
       of Frobenius norm at most ``2 K B``; releases 1 and 2 are shared by all
       targets.

    Each ``sigma_i`` is its sensitivity times one common unit scale, so each
    release is ``mu/sqrt(3)``-GDP and the three are ``mu``-GDP together,
    ``mu`` the largest meeting ``(epsilon, delta)``. Everything after the
    releases is post-processing: the ridge term
    ``lambda = max(0, sigma_2 sqrt(p log(2 p^2 / rho)) - lambda_low)`` with
    ``lambda_low`` a high-probability lower bound on ``lambda_min`` from release 1
    (AdaSSP's rule; ``rho`` = ``solver_options["failure_probability"]``, default
    0.05), plus the estimator's own penalty ``n alpha``; the solve uses an
    eigen-decomposition with eigenvalues floored at a tiny positive value so that
    a noisy matrix that is not positive definite still gives a finite answer.

    ``max_iter`` is ignored (one pass over the data, no iterations).

    ``solver_options={"secure_noise": True}`` (``delta > 0``) makes each
    release floating-point safe (a power-of-two grid, whose cost is in its
    sensitivity, and exact discrete Gaussian noise,
    :func:`skdp.privacy.discrete.secure_gaussian_release`): each is
    ``rho / 3``-zCDP, ``rho`` the zCDP level of the budget, and the ridge rule
    uses the discrete noise's scales. The zCDP conversion needs somewhat more
    noise than the exact Gaussian-DP calibration, and the exact sampler's fixed
    cost per release dominates a fit of a few milliseconds
    (:doc:`/user_guide/verifying`), so an option, not the default.
    """

    name = "adassp"
    iterative = False
    source = "Wang 2018, Alg. 2 (AdaSSP)"
    card = "AdaSSP with the three Gaussian releases composed exactly (GDP) under replace-one"
    reference = "doc/papers/wang2018.rst"
    summary = "sufficient-statistics perturbation: noisy X^T X, X^T y and lambda_min, adaptive ridge, one solve"
    defaults = "one pass; ridge lambda from a private lambda_min (failure probability 0.05)"
    requires = frozenset({"quadratic"})
    multi_output = True
    option_keys = {"failure_probability": "rho of AdaSSP's ridge rule (post-processing; default 0.05)",
                   "secure_noise": "the three releases on power-of-two grids with exact discrete Gaussian noise"}

    def check_options(self, options):
        """Keys, and the value of ``failure_probability``, checked before the data is read."""
        super().check_options(options)
        self._failure_probability(options or {})

    @staticmethod
    def _failure_probability(options):
        return unit_interval_option(options, "failure_probability", 0.05)

    @staticmethod
    def sensitivities(problem):
        """Replace-one L2 sensitivities of (lambda_min, upper triangle of X^T W X, X^T W y).

        Weighted (rows of weight ``<= W``, ``W = max_sample_weight``): one row's
        terms ``w x x^T`` and ``w x y`` are ``W`` times larger at most, so each
        sensitivity is ``W`` times the unweighted one.
        """
        W = problem.weight_bound
        K2 = float(problem.data_norm) ** 2
        return W * K2, W * math.sqrt(2.0) * K2, W * 2.0 * float(problem.data_norm) * float(problem.label_bound)

    def make_plan(self, problem, budget):
        if problem.label_bound is None:
            raise ValueError("solver='adassp' needs a public label bound.")
        sens = self.sensitivities(problem)
        rho = self._failure_probability(problem.options)
        if secure_noise_option(problem.options):
            p, k = problem.p, max(int(problem.n_outputs), 1)
            zcdp = secure_zcdp_rho(budget) / 3.0
            sizes = (1, p * (p + 1) // 2, p * k)  # lambda_min, the upper triangle, X^T Y
            sigmas = tuple(secure_gaussian_sensitivity(s, d) / math.sqrt(2.0 * zcdp) for s, d in zip(sens, sizes))
            return SolverPlan((ZCDPEvent(zcdp, 3),), sigmas[1],
                              {"sigmas": sigmas, "rho": rho, "secure": tuple((s, zcdp) for s in sens)})
        unit = calibrate_gaussian(3.0, budget.epsilon, budget.delta)  # 3 releases of unit sensitivity
        sigmas = tuple(s * unit for s in sens)
        events = tuple(GaussianEvent(s, sig) for s, sig in zip(sens, sigmas))
        return SolverPlan(events, sigmas[1], {"sigmas": sigmas, "rho": rho, "secure": (None, None, None)})

    def run(self, problem, plan, rng):
        XtX, Xty = problem.gram()
        report_rows(problem, problem.n)
        report_phase(problem, "sufficient statistics X^T X, X^T y")
        with blas_threads_for(problem.p):  # p x p eigendecompositions: small ones on one thread (skdp._blas)
            return self._release_and_solve(problem, plan, rng, XtX, Xty)

    @staticmethod
    def _release_and_solve(problem, plan, rng, XtX, Xty):
        """The three releases from the sufficient statistics, and the solve."""
        n, p = problem.n, problem.p
        s_min, s_xx, s_xy = plan.settings["sigmas"]
        rho = plan.settings["rho"]
        # release 1: the smallest eigenvalue; a one-sided lower bound that holds with probability 1 - rho/3
        secure = plan.settings["secure"]
        lam_min = float(noisy_release(rng, np.linalg.eigvalsh(XtX)[:1], s_min, secure[0])[0])
        lam_low = max(lam_min - s_min * math.sqrt(2.0 * math.log(3.0 / rho)), 0.0)
        # release 2: the symmetric matrix from a noisy upper triangle
        iu = np.triu_indices(p)
        upper = noisy_release(rng, XtX[iu], s_xx, secure[1])
        noisy = np.zeros((p, p))
        noisy[iu] = upper
        noisy = noisy + np.triu(noisy, 1).T
        # release 3
        noisy_xty = noisy_release(rng, Xty, s_xy, secure[2])
        ridge = max(0.0, s_xx * math.sqrt(p * math.log(2.0 * p * p / rho)) - lam_low)
        total = ridge + n * float(problem.penalty.alpha)
        vals, vecs = np.linalg.eigh(noisy + total * np.eye(p))
        vals = np.maximum(vals, 1e-12 * max(1.0, float(np.abs(vals).max())))
        coef = vecs @ ((vecs.T @ noisy_xty) / (vals if noisy_xty.ndim == 1 else vals[:, None]))
        info = {"ridge": ridge, "lambda_min_lower": lam_low, "alpha_effective": total / n}
        return SolverResult(coef, 1, info)
