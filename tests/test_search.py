"""Searches: DPGridSearchCV (budget, allocation, private selection, what it refuses) and the privacy cost of
plain searches, as an attacker sees them.

DPGridSearchCV and search_privacy_cost as an attacker sees them (issue 32, findings 1, 4, 5; selection).

Every param_grid candidate is checked for non-DP steps before any fit or charge; grid values are cloned
per candidate; the ledger covers what the candidates ran; the selection's Gumbel scale is pinned to a hand
derivation and its privacy is checked statistically on neighbouring validation sets.
"""

import math
import warnings

import numpy as np
import pytest
import sklearn
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from skdp import (BudgetExceededError, DPLinearSVC, DPLogisticRegression, DPRidge, DPSparseLinearRegression,
                  DPStandardScaler, PrivacyBudget, PrivacyLeakWarning, PrivacyLedger)
from skdp._random import noise_source
from skdp.model_selection import DPGridSearchCV, _search as search_module, search_privacy_cost
from skdp.privacy import price, report_noisy_max
from skdp.privacy.mechanisms import record_draws

from ._helpers import ledger_clf


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_inside_the_ledger_records_every_fit(clf_data_600, n_jobs):
    X, y = clf_data_600
    grid = {"alpha": [0.01, 0.1, 1.0]}
    ledger = PrivacyLedger(math.inf, 1e-5)
    with ledger:
        GridSearchCV(ledger_clf(), grid, cv=5, n_jobs=n_jobs).fit(X, y)
    assert ledger.n_fits == 16  # 3 candidates x 5 folds + the refit
    # as fit metadata (works across processes through the ledger's file)
    ledger2 = PrivacyLedger(math.inf, 1e-5)
    GridSearchCV(ledger_clf(), grid, cv=5, n_jobs=n_jobs).fit(X, y, privacy_ledger=ledger2)
    assert ledger2.n_fits == 16
    assert ledger2.spent() == ledger.spent()
    # the helper predicts the same total without fitting anything
    assert search_privacy_cost(GridSearchCV(ledger_clf(), grid, cv=5), X, y) == ledger.spent()


def test_metadata_routing(clf_data_600):
    X, y = clf_data_600
    ledger = PrivacyLedger(math.inf, 1e-5)
    with sklearn.config_context(enable_metadata_routing=True):
        est = ledger_clf().set_fit_request(privacy_ledger=True)
        GridSearchCV(est, {"alpha": [0.01, 0.1]}, cv=3).fit(X, y, privacy_ledger=ledger)
    assert ledger.n_fits == 7


def test_search_cost_of_plain_search_is_inf_without_bounds(clf_data_600):
    X, y = clf_data_600
    cost = search_privacy_cost(GridSearchCV(DPLogisticRegression(data_norm=None, classes=[0, 1]), {"alpha": [0.1]}), X, y)
    assert math.isinf(cost.epsilon)


# ------------------------------------------------------------------ DPGridSearchCV
def test_dp_grid_search_budget_and_attributes(clf_data_600):
    X, y = clf_data_600
    search = DPGridSearchCV(ledger_clf(), {"alpha": [0.01, 0.1, 1.0], "solver": ["dp_gd", "output_pert"]},
                            epsilon=2.0, delta=1e-5, random_state=0).fit(X, y)
    assert search.privacy_spent_ <= PrivacyBudget(2.0, 1e-5)
    assert set(search.cv_results_) == {"params"}  # no raw (private) scores
    assert search.best_params_ in search.cv_results_["params"]
    assert search.score(X, y) > 0.8
    assert search.best_estimator_.privacy_spent_ <= search.candidate_budget_


def test_dp_grid_search_allocation_is_tight(clf_data_600):
    X, y = clf_data_600
    grid = {"alpha": [0.01, 0.1, 1.0, 3.0]}
    search = DPGridSearchCV(ledger_clf(solver="dp_gd"), grid, epsilon=1.0, random_state=1).fit(X, y)
    eps_c = search.candidate_budget_.epsilon
    events = []
    for p in search.cv_results_["params"]:
        e = ledger_clf(solver="dp_gd", epsilon=eps_c, delta=search.candidate_budget_.delta).set_params(**p)
        events += e.planned_events(search.n_train_, X.shape[1])
    total = price(events, 1e-5).budget.epsilon
    assert 0.99 <= total <= 1.0


def test_dp_grid_search_regressor(clf_data_600):
    X, y = clf_data_600
    yr = X[:, 0] + 0.1 * np.random.RandomState(0).randn(len(X))
    search = DPGridSearchCV(DPRidge(data_norm=3.0, label_bound=4.0), {"alpha": [0.01, 1.0]},
                            epsilon=2.0, random_state=0).fit(X, yr)
    assert search.privacy_spent_ <= PrivacyBudget(2.0, 1e-5)
    assert search.score(X, yr) > 0.5


def test_dp_grid_search_refuses_budget_params_and_missing_bounds(clf_data_600):
    X, y = clf_data_600
    with pytest.raises(ValueError, match="epsilon"):
        DPGridSearchCV(ledger_clf(), {"epsilon": [0.5, 1.0]}).fit(X, y)
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


def test_dp_grid_search_charges_the_ledger_once(clf_data_600):
    X, y = clf_data_600
    ledger = PrivacyLedger(3.0, 1e-5)
    with ledger:
        DPGridSearchCV(ledger_clf(), {"alpha": [0.01, 0.1]}, epsilon=2.0, random_state=0).fit(X, y)
    assert ledger.n_fits == 1
    assert ledger.spent() == PrivacyBudget(2.0, 1e-5)
    with pytest.raises(BudgetExceededError):
        DPGridSearchCV(ledger_clf(), {"alpha": [0.01]}, epsilon=2.0).fit(X, y, privacy_ledger=ledger)
    assert ledger.n_fits == 1


def test_plain_search_cost_with_a_fixed_seed_or_a_leaky_step_is_inf(tabular):
    X, y = tabular
    grid = {"alpha": [0.01, 0.1]}
    seeded = GridSearchCV(DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=0), grid, cv=3)
    with pytest.warns(PrivacyLeakWarning, match="random_state"):
        assert math.isinf(search_privacy_cost(seeded, X, y).epsilon)
    leaky = GridSearchCV(make_pipeline(StandardScaler(), DPLogisticRegression(data_norm=3.0, classes=[0, 1])),
                         {"dplogisticregression__alpha": [0.01]}, cv=3)
    with pytest.warns(PrivacyLeakWarning, match="standardscaler"):
        assert math.isinf(search_privacy_cost(leaky, X, y).epsilon)
    fresh = GridSearchCV(DPLogisticRegression(data_norm=3.0, classes=[0, 1]), grid, cv=3)
    assert math.isfinite(search_privacy_cost(fresh, X, y).epsilon)


# ----------------------------------------------------------------------------- 3. DPGridSearchCV
def test_dp_grid_search_over_a_dp_pipeline_stays_within_budget(tabular):
    X, y = tabular
    bounds = (np.full(4, -2.0), np.full(4, 2.0))
    pipe = make_pipeline(DPStandardScaler(bounds=bounds), DPLogisticRegression(classes=[0, 1]))
    search = DPGridSearchCV(pipe, {"dplogisticregression__alpha": [0.001, 0.01, 0.1]}, epsilon=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        search.fit(X, y)
    assert search.privacy_spent_.epsilon <= 2.0 + 1e-9 and search.privacy_spent_.delta <= 1e-5
    best = search.best_estimator_
    assert len(best.steps) == 2 and best[0].epsilon == pytest.approx(best[1].epsilon)
    assert search.score(X, y) > 0.7
    # every step's noise came from a child seed that is not a parameter of the published model
    assert best[0].random_state is None and best[1].random_state is None
    assert not any("child" in k for step in best for k in vars(step))


def test_dp_grid_search_refuses_a_non_dp_step(tabular):
    X, y = tabular
    pipe = make_pipeline(StandardScaler(), DPLogisticRegression(data_norm=3.0, classes=[0, 1]))
    with pytest.raises(ValueError, match="standardscaler"):
        DPGridSearchCV(pipe, {"dplogisticregression__alpha": [0.01]}).fit(X, y)
    with pytest.raises(TypeError, match="end in an skdp estimator"):
        DPGridSearchCV(make_pipeline(DPStandardScaler(bounds=(-2.0, 2.0)), FunctionTransformer()),
                       {}).fit(X, y)


def test_dp_grid_search_refuses_a_cached_pipeline_whose_clones_lose_the_seeds(tabular, tmp_path, monkeypatch):
    """Before: Pipeline(memory=...) fitted clones of its steps, which dropped the child seeds; two
    candidates' scalers with random_state=0 drew the same noise while privacy_spent_ composed them."""
    X, y = tabular
    fits = []
    real = search_module._fit_one
    monkeypatch.setattr(search_module, "_fit_one", lambda e, X, y: fits.append(e) or real(e, X, y))
    bounds = (np.full(4, -3.0), np.full(4, 3.0))
    steps = [("sc", DPStandardScaler(bounds=bounds, random_state=0)),
             ("m", DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=0))]
    ledger = PrivacyLedger(10.0, 1e-4)
    for pipe, grid in [(Pipeline(steps, memory=str(tmp_path)), {"sc__clip_norm": [2.0, 3.0]}),
                       (Pipeline([("inner", Pipeline(steps[:1], memory=str(tmp_path))), steps[1]]),
                        {"inner__sc__clip_norm": [2.0, 3.0]}),
                       (Pipeline(steps), {"memory": [str(tmp_path)]})]:
        with pytest.raises(ValueError, match="memory"):
            DPGridSearchCV(pipe, grid, epsilon=2.0).fit(X, y, privacy_ledger=ledger)
    assert fits == [] and ledger.n_fits == 0
    # without memory the candidates' scalers draw from the search's independent (seeded) children
    search = DPGridSearchCV(Pipeline(steps), {"sc__clip_norm": [2.0, 3.0]}, epsilon=2.0, random_state=3).fit(X, y)
    sources = {f[0].noise_source_ for f in fits}
    assert len(sources) == 2 and noise_source(steps[0][1]) not in sources
    assert search.privacy_spent_.epsilon <= 2.0 + 1e-9


class _SeedDroppingScaler(DPStandardScaler):
    """A step that refits itself without the seed the search gave it (as a clone would)."""

    def fit(self, X, y=None, **kw):
        self.__dict__.pop("_skdp_child_seed", None)
        return super().fit(X, y, **kw)


def test_dp_grid_search_refuses_candidates_that_drew_the_same_noise(tabular):
    X, y = tabular
    pipe = make_pipeline(_SeedDroppingScaler(bounds=(np.full(4, -3.0), np.full(4, 3.0)), random_state=0),
                         DPLogisticRegression(data_norm=3.0, classes=[0, 1]))
    search = DPGridSearchCV(pipe, {"dplogisticregression__alpha": [0.01, 0.1]}, epsilon=2.0)
    with pytest.raises(ValueError, match="same noise"):
        search.fit(X, y)
    assert not hasattr(search, "best_estimator_") and not hasattr(search, "privacy_spent_")
    # the same step with fresh entropy never collides
    DPGridSearchCV(pipe.set_params(_seeddroppingscaler__random_state=None),
                   {"dplogisticregression__alpha": [0.01, 0.1]}, epsilon=2.0).fit(X, y)


def test_dp_grid_search_refuses_a_regressor_without_label_bound_before_spending(monkeypatch):
    """Before: every candidate was fitted and the ledger charged, then the selection raised."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (300, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0]
    fits = []
    real = search_module._fit_one
    monkeypatch.setattr(search_module, "_fit_one", lambda e, X, y: fits.append(e) or real(e, X, y))
    ledger = PrivacyLedger(10.0, 1e-4)
    for est, grid in [(DPSparseLinearRegression(label_bound=None), {"n_nonzero_coefs": [1, 3]}),
                      (DPSparseLinearRegression(label_bound=2.0), {"label_bound": [2.0, None]})]:
        with pytest.raises(ValueError, match="label_bound"):
            DPGridSearchCV(est, grid, epsilon=1.0).fit(X, y, privacy_ledger=ledger)
    assert fits == [] and ledger.n_fits == 0
    DPGridSearchCV(DPSparseLinearRegression(label_bound=2.0), {"n_nonzero_coefs": [1, 3]},
                   epsilon=1.0).fit(X, y, privacy_ledger=ledger)
    assert len(fits) == 2 and ledger.n_fits == 1


BOUNDS = (-3.0, 3.0)


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(120, 3)
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture
def fits(monkeypatch):
    """Every candidate the search fits, in order (the search's ``_fit_one`` recorded)."""
    fitted = []
    real = search_module._fit_one
    monkeypatch.setattr(search_module, "_fit_one",
                        lambda e, X, y, **kw: fitted.append(real(e, X, y, **kw)) or fitted[-1])
    return fitted


def _clf(**kw):
    return DPLogisticRegression(**{"data_norm": 3.0, "classes": [0, 1], **kw})


def _pipe():
    return Pipeline([("scaler", DPStandardScaler(bounds=BOUNDS)), ("clf", _clf())])


FIT_CALLS = []


class _SpyScaler(StandardScaler):
    """sklearn's exact scaler, recording that the private rows reached its fit."""

    def fit(self, X, y=None, **kw):
        FIT_CALLS.append(type(self).__name__)
        return super().fit(X, y, **kw)


class _SpyLogistic(LogisticRegression):
    def fit(self, X, y, **kw):
        FIT_CALLS.append(type(self).__name__)
        return super().fit(X, y, **kw)


# ------------------------------------------------------------------ finding 1: non-DP steps in the grid
LEAKY_GRIDS = {
    # a non-DP scaler swapped in for the DP one
    "scaler": (_pipe, {"scaler": [_SpyScaler()]}),
    # a non-DP final model
    "clf": (_pipe, {"clf": [_SpyLogistic()]}),
    # a whole Pipeline given as a grid value, with a non-DP step inside
    "prep__exact": (lambda: Pipeline([("prep", FunctionTransformer()), ("clf", _clf())]),
                    {"prep": [Pipeline([("exact", _SpyScaler()), ("dp", DPStandardScaler(bounds=BOUNDS))])]}),
    # a nested Pipeline's step replaced by "outer__inner"
    "outer__inner": (lambda: Pipeline([("outer", Pipeline([("id", FunctionTransformer()),
                                                            ("inner", DPStandardScaler(bounds=BOUNDS))])),
                                       ("clf", _clf())]),
                     {"outer__inner": [DPStandardScaler(bounds=BOUNDS), _SpyScaler()]}),
}


@pytest.mark.parametrize("step", list(LEAKY_GRIDS))
def test_dp_grid_search_refuses_a_grid_value_that_is_not_dp_before_any_fit(data, step):
    """Before: only the base estimator was checked, so {"scaler": [StandardScaler()]} was fitted on the
    private rows and its exact mean_ published with a finite privacy_spent_ (see the next test for the
    attack on that mean_). Now every candidate is refused before the ledger or any step sees the rows."""
    X, y = data
    X_neighbour = X.copy()
    X_neighbour[0] = [3.0, -3.0, 3.0]  # the attack compares the releases on two neighbouring datasets
    make, grid = LEAKY_GRIDS[step]
    FIT_CALLS.clear()
    ledger = PrivacyLedger(math.inf, 1e-5)
    for X_world in (X, X_neighbour):
        search = DPGridSearchCV(make(), grid, epsilon=1.0, random_state=0)
        with pytest.raises(ValueError, match=rf"\['{step}'\].*not differentially private"):
            search.fit(X_world, y, privacy_ledger=ledger)
        assert not hasattr(search, "best_estimator_") and not hasattr(search, "privacy_spent_")
    assert FIT_CALLS == [] and ledger.n_fits == 0


def test_search_privacy_cost_of_a_grid_that_swaps_in_an_exact_scaler_is_inf(data):
    """The attack: a plain GridSearchCV over {"scaler": [StandardScaler()]} publishes (refit on all n rows)
    the exact mean of the rows; replacing row 0 moves the released mean_ by exactly (x' - x)/n. Before,
    search_privacy_cost priced that grid as finite (it checked the base estimator only)."""
    X, y = data
    X_neighbour = X.copy()
    X_neighbour[0] = [3.0, -3.0, 3.0]
    n = len(X)
    released = [GridSearchCV(_pipe(), {"scaler": [StandardScaler()]}, cv=2).fit(X_world, y)
                .best_estimator_["scaler"].mean_ for X_world in (X, X_neighbour)]
    np.testing.assert_allclose(released[1] - released[0], (X_neighbour[0] - X[0]) / n, rtol=1e-9, atol=1e-12)
    for grid, step in [({"scaler": [StandardScaler()]}, "scaler"),
                       ({"clf": [LogisticRegression()]}, "clf"),
                       ({"scaler": [Pipeline([("exact", StandardScaler())])]}, "scaler__exact")]:
        with pytest.warns(PrivacyLeakWarning, match=rf"\['{step}'\]"):
            assert math.isinf(search_privacy_cost(GridSearchCV(_pipe(), grid, cv=2), X, y).epsilon)
    # the DP grid it replaces is priced finite
    assert math.isfinite(search_privacy_cost(GridSearchCV(_pipe(), {"clf__alpha": [0.1, 1.0]}, cv=2), X, y).epsilon)


def test_search_privacy_cost_of_a_seeded_grid_value_is_inf(data):
    """A grid value with a fixed random_state is copied into every fold and the refit, which then share noise:
    before, only the base estimator's seed was checked and this grid was priced as independent fits."""
    X, y = data
    fresh = GridSearchCV(_pipe(), {"clf": [_clf()]}, cv=2)
    assert math.isfinite(search_privacy_cost(fresh, X, y).epsilon)  # the same search without a seed
    grid_seeded = GridSearchCV(_pipe(), {"clf": [_clf(random_state=0)]}, cv=2)
    with pytest.warns(PrivacyLeakWarning, match="random_state"):
        assert math.isinf(search_privacy_cost(grid_seeded, X, y).epsilon)


@pytest.mark.parametrize("grid, error, match", [
    ({"clf": [DPStandardScaler(bounds=BOUNDS)]}, TypeError, r"ends in DPStandardScaler \(step 'clf'\)"),
    ({"clf": ["passthrough"]}, TypeError, r"end in an skdp estimator"),
    ({"clf": [DPRidge(data_norm=3.0, label_bound=1.0)]}, ValueError, r"classifier.*'clf'"),
])
def test_dp_grid_search_refuses_a_candidate_whose_final_step_is_not_an_skdp_predictor(data, fits, grid, error,
                                                                                       match):
    """Before: such candidates were fitted and the ledger charged, and then the selection failed (no predict)
    or scored a regressor by accuracy as if it were a classifier."""
    X, y = data
    ledger = PrivacyLedger(math.inf, 1e-5)
    with pytest.raises(error, match=match):
        DPGridSearchCV(_pipe(), grid, epsilon=1.0).fit(X, y, privacy_ledger=ledger)
    assert fits == [] and ledger.n_fits == 0


# ------------------------------------------------------------------ finding 4: the ledger covers what ran
def multinomial(n=600):
    rng = np.random.RandomState(0)
    X = rng.randn(n, 3)
    return X, np.argmax(X, axis=1)


def _ovr_search():
    # classes="auto": each candidate is planned as one binary fit, and runs one-vs-rest on the labels it
    # selects, calibrated to the binary plan at the candidate's delta, not at the search's
    return DPGridSearchCV(DPLinearSVC(data_norm=3.0, classes="auto"), {"alpha": [0.01, 0.1]},
                          epsilon=1.0, delta=1e-3, random_state=0)


def test_dp_grid_search_charges_what_one_vs_rest_candidates_ran(fits):
    """Before: the ledger recorded ApproxDPEvent(1, 1e-3) while the candidates' events priced above 1."""
    X, y = multinomial()
    ledger = PrivacyLedger(math.inf, 1e-3)
    search = _ovr_search().fit(X, y, privacy_ledger=ledger)
    assert all(len(f.classes_) == 3 for f in fits) and len(fits) == 2
    # independent recomputation from the fitted candidates' events: parallel composition of the training
    # part (all candidates' events, composed) and the validation part (the epsilon-BR selection)
    train = price([ev for f in fits for ev in f.privacy_events_], 1e-3).budget.epsilon
    assert train > 1.0 + 1e-6, "setup: the one-vs-rest candidates no longer cost more than their plan"
    assert search.privacy_spent_.epsilon == pytest.approx(max(train, 1.0), rel=1e-12)
    assert search.privacy_spent_.delta == 1e-3
    assert ledger.n_fits == 1
    assert ledger.spent() >= search.privacy_spent_


def test_dp_grid_search_releases_nothing_when_the_ledger_cannot_cover_what_ran(fits):
    X, y = multinomial()
    ledger = PrivacyLedger(1.0, 1e-3)  # covers the plan (1, 1e-3), not what the candidates ran
    search = _ovr_search()
    with pytest.raises(BudgetExceededError, match="not released"):
        search.fit(X, y, privacy_ledger=ledger)
    assert len(fits) == 2  # the candidates ran: the charge made before the fit stays recorded
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(search))
    assert ledger.n_fits == 1 and ledger.spent().epsilon == 1.0


# ------------------------------------------------------------------ finding 5: grid values are cloned
def test_dp_grid_search_clones_estimators_given_as_grid_values(data, fits):
    """Before: both candidates fitted the grid's one scaler object, so the second fit overwrote the first's
    state and best_estimator_ could pair a scaler fitted for another candidate with the selected model."""
    X, y = data
    shared = DPStandardScaler(bounds=BOUNDS)
    search = DPGridSearchCV(_pipe(), {"scaler": [shared], "clf__alpha": [0.01, 1.0]}, epsilon=2.0,
                            random_state=0).fit(X, y)
    scalers = [f["scaler"] for f in fits]
    assert len(scalers) == 2 and scalers[0] is not scalers[1]
    assert all(s is not shared for s in scalers)
    best = search.best_estimator_["scaler"]
    assert best is scalers[search.best_index_] and best is not scalers[1 - search.best_index_]
    # the user's grid object is neither fitted nor given a budget
    assert not hasattr(shared, "mean_") and shared.get_params() == DPStandardScaler(bounds=BOUNDS).get_params()


# ------------------------------------------------------------------ the private selection
def _gumbel_scales(search, X, y):
    with record_draws() as draws:
        search.fit(X, y)
    return [d.scale for d in draws if d.kind == "gumbel"]


def test_selection_gumbel_scale_is_two_over_n_val_epsilon_for_a_classifier(data):
    X, y = data[0][:50], data[1][:50]
    # hand derivation: n = 50, validation_fraction = 0.3 -> n_val = round(15.0) = 15 validation rows; one
    # replaced row changes an accuracy on them by at most 1/15; epsilon-BR report-noisy-max needs the Gumbel
    # scale 2 s / epsilon = 2 * (1/15) / 0.5
    search = DPGridSearchCV(_clf(), {"alpha": [0.01, 1.0]}, epsilon=0.5, validation_fraction=0.3, random_state=0)
    assert _gumbel_scales(search, X, y) == [pytest.approx(2 * (1 / 15) / 0.5, rel=1e-12)]
    assert search.n_validation_ == 15


def test_selection_gumbel_scale_is_two_range_squared_over_n_val_epsilon_for_a_regressor():
    rng = np.random.RandomState(1)
    X = rng.randn(60, 3)
    y = np.clip(X[:, 0], -2.0, 2.0)
    # n = 60, validation_fraction = 0.25 -> n_val = 15; label_bound = 2 -> labels and predictions clipped to
    # [-2, 2], a squared error is at most 4^2 = 16, so one replaced row moves the mean by at most 16/15;
    # Gumbel scale 2 * (16/15) / epsilon at epsilon = 2
    search = DPGridSearchCV(DPRidge(data_norm=3.0, label_bound=2.0), {"alpha": [0.1, 1.0]}, epsilon=2.0,
                            validation_fraction=0.25, random_state=0)
    assert _gumbel_scales(search, X, y) == [pytest.approx(2 * (16 / 15) / 2.0, rel=1e-12)]


class _Rule:
    """A fitted candidate that predicts 1 where feature ``j`` is positive."""

    def __init__(self, j):
        self.j = j

    def predict(self, X):
        return (X[:, self.j] > 0).astype(int)


def _select_zero_frequency(y_val, epsilon, trials, rng):
    """How often the search's selection step picks candidate 0 on the validation rows ``(X_VAL, y_val)``."""
    picks = [search_module._private_selection([_Rule(0), _Rule(1)], X_VAL, y_val, epsilon, rng)
             for _ in range(trials)]
    return int(np.sum(np.asarray(picks) == 0))


# ten validation rows: both rules are right on eight; row 8 separates them one way, row 9 the other way
X_VAL = np.array([[1.0, 1.0]] * 8 + [[1.0, -1.0], [-1.0, 1.0]])
Y_A = np.array([1] * 10)  # rule 0 right on row 8, rule 1 right on row 9: accuracies 0.9 and 0.9
Y_B = Y_A.copy()
Y_B[8] = 0  # the neighbour (row 8 replaced): accuracies 0.8 and 1.0, each moved by 1/n_val


def _dp_violated(k_a, k_b, trials, epsilon, alpha=5e-4):
    """Whether P_a <= e^eps P_b is refuted: Clopper-Pearson lower bound of P_a above e^eps times the upper
    bound of P_b (each one-sided at ``alpha``, so a DP selection fails with probability < 2 alpha = 1e-3)."""
    lower_a = stats.beta.ppf(alpha, k_a, trials - k_a + 1)
    upper_b = stats.beta.ppf(1 - alpha, k_b + 1, trials - k_b)
    return lower_a > math.exp(epsilon) * upper_b


def test_selection_is_epsilon_dp_on_neighbouring_validation_rows(under_noise):
    """P(select 0) is 1/2 on Y_A and 1/(1 + e^eps) on Y_B at the right scale (ratio (1 + e^eps)/2 < e^eps);
    with the sensitivity computed from n = 5 n_val rows (a fifth of the noise), P_b = 1/(1 + e^(5 eps))
    and the same test refutes epsilon-DP."""
    rng = np.random.default_rng(0)
    eps, trials = 1.0, 2000
    k_a, k_b = (_select_zero_frequency(y, eps, trials, rng) for y in (Y_A, Y_B))
    assert not _dp_violated(k_a, k_b, trials, eps)
    with under_noise(1 / 5):
        k_a, k_b = (_select_zero_frequency(y, eps, trials, rng) for y in (Y_A, Y_B))
    assert _dp_violated(k_a, k_b, trials, eps)
