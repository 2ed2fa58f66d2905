"""Composition tools for a Pipeline of DP steps: its total privacy, and one budget split across its steps.

They walk ``Pipeline``, ``ColumnTransformer`` and ``FeatureUnion`` (:mod:`skdp._utils`),
and price the DP steps' events with the shared accountant (:mod:`skdp.privacy`).
"""

import math
import warnings

import numpy as np
from scipy import optimize
from sklearn.utils.validation import check_is_fitted

from ._random import noise_source, shared_sources
from ._utils import (dp_steps, leak_message, leaky_steps, planned_leaf_events, plans_nothing, released_dp_steps,
                     walk_steps)
from .exceptions import PrivacyLeakWarning
from .privacy import PrivacyBudget, price

__all__ = ["pipeline_privacy_spent", "set_pipeline_budget"]


def pipeline_privacy_spent(pipeline, delta=None):
    """Total (epsilon, delta) of a fitted Pipeline, composed by the accountant.

    All steps are fitted on the same rows (each on the output of the previous,
    DP-released, transform, or, inside a
    :class:`~sklearn.compose.ColumnTransformer` or
    :class:`~sklearn.pipeline.FeatureUnion`, on columns of the same rows), so
    the DP steps' events compose sequentially, wherever they are nested: a
    ColumnTransformer is looked into (its fitted transformers, remainder
    included), as are FeatureUnions and nested Pipelines. ``delta`` defaults
    to the sum of the deltas of the DP steps that released something (an
    encoder with given categories releases nothing). Replace-one neighbours, ``n`` public.

    ``epsilon`` is infinite, with a :class:`~skdp.PrivacyLeakWarning`, when

    * a step that is not differentially private learned from the rows (e.g.
      sklearn's ``StandardScaler``: its exact ``mean_`` is published with the
      model); the warning names it (``"columntransformer__num__scaler"``).
      Steps that learn nothing (``FunctionTransformer``, ``Normalizer``,
      ``"passthrough"``, a ``OneHotEncoder`` with given ``categories``: the
      checked list is in the user guide's accounting page) are free; a step fitted
      beforehand on **public** data is declared by wrapping it in
      :class:`sklearn.frozen.FrozenEstimator`;
    * two DP steps drew the same noise (equal ``noise_source_``: e.g. a scaler
      and a model both given ``random_state=0``), so they are not independent
      releases;
    * a DP step read a bound from the data (no warning here: the step warned
      when it was fitted).

    A frozen skdp step (``FrozenEstimator(DPStandardScaler(...).fit(...))``)
    is counted too, as if it had been fitted on the same rows.

    The number covers the one fit of ``pipeline``. A fitted scikit-learn
    ``GridSearchCV`` / ``RandomizedSearchCV`` (or the ``dict`` that
    ``cross_validate`` returns) gives ``epsilon=inf`` with a
    :class:`~skdp.PrivacyLeakWarning`: it fitted every candidate on every fold
    (:func:`skdp.model_selection.search_privacy_cost` prices those fits) and
    its choice, or its reported scores, read the validation rows without
    noise, so no finite guarantee holds; use
    :class:`skdp.model_selection.DPGridSearchCV` for a private search. Its
    ``best_estimator_`` alone would report only the refit.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdp import DPLogisticRegression, pipeline_privacy_spent
    >>> rng = np.random.RandomState(0)
    >>> X, y = rng.randn(500, 3), rng.randint(0, 2, 500)
    >>> model = DPLogisticRegression(epsilon=1.0, data_norm=3.0, classes=[0, 1])
    >>> leaky = make_pipeline(StandardScaler(), model).fit(X, y)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     pipeline_privacy_spent(leaky).epsilon   # the scaler's exact means are published
    inf
    >>> caught[0].category.__name__
    'PrivacyLeakWarning'
    >>> X_public = rng.randn(100, 3)           # e.g. a public reference sample
    >>> honest = make_pipeline(FrozenEstimator(StandardScaler().fit(X_public)), model).fit(X, y)
    >>> pipeline_privacy_spent(honest).epsilon <= 1.0
    True
    """
    search = _plain_search_report(pipeline, delta)
    if search is not None:
        return search
    steps = released_dp_steps(pipeline)
    if not steps:
        raise TypeError("The pipeline contains no skdp step.")
    for s in steps:
        check_is_fitted(s, "privacy_spent_")
    if delta is None:  # the deltas of the steps that released something (not an encoder's given categories)
        delta = min(math.fsum(s.delta for s in steps if s.privacy_events_), 1 - 1e-12)
    leaks = leaky_steps(pipeline, fitted=True)
    if leaks:
        warnings.warn(f"pipeline_privacy_spent is inf: {leak_message(leaks, has_dp=True)}", PrivacyLeakWarning,
                      stacklevel=2)
        return PrivacyBudget(math.inf, delta)
    shared = shared_sources(getattr(s, "noise_source_", None) for s in steps)
    if shared:
        names = [type(s).__name__ for s in steps if getattr(s, "noise_source_", None) in shared]
        warnings.warn(
            f"pipeline_privacy_spent is inf: the DP steps {names} drew the same noise (equal user-given "
            "random_state), so they are not independent releases. Use random_state=None, or a different "
            "secret seed per step.",
            PrivacyLeakWarning, stacklevel=2,
        )
        return PrivacyBudget(math.inf, delta)
    if any(not s.privacy_spent_.is_finite for s in steps):
        return PrivacyBudget(math.inf, delta)
    return price([ev for s in steps for ev in s.privacy_events_], delta).budget


def _plain_search_report(obj, delta):
    """``pipeline_privacy_spent`` of a search or ``cross_validate`` result, else ``None`` (not one).

    A private search (:class:`~skdp.model_selection.DPGridSearchCV`) reports its
    own ``privacy_spent_``; a scikit-learn search or a ``cross_validate``
    result is infinite, with a warning that says why and what to use.
    """
    from sklearn.model_selection._search import BaseSearchCV

    if hasattr(obj, "best_estimator_") and hasattr(obj, "privacy_spent_") and not hasattr(obj, "planned_events"):
        if delta is not None and delta != obj.privacy_spent_.delta:
            raise ValueError(f"A {type(obj).__name__} is priced at its own delta ({obj.privacy_spent_.delta:g}); "
                             f"got delta={delta!r}. Pass delta=None.")
        return obj.privacy_spent_
    if isinstance(obj, BaseSearchCV):
        what, fits = f"a scikit-learn {type(obj).__name__}", [obj.estimator]
        why = ("its choice of the best candidate (and cv_results_, which holds the scores) reads the "
               "validation rows without noise")
    elif isinstance(obj, dict) and ("test_score" in obj or "fit_time" in obj):
        what, fits = "a cross_validate result", list(obj.get("estimator", ()))
        why = "its test scores are exact functions of the validation rows"
    else:
        return None
    if delta is None:
        deltas = [s.delta for e in fits for s in dp_steps(e)]
        delta = min(math.fsum(deltas), 1 - 1e-12) if deltas else 0.0
    warnings.warn(
        f"pipeline_privacy_spent is inf for {what}: it fitted the estimator on every cross-validation fold "
        f"(a search: every candidate, then the refit), all on the same private rows, and {why}, so no finite "
        "guarantee holds. skdp.model_selection.search_privacy_cost prices a search's fits (its selection "
        "excluded); skdp.model_selection.DPGridSearchCV is a search with a guarantee.",
        PrivacyLeakWarning, stacklevel=3)
    return PrivacyBudget(math.inf, delta)


def set_pipeline_budget(pipeline, epsilon, delta, weights=None, n_samples=None, n_features=None,
                        feature_names=None):
    """Give a Pipeline one total budget, split across its DP steps.

    The DP steps are found wherever they are nested: inside a
    :class:`~sklearn.compose.ColumnTransformer` (its transformers and
    ``remainder``; the budget is set on the templates in ``transformers``,
    and ``clone`` copies it into the clones that the ColumnTransformer fits),
    a :class:`~sklearn.pipeline.FeatureUnion` or a nested Pipeline. They all
    read the same rows, so they compose sequentially. A DP step that
    releases nothing (its plan is empty: a :class:`DPOneHotEncoder` with
    given ``categories``) draws no noise and takes no share; its parameters
    are left as they are. The ``i``-th of the other DP steps (in the
    order of :func:`pipeline_privacy_spent`'s walk, outer steps first) gets
    ``(s w_i epsilon, w_i delta)`` with ``w`` (``weights``, one per DP step
    that spends) normalised to sum to one (equal
    shares by default). Without ``n_samples``, ``s = 1``: basic composition,
    so the pipeline is ``(epsilon, delta)``-DP (replace-one neighbours, ``n``
    public). With ``n_samples``, ``s >= 1`` is the largest factor for which
    the accountant prices the steps' planned events together at
    ``<= epsilon`` (Gaussian steps compose far better than by adding
    epsilons). Each step is planned with the width of its own input, computed
    from public information: ``n_features`` (the columns of ``X``), the
    ColumnTransformer's column selections (names are resolved with
    ``feature_names``, the columns of a DataFrame ``X``, when a selection needs
    them), encoders with given categories and fitted public steps. A step
    whose width is private before the fit (a model after
    ``DPOneHotEncoder(categories="auto")``) takes part in the search with its
    exact price when that price is the same at every width (the default
    models: their Gaussian releases are calibrated to one Gaussian-DP
    parameter whatever the width), so the pipeline then spends exactly
    ``(epsilon, delta)``; where the price depends on the width (a
    :class:`DPStandardScaler` with ``bounds="auto"`` behind a callable column
    selector) the step is counted at its own ``(epsilon, delta)``, an upper
    bound, and the pipeline spends at most the budget (see the user guide's
    accounting page). Returns the pipeline.

    Refused (``ValueError`` naming the step, e.g.
    ``"columntransformer__num__scaler"``) when the pipeline has a step that
    is not differentially private and would learn from the private rows (see
    :func:`pipeline_privacy_spent`; wrap a step fitted on public data in
    :class:`sklearn.frozen.FrozenEstimator`), or when two DP steps are given
    the same seed: equal ``random_state`` digests (``noise_source_``), so an
    ``int`` and a ``RandomState`` seeded with it, or two ``RandomState``
    instances in the same state, are refused too (they would draw the same
    noise). A step that releases nothing draws nothing, so its seed is not
    compared.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> from skdp import DPLogisticRegression, DPStandardScaler, pipeline_privacy_spent, set_pipeline_budget
    >>> rng = np.random.RandomState(0)
    >>> X = np.c_[rng.randn(500, 2), rng.randint(0, 3, 500)]
    >>> y = (X[:, 0] > 0).astype(int)
    >>> pipe = make_pipeline(
    ...     make_column_transformer((DPStandardScaler(bounds=(-4, 4)), [0, 1]),
    ...                             (OneHotEncoder(categories=[[0, 1, 2]]), [2])),
    ...     DPLogisticRegression(classes=[0, 1]))
    >>> pipe = set_pipeline_budget(pipe, 1.0, 1e-5, n_samples=500, n_features=3).fit(X, y)
    >>> bool(abs(pipeline_privacy_spent(pipe).epsilon - 1.0) < 1e-3)
    True
    """
    steps = dp_steps(pipeline)
    if not steps:
        raise TypeError("The pipeline contains no skdp step.")
    leaks = leaky_steps(pipeline)
    if leaks:
        raise ValueError(f"set_pipeline_budget refuses this pipeline: {leak_message(leaks, has_dp=True)}")
    # a step that releases nothing (an encoder with given categories) draws no noise and spends nothing:
    # it takes no share and cannot share noise with another step
    widths = {id(leaf.step): leaf.n_features for leaf in walk_steps(pipeline, n_features=n_features,
                                                                      feature_names=feature_names)}
    steps = [s for s in steps if not plans_nothing(s, n_samples, widths.get(id(s)))]
    if not steps:
        return pipeline
    # the digest of the generator each step's fit would start from: an int and a RandomState seeded with
    # it, or two RandomState instances in the same state, draw the same noise
    shared = shared_sources(noise_source(s) for s in steps)
    if shared:
        names = [type(s).__name__ for s in steps if noise_source(s) in shared]
        raise ValueError(
            f"set_pipeline_budget refuses this pipeline: the DP steps {names} are given the same random_state "
            "(equal seeds, or generators in the same state), so their noise would be the same draws. Use "
            "random_state=None (fresh OS entropy per fit) or a different secret seed per step."
        )
    w = np.ones(len(steps)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(steps),) or np.any(w <= 0):
        raise ValueError(f"weights must be {len(steps)} positive numbers (one per DP step that spends), got "
                         f"{weights!r}.")
    w = w / w.sum()

    def assign(scale):
        for st, wi in zip(steps, w):
            st.set_params(epsilon=float(scale * wi * epsilon), delta=float(wi * delta))

    assign(1.0)
    if n_samples is None:
        return pipeline

    def total(scale):
        assign(scale)
        events = planned_leaf_events(pipeline, n_samples, n_features, feature_names=feature_names)
        return math.inf if events is None else price(events, delta).budget.epsilon

    lo, hi = 1.0, 1.0
    if total(1.0) > epsilon:  # pragma: no cover - basic composition is always valid
        raise RuntimeError("basic split exceeds the budget")
    while total(hi * 2) <= epsilon and hi < 1 / w.max():
        lo, hi = hi * 2, hi * 2
    hi = min(hi * 2, 1 / w.max() + 1e-12)
    # the largest scale priced within the budget: Brent's method on the (increasing) price, keeping the
    # largest scale seen that is within it (every scale tried is priced, so the one kept is feasible)
    best = [lo]

    def excess(scale):
        over = total(scale) - epsilon
        if over <= 0 and scale > best[0]:
            best[0] = scale
        return over

    if excess(hi) > 0:
        optimize.brentq(excess, lo, hi, xtol=1e-7 * lo, rtol=1e-10, maxiter=100)
    lo = best[0]
    assign(lo)
    return pipeline
