"""DPRidge."""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..bounds import (bound_labels, check_label_bound, label_range_from_counts, private_label_range,
                      public_label_range, target_label_bounds)
from ..losses import SquaredLoss
from ..solvers._base import selection_secure_option
from ..solvers import SOLVERS, SolverChoice
from .. import diagnostics
from .. import _dask
from .._dask import DaskRows, RegressionTargets, abs_dev_counts, first_pass, is_dask_collection
from .._fit import Bounds, private_fit
from .._plan import PublicFit, make_plan, rows_elsewhere
from .._predict import LinearRegressorMixin
from .._warnings import warn_heavy_clipping
from ..privacy.quantile import DEFAULT_SIGNED_GRID
from ._base import DPLinearModel, refuse_unreliable_selection

__all__ = ["DPRidge"]


class DPRidge(LinearRegressorMixin, RegressorMixin, DPLinearModel):
    """Differentially private ridge regression.

    Minimises ``(1/(2n)) sum_i (<w, x_i> + b - y_i)^2 + (alpha/2) ||(w, b)||^2``
    over the ball ``||(w, b)|| <= coef_norm`` with one of skdp's DP solvers.
    The intercept ``b`` is a constant column of value ``intercept_scaling``,
    penalised like every other coordinate. The fitted model is (epsilon,
    delta)-differentially private for **replace-one** neighbouring datasets
    with the number of rows public.

    The squared loss is not Lipschitz, so the proofs need three public bounds:
    ``data_norm`` (rows clipped to it, intercept column included),
    ``label_bound`` (labels clipped to it) and ``coef_norm`` (the coefficient
    ball; not needed by ``adassp``). With an intercept, labels are centred at
    the midpoint of ``label_bound`` before fitting. By default ``data_norm``
    and ``label_bound`` are chosen privately (``"auto"``), paid from the budget.
    A bound set to ``None`` is read from the data with a
    :class:`~skdp.PrivacyLeakWarning` (``privacy_spent_`` then has
    ``epsilon=inf``), except ``coef_norm``, whose default
    ``label_bound / sqrt(alpha)`` is data-independent and contains the
    non-private ridge solution.

    **Several targets.** A ``y`` of shape ``(n_samples, n_targets)`` is fitted
    as one release (``n_targets`` is public, like ``n_samples``), by the
    solvers whose proof covers it (``adassp``, ``dp_gd``, ``dp_svrg``,
    ``dp_svrg_pp``, ``output_pert``, ``dp_lssgd``, ``rrpsgd``, ``dp_srm``,
    and so every solver ``"auto"`` picks); the others raise ``ValueError``
    before the data is read. Each target is clipped to its own range and
    divided by its half-width ``B_j``, so a row's label vector has norm at
    most ``sqrt(n_targets)``, and that one bound enters every sensitivity:
    ``adassp`` releases ``X^T Y`` once, with replace-one Frobenius sensitivity
    ``2 K sqrt(n_targets)`` (in these units), and one ``X^T X`` shared by all
    targets; the gradient solvers clip each example's ``(p, n_targets)``
    gradient jointly, in Frobenius norm, to ``K sqrt(n_targets)``. The
    accountant prices the release as for one target, so ``privacy_spent_`` is
    the same ``(epsilon, delta)``; the noise on each target grows like
    ``sqrt(n_targets)``. A column vector (``n_targets = 1``) releases exactly
    what the 1-D ``y`` does.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy-loss target, > 0 and finite (``inf`` is refused: a fit without privacy is scikit-learn's own estimator).
    delta : float, default=1e-5
        Failure probability in [0, 1); ``delta=0`` needs ``solver="output_pert"``.
    solver : {"auto", "adassp", "dp_accmd", "dp_gd", "dp_lssgd", "dp_srm", "dp_svrg", "dp_svrg_pp", \
            "noisy_sfw", "noisy_sfw_lp", "noisy_sgd", "obj_pert", "output_pert", "phased_sgd", \
            "rrpsgd"}, default="auto"
        ``list_solvers(DPRidge)`` describes each. ``"auto"`` uses ``"adassp"``
        (sufficient-statistics perturbation, Wang 2018) when
        ``n_samples * epsilon >= 100 * p`` (``p`` features plus the intercept
        column; ``400 * p`` when ``p <= 12``), ``"dp_gd"`` below that, and ``"output_pert"`` when
        ``delta=0`` (why the cross-over falls with ``p``: :doc:`/user_guide/defaults`).
        The gradient solvers (``dp_gd``, ``dp_svrg``, ``output_pert``) clip each
        per-example gradient to ``data_norm * B`` (``B`` the centred label bound),
        the largest gradient norm at ``w = 0``: for the squared loss this is
        the exact gradient of a Huber-type surrogate that is still convex and
        ``K^2``-smooth, so their proofs hold. ``obj_pert`` needs the exact
        (C^2) squared loss and uses ``G = K (K M + B)``.
    alpha : float or None, default=None
        L2 regularisation on the mean loss. sklearn's ``Ridge(alpha=a)``
        corresponds to ``alpha = a/n`` here. ``None``: no penalty with
        ``adassp``, whose own private ridge term is sized to the noise and
        vanishes with it (so the fit approaches least squares as
        ``n * epsilon`` grows); ``min(0.1, 0.2 K^2)`` (``K`` the row bound
        the solver sees) with the gradient solvers whose release does not
        depend on ``alpha`` (``dp_gd``, ``noisy_sgd``, ``dp_svrg``,
        ``dp_svrg_pp``, ``dp_srm``, ``dp_lssgd``, ``rrpsgd``), so that features
        of small scale are not overwhelmed by it (see
        :func:`skdp.linear_model._ridge.scaled_alpha`); ``0.1`` with the other
        iterative solvers. Every iterative solver's coefficient ball is
        ``B/sqrt(alpha)`` (with ``alpha=None``, ``B/sqrt(0.1)``, or
        ``B/sqrt(min(0.1, 0.2 K^2))`` for the solvers above) or an explicit
        ``coef_norm``.
    penalty : {"l2", "nonconvex"}, default="l2"
        ``"l2"``: ``(alpha/2) ||w||^2``. ``"nonconvex"``: the papers' nonconvex
        penalty ``alpha * sum_j w_j^2 / (1 + w_j^2)`` (Wang 2021, dissertation, Sec. 4.7.1,
        :class:`skdp.penalties.NonconvexPenalty`), accepted by the gradient
        solvers that take it explicitly: ``dp_gd``, ``dp_lssgd``, ``rrpsgd``,
        ``dp_srm``. Both cover the intercept too; both are data-independent.
    fit_intercept : bool, default=True
    intercept_scaling : float or None, default=None
        Value of the constant intercept column; must be < ``data_norm``.
        ``None`` uses ``data_norm / sqrt(2)`` (half the squared norm budget;
        stored in ``intercept_scaling_``): under DP the intercept must be
        learned in a handful of steps, and a larger column speeds it up.
    data_norm : float, "auto" or None, default="auto"
        Public L2 bound on each row (intercept column included). ``"auto"``
        chooses it privately (see ``bound_budget_fraction``); ``None`` reads it
        from the data and voids the guarantee.
    bound_budget_fraction : float, default=0.05
        The share of ``epsilon`` spent on the private bound choices
        (``data_norm="auto"``, ``label_bound="auto"``), split equally between
        them. The raw rows are clipped to a multiple of an
        exponential-mechanism median of the row norms over a public geometric
        grid (:func:`skdp.privacy.private_quantile`): 0.7 up to
        ``n * epsilon = 3000``, rising by 0.25 per decade of ``n * epsilon`` to
        1.25 (clipping trades bias for noise; with little noise the bias is what
        is left). At small ``n`` each selection gets at least ``45.5 / n``
        (enough for the median of ``n`` values to be located on the grid with
        probability about 0.999), capped so the selections take at most half of
        ``epsilon`` (with a ``UserWarning`` when that is not enough: then a
        selection may land far from the data; give public bounds). The solver
        is then calibrated so that the accountant's price of everything is
        ``epsilon``. No data-derived bound is read in the clear, so there is no
        ``PrivacyLeakWarning``.
    label_bound : float, (low, high), array-like, "auto" or None, default="auto"
        Label range: ``B`` means ``[-B, B]``. With several targets, ``B`` and
        a tuple ``(low, high)`` apply to every target, an array of
        ``n_targets`` positive numbers gives each target its ``B_j``, and an
        array of shape ``(n_targets, 2)`` its ``(low_j, high_j)``.
        ``"auto"`` chooses it privately (per target)
        with two exponential-mechanism selections paid from
        ``bound_budget_fraction`` (median label, then median absolute
        deviation; range = median +- 2.5 MAD). Where ``n`` is too small for
        the private bounds to be chosen reliably (each selection needs
        epsilon ``45.5 / n``, and all of them together at most half of
        ``epsilon``: e.g. fewer than ``273 / epsilon`` rows with the row bound
        and one label range chosen privately), ``fit`` refuses with a
        ``ValueError`` before the data is read: a range chosen there may land
        far from the data, and the predictions with it; give a range known a
        priori. ``None`` reads it from the data and voids the guarantee.
    coef_norm : float or None, default=None
        Radius ``M`` of the coefficient ball. ``None``: ``B/sqrt(alpha)``
        where ``B`` is the (centred) label bound. With several targets each
        target has its radius ``M_j`` (``coef_norm``, or ``B_j/sqrt(alpha)``)
        and the solver's ball is ``sum_j ||w_j||^2 / B_j^2 <= sum_j M_j^2 / B_j^2``. The constrained solvers use
        it as the radius of their ball in their own norm (L1 for
        ``noisy_sfw`` / ``dp_accmd``, l_p for ``noisy_sfw_lp``; see
        :class:`DPLasso` for an L1-constrained model with a coordinate bound).
    max_iter : int or None, default=None
        Iterations / epochs; ``None`` uses the solver's default.
    solver_options : dict or None, default=None
        Solver-specific settings, validated against the solver's
        ``option_keys`` (see :func:`skdp.list_solvers`).
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
        every row weighs ``min(1, max_sample_weight)`` (in memory and on Dask
        input): below 1 that scales every loss term by it, as a larger penalty
        would (with a ``UserWarning``); see :doc:`/user_guide/weights`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        As scikit-learn's ``Ridge``: ``(n_features,)`` for a 1-D ``y`` and for
        ``y`` of shape ``(n_samples, 1)``.
    intercept_ : float or ndarray of shape (n_targets,)
        A float for a 1-D ``y``; for a 2-D ``y`` an array of shape
        ``(n_targets,)``, or ``0.0`` when ``fit_intercept=False`` (as ``Ridge``).
    n_iter_ : None or ndarray of shape (n_targets,)
        ``None`` for a direct solver (``adassp``, ``obj_pert``: one release),
        else the solver's number of iterations (a public schedule, the same
        for every target), as ``Ridge.n_iter_``.
    privacy_spent_ : PrivacyBudget
        One fit's cost; a search's or cross-validation's fits compose (see ``search_privacy_cost``).
        (epsilon, delta) under replace-one neighbours; ``epsilon=inf`` if a
        bound was read from the data.
        With a user-given ``random_state`` the guarantee assumes the seed is
        secret and used for this one release (see ``noise_source_``). Exact
        statistics of the data (rows clipped, ...) are not attributes: the
        data holder reads them with :func:`skdp.fit_diagnostics`.
    privacy_nominal_ : PrivacyBudget
    noise_scale_ : float
    accountant_ : str
    data_norm_ : float
    label_bound_ : tuple of float or ndarray of shape (n_targets, 2)
        ``(low, high)`` used for clipping; one row per target for a 2-D ``y``.
    coef_norm_ : float, ndarray of shape (n_targets,) or None
        The coefficient ball's radius (per target for a 2-D ``y``), ``None``
        for ``adassp`` (no ball).
    noise_source_ : str
        ``"os-entropy"`` when the noise came from fresh OS entropy
        (``random_state=None``), else ``"seed:<digest>"`` of the generator
        state the fit started from. Releases with equal digests share their
        noise; skdp's composition tools report them as ``epsilon=inf``.
    solver_ : str
    n_features_in_ : int

    See Also
    --------
    DPLogisticRegression : DP logistic regression.
    sklearn.linear_model.Ridge : the non-private model.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPRidge
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3))
    >>> y = X @ [1.0, -0.5, 0.25] + 0.1 * rng.randn(2000)
    >>> reg = DPRidge(epsilon=1.0, data_norm=2.0, label_bound=2.0,
    ...               random_state=0).fit(X, y)
    >>> print(reg.privacy_spent_)
    (epsilon=1, delta=1e-05) [replace_one]
    >>> bool(reg.score(X, y) > 0.5)
    True

    At the defaults both bounds are chosen privately, paid from ``epsilon``:

    >>> reg = DPRidge(epsilon=1.0, random_state=0).fit(X, y)
    >>> print(reg.privacy_spent_, reg.solver_)
    (epsilon=1, delta=1e-05) [replace_one] adassp
    >>> bool(reg.score(X, y) > 0.5)
    True

    Two targets, one release at the same budget:

    >>> Y = np.column_stack([y, X @ [0.5, 0.5, -1.0]])
    >>> reg = DPRidge(epsilon=1.0, data_norm=2.0, label_bound=[2.0, 2.0],
    ...               random_state=0).fit(X, Y)
    >>> reg.coef_.shape, reg.intercept_.shape
    ((2, 3), (2,))
    >>> print(reg.privacy_spent_)
    (epsilon=1, delta=1e-05) [replace_one]
    >>> bool(reg.score(X, Y) > 0.5)
    True
    """

    _parameter_constraints: dict = {
        **DPLinearModel._parameter_constraints,
        "solver": [SolverChoice(lambda s: s.constraint is None and "squared" in s.losses)],
        "label_bound": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), "array-like", None],
        "coef_norm": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="left"), None],
    }

    default_solver = "adassp"

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        *,
        solver="auto",
        alpha=None,
        penalty="l2",
        fit_intercept=True,
        intercept_scaling=None,
        data_norm="auto",
        bound_budget_fraction=0.05,
        label_bound="auto",
        coef_norm=None,
        max_iter=None,
        solver_options=None,
        random_state=None,
        verbose=0,
        max_sample_weight=1.0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.solver = solver
        self.alpha = alpha
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.data_norm = data_norm
        self.bound_budget_fraction = bound_budget_fraction
        self.label_bound = label_bound
        self.coef_norm = coef_norm
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.random_state = random_state
        self.verbose = verbose
        self.max_sample_weight = max_sample_weight

    _default_intercept_fraction = 1 / math.sqrt(2)

    #: label_bound="auto": the range is median +- this many private median absolute deviations
    _auto_label_width = 2.5

    #: ``n_iter_`` as ``Ridge``'s: ``None`` for a direct solver, else (n_targets,)
    _n_iter_style = "per_target"

    def _n_auto_selections(self, n_targets=None):
        # label_bound="auto": a private median and MAD per target
        return super()._n_auto_selections() + (2 * (n_targets or 1) if _is_auto(self.label_bound) else 0)

    def _check_label_bound(self, n_targets=None):
        if _is_auto(self.label_bound):
            return
        if n_targets is None:
            check_label_bound(self.label_bound)
        else:
            target_label_bounds(self.label_bound, n_targets)

    def _target_bounds(self, n_targets=None):
        """The public label bound of each target (``[label_bound]`` for a 1-D ``y``)."""
        if n_targets is None:
            return [self.label_bound]
        return target_label_bounds(self.label_bound, n_targets)

    def _check_multi_output(self, solver, n_targets=None):
        """``ValueError`` before any data is read when ``solver`` cannot fit several targets jointly."""
        if (n_targets or 1) > 1 and not solver.multi_output:
            ok = sorted(n for n, s in SOLVERS.items() if s.multi_output and n in _RIDGE_SOLVER.options)
            raise ValueError(
                f"solver {solver.name!r} does not support multi-output y (y has {n_targets} targets): its "
                f"proof covers one target. Fit one DPRidge per target (the fits compose; a PrivacyLedger prices "
                f"them together), or use one of {ok}."
            )

    def _alpha_for(self, solver, n_samples=None, data_norm=None):
        """``alpha=None``: no penalty for ``adassp`` (its private ridge term scales with the noise and
        vanishes with it), ``0.1`` for the other iterative solvers (their coefficient ball is ``B/sqrt(alpha)``),
        except for the penalty of the solvers whose release ignores it (``Solver.release_ignores_penalty``;
        :data:`SCALED_ALPHA_SOLVERS` for the built-in ones) once the problem is built:
        :func:`scaled_alpha`, ``min(0.1, 0.2 K^2)`` (their ball follows, see :meth:`_ball_scale`)."""
        if self.alpha is not None:
            return self.alpha
        if solver is not None and _needs_no_ball(solver):
            return 0.0
        if (solver is not None and solver.release_ignores_penalty and getattr(self, "penalty", "l2") == "l2"
                and data_norm):
            return scaled_alpha(data_norm)
        return _ITERATIVE_ALPHA

    def _ball_scale(self, solver, data_norm):
        """How much larger the default ball of a solver whose release ignores it is than ``B/sqrt(0.1)``:
        ``sqrt(0.1 / alpha)`` with its default penalty ``alpha`` (:func:`scaled_alpha`), so the ball, like the
        penalty, follows the features' scale; else 1."""
        if (self.alpha is None and self.coef_norm is None and solver is not None
                and solver.release_ignores_penalty and getattr(self, "penalty", "l2") == "l2" and data_norm):
            return math.sqrt(_ITERATIVE_ALPHA / scaled_alpha(data_norm))
        return 1.0

    def _problem(self, n, loss, n_outputs, data_norm, **kwargs):
        scale = self._ball_scale(kwargs.get("solver"), data_norm)
        if scale != 1.0 and kwargs.get("coef_norm") is not None:
            kwargs["coef_norm"] = kwargs["coef_norm"] * scale
        return super()._problem(n, loss, n_outputs, data_norm, **kwargs)

    def _auto_norm_factor_for(self, n_samples):
        """Clip as before at small ``n * epsilon`` (noise dominates), less at large (bias dominates).

        ``0.7`` times the private median row norm up to ``n * epsilon = 3000`` (the
        factor chosen for small budgets, see ``DPLinearModel``), rising by ``0.25`` per
        decade to ``1.25``: clipping a row scales its contribution, which biases a
        regression towards larger coefficients, and with little noise that bias is
        what is left. Clipping below the median trades that bias for less noise,
        which pays only while the noise dominates; :doc:`/user_guide/defaults` shows
        the measurement that set the rise.
        """
        n_eps = max(float(n_samples) * self.epsilon, 1.0)
        return min(max(0.7 + 0.25 * math.log10(n_eps / 3000.0), 0.7), 1.25)

    def _coef_ball(self, bounds, solver):
        """``(radius, M)``: the ball in the solver's units (labels divided by their bounds) and the radii.

        ``M`` holds each target's radius ``M_j`` in the labels' units
        (``coef_norm``, else ``B_j / sqrt(alpha)``); with ``k`` targets the
        solver's ball is the Frobenius ball ``sum_j ||w_j||^2 / B_j^2 <=
        sum_j M_j^2 / B_j^2``, which contains every target's ball. ``(None, None)``
        without a ball.
        """
        bounds = np.asarray(bounds, dtype=float)
        if self.coef_norm is not None:
            M = np.full(bounds.shape, float(self.coef_norm))
        else:
            alpha = self._alpha_for(solver)
            if not alpha > 0:
                return None, None
            M = bounds / math.sqrt(alpha)
        scaled = M / bounds
        return (float(scaled[0]) if scaled.size == 1 else float(np.sqrt(np.sum(scaled**2)))), M

    def _check_ball(self, solver):
        if self.coef_norm is None and self._alpha_for(solver) == 0 and not _needs_no_ball(solver):
            raise ValueError(
                "coef_norm is required when alpha=0: the squared loss is only Lipschitz on a "
                f"bounded coefficient ball (solver={solver.name!r})."
            )

    def _auto_solver(self, loss_name, shape=None):
        """``adassp`` once ``n * epsilon >= m p`` (``p`` features with the intercept column), else ``dp_gd``.

        ``m = 100``, or ``m = 400`` for ``p <= 12`` (:meth:`_adassp_threshold`).
        Sufficient-statistics perturbation pays for a ``p x p`` noise matrix once;
        gradient descent pays per step but only in ``p`` directions, and its
        capped schedule (40 steps of ``1 / K^2``) converges more slowly the more
        directions the data spreads over. So the cross-over falls with ``p``. At few
        columns and moderate ``n * epsilon`` AdaSSP's release of ``X^T y`` is barely
        above its noise, and its ridge term, sized to the noise of ``X^T X``, does
        not shrink that noise away; with many columns gradient descent's capped
        schedule falls short first and the one ``p x p`` release wins. The measurements that placed the thresholds
        (isotropic synthetic designs and diabetes, against ``n * epsilon / p``) are
        on :doc:`/user_guide/defaults`. Public quantities only; without a shape
        (validation before the data is seen) ``adassp``.
        """
        if self.delta == 0:
            return "output_pert"
        if (shape is not None and shape[1] is not None
                and shape[0] * self.epsilon < self._adassp_threshold(shape[1])):
            return "dp_gd"
        return self.default_solver

    @staticmethod
    def _adassp_threshold(p):
        """The ``n * epsilon`` from which ``solver="auto"`` runs ``adassp`` on ``p`` columns (see ``_auto_solver``)."""
        return (400 if p <= 12 else 100) * p

    def _plan_spec(self, public, shape):
        n_targets = public.n_targets
        self._check_label_bound(n_targets)
        solver = self._resolve_solver("squared", shape, public)
        self._check_multi_output(solver, n_targets)
        self._check_ball(solver)
        # With label_bound="auto" (or None, read from the data) the range is chosen during the fit; the
        # solver's noise is relative to it, so a nominal unit range prices the same.
        bounds = [public_label_range((-1.0, 1.0) if (_is_auto(lb) or lb is None) else lb, self.fit_intercept)[3]
                  for lb in self._target_bounds(n_targets)]
        # the solver works in units where every target is within [-1, 1] (see fit)
        ball, _ = self._coef_ball(bounds, solver)
        k = len(bounds)
        return dict(solver=solver, loss=SquaredLoss(), n_outputs=k, label_bound=_joint_label_bound(k),
                    coef_norm=ball, guaranteed=self.label_bound is not None)

    def planned_events(self, n_samples, n_features=None, n_targets=None):
        """The privacy events a fit on ``n_samples`` rows will release, without any data.

        As :meth:`DPLinearModel.planned_events`; ``n_targets`` is the number of
        columns of a 2-D ``y`` (``None``: a 1-D ``y``), public like ``n``.
        """
        if n_targets is not None and (isinstance(n_targets, bool) or not isinstance(n_targets, Integral)
                                      or n_targets < 1):
            raise ValueError(f"n_targets must be a positive integer or None, got {n_targets!r}.")
        if n_targets == 1 and not self._fits_jointly():
            n_targets = None  # a column vector is raveled, as in fit
        self._validate_params()
        self._check_privacy_params()
        public = PublicFit(int(n_samples), None if n_features is None else int(n_features),
                           n_targets=None if n_targets is None else int(n_targets))
        return make_plan(self, public).events

    def _fits_jointly(self):
        """Whether the solver fits a 2-D ``y`` jointly (every solver ``"auto"`` picks does)."""
        return self.solver == "auto" or bool(getattr(SOLVERS.get(self.solver), "multi_output", False))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, privacy_ledger=None):
        """Fit the model with differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, dask DataFrame} of shape (n_samples, n_features)
            A Dask collection is fitted where it lives: every pass over the
            rows is a Dask reduction and only the reduced statistic reaches
            this process, where the noise is added (same privacy events and,
            for a seed, the same coefficients up to summation order as in
            memory). Solvers ``dp_gd``, ``output_pert`` and ``adassp`` only; see
            :doc:`/user_guide/dask`.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Several targets are fitted jointly, as one release (see the class
            docstring); ``n_targets`` is public, like ``n_samples``.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in ``[0, max_sample_weight]`` (larger ones are clipped
            to it, with a ``UserWarning``; negative ones raise ``ValueError``).
            The loss is ``(1/n) sum_i w_i phi_i`` with ``n`` the public number
            of rows: a weight 0 removes a row's influence, weights of 1 give the
            unweighted fit.
        privacy_ledger : PrivacyLedger or None, default=None
            Charge this fit to the ledger before touching the data; raises
            :class:`~skdp.BudgetExceededError` if it would exceed the ledger's
            budget. ``None`` uses the ledger of an enclosing ``with ledger:``
            block, if any.

        Returns
        -------
        self : object
        """
        if is_dask_collection(X):  # the rows stay where they live: every pass over them is a reduction
            _dask.refuse_unsupported(self, sample_weight, y)
            X = DaskRows(X, y)
        return private_fit(self, X, y, sample_weight=sample_weight, privacy_ledger=privacy_ledger)

    _reduced_public_bounds = ("data_norm", "label_bound")

    def _public_facts(self, X, y):
        """The number of targets of a 2-D ``y`` (public, like ``n``; its shape only is read).

        A 2-D ``y`` is fitted as such by the solvers that fit several targets
        jointly; the others take a column vector as sklearn's single-output
        estimators do (raveled, with a warning). Rows read where they live
        have one target.
        """
        if rows_elsewhere(X):
            self._check_label_bound()
            return {}
        solver = self._resolve_solver("squared")
        n_targets = _n_targets_of(y)
        if n_targets == 1 and not solver.multi_output:
            n_targets = None
        self._check_label_bound(n_targets)
        return dict(n_targets=n_targets)

    def _plan_fit(self, X, y, sample_weight=None):
        plan = super()._plan_fit(X, y, sample_weight)
        if plan is not None:  # a regressor refuses bound choices its n * epsilon cannot make reliably
            refuse_unreliable_selection(self, self._n_auto_selections(plan.public.n_targets), plan.public.n_samples)
        return plan

    def _first_pass(self, rows):
        """Rows read where they live: validated block by block, with the counts the bound choices read."""
        auto_labels = _is_auto(self.label_bound)
        if not (auto_labels or self.data_norm == "auto"):  # the solver's passes validate the blocks
            return {}
        norm_counts, _, y_counts = rows.reduce(first_pass, rows.dtype, self.data_norm == "auto", False,
                                               DEFAULT_SIGNED_GRID if auto_labels else None, True)
        return dict(norms=norm_counts, y=y_counts)

    def _select_bounds(self, plan, data, rng):
        """Each target's label range (``label_bound="auto"``: private), then the row bound."""
        targets, events = self._target_bounds(plan.public.n_targets), []
        secure = selection_secure_option(self.solver_options)
        for j, label_bound in enumerate(targets):
            if not _is_auto(label_bound):
                continue
            if data.reduced:
                rows = data.X

                def counts(grid, centre=None):
                    return data.counts["y"] if centre is None else rows.reduce(abs_dev_counts, centre, grid)[0]

                targets[j], made = label_range_from_counts(counts, data.n, plan.selection_epsilon, rng,
                                                           width=self._auto_label_width, secure=secure)
            else:
                y = data.y.reshape(data.n, -1)[:, j]
                targets[j], made = private_label_range(y, plan.selection_epsilon, rng, width=self._auto_label_width,
                                                       secure=secure)
            events += made
        bounds = self._select_row_bound(plan, data, rng, Bounds(events))
        bounds.values["label_bounds"] = targets
        return bounds

    def _run(self, plan, data, bounds, rng):
        """The labels bounded as chosen, in units where every target is within [-1, 1], and the solver.

        Dividing by the public (or privately chosen) bounds is a public
        rescaling; the coefficients are scaled back afterwards. With ``k``
        targets each row's label vector then has norm at most ``sqrt(k)``: the
        one bound of the joint release.
        """
        solver, targets = plan.solver, bounds.values["label_bounds"]
        if data.reduced:
            _, centre, bound, _, derived = bound_labels(np.zeros(0), targets[0], self.fit_intercept)
            radius, M = self._coef_ball([bound], solver)
            ran = self._bound_and_solve(plan, data, bounds, rng, SquaredLoss(), 1, solver,
                                        targets=RegressionTargets(targets[0], self.fit_intercept),
                                        label_bound=1.0, coef_norm=radius, derived=derived)
            ran.values.update(centre=centre, bound=bound, coef_norm=M,
                              n_labels_clipped=ran.values["design"].n_labels_clipped)  # counted by the passes
            return ran
        Y = data.y.reshape(data.n, -1)
        k = Y.shape[1]
        columns = [bound_labels(Y[:, j], targets[j], self.fit_intercept) for j in range(k)]
        bound = np.array([c[2] for c in columns])
        radius, M = self._coef_ball(bound, solver)
        Yc = np.column_stack([c[0] for c in columns]) / bound
        ran = self._bound_and_solve(plan, data, bounds, rng, SquaredLoss(), k, solver,
                                    y=Yc[:, 0] if k == 1 else Yc, label_bound=_joint_label_bound(k),
                                    coef_norm=radius, derived=any(c[4] for c in columns), sample_weight=data.weights)
        ran.values.update(centre=np.array([c[1] for c in columns]), bound=bound, coef_norm=M,
                          n_labels_clipped=sum(c[3] for c in columns))
        return ran

    def _set_fitted(self, plan, data, bounds, ran):
        self._set_bounds_fitted(bounds, ran)
        v = ran.values
        self._set_coefficients(ran.result.coef, v["centre"], v["bound"], v["coef_norm"], v["n_labels_clipped"],
                               solver=ran.solver, n_features=None if data.reduced else data.d, n_samples=data.n,
                               n_targets=plan.public.n_targets)

    def _set_coefficients(self, coef, centre, bound, coef_norm, n_labels_clipped, *, solver=None, n_features=None,
                    n_samples=None, n_targets=None):
        """Fitted attributes from the solver's coefficients in units of the label ``bound`` (in memory and Dask).

        ``centre``, ``bound`` (and ``coef_norm`` unless ``None``): one value per target, or a number for one;
        ``n_targets``: the columns of a 2-D ``y`` (``None``: a 1-D ``y``).
        """
        centre, bound = np.atleast_1d(centre).astype(float), np.atleast_1d(bound).astype(float)
        M = None if coef_norm is None else np.atleast_1d(coef_norm).astype(float)
        if M is not None:  # the default ball of some solvers follows the row bound (see _ball_scale)
            M = M * self._ball_scale(solver, getattr(self, "data_norm_", None))
        k = bound.size
        if n_features is not None:
            expected = (n_features + int(self.fit_intercept),) + (() if k == 1 else (k,))
            if np.shape(coef) != expected:  # a solver that took a (n, k) y for one target must not pass silently
                raise RuntimeError(f"solver {solver.name!r} returned coefficients of shape {np.shape(coef)} for "
                                   f"{k} target(s); expected {expected}.")
        coef_, intercept_ = self._split_coef(coef * (bound if k > 1 else bound[0]))
        intercept_ = intercept_ + centre
        if n_targets is None:
            self.coef_, self.intercept_ = coef_.ravel(), float(intercept_[0])
            self.label_bound_ = (float(centre[0] - bound[0]), float(centre[0] + bound[0]))
            self.coef_norm_ = None if M is None else float(M[0])
        else:
            # sklearn's Ridge: coef_ (n_targets, n_features), but (n_features,) for one column;
            # intercept_ (n_targets,), or 0.0 without an intercept
            self.coef_ = coef_.ravel() if k == 1 else coef_
            self.intercept_ = intercept_ if self.fit_intercept else 0.0
            self.label_bound_ = np.column_stack([centre - bound, centre + bound])
            self.coef_norm_ = M
        diagnostics.record(self, n_labels_clipped=int(n_labels_clipped))
        if n_samples is not None:
            warn_heavy_clipping(self, n_samples, n_labels_clipped=int(n_labels_clipped), n_labels=n_samples * k)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # R^2 > 0.5 on make_regression(n=200) is not guaranteed at epsilon=1
        tags.regressor_tags.poor_score = True
        # a 2-D y is fitted jointly by every solver "auto" picks and by the solvers that say so
        tags.target_tags.multi_output = self._fits_jointly()
        tags.target_tags.single_output = True
        return tags


#: ``alpha=None`` with an iterative solver (the default before ``adassp`` became ``"auto"``; at most, for the
#: solvers of :data:`SCALED_ALPHA_SOLVERS`, see :func:`scaled_alpha`), and its coefficient ball ``B / sqrt(alpha)``
_ITERATIVE_ALPHA = 0.1
#: :func:`scaled_alpha`: ``alpha = min(0.1, c K^2)``, ``c`` this factor
SCALED_ALPHA_FACTOR = 0.2
#: the built-in solvers whose default penalty and ball follow the row bound (:func:`scaled_alpha`): those
#: whose release depends on neither ``alpha`` nor the ball (``Solver.release_ignores_penalty``, tested), which
#: for the squared loss are dp_gd, noisy_sgd, dp_svrg, dp_svrg_pp, dp_srm, dp_lssgd and rrpsgd;
#: ``output_pert``'s noise and the constrained solvers' steps depend on them
SCALED_ALPHA_SOLVERS = frozenset(name for name, solver in SOLVERS.items()
                                 if solver.release_ignores_penalty and "squared" in solver.losses)


def scaled_alpha(data_norm):
    """``DPRidge``'s default penalty for the solvers of :data:`SCALED_ALPHA_SOLVERS`: ``min(0.1, 0.2 K^2)``.

    ``K`` is the row bound the solver sees. A function of the row bound only
    (public, or chosen privately and paid for), so choosing it costs no
    privacy, and these solvers' releases do not depend on ``alpha`` or the
    ball. A fixed ``alpha`` is expressed in the features'
    units: against rows of norm at most ``K`` (curvature at most ``K^2``) it
    is a mild penalty on standardised features and an overwhelming one on
    features of small scale (diabetes as sklearn loads it has rows of norm
    about 0.15, and ``alpha = 0.1`` then dominates the loss's curvature). Below
    ``K = 1/sqrt(2)`` the penalty therefore scales with ``K^2``, as the
    curvature does, and the coefficient ball ``B / sqrt(alpha)`` with
    ``1 / K``, as the coefficients do (:meth:`DPRidge._ball_scale`):
    features of any smaller scale get the fit that the same features scaled
    to ``K = 1/sqrt(2)`` get. From there up both are the former ``0.1`` and
    ``B / sqrt(0.1)``, so rows of norm about 1 (private bound 0.7 to 1) and
    standardised features keep the former fit: the best penalty differs by
    orders of magnitude between designs (small for isotropic features,
    large for strongly correlated ones) and is not public, so only the
    scale is corrected. The scores of this default against the former
    ``alpha = 0.1`` (diabetes as loaded and standardised, isotropic and
    correlated synthetic designs at unit scale and scaled down, every solver
    it applies to) are on :doc:`/user_guide/defaults`.
    """
    return min(_ITERATIVE_ALPHA, SCALED_ALPHA_FACTOR * float(data_norm) ** 2)


def _needs_no_ball(solver):
    """Sufficient-statistics solvers use the squared loss exactly and need no coefficient ball."""
    return "quadratic" in solver.requires


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


_RIDGE_SOLVER = DPRidge._parameter_constraints["solver"][0]


def _joint_label_bound(n_targets):
    """Bound on ``||y_i||_2`` of a row's label vector when each of ``n_targets`` targets is within [-1, 1]."""
    return 1.0 if n_targets == 1 else math.sqrt(n_targets)


def _n_targets_of(y):
    """Number of columns of a 2-D ``y`` (public, like ``n``), ``None`` for any other shape.

    Reads only the shape; ``validate_data`` reports a malformed ``y``.
    """
    shape = getattr(y, "shape", None)
    if shape is None:
        try:
            shape = np.asarray(y).shape
        except (TypeError, ValueError):  # ragged
            return None
    return int(shape[1]) if len(shape) == 2 and shape[1] >= 1 else None
