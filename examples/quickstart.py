"""Quickstart: a differentially private pipeline next to sklearn's non-private one.

Everything the private pipeline learns from the training rows is learned with
differential privacy: the feature scaling is a ``DPStandardScaler`` (private
means and scales) and the model a ``DPLogisticRegression``. One total budget is
split between the two steps by ``set_pipeline_budget``, and
``pipeline_privacy_spent`` reports the guarantee of the whole released pipeline,
the scaler included.

What is public, i.e. fixed without looking at the training rows:

* the class set ``{0, 1}``;
* the scaler's per-feature bounds. A real deployment takes them from domain
  knowledge (instrument ranges, clinical scales). Here that role is played by
  the dataset's published description: the summary table of its ``DESCR`` text,
  which was released with the dataset. The script reads the table from that
  text, never from the arrays, and widens each range by 10% on both sides.
  Those ranges were disclosed by the dataset's publisher; what this script
  adds to them is covered by the printed guarantee;
* nothing else: the model's row-norm bound is chosen privately
  (``data_norm="auto"``, the default), inside the same budget.

The DP steps get no ``random_state``: with the default ``None`` every fit draws
its noise from fresh OS entropy, so nobody reading this script can regenerate
the noise (a seed printed here would let anyone do that). The accuracies
therefore vary a little from run to run.
"""

import re

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, DPStandardScaler, pipeline_privacy_spent, set_pipeline_budget

data = load_breast_cancer()
X, y = data.data, data.target
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)

# Public bounds: the "Min Max" rows of the summary table in the dataset's description (30 features, in the
# order of the columns), widened by 10% of each range.
table = data.DESCR.split(":Summary Statistics:")[1].split(":Missing Attribute Values:")[0]
documented = np.array(re.findall(r"^\S.*?:\s+([-\d.]+)\s+([-\d.]+)\s*$", table, flags=re.M), dtype=float)
assert documented.shape == (X.shape[1], 2), "the dataset's description no longer has its summary table"
width = documented[:, 1] - documented[:, 0]
bounds = (documented[:, 0] - 0.1 * width, documented[:, 1] + 0.1 * width)

print(f"{'model':<48} {'test accuracy':>13}  privacy spent (whole pipeline)")
sk = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
print(f"{'sklearn StandardScaler + LogisticRegression':<48} {sk.score(X_test, y_test):>13.3f}  "
      "none (not private)")
for eps in (1.0, 2.0):
    pipe = make_pipeline(DPStandardScaler(bounds=bounds, clip_norm="auto"), DPLogisticRegression(classes=[0, 1]))
    # one total budget for both steps (split so that the accountant prices the pair at eps)
    set_pipeline_budget(pipe, epsilon=eps, delta=1e-5, n_samples=len(y_train), n_features=X.shape[1])
    pipe.fit(X_train, y_train)
    label = f"DPStandardScaler + DPLogisticRegression, eps={eps}"
    print(f"{label:<48} {pipe.score(X_test, y_test):>13.3f}  {pipeline_privacy_spent(pipe)!s}")
