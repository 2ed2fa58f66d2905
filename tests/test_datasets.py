"""make_census_like: reproducible, Adult-shaped (dtypes, public bounds and category lists), learnable."""

import sys
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skdp import DPOneHotEncoder
from skdp.datasets import CENSUS_LIKE_BOUNDS, census_like_categories, make_census_like

NUMERIC = list(CENSUS_LIKE_BOUNDS)
STRINGS = list(census_like_categories())


def test_reproducible_and_seed_dependent():
    X1, y1 = make_census_like(3000, random_state=7)
    X2, y2 = make_census_like(3000, random_state=7)
    X3, _ = make_census_like(3000, random_state=8)
    pd.testing.assert_frame_equal(X1, X2)
    pd.testing.assert_series_equal(y1, y2)
    assert not X1.equals(X3)


def test_columns_dtypes_bounds_and_categories():
    X, y = make_census_like(random_state=0)
    assert X.shape == (30000, 13) and y.shape == (30000,)
    assert len(NUMERIC) >= 4 and len(STRINGS) >= 6 and set(NUMERIC + STRINGS) == set(X.columns)
    for col, (lo, hi) in CENSUS_LIKE_BOUNDS.items():
        assert X[col].dtype == np.int64
        assert X[col].between(lo, hi).all(), col
    assert (X["age"].min(), X["age"].max()) == (17, 90)
    assert X["capital_gain"].max() == 99999 and 0.85 < (X["capital_gain"] == 0).mean() < 0.97
    for col, cats in census_like_categories().items():
        assert pd.api.types.is_string_dtype(X[col]) and not pd.api.types.is_numeric_dtype(X[col]), col
        assert 2 <= len(cats) <= 40 and cats == sorted(cats)
        assert set(X[col]) <= set(cats), col
    assert X["native_country"].nunique() >= 30  # the long tail
    # education is the text of education_num
    assert X.groupby("education")["education_num"].nunique().max() == 1
    assert set(np.unique(y)) == {0, 1} and 0.22 < y.mean() < 0.26
    X_arr, y_arr = make_census_like(500, as_frame=False, random_state=3)
    X_df, y_df = make_census_like(500, random_state=3)
    assert X_arr.dtype == object and X_arr.shape == (500, 13)
    np.testing.assert_array_equal(X_arr, X_df.to_numpy(dtype=object))
    np.testing.assert_array_equal(y_arr, y_df.to_numpy())


def test_refuses_bad_sizes_and_names_pandas_when_missing(monkeypatch):
    with pytest.raises(ValueError, match="n_samples"):
        make_census_like(0)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pandas"):
        make_census_like(10)
    X, _ = make_census_like(10, as_frame=False, random_state=0)
    assert X.shape == (10, 13)


def test_sklearn_pipeline_accuracy_and_the_dp_encoder_on_it():
    """sklearn's StandardScaler + OneHotEncoder(given categories) + LogisticRegression learns the label
    well above the majority rate (0.857 at 30,000 rows, Adult: about 0.85), from numbers and strings
    together; DPOneHotEncoder at
    epsilon = 1 keeps every category of 1% of the rows or more."""
    X, y = make_census_like(12000, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    def accuracy(numeric, strings):
        steps = [(StandardScaler(), numeric)] if numeric else []
        if strings:
            steps.append((OneHotEncoder(categories=[census_like_categories()[c] for c in strings]), strings))
        pipe = make_pipeline(make_column_transformer(*steps), LogisticRegression(max_iter=1000))
        return pipe.fit(Xtr, ytr).score(Xte, yte)

    both = accuracy(NUMERIC, STRINGS)  # 0.850 here (majority 0.757)
    assert both > 0.84 and both > 1 - yte.mean() + 0.07, both
    # the label depends on both kinds of columns: numbers alone 0.796, strings alone 0.832
    assert accuracy(NUMERIC, []) < both - 0.02 and accuracy([], STRINGS) < both - 0.01
    enc = DPOneHotEncoder(epsilon=1.0, random_state=0).fit(X[STRINGS])
    for col, cats in zip(STRINGS, enc.categories_):
        frequent = X[col].value_counts()
        assert set(frequent[frequent >= 0.01 * len(X)].index) <= set(cats.tolist()), col
        assert set(cats.tolist()) <= set(census_like_categories()[col])
