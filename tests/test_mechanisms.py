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


@pytest.mark.parametrize("q", [0.004, 0.15, 0.5, 1.0])
def test_poisson_batches_are_independent_poisson_samples(q, monkeypatch):
    """Chunked draws (several steps per call of the generator) have the law of one ``poisson_sample`` per step."""
    from skdp.solvers import gradient
    from skdp.solvers.gradient import poisson_batches

    monkeypatch.setattr(gradient, "POISSON_CHUNK_ROWS", 64)  # many chunks, and steps across chunk ends
    n, steps = 40, 6000
    batches = list(poisson_batches(np.random.RandomState(0), n, q, steps))
    assert len(batches) == steps
    counts, sizes = np.zeros(n), np.empty(steps)
    for t, idx in enumerate(batches):
        assert np.all(np.diff(idx) > 0) and (idx.size == 0 or (idx[0] >= 0 and idx[-1] < n))
        counts[idx] += 1
        sizes[t] = idx.size
    if q == 1.0:
        assert np.all(sizes == n)
        return
    sd = np.sqrt(q * (1 - q) / steps)
    assert np.abs(counts / steps - q).max() < 5 * sd
    assert sizes.mean() == pytest.approx(n * q, abs=5 * np.sqrt(n * q * (1 - q) / steps))
    assert sizes.var() == pytest.approx(n * q * (1 - q), rel=0.1)
    # consecutive steps are independent (across chunk ends too): no correlation of their sizes
    assert abs(np.corrcoef(sizes[:-1], sizes[1:])[0, 1]) < 5 / np.sqrt(steps)
    # one step in one chunk is poisson_sample itself (the same draws)
    from skdp.solvers.gradient import poisson_sample
    (one,) = poisson_batches(np.random.RandomState(5), n, q, 1)
    np.testing.assert_array_equal(one, poisson_sample(np.random.RandomState(5), n, q))


def test_gaussian_noise_steps_records_one_draw_per_step(monkeypatch):
    from skdp.privacy import mechanisms
    from skdp.privacy.mechanisms import gaussian_noise_steps, record_draws, scaled_noise

    monkeypatch.setattr(mechanisms, "NOISE_CHUNK", 20)  # several chunks of 4 steps
    with record_draws() as draws:
        noise = np.array(list(gaussian_noise_steps(np.random.RandomState(2), 3.0, 11, (5,))))
    assert noise.shape == (11, 5) and len(draws) == 11
    assert all(d.kind == "gaussian" and d.scale == 3.0 and d.size == 5 for d in draws)
    big = np.array(list(gaussian_noise_steps(np.random.RandomState(2), 3.0, 40000, 5)))
    assert big.std() == pytest.approx(3.0, rel=0.01) and abs(np.corrcoef(big[:-1, 0], big[1:, 0])[0, 1]) < 0.02
    with scaled_noise(0.5), record_draws() as draws:
        half = list(gaussian_noise_steps(np.random.RandomState(2), 3.0, 11, (5,)))
    assert [d.scale for d in draws] == [1.5] * 11
    np.testing.assert_allclose(np.array(half), noise / 2, rtol=1e-15)


def test_gaussian_noise_steps_take_each_release_scale_when_drawn(monkeypatch):
    from skdp.privacy import mechanisms
    from skdp.privacy.mechanisms import GaussianNoiseSteps, record_draws

    monkeypatch.setattr(mechanisms, "NOISE_CHUNK", 6)  # chunks of 2 steps of 3 coordinates
    stream = GaussianNoiseSteps(np.random.RandomState(1), 5, 3)
    with record_draws() as draws:
        got = [stream.draw(s) for s in (1.0, 2.0, 0.5, 4.0, 3.0)]
    assert [d.scale for d in draws] == [1.0, 2.0, 0.5, 4.0, 3.0] and all(d.size == 3 for d in draws)
    unit = np.random.RandomState(1).normal(0.0, 1.0, size=(6, 3))[:5]  # the chunks' standard normals, in order
    np.testing.assert_array_equal(np.array(got), unit * np.array([1.0, 2.0, 0.5, 4.0, 3.0])[:, None])
    with pytest.raises(RuntimeError):
        stream.draw(1.0)
