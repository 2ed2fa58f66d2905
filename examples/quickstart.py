"""Quickstart: a DP logistic regression next to sklearn's non-private one.

The row-norm bound and the class set are fixed *before* looking at the data:
after standardisation a row of d features has squared norm d on average, so
``data_norm = sqrt(d)`` is a natural public choice (rows above it are clipped).
The scaler here is fitted on the training data for brevity; in a real private
pipeline fit it on public data or use fixed, known scales.
"""

import math

from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

public_norm = math.sqrt(X.shape[1])
print(f"{'model':<38} {'test accuracy':>13}  privacy spent")
sk = LogisticRegression().fit(X_train, y_train)
print(f"{'sklearn LogisticRegression':<38} {sk.score(X_test, y_test):>13.3f}  none (not private)")
for eps in (0.5, 1.0, 2.0):
    dp = DPLogisticRegression(epsilon=eps, delta=1e-5, data_norm=public_norm, classes=[0, 1],
                              random_state=0).fit(X_train, y_train)
    label = f"DPLogisticRegression(epsilon={eps}, {dp.solver_})"
    print(f"{label:<38} {dp.score(X_test, y_test):>13.3f}  {dp.privacy_spent_!s}")
