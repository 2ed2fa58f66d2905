"""Plain helpers shared by several test files (imported, never collected: tests do not import each other).

The black-box privacy test used throughout the suite: fit on two replace-one
neighbours that differ in one boundary "canary" row, many seeded fits per
world, and turn the separability of one released score into an empirical lower
bound on epsilon (Clopper-Pearson, :func:`skdp.audit.epsilon_lower_bound`). It
must not exceed the claimed epsilon; the same test on a deliberately
under-noised mechanism (the ``under_noise`` fixture of ``conftest.py``) must
exceed it: that is the evidence the test has power.
"""

import numpy as np

from skdp import DPLogisticRegression, DPRidge
from skdp.audit import epsilon_lower_bound
from skdp.losses import LogisticLoss
from skdp.penalties import L2Penalty, NormBall
from skdp.solvers import PublicProblem

N_FITS = 300  # per world; half choose the threshold, half estimate the rates
CLAIM = 1.0
DELTA = 1e-5
UNDER = 50  # positive controls: noise divided by this

#: the solvers the estimator-level checks of several files run (each file: one estimator or solver family)
CORE_SOLVERS = ["dp_gd", "output_pert", "obj_pert", "dp_svrg"]


#: sklearn's sample-weight equivalence checks fit integer weights and the rows repeated that many times with
#: the same seed and require the same predictions. No DP estimator can pass them: its noise and schedule
#: depend on the public n (the number of rows, not the sum of the weights), and every weight is bounded by
#: max_sample_weight (default 1). The equivalence skdp promises (integer weights == repeated rows in the
#: noiseless limit, for every estimator) is tested in test_sklearn_parity.py.
WEIGHT_EQUIVALENCE_CHECKS = {
    f"check_sample_weight_equivalence_on_{kind}_data": "a DP fit's noise depends on the public n; the "
                                                        "noiseless equivalence is in test_sklearn_parity.py"
    for kind in ("dense", "sparse")
}


def empirical_epsilon_lower_bound(s0, s1, delta=DELTA, level=0.025):
    """Lower bound on epsilon from scores in world 0 (s0) and world 1 (s1): skdp.audit's test.

    Threshold and orientation chosen on the first halves, Clopper-Pearson
    bounds (each at ``level``) on the second halves.
    """
    return epsilon_lower_bound(s0, s1, delta, confidence=1 - 2 * level)["epsilon"]


def canary_worlds(kind):
    """Two neighbours: 40 background rows on features 0, 1 and a canary ``(0, 0, +-1)`` with the same label.

    ``kind="clf"``: labels in {0, 1} (canary label 1); ``kind="reg"``: real labels (canary label 1.0).
    The canary's direction is one no other row uses, so the fitted coefficient 2 carries its influence.
    """
    rng = np.random.RandomState(0)
    n = 40
    Xb = np.zeros((n, 3))
    Xb[:, :2] = rng.uniform(-0.5, 0.5, size=(n, 2))
    if kind == "clf":
        yb = (Xb[:, 0] > 0).astype(int)
        label = 1
    else:
        yb = Xb[:, 0] - Xb[:, 1]
        label = 1.0
    worlds = []
    for sign in (-1.0, 1.0):
        X = np.vstack([Xb, [[0.0, 0.0, sign]]])
        y = np.append(yb, label)
        worlds.append((X, y))
    return worlds


def canary_scores(make, worlds, n_fits=N_FITS):
    """Coefficient 2 (the canary's direction) of ``make(seed).fit(X, y)`` for ``n_fits`` seeds in each world."""
    out = []
    for X, y in worlds:
        out.append(np.array([make(seed).fit(X, y).coef_.ravel()[2] for seed in range(n_fits)]))
    return out


def empirical_mu_lower_bound(s_in, s_out, threshold=0.0, level=0.025):
    """Lower bound on the mu of mu-GDP from scores of the canary world (s_in) and its neighbour (s_out).

    The test "score >= threshold means the canary world" is fixed in advance
    (the two worlds are mirror images, so the threshold is the midpoint, 0) and
    evaluated on every score; Clopper-Pearson upper bounds (each at ``level``,
    from :func:`skdp.audit.epsilon_lower_bound`) on its error rates turn into a
    mu below which no mu-GDP mechanism makes errors that small: mu-GDP needs
    ``FNR >= Phi(Phi^-1(1 - FPR) - mu)`` (Dong, Roth and Su 2022, Def. 2.6).
    """
    from scipy.stats import norm

    test = epsilon_lower_bound(s_in, s_out, 0.0, confidence=1 - 2 * level, threshold=threshold)
    fpr, fnr = test["fpr_upper"], test["fnr_upper"]
    return max(0.0, float(norm.isf(fpr) - norm.ppf(fnr))) if 0 < fpr < 1 and 0 < fnr < 1 else 0.0


# ------------------------------------------------------------------------------------------
# small estimators and problems used by several component files
# ------------------------------------------------------------------------------------------
def make_clf(**kw):
    """DPLogisticRegression on public bounds for ``clf_data`` (data_norm 3, classes [0, 1], seed 0)."""
    base = dict(data_norm=3.0, classes=[0, 1], random_state=0)
    base.update(kw)
    return DPLogisticRegression(**base)


def make_reg(**kw):
    """DPRidge on public bounds for ``reg_data`` (data_norm 2.5, label_bound 3, seed 0)."""
    base = dict(data_norm=2.5, label_bound=3.0, random_state=0)
    base.update(kw)
    return DPRidge(**base)


def ledger_clf(**kw):
    """DPLogisticRegression at epsilon 0.3 with no seed: fresh noise per fit, so a ledger composes them."""
    p = dict(epsilon=0.3, data_norm=3.0, classes=[0, 1])  # fresh noise per fit: the ledger composes them
    p.update(kw)
    return DPLogisticRegression(**p)


def planning_problem(n, d, loss=None, data_norm=1.0, radius=1.0, geometry_p=1.0, inf=None, clip=None,
                     label_bound=None, options=None):
    """A data-free problem (a PublicProblem, what planning reads): logistic loss and an l_p ball by default."""
    return PublicProblem(loss=loss or LogisticLoss(), penalty=L2Penalty(0.0), data_norm=data_norm,
                         label_bound=label_bound, coef_norm=radius, n_samples=n, n_features=d,
                         constraint=NormBall(geometry_p, radius), inf_norm_bound=inf, clip_norm=clip,
                         options=dict(options or {}))
