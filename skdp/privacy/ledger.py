"""A privacy ledger: one budget for many fits on the same private data.

Every skdp fit made against a ledger is charged *before* it touches the data:
the estimator computes the events it will release from public quantities
(:meth:`~skdp.linear_model.DPLogisticRegression.planned_events`), the ledger
prices everything recorded so far plus those events with the shared
accountant (tight composition, not a sum of epsilons) and refuses the fit with
:class:`~skdp.exceptions.BudgetExceededError` if the total would exceed its
budget. All fits are assumed to touch the same dataset (sequential composition),
which is the conservative reading for cross-validation and grid search. Before
a fit releases its model, the events it ran are priced against that charge at
the ledger's delta: a plan made before the label set was known (one-vs-rest
with ``classes="auto"``) can cost slightly more there, and the record is then
amended to what ran if the budget allows (:meth:`PrivacyLedger.amend`), or the
fit is refused with nothing released.

Composition assumes the recorded fits drew **independent** noise. A fit with
``random_state=None`` draws fresh OS entropy, so that always holds. A fit
with a user-given seed records a digest of its generator state (its
``noise_source_``); a second fit with the same digest would share the first
one's noise (cross-validation folds with ``random_state=0``, a scaler and a
model given the same seed), so the ledger prices the pair at
``epsilon=inf``: it refuses the fit unless its budget is infinite, and
:meth:`PrivacyLedger.spent` then reports ``inf``.

Two ways to attach a ledger to fits:

* as fit metadata, ``est.fit(X, y, privacy_ledger=ledger)`` (routed by
  ``Pipeline`` / ``GridSearchCV`` as ``step__privacy_ledger=...`` or, with
  ``sklearn.set_config(enable_metadata_routing=True)``, after
  ``est.set_fit_request(privacy_ledger=True)``). This works with thread and
  process parallelism: the ledger is a small picklable handle on an
  append-only file guarded by a file lock.
* as a context manager, ``with ledger: search.fit(X, y)``: every skdp fit in
  this process that has no explicit ledger is charged to it. Inside the block
  joblib runs on threads, so ``n_jobs > 1`` is covered; a fit in another
  process (a backend you select explicitly inside the block) is **not** seen
  by the context manager: pass the ledger as metadata there.

Unlike an accountant stored as a constructor parameter, nothing here is lost
by ``clone``: the ledger is never a parameter of an estimator.
"""

import json
import os
import tempfile
import threading
from dataclasses import asdict, fields

from .._random import shared_sources
from ..exceptions import BudgetExceededError
from . import events as _events
from .accounting import price
from .budget import PrivacyBudget

try:  # pragma: no cover - platform dependent
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["PrivacyLedger", "active_ledger", "suspend_active_ledger"]

_EVENT_TYPES = {
    name: getattr(_events, name)
    for name in _events.__all__
    if isinstance(getattr(_events, name), type)
}

_ACTIVE = []
_ACTIVE_LOCK = threading.Lock()
_CHARGE_LOCK = threading.Lock()


class _Release:
    def __init__(self, fh):
        self.fh = fh

    def close(self):
        try:
            self.fh.close()  # releases the flock
        finally:
            _CHARGE_LOCK.release()


def active_ledger():
    """The innermost ledger entered with ``with ledger:`` in this process, or ``None``."""
    with _ACTIVE_LOCK:
        return _ACTIVE[-1] if _ACTIVE else None


class _NoLedger:
    """Placeholder that charges nothing: used while a composite fit has charged itself."""

    def charge(self, events, label="", noise_source=None, record_id=None):
        return None


class suspend_active_ledger:
    """Context manager: fits inside are not charged to the active ledger.

    Used by composite mechanisms (``DPGridSearchCV``) that charge their own
    total once, so their inner fits are not counted twice.
    """

    def __enter__(self):
        with _ACTIVE_LOCK:
            _ACTIVE.append(_NoLedger())
        return self

    def __exit__(self, *exc):
        with _ACTIVE_LOCK:
            for i in range(len(_ACTIVE) - 1, -1, -1):
                if isinstance(_ACTIVE[i], _NoLedger):
                    del _ACTIVE[i]
                    break
        return False


def _dump_event(ev):
    return {"type": type(ev).__name__, **asdict(ev)}


def _load_event(d):
    d = dict(d)
    cls = _EVENT_TYPES[d.pop("type")]
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


class PrivacyLedger:
    """Records and prices every fit made against a total (epsilon, delta) budget.

    Parameters
    ----------
    epsilon : float
        Total epsilon for all fits recorded here (``inf`` to only record).
    delta : float
        Total delta; every composition is priced at this delta.
    relation : {"replace_one", "add_remove"}, default="replace_one"
    path : str or None, default=None
        File the records are appended to; ``None`` creates a private temporary
        file. Passing the same path to two ledgers shares the records.

    Attributes
    ----------
    budget : PrivacyBudget

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression, PrivacyLedger
    >>> rng = np.random.RandomState(0)
    >>> X, y = rng.randn(200, 3), rng.randint(0, 2, 200)
    >>> ledger = PrivacyLedger(epsilon=1.0, delta=1e-5)
    >>> est = DPLogisticRegression(epsilon=0.5, data_norm=3.0, classes=[0, 1])
    >>> _ = est.fit(X, y, privacy_ledger=ledger)
    >>> _ = est.fit(X, y, privacy_ledger=ledger)
    >>> ledger.n_fits, ledger.spent().epsilon < 1.0   # two Gaussian fits compose below 2 x 0.5
    (2, True)

    Two fits with the same user seed would share their noise; the ledger
    does not compose them as independent:

    >>> seeded = DPLogisticRegression(epsilon=0.1, data_norm=3.0, classes=[0, 1], random_state=0)
    >>> _ = seeded.fit(X, y, privacy_ledger=ledger)
    >>> seeded.fit(X, y, privacy_ledger=ledger)
    Traceback (most recent call last):
    ...
    skdp.exceptions.BudgetExceededError: Refusing to fit ...
    """

    def __init__(self, epsilon, delta, relation="replace_one", path=None):
        self.budget = PrivacyBudget(epsilon, delta, relation)
        if path is None:
            fd, path = tempfile.mkstemp(prefix="skdp-ledger-", suffix=".jsonl")
            os.close(fd)
        self.path = os.fspath(path)
        open(self.path, "a").close()
        self._joblib_config = None

    def __repr__(self):
        return f"PrivacyLedger(budget={self.budget!r}, n_fits={self.n_fits})"

    # ------------------------------------------------------------------ storage
    def _lock(self):
        """Exclusive lock across threads (always) and processes (where ``fcntl`` exists).

        On platforms without ``fcntl`` (Windows) concurrent charges from several
        *processes* are not serialised; use threads there.
        """
        _CHARGE_LOCK.acquire()
        fh = open(self.path + ".lock", "a")
        if fcntl is not None:
            fcntl.flock(fh, fcntl.LOCK_EX)
        return _Release(fh)

    def _read(self):
        with open(self.path) as fh:
            return [json.loads(line) for line in fh if line.strip()]

    def records(self):
        """List of ``{"label": str, "events": [...], "noise_source": str or None}``, one per recorded fit."""
        return [{"label": r["label"], "events": [_load_event(e) for e in r["events"]],
                 "noise_source": r.get("noise_source"), "unbounded": bool(r.get("unbounded"))}
                for r in self._read()]

    @property
    def n_fits(self):
        return len(self._read())

    def events(self):
        """All recorded events, in order."""
        return [ev for r in self.records() for ev in r["events"]]

    def spent(self):
        """What every recorded fit costs together, by the shared accountant.

        ``epsilon=inf`` if two recorded fits share a seeded noise source, or
        one had no finite guarantee (recorded against an infinite budget).
        """
        records = self.records()
        if any(r["unbounded"] for r in records) or shared_sources(r["noise_source"] for r in records):
            return PrivacyBudget(float("inf"), self.budget.delta, self.budget.relation)
        return price([ev for r in records for ev in r["events"]], self.budget.delta, self.budget.relation).budget

    # ------------------------------------------------------------------ charging
    def _total(self, records, events, noise_source=None):
        """``(total, clash)``: the price of ``records`` plus ``events`` (``None``: unbounded), and the labels of the
        records whose seeded noise source ``noise_source`` shares (``inf`` then, as for any shared source)."""
        recorded = [ev for r in records for ev in r["events"]]
        clash = [r["label"] for r in records if shared_sources([r["noise_source"], noise_source])]
        if (events is None or clash or any(r["unbounded"] for r in records)
                or shared_sources(r["noise_source"] for r in records)):
            return PrivacyBudget(float("inf"), self.budget.delta, self.budget.relation), clash
        return price(recorded + list(events), self.budget.delta, self.budget.relation).budget, clash

    def charge(self, events, label="", noise_source=None, record_id=None):
        """Record one fit's events, or raise ``BudgetExceededError`` leaving the ledger unchanged.

        ``events=None`` means the fit has no finite guarantee (a bound would be
        read from the data); it is always refused unless the budget is infinite.
        ``noise_source`` is the fit's ``noise_source_`` (see
        :func:`skdp._random.noise_source`); a seeded source already recorded
        means shared noise: the total is ``inf``, refused likewise.
        ``record_id`` names the record for :meth:`amend`.
        """
        lock = self._lock()
        try:
            records = self.records()
            total, clash = self._total(records, events, noise_source)
            if total.epsilon > self.budget.epsilon:
                if events is None:
                    why = ("it has no finite guarantee (a bound such as data_norm, classes or label_bound "
                           "would be read from the data)")
                elif clash:
                    why = (f"its random_state gives the same noise as the recorded fit {clash[0]!r} "
                           "(the two releases would share noise, so no finite guarantee holds; use "
                           "random_state=None or a different secret seed per fit)")
                else:
                    why = f"the total would be {total}"
                raise BudgetExceededError(
                    f"Refusing to fit {label or 'this estimator'}: {why}, over the ledger's budget "
                    f"{self.budget} ({len(self._read())} fits recorded so far)."
                )
            record = {"label": label, "events": [_dump_event(e) for e in (events or [])],
                      "noise_source": noise_source, "unbounded": events is None}
            if record_id is not None:
                record["id"] = str(record_id)
            with open(self.path, "a") as fh:
                fh.write(json.dumps(record) + "\n")
            return total
        finally:
            lock.close()

    def amend(self, record_id, events):
        """Replace the events of the record charged with ``record_id`` by ``events``, if the budget still holds.

        Used when a fit ran releases whose price at this ledger's delta is
        above what was charged before the data was read (a plan made before
        a public fact of the fit was known, see
        :func:`skdp._release.check_charged`): the record then says what was
        released. Raises ``BudgetExceededError`` leaving the ledger unchanged
        when the total with ``events`` would exceed the budget (the fit is
        then not released, and its first charge stays). Returns the new total.
        """
        lock = self._lock()
        try:
            lines = self._read()
            index = [i for i, r in enumerate(lines) if r.get("id") == str(record_id)]
            if len(index) != 1:
                raise ValueError(f"No single record with id {record_id!r} in this ledger.")
            i = index[0]
            others = [r for j, r in enumerate(self.records()) if j != i]
            total, _ = self._total(others, events, lines[i].get("noise_source"))
            if total.epsilon > self.budget.epsilon:
                raise BudgetExceededError(
                    f"Refusing to release {lines[i]['label'] or 'this fit'}: with the events it ran the total "
                    f"would be {total}, over the ledger's budget {self.budget} (its charge before the fit "
                    "stays recorded).")
            lines[i] = dict(lines[i], events=[_dump_event(e) for e in events])
            tmp = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in lines)
            os.replace(tmp, self.path)
            return total
        finally:
            lock.close()

    # ------------------------------------------------------------------ context manager
    def __enter__(self):
        import joblib

        with _ACTIVE_LOCK:
            _ACTIVE.append(self)
        self._joblib_config = joblib.parallel_config(backend="threading")
        self._joblib_config.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            self._joblib_config.__exit__(*exc)
        finally:
            self._joblib_config = None
            with _ACTIVE_LOCK:
                _ACTIVE.remove(self)
        return False

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_joblib_config"] = None
        return state
