"""The constrained solvers (skdp/solvers/constrained.py: noisy_sfw, noisy_sfw_lp, dp_accmd, phased_sgd): card
numbers, noise-free reductions, sensitivities.
"""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from skdp import DPLogisticRegression, DPRidge
from skdp.losses import LogisticLoss
from skdp.penalties import L2Penalty, NormBall
from skdp.privacy import (PrivacyBudget, ZCDPEvent, calibrate_bounded_range, gdp_mu, generalized_gaussian_noise,
                          generalized_gaussian_sigma, price)
from skdp.privacy.mechanisms import record_draws
from skdp.solvers import Problem, get_solver
from skdp.solvers.constrained import drain_step, gg_geometry

from ._helpers import planning_problem


# (the geometry helpers NormBall.lmo, project_l1_ball, clipped_design and moreau_hinge_derivative are
# tested in test_penalties.py, test_bounds.py and test_losses.py)


# ------------------------------------------------------------------------------------------
# noisy_sfw (seed001 section C)
# ------------------------------------------------------------------------------------------
def test_noisy_sfw_card_fixture():
    """Card C testing hook: n = 1e4, d = 100, lambda = 1, R = 1 logistic, eps = 1, delta = 1e-8, b = 1."""
    solver = get_solver("noisy_sfw")
    prob = planning_problem(10**4, 100, data_norm=10.0, inf=1.0, options={"batch_size": 1})
    first, b, T, eta = solver.schedule(prob)
    assert (first, b, T) == (5000, 1, 5001)
    # independent: eta = ln(n / ln J) / n, J = 2d
    assert math.isclose(eta, math.log(1e4 / math.log(200)) / 1e4, rel_tol=1e-12)
    assert math.isclose(eta, 7.54295e-4, rel_tol=1e-5)
    sens = solver.sensitivities(prob, first, b, T, eta)
    assert math.isclose(sens[0], 2 * 1.0 / 5000, rel_tol=1e-12)  # 2 r L0 / |B|
    assert math.isclose(sens[1:].max(), 2.26232e-3, rel_tol=1e-5)  # tight Delta_t
    eps0 = calibrate_bounded_range(T, 1.0, 1e-8)
    # the card's zCDP calibration gives 4.59832e-3; the accountant may only do better, never worse
    rho = (math.sqrt(math.log(1e8) + 1) - math.sqrt(math.log(1e8))) ** 2
    assert math.isclose(math.sqrt(8 * rho / T), 4.59832e-3, rel_tol=1e-4)
    assert eps0 >= 4.59832e-3 * (1 - 1e-6)
    from skdp.privacy import BoundedRangeEvent
    assert price([BoundedRangeEvent(eps0, T)], 1e-8).budget.epsilon <= 1.0 + 1e-12


def test_noisy_sfw_sensitivity_bounds_an_adversarial_neighbour():
    """Replace one row of a step batch by its worst mirror: the step's scores move by <= Delta_t."""
    rng = np.random.RandomState(3)
    n, d, r = 400, 6, 2.0
    X = rng.uniform(-1, 1, (n, d))
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    solver = get_solver("noisy_sfw")
    prob = Problem(X=X, y=y, norms=np.linalg.norm(X, axis=1), loss=LogisticLoss(), penalty=L2Penalty(0.0),
                   data_norm=float(np.sqrt(d)), coef_norm=r, constraint=NormBall(1.0, r), inf_norm_bound=1.0,
                   options={"batch_size": 10})
    first, b, T, eta = solver.schedule(prob)
    sens = solver.sensitivities(prob, first, b, T, eta)
    x_prev = np.zeros(d)
    x = x_prev.copy()
    x[0] = eta * r  # one FW step from 0
    rows = np.arange(first, first + b)
    worst = 0.0
    for trial in range(200):
        z = rng.uniform(-1, 1, d) * (1 if trial % 2 else np.sign(rng.randn(d)))
        X2, y2 = X.copy(), y.copy()
        X2[rows[0]] = np.sign(z)
        y2[rows[0]] = -y[rows[0]]
        p2 = Problem(X=X2, y=y2, norms=np.linalg.norm(X2, axis=1), loss=LogisticLoss(), penalty=L2Penalty(0.0),
                     data_norm=float(np.sqrt(d)), coef_norm=r, constraint=NormBall(1.0, r), inf_norm_bound=1.0)

        def est(pb):
            g_new = pb.mean_gradient(x, rows=rows, n_total=b)
            g_old = pb.mean_gradient(x_prev, rows=rows, n_total=b)
            return (1 - eta) * (g_new - g_old) + eta * g_new

        worst = max(worst, r * np.max(np.abs(est(prob) - est(p2))))
    assert worst <= sens[1] * (1 + 1e-12)
    assert worst > 0.3 * sens[1]  # not vacuous: this neighbour attains about 0.34 of the bound


def test_noisy_sfw_noise_free_reaches_constrained_optimum():
    """eps -> inf: the one-pass FW lands within 1e-3 of scipy's L1-ball optimum (population-size data)."""
    rng = np.random.RandomState(0)
    n, d = 60000, 4
    X = rng.uniform(-1, 1, (n, d))
    w_true = np.array([1.5, -1.0, 0.0, 0.5])
    y = np.where(rng.rand(n) < 1 / (1 + np.exp(-X @ w_true)), 1, 0)
    r = 1.0
    clf = DPLogisticRegression(epsilon=1e7, solver="noisy_sfw", alpha=0.0, coef_norm=r, data_norm=2.0,
                               classes=[0, 1], fit_intercept=False, solver_options={"batch_size": 2},
                               random_state=0).fit(X, y)
    ys = np.where(y == 1, 1.0, -1.0)

    def obj(w):
        return float(np.mean(np.logaddexp(0, -ys * (X @ w))))

    cons = {"type": "ineq", "fun": lambda z: r - np.sum(np.abs(z))}
    ref = optimize.minimize(obj, np.zeros(d), constraints=[cons], method="SLSQP", options={"ftol": 1e-12}).x
    w = clf.coef_.ravel()
    assert np.abs(w).sum() <= r * (1 + 1e-12)
    assert obj(w) - obj(ref) < 1e-3
    # the tree-based l_p variant (card B testing hook: relative gap < 1e-2) on the same data
    for p in (2.0, 1.5):
        clf = DPLogisticRegression(epsilon=1e7, solver="noisy_sfw_lp", alpha=0.0, coef_norm=r, data_norm=2.0,
                                   classes=[0, 1], fit_intercept=False, solver_options={"p": p},
                                   random_state=0).fit(X, y)
        cons = {"type": "ineq", "fun": lambda z, p=p: r - np.linalg.norm(z, ord=p)}
        ref = optimize.minimize(obj, np.zeros(d), constraints=[cons], method="SLSQP", options={"ftol": 1e-12}).x
        w = clf.coef_.ravel()
        assert np.linalg.norm(w, ord=p) <= r * (1 + 1e-12)
        assert (obj(w) - obj(ref)) / obj(ref) < 1e-2


def test_gumbel_report_noisy_max_is_the_exponential_mechanism():
    """noisy_sfw's vertex selection: argmax(score + Gumbel(beta)) has frequencies softmax(score / beta) (chi-square)."""
    rng = np.random.RandomState(0)
    from skdp.privacy import report_noisy_max
    scores = np.array([0.3, -0.1, 0.0, 0.25])
    scale = 0.2
    counts = np.bincount([report_noisy_max(rng, scores, scale) for _ in range(20000)], minlength=4)
    p = np.exp(scores / scale)
    p /= p.sum()
    assert stats.chisquare(counts, 20000 * p).pvalue > 1e-3


# ------------------------------------------------------------------------------------------
# generalized Gaussian and noisy_sfw_lp (seed001 sections A, B)
# ------------------------------------------------------------------------------------------
def test_gg_calibration_card_numbers():
    # card A4: s = 1, kappa = 1, eps = 1, delta = 1e-5 -> rho* = 0.020820, sigma = 4.90056 (simple conversion)
    rho_simple = (math.sqrt(math.log(1e5) + 1) - math.sqrt(math.log(1e5))) ** 2
    assert math.isclose(rho_simple, 0.020820, rel_tol=1e-4)
    assert math.isclose(math.sqrt(1 / (2 * rho_simple)), 4.90056, rel_tol=1e-5)
    sigma, rho = generalized_gaussian_sigma(1.0, 1.0, 1.0, 1e-5)
    assert sigma <= 4.90056 and rho >= rho_simple  # the tight CKS20 conversion the card allows
    assert price([ZCDPEvent(rho)], 1e-5).budget.epsilon <= 1.0 + 1e-9
    # scaling: sigma ~ s sqrt(kappa)
    s2, _ = generalized_gaussian_sigma(3.0, 4.0, 1.0, 1e-5)
    assert math.isclose(s2, 6 * sigma, rel_tol=1e-12)


@pytest.mark.parametrize("r", [2.0, 3.0, 2 * math.log(50) + 1])
def test_gg_sampler_radial_law(r):
    """||xi||_r / sigma ~ chi_d (card A7) and E||xi||_r^2 = d sigma^2."""
    rng = np.random.RandomState(0)
    d, sigma = 50, 0.7
    norms = np.array([np.linalg.norm(generalized_gaussian_noise(rng, sigma, d, r), ord=r) for _ in range(3000)])
    assert stats.kstest(norms / sigma, stats.chi(d).cdf).pvalue > 1e-3
    assert abs(np.mean(norms**2) / (d * sigma**2) - 1) < 0.03


def test_gg_geometry_uses_matching_norm_and_kappa():
    assert gg_geometry(2.0, 100) == (2.0, 1.0)
    r, k = gg_geometry(3.0, 100)
    assert (r, k) == (3.0, 2.0)
    q = 1e6  # p close to 1: switch to r = 2 ln d + 1, kappa = 2 e ln d
    r, k = gg_geometry(q, 100)
    assert math.isclose(r, 2 * math.log(100) + 1) and math.isclose(k, 2 * math.e * math.log(100))


def test_noisy_sfw_lp_tree_accounting(monkeypatch):
    """Batches disjoint, b T (T+5)/4 rows, 2^t releases in phase t, right-child sensitivity <= 4 L1 D / b."""
    from skdp.solvers import constrained
    rng = np.random.RandomState(0)
    n, d = 3000, 5
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    prob = Problem(X=X, y=y, norms=np.linalg.norm(X, axis=1), loss=LogisticLoss(), penalty=L2Penalty(0.0),
                   data_norm=1.0, coef_norm=2.0, constraint=NormBall(2.0, 2.0))
    solver = get_solver("noisy_sfw_lp")
    b, T = solver.schedule(prob)
    assert b * T * (T + 5) / 4 <= n < 2 * b * (T + 1) * (T + 6) / 4
    seen = []
    orig = constrained._BallSolver._grad

    def spy(pb, w, rows):
        seen.append(np.asarray(rows))
        return orig(pb, w, rows)

    orig_difference = constrained._BallSolver._grad_difference

    def spy_difference(pb, w1, w0, rows):  # a right child's rows, read at its two iterates
        seen.extend([np.asarray(rows)] * 2)
        return orig_difference(pb, w1, w0, rows)

    monkeypatch.setattr(constrained._BallSolver, "_grad", staticmethod(spy))
    monkeypatch.setattr(constrained._BallSolver, "_grad_difference", staticmethod(spy_difference))
    with record_draws() as draws:
        res = solver.solve(prob, PrivacyBudget(1.0, 1e-5), np.random.RandomState(1))
    sens_seen = [draw.scale for draw in draws]  # each release's noise std: its sensitivity times unit_sigma
    assert len(sens_seen) == res.info["releases"]
    assert sum(s.size for s in seen) == res.info["rows_used"] + (res.info["rows_used"] - b * T)
    assert res.info["releases"] == sum(2**t for t in range(1, T + 1))
    assert res.info["fw_steps"] == sum(2**t for t in range(1, T + 1))
    assert res.info["rows_used"] == b * T * (T + 5) // 4
    # every row used by one vertex only (a right child reads its rows twice: at two iterates)
    used = np.concatenate([np.unique(s) for s in seen])
    counts = np.bincount(used, minlength=n)
    assert counts.max() <= 2
    _, L0, L1 = constrained.glm_constants(prob, prob.constraint)
    unit, _ = generalized_gaussian_sigma(1.0, 1.0, 1.0, 1e-5)
    bound = max(2 * L0, 4 * L1 * prob.constraint.diameter) / b * unit
    assert max(sens_seen) <= bound * (1 + 1e-12)
    assert NormBall(2.0, 2.0).contains(res.coef)


# ------------------------------------------------------------------------------------------
# dp_accmd (seed000 section C)
# ------------------------------------------------------------------------------------------
def test_drain_step_is_the_exact_minimiser():
    rng = np.random.RandomState(0)
    for _ in range(30):
        m = 6
        h = rng.randn(m)
        u = rng.dirichlet(np.ones(m))
        L = 10 ** rng.uniform(-1, 1)
        v = drain_step(h, u, L)
        f = lambda z: 0.5 * L * np.sum(np.abs(z - u)) ** 2 + h @ (z - u)  # noqa: E731
        # brute force: the objective is convex on the simplex; compare with many random feasible points + SLSQP
        best = min(f(rng.dirichlet(np.ones(m) * 0.3)) for _ in range(3000))
        assert f(v) <= best + 1e-9
        assert abs(v.sum() - 1) < 1e-12 and v.min() >= -1e-15


def test_dp_accmd_noise_is_full_batch_gdp():
    """sigma = 2 G sqrt(T) / (n mu*); card 0.3 fixture 0.0746126327 (G = 1, n = 1000, T = 100)."""
    solver = get_solver("dp_accmd")
    prob = planning_problem(1000, 5, data_norm=1.0, radius=1.0)
    prob.max_iter = 100
    sigma = solver.noise_std(prob, PrivacyBudget(1.0, 1e-5), 100)
    assert math.isclose(sigma, 2 * 1.0 * 10 / (1000 * gdp_mu(1.0, 1e-5)), rel_tol=1e-9)
    assert math.isclose(sigma, 0.0746126327, rel_tol=1e-8)


@pytest.mark.parametrize("geometry", ["l1", "l2"])
def test_dp_accmd_noise_free_matches_constrained_least_squares(geometry):
    rng = np.random.RandomState(0)
    n, d = 300, 6
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    y = X @ np.array([1.0, -1, 0.5, 0, 0, 0]) + 0.05 * rng.randn(n)
    R = 1.2
    reg = DPRidge(epsilon=1e9, solver="dp_accmd", alpha=0.0, coef_norm=R, data_norm=1.0, label_bound=2.0,
                  fit_intercept=False, max_iter=400, solver_options={"geometry": geometry}, random_state=0).fit(X, y)
    p_ord = 1 if geometry == "l1" else 2
    cons = {"type": "ineq", "fun": lambda z: R - np.linalg.norm(z, ord=p_ord)}
    obj = lambda z: 0.5 * np.mean((X @ z - y) ** 2)  # noqa: E731
    ref = optimize.minimize(obj, np.zeros(d), constraints=[cons], method="SLSQP", options={"ftol": 1e-14}).x
    assert np.linalg.norm(reg.coef_, ord=p_ord) <= R * (1 + 1e-9)
    assert obj(reg.coef_) - obj(ref) < 1e-6


# ------------------------------------------------------------------------------------------
# phased_sgd, dp_svrg_pp, obj_pert_svrg
# ------------------------------------------------------------------------------------------
def test_phased_sgd_noise_and_stability_guard():
    solver = get_solver("phased_sgd")
    prob = planning_problem(1000, 5, data_norm=1.0, radius=1.0, geometry_p=2.0,
                             options={"batch_size": 1, "learning_rate": 0.5})
    (ev,) = solver.plan(prob, PrivacyBudget(1.0, 1e-5))
    G = prob.gradient_bound
    assert math.isclose(ev.sensitivity, 2 * G * 0.5 / 4, rel_tol=1e-12)  # phase 1: 2 G eta_1, eta_1 = eta/4
    assert math.isclose(ev.sigma, ev.sensitivity / gdp_mu(1.0, 1e-5), rel_tol=1e-9)
    prob.options["learning_rate"] = 40.0  # 40/4 > 2/beta = 8
    with pytest.raises(ValueError, match="non-expansive"):
        solver.plan(prob, PrivacyBudget(1.0, 1e-5))
    sizes, _ = solver.schedule(prob)
    assert sum(sizes) <= 1000 and sizes[0] == 500
