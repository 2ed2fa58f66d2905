"""Penalties and constraints, used only through their prox / projection.

The L2 penalty ``(alpha/2) ||w||^2`` on the mean loss penalises **every**
coordinate, the intercept column included: the strongly convex sensitivity
bounds assume it (``seed002_output_perturbation.md`` section 1.5, reviewer
correction; ``../shared/algorithms/README.md``, decisions).
"""

import numpy as np

__all__ = ["L2Penalty", "project_l2_ball"]


def project_l2_ball(w, radius):
    """Euclidean projection onto ``{||w||_2 <= radius}`` (``radius=None``: no constraint)."""
    if radius is None:
        return w
    norm = np.linalg.norm(w)
    if norm > radius:
        return w * (radius / norm)
    return w


class L2Penalty:
    """``(alpha/2) ||w||^2`` with optional ball constraint ``||w|| <= radius``."""

    def __init__(self, alpha, radius=None):
        self.alpha = float(alpha)
        self.radius = radius

    @property
    def strong_convexity(self):
        return self.alpha

    def value(self, w):
        return 0.5 * self.alpha * float(np.sum(w * w))

    def gradient(self, w):
        return self.alpha * w

    def prox(self, w, step):
        """``argmin_v (alpha/2)||v||^2 + ||v - w||^2/(2 step)`` over the ball.

        Shrinking then projecting is exact: both are radial.
        """
        return project_l2_ball(w / (1.0 + step * self.alpha), self.radius)
