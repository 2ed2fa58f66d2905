"""Dask benchmark: DP fits of 10,000,000 x 50 rows on a 2-worker LocalCluster.

The rows are generated block by block (one ``numpy.random.Generator`` per
block, seeded by the block's index: uniform features with standard deviations
0.5 to 2) and never exist as one array: every pass
over the data regenerates the blocks on the workers, as a pass over files on
disk would read them. The labels are functions of their block (a logistic
rule and a linear model with noise), so they line up with the rows.

Fits, at epsilon = 1, delta = 1e-5, the defaults (every bound chosen privately):
``DPLogisticRegression()`` (``dp_gd`` with its default schedule),
``DPRidge()`` (``adassp`` at this ``n epsilon``) and ``DPStandardScaler()``.
Reported per fit: wall time, the number of passes over the data and the time
per pass, the peak resident memory of each worker process (polled, and the
kernel's high-water mark) against the size of X, and the accuracy (R^2 for
the ridge) on 200,000 held-out rows. Then the same estimators on the first
``--sub`` rows (1,000,000 by default), fitted both on Dask and in memory with
the same seed: the largest coefficient difference, whether the privacy events
are equal, and the accuracies.

Usage::

    python benchmarks/bench_dask.py                      # 10,000,000 x 50 (long on 2 cores)
    python benchmarks/bench_dask.py --n 2000000          # a shorter run
"""

import argparse
import resource
import threading
import time
import warnings

import numpy as np

import dask
import dask.array as da
import distributed

import skdp._dask as skdp_dask
from skdp import DPLogisticRegression, DPRidge, DPStandardScaler

SEED = 20261125


def _scales(d):
    return np.linspace(0.5, 2.0, d)


def _truth(d):
    rng = np.random.default_rng([SEED, 0])
    return rng.standard_normal(d) / np.sqrt(d), rng.standard_normal(d)


def make_block(index, rows, d, stream=1):
    """Rows ``index * chunk ...`` of the design: one generator per block (``stream`` 2: held-out rows)."""
    rng = np.random.default_rng([SEED, stream, index])
    return rng.uniform(-1.0, 1.0, (rows, d)) * (np.sqrt(3.0) * _scales(d))  # standard deviations _scales(d)


def _classes(block, block_id=None, stream=1):
    w, _ = _truth(block.shape[1])
    rng = np.random.default_rng([SEED, 10 + stream, block_id[0]])
    return (block @ w + rng.logistic(size=block.shape[0]) > 0).astype(np.int64)


def _targets(block, block_id=None, stream=1):
    _, beta = _truth(block.shape[1])
    rng = np.random.default_rng([SEED, 20 + stream, block_id[0]])
    return block @ beta + 3.0 + rng.standard_normal(block.shape[0])


def dataset(n, d, chunk):
    """``(X, y_class, y_reg)`` as Dask arrays built block by block (nothing is generated here)."""
    sizes = [min(chunk, n - i) for i in range(0, n, chunk)]
    X = da.concatenate([da.from_delayed(dask.delayed(make_block)(i, m, d), shape=(m, d), dtype=np.float64)
                        for i, m in enumerate(sizes)])
    yc = X.map_blocks(_classes, drop_axis=1, dtype=np.int64)
    yr = X.map_blocks(_targets, drop_axis=1, dtype=np.float64)
    return X, yc, yr


def held_out(d, rows=200_000):
    X = make_block(0, rows, d, stream=2)
    return X, _classes(X, (0,), 2), _targets(X, (0,), 2)


ESTIMATORS = [
    ("DPLogisticRegression()", lambda: DPLogisticRegression(1.0, random_state=0), 1),
    ("DPRidge()", lambda: DPRidge(1.0, random_state=0), 2),
    ("DPStandardScaler()", lambda: DPStandardScaler(1.0, random_state=0), None),
]


def _score(est, X, yc, yr):
    if isinstance(est, DPLogisticRegression):
        return f"accuracy {est.score(X, yc):.4f}"
    if isinstance(est, DPRidge):
        return f"R^2 {est.score(X, yr):.4f}"
    return f"max |mean_| {np.abs(est.mean_).max():.4f}, scale_ / true {np.median(est.scale_ / _scales(X.shape[1])):.4f}"


def _coef(est):
    return np.concatenate([np.ravel(getattr(est, a)) for a in (("mean_", "scale_") if hasattr(est, "mean_")
                                                               else ("coef_", "intercept_"))])


class Passes:
    """Times every reduction a Dask fit computes (one per pass over the data)."""

    def __init__(self):
        self.times = []
        self._compute = skdp_dask._compute

    def __enter__(self):
        def timed(*graphs):
            t = time.perf_counter()
            out = self._compute(*graphs)
            self.times.append(time.perf_counter() - t)
            return out

        skdp_dask._compute = timed
        return self

    def __exit__(self, *exc):
        skdp_dask._compute = self._compute


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


def _max_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


class WorkerMemory:
    """Polls every worker's resident memory while a fit runs; keeps each worker's peak."""

    def __init__(self, client, every=0.2):
        self.client, self.every, self.peak = client, every, {}
        self._stop = threading.Event()

    def _poll(self):
        while not self._stop.is_set():
            try:
                for w, rss in self.client.run(_rss).items():
                    self.peak[w] = max(self.peak.get(w, 0), rss)
            except Exception:  # a poll racing the end of a fit
                pass
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _gib(b):
    return f"{b / 2**30:.2f} GiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--d", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=250_000, help="rows per block")
    parser.add_argument("--sub", type=int, default=1_000_000, help="rows of the in-memory comparison")
    parser.add_argument("--memory-limit", default="4GiB", help="per worker")
    parser.add_argument("--skip-full", action="store_true", help="only the subsample comparison")
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    n, d = args.n, args.d
    X, yc, yr = dataset(n, d, args.chunk)
    Xt, yct, yrt = held_out(d)
    print(f"X: {n:,} x {d} float64 = {_gib(n * d * 8)} in {len(X.chunks[0])} blocks of {args.chunk:,} rows "
          f"({_gib(args.chunk * d * 8)} each); 2 workers x 1 thread, memory_limit {args.memory_limit}")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=args.memory_limit) as cluster, distributed.Client(cluster) as client:
        if not args.skip_full:
            print(f"\n== full data on Dask: n = {n:,}")
            for name, make, which in ESTIMATORS:
                y = {1: yc, 2: yr, None: None}[which]
                with Passes() as passes, WorkerMemory(client) as mem:
                    t = time.perf_counter()
                    est = make().fit(X, y)
                    wall = time.perf_counter() - t
                hw = client.run(_max_rss)
                per = np.asarray(passes.times)
                print(f"{name:<24} {wall:8.1f} s  {per.size} passes, per pass median {np.median(per):.2f} s "
                      f"(min {per.min():.2f}, max {per.max():.2f})  solver={getattr(est, 'solver_', '-')} "
                      f"n_iter_={getattr(est, 'n_iter_', '-')}  spent {est.privacy_spent_}")
                print(f"{'':<24} peak worker RSS (polled) " + ", ".join(_gib(v) for v in mem.peak.values())
                      + "; worker high-water marks " + ", ".join(_gib(v) for v in hw.values())
                      + f"; X is {_gib(n * d * 8)}")
                print(f"{'':<24} held-out {_score(est, Xt, yct, yrt)}")
        m = min(args.sub, n)
        print(f"\n== first {m:,} rows: the same fit on Dask and in memory (same seed)")
        Xs = X[:m]
        Xm = Xs.compute()
        for name, make, which in ESTIMATORS:
            y = {1: yc, 2: yr, None: None}[which]
            ys = None if y is None else y[:m]
            t = time.perf_counter()
            dsk = make().fit(Xs, ys)
            t_dask = time.perf_counter() - t
            t = time.perf_counter()
            mem = make().fit(Xm, None if ys is None else ys.compute())
            t_mem = time.perf_counter() - t
            diff = np.abs(_coef(dsk) - _coef(mem)).max()
            same = dsk.privacy_events_ == mem.privacy_events_ and dsk.privacy_spent_ == mem.privacy_spent_
            print(f"{name:<24} dask {t_dask:7.1f} s, in memory {t_mem:7.1f} s; max |coef diff| {diff:.2e}; "
                  f"privacy events equal: {same}")
            print(f"{'':<24} held-out: dask {_score(dsk, Xt, yct, yrt)} | in memory {_score(mem, Xt, yct, yrt)}")


if __name__ == "__main__":
    main()
