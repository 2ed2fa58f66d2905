"""DP solvers. Each registers itself under its ``solver=`` id."""

from ._base import SOLVERS, Problem, Solver, SolverResult, get_solver, register
from . import constrained, gradient, nonconvex, perturbation, sgd, sparse  # noqa: F401  (registration)

__all__ = ["SOLVERS", "Problem", "Solver", "SolverResult", "get_solver", "register", "list_solvers"]


def _privacy_notion(s):
    notions = []
    if s.approx_dp:
        notions.append("(epsilon, delta)")
    if s.pure_dp:
        notions.append("pure epsilon (delta=0)")
    return " or ".join(notions) + ", replace-one"


def list_solvers():
    """The solver table: one dict per solver.

    Keys: ``solver`` (the ``solver=`` id), ``source`` (paper and algorithm),
    ``card`` (how skdp's implementation departs from the printed algorithm),
    ``reference`` (the documentation page on the paper that explains those
    deviations, a path under ``doc/papers/``), ``losses``,
    ``constraint`` (``"l2"``: L2 penalty / optional L2 ball; ``"l1"``, ``"lp"``,
    ``"l1|l2"``: a norm ball of radius ``coef_norm``; ``"l0"``: the sparse
    estimators), ``privacy`` (notion and neighbouring relation), ``needs_alpha``
    (strong convexity required), ``options`` (``solver_options`` keys),
    ``defaults`` (default hyperparameters, in words) and ``summary``.

    Examples
    --------
    >>> from skdp import list_solvers
    >>> row = {r["solver"]: r for r in list_solvers()}["noisy_sfw"]
    >>> row["constraint"], row["losses"]
    ('l1', ('logistic', 'squared'))
    """
    rows = []
    for name, s in sorted(SOLVERS.items()):
        rows.append(
            {
                "solver": name,
                "source": s.source,
                "card": s.card,
                "reference": s.reference,
                "losses": tuple(s.losses),
                "constraint": s.constraint or s.geometry or "l2",
                "privacy": _privacy_notion(s),
                "pure_dp": s.pure_dp,
                "needs_alpha": s.needs_strong_convexity,
                "options": tuple(sorted(s.option_keys)),
                "defaults": s.defaults,
                "summary": s.summary,
            }
        )
    return rows
