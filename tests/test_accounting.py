"""The accountant against privacy_core.md's test vectors, closed forms and dp-accounting.

The fast accountant path equals the reference computation (issue 19: planning time).

Pricing a Poisson-subsampled event used to run the reference quadrature at every order of the grid
at every step of a bisection. Now a shared-grid curve picks the candidate orders and the root, and
the reported epsilon is the reference quadrature at the candidates. These tests compare with the
old computation, re-implemented here from the reference pieces (no timing assertions; see
``benchmarks/bench_accounting.py`` for times).
"""

import itertools
import math

import numpy as np
import pytest

from skdp.exceptions import PrivacyAccountingError
from skdp.privacy import (ApproxDPEvent, BoundedRangeEvent, GaussianEvent, L2LaplaceEvent, LaplaceEvent,
                          PoissonGaussianEvent, PrivacyBudget, PureDPEvent, ZCDPEvent, calibrate,
                          calibrate_gaussian, classic_gaussian_sigma, gdp_delta, gdp_epsilon, gdp_mu, price,
                          rdp_laplace_1d, rdp_poisson_gaussian, rdp_pure, zcdp_epsilon, zcdp_rho)
from skdp.privacy.accounting import (_SAMPLED_ORDERS, _poisson_rdp_fast, _poisson_rdp_one,
                                     rdp_poisson_gaussian_add_remove_integer, rdp_to_epsilon)


# ---------------------------------------------------------------- V1: analytic Gaussian
@pytest.mark.parametrize(
    "eps, delta, mu, sigma",
    [
        (0.1, 1e-5, 0.0325207841, 30.7495661320),
        (1, 1e-5, 0.2680511232, 3.7306316348),
        (8, 1e-6, 1.5315451176, 0.6529353844),
        (0.5, 1e-5, 0.1422105587, 7.0318266756),
        (1, 1e-6, 0.2367043807, 4.2246788893),
    ],
)
def test_analytic_gaussian_calibration(eps, delta, mu, sigma):
    assert gdp_mu(eps, delta) == pytest.approx(mu, abs=1e-9)
    assert calibrate_gaussian(1.0, eps, delta) == pytest.approx(sigma, rel=1e-8)


@pytest.mark.parametrize(
    "mu, eps",
    [(0.001, 0.0019387250), (0.5, 1.9930914044), (1, 4.3771780957), (2, 9.9972561464),
     (5, 33.1037323359), (50, 1462.2850159648)],
)
def test_gdp_epsilon_vectors(mu, eps):
    # mu = 50 overflows the naive formula (e^eps with eps > 709).
    assert gdp_epsilon(mu, 1e-5) == pytest.approx(eps, rel=1e-9, abs=1e-10)


def test_gdp_delta_vectors():
    assert gdp_delta(1.0, 1.0) == pytest.approx(0.1269367375, abs=1e-10)
    assert gdp_delta(0.0, 1.0) == pytest.approx(0.3829249225, abs=1e-10)


def test_one_gaussian_step_is_balle_wang_analytic_mechanism():
    # BW18 Thm 8 written directly with scipy: delta(eps) at sigma, Delta.
    from scipy.stats import norm

    sens, sigma, eps = 2.0, 5.0, 0.7
    direct = norm.cdf(sens / (2 * sigma) - eps * sigma / sens) - math.exp(eps) * norm.cdf(
        -sens / (2 * sigma) - eps * sigma / sens
    )
    rep = price([GaussianEvent(sens, sigma)], delta=direct)
    assert rep.method == "gdp_exact"
    assert rep.budget.epsilon == pytest.approx(eps, rel=1e-7)


def test_t_equal_steps_equal_one_step_with_sigma_over_sqrt_t():
    T = 37
    many = price([GaussianEvent(0.3, 2.0, count=T)], 1e-6).budget.epsilon
    one = price([GaussianEvent(0.3, 2.0 / math.sqrt(T))], 1e-6).budget.epsilon
    assert many == pytest.approx(one, rel=1e-10)


def test_classic_gaussian_is_only_for_small_epsilon():
    assert classic_gaussian_sigma(1.0, 0.5, 1e-5) == pytest.approx(9.6896105252, rel=1e-9)
    with pytest.raises(ValueError):
        classic_gaussian_sigma(1.0, 1.0, 1e-5)


# ---------------------------------------------------------------- V2 / V4: zCDP and RDP
def test_v2_hundred_gaussians():
    events = [GaussianEvent(1.0, 10.0, count=100)]
    assert price(events, 1e-5).budget.epsilon == pytest.approx(4.3771780957, rel=1e-9)
    # The RDP bound alone (used when events are mixed) is looser, as the card says.
    from skdp.privacy.accounting import _rdp_epsilon

    eps, order = _rdp_epsilon(events, 1e-5, "replace_one")
    assert eps == pytest.approx(4.7285070672, rel=1e-8)
    assert order == pytest.approx(5.4)


@pytest.mark.parametrize("rho, eps", [(0.01, 0.545726), (0.5, 4.728387), (2.0, 10.724824)])
def test_v4_zcdp_conversion(rho, eps):
    assert zcdp_epsilon(rho, 1e-5) == pytest.approx(eps, abs=2e-6)


@pytest.mark.parametrize(
    "eps, delta, rho", [(1, 1e-5, 0.03055660), (0.1, 1e-5, 0.00043299), (8, 1e-6, 1.05235800), (1, 1e-8, 0.01720532)]
)
def test_v4_zcdp_inversion(eps, delta, rho):
    assert zcdp_rho(eps, delta) == pytest.approx(rho, rel=2e-6, abs=5e-9)


# ---------------------------------------------------------------- V3: Poisson sampled Gaussian
def test_v3_replace_one_per_step_rdp():
    orders = [1.5, 2, 2.5, 4.7, 8, 10.5, 16]
    expected = [2.718388e-4, 3.626295e-4, 4.535999e-4, 8.575126e-4, 1.486433e-3, 2.153482e-3, 1.709877]
    np.testing.assert_allclose(rdp_poisson_gaussian(orders, 0.01, 1.1), expected, rtol=2e-6)
    np.testing.assert_allclose(
        rdp_poisson_gaussian([2, 4, 8], 0.2, 1.0), [0.15346225, 0.46948345, 2.38795526], rtol=1e-7
    )


def test_add_remove_quadrature_matches_mtz_integer_closed_form():
    for a in (2, 3, 8, 16):
        for q, z in ((0.01, 1.1), (0.2, 0.8), (0.05, 3.0)):
            quad = rdp_poisson_gaussian([a], q, z, relation="add_remove")[0]
            assert quad == pytest.approx(rdp_poisson_gaussian_add_remove_integer(a, q, z), rel=1e-7)


def test_v3_epsilon_both_relations():
    ev = [PoissonGaussianEvent(0.01, 1.1, 10_000)]
    rep = price(ev, 1e-5).budget.epsilon
    ar = price(ev, 1e-5, relation="add_remove").budget.epsilon
    # Coarser order grid than the card's: at most 0.5% looser, never tighter than the optimum.
    assert 10.1186 <= rep <= 10.118666 * 1.005
    assert 5.6318 <= ar <= 5.6320107 * 1.005


def test_poisson_with_q_one_is_the_unsampled_gaussian_with_shift_2c():
    a = np.array([2.0, 5.0])
    np.testing.assert_allclose(rdp_poisson_gaussian(a, 1.0, 3.0), 2 * a / 9.0)


# ---------------------------------------------------------------- V5 / V7: pure and mixed
def test_v5_pure_curves():
    np.testing.assert_allclose(rdp_pure([2, 10], 1.0), [0.73532566, 0.96519315], rtol=1e-7)
    np.testing.assert_allclose(rdp_laplace_1d([2, 10], 1.0), [0.61912363, 0.92868290], rtol=1e-7)
    np.testing.assert_allclose(rdp_pure([10], 0.1), [0.04388779], rtol=1e-6)
    np.testing.assert_allclose(rdp_pure([2], 3.0), [2.95153605], rtol=1e-7)


def test_v7_mixed_events():
    from skdp.privacy.accounting import _rdp_epsilon

    ev = [GaussianEvent(1.0, 5.0, 50), BoundedRangeEvent(0.1, 20), PureDPEvent(0.5)]
    eps_rdp, order = _rdp_epsilon(ev, 1e-5, "replace_one", True)
    assert (eps_rdp, order) == (pytest.approx(7.5373728, rel=1e-7), 4.1)
    # the exact Gaussian + pure composition is tighter than RDP here (7.2972 by dp-accounting's PLD, below)
    rep = price(ev, 1e-5)
    assert rep.method == "gdp+pure"
    assert 7.29 < rep.budget.epsilon < eps_rdp


def test_pure_events_with_delta_zero_compose_basically():
    ev = [L2LaplaceEvent(2.0, 4.0), LaplaceEvent(1.0, 2.0, count=2), PureDPEvent(0.25)]
    rep = price(ev, 0.0)
    assert rep.method == "basic"
    assert rep.budget == PrivacyBudget(0.5 + 1.0 + 0.25, 0.0)


def test_gaussian_with_delta_zero_is_infinite():
    assert math.isinf(price([GaussianEvent(1.0, 1.0)], 0.0).budget.epsilon)
    assert math.isinf(price([ZCDPEvent(0.1)], 0.0).budget.epsilon)


def test_approx_events_compose_by_basic_composition():
    rep = price([ApproxDPEvent(0.5, 1e-6, count=2)], 2e-6)
    assert rep.budget.epsilon == pytest.approx(1.0)
    assert math.isinf(price([ApproxDPEvent(0.5, 1e-6, count=2)], 1e-6).budget.epsilon)
    mixed = price([ApproxDPEvent(0.5, 1e-6), GaussianEvent(1.0, 10.0, 100)], 1e-5 + 1e-6)
    assert mixed.budget.epsilon == pytest.approx(0.5 + 4.3771780957, rel=1e-8)


def test_unknown_event_is_refused():
    with pytest.raises(PrivacyAccountingError):
        price([object()], 1e-5)


# ---------------------------------------------------------------- monotonicity & round trips
def test_monotone_in_noise_and_in_delta():
    sigmas = np.geomspace(0.2, 20, 12)
    eps = [price([PoissonGaussianEvent(0.05, s, 100)], 1e-5).budget.epsilon for s in sigmas]
    assert np.all(np.diff(eps) < 0)
    deltas = np.geomspace(1e-9, 1e-2, 8)
    eps_d = [price([GaussianEvent(1, 2, 10)], d).budget.epsilon for d in deltas]
    assert np.all(np.diff(eps_d) < 0)


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (1.0, 1e-5), (4.0, 1e-7)])
def test_calibrate_then_price_round_trip(eps, delta):
    sigma = calibrate_gaussian(100 * 0.002**2, eps, delta)
    got = price([GaussianEvent(0.002, sigma, 100)], delta).budget.epsilon
    assert got <= eps and got == pytest.approx(eps, rel=1e-8)

    z, rep = calibrate(lambda p: [PoissonGaussianEvent(0.02, p, 500)], eps, delta, rtol=1e-5)
    assert rep.budget.epsilon <= eps
    assert rep.budget.epsilon >= 0.99 * eps
    assert price([PoissonGaussianEvent(0.02, z * 0.999, 500)], delta).budget.epsilon > rep.budget.epsilon


def test_v8_calibrations():
    assert calibrate_gaussian(100 * 0.002**2, 1.0, 1e-5) == pytest.approx(0.0746126327, rel=1e-8)
    z, _ = calibrate(lambda p: [PoissonGaussianEvent(0.01, p, 10_000)], 2.0, 1e-5, rtol=1e-6)
    assert z == pytest.approx(4.29814, rel=5e-3)
    beta, _ = calibrate(lambda b: [BoundedRangeEvent(2 / b, 100)], 1.0, 1e-5, rtol=1e-6)
    assert 40.4513 * 0.999 <= beta <= 40.4539 * 1.001


# ---------------------------------------------------------------- PrivacyBudget
def test_budget_validation_repr_and_order():
    b = PrivacyBudget(1.0, 1e-5)
    assert repr(b) == "PrivacyBudget(epsilon=1.0, delta=1e-05, relation='replace_one')"
    assert PrivacyBudget(0.5, 1e-6) <= b and not (b <= PrivacyBudget(0.5, 1e-3))
    assert PrivacyBudget(0.5, 1e-6) < b and b > PrivacyBudget(0.5, 1e-6)
    assert tuple(b) == (1.0, 1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyBudget(-1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        PrivacyBudget(1.0, 1.0)
    with pytest.raises(TypeError, match="epsilon"):
        PrivacyBudget("1", 0.0)
    with pytest.raises(TypeError, match="relations"):
        PrivacyBudget(1, 0) <= PrivacyBudget(1, 0, relation="add_remove")
    with pytest.raises(AttributeError):
        b.epsilon = 2.0


def test_budget_repr_is_readable_and_never_below_the_value():
    """An accountant's 0.9999999999989 reads as 1.0; a value is only ever shown rounded up."""
    shown = repr(PrivacyBudget(0.9999999999989035, 1e-5))
    assert shown == "PrivacyBudget(epsilon=1.0, delta=1e-05, relation='replace_one')"
    rng = np.random.RandomState(0)
    values = np.concatenate([rng.lognormal(0, 3, 2000), [1 + 1e-12, 0.1 + 0.2, 1e-300, 7.0, math.inf, 0.0]])
    for v in values:
        shown = eval(repr(PrivacyBudget(float(v), 0.0)).replace("inf", "math.inf"),
                     {"PrivacyBudget": PrivacyBudget, "math": math})
        assert shown.epsilon >= v
        assert shown.epsilon <= v * (1 + 1e-9) or v == 0  # and at most one 10th significant digit above
        assert len(repr(shown.epsilon)) <= 17


# ---------------------------------------------------------------- dp-accounting cross-checks
def test_agrees_with_dp_accounting_pld_and_rdp():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    N = dpa.NeighboringRelation
    # Unsampled Gaussians: PLD(REPLACE_ONE) models N(-1/nm) vs N(+1/nm): pass nm = 2 sigma / Delta.
    sigma, sens, T = 0.0746126327, 0.002, 100
    acc = pld_privacy_accountant.PLDAccountant(N.REPLACE_ONE, value_discretization_interval=1e-5)
    acc.compose(dpa.GaussianDpEvent(2 * sigma / sens), T)
    ours = price([GaussianEvent(sens, sigma, T)], 1e-5).budget.epsilon
    assert ours == pytest.approx(acc.get_epsilon(1e-5), abs=1e-3)

    # Poisson replace-one: our RDP bound is valid and within ~8% of the PLD value.
    acc = pld_privacy_accountant.PLDAccountant(N.REPLACE_ONE)
    acc.compose(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 10_000)
    pld = acc.get_epsilon(1e-5)
    ours = price([PoissonGaussianEvent(0.01, 1.1, 10_000)], 1e-5).budget.epsilon
    assert pld <= ours <= 1.1 * pld

    # Add/remove Poisson: our quadrature RDP agrees with dp-accounting's RDP accountant.
    racc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=N.ADD_OR_REMOVE_ONE)
    racc.compose(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 10_000)
    ours_ar = price([PoissonGaussianEvent(0.01, 1.1, 10_000)], 1e-5, relation="add_remove").budget.epsilon
    assert ours_ar == pytest.approx(racc.get_epsilon(1e-5), rel=5e-3)

    # Mixed events (V7) against dp-accounting's RDP accountant.
    racc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=N.REPLACE_ONE)
    racc.compose(dpa.GaussianDpEvent(5.0), 50)
    racc.compose(dpa.ZCDpEvent(0.1**2 / 8), 20)
    racc.compose(dpa.RandomizedResponseDpEvent(2 / (1 + math.exp(0.5)), 2))
    from skdp.privacy.accounting import _rdp_epsilon

    mixed = [GaussianEvent(1.0, 5.0, 50), BoundedRangeEvent(0.1, 20), PureDPEvent(0.5)]
    assert _rdp_epsilon(mixed, 1e-5, "replace_one", True)[0] == pytest.approx(racc.get_epsilon(1e-5), rel=1e-6)
    assert price(mixed, 1e-5).budget.epsilon < racc.get_epsilon(1e-5)  # "gdp+pure" is tighter here


# ---------------------------------------------------------------- Gaussian composed with pure events, exactly
def _hockey_stick_by_quadrature(mu, pure, eps):
    """delta(eps) of N(mu, 1) x RR(e_1) x ... vs N(0, 1) x RR'(e_1) x ..., by enumerating the randomised
    responses and integrating the Gaussian part numerically (no closed form of the Gaussian curve)."""
    from itertools import product

    from scipy import integrate, stats

    total = 0.0
    for signs in product((1, -1), repeat=len(pure)):
        # P-probability of the outcome and its privacy loss
        p = math.prod(math.exp(e) / (1 + math.exp(e)) if s > 0 else 1 / (1 + math.exp(e)) for s, e in zip(signs, pure))
        loss = sum(s * e for s, e in zip(signs, pure))
        if mu == 0:
            total += p * max(0.0, 1 - math.exp(eps - loss))
            continue
        # E_{x ~ N(mu, 1)} [(1 - exp(eps - loss - L(x)))_+], L(x) = mu x - mu^2 / 2
        f = lambda x: stats.norm.pdf(x, mu) * max(0.0, 1 - math.exp(eps - loss - (mu * x - mu * mu / 2)))  # noqa: E731
        lo = (eps - loss) / mu + mu / 2
        total += p * integrate.quad(f, lo, lo + 40, epsabs=1e-14, epsrel=1e-10)[0]
    return total


@pytest.mark.parametrize("mu, pure, delta", [
    (0.25, [0.05], 1e-5), (0.5, [0.05, 0.2, 0.2], 1e-6), (0.0, [0.3, 0.3, 0.5], 1e-3), (1.5, [0.4], 1e-2),
])
def test_gaussian_with_pure_events_is_the_product_of_dominating_pairs(mu, pure, delta):
    events = [GaussianEvent(1.0, 1.0 / mu)] if mu else []
    events += [BoundedRangeEvent(e) if i % 2 else PureDPEvent(e) for i, e in enumerate(pure)]
    report = price(events, delta)
    eps = report.budget.epsilon
    basic = (gdp_epsilon(mu, delta) if mu else 0.0) + sum(pure)
    assert eps < basic - 1e-3  # strictly tighter than adding the pure epsilons
    if mu:
        assert report.method == "gdp+pure"
    # the reported epsilon is on the private side of the exact curve, and tight
    assert _hockey_stick_by_quadrature(mu, pure, eps) <= delta * (1 + 1e-6)
    assert _hockey_stick_by_quadrature(mu, pure, eps - 1e-4) > delta


def test_gaussian_with_pure_events_agrees_with_dp_accounting_pld():
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    # V7's events, then a default fit's shape (one bounded-range bound, a few selections)
    v7 = price([GaussianEvent(1.0, 5.0, 50), BoundedRangeEvent(0.1, 20), PureDPEvent(0.5)], 1e-5).budget.epsilon
    dist = pld.from_gaussian_mechanism(5.0 / math.sqrt(50), sensitivity=1.0, value_discretization_interval=1e-4)
    for e, c in [(0.1, 20), (0.5, 1)]:
        dist = dist.compose(pld.from_privacy_parameters(
            common.DifferentialPrivacyParameters(e, 0.0), value_discretization_interval=1e-4).self_compose(c))
    # dp-accounting's PLD is pessimistic by its discretisation: ours (exact) is at most it and close to it
    assert dist.get_epsilon_for_delta(1e-5) - 2e-3 <= v7 <= dist.get_epsilon_for_delta(1e-5) + 1e-9

    mu, pure, delta = 0.3, [(0.05, 1), (0.1, 4)], 1e-5
    dist = pld.from_gaussian_mechanism(1.0 / mu, sensitivity=1.0, value_discretization_interval=1e-4)
    for e, c in pure:
        dist = dist.compose(pld.from_privacy_parameters(
            common.DifferentialPrivacyParameters(e, 0.0), value_discretization_interval=1e-4).self_compose(c))
    ours = price([GaussianEvent(1.0, 1.0 / mu)] + [PureDPEvent(e, c) for e, c in pure], delta).budget.epsilon
    assert dist.get_epsilon_for_delta(delta) - 2e-3 <= ours <= dist.get_epsilon_for_delta(delta) + 1e-9


# ---------------------------------------------------------------- heterogeneous Gaussian events, every path
#: Gaussian events of different mu and counts: mu^2 = 3 (0.5/2)^2 + (2/1.5)^2 + 7 (0.1/0.4)^2 = 2.4028, so the
#: composed mu = 1.550 (Dong-Roth-Su 2022, Cor. 3.3) is far from the largest one (1.333, with its count or per
#: release), from the sum of the mus (2.428) and from the count-blind root (1.379)
HETERO = (GaussianEvent(0.5, 2.0, 3), GaussianEvent(2.0, 1.5, 1), GaussianEvent(0.1, 0.4, 7))
HETERO_MU = math.sqrt(3 * (0.5 / 2.0) ** 2 + (2.0 / 1.5) ** 2 + 7 * (0.1 / 0.4) ** 2)


def _drs_delta(eps, mu):
    """delta(eps) of mu-GDP, Dong-Roth-Su 2022, Cor. 2.13, with scipy's normal cdf."""
    from scipy.stats import norm

    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def _cks_epsilon(rdp, order, delta):
    """Canonne-Kamath-Steinke 2020, Prop. 12: epsilon of an RDP value at one order."""
    return rdp + math.log1p(-1 / order) - (math.log(delta) + math.log(order)) / (order - 1)


@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_heterogeneous_gaussians_compose_by_the_root_of_the_sum_of_squares(delta):
    report = price(HETERO, delta)
    eps = report.budget.epsilon
    assert report.method == "gdp_exact"
    assert _drs_delta(eps, HETERO_MU) == pytest.approx(delta, rel=1e-6)
    assert _drs_delta(eps - 1e-3, HETERO_MU) > delta  # tight: no smaller epsilon holds
    # the wrong rules (the largest mu, the sum of the mus, counts ignored) are far off here
    for mu in (4 / 3, math.sqrt(3) / 4 + 4 / 3 + math.sqrt(7) / 4, math.sqrt(1 / 16 + 16 / 9 + 1 / 16)):
        assert abs(_drs_delta(eps, mu) / delta - 1) > 0.2, mu
    # the same releases one event per release
    single = [GaussianEvent(e.sensitivity, e.sigma) for e in HETERO for _ in range(e.count)]
    assert price(single, delta).budget.epsilon == pytest.approx(eps, rel=1e-10)


def test_heterogeneous_gaussians_with_an_approx_event_compose_basically():
    report = price(HETERO + (ApproxDPEvent(0.3, 2e-6, count=2),), 1e-5 + 4e-6)
    assert report.method == "gdp_exact+basic"
    assert _drs_delta(report.budget.epsilon - 0.6, HETERO_MU) == pytest.approx(1e-5, rel=1e-6)


def test_heterogeneous_gaussians_with_pure_events_are_the_product_of_dominating_pairs():
    events = HETERO + (PureDPEvent(0.2), BoundedRangeEvent(0.1, count=2))
    report = price(events, 1e-5)
    eps = report.budget.epsilon
    assert report.method == "gdp+pure"
    assert _hockey_stick_by_quadrature(HETERO_MU, [0.2, 0.1, 0.1], eps) <= 1e-5 * (1 + 1e-6)
    assert _hockey_stick_by_quadrature(HETERO_MU, [0.2, 0.1, 0.1], eps - 1e-4) > 1e-5


def test_heterogeneous_gaussians_with_a_zcdp_event_add_their_rho():
    """mu-GDP is (mu^2 / 2)-zCDP: rho = HETERO_MU^2 / 2 + 2 * 0.05; the conversion minimised over the order here."""
    from scipy import optimize

    rho = HETERO_MU**2 / 2 + 2 * 0.05
    report = price(HETERO + (ZCDPEvent(0.05, count=2),), 1e-6)
    best = optimize.minimize_scalar(lambda t: _cks_epsilon(rho * (1 + math.exp(t)), 1 + math.exp(t), 1e-6),
                                    bounds=(-8, 8), method="bounded", options={"xatol": 1e-10})
    assert report.method in ("zcdp", "rdp")
    assert report.budget.epsilon == pytest.approx(best.fun, rel=1e-7)


def test_gaussians_and_subsampled_events_add_their_rdp_curves():
    """The RDP path (the only one for subsampled events): at the order reported, the epsilon is the conversion
    of ``sum_i count_i alpha (Delta_i / sigma_i)^2 / 2`` plus each subsampled event's count times its one-step
    curve, and it is within 1% of that curve's best order."""
    from scipy import optimize

    sampled = (PoissonGaussianEvent(0.05, 1.2, 20), PoissonGaussianEvent(0.2, 3.0, 6))
    report = price(HETERO + sampled, 1e-5)
    assert report.method == "rdp"

    def total(order):
        return (order * HETERO_MU**2 / 2
                + sum(e.count * rdp_poisson_gaussian([order], e.sampling_rate, e.noise_multiplier)[0]
                      for e in sampled))

    assert report.budget.epsilon == pytest.approx(_cks_epsilon(total(report.order), report.order, 1e-5),
                                                  rel=1e-9)
    best = optimize.minimize_scalar(lambda a: _cks_epsilon(total(a), a, 1e-5), bounds=(1.1, 64), method="bounded",
                                    options={"xatol": 1e-6})
    assert best.fun * (1 - 1e-9) <= report.budget.epsilon <= best.fun * 1.01


@pytest.mark.parametrize("context", [(), (PureDPEvent(0.2),), (ApproxDPEvent(0.3, 1e-6),),
                                     (ZCDPEvent(0.05),), (PoissonGaussianEvent(0.05, 1.2, 20),)],
                         ids=["alone", "pure", "approx", "zcdp", "poisson"])
def test_heterogeneous_gaussians_price_as_one_gaussian_of_the_composed_mu(context):
    """Whatever they are composed with, Gaussian events are one Gaussian release of ``mu = sqrt(sum mu_i^2)``."""
    split = price(HETERO + context, 2e-5).budget.epsilon
    merged = price((GaussianEvent(HETERO_MU, 1.0),) + context, 2e-5).budget.epsilon
    assert split == pytest.approx(merged, rel=1e-9)


def reference_epsilon(q, z, count, delta, relation):
    """The accountant before the change: reference quadrature at every order, grid edges extended."""
    orders = _SAMPLED_ORDERS

    def curve(o):
        return rdp_poisson_gaussian(o, q, z, count, relation)

    eps, order = rdp_to_epsilon(orders, curve(orders), delta)
    while order == orders[-1] and orders[-1] < 2**12 and math.isfinite(eps):
        orders = np.array([orders[-1] * 1.5, orders[-1] * 2.0])
        e2, o2 = rdp_to_epsilon(orders, curve(orders), delta)
        if e2 < eps:
            eps, order = e2, o2
        else:
            break
    if order == 1.1:
        low = np.array([1.02, 1.03, 1.05, 1.075])
        e2, o2 = rdp_to_epsilon(low, curve(low), delta)
        eps = min(eps, e2)
    return max(eps, 0.0)


def reference_bisection(make_events, epsilon, delta, rtol):
    """The old calibration: bisection in log p, returning the private end of the bracket."""
    def e(p):
        return price(make_events(p), delta).budget.epsilon

    hi = 1.0
    while e(hi) > epsilon:
        hi *= 4.0
    lo = hi / 4.0
    while e(lo) <= epsilon:
        hi, lo = lo, lo / 4.0
    while hi / lo - 1 > rtol:
        mid = math.sqrt(lo * hi)
        if e(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi


GRID = list(itertools.product(
    [1e-5, 1e-3, 0.02, 0.3, 1.0],          # q, with the edges q = 1 and tiny q
    [0.3, 0.7, 1.5, 4.0, 20.0],            # z, small to large
    [1, 300, 10_000],                      # count
    [1e-9, 1e-5, 1e-2],                    # delta
))


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_price_equals_reference_on_a_grid(relation):
    for q, z, count, delta in GRID:
        got = price([PoissonGaussianEvent(q, z, count)], delta, relation).budget.epsilon
        ref = reference_epsilon(q, z, count, delta, relation)
        # a minimum over a subset of the reference's own per-order values: never below it
        assert got >= ref, (q, z, count, delta, got, ref)
        if ref > 0:
            assert got <= ref * (1 + 1e-9), (q, z, count, delta, got, ref)
        else:  # the epsilon = 0 shortcut is kept wherever it survives the quadrature's round-off
            assert got <= 1e-2, (q, z, count, delta, got)


def test_fast_curve_matches_reference_quadrature():
    orders = tuple(float(a) for a in _SAMPLED_ORDERS) + (384.0, 1024.0, 1.02)
    for z, q, relation in itertools.product([0.25, 0.8, 2.0, 9.0], [1e-4, 0.05, 0.6, 1.0],
                                            ["replace_one", "add_remove"]):
        a = np.array(orders)
        fast = _poisson_rdp_fast(orders, q, z, relation) * (a - 1)
        ref = np.array([_poisson_rdp_one(o, q, z, relation) for o in orders]) * (a - 1)
        ok = np.isfinite(ref)
        # log A_alpha to 1e-12 relative (and ~1e-14 absolute near 0, the round-off of either grid)
        np.testing.assert_allclose(fast[ok], ref[ok], rtol=1e-11, atol=1e-13, err_msg=f"{z, q, relation}")


def test_fast_curve_integer_orders_match_the_closed_form():
    for q, z, alpha in itertools.product([1e-3, 0.1, 0.7], [0.5, 1.0, 3.0], [2, 5, 16]):
        fast = _poisson_rdp_fast((float(alpha),), q, z, "add_remove")[0]
        assert fast == pytest.approx(rdp_poisson_gaussian_add_remove_integer(alpha, q, z), rel=1e-9, abs=1e-15)


def test_price_of_mixtures_equals_reference():
    from skdp.privacy.accounting import _rdp_curve  # the reference curve (every order, reference quadrature)

    events = [PoissonGaussianEvent(0.02, 1.3, 500), GaussianEvent(0.01, 0.5, 10), BoundedRangeEvent(0.1, 3)]
    for delta in (1e-5, 1e-8):
        ref, _ = rdp_to_epsilon(_SAMPLED_ORDERS, _rdp_curve(events, _SAMPLED_ORDERS, "replace_one"), delta)
        assert price(events, delta).budget.epsilon == ref


def test_zero_epsilon_is_not_decided_by_round_off():
    # q = 1e-5, z = 100 (add/remove): r(alpha) ~ alpha q^2 (e^(1/z^2) - 1) / 2 (r(1.1) ~ 5.5e-15, r(2) =
    # 1e-14 exactly) is far above delta^2 = 1e-18, so the CKS20 epsilon = 0 condition fails at every
    # order; the reference quadrature rounds r(1.1) to 0, and the old accountant reported epsilon = 0.
    q, z = 1e-5, 100.0
    assert math.log1p(q * q * math.expm1(1 / z**2)) > 1e-18  # exact r(2) (MTZ19 closed form)
    assert price([PoissonGaussianEvent(q, z, 1)], 1e-9, "add_remove").budget.epsilon > 0
    # ... while a truly tiny total still prices at exactly 0 (r(1.1) * 100 = 5e-11 < delta^2 = 1e-10)
    assert price([PoissonGaussianEvent(1e-5, 20.0, 100)], 1e-5).budget.epsilon == 0.0


@pytest.mark.parametrize("q, T, eps, delta", [
    (0.02, 500, 1.0, 1e-5), (1e-3, 3000, 0.1, 1e-8), (1.0, 50, 8.0, 1e-5), (0.3, 1, 1.0, 1e-6),
    (0.0227, 375, 0.76, 1e-5),
])
def test_calibration_returns_the_smallest_multiplier(q, T, eps, delta):
    def make(z):
        return [PoissonGaussianEvent(q, z, T)]

    z, rep = calibrate(make, eps, delta, rtol=1e-5)
    assert rep.budget.epsilon <= eps
    assert rep == price(make(z), delta)
    assert price(make(z * (1 - 1e-6)), delta).budget.epsilon > eps
    # the old bisection returns a point of its final bracket, above the root by at most rtol
    old = reference_bisection(make, eps, delta, rtol=1e-6)
    assert z <= old <= z * (1 + 1e-6)


def test_calibration_of_mixed_and_bounded_range_events():
    def make(s):
        return [GaussianEvent(2.0 / 3000, 0.5**0.5 * s, 165), PoissonGaussianEvent(0.0183, 0.5**0.5 * s * 55 / 2, 165)]

    s, rep = calibrate(make, 0.8, 1e-5, rtol=1e-3)
    assert rep.budget.epsilon <= 0.8 < price(make(s * (1 - 1e-6)), 1e-5).budget.epsilon
    beta, rep = calibrate(lambda b: [BoundedRangeEvent(2 / b, 100)], 1.0, 1e-5)
    assert rep.budget.epsilon <= 1.0 < price([BoundedRangeEvent(2 / (beta * (1 - 1e-6)), 100)], 1e-5).budget.epsilon
