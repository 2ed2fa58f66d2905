"""skdp.audit: the statistics, the positive-control switch, and a reduced audit of every solver.

skdp.audit.audit_events: the recording point's audit mode, the statistics, and a reduced event-level audit
of every solver (full noise: within every claim; a quarter of the noise: above a claim).

The full table is ``benchmarks/audit_solvers.py``. The reduced audit runs each solver in its worst-case setting
(``skdp.audit._event_cases``) with 20 fit pairs (6 for ``two_stage``, whose fits are slower) at 99.9%
confidence per solver, so that 21 solvers at full noise stay within their claims together with probability
at least 0.979 if the code is right; the seeds are fixed, so the outcome is reproducible.
"""

import math
import threading

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.linear_model import LogisticRegression, Ridge

from skdp import DPLogisticRegression, DPRidge
from skdp.audit import (AuditResult, EventAuditResult, EventBound, _event_cases, _scale_upper, audit, audit_events,
                        audit_solvers, audit_solvers_events, epsilon_lower_bound, gdp_mu_for)
from skdp.privacy import calibrate_gaussian
from skdp.privacy.mechanisms import gaussian_noise, laplace_noise, record_draws, report_noisy_max, scaled_noise
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


CONFIDENCE = 0.999
FITS = {"two_stage": 6}


# ------------------------------------------------------------------------------------------
# the recording point in audit mode
# ------------------------------------------------------------------------------------------
def test_audit_mode_records_the_value_each_noise_is_added_to():
    q = np.array([1.0, 2.0, 3.0])
    with record_draws(audit=True) as draws:
        out = q + gaussian_noise(np.random.RandomState(0), 0.5, 3)
        scaled = 2.0 * gaussian_noise(np.random.RandomState(1), 0.5, 3)  # not added first: not paired
    plain = gaussian_noise(np.random.RandomState(0), 0.5, 3)
    np.testing.assert_array_equal(out, q + plain)  # the same draw and the same result as without auditing
    assert type(out) is np.ndarray and type(scaled) is np.ndarray  # the tracing does not spread
    first, second = draws
    np.testing.assert_array_equal(first.audit["query"], q)
    np.testing.assert_array_equal(first.audit["noise"], plain)
    np.testing.assert_array_equal(first.audit["released"], out)
    assert "query" not in second.audit and second.audit["noise"].shape == (3,)


def test_replay_returns_the_other_worlds_release_and_selection():
    other = np.array([10.0, 20.0])
    rng_a, rng_b = np.random.RandomState(3), np.random.RandomState(3)
    with record_draws(audit=True, replay=[{"released": other}, {"index": 2}, {"noise": [5.0]}]) as draws:
        released = np.array([1.0, 1.0]) + gaussian_noise(rng_a, 1.0, 2)
        index = report_noisy_max(rng_a, np.array([3.0, 0.0, 0.0]), 1e-6)
        fixed = laplace_noise(rng_a, 1.0, 1)
    np.testing.assert_array_equal(released, other)
    assert index == 2 and draws[1].audit["index"] == 2
    np.testing.assert_array_equal(draws[1].audit["query"], [3.0, 0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(fixed), [5.0])
    # the generator advanced exactly as without replay
    gaussian_noise(rng_b, 1.0, 2), report_noisy_max(rng_b, np.zeros(3), 1.0), laplace_noise(rng_b, 1.0, 1)
    assert rng_a.randint(10**9) == rng_b.randint(10**9)


def test_audit_mode_does_not_change_a_fit():
    X = np.random.RandomState(0).uniform(-0.5, 0.5, (60, 3))
    y = (X[:, 0] > 0).astype(int)
    est = DPLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=4, max_iter=4)
    ref = est.fit(X, y).coef_.copy()
    with record_draws(audit=True) as draws:
        got = est.fit(X, y).coef_
    np.testing.assert_array_equal(got, ref)
    assert draws and all("query" in d.audit for d in draws)


# ------------------------------------------------------------------------------------------
# statistics: the noise-scale upper bounds are valid and not vacuous
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["gaussian", "laplace", "l2_laplace", "gumbel"])
def test_scale_upper_bound_covers_the_true_scale(kind):
    rng = np.random.RandomState(0)
    draw = {"gaussian": lambda: rng.normal(0, 2.0, 5), "laplace": lambda: rng.laplace(0, 2.0, 5),
            "gumbel": lambda: rng.gumbel(0, 2.0, 5),
            "l2_laplace": lambda: np.asarray(_l2_laplace(rng, 2.0, 5))}[kind]
    level, misses, widths = 0.05, 0, []
    for _ in range(400):
        up = _scale_upper(kind, [draw() for _ in range(40)], level)
        misses += up < 2.0
        widths.append(up / 2.0)
    # the miss rate is at most the level (binomial slack), and the bound is informative
    assert misses <= 400 * level + 3 * math.sqrt(400 * level), misses
    assert np.median(widths) < 1.25


def _l2_laplace(rng, scale, d):
    from skdp.privacy.mechanisms import l2_laplace_noise

    return l2_laplace_noise(rng, scale, d)


# ------------------------------------------------------------------------------------------
# audit_events
# ------------------------------------------------------------------------------------------
def test_audit_events_reads_well_and_is_reproducible():
    est = DPRidge(epsilon=1.0, data_norm=1.0, label_bound=1.0, fit_intercept=False, max_iter=3, solver="dp_gd")
    r1, r2 = audit_events(est, n_fits=5, random_state=2), audit_events(est, n_fits=5, random_state=2)
    assert isinstance(r1, EventAuditResult) and r1.passed
    assert [b.empirical for b in r1.bounds] == [b.empirical for b in r2.bounds]
    (row,) = r1.bounds
    assert isinstance(row, EventBound) and row.kind == "gaussian" and row.measure == "mu" and row.releases == 3
    # the claim is the composed mu of the fit's events
    (event,) = est.fit(np.eye(2), [1.0, 0.0]).privacy_events_
    assert row.claimed == pytest.approx(math.sqrt(event.count) * event.sensitivity / event.sigma, rel=1e-12)
    text = repr(audit_events(est, n_fits=3, noise_multiplier=0.5))
    assert "POSITIVE CONTROL" in text and "gaussian" in text and "VIOLATES" in text


def test_half_the_noise_is_caught_where_the_canary_is_tight():
    # at full noise these reach at least 0.8 of their claim (benchmarks/audit_solvers.py), so half the noise
    # must exceed it
    for solver in ("dp_gd", "noisy_sgd", "dp_ight"):
        (r,) = audit_solvers_events(solvers=[solver], noise_multiplier=0.5, confidence=CONFIDENCE)
        assert not r.passed and r.ratio > 1.3, r


@pytest.mark.parametrize("kwargs, err, match", [
    ({"n_fits": 0}, ValueError, "n_fits"),
    ({"n_fits": 2.5}, TypeError, "n_fits"),
    ({"confidence": 1.0}, ValueError, "confidence"),
    ({"noise_multiplier": -1.0}, ValueError, "noise_multiplier"),
    ({"X": np.zeros((3, 2))}, ValueError, "y must be given"),
    ({"X": np.zeros((3, 2)), "y": np.zeros(4)}, ValueError, "one row per label"),
])
def test_audit_events_rejects_bad_parameters(kwargs, err, match):
    with pytest.raises(err, match=match):
        audit_events(DPRidge(label_bound=1.0, data_norm=1.0), **kwargs)


# ------------------------------------------------------------------------------------------
# reduced event-level audit of every solver
# ------------------------------------------------------------------------------------------
def test_every_solver_has_an_event_setting():
    assert set(_event_cases(2.0, 1e-5)) == set(SOLVERS)
    with pytest.raises(ValueError, match="No audit setting"):
        audit_solvers_events(solvers=["no_such_solver"])


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_event_audit_within_claim_and_quarter_noise_exceeds_it(solver):
    fits = FITS.get(solver, 20)
    (full,) = audit_solvers_events(2.0, 1e-5, n_fits=fits, solvers=[solver], confidence=CONFIDENCE)
    assert full.passed, full
    assert full.bounds and all(b.empirical >= 0 for b in full.bounds)
    (quarter,) = audit_solvers_events(2.0, 1e-5, n_fits=fits, solvers=[solver], noise_multiplier=0.25,
                                      confidence=CONFIDENCE)
    assert not quarter.passed, quarter
    # the bound that exceeds is of a kind the fit's events claim, and it is the same release kind at full noise
    kinds = {b.kind for b in quarter.bounds if b.exceeds}
    assert kinds <= {b.kind for b in full.bounds}


# ------------------------------------------------------------------------------------------
# beyond the solver registry: one-vs-rest objective perturbation, multi-party protocols
# ------------------------------------------------------------------------------------------
def test_one_vs_rest_objective_perturbation_within_each_class_event():
    # three classes: three objective perturbations, each priced ApproxDPEvent(eps/3, delta/3); the noises are
    # inverted jointly and each is compared with the share its own event pays for
    est = DPLogisticRegression(solver="obj_pert", classes=[0, 1, 2], data_norm=1.0, fit_intercept=False, alpha=1.0,
                               epsilon=2.0)
    X, y = np.zeros((40, 2)), np.arange(40) % 3
    full = audit_events(est, X, y, n_fits=20, canary_norm=1.0, confidence=CONFIDENCE)
    (row,) = full.bounds
    assert full.passed and row.kind == "objective" and row.releases == 3 and full.unpaired == 0, full
    quarter = audit_events(est, X, y, n_fits=20, canary_norm=1.0, confidence=CONFIDENCE, noise_multiplier=0.25)
    assert not quarter.passed, quarter


def test_multiparty_noise_is_calibrated_to_the_smallest_party():
    from skdp.distributed import MultiPartyDPLogisticRegression

    # unequal parties, the canary (the last row) in the smallest: its sensitivity is 2C / n_min
    est = MultiPartyDPLogisticRegression(classes=[0, 1], data_norm=1.0, fit_intercept=False, max_iter=3)
    X, y = np.zeros((40, 10)), np.arange(40) % 2
    parties = {"parties": np.r_[np.zeros(30), np.ones(11)]}
    full = audit_events(est, X, y, canary_norm=1.0, fit_params=parties, confidence=CONFIDENCE)
    assert full.passed and full.ratio > 0.6, full  # the canary nearly attains the claim
    half = audit_events(est, X, y, canary_norm=1.0, fit_params=parties, confidence=CONFIDENCE, noise_multiplier=0.5)
    assert not half.passed, half


def test_a_removed_clip_shows_in_the_shift(monkeypatch):
    """Where the clip binds, the canary's shift is at most the clipped sensitivity; without the clip it is not.

    The background pulls the coefficient of the canary's direction negative (rows ``0.25 e_0`` labelled
    ``-1``), so the canary ``(e_0, +1)``'s squared-loss gradient, against a zero row, grows past the clip
    norm ``K B = 1``: clipped it moves each step by less than ``2C / n``, unclipped by more."""
    from skdp.solvers import _base

    est = DPRidge(solver="dp_gd", epsilon=2.0, data_norm=1.0, label_bound=1.0, coef_norm=3.0, alpha=0.01,
                  fit_intercept=False, max_iter=10)
    Xb, yb = np.zeros((40, 10)), -np.ones(40)
    Xb[:, 0] = 0.25
    canary = np.eye(10)[:1]
    worlds = ((np.vstack([Xb, canary]), np.append(yb, 1.0)), (np.vstack([Xb, 0 * canary]), np.append(yb, 1.0)))
    assert audit_events(est, worlds=worlds, confidence=CONFIDENCE).passed
    monkeypatch.setattr(_base.Problem, "clip", property(lambda self: None))  # the bug: no per-example clip
    assert not audit_events(est, worlds=worlds, confidence=CONFIDENCE).passed
