"""The fast accountant path equals the reference computation (issue 19: planning time).

Pricing a Poisson-subsampled event used to run the reference quadrature at every order of the grid
at every step of a bisection. Now a shared-grid curve picks the candidate orders and the root, and
the reported epsilon is the reference quadrature at the candidates. These tests compare with the
old computation, re-implemented here from the reference pieces (no timing assertions; see
``benchmarks/bench_accounting.py`` for times).
"""

import itertools
import math

import numpy as np
import pytest

from skdp.privacy import BoundedRangeEvent, GaussianEvent, PoissonGaussianEvent, calibrate, price
from skdp.privacy.accounting import (
    _SAMPLED_ORDERS,
    _poisson_rdp_fast,
    _poisson_rdp_one,
    rdp_poisson_gaussian,
    rdp_poisson_gaussian_add_remove_integer,
    rdp_to_epsilon,
)


def reference_epsilon(q, z, count, delta, relation):
    """The accountant before the change: reference quadrature at every order, grid edges extended."""
    orders = _SAMPLED_ORDERS

    def curve(o):
        return rdp_poisson_gaussian(o, q, z, count, relation)

    eps, order = rdp_to_epsilon(orders, curve(orders), delta)
    while order == orders[-1] and orders[-1] < 2**12 and math.isfinite(eps):
        orders = np.array([orders[-1] * 1.5, orders[-1] * 2.0])
        e2, o2 = rdp_to_epsilon(orders, curve(orders), delta)
        if e2 < eps:
            eps, order = e2, o2
        else:
            break
    if order == 1.1:
        low = np.array([1.02, 1.03, 1.05, 1.075])
        e2, o2 = rdp_to_epsilon(low, curve(low), delta)
        eps = min(eps, e2)
    return max(eps, 0.0)


def reference_bisection(make_events, epsilon, delta, rtol):
    """The old calibration: bisection in log p, returning the private end of the bracket."""
    def e(p):
        return price(make_events(p), delta).budget.epsilon

    hi = 1.0
    while e(hi) > epsilon:
        hi *= 4.0
    lo = hi / 4.0
    while e(lo) <= epsilon:
        hi, lo = lo, lo / 4.0
    while hi / lo - 1 > rtol:
        mid = math.sqrt(lo * hi)
        if e(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi


GRID = list(itertools.product(
    [1e-5, 1e-3, 0.02, 0.3, 1.0],          # q, with the edges q = 1 and tiny q
    [0.3, 0.7, 1.5, 4.0, 20.0],            # z, small to large
    [1, 300, 10_000],                      # count
    [1e-9, 1e-5, 1e-2],                    # delta
))


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_price_equals_reference_on_a_grid(relation):
    for q, z, count, delta in GRID:
        got = price([PoissonGaussianEvent(q, z, count)], delta, relation).budget.epsilon
        ref = reference_epsilon(q, z, count, delta, relation)
        # a minimum over a subset of the reference's own per-order values: never below it
        assert got >= ref, (q, z, count, delta, got, ref)
        if ref > 0:
            assert got <= ref * (1 + 1e-9), (q, z, count, delta, got, ref)
        else:  # the epsilon = 0 shortcut is kept wherever it survives the quadrature's round-off
            assert got <= 1e-2, (q, z, count, delta, got)


def test_fast_curve_matches_reference_quadrature():
    orders = tuple(float(a) for a in _SAMPLED_ORDERS) + (384.0, 1024.0, 1.02)
    for z, q, relation in itertools.product([0.25, 0.8, 2.0, 9.0], [1e-4, 0.05, 0.6, 1.0],
                                            ["replace_one", "add_remove"]):
        a = np.array(orders)
        fast = _poisson_rdp_fast(orders, q, z, relation) * (a - 1)
        ref = np.array([_poisson_rdp_one(o, q, z, relation) for o in orders]) * (a - 1)
        ok = np.isfinite(ref)
        # log A_alpha to 1e-12 relative (and ~1e-14 absolute near 0, the round-off of either grid)
        np.testing.assert_allclose(fast[ok], ref[ok], rtol=1e-11, atol=1e-13, err_msg=f"{z, q, relation}")


def test_fast_curve_integer_orders_match_the_closed_form():
    for q, z, alpha in itertools.product([1e-3, 0.1, 0.7], [0.5, 1.0, 3.0], [2, 5, 16]):
        fast = _poisson_rdp_fast((float(alpha),), q, z, "add_remove")[0]
        assert fast == pytest.approx(rdp_poisson_gaussian_add_remove_integer(alpha, q, z), rel=1e-9, abs=1e-15)


def test_price_of_mixtures_equals_reference():
    from skdp.privacy.accounting import _rdp_curve  # the reference curve (every order, reference quadrature)

    events = [PoissonGaussianEvent(0.02, 1.3, 500), GaussianEvent(0.01, 0.5, 10), BoundedRangeEvent(0.1, 3)]
    for delta in (1e-5, 1e-8):
        ref, _ = rdp_to_epsilon(_SAMPLED_ORDERS, _rdp_curve(events, _SAMPLED_ORDERS, "replace_one"), delta)
        assert price(events, delta).budget.epsilon == ref


def test_zero_epsilon_is_not_decided_by_round_off():
    # q = 1e-5, z = 100 (add/remove): r(alpha) ~ alpha q^2 (e^(1/z^2) - 1) / 2 (r(1.1) ~ 5.5e-15, r(2) =
    # 1e-14 exactly) is far above delta^2 = 1e-18, so the CKS20 epsilon = 0 condition fails at every
    # order; the reference quadrature rounds r(1.1) to 0, and the old accountant reported epsilon = 0.
    q, z = 1e-5, 100.0
    assert math.log1p(q * q * math.expm1(1 / z**2)) > 1e-18  # exact r(2) (MTZ19 closed form)
    assert price([PoissonGaussianEvent(q, z, 1)], 1e-9, "add_remove").budget.epsilon > 0
    # ... while a truly tiny total still prices at exactly 0 (r(1.1) * 100 = 5e-11 < delta^2 = 1e-10)
    assert price([PoissonGaussianEvent(1e-5, 20.0, 100)], 1e-5).budget.epsilon == 0.0


@pytest.mark.parametrize("q, T, eps, delta", [
    (0.02, 500, 1.0, 1e-5), (1e-3, 3000, 0.1, 1e-8), (1.0, 50, 8.0, 1e-5), (0.3, 1, 1.0, 1e-6),
    (0.0227, 375, 0.76, 1e-5),
])
def test_calibration_returns_the_smallest_multiplier(q, T, eps, delta):
    def make(z):
        return [PoissonGaussianEvent(q, z, T)]

    z, rep = calibrate(make, eps, delta, rtol=1e-5)
    assert rep.budget.epsilon <= eps
    assert rep == price(make(z), delta)
    assert price(make(z * (1 - 1e-6)), delta).budget.epsilon > eps
    # the old bisection returns a point of its final bracket, above the root by at most rtol
    old = reference_bisection(make, eps, delta, rtol=1e-6)
    assert z <= old <= z * (1 + 1e-6)


def test_calibration_of_mixed_and_bounded_range_events():
    def make(s):
        return [GaussianEvent(2.0 / 3000, 0.5**0.5 * s, 165), PoissonGaussianEvent(0.0183, 0.5**0.5 * s * 55 / 2, 165)]

    s, rep = calibrate(make, 0.8, 1e-5, rtol=1e-3)
    assert rep.budget.epsilon <= 0.8 < price(make(s * (1 - 1e-6)), 1e-5).budget.epsilon
    beta, rep = calibrate(lambda b: [BoundedRangeEvent(2 / b, 100)], 1.0, 1e-5)
    assert rep.budget.epsilon <= 1.0 < price([BoundedRangeEvent(2 / (beta * (1 - 1e-6)), 100)], 1e-5).budget.epsilon
