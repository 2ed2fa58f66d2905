"""The solver registry: every registered solver is listed, learns, runs within its budget through the estimators,
and a refused solver names those that fit.
"""

import pytest

from skdp import DPLogisticRegression, DPRidge, list_solvers
from skdp.solvers import get_solver

from ._helpers import CORE_SOLVERS, make_clf, make_reg


# ------------------------------------------------------------------ utility & determinism
@pytest.mark.parametrize("solver", CORE_SOLVERS)
def test_learns_something(clf_data, reg_data, solver):
    X, y = clf_data
    est = make_clf(epsilon=5.0, solver=solver, alpha=0.01 if solver != "output_pert" else 0.1)
    assert est.fit(X, y).score(X, y) > 0.8
    Xr, yr = reg_data
    # obj_pert's squared-loss bound K (K M + B) needs a tight public coefficient ball
    assert make_reg(epsilon=10.0, solver=solver, coef_norm=2.0).fit(Xr, yr).score(Xr, yr) > 0.3


def test_list_solvers():
    rows = {r["solver"]: r for r in list_solvers()}
    assert set(CORE_SOLVERS) <= set(rows)
    assert rows["output_pert"]["pure_dp"] and not rows["dp_gd"]["pure_dp"]


NEW = ["noisy_sfw", "noisy_sfw_lp", "dp_accmd", "phased_sgd", "noisy_sgd", "dp_svrg_pp", "obj_pert_svrg"]


# ------------------------------------------------------------------------------------------
# estimators (breast_cancer, diabetes: standardised, fixtures of conftest.py)
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", NEW)
def test_logistic_runs_every_solver_within_budget(solver, breast_cancer):
    X, y = breast_cancer
    for eps in (0.1, 1.0, 5.0):
        clf = DPLogisticRegression(epsilon=eps, solver=solver, data_norm=6.0, classes=[0, 1], random_state=0)
        clf.fit(X, y)
        assert clf.privacy_spent_.epsilon <= eps * (1 + 1e-9)
        assert clf.privacy_spent_.delta <= 1e-5
        assert clf.planned_events(X.shape[0], X.shape[1]) == clf.privacy_events_


@pytest.mark.parametrize("solver", [s for s in NEW if s != "obj_pert_svrg"])
def test_ridge_runs_every_solver_within_budget(solver, diabetes):
    X, y = diabetes
    for eps in (0.1, 2.0):
        reg = DPRidge(epsilon=eps, solver=solver, data_norm=5.0, label_bound=(25, 346), random_state=0)
        reg.fit(X, y)
        assert reg.privacy_spent_.epsilon <= eps * (1 + 1e-9)
        assert reg.planned_events(X.shape[0], X.shape[1]) == reg.privacy_events_


def test_refusals_list_the_solvers_that_fit(breast_cancer):
    X, y = breast_cancer
    # a solver whose proof the estimator's loss does not meet is refused by parameter validation,
    # which lists the solvers that fit
    with pytest.raises(ValueError, match="'solver' parameter of DPRidge must be a str among .*'dp_gd'"):
        DPRidge(solver="obj_pert_svrg", data_norm=5.0, label_bound=1.0).fit(X, y)
    with pytest.raises(ValueError, match="does not support the squared loss: its proof needs a gradient bounded.*"
                                         "solvers that do"):
        get_solver("obj_pert_svrg").check("squared", 1e-5)
    with pytest.raises(ValueError, match="multinomial"):
        DPLogisticRegression(solver="noisy_sfw", data_norm=5.0, classes=[0, 1, 2]).fit(X, y % 3)
    with pytest.raises(ValueError, match="coef_norm"):
        DPLogisticRegression(solver="noisy_sgd", alpha=0.0, data_norm=5.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="solver_options"):
        DPLogisticRegression(solver="noisy_sfw", solver_options={"p": 1.5}, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match=r"\(1, 2\]"):
        DPLogisticRegression(solver="noisy_sfw_lp", solver_options={"p": 3}, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="delta"):
        DPLogisticRegression(solver="noisy_sfw", delta=0.0, data_norm=5.0, classes=[0, 1]).fit(X, y)


def test_solver_table_lists_every_solver():
    rows = {r["solver"]: r for r in list_solvers()}
    for name in NEW + ["nsgd_moreau"]:
        assert rows[name]["source"] and rows[name]["defaults"] and rows[name]["privacy"]
    assert rows["noisy_sfw"]["constraint"] == "l1"
    assert rows["nsgd_moreau"]["losses"] == ("hinge",)
