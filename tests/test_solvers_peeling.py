"""noisy_iht: noisy iterative hard thresholding with private top-s peeling (Cai-Wang-Zhang 2021, Dwork-Su-Zhang).

Noise scales against independently computed numbers, the replace-one sensitivities by brute force on
adversarial neighbours, the zero-noise limit against non-private IHT, a canary test on neighbouring
datasets with its under-noised positive control, and the estimator path (priced = planned). The draw-level
check runs for every registered solver in ``test_draws.py``.
"""

import math
import numpy as np
import pytest
import scipy.sparse as sp

from skdp import DPSparseLinearRegression, DPSparseLogisticRegression, list_solvers
from skdp.losses import LogisticLoss, SquaredLoss
from skdp.penalties import hard_threshold
from skdp.privacy import BoundedRangeEvent, GaussianEvent, PrivacyBudget, price
from skdp.solvers import get_solver, public_view
from skdp.solvers.peeling import gradient_step, noisy_iht_sensitivities, peel
from skdp.solvers.sparse import PublicSparseProblem, SparseProblem, ight

from ._helpers import CLAIM, UNDER, empirical_epsilon_lower_bound

#: zCDP budget of (1, 1e-5) under the tight conversion, and per unit score / value sensitivity the Gumbel
#: scale and Gaussian std of (s, T) at a 1/2 : 1/2 split: beta = sqrt(T s / rho*), sigma = sqrt(T / rho*)
RHO_STAR = 0.03055660
VECTORS = [(5, 10, 40.451304, 18.090373), (10, 20, 80.902607, 25.583651), (20, 30, 140.127426, 31.333445)]


def _public_problem(s, T, share=None, free=None, n=1000, p=50, clip=2.0, eta=0.5, loss=SquaredLoss()):
    options = {} if share is None else {"selection_share": share}
    return PublicSparseProblem(loss=loss, n_nonzero=s, feature_bound=1.0, free=free, clip=clip, clip_order=np.inf,
                               learning_rate=eta, max_iter=T, options=options, n_samples=n, n_features=p)


@pytest.mark.parametrize("s, T, beta_unit, sigma_unit", VECTORS)
def test_noise_scales_match_the_published_test_vectors(s, T, beta_unit, sigma_unit):
    # n = 1000, eta = 0.5, G = 2: Delta_inf = 2 eta G / n = 0.002
    plan = get_solver("noisy_iht").make_plan(_public_problem(s, T, share=0.5), PrivacyBudget(1.0, 1e-5))
    d_inf = 0.002
    selection, values = plan.events
    assert plan.settings["gumbel_scale"] == pytest.approx(d_inf * beta_unit, rel=1e-4)
    assert plan.settings["sigma"] == pytest.approx(math.sqrt(s) * d_inf * sigma_unit, rel=1e-4)
    assert selection == BoundedRangeEvent(selection.epsilon, T * s)
    assert selection.epsilon == pytest.approx(2 * d_inf / plan.settings["gumbel_scale"], rel=1e-12)
    assert isinstance(values, GaussianEvent) and (values.sigma, values.count) == (plan.settings["sigma"], T)
    assert values.sensitivity == pytest.approx(math.sqrt(s) * d_inf, rel=1e-12)
    assert plan.noise_scale == plan.settings["sigma"]
    assert price(plan.events, 1e-5).budget.epsilon <= 1.0
    assert price(plan.events, 1e-5).budget.epsilon == pytest.approx(1.0, rel=1e-4)


@pytest.mark.parametrize("share", [0.75, 0.9])
def test_default_split_and_intercept_match_an_independent_computation(share):
    s, T, n, eta, G = 4, 12, 5000, 1.0, 0.7
    problem = _public_problem(s, T, share=None if share == 0.75 else share, free=30, n=n, p=31, clip=G, eta=eta)
    plan = get_solver("noisy_iht").make_plan(problem, PrivacyBudget(1.0, 1e-5))
    d_inf = 2 * eta * G / n
    d_2 = math.sqrt(s + 1) * d_inf  # the intercept is released every iteration, never selected
    assert plan.settings["gumbel_scale"] == pytest.approx(d_inf * math.sqrt(T * s / (2 * share * RHO_STAR)), rel=1e-4)
    assert plan.settings["sigma"] == pytest.approx(d_2 * math.sqrt(T / (2 * (1 - share) * RHO_STAR)), rel=1e-4)
    assert plan.events[1].sensitivity == pytest.approx(d_2, rel=1e-12)
    assert noisy_iht_sensitivities(n, G, eta, s + 1) == pytest.approx((d_inf, d_2), rel=1e-12)
    # more budget to the selections: less Gumbel noise, more Gaussian noise
    half = get_solver("noisy_iht").make_plan(_public_problem(s, T, share=0.5, free=30, n=n, p=31, clip=G, eta=eta),
                                             PrivacyBudget(1.0, 1e-5))
    assert plan.settings["gumbel_scale"] < half.settings["gumbel_scale"] and plan.noise_scale > half.noise_scale


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()], ids=["squared", "logistic"])
def test_replace_one_sensitivities_are_sound_and_attained(loss):
    """Brute force over adversarial neighbours: ||v - v'||_inf <= Delta_inf, the top-k L2 <= Delta_2,S."""
    rng = np.random.RandomState(0)
    n, p, K, G, eta, k = 6, 5, 1.0, 0.7, 0.8, 3
    d_inf, d_2 = noisy_iht_sensitivities(n, G, eta, k)
    worst_inf = worst_2 = 0.0
    for trial in range(600):
        X = rng.uniform(-K, K, (n, p))
        X[rng.rand(n, p) < 0.3] = K * rng.choice([-1, 1])
        y = rng.randn(n) * 50 if loss.name == "squared" else rng.choice([-1.0, 1.0], n)
        w = np.where(rng.rand(p) < 0.5, rng.randn(p) * 3, 0.0)
        X2, y2 = X.copy(), y.copy()
        if trial % 3 == 0:  # the extreme pair: opposite sign patterns, labels that saturate every clip
            X[0], X2[0] = K * np.ones(p), -K * np.ones(p)
            y[0] = y2[0] = 1e3 if loss.name == "squared" else 1.0
            w[:] = 0.0
        else:
            X2[0] = K * rng.choice([-1, 1], p)
            y2[0] = rng.randn() * 1e3 if loss.name == "squared" else -y[0]
        vs = []
        for Xa, ya in ((X, y), (X2, y2)):
            prob = SparseProblem(X=Xa, y=ya, loss=loss, n_nonzero=k, feature_bound=K, clip=G, clip_order=np.inf)
            vs.append(gradient_step(prob, w, eta))
        diff = np.abs(vs[0] - vs[1])
        worst_inf = max(worst_inf, diff.max())
        worst_2 = max(worst_2, np.linalg.norm(np.sort(diff)[-k:]))
    assert worst_inf <= d_inf * (1 + 1e-12) and worst_2 <= d_2 * (1 + 1e-12)
    assert worst_inf >= 0.999 * d_inf and worst_2 >= 0.999 * d_2  # tight: the test is not vacuous


def test_peeling_is_top_s_without_noise(under_noise):
    scores = np.array([0.1, 0.5, 0.45, 0.3, 0.9, 0.0])
    with under_noise(1e-12):
        chosen = peel(np.random.RandomState(0), scores, 3, 1.0)
    assert list(chosen) == [4, 1, 2]  # in order of the scores
    assert len(set(peel(np.random.RandomState(1), scores, 6, 10.0))) == 6  # never the same index twice


def test_zero_noise_is_non_private_iht(under_noise):
    """Noise scaled to ~0, a clip norm above every residual: the solver is IHT (Wang 2021, ch. 3, Alg. 3)."""
    rng = np.random.RandomState(3)
    n, d, s, T, eta = 300, 25, 3, 8, 0.9
    X = np.hstack([rng.uniform(-1, 1, (n, d)), np.ones((n, 1))])
    y = X[:, :d] @ np.r_[1.0, -2.0, 0.5, np.zeros(d - 3)] + 0.3 + 0.05 * rng.randn(n)
    problem = SparseProblem(X=X, y=y, loss=SquaredLoss(), n_nonzero=s, feature_bound=1.0, free=d, clip=100.0,
                            clip_order=np.inf, learning_rate=eta, max_iter=T, options={"momentum": False})
    with under_noise(1e-12):
        result = get_solver("noisy_iht").solve(problem, PrivacyBudget(1.0, 1e-5), rng)
    ref, _ = ight(lambda w: X.T @ (X @ w - y) / n, d + 1, s, eta, T, free=d)
    np.testing.assert_allclose(result.coef, ref, atol=1e-8)
    assert result.n_iter == T and np.count_nonzero(result.coef[:d]) == s
    # with momentum (the default): accelerated IHT, the gradient step at the FISTA extrapolation
    problem.options = {}
    with under_noise(1e-12):
        result = get_solver("noisy_iht").solve(problem, PrivacyBudget(1.0, 1e-5), rng)
    w = w_prev = np.zeros(d + 1)
    t_k = 1.0
    for _ in range(T):
        t_next = (1 + math.sqrt(1 + 4 * t_k**2)) / 2
        point = w + (t_k - 1) / t_next * (w - w_prev)
        w_prev, w, t_k = w, hard_threshold(point - eta * X.T @ (X @ point - y) / n, s, d), t_next
    np.testing.assert_allclose(result.coef, w, atol=1e-8)
    assert result.info["momentum"] and not np.allclose(w, ref, atol=1e-3)  # momentum changes the path


# -- statistical privacy test on replace-one neighbours, with its positive control -----------------------
def _canary_problems():
    """40 rows on features 0, 1 with small labels, and a boundary canary (0, 0, +-1) with label 1."""
    rng = np.random.RandomState(0)
    Xb = np.zeros((40, 3))
    Xb[:, :2] = rng.uniform(-0.5, 0.5, (40, 2))
    yb = 0.1 * (Xb[:, 0] - Xb[:, 1])
    return [SparseProblem(X=np.vstack([Xb, [[0.0, 0.0, sign]]]), y=np.append(yb, 1.0), loss=SquaredLoss(),
                          n_nonzero=1, feature_bound=1.0, clip=1.0, clip_order=np.inf, max_iter=3)
            for sign in (-1.0, 1.0)]


def _canary_scores(n_fits=300):
    """Coefficient 2 over seeded runs in each world: the canary moves it through the selection and the value."""
    solver = get_solver("noisy_iht")
    worlds = _canary_problems()
    public = public_view(worlds[0])  # n = 41, p = 3
    plan = solver.make_plan(public, PrivacyBudget(CLAIM, 1e-5))  # the data-free view plans for both worlds
    return [np.array([solver.run(prob, plan, np.random.RandomState(seed)).coef[2] for seed in range(n_fits)])
            for prob in worlds]


def test_empirical_epsilon_within_claim():
    s0, s1 = _canary_scores()
    assert empirical_epsilon_lower_bound(s0, s1) <= CLAIM


def test_canary_test_detects_an_under_noised_noisy_iht(under_noise):
    with under_noise(1 / UNDER):
        s0, s1 = _canary_scores()
    assert empirical_epsilon_lower_bound(s0, s1) > CLAIM


# -- estimators --------------------------------------------------------------------------------------------
def _sparse_design(n, d, s, seed=0):
    """Uniform features on [-1, 1], s coefficients +-1, noise 0.1."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, d))
    coef = np.zeros(d)
    coef[rng.choice(d, s, replace=False)] = rng.choice([-1.0, 1.0], s)
    return X, X @ coef + 0.1 * rng.randn(n), coef


def test_default_of_the_sparse_estimators_recovers_the_support_and_is_priced_as_planned():
    X, y, coef = _sparse_design(4000, 300, 5)
    est = DPSparseLinearRegression(epsilon=1.0, n_nonzero_coefs=5, random_state=0).fit(X, y)
    assert est.solver_ == "noisy_iht"
    # planned with a unit clip norm: every scale is proportional to the private clip norm, the price is the same
    assert price(est.planned_events(4000, 300), 1e-5).budget.epsilon == pytest.approx(est.privacy_spent_.epsilon,
                                                                                       rel=1e-9)
    # three private bound selections come first (the clip norm, the label median and its MAD: label_bound="auto",
    # 0.1 of epsilon between them); the basic split would give the solver (0.9, 1e-5); it is calibrated instead
    # so that the selections and its releases cost exactly (1, 1e-5): larger epsilons per release, never above
    assert [type(e) for e in est.privacy_events_[:3]] == [BoundedRangeEvent] * 3
    assert sum(e.epsilon for e in est.privacy_events_[:3]) == pytest.approx(0.1)
    basic = get_solver("noisy_iht").plan(
        PublicSparseProblem(loss=SquaredLoss(), n_nonzero=5, feature_bound=1.0, free=300, clip=est.clip_norm_,
                            clip_order=np.inf, n_samples=4000, n_features=301),
        PrivacyBudget(0.9, 1e-5))
    assert [type(e) for e in est.privacy_events_[3:]] == [type(e) for e in basic]
    assert est.privacy_events_[3].epsilon > basic[0].epsilon and est.privacy_events_[4].sigma < basic[1].sigma
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-5) and est.privacy_spent_.delta <= 1e-5
    assert set(est.support_) == set(np.flatnonzero(coef))
    assert np.linalg.norm(est.coef_ - coef) / np.linalg.norm(coef) < 0.3
    assert est.noise_scale_ == est.privacy_events_[-1].sigma
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.3, X, 0.0))  # CSR input takes the same path
    est = DPSparseLinearRegression(n_nonzero_coefs=5, solver="noisy_iht", random_state=0).fit(Xs, y)
    assert np.count_nonzero(est.coef_) <= 5 and np.isfinite(est.predict(Xs)).all()
    yc = (X @ coef + 0.5 * np.random.RandomState(1).logistic(size=4000) > 0).astype(int)
    clf = DPSparseLogisticRegression(epsilon=1.0, n_nonzero_coefs=5, classes=[0, 1], random_state=0).fit(X, yc)
    assert clf.solver_ == "noisy_iht" and clf.privacy_spent_.epsilon <= 1.0 + 1e-9
    assert len(set(clf.support_) & set(np.flatnonzero(coef))) >= 4
    assert [r["solver"] for r in list_solvers(DPSparseLinearRegression) if r["default"]] == ["noisy_iht"]


@pytest.mark.parametrize("options", [{"selection_share": v} for v in (0.0, 1.0, "half", True)]
                         + [{"momentum": v} for v in (1, "yes", None)])
def test_bad_options_are_refused_before_the_data(options):
    with pytest.raises(ValueError, match=next(iter(options))):
        DPSparseLinearRegression(solver="noisy_iht", solver_options=options).fit(None, None)


def test_audit_flags_quarter_noise():
    """skdp.audit's setting for noisy_iht is tight: a quarter of the noise is exposed by the mu-GDP bound."""
    from skdp.audit import audit_solvers

    (r,) = audit_solvers(2.0, 1e-5, n_fits=500, solvers=["noisy_iht"], noise_multiplier=0.25)
    assert r.mu_lower_bound > r.claimed_mu, r
