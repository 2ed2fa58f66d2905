"""Warnings and errors raised by skdp."""


class PrivacyLeakWarning(UserWarning):
    """A quantity that the privacy proof needs to be public was read from the data.

    skdp emits this warning when a bound that the differential-privacy guarantee
    relies on (the row norm bound ``data_norm``, the label range ``label_bound``,
    the class set ``classes``) was not given by the user and had to be computed
    from the training data. The computed value is stored as a fitted attribute
    (``data_norm_``, ``label_bound_``, ``classes_``); the fitted estimator then
    reports ``privacy_spent_`` with ``epsilon=inf``, because no finite guarantee
    holds for a mechanism whose sensitivity was chosen by looking at the data.
    """


class WeakDeltaWarning(UserWarning):
    """``delta`` is at least ``1/n``: the guarantee is too weak to mean anything.

    An (epsilon, delta) guarantee allows the mechanism to fail with
    probability ``delta``; a mechanism that publishes one random row out of
    ``n`` meets ``delta = 1/n``. The usual advice is ``delta`` much smaller
    than ``1/n`` (e.g. ``delta <= 1/(10 n)``, or ``1e-5`` for ``n`` up to
    ``10^4``). The fit still runs and reports what it spent.
    """


class PrivacyAccountingError(ValueError):
    """The accountant cannot price a mechanism description it was given."""


class SpentFitError(ValueError):
    """A fit was refused **after** a private step had already read the data and spent budget.

    E.g. ``classes="auto"`` selected fewer than 2 labels: the label-set
    selection ran (a release, although its outcome only serves to refuse), so
    the privacy it spent is gone even though no model is fitted. The error
    carries it, so that it can be counted without a ledger (a ledger was
    charged the whole fit before the data was read, and keeps that charge).

    Attributes
    ----------
    privacy_spent : PrivacyBudget
        What the steps that ran cost, by the shared accountant, at the
        estimator's ``delta`` (replace-one neighbours, public ``n``).
    privacy_events : list
        Their privacy events (compose them with others, e.g. in
        :func:`skdp.privacy.price`).
    """

    def __init__(self, message, privacy_spent, privacy_events):
        super().__init__(message)
        self.privacy_spent = privacy_spent
        self.privacy_events = list(privacy_events)

    def __reduce__(self):  # picklable (joblib workers) with its attributes
        return (type(self), (self.args[0], self.privacy_spent, self.privacy_events))


class UncertifiedSolutionError(RuntimeError):
    """A solver could not certify that the point it would release is covered by its privacy proof.

    Objective perturbation's guarantee holds for the exact minimiser of the
    perturbed objective only; when the optimiser cannot certify that its
    point is one (its gradient norm above the certificate's tolerance), the
    fit releases nothing and raises this error. The message says in words what
    failed: the exact numbers (the gradient norm at the point is a statistic of
    the private rows) are not in it, so that a log of the error publishes
    nothing about the data. The data holder reads them in
    :func:`skdp.fit_diagnostics` of the estimator (``kkt_residual``).
    """

    def __init__(self, message, diagnostics=None):
        super().__init__(message)
        # exact statistics for fit_diagnostics; taken off the error by the fit before it propagates
        self._diagnostics = dict(diagnostics or {})


class BudgetExceededError(RuntimeError):
    """A fit was refused because it would exceed a ledger's budget.

    Before touching the data, on its plan; or, rarely, after it ran and before
    anything is released, when the events it ran cost more at the ledger's
    delta than its plan and the budget does not cover them (see
    :meth:`skdp.PrivacyLedger.amend`).
    """
