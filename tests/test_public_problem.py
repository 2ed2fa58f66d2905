"""A plan reads a data-free type: :class:`~skdp.solvers.PublicProblem` (dense) or
:class:`~skdp.solvers.PublicSparseProblem` (sparse), with no data attribute at all.

The estimators plan on it, every registered solver's ``make_plan`` runs on it, and the
:func:`~skdp.solvers.public_view` of the problem a fit runs on equals the view its plan was made on.
"""

import dataclasses

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression

import skdp._fit
from skdp import (DPLasso, DPLinearSVC, DPLogisticRegression, DPRidge, DPSparseLinearRegression,
                  DPSparseLogisticRegression, list_solvers)
from skdp._plan import PublicFit, make_plan, same_public_view
from skdp.losses import LogisticLoss, SquaredLoss
from skdp.penalties import L2Penalty
from skdp.solvers import (SOLVERS, Problem, PublicProblem, PublicSparseProblem, Solver, SolverResult, SparseProblem,
                          estimator_solvers, get_solver, public_view)

ESTIMATORS = (DPLasso, DPLinearSVC, DPLogisticRegression, DPRidge, DPSparseLinearRegression,
              DPSparseLogisticRegression)
#: these fit more than two classes one-vs-rest with any of their solvers
ONE_VS_REST = (DPLinearSVC, DPSparseLogisticRegression)
DATA = ("X", "y", "norms", "sample_weight")
PUBLIC_TYPES = (PublicProblem, PublicSparseProblem)


def _settings(estimator, solver):
    """Public parameters for every configuration of ``estimator`` with ``solver``: two and, where it
    fits them, three classes for a classifier; a public label bound for a regressor."""
    if not is_classifier(estimator()):
        return [dict(label_bound=1.0)]
    row = {r["solver"]: r for r in list_solvers(estimator)}[solver]
    many = row["multiclass"] or estimator in ONE_VS_REST
    return [dict(classes=[0, 1])] + ([dict(classes=[0, 1, 2])] if many else [])


PAIRS = [pytest.param(solver, est, kw, id=f"{solver}-{est.__name__}-{len(kw.get('classes', ()))}")
         for solver in sorted(SOLVERS) for est in ESTIMATORS if solver in estimator_solvers(est)
         for kw in _settings(est, solver)]


def _dense_problem(n=30, d=3):
    X = np.random.RandomState(0).uniform(-1, 1, (n, d)) / np.sqrt(d)
    return Problem(X=X, y=np.sign(X[:, 0]) + (X[:, 0] == 0), norms=np.linalg.norm(X, axis=1), loss=LogisticLoss(),
                   penalty=L2Penalty(0.1), data_norm=1.0, sample_weight=np.ones(n), max_sample_weight=2.0)


def _sparse_problem(n=30, d=4):
    X = np.random.RandomState(1).uniform(-1, 1, (n, d))
    return SparseProblem(X=X, y=X[:, 0], loss=SquaredLoss(), n_nonzero=2, feature_bound=1.0, clip=1.0,
                         sample_weight=np.ones(n), max_sample_weight=2.0)


@pytest.mark.parametrize("problem", [_dense_problem(), _sparse_problem()], ids=["dense", "sparse"])
def test_the_view_has_no_data_attributes(problem):
    view = public_view(problem)
    assert isinstance(view, PUBLIC_TYPES) and type(view) in PUBLIC_TYPES
    assert (view.n, view.p) == problem.X.shape
    for name in DATA:
        with pytest.raises(AttributeError):
            getattr(view, name)
        assert not hasattr(type(view), name)
    assert not {f.name for f in dataclasses.fields(view)} & set(DATA)
    # every public field is the problem's, and the view of a view is itself
    for f in dataclasses.fields(view):
        if f.name not in ("n_samples", "n_features"):
            assert getattr(view, f.name) is getattr(problem, f.name), f.name
    assert public_view(view) is view


@pytest.mark.parametrize("est", [DPLogisticRegression(data_norm=2.0, classes=[0, 1]),
                                 DPSparseLinearRegression(label_bound=1.0)], ids=["dense", "sparse"])
def test_the_estimators_plan_on_a_view_without_rows(est):
    view = make_plan(est, PublicFit(500, 5)).view
    assert type(view) in PUBLIC_TYPES
    for name in DATA:
        with pytest.raises(AttributeError):
            getattr(view, name)


def test_a_problem_holds_its_rows():
    """A problem without rows is the public type: the data types refuse ``X=None``."""
    with pytest.raises(TypeError, match="PublicProblem"):
        Problem(X=None, y=None, norms=None, loss=LogisticLoss(), penalty=L2Penalty(0.0), data_norm=1.0)
    with pytest.raises(TypeError, match="PublicSparseProblem"):
        SparseProblem(X=None, y=None, loss=LogisticLoss(), n_nonzero=1, feature_bound=1.0)
    with pytest.raises(TypeError, match="public_view needs"):
        public_view(object())


def _fit_data(estimator, n=400, d=5):
    if is_classifier(estimator):
        return make_classification(n, d, n_informative=3, n_classes=len(estimator.classes), random_state=0)
    X, y = make_regression(n, d, noise=1.0, random_state=0)
    return X, y / np.abs(y).max()


@pytest.mark.parametrize("estimator", [
    DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=0),
    DPLogisticRegression(data_norm=3.0, classes=[0, 1, 2], solver="obj_pert", random_state=0),
    DPLinearSVC(data_norm=3.0, classes=[0, 1, 2], random_state=0),
    DPRidge(data_norm=3.0, label_bound=1.0, random_state=0),
    DPLasso(feature_bound=2.0, label_bound=1.0, random_state=0),
    DPSparseLinearRegression(feature_bound=2.0, label_bound=1.0, clip_norm=1.0, random_state=0),
    DPSparseLogisticRegression(feature_bound=2.0, clip_norm=1.0, classes=[0, 1, 2], solver="dp_fw_l1",
                               random_state=0),
], ids=lambda est: f"{type(est).__name__}-{est.solver}")
def test_the_view_of_the_problem_a_fit_runs_on_is_the_planned_view(estimator, monkeypatch):
    """Every public bound is given, so the problem the fit runs on has the very public view its plan was made on."""
    seen = []

    def spy(problem):
        view = public_view(problem)
        seen.append((problem, view))
        return view

    monkeypatch.setattr(skdp._fit, "public_view", spy)  # where run_solver compares the views
    X, y = _fit_data(estimator)
    planned = make_plan(estimator, PublicFit(*X.shape)).view
    with np.errstate(all="ignore"):
        estimator.fit(X, y)
    assert len(seen) == 1
    problem, view = seen[0]
    assert isinstance(problem, (Problem, SparseProblem)) and type(view) is type(planned)
    assert same_public_view(view, planned)
    assert not same_public_view(problem, planned)  # the problem itself is of another type


@pytest.mark.parametrize("name, estimator, settings", PAIRS)
def test_every_solver_plans_on_the_public_type(name, estimator, settings, monkeypatch):
    """Each estimator that accepts the solver plans through it on a data-free view; the solver's ``make_plan``
    only ever receives the public type (a plan that read a row would raise ``AttributeError``)."""
    solver = SOLVERS[name]
    received = []
    real = type(solver).make_plan

    def make_plan_spy(self, problem, budget):
        received.append(type(problem))
        return real(self, problem, budget)

    monkeypatch.setattr(type(solver), "make_plan", make_plan_spy)
    plan = make_plan(estimator(solver=name, **settings), PublicFit(500, 5))
    assert plan.guaranteed and plan.events
    assert type(plan.view) in PUBLIC_TYPES
    assert received and set(received) <= set(PUBLIC_TYPES), received
    again = solver.make_plan(plan.view, plan.budget)  # and once more, straight on the view
    assert again.events == real(solver, plan.view, plan.budget).events


class _PlansItself(Solver):
    """A user's solver that overrides ``plan`` and ``solve`` (not ``make_plan`` and ``run``)."""

    name = "demo_plans_itself"
    source = card = summary = "a test of the public view"
    reference = "doc/user_guide/solvers.rst"
    requires = frozenset({"smooth"})
    seen = []

    def plan(self, problem, budget):
        type(self).seen.append(type(problem))
        return get_solver("dp_gd").plan(problem, budget)

    def solve(self, problem, budget, rng):
        result = get_solver("dp_gd").solve(problem, budget, rng)
        return SolverResult(result.coef, result.n_iter, events=result.events, noise_scale=result.noise_scale)


def test_a_user_solver_plans_on_the_public_view(monkeypatch):
    from skdp.solvers import register

    monkeypatch.setattr(_PlansItself, "seen", [])
    register(_PlansItself)
    try:
        X, y = make_classification(300, 4, random_state=0)
        est = DPLogisticRegression(solver="demo_plans_itself", data_norm=3.0, classes=[0, 1], random_state=0)
        est.fit(X, y)
        assert est.planned_events(*X.shape) == est.privacy_events_
    finally:
        del SOLVERS[_PlansItself.name]
    assert _PlansItself.seen and set(_PlansItself.seen) == {PublicProblem}
