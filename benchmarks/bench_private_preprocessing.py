"""Private bounds and preprocessing: what each step of privacy costs in utility.

Rows (mean over 20 seeds, delta = 1e-5, default solver dp_gd):

* oracle: non-private StandardScaler, public ``data_norm = sqrt(d)``, model at epsilon;
* auto bound: non-private StandardScaler, ``data_norm="auto"`` (20% of epsilon);
* fully private pipeline: ``DPStandardScaler`` + ``data_norm="auto"``, one total
  epsilon split by :func:`skdp.set_pipeline_budget` (equal weights, accountant-aware);
* the same with ``DPStandardScaler(clip_norm="auto")`` (rows clipped at a private
  quantile of their norms for the scaler's estimate), the recommended setting at
  a few hundred rows.

Issue 9's acceptance is the last row at epsilon = 1: breast_cancer accuracy
>= 0.90, diabetes R^2 >= 0.15 (20 seeds, delta = 1e-5, no PrivacyLeakWarning).

The DPStandardScaler needs public per-feature bounds. This script stands in
for domain knowledge with each feature's min/max over the whole published
dataset, widened by 10% of the range: that is a disclosed benchmark
convenience, not something a real deployment may compute from its private data.

Usage: python benchmarks/bench_private_preprocessing.py [--seeds 20]
"""

import argparse
import math
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import (DPLogisticRegression, DPRidge, DPStandardScaler, PrivacyLeakWarning, pipeline_privacy_spent,
                  set_pipeline_budget)

EPSILONS = (0.5, 1.0, 2.0)


def main(seeds):
    warnings.simplefilter("ignore", UserWarning)
    warnings.simplefilter("error", PrivacyLeakWarning)  # no row may read a bound from the data
    for name, loader, strat, make in (
        ("breast_cancer accuracy", load_breast_cancer, True,
         lambda eps, s, dn: DPLogisticRegression(eps, data_norm=dn, classes=[0, 1], random_state=s)),
        ("diabetes R^2", load_diabetes, False,
         lambda eps, s, dn: DPRidge(eps, data_norm=dn, label_bound=(0.0, 400.0), random_state=s)),
    ):
        X, y = loader(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0,
                                              stratify=y if strat else None)
        lo, hi = X.min(axis=0), X.max(axis=0)
        lo, hi = lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo)
        d = X.shape[1]
        print(f"\n{name} (n_train={len(ytr)}, d={d})")
        print(f"{'pipeline':<44}" + "".join(f"{'eps=' + str(e):>10}" for e in EPSILONS))
        rows = {
            "StandardScaler + data_norm=sqrt(d)": lambda eps, s: make_pipeline(
                StandardScaler(), make(eps, s, math.sqrt(d))),
            'StandardScaler + data_norm="auto"': lambda eps, s: make_pipeline(
                StandardScaler(), make(eps, s, "auto")),
            'DPStandardScaler + data_norm="auto" (total)': lambda eps, s: set_pipeline_budget(
                make_pipeline(DPStandardScaler(bounds=(lo, hi), random_state=1000 + s), make(eps, s, "auto")),
                eps, 1e-5, n_samples=len(ytr), n_features=d),
            'DPStandardScaler(clip_norm="auto") + "auto"': lambda eps, s: set_pipeline_budget(
                make_pipeline(DPStandardScaler(bounds=(lo, hi), clip_norm="auto", random_state=1000 + s),
                              make(eps, s, "auto")),
                eps, 1e-5, n_samples=len(ytr), n_features=d),
        }
        for label, build in rows.items():
            cells = []
            for eps in EPSILONS:
                scores = []
                for s in range(seeds):
                    pipe = build(eps, s).fit(Xtr, ytr)
                    if "(total)" in label or "clip_norm" in label:
                        assert pipeline_privacy_spent(pipe, 1e-5).epsilon <= eps + 1e-9
                    scores.append(pipe.score(Xte, yte))
                cells.append(f"{np.mean(scores):>10.3f}")
            print(f"{label:<44}" + "".join(cells))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    main(ap.parse_args().seeds)
