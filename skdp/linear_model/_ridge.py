"""DPRidge."""

import math
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from ..bounds import bound_labels, check_label_bound, private_label_range, public_label_range
from ..losses import SquaredLoss
from ..solvers import SolverChoice
from .. import diagnostics
from .. import _dask
from .._dask import is_dask_collection
from .._random import fit_randomness
from .._release import LinearRegressorMixin, charge
from ._base import DPLinearModel

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

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy-loss target, > 0.
    delta : float, default=1e-5
        Failure probability in [0, 1); ``delta=0`` needs ``solver="output_pert"``.
    solver : {"auto", "adassp", "dp_accmd", "dp_gd", "dp_lssgd", "dp_srm", "dp_svrg", "dp_svrg_pp", \
            "noisy_sfw", "noisy_sfw_lp", "noisy_sgd", "obj_pert", "output_pert", "phased_sgd", \
            "rrpsgd"}, default="auto"
        ``list_solvers(DPRidge)`` describes each. ``"auto"`` uses ``"adassp"``
        (sufficient-statistics perturbation, Wang 2018) when
        ``n_samples * epsilon >= 100 * p`` (``p`` features plus the intercept
        column), ``"dp_gd"`` below that, and ``"output_pert"`` when
        ``delta=0``: the cross-over measured in ``benchmarks/bench_defaults.py``.
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
        ``n * epsilon`` grows); ``0.1`` with the iterative solvers, which need
        a coefficient ball ``B/sqrt(alpha)`` or an explicit ``coef_norm``.
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
        selection may land far from the data; give public bounds). The solver is then calibrated so that the accountant's price of
        everything is ``epsilon``. No data-derived bound is read in the clear,
        so there is no ``PrivacyLeakWarning``.
    label_bound : float, (low, high), "auto" or None, default="auto"
        Label range: ``B`` means ``[-B, B]``. ``"auto"`` chooses it privately
        with two exponential-mechanism selections paid from
        ``bound_budget_fraction`` (median label, then median absolute
        deviation; range = median +- 2.5 MAD: on diabetes at epsilon = 1,
        R^2 0.301 against 0.287 with 3 MAD, and 0.473 against 0.472 at
        epsilon = 100, 20 seeds). At very small ``epsilon * n``
        (diabetes, ``n = 309``, at epsilon = 0.5) a selection over the wide
        public grid can still pick an absurd range; prefer a range known a
        priori there. ``None`` reads it from the data and voids the guarantee.
    coef_norm : float or None, default=None
        Radius ``M`` of the coefficient ball. ``None``: ``B/sqrt(alpha)``
        where ``B`` is the (centred) label bound. The constrained solvers use
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

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_iter_ : int
    privacy_spent_ : PrivacyBudget
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
    label_bound_ : tuple of float
        ``(low, high)`` used for clipping.
    coef_norm_ : float or None
        The coefficient ball's radius, ``None`` for ``adassp`` (no ball).
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
    >>> bool(reg.score(X, y) > 0.8)
    True
    """

    _parameter_constraints: dict = {
        **DPLinearModel._parameter_constraints,
        "solver": [SolverChoice(lambda s: s.constraint is None and "squared" in s.losses)],
        "label_bound": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), "array-like", None],
        "coef_norm": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="left"), None],
    }

    _default_solver = "adassp"

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

    _default_intercept_fraction = 1 / math.sqrt(2)

    #: label_bound="auto": the range is median +- this many private median absolute deviations
    _auto_label_width = 2.5

    def _n_auto_selections(self):
        return super()._n_auto_selections() + (2 if _is_auto(self.label_bound) else 0)

    def _check_label_bound(self):
        if not _is_auto(self.label_bound):
            check_label_bound(self.label_bound)

    def _alpha_for(self, solver, n_samples=None):
        """``alpha=None``: no penalty for ``adassp`` (its private ridge term scales with the noise and
        vanishes with it), ``0.1`` for the iterative solvers (their coefficient ball is ``B/sqrt(alpha)``)."""
        if self.alpha is not None:
            return self.alpha
        return 0.0 if solver is not None and _needs_no_ball(solver) else _ITERATIVE_ALPHA

    def _auto_norm_factor_for(self, n_samples):
        """Clip as before at small ``n * epsilon`` (noise dominates), less at large (bias dominates).

        ``0.7`` times the private median row norm up to ``n * epsilon = 3000`` (the
        factor chosen for small budgets, see ``DPLinearModel``), rising by ``0.25`` per
        decade to ``1.25``: clipping a row scales its contribution, which biases a
        regression towards larger coefficients, and with little noise that bias is
        what is left (synthetic design of ``benchmarks/bench_defaults.py``, n = 70,000,
        epsilon = 1: R^2 0.705 at 0.7, 0.884 at 1.0).
        """
        n_eps = max(float(n_samples) * self.epsilon, 1.0)
        return min(max(0.7 + 0.25 * math.log10(n_eps / 3000.0), 0.7), 1.25)

    def _coef_ball(self, bound, solver):
        if self.coef_norm is not None:
            return float(self.coef_norm)
        alpha = self._alpha_for(solver)
        return bound / math.sqrt(alpha) if alpha > 0 else None

    def _check_ball(self, solver):
        if self.coef_norm is None and self._alpha_for(solver) == 0 and not _needs_no_ball(solver):
            raise ValueError(
                "coef_norm is required when alpha=0: the squared loss is only Lipschitz on a "
                f"bounded coefficient ball (solver={solver.name!r})."
            )

    def _auto_solver(self, loss_name, shape=None):
        """``adassp`` once ``n * epsilon >= 100 p`` (``p`` features with the intercept column), else ``dp_gd``.

        Sufficient-statistics perturbation pays for a ``p x p`` noise matrix once;
        gradient descent pays per step but only in ``p`` directions. On the
        benchmarks the cross-over is near ``n * epsilon = 100 p`` (diabetes,
        ``n = 309``, ``p = 11``: ``dp_gd`` R^2 0.29 vs ``adassp`` -0.01 at epsilon = 1,
        0.39 vs 0.40 at epsilon = 5; the synthetic design, ``n = 70,000``,
        ``p = 51``: 0.21 vs 0.88 at epsilon = 1). Public quantities only; without a
        shape (validation before the data is seen) ``adassp``.
        """
        if self.delta == 0:
            return "output_pert"
        if shape is not None and shape[1] is not None and shape[0] * self.epsilon < 100 * shape[1]:
            return "dp_gd"
        return self._default_solver

    def _public_spec(self, shape=None):
        if self.label_bound is None:
            return None
        self._check_label_bound()
        # With label_bound="auto" the range is chosen during the fit; the solver's noise is
        # relative to it, so a nominal unit range prices the same.
        lb = (-1.0, 1.0) if _is_auto(self.label_bound) else self.label_bound
        bound = public_label_range(lb, self.fit_intercept)[3]
        # the solver works in units where |y| <= 1 (see fit)
        solver = self._resolve_solver("squared", shape)
        self._check_ball(solver)
        ball = self._coef_ball(bound, solver)
        return SquaredLoss(), 1, 1.0, None if ball is None else ball / bound

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, privacy_ledger=None):
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
        y : array-like or dask array/Series of shape (n_samples,)
        privacy_ledger : PrivacyLedger or None, default=None
            Charge this fit to the ledger before touching the data; raises
            :class:`~skdp.BudgetExceededError` if it would exceed the ledger's
            budget. ``None`` uses the ledger of an enclosing ``with ledger:``
            block, if any.

        Returns
        -------
        self : object
        """
        if is_dask_collection(X):
            return _dask.fit_ridge(self, X, y, privacy_ledger)
        self._check_privacy_params()
        self._check_label_bound()
        solver = self._resolve_solver("squared")
        self._check_ball(solver)
        charge(self, X, privacy_ledger)
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32], y_numeric=True
        )
        y = np.asarray(y, dtype=np.float64)
        solver = self._resolve_solver("squared", (X.shape[0], X.shape[1] + int(self.fit_intercept)))
        self._check_ball(solver)
        rng = fit_randomness(self)
        label_bound, pre_events = self.label_bound, []
        if _is_auto(label_bound):
            label_bound, pre_events = private_label_range(y, self._selection_epsilon(y.shape[0]), rng,
                                                          width=self._auto_label_width)
        yc, centre, bound, n_lab, derived = bound_labels(y, label_bound, self.fit_intercept)
        M = self._coef_ball(bound, solver)
        # Work in units where |y| <= 1 (dividing by the public bound is a public
        # rescaling; coefficients are scaled back afterwards).
        coef, _ = self._fit_problem(
            X, yc / bound, SquaredLoss(), 1, solver, label_bound=1.0, coef_norm=None if M is None else M / bound,
            data_derived=derived, clip_norm="initial", rng=rng, pre_events=pre_events,
        )
        return self._set_fitted(coef, centre, bound, M, n_lab)

    def _set_fitted(self, coef, centre, bound, coef_norm, n_labels_clipped):
        """Fitted attributes from the solver's coefficients in units of the label ``bound`` (in memory and Dask)."""
        coef_, intercept_ = self._split_coef(coef * bound)
        self.coef_ = coef_.ravel()
        self.intercept_ = float(intercept_[0]) + centre
        self.label_bound_ = (centre - bound, centre + bound)
        self.coef_norm_ = coef_norm
        diagnostics.record(self, n_labels_clipped=int(n_labels_clipped))
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # R^2 > 0.5 on make_regression(n=200) is not guaranteed at epsilon=1
        tags.regressor_tags.poor_score = True
        return tags


#: ``alpha=None`` with an iterative solver (the default before ``adassp`` became ``"auto"``)
_ITERATIVE_ALPHA = 0.1


def _needs_no_ball(solver):
    """Sufficient-statistics solvers use the squared loss exactly and need no coefficient ball."""
    return "quadratic" in solver.requires


def _is_auto(value):
    return isinstance(value, str) and value == "auto"
