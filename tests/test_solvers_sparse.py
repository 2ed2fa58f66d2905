"""The sparse solvers (skdp/solvers/sparse.py: dp_ight, dpsl_kt, dp_fw_l1, two_stage):
seed004_sparse_dp_ight_dpsl_kt.md testing hooks (section 6): card numbers, noise-free reductions,
sensitivities.
"""

import math

import numpy as np
import pytest
from scipy import optimize, stats
from sklearn.linear_model import Ridge

from skdp import DPSparseLinearRegression
from skdp.datasets import make_sparse_regression
from skdp.losses import LogisticLoss, SquaredLoss
from skdp.penalties import hard_threshold
from skdp.privacy import BoundedRangeEvent, GaussianEvent, PrivacyBudget, price
from skdp.solvers import get_solver, sparse
from skdp.solvers.sparse import PublicSparseProblem, SparseProblem, ight, teacher_sensitivity


def _gdp_mu(eps, delta):
    """Independent mu*: root of Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) = delta."""
    f = lambda mu: stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta  # noqa: E731
    return optimize.brentq(f, 1e-3, 50, xtol=1e-14)


# -- IGHT (hard_threshold itself: test_penalties.py) ----------------------------------------
def test_ight_orthogonal_design_fixed_point():
    rng = np.random.RandomState(0)
    n, d, s = 400, 50, 5
    Q, _ = np.linalg.qr(rng.randn(n, d))
    X = Q * math.sqrt(n)  # X^T X = n I
    y = rng.randn(n)
    grad = lambda w: X.T @ (X @ w - y) / n  # noqa: E731
    w1 = hard_threshold(X.T @ y / n, s)
    for T in (1, 2, 7):
        w, _ = ight(grad, d, s, 1.0, T)
        np.testing.assert_allclose(w, w1, atol=1e-12)


def test_ight_noiseless_recovery():
    rng = np.random.RandomState(1)
    n = d = 1000
    X = rng.randn(n, d)
    theta = np.zeros(d)
    theta[rng.choice(d, 10, replace=False)] = rng.uniform(-1, 1, 10)
    y = X @ theta
    w, _ = ight(lambda w: X.T @ (X @ w - y) / n, d, 10, 0.5, 300)
    assert np.linalg.norm(w - theta) / np.linalg.norm(theta) < 1e-6


# -- dp_ight ------------------------------------------------------------------------------
def _problem(X, y, loss, s, clip, order=2, **kw):
    return SparseProblem(X=X, y=y, loss=loss, n_nonzero=s, feature_bound=1.0, clip=clip, clip_order=order, **kw)


def test_dp_ight_noise_matches_card_worked_numbers():
    solver = get_solver("dp_ight")
    prob = PublicSparseProblem(loss=SquaredLoss(), n_nonzero=10, feature_bound=1.0, clip=1.0, n_samples=1000,
                               n_features=50)
    sigma = solver.noise_std(prob, PrivacyBudget(1.0, 1e-5), 100)
    assert sigma == pytest.approx(0.0746126, rel=1e-5)  # card 1.4, exact GDP
    assert sigma == pytest.approx(2 * math.sqrt(100) / (1000 * _gdp_mu(1.0, 1e-5)), rel=1e-7)  # independent
    # card 1.4: rho(eps, delta) and the corrected zCDP sigma
    rho = (math.sqrt(math.log(1e5) + 1) - math.sqrt(math.log(1e5))) ** 2
    assert rho == pytest.approx(0.0208199, rel=1e-5)
    assert math.sqrt(2 * 100 / (1000**2 * rho)) == pytest.approx(0.0980111, rel=1e-5)
    # the paper's printed sigma is not (1, 1e-5)-DP under replace-one: the accountant says 1.0845
    paper = math.sqrt(100 / (1000**2 * rho))
    assert paper == pytest.approx(0.0693043, rel=1e-5)
    assert price([GaussianEvent(2 / 1000, paper, 100)], 1e-5).budget.epsilon == pytest.approx(1.0845, abs=1e-3)
    assert paper**2 <= 6 * 100 * math.log(1e5) / 1000**2  # Remark 2.5.3 bound


def test_dp_ight_zero_noise_equals_ight(monkeypatch):
    X, y, _ = make_sparse_regression(300, 40, 4, random_state=0)
    prob = _problem(X, y, SquaredLoss(), 4, clip=1e6)  # clipping inactive
    monkeypatch.setattr(sparse, "gaussian_noise", lambda rng, sigma, size: np.zeros(size))
    res = get_solver("dp_ight").solve(prob, PrivacyBudget(1.0, 1e-5), np.random.RandomState(0))
    ref, _ = ight(lambda w: X.T @ (X @ w - y) / 300, 40, 4, 1.0, res.n_iter)
    assert np.array_equal(res.coef, ref)


def test_clipped_gradient_sensitivity_adversarial_row():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(50, 8))
    y = rng.randn(50)
    X2, y2 = X.copy(), y.copy()
    X2[7], y2[7] = 1e6, -1e9  # huge row and label
    G = 0.7
    flipped = np.sign(y)
    flipped[7] = -flipped[7]
    for loss, yy, yy2 in ((SquaredLoss(), y, y2), (LogisticLoss(), np.sign(y), flipped)):
        for _ in range(5):
            w = rng.randn(8)
            g1 = _problem(X, yy, loss, 3, G).mean_gradient(w)
            g2 = _problem(X2, yy2, loss, 3, G).mean_gradient(w)
            assert np.linalg.norm(g1 - g2) <= 2 * G / 50 * (1 + 1e-12)


def test_dp_ight_noise_injection_variance():
    n, p = 100, 2000
    X = np.zeros((n, p))
    prob = _problem(X, np.zeros(n), SquaredLoss(), p, clip=1.0, max_iter=1, learning_rate=0.5)
    res = get_solver("dp_ight").solve(prob, PrivacyBudget(1.0, 1e-5), np.random.RandomState(3))
    sigma = res.noise_scale
    # data gradient is 0, so the single update is -eta * u with u ~ N(0, sigma^2 I)
    stat = np.sum((res.coef / (0.5 * sigma)) ** 2)
    assert stats.chi2.cdf(stat, p) == pytest.approx(0.5, abs=0.499)
    assert stats.chi2(p).ppf(0.001) < stat < stats.chi2(p).ppf(0.999)
    # Lemma 2.10.1 sanity: E||u||_inf^2 <= 2 sigma^2 ln(4d)
    assert np.max(np.abs(res.coef / 0.5)) ** 2 <= 2 * sigma**2 * math.log(4 * p) * 1.5


# -- dpsl_kt --------------------------------------------------------------------------------
def test_dpsl_kt_counterexample_l0_teacher_jumps_ridge_teacher_does_not():
    """Card 3.4a: the l0 teacher's minimiser jumps between supports; ours stays within its bound."""
    n, lam = 100, 0.1
    X = np.zeros((n, 2))
    X[: n // 2, 0] = 1.0
    X[n // 2:, 1] = 1.0
    y_s, y_t = np.ones(n), np.ones(n)
    y_s[-1], y_t[-1] = 0.9, 1.1

    def l0_teacher(y):
        grad = lambda w: X.T @ (X @ w - y) / n + lam * w  # noqa: E731
        return ight(grad, 2, 1, 1.0, 500)[0]

    jump = np.linalg.norm(l0_teacher(y_s) - l0_teacher(y_t))
    assert jump > 1.0  # ~1.18 in the card, far above the paper's sqrt(2) gamma/(n lambda) = 0.14
    assert jump > 5 * math.sqrt(2) * 1.0 / (n * lam)

    solver = get_solver("dpsl_kt")
    G, tau = 2.0, 1e-6
    thetas = []
    for y in (y_s, y_t):
        prob = _problem(X, y, SquaredLoss(), 1, clip=G)
        thetas.append(solver._teacher(prob, lam, lam * tau)[0])
    diff = np.linalg.norm(thetas[0] - thetas[1])
    assert diff <= teacher_sensitivity(G, n, lam, tau)
    assert diff < 0.01 * jump


def test_dpsl_kt_noise_scale_independent_computation():
    X, y, _ = make_sparse_regression(800, 30, 3, random_state=0)
    Xs = np.random.RandomState(5).uniform(-1, 1, size=(500, 30))
    est = DPSparseLinearRegression(
        epsilon=1.0, n_nonzero_coefs=3, solver="dpsl_kt", clip_norm=2.0, fit_intercept=False, label_bound=None,
        solver_options={"synthetic_features": Xs, "teacher_alpha": 0.2, "teacher_tol": 1e-3}, random_state=0,
    ).fit(X, y)
    tau = 1e-3 * 2.0 / (800 * 0.2)
    expected = np.linalg.norm(Xs, 2) * (2 * 2.0 / (800 * 0.2) + 2 * tau) / _gdp_mu(1.0, 1e-5)
    assert est.noise_scale_ == pytest.approx(expected, rel=1e-6)
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, abs=1e-9)
    # the card's worked numbers for the paper's Delta (3.8 / 6): analytic Gaussian at (1, delta/2)
    mu = _gdp_mu(1.0, 5e-6)
    assert 1.154701 / mu == pytest.approx(4.48502, rel=1e-4)
    assert 2 * 1.154701 / mu == pytest.approx(8.97004, rel=1e-4)  # factor-2-corrected Delta
    # the teacher is never kept: the only fitted arrays are the public outputs
    arrays = {k for k, v in vars(est).items() if isinstance(v, np.ndarray) and k.endswith("_")}
    assert arrays == {"coef_", "support_"}


def test_dpsl_kt_zero_noise_student_recovers_teacher(under_noise):
    rng = np.random.RandomState(0)
    X, y, _ = make_sparse_regression(2000, 40, 4, noise=0.0, random_state=1)
    prob = _problem(X, y, SquaredLoss(), 40, clip=100.0, options={"teacher_alpha": 0.05, "n_synthetic": 2000,
                                                                     "teacher_tol": 1e-9})
    solver = get_solver("dpsl_kt")
    teacher, _ = solver._teacher(prob, 0.05, 1e-12)
    with under_noise(1e-12):  # (almost) no noise on the synthetic labels
        res = solver.solve(prob, PrivacyBudget(1.0, 1e-5), rng)
    assert np.linalg.norm(res.coef - teacher) <= 1e-6 * np.linalg.norm(teacher)


# -- dp_fw_l1 -------------------------------------------------------------------------------
def test_dp_fw_selection_epsilon_and_scale():
    solver = get_solver("dp_fw_l1")
    prob = PublicSparseProblem(loss=SquaredLoss(), n_nonzero=10, feature_bound=1.0, clip=1.0, clip_order=np.inf,
                               n_samples=1000, n_features=50, options={"l1_radius": 1.0})
    eps0 = solver.selection_epsilon(prob, PrivacyBudget(1.0, 1e-5), 50)
    # card 4.4: zCDP calibration gives 0.0577165; our accountant may only certify more per step
    assert eps0 >= 0.0577165 * (1 - 1e-6)
    assert price([BoundedRangeEvent(eps0, 50)], 1e-5).budget.epsilon <= 1.0 + 1e-9
    rho = 50 * 0.0577165**2 / 8
    assert rho + 2 * math.sqrt(rho * math.log(1e5)) == pytest.approx(1.0, abs=1e-5)
    assert 2 * (2 * 1.0 * 1.0 / 1000) / 0.0577165 == pytest.approx(0.0693043, rel=1e-5)  # card's Gumbel scale


def _project_l1(v, r):
    if np.abs(v).sum() <= r:
        return v
    u = np.sort(np.abs(v))[::-1]
    css = np.cumsum(u)
    k = np.nonzero(u * np.arange(1, v.size + 1) > css - r)[0][-1]
    theta = (css[k] - r) / (k + 1)
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0)


def test_dp_fw_noise_free_reaches_l1_optimum(under_noise):
    X, y, _ = make_sparse_regression(500, 20, 3, random_state=2)
    r, T, n = 2.0, 300, 500
    prob = _problem(X, y, SquaredLoss(), 20, clip=1e9, order=np.inf, max_iter=T, options={"l1_radius": r})
    with under_noise(1e-12):  # the noisy max is (up to 1e-12 of its scale) the argmax
        res = get_solver("dp_fw_l1").solve(prob, PrivacyBudget(1.0, 1e-5), np.random.RandomState(0))
    assert np.abs(res.coef).sum() <= r + 1e-12
    f = lambda w: 0.5 * np.mean((X @ w - y) ** 2)  # noqa: E731
    H = X.T @ X / n
    w = np.zeros(20)
    for _ in range(5000):  # projected gradient reference optimum
        w = _project_l1(w - (X.T @ (X @ w - y) / n) / np.linalg.eigvalsh(H)[-1], r)
    gamma = 4 * r**2 * np.max(np.abs(H))
    h1 = f(np.zeros(20)) - f(w)
    assert f(res.coef) - f(w) <= 2 * max(gamma, 1.5 * h1) / (T + 2) + 1e-9
    assert f(res.coef) - f(w) <= 1e-3 * max(1.0, f(w)) + 2 * gamma / (T + 2)


# -- two_stage ------------------------------------------------------------------------------
def test_two_stage_stage2_without_noise_is_ridge(under_noise):
    X, y, _ = make_sparse_regression(400, 6, 2, noise=0.05, random_state=3)
    solver = get_solver("two_stage")
    prob = _problem(X, y, SquaredLoss(), 6, None, label_bound=3.0, options={"coef_norm": 100.0})
    sub = solver.stage2_problem(prob, np.arange(6))
    with under_noise(1e-12):  # (almost) no objective-perturbation noise
        res = get_solver("obj_pert").solve(sub, PrivacyBudget(1.0, 1e-5), np.random.RandomState(0))
    lam = res.info["alpha_effective"]
    ref = Ridge(alpha=lam * 400, fit_intercept=False).fit(X, y).coef_
    np.testing.assert_allclose(res.coef, ref, atol=1e-6)


def test_two_stage_support_size_events_and_label_bound():
    X, y, _ = make_sparse_regression(900, 30, 3, random_state=4)
    est = DPSparseLinearRegression(epsilon=2.0, n_nonzero_coefs=3, solver="two_stage", label_bound=3.0,
                                   random_state=0).fit(X, y)
    assert len(est.support_) <= 3 and np.count_nonzero(est.coef_) <= 3
    vote = est.privacy_events_[0]
    assert vote.sensitivity == pytest.approx(2 * 3 / 30) and vote.epsilon == pytest.approx(1.0)
    assert est.privacy_spent_.epsilon <= 2.0 + 1e-9
    with pytest.raises(ValueError, match="label_bound"):
        DPSparseLinearRegression(solver="two_stage").fit(X, y)
    with pytest.raises(ValueError, match="n_blocks"):
        DPSparseLinearRegression(solver="two_stage", label_bound=3.0, solver_options={"n_blocks": 10**6}).fit(X, y)
