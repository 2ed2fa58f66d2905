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
