"""Noise samplers: moments and reproducibility (privacy_core.md V6, seed002 hook 5)."""

import numpy as np
import pytest

from skdp.privacy import gaussian_noise, l2_laplace_noise


def test_l2_laplace_moments_v6():
    rng = np.random.RandomState(0)
    d, sens, eps = 31, 2.0, 1.0
    draws = np.array([l2_laplace_noise(rng, sens / eps, d) for _ in range(20000)])
    norms = np.linalg.norm(draws, axis=1)
    assert norms.mean() == pytest.approx(d * sens / eps, rel=0.02)  # 62
    assert (norms**2).mean() == pytest.approx(d * (d + 1) * (sens / eps) ** 2, rel=0.02)  # 3968
    assert draws.var(axis=0).mean() == pytest.approx((d + 1) * (sens / eps) ** 2, rel=0.03)  # 128
    assert np.abs(draws.mean(axis=0)).max() < 0.5  # isotropic, centred


def test_gaussian_std_and_reproducibility():
    a = gaussian_noise(np.random.RandomState(1), 3.0, 200000)
    assert a.std() == pytest.approx(3.0, rel=0.01)
    np.testing.assert_array_equal(a, gaussian_noise(np.random.RandomState(1), 3.0, 200000))
    assert gaussian_noise(np.random.RandomState(1), 1.0, (2, 3)).shape == (2, 3)


def test_poisson_sample_has_independent_inclusions():
    from skdp.solvers.gradient import poisson_sample

    rng = np.random.RandomState(0)
    n, q, reps = 40, 0.15, 20000
    counts = np.zeros(n)
    sizes = np.empty(reps)
    for r in range(reps):
        idx = poisson_sample(rng, n, q)
        assert np.all(np.diff(idx) > 0) and (idx.size == 0 or (idx[0] >= 0 and idx[-1] < n))
        counts[idx] += 1
        sizes[r] = idx.size
    # each row included with probability q; batch size Binomial(n, q)
    assert np.abs(counts / reps - q).max() < 5 * np.sqrt(q * (1 - q) / reps)
    assert sizes.mean() == pytest.approx(n * q, rel=0.02)
    assert sizes.var() == pytest.approx(n * q * (1 - q), rel=0.05)
    np.testing.assert_array_equal(poisson_sample(rng, 7, 1.0), np.arange(7))


@pytest.mark.parametrize("q", [1e-4, 0.0112, 0.2, 0.34, 0.9])
def test_poisson_sample_draws_the_geometric_gaps_of_rng_geometric(q):
    """The sampler's gaps are numpy's own ``RandomState.geometric(q)`` draws (inversion for q < 1/3, same stream)."""
    from skdp.solvers.gradient import poisson_sample

    n = 5000
    a, b = np.random.RandomState(3), np.random.RandomState(3)
    for _ in range(5):
        got = poisson_sample(a, n, q)
        rows, pos = [], -1
        while True:  # the gap-by-gap definition, from numpy's geometric sampler
            k = max(16, int(1.2 * q * (n - pos)) + 16)
            idx = pos + np.cumsum(b.geometric(q, size=k))
            rows.append(idx[idx < n])
            if idx[-1] >= n:
                break
            pos = int(idx[-1])
        np.testing.assert_array_equal(got, np.concatenate(rows))
    assert a.random_sample() == b.random_sample()  # the generator advanced by the same draws
