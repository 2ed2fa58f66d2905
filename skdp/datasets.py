"""Synthetic data: sparse designs from the source papers' experiments, and a census-like mixed-type table.

Wang 2021 (dissertation), sections 2.6 and 3.4 (the DP-IGHT and DPSL-KT
experiments): features i.i.d.
uniform on ``[-a, a]``, a true coefficient vector with ``s*`` non-zeros drawn
from ``U(-1, 1)`` on a random support, and

* linear: ``y = X theta* + N(0, noise^2)``;
* logistic: ``P(y = 1 | x) = sigmoid(<x, theta*>)``. The papers print
  ``1/(1 + exp(<x, theta*>))``, the opposite sign to the model they fit; we use
  the sign of the model (``paper_sign=True`` reproduces the printed one).

:func:`make_census_like` generates (no download) a table shaped like the
Adult census data: raw-scale numbers and string categories, for mixed-type
pipelines.

Every draw comes from ``check_random_state(random_state)``.

References
----------
.. [1] L. Wang, "Towards efficient and effective privacy-preserving machine learning", PhD
   dissertation, University of California, Los Angeles, 2021.
   <https://escholarship.org/uc/item/3t58b68j>
.. [2] R. Kohavi, "Scaling up the accuracy of naive-Bayes classifiers: a decision-tree hybrid",
   KDD 1996.
"""

import numpy as np
from scipy import special
from sklearn.utils import check_random_state

__all__ = ["make_sparse_regression", "make_sparse_classification", "sparse_coef", "make_census_like",
           "census_like_categories", "CENSUS_LIKE_BOUNDS"]


def _check(n_samples, n_features, n_informative):
    for name, v in (("n_samples", n_samples), ("n_features", n_features), ("n_informative", n_informative)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}.")
    if n_informative > n_features:
        raise ValueError(f"n_informative={n_informative} must be <= n_features={n_features}.")


def sparse_coef(n_features, n_informative, rng, coef_range=1.0):
    """A vector with ``n_informative`` non-zeros from ``U(-coef_range, coef_range)`` on a random support."""
    coef = np.zeros(n_features)
    support = rng.choice(n_features, n_informative, replace=False)
    coef[support] = rng.uniform(-coef_range, coef_range, n_informative)
    return coef


def _design(n_samples, n_features, n_informative, feature_range, random_state):
    _check(n_samples, n_features, n_informative)
    if not feature_range > 0:
        raise ValueError(f"feature_range must be > 0, got {feature_range!r}.")
    rng = check_random_state(random_state)
    coef = sparse_coef(n_features, n_informative, rng)
    X = rng.uniform(-feature_range, feature_range, size=(n_samples, n_features))
    return rng, X, coef


def make_sparse_regression(n_samples=20000, n_features=1000, n_informative=10, *, noise=0.1,
                           feature_range=1.0, random_state=None):
    """Sparse linear design: ``X ~ U(-a, a)``, ``y = X coef + N(0, noise^2)``.

    Parameters
    ----------
    n_samples, n_features, n_informative : int
        ``n``, ``d`` and ``s*``. Defaults are the design of the sparse issue's
        acceptance (n = 20,000, d = 1,000, s* = 10).
    noise : float, default=0.1
        Standard deviation of the label noise (the papers' ``nu^2 = 0.1`` is
        ``noise = 0.316``).
    feature_range : float, default=1.0
        ``a``; the papers use 1 (Ch. 3) and 2 (Ch. 2).
    random_state : int, RandomState instance or None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    coef : ndarray of shape (n_features,), the true coefficients
    """
    rng, X, coef = _design(n_samples, n_features, n_informative, feature_range, random_state)
    y = X @ coef + noise * rng.standard_normal(n_samples)
    return X, y, coef


def make_sparse_classification(n_samples=20000, n_features=1000, n_informative=10, *, feature_range=1.0,
                               coef_scale=1.0, paper_sign=False, random_state=None):
    """Sparse logistic design: ``X ~ U(-a, a)``, ``P(y = 1) = sigmoid(<x, coef>)``, labels in {0, 1}.

    Parameters
    ----------
    n_samples, n_features, n_informative : int
    feature_range : float, default=1.0
    coef_scale : float, default=1.0
        Multiplies the true coefficients (larger: cleaner classes).
    paper_sign : bool, default=False
        Use the papers' printed ``P(y = 1) = 1/(1 + exp(<x, coef>))``, i.e. the
        label model of ``-coef``.
    random_state : int, RandomState instance or None

    Returns
    -------
    X, y, coef
    """
    rng, X, coef = _design(n_samples, n_features, n_informative, feature_range, random_state)
    coef = coef * float(coef_scale)
    z = X @ coef
    prob = special.expit(-z if paper_sign else z)
    y = (rng.uniform(size=n_samples) < prob).astype(int)
    return X, y, coef


# --------------------------------------------------------------------------------------------------------
# a census-like mixed-type table
# --------------------------------------------------------------------------------------------------------
#: Public domain bounds of the numeric columns of :func:`make_census_like`: every generated value lies in
#: them (what a data holder would give ``DPStandardScaler(bounds=...)`` from the survey's codebook).
CENSUS_LIKE_BOUNDS = {
    "age": (17, 90),
    "education_num": (1, 16),
    "capital_gain": (0, 99999),
    "capital_loss": (0, 4356),
    "hours_per_week": (1, 99),
}

_EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
              "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate"]
_EDUCATION_P = [0.002, 0.005, 0.01, 0.02, 0.016, 0.029, 0.036, 0.013, 0.32, 0.22, 0.042, 0.033, 0.165, 0.054,
                0.018, 0.013]
_WORKCLASS = ["Private", "Self-emp-not-inc", "Local-gov", "State-gov", "Self-emp-inc", "Federal-gov",
              "Without-pay", "Never-worked"]
_WORKCLASS_P = [0.745, 0.083, 0.068, 0.042, 0.036, 0.0295, 0.0004, 0.0001]
_MARITAL = ["Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed", "Married-spouse-absent",
            "Married-AF-spouse"]
_OCCUPATION = ["Prof-specialty", "Exec-managerial", "Craft-repair", "Adm-clerical", "Sales", "Other-service",
               "Machine-op-inspct", "Transport-moving", "Handlers-cleaners", "Farming-fishing", "Tech-support",
               "Protective-serv", "Priv-house-serv", "Armed-Forces"]
#: occupation effects on the log-odds of the label (public constants of the generator)
_OCCUPATION_EFFECT = [0.6, 0.8, 0.0, -0.2, 0.1, -0.9, -0.4, -0.2, -0.7, -0.8, 0.3, 0.3, -1.5, 0.0]
_RELATIONSHIP = ["Husband", "Wife", "Own-child", "Not-in-family", "Unmarried", "Other-relative"]
_RACE = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]
_RACE_P = [0.854, 0.096, 0.031, 0.0096, 0.0094]
_COUNTRY = ["United-States", "Mexico", "Philippines", "Germany", "Canada", "Puerto-Rico", "El-Salvador", "India",
            "Cuba", "England", "Jamaica", "South", "China", "Italy", "Dominican-Republic", "Vietnam",
            "Guatemala", "Japan", "Poland", "Columbia", "Taiwan", "Haiti", "Iran", "Portugal", "Nicaragua", "Peru",
            "France", "Greece", "Ecuador", "Ireland", "Hong", "Cambodia", "Trinadad&Tobago", "Laos", "Thailand",
            "Yugoslavia", "Outlying-US(Guam-USVI-etc)", "Honduras", "Hungary", "Scotland"]
#: the columns of the table, in order (Adult's order without ``fnlwgt``)
_COLUMNS = ["age", "workclass", "education", "education_num", "marital_status", "occupation", "relationship",
            "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country"]
#: intercept of the label's log-odds, set so that about 24% of the rows are positive
_LABEL_INTERCEPT = -4.18
#: scale of the label's log-odds: sklearn's StandardScaler + OneHotEncoder + LogisticRegression then scores about 0.86
#: (Adult: about 0.85)
_LABEL_SCALE = 1.5


def census_like_categories():
    """The public category lists of the string columns of :func:`make_census_like`.

    Every value of a generated string column is in its list (some are rare,
    e.g. ``workclass="Never-worked"``, and a small table may lack them).

    Returns
    -------
    categories : dict
        Column name to the sorted list of its categories, in the table's
        column order: ``workclass`` (8), ``education`` (16),
        ``marital_status`` (7), ``occupation`` (14), ``relationship`` (6),
        ``race`` (5), ``sex`` (2), ``native_country`` (40).

    Examples
    --------
    >>> from skdp.datasets import census_like_categories
    >>> cats = census_like_categories()
    >>> list(cats), cats["sex"]
    (['workclass', 'education', 'marital_status', 'occupation', 'relationship', 'race', 'sex', 'native_country'], ['Female', 'Male'])
    """
    lists = {"workclass": _WORKCLASS, "education": _EDUCATION, "marital_status": _MARITAL,
             "occupation": _OCCUPATION, "relationship": _RELATIONSHIP, "race": _RACE, "sex": ["Female", "Male"],
             "native_country": _COUNTRY}
    return {c: sorted(lists[c]) for c in _COLUMNS if c in lists}


def _choice(rng, options, p, size):
    p = np.asarray(p, dtype=float)
    return np.asarray(options, dtype=object)[rng.choice(len(options), size=size, p=p / p.sum())]


def _country_probabilities():
    """United-States 0.895, Mexico 0.03, then a Zipf tail over the other 38 countries."""
    tail = 1.0 / np.arange(1, len(_COUNTRY) - 1) ** 1.1
    return np.concatenate([[0.895, 0.03], 0.075 * tail / tail.sum()])


def make_census_like(n_samples=30000, *, as_frame=True, missing_fraction=0.0, random_state=None):
    """A generated table shaped like the Adult census data: raw-scale numbers, strings and a binary label.

    Nothing is downloaded: every value is drawn from a fixed model loosely
    matching the published marginals of Adult (Kohavi 1996; the UCI "Adult"
    data): age, education, marital status and sex drive occupation, hours
    and capital gains, and the label (income above 50K) is a logistic
    function of numbers and categories together (about 24% positives).
    It is a benchmark for mixed-type pipelines (a DP scaler for the
    numbers, a DP one-hot encoder for the strings), not a substitute for
    the real data.

    Columns (Adult's order, without ``fnlwgt``):

    * numeric (int64), with the public bounds of :data:`CENSUS_LIKE_BOUNDS`:
      ``age`` in [17, 90], ``education_num`` in [1, 16] (years, consistent
      with ``education``), ``capital_gain`` in [0, 99999] (about 92% zeros,
      a lognormal tail and a top code of 99999, as Adult's),
      ``capital_loss`` in [0, 4356] (about 95% zeros), ``hours_per_week`` in
      [1, 99];
    * strings (object): ``workclass`` (8 categories), ``education`` (16),
      ``marital_status`` (7), ``occupation`` (14), ``relationship`` (6),
      ``race`` (5), ``sex`` (2), ``native_country`` (40, a long tail), the
      public lists of :func:`census_like_categories`.

    Parameters
    ----------
    n_samples : int, default=30000
    as_frame : bool, default=True
        Return ``X`` as a pandas DataFrame (needs pandas; ``ImportError``
        otherwise) and ``y`` as a Series named ``"income_gt_50k"``. ``False``:
        ``X`` is a numpy object array (numbers as Python ints) and ``y`` an
        int array.
    missing_fraction : float in [0, 1), default=0.0
        Share of the rows given missing fields, as Adult's training rows
        (about 7.4% have one): each such row loses one field, or two with
        probability 0.3, chosen uniformly among all 13 columns, numeric and
        string alike. A missing number is NaN (its column becomes float64), a
        missing string is NaN too (``np.nan``, which scikit-learn's
        ``SimpleImputer`` recognises in object columns). The rows, and the
        label, are generated first (the label sees the complete row, as a
        survey's outcome does not depend on what was left blank), so the same
        ``random_state`` gives the same table with fields blanked.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : DataFrame or ndarray of shape (n_samples, 13)
    y : Series or ndarray of shape (n_samples,)
        1 for "income above 50K", else 0.

    Examples
    --------
    >>> from skdp.datasets import CENSUS_LIKE_BOUNDS, make_census_like
    >>> X, y = make_census_like(2000, random_state=0)
    >>> X.shape, round(float(y.mean()), 2)
    ((2000, 13), 0.24)
    >>> lo, hi = CENSUS_LIKE_BOUNDS["age"]
    >>> bool(X["age"].between(lo, hi).all())
    True
    >>> X, y = make_census_like(2000, missing_fraction=0.07, random_state=0)
    >>> bool(0.05 < X.isna().any(axis=1).mean() < 0.09), X["age"].dtype.name
    (True, 'float64')
    """
    if isinstance(n_samples, bool) or int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
    if isinstance(missing_fraction, bool) or not isinstance(missing_fraction, (int, float, np.floating)) or not (
            0.0 <= float(missing_fraction) < 1.0):
        raise ValueError(f"missing_fraction must be a number in [0, 1), got {missing_fraction!r}.")
    if as_frame:
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is installed in the test environment
            raise ImportError("make_census_like(as_frame=True) returns a pandas DataFrame and needs pandas, which "
                              "is not installed; install pandas or pass as_frame=False.") from exc
    n, rng = int(n_samples), check_random_state(random_state)
    male = rng.uniform(size=n) < 0.67
    age = np.clip(np.round(17 + rng.gamma(2.3, 9.5, size=n)), 17, 90).astype(np.int64)
    edu = rng.choice(16, size=n, p=np.asarray(_EDUCATION_P) / np.sum(_EDUCATION_P))
    edu_num = (edu + 1).astype(np.int64)
    # marital status: mostly never married when young, married in mid life, widowed late
    young, old = age < 26, age > 64
    p_married = np.where(young, 0.12, np.where(old, 0.55, 0.58))
    p_never = np.where(young, 0.85, np.where(old, 0.04, 0.2))
    u = rng.uniform(size=n)
    other = _choice(rng, _MARITAL[2:], [0.55, 0.13, 0.17, 0.13, 0.02], n)
    widowed_late = old & (rng.uniform(size=n) < 0.5)
    marital = np.where(u < p_married, _MARITAL[0], np.where(u < p_married + p_never, _MARITAL[1], other))
    marital = np.where(widowed_late & (marital != _MARITAL[0]), "Widowed", marital).astype(object)
    married = marital == _MARITAL[0]
    # relationship follows marital status, sex and age
    single_rel = np.where(young & (rng.uniform(size=n) < 0.7), "Own-child",
                          _choice(rng, ["Not-in-family", "Unmarried", "Other-relative"], [0.6, 0.3, 0.1], n))
    relationship = np.where(married, np.where(male, "Husband", "Wife"), single_rel).astype(object)
    workclass = _choice(rng, _WORKCLASS, _WORKCLASS_P, n)
    # occupation: white-collar with education, some by sex
    score = (edu_num - 9) / 3.0
    prof = np.clip(0.1 + 0.12 * score, 0.01, 0.6)
    occ_other = _choice(rng, _OCCUPATION[2:], [0.16, 0.15, 0.14, 0.13, 0.08, 0.06, 0.05, 0.04, 0.04, 0.03,
                                               0.006, 0.0004], n)
    u = rng.uniform(size=n)
    occupation = np.where(u < prof, "Prof-specialty", np.where(u < 2 * prof, "Exec-managerial", occ_other))
    occupation = occupation.astype(object)
    race = _choice(rng, _RACE, _RACE_P, n)
    country = _choice(rng, _COUNTRY, _country_probabilities(), n)
    self_emp = np.isin(workclass, ["Self-emp-not-inc", "Self-emp-inc"])
    hours = 40 + 4 * male - 9 * young - 8 * old + 5 * self_emp + 11 * rng.standard_normal(n)
    hours = np.clip(np.round(hours), 1, 99).astype(np.int64)
    # capital gains: rare, heavy tailed, more frequent with education and age; 99999 top code
    p_gain = np.clip(0.05 + 0.02 * score + 0.03 * married, 0.01, 0.3)
    has_gain = rng.uniform(size=n) < p_gain
    gain = np.minimum(np.exp(rng.normal(8.3, 1.0, size=n)), 99999)
    gain = np.where(rng.uniform(size=n) < 0.05, 99999, gain)
    capital_gain = np.where(has_gain, np.round(gain), 0).astype(np.int64)
    has_loss = rng.uniform(size=n) < 0.047
    capital_loss = np.where(has_loss, np.clip(np.round(rng.normal(1900, 350, size=n)), 1, 4356), 0).astype(np.int64)
    # the label: numbers and categories together
    occ_index = {o: i for i, o in enumerate(_OCCUPATION)}
    occ_effect = np.asarray(_OCCUPATION_EFFECT)[[occ_index[o] for o in occupation.tolist()]]
    a = (age - 40) / 10.0
    logit = _LABEL_INTERCEPT + _LABEL_SCALE * (
        0.45 * a - 0.12 * a**2 + 0.35 * (edu_num - 10) + 2.0 * married + 0.035 * (hours - 40) + 0.3 * male
        + occ_effect + 0.5 * self_emp + 2.8 * (capital_gain > 5000) + 1.2 * (capital_loss > 1700)
        - 0.3 * (race == "Black"))
    y = (rng.uniform(size=n) < special.expit(logit)).astype(np.int64)
    values = {"age": age, "workclass": workclass, "education": np.asarray(_EDUCATION, dtype=object)[edu],
              "education_num": edu_num, "marital_status": marital, "occupation": occupation,
              "relationship": relationship, "race": race, "sex": np.where(male, "Male", "Female").astype(object),
              "capital_gain": capital_gain, "capital_loss": capital_loss, "hours_per_week": hours,
              "native_country": country}
    if missing_fraction > 0:  # drawn last: the complete table is the one without missing values
        _blank_fields(values, rng, n, float(missing_fraction))
    if as_frame:
        return pd.DataFrame({c: values[c] for c in _COLUMNS}), pd.Series(y, name="income_gt_50k")
    X = np.empty((n, len(_COLUMNS)), dtype=object)
    for j, c in enumerate(_COLUMNS):
        X[:, j] = values[c].tolist()
    return X, y


def _blank_fields(values, rng, n, fraction):
    """Blank one field (two with probability 0.3) of a ``fraction`` of the rows, uniformly over the columns."""
    rows = np.flatnonzero(rng.uniform(size=n) < fraction)
    first = rng.randint(len(_COLUMNS), size=rows.size)
    second = np.where(rng.uniform(size=rows.size) < 0.3, rng.randint(len(_COLUMNS), size=rows.size), -1)
    for j, c in enumerate(_COLUMNS):
        hit = rows[(first == j) | (second == j)]
        if not hit.size:
            continue
        column = values[c]
        if column.dtype.kind in "iu":  # a missing number is NaN: the column becomes float
            column = column.astype(np.float64)
        column[hit] = np.nan
        values[c] = column
    for c in _COLUMNS:  # every numeric column is float once fields are blanked, missing or not
        if values[c].dtype.kind in "iu":
            values[c] = values[c].astype(np.float64)
