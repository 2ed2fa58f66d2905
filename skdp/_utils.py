"""Small helpers shared across subpackages: what each step of a Pipeline does with the private data."""

from sklearn.utils import get_tags

__all__ = ["dp_steps", "named_steps", "step_kind", "leaky_steps", "leak_message", "released_dp_steps"]


def named_steps(estimator, prefix=""):
    """``(name, step)`` pairs of an estimator or a Pipeline, nested Pipelines flattened (``outer__inner``)."""
    if not hasattr(estimator, "steps"):
        return [(prefix.rstrip("_") or type(estimator).__name__.lower(), estimator)]
    out = []
    for name, step in estimator.steps:
        if hasattr(step, "steps"):
            out.extend(named_steps(step, f"{prefix}{name}__"))
        else:
            out.append((f"{prefix}{name}", step))
    return out


def _frozen_inner(step):
    """The estimator a ``sklearn.frozen.FrozenEstimator`` wraps, else ``None``."""
    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # pragma: no cover - scikit-learn < 1.6
        return None
    return step.estimator if isinstance(step, FrozenEstimator) else None


def step_kind(step):
    """How a Pipeline step touches the rows it is fitted on.

    * ``"dp"``: an skdp step (it has ``planned_events``); its cost is in its events.
    * ``"stateless"``: ``None``, ``"passthrough"``, or a step whose tags say it
      learns nothing in ``fit`` (``requires_fit=False``: ``FunctionTransformer``,
      ``Normalizer``, ``Binarizer``).
    * ``"public"``: a :class:`sklearn.frozen.FrozenEstimator`, the declaration that
      the wrapped step was fitted beforehand on **public** data (a frozen step is
      not refitted, so the private rows never reach its ``fit``).
    * ``"frozen_dp"``: a ``FrozenEstimator`` around an skdp step fitted earlier.
      It is not refitted (no budget is set on it), but its release is counted by
      :func:`skdp.pipeline_privacy_spent`, conservatively, as if it had seen the
      same rows.
    * ``"non_dp"``: anything else. Its fitted state (a ``StandardScaler``'s exact
      means, a feature selector's choice) is an exact function of the private
      rows and is published with the model: no finite guarantee holds.
    """
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return "stateless"
    inner = _frozen_inner(step)
    if inner is not None:
        return "frozen_dp" if hasattr(inner, "planned_events") else "public"
    if hasattr(step, "planned_events"):
        return "dp"
    try:
        if not get_tags(step).requires_fit:
            return "stateless"
    except Exception:  # pragma: no cover - an object without sklearn tags
        pass
    return "non_dp"


def dp_steps(estimator):
    """The skdp steps (those with ``planned_events``) of an estimator or a Pipeline, in order."""
    return [s for _, s in named_steps(estimator) if step_kind(s) == "dp"]


def released_dp_steps(estimator):
    """The skdp steps whose releases a fitted Pipeline carries: its DP steps and frozen DP steps."""
    out = []
    for _, s in named_steps(estimator):
        kind = step_kind(s)
        if kind == "dp":
            out.append(s)
        elif kind == "frozen_dp":
            out.append(_frozen_inner(s))
    return out


def leaky_steps(estimator):
    """Names of the steps that would read the private rows without differential privacy."""
    return [name for name, s in named_steps(estimator) if step_kind(s) == "non_dp"]


def leak_message(names):
    """Explanation naming the non-DP steps, and how to declare a public one."""
    return (
        f"step(s) {names} are not differentially private and are fitted on the private rows: their fitted "
        "state (e.g. a StandardScaler's exact means) is published with the model, so no finite guarantee "
        "holds. Use a DP step (skdp.DPStandardScaler, skdp.DPMinMaxScaler) or, if the step was fitted on "
        "public data, declare it by wrapping the fitted step in sklearn.frozen.FrozenEstimator."
    )
