"""Floating-point-safe release: exact discrete Gaussian sampler and output_pert's secure_noise mode."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

from skdp import DPLogisticRegression, DPRidge
from skdp.audit import audit
from skdp.privacy.discrete import (
    _bernoulli_exp_neg,
    _discrete_laplace,
    discrete_gaussian,
    secure_gaussian_release,
    secure_grid,
)


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(3, 10), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_neg_frequency(gamma):
    rng = np.random.RandomState(0)
    n = 20000
    hits = sum(_bernoulli_exp_neg(rng, gamma) for _ in range(n))
    p = math.exp(-float(gamma))
    assert abs(hits / n - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-12


def _chi2_pvalue(samples, pmf, support):
    obs = np.array([np.sum(samples == k) for k in support], dtype=float)
    exp = pmf * len(samples)
    keep = exp >= 5
    obs_k, exp_k = obs[keep], exp[keep]
    exp_k = exp_k * obs_k.sum() / exp_k.sum()
    return stats.chisquare(obs_k, exp_k).pvalue


def test_discrete_laplace_pmf():
    rng = np.random.RandomState(1)
    t = 3
    z = np.array([_discrete_laplace(rng, t) for _ in range(20000)])
    ks = np.arange(-40, 41)
    pmf = np.exp(-np.abs(ks) / t)
    pmf /= pmf.sum()
    assert _chi2_pvalue(z, pmf, ks) > 1e-3


@pytest.mark.parametrize("sigma2", [Fraction(2), Fraction(7, 3), Fraction(1, 4)])
def test_discrete_gaussian_pmf(sigma2):
    rng = np.random.RandomState(2)
    z = discrete_gaussian(rng, sigma2, 20000)
    assert z.dtype == np.int64
    ks = np.arange(-30, 31)
    pmf = np.exp(-ks.astype(float) ** 2 / (2 * float(sigma2)))
    pmf /= pmf.sum()
    assert _chi2_pvalue(z, pmf, ks) > 1e-3


def test_discrete_gaussian_is_reproducible_and_rejects_bad_scale():
    a = discrete_gaussian(np.random.RandomState(5), 3, 50)
    b = discrete_gaussian(np.random.RandomState(5), 3, 50)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="sigma2"):
        discrete_gaussian(np.random.RandomState(0), 0, 3)


def _rho_for(eps, delta):
    """Independent: largest rho whose CKS20 Cor. 13 conversion is <= eps (own minimisation over alpha)."""
    def eps_of(rho):
        f = lambda a: a * rho + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)  # noqa: E731
        return min(f(a) for a in np.exp(np.linspace(math.log(1.001), math.log(1e4), 20000)))
    return optimize.brentq(lambda r: eps_of(r) - eps, 1e-8, 50, xtol=1e-12)


def test_secure_release_grid_noise_scale_and_rounding_cost():
    rng = np.random.RandomState(3)
    value = np.array([0.123456789, -2.5, 7.0, 1e-9])
    sens, eps, delta = 0.05, 1.0, 1e-5
    rho = _rho_for(eps, delta)
    out, event, sigma, gamma = secure_gaussian_release(rng, value, sens, rho)
    # the grid: a power of two, at most 0.1% of the sensitivity per sqrt(d)
    assert math.log2(gamma) == int(math.log2(gamma))
    assert gamma * math.sqrt(4) <= sens / 1000 < 2 * gamma * math.sqrt(4)  # the largest such power of two
    # every output is exactly on the grid
    np.testing.assert_array_equal(out / gamma, np.rint(out / gamma))
    # noise scale from the zCDP formula with the rounding's cost in the sensitivity
    assert event.rho == pytest.approx(rho, rel=1e-9)
    assert sigma == pytest.approx((sens + gamma * 2) / math.sqrt(2 * rho), rel=1e-12)
    draws = np.array([secure_gaussian_release(rng, np.zeros(50), sens, rho)[0] for _ in range(60)]).ravel()
    assert np.std(draws) == pytest.approx(sigma, rel=0.05)


def test_secure_release_rejects_bad_input():
    rng = np.random.RandomState(0)
    with pytest.raises(ValueError, match="finite"):
        secure_gaussian_release(rng, np.array([np.nan]), 1.0, 0.1)
    with pytest.raises(ValueError, match="rho"):
        secure_gaussian_release(rng, np.zeros(2), 1.0, 0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        secure_grid(0.0, 3)
    with pytest.raises(ValueError, match="too large"):
        secure_gaussian_release(rng, np.array([1e300]), 1.0, 0.1)


def _secure_ridge(**kw):
    return DPRidge(solver="output_pert", data_norm=1.0, label_bound=1.0, solver_options={"secure_noise": True},
                   random_state=0, **kw)


def test_output_pert_secure_noise_mode():
    rng = np.random.RandomState(0)
    X = rng.uniform(-0.5, 0.5, (300, 3))
    y = X @ np.array([1.0, -0.5, 0.0])
    m = _secure_ridge(epsilon=1.0).fit(X, y)
    assert m.privacy_spent_.epsilon <= 1.0 + 1e-9 and m.privacy_spent_.delta == 1e-5
    assert m.solver_info_["noise"] == "discrete_gaussian"
    # without an intercept and with labels in [-1, 1] the coefficients are the released vector itself
    raw = _secure_ridge(epsilon=1.0, fit_intercept=False).fit(X, y)
    g = raw.solver_info_["grid"]
    assert g > 0 and math.log2(g) == int(math.log2(g))
    np.testing.assert_array_equal(raw.coef_ / g, np.rint(raw.coef_ / g))
    assert m.privacy_events_ == list(m.planned_events(300, 3))
    # the continuous mode at the same budget has less noise (analytic Gaussian vs zCDP)
    cont = DPRidge(solver="output_pert", data_norm=1.0, label_bound=1.0, random_state=0).fit(X, y)
    assert cont.noise_scale_ < m.noise_scale_ < 1.35 * cont.noise_scale_
    pure = _secure_ridge(epsilon=1.0, delta=0.0).fit(X, y)  # the geometric mechanism (tests/test_secure_noise.py)
    assert pure.solver_info_["noise"] == "discrete_laplace" and pure.privacy_spent_.delta == 0
    clf = DPLogisticRegression(solver="output_pert", data_norm=1.0, classes=[0, 1],
                               solver_options={"secure_noise": True}, random_state=0).fit(X, (y > 0).astype(int))
    assert clf.privacy_spent_.epsilon <= 1.0 + 1e-9


def test_secure_output_pert_audit():
    est = DPRidge(solver="output_pert", epsilon=2.0, alpha=1.0, max_iter=40, data_norm=1.0, label_bound=1.0,
                  coef_norm=3.0, fit_intercept=False, solver_options={"secure_noise": True})
    X0, y0 = np.zeros((40, 2)), np.zeros(40)
    assert audit(est, X0, y0, n_fits=200, canary_norm=1.0).passed
    control = audit(est, X0, y0, n_fits=200, canary_norm=1.0, noise_multiplier=0.25)
    assert control.mu_lower_bound > control.claimed_mu, control


def test_dpsl_kt_secure_labels():
    from skdp import DPSparseLinearRegression

    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (400, 6))
    y = 2 * X[:, 0] - X[:, 1]
    base = dict(epsilon=2.0, n_nonzero_coefs=2, solver="dpsl_kt", label_bound=4.0, random_state=0)
    m = DPSparseLinearRegression(**base, solver_options={"secure_noise": True}).fit(X, y)
    assert m.privacy_spent_.epsilon <= 2.0 + 1e-9
    assert m.privacy_events_ == list(m.planned_events(400, 6))
    assert type(m.privacy_events_[-1]).__name__ == "ZCDPEvent"
    cont = DPSparseLinearRegression(**base).fit(X, y)
    assert cont.noise_scale_ < m.noise_scale_ < 1.35 * cont.noise_scale_
    assert set(np.flatnonzero(m.coef_)) == {0, 1}


def test_dp_gd_secure_noise_mode():
    """Every gradient release is on the grid with discrete Gaussian noise; rho / T-zCDP each, rho the budget's."""
    from skdp.privacy import ZCDPEvent, price
    from skdp.privacy.mechanisms import record_draws

    rng = np.random.RandomState(0)
    X = rng.randn(300, 4)
    y = (X[:, 0] > 0).astype(int)
    kw = dict(data_norm=2.0, classes=[0, 1], max_iter=5, random_state=0)
    with record_draws() as draws:
        clf = DPLogisticRegression(1.0, solver_options={"secure_noise": True}, **kw).fit(X, y)
    (event,) = clf.privacy_events_
    rho = _rho_for(1.0, 1e-5)
    assert isinstance(event, ZCDPEvent) and event.count == 5 and event.rho == pytest.approx(rho / 5, rel=1e-6)
    assert price(clf.privacy_events_, 1e-5).budget.epsilon == pytest.approx(1.0, rel=1e-6)
    sens = 2 * (2.0 * 0.5) / 300  # replace-one, public n: 2 G / n with G the clip at w = 0 (K / 2)
    gamma = secure_grid(sens, 5)
    assert clf.noise_scale_ == pytest.approx((sens + gamma * math.sqrt(5)) / math.sqrt(2 * rho / 5), rel=1e-6)
    assert [d.kind for d in draws] == ["discrete_gaussian"] * 5
    assert all(d.scale == pytest.approx(clf.noise_scale_, rel=1e-6) for d in draws)
    plain = DPLogisticRegression(1.0, **kw).fit(X, y)
    assert clf.score(X, y) > 0.9 and plain.noise_scale_ < clf.noise_scale_ < 1.3 * plain.noise_scale_
    with pytest.raises(ValueError, match="secure_noise"):  # a solver without the option refuses it
        DPLogisticRegression(1.0, solver="noisy_sgd", solver_options={"secure_noise": True}, **kw).fit(X, y)


def test_secure_dp_gd_audit():
    """Neighbouring worlds on the released model: within the claim, and a quarter of the noise is caught."""
    est = DPLogisticRegression(2.0, solver="dp_gd", data_norm=1.0, classes=[0, 1], max_iter=5, fit_intercept=False,
                               solver_options={"secure_noise": True})
    X0, y0 = np.zeros((40, 2)), np.zeros(40, dtype=int)
    assert audit(est, X0, y0, n_fits=200, canary_norm=1.0).passed
    control = audit(est, X0, y0, n_fits=200, canary_norm=1.0, noise_multiplier=0.25)
    assert control.mu_lower_bound > control.claimed_mu, control


# ------------------------------------------------------------------------------------------
# the vectorised exact samplers against the exact pmf
# ------------------------------------------------------------------------------------------
def _binned_pvalue(samples, edges, masses):
    """Chi-square p-value of integer samples in the bins ``[edges[i], edges[i+1])`` with exact masses."""
    obs = np.histogram(samples, bins=edges)[0].astype(float)
    assert obs.sum() == len(samples)  # the bins cover every sample
    return stats.chisquare(obs, masses / masses.sum() * len(samples)).pvalue


@pytest.mark.parametrize("sigma", [0.5, 1.0, math.sqrt(7 / 3), 37.25, 1e6])
def test_fast_discrete_gaussian_matches_the_exact_pmf(sigma):
    from skdp.privacy.discrete import discrete_gaussian

    rng = np.random.RandomState(11)
    sigma2 = Fraction(sigma) ** 2
    z = discrete_gaussian(rng, sigma2, 40000)
    assert z.dtype == np.int64 and z.shape == (40000,)
    if sigma < 50:  # exact pmf on the integers, the tails merged into the outer bins
        ks = np.arange(-int(12 * sigma) - 2, int(12 * sigma) + 3)
        pmf = np.exp(-ks.astype(float) ** 2 / (2 * float(sigma2)))
        pmf /= pmf.sum()
        centre = ks[pmf * 40000 >= 5]
        edges = np.concatenate([[-np.inf], centre[1:], [np.inf]])
        assert _binned_pvalue(z, edges, np.histogram(ks, bins=edges, weights=pmf)[0]) > 1e-3
    else:  # 60 bins of the integers; at this scale the discrete Gaussian's bin masses equal the normal's
        # to within exp(-2 pi^2 sigma^2) (Poisson summation)
        cuts = np.round(stats.norm.ppf(np.linspace(0, 1, 61)[1:-1]) * sigma)
        edges = np.concatenate([[-np.inf], cuts, [np.inf]])
        masses = np.diff(stats.norm.cdf((edges - 0.5) / sigma))
        assert _binned_pvalue(z, edges, masses) > 1e-3
    # the reference sampler draws the same law (a two-sample test on a few hundred draws)
    if sigma < 50:
        from skdp.privacy.discrete import discrete_gaussian_reference

        ref = discrete_gaussian_reference(np.random.RandomState(12), sigma2, 800)
        assert stats.mannwhitneyu(ref, z[:800]).pvalue > 1e-3


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(7, 2), Fraction(10**6)])
def test_fast_discrete_laplace_matches_the_exact_pmf(scale):
    from skdp.privacy.discrete import discrete_laplace

    rng = np.random.RandomState(13)
    z = discrete_laplace(rng, scale, 40000)
    b = float(scale)
    a = math.exp(-1 / b)  # P(y) = (1 - a) / (1 + a) a^|y|; P(|y| >= k) for k >= 1 is 2 a^k / (1 + a)
    if b < 10:
        ks = np.arange(-int(12 * b) - 1, int(12 * b) + 2)
        pmf = (1 - a) / (1 + a) * a ** np.abs(ks)
        centre = pmf * 40000 >= 5
        ks = ks[centre]
        edges = np.concatenate([[-np.inf], ks[1:], [np.inf]])
        cdf = np.array([_dlap_cdf(e, a) for e in edges])
    else:
        cuts = np.round(np.linspace(-4 * b, 4 * b, 41))
        edges = np.concatenate([[-np.inf], cuts, [np.inf]])
        cdf = np.array([_dlap_cdf(e, a) for e in edges])
    assert _binned_pvalue(z, edges, np.diff(cdf)) > 1e-3


def _dlap_cdf(x, a):
    """``P(Y < x)`` of the discrete Laplace ``P(y) prop. to a^|y|``, ``x`` an integer or infinite."""
    if x == -np.inf:
        return 0.0
    if x == np.inf:
        return 1.0
    x = int(x)
    if x <= 0:  # P(Y <= x - 1) = a^(1 - x) / (1 + a)
        return a ** (1 - x) / (1 + a)
    return 1 - a ** x / (1 + a)


@pytest.mark.parametrize("x", [Fraction(0), Fraction(3, 10), Fraction(1), Fraction(5, 2),
                               Fraction(3 * 2**70 + 1, 2**71), Fraction(10**30 + 7, 10**30)])
def test_vectorised_bernoulli_exp_neg(x):
    from skdp.privacy.discrete import bernoulli_exp_neg

    rng = np.random.RandomState(14)
    n = 40000
    hits = bernoulli_exp_neg(rng, np.full(n, x.numerator, dtype=object), x.denominator)
    p = math.exp(-float(x))
    assert abs(hits.mean() - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_vectorised_bernoulli_exact_fallback(monkeypatch):
    """With 3-bit uniforms most big-denominator trials are undecided and finish on the exact remainder."""
    from skdp.privacy import discrete

    monkeypatch.setattr(discrete, "_B", 3)
    rng = np.random.RandomState(15)
    x = Fraction(2**60 + 12345, 2**61)  # just over 1/2, a denominator of the big-integer path
    n = 40000
    hits = discrete.bernoulli_exp_neg(rng, np.full(n, x.numerator, dtype=object), x.denominator)
    p = math.exp(-float(x))
    assert abs(hits.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)
    with pytest.raises(ValueError, match="num >= 0"):
        discrete.bernoulli_exp_neg(rng, [-1], 2)
    with pytest.raises(ValueError, match="range"):
        discrete.discrete_laplace(rng, Fraction(2**41), 3)
