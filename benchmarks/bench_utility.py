"""Utility benchmark: accuracy / R^2 versus epsilon, every solver at its defaults.

breast_cancer: StandardScaler, 70/30 stratified split (random_state=0),
DPLogisticRegression. diabetes: StandardScaler, 70/30 split (random_state=0),
DPRidge. delta = 1e-5, mean (and std) over 20 seeds.

A second table per dataset uses ``data_norm="auto"`` (the bound chosen
privately with 20% of epsilon) for the default solver.

Public bounds, fixed without looking at the data: ``data_norm = sqrt(d)``
(a standardised row has mean squared norm d), the class set {0, 1}, and for
diabetes the label range (0, 400) for the disease-progression score, a
clinical scale stated a priori. The scaler is fitted on the training split;
that is the usual benchmark protocol but is itself not private.

Usage: python benchmarks/bench_utility.py [--seeds 20]
"""

import argparse
import math
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, DPRidge, list_solvers

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)


def solvers_for(loss):
    """Every dense solver (not the l0 sparse ones) that supports ``loss``, from the solver table."""
    return [r["solver"] for r in list_solvers() if loss in r["losses"] and r["constraint"] != "l0"]



def _split(loader, stratify):
    X, y = loader(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0,
                                          stratify=y if stratify else None)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


def tasks():
    """``(title, (Xtr, Xte, ytr, yte), baseline, loss, make)`` for the two benchmark datasets."""
    return [
        ("breast_cancer (accuracy)", _split(load_breast_cancer, True), LogisticRegression(), "logistic",
         lambda eps, solver, s, d: DPLogisticRegression(eps, 1e-5, solver=solver, data_norm=math.sqrt(d),
                                                       classes=[0, 1], random_state=s)),
        ("diabetes (R^2)", _split(load_diabetes, False), Ridge(), "squared",
         lambda eps, solver, s, d: DPRidge(eps, 1e-5, solver=solver, data_norm=math.sqrt(d),
                                           label_bound=(0.0, 400.0), random_state=s)),
    ]


def scores(data, make, solver, eps, seeds):
    """Test scores of ``seeds`` fits of ``make(eps, solver, seed, d)`` on ``data``."""
    Xtr, Xte, ytr, yte = data
    return [make(eps, solver, s, Xtr.shape[1]).fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)]


def main(seeds):
    warnings.simplefilter("ignore")
    for title, (Xtr, Xte, ytr, yte), baseline, loss, make in tasks():
        _table(title, Xtr, Xte, ytr, yte, baseline, make, seeds, solvers_for(loss))
        # the same default solver with the row bound chosen privately (data_norm="auto")
        def auto(eps, solver, s, d, make=make):
            return make(eps, solver, s, d).set_params(data_norm="auto")

        _table(title + ', data_norm="auto" (20% of epsilon)', Xtr, Xte, ytr, yte, None, auto, seeds,
               solvers=("dp_gd",))


def _table(title, Xtr, Xte, ytr, yte, baseline, make, seeds, solvers):
    d = Xtr.shape[1]
    ref = "" if baseline is None else (
        f", non-private {type(baseline).__name__}: {baseline.fit(Xtr, ytr).score(Xte, yte):.3f}")
    print(f"\n{title}: n_train={len(ytr)}, d={d}{ref}")
    print(f"{'solver':<12}" + "".join(f"{'eps=' + str(e):>16}" for e in EPSILONS) + f"{'time/fit':>10}")
    for solver in solvers:
        row, t0 = [], time.perf_counter()
        for eps in EPSILONS:
            sc = scores((Xtr, Xte, ytr, yte), make, solver, eps, seeds)
            row.append(f"{np.mean(sc):>8.3f} ±{np.std(sc):>5.3f}")
        per_fit = (time.perf_counter() - t0) / (seeds * len(EPSILONS))
        print(f"{solver:<12}" + "".join(f"{c:>16}" for c in row) + f"{per_fit * 1e3:>8.1f}ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    main(ap.parse_args().seeds)
