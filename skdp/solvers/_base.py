"""The solver protocol: a solver gets a bounded problem (:mod:`skdp.solvers._problem`), a target budget and a
generator, and returns coefficients plus the list of events it released.

References
----------
.. [1] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
   privacy", NeurIPS 2020. <https://arxiv.org/abs/2004.00010>
"""

import math
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils._param_validation import StrOptions

from ..losses import CAPABILITIES, LOSSES, get_loss
from ..privacy import GaussianEvent, ZCDPEvent, calibrate_gaussian, gaussian_noise, zcdp_rho
from ..privacy.discrete import secure_gaussian_release, secure_gaussian_sensitivity
from ..privacy.discrete import secure_selection_plan, select  # noqa: F401 - the solvers' selections
from ._problem import (Problem, Progress, PublicProblem, RowPrefetch, batch_rows, public_view,  # noqa: F401
                       report_phase, report_rows)

__all__ = ["PublicProblem", "Problem", "SolverPlan", "SolverResult", "Solver", "register", "get_solver", "SOLVERS",
           "SolverChoice", "public_view", "repeated_gaussian_plan", "unit_interval_option", "Progress", "report_rows",
           "report_phase", "batch_rows", "RowPrefetch", "run_closing", "secure_noise_option", "selection_secure_option",
           "secure_repeated_plan", "secure_zcdp_rho", "noisy_release", "select", "secure_selection_plan"]

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


def secure_noise_option(options):
    """``solver_options["secure_noise"]`` (default False) as a bool; ``ValueError`` for anything else."""
    value = (options or {}).get("secure_noise", False)
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"solver_options['secure_noise'] must be True or False, got {value!r}.")
    return bool(value)


def selection_secure_option(options):
    """Whether the private bound selections draw the exact exponential mechanism: ``solver_options["secure_noise"]``.

    Unlike the solvers' releases (floating-point noise unless ``secure_noise``
    is True), the selections are exact **by default**: rounding the scores to
    a grid of at most 0.1% of their sensitivity adds at most that to the noise,
    and a fit makes only one to three selections, so the exact draws' fixed
    cost is small (:doc:`/user_guide/verifying`). ``secure_noise=False`` draws them
    by Gumbel report-noisy-max instead.
    """
    if (options or {}).get("secure_noise", None) is None:
        return True
    return secure_noise_option(options)


def secure_zcdp_rho(budget):
    """The zCDP level ``rho`` of ``budget`` for discrete Gaussian releases; ``ValueError`` when ``delta = 0``."""
    if budget.delta == 0:
        raise ValueError("solver_options['secure_noise'] needs delta > 0 (it uses the discrete Gaussian).")
    return zcdp_rho(budget.epsilon, budget.delta)


def secure_repeated_plan(sensitivity, T, budget, size, **settings):
    """Plan of ``T`` adaptive **floating-point-safe** releases of L2 sensitivity ``sensitivity`` (``size`` coordinates).

    The ``secure_noise`` counterpart of :func:`repeated_gaussian_plan`: each
    release is rounded to a public power-of-two grid and gets exact discrete
    Gaussian noise (:func:`skdp.privacy.discrete.secure_gaussian_release`), so
    it is ``rho / T``-zCDP with the rounding's cost ``gamma sqrt(size)`` in its
    sensitivity (Canonne, Kamath, Steinke 2020, Thm. 4); ``rho`` is the largest
    zCDP level the accountant converts to at most the budget
    (:func:`skdp.privacy.zcdp_rho`). Events ``ZCDPEvent(rho / T, T)``;
    ``settings`` get ``T``, ``sigma`` (in the value's units) and ``secure =
    (sensitivity, rho / T)`` for :func:`noisy_release`.
    """
    rho = secure_zcdp_rho(budget)
    sigma = secure_gaussian_sensitivity(sensitivity, size) / math.sqrt(2.0 * rho / T)
    return SolverPlan((ZCDPEvent(rho / T, T),), sigma,
                      dict(settings, T=T, sigma=sigma, secure=(float(sensitivity), rho / T)))


def noisy_release(rng, value, sigma, secure=None):
    """``value + N(0, sigma^2 I)``, or with ``secure = (sensitivity, rho)`` the floating-point-safe release.

    ``secure`` is what :func:`secure_repeated_plan` puts in a plan's settings:
    the value is then released by
    :func:`skdp.privacy.discrete.secure_gaussian_release` (grid rounding and
    exact discrete Gaussian noise, ``rho``-zCDP).
    """
    if secure:
        return secure_gaussian_release(rng, value, *secure)[0]
    value = np.asarray(value, dtype=float)
    return value + gaussian_noise(rng, sigma, value.shape)


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
        deviations from it, e.g. ``"doc/papers/wang2021.rst"``.
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
    release_ignores_penalty : bool
        Whether what it releases (noise scales, events, price) depends on
        neither the L2 penalty ``alpha`` nor the coefficient ball's radius,
        only on the data's bounds and the gradient clip: an estimator may
        then choose both after its private row bound (``DPRidge``'s
        ``alpha=None``) without changing the plan made before it.
    fits_default_alpha : bool
        Whether its noise and schedule stay the same whatever the L2 penalty,
        so that an estimator's ``alpha=None`` may minimise scikit-learn's
        default objective (``alpha = 1 / n``, ``C = 1``) with it.
    needs_public_label_bound : bool
        Whether its noise is calibrated to a label bound given before the data
        is read (a private label range cannot serve it).
    multi_output : bool
        Whether it fits ``k > 1`` regression targets jointly (``y`` of shape
        ``(n, k)``, ``(p, k)`` coefficients) with its proof intact: each
        per-example contribution is bounded in Frobenius norm through
        ``||y_i||_2 <= label_bound`` (see :class:`PublicProblem`), so the whole
        ``(p, k)`` release has one sensitivity.
    """

    name = None
    card = None
    reference = None
    requires = frozenset({"smooth"})
    pure_dp = False
    approx_dp = True
    needs_strong_convexity = False
    release_ignores_penalty = False
    fits_default_alpha = False
    needs_public_label_bound = False
    multi_output = False
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
    #: whether its number of gradient evaluations is fixed by its public schedule (``verbose`` may print
    #: epoch counts); ``False`` when it depends on the data (e.g. solving to a tolerance)
    public_schedule = True
    #: whether it iterates on the released model (``False``: one direct release, e.g. noisy sufficient
    #: statistics or a perturbed objective solved once; ``DPRidge.n_iter_`` is then ``None``, as sklearn's
    #: direct solvers report)
    iterative = True

    #: why ``solver_options={"secure_noise": True}`` is refused (solvers without the key)
    secure_noise_refusal = "its releases have no floating-point-safe variant that the accountant prices"

    def check_options(self, options):
        """Raise ``ValueError`` for ``solver_options`` keys this solver does not take.

        ``secure_noise=False`` is accepted by every solver (the default
        noise); ``secure_noise=True`` by a solver without the option raises
        with :attr:`secure_noise_refusal`, the reason it has no
        floating-point-safe variant.
        """
        options = dict(options or {})
        if "secure_noise" in options:
            if secure_noise_option(options) and "secure_noise" not in self.option_keys:
                raise ValueError(f"solver={self.name!r} has no floating-point-safe variant "
                                 f"(solver_options['secure_noise']): {self.secure_noise_refusal}.")
            if "secure_noise" not in self.option_keys:
                del options["secure_noise"]
        unknown = sorted(set(options) - set(self.option_keys))
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

        ``problem`` is data-free: a :class:`PublicProblem` (a
        :class:`~skdp.solvers.sparse.PublicSparseProblem` for the sparse
        solvers), the :func:`public_view` of the problem :meth:`run` gets, with
        no data attribute to read. Every sensitivity, noise scale and schedule
        depends only on ``n``, ``p``, the bounds and the settings, never on the data.
        """
        raise NotImplementedError

    def run(self, problem, plan, rng):  # pragma: no cover - abstract
        """Execute ``plan`` on the bounded data: a :class:`SolverResult` (its events are the plan's)."""
        raise NotImplementedError

    def plan(self, problem, budget):
        """The events :meth:`solve` will release, computed before (and without) the data."""
        return list(self.make_plan(public_view(problem), budget).events)

    def solve(self, problem, budget, rng, plan=None):
        """Plan from the public view of ``problem`` (or take ``plan``, made on it), run it, report its events.

        Released equals planned by construction: the events are never
        recomputed after the data is read, and :meth:`run` takes its noise
        scales from the plan.
        """
        if plan is None:
            plan = self.make_plan(public_view(problem), budget)
        problem.progress = Progress(self.name, getattr(problem, "verbose", 0), problem.n, self.public_schedule)
        result = run_closing(self, problem, plan, rng)
        problem.progress.done()
        result.events = list(plan.events)
        if result.noise_scale is None:  # a run may report the scale in the released units (a grid release)
            result.noise_scale = float(plan.noise_scale)
        return result


def run_closing(solver, problem, plan, rng):
    """``solver.run(problem, plan, rng)``, then stop any :class:`RowPrefetch` the run left open.

    A run that raises leaves its batch generator suspended (a traceback keeps
    it) and so its worker thread alive; this stops the worker whatever way the
    run ends.
    """
    try:
        return solver.run(problem, plan, rng)
    finally:
        prefetch = getattr(problem, "_prefetch", None)
        if prefetch is not None:
            prefetch.close()


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
