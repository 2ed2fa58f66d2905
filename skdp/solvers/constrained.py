"""Solvers over a norm ball: ``noisy_sfw``, ``noisy_sfw_lp``, ``dp_accmd``, ``phased_sgd``.

Each works on a :class:`~skdp.solvers.Problem` whose ``constraint`` is a
:class:`~skdp.penalties.NormBall` of public radius ``r`` (the estimator's
``coef_norm``, or ``DPLasso``'s ``radius``). Every sensitivity is for
**replace-one** neighbours with ``n`` public and uses only public constants:
the dual-norm feature bound ``R_q`` (:meth:`~skdp.solvers.PublicProblem.dual_feature_bound`), the
per-example Lipschitz constant ``L0`` and smoothness ``L1`` in the ball's
geometry (from ``|<w, x>| <= ||w|| ||x||_*`` and ``grad f = phi' x``; the
function class ``F(L0, L1)`` of Bassily, Guzman and Nandi 2021):

* logistic: ``L0 = R_q``, ``L1 = R_q^2 / 4``;
* squared with ``|y| <= B``: ``L0 = R_q (R_q r + B)``, ``L1 = R_q^2``.

When the estimator clips per-example gradients to an L2 norm ``G``, the
clipped GLM gradient is the exact gradient of a convex Huber-type surrogate
with the same smoothness, whose gradients have every dual norm ``q >= 2`` at
most ``G``; so ``L0 = min(L0, G)``. The L2 penalty ``(alpha/2)||w||^2`` is
data-independent: it is added exactly, outside the noise, and cancels in every
sensitivity.

References
----------
.. [1] R. Bassily, C. Guzmán and A. Nandi, "Non-Euclidean differentially private stochastic
   convex optimization", COLT 2021. <https://arxiv.org/abs/2103.01278>
.. [2] D. Wang, M. Ye and J. Xu, "Differentially private empirical risk minimization revisited:
   faster and more general", NeurIPS 2017. <https://arxiv.org/abs/1802.05251>
.. [3] V. Feldman, T. Koren and K. Talwar, "Private stochastic convex optimization: optimal
   rates in linear time", STOC 2020. <https://arxiv.org/abs/2005.04763>
.. [4] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy:
   analytical calibration and optimal denoising", ICML 2018. <https://arxiv.org/abs/1805.06530>
.. [5] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
"""

import math

import numpy as np

from ..losses import clip_derivatives
from ..penalties import NormBall
from ..privacy import (
    BoundedRangeEvent,
    GaussianEvent,
    ZCDPEvent,
    calibrate_bounded_range,
    calibrate_gaussian,
    GaussianNoiseSteps,
    gaussian_noise,
    generalized_gaussian_noise,
    generalized_gaussian_sigma,
)
from ..privacy.discrete import secure_gaussian_release, secure_gaussian_sensitivity
from ._base import (Solver, SolverPlan, SolverResult, batch_rows, noisy_release, register, repeated_gaussian_plan,
                    report_rows, secure_noise_option, secure_repeated_plan, secure_selection_plan, secure_zcdp_rho,
                    select)

__all__ = ["NoisySFW", "NoisySFWLp", "DPAccMD", "PhasedSGD", "glm_constants", "drain_step", "gg_geometry"]


def glm_constants(problem, ball):
    """``(R_q, L0, L1)`` of the per-example losses in the geometry of ``ball`` (see module docstring)."""
    q = ball.q
    Rq = problem.dual_feature_bound(q)
    loss = problem.loss
    # |<w, x>| <= ||w||_p ||x||_q on the ball: what the squared loss's derivative bound needs
    dmax = loss.derivative_bound(problem.label_bound, ball.radius, Rq)
    L0 = Rq * dmax
    if problem.clip is not None:
        L0 = min(L0, float(problem.clip))
    L1 = loss.curvature * Rq**2
    # a row of weight <= W (public) has W times the per-example constants
    return Rq, problem.weight_bound * L0, problem.weight_bound * L1


def _first_batch_gradient(problem, rows):
    """Mean clipped per-example gradient at ``w = 0`` over ``rows``, without copying them.

    At ``w = 0`` every linear predictor is 0, so one product ``X^T v`` with
    ``v`` zero outside ``rows`` gives the batch gradient (same value as
    :meth:`Problem.mean_gradient` on the rows; cheaper than gathering half of X).
    """
    n = problem.n
    report_rows(problem, rows.size)
    v = np.zeros(n)
    y = problem.y[rows]
    S = problem.loss.derivative(np.zeros(rows.size), y)
    if problem.clip is not None:
        S = clip_derivatives(S, problem.norms[rows], problem.clip)
    v[rows] = problem.weigh(S, rows)
    return np.asarray(problem.X.T @ v) / rows.size


def _batch_gradients(problem, rows, w1, w0):
    """Mean clipped per-example gradients over ``rows`` at ``w1`` and at ``w0`` (one gather, one product)."""
    report_rows(problem, 2 * rows.size)
    Xb = batch_rows(problem.X, rows)
    y = problem.y[rows]
    S = problem.loss.derivative(Xb @ np.column_stack([w1, w0]), y[:, None])
    if problem.clip is not None:
        S = clip_derivatives(S, problem.norms[rows], problem.clip)
    S = problem.weigh(S, rows)
    G = np.asarray(Xb.T @ S) / rows.size
    return G[:, 0], G[:, 1]


class _BallSolver(Solver):
    requires = frozenset({"smooth", "scalar"})

    def make_constraint(self, options, radius):
        return NormBall(self.ball_p(options or {}), radius)

    def ball_p(self, options):
        return 1.0 if self.geometry == "l1" else 2.0

    def _ball(self, problem):
        ball = problem.constraint
        if ball is None:  # pragma: no cover - the estimators always build it
            raise ValueError(f"solver={self.name!r} needs a constraint set (a coefficient radius).")
        return ball

    @staticmethod
    def _grad(problem, w, rows):
        return problem.mean_gradient(w, rows=rows, n_total=len(rows))

    @staticmethod
    def _grad_difference(problem, w1, w0, rows):
        """``_grad(problem, w1, rows) - _grad(problem, w0, rows)`` from one gather of the rows."""
        return problem.batch_gradient_difference(w1, w0, rows, len(rows))


# ---------------------------------------------------------------------------------------
# noisy_sfw: polyhedral one-pass stochastic Frank-Wolfe with Gumbel report-noisy-max
# ---------------------------------------------------------------------------------------
@register
class NoisySFW(_BallSolver):
    """``noisy_sfw``: one-pass variance-reduced stochastic Frank-Wolfe over the L1 ball.

    Bassily, Guzman and Nandi 2021, Alg. 2 (private polyhedral stochastic
    Frank-Wolfe) with skdp's calibration (see :doc:`/papers/bassily_guzman_nandi2021`):
    each linear-minimisation step picks a vertex ``+-r e_j`` of the L1 ball by
    **Gumbel report-noisy-max** (the exponential mechanism, ``eps0``-bounded
    range, hence ``eps0^2/8``-zCDP), and the ``T`` selections are composed by
    the shared accountant; ``eps0`` is the largest value whose composition it
    prices at the target. The paper's Laplace noise with advanced composition
    (which overshoots the stated ``epsilon``: 1.027 for a target of 1 at
    ``n = 10^4``) is not offered.

    One pass over a data-independent random permutation: the first
    ``ceil(n/2)`` rows give the initial gradient; then each step ``t`` takes a
    fresh disjoint mini-batch of ``b`` rows and updates the estimate
    ``g_t = (1 - eta)(g_{t-1} + D_t) + eta G_t``, with ``G_t`` the batch
    gradient at ``x_t`` and ``D_t`` the batch difference between ``x_t`` and
    ``x_{t-1}`` (Eq. (6) with ``rho_t = eta``); the vertex is chosen on
    ``g_t + alpha x_t`` and ``x_{t+1} = (1 - eta) x_t + eta v_t``; the last
    iterate is returned. ``b = 1`` is the paper's one-sample algorithm; a
    larger ``b`` (the default, chosen so that ``T`` is about 200) is an skdp
    extension that keeps the vertex-selection noise the same per unit of data
    and makes the pass vectorised. The sensitivity of Lemma 6.1, re-derived for
    a batch of ``b`` on the L1 ball of radius ``r`` (vertex radius ``r``
    rather than the paper's ``D``, about half its ``s_t``; replace-one): the
    initial vertex scores move by ``Delta_0 = 2 r L0 / |B|``; step ``t``'s by
    ``Delta_t = r max((1 - eta)^t 2 L0 / |B|, (2/b) eta (L0 + (1 - eta) L1 D))``
    with ``D = 2 r``, for every history. The Gumbel scale of step ``t`` is
    ``2 Delta_t / eps0``.

    Step size ``eta = ln(N / ln J) / N`` with ``N = n / b`` and ``J = 2 p``
    vertices (the paper's step size, with ``N = n`` for ``b = 1``), capped at 1/2.
    Smooth losses only (logistic, squared on the ball).

    Where it pays off: the vertex-selection noise scale is about
    ``r (L0 + L1 D) ln N / (eps sqrt(n b))``, so ``noisy_sfw`` needs a large
    ``n * epsilon`` relative to the radius and the smoothness; its dimension
    dependence is only ``log d``. On a few hundred rows (breast_cancer) the
    selections are close to uniform and ``dp_gd`` or ``noisy_sgd`` are better
    choices (:doc:`/benchmarks`).

    ``solver_options``: ``batch_size`` (``b``) and ``secure_noise`` (every
    selection by the exact exponential mechanism on scores rounded to a
    power-of-two grid, :func:`skdp.privacy.discrete.exponential_mechanism`:
    the same ``eps0``-bounded-range events, step ``t``'s scale
    ``2 (Delta_t + gamma_t) / eps0`` with the grid ``gamma_t <= Delta_t / 1000``,
    so at most 0.1% more noise; the exact draws' fixed cost dominates small
    fits, :doc:`/user_guide/verifying`, so an option, not the default).
    """

    name = "noisy_sfw"
    card = "Alg. 2 with Gumbel report-noisy-max composed in zCDP instead of Laplace + advanced composition"
    reference = "doc/papers/bassily_guzman_nandi2021.rst"
    source = "Bassily, Guzman, Nandi 2021, Alg. 2"
    geometry = "l1"
    summary = "one-pass variance-reduced stochastic Frank-Wolfe on the L1 ball, Gumbel report-noisy-max"
    defaults = "b = max(1, round(n/400)) rows per step (T ~ 200 steps), eta = ln(N/ln 2p)/N, x_0 = 0"
    option_keys = {"batch_size": "rows per Frank-Wolfe step (1 = the paper's one-sample algorithm)",
                   "secure_noise": "exact exponential-mechanism selections on grid-rounded scores"}

    def schedule(self, problem):
        n = problem.n
        first = int(math.ceil(n / 2))
        b = problem.options.get("batch_size")
        b = int(b) if b is not None else max(1, int(round(n / 400)))
        if b < 1:
            raise ValueError(f"batch_size must be >= 1, got {b!r}.")
        b = min(b, max(1, n - first))
        T = 1 + (n - first) // b
        N = n / b
        J = 2 * problem.p
        # the paper's eta = ln(N / ln J) / N, at least 1/N (tiny N) and at most 1/2
        eta = min(0.5, max(1.0, math.log(N / math.log(J))) / N)  # J >= 2, so ln J > 0
        return first, b, T, eta

    def sensitivities(self, problem, first, b, T, eta):
        """Score sensitivities ``Delta_0 .. Delta_{T-1}`` (public: ``n``, bounds, schedule)."""
        ball = self._ball(problem)
        _, L0, L1 = glm_constants(problem, ball)
        r, D = ball.radius, ball.diameter
        t = np.arange(T)
        first_part = (1 - eta) ** t * 2 * L0 / first
        step_part = (2.0 / b) * eta * (L0 + (1 - eta) * L1 * D)
        sens = r * np.maximum(first_part, np.where(t == 0, 0.0, step_part))
        return sens

    def make_plan(self, problem, budget):
        first, b, T, eta = self.schedule(problem)
        eps0 = calibrate_bounded_range(T, budget.epsilon, budget.delta, budget.relation)
        secure = secure_noise_option(problem.options)
        plans = [secure_selection_plan(s, eps0, secure) for s in self.sensitivities(problem, first, b, T, eta)]
        scales = np.array([scale for scale, _ in plans])
        return SolverPlan((BoundedRangeEvent(eps0, T),), float(scales.max()),
                          {"first": first, "b": b, "T": T, "eta": eta, "eps0": eps0, "scales": scales,
                           "grids": [grid for _, grid in plans]})

    def run(self, problem, plan, rng):
        ball = self._ball(problem)
        n, p = problem.n, problem.p
        first, b, T, eta, eps0, scales = (plan.settings[k] for k in ("first", "b", "T", "eta", "eps0", "scales"))
        alpha = problem.penalty.alpha
        r = ball.radius
        order = rng.permutation(n)
        x = np.zeros(p)
        g = _first_batch_gradient(problem, order[:first])
        pos = first
        x_prev = x
        for t in range(T):
            if t > 0:
                rows = order[pos:pos + b]
                pos += b
                g_new, g_old = _batch_gradients(problem, rows, x, x_prev)
                g = (1 - eta) * (g + g_new - g_old) + eta * g_new
            h = g + alpha * x
            j = select(rng, np.concatenate([-r * h, r * h]), scales[t], plan.settings["grids"][t])
            x_prev = x
            x = (1 - eta) * x
            x[j % p] += eta * (r if j < p else -r)
        info = {"batch_size": b, "learning_rate": eta, "selection_epsilon": eps0, "radius": r,
                "passes": (first + 2 * (T - 1) * b) / n}
        return SolverResult(x, T, info)


# ---------------------------------------------------------------------------------------
# noisy_sfw_lp: tree-based variance-reduced Frank-Wolfe, generalized Gaussian noise
# ---------------------------------------------------------------------------------------
def gg_geometry(q, d):
    """``(r, kappa)``: the smooth norm ``||.||_r`` to sample from and its regularity constant.

    Kappa-regularity as used by Bassily, Guzman and Nandi 2021 (section 2 and
    Cor. 3.3): the dual space ``l_q`` (``q >= 2``) is ``kappa``-regular either with
    ``||.||_+ = ||.||_q`` (``kappa = q - 1``) or, for large ``q``, with
    ``||.||_+ = ||.||_r``, ``r = 2 ln d + 1`` (``kappa = 2 e ln d``, the factor
    ``e`` bounding ``||x||_r^2 / ||x||_q^2``). Sampling and ``kappa`` must
    use the same norm, so we return the pair with the smaller ``kappa``.
    """
    if q == 2.0:
        return 2.0, 1.0
    if d >= 2 and q - 1.0 > 2 * math.e * math.log(d):
        return 2 * math.log(d) + 1.0, 2 * math.e * math.log(d)
    return q, q - 1.0


@register
class NoisySFWLp(_BallSolver):
    """``noisy_sfw_lp``: noisy variance-reduced (binary-tree) stochastic Frank-Wolfe on an l_p ball, 1 < p <= 2.

    Bassily, Guzman and Nandi 2021, Alg. 1, with the generalized Gaussian
    mechanism of their section 3 calibrated by skdp (the paper's constant is
    not recoverable from the text; see :doc:`/papers/bassily_guzman_nandi2021`).
    ``T`` phases; phase ``t`` is a complete binary tree of depth ``t`` visited in
    depth-first pre-order. The root draws ``b`` fresh rows and releases their
    mean gradient plus GG noise; a left child inherits its parent; a right
    child at depth ``j`` draws ``b / 2^j`` fresh rows at the current iterate and
    releases the parent's estimate plus the batch's gradient difference
    (current iterate minus the parent's) plus GG noise; each leaf takes a
    Frank-Wolfe step with ``eta = 2/(2^t + i)`` (exact LMO, no extra noise).
    Every row is used in exactly one vertex, so by parallel composition the
    whole run is as private as one release.

    Sensitivities (dual norm ``q = p/(p-1)``, replace-one): ``2 L0 / b`` at a
    root; ``(2/|B_s|) min(L1 D sum eta_l, 2 L0)`` at a right child, the sum
    over the leaves of its left sibling's subtree (the iterate moved by at
    most ``D sum eta_l``; ``D = 2 r``), computed from the actual step sizes
    (skdp's exact form of the paper's depth-independent bound).
    Each release gets GG noise ``sigma_v = s_v sqrt(kappa / (2 rho*))``
    (:func:`skdp.privacy.generalized_gaussian_sigma`), so each, and the run,
    is ``rho*``-zCDP with ``rho*`` the largest level the accountant prices at
    ``(epsilon, delta)``. ``p = 2`` is Gaussian noise on an L2 ball.

    Defaults (skdp's choice; the paper's Thm 5.2 gives only orders): ``b`` the largest
    power of two with
    ``b T (T + 5) / 4 <= n`` for ``T = log2 b`` (so leaves get one row).
    ``solver_options``: ``p`` (default 2), ``batch_size`` (root batch, a
    power of two), ``n_phases``.
    """

    name = "noisy_sfw_lp"
    card = "Alg. 1 with the generalized Gaussian scale from the tight zCDP conversion, exact sensitivities"
    reference = "doc/papers/bassily_guzman_nandi2021.rst"
    source = "Bassily, Guzman, Nandi 2021, Alg. 1"
    geometry = "lp"
    summary = "tree-based variance-reduced stochastic Frank-Wolfe on an l_p ball (1 < p <= 2), generalized Gaussian"
    defaults = "p = 2, b = 2^m, T = m phases with b m (m + 5)/4 <= n, eta = 2/(2^t + i), x_0 = 0"
    option_keys = {
        "p": "ball exponent, 1 < p <= 2",
        "batch_size": "root batch size b (a power of two)",
        "n_phases": "number of phases T",
    }
    secure_noise_refusal = ("its noise is the generalized Gaussian of Bassily, Guzman, Nandi 2021, which has no "
                            "exact discrete sampler whose guarantee the accountant prices")

    def ball_p(self, options):
        p = float(options.get("p", 2.0))
        if not 1.0 < p <= 2.0:
            raise ValueError(f"solver_options['p'] must be in (1, 2] for noisy_sfw_lp, got {p!r}.")
        return p

    def schedule(self, problem):
        n = problem.n
        b, T = problem.options.get("batch_size"), problem.options.get("n_phases")
        if b is None and T is None:
            m = 1
            while 2 ** (m + 1) * (m + 1) * (m + 6) / 4 <= n:
                m += 1
            b, T = 2**m, m
        elif b is None:
            T = int(T)
            b = 2**T
        elif T is None:
            b = int(b)
            T = max(1, int(math.log2(b)))
        b, T = int(b), int(T)
        if T < 1 or b < 2**T:
            raise ValueError(f"noisy_sfw_lp needs n_phases >= 1 and batch_size >= 2^n_phases, got b={b}, T={T}.")
        if b * T * (T + 5) / 4 > n:
            raise ValueError(
                f"noisy_sfw_lp with batch_size={b} and n_phases={T} needs b T (T + 5)/4 = "
                f"{b * T * (T + 5) / 4:.0f} rows, more than n_samples={n}."
            )
        return b, T

    def make_plan(self, problem, budget):
        b, T = self.schedule(problem)
        r_gg, kappa = gg_geometry(self._ball(problem).q, problem.p)
        unit_sigma, rho = generalized_gaussian_sigma(1.0, kappa, budget.epsilon, budget.delta)
        # noise_scale_: run reports the largest release's scale (sensitivity x unit_sigma, public)
        return SolverPlan((ZCDPEvent(rho),), unit_sigma,
                          {"b": b, "T": T, "r_gg": r_gg, "kappa": kappa, "unit_sigma": unit_sigma})

    def run(self, problem, plan, rng):
        ball = self._ball(problem)
        n, d = problem.n, problem.p
        b, T, r_gg, kappa, unit_sigma = (plan.settings[k] for k in ("b", "T", "r_gg", "kappa", "unit_sigma"))
        _, L0, L1 = glm_constants(problem, ball)
        D = ball.diameter
        alpha = problem.penalty.alpha
        order = rng.permutation(n)
        state = {"x": np.zeros(d), "pos": 0, "leaf": 0, "max_sigma": 0.0, "releases": 0, "steps": 0}
        # r = 2 (p = 2): the generalized Gaussian is N(0, sigma^2 I); the standard normals of the 2^(T+1) - 2
        # releases are drawn by chunks, each release scaling its own (the same law as one draw per release)
        gaussian = GaussianNoiseSteps(rng, 2 ** (T + 1) - 2, d) if r_gg == 2.0 else None

        def take(k):
            rows = order[state["pos"]:state["pos"] + k]
            state["pos"] += k
            return rows

        def noise(sens):
            sigma = sens * unit_sigma
            state["max_sigma"] = max(state["max_sigma"], sigma)
            state["releases"] += 1
            return gaussian.draw(sigma) if gaussian is not None else generalized_gaussian_noise(rng, sigma, d, r_gg)

        def visit(t, j, x_s, g_s):
            if j == t:  # leaf: Frank-Wolfe step
                eta = 2.0 / (2**t + state["leaf"])
                state["leaf"] += 1
                x = state["x"]
                state["x"] = (1 - eta) * x + eta * ball.lmo(g_s + alpha * x)
                state["steps"] += 1
                return
            start = state["leaf"]
            visit(t, j + 1, x_s, g_s)  # left child: inherits, no data, no noise
            eta_sum = sum(2.0 / (2**t + i) for i in range(start, start + 2 ** (t - j - 1)))
            size = b // 2 ** (j + 1)
            rows = take(size)
            x_r = state["x"].copy()
            sens = (2.0 / size) * min(L1 * D * eta_sum, 2 * L0)
            diff = self._grad_difference(problem, x_r, x_s, rows)
            visit(t, j + 1, x_r, g_s + diff + noise(sens))

        for t in range(1, T + 1):
            x_root = state["x"].copy()
            g = self._grad(problem, x_root, take(b)) + noise(2.0 * L0 / b)
            visit(t, 0, x_root, g)
        info = {"batch_size": b, "n_phases": T, "p": ball.p, "kappa": kappa, "gg_norm": r_gg,
                "rows_used": state["pos"], "releases": state["releases"], "fw_steps": state["steps"]}
        return SolverResult(state["x"], T, info, noise_scale=state["max_sigma"])


# ---------------------------------------------------------------------------------------
# dp_accmd: accelerated mirror descent, one noisy gradient per iteration
# ---------------------------------------------------------------------------------------
def drain_step(h, u, L):
    """Exact ``argmin_{v in simplex} (L/2) ||v - u||_1^2 + <h, v - u>`` in O(m log m).

    The y-step of Wang, Ye and Xu 2017, Alg. 3, on the lifted simplex (its
    coefficients are garbled in print; solved exactly here): move
    mass to the coordinate ``j*`` of smallest ``h`` from the others in
    decreasing order of ``h`` while the marginal gain ``h_k - h_{j*}`` exceeds
    ``4 L`` times the mass moved so far.
    """
    h = np.asarray(h, dtype=float)
    u = np.asarray(u, dtype=float)
    js = int(np.argmin(h))
    others = np.delete(np.arange(h.size), js)
    order = others[np.argsort(-h[others], kind="stable")]
    s = h[order] - h[js]
    mass = u[order]
    cum = np.cumsum(mass)
    ok = (4 * L * cum <= s) & (s > 0)
    k0 = int(np.argmin(ok)) if not ok.all() else ok.size
    v = u.copy()
    v[order[:k0]] = 0.0
    moved = float(cum[k0 - 1]) if k0 > 0 else 0.0
    if k0 < ok.size and s[k0] > 0:
        extra = max(moved, s[k0] / (4 * L)) - moved
        extra = min(extra, mass[k0])
        v[order[k0]] -= extra
        moved += extra
    v[js] += moved
    return v


#: dp_accmd: default number of iterations
_ACCMD_STEPS = 100
#: dp_accmd: kappa of the noise-damped smoothness ``max(L, kappa sigma T^1.5 / r)``
_ACCMD_DAMPING = 0.1


@register
class DPAccMD(_BallSolver):
    """``dp_accmd``: DP accelerated mirror descent (linear coupling) over an L1 or L2 ball.

    Wang, Ye and Xu 2017, Alg. 3, with a **mandatory privacy correction**
    (see :doc:`/papers/wang_ye_xu2017`): as printed, the gradient step uses the
    exact gradient and the output reveals it, so the algorithm is not private.
    Here each iteration draws **one** noisy full gradient
    ``g~ = grad F(x_{k+1}) + N(0, sigma^2 I)`` and uses it in both the
    gradient step and the mirror step. ``T`` full-batch releases of a mean of
    per-example gradients bounded by ``G`` (L2): replace-one sensitivity
    ``2G/n`` each, priced exactly as Gaussian DP (Dong-Roth-Su 2022, Cor. 3.3),
    ``sigma = 2 G sqrt(T) / (n mu*)``. ``solver_options={"secure_noise": True}``
    (``delta > 0``) releases each mean gradient floating-point safely instead
    (:func:`skdp.solvers._base.secure_repeated_plan`: a power-of-two grid and
    exact discrete Gaussian noise, ``rho / T``-zCDP each; somewhat more noise,
    from the zCDP conversion, and slower draws, :doc:`/user_guide/verifying`,
    so an option, not the default).

    Geometries (skdp's instantiations of the paper's mirror maps): ``"l1"`` runs on the lifted
    simplex ``x = r (u_+ - u_-)`` with the entropy mirror map (exponentiated
    gradient z-step, exact "drain" y-step, ``L_H = L r^2``); ``"l2"`` uses the
    Euclidean map (projections; ``L_C = 4 L r^2``). ``alpha_k = (k + 2)/(4 L_C)``
    (the smoothness in the mirror map's norm; the printed coefficient is
    ambiguous). Returns ``y_T``.

    Constants (:meth:`constants`): ``G`` is the smaller of the problem's
    gradient bound and ``K2 (R_q r + B)`` for the squared loss, from
    ``|<w, x>| <= ||w||_p ||x||_q`` on the ball where every gradient is taken
    (for :class:`~skdp.DPLasso`, whose coordinate bound ``R`` gives
    ``R_inf = R``, this is ``sqrt(p)`` times smaller than ``K2 (K2 r + B)``;
    elsewhere unchanged). ``L`` is the smoothness in the dual norm
    (``R_inf^2`` rather than ``K2^2 = p R^2`` under a coordinate bound).

    Schedule (skdp's choice, fixed before the data is read): ``T = 100``
    and the steps use the noise-damped smoothness
    ``L_eff = max(L, 0.1 sigma T^1.5 / r)``, with ``sigma`` the calibrated
    noise std. Why: with noisy gradients the accelerated method's error is
    about ``L_eff r^2 ln(2p) / T^2 + T r^2 sigma^2 ln(2p) / (L_eff r^2)``;
    the damping balances the two, and since ``sigma`` grows like
    ``sqrt(T)`` at a fixed budget the noise term then no longer grows with
    ``T``, so ``T`` can be large enough for the noiseless error to vanish
    (``L_eff -> L`` as ``n epsilon -> inf``). ``kappa = 0.1`` and ``T = 100``
    were chosen on ``DPLasso`` (diabetes and sparse designs, epsilon 0.5 to
    100; :doc:`/user_guide/defaults`): a larger ``kappa`` damps the steps so
    much that the fit under-fits, a smaller one lets the noise through.
    Step sizes
    never enter a sensitivity: the privacy proof (``T`` Gaussian releases of
    sensitivity ``2G/n``) is unchanged.

    ``solver_options``: ``geometry`` (``"l1"`` default, or ``"l2"``).
    """

    name = "dp_accmd"
    card = "Alg. 3 corrected to draw one noisy gradient per iteration for both steps, exact Gaussian-DP calibration"
    reference = "doc/papers/wang_ye_xu2017.rst"
    source = "Wang, Ye, Xu 2017, Alg. 3"
    geometry = "l1|l2"
    summary = "accelerated mirror descent on an L1 (entropic) or L2 ball, one Gaussian gradient per step"
    defaults = "geometry l1, T = 100, steps with L_eff = max(L, 0.1 sigma T^1.5 / r), x_0 = 0"
    option_keys = {"geometry": "'l1' (default) or 'l2'",
                   "secure_noise": "round every gradient to a power-of-two grid and add exact discrete Gaussian "
                                   "noise (zCDP)"}

    def ball_p(self, options):
        geometry = options.get("geometry", "l1")
        if geometry not in ("l1", "l2"):
            raise ValueError(f"solver_options['geometry'] must be 'l1' or 'l2', got {geometry!r}.")
        return 1.0 if geometry == "l1" else 2.0

    def constants(self, problem):
        """``(G, L)``: the per-example L2 gradient bound and the smoothness in the ball's norm.

        ``G`` is the smaller of :attr:`~skdp.solvers.PublicProblem.gradient_bound` and
        ``K2 * dmax``, with ``K2`` the public L2 row bound and ``dmax`` the
        derivative bound from ``|<w, x>| <= ||w||_p ||x||_q`` on the ball
        (:func:`glm_constants`); both bound every clipped per-example gradient
        on the ball, where every gradient is taken. ``L`` is the smoothness of
        the mean loss from the dual norm ``||x||_q`` (``L1`` of
        :func:`glm_constants`; the same as :attr:`~skdp.solvers.PublicProblem.smoothness` unless a
        coordinate bound is known), plus ``alpha``. ``L`` sets only the step
        sizes, never the noise.
        """
        ball = self._ball(problem)
        Rq, _, L1 = glm_constants(problem, ball)
        dmax = problem.loss.derivative_bound(problem.label_bound, ball.radius, Rq)
        G = min(problem.gradient_bound, problem.weight_bound * problem.dual_feature_bound(2.0) * dmax)
        return G, min(L1, problem.smoothness) + problem.penalty.alpha

    def steps(self, problem, budget):
        if problem.max_iter:
            return int(problem.max_iter)
        return _ACCMD_STEPS

    @staticmethod
    def damped_smoothness(L, sigma, T, r):
        """``L_eff = max(L, kappa sigma T^1.5 / r)``: the smoothness the steps use (public: plan and bounds)."""
        return max(L, _ACCMD_DAMPING * sigma * T**1.5 / r)

    def noise_std(self, problem, budget, T):
        return repeated_gaussian_plan(2 * self.constants(problem)[0] / problem.n, T, budget).noise_scale

    def make_plan(self, problem, budget):
        G = self.constants(problem)[0]
        if secure_noise_option(problem.options):
            return secure_repeated_plan(2 * G / problem.n, self.steps(problem, budget), budget, problem.p)
        return repeated_gaussian_plan(2 * G / problem.n, self.steps(problem, budget), budget)

    def run(self, problem, plan, rng):
        ball = self._ball(problem)
        T, sigma = plan.settings["T"], plan.settings["sigma"]
        alpha_pen = problem.penalty.alpha
        L = self.constants(problem)[1]
        L = self.damped_smoothness(L, sigma, T, ball.radius)
        r = ball.radius
        p = problem.p

        secure = plan.settings.get("secure")

        def noisy_grad(x):
            if secure:  # the mean gradient is the release; the penalty's gradient is public
                return noisy_release(rng, problem.mean_gradient(x), sigma, secure) + alpha_pen * x
            return problem.mean_gradient(x) + alpha_pen * x + gaussian_noise(rng, sigma, p)

        if ball.p == 1.0:
            LH = L * r * r
            y = np.full(2 * p, 1.0 / (2 * p))
            logz = np.zeros(2 * p)
            z = y.copy()
            for k in range(T):
                a = (k + 2) / (4 * LH)
                rk = 2.0 / (k + 2)
                u = rk * z + (1 - rk) * y
                g = noisy_grad(r * (u[:p] - u[p:]))
                h = r * np.concatenate([g, -g])
                y = drain_step(h, u, LH)
                logz = logz - a * h
                logz -= logz.max()
                z = np.exp(logz)
                z /= z.sum()
            coef = r * (y[:p] - y[p:])
        else:
            LC = 4 * L * r * r
            y = np.zeros(p)
            z = np.zeros(p)
            for k in range(T):
                a = (k + 2) / (4 * LC)
                rk = 2.0 / (k + 2)
                x = rk * z + (1 - rk) * y
                g = noisy_grad(x)
                y = ball.project(x - g / (4 * L))
                z = ball.project(z - a * r * r * g)
            coef = y
        return SolverResult(coef, T, {"geometry": "l1" if ball.p == 1.0 else "l2", "radius": r})


# ---------------------------------------------------------------------------------------
# phased_sgd: Feldman-Koren-Talwar phased SGD with output noise per phase
# ---------------------------------------------------------------------------------------
@register
class PhasedSGD(_BallSolver):
    """``phased_sgd``: phased one-pass projected SGD with Gaussian noise on each phase's average.

    Feldman, Koren and Talwar 2020, Alg. 2 (the baseline of Bassily, Guzman
    and Nandi 2021, section 7), with the analytic Gaussian calibration of
    Balle and Wang 2018 (see :doc:`/papers/bassily_guzman_nandi2021`). Phase ``i = 1..k``
    (``k = ceil(log2 n)``) runs one pass of projected SGD on ``n_i = floor(2^-i n)`` fresh rows with step ``eta_i =
    4^-i eta``, from the previous phase's noisy output, and releases the
    average iterate plus ``N(0, sigma_i^2 I)``. Why this is private (we
    re-derived it rather than relying on a recollection of FKT20's constant): the
    rows of different phases are disjoint, so only the phase holding the
    differing row depends on it (parallel composition); within it, the
    projected gradient step with ``eta_i <= 2/(beta + alpha)`` is
    non-expansive for a convex ``beta``-smooth loss, so two runs differ by at
    most ``2 G eta_i`` from the step that reads the differing row on, and so
    does their average (uniform stability, replace-one). Each phase's noise is
    the analytic Gaussian for sensitivity ``2 G eta_i`` at the full
    ``(epsilon, delta)``; the run is priced as that one release.

    skdp extension: steps read disjoint mini-batches of ``m`` rows with step
    ``m eta_i`` on the batch mean, which has the same sensitivity ``2 G eta_i``
    and makes the pass vectorised (``m = 1`` is the paper). The constraint is
    the L2 ball of radius ``r`` (the only geometry whose projection we ship;
    the baseline's use for ``p > 2`` maps the ball to l2). ``eta`` defaults to
    ``(D/G) min(4/sqrt(n), eps/sqrt(d ln(1/delta)))``, capped at the
    stability limit; a larger ``eta`` raises.

    ``solver_options``: ``batch_size`` (``m``), ``learning_rate`` (``eta``) and
    ``secure_noise`` (``delta > 0``: each phase's average on a power-of-two
    grid with exact discrete Gaussian noise,
    :func:`skdp.privacy.discrete.secure_gaussian_release`; the run is one
    ``rho``-zCDP release, ``rho`` the budget's zCDP level, the rounding's cost
    in every phase's sensitivity; somewhat more noise, from the zCDP
    conversion, and slower draws, :doc:`/user_guide/verifying`, so an option,
    not the default).
    """

    name = "phased_sgd"
    card = "FKT20 Alg. 2 with the privacy argument re-derived and the analytic Gaussian per phase"
    reference = "doc/papers/bassily_guzman_nandi2021.rst"
    source = "Feldman, Koren, Talwar 2020, Alg. 2 (baseline in Bassily, Guzman, Nandi section 7)"
    geometry = "l2"
    requires = frozenset({"smooth", "scalar"})
    summary = "phased one-pass projected SGD, Gaussian noise on each phase's average (parallel composition)"
    defaults = "k = ceil(log2 n) phases, n_i = n/2^i, eta_i = eta/4^i, m = max(1, round(sqrt(n)/8))"
    option_keys = {"batch_size": "rows per SGD step (1 = the paper)", "learning_rate": "base step eta",
                   "secure_noise": "release each phase's average on a power-of-two grid with exact discrete "
                                   "Gaussian noise (zCDP)"}

    def learning_rate(self, problem, budget):
        """Base step ``eta``; the largest step taken, ``m eta / 4``, must be ``<= 2/(beta + alpha)``."""
        limit = 2.0 / (problem.smoothness + problem.penalty.alpha)
        _, m = self.schedule(problem)
        eta = problem.options.get("learning_rate")
        if eta is None:
            D = self._ball(problem).diameter
            G = problem.gradient_bound
            n, d = problem.n, problem.p
            eta = (D / G) * min(4 / math.sqrt(n), budget.epsilon / math.sqrt(d * math.log(1 / budget.delta)))
            return min(eta, 4 * limit / m)
        eta = float(eta)
        if not 0 < eta * m / 4 <= limit:
            raise ValueError(
                f"phased_sgd needs 0 < batch_size * learning_rate / 4 <= 2/(beta + alpha) = {limit:.4g} "
                f"(non-expansive steps are what bound its sensitivity), got learning_rate={eta!r}."
            )
        return eta

    def schedule(self, problem):
        n = problem.n
        k = max(1, int(math.ceil(math.log2(n))))
        sizes = [n // 2**i for i in range(1, k + 1)]
        sizes = [s for s in sizes if s >= 1] or [n]
        m = problem.options.get("batch_size")
        m = int(m) if m is not None else max(1, int(round(math.sqrt(n) / 8)))
        if m < 1:
            raise ValueError(f"batch_size must be >= 1, got {m!r}.")
        return sizes, m

    def noise(self, problem, budget, eta):
        """(sensitivity, sigma) of phase 1; phase i scales both by 4^-(i-1)."""
        sens = 2 * problem.gradient_bound * eta / 4
        return sens, calibrate_gaussian(sens**2, budget.epsilon, budget.delta)

    def make_plan(self, problem, budget):
        eta = self.learning_rate(problem, budget)
        sens, sigma = self.noise(problem, budget, eta)
        if secure_noise_option(problem.options):
            # phase i releases its average (sensitivity sens / 4^(i-1)) rho-zCDP, the rounding's cost included;
            # one changed row is in one phase, the others are post-processing: one rho-zCDP release in all
            rho = secure_zcdp_rho(budget)
            sigma = secure_gaussian_sensitivity(sens, problem.p) / math.sqrt(2.0 * rho)
            return SolverPlan((ZCDPEvent(rho),), sigma, {"eta": eta, "sigma1": sigma, "secure": (sens, rho)})
        return SolverPlan((GaussianEvent(sens, sigma, 1),), sigma, {"eta": eta, "sigma1": sigma})

    def run(self, problem, plan, rng):
        ball = self._ball(problem)
        sizes, m = self.schedule(problem)
        eta, sigma1 = plan.settings["eta"], plan.settings["sigma1"]
        alpha = problem.penalty.alpha
        order = rng.permutation(problem.n)
        w = np.zeros(problem.p)
        pos = 0
        for i, n_i in enumerate(sizes, start=1):
            eta_i = eta / 4**i
            rows = order[pos:pos + n_i]
            pos += n_i
            mi = min(m, n_i)
            step = mi * eta_i
            avg = np.zeros_like(w)
            n_steps = n_i // mi
            for s in range(n_steps):
                batch = rows[s * mi:(s + 1) * mi]
                w = ball.project(w - step * (self._grad(problem, w, batch) + alpha * w))
                avg += w
            secure = plan.settings.get("secure")
            if secure:
                w = secure_gaussian_release(rng, avg / n_steps, secure[0] / 4 ** (i - 1), secure[1])[0]
            else:
                w = avg / n_steps + gaussian_noise(rng, sigma1 / 4 ** (i - 1), w.shape)
        coef = ball.project(w)
        info = {"phases": len(sizes), "batch_size": m, "learning_rate": eta}
        return SolverResult(coef, len(sizes), info)
