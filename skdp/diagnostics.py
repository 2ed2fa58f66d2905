"""Non-private fit diagnostics, kept with the data holder and never with the model.

Some numbers a fit computes are exact statistics of the private data: how
many rows were clipped to the norm bound, how many labels to the label range,
how close an optimiser got to the exact minimiser of a data-dependent
objective. They are useful to whoever holds the data (is ``data_norm`` too
small? did the solver converge?) but they are not differentially private, so
skdp does **not** store them as fitted attributes: a pickled, cloned, copied or
published estimator carries only private quantities.

They live in a process-local table keyed by the fitted estimator object (a weak
reference: the entry disappears with the estimator) and are read with
:func:`fit_diagnostics`. The table is never pickled; a model loaded from disk,
copied with :func:`copy.deepcopy` or fitted in another process (joblib with
processes) has no diagnostics here.
"""

import threading
import weakref

__all__ = ["fit_diagnostics"]

_TABLE = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def record(estimator, **values):
    """Store (merge) non-private diagnostics for ``estimator``'s latest fit."""
    with _LOCK:
        _TABLE.setdefault(estimator, {}).update(values)


def reset(estimator):
    """Forget ``estimator``'s diagnostics (called at the start of every fit)."""
    with _LOCK:
        _TABLE.pop(estimator, None)


def fit_diagnostics(estimator):
    """Non-private diagnostics of ``estimator``'s latest fit in this process.

    Parameters
    ----------
    estimator : fitted skdp estimator, or a Pipeline / search containing skdp steps

    Returns
    -------
    dict
        For an skdp estimator: its diagnostics, e.g. ``n_rows_clipped`` (rows
        scaled down to the norm bound), ``n_labels_clipped`` (labels clipped to
        the label range), ``kkt_residual`` (objective perturbation's gradient
        norm at the released point). For a Pipeline: ``{step name: dict}`` for
        its skdp steps. For a :class:`~skdp.model_selection.DPGridSearchCV`: the
        diagnostics of ``best_estimator_``. Empty when nothing was recorded in
        this process (e.g. a model loaded from a pickle).

    Notes
    -----
    These numbers are exact statistics of the training data and are **not**
    covered by ``privacy_spent_``. Read them as the data holder; do not publish
    them with the model.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression, fit_diagnostics
    >>> rng = np.random.RandomState(0)
    >>> X, y = rng.randn(200, 3), rng.randint(0, 2, 200)
    >>> est = DPLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(X, y)
    >>> fit_diagnostics(est)["n_rows_clipped"] > 0
    True
    >>> hasattr(est, "n_rows_clipped_")
    False
    """
    if hasattr(estimator, "best_estimator_"):
        return fit_diagnostics(estimator.best_estimator_)
    if hasattr(estimator, "steps"):
        out = {}
        for name, step in estimator.steps:
            if hasattr(step, "planned_events") or hasattr(step, "steps"):
                out[name] = fit_diagnostics(step)
        return out
    with _LOCK:
        return dict(_TABLE.get(estimator, {}))
