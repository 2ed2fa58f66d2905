"""Floating-point-safe noise for every mechanism: the discrete Laplace release, the exact exponential
mechanism, and the ``secure_noise`` option of the solvers (or its refusal)."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from skdp.privacy import BoundedRangeEvent, PureDPEvent, gumbel_scale
from skdp.privacy.discrete import (
    exponential_mechanism,
    secure_l1_grid,
    secure_laplace_release,
    secure_selection_grid,
)
from skdp.privacy.mechanisms import record_draws


# ------------------------------------------------------------------------------------------
# the discrete Laplace (geometric) release
# ------------------------------------------------------------------------------------------
def test_secure_laplace_release_grid_and_noise_scale():
    rng = np.random.RandomState(0)
    value = np.array([0.123456789, -2.5, 7.0])
    sens, eps = 0.3, 0.5
    with record_draws() as draws:
        out, event, scale, gamma = secure_laplace_release(rng, value, sens, eps)
    assert event == PureDPEvent(eps)
    # the grid: the largest power of two with gamma d <= sens / 1000
    assert math.log2(gamma) == int(math.log2(gamma)) and gamma * 3 <= sens / 1000 < 2 * gamma * 3
    np.testing.assert_array_equal(out / gamma, np.rint(out / gamma))
    # the scale carries the rounding's L1 cost gamma d
    assert scale == pytest.approx((sens + 3 * gamma) / eps, rel=1e-12)
    assert [d.kind for d in draws] == ["discrete_laplace"] and draws[0].scale == pytest.approx(scale, rel=1e-8)
    # the noise drawn: discrete Laplace with P(y) ~ a^|y|, a = exp(-gamma / scale): std sqrt(2a) / (1 - a)
    noise = np.concatenate([secure_laplace_release(rng, np.zeros(400), 1.0, 2.0)[0] for _ in range(10)])
    g = secure_l1_grid(1.0, 400)
    a = math.exp(-g / ((1.0 + 400 * g) / 2.0))
    assert np.std(noise) == pytest.approx(math.sqrt(2 * a) / (1 - a) * g, rel=0.03)
    with pytest.raises(ValueError, match="epsilon"):
        secure_laplace_release(rng, value, sens, 0.0)
    with pytest.raises(ValueError, match="finite"):
        secure_laplace_release(rng, np.array([np.inf]), sens, 1.0)


def _laplace_log_ratio(rng, n=3000):
    """log P(out <= q(D)) / P(out <= q(D')) for neighbours with |q(D) - q(D')| = sensitivity = 1, eps = 1."""
    a = np.array([secure_laplace_release(rng, [0.3], 1.0, 1.0)[0][0] for _ in range(n)])
    b = np.array([secure_laplace_release(rng, [1.3], 1.0, 1.0)[0][0] for _ in range(n)])
    pa, pb = np.mean(a <= 0.3), np.mean(b <= 0.3)
    se = math.sqrt((1 - pa) / (pa * n) + (1 - pb) / (pb * n))
    return math.log(pa / pb), se


def test_secure_laplace_neighbours_within_epsilon_and_under_noise_caught(under_noise):
    """The set {out <= q(D)} attains the Laplace ratio e^eps; a quarter of the noise shows about 4 eps."""
    rng = np.random.RandomState(1)
    ratio, se = _laplace_log_ratio(rng)
    assert ratio <= 1.0 + 4 * se
    assert ratio > 1.0 - 4 * se  # the bound is attained: the test has power at the claim itself
    with under_noise(0.25):
        ratio_low, se_low = _laplace_log_ratio(rng)
    assert ratio_low > 1.0 + 4 * se_low


# ------------------------------------------------------------------------------------------
# the exact exponential mechanism
# ------------------------------------------------------------------------------------------
def test_exponential_mechanism_law():
    """Selection frequencies against the exact law exp(round(score) / scale), computed independently."""
    rng = np.random.RandomState(2)
    scores = np.array([0.0, 0.3, -0.7, 1.2, -np.inf, 1.2])
    grid, scale = 2.0**-10, 0.5
    n = 6000
    with record_draws() as draws:
        picks = np.array([exponential_mechanism(rng, scores, scale, grid) for _ in range(n)])
    assert [d.kind for d in draws] == ["exponential"] * n and draws[0].scale == scale
    assert not np.any(picks == 4)  # -inf is never chosen
    live = [0, 1, 2, 3, 5]
    w = np.exp(np.rint(scores[live] / grid) * grid / scale)
    obs = np.array([np.sum(picks == i) for i in live])
    assert stats.chisquare(obs, w / w.sum() * n).pvalue > 1e-3
    with pytest.raises(ValueError, match="finite"):
        exponential_mechanism(rng, [np.nan, 1.0], scale, grid)
    with pytest.raises(ValueError, match="at least one"):
        exponential_mechanism(rng, [-np.inf], scale, grid)


def _selection_br(rng, n=3000):
    """Empirical bounded-range epsilon of one selection between neighbouring score vectors (claim eps = 1)."""
    sens = 1.0
    grid = secure_selection_grid(sens)
    scale = gumbel_scale(sens + grid, 1.0)
    q = np.zeros(10)
    q2 = np.full(10, -sens)
    q2[0] = sens  # every score moves by at most sens
    a = np.array([exponential_mechanism(rng, q, scale, grid) for _ in range(n)])
    b = np.array([exponential_mechanism(rng, q2, scale, grid) for _ in range(n)])
    p = [np.mean(a == 0), np.mean(a == 1), np.mean(b == 0), np.mean(b == 1)]
    se = math.sqrt(sum((1 - x) / (x * n) for x in p))
    return math.log(p[2] / p[0]) - math.log(p[3] / p[1]), se


def test_exponential_mechanism_neighbours_within_claim_and_under_noise_caught(under_noise):
    rng = np.random.RandomState(3)
    br, se = _selection_br(rng)
    assert br <= 1.0 + 4 * se and br > 1.0 - 4 * se  # attained, never exceeded
    with under_noise(0.25):
        br_low, se_low = _selection_br(rng)
    assert br_low > 1.0 + 4 * se_low
