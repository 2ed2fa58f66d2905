"""Noise calibration of objective perturbation (its own theorem, not an additive release).

Objective perturbation releases the exact minimiser of
``J(w) = (1/n) sum_i phi(<w, x_i>, y_i) + ((Lambda + Delta)/2) ||w||^2 + <b, w>/n``
for a GLM loss with per-example gradient bound ``zeta`` and per-example
Hessian ``phi'' x x^T`` of rank one with eigenvalue ``<= lambda_H``. Its privacy
comes from a change of variables (Jacobian term plus noise-density term), so
it is priced by the theorem below and entered in the accountant as an
:class:`~skdp.privacy.events.ApproxDPEvent`, never as a Gaussian or L2-Laplace
release: that would drop the Jacobian term of the proof.

All formulas are for **replace-one** neighbours: one swap moves the gradient
sum by ``2 zeta``, while the printed constants (Kifer-Smith-Thakurta 2012, Alg. 1;
Chaudhuri-Monteleoni-Sarwate 2011, Alg. 2; Bassily-Feldman-Talwar-Thakurta 2019,
Thm 5.2) are for a change of ``zeta``. The recalibration is explained on the
documentation page :doc:`/papers/bassily_feldman_talwar_thakurta2019`.

References
----------
.. [1] K. Chaudhuri, C. Monteleoni and A. D. Sarwate, "Differentially private empirical risk
   minimization", Journal of Machine Learning Research 12, 2011.
   <https://arxiv.org/abs/0912.0071>
.. [2] D. Kifer, A. Smith and A. Thakurta, "Private convex empirical risk minimization and
   high-dimensional regression", COLT 2012, PMLR 23.
   <https://proceedings.mlr.press/v23/kifer12.html>
.. [3] R. Bassily, V. Feldman, K. Talwar and A. Thakurta, "Private stochastic convex
   optimization with optimal rates", NeurIPS 2019. <https://arxiv.org/abs/1908.09970>
"""

import math

__all__ = ["objective_perturbation_gaussian", "objective_perturbation_pure"]


def objective_perturbation_gaussian(zeta, lambda_h, n, alpha, epsilon, delta, jacobian_fraction=0.5):
    """(sigma, extra_alpha) for (epsilon, delta)-DP objective perturbation, delta > 0.

    The replace-one recalibration of Kifer-Smith-Thakurta 2012, Thm 2 (see
    :doc:`/papers/bassily_feldman_talwar_thakurta2019`): split ``epsilon = eps_J + eps_N`` with ``eps_J = jacobian_fraction
    * epsilon``; require ``n (alpha + extra) >= lambda_H / (exp(eps_J) - 1)``
    (``extra`` is the smallest added L2 strength that achieves it); draw
    ``b ~ N(0, sigma^2 I)`` with
    ``sigma = 2 zeta (c + sqrt(c^2 + 2 eps_N)) / (2 eps_N)``, ``c = sqrt(2 ln(1/delta))``.

    Examples
    --------
    >>> s, extra = objective_perturbation_gaussian(1.0, 0.25, 10**4, 1.0, 1.0, 1e-8)
    >>> round(s, 4), extra
    (24.4425, 0.0)
    """
    if not delta > 0:
        raise ValueError("The Gaussian objective perturbation needs delta > 0.")
    eps_j = jacobian_fraction * epsilon
    eps_n = epsilon - eps_j
    needed = lambda_h / (n * math.expm1(eps_j)) if eps_j < 700 else 0.0
    extra = max(0.0, needed - alpha)
    c = math.sqrt(2 * math.log(1 / delta))
    sigma = 2 * zeta * (c + math.sqrt(c * c + 2 * eps_n)) / (2 * eps_n)
    return sigma, extra


def objective_perturbation_pure(zeta, lambda_h, n, alpha, epsilon):
    """(gamma_scale, extra_alpha) for epsilon-DP objective perturbation (CMS11 Alg. 2).

    Chaudhuri-Monteleoni-Sarwate 2011, Thm 9, rescaled to general constants
    (``x -> x/K``, ``phi -> phi/L_phi``; see :doc:`/papers/bassily_feldman_talwar_thakurta2019`):
    ``eps' = epsilon - 2 ln(1 + lambda_H/(n alpha))``; if
    ``eps' <= 0`` add ``Delta = lambda_H/(n (exp(epsilon/4) - 1)) - alpha`` and use
    ``eps' = epsilon/2``; then ``||b|| ~ Gamma(d, 2 zeta / eps')`` with a uniform
    direction. Only for losses Lipschitz on all of R^d (not the squared loss).

    Examples
    --------
    >>> s, extra = objective_perturbation_pure(1.0, 0.25, 1000, 1e-3, 1.0)
    >>> round(s, 5), extra
    (3.61198, 0.0)
    """
    if alpha > 0:
        eps_prime = epsilon - 2 * math.log1p(lambda_h / (n * alpha))
    else:
        eps_prime = -math.inf
    extra = 0.0
    if eps_prime <= 0:
        extra = lambda_h / (n * math.expm1(epsilon / 4)) - alpha
        eps_prime = epsilon / 2
    return 2 * zeta / eps_prime, max(extra, 0.0)
