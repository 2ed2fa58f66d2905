"""The linear models' fits on Dask collections: the in-memory plan and steps, every pass a reduction.

``DPLogisticRegression`` and ``DPRidge`` dispatch here from the top of ``fit``
(see :mod:`skdp._dask` for what is public and what is supported): the fit is
planned by the same :func:`skdp._plan.make_plan`, charged, and runs the same
private bound choices and solver on a :class:`~skdp._dask.DaskDesign`, whose
passes map over the row blocks where they live.
"""

import dataclasses

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from .. import diagnostics
from .._classes import check_class_set, classes_from_counts
from .._dask import (DaskDesign, DaskProblem, DaskRows, ClassTargets, RegressionTargets, abs_dev_counts,
                     check_solver, first_pass, refuse_none, set_features)
from .._plan import PublicFit, make_plan
from .._protocol import charge, solve_and_release
from .._random import fit_randomness
from .._weights import default_weight
from ..bounds import augmented_row_bound, bound_features, bound_labels, label_range_from_counts, raw_row_bound
from ..losses import LogisticLoss, MultinomialLoss, SquaredLoss
from ..privacy.quantile import DEFAULT_NORM_GRID, DEFAULT_SIGNED_GRID, private_quantile_from_counts
from ..solvers._base import selection_secure_option
from ._base import refuse_unreliable_selection, warn_unreliable_selection

__all__ = ["fit_logistic", "fit_ridge"]


def _fit_problem_dask(est, plan, rows, targets, loss, n_outputs, solver, *, label_bound=None, coef_norm=None,
                 data_derived=False, clip_norm=None, rng=None, pre_events=(), norm_counts=None):
    """``DPLinearModel._fit_problem`` on Dask rows: the same plan and steps, the passes as reductions."""
    n = rows.n
    warn_unreliable_selection(est.epsilon, est._n_auto_selections(plan.public.n_targets), n)
    pre_events = list(pre_events)
    data_norm = est.data_norm
    fraction = est._intercept_fraction_for(rows.d)
    if data_norm == "auto":
        value, bound_event = private_quantile_from_counts(norm_counts, n, est._auto_norm_quantile,
                                                          plan.selection_epsilon, rng, DEFAULT_NORM_GRID,
                                                          selection_secure_option(est.solver_options))
        data_norm = augmented_row_bound(value * est._auto_norm_factor_for(n), est.fit_intercept,
                                        est.intercept_scaling, fraction)
        pre_events = [bound_event] + pre_events
    radius = est._feature_clip_radius(raw_row_bound(data_norm, est.fit_intercept, est.intercept_scaling, fraction),
                                      rows.d)
    # the public bounds, as bound_features applies them to every block (no row is read here)
    public = bound_features(np.empty((0, rows.d)), data_norm, est.fit_intercept, est.intercept_scaling, fraction)
    design = DaskDesign(rows, public.data_norm, est.fit_intercept, est.intercept_scaling, fraction, targets,
                        feature_clip=radius)
    base = est._problem(n, loss, n_outputs, public.data_norm, X=design, label_bound=label_bound,
                        coef_norm=coef_norm, clip_norm=clip_norm, solver=solver)
    problem = DaskProblem(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.init},
                          row_weight=default_weight(est, warn=True))
    result = solve_and_release(est, solver, problem, plan, rng, pre_events=pre_events, derived=data_derived)
    diagnostics.record(est, n_rows_clipped=design.n_rows_clipped)
    est.data_norm_ = public.data_norm
    est.intercept_scaling_ = public.intercept_scaling
    if "feature_clip" in est.get_params():
        est.feature_clip_ = radius
    return result.coef, design


def fit_logistic(est, X, y, privacy_ledger=None):
    """``DPLogisticRegression.fit`` on a Dask array or dataframe ``X`` (labels ``y``: Dask or NumPy)."""
    est._check_privacy_params()
    refuse_none(est, "data_norm")
    refuse_none(est, "classes")
    check_class_set(est)
    rows = DaskRows(X, y)
    # public facts only: before any block is read (the rows stay where they are: no feature scaling release)
    plan = make_plan(est, PublicFit(rows.n, rows.d, reduced_rows=True))
    est.feature_center_ = est.feature_scale_ = est.feature_box_ = None
    check_solver(est, plan.solver)
    charge(est, rows.X, privacy_ledger, plan)
    set_features(est, rows)
    norm_counts, label_counts, _ = rows.reduce(first_pass, rows.dtype, est.data_norm == "auto", True, None, False)
    check_classification_targets(label_counts.labels)
    rng = fit_randomness(est)
    selection = classes_from_counts(est, label_counts.labels, label_counts.counts, rows.n, rng)
    k = selection.classes.size
    loss, n_out = (LogisticLoss(), 1) if k == 2 else (MultinomialLoss(k), k)
    solver = plan.solver if loss.name == plan.spec["loss"].name else est._resolve_solver(loss.name)
    check_solver(est, solver)
    targets = ClassTargets(selection.classes, k == 2, isinstance(est.classes, str))
    coef, _ = _fit_problem_dask(est, plan, rows, targets, loss, n_out, solver, data_derived=selection.derived,
                           clip_norm="initial", rng=rng, pre_events=selection.events, norm_counts=norm_counts)
    est.coef_, est.intercept_ = est._split_coef(coef)
    est.multi_class_ = "binary" if k == 2 else ("ovr" if est.solver_info_.get("one_vs_rest") else "multinomial")
    return est


def fit_ridge(est, X, y, privacy_ledger=None):
    """``DPRidge.fit`` on a Dask array or dataframe ``X`` (targets ``y``: Dask or NumPy)."""
    est._check_privacy_params()
    est._check_label_bound()
    refuse_none(est, "data_norm")
    refuse_none(est, "label_bound")
    rows = DaskRows(X, y)
    plan = make_plan(est, PublicFit(rows.n, rows.d, reduced_rows=True))  # public facts only: before any block
    solver = plan.solver
    check_solver(est, solver)
    refuse_unreliable_selection(est, est._n_auto_selections(), rows.n)
    charge(est, rows.X, privacy_ledger, plan)
    set_features(est, rows)
    auto_labels = isinstance(est.label_bound, str)
    norm_counts = y_counts = None
    if auto_labels or est.data_norm == "auto":  # else the passes of the solver validate the blocks
        norm_counts, _, y_counts = rows.reduce(first_pass, rows.dtype, est.data_norm == "auto", False,
                                               DEFAULT_SIGNED_GRID if auto_labels else None, True)
    rng = fit_randomness(est)
    label_bound, pre_events = est.label_bound, []
    if auto_labels:
        def counts(grid, centre=None):
            return y_counts if centre is None else rows.reduce(abs_dev_counts, centre, grid)[0]

        label_bound, pre_events = label_range_from_counts(counts, rows.n, plan.selection_epsilon, rng,
                                                          width=est._auto_label_width,
                                                          secure=selection_secure_option(est.solver_options))
    _, centre, bound, _, derived = bound_labels(np.zeros(0), label_bound, est.fit_intercept)
    radius, M = est._coef_ball([bound], solver)
    coef, design = _fit_problem_dask(
        est, plan, rows, RegressionTargets(label_bound, est.fit_intercept), SquaredLoss(), 1, solver, label_bound=1.0,
        coef_norm=radius, data_derived=derived, clip_norm="initial", rng=rng,
        pre_events=pre_events, norm_counts=norm_counts)
    return est._set_fitted(coef, centre, bound, M, design.n_labels_clipped, solver=solver,
                           n_samples=design.shape[0])
