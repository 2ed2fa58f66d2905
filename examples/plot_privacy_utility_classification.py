"""
Privacy-utility curves: every classification solver
====================================================

Test accuracy against epsilon on breast_cancer (70/30 split) for :class:`~skdp.DPLogisticRegression`
with each of its solvers, :class:`~skdp.DPLinearSVC` and :class:`~skdp.DPSparseLogisticRegression`,
next to sklearn's non-private logistic regression. delta = 1e-5, mean of 2 seeds. Public bounds fixed a
priori: the class set and ``data_norm = sqrt(d)`` for standardised rows. The scaler is sklearn's
``StandardScaler`` fitted on the training rows, which is not private; it stands in for a public scaling, so
the curves measure the models' utility, and the checked ``privacy_spent_ <= epsilon`` covers each model, not
the scaling.
"""

import math

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLinearSVC, DPLogisticRegression, DPSparseLogisticRegression, list_solvers

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = np.clip(scaler.transform(X_train), -3, 3), np.clip(scaler.transform(X_test), -3, 3)
d = X.shape[1]
EPS = [0.25, 0.5, 1, 2, 5]
SEEDS = [0, 1]

SOLVERS = [row["solver"] for row in list_solvers() if "logistic" in row["losses"] and row["constraint"] != "l0"]
models = {s: (lambda e, r, s=s: DPLogisticRegression(e, solver=s, data_norm=math.sqrt(d), classes=[0, 1],
                                                     random_state=r)) for s in SOLVERS}
models["DPLinearSVC (noisy_sgd)"] = lambda e, r: DPLinearSVC(e, data_norm=math.sqrt(d), classes=[0, 1],
                                                               random_state=r)
models["DPSparseLogisticRegression (noisy_iht, s=10)"] = lambda e, r: DPSparseLogisticRegression(
    e, n_nonzero_coefs=10, feature_bound=3.0, classes=[0, 1], random_state=r)

fig, ax = plt.subplots(figsize=(7, 4.5))
for name, make in models.items():
    accs = []
    for e in EPS:
        scores = []
        for r in SEEDS:
            m = make(e, r).fit(X_train, y_train)
            assert m.privacy_spent_.epsilon <= e * (1 + 1e-9)
            scores.append(m.score(X_test, y_test))
        accs.append(np.mean(scores))
    ax.plot(EPS, accs, marker="o", label=name)
    print(f"{name:<45}" + " ".join(f"{a:.3f}" for a in accs))
ax.axhline(LogisticRegression().fit(X_train, y_train).score(X_test, y_test), color="k", ls="--",
           label="sklearn (non-private)")
ax.set_xscale("log")
ax.set_xlabel("epsilon (delta = 1e-5)")
ax.set_ylabel("test accuracy")
ax.set_title("breast_cancer")
ax.legend(fontsize=6, ncol=2)
fig.tight_layout()
plt.show()
