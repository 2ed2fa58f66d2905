"""Sample and class weights: one rule for every skdp estimator.

A weighted fit minimises ``(1/n) sum_i w_i phi_i + penalty`` (a scaler
averages ``w_i u_i``) with every weight in ``[0, W]``:

* ``W`` is public: ``max_sample_weight`` times the largest class weight
  (:func:`weight_bound`; at least 1 when some class has no entry in
  ``class_weight``). A row's weight multiplies its clipped contribution, so
  every per-example bound, and with it every sensitivity and noise scale, is
  ``W`` times the unweighted one, whether or not ``sample_weight`` is passed
  (the plan, and the ledger's charge, are made before the data is read).
* ``sample_weight`` above ``max_sample_weight`` is clipped to it (with a
  :class:`UserWarning`; nothing about which or how many rows is stored), a
  negative or non-finite weight is a ``ValueError``; then each row's weight is
  multiplied by its class's weight.
* No ``sample_weight`` means a weight of 1 for every row **before** the clip:
  every row weighs ``min(1, max_sample_weight)`` (:func:`default_weight`), in
  memory, on Dask and in the multi-party protocol alike, so a row never
  contributes more than the ``W`` its noise is priced for. (Below 1 this
  scales every loss term by ``max_sample_weight``, with a ``UserWarning``;
  :class:`~skdp.DPStandardScaler` divides by that public total weight, so its
  statistics are those of ``max_sample_weight = 1``.)
* ``n`` stays the public number of rows (a weight 0 removes a row's influence,
  not the row); weights all equal to 1 are the unweighted fit, bit for bit.
* The private bound selections (``data_norm="auto"``, ``label_bound="auto"``,
  ``classes="auto"``, ``clip_norm="auto"``) read the rows unweighted: their
  replace-one sensitivity does not depend on the weights.
"""

import math
import warnings
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight

from ._warnings import caller_stacklevel as _caller_stacklevel

__all__ = ["WEIGHT_CONSTRAINTS", "CLASS_WEIGHT_CONSTRAINTS", "check_weight_params", "weight_bound", "row_weights",
           "sample_weights", "check_sample_weight", "class_weighted", "default_weight"]

#: ``_parameter_constraints`` entries of the weight parameters
WEIGHT_CONSTRAINTS = {"max_sample_weight": [Interval(Real, 0, None, closed="neither")]}
CLASS_WEIGHT_CONSTRAINTS = {"class_weight": [dict, StrOptions({"balanced"}), None]}


def check_weight_params(estimator):
    """Checks of ``max_sample_weight`` and ``class_weight`` the constraint table cannot express (before any data).

    A dict ``class_weight`` must map labels to finite non-negative weights and, with a public
    ``classes``, only labels of that set (``ValueError`` naming ``class_weight``).
    """
    W = getattr(estimator, "max_sample_weight", 1.0)
    if not math.isfinite(W):
        raise ValueError(f"max_sample_weight must be finite, got {W!r}.")
    cw = getattr(estimator, "class_weight", None)
    if isinstance(cw, str):
        raise ValueError(
            "class_weight='balanced' needs the class counts, which are private: skdp does not release them. "
            "Pass a dict {label: weight} of public class weights (e.g. from public prior knowledge of the class "
            "shares) instead.")
    if cw is not None:
        values = np.asarray(list(cw.values()), dtype=float) if cw else np.ones(1)
        if values.ndim != 1 or not np.all(np.isfinite(values)) or np.any(values < 0):
            raise ValueError(f"class_weight must map labels to finite non-negative weights, got {cw!r}.")
        classes = getattr(estimator, "classes", None)
        if classes is not None and not isinstance(classes, str):
            public = set(np.asarray(classes).ravel().tolist())
            unknown = [key for key in cw if key not in public]
            if unknown:
                raise ValueError(f"class_weight has labels that are not classes: {unknown!r} "
                                 f"(classes: {sorted(public)!r}).")


def _class_weight_max(class_weight):
    """Largest per-row class factor: ``max(class_weight)``, and 1 for a class without an entry."""
    if not class_weight:
        return 1.0
    return max(1.0, float(max(class_weight.values())))


def weight_bound(estimator):
    """The public bound ``W`` on every row's weight (``max_sample_weight`` times the largest class weight)."""
    check_weight_params(estimator)
    return float(getattr(estimator, "max_sample_weight", 1.0)) * _class_weight_max(getattr(estimator, "class_weight",
                                                                                          None))


def default_weight(estimator, warn=False):
    """Every row's weight when ``fit`` gets no ``sample_weight``: 1 clipped to ``max_sample_weight``.

    ``min(1, max_sample_weight)`` (public). ``warn=True`` (the linear models, whose objective it
    scales) warns when it is below 1; a scaler divides by it and does not need to.
    """
    W = float(getattr(estimator, "max_sample_weight", 1.0))
    if W < 1.0 and warn:
        warnings.warn(f"max_sample_weight={W:g} is below 1 and fit got no sample_weight: every row's weight 1 is "
                      f"clipped to {W:g} (the privacy guarantee bounds every weight by max_sample_weight), which "
                      f"scales every loss term by {W:g}, as a penalty {1 / W:g} times larger would. Leave "
                      "max_sample_weight at 1 to fit without weights.", UserWarning,
                      stacklevel=_caller_stacklevel())
    return min(1.0, W)


def row_weights(estimator, sample_weight, X, y=None, classes=None):
    """Each row's weight in ``[0, weight_bound(estimator)]``, or ``None`` when every weight is 1.

    ``sample_weight`` is validated (shape, finite, non-negative: ``ValueError``
    naming it) and clipped to ``max_sample_weight`` (``UserWarning``); with a
    dict ``class_weight`` each row's weight is multiplied by its label's
    (``y``, the raw labels; ``classes`` the fitted label set: a key that is
    not a label of a public set is a ``ValueError``). The caller's array is
    never modified. :func:`sample_weights` then :func:`class_weighted`, which
    a classifier whose label set is chosen during the fit calls apart, so that
    ``sample_weight`` is refused before the selection reads the labels.
    """
    return class_weighted(estimator, sample_weights(estimator, sample_weight, X), y, classes)


def sample_weights(estimator, sample_weight, X):
    """``sample_weight`` validated and clipped to ``max_sample_weight`` (see :func:`row_weights`).

    ``None``: every row's weight is :func:`default_weight`, ``min(1, max_sample_weight)``.
    """
    if sample_weight is None:  # weight 1 before the clip: min(1, W) each (see default_weight)
        return np.full(X.shape[0], default_weight(estimator, warn=True))
    W = float(getattr(estimator, "max_sample_weight", 1.0))
    weights = check_sample_weight(sample_weight, X.shape[0])
    if np.any(weights > W):
        warnings.warn(f"sample_weight: weights above max_sample_weight={W:g} were clipped to it (the privacy "
                      "guarantee bounds every weight by max_sample_weight). Raise max_sample_weight to keep them, "
                      "at a proportional cost in noise.", UserWarning, stacklevel=_caller_stacklevel())
        weights = np.minimum(weights, W)
    return weights


def check_sample_weight(sample_weight, n_samples):
    """``sample_weight`` as a fit reads it: a float64 copy of shape ``(n_samples,)``, finite, not all zero,
    non-negative; else ``ValueError`` / ``TypeError`` naming it. The fit protocol runs it before the ledger is
    charged (as the labels' checks), so a bad weight costs nothing."""
    # sklearn's input checks (shape, finite, not all zero), each message naming sample_weight
    try:
        weights = _check_sample_weight(sample_weight, np.empty((int(n_samples), 0)), dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        if "sample_weight" not in message.replace("Sample weights", "sample_weight"):
            message = f"sample_weight: {message}"
        raise type(exc)(message) from exc
    if np.any(weights < 0):
        raise ValueError("sample_weight must be non-negative; got negative weights.")
    return weights


def class_weighted(estimator, weights, y=None, classes=None):
    """:func:`sample_weights`' ``weights`` times each row's class weight (see :func:`row_weights`), ``None`` if all 1."""
    n = weights.shape[0]
    class_weight = getattr(estimator, "class_weight", None)
    if class_weight:
        if classes is not None and not isinstance(getattr(estimator, "classes", None), str):
            unknown = [key for key in class_weight if key not in set(np.asarray(classes).tolist())]
            if unknown:
                raise ValueError(f"class_weight has labels that are not classes: {unknown!r} "
                                 f"(classes: {np.asarray(classes).tolist()!r}).")
        factor = np.ones(n)
        y = np.asarray(y)
        for label, value in class_weight.items():
            factor[y == label] = float(value)
        weights = weights * factor
    if np.all(weights == 1.0):
        return None
    return weights
