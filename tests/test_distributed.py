"""Multi-party private ERM (seed 004, chapter 6): secret sharing, secure aggregation, both mechanisms."""

import math
import warnings

import numpy as np
import pytest
from scipy.stats import chisquare
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp.audit import audit
from skdp.distributed import (
    FixedPointRing,
    MultiPartyDPLogisticRegression,
    SecureAggregator,
    reconstruct,
    secret_share,
    split_parties,
)
from skdp.privacy import price
from skdp.privacy.mechanisms import scaled_noise


# ------------------------------------------------------------------------------------------
# ring and shares
# ------------------------------------------------------------------------------------------
def test_fixed_point_roundtrip_and_overflow_guard():
    ring = FixedPointRing(32)
    x = np.array([0.0, 1.5, -2.25, 1e-9, -123456.789])
    np.testing.assert_allclose(ring.decode(ring.encode(x)), x, atol=2.0**-33)
    with pytest.raises(ValueError, match="ring"):
        ring.encode(np.array([2.0**40]))
    with pytest.raises(ValueError, match="ring"):
        ring.encode(np.array([np.nan]))
    with pytest.raises(ValueError, match="frac_bits"):
        FixedPointRing(70)


def test_shares_reconstruct_exactly_and_sum_homomorphically():
    ring = FixedPointRing(24)
    rng = np.random.RandomState(0)
    a, b = rng.randn(50), rng.randn(50)
    sa, sb = secret_share(rng, ring.encode(a), 5), secret_share(rng, ring.encode(b), 5)
    np.testing.assert_array_equal(reconstruct(sa), ring.encode(a))
    summed = reconstruct([x + y for x, y in zip(sa, sb)])  # each holder adds its two shares
    np.testing.assert_allclose(ring.decode(summed), a + b, atol=2.0**-23)


def test_a_share_reveals_nothing():
    """Any single share is uniform on the ring whatever the secret: the top 4 bits are uniform and the
    same for two very different secrets."""
    ring = FixedPointRing(32)
    rng = np.random.RandomState(1)
    tops = []
    for secret in (0.0, 1000.0):
        s = np.array([secret_share(rng, ring.encode(np.array([secret])), 3)[0][0] for _ in range(8000)])
        top = (s >> np.uint64(60)).astype(int)
        counts = np.bincount(top, minlength=16)
        assert chisquare(counts).pvalue > 1e-3
        tops.append(counts)
    assert chisquare(tops[0], tops[1] * tops[0].sum() / tops[1].sum()).pvalue > 1e-3


def test_aggregator_reveals_the_noisy_average_only():
    ring = FixedPointRing(32)
    rng = np.random.RandomState(2)
    vectors = [rng.randn(4) for _ in range(3)]
    shares = [secret_share(rng, ring.encode(v), 3) for v in vectors]
    agg = SecureAggregator(ring, [11, 22, 33])
    out = agg.noisy_average(shares, lambda r, shape: np.zeros(shape))
    np.testing.assert_allclose(out, np.mean(vectors, axis=0), atol=1e-9)
    # the noise generator is seeded by the XOR of every party's contribution
    a = SecureAggregator(ring, [11, 22, 33]).noisy_average(shares, lambda r, shape: r.normal(size=shape))
    b = SecureAggregator(ring, [11 ^ 5, 22 ^ 5, 33]).noisy_average(shares, lambda r, shape: r.normal(size=shape))
    np.testing.assert_allclose(a, b)
    assert agg.n_rounds == 1


def test_split_parties():
    blocks = split_parties(10, n_parties=3)
    assert [b.size for b in blocks] == [4, 3, 3] and np.array_equal(np.concatenate(blocks), np.arange(10))
    blocks = split_parties(6, parties=["b", "a", "b", "a", "a", "c"])
    assert [b.tolist() for b in blocks] == [[1, 3, 4], [0, 2], [5]]
    with pytest.raises(ValueError, match="parties"):
        split_parties(5, parties=[0, 1])
    with pytest.raises(ValueError, match="n_parties"):
        split_parties(5, n_parties=6)


# ------------------------------------------------------------------------------------------
# calibration: the card's worked numbers
# ------------------------------------------------------------------------------------------
def test_grad_pert_sigma_card_h4():
    # G = 1 (data_norm 2), T = 1500, m n_min = 50000, eps = 0.5, delta = 1e-3: exact GDP sigma = 7.142e-3
    est = MultiPartyDPLogisticRegression(0.5, 1e-3, data_norm=2.0, max_iter=1500)
    sens, sigma, events, T = est._calibration(np.full(100, 500), d=3)
    assert T == 1500 and sens == pytest.approx(2 / 50000, rel=1e-6)
    assert sigma == pytest.approx(7.142e-3, rel=1e-3)
    assert price(events, 1e-3).budget.epsilon <= 0.5 + 1e-9


def test_output_pert_scale_card_table_6_1():
    # m = 100, n_min = 500, lambda = 0.01, eps = 0.5, G = 1: L2-Laplace scale 2G/(m n lambda eps) = 8.00e-3
    est = MultiPartyDPLogisticRegression(0.5, 0.0, mechanism="mpc_output_pert", alpha=0.01, data_norm=1.0)
    sens, scale, events, _ = est._calibration(np.full(100, 500), d=5)
    assert scale == pytest.approx(8.00e-3, rel=1e-4)
    assert price(events, 0.0).budget.epsilon == pytest.approx(0.5)


def test_bad_settings_refused():
    X, y = np.random.RandomState(0).uniform(-1, 1, (40, 2)), np.arange(40) % 2
    with pytest.raises(ValueError, match="delta > 0"):
        MultiPartyDPLogisticRegression(delta=0.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="alpha > 0"):
        MultiPartyDPLogisticRegression(mechanism="mpc_output_pert", alpha=0.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="binary"):
        MultiPartyDPLogisticRegression(classes=[0, 1, 2]).fit(X, y % 3)
    with pytest.raises(ValueError, match="frac_bits"):  # 2 parties x (1 / 1e-9) does not fit 2^(62-40)
        MultiPartyDPLogisticRegression(mechanism="mpc_output_pert", alpha=1e-9, frac_bits=40,
                                       classes=[0, 1]).fit(X, y)


# ------------------------------------------------------------------------------------------
# behaviour
# ------------------------------------------------------------------------------------------
def _data(n=4000, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, 4)) / 2
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.2 * rng.randn(n) > 0).astype(int)
    return X, y


def test_grad_pert_without_noise_is_pooled_gradient_descent():
    X, y = _data(1200)
    with scaled_noise(1e-12):
        mp = MultiPartyDPLogisticRegression(1.0, n_parties=6, classes=[0, 1], fit_intercept=False,
                                            max_iter=25, random_state=0).fit(X, y)
    ys, w = 2 * y - 1, np.zeros(4)
    norms = np.linalg.norm(X, axis=1)
    for _ in range(25):
        S = -ys / (1 + np.exp(ys * (X @ w)))
        S = S * np.minimum(1.0, 0.5 / np.maximum(np.abs(S) * norms, 1e-300))
        w = w - 1.9 / (0.25 + 1e-3) * (X.T @ S / 1200 + 1e-3 * w)
    np.testing.assert_allclose(mp.coef_[0], w, atol=1e-7)


@pytest.mark.parametrize("mechanism", ["mpc_grad_pert", "mpc_output_pert"])
def test_ten_parties_close_to_pooled(mechanism):
    """Chapter 6: with 10 parties at eps = 0.5 both mechanisms stay within 2 accuracy points of the
    single-party (pooled) fit with the same mechanism (mean of 5 seeds)."""
    X, y = _data(6000)
    Xt, yt = _data(4000, seed=1)
    acc = {}
    for m in (1, 10):
        acc[m] = np.mean([MultiPartyDPLogisticRegression(0.5, mechanism=mechanism, n_parties=m, alpha=1e-2,
                                                         classes=[0, 1], random_state=s).fit(X, y).score(Xt, yt)
                          for s in range(5)])
    assert acc[10] >= acc[1] - 0.02, acc
    assert acc[1] > 0.8


def test_parties_argument_and_privacy_report():
    X, y = _data(900)
    labels = np.repeat([0, 1, 2], 300)
    est = MultiPartyDPLogisticRegression(1.0, classes=[0, 1], random_state=0).fit(X, y, parties=labels)
    assert est.n_parties_ == 3 and est.party_sizes_.tolist() == [300, 300, 300]
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        leaked = MultiPartyDPLogisticRegression(1.0, random_state=0).fit(X, y)
    assert math.isinf(leaked.privacy_spent_.epsilon)


def test_audit_of_the_multi_party_fit():
    est = MultiPartyDPLogisticRegression(2.0, n_parties=4, classes=[0, 1], fit_intercept=False, max_iter=3,
                                         data_norm=1.0)
    X0, y0 = np.zeros((40, 2)), np.arange(40) % 2
    assert audit(est, X0, y0, n_fits=200, canary_norm=1.0).passed
    control = audit(est, X0, y0, n_fits=400, canary_norm=1.0, noise_multiplier=0.25)
    assert control.mu_lower_bound > control.claimed_mu, control


@parametrize_with_checks([MultiPartyDPLogisticRegression(random_state=0),
                          MultiPartyDPLogisticRegression(mechanism="mpc_output_pert", random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
