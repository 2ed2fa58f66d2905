"""Cost of floating-point-safe noise (``solver_options={"secure_noise": True}``) per solver.

For every solver with the option, at ``epsilon = 1`` (``delta = 1e-5``), on
breast_cancer and digits (standardised, rows clipped to the public
``data_norm=5``): the noise scale ratio (secure / default, the
``noise_scale_`` of the fits: zCDP conversion and the grid's rounding cost),
the fit-time ratio (mean over the seeds, both modes interleaved) and the
test-accuracy difference (secure - default, mean over the seeds, 70/30 split).

Tasks: classifiers (``DPLogisticRegression`` / ``DPSparseLogisticRegression``)
on the labels; solvers that are binary only see digits as ``digit < 5``; the
regression-only solvers (``adassp``, ``dpsl_kt``) fit the labels as +-1
targets (``DPRidge`` / ``DPSparseLinearRegression``) and are scored by the
sign. The private bound selections are not part of the comparison: bounds,
clip norms and classes are public (a private bound drawn by a different
mechanism would change the noise scale from seed to seed).

``--large N`` adds a synthetic dataset of ``N`` rows and 50 standard normal
features (a noisy linear rule, binary), where the fixed cost of each exact
draw weighs less against the gradients.

Usage: python benchmarks/bench_secure_noise.py [--seeds S] [--large N] [--solvers a,b,...]
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, DPRidge, DPSparseLinearRegression, DPSparseLogisticRegression
from skdp.solvers import SOLVERS

EPSILON, DELTA, DATA_NORM = 1.0, 1e-5, 5.0


def _classifier(solver, classes, **kw):
    sparse = SOLVERS[solver].constraint == "l0"
    if sparse:
        return DPSparseLogisticRegression(EPSILON, delta=DELTA, solver=solver, n_nonzero_coefs=5, classes=classes,
                                          feature_bound=3.0, clip_norm=1.0, **kw)
    if SOLVERS[solver].geometry is not None:  # the constrained solvers: a public coefficient ball
        kw["coef_norm"] = 5.0
    return DPLogisticRegression(EPSILON, delta=DELTA, solver=solver, data_norm=DATA_NORM, classes=classes, **kw)


def _regressor(solver, **kw):
    if SOLVERS[solver].constraint == "l0":
        return DPSparseLinearRegression(EPSILON, delta=DELTA, solver=solver, n_nonzero_coefs=5, label_bound=1.0,
                                        feature_bound=3.0, clip_norm=1.0, **kw)
    return DPRidge(EPSILON, delta=DELTA, solver=solver, data_norm=DATA_NORM, label_bound=1.0, **kw)


REGRESSION_ONLY = {"adassp", "dpsl_kt"}


def make(solver, classes, secure, seed):
    kw = {"random_state": seed}
    est = _regressor(solver, **kw) if solver in REGRESSION_ONLY else _classifier(solver, classes, **kw)
    options = dict(est.get_params().get("solver_options") or {})
    if secure:
        options["secure_noise"] = True
    return est.set_params(solver_options=options or None)


def datasets(large=0):
    for name, loader in [("breast_cancer", load_breast_cancer), ("digits", load_digits)]:
        X, y = loader(return_X_y=True)
        yield name, StandardScaler().fit_transform(X), y
    if large:
        rng = np.random.RandomState(0)
        X = rng.randn(int(large), 50)
        yield f"synthetic n={int(large)}", X, (X[:, :5].sum(axis=1) + rng.randn(int(large)) > 0).astype(int)


def run(solver, X, y, seeds):
    multi = np.unique(y).size > 2
    rows = []
    for task_y, label in [(y, "")] + ([((y < 5).astype(int), " (digit < 5)")] if multi else []):
        Xtr, Xte, ytr, yte = train_test_split(X, task_y, test_size=0.3, random_state=0, stratify=task_y)
        classes = np.unique(task_y)
        regression = solver in REGRESSION_ONLY
        if regression and classes.size > 2:
            continue
        fit_y = 2.0 * (ytr == classes[-1]) - 1.0 if regression else ytr
        res = {False: [], True: []}
        try:
            for seed in range(seeds):
                for secure in (False, True):
                    est = make(solver, classes, secure, seed)
                    t = time.perf_counter()
                    est.fit(Xtr, fit_y)
                    elapsed = time.perf_counter() - t
                    if regression:
                        acc = np.mean((est.predict(Xte) > 0) == (yte == classes[-1]))
                    else:
                        acc = est.score(Xte, yte)
                    res[secure].append((float(np.max(est.noise_scale_)), elapsed, acc))
        except ValueError as exc:  # binary-only solver on a multi-class task: try the binary one
            if multi and label == "":
                continue
            raise exc
        base, sec = np.array(res[False]), np.array(res[True])
        rows.append((label, sec[:, 0].mean() / base[:, 0].mean(), sec[:, 1].mean() / base[:, 1].mean(),
                     sec[:, 2].mean() - base[:, 2].mean(), base[:, 2].mean(), base[:, 1].mean()))
        if label == "":
            break
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--large", type=int, default=0)
    parser.add_argument("--solvers", default="")
    args = parser.parse_args(argv)
    solvers = sorted(name for name, s in SOLVERS.items() if "secure_noise" in s.option_keys)
    if args.solvers:
        solvers = [s for s in solvers if s in args.solvers.split(",")]
    print(f"epsilon={EPSILON}, delta={DELTA}, {args.seeds} seeds; ratios secure / default")
    print(f"{'solver':<12}{'dataset':<26}{'noise':>8}{'time':>8}{'d acc':>8}{'acc':>7}{'t [s]':>8}")
    for name, X, y in datasets(args.large):
        for solver in solvers:
            for label, noise, t_ratio, d_acc, acc, t_base in run(solver, X, y, args.seeds):
                print(f"{solver:<12}{name + label:<26}{noise:>8.3f}{t_ratio:>8.2f}{d_acc:>+8.3f}{acc:>7.3f}"
                      f"{t_base:>8.3f}", flush=True)


if __name__ == "__main__":
    main()
