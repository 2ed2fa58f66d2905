"""Speed benchmark: fit time of each solver / sklearn's time, same process.

Synthetic data, n = 200,000, d = 50, dense float64, rows of norm about 1.
For each estimator: sklearn's default fit (``LogisticRegression()``,
``Ridge()``), the estimator at its defaults as a user would write it
(``DPLogisticRegression(epsilon=1.0)``: ``data_norm``, ``classes`` and
``label_bound`` chosen privately), the defaults with public bounds, and every
dense solver (public bounds). Each time is the best of 3 fits, each ratio is to
the best of 3 sklearn fits interleaved with them (the machine's load may change
during the run).

Usage: python benchmarks/bench_speed.py [--repeat R]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression, Ridge

from skdp import DPLogisticRegression, DPRidge, list_solvers

#: the labels of the two default rows (the speed table of doc/benchmarks.rst uses them too)
DEFAULTS = "defaults"
DEFAULTS_PUBLIC = "defaults, public bounds"


def solvers_for(loss):
    """Every dense solver (not the l0 sparse ones) that supports ``loss``, from the solver table."""
    return [r["solver"] for r in list_solvers() if loss in r["losses"] and r["constraint"] != "l0"]


def timed_fits(make, X, y, repeat=3):
    """``(best time in seconds, the last fitted estimator)`` over ``repeat`` fits of ``make()``."""
    times = []
    for _ in range(repeat):
        est = make()
        t = time.perf_counter()
        est.fit(X, y)
        times.append(time.perf_counter() - t)
    return min(times), est


def best_time(make, X, y, repeat=3):
    return timed_fits(make, X, y, repeat)[0]


def tasks():
    """``(title, sklearn estimator, loss, make(solver), X, y, defaults)`` for logistic and ridge.

    ``make(solver)`` builds the estimator with that solver and public bounds;
    ``defaults`` maps a row label to a maker of the estimator at its defaults
    (with ``epsilon`` only, and with the public bounds).
    """
    rng = np.random.RandomState(0)
    n, d = 200_000, 50
    X = rng.randn(n, d) / np.sqrt(d)
    w = rng.randn(d)
    yc = (X @ w + 0.3 * rng.randn(n) > 0).astype(int)
    yr = X @ w + 0.3 * rng.randn(n)
    return [
        ("DPLogisticRegression vs LogisticRegression", LogisticRegression, "logistic",
         lambda s: DPLogisticRegression(1.0, solver=s, data_norm=2.0, classes=[0, 1], random_state=0), X, yc,
         {DEFAULTS: lambda: DPLogisticRegression(epsilon=1.0),
          DEFAULTS_PUBLIC: lambda: DPLogisticRegression(epsilon=1.0, data_norm=2.0, classes=[0, 1])}),
        ("DPRidge vs Ridge", Ridge, "squared",
         lambda s: DPRidge(1.0, solver=s, data_norm=2.0, label_bound=8.0, random_state=0), X, yr,
         {DEFAULTS: lambda: DPRidge(epsilon=1.0),
          DEFAULTS_PUBLIC: lambda: DPRidge(epsilon=1.0, data_norm=2.0, label_bound=8.0)}),
    ]


def _iterations(n_iter):
    """One printable count from ``n_iter_`` (an int, an array shaped as sklearn's, or ``None`` for a direct solver)."""
    return "-" if n_iter is None else int(np.max(n_iter))


def measure(task, repeat=3):
    """``(sklearn seconds, [(label, seconds, ratio, solver_, n_iter_), ...])`` for one task, same process.

    Each fit's ratio is to sklearn fits interleaved with it (sklearn, skdp,
    sklearn, skdp, ...; best of ``repeat`` each), so that a change of the
    machine's load during the run biases no row; the sklearn time reported is
    the best of all its fits.
    """
    title, sk, loss, make, X, y, defaults = task
    makers = list(defaults.items()) + [(s, lambda s=s: make(s)) for s in solvers_for(loss)]
    rows, base = [], float("inf")
    for label, maker in makers:
        sk_times, times = [], []
        for _ in range(repeat):
            sk_times.append(best_time(sk, X, y, 1))
            t, fitted = timed_fits(maker, X, y, 1)
            times.append(t)
        base = min(base, *sk_times)
        rows.append((label, min(times), min(times) / min(sk_times), fitted.solver_, _iterations(fitted.n_iter_)))
    return base, rows


def main(repeat=3):
    warnings.simplefilter("ignore")
    for task in tasks():
        title, X = task[0], task[4]
        base, rows = measure(task, repeat)
        print(f"\n{title} (n={X.shape[0]}, d={X.shape[1]}); sklearn {base * 1e3:.0f} ms")
        print(f"{'fit':<26}{'fit time':>10}{'ratio':>8}{'n_iter_':>9}  solver_")
        for label, t, ratio, solver, n_iter in rows:
            print(f"{label:<26}{t * 1e3:>8.0f}ms{ratio:>8.2f}{n_iter:>9}  {solver}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="fits per timing (the best is kept)")
    main(ap.parse_args().repeat)
