"""The SGD solvers (skdp/solvers/sgd.py: noisy_sgd, nsgd_moreau): card numbers and the step cap.
"""

import math

from skdp.privacy import PrivacyBudget, price
from skdp.solvers import get_solver

from ._helpers import planning_problem


# ------------------------------------------------------------------------------------------
# noisy_sgd / nsgd_moreau (seed003 sections 1, 2)
# ------------------------------------------------------------------------------------------
def test_noisy_sgd_card_fixture():
    """Card 1.6: n = 1e4, d = 20, eps = 1, delta = 1e-8, L = M = 1: T = 1250, m = 142, eta = 0.028284."""
    solver = get_solver("noisy_sgd")
    prob = planning_problem(10**4, 20, data_norm=1.0, radius=1.0, geometry_p=2.0)
    budget = PrivacyBudget(1.0, 1e-8)
    T, m = solver.schedule(prob, budget)
    assert (T, m) == (1250, 142)
    assert math.isclose(solver.learning_rate(prob, budget, T), 0.028284, rel_tol=1e-4)
    z, sigma = solver.noise(prob, budget, T, m)
    spent = price(solver.plan(prob, budget), 1e-8).budget.epsilon
    assert 0.99 <= spent <= 1.0
    # the paper's sigma (0.042919) prices at 0.836 < 1 under Poisson replace-one, so ours is smaller
    assert sigma < 0.042919


def test_noisy_sgd_step_cap_keeps_the_batch_of_the_uncapped_schedule():
    """Above the 2000-step cap (n > 16000) the batch is Thm 3.2's for T0; the accountant prices the T steps run."""
    solver = get_solver("noisy_sgd")
    budget = PrivacyBudget(1.0, 1e-5)
    prob = planning_problem(200_000, 51, data_norm=2.0, radius=1.0, geometry_p=2.0)
    T, m = solver.schedule(prob, budget)
    T0 = min(200_000 / 8, 200_000**2 / (32 * 51 * math.log(1e5)))
    assert (T, m) == (2000, math.ceil(200_000 * math.sqrt(1.0 / (4 * T0)))) and m < 200_000 * math.sqrt(1 / 8000)
    plan = solver.make_plan(prob, budget)
    assert plan.events[0].count == 2000 and plan.events[0].sampling_rate == m / 200_000
    assert 0.99 <= price(list(plan.events), 1e-5).budget.epsilon <= 1.0
    small = planning_problem(8000, 51, data_norm=2.0, radius=1.0, geometry_p=2.0)  # no cap: unchanged
    assert solver.schedule(small, budget) == (1000, math.ceil(8000 * math.sqrt(1.0 / 4000)))
    capped = planning_problem(200_000, 51, data_norm=2.0, radius=1.0, geometry_p=2.0)
    capped.max_iter = 500  # max_iter sets T0 itself
    assert solver.schedule(capped, budget) == (500, math.ceil(200_000 * math.sqrt(1.0 / 2000)))


def test_nsgd_moreau_beta_fixture():
    solver = get_solver("nsgd_moreau")
    prob = planning_problem(10**4, 20, data_norm=1.0, radius=1.0, geometry_p=2.0)
    from skdp.losses import HingeLoss
    prob.loss = HingeLoss()
    assert math.isclose(solver.smoothing(prob, PrivacyBudget(1.0, 1e-8)), 25.0, rel_tol=1e-12)
