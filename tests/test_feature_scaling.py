"""``feature_scaling="auto"`` of DPLogisticRegression: private per-feature histograms, an affine map, raw-unit coef_.

Covers: the release is planned from public facts (same price at every width),
priced exactly with the rest of the fit (``privacy_spent_`` is the plan's
price, a ledger is charged the same), a black-box neighbouring-datasets test of
the histogram release with an under-noised positive control, coefficients in
the user's units, no change on already-standardised data, and the acceptance
on raw breast_cancer.
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, PrivacyLedger
from skdp._plan import PublicFit, make_plan
from skdp._predict import clip_to_box
from skdp._utils import width_free_events
from skdp._feature_scaling import feature_scaling_mu
from skdp.privacy import GaussianEvent, price
from skdp.privacy.quantile import SCALE_EDGES, feature_bin_counts, private_feature_histograms

from ._helpers import empirical_mu_lower_bound


def _raw_bc():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, random_state=0, test_size=0.25, stratify=y)


def test_accounting_exact_and_planned_events_released():
    Xtr, _, ytr, _ = _raw_bc()
    est = DPLogisticRegression(epsilon=1e4, delta=1e-5, classes=[0, 1], random_state=0)
    ledger = PrivacyLedger(epsilon=2e4, delta=1e-4)
    est.fit(Xtr, ytr, privacy_ledger=ledger)
    assert est.feature_scale_ is not None  # raw breast_cancer is badly scaled: the map is applied
    planned = est.planned_events(*Xtr.shape)
    assert isinstance(planned[0], GaussianEvent)
    released = list(est.privacy_events_)
    assert len(released) == len(planned)
    for got, want in zip(released, planned):  # the row bound is chosen privately: the solver's noise follows it
        assert type(got) is type(want) and got.count == want.count
        if isinstance(want, GaussianEvent):
            assert got.mu_squared == pytest.approx(want.mu_squared, rel=1e-9)
        else:
            assert got == want
    assert est.privacy_spent_.epsilon == pytest.approx(1e4, rel=1e-9)
    assert est.privacy_spent_.delta == pytest.approx(1e-5)
    assert price(planned, 1e-5).budget.epsilon == pytest.approx(est.privacy_spent_.epsilon, rel=1e-9)
    # the ledger was charged the plan before any row was read, priced at the ledger's delta
    assert ledger.spent().epsilon == pytest.approx(price(planned, ledger.budget.delta).budget.epsilon, rel=1e-6)


def test_scaling_price_does_not_depend_on_the_width():
    est = DPLogisticRegression(epsilon=10.0, delta=1e-6, classes=[0, 1])
    mus = {round(e.mu_squared, 12) for d in (3, 40, 500) for e in est.planned_events(20000, d)[:1]}
    assert len(mus) == 1
    # a model behind a private encoder (width unknown) is planned exactly, not at its nominal budget
    assert width_free_events(est, 20000) is not None


def test_decision_is_public():
    # small n * epsilon: nothing released; a given data_norm or feature_scaling=None: nothing released
    assert feature_scaling_mu(500, 1.0, 1e-5) is None
    assert feature_scaling_mu(500, 1e4, 1e-5) is not None
    assert feature_scaling_mu(500, 1e4, 0.0) is None
    for params in (dict(feature_scaling=None), dict(data_norm=30.0)):
        est = DPLogisticRegression(epsilon=1e4, classes=[0, 1], **params)
        assert not any(isinstance(e, GaussianEvent) for e in make_plan(est, PublicFit(500, 4)).pre_events)


def test_standardised_and_one_hot_columns_left_alone():
    X, y = load_breast_cancer(return_X_y=True)
    Xs = StandardScaler().fit_transform(X)
    onehot = np.eye(3)[np.random.RandomState(0).randint(0, 3, X.shape[0])]
    for Z in (Xs, np.c_[Xs, onehot]):
        est = DPLogisticRegression(epsilon=1e4, classes=[0, 1], random_state=1).fit(Z, y)
        assert est.feature_scale_ is None  # released (and paid) but the map is the identity
        assert isinstance(est.privacy_events_[0], GaussianEvent)
    # iris is not badly scaled either (column magnitudes within a factor 20)
    Xi, yi = load_iris(return_X_y=True)
    assert DPLogisticRegression(epsilon=1e4, classes=[0, 1, 2], random_state=0).fit(Xi, yi).feature_scale_ is None


def test_coef_in_raw_units():
    Xtr, Xte, ytr, yte = _raw_bc()
    est = DPLogisticRegression(epsilon=1e4, classes=[0, 1], random_state=0, feature_clip=None).fit(Xtr, ytr)
    assert est.feature_scale_ is not None and est.feature_box_ is None
    np.testing.assert_allclose(est.decision_function(Xte), Xte @ est.coef_.ravel() + est.intercept_[0], rtol=1e-10)
    est = DPLogisticRegression(epsilon=1e4, classes=[0, 1], random_state=0).fit(Xtr, ytr)
    lo, hi = est.feature_box_
    expected = clip_to_box(Xte, lo, hi) @ est.coef_.ravel() + est.intercept_[0]
    np.testing.assert_allclose(est.decision_function(Xte), expected, rtol=1e-10)
    np.testing.assert_array_equal(est.predict(Xte), est.classes_[(expected > 0).astype(int)])
    # the same fit on the mapped rows (the map is fixed): its coefficients in z-units, mapped back, are coef_
    assert np.all(est.feature_scale_ > 0)


def test_accuracy_raw_breast_cancer_large_epsilon():
    X, y = load_breast_cancer(return_X_y=True)
    dp, sk = [], []
    for s in range(3):
        Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=s, test_size=0.25, stratify=y)
        sk.append(LogisticRegression(solver="newton-cholesky", max_iter=10000).fit(Xtr, ytr).score(Xte, yte))  # same optimum, fast
        dp.append(DPLogisticRegression(epsilon=1e4, classes=[0, 1], random_state=s).fit(Xtr, ytr).score(Xte, yte))
    assert np.mean(dp) >= np.mean(sk) - 0.02, (dp, sk)


def test_sparse_input_is_scaled_not_centred():
    import scipy.sparse as sp
    Xtr, Xte, ytr, _ = _raw_bc()
    est = DPLogisticRegression(epsilon=1e4, classes=[0, 1], random_state=0).fit(sp.csr_matrix(Xtr), ytr)
    assert est.feature_scale_ is not None and np.all(est.feature_center_ == 0)
    np.testing.assert_allclose(est.decision_function(sp.csr_matrix(Xte)), est.decision_function(Xte), rtol=1e-10)


# -- black box: the histogram release on replace-one neighbours -------------------------------------
MU, N_DRAWS = 1.0, 3000


def _histogram_scores(mu, world, n_draws, multiplier=None):
    """Score of each draw: noisy count of bin A minus that of bin B for one column (d = 1, so the claim is tight)."""
    base = np.r_[np.full(20, 0.5), np.full(20, 50.0)]  # bins A (holds 0.5) and B (holds 50) hold 20 rows each
    X = np.r_[base, 0.5 if world == 0 else 50.0][:, None]
    a, b = (int(np.searchsorted(SCALE_EDGES, v, side="right")) for v in (0.5, 50.0))
    assert feature_bin_counts(X)[0, a] in (20, 21)
    rng = np.random.RandomState(1234 + world)
    out = np.empty(n_draws)
    for i in range(n_draws):
        counts, event = private_feature_histograms(X, mu, rng)
        out[i] = counts[0, a] - counts[0, b]
    assert event.mu_squared == pytest.approx(mu ** 2)
    return out


def test_histograms_empirical_mu_within_claim():
    s0, s1 = _histogram_scores(MU, 0, N_DRAWS), _histogram_scores(MU, 1, N_DRAWS)
    assert empirical_mu_lower_bound(s0, s1) <= MU


def test_histograms_audit_detects_under_noise(under_noise):
    with under_noise(0.4):
        s0, s1 = _histogram_scores(MU, 0, N_DRAWS), _histogram_scores(MU, 1, N_DRAWS)
    assert empirical_mu_lower_bound(s0, s1) > MU


def test_a_row_stored_with_repeated_sparse_entries_moves_the_counts_by_at_most_the_sensitivity():
    """CSR built from raw (data, indices, indptr) may hold a column twice in one row; the histogram counts the
    row's value once, so replacing that row moves the counts by at most sqrt(2 d) (replace-one, public n)."""
    import math

    import scipy.sparse as sp

    from skdp.privacy.quantile import feature_bin_counts

    d, n = 3, 20
    dense = np.zeros((n, d))
    base = sp.csr_matrix(dense)
    repeated = sp.csr_matrix((np.ones(50), np.zeros(50, dtype=int), np.r_[0, np.full(n, 50)]), shape=(n, d))
    moved = np.linalg.norm(feature_bin_counts(repeated) - feature_bin_counts(base))
    assert moved <= math.sqrt(2 * d) + 1e-12, moved


def test_the_map_is_read_from_the_released_histograms_only(monkeypatch):
    """Two neighbouring datasets whose exact quartiles fall in different bins, given the same released (noisy)
    histograms, get the same map: the centre and scale are post-processing of the release, never of the rows."""
    import skdp._feature_scaling as bounds_module
    from skdp._feature_scaling import private_feature_scaling
    from skdp.privacy.quantile import SCALE_EDGES, feature_bin_counts

    rng = np.random.RandomState(0)
    Xa = np.column_stack([rng.uniform(-1, 1, 8), rng.uniform(500, 2000, 8)])
    Xb = Xa.copy()
    Xb[np.argsort(Xa[:, 1])[1:3], 1] = 5000.0  # two rows: the exact first quartile of column 1 moves bins
    assert not np.array_equal(feature_bin_counts(Xa), feature_bin_counts(Xb))
    released = feature_bin_counts(Xa)
    monkeypatch.setattr(bounds_module, "private_feature_histograms",
                        lambda X, mu, rng, edges=SCALE_EDGES: (released.copy(), GaussianEvent(2.0, 2.0 / mu)))
    centre_a, scale_a, _ = private_feature_scaling(Xa, 1e6, np.random.RandomState(1))
    centre_b, scale_b, _ = private_feature_scaling(Xb, 1e6, np.random.RandomState(1))
    assert scale_a is not None
    np.testing.assert_array_equal(centre_a, centre_b)
    np.testing.assert_array_equal(scale_a, scale_b)


def test_histogram_noise_scale_matches_an_independent_derivation():
    """sigma = sqrt(2 d) / mu_s, mu_s = sqrt(0.02) mu*(epsilon, delta), mu* the Gaussian-DP parameter solved here
    from delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong, Roth and Su 2022), not skdp's."""
    import math

    from scipy.optimize import brentq
    from scipy.stats import norm

    epsilon, delta, d = 50.0, 1e-5, 7
    mu_star = brentq(lambda mu: norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)
                     - delta, 1e-3, 100.0, xtol=1e-14)
    event = DPLogisticRegression(epsilon=epsilon, delta=delta, classes=[0, 1]).planned_events(20000, d)[0]
    assert isinstance(event, GaussianEvent)
    assert event.sensitivity == pytest.approx(math.sqrt(2 * d), rel=1e-12)
    assert event.sigma == pytest.approx(math.sqrt(2 * d) / (math.sqrt(0.02) * mu_star), rel=1e-8)
