"""``sample_weight``, ``max_sample_weight`` and ``class_weight`` on every solver and estimator.

* Weights all equal to 1 give the unweighted fit, bit for bit, for every registered solver and every
  estimator (at max_sample_weight 1 and 2.5; the scaler except with probability 1e-6).
* The weighted scaler's total weight (a deficit released with the noise of
  ``skdp.privacy.weight_coordinate_scale``) costs nothing extra: brute-force sensitivity check, a weighted
  canary, the under-noised control and a deficit-only under-noised control.
* A weight 0 removes a row's influence: with the same seed, replacing a row of weight 0 by any other
  row leaves the fit unchanged (every solver; this runs the weighted code path of each).
* Every noise scale is proportional to ``max_sample_weight`` (``dp_gd`` and ``adassp`` against an
  independent computation of their calibration).
* A weighted canary (a row of weight ``max_sample_weight`` > 1) passes the black-box privacy test, and
  the same test catches the under-noised positive control.
"""

import math
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from skdp import (
    DPLasso,
    DPLinearSVC,
    DPLogisticRegression,
    DPRidge,
    DPSparseLinearRegression,
    DPSparseLogisticRegression,
)
from skdp.distributed import MultiPartyDPLogisticRegression
from skdp.preprocessing import DPStandardScaler
from skdp.solvers import SOLVERS, estimator_solvers

from ._helpers import CLAIM, DELTA, UNDER, canary_worlds, empirical_epsilon_lower_bound

# per-solver settings that keep the fits fast (the code paths are the defaults')
_FAST = {"dp_lssgd": {"max_iter": 20}, "rrpsgd": {"max_iter": 20}, "dp_srm": {"max_iter": 20},
         "noisy_sgd": {"max_iter": 30}, "dpsl_kt": {"solver_options": {"n_synthetic": 200}}}


def _estimator_for(name, max_sample_weight=1.0):
    """An estimator running solver ``name`` with public bounds only (no private bound selection)."""
    common = dict(solver=name, random_state=0, max_sample_weight=max_sample_weight, **_FAST.get(name, {}))
    if name in estimator_solvers(DPLogisticRegression):
        return DPLogisticRegression(data_norm=2.0, classes=[0, 1], alpha=0.1, **common), "clf"
    if name in estimator_solvers(DPRidge):
        return DPRidge(data_norm=2.0, label_bound=2.0, alpha=0.1, **common), "reg"
    if name in estimator_solvers(DPLinearSVC):
        return DPLinearSVC(data_norm=2.0, classes=[0, 1], **common), "clf"
    if name in estimator_solvers(DPSparseLinearRegression):
        params = dict(n_nonzero_coefs=2, clip_norm=1.0, label_bound=2.0)
        if name in estimator_solvers(DPSparseLogisticRegression) and name != "two_stage":
            return DPSparseLogisticRegression(classes=[0, 1], n_nonzero_coefs=2, clip_norm=1.0, **common), "clf"
        return DPSparseLinearRegression(**params, **common), "reg"
    raise AssertionError(f"no estimator runs {name}")  # pragma: no cover - test_every_solver below


def _data(kind, n=120, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-0.5, 0.5, (n, 4))
    if kind == "clf":
        return X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    return X, X @ [1.0, -1.0, 0.5, 0.0]


SOLVER_IDS = sorted(SOLVERS)


def test_every_solver_has_an_estimator_here():
    for name in SOLVER_IDS:
        _estimator_for(name)


@pytest.mark.parametrize("name", SOLVER_IDS)
def test_unit_weights_are_the_unweighted_fit(name):
    est, kind = _estimator_for(name)
    X, y = _data(kind)
    plain = est.fit(X, y).coef_.copy()
    ones = est.fit(X, y, sample_weight=np.ones(len(y))).coef_
    np.testing.assert_array_equal(plain, ones)


@pytest.mark.parametrize("name", SOLVER_IDS)
def test_a_zero_weight_removes_the_row(name):
    """Same seed, a row of weight 0 replaced by another row: the same fit (the weighted path of every solver)."""
    est, kind = _estimator_for(name, max_sample_weight=2.0)
    X, y = _data(kind)
    w = np.random.RandomState(1).uniform(0, 2, len(y))
    w[7] = 0.0
    X2, y2 = X.copy(), y.copy()
    X2[7] = [0.5, -0.5, 0.5, -0.5]
    y2[7] = 1 - y[7] if kind == "clf" else -3.0
    a = est.fit(X, y, sample_weight=w).coef_.copy()
    b = est.fit(X2, y2, sample_weight=w).coef_
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_multi_party_and_scaler_unit_and_zero_weights():
    X, y = _data("clf", n=300)
    for solver in ("mpc_grad_pert", "mpc_output_pert"):
        est = MultiPartyDPLogisticRegression(solver=solver, classes=[0, 1], n_parties=3, random_state=0,
                                             max_sample_weight=2.0)
        np.testing.assert_array_equal(est.fit(X, y).coef_, est.fit(X, y, sample_weight=np.ones(300)).coef_)
        w = np.full(300, 2.0)
        w[5] = 0.0
        X2, y2 = X.copy(), y.copy()
        X2[5], y2[5] = [0.5, 0.5, 0.5, 0.5], 1 - y[5]
        np.testing.assert_allclose(est.fit(X, y, sample_weight=w).coef_, est.fit(X2, y2, sample_weight=w).coef_,
                                   rtol=1e-9, atol=1e-12)
    sc = DPStandardScaler(bounds=(-1.0, 1.0), random_state=0, max_sample_weight=2.0)
    w = np.full(300, 2.0)
    w[5] = 0.0
    a = sc.fit(X, sample_weight=w).mean_.copy()
    b = sc.fit(np.where(np.arange(300)[:, None] == 5, 0.9, X), sample_weight=w).mean_
    np.testing.assert_allclose(a, b, rtol=1e-12)


def _unit_weight_cases():
    """One fit per estimator (its default solver), and the scaler's other release paths."""
    from skdp.model_selection import DPGridSearchCV

    return [
        ("DPLogisticRegression", "clf", lambda W: DPLogisticRegression(data_norm=2.0, classes=[0, 1], max_sample_weight=W)),
        ("DPRidge", "reg", lambda W: DPRidge(data_norm=2.0, label_bound=2.0, max_sample_weight=W)),
        ("DPLasso", "reg", lambda W: DPLasso(label_bound=2.0, max_iter=30, max_sample_weight=W)),
        ("DPLinearSVC", "clf", lambda W: DPLinearSVC(data_norm=2.0, classes=[0, 1], max_sample_weight=W)),
        ("DPSparseLinearRegression", "reg", lambda W: DPSparseLinearRegression(
            n_nonzero_coefs=2, clip_norm=1.0, label_bound=2.0, max_sample_weight=W)),
        ("DPSparseLogisticRegression", "clf", lambda W: DPSparseLogisticRegression(
            classes=[0, 1], n_nonzero_coefs=2, clip_norm=1.0, max_sample_weight=W)),
        ("MultiPartyDPLogisticRegression", "clf", lambda W: MultiPartyDPLogisticRegression(
            classes=[0, 1], n_parties=2, max_sample_weight=W)),
        ("DPGridSearchCV", "reg", lambda W: DPGridSearchCV(
            DPRidge(data_norm=2.0, label_bound=2.0, max_sample_weight=W), {"alpha": [0.1, 1.0]})),
        ("DPStandardScaler", None, lambda W: DPStandardScaler(bounds=(-1.0, 1.0), max_sample_weight=W)),
        ("DPStandardScaler-auto", None, lambda W: DPStandardScaler(clip_norm="auto", max_sample_weight=W)),
        ("DPStandardScaler-pure", None, lambda W: DPStandardScaler(bounds=(-1.0, 1.0), delta=0.0,
                                                                    max_sample_weight=W)),
    ]


UNIT_CASES = _unit_weight_cases()
_FITTED = ("coef_", "intercept_", "mean_", "var_", "scale_", "n_samples_seen_", "bounds_", "n_iter_")


@pytest.mark.filterwarnings("ignore:.*rows are too few for private quantiles:UserWarning")
@pytest.mark.parametrize("W", [1.0, 2.5])
@pytest.mark.parametrize("name, kind, make", UNIT_CASES, ids=[c[0] for c in UNIT_CASES])
def test_every_estimator_unit_weights_are_the_unweighted_fit(name, kind, make, W):
    """Every estimator, at max_sample_weight 1 and above: weights all 1 give the fit without weights, bit for bit
    (the scaler: except with probability 1e-6, the tail of its deficit noise beyond the public threshold)."""
    X, y = _data(kind or "reg")
    args = (X,) if kind is None else (X, y)
    plain = make(W).set_params(random_state=0).fit(*args)
    ones = make(W).set_params(random_state=0).fit(*args, sample_weight=np.ones(len(X)))
    other = make(W).set_params(random_state=0).fit(*args, sample_weight=np.full(len(X), 0.5))  # can fail
    est_of = (lambda e: e.best_estimator_) if name == "DPGridSearchCV" else (lambda e: e)
    compared = [k for k in _FITTED if hasattr(est_of(plain), k)]
    assert {"coef_", "mean_"} & set(compared)
    for key in compared:
        a, b = getattr(est_of(plain), key), getattr(est_of(ones), key)
        np.testing.assert_equal(b, a, err_msg=f"{name}.{key}")
    assert ones.privacy_spent_ == plain.privacy_spent_
    main = "coef_" if "coef_" in compared else "mean_"
    assert not np.array_equal(getattr(est_of(other), main), getattr(est_of(plain), main))


def test_scaler_noise_is_proportional_to_max_sample_weight_with_or_without_weights():
    """As every estimator: the scaler's sensitivities are W times the unweighted ones, weights given or not."""
    X, _ = _data("reg", n=300)
    scales = {}
    for W in (1.0, 3.0):
        for weighted in (False, True):
            sc = DPStandardScaler(bounds=(-1.0, 1.0), random_state=0, max_sample_weight=W)
            fitted = sc.fit(X, sample_weight=np.ones(300) if weighted else None)
            scales[W, weighted] = fitted.noise_scale_
            assert fitted.privacy_events_ == sc.planned_events(*X.shape)
            assert fitted.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
    np.testing.assert_allclose(scales[3.0, False], 3.0 * scales[1.0, False], rtol=1e-12)
    np.testing.assert_array_equal(scales[3.0, True], scales[3.0, False])
    d = X.shape[1]
    expected = 3.0 * math.sqrt(d) / 300 / (_mu(1.0, 1e-5) * math.sqrt(0.85))  # mean release: share 0.85 of mu^2
    assert scales[3.0, False][0] == pytest.approx(expected, rel=1e-6)


def test_scaler_total_weight_estimate():
    """n_samples_seen_ is the estimated total weight: unbiased away from n, exactly n for unit weights."""
    X, _ = _data("reg", n=400)
    w = np.random.RandomState(5).uniform(0.0, 1.0, 400)
    totals = [DPStandardScaler(bounds=(-1.0, 1.0), random_state=s).fit(X, sample_weight=w).n_samples_seen_
              for s in range(60)]
    sc = DPStandardScaler(bounds=(-1.0, 1.0))
    sens = sc._sensitivities(4, 400, None, 1.0)
    std = sc._deficit_scale(sens[0], sc._events(sens, 4)[1][0], 4, 400, None) * 400
    assert std == pytest.approx((2 / math.sqrt(3)) / (_mu(1.0, 1e-5) * math.sqrt(0.85)), rel=1e-6)
    assert abs(np.mean(totals) - w.sum()) < 4 * std / math.sqrt(60)
    assert np.std(totals) == pytest.approx(std, rel=0.35)


@pytest.mark.parametrize("gaussian", [True, False], ids=["gaussian", "l2-laplace"])
def test_weight_coordinate_scale_prices_the_pair_as_the_release_alone(gaussian):
    """Brute force over rows (w, u) -> (w', u'): the pair (sum w u + noise, sum (1 - w) + noise') is never more
    distinguishable than the release alone at its sensitivity S = W sqrt(d) (box rows), and as much at the
    vertex w = W, w' = 0 with ||u|| = sqrt(d)/2: the extra coordinate is free and the scale is the largest so."""
    from skdp.privacy import weight_coordinate_scale

    rng = np.random.RandomState(0)
    d, W, sigma = 3, 2.0, 0.7
    S, r = W * math.sqrt(d), W * math.sqrt(d) / 2
    extra = weight_coordinate_scale(sigma, S, r, W, gaussian=gaussian)

    def distance(w, u, w2, u2):
        dv, de = w * u - w2 * u2, w - w2
        if gaussian:
            return math.sqrt(dv @ dv / sigma**2 + de**2 / extra**2)
        return np.linalg.norm(dv) / sigma + abs(de) / extra

    worst = 0.0
    for _ in range(4000):
        u, u2 = rng.uniform(-0.5, 0.5, (2, d))
        if rng.rand() < 0.5:  # also the box's corners
            u, u2 = np.sign(u) / 2, np.sign(u2) / 2
        w, w2 = rng.choice([0.0, W, rng.uniform(0, W)]), rng.choice([0.0, W, rng.uniform(0, W)])
        worst = max(worst, distance(w, u, w2, u2))
    assert worst <= S / sigma * (1 + 1e-12)
    assert distance(W, np.full(d, 0.5), 0.0, np.zeros(d)) == pytest.approx(S / sigma, rel=1e-12)
    assert distance(W, np.full(d, 0.5), W, np.full(d, -0.5)) == pytest.approx(S / sigma, rel=1e-12)


# --- the weighted scaler's canary: a row of weight W against one of weight 0 (the deficit's worst case) ----------
def _scaler_canary_scores(n_fits=300):
    """Scores of a canary of weight 0 / W at ``u = +1/2`` (one feature), from ``mean_`` and ``n_samples_seen_``.

    ``"joint"``: ``2 m - 3 e``, the likelihood-ratio direction of the released pair when it is calibrated
    as claimed (``m`` the noisy weighted mean of ``u``, ``e`` the noisy deficit, both read back from the
    fitted attributes; the background weights keep the deficit far beyond the threshold); ``"deficit"``:
    ``e`` alone, the direction that sees a deficit noised too little. ``{name: (world 0, world 1)}``.
    """
    rng = np.random.RandomState(0)
    n = 400
    X = rng.uniform(-1.0, 1.0, (n, 1))
    X[-1] = 1.0
    out = {"joint": [], "deficit": []}
    for canary_weight in (0.0, W_CANARY):
        w = np.random.RandomState(1).uniform(1.0, 2.0, n)
        w[-1] = canary_weight
        joint, deficit = [], []
        for seed in range(n_fits):
            sc = DPStandardScaler(epsilon=CLAIM, delta=DELTA, bounds=(-1.0, 1.0), max_sample_weight=W_CANARY,
                                  random_state=seed).fit(X, sample_weight=w)
            t = sc.n_samples_seen_ / n
            m = ((sc.mean_[0] + 1.0) / 2.0 - 0.5) * t
            joint.append(2 * m - 3 * (1.0 - t))
            deficit.append(1.0 - t)
        out["joint"].append(np.array(joint))
        out["deficit"].append(np.array(deficit))
    return out


def test_weighted_scaler_canary_within_claim():
    for name, (s0, s1) in _scaler_canary_scores().items():
        eps_lb = empirical_epsilon_lower_bound(s0, s1)
        assert eps_lb <= CLAIM, f"weighted scaler ({name}): empirical epsilon lower bound {eps_lb:.3f} > {CLAIM}"


def test_weighted_scaler_canary_catches_the_under_noised_control(under_noise):
    with under_noise(1 / UNDER):
        scores = _scaler_canary_scores()
    for name, (s0, s1) in scores.items():
        assert empirical_epsilon_lower_bound(s0, s1) > CLAIM, name


def test_weighted_scaler_canary_catches_an_under_noised_deficit(monkeypatch):
    """Only the deficit's noise too small (the means' as claimed): the deficit's score sees it."""
    scale = DPStandardScaler._deficit_scale
    monkeypatch.setattr(DPStandardScaler, "_deficit_scale", lambda self, *args: scale(self, *args) / UNDER)
    s0, s1 = _scaler_canary_scores()["deficit"]
    assert empirical_epsilon_lower_bound(s0, s1) > CLAIM


def _mu(epsilon, delta):
    """Gaussian-DP mu with (epsilon, delta) on its privacy profile (Dong, Roth and Su 2022, Cor. 2.13)."""
    def profile(mu):
        return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2)
    return optimize.brentq(lambda mu: profile(mu) - delta, 1e-6, 50.0, xtol=1e-14)


@pytest.mark.parametrize("W", [1.0, 3.0])
def test_dp_gd_sigma_is_proportional_to_max_sample_weight(W):
    """sigma = 2 W G sqrt(T) / (n mu): the per-example bound G = K/2 (initial clip), times W."""
    X, y = _data("clf", n=400)
    est = DPLogisticRegression(epsilon=1.0, data_norm=2.0, classes=[0, 1], solver="dp_gd", max_iter=10,
                               random_state=0, max_sample_weight=W).fit(X, y)
    expected = 2 * W * (2.0 / 2) * math.sqrt(10) / (400 * _mu(1.0, 1e-5))
    assert est.noise_scale_ == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("W", [1.0, 2.5])
def test_adassp_sigmas_are_proportional_to_max_sample_weight(W):
    """AdaSSP: three releases, sensitivities W (K^2, sqrt(2) K^2, 2 K B), each mu/sqrt(3)-GDP."""
    X, y = _data("reg", n=400)
    est = DPRidge(epsilon=1.0, data_norm=2.0, label_bound=2.0, solver="adassp", random_state=0,
                  max_sample_weight=W).fit(X, y)
    mu = _mu(1.0, 1e-5)
    # the solver works in units where |y| <= 1 (labels divided by the public bound)
    expected_xx = W * math.sqrt(2) * 2.0**2 * math.sqrt(3) / mu
    assert est.noise_scale_ == pytest.approx(expected_xx, rel=1e-6)
    sens = [ev.sensitivity for ev in est.privacy_events_]
    np.testing.assert_allclose(sens, [W * 4.0, W * math.sqrt(2) * 4.0, W * 2 * 2.0 * 1.0])


# solvers whose released noise scale is linear in the per-example bound at a fixed schedule (the others
# change a step size or a data-independent ridge term with W, so their noise is not simply W times larger)
_LINEAR = ["dp_gd", "dp_svrg", "dp_svrg_pp", "noisy_sgd", "nsgd_moreau", "dp_lssgd", "rrpsgd", "dp_srm",
           "obj_pert", "adassp", "dp_accmd", "noisy_sfw", "noisy_sfw_lp", "dp_ight", "dp_fw_l1"]


@pytest.mark.parametrize("name", _LINEAR)
def test_noise_scale_is_proportional_to_max_sample_weight(name):
    scales = []
    for W in (1.0, 3.0):
        est, kind = _estimator_for(name, max_sample_weight=W)
        X, y = _data(kind)
        scales.append(np.asarray(est.fit(X, y).noise_scale_, float))
    np.testing.assert_allclose(scales[1], 3.0 * scales[0], rtol=1e-6)


def test_every_solver_prices_the_same_budget_for_any_weight_bound():
    """The events change with W (sensitivities and scales), the accountant's price does not."""
    for name in SOLVER_IDS:
        spent = []
        for W in (1.0, 4.0):
            est, kind = _estimator_for(name, max_sample_weight=W)
            X, y = _data(kind)
            spent.append(est.fit(X, y).privacy_spent_.epsilon)
        assert spent[1] == pytest.approx(spent[0], rel=1e-9), name
        assert spent[1] <= 1.0 + 1e-9


# --- the weighted canary --------------------------------------------------------------------------------------
W_CANARY = 3.0


def _weighted_canary_scores(solver, n_fits=300):
    """Scores of the canary direction; the canary row has weight W_CANARY, the others weights in [0, W]."""
    out = []
    for X, y in canary_worlds("clf"):
        w = np.random.RandomState(2).uniform(0.0, W_CANARY, len(y))
        w[-1] = W_CANARY
        scores = []
        for seed in range(n_fits):
            est = DPLogisticRegression(epsilon=CLAIM, delta=DELTA, solver=solver, alpha=0.1, data_norm=1.0,
                                       classes=[0, 1], fit_intercept=False, random_state=seed,
                                       max_iter=3 if solver != "output_pert" else 20,
                                       max_sample_weight=W_CANARY)
            scores.append(est.fit(X, y, sample_weight=w).coef_.ravel()[2])
        out.append(np.array(scores))
    return out


@pytest.mark.parametrize("solver", ["dp_gd", "output_pert"])
def test_weighted_canary_within_claim(solver):
    s0, s1 = _weighted_canary_scores(solver)
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb <= CLAIM, f"{solver}: empirical epsilon lower bound {eps_lb:.3f} > claim {CLAIM}"


@pytest.mark.parametrize("solver", ["dp_gd"])
def test_weighted_canary_catches_the_under_noised_control(solver, under_noise):
    with under_noise(1 / UNDER):
        s0, s1 = _weighted_canary_scores(solver)
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb > CLAIM, f"{solver}: the weighted canary did not detect an under-noised solver ({eps_lb:.3f})"


# --- class_weight and the parameter checks ------------------------------------------------------------------
@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearSVC, DPSparseLogisticRegression])
def test_class_weight_is_a_per_class_sample_weight(cls):
    """class_weight={1: 2} is sample_weight 2 on class 1 with the same weight bound, bit for bit."""
    X, y = _data("clf")
    params = dict(classes=[0, 1], random_state=0)
    if cls is not DPSparseLogisticRegression:
        params["data_norm"] = 2.0
    a = cls(class_weight={1: 2.0}, **params).fit(X, y).coef_
    b = cls(max_sample_weight=2.0, **params).fit(X, y, sample_weight=np.where(y == 1, 2.0, 1.0)).coef_
    np.testing.assert_array_equal(a, b)


def test_balanced_class_weight_is_refused_before_the_data():
    X, y = _data("clf")
    for est in (DPLogisticRegression(class_weight="balanced"), DPLinearSVC(class_weight="balanced"),
                DPSparseLogisticRegression(class_weight="balanced"),
                MultiPartyDPLogisticRegression(class_weight="balanced")):
        with pytest.raises(ValueError, match="class_weight='balanced'.*private"):
            est.fit(X, y)


def test_weights_above_the_bound_are_clipped_with_a_warning_and_nothing_stored():
    X, y = _data("clf")
    w = np.ones(len(y))
    w[:3] = 10.0
    est = DPLogisticRegression(data_norm=2.0, classes=[0, 1], random_state=0, max_sample_weight=2.0)
    with pytest.warns(UserWarning, match="clipped"):
        clipped = est.fit(X, y, sample_weight=w).coef_.copy()
    w2 = np.minimum(w, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(clipped, est.fit(X, y, sample_weight=w2).coef_)
    assert not [k for k in vars(est) if "weight" in k and k.endswith("_")]  # no count of clipped weights
    assert np.array_equal(w[:3], [10.0] * 3)  # the caller's array is untouched


@pytest.mark.parametrize("est", [DPLogisticRegression(data_norm=2.0, classes=[0, 1]), DPRidge(data_norm=2.0, label_bound=2.0),
                                 DPLasso(label_bound=2.0), DPStandardScaler(bounds=(-1, 1))],
                         ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("bad, match", [(-1.0, "non-negative"), (np.nan, "NaN"), ("short", "sample")])
def test_bad_sample_weight_is_named(est, bad, match):
    X, y = _data("clf" if isinstance(est, DPLogisticRegression) else "reg")
    if isinstance(bad, str):
        w = np.ones(len(y) - 1)
    else:
        w = np.ones(len(y))
        w[4] = bad
    fit = (lambda: est.fit(X, sample_weight=w)) if isinstance(est, DPStandardScaler) else (
        lambda: est.fit(X, y, sample_weight=w))
    with pytest.raises(ValueError, match=match):
        fit()


def test_class_weight_labels_must_be_classes():
    X, y = _data("clf")
    with pytest.raises(ValueError, match="class_weight has labels that are not classes"):
        DPLogisticRegression(data_norm=2.0, classes=[0, 1], class_weight={5: 2.0}).fit(X, y)
    with pytest.raises(ValueError, match="class_weight must map labels to finite non-negative"):
        DPLogisticRegression(data_norm=2.0, classes=[0, 1], class_weight={1: -1.0}).fit(X, y)


@pytest.mark.parametrize("value", [0.0, -1.0, math.inf])
def test_bad_max_sample_weight_is_named(value):
    X, y = _data("clf")
    with pytest.raises(ValueError, match="max_sample_weight"):
        DPLogisticRegression(data_norm=2.0, classes=[0, 1], max_sample_weight=value).fit(X, y)


# --- metadata routing -----------------------------------------------------------------------------------------
def test_pipeline_routes_sample_weight_to_the_steps_that_request_it():
    import sklearn
    from sklearn.pipeline import make_pipeline

    X, y = _data("clf", n=200)
    w = np.random.RandomState(3).uniform(0, 2, len(y))
    scaler = DPStandardScaler(bounds=(-1.0, 1.0), random_state=0, max_sample_weight=2.0)
    clf = DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=0, max_sample_weight=2.0)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(clone_with(scaler, sample_weight=True), clone_with(clf, sample_weight=True))
        pipe.fit(X, y, sample_weight=w)
        only_model = make_pipeline(clone_with(scaler, sample_weight=False), clone_with(clf, sample_weight=True))
        only_model.fit(X, y, sample_weight=w)
    by_hand = scaler.fit(X, sample_weight=w)
    np.testing.assert_array_equal(pipe[-1].coef_, clf.fit(by_hand.transform(X), y, sample_weight=w).coef_)
    unweighted_scaler = DPStandardScaler(bounds=(-1.0, 1.0), random_state=0, max_sample_weight=2.0).fit(X)
    np.testing.assert_array_equal(only_model[0].mean_, unweighted_scaler.mean_)
    np.testing.assert_array_equal(only_model[-1].coef_,
                                  clf.fit(unweighted_scaler.transform(X), y, sample_weight=w).coef_)


def clone_with(est, **request):
    from sklearn.base import clone

    return clone(est).set_fit_request(**request)


def test_grid_search_routes_sample_weight():
    import sklearn
    from sklearn.exceptions import UnsetMetadataPassedError

    from skdp.model_selection import DPGridSearchCV

    X, y = _data("reg", n=300)
    w = np.random.RandomState(4).uniform(0, 2, len(y))
    base = DPRidge(data_norm=2.0, label_bound=2.0, max_sample_weight=2.0)
    grid = {"alpha": [0.1, 1.0]}
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
            DPGridSearchCV(base, grid, random_state=0).fit(X, y, sample_weight=w)
        routed = DPGridSearchCV(clone_with(base, sample_weight=True), grid, random_state=0).fit(X, y, sample_weight=w)
        with pytest.raises(TypeError, match="not routed"):  # declined by every step: sklearn refuses it
            DPGridSearchCV(clone_with(base, sample_weight=False), grid, random_state=0).fit(X, y, sample_weight=w)
    plain = DPGridSearchCV(base, grid, random_state=0).fit(X, y)
    passed = DPGridSearchCV(base, grid, random_state=0).fit(X, y, sample_weight=w)  # routing off: to fit
    np.testing.assert_array_equal(routed.best_estimator_.coef_, passed.best_estimator_.coef_)
    assert not np.array_equal(routed.best_estimator_.coef_, plain.best_estimator_.coef_)
    assert routed.privacy_spent_.epsilon <= 1.0
