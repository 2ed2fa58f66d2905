"""Poisson-sampled solvers at a sampling rate below 1: each step is the release its event prices.

A Poisson-subsampled Gaussian step sums a per-row vector bounded by ``C`` over
the rows sampled with probability ``q`` and adds ``N(0, (z C)^2)``; dividing by
the **public** expected batch size ``b = q n`` is post-processing, dividing by
the realised one is not (a small batch then moves by ``2C / |B| > 2C / b``
while its noise stays ``z C / b``). With full batches the two coincide, so the
audit, draw and clipping cases of these solvers (``q = 1``) cannot tell them
apart; these tests run every solver whose events include a
``PoissonGaussianEvent`` (read from the registry, so a new one is covered) at
``q = 8/41``:

* the draws: as many as the events count, each at the scale the event's
  ``(q, z)`` gives for the public per-row bound;
* each release against its event, with the noiseless value each draw is added
  to recorded (``record_draws(audit=True)``) in world A (a zero background and
  a canary on its own direction) and in world B (the canary mirrored) replaying
  world A's releases, so that both worlds step from the same iterate on the
  same sampled rows: the query's shift over the draw's std is at most the
  event's per-step ``mu`` given the rows (``2 / z``) at every step, and, with
  the history pinned where the canary's clipped gradient is known, it is
  exactly the hand value ``2 C / b`` when the canary is sampled and 0 when not,
  whatever the realised batch size;
* the event-level audit (:func:`skdp.audit.audit_events`) at ``q < 1``, with its
  positive control;
* the per-example clip binding inside a Poisson batch.
"""

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from skdp.audit import _canary_label, _canary_worlds, _fit_recorded, _replay_of, _solver_cases, audit_events
from skdp.privacy import GaussianEvent, PoissonGaussianEvent
from skdp.solvers import SOLVERS

from . import test_clipping_in_solvers as clipping
from .test_clipping_in_solvers import binding_clip  # noqa: F401  (the fixture, used by name below)

EPSILON, DELTA = 2.0, 1e-5
#: the public expected batch size; the audit background has 40 rows, plus the canary: q = 8 / 41
BATCH = 8
#: steps of the solvers that take a step count (the others keep their case's epochs)
STEPS = 60
#: the per-row bound of every case: rows of norm <= 1, labels <= 1 (squared loss) or the hinge, clipped at the
#: largest gradient norm at w = 0: K * |y| = 1
G = 1.0
SEEDS = (0, 1)
#: fits of the pinned-history test: its first step (dp_srm's own event) samples the canary in about 0.2 of them
#: and then has a realised batch other than 8 with probability 0.85: a solver that divides by it there passes
#: 50 fits with probability (1 - 0.17)^50 < 1e-4
PINNED_FITS = 50


def _split(events):
    """``dp_svrg``'s split accounting: one draw per step seen as a Gaussian release (the snapshot gradient)
    plus a subsampled one (the batch's gradient differences), the two events counting the same steps."""
    return any(isinstance(e, GaussianEvent) for e in events)


def _poisson_solvers():
    """The registered solvers whose fit (in the audit's setting) releases Poisson-subsampled Gaussian steps,
    each with its events."""
    found = {}
    for name, (est, (X, y)) in sorted(_solver_cases(EPSILON, DELTA).items()):
        (Xa, ya), _ = _canary_worlds(X, y, 1.0, _canary_label(est, y))
        events = est.set_params(random_state=0).fit(Xa, ya).privacy_events_
        if any(isinstance(e, PoissonGaussianEvent) for e in events):
            found[name] = events
    return found


POISSON = sorted(_poisson_solvers().items())
SPLIT = {name for name, events in POISSON if _split(events)}
POISSON = [name for name, _ in POISSON]


def _case(solver, **params):
    """The audit's setting for ``solver`` at expected batch size ``BATCH`` (q = 8/41), and its two worlds."""
    est, (X, y) = _solver_cases(EPSILON, DELTA)[solver]
    assert "batch_size" in SOLVERS[solver].option_keys, f"{solver}: give it a q < 1 setting here"
    options = {**(est.get_params()["solver_options"] or {}), "batch_size": BATCH}
    est = est.set_params(solver=solver, solver_options=options, **params)
    if hasattr(SOLVERS[solver], "default_max_steps") and "max_iter" not in params:
        est.set_params(max_iter=STEPS)
    return est, X, y, _canary_worlds(X, y, 1.0, _canary_label(est, y))


def _shifts(est, worlds, seed, replay=None, multiplier=1.0):
    """World A's fit (with ``replay`` if given) and, per draw, its std and the shift ``query_A - query_B`` of the
    noiseless value it was added to, world B replaying world A's releases."""
    (XA, yA), (XB, yB) = worlds
    model, draws_a = _fit_recorded(est, XA, yA, seed, multiplier, replay)
    _, draws_b = _fit_recorded(est, XB, yB, seed, multiplier, _replay_of(draws_a))
    assert len(draws_a) == len(draws_b) and all(d.kind == "gaussian" for d in draws_a + draws_b)
    return model, [(a.scale, a.audit["query"] - b.audit["query"]) for a, b in zip(draws_a, draws_b)]


def _step_mu(events, n_draws):
    """Per draw, the ``mu`` its events price it at given the sampled rows: ``2 / z`` for a subsampled step (one
    row moves the sum of vectors bounded by ``C`` by ``2C``, the noise is ``z C``), composed with the Gaussian
    part's ``sensitivity / sigma`` under a split accounting; events cover the draws in order."""
    poisson = [e for e in events if isinstance(e, PoissonGaussianEvent)]
    if _split(events):
        (g,) = [e for e in events if isinstance(e, GaussianEvent)]
        (p,) = poisson
        assert g.count == p.count == n_draws and len(events) == 2, events
        return [math.hypot(g.sensitivity / g.sigma, 2 / p.noise_multiplier)] * n_draws
    assert len(poisson) == len(events), events
    mus = [2 / e.noise_multiplier for e in poisson for _ in range(e.count)]
    assert n_draws <= len(mus), (n_draws, events)  # rrpsgd runs R <= N of its N priced rounds
    return mus[:n_draws]


# ------------------------------------------------------------------------------------------
# which solvers, and their draws
# ------------------------------------------------------------------------------------------
def test_the_poisson_solvers_are_found_in_the_registry():
    assert {"noisy_sgd", "nsgd_moreau", "dp_svrg", "dp_svrg_pp", "rrpsgd", "dp_srm", "dp_lssgd"} <= set(POISSON)


@pytest.mark.parametrize("solver", POISSON)
def test_draws_below_full_batches_are_the_priced_ones(solver):
    """Count and std of the Gaussian draws against the events: std ``z C / (q n)`` for ``C = G``, and
    ``sqrt(sigma_g^2 + (z 2G / (q n))^2)`` under a split accounting (differences of two gradients clipped to
    ``G``: ``C = 2G``)."""
    est, _, _, ((X, y), _) = _case(solver)
    n = len(X)
    model, draws = _fit_recorded(est, X, y, 0, 1.0)
    events = model.privacy_events_
    poisson = [e for e in events if isinstance(e, PoissonGaussianEvent)]
    assert poisson and all(e.sampling_rate == BATCH / n for e in poisson), events
    steps = [e for e in poisson for _ in range(e.count)]
    ran = model.solver_info_.get("rounds", len(steps))  # rrpsgd: R of its N priced rounds
    assert len(draws) == ran and 1 <= ran <= len(steps), (len(draws), events)
    if _split(events):
        (g,) = [e for e in events if isinstance(e, GaussianEvent)]
        expected = [math.hypot(g.sigma, e.noise_multiplier * 2 * G / BATCH) for e in steps]
    else:
        expected = [e.noise_multiplier * G / BATCH for e in steps]
    assert [d.scale for d in draws] == pytest.approx(expected[:ran], rel=1e-12)


# ------------------------------------------------------------------------------------------
# each release against its event
# ------------------------------------------------------------------------------------------
def _check_steps(est, worlds, multiplier=1.0):
    """Every step's query shift over its std is at most its ``mu`` (the replace-one pair with the history of
    world A's noisy fit); returns the largest ratio."""
    worst = 0.0
    for seed in SEEDS:
        model, shifts = _shifts(est, worlds, seed, multiplier=multiplier)
        mus = _step_mu(model.privacy_events_, len(shifts))
        for t, ((scale, shift), mu) in enumerate(zip(shifts, mus)):
            ratio = np.linalg.norm(shift) / scale / mu
            assert ratio <= 1 + 1e-9, f"step {t}: the query moved by {ratio:.4f} x its priced sensitivity"
            worst = max(worst, ratio)
    return worst


@pytest.mark.parametrize("solver", POISSON)
def test_every_step_moves_within_its_priced_sensitivity(solver):
    est, _, _, worlds = _case(solver)
    worst = _check_steps(est, worlds)
    if solver not in SPLIT:  # the canary's clipped gradient nearly attains 2C
        assert worst > 0.5, worst


def test_the_step_check_sees_half_the_noise():
    """Positive control of the check above: the same fit with half the noise, priced unchanged."""
    est, _, _, worlds = _case("noisy_sgd")
    with pytest.raises(AssertionError, match="priced sensitivity"):
        _check_steps(est, worlds, multiplier=0.5)


@pytest.mark.parametrize("solver", POISSON)
def test_a_sampled_canary_moves_the_step_by_its_bound_over_the_public_batch_size(solver):
    """The history pinned (both worlds release 0 at every step, so every iterate stays at the start, ``w = 0``):
    the canary ``x = e_d, y = 1`` has the clipped gradient ``-G e_d`` there, its mirror ``+G e_d``, the
    background rows 0, so a step's query moves by ``-2G/b e_d`` when the canary is sampled and not at all
    otherwise; ``b`` the public expected size, not the realised one. The steps that sample it are
    Binomial(steps, q).

    Split accounting (``dp_svrg``, one epoch from the snapshot ``s = 0``): the first release pushes the iterate
    to ``w_d <= -2`` (the ball's radius is 3), where both canaries' derivatives ``w.x - y`` are clipped to
    ``-1`` (and ``+1``), so the batch's gradient differences ``g(w) - g(s)`` move by ``2G e_d`` (0 for the
    canary, ``-2G e_d`` for its mirror); the snapshot gradient moves by ``-2G/n e_d`` at every step:
    ``(2G/b [sampled] - 2G/n) e_d`` after the first step. (Without the clip the differences of the mirrored
    rows would be equal, ``x x^T (w - s)``: no shift.)
    """
    split = solver in SPLIT
    est, X, _, worlds = _case(solver, max_iter=1 if split else 5)
    n, d = len(X) + 1, X.shape[1] + 1
    canary = np.eye(d)[-1]
    off = -2 * G / n * canary if split else np.zeros(d)
    on = off + (2 * G / BATCH if split else -2 * G / BATCH) * canary
    model, free = _fit_recorded(est, *worlds[0], 0, 1.0)
    priced = sum(e.count for e in model.privacy_events_ if isinstance(e, PoissonGaussianEvent))
    pinned = [{"released": 1e3 * canary if split and t == 0 else np.zeros_like(free[0].audit["released"])}
              for t in range(priced)]
    sampled = total = 0
    for seed in range(PINNED_FITS):  # short fits, many of them: every event's step samples the canary often
        model, shifts = _shifts(est, worlds, seed, replay=pinned)
        mus = _step_mu(model.privacy_events_, len(shifts))
        for t, ((scale, shift), mu) in enumerate(zip(shifts, mus)):
            assert np.linalg.norm(shift) / scale <= mu * (1 + 1e-9)
            if split and t == 0:  # at the snapshot itself the differences vanish, sampled or not
                np.testing.assert_allclose(shift, off, rtol=0, atol=1e-12)
                continue
            hit = np.allclose(shift, on, rtol=0, atol=1e-12)
            assert hit or np.allclose(shift, off, rtol=0, atol=1e-12), (
                f"seed {seed}, step {t}: the query moved by {shift}, expected {off} or {on} (the bound over the "
                f"public batch size {BATCH})")
            sampled += hit
            total += 1
    assert binomtest(sampled, total, BATCH / n).pvalue > 1e-4, (sampled, total)


# ------------------------------------------------------------------------------------------
# the event-level audit
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", [s for s in POISSON if s not in SPLIT])
def test_audit_events_below_full_batches_and_its_positive_control(solver):
    """The canary is in about ``q`` of the steps, so the fit's composed ``mu`` is about ``sqrt(q)`` of the claim
    (``2/z`` per step, given the rows): a quarter of the noise is ``4 sqrt(q) ~ 1.8`` times the claim (rrpsgd
    runs R ~ U{1..N} of its N priced rounds: 20 fits make one with R and the canary's share large likely).
    Not under a split accounting: a mirrored canary moves the gradient differences only away from the snapshot,
    so a quarter of the noise stays below the claim; the pinned test above covers those steps."""
    est, X, y, _ = _case(solver)
    full = audit_events(est, X, y, n_fits=20, canary_norm=1.0, confidence=0.999)
    assert full.passed, full
    control = audit_events(est, X, y, n_fits=20, canary_norm=1.0, confidence=0.999, noise_multiplier=0.25)
    assert not control.passed, control


# ------------------------------------------------------------------------------------------
# clipping inside a Poisson batch
# ------------------------------------------------------------------------------------------
@pytest.mark.usefixtures("binding_clip")
@pytest.mark.parametrize("solver", POISSON)
def test_the_clip_binds_inside_a_poisson_batch(solver, monkeypatch):
    """``test_clipping_in_solvers``'s zero-noise check (per-example clip at a tenth of its usual norm, a huge
    row against the canary, world B on world A's releases) at ``q < 1``: every release within its claim, and
    for a solver priced by subsampled events alone a release that samples the row attains it."""
    est, X, y, _ = _case(solver)
    monkeypatch.setattr(clipping, "_case", lambda s: (est.set_params(random_state=0), X, y))
    ratios = []
    for pair in clipping._pairs(solver):
        changes, events = clipping._changes(solver, pair)
        for kind, change, claims in changes:
            assert change <= sum(claims) * (1 + 1e-9), (pair, change, claims, events)
            ratios.append(change / sum(claims))
    if solver not in SPLIT:
        assert max(ratios) > 0.9, max(ratios)
