"""fit_diagnostics and the fitted models users publish: no exact statistic of the data on a released model;
diagnostics of pipelines and refits.
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone, is_regressor
from sklearn.pipeline import make_pipeline

from skdp import (DPLasso, DPLogisticRegression, DPMinMaxScaler, DPRidge, DPSparseLinearRegression,
                  DPStandardScaler, fit_diagnostics)


# ----------------------------------------------------------------------------- 6. private fitted models
_LEAKY_NAMES = ("clipped", "kkt", "residual")


def _released(est):
    """Everything a pickled model carries: fitted attributes and solver_info_ keys."""
    state = pickle.loads(pickle.dumps(est)).__dict__
    keys = list(state) + [f"solver_info_.{k}" for k in state.get("solver_info_", {})]
    return keys, pickle.dumps(est)


@pytest.mark.parametrize("make", [
    lambda: DPLogisticRegression(data_norm=0.5, classes=[0, 1], solver="obj_pert"),
    lambda: DPRidge(data_norm=0.5, label_bound=0.5),
    lambda: DPLasso(label_bound=0.5, feature_bound=0.5),
    lambda: DPSparseLinearRegression(label_bound=0.5, feature_bound=0.5, n_nonzero_coefs=2),
    lambda: DPStandardScaler(bounds=(-1.0, 1.0)),
    lambda: DPMinMaxScaler(bounds=(-1.0, 1.0)),
], ids=["logistic-obj_pert", "ridge", "lasso", "sparse", "standard_scaler", "minmax_scaler"])
def test_a_published_model_carries_no_exact_statistics(tabular, make):
    """Before: n_rows_clipped_ told an attacker, with certainty, whether the replaced row was
    outside the bound (0 vs 1). Now no such attribute travels with the model."""
    X, y = tabular
    est = make()
    a = est.fit(X, X[:, 0] + 0.1 * y if is_regressor(est) else y)
    keys, blob = _released(a)
    assert not [k for k in keys if any(s in k for s in _LEAKY_NAMES)], keys
    # the data holder still has them, in this process only
    diag = fit_diagnostics(a)
    assert diag["n_rows_clipped"] > 0
    assert fit_diagnostics(pickle.loads(blob)) == {}
    assert fit_diagnostics(clone(a)) == {}


def test_diagnostics_of_a_pipeline_and_a_refit(tabular):
    X, y = tabular
    pipe = make_pipeline(DPStandardScaler(bounds=(-1.0, 1.0)),
                         DPLogisticRegression(data_norm=0.5, classes=[0, 1])).fit(X, y)
    d = fit_diagnostics(pipe)
    assert set(d) == {"dpstandardscaler", "dplogisticregression"}
    assert d["dpstandardscaler"]["n_rows_clipped"] == int(np.sum(np.any(np.abs(X) > 1, axis=1)))
    est = pipe[-1]
    est.set_params(data_norm=100.0).fit(X, y)  # a refit replaces the previous diagnostics
    assert fit_diagnostics(est)["n_rows_clipped"] == 0
