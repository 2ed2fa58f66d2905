"""Small helpers shared across subpackages."""

__all__ = ["dp_steps"]


def dp_steps(estimator):
    """The skdp steps (those with ``planned_events``) of an estimator or a Pipeline, in order."""
    steps = [s for _, s in estimator.steps] if hasattr(estimator, "steps") else [estimator]
    return [s for s in steps if hasattr(s, "planned_events")]
