"""Speed benchmark: fit time of each solver / sklearn's time, same process.

Synthetic data, n = 200,000, d = 50, dense float64, rows of norm about 1.
Each time is the best of 3 fits. Usage: python benchmarks/bench_speed.py
"""

import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression, Ridge

from skdp import DPLogisticRegression, DPRidge, list_solvers



def solvers_for(loss):
    """Every dense solver (not the l0 sparse ones) that supports ``loss``, from the solver table."""
    return [r["solver"] for r in list_solvers() if loss in r["losses"] and r["constraint"] != "l0"]



def best_time(make, X, y, repeat=3):
    times = []
    for _ in range(repeat):
        est = make()
        t = time.perf_counter()
        est.fit(X, y)
        times.append(time.perf_counter() - t)
    return min(times)


def tasks():
    """``(title, sklearn estimator, loss, make(solver), X, y)``: the design above, logistic and ridge."""
    rng = np.random.RandomState(0)
    n, d = 200_000, 50
    X = rng.randn(n, d) / np.sqrt(d)
    w = rng.randn(d)
    yc = (X @ w + 0.3 * rng.randn(n) > 0).astype(int)
    yr = X @ w + 0.3 * rng.randn(n)
    return [
        ("DPLogisticRegression vs LogisticRegression", LogisticRegression, "logistic",
         lambda s: DPLogisticRegression(1.0, solver=s, data_norm=2.0, classes=[0, 1], random_state=0), X, yc),
        ("DPRidge vs Ridge", Ridge, "squared",
         lambda s: DPRidge(1.0, solver=s, data_norm=2.0, label_bound=8.0, random_state=0), X, yr),
    ]


def main():
    warnings.simplefilter("ignore")
    for title, sk, loss, make, X, y in tasks():
        base = best_time(sk, X, y)
        print(f"\n{title} (n={X.shape[0]}, d={X.shape[1]}); sklearn {base * 1e3:.0f} ms")
        print(f"{'solver':<12}{'fit time':>12}{'ratio':>8}{'n_iter_':>9}")
        for s in solvers_for(loss):
            t = best_time(lambda: make(s), X, y)
            it = make(s).fit(X, y).n_iter_
            print(f"{s:<12}{t * 1e3:>10.0f}ms{t / base:>8.2f}{it:>9}")


if __name__ == "__main__":
    main()
