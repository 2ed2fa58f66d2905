"""The budget search: the largest budget of a release so that it and the releases before it cost a target."""

import math

from .accounting import price
from .calibration import calibrate
from .budget import PrivacyBudget

__all__ = ["basic_split", "largest_budget", "plan_after", "BUDGET_XTOL", "PLAN_MARGIN"]

#: relative margin below ``epsilon`` that :func:`plan_after` aims at (see there)
PLAN_MARGIN = 1e-12

#: relative width (in ``log`` of the budget) to which :func:`largest_budget` locates the largest feasible budget;
#: the budget returned is always feasible, and at most this much below the largest one
BUDGET_XTOL = 1e-10


def basic_split(pre_events, epsilon, delta):
    """What basic composition leaves for a solver after ``pre_events``, as ``(epsilon, delta)``.

    Events with an ``epsilon`` of their own (pure, bounded-range,
    approximate-DP) subtract it and their ``delta``; the others (the
    Gaussian label-set selection) are priced together by the accountant at
    half of the ``delta`` left, which they then take. A feasible starting
    point only: :func:`plan_after` then raises the solver's share on the
    accountant's price of the whole plan.
    """
    own = [ev for ev in pre_events if hasattr(ev, "epsilon")]
    other = [ev for ev in pre_events if not hasattr(ev, "epsilon")]
    eps = epsilon - sum(ev.count * ev.epsilon for ev in own)
    delta = delta - sum(getattr(ev, "delta", 0.0) * ev.count for ev in own)
    if other:
        if not delta > 0:
            return -math.inf, delta
        delta = 0.5 * delta
        eps -= price(other, delta).budget.epsilon
    return eps, delta


def largest_budget(events_at, epsilon, delta, upper, *, lower=None, guess=None, relation="replace_one"):
    """Largest ``t`` in ``(0, upper]`` with ``price(events_at(t), delta).epsilon <= epsilon``: the one budget search.

    ``events_at(t)`` lists the events of a plan whose privacy loss does not
    decrease as ``t`` (a budget's epsilon) grows, e.g. the private bound
    choices made before a solver and the solver's plan at ``t``; a function of
    public quantities only. The search is the accountant's own calibration
    (:func:`~skdp.privacy.calibrate`) on the noise-like parameter ``1 / t``:
    bracketed by factors of 4 from ``upper`` (or by ``lower``), located with
    Brent's method to :data:`BUDGET_XTOL` and stepped to the private side
    with the price that reports the fit, so the returned ``t`` is always
    feasible. Every "largest budget within epsilon" in skdp goes through it:
    a solver's share after its bound choices (:func:`plan_after`) and the
    per-class budget of one-vs-rest fits (:func:`skdp._ovr.ovr_budget`); the
    scalers split their budget with the same calibration, on their noise
    directly.

    ``lower`` (optional): a ``t`` believed feasible (e.g. what basic
    composition leaves), which narrows the search when the prices confirm it;
    ``guess`` (optional): a ``t`` believed to be the answer (e.g. exact for
    Gaussian releases composed by Gaussian DP), tried first in a bracket of
    ``1e-6`` around it (the search widens from there when the prices say
    otherwise).

    Returns
    -------
    t : float
    """
    upper = float(upper)
    p_upper = 1.0 / upper
    if price(list(events_at(1.0 / p_upper)), delta, relation).budget.epsilon <= epsilon:
        return 1.0 / p_upper
    bracket = None if lower is None or not 0 < lower < upper else (p_upper, 1.0 / float(lower))
    if guess is not None and 0 < guess < upper:
        bracket = (1.0 / min(float(guess) * (1 + 1e-6), upper), 1.0 / (float(guess) * (1 - 1e-6)))
    p, _ = calibrate(lambda p: events_at(1.0 / p), epsilon, delta, relation=relation, initial=p_upper,
                     bracket=bracket, xtol=BUDGET_XTOL)
    return 1.0 / p


def plan_after(plan, pre_events, epsilon, delta):
    """The budget of a release planned by ``plan`` so that it and ``pre_events`` together cost ``(epsilon, delta)``.

    ``plan(budget) -> list of events`` is a function of public quantities
    only (a solver's plan, a secure aggregation's calibration). Without
    pre-events the answer is ``(epsilon, delta)``. Otherwise the release gets
    the ``delta`` that basic composition leaves it (:func:`basic_split`) and
    the largest epsilon for which the accountant prices the whole plan at no
    more than ``epsilon (1 - PLAN_MARGIN)`` (:func:`largest_budget`; the
    accountant composes Gaussian and bounded-range events more tightly than
    by adding epsilons; the margin absorbs the rounding between the plan's
    data-free view and the fit's events).
    With ``delta = 0`` the basic split is exact and is returned.

    Returns
    -------
    PrivacyBudget
        The budget to calibrate the release to (the very object ``plan`` was
        last called with at that epsilon).
    """
    if not pre_events:
        return PrivacyBudget(epsilon, delta)
    lo, solver_delta = basic_split(pre_events, epsilon, delta)
    if not lo > 0:
        raise ValueError(f"The private selections before the solver (bounds, label set) use all of "
                         f"epsilon={epsilon!r}; give them publicly or lower bound_budget_fraction.")
    if delta == 0:
        return PrivacyBudget(lo, solver_delta)
    budgets = {}

    def events_at(t):
        if t not in budgets:
            budgets[t] = PrivacyBudget(t, solver_delta)
        return list(pre_events) + list(plan(budgets[t]))

    # the plan is made on a data-free view (a placeholder unit bound where the bound is chosen in the fit); the
    # fit's events at the chosen bound price the same up to rounding (about 1e-15 relative), which this margin
    # keeps below epsilon
    t = largest_budget(events_at, epsilon * (1.0 - PLAN_MARGIN), delta, epsilon, lower=lo)
    return budgets[t] if t in budgets else PrivacyBudget(t, solver_delta)
