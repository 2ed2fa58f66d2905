"""Sparse benchmark: support recall, F1 and relative L2 error versus epsilon and n.

Designs (``skdp.datasets``; the synthetic designs of Wang 2021, dissertation,
sections 2.6 and 3.4): features i.i.d.
``U(-1, 1)``, ``d = 1000`` (``--d``), ``s* = 10`` non-zeros from ``U(-1, 1)``,
label noise std 0.1. Every sparse solver at its defaults with
``n_nonzero_coefs = s*``, ``delta = 1e-5``; ``two_stage`` gets the public label
range ``[-4, 4]`` (it needs one). References: non-private IGHT (the
dissertation's "IGHT" rows, :func:`skdp.solvers.sparse.ight`; reported with ``epsilon = inf``
and never as a solver) and sklearn's Lasso with ``alpha`` picked on the noise
level (non-private). Means over seeds.

A second table compares DPSparseLogisticRegression with the dense
DPLogisticRegression on the sparse logistic design (test accuracy).

``--minimax`` prints the table of the minimax-rate issue instead: the same
uniform design with the true coefficients set to ``+-1`` (so every one is
recoverable), ``s* = 10``, noise 0.1, for ``n`` in {2,000, 5,000, 20,000},
``d`` in {1,000, 10,000} and epsilon in {0.5, 1}: support recall, relative L2
error and fit time (seconds per fit, on this machine) of every sparse solver at
its defaults (``noisy_iht``, the default, is noisy IHT with private top-s
peeling, Cai-Wang-Zhang 2021; its noise grows with ``log d``, ``dp_ight``'s
with ``sqrt(d)``).

Usage: python benchmarks/sparse_models.py [--seeds 5] [--quick] [--minimax [--dims 1000 10000] [--solvers ...]]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import Lasso, LogisticRegression

from skdp import DPLogisticRegression, DPSparseLinearRegression, DPSparseLogisticRegression
from skdp.datasets import make_sparse_classification, make_sparse_regression
from skdp.solvers.sparse import ight

SOLVERS = ("noisy_iht", "dp_ight", "dpsl_kt", "dp_fw_l1", "two_stage")


def ight_reference(X, y, s, max_iter=200):
    """Non-private IGHT with an intercept column (comparison only; no privacy guarantee)."""
    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    n = X.shape[0]
    w, _ = ight(lambda w: Xa.T @ (Xa @ w - y) / n, Xa.shape[1], s, 1.0, max_iter, free=Xa.shape[1] - 1, tol=1e-10)
    return w[:-1]


def _metrics(coef, truth):
    S, Sh = set(np.flatnonzero(truth)), set(np.flatnonzero(coef))
    tp = len(S & Sh)
    recall = tp / len(S)
    precision = tp / max(len(Sh), 1)
    f1 = 0.0 if tp == 0 else 2 * precision * recall / (precision + recall)
    return recall, f1, np.linalg.norm(coef - truth) / np.linalg.norm(truth)


def regression_table(settings, d, seeds):
    print(f"\n## Sparse linear regression (d = {d}, s* = 10, noise 0.1), mean over {seeds} seeds\n")
    print("| n | epsilon | method | recall | F1 | rel. L2 error | fit time (s) |")
    print("|---|---|---|---|---|---|---|")
    for n, eps in settings:
        data = [make_sparse_regression(n, d, 10, random_state=seed) for seed in range(seeds)]
        rows = []
        for solver in SOLVERS:
            res, times = [], []
            for seed, (X, y, truth) in enumerate(data):
                est = DPSparseLinearRegression(epsilon=eps, n_nonzero_coefs=10, solver=solver, label_bound=4.0,
                                               random_state=seed)
                t = time.perf_counter()
                est.fit(X, y)
                times.append(time.perf_counter() - t)
                assert est.privacy_spent_.epsilon <= eps + 1e-9
                res.append(_metrics(est.coef_, truth))
            rows.append((solver, np.mean(res, axis=0), np.mean(times)))
        for name, fit in (("IGHT (non-private)", lambda X, y: ight_reference(X, y, 10)),
                          ("Lasso (non-private)", lambda X, y: Lasso(alpha=0.01).fit(X, y).coef_)):
            res, times = [], []
            for X, y, truth in data:
                t = time.perf_counter()
                coef = fit(X, y)
                times.append(time.perf_counter() - t)
                res.append(_metrics(coef, truth))
            rows.append((name, np.mean(res, axis=0), np.mean(times)))
        for name, (rec, f1, err), t in rows:
            print(f"| {n} | {eps:g} | {name} | {rec:.2f} | {f1:.2f} | {err:.3f} | {t:.2f} |")


def sign_design(n, d, seed, s=10):
    """skdp.datasets' uniform design with the true coefficients replaced by their signs (+-1), noise 0.1."""
    X, y, coef = make_sparse_regression(n, d, s, noise=0.1, random_state=seed)
    signs = np.sign(coef)
    return X, y + X @ (signs - coef), signs


def minimax_table(ns, ds, eps_list, seeds, solvers):
    """Recall, relative L2 error and seconds per fit of every sparse solver on the +-1 design."""
    print(f"\n## +-1 coefficients (s* = 10, noise 0.1): mean over {seeds} seeds\n")
    print("| n | d | epsilon | solver | support recall | rel. L2 error | time per fit (s) |")
    print("|---|---|---|---|---|---|---|")
    for d in ds:
        for n in ns:
            res = {(eps, solver): [] for eps in eps_list for solver in solvers}
            for seed in range(seeds):
                X, y, truth = sign_design(n, d, seed)  # one draw per seed, shared by every cell
                for eps in eps_list:
                    for solver in solvers:
                        est = DPSparseLinearRegression(epsilon=eps, n_nonzero_coefs=10, solver=solver,
                                                       label_bound=4.0, random_state=seed)
                        t = time.perf_counter()
                        est.fit(X, y)
                        elapsed = time.perf_counter() - t
                        assert est.privacy_spent_.epsilon <= eps + 1e-9
                        rec, _, err = _metrics(est.coef_, truth)
                        res[eps, solver].append((rec, err, elapsed))
                del X, y
            for (eps, solver), rows in res.items():
                rec, err, elapsed = np.mean(rows, axis=0)
                print(f"| {n} | {d} | {eps:g} | {solver} | {rec:.2f} | {err:.3f} | {elapsed:.2f} |", flush=True)


def logistic_table(n, d, eps_list, seeds):
    print(f"\n## Sparse logistic design (n = {n} train, d = {d}, s* = 10): test accuracy, mean over {seeds} seeds\n")
    print("| epsilon | " + " | ".join(SOLVERS) + " | dense DPLogisticRegression | sklearn (non-private) |")
    print("|---|" + "---|" * (len(SOLVERS) + 2))
    for eps in eps_list:
        acc = {k: [] for k in SOLVERS + ("dense", "sklearn")}
        for seed in range(seeds):
            X, y, _ = make_sparse_classification(n + 5000, d, 10, random_state=seed)
            Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
            for solver in SOLVERS:
                est = DPSparseLogisticRegression(epsilon=eps, n_nonzero_coefs=10, solver=solver, classes=[0, 1],
                                                 random_state=seed).fit(Xtr, ytr)
                acc[solver].append(est.score(Xte, yte))
            acc["dense"].append(DPLogisticRegression(epsilon=eps, classes=[0, 1], random_state=seed)
                                .fit(Xtr, ytr).score(Xte, yte))
            acc["sklearn"].append(LogisticRegression(max_iter=2000).fit(Xtr, ytr).score(Xte, yte))
        print(f"| {eps:g} | " + " | ".join(f"{np.mean(acc[k]):.3f}" for k in SOLVERS + ("dense", "sklearn")) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--d", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="only the two acceptance settings")
    parser.add_argument("--minimax", action="store_true", help="only the +-1 table (n, d, epsilon grid)")
    parser.add_argument("--dims", type=int, nargs="+", default=[1000, 10000], help="d values of --minimax")
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), help="solvers of --minimax")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.minimax:
        minimax_table((2000, 5000, 20000), args.dims, (0.5, 1.0), args.seeds, args.solvers)
        return
    settings = [(20000, 1.0), (5000, 4.0)]
    if not args.quick:
        settings = [(20000, 0.5), (20000, 1.0), (20000, 2.0), (5000, 1.0), (5000, 4.0), (2000, 4.0)]
    regression_table(settings, args.d, args.seeds)
    logistic_table(20000, args.d, (1.0,) if args.quick else (0.5, 1.0, 2.0), args.seeds)


if __name__ == "__main__":
    main()
