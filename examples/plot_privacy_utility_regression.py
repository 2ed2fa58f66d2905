"""
Privacy-utility curves: every regression solver
===============================================

Test R^2 against epsilon on diabetes (70/30 split) for :class:`~skdp.DPRidge` with each of its solvers,
:class:`~skdp.DPLasso` and :class:`~skdp.DPSparseLinearRegression`, next to sklearn's ridge. delta =
1e-5, mean of 2 seeds, R^2 clipped at -1 in the plot. Public bounds fixed a priori: the label range
(25, 346) of the disease-progression score and ``data_norm = sqrt(d)`` for standardised rows (sklearn's
``StandardScaler`` fitted on the training rows, not private: it stands in for a public scaling, and the
privacy checked is each model's). The
constrained solvers use the default coefficient radius, which is loose here; regression with few rows
is where the choice of solver matters most.
"""

import math

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLasso, DPRidge, DPSparseLinearRegression, list_solvers

X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = np.clip(scaler.transform(X_train), -3, 3), np.clip(scaler.transform(X_test), -3, 3)
d = X.shape[1]
EPS = [0.5, 1, 2, 5]
SEEDS = [0, 1]
LABELS = (25.0, 346.0)

SOLVERS = [row["solver"] for row in list_solvers() if "squared" in row["losses"] and row["constraint"] != "l0"]
models = {s: (lambda e, r, s=s: DPRidge(e, solver=s, data_norm=math.sqrt(d), label_bound=LABELS, random_state=r))
          for s in SOLVERS}
models["DPLasso (noisy_sfw)"] = lambda e, r: DPLasso(e, coef_norm=300.0, feature_bound=3.0, label_bound=LABELS,
                                                     random_state=r)
models["DPSparseLinearRegression (noisy_iht, s=5)"] = lambda e, r: DPSparseLinearRegression(
    e, n_nonzero_coefs=5, feature_bound=3.0, label_bound=LABELS, random_state=r)

fig, ax = plt.subplots(figsize=(7, 4.5))
for name, make in models.items():
    r2 = []
    for e in EPS:
        scores = []
        for r in SEEDS:
            m = make(e, r).fit(X_train, y_train)
            assert m.privacy_spent_.epsilon <= e * (1 + 1e-9)
            scores.append(m.score(X_test, y_test))
        r2.append(np.mean(scores))
    ax.plot(EPS, np.maximum(r2, -1), marker="o", label=name)
    print(f"{name:<42}" + " ".join(f"{v:.3f}" for v in r2))
ax.axhline(Ridge().fit(X_train, y_train).score(X_test, y_test), color="k", ls="--", label="sklearn (non-private)")
ax.set_xscale("log")
ax.set_ylim(-1.05, 0.5)
ax.set_xlabel("epsilon (delta = 1e-5)")
ax.set_ylabel("test R^2 (clipped at -1)")
ax.set_title("diabetes")
ax.legend(fontsize=6, ncol=2)
fig.tight_layout()
plt.show()
