"""One-vs-rest: ``k`` binary fits on the same rows, calibrated together to the price of one binary fit."""

import dataclasses
import math

import numpy as np

from ._classes import class_indices
from .privacy import PrivacyBudget, gdp_epsilon, gdp_mu, price
from .privacy.search import largest_budget
from .privacy.events import scale_event_count
from .solvers._base import Solver, SolverPlan, SolverResult, run_closing

__all__ = ["ovr_budget", "OneVsRest", "one_vs_rest", "ovr_targets"]


# ---------------------------------------------------------------------------------------------
# One-vs-rest: k binary fits, one budget
# ---------------------------------------------------------------------------------------------


def ovr_budget(events_for, n_classes, budget, pre_events=(), delta=None):
    """Per-class budget of ``n_classes`` one-vs-rest releases priced like one binary release.

    Every class's binary fit reads every row (its labels are "this class" /
    "the rest"), so under replace-one a change of one row changes all ``k``
    binary problems and their releases compose: the fit releases ``k`` times
    the events of one binary fit. The split is fixed before the data is read,
    from public quantities only:

    * the target is the accountant's price of the binary fit at ``budget``
      together with ``pre_events`` (the fit's private bound choices), i.e.
      exactly what the fit would cost with two classes (``budget`` itself when
      there are no pre-events and the solver calibrates exactly);
    * each class gets ``delta_c = budget.delta / k`` and the largest
      ``epsilon_c`` such that the price of ``pre_events`` and ``k`` copies of
      ``events_for((epsilon_c, delta_c))`` is at most the target, found by
      the one budget search (:func:`skdp.privacy.search.largest_budget`, to
      about ``1e-12``; never above the target). For Gaussian releases
      composed by exact GDP this gives ``sigma_c`` equal to the ``sigma`` of
      the whole budget for ``k`` times the releases.

    So a one-vs-rest fit costs what a binary fit costs, whatever ``k``: a fit
    whose label set is chosen during the fit (``classes="auto"``) is planned
    and charged as a binary fit, and the fit then spends at most that. Where a
    solver's public schedule jumps with its budget (a step count or batch size
    that is a function of epsilon) the price can land a little below the
    target (never above).

    Parameters
    ----------
    events_for : callable
        ``events_for(PrivacyBudget) -> list of events`` of one binary fit, a
        function of public quantities only (a solver's plan).
    n_classes : int
        ``k >= 1``.
    budget : PrivacyBudget
        The budget a binary fit would be calibrated to.
    pre_events : sequence of events, default=()
        Events released before (private bound choices), priced with the fits.
    delta : float or None, default=None
        The delta the whole fit is priced at (``pre_events`` included);
        ``None``: ``budget.delta``.

    Returns
    -------
    class_budget : PrivacyBudget
        The budget each binary fit is calibrated to (``budget`` when ``k = 1``).
    events : list
        The events of the ``k`` fits (each binary event's ``count`` times ``k``),
        without ``pre_events``.
    """
    k = int(n_classes)
    if k == 1:
        return budget, list(events_for(budget))
    pre = list(pre_events)
    delta_b = float(budget.delta)
    delta = delta_b if delta is None else float(delta)
    delta_c = delta_b / k
    target = price(pre + list(events_for(budget)), delta, budget.relation).budget.epsilon
    if not math.isfinite(target) or target <= 0:
        raise ValueError(f"The binary fit at {budget} has no finite price to split one-vs-rest.")
    made = {}

    def events_at(eps_c):
        if eps_c not in made:
            b = PrivacyBudget(eps_c, delta_c, budget.relation)
            made[eps_c] = (b, [scale_event_count(ev, k) for ev in events_for(b)])
        return pre + made[eps_c][1]

    # a guess to narrow the search: k releases of mu/sqrt(k)-GDP compose to mu-GDP (exact for Gaussian releases)
    guess = gdp_epsilon(gdp_mu(float(budget.epsilon), delta_b) / math.sqrt(k), delta_c) if delta_c > 0 else None
    eps_c = largest_budget(events_at, target, delta, float(budget.epsilon), relation=budget.relation,
                           guess=guess)
    events_at(eps_c)
    return made[eps_c]


class OneVsRest:
    """A binary solver run one-vs-rest on ``n_classes`` classes, priced as one release.

    Wraps a registered binary solver so that every estimator fits more than two
    classes the same way (:class:`~skdp.DPLinearSVC`,
    :class:`~skdp.DPSparseLogisticRegression`; the multi-party estimator uses
    :func:`ovr_budget` directly). It follows the solver protocol
    (:class:`~skdp.solvers.Solver`): :meth:`make_plan` calibrates one binary
    plan to the per-class budget of :func:`ovr_budget` from the public view of
    the problem, before any row is read, so that ``pre_events`` (the fit's
    private bound choices) and the ``k`` fits cost what ``pre_events`` and one
    binary fit at the same budget cost (priced at ``delta``, the estimator's);
    its events are that binary plan's events ``k`` times; :meth:`run` executes the binary plan once per class on the same
    bounded rows, with labels ``problem.y[:, c]`` (``+1`` for class ``c``,
    ``-1`` for the rest, from :func:`ovr_targets`), drawing every class's noise
    from the fit's one generator in turn (fresh, independent draws). The
    coefficients are stacked as columns, ``(n_features, k)``. Every other
    attribute (name, geometry, checks) is the wrapped solver's.
    """

    plan = Solver.plan
    solve = Solver.solve

    def __init__(self, solver, n_classes, pre_events=(), delta=None):
        if int(n_classes) < 2:
            raise ValueError(f"OneVsRest needs at least 2 classes, got {n_classes!r}.")
        self.solver = solver
        self.n_classes = int(n_classes)
        self.pre_events = tuple(pre_events)
        self.delta = delta

    def price_with(self, pre_events, delta):
        """Set the events released before the fits and the delta the whole fit is priced at (see above)."""
        self.pre_events, self.delta = tuple(pre_events), delta
        return self

    def __getattr__(self, name):
        if name == "solver":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.solver, name)

    def __repr__(self):
        return f"OneVsRest({self.solver.name!r}, n_classes={self.n_classes})"

    def make_plan(self, problem, budget):
        class_budget, events = ovr_budget(lambda b: self.solver.make_plan(problem, b).events, self.n_classes,
                                          budget, self.pre_events, self.delta)
        inner = self.solver.make_plan(problem, class_budget)
        return SolverPlan(tuple(events), inner.noise_scale,
                          {"plan": inner, "class_budget": class_budget, "n_classes": self.n_classes})

    def run(self, problem, plan, rng):
        Y = np.asarray(problem.y)
        if Y.ndim != 2 or Y.shape[1] != self.n_classes:
            raise ValueError(f"one-vs-rest needs labels of shape (n_samples, {self.n_classes}), got {Y.shape}.")
        results = [run_closing(self.solver, dataclasses.replace(problem, y=np.ascontiguousarray(Y[:, c])),
                               plan.settings["plan"], rng) for c in range(self.n_classes)]
        coef = np.stack([np.asarray(r.coef, dtype=float) for r in results], axis=-1)
        cb = plan.settings["class_budget"]
        info = dict(results[0].info, one_vs_rest=True, n_classes=self.n_classes,
                    class_epsilon=cb.epsilon, class_delta=cb.delta)
        found = {}
        for key in results[0].diagnostics:
            values = [r.diagnostics.get(key) for r in results]
            found[key] = (max(values) if all(isinstance(v, (int, float, np.number)) for v in values)
                          else values)
        scales = [r.noise_scale for r in results]
        noise_scale = None if scales[0] is None else (scales[0] if len(set(map(float, np.ravel(scales)))) == 1
                                                      else np.asarray(scales, float))
        return SolverResult(coef, results[0].n_iter, info, found, noise_scale=noise_scale)


def one_vs_rest(solver, n_classes, pre_events=(), delta=None):
    """``solver`` itself for two classes, else :class:`OneVsRest` over ``n_classes``."""
    return solver if int(n_classes) <= 2 else OneVsRest(solver, n_classes, pre_events, delta)


def ovr_targets(selection, y, inactive=0.0):
    """``(n_samples, k)`` one-vs-rest labels: column ``c`` is ``+1`` where ``y`` is class ``c``, else ``-1``.

    Rows whose label ``classes="auto"`` did not select get ``inactive`` in
    every column (estimators that zero those rows may leave any value).
    """
    idx = class_indices(selection, y)
    Y = np.where(idx[:, None] == np.arange(selection.classes.size)[None, :], 1.0, -1.0)
    if selection.active is not None:
        Y[~np.asarray(selection.active, dtype=bool)] = inactive
    return Y
