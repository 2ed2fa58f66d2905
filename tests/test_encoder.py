"""DPOneHotEncoder: the private category selection (noise and threshold pinned, statistical attacks on
neighbouring datasets with positive controls), the free public-categories path against sklearn's
OneHotEncoder, the output formats and sklearn's estimator checks."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, sparse, stats
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPOneHotEncoder, PrivacyLedger
from skdp.privacy.mechanisms import scaled_noise


# ------------------------------------------------------------------------------------------
# the noise scale and threshold, from the Gaussian-DP formula derived here
# ------------------------------------------------------------------------------------------
def _gdp_delta(eps, mu):
    """delta(eps) of mu-GDP (Dong, Roth, Su 2022, Cor. 2.13)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def _expected_plan(eps, delta, d):
    """sigma and tau of the documented selection, derived independently of skdp's calibration.

    Per column a category carried by one row is kept with probability delta_c = 0.4 delta / d
    (the documented threshold share); the d columns' count vectors move by sqrt(2 d) in L2 under
    replace-one; the d threshold events cost d ln(1/(1 - delta_c)) of epsilon and d delta_c of delta
    (basic composition); the rest is a Gaussian mechanism at mu-GDP.
    """
    delta_c = 0.4 * delta / d
    eps_g = eps - d * -math.log1p(-delta_c)
    delta_g = delta - d * delta_c
    mu = optimize.brentq(lambda m: _gdp_delta(eps_g, m) - delta_g, 1e-6, 50, xtol=1e-15, rtol=1e-14)
    sigma = math.sqrt(2 * d) / mu
    return sigma, 1.0 + sigma * stats.norm.isf(delta_c)


@pytest.mark.parametrize("eps, delta, d", [(1.0, 1e-5, 1), (1.0, 1e-5, 8), (0.3, 1e-6, 3)])
def test_noise_scale_and_threshold_match_the_gdp_derivation(eps, delta, d):
    X = np.repeat([["a"] * d, ["b"] * d], [500, 600], axis=0)
    enc = DPOneHotEncoder(epsilon=eps, delta=delta, random_state=0).fit(X)
    sigma, tau = _expected_plan(eps, delta, d)
    assert enc.noise_scale_ == pytest.approx(sigma, rel=1e-6)
    assert enc.threshold_ == pytest.approx(tau, rel=1e-6)
    assert enc.privacy_spent_.epsilon == pytest.approx(eps, rel=1e-6) and enc.privacy_spent_.epsilon <= eps
    assert enc.privacy_spent_.delta == delta
    # the plan is the release, and depends on the number of columns only
    assert enc.planned_events(10**6, d) == enc.privacy_events_


# ------------------------------------------------------------------------------------------
# statistical attacks on neighbouring datasets, from the released categories_
# ------------------------------------------------------------------------------------------
EPS, DELTA = 1.0, 1e-5


def _selection_hits(X, category, n_fits, seed):
    """Number of fits (seeds seed, seed + 1, ...) whose categories_ hold category in every column."""
    hits = 0
    for s in range(seed, seed + n_fits):
        enc = DPOneHotEncoder(epsilon=EPS, delta=DELTA, random_state=s).fit(X)
        hits += all(category in c.tolist() for c in enc.categories_)
    return hits


def _violates(hits_a, hits_b, n, eps, delta, alpha=1e-4):
    """True when P_A[S] > e^eps P_B[S] + delta at confidence 1 - 2 alpha (Clopper-Pearson bounds)."""
    low_a = stats.beta.ppf(alpha, hits_a, n - hits_a + 1) if hits_a else 0.0
    high_b = stats.beta.ppf(1 - alpha, hits_b + 1, n - hits_b) if hits_b < n else 1.0
    return low_a > math.exp(eps) * high_b + delta


def _shift_worlds(d):
    """World A: category "a" has c rows in each of d columns; world B: one of them (the same row in every
    column) is replaced by a "b" row. c sits half a row above the threshold, where the noise decides."""
    tau = DPOneHotEncoder(epsilon=EPS, delta=DELTA).fit(np.array([["z"] * d] * 1000)).threshold_
    c = int(math.floor(tau + 0.5))
    rows_b = 3 * c
    X_a = np.repeat([["a"] * d, ["b"] * d], [c, rows_b], axis=0)
    X_b = np.repeat([["a"] * d, ["b"] * d], [c - 1, rows_b + 1], axis=0)
    return X_a, X_b


def test_attack_on_a_count_shifted_in_every_column(under_noise):
    """One row moves from "a" to "b" in all d = 4 columns; the attacker guesses world A when "a" is kept
    in every column. The guarantee bounds that event by e^eps P_B + delta; at 1/50 of the noise the same
    attack breaks it (positive control)."""
    d, n = 4, 300
    X_a, X_b = _shift_worlds(d)
    a = _selection_hits(X_a, "a", n, 0)
    b = _selection_hits(X_b, "a", n, 10_000)
    assert not _violates(a, b, n, EPS, DELTA), (a, b)
    with under_noise(1 / 50):
        a_low = _selection_hits(X_a, "a", 60, 0)
        b_low = _selection_hits(X_b, "a", 60, 10_000)
    assert _violates(a_low, b_low, 60, EPS, DELTA), (a_low, b_low)


@pytest.mark.filterwarnings("ignore::skdp.WeakDeltaWarning")
def test_attack_on_a_category_carried_by_one_row():
    """World A holds one row of category "canary"; in world B that row is a common category, so P_B = 0 and
    the guarantee says P_A[canary released] <= delta. At a measurable delta (0.1, one column) the
    selection releases it with probability 0.4 delta. A threshold too low for the noise (the noise
    doubled, as a threshold computed without its margin would be) breaks the bound (positive control)."""
    delta, n = 0.1, 1000
    X_a = np.array([["common"]] * 40 + [["canary"]], dtype=object)

    def rate():
        hits = 0
        for s in range(n):
            enc = DPOneHotEncoder(epsilon=1.0, delta=delta, random_state=s).fit(X_a)
            hits += "canary" in enc.categories_[0].tolist()
        return hits

    hits = rate()
    high = stats.beta.ppf(1 - 1e-4, hits + 1, n - hits)
    assert high <= delta, hits  # P_B = 0: only delta is allowed
    assert stats.binomtest(hits, n, 0.4 * delta).pvalue > 1e-4  # exactly delta_c, as documented
    with scaled_noise(2.0):
        hits_control = rate()
    assert stats.beta.ppf(1e-4, hits_control, n - hits_control + 1) > delta, hits_control


def test_frequent_categories_are_selected_and_rare_ones_are_not():
    """n = 2000, epsilon = 1, three columns: categories of 8% of the rows or more are always selected,
    categories of 1 to 3 rows never (20 fits)."""
    rng = np.random.RandomState(0)
    n = 2000
    cols = {
        "colour": rng.choice(["red", "green", "blue", "grey"], n, p=[0.5, 0.3, 0.12, 0.08]),
        "size": rng.choice(["S", "M", "L"], n, p=[0.2, 0.5, 0.3]),
        "flag": rng.choice(["yes", "no"], n),
    }
    df = pd.DataFrame(cols)
    df.loc[:2, "colour"] = "violet"  # 3 rows
    df.loc[3, "size"] = "XXL"  # 1 row
    for seed in range(20):
        enc = DPOneHotEncoder(epsilon=1.0, random_state=seed).fit(df)
        assert [c.tolist() for c in enc.categories_] == [["blue", "green", "grey", "red"], ["L", "M", "S"],
                                                         ["no", "yes"]]


def test_the_model_depends_on_the_rows_only_through_the_released_set():
    """Two datasets whose (far above threshold) category counts differ, same seed: every fitted
    attribute is the same, so no count is carried by the model."""
    X1 = np.repeat([["a", "u"], ["b", "v"], ["c", "v"]], [500, 700, 300], axis=0)
    X2 = np.repeat([["a", "u"], ["b", "v"], ["c", "v"]], [900, 300, 300], axis=0)
    e1 = DPOneHotEncoder(random_state=3).fit(X1)
    e2 = DPOneHotEncoder(random_state=3).fit(X2)
    v1, v2 = vars(e1), vars(e2)
    assert v1.keys() == v2.keys()
    for key in v1:
        if key == "categories_":
            assert all(np.array_equal(a, b) for a, b in zip(v1[key], v2[key]))
        else:
            assert v1[key] == v2[key], key


# ------------------------------------------------------------------------------------------
# public categories: free, and exactly sklearn's OneHotEncoder
# ------------------------------------------------------------------------------------------
def _frame(n=300, seed=0):
    rng = np.random.RandomState(seed)
    return pd.DataFrame({
        "city": rng.choice(["Paris", "Oslo", "Rome"], n),
        "grade": pd.Categorical(rng.choice(["low", "mid", "high"], n)),
        "level": rng.choice([1, 2, 5], n),
        "code": pd.array(rng.choice(["p", "q"], n), dtype="string"),
    })


def _assert_same_output(ours, theirs, X):
    out, ref = ours.transform(X), theirs.transform(X)
    assert type(out) is type(ref)
    if sparse.issparse(ref):
        assert out.format == "csr" and out.dtype == ref.dtype and out.indices.dtype == ref.indices.dtype
        out, ref = out.toarray(), ref.toarray()
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(ours.get_feature_names_out(), theirs.get_feature_names_out())


@pytest.mark.parametrize("handle_unknown", ["ignore", "infrequent_if_exist"])
@pytest.mark.parametrize("sparse_output", [True, False])
def test_given_categories_cost_nothing_and_equal_sklearn(handle_unknown, sparse_output):
    X = _frame()
    given = [["Oslo", "Paris", "Rome", "Bern"], ["high", "low"], [1, 2, 5, 7], ["p", "q"]]
    ledger = PrivacyLedger(epsilon=1.0, delta=1e-5)
    ours = DPOneHotEncoder(categories=given, handle_unknown=handle_unknown, sparse_output=sparse_output,
                           random_state=0).fit(X, privacy_ledger=ledger)
    theirs = OneHotEncoder(categories=given, handle_unknown=handle_unknown, sparse_output=sparse_output).fit(X)
    assert ours.privacy_spent_.epsilon == 0 and ours.privacy_spent_.delta == 0
    assert ours.privacy_events_ == [] and ours.planned_events(len(X), 4) == []
    assert ours.noise_source_ is None and ledger.n_fits == 0
    for a, b in zip(ours.categories_, theirs.categories_):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    X_new = _frame(50, seed=1)
    X_new.loc[:4, "city"] = "Lima"  # unknown at transform
    _assert_same_output(ours, theirs, X_new)
    np.testing.assert_array_equal(ours.inverse_transform(ours.transform(X_new)),
                                  theirs.inverse_transform(theirs.transform(X_new)))


def test_numpy_object_and_string_arrays_equal_sklearn():
    rng = np.random.RandomState(1)
    X_obj = np.column_stack([rng.choice(["a", "b", "c"], 200), rng.choice([3, 4], 200)]).astype(object)
    X_str = rng.choice(["x", "yy", "zzz"], size=(200, 2))
    for X in (X_obj, X_str, X_str.tolist()):
        given = [sorted(set(col)) for col in np.asarray(X, dtype=object).T.tolist()]
        theirs = OneHotEncoder(categories=given).fit(X)
        ours = DPOneHotEncoder(categories=given).fit(X)
        assert [c.dtype for c in ours.categories_] == [c.dtype for c in theirs.categories_]
        _assert_same_output(ours, theirs, X)


def test_selected_categories_give_sklearns_encoding_and_pandas_output():
    """Where the private selection found every category, transform, names and pandas output are sklearn's
    with those categories; sparse output is CSR."""
    X = _frame(3000)
    ours = DPOneHotEncoder(random_state=0).fit(X)
    theirs = OneHotEncoder(categories=[c.tolist() for c in ours.categories_], handle_unknown="ignore").fit(X)
    assert [len(c) for c in ours.categories_] == [3, 3, 3, 2]
    _assert_same_output(ours, theirs, X)
    dense = DPOneHotEncoder(sparse_output=False, random_state=0).set_output(transform="pandas").fit(X)
    ref = OneHotEncoder(categories=[c.tolist() for c in ours.categories_], sparse_output=False).set_output(
        transform="pandas").fit(X)
    pd.testing.assert_frame_equal(dense.transform(X), ref.transform(X))
    with pytest.raises(ValueError, match="sparse_output=False"):
        DPOneHotEncoder(random_state=0).set_output(transform="pandas").fit(X).transform(X)


def test_infrequent_column_collects_unselected_and_unseen_values():
    """handle_unknown="infrequent_if_exist": one extra column per column, always (its existence is public),
    named as sklearn names it; every row has exactly one 1 per block."""
    X = np.array([["a"]] * 500 + [["b"]] * 400 + [["rare"]] * 2, dtype=object)
    enc = DPOneHotEncoder(handle_unknown="infrequent_if_exist", sparse_output=False, random_state=0).fit(X)
    assert enc.categories_[0].tolist() == ["a", "b"]
    assert enc.get_feature_names_out().tolist() == ["x0_a", "x0_b", "x0_infrequent_sklearn"]
    out = enc.transform(np.array([["a"], ["rare"], ["never-seen"]], dtype=object))
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 0, 1]])
    assert enc.inverse_transform(out).ravel().tolist() == ["a", "infrequent_sklearn", "infrequent_sklearn"]
    # the column exists even when nothing was left out
    full = DPOneHotEncoder(handle_unknown="infrequent_if_exist", random_state=0).fit(X[:900])
    assert full.get_feature_names_out().tolist() == ["x0_a", "x0_b", "x0_infrequent_sklearn"]
    ignore = DPOneHotEncoder(sparse_output=False, random_state=0).fit(X)
    np.testing.assert_array_equal(ignore.transform(np.array([["rare"]], dtype=object)), [[0, 0]])


def test_same_public_methods_fit_signature_and_fitted_attributes_as_sklearn():
    import inspect

    def methods(cls):
        return {name for name, _ in inspect.getmembers(cls, callable) if not name.startswith("_")}

    assert methods(OneHotEncoder) <= methods(DPOneHotEncoder)
    theirs_fit = list(inspect.signature(OneHotEncoder.fit).parameters)
    assert list(inspect.signature(DPOneHotEncoder.fit).parameters) == theirs_fit + ["privacy_ledger"]
    for X in (_frame(600), _frame(600).to_numpy()):
        theirs = OneHotEncoder().fit(X)
        ours = DPOneHotEncoder(random_state=0).fit(X)
        fitted = [k for k in vars(theirs) if k.endswith("_") and not k.startswith("_")]
        assert "categories_" in fitted
        for key in fitted:
            assert type(getattr(ours, key)) is type(getattr(theirs, key)), key
            a, b = getattr(ours, key), getattr(theirs, key)
            if isinstance(b, list):  # categories_: one array per column, of the column's dtype
                assert [np.asarray(v).dtype for v in a] == [np.asarray(v).dtype for v in b], key
            else:
                assert np.shape(a) == np.shape(b), key


def test_in_a_column_transformer_names_and_pandas_output():
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import StandardScaler

    X = _frame(2000).assign(num=np.linspace(0, 1, 2000))
    ct = make_column_transformer((StandardScaler(), ["num"]),
                                 (DPOneHotEncoder(sparse_output=False, random_state=0), ["city", "grade"]))
    out = ct.set_output(transform="pandas").fit_transform(X)
    assert list(out.columns) == ["standardscaler__num"] + [
        f"dponehotencoder__{f}" for f in ["city_Oslo", "city_Paris", "city_Rome", "grade_high", "grade_low",
                                          "grade_mid"]]
    assert (out.filter(like="city_").sum(axis=1) == 1).all()


# ------------------------------------------------------------------------------------------
# the privacy protocol and bad input
# ------------------------------------------------------------------------------------------
def test_ledger_charge_entropy_and_plan():
    X = _frame(500)
    ledger = PrivacyLedger(epsilon=2.0, delta=1e-4)
    enc = DPOneHotEncoder(epsilon=0.5).fit(X, privacy_ledger=ledger)
    assert enc.noise_source_ == "os-entropy"
    assert ledger.n_fits == 1 and list(ledger.events()) == enc.privacy_events_
    assert enc.planned_events(5, 4) == enc.planned_events(10**7, 4) == enc.privacy_events_
    assert enc.planned_events(500, 5) != enc.privacy_events_
    with pytest.raises(ValueError, match="n_features"):
        enc.planned_events(500)


def test_bad_parameters_are_refused_before_the_data_is_read():
    class Untouchable:
        shape = property(lambda self: pytest.fail("the data was read"))

    with pytest.raises(ValueError, match="delta > 0"):
        DPOneHotEncoder(delta=0).fit(Untouchable())
    with pytest.raises(ValueError, match="epsilon"):
        DPOneHotEncoder(epsilon=math.inf).fit(Untouchable())
    with pytest.raises(InvalidParameterError, match="handle_unknown"):
        DPOneHotEncoder(handle_unknown="error").fit(Untouchable())
    with pytest.raises(InvalidParameterError, match="categories"):
        DPOneHotEncoder(categories="given").fit(Untouchable())
    # delta = 0 is fine when nothing is selected
    assert DPOneHotEncoder(categories=[["a", "b"]], delta=0).fit([["a"], ["b"]]).privacy_spent_.epsilon == 0


def test_bad_data_is_refused_without_values_in_the_message():
    secret = "patient-4711"
    # missing values are not bad data: ignored in fit, encoded as all zeros (see test_missing_values.py)
    enc = DPOneHotEncoder(categories=[[1.0, 2.0]]).fit(np.array([[1.0], [np.nan]]))
    np.testing.assert_array_equal(enc.transform(np.array([[np.nan], [2.0]])).toarray(), [[0.0, 0.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match="uniformly strings or numbers") as info:
        DPOneHotEncoder().fit(np.array([[secret], [3]], dtype=object))
    assert secret not in str(info.value)
    with pytest.raises(ValueError, match="one array per column"):
        DPOneHotEncoder(categories=[["a"]]).fit([["a", "b"]])
    with pytest.raises(ValueError, match="duplicate"):
        DPOneHotEncoder(categories=[["a", "a"]]).fit([["a"]])
    with pytest.raises(ValueError, match="Unsorted"):
        DPOneHotEncoder(categories=[[2, 1]]).fit([[1], [2]])


def test_callers_arrays_are_not_modified():
    X = np.repeat(np.array([["a", "x"], ["b", "y"]], dtype=object), 300, axis=0)
    df = pd.DataFrame(X, columns=["p", "q"])
    X_copy, df_copy = X.copy(), df.copy()
    enc = DPOneHotEncoder(handle_unknown="infrequent_if_exist", random_state=0).fit(X)
    enc.transform(np.array([["zz", "x"]], dtype=object))
    DPOneHotEncoder(random_state=0).fit(df).transform(df)
    np.testing.assert_array_equal(X, X_copy)
    pd.testing.assert_frame_equal(df, df_copy)


def test_a_column_without_selected_category_warns_with_public_numbers_only():
    X = np.column_stack([np.repeat(["a", "b"], 300), np.arange(600).astype(str)]).astype(object)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        enc = DPOneHotEncoder(random_state=0).fit(X)
    assert enc.categories_[1].size == 0
    messages = [str(w.message) for w in caught if "selected no category" in str(w.message)]
    assert len(messages) == 1 and "column(s) 1" in messages[0] and "600" not in messages[0]
    assert enc.transform(X).shape == (600, 2)


# ------------------------------------------------------------------------------------------
# sklearn's estimator checks (random float data: every value is its own category, carried by one row,
# so "auto" selects nothing; the encoding and the API are checked with empty and infrequent blocks)
# ------------------------------------------------------------------------------------------
@parametrize_with_checks([DPOneHotEncoder(random_state=0),
                          DPOneHotEncoder(handle_unknown="infrequent_if_exist", sparse_output=False,
                                          random_state=0)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="DPOneHotEncoder selected no category", category=UserWarning)
        check(estimator)
