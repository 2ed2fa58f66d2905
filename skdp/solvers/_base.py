"""The solver protocol: a solver gets a bounded problem, a target budget and a
generator, and returns coefficients plus the list of events it released."""

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np
from sklearn.utils._param_validation import StrOptions

from ..losses import CAPABILITIES, LOSSES, clipped_mean_gradient, get_loss
from ..privacy import GaussianEvent, calibrate_gaussian

__all__ = ["Problem", "SolverPlan", "SolverResult", "Solver", "register", "get_solver", "SOLVERS", "SolverChoice",
           "public_view", "repeated_gaussian_plan", "unit_interval_option"]


@dataclass
class Problem:
    """A bounded GLM problem ``min (1/n) sum phi(<w, x_i>, y_i) + (alpha/2)||w||^2``.

    ``X`` rows satisfy ``||x_i|| <= data_norm`` (intercept column included);
    regression labels satisfy ``|y_i| <= label_bound``; ``coef_norm`` is the
    radius ``M`` of the ball the coefficients are constrained to (``None`` when
    unconstrained). Only ``n`` and the bounds enter any sensitivity.
    """

    X: object
    y: np.ndarray
    norms: np.ndarray
    loss: object
    penalty: object
    data_norm: float
    n_outputs: int = 1
    label_bound: float = None
    coef_norm: float = None
    max_iter: int = None
    verbose: int = 0
    options: dict = field(default_factory=dict)

    #: number of rows when ``X`` is ``None`` (a data-free problem used for planning)
    n_samples: int = None
    #: number of columns (intercept included) when ``X`` is ``None``
    n_features: int = None
    #: constraint set of the constrained solvers (a :class:`~skdp.penalties.NormBall`), else ``None``
    constraint: object = None
    #: public bound on ``max_j |x_ij|`` when tighter than ``data_norm`` (coordinate clipping)
    inf_norm_bound: float = None
    #: row of ``coef`` that holds the intercept (its constant column), else ``None``
    intercept_index: int = None

    @property
    def n(self):
        return self.X.shape[0] if self.X is not None else int(self.n_samples)

    @property
    def p(self):
        """Number of columns (intercept column included)."""
        if self.X is not None:
            return self.X.shape[1]
        if self.n_features is None:
            raise ValueError("This solver's noise depends on the number of features; pass n_features.")
        return int(self.n_features)

    @property
    def coef_shape(self):
        p = self.p
        return (p,) if self.n_outputs == 1 else (p, self.n_outputs)

    def dual_feature_bound(self, q):
        """Public bound on ``||x_i||_q`` (``q >= 2``) implied by the clipping.

        ``||x||_q <= ||x||_2 <= data_norm`` for ``q >= 2``; with a coordinate
        bound ``R`` also ``||x||_q <= R p^(1/q)`` (``R`` for ``q = inf``).
        """
        bound = float(self.data_norm)
        if self.inf_norm_bound is not None:
            r = float(self.inf_norm_bound)
            bound = min(bound, r if math.isinf(q) else r * self.p ** (1.0 / q))
        return bound

    #: per-example gradient clip norm requested by the estimator (``None``: the loss's own bound)
    clip_norm: float = None

    @property
    def lipschitz_bound(self):
        """Per-example gradient bound of the (unclipped) loss over the domain."""
        return self.loss.lipschitz(self.data_norm, self.label_bound, self.coef_norm)

    @property
    def gradient_bound(self):
        """Per-example gradient bound ``G`` that the gradient solvers' sensitivities use.

        Replace-one changes one per-example term by at most ``2G``. It is the
        loss's own bound, or the clip norm when per-example clipping to a
        smaller norm is requested.
        """
        G = self.lipschitz_bound
        return G if self.clip_norm is None else min(G, self.clip_norm)

    @property
    def clip(self):
        """Clip norm for per-example gradients; ``None`` when the loss is provably G-Lipschitz."""
        if self.loss.globally_lipschitz and self.clip_norm is None:
            return None
        return self.gradient_bound

    @property
    def smoothness(self):
        return self.loss.smoothness(self.data_norm)

    def mean_gradient(self, coef, rows=None, n_total=None):
        return clipped_mean_gradient(
            self.loss, self.X, self.y, coef, self.norms, self.clip, n_total=n_total, rows=rows
        )

    def gram(self):
        """``(X^T X, X^T y)`` of the bounded data as dense float arrays: the squared loss's sufficient statistics."""
        X = self.X
        XtX = X.T @ X
        XtX = XtX.toarray() if hasattr(XtX, "toarray") else np.asarray(XtX, dtype=float)
        return XtX, np.asarray(X.T @ np.asarray(self.y, dtype=float), dtype=float).ravel()

    def objective(self, coef):
        Z = self.X @ coef
        return float(np.mean(self.loss.value(Z, self.y))) + self.penalty.value(coef)


def public_view(problem):
    """``problem`` without its data: only ``n``, ``p``, the bounds and the settings remain.

    Plans are made from this view, so a plan *cannot* read a row: the same
    function of the same public quantities gives the ledger's charge (before
    the data is touched) and the fit's schedule and noise.
    """
    hidden = {f.name: None for f in fields(problem) if f.name in ("X", "y", "norms")}
    if problem.X is None:
        return problem
    return replace(problem, **hidden, n_samples=problem.n, n_features=problem.p)


@dataclass(frozen=True)
class SolverPlan:
    """A fit before the data is touched: what it will release and the public schedule it runs.

    ``events`` are the privacy events, ``noise_scale`` the headline noise
    scale (``noise_scale_``), ``settings`` whatever else :meth:`Solver.run`
    needs (steps, noise std, step sizes, batch sizes, ...); all are functions
    of public quantities only (see :func:`public_view`).
    """

    events: tuple
    noise_scale: float
    settings: dict = field(default_factory=dict)


def repeated_gaussian_plan(sensitivity, T, budget, **settings):
    """Plan of ``T`` adaptive Gaussian releases of L2 sensitivity ``sensitivity`` at ``budget``.

    ``sigma`` is the exact Gaussian-DP calibration of the ``T`` releases
    (:func:`skdp.privacy.calibrate_gaussian`); ``settings`` get ``T`` and ``sigma``.
    """
    sigma = calibrate_gaussian(T * sensitivity**2, budget.epsilon, budget.delta)
    return SolverPlan((GaussianEvent(sensitivity, sigma, T),), sigma, dict(settings, T=T, sigma=sigma))


def unit_interval_option(options, key, default):
    """``options[key]`` (``default`` when absent) as a float in the open interval (0, 1); ``ValueError`` otherwise."""
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"solver_options[{key!r}] must be in (0, 1), got {value!r}.")
    return float(value)


@dataclass
class SolverResult:
    """What a solver returns: coefficients, iterations, released events, noise scale.

    ``events`` and ``noise_scale`` are the plan's (set by :meth:`Solver.solve`).
    ``info`` holds public facts about the run (schedule, step size, noise
    multiplier): it becomes the fitted attribute ``solver_info_``.
    ``diagnostics`` holds exact statistics of the data (e.g. a KKT residual):
    they are kept by :mod:`skdp.diagnostics` for the data holder and never set
    as attributes of the model.
    """

    coef: np.ndarray
    n_iter: int
    info: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)
    events: list = None
    noise_scale: float = None


class Solver:
    """Base class. Subclasses set the class attributes and implement ``solve``.

    Attributes
    ----------
    name : str
        The ``solver=`` id.
    card : str
        How the implementation departs from the printed algorithm of
        ``source`` (in words; the paper page ``reference`` explains why).
    reference : str
        The skdp documentation page on the source paper and skdp's
        deviations from it, e.g. ``"doc/papers/seed004.rst"``.
    requires : frozenset of str
        The loss capabilities its proof needs (keys of
        :data:`skdp.losses.CAPABILITIES`: ``"smooth"``, ``"scalar"``,
        ``"globally_lipschitz"``, ``"moreau_envelope"``, ``"quadratic"``).
    losses : tuple of str
        The registered losses that have them (derived, never listed by hand:
        a new loss with the right capabilities is supported without editing
        any solver).
    pure_dp : bool
        Whether it has a ``delta = 0`` variant.
    approx_dp : bool
        Whether it has a ``delta > 0`` variant.
    needs_strong_convexity : bool
        Whether its proof needs ``alpha > 0``.
    """

    name = None
    card = None
    reference = None
    requires = frozenset({"smooth"})
    pure_dp = False
    approx_dp = True
    needs_strong_convexity = False
    #: takes a non-L2 (e.g. the nonconvex) penalty through its gradient
    explicit_penalty = False
    summary = ""
    #: constraint family: None (L2 penalty / ball, the dense estimators) or "l0" (sparse estimators)
    constraint = None
    #: geometry of a constrained solver's ball: None (unconstrained / the L2 penalty's ball),
    #: "l1", "lp" (1 < p <= 2), "l2", or "l1|l2" (either, chosen by ``solver_options["geometry"]``)
    geometry = None
    #: solver_options it accepts: {key: description}
    option_keys = {}
    #: source paper and algorithm number, for the solver table
    source = ""
    #: default hyperparameters, in words, for the solver table
    defaults = ""

    def check_options(self, options):
        """Raise ``ValueError`` for ``solver_options`` keys this solver does not take."""
        unknown = sorted(set(options or {}) - set(self.option_keys))
        if unknown:
            raise ValueError(
                f"solver_options {unknown} are not used by solver={self.name!r}; it accepts "
                f"{sorted(self.option_keys) or 'none'}."
            )

    def make_constraint(self, options, radius):
        """The constraint set for this solver (``None`` for unconstrained solvers)."""
        return None

    @property
    def losses(self):
        """Names of the registered losses that have every capability in ``requires``."""
        return tuple(name for name, loss in LOSSES.items() if self.requires <= loss.capabilities())

    def check(self, loss_name, delta, alpha=0.0):
        """Raise ``ValueError`` naming what is missing if this solver cannot run the given setting."""
        missing = sorted(self.requires - get_loss(loss_name).capabilities())
        if missing:
            ok = sorted(n for n, s in SOLVERS.items() if loss_name in s.losses and s.constraint == self.constraint)
            needs = "; ".join(CAPABILITIES[c] for c in missing)
            if missing == ["scalar"]:
                raise ValueError(
                    f"Only binary classification is supported by solver={self.name!r}: its proof needs {needs}; "
                    f"solvers that support more classes: {ok}."
                )
            raise ValueError(
                f"solver={self.name!r} does not support the {loss_name} loss: its proof needs {needs}; "
                f"solvers that do: {ok}."
            )
        if delta == 0 and not self.pure_dp:
            ok = sorted(
                n for n, s in SOLVERS.items() if loss_name in s.losses and s.pure_dp and s.constraint == self.constraint
            )
            raise ValueError(
                f"solver={self.name!r} has no pure-epsilon (delta=0) variant; use delta > 0 "
                f"or one of {ok}."
            )
        if delta > 0 and not self.approx_dp:  # pragma: no cover - every solver has one today
            raise ValueError(f"solver={self.name!r} needs delta=0.")
        if self.needs_strong_convexity and not alpha > 0:
            raise ValueError(
                f"solver={self.name!r} needs a strongly convex objective: set alpha > 0."
            )

    def make_plan(self, problem, budget):  # pragma: no cover - abstract
        """The :class:`SolverPlan` for ``problem`` at ``budget``.

        ``problem`` is data-free (:func:`public_view`): every sensitivity,
        noise scale and schedule depends only on ``n``, ``p``, the bounds and
        the settings, never on the data.
        """
        raise NotImplementedError

    def run(self, problem, plan, rng):  # pragma: no cover - abstract
        """Execute ``plan`` on the bounded data: a :class:`SolverResult` (its events are the plan's)."""
        raise NotImplementedError

    def plan(self, problem, budget):
        """The events :meth:`solve` will release, computed before (and without) the data."""
        return list(self.make_plan(public_view(problem), budget).events)

    def solve(self, problem, budget, rng):
        """Plan from the public view of ``problem``, run the plan, and report the plan's events.

        Released equals planned by construction: the events are never
        recomputed after the data is read, and :meth:`run` takes its noise
        scales from the plan.
        """
        plan = self.make_plan(public_view(problem), budget)
        result = self.run(problem, plan, rng)
        result.events = list(plan.events)
        if result.noise_scale is None:  # a run may report the scale in the released units (a grid release)
            result.noise_scale = float(plan.noise_scale)
        return result


SOLVERS = {}


def register(cls):
    """Class decorator: register a solver under its ``name``."""
    SOLVERS[cls.name] = cls()
    return cls


def get_solver(name):
    try:
        return SOLVERS[name]
    except KeyError:
        raise ValueError(f"Unknown solver {name!r}; available: {sorted(SOLVERS)}.") from None


class SolverChoice(StrOptions):
    """The ``solver=`` constraint of an estimator: ``"auto"`` and the registered solvers it can run.

    ``select(solver) -> bool`` picks them from the registry **when a value is
    validated**, not when the estimator class is defined, so a solver
    registered later (one new module and ``@register``) is accepted by every
    estimator whose selection it meets, and listed by
    :func:`skdp.list_solvers` for it, without editing the estimator.
    """

    def __init__(self, select):
        self.select = select
        super().__init__(set())

    @property
    def options(self):
        return {"auto"} | {name for name, s in SOLVERS.items() if self.select(s)}

    @options.setter
    def options(self, value):  # StrOptions.__init__ assigns it; the registry is the source
        pass

    def solver_ids(self):
        """The registered solver ids it accepts, sorted (``"auto"`` excluded)."""
        return sorted(self.options - {"auto"})
