"""DPStandardScaler and the budget of pipelines of DP steps."""

import math

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPLogisticRegression, PrivacyBudget, PrivacyLeakWarning, PrivacyLedger
from skdp.privacy import BoundedRangeEvent, gdp_mu, price
from skdp.preprocessing import DPMinMaxScaler, DPStandardScaler, pipeline_privacy_spent, set_pipeline_budget

from ._helpers import WEIGHT_EQUIVALENCE_CHECKS, empirical_epsilon_lower_bound


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


@pytest.mark.parametrize("dataset", ["breast_cancer", "diabetes"])
def test_private_pipeline_utility_at_a_total_epsilon_of_one(dataset):
    """Issue 9's acceptance: one total budget (1, 1e-5), no bound read in the clear, 20 seeds.

    Public feature bounds stand in for domain knowledge: the published min/max
    widened by 10% of the range (as in benchmarks/bench_private_preprocessing.py).
    """
    import warnings

    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.model_selection import train_test_split

    from skdp import DPRidge

    classify = dataset == "breast_cancer"
    X, y = (load_breast_cancer if classify else load_diabetes)(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y if classify else None)
    lo, hi = X.min(axis=0), X.max(axis=0)
    lo, hi = lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo)
    scores = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        for seed in range(20):
            model = (DPLogisticRegression(data_norm="auto", classes=[0, 1], random_state=seed) if classify
                     else DPRidge(data_norm="auto", label_bound=(0, 400), random_state=seed))
            pipe = make_pipeline(DPStandardScaler(bounds=(lo, hi), clip_norm="auto", random_state=1000 + seed), model)
            set_pipeline_budget(pipe, 1.0, 1e-5, n_samples=len(ytr), n_features=X.shape[1]).fit(Xtr, ytr)
            assert pipeline_privacy_spent(pipe, 1e-5) <= PrivacyBudget(1.0, 1e-5)
            scores.append(pipe.score(Xte, yte))
    assert np.mean(scores) >= (0.90 if classify else 0.15)


def test_pipeline_budget_helpers():
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 4, size=(400, 3))
    y = (X[:, 0] > 2).astype(int)
    pipe = make_pipeline(DPStandardScaler(bounds=(0, 4), random_state=0),
                         DPLogisticRegression(data_norm="auto", classes=[0, 1], random_state=1))
    set_pipeline_budget(pipe, 1.0, 1e-5)
    assert pipe[0].epsilon == pipe[1].epsilon == 0.5
    pipe.fit(X, y)
    spent = pipeline_privacy_spent(pipe)
    assert spent <= PrivacyBudget(1.0, 1e-5)
    # the accountant-aware split uses the budget fully
    set_pipeline_budget(pipe, 1.0, 1e-5, weights=[1, 2], n_samples=400, n_features=3)
    assert pipe[1].epsilon == pytest.approx(2 * pipe[0].epsilon)
    ledger = PrivacyLedger(1.0, 1e-5)
    pipe.fit(X, y, dpstandardscaler__privacy_ledger=ledger, dplogisticregression__privacy_ledger=ledger)
    assert ledger.n_fits == 2 and ledger.spent().epsilon <= 1.0
    assert pipeline_privacy_spent(pipe).epsilon == pytest.approx(ledger.spent().epsilon, rel=1e-9)
    assert ledger.spent().epsilon >= 0.99
    assert price([ev for s in pipe for ev in s.privacy_events_], 1e-5).budget.epsilon == pytest.approx(
        pipeline_privacy_spent(pipe, delta=1e-5).epsilon, rel=1e-12)


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
