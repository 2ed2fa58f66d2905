"""The classifiers' label set: public ``classes``, the private selection of ``classes="auto"``, and rows
whose label was not selected (kept, n is public, with a zero row)."""

import contextlib
import dataclasses
import math
import warnings
from typing import NamedTuple

import numpy as np
from scipy import sparse, special
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples

from ._warnings import warn_derived
from .exceptions import SpentFitError
from .privacy import price, zcdp_rho
from .privacy.label_set import (gaussian_label_set_events, gaussian_label_set_threshold,
                                private_label_set_gaussian_from_counts)

__all__ = ["refuse_unknown_labels", "CLASS_SELECTION_SHARE", "ClassSelection", "class_selection_budget",
           "class_selection_events", "check_class_set", "fit_classes", "DROP_WARNING_PROBABILITY",
           "warn_close_to_threshold", "classes_from_counts", "refused_after_selection", "zero_inactive_rows",
           "zero_rows", "class_indices"]


def refuse_unknown_labels(labels, classes):
    """``ValueError`` if some of the distinct ``labels`` of ``y`` are not in the public ``classes``."""
    unknown = np.setdiff1d(labels, classes)
    if unknown.size:
        raise ValueError(f"y contains labels not in classes: {unknown.tolist()!r}.")


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
