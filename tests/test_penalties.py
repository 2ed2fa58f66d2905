"""skdp/penalties.py: values and gradients, prox and projections, the l_p ball's oracles, hard thresholding.

A prox or projection is checked through its optimality condition over random
points of the constraint set (a convex ``f`` is minimised over ``C`` at ``v``
iff ``<grad f(v), z - v> >= 0`` for every ``z`` in ``C``), so no reference
implementation is needed.
"""

import math

import numpy as np
import pytest
from scipy import optimize

from skdp.penalties import L2Penalty, NonconvexPenalty, NormBall, hard_threshold, project_l1_ball, project_l2_ball


def _in_ball(rng, n, d, p, radius):
    """Random points of ``{||z||_p <= radius}``, a third of them on its boundary."""
    Z = rng.randn(n, d) * rng.choice([1.0, 0.01], (n, d))  # some nearly sparse directions (l1 vertices)
    Z /= np.linalg.norm(Z, ord=p, axis=1, keepdims=True)
    r = rng.uniform(0, radius, n)
    r[: n // 3] = radius
    return Z * r[:, None]


def _assert_minimises_over(grad_at_v, v, Z, scale):
    """Optimality of ``v`` over the points ``Z``: ``<grad f(v), z - v> >= 0`` (up to rounding)."""
    assert np.min((Z - v.ravel()) @ grad_at_v.ravel()) >= -1e-10 * scale


def _fd_gradient(f, w, h=1e-6):
    return np.array([(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(w.size)])


# ------------------------------------------------------------------------------------------
# L2Penalty
# ------------------------------------------------------------------------------------------
def test_l2_penalty_value_gradient_and_constants():
    pen = L2Penalty(0.7)
    w = np.random.RandomState(0).randn(6) * 2
    assert pen.value(w) == pytest.approx(0.35 * np.sum(w**2), rel=1e-12)
    np.testing.assert_allclose(pen.gradient(w), _fd_gradient(pen.value, w), rtol=1e-6, atol=1e-9)
    assert pen.strong_convexity == pen.smoothness == 0.7  # f = (alpha/2)||w||^2: both constants are alpha
    assert pen.convex


@pytest.mark.parametrize("radius", [None, 0.5, 50.0])
@pytest.mark.parametrize("shape", [(6,), (4, 3)], ids=["vector", "matrix"])
def test_l2_prox_is_the_minimiser_over_the_ball(radius, shape):
    """``prox(w, step) = argmin_{||v|| <= radius} (alpha/2)||v||^2 + ||v - w||^2 / (2 step)``."""
    rng = np.random.RandomState(1)
    pen = L2Penalty(0.3, radius=radius)
    for _ in range(10):
        w = rng.randn(*shape) * 3
        w_before = w.copy()
        step = 10 ** rng.uniform(-1, 1)
        v = pen.prox(w, step)
        np.testing.assert_array_equal(w, w_before)
        assert v.shape == w.shape
        grad = pen.alpha * v + (v - w) / step
        if radius is None or np.linalg.norm(v) < radius * (1 - 1e-12):
            np.testing.assert_allclose(grad, 0.0, atol=1e-12)  # interior: stationary
        else:
            assert np.linalg.norm(v) == pytest.approx(radius, rel=1e-12)
        Z = _in_ball(rng, 500, w.size, 2, radius if radius is not None else 100.0)
        _assert_minimises_over(grad, v, Z, np.linalg.norm(w) / step)


def test_project_l2_ball():
    rng = np.random.RandomState(2)
    w = rng.randn(5) * 4
    assert project_l2_ball(w, None) is w
    inside = w / np.linalg.norm(w)
    np.testing.assert_array_equal(project_l2_ball(inside, 2.0), inside)
    v = project_l2_ball(w, 1.5)
    assert np.linalg.norm(v) == pytest.approx(1.5, rel=1e-12)
    np.testing.assert_allclose(project_l2_ball(v, 1.5), v, rtol=1e-12)  # idempotent
    _assert_minimises_over(v - w, v, _in_ball(rng, 1000, 5, 2, 1.5), np.linalg.norm(w))


# ------------------------------------------------------------------------------------------
# the nonconvex penalty
# ------------------------------------------------------------------------------------------
def test_nonconvex_penalty_value_gradient_smoothness():
    pen = NonconvexPenalty(0.3)
    rng = np.random.RandomState(0)
    w = rng.randn(7) * 2
    h = 1e-6
    num = np.array([(pen.value(w + h * e) - pen.value(w - h * e)) / (2 * h) for e in np.eye(7)])
    np.testing.assert_allclose(pen.gradient(w), num, rtol=1e-6, atol=1e-9)
    t = np.linspace(-5, 5, 2001)
    curvature = np.gradient(pen.gradient(t), t)  # coordinate-wise second derivative
    assert curvature.max() <= pen.smoothness * (1 + 1e-3) and curvature.max() > 0.99 * pen.smoothness
    assert curvature.min() < 0  # genuinely nonconvex
    # the documented curvature range [-lam/2, 2 lam], attained at both ends
    assert curvature.min() >= -0.5 * pen.lam * (1 + 1e-3) and curvature.min() < -0.49 * pen.lam
    assert pen.alpha == 0.0 and not pen.convex


# ------------------------------------------------------------------------------------------
# projections and oracles of the l_p ball
# ------------------------------------------------------------------------------------------
def test_project_l1_ball_is_the_euclidean_projection():
    rng = np.random.RandomState(0)
    for _ in range(5):
        v = rng.randn(8) * 2
        w = project_l1_ball(v, 1.5)
        cons = {"type": "ineq", "fun": lambda z: 1.5 - np.sum(np.abs(z))}
        ref = optimize.minimize(lambda z: np.sum((z - v) ** 2), np.zeros(8), constraints=[cons], method="SLSQP",
                                options={"ftol": 1e-14, "maxiter": 500}).x
        assert np.sum((w - v) ** 2) <= np.sum((ref - v) ** 2) + 1e-7
        assert np.abs(w).sum() <= 1.5 + 1e-12


def test_project_l1_ball_optimality_and_inside_points():
    rng = np.random.RandomState(3)
    for _ in range(20):
        v = rng.randn(10) * rng.choice([0.1, 1.0, 10.0])
        v_before = v.copy()
        w = project_l1_ball(v, 1.0)
        np.testing.assert_array_equal(v, v_before)
        if np.abs(v).sum() <= 1.0:
            np.testing.assert_array_equal(w, v)
            assert w is not v  # a copy, as for points outside
        else:
            assert np.abs(w).sum() == pytest.approx(1.0, rel=1e-12)
        assert np.all(w * v >= 0)  # never flips a sign
        _assert_minimises_over(w - v, w, _in_ball(rng, 1000, 10, 1, 1.0), np.abs(v).sum())


@pytest.mark.parametrize("p", [1.0, 1.2, 1.5, 2.0])
def test_lmo_attains_minus_radius_dual_norm(p):
    rng = np.random.RandomState(1)
    ball = NormBall(p, 3.0)
    for _ in range(5):
        g = rng.randn(12) * 10 ** rng.uniform(-3, 3)
        w = ball.lmo(g)
        assert math.isclose(g @ w, -3.0 * ball.dual_norm(g), rel_tol=1e-10)
        assert math.isclose(ball.norm(w), 3.0, rel_tol=1e-10)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0])
def test_lmo_minimises_the_linear_function_over_the_ball(p):
    rng = np.random.RandomState(4)
    ball = NormBall(p, 2.0)
    Z = _in_ball(rng, 2000, 6, p, 2.0)
    assert all(ball.contains(z) for z in Z[:50])
    for _ in range(10):
        g = rng.randn(6)
        w = ball.lmo(g)
        assert ball.contains(w)
        assert g @ w <= np.min(Z @ g) + 1e-12
    np.testing.assert_array_equal(ball.lmo(np.zeros(6)), np.zeros(6))
    if p == 1.0:  # a vertex: -radius sign(g_j) e_j at the largest |g_j|
        g = np.array([0.1, -3.0, 2.0])
        np.testing.assert_array_equal(NormBall(1.0, 2.0).lmo(g), [0.0, 2.0, 0.0])


@pytest.mark.parametrize("p", [1.0, 2.0])
def test_norm_ball_projection(p):
    rng = np.random.RandomState(5)
    ball = NormBall(p, 1.5)
    Z = _in_ball(rng, 1000, 7, p, 1.5)
    for _ in range(10):
        w = rng.randn(7) * 3
        v = ball.project(w)
        assert ball.contains(v)
        _assert_minimises_over(v - w, v, Z, np.linalg.norm(w))
        np.testing.assert_allclose(ball.project(v), v, rtol=1e-12, atol=1e-15)


def test_norm_ball_constants_and_validation():
    ball = NormBall(1.5, 2.0)
    assert ball.q == pytest.approx(3.0) and NormBall(1.0, 1.0).q == math.inf and NormBall(2.0, 1.0).q == 2.0
    assert ball.diameter == 4.0
    g = np.random.RandomState(6).randn(5)
    assert ball.dual_norm(g) == pytest.approx(np.linalg.norm(g, ord=3), rel=1e-12)
    # Hoelder: <g, w> <= ||g||_q ||w||_p, so the dual norm is the right one for the ball
    w = _in_ball(np.random.RandomState(7), 200, 5, 1.5, 2.0)
    assert np.max(w @ g) <= 2.0 * ball.dual_norm(g) * (1 + 1e-12)
    assert ball.contains(np.array([2.0, 0.0])) and not ball.contains(np.array([2.0, 0.1]))
    with pytest.raises(NotImplementedError):
        ball.project(g)
    for bad_p in (0.5, 2.5):
        with pytest.raises(ValueError, match="p must"):
            NormBall(bad_p, 1.0)
    for bad_r in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="radius"):
            NormBall(1.0, bad_r)


# ------------------------------------------------------------------------------------------
# hard thresholding
# ------------------------------------------------------------------------------------------
def test_hard_threshold_ties_free_and_size():
    v = np.array([1.0, -3.0, 3.0, 0.5, 2.0, 9.0])
    out = hard_threshold(v, 2, free=5)
    assert np.array_equal(out, [0, -3.0, 3.0, 0, 0, 9.0])  # tie between |-3| and 3 -> lower index first
    assert np.count_nonzero(hard_threshold(v, 3)) == 3
    assert np.array_equal(hard_threshold(v, 10), v)
    assert v[0] == 1.0  # input untouched


def test_hard_threshold_keeps_the_largest_entries_and_the_free_ones():
    rng = np.random.RandomState(8)
    for s in (0, 1, 4, 9):
        v = rng.randn(12)
        free = [11]
        out = hard_threshold(v, s, free=free)
        kept = np.flatnonzero(out[:11])
        assert kept.size == min(s, 11)
        np.testing.assert_array_equal(out[kept], v[kept])  # kept entries are not shrunk
        assert out[11] == v[11]  # the free coordinate never competes and is always kept
        dropped = np.setdiff1d(np.arange(11), kept)
        if kept.size and dropped.size:
            assert np.abs(v[kept]).min() >= np.abs(v[dropped]).max()
        assert out is not v
