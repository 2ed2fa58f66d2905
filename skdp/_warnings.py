"""Warnings of a fit that point at the user's call: heavy clipping by a given bound, a bound read from the data."""

import os
import sys
import warnings

import sklearn

from .exceptions import PrivacyLeakWarning

__all__ = ["caller_stacklevel", "warn_heavy_clipping", "warn_derived"]


#: frames in these directories are library code; warnings about a user's call point past them
_LIBRARY_DIRS = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(sklearn.__file__)))


def caller_stacklevel():
    """``stacklevel`` of the first frame outside skdp and scikit-learn (the user's ``fit`` call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    return level


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
            "statistic of the rows: keep it with the data).", UserWarning, stacklevel=caller_stacklevel())


def warn_derived(name, value):
    """Warn that a privacy-relevant bound was read from the data (the guarantee is void)."""
    warnings.warn(
        f"{name} was not given, so it was read from the data ({value!r}). This leaks "
        "information and voids the privacy guarantee (privacy_spent_.epsilon is inf). "
        f"Pass {name} explicitly to get a real guarantee.",
        PrivacyLeakWarning,
        stacklevel=caller_stacklevel(),
    )
