"""Every fitted output depends on the private rows only through the fit's noisy releases (issue 32, item 6a).

The attack: fit world A (a dataset) and world B (a replace-one neighbour: one row moved as far as the bounds
allow, or far past them where the bounds are estimated) with the same seed, world B **replaying world A's noisy
releases** (:func:`skdp.privacy.mechanisms.record_draws` with ``replay``, the tool of
:func:`skdp.audit.audit_events`: every noisy value B releases is A's, every selection is A's). Post-processing of
the releases is then identical in both worlds, so everything the fitted model holds (``vars(est)``: coefficients,
solver_info_ with all its entries, step sizes, n_iter_, noise scales, estimated bounds, events, the price, a
scaler's statistics, any private attribute), compared recursively, must be identical; no attribute is exempt.
One that differs was computed from the rows beside the noise: an exact statistic published (e.g. a step size set
by the exact curvature while the noisy one was drawn and priced), which neither the event audit (draws and
events match) nor the canary audits (they score only the coefficients) can see.

A draw that is not added to a visible value (objective perturbation: obj_pert, two_stage's second stage) cannot
be replayed; there world B's noise is solved for (:func:`skdp.audit._invert_objectives`, Newton's method) so that
it releases world A's coefficients, and the other outputs are compared to the inversion's tolerance.
"""

import dataclasses
import math

import numpy as np
import pytest
from sklearn.base import clone, is_classifier

from skdp import (DPLasso, DPLinearSVC, DPLogisticRegression, DPMinMaxScaler, DPRidge, DPSimpleImputer,
                  DPSparseLinearRegression, DPSparseLogisticRegression, DPStandardScaler)
from skdp import audit as _audit
from skdp.audit import _fit_recorded, _invert_objectives, _replay_of, _solver_cases
from skdp.distributed import MultiPartyDPLogisticRegression
from skdp.solvers import SOLVERS

SEED = 7
#: relative tolerance where world B's objective-perturbation noise is solved for (skdp.audit._INVERT_TOL is the
#: relative residual the inversion guarantees on the coefficients; the other outputs follow them)
INVERTED_RTOL = 1e-5
#: per solver: options on top of skdp.audit._solver_cases' setting, so that the data-dependent paths run
OVERRIDES = {
    # the private curvature release that sets the FISTA step (forced: the short fixed schedule would skip it)
    "dp_gd": {"solver_options": {"curvature": True}},
    # a radius that keeps the second stage's minimiser inside the ball, so its noise can be solved for
    "two_stage": {"solver_options": {"n_blocks": 4, "coef_norm": 30.0}},
}
#: per solver: rows of the two worlds where 60 would not reach the path that reads a release (default 60, where
#: adassp's ridge term is positive; dp_gd's released curvature needs about 200 rows to set a step below the
#: worst case's cap). test_the_settings_reach_the_steps_set_by_a_release pins both.
ROWS = {"dp_gd": 200}


# ------------------------------------------------------------------------------------------
# the comparison: every fitted attribute, recursively
# ------------------------------------------------------------------------------------------
def _outputs(est):
    """Everything the fitted model holds: its fitted attributes (``coef_``, ``solver_info_``, ...), any private
    one (pickled with the model) and its parameters (the same in both worlds)."""
    return vars(est)


def _differences(a, b, path, rtol, out):
    """Append to ``out`` the paths where ``a`` and ``b`` differ (exactly, or beyond ``rtol`` for floats)."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            out.append(f"{path}: {type(a).__name__} vs {type(b).__name__}")
            return
        for f in dataclasses.fields(a):
            _differences(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}", rtol, out)
    elif isinstance(a, dict):
        if not isinstance(b, dict) or set(a) != set(b):
            out.append(f"{path}: keys {sorted(map(str, a))} vs {sorted(map(str, b)) if isinstance(b, dict) else b}")
            return
        for k in a:
            _differences(a[k], b[k], f"{path}[{k!r}]", rtol, out)
    elif isinstance(a, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            out.append(f"{path}: {type(a).__name__} of {len(a)} vs {type(b).__name__}")
            return
        for i, (u, v) in enumerate(zip(a, b)):
            _differences(u, v, f"{path}[{i}]", rtol, out)
    elif isinstance(a, (np.ndarray, np.generic, float, int)) and not isinstance(a, bool):
        u, v = np.asarray(a), np.asarray(b)
        if u.shape != v.shape or u.dtype.kind != v.dtype.kind:
            out.append(f"{path}: {u.dtype}{u.shape} vs {v.dtype}{v.shape}")
        elif u.dtype.kind in "fc" and rtol:
            if not np.allclose(u, v, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(u), initial=0.0)))):
                out.append(path)
        elif not np.array_equal(u, v, equal_nan=u.dtype.kind in "fc"):
            out.append(path)
    elif hasattr(a, "__dict__") and not callable(a):  # a sub-estimator or a plain record
        if type(a) is not type(b):
            out.append(f"{path}: {type(a).__name__} vs {type(b).__name__}")
            return
        _differences(vars(a), vars(b), path, rtol, out)
    elif a != b:
        out.append(path)


def _assert_same_outputs(model_a, model_b, rtol=0.0):
    out_a, out_b = _outputs(model_a), _outputs(model_b)
    assert set(out_a) == set(out_b), (sorted(out_a), sorted(out_b))
    assert {"privacy_events_", "privacy_spent_"} <= set(out_a)  # the comparison reaches the fitted state
    diffs = []
    for name in sorted(out_a):
        _differences(out_a[name], out_b[name], name, rtol, diffs)
    # names only: the values are exact statistics of the two datasets
    assert not diffs, f"{type(model_a).__name__}: outputs that depend on the rows beside the releases: {diffs}"


def test_the_comparison_sees_every_kind_of_difference():
    """The comparison itself can fail: one differing leaf anywhere in a fitted attribute is reported."""

    @dataclasses.dataclass
    class Event:
        sigma: float

    class Fitted:
        pass

    def make():
        m = Fitted()
        m.coef_, m.privacy_events_, m.privacy_spent_ = np.array([1.0, 2.0]), [Event(1.0)], (1.0, 1e-5)
        m.solver_info_, m.n_iter_ = {"step": 0.5, "inner": {"ridge": [3.0]}}, np.array([4], dtype=np.int32)
        m.accountant_, m._private = Fitted(), 1.0
        m.accountant_.eps_ = 2.0
        return m

    _assert_same_outputs(make(), make())
    for mutate in (lambda m: m.coef_.__setitem__(1, 2.0 + 1e-15),
                   lambda m: m.privacy_events_[0].__setattr__("sigma", 1.1),
                   lambda m: m.solver_info_["inner"]["ridge"].__setitem__(0, 3.5),
                   lambda m: m.solver_info_.__setitem__("extra", 1),
                   lambda m: setattr(m, "n_iter_", np.array([5], dtype=np.int32)),
                   lambda m: setattr(m.accountant_, "eps_", 2.5),
                   lambda m: setattr(m, "privacy_spent_", (1.0, 2e-5))):
        b = make()
        mutate(b)
        with pytest.raises(AssertionError, match="depend on the rows"):
            _assert_same_outputs(make(), b)
    b = make()
    b._private = 2.0  # a private attribute is published too (pickled with the model)
    with pytest.raises(AssertionError, match="depend on the rows"):
        _assert_same_outputs(make(), b)


# ------------------------------------------------------------------------------------------
# the two worlds
# ------------------------------------------------------------------------------------------
def _worlds(task, n=60, d=2, far=1.0, classes=2, row=0, scale=None):
    """World A: ``n`` rows of norm at most 0.9; world B: row ``row`` replaced by one of norm ``far`` pointing the
    other way, with the opposite label (regression: label ``-far * sign``; classification: the next class).
    ``scale``: the columns' scales (raw, unstandardised features), applied to both worlds."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-1.0, 1.0, (n, d))
    X *= 0.9 / np.maximum(np.linalg.norm(X, axis=1), 0.9)[:, None]
    if scale is not None:
        X *= np.asarray(scale, dtype=float)
    if task == "reg":
        y = np.clip(X @ np.linspace(0.8, -0.5, d) + 0.1 * rng.randn(n), -1.0, 1.0)
        new_label = -far * math.copysign(1.0, y[row])
    else:
        y = (np.digitize(X[:, 0], np.linspace(-0.9, 0.9, classes + 1)[1:-1])).astype(int)
        new_label = (y[row] + 1) % classes
    Xb, yb = X.copy(), y.copy()
    Xb[row] = -far * X[row] / np.linalg.norm(X[row])
    yb[row] = new_label
    return (X, y), (Xb, yb)


def _weights(n, row=None):
    """Sample weights in [0.2, 1] of world A, or of world B (``row``'s weight ``w`` replaced by ``1.2 - w``)."""
    w = np.random.RandomState(1).uniform(0.2, 1.0, n)
    if row is not None:
        w[row] = 1.2 - w[row]
    return w


def _hidden(draws):
    """Draws whose noise is not added to a visible value (objective perturbation): replay cannot fix them."""
    return [t for t, d in enumerate(draws) if d.kind not in ("gumbel", "exponential") and "query" not in d.audit]


def _fit_inverted(est, Xb, yb, draws_a, model_a, replay, fit_params):
    """World B with its hidden noises solved for (skdp.audit._invert_objectives) so that it releases world A's
    value: that fit, and whether B needed another noise. The inversion's last fit is at the solution."""
    last = []

    def recording(*args, **kwargs):
        last[:] = [_fit_recorded(*args, **kwargs)]
        return last[0]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_audit, "_fit_recorded", recording)
        solved = _invert_objectives(est, Xb, yb, SEED, 1.0, replay, _hidden(draws_a), draws_a, model_a, fit_params)
    assert solved is not None, "the objective perturbation's noise could not be solved for (minimiser on a bound?)"
    return last[0][0], max(solved[0]) > 0


def _check(est, task, weighted=False, **world):
    """World A, and world B with the same seed and world A's releases replayed (hidden noises solved for); every
    output must be the same. Rows 0, 1, ... are replaced in turn until one reaches a release (its noiseless
    values differ between the worlds): a subsampled solver reads only some rows, and a neighbour whose row
    it never reads would prove nothing. ``weighted``: the rows carry sample weights in [0.2, 1] and the
    replaced row's weight changes too."""
    (Xa, ya), _ = _worlds(task, **world)
    params_a = {"sample_weight": _weights(len(ya))} if weighted else None
    model_a, draws_a = _fit_recorded(est, Xa, ya, SEED, 1.0, None, params_a)
    replay = _replay_of(draws_a)
    assert draws_a
    for row in range(min(len(ya), 40)):
        _, (Xb, yb) = _worlds(task, row=row, **world)
        params_b = {"sample_weight": _weights(len(yb), row)} if weighted else None
        model_b, draws_b = _fit_recorded(est, Xb, yb, SEED, 1.0, replay, params_b)
        assert [d.kind for d in draws_a] == [d.kind for d in draws_b]
        reached = False
        for a, b in zip(draws_a, draws_b):
            if "released" in a.audit:  # the replay took: every visible release of B is A's
                np.testing.assert_array_equal(a.audit["released"], b.audit["released"])
            if "query" in a.audit:
                reached |= not np.array_equal(a.audit["query"], b.audit["query"])
        if _hidden(draws_a):
            model_b, moved = _fit_inverted(est, Xb, yb, draws_a, model_a, replay, params_b)
            reached |= moved
            _assert_same_outputs(model_a, model_b, rtol=INVERTED_RTOL)
        else:
            _assert_same_outputs(model_a, model_b)
        if reached:
            return
    pytest.fail("none of the rows tried reaches a release: the setting does not test anything")


# ------------------------------------------------------------------------------------------
# every registered solver
# ------------------------------------------------------------------------------------------
_CASES = _solver_cases(2.0, 1e-5)


def _solver_setting(solver):
    est = clone(_CASES[solver][0]).set_params(**OVERRIDES.get(solver, {}))
    return est, "clf" if is_classifier(est) else "reg", ROWS.get(solver, 60)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_every_solver_output_is_post_processing_of_its_releases(solver):
    est, task, n = _solver_setting(solver)
    _check(est, task, n=n)


@pytest.mark.parametrize("solver, entry", [("dp_gd", "learning_rate"), ("adassp", "ridge")])
def test_the_settings_reach_the_steps_set_by_a_release(solver, entry):
    """dp_gd's step and adassp's ridge term follow the fit's first release (the curvature, lambda_min) in the
    settings above (neither is clamped), so one taken from the exact statistic would differ between the worlds:
    replaying a value lower by half the release's sensitivity (one row of norm 1) moves it."""
    est, task, n = _solver_setting(solver)
    (X, y), _ = _worlds(task, n=n)
    model, draws = _fit_recorded(est, X, y, SEED, 1.0)
    plan = _replay_of(draws)
    plan[0] = {"released": draws[0].audit["released"] - 0.5}
    moved, _ = _fit_recorded(est, X, y, SEED, 1.0, plan)
    assert moved.solver_info_[entry] != model.solver_info_[entry]
    assert model.solver_info_[entry] > 0


# ------------------------------------------------------------------------------------------
# beyond the registry: estimated bounds, default solvers, one-vs-rest, scalers, multi-party
# ------------------------------------------------------------------------------------------
FAR = 25.0  # where a bound is estimated privately, world B's row lies far outside it

ESTIMATORS = {
    "logistic_auto_norm": (DPLogisticRegression(epsilon=2.0, data_norm="auto"), "clf", 200, {}),
    "ridge_auto_label": (DPRidge(epsilon=2.0, label_bound="auto"), "reg", 200, {}),
    "lasso": (DPLasso(epsilon=2.0), "reg", 200, {}),
    "linear_svc": (DPLinearSVC(epsilon=2.0), "clf", 200, {}),
    "sparse_linear": (DPSparseLinearRegression(epsilon=2.0, n_nonzero_coefs=2), "reg", 200, {"d": 3}),
    "sparse_logistic": (DPSparseLogisticRegression(epsilon=2.0, n_nonzero_coefs=2), "clf", 200, {"d": 3}),
    # one objective perturbation per class (their noises are solved for jointly)
    "logistic_ovr": (DPLogisticRegression(epsilon=2.0, solver="obj_pert", classes=[0, 1, 2], data_norm=1.0,
                                          alpha=1.0, fit_intercept=False), "clf", 90, {"classes": 3, "far": 1.0}),
    "linear_svc_ovr": (DPLinearSVC(epsilon=2.0, classes=[0, 1, 2], max_iter=5), "clf", 90, {"classes": 3}),
    "logistic_multinomial": (DPLogisticRegression(epsilon=4.0), "clf", 300, {"classes": 3}),
    "standard_scaler": (DPStandardScaler(epsilon=4.0), "reg", 1000, {}),
    "standard_scaler_clip": (DPStandardScaler(epsilon=4.0, clip_norm="auto"), "reg", 1000, {}),
    "minmax_scaler": (DPMinMaxScaler(epsilon=4.0), "reg", 1000, {}),
    # sample weights are part of a row: world B's row has another weight
    "ridge_weighted": (DPRidge(epsilon=2.0), "reg", 200, {"weighted": True}),
    "logistic_weighted": (DPLogisticRegression(epsilon=2.0), "clf", 200, {"weighted": True}),
    "linear_svc_weighted": (DPLinearSVC(epsilon=2.0, classes=[0, 1]), "clf", 200, {"weighted": True}),
    "lasso_weighted": (DPLasso(epsilon=2.0), "reg", 200, {"weighted": True}),
    "standard_scaler_weighted": (DPStandardScaler(epsilon=4.0), "reg", 1000, {"weighted": True}),
    "obj_pert_weighted": (DPLogisticRegression(epsilon=2.0, solver="obj_pert", classes=[0, 1], data_norm=1.0,
                                               alpha=1.0, fit_intercept=False), "clf", 90, {"weighted": True,
                                                                                           "far": 1.0}),
    # feature_scaling="auto" at a budget where it is planned: the histograms' release and the map read from them
    "logistic_feature_scaling": (DPLogisticRegression(epsilon=1000.0), "clf", 400, {"scale": (1.0, 1000.0)}),
    "simple_imputer_mean": (DPSimpleImputer(epsilon=4.0, bounds=(-2.0, 2.0)), "reg", 300, {}),
    "multiparty_grad": (MultiPartyDPLogisticRegression(epsilon=2.0, n_parties=3, max_iter=3), "clf", 200,
                        {"far": 1.0}),
    "multiparty_output": (MultiPartyDPLogisticRegression(epsilon=2.0, solver="mpc_output_pert", alpha=0.1,
                                                         classes=[0, 1], n_parties=3), "clf", 90, {"far": 1.0}),
}


@pytest.mark.parametrize("case", sorted(ESTIMATORS))
def test_estimator_output_is_post_processing_of_its_releases(case):
    est, task, n, world = ESTIMATORS[case]
    _check(est, task, n=n, **{"far": FAR, **world})
