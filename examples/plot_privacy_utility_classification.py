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

One panel per family of solvers, grouped by what the registry says they do: full-batch solvers, mini-batch
(Poisson-sampled) solvers, solvers over a constrained set (an L1, l_p or L1|L2 ball), and the other
classifiers. Every panel repeats the default solver (thick black line), sklearn's accuracy (dashed) and the
majority-class rate (dotted: the accuracy of always predicting the commoner label, which needs no data at
all). A curve near or below the dotted line, or flat in epsilon, has learned little at these budgets on 398
training rows: the constrained solvers' default ball radius and step schedule are set for large
``n * epsilon`` (see each solver's docstring). The script prints which solvers reach the majority-class rate
at some budget and which do not move with epsilon.
"""

import math

import matplotlib.pyplot as plt
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator
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

def family(row):
    """The panel of a solver, from its registry row: constrained set, mini-batch, or full-batch."""
    if row["constraint"] != "l2":
        return "constrained set (L1, l_p, L1|L2 ball)"
    return "mini-batch (Poisson-sampled)" if "batch_size" in row["options"] else "full-batch"


rows = {row["solver"]: row for row in list_solvers(DPLogisticRegression)}
DEFAULT = next(s for s, row in rows.items() if row["default"])
ORDER = ["full-batch", "mini-batch (Poisson-sampled)", "constrained set (L1, l_p, L1|L2 ball)", "other classifiers"]
panels = {title: [] for title in ORDER}
for name in models:
    panels[family(rows[name]) if name in rows else "other classifiers"].append(name)
panels = {title: names for title, names in panels.items() if names}

accuracy = {}
for name, make in models.items():
    accs = []
    for e in EPS:
        scores = []
        for r in SEEDS:
            m = make(e, r).fit(X_train, y_train)
            assert m.privacy_spent_.epsilon <= e * (1 + 1e-9)
            scores.append(m.score(X_test, y_test))
        accs.append(np.mean(scores))
    accuracy[name] = accs
    print(f"{name:<45}" + " ".join(f"{a:.3f}" for a in accs))
sklearn_acc = LogisticRegression().fit(X_train, y_train).score(X_test, y_test)
majority = max(np.mean(y_test), 1 - np.mean(y_test))

fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 4.8), sharey=True)
colours = plt.get_cmap("tab10").colors
for ax, (title, names) in zip(axes, panels.items()):
    ax.axhline(sklearn_acc, color="0.35", ls="--", lw=1, label="sklearn (non-private)")
    ax.axhline(majority, color="tab:red", ls=":", lw=1.2, label="majority class")
    ax.plot(EPS, accuracy[DEFAULT], color="k", lw=3, marker="o", label=f"{DEFAULT} (default)")
    for colour, name in zip(colours, [n for n in names if n != DEFAULT]):
        ax.plot(EPS, accuracy[name], color=colour, lw=1.4, marker="o", ms=4, label=name)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(EPS))
    ax.xaxis.set_major_formatter(FixedFormatter([f"{e:g}" for e in EPS]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("epsilon (delta = 1e-5)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    # each panel's solvers in a legend under it, never over the data; the three reference lines once, on top
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[3:], labels[3:], fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
axes[0].set_ylabel("test accuracy (breast_cancer)")
fig.legend(handles[:3], labels[:3], loc="upper center", ncol=3, fontsize=8, frameon=False)
fig.tight_layout(rect=(0, 0, 1, 0.93))

low = [name for name, accs in accuracy.items() if min(accs) <= majority]
flat = [name for name, accs in accuracy.items() if max(accs) - min(accs) < 0.01]
print(f"majority-class rate {majority:.3f}; at or below it at some budget: {', '.join(low) or 'none'}; "
      f"flat in epsilon (range < 0.01): {', '.join(flat) or 'none'}")
plt.show()
