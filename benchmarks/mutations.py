"""Mutation runner: apply a realistic privacy bug at run time and see whether the test suite catches it.

Each mutation changes what a solver *does* (the noise it draws, the steps it
runs, the rows it clips) while what it *reports* (events, ``noise_scale_``)
stays as planned, or changes the calibration the events are priced from. For each
one the runner starts a fresh interpreter, applies the patch and runs the privacy
test files with ``-x``; "caught" means some test failed. Not run in CI (minutes).

Usage: python benchmarks/mutations.py [NAME ...]      (no NAME: all of them)
"""

import dataclasses
import subprocess
import sys
import time

TEST_FILES = ["tests/test_draws.py", "tests/test_privacy_statistical.py", "tests/test_convex_solvers.py",
              "tests/test_sparse.py", "tests/test_distributed.py", "tests/test_obj_pert_certified.py",
              "tests/test_suffstats.py", "tests/test_fit_protocol.py", "tests/test_audit.py"]


def _settings(cls, **change):
    """Make ``cls.run`` execute a plan whose settings are changed by ``change`` (events unchanged)."""
    real = cls.run

    def run(self, problem, plan, rng):
        settings = dict(plan.settings)
        for key, fn in change.items():
            settings[key] = fn(settings[key])
        return real(self, problem, dataclasses.replace(plan, settings=settings), rng)

    cls.run = run


def _no_clip():
    from skdp.solvers import _base

    _base.Problem.clip = property(lambda self: None)


def _mpc_half_noise():
    from skdp.distributed import _estimators as mp

    real = mp.gaussian_noise
    mp.gaussian_noise = lambda rng, sigma, size: real(rng, sigma / 2, size)


def _mpc_mean_party():
    from skdp.distributed import _estimators as mp

    real = mp.MultiPartyDPLogisticRegression._calibration

    def calibration(self, sizes, d):
        mean = int(round(sum(sizes) / len(sizes)))
        return real(self, [mean] * len(sizes), d)

    mp.MultiPartyDPLogisticRegression._calibration = calibration


def _obj_pert_ovr_full_epsilon():
    from skdp.solvers import perturbation as pt

    real = pt.ObjectivePerturbation.make_plan

    def make_plan(self, problem, budget):
        plan = real(self, problem, budget)
        if problem.n_outputs > 1:  # calibrate each class at the full budget, price as before
            kind, scale, extra = self.noise(self._binary(problem), budget.epsilon, budget.delta)
            plan = dataclasses.replace(plan, settings=dict(plan.settings, scale=scale, extra=extra))
        return plan

    pt.ObjectivePerturbation.make_plan = make_plan


def _sfw_t_minus_one():
    from skdp.solvers import constrained as c

    real = c.NoisySFW.make_plan

    def make_plan(self, problem, budget):
        plan = real(self, problem, budget)
        first, b, T, eta = self.schedule(problem)
        eps0 = c.calibrate_bounded_range(max(T - 1, 1), budget.epsilon, budget.delta, budget.relation)
        scales = plan.settings["scales"] * plan.settings["eps0"] / eps0
        return dataclasses.replace(plan, settings=dict(plan.settings, eps0=eps0, scales=scales))

    c.NoisySFW.make_plan = make_plan


def mutations():
    from skdp.solvers import constrained, gradient, perturbation, sparse, suffstats

    half = lambda v: v / 2  # noqa: E731
    return {
        "dp_gd: noise drawn at sigma/2": lambda: _settings(gradient.DPGradientDescent, sigma=half),
        "dp_gd: per-example clipping removed": _no_clip,
        "dp_gd: T+1 steps run, T priced": lambda: _settings(gradient.DPGradientDescent, T=lambda t: t + 1),
        "obj_pert: noise drawn at sigma/2": lambda: _settings(perturbation.ObjectivePerturbation, scale=half),
        "obj_pert: Jacobian term dropped": lambda: _settings(perturbation.ObjectivePerturbation,
                                                             extra=lambda e: 0.0),
        "obj_pert: one-vs-rest at full epsilon per class": _obj_pert_ovr_full_epsilon,
        "dp_ight: noise drawn at sigma/2": lambda: _settings(sparse.DPIGHT, sigma=half),
        "noisy_sfw: Gumbel scale halved": lambda: _settings(constrained.NoisySFW, scales=half),
        "noisy_sfw: epsilon calibrated for T-1 selections": _sfw_t_minus_one,
        "dp_svrg: noise drawn at sigma/2": lambda: _settings(gradient.DPSVRG, sigma=half),
        "adassp: X^T X noise at half scale": lambda: _settings(
            suffstats.AdaSSP, sigmas=lambda s: (s[0], s[1] / 2, s[2])),
        "mpc_grad_pert: noise drawn at sigma/2": _mpc_half_noise,
        "mpc_grad_pert: mean party size instead of the smallest": _mpc_mean_party,
    }


def run_one(name):
    import pytest

    mutations()[name]()
    return pytest.main(["-x", "-q", "-p", "no:cacheprovider", "--no-header", "-W", "ignore", *TEST_FILES])


def main(names):
    names = names or list(mutations())
    print(f"{'mutation':<55}{'caught':>8}{'time':>8}")
    for name in names:
        t = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True)
        caught = out.returncode == 1
        first = next((line for line in out.stdout.splitlines() if line.startswith("FAILED")), "")
        print(f"{name:<55}{'yes' if caught else 'NO':>8}{time.perf_counter() - t:>7.0f}s  {first[:90]}",
              flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        sys.exit(run_one(sys.argv[2]))
    main(sys.argv[1:])
