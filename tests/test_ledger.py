"""PrivacyLedger: exact composition of what the fits released, refusal before the data are read, and ``with
ledger:`` per thread.

``with ledger:`` is per context (thread): another thread's block, or a search's suspension of the ledger in
another thread, never hides fits from a ledger or charges them to the wrong one; the joblib workers started
inside a block still charge it.

Each threaded test is written as the failure an attacker's review reproduced on the process-global stack:
two threads with ledgers A and B, A recorded 0 of its 3 fits and B recorded 6. Barriers make the blocks
overlap, so the outcome does not depend on scheduling.
"""

import math
import threading

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import BudgetExceededError, DPLogisticRegression, DPRidge, PrivacyLedger
from skdp.model_selection import DPGridSearchCV
from skdp.privacy import GaussianEvent, active_ledger, gdp_epsilon, gdp_mu, price
from skdp.privacy.ledger import suspend_active_ledger

from ._helpers import ledger_clf


# ------------------------------------------------------------------ ledger
def test_ledger_composes_gaussian_fits_exactly(clf_data_600):
    X, y = clf_data_600
    ledger = PrivacyLedger(10.0, 1e-5)
    for eps in (0.3, 0.5, 1.0):
        ledger_clf(epsilon=eps, solver="dp_gd").fit(X, y, privacy_ledger=ledger)
    # each dp_gd fit is exactly mu*(eps, delta)-GDP; together sqrt(sum mu^2)
    mu = math.sqrt(sum(gdp_mu(e, 1e-5) ** 2 for e in (0.3, 0.5, 1.0)))
    assert ledger.spent().epsilon == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-8)
    assert ledger.spent().epsilon < 1.8  # tighter than summing epsilons
    assert ledger.n_fits == 3


def test_ledger_records_match_what_the_fit_released(clf_data_600):
    X, y = clf_data_600
    ledger = PrivacyLedger(math.inf, 1e-4)
    for solver in ("dp_gd", "output_pert", "obj_pert", "dp_svrg"):
        est = ledger_clf(solver=solver, alpha=0.05).fit(X, y, privacy_ledger=ledger)
        assert ledger.records()[-1]["events"] == est.privacy_events_
        reg = DPRidge(epsilon=0.3, solver=solver, data_norm=3.0, label_bound=2.0).fit(
            X, y.astype(float), privacy_ledger=ledger)
        assert ledger.records()[-1]["events"] == reg.privacy_events_


def test_ledger_survives_clone_and_pipelines(clf_data_600):
    X, y = clf_data_600
    ledger = PrivacyLedger(math.inf, 1e-5)
    pipe = make_pipeline(StandardScaler(), ledger_clf())
    clone(pipe).fit(X, y, dplogisticregression__privacy_ledger=ledger)
    with ledger:
        clone(clone(pipe)).fit(X, y)
    assert ledger.n_fits == 2


def test_budget_exceeded_before_touching_data(clf_data_600):
    X, y = clf_data_600
    ledger = PrivacyLedger(0.5, 1e-5)
    ledger_clf(epsilon=0.4).fit(X, y, privacy_ledger=ledger)
    before = ledger.spent()
    X_bad = X.copy()
    X_bad[0, 0] = np.nan  # would raise a ValueError if the data were read first
    with pytest.raises(BudgetExceededError, match="budget"):
        ledger_clf(epsilon=0.4).fit(X_bad, y, privacy_ledger=ledger)
    assert ledger.n_fits == 1 and ledger.spent() == before
    # a fit whose bounds come from the data has no finite cost: refused
    with pytest.raises(BudgetExceededError, match="no finite guarantee"):
        DPLogisticRegression(epsilon=0.01, data_norm=None, classes=[0, 1]).fit(X, y, privacy_ledger=ledger)


def test_gaussian_event_reference():
    # sanity: the ledger's pricing is the shared accountant's
    assert price([GaussianEvent(1.0, 10.0, 100)], 1e-5).budget.epsilon == pytest.approx(4.3771780957)


FITS = 3


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.uniform(-0.5, 0.5, (120, 3))
    return X, (X[:, 0] > 0).astype(int)


def _est(**kw):
    return DPLogisticRegression(epsilon=0.1, data_norm=1.0, classes=[0, 1], max_iter=3, **kw)


def _in_threads(*targets):
    """Run each target in its own thread; re-raise the first error."""
    errors = []

    def wrap(target):
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]


def test_two_threads_with_two_ledgers_each_charge_their_own(data):
    X, y = data
    a, b = PrivacyLedger(math.inf, 1e-5), PrivacyLedger(math.inf, 1e-5)
    inside, fitted = threading.Barrier(2, timeout=60), threading.Barrier(2, timeout=60)

    def run(ledger):
        with ledger:
            inside.wait()  # both blocks are open before either thread fits
            for _ in range(FITS):
                _est().fit(X, y)
            fitted.wait()  # and stay open until both are done

    _in_threads(lambda: run(a), lambda: run(b))
    assert (a.n_fits, b.n_fits) == (FITS, FITS)


def test_a_suspension_in_another_thread_hides_nothing(data):
    X, y = data
    ledger = PrivacyLedger(math.inf, 1e-5)
    entered, suspended, fitted = (threading.Barrier(2, timeout=60) for _ in range(3))

    def search_like():  # a composite fit suspends the ledger for its own inner fits, after the user's block opened
        entered.wait()
        with suspend_active_ledger():
            suspended.wait()
            fitted.wait()

    def user():
        with ledger:
            entered.wait()
            suspended.wait()
            for _ in range(FITS):
                _est().fit(X, y)
            fitted.wait()

    _in_threads(search_like, user)
    assert ledger.n_fits == FITS


def test_a_fit_in_another_thread_is_not_charged_to_this_block(data):
    X, y = data
    ledger = PrivacyLedger(math.inf, 1e-5)
    with ledger:
        seen = []
        _in_threads(lambda: seen.append(active_ledger()) or _est().fit(X, y))
        _est().fit(X, y)
    assert seen == [None] and ledger.n_fits == 1
    assert active_ledger() is None  # the block is closed in this thread


@pytest.mark.parametrize("outer", [None, "loky", "threading"])
def test_joblib_workers_started_in_the_block_charge_it(data, outer):
    """GridSearchCV(n_jobs=2) inside the block: 2 candidates x 3 folds + the refit, whichever backend was
    selected outside (the block runs joblib on threads that carry its ledger)."""
    X, y = data
    ledger = PrivacyLedger(math.inf, 1e-5)
    search = GridSearchCV(_est(), {"alpha": [0.01, 1.0]}, cv=3, n_jobs=2)
    with joblib.parallel_config(backend=outer) if outer else _Null():
        with ledger:
            search.fit(X, y)
    assert ledger.n_fits == 2 * 3 + 1


def test_two_threads_each_running_a_parallel_search_in_its_own_block(data):
    X, y = data
    a, b = PrivacyLedger(math.inf, 1e-5), PrivacyLedger(math.inf, 1e-5)
    inside, fitted = threading.Barrier(2, timeout=60), threading.Barrier(2, timeout=60)

    def run(ledger, alphas):
        with ledger:
            inside.wait()
            GridSearchCV(_est(), {"alpha": alphas}, cv=2, n_jobs=2).fit(X, y)
            fitted.wait()

    _in_threads(lambda: run(a, [0.1]), lambda: run(b, [0.1, 1.0, 10.0]))
    assert (a.n_fits, b.n_fits) == (1 * 2 + 1, 3 * 2 + 1)


def test_a_private_search_in_the_block_is_charged_once_with_parallel_candidates(data):
    """DPGridSearchCV charges itself and suspends the ledger: its candidates, fitted by joblib workers of the
    block, must see the suspension (not the block's ledger), or the search would be counted twice."""
    X, y = data
    ledger = PrivacyLedger(math.inf, 1e-5)
    with ledger:
        DPGridSearchCV(_est(), {"alpha": [0.01, 0.1, 1.0]}, epsilon=1.0, n_jobs=2).fit(X, y)
        assert isinstance(active_ledger(), PrivacyLedger)  # the suspension ended with the search
    (record,) = ledger.records()
    assert record["label"].startswith("DPGridSearchCV")


def test_nested_blocks_and_reentry(data):
    X, y = data
    outer, inner = PrivacyLedger(math.inf, 1e-5), PrivacyLedger(math.inf, 1e-5)
    with outer:
        with inner:
            _est().fit(X, y)
            with inner:  # entering the same ledger twice is harmless
                assert active_ledger() is inner
            assert active_ledger() is inner
        _est().fit(X, y)
    assert (outer.n_fits, inner.n_fits) == (1, 1) and active_ledger() is None


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
