"""DPLasso: least squares over an L1 ball."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import validate_data

from ..bounds import bound_labels, check_label_bound, clipped_design, private_label_range, public_label_range
from ..losses import SquaredLoss
from ..penalties import L2Penalty
from ..privacy import BoundedRangeEvent
from ..solvers._base import selection_secure_option
from ..solvers import Problem, PublicProblem, SolverChoice, get_solver
from .._plan import FitPlan, PublicFit, make_plan, public_fit
from .._fit import Bounds, private_fit, run_solver
from .._predict import LinearRegressorMixin
from .._weights import WEIGHT_CONSTRAINTS, check_weight_params, row_weights, weight_bound
from ._base import refuse_unreliable_selection, selection_epsilon, solver_budget

__all__ = ["DPLasso"]

#: label_bound="auto": the range is the private median +- this many private median absolute deviations
_AUTO_LABEL_WIDTH = 3.0

#: coef_norm="auto": c = clip(sqrt(n epsilon) / _AUTO_SPAN_SCALE, _AUTO_SPAN_MIN, _AUTO_SPAN_MAX)
_AUTO_SPAN_SCALE, _AUTO_SPAN_MIN, _AUTO_SPAN_MAX = 300.0, 0.5, 4.0


def _auto_span(n_samples, epsilon):
    """``c`` of ``coef_norm="auto"``: ``||(w, b - centre)||_1 <= c B / feature_bound`` (public: ``n``, ``epsilon``).

    Every prediction on clipped features stays within ``c`` label half-widths
    ``B`` of the label centre. ``c`` grows like ``sqrt(n epsilon)`` from 0.5
    (a ball that shrinks towards the centre while the noise dominates) to 4
    (a ball that contains the least-squares fit of the sparse designs).
    """
    c = math.sqrt(n_samples * epsilon) / _AUTO_SPAN_SCALE
    return min(_AUTO_SPAN_MAX, max(_AUTO_SPAN_MIN, c))


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


class DPLasso(LinearRegressorMixin, RegressorMixin, BaseEstimator):
    """Differentially private Lasso: least squares over the L1 ball ``||(w, b)||_1 <= coef_norm``.

    Minimises ``(1/(2n)) sum_i (<w, x_i> + b - y_i)^2`` over the L1 ball (the
    constrained form of the Lasso; sklearn's penalised form with ``alpha``
    corresponds to some radius by Lagrange duality) with one of skdp's DP
    solvers for the L1 geometry. The fitted model is (epsilon,
    delta)-differentially private for **replace-one** neighbouring datasets
    with the number of rows public.

    Public bounds: every feature is clipped to ``[-feature_bound,
    feature_bound]`` (an L-infinity bound: the dual norm of the L1 geometry,
    so the noise depends on the dimension only logarithmically), and labels
    to ``label_bound``. With an intercept, labels are centred at the public
    midpoint of ``label_bound`` and the intercept is a constant column of
    value ``feature_bound`` that lies in the same L1 ball (constrained like
    every other coordinate). The default ``label_bound="auto"`` chooses the
    range privately; ``label_bound=None`` reads it from the data with a
    :class:`~skdp.PrivacyLeakWarning` and ``privacy_spent_`` has
    ``epsilon=inf``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy-loss target, > 0 and finite (``inf`` is refused: a fit without privacy is scikit-learn's own estimator).
    delta : float, default=1e-5
        Must be > 0 (every L1 solver here is (epsilon, delta)-DP).
    coef_norm : float or "auto", default="auto"
        Radius of the L1 ball on ``(coef_, intercept_ - centre)`` in the units
        of the label (the fit is done with labels divided by the label
        half-width ``B`` and coefficients scaled back), the intercept counted
        as ``|intercept_ - centre| / feature_bound``; ``coef_norm`` is the name
        every skdp estimator uses for the radius of its coefficient ball.
        ``"auto"`` (public rule, fixed before the data is read): the radius
        ``c B / feature_bound``, the ball in which every prediction on clipped
        features stays within ``c`` label half-widths of the centre, with
        ``c = clip(sqrt(n epsilon) / 300, 0.5, 4)``: 0.5 while the noise
        dominates (a small ball shrinks towards the centre), growing as it
        vanishes. A number is used as given: the former default ``1.0`` means
        ``||coef_||_1 <= 1`` in label units, which on labels in the hundreds
        (diabetes) learns nothing. Public: tuning it on the private data costs
        privacy.
    radius : float, default="deprecated"
        Former name of ``coef_norm``; still accepted with a ``FutureWarning``
        and removed in a future release.
    solver : {"auto", "dp_accmd", "noisy_sfw"}, default="auto"
        ``"auto"`` uses ``"dp_accmd"``: accelerated entropic mirror descent
        with full-batch Gaussian gradients (``T = 100`` steps, noise-damped step
        size). ``"noisy_sfw"`` (one pass, vertex selection by report-noisy-max,
        dimension entering only as ``log d``) was the default until it was
        compared with ``dp_accmd`` on diabetes and on
        :func:`skdp.datasets.make_sparse_regression` designs with up to ten
        thousand features (:doc:`/user_guide/defaults`): ``dp_accmd`` was as
        good or better everywhere. Without noise, Frank-Wolfe's error falls
        like ``1/T`` and accelerated mirror descent's like ``1/T^2``, so
        ``noisy_sfw``'s last iterate can stay far from the constrained optimum
        even at large budgets, while ``dp_accmd``'s noise-damped step keeps its
        noise from growing with ``T``. ``noisy_sfw`` costs one pass instead of
        100.
    fit_intercept : bool, default=True
    feature_bound : float, default=1.0
        Public coordinate bound; entries are clipped to it. Dense input is
        clipped lazily (per mini-batch, never copied whole), so memory stays
        at one copy of ``X``; :func:`skdp.fit_diagnostics` counts the clipped rows.
    label_bound : float, (low, high), "auto" or None, default="auto"
        Label range (``B`` means ``[-B, B]``). ``"auto"`` chooses it privately,
        as :class:`DPRidge` does: the exponential-mechanism median label
        +- 3 private median absolute deviations, two selections paid from
        ``bound_budget_fraction`` (each at least ``45.5 / n`` at small ``n``,
        together at most half of ``epsilon``); the solver is then calibrated so
        that everything costs ``epsilon``. Where even half of ``epsilon``
        cannot pay ``45.5 / n`` per selection, ``fit`` refuses with a
        ``ValueError`` before the data is read (a range chosen there may land
        far from the data). ``None`` reads the range from the data and voids
        the guarantee.
    bound_budget_fraction : float, default=0.2
        With ``label_bound="auto"``, the share of ``epsilon`` spent choosing it.
    max_iter : int or None, default=None
        Iterations where the solver has a choice (``dp_accmd``); ``None`` uses
        the solver's default.
    solver_options : dict or None, default=None
        Solver-specific settings (``{"batch_size": b}`` for ``noisy_sfw``).
    random_state : int, RandomState instance or None, default=None
        ``None``: the noise of every fit comes from 128 bits of fresh OS entropy,
        never from numpy's global generator. A seed makes the fit reproducible;
        the guarantee then assumes it is secret and used for one release (see
        ``noise_source_``).
    verbose : int, default=0
        ``0``: silent. ``1``: once the solver has run for a second, progress
        lines with the elapsed time (one per epoch, at most every half second,
        and one per phase), then a summary line (noise scale, privacy spent).
        ``2``: every epoch. Only public quantities are printed.
    max_sample_weight : float, default=1.0
        Public bound on the ``sample_weight`` of a row (> 0): larger weights
        are clipped to it, with a ``UserWarning``. Every sensitivity, and so
        the noise, is proportional to it, whether or not ``fit`` gets weights.
        Without ``sample_weight`` each row's weight is 1 before the clip, so
        every row weighs ``min(1, max_sample_weight)``: below 1 that scales
        every loss term by it, as a larger penalty would (with a
        ``UserWarning``); see :doc:`/user_guide/weights`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    privacy_spent_ : PrivacyBudget
        One fit's cost; a search's or cross-validation's fits compose (see ``search_privacy_cost``).
        (epsilon, delta) from the accountant, replace-one neighbours.
        With a user-given ``random_state`` the guarantee assumes the seed is
        secret and used for this one release (see ``noise_source_``). Exact
        statistics of the data (rows clipped, ...) are not attributes: the
        data holder reads them with :func:`skdp.fit_diagnostics`.
    privacy_events_ : list
    noise_scale_ : float
    n_iter_ : int
    solver_ : str
    solver_info_ : dict
    label_bound_ : tuple of float
    coef_norm_ : float
        Radius of the L1 ball the fit used, in label units (``coef_norm``, or
        the value ``"auto"`` chose; the intercept counted as
        ``|intercept_ - centre| / feature_bound``).
    noise_source_ : str
        ``"os-entropy"`` when the noise came from fresh OS entropy
        (``random_state=None``), else ``"seed:<digest>"`` of the generator
        state the fit started from. Releases with equal digests share their
        noise; skdp's composition tools report them as ``epsilon=inf``.
    n_features_in_ : int

    See Also
    --------
    DPRidge : L2-penalised DP least squares.
    DPSparseLinearRegression : DP least squares with ``||w||_0 <= s``.
    sklearn.linear_model.Lasso : the non-private model.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLasso
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(5000, 20))
    >>> y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.randn(5000)
    >>> reg = DPLasso(epsilon=1.0, coef_norm=1.0, label_bound=2.0, random_state=0).fit(X, y)
    >>> bool(reg.privacy_spent_.epsilon <= 1.0)  # the accountant may price it a little below epsilon
    True
    >>> bool(np.abs(reg.coef_).sum() <= 2.0 + 1e-9)
    True

    The defaults (``coef_norm="auto"``, private label range) on labels in
    the hundreds, where a fixed unit ball would learn nothing:

    >>> y2 = 150 + 40 * X[:, 0] - 25 * X[:, 1] + 10 * rng.randn(5000)
    >>> reg = DPLasso(epsilon=1.0, random_state=0).fit(X, y2)
    >>> bool(reg.score(X, y2) > 0.5)
    True
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "coef_norm": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "radius": [Interval(Real, 0, None, closed="neither"), Hidden(StrOptions({"deprecated"}))],
        "solver": [SolverChoice(lambda s: s.geometry in ("l1", "l1|l2") and "squared" in s.losses)],
        "fit_intercept": ["boolean"],
        "feature_bound": [Interval(Real, 0, None, closed="neither")],
        "label_bound": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), "array-like", None],
        "bound_budget_fraction": [Interval(Real, 0, 1, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "solver_options": [dict, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        **WEIGHT_CONSTRAINTS,
    }

    #: what ``solver="auto"`` runs
    default_solver = "dp_accmd"

    def __init__(self, epsilon=1.0, delta=1e-5, *, coef_norm="auto", radius="deprecated", solver="auto",
                 fit_intercept=True, feature_bound=1.0, label_bound="auto", bound_budget_fraction=0.2, max_iter=None,
                 solver_options=None, random_state=None, verbose=0, max_sample_weight=1.0):
        self.epsilon = epsilon
        self.delta = delta
        self.coef_norm = coef_norm
        self.radius = radius
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.feature_bound = feature_bound
        self.label_bound = label_bound
        self.bound_budget_fraction = bound_budget_fraction
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.random_state = random_state
        self.verbose = verbose
        self.max_sample_weight = max_sample_weight

    def _ball_radius(self):
        """``coef_norm``, or the deprecated ``radius`` when it is given (warned once, in ``_check_params``)."""
        return self.coef_norm if isinstance(self.radius, str) else self.radius

    def _check_params(self):
        for name in ("epsilon", "coef_norm", "feature_bound"):
            if not _is_auto(getattr(self, name)) and not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)!r}.")
        if not isinstance(self.radius, str):
            if not math.isfinite(self.radius):
                raise ValueError(f"radius must be finite, got {self.radius!r}.")
            warnings.warn("DPLasso's 'radius' was renamed 'coef_norm' (the name every skdp estimator uses for the "
                          "radius of its coefficient ball); 'radius' will be removed.", FutureWarning, stacklevel=3)
        if not _is_auto(self.label_bound):
            check_label_bound(self.label_bound)
        check_weight_params(self)
        solver = get_solver(self.default_solver if self.solver == "auto" else self.solver)
        solver.check("squared", self.delta, 0.0)
        solver.check_options(self.solver_options)
        if "geometry" in (self.solver_options or {}) and self.solver_options["geometry"] != "l1":
            raise ValueError("DPLasso's constraint is the L1 ball: solver_options['geometry'] must be 'l1'.")
        return solver

    def _radius(self, n, bound):
        """L1 radius in the solver's units (``|y| <= 1``), from public quantities only."""
        coef_norm = self._ball_radius()
        if _is_auto(coef_norm):  # ||w||_1 R <= c: predictions within c label half-widths of the centre
            return _auto_span(n, self.epsilon) / float(self.feature_bound)
        return float(coef_norm) / bound

    def _problem(self, solver, n, n_features, bound, X=None, y=None, norms=None, sample_weight=None):
        """The solver's :class:`~skdp.solvers.Problem` over ``X``, or its data-free
        :class:`~skdp.solvers.PublicProblem` without ``X`` (planning)."""
        p = n_features + int(self.fit_intercept)
        R = float(self.feature_bound)
        radius = self._radius(n, bound)
        options = dict(self.solver_options or {})
        options.pop("geometry", None)
        public = dict(
            loss=SquaredLoss(), penalty=L2Penalty(0.0, radius=radius), data_norm=R * math.sqrt(p), label_bound=1.0,
            coef_norm=radius, max_iter=self.max_iter, verbose=self.verbose, options=options, n_samples=n,
            n_features=p, constraint=solver.make_constraint({"geometry": "l1"}, radius), inf_norm_bound=R,
            max_sample_weight=weight_bound(self),
        )
        if X is None:  # planning
            return PublicProblem(**public)
        return Problem(X=X, y=y, norms=norms, sample_weight=sample_weight, **public)

    def _plan(self, public):
        """The fit's :class:`~skdp._plan.FitPlan` (see :func:`skdp._plan.make_plan`).

        With ``label_bound="auto"`` (or ``None``) the solver works in units of
        the range chosen during the fit: a unit range prices the same.
        """
        solver = self._check_params()
        n, d = int(public.n_samples), int(public.n_features)
        lb = (-1.0, 1.0) if (_is_auto(self.label_bound) or self.label_bound is None) else self.label_bound
        view = self._problem(solver, n, d, public_label_range(lb, self.fit_intercept)[3])
        pre = self._selection_events(n)
        budget, solver_plan = solver_budget(solver, view, pre, self.epsilon, self.delta)
        eps_sel = selection_epsilon(self.epsilon, self.bound_budget_fraction, 2, n) if pre else 0.0
        return FitPlan(public, guaranteed=self.label_bound is not None, pre_events=pre, selection_epsilon=eps_sel,
                       budget=budget, solver=solver, view=view, solver_plan=solver_plan)

    def planned_events(self, n_samples, n_features=None):
        """Events a fit on ``(n_samples, n_features)`` releases (``None`` if a bound is read from the data)."""
        self._validate_params()
        self._check_params()
        if self.label_bound is None:
            return None
        if n_features is None:
            raise ValueError("DPLasso.planned_events needs n_features (the step size depends on it).")
        return make_plan(self, PublicFit(int(n_samples), int(n_features))).events

    def _selection_events(self, n_samples):
        """``label_bound="auto"``: two selections (median, then median absolute deviation)."""
        if not _is_auto(self.label_bound):
            return []
        return [BoundedRangeEvent(selection_epsilon(self.epsilon, self.bound_budget_fraction, 2, n_samples))] * 2

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, privacy_ledger=None):
        """Fit the model with differential privacy.

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
            Charged before the data is touched (or the active ledger).

        Returns
        -------
        self : object
        """
        return private_fit(self, X, y, sample_weight=sample_weight, privacy_ledger=privacy_ledger)

    # -- the fit: skdp._fit.private_fit calls _plan_fit, _read, _select_bounds, _run, _set_fitted -------------
    def _plan_fit(self, X, y, sample_weight=None):
        """The fit's plan from public facts only (the parameters' checks included), before any row is read."""
        public = public_fit(X)
        plan = self._check_params() and None if public is None else make_plan(self, public)
        refuse_unreliable_selection(self, 2 if _is_auto(self.label_bound) else 0, X)
        return plan

    def _read(self, plan, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32], y_numeric=True)
        return X, np.asarray(y, dtype=np.float64), row_weights(self, sample_weight, X)

    def _select_bounds(self, plan, data, rng):
        """``label_bound="auto"``: the private label range (two selections)."""
        label_bound, events = self.label_bound, []
        if _is_auto(label_bound):
            label_bound, events = private_label_range(data[1], plan.selection_epsilon, rng, width=_AUTO_LABEL_WIDTH,
                                                      secure=selection_secure_option(self.solver_options))
        return Bounds(events, values=dict(label_bound=label_bound))

    def _run(self, plan, data, bounds, rng):
        """The labels and the features clipped to their bounds, and the solver on the L1 ball."""
        X, y, weights = data
        yc, centre, bound, n_lab, derived = bound_labels(y, bounds.values["label_bound"], self.fit_intercept)
        R = float(self.feature_bound)
        # the clipped design is applied lazily (no copy of X); its row norms are only needed by
        # the gradient clipping, which is inactive on the L1 ball: one bound covers them all
        Xc, n_clipped = clipped_design(X, R, intercept=R if self.fit_intercept else None)
        problem = self._problem(plan.solver, X.shape[0], X.shape[1], bound, X=Xc, y=yc / bound,
                                norms=np.full(X.shape[0], R * math.sqrt(Xc.shape[1])), sample_weight=weights)
        return run_solver(self, plan.solver, problem, plan, rng, n_clipped=n_clipped, derived=derived,
                          diagnostics=dict(n_labels_clipped=int(n_lab)), values=dict(centre=centre, bound=bound))

    def _set_fitted(self, plan, data, bounds, ran):
        centre, bound = ran.values["centre"], ran.values["bound"]
        w = np.asarray(ran.result.coef, dtype=float) * bound
        if self.fit_intercept:
            self.coef_, self.intercept_ = w[:-1].copy(), float(w[-1] * float(self.feature_bound)) + centre
        else:
            self.coef_, self.intercept_ = w.copy(), float(centre)
        self.label_bound_ = (centre - bound, centre + bound)
        self.coef_norm_ = float(self._radius(plan.public.n_samples, bound) * bound)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = False
        # R^2 > 0.5 on make_regression(n=200) is not reachable at epsilon=1 with an L1 ball of radius 1
        tags.regressor_tags.poor_score = True
        return tags
