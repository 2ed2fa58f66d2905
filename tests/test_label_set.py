"""classes="auto": the private label-set selections (Laplace and Gaussian thresholding, replace-one) and their use by the classifiers."""

import functools
import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from skdp import DPLinearSVC, DPLogisticRegression, DPSparseLogisticRegression, PrivacyLedger, PrivacyLeakWarning
from skdp.distributed import MultiPartyDPLogisticRegression
from skdp.privacy import ApproxDPEvent, price
from skdp._classes import class_selection_budget, class_selection_events
from skdp.privacy.label_set import (gaussian_keep_probability, gaussian_label_set_events,
                                    gaussian_label_set_threshold, label_set_delta, label_set_threshold,
                                    laplace_keep_probability, private_label_set, private_label_set_gaussian)
from skdp.privacy.mechanisms import record_draws


# -- the mechanism -------------------------------------------------------------------------------
@pytest.mark.parametrize("eps, delta, tau", [(0.1, 1e-6, 263.447268), (1.0, 1e-5, 22.639557),
                                             (1.0, 1e-6, 27.244727), (0.5, 1e-8, 71.910134)])
def test_threshold_vectors_and_exact_replace_one_delta(eps, delta, tau):
    b, t = label_set_threshold(eps, delta)
    assert b == pytest.approx(2.0 / eps) and t == pytest.approx(tau, abs=1e-6)
    keep = functools.partial(laplace_keep_probability, b=b, tau=t)
    top = int(t + 60 * b)
    # the calibration is exactly (eps, delta) under replace-one, and tight: less epsilon needs more delta
    assert label_set_delta(eps, keep, top) == pytest.approx(delta, rel=1e-9)
    assert label_set_delta(0.999 * eps, keep, top) > 2 * delta
    # the add/remove calibration (half the scale and margin) is not enough under replace-one
    b_ar, t_ar = 1.0 / eps, 1.0 + math.log(1.0 / (2.0 * delta)) / eps
    assert label_set_delta(eps, functools.partial(laplace_keep_probability, b=b_ar, tau=t_ar), top) > 10 * delta


def test_bad_selection_budgets_are_refused():
    with pytest.raises(ValueError, match="delta"):
        label_set_threshold(1.0, 0.0)
    with pytest.raises(ValueError, match="1 - exp"):
        label_set_threshold(0.1, 0.1)


def test_absent_labels_never_and_noise_off_gives_exact_threshold(under_noise):
    y = np.repeat([3, 5, 7, 9], [30, 23, 22, 1])
    _, tau = label_set_threshold(1.0, 1e-5)  # 22.64
    rng = np.random.RandomState(0)
    with under_noise(1e-9):
        labels, event = private_label_set(y, 1.0, 1e-5, rng)
    assert labels.tolist() == [3, 5] and event == ApproxDPEvent(1.0, 1e-5)
    seen = set()
    for _ in range(300):
        seen.update(private_label_set(y, 1.0, 1e-5, rng)[0].tolist())
    assert seen <= {3, 5, 7, 9}


def test_noise_is_drawn_and_recorded_at_the_calibrated_scale():
    with record_draws() as draws:
        private_label_set(np.array(["a", "b", "b"]), 0.5, 1e-6, np.random.RandomState(0))
    assert [(d.kind, d.scale, d.size) for d in draws] == [("laplace", 4.0, 2)]


def _neighbour_attack(rng, trials, eps=1.0, delta=1e-3):
    """Frequency of E = {a dropped, b kept} on D (counts c_a, c_b) and on its replace-one neighbour D'
    (one row relabelled a -> b): the event whose likelihood ratio is e^eps exactly (both counts move)."""
    _, tau = label_set_threshold(eps, delta)
    c_a, c_b = int(math.ceil(tau)) + 1, int(math.floor(tau)) - 2
    D = np.repeat(["a", "b", "z"], [c_a, c_b, 500])
    D2 = np.repeat(["a", "b", "z"], [c_a - 1, c_b + 1, 500])

    def freq(y):
        hits = 0
        for _ in range(trials):
            out = set(private_label_set(y, eps, delta, rng)[0].tolist())
            hits += ("a" not in out) and ("b" in out)
        return hits / trials

    p, p2 = freq(D), freq(D2)
    se = math.sqrt(p2 * (1 - p2) / trials + math.e**2 * p * (1 - p) / trials)
    return p2 - (math.exp(eps) * p + delta), se


def test_neighbouring_datasets_respect_the_guarantee_and_an_under_noised_selection_does_not(under_noise):
    rng = np.random.RandomState(1)
    excess, se = _neighbour_attack(rng, 12000)
    assert excess <= 4 * se  # P_D'(E) <= e^eps P_D(E) + delta (tight: excess is about 0)
    with under_noise(0.5):  # positive control: the same attack detects half the noise
        excess, se = _neighbour_attack(rng, 12000)
    assert excess > 6 * se


# -- the Gaussian selection (what the classifiers use) ---------------------------------------------
class _Auto:
    classes = "auto"

    def __init__(self, epsilon, delta):
        self.epsilon, self.delta = epsilon, delta


@pytest.mark.parametrize("eps, delta, n", [(1.0, 1e-5, 1000), (0.5, 1e-6, 1000), (2.0, 1e-5, 50_000),
                                           (5.0, 1e-8, 300)])
def test_gaussian_selection_price_covers_the_exact_replace_one_profile(eps, delta, n):
    """The accountant's price of the selection's events, checked against the exact hockey-stick divergence
    of what is released (two labels' keep / drop bits, every pair of counts): an independent computation."""
    sigma, delta_sel = class_selection_budget(_Auto(eps, delta), n)
    tau = gaussian_label_set_threshold(sigma, delta_sel)
    assert tau == pytest.approx(1.0 + sigma * stats_isf(delta_sel), rel=1e-12)
    events = class_selection_events(_Auto(eps, delta), n)
    assert events == gaussian_label_set_events(sigma, delta_sel)
    spent = price(events, delta).budget.epsilon
    top = int(tau + 12 * sigma)  # beyond, a label is kept with probability 1 - 1e-33
    exact = label_set_delta(spent, functools.partial(gaussian_keep_probability, sigma=sigma, tau=tau), top)
    assert exact <= delta
    # a selection that drew half the noise it is priced at violates the same claim
    half = label_set_delta(spent, functools.partial(gaussian_keep_probability, sigma=sigma / 2, tau=tau), top)
    assert half > 10 * delta
    # a label carried by one row is released with probability delta_sel exactly
    assert gaussian_keep_probability([1], sigma, tau)[0][0] == pytest.approx(delta_sel, rel=1e-9)


def stats_isf(p):
    from scipy import stats
    return float(stats.norm.isf(p))


def test_gaussian_selection_is_cheaper_than_the_laplace_quarter_and_keeps_more():
    """At (1, 1e-5) the solver keeps more than 0.9 of its GDP budget, and the threshold is lower than
    the Laplace selection's at a quarter of epsilon (which left the solver 0.75 of epsilon)."""
    from skdp.privacy import gdp_mu
    sigma, delta_sel = class_selection_budget(_Auto(1.0, 1e-5), 1000)
    mu_total, mu_sel = gdp_mu(1.0, 1e-5 - delta_sel), math.sqrt(2) / sigma
    assert math.sqrt(mu_total**2 - mu_sel**2) / mu_total > 0.9
    assert gaussian_label_set_threshold(sigma, delta_sel) < label_set_threshold(0.25, 0.5e-5)[1]


def _gaussian_attack(rng, trials, sigma, tau, eps, delta, worst_sigma):
    """Frequency of E = {a dropped, b kept} on D and on D' (one row relabelled a -> b), for the pair of
    counts where E is most revealing at noise ``worst_sigma``; returns P_D'(E) - e^eps P_D(E) - delta."""
    c = np.arange(1, int(tau + 10 * sigma))
    keep = lambda k: gaussian_keep_probability(k, worst_sigma, tau)  # noqa: E731
    gain = keep(c[:, None] - 1)[1] * keep(c[None, :] + 1)[0] - math.exp(eps) * keep(c[:, None])[1] * keep(c[None, :])[0]
    i, j = np.unravel_index(np.argmax(gain), gain.shape)
    c_a, c_b = int(c[i]), int(c[j])
    D = np.repeat(["a", "b", "z"], [c_a, c_b, 5000])
    D2 = np.repeat(["a", "b", "z"], [c_a - 1, c_b + 1, 5000])

    def freq(y):
        hits = 0
        for _ in range(trials):
            out = set(private_label_set_gaussian(y, sigma, delta_sel_of(sigma, tau), rng)[0].tolist())
            hits += ("a" not in out) and ("b" in out)
        return hits / trials

    p, p2 = freq(D), freq(D2)
    se = math.sqrt(p2 * (1 - p2) / trials + math.exp(2 * eps) * p * (1 - p) / trials)
    return p2 - (math.exp(eps) * p + delta), se


def delta_sel_of(sigma, tau):
    from scipy import stats
    return float(stats.norm.sf((tau - 1.0) / sigma))


def test_gaussian_selection_on_neighbours_and_an_under_noised_control(under_noise):
    eps, delta = 1.0, 1e-3
    sigma, delta_sel = class_selection_budget(_Auto(eps, delta), 300)
    tau = gaussian_label_set_threshold(sigma, delta_sel)
    claim = price(gaussian_label_set_events(sigma, delta_sel), delta).budget.epsilon
    rng = np.random.RandomState(3)
    excess, se = _gaussian_attack(rng, 6000, sigma, tau, claim, delta, sigma)
    assert excess <= 4 * se
    with under_noise(0.3):  # positive control: the same attack, built for the weaker noise, detects it
        excess, se = _gaussian_attack(rng, 6000, sigma, tau, claim, delta, 0.3 * sigma)
    assert excess > 6 * se


def test_gaussian_selection_draws_are_recorded_at_the_calibrated_scale():
    with record_draws() as draws:
        private_label_set_gaussian(np.array(["a", "b", "b"]), 7.5, 1e-6, np.random.RandomState(0))
    assert [(d.kind, d.scale, d.size) for d in draws] == [("gaussian", 7.5, 2)]


# -- the classifiers ----------------------------------------------------------------------------
@pytest.fixture
def three_labels():
    rng = np.random.RandomState(0)
    X = rng.randn(600, 4)
    y = np.where(X[:, 0] + 0.3 * rng.randn(600) > 0, "pos", "neg").astype(object)
    y[:3] = "rare"  # 3 rows: never selected at epsilon=1
    return X, y


def test_default_is_private_priced_and_planned(three_labels):
    X, y = three_labels
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        clf = DPLogisticRegression(random_state=0).fit(X, y)
    assert clf.classes_.tolist() == ["neg", "pos"]
    selection = gaussian_label_set_events(*class_selection_budget(_Auto(1.0, 1e-5), X.shape[0]))
    assert all(ev in clf.privacy_events_ for ev in selection)
    assert math.isfinite(clf.privacy_spent_.epsilon) and clf.privacy_spent_.epsilon <= 1.0 + 1e-9
    planned = clf.planned_events(*X.shape)
    assert all(ev in planned for ev in selection)
    assert price(planned, 1e-5).budget.epsilon == pytest.approx(clf.privacy_spent_.epsilon, rel=1e-6)
    assert not any(np.issubdtype(type(v), np.integer) and v in (3, 297, 300) for v in vars(clf).values())


def test_ledger_is_charged_the_selection_before_the_data(three_labels, tmp_path):
    X, y = three_labels
    ledger = PrivacyLedger(1.0, 1e-5, path=tmp_path / "l.json")
    DPLogisticRegression(random_state=0).fit(X, y, privacy_ledger=ledger)
    assert ledger.spent().epsilon <= 1.0 + 1e-9
    with pytest.raises(Exception, match="budget|exceed"):
        DPLogisticRegression(random_state=1).fit(X, y, privacy_ledger=ledger)


def test_unselected_rows_are_kept_but_contribute_nothing(three_labels):
    """An attacker who knows the model cannot tell what features the unselected rows had: the fit is the same."""
    X, y = three_labels
    X2 = X.copy()
    X2[:3] = 50.0 * np.random.RandomState(5).randn(3, 4)  # change only the rows whose label is not selected
    for cls, kw in [(DPLogisticRegression, {}), (DPSparseLogisticRegression, {"clip_norm": 1.0})]:
        kw = {**kw, "random_state": 0}
        if cls is DPLogisticRegression:
            kw["data_norm"] = 4.0
        a, b = cls(**kw).fit(X, y), cls(**kw).fit(X2, y)
        assert a.classes_.tolist() == ["neg", "pos"]
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_array_equal(a.intercept_, b.intercept_)
        assert a.privacy_events_ == b.privacy_events_


def test_multiclass_and_sparse_input_with_auto():
    import scipy.sparse as sp

    rng = np.random.RandomState(0)
    X = rng.randn(900, 3)
    y = np.argmax(X + 0.2 * rng.randn(900, 3), axis=1)
    clf = DPLogisticRegression(epsilon=2.0, random_state=0).fit(sp.csr_matrix(X), y)
    assert clf.classes_.tolist() == [0, 1, 2] and clf.coef_.shape == (3, 3)
    assert clf.privacy_spent_.epsilon <= 2.0 + 1e-9


def test_delta_zero_with_auto_fails_before_the_data_is_read():
    for est in [DPLogisticRegression(delta=0.0), DPSparseLogisticRegression(delta=0.0, solver="dp_fw_l1"),
                MultiPartyDPLogisticRegression(delta=0.0, solver="mpc_output_pert", alpha=0.1)]:
        with pytest.raises(ValueError, match="classes"):
            est.fit("not data", None)
        with pytest.raises(ValueError, match="classes"):
            est.planned_events(100, 3)


def test_too_few_or_too_many_selected_labels_are_clear_errors():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 2)
    with pytest.raises(ValueError, match="classes='auto' selected 0"):
        DPLogisticRegression(random_state=0).fit(X, np.repeat([0, 1], 30))  # 30 rows per label: below 71
    X = rng.randn(900, 2)
    y = np.repeat([0, 1, 2], 300)
    for est in [DPLinearSVC(random_state=0), DPSparseLogisticRegression(random_state=0)]:
        est.fit(X, y)  # three selected labels: one-vs-rest (tests/test_ovr.py), no longer an error
        assert est.classes_.tolist() == [0, 1, 2] and est.coef_.shape == (3, 2)
        assert est.privacy_spent_.epsilon <= 1.0 + 1e-9


def test_multiparty_default_selects_privately():
    rng = np.random.RandomState(0)
    X = rng.randn(800, 3)
    y = (X[:, 0] > 0).astype(int)
    y[:2] = 7
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        m = MultiPartyDPLogisticRegression(n_parties=4, random_state=0).fit(X, y)
    assert m.classes_.tolist() == [0, 1]
    assert m.privacy_events_[:2] == gaussian_label_set_events(*class_selection_budget(_Auto(1.0, 1e-5), 800))
    assert m.privacy_events_ == m.planned_events(800, 3)
    assert m.privacy_spent_.epsilon <= 1.0 + 1e-9 and m.score(X, y) > 0.8


def test_breast_cancer_default_accuracy():
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)  # public scaling stands in for a scaler fitted elsewhere
    scores = [DPLogisticRegression(random_state=s).fit(X, y).score(X, y) for s in range(5)]
    assert np.mean(scores) > 0.92


def _one_label_data():
    """300 rows, 296 of label 0: classes="auto" selects only label 0 (a fit needs 2)."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-0.5, 0.5, (300, 3))
    y = np.zeros(300, dtype=int)
    y[:4] = 1
    return X, y


@pytest.mark.parametrize("make", [lambda: DPLogisticRegression(classes="auto", data_norm=1.0),
                                  lambda: DPLinearSVC(classes="auto", data_norm=1.0),
                                  lambda: DPSparseLogisticRegression(classes="auto", n_nonzero_coefs=2),
                                  lambda: MultiPartyDPLogisticRegression(classes="auto", n_parties=2)],
                         ids=["DPLogisticRegression", "DPLinearSVC", "DPSparseLogisticRegression", "MultiParty"])
def test_a_refusal_after_the_selection_carries_what_it_spent(make):
    """Fewer than 2 labels selected: the refusal comes after the selection ran, so the error states and carries
    the selection's price; with a ledger, the whole planned fit was charged before and stays charged."""
    from skdp import SpentFitError

    X, y = _one_label_data()
    est = make().set_params(random_state=0)
    with pytest.raises(SpentFitError, match="selected 1 label") as info:
        est.fit(X, y)
    spent = price(class_selection_events(est, 300), est.delta).budget
    assert isinstance(info.value, ValueError)
    assert 0 < info.value.privacy_spent.epsilon == pytest.approx(spent.epsilon, rel=1e-12)
    assert info.value.privacy_spent.delta == est.delta
    assert f"spent epsilon={spent.epsilon:.6g}, delta={est.delta:.3g}" in str(info.value)
    assert info.value.privacy_events == class_selection_events(est, 300)
    assert not hasattr(est, "coef_")
    ledger = PrivacyLedger(100.0, 1e-5)
    with pytest.raises(SpentFitError, match="ledger was charged the whole fit"):
        make().set_params(random_state=1).fit(X, y, privacy_ledger=ledger)
    assert ledger.n_fits == 1
    assert ledger.spent().epsilon >= spent.epsilon
    assert ledger.spent().epsilon == pytest.approx(price(make().planned_events(300, 3), 1e-5).budget.epsilon)


def test_spent_fit_error_pickles_with_its_privacy():
    import pickle

    from skdp import SpentFitError

    X, y = _one_label_data()
    with pytest.raises(SpentFitError) as info:
        DPLogisticRegression(classes="auto", data_norm=1.0, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == str(info.value) and again.privacy_spent == info.value.privacy_spent
    assert again.privacy_events == info.value.privacy_events


@pytest.mark.parametrize("make", [lambda: DPLogisticRegression(classes="auto", data_norm=1.0),
                                  lambda: DPLinearSVC(classes="auto", data_norm=1.0),
                                  lambda: DPSparseLogisticRegression(classes="auto", n_nonzero_coefs=2),
                                  lambda: MultiPartyDPLogisticRegression(classes="auto", n_parties=2)],
                         ids=["DPLogisticRegression", "DPLinearSVC", "DPSparseLogisticRegression", "MultiParty"])
def test_bad_sample_weight_is_refused_before_the_selection_spends(make, monkeypatch):
    """A bad sample_weight (or multi-party parties) is refused before the label-set selection reads the labels."""
    import skdp._classes as release_module

    def must_not_run(*args, **kwargs):
        raise AssertionError("the label-set selection ran before the bad input was refused")

    monkeypatch.setattr(release_module, "private_label_set_gaussian_from_counts", must_not_run)
    X, y = _one_label_data()
    w = np.ones(300)
    w[3] = -1.0
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        make().fit(X, y, sample_weight=w)
    if isinstance(make(), MultiPartyDPLogisticRegression):
        with pytest.raises(ValueError, match="parties"):
            make().fit(X, y, parties=np.zeros(299))


def test_a_solver_refusing_the_selected_label_count_carries_the_spent_selection():
    """classes="auto" picks 3 labels and the solver fits 2 only: refused after the selection, with its price."""
    from skdp import SpentFitError

    rng = np.random.RandomState(0)
    X = rng.uniform(-0.5, 0.5, (600, 3))
    y = np.repeat([0, 1, 2], 200)
    est = DPLogisticRegression(classes="auto", solver="noisy_sgd", data_norm=1.0, random_state=0)
    with pytest.raises(SpentFitError, match="Only binary classification is supported by solver='noisy_sgd'") as info:
        est.fit(X, y)
    assert info.value.privacy_spent == price(class_selection_events(est, 600), est.delta).budget
    assert isinstance(info.value.__cause__, ValueError)
    # the same refusal with a public label set spends nothing: a plain ValueError, before the data is read
    with pytest.raises(ValueError, match="Only binary") as plain:
        DPLogisticRegression(classes=[0, 1, 2], solver="noisy_sgd", data_norm=1.0).fit(X, y)
    assert not isinstance(plain.value, SpentFitError)


def test_auto_classes_warn_when_the_threshold_is_close_to_the_label_sizes():
    """The warning depends on public quantities and the released set only (n, epsilon, threshold, k)."""
    import warnings

    from sklearn.datasets import load_digits

    from skdp import DPLogisticRegression

    X, y = load_digits(return_X_y=True)
    X, y = (X[:1257] - X.mean(0)) / (X.std(0) + 1e-9), y[:1257]  # about 126 rows per label
    with pytest.warns(UserWarning, match="labels of similar frequency may have been left out"):
        DPLogisticRegression(epsilon=0.5, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        DPLogisticRegression(epsilon=2.0, random_state=0).fit(X, y)  # a threshold of 38 rows
