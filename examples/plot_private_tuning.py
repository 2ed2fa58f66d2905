"""
Private hyperparameter tuning: what non-private tuning really costs
===================================================================

Three ways to pick ``alpha`` for a DP logistic regression on breast_cancer,
each compared over 20 seeds:

1. non-private tuning: sklearn's GridSearchCV over DP fits. The ledger records
   every fit (3 candidates x 5 folds + refit), but choosing the best candidate
   reads the validation folds without noise, so the true cost is unbounded;
2. DPGridSearchCV with the same total budget as the fixed default (epsilon = 2);
3. a fixed default (alpha = 0.01) at epsilon = 2.

The features are standardised by sklearn's ``StandardScaler`` fitted on the
training rows, which is **not** private (its exact means would be published
with a model); it stands in for a public scaling so that the comparison is
about tuning. The privacy printed is that of the model fits and the selection,
not of the scaling: for a pipeline whose every step is private, put a
``DPStandardScaler`` in front of the model (``DPGridSearchCV`` accepts such a
Pipeline). The plain searches leave the model's ``random_state`` at ``None``:
a fixed seed would be copied by ``clone`` into every candidate and fold, so
their fits would share noise and ``search_privacy_cost`` would report them as
unbounded.

With ``--save``, writes ``private_tuning.png`` next to this script (needs matplotlib).
"""

import math
import os
import sys

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, PrivacyLedger
from skdp.model_selection import DPGridSearchCV, search_privacy_cost

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

base = DPLogisticRegression(epsilon=2.0, data_norm=math.sqrt(X.shape[1]), classes=[0, 1])
grid = {"alpha": [0.001, 0.01, 0.1]}
seeds = range(20)

ledger = PrivacyLedger(math.inf, 1e-5)  # records one plain search, to show what it spends
plain = []
for s in seeds:
    search = GridSearchCV(base, grid, cv=5)  # random_state=None: fresh noise in every fit
    if s == 0:
        search.fit(X_train, y_train, privacy_ledger=ledger)
    else:
        search.fit(X_train, y_train)
    plain.append(search.score(X_test, y_test))
plain_cost = search_privacy_cost(GridSearchCV(base, grid, cv=5), X_train, y_train)
private = [DPGridSearchCV(base, grid, epsilon=2.0, random_state=s).fit(X_train, y_train).score(X_test, y_test)
           for s in seeds]
fixed = [base.set_params(alpha=0.01, random_state=s).fit(X_train, y_train).score(X_test, y_test) for s in seeds]

rows = [
    ("GridSearchCV over DP fits", np.mean(plain), f"fits alone {plain_cost}; selection unaccounted (unbounded)"),
    ("DPGridSearchCV, epsilon=2", np.mean(private), "(epsilon=2, delta=1e-05) for the search (scaling not private)"),
    ("fixed alpha=0.01, epsilon=2", np.mean(fixed), "(epsilon=2, delta=1e-05) for the fit (scaling not private)"),
]
print(f"{'strategy':<30}{'accuracy':>10}  privacy")
for name, acc, cost in rows:
    print(f"{name:<30}{acc:>10.3f}  {cost}")
print(f"(the ledger recorded {ledger.n_fits} fits of the plain search, priced at {ledger.spent()})")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(7, 3))
    names = [r[0] for r in rows]
    ax.barh(names, [r[1] for r in rows], color=["#c44", "#48c", "#888"])
    ax.set_xlim(0.8, 1.0)
    ax.set_xlabel("test accuracy (breast_cancer)")
    ax.set_title(f"plain search: {plain_cost.epsilon:.1f}+ epsilon (selection unbounded) vs 2.0 for the others",
                 fontsize=9)
    fig.tight_layout()
    if "--save" in sys.argv:  # the docs gallery captures the figure itself
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "private_tuning.png")
        fig.savefig(out, dpi=100)
        print("wrote", out)
