"""Small helpers shared across subpackages: what each step of a Pipeline does with the private data.

The walk looks into the composite steps of scikit-learn (:class:`~sklearn.pipeline.Pipeline`,
:class:`~sklearn.compose.ColumnTransformer`, :class:`~sklearn.pipeline.FeatureUnion`), so every
step that reads the private rows is found wherever it is nested, under a nested name such as
``"columntransformer__num__scaler"``, together with the width of its input where public information
gives it (see :func:`walk_steps`).

References
----------
.. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
"""

from typing import NamedTuple

import numpy as np
from sklearn.utils import get_tags

from .privacy import ApproxDPEvent, GaussianEvent

__all__ = [
    "dp_steps",
    "leak_message",
    "leaky_steps",
    "named_steps",
    "planned_leaf_events",
    "plans_nothing",
    "released_dp_steps",
    "step_kind",
    "walk_steps",
    "width_free_events",
]


class Leaf(NamedTuple):
    """One leaf step of a walk: nested name, the step, its input width, whether it is fitted as a clone."""

    name: str
    step: object
    n_features: object  # int, or None when public information does not give it
    cloned: bool  # inside a ColumnTransformer, which fits clones of its transformers


def _is_str(x, *values):
    return isinstance(x, str) and (not values or x in values)


def _frozen_inner(step):
    """The estimator a ``sklearn.frozen.FrozenEstimator`` wraps, else ``None``."""
    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # pragma: no cover - scikit-learn < 1.6
        return None
    return step.estimator if isinstance(step, FrozenEstimator) else None


def _is_column_transformer(est):
    from sklearn.compose import ColumnTransformer

    return isinstance(est, ColumnTransformer)


def _is_feature_union(est):
    from sklearn.pipeline import FeatureUnion

    return isinstance(est, FeatureUnion)


def is_composite(est):
    """Whether the walk looks inside ``est`` (a Pipeline, ColumnTransformer or FeatureUnion)."""
    return hasattr(est, "steps") or _is_column_transformer(est) or _is_feature_union(est)


# --- steps that learn nothing from the rows -------------------------------------------------------------

def _given_categories(step):
    """The given category lists of an encoder (``None`` when they are learned: ``categories="auto"``)."""
    cats = step.categories
    if _is_str(cats):
        return None
    return [list(c) for c in cats]


def _no_infrequent(step):
    return getattr(step, "min_frequency", None) is None and getattr(step, "max_categories", None) is None


def _stateless_sklearn(step):
    """Whether ``step`` is one of the checked scikit-learn transformers in a setting that learns nothing.

    The list is explicit (see :func:`step_kind`); anything else is not assumed stateless.
    """
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    if type(step) is OneHotEncoder:
        # with given categories, drop="first" drops the first *given* category and "if_binary" depends on
        # the given lists' lengths only; min_frequency / max_categories count the rows
        return _given_categories(step) is not None and _no_infrequent(step)
    if type(step) is OrdinalEncoder:
        return _given_categories(step) is not None and _no_infrequent(step)
    if type(step) is SimpleImputer:
        # "constant" fills with a given value; without keep_empty_features it drops the columns that are
        # empty in the rows (a learned width), and add_indicator learns which columns have missing values
        return step.strategy == "constant" and step.keep_empty_features and not step.add_indicator
    if type(step) is MissingIndicator:
        return _is_str(step.features, "all")
    return False


def step_kind(step):
    """How a Pipeline step touches the rows it is fitted on.

    * ``"dp"``: an skdp step (it has ``planned_events``); its cost is in its events.
    * ``"stateless"``: ``None``, ``"passthrough"``, ``"drop"``, a step whose tags
      say it learns nothing in ``fit`` (``requires_fit=False``:
      ``FunctionTransformer``, ``Normalizer``, ``Binarizer``), or one of these
      checked scikit-learn transformers in a setting that learns nothing:

      - ``OneHotEncoder`` with given ``categories`` (a list per column, not
        ``"auto"``) and ``min_frequency=None``, ``max_categories=None``. Any
        ``drop`` is allowed: with given categories ``"first"`` drops the first
        *given* category, ``"if_binary"`` depends only on how many categories
        are given, and an explicit list is public. ``handle_unknown`` may be
        anything: without ``min_frequency`` / ``max_categories`` no category is
        infrequent, and with ``"error"`` a row outside the given categories
        stops the fit (as a label outside an skdp model's ``classes`` does), so
        nothing is released;
      - ``OrdinalEncoder`` with given ``categories`` and no
        ``min_frequency`` / ``max_categories``;
      - ``SimpleImputer(strategy="constant", keep_empty_features=True,
        add_indicator=False)`` (otherwise it drops the columns that are empty
        in the rows, or learns which columns have missing values);
      - ``MissingIndicator(features="all")``.

      Subclasses of these are not assumed to behave alike.
    * ``"public"``: a :class:`sklearn.frozen.FrozenEstimator`, the declaration that
      the wrapped step was fitted beforehand on **public** data (a frozen step is
      not refitted, so the private rows never reach its ``fit``).
    * ``"frozen_dp"``: a ``FrozenEstimator`` around an skdp step fitted earlier.
      It is not refitted (no budget is set on it), but its release is counted by
      :func:`skdp.pipeline_privacy_spent`, conservatively, as if it had seen the
      same rows.
    * ``"non_dp"``: anything else. Its fitted state (a ``StandardScaler``'s exact
      means, a feature selector's choice, an encoder's ``categories="auto"``) is
      an exact function of the private rows and is published with the model: no
      finite guarantee holds.

    Composite steps (``Pipeline``, ``ColumnTransformer``, ``FeatureUnion``) are
    not classified themselves: :func:`walk_steps` looks into them.
    """
    if step is None or _is_str(step, "passthrough", "drop"):
        return "stateless"
    inner = _frozen_inner(step)
    if inner is not None:
        return "frozen_dp" if hasattr(inner, "planned_events") else "public"
    if hasattr(step, "planned_events"):
        return "dp"
    if _stateless_sklearn(step):
        return "stateless"
    try:
        if not get_tags(step).requires_fit:
            return "stateless"
    except Exception:  # pragma: no cover - an object without sklearn tags
        pass
    return "non_dp"


# --- widths from public information -------------------------------------------------------------------

def _selected(columns, n_features, names):
    """What a ColumnTransformer column selection picks, from public information only.

    Returns ``(count, keys)``: ``count`` the number of columns (``None`` if unknown), ``keys`` the set of
    selected column keys (positions, or names when ``names`` is not known) or ``None`` if unknown.
    """
    if callable(columns):
        return None, None
    if _is_str(columns) or isinstance(columns, (int, np.integer)):
        columns = [columns]
    if isinstance(columns, slice):
        if names is not None:
            positions = {str(n): i for i, n in enumerate(names)}
            start = positions.get(columns.start, columns.start) if _is_str(columns.start) else columns.start
            stop = columns.stop
            if _is_str(stop):  # a label slice includes its end
                stop = positions.get(stop, -2) + 1
            columns = slice(start, stop, columns.step)
            return _selected(list(range(len(names)))[columns], n_features, names)
        if n_features is None or _is_str(columns.start) or _is_str(columns.stop):
            return None, None
        return _selected(list(range(n_features))[columns], n_features, names)
    arr = np.asarray(columns)
    if arr.dtype == bool:
        return int(arr.sum()), set(np.flatnonzero(arr).tolist())
    keys = []
    for c in arr.tolist():
        if isinstance(c, str) and names is not None:
            keys.append(list(map(str, names)).index(c) if c in list(map(str, names)) else c)
        elif isinstance(c, int) and c < 0 and n_features is not None:
            keys.append(c + n_features)
        else:
            keys.append(c)
    return len(keys), set(keys)


def _encoded_width(step):
    """Output width of a OneHotEncoder with given categories (minus the dropped columns)."""
    cats = _given_categories(step)
    total = sum(len(c) for c in cats)
    drop = step.drop
    if drop is None:
        return total
    if _is_str(drop, "first"):
        return total - len(cats)
    if _is_str(drop, "if_binary"):
        return total - sum(len(c) == 2 for c in cats)
    return total - sum(d is not None for d in np.asarray(drop, dtype=object).tolist())


def _fitted_width(step):
    """Output width of a fitted public step, from its own attributes, else ``None``."""
    for attr in ("_n_features_out", "n_features_out_"):
        value = getattr(step, attr, None)
        if isinstance(value, (int, np.integer)):
            return int(value)
    try:
        return len(step.get_feature_names_out())
    except Exception:
        return None


def out_width(step, n_in):
    """Output width of a leaf step given its input width ``n_in`` (``None``: not known without data)."""
    from sklearn.base import OneToOneFeatureMixin
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

    if step is None or _is_str(step, "passthrough"):
        return n_in
    if _is_str(step, "drop"):
        return 0
    inner = _frozen_inner(step)
    if inner is not None:
        return _fitted_width(inner)
    if type(step) is OneHotEncoder and step_kind(step) == "stateless":
        return _encoded_width(step)
    if step_kind(step) == "dp" and type(step).__name__ == "DPOneHotEncoder":
        # given categories: the public width (no category is infrequent); "auto": private until fitted
        if _given_categories(step) is not None:
            return sum(len(c) for c in _given_categories(step))
        return _fitted_width(step) if hasattr(step, "categories_") else None
    if step_kind(step) == "dp" and type(step).__name__ == "DPSimpleImputer":
        # every column is kept (which are empty is private), with an indicator for every column if asked
        return None if n_in is None else n_in * (2 if step.add_indicator else 1)
    if isinstance(step, OneToOneFeatureMixin) or type(step) in (MissingIndicator, SimpleImputer) and (
            step_kind(step) == "stateless"):
        return n_in
    if type(step) is FunctionTransformer and step.func is None:
        return n_in
    return _fitted_width(step) if hasattr(step, "n_features_in_") else None


def _ct_parts(ct, fitted):
    """``(name, transformer, columns)`` of a ColumnTransformer: the fitted clones, or the templates."""
    if fitted and hasattr(ct, "transformers_"):
        return list(ct.transformers_), True
    return list(ct.transformers), False


def _walk(est, prefix, fitted, n_in, names, cloned, out):
    """Append the leaves of ``est`` to ``out``; return the output width (``None`` if unknown)."""
    if hasattr(est, "steps"):  # Pipeline: each step reads the previous one's output
        width, cur_names = n_in, names
        for name, step in est.steps:
            width = _walk(step, f"{prefix}{name}__", fitted, width, cur_names, cloned, out)
            cur_names = None
        return width
    if _is_feature_union(est):  # every transformer reads the same input; outputs side by side
        widths = [_walk(t, f"{prefix}{name}__", fitted, n_in, names, cloned, out)
                  for name, t in est.transformer_list]
        return None if any(w is None for w in widths) else sum(widths)
    if _is_column_transformer(est):
        parts, is_fitted = _ct_parts(est, fitted)
        widths, picked = [], set()
        known = n_in is not None
        for name, trans, columns in parts:  # a fitted one lists its remainder, with its columns, among them
            count, keys = _selected(columns, n_in, names)
            if keys is None:
                known = False
            else:
                picked |= keys
            if count == 0:
                continue  # a transformer with no columns is not fitted: it reads nothing
            widths.append(_walk(trans, f"{prefix}{name}__", fitted, count, None, True, out))
        if not is_fitted and not _is_str(est.remainder, "drop"):
            n_rest = n_in - len(picked) if known and all(isinstance(k, int) for k in picked) else None
            if n_rest != 0:
                widths.append(_walk(est.remainder, f"{prefix}remainder__", fitted, n_rest, None, True, out))
        return None if any(w is None for w in widths) else sum(widths)
    name = prefix[:-2] if prefix.endswith("__") else (prefix or type(est).__name__.lower())
    out.append(Leaf(name, est, None if n_in is None else int(n_in), cloned))
    return out_width(est, n_in)


def walk_steps(estimator, *, fitted=False, n_features=None, feature_names=None):
    """The leaf steps of an estimator, composites looked into, each with the width of its input.

    Parameters
    ----------
    estimator : estimator, Pipeline, ColumnTransformer or FeatureUnion
    fitted : bool, default=False
        ``True`` walks what a fitted ColumnTransformer holds (``transformers_``,
        the fitted clones: what was released); ``False`` walks its templates
        (``transformers``: where a budget is set before a fit; ``clone`` copies
        it into the clone that is fitted).
    n_features : int or None
        Width of the input (public: the number of columns of ``X``).
    feature_names : sequence of str or None
        Column names of ``X`` (a DataFrame's columns), to resolve
        ColumnTransformer selections by name.

    Returns
    -------
    list of Leaf
        ``(name, step, n_features, cloned)``: the nested name
        (``"columntransformer__num__scaler"``), the step, the width of its
        input computed from public information only (the column selections,
        encoders with given categories, fitted public steps; ``None`` where it
        is not known without data), and whether it is fitted as a clone (inside
        a ColumnTransformer).
    """
    if feature_names is not None and n_features is None:
        n_features = len(feature_names)
    out = []
    _walk(estimator, "", fitted, n_features, None if feature_names is None else list(feature_names), False, out)
    return out


# --- the step lists the privacy functions use ------------------------------------------------------------

def named_steps(estimator, prefix="", fitted=False):
    """``(name, step)`` leaf pairs of an estimator, composites flattened (``outer__inner``)."""
    return [(leaf.name, leaf.step) for leaf in walk_steps(estimator, fitted=fitted)]


def dp_steps(estimator, fitted=False):
    """The skdp steps (those with ``planned_events``) of an estimator, composites looked into, in order."""
    return [s for _, s in named_steps(estimator, fitted=fitted) if step_kind(s) == "dp"]


def released_dp_steps(estimator):
    """The skdp steps whose releases a fitted estimator carries: its fitted DP steps and frozen DP steps."""
    out = []
    for _, s in named_steps(estimator, fitted=True):
        kind = step_kind(s)
        if kind == "dp":
            out.append(s)
        elif kind == "frozen_dp":
            out.append(_frozen_inner(s))
    return out


def leaky_steps(estimator, fitted=False):
    """Nested names of the steps that would read the private rows without differential privacy."""
    return [name for name, s in named_steps(estimator, fitted=fitted) if step_kind(s) == "non_dp"]


def leak_message(names, has_dp=False):
    """Explanation naming the non-DP steps, and how to replace them or declare a public one.

    ``has_dp``: the estimator already has DP steps (then the text does not suggest using one as if
    there were none; it asks for the named steps to be replaced).
    """
    advice = ("Replace those steps by DP ones (skdp.DPStandardScaler, skdp.DPMinMaxScaler), or by steps that "
              "learn nothing (e.g. OneHotEncoder with given categories)" if has_dp else
              "Use a DP step (skdp.DPStandardScaler, skdp.DPMinMaxScaler)")
    return (
        f"step(s) {names} are not differentially private and are fitted on the private rows: their fitted "
        "state (e.g. a StandardScaler's exact means) is published with the model, so no finite guarantee "
        f"holds. {advice} or, if the step was fitted on public data, declare it by wrapping the fitted step "
        "in sklearn.frozen.FrozenEstimator."
    )


def _width_text(n_features, feature_names):
    if feature_names is not None:
        return f"X has {len(feature_names)} named columns"
    return "the width of X is not given (pass n_features)" if n_features is None else f"X has {n_features} columns"


def _nominal_plan_allowed(step):
    """Whether a DP step whose width is unknown can be planned at its own nominal (epsilon, delta)."""
    try:
        step._validate_params()  # a bad parameter is reported as it is, not planned around
    except AttributeError:
        pass
    eps, delta = getattr(step, "epsilon", None), getattr(step, "delta", None)
    return isinstance(eps, (int, float)) and 0 < eps < float("inf") and isinstance(delta, (int, float))


def plans_nothing(step, n_samples=None, n_features=None):
    """Whether a DP step's fit releases nothing: its plan is ``[]`` (e.g. an encoder with given categories).

    Such a step draws no noise and spends nothing, so it takes no share of a
    budget and cannot share noise with another step. A step whose plan cannot
    be made (a width it needs is unknown, a bad parameter) is not assumed free.
    """
    try:
        return step.planned_events(1000 if n_samples is None else n_samples, n_features) == []
    except Exception:
        return False


#: the input widths at which a DP step whose width is private before the fit is planned (see
#: :func:`width_free_events`): a factor of 2 to 4 apart up to 2^20 columns, with the 256 / 257 pair on
#: either side of the gradient solvers' curvature limit
PROBE_WIDTHS = (1, 2, 3, 4, 8, 16, 64, 256, 257, 1024, 2 ** 14, 2 ** 20)

#: verdicts of :func:`width_free_events`, by the step's class, parameters, ``n_samples`` and options
_WIDTH_FREE_CACHE = {}


def _normal_form(events):
    """``(mu^2, other events)``: the Gaussian releases composed into one GDP parameter, the rest as a multiset.

    Gaussian mechanisms compose exactly: releases that are ``mu_i``-GDP
    together are ``sqrt(sum mu_i^2)``-GDP, a single Gaussian mechanism (Dong,
    Roth and Su 2022, Cor. 3.3), so two plans with the same normal form
    compose with any other events to the same price.
    """
    from collections import Counter


    mu2, rest = 0.0, Counter()
    for ev in events:
        if type(ev) is GaussianEvent:
            mu2 += ev.mu_squared
        else:
            rest[ev] += 1
    return mu2, rest


def width_free_events(step, n_samples, widths=PROBE_WIDTHS, **extra):
    """The events of a DP step whose input width is not known, if its plan does not depend on it; else ``None``.

    The step is planned at every width of ``widths`` (:data:`PROBE_WIDTHS`).
    Many plans depend on the width only through how the Gaussian releases are
    scheduled (a gradient solver's step count): each schedule is calibrated
    to the same Gaussian-DP parameter, and Gaussian releases compose exactly
    into one, so the price is the same. When every probe has the same
    normal form (:func:`_normal_form`: the same non-Gaussian events, and
    ``sum mu_i^2`` equal to within ``1e-9`` relative), the events returned are
    those non-Gaussian events and one ``GaussianEvent`` with the largest
    probed ``mu`` (``sensitivity=mu``, ``sigma=1``): the step's exact price
    at any probed width. Otherwise (e.g. a step whose bound selection spends
    per column, or a solver whose budget split changes with the width)
    ``None``: the caller plans the step at its nominal ``(epsilon, delta)``,
    an upper bound. Widths between the probes are not planned: the check
    finds every price that changes with the width at a threshold (a rule
    ``width <= t`` with t below 2^20, as the skdp solvers' schedules have), since the probes
    on either side of it differ; a price that differed only on a range of
    widths strictly between two probes would not be found. Verdicts are
    cached by the step's class, parameters, ``n_samples`` and options.
    """
    try:
        key = (type(step), repr(sorted(step.get_params(deep=False).items())), int(n_samples),
               repr(sorted(extra.items())), tuple(widths))
    except Exception:  # pragma: no cover - a step without get_params is planned afresh
        key = None
    if key is not None and key in _WIDTH_FREE_CACHE:
        cached = _WIDTH_FREE_CACHE[key]
        return None if cached is None else list(cached)
    events = _width_free_events(step, n_samples, widths, extra)
    if key is not None:
        if len(_WIDTH_FREE_CACHE) > 1024:
            _WIDTH_FREE_CACHE.clear()
        _WIDTH_FREE_CACHE[key] = None if events is None else tuple(events)
    return events


def _width_free_events(step, n_samples, widths, extra):

    first, top = None, 0.0
    for w in widths:
        try:
            ev = step.planned_events(n_samples, int(w), **extra)
        except ValueError:
            return None
        if ev is None:
            return None
        form = _normal_form(ev)
        if first is None:
            first = form
        elif form[1] != first[1] or abs(form[0] - first[0]) > 1e-9 * max(form[0], first[0], 1e-300):
            return None  # the price depends on the width
        top = max(top, form[0])
    rest = [ev for ev, k in first[1].items() for _ in range(k)]
    return rest + ([GaussianEvent(top ** 0.5, 1.0)] if top > 0 else [])


def planned_leaf_events(estimator, n_samples, n_features=None, n_targets=None, feature_names=None):
    """Events a fit of ``estimator`` on ``n_samples`` rows releases, each DP step planned with its input width.

    Every DP step, wherever it is nested, is planned with the width of its own
    input (:func:`walk_steps`: a scaler inside a ColumnTransformer on 4
    columns plans with 4; a model after a one-hot encoder with given
    categories, with the encoded width). ``n_targets`` goes to the last DP
    step. Returns ``None`` if some DP step has no finite guarantee (a bound
    read from the data).

    A step whose input width is not public before the fit (after a private
    category selection, behind a callable column selector) is planned by
    :func:`width_free_events`: when its plan has the same price at every
    probed width (the default models after ``DPOneHotEncoder()``: their
    Gaussian releases are calibrated to one Gaussian-DP parameter whatever
    the width), that price is exact and takes part in a budget split like
    any other. Where the plan depends on the width (a
    ``DPStandardScaler(bounds="auto")``, whose per-column bound selections
    depend on it), the step is planned at its own nominal ``(epsilon,
    delta)`` (its fit is calibrated to it at the width it gets): an upper
    bound, so a budget split with it spends at most, not exactly, the
    budget. A step that cannot be planned at a known width raises
    ``ValueError`` naming the step and the widths.
    """
    leaves = [leaf for leaf in walk_steps(estimator, n_features=n_features, feature_names=feature_names)
              if step_kind(leaf.step) == "dp"]
    events = []
    for i, leaf in enumerate(leaves):
        extra = {"n_targets": n_targets} if n_targets is not None and i == len(leaves) - 1 else {}
        if leaf.n_features is None:
            ev = width_free_events(leaf.step, n_samples, **extra)
            if ev is not None:
                events.extend(ev)
                continue
        try:
            ev = leaf.step.planned_events(n_samples, leaf.n_features, **extra)
            if ev is None:
                return None
            if leaf.n_features is None:
                # planned without a width, yet not the same at every width (e.g. a solver chosen by the
                # width): the width-free plan is not to be trusted
                raise ValueError("its plan depends on the input width")
        except ValueError as exc:
            if leaf.n_features is None and _nominal_plan_allowed(leaf.step):
                # the width is not public before the fit (e.g. after a private category selection): the
                # step's fit is calibrated to its own (epsilon, delta) at the width it gets, so plan that

                events.append(ApproxDPEvent(float(leaf.step.epsilon), float(leaf.step.delta)))
                continue
            width = "an input width not known from public information" if leaf.n_features is None else (
                f"{leaf.n_features} input columns")
            raise ValueError(
                f"Cannot plan the DP step {leaf.name!r} ({type(leaf.step).__name__}) with {width} "
                f"({_width_text(n_features, feature_names)}): {exc}") from None
        if ev is None:
            return None
        events.extend(ev)
    return events
