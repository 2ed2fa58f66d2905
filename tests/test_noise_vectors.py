"""Independent noise-scale vectors: every registered solver's drawn noise against a hand derivation.

tests/test_draws.py checks that a fit draws the scale it planned, which holds by construction
when the plan itself is wrong (a per-row bound of G where 2G is due lowers the noise and the price
together). Here the expected scale of every draw is derived in this file from first principles,
for a fixed public setting, and compared with the scales a fit records
(:func:`skdp.privacy.mechanisms.record_draws`).

Conventions of every derivation: replace-one neighbours, ``n`` public. A mean over ``n`` rows whose
per-row term has norm ``<= G`` moves by ``2G/n``; a sum by ``2G``.

The privacy arithmetic below uses scipy only, never skdp's calibration or accounting functions:

* Gaussian DP (Dong, Roth, Su 2022): T Gaussian releases of sensitivity ``Delta`` and std ``sigma``
  are exactly ``mu``-GDP with ``mu = sqrt(T) Delta / sigma``, and ``mu``-GDP is ``(eps, delta)``-DP iff
  ``delta >= Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``; ``mu*`` inverts it (brentq).
* zCDP (Bun, Steinke 2016): a Gaussian is ``Delta^2 / (2 sigma^2)``-zCDP, an ``eps0``-bounded-range
  selection (Gumbel report-noisy-max of scale ``beta = 2 s / eps0``) ``eps0^2 / 8``-zCDP; rho-zCDP
  gives ``eps = min_alpha alpha rho + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)``
  (Canonne, Kamath, Steinke 2020, Cor. 13), ``rho*`` inverts it.
* Poisson-subsampled Gaussian (replace-one): one step with per-row bound ``C`` on the summed vector,
  sampling rate ``q`` and noise std ``z C`` is the pair ``(1-q) N(0, z^2) + q N(+-1, z^2)``; its Renyi
  divergence of order alpha is integrated here (Simpson), composed over the steps, and converted with
  CKS20 Prop. 12 on the accountant's order grid (any order gives a valid bound; the grid only sets how
  tight). The helpers are checked against the numeric vectors of the privacy_core card.

The fits run the solvers on their :class:`~skdp.solvers.Problem` with public bounds (data_norm ``K``,
label_bound ``B``, coefficient ball ``M``) so that no private bound selection spends budget and no
estimator rescaling (DPRidge works in label units with ``B = 1``) hides a wrong ``K`` or ``B``.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.special import log_ndtr, logsumexp

from skdp.losses import HingeLoss, LogisticLoss, MultinomialLoss, SquaredLoss
from skdp.penalties import L2Penalty, NormBall
from skdp.privacy import PrivacyBudget
from skdp.privacy.accounting import _SAMPLED_ORDERS
from skdp.privacy.mechanisms import record_draws
from skdp.solvers import SOLVERS, Problem, get_solver
from skdp.solvers.sparse import SparseProblem


# ------------------------------------------------------------------------------------------
# independent privacy arithmetic
# ------------------------------------------------------------------------------------------
def log_gdp_delta(eps, mu):
    """log of the exact delta(eps) of mu-GDP (Balle-Wang 2018 Thm 8 = DRS22 Cor 2.13), in log space."""
    a = log_ndtr(-eps / mu + mu / 2)
    b = eps + log_ndtr(-eps / mu - mu / 2)
    return a + math.log1p(-math.exp(b - a)) if b < a else -math.inf


def mu_star(eps, delta):
    """The largest mu whose mu-GDP is (eps, delta)-DP."""
    return brentq(lambda mu: log_gdp_delta(eps, mu) - math.log(delta), 1e-8, 200.0, xtol=1e-15, rtol=1e-15)


def cks(alpha, rdp, delta):
    """epsilon of an RDP bound ``rdp`` at order ``alpha`` (CKS20 Prop. 12)."""
    return rdp + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)


def zcdp_epsilon(rho, delta):
    """Tight rho-zCDP -> (eps, delta): CKS20 Cor. 13, minimised over real alpha = 1 + e^t."""
    t0 = 0.5 * math.log(math.log(1 / delta) / rho)  # near the optimum alpha - 1 = sqrt(log(1/delta) / rho)
    res = minimize_scalar(lambda t: cks(1 + math.exp(t), (1 + math.exp(t)) * rho, delta), bounds=(t0 - 8, t0 + 8),
                          method="bounded", options={"xatol": 1e-12})
    return res.fun


def rho_star(eps, delta):
    """The largest rho whose tight conversion is (eps, delta)."""
    return brentq(lambda r: zcdp_epsilon(r, delta) - eps, 1e-8, 10 * eps, xtol=1e-16, rtol=1e-14)


def poisson_rdp(alpha, q, z):
    """D_alpha(P+ || P-) with P+- = (1-q) N(0, z^2) + q N(+-1, z^2): one replace-one Poisson step, units of C.

    Simpson's rule in log space on a window that holds the integrand's mass (a Gaussian of width z
    around 0 times a factor that moves it towards x = alpha).
    """
    h = min(z, 1.0) / 10
    lo, hi = -14 * z - 3, 2 * alpha + 14 * z + 3
    k = 2 * int(math.ceil((hi - lo) / h / 2))
    x = np.linspace(lo, hi, k + 1)
    h = x[1] - x[0]
    base = -x * x / (2 * z * z) - math.log(z * math.sqrt(2 * math.pi))
    lp = base + np.logaddexp(math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * z * z))
    lm = base + np.logaddexp(math.log1p(-q), math.log(q) + (-2 * x - 1) / (2 * z * z))
    w = np.full(k + 1, 2.0)
    w[1::2], w[0], w[-1] = 4.0, 1.0, 1.0
    return float(logsumexp(alpha * lp + (1 - alpha) * lm + np.log(w * h / 3)) / (alpha - 1))


def rdp_epsilon(curve, delta, orders=_SAMPLED_ORDERS):
    """(epsilon, best order) of an RDP curve on the orders (CKS20 Prop. 12); the optimum must be inside the grid.

    The default orders are the accountant's own grid for Poisson events: a tightness choice only (every
    order gives a valid bound), taken from the library so that the values can be compared to 1e-8.
    """
    orders = [float(a) for a in orders if a > 1.01]
    values = [cks(a, curve(a), delta) for a in orders]
    i = int(np.argmin(values))
    assert 0 < i < len(orders) - 1, "the best order is on the grid's edge: widen the grid of this test"
    return values[i], orders[i]


def poisson_epsilon(steps, delta, gaussians=()):
    """epsilon of Poisson steps ``(q, z, count)`` composed with Gaussian releases ``(Delta / sigma, count)``."""
    def curve(a):
        return (sum(c * poisson_rdp(a, q, z) for q, z, c in steps)
                + sum(c * a * ratio**2 / 2 for ratio, c in gaussians))  # Gaussian: alpha Delta^2 / (2 sigma^2)
    return rdp_epsilon(curve, delta)[0]


def smallest_noise(eps_of, target, start):
    """The smallest p with ``eps_of(p) <= target`` (eps_of decreasing): bracket by factors of 2, then brentq."""
    hi = start
    while eps_of(hi) > target:
        hi *= 2
    lo = hi / 2
    while eps_of(lo) <= target:
        lo /= 2
    return math.exp(brentq(lambda t: eps_of(math.exp(t)) - target, math.log(lo), math.log(hi), xtol=1e-13))


def objective_perturbation_sigma(zeta, eps_n, delta):
    """Gaussian noise of objective perturbation (on the gradient sum) for a swap moving it by Delta = 2 zeta.

    The noise part of the privacy loss is ``<b, v>/sigma^2 + ||v||^2/(2 sigma^2)`` with ``||v|| <= Delta``:
    at most ``Delta c / sigma + Delta^2 / (2 sigma^2)`` except when the Gaussian ``<b, v>/(sigma ||v||)``
    exceeds ``c = sqrt(2 ln(1/delta))`` (probability <= delta). Setting that to ``eps_n``:
    ``eps_n sigma^2 - Delta c sigma - Delta^2/2 = 0``.
    """
    delta_shift = 2.0 * zeta
    c = math.sqrt(2.0 * math.log(1.0 / delta))
    return (delta_shift * c + math.sqrt((delta_shift * c) ** 2 + 2.0 * eps_n * delta_shift**2)) / (2.0 * eps_n)


def test_the_independent_arithmetic_reproduces_the_cards_vectors():
    """privacy_core.md section 8 (V1, V2, V3, V4) and seed003's replace-one objective perturbation values."""
    assert mu_star(1.0, 1e-5) == pytest.approx(0.2680511232, rel=1e-9)  # V1
    assert 1.0 / mu_star(8.0, 1e-6) == pytest.approx(0.6529353844, rel=1e-9)  # V1: sigma for Delta = 1
    assert rho_star(1.0, 1e-5) == pytest.approx(0.03055660, rel=1e-6)  # V4, tight
    assert zcdp_epsilon(0.5, 1e-5) == pytest.approx(4.728387, rel=1e-6)  # V4
    # V2: 100 Gaussians of Delta / sigma = 1/10, RDP on dp-accounting's default orders: 4.7285070672 at alpha 5.4
    default_orders = np.concatenate([np.round(np.arange(1.1, 10.95, 0.1), 10), np.arange(11.0, 64.0),
                                     [128.0, 256.0, 512.0, 1024.0]])
    eps, order = rdp_epsilon(lambda a: 100 * a * 0.01 / 2, 1e-5, default_orders)
    assert (eps, order) == (pytest.approx(4.7285070672, rel=1e-9), pytest.approx(5.4))
    # V3: replace-one per-step RDP, q = 0.01, z = 1.1; and q = 0.2, z = 1
    for alpha, value in [(1.5, 2.718388e-4), (2, 3.626295e-4), (4.7, 8.575126e-4), (10.5, 2.153482e-3),
                         (16, 1.709877)]:
        assert poisson_rdp(alpha, 0.01, 1.1) == pytest.approx(value, rel=1e-6)
    for alpha, value in [(2, 0.15346225), (4, 0.46948345), (8, 2.38795526)]:
        assert poisson_rdp(alpha, 0.2, 1.0) == pytest.approx(value, rel=1e-7)
    # seed003, reviewer correction: zeta = 1, (1, 1e-8), eps_J = eps/2 -> sigma 24.4425
    assert objective_perturbation_sigma(1.0, 0.5, 1e-8) == pytest.approx(24.4425, abs=1e-4)


# ------------------------------------------------------------------------------------------
# the public setting
# ------------------------------------------------------------------------------------------
N, D = 200, 3  # rows (public), columns
K, R_INF, B, M = 2.0, 1.2, 3.0, 0.5  # L2 row bound, coordinate bound, label bound, coefficient ball radius
EPS, DELTA = 1.0, 1e-5
G_SQ = K * (K * M + B)  # squared loss on ||w|| <= M: |<w, x> - y| ||x|| <= (K M + B) K
G_LOG = K  # logistic / hinge: |phi'| <= 1, ||x|| <= K
MU = mu_star(EPS, DELTA)
RHO = rho_star(EPS, DELTA)
BUDGET = PrivacyBudget(EPS, DELTA)

_rng = np.random.RandomState(0)
X = _rng.uniform(-1.0, 1.0, (N, D))
X *= K * _rng.uniform(0.3, 1.0, (N, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
X = np.clip(X, -R_INF, R_INF)  # ||x||_2 <= K and ||x||_inf <= R_INF
Y_REG = _rng.uniform(-B, B, N)
Y_CLS = np.where(_rng.rand(N) > 0.5, 1.0, -1.0)


def problem(loss, alpha=0.0, coef_norm=None, ball=None, clip_norm=None, max_iter=None, **options):
    """The bounded problem an estimator would build: rows ||x|| <= K (and ||x||_inf <= R_INF), |y| <= B."""
    squared = loss.name == "squared"
    return Problem(X=X, y=Y_REG if squared else Y_CLS, norms=np.linalg.norm(X, axis=1), loss=loss,
                   penalty=L2Penalty(alpha, radius=coef_norm), data_norm=K, label_bound=B if squared else None,
                   coef_norm=coef_norm, max_iter=max_iter, options=options, constraint=ball, clip_norm=clip_norm,
                   inf_norm_bound=R_INF)


def sparse_problem(loss, clip, clip_order, intercept=False, **kwargs):
    """The l0 estimators' problem: features clipped to [-R_INF, R_INF] (an intercept column of R_INF)."""
    Xs = np.hstack([X, np.full((N, 1), R_INF)]) if intercept else X
    return SparseProblem(X=Xs, y=Y_REG if loss.name == "squared" else Y_CLS, loss=loss, n_nonzero=2,
                         feature_bound=R_INF, free=D if intercept else None,
                         label_bound=B if loss.name == "squared" else None, clip=clip, clip_order=clip_order,
                         **kwargs)


@dataclass
class Case:
    """A fit and the hand-derived (kind, scale) of each draw it makes, in order.

    ``rel``: tolerance of the comparison (why, in each case); ``prefix``: the fit draws a non-empty
    prefix of ``expected`` (rrpsgd stops after a random number of its priced rounds); ``info``:
    hand-derived values of ``solver_info_`` entries that carry privacy constants.
    """

    solver: str
    problem: object
    expected: list
    budget: PrivacyBudget = BUDGET
    rel: float = 1e-9
    prefix: bool = False
    info: dict = field(default_factory=dict)


# Tolerances: closed forms (GDP, Laplace, objective perturbation) agree to round-off, but the library
# raises sigma by steps of 1e-12 until its own price is at the target: rel 1e-9. Searches (zCDP
# conversion, RDP quadrature, bisection) are located to ~1e-12 by the library and by brentq here,
# and two independent quadratures of the same integral agree to ~1e-10: rel 1e-8.
CLOSED, SEARCHED = 1e-9, 1e-8


# ------------------------------------------------------------------------------------------
# full-batch Gaussian solvers
# ------------------------------------------------------------------------------------------
def dp_gd_squared():
    # T mean gradients, each per-example gradient clipped to G = min(K (K M + B), clip) = 5: Delta = 2G/n,
    # T releases at one sigma: mu* = sqrt(T) Delta / sigma
    T, G = 5, min(G_SQ, 5.0)
    sigma = math.sqrt(T) * (2 * G / N) / MU
    return Case("dp_gd", problem(SquaredLoss(), alpha=0.1, coef_norm=M, clip_norm=5.0, max_iter=T),
                [("gaussian", sigma)] * T, rel=CLOSED)


def dp_gd_logistic_noisy():
    # default schedule of the logistic loss when the noise is large: gradients clipped at half the clip the
    # estimator passes (its clip_norm "initial", K/2 = the logistic gradient's bound at w = 0), so G = K/4;
    # T = max(10, ceil(H/8)) steps over the horizon H = min(n mu* / p^(1/4), 1600)
    G = 0.5 * (K / 2)
    T = max(10, math.ceil(min(N * MU / D**0.25, 1600) / 8))
    sigma = math.sqrt(T) * (2 * G / N) / MU
    return Case("dp_gd", problem(LogisticLoss(), alpha=1.0 / N, clip_norm=K / 2), [("gaussian", sigma)] * T,
                rel=CLOSED)


def dp_gd_logistic_curvature():
    # the FISTA regime (one step's noise of 100 steps below 0.05 G): 24 gradient steps of Delta = 2G/n
    # (G = K/2, the estimator's clip) plus one release of lambda_max(X^T X), which one swap moves by at most
    # K^2 (Weyl: one rank-one term x x^T of norm <= K^2 out, one in); the curvature gets 1% of mu*^2,
    # the gradients 99%: sigma_c = K^2 / (0.1 mu*), sigma = sqrt(24) Delta / (sqrt(0.99) mu*)
    eps = 30.0
    mu = mu_star(eps, DELTA)
    assert 2 * math.sqrt(100 * D) / (N * mu) <= 0.05  # the regime (noise_ratio of 100 steps)
    G, T = K / 2, 24
    sigma = math.sqrt(T) * (2 * G / N) / (math.sqrt(0.99) * mu)
    return Case("dp_gd", problem(LogisticLoss(), alpha=1.0 / N, clip_norm=K / 2),
                [("gaussian", K**2 / (0.1 * mu))] + [("gaussian", sigma)] * T, budget=PrivacyBudget(eps, DELTA),
                rel=CLOSED)


def dp_accmd_l1():
    # gradients taken on the L1 ball of radius r: |<w, x>| <= ||w||_1 ||x||_inf <= r R_INF, so each
    # per-example gradient has L2 norm <= K (R_INF r + B) (< K (K r + B)); Delta = 2G/n, T releases
    T, r = 4, M
    G = K * (R_INF * r + B)
    sigma = math.sqrt(T) * (2 * G / N) / MU
    return Case("dp_accmd", problem(SquaredLoss(), coef_norm=r, ball=NormBall(1.0, r), max_iter=T),
                [("gaussian", sigma)] * T, rel=CLOSED)


def adassp_three_releases():
    # lambda_min(X^T X): Weyl, Delta_1 = K^2; upper triangle of X^T X: x'x'^T - x x^T has upper-triangle norm
    # <= sqrt(2) K^2 (orthogonal rows); X^T y: x'y' - x y, Delta_3 = 2 K B. One unit scale for all three:
    # mu^2 = 3 / unit^2 = mu*^2, so sigma_i = Delta_i sqrt(3) / mu*
    unit = math.sqrt(3.0) / MU
    return Case("adassp", problem(SquaredLoss()),
                [("gaussian", K * K * unit), ("gaussian", math.sqrt(2) * K * K * unit), ("gaussian", 2 * K * B * unit)],
                rel=CLOSED)


def output_pert_cases():
    # T GD steps w <- w - eta (grad L(w) + alpha w), eta = 1/(beta + 2 alpha), beta = K^2: each step is a
    # (1 - eta alpha)-contraction and the swap adds at most eta 2G/n per step, so the two runs end
    # Delta_T = sum_t (1 - eta alpha)^t eta 2G/n = (2G/(n alpha)) (1 - (1 - eta alpha)^T) apart
    alpha, T = 0.3, 7
    eta = 1.0 / (K**2 + 2 * alpha)
    sens = 2 * G_SQ / (N * alpha) * (1 - (1 - eta * alpha) ** T)
    eta_log = 1.0 / (K**2 / 4 + 2 * alpha)  # logistic: beta = K^2/4, G = K
    sens_log = 2 * G_LOG / (N * alpha) * (1 - (1 - eta_log * alpha) ** T)
    return [
        Case("output_pert", problem(SquaredLoss(), alpha=alpha, coef_norm=M, max_iter=T), [("gaussian", sens / MU)],
             rel=CLOSED),  # one Gaussian release
        Case("output_pert", problem(SquaredLoss(), alpha=alpha, coef_norm=M, max_iter=T),
             [("l2_laplace", sens / EPS)], budget=PrivacyBudget(EPS, 0.0), rel=CLOSED),  # density exp(-eps||b||/Delta)
        Case("output_pert", problem(LogisticLoss(), alpha=alpha, max_iter=T), [("gaussian", sens_log / MU)],
             rel=CLOSED),
    ]


def phased_sgd_case():
    # phase i runs projected SGD with step m eta_i on disjoint m-row batch means, eta_i = eta / 4^i: the steps
    # are non-expansive (m eta / 4 <= 2/(beta + alpha)), so the runs differ by <= m eta_i 2G/m = 2 G eta_i and
    # so does the average; disjoint phases: parallel composition, each phase at the full budget
    eta, m = 0.05, 4
    assert m * eta / 4 <= 2 / (K**2 + 0.1)
    phases = [s for s in (N // 2**i for i in range(1, math.ceil(math.log2(N)) + 1)) if s >= 1]
    return Case("phased_sgd", problem(SquaredLoss(), alpha=0.1, coef_norm=M, ball=NormBall(2.0, M), learning_rate=eta,
                                      batch_size=m),
                [("gaussian", 2 * G_SQ * eta / 4**i / MU) for i in range(1, len(phases) + 1)], rel=CLOSED)


# ------------------------------------------------------------------------------------------
# objective perturbation
# ------------------------------------------------------------------------------------------
def obj_pert_cases():
    # KST12 replace-one (seed003 reviewer correction): the sum's gradient moves by 2 zeta (zeta the per-example
    # gradient bound over the domain); eps_J = eps/2 pays for the Jacobian when n (alpha + extra) >=
    # lambda_H / (e^eps_J - 1) (lambda_H the rank-one Hessian's eigenvalue bound); eps_N = eps/2 for the noise
    def gaussian(zeta, lam_h, alpha, eps, delta):
        extra = max(0.0, lam_h / (N * math.expm1(eps / 2)) - alpha)
        sigma = objective_perturbation_sigma(zeta, eps / 2, delta)
        return sigma, extra

    sig_log, extra_log = gaussian(G_LOG, K**2 / 4, 1e-3, EPS, DELTA)
    sig_sq, extra_sq = gaussian(G_SQ, K**2, 1e-3, EPS, DELTA)  # on the ball ||w|| <= M
    # three classes one-vs-rest: three binary logistic problems at (eps/3, delta/3), basic composition
    sig_ovr, extra_ovr = gaussian(G_LOG, K**2 / 4, 1e-3, EPS / 3, DELTA / 3)
    # delta = 0, CMS11 Alg. 2 with general constants: eps' = eps - 2 ln(1 + lambda_H / (n Lambda)); if eps' <= 0
    # add Lambda up to lambda_H / (n (e^(eps/4) - 1)) and use eps' = eps/2; ||b|| ~ Gamma(d, 2 zeta / eps')
    lam_h = K**2 / 4
    eps_prime = EPS - 2 * math.log1p(lam_h / (N * 0.05))
    assert eps_prime > 0
    extra_small = lam_h / (N * math.expm1(EPS / 4)) - 1e-4
    assert EPS - 2 * math.log1p(lam_h / (N * 1e-4)) <= 0 and extra_small > 0
    three = Problem(X=X, y=np.arange(N) % 3, norms=np.linalg.norm(X, axis=1), loss=MultinomialLoss(3),
                    penalty=L2Penalty(1e-3), data_norm=K, n_outputs=3)
    pure = PrivacyBudget(EPS, 0.0)
    return [
        Case("obj_pert", problem(LogisticLoss(), alpha=1e-3), [("gaussian", sig_log)], rel=CLOSED,
             info={"extra_alpha": extra_log}),
        Case("obj_pert", problem(SquaredLoss(), alpha=1e-3, coef_norm=M), [("gaussian", sig_sq)], rel=CLOSED,
             info={"extra_alpha": extra_sq}),
        Case("obj_pert", three, [("gaussian", sig_ovr)] * 3, rel=CLOSED, info={"extra_alpha": extra_ovr}),
        Case("obj_pert", problem(LogisticLoss(), alpha=0.05), [("l2_laplace", 2 * G_LOG / eps_prime)], budget=pure,
             rel=CLOSED, info={"extra_alpha": 0.0}),
        Case("obj_pert", problem(LogisticLoss(), alpha=1e-4), [("l2_laplace", 2 * G_LOG / (EPS / 2))], budget=pure,
             rel=CLOSED, info={"extra_alpha": extra_small}),
    ]


def obj_pert_svrg_case():
    # budget split eps1 = eps/2, eps2 = eps/4, delta1 = delta / (2 e^eps2), delta2 = delta / (2 (1 + e^(eps1+eps2)))
    # (the chain w~(S) ~ M0(S) ~ M0(S') ~ w~(S') costs eps1 + 2 eps2 = eps and delta2 + e^eps2 delta1 +
    # e^(eps1+eps2) delta2 = delta); objective noise as obj_pert at (eps1, delta1); output noise: the
    # certificate ||w~ - w_hat|| <= r is a shift of r, so sigma_2 = r / mu*(eps2, delta2), with the public
    # r = eps2 sqrt(2 ln 2 / lam) / (sqrt(n d) sqrt(2 ln(1.25/delta2))), lam = alpha + extra
    alpha = 0.01
    eps1, eps2 = EPS / 2, EPS / 4
    d1, d2 = DELTA / (2 * math.exp(eps2)), DELTA / (2 * (1 + math.exp(eps1 + eps2)))
    assert eps1 + 2 * eps2 == EPS and d2 + math.exp(eps2) * d1 + math.exp(eps1 + eps2) * d2 == pytest.approx(DELTA)
    extra = max(0.0, (K**2 / 4) / (N * math.expm1(eps1 / 2)) - alpha)
    r = eps2 * math.sqrt(2 * math.log(2) / (alpha + extra)) / (math.sqrt(N * D) * math.sqrt(2 * math.log(1.25 / d2)))
    return Case("obj_pert_svrg", problem(LogisticLoss(), alpha=alpha),
                [("gaussian", objective_perturbation_sigma(G_LOG, eps1 / 2, d1)), ("gaussian", r / mu_star(eps2, d2))],
                rel=CLOSED, info={"extra_alpha": extra, "certificate_radius": r})


# ------------------------------------------------------------------------------------------
# Poisson-subsampled solvers (RDP of the replace-one mixture pair)
# ------------------------------------------------------------------------------------------
def _unamplified_multiplier(T):
    """Noise multiplier z of T full-batch sums (q = 1, shift 2C): a start for the search, sqrt(T) 2 / mu*."""
    return 2 * math.sqrt(T) / MU


def poisson_sgd_case(solver, loss, G, **kw):
    # T steps, each the sum over a Poisson batch (rate q = b/n) of per-example gradients of norm <= G, divided by
    # the public b, plus N(0, (z G / b)^2): the sum's noise is z G, per-row bound G
    T, b = 25, 16
    q = b / N
    z = smallest_noise(lambda z: poisson_epsilon([(q, z, T)], DELTA), EPS, _unamplified_multiplier(T))
    return Case(solver, problem(loss, max_iter=T, batch_size=b, **kw), [("gaussian", z * G / b)] * T,
                rel=SEARCHED, prefix=solver == "rrpsgd")


def noisy_sgd_case():
    return poisson_sgd_case("noisy_sgd", LogisticLoss(), G_LOG, coef_norm=M, ball=NormBall(2.0, M))


def nsgd_moreau_case():
    # the unconstrained Moreau envelope of the hinge loss is G-Lipschitz (G = K): per-row bound G
    return poisson_sgd_case("nsgd_moreau", HingeLoss(), G_LOG, alpha=0.1, coef_norm=M, ball=NormBall(2.0, M))


def dp_lssgd_case():
    # Laplacian smoothing acts after the noise (post-processing): DP-SGD's noise
    return poisson_sgd_case("dp_lssgd", SquaredLoss(), G_SQ, alpha=0.1, coef_norm=M)


def rrpsgd_case():
    # all N rounds are priced, R <= N of them run
    return poisson_sgd_case("rrpsgd", LogisticLoss(), G_LOG, alpha=0.1)


def dp_srm_case():
    # step 0: batch (rate b0/n) of gradients clipped to C1 = G; later steps: gamma a_i + (1 - gamma) d_i with
    # ||a_i|| <= C1, ||d_i|| <= C2, per-row bound S = gamma C1 + (1 - gamma) C2; one multiplier z for the T
    # releases (1 at rate b0/n, T - 1 at rate b/n): std z C1 / b0, then z S / b
    T, b, b0, gamma, C2 = 25, 16, 40, 0.3, 0.7
    z = smallest_noise(lambda z: poisson_epsilon([(b0 / N, z, 1), (b / N, z, T - 1)], DELTA), EPS,
                       _unamplified_multiplier(T))
    S = gamma * G_SQ + (1 - gamma) * C2
    return Case("dp_srm", problem(SquaredLoss(), alpha=0.1, coef_norm=M, max_iter=T, batch_size=b,
                                  initial_batch_size=b0, momentum=gamma, diff_clip=C2),
                [("gaussian", z * G_SQ / b0)] + [("gaussian", z * S / b)] * (T - 1), rel=SEARCHED)


def svrg_sigma(steps, b):
    """DP-SVRG's split accounting: the one draw N(0, sigma^2) of each inner step seen as N(0, f sigma^2) on the
    snapshot's mean gradient (not subsampled, Delta = 2G/n) plus N(0, (1 - f) sigma^2) on the Poisson batch's
    gradient differences divided by b: each difference has norm <= 2G (both gradients clipped to G), so the
    sum's per-row bound is C = 2G and its noise b sqrt(1 - f) sigma; the smallest sigma over f in 0.2, 0.5, 0.8."""
    G, q = G_SQ, b / N

    def eps_of(sigma, f):
        return poisson_epsilon([(q, b * math.sqrt(1 - f) * sigma / (2 * G), steps)], DELTA,
                               gaussians=[((2 * G / N) / (math.sqrt(f) * sigma), steps)])

    start = G * _unamplified_multiplier(steps) / b
    return min(smallest_noise(lambda s, f=f: eps_of(s, f), EPS, start) for f in (0.2, 0.5, 0.8))


def dp_svrg_case():
    epochs, b = 2, 25
    steps = epochs * math.ceil(N / b)  # m = ceil(n/b) inner steps per epoch
    return Case("dp_svrg", problem(SquaredLoss(), alpha=0.1, coef_norm=M, max_iter=epochs, batch_size=b),
                [("gaussian", svrg_sigma(steps, b))] * steps, rel=SEARCHED)


def dp_svrg_pp_case():
    epochs, b = 2, 25
    m = max(1, math.ceil(N / (b * 2**epochs)))
    steps = m * (2 ** (epochs + 1) - 2)  # epochs s = 1..T of 2^s m inner steps
    return Case("dp_svrg_pp", problem(SquaredLoss(), alpha=0.1, coef_norm=M, max_iter=epochs, batch_size=b),
                [("gaussian", svrg_sigma(steps, b))] * steps, rel=SEARCHED)


# ------------------------------------------------------------------------------------------
# selections (bounded range) and the generalized Gaussian of the Frank-Wolfe solvers
# ------------------------------------------------------------------------------------------
def selection_epsilon(T):
    """Per-selection eps0 of T Gumbel selections: T eps0^2 / 8 = rho* (each is eps0-bounded-range)."""
    eps0 = math.sqrt(8 * RHO / T)
    assert EPS / T < eps0  # basic composition (T eps0 = eps) would allow less: the zCDP bound decides here
    return eps0


def noisy_sfw_case():
    # L1 ball of radius r (vertices +-r e_j, D = 2r), logistic loss in the dual norm l_inf:
    # L0 = R_INF (gradient phi' x), L1 = R_INF^2 / 4. Vertex scores r <g, e_j>: the initial gradient (mean of
    # the first ceil(n/2) rows) moves by 2 L0/first and decays as (1 - eta)^t; a batch of b rows at step t
    # moves the estimate by (2/b) eta (L0 + (1 - eta) L1 D). Scale of step t: 2 Delta_t / eps0.
    r, b = 1.5, 10
    first = math.ceil(N / 2)
    T = 1 + (N - first) // b
    eta = min(0.5, max(1.0, math.log((N / b) / math.log(2 * D))) / (N / b))
    L0, L1 = R_INF, R_INF**2 / 4
    eps0 = selection_epsilon(T)
    deltas = [r * max((1 - eta) ** t * 2 * L0 / first, 0.0 if t == 0 else (2 / b) * eta * (L0 + (1 - eta) * L1 * 2 * r))
              for t in range(T)]
    return Case("noisy_sfw", problem(LogisticLoss(), coef_norm=r, ball=NormBall(1.0, r), batch_size=b),
                [("gumbel", 2 * s / eps0) for s in deltas], rel=SEARCHED)


def _tree_sensitivities(T, b, L0, L1, diameter):
    """Sensitivities of noisy_sfw_lp's releases in visiting order: phase t is a binary tree of depth t in
    pre-order; the root's batch mean of b rows moves by 2 L0 / b; the right child at depth j + 1 adds the
    mean gradient difference of b / 2^(j+1) fresh rows between the iterate now and at its parent, which
    moved by at most D sum(eta) over the leaves of its left sibling (a difference <= min(L1 D sum eta, 2 L0));
    leaf i of the run (counted from the first phase) steps eta = 2 / (2^t + i). That step schedule is the
    library's (public, so the bound holds for it); the seed001 card counts i within the phase."""
    out, leaf = [], [0]

    def visit(t, j):
        if j == t:
            leaf[0] += 1
            return
        start = leaf[0]
        visit(t, j + 1)
        eta_sum = sum(2.0 / (2**t + i) for i in range(start, start + 2 ** (t - j - 1)))
        out.append(2.0 / (b // 2 ** (j + 1)) * min(L1 * diameter * eta_sum, 2 * L0))
        visit(t, j + 1)

    for t in range(1, T + 1):
        out.append(2 * L0 / b)
        visit(t, 0)
    return out


def noisy_sfw_lp_cases():
    # every row is read by one release: parallel composition, each release rho*-zCDP. The generalized
    # Gaussian in a kappa-regular dual norm with sensitivity s is kappa s^2 / (2 sigma^2)-zCDP (BGN21 Cor. 3.3):
    # sigma = s sqrt(kappa / (2 rho*)). p = 2: q = 2, kappa = 1 (a Gaussian); p = 1.5: q = 3, kappa = q - 1 = 2.
    cases = []
    for p, kind, kappa in ((2.0, "gaussian", 1.0), (1.5, "generalized_gaussian", 2.0)):
        q = p / (p - 1)
        Rq = min(K, R_INF * D ** (1 / q))  # ||x||_q <= ||x||_2 and <= R_INF d^(1/q)
        r, b, T = 0.8, 16, 2
        for loss, L0, L1 in ((SquaredLoss(), Rq * (Rq * r + B), Rq**2), (LogisticLoss(), Rq, Rq**2 / 4)):
            s = _tree_sensitivities(T, b, L0, L1, 2 * r)
            cases.append(Case("noisy_sfw_lp", problem(loss, coef_norm=r, ball=NormBall(p, r), batch_size=b,
                                                      n_phases=T, p=p),
                              [(kind, si * math.sqrt(kappa / (2 * RHO))) for si in s], rel=SEARCHED))
    return cases


# ------------------------------------------------------------------------------------------
# sparse solvers
# ------------------------------------------------------------------------------------------
def dp_ight_case():
    # per-example gradients clipped to L2 norm G: mean moves by 2G/n, T releases
    T, G = 6, 1.3
    return Case("dp_ight", sparse_problem(SquaredLoss(), G, 2, max_iter=T),
                [("gaussian", math.sqrt(T) * (2 * G / N) / MU)] * T, rel=CLOSED)


def dpsl_kt_case():
    # ridge teacher of strength lam on gradients clipped to G: its exact minimiser moves by 2G/(n lam), and the
    # certified solve (gradient norm <= lam tau) is within tau of it: Delta_teacher = 2G/(n lam) + 2 tau; the
    # labels X~ theta + N(0, sigma^2) of the public synthetic rows move by ||X~||_op Delta_teacher; one release.
    # The library inflates ||X~||_op by 1 + 1e-9 (eigenvalue round-off): rel 1e-8.
    G, lam, tol = 1.3, 0.2, 1e-2
    synthetic = np.random.RandomState(5).uniform(-R_INF, R_INF, (50, D))
    tau = tol * G / (N * lam)
    sens = np.linalg.norm(synthetic, 2) * (2 * G / (N * lam) + 2 * tau)
    return Case("dpsl_kt", sparse_problem(SquaredLoss(), G, 2, options={"teacher_alpha": lam, "teacher_tol": tol,
                                                                     "synthetic_features": synthetic}),
                [("gaussian", sens / MU)], rel=SEARCHED)


def dp_fw_l1_case():
    # vertex scores -+r g_j of the mean gradient, per-example gradients clipped to l_inf norm G: a score moves by
    # Delta = 2 G r / n; Gumbel scale 2 Delta / eps0 (eps0-bounded range), T selections
    T, G, r = 20, 1.3, 1.7
    eps0 = selection_epsilon(T)
    return Case("dp_fw_l1", sparse_problem(LogisticLoss(), G, np.inf, max_iter=T, options={"l1_radius": r}),
                [("gumbel", 2 * (2 * G * r / N) / eps0)] * T, rel=SEARCHED)


def noisy_iht_case():
    # v = w - eta (1/n) sum g_i with l_inf-clipped g_i (norm <= G): each coordinate moves by Delta_inf =
    # 2 eta G / n (the scores |v_j| too); the s selected values and the intercept, k = s + 1 coordinates, by
    # Delta_2 = sqrt(k) Delta_inf. T iterations: T s selections eps0-BR (eps0^2/8-zCDP each) and T Gaussians
    # (Delta_2^2 / (2 sigma^2) each); a share of the zCDP budget rho* goes to the selections:
    # T s eps0^2 / 8 = share rho*, T Delta_2^2 / (2 sigma^2) = (1 - share) rho*
    T, G, eta, share, s = 4, 1.3, 0.9, 0.6, 2
    d_inf = 2 * eta * G / N
    d_2 = math.sqrt(s + 1) * d_inf
    eps0 = math.sqrt(8 * share * RHO / (T * s))
    sigma = d_2 * math.sqrt(T / (2 * (1 - share) * RHO))
    return Case("noisy_iht", sparse_problem(SquaredLoss(), G, np.inf, intercept=True, max_iter=T, learning_rate=eta,
                                            options={"selection_share": share}),
                ([("gumbel", 2 * d_inf / eps0)] * s + [("gaussian", sigma)]) * T, rel=SEARCHED)


def two_stage_case():
    # eps/2 each stage. 1: k disjoint blocks vote for s coordinates each, votes / k: one block changes, at most 2s
    # entries by 1/k, L1 sensitivity 2s/k, Laplace scale 2s / (k eps/2). 2: obj_pert at (eps/2, delta) on the s
    # selected columns and the intercept (rows of L2 norm <= sqrt(s + 1) R_INF = K2) on the ball ||w|| <= R:
    # zeta = K2 (K2 R + B), lambda_H = K2^2, no penalty: extra = lambda_H / (n (e^(eps/4) - 1))
    s, k, R = 2, 9, 1.1
    K2 = math.sqrt(s + 1) * R_INF
    extra = K2**2 / (N * math.expm1(EPS / 4))
    return Case("two_stage", sparse_problem(SquaredLoss(), None, None, intercept=True,
                                            options={"n_blocks": k, "coef_norm": R}),
                [("laplace", 2 * s / (k * EPS / 2)), ("gaussian", objective_perturbation_sigma(K2 * (K2 * R + B),
                                                                                                EPS / 4, DELTA))],
                rel=CLOSED, info={"stage2_extra_alpha": extra})


#: every registered solver: the hand-derived vectors of its noise
VECTORS = {
    "adassp": [adassp_three_releases],
    "dp_accmd": [dp_accmd_l1],
    "dp_fw_l1": [dp_fw_l1_case],
    "dp_gd": [dp_gd_squared, dp_gd_logistic_noisy, dp_gd_logistic_curvature],
    "dp_ight": [dp_ight_case],
    "dp_lssgd": [dp_lssgd_case],
    "dp_srm": [dp_srm_case],
    "dp_svrg": [dp_svrg_case],
    "dp_svrg_pp": [dp_svrg_pp_case],
    "dpsl_kt": [dpsl_kt_case],
    "noisy_iht": [noisy_iht_case],
    "noisy_sfw": [noisy_sfw_case],
    "noisy_sfw_lp": [noisy_sfw_lp_cases],
    "noisy_sgd": [noisy_sgd_case],
    "nsgd_moreau": [nsgd_moreau_case],
    "obj_pert": [obj_pert_cases],
    "obj_pert_svrg": [obj_pert_svrg_case],
    "output_pert": [output_pert_cases],
    "phased_sgd": [phased_sgd_case],
    "rrpsgd": [rrpsgd_case],
    "two_stage": [two_stage_case],
}


def test_every_registered_solver_has_a_vector():
    assert set(VECTORS) == set(SOLVERS)


def _fit(case):
    with record_draws() as draws:
        result = get_solver(case.solver).solve(case.problem, case.budget, np.random.RandomState(0))
    return result, [(d.kind, d.scale) for d in draws]


@pytest.mark.parametrize("make", [f for fs in VECTORS.values() for f in fs], ids=lambda f: f.__name__)
def test_drawn_noise_matches_the_hand_derivation(make):
    made = make()
    for i, case in enumerate(made if isinstance(made, list) else [made]):
        where = f"{make.__name__}, case {i} ({case.solver})"
        result, drawn = _fit(case)
        expected = case.expected
        if case.prefix:
            assert 1 <= len(drawn) <= len(expected), where
            expected = expected[:len(drawn)]
        assert [k for k, _ in drawn] == [k for k, _ in expected], where
        assert [s for _, s in drawn] == pytest.approx([s for _, s in expected], rel=case.rel), where
        for key, value in case.info.items():
            assert result.info[key] == pytest.approx(value, rel=case.rel, abs=1e-15), (where, key)


def test_poisson_scales_are_also_valid_for_dp_accounting():
    """Cross-check with an independent implementation: Google's dp-accounting PLD (replace-one pair) prices the
    drawn noise of noisy_sgd and of dp_svrg's split at no more than the target, and not far below it
    (RDP is about 8% looser than the PLD)."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import PLDAccountant

    def pld_epsilon(event, count):
        accountant = PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
        accountant.compose(event, count)
        return accountant.get_epsilon(DELTA)

    case = noisy_sgd_case()
    _, drawn = _fit(case)
    T, b = case.problem.max_iter, case.problem.options["batch_size"]
    z = drawn[0][1] * b / G_LOG  # REPLACE_ONE's noise multiplier is sigma / C (C the per-row bound of the sum)
    eps = pld_epsilon(dp_accounting.PoissonSampledDpEvent(b / N, dp_accounting.GaussianDpEvent(z)), T)
    assert 0.85 * EPS < eps <= EPS

    case = dp_svrg_case()
    result, drawn = _fit(case)
    b, f, sigma, steps = case.problem.options["batch_size"], result.info["split"], drawn[0][1], len(drawn)
    # the snapshot's Gaussian: REPLACE_ONE takes sigma / (Delta / 2); the differences: sigma / C with C = 2G
    snapshot = dp_accounting.GaussianDpEvent(math.sqrt(f) * sigma / (G_SQ / N))
    diffs = dp_accounting.PoissonSampledDpEvent(b / N, dp_accounting.GaussianDpEvent(
        b * math.sqrt(1 - f) * sigma / (2 * G_SQ)))
    eps = pld_epsilon(dp_accounting.ComposedDpEvent([snapshot, diffs]), steps)
    assert 0.85 * EPS < eps <= EPS
