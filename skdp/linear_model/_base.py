"""Shared machinery of the DP linear models: validation, bounding, solving, accounting."""

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, is_classifier
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _num_samples, validate_data

from .._dask import DaskDesign, DaskProblem, check_solver, refuse_none, set_features
from .._fit import run_solver
from .._plan import FitPlan, PublicFit, follows_plan_protocol, make_plan, public_fit, rows_elsewhere
from .._classes import class_selection_events, zero_inactive_rows
from .._warnings import caller_stacklevel as _caller_stacklevel
from ..privacy.search import plan_after
from .._feature_scaling import feature_scaling_mu, private_feature_scaling
from ..bounds import (augmented_row_bound, bound_features, clipped_row_norms, private_row_bound, raw_row_bound,
                      row_norms)
from .._weights import WEIGHT_CONSTRAINTS, check_weight_params, default_weight, row_weights, sample_weights, weight_bound
from ..penalties import L2Penalty, NonconvexPenalty
from ..privacy import BoundedRangeEvent, GaussianEvent
from ..privacy.quantile import DEFAULT_NORM_GRID, DEFAULT_SIGNED_GRID, private_quantile_from_counts
from ..solvers._base import selection_secure_option
from ..solvers import SOLVERS, Problem, PublicProblem, SolverChoice, get_solver, public_view

__all__ = ["DPLinearModel", "LinearData", "selection_epsilon", "solver_budget", "warn_unreliable_selection",
           "refuse_unreliable_selection"]

#: candidates of the largest public grid a bound selection uses, and the failure probability
#: the selection budget is sized for (see ``selection_epsilon``)
_SELECTION_GRID_SIZE = DEFAULT_SIGNED_GRID.size
_SELECTION_FAILURE = 0.001


def _intercept_row(fit_intercept, X, n_features):
    """Index of the intercept's constant column (the last one) when there is one."""
    p = X.shape[1] if X is not None else n_features
    return int(p) - 1 if (fit_intercept and p) else None


def warn_unreliable_selection(epsilon, k, n_samples):
    """``UserWarning`` when ``k`` bound selections on ``n_samples`` rows cannot get the epsilon they need.

    A function of public quantities only (see :func:`selection_epsilon`).
    """
    if k and _selection_needed(n_samples) > 0.5 * epsilon / k:
        warnings.warn(
            f"{n_samples} rows at epsilon={epsilon:g} are too few to choose {k} bound(s) privately with "
            f"confidence: each selection needs epsilon >= {_selection_needed(n_samples):.3g} "
            f"(45.5 / n) but gets {0.5 * epsilon / k:.3g}, so a bound may land far from the data and "
            "the model be useless. Give public bounds (data_norm, label_bound) or a larger epsilon.",
            UserWarning, stacklevel=_caller_stacklevel())


def refuse_unreliable_selection(estimator, k, X):
    """``ValueError`` (a regressor's refusal) where :func:`warn_unreliable_selection` would warn.

    A regressor whose label range or row bound lands far from the data
    releases a model whose predictions can be off by orders of magnitude;
    a clear refusal beats that. Public quantities only (``epsilon``, the number
    ``k`` of private bound selections and ``n``, the number of rows of ``X``
    or ``X`` itself if it is an integer: only its shape is read), so it runs before the ledger is charged or any
    row is read.
    """
    if isinstance(X, Integral):  # the public n of a distributed design
        n_samples = int(X)
    else:
        try:
            n_samples = _num_samples(X)
        except TypeError:  # not array-like: the fit's validate_data raises the proper error
            return
    epsilon = estimator.epsilon
    if k and _selection_needed(n_samples) > 0.5 * epsilon / k:
        raise ValueError(
            f"{type(estimator).__name__}: n_samples={n_samples} rows at epsilon={epsilon:g} are too few to choose {k} "
            f"bound(s) privately (each selection needs epsilon >= {_selection_needed(n_samples):.3g}, i.e. "
            f"45.5 / n, but can get at most {0.5 * epsilon / k:.3g}); a bound chosen that way may land far "
            "from the data, and a regressor's predictions with it. Give public bounds (data_norm, label_bound: "
            "domain knowledge, not the data) or a larger epsilon. Nothing was fitted and no budget spent.")


def _selection_needed(n_samples):
    return 2.0 * math.log(_SELECTION_GRID_SIZE / _SELECTION_FAILURE) / (0.5 * max(int(n_samples), 1))


def selection_epsilon(epsilon, fraction, k, n_samples):
    """Epsilon of each of ``k`` private bound selections of a fit on ``n_samples`` rows (public).

    ``fraction * epsilon`` shared equally, raised where that is too little for
    ``n`` rows to locate a median on the public grid: the exponential mechanism
    over ``m`` candidates lands within the data with probability about
    ``1 - beta`` once ``epsilon_sel >= 2 ln(m / beta) / (n / 2)`` (every
    candidate beyond the data scores ``-n/2``); with ``m = 87`` and
    ``beta = 0.001`` that is ``45.5 / n``. The raise is capped so that the
    selections never take more than half of ``epsilon``. A function of public
    quantities only.
    """
    if not k:
        return 0.0
    share = fraction * epsilon / k
    return max(share, min(_selection_needed(n_samples), 0.5 * epsilon / k))


def solver_budget(solver, problem, pre_events, epsilon, delta):
    """``(budget, solver_plan)``: the solver's target so that its events and ``pre_events`` cost ``(epsilon, delta)``.

    :func:`skdp.privacy.search.plan_after` on the solver's plans for the
    public view of ``problem``: without pre-events ``(epsilon, delta)``,
    otherwise the largest solver epsilon for which the accountant prices the
    whole plan at no more than ``epsilon``. ``solver_plan`` is the solver's
    plan at that budget when the search made it (``None`` otherwise: made on
    first use). Planning reads only public quantities.
    """
    view = public_view(problem)
    made = []

    def events(budget):
        if not follows_plan_protocol(solver):  # a user's solver that plans in its own ``plan``
            return solver.plan(view, budget)
        made.append((budget, solver.make_plan(view, budget)))
        return made[-1][1].events

    budget = plan_after(events, pre_events, epsilon, delta)
    return budget, next((made_plan for b, made_plan in made if b is budget), None)


@dataclass
class LinearData:
    """The validated input of a linear model's fit (``_read``), and the rows in the chosen feature units.

    ``X`` is the validated array or CSR matrix, or the rows read where they
    live (a :class:`~skdp._dask.DaskRows`, ``reduced``), whose first pass
    gave ``counts`` on the public grids; ``weights`` the row weights
    (``None``: all 1). ``bounded_rows`` and ``norms`` are set by the bound
    choices (the rows after the private feature map, and their norms).
    """

    X: object
    y: object = None
    weights: object = None
    counts: dict = field(default_factory=dict)
    bounded_rows: object = None
    norms: object = None

    @property
    def reduced(self):
        return rows_elsewhere(self.X)

    @property
    def n(self):
        return self.X.n if self.reduced else self.X.shape[0]

    @property
    def d(self):
        return self.X.d if self.reduced else self.X.shape[1]


class DPLinearModel(BaseEstimator):
    """Base class: validate -> bound data -> build problem -> solve -> price.

    Subclasses define ``_loss_for(n_classes)``, ``_encode_targets`` and the
    public parameters; every guarantee is for replace-one neighbours with the
    number of rows public.
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "solver": [SolverChoice(lambda s: s.constraint is None)],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "penalty": [StrOptions({"l2", "nonconvex"})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither"), None],
        "data_norm": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "bound_budget_fraction": [Interval(Real, 0, 1, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "solver_options": [dict, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        **WEIGHT_CONSTRAINTS,
    }

    #: share of ``data_norm`` given to the intercept column when ``intercept_scaling=None``
    _default_intercept_fraction = 0.5
    #: ``data_norm="auto"``: raw rows are clipped to this multiple of the private median row norm
    #: (below the median: at small n * epsilon the noise saved outweighs the clipping bias;
    #: where the factor was chosen: :doc:`/user_guide/defaults`)
    _auto_norm_quantile = 0.5
    _auto_norm_factor = 0.7

    #: what ``solver="auto"`` runs (with ``delta > 0``; see ``_auto_solver``); public, read by :func:`skdp.list_solvers`
    default_solver = "dp_gd"
    #: whether the estimator fits more than two classes with a multinomial solver (read by :func:`skdp.list_solvers`)
    multinomial = False

    # -- hooks ---------------------------------------------------------------------------
    def _alpha_for(self, solver, n_samples=None, data_norm=None):
        """The penalty ``alpha`` a fit with ``solver`` on ``n_samples`` rows uses (``alpha`` unless a subclass has a rule).

        ``data_norm`` (the row bound ``K`` the solver sees, public or privately
        chosen) is given when the problem is built. ``n_samples=None``
        (validation before the data is seen) must still give a value with the right sign.
        """
        return self.alpha

    def _intercept_fraction_for(self, n_features):
        """Share of ``data_norm`` given to the intercept column (``intercept_scaling=None``) with ``n_features`` raw features."""
        return self._default_intercept_fraction

    def _feature_clip_radius(self, raw_bound, n_features):
        """Radius each raw feature is clipped to before the rows are (``None``: no per-feature clipping)."""
        return None

    def _auto_norm_factor_for(self, n_samples):
        """``data_norm="auto"``: multiple of the private median row norm the raw rows are clipped to."""
        return self._auto_norm_factor

    def _auto_solver(self, loss_name, shape=None):
        """``solver="auto"``: the default, or ``output_pert`` (pure epsilon-DP) when ``delta=0``.

        ``shape`` is the public ``(n_samples, n_features)`` of the fit (intercept column
        included) when known; a subclass may choose by it.
        """
        return "output_pert" if self.delta == 0 else self.default_solver

    def _clip_mode(self, solver):
        """Per-example gradient clipping used with ``solver`` (see ``_problem``)."""
        return "initial"

    # -- shared steps --------------------------------------------------------------------
    def _check_privacy_params(self):
        """Checks the constraint table cannot express; run before any data is read."""
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        check_weight_params(self)
        if self.data_norm is not None and self.data_norm != "auto":
            if not math.isfinite(self.data_norm):
                raise ValueError(f"data_norm must be finite, got {self.data_norm!r}.")
            if (self.fit_intercept and self.intercept_scaling is not None
                    and self.intercept_scaling >= self.data_norm):
                raise ValueError(
                    f"intercept_scaling={self.intercept_scaling!r} must be smaller than "
                    f"data_norm={self.data_norm!r}: the intercept column counts towards the "
                    "row norm bound."
                )

    def _resolve_solver(self, loss_name, shape=None, public=None):
        """The registered solver the fit runs, checked against the loss, ``delta``, the penalty and the options.

        ``shape``: the public ``(n_samples, n_features)`` (intercept column included) when known, which
        ``solver="auto"`` may choose by; ``public``: the fit's :class:`~skdp._plan.PublicFit`.
        """
        name = self._auto_solver(loss_name, shape) if self.solver == "auto" else self.solver
        solver = get_solver(name)
        if getattr(self, "penalty", "l2") == "nonconvex":
            if not solver.explicit_penalty:
                ok = sorted(n for n, s in SOLVERS.items() if s.explicit_penalty and loss_name in s.losses)
                raise ValueError(f"penalty='nonconvex' is not supported by solver={name!r} (it needs an L2 "
                                 f"penalty: a prox or strong convexity); solvers that take it: {ok}.")
            solver.check(loss_name, self.delta, 0.0)
        else:
            solver.check(loss_name, self.delta, self._alpha_for(solver))
        solver.check_options(self.solver_options)
        if solver.geometry is not None:
            solver.make_constraint(self.solver_options or {}, 1.0)  # validates p / geometry
            self._constraint_radius(solver, getattr(self, "coef_norm", None))
        return solver

    def _constraint_radius(self, solver, coef_norm):
        """Radius of a constrained solver's ball (``coef_norm``, in the solver's own norm)."""
        return coef_norm

    def _problem(self, n, loss, n_outputs, data_norm, *, X=None, y=None, norms=None, label_bound=None,
                 coef_norm=None, clip_norm=None, solver=None, n_features=None, inf_norm_bound=None,
                 sample_weight=None):
        """The solver's problem: a :class:`~skdp.solvers.Problem` over ``X``, or its data-free
        :class:`~skdp.solvers.PublicProblem` without ``X`` (planning).

        ``max_sample_weight`` of the problem is the public weight bound (:func:`skdp._weights.weight_bound`)
        whether or not ``sample_weight`` (the rows' weights, ``None``: all 1) is given.
        """
        constraint = None
        if solver is not None and solver.geometry is not None:
            coef_norm = self._constraint_radius(solver, coef_norm)
            constraint = solver.make_constraint(self.solver_options or {}, coef_norm)
        if clip_norm == "initial":
            # Clip per-example gradients at their largest possible norm at the
            # starting point w = 0 (K/2 logistic, K sqrt(1 - 1/k) multinomial,
            # K B squared). For a GLM this is the exact gradient of a convex
            # surrogate with the same smoothness, so every gradient solver's
            # proof holds with G = clip_norm; obj_pert ignores it (exact loss).
            clip_norm = data_norm * loss.initial_derivative_bound(label_bound)
        public = dict(
            loss=loss,
            penalty=(NonconvexPenalty(self._alpha_for(solver, n)) if getattr(self, "penalty", "l2") == "nonconvex"
                     else L2Penalty(self._alpha_for(solver, n, data_norm), radius=coef_norm)),
            data_norm=data_norm,
            n_outputs=n_outputs,
            label_bound=label_bound,
            coef_norm=coef_norm,
            max_iter=self.max_iter,
            verbose=self.verbose,
            clip_norm=clip_norm,
            n_samples=n,
            n_features=n_features,
            constraint=constraint,
            inf_norm_bound=inf_norm_bound,
            intercept_index=_intercept_row(self.fit_intercept, X, n_features),
            options=dict(self.solver_options or {}),
            max_sample_weight=weight_bound(self),
        )
        if X is None:  # planning
            return PublicProblem(**public)
        return Problem(X=X, y=y, norms=norms, sample_weight=sample_weight, **public)

    def _plan_spec(self, public, shape):  # pragma: no cover - abstract
        """The estimator's public decisions: ``dict(solver, loss, n_outputs, label_bound, coef_norm, guaranteed)``.

        ``shape``: the public ``(n_samples, n_features)`` of the planned fit,
        intercept column included (``n_features`` may be ``None``);
        ``guaranteed`` is false when a bound is read from the data.
        """
        raise NotImplementedError

    def _plan(self, public):
        """The fit's :class:`~skdp._plan.FitPlan` (see :func:`skdp._plan.make_plan`).

        The solver, the private bound selections (each at
        :func:`selection_epsilon`; the label set's selection after them), the
        solver's budget from the one search and its plan on the data-free
        problem. With ``data_norm="auto"`` (or ``None``) the bound is chosen
        during the fit; every noise scale is proportional to it, so the plan
        made with ``K = 1`` prices the same.
        """
        n = int(public.n_samples)
        p = None if public.n_features is None else int(public.n_features) + int(self.fit_intercept)
        spec = self._plan_spec(public, (n, p))
        solver = spec["solver"]
        k = self._n_auto_selections(public.n_targets)
        eps_sel = selection_epsilon(self.epsilon, self.bound_budget_fraction, k, n)
        mu_s = self._scaling_mu(public)
        # mu_s-GDP whatever the width (the released event's sensitivity is sqrt(2 d), its sigma sqrt(2 d) / mu_s)
        sens = 1.0 if public.n_features is None else math.sqrt(2.0 * int(public.n_features))
        scaling = [] if mu_s is None else [GaussianEvent(sens, sens / mu_s)]
        pre = scaling + [BoundedRangeEvent(eps_sel)] * k + class_selection_events(self, n)
        K = float(self.data_norm) if isinstance(self.data_norm, Real) else 1.0
        view = self._problem(n, spec["loss"], spec["n_outputs"], K, label_bound=spec["label_bound"],
                             coef_norm=spec["coef_norm"], clip_norm=self._clip_mode(solver), solver=solver,
                             n_features=p)
        budget, solver_plan = self._solver_budget(solver, view, pre)
        spec = dict(spec, scaling_mu=mu_s)
        return FitPlan(public, guaranteed=spec["guaranteed"] and self.data_norm is not None, pre_events=pre,
                       selection_epsilon=eps_sel, budget=budget, solver=solver, view=view, spec=spec,
                       solver_plan=solver_plan)

    def _scaling_mu(self, public):
        """``feature_scaling="auto"``: GDP parameter of the private per-feature histograms, or ``None``.

        Public facts only: the parameter, ``data_norm="auto"`` (a given
        ``data_norm`` is in the user's units, so those rows are not rescaled),
        ``n``, ``epsilon`` and ``delta`` (:func:`skdp._feature_scaling.feature_scaling_mu`);
        never the width, so the price is the same at every width. Not with rows
        read by reductions where they live (Dask).
        """
        if getattr(self, "feature_scaling", None) != "auto" or self.data_norm != "auto" or public.reduced_rows:
            return None
        return feature_scaling_mu(int(public.n_samples), self.epsilon, self.delta)

    def _fit_plan(self, X, **facts):
        """The fit's plan from the shape of ``X`` and the public ``facts`` (``None`` when ``X`` has no readable
        shape: the parameters are still checked, before the input's own checks name ``X``)."""
        public = public_fit(X, **facts)
        if public is None:
            self._plan_spec(PublicFit(1, None, **facts), (1, None))
            return None
        return make_plan(self, public)

    def planned_events(self, n_samples, n_features=None):
        """The privacy events a fit on ``n_samples`` rows will release, without any data.

        ``n_features`` is needed by the solvers whose schedule depends on the
        dimension (``noisy_sfw``, ``noisy_sgd``, ``nsgd_moreau``, ``phased_sgd``);
        the others ignore it.

        Every skdp solver's noise depends only on public quantities (``n``, the
        bounds, the schedule), so a fit's cost is known before the data is
        touched: these are the events of the fit's plan
        (:func:`skdp._plan.make_plan`). Returns ``None`` when a bound
        (``data_norm``, ``classes``, ``label_bound``) is left to be read from
        the data: such a fit has no finite guarantee.
        """
        self._validate_params()
        self._check_privacy_params()
        return make_plan(self, PublicFit(int(n_samples), None if n_features is None else int(n_features))).events

    def _n_auto_selections(self, n_targets=None):
        """How many private bound selections a fit makes (each gets an equal share; ``n_targets`` of a 2-D ``y``)."""
        return int(self.data_norm == "auto")

    def _solver_budget(self, solver, view, pre_events):
        """``(budget, solver_plan)`` of the solver (see :func:`solver_budget`)."""
        return solver_budget(solver, view, pre_events, self.epsilon, self.delta)

    # -- the fit: skdp._fit.private_fit calls _plan_fit, _read, _select_bounds, _run, _set_fitted -------------
    #: the bounds that rows read where they live (Dask) need given publicly or chosen privately, never read
    _reduced_public_bounds = ("data_norm",)

    def _public_facts(self, X, y):
        """Public facts of the fit besides the shape of ``X`` (e.g. a 2-D ``y``'s columns); no row is read."""
        return {}

    def _plan_fit(self, X, y, sample_weight=None):
        """The fit's :class:`~skdp._plan.FitPlan`, with the refusals that need no row (see :mod:`skdp._fit`)."""
        self._check_privacy_params()
        reduced = rows_elsewhere(X)
        if reduced:  # rows read where they live: every pass a reduction, so no bound may be read from them
            for name in self._reduced_public_bounds:
                refuse_none(self, name)
        plan = self._fit_plan(X, **self._public_facts(X, y))  # public facts only: before any row is read
        if reduced:
            check_solver(self, plan.solver)
        return plan

    def _read(self, plan, X, y, sample_weight=None):
        """The validated rows (:class:`LinearData`); rows read where they live get their first pass's counts."""
        if rows_elsewhere(X):
            set_features(self, X)
            return LinearData(X, counts=self._first_pass(X))
        classifier = is_classifier(self)
        n_targets = None if plan is None else plan.public.n_targets
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             y_numeric=not classifier, multi_output=n_targets is not None)
        if classifier:  # refused before the label-set selection spends
            return LinearData(X, y, sample_weights(self, sample_weight, X))
        return LinearData(X, np.asarray(y, dtype=np.float64), row_weights(self, sample_weight, X))

    def _select_row_bound(self, plan, data, rng, bounds):
        """The shared bound choices, after the estimator's own (label set, label ranges) in ``bounds``.

        ``feature_scaling="auto"``: the private per-feature histograms (planned
        first; :func:`skdp._feature_scaling.private_feature_scaling`), whose map
        ``z = (x - centre) / scale`` is applied to every column before the row
        bound; ``data_norm="auto"``: the private row bound. Their events go
        before ``bounds.events``, in the plan's order. Returns ``bounds``.
        """
        n, d = data.n, data.d
        warn_unreliable_selection(self.epsilon, self._n_auto_selections(plan.public.n_targets), n)
        values, scale_events = bounds.values, []
        values["feature_map"] = None
        mu_s = plan.spec.get("scaling_mu")
        X = data.X
        if mu_s is not None:  # a fixed affine map of every column, from the noisy histograms (post-processing)
            centre, scale, scale_event = private_feature_scaling(X, mu_s, rng)
            scale_events = [scale_event]
            if scale is not None:
                X = X.multiply(1.0 / scale).tocsr() if sp.issparse(X) else (X - centre) / scale
                values["feature_map"] = (centre, scale)
        data.bounded_rows = X
        data_norm, bound_events = self.data_norm, []
        fraction = self._intercept_fraction_for(d)
        secure = selection_secure_option(self.solver_options)
        if data_norm == "auto" and data.reduced:  # the norms' counts on the public grid, from the first pass
            value, event = private_quantile_from_counts(data.counts["norms"], n, self._auto_norm_quantile,
                                                        plan.selection_epsilon, rng, DEFAULT_NORM_GRID, secure)
            data_norm = augmented_row_bound(value * self._auto_norm_factor_for(n), self.fit_intercept,
                                            self.intercept_scaling, fraction)
            bound_events = [event]
        elif not data.reduced:
            data.norms = row_norms(X)  # once per fit: the private bound and the clipping both use them
            if data_norm == "auto":
                data_norm, event = private_row_bound(
                    X, plan.selection_epsilon, rng, norms=data.norms, quantile=self._auto_norm_quantile,
                    factor=self._auto_norm_factor_for(n), fit_intercept=self.fit_intercept,
                    intercept_scaling=self.intercept_scaling, intercept_fraction=fraction, secure=secure)
                bound_events = [event]
        bounds.events = scale_events + bound_events + list(bounds.events)  # the plan's order
        values["data_norm"] = data_norm
        return bounds

    def _bound_and_solve(self, plan, data, bounds, rng, loss, n_outputs, solver, *, y=None, targets=None,
                         label_bound=None, coef_norm=None, derived=False, active=None, sample_weight=None):
        """Bound the rows as chosen and run ``solver`` at the plan's budget (:func:`skdp._fit.run_solver`).

        In memory the bounded design is lazy (no copy of ``X``); ``active``
        (``classes="auto"``): the rows whose label was selected, the others
        kept (``n`` is public) with their augmented row set to zero, so their
        loss is a constant and their gradient zero in every solver, and no
        bound changes. Rows read where they live are bounded block by block
        (a :class:`~skdp._dask.DaskDesign` with the estimator's ``targets``
        encoding). ``derived``: a bound of the targets was read from the data.
        """
        n, d = data.n, data.d
        data_norm = bounds.values["data_norm"]
        fraction = self._intercept_fraction_for(d)
        radius = None
        if data_norm is not None:
            radius = self._feature_clip_radius(
                raw_row_bound(data_norm, self.fit_intercept, self.intercept_scaling, fraction), d)
        price_with = getattr(solver, "price_with", None)
        if price_with is not None:  # one-vs-rest: its k fits are priced with the selections made before them
            price_with(bounds.events, self.delta)
        clip_norm = "initial"  # per-example gradients clipped at their largest norm at w = 0 (see _problem)
        if data.reduced:
            # the public bounds, as bound_features applies them to every block (no row is read here)
            bounded = bound_features(np.empty((0, d)), data_norm, self.fit_intercept, self.intercept_scaling,
                                     fraction)
            design = DaskDesign(data.X, bounded.data_norm, self.fit_intercept, self.intercept_scaling, fraction,
                                targets, feature_clip=radius)
            base = self._problem(n, loss, n_outputs, bounded.data_norm, X=design, label_bound=label_bound,
                                 coef_norm=coef_norm, clip_norm=clip_norm, solver=solver)
            problem = DaskProblem(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.init},
                                  row_weight=default_weight(self, warn=True))
            ran = run_solver(self, solver, problem, plan, rng, derived=derived)
            ran.n_clipped = design.n_rows_clipped  # counted by the solver's passes
            ran.values["design"] = design
        else:
            X, norms = data.bounded_rows, data.norms
            if radius is not None:  # winsorise every feature: lazily, in the design's passes (no copy)
                norms = clipped_row_norms(X, radius)
            bounded = bound_features(X, data_norm, self.fit_intercept, self.intercept_scaling, fraction,
                                     norms=norms, lazy=True, feature_clip=radius)
            if active is not None:
                bounded = zero_inactive_rows(bounded, active)
            problem = self._problem(n, loss, n_outputs, bounded.data_norm,
                                    X=bounded.X.astype(np.float64, copy=False), y=y, norms=bounded.row_norms,
                                    label_bound=label_bound, coef_norm=coef_norm, clip_norm=clip_norm,
                                    solver=solver, sample_weight=sample_weight)
            ran = run_solver(self, solver, problem, plan, rng, n_clipped=bounded.n_clipped,
                             derived=bounded.data_derived or derived)
        ran.values.update(data_norm=bounded.data_norm, intercept_scaling=bounded.intercept_scaling,
                          feature_clip=radius)
        return ran

    def _set_bounds_fitted(self, bounds, ran):
        """The fitted bounds: ``data_norm_``, ``intercept_scaling_`` and, where the estimator has the
        parameters, ``feature_clip_`` and the feature map (``feature_center_``, ``feature_scale_``,
        ``feature_box_``: the clip in the user's units, a box per feature, centre -+ radius * scale)."""
        self.data_norm_ = ran.values["data_norm"]
        self.intercept_scaling_ = ran.values["intercept_scaling"]
        radius = ran.values["feature_clip"]
        params = self.get_params()
        if "feature_scaling" in params:
            self.feature_center_, self.feature_scale_ = bounds.values["feature_map"] or (None, None)
            self.feature_box_ = None
            if self.feature_scale_ is not None and radius is not None:
                self.feature_box_ = (self.feature_center_ - radius * self.feature_scale_,
                                     self.feature_center_ + radius * self.feature_scale_)
        if "feature_clip" in params:
            self.feature_clip_ = radius

    def _split_coef(self, coef):
        """Split augmented coefficients (p[, k]) into sklearn's coef_ and intercept_."""
        coef = np.asarray(coef)
        if coef.ndim == 1:
            coef = coef[:, None]
        if self.fit_intercept:
            intercept = coef[-1] * self.intercept_scaling_
            coef = coef[:-1]
        else:
            intercept = np.zeros(coef.shape[1])
        if getattr(self, "feature_scale_", None) is not None:  # back to the user's units (post-processing)
            coef = coef / self.feature_scale_[:, None]
            intercept = intercept - self.feature_center_ @ coef
        return coef.T.copy(), np.asarray(intercept, dtype=float)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = False
        return tags

