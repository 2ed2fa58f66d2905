"""Clipping inside every solver: with the noise off, one huge row moves each release by at most its sensitivity.

A solver's privacy rests on the claim that the value it adds noise to (a
clipped mean gradient, a vector of selection scores, a vote count, ...) moves
by at most the sensitivity its events are priced for when one row is replaced.
These tests check that claim on the values the solver actually computes, for
every registered solver (read from the registry, so a new solver is checked
without editing this file):

* every noise sampler is replaced by a **zero** noise that records the value it
  is added to (the mechanism's input) and, for a selection, the scores;
* the fit runs on a background plus one boundary row (world A), then on the
  same data with that row replaced by a huge row (or a huge label) (world B);
* in world B each release returns **world A's released value** (a coupling of
  the two worlds' noise), so both runs go through the same states and every
  release of B is one step away from the matching release of A: the change of
  its input is a one-row change under identical previous outputs, exactly what
  the release's sensitivity bounds;
* the per-example clip norm is set to a tenth of its usual value, so clipping
  binds on the boundary row: without the solver's clipping the change is ten
  times the claim.

Each change must be within the claimed sensitivity (read from the fit's
``privacy_events_``: ``sensitivity`` of a Gaussian event, ``2 z^-1`` times the
draw's scale of a subsampled one, ``epsilon beta / 2`` in L-infinity for a
Gumbel selection, ...), and the largest must be a substantial fraction of it
(the pair attains the bound, so a test that measures nothing cannot pass).
"""

import math
import sys
from contextlib import contextmanager

import numpy as np
import pytest

from sklearn.base import is_classifier

from skdp import DPLogisticRegression
from skdp.audit import _solver_cases
from skdp.linear_model import _base as linear_base
from skdp.privacy import (ApproxDPEvent, BoundedRangeEvent, GaussianEvent, L2LaplaceEvent, LaplaceEvent,
                          PoissonGaussianEvent, ZCDPEvent)
from skdp.privacy import mechanisms
from skdp.solvers import SOLVERS, Problem, Solver, get_solver, public_view

#: the per-example clip norm is this fraction of the largest gradient norm at w = 0, so it binds on the canary
CLIP_FACTOR = 0.1
#: the largest change over the releases must be at least this fraction of its claim (the canary attains it)
ATTAINED = 0.3
#: objective perturbation: the noise enters the objective, not an additive release, and its guarantee is a
#: theorem on the minimiser (an ApproxDPEvent) for the exact, unclipped loss: no release has a sensitivity
#: to check (``test_exempt_solvers_release_no_additive_noise`` checks that this stays true)
EXEMPT = {"obj_pert", "obj_pert_svrg"}
NORM = {"gaussian": 2, "generalized_gaussian": 2, "l2_laplace": 2, "laplace": 1, "gumbel": np.inf}


# ------------------------------------------------------------------------------------------
# zero noise that records (world A) or replays (world B) each release
# ------------------------------------------------------------------------------------------
class _Release:
    def __init__(self, kind, scale):
        self.kind, self.scale, self.input, self.output = kind, float(scale), None, None


class _Zero(np.ndarray):
    """A zero noise array: the first array it is added to is the release's input.

    In replay mode the sum is world A's released value instead (the noise that
    couples the worlds); otherwise it is the input itself (zero noise).
    """

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [x.view(np.ndarray) if isinstance(x, _Zero) else x for x in inputs]
        out = ufunc(*plain, **kwargs)
        release = getattr(self, "_release", None)
        if ufunc is np.add and method == "__call__" and release is not None:
            other = [x for x in inputs if not isinstance(x, _Zero)]
            if other:
                self._release = None
                release.input = np.array(other[0], dtype=float)
                if self._replay is not None:
                    out = np.array(self._replay, dtype=float).reshape(np.shape(out))
                release.output = np.array(out, dtype=float)
        return out


class _Recorder:
    """Replaces every sampler of skdp: zero noise, each release recorded; ``replay`` gives world A's outputs."""

    def __init__(self, replay=None):
        self.releases, self.replay = [], replay

    def _replayed(self, kind, scale):
        i = len(self.releases)
        release = _Release(kind, scale)
        self.releases.append(release)
        if self.replay is None:
            return release, None
        assert i < len(self.replay), "world B released more often than world A under the same outputs"
        previous = self.replay[i]
        assert (previous.kind, previous.scale) == (kind, pytest.approx(float(scale), rel=1e-12)), (previous, kind)
        return release, previous.output

    def additive(self, kind):
        def sampler(rng, scale, size, *args, **kwargs):
            if kind == "gaussian" and (args or kwargs) and float((args or [kwargs.get("r", 2.0)])[0]) != 2.0:
                kind_ = "generalized_gaussian"
            else:
                kind_ = kind
            release, output = self._replayed(kind_, scale)
            shape = (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)
            z = np.zeros(shape).view(_Zero)
            z._release, z._replay = release, output
            return z
        return sampler

    def noisy_max(self, rng, scores, scale):
        release, output = self._replayed("gumbel", scale)
        release.input = np.array(scores, dtype=float)
        release.output = int(np.argmax(release.input)) if output is None else output
        return release.output


SAMPLERS = {"gaussian_noise": "gaussian", "generalized_gaussian_noise": "gaussian", "laplace_noise": "laplace",
            "l2_laplace_noise": "l2_laplace"}


@contextmanager
def _zero_noise(replay=None):
    """Every skdp module's reference to a sampler of :mod:`skdp.privacy.mechanisms` replaced for the block."""
    recorder = _Recorder(replay)
    new = {name: recorder.additive(kind) for name, kind in SAMPLERS.items()}
    new["report_noisy_max"] = recorder.noisy_max
    gaussian = new["gaussian_noise"]

    class Steps:  # the chunked Gaussian samplers: one replaced draw per step, as gaussian_noise
        def __init__(self, rng, steps, size):
            self.rng, self.size = rng, size

        def draw(self, sigma):
            return gaussian(self.rng, sigma, self.size)

    new["GaussianNoiseSteps"] = Steps
    new["gaussian_noise_steps"] = lambda rng, sigma, steps, size: (gaussian(rng, sigma, size) for _ in range(steps))
    originals = {name: getattr(mechanisms, name) for name in new}
    patched = []
    for mod in [m for name, m in sys.modules.items() if name == "skdp" or name.startswith("skdp.")]:
        for name, fn in originals.items():
            if getattr(mod, name, None) is fn:
                setattr(mod, name, new[name])
                patched.append((mod, name, fn))
    try:
        yield recorder.releases
    finally:
        for mod, name, fn in patched:
            setattr(mod, name, fn)


@pytest.fixture
def binding_clip(monkeypatch):
    """The dense estimators' per-example clip norm at ``CLIP_FACTOR`` of the largest gradient norm at w = 0.

    The estimators clip at that largest norm (``clip_norm="initial"``), which no
    gradient at the start exceeds; a tenth of it binds on a boundary row, so a
    solver that skipped clipping would move ten times its claim. The events are
    planned from the same problem, so they are priced for the smaller clip norm.
    """
    real = linear_base.DPLinearModel._problem

    def problem(self, n, loss, n_outputs, data_norm, *, clip_norm=None, label_bound=None, **kwargs):
        if clip_norm == "initial":
            clip_norm = CLIP_FACTOR * data_norm * loss.initial_derivative_bound(label_bound)
        return real(self, n, loss, n_outputs, data_norm, clip_norm=clip_norm, label_bound=label_bound, **kwargs)

    monkeypatch.setattr(linear_base.DPLinearModel, "_problem", problem)


# ------------------------------------------------------------------------------------------
# the claim of each release, from the fit's events
# ------------------------------------------------------------------------------------------
def _one(values, what):
    values = {round(v, 12) for v in values}
    assert len(values) == 1, f"cannot tell which {what} a release was priced by: {values}"
    return values.pop()


def _claims(release, events):
    """The sensitivities the events claim for ``release`` (its input moves by at most their sum), or None."""
    s = release.scale
    gauss = [e for e in events if isinstance(e, GaussianEvent)]
    poisson = [e for e in events if isinstance(e, PoissonGaussianEvent)]
    if release.kind in ("gaussian", "generalized_gaussian"):
        exact = [e for e in gauss if math.isclose(e.sigma, s, rel_tol=1e-9)]
        if exact:
            return [_one([e.sensitivity for e in exact], "Gaussian event")]
        if gauss and poisson:  # split accounting: one draw seen as a Gaussian plus a subsampled Gaussian release
            g = min(gauss, key=lambda e: e.sigma)
            z = _one([e.noise_multiplier for e in poisson], "subsampled event")
            return [g.sensitivity, 2 * math.sqrt(s**2 - g.sigma**2) / z]
        if poisson:  # noise multiplier z = std / C, C the per-row bound: a replace-one sum moves by 2C
            return [2 * s / _one([e.noise_multiplier for e in poisson], "subsampled event")]
        if gauss:  # one event, draws at scales proportional to it (a realised sensitivity, phases): same mu
            return [s * _one([e.sensitivity / e.sigma for e in gauss], "Gaussian event")]
        zcdp = [e for e in events if isinstance(e, ZCDPEvent)]
        if zcdp:  # a release of std s that is rho-zCDP moves by at most s sqrt(2 rho)
            return [s * math.sqrt(2 * sum(e.rho * e.count for e in zcdp))]
        return None
    if release.kind == "gumbel":  # epsilon-bounded range: the scores move by at most epsilon beta / 2 (L-inf)
        return [_one([e.epsilon for e in events if isinstance(e, BoundedRangeEvent)], "selection") * s / 2]
    kind = {"laplace": LaplaceEvent, "l2_laplace": L2LaplaceEvent}[release.kind]
    matched = [e.sensitivity for e in events if isinstance(e, kind) and math.isclose(e.scale, s, rel_tol=1e-9)]
    return [_one(matched, release.kind)] if matched else None


# ------------------------------------------------------------------------------------------
# the worlds
# ------------------------------------------------------------------------------------------
def _case(solver):
    """The audit's worst-case setting for ``solver`` (its estimator and all-zero background), clip binding.

    Full batches where the solver takes a batch size and the audit case does
    not set one: with a split accounting (``dp_svrg``) the claim is a sum of a
    full-gradient and a subsampled-difference sensitivity, and the second only
    shrinks next to the first when the batch is the whole data.
    """
    est, (X, y) = _solver_cases(2.0, 1e-5)[solver]
    est = est.set_params(solver=solver)  # a case may leave it at "auto" (DPLinearSVC's picks noisy_sgd)
    if "clip_norm" in est.get_params():
        est.set_params(clip_norm=CLIP_FACTOR)  # the sparse cases' rows have gradient norm 1 at w = 0
    if "batch_size" in SOLVERS[solver].option_keys:
        est.set_params(solver_options={"batch_size": len(X) + 1, **(est.get_params()["solver_options"] or {})})
    return est.set_params(random_state=0), X, y


PAIRS = {
    "mirrored-huge-row": lambda e0, e1: (-1e6 * e0, 1.0),  # clipped to the mirror image of the canary
    "orthogonal-huge-row": lambda e0, e1: (1e6 * e1, 1.0),  # moves x x^T too (sufficient statistics)
    "huge-label": lambda e0, e1: (e0, -1e6),  # regression only: the label is clipped to -label_bound
}


def _worlds(est, X, y, pair):
    d = X.shape[1]
    e0, e1 = np.eye(d)[0], np.eye(d)[1]
    row, label = PAIRS[pair](e0, e1)
    return (np.vstack([X, e0]), np.append(y, 1.0)), (np.vstack([X, row]), np.append(y, label))


def _changes(solver, pair):
    """(per release: change of its input, claims), the release kinds, and the events of world A's fit."""
    est, X, y = _case(solver)
    (XA, yA), (XB, yB) = _worlds(est, X, y, pair)
    with _zero_noise() as A:
        events = list(est.fit(XA, yA).privacy_events_)
    assert est.solver_ == solver
    with _zero_noise(replay=A) as B:
        est.fit(XB, yB)
    assert len(B) == len(A), "world B made fewer releases than world A under the same outputs"
    out = []
    for a, b in zip(A, B):
        if a.input is None or b.input is None:
            continue
        claims = _claims(a, events)
        if claims is None:
            continue
        with np.errstate(invalid="ignore"):  # entries removed from a selection (-inf) in both worlds: no change
            delta = np.where(a.input == b.input, 0.0, a.input - b.input)
        change = float(np.linalg.norm(delta.ravel(), ord=NORM[a.kind]))
        out.append((a.kind, change, claims))
    return out, events


def _pairs(solver):
    regression = "squared" in SOLVERS[solver].losses and not is_classifier(_case(solver)[0])
    return [p for p in PAIRS if p != "huge-label" or regression]



@pytest.mark.usefixtures("binding_clip")
@pytest.mark.parametrize("solver", sorted(set(SOLVERS) - EXEMPT))
def test_one_row_moves_each_release_within_its_sensitivity(solver):
    ratios = []
    for pair in _pairs(solver):
        changes, events = _changes(solver, pair)
        assert changes, f"{solver}: no release with a sensitivity in its events was seen ({events})"
        for kind, change, claims in changes:
            assert change <= sum(claims) * (1 + 1e-9), (
                f"{solver} ({pair}): a {kind} release's input moved by {change:.6g} > its claimed "
                f"sensitivity {sum(claims):.6g} (events {events})")
            ratios.append(change / min(claims))
    # the pairs attain the bound (up to the per-solver looseness noted in the module docstring): a check that
    # saw no change, or a clip that never bound, cannot pass
    assert max(ratios) >= ATTAINED, f"{solver}: largest change only {max(ratios):.3f} x its claim"


@pytest.fixture
def solved_problems(monkeypatch):
    """(problem, budget) of every solve in the block (``Solver.solve`` is the one entry point)."""
    seen = []
    real = Solver.solve

    def solve(self, problem, budget, rng, plan=None):
        seen.append((problem, budget))
        return real(self, problem, budget, rng, plan=plan)

    monkeypatch.setattr(Solver, "solve", solve)
    return seen


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_a_huge_row_reaches_every_solver_clipped(solver, solved_problems):
    """The estimators' row and label clipping: what a solver sees is within the bounds its events assume."""
    est, X, y = _case(solver)
    for pair in _pairs(solver):
        for Xw, yw in _worlds(est, X, y, pair):
            solved_problems.clear()
            est.fit(Xw, yw)
            assert solved_problems, f"{solver}: no problem reached Solver.solve"
            for problem, _ in solved_problems:
                Xp = np.asarray(problem.X.toarray() if hasattr(problem.X, "toarray") else problem.X)
                if isinstance(problem, Problem):
                    norms = np.linalg.norm(Xp, axis=1)
                    assert norms.max() <= problem.data_norm * (1 + 1e-12), (solver, pair, norms.max())
                    if problem.norms is not None:  # the norms the gradient clipping uses are the rows' own
                        np.testing.assert_allclose(problem.norms, norms, rtol=1e-12, atol=1e-12)
                else:  # a sparse problem: every entry within the coordinate bound
                    assert np.abs(Xp).max() <= problem.feature_bound * (1 + 1e-12), (solver, pair)
                if problem.label_bound is not None and problem.loss.name == "squared":
                    assert np.abs(problem.y).max() <= problem.label_bound * (1 + 1e-12), (solver, pair)


@pytest.mark.parametrize("solver", sorted(EXEMPT))
def test_exempt_solvers_release_no_additive_noise(solver):
    """The exemption above holds only while the solver's guarantee is a theorem on its minimiser."""
    est, X, y = _case(solver)
    events = est.fit(np.vstack([X, np.eye(X.shape[1])[0]]), np.append(y, 1.0)).privacy_events_
    assert events and all(isinstance(e, ApproxDPEvent) for e in events), events


def test_objective_perturbation_minimises_the_objective_it_planned(solved_problems):
    """Objective perturbation's proof needs the extra ridge term its plan calibrates (the Jacobian term):
    with the noise off, the released point is the minimiser of the loss plus (alpha + extra)/2 ||w||^2."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (60, 3)) / 2
    y = (X[:, 0] + 0.3 * rng.randn(60) > 0).astype(int)
    est = DPLogisticRegression(epsilon=1.0, solver="obj_pert", alpha=0.001, data_norm=1.0, classes=[0, 1],
                               fit_intercept=False, random_state=0)
    with _zero_noise():
        est.fit(X, y)
    ((problem, budget),) = solved_problems
    extra = get_solver("obj_pert").make_plan(public_view(problem), budget).settings["extra"]
    assert extra > 0
    w = est.coef_.ravel()
    grad = problem.X.T @ problem.loss.derivative(problem.X @ w, problem.y) / problem.n
    assert np.linalg.norm(grad + (problem.penalty.alpha + extra) * w) <= 1e-7
    assert np.linalg.norm(extra * w) > 1e-4  # without the extra term the minimiser would be another point
