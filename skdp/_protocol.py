"""The two steps of every fit that touch the ledger and the privacy attributes: charge, and release.

:func:`skdp._fit.private_fit` (the one fit protocol) calls them around the
estimator's own steps:

1. :func:`charge` -- before the data is touched, the plan's events
   (:func:`skdp._plan.make_plan`, computed from public quantities only) are
   charged to the explicit or active :class:`~skdp.PrivacyLedger`, together
   with the fit's noise source;
2. the estimator reads the rows, selects its private bounds, bounds the rows
   and runs the plan's mechanism (a solver, a scaler's noisy statistics, a
   secure aggregation);
3. :func:`release` -- with a ledger, the record of the fit must cover the
   events that ran (:func:`check_charged`: amended if they cost more than
   the plan and the budget allows, else nothing is released); the
   accountant prices them and the privacy attributes are set, the same way
   for every estimator: ``privacy_events_``, ``accountant_``,
   ``privacy_nominal_``, ``privacy_spent_`` (``epsilon=inf`` when a bound was
   read from the data), ``noise_scale_`` and, for solvers, ``solver_``,
   ``n_iter_``, ``solver_info_``; exact statistics of the data go to
   :mod:`skdp.diagnostics`, never onto the model.

The label-set rules live in :mod:`skdp._classes`, one-vs-rest fits in
:mod:`skdp._ovr`, the predictions in :mod:`skdp._predict`.
"""

import math
import uuid
import warnings

import numpy as np
from sklearn.base import is_classifier
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import get_tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_y, _num_features, _num_samples, check_consistent_length

from . import diagnostics
from ._classes import check_class_set, refuse_unknown_labels
from ._random import noise_source
from ._warnings import caller_stacklevel as _caller_stacklevel
from .exceptions import BudgetExceededError, WeakDeltaWarning
from .privacy import PrivacyBudget, active_ledger, price

__all__ = ["NO_TARGETS", "check_targets", "charge", "check_charged", "release", "N_ITER_STYLES", "n_iter_attribute"]


#: ``charge(..., y=NO_TARGETS)``: the caller validates ``y`` itself (a transformer, rows read where they live)
NO_TARGETS = object()


def check_targets(estimator, X, y):
    """Input checks of a supervised fit that need no budget, run by :func:`charge` before it charges.

    ``X`` must have at least one row and one feature (only its shape is
    read); ``y`` is checked as ``validate_data`` would (not ``None``, 1-D
    unless the estimator's tags allow several targets, finite, numeric for a
    regressor; sklearn's ``_check_y``), its length against ``X``'s, and for a
    classifier its labels (:func:`~sklearn.utils.multiclass.check_classification_targets`,
    and every label in the public ``classes``). So a fit on bad input raises
    ``ValueError`` naming ``X``, ``y`` or ``classes`` before the ledger is
    charged. Nothing is returned and the caller's arrays are not modified.
    """
    name = type(estimator).__name__
    try:
        shape = (_num_samples(X), _num_features(X))
    except TypeError:  # not a 2-D array-like: validate_data raises the proper error after the charge
        shape = None
    if shape is not None and min(shape) < 1:
        what = "sample(s)" if shape[0] < 1 else "feature(s)"
        raise ValueError(f"X: found array with 0 {what} (shape={shape}) while a minimum of 1 is required by "
                         f"{name}.")
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    classifier = is_classifier(estimator)
    with warnings.catch_warnings():  # a column vector is warned once, by the fit's own validate_data
        warnings.simplefilter("ignore", DataConversionWarning)
        y = _check_y(y, multi_output=get_tags(estimator).target_tags.multi_output, y_numeric=not classifier,
                     estimator=estimator)
    if shape is not None:
        check_consistent_length(X, y)
    if classifier:
        check_classification_targets(y)
        classes = check_class_set(estimator)
        if classes is not None:
            refuse_unknown_labels(np.unique(y), classes)


def charge(estimator, X, privacy_ledger, plan=None, y=NO_TARGETS):
    """Charge ``estimator``'s planned fit on ``X`` to the explicit or active ledger.

    Runs before the data is used by any mechanism: ``plan`` is the fit's
    :class:`~skdp._plan.FitPlan`, made from the shape of ``X`` (public: n and
    d) and the parameters only, a transformer's too
    (:func:`skdp._plan.transformer_plan`); ``None`` when ``X`` has no
    readable shape: nothing is charged and the fit's validation raises. With
    ``y`` (the fit's labels), :func:`check_targets` first refuses bad input
    (``ValueError``) before anything is charged. Warns
    (:class:`~skdp.exceptions.WeakDeltaWarning`) when ``delta >= 1/n``.
    Returns the planned events, or ``None`` when there is no ledger.
    """
    if y is not NO_TARGETS:
        check_targets(estimator, X, y)
    n = plan.public.n_samples if plan is not None else 0
    if n and estimator.delta >= 1.0 / n:
        warnings.warn(f"delta={estimator.delta:g} is at least 1/n = 1/{n} = {1.0 / n:.3g}: a mechanism that "
                      "publishes one random row meets that guarantee. Use delta much smaller than 1/n "
                      f"(e.g. delta <= {0.1 / n:.1g}).", WeakDeltaWarning, stacklevel=_caller_stacklevel())
    estimator.__dict__.pop("_ledger_charge", None)  # a charge of an earlier fit never counts for this one
    ledger = privacy_ledger if privacy_ledger is not None else active_ledger()
    if ledger is None or plan is None:
        return None
    planned = plan.events
    solver = getattr(estimator, "solver", None)
    label = type(estimator).__name__ + (f"(solver={solver!r}, " if solver is not None else "(")
    record_id = uuid.uuid4().hex
    ledger.charge(planned, label=label + f"epsilon={estimator.epsilon})", noise_source=noise_source(estimator),
                  record_id=record_id)
    if planned is not None and hasattr(ledger, "amend"):  # not a composite fit's suspended ledger
        estimator._ledger_charge = (list(planned), ledger, record_id)
    return planned


def check_charged(estimator, events):
    """Make the ledger's record of this fit cover the ``events`` it ran, before anything is released.

    :func:`charge` charged the plan before the data was read. Here the events
    the fit actually ran are priced by the accountant at the ledger's delta
    (how the ledger composes) and compared with that charge. They differ when
    the plan was made before a public fact of the fit was known: with
    ``classes="auto"`` and a one-vs-rest solver the ledger is charged a binary
    fit, while the fit runs one binary plan per selected class, calibrated
    (:func:`ovr_budget`) to cost at most the binary fit at the *estimator's*
    delta; at another delta ``k`` releases and one need not price alike (e.g.
    0.1% more for ``DPLinearSVC`` on three classes at a ledger delta of 1e-3,
    fits at 1e-5). If they cost more (by any amount, a rounding included), the
    record is amended to the events that ran when the ledger's budget still
    holds (:meth:`~skdp.PrivacyLedger.amend`), so the ledger never understates
    what was released; otherwise the fitted attributes set so far are removed
    and :class:`~skdp.BudgetExceededError` is raised: nothing is released, and
    the ledger keeps the first charge. Without a ledger nothing is checked (the
    fit's ``privacy_spent_`` is priced from the events that ran). Returns
    ``(charged, spent)`` budgets at the ledger's delta, or ``None``.
    """
    charged = estimator.__dict__.pop("_ledger_charge", None)
    if charged is None:
        return None
    planned, ledger, record_id = charged
    budget = ledger.budget
    paid = price(planned, budget.delta, budget.relation).budget
    spent = price(list(events), budget.delta, budget.relation).budget
    if spent.epsilon <= paid.epsilon and spent.delta <= paid.delta:
        return paid, spent
    try:
        ledger.amend(record_id, list(events))
    except BudgetExceededError as exc:
        for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]:
            delattr(estimator, name)
        raise BudgetExceededError(
            f"{type(estimator).__name__} ran releases priced at {spent} by the accountant at its ledger's delta, "
            f"more than the {paid} charged before the fit (planned before the label set was known), and the "
            f"ledger's budget does not cover them; the model is not released. {exc}") from exc
    return paid, spent


def release(estimator, events, *, derived, noise_scale, result=None, solver=None, n_clipped=None, n_outputs=1,
            **diagnostic_values):
    """Price ``events`` and set the privacy attributes of a fitted ``estimator``.

    Parameters
    ----------
    estimator : the fitted skdp estimator
    events : list of privacy events, in the order they ran (bound selections first)
    derived : bool
        Whether a privacy-relevant bound was read from the data: ``privacy_spent_``
        is then ``epsilon=inf`` (``privacy_nominal_`` keeps the accountant's price).
    noise_scale : float or ndarray
        The noise's standard deviation (Gaussian), scale (Laplace, L2-Laplace)
        or Gumbel scale (selections), one per released statistic where they differ.
    result : SolverResult or None
        Sets ``solver_info_`` and ``n_iter_``, and its non-private diagnostics.
    solver : Solver or None
        Sets ``solver_``.
    n_clipped : int or None
        Rows clipped to the norm bound (a non-private diagnostic).
    n_outputs : int
        Targets fitted jointly (the length of a per-target ``n_iter_``).
    **diagnostic_values
        Further non-private diagnostics (kept by :mod:`skdp.diagnostics`).
    """
    check_charged(estimator, events)
    report = price(list(events), estimator.delta)
    estimator.privacy_events_ = list(events)
    estimator.accountant_ = report.method
    estimator.privacy_nominal_ = report.budget
    estimator.privacy_spent_ = PrivacyBudget(math.inf, estimator.delta) if derived else report.budget
    estimator.noise_scale_ = float(noise_scale) if np.ndim(noise_scale) == 0 else np.asarray(noise_scale, float)
    if solver is not None:
        estimator.solver_ = solver.name
    found = {} if n_clipped is None else {"n_rows_clipped": int(n_clipped)}
    if result is not None:
        estimator.n_iter_ = n_iter_attribute(estimator, result.n_iter, solver, n_outputs)
        estimator.solver_info_ = dict(result.info)
        found.update(result.diagnostics)
    diagnostics.record(estimator, **found, **diagnostic_values)
    if getattr(estimator, "verbose", 0):
        print(f"[{type(estimator).__name__}] "
              + (f"solver={solver.name} " if solver is not None else "")
              + f"noise_scale={np.array2string(np.asarray(estimator.noise_scale_), precision=4)} "
              f"privacy_spent={estimator.privacy_spent_} "
              f"({report.method})")
    return report


#: ``n_iter_`` styles of :func:`n_iter_attribute`, one per scikit-learn counterpart
N_ITER_STYLES = ("int", "array", "per_target")


def n_iter_attribute(estimator, n_iter, solver=None, n_outputs=1):
    """``n_iter_`` of a fit whose solver ran ``n_iter`` steps, typed and shaped as the sklearn counterpart's.

    The estimator class's ``_n_iter_style`` (one of :data:`N_ITER_STYLES`) says which:

    * ``"int"`` (``Lasso``, ``LinearSVC``; the default): an ``int``;
    * ``"array"`` (``LogisticRegression``): an int32 array of shape ``(1,)``,
      for two classes and more (scikit-learn's multinomial fit is one problem;
      a one-vs-rest fit runs the same public schedule for every class);
    * ``"per_target"`` (``Ridge``): ``None`` for a direct solver (one release,
      ``solver.iterative`` false: scikit-learn's direct solvers report
      ``None`` too), else an int32 array of shape ``(n_outputs,)``, one per
      target fitted jointly (every target shares the one schedule).

    The count is a public schedule, so the attribute carries nothing private.
    """
    style = getattr(estimator, "_n_iter_style", "int")
    if style not in N_ITER_STYLES:  # pragma: no cover - a class attribute
        raise ValueError(f"_n_iter_style must be one of {N_ITER_STYLES}, got {style!r}.")
    if style == "int":
        return int(n_iter)
    if style == "array":
        return np.array([n_iter], dtype=np.int32)
    if solver is not None and not getattr(solver, "iterative", True):
        return None
    return np.full(int(n_outputs), n_iter, dtype=np.int32)
