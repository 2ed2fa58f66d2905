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
* as a context manager, ``with ledger: search.fit(X, y)``: every skdp fit
  made in this block by this thread (more precisely, in this
  :mod:`contextvars` context), and by the joblib workers of the ``n_jobs``
  parallelism it starts, that has no explicit ledger is charged to it.
  Inside the block joblib runs on threads that carry the block's ledger into
  every task (so ``GridSearchCV(n_jobs=2)`` or a one-vs-rest fit with
  ``n_jobs`` are covered, whatever backend was selected outside the block).
  Another thread's fits are not charged to it, even while the block is open:
  two threads with two ledgers each charge their own, and a search that
  suspends the ledger (:class:`suspend_active_ledger`) hides only its own
  inner fits. A thread you start yourself inside the block, or a joblib
  backend you select explicitly **inside** the block, does not carry the
  ledger: pass it as metadata there.

Unlike an accountant stored as a constructor parameter, nothing here is lost
by ``clone``: the ledger is never a parameter of an estimator.
"""

import contextvars
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

#: the ledgers entered with ``with ledger:`` in this context, innermost last (a ``_NoLedger`` where a composite
#: fit suspended them); per context, so per thread: another thread's block never sees them
_ACTIVE = contextvars.ContextVar("skdp_active_ledgers", default=())
_CHARGE_LOCK = threading.Lock()
#: the joblib configurations the ``with ledger:`` blocks of this context entered, innermost last
_CONFIGS = contextvars.ContextVar("skdp_ledger_joblib_configs", default=())


class _Release:
    def __init__(self, fh):
        self.fh = fh

    def close(self):
        try:
            self.fh.close()  # releases the flock
        finally:
            _CHARGE_LOCK.release()


def active_ledger():
    """The innermost ledger entered with ``with ledger:`` in this context (thread), or ``None``.

    Inside a joblib task started in such a block (``n_jobs``), the block's
    ledger; inside :class:`suspend_active_ledger`, a placeholder that charges
    nothing.
    """
    stack = _ACTIVE.get()
    return stack[-1] if stack else None


def _push(entry):
    _ACTIVE.set(_ACTIVE.get() + (entry,))


def _pop(entry):
    """Remove the innermost occurrence of ``entry`` from this context's stack (a no-op if absent)."""
    stack = _ACTIVE.get()
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is entry:
            _ACTIVE.set(stack[:i] + stack[i + 1:])
            return


class _NoLedger:
    """Placeholder that charges nothing: used while a composite fit has charged itself."""

    def charge(self, events, label="", noise_source=None, record_id=None):
        return None


class suspend_active_ledger:
    """Context manager: fits inside are not charged to the active ledger.

    Used by composite mechanisms (``DPGridSearchCV``) that charge their own
    total once, so their inner fits are not counted twice. It acts on this
    context only (and on the joblib tasks started inside it from a
    ``with ledger:`` block): fits of other threads are charged as before.
    """

    def __enter__(self):
        self._entry = _NoLedger()
        _push(self._entry)
        return self

    def __exit__(self, *exc):
        _pop(self._entry)
        return False


class _InContext:
    """A joblib task that runs with the active ledgers of the context that started its ``Parallel`` call.

    Picklable (a ledger is a handle on its file), so the task can run in a
    worker thread or, if a process backend ever carries it, in a worker process.
    """

    def __init__(self, func, stack):
        self.func, self.stack = func, stack

    def __call__(self, *args, **kwargs):
        token = _ACTIVE.set(self.stack)
        try:
            return self.func(*args, **kwargs)
        finally:
            _ACTIVE.reset(token)


def _ledger_threading_backend():
    """joblib's threading backend whose tasks carry the ledgers active where each ``Parallel`` call starts."""
    from joblib._parallel_backends import SequentialBackend, ThreadingBackend

    class LedgerThreadingBackend(ThreadingBackend):
        _stack = ()

        def configure(self, n_jobs=1, parallel=None, **backend_kwargs):
            # runs in the thread that calls Parallel: its ledgers (or a search's suspension) go to the tasks
            self._stack = _ACTIVE.get()
            return super().configure(n_jobs=n_jobs, parallel=parallel, **backend_kwargs)

        def submit(self, func, callback=None):
            return super().submit(_InContext(func, self._stack), callback=callback)

        def get_nested_backend(self):
            level = getattr(self, "nesting_level", 0) + 1
            nested = SequentialBackend if level > 1 else LedgerThreadingBackend
            return nested(nesting_level=level), None

    return LedgerThreadingBackend()


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
        :func:`skdp._protocol.check_charged`): the record then says what was
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

        config = joblib.parallel_config(backend=_ledger_threading_backend())
        config.__enter__()
        _push(self)
        _CONFIGS.set(_CONFIGS.get() + (config,))
        return self

    def __exit__(self, *exc):
        configs = _CONFIGS.get()
        _CONFIGS.set(configs[:-1])
        try:
            configs[-1].__exit__(*exc)
        finally:
            _pop(self)
        return False
