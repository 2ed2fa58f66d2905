"""Gradient-perturbation solvers: ``dp_gd`` and ``dp_svrg``.

References
----------
.. [1] D. Wang, M. Ye and J. Xu, "Differentially private empirical risk minimization revisited:
   faster and more general", NeurIPS 2017. <https://arxiv.org/abs/1802.05251>
.. [2] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
.. [3] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
   privacy", NeurIPS 2020. <https://arxiv.org/abs/2004.00010>
.. [4] I. Mironov, "On significance of the least significant bits for differential privacy", ACM
   CCS 2012.
.. [5] I. Mironov, K. Talwar and L. Zhang, "Rényi differential privacy of the sampled Gaussian
   mechanism", arXiv preprint, 2019. <https://arxiv.org/abs/1908.10530>
"""

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..losses import get_loss
from ..privacy import (
    GaussianEvent,
    PoissonGaussianEvent,
    calibrate,
    calibrate_gaussian,
    gaussian_noise,
    gaussian_noise_steps,
    gdp_mu,
    price,
)
from ._base import (
    Solver,
    SolverPlan,
    SolverResult,
    noisy_release,
    register,
    repeated_gaussian_plan,
    secure_repeated_plan,
)

__all__ = ["DPGradientDescent", "DPSVRG", "DPSVRGPlusPlus"]


@register
class DPGradientDescent(Solver):
    """``dp_gd``: noisy full-batch (proximal) gradient descent.

    Wang, Ye and Xu 2017, Alg. 4, with the exact Gaussian-DP calibration in
    place of the paper's constant (see :doc:`/papers/wang_ye_xu2017`). Each of
    ``T = max_iter`` steps releases the mean
    of the per-example gradients (each of norm ``<= G``; clipped to ``G`` when
    the loss is not globally Lipschitz) plus ``N(0, sigma^2 I)``. Under
    replace-one with public ``n`` the mean moves by at most ``Delta = 2G/n``, so
    the ``T`` steps are exactly ``mu``-GDP with ``mu = sqrt(T) Delta / sigma``;
    ``sigma`` is the smallest value for which the accountant prices this at the
    target, ``sigma = 2 G sqrt(T) / (n mu*(epsilon, delta))``.

    The L2 penalty (and the coefficient ball, for the squared loss) enters
    through its prox, never through the noisy gradient. Step size
    ``1/(beta + alpha)``; starts at 0; returns the last iterate.
    No early stopping: the schedule is fixed before the data is touched.
    """

    name = "dp_gd"
    release_ignores_penalty = True
    fits_default_alpha = True
    source = 'Wang, Ye, Xu 2017, Alg. 4'
    defaults = ('T = min(40, max(2, ceil(n eps / c))); logistic losses: gradients clipped at half their bound at 0, '
                'horizon n mu / (p k)^(1/4) in max(10, ceil(H / 8)) steps (once 100 steps\' noise is < 0.05 G: '
                '24 FISTA steps of 1.3 / L, L from a private lambda_max(X^T X)); w_0 = 0, last iterate')
    card = "Alg. 4 with replace-one sensitivity 2G/n and the exact Gaussian-DP calibration of the T releases"
    reference = "doc/papers/wang_ye_xu2017.rst"
    summary = "noisy full-batch gradient descent, exact Gaussian-DP calibration"
    explicit_penalty = True
    #: k regression targets: one (p, k) gradient per example, clipped jointly (Frobenius)
    multi_output = True
    option_keys = {
        "acceleration": "FISTA momentum on the released gradients: True, False or 'auto' (when the noise is small)",
        "step_factor": "step size c / (beta + alpha) (default 1.9 for the logistic losses, 1 for the squared loss)",
        "secure_noise": "release every gradient on a power-of-two grid with exact discrete Gaussian noise (zCDP)",
        "curvature": "release the largest eigenvalue of X^T X privately and step by it: True, False or 'auto' "
                     "(the FISTA regime of the default schedule)",
    }

    @staticmethod
    def default_steps(n, epsilon, loss_name):
        """``T = min(40, max(2, ceil(n epsilon / c)))``, ``c = 80`` squared loss, 30 otherwise.

        A function of the public ``n`` and ``epsilon`` only. The noise std per
        step grows like ``sqrt(T)/(n epsilon)``, so small private datasets get
        few, accurate steps; ``c`` was chosen on the utility benchmark
        (:doc:`/benchmarks`; the squared loss, with its tight curvature, prefers
        fewer steps).

        The squared loss takes at least ``ceil(0.21 sqrt(n epsilon))`` steps: a
        step more than the linear rule for ``n epsilon`` in (90, 160] and
        (204, 240], the same from 282 on. The noise a step adds grows like
        ``T``, while the bias left in a direction of curvature ``lambda`` decays
        like ``(1 - lambda / beta)^T``, so the best ``T`` grows like
        ``log(n epsilon)`` times the data's condition number and falls with the
        noise of the data and of the label range (none of them public:
        correlated real designs, like diabetes, want fewer steps than isotropic
        ones). The square-root floor gives a small correlated design such as
        diabetes the extra step it can use (4 instead of 3 at ``n epsilon``
        near 230), and its coefficient keeps a noisier one (features from a
        private scaler, a wider label range: ``n epsilon`` near 185) at the 3
        steps it prefers; the step sweeps that set both are on
        :doc:`/user_guide/defaults`.
        """
        if get_loss(loss_name).quadratic:
            return int(min(40, max(2, math.ceil(n * epsilon / 80.0), math.ceil(0.21 * math.sqrt(n * epsilon)))))
        return int(min(40, max(2, math.ceil(n * epsilon / 30.0))))

    @staticmethod
    def learning_rate(problem, scheduled=None):
        """``c / (beta + alpha)``; privacy does not depend on it (post-processing).

        ``c`` is ``solver_options["step_factor"]`` when given, else the
        schedule's factor ``scheduled`` (see :meth:`schedule`), else:

        ``c = 1.9`` for the logistic / multinomial losses, whose smoothness
        bound ``beta`` is attained only at margin 0 (any step below
        ``2/(beta + alpha)`` still decreases the noiseless objective); ``c = 1``
        for the squared loss, whose curvature bound can be tight, so a longer
        step mostly amplifies the noise along the top eigendirection.
        """
        default = scheduled if scheduled is not None else (1.0 if problem.loss.quadratic else 1.9)
        c = float(problem.options.get("step_factor", default))
        return c / (problem.smoothness + problem.penalty.smoothness)

    @staticmethod
    def sensitivity(problem):
        """Replace-one L2 sensitivity ``2G/n`` of one mean-gradient release (public ``n``)."""
        return 2 * problem.gradient_bound / problem.n

    def noise_std(self, problem, budget, T):
        return repeated_gaussian_plan(self.sensitivity(problem), T, budget).noise_scale

    #: noise-led schedule (non-quadratic losses other than the logistic ones): more steps while one
    #: step's noise stays below ``_NOISE_RATIO`` of the largest gradient, at most ``_MAX_STEPS``; FISTA with
    #: ``_ACCELERATED_STEPS`` steps once that noise is below ``_ACCELERATE_RATIO`` of it
    _NOISE_RATIO, _MAX_STEPS, _ACCELERATE_RATIO, _ACCELERATED_STEPS = 0.3, 200, 0.05, 100

    @classmethod
    def noise_ratio(cls, problem, budget, T):
        """``sigma sqrt(size of w) / G`` for ``T`` steps: one step's noise relative to the largest gradient."""
        size = problem.p * max(int(problem.n_outputs), 1)
        mu = gdp_mu(budget.epsilon, budget.delta) if budget.delta > 0 else math.inf
        return 2.0 * math.sqrt(T * size) / (problem.n * mu)

    #: the logistic losses where the noise is large (before the FISTA regime): per-example gradients
    #: clipped at ``_CLIP_FACTOR`` of their bound at ``w = 0``, a horizon (the sum of the step sizes, in
    #: units of ``1/(beta + alpha)``) ``H = n mu / (p k)^(1/4)`` of at most ``_MAX_HORIZON``, covered by
    #: ``T = max(_MIN_STEPS, ceil(H / _HORIZON_PER_STEP))`` equal steps
    _CLIP_FACTOR, _MAX_HORIZON, _MIN_STEPS, _HORIZON_PER_STEP = 0.5, 1600.0, 10, 8.0
    _SCHEDULED_LOSSES = ("logistic", "multinomial")

    def schedule(self, problem, budget):
        """``(T, clip, step_factor)``: ``max_iter`` or the default schedule, a function of public quantities only.

        ``clip`` is the per-example gradient clip norm the steps use (``None``:
        the problem's own bound) and ``step_factor`` the step size in units of
        ``1 / (beta + alpha)`` (``None``: :meth:`learning_rate`'s default).

        * Base rule: :meth:`default_steps` (the squared loss, ``delta = 0``,
          ``acceleration=False``); other non-quadratic losses take as many
          steps (up to 200) as keep one step's noise, ``sigma sqrt(size of
          w)``, below 0.3 of the gradient bound ``G``.
        * Every non-quadratic loss, once 100 steps' noise is below 0.05 of
          ``G``: 100 FISTA steps (:meth:`accelerate`), so
          the fit approaches the non-private optimum as ``n epsilon`` grows
          (Nesterov's method reaches error ``O(1/T^2)`` where plain steps reach
          ``O(1/T)``). For the logistic losses with at most 256 columns,
          24 FISTA steps of size ``1.3 / L`` instead, ``L`` from a private
          release of the data's largest curvature (:meth:`curvature_plan`):
          the worst-case step ``1 / (c K^2)`` assumes every row points the same
          way, so on data spread over many directions the steps are longer and
          24 of them reach the accuracy of 100 worst-case steps in a quarter of
          the passes (:doc:`/user_guide/defaults`).
        * Logistic / multinomial losses with more noise than that: the
          per-example gradients are clipped at half their bound at ``w = 0``
          (``0.25 K`` logistic, ``0.5 K sqrt(1 - 1/k)`` multinomial; the
          sensitivity ``2 G / n`` uses the clip), and the steps cover a horizon
          ``H = n mu / (p k)^(1/4)`` (``mu`` the Gaussian-DP parameter of the
          solver's budget, ``p`` the columns with the intercept, ``k`` the
          outputs), at most 1600, in ``T = max(10, ceil(H / 8))`` steps of
          size ``H / (T 0.5 (beta + alpha))``. In this regime both the signal
          and the noise of ``w`` grow with the horizon, so the step count,
          step size and ``alpha`` only trade one against the other, so tuning
          them has a ceiling (:doc:`/user_guide/defaults` reports a search over
          settings of the former rule);
          what helps is a smaller gradient bound next to the signal (the clip)
          and a horizon that grows with ``n mu``. Chosen on digits and
          breast_cancer and checked on iris, wine and synthetic designs
          (:doc:`/user_guide/defaults`).
        """
        if problem.max_iter:
            return problem.max_iter, None, None
        base = self.default_steps(problem.n, budget.epsilon, problem.loss.name)
        if problem.loss.quadratic or budget.delta == 0 or problem.options.get("acceleration", "auto") is False:
            return base, None, None
        if self.noise_ratio(problem, budget, self._ACCELERATED_STEPS) <= self._ACCELERATE_RATIO:
            if self.uses_curvature(problem, budget):
                return self._CURVATURE_STEPS, None, self._CURVATURE_STEP_FACTOR
            return self._ACCELERATED_STEPS, None, None
        if problem.loss.name not in self._SCHEDULED_LOSSES:
            # other smooth losses: as many steps (up to 200) as keep one step's noise below 0.3 G
            ratio_one = self.noise_ratio(problem, budget, 1)
            return max(base, int(min(self._MAX_STEPS, (self._NOISE_RATIO / ratio_one) ** 2))), None, None
        size = problem.p * max(int(problem.n_outputs), 1)
        mu = gdp_mu(budget.epsilon, budget.delta)
        horizon = min(problem.n * mu / size ** 0.25, self._MAX_HORIZON)
        T = max(self._MIN_STEPS, int(math.ceil(horizon / self._HORIZON_PER_STEP)))
        clip = self._CLIP_FACTOR * problem.unit_gradient_bound  # the clip of a row of weight 1
        return T, clip, horizon / (T * self._CLIP_FACTOR)

    #: the FISTA regime with a private curvature estimate: its steps, step factor (in units of ``1 / L``),
    #: share of the solver's GDP ``mu^2`` and the most columns for which ``X^T X`` is formed
    _CURVATURE_STEPS, _CURVATURE_STEP_FACTOR, _CURVATURE_SHARE, _CURVATURE_MAX_P = 24, 1.3, 0.01, 256

    def uses_curvature(self, problem, budget):
        """Whether the fit releases the curvature of the data (see :meth:`curvature_plan`); public quantities only.

        ``solver_options["curvature"]``: ``True`` forces it, ``False`` turns it
        off, ``"auto"`` (default) uses it in the FISTA regime of the default
        schedule of a smooth non-quadratic loss (noise small next to the
        gradients), with a convex penalty, ``delta > 0``, at most 256 columns
        and without ``secure_noise``.
        """
        option = problem.options.get("curvature", "auto")
        if not (isinstance(option, (bool, np.bool_)) or (isinstance(option, str) and option == "auto")):
            raise ValueError(f"solver_options['curvature'] must be True, False or 'auto', got {option!r}.")
        option = option if isinstance(option, str) else bool(option)
        if option is False or budget.delta == 0 or problem.options.get("secure_noise", False):
            return False
        if option is True:
            return True
        return bool(problem.max_iter is None and not problem.loss.quadratic
                    and problem.loss.name in self._SCHEDULED_LOSSES
                    and getattr(problem.penalty, "convex", True) and problem.p <= self._CURVATURE_MAX_P
                    and problem.options.get("acceleration", "auto") is not False
                    and self.noise_ratio(problem, budget, self._ACCELERATED_STEPS) <= self._ACCELERATE_RATIO)

    @staticmethod
    def curvature_sensitivity(problem):
        """Replace-one sensitivity ``W K^2`` of ``lambda_max(X^T W X)`` (public ``n``).

        Replacing one row removes one positive semidefinite term ``w x x^T``
        and adds another, each of norm at most ``W K^2`` (``K`` the row bound,
        ``W`` the weight bound), and by Weyl's inequality neither moves the
        largest eigenvalue by more than its norm, in opposite directions.
        """
        return problem.weight_bound * problem.data_norm**2

    def curvature_plan(self, problem, budget, T, **settings):
        """The ``T`` gradient releases plus one release of ``lambda_max(X^T W X)``, ``mu``-GDP together.

        The curvature release takes ``_CURVATURE_SHARE`` (1%) of ``mu^2``, so
        each gradient's noise grows by 0.5%. Its value sets the step size (post-processing):
        ``1.3 / L`` with ``L = c (lambda + 3 s) / n``, ``c`` the loss's curvature
        constant, ``s`` the release's noise std (a public margin), ``L`` at most the
        worst-case smoothness ``c K^2``. The worst case assumes every row could
        have norm ``K`` in one direction; on data spread over many directions
        the step is up to ``p`` times longer, so 24 FISTA steps replace 100.
        FISTA stays stable for steps below ``4 / (3 L)``: on a quadratic of
        curvature ``L`` the late, full-momentum error recursion
        ``e' = (1 - cL)(2e - e_old)`` has both roots inside the unit circle iff
        ``cL < 4/3``; hence the factor 1.3.
        """
        sens = self.sensitivity(problem)
        share = self._CURVATURE_SHARE
        total = T * sens**2 / (1.0 - share)
        sigma = calibrate_gaussian(total, budget.epsilon, budget.delta)
        sens_c = self.curvature_sensitivity(problem)
        sigma_c = sens_c * sigma / math.sqrt(share * total)
        events = (GaussianEvent(sens_c, sigma_c, 1), GaussianEvent(sens, sigma, T))
        for _ in range(_ROUNDING_NUDGES):  # float rounding: never above the budget
            if price(events, budget.delta).budget.epsilon <= budget.epsilon:
                break
            sigma, sigma_c = sigma * (1 + 1e-12), sigma_c * (1 + 1e-12)
            events = (GaussianEvent(sens_c, sigma_c, 1), GaussianEvent(sens, sigma, T))
        else:  # more than rounding apart: the split and the accountant disagree (a bug), never release
            raise RuntimeError("dp_gd's curvature plan does not meet its budget after rounding corrections; "
                               "refusing to fit.")
        return SolverPlan(events, sigma, dict(settings, T=T, sigma=sigma, curvature=sigma_c))

    @staticmethod
    def released_curvature(problem, sigma_c, rng):
        """The smoothness ``L`` the steps use: from ``lambda_max(X^T W X) + N(0, sigma_c^2)`` (one release)."""
        lam = float(np.linalg.eigvalsh(problem.gram()[0])[-1])
        released = float((np.array([lam]) + gaussian_noise(rng, sigma_c, (1,)))[0])
        upper = released + 3.0 * sigma_c
        worst = problem.smoothness
        if not upper > 0:
            return worst
        return min(worst, problem.loss.smoothness(1.0) * upper / problem.n)

    def steps(self, problem, budget):
        """The number of steps of :meth:`schedule`."""
        return self.schedule(problem, budget)[0]

    def make_plan(self, problem, budget):
        T, clip, step_factor = self.schedule(problem, budget)
        if clip is not None:
            problem = replace(problem, clip_norm=clip)
        if problem.options.get("secure_noise", False):
            plan = self.secure_plan(problem, budget, T, clip=clip, step_factor=step_factor)
        elif self.uses_curvature(problem, budget):
            plan = self.curvature_plan(problem, budget, T, clip=clip, step_factor=(
                self._CURVATURE_STEP_FACTOR if step_factor is None else step_factor))
        else:
            plan = repeated_gaussian_plan(self.sensitivity(problem), T, budget, clip=clip, step_factor=step_factor)
        plan.settings["accelerate"] = self.accelerate(problem, plan.settings["sigma"])
        return plan

    def secure_plan(self, problem, budget, T, **settings):
        """``solver_options={"secure_noise": True}``: ``T`` floating-point-safe releases, ``rho``-zCDP in total.

        Each mean gradient is rounded to a public power-of-two grid and gets
        exact discrete Gaussian noise (:func:`skdp.privacy.discrete.secure_gaussian_release`),
        so the released value carries no information in its low-order bits
        (Mironov 2012). Each release is ``rho / T``-zCDP with the rounding's
        cost in its sensitivity (Canonne, Kamath, Steinke 2020, Thm. 4), and
        ``rho`` is the zCDP parameter of the budget. The zCDP conversion is
        not tight against the exact Gaussian-DP calibration, so the noise is
        somewhat larger, and the exact sampler (vectorised integer arithmetic)
        has a fixed cost per release that dominates a fit of a few
        milliseconds and fades as ``n`` grows (:doc:`/user_guide/verifying`
        gives both costs), which is why it is an option. The private bound selections follow the
        same switch; ``classes="auto"`` refuses it. The curvature release of
        :meth:`curvature_plan` is not made (it would be a floating-point release).
        """
        size = problem.p * max(int(problem.n_outputs), 1)
        return secure_repeated_plan(self.sensitivity(problem), T, budget, size, **settings)

    @staticmethod
    def accelerate(problem, sigma):
        """Whether to take FISTA (Nesterov) steps: ``solver_options["acceleration"]``, or by the noise level.

        Momentum is post-processing of the released gradients (free), but it
        accumulates their noise: it is used when the noise of one step is small
        next to the largest gradient, ``sigma sqrt(size of w) <= 0.05 G``
        (a function of public quantities only), never with the nonconvex penalty;
        ``solver_options["acceleration"]`` forces it on or off.
        """
        option = problem.options.get("acceleration", "auto")
        if not getattr(problem.penalty, "convex", True):
            return False
        if option != "auto":
            return bool(option)
        size = problem.p * max(int(problem.n_outputs), 1)
        return bool(sigma * math.sqrt(size) <= DPGradientDescent._ACCELERATE_RATIO * problem.gradient_bound)

    def run(self, problem, plan, rng):
        T, sigma = plan.settings["T"], plan.settings["sigma"]
        if plan.settings.get("clip") is not None:  # the clip the plan's sensitivity was computed with
            problem = replace(problem, clip_norm=plan.settings["clip"])
        eta = self.learning_rate(problem, plan.settings.get("step_factor"))
        if plan.settings.get("curvature") is not None:  # drawn first: the step size of every step
            smooth = self.released_curvature(problem, plan.settings["curvature"], rng)
            eta = eta * (problem.smoothness + problem.penalty.smoothness) / (smooth + problem.penalty.smoothness)
        w = np.zeros(problem.coef_shape)
        convex = getattr(problem.penalty, "convex", True)
        point, t_k = w, 1.0  # FISTA's extrapolated point and momentum sequence
        secure = plan.settings.get("secure")
        for _ in range(T):
            g = noisy_release(rng, problem.mean_gradient(point), sigma, secure)
            if convex:
                w_next = problem.penalty.prox(point - eta * g, eta)
            else:  # the nonconvex penalty: an explicit gradient step (it is data-independent)
                w_next = point - eta * (g + problem.penalty.gradient(point))
            if plan.settings.get("accelerate"):
                t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t_k * t_k))
                point = w_next + ((t_k - 1.0) / t_next) * (w_next - w)
                t_k = t_next
            else:
                point = w_next
            w = w_next
        return SolverResult(w, T, {"learning_rate": eta, "accelerated": bool(plan.settings.get("accelerate")),
                                   "gradient_clip": problem.gradient_bound})


def poisson_sample(rng, n, q):
    """Indices of a Poisson sample: each of ``n`` rows included independently with prob. ``q``.

    Drawn in O(q n) time by geometric gaps between included rows, which has
    exactly the distribution of independent Bernoulli(q) inclusions. For
    ``q < 1/3`` a gap is ``ceil(log(1 - U) / log(1 - q))`` with ``U`` uniform:
    the inversion numpy's legacy ``RandomState.geometric`` computes there, so
    the same draws (and the same stream) as ``rng.geometric(q)`` with fewer
    operations; the law is exactly geometric whatever numpy does. Those gaps
    are summed in ``float64``: exact below ``2^53``, and any sum past ``n``
    ends the sample either way.
    """
    if q >= 1:
        return np.arange(n)
    return _bernoulli_positions(rng, n, q)


#: 1e-12 relative nudges of a closed-form calibration allowed for float rounding before it is called a bug
_ROUNDING_NUDGES = 64


def _bernoulli_positions(rng, n, q):
    """The positions in ``0 .. n-1`` of the successes of ``n`` independent Bernoulli(``q``) trials, ``q < 1``
    (:func:`poisson_sample`'s geometric gaps)."""
    log_q = math.log(1.0 - q) if 0 < q < 1.0 / 3.0 else 0.0
    inversion = log_q < 0 and isinstance(rng, np.random.RandomState)
    out = []
    pos = -1
    while True:
        k = max(16, int(1.2 * q * (n - pos)) + 16)
        if inversion:
            idx = rng.random_sample(k)
            np.log1p(np.negative(idx, out=idx), out=idx)
            idx /= log_q
            np.cumsum(np.ceil(idx, out=idx), out=idx)
        else:
            idx = np.cumsum(rng.geometric(q, size=k))
        idx += pos
        if idx[-1] >= n:
            out.append(idx[: int(np.searchsorted(idx, n))].astype(np.int64, copy=False))
            break
        out.append(idx.astype(np.int64, copy=False))
        pos = int(idx[-1])
    return out[0] if len(out) == 1 else np.concatenate(out)


#: :func:`poisson_batches` draws the samples of this many expected rows (or of one step, if more) at a time
POISSON_CHUNK_ROWS = 1 << 20


def poisson_batches(rng, n, q, steps, problem=None):
    """The index arrays of ``steps`` independent Poisson samples of ``n`` rows (each row w.p. ``q``), one per step.

    The same law as ``steps`` calls of :func:`poisson_sample` (a different
    use of the generator's stream): the samples of several steps are the
    successes of one run of independent Bernoulli(``q``) trials over ``K n``
    positions, step ``t`` taking positions ``t n .. (t + 1) n - 1``, drawn
    by one vectorised call of :func:`poisson_sample`'s geometric gaps per
    chunk of ``K`` steps (about :data:`POISSON_CHUNK_ROWS` expected rows), so a
    step costs no Python of its own. The batches are data-independent, as the
    accountant's Poisson subsampling requires. Yields each step's sorted
    indices (a read-only view into the chunk's array).

    ``problem``: the :class:`~skdp.solvers.Problem` whose rows the steps read;
    when it offers a :meth:`~skdp.solvers.Problem.row_prefetch`, each chunk's
    steps are registered with it as soon as they are drawn, so their rows
    are gathered on a worker thread ahead of the steps (the same values;
    nothing is drawn ahead of the generator's order).
    """
    steps = int(steps)
    if q >= 1:
        rows = np.arange(n)
        rows.setflags(write=False)
        for _ in range(steps):
            yield rows
        return
    prefetch = problem.row_prefetch() if problem is not None and steps > 1 else None
    try:
        chunk = max(1, min(steps, int(POISSON_CHUNK_ROWS / max(q * n, 1.0))))
        for first in range(0, steps, chunk):
            k = min(chunk, steps - first)
            positions = _bernoulli_positions(rng, k * n, q)
            ends = np.searchsorted(positions, n * np.arange(1, k + 1))
            rows = positions % n
            rows.setflags(write=False)
            batches = np.split(rows, ends[:-1])
            if prefetch is not None:
                prefetch.add(batches)
            yield from batches
    finally:
        if prefetch is not None:
            prefetch.close()


@lru_cache(maxsize=256)
def _svrg_noise_ratio(n, n_steps, q, batch, epsilon, delta, relation):
    """sigma/G for DP-SVRG's split accounting, minimised over the split fraction.

    The split argument (skdp's, see :doc:`/papers/wang_ye_xu2017`): the one noise
    draw ``N(0, sigma^2)`` is viewed as two independent draws of variances
    ``f sigma^2`` and ``(1-f) sigma^2``, so each inner step is, for the analysis, the
    composition of a Gaussian release of the snapshot gradient (replace-one
    sensitivity ``2G/n``, std ``sqrt(f) sigma``) and a Poisson-subsampled
    Gaussian release of the summed gradient differences (per-row bound
    ``C_d = 2G``, noise multiplier ``batch sqrt(1-f) sigma / (2G)``).
    """
    best = None
    for f in (0.2, 0.5, 0.8):
        def make(s, f=f):
            return [
                GaussianEvent(2.0 / n, math.sqrt(f) * s, n_steps),
                PoissonGaussianEvent(q, batch * math.sqrt(1 - f) * s / 2.0, n_steps),
            ]

        s, rep = calibrate(make, epsilon, delta, relation=relation, initial=1.0, rtol=1e-3)
        if best is None or s < best[0]:
            best = (s, f, rep)
    return best


@register
class DPSVRG(Solver):
    """``dp_svrg``: DP proximal SVRG, rigorous split-accounting variant.

    Wang, Ye and Xu 2017, Alg. 1, with skdp's split accounting (see
    :doc:`/papers/wang_ye_xu2017`). **The paper's noise (Thm 4.1) is not private at
    its claimed speed**: it ignores that the un-noised snapshot gradient is
    reused at every inner step and that the variance-reduced difference has
    replace-one sensitivity ``4G``. We keep the algorithm (noise added to the
    variance-reduced gradient before the prox step; restart from the epoch
    average) and calibrate ``sigma`` with a split argument (one noise draw
    analysed as a Gaussian release of the snapshot gradient plus a subsampled
    Gaussian release of the gradient differences, the split fraction chosen to
    minimise sigma), priced by the shared RDP accountant.

    Like every subsampled solver in skdp (the accountant prices Poisson sampling),
    the inner steps use **Poisson** mini-batches of expected size ``b``
    (the paper's single uniform index is the case ``b = 1`` with replacement,
    which the accountant does not price); the difference term is divided by the
    public ``b``. Every per-example gradient is clipped to ``G`` at both points,
    so each difference has norm ``<= 2G``.

    Schedule (fixed before seeing data): ``T = max_iter`` epochs, ``m = ceil(n/b)``
    inner steps each, step ``1/(2(beta + alpha))``, ``b = ceil(sqrt(n))``.
    Needs ``alpha > 0`` (Thm 4.2's strong convexity).
    """

    name = "dp_svrg"
    release_ignores_penalty = True
    source = 'Wang, Ye, Xu 2017, Alg. 1 (rigorous variant)'
    defaults = 'T = 3 epochs, b = ceil(sqrt n), m = ceil(n/b) inner steps, step 1/(2(beta + alpha))'
    card = "Alg. 1 with Poisson mini-batches and split RDP accounting (the printed noise is not private)"
    reference = "doc/papers/wang_ye_xu2017.rst"
    needs_strong_convexity = True
    summary = "DP prox-SVRG with Poisson mini-batches, split RDP accounting"
    #: k regression targets: one (p, k) gradient per example, clipped jointly (Frobenius)
    multi_output = True
    default_max_iter = 3
    option_keys = {"batch_size": "expected Poisson mini-batch size b (default ceil(sqrt n); >= n: full batches)"}
    secure_noise_refusal = ("its Poisson-subsampled Gaussian steps are priced by the tight RDP of the subsampled "
                            "continuous Gaussian (Mironov, Talwar, Zhang 2019), which the accountant does not "
                            "extend to the discrete Gaussian; use solver='dp_gd' for floating-point-safe gradients")

    def schedule(self, problem):
        n = problem.n
        T = problem.max_iter or self.default_max_iter
        b = int(problem.options.get("batch_size") or math.ceil(math.sqrt(n)))
        b = min(max(b, 1), n)
        m = int(math.ceil(n / b))
        return T, m, b

    def noise_std(self, problem, budget, T, m, b):
        n = problem.n
        s, f, rep = _svrg_noise_ratio(n, T * m, b / n, b, budget.epsilon, budget.delta, budget.relation)
        return s * problem.gradient_bound, f

    def events(self, problem, sigma, f, T, m, b):
        G = problem.gradient_bound
        n = problem.n
        return [
            GaussianEvent(2 * G / n, math.sqrt(f) * sigma, T * m),
            PoissonGaussianEvent(b / n, b * math.sqrt(1 - f) * sigma / (2 * G), T * m),
        ]

    def _plan(self, problem, budget, n_epochs, n_steps, b, **settings):
        sigma, f = self.noise_std(problem, budget, n_epochs, n_steps, b)
        return SolverPlan(tuple(self.events(problem, sigma, f, n_epochs, n_steps, b)), sigma,
                          dict(settings, sigma=sigma, split=f, b=b))

    def make_plan(self, problem, budget):
        T, m, b = self.schedule(problem)
        return self._plan(problem, budget, T, m, b, T=T, m=m)

    @staticmethod
    def _epoch(problem, w, snapshot, steps, plan, eta, rng, remaining=None):
        """``steps`` variance-reduced noisy prox steps from ``w``: (last iterate, average iterate).

        ``remaining``: the epochs left, this one included (each takes one full gradient).
        """
        b, sigma = plan.settings["b"], plan.settings["sigma"]
        n = problem.n
        full = problem.mean_gradient(snapshot, remaining=remaining)
        avg = np.zeros_like(w)
        draws = zip(poisson_batches(rng, n, b / n, steps, problem), gaussian_noise_steps(rng, sigma, steps, w.shape))
        for rows, noise in draws:
            diff = problem.batch_gradient_difference(w, snapshot, rows, b) if rows.size else 0.0
            w = problem.penalty.prox(w - eta * (diff + full + noise), eta)
            avg += w
        return w, avg / steps

    def run(self, problem, plan, rng):
        T, m = plan.settings["T"], plan.settings["m"]
        eta = 0.5 / (problem.smoothness + problem.penalty.alpha)
        snapshot = np.zeros(problem.coef_shape)
        for epoch in range(T):
            _, snapshot = self._epoch(problem, snapshot.copy(), snapshot, m, plan, eta, rng, remaining=T - epoch)
        return SolverResult(snapshot, T, {"batch_size": plan.settings["b"], "inner_steps": m,
                                          "split": plan.settings["split"]})


@register
class DPSVRGPlusPlus(DPSVRG):
    """``dp_svrg_pp``: DP prox-SVRG++ (doubling epochs) for convex, not necessarily strongly convex, objectives.

    Wang, Ye and Xu 2017, Alg. 2, with the rigorous split accounting of
    ``dp_svrg`` (see :doc:`/papers/wang_ye_xu2017`) over the **exact** number of noisy inner
    steps ``N = m (2^(T+1) - 2)`` (the paper's "2^T m" undercounts by 2, and
    its noise is not private at the claimed speed; see ``dp_svrg``). Epoch
    ``s = 1..T`` computes the full gradient at the snapshot (the previous
    epoch's **average** iterate), runs ``m_s = 2^s m`` inner steps from the
    previous epoch's **last** iterate, each with a Poisson mini-batch
    variance-reduced gradient plus ``N(0, sigma^2 I)`` and a prox step, and
    its average becomes the next snapshot; the last snapshot is returned.
    ``alpha = 0`` is allowed (SVRG++ needs no strong convexity).

    skdp defaults (the paper's ``m = Theta(L)`` makes the step count blow up
    exponentially): ``T = max_iter`` or 3 epochs, Poisson batches of expected
    size ``b = ceil(sqrt(n))``, ``m = ceil(n / (b 2^T))`` so the last epoch is
    about one pass, step ``1/(2(beta + alpha))``.
    """

    name = "dp_svrg_pp"
    card = "Alg. 2 with split RDP accounting over its exact m (2^(T+1) - 2) inner steps"
    reference = "doc/papers/wang_ye_xu2017.rst"
    source = "Wang, Ye, Xu 2017, Alg. 2"
    needs_strong_convexity = False
    summary = "DP prox-SVRG++ (doubling epochs), Poisson mini-batches, split RDP accounting"
    defaults = "T = 3 epochs, b = ceil(sqrt n), m = ceil(n/(b 2^T)), inner steps m 2^s, step 1/(2(beta+alpha))"

    #: most epochs: the inner steps double every epoch (20 epochs: over two million steps)
    max_epochs = 20

    def schedule(self, problem):
        n = problem.n
        T = problem.max_iter or self.default_max_iter
        if T > self.max_epochs:
            raise ValueError(f"solver='dp_svrg_pp' doubles its inner steps every epoch: max_iter={T} epochs would "
                             f"run about 2^{T + 1} steps; use max_iter <= {self.max_epochs}.")
        b = int(problem.options.get("batch_size") or math.ceil(math.sqrt(n)))
        b = min(max(b, 1), n)
        m = max(1, int(math.ceil(n / (b * 2**T))))
        return T, m, b

    @staticmethod
    def total_steps(T, m):
        return m * (2 ** (T + 1) - 2)

    def make_plan(self, problem, budget):
        T, m, b = self.schedule(problem)
        return self._plan(problem, budget, 1, self.total_steps(T, m), b, T=T, m=m)

    def run(self, problem, plan, rng):
        T, m = plan.settings["T"], plan.settings["m"]
        eta = 0.5 / (problem.smoothness + problem.penalty.alpha)
        snapshot = np.zeros(problem.coef_shape)
        w = snapshot.copy()
        for s in range(1, T + 1):
            # the last iterate w restarts the next epoch; the average becomes its snapshot
            w, snapshot = self._epoch(problem, w, snapshot, 2**s * m, plan, eta, rng, remaining=T + 1 - s)
        return SolverResult(snapshot, T, {"batch_size": plan.settings["b"], "inner_steps": self.total_steps(T, m),
                                          "split": plan.settings["split"]})
