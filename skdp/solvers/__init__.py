"""DP solvers. Each registers itself under its ``solver=`` id."""

from sklearn.base import is_classifier

from ._base import (SOLVERS, Problem, PublicProblem, Solver, SolverChoice, SolverPlan, SolverResult, get_solver,
                    public_view, register, repeated_gaussian_plan)
from . import (constrained, gradient, nonconvex, peeling, perturbation, sgd, sparse,  # noqa: F401  (registration)
               suffstats)
from .sparse import PublicSparseProblem, SparseProblem

__all__ = ["SOLVERS", "PublicProblem", "Problem", "PublicSparseProblem", "SparseProblem", "Solver",
           "SolverChoice", "SolverPlan", "SolverResult", "get_solver", "register", "list_solvers", "estimator_solvers",
           "public_view", "repeated_gaussian_plan"]


def _privacy_notion(s):
    notions = []
    if s.approx_dp:
        notions.append("(epsilon, delta)")
    if s.pure_dp:
        notions.append("pure epsilon (delta=0)")
    return " or ".join(notions) + ", replace-one"


def estimator_solvers(estimator):
    """The solver ids an estimator (class or instance) accepts for ``solver=``, from the registry.

    Read from its ``solver`` parameter constraint (a :class:`SolverChoice`);
    empty for an estimator without a ``solver`` parameter.
    """
    for constraint in getattr(estimator, "_parameter_constraints", {}).get("solver", []):
        if isinstance(constraint, SolverChoice):
            return constraint.solver_ids()
    return []


def list_solvers(estimator=None):
    """The solver table: one dict per solver.

    Parameters
    ----------
    estimator : estimator class or instance, optional
        Only the solvers it accepts for ``solver=``, with two more keys:
        ``default`` (what ``solver="auto"`` runs with ``delta > 0``; the
        ``delta = 0`` default is in the estimator's docstring) and
        ``multiclass`` (whether it fits more than two classes; ``None`` for a
        regressor).

    Returns
    -------
    list of dict
        Keys: ``solver`` (the ``solver=`` id), ``source`` (paper and algorithm),
        ``card`` (how skdp's implementation departs from the printed algorithm),
        ``reference`` (the documentation page on the paper that explains those
        deviations, a path under ``doc/papers/``), ``losses``,
        ``constraint`` (``"l2"``: L2 penalty / optional L2 ball; ``"l1"``, ``"lp"``,
        ``"l1|l2"``: a norm ball of radius ``coef_norm``; ``"l0"``: the sparse
        estimators), ``privacy`` (notion and neighbouring relation), ``needs_alpha``
        (strong convexity required), ``multi_output`` (fits several regression
        targets, a 2-D ``y``, as one release), ``options`` (``solver_options``
        keys), ``defaults`` (default hyperparameters, in words) and ``summary``.

    Examples
    --------
    >>> from skdp import DPLogisticRegression, list_solvers
    >>> row = {r["solver"]: r for r in list_solvers()}["noisy_sfw"]
    >>> row["constraint"], row["losses"]
    ('l1', ('logistic', 'squared'))
    >>> [(r["solver"], r["multiclass"]) for r in list_solvers(DPLogisticRegression) if r["default"]]
    [('dp_gd', True)]
    """
    names = estimator_solvers(estimator) if estimator is not None else sorted(SOLVERS)
    if estimator is not None:
        instance = estimator() if isinstance(estimator, type) else estimator
        classifier = is_classifier(instance)
    rows = []
    for name in names:
        s = SOLVERS[name]
        row = {
            "solver": name,
            "source": s.source,
            "card": s.card,
            "reference": s.reference,
            "losses": tuple(s.losses),
            "constraint": s.constraint or s.geometry or "l2",
            "privacy": _privacy_notion(s),
            "pure_dp": s.pure_dp,
            "needs_alpha": s.needs_strong_convexity,
            "multi_output": s.multi_output,
            "options": tuple(sorted(s.option_keys)),
            "defaults": s.defaults,
            "summary": s.summary,
        }
        if estimator is not None:
            row["default"] = name == estimator.default_solver
            row["multiclass"] = (instance.multinomial and "multinomial" in s.losses) if classifier else None
        rows.append(row)
    return rows
