"""The fit of every skdp estimator, top to bottom: plan -> charge -> read -> select bounds -> bound and run -> release.

:func:`private_fit` is the whole protocol of a private fit, in one function
that every estimator's ``fit`` calls (the linear models, Lasso, the sparse
models, the scalers, the encoder, the imputer and the multi-party
estimators; on NumPy, SciPy and Dask input alike). What differs between
estimators is said by five methods each one defines:

``_plan_fit(X, y, **fit_params)``
    The fit's :class:`~skdp._plan.FitPlan` (:func:`skdp._plan.make_plan`) from
    the parameters and the public facts of the input (its shape, the number of
    targets, the parties' sizes), with every refusal that needs no row
    (``None`` when ``X`` has no readable shape: the input's own checks then
    raise the proper error). No row is read.
``_read(plan, X, y, **fit_params)``
    The validated input (``validate_data``, the row weights): after the
    charge, before any mechanism. The caller's arrays are never modified.
``_select_bounds(plan, data, rng)``
    The private choices the plan provides for (label set, feature scales,
    row bound, label range, clip norm, feature ranges), each at the plan's
    epsilon, drawing from the fit's one generator: a :class:`Bounds`.
``_run(plan, data, bounds, rng)``
    The rows bounded as chosen and the plan's mechanism run at the plan's
    budget (a solver: :func:`run_solver`; a scaler's noisy moments, an
    encoder's category selection): a :class:`Ran`.
``_set_fitted(plan, data, bounds, ran)``
    The model's fitted attributes, from the released values only
    (post-processing).

Between them :func:`private_fit` charges the plan to the explicit or active
ledger before any row is read (:func:`skdp._protocol.charge`), makes the
fit's one generator (:func:`skdp._random.fit_randomness`) and releases what
ran (:func:`skdp._protocol.release`: the ledger's record checked, the events
priced, the privacy attributes set).
"""

from dataclasses import dataclass, field

from . import diagnostics
from ._classes import refused_after_selection
from ._plan import rows_elsewhere
from ._protocol import NO_TARGETS, charge, release
from ._random import fit_randomness
from ._warnings import warn_heavy_clipping
from ._weights import check_sample_weight
from .exceptions import UncertifiedSolutionError
from .solvers._problem import public_view

__all__ = ["Bounds", "Ran", "forget_fit", "private_fit", "run_solver"]


@dataclass
class Bounds:
    """What the private bound choices of one fit chose (:meth:`_select_bounds`).

    Attributes
    ----------
    events : list
        The events of the choices, in the plan's order (``plan.pre_events``'s).
    values : dict
        What was chosen (a row bound, a label range, the label set, a clip
        norm), by name, for :meth:`_run` and :meth:`_set_fitted`.
    derived : bool
        A privacy-relevant bound was read from the data (warned with a
        :class:`~skdp.PrivacyLeakWarning`): the fit has no finite guarantee.

    A refusal while the rows are bounded or the mechanism runs, after these
    choices spent budget on the rows, is a
    :class:`~skdp.exceptions.SpentFitError` carrying their price.
    """

    events: list = field(default_factory=list)
    values: dict = field(default_factory=dict)
    derived: bool = False


@dataclass
class Ran:
    """What the main release of one fit ran (:meth:`_run`): its events and what :func:`release` reports.

    ``result`` and ``solver`` are set for a solver's run (:func:`run_solver`),
    ``n_rows`` with them (heavy clipping of a given bound is warned about);
    ``values`` holds what :meth:`_set_fitted` turns into the model;
    ``diagnostics``: exact statistics of the rows, kept by
    :mod:`skdp.diagnostics` only, never on the model.
    """

    events: list
    noise_scale: object
    result: object = None
    solver: object = None
    n_rows: int = None
    n_outputs: int = 1
    n_clipped: int = None
    derived: bool = False
    values: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)


def private_fit(estimator, X, y=NO_TARGETS, *, privacy_ledger=None, **fit_params):
    """Fit ``estimator`` privately on ``X`` (and ``y``): the one fit protocol (see the module docstring).

    ``y=NO_TARGETS``: a transformer's fit; ``fit_params`` (e.g.
    ``sample_weight``, ``parties``) go to the estimator's ``_plan_fit`` and
    ``_read``. A fit replaces the model: once the parameters pass their
    checks, the fitted attributes of an earlier fit are removed, and a fit
    that fails after that leaves none of its own (the estimator is then not
    fitted). Returns ``estimator``.
    """
    # 1. plan: the parameters and the public facts only (n, d, targets, parties); no row is read
    plan = estimator._plan_fit(X, y, **fit_params)
    forget_fit(estimator)
    try:
        # 2. bad labels and weights are refused (before anything is charged), then the plan's events are charged
        #    to the explicit or active ledger (rows that live elsewhere are checked block by block when read)
        elsewhere = rows_elsewhere(X)
        if plan is not None and not elsewhere and fit_params.get("sample_weight") is not None:
            check_sample_weight(fit_params["sample_weight"], plan.public.n_samples)
        charge(estimator, X, privacy_ledger, plan, y=NO_TARGETS if elsewhere else y)
        # 3. read the rows: validation, weights (the caller's arrays are not modified)
        data = estimator._read(plan, X, y, **fit_params)
        if plan is None:  # an input whose shape could not be read, yet that validation accepted: nothing is charged
            raise TypeError(f"{type(estimator).__name__}: the shape (n_samples, n_features) of X could not be read "
                            "before the fit (it is public, and the ledger is charged from it before any row is "
                            "read); pass a 2-D array, a sparse matrix or a DataFrame.")
        rng = fit_randomness(estimator)
        # 4. select the bounds the plan provides for, each at the plan's epsilon
        bounds = estimator._select_bounds(plan, data, rng)
        with refused_after_selection(estimator, bounds.events):
            # 5. bound the rows and run the plan's mechanism at the plan's budget
            ran = estimator._run(plan, data, bounds, rng)
        if ran.n_rows is not None:
            warn_heavy_clipping(estimator, ran.n_rows, n_rows_clipped=ran.n_clipped,
                                n_labels_clipped=ran.diagnostics.get("n_labels_clipped"))
        # 6. release: the ledger's record covers what ran, the accountant prices it, the privacy attributes are set
        release(estimator, list(bounds.events) + list(ran.events), derived=bounds.derived or ran.derived,
                noise_scale=ran.noise_scale, result=ran.result, solver=ran.solver, n_clipped=ran.n_clipped,
                n_outputs=ran.n_outputs, **ran.diagnostics)
        # 7. the model, from the released values only
        estimator._set_fitted(plan, data, bounds, ran)
    except BaseException:
        forget_fit(estimator)
        raise
    return estimator


def forget_fit(estimator):
    """Remove the fitted attributes (public names ending in ``_``) of ``estimator``'s latest fit."""
    for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]:
        delattr(estimator, name)


def run_solver(estimator, solver, problem, plan, rng, **ran):
    """Run ``solver`` on the bounded ``problem`` at the plan's budget: the :class:`Ran` of a solver's fit.

    The solver plan made while planning is used where the problem's public
    view is the planned one (else the solver plans once more on that view:
    a bound chosen privately during the fit). The exact numbers behind a
    refusal (:class:`~skdp.exceptions.UncertifiedSolutionError`) go to
    :func:`~skdp.fit_diagnostics`, never into the error's message. ``ran``:
    further fields of the :class:`Ran` (``n_clipped``, ``derived``,
    ``diagnostics``, ``values``).
    """
    solver_plan = plan.solver_plan_for(solver, public_view(problem))
    try:
        if solver_plan is None:  # a solver that plans inside its own solve
            result = solver.solve(problem, plan.budget, rng)
        else:
            result = solver.solve(problem, plan.budget, rng, plan=solver_plan)
    except UncertifiedSolutionError as exc:
        diagnostics.record(estimator, **exc.__dict__.pop("_diagnostics", {}))
        raise
    return Ran(list(result.events), result.noise_scale, result=result, solver=solver, n_rows=problem.n,
               n_outputs=getattr(problem, "n_outputs", 1), **ran)
