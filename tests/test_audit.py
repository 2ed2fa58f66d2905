"""skdp.audit: the statistics, the positive-control switch, and a reduced audit of every solver."""

import math
import threading

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.linear_model import LogisticRegression, Ridge

from skdp import DPLogisticRegression, DPRidge
from skdp.audit import AuditResult, audit, audit_solvers, epsilon_lower_bound, gdp_mu_for
from skdp.privacy import calibrate_gaussian
from skdp.privacy.mechanisms import gaussian_noise, report_noisy_max, scaled_noise
from skdp.solvers import SOLVERS


# ------------------------------------------------------------------------------------------
# statistics
# ------------------------------------------------------------------------------------------
def _gdp_epsilon(mu, delta):
    """Exact epsilon of mu-GDP at delta (bisection on the Dong-Roth-Su curve; independent of gdp_mu_for)."""
    lo, hi = 0.0, 50.0
    for _ in range(200):
        eps = (lo + hi) / 2
        d = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        lo, hi = (eps, hi) if d > delta else (lo, eps)
    return hi


def test_lower_bound_is_valid_and_has_power_on_gaussian_scores():
    rng = np.random.RandomState(0)
    mu, delta = 3.0, 1e-5
    true_eps = _gdp_epsilon(mu, delta)
    bounds = []
    for _ in range(20):
        s_in, s_out = rng.normal(mu, 1, 2000), rng.normal(0, 1, 2000)
        bounds.append(epsilon_lower_bound(s_in, s_out, delta)["epsilon"])
    assert max(bounds) <= true_eps  # valid (the 95% bound held in all 20 runs)
    assert min(bounds) > 1.5  # and informative
    same = [epsilon_lower_bound(rng.normal(0, 1, 2000), rng.normal(0, 1, 2000), delta)["epsilon"]
            for _ in range(20)]
    assert max(same) < 0.5


def test_threshold_search_matches_brute_force():
    from skdp.audit import _eps_from_rates, _test_at

    rng = np.random.RandomState(4)
    for _ in range(5):
        s_in = np.round(rng.normal(0.7, 1, 300), 1)  # rounding makes ties
        s_out = np.round(rng.normal(0, 1, 300), 1)
        got = epsilon_lower_bound(s_in, s_out, 1e-5)
        c_in, c_out = s_in[:150], s_out[:150]
        best = max(((t, sgn) for t in np.unique(np.r_[c_in, c_out]) for sgn in (1.0, -1.0)),
                   key=lambda c: _eps_from_rates(*_test_at(c[1] * c_in, c[1] * c_out, c[1] * c[0], 0.025)[:2], 1e-5))
        assert (got["threshold"], got["orientation"]) == (best[0], int(best[1]))


def test_fixed_threshold_uses_every_score_and_orientation():
    s_in, s_out = np.r_[np.ones(50), np.zeros(50)], np.zeros(100)
    out = epsilon_lower_bound(s_in, s_out, 0.0, threshold=0.5)
    assert out["n_eval"] == 100 and out["orientation"] == 1
    assert out["fpr"] == 0.0 and out["fnr"] == 0.5
    # the canary world scoring *lower* is found when the threshold is chosen on the data
    low = epsilon_lower_bound(-np.arange(200.0), np.arange(200.0) + 1, 0.0)
    assert low["orientation"] == -1 and low["epsilon"] > 2


def test_gdp_mu_matches_the_analytic_gaussian():
    # the analytic Gaussian mechanism calibrated to (eps, delta) with sensitivity 1 is exactly (1/sigma)-GDP
    for eps, delta in [(0.5, 1e-5), (1.0, 1e-6), (2.0, 1e-5), (4.0, 1e-3)]:
        sigma = calibrate_gaussian(1.0, eps, delta)
        assert gdp_mu_for(eps, delta) == pytest.approx(1 / sigma, rel=1e-4)
        assert _gdp_epsilon(gdp_mu_for(eps, delta), delta) == pytest.approx(eps, rel=1e-6)


# ------------------------------------------------------------------------------------------
# positive-control switch
# ------------------------------------------------------------------------------------------
def test_scaled_noise_scales_every_draw_and_restores():
    a = gaussian_noise(np.random.RandomState(1), 2.0, 5)
    with scaled_noise(0.25):
        b = gaussian_noise(np.random.RandomState(1), 2.0, 5)
    c = gaussian_noise(np.random.RandomState(1), 2.0, 5)
    np.testing.assert_allclose(b, a / 4)
    np.testing.assert_array_equal(a, c)
    with pytest.raises(RuntimeError), scaled_noise(0.5):
        raise RuntimeError("restored even on error")
    np.testing.assert_array_equal(gaussian_noise(np.random.RandomState(1), 2.0, 5), a)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="multiplier"), scaled_noise(bad):
            pass


def test_scaled_noise_is_per_thread():
    seen = {}

    def other():
        seen["other"] = gaussian_noise(np.random.RandomState(1), 1.0, 3)

    with scaled_noise(0.5):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        mine = gaussian_noise(np.random.RandomState(1), 1.0, 3)
    np.testing.assert_allclose(mine * 2, seen["other"])


def test_scaled_noise_reaches_selection_noise():
    # huge Gumbel noise picks uniformly; scaled to almost nothing it picks the maximum
    scores = np.array([0.0, 1.0, 0.0])
    with scaled_noise(1e-9):
        picks = {report_noisy_max(np.random.RandomState(s), scores, 100.0) for s in range(20)}
    assert picks == {1}


# ------------------------------------------------------------------------------------------
# audit()
# ------------------------------------------------------------------------------------------
def test_audit_flags_a_non_private_model_claiming_dp():
    # sklearn's Ridge is deterministic: the canary decides the score, the audit must say so
    r = audit(Ridge(alpha=1e-3), n_fits=100, claimed_epsilon=1.0, claimed_delta=1e-5, canary_norm=1.0)
    assert not r.passed and r.epsilon_lower_bound > 2
    r = audit(LogisticRegression(), n_fits=60, claimed_epsilon=0.5, claimed_delta=0.0)
    assert not r.passed


def test_audit_result_reads_well_and_is_reproducible():
    est = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], fit_intercept=False, max_iter=3)
    r1 = audit(est, n_fits=40, random_state=3)
    r2 = audit(est, n_fits=40, random_state=3, n_jobs=2)
    np.testing.assert_array_equal(r1.scores_in, r2.scores_in)
    assert isinstance(r1, AuditResult) and r1.passed
    text = repr(r1)
    assert "DPLogisticRegression(solver='auto')" in text and "empirical epsilon >=" in text
    assert "POSITIVE CONTROL" in repr(audit(est, n_fits=10, noise_multiplier=0.5))


def test_audit_plot():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    r = audit(DPRidge(epsilon=1.0, data_norm=1.0, label_bound=1.0, fit_intercept=False), n_fits=20)
    ax = r.plot()
    assert len(ax.patches) > 0


@pytest.mark.parametrize("kwargs, err, match", [
    ({"n_fits": 2}, ValueError, "n_fits"),
    ({"n_fits": 10.5}, TypeError, "n_fits"),
    ({"confidence": 1.0}, ValueError, "confidence"),
    ({"noise_multiplier": 0.0}, ValueError, "noise_multiplier"),
    ({"threshold": "high"}, TypeError, "threshold"),
    ({"canary_norm": -1.0}, ValueError, "canary_norm"),
    ({"claimed_epsilon": 0.0}, ValueError, "claimed_epsilon"),
])
def test_audit_rejects_bad_parameters(kwargs, err, match):
    with pytest.raises(err, match=match):
        audit(DPRidge(label_bound=1.0), **kwargs)


def test_audit_needs_a_claim_and_matching_data():
    with pytest.raises(TypeError, match="claimed_epsilon"):
        audit(Ridge())
    with pytest.raises(ValueError, match="y must be given"):
        audit(DPRidge(label_bound=1.0), X=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="one row per label"):
        audit(DPRidge(label_bound=1.0), X=np.zeros((3, 2)), y=np.zeros(4))


# ------------------------------------------------------------------------------------------
# reduced audit of every solver (the full one is benchmarks/audit_solvers.py)
# ------------------------------------------------------------------------------------------
def test_every_solver_has_an_audit_setting():
    from skdp.audit import _solver_cases

    assert set(_solver_cases(2.0, 1e-5)) == set(SOLVERS)
    with pytest.raises(ValueError, match="No audit setting"):
        audit_solvers(solvers=["no_such_solver"], n_fits=10)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_reduced_audit_within_claim(solver):
    (r,) = audit_solvers(2.0, 1e-5, n_fits=150, solvers=[solver])
    assert r.passed, r


# Gaussian mechanisms whose worst-case setting is tight: a quarter of the noise is four times the mu, which
# the mu-GDP bound exposes with 500 fits per world (the epsilon bound needs the benchmark's 2000)
GAUSSIAN_TIGHT = ["dp_accmd", "dp_gd", "dp_ight", "dpsl_kt", "noisy_sgd", "nsgd_moreau", "output_pert"]


@pytest.mark.parametrize("solver", GAUSSIAN_TIGHT)
def test_reduced_audit_flags_quarter_noise_gaussian(solver):
    (r,) = audit_solvers(2.0, 1e-5, n_fits=500, solvers=[solver], noise_multiplier=0.25)
    assert r.mu_lower_bound > r.claimed_mu, r


def test_reduced_audit_flags_quarter_noise_selection():
    # report-noisy-max (not Gaussian): the epsilon bound itself must exceed the claim
    (r,) = audit_solvers(2.0, 1e-5, n_fits=600, solvers=["dp_fw_l1"], noise_multiplier=0.25)
    assert r.epsilon_lower_bound > 2.0, r
