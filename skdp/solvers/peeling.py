"""``noisy_iht``: noisy iterative hard thresholding with private top-``s`` selection ("peeling").

Cai, Wang and Zhang 2021 ("The cost of privacy: optimal rates of convergence
for parameter estimation with differential privacy", Ann. Statist. 49(5),
noisy iterative hard thresholding) with the peeling of Dwork, Su and Zhang
2018 ("Differentially private false discovery rate control"), extended to
GLMs (the logistic loss) as in Cai, Wang and Zhang 2020 ("The cost of
privacy in generalized linear models"). skdp's rigorous replace-one form is
described on :doc:`/papers/cai_wang_zhang2021`.

References
----------
.. [1] T. T. Cai, Y. Wang and L. Zhang, "The cost of privacy: optimal rates of convergence for
   parameter estimation with differential privacy", Annals of Statistics 49(5), 2021.
   <https://doi.org/10.1214/21-AOS2058>
.. [2] T. T. Cai, Y. Wang and L. Zhang, "The cost of privacy in generalized linear models:
   algorithms and minimax lower bounds", arXiv preprint, 2020.
   <https://arxiv.org/abs/2011.03900>
.. [3] C. Dwork, W. J. Su and L. Zhang, "Differentially private false discovery rate control",
   Journal of Privacy and Confidentiality, 2021 (arXiv 2018). <https://doi.org/10.29012/jpc.755>
.. [4] D. Durfee and R. Rogers, "Practical differentially private top-k selection with
   pay-what-you-get composition", NeurIPS 2019.
   <https://papers.nips.cc/paper/2019/hash/b139e104214a08ae3f2ebcce149cdf6e-Abstract.html>
.. [5] R. Khanna and A. Kyrillidis, "IHT dies hard: provable accelerated iterative hard
   thresholding", AISTATS 2018.
"""

import math

import numpy as np
import scipy.sparse as sp

from ..losses import clip_derivatives, weigh
from ..privacy import (BoundedRangeEvent, GaussianEvent, ZCDPEvent, calibrate, gaussian_noise, report_noisy_max,
                       zcdp_rho)
from ..privacy.discrete import exponential_mechanism, secure_gaussian_release, secure_gaussian_sensitivity
from ._base import (SolverPlan, SolverResult, register, report_rows, secure_noise_option, secure_selection_plan,
                    secure_zcdp_rho, unit_interval_option)
from .sparse import _SparseSolver

__all__ = ["NoisyIHT", "peel", "gradient_step", "noisy_iht_sensitivities"]


def peel(rng, scores, s, scale, grid=None):
    """Indices of ``s`` distinct entries chosen one at a time by Gumbel report-noisy-max ("peeling").

    Each round is the exponential mechanism over the entries not chosen yet
    (:func:`skdp.privacy.report_noisy_max`, fresh Gumbel noise of ``scale``
    every round; ties go to the lowest index), so with score sensitivity
    ``Delta`` each round is ``2 Delta / scale``-bounded-range (Dwork, Su and
    Zhang 2018, peeling; Durfee and Rogers 2019 for the Gumbel form). With a
    ``grid`` each round is the exact exponential mechanism on the scores
    rounded to it (:func:`skdp.privacy.discrete.exponential_mechanism`;
    ``scale`` must then carry the grid's cost, ``2 (Delta + grid) / epsilon``).
    """
    scores = np.array(scores, dtype=float)
    chosen = np.empty(int(s), dtype=int)
    for r in range(int(s)):
        if grid is None:
            j = report_noisy_max(rng, scores, scale)
        else:
            j = exponential_mechanism(rng, scores, scale, grid)
        chosen[r] = j
        scores[j] = -np.inf  # never chosen twice; the rest of the exponential mechanism is unchanged
    return chosen


def gradient_step(problem, w, learning_rate, active=None):
    """``v = w - eta (1/n) sum_i g_i(w)``, each ``g_i`` clipped to L-infinity norm ``problem.clip``.

    ``active`` lists the non-zero coordinates of ``w`` (public: the last
    release); the predictions then use only those columns of a dense ``X``,
    so one step costs one pass of ``X^T`` (``O(n d)``) plus ``O(n |active|)``.
    """
    X = problem.X
    report_rows(problem, problem.n)
    if active is None:
        active = np.flatnonzero(w)
    z = X[:, active] @ w[active] if not sp.issparse(X) else np.asarray(X @ w).ravel()
    S = clip_derivatives(problem.loss.derivative(z, problem.y), problem.row_norms(), problem.unit_clip)
    S = weigh(S, problem.sample_weight)  # each row's contribution <= problem.clip (W times the unit clip)
    return w - float(learning_rate) * (np.asarray(X.T @ S).ravel() / problem.n)


def noisy_iht_sensitivities(n, clip, learning_rate, n_released):
    """Replace-one sensitivities ``(Delta_inf, Delta_2,S)`` of ``v = w - eta (1/n) sum_i g_i``.

    Every per-example gradient ``g_i`` is clipped to L-infinity norm ``G``
    (``clip``), so swapping one row moves each coordinate of ``v`` by at most
    ``Delta_inf = 2 eta G / n`` (the scores ``|v_j|`` too, by the reverse
    triangle inequality), and the ``n_released`` coordinates released on the
    selected support by at most ``Delta_2,S = sqrt(n_released) Delta_inf`` in L2.
    """
    d_inf = 2.0 * float(learning_rate) * float(clip) / int(n)
    return d_inf, math.sqrt(int(n_released)) * d_inf


@register
class NoisyIHT(_SparseSolver):
    """``noisy_iht``: noisy IHT with private top-``s`` peeling, at the minimax rate ``s log d / (n epsilon)``.

    Source: Cai, Wang and Zhang 2021 (Ann. Statist. 49(5); noisy iterative hard
    thresholding for sparse linear regression), whose private support step is
    the peeling of Dwork, Su and Zhang 2018; the logistic loss as in Cai, Wang
    and Zhang 2020 (GLMs). Rigorous replace-one form (see
    :doc:`/papers/cai_wang_zhang2021`):

    * **Bounded gradients.** Features are clipped to ``[-K, K]`` by the
      estimator and every per-example gradient ``phi'(<w, x_i>, y_i) x_i`` is
      clipped to **L-infinity** norm ``G`` (``clip_norm``; for the squared loss
      this clips the residual at ``G / ||x_i||_inf``, a Huber-type surrogate).
      The papers' label truncation and feasibility ball are not needed for
      privacy and not used.
    * **What one iteration releases** (``w`` the previous released iterate,
      public): ``v = w - eta (1/n) sum_i g_i(w)``; a support ``S`` of ``s``
      coordinates chosen by peeling, ``s`` rounds of Gumbel report-noisy-max on
      the scores ``|v_j|`` (:func:`peel`; the intercept, if any, is always
      kept and never scored); and ``v_S + N(0, sigma^2 I)`` on ``S`` and the
      intercept. Then ``w`` is that vector, zero elsewhere.
    * **Sensitivities** (replace-one, ``n`` public;
      :func:`noisy_iht_sensitivities`): scores ``Delta_inf = 2 eta G / n``,
      released values ``Delta_2,S = sqrt(|S|) Delta_inf``. With the L2 row
      bound of ``dp_ight`` the two norms have the same bound and peeling gains
      nothing; it is the coordinate bound that makes ``Delta_inf`` about
      ``sqrt(d)`` times smaller than the L2 sensitivity of a full gradient.
    * **Events** over ``T`` iterations: ``BoundedRangeEvent(2 Delta_inf / beta,
      count=T s)`` (scores move in opposite directions, so the factor 2) and
      ``GaussianEvent(Delta_2,S, sigma, count=T)``. The papers compose ``T``
      peeling calls at ``(epsilon/T, delta/T)`` with Laplace noise; skdp prices
      the events with the shared accountant and calibrates one factor ``r``:
      the selections get ``selection_share * r`` and the values the rest
      (``beta = Delta_inf sqrt(T s / (2 share r))``,
      ``sigma = Delta_2,S sqrt(T / (2 (1 - share) r))``), ``r`` the largest the
      accountant prices within ``(epsilon, delta)`` (about ``rho*``, the zCDP
      budget).

    Schedule (public, fixed before the data is read): ``w_0 = 0``; step
    ``eta = 1/(phi'' K^2)`` (or ``learning_rate``); ``T = min(50, max(5,
    ceil(log2(n epsilon)) - 2))`` iterations (``max_iter``; :meth:`default_steps`), last iterate.
    Each gradient step is taken at the FISTA extrapolation
    ``w_t + ((t_k - 1)/t_(k+1)) (w_t - w_(t-1))`` of the last two releases
    (accelerated IHT, Khanna and Kyrillidis 2018): post-processing, so the
    sensitivities are unchanged; ``solver_options={"momentum": False}`` runs
    the papers' plain iteration.
    ``solver_options``: ``momentum`` (default True), ``selection_share`` (share of the budget for the
    selections, default 0.75, chosen among a few shares on sparse designs,
    :doc:`/user_guide/defaults`) and ``secure_noise`` (``delta > 0``: the
    selections by the exact exponential mechanism on grid-rounded scores and
    the values on the support by the exact discrete Gaussian on a grid, see
    :mod:`skdp.privacy.discrete`; the values' events become ``ZCDPEvent((1 -
    share) r / T, T)`` with the rounding's cost in both sensitivities; the
    exact samplers' fixed cost per draw dominates small fits,
    :doc:`/user_guide/verifying`, so an option, not the default). Run time ``O(n d)`` per iteration (one pass of
    ``X^T``; the predictions use only the at most ``2 (s + 1)`` non-zero
    coordinates of the extrapolated point), no ``d x d`` object.
    """

    name = "noisy_iht"
    source = "Cai, Wang, Zhang 2021 (noisy IHT) with Dwork, Su, Zhang 2018 peeling"
    defaults = ("T = clip(ceil(log2(n eps)) - 2, 5, 50), FISTA momentum, step 1/(phi'' K^2), Gumbel peeling, "
                "3/4 of the budget to the selections")
    card = ("L-infinity gradient clipping; Gumbel peeling and Gaussian values on the support priced by the "
            "accountant (the papers compose Laplace peeling calls at (epsilon/T, delta/T)); FISTA momentum "
            "(post-processing)")
    reference = "doc/papers/cai_wang_zhang2021.rst"
    summary = "noisy IHT: private top-s peeling of the gradient step, Gaussian noise on the s selected values"
    clip_order = np.inf
    option_keys = {"selection_share": "share of the privacy budget for the top-s selections (default 0.75)",
                   "momentum": "FISTA extrapolation between iterations (post-processing; default True)",
                   "secure_noise": "exact exponential-mechanism peeling and discrete Gaussian values on grids"}

    #: share of the privacy budget for the selections when ``solver_options`` does not set one
    selection_share = 0.75

    def check_options(self, options):
        """Keys, and the values of ``selection_share`` and ``momentum``, checked before the data is read."""
        super().check_options(options)
        self._share(options or {})
        self._momentum(options or {})

    def _share(self, options):
        return unit_interval_option(options, "selection_share", self.selection_share)

    @staticmethod
    def _momentum(options):
        momentum = options.get("momentum", True)
        if not isinstance(momentum, (bool, np.bool_)):
            raise ValueError(f"solver_options['momentum'] must be True or False, got {momentum!r}.")
        return bool(momentum)

    @staticmethod
    def default_steps(n, epsilon):
        """``T = min(50, max(5, ceil(log2(n epsilon)) - 2))``.

        Each iteration contracts the optimisation error by a constant factor
        and ``n epsilon`` sets the noise floor, so ``T`` grows like
        ``log(n epsilon)``: more iterations only add noise (``T s``
        selections), fewer leave the iterate short of the floor. The offset
        ``- 2`` was chosen among a few offsets with momentum on, which reaches
        the floor in fewer iterations (:doc:`/user_guide/defaults`).
        """
        return int(min(50, max(5, math.ceil(math.log2(max(int(n) * float(epsilon), 2.0))) - 2)))

    def steps(self, problem, budget):
        return int(problem.max_iter or self.default_steps(problem.n, budget.epsilon))

    def make_plan(self, problem, budget):
        T, s = self.steps(problem, budget), int(problem.n_nonzero)
        share = self._share(problem.options)
        eta = problem.learning_rate or problem.default_learning_rate()
        k = s + (problem.free is not None)  # released coordinates per iteration
        d_inf, d_2 = noisy_iht_sensitivities(problem.n, problem.clip, eta, k)
        secure = secure_noise_option(problem.options)
        if secure:
            secure_zcdp_rho(budget)  # the discrete Gaussian values need delta > 0
        # secure: the values are rounded to a grid, whose cost is in their sensitivity
        d_values = secure_gaussian_sensitivity(d_2, k) if secure else d_2

        def events(p):  # p = 1 / r: a larger p is more noise on both parts
            r = 1.0 / p
            eps0 = math.sqrt(8.0 * share * r / (T * s))
            if secure:  # discrete Gaussian of sigma: d_values^2 / (2 sigma^2) = (1 - share) r / T zCDP each
                return [BoundedRangeEvent(eps0, T * s), ZCDPEvent((1.0 - share) * r / T, T)]
            sigma = d_2 * math.sqrt(T / (2.0 * (1.0 - share) * r))
            return [BoundedRangeEvent(eps0, T * s), GaussianEvent(d_2, sigma, T)]

        p, _ = calibrate(events, budget.epsilon, budget.delta, relation=budget.relation,
                         initial=1.0 / zcdp_rho(budget.epsilon, budget.delta))
        selection, values = events(p)
        beta, grid = secure_selection_plan(d_inf, selection.epsilon, secure)
        sigma = d_values * math.sqrt(T / (2.0 * (1.0 - share) / p)) if secure else values.sigma
        settings = {"T": T, "learning_rate": eta, "gumbel_scale": beta, "sigma": sigma,
                    "selection_share": share, "momentum": self._momentum(problem.options), "grid": grid,
                    "secure": (d_2, values.rho) if secure else None}
        return SolverPlan((selection, values), sigma, settings)

    def run(self, problem, plan, rng):
        st = plan.settings
        T, eta, beta, sigma = st["T"], st["learning_rate"], st["gumbel_scale"], st["sigma"]
        p, s, free = problem.p, int(problem.n_nonzero), problem.free
        features = np.arange(p) if free is None else np.delete(np.arange(p), free)
        always = np.array([] if free is None else [free], dtype=int)
        w = w_prev = np.zeros(p)
        t_k = 1.0
        for _ in range(T):
            # FISTA extrapolation from the last two releases (post-processing); w itself without momentum
            t_next = (1.0 + math.sqrt(1.0 + 4.0 * t_k * t_k)) / 2.0
            point = w + ((t_k - 1.0) / t_next) * (w - w_prev) if st["momentum"] else w
            t_k = t_next
            v = gradient_step(problem, point, eta)
            support = features[peel(rng, np.abs(v[features]), s, beta, st["grid"])]
            active = np.concatenate([np.sort(support), always])
            w_prev, w = w, np.zeros(p)
            if st["secure"]:
                w[active] = secure_gaussian_release(rng, v[active], *st["secure"])[0]
            else:
                w[active] = v[active] + gaussian_noise(rng, sigma, active.size)
        info = {"learning_rate": eta, "gumbel_scale": beta, "selection_share": st["selection_share"],
                "momentum": st["momentum"]}
        return SolverResult(w, T, info)
