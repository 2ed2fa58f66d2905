"""Draw-level checks: the noise a fit actually draws is the noise its privacy events were priced for.

Every noise draw in skdp goes through :mod:`skdp.privacy.mechanisms`, and
:func:`~skdp.privacy.mechanisms.record_draws` records each one (distribution, scale
actually used, size). These tests fit every registered solver (each in the audit's
worst-case setting, so a new solver is covered without editing this file), the
multi-party protocols and the scalers, and compare the recorded draws with
``privacy_events_`` and ``noise_scale_``: a solver that drew half its noise while
reporting the full scale, or ran one step more than it priced, fails here.
"""

import math
from collections import Counter

import numpy as np
import pytest

from skdp import DPLogisticRegression, DPMinMaxScaler, DPRidge, DPStandardScaler
from skdp.audit import _solver_cases
from skdp.distributed import MultiPartyDPLogisticRegression
from skdp.privacy import (ApproxDPEvent, BoundedRangeEvent, GaussianEvent, L2LaplaceEvent, LaplaceEvent,
                          PoissonGaussianEvent, ZCDPEvent)
from skdp.privacy.mechanisms import record_draws, scaled_noise
from skdp.solvers import SOLVERS

GAUSSIAN_KINDS = {"gaussian", "generalized_gaussian", "discrete_gaussian"}
# solvers whose one Gaussian draw per step is priced by two events (split accounting of dp_svrg)
SPLIT = {"dp_svrg", "dp_svrg_pp"}


def _audit_case(solver):
    """The audit's worst-case setting for ``solver``: its estimator (seeded) and background plus one canary row."""
    est, (X, y) = _solver_cases(2.0, 1e-5)[solver]
    return est.set_params(random_state=0), np.vstack([X, np.eye(X.shape[1])[0]]), np.append(y, 1)


def _fit_recorded(est, X, y, **fit):
    with record_draws() as draws:
        est.fit(X, y, **fit)
    return est, draws


def _count(events, kinds):
    return sum(getattr(e, "count", 1) for e in events if isinstance(e, kinds))


def _check(est, draws, solver=None):
    """The recorded draws are the ones the events describe, at the scale reported."""
    events = est.privacy_events_
    kinds = Counter(d.kind for d in draws)
    gauss = [d for d in draws if d.kind in GAUSSIAN_KINDS]
    # how many releases of each kind
    if solver in SPLIT:
        assert len(gauss) == _count(events, GaussianEvent) == _count(events, PoissonGaussianEvent)
    elif solver == "rrpsgd":  # R ~ U{1..N} rounds run; all N are priced
        assert 1 <= len(gauss) <= _count(events, PoissonGaussianEvent)
    elif solver in ("obj_pert", "obj_pert_svrg", "two_stage"):
        assert len(gauss) + kinds["l2_laplace"] >= _count(events, ApproxDPEvent)
    elif solver == "noisy_sfw_lp":  # one zCDP event prices every release of the tree
        assert len(gauss) == est.solver_info_["releases"] and _count(events, ZCDPEvent) == 1
    elif solver == "phased_sgd":  # phases on disjoint rows: parallel composition, phase i at sigma_1 / 4^(i-1)
        (event,) = events
        assert len(gauss) == est.solver_info_["phases"]
        assert [d.scale for d in gauss] == pytest.approx([event.sigma / 4**i for i in range(len(gauss))], rel=1e-12)
    else:
        assert len(gauss) == _count(events, (GaussianEvent, PoissonGaussianEvent, ZCDPEvent)), (kinds, events)
        assert kinds["l2_laplace"] == _count(events, L2LaplaceEvent)
    # a selection is Gumbel report-noisy-max or, for the private bounds (exact by default), the exact exponential
    # mechanism
    assert kinds["gumbel"] + kinds["exponential"] == _count(events, BoundedRangeEvent), (kinds, events)
    assert kinds["laplace"] == _count(events, LaplaceEvent)
    # at which scale
    if events and all(isinstance(e, GaussianEvent) for e in events) and solver not in ("dpsl_kt", "phased_sgd"):
        drawn = Counter(round(d.scale, 12) for d in gauss)
        priced = Counter()
        for e in events:
            priced[round(e.sigma, 12)] += e.count
        assert drawn == priced, (drawn, priced)
    else:
        scales = [d.scale for d in draws if d.kind not in ("gumbel", "exponential")] or [d.scale for d in draws]
        reported = np.max(np.atleast_1d(est.noise_scale_))
        assert max(scales) == pytest.approx(reported, rel=1e-12), (scales, est.noise_scale_)
    assert all(d.scale > 0 for d in draws)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_every_solver_draws_what_it_prices(solver):
    est, X, y = _audit_case(solver)
    est, draws = _fit_recorded(est, X, y)
    _check(est, draws, solver)
    if solver == "dpsl_kt":  # the labels' noise is the unit event's sigma times the realised sensitivity
        (event,) = est.privacy_events_
        assert draws[-1].scale == pytest.approx(event.sigma * est.solver_info_["label_sensitivity"], rel=1e-12)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_an_under_noised_fit_is_seen_in_its_draws(solver):
    """Positive control of the check above: half the noise, reported unchanged, must not pass."""
    est, X, y = _audit_case(solver)
    with scaled_noise(0.5):
        est, draws = _fit_recorded(est, X, y)
    with pytest.raises(AssertionError):
        _check(est, draws, solver)


def _binary(n=300, d=4, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, d)) / 2
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("make", [
    lambda: DPLogisticRegression(classes=[0, 1], random_state=0),  # data_norm="auto": one selection first
    lambda: DPLogisticRegression(classes=[0, 1, 2], data_norm=1.0, solver="obj_pert", random_state=0),
    lambda: DPLogisticRegression(classes=[0, 1], data_norm=1.0, delta=0.0, random_state=0),  # L2-Laplace
    lambda: DPLogisticRegression(classes=[0, 1], data_norm=1.0, solver="output_pert", random_state=0,
                                 solver_options={"secure_noise": True}),  # discrete Gaussian
    lambda: DPRidge(label_bound="auto", random_state=0),  # three selections, then dp_gd
    lambda: MultiPartyDPLogisticRegression(classes=[0, 1], n_parties=3, random_state=0),
    lambda: MultiPartyDPLogisticRegression(classes=[0, 1], solver="mpc_output_pert", n_parties=3, random_state=0),
    lambda: DPStandardScaler(bounds=(-1, 1), random_state=0),
    lambda: DPStandardScaler(bounds=(-1, 1), clip_norm="auto", random_state=0),
    lambda: DPMinMaxScaler(bounds=(-1, 1), random_state=0),
], ids=["auto-norm", "ovr-obj-pert", "pure-output-pert", "secure-output-pert", "auto-labels", "mpc-grad",
        "mpc-output", "std-scaler", "std-scaler-clip", "minmax"])
def test_estimators_draw_what_they_price(make):
    X, y = _binary()
    if isinstance(make(), DPRidge):
        y = X @ np.ones(X.shape[1]) + 0.1
    est, draws = _fit_recorded(make(), X, y)
    solver = getattr(est, "solver_", None)
    _check(est, draws, solver if solver in ("obj_pert",) else None)
    assert math.isfinite(est.privacy_spent_.epsilon)


def test_dp_gd_clips_inside_the_solver(under_noise):
    """Noise off, one step, neighbours that differ in one row whose gradient is far above the clip norm:
    the step moves by at most eta * 2C/n (the sensitivity dp_gd is priced for)."""
    from skdp.losses import LogisticLoss
    from skdp.penalties import L2Penalty
    from skdp.privacy import PrivacyBudget
    from skdp.solvers import Problem, get_solver

    rng = np.random.RandomState(0)
    n, p, C = 50, 3, 0.01
    X = rng.uniform(-1, 1, (n, p)) / 2
    y = np.where(rng.rand(n) > 0.5, 1.0, -1.0)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [0.5, 0.5, 0.5], -y[0]
    solver = get_solver("dp_gd")

    def one_step(X, y):
        problem = Problem(X=X, y=y, norms=np.linalg.norm(X, axis=1), loss=LogisticLoss(), penalty=L2Penalty(0.0),
                          data_norm=1.0, max_iter=1, clip_norm=C)
        with under_noise(1e-12):
            return solver.solve(problem, PrivacyBudget(1.0, 1e-5), np.random.RandomState(0)), problem

    (a, _), (b, _) = one_step(X, y), one_step(X2, y2)
    eta = a.info["learning_rate"]
    assert np.linalg.norm(a.coef - b.coef) <= eta * 2 * C / n * (1 + 1e-9)
    assert np.linalg.norm(a.coef - b.coef) >= 0.5 * eta * 2 * C / n  # the clip binds: the test is not vacuous
