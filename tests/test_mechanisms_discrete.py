"""Floating-point-safe mechanisms: the exact discrete samplers, the discrete Laplace and Gaussian releases, the
exact exponential mechanism and the solvers' ``secure_noise`` option (or its refusal).

Floating-point-safe release: exact discrete Gaussian sampler and output_pert's secure_noise mode.

Floating-point-safe noise for every mechanism: the discrete Laplace release, the exact exponential
mechanism, and the ``secure_noise`` option of the solvers (or its refusal).
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

from skdp import DPLogisticRegression, DPRidge, DPSparseLinearRegression
from skdp.audit import audit
from skdp.privacy import BoundedRangeEvent, PureDPEvent, gumbel_scale
from skdp.privacy.discrete import (_bernoulli_exp_neg, _discrete_laplace, discrete_gaussian, exponential_mechanism,
                                   secure_gaussian_release, secure_grid, secure_l1_grid, secure_laplace_release,
                                   secure_selection_grid)
from skdp.privacy.mechanisms import record_draws


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
    pure = _secure_ridge(epsilon=1.0, delta=0.0).fit(X, y)  # the geometric mechanism (below)
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


# ------------------------------------------------------------------------------------------
# the discrete Laplace (geometric) release
# ------------------------------------------------------------------------------------------
def test_secure_laplace_release_grid_and_noise_scale():
    rng = np.random.RandomState(0)
    value = np.array([0.123456789, -2.5, 7.0])
    sens, eps = 0.3, 0.5
    with record_draws() as draws:
        out, event, scale, gamma = secure_laplace_release(rng, value, sens, eps)
    assert event == PureDPEvent(eps)
    # the grid: the largest power of two with gamma d <= sens / 1000
    assert math.log2(gamma) == int(math.log2(gamma)) and gamma * 3 <= sens / 1000 < 2 * gamma * 3
    np.testing.assert_array_equal(out / gamma, np.rint(out / gamma))
    # the scale carries the rounding's L1 cost gamma d
    assert scale == pytest.approx((sens + 3 * gamma) / eps, rel=1e-12)
    assert [d.kind for d in draws] == ["discrete_laplace"] and draws[0].scale == pytest.approx(scale, rel=1e-8)
    # the noise drawn: discrete Laplace with P(y) ~ a^|y|, a = exp(-gamma / scale): std sqrt(2a) / (1 - a)
    noise = np.concatenate([secure_laplace_release(rng, np.zeros(400), 1.0, 2.0)[0] for _ in range(10)])
    g = secure_l1_grid(1.0, 400)
    a = math.exp(-g / ((1.0 + 400 * g) / 2.0))
    assert np.std(noise) == pytest.approx(math.sqrt(2 * a) / (1 - a) * g, rel=0.03)
    with pytest.raises(ValueError, match="epsilon"):
        secure_laplace_release(rng, value, sens, 0.0)
    with pytest.raises(ValueError, match="finite"):
        secure_laplace_release(rng, np.array([np.inf]), sens, 1.0)


def _laplace_log_ratio(rng, n=3000):
    """log P(out <= q(D)) / P(out <= q(D')) for neighbours with |q(D) - q(D')| = sensitivity = 1, eps = 1."""
    a = np.array([secure_laplace_release(rng, [0.3], 1.0, 1.0)[0][0] for _ in range(n)])
    b = np.array([secure_laplace_release(rng, [1.3], 1.0, 1.0)[0][0] for _ in range(n)])
    pa, pb = np.mean(a <= 0.3), np.mean(b <= 0.3)
    se = math.sqrt((1 - pa) / (pa * n) + (1 - pb) / (pb * n))
    return math.log(pa / pb), se


def test_secure_laplace_neighbours_within_epsilon_and_under_noise_caught(under_noise):
    """The set {out <= q(D)} attains the Laplace ratio e^eps; a quarter of the noise shows about 4 eps."""
    rng = np.random.RandomState(1)
    ratio, se = _laplace_log_ratio(rng)
    assert ratio <= 1.0 + 4 * se
    assert ratio > 1.0 - 4 * se  # the bound is attained: the test has power at the claim itself
    with under_noise(0.25):
        ratio_low, se_low = _laplace_log_ratio(rng)
    assert ratio_low > 1.0 + 4 * se_low


# ------------------------------------------------------------------------------------------
# the exact exponential mechanism
# ------------------------------------------------------------------------------------------
def test_exponential_mechanism_law():
    """Selection frequencies against the exact law exp(round(score) / scale), computed independently."""
    rng = np.random.RandomState(2)
    scores = np.array([0.0, 0.3, -0.7, 1.2, -np.inf, 1.2])
    grid, scale = 2.0**-10, 0.5
    n = 6000
    with record_draws() as draws:
        picks = np.array([exponential_mechanism(rng, scores, scale, grid) for _ in range(n)])
    assert [d.kind for d in draws] == ["exponential"] * n and draws[0].scale == scale
    assert not np.any(picks == 4)  # -inf is never chosen
    live = [0, 1, 2, 3, 5]
    w = np.exp(np.rint(scores[live] / grid) * grid / scale)
    obs = np.array([np.sum(picks == i) for i in live])
    assert stats.chisquare(obs, w / w.sum() * n).pvalue > 1e-3
    with pytest.raises(ValueError, match="finite"):
        exponential_mechanism(rng, [np.nan, 1.0], scale, grid)
    with pytest.raises(ValueError, match="at least one"):
        exponential_mechanism(rng, [-np.inf], scale, grid)


def _selection_br(rng, n=3000):
    """Empirical bounded-range epsilon of one selection between neighbouring score vectors (claim eps = 1)."""
    sens = 1.0
    grid = secure_selection_grid(sens)
    scale = gumbel_scale(sens + grid, 1.0)
    q = np.zeros(10)
    q2 = np.full(10, -sens)
    q2[0] = sens  # every score moves by at most sens
    a = np.array([exponential_mechanism(rng, q, scale, grid) for _ in range(n)])
    b = np.array([exponential_mechanism(rng, q2, scale, grid) for _ in range(n)])
    p = [np.mean(a == 0), np.mean(a == 1), np.mean(b == 0), np.mean(b == 1)]
    se = math.sqrt(sum((1 - x) / (x * n) for x in p))
    return math.log(p[2] / p[0]) - math.log(p[3] / p[1]), se


def test_exponential_mechanism_neighbours_within_claim_and_under_noise_caught(under_noise):
    rng = np.random.RandomState(3)
    br, se = _selection_br(rng)
    assert br <= 1.0 + 4 * se and br > 1.0 - 4 * se  # attained, never exceeded
    with under_noise(0.25):
        br_low, se_low = _selection_br(rng)
    assert br_low > 1.0 + 4 * se_low


# ------------------------------------------------------------------------------------------
# the solvers' secure_noise option
# ------------------------------------------------------------------------------------------
#: solvers with the option: the kind of each release in secure mode
SECURE = {"output_pert": {"discrete_gaussian"}, "dp_gd": {"discrete_gaussian"}, "dpsl_kt": {"discrete_gaussian"},
          "dp_ight": {"discrete_gaussian"}, "dp_accmd": {"discrete_gaussian"}, "phased_sgd": {"discrete_gaussian"},
          "adassp": {"discrete_gaussian"}, "noisy_iht": {"discrete_gaussian", "exponential"},
          "noisy_sfw": {"exponential"}, "dp_fw_l1": {"exponential"}}


def _secure_case(solver, secure=True):
    from skdp.audit import _solver_cases

    est, (X, y) = _solver_cases(2.0, 1e-5)[solver]
    options = dict(est.get_params().get("solver_options") or {})
    if secure:
        options["secure_noise"] = True
    # the audit's background plus one canary row, as in tests/test_draws.py
    return (est.set_params(random_state=0, solver_options=options), np.vstack([X, np.eye(X.shape[1])[0]]),
            np.append(y, 1))


def _counts(events, kinds):
    return sum(e.count for e in events if isinstance(e, kinds))


@pytest.mark.parametrize("solver", sorted(SECURE))
def test_secure_solvers_draw_only_exact_noise_and_price_it(solver):
    from skdp.privacy import GaussianEvent, ZCDPEvent, price

    est, X, y = _secure_case(solver)
    with record_draws() as draws:
        est.fit(X, y)
    kinds = {d.kind for d in draws}
    assert kinds == SECURE[solver], kinds  # no floating-point draw left in the solver
    events = est.privacy_events_
    assert not any(isinstance(e, GaussianEvent) for e in events)  # the events the secure draws satisfy
    assert est.privacy_spent_.epsilon <= 2.0 + 1e-9 and est.privacy_spent_.delta <= 1e-5
    assert price(events, 1e-5).budget.epsilon <= 2.0 + 1e-9
    assert list(est.planned_events(*X.shape)) == events
    gauss = [d for d in draws if d.kind == "discrete_gaussian"]
    n_zcdp = _counts(events, ZCDPEvent)
    if solver == "phased_sgd":  # one rho-zCDP release: the phases are on disjoint rows
        assert n_zcdp == 1 and len(gauss) == est.solver_info_["phases"]
    else:
        assert len(gauss) == n_zcdp
    assert sum(d.kind == "exponential" for d in draws) == _counts(events, BoundedRangeEvent)
    # the scale reported is drawn (the discrete variance rounded up by at most 2^-20): the largest one,
    # except adassp's, which reports its X^T X release's
    scales = [d.scale for d in gauss] or [d.scale for d in draws]
    reported = np.max(est.noise_scale_)
    if solver == "adassp":
        assert len(scales) == 3 and scales[1] == pytest.approx(reported, rel=1e-6)
    else:
        assert max(scales) == pytest.approx(reported, rel=1e-6)


@pytest.mark.parametrize("solver", sorted(SECURE))
def test_secure_solver_noise_against_the_default(solver):
    """Secure noise is at least the default's (zCDP conversion, grid cost) and at most a third more; an
    under-noised secure fit shows in its draws."""
    from skdp.privacy.mechanisms import scaled_noise

    est, X, y = _secure_case(solver)
    base, _, _ = _secure_case(solver, secure=False)
    est.fit(X, y)
    base.fit(X, y)
    ratio = np.max(est.noise_scale_) / np.max(base.noise_scale_)
    assert 1.0 < ratio < 1.35, ratio
    with scaled_noise(0.5), record_draws() as draws:
        est.fit(X, y)
    scales = [d.scale for d in draws if d.kind == "discrete_gaussian"] or [d.scale for d in draws]
    reported = np.max(est.noise_scale_)
    assert (scales[1] if solver == "adassp" else max(scales)) == pytest.approx(0.5 * reported, rel=1e-6)


REFUSED = ["dp_svrg", "dp_svrg_pp", "noisy_sgd", "nsgd_moreau", "dp_lssgd", "rrpsgd", "dp_srm", "obj_pert",
           "obj_pert_svrg", "two_stage", "noisy_sfw_lp"]


@pytest.mark.parametrize("solver", REFUSED)
def test_solvers_without_a_secure_variant_refuse_it_before_the_data(solver):
    from skdp.solvers import SOLVERS

    est, X, y = _secure_case(solver)
    reason = SOLVERS[solver].secure_noise_refusal
    with pytest.raises(ValueError, match="no floating-point-safe variant") as info:
        est.fit(np.full_like(X, np.nan), y)  # refused before the data is read
    assert reason in str(info.value)
    # secure_noise=False is the default noise: accepted
    est.set_params(solver_options={**est.solver_options, "secure_noise": False}).fit(X, y)


def test_every_solver_is_secure_or_refuses():
    from skdp.solvers import SOLVERS

    assert set(SOLVERS) == set(SECURE) | set(REFUSED)
    assert all(("secure_noise" in s.option_keys) == (name in SECURE) for name, s in SOLVERS.items())


def test_secure_noise_value_is_checked():
    from skdp import DPLogisticRegression

    with pytest.raises(ValueError, match="True or False"):
        DPLogisticRegression(solver="dp_gd", classes=[0, 1], solver_options={"secure_noise": "yes"}).fit(None, None)


# ------------------------------------------------------------------------------------------
# the estimator-level route: the private bound selections follow solver_options["secure_noise"]
# ------------------------------------------------------------------------------------------
def _data(seed=0, n=300, d=4):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    return X, (X[:, 0] + 0.3 * rng.randn(n) > 0).astype(int)


@pytest.mark.parametrize("make", [
    lambda: __import__("skdp").DPLogisticRegression(1.0, classes=[0, 1], solver_options={"secure_noise": True}),
    lambda: __import__("skdp").DPRidge(1.0, solver_options={"secure_noise": True}),
    lambda: __import__("skdp").DPSparseLogisticRegression(1.0, n_nonzero_coefs=2, solver="noisy_iht", classes=[0, 1],
                                                          solver_options={"secure_noise": True}),
    lambda: __import__("skdp").DPSparseLinearRegression(1.0, n_nonzero_coefs=2, solver="dp_ight",
                                                        solver_options={"secure_noise": True}),
], ids=["auto-norm", "auto-norm-and-labels", "sparse-auto-clip", "sparse-auto-labels"])
def test_estimator_bound_selections_are_exact_with_secure_noise(make):
    X, y = _data()
    est = make().set_params(random_state=0)
    if not hasattr(est, "classes"):
        y = X @ np.array([1.0, -1.0, 0.0, 0.0]) + 0.1 * np.random.RandomState(1).randn(len(y))
    with record_draws() as draws:
        est.fit(X, y)
    kinds = [d.kind for d in draws]
    assert "exponential" in kinds  # at least one private bound was selected
    assert set(kinds) <= {"exponential", "discrete_gaussian"}, kinds
    selections = sum(e.count for e in est.privacy_events_ if isinstance(e, BoundedRangeEvent))
    assert kinds.count("exponential") == selections
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9


def test_private_quantile_secure_selection():
    from skdp.privacy.quantile import DEFAULT_NORM_GRID, private_quantile

    rng = np.random.RandomState(4)
    values = np.abs(rng.randn(2000)) * 3
    with record_draws() as draws:
        value, event = private_quantile(values, 0.5, 2.0, rng, secure=True)
    assert event == BoundedRangeEvent(2.0) and value in DEFAULT_NORM_GRID
    grid = secure_selection_grid(1.0)
    assert [d.kind for d in draws] == ["exponential"] and draws[0].scale == gumbel_scale(1.0 + grid, 2.0)
    assert 1.0 < value < 3.0  # the median of |N(0, 9)| is about 2.0


def test_label_set_selection_refuses_secure_noise():
    from skdp import DPLogisticRegression

    X, y = _data()
    with pytest.raises(ValueError, match="classes='auto' has no floating-point-safe variant"):
        DPLogisticRegression(1.0, data_norm=2.0, classes="auto", solver_options={"secure_noise": True}).fit(X, y)


def test_pure_output_pert_secure_noise_is_the_geometric_mechanism():
    """delta = 0: discrete Laplace on a grid, L1 sensitivity sqrt(d) Delta_T (+ the grid), pure epsilon-DP."""
    from skdp import DPRidge
    from skdp.privacy.discrete import secure_l1_grid

    rng = np.random.RandomState(0)
    X = rng.uniform(-0.5, 0.5, (300, 3))
    y = X @ np.array([1.0, -0.5, 0.0])
    kw = dict(epsilon=1.0, delta=0.0, solver="output_pert", data_norm=1.0, label_bound=1.0, fit_intercept=False,
              random_state=0)
    with record_draws() as draws:
        est = DPRidge(**kw, solver_options={"secure_noise": True}).fit(X, y)
    assert est.privacy_events_ == [PureDPEvent(1.0)] and est.privacy_spent_.delta == 0
    assert est.privacy_spent_.epsilon == pytest.approx(1.0)
    l1 = math.sqrt(3) * est.solver_info_["sensitivity"]
    g = secure_l1_grid(l1, 3)
    assert est.solver_info_["grid"] == g
    assert [d.kind for d in draws] == ["discrete_laplace"]
    assert draws[0].scale == pytest.approx((l1 + 3 * g) / 1.0, rel=1e-8) == est.noise_scale_
    np.testing.assert_array_equal(est.coef_ / g, np.rint(est.coef_ / g))


@pytest.mark.parametrize("solver", sorted(SECURE))
def test_event_level_audit_of_secure_fits(solver):
    """Each secure release paired with its event in neighbouring worlds (audit mode, replayed history):
    within its claim at full noise, above a claim with a quarter of the noise."""
    from skdp.audit import _event_cases, audit_events

    est, kw = _event_cases(2.0, 1e-5)[solver]
    est.set_params(solver_options={**(est.get_params().get("solver_options") or {}), "secure_noise": True})
    full = audit_events(est, n_fits=10, confidence=0.999, **kw)
    assert full.unpaired == 0 and full.passed, full
    assert {b.kind for b in full.bounds} >= {"selection" if k == "exponential" else "gaussian" for k in SECURE[solver]}
    quarter = audit_events(est, n_fits=10, confidence=0.999, noise_multiplier=0.25, **kw)
    assert not quarter.passed, quarter


def test_secure_draws_in_audit_mode_record_and_replay():
    from skdp.privacy.discrete import secure_gaussian_release

    value = np.array([0.3, -1.7])
    other = np.array([4.0, 8.0])
    plain = secure_gaussian_release(np.random.RandomState(5), value, 1.0, 0.5)[0]
    with record_draws(audit=True) as draws:
        out, _, _, gamma = secure_gaussian_release(np.random.RandomState(5), value, 1.0, 0.5)
        index = exponential_mechanism(np.random.RandomState(6), [0.0, 5.0, -np.inf], 1.0, 2.0**-10)
    np.testing.assert_array_equal(out, plain)  # auditing does not change the release
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(draws[0].audit["query"], np.rint(value / gamma) * gamma)  # the rounded value
    np.testing.assert_array_equal(draws[0].audit["released"], out)
    assert draws[1].audit["index"] == index and draws[1].audit["query"][1] == 5.0
    with record_draws(audit=True, replay=[{"released": other}, {"index": 0}]):
        replayed = secure_laplace_release(np.random.RandomState(5), value, 1.0, 1.0)[0]
        chosen = exponential_mechanism(np.random.RandomState(6), [0.0, 5.0], 1.0, 2.0**-10)
    np.testing.assert_array_equal(replayed, other)
    assert chosen == 0


def test_pure_selection_solver_stays_pure_with_secure_noise():
    """dp_fw_l1 at delta = 0: the exact selections are pure epsilon-DP too; the Gaussian solvers need delta > 0."""
    from skdp import DPSparseLinearRegression

    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (300, 6))
    y = 2 * X[:, 0] - X[:, 1]
    kw = dict(epsilon=1.0, delta=0.0, n_nonzero_coefs=2, label_bound=3.0, clip_norm=1.0, random_state=0,
              solver_options={"secure_noise": True})
    with record_draws() as draws:
        est = DPSparseLinearRegression(solver="dp_fw_l1", **kw).fit(X, y)
    assert est.privacy_spent_.delta == 0 and est.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert {d.kind for d in draws} == {"exponential"}
    with pytest.raises(ValueError, match="delta > 0"):
        DPSparseLinearRegression(solver="dpsl_kt", **kw).fit(X, y)


@pytest.mark.parametrize("make", [
    lambda **kw: DPLogisticRegression(1.0, classes=[0, 1], random_state=0, **kw),  # data_norm="auto"
    lambda **kw: DPRidge(1.0, data_norm=3.0, random_state=0, **kw),  # label_bound="auto"
    lambda **kw: DPSparseLinearRegression(1.0, n_nonzero_coefs=2, solver="dp_ight", clip_norm="auto",
                                          random_state=0, **kw),
], ids=["data_norm", "label_bound", "sparse"])
def test_private_bound_selections_are_exact_by_default(make):
    """Every 'auto' bound is drawn by the exact exponential mechanism unless secure_noise=False."""
    rng = np.random.RandomState(0)
    X = rng.randn(400, 4)
    y = X[:, 0] - X[:, 1] + 0.1 * rng.randn(400)
    target = (y > 0).astype(int) if "Logistic" in type(make()).__name__ else y
    for options, kind in [({}, "exponential"), ({"secure_noise": False}, "gumbel")]:
        with record_draws() as draws:
            est = make(solver_options=options).fit(X, target)
        selections = [d.kind for d in draws if d.kind in ("exponential", "gumbel")]
        n_bounds = sum(e.count for e in est.privacy_events_ if isinstance(e, BoundedRangeEvent))
        assert selections and set(selections) == {kind} and len(selections) == n_bounds, (options, selections)
