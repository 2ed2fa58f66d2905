"""adassp: sufficient-statistics perturbation (Wang 2018, AdaSSP) for DPRidge."""

import math

import numpy as np
import pytest
from scipy import optimize, stats
from sklearn.linear_model import Ridge

from skdp import DPRidge, PrivacyBudget
from skdp.losses import SquaredLoss
from skdp.penalties import L2Penalty
from skdp.privacy import price
from skdp.solvers import Problem, PublicProblem, get_solver

from ._helpers import CLAIM, UNDER, canary_scores, canary_worlds, empirical_epsilon_lower_bound


def _mu_for(epsilon, delta):
    """Largest mu with mu-GDP => (epsilon, delta)-DP, from Dong-Roth-Su's delta(eps; mu), solved here."""
    def delta_of(mu):
        return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2)

    return optimize.brentq(lambda mu: delta_of(mu) - delta, 1e-6, 50.0, xtol=1e-13)


def _problem(n=500, p=4, K=2.0, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, p))
    X *= np.minimum(1.0, K / np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ rng.randn(p) / 3, -1, 1)
    return Problem(X=X, y=y, norms=np.linalg.norm(X, axis=1), loss=SquaredLoss(), penalty=L2Penalty(0.01),
                   data_norm=K, label_bound=1.0)


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (0.3, 1e-6), (4.0, 1e-4)])
def test_noise_scales_match_an_independent_gdp_computation(epsilon, delta):
    problem = _problem()
    solver = get_solver("adassp")
    events = solver.plan(problem, PrivacyBudget(epsilon, delta))
    K, B = 2.0, 1.0
    mu = _mu_for(epsilon, delta)
    # three releases of sensitivities K^2, sqrt(2) K^2, 2 K B, each mu / sqrt(3)-GDP
    for event, sens in zip(events, (K * K, math.sqrt(2) * K * K, 2 * K * B)):
        assert event.sensitivity == pytest.approx(sens, rel=1e-12)
        assert event.sigma == pytest.approx(sens * math.sqrt(3) / mu, rel=1e-6)
    assert price(events, delta).budget.epsilon == pytest.approx(epsilon, rel=1e-6)


def test_replace_one_sensitivities_are_sound_and_attained():
    rng = np.random.RandomState(1)
    K, B, p = 1.5, 2.0, 4
    worst = np.zeros(3)
    iu = np.triu_indices(p)
    for trial in range(4000):
        a, b = rng.randn(2, p)
        if trial % 2:  # orthogonal pairs
            b -= a * (a @ b) / (a @ a)
        a *= K / np.linalg.norm(a) * (1 if trial % 3 else rng.uniform())
        b *= K / np.linalg.norm(b)
        ya, yb = rng.uniform(-B, B, 2) if trial % 5 else (B, -B)
        if trial % 7 == 0:  # rows on disjoint axes attain the upper-triangle bound sqrt(2) K^2
            a, b = K * np.eye(p)[trial % p], K * np.eye(p)[(trial + 1) % p]
        if trial % 11 == 0:  # the same row with the opposite extreme label attains 2 K B
            b = a = a * K / np.linalg.norm(a)
            ya, yb = B, -B
        base = rng.uniform(-1, 1, (6, p))
        base *= np.minimum(1.0, K / np.linalg.norm(base, axis=1))[:, None]
        G = base.T @ base
        lam = np.linalg.eigvalsh(G + np.outer(a, a))[0] - np.linalg.eigvalsh(G + np.outer(b, b))[0]
        D = np.outer(a, a) - np.outer(b, b)
        worst = np.maximum(worst, [abs(lam), np.linalg.norm(D[iu]), np.linalg.norm(a * ya - b * yb)])
    sens = get_solver("adassp").sensitivities(PublicProblem(loss=SquaredLoss(), penalty=L2Penalty(0.0), data_norm=K,
                                                            label_bound=B, n_samples=10, n_features=p))
    assert np.all(worst <= np.array(sens) * (1 + 1e-12))
    assert worst[1] >= 0.999 * sens[1] and worst[2] >= 0.999 * sens[2]  # tight


def test_drawn_noise_has_the_planned_scale():
    """With X = 0 nothing but the noise reaches the released statistics: recover release 3 and check its std."""
    p, n = 30, 200
    problem = Problem(X=np.zeros((n, p)), y=np.zeros(n), norms=np.zeros(n), loss=SquaredLoss(),
                      penalty=L2Penalty(0.0), data_norm=1.0, label_bound=1.0,
                      options={"failure_probability": 0.5})
    solver = get_solver("adassp")
    budget = PrivacyBudget(1.0, 1e-5)
    planned = solver.plan(problem, budget)
    draws = []
    for seed in range(200):
        rng = np.random.RandomState(seed)
        res = solver.solve(problem, budget, rng)
        # replay the same generator: release 1 (1 draw), release 2 (p(p+1)/2 draws), release 3 (p draws)
        rng = np.random.RandomState(seed)
        rng.normal(size=1 + p * (p + 1) // 2)
        draws.append(rng.normal(size=p) * planned[2].sigma)
        assert res.events == planned
    draws = np.concatenate(draws) / planned[2].sigma
    assert abs(np.std(draws) - 1) < 0.03


def _adassp(seed, **kw):
    p = dict(epsilon=CLAIM, solver="adassp", data_norm=1.0, label_bound=(-1.5, 1.5), alpha=0.0,
             coef_norm=10.0, fit_intercept=False, random_state=seed)
    p.update(kw)
    return DPRidge(**p)


def test_empirical_epsilon_within_claim():
    s0, s1 = canary_scores(_adassp, canary_worlds("reg"))
    assert empirical_epsilon_lower_bound(s0, s1) <= CLAIM


def test_audit_detects_under_noised_adassp(under_noise):
    with under_noise(1 / UNDER):
        s0, s1 = canary_scores(_adassp, canary_worlds("reg"))
    assert empirical_epsilon_lower_bound(s0, s1) > CLAIM


def test_adassp_fit_is_priced_planned_and_accurate():
    rng = np.random.RandomState(0)
    n, d = 20000, 10
    X = rng.randn(n, d) / math.sqrt(d)
    y = X @ rng.randn(d) + 0.3 * rng.randn(n)
    est = DPRidge(epsilon=1.0, solver="adassp", data_norm=2.0, label_bound=(-5, 5), alpha=1e-6,
                  random_state=0).fit(X, y)
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6) and est.n_iter_ is None  # one release
    assert est.privacy_events_ == est.planned_events(n, d)
    ref = Ridge(alpha=1e-6 * n).fit(X, y)
    assert est.score(X, y) > ref.score(X, y) - 0.02
    with pytest.raises(ValueError, match="pure-epsilon"):
        DPRidge(delta=0.0, solver="adassp", data_norm=2.0, label_bound=(-5, 5)).fit(X, y)


@pytest.mark.parametrize("rho", [0.0, 1.5, "x", True])
def test_bad_failure_probability_is_refused_before_the_data(rho):
    with pytest.raises(ValueError, match="failure_probability"):
        DPRidge(solver="adassp", label_bound=1.0, solver_options={"failure_probability": rho}).fit(None, None)
