"""One plan per fit: every estimator builds its FitPlan once, and the ledger's charge and the fit share it.

The counts come from the interpreter's profile hook (``sys.setprofile``), so
they see every call, whoever makes it: ``make_plan`` (the fit plan) must run
once per fit, with and without a ledger, and a solver's own ``make_plan``
runs once outside the budget search (the search's probes price candidate
budgets; they are counted apart and must be the same with a ledger).
"""

import sys
import warnings

import numpy as np
import pytest

from skdp import (DPLasso, DPLinearSVC, DPLogisticRegression, DPMinMaxScaler, DPOneHotEncoder, DPRidge,
                  DPSimpleImputer, DPSparseLinearRegression, DPSparseLogisticRegression, DPStandardScaler,
                  PrivacyLedger)
from skdp.distributed import MultiPartyDPLogisticRegression

SEARCHES = {"plan_after", "ovr_budget", "largest_budget"}


def _counts(fit):
    """``(fit plans, solver plans outside a search, solver plans inside one)`` made while ``fit()`` runs."""
    counts = {"fit": 0, "solver": 0, "probe": 0}
    depth = [0]

    def hook(frame, event, arg):
        code = frame.f_code
        if "skdp" not in code.co_filename:
            return
        if event == "call":
            if code.co_name in SEARCHES:
                depth[0] += 1
            elif code.co_name == "make_plan":
                if code.co_filename.endswith("_plan.py"):
                    counts["fit"] += 1
                elif depth[0]:
                    counts["probe"] += 1
                elif frame.f_back is None or frame.f_back.f_code.co_name != "make_plan":  # not a wrapper's inner plan
                    counts["solver"] += 1
        elif event == "return" and code.co_name in SEARCHES:
            depth[0] -= 1

    sys.setprofile(hook)
    try:
        fit()
    finally:
        sys.setprofile(None)
    return counts


rng = np.random.RandomState(0)
X = rng.randn(1500, 6) / 2
y2 = (X[:, 0] + 0.3 * rng.randn(1500) > 0).astype(int)
y3 = np.where(rng.rand(1500) < 0.4, 2, y2)
yr = X @ rng.randn(6) + 0.1 * rng.randn(1500)

CASES = {
    "logistic_default": (lambda: DPLogisticRegression(1.0, random_state=0), X, y2),
    "logistic_public_bounds": (lambda: DPLogisticRegression(1.0, data_norm=2.0, classes=[0, 1], random_state=0),
                               X, y2),
    "logistic_multinomial_auto": (lambda: DPLogisticRegression(2.0, random_state=0), X, y3),
    "ridge_default": (lambda: DPRidge(1.0, random_state=0), X, yr),
    "ridge_public_bounds": (lambda: DPRidge(1.0, data_norm=2.0, label_bound=3.0, random_state=0), X, yr),
    "ridge_two_targets": (lambda: DPRidge(1.0, random_state=0), X, np.column_stack([yr, -yr])),
    "svc_three_public_classes": (lambda: DPLinearSVC(1.0, classes=[0, 1, 2], data_norm=2.0, random_state=0), X, y3),
    "svc_auto_classes": (lambda: DPLinearSVC(1.0, random_state=0), X, y3),
    "lasso": (lambda: DPLasso(1.0, random_state=0), X, yr),
    "sparse_regression": (lambda: DPSparseLinearRegression(1.0, random_state=0), X, yr),
    "sparse_logistic": (lambda: DPSparseLogisticRegression(1.0, random_state=0), X, y2),
    "sparse_logistic_ovr": (lambda: DPSparseLogisticRegression(1.0, classes=[0, 1, 2], random_state=0), X, y3),
    "multi_party": (lambda: MultiPartyDPLogisticRegression(1.0, data_norm=2.0, classes=[0, 1], random_state=0),
                    X, y2),
    "standard_scaler": (lambda: DPStandardScaler(1.0, random_state=0), X, None),
    "min_max_scaler": (lambda: DPMinMaxScaler(1.0, bounds="auto", random_state=0), X, None),
    "one_hot_encoder": (lambda: DPOneHotEncoder(epsilon=1.0, random_state=0), np.round(X[:, :2]), None),
    "simple_imputer": (lambda: DPSimpleImputer(strategy="mean", epsilon=1.0, bounds=(-3.0, 3.0), random_state=0),
                       np.where(rng.rand(*X.shape) < 0.05, np.nan, X), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_fit_plan_per_fit_with_and_without_a_ledger(case):
    make, Xc, yc = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = _counts(lambda: make().fit(Xc, yc))
        ledger = PrivacyLedger(100.0, 1e-2)
        charged = _counts(lambda: make().fit(Xc, yc, privacy_ledger=ledger))
    assert alone["fit"] == 1 and charged["fit"] == 1, (alone, charged)
    # a solver's own plan is made at most once outside the budget search (none for the multi-party protocol);
    # the ledger's charge needs the plan's events before the data is read, which takes one more solver plan
    # only where the fit then plans again on a bound chosen during the fit (the events price the same)
    assert alone["solver"] <= 1, alone
    assert charged["solver"] <= alone["solver"] + 1, (charged, alone)
    if charged["solver"] == alone["solver"]:
        assert charged["probe"] == alone["probe"], (charged, alone)
    assert ledger.n_fits == 1


#: what skdp._fit.private_fit calls, in this order, in every fit
PROTOCOL_STEPS = ["_plan_fit", "charge", "_read", "fit_randomness", "_select_bounds", "_run", "release", "_set_fitted"]


def _protocol_calls(fit):
    """``(calls of private_fit, the protocol steps it called in order)`` while ``fit()`` runs."""
    seen = {"private_fit": 0, "steps": []}

    def hook(frame, event, arg):
        if event != "call":
            return
        code, back = frame.f_code, frame.f_back
        if code.co_name == "private_fit" and code.co_filename.endswith("_fit.py"):
            seen["private_fit"] += 1
        elif (back is not None and back.f_code.co_name == "private_fit" and back.f_code.co_filename.endswith("_fit.py")
              and code.co_name in PROTOCOL_STEPS):
            seen["steps"].append(code.co_name)

    sys.setprofile(hook)
    try:
        fit()
    finally:
        sys.setprofile(None)
    return seen


def _dask_cases():
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    dask.config.set(scheduler="synchronous")
    Xd = da.from_array(X, chunks=(500, X.shape[1]))
    return {
        "dask_logistic": (lambda: DPLogisticRegression(1.0, random_state=0), Xd, y2),
        "dask_ridge": (lambda: DPRidge(1.0, random_state=0), Xd, yr),
        "dask_standard_scaler": (lambda: DPStandardScaler(1.0, random_state=0), Xd, None),
        "dask_multi_party": (lambda: MultiPartyDPLogisticRegression(1.0, data_norm=2.0, classes=[0, 1],
                                                                    random_state=0), Xd, y2),
    }


@pytest.mark.parametrize("case", sorted(CASES) + ["dask_logistic", "dask_ridge", "dask_standard_scaler",
                                                  "dask_multi_party"])
def test_every_fit_runs_the_one_protocol_in_order(case):
    """Every estimator's fit (in memory and on Dask, with and without a ledger) is one call of
    ``skdp._fit.private_fit``, which plans, charges, reads, selects the bounds, runs, releases and sets the model,
    in that order, each step once."""
    make, Xc, yc = (_dask_cases() if case.startswith("dask_") else CASES)[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ledger in (False, True):
            def fit():
                return make().fit(Xc, yc, **({"privacy_ledger": PrivacyLedger(100.0, 1e-2)} if ledger else {}))

            seen = _protocol_calls(fit)
            assert seen["private_fit"] == 1, (case, seen)
            assert seen["steps"] == PROTOCOL_STEPS, (case, seen)
            assert _counts(fit)["fit"] == 1, case


def test_planned_events_are_the_fit_plans_events():
    """``planned_events`` and the ledger's charge read the same plan as the fit: the events released equal the
    events planned (public bounds: no bound is chosen during the fit, so no noise scale follows one)."""
    est = DPLogisticRegression(1.0, data_norm=2.0, classes=[0, 1], random_state=0)
    planned = est.planned_events(*X.shape)
    ledger = PrivacyLedger(10.0, 1e-3)
    est.fit(X, y2, privacy_ledger=ledger)
    assert repr(est.privacy_events_) == repr(planned)


@pytest.mark.parametrize("epsilon", [0.1, 0.3, 1.0, 3.0])
def test_a_fit_never_spends_more_than_its_epsilon(epsilon):
    """The budget search runs once, on the plan's data-free view (a unit row bound where the bound is chosen in
    the fit); the fit's events at the chosen bound must still price at or below epsilon, not a rounding above."""
    rng = np.random.RandomState(1)
    for n in (300, 1000, 3000):
        Xn = rng.randn(n, 5)
        yn = (Xn[:, 0] > 0).astype(int)
        for est, target in [(DPLogisticRegression(epsilon, random_state=0), yn),
                            (DPLogisticRegression(epsilon, solver="dp_svrg", random_state=0), yn),
                            (DPLogisticRegression(epsilon, classes=[0, 1], random_state=0), yn),
                            (DPRidge(epsilon, random_state=0), Xn[:, 0])]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    est.fit(Xn, target)
                except ValueError:  # a regressor refuses where its private bounds cannot be reliable
                    continue
            assert est.privacy_spent_.epsilon <= epsilon, (n, est)


def _solvers_for(loss):
    from skdp import list_solvers

    return [r["solver"] for r in list_solvers() if loss in r["losses"] and r["constraint"] != "l0"]


@pytest.mark.parametrize("solver", _solvers_for("logistic"))
def test_with_public_bounds_the_fit_releases_exactly_its_planned_events(solver):
    """Public bounds: the fit runs the plan's own solver plan (its public view is the planned one), so what it
    releases is the plan, value for value, with and without a ledger."""
    kw = dict(data_norm=2.0, classes=[0, 1], random_state=0, solver=solver)
    if solver in ("noisy_sfw", "noisy_sfw_lp", "dp_accmd"):
        kw["coef_norm"] = 5.0
    est = DPLogisticRegression(1.0, **kw)
    planned = est.planned_events(*X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y2)
        assert est.privacy_events_ == planned
        est.fit(X, y2, privacy_ledger=PrivacyLedger(10.0, 1e-3))
    assert est.privacy_events_ == planned


def test_a_solver_plan_is_reused_only_for_the_very_view_it_was_made_on():
    """The fit reuses the plan's solver plan only when the problem's public view equals the planned one in every
    field: a row bound, a penalty or a width that differs at all makes the fit plan again."""
    import dataclasses

    from skdp._plan import PublicFit, make_plan, same_public_view
    from skdp.penalties import L2Penalty

    plan = make_plan(DPLogisticRegression(1.0, data_norm=2.0, classes=[0, 1]), PublicFit(*X.shape))
    view = plan.view
    assert same_public_view(view, dataclasses.replace(view))
    for change in (dict(data_norm=view.data_norm * (1 + 1e-15)), dict(n_features=view.n_features + 1),
                   dict(penalty=L2Penalty(view.penalty.alpha * 2)), dict(max_sample_weight=0.5),
                   dict(options={"curvature": True})):
        other = dataclasses.replace(view, **change)
        assert not same_public_view(other, view), change
        assert plan.solver_plan_for(plan.solver, other) is not plan.solver_plan_for(plan.solver, view), change


def test_the_scalers_never_spend_more_than_their_epsilon():
    """The scaler's two Gaussian releases are calibrated as unit events but released with their own sensitivities,
    a rounding apart: the calibration aims below epsilon so the reported price never lands a rounding above."""
    rng = np.random.RandomState(2)
    for n, d in ((2000, 4), (2000, 10), (500, 3)):
        Xn = rng.randn(n, d)
        for epsilon in (0.3, 1.0, 10.0):
            for bounds in ((-4.0, 4.0), "auto"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = DPStandardScaler(epsilon, bounds=bounds, random_state=0).fit(Xn)
                assert est.privacy_spent_.epsilon <= epsilon, (n, d, epsilon, bounds)


def test_the_ledger_never_records_less_than_the_fit_ran():
    """A fit whose bound is chosen during the fit runs events a rounding away from its plan; priced at the ledger's
    own delta they may cost a hair more than the charge: the record is then the events that ran."""
    from skdp.privacy import price

    rng = np.random.RandomState(0)
    for n, epsilon, seed in [(n, e, s) for n in (50, 300) for e in (3.0, 10.0) for s in range(4)]:
        Xn = rng.randn(n, 4) * np.logspace(-2, 3, 4)
        yn = Xn @ np.ones(4) / 100 + rng.randn(n)
        ledger = PrivacyLedger(1e9, 1e-3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est = DPRidge(epsilon, random_state=seed).fit(Xn, yn, privacy_ledger=ledger)
            except ValueError:  # too few rows for private bounds at this epsilon: refused, nothing charged
                assert ledger.n_fits == 0
                continue
        assert ledger.spent().epsilon >= price(est.privacy_events_, 1e-3).budget.epsilon, (n, epsilon, seed)
