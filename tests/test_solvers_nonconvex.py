"""Nonconvex-capable solvers: dp_lssgd, rrpsgd, dp_srm (seed 002 Alg. 2, seed 004 ch. 4-5)."""

import math

import numpy as np
import pytest

from skdp import DPLogisticRegression, DPRidge
from skdp.audit import audit_solvers
from skdp.privacy import PoissonGaussianEvent, price
from skdp.solvers import get_solver
from skdp.solvers.gradient import poisson_batches
from skdp.solvers.nonconvex import laplacian_smooth, ls_beta, ls_gamma


# ------------------------------------------------------------------------------------------
# Laplacian smoothing (card section D)
# ------------------------------------------------------------------------------------------
def _dense_A(sigma, d):
    """``I - sigma L`` with the periodic Laplacian, built entry by entry (accumulating, card D.3)."""
    A = np.eye(d)
    for i in range(d):
        A[i, i] += 2 * sigma
        A[i, (i + 1) % d] -= sigma
        A[i, (i - 1) % d] -= sigma
    return A


@pytest.mark.parametrize("d", [1, 2, 3, 10, 17])
@pytest.mark.parametrize("sigma", [0.0, 0.5, 3.0])
def test_fft_smoothing_is_the_dense_solve(d, sigma):
    rng = np.random.RandomState(d)
    v = rng.randn(d, 3)
    ref = np.linalg.solve(_dense_A(sigma, d), v)
    np.testing.assert_allclose(laplacian_smooth(v, sigma, axis=0), ref, atol=1e-12)
    np.testing.assert_allclose(laplacian_smooth(v[:, 0], sigma), ref[:, 0], atol=1e-12)


def test_ls_constants_match_sums_and_card_tables():
    for sigma in (0.5, 1.0, 3.0):
        for d in (5, 64):
            lam = np.linalg.eigvalsh(_dense_A(sigma, d))
            assert ls_gamma(sigma, d) == pytest.approx(np.mean(1 / lam), rel=1e-10)
            assert ls_beta(sigma, d) == pytest.approx(np.mean(1 / lam**2), rel=1e-10)
    # card D.4 (Tables 5.3, 5.4), identical for d = 1000, 10000
    for sigma, g, b in zip([1, 2, 3, 4, 5], [0.447, 0.333, 0.277, 0.243, 0.218],
                           [0.268, 0.185, 0.149, 0.128, 0.114]):
        for d in (1000, 10000):
            assert round(ls_gamma(sigma, d), 3) == g
            assert round(ls_beta(sigma, d), 3) == b


# ------------------------------------------------------------------------------------------
# dp_lssgd (card section E)
# ------------------------------------------------------------------------------------------
def _data(n=300, d=6, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    return X, y


def test_dp_lssgd_noise_multiplier_is_the_accountants():
    X, y = _data()
    m = DPLogisticRegression(1.0, solver="dp_lssgd", data_norm=1.0, classes=[0, 1], random_state=0).fit(X, y)
    b, (T,) = m.solver_info_["batch_size"], m.n_iter_
    assert b == math.ceil(math.sqrt(300)) and T == min(2000, math.ceil(5 * 300 / b))
    z = m.solver_info_["noise_multiplier"]
    q = b / 300
    # independent check: the accountant prices the schedule at the target, and 1% less noise exceeds it
    assert price([PoissonGaussianEvent(q, z, T)], 1e-5).budget.epsilon <= 1.0 + 1e-9
    assert price([PoissonGaussianEvent(q, 0.99 * z, T)], 1e-5).budget.epsilon > 1.0
    # std on the mean is z G / b; the logistic gradients are clipped at their largest norm at w = 0,
    # G = data_norm / 2 (the estimator's documented clip)
    assert m.noise_scale_ == pytest.approx(z * 0.5 / b)
    assert m.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert m.privacy_events_ == list(m.planned_events(300, 6))


def test_dp_lssgd_with_ls_sigma_zero_is_dp_sgd():
    """ls_sigma = 0 must be plain DP-SGD: re-run the same draws by hand (logistic, no intercept)."""
    X, y = _data(n=120, d=4)
    est = DPLogisticRegression(1.0, solver="dp_lssgd", data_norm=1.0, classes=[0, 1], fit_intercept=False,
                               alpha=0.01, max_iter=15, solver_options={"ls_sigma": 0.0, "batch_size": 10},
                               random_state=3).fit(X, y)
    z = est.solver_info_["noise_multiplier"]
    eta = est.solver_info_["learning_rate"]
    rng = np.random.RandomState(3)
    w = np.zeros(4)
    ys = 2 * y - 1
    # the library's sampler (tested on its own): the 15 batches, then the 15 steps' noise, each drawn in one chunk
    batches = list(poisson_batches(rng, 120, 10 / 120, 15))
    noise = rng.normal(0.0, 1.0, size=(15, 4))
    for t, rows in enumerate(batches, start=1):
        margin = ys[rows] * (X[rows] @ w)
        per_example = -X[rows] * (ys[rows] / (1 + np.exp(margin)))[:, None]
        norms = np.linalg.norm(per_example, axis=1)
        per_example *= np.minimum(1.0, 0.5 / np.maximum(norms, 1e-300))[:, None]  # clip at G = 1/2
        g = per_example.sum(axis=0) / 10 + 0.01 * w
        g = g + noise[t - 1] * (z * 0.5 / 10)
        w = w - eta / math.sqrt(t) * g
    np.testing.assert_allclose(est.coef_.ravel(), w, rtol=1e-10, atol=1e-12)


def test_dp_lssgd_smooths_after_adding_noise():
    """With all-zero data the first update is -eta A^{-1} n: its variance is ls_beta times that of n."""
    d = 16
    X, y = np.zeros((50, d)), np.zeros(50)
    draws = []
    for seed in range(300):
        m = DPRidge(1.0, solver="dp_lssgd", data_norm=1.0, label_bound=1.0, fit_intercept=False, max_iter=1,
                    solver_options={"ls_sigma": 3.0, "batch_size": 10}, random_state=seed).fit(X, y)
        draws.append(m.coef_ / (m.solver_info_["learning_rate"] * m.noise_scale_))
    var = np.var(np.array(draws))
    assert var == pytest.approx(ls_beta(3.0, d), rel=0.08)  # noise after smoothing would give 1
    assert ls_beta(3.0, d) < 0.2


def test_dp_lssgd_leaves_the_intercept_unsmoothed():
    solver = get_solver("dp_lssgd")

    class P:
        intercept_index = 3

    v = np.arange(4.0)
    out = solver.smooth(P, v, 2.0)
    assert out[3] == 3.0 and not np.allclose(out[:3], v[:3])


def test_dp_lssgd_utility_and_options(breast_cancer_split):
    Xtr, Xte, ytr, yte = breast_cancer_split
    acc = np.mean([DPLogisticRegression(1.0, solver="dp_lssgd", data_norm=math.sqrt(30), classes=[0, 1],
                                        random_state=s).fit(Xtr, ytr).score(Xte, yte) for s in range(5)])
    assert acc > 0.85
    for bad, match in [({"ls_sigma": -1.0}, "ls_sigma"), ({"output": "best"}, "output"),
                       ({"learning_rate": 0.0}, "learning_rate"), ({"batch_size": 0}, "batch_size")]:
        with pytest.raises(ValueError, match=match):
            DPLogisticRegression(solver="dp_lssgd", data_norm=1.0, classes=[0, 1], solver_options=bad).fit(Xtr, ytr)
    avg = DPLogisticRegression(1.0, solver="dp_lssgd", data_norm=math.sqrt(30), classes=[0, 1],
                               solver_options={"output": "average"}, random_state=0).fit(Xtr, ytr)
    assert avg.score(Xte, yte) > 0.8


@pytest.mark.parametrize("solver", ["dp_lssgd", "rrpsgd", "dp_srm"])
def test_nonconvex_solver_audit(solver):
    (r,) = audit_solvers(2.0, 1e-5, n_fits=300, solvers=[solver])
    assert r.passed, r
    (control,) = audit_solvers(2.0, 1e-5, n_fits=500, solvers=[solver], noise_multiplier=0.25)
    assert control.mu_lower_bound > control.claimed_mu, control


# ------------------------------------------------------------------------------------------
# rrpsgd (seed 002, section 2)
# ------------------------------------------------------------------------------------------
def test_rrpsgd_calibration_and_random_round():
    X, y = _data(n=200, d=5)
    fits = [DPLogisticRegression(1.0, solver="rrpsgd", data_norm=1.0, classes=[0, 1], max_iter=6,
                                 random_state=s).fit(X, y) for s in range(300)]
    m = fits[0]
    b, N = m.solver_info_["batch_size"], m.solver_info_["max_rounds"]
    assert (b, N) == (math.ceil(math.sqrt(200)), 6)
    z = m.solver_info_["noise_multiplier"]
    assert price([PoissonGaussianEvent(b / 200, z, N)], 1e-5).budget.epsilon <= 1.0 + 1e-9
    assert price([PoissonGaussianEvent(b / 200, 0.99 * z, N)], 1e-5).budget.epsilon > 1.0
    # privacy is counted over all N rounds whatever R is; R is uniform on {1..N}
    rounds = np.array([f.solver_info_["rounds"] for f in fits])
    assert all(f.privacy_events_ == m.privacy_events_ == list(m.planned_events(200, 5)) for f in fits)
    counts = np.bincount(rounds, minlength=7)[1:]
    assert counts.min() > 0 and set(rounds) <= set(range(1, 7))
    from scipy.stats import chisquare
    assert chisquare(counts).pvalue > 1e-3


def test_rrpsgd_runs_exactly_r_noisy_sgd_rounds():
    X, y = _data(n=100, d=3)
    est = DPLogisticRegression(2.0, solver="rrpsgd", data_norm=1.0, classes=[0, 1], fit_intercept=False,
                               alpha=0.0, max_iter=20, solver_options={"batch_size": 8, "learning_rate": 0.5},
                               random_state=7).fit(X, y)
    z, R = est.solver_info_["noise_multiplier"], est.solver_info_["rounds"]
    rng = np.random.RandomState(7)
    assert int(rng.randint(1, 21)) == R
    w, ys = np.zeros(3), 2 * y - 1
    batches = list(poisson_batches(rng, 100, 8 / 100, R))  # R batches, then R steps' noise: one chunk each
    noise = rng.normal(0.0, 1.0, size=(R, 3))
    for rows, u in zip(batches, noise):
        per_example = -X[rows] * (ys[rows] / (1 + np.exp(ys[rows] * (X[rows] @ w))))[:, None]
        norms = np.linalg.norm(per_example, axis=1)
        per_example *= np.minimum(1.0, 0.5 / np.maximum(norms, 1e-300))[:, None]
        w = w - 0.5 * (per_example.sum(axis=0) / 8 + u * (z * 0.5 / 8))
    np.testing.assert_allclose(est.coef_.ravel(), w, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------
# dp_srm (seed 004, chapter 4)
# ------------------------------------------------------------------------------------------
def test_dp_srm_calibration():
    X, y = _data(n=300, d=5)
    m = DPLogisticRegression(1.0, solver="dp_srm", data_norm=1.0, classes=[0, 1], random_state=0,
                             solver_options={"initial_batch_size": 40}).fit(X, y)
    info, (T,) = m.solver_info_, m.n_iter_
    b, b0, z = info["batch_size"], info["initial_batch_size"], info["noise_multiplier"]
    assert (b, b0, T) == (18, 40, min(2000, math.ceil(4 * 300 / 18)))
    events = [PoissonGaussianEvent(b0 / 300, z, 1), PoissonGaussianEvent(b / 300, z, T - 1)]
    assert m.privacy_events_ == events == list(m.planned_events(300, 5))
    assert price(events, 1e-5).budget.epsilon <= 1.0 + 1e-9
    assert price([PoissonGaussianEvent(b0 / 300, 0.99 * z, 1), PoissonGaussianEvent(b / 300, 0.99 * z, T - 1)],
                 1e-5).budget.epsilon > 1.0
    # later releases: per-example bound S = gamma C1 + (1 - gamma) C2 with C1 = G = 1/2, C2 = 0.1 G, gamma = 0.1
    S = 0.1 * 0.5 + 0.9 * 0.05
    assert m.noise_scale_ == pytest.approx(z * S / b)


def test_dp_srm_without_noise_on_full_batches_is_gradient_descent():
    """Full batches, clips above every per-example term, (almost) no noise: v^t = grad F(theta^t) (GD)."""
    from skdp.privacy.mechanisms import scaled_noise

    X, y = _data(n=60, d=3)
    with scaled_noise(1e-12):
        est = DPRidge(1.0, solver="dp_srm", data_norm=1.0, label_bound=1.0, fit_intercept=False, alpha=0.1,
                      max_iter=12, random_state=0,
                      solver_options={"batch_size": 60, "initial_batch_size": 60, "momentum": 0.3,
                                      "diff_clip": 2.0, "learning_rate": 0.5, "iterate": "last"}).fit(X, y - 0.5)
    yc = y - 0.5
    w = np.zeros(3)
    for _ in range(12):
        w = w - 0.5 * (X.T @ (X @ w - yc) / 60 + 0.1 * w)
    np.testing.assert_allclose(est.coef_, w, rtol=1e-8, atol=1e-10)


def test_dp_srm_options_and_theory_constants():
    X, y = _data()
    for bad, match in [({"momentum": 0.0}, "momentum"), ({"diff_clip": -1}, "diff_clip"),
                       ({"iterate": "best"}, "iterate"), ({"initial_batch_size": 0}, "initial_batch_size")]:
        with pytest.raises(ValueError, match=match):
            DPLogisticRegression(solver="dp_srm", data_norm=1.0, classes=[0, 1], solver_options=bad).fit(X, y)
    c = get_solver("dp_srm").theory_constants(G=1.0, L=0.25, D_F=math.log(2), d=10, n=10000, epsilon=1.0,
                                              delta=1e-5)
    zeta = (0.25 * math.log(2) * 10 * math.log(1e5)) ** 0.25 / math.sqrt(10000)
    assert c["zeta"] == pytest.approx(zeta)
    assert c["n0"] == pytest.approx(0.25 * math.log(2) / zeta)
    assert c["T"] == int(4 * c["n0"] * 0.25 * math.log(2) / zeta**2) + 1


@pytest.mark.parametrize("solver", ["rrpsgd", "dp_srm"])
def test_new_solvers_learn(solver, breast_cancer_split):
    Xtr, Xte, ytr, yte = breast_cancer_split
    acc = np.mean([DPLogisticRegression(2.0, solver=solver, data_norm=math.sqrt(30), classes=[0, 1],
                                        random_state=s).fit(Xtr, ytr).score(Xte, yte) for s in range(5)])
    assert acc > 0.85


# ------------------------------------------------------------------------------------------
# the nonconvex penalty (seed 004, ch. 4 experiments; its value, gradient and constants: test_penalties.py)
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["dp_gd", "dp_lssgd", "rrpsgd", "dp_srm"])
def test_nonconvex_penalty_runs_within_budget(solver):
    X, y = _data(n=400, d=8)
    for eps in (0.2, 0.5, 1.0):
        m = DPLogisticRegression(eps, solver=solver, penalty="nonconvex", alpha=1e-3, data_norm=1.0,
                                 classes=[0, 1], max_iter=40, random_state=0).fit(X, y)
        assert m.privacy_spent_.epsilon <= eps * (1 + 1e-9)
        assert np.all(np.isfinite(m.coef_))


def test_nonconvex_penalty_is_refused_by_l2_only_solvers():
    X, y = _data()
    for solver in ("output_pert", "obj_pert", "dp_svrg", "noisy_sgd"):
        with pytest.raises(ValueError, match="penalty='nonconvex' is not supported"):
            DPLogisticRegression(solver=solver, penalty="nonconvex", data_norm=1.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="penalty"):
        DPRidge(penalty="l1", label_bound=1.0).fit(X, y)


def test_dp_gd_without_noise_finds_a_stationary_point_of_the_nonconvex_objective():
    from skdp.privacy.mechanisms import scaled_noise

    X, y = _data(n=200, d=4)
    y = np.where(np.random.RandomState(1).uniform(size=200) < 0.2, 1 - y, y)  # not separable: a minimiser exists
    lam = 0.05
    with scaled_noise(1e-12):
        m = DPLogisticRegression(1.0, solver="dp_gd", penalty="nonconvex", alpha=lam, data_norm=1.0,
                                 classes=[0, 1], fit_intercept=False, max_iter=2000, random_state=0).fit(X, y)
    w, ys = m.coef_.ravel(), 2 * y - 1
    derivative = -ys / (1 + np.exp(ys * (X @ w)))
    derivative = np.clip(derivative * np.linalg.norm(X, axis=1), -0.5, 0.5) / np.maximum(
        np.linalg.norm(X, axis=1), 1e-300)  # the estimator's clipped (Huber-type) logistic gradient
    grad = X.T @ derivative / 200 + 2 * lam * w / (1 + w**2) ** 2
    assert np.linalg.norm(grad) < 1e-6


@pytest.mark.parametrize("d", [2, 17, 300])
def test_dp_lssgd_smoothing_is_the_fft_solve(d):
    """The solver's smoothing (a dense inverse for small d, the FFT above) is ``A_sigma^{-1}`` on the feature rows."""
    solver = get_solver("dp_lssgd")

    class P:
        intercept_index = d

    v = np.random.RandomState(d).randn(d + 1, 2)
    out = solver.smooth(P, v, 1.5)
    np.testing.assert_allclose(out[:d], np.linalg.solve(_dense_A(1.5, d), v[:d]), atol=1e-12)
    assert np.array_equal(out[d], v[d])
