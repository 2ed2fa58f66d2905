"""The DP scalers (DPStandardScaler, DPMinMaxScaler, clip_norm): noise scales, budgets, sensitivities,
statistical privacy and their private default bounds.

The scalers' private default bounds (``bounds="auto"``): wide public grid, quantile scores, pricing, attacks.

Test vectors are those of the exponential-mechanism quantile over the public geometric
grid on [-1e12, 1e12] with relative step 1% (Smith 2011's quantile on a discrete
candidate set, bounded-range composition by Cesar-Rogers 2021).
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPLogisticRegression, PrivacyBudget, PrivacyLeakWarning
from skdp.audit import epsilon_lower_bound
from skdp.preprocessing import DPMinMaxScaler, DPStandardScaler, pipeline_privacy_spent, set_pipeline_budget
from skdp.privacy import BoundedRangeEvent, GaussianEvent, L2LaplaceEvent, calibrate_bounded_range, gdp_mu, price
from skdp.privacy.quantile import (WIDE_SIGNED_GRID, private_feature_ranges, quantile_scores, range_quantile_level,
                                   signed_geometric_grid)

from ._helpers import WEIGHT_EQUIVALENCE_CHECKS, empirical_epsilon_lower_bound
from .test_draws import _check, _fit_recorded


@parametrize_with_checks([DPStandardScaler(random_state=0), DPStandardScaler(bounds=(-10, 10), clip_norm="auto", random_state=0),
                          DPStandardScaler(clip_norm="auto", random_state=0), DPMinMaxScaler(random_state=0),
                          DPMinMaxScaler(bounds=(-10, 10), random_state=0)],
                         expected_failed_checks=lambda est: WEIGHT_EQUIVALENCE_CHECKS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_noise_scale_independent_and_budget():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 3, size=(1000, 4))
    sc = DPStandardScaler(epsilon=1.0, delta=1e-5, bounds=(-1, 3), random_state=0).fit(X)
    unit = 1 / gdp_mu(1.0, 1e-5)  # the two releases share mu*^2: 0.85 (means) and 0.15
    np.testing.assert_allclose(sc.noise_scale_, [2 / 1000 * unit / math.sqrt(0.85),
                                                 2 / (4 * 1000) * unit / math.sqrt(0.15)], rtol=1e-9)
    assert sc.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-9)
    sc0 = DPStandardScaler(epsilon=1.0, delta=0.0, bounds=(-1, 3), random_state=0).fit(X)
    assert sc0.privacy_spent_ == PrivacyBudget(1.0, 0.0)
    np.testing.assert_allclose(sc0.noise_scale_, [2 / 1000 / 0.85, 2 / 4000 / 0.15])
    # accuracy at a large n
    Xb = rng.uniform(-1, 3, size=(200000, 4))
    sc = DPStandardScaler(epsilon=1.0, bounds=(-1, 3), random_state=0).fit(Xb)
    np.testing.assert_allclose(sc.mean_, 1.0, atol=0.02)
    np.testing.assert_allclose(sc.scale_, 4 / math.sqrt(12), rtol=0.02)


def test_derived_bounds_warn_and_void():
    X = np.random.RandomState(0).randn(50, 2)
    with pytest.warns(PrivacyLeakWarning):
        sc = DPStandardScaler(bounds=None).fit(X)
    assert math.isinf(sc.privacy_spent_.epsilon)


def test_bad_bounds():
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="bounds"):
        DPStandardScaler(bounds=(1, 0)).fit(X)
    with pytest.raises(ValueError, match="bounds"):
        DPStandardScaler(bounds=(0, 1, 2)).fit(X)


def test_empirical_privacy_of_the_mean_release(under_noise):
    """One row moved from the lower to the upper bound; the released mean of the
    first feature must not separate the worlds beyond the claim (and does at 1/10 the noise)."""
    rng = np.random.RandomState(0)
    base = rng.uniform(0, 1, size=(30, 2))
    d0, d1 = base.copy(), base.copy()
    d0[0] = 0.0
    d1[0] = 1.0

    def scores():
        return [np.array([DPStandardScaler(1.0, bounds=(0, 1), random_state=k).fit(D).mean_[0] for k in range(600)])
                for D in (d0, d1)]

    assert empirical_epsilon_lower_bound(*scores()) <= 1.0
    with under_noise(0.1):  # the positive control the docstring promises
        assert empirical_epsilon_lower_bound(*scores()) > 1.0


def _brute_force_sensitivities(d, radius, rng):
    """Largest ||mean(u) - mean(u')|| and ||mean(u**2) - mean(u'**2)|| (times n) over candidate rows.

    Candidates: random rows of the box, sparse rows with coordinates at +-1/2,
    scaled axis and diagonal vectors, each clipped to the radius; every pair.
    Independent of the library's formula.
    """
    rows = [rng.uniform(-0.5, 0.5, size=(300, d)), np.diag(np.full(d, 0.5)), -np.diag(np.full(d, 0.5))]
    for k in range(1, d + 1):  # k coordinates at +-1/2, on disjoint or shared supports
        for start in range(0, d, max(1, k)):
            v = np.zeros(d)
            v[start:start + k] = 0.5
            rows += [v[None], -v[None]]
    diag = np.full((1, d), 0.5)
    rows += [diag, -diag, np.eye(d) * min(radius, 0.5), np.eye(d)[:1] * -min(radius, 0.5)]
    U = np.vstack(rows)
    norms = np.linalg.norm(U, axis=1)
    U = U * np.minimum(1.0, radius / np.maximum(norms, 1e-300))[:, None]
    diff_mean = np.linalg.norm(U[:, None, :] - U[None, :, :], axis=2).max()
    S = U**2
    diff_square = np.linalg.norm(S[:, None, :] - S[None, :, :], axis=2).max()
    return diff_mean, diff_square


@pytest.mark.parametrize("d", [1, 2, 5, 10])
@pytest.mark.parametrize("radius", [0.1, 0.3, 0.5, 0.8, 1.3, 5.0])
def test_clip_norm_sensitivities_are_sound_and_tight(d, radius):
    n = 7
    sens = DPStandardScaler._sensitivities(d, n, radius)
    brute = _brute_force_sensitivities(d, radius, np.random.RandomState(d))
    assert brute[0] <= sens[0] * n + 1e-12 and brute[1] <= sens[1] * n + 1e-12
    # the bound is attained whenever the box leaves room for two disjoint supports
    assert brute[0] == pytest.approx(sens[0] * n, rel=1e-9)
    if d >= 2 and (radius <= 0.5 or radius >= math.sqrt(d) / 2):
        assert brute[1] == pytest.approx(sens[1] * n, rel=1e-9)
    elif d >= 2:  # in between, up to the rounding of 4 c^2 coordinates at 1/2
        assert brute[1] >= 0.7 * sens[1] * n
    # never above the box bound of the unclipped scaler
    box = DPStandardScaler._sensitivities(d, n)
    assert sens[0] <= box[0] and sens[1] <= box[1]


def test_clip_norm_noise_scale_and_budget():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 3, size=(1000, 4))
    sc = DPStandardScaler(epsilon=1.0, bounds=(-1, 3), clip_norm=0.3, random_state=0).fit(X)
    unit = 1 / gdp_mu(1.0, 1e-5)
    np.testing.assert_allclose(sc.noise_scale_, [0.6 / 1000 * unit / math.sqrt(0.85),
                                                 math.sqrt(2) * 0.09 / 1000 * unit / math.sqrt(0.15)], rtol=1e-9)
    assert sc.clip_norm_ == 0.3
    assert sc.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-9)
    # a radius the box already enforces changes nothing
    big = DPStandardScaler(epsilon=1.0, bounds=(-1, 3), clip_norm=1.0, random_state=0).fit(X)
    box = DPStandardScaler(epsilon=1.0, bounds=(-1, 3), random_state=0).fit(X)
    assert big.clip_norm_ is None
    np.testing.assert_allclose(big.mean_, box.mean_)
    np.testing.assert_allclose(big.scale_, box.scale_)
    assert X.min() >= -1  # the caller's array is untouched (it was clipped internally)


def test_clip_norm_auto_prices_the_selection():
    rng = np.random.RandomState(1)
    X = rng.normal(0, 1, size=(500, 6))
    sc = DPStandardScaler(epsilon=0.8, bounds=(-6, 6), clip_norm="auto", random_state=0)
    planned = sc.planned_events(500, 6)
    sc.fit(X)
    assert isinstance(sc.privacy_events_[0], BoundedRangeEvent)
    assert sc.privacy_events_[0].epsilon == pytest.approx(0.2 * 0.8)
    assert sc.clip_norm_ in DPStandardScaler()._auto_grid(6)
    assert price(planned, 1e-5).budget.epsilon == pytest.approx(sc.privacy_spent_.epsilon, rel=1e-9)
    assert sc.privacy_spent_.epsilon <= 0.8 + 1e-12
    # the chosen radius is near the 0.75-quantile of ||u|| (n * eps0 = 80 here)
    U = (X - (-6)) / 12 - 0.5
    q75 = np.quantile(np.linalg.norm(U, axis=1), 0.75)
    assert q75 / 1.5 <= sc.clip_norm_ <= q75 * 1.5
    # the mean noise is smaller than the unclipped scaler's by the ratio of the sensitivities
    box = DPStandardScaler(epsilon=0.8, bounds=(-6, 6), random_state=0).fit(X)
    assert sc.noise_scale_[0] < 0.5 * box.noise_scale_[0]
    # pure DP: the selection and the L2-Laplace releases add up to epsilon
    sc0 = DPStandardScaler(epsilon=0.8, delta=0.0, bounds=(-6, 6), clip_norm="auto", random_state=0).fit(X)
    assert sc0.privacy_spent_ == PrivacyBudget(0.8, 0.0)


def test_clip_norm_empirical_privacy_and_positive_control(under_noise):
    """The canary moves from -c e_1 to +c e_1 (the worst pair for the mean of feature 0)."""
    from skdp.audit import epsilon_lower_bound

    c = 0.2
    base = np.full((30, 2), 0.5)
    d0, d1 = base.copy(), base.copy()
    d0[0, 0], d1[0, 0] = 0.5 - c, 0.5 + c

    def scores():
        return [np.array([DPStandardScaler(1.0, bounds=(0, 1), clip_norm=c, random_state=k).fit(D).mean_[0]
                          for k in range(600)]) for D in (d1, d0)]

    assert epsilon_lower_bound(*scores(), 1e-5)["epsilon"] <= 1.0
    with under_noise(0.1):
        assert epsilon_lower_bound(*scores(), 1e-5)["epsilon"] > 1.0


def test_clip_norm_helps_a_small_private_pipeline():
    """Diabetes-like regime (n = 309, d = 10, loose bounds): the clipped means are far less noisy."""
    rng = np.random.RandomState(0)
    X = rng.normal(0, 1, size=(309, 10))
    lo, hi = -4.0, 5.0  # 9 standard deviations wide, off-centre
    errs = {}
    for cn in (None, "auto"):
        errs[cn] = np.mean([np.abs(DPStandardScaler(0.5, bounds=(lo, hi), clip_norm=cn, random_state=k)
                                   .fit(X).mean_ - X.mean(axis=0)).mean() for k in range(20)])
    assert errs["auto"] < 0.6 * errs[None]


# ------------------------------------------------------------------------------------------
# DPMinMaxScaler
# ------------------------------------------------------------------------------------------
def test_minmax_selection_epsilon_is_the_largest_that_fits():
    X = np.random.RandomState(0).uniform(0, 1, size=(100, 3))
    for eps, delta in [(1.0, 1e-5), (0.5, 0.0)]:
        sc = DPMinMaxScaler(eps, delta, bounds=(0, 1), random_state=0).fit(X)
        eps0 = sc.selection_epsilon_
        # independent check: 6 bounded-range selections priced by the accountant
        assert price([BoundedRangeEvent(eps0, 6)], delta).budget.epsilon <= eps * (1 + 1e-9)
        assert price([BoundedRangeEvent(eps0 * 1.01, 6)], delta).budget.epsilon > eps
        assert sc.privacy_spent_.epsilon <= eps * (1 + 1e-9)
        assert sc.privacy_events_ == sc.planned_events(100, 3)
    # pure DP: basic composition, eps0 = eps / (2 d)
    assert DPMinMaxScaler(0.6, 0.0, bounds=(0, 1)).fit(X).selection_epsilon_ == pytest.approx(0.1, rel=1e-5)


def test_minmax_range_and_transform():
    rng = np.random.RandomState(0)
    X = rng.uniform(2, 6, size=(20000, 2))
    sc = DPMinMaxScaler(1.0, bounds=(0, 10), quantile=0.02, random_state=0).fit(X)
    # private 2% / 98% quantiles of U(2, 6) are 2.08 / 5.92, up to the public grid step 10/63
    np.testing.assert_allclose(sc.data_min_, 2.08, atol=0.17)
    np.testing.assert_allclose(sc.data_max_, 5.92, atol=0.17)
    Z = sc.transform(X * 3)  # far outside: clipped into the range
    assert Z.min() >= 0 and Z.max() <= 1
    Xc = np.clip(X[:5], sc.data_min_, sc.data_max_)
    np.testing.assert_allclose(sc.inverse_transform(sc.transform(X[:5])), Xc)
    sc2 = DPMinMaxScaler(1.0, bounds=(0, 10), feature_range=(-1, 1), random_state=0).fit(X)
    assert sc2.transform(X).min() >= -1 and sc2.transform(X).max() <= 1


def test_minmax_bad_parameters_and_derived_bounds():
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="feature_range"):
        DPMinMaxScaler(bounds=(0, 1), feature_range=(1, 0)).fit(X)
    with pytest.raises(ValueError, match="bounds"):
        DPMinMaxScaler(bounds=(1, 0)).fit(X)
    with pytest.raises(ValueError, match="bounds"):
        DPMinMaxScaler(bounds=([0, 0, 0], 1)).fit(X)
    with pytest.warns(PrivacyLeakWarning):
        sc = DPMinMaxScaler(bounds=None).fit(np.random.RandomState(0).randn(20, 2))
    assert math.isinf(sc.privacy_spent_.epsilon)


def test_minmax_empirical_privacy_and_positive_control(under_noise):
    """One row moved from the lower to the upper bound; the released upper quantile of feature 0."""
    from skdp.audit import epsilon_lower_bound

    rng = np.random.RandomState(0)
    base = rng.uniform(0.45, 0.55, size=(40, 1))  # the canary alone decides where the top quantile lies
    d0, d1 = base.copy(), base.copy()
    d0[0], d1[0] = 0.0, 1.0

    def scores():
        return [np.array([DPMinMaxScaler(1.0, bounds=(0, 1), quantile=0.02, n_grid=8, random_state=k)
                          .fit(D).data_max_[0] for k in range(300)]) for D in (d1, d0)]

    assert epsilon_lower_bound(*scores(), 1e-5)["epsilon"] <= 1.0
    with under_noise(0.05):
        assert epsilon_lower_bound(*scores(), 1e-5)["epsilon"] > 1.0


def test_minmax_in_a_pipeline_budget():
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 4, size=(400, 3))
    y = (X[:, 0] > 2).astype(int)
    pipe = make_pipeline(DPMinMaxScaler(bounds=(0, 4), random_state=0),
                         DPLogisticRegression(data_norm=math.sqrt(3), classes=[0, 1], random_state=1))
    set_pipeline_budget(pipe, 1.0, 1e-5, n_samples=400, n_features=3)
    pipe.fit(X, y)
    assert pipeline_privacy_spent(pipe, 1e-5).epsilon <= 1.0 + 1e-9
    assert pipe.score(X, y) > 0.8


def _quiet(fn, *args, **kwargs):
    """Run ``fn`` with the small-n UserWarning of bounds="auto" silenced (never PrivacyLeakWarning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", PrivacyLeakWarning)
        return fn(*args, **kwargs)


# ------------------------------------------------------------------------------------------
# the grid and the scores (deterministic test vectors)
# ------------------------------------------------------------------------------------------
def test_wide_grid_size_and_ends():
    g = WIDE_SIGNED_GRID
    assert g.size == 11111
    assert signed_geometric_grid(ratio=0.001).size == 110583
    assert np.all(np.diff(g) > 0)
    np.testing.assert_array_equal(g, -g[::-1])  # symmetric through 0
    assert g[g > 0].min() == 1e-12 and g.max() == 1e12 and g.min() == -1e12
    pos = g[g > 0]
    np.testing.assert_allclose(pos[1:-1] / pos[:-2], 1.01, rtol=1e-9)  # relative resolution 1%
    with pytest.raises(ValueError):
        signed_geometric_grid(1.0, 0.5)


def test_scores_match_the_test_vectors():
    x = np.arange(1000.0)
    u = quantile_scores(x, 0.5, WIDE_SIGNED_GRID)
    assert u.max() == -2.0
    (best,) = WIDE_SIGNED_GRID[u == u.max()]
    assert best == pytest.approx(497.728185, abs=1e-6)
    assert np.count_nonzero(u == -500) == 7639
    u = quantile_scores(x, 0.01, WIDE_SIGNED_GRID)
    top = WIDE_SIGNED_GRID[u == 0]
    assert top.size == 11 and top[0] == pytest.approx(9.025652, abs=1e-6) and top[-1] == pytest.approx(9.969935,
                                                                                                      abs=1e-6)
    u = quantile_scores(x, 0.99, WIDE_SIGNED_GRID)
    assert u.max() == -1.0 and WIDE_SIGNED_GRID[u == -1.0] == pytest.approx([988.933356], abs=1e-6)


def test_score_sensitivity_is_one_under_adversarial_replacements():
    """|u(c) - u'(c)| <= 1 at every candidate for any replaced row (n public), both signs, bound attained."""
    rng = np.random.RandomState(0)
    worst, signs = 0.0, set()
    specials = np.concatenate([WIDE_SIGNED_GRID[::997], [-1e13, 1e13, 0.0, -0.0, 1e-300, np.nextafter(1e-12, 1)]])
    for trial in range(300):
        n = int(rng.randint(1, 60))
        x = rng.standard_cauchy(n) * 10.0 ** rng.uniform(-12, 12, n)
        if trial % 3 == 0:  # rows exactly on grid points and beyond the grid
            x[: n // 2] = rng.choice(specials, n // 2)
        q = float(rng.choice([0.01, 0.25, 0.5, 0.75, rng.uniform(0.001, 0.999)]))
        i = rng.randint(n)
        x2 = x.copy()
        x2[i] = rng.choice([rng.standard_cauchy() * 1e6, rng.choice(specials), -x[i], x.max() * 2 + 1])
        du = quantile_scores(np.sort(x2), q, WIDE_SIGNED_GRID) - quantile_scores(np.sort(x), q, WIDE_SIGNED_GRID)
        worst = max(worst, np.abs(du).max())
        signs |= set(np.sign(du[du != 0]).astype(int).tolist())
    assert worst == pytest.approx(1.0, abs=1e-9)  # exactly 1 up to the rounding of q n
    assert signs == {-1, 1}  # u = -|L - qn| moves both ways: no monotone bonus


def test_quantile_level_rule_is_public():
    q, located = range_quantile_level(1000, 1.0)
    assert q == pytest.approx(2 * 2 * math.log(11111 / 0.05) / 1000) and located
    assert range_quantile_level(10**7, 1.0) == (0.01, True)
    q, located = range_quantile_level(398, 0.05)
    assert q == 0.25 and not located  # 0.25 * 398 < (2 / 0.05) ln(11111 / 0.05)


def test_private_feature_ranges_locate_the_quantiles_and_widen():
    rng = np.random.RandomState(0)
    n = 20000
    X = np.column_stack([rng.lognormal(0, 1, n) * 1e-3, -rng.lognormal(8, 0.5, n), rng.normal(0, 1, n),
                         np.full(n, 7.0)])
    Xc = X.copy()
    q = 0.05
    lo, hi, event = private_feature_ranges(X, q, 0.5, np.random.RandomState(1))
    np.testing.assert_array_equal(X, Xc)  # the caller's array is not modified
    assert event == BoundedRangeEvent(0.5, 8)
    assert np.all(np.isin(lo, WIDE_SIGNED_GRID)) and np.all(np.isin(hi, WIDE_SIGNED_GRID)) and np.all(lo < hi)
    for j in range(3):  # rank error within 1% of n (beta = 4: a few dozen ranks) at every scale
        assert abs(np.mean(X[:, j] < lo[j]) - q) < 0.01
        assert abs(np.mean(X[:, j] < hi[j]) - (1 - q)) < 0.01
    # a constant feature: low and high compete for the same point; the pair is widened around it
    assert lo[3] < 7.0 < hi[3] or lo[3] < hi[3]
    ties = private_feature_ranges(np.zeros((50, 2)), 0.25, 1e6, np.random.RandomState(0))
    assert np.all(ties[0] < ties[1])


# ------------------------------------------------------------------------------------------
# pricing: events, calibration, plan == release
# ------------------------------------------------------------------------------------------
def test_card_calibration_vectors():
    """k = 2d bounded-range selections at a total (epsilon, delta): the card's eps_BR (zCDP = RDP)."""
    for k, eps, delta, eps_br in [(20, 1.0, 1e-5, 0.110556), (10, 1.0, 1e-6, 0.139588), (60, 2.0, 1e-5, 0.120142)]:
        assert calibrate_bounded_range(k, eps, delta) == pytest.approx(eps_br, rel=2e-5)
    X = np.random.RandomState(0).normal(size=(3000, 10))
    sc = _quiet(DPMinMaxScaler().fit, X)  # the whole budget on 20 selections
    assert sc.selection_epsilon_ == pytest.approx(0.110556, rel=2e-5)
    assert sc.noise_scale_ == pytest.approx(18.090373, rel=2e-5)  # the Gumbel scale 2 / eps_BR


@pytest.mark.parametrize("delta", [1e-5, 0.0])
@pytest.mark.parametrize("clip_norm", [None, "auto"])
def test_standard_scaler_auto_prices_every_selection(delta, clip_norm):
    rng = np.random.RandomState(0)
    n, d, eps = 2000, 6, 0.8
    X = rng.lognormal(0, 1, size=(n, d)) * np.logspace(-3, 3, d)
    sc = DPStandardScaler(eps, delta, clip_norm=clip_norm, random_state=0)
    planned = sc.planned_events(n, d)
    sc = _quiet(sc.fit, X)
    k = 2 * d + (clip_norm == "auto")
    ev = sc.privacy_events_
    assert ev[0] == BoundedRangeEvent(sc.selection_epsilon_, 2 * d)
    assert sum(e.count for e in ev if isinstance(e, BoundedRangeEvent)) == k
    release = GaussianEvent if delta else L2LaplaceEvent
    assert [type(e) for e in ev[-2:]] == [release, release]
    # the selections alone cost bound_budget_fraction * epsilon, the largest eps0 that does
    f = 0.7  # bound_budget_fraction="auto" with bounds="auto"
    sel = [BoundedRangeEvent(sc.selection_epsilon_, k)]
    assert price(sel, delta).budget.epsilon <= f * eps * (1 + 1e-9)
    assert price([BoundedRangeEvent(sc.selection_epsilon_ * 1.001, k)], delta).budget.epsilon > f * eps
    # the whole fit costs what was asked: never more, and not less (the releases are calibrated to fill it)
    assert sc.privacy_spent_.epsilon <= eps * (1 + 1e-12)
    assert sc.privacy_spent_.epsilon >= eps * (1 - 1e-4)
    assert price(planned, delta).budget.epsilon == pytest.approx(sc.privacy_spent_.epsilon, rel=1e-9)
    if clip_norm is None:
        assert planned == ev
    # the bounds are released: grid points, lower < upper
    lo, hi = sc.bounds_
    assert np.all(np.isin(lo, WIDE_SIGNED_GRID)) and np.all(lo < hi)
    assert 0 < sc.quantile_ < 0.5


def test_auto_beats_no_bound_and_tracks_scale():
    """Large n: the private bounds bracket the bulk of each feature, at scales 1e-3 .. 1e3 and negative."""
    rng = np.random.RandomState(1)
    n = 50000
    X = np.column_stack([rng.normal(5e-3, 1e-3, n), rng.normal(-2e3, 300, n), rng.uniform(0, 1, n)])
    sc = _quiet(DPStandardScaler(random_state=0).fit, X)
    np.testing.assert_allclose(sc.mean_, X.mean(axis=0), rtol=0.02)
    # clipped at the private q-quantiles (q about 0.02 here): the scale is within 15% of the std
    np.testing.assert_allclose(sc.scale_, X.std(axis=0), rtol=0.15)
    Z = sc.transform(X)
    assert np.all(np.isfinite(Z)) and np.abs(Z.mean(axis=0)).max() < 0.05


def test_planning_needs_n_features_and_bad_bounds():
    with pytest.raises(ValueError, match="n_features"):
        DPStandardScaler().planned_events(100)
    with pytest.raises(ValueError, match="n_features"):
        DPMinMaxScaler().planned_events(100)
    with pytest.raises(ValueError, match="bounds"):
        DPStandardScaler(bounds="data").fit(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="bounds"):
        DPMinMaxScaler(bounds="data").fit(np.zeros((5, 2)))


def test_small_n_warns_publicly_but_not_a_leak():
    X = np.random.RandomState(0).normal(size=(100, 5))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPStandardScaler(random_state=0).fit(X)
    assert any("too few" in str(m.message) and m.filename == __file__ for m in w)  # points at this fit call
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # many rows: no warning at all
        DPStandardScaler(random_state=0, delta=1e-7).fit(np.random.RandomState(0).normal(size=(40000, 2)))


# ------------------------------------------------------------------------------------------
# defaults: private, finite, within budget; the draws are what was priced
# ------------------------------------------------------------------------------------------
def test_defaults_fit_without_privacy_leak_warning():
    rng = np.random.RandomState(0)
    X = rng.lognormal(2, 1, size=(600, 4))
    y = (X[:, 0] > np.median(X[:, 0])).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        for est in (DPStandardScaler(), DPMinMaxScaler(), DPStandardScaler(clip_norm="auto")):
            est.fit(X)
            assert math.isfinite(est.privacy_spent_.epsilon)
            assert est.privacy_spent_ <= PrivacyBudget(est.epsilon, est.delta)
        pipe = make_pipeline(DPStandardScaler(), DPLogisticRegression())
        set_pipeline_budget(pipe, 1.0, 1e-5, n_samples=600, n_features=4).fit(X, y)
        spent = pipeline_privacy_spent(pipe)
        assert math.isfinite(spent.epsilon) and spent.epsilon <= 1.0 + 1e-9
        pipe = make_pipeline(DPMinMaxScaler(), DPLogisticRegression()).fit(X, y)
        assert pipeline_privacy_spent(pipe).epsilon <= 2.0 + 1e-9


def test_fitted_attributes_are_all_released_quantities():
    """No data-derived quantity other than the private releases sits on the fitted scaler."""
    X = np.random.RandomState(0).normal(size=(300, 3))
    allowed = {
        DPStandardScaler: {"n_features_in_", "bounds_", "quantile_", "selection_epsilon_", "clip_norm_", "mean_",
                           "var_", "scale_", "privacy_events_", "accountant_", "privacy_nominal_", "privacy_spent_",
                           "noise_scale_", "noise_source_", "n_samples_seen_"},
        DPMinMaxScaler: {"n_features_in_", "bounds_", "quantile_", "selection_epsilon_", "data_min_", "data_max_",
                         "data_range_", "scale_", "min_", "privacy_events_", "accountant_", "privacy_nominal_",
                         "privacy_spent_", "noise_scale_", "noise_source_", "n_samples_seen_"},
    }
    for cls, names in allowed.items():
        est = _quiet(cls(random_state=0).fit, X)
        fitted = {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
        assert fitted <= names, fitted - names
        assert est.n_samples_seen_ == 300  # the public n (with sample_weight: the scaler's private total)


@pytest.mark.parametrize("make", [lambda: DPStandardScaler(random_state=0),
                                  lambda: DPStandardScaler(clip_norm="auto", random_state=0),
                                  lambda: DPMinMaxScaler(random_state=0)],
                         ids=["std-auto", "std-auto-clip", "minmax-auto"])
def test_default_scalers_draw_what_they_price(make):
    X = np.random.RandomState(0).uniform(-1, 1, (300, 4))
    est, draws = _quiet(_fit_recorded, make(), X, None)
    _check(est, draws)
    # the 2 d per-feature selections ran, by Gumbel draws (exact ones over the wide grid cost ~2 ms each)
    assert sum(1 for dr in draws if dr.kind == "gumbel") >= 8
    assert math.isfinite(est.privacy_spent_.epsilon)


# ------------------------------------------------------------------------------------------
# attacks on the released bounds, with under-noised positive controls
# ------------------------------------------------------------------------------------------
def _canary_worlds():
    """40 rows: 29 at 0.5 and 10 at 2.0, plus one canary at 0.0 or at 1.0.

    The upper selection (level 0.75, the cap at this n) scores 0 on (0.5, 2] with the
    canary at 0, but -1 on (0.5, 1] with the canary at 1: the released upper bound of
    the canary-at-0 world lies in (0.5, 1] more often.
    """
    base = np.concatenate([np.full(29, 0.5), np.full(10, 2.0)])
    return np.append(base, 0.0)[:, None], np.append(base, 1.0)[:, None]


@pytest.mark.parametrize("cls", [DPStandardScaler, DPMinMaxScaler])
def test_released_bounds_empirical_privacy_and_positive_control(cls, under_noise):
    d_in, d_out = _canary_worlds()

    def scores():
        return [-np.array([_quiet(cls(1.0, 1e-5, random_state=k).fit, D).bounds_[1][0] for k in range(600)])
                for D in (d_in, d_out)]

    assert epsilon_lower_bound(*scores(), 1e-5)["epsilon"] <= 1.0
    with under_noise(0.02):  # the same mechanism with 1/50 of the Gumbel noise is caught
        assert epsilon_lower_bound(*scores(), 1e-5)["epsilon"] > 1.0


@pytest.mark.parametrize("values,probs", [((-1.0, 1.0), (0.5, 0.5)), ((0.0, 1.0), (0.6, 0.4)),
                                          ((0.0, 1.0, 2.0), (1 / 3, 1 / 3, 1 / 3))])
def test_auto_bounds_keep_binary_and_few_valued_features(values, probs):
    """bounds="auto" on a binary or three-valued column (n = 1000, epsilon = 1, next to a Gaussian one):
    the score -|L(c) - q n| tied the thousands of empty grid cells below the data and between the values
    with the right answer, and the low bound landed anywhere in [-1e12, 0] (scale_ 1e2 to 1e9 times the
    std, measured before the cell score); with cell_scores every seed's scale_ is within a factor 2.5."""
    rng = np.random.RandomState(0)
    n = 1000
    col = rng.choice(values, size=n, p=probs)
    X = np.column_stack([col, rng.randn(n)])
    ratios = [DPStandardScaler(epsilon=1.0, random_state=s).fit(X).scale_[0] / col.std() for s in range(10)]
    assert 0.6 <= np.median(ratios) <= 1.5, ratios
    assert 0.4 <= min(ratios) and max(ratios) <= 2.5, ratios


def test_cell_scores_replace_one_sensitivity_one():
    """cell_scores moves by at most 1 at every candidate when one row is replaced (n public), on few-valued
    data where ties are many, and scores 0 on the cell holding the quantile."""
    from skdp.privacy.quantile import cell_scores, grid_counts
    rng = np.random.RandomState(1)
    grid = np.linspace(-3, 3, 61)
    for _ in range(200):
        x = rng.choice([-1.0, 0.0, 1.0, 2.5], size=50)
        x2 = x.copy()
        x2[rng.randint(50)] = rng.choice([-5.0, -1.0, 0.0, 0.05, 1.0, 7.0])
        for level in (0.1, 0.25, 0.75):
            a = cell_scores(grid_counts(x, grid, side="left"), 50, level)
            b = cell_scores(grid_counts(x2, grid, side="left"), 50, level)
            assert np.max(np.abs(a - b)) <= 1.0 + 1e-12
            assert a.max() == 0.0
