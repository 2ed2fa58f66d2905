"""
Your own data: a mixed-type census table, private end to end
=============================================================

A pandas DataFrame with raw-scale numbers and string categories, as data
arrives: the census-like table of :func:`skdp.datasets.make_census_like`
(generated, shaped like the Adult census data; nothing is downloaded).

* The numbers go through ``DPStandardScaler`` with **public** bounds, the
  published ranges of :data:`skdp.datasets.CENSUS_LIKE_BOUNDS` (a codebook's
  ranges, never the data's minimum and maximum);
* the strings go through ``DPOneHotEncoder()``, which selects each column's
  categories privately (rare categories fall into an infrequent column);
* a ``ColumnTransformer`` puts them side by side in front of
  ``DPLogisticRegression``, and ``set_pipeline_budget`` gives the whole
  pipeline one budget, split across the three private steps.

The pipeline is then tuned with ``DPGridSearchCV`` (``cv=3``, one total
budget for every fold, candidate, refit and the selection), and compared with
scikit-learn's same pipeline (``StandardScaler`` + ``OneHotEncoder`` +
``LogisticRegression``) over a range of epsilons. Every privacy number is
printed by the script (``pipeline_privacy_spent`` and the search's
``privacy_spent_``), finite because every step that reads the rows is
private.

With ``--save``, writes ``census_pipeline.png`` next to this script (needs matplotlib).
"""

import os
import sys
import warnings

import numpy as np
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skdp import DPLogisticRegression, DPStandardScaler, pipeline_privacy_spent, set_pipeline_budget
from skdp.datasets import CENSUS_LIKE_BOUNDS, make_census_like
from skdp.model_selection import DPGridSearchCV
from skdp.preprocessing import DPOneHotEncoder

DELTA = 1e-6  # well below 1 / n
X, y = make_census_like(30000, random_state=0)
X_train, y_train, X_test, y_test = X.iloc[:20000], y.iloc[:20000], X.iloc[20000:], y.iloc[20000:]
numeric = list(CENSUS_LIKE_BOUNDS)
strings = [c for c in X.columns if c not in numeric]
print(f"{len(X_train)} training rows: {len(numeric)} numeric columns {numeric}, {len(strings)} string columns")

# public bounds, one (lower, upper) pair per numeric column, from the codebook
lower = np.array([CENSUS_LIKE_BOUNDS[c][0] for c in numeric], dtype=float)
upper = np.array([CENSUS_LIKE_BOUNDS[c][1] for c in numeric], dtype=float)


def private_pipeline():
    return make_pipeline(
        make_column_transformer((DPStandardScaler(bounds=(lower, upper)), numeric), (DPOneHotEncoder(), strings)),
        DPLogisticRegression())


def fit_private(epsilon):
    pipe = set_pipeline_budget(private_pipeline(), epsilon, DELTA, n_samples=len(X_train),
                               feature_names=list(X_train.columns))
    return pipe.fit(X_train, y_train)


sklearn_pipe = make_pipeline(
    make_column_transformer((StandardScaler(), numeric), (OneHotEncoder(handle_unknown="ignore"), strings)),
    LogisticRegression(max_iter=1000)).fit(X_train, y_train)
sklearn_acc = sklearn_pipe.score(X_test, y_test)

# one private pipeline at epsilon = 1
pipe = fit_private(1.0)
encoder = pipe[0].named_transformers_["dponehotencoder"]
print(f"private pipeline, epsilon=1: test accuracy {pipe.score(X_test, y_test):.3f} "
      f"(scikit-learn's same pipeline {sklearn_acc:.3f})")
print(f"  privacy spent: {pipeline_privacy_spent(pipe)}")
print(f"  the encoder kept {sum(map(len, encoder.categories_))} categories; the model read "
      f"{pipe[-1].n_features_in_} columns")

# tuned privately: every fold, candidate, the refit and the selection inside one budget
search = DPGridSearchCV(private_pipeline(), {"dplogisticregression__alpha": [1e-4, 1e-2]}, epsilon=1.0,
                        delta=DELTA, cv=3)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    search.fit(X_train, y_train)
print(f"DPGridSearchCV(cv=3): best {search.best_params_}, test accuracy {search.score(X_test, y_test):.3f}")
print(f"  privacy spent by the whole search: {search.privacy_spent_}")

# accuracy against epsilon (mean of 3 fits each)
epsilons = [0.1, 0.3, 1.0, 3.0]
accuracy = [np.mean([fit_private(eps).score(X_test, y_test) for _ in range(3)]) for eps in epsilons]
print(f"{'epsilon':>8} {'accuracy':>9}")
for eps, acc in zip(epsilons, accuracy):
    print(f"{eps:>8g} {acc:>9.3f}")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.semilogx(epsilons, accuracy, "o-", color="#48c", label="private pipeline (one budget)")
    ax.axhline(sklearn_acc, color="#888", ls="--", label="scikit-learn's same pipeline")
    ax.set_xlabel("epsilon of the whole pipeline (delta = 1e-6)")
    ax.set_ylabel("test accuracy")
    ax.set_title("census-like table: DP scaler + DP one-hot + DP logistic regression", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    if "--save" in sys.argv:  # the docs gallery captures the figure itself
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "census_pipeline.png")
        fig.savefig(out, dpi=100)
        print("wrote", out)
