"""Coefficients of every dense solver for a seed, saved and compared across code versions.

A speed change must leave every fit's coefficients unchanged up to
floating-point summation order. ``save`` fits every dense solver of
``DPLogisticRegression`` (binary and, where supported, multinomial) and
``DPRidge`` on a small synthetic design (float64, float32 and CSR input, public
and private bounds), the estimators at their defaults (with rows whose label is
not selected by ``classes="auto"``), ``DPLinearSVC`` and ``DPLasso``, all with
``random_state=0``; ``compare`` prints every fit whose coefficients differ.

Usage (run each ``save`` with the version to measure on ``PYTHONPATH``)::

    PYTHONPATH=. python benchmarks/compare_fits.py save before.npz
    ...change the code...
    PYTHONPATH=. python benchmarks/compare_fits.py save after.npz
    python benchmarks/compare_fits.py compare before.npz after.npz
"""

import sys
import warnings

import numpy as np
import scipy.sparse as sp

from skdp import DPLasso, DPLinearSVC, DPLogisticRegression, DPRidge, list_solvers


def solvers_for(loss):
    return [r["solver"] for r in list_solvers() if loss in r["losses"] and r["constraint"] != "l0"]


def save(path):
    warnings.simplefilter("ignore")
    rng = np.random.RandomState(1)
    n, d = 6000, 12
    X = rng.randn(n, d) / np.sqrt(d) * (1 + rng.rand(n, 1))
    w = rng.randn(d)
    yc = (X @ w + 0.3 * rng.randn(n) > 0).astype(int)
    y3 = np.where(rng.rand(n) < 0.4, 2, yc)
    y4 = y3.copy()
    y4[:3] = 7  # a rare label: inactive rows under classes="auto"
    yr = X @ w + 0.3 * rng.randn(n)
    out = {}

    def rec(key, est, Xf, yf):
        try:
            est.fit(Xf, yf)
            out[key] = np.concatenate([np.ravel(est.coef_), np.ravel(est.intercept_)])
        except Exception as e:
            print("ERR", key, type(e).__name__, e)

    for s in solvers_for("logistic"):
        kw = dict(data_norm=1.5, classes=[0, 1], random_state=0, solver=s)
        if s in ("noisy_sfw", "noisy_sfw_lp", "dp_accmd"):
            kw["coef_norm"] = 5.0
        rec(f"log/{s}", DPLogisticRegression(1.0, **kw), X, yc)
        rec(f"log32/{s}", DPLogisticRegression(1.0, **kw), X.astype(np.float32), yc)
        rec(f"logsp/{s}", DPLogisticRegression(1.0, **kw), sp.csr_matrix(X), yc)
    for s in solvers_for("multinomial"):
        kw = dict(data_norm=1.5, classes=[0, 1, 2], random_state=0, solver=s)
        if s in ("noisy_sfw", "noisy_sfw_lp", "dp_accmd"):
            kw["coef_norm"] = 5.0
        rec(f"mn/{s}", DPLogisticRegression(2.0, **kw), X, y3)
    for s in solvers_for("squared"):
        kw = dict(data_norm=1.5, label_bound=4.0, random_state=0, solver=s)
        if s in ("noisy_sfw", "noisy_sfw_lp", "dp_accmd"):
            kw["coef_norm"] = 5.0
        rec(f"sq/{s}", DPRidge(1.0, **kw), X, yr)
        rec(f"sq32/{s}", DPRidge(1.0, **kw), X.astype(np.float32), yr)
        rec(f"sqsp/{s}", DPRidge(1.0, **kw), sp.csr_matrix(X), yr)
        kw.pop("data_norm")
        kw.pop("label_bound")
        rec(f"sqauto/{s}", DPRidge(1.0, **kw), X, yr)
    rec("def/log", DPLogisticRegression(1.0, random_state=0), X, yc)
    rec("def/log_inactive", DPLogisticRegression(1.0, random_state=0), X, y4)
    rec("def/log_inactive_gd_nofi", DPLogisticRegression(1.0, random_state=0, fit_intercept=False), X, y4)
    rec("def/log_inactive_svrg", DPLogisticRegression(1.0, random_state=0, solver="dp_svrg"), X, y4)
    rec("def/log_inactive_op", DPLogisticRegression(1.0, random_state=0, solver="obj_pert"), X, y4)
    rec("def/log_is", DPLogisticRegression(1.0, random_state=0, intercept_scaling=0.3), X, yc)
    rec("def/ridge", DPRidge(1.0, random_state=0), X, yr)
    rec("def/ridge_small", DPRidge(1.0, random_state=0), X[:500], yr[:500])
    rec("def/ridge_gd", DPRidge(1.0, random_state=0, solver="dp_gd"), X, yr)
    rec("def/ridge_nofi", DPRidge(1.0, random_state=0, fit_intercept=False, solver="dp_gd"), X, yr)
    rec("def/ridge_nc", DPRidge(1.0, random_state=0, penalty="nonconvex", solver="dp_gd", alpha=0.1), X, yr)
    rec("def/svc", DPLinearSVC(1.0, random_state=0), X, yc)
    rec("def/svc_m", DPLinearSVC(1.0, random_state=0, solver="nsgd_moreau"), X, yc)
    rec("def/lasso", DPLasso(1.0, random_state=0), X, yr)
    np.savez(path, **out)
    print(len(out), "fits saved to", path)


def compare(path_a, path_b, verbose=False):
    a, b = np.load(path_a), np.load(path_b)
    worst = 0.0
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            print("MISSING", k)
            continue
        x, y = a[k], b[k]
        diff = float(np.max(np.abs(x - y)) / max(np.max(np.abs(x)), 1e-300))
        worst = max(worst, diff)
        flag = "identical" if np.array_equal(x, y) else ("summation-level" if diff < 1e-9 else "DIFFERENT")
        if flag != "identical" or verbose:
            print(f"{k:<34} {flag:<16} relative {diff:.2e}")
    print("fits", len(a), "worst relative difference", worst)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "save":
        save(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], "-v" in sys.argv)
    else:
        raise SystemExit(__doc__)
