"""The budget search: the largest budget of a release so that it and the releases before it cost a target."""

import math

from .accounting import price
from .budget import PrivacyBudget

__all__ = ["basic_split", "plan_after"]


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


def plan_after(plan, pre_events, epsilon, delta):
    """The budget of a release planned by ``plan`` so that it and ``pre_events`` together cost ``(epsilon, delta)``.

    ``plan(budget) -> list of events`` is a function of public quantities
    only (a solver's plan, a secure aggregation's calibration). Without
    pre-events the answer is ``(epsilon, delta)``. Otherwise the
    basic-composition split (:func:`basic_split`) is feasible but leaves
    budget unspent (the accountant composes Gaussian and bounded-range events
    more tightly than by adding epsilons), so the release's epsilon is raised
    on the accountant's price of the whole plan at ``delta``: a bracketed
    false-position search (Illinois) that keeps a feasible end and returns
    it, so the total never exceeds ``epsilon``. With ``delta = 0`` the basic
    split is returned.

    Returns
    -------
    PrivacyBudget
        The budget to calibrate the release to.
    """
    if not pre_events:
        return PrivacyBudget(epsilon, delta)
    lo, solver_delta = basic_split(pre_events, epsilon, delta)
    pre_delta = delta - solver_delta
    if not lo > 0:
        raise ValueError(f"The private selections before the solver (bounds, label set) use all of "
                         f"epsilon={epsilon!r}; give them publicly or lower bound_budget_fraction.")
    basic = PrivacyBudget(lo, delta - pre_delta)
    if delta == 0:
        return basic

    def excess(eps):
        budget = PrivacyBudget(eps, delta - pre_delta)
        return price(list(pre_events) + list(plan(budget)), delta).budget.epsilon - epsilon, budget

    f_lo, best = excess(lo)
    hi, f_hi = epsilon, None
    if f_lo > 0:
        # the accountant can price the union above the parts' sum (e.g. many bounded-range
        # events priced by RDP): search below the basic split so the total never exceeds epsilon
        lo, hi, f_hi, best = 0.0, lo, f_lo, None
        # an anchor for the interpolation only (the solver's share tends to 0, where the excess is
        # price(pre) - epsilon < 0): feasibility is always decided by an evaluated price
        f_lo = -epsilon
    else:
        f_hi, _ = excess(hi)
        if f_hi <= 0:  # the solver can take all of epsilon (pre-events free at this delta)
            return excess(hi)[1]
    side, best_excess = 0, (f_lo if best is not None else -math.inf)
    for _ in range(60):
        # false position, with the Illinois halving of the end that keeps being retained
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo) if f_hi != f_lo else 0.5 * (lo + hi)
        if not lo < x < hi:
            x = 0.5 * (lo + hi)
        f_x, budget = excess(x)
        if f_x <= 0:
            lo, f_lo, best, best_excess = x, f_x, budget, f_x
            if side == -1:
                f_hi *= 0.5
            side = -1
        else:
            hi, f_hi = x, f_x
            if side == 1:
                f_lo *= 0.5
            side = 1
        if hi - lo <= 1e-11 * epsilon or best_excess >= -1e-10 * epsilon:
            break
    if best is None:
        raise ValueError(f"The private selections before the solver (bounds, label set) leave it no budget at "
                         f"epsilon={epsilon!r}; give them publicly or lower bound_budget_fraction.")
    return best
