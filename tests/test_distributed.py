"""Multi-party private ERM (seed 004, chapter 6): secret sharing, secure aggregation, both mechanisms."""

import math
import pickle
import warnings

import numpy as np
import pytest
from scipy.stats import chisquare
from sklearn.utils.estimator_checks import parametrize_with_checks

import skdp._fit as fit_protocol
import skdp.distributed._estimators as mp_estimators
from skdp import fit_diagnostics
from skdp.exceptions import PrivacyLeakWarning
from skdp.audit import audit
from skdp.distributed import (
    FixedPointRing,
    MultiPartyDPLogisticRegression,
    SecureAggregator,
    reconstruct,
    secret_share,
    split_parties,
)
from skdp.distributed._mpc import party_seed
from skdp.privacy import price
from skdp.privacy.mechanisms import scaled_noise

from ._helpers import WEIGHT_EQUIVALENCE_CHECKS


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
    # 128-bit contributions: bits above 32 matter (the old code masked every seed to 32 bits)
    c = SecureAggregator(ring, [11 + (1 << 100), 22, 33]).noisy_average(shares, lambda r, shape: r.normal(size=shape))
    assert not np.allclose(a, c)
    # a SeedSequence contributes 128 bits of its output
    seq = np.random.SeedSequence(123)
    assert party_seed(seq) == party_seed(np.random.SeedSequence(123)) and 96 <= party_seed(seq).bit_length() <= 128
    assert party_seed((1 << 130) + 5) == 5
    with pytest.raises(ValueError, match="non-negative"):
        SecureAggregator(ring, [-1, 2])
    with pytest.raises(TypeError, match="party seed"):
        SecureAggregator(ring, [1.5, 2])


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
    est = MultiPartyDPLogisticRegression(0.5, 1e-3, data_norm=2.0, max_iter=1500, classes=[0, 1])
    sens, sigma, events, T = est._calibration(np.full(100, 500), d=3)
    assert T == 1500 and sens == pytest.approx(2 / 50000, rel=1e-6)
    assert sigma == pytest.approx(7.142e-3, rel=1e-3)
    assert price(events, 1e-3).budget.epsilon <= 0.5 + 1e-9


def test_output_pert_scale_card_table_6_1():
    # m = 100, n_min = 500, lambda = 0.01, eps = 0.5, G = 1: L2-Laplace scale 2G/(m n lambda eps) = 8.00e-3
    est = MultiPartyDPLogisticRegression(0.5, 0.0, solver="mpc_output_pert", alpha=0.01, data_norm=1.0,
                                         classes=[0, 1])
    sens, scale, events, _ = est._calibration(np.full(100, 500), d=5)
    assert scale == pytest.approx(8.00e-3, rel=1e-4)
    assert price(events, 0.0).budget.epsilon == pytest.approx(0.5)


@pytest.mark.parametrize("solver", ["mpc_grad_pert", "mpc_output_pert"])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_classes_auto_spends_the_whole_budget_and_never_more(solver, epsilon):
    """Before: the solver got the basic-composition split after the label-set selection, so a fit at
    epsilon=1 spent 0.72 (more noise than the budget asked for). Now the accountant prices selection and
    solver together at epsilon, as the dense models' planner does, for two classes and for one-vs-rest."""
    est = MultiPartyDPLogisticRegression(epsilon, 1e-5, solver=solver, classes="auto")
    for n_classes in (2, 3):
        events = est._calibration(np.full(4, 250), d=3, n_classes=n_classes)[2]
        spent = price(events, 1e-5).budget.epsilon
        assert epsilon * (1 - 1e-3) <= spent <= epsilon * (1 + 1e-12), (n_classes, spent)
    X, y = _data(1000)
    fitted = MultiPartyDPLogisticRegression(epsilon, 1e-5, solver=solver, classes="auto").fit(X, y)
    assert epsilon * (1 - 1e-3) <= fitted.privacy_spent_.epsilon <= epsilon * (1 + 1e-12)


def test_bad_settings_refused():
    X, y = np.random.RandomState(0).uniform(-1, 1, (40, 2)), np.arange(40) % 2
    with pytest.raises(ValueError, match="delta > 0"):
        MultiPartyDPLogisticRegression(delta=0.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="alpha > 0"):
        MultiPartyDPLogisticRegression(solver="mpc_output_pert", alpha=0.0, classes=[0, 1]).fit(X, y)
    # more than two classes: one-vs-rest (tests/test_ovr.py), no longer refused
    assert MultiPartyDPLogisticRegression(classes=[0, 1, 2], random_state=0).fit(X, y % 3).coef_.shape == (3, 2)
    with pytest.raises(ValueError, match="frac_bits"):  # 2 parties x (1 / 1e-9) does not fit 2^(62-40)
        MultiPartyDPLogisticRegression(solver="mpc_output_pert", alpha=1e-9, frac_bits=40,
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
        acc[m] = np.mean([MultiPartyDPLogisticRegression(0.5, solver=mechanism, n_parties=m, alpha=1e-2,
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
        leaked = MultiPartyDPLogisticRegression(1.0, classes=None, random_state=0).fit(X, y)
    assert math.isinf(leaked.privacy_spent_.epsilon)


def test_audit_of_the_multi_party_fit():
    est = MultiPartyDPLogisticRegression(2.0, n_parties=4, classes=[0, 1], fit_intercept=False, max_iter=3,
                                         data_norm=1.0)
    X0, y0 = np.zeros((40, 2)), np.arange(40) % 2
    assert audit(est, X0, y0, n_fits=200, canary_norm=1.0).passed
    control = audit(est, X0, y0, n_fits=400, canary_norm=1.0, noise_multiplier=0.25)
    assert control.mu_lower_bound > control.claimed_mu, control


def _expected_failed(estimator):
    if estimator.solver != "mpc_output_pert":
        return dict(WEIGHT_EQUIVALENCE_CHECKS)
    return {**WEIGHT_EQUIVALENCE_CHECKS, "check_classifiers_train": "predict_log_proba is the stable log-sigmoid (finite for every score); the "
            "check compares it with np.log(predict_proba), which is -inf where output perturbation's scores "
            "(~1e3 on the check's unscaled rows) underflow the probability to 0"}


# sklearn's checks fit 3-100 rows per label, which no (1, 1e-5)-DP label selection can keep reliably
# (see test_common.py): the solvers are checked with the label set read from the data, and the
# default private selection (classes="auto") at epsilon=1000, where a label needs about one row.
@parametrize_with_checks([MultiPartyDPLogisticRegression(classes=None, random_state=0),
                          MultiPartyDPLogisticRegression(solver="mpc_output_pert", classes=None, random_state=0),
                          MultiPartyDPLogisticRegression(epsilon=1000.0, random_state=0)],
                         expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check):
    if estimator.classes is None:  # the label set read from the data on purpose (see above): only that leak
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="classes was not given", category=PrivacyLeakWarning)
            check(estimator)
    else:
        check(estimator)


# ------------------------------------------------------------------------------------------
# randomness as attacks: the noise cannot be enumerated, repeated or regenerated
# ------------------------------------------------------------------------------------------
def _legacy_32bit_seeded(key):
    """Whether an MT19937 key is the state ``RandomState(s)`` gets from an integer ``s < 2^32`` (Knuth's
    ``init_genrand``: ``key[0] = s``, ``key[i] = 1812433253 (key[i-1] ^ (key[i-1] >> 30)) + i mod 2^32``).
    Such a state is one of only ``2^32``, and ``key[0]`` gives its seed away."""
    key = np.asarray(key, dtype=np.uint64)
    expected = (np.uint64(1812433253) * (key[:-1] ^ (key[:-1] >> np.uint64(30)))
                + np.arange(1, key.size, dtype=np.uint64)) & np.uint64(0xFFFFFFFF)
    return bool(np.array_equal(expected, key[1:]))


def test_legacy_seed_detector_positive_control():
    for s in (0, 1, 12345, 2**31 - 2, 2**32 - 1):
        key = np.random.RandomState(s).get_state()[1]
        assert _legacy_32bit_seeded(key) and int(key[0]) == s
    assert not _legacy_32bit_seeded(np.random.RandomState(np.random.MT19937(0)).get_state()[1])


def _record_fit_randomness(monkeypatch):
    """Capture every seed and generator a fit derives (root, party seeds, share generators, noise)."""
    seen = {"root": [], "aggregators": [], "share_rngs": []}
    # the fit's one generator is made by the fit protocol (skdp._fit.private_fit), the rest by the estimator
    fit_randomness, seeded_generator = fit_protocol.fit_randomness, mp_estimators.seeded_generator

    def recording_fit_randomness(est):
        rng = fit_randomness(est)
        seen["root"].append((rng, rng.get_state()))
        return rng

    def recording_seeded_generator(seq):
        rng = seeded_generator(seq)
        seen["share_rngs"].append((seq, rng.get_state()))
        return rng

    class RecordingAggregator(SecureAggregator):
        def __init__(self, ring, party_seeds):
            super().__init__(ring, party_seeds)
            seen["aggregators"].append((list(party_seeds), getattr(self, "_noise_seed", None),
                                        self._noise_rng.get_state()))

    monkeypatch.setattr(fit_protocol, "fit_randomness", recording_fit_randomness)
    monkeypatch.setattr(mp_estimators, "seeded_generator", recording_seeded_generator)
    monkeypatch.setattr(mp_estimators, "SecureAggregator", RecordingAggregator)
    return seen


def _entropy_bits(seq):
    """Bit length of a SeedSequence's entropy (an int, or a list of uint32 words, least significant first)."""
    e = seq.entropy
    if not isinstance(e, (int, np.integer)):
        e = sum(int(w) << (32 * i) for i, w in enumerate(np.atleast_1d(e)))
    return int(e).bit_length()


def test_attack_seed_space_is_at_least_128_bits(monkeypatch):
    """The old fit seeded the aggregate's noise with the XOR of 31-bit party seeds: at most 2^31 noise
    streams even with random_state=None, so enumerating them (~86 core-hours) gave back the exact noiseless
    aggregate. Against that code every assertion below fails: the party seeds had bit length <= 31 and the
    noise generator was ``RandomState(seed)``, whose state is the 32-bit-seeded family the detector
    recognises (and whose ``key[0]`` is the seed). Now every party contributes 128 bits, and every generator
    is seeded through ``SeedSequence`` with all of them."""
    seen = _record_fit_randomness(monkeypatch)
    X, y = _data(400)
    m, n_fits = 4, 5
    for _ in range(n_fits):
        MultiPartyDPLogisticRegression(1.0, n_parties=m, classes=[0, 1], max_iter=2).fit(X, y)
    assert len(seen["aggregators"]) == n_fits

    all_party_seeds = []
    for party_seeds, noise_seq, noise_state in seen["aggregators"]:
        assert len(party_seeds) == m
        # each party contributes a 128-bit seed (P(bit length < 96) = 2^-32 per seed); the old ones had <= 31
        party_seeds = [int(s) for s in party_seeds]
        assert all(0 <= s < 2**128 and s.bit_length() >= 96 for s in party_seeds)
        all_party_seeds += party_seeds
        # the noise generator is not reachable from any 32-bit seed (the old one was RandomState(seed)), in
        # particular not from the seeds an attacker derives from the old recipe (XOR of the low 31/32 bits)
        key = noise_state[1]
        assert not _legacy_32bit_seeded(key)
        # the noise seed is the parties' 128-bit XOR, fed whole to SeedSequence (no 32-bit mask anywhere)
        xor = 0
        for s in party_seeds:
            xor ^= s
        assert noise_seq.entropy == xor and xor.bit_length() >= 96
        candidates = {xor & 0xFFFFFFFF, xor & 0x7FFFFFFF} | {s & 0xFFFFFFFF for s in party_seeds}
        folded = 0
        for s in party_seeds:
            folded ^= s & 0xFFFFFFFF
        candidates.add(folded)
        for c in candidates:
            assert not np.array_equal(np.random.RandomState(c).get_state()[1], key)
    assert max(s.bit_length() for s in all_party_seeds) >= 124  # P(fail) = 2^-80
    assert len(set(all_party_seeds)) == len(all_party_seeds)

    # the per-party share generators: 128-bit SeedSequence entropy, no 32-bit-seeded state
    for seq, state in seen["share_rngs"]:
        assert isinstance(seq, np.random.SeedSequence) and _entropy_bits(seq) >= 96
        assert not _legacy_32bit_seeded(state[1])
    share_keys = {tuple(state[1][:4]) for _, state in seen["share_rngs"]}
    assert len(share_keys) == len(seen["share_rngs"]) == n_fits * m

    # the fit's own generator: fresh 128-bit OS entropy, not a 32-bit-seeded MT19937
    assert len(seen["root"]) == n_fits
    roots = [rng._bit_generator.seed_seq.entropy for rng, _ in seen["root"]]
    assert all(96 <= e.bit_length() <= 128 for e in roots) and len(set(roots)) == n_fits
    assert not any(_legacy_32bit_seeded(state[1]) for _, state in seen["root"])


def _wide_data(n=200, d=100, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)  # norm 0.5: nothing is clipped
    y = (X[:, 0] > 0).astype(int)
    return X, y


@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_attack_two_unseeded_fits_never_share_a_noise_stream(delta):
    """Output perturbation on few rows and many features: the release is noise-dominated, and the noise
    is exactly ``coef - (the same fit without noise)`` (the local solves are deterministic). Two
    random_state=None fits on the same data (even after seeding numpy's global generator identically) must
    draw unrelated noise; two fits with one int random_state must draw the same (positive control)."""
    X, y = _wide_data()
    kw = dict(solver="mpc_output_pert", alpha=0.1, n_parties=2, classes=[0, 1], fit_intercept=False)
    with scaled_noise(1e-12):
        clean = MultiPartyDPLogisticRegression(0.5, delta, **kw).fit(X, y).coef_[0]

    def noise_of(**extra):
        est = MultiPartyDPLogisticRegression(0.5, delta, **kw, **extra).fit(X, y)
        return est.coef_[0] - clean, est

    np.random.seed(0)
    a, est = noise_of()
    np.random.seed(0)
    b, _ = noise_of()
    # the recovered vectors really are the noise, and they dominate the release
    per_coord = est.noise_scale_ * (math.sqrt(X.shape[1] + 1) if delta == 0 else 1.0)
    for v in (a, b):
        assert 0.5 < np.std(v) / per_coord < 1.6
        assert np.linalg.norm(v) > 3 * np.linalg.norm(clean)
    # no shared stream: not one coordinate equal, correlation ~ N(0, 1/100)
    assert not np.any(np.isclose(a, b, rtol=0, atol=1e-12))
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.5  # 5 standard deviations
    # positive control: one int seed, one noise stream (bit-identical)
    c, _ = noise_of(random_state=7)
    d, _ = noise_of(random_state=7)
    np.testing.assert_array_equal(c, d)
    assert abs(np.corrcoef(a, c)[0, 1]) < 0.5


def test_noise_source_attribute():
    X, y = _data(300)
    kw = dict(n_parties=3, classes=[0, 1], max_iter=2)
    assert MultiPartyDPLogisticRegression(**kw).fit(X, y).noise_source_ == "os-entropy"
    a = MultiPartyDPLogisticRegression(random_state=5, **kw).fit(X, y)
    b = MultiPartyDPLogisticRegression(random_state=5, **kw).fit(X, y)
    c = MultiPartyDPLogisticRegression(random_state=6, **kw).fit(X, y)
    assert a.noise_source_.startswith("seed:") and a.noise_source_ == b.noise_source_ != c.noise_source_
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_rows_clipped_is_a_diagnostic_not_an_attribute():
    """The number of clipped rows is an exact statistic of the parties' data: the model (and its pickle)
    must not carry it; the data holders read it from fit_diagnostics in this process."""
    X, y = _wide_data(300, 4)
    X[::7] *= 4.0  # norm 2 > data_norm sqrt(3)/2 for the raw rows: clipped; the others (0.5) are not
    est = MultiPartyDPLogisticRegression(1.0, n_parties=3, classes=[0, 1], max_iter=2).fit(X, y)
    assert not hasattr(est, "n_rows_clipped_")
    assert fit_diagnostics(est) == {"n_rows_clipped": len(range(0, 300, 7))}
    loaded = pickle.loads(pickle.dumps(est))
    assert fit_diagnostics(loaded) == {} and "n_rows_clipped" not in pickle.dumps(est).decode("latin-1")
    # every fitted attribute is a public quantity or the noisy release
    public = {"classes_", "n_features_in_", "n_parties_", "party_sizes_", "backend_", "n_iter_", "noise_scale_",
              "privacy_events_", "privacy_spent_", "privacy_nominal_", "accountant_", "noise_source_",
              "multi_class_"}  # "binary" / "ovr": a function of the public class count
    fitted = {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
    assert fitted - public == {"coef_", "intercept_"}
    # a refit starts from a clean table
    est.fit(X[1::7], y[1::7])  # none of these rows was scaled up
    assert fit_diagnostics(est) == {"n_rows_clipped": 0}
