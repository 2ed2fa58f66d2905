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
evidence the test has power. The solvers priced as full-batch Gaussian releases
are also held to their mu-GDP claim, with a half-noise control (at the end).
The worlds, scores and the epsilon and mu lower bounds are
in ``_helpers.py`` (shared with the other solver files); the under-noise switch
is the ``under_noise`` fixture of ``conftest.py``.
"""

import math

import numpy as np
import pytest
from sklearn.base import clone

from skdp import DPLinearSVC, DPLogisticRegression, DPRidge, DPSparseLinearRegression
from skdp.audit import _solver_cases, gdp_mu_for
from skdp.privacy import GaussianEvent, PoissonGaussianEvent
from skdp.solvers import SOLVERS

from ._helpers import (CLAIM, DELTA, N_FITS, UNDER, canary_scores, canary_worlds, empirical_epsilon_lower_bound,
                       empirical_mu_lower_bound)


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
    if solver in ("dp_gd", "output_pert"):  # full-batch Gaussian releases: mu-GDP (s1 holds the canary +e_2)
        assert empirical_mu_lower_bound(s1, s0) <= gdp_mu_for(CLAIM, DELTA)


@pytest.mark.parametrize("n_fits", [pytest.param(100, id="fast"),
                                    pytest.param(N_FITS, id="full", marks=pytest.mark.full)])
@pytest.mark.parametrize("solver", ["dp_gd", "output_pert", "obj_pert", "dp_svrg"])
def test_audit_detects_under_noised_solver(solver, n_fits, under_noise):
    """Positive control: the same solver with 1/50 of its calibrated noise (fast tier: 100 fits per world)."""
    with under_noise(1 / UNDER):
        s0, s1 = canary_scores(_make("clf", solver), canary_worlds("clf"), n_fits=n_fits)
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb > CLAIM, f"{solver}: the test did not detect an under-noised solver ({eps_lb:.3f})"


# ------------------------------------------------------------------------------------------
# mu-GDP: the solvers priced as full-batch Gaussian releases
# ------------------------------------------------------------------------------------------
# A fit whose events are all Gaussian releases of the whole data is mu-GDP with mu^2 = sum count (Delta/sigma)^2
# (Dong, Roth and Su 2022, Cor. 3.3), a far sharper claim than its (epsilon, delta): half the noise doubles mu,
# which a fixed-threshold test sees at a few hundred fits, while the epsilon bound of 300 fits cannot exceed
# about 3.7. At epsilon = 3 the claim is mu = 0.72 and half the noise gives 1.44 where the canary attains it.
MU_EPSILON = 3.0
MU_FITS = 300  # per world; the full-noise lower bound is about 0.3, the half-noise one about 1.05 (claim 0.72)
#: the audit's worst-case setting attains the claimed mu within ~10% for these (and the half-noise control
#: clears the claim by three standard errors at MU_FITS)
MU_TIGHT = ["dp_gd", "dp_ight", "output_pert", "dp_srm"]
#: Gaussian-priced solvers whose one-coordinate canary score sees clearly less than the claimed mu, so a
#: half-noise control at a few hundred fits would not clear the claim (in brackets: the mu the score shows at
#: full noise over the claim, measured at 150 fits per world; before it, the likely reason)
MU_LOOSE = {
    "adassp": "the coefficient is a ratio of three noisy statistics (about 0.5)",
    "dp_accmd": "mirror-descent steps shrink the canary's later gradients (about 0.75)",
    "dp_lssgd": "steps of decreasing size: later releases move the score less (about 0.8)",
    "dpsl_kt": "the canary moves the teacher's labels, not the released coefficient directly (about 0.7)",
    "noisy_sgd": "projected steps of decreasing size (about 0.75)",
    "nsgd_moreau": "the envelope's gradient shrinks as the margin grows (about 0.8)",
    "phased_sgd": "only the canary's phase sees it, later phases average it out (about 0.5)",
    "rrpsgd": "R < N rounds run with positive probability (about 0.8)",
}


def _claimed_mu(events):
    """The mu of a fit whose events are all full-batch Gaussian releases (None for any other event)."""
    total = 0.0
    for e in events:
        if isinstance(e, GaussianEvent):
            total += e.mu_squared
        elif isinstance(e, PoissonGaussianEvent) and e.sampling_rate == 1.0:  # sum of rows bounded by C, std z C
            total += e.count * (2.0 / e.noise_multiplier) ** 2
        else:
            return None
    return math.sqrt(total)


def _mu_case(solver):
    """The audit's worst-case estimator for ``solver`` at MU_EPSILON and its two worlds (canary first)."""
    est, (X, y) = _solver_cases(MU_EPSILON, DELTA)[solver]
    est = est.set_params(solver=solver)  # a case may leave it at "auto" (DPLinearSVC's picks noisy_sgd)
    X = np.hstack([X, np.zeros((len(X), 1))])
    worlds = [(np.vstack([X, [0.0, 0.0, sign]]), np.append(y, 1)) for sign in (1.0, -1.0)]
    return est, worlds


def _planned(est, worlds):
    return est.planned_events(*worlds[0][0].shape)


def test_every_gaussian_priced_solver_is_classified():
    """A new solver priced as full-batch Gaussian releases gets a mu-GDP test or a stated reason."""
    gaussian = {s for s in SOLVERS if _claimed_mu(_planned(*_mu_case(s))) is not None}
    assert gaussian == set(MU_TIGHT) | set(MU_LOOSE)


@pytest.mark.parametrize("solver", MU_TIGHT)
def test_empirical_mu_within_claim_and_half_noise_exceeds_it(solver, under_noise):
    est, worlds = _mu_case(solver)
    mu = _claimed_mu(_planned(est, worlds))
    assert mu <= gdp_mu_for(MU_EPSILON, DELTA) * (1 + 1e-6)

    def scores():
        return canary_scores(lambda seed: clone(est).set_params(random_state=seed), worlds, MU_FITS)

    assert empirical_mu_lower_bound(*scores()) <= mu, f"{solver}: empirical mu lower bound above the claim {mu:.3f}"
    with under_noise(0.5):
        half = empirical_mu_lower_bound(*scores())
    assert half > mu, f"{solver}: half the noise not detected (mu >= {half:.3f}, claim {mu:.3f})"


# ------------------------------------------------------------------------------------------
# statistical privacy: neighbouring canaries (see test_privacy_statistical.py)
# ------------------------------------------------------------------------------------------
STAT = ["noisy_sfw", "noisy_sfw_lp", "dp_accmd", "phased_sgd", "noisy_sgd", "dp_svrg_pp", "obj_pert_svrg",
        "nsgd_moreau"]


def _stat_make(solver):
    if solver == "nsgd_moreau":
        return lambda s: DPLinearSVC(epsilon=CLAIM, delta=DELTA, alpha=0.1, data_norm=1.0, classes=[0, 1],
                                     coef_norm=3.0, fit_intercept=False, random_state=s, max_iter=5)
    # noisy_sfw_lp on 12 rows: one phase with a root batch of 8 uses all 12 rows (b T (T + 5)/4 = 12)
    options = {"noisy_sfw": {"batch_size": 1}, "noisy_sfw_lp": {"batch_size": 8, "n_phases": 1},
               "phased_sgd": {"batch_size": 2}}.get(solver)
    return lambda s: DPLogisticRegression(
        epsilon=CLAIM, delta=DELTA, solver=solver, alpha=0.1, data_norm=1.0, classes=[0, 1], coef_norm=3.0,
        fit_intercept=False, random_state=s, max_iter=3 if solver in ("dp_accmd", "dp_svrg_pp") else (
            5 if solver == "noisy_sgd" else None), solver_options=options,
    )


def _fw_worlds():
    """Worst case for Frank-Wolfe: every other row is zero, so only the canary moves a vertex score."""
    worlds = []
    for sign in (-1.0, 1.0):
        X = np.zeros((12, 3))
        X[-1, 2] = sign
        y = np.arange(12) % 2
        y[-1] = 1
        worlds.append((X, y))
    return worlds


def _stat_scores(solver):
    worlds = _fw_worlds() if solver in ("noisy_sfw", "noisy_sfw_lp") else canary_worlds("clf")
    return canary_scores(_stat_make(solver), worlds)


@pytest.mark.parametrize("solver", STAT)
def test_convex_solver_empirical_epsilon_within_claim(solver):
    s0, s1 = _stat_scores(solver)
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb <= CLAIM, f"{solver}: empirical epsilon lower bound {eps_lb:.3f} > claim {CLAIM}"


@pytest.mark.parametrize("solver", STAT)
def test_convex_solver_audit_detects_under_noised_solver(solver, under_noise):
    """Positive control: the same canary test flags each solver with 1/50 of its noise."""
    # objective perturbation's noise is far larger than the canary's gradient (as for two_stage in the
    # sparse audit below), and a Frank-Wolfe selection on 12 rows sees the canary's score shift next to a
    # Gumbel scale sized for 7 selections: 1/50 of either still hides the canary; 1/1000 is still broken
    with under_noise(1 / (1000 if solver in ("obj_pert_svrg", "noisy_sfw") else UNDER)):
        s0, s1 = _stat_scores(solver)
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb > CLAIM, f"{solver}: the test did not detect an under-noised solver ({eps_lb:.3f})"


SPARSE_SOLVERS = ["dp_ight", "dpsl_kt", "dp_fw_l1", "two_stage"]


# (sklearn compatibility of the sparse estimators: test_common.py, driven by the solver registry)


# -- statistical privacy tests (helpers: _helpers.py; positive controls: conftest.py's under_noise) ------
def _sparse_worlds():
    """Background rows on features 0, 1 (small labels); a boundary canary (0, 0, +-1) with label 1."""
    rng = np.random.RandomState(0)
    n = 40
    Xb = np.zeros((n, 3))
    Xb[:, :2] = rng.uniform(-0.5, 0.5, size=(n, 2))
    yb = 0.1 * (Xb[:, 0] - Xb[:, 1])
    return [(np.vstack([Xb, [[0.0, 0.0, sign]]]), np.append(yb, 1.0)) for sign in (-1.0, 1.0)]


def _sparse_make(solver):
    opts = {"n_blocks": 4} if solver == "two_stage" else None
    return lambda seed: DPSparseLinearRegression(
        epsilon=CLAIM, n_nonzero_coefs=3, solver=solver, clip_norm=1.0, label_bound=1.0, fit_intercept=False,
        max_iter=3 if solver in ("dp_ight", "dp_fw_l1") else None, solver_options=opts, random_state=seed,
    )


def _sparse_scores(make):
    return canary_scores(make, _sparse_worlds())


@pytest.mark.parametrize("solver", SPARSE_SOLVERS)
def test_sparse_empirical_epsilon_within_claim(solver):
    s0, s1 = _sparse_scores(_sparse_make(solver))
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb <= CLAIM, f"{solver}: empirical epsilon lower bound {eps_lb:.3f} > claim {CLAIM}"


@pytest.mark.parametrize("solver", SPARSE_SOLVERS)
def test_sparse_audit_detects_under_noised_solver(solver, under_noise):
    # two_stage: objective perturbation's noise is ~100x the canary's gradient here, so 1/50 of it
    # still hides the canary; 1/1000 (of its selection and its stage-2 noise) shows the test's power too.
    with under_noise(1 / (1000 if solver == "two_stage" else UNDER)):
        s0, s1 = _sparse_scores(_sparse_make(solver))
    eps_lb = empirical_epsilon_lower_bound(s0, s1)
    assert eps_lb > CLAIM, f"{solver}: the test did not detect an under-noised solver ({eps_lb:.3f})"
