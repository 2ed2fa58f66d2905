"""Sparse DP solvers: ``dp_ight``, ``dpsl_kt``, ``dp_fw_l1``, ``two_stage``.

All four follow chapters 2-3 of Wang 2021 (dissertation) and the baselines it
compares against (Talwar-Thakurta-Zhang 2015, Kifer-Smith-Thakurta 2012), in
the rigorous form described on the documentation page :doc:`/papers/wang2021`,
for **replace-one** neighbours with ``n`` public. Each declares what it releases as events, and the shared
accountant (:mod:`skdp.privacy.accounting`) prices and calibrates them.

They run on a :class:`SparseProblem` and plan on its data-free
:class:`PublicSparseProblem` (:func:`~skdp.solvers.public_view`): features clipped coordinate-wise to
``[-K, K]`` (``K = feature_bound``; the intercept, when fitted, is a constant
column of value ``K`` that is never thresholded), labels encoded for the loss
(``+-1`` for the logistic loss, centred reals for the squared loss), and a
per-example gradient clip norm ``G`` in the norm the solver's sensitivity
uses (L2 for ``dp_ight`` and the ``dpsl_kt`` teacher, L-infinity for
``dp_fw_l1``). Clipping the scalar derivative of a GLM loss is the exact
gradient of a convex (Huber-type) surrogate, so every argument that needs
convexity still holds.

The non-private :func:`ight` (Wang 2021, ch. 3, Alg. 3) is a reference and a
subroutine; it is never registered as a solver and never reports a privacy
guarantee.

References
----------
.. [1] L. Wang, "Towards efficient and effective privacy-preserving machine learning", PhD
   dissertation, University of California, Los Angeles, 2021.
   <https://escholarship.org/uc/item/3t58b68j>
.. [2] K. Talwar, A. Thakurta and L. Zhang, "Nearly optimal private LASSO", NeurIPS 2015.
   <https://proceedings.neurips.cc/paper_files/paper/2015/hash/52d080a3e172c33fd6886a37e7288491-Abstract.html>
.. [3] D. Kifer, A. Smith and A. Thakurta, "Private convex empirical risk minimization and
   high-dimensional regression", COLT 2012, PMLR 23.
   <https://proceedings.mlr.press/v23/kifer12.html>
.. [4] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
"""

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy import linalg

from ..losses import clipped_mean_gradient, weigh
from ..penalties import L2Penalty, hard_threshold
from ..privacy import (
    BoundedRangeEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyBudget,
    calibrate_bounded_range,
    calibrate_gaussian,
    gaussian_noise,
    laplace_noise,
    ZCDPEvent,
    zcdp_rho,
)
from ..privacy.discrete import secure_gaussian_release
from ._problem import HasRows
from ._base import (Problem, PublicProblem, Solver, SolverPlan, SolverResult, get_solver, noisy_release, register,
                    repeated_gaussian_plan, report_rows, secure_noise_option, secure_repeated_plan,
                    secure_selection_plan, select)

__all__ = [
    "PublicSparseProblem",
    "SparseProblem",
    "ight",
    "DPIGHT",
    "DPSLKT",
    "DPFrankWolfeL1",
    "TwoStage",
    "teacher_sensitivity",
]


@dataclass(kw_only=True)
class PublicSparseProblem:
    """What a sparse solver's plan may read of ``min (1/n) sum phi(<w, x_i>, y_i)`` subject to ``||w||_0 <= s``.

    The rows have ``|x_ij| <= feature_bound`` for every entry (the intercept
    column, index ``free``, holds the constant ``feature_bound``). ``clip`` is
    the bound on each row's contribution, the per-example gradient in the
    ``clip_order`` norm, that the sensitivities use (``None`` when the solver
    uses the bounds instead). Weighted fits (weights in
    ``[0, max_sample_weight]``, ``W = max_sample_weight`` public) minimise
    ``(1/n) sum w_i phi_i``: the unweighted gradient is clipped to
    ``clip / W`` (:attr:`unit_clip`) and then weighted, so ``clip`` bounds
    every weighted contribution (the estimators set ``clip`` to ``W`` times
    their clip norm). Only ``n``, ``p`` and the public bounds enter any
    sensitivity.

    This type has no data attributes: reading ``X``, ``y`` or
    ``sample_weight`` raises :class:`AttributeError`, so a sparse solver's
    ``make_plan``, which receives one (:func:`~skdp.solvers.public_view`),
    cannot read a row. :class:`SparseProblem` is the same problem with its
    rows. Every field is keyword-only.

    Parameters
    ----------
    loss : Loss
        The GLM loss (squared or logistic).
    n_nonzero : int
        The sparsity ``s`` (the intercept column excluded).
    feature_bound : float
        The public bound ``K`` on every entry.
    free : int, default=None
        The intercept's column, never thresholded (``None``: no intercept).
    label_bound : float, default=None
        Public bound on the labels (squared loss).
    clip : float, default=None
        Bound on each row's weighted gradient in the ``clip_order`` norm.
    clip_order : float, default=2
        The norm ``clip`` is in (2 or ``numpy.inf``).
    learning_rate : float, default=None
        Step size (``None``: :meth:`default_learning_rate`).
    max_iter : int, default=None
        Iterations or selections (``None``: the solver's default).
    options : dict, default={}
        The estimator's ``solver_options``.
    verbose : int, default=0
        Progress lines of the run.
    n_samples : int, default=None
        The public number of rows ``n``.
    n_features : int, default=None
        The number of columns ``p``, intercept column included.
    max_sample_weight : float, default=1.0
        Public bound ``W`` on the row weights.
    """

    loss: object
    n_nonzero: int
    feature_bound: float
    free: int = None
    label_bound: float = None
    clip: float = None
    clip_order: float = 2
    learning_rate: float = None
    max_iter: int = None
    options: dict = field(default_factory=dict)
    verbose: int = 0
    n_samples: int = None
    n_features: int = None
    #: public bound ``W`` on the row weights
    max_sample_weight: float = 1.0

    @property
    def n(self):
        """The public number of rows."""
        return int(self.n_samples)

    @property
    def p(self):
        """Number of columns (intercept column included)."""
        return int(self.n_features)

    @property
    def unit_clip(self):
        """Clip norm of one row's unweighted gradient, ``clip / W`` (``None`` without clipping)."""
        return None if self.clip is None else self.clip / float(self.max_sample_weight)

    def default_learning_rate(self):
        """``1 / (W phi'' K^2)``: the largest diagonal entry any Hessian can have.

        ``phi''`` is 1 (squared) or 1/4 (logistic), every feature is bounded
        by ``K`` and every weight by ``W``, so no coordinate's curvature
        exceeds this. Public; privacy does not depend on it.
        """
        return 1.0 / (self.loss.curvature * self.feature_bound**2 * float(self.max_sample_weight))


#: the data-free type :func:`~skdp.solvers.public_view` gives for a sparse problem
PublicSparseProblem.public_type = PublicSparseProblem


@dataclass(kw_only=True)
class SparseProblem(HasRows, PublicSparseProblem):
    """A :class:`PublicSparseProblem` with its rows: what a sparse solver's run reads.

    :attr:`n` and :attr:`p` are read from ``X``'s shape (``n_samples`` and
    ``n_features`` are then not read); plans are made on its
    :func:`~skdp.solvers.public_view`.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        The clipped rows, ``|x_ij| <= feature_bound`` (never ``None``: a data-free
        problem is a :class:`PublicSparseProblem`).
    y : ndarray of shape (n_samples,)
        The encoded labels.
    sample_weight : ndarray of shape (n_samples,), default=None
        Row weights in ``[0, max_sample_weight]``; ``None``: all 1.
    **public
        The fields of :class:`PublicSparseProblem`.
    """

    X: object
    y: np.ndarray
    #: row weights in ``[0, max_sample_weight]`` (``None``: all 1); data, never planned on
    sample_weight: np.ndarray = None

    def row_norms(self):
        """Norms of the rows of ``X`` in the ``clip_order`` norm (cached)."""
        key = ("_norms", self.clip_order)
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            X = self.X
            if self.clip_order == 2:
                cache[key] = (
                    np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel()) if sp.issparse(X)
                    else np.sqrt(np.einsum("ij,ij->i", X, X))
                )
            else:
                # dense: max(max_j x_ij, -min_j x_ij) reads X twice without an |X| temporary of its size
                cache[key] = (
                    np.asarray(abs(X).max(axis=1).toarray()).ravel() if sp.issparse(X)
                    else np.maximum(np.max(X, axis=1, initial=0.0), -np.min(X, axis=1, initial=0.0))
                )
        return cache[key]

    def mean_gradient(self, coef):
        """Mean of the per-example gradients, each clipped to ``clip`` in the ``clip_order`` norm."""
        norms = self.row_norms() if self.clip is not None else None
        report_rows(self, self.n)
        return clipped_mean_gradient(self.loss, self.X, self.y, coef, norms, self.unit_clip,
                                     sample_weight=self.sample_weight)

    def objective(self, coef):
        Z = self.X @ coef
        values = self.loss.value(Z, self.y)
        return float(np.mean(values if self.sample_weight is None else values * self.sample_weight))


def ight(gradient, p, n_nonzero, learning_rate, max_iter, free=None, coef_init=None, noise=None, tol=None):
    """Iterative gradient hard thresholding, ``w <- H_s(w - eta (grad(w) + u_t))``.

    Wang 2021 (dissertation), ch. 3, Alg. 3. **Not
    private** by itself: with ``noise=None`` it is the non-private IGHT used as
    a reference, inside ``two_stage``'s per-block selection and as the
    ``dpsl_kt`` student (post-processing of a private release). ``dp_ight``
    calls it with ``noise`` returning the calibrated Gaussian draw, so the two
    agree bitwise when that draw is zero.

    Parameters
    ----------
    gradient : callable ``w -> ndarray``
    p : int, dimension
    n_nonzero : int, sparsity ``s`` (free coordinates excluded)
    learning_rate : float
    max_iter : int
    free : int or None, a coordinate never thresholded (the intercept)
    coef_init : ndarray or None (zeros)
    noise : callable ``() -> ndarray`` or None
    tol : float or None
        Stop when an update moves ``w`` by less than this (only allowed when
        ``noise`` is None: a private run never stops early).

    Returns
    -------
    coef : ndarray of shape (p,)
    n_iter : int
    """
    w = np.zeros(p) if coef_init is None else np.array(coef_init, dtype=float)
    t = 0
    for t in range(1, int(max_iter) + 1):
        g = gradient(w)
        if noise is not None:
            g = g + noise()
        w_new = hard_threshold(w - learning_rate * g, n_nonzero, free)
        if noise is None and tol is not None and np.linalg.norm(w_new - w) <= tol:
            return w_new, t
        w = w_new
    return w, t


class _SparseSolver(Solver):
    """What the solvers of the l0-constrained estimators share."""

    constraint = "l0"
    requires = frozenset({"smooth", "scalar"})
    #: norm in which per-example gradients are clipped (None: the solver uses bounds)
    clip_order = 2
    #: solver_options keys and their meaning (validated by the estimator)
    option_keys = {}


@register
class DPIGHT(_SparseSolver):
    """``dp_ight``: DP iterative gradient hard thresholding, corrected noise.

    Wang 2021 (dissertation), ch. 2, Alg. 1, with the noise recalibrated for
    replace-one (see :doc:`/papers/wang2021`). Each of ``T`` steps releases the mean of
    the per-example gradients, each clipped to L2 norm ``G``, plus
    ``N(0, sigma^2 I)``; then ``w <- H_s(w - eta (g + u))``. Under replace-one
    the clipped mean moves by at most ``2G/n``, so the ``T`` steps are exactly
    ``mu``-GDP with ``mu = 2G sqrt(T)/(n sigma)`` (Dong-Roth-Su 2022, Cor. 3.3), and ``sigma`` is
    calibrated by the accountant: ``sigma = 2G sqrt(T)/(n mu*(epsilon, delta))``.
    **The paper's printed sigma (``sigma^2 = T G^2/(n^2 rho)``) is too small by
    sqrt(2) under replace-one** and is not offered.

    Schedule (public, fixed before the data is read): start at 0; step
    ``eta = 1/(phi'' K^2)`` (:meth:`SparseProblem.default_learning_rate`);
    ``T = min(100, max(10, ceil(2 ln(n epsilon))))`` steps; last iterate.

    ``solver_options={"secure_noise": True}`` (``delta > 0``) releases every
    gradient floating-point safely (:func:`skdp.solvers._base.secure_repeated_plan`:
    a power-of-two grid, whose cost is in the sensitivity, and exact discrete
    Gaussian noise), ``rho / T``-zCDP each. The zCDP conversion needs somewhat
    more noise than the exact Gaussian-DP calibration and the exact sampler's
    fixed cost per release dominates small fits (:doc:`/user_guide/verifying`),
    so it is an option, not the default.
    """

    name = "dp_ight"
    source = 'Wang 2021 (dissertation), ch. 2, Alg. 1'
    defaults = "T = clip(ceil(2 ln(n eps)), 10, 100), step 1/(phi'' K^2)"
    card = "Alg. 1 with sigma = 2G sqrt(T)/(n mu*) (the printed sigma is too small by sqrt(2) under replace-one)"
    reference = "doc/papers/wang2021.rst"
    summary = "DP iterative gradient hard thresholding, exact Gaussian-DP calibration"
    option_keys = {"secure_noise": "round every gradient to a power-of-two grid and add exact discrete Gaussian "
                                   "noise (zCDP)"}

    @staticmethod
    def default_steps(n, epsilon):
        """``T = min(100, max(10, ceil(2 ln(n epsilon))))`` (tuned on sparse designs, :doc:`/user_guide/defaults`).

        ``5 ln(n^2 eps^2/(s ln d))`` (the order of Remark 2.5.9) gives ~80 steps at n = 20,000;
        with the diagonal-curvature step fewer steps reach the same accuracy
        with less noise per step.
        """
        return int(min(100, max(10, math.ceil(2.0 * math.log(max(n * epsilon, 1.0))))))

    def steps(self, problem, budget):
        return int(problem.max_iter or self.default_steps(problem.n, budget.epsilon))

    def noise_std(self, problem, budget, T):
        """``sigma = 2G sqrt(T) / (n mu*)`` through :func:`skdp.privacy.calibrate_gaussian`."""
        return repeated_gaussian_plan(2.0 * problem.clip / problem.n, T, budget).noise_scale

    def make_plan(self, problem, budget):
        sens, T = 2.0 * problem.clip / problem.n, self.steps(problem, budget)
        if secure_noise_option(problem.options):
            return secure_repeated_plan(sens, T, budget, problem.p)
        return repeated_gaussian_plan(sens, T, budget)

    def run(self, problem, plan, rng):
        T, sigma = plan.settings["T"], plan.settings["sigma"]
        eta = problem.learning_rate or problem.default_learning_rate()
        p = problem.p
        secure = plan.settings.get("secure")
        if secure:  # the released gradient itself is the grid point plus discrete noise
            w, _ = ight(lambda v: noisy_release(rng, problem.mean_gradient(v), sigma, secure), p,
                        problem.n_nonzero, eta, T, free=problem.free)
        else:
            w, _ = ight(
                problem.mean_gradient, p, problem.n_nonzero, eta, T, free=problem.free,
                noise=lambda: gaussian_noise(rng, sigma, p),
            )
        return SolverResult(w, T, {"learning_rate": eta})


def teacher_sensitivity(clip, n, teacher_alpha, tol):
    """Replace-one L2 sensitivity of the approximate ridge teacher, ``2G/(n lambda) + 2 tau``.

    The standard strong-convexity argument (see :doc:`/papers/wang2021`): the
    exact minimiser of a ``lambda``-strongly convex
    objective whose per-example gradients are bounded by ``G`` moves by at most
    ``2G/(n lambda)`` when one row is replaced; stopping at gradient norm
    ``<= lambda tau`` puts the returned point within ``tau`` of it on both
    datasets.
    """
    return 2.0 * clip / (n * teacher_alpha) + 2.0 * tol


@register
class DPSLKT(_SparseSolver):
    """``dpsl_kt``: sparse learning by knowledge transfer, rigorous ridge teacher.

    Wang 2021 (dissertation), ch. 3, Alg. 2, with skdp's rigorous teacher (see
    :doc:`/papers/wang2021`). **The paper's l0-constrained teacher has no
    worst-case privacy guarantee** (its minimiser can jump between supports
    when one row changes, so the stability bound of eq. 3.6.3 fails; a
    counterexample is a regression test), so it is not offered. Here:

    1. Teacher: ``theta_hat ~ argmin (1/n) sum phi~(<w, x_i>, y_i) + (lambda/2)||w||^2``
       over all of R^p, where ``phi~`` has its per-example gradients clipped to
       L2 norm ``G``; solved by accelerated gradient descent until the gradient
       norm is ``<= lambda tau``, which puts it within ``tau`` of the exact
       minimiser. Replace-one sensitivity
       ``||theta_hat_S - theta_hat_S'|| <= 2G/(n lambda) + 2 tau``
       (:func:`teacher_sensitivity`).
    2. Transfer: draw ``m`` public synthetic rows ``X~`` independently of the
       data, release ``y^p = X~ theta_hat + N(0, sigma^2 I_m)`` with
       ``Delta_2 = ||X~||_op (2G/(n lambda) + 2 tau)`` computed exactly from the
       realised ``X~``, and ``sigma = Delta_2 / mu*(epsilon, delta)`` (one
       Gaussian release, exact GDP; no delta is spent on a random event).
       With ``solver_options={"secure_noise": True}`` the labels are released
       floating-point safely (:func:`skdp.privacy.discrete.secure_gaussian_release`:
       power-of-two grid, exact discrete Gaussian, ``rho``-zCDP with the
       rounding's cost in ``Delta_2``): somewhat more noise, from the zCDP
       conversion, and a slower release (:doc:`/user_guide/verifying`), so an
       option, not the default.
    3. Student: non-private IGHT on the squared loss over ``(X~, y^p)``
       (post-processing), even for the logistic loss: the student estimates the
       teacher's logit coefficients. The teacher is never stored.

    ``solver_options``: ``teacher_alpha`` (``lambda``; default
    ``sqrt(G sqrt(s ln p ln(1/delta)) / (n epsilon))``, Thm 3.3.5's order with constant 1),
    ``n_synthetic`` (``m``; default ``max(n, ceil(10 s ln p))`` capped so that
    ``m p <= 5e7``: with isotropic synthetic features the student's noise-driven
    error does not depend on ``m``), ``synthetic_features`` (``"uniform"``:
    i.i.d. ``U(-K, K)``, like the paper's ``U(-1, 1)``; or a public array of shape ``(m, n_features)`` that must not come
    from the private data), ``teacher_tol`` (``tau`` relative to
    ``G/(n lambda)``, default 1e-3) and ``student_max_iter`` (default 200).
    """

    name = "dpsl_kt"
    public_schedule = False  # the teacher is solved to a tolerance: its number of passes depends on the data
    source = 'Wang 2021 (dissertation), ch. 3, Alg. 2 (ridge teacher)'
    defaults = 'uniform synthetic features, ridge teacher, IGHT student'
    card = "Alg. 2 with a certified ridge teacher in place of the l0 teacher (which has no worst-case guarantee)"
    reference = "doc/papers/wang2021.rst"
    summary = "knowledge transfer: private ridge teacher -> noisy synthetic labels -> IGHT student"
    option_keys = {
        "teacher_alpha": "ridge strength lambda of the teacher",
        "n_synthetic": "number m of synthetic rows",
        "synthetic_features": '"uniform" or a public feature array',
        "teacher_tol": "teacher accuracy tau relative to G/(n lambda)",
        "student_max_iter": "IGHT iterations of the student",
        "secure_noise": "synthetic labels on a power-of-two grid with exact discrete Gaussian noise (zCDP)",
    }

    def teacher_alpha(self, problem, budget):
        lam = problem.options.get("teacher_alpha")
        if lam is not None:
            return float(lam)
        s, p = problem.n_nonzero, max(problem.p, 2)
        val = problem.clip * math.sqrt(s * math.log(p) * math.log(1.0 / budget.delta)) / (problem.n * budget.epsilon)
        return math.sqrt(val)

    def make_plan(self, problem, budget):
        lam = self.teacher_alpha(problem, budget)
        if not lam > 0:
            raise ValueError(f"dpsl_kt needs teacher_alpha > 0, got {lam!r}.")
        settings = {"teacher_alpha": lam,
                    "tau": float(problem.options.get("teacher_tol", 1e-3)) * problem.clip / (problem.n * lam)}
        if problem.options.get("secure_noise", False):
            rho = zcdp_rho(budget.epsilon, budget.delta)
            return SolverPlan((ZCDPEvent(rho),), rho, dict(settings, rho=rho))
        # The labels' sensitivity is op_norm(X~) times the teacher's, known only once the public synthetic
        # features are drawn; Delta_2 / sigma = mu* whatever it is, so the event is stated per unit of
        # sensitivity (it prices the same) and run scales the noise by the realised sensitivity.
        unit_sigma = calibrate_gaussian(1.0, budget.epsilon, budget.delta)
        return SolverPlan((GaussianEvent(1.0, unit_sigma),), unit_sigma, dict(settings, unit_sigma=unit_sigma))

    def synthetic_features(self, problem, rng):
        spec = problem.options.get("synthetic_features", "uniform")
        d = problem.p - (problem.free is not None)
        K = problem.feature_bound
        if isinstance(spec, str):
            if spec != "uniform":
                raise ValueError(f"synthetic_features must be 'uniform' or an array, got {spec!r}.")
            m = problem.options.get("n_synthetic")
            if m is None:
                m = max(problem.n, math.ceil(10 * problem.n_nonzero * math.log(max(d, 2))))
                m = int(min(m, max(5e7 // max(problem.p, 1), 10 * problem.n_nonzero * math.log(max(d, 2)))))
            Xs = rng.uniform(-K, K, size=(int(m), d))
        else:
            Xs = np.array(spec.toarray() if sp.issparse(spec) else spec, dtype=float)
            if Xs.ndim != 2 or Xs.shape[1] != d or not np.all(np.isfinite(Xs)):
                raise ValueError(
                    f"synthetic_features must be a finite array with {d} columns, got shape {Xs.shape}."
                )
            Xs = np.clip(Xs, -K, K)
        if problem.free is not None:
            Xs = np.hstack([Xs, np.full((Xs.shape[0], 1), K)])
        return Xs

    def _teacher(self, problem, lam, grad_tol):
        """Nesterov AGD on the clipped, lambda-strongly convex objective, to gradient norm <= grad_tol."""
        X = problem.X
        # smoothness of the mean loss: phi'' ||X||_op^2 / n, by power iteration with a safety margin
        v = np.ones(X.shape[1]) / math.sqrt(X.shape[1])
        for _ in range(50):
            Xv = X @ v
            u = np.asarray(X.T @ (Xv if problem.sample_weight is None else problem.sample_weight * Xv)).ravel()
            nu = np.linalg.norm(u)
            if nu == 0:
                break
            v = u / nu
        L = 1.5 * problem.loss.curvature * max(nu, 1e-12) / problem.n + lam
        w = np.zeros(X.shape[1])
        z = w.copy()
        momentum = (math.sqrt(L) - math.sqrt(lam)) / (math.sqrt(L) + math.sqrt(lam))
        best = math.inf
        since = 0
        for it in range(200000):
            g = problem.mean_gradient(z) + lam * z
            w_new = z - g / L
            z = w_new + momentum * (w_new - w)
            w = w_new
            gn = float(np.linalg.norm(problem.mean_gradient(w) + lam * w))
            if gn <= grad_tol:
                return w, it + 1
            if gn < 0.5 * best:
                best, since = gn, 0
            else:
                since += 1
                if since > 200:  # estimate of L too small or slow progress: restart with a safer step
                    L *= 2.0
                    momentum = (math.sqrt(L) - math.sqrt(lam)) / (math.sqrt(L) + math.sqrt(lam))
                    z = w.copy()
                    since = 0
        raise RuntimeError(  # pragma: no cover - strongly convex smooth problem
            "dpsl_kt: the teacher did not reach its gradient tolerance; its sensitivity bound "
            "needs it, so nothing was released."
        )

    def run(self, problem, plan, rng):
        lam, tau = plan.settings["teacher_alpha"], plan.settings["tau"]
        Xs = self.synthetic_features(problem, rng)  # drawn before the data is used
        theta, teacher_iter = self._teacher(problem, lam, lam * tau)
        gram = Xs.T @ Xs
        top = float(linalg.eigvalsh(gram, subset_by_index=[gram.shape[0] - 1, gram.shape[0] - 1])[0])
        op_norm = math.sqrt(max(top, 0.0)) * (1 + 1e-9)
        sens = op_norm * teacher_sensitivity(problem.clip, problem.n, lam, tau)
        if "rho" in plan.settings:
            y_syn, _, sigma, _ = secure_gaussian_release(rng, Xs @ theta, sens, plan.settings["rho"])
        else:
            sigma = sens * plan.settings["unit_sigma"]  # = Delta_2 / mu*
            y_syn = Xs @ theta + gaussian_noise(rng, sigma, Xs.shape[0])
        del theta  # the teacher never leaves this function
        m = Xs.shape[0]
        beta = top / m
        eta = 1.0 / (1.2 * beta) if beta > 0 else 1.0

        def student_grad(w):
            return Xs.T @ (Xs @ w - y_syn) / m

        w, student_iter = ight(
            student_grad, Xs.shape[1], problem.n_nonzero, eta,
            int(problem.options.get("student_max_iter", 200)), free=problem.free, tol=1e-12,
        )
        info = {"teacher_alpha": lam, "n_synthetic": m, "teacher_tol": tau, "synthetic_op_norm": op_norm,
                "student_iter": student_iter, "label_sensitivity": sens}
        return SolverResult(w, student_iter, info, noise_scale=sigma)


@register
class DPFrankWolfeL1(_SparseSolver):
    """``dp_fw_l1``: private Frank-Wolfe over the L1 ball (TTZ15 baseline), Gumbel selection.

    Talwar, Thakurta and Zhang 2015, Alg. 2 (polytope case; the dissertation
    uses it as a baseline without restating it), with skdp's selection (see
    :doc:`/papers/wang2021`): **TTZ15's Laplace scale cannot be certified
    under replace-one** and is not offered. Start at 0; at each of ``T`` steps
    score the ``2p`` vertices ``+-r e_j`` by ``-<v, g>`` where ``g`` is the mean
    of the per-example gradients clipped to L-infinity norm ``L1``; pick one by
    report-noisy-max with Gumbel noise of scale ``2 Delta / eps0``,
    ``Delta = 2 L1 r / n`` (replace-one), which is the exponential mechanism
    and ``eps0``-bounded-range; move ``w <- (1 - mu_t) w + mu_t v`` with
    ``mu_t = 2/(t + 2)``. ``eps0`` is the largest value whose ``T``-fold
    composition the accountant prices at the target. The output is then hard
    thresholded to ``s`` coordinates (post-processing).

    ``solver_options``: ``l1_radius`` (``r``; default ``s / K``, an ``s``-sparse
    vector of unit-scale coefficients in feature units) and ``secure_noise``
    (every selection by the exact exponential mechanism on scores rounded to a
    power-of-two grid, :func:`skdp.privacy.discrete.exponential_mechanism`:
    the same ``eps0``-bounded-range events, the grid's cost, at most 0.1% of
    ``Delta``, in the scale). The grid adds at most that 0.1% to the noise, but
    the exact draw's fixed cost dominates small fits (:doc:`/user_guide/verifying`),
    so it is an option, not the default.
    Default ``T = 2s`` selections.
    """

    name = "dp_fw_l1"
    source = 'Talwar, Thakurta, Zhang 2015 (baseline in Wang 2021)'
    defaults = 'T = 2s selections, L1 radius s/K, then H_s'
    card = "TTZ15 with Gumbel report-noisy-max composed by the accountant (its Laplace scale is not certified)"
    reference = "doc/papers/wang2021.rst"
    summary = "noisy Frank-Wolfe on the L1 ball with Gumbel report-noisy-max"
    pure_dp = True
    clip_order = np.inf
    option_keys = {"l1_radius": "radius r of the L1 ball",
                   "secure_noise": "exact exponential-mechanism selections on grid-rounded scores"}

    def radius(self, problem):
        r = problem.options.get("l1_radius")
        return float(r) if r is not None else problem.n_nonzero / problem.feature_bound

    def steps(self, problem):
        return int(problem.max_iter or 2 * problem.n_nonzero)

    def selection_epsilon(self, problem, budget, T):
        """Per-selection ``eps0``: largest with ``price(T x BoundedRange(eps0)) <= budget``."""
        return calibrate_bounded_range(T, budget.epsilon, budget.delta, budget.relation)

    def make_plan(self, problem, budget):
        T = self.steps(problem)
        eps0 = self.selection_epsilon(problem, budget, T)
        scale, grid = secure_selection_plan(2.0 * problem.clip * self.radius(problem) / problem.n, eps0,
                                            secure_noise_option(problem.options))
        return SolverPlan((BoundedRangeEvent(eps0, T),), scale,
                          {"T": T, "eps0": eps0, "scale": scale, "grid": grid})

    def run(self, problem, plan, rng):
        T, eps0, scale = plan.settings["T"], plan.settings["eps0"], plan.settings["scale"]
        r = self.radius(problem)
        p = problem.p
        w = np.zeros(p)
        for t in range(1, T + 1):
            g = problem.mean_gradient(w)
            scores = np.concatenate([-r * g, r * g])  # vertex +r e_j scores -r g_j; -r e_j scores r g_j
            j = select(rng, scores, scale, plan.settings["grid"])
            v_idx, sign = (j, 1.0) if j < p else (j - p, -1.0)
            mu = 2.0 / (t + 2.0)
            w *= 1.0 - mu
            w[v_idx] += mu * sign * r
        w = hard_threshold(w, problem.n_nonzero, problem.free)
        return SolverResult(w, T, {"l1_radius": r, "selection_epsilon": eps0})


@register
class TwoStage(_SparseSolver):
    """``two_stage``: private support selection, then objective perturbation on it (KST12 baseline).

    Kifer, Smith and Thakurta 2012 (the dissertation's "two stage" baseline,
    not restated there), with objective perturbation calibrated for
    replace-one as in ``obj_pert`` (see :doc:`/papers/bassily_feldman_talwar_thakurta2019`).

    Budget: ``epsilon/2`` to each stage, ``delta`` to stage 2 (basic
    composition, as the accountant prices it).

    1. Subsample and aggregate: a data-independent random partition into
       ``k = floor(sqrt(n))`` blocks; non-private IGHT (step ``1/(phi'' K^2)``,
       100 iterations) and ``H_s`` on each; the vote vector ``c = mean of the
       support indicators`` has replace-one L1 sensitivity ``2s/k`` (one block
       changes, at most ``2s`` entries by ``1/k``). Release
       ``c + Lap(2s/(k eps1))^d`` (pure ``eps1``-DP) and keep its top ``s``.
    2. Objective perturbation (:class:`~skdp.solvers.perturbation.ObjectivePerturbation`,
       the one shared implementation) on the selected columns and the
       intercept column, whose rows have L2 norm ``<= sqrt(s + 1) K``; the
       squared loss is solved exactly on the ball ``||w|| <= R`` with labels
       clipped to the public ``label_bound`` (required).

    ``solver_options``: ``n_blocks`` (default ``floor(sqrt(n))``) and
    ``coef_norm`` (``R`` for the squared loss; default ``B / K``).
    """

    name = "two_stage"
    needs_public_label_bound = True  # objective perturbation of the exact squared loss
    public_schedule = False  # the block fits stop at a tolerance: their work depends on the data
    source = 'Kifer, Smith, Thakurta 2012 (baseline in Wang 2021)'
    defaults = 'k = isqrt(n) blocks, votes + Laplace, then obj_pert on the support'
    card = "KST12 support selection, then the replace-one objective perturbation of obj_pert"
    reference = "doc/papers/wang2021.rst"
    summary = "subsample-and-aggregate support selection + objective perturbation on the support"
    clip_order = None
    option_keys = {"n_blocks": "number k of disjoint blocks", "coef_norm": "radius R (squared loss)"}
    secure_noise_refusal = ("its second stage is objective perturbation, whose guarantee is a change of variables "
                            "on the continuous noise density (Kifer, Smith, Thakurta 2012): no discrete variant "
                            "is priced by the accountant")
    block_iter = 100

    def n_blocks(self, problem):
        k = problem.options.get("n_blocks")
        if k is None:
            return max(1, int(math.isqrt(problem.n)))
        if isinstance(k, bool) or int(k) != k or not 1 <= k <= problem.n:
            raise ValueError(f"n_blocks must be an integer in [1, n_samples={problem.n}], got {k!r}.")
        return int(k)

    def _split(self, budget):
        return PrivacyBudget(budget.epsilon / 2, 0.0), PrivacyBudget(budget.epsilon / 2, budget.delta)

    def vote_event(self, problem, budget):
        k = self.n_blocks(problem)
        s = problem.n_nonzero
        eps1 = self._split(budget)[0].epsilon
        return LaplaceEvent(2.0 * s / k, 2.0 * s / (k * eps1))

    def stage2_problem(self, problem, columns, n=None):
        """Stage 2's problem on ``columns``: a :class:`~skdp.solvers.Problem` over those columns of a
        :class:`SparseProblem`'s rows, or the :class:`~skdp.solvers.PublicProblem` planned on for a
        :class:`PublicSparseProblem`."""
        K = problem.feature_bound
        R = problem.options.get("coef_norm")
        B = problem.label_bound
        if not problem.loss.globally_lipschitz:  # the squared loss: bounded only on a ball, for bounded labels
            if B is None:
                raise ValueError("solver='two_stage' needs a public label_bound for the squared loss.")
            R = float(R) if R is not None else B / K
        else:
            R = None
        public = dict(loss=problem.loss, penalty=L2Penalty(0.0, radius=R), data_norm=math.sqrt(len(columns)) * K,
                      label_bound=B, coef_norm=R, n_samples=problem.n if n is None else n,
                      max_sample_weight=problem.max_sample_weight)
        if not isinstance(problem, SparseProblem):  # planning: the data-free sub-problem
            return PublicProblem(**public)
        return Problem(X=problem.X[:, columns], y=problem.y, norms=None, sample_weight=problem.sample_weight,
                       **public)

    def _columns(self, problem, support):
        cols = list(np.sort(support))
        if problem.free is not None:
            cols.append(problem.free)
        return np.asarray(cols, dtype=int)

    def make_plan(self, problem, budget):
        s = problem.n_nonzero
        cols = np.arange(s + (problem.free is not None))
        b2 = self._split(budget)[1]
        stage2 = get_solver("obj_pert").plan(self.stage2_problem(problem, cols), b2)
        vote = self.vote_event(problem, budget)
        return SolverPlan((vote, *stage2), vote.scale, {"k": self.n_blocks(problem), "vote": vote, "budget2": b2})

    def run(self, problem, plan, rng):
        n, p, s = problem.n, problem.p, problem.n_nonzero
        k, event1, b2 = plan.settings["k"], plan.settings["vote"], plan.settings["budget2"]
        features = np.array([j for j in range(p) if j != problem.free])
        blocks = np.array_split(rng.permutation(n), k)  # data-independent partition
        eta = problem.default_learning_rate()
        votes = np.zeros(p)
        for rows in blocks:
            Xb, yb = problem.X[rows], problem.y[rows]
            sw = None if problem.sample_weight is None else problem.sample_weight[rows]

            def grad(w, Xb=Xb, yb=yb, sw=sw):
                return np.asarray(Xb.T @ weigh(problem.loss.derivative(Xb @ w, yb), sw)).ravel() / Xb.shape[0]

            wb, _ = ight(grad, p, s, eta, self.block_iter, free=problem.free, tol=1e-10)
            votes[np.flatnonzero(wb)] += 1.0
        votes /= k
        noisy = votes[features] + laplace_noise(rng, event1.scale, features.size)
        order = np.argsort(-noisy, kind="stable")[: min(s, features.size)]
        support = features[order]
        cols = self._columns(problem, support)
        sub = self.stage2_problem(problem, cols)
        # obj_pert plans stage 2 from the public view of the selected columns: the events planned above
        result = get_solver("obj_pert").solve(sub, b2, rng)
        w = np.zeros(p)
        w[cols] = result.coef
        info = {"n_blocks": k, "vote_scale": event1.scale, "stage2_noise": result.noise_scale,
                "coef_norm": sub.coef_norm, **{f"stage2_{key}": v for key, v in result.info.items()}}
        diagnostics = {f"stage2_{key}": v for key, v in result.diagnostics.items()}
        return SolverResult(w, 1, info, diagnostics, noise_scale=result.noise_scale)
