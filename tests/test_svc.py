"""DPLinearSVC: binary and one-vs-rest fits within the budget (its solver nsgd_moreau: test_solvers_sgd.py).
"""

import numpy as np

from skdp import DPLinearSVC


def test_dplinearsvc_binary_and_one_vs_rest(breast_cancer):
    X, y = breast_cancer
    scores = [DPLinearSVC(epsilon=1.0, data_norm=6.0, classes=[0, 1], random_state=s).fit(X, y).score(X, y)
              for s in range(5)]
    assert np.mean(scores) > 0.7  # majority class: 0.63
    clf = DPLinearSVC(epsilon=1.0, data_norm=6.0, classes=[0, 1], random_state=0).fit(X, y)
    assert clf.privacy_spent_.epsilon <= 1.0
    ovr = DPLinearSVC(epsilon=1.0, data_norm=6.0, classes=[0, 1, 2], random_state=0).fit(X, y % 3)
    assert ovr.coef_.shape == (3, X.shape[1]) and ovr.privacy_spent_.epsilon <= 1.0
