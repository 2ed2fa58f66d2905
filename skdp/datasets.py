"""Synthetic sparse designs from the source papers' experiments.

Wang 2021 (dissertation), sections 2.6 and 3.4 (the DP-IGHT and DPSL-KT
experiments): features i.i.d.
uniform on ``[-a, a]``, a true coefficient vector with ``s*`` non-zeros drawn
from ``U(-1, 1)`` on a random support, and

* linear: ``y = X theta* + N(0, noise^2)``;
* logistic: ``P(y = 1 | x) = sigmoid(<x, theta*>)``. The papers print
  ``1/(1 + exp(<x, theta*>))``, the opposite sign to the model they fit; we use
  the sign of the model (``paper_sign=True`` reproduces the printed one).

Every draw comes from ``check_random_state(random_state)``.
"""

import numpy as np
from scipy import special
from sklearn.utils import check_random_state

__all__ = ["make_sparse_regression", "make_sparse_classification", "sparse_coef"]


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
