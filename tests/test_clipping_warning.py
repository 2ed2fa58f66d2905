"""A given bound that clips most of the data is told to the data holder at fit time, never stored on the model.

diabetes as loaded: ``DPRidge(label_bound=(0, 100))`` clips 294 of the 442 labels and scored R^2 -0.8 with no
hint but :func:`skdp.fit_diagnostics`.
"""

import pickle
import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

from skdp import DPLasso, DPLogisticRegression, DPRidge, fit_diagnostics


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(return_X_y=True)


def _fit(est, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return [str(w.message) for w in caught if "clips more than half" in str(w.message)]


@pytest.mark.parametrize("make, name, what", [
    (lambda: DPRidge(label_bound=(0, 100), data_norm=1.0), "label_bound=(0, 100)", "labels"),
    (lambda: DPLasso(label_bound=(0, 100)), "label_bound=(0, 100)", "labels"),
    (lambda: DPRidge(label_bound=(0, 400), data_norm=0.01), "data_norm=0.01", "rows"),
], ids=["ridge-labels", "lasso-labels", "ridge-rows"])
def test_a_given_bound_that_clips_most_of_the_data_warns_without_the_count(diabetes, make, name, what):
    X, y = diabetes
    est = make().set_params(random_state=0)
    (message,) = _fit(est, X, y)
    assert name in message and f"more than half of the {what}" in message and "'auto'" in message
    count = fit_diagnostics(est)[f"n_{what}_clipped"]
    assert count > len(y) / 2  # the warning is true
    assert not re.search(rf"\b{count}\b", message)  # and carries no count
    # nothing about it travels with the model
    state = pickle.dumps(est)
    assert b"clipped" not in state and not [k for k in vars(est) if "clip" in k and "norm" not in k]


@pytest.mark.parametrize("make", [
    lambda: DPRidge(label_bound=(0, 400), data_norm=1.0),  # clips nothing
    lambda: DPRidge(label_bound=(100, 400), data_norm=1.0),  # clips some labels, fewer than half
    lambda: DPRidge(epsilon=5.0),  # private bounds: not the user's to check
], ids=["wide", "some", "auto"])
def test_no_warning_when_most_of_the_data_is_kept_or_the_bound_is_private(diabetes, make):
    X, y = diabetes
    est = make().set_params(random_state=0)
    assert _fit(est, X, y) == []
    if est.label_bound == (100, 400):
        assert 0 < fit_diagnostics(est)["n_labels_clipped"] < len(y) / 2  # the threshold is what is tested


def test_a_classifier_row_bound_warns_too():
    rng = np.random.RandomState(0)
    X = rng.randn(400, 3) * 10
    (message,) = _fit(DPLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0), X, (X[:, 0] > 0) * 1)
    assert "data_norm=1.0" in message and "rows" in message
