"""Privacy on the paths users take: secret noise, honest pipelines and searches, private fitted models.

Each test is written as an attack built from released attributes only (coefficients, fitted
attributes, what a pickle carries) together with what skdp reports. The comments say what the
attack gave against the code before these checks existed.
"""

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_regressor
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from skdp import (
    BudgetExceededError,
    DPLasso,
    DPLogisticRegression,
    DPMinMaxScaler,
    DPRidge,
    DPSparseLinearRegression,
    DPStandardScaler,
    PrivacyLeakWarning,
    PrivacyLedger,
    fit_diagnostics,
    pipeline_privacy_spent,
    set_pipeline_budget,
)
from skdp.model_selection import DPGridSearchCV, search_privacy_cost
from skdp.model_selection import _search as search_module
from skdp._random import noise_source

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


# ----------------------------------------------------------------------------- 2. honest pipelines
@pytest.fixture(scope="module")
def tabular():
    rng = np.random.RandomState(2)
    X = rng.uniform(-2, 2, size=(400, 4))
    y = (X[:, 0] + 0.5 * rng.randn(400) > 0).astype(int)
    return X, y


def test_a_non_dp_scaler_leaks_a_row_and_the_pipeline_reports_inf(tabular):
    X, y = tabular
    model = DPLogisticRegression(epsilon=1.0, data_norm=3.0, classes=[0, 1])
    pipe = make_pipeline(StandardScaler(), model)
    X2 = X.copy()
    X2[0, 0] = 400.0  # a neighbouring dataset: one row replaced
    a, b = clone(pipe).fit(X, y), clone(pipe).fit(X2, y)
    # the attack: the published scaler moves by (400 - x)/n, deterministically; no noise hides it
    assert abs(b[0].mean_[0] - a[0].mean_[0]) > 0.9
    # before: pipeline_privacy_spent reported (1, 1e-5) with no warning
    with pytest.warns(PrivacyLeakWarning, match="standardscaler"):
        assert math.isinf(pipeline_privacy_spent(a).epsilon)
    with pytest.raises(ValueError, match="standardscaler"):
        set_pipeline_budget(clone(pipe), 1.0, 1e-5)


def test_public_declaration_and_stateless_steps_restore_the_finite_value(tabular):
    X, y = tabular
    X_public = np.random.RandomState(9).uniform(-2, 2, size=(100, 4))
    frozen = FrozenEstimator(StandardScaler().fit(X_public))
    pipe = make_pipeline(frozen, FunctionTransformer(np.tanh), "passthrough",
                         DPLogisticRegression(epsilon=1.0, data_norm=3.0, classes=[0, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        pipe.fit(X, y)
        spent = pipeline_privacy_spent(pipe)
    assert spent.epsilon <= 1.0 + 1e-12
    # the frozen scaler is not refitted on the private rows
    assert np.array_equal(pipe[0].estimator.mean_, frozen.estimator.mean_)
    set_pipeline_budget(pipe, 1.0, 1e-5)


def test_a_non_dp_step_inside_a_nested_pipeline_is_seen(tabular):
    X, y = tabular
    inner = make_pipeline(FunctionTransformer(np.tanh), StandardScaler())
    pipe = make_pipeline(inner, DPLogisticRegression(epsilon=1.0, data_norm=3.0, classes=[0, 1])).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="pipeline__standardscaler"):
        assert math.isinf(pipeline_privacy_spent(pipe).epsilon)


def test_seeded_scaler_and_model_share_noise_and_are_not_composed(tabular):
    X, y = tabular
    bounds = (np.full(4, -2.0), np.full(4, 2.0))
    pipe = make_pipeline(DPStandardScaler(bounds=bounds, random_state=0),
                         DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=0))
    with pytest.raises(ValueError, match="same random_state"):
        set_pipeline_budget(clone(pipe), 1.0, 1e-5)
    pipe.fit(X, y)
    assert pipe[0].noise_source_ == pipe[1].noise_source_
    # before: reported as the composition of two independent releases
    with pytest.warns(PrivacyLeakWarning, match="same noise"):
        assert math.isinf(pipeline_privacy_spent(pipe).epsilon)
    # distinct secret seeds (or None) compose normally
    pipe.set_params(dpstandardscaler__random_state=1).fit(X, y)
    assert math.isfinite(pipeline_privacy_spent(pipe).epsilon)


@pytest.mark.parametrize("seeds", [(0, np.random.RandomState(0)),
                                   (np.random.RandomState(0), np.random.RandomState(0))],
                         ids=["int-and-RandomState", "two-RandomStates"])
def test_set_pipeline_budget_refuses_seeds_that_draw_the_same_noise(tabular, seeds):
    """Before: only equal ints (or one shared instance) were refused; 0 and RandomState(0) were accepted,
    and the fitted steps then drew the same noise."""
    X, y = tabular
    bounds = (np.full(4, -2.0), np.full(4, 2.0))
    pipe = make_pipeline(DPStandardScaler(bounds=bounds, random_state=seeds[0]),
                         DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=seeds[1]))
    assert noise_source(pipe[0]) == noise_source(pipe[1])
    with pytest.raises(ValueError, match="same random_state"):
        set_pipeline_budget(pipe, 1.0, 1e-5)
    # a generator in another state is a different source
    pipe.set_params(dplogisticregression__random_state=np.random.RandomState(1))
    set_pipeline_budget(pipe, 1.0, 1e-5)


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


# ----------------------------------------------------------------------------- 6. private fitted models
_LEAKY_NAMES = ("clipped", "kkt", "residual")


def _released(est):
    """Everything a pickled model carries: fitted attributes and solver_info_ keys."""
    state = pickle.loads(pickle.dumps(est)).__dict__
    keys = list(state) + [f"solver_info_.{k}" for k in state.get("solver_info_", {})]
    return keys, pickle.dumps(est)


@pytest.mark.parametrize("make", [
    lambda: DPLogisticRegression(data_norm=0.5, classes=[0, 1], solver="obj_pert"),
    lambda: DPRidge(data_norm=0.5, label_bound=0.5),
    lambda: DPLasso(label_bound=0.5, feature_bound=0.5),
    lambda: DPSparseLinearRegression(label_bound=0.5, feature_bound=0.5, n_nonzero_coefs=2),
    lambda: DPStandardScaler(bounds=(-1.0, 1.0)),
    lambda: DPMinMaxScaler(bounds=(-1.0, 1.0)),
], ids=["logistic-obj_pert", "ridge", "lasso", "sparse", "standard_scaler", "minmax_scaler"])
def test_a_published_model_carries_no_exact_statistics(tabular, make):
    """Before: n_rows_clipped_ told an attacker, with certainty, whether the replaced row was
    outside the bound (0 vs 1). Now no such attribute travels with the model."""
    X, y = tabular
    est = make()
    a = est.fit(X, X[:, 0] + 0.1 * y if is_regressor(est) else y)
    keys, blob = _released(a)
    assert not [k for k in keys if any(s in k for s in _LEAKY_NAMES)], keys
    # the data holder still has them, in this process only
    diag = fit_diagnostics(a)
    assert diag["n_rows_clipped"] > 0
    assert fit_diagnostics(pickle.loads(blob)) == {}
    assert fit_diagnostics(clone(a)) == {}


def test_diagnostics_of_a_pipeline_and_a_refit(tabular):
    X, y = tabular
    pipe = make_pipeline(DPStandardScaler(bounds=(-1.0, 1.0)),
                         DPLogisticRegression(data_norm=0.5, classes=[0, 1])).fit(X, y)
    d = fit_diagnostics(pipe)
    assert set(d) == {"dpstandardscaler", "dplogisticregression"}
    assert d["dpstandardscaler"]["n_rows_clipped"] == int(np.sum(np.any(np.abs(X) > 1, axis=1)))
    est = pipe[-1]
    est.set_params(data_norm=100.0).fit(X, y)  # a refit replaces the previous diagnostics
    assert fit_diagnostics(est)["n_rows_clipped"] == 0


def test_a_frozen_dp_step_is_not_refitted_but_its_release_is_counted(tabular):
    X, y = tabular
    scaler = DPStandardScaler(bounds=(-2.0, 2.0), epsilon=0.5).fit(X)
    pipe = make_pipeline(FrozenEstimator(scaler), DPLogisticRegression(data_norm=3.0, classes=[0, 1]))
    set_pipeline_budget(pipe, 1.0, 1e-5)  # the whole budget goes to the step that will fit
    assert pipe[1].epsilon == 1.0 and scaler.epsilon == 0.5
    pipe.fit(X, y)
    both = pipeline_privacy_spent(pipe)
    model_alone = pipe[1].privacy_spent_
    assert both.epsilon > model_alone.epsilon  # conservatively: the frozen scaler saw the same rows
