"""One-vs-rest for the binary-only mechanisms: DPLinearSVC, DPSparseLogisticRegression, the multi-party model.

The k binary fits of a one-vs-rest fit all read every row, so their releases compose; the budget is
split before the data is read (skdp._ovr.ovr_budget) so that the k fits cost what one binary fit
costs. These tests check the shapes against sklearn's one-vs-rest models, the split against an
independent calibration, planned == released, and the privacy of the k releases together on
neighbouring datasets (with an under-noised positive control).
"""

import math

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skdp import DPLinearSVC, DPSparseLogisticRegression, PrivacyLedger
from skdp._ovr import ovr_budget
from skdp.distributed import MultiPartyDPLogisticRegression
from skdp.privacy import (GaussianEvent, PoissonGaussianEvent, PrivacyBudget, calibrate_gaussian, gdp_mu,
                          price)


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)  # stands in for a scaling with public ranges
    return X / np.linalg.norm(X, axis=1).max(), y  # rows in the unit ball (the multi-party data_norm=1)


def _estimators(epsilon=1.0, **kw):
    return [DPLinearSVC(epsilon=epsilon, **kw),
            DPSparseLogisticRegression(epsilon=epsilon, n_nonzero_coefs=2, **kw),
            MultiPartyDPLogisticRegression(epsilon=epsilon, n_parties=3, **kw)]


@pytest.mark.parametrize("est", _estimators(classes=[0, 1, 2], random_state=0), ids=lambda e: type(e).__name__)
def test_iris_default_epsilon_fits_within_budget_with_sklearns_shapes(iris, est):
    X, y = iris
    clf = est.fit(X, y)
    assert clf.privacy_spent_.epsilon <= 1.0 and clf.privacy_spent_.delta == 1e-5
    ref = (LinearSVC() if isinstance(est, DPLinearSVC) else OneVsRestClassifier(LogisticRegression())).fit(X, y)
    np.testing.assert_array_equal(clf.classes_, ref.classes_)
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    if isinstance(est, DPLinearSVC):
        assert clf.coef_.shape == ref.coef_.shape and clf.intercept_.shape == ref.intercept_.shape
    else:
        assert clf.multi_class_ == "ovr"
        assert clf.predict_proba(X).shape == ref.predict_proba(X).shape
        np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
        np.testing.assert_allclose(np.log(clf.predict_proba(X)), clf.predict_log_proba(X), atol=1e-12)
    assert clf.decision_function(X).shape == ref.decision_function(X).shape == (150, 3)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(clf.decision_function(X), axis=1)])
    assert clf.solver_info_["one_vs_rest"] if hasattr(clf, "solver_info_") else True


@pytest.mark.parametrize("make", [
    lambda s: DPLinearSVC(epsilon=30.0, random_state=s),
    lambda s: DPSparseLogisticRegression(epsilon=30.0, n_nonzero_coefs=2, random_state=s),
    lambda s: MultiPartyDPLogisticRegression(epsilon=30.0, n_parties=3, random_state=s),
], ids=["DPLinearSVC", "DPSparseLogisticRegression", "MultiPartyDPLogisticRegression"])
def test_iris_accuracy_well_above_chance_at_large_epsilon(iris, make):
    X, y = iris
    if isinstance(make(0), DPSparseLogisticRegression):  # its public feature_bound=1 is per coordinate
        X = StandardScaler().fit_transform(X)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]  # classes="auto" with string labels
    scores = []
    for s in range(3):
        clf = make(s).fit(X, labels)
        assert clf.classes_.tolist() == ["setosa", "versicolor", "virginica"]
        assert clf.privacy_spent_.epsilon <= 30.0
        scores.append(clf.score(X, labels))
    assert np.mean(scores) > 0.75  # chance: 1/3


def test_sparse_each_class_has_at_most_s_nonzeros_and_support_is_their_union(iris):
    X, y = iris
    clf = DPSparseLogisticRegression(epsilon=5.0, n_nonzero_coefs=1, classes=[0, 1, 2], random_state=0).fit(X, y)
    assert ((clf.coef_ != 0).sum(axis=1) <= 1).all()
    np.testing.assert_array_equal(clf.support_, np.flatnonzero((clf.coef_ != 0).any(axis=0)))


# -- the split ------------------------------------------------------------------------------------
def test_gaussian_split_is_the_sigma_of_the_whole_budget_for_k_times_the_releases():
    for k in (3, 4, 10):
        def events_for(b, T=7, sens=0.3):
            return [GaussianEvent(sens, calibrate_gaussian(T * sens**2, b.epsilon, b.delta), T)]

        b, events = ovr_budget(events_for, k, PrivacyBudget(1.0, 1e-5))
        assert b.delta == pytest.approx(1e-5 / k)
        # first principles: k T releases of sensitivity 0.3 at (1, 1e-5) need sigma = sqrt(k T) 0.3 / mu*
        sigma = math.sqrt(k * 7) * 0.3 / gdp_mu(1.0, 1e-5)
        assert events == [GaussianEvent(0.3, events[0].sigma, 7 * k)]
        assert events[0].sigma == pytest.approx(sigma, rel=1e-5) and events[0].sigma >= sigma * (1 - 1e-12)
        assert price(events, 1e-5).budget.epsilon <= 1.0


def test_multiparty_noise_scale_matches_an_independent_calibration(iris):
    X, y = iris
    clf = MultiPartyDPLogisticRegression(epsilon=1.0, n_parties=3, classes=[0, 1, 2], random_state=0).fit(X, y)
    (T,), m, n_min, d = clf.n_iter_, 3, 50, 5
    sens = (2 * 0.5 / n_min + math.sqrt(d) * 2.0**-32) / m  # 2 G / n_min + rounding, over m parties
    assert clf.noise_scale_ == pytest.approx(calibrate_gaussian(3 * T * sens**2, 1.0, 1e-5), rel=1e-5)
    assert clf.privacy_events_ == [GaussianEvent(sens, clf.noise_scale_, 3 * T)]
    binary = MultiPartyDPLogisticRegression(epsilon=1.0, n_parties=3, classes=[0, 1], random_state=0)
    assert binary.fit(X, y % 2).noise_scale_ == pytest.approx(calibrate_gaussian(T * sens**2, 1.0, 1e-5))
    # pure epsilon: epsilon / k per class
    pure = MultiPartyDPLogisticRegression(epsilon=1.0, delta=0.0, solver="mpc_output_pert", alpha=0.1,
                                          n_parties=3, classes=[0, 1, 2], random_state=0).fit(X, y)
    assert pure.privacy_events_[0].count == 3
    assert pure.privacy_events_[0].epsilon == pytest.approx(1.0 / 3) and pure.privacy_spent_.epsilon <= 1.0


def test_sparse_per_class_sigma_is_the_whole_budget_for_k_times_the_steps(iris):
    X, y = iris
    clf = DPSparseLogisticRegression(epsilon=1.0, solver="dp_ight", clip_norm=1.0, n_nonzero_coefs=2,
                                     classes=[0, 1, 2], random_state=0).fit(X, y)
    (ev,) = clf.privacy_events_
    binary = DPSparseLogisticRegression(epsilon=1.0, solver="dp_ight", clip_norm=1.0, n_nonzero_coefs=2,
                                        classes=[0, 1], random_state=0).fit(X, y % 2)
    assert ev.count % 3 == 0 and ev.sensitivity == binary.privacy_events_[0].sensitivity
    T = ev.count // 3  # each class's step count (a public function of its share of the budget)
    assert ev.sigma == pytest.approx(calibrate_gaussian(3 * T * ev.sensitivity**2, 1.0, 1e-5), rel=1e-5)
    assert clf.solver_info_["class_delta"] == pytest.approx(1e-5 / 3)


def test_svc_k_poisson_fits_are_priced_at_the_solvers_budget(iris):
    X, y = iris
    clf = DPLinearSVC(epsilon=1.0, data_norm=1.0, classes=[0, 1, 2], random_state=0).fit(X, y)
    (ev,) = clf.privacy_events_
    assert isinstance(ev, PoissonGaussianEvent)
    binary = DPLinearSVC(epsilon=1.0, data_norm=1.0, classes=[0, 1], random_state=0).fit(X, y % 2)
    assert clf.privacy_spent_.epsilon <= binary.privacy_spent_.epsilon
    assert clf.privacy_spent_.epsilon == pytest.approx(binary.privacy_spent_.epsilon, rel=1e-3)
    # each class's plan alone is calibrated to its own share (epsilon_c, delta / 3)
    one = PoissonGaussianEvent(ev.sampling_rate, ev.noise_multiplier, ev.count // 3)
    assert price([one], 1e-5 / 3).budget.epsilon <= clf.solver_info_["class_epsilon"] * (1 + 1e-9)


# -- planned == released, the ledger ----------------------------------------------------------------
@pytest.mark.parametrize("est", _estimators(epsilon=8.0, random_state=0), ids=lambda e: type(e).__name__)
def test_planned_price_equals_spent_and_the_ledger_is_charged(iris, est, tmp_path):
    X, y = iris
    public = type(est)(**{**est.get_params(), "classes": [0, 1, 2]})
    fitted = public.fit(X, y)
    planned = public.planned_events(*X.shape)
    assert price(planned, 1e-5).budget.epsilon == pytest.approx(fitted.privacy_spent_.epsilon, rel=1e-9)
    if not isinstance(est, DPSparseLogisticRegression):  # the sparse plan prices a unit clip norm
        assert fitted.privacy_events_ == planned
    # classes="auto": planned (and charged) as a binary fit; the one-vs-rest fit costs no more, and about as much
    planned_auto = price(est.planned_events(*X.shape), 1e-5).budget.epsilon
    ledger = PrivacyLedger(10.0, 1e-5, path=tmp_path / "ledger.json")
    fitted = est.fit(X, y, privacy_ledger=ledger)
    assert fitted.classes_.size == 3
    assert ledger.spent().epsilon == pytest.approx(planned_auto, rel=1e-9)
    assert planned_auto * (1 - 1e-3) <= fitted.privacy_spent_.epsilon <= planned_auto * (1 + 1e-12)
    assert fitted.privacy_spent_.epsilon <= 8.0


# -- privacy on neighbouring datasets ---------------------------------------------------------------
def _separation(n_fits, seed0):
    """Estimated mu of the released (k, d) coefficients along the direction a replace-one change moves them.

    One round of mpc_grad_pert (T = 1) at theta = 0 releases, per class c, the noisy mean of -y_ic x_i / 2;
    relabelling one row x (norm = data_norm) from class 0 to class 1 moves class 0's and class 1's releases
    by one sensitivity each, in opposite directions. The statistic is the projection of coef_ on that
    direction; its two distributions are Gaussians whose standardised mean gap is the mechanism's mu.
    """
    rng = np.random.RandomState(0)
    X = np.column_stack([np.zeros(30), rng.uniform(-0.5, 0.5, (30, 2))])
    y = np.arange(30) % 3
    X[0] = [1.0, 0.0, 0.0]
    y[0] = 0
    y2 = y.copy()
    y2[0] = 1
    u = np.zeros((3, 3))
    u[0, 0], u[1, 0] = 1.0, -1.0
    stats = {0: [], 1: []}
    claim = None
    for i in range(n_fits):
        for world, labels in ((0, y), (1, y2)):
            clf = MultiPartyDPLogisticRegression(epsilon=8.0, n_parties=1, max_iter=1, fit_intercept=False,
                                                 classes=[0, 1, 2], random_state=seed0 + 2 * i + world)
            clf.fit(X, labels)
            stats[world].append(float(np.sum(clf.coef_ * u)))
            if claim is None:
                (ev,) = clf.privacy_events_
                claim = math.sqrt(ev.count) * ev.sensitivity / ev.sigma  # the accountant's mu (exact GDP)
    a, b = np.array(stats[0]), np.array(stats[1])
    sd = math.sqrt(0.5 * (a.var(ddof=1) + b.var(ddof=1)))
    mu_hat = abs(a.mean() - b.mean()) / sd
    return mu_hat, math.sqrt((2.0 + mu_hat**2 / 4.0) / n_fits), claim  # standard error of a standardised gap


def test_ovr_releases_together_respect_the_claimed_mu_and_an_under_noised_fit_does_not(under_noise):
    mu_hat, se, claim = _separation(500, 0)
    # the change moves 2 of the 3 classes by a full sensitivity: mu = sqrt(2/3) * claim, never above it
    assert mu_hat <= claim + 4 * se
    assert mu_hat == pytest.approx(math.sqrt(2.0 / 3.0) * claim, abs=4 * se)
    with under_noise(0.5):  # positive control: half the noise doubles mu, beyond what the accountant claims
        mu_hat, se, claim_c = _separation(500, 10**6)
    assert claim_c == claim and mu_hat > claim + 6 * se


# -- what is still refused ----------------------------------------------------------------------------
def test_binary_only_solvers_of_dplogisticregression_still_say_so(iris):
    from skdp import DPLogisticRegression

    X, y = iris
    with pytest.raises(ValueError, match="Only binary classification is supported by solver='noisy_sfw'"):
        DPLogisticRegression(solver="noisy_sfw", classes=[0, 1, 2], alpha=0.1).fit(X, y)


def test_a_fit_that_spends_more_than_its_ledger_charge_is_amended_or_not_released(iris, monkeypatch):
    """classes="auto" with a one-vs-rest solver: the ledger is charged a binary fit before the label set is known.
    The events the fit ran are checked against that charge before anything is released. A split that spends
    more (here: k binary fits at the whole budget, monkeypatched in) is recorded as what it ran when the
    ledger's budget allows it, and otherwise refused, leaving no model and the first charge."""
    import skdp._ovr as release_module
    from sklearn.base import clone

    from skdp import BudgetExceededError
    from skdp.privacy.events import scale_event_count

    X, y = iris
    est = DPLinearSVC(classes="auto", epsilon=4.0, data_norm=1.0, random_state=0)
    charged = price(est.planned_events(*X.shape), 1e-5).budget.epsilon
    ledger = PrivacyLedger(100.0, 1e-5)
    fitted = clone(est).fit(X, y, privacy_ledger=ledger)  # the real split: within the charge, kept as charged
    assert fitted.classes_.tolist() == [0, 1, 2] and fitted.solver_info_["one_vs_rest"]
    assert price(fitted.privacy_events_, 1e-5).budget.epsilon <= charged * (1 + 1e-9)
    assert ledger.events() == est.planned_events(*X.shape)

    def unsplit(events_for, n_classes, budget, pre_events=(), delta=None):
        return budget, [scale_event_count(ev, n_classes) for ev in events_for(budget)]

    monkeypatch.setattr(release_module, "ovr_budget", unsplit)
    roomy = PrivacyLedger(100.0, 1e-5)
    over = clone(est).fit(X, y, privacy_ledger=roomy)
    assert over.privacy_spent_.epsilon > 4.0  # what it ran, reported
    assert roomy.n_fits == 1 and roomy.events() == over.privacy_events_  # the record says what was released
    assert roomy.spent().epsilon == pytest.approx(over.privacy_spent_.epsilon, rel=1e-9)

    tight = PrivacyLedger(charged * 1.01, 1e-5)
    bad = clone(est)
    with pytest.raises(BudgetExceededError, match="more than the .* charged before the fit"):
        bad.fit(X, y, privacy_ledger=tight)
    assert not [k for k in vars(bad) if k.endswith("_") and not k.startswith("_")]  # nothing released
    assert tight.n_fits == 1 and tight.events() == est.planned_events(*X.shape)  # the first charge stays


def test_amend_replaces_one_record_within_the_budget():
    from skdp import BudgetExceededError

    ledger = PrivacyLedger(2.0, 1e-5)
    ledger.charge([GaussianEvent(1.0, 4.0)], label="a", record_id="a")
    ledger.charge([GaussianEvent(1.0, 4.0)], label="b", record_id="b")
    total = ledger.amend("b", [GaussianEvent(1.0, 3.0)])
    assert ledger.events() == [GaussianEvent(1.0, 4.0), GaussianEvent(1.0, 3.0)]
    assert total == ledger.spent() == price([GaussianEvent(1.0, 4.0), GaussianEvent(1.0, 3.0)], 1e-5).budget
    with pytest.raises(BudgetExceededError, match="over the ledger's budget"):
        ledger.amend("a", [GaussianEvent(1.0, 0.5)])
    assert ledger.events() == [GaussianEvent(1.0, 4.0), GaussianEvent(1.0, 3.0)]  # unchanged
    with pytest.raises(ValueError, match="No single record"):
        ledger.amend("c", [])
