"""Floating-point-safe noise for every mechanism: the discrete Laplace release, the exact exponential
mechanism, and the ``secure_noise`` option of the solvers (or its refusal)."""

import math

import numpy as np
import pytest
from scipy import stats

from skdp import DPLogisticRegression, DPRidge, DPSparseLinearRegression
from skdp.privacy import BoundedRangeEvent, PureDPEvent, gumbel_scale
from skdp.privacy.discrete import (
    exponential_mechanism,
    secure_l1_grid,
    secure_laplace_release,
    secure_selection_grid,
)
from skdp.privacy.mechanisms import record_draws


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
