"""Noise seeding (skdp/_random.py): fresh OS entropy by default, independent noise across folds, and seeds that
would draw the same noise twice refused or reported.
"""

import math

import numpy as np
import pytest
from sklearn.model_selection import KFold, cross_validate

from skdp import BudgetExceededError, DPLogisticRegression, DPRidge, PrivacyLedger
from skdp.model_selection import DPGridSearchCV, _search as search_module

D = 60


@pytest.fixture(scope="module")
def null_design():
    """Rows that carry no signal (X = 0, no intercept): a dp_gd fit's coefficients are a fixed
    linear map of its noise draws alone, so the released coef_ *is* the noise up to that map."""
    rng = np.random.RandomState(0)
    X = np.zeros((500, D))
    y = rng.randint(0, 2, 500)
    return X, y


def _null_model(**kw):
    p = dict(epsilon=1.0, classes=[0, 1], data_norm=1.0, fit_intercept=False, solver="dp_gd", max_iter=5)
    p.update(kw)
    return DPLogisticRegression(**p)


def _max_abs_corr(coefs):
    C = np.corrcoef(np.vstack(coefs))
    return float(np.max(np.abs(C[np.triu_indices(len(coefs), 1)])))


def _fold_coefs(est, X, y):
    out = cross_validate(est, X, y, cv=KFold(5), return_estimator=True)
    return [e.coef_.ravel() for e in out["estimator"]]


# ----------------------------------------------------------------------------- 1. secret noise
@pytest.mark.parametrize("defaults", [False, True], ids=["dp_gd", "all-defaults"])
def test_cross_validation_folds_draw_independent_noise(null_design, defaults):
    """The acceptance call: cross_validate(DPLogisticRegression(epsilon=1, classes=[0, 1]), X, y, cv=5).
    On zero features the coefficients are functions of the noise alone (the intercept is not used)."""
    X, y = null_design
    est = DPLogisticRegression(epsilon=1, classes=[0, 1]) if defaults else _null_model()
    coefs = _fold_coefs(est, X, y)
    assert all(np.std(c) > 0 for c in coefs)
    # independent 60-dim noise vectors: |corr| ~ 1/sqrt(60) = 0.13; 10 pairs stay far below 0.6
    assert _max_abs_corr(coefs) < 0.6
    # w_fold1 - w_fold2 does not cancel: it is as large as the noise itself
    assert np.linalg.norm(coefs[0] - coefs[1]) > 0.5 * np.linalg.norm(coefs[0])


@pytest.mark.parametrize("seed", [0, np.random.RandomState(0)])
def test_seeded_folds_share_noise_and_the_ledger_says_so(null_design, seed):
    """Positive control of the attack above: an int seed, or a RandomState copied by clone, gives every
    fold the same noise (corr = 1, the difference cancels exactly). Before, a ledger composed those
    five fits as independent releases and reported a finite total; now it reports inf / refuses."""
    X, y = null_design
    coefs = _fold_coefs(_null_model(random_state=seed), X, y)
    assert _max_abs_corr(coefs) > 0.999
    assert np.allclose(coefs[0], coefs[1])
    ledger = PrivacyLedger(math.inf, 1e-5)
    with ledger:
        cross_validate(_null_model(random_state=seed), X, y, cv=KFold(5))
    assert ledger.n_fits == 5 and math.isinf(ledger.spent().epsilon)
    finite = PrivacyLedger(100.0, 1e-5)
    with finite, pytest.raises(BudgetExceededError, match="same noise"):
        cross_validate(_null_model(random_state=seed), X, y, cv=KFold(5), error_score="raise")
    assert finite.n_fits == 1


def test_default_noise_is_fresh_os_entropy_not_the_global_generator(null_design, monkeypatch):
    X, y = null_design
    made = []
    real = np.random.SeedSequence

    class Spy(real):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(np.random, "SeedSequence", Spy)
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    a = _null_model().fit(X, y)
    np.random.seed(123)
    b = _null_model().fit(X, y)
    assert not np.allclose(a.coef_, b.coef_)            # reseeding numpy's global generator does not replay
    assert np.array_equal(np.random.get_state()[1], before)  # and it was never drawn from
    roots = [s for s in made if not s.spawn_key]
    assert len(roots) >= 2 and all(s.entropy.bit_length() > 64 for s in roots)  # 128-bit entropy
    assert a.noise_source_ == b.noise_source_ == "os-entropy"
    # a user seed is reproducible, and its source says so
    c, d = _null_model(random_state=7).fit(X, y), _null_model(random_state=7).fit(X, y)
    assert np.array_equal(c.coef_, d.coef_) and c.noise_source_ == d.noise_source_ != "os-entropy"


def test_same_seed_twice_on_a_ledger_is_refused():
    rng = np.random.RandomState(1)
    X, y = rng.randn(300, 3), rng.randint(0, 2, 300)
    ledger = PrivacyLedger(10.0, 1e-5)
    DPLogisticRegression(epsilon=0.5, data_norm=3.0, classes=[0, 1], random_state=3).fit(X, y, privacy_ledger=ledger)
    # a different estimator with the same seed draws the same Gaussian noise stream
    with pytest.raises(BudgetExceededError, match="same noise"):
        DPRidge(epsilon=0.5, data_norm=3.0, label_bound=1.0, random_state=3).fit(X, y, privacy_ledger=ledger)
    DPLogisticRegression(epsilon=0.5, data_norm=3.0, classes=[0, 1], random_state=4).fit(X, y, privacy_ledger=ledger)
    DPLogisticRegression(epsilon=0.5, data_norm=3.0, classes=[0, 1]).fit(X, y, privacy_ledger=ledger)
    assert ledger.n_fits == 3 and ledger.spent().epsilon < 10


def test_dp_grid_search_candidates_draw_independent_noise(null_design, monkeypatch):
    X, y = null_design
    fitted = []
    real = search_module._fit_one
    monkeypatch.setattr(search_module, "_fit_one", lambda e, X, y: fitted.append(real(e, X, y)) or fitted[-1])
    # the model's own seed is overridden by the search's independent children
    est = _null_model(random_state=0)
    grid = {"tol": [1e-4, 2e-4, 3e-4, 4e-4]} if "tol" in est.get_params() else {"alpha": [1e-4, 1.1e-4, 1.2e-4, 1.3e-4]}
    np.random.seed(0)
    state = np.random.get_state()[1].copy()
    DPGridSearchCV(est, grid, epsilon=4.0).fit(X, y)
    assert np.array_equal(np.random.get_state()[1], state)  # numpy's global generator untouched
    assert len(fitted) == 4 and _max_abs_corr([f.coef_.ravel() for f in fitted]) < 0.6
    # a seeded search is reproducible, and a ledger refuses to run the same seeded search twice
    a = DPGridSearchCV(_null_model(), {"alpha": [1e-4, 2e-4]}, epsilon=4.0, random_state=5).fit(X, y)
    b = DPGridSearchCV(_null_model(), {"alpha": [1e-4, 2e-4]}, epsilon=4.0, random_state=5).fit(X, y)
    assert np.array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    ledger = PrivacyLedger(100.0, 1e-3)
    DPGridSearchCV(_null_model(), {"alpha": [1e-4]}, epsilon=1.0, random_state=5).fit(X, y, privacy_ledger=ledger)
    with pytest.raises(BudgetExceededError, match="same noise"):
        DPGridSearchCV(_null_model(), {"alpha": [1e-4]}, epsilon=1.0, random_state=5).fit(X, y,
                                                                                          privacy_ledger=ledger)
