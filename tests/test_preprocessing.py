"""DPStandardScaler and the budget of pipelines of DP steps."""

import math

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPLogisticRegression, PrivacyBudget, PrivacyLeakWarning, PrivacyLedger
from skdp.privacy import gdp_mu, price
from skdp.preprocessing import DPStandardScaler, pipeline_privacy_spent, set_pipeline_budget


@parametrize_with_checks([DPStandardScaler(random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_noise_scale_independent_and_budget():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 3, size=(1000, 4))
    sc = DPStandardScaler(epsilon=1.0, delta=1e-5, bounds=(-1, 3), random_state=0).fit(X)
    unit = 1 / gdp_mu(1.0, 1e-5)  # the two releases share mu*^2: 0.85 (means) and 0.15
    np.testing.assert_allclose(sc.noise_scale_, [2 / 1000 * unit / math.sqrt(0.85),
                                                 2 / (4 * 1000) * unit / math.sqrt(0.15)], rtol=1e-9)
    assert sc.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-9)
    sc0 = DPStandardScaler(epsilon=1.0, delta=0.0, bounds=(-1, 3), random_state=0).fit(X)
    assert sc0.privacy_spent_ == PrivacyBudget(1.0, 0.0)
    np.testing.assert_allclose(sc0.noise_scale_, [2 / 1000 / 0.85, 2 / 4000 / 0.15])
    # accuracy at a large n
    Xb = rng.uniform(-1, 3, size=(200000, 4))
    sc = DPStandardScaler(epsilon=1.0, bounds=(-1, 3), random_state=0).fit(Xb)
    np.testing.assert_allclose(sc.mean_, 1.0, atol=0.02)
    np.testing.assert_allclose(sc.scale_, 4 / math.sqrt(12), rtol=0.02)


def test_derived_bounds_warn_and_void():
    X = np.random.RandomState(0).randn(50, 2)
    with pytest.warns(PrivacyLeakWarning):
        sc = DPStandardScaler().fit(X)
    assert math.isinf(sc.privacy_spent_.epsilon)


def test_bad_bounds():
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="bounds"):
        DPStandardScaler(bounds=(1, 0)).fit(X)
    with pytest.raises(ValueError, match="bounds"):
        DPStandardScaler(bounds=(0, 1, 2)).fit(X)


def test_empirical_privacy_of_the_mean_release():
    """One row moved from the lower to the upper bound; the released mean of the
    first feature must not separate the worlds beyond the claim (and does at 1/10 the noise)."""
    from tests.test_privacy_statistical import empirical_epsilon_lower_bound

    rng = np.random.RandomState(0)
    base = rng.uniform(0, 1, size=(30, 2))
    d0, d1 = base.copy(), base.copy()
    d0[0] = 0.0
    d1[0] = 1.0
    s = [np.array([DPStandardScaler(1.0, bounds=(0, 1), random_state=k).fit(D).mean_[0] for k in range(600)])
         for D in (d0, d1)]
    assert empirical_epsilon_lower_bound(s[0], s[1]) <= 1.0


def test_pipeline_budget_helpers():
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 4, size=(400, 3))
    y = (X[:, 0] > 2).astype(int)
    pipe = make_pipeline(DPStandardScaler(bounds=(0, 4), random_state=0),
                         DPLogisticRegression(data_norm="auto", classes=[0, 1], random_state=0))
    set_pipeline_budget(pipe, 1.0, 1e-5)
    assert pipe[0].epsilon == pipe[1].epsilon == 0.5
    pipe.fit(X, y)
    spent = pipeline_privacy_spent(pipe)
    assert spent <= PrivacyBudget(1.0, 1e-5)
    # the accountant-aware split uses the budget fully
    set_pipeline_budget(pipe, 1.0, 1e-5, weights=[1, 2], n_samples=400, n_features=3)
    assert pipe[1].epsilon == pytest.approx(2 * pipe[0].epsilon)
    ledger = PrivacyLedger(1.0, 1e-5)
    pipe.fit(X, y, dpstandardscaler__privacy_ledger=ledger, dplogisticregression__privacy_ledger=ledger)
    assert ledger.n_fits == 2 and ledger.spent().epsilon <= 1.0
    assert pipeline_privacy_spent(pipe).epsilon == pytest.approx(ledger.spent().epsilon, rel=1e-9)
    assert ledger.spent().epsilon >= 0.99
    assert price([ev for s in pipe for ev in s.privacy_events_], 1e-5).budget.epsilon == pytest.approx(
        pipeline_privacy_spent(pipe, delta=1e-5).epsilon, rel=1e-12)
