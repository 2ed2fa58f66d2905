"""The plan of a private fit: every public decision, made once, before any row is read.

:func:`make_plan` builds one :class:`FitPlan` from the public facts of a fit
(:class:`PublicFit`: the parameters, ``n``, ``d``, the number of targets, the
parties' sizes): the solver or mechanism, the private bound selections and
their budget shares, the budget of the main release (one budget search,
:func:`skdp.privacy.search.largest_budget`) and the events the fit will
release. It is the first step of the one fit protocol,
:func:`skdp._fit.private_fit` (plan, charge, read, select bounds, bound and
run, release, fitted attributes): the ledger is charged the plan's events,
the bound selections get the plan's epsilon, and the mechanism runs at the
plan's budget.

The plan is a function of public quantities only, so the ledger's charge,
``planned_events`` and the fit see the same plan; ``planned_events(n, d)`` is
``make_plan(estimator, PublicFit(n, d)).events``.
"""

from dataclasses import dataclass, field, fields, is_dataclass

import numpy as np
from sklearn.utils.validation import _num_features, _num_samples

from .solvers._base import Solver

__all__ = ["RowsElsewhere", "rows_elsewhere", "PublicFit", "FitPlan", "follows_plan_protocol", "make_plan", "public_fit", "same_public_view",
           "transformer_plan"]


class RowsElsewhere:
    """Base class of a fit's input whose rows stay where they live and are read by reductions there.

    A Dask collection's row blocks (:class:`skdp._dask.DaskRows`), the
    parties' chunks of a multi-party fit: ``n`` and ``d`` are public
    attributes, and no release that needs the rows in memory is planned
    (:attr:`PublicFit.reduced_rows`). Recognised by type, never by an
    attribute a user's object (a DataFrame's column) could carry.
    """

    n: int
    d: int


def rows_elsewhere(X):
    """Whether ``X`` is a :class:`RowsElsewhere` (its rows are read where they live)."""
    return isinstance(X, RowsElsewhere)


@dataclass(frozen=True)
class PublicFit:
    """What a plan may read: the public facts of a fit (never a row).

    ``n_features`` is the raw number of columns (``None`` when the plan is
    asked for without it), ``n_targets`` the columns of a 2-D ``y`` (``None``:
    a 1-D ``y``), ``parties`` the public row counts of a multi-party fit
    (the estimator's public class set is read from its parameters),
    ``reduced_rows`` whether the rows are only read by reductions where
    they live (a Dask fit: no release that needs them in memory is planned).
    """

    n_samples: int
    n_features: int = None
    n_targets: int = None
    parties: tuple = None
    #: the rows are read by reductions where they live (Dask), never held in this process
    reduced_rows: bool = False


@dataclass
class FitPlan:
    """Every public decision of one fit (see the module docstring).

    Attributes
    ----------
    public : PublicFit
    guaranteed : bool
        ``False`` when a privacy-relevant bound is read from the data (the
        fit then has no finite guarantee and :attr:`events` is ``None``).
    pre_events : list
        Events of the private bound selections and label-set selection, in the
        order the fit makes them.
    selection_epsilon : float
        Epsilon of each private bound selection (0 without one).
    budget : PrivacyBudget or None
        The budget the main release (solver, mechanism) is calibrated to, so
        that it and ``pre_events`` cost the estimator's ``(epsilon, delta)``.
    solver : Solver or None
        The solver the fit runs (one-vs-rest where the public class set has
        more than two classes).
    view : PublicProblem, PublicSparseProblem or None
        The solver's data-free problem the plan was made on (:func:`skdp.solvers.public_view`).
    spec : dict
        The estimator's further public decisions (loss, targets' bounds,
        coefficient ball, ...).
    """

    public: PublicFit
    guaranteed: bool = True
    pre_events: list = field(default_factory=list)
    selection_epsilon: float = 0.0
    budget: object = None
    solver: object = None
    view: object = None
    spec: dict = field(default_factory=dict)
    #: the solver's plan on ``view`` at ``budget`` (set by the budget search, else made on first use)
    solver_plan: object = None
    #: the main release's events where they are not a solver's (a scaler's, an encoder's)
    release_events: list = None

    def main_events(self):
        """The main release's events (the solver's plan on the public view at the plan's budget)."""
        if self.release_events is not None:
            return list(self.release_events)
        if self.solver is None:
            return []
        solver_plan = self.solver_plan_for(self.solver, None)
        if solver_plan is None:
            return list(self.solver.plan(self.view, self.budget))
        return list(solver_plan.events)

    def solver_plan_for(self, solver, view):
        """``solver``'s plan at :attr:`budget` on the public ``view`` of the fit's problem.

        The plan made while planning when ``solver`` is the plan's and ``view``
        equals the plan's view in every field (:func:`same_public_view`: the
        row bound was public, the class set as planned), else a new plan on
        ``view`` (a bound chosen privately during the fit; every price is the
        same, the noise scales follow the bound). ``None`` for a solver that
        plans and solves in its own ``plan`` and ``solve`` (a user's solver
        need not split them, see :func:`follows_plan_protocol`).
        """
        if not follows_plan_protocol(solver):
            return None
        if solver is self.solver and (view is None or same_public_view(view, self.view)):
            if self.solver_plan is None:
                self.solver_plan = self.solver.make_plan(self.view, self.budget)
            return self.solver_plan
        return solver.make_plan(view, self.budget)

    @property
    def events(self):
        """Every event the fit releases, in order, or ``None`` without a finite guarantee."""
        if not self.guaranteed:
            return None
        return list(self.pre_events) + self.main_events()


def follows_plan_protocol(solver):
    """Whether ``solver`` plans in ``make_plan`` and runs the plan in :meth:`Solver.solve` (every registered solver
    does; a user's solver may instead override ``plan`` and ``solve`` themselves, which are then called as such)."""
    cls = type(solver)
    return getattr(cls, "make_plan", None) is not Solver.make_plan and getattr(cls, "solve", None) is Solver.solve


def same_public_view(a, b):
    """Whether two data-free problems (or their parts) are equal in every public field.

    Compares dataclass fields, plain objects' attributes (losses, penalties,
    constraints), arrays and numbers exactly; anything it cannot compare is
    unequal (the caller then plans again, which is always correct).
    """
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (int, float, str, bool, type(None), np.number)):
        return a == b or (a != a and b != b)
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_public_view(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_public_view(a[k], b[k]) for k in a)
    if is_dataclass(a):
        return all(same_public_view(getattr(a, f.name), getattr(b, f.name)) for f in fields(a) if f.init and f.compare)
    if hasattr(a, "__dict__"):
        return same_public_view(vars(a), vars(b))
    return False


def public_fit(X, **facts):
    """The :class:`PublicFit` of a fit on ``X`` (only its shape is read) with the further public ``facts``.

    ``None`` when ``X`` has no readable 2-D shape or no row or column: the
    fit's input checks then raise the proper error. Rows read where they
    live (a :class:`RowsElsewhere`, e.g. a :class:`~skdp._dask.DaskRows`) give their
    public ``n`` and ``d`` and plan no release that needs them in memory.
    """
    if getattr(X, "ndim", 2) != 2 and not rows_elsewhere(X):  # e.g. a 3-D array: refused by the input checks
        return None
    if rows_elsewhere(X):
        return PublicFit(int(X.n), int(X.d), reduced_rows=True, **facts)
    try:
        n_samples, n_features = _num_samples(X), _num_features(X)
    except TypeError:
        return None
    if min(n_samples, n_features) < 1:  # refused by the fit's input checks, naming X
        return None
    return PublicFit(int(n_samples), int(n_features), **facts)


def make_plan(estimator, public):
    """The one :class:`FitPlan` of ``estimator``'s fit on data with the public facts ``public``.

    Reads the estimator's parameters and ``public`` only; called once per fit
    (before the ledger is charged) and by ``planned_events``. Each estimator
    says what its plan holds in its ``_plan(public)`` method; a transformer
    without one is planned by its ``planned_events(n, d)``.
    """
    if not isinstance(public, PublicFit):
        raise TypeError(f"make_plan needs a PublicFit, got {type(public).__name__}.")
    if hasattr(estimator, "_plan"):
        return estimator._plan(public)
    # a transformer whose release is planned by its ``planned_events`` alone (a scaler, an encoder, an imputer)
    events = estimator.planned_events(public.n_samples, public.n_features)
    return FitPlan(public, guaranteed=events is not None, release_events=[] if events is None else events)


def transformer_plan(estimator, X):
    """The :class:`FitPlan` of a transformer's fit on ``X`` (its shape only), or ``None`` without a readable one.

    :func:`make_plan` on :func:`public_fit`; ``None`` when ``X`` has no
    readable 2-D shape or no row or column (the fit's input checks then
    raise the proper error).
    """
    public = public_fit(X)
    return None if public is None else make_plan(estimator, public)
