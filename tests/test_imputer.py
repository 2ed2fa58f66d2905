"""DPSimpleImputer: noise scales pinned to derivations written here, the joint release's sensitivity measured on
neighbouring datasets (one entry changed, or turned missing), a statistical attack with an under-noised control,
the free constant strategy, its plan, input handling and scikit-learn's estimator checks."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats
from sklearn.impute import SimpleImputer
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPOneHotEncoder, DPSimpleImputer, PrivacyLeakWarning, fit_diagnostics
from skdp.privacy import BoundedRangeEvent, GaussianEvent, LaplaceEvent, price
from skdp.privacy.mechanisms import record_draws


def _gdp_delta(eps, mu):
    """delta(eps) of mu-GDP (Dong, Roth, Su 2022, Cor. 2.13)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def _mu(eps, delta):
    return optimize.brentq(lambda m: _gdp_delta(eps, m) - delta, 1e-6, 50, xtol=1e-15, rtol=1e-14)


def _with_missing(n=2000, d=3, fraction=0.2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 10, size=(n, d))
    X[rng.uniform(size=X.shape) < fraction] = np.nan
    return X


# ------------------------------------------------------------------------------------------
# noise scales, from the derivations of the class docstring
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps, delta, d", [(1.0, 1e-5, 1), (1.0, 1e-5, 3), (0.3, 1e-6, 5)])
def test_mean_noise_scale_matches_the_gdp_derivation(eps, delta, d):
    # per column the sum of centred values moves by 1 (a value changes) or 1/2 with the observed count moving
    # by 1 (an entry turns missing): with the count scaled by k = sqrt(3)/2 both give at most 1, so the joint
    # vector has L2 sensitivity sqrt(d) and sigma = sqrt(d) / mu*(eps, delta)
    imp = DPSimpleImputer(epsilon=eps, delta=delta, bounds=(0, 10), random_state=0).fit(_with_missing(d=d))
    assert imp.noise_scale_ == pytest.approx(math.sqrt(d) / _mu(eps, delta), rel=1e-6)
    assert imp._count_factor() == pytest.approx(math.sqrt(3) / 2, rel=1e-12)
    assert imp.privacy_events_ == [GaussianEvent(math.sqrt(d), imp.noise_scale_)]
    assert imp.privacy_spent_.epsilon == pytest.approx(eps, rel=1e-6) and imp.privacy_spent_.epsilon <= eps
    # the plan is the release and depends on neither n nor the data
    assert imp.planned_events(10, d) == imp.planned_events(10**7, d) == imp.privacy_events_


def test_pure_mean_is_laplace_with_l1_sensitivity_d():
    # delta = 0: |dS| + k |dm| <= 1 per column with k = 1/2, so L1 sensitivity d and scale d / epsilon
    imp = DPSimpleImputer(epsilon=0.5, delta=0.0, bounds=(0, 10), random_state=0).fit(_with_missing(d=4))
    assert imp.noise_scale_ == pytest.approx(4 / 0.5, rel=1e-12)
    assert imp._count_factor() == pytest.approx(0.5, rel=1e-12)
    assert imp.privacy_events_ == [LaplaceEvent(4.0, 8.0)]
    assert imp.privacy_spent_.epsilon == pytest.approx(0.5, rel=1e-9)


@pytest.mark.parametrize("strategy, kwargs", [("median", {"bounds": (0, 10)}), ("median", {}),
                                              ("most_frequent", {"categories": [[1.0, 2.0]] * 3})])
def test_selections_split_the_budget_into_d_bounded_range_events(strategy, kwargs):
    X = _with_missing()
    if strategy == "most_frequent":
        X = np.where(np.isnan(X), np.nan, np.where(X > 3, 1.0, 2.0))
    imp = DPSimpleImputer(strategy, epsilon=1.0, delta=1e-5, random_state=0, **kwargs).fit(X)
    (event,) = imp.privacy_events_
    assert isinstance(event, BoundedRangeEvent) and event.count == 3
    # the largest eps0 with 3 selections priced within (1, 1e-5), independently: the price is increasing in eps0
    eps0 = optimize.brentq(lambda e: price([BoundedRangeEvent(e, 3)], 1e-5).budget.epsilon - 1.0, 1e-3, 1.0,
                           xtol=1e-12)
    assert event.epsilon == pytest.approx(eps0, rel=1e-4) and imp.privacy_spent_.epsilon <= 1.0 + 1e-12


def test_most_frequent_auto_is_the_encoders_selection():
    X = np.array([["a"]] * 600 + [["b"]] * 300 + [[None]] * 100, dtype=object)
    imp = DPSimpleImputer("most_frequent", random_state=0).fit(X)
    enc = DPOneHotEncoder(random_state=0).fit(X)
    assert imp.privacy_events_ == enc.privacy_events_ and imp.noise_scale_ == enc.noise_scale_
    assert imp.statistics_.tolist() == ["a"]
    assert imp.transform(X)[-1, 0] == "a"


# ------------------------------------------------------------------------------------------
# the joint release's sensitivity, measured on neighbours (the noiseless query of the draw)
# ------------------------------------------------------------------------------------------
def _query(X, **params):
    with record_draws(audit=True) as draws:
        DPSimpleImputer(bounds=(0, 1), random_state=0, **params).fit(X)
    (draw,) = draws
    return np.asarray(draw.audit["query"], dtype=float)


@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_the_joint_query_moves_by_its_sensitivity_for_every_kind_of_replacement(delta):
    """Replace-one neighbours: a value moves across the range, an observed value turns missing, a missing one turns
    observed, in 2 columns at once. The query (sums, then k times the observed counts) moves by at most sqrt(2) in
    L2 (at most 2 in L1 with delta = 0), the sensitivity its noise is priced for; the worst cases reach it."""
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 1, size=(50, 2))
    X[:5] = np.nan
    neighbours = {"value": [0.0, 0.0], "to_missing": [np.nan, np.nan], "mixed": [1.0, np.nan]}
    base = X.copy()
    base[10] = [1.0, 1.0]
    q = _query(base, delta=delta)
    norm = 2 if delta > 0 else 1
    moves = {}
    for name, row in neighbours.items():
        other = base.copy()
        other[10] = row
        moves[name] = np.linalg.norm(_query(other, delta=delta) - q, ord=norm)
    back = base.copy()
    back[0] = [0.0, 0.0]  # a missing row turns observed at the bottom of the range
    moves["to_observed"] = np.linalg.norm(_query(back, delta=delta) - q, ord=norm)
    bound = math.sqrt(2) if delta > 0 else 2.0
    assert max(moves.values()) <= bound * (1 + 1e-12), moves
    assert moves["value"] == pytest.approx(bound) and moves["to_missing"] == pytest.approx(bound), moves


# ------------------------------------------------------------------------------------------
# a statistical attack on neighbouring datasets, with an under-noised positive control
# ------------------------------------------------------------------------------------------
def _violates(hits_a, hits_b, n, eps, delta, alpha=1e-4):
    """True when P_A[S] > e^eps P_B[S] + delta at confidence 1 - 2 alpha (Clopper-Pearson bounds)."""
    low_a = stats.beta.ppf(alpha, hits_a, n - hits_a + 1) if hits_a else 0.0
    high_b = stats.beta.ppf(1 - alpha, hits_b + 1, n - hits_b) if hits_b < n else 1.0
    return low_a > math.exp(eps) * high_b + delta


def test_attack_on_the_released_mean(under_noise):
    """World A: 100 rows, one at the top of [0, 1], the others at 0, five missing. World B: that row is missing.
    The attacker says A when the imputed value exceeds 0.005. The guarantee bounds the event by e^eps P_B + delta;
    at 1/50 of the noise the same attack breaks it (positive control)."""
    X_a = np.zeros((100, 1))
    X_a[:5] = np.nan
    X_a[50] = 1.0
    X_b = X_a.copy()
    X_b[50] = np.nan

    def hits(X, fits, seed):
        return sum(DPSimpleImputer(bounds=(0, 1), random_state=s).fit(X).statistics_[0] > 0.005
                   for s in range(seed, seed + fits))

    n = 400
    a, b = hits(X_a, n, 0), hits(X_b, n, 10_000)
    assert not _violates(a, b, n, 1.0, 1e-5), (a, b)
    assert not _violates(n - a, n - b, n, 1.0, 1e-5), (a, b)
    with under_noise(1 / 50):
        a_low, b_low = hits(X_a, 60, 0), hits(X_b, 60, 10_000)
    assert _violates(a_low, b_low, 60, 1.0, 1e-5), (a_low, b_low)


# ------------------------------------------------------------------------------------------
# what is imputed
# ------------------------------------------------------------------------------------------
def test_statistics_are_close_to_sklearns_and_no_row_is_dropped():
    X = _with_missing(n=20000)
    for strategy, kwargs in [("mean", {"bounds": (0, 10)}), ("median", {"bounds": (0, 10)}), ("median", {})]:
        imp = DPSimpleImputer(strategy, random_state=0, **kwargs).fit(X)
        ref = SimpleImputer(strategy=strategy).fit(X)
        np.testing.assert_allclose(imp.statistics_, ref.statistics_, atol=0.15)
        out = imp.transform(X)
        assert out.shape == X.shape and not np.isnan(out).any()
        np.testing.assert_array_equal(out[~np.isnan(X)], X[~np.isnan(X)])
    assert fit_diagnostics(imp)["n_missing"].tolist() == np.isnan(X).sum(axis=0).tolist()
    assert not any("missing" in k for k in vars(imp))  # the exact counts stay off the model


def test_constant_is_free_and_equals_sklearn():
    X = np.array([["a", None], [np.nan, "b"], ["c", "d"]], dtype=object)
    imp = DPSimpleImputer("constant", fill_value="missing", add_indicator=True).fit(X)
    assert imp.planned_events(3, 2) == [] and imp.privacy_events_ == [] and imp.noise_source_ is None
    assert imp.privacy_spent_.epsilon == 0.0 and imp.privacy_spent_.delta == 0.0
    out = imp.transform(X)
    assert out[:, :2].tolist() == [["a", "missing"], ["missing", "b"], ["c", "d"]]
    assert out[:, 2:].astype(float).tolist() == [[0, 1], [1, 0], [0, 0]]
    numeric = DPSimpleImputer("constant").fit(np.array([[1.0, np.nan]]))
    assert numeric.transform([[np.nan, 2.0]]).tolist() == [[0.0, 2.0]]


def test_add_indicator_covers_every_column_and_names():
    X = pd.DataFrame({"a": [1.0, np.nan, 3.0] * 200, "b": [1.0, 2.0, 3.0] * 200})
    imp = DPSimpleImputer("median", bounds=(0, 4), add_indicator=True, random_state=0).fit(X)
    out = imp.transform(X)
    # an indicator for "b" too, although it has no missing value: which columns have some is not released
    assert out.shape == (600, 4) and out[:, 3].sum() == 0 and out[:, 2].sum() == 200
    assert imp.get_feature_names_out().tolist() == ["a", "b", "missingindicator_a", "missingindicator_b"]


def test_bounds_read_from_the_data_warn_and_void():
    with pytest.warns(PrivacyLeakWarning, match="bounds"):
        imp = DPSimpleImputer(bounds=None, random_state=0).fit(_with_missing())
    assert imp.privacy_spent_.epsilon == math.inf and imp.planned_events(10, 3) is None


def test_bad_parameters_are_refused_before_the_data_is_read():
    class Untouchable:
        shape = property(lambda self: pytest.fail("the data was read"))

    with pytest.raises(ValueError, match="bounds"):
        DPSimpleImputer("mean").fit(Untouchable())
    with pytest.raises(ValueError, match="epsilon"):
        DPSimpleImputer(epsilon=math.inf, bounds=(0, 1)).fit(Untouchable())
    with pytest.raises(ValueError, match="delta > 0"):
        DPSimpleImputer("most_frequent", delta=0.0).fit(Untouchable())
    with pytest.raises(InvalidParameterError, match="strategy"):
        DPSimpleImputer("mode").fit(Untouchable())
    with pytest.raises(ValueError, match="n_features"):
        DPSimpleImputer("median").planned_events(100)


def test_callers_arrays_are_not_modified():
    X = _with_missing()
    df = pd.DataFrame({"s": ["a", None, "b"] * 100, "x": [1.0, np.nan, 2.0] * 100})
    X_copy, df_copy = X.copy(), df.copy()
    DPSimpleImputer(bounds=(0, 10), random_state=0).fit(X).transform(X)
    DPSimpleImputer("most_frequent", categories=[["a", "b"], [1.0, 2.0]], random_state=0).fit(df).transform(df)
    np.testing.assert_array_equal(X, X_copy)
    pd.testing.assert_frame_equal(df, df_copy)


# ------------------------------------------------------------------------------------------
# scikit-learn's estimator checks: no expected failure
# ------------------------------------------------------------------------------------------
@parametrize_with_checks([DPSimpleImputer(bounds=(-10, 10), random_state=0),
                          DPSimpleImputer("median", random_state=0),
                          DPSimpleImputer("median", bounds=(-5, 5), add_indicator=True, random_state=0),
                          DPSimpleImputer("most_frequent", random_state=0),
                          DPSimpleImputer("constant", add_indicator=True)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="DPSimpleImputer", category=UserWarning)
        check(estimator)
