"""Multi-party private ERM (seed 004, chapter 6): gap to the pooled optimum vs the number of parties, and Dask scaling.

Part 1 (the chapter's comparison, eps = 0.5, delta = 1e-5, lambda = 1e-3, mean of 5 seeds): for m parties of equal
size, ``mpc_grad_pert`` and ``mpc_output_pert`` against the non-private pooled optimum theta* of the same objective:
optimality gap J(theta) - J(theta*) on the training rows and accuracy loss (test accuracy of theta* minus that of
theta), on a synthetic design (n = 50,000, d = 20) and on breast_cancer (standardised, rows scaled to norm <= 1).
Part 2: wall time of the Dask fit (each chunk a party) on a LocalCluster with 1 and 2 workers.

    python benchmarks/multiparty.py            # needs pip install -e ".[dask]" for part 2
"""

import sys
import time
import warnings

import numpy as np
from scipy import optimize, special
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp.distributed import MultiPartyDPLogisticRegression

LAM, EPS, SEEDS = 1e-3, 0.5, range(5)


def objective(theta, X, ys):
    z = X @ theta
    return np.mean(np.logaddexp(0, -ys * z)) + 0.5 * LAM * theta @ theta


def pooled_optimum(X, ys):
    f = lambda w: (objective(w, X, ys), X.T @ (-ys * special.expit(-ys * (X @ w))) / len(ys) + LAM * w)  # noqa
    return optimize.minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", options={"gtol": 1e-10}).x


def datasets():
    rng = np.random.RandomState(0)
    X = rng.randn(60000, 20)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)  # rows in the unit ball, as the chapter
    y = (X @ rng.randn(20) + 0.3 * rng.randn(60000) > 0).astype(int)
    yield "synthetic (n=50000, d=20)", X[:50000], y[:50000], X[50000:], y[50000:]
    Xb, yb = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(Xb, yb, test_size=0.3, random_state=0, stratify=yb)
    sc = StandardScaler().fit(Xtr)
    scale = np.sqrt(Xtr.shape[1])
    yield "breast_cancer (n=398, d=30)", sc.transform(Xtr) / scale, ytr, sc.transform(Xte) / scale, yte


def estimator_rows(X):
    """The rows the estimator sees: raw rows clipped to sqrt(1 - 0.5^2), then the intercept column 0.5."""
    kx = np.sqrt(0.75)
    Xc = X * np.minimum(1.0, kx / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300))
    return np.hstack([Xc, np.full((len(X), 1), 0.5)])


def part1():
    print(f"eps={EPS}, lambda={LAM}: optimality gap / accuracy loss vs the pooled non-private optimum")
    for name, X, y, Xt, yt in datasets():
        ys = 2 * y - 1
        Xc, Xct = estimator_rows(X), estimator_rows(Xt)
        theta_star = pooled_optimum(Xc, ys)
        acc_star = np.mean((Xct @ theta_star > 0) == yt)
        print(f"\n{name}: pooled optimum test accuracy {acc_star:.4f}")
        print("| mechanism | parties | optimality gap | accuracy loss |")
        print("|---|---|---|---|")
        for mech in ("mpc_grad_pert", "mpc_output_pert"):
            for m in (1, 10, 100):
                if m > len(y) // 3:
                    continue
                gaps, losses = [], []
                for s in SEEDS:
                    est = MultiPartyDPLogisticRegression(EPS, solver=mech, alpha=LAM, n_parties=m,
                                                         classes=[0, 1], random_state=s).fit(X, y)
                    theta = np.r_[est.coef_[0], est.intercept_[0] / 0.5]
                    gaps.append(objective(theta, Xc, ys) - objective(theta_star, Xc, ys))
                    losses.append(acc_star - np.mean((Xct @ theta > 0) == yt))
                print(f"| {mech} | {m} | {np.mean(gaps):.2e} | {np.mean(losses):+.4f} |", flush=True)


def part2():
    try:
        import dask.array as da
        from distributed import Client, LocalCluster
    except ImportError:
        print("\n(dask not installed: skipping the scaling table)")
        return
    rng = np.random.RandomState(0)
    X = rng.randn(400000, 50) / np.sqrt(50)
    y = (X[:, 0] > 0).astype(int)
    dx = da.from_array(X, chunks=(50000, 50))
    print("\nDask fit, 8 parties of 50,000 rows, d=50, mpc_grad_pert (T=40):")
    print("| workers | wall time (s) |")
    print("|---|---|")
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
                Client(cl):
            MultiPartyDPLogisticRegression(EPS, classes=[0, 1], max_iter=2, random_state=0).fit(dx, y)  # warm
            t = time.perf_counter()
            MultiPartyDPLogisticRegression(EPS, classes=[0, 1], max_iter=40, random_state=0).fit(dx, y)
            print(f"| {workers} | {time.perf_counter() - t:.2f} |", flush=True)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    if "--scaling-only" not in sys.argv:
        part1()
    part2()
