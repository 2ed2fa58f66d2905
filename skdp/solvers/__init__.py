"""DP solvers. Each registers itself under its ``solver=`` id."""

from ._base import SOLVERS, Problem, Solver, SolverResult, get_solver, register
from . import gradient, perturbation, sparse  # noqa: F401  (registration)

__all__ = ["SOLVERS", "Problem", "Solver", "SolverResult", "get_solver", "register", "list_solvers"]


def list_solvers():
    """One dict per solver: id, card, supported losses, constraint (``"l2"`` or ``"l0"``), privacy notion, summary."""
    rows = []
    for name, s in sorted(SOLVERS.items()):
        rows.append(
            {
                "solver": name,
                "card": s.card,
                "losses": tuple(s.losses),
                "constraint": s.constraint or "l2",
                "pure_dp": s.pure_dp,
                "needs_alpha": s.needs_strong_convexity,
                "summary": s.summary,
            }
        )
    return rows
