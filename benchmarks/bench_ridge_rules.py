"""Where DPRidge's two default rules come from: dp_gd's step count and the adassp / dp_gd cross-over.

Prints, at the defaults (only ``epsilon`` and, for the synthetic designs, the
public label range ``(-4, 4)``), the mean test R^2 and its standard error over
``--seeds`` splits:

1. diabetes (sklearn ``StandardScaler`` on the training split, 70/30) with
   ``dp_gd`` forced to ``T`` steps (``max_iter``), against the default schedule;
2. the synthetic design of ``bench_defaults.py`` (``X ~ N(0, I/d)``,
   ``w ~ N(0, I)``, noise 0.3) at smaller ``n`` and ``d``, ``solver="dp_gd"``
   against ``solver="adassp"`` and the default (``"auto"``);
3. ``dp_gd``'s default penalty (``alpha=None``: ``min(0.1, 0.2 K^2)``, its ball
   following it) against the former ``alpha = 0.1``, on diabetes as sklearn
   loads it (features of small scale) and standardised, and on the synthetic
   design (isotropic and AR(1)-correlated) at unit scale and times 0.1; then
   the other solvers with that default on diabetes as loaded.

    python benchmarks/bench_ridge_rules.py            # a few minutes on 2 cores
    python benchmarks/bench_ridge_rules.py --seeds 5  # a quick look
    python benchmarks/bench_ridge_rules.py --only penalty  # the third table only
"""

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPRidge
from skdp.linear_model._ridge import SCALED_ALPHA_SOLVERS


def diabetes(seed):
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def synthetic(n, d):
    def split(seed):
        rng = np.random.RandomState(seed)
        X = rng.randn(n, d) / np.sqrt(d)
        y = X @ rng.randn(d) + 0.3 * rng.randn(n)
        return train_test_split(X, y, test_size=0.3, random_state=seed)
    return split


def score(make, data, seeds):
    scores = []
    for seed in range(seeds):
        Xtr, Xte, ytr, yte = data(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            scores.append(make(seed).fit(Xtr, ytr).score(Xte, yte))
    return f"{np.mean(scores):.3f} ± {np.std(scores, ddof=1) / np.sqrt(seeds):.3f}"


def diabetes_as_loaded(seed):
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
    return Xtr, Xte, ytr, yte


def scaled(n, d, rho, scale):
    """``synthetic`` with AR(1) correlation ``rho`` between the features, times ``scale``."""
    def split(seed):
        rng = np.random.RandomState(seed)
        C = rho ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
        X = rng.randn(n, d) @ np.linalg.cholesky(C).T / np.sqrt(d)
        y = X @ rng.randn(d) + 0.3 * rng.randn(n)
        return train_test_split(X * scale, y, test_size=0.3, random_state=seed)
    return split


def penalty_table(seeds):
    print("R^2 of dp_gd with its default penalty (alpha=None) and with alpha=0.1 (the former default)")
    print("| data | epsilon | alpha=0.1 | default |")
    print("|---|---|---|---|")
    rows = [("diabetes as loaded", diabetes_as_loaded, eps, {}) for eps in (1.0, 5.0, 100.0)]
    rows += [("diabetes standardised", diabetes, eps, {}) for eps in (1.0, 5.0, 100.0)]
    rows += [(f"synthetic d=10, rho={rho:g}, n=1571, features x {scale:g}", scaled(1571, 10, rho, scale), 1.0,
              {"label_bound": (-4, 4)}) for rho in (0.0, 0.9) for scale in (1.0, 0.1)]
    for name, data, eps, kw in rows:
        cells = [score(lambda s, a=a: DPRidge(epsilon=eps, solver="dp_gd", alpha=a, random_state=s, **kw),
                       data, seeds) for a in (0.1, None)]
        print(f"| {name} | {eps:g} | " + " | ".join(cells) + " |", flush=True)
    print("\nthe other solvers whose default penalty follows the row bound, diabetes as loaded, epsilon 5")
    print("| solver | alpha=0.1 | default |")
    print("|---|---|---|")
    for solver in sorted(SCALED_ALPHA_SOLVERS - {"dp_gd"}):
        cells = [score(lambda s, a=a: DPRidge(epsilon=5.0, solver=solver, alpha=a, random_state=s),
                       diabetes_as_loaded, seeds) for a in (0.1, None)]
        print(f"| {solver} | " + " | ".join(cells) + " |", flush=True)


def main(seeds, only=None):
    if only == "penalty":
        return penalty_table(seeds)
    print("diabetes R^2, dp_gd with T steps (default: the schedule's own T)")
    steps = (2, 3, 4, 5, 6, 8, 10, 13)
    print("| epsilon | default | " + " | ".join(f"T={t}" for t in steps) + " |")
    print("|---" * (len(steps) + 2) + "|")
    for eps in (1.0, 2.0, 5.0):
        cells = [score(lambda s: DPRidge(epsilon=eps, random_state=s), diabetes, seeds)]
        cells += [score(lambda s, t=t: DPRidge(epsilon=eps, solver="dp_gd", max_iter=t, random_state=s), diabetes,
                        seeds) for t in steps]
        print(f"| {eps:g} | " + " | ".join(cells) + " |", flush=True)
    print("\nsynthetic R^2 (label_bound=(-4, 4)): dp_gd, adassp and the default")
    print("| n | d | epsilon | n epsilon / p (training rows) | dp_gd | adassp | default |")
    print("|---|---|---|---|---|---|---|")
    for n, d, eps in [(3000, 5, 1.0), (1500, 10, 3.0), (3000, 10, 1.0), (6000, 10, 1.0), (15000, 10, 1.0),
                      (4000, 15, 1.0), (5000, 20, 1.0)]:
        data = synthetic(n, d)
        cells = [score(lambda s, solver=solver: DPRidge(epsilon=eps, solver=solver, label_bound=(-4, 4),
                                                        random_state=s), data, seeds)
                 for solver in ("dp_gd", "adassp", "auto")]
        print(f"| {n} | {d} | {eps:g} | {0.7 * n * eps / (d + 1):.0f} | " + " | ".join(cells) + " |", flush=True)
    print()
    penalty_table(seeds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--only", choices=["penalty"], default=None, help="print one table only")
    args = parser.parse_args()
    main(args.seeds, args.only)
