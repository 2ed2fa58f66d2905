"""Penalties and constraints, used only through their prox / projection.

The L2 penalty ``(alpha/2) ||w||^2`` on the mean loss penalises **every**
coordinate, the intercept column included: the strongly convex sensitivity
bounds assume it (``2G/(n alpha)`` needs strong convexity in every coordinate;
see :doc:`/papers/zhang_zheng_mou_wang2017`).

References
----------
.. [1] L. Wang, "Towards efficient and effective privacy-preserving machine learning", PhD
   dissertation, University of California, Los Angeles, 2021.
   <https://escholarship.org/uc/item/3t58b68j>
.. [2] J. Duchi, S. Shalev-Shwartz, Y. Singer and T. Chandra, "Efficient projections onto the
   l1-ball for learning in high dimensions", ICML 2008.
.. [3] D. Wang, M. Ye and J. Xu, "Differentially private empirical risk minimization revisited:
   faster and more general", NeurIPS 2017. <https://arxiv.org/abs/1802.05251>
.. [4] R. Bassily, C. Guzmán and A. Nandi, "Non-Euclidean differentially private stochastic
   convex optimization", COLT 2021. <https://arxiv.org/abs/2103.01278>
"""

import math

import numpy as np

__all__ = ["L2Penalty", "NonconvexPenalty", "NormBall", "project_l1_ball", "project_l2_ball", "hard_threshold"]


def _l2_norm(w):
    """``np.linalg.norm(w)`` (the same value: the square root of the flattened array's dot product with
    itself), without its call overhead for ``float64`` arrays (solvers take one per step)."""
    if isinstance(w, np.ndarray) and w.dtype == np.float64:
        v = w.ravel(order="K")
        return math.sqrt(v.dot(v))
    return np.linalg.norm(w)


def project_l2_ball(w, radius):
    """Euclidean projection onto ``{||w||_2 <= radius}`` (``radius=None``: no constraint)."""
    if radius is None:
        return w
    norm = _l2_norm(w)
    if norm > radius:
        return w * (radius / norm)
    return w


class L2Penalty:
    """``(alpha/2) ||w||^2`` with optional ball constraint ``||w|| <= radius``."""

    def __init__(self, alpha, radius=None):
        self.alpha = float(alpha)
        self.radius = radius

    #: solvers that need strong convexity or a prox can use this penalty
    convex = True

    @property
    def strong_convexity(self):
        return self.alpha

    @property
    def smoothness(self):
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


class NonconvexPenalty:
    """``lam * sum_j w_j^2 / (1 + w_j^2)``: the nonconvex penalty of the papers' experiments.

    Wang 2021 (dissertation), the experiments of chapters 4-5 (lambda = 1e-3 in
    Sec. 4.7.1). Data-independent, so it is added outside the clipping and
    never enters a sensitivity. Its gradient is ``2 lam w / (1 + w^2)^2``
    (coordinate-wise) and its curvature lies in ``[-lam/2, 2 lam]``, so it is
    ``2 lam``-smooth. It has no strong convexity and no cheap prox, so only
    the gradient solvers that take it explicitly (``dp_gd``, ``dp_lssgd``,
    ``rrpsgd``, ``dp_srm``) accept it. Like the L2 penalty, it covers every
    coordinate (the intercept column included).
    """

    convex = False
    radius = None

    def __init__(self, lam):
        self.lam = float(lam)

    #: no L2 part: the solvers' ``alpha`` terms vanish
    alpha = 0.0
    strong_convexity = 0.0

    @property
    def smoothness(self):
        return 2.0 * self.lam

    def value(self, w):
        w = np.asarray(w, dtype=float)
        return self.lam * float(np.sum(w * w / (1.0 + w * w)))

    def gradient(self, w):
        w = np.asarray(w, dtype=float)
        return 2.0 * self.lam * w / (1.0 + w * w) ** 2


def hard_threshold(v, s, free=None):
    """``H_s(v)``: keep the ``s`` entries of largest magnitude, zero the rest.

    Ties are broken deterministically by a stable sort on ``(-|v_j|, j)``
    (the dissertation's ``H_s`` of Wang 2021, eq. 2.4.1, leaves ties open), so two runs on the same
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


def project_l1_ball(w, radius):
    """Euclidean projection onto ``{||w||_1 <= radius}`` (Duchi et al. 2008, sort-based).

    The projection used by the constrained solvers of Wang, Ye and Xu 2017. O(p log p).
    """
    w = np.asarray(w, dtype=float)
    a = np.abs(w)
    if a.sum() <= radius:
        return w.copy()
    u = np.sort(a)[::-1]
    css = np.cumsum(u)
    k = np.arange(1, u.size + 1)
    rho = np.nonzero(u * k > css - radius)[0][-1]
    theta = (css[rho] - radius) / (rho + 1.0)
    return np.sign(w) * np.maximum(a - theta, 0.0)


class NormBall:
    """The constraint set ``{||w||_p <= radius}`` for ``p`` in ``[1, 2]``.

    Used by the constrained solvers only through public operations: the
    Euclidean projection (``p`` in {1, 2}), the linear minimisation oracle over
    the ball, the dual norm ``q = p/(p-1)`` and the diameter ``2 radius``
    (the notation of Bassily, Guzman and Nandi 2021 and the LMO of
    their Alg. 1). For ``p = 1`` the ball is the polytope with the ``2 d`` vertices
    ``+-radius e_j``.

    Parameters
    ----------
    p : float in [1, 2]
    radius : float > 0
    """

    def __init__(self, p, radius):
        p = float(p)
        if not 1.0 <= p <= 2.0:
            raise ValueError(f"p must be in [1, 2], got {p!r}.")
        if not (math.isfinite(radius) and radius > 0):
            raise ValueError(f"radius must be a positive finite number, got {radius!r}.")
        self.p = p
        self.radius = float(radius)

    @property
    def q(self):
        """Dual exponent ``p/(p - 1)`` (``inf`` for ``p = 1``)."""
        return math.inf if self.p == 1.0 else self.p / (self.p - 1.0)

    @property
    def diameter(self):
        """Diameter ``D = 2 radius`` in the ball's own norm."""
        return 2.0 * self.radius

    def norm(self, w):
        return float(np.linalg.norm(np.ravel(w), ord=self.p))

    def dual_norm(self, g):
        return float(np.linalg.norm(np.ravel(g), ord=self.q))

    def contains(self, w, rtol=1e-12):
        return self.norm(w) <= self.radius * (1.0 + rtol)

    def project(self, w):
        """Euclidean projection (implemented for ``p`` in {1, 2})."""
        if self.p == 2.0:
            return project_l2_ball(np.asarray(w, dtype=float), self.radius)
        if self.p == 1.0:
            return project_l1_ball(w, self.radius)
        raise NotImplementedError("Euclidean projection onto an l_p ball with 1 < p < 2 is not needed by any solver.")

    def lmo(self, g):
        """``argmin_{||w||_p <= radius} <g, w>``; ``<g, w> = -radius ||g||_q``.

        ``w = -radius sign(g) |g|^(q-1) / ||g||_q^(q-1)``, computed after
        dividing ``g`` by ``max |g_j|`` so that large ``q`` does not overflow
        (for ``p = 2``, ``-radius g / ||g||_2`` directly when ``1e-150 < ||g||_2 < 1e150``).
        For ``p = 1`` the vertex ``-radius sign(g_j) e_j`` at ``j = argmax |g_j|``.
        """
        g = np.asarray(g, dtype=float)
        if self.p == 2.0 and g.dtype == np.float64:
            norm = _l2_norm(g)  # one pass; the rescaled path below where ||g||^2 could under- or overflow
            if 1e-150 < norm < 1e150:
                return g * (-self.radius / norm)
        top = float(np.abs(g).max()) if g.size else 0.0
        if top == 0.0:
            return np.zeros_like(g)
        if self.p == 1.0:
            w = np.zeros_like(g)
            j = int(np.argmax(np.abs(g)))
            w[j] = -self.radius * np.sign(g[j])
            return w
        h = g / top
        if self.p == 2.0:
            return -self.radius * h / _l2_norm(h)
        q = self.q
        mag = np.abs(h) ** (q - 1.0)
        return -self.radius * np.sign(h) * mag / np.linalg.norm(h, ord=q) ** (q - 1.0)
