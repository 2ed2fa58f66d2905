"""Why narrow sufficient statistics run on one BLAS thread per half of the rows (``skdp._blas``).

On the speed benchmark's design (n = 200,000, d = 50 plus the intercept and a
label column: 52 columns, the bounded lazy design of ``DPRidge``), prints the
time of one pass of ``X^T X`` by 4096-row blocks (best and median of
``--repeat``, alternating):

* ``syrk, BLAS threads as loaded``: BLAS ``syrk`` on each block, OpenBLAS's
  own threads (skdp before this change);
* ``syrk, one thread`` and ``product B^T B, one thread``: each block on one
  BLAS thread;
* ``skdp``: :meth:`skdp.bounds.BoundedDesign.gram` as it runs (the product
  on one thread per half of the blocks, the second half on a worker thread);

and the time of a ``52 x 52`` ``eigh`` right after each pass.

    python benchmarks/bench_blas_threads.py
"""

import argparse
import contextlib
import time

import numpy as np
from scipy.linalg.blas import dsyrk
from threadpoolctl import threadpool_limits

from skdp.bounds import bound_features


def one_pass(design, y, mode):
    if mode == "skdp":
        return design.gram(extra=y)
    p = design.shape[1] + 1
    out = np.zeros((p, p), order="F")
    buf = np.empty((4096, p))
    limit = threadpool_limits(1, user_api="blas") if "one thread" in mode else contextlib.nullcontext()
    with limit:
        for lo in range(0, design.shape[0], 4096):
            rows = slice(lo, min(lo + 4096, design.shape[0]))
            B = design._fill(buf[: rows.stop - rows.start], rows)
            B[:, -1] = y[rows]
            if mode.startswith("syrk"):
                out = dsyrk(1.0, B.T, beta=1.0, c=out, trans=0, lower=0, overwrite_c=1)
            else:
                out += B.T @ B
    return np.triu(out) + np.triu(out, 1).T


def main(repeat=7):
    rng = np.random.RandomState(0)
    n, d = 200_000, 50
    X = rng.randn(n, d) / np.sqrt(d)
    y = X @ rng.randn(d) + 0.3 * rng.randn(n)
    design = bound_features(X, 2.0, True, None, lazy=True).X
    modes = ["syrk, BLAS threads as loaded", "syrk, one thread", "product B^T B, one thread", "skdp"]
    passes, eighs = {m: [] for m in modes}, {m: [] for m in modes}
    for _ in range(repeat):
        for mode in modes:
            t = time.perf_counter()
            G = one_pass(design, y, mode)
            t1 = time.perf_counter()
            np.linalg.eigh(G)
            passes[mode].append(t1 - t)
            eighs[mode].append(time.perf_counter() - t1)
    print(f"X^T X of the bounded design, n = {n}, {design.shape[1] + 1} columns; best / median of {repeat}, ms")
    print(f"{'':<32}{'pass':>16}{'eigh after it':>18}")
    for mode in modes:
        p, e = np.array(passes[mode]) * 1e3, np.array(eighs[mode]) * 1e3
        print(f"{mode:<32}{p.min():>7.1f} / {np.median(p):>6.1f}{e.min():>9.2f} / {np.median(e):>6.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    main(ap.parse_args().repeat)
