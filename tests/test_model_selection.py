"""Privacy ledger, DPGridSearchCV and the cost of plain searches."""

import math

import numpy as np
import pytest
import sklearn
from scipy import stats
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import BudgetExceededError, DPLogisticRegression, DPRidge, PrivacyBudget, PrivacyLedger
from skdp.model_selection import DPGridSearchCV, search_privacy_cost
from skdp.privacy import GaussianEvent, gdp_epsilon, gdp_mu, price, report_noisy_max


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(600, 4)
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.randn(600) > 0).astype(int)
    return X, y


def _clf(**kw):
    p = dict(epsilon=0.3, data_norm=3.0, classes=[0, 1])  # fresh noise per fit: the ledger composes them
    p.update(kw)
    return DPLogisticRegression(**p)


# ------------------------------------------------------------------ ledger
def test_ledger_composes_gaussian_fits_exactly(data):
    X, y = data
    ledger = PrivacyLedger(10.0, 1e-5)
    for eps in (0.3, 0.5, 1.0):
        _clf(epsilon=eps, solver="dp_gd").fit(X, y, privacy_ledger=ledger)
    # each dp_gd fit is exactly mu*(eps, delta)-GDP; together sqrt(sum mu^2)
    mu = math.sqrt(sum(gdp_mu(e, 1e-5) ** 2 for e in (0.3, 0.5, 1.0)))
    assert ledger.spent().epsilon == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-8)
    assert ledger.spent().epsilon < 1.8  # tighter than summing epsilons
    assert ledger.n_fits == 3


def test_ledger_records_match_what_the_fit_released(data):
    X, y = data
    ledger = PrivacyLedger(math.inf, 1e-4)
    for solver in ("dp_gd", "output_pert", "obj_pert", "dp_svrg"):
        est = _clf(solver=solver, alpha=0.05).fit(X, y, privacy_ledger=ledger)
        assert ledger.records()[-1]["events"] == est.privacy_events_
        reg = DPRidge(epsilon=0.3, solver=solver, data_norm=3.0, label_bound=2.0).fit(
            X, y.astype(float), privacy_ledger=ledger)
        assert ledger.records()[-1]["events"] == reg.privacy_events_


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_inside_the_ledger_records_every_fit(data, n_jobs):
    X, y = data
    grid = {"alpha": [0.01, 0.1, 1.0]}
    ledger = PrivacyLedger(math.inf, 1e-5)
    with ledger:
        GridSearchCV(_clf(), grid, cv=5, n_jobs=n_jobs).fit(X, y)
    assert ledger.n_fits == 16  # 3 candidates x 5 folds + the refit
    # as fit metadata (works across processes through the ledger's file)
    ledger2 = PrivacyLedger(math.inf, 1e-5)
    GridSearchCV(_clf(), grid, cv=5, n_jobs=n_jobs).fit(X, y, privacy_ledger=ledger2)
    assert ledger2.n_fits == 16
    assert ledger2.spent() == ledger.spent()
    # the helper predicts the same total without fitting anything
    assert search_privacy_cost(GridSearchCV(_clf(), grid, cv=5), X, y) == ledger.spent()


def test_ledger_survives_clone_and_pipelines(data):
    X, y = data
    ledger = PrivacyLedger(math.inf, 1e-5)
    pipe = make_pipeline(StandardScaler(), _clf())
    clone(pipe).fit(X, y, dplogisticregression__privacy_ledger=ledger)
    with ledger:
        clone(clone(pipe)).fit(X, y)
    assert ledger.n_fits == 2


def test_metadata_routing(data):
    X, y = data
    ledger = PrivacyLedger(math.inf, 1e-5)
    with sklearn.config_context(enable_metadata_routing=True):
        est = _clf().set_fit_request(privacy_ledger=True)
        GridSearchCV(est, {"alpha": [0.01, 0.1]}, cv=3).fit(X, y, privacy_ledger=ledger)
    assert ledger.n_fits == 7


def test_budget_exceeded_before_touching_data(data):
    X, y = data
    ledger = PrivacyLedger(0.5, 1e-5)
    _clf(epsilon=0.4).fit(X, y, privacy_ledger=ledger)
    before = ledger.spent()
    X_bad = X.copy()
    X_bad[0, 0] = np.nan  # would raise a ValueError if the data were read first
    with pytest.raises(BudgetExceededError, match="budget"):
        _clf(epsilon=0.4).fit(X_bad, y, privacy_ledger=ledger)
    assert ledger.n_fits == 1 and ledger.spent() == before
    # a fit whose bounds come from the data has no finite cost: refused
    with pytest.raises(BudgetExceededError, match="no finite guarantee"):
        DPLogisticRegression(epsilon=0.01, data_norm=None, classes=[0, 1]).fit(X, y, privacy_ledger=ledger)


def test_search_cost_of_plain_search_is_inf_without_bounds(data):
    X, y = data
    cost = search_privacy_cost(GridSearchCV(DPLogisticRegression(data_norm=None, classes=[0, 1]), {"alpha": [0.1]}), X, y)
    assert math.isinf(cost.epsilon)


# ------------------------------------------------------------------ DPGridSearchCV
def test_dp_grid_search_budget_and_attributes(data):
    X, y = data
    search = DPGridSearchCV(_clf(), {"alpha": [0.01, 0.1, 1.0], "solver": ["dp_gd", "output_pert"]},
                            epsilon=2.0, delta=1e-5, random_state=0).fit(X, y)
    assert search.privacy_spent_ <= PrivacyBudget(2.0, 1e-5)
    assert set(search.cv_results_) == {"params"}  # no raw (private) scores
    assert search.best_params_ in search.cv_results_["params"]
    assert search.score(X, y) > 0.8
    assert search.best_estimator_.privacy_spent_ <= search.candidate_budget_


def test_dp_grid_search_allocation_is_tight(data):
    X, y = data
    grid = {"alpha": [0.01, 0.1, 1.0, 3.0]}
    search = DPGridSearchCV(_clf(solver="dp_gd"), grid, epsilon=1.0, random_state=1).fit(X, y)
    eps_c = search.candidate_budget_.epsilon
    events = []
    for p in search.cv_results_["params"]:
        e = _clf(solver="dp_gd", epsilon=eps_c, delta=search.candidate_budget_.delta).set_params(**p)
        events += e.planned_events(search.n_train_, X.shape[1])
    total = price(events, 1e-5).budget.epsilon
    assert 0.99 <= total <= 1.0


def test_dp_grid_search_regressor(data):
    X, y = data
    yr = X[:, 0] + 0.1 * np.random.RandomState(0).randn(len(X))
    search = DPGridSearchCV(DPRidge(data_norm=3.0, label_bound=4.0), {"alpha": [0.01, 1.0]},
                            epsilon=2.0, random_state=0).fit(X, yr)
    assert search.privacy_spent_ <= PrivacyBudget(2.0, 1e-5)
    assert search.score(X, yr) > 0.5


def test_dp_grid_search_refuses_budget_params_and_missing_bounds(data):
    X, y = data
    with pytest.raises(ValueError, match="epsilon"):
        DPGridSearchCV(_clf(), {"epsilon": [0.5, 1.0]}).fit(X, y)
    with pytest.raises(ValueError, match="public bounds"):
        DPGridSearchCV(DPLogisticRegression(data_norm=None, classes=[0, 1]), {"alpha": [0.1]}).fit(X, y)


def test_report_noisy_max_is_the_exponential_mechanism():
    """Selection frequencies match P(v) ~ exp(u_v / beta) (chi-square, 20k draws)."""
    rng = np.random.RandomState(0)
    scores = np.array([0.0, 0.5, 1.0, 2.0])
    beta = 0.8
    draws = np.array([report_noisy_max(rng, scores, beta) for _ in range(20000)])
    observed = np.bincount(draws, minlength=4)
    expected = np.exp(scores / beta) / np.exp(scores / beta).sum() * len(draws)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_selection_is_private_statistically(under_noise):
    """Neighbouring validation sets shift one score by s; the selection's empirical
    log-ratio of the top choice stays within the claimed epsilon (plus MC error)."""
    rng = np.random.RandomState(1)
    eps, s = 1.0, 0.01
    from skdp.privacy import gumbel_scale

    beta = gumbel_scale(s, eps)
    u0 = np.array([0.80, 0.80, 0.79])
    u1 = u0 + np.array([s, -s, 0.0])  # worst case: scores move in opposite directions
    n = 40000

    def worst_log_ratio(scale):
        c0 = np.bincount([report_noisy_max(rng, u0, scale) for _ in range(n)], minlength=3) / n
        c1 = np.bincount([report_noisy_max(rng, u1, scale) for _ in range(n)], minlength=3) / n
        ok = (c0 > 0.01) & (c1 > 0.01)
        return float(np.max(np.abs(np.log(c1[ok] / c0[ok]))))

    assert worst_log_ratio(beta) <= eps + 0.05
    # and the test has power: with a third of the noise the ratio is far above epsilon
    with under_noise(1 / 3):
        assert worst_log_ratio(beta) > eps + 0.5


def test_gaussian_event_reference():
    # sanity: the ledger's pricing is the shared accountant's
    assert price([GaussianEvent(1.0, 10.0, 100)], 1e-5).budget.epsilon == pytest.approx(4.3771780957)


def test_dp_grid_search_charges_the_ledger_once(data):
    X, y = data
    ledger = PrivacyLedger(3.0, 1e-5)
    with ledger:
        DPGridSearchCV(_clf(), {"alpha": [0.01, 0.1]}, epsilon=2.0, random_state=0).fit(X, y)
    assert ledger.n_fits == 1
    assert ledger.spent() == PrivacyBudget(2.0, 1e-5)
    with pytest.raises(BudgetExceededError):
        DPGridSearchCV(_clf(), {"alpha": [0.01]}, epsilon=2.0).fit(X, y, privacy_ledger=ledger)
    assert ledger.n_fits == 1
