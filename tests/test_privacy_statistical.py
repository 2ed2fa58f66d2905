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
evidence the test has power.
"""

import numpy as np
import pytest

from skdp import DPLogisticRegression, DPRidge
from skdp.audit import epsilon_lower_bound
from skdp.solvers import gradient, perturbation

N_FITS = 300  # per world; half choose the threshold, half estimate the rates
CLAIM = 1.0
DELTA = 1e-5
UNDER = 50  # positive control: noise divided by this


def empirical_epsilon_lower_bound(s0, s1, delta=DELTA, level=0.025):
    """Lower bound on epsilon from scores in world 0 (s0) and world 1 (s1): skdp.audit's test.

    Threshold and orientation chosen on the first halves, Clopper-Pearson
    bounds (each at ``level``) on the second halves.
    """
    return epsilon_lower_bound(s0, s1, delta, confidence=1 - 2 * level)["epsilon"]


def _worlds(kind):
    rng = np.random.RandomState(0)
    n = 40
    Xb = np.zeros((n, 3))
    Xb[:, :2] = rng.uniform(-0.5, 0.5, size=(n, 2))
    if kind == "clf":
        yb = (Xb[:, 0] > 0).astype(int)
        label = 1
    else:
        yb = Xb[:, 0] - Xb[:, 1]
        label = 1.0
    worlds = []
    for sign in (-1.0, 1.0):
        X = np.vstack([Xb, [[0.0, 0.0, sign]]])
        y = np.append(yb, label)
        worlds.append((X, y))
    return worlds


def _scores(make, worlds):
    out = []
    for X, y in worlds:
        out.append(np.array([make(seed).fit(X, y).coef_.ravel()[2] for seed in range(N_FITS)]))
    return out


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


def _under_noise(monkeypatch, solver):
    """Positive control: the same solver with 1/50 of its calibrated noise."""
    if solver == "dp_gd":
        orig = gradient.calibrate_gaussian
        monkeypatch.setattr(gradient, "calibrate_gaussian", lambda *a: orig(*a) / UNDER)
    elif solver == "dp_svrg":
        orig = gradient.DPSVRG.noise_std
        monkeypatch.setattr(gradient.DPSVRG, "noise_std",
                            lambda self, *a: (orig(self, *a)[0] / UNDER, orig(self, *a)[1]))
    elif solver == "output_pert":
        orig = perturbation.calibrate_gaussian
        monkeypatch.setattr(perturbation, "calibrate_gaussian", lambda *a: orig(*a) / UNDER)
    elif solver == "obj_pert":
        orig = perturbation.objective_perturbation_gaussian
        monkeypatch.setattr(perturbation, "objective_perturbation_gaussian",
                            lambda *a: (orig(*a)[0] / UNDER, orig(*a)[1]))


@pytest.mark.parametrize("kind", ["clf", "reg"])
@pytest.mark.parametrize("solver", ["dp_gd", "output_pert", "obj_pert", "dp_svrg"])
def test_empirical_epsilon_within_claim(solver, kind):
    s0, s1 = _scores(_make(kind, solver), _worlds(kind))
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb <= CLAIM, f"{solver}: empirical epsilon lower bound {eps_lb:.3f} > claim {CLAIM}"


@pytest.mark.parametrize("solver", ["dp_gd", "output_pert", "obj_pert", "dp_svrg"])
def test_audit_detects_under_noised_solver(solver, monkeypatch):
    _under_noise(monkeypatch, solver)
    s0, s1 = _scores(_make("clf", solver), _worlds("clf"))
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb > CLAIM, f"{solver}: the test did not detect an under-noised solver ({eps_lb:.3f})"
