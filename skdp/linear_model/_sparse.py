"""DPSparseLinearRegression and DPSparseLogisticRegression (``||w||_0 <= s``)."""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context, is_classifier
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from ..bounds import (bound_labels, check_label_bound, clip_features, private_clip_norm, private_label_range,
                      public_label_range)
from ..losses import LogisticLoss, SquaredLoss
from ..privacy import BoundedRangeEvent
from ..solvers._base import selection_secure_option
from ..solvers import SolverChoice, get_solver
from ..solvers.sparse import PublicSparseProblem, SparseProblem
from .._weights import (CLASS_WEIGHT_CONSTRAINTS, WEIGHT_CONSTRAINTS, check_weight_params, class_weighted, row_weights,
                        sample_weights, weight_bound)
from ._base import refuse_unreliable_selection, selection_epsilon, solver_budget
from .._plan import FitPlan, PublicFit, make_plan, public_fit
from .._fit import Bounds, private_fit, run_solver
from .._classes import check_class_set, class_selection_events, fit_classes, refused_after_selection, zero_rows
from .._ovr import one_vs_rest, ovr_targets
from .._predict import LinearRegressorMixin, ProbabilisticClassifierMixin

__all__ = ["DPSparseLinearRegression", "DPSparseLogisticRegression"]

class _DPSparseBase(BaseEstimator):
    """Shared fit: validate -> clip -> (private clip norm) -> sparse solver -> price."""

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "n_nonzero_coefs": [Interval(Integral, 1, None, closed="left"), None],
        "solver": [SolverChoice(lambda s: s.constraint == "l0")],
        "fit_intercept": ["boolean"],
        "feature_bound": [Interval(Real, 0, None, closed="neither")],
        "clip_norm": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "bound_budget_fraction": [Interval(Real, 0, 1, closed="neither")],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "solver_options": [dict, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        **WEIGHT_CONSTRAINTS,
    }

    #: what ``solver="auto"`` runs
    default_solver = "noisy_iht"
    #: no sparse solver's proof covers a multinomial loss
    multinomial = False
    #: clip_norm="auto": the clip norm is a private quantile of the per-example gradient norms at w = 0, at
    #: this level up to n * epsilon = ``_auto_clip_knee`` (see :meth:`_auto_clip_quantile_for`)
    _auto_clip_quantile = 0.25
    _auto_clip_knee = 500.0
    #: level the rising quantile reaches at large n * epsilon (here: no rise; the regressor's rises)
    _auto_clip_quantile_max = 0.25
    #: rise of the level per decade of n * epsilon above the knee
    _auto_clip_rise = 0.25

    # -- hooks -----------------------------------------------------------------------------
    def _loss(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _label_bound_public(self):
        return None

    def _public_n_classes(self):
        """Number of classes known before the fit (2 for a regressor, and for a label set chosen in the fit)."""
        return 2

    # -- helpers ---------------------------------------------------------------------------
    def _check_params(self):
        """Checks the constraint table cannot express; run before any data is read."""
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        if not math.isfinite(self.feature_bound):
            raise ValueError(f"feature_bound must be finite, got {self.feature_bound!r}.")
        if self.clip_norm != "auto" and not math.isfinite(self.clip_norm):
            raise ValueError(f"clip_norm must be finite or 'auto', got {self.clip_norm!r}.")
        check_weight_params(self)
        solver = get_solver(self.default_solver if self.solver == "auto" else self.solver)
        solver.check(self._loss().name, self.delta)
        solver.check_options(self.solver_options or {})
        return solver

    def _n_nonzero(self, n_features):
        """``n_nonzero_coefs``, or 10% of the features (at least 1), as sklearn's OMP does."""
        if self.n_nonzero_coefs is not None:
            if self.n_nonzero_coefs > n_features:
                raise ValueError(f"n_nonzero_coefs={self.n_nonzero_coefs} is more than the number of features "
                                 f"({n_features}).")
            return int(self.n_nonzero_coefs)
        return max(int(0.1 * n_features), 1)

    def _auto_clip(self, solver):
        return self.clip_norm == "auto" and solver.clip_order is not None

    def _auto_clip_quantile_for(self, n_samples):
        """Level of the private gradient-norm quantile of ``clip_norm="auto"``, a function of public ``n * epsilon``.

        ``_auto_clip_quantile`` (0.25) up to ``n * epsilon = 500``, rising by
        ``0.25`` per decade to ``_auto_clip_quantile_max``: 0.75 for the
        squared loss, no rise for the logistic loss. The clip trades noise
        (every noise scale is proportional to it) against clipping bias (a
        clipped squared-loss gradient is a Huber gradient, whose fit is pulled
        towards a median); with little noise the bias is what is left, so the
        regressor's clip grows with ``n * epsilon``, as the private row bound
        of :class:`~skdp.DPRidge` does. The logistic gradient is bounded
        already, and there the clip also damps the fixed step ``4 / K^2``, so a
        rising clip lost accuracy at large budgets (:doc:`/user_guide/defaults`).
        """
        n_eps = max(float(n_samples) * float(self.epsilon), 1.0)
        rise = self._auto_clip_rise * math.log10(max(n_eps / self._auto_clip_knee, 1.0))
        return min(self._auto_clip_quantile + rise, self._auto_clip_quantile_max)

    def _n_auto_selections(self, solver):
        """Private bound selections a fit makes before the solver (the clip norm's, when ``"auto"``)."""
        return int(self._auto_clip(solver))

    def _selection_epsilon(self, solver, n_samples):
        """Epsilon of each private bound selection: ``bound_budget_fraction * epsilon`` shared equally."""
        return self.bound_budget_fraction * self.epsilon / self._n_auto_selections(solver)

    def _problem(self, solver, n, n_features, X=None, y=None, clip=None, sample_weight=None):
        """The solver's :class:`~skdp.solvers.SparseProblem` over ``X``, or its data-free
        :class:`~skdp.solvers.PublicSparseProblem` without ``X`` (planning).

        ``clip`` is the estimator's clip norm, the problem's is ``W`` times it.
        """
        p = n_features + bool(self.fit_intercept)
        W = weight_bound(self)
        public = dict(
            loss=self._loss(), n_nonzero=min(self._n_nonzero(n_features), n_features),
            feature_bound=float(self.feature_bound), free=(p - 1) if self.fit_intercept else None,
            label_bound=self._label_bound_public(), clip=None if clip is None else W * clip,
            clip_order=solver.clip_order, learning_rate=self.learning_rate, max_iter=self.max_iter,
            options=dict(self.solver_options or {}), verbose=self.verbose, n_samples=n, n_features=p,
            max_sample_weight=W,
        )
        if X is None:  # planning
            return PublicSparseProblem(**public)
        return SparseProblem(X=X, y=y, sample_weight=sample_weight, **public)

    def _plan(self, public):
        """The fit's :class:`~skdp._plan.FitPlan` (see :func:`skdp._plan.make_plan`).

        The bound choices (:meth:`_n_auto_selections`) share
        ``bound_budget_fraction`` of ``epsilon`` equally
        (:meth:`_selection_epsilon`), the clip norm's first, then the label
        set's selection. The solver's budget is found on the plan with a unit
        clip norm: every noise scale is proportional to the clip norm, so the
        price does not depend on it. ``public.n_features=None`` plans with
        ``n_nonzero_coefs`` features (the sparsity level, not the dimension,
        enters the noise).
        """
        solver = self._check_params()
        n = int(public.n_samples)
        d = int(self.n_nonzero_coefs) if public.n_features is None else int(public.n_features)
        k = self._n_auto_selections(solver)
        eps_sel = self._selection_epsilon(solver, n) if k else 0.0
        selection = class_selection_events(self, n) if hasattr(self, "classes") else []
        pre = [BoundedRangeEvent(eps_sel)] * k + selection
        view = self._problem(solver, n, d, clip=1.0)
        budget, solver_plan = solver_budget(solver, view, pre, self.epsilon, self.delta)
        wrapped = one_vs_rest(solver, self._public_n_classes(), pre, self.delta)
        return FitPlan(public, guaranteed=self._guaranteed_public(), pre_events=pre, selection_epsilon=eps_sel,
                       budget=budget, solver=wrapped, view=view,
                       solver_plan=solver_plan if wrapped is solver else None)

    def planned_events(self, n_samples, n_features=None):
        """The events a fit on an ``(n_samples, n_features)`` array releases, without any data.

        ``n_features`` may be omitted when ``n_nonzero_coefs`` is set (the
        sparsity level, not the dimension, enters the noise).

        Every noise scale is a function of public quantities only. With
        ``clip_norm="auto"`` the clip norm is chosen privately during the fit
        and every noise scale is proportional to it, so pricing with a unit
        clip norm gives the same cost. ``None`` when a bound is read from the
        data (no finite guarantee).
        """
        self._validate_params()
        self._check_params()
        if n_features is None and self.n_nonzero_coefs is None:
            raise ValueError(
                "planned_events needs n_features when n_nonzero_coefs=None (the default sparsity "
                "level is a share of the features)."
            )
        return make_plan(self, PublicFit(int(n_samples), None if n_features is None else int(n_features))).events

    def _guaranteed_public(self):
        return True

    # -- the fit: skdp._fit.private_fit calls _plan_fit, _read, _select_bounds, _run, _set_fitted -------------
    def _plan_fit(self, X, y, sample_weight=None):
        """The fit's plan from public facts only (the parameters' checks included), before any row is read."""
        public = public_fit(X)
        return self._check_params() and None if public is None else make_plan(self, public)

    def _read(self, plan, X, y, sample_weight=None):
        """``(X, y, weights)`` validated (a classifier's weights refused before the label-set selection spends)."""
        classifier = is_classifier(self)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32], y_numeric=not classifier)
        if classifier:
            return X, y, sample_weights(self, sample_weight, X)
        return X, np.asarray(y, dtype=np.float64), row_weights(self, sample_weight, X)

    def _bound_rows(self, plan, X, y_enc, rng, bounds, active=None, sample_weight=None):
        """Clip the features, then choose the gradient clip norm on the bounded rows; returns ``bounds``.

        The rows outside ``active`` (``classes="auto"``) are zeroed (see
        ``DPLinearModel._bound_and_solve``). ``bounds.events`` holds the
        selections made before (``label_bound="auto"``): they replace their
        planned events, which follow the clip norm's (equal events, so the
        price is the one charged). ``clip_norm="auto"``: the per-example
        gradient norms at ``w = 0`` are ``|phi'(0, y_i)| ||x_i||_q`` (one value
        per row); for the logistic loss ``|phi'(0, +-1)| = 1/2``, so every
        one-vs-rest column gives the same norms and one private choice serves
        the ``k`` fits. The bounded problem goes to ``bounds.values``.
        """
        solver = getattr(plan.solver, "solver", plan.solver)  # the binary solver (one-vs-rest wraps it)
        n, d = X.shape
        K = float(self.feature_bound)
        # one pass, one copy: the intercept column is appended while clipping
        Xc, n_clipped = clip_features(X, K, intercept=K if self.fit_intercept else None)
        if active is not None:
            Xc = zero_rows(Xc, active)
        problem = self._problem(solver, n, d, X=Xc, y=y_enc, sample_weight=sample_weight)
        pre_events, made = list(plan.pre_events), list(bounds.events)
        first = int(self._auto_clip(solver))
        pre_events = pre_events[:first] + made + pre_events[first + len(made):]
        clip = None
        if solver.clip_order is not None:
            if self._auto_clip(solver):
                y0 = y_enc if np.ndim(y_enc) == 1 else y_enc[:, 0]
                g0 = np.abs(problem.loss.derivative(np.zeros(n), y0)) * problem.row_norms()
                clip, event = private_clip_norm(g0, self._auto_clip_quantile_for(n), pre_events[0].epsilon, rng,
                                                selection_secure_option(self.solver_options))
                pre_events = [event] + pre_events[1:]
            else:
                clip = float(self.clip_norm)
            problem.clip = problem.max_sample_weight * clip  # each weighted row's contribution bound
        bounds.events = pre_events
        bounds.values.update(problem=problem, clip=clip, n_clipped=n_clipped)
        return bounds

    def _run(self, plan, data, bounds, rng):
        """The plan's solver on the bounded problem (one-vs-rest over the columns of a 2-D ``y``)."""
        problem = bounds.values["problem"]
        solver = getattr(plan.solver, "solver", plan.solver)
        if np.ndim(problem.y) == 2:
            planned_k = getattr(plan.solver, "n_classes", 2)
            solver = plan.solver if planned_k == problem.y.shape[1] else one_vs_rest(solver, problem.y.shape[1])
            solver.price_with(bounds.events, self.delta)
        return run_solver(self, solver, problem, plan, rng, n_clipped=bounds.values["n_clipped"],
                          diagnostics=bounds.values.get("diagnostics", {}))

    def _set_coefficients(self, ran, bounds, centre):
        K = float(self.feature_bound)
        w = np.asarray(ran.result.coef, dtype=float)
        if self.fit_intercept:
            coef, intercept = w[:-1], w[-1] * K + centre
        else:
            coef, intercept = w, np.zeros(w.shape[1:]) + centre
        if w.ndim == 2:  # one-vs-rest: one row per class, as sklearn's classifiers
            self.coef_, self.intercept_ = coef.T.copy(), np.asarray(intercept, dtype=float)
            self.support_ = np.flatnonzero(np.any(self.coef_ != 0, axis=0))
        else:
            self.coef_, self.intercept_ = coef.copy(), float(intercept)
            self.support_ = np.flatnonzero(self.coef_)
        self.n_nonzero_coefs_ = bounds.values["problem"].n_nonzero
        self.clip_norm_ = bounds.values["clip"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


_SHARED_PARAMS_DOC = """
    epsilon : float, default=1.0
        Privacy-loss target, > 0 and finite (``inf`` is refused: a fit without privacy is scikit-learn's own estimator).
    delta : float, default=1e-5
        Failure probability in [0, 1). Only ``dp_fw_l1`` has a ``delta=0`` variant.
    n_nonzero_coefs : int or None, default=None
        Sparsity level ``s``: ``coef_`` has at most ``s`` non-zeros (the intercept
        does not count). ``None`` uses 10% of the features (at least 1), as
        :class:`sklearn.linear_model.OrthogonalMatchingPursuit` does.
    solver : {"auto", "dp_fw_l1", "dp_ight", "dpsl_kt", "noisy_iht", "two_stage"}, default="auto"
        ``"auto"`` is ``"noisy_iht"`` (noisy IHT with private top-``s``
        peeling; its noise grows with ``log d`` instead of ``sqrt(d)``). See
        :func:`skdp.list_solvers` and the solver docstrings in
        :mod:`skdp.solvers.peeling` and :mod:`skdp.solvers.sparse`.
    fit_intercept : bool, default=True
        The intercept is a constant column of value ``feature_bound`` that is
        never thresholded.
    feature_bound : float, default=1.0
        Public bound ``K``: every feature value is clipped to ``[-K, K]`` (rows
        touched are counted by :func:`skdp.fit_diagnostics`). The default suits features
        scaled to ``[-1, 1]``; scale first (e.g. with public ranges) otherwise.
    clip_norm : float or "auto", default="auto"
        Per-example gradient clip norm ``G`` (L2 for ``dp_ight`` and the
        ``dpsl_kt`` teacher, L-infinity for ``noisy_iht`` and ``dp_fw_l1``;
        ``two_stage`` uses the bounds instead). ``"auto"`` spends ``bound_budget_fraction`` of
        ``epsilon`` on an exponential-mechanism median of the per-example
        gradient norms at ``w = 0`` over a public geometric grid; the cost is
        composed into ``privacy_spent_`` and nothing is read in the clear.
    bound_budget_fraction : float, default=0.1
        Share of ``epsilon`` for the private bound choices (``clip_norm="auto"``
        and, for the regressor, ``label_bound="auto"``), split equally; with
        ``label_bound="auto"`` each is raised at small ``n`` as for
        :class:`DPRidge` (at most half of ``epsilon`` in all). The
        clip norm's quantile level is ``0.25`` up to ``n * epsilon = 500``;
        for the squared loss it rises by ``0.25`` per decade of ``n * epsilon``
        to ``0.75``, where clipping bias, not noise, limits the fit.
    learning_rate : float or None, default=None
        IGHT step. ``None``: ``1/(phi'' K^2)``, the largest curvature a single
        coordinate can have (``phi'' = 1`` squared, ``1/4`` logistic).
    max_iter : int or None, default=None
        Steps of the solver (gradient steps, Frank-Wolfe selections); ``None``
        uses the solver's public default. Fixed before the data is read.
    solver_options : dict or None, default=None
        Solver-specific settings (``dpsl_kt``: ``teacher_alpha``,
        ``n_synthetic``, ``synthetic_features``, ``teacher_tol``,
        ``student_max_iter``; ``noisy_iht``: ``selection_share``;
        ``dp_fw_l1``: ``l1_radius``; ``two_stage``:
        ``n_blocks``, ``coef_norm``). Unknown keys raise ``ValueError``.
    random_state : int, RandomState instance or None, default=None
        Seeds all noise and the random choices. ``None``: 128 bits of fresh OS
        entropy per fit, never numpy's global generator. A seed makes the fit
        reproducible; the guarantee then assumes it is secret and used for one
        release (see ``noise_source_``).
    verbose : int, default=0
        ``0``: silent. ``1``: once the solver has run for a second, progress
        lines with the elapsed time (one per epoch, at most every half second,
        and one per phase), then a summary line (noise scale, privacy spent).
        ``2``: every epoch. Only public quantities are printed.
    max_sample_weight : float, default=1.0
        Public bound on the ``sample_weight`` of a row (> 0): larger weights
        are clipped to it, with a ``UserWarning``. Every sensitivity, and so
        the noise, is proportional to it (to it times the largest class weight
        with ``class_weight``), whether or not ``fit`` gets weights. Without
        ``sample_weight`` each row's weight is 1 before the clip, so every row
        weighs ``min(1, max_sample_weight)``: below 1 that scales every loss
        term by it, as a larger penalty would (with a ``UserWarning``); see
        :doc:`/user_guide/weights`.
"""

_SHARED_ATTRS_DOC = """
    coef_ : ndarray of shape (n_features,) (regressor), (1, n_features) or (n_classes, n_features) (classifier)
        At most ``n_nonzero_coefs_`` non-zeros (per row); shaped as sklearn's
        ``Lasso`` / ``LogisticRegression`` ``coef_``.
    intercept_ : float (regressor) or ndarray of shape (1,) or (n_classes,) (classifier)
    support_ : ndarray of int
        Indices of the non-zero coefficients (of any class).
    n_nonzero_coefs_ : int
    privacy_spent_ : PrivacyBudget
        One fit's cost; a search's or cross-validation's fits compose (see ``search_privacy_cost``).
        (epsilon, delta) for **replace-one** neighbouring datasets (one row
        swapped, ``n`` public), priced by the shared accountant from what was
        released, the private clip-norm choice included.
        With a user-given ``random_state`` the guarantee assumes the seed is
        secret and used for this one release (see ``noise_source_``). Exact
        statistics of the data (rows clipped, ...) are not attributes: the
        data holder reads them with :func:`skdp.fit_diagnostics`.
    privacy_nominal_ : PrivacyBudget
    privacy_events_ : list
    noise_scale_ : float
        Gaussian std (``dp_ight``, ``dpsl_kt``; ``noisy_iht``: of the released
        values), Gumbel scale (``dp_fw_l1``) or
        stage-2 noise std (``two_stage``).
    clip_norm_ : float or None
    n_iter_ : int (regressor) or ndarray of shape (1,) (classifier)
        The solver's number of iterations (a public schedule, the same for
        every class), shaped as ``Lasso.n_iter_`` / ``LogisticRegression.n_iter_``.
    noise_source_ : str
        ``"os-entropy"`` when the noise came from fresh OS entropy
        (``random_state=None``), else ``"seed:<digest>"`` of the generator
        state the fit started from. Releases with equal digests share their
        noise; skdp's composition tools report them as ``epsilon=inf``.
    solver_ : str
    solver_info_ : dict
    accountant_ : str
    n_features_in_ : int
"""


class DPSparseLinearRegression(LinearRegressorMixin, RegressorMixin, _DPSparseBase):
    __doc__ = """Differentially private sparse linear regression (``||w||_0 <= s``).

    Minimises ``(1/(2n)) sum_i (<w, x_i> + b - y_i)^2`` subject to at most
    ``n_nonzero_coefs`` non-zero coefficients, with one of skdp's sparse DP
    solvers. The fitted model is (epsilon, delta)-differentially private for
    **replace-one** neighbouring datasets with the number of rows public.

    The squared loss is not Lipschitz, so the gradient solvers clip each
    per-example gradient to ``clip_norm`` (the exact gradient of a Huber-type
    surrogate; at a good fit the residuals are small and nothing is clipped)
    and need no label bound. ``two_stage`` solves the exact squared loss and
    needs ``label_bound``.

    Parameters
    ----------""" + _SHARED_PARAMS_DOC + """    label_bound : float, (low, high), "auto" or None, default="auto"
        Label range. Labels are clipped to it and centred at its midpoint (the
        intercept absorbs it). A number or pair is public. ``"auto"`` chooses
        it privately, as :class:`DPRidge` does: a private median plus and
        minus ``2.5`` private median absolute deviations (two
        exponential-mechanism selections over public grids,
        :func:`skdp.bounds.private_label_range`), paid from
        ``bound_budget_fraction`` with the clip norm's selection and composed
        into ``privacy_spent_`` (refused with a ``ValueError`` before the data
        is read where ``n`` is too small for these selections to be reliable,
        as :class:`DPRidge` does). Centring matters to the sparse solvers: from
        ``w = 0`` with uncentred labels the first support is chosen by
        ``mean(y) mean(x_j)`` as much as by the covariance of ``x_j`` with ``y``,
        and noisy IHT keeps such a support once the noise no longer moves
        it. ``None``: no label clipping, centre 0. ``two_stage`` needs a
        public number or pair.

    Attributes
    ----------""" + _SHARED_ATTRS_DOC + """
    See Also
    --------
    DPSparseLogisticRegression : the classifier.
    DPRidge : DP ridge regression (dense).
    sklearn.linear_model.OrthogonalMatchingPursuit : non-private sparse regression.

    Examples
    --------
    >>> from skdp import DPSparseLinearRegression
    >>> from skdp.datasets import make_sparse_regression
    >>> X, y, coef = make_sparse_regression(5000, 50, 3, random_state=0)
    >>> reg = DPSparseLinearRegression(epsilon=2.0, n_nonzero_coefs=3,
    ...                                random_state=0).fit(X, y)
    >>> print(reg.privacy_spent_)
    (epsilon=2, delta=1e-05) [replace_one]
    >>> sorted(reg.support_) == sorted(map(int, coef.nonzero()[0]))
    True
    """

    _parameter_constraints: dict = {
        **_DPSparseBase._parameter_constraints,
        "label_bound": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), "array-like", None],
    }

    #: label_bound="auto": the range is the private median +- this many private median absolute deviations
    _auto_label_width = 2.5
    #: the clip quantile rises with n * epsilon (see ``_auto_clip_quantile_for``)
    _auto_clip_quantile_max = 0.75

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        *,
        n_nonzero_coefs=None,
        solver="auto",
        fit_intercept=True,
        feature_bound=1.0,
        clip_norm="auto",
        bound_budget_fraction=0.1,
        label_bound="auto",
        learning_rate=None,
        max_iter=None,
        solver_options=None,
        random_state=None,
        verbose=0,
        max_sample_weight=1.0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.n_nonzero_coefs = n_nonzero_coefs
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.feature_bound = feature_bound
        self.clip_norm = clip_norm
        self.bound_budget_fraction = bound_budget_fraction
        self.label_bound = label_bound
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.random_state = random_state
        self.verbose = verbose
        self.max_sample_weight = max_sample_weight

    def _loss(self):
        return SquaredLoss()

    def _auto_label(self):
        return isinstance(self.label_bound, str) and self.label_bound == "auto"

    def _label_bound_public(self):
        if self.label_bound is None or self._auto_label():
            return None  # "auto": only two_stage reads the bound, and it refuses "auto"
        return public_label_range(self.label_bound, self.fit_intercept)[3]

    def _n_auto_selections(self, solver):
        # label_bound="auto": a private median and median absolute deviation
        return super()._n_auto_selections(solver) + 2 * self._auto_label()

    def _selection_epsilon(self, solver, n_samples):
        """With ``label_bound="auto"``, raised where ``n`` is too small to locate the median at the equal
        share (:func:`skdp.linear_model._base.selection_epsilon`, as :class:`DPRidge`'s bounds): a label
        centre far from the data costs more than the budget the raise takes from the solver."""
        if not self._auto_label():
            return super()._selection_epsilon(solver, n_samples)
        return selection_epsilon(self.epsilon, self.bound_budget_fraction, self._n_auto_selections(solver),
                                 n_samples)

    def _check_params(self):
        lb = self.label_bound
        if not self._auto_label():
            check_label_bound(lb)
        solver = super()._check_params()
        if solver.needs_public_label_bound and (lb is None or self._auto_label()):
            raise ValueError(
                f"solver={solver.name!r} needs a public label_bound (a number or a pair), got {lb!r}: objective "
                "perturbation uses the exact squared loss, whose gradient is bounded only for bounded labels, "
                "and its noise is calibrated to the bound before the data is read."
            )
        return solver

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, privacy_ledger=None):
        """Fit the sparse model with differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in ``[0, max_sample_weight]`` (larger ones are clipped
            to it, with a ``UserWarning``; negative ones raise ``ValueError``).
            The loss is ``(1/n) sum_i w_i phi_i`` with ``n`` the public number
            of rows: a weight 0 removes a row's influence, weights of 1 give the
            unweighted fit.
        privacy_ledger : PrivacyLedger or None, default=None
            Charge the fit to this ledger (or the active one) before the data is used.

        Returns
        -------
        self : object
        """
        return private_fit(self, X, y, sample_weight=sample_weight, privacy_ledger=privacy_ledger)

    def _plan_fit(self, X, y, sample_weight=None):
        public = public_fit(X)
        plan = None if public is None else make_plan(self, public)
        solver = self._check_params() if plan is None else plan.solver
        # the rule of the raised selection epsilon (label_bound="auto"): refuse where it cannot be met
        refuse_unreliable_selection(self, self._n_auto_selections(solver) if self._auto_label() else 0, X)
        return plan

    def _select_bounds(self, plan, data, rng):
        """The label range (``label_bound="auto"``: private), then the gradient clip norm on the bounded rows."""
        X, y, weights = data
        label_bound, events = self.label_bound, []
        if self._auto_label():
            label_bound, events = private_label_range(y, plan.selection_epsilon, rng,
                                                      width=self._auto_label_width,
                                                      secure=selection_secure_option(self.solver_options))
        if label_bound is not None:
            y_enc, centre, bound, n_lab, _ = bound_labels(y, label_bound, self.fit_intercept)
            label_range, n_labels_clipped = (centre - bound, centre + bound), int(n_lab)
        else:
            y_enc, centre, label_range, n_labels_clipped = y.copy(), 0.0, None, 0
        bounds = Bounds(events, values=dict(centre=centre, label_range=label_range,
                                            diagnostics=dict(n_labels_clipped=n_labels_clipped)))
        return self._bound_rows(plan, X, y_enc, rng, bounds, sample_weight=weights)

    def _set_fitted(self, plan, data, bounds, ran):
        self.label_bound_ = bounds.values["label_range"]
        self._set_coefficients(ran, bounds, bounds.values["centre"])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # R^2 > 0.5 on make_regression(n=200) is not guaranteed under DP with s = 10% of features
        tags.regressor_tags.poor_score = True
        return tags


class DPSparseLogisticRegression(ProbabilisticClassifierMixin, ClassifierMixin, _DPSparseBase):
    __doc__ = """Differentially private sparse logistic regression (``||w||_0 <= s``, one-vs-rest for more classes).

    Minimises the mean logistic loss subject to at most ``n_nonzero_coefs``
    non-zero coefficients with one of skdp's sparse DP solvers; (epsilon,
    delta)-differentially private for **replace-one** neighbouring datasets with
    the number of rows public.

    None of the sparse solvers' proofs covers a multinomial loss, so more than
    two classes are fitted one-vs-rest (as
    ``sklearn.multiclass.OneVsRestClassifier(LogisticRegression())``): one
    binary sparse problem per class (that class against the rest), each on
    every row, so the ``k`` releases compose. The solver's budget is split
    before the data is read: each class gets ``delta / k`` and the largest
    epsilon such that the shared accountant prices the ``k`` fits, with the
    private clip-norm and label-set choices, at what one binary fit costs
    (:func:`skdp._ovr.ovr_budget`), so ``privacy_spent_`` is the same
    budget for any number of classes; ``solver_info_`` holds the per-class
    ``class_epsilon`` and ``class_delta``. One private clip norm serves every
    class (the logistic gradient norms at ``w = 0`` do not depend on the
    label). Each class's coefficient vector has at most ``n_nonzero_coefs``
    non-zeros; ``predict_proba`` normalises the ``k`` sigmoids, as sklearn's
    one-vs-rest does.
    With ``dpsl_kt`` the student fits the teacher's logits by least squares
    (Wang 2021, dissertation, ch. 3, Alg. 2; see :doc:`/papers/wang2021`), so ``coef_`` is on the logit
    scale either way.

    Parameters
    ----------""" + _SHARED_PARAMS_DOC + """    classes : array-like of shape (n_classes,), "auto" or None, default="auto"
        The label set. An array is public. ``"auto"`` selects it privately
        (as in :class:`DPLogisticRegression`: needs ``delta > 0``, priced in
        ``privacy_spent_``; the fit is planned and charged as a binary fit,
        which costs what the one-vs-rest fit of any number of selected labels
        costs). ``None`` reads it from the data, with a
        :class:`~skdp.PrivacyLeakWarning`, and ``privacy_spent_`` is then
        ``epsilon=inf``.
    class_weight : dict or None, default=None
        Public weights ``{label: weight}`` (``>= 0``; a label without an entry
        has weight 1) that multiply each row's ``sample_weight``, as in
        scikit-learn; the largest of them (at least 1) times
        ``max_sample_weight`` bounds every row's weight. ``"balanced"`` is
        refused: it needs the private class counts.

    Attributes
    ----------""" + _SHARED_ATTRS_DOC + """    classes_ : ndarray of shape (n_classes,)
    multi_class_ : {"binary", "ovr"}
        ``"ovr"`` with more than two classes: ``coef_`` is then
        (n_classes, n_features) and ``intercept_`` (n_classes,), one binary
        model per class, and ``support_`` is the union of the classes'
        supports (each row of ``coef_`` has at most ``n_nonzero_coefs_``
        non-zeros, so ``support_`` has at most ``n_classes * n_nonzero_coefs_``).

    See Also
    --------
    DPSparseLinearRegression : the regressor.
    DPLogisticRegression : DP logistic regression (dense).

    Examples
    --------
    >>> from skdp import DPSparseLogisticRegression
    >>> from skdp.datasets import make_sparse_classification
    >>> X, y, coef = make_sparse_classification(5000, 50, 3, random_state=0)
    >>> clf = DPSparseLogisticRegression(epsilon=2.0, n_nonzero_coefs=3, classes=[0, 1],
    ...                                  random_state=0).fit(X, y)
    >>> print(clf.privacy_spent_)
    (epsilon=2, delta=1e-05) [replace_one]
    >>> len(clf.support_) <= 3
    True

    Three classes (one-vs-rest), the budget shared by the three fits:

    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_iris(return_X_y=True)
    >>> X = MinMaxScaler((-1, 1)).fit_transform(X)  # public ranges in practice
    >>> clf = DPSparseLogisticRegression(epsilon=2.0, n_nonzero_coefs=2, classes=[0, 1, 2],
    ...                                  random_state=0).fit(X, y)
    >>> clf.coef_.shape, int((clf.coef_ != 0).sum(axis=1).max()) <= 2
    ((3, 4), True)
    >>> bool(clf.privacy_spent_.epsilon <= 2.0)
    True
    """

    #: ``n_iter_`` as ``LogisticRegression``'s: an array of shape (1,)
    _n_iter_style = "array"

    _parameter_constraints: dict = {
        **_DPSparseBase._parameter_constraints,
        "classes": ["array-like", StrOptions({"auto"}), None],
        **CLASS_WEIGHT_CONSTRAINTS,
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        *,
        n_nonzero_coefs=None,
        solver="auto",
        fit_intercept=True,
        feature_bound=1.0,
        clip_norm="auto",
        bound_budget_fraction=0.1,
        classes="auto",
        learning_rate=None,
        max_iter=None,
        solver_options=None,
        random_state=None,
        verbose=0,
        max_sample_weight=1.0,
        class_weight=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.n_nonzero_coefs = n_nonzero_coefs
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.feature_bound = feature_bound
        self.clip_norm = clip_norm
        self.bound_budget_fraction = bound_budget_fraction
        self.classes = classes
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.random_state = random_state
        self.verbose = verbose
        self.max_sample_weight = max_sample_weight
        self.class_weight = class_weight

    def _loss(self):
        return LogisticLoss()

    def _guaranteed_public(self):
        return self.classes is not None

    def _public_n_classes(self):
        classes = check_class_set(self)
        return 2 if classes is None else classes.size  # "auto" plans as binary (the same price)

    def _check_params(self):
        check_class_set(self)
        return super()._check_params()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, privacy_ledger=None):
        """Fit the sparse classifier with differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in ``[0, max_sample_weight]`` (larger ones are clipped
            to it, with a ``UserWarning``; negative ones raise ``ValueError``).
            The loss is ``(1/n) sum_i w_i phi_i`` with ``n`` the public number
            of rows: a weight 0 removes a row's influence, weights of 1 give the
            unweighted fit.
        privacy_ledger : PrivacyLedger or None, default=None

        Returns
        -------
        self : object
        """
        return private_fit(self, X, y, sample_weight=sample_weight, privacy_ledger=privacy_ledger)

    def _select_bounds(self, plan, data, rng):
        """The label set (``classes="auto"``: private), then the gradient clip norm on the bounded rows."""
        X, y, weights = data
        selection = fit_classes(self, y, rng)
        if selection.classes.size == 2:
            y_enc = np.where(y == selection.classes[1], 1.0, -1.0)
        else:  # one-vs-rest: column c labels class c against the rest (unselected rows are zeroed)
            y_enc = ovr_targets(selection, y)
        bounds = Bounds(derived=selection.derived)  # the plan's events of the selection follow (_bound_rows)
        with refused_after_selection(self, selection.events):
            bounds = self._bound_rows(plan, X, y_enc, rng, bounds, active=selection.active,
                                      sample_weight=class_weighted(self, weights, y, selection.classes))
        bounds.values["n_classes"] = selection.classes.size
        return bounds

    def _set_fitted(self, plan, data, bounds, ran):
        self._set_coefficients(ran, bounds, 0.0)
        binary = bounds.values["n_classes"] == 2
        if binary:  # sklearn's binary classifiers: coef_ (1, n_features), intercept_ (1,)
            self.coef_, self.intercept_ = self.coef_[None, :], np.array([self.intercept_])
        self.multi_class_ = "binary" if binary else "ovr"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags
