"""Missing values end to end: NaN through the DP scalers and encoder (ignored in fit, kept in transform, n
unchanged), the steps that learn nothing about the values are free, dropping rows breaks the public-n guarantee
while imputing keeps it, and the census-like acceptance (about 7% of rows with missing fields) under one budget."""

import math
import warnings

import numpy as np
import pytest
from sklearn.compose import make_column_transformer
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline, make_union
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skdp import (DPLogisticRegression, DPMinMaxScaler, DPOneHotEncoder, DPSimpleImputer, DPStandardScaler,
                  PrivacyLeakWarning, pipeline_privacy_spent, set_pipeline_budget)
from skdp.datasets import CENSUS_LIKE_BOUNDS, make_census_like
from skdp.model_selection import DPGridSearchCV
from skdp.privacy import price
from skdp.privacy.mechanisms import record_draws


def _nan_data(n=5000, d=3, fraction=0.2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 10, size=(n, d))
    X[rng.uniform(size=X.shape) < fraction] = np.nan
    return X


# ------------------------------------------------------------------------------------------
# NaN through the DP transformers, as scikit-learn's scalers do
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: DPStandardScaler(bounds=(0, 10), random_state=0),
                                  lambda: DPStandardScaler(random_state=0),
                                  lambda: DPMinMaxScaler(bounds=(0, 10), random_state=0),
                                  lambda: DPMinMaxScaler(random_state=0)])
def test_scalers_ignore_nan_in_fit_and_keep_it_in_transform(make):
    X = _nan_data(n=20000)
    sc = make().fit(X)
    out = sc.transform(X)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(X))
    assert math.isfinite(sc.privacy_spent_.epsilon) and sc.privacy_spent_.epsilon <= 1.0 + 1e-9
    if isinstance(sc, DPStandardScaler):  # the means and scales of the observed values, as sklearn's
        ref = StandardScaler().fit(X)
        np.testing.assert_allclose(sc.mean_, ref.mean_, atol=0.15)
        np.testing.assert_allclose(sc.scale_, ref.scale_, atol=0.15)
        # the observed counts are estimated (noisy, released), never the exact ones
        assert sc.n_samples_seen_.shape == (3,) and not np.array_equal(sc.n_samples_seen_, ref.n_samples_seen_)
        np.testing.assert_allclose(sc.n_samples_seen_, ref.n_samples_seen_, rtol=0.02)
    else:
        assert np.all(sc.data_min_ < 1.5) and np.all(sc.data_max_ > 8.5)


def test_standard_scaler_without_missing_values_reports_one_count():
    X = np.nan_to_num(_nan_data(fraction=0.0))
    sc = DPStandardScaler(bounds=(0, 10), random_state=0).fit(X)
    assert np.ndim(sc.n_samples_seen_) == 0 and sc.n_samples_seen_ == len(X)


def _mean_query(X):
    with record_draws(audit=True) as draws:
        sc = DPStandardScaler(bounds=(0, 1), random_state=0).fit(X)
    return np.asarray(draws[0].audit["query"], dtype=float), sc


def test_standard_scaler_joint_query_keeps_the_mean_release_sensitivity():
    """The mean release carries each column's missing fraction (times k = sqrt(3)/2) in the same draw. Under
    replace-one, a value moving across the range and an entry turning missing both move the joint query by at
    most sqrt(d)/n, the mean release's priced sensitivity, which the worst cases reach."""
    n, d = 40, 2
    base = np.full((n, d), 0.5)
    base[:4] = np.nan
    base[10] = [1.0, 1.0]
    q, sc = _mean_query(base)
    assert q.shape == (2 * d,)
    bound = sc.privacy_events_[0].sensitivity
    assert bound == pytest.approx(math.sqrt(d) / n)
    moves = {}
    for name, row in {"value": [0.0, 0.0], "to_missing": [np.nan, np.nan], "mixed": [0.0, np.nan]}.items():
        other = base.copy()
        other[10] = row
        moves[name] = np.linalg.norm(_mean_query(other)[0] - q)
    assert max(moves.values()) <= bound * (1 + 1e-12), (moves, bound)
    assert moves["value"] == pytest.approx(bound) and moves["to_missing"] == pytest.approx(bound)


def test_standard_scaler_refuses_nan_where_the_counts_do_not_ride_free():
    X = _nan_data(n=200)
    with pytest.raises(ValueError, match="clip_norm"):
        DPStandardScaler(bounds=(0, 10), clip_norm=1.0).fit(X)
    with pytest.raises(ValueError, match="sample_weight"):
        DPStandardScaler(bounds=(0, 10)).fit(X, sample_weight=np.ones(200))


def test_encoder_ignores_missing_values_and_encodes_them_as_zeros():
    X = np.array([["a"]] * 600 + [["b"]] * 300 + [[None]] * 50 + [[np.nan]] * 50, dtype=object)
    for handle_unknown in ("ignore", "infrequent_if_exist"):
        enc = DPOneHotEncoder(handle_unknown=handle_unknown, sparse_output=False, random_state=0).fit(X)
        assert [c.tolist() for c in enc.categories_] == [["a", "b"]]
        out = enc.transform(X)
        assert out.shape[0] == len(X) and np.all(out[-100:] == 0) and np.all(out[:900].sum(axis=1) == 1)


# ------------------------------------------------------------------------------------------
# steps that learn nothing about the values are free; learned imputation leaks
# ------------------------------------------------------------------------------------------
def _model():
    return DPLogisticRegression(data_norm=3.0, classes=[0, 1])


def _xy():
    X = _nan_data(n=600, d=2) / 10
    return X, (np.nan_to_num(X[:, 0], nan=0.5) > 0.5).astype(int)


@pytest.mark.parametrize("free", [SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True),
                                  "indicator"])
def test_steps_that_learn_nothing_about_the_values_are_free(free):
    X, y = _xy()
    if free == "indicator":
        first = make_union(SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True),
                           MissingIndicator(features="all"))
    else:
        first = free
    pipe = set_pipeline_budget(make_pipeline(first, _model()), 1.0, 1e-5, n_samples=len(X), n_features=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        pipe.fit(X, y)
        spent = pipeline_privacy_spent(pipe)
    assert spent.epsilon == pytest.approx(1.0, abs=1e-6) and spent.epsilon <= 1.0 + 1e-9


@pytest.mark.parametrize("leaky", [SimpleImputer(strategy="mean"),
                                   SimpleImputer(strategy="constant", fill_value=0.0),  # drops empty columns
                                   MissingIndicator()])  # learns which columns have missing values
def test_learned_imputation_leaks_and_is_named(leaky):
    X, y = _xy()
    free = SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True)
    pipe = make_pipeline(make_union(free, leaky), _model()).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match=type(leaky).__name__.lower()):
        assert pipeline_privacy_spent(pipe).epsilon == math.inf
    with pytest.raises(ValueError, match=type(leaky).__name__.lower()):
        set_pipeline_budget(make_pipeline(leaky, _model()), 1.0, 1e-5)


def test_dp_imputer_is_priced_in_the_pipeline_and_constant_takes_no_share():
    X, y = _xy()
    pipe = make_pipeline(DPSimpleImputer(bounds=(0, 1)), _model())
    set_pipeline_budget(pipe, 1.0, 1e-5, n_samples=len(X), n_features=2).fit(X, y)
    spent = pipeline_privacy_spent(pipe)
    events = pipe[0].privacy_events_ + pipe[1].privacy_events_
    assert spent.epsilon == pytest.approx(1.0, abs=1e-4) and spent.epsilon <= 1.0 + 1e-9
    assert price(events, 1e-5).budget.epsilon == pytest.approx(spent.epsilon, rel=1e-12)
    free = set_pipeline_budget(make_pipeline(DPSimpleImputer("constant"), _model()), 1.0, 1e-5,
                               n_samples=len(X), n_features=2)
    assert free[0].epsilon == 1.0 and free[1].epsilon == pytest.approx(1.0)  # no share for the free step


@pytest.mark.parametrize("add_indicator", [False, True])
def test_imputer_then_scaler_in_one_pipeline_spends_exactly_the_budget(add_indicator):
    """The imputer keeps every column (and adds one indicator per column): the planner knows the scaler's and the
    model's input width before the fit, so the split is exact, not the nominal share of a scaler whose price
    depends on its width (private bounds: one selection per column)."""
    X, y = _xy()
    pipe = make_pipeline(DPSimpleImputer(bounds=(0, 1), add_indicator=add_indicator, random_state=0),
                         DPStandardScaler(bounds="auto", random_state=1), _model())
    set_pipeline_budget(pipe, 1.0, 1e-5, n_samples=len(X), n_features=2).fit(X, y)
    assert pipe[-1].n_features_in_ == 2 * (1 + add_indicator)
    assert pipeline_privacy_spent(pipe).epsilon == pytest.approx(1.0, abs=1e-6)


# ------------------------------------------------------------------------------------------
# dropping rows breaks the public-n guarantee; imputing keeps it
# ------------------------------------------------------------------------------------------
def test_dropping_rows_makes_the_reported_guarantee_wrong_and_imputing_keeps_it():
    """Neighbours D and D' (replace-one): one complete row of D is replaced in D' by a row with a missing field.
    After dropping incomplete rows the two fits see n and n - 1 rows: every noise scale is calibrated to its own n,
    so the published noise_scale_ (and n_samples_seen_) tell D from D' with certainty, an infinite privacy loss,
    while each fit reports epsilon = 1. With the imputer in front, n is the same public number in both worlds and
    everything published that does not come from the noise is identical."""
    rng = np.random.RandomState(0)
    D = rng.uniform(0, 10, size=(500, 2))
    D_prime = D.copy()
    D_prime[7] = [3.0, np.nan]

    def dropped(X):
        return DPStandardScaler(bounds=(0, 10), random_state=0).fit(X[~np.isnan(X).any(axis=1)])

    a, b = dropped(D), dropped(D_prime)
    assert a.privacy_spent_.epsilon == b.privacy_spent_.epsilon == pytest.approx(1.0)
    assert a.n_samples_seen_ != b.n_samples_seen_
    assert not np.allclose(a.noise_scale_, b.noise_scale_)  # n is no longer public: the worlds are told apart

    def imputed(X):
        return make_pipeline(DPSimpleImputer(bounds=(0, 10), random_state=1),
                             DPStandardScaler(bounds=(0, 10), random_state=2)).fit(X)

    a, b = imputed(D), imputed(D_prime)
    for s, t in zip(a, b):
        assert s.privacy_events_ == t.privacy_events_
        np.testing.assert_array_equal(s.noise_scale_, t.noise_scale_)
    assert a[-1].n_samples_seen_ == b[-1].n_samples_seen_ == len(D)
    assert pipeline_privacy_spent(a) == pipeline_privacy_spent(b)


# ------------------------------------------------------------------------------------------
# the acceptance: census-like data with about 7% of rows with missing fields
# ------------------------------------------------------------------------------------------
EPSILON, DELTA = 1.0, 1e-6
N_TRAIN, N_TEST = 20000, 10000
NUM = list(CENSUS_LIKE_BOUNDS)


@pytest.fixture(scope="module")
def census():
    X, y = make_census_like(N_TRAIN + N_TEST, missing_fraction=0.07, random_state=0)
    cat = [c for c in X.columns if c not in NUM]
    share = X.isna().any(axis=1).mean()
    assert 0.06 < share < 0.08 and X[NUM].isna().any().all() and X[cat].isna().any().all()
    return X.iloc[:N_TRAIN], y.iloc[:N_TRAIN], X.iloc[N_TRAIN:], y.iloc[N_TRAIN:], cat


def _bounds():
    return (np.array([CENSUS_LIKE_BOUNDS[c][0] for c in NUM], dtype=float),
            np.array([CENSUS_LIKE_BOUNDS[c][1] for c in NUM], dtype=float))


def _dp_pipeline(cat):
    # imputation first, in a ColumnTransformer of its own; then scaling and encoding by position, so every DP
    # step's input width is public before the fit (the budget split is exact)
    impute = make_column_transformer((DPSimpleImputer("mean", bounds=_bounds()), NUM),
                                     (DPSimpleImputer("most_frequent"), cat))
    k = len(NUM)
    scale = make_column_transformer((DPStandardScaler(bounds=_bounds()), list(range(k))),
                                    (DPOneHotEncoder(), list(range(k, k + len(cat)))))
    return make_pipeline(impute, scale, DPLogisticRegression())


def _sklearn_pipeline(cat):
    return make_pipeline(make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="mean"), StandardScaler()), NUM),
        (make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), cat)),
        LogisticRegression(max_iter=1000))


def test_census_with_missing_fields_reports_its_budget_and_scores_like_sklearn(census):
    X, y, Xt, yt, cat = census
    reference = _sklearn_pipeline(cat).fit(X, y).score(Xt, yt)
    scores = []
    for _ in range(10):  # about 0.3 s per fit
        pipe = set_pipeline_budget(_dp_pipeline(cat), EPSILON, DELTA, n_samples=len(X), feature_names=list(X.columns))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no leak, clipping or selection warning
            pipe.fit(X, y)
        spent = pipeline_privacy_spent(pipe)
        steps = [t for ct in (pipe[0], pipe[1]) for t in ct.named_transformers_.values()
                 if hasattr(t, "privacy_events_")] + [pipe[-1]]
        assert len(steps) == 5 and all(s.privacy_events_ for s in steps)
        assert spent.delta == pytest.approx(DELTA, rel=1e-12)
        assert spent.epsilon <= EPSILON + 1e-9 and spent.epsilon == pytest.approx(EPSILON, abs=1e-4)
        assert price([ev for s in steps for ev in s.privacy_events_], DELTA).budget.epsilon == pytest.approx(
            spent.epsilon, rel=1e-12)
        scores.append(pipe.score(Xt, yt))
    assert abs(np.mean(scores) - reference) <= 0.01, (np.mean(scores), reference)


def test_search_over_the_imputing_pipeline_stays_within_its_budget(census):
    X, y, Xt, yt, cat = census
    search = DPGridSearchCV(_dp_pipeline(cat), {"dplogisticregression__alpha": [1e-4, 1e-2]}, epsilon=EPSILON,
                            delta=DELTA, cv=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, y)
    spent = search.privacy_spent_
    assert math.isfinite(spent.epsilon) and spent.epsilon <= EPSILON + 1e-9 and spent.delta <= DELTA
    assert search.score(Xt, yt) > 0.8
