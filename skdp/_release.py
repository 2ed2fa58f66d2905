"""The part of every private fit that is the same for all skdp estimators.

Each estimator's ``fit`` follows one protocol:

1. :func:`charge` -- before the data is touched, the events the fit will
   release (``estimator.planned_events(n, d)``, computed from public
   quantities only) are charged to the explicit or active
   :class:`~skdp.PrivacyLedger`, together with the fit's noise source;
2. the estimator bounds the data and runs its mechanism (a solver, a scaler's
   noisy statistics, a secure aggregation);
3. :func:`release` -- with a ledger, the record of the fit must cover the
   events that ran (:func:`check_charged`: amended if they cost more than
   the plan and the budget allows, else nothing is released); the
   accountant prices them and the
   privacy attributes are set, the same way for every estimator:
   ``privacy_events_``, ``accountant_``, ``privacy_nominal_``,
   ``privacy_spent_`` (``epsilon=inf`` when a bound was read from the data),
   ``noise_scale_`` and, for solvers, ``solver_``, ``n_iter_``,
   ``solver_info_``; exact statistics of the data go to
   :mod:`skdp.diagnostics`, never onto the model.

The label-set rules of the classifiers (:func:`check_class_set`,
:func:`fit_classes`), their one-vs-rest fits (:func:`ovr_budget`,
:class:`OneVsRest`, :func:`ovr_targets`) and their predictions
(:class:`LinearClassifierMixin`) live here too, so they are written once.
"""

import contextlib
import dataclasses
import math
import os
import sys
import uuid
import warnings
from typing import NamedTuple

import numpy as np
import sklearn
from scipy import sparse, special
from sklearn.base import is_classifier
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import get_tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (_check_y, _num_features, _num_samples, check_consistent_length, check_is_fitted,
                                      validate_data)

from . import diagnostics
from ._random import noise_source
from .bounds import clip_features
from .exceptions import (BudgetExceededError, PrivacyLeakWarning, SpentFitError, UncertifiedSolutionError,
                         WeakDeltaWarning)
from .privacy import ApproxDPEvent, PrivacyBudget, active_ledger, gdp_epsilon, gdp_mu, price, zcdp_rho
from .privacy.events import scale_event_count
from .privacy.label_set import (gaussian_label_set_events, gaussian_label_set_threshold,
                                private_label_set_gaussian_from_counts)
from .solvers._base import Solver, SolverPlan, SolverResult, run_closing

__all__ = ["charge", "check_targets", "refuse_unknown_labels", "check_charged", "refused_after_selection",
           "release", "n_iter_attribute", "solve_and_release", "warn_derived", "warn_heavy_clipping",
           "check_class_set", "fit_classes",
           "classes_from_counts", "class_indices", "zero_inactive_rows", "zero_rows", "class_selection_budget",
           "class_selection_events", "basic_split", "plan_after", "ClassSelection", "CLASS_SELECTION_SHARE",
           "linear_scores", "ovr_budget", "OneVsRest", "one_vs_rest", "ovr_targets", "OVR_RTOL",
           "OVR_MAX_EVALUATIONS", "LinearRegressorMixin", "LinearClassifierMixin", "ProbabilisticClassifierMixin"]


#: frames in these directories are library code; warnings about a user's call point past them
_LIBRARY_DIRS = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(sklearn.__file__)))


#: ``charge(..., y=_NO_TARGETS)``: the caller validates ``y`` itself (a scaler, a distributed fit)
_NO_TARGETS = object()


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


def refuse_unknown_labels(labels, classes):
    """``ValueError`` if some of the distinct ``labels`` of ``y`` are not in the public ``classes``."""
    unknown = np.setdiff1d(labels, classes)
    if unknown.size:
        raise ValueError(f"y contains labels not in classes: {unknown.tolist()!r}.")


def charge(estimator, X, privacy_ledger, y=_NO_TARGETS, **plan_kwargs):
    """Charge ``estimator``'s planned fit on ``X`` to the explicit or active ledger.

    Runs before the data is used by any mechanism: only the shape of ``X``
    (public: n and d) is used for the plan. With ``y`` (the fit's labels),
    :func:`check_targets` first refuses bad input (``ValueError``) before
    anything is charged. Warns (:class:`~skdp.exceptions.WeakDeltaWarning`)
    when ``delta >= 1/n``. Returns the planned events, or ``None`` when there
    is no ledger.
    """
    if y is not _NO_TARGETS:
        check_targets(estimator, X, y)
    try:
        n = _num_samples(X)
    except TypeError:  # not array-like: validate_data raises the proper error right after
        n = 0
    if n and estimator.delta >= 1.0 / n:
        warnings.warn(f"delta={estimator.delta:g} is at least 1/n = 1/{n} = {1.0 / n:.3g}: a mechanism that "
                      "publishes one random row meets that guarantee. Use delta much smaller than 1/n "
                      f"(e.g. delta <= {0.1 / n:.1g}).", WeakDeltaWarning, stacklevel=_caller_stacklevel())
    estimator.__dict__.pop("_ledger_charge", None)  # a charge of an earlier fit never counts for this one
    ledger = privacy_ledger if privacy_ledger is not None else active_ledger()
    if ledger is None:
        return None
    planned = estimator.planned_events(_num_samples(X), _num_features(X), **plan_kwargs)
    solver = getattr(estimator, "solver", None)
    label = type(estimator).__name__ + (f"(solver={solver!r}, " if solver is not None else "(")
    record_id = uuid.uuid4().hex
    ledger.charge(planned, label=label + f"epsilon={estimator.epsilon})", noise_source=noise_source(estimator),
                  record_id=record_id)
    if planned is not None and hasattr(ledger, "amend"):  # not a composite fit's suspended ledger
        estimator._ledger_charge = (list(planned), ledger, record_id)
    return planned


#: relative rounding allowed by :func:`check_charged` (a plan priced with a placeholder bound, e.g. K = 1 for
#: ``data_norm="auto"``, prices the same as the chosen bound's events up to floating-point rounding)
CHARGE_RTOL = 1e-9


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
    fits at 1e-5). If they cost more (beyond ``CHARGE_RTOL``, rounding), the
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
    if spent.epsilon <= paid.epsilon * (1 + CHARGE_RTOL):
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


def _caller_stacklevel():
    """``stacklevel`` of the first frame outside skdp and scikit-learn (the user's ``fit`` call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    return level


def release(estimator, events, *, derived, noise_scale, result=None, solver=None, n_clipped=None,
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
        estimator.n_iter_ = n_iter_attribute(estimator, result.n_iter, solver)
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


def n_iter_attribute(estimator, n_iter, solver=None):
    """``n_iter_`` of a fit whose solver ran ``n_iter`` steps, typed and shaped as the sklearn counterpart's.

    The estimator class's ``_n_iter_style`` (one of :data:`N_ITER_STYLES`) says which:

    * ``"int"`` (``Lasso``, ``LinearSVC``; the default): an ``int``;
    * ``"array"`` (``LogisticRegression``): an int32 array of shape ``(1,)``,
      for two classes and more (scikit-learn's multinomial fit is one problem;
      a one-vs-rest fit runs the same public schedule for every class);
    * ``"per_target"`` (``Ridge``): ``None`` for a direct solver (one release,
      ``solver.iterative`` false: scikit-learn's direct solvers report
      ``None`` too), else an int32 array of shape ``(n_targets,)`` (every
      target shares the one schedule).

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
    return np.full(int(getattr(estimator, "_n_targets", None) or 1), n_iter, dtype=np.int32)


def solve_and_release(estimator, solver, problem, budget, rng, *, pre_events=(), derived=False, n_clipped=None,
                      **diagnostic_values):
    """Run ``solver`` on the bounded ``problem`` and :func:`release` what it and the bound choices released.

    ``pre_events`` are the events of the private bound choices made before
    (with the same generator ``rng``). Nothing is set if the solver raises;
    the exact numbers behind a refusal (:class:`~skdp.exceptions.UncertifiedSolutionError`)
    go to :func:`~skdp.fit_diagnostics`, never into the error's message.
    Returns the :class:`~skdp.solvers.SolverResult`.
    """
    try:
        result = solver.solve(problem, budget, rng)
    except UncertifiedSolutionError as exc:
        diagnostics.record(estimator, **exc.__dict__.pop("_diagnostics", {}))
        raise
    warn_heavy_clipping(estimator, problem.n, n_rows_clipped=n_clipped,
                        n_labels_clipped=diagnostic_values.get("n_labels_clipped"))
    release(estimator, list(pre_events) + list(result.events), derived=derived, noise_scale=result.noise_scale,
            result=result, solver=solver, n_clipped=n_clipped, **diagnostic_values)
    return result


def _given_bound(estimator, names):
    """``(name, value)`` of the first of ``names`` that ``estimator`` has with a user-given value, else ``None``."""
    params = estimator.get_params(deep=False)
    for name in names:
        value = params.get(name)
        if value is not None and not (isinstance(value, str) and value == "auto") and name in params:
            return name, value
    return None


def warn_heavy_clipping(estimator, n_samples, n_rows_clipped=None, n_labels_clipped=None, n_labels=None):
    """Warn the data holder, at fit time, when a **given** bound clips more than half of the rows or labels.

    A bound the user gave (``data_norm`` / ``feature_bound``, ``label_bound``)
    that clips most of the data usually means a unit mistake, and the model
    fits the bound rather than the data. The warning says only that (one
    bit), never how many (the count, an exact statistic of the rows, is in
    :func:`~skdp.fit_diagnostics`); nothing is stored on the model. Bounds
    chosen privately (``"auto"``) are not warned about. ``n_labels``: the
    number of labels (``n_samples`` times the number of targets).
    """
    checks = ((n_rows_clipped, n_samples, ("data_norm", "feature_bound"), "rows", "scaled down to that norm"),
              (n_labels_clipped, n_labels or n_samples, ("label_bound",), "labels", "clipped to that range"))
    for count, total, names, what, how in checks:
        given = _given_bound(estimator, names)
        if count is None or given is None or not count > 0.5 * total:
            continue
        name, value = given
        warnings.warn(
            f"{type(estimator).__name__}: the given {name}={value!r} clips more than half of the {what} ({how}), "
            f"so the model fits the bound more than the data. Check its units, or let skdp choose it privately "
            f"({name}='auto', paid from the budget). The count is in skdp.fit_diagnostics(estimator) (an exact "
            "statistic of the rows: keep it with the data).", UserWarning, stacklevel=_caller_stacklevel())


def warn_derived(name, value):
    """Warn that a privacy-relevant bound was read from the data (the guarantee is void)."""
    warnings.warn(
        f"{name} was not given, so it was read from the data ({value!r}). This leaks "
        "information and voids the privacy guarantee (privacy_spent_.epsilon is inf). "
        f"Pass {name} explicitly to get a real guarantee.",
        PrivacyLeakWarning,
        stacklevel=_caller_stacklevel(),
    )


def _binary_message(estimator, why):
    return f"{type(estimator).__name__} is binary{why}"


#: ``classes="auto"``: shares of the budget the Gaussian label-set selection
#: (:func:`skdp.privacy.label_set.private_label_set_gaussian`) takes: of the zCDP ``rho`` that
#: ``(epsilon, delta)`` converts to (a public yardstick; the accountant prices the actual composition) and of
#: ``delta``. At (1, 1e-5): sigma = 14.8, threshold 71 rows, a class of 117 rows kept with probability
#: 0.999 (the former Laplace selection at a quarter of epsilon: 93 and 143), and the solver keeps about
#: 0.93 of its GDP mu instead of 0.75 of epsilon.
CLASS_SELECTION_SHARE = (0.15, 0.1)
#: a class holding this share of the (public) n rows is kept with probability >= 1 - _CLASS_FAILURE;
#: where that allows more noise than the share above (large n), the selection uses that noise
_MIN_CLASS_FRACTION = 0.02
_CLASS_FAILURE = 1e-3


class ClassSelection(NamedTuple):
    """What :func:`fit_classes` decided: the label set and how the rows take part."""

    classes: np.ndarray  #: the sorted label set (``classes_``)
    derived: bool  #: read from the data in the clear (``classes=None``): no finite guarantee
    active: object  #: boolean mask of the rows whose label is in ``classes`` (``None``: every row)
    events: list  #: privacy events of the selection (``classes="auto"``)


def _is_auto(classes):
    return isinstance(classes, str) and classes == "auto"


def class_selection_budget(estimator, n_samples=None):
    """``(sigma, delta_sel)`` of the private label-set selection, or ``None`` unless ``classes="auto"``.

    ``sigma = 1 / sqrt(s rho)`` with ``rho`` the zCDP parameter of
    ``(epsilon, delta)`` and ``s, delta_sel / delta`` from
    :data:`CLASS_SELECTION_SHARE` (replace-one moves two counts by one, so
    the count release alone is ``s rho``-zCDP); raised at large (public)
    ``n_samples`` to the most noise that still keeps a class of ``2%`` of the
    rows with probability ``0.999``: ``sigma = (c - 1) / (z(delta_sel) +
    z(0.001))``. A function of public quantities only.
    """
    if not _is_auto(getattr(estimator, "classes", None)):
        return None
    rho_frac, delta_frac = CLASS_SELECTION_SHARE
    delta = delta_frac * estimator.delta
    sigma = 1.0 / math.sqrt(rho_frac * zcdp_rho(estimator.epsilon, estimator.delta))
    c = _MIN_CLASS_FRACTION * (n_samples or 0)
    if c > 1:
        z = special.ndtri(1.0 - delta) if delta > 1e-12 else -special.ndtri(delta)
        sigma = max(sigma, (c - 1.0) / (float(z) - float(special.ndtri(_CLASS_FAILURE))))
    return sigma, delta


def class_selection_events(estimator, n_samples):
    """The planned events of the label-set selection (empty unless ``classes="auto"``)."""
    budget = class_selection_budget(estimator, n_samples)
    return [] if budget is None else gaussian_label_set_events(*budget)


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


def check_class_set(estimator, binary=False, why=""):
    """The public class set ``estimator.classes`` as a sorted array, or ``None`` if it is not given.

    Called before any data is read. Raises ``ValueError`` for a ``classes``
    that is not 1-D (e.g. ``[[0, 1]]``), repeated labels, fewer than 2 labels,
    or (``binary=True``) more than 2; ``why`` completes
    the binary message (e.g. the proof that does not cover more classes).
    ``classes="auto"`` (returns ``None``) needs ``delta > 0``: a label carried
    by a single row cannot be released under pure epsilon-DP.
    """
    if estimator.classes is None:
        return None
    if isinstance(estimator.classes, str):
        if not _is_auto(estimator.classes):
            raise ValueError(f"classes must be 'auto', None or an array of labels, got {estimator.classes!r}.")
        if estimator.delta == 0:
            raise ValueError(
                "classes='auto' selects the label set privately, which needs delta > 0 (a label seen in one "
                "row cannot be released with pure epsilon-DP). With delta=0, pass the public label set as "
                "classes=[...]."
            )
        if bool((getattr(estimator, "solver_options", None) or {}).get("secure_noise", False)):
            raise ValueError(
                "classes='auto' has no floating-point-safe variant (solver_options['secure_noise']): its delta "
                "is the continuous Gaussian's tail at the threshold, not derived for the discrete Gaussian. "
                "Pass the public label set as classes=[...]."
            )
        gaussian_label_set_threshold(*class_selection_budget(estimator))  # validates the selection's budget
        return None
    try:
        given = np.asarray(estimator.classes)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"classes must be a 1-D array of labels, got {estimator.classes!r}.") from exc
    if given.ndim != 1:
        raise ValueError(f"classes must be a 1-D array of labels, got {estimator.classes!r} "
                         f"(shape {given.shape}).")
    classes = np.unique(given)
    if classes.size < 2:
        raise ValueError(f"classes must hold at least 2 labels, got {estimator.classes!r}.")
    if classes.size != given.size:
        raise ValueError(f"classes must not repeat labels, got {estimator.classes!r}.")
    if binary and classes.size != 2:
        raise ValueError(_binary_message(estimator, why)
                         + f": classes must hold exactly 2 labels, got {estimator.classes!r}.")
    return classes


def fit_classes(estimator, y, rng=None, binary=False, why=""):
    """The label set of a fit on labels ``y`` (a :class:`ClassSelection`); sets ``estimator.classes_``.

    * Public ``classes``: every label of ``y`` must be in it.
    * ``classes="auto"``: :func:`skdp.privacy.label_set.private_label_set_gaussian` at the share
      :data:`CLASS_SELECTION_SHARE` of the budget, drawing from ``rng`` (the
      fit's generator). Rows whose label is not selected are **kept** (``n``
      stays public) and marked inactive: the estimator makes them contribute
      a constant to the loss. Fewer than 2 selected labels, or more than 2 for
      a binary estimator, raise ``ValueError``; the decision uses only the
      released set.
    * ``classes=None``: the set is read from the data, which is warned
      (:class:`~skdp.PrivacyLeakWarning`) and voids the guarantee (``derived``).
    """
    check_classification_targets(y)
    labels, counts = np.unique(y, return_counts=True)
    selection = classes_from_counts(estimator, labels, counts, _num_samples(y), rng, binary, why)
    if _is_auto(estimator.classes):
        active = np.isin(y, selection.classes)
        if not active.all():
            selection = selection._replace(active=active)
    return selection


#: ``classes="auto"`` warns when a label with the rows of an average selected label is dropped with at least
#: this probability
DROP_WARNING_PROBABILITY = 0.01


def warn_close_to_threshold(estimator, n_selected, n_samples, sigma, threshold):
    """``UserWarning`` when a label of average frequency is likely to be left out by ``classes="auto"``.

    A label with ``m`` rows is selected when ``m + N(0, sigma^2) >= threshold``
    and the rows of the labels that are not are ignored. With ``m = n / k``
    (``k`` selected labels, an upper bound on the average frequency of the labels
    when some were dropped), the warning fires when ``P(m + noise < threshold)``
    is at least :data:`DROP_WARNING_PROBABILITY`. Decided on public quantities
    and the released set only; it says nothing about which labels.
    """
    if not n_selected:
        return
    m = n_samples / n_selected
    if special.ndtr((threshold - m) / sigma) >= DROP_WARNING_PROBABILITY:
        warnings.warn(
            f"classes='auto' selected {n_selected} labels; at epsilon={estimator.epsilon:g} a label needs "
            f"roughly {threshold:.0f} rows to be selected privately, close to the {m:.0f} rows of an average "
            "selected label, so labels of similar frequency may have been left out (their rows are ignored "
            "and never predicted). Pass the public label set as classes=[...] if you know it, or use a "
            "larger epsilon.", UserWarning, stacklevel=4)


def classes_from_counts(estimator, labels, counts, n_samples, rng=None, binary=False, why=""):
    """:func:`fit_classes` from the sorted distinct labels of ``y`` and their counts (``active`` is ``None``).

    The label counts are the only statistic of ``y`` the selection reads, so a
    distributed fit adds them up block by block and calls this; ``n_samples``
    is public. The caller marks the rows whose label was not selected.
    """
    classes = check_class_set(estimator, binary, why)
    derived, active, events = False, None, []
    if _is_auto(estimator.classes):
        if rng is None:
            raise TypeError("fit_classes needs the fit's generator rng with classes='auto'.")
        budget = class_selection_budget(estimator, n_samples)
        classes, events = private_label_set_gaussian_from_counts(labels, counts, *budget, rng)
        if classes.size < 2:
            _refuse_after_selection(
                estimator, events,
                f"classes='auto' selected {classes.size} label(s) ({classes.tolist()!r}); a classifier needs "
                "at least 2 (one class or none cannot be fitted). At "
                f"epsilon={estimator.epsilon:g} a label needs roughly "
                f"{gaussian_label_set_threshold(*budget):.0f} rows or more to be "
                "selected privately. Pass the public label set as classes=[...], or fit on more rows / a "
                "larger epsilon.")
        if binary and classes.size > 2:
            _refuse_after_selection(
                estimator, events,
                f"Only binary classification is supported: {_binary_message(estimator, why)}, but "
                f"classes='auto' selected {classes.size} "
                f"labels ({classes.tolist()!r}). Pass the 2 public labels as classes=[...].")
        warn_close_to_threshold(estimator, classes.size, n_samples, budget[0], gaussian_label_set_threshold(*budget))
    elif classes is None:
        derived = True
        classes = np.asarray(labels)
        if classes.size < 2:
            raise ValueError(
                "This solver needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {classes[0]!r}. Pass the public class set as classes=."
            )
        if binary and classes.size > 2:
            raise ValueError(f"Only binary classification is supported: {_binary_message(estimator, why)}; "
                             f"got {classes.size} classes.")
        warn_derived("classes", classes.tolist())
    else:
        refuse_unknown_labels(labels, classes)
    estimator.classes_ = classes
    return ClassSelection(classes, derived, active, events)


@contextlib.contextmanager
def refused_after_selection(estimator, events):
    """A ``ValueError`` raised inside (a refusal after the label-set selection of ``events`` ran, e.g. a solver
    that cannot fit the number of classes ``classes="auto"`` selected) becomes a
    :class:`~skdp.exceptions.SpentFitError` carrying the selection's price; unchanged when the selection spent
    nothing (``events`` empty: public classes)."""
    try:
        yield
    except SpentFitError:
        raise
    except ValueError as exc:
        if not events:
            raise
        _refuse_after_selection(estimator, events, str(exc), cause=exc)


def _refuse_after_selection(estimator, events, message, cause=None):
    """Raise :class:`~skdp.exceptions.SpentFitError`: the fit is refused after the label-set selection ran.

    The selection's events are priced at the estimator's ``delta`` and stated
    in the message and on the error (``privacy_spent``, ``privacy_events``):
    without a ledger nothing else records that budget. A ledger was charged the
    whole planned fit before the data was read and keeps that charge.
    """
    spent = price(list(events), estimator.delta).budget
    ledger = (" The ledger was charged the whole fit before the data was read and keeps that charge."
              if "_ledger_charge" in estimator.__dict__ else "")
    raise SpentFitError(
        f"{message} The private label-set selection already ran on the data and spent epsilon="
        f"{spent.epsilon:.6g}, delta={spent.delta:.3g} (replace-one; the error's privacy_spent and "
        f"privacy_events); count it in the total spent on these rows.{ledger}", spent, events) from cause


def zero_inactive_rows(bounded, active):
    """``bounded`` (a :class:`~skdp.bounds.BoundedData`) with the rows outside ``active`` set to zero.

    Used with ``classes="auto"``: a row whose label was not selected stays in
    the data (n is public) but its augmented row, intercept column included,
    is zero, so its loss is the constant ``phi(0, y)`` and its gradient is
    zero. The bounds (and so every sensitivity) are unchanged.
    """
    keep = np.asarray(active, dtype=bool)
    return dataclasses.replace(bounded, X=zero_rows(bounded.X, keep),
                               row_norms=np.where(keep, bounded.row_norms, 0.0))


def zero_rows(X, active):
    """A copy of ``X`` (dense or CSR) whose rows outside the boolean mask ``active`` are zero."""
    keep = np.asarray(active, dtype=bool)
    if hasattr(X, "with_rows_zeroed"):  # a lazy design (skdp.bounds.BoundedDesign): no copy of X
        return X.with_rows_zeroed(keep)
    if sparse.issparse(X):
        X = (sparse.diags(keep.astype(X.dtype)) @ X).tocsr()
        X.eliminate_zeros()
        return X
    return np.where(keep[:, None], X, 0).astype(X.dtype, copy=False)


def class_indices(selection, y):
    """Index of each row's label in ``selection.classes`` (0 for inactive rows, whose index is unused)."""
    idx = np.searchsorted(selection.classes, y)
    if selection.active is not None:
        idx = np.where(selection.active, np.minimum(idx, selection.classes.size - 1), 0)
    return idx


# ---------------------------------------------------------------------------------------------
# One-vs-rest: k binary fits, one budget
# ---------------------------------------------------------------------------------------------
#: relative gap below the target at which :func:`ovr_budget` stops (the price never exceeds the target)
OVR_RTOL = 1e-6
#: most accountant evaluations of one :func:`ovr_budget` search (a solver's plan may be slow to calibrate)
OVR_MAX_EVALUATIONS = 12


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
      ``epsilon_c`` found such that the price of ``pre_events`` and ``k``
      copies of ``events_for((epsilon_c, delta_c))`` is at most the target.
      The search starts at the Gaussian-DP guess (``k`` releases of
      ``mu / sqrt(k)``-GDP compose to ``mu``) and runs a bracketed secant
      (Illinois) search in ``log epsilon_c`` on :func:`~skdp.privacy.price`,
      keeping the feasible end, until the price is within ``OVR_RTOL`` of the
      target or ``OVR_MAX_EVALUATIONS`` prices were computed. For Gaussian
      releases composed by exact GDP this gives ``sigma_c`` equal to the
      ``sigma`` of the whole budget for ``k`` times the releases.

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
    eps, delta_b = float(budget.epsilon), float(budget.delta)
    delta = delta_b if delta is None else float(delta)
    delta_c = delta_b / k
    target = price(pre + list(events_for(budget)), delta, budget.relation).budget.epsilon
    if not math.isfinite(target) or target <= 0:
        raise ValueError(f"The binary fit at {budget} has no finite price to split one-vs-rest.")
    close = math.log1p(-OVR_RTOL)

    def g(t):
        b = PrivacyBudget(math.exp(t), delta_c, budget.relation)
        events = [scale_event_count(ev, k) for ev in events_for(b)]
        spent = price(pre + events, delta, budget.relation).budget.epsilon
        return (math.log(spent / target) if spent > 0 else -math.inf), b, events

    if delta_c > 0:  # Gaussian-DP guess: k releases of mu/sqrt(k)-GDP compose to mu
        guess = gdp_epsilon(gdp_mu(eps, delta_b) / math.sqrt(k), delta_c)
    else:
        guess = eps / k
    lo = hi = None  # (t, g, weight, budget, events): lo feasible (g <= 0), hi not
    t, n_eval, side = math.log(min(max(guess, eps / k), eps)), 0, 0
    while n_eval < OVR_MAX_EVALUATIONS:
        g_t, b_t, ev_t = g(t)
        n_eval += 1
        if g_t <= 0:
            if side == -1 and hi is not None:
                hi[2] /= 2.0  # Illinois: the infeasible end stayed twice
            lo, side = [t, g_t, g_t, b_t, ev_t], -1
            if g_t >= close:
                break
        else:
            if side == 1 and lo is not None:
                lo[2] /= 2.0
            hi, side = [t, g_t, g_t, b_t, ev_t], 1
        if lo is not None and hi is not None:
            width = hi[0] - lo[0]
            if width <= 1e-9:  # a jump of the schedule: the feasible end is the answer
                break
            t = lo[0] - lo[2] * width / (hi[2] - lo[2]) if math.isfinite(lo[2]) else lo[0] + 0.5 * width
            if not lo[0] + 1e-3 * width < t < hi[0] - 1e-3 * width:
                t = lo[0] + 0.5 * width
        elif lo is not None:  # the price grows about linearly with epsilon_c: step by the gap
            t = lo[0] + max(-lo[1], 1e-9) * 1.01 if math.isfinite(lo[1]) else lo[0] + 1.0
        else:
            t = hi[0] - max(hi[1], 1e-9) * (2.0 ** (n_eval - 1))  # go lower, faster each time
    if lo is None:
        raise ValueError(f"No per-class budget found that fits {k} one-vs-rest fits into the price of one "
                         f"binary fit at {budget}.")
    return lo[3], lo[4]


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


def linear_scores(estimator, X):
    """``X @ coef_.T + intercept_`` of a fitted linear model (dense or CSR ``X``), validated like sklearn.

    A model fitted on features clipped to ``[-feature_clip_, feature_clip_]``
    (:class:`~skdp.DPLogisticRegression`) scores the same clipped features.
    """
    check_is_fitted(estimator)
    X = validate_data(estimator, X, reset=False, accept_sparse="csr", dtype=[np.float64, np.float32])
    if getattr(estimator, "feature_clip_", None) is not None:
        X = clip_features(X, estimator.feature_clip_)[0]
    coef = np.asarray(estimator.coef_)
    return np.asarray(X @ coef.T) + estimator.intercept_


class LinearRegressorMixin:
    """``predict`` of a linear regressor."""

    def predict(self, X):
        """Predicted targets."""
        return linear_scores(self, X)


class LinearClassifierMixin:
    """``decision_function`` and ``predict`` of a fitted linear classifier.

    ``coef_`` of shape (n_features,), (1, n_features) or (n_classes, n_features); binary
    scores are flattened to (n_samples,) as in scikit-learn.
    """

    def decision_function(self, X):
        """Signed scores: shape (n_samples,) for binary, (n_samples, n_classes) otherwise."""
        Z = linear_scores(self, X)
        return Z.ravel() if Z.ndim == 1 or Z.shape[1] == 1 else Z

    def predict(self, X):
        """Predicted class labels."""
        Z = self.decision_function(X)
        idx = (Z > 0).astype(int) if Z.ndim == 1 else np.argmax(Z, axis=1)
        return self.classes_[idx]



class ProbabilisticClassifierMixin(LinearClassifierMixin):
    """Adds ``predict_proba`` / ``predict_log_proba``: the sigmoid for binary, softmax for
    multinomial, normalised one-vs-rest sigmoids when ``multi_class_ == "ovr"``."""

    def _ovr(self):
        return getattr(self, "multi_class_", None) == "ovr"

    def predict_proba(self, X):
        """Class probabilities (sigmoid for binary, softmax for multinomial, normalised one-vs-rest).

        A probability is never exactly 0: one below the smallest normal double
        (a score beyond about 708) is reported as that double, so that
        ``log(predict_proba(X))`` stays finite, as :meth:`predict_log_proba` is.
        """
        Z = self.decision_function(X)
        if Z.ndim == 1:
            P = np.column_stack([special.expit(-Z), special.expit(Z)])
        elif self._ovr():
            P = special.expit(Z)
            P = P / P.sum(axis=1, keepdims=True)
        else:
            P = special.softmax(Z, axis=1)
        return np.maximum(P, np.finfo(np.float64).tiny)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed stably (finite for any finite score).

        Unlike ``np.log(predict_proba(X))``, which is ``-inf`` once a probability
        underflows (scores beyond about 745), this is the log-sigmoid / log-softmax.
        """
        Z = self.decision_function(X)
        if Z.ndim == 1:
            return np.column_stack([-np.logaddexp(0, Z), -np.logaddexp(0, -Z)])
        if self._ovr():
            P = special.expit(Z)
            return np.log(P) - np.log(P.sum(axis=1, keepdims=True))
        return Z - special.logsumexp(Z, axis=1, keepdims=True)
