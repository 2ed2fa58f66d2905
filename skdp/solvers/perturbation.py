"""Perturbation solvers: ``output_pert`` and ``obj_pert``.

References
----------
.. [1] J. Zhang, K. Zheng, W. Mou and L. Wang, "Efficient private ERM for smooth objectives",
   IJCAI 2017. <https://arxiv.org/abs/1703.09947>
.. [2] R. Bassily, V. Feldman, K. Talwar and A. Thakurta, "Private stochastic convex
   optimization with optimal rates", NeurIPS 2019. <https://arxiv.org/abs/1908.09970>
.. [3] D. Kifer, A. Smith and A. Thakurta, "Private convex empirical risk minimization and
   high-dimensional regression", COLT 2012, PMLR 23.
   <https://proceedings.mlr.press/v23/kifer12.html>
.. [4] K. Chaudhuri, C. Monteleoni and A. D. Sarwate, "Differentially private empirical risk
   minimization", Journal of Machine Learning Research 12, 2011.
   <https://arxiv.org/abs/0912.0071>
.. [5] R. Iyengar, J. P. Near, D. Song, O. Thakkar, A. Thakurta and L. Wang, "Towards practical
   differentially private convex optimization", IEEE S&P 2019.
.. [6] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy:
   analytical calibration and optimal denoising", ICML 2018. <https://arxiv.org/abs/1805.06530>
.. [7] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
   privacy", NeurIPS 2020. <https://arxiv.org/abs/2004.00010>
"""

import math
from dataclasses import replace

import numpy as np
from scipy import linalg, optimize, sparse, special

from ..losses import LogisticLoss, get_loss
from ..privacy import (
    ApproxDPEvent,
    GaussianEvent,
    L2LaplaceEvent,
    PureDPEvent,
    calibrate_gaussian,
    gaussian_noise,
    l2_laplace_noise,
    objective_perturbation_gaussian,
    objective_perturbation_pure,
    pure_noise_scale,
    ZCDPEvent,
    zcdp_rho,
)
from ..privacy.discrete import secure_gaussian_release, secure_laplace_release
from ..exceptions import UncertifiedSolutionError
from ..penalties import project_l2_ball
from ._base import Problem, PublicProblem, Solver, SolverPlan, SolverResult, register, report_rows

__all__ = ["OutputPerturbation", "ObjectivePerturbation", "ObjectivePerturbationSVRG"]


@register
class OutputPerturbation(Solver):
    """``output_pert``: full-batch gradient descent, then one noise draw on the output.

    Zhang, Zheng, Mou and Wang 2017, Alg. 1, strongly convex mode, with the
    **tight** sensitivity of the ``T``-step contraction (see :doc:`/papers/zhang_zheng_mou_wang2017`):
    ``T`` steps ``w <- w - eta (grad L(w) + alpha w)`` from ``w = 0`` with
    ``eta = 1/(beta + 2 alpha)`` move, under replace-one with public ``n``, by at
    most ``Delta_T = (2 G / (n alpha)) (1 - (1 - eta alpha)^T)``, where ``G`` is the
    per-example gradient bound of the data loss. The L2 penalty covers every
    coordinate, the intercept column included (the strongly convex
    sensitivity needs strong convexity in every coordinate).
    For the squared loss, iterates are projected onto the public ball
    ``||w|| <= M`` (projection is non-expansive, so the recursion is
    unchanged) and per-example gradients are clipped to ``G`` (``DPRidge``
    uses ``G = K B``). For a GLM, clipping ``phi'(z) x`` to norm ``G`` is the
    exact gradient of a Huber-type surrogate that is still convex and
    ``K^2``-smooth, which is all the contraction argument needs. The same holds
    for the binary logistic loss (clipped at ``K/2``); for the multinomial loss,
    where norm clipping of the logit gradient has no such surrogate, the
    exact loss is used with ``G = sqrt(2) K``.

    Noise: ``delta = 0`` adds L2-Laplace noise of scale ``Delta_T/epsilon``
    (pure epsilon-DP); ``delta > 0`` adds Gaussian noise from the analytic
    calibration (Balle-Wang 2018; the paper's ``sqrt(2 ln(2/delta))``
    constant is looser). ``T = max_iter`` is fixed in advance; no early stop.

    ``solver_options={"secure_noise": True}`` (``delta > 0``) releases the
    output floating-point safely instead: rounded to a public power-of-two
    grid and perturbed with the exact discrete Gaussian
    (:func:`skdp.privacy.discrete.secure_gaussian_release`), priced as
    ``rho``-zCDP with ``rho`` the largest value the accountant converts to the
    target (the tight conversion of Canonne-Kamath-Steinke 2020, Cor. 13) and the rounding's cost added to the
    sensitivity. The zCDP conversion is not tight against the analytic
    Gaussian, so one release needs somewhat more noise, and the exact sampler
    is slower (:doc:`/user_guide/verifying` gives both costs): an option, not
    the default. With ``delta = 0`` it is
    the geometric mechanism instead (:func:`skdp.privacy.discrete.secure_laplace_release`:
    i.i.d. discrete Laplace noise on a grid, pure ``epsilon``-DP,
    ``PureDPEvent(epsilon)``), whose L1 sensitivity is ``sqrt(d) Delta_T``
    (``||v||_1 <= sqrt(d) ||v||_2`` for the ``d`` released coordinates) plus the
    grid's cost: its noise has an expected L2 norm about ``sqrt(2)`` times the
    L2-Laplace noise's (``sqrt(2 d) sqrt(d) Delta_T / epsilon`` against ``d
    Delta_T / epsilon``).
    """

    name = "output_pert"
    source = 'Zhang, Zheng, Mou, Wang 2017, Alg. 1'
    defaults = 'T = 40 GD steps, step 1/(beta + 2 alpha)'
    card = "Alg. 1 with the tight replace-one sensitivity of T GD steps, analytic Gaussian or L2-Laplace noise"
    reference = "doc/papers/zhang_zheng_mou_wang2017.rst"
    pure_dp = True
    needs_strong_convexity = True
    summary = "gradient descent + one output noise draw (L2-Laplace or Gaussian)"
    #: k regression targets: the jointly clipped (p, k) gradient of ||W^T x - y||^2 / 2 is the gradient of
    #: a Huber function of the residual's norm, still convex and K^2-smooth (the contraction holds)
    multi_output = True
    default_max_iter = 40
    option_keys = {"secure_noise": "release on a power-of-two grid with exact discrete Gaussian noise (zCDP), "
                                   "or discrete Laplace noise (pure epsilon-DP) when delta = 0"}

    def sensitivity(self, problem, T):
        mu = problem.penalty.alpha
        eta = self.learning_rate(problem)
        return 2 * problem.gradient_bound / (problem.n * mu) * (1 - (1 - eta * mu) ** T)

    def learning_rate(self, problem):
        return 1.0 / (problem.smoothness + 2 * problem.penalty.alpha)

    def noise(self, problem, budget, T):
        """(kind, scale, event) for the calibrated output noise."""
        sens = self.sensitivity(problem, T)
        if problem.options.get("secure_noise", False):
            if budget.delta == 0:  # the geometric mechanism: L1 sensitivity sqrt(d) sens, pure epsilon-DP
                return "discrete_laplace", budget.epsilon, PureDPEvent(budget.epsilon)
            rho = zcdp_rho(budget.epsilon, budget.delta)
            return "discrete_gaussian", rho, ZCDPEvent(rho)
        if budget.delta == 0:
            scale = pure_noise_scale(sens, budget.epsilon)
            return "l2_laplace", scale, L2LaplaceEvent(sens, scale)
        sigma = calibrate_gaussian(sens**2, budget.epsilon, budget.delta)
        return "gaussian", sigma, GaussianEvent(sens, sigma)

    @staticmethod
    def _exact_if_multinomial(problem):
        if not problem.loss.scalar and problem.clip_norm is not None:
            # Norm-clipping a vector-valued GLM gradient is not the gradient of a
            # convex surrogate, so the contraction argument would not cover it:
            # run on the exact loss with G = sqrt(2) K instead.
            return replace(problem, clip_norm=None)
        return problem

    def make_plan(self, problem, budget):
        problem = self._exact_if_multinomial(problem)
        T = problem.max_iter or self.default_max_iter
        kind, scale, event = self.noise(problem, budget, T)
        return SolverPlan((event,), scale, {"T": T, "kind": kind, "scale": scale,
                                            "sensitivity": self.sensitivity(problem, T)})

    def run(self, problem, plan, rng):
        problem = self._exact_if_multinomial(problem)
        T, kind, scale = plan.settings["T"], plan.settings["kind"], plan.settings["scale"]
        eta = self.learning_rate(problem)
        alpha = problem.penalty.alpha
        radius = problem.coef_norm
        w = np.zeros(problem.coef_shape)
        for _ in range(T):
            w = project_l2_ball(w - eta * (problem.mean_gradient(w) + alpha * w), radius)
        info = {"noise": kind, "sensitivity": plan.settings["sensitivity"]}
        released_scale = None
        if kind == "discrete_gaussian":
            w, _, released_scale, info["grid"] = secure_gaussian_release(rng, w, info["sensitivity"], scale)
        elif kind == "discrete_laplace":  # ||v||_1 <= sqrt(d) ||v||_2: the L1 sensitivity of the output
            l1 = math.sqrt(w.size) * info["sensitivity"]
            w, _, released_scale, info["grid"] = secure_laplace_release(rng, w, l1, scale)
        elif kind == "gaussian":
            w = w + gaussian_noise(rng, scale, w.shape)
        else:
            w = w + l2_laplace_noise(rng, scale, w.shape)
        return SolverResult(w, T, info, noise_scale=released_scale)


@register
class ObjectivePerturbation(Solver):
    """``obj_pert``: objective perturbation, replace-one calibration.

    Bassily, Feldman, Talwar and Thakurta 2019, Alg. 2 (Kifer, Smith and
    Thakurta 2012; Chaudhuri, Monteleoni and Sarwate 2011 for pure epsilon),
    recalibrated for replace-one (see :doc:`/papers/bassily_feldman_talwar_thakurta2019`): a swap moves one
    per-example gradient by ``2 zeta``, so the printed KST12/BFTT constants
    (a change of ``zeta``, i.e. add/remove) are **not** private here. We release the exact minimiser of
    ``(1/n) sum phi + ((alpha + extra)/2) ||w||^2 + <b, w>/n`` where

    * ``delta > 0``: ``b ~ N(0, sigma^2 I)``, sigma and the extra L2 strength
      from :func:`skdp.privacy.objective_perturbation_gaussian` (``epsilon`` split
      half Jacobian, half noise);
    * ``delta = 0``: CMS11 Alg. 2 with general constants,
      :func:`skdp.privacy.objective_perturbation_pure` (logistic only: the
      squared loss is not Lipschitz on R^d).

    ``zeta`` is the per-example gradient bound and ``lambda_H`` the per-example
    Hessian bound (``K^2/4`` logistic, ``K^2`` squared). Every coordinate,
    intercept included, is penalised.

    **Only a certified point is released.** The proofs (Kifer, Smith and
    Thakurta 2012, Thm. 2; Chaudhuri, Monteleoni and Sarwate 2011, Alg. 2)
    cover the exact minimiser. The minimiser is computed by L-BFGS and, if
    needed, Newton steps (dense or CSR: the Hessian ``X^T diag(c) X / n`` is
    formed sparsely), and the gradient norm of the perturbed objective at
    the returned point (the constrained KKT residual for the ball) is checked
    against ``certificate_tol * max(1, ||b||/n)`` (``certificate_tol=1e-8``).
    With ``lam``-strong convexity that puts the point within
    ``certificate_tol/lam`` of the exact minimiser, i.e. at the level of
    floating-point rounding of the objective. If the check fails, the fit
    raises ``RuntimeError`` and releases nothing (it never warns and releases
    an inexact point). The residual is a statistic of the data: it is kept in
    :func:`skdp.fit_diagnostics`, not in ``solver_info_``.
    For the squared loss the exact minimiser over the public ball
    ``||w|| <= M`` is found by an eigendecomposition and a secular equation
    (KST12 covers closed convex domains). The multinomial loss has a
    Hessian of rank > 1, so multiclass problems are fitted one-vs-rest with
    the budget split evenly (``k`` events of ``(epsilon/k, delta/k)``, basic
    composition). Priced by the theorem as an ``ApproxDPEvent``.
    """

    name = "obj_pert"
    iterative = False
    public_schedule = False  # solved to a tolerance: the number of passes depends on the data
    source = 'Bassily, Feldman, Talwar, Thakurta 2019, Alg. 2 (KST12 / CMS11)'
    defaults = 'epsilon split half Jacobian, half noise; exact minimiser (L-BFGS + Newton)'
    card = "Alg. 2 recalibrated for replace-one (gradient change 2 zeta, Jacobian term), exact minimiser on the ball for squared loss"
    reference = "doc/papers/bassily_feldman_talwar_thakurta2019.rst"
    pure_dp = True
    summary = "objective perturbation (KST12 / CMS11), replace-one constants"
    secure_noise_refusal = ("objective perturbation's guarantee is a change of variables on the continuous noise "
                            "density (Kifer, Smith, Thakurta 2012): no discrete variant is priced by the accountant; "
                            "use solver='output_pert' or 'dp_gd' for floating-point-safe noise")

    def check(self, loss_name, delta, alpha=0.0):
        super().check(loss_name, delta, alpha)
        if not get_loss(loss_name).globally_lipschitz and delta == 0:
            raise ValueError(
                "solver='obj_pert' has no pure-epsilon (delta=0) variant for the squared loss "
                "(CMS11 needs a loss that is Lipschitz on all of R^d); use delta > 0 or "
                "solver='output_pert'."
            )

    def noise(self, problem, epsilon, delta):
        """(kind, scale, extra_alpha) for one binary / regression problem."""
        zeta = problem.lipschitz_bound  # exact loss: no clipping inside objective perturbation
        lam_h = problem.hessian_bound  # both W times the loss's for rows of weight <= W
        alpha = problem.penalty.alpha
        jf = problem.options.get("jacobian_fraction", 0.5)
        if delta == 0:
            scale, extra = objective_perturbation_pure(zeta, lam_h, problem.n, alpha, epsilon)
            return "l2_laplace", scale, extra
        sigma, extra = objective_perturbation_gaussian(zeta, lam_h, problem.n, alpha, epsilon, delta, jf)
        return "gaussian", sigma, extra

    @staticmethod
    def _binary(problem, y=None):
        """One-vs-rest sub-problem: the binary logistic loss on the same bounded rows (labels ``y``).

        The :class:`~skdp.solvers.PublicProblem` of that sub-problem for a data-free ``problem`` (planning).
        """
        public = dict(loss=LogisticLoss(), penalty=problem.penalty, data_norm=problem.data_norm,
                      options=problem.options, n_samples=problem.n, n_features=problem.p,
                      max_sample_weight=problem.max_sample_weight)
        if not isinstance(problem, Problem):
            return PublicProblem(**public)
        return Problem(X=problem.X, y=y, norms=problem.norms, sample_weight=problem.sample_weight,
                       progress=problem.progress, **public)

    def make_plan(self, problem, budget):
        k = problem.n_outputs
        if k > 1:  # one-vs-rest: k binary fits at (epsilon/k, delta/k) each, basic composition
            kind, scale, extra = self.noise(self._binary(problem), budget.epsilon / k, budget.delta / k)
            events = (ApproxDPEvent(budget.epsilon / k, budget.delta / k, k),)
        else:
            kind, scale, extra = self.noise(problem, budget.epsilon, budget.delta)
            events = (ApproxDPEvent(budget.epsilon, budget.delta),)
        return SolverPlan(events, scale, {"kind": kind, "scale": scale, "extra": extra})

    def run(self, problem, plan, rng):
        kind, scale, extra = (plan.settings[k] for k in ("kind", "scale", "extra"))
        if problem.n_outputs > 1:
            return self._solve_ovr(problem, kind, scale, extra, rng)
        w, info, diag = self._solve_one(problem, kind, scale, extra, rng)
        return SolverResult(w, 1, info, diag)

    def _solve_ovr(self, problem, kind, scale, extra, rng):
        coefs, infos = [], []
        for c in range(problem.n_outputs):
            sub = self._binary(problem, np.where(problem.y == c, 1.0, -1.0))
            w, info, diag = self._solve_one(sub, kind, scale, extra, rng)
            coefs.append(w)
            infos.append((info, diag))
        info = {
            "noise": infos[0][0]["noise"],
            "extra_alpha": infos[0][0]["extra_alpha"],
            "one_vs_rest": True,
        }
        diag = {"kkt_residual": max(d["kkt_residual"] for _, d in infos)}
        return SolverResult(np.column_stack(coefs), 1, info, diag)

    def _solve_one(self, problem, kind, scale, extra, rng):
        p = problem.X.shape[1]
        b = gaussian_noise(rng, scale, p) if kind == "gaussian" else l2_laplace_noise(rng, scale, p)
        lam = problem.penalty.alpha + extra
        n = problem.n
        if problem.loss.quadratic:
            w, resid = _ridge_on_ball(problem.X, problem.y, lam, b / n, problem.coef_norm, problem.sample_weight)
        else:
            w, resid = _minimise_smooth(problem, lam, b / n)
        _certify(resid, b / n)
        info = {"noise": kind, "extra_alpha": extra, "alpha_effective": lam}
        return w, info, {"kkt_residual": resid}


#: relative gradient-norm tolerance of objective perturbation's certificate (see ObjectivePerturbation)
CERTIFICATE_TOL = 1e-8
#: Newton steps allowed after L-BFGS
NEWTON_STEPS = 20


def _certify(resid, lin):
    """Refuse to release a point whose perturbed-objective gradient norm is above the certificate.

    The gradient norm is a statistic of the private rows: it goes to the
    estimator's :func:`~skdp.fit_diagnostics`, not into the message.
    """
    tol = CERTIFICATE_TOL * max(1.0, float(np.linalg.norm(lin)))
    if not resid <= tol:
        raise UncertifiedSolutionError(
            "obj_pert could not certify its minimiser: the perturbed objective's gradient norm at the returned "
            "point is above the certificate's tolerance (its value is in skdp.fit_diagnostics(estimator)"
            "['kkt_residual']), and the privacy proof covers only the exact minimiser; refusing to release it. "
            "A larger alpha (better conditioning) or solver='obj_pert_svrg' (which pays for an approximate "
            "minimiser with output noise) avoids this.",
            {"kkt_residual": float(resid)},
        )


def _scale_rows(X, factors):
    """``diag(factors) X`` (dense or CSR)."""
    if sparse.issparse(X):
        return sparse.csr_matrix(sparse.diags(factors) @ X)
    return X * np.asarray(factors)[:, None]


def _hessian(X, curv, lam):
    """``X^T diag(curv) X / n + lam I`` as a dense p x p array (X dense or sparse)."""
    n, p = X.shape
    if sparse.issparse(X):
        H = (X.T @ sparse.diags(curv) @ X).toarray()
    elif hasattr(X, "gram"):  # a lazy design: by blocks of rows, no weighted copy of X
        H = X.gram(curv)
    else:
        H = X.T @ (X * curv[:, None])
    return np.asarray(H) / n + lam * np.eye(p)


def _minimise_smooth(problem, lam, lin):
    """Minimiser of (weighted) mean loss + lam/2 ||w||^2 + <lin, w> and its gradient norm (see ``_certify``)."""
    X, y, loss = problem.X, problem.y, problem.loss

    def fun(w):
        report_rows(problem, X.shape[0])
        Z = X @ w
        val = float(np.mean(problem.weigh(loss.value(Z, y)))) + 0.5 * lam * w @ w + lin @ w
        grad = np.asarray(X.T @ problem.weigh(loss.derivative(Z, y))) / X.shape[0] + lam * w + lin
        return val, grad

    scale = max(1.0, float(np.linalg.norm(lin)))
    res = optimize.minimize(
        fun, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
        options={"maxiter": 20000, "gtol": 1e-12 * scale, "ftol": 0.0, "maxcor": 30},
    )
    w = res.x
    resid = float(np.linalg.norm(fun(w)[1]))
    if resid > 1e-10 * scale:
        # Newton polish: the objective is lam-strongly convex and smooth.
        for _ in range(NEWTON_STEPS):
            H = _hessian(X, problem.weigh(loss.curvature_at(X @ w, y)), lam)
            w = w - linalg.solve(H, fun(w)[1], assume_a="pos")
            resid = float(np.linalg.norm(fun(w)[1]))
            if resid <= 1e-10 * scale:
                break
    return w, resid


def _ridge_on_ball(X, y, lam, lin, radius, sample_weight=None):
    """Exact minimiser of ||Xw - y||^2/(2n) + lam/2 ||w||^2 + <lin, w> over ||w|| <= radius.

    With ``sample_weight`` the squared residuals are weighted (``X^T W X``, ``X^T W y``).

    A trust-region subproblem: eigendecompose ``H = X^T X / n + lam I``; the
    minimiser is ``(H + nu I)^{-1} g`` with ``nu >= 0`` the root of the secular
    equation ``||(H + nu I)^{-1} g|| = radius`` when the unconstrained solution is
    outside the ball. Returns the solution and its constrained KKT residual.
    """
    n = X.shape[0]
    if hasattr(X, "gram"):  # a lazy design: X^T W X and X^T W y in one pass
        G = X.gram(weights=sample_weight, extra=np.asarray(y, dtype=float))
        p = X.shape[1]
        XtX, g = G[:p, :p] / n, G[:p, p] / n - lin
    else:
        Xw = X if sample_weight is None else _scale_rows(X, sample_weight)
        XtX = Xw.T @ X
        XtX = np.asarray(XtX.toarray() if sparse.issparse(XtX) else XtX) / n
        g = np.asarray(Xw.T @ y).ravel() / n - lin
    evals, evecs = linalg.eigh(XtX)
    evals = np.maximum(evals, 0.0) + lam
    gt = evecs.T @ g

    def sol(nu):
        return evecs @ (gt / (evals + nu))

    w = sol(0.0)
    nu = 0.0
    if radius is not None and np.linalg.norm(w) > radius:
        f = lambda nu: np.linalg.norm(gt / (evals + nu)) - radius  # noqa: E731
        hi = 1.0
        while f(hi) > 0:
            hi *= 2
        nu = optimize.brentq(f, 0.0, hi, xtol=1e-15, rtol=1e-14)
        w = sol(nu)
        w = project_l2_ball(w, radius)
    grad = XtX @ w + lam * w - g
    resid = float(np.linalg.norm(grad + nu * w))
    return w, resid


@register
class ObjectivePerturbationSVRG(ObjectivePerturbation):
    """``obj_pert_svrg``: approximately minimised objective perturbation plus a small output noise.

    Bassily, Feldman, Talwar and Thakurta 2019, section 5 ("efficient
    objective perturbation", whose details the paper defers to its full
    version), reconstructed for skdp along the lines of the approximate minima
    perturbation of Iyengar et al. 2019 (see :doc:`/papers/bassily_feldman_talwar_thakurta2019`). The budget is split
    ``eps1 = eps/2``, ``eps2 = eps/4``, ``delta1 = delta / (2 e^eps2)``,
    ``delta2 = delta / (2 (1 + e^(eps1 + eps2)))``. The perturbed objective
    ``J(w) = mean loss + ((alpha + extra)/2)||w||^2 + <b, w>/n`` is drawn with
    ``obj_pert``'s replace-one calibration at ``(eps1, delta1)`` (one
    implementation for all objective perturbation), minimised by
    mini-batch SVRG **until the certificate** ``||grad J(w~)|| <= (alpha +
    extra) r`` holds (so ``||w~ - w_hat|| <= r`` by strong convexity; an
    uncertified point is never released: if SVRG's epoch cap is hit, an exact
    solver finishes, and failing that the fit raises). The output is
    ``w~ + N(0, s2^2 I)`` with ``s2`` the analytic Gaussian std for
    sensitivity ``r`` at ``(eps2, delta2)``. The chained argument
    ``w_out(S) ~ M0(S) ~ M0(S') ~ w_out(S')``, with ``M0`` the exact perturbed
    minimiser plus the same output noise, gives ``(eps1 + 2 eps2, delta2 + e^eps2 delta1 + e^(eps1+eps2) delta2)``
    = ``(eps, delta)``, priced as one ``ApproxDPEvent``. ``r = eps2 M /
    (sqrt(n d) sqrt(2 ln(1.25/delta2)))`` with the public scale
    ``M = sqrt(2 ln 2 / (alpha + extra))``. The number of SVRG epochs depends
    on the data and is not reported. ``delta = 0`` and the squared loss are
    not supported (the certificate needs ``W = R^d`` and a global Lipschitz
    bound). Binary logistic only.
    """

    name = "obj_pert_svrg"
    card = "Sec. 5 reconstructed: certified SVRG solve of the replace-one objective perturbation, then output noise, chained"
    reference = "doc/papers/bassily_feldman_talwar_thakurta2019.rst"
    source = "Bassily, Feldman, Talwar, Thakurta 2019, Sec. 5 (efficient objective perturbation)"
    requires = frozenset({"smooth", "scalar", "globally_lipschitz"})
    pure_dp = False
    summary = "objective perturbation solved by certified mini-batch SVRG, then a small Gaussian output noise"
    defaults = "eps1 = eps/2, eps2 = eps/4, SVRG batch ceil(sqrt n), step 1/(4 beta_J), certificate radius r"
    max_epochs = 60

    def check(self, loss_name, delta, alpha=0.0):
        Solver.check(self, loss_name, delta, alpha)

    @staticmethod
    def split(budget):
        eps, delta = budget.epsilon, budget.delta
        eps1, eps2 = eps / 2, eps / 4
        d1 = delta / 2 * np.exp(-eps2)
        d2 = delta / 2 * special.expit(-(eps1 + eps2))  # delta / (2 (1 + e^(eps1 + eps2)))
        if not (d1 > 0 and d2 > 0):
            raise ValueError(
                f"obj_pert_svrg's budget split underflows at epsilon={eps!r} (its delta shares vanish); "
                "use solver='obj_pert'."
            )
        return eps1, eps2, float(d1), float(d2)

    @staticmethod
    def chained(eps1, eps2, d1, d2):
        """The (epsilon, delta) of the chained argument (see the class docstring)."""
        return eps1 + 2 * eps2, d2 + np.exp(eps2) * d1 + np.exp(eps1 + eps2) * d2

    def make_plan(self, problem, budget):
        eps1, eps2, d1, d2 = self.split(budget)
        eps_t, delta_t = self.chained(eps1, eps2, d1, d2)
        kind, scale, extra = self.noise(problem, eps1, d1)
        lam = problem.penalty.alpha + extra
        r = self.certificate_radius(problem, lam, eps2, d2)
        return SolverPlan((ApproxDPEvent(min(eps_t, budget.epsilon), min(float(delta_t), budget.delta)),), scale,
                          {"scale": scale, "extra": extra, "lam": lam, "radius": r,
                           "output_noise": calibrate_gaussian(r**2, eps2, d2)})

    def certificate_radius(self, problem, lam, eps2, d2):
        M = np.sqrt(2 * np.log(2) / lam)
        return eps2 * M / (np.sqrt(problem.n * problem.p) * np.sqrt(2 * np.log(1.25 / d2)))

    def run(self, problem, plan, rng):
        scale, extra, lam, r, s2 = (plan.settings[k] for k in ("scale", "extra", "lam", "radius", "output_noise"))
        p, n = problem.p, problem.n
        b = gaussian_noise(rng, scale, p)
        w = _svrg_certified(problem, lam, b / n, lam * r, rng, self.max_epochs)
        out = w + gaussian_noise(rng, s2, p)
        info = {"extra_alpha": extra, "alpha_effective": lam, "certificate_radius": r, "output_noise": s2}
        return SolverResult(out, 1, info)


def _svrg_certified(problem, lam, lin, tol, rng, max_epochs):
    """Minimise ``mean loss + lam/2 ||w||^2 + <lin, w>`` until ``||grad|| <= tol``; never returns uncertified."""
    X, y, loss, n = problem.X, problem.y, problem.loss, problem.n

    def grad(w, rows=None, m=None):
        report_rows(problem, n if rows is None else rows.size)
        Xr, yr = (X, y) if rows is None else (X[rows], y[rows])
        S = problem.weigh(loss.derivative(Xr @ w, yr), rows)
        return np.asarray(Xr.T @ S) / (Xr.shape[0] if m is None else m)

    beta_j = problem.smoothness + lam
    eta = 1.0 / (4 * beta_j)
    bs = min(n, int(np.ceil(np.sqrt(n))))
    inner = max(1, int(np.ceil(2 * n / bs)))
    w = np.zeros(problem.p)
    for _ in range(max_epochs):
        full = grad(w) + lam * w + lin
        if np.linalg.norm(full) <= tol:
            return w
        snap, snap_data = w.copy(), full - lam * w - lin
        for _ in range(inner):
            rows = rng.randint(0, n, size=bs)
            v = grad(w, rows) - grad(snap, rows) + snap_data + lam * w + lin
            w = w - eta * v
    w, _ = _minimise_smooth(problem, lam, lin)
    if np.linalg.norm(grad(w) + lam * w + lin) <= tol:
        return w
    raise UncertifiedSolutionError(  # pragma: no cover - strongly convex smooth problem
        "obj_pert_svrg could not certify its approximate minimiser; refusing to release it."
    )
