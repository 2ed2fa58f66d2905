"""Budget-aware model selection: DPGridSearchCV and the cost of a plain search.

References
----------
.. [1] F. McSherry and K. Talwar, "Mechanism design via differential privacy", FOCS 2007.
"""

import math
import uuid
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier, _fit_context
from sklearn.model_selection import ParameterGrid, check_cv
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, _routing_enabled, process_routing
from sklearn.utils.validation import (
    _num_features,
    _num_samples,
    check_array,
    check_consistent_length,
    check_is_fitted,
    indexable,
)

from ..privacy import ApproxDPEvent, BoundedRangeEvent, PrivacyBudget, gumbel_scale, price, report_noisy_max
from ..privacy.ledger import active_ledger, suspend_active_ledger
from .._random import assign_child_seed, child_source, generator, root_seed, shared_sources
from .._protocol import check_charged
from .._utils import (dp_steps, leak_message, leaky_steps, named_steps, planned_leaf_events, plans_nothing, step_kind,
                      walk_steps)
from ..exceptions import PrivacyLeakWarning
from ..privacy.accounting import gdp_epsilon, gdp_mu

__all__ = ["DPGridSearchCV", "search_privacy_cost", "planned_events_of"]

_BUDGET_PARAMS = ("epsilon", "delta", "random_state")
# the selection's share of epsilon when it composes sequentially with the fits (k folds, or a refit)
_SELECTION_SHARE = 0.2


def planned_events_of(estimator, n_samples, n_features=None, n_targets=None, feature_names=None):
    """Events a fit of ``estimator`` (an skdp estimator or a Pipeline of them) on ``n_samples`` rows releases.

    DP steps are found wherever they are nested (a
    :class:`~sklearn.compose.ColumnTransformer`, a
    :class:`~sklearn.pipeline.FeatureUnion`, a nested Pipeline), and each is
    planned with the width of its own input, computed from public
    information: ``n_features`` (the columns of ``X``), the
    ColumnTransformer's column selections (resolved by name with
    ``feature_names``, the columns of a DataFrame, when they need it),
    encoders with given categories (the sum of the category counts, minus the
    dropped ones) and fitted public steps. Where a width is not known that
    way, the step is planned without it (explicit bounds suffice), or a
    ``ValueError`` names the step and the widths. ``n_targets``: the number of
    columns of a 2-D ``y`` (``None`` for a 1-D ``y``), passed to the final
    step (a multi-output :class:`~skdp.DPRidge`).

    Returns ``None`` if some DP step has no finite guarantee; raises
    ``TypeError`` if the estimator contains no skdp step at all.
    """
    if not dp_steps(estimator):
        raise TypeError(f"{type(estimator).__name__} contains no skdp estimator; nothing to price.")
    return planned_leaf_events(estimator, n_samples, n_features, n_targets, feature_names)


def _feature_names(X):
    """Column names of a DataFrame ``X`` (public), to resolve a ColumnTransformer's selections; else ``None``."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = list(columns)
    return names if all(isinstance(c, str) for c in names) else None


def search_privacy_cost(search, X, y=None, delta=None):
    """What a plain sklearn ``GridSearchCV`` / ``RandomizedSearchCV`` over skdp estimators costs.

    Every candidate is fitted on every cross-validation training fold, and the
    best one is refitted on all rows (``refit=True``); all those fits see the
    same private data, so their events compose sequentially, priced by the
    shared accountant at ``delta``. Choosing the best candidate by its
    validation score is itself a release that this number does **not** cover
    (the search reads the validation folds without noise): the true cost of a
    non-private search is unbounded. Use :class:`DPGridSearchCV` for a search
    with a guarantee.

    Parameters
    ----------
    search : GridSearchCV or RandomizedSearchCV (fitted or not)
    X, y : the data the search is (or was) fitted on; only sizes and, for
        stratified splitters, labels are read, to get the fold sizes.
    delta : float or None
        Delta to price at; default the estimator's ``delta``.

    Returns
    -------
    PrivacyBudget
        ``epsilon=inf`` if a candidate reads a bound from the data; also, with
        a :class:`~skdp.PrivacyLeakWarning`, if the estimator or any
        candidate (a grid value may swap in a step or a whole Pipeline) has a
        step that is not DP and learns from the rows (see
        :func:`skdp.pipeline_privacy_spent`), or if a DP step of either has a
        user-given ``random_state``: ``clone`` copies the seed into every fold and
        candidate, so all those fits draw the same noise and are not
        independent releases.
    """
    if hasattr(search, "cv_results_"):
        candidates = list(search.cv_results_["params"])
    elif hasattr(search, "param_grid"):
        candidates = list(ParameterGrid(search.param_grid))
    else:
        from sklearn.model_selection import ParameterSampler

        candidates = list(ParameterSampler(search.param_distributions, search.n_iter,
                                           random_state=search.random_state))
    X, y = indexable(X, y)
    cv = check_cv(search.cv, y, classifier=is_classifier(search.estimator))
    sizes = [len(train) for train, _ in cv.split(X, y)]
    n = _num_samples(X)
    nf, names = _num_features(X), _feature_names(X)
    base = search.estimator
    # a multi-output regressor's plan depends on the number of targets (public, like n)
    n_targets = np.shape(y)[1] if np.ndim(y) == 2 and not is_classifier(base) else None
    if delta is None:
        delta = _find_delta(base)
    # every candidate, as the search builds it (grid values may swap in steps), before anything is priced
    built = [(params, _candidate(base, params)) for params in candidates]
    for params, est in [({}, base), *built]:
        leaks = leaky_steps(est)
        if leaks:
            where = f" (in the candidate setting {sorted(params)})" if params else ""
            warnings.warn(f"search_privacy_cost is inf{where}: {leak_message(leaks, has_dp=True)}",
                          PrivacyLeakWarning, stacklevel=2)
            return PrivacyBudget(math.inf, delta)
    seeded = sorted({type(s).__name__ for _, est in [({}, base), *built] for s in dp_steps(est)
                     if s.random_state is not None and not plans_nothing(s)})
    if seeded and len(candidates) * (len(sizes) + int(bool(search.refit))) > 1:
        warnings.warn(
            f"search_privacy_cost is inf: {seeded} have a fixed random_state, which clone copies into every "
            "candidate and fold, so their fits share noise. Leave random_state=None in a search.",
            PrivacyLeakWarning, stacklevel=2,
        )
        return PrivacyBudget(math.inf, delta)
    events = []
    for _, est in built:
        for m in sizes:
            ev = planned_events_of(est, m, nf, n_targets, names)
            if ev is None:
                return PrivacyBudget(math.inf, delta)
            events.extend(ev)
    if not search.refit:
        return price(events, delta).budget
    # One refit on all rows: the chosen candidate's if the search has run, otherwise
    # the most expensive candidate's (the choice is not known in advance).
    refits = [search.best_params_] if hasattr(search, "best_params_") else candidates
    costs = []
    for params in refits:
        ev = planned_events_of(_candidate(base, params), n, nf, n_targets, names)
        if ev is None:
            return PrivacyBudget(math.inf, delta)
        costs.append(price(events + ev, delta).budget)
    return max(costs, key=lambda b: b.epsilon)


def _candidate(base, params):
    """A fresh candidate: a clone of ``base`` given the grid values ``params``, themselves cloned.

    As in scikit-learn's searches (``clone(params, safe=False)``): an estimator
    given as a grid value is copied, so no candidate shares a step object with
    the grid or with another candidate (a step fitted for one candidate can
    never be published with another), and setting a candidate's budget never
    changes the user's objects.
    """
    return clone(base).set_params(**clone(params, safe=False))


def _find_delta(est):
    steps = dp_steps(est)
    if not steps:
        raise TypeError("No skdp estimator found.")
    return steps[0].delta


def _set_budget(est, epsilon, delta, seed=None):
    """Give a candidate ``(epsilon, delta)``, split equally across its DP steps (basic composition).

    ``seed`` is ``(SeedSequence, source)``: each DP step's next fit draws from its own child of it. A DP
    step inside a ColumnTransformer is not given one: the ColumnTransformer fits a clone, which keeps the
    budget (a parameter) but not the child seed; its ``random_state`` is ``None`` (checked before the
    search), so it draws fresh OS entropy.
    """
    # a step that releases nothing (an encoder with given categories) takes no share
    dp = [leaf for leaf in walk_steps(est) if step_kind(leaf.step) == "dp" and not plans_nothing(leaf.step)]
    children = [None] * len(dp)
    if seed is not None:
        seq, source = seed
        children = [(c, child_source(source, i)) for i, c in enumerate(seq.spawn(len(dp)))]
    for leaf, child in zip(dp, children):
        leaf.step.set_params(epsilon=epsilon / len(dp), delta=delta / len(dp))
        if child is not None and not leaf.cloned:
            assign_child_seed(leaf.step, *child)
    return est


def _fit_one(est, X, y, **fit_params):
    return est.fit(X, y, **fit_params)


class DPGridSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Differentially private hyperparameter search with one total budget.

    The rows are split once, at random positions fixed by ``random_state``
    (the split does not depend on the data), into a training part and a
    validation part. Every candidate is fitted on the training part with the
    same per-candidate budget, chosen so that the accountant prices **all**
    candidate fits together at no more than ``(epsilon, delta)`` as planned
    (a one-vs-rest candidate with ``classes="auto"`` is planned as one binary
    fit and may run releases priced slightly above it; ``privacy_spent_`` and
    a ledger count what ran). Each candidate's validation score (accuracy for
    classifiers; minus the mean squared error clipped to the public label
    range for regressors) has replace-one sensitivity ``s = 1/n_val``
    (``range^2/n_val``), and the best candidate is chosen with the
    exponential mechanism (Gumbel report-noisy-max, scale ``2s/epsilon``;
    McSherry and Talwar 2007) using the whole epsilon on the validation part.

    Privacy (replace-one, ``n`` public): a changed row lies either in the
    training part, where the output is post-processing of the candidate fits
    (priced together by the accountant at ``epsilon_train``), or in the
    validation part, where only the selection reads it (``epsilon``-DP). So
    the search is ``(max(epsilon_train, epsilon), delta)``-DP (parallel
    composition over a data-independent partition): ``(epsilon, delta)`` as
    planned. By default (``refit=False``) the returned model is the selected
    candidate as fitted on the training part; there is no refit on all rows
    (it would spend more budget). Raw validation scores are never exposed.

    With ``cv=k`` the rows are split, at data-independent random positions,
    into ``k`` folds; every candidate is fitted on each fold's complement, and
    its score sums, over the folds, the fold's rows scored by the fit that did
    not train on them: each of the ``n`` rows is scored once, so the score
    (accuracy over all ``n`` rows) has replace-one sensitivity ``1/n`` given
    the fits. A row is now both trained on and scored, so the ``k x
    n_candidates`` fits, the selection (a fixed 20% of ``epsilon``, at
    sensitivity ``1/n``) and, with ``refit=True``, the refit of the chosen
    candidate on all ``n`` rows (planned as the most expensive candidate's)
    compose sequentially, priced together by the accountant at
    ``(epsilon, delta)``. ``refit=True`` with ``cv=None`` is priced the same
    way (sequentially, which bounds the parallel composition above).

    Parameters
    ----------
    estimator : skdp estimator or Pipeline ending in one
        Its ``epsilon`` and ``delta`` are set by the search (split equally
        across the DP steps of a Pipeline, e.g. a
        :class:`~skdp.DPStandardScaler` and the model). Every other step, in
        the estimator and in every candidate of ``param_grid`` (a grid value
        may swap in a step or a whole Pipeline), must learn nothing from the
        rows (``FunctionTransformer``, ``Normalizer``) or be declared fitted
        on public data (:class:`sklearn.frozen.FrozenEstimator`); a step such
        as sklearn's ``StandardScaler`` is refused with a ``ValueError``
        naming it, and every candidate must end in an skdp classifier
        (regressor) as the estimator does. The
        steps' own ``random_state`` is not used: each DP step of each
        candidate draws its noise from an independent child
        (``numpy.random.SeedSequence.spawn``) of the search's
        ``random_state``, which never becomes a parameter of the fitted
        candidates. A Pipeline with ``memory`` set is refused (``ValueError``
        naming ``memory``): it fits clones of its steps, which would not get
        those seeds; and if two candidates' DP steps still drew the same noise
        (equal ``noise_source_``) the fit raises ``ValueError`` and releases
        nothing. A regressor needs a public ``label_bound`` (in the estimator
        or in every candidate of ``param_grid``) for the private selection;
        all of this is checked before any budget is charged or any candidate
        is fitted, except the noise comparison, which needs the fits.
    param_grid : dict or list of dicts
        As in :class:`sklearn.model_selection.GridSearchCV`; must not contain
        ``epsilon``, ``delta`` or ``random_state``. Its values are cloned for
        each candidate (``clone(value, safe=False)``, as scikit-learn's
        searches do): candidates share no step, and the grid's own objects
        are neither fitted nor given a budget.
    epsilon : float, default=1.0
        Total epsilon for the whole search, > 0 and finite (``inf`` is
        refused: a search without privacy is scikit-learn's ``GridSearchCV``).
    delta : float, default=1e-5
        Total delta for the whole search.
    validation_fraction : float, default=0.2
        Share of rows used only for the private selection.
    n_jobs : int or None, default=None
        Parallel candidate fits (joblib).
    random_state : int, RandomState instance or None, default=None
        Root of the split, the candidates' noise and the selection. ``None``
        takes 128 bits of fresh OS entropy per fit (never numpy's global
        generator). A given seed makes the search reproducible; the guarantee
        then assumes the seed is secret and used for this one search. A DP
        step inside a :class:`~sklearn.compose.ColumnTransformer` (which fits
        clones of its transformers, so the search's seeds cannot reach it)
        must have ``random_state=None`` (``ValueError`` naming it otherwise)
        and draws fresh OS entropy.
    cv : None or int, default=None
        ``None``: one private train/validation split (``validation_fraction``).
        An int ``k >= 2``: ``k`` folds at random positions that do not depend
        on the data (see above). Splitter objects and iterables of splits are
        refused (``ValueError``): a stratified or grouped splitter places rows
        by their labels or groups, i.e. by the private data.
    scoring : None, "accuracy" or "neg_mean_squared_error", default=None
        The score of the private selection: accuracy for a classifier; for a
        regressor minus the mean squared error with predictions and labels
        clipped to the public ``label_bound`` (unlike scikit-learn's, which is
        unbounded). Any other scorer is refused (``ValueError``): the
        selection needs a score whose replace-one sensitivity is known.
    refit : bool, default=False
        ``True`` refits the chosen candidate on all rows (its events are in
        ``privacy_spent_``, composed sequentially). The default differs from
        scikit-learn's because the refit costs budget; without it
        ``best_estimator_`` is the chosen candidate as fitted on its training
        part (with ``cv=k``, on the first fold's complement).

    Attributes
    ----------
    best_estimator_ : estimator
        The selected candidate, fitted on the training part (itself DP), or on
        all rows with ``refit=True``.
    best_params_ : dict
    best_index_ : int
    candidate_budget_ : PrivacyBudget
        The (epsilon, delta) each candidate fit (and the refit) was given.
    privacy_spent_ : PrivacyBudget
        Total for the whole search, every fit and the selection (replace-one,
        ``n`` public), priced from the events the fits ran: with ``cv=None``
        and ``refit=False``, ``max`` of the accountant's price of all
        candidate fits at ``delta`` and the selection's ``epsilon``;
        otherwise the accountant's price of all of them together.
    n_splits_ : int
        Number of splits (1 with ``cv=None``).
    n_train_, n_validation_ : int
        Rows of a training part (the largest, with ``cv=k``), and rows scored
        by the selection (all ``n`` with ``cv=k``).
    noise_source_ : str
        ``"os-entropy"`` or ``"seed:<digest>"`` of ``random_state`` (see
        :func:`skdp.pipeline_privacy_spent`); a ledger refuses a second search
        with the same seed.
    cv_results_ : dict
        ``{"params": [...]}``: the candidates (no scores: they are private).
    classes_ : ndarray (classifiers)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression
    >>> from skdp.model_selection import DPGridSearchCV
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(2000, 3); y = (X[:, 0] > 0).astype(int)
    >>> search = DPGridSearchCV(DPLogisticRegression(data_norm=3.0, classes=[0, 1]),
    ...                         {"alpha": [0.01, 1.0]}, epsilon=2.0, random_state=0).fit(X, y)
    >>> search.privacy_spent_.epsilon <= 2.0
    True
    >>> kfold = DPGridSearchCV(DPLogisticRegression(data_norm=3.0, classes=[0, 1]), {"alpha": [0.01, 1.0]},
    ...                        epsilon=2.0, cv=3, refit=True, random_state=0).fit(X, y)
    >>> kfold.privacy_spent_.epsilon <= 2.0 + 1e-9
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "param_grid": [dict, list],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "cv": "no_validation",  # checked by _check_search_params, with a message naming what is allowed
        "scoring": "no_validation",
        "refit": ["boolean"],
    }

    def __init__(self, estimator, param_grid, *, epsilon=1.0, delta=1e-5, validation_fraction=0.2,
                 n_jobs=None, random_state=None, cv=None, scoring=None, refit=False):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.validation_fraction = validation_fraction
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.cv = cv
        self.scoring = scoring
        self.refit = refit

    def _check_search_params(self):
        """``cv``, ``scoring`` and ``refit`` as the private search allows them (before any data is read)."""
        cv = self.cv
        if cv is not None and (isinstance(cv, bool) or not isinstance(cv, Integral) or cv < 2):
            raise ValueError(
                f"cv must be None (one private train/validation split) or an int >= 2 (k folds at "
                f"data-independent random positions), got {type(cv).__name__}. A splitter object or an "
                "iterable of splits is refused: a stratified or grouped splitter places rows by their labels "
                "or groups, so the folds would depend on the private data.")
        allowed = "accuracy" if is_classifier(self.estimator) else "neg_mean_squared_error"
        if self.scoring is not None and not (isinstance(self.scoring, str) and self.scoring == allowed):
            what = repr(self.scoring) if isinstance(self.scoring, str) else type(self.scoring).__name__
            raise ValueError(
                f"scoring must be None or {allowed!r} for this estimator, got {what}: the private selection "
                "needs a score whose change under the replacement of one row is known (accuracy: 1/n; the mean "
                "squared error with predictions and labels clipped to the public label_bound: width^2/n).")

    def _candidates(self):
        cands = list(ParameterGrid(self.param_grid))
        for c in cands:
            bad = [k for k in c if k.rsplit("__", 1)[-1] in _BUDGET_PARAMS]
            if bad:
                raise ValueError(
                    f"param_grid must not contain {bad}: DPGridSearchCV allocates the budget itself."
                )
        return cands

    def _sequential(self):
        """Whether a row can be both trained on and scored (k folds, or a refit on all rows)."""
        return self.cv is not None or bool(self.refit)

    def _selection_epsilon(self):
        """The selection's epsilon: all of it on a held-out part, else a fixed public share."""
        return _SELECTION_SHARE * self.epsilon if self._sequential() else self.epsilon

    def _allocate(self, cands, train_sizes, n_refit=None, n_features=None, feature_names=None):
        """Largest per-fit epsilon whose composition the accountant prices <= epsilon.

        ``train_sizes``: the rows each candidate is fitted on, once per split;
        ``n_refit``: the rows of the refit (``None``: no refit). With one
        held-out split and no refit, the candidate fits are priced together
        (the selection reads only the validation part). Otherwise every fit,
        the selection and the refit (of the most expensive candidate: the
        choice is not known in advance) are priced together.
        """
        n_fits = len(cands) * len(train_sizes) + int(n_refit is not None)
        d_c = self.delta / n_fits
        selection = [BoundedRangeEvent(self._selection_epsilon())] if self._sequential() else []

        def plan(params, eps_c, rows):
            est = _set_budget(_candidate(self.estimator, params), eps_c, d_c, None)
            ev = planned_events_of(est, rows, n_features, feature_names=feature_names)
            if ev is None:
                raise ValueError(
                    "Every candidate needs public bounds (data_norm, classes / label_bound) "
                    "for the search to have a guarantee."
                )
            return ev

        def total(eps_c):
            events = [ev for params in cands for m in train_sizes for ev in plan(params, eps_c, m)]
            refits = [plan(params, eps_c, n_refit) for params in cands] if n_refit is not None else [[]]
            return max(price(events + selection + r, self.delta).budget.epsilon for r in refits)

        # Start from the exact answer for Gaussian fits: mu_c = mu*/sqrt(k).
        k = n_fits
        guess = gdp_epsilon(gdp_mu(self.epsilon, self.delta) / math.sqrt(k), d_c) if self.delta > 0 else self.epsilon / k
        lo, hi = 0.0, min(max(guess, self.epsilon / k), self.epsilon)
        while total(hi) <= self.epsilon and hi < self.epsilon:
            lo, hi = hi, min(hi * 1.5, self.epsilon)
        if total(hi) <= self.epsilon:
            return hi, d_c
        if lo == 0.0:
            lo = self.epsilon / k / 4
            while total(lo) > self.epsilon:
                lo /= 2
                if lo < self.epsilon / k * 1e-4:  # pragma: no cover - the fits' share always has room
                    raise RuntimeError("DPGridSearchCV found no per-fit budget within epsilon (not even 1e-4 "
                                       "of an equal share).")
        for _ in range(30):
            if hi / lo - 1 < 1e-3:
                break
            mid = math.sqrt(lo * hi)
            if total(mid) <= self.epsilon:
                lo = mid
            else:
                hi = mid
        return lo, d_c

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, privacy_ledger=None, **params):
        """Run the private search.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        privacy_ledger : PrivacyLedger or None, default=None
            Charge the whole search, once, as an ``(epsilon, delta)`` release
            before any row is read (its candidate fits are not charged
            separately). Should ``privacy_spent_`` come out above the charge
            (see above), the record is amended to it if the ledger's budget
            allows; otherwise ``BudgetExceededError`` is raised and nothing is
            released. ``None`` uses the ledger of an enclosing ``with
            ledger:`` block, if any.
        **params : dict
            Fit parameters of the candidates, e.g. ``sample_weight``; an array
            of one value per row is split with the rows (the candidates get
            the training part). With ``sklearn.set_config(enable_metadata_routing=True)``
            they are routed as the estimator requests them (``set_fit_request``,
            on the steps of a Pipeline); without it they are passed to the
            estimator's ``fit``. The private selection scores the validation
            rows unweighted (its sensitivity is that of one unweighted row).

        Returns
        -------
        self : object
        """
        if _routing_enabled():
            fit_params = process_routing(self, "fit", **params).estimator.fit
        else:
            fit_params = params
        cands = self._candidates()
        self._check_search_params()
        self._check_estimator(cands)
        # shape checks only (the candidates validate the values): a clear error before any split
        check_consistent_length(check_array(X, accept_sparse=True, ensure_all_finite=False, dtype=None), y)
        if not is_classifier(self.estimator) and np.asarray(y).ndim != 1:
            # the private selection scores one target against one public label range
            raise ValueError(f"DPGridSearchCV selects a regressor on one target: y must be 1-D, got shape "
                             f"{np.asarray(y).shape} (fit one search per target).")
        n = _num_samples(X)
        if self.cv is None:
            val_sizes = [max(1, int(round(self.validation_fraction * n)))]
            if n - val_sizes[0] < 1:
                raise ValueError("validation_fraction leaves no training rows.")
        else:
            if self.cv > n:
                raise ValueError(f"cv={self.cv} folds need at least {self.cv} rows, got {n}.")
            val_sizes = [len(part) for part in np.array_split(np.arange(n), self.cv)]  # sizes depend on n only
        eps_c, d_c = self._allocate(cands, [n - v for v in val_sizes], n if self.refit else None,
                                    _num_features(X), _feature_names(X))
        self.__dict__.pop("_ledger_charge", None)  # a charge of an earlier fit never counts for this one
        ledger = privacy_ledger if privacy_ledger is not None else active_ledger()
        root, source = root_seed(self.random_state)
        if ledger is not None:
            # charged before the data is read; _fit makes the record cover what the candidates ran
            charged, record_id = [ApproxDPEvent(self.epsilon, self.delta)], uuid.uuid4().hex
            ledger.charge(charged, label=f"DPGridSearchCV(epsilon={self.epsilon})", noise_source=source,
                          record_id=record_id)
            if hasattr(ledger, "amend"):  # not the suspended ledger of an enclosing composite fit
                self._ledger_charge = (charged, ledger, record_id)
        try:
            with suspend_active_ledger():
                return self._fit(X, y, cands, n, val_sizes, eps_c, d_c, root, source, fit_params)
        finally:
            self.__dict__.pop("_ledger_charge", None)  # no ledger handle stays on the estimator

    def get_metadata_routing(self):
        """Routing of the fit parameters to the candidates' ``fit`` (see :meth:`fit`).

        Returns
        -------
        routing : MetadataRouter
        """
        return MetadataRouter(owner=self).add(estimator=self.estimator,
                                              method_mapping=MethodMapping().add(caller="fit", callee="fit"))

    def _check_estimator(self, cands=({},)):
        """A DP estimator, or a Pipeline whose steps are all DP, stateless or declared public.

        The estimator and every candidate (``cands``: the parameter settings of
        the grid, built as the search builds them, so a grid value that swaps
        in a step or a whole Pipeline is checked with its nested steps) are
        checked before the ledger is charged or any candidate is fitted: no
        step that is not DP learns from the rows (``ValueError`` naming it),
        the last step is an skdp classifier (regressor) as the estimator's is,
        no Pipeline caches its steps (``memory``), and a regressor has a public
        ``label_bound`` for the private selection.
        """
        _check_candidate(self.estimator, "", is_classifier(self.estimator))
        for params in cands:
            where = f" (the param_grid candidate setting {sorted(params)})"
            candidate = _candidate(self.estimator, params)
            _check_candidate(candidate, where, is_classifier(self.estimator))
            cached = _cached_pipelines(candidate)
            if cached:
                # Pipeline._fit clones a step before fitting it when memory is set, which drops the
                # child seed the search assigns: the step would fall back to its own random_state
                raise ValueError(
                    f"DPGridSearchCV refuses a Pipeline with memory set ({cached}): a cached Pipeline "
                    "fits clones of its steps, which lose the independent noise seed the search gives "
                    "each candidate (candidates with a fixed random_state would draw the same noise), "
                    "and its cache stores fitted steps. Use memory=None.")
            if not is_classifier(candidate) and getattr(_dp_step(candidate), "label_bound", None) is None:
                raise ValueError("A regressor in DPGridSearchCV needs a public label_bound to score privately "
                                 "(the selection clips predictions and labels to it); label_bound=None reads "
                                 "it from the data. Pass label_bound.")

    def _fit(self, X, y, cands, n, val_sizes, eps_c, d_c, root, source, fit_params=None):
        X, y = indexable(X, y)
        fit_params = fit_params or {}
        k = len(cands)
        # one root per search (fresh OS entropy for random_state=None): child 0 drives the split and the
        # selection, child 1 + j k + i every DP step of candidate i on split j, the last one the refit
        # (independent noise, never a parameter)
        seeds = root.spawn(k * len(val_sizes) + 1 + int(bool(self.refit)))
        rng = generator(seeds[0])
        perm = rng.permutation(n)
        if self.cv is None:
            folds = [np.sort(perm[:val_sizes[0]])]
        else:
            folds = [np.sort(part) for part in np.array_split(perm, len(val_sizes))]

        fitted, validation = [], []
        for j, val_idx in enumerate(folds):
            train_idx = np.setdiff1d(np.arange(n), val_idx)
            Xt, yt = _take(X, train_idx), _take(y, train_idx)
            train_params = {key: (_take(value, train_idx) if _num_rows(value) == n else value)
                            for key, value in fit_params.items()}
            ests = [_set_budget(_candidate(self.estimator, p), eps_c, d_c,
                                (seeds[1 + j * k + i], child_source(source, 1 + j * k + i)))
                    for i, p in enumerate(cands)]
            fitted.append(Parallel(n_jobs=self.n_jobs)(delayed(_fit_one)(e, Xt, yt, **train_params)
                                                       for e in ests))
            validation.append((_take(X, val_idx), np.asarray(_take(y, val_idx))))
        _refuse_shared_noise([e for split in fitted for e in split])

        # Private selection: the validation parts' scores summed over the splits
        label_range = None if is_classifier(self.estimator) else _label_range(fitted[0][0])
        eps_sel = self._selection_epsilon()
        if self.cv is None:
            best = _private_selection(fitted[0], *validation[0], eps_sel, rng, label_range)
        else:
            best = _private_selection(fitted, [v[0] for v in validation], [v[1] for v in validation], eps_sel,
                                      rng, label_range)
        selection = [BoundedRangeEvent(eps_sel)]
        chosen = fitted[0][best]
        if self.refit:
            chosen = _set_budget(_candidate(self.estimator, cands[best]), eps_c, d_c,
                                 (seeds[-1], child_source(source, len(seeds) - 1)))
            chosen = _fit_one(chosen, X, y, **fit_params)
            _refuse_shared_noise([e for split in fitted for e in split] + [chosen])

        # priced from the events the fits ran (a one-vs-rest candidate with classes="auto" plans a
        # binary fit, and its releases can price slightly above that plan at the search's delta)
        train_events = [ev for split in fitted for e in split for ev in _events_of(e)]
        if self._sequential():
            # a row is trained on and scored (k folds), or refitted on: everything composes sequentially
            refit_events = _events_of(chosen) if self.refit else []
            spent = price(train_events + refit_events + selection, self.delta).budget
        else:
            train_cost = price(train_events, self.delta).budget
            sel_cost = price(selection, 0.0).budget
            # Parallel composition over the data-independent partition (see the class docstring).
            spent = PrivacyBudget(max(train_cost.epsilon, sel_cost.epsilon), self.delta)
        # the ledger's record must cover what is released: amended if the budget allows, else nothing is
        check_charged(self, [ApproxDPEvent(spent.epsilon, spent.delta)])
        self.privacy_spent_ = spent
        self.candidate_budget_ = PrivacyBudget(eps_c, d_c)
        self.noise_source_ = source
        self.best_index_ = best
        self.best_params_ = cands[best]
        self.best_estimator_ = chosen
        self.cv_results_ = {"params": cands}
        self.n_splits_ = len(folds)
        self.n_train_, self.n_validation_ = n - min(val_sizes), sum(val_sizes)
        if hasattr(self.best_estimator_, "classes_"):
            self.classes_ = self.best_estimator_.classes_
        self.n_features_in_ = getattr(self.best_estimator_, "n_features_in_", None)
        return self

    def predict(self, X):
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    def predict_proba(self, X):
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    def decision_function(self, X):
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    def score(self, X, y):
        check_is_fitted(self)
        return self.best_estimator_.score(X, y)


def _check_candidate(est, where, classifier):
    """Refuse (before any fit) an estimator or candidate that is not a private predictor of the search's kind.

    ``where`` names the param_grid candidate in the message (empty for the
    estimator itself); ``classifier``: whether the estimator is a classifier.
    """
    leaks = leaky_steps(est)
    if leaks:
        raise ValueError(f"DPGridSearchCV refuses this estimator{where}: {leak_message(leaks, has_dp=True)}")
    steps = dp_steps(est)
    if not steps:
        raise TypeError(f"DPGridSearchCV needs an skdp estimator, or a Pipeline ending in one; got "
                        f"{type(est).__name__}{where}.")
    seeded = [leaf.name for leaf in walk_steps(est) if leaf.cloned and step_kind(leaf.step) == "dp"
              and leaf.step.random_state is not None and not plans_nothing(leaf.step)]
    if seeded:
        # a ColumnTransformer fits clones: the search's independent child seeds cannot reach them, and a
        # fixed seed would be copied into every candidate's clone (the same noise in every candidate)
        raise ValueError(f"DPGridSearchCV refuses the DP step(s) {seeded}{where}: inside a ColumnTransformer "
                         "(which fits clones of its transformers) a DP step must have random_state=None, so "
                         "that each candidate's clone draws fresh noise.")
    name, final = named_steps(est)[-1]
    if final is not steps[-1] or not hasattr(final, "predict"):
        raise TypeError(f"The Pipeline given to DPGridSearchCV must end in an skdp estimator (a DP classifier "
                        f"or regressor); it ends in {type(final).__name__} (step {name!r}){where}.")
    if is_classifier(est) != classifier:
        kind = "classifier" if classifier else "regressor"
        raise ValueError(f"DPGridSearchCV's estimator is a {kind}, and so must every candidate be (the private "
                         f"selection scores them alike); the step {name!r}{where} is not.")


def _private_selection(fitted, X_val, y_val, epsilon, rng, label_range=None):
    """Index of the candidate the exponential mechanism picks on the validation rows (``epsilon``-DP).

    The score of a fitted candidate is its accuracy on the ``n_val =
    len(y_val)`` rows (``label_range=None``), or minus its mean squared error
    with predictions and labels clipped to the public ``label_range = (low,
    high)``. With k folds, ``fitted`` holds one list of candidates per split
    and ``X_val``, ``y_val`` are lists of the splits' validation parts (they
    partition the rows): each row is scored once, by the fits that did not
    train on it, and ``n_val`` is the number of all scored rows. Given the
    fits, replacing one row moves each score by at most ``s = 1/n_val``
    (``(high - low)^2/n_val``); the choice is Gumbel report-noisy-max at the
    shared :func:`~skdp.privacy.gumbel_scale` of ``s`` (priced as
    ``BoundedRangeEvent(epsilon)``). The scores are never returned.
    """
    splits = list(zip(fitted, X_val, y_val)) if isinstance(y_val, list) else [(fitted, X_val, y_val)]
    n_val = sum(len(yv) for _, _, yv in splits)
    if label_range is None:
        hits = np.sum([[np.sum(e.predict(Xv) == yv) for e in split] for split, Xv, yv in splits], axis=0)
        scores = [float(h) / n_val for h in hits]
        sensitivity = 1.0 / n_val
    else:
        low, high = label_range
        width2 = (high - low) ** 2
        losses = np.sum([[np.sum(np.minimum((np.clip(e.predict(Xv), low, high) - np.clip(yv, low, high)) ** 2,
                                            width2)) for e in split] for split, Xv, yv in splits], axis=0)
        scores = [-float(loss) / n_val for loss in losses]
        sensitivity = width2 / n_val
    return report_noisy_max(rng, scores, gumbel_scale(sensitivity, epsilon))


def _num_rows(value):
    """Number of rows of an array-like fit parameter, else ``None`` (it is passed whole)."""
    try:
        return _num_samples(value)
    except TypeError:
        return None


def _take(A, idx):
    if hasattr(A, "iloc"):
        return A.iloc[idx]
    if A is None:
        return None
    return A[idx] if hasattr(A, "shape") else [A[i] for i in idx]


def _dp_step(est):
    """The final DP step (the model) of a candidate."""
    return dp_steps(est)[-1]


def _cached_pipelines(est, prefix=""):
    """Names of ``est`` and its nested Pipelines whose ``memory`` is set (``"pipeline"`` for ``est``)."""
    if not hasattr(est, "steps"):
        return []
    found = [prefix.rstrip("_") or "pipeline"] if getattr(est, "memory", None) is not None else []
    for name, step in est.steps:
        found += _cached_pipelines(step, f"{prefix}{name}__")
    return found


def _refuse_shared_noise(fitted):
    """``ValueError`` if two DP steps of the fitted candidates drew the same noise (nothing is released).

    Every DP step of every candidate draws from its own child seed; a step
    whose fit did not use it (a wrapper that refits a clone) falls back to its
    own ``random_state``, and two seeded fits would then share noise: their
    releases are not independent and the search's price would not hold.
    """
    steps = [s for e in fitted for s in dp_steps(e, fitted=True)]
    shared = shared_sources(getattr(s, "noise_source_", None) for s in steps)
    if shared:
        names = sorted({type(s).__name__ for s in steps if getattr(s, "noise_source_", None) in shared})
        raise ValueError(
            f"DPGridSearchCV refuses to release a candidate: the DP steps {names} of different candidates drew "
            "the same noise (equal noise_source_, from their own fixed random_state instead of the search's "
            "independent seeds), so they are not independent releases. Leave random_state=None on the "
            "steps. Nothing was released.")


def _events_of(est):
    """The events a fitted candidate's DP steps ran (the fitted clones inside a ColumnTransformer)."""
    return [ev for step in dp_steps(est, fitted=True) for ev in step.privacy_events_]


def _label_range(est):
    step = _dp_step(est)
    if not hasattr(step, "label_bound_") or step.label_bound is None:
        raise ValueError("A regressor in DPGridSearchCV needs a public label_bound to score privately.")
    return step.label_bound_
