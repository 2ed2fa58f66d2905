"""Extending skdp: a new solver is one class plus ``@register``; a new GLM loss is one class plus ``@register_loss``.

The demonstration solver and loss live here, not in the package. Nothing else is edited to use them: the
estimators read the solvers they accept from the registry (:class:`skdp.solvers.SolverChoice`), solvers
find the losses they support by the capabilities those declare, and the accountant prices the events the
solver says it releases.
"""

import math

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp import DPLinearSVC, DPLogisticRegression, PrivacyBudget, list_solvers
from skdp.losses import LOSSES, _GLMLoss, register_loss
from skdp.privacy import GaussianEvent, calibrate_gaussian, gaussian_noise, price
from skdp.solvers import SOLVERS, Problem, Solver, SolverResult, get_solver, register
from skdp.penalties import L2Penalty


class DemoOneStep(Solver):
    """One noisy full-batch gradient step from 0 (a demonstration, not a good solver).

    Replace-one with public ``n``: the mean gradient moves by at most ``2G/n``; one Gaussian release.
    """

    name = "demo_one_step"
    source = "a demonstration in the test suite"
    card = "one Gaussian gradient release"
    reference = "doc/user_guide/solvers.rst"
    summary = "one noisy gradient step"
    requires = frozenset({"smooth"})

    def _event(self, problem, budget):
        sens = 2 * problem.gradient_bound / problem.n
        return GaussianEvent(sens, calibrate_gaussian(sens**2, budget.epsilon, budget.delta))

    def plan(self, problem, budget):
        return [self._event(problem, budget)]

    def solve(self, problem, budget, rng):
        event = self._event(problem, budget)
        w = np.zeros(problem.coef_shape)
        g = problem.mean_gradient(w) + gaussian_noise(rng, event.sigma, problem.coef_shape)
        w = -g / (problem.smoothness + problem.penalty.smoothness)
        return SolverResult(coef=w, n_iter=1, events=[event], noise_scale=event.sigma)


class PseudoHuberLoss(_GLMLoss):
    """``sqrt(1 + (z - y)^2) - 1``: smooth, one predictor per row, derivative bounded by 1."""

    name = "demo_pseudo_huber"
    curvature = 1.0

    def derivative_bound(self, label_bound=None, coef_norm=None, data_norm=None):
        return 1.0

    def initial_derivative_bound(self, label_bound=None):
        return 1.0

    def value(self, Z, y):
        return np.sqrt(1 + (Z - y) ** 2) - 1

    def derivative(self, Z, y):
        return (Z - y) / np.sqrt(1 + (Z - y) ** 2)


@pytest.fixture
def demo_solver():
    register(DemoOneStep)
    yield SOLVERS[DemoOneStep.name]
    del SOLVERS[DemoOneStep.name]


@pytest.fixture
def demo_loss():
    register_loss(PseudoHuberLoss)
    yield PseudoHuberLoss
    del LOSSES[PseudoHuberLoss.name]


def test_a_registered_solver_is_accepted_priced_and_listed(demo_solver):
    X, y = make_classification(400, 5, random_state=0)
    est = DPLogisticRegression(solver="demo_one_step", data_norm=3.0, classes=[0, 1], random_state=0).fit(X, y)
    assert est.solver_ == "demo_one_step" and est.n_iter_.tolist() == [1]
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
    assert est.planned_events(*X.shape) == est.privacy_events_
    assert est.score(X, y) > 0.6
    rows = {r["solver"]: r for r in list_solvers(DPLogisticRegression)}
    assert rows["demo_one_step"]["multiclass"] and not rows["demo_one_step"]["default"]
    # the hinge loss is not smooth: DPLinearSVC does not offer it, and the refusal names the missing capability
    with pytest.raises(ValueError, match="must be a str among"):
        DPLinearSVC(solver="demo_one_step", classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match=r"needs a smooth loss"):
        demo_solver.check("hinge", 1e-5)


def test_unregistered_solver_is_refused():
    with pytest.raises(ValueError, match="must be a str among"):
        DPLogisticRegression(solver="demo_one_step", classes=[0, 1]).fit(np.zeros((4, 2)), [0, 1, 0, 1])


def test_a_registered_loss_is_supported_by_every_solver_whose_requirements_it_meets(demo_loss):
    takes = {n for n, s in SOLVERS.items() if demo_loss.name in s.losses}
    # smooth, scalar and globally Lipschitz, not quadratic: everything except the hinge-only Moreau solver
    # and sufficient-statistics perturbation (which needs a quadratic loss)
    assert takes == set(SOLVERS) - {"nsgd_moreau", "adassp"}
    assert get_solver("obj_pert_svrg").check(demo_loss.name, 1e-5) is None
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (2000, 3)) / math.sqrt(3)
    y = X @ np.array([1.0, -1.0, 0.5]) + 0.05 * rng.randn(2000)
    problem = Problem(X=X, y=y, norms=np.linalg.norm(X, axis=1), loss=demo_loss(), penalty=L2Penalty(0.01),
                      data_norm=1.0)
    solver = get_solver("dp_gd")
    budget = PrivacyBudget(4.0, 1e-5)
    result = solver.solve(problem, budget, np.random.RandomState(1))
    assert price(result.events, 1e-5).budget.epsilon <= 4.0 * (1 + 1e-9)
    assert result.events == solver.plan(problem, budget)
    assert np.corrcoef(X @ result.coef, y)[0, 1] > 0.8
