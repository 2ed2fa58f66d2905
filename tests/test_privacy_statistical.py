"""Black-box privacy tests: neighbouring datasets, many seeded fits, Clopper-Pearson.

For each solver we fit on two replace-one neighbours that differ in one row:
a boundary canary ``(0, 0, +K_x)`` against its mirror ``(0, 0, -K_x)``, both on a
direction the other rows never use, with the same label (the pair maximises
the change of that row's gradient, ``2G``). The score is the fitted
coefficient on the canary direction. A threshold is chosen on one half of the
fits and evaluated on the other; Clopper-Pearson upper bounds on the false
positive / negative rates give an empirical lower bound on epsilon that holds
with probability >= 95%. It must not exceed the claimed epsilon. The same test
on a deliberately under-noised solver (noise divided by 50) must flag it: that is the
evidence the test has power. The worlds, scores and the epsilon lower bound are
in ``_helpers.py`` (shared with the other solver files); the under-noise switch
is the ``under_noise`` fixture of ``conftest.py``.
"""

import pytest

from skdp import DPLogisticRegression, DPRidge

from ._helpers import CLAIM, DELTA, UNDER, canary_scores, canary_worlds, empirical_epsilon_lower_bound


def _make(kind, solver):
    if kind == "clf":
        return lambda s: DPLogisticRegression(
            epsilon=CLAIM, delta=DELTA, solver=solver, alpha=0.1, data_norm=1.0, classes=[0, 1],
            fit_intercept=False, random_state=s, max_iter=3 if solver != "output_pert" else 20,
        )
    return lambda s: DPRidge(
        epsilon=CLAIM, delta=DELTA, solver=solver, alpha=0.5, data_norm=1.0, label_bound=1.0,
        coef_norm=1.5, fit_intercept=False, random_state=s, max_iter=3 if solver != "output_pert" else 20,
    )


@pytest.mark.parametrize("kind", ["clf", "reg"])
@pytest.mark.parametrize("solver", ["dp_gd", "output_pert", "obj_pert", "dp_svrg"])
def test_empirical_epsilon_within_claim(solver, kind):
    s0, s1 = canary_scores(_make(kind, solver), canary_worlds(kind))
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb <= CLAIM, f"{solver}: empirical epsilon lower bound {eps_lb:.3f} > claim {CLAIM}"


@pytest.mark.parametrize("solver", ["dp_gd", "output_pert", "obj_pert", "dp_svrg"])
def test_audit_detects_under_noised_solver(solver, under_noise):
    """Positive control: the same solver with 1/50 of its calibrated noise."""
    with under_noise(1 / UNDER):
        s0, s1 = canary_scores(_make("clf", solver), canary_worlds("clf"))
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb > CLAIM, f"{solver}: the test did not detect an under-noised solver ({eps_lb:.3f})"
