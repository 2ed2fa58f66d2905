"""What a mini-batch solver's fit costs, and what fewer, larger steps would cost in fit.

On the speed benchmark's design (``bench_speed.py``: n = 200,000, d = 50,
dense ``float64``, ``DPRidge(epsilon=1, data_norm=2, label_bound=8)``) prints:

1. the time to fetch one random row (``X.take`` of 632 sorted random rows,
   fresh rows each time, as a Poisson batch reads them), and sklearn's
   ``Ridge()`` fit time, best of 3;
2. ``noisy_sgd``'s fit time and its time per step, best of 3, with the rows of
   the coming steps gathered ahead on a worker thread (the default) and
   without (``PREFETCH_MIN_BYTES`` raised), and whether both fits are equal;
   then the same steps on the first 5,000 rows, whose array stays in cache:
   what the steps cost besides fetching rows from memory;
3. ``noisy_sgd``'s test R^2 (mean and standard error over ``--seeds`` seeds)
   with its default schedule (2000 steps of Thm 3.2's batch ``m``), and with
   1000 steps of ``2 m`` and 500 steps of ``4 m``: the same rows in all, in
   fewer steps.

    python benchmarks/bench_minibatch.py             # about a minute on 2 cores
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score

import skdp.solvers._problem as solver_base
from skdp import DPRidge
from skdp.solvers.sgd import NoisySGD


def design(seed=0, n=200_000, d=50, n_test=50_000):
    rng = np.random.RandomState(seed)
    X = rng.randn(n + n_test, d) / np.sqrt(d)
    y = X @ rng.randn(d) + 0.3 * rng.randn(n + n_test)
    return X[:n], y[:n], X[n:], y[n:]


def best(fit, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fit()
        times.append(time.perf_counter() - t)
    return min(times), out


def row_fetch_ns(X, m=632, steps=2000, seed=1):
    rng = np.random.default_rng(seed)
    batches = [np.flatnonzero(rng.random(X.shape[0]) < m / X.shape[0]) for _ in range(steps)]
    t = time.perf_counter()
    for rows in batches:
        X.take(rows, axis=0)
    return (time.perf_counter() - t) / sum(len(r) for r in batches) * 1e9


def model(epsilon=1.0, **kw):
    return DPRidge(epsilon, solver="noisy_sgd", data_norm=2.0, label_bound=8.0, **kw)


def main(seeds=6):
    warnings.simplefilter("ignore")
    X, y, Xt, yt = design()
    print(f"one random row of X ({X.shape[1]} float64): {row_fetch_ns(X):.0f} ns")
    print(f"sklearn Ridge(): {best(lambda: Ridge().fit(X, y))[0] * 1e3:.0f} ms")

    threshold = solver_base.PREFETCH_MIN_BYTES
    fits = {}
    for label, min_bytes in (("rows gathered ahead", threshold), ("rows gathered by each step", 1 << 62)):
        solver_base.PREFETCH_MIN_BYTES = min_bytes
        try:
            seconds, est = best(lambda: model(random_state=0).fit(X, y))
        finally:
            solver_base.PREFETCH_MIN_BYTES = threshold
        fits[label] = est.coef_
        steps = int(est.n_iter_[0])
        print(f"noisy_sgd, {label}: {seconds * 1e3:.0f} ms, {seconds / steps * 1e6:.0f} us a step ({steps} steps)")
    print("the two fits equal:", all(np.array_equal(a, b) for a, b in zip(*fits.values())))
    # the same steps on rows that stay in cache: what the steps cost besides fetching rows from memory
    m, n_small = est.solver_info_["batch_size"], 5_000
    seconds, _ = best(lambda: model(random_state=0, max_iter=steps, solver_options={"batch_size": m})
                      .fit(X[:n_small], y[:n_small]))
    print(f"noisy_sgd, the same {steps} steps of {m} rows on the first {n_small} rows (X of "
          f"{X[:n_small].nbytes / 2**20:.1f} MiB, in cache): {seconds * 1e3:.0f} ms, "
          f"{seconds / steps * 1e6:.0f} us a step")

    cap = NoisySGD.default_max_steps
    print(f"\nnoisy_sgd test R^2 (mean +- standard error, {seeds} seeds), the same rows in fewer steps:")
    try:
        for steps, batch in ((cap, m), (cap // 2, 2 * m), (cap // 4, 4 * m)):
            NoisySGD.default_max_steps = steps
            scores = [r2_score(yt, model(solver_options={"batch_size": batch}, random_state=s).fit(X, y).predict(Xt))
                      for s in range(seeds)]
            sem = np.std(scores) / np.sqrt(seeds)
            print(f"  {steps:>5} steps of {batch:>5} rows: {np.mean(scores):.3f} +- {sem:.3f}")
    finally:
        NoisySGD.default_max_steps = cap


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=6)
    main(ap.parse_args().seeds)
