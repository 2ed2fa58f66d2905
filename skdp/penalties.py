"""Penalties and constraints, used only through their prox / projection.

The L2 penalty ``(alpha/2) ||w||^2`` on the mean loss penalises **every**
coordinate, the intercept column included: the strongly convex sensitivity
bounds assume it (``seed002_output_perturbation.md`` section 1.5, reviewer
correction; ``../shared/algorithms/README.md``, decisions).
"""

import numpy as np

__all__ = ["L2Penalty", "project_l2_ball", "hard_threshold"]


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


def hard_threshold(v, s, free=None):
    """``H_s(v)``: keep the ``s`` entries of largest magnitude, zero the rest.

    Ties are broken deterministically by a stable sort on ``(-|v_j|, j)``
    (``seed004_sparse_dp_ight_dpsl_kt.md`` section 0), so two runs on the same
    input agree bitwise. Coordinates in ``free`` (e.g. the intercept column)
    are always kept and do not count towards ``s``. Pure post-processing.

    Parameters
    ----------
    v : ndarray of shape (p,)
    s : int
        Number of entries to keep among the non-free coordinates.
    free : int, sequence of int or None
        Indices kept unconditionally.

    Returns
    -------
    ndarray of shape (p,), a new array with at most ``s + len(free)`` non-zeros.
    """
    v = np.asarray(v)
    out = np.zeros_like(v)
    free = np.atleast_1d(np.asarray([] if free is None else free, dtype=int))
    mag = np.abs(v).astype(float)
    mag[free] = -1.0  # never compete: kept separately
    order = np.argsort(-mag, kind="stable")
    n_candidates = v.size - free.size
    keep = order[: max(0, min(int(s), n_candidates))]
    out[keep] = v[keep]
    out[free] = v[free]
    return out
