"""The sparse estimators (DPSparseLinearRegression, DPSparseLogisticRegression): sparsity, budgets, events,
inputs and defaults (their solvers: test_solvers_sparse.py).
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from skdp import DPSparseLinearRegression, DPSparseLogisticRegression, PrivacyLeakWarning
from skdp.datasets import make_sparse_classification, make_sparse_regression
from skdp.privacy import price
from skdp.solvers import list_solvers

SPARSE_SOLVERS = ["dp_ight", "dpsl_kt", "dp_fw_l1", "two_stage"]


# -- estimators -----------------------------------------------------------------------------
@pytest.mark.parametrize("solver", SPARSE_SOLVERS)
@pytest.mark.parametrize("s", [1, 3, 7])
def test_sparsity_and_budget_every_solver(solver, s):
    X, y, _ = make_sparse_regression(600, 25, 3, random_state=s)
    for Xin in (X, sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))):
        est = DPSparseLinearRegression(epsilon=1.0, n_nonzero_coefs=s, solver=solver, label_bound=4.0,
                                       random_state=0).fit(Xin, y)
        assert np.count_nonzero(est.coef_) <= s
        assert set(est.support_) == set(np.flatnonzero(est.coef_))
        assert est.privacy_spent_.epsilon <= 1.0 + 1e-9 and est.privacy_spent_.delta <= 1e-5
        assert np.isfinite(est.predict(Xin)).all()
    Xc, yc, _ = make_sparse_classification(600, 25, 3, random_state=s)
    clf = DPSparseLogisticRegression(epsilon=1.0, n_nonzero_coefs=s, solver=solver, classes=[0, 1],
                                     random_state=0).fit(Xc, yc)
    assert np.count_nonzero(clf.coef_) <= s
    assert clf.privacy_spent_.epsilon <= 1.0 + 1e-9


def test_reproducible_and_fresh_entropy():
    X, y, _ = make_sparse_regression(500, 20, 2, random_state=0)
    a = DPSparseLinearRegression(n_nonzero_coefs=2, random_state=7).fit(X, y).coef_
    b = DPSparseLinearRegression(n_nonzero_coefs=2, random_state=7).fit(X, y).coef_
    c = DPSparseLinearRegression(n_nonzero_coefs=2).fit(X, y).coef_
    d = DPSparseLinearRegression(n_nonzero_coefs=2).fit(X, y).coef_
    assert np.array_equal(a, b)
    assert not np.array_equal(c, d)


def test_logistic_labels_pm1_equal_01():
    X, y, _ = make_sparse_classification(800, 20, 3, random_state=0)
    a = DPSparseLogisticRegression(n_nonzero_coefs=3, classes=[0, 1], random_state=0).fit(X, y)
    b = DPSparseLogisticRegression(n_nonzero_coefs=3, classes=[-1, 1], random_state=0).fit(X, 2 * y - 1)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_bad_input_and_unproven_modes():
    X, y, _ = make_sparse_classification(200, 10, 2, random_state=0)
    # more than two classes are fitted one-vs-rest (tests/test_ovr.py); a label set read from the data still warns
    assert DPSparseLogisticRegression(classes=[0, 1, 2], random_state=0).fit(X, y).coef_.shape == (3, 10)
    with pytest.warns(PrivacyLeakWarning):
        DPSparseLogisticRegression(classes=None, random_state=0).fit(X, np.arange(200) % 3)
    with pytest.raises(ValueError, match="solver_options"):
        DPSparseLogisticRegression(classes=[0, 1], solver_options={"teacher": "paper"}).fit(X, y)
    with pytest.raises(ValueError, match="pure-epsilon"):
        DPSparseLogisticRegression(classes=[0, 1], delta=0.0).fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        DPSparseLogisticRegression(solver="ight").fit(X, y)
    with pytest.raises(ValueError, match="epsilon"):
        DPSparseLinearRegression(epsilon=float("inf")).fit(X, y)
    with pytest.raises(ValueError, match="feature_bound"):
        DPSparseLinearRegression(feature_bound=-1.0).fit(X, y)
    with pytest.warns(PrivacyLeakWarning):
        est = DPSparseLogisticRegression(classes=None, random_state=0).fit(X, y)
    assert est.privacy_spent_.epsilon == math.inf
    X0 = X.copy()
    DPSparseLinearRegression(feature_bound=0.2, label_bound=4.0, random_state=0).fit(X, y.astype(float))
    assert np.array_equal(X, X0)  # caller's array untouched


def test_pure_dp_frank_wolfe_and_solver_table():
    X, y, _ = make_sparse_regression(500, 20, 2, random_state=0)
    est = DPSparseLinearRegression(epsilon=1.0, delta=0.0, solver="dp_fw_l1", random_state=0).fit(X, y)
    assert est.privacy_spent_.delta == 0 and est.privacy_spent_.epsilon <= 1.0 + 1e-9
    rows = {r["solver"]: r for r in list_solvers()}
    assert all(rows[s]["constraint"] == "l0" for s in SPARSE_SOLVERS)
    assert "ight" not in rows  # the non-private reference is not a solver


def test_planned_events_match_fit_and_ledger(tmp_path):
    from skdp import PrivacyLedger

    X, y, _ = make_sparse_regression(700, 30, 3, random_state=0)
    for solver in SPARSE_SOLVERS:
        est = DPSparseLinearRegression(epsilon=1.0, solver=solver, label_bound=4.0, random_state=0)
        planned = est.planned_events(700, 30)
        est.fit(X, y)
        assert price(planned, 1e-5).budget.epsilon == pytest.approx(est.privacy_spent_.epsilon, rel=1e-9)
    ledger = PrivacyLedger(1.2, 1e-4, path=tmp_path / "l.json")
    DPSparseLinearRegression(epsilon=1.0, random_state=0).fit(X, y, privacy_ledger=ledger)
    from skdp import BudgetExceededError

    with pytest.raises(BudgetExceededError):
        DPSparseLinearRegression(epsilon=1.0, random_state=0).fit(X, y, privacy_ledger=ledger)


def test_private_search_over_sparsity_level():
    from skdp.model_selection import DPGridSearchCV

    X, y, truth = make_sparse_regression(3000, 40, 4, random_state=0)
    search = DPGridSearchCV(DPSparseLinearRegression(label_bound=4.0, random_state=0), {"n_nonzero_coefs": [2, 4, 8]},
                            epsilon=2.0, delta=1e-5, random_state=0).fit(X, y)
    assert search.privacy_spent_.epsilon <= 2.0 + 1e-9
    assert np.count_nonzero(search.best_estimator_.coef_) <= search.best_params_["n_nonzero_coefs"]


def test_more_nonzero_coefficients_than_features_is_refused():
    X, y = np.zeros((20, 5)), np.zeros(20)
    with pytest.raises(ValueError, match=r"n_nonzero_coefs=6 is more than the number of features \(5\)"):
        DPSparseLinearRegression(n_nonzero_coefs=6, label_bound=1.0).fit(X, y)
    DPSparseLinearRegression(n_nonzero_coefs=5, label_bound=1.0, random_state=0).fit(X, y)


def test_sparse_regressor_defaults_do_not_degrade_with_epsilon():
    """Issue 18 at defaults on diabetes (StandardScaler on the training split, 70/30): the mean test R^2 at
    epsilon = 100 is not below the one at 5, and the support is bmi or s5 (the best single features).
    With uncentred labels and a clip fixed at the 0.25 gradient-norm quantile, the first IHT support was
    chosen by mean(y) mean(x_j) and kept once the noise was small: s3 in 5 or 6 of these 6 fits, R^2 0.04 at
    epsilon = 100 against 0.10 at 5 (measured on the code before label_bound="auto"; now 0.19 and 0.19)."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(return_X_y=True)
    scores, supports = {5.0: [], 100.0: []}, []
    for seed in range(6):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        for eps in scores:
            reg = DPSparseLinearRegression(epsilon=eps, random_state=seed).fit(Xtr, ytr)
            assert reg.privacy_spent_.epsilon <= eps * (1 + 1e-9)
            scores[eps].append(reg.score(Xte, yte))
            if eps == 100.0:
                supports.append(int(reg.support_[0]))
    assert set(supports) <= {2, 8}, supports
    assert np.mean(scores[100.0]) >= 0.16  # 0.17 to 0.19 by the random draws of these 6 fits; 0.24 over 20 splits
    assert np.mean(scores[100.0]) >= np.mean(scores[5.0]) - 0.03
