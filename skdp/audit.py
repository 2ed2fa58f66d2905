"""Empirical privacy auditing: a canary membership test that any user can run.

A DP guarantee is a statement about two neighbouring datasets. :func:`audit`
builds the worst pair it can for the estimator's stated relation (replace-one:
one row swapped, ``n`` public): a small background dataset plus a **canary**
row on the norm boundary, on a direction no other row uses, against the same
dataset with the canary replaced by its mirror image (same label, opposite
sign), which moves that row's gradient by the largest amount the bound allows.
It fits the estimator many times on each world with independent seeds, scores
every fitted model by how it treats the canary (its output at the canary point
minus its output at the origin: the coefficient on the canary direction for a
linear model), and runs the hypothesis test "which world was this model
trained on?". For any threshold test, (epsilon, delta)-DP implies

    FPR + exp(epsilon) FNR >= 1 - delta   and   FNR + exp(epsilon) FPR >= 1 - delta,

so Clopper-Pearson upper bounds on the two error rates give a lower bound on
the epsilon the estimator really spends, valid with the stated confidence.
The threshold (and which world scores higher) is either given in advance or
chosen on the first half of the fits and evaluated once on the second half.

A lower bound above the claimed epsilon is evidence of a bug (an
under-calibrated noise, a bound read from the data). A lower bound below it
proves nothing by itself: the audit only has power where the canary test is
close to the worst case. ``noise_multiplier < 1`` runs the positive control
(every noise draw of the fits scaled down, through
:func:`skdp.privacy.mechanisms.scaled_noise`), which shows whether the audit
would have caught an under-noised solver in this setting.

:func:`audit_events` is the white-box complement: it replays one world's
released history in the other and tests every noisy release of a fit against
the privacy event it was priced as (see its docstring), so a solver whose
analysis is loose for the final model is still tested release by release.

Reference: the hypothesis-testing characterisation of (epsilon, delta)-DP
(Wasserman and Zhou 2010; Kairouz, Oh and Viswanath 2015) and the canary
audits of Jagielski, Ullman and Oprea 2020 and Nasr et al. 2021, which turn
Clopper-Pearson bounds on the error rates into an epsilon lower bound; see the
skdp documentation page :doc:`/user_guide/verifying`.

References
----------
.. [1] L. Wasserman and S. Zhou, "A statistical framework for differential privacy", Journal of
   the American Statistical Association 105, 2010.
.. [2] P. Kairouz, S. Oh and P. Viswanath, "The composition theorem for differential privacy",
   ICML 2015; IEEE Transactions on Information Theory, 2017. <https://arxiv.org/abs/1311.0776>
.. [3] M. Jagielski, J. Ullman and A. Oprea, "Auditing differentially private machine learning:
   how private is private SGD?", NeurIPS 2020.
.. [4] M. Nasr, S. Song, A. Thakurta, N. Papernot and N. Carlini, "Adversary instantiation:
   lower bounds for differentially private machine learning", IEEE S&P 2021.
   <https://doi.org/10.1109/SP40001.2021.00069>
.. [5] T. Steinke, M. Nasr and M. Jagielski, "Privacy auditing with one (1) training run",
   NeurIPS 2023. <https://arxiv.org/abs/2305.08846>
.. [6] D. Kifer, A. Smith and A. Thakurta, "Private convex empirical risk minimization and
   high-dimensional regression", COLT 2012, PMLR 23.
   <https://proceedings.mlr.press/v23/kifer12.html>
"""

import math
import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import beta as _beta
from scipy.stats import chi2 as _chi2
from scipy.stats import gamma as _gamma
from scipy.stats import norm as _norm
from scipy.optimize import brentq
from sklearn.base import clone, is_classifier
from sklearn.utils import check_random_state

from ._random import generator
from .privacy.mechanisms import record_draws, scaled_noise
from .linear_model import DPLinearSVC, DPLogisticRegression, DPRidge, DPSparseLinearRegression
from .privacy import (ApproxDPEvent, BoundedRangeEvent, GaussianEvent, L2LaplaceEvent, LaplaceEvent,
                      PoissonGaussianEvent, PrivacyBudget, ZCDPEvent)
from .privacy.objective import objective_perturbation_gaussian
from .solvers import SOLVERS
from .solvers.perturbation import ObjectivePerturbationSVRG

__all__ = ["AuditResult", "EventAuditResult", "EventBound", "audit", "audit_events", "audit_solvers",
           "audit_solvers_events", "epsilon_lower_bound", "gdp_mu_for"]


# ---------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------
def _cp_upper(k, n, level):
    """One-sided Clopper-Pearson upper bound on a rate with ``k`` successes out of ``n``."""
    return 1.0 if k >= n else float(_beta.ppf(1 - level, k + 1, n - k))


def _eps_from_rates(fpr, fnr, delta):
    vals = [0.0]
    for a, b in ((fpr, fnr), (fnr, fpr)):
        if a > 0 and 1 - delta - b > 0:
            vals.append(math.log((1 - delta - b) / a))
    return max(vals)


def _test_at(s_in, s_out, t, level):
    """(FPR bound, FNR bound, FPR, FNR) of 'score >= t means the canary world'."""
    fp, fn = int(np.sum(s_out >= t)), int(np.sum(s_in < t))
    n_out, n_in = len(s_out), len(s_in)
    return _cp_upper(fp, n_out, level), _cp_upper(fn, n_in, level), fp / n_out, fn / n_in


def _cp_upper_all(k, n, level):
    k = np.asarray(k)
    out = np.ones(k.shape)
    ok = k < n
    out[ok] = _beta.ppf(1 - level, k[ok] + 1, n - k[ok])
    return out


def _eps_all(s_in, s_out, ts, level, delta):
    """:func:`_eps_from_rates` of "score >= t means the canary world" for every ``t`` in ``ts``."""
    fp = len(s_out) - np.searchsorted(np.sort(s_out), ts, side="left")
    fn = np.searchsorted(np.sort(s_in), ts, side="left")
    fpu, fnu = _cp_upper_all(fp, len(s_out), level), _cp_upper_all(fn, len(s_in), level)
    vals = np.zeros(ts.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        for a, b in ((fpu, fnu), (fnu, fpu)):
            ok = (a > 0) & (1 - delta - b > 0)
            vals = np.where(ok, np.maximum(vals, np.log(np.where(ok, 1 - delta - b, 1.0) / np.where(ok, a, 1.0))),
                            vals)
    return vals


def epsilon_lower_bound(s_in, s_out, delta, confidence=0.95, threshold=None):
    """Empirical epsilon lower bound from scores of the two worlds.

    Parameters
    ----------
    s_in, s_out : arrays of scores of models fitted with the canary and with its replacement.
    delta : float
        The claimed delta.
    confidence : float, default=0.95
        Both Clopper-Pearson bounds hold together with this probability
        (each at ``(1 - confidence) / 2``).
    threshold : float or None
        ``None``: choose the threshold and the orientation on the first half of
        each world's scores, evaluate on the second half. A number: "score >=
        threshold" means the canary world, evaluated on all scores.

    Returns
    -------
    dict with ``epsilon``, ``threshold``, ``orientation`` (+1: the canary
    world scores higher), ``fpr``, ``fnr`` (point estimates), ``fpr_upper``,
    ``fnr_upper`` and ``n_eval`` (scores per world the bound is computed from).
    """
    s_in, s_out = np.asarray(s_in, dtype=float), np.asarray(s_out, dtype=float)
    level = (1 - confidence) / 2
    if threshold is None:
        h_in, h_out = len(s_in) // 2, len(s_out) // 2
        c_in, c_out, e_in, e_out = s_in[:h_in], s_out[:h_out], s_in[h_in:], s_out[h_out:]
        cands = np.unique(np.concatenate([c_in, c_out]))
        # every (threshold, orientation) at once: counts by binary search, bounds by vectorised beta quantiles;
        # ties go to the smallest threshold, then orientation +1 (a fixed, data-independent rule)
        vals = np.column_stack([_eps_all(sgn * c_in, sgn * c_out, sgn * cands, level, delta) for sgn in (1.0, -1.0)])
        k = int(np.argmax(vals))
        threshold, orientation = cands[k // 2], (1.0, -1.0)[k % 2]
    else:
        e_in, e_out, orientation = s_in, s_out, 1.0
    fpu, fnu, fpr, fnr = _test_at(orientation * e_in, orientation * e_out, orientation * threshold, level)
    return {"epsilon": _eps_from_rates(fpu, fnu, delta), "threshold": float(threshold),
            "orientation": int(orientation), "fpr": fpr, "fnr": fnr, "fpr_upper": fpu, "fnr_upper": fnu,
            "n_eval": min(len(e_in), len(e_out))}


def _gdp_mu_lower(fpr_upper, fnr_upper):
    """Largest mu ruled out as too small: mu-GDP needs ``FNR >= Phi(Phi^-1(1 - FPR) - mu)``."""
    vals = [0.0]
    for a, b in ((fpr_upper, fnr_upper), (fnr_upper, fpr_upper)):
        if 0 < a < 1 and 0 < b < 1:
            vals.append(float(_norm.isf(a) - _norm.ppf(b)))
    return max(vals)


def gdp_mu_for(epsilon, delta):
    """The ``mu`` whose mu-GDP curve passes through ``(epsilon, delta)`` (Dong-Roth-Su, Cor. 2.13).

    ``delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2)``; a
    Gaussian mechanism calibrated to ``(epsilon, delta)`` is at most this
    ``mu``-GDP, so an audit's ``mu`` lower bound above it is a violation.
    """
    if delta <= 0:
        return 0.0

    def gap(mu):
        return _norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * _norm.cdf(-epsilon / mu - mu / 2) - delta

    return float(brentq(gap, 1e-6, 100.0))


# ---------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------
@dataclass
class AuditResult:
    """What :func:`audit` found. ``passed`` is ``epsilon_lower_bound <= claimed_epsilon``."""

    estimator: str
    claimed_epsilon: float
    claimed_delta: float
    epsilon_lower_bound: float
    confidence: float
    n_fits: int
    mu_lower_bound: float
    claimed_mu: float
    threshold: float
    orientation: int
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    noise_multiplier: float
    elapsed: float
    scores_in: np.ndarray = field(repr=False)
    scores_out: np.ndarray = field(repr=False)

    @property
    def passed(self):
        return self.epsilon_lower_bound <= self.claimed_epsilon

    def __repr__(self):
        control = "" if self.noise_multiplier == 1 else f", POSITIVE CONTROL: noise x {self.noise_multiplier:g}"
        verdict = "consistent with the claim" if self.passed else "VIOLATES the claim"
        return (
            f"AuditResult({self.estimator}{control})\n"
            f"  claimed (epsilon, delta) = ({self.claimed_epsilon:g}, {self.claimed_delta:g})\n"
            f"  empirical epsilon >= {self.epsilon_lower_bound:.3f} with {self.confidence:.0%} confidence: {verdict}\n"
            f"  mu-GDP >= {self.mu_lower_bound:.3f} (a Gaussian mechanism at the claim is "
            f"{self.claimed_mu:.3f}-GDP)\n"
            f"  {self.n_fits} fits per world; FPR {self.fpr:.3f} (<= {self.fpr_upper:.3f}), "
            f"FNR {self.fnr:.3f} (<= {self.fnr_upper:.3f}) at threshold {self.threshold:.4g}; "
            f"{self.elapsed:.1f} s"
        )

    def plot(self, ax=None, bins=40):
        """Histograms of the two worlds' scores and the threshold (needs matplotlib)."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("AuditResult.plot needs matplotlib (pip install 'skdp[examples]').") from exc
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        lo = min(self.scores_in.min(), self.scores_out.min())
        hi = max(self.scores_in.max(), self.scores_out.max())
        edges = np.linspace(lo, hi if hi > lo else lo + 1, bins + 1)
        ax.hist(self.scores_in, bins=edges, alpha=0.6, label="with the canary")
        ax.hist(self.scores_out, bins=edges, alpha=0.6, label="canary replaced")
        ax.axvline(self.threshold, color="k", linestyle="--", label="threshold")
        ax.set_xlabel("score (model output at the canary minus at the origin)")
        ax.set_ylabel("fits")
        ax.set_title(f"{self.estimator}: epsilon >= {self.epsilon_lower_bound:.2f} "
                     f"(claimed {self.claimed_epsilon:g})")
        ax.legend()
        return ax


# ---------------------------------------------------------------------------------------
# the canary test
# ---------------------------------------------------------------------------------------
def _public_norm(est):
    params = est.get_params(deep=False)
    for key in ("data_norm", "feature_bound"):
        v = params.get(key)
        if isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
            return float(v)
    return None


def _canary_label(est, y):
    if is_classifier(est):
        classes = est.get_params(deep=False).get("classes")
        return (np.unique(y) if classes is None else np.asarray(classes))[-1]
    lb = est.get_params(deep=False).get("label_bound")
    if isinstance(lb, Real) and not isinstance(lb, bool):
        return float(lb)
    if isinstance(lb, (tuple, list)) and len(lb) == 2:
        return float(lb[1])
    return float(np.max(np.abs(y))) if len(y) else 1.0


def _default_background(est, norm, rng):
    n = 40
    X = rng.uniform(-0.5, 0.5, size=(n, 2)) * (norm / math.sqrt(2))
    y = (X[:, 0] > 0).astype(int) if is_classifier(est) else X[:, 0] - X[:, 1]
    return X, y


def _score(model, points):
    if is_classifier(model) and hasattr(model, "decision_function"):
        out = np.asarray(model.decision_function(points), dtype=float)
    elif is_classifier(model) and hasattr(model, "predict_proba"):
        out = np.asarray(model.predict_proba(points), dtype=float)[:, -1]
    else:
        out = np.asarray(model.predict(points), dtype=float)
    out = out.reshape(len(points), -1)[:, -1]
    return float(out[0] - out[1])


def _canary_worlds(X, y, norm, label):
    """The two neighbours: the background with a zero column appended, plus the canary ``+norm e_d`` (world 0)
    or its mirror image ``-norm e_d`` (world 1), both with ``label``."""
    n, d = X.shape
    background = np.hstack([X, np.zeros((n, 1))])
    worlds = []
    for sign in (1.0, -1.0):
        row = np.zeros((1, d + 1))
        row[0, d] = sign * norm
        worlds.append((np.vstack([background, row]), np.append(y, label)))
    return worlds


def _fit_score(est, X, y, seed, points, multiplier):
    model = clone(est)
    if "random_state" in model.get_params(deep=False):
        model.set_params(random_state=int(seed))
    if multiplier == 1.0:
        model.fit(X, y)
    else:
        with scaled_noise(multiplier):
            model.fit(X, y)
    return _score(model, points)


def _check(name, value, kind, low=None, high=None):
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"{name} must be {kind.__name__ if isinstance(kind, type) else 'a number'}, "
                        f"got {value!r}.")
    if (low is not None and not value > low) or (high is not None and not value < high):
        raise ValueError(f"{name} must be in ({low}, {high}), got {value!r}.")


def audit(estimator, X=None, y=None, *, n_fits=500, canary_norm=None, canary_label=None, threshold=None,
          confidence=0.95, claimed_epsilon=None, claimed_delta=None, noise_multiplier=1.0, n_jobs=None,
          random_state=0, verbose=0):
    """Empirical epsilon lower bound of ``estimator`` by the canary membership test.

    Parameters
    ----------
    estimator : estimator
        Any skdp estimator, or any sklearn-compatible estimator that claims
        DP (pass ``claimed_epsilon`` / ``claimed_delta`` if it has no
        ``epsilon`` / ``delta`` parameters). It is cloned; each fit gets its
        own seed through ``random_state`` when it has that parameter.
    X, y : background data or None
        Rows every world shares (``None``: 40 synthetic rows in two features,
        well inside the norm bound). A column is appended for the canary
        direction, zero in every background row.
    n_fits : int, default=500
        Fits per world. With ``threshold=None`` half choose the threshold and
        half estimate the error rates, so the largest provable lower bound is
        about ``log(n_fits / 7.4)`` at 95% confidence.
    canary_norm : float or None
        Size of the canary's entry. ``None``: the estimator's public
        ``data_norm`` (or ``feature_bound``) when it is a number, else 1. A
        larger value is clipped by the estimator to its bound, which is still
        the boundary.
    canary_label : label or None
        ``None``: the last class (classifiers) or the upper label bound
        (regressors), which maximises the canary's gradient.
    threshold : float or None, default=None
        Fixed in advance ("score >= threshold" means the canary world), or
        ``None`` to choose it on the first half of the fits.
    confidence : float, default=0.95
    claimed_epsilon, claimed_delta : float or None
        The claim to test; default the estimator's ``epsilon`` and ``delta``.
    noise_multiplier : float, default=1.0
        Positive control: every noise draw of the audited fits is scaled by
        this (``0.25`` = a quarter of the calibrated noise). The fitted models
        are discarded; an audit with power should then report a violation.
    n_jobs : int or None
        Fits run in parallel with joblib.
    random_state : int, RandomState instance or None, default=0
        Seeds the background data and the fits' seeds.
    verbose : int, default=0
        joblib progress messages.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> from skdp import DPLogisticRegression
    >>> from skdp.audit import audit
    >>> est = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], fit_intercept=False)
    >>> result = audit(est, n_fits=100)
    >>> result.passed
    True
    """
    _check("n_fits", n_fits, Integral, 3)
    _check("confidence", confidence, Real, 0.0, 1.0)
    _check("noise_multiplier", noise_multiplier, Real, 0.0)
    if threshold is not None:
        _check("threshold", threshold, Real)
    params = estimator.get_params(deep=False)
    eps = params.get("epsilon") if claimed_epsilon is None else claimed_epsilon
    delta = params.get("delta", 0.0) if claimed_delta is None else claimed_delta
    if eps is None:
        raise TypeError(f"{type(estimator).__name__} has no epsilon parameter; pass claimed_epsilon.")
    _check("claimed_epsilon", eps, Real, 0.0)
    _check("claimed_delta", delta, Real, -1e-300, 1.0)
    if canary_norm is not None:
        _check("canary_norm", canary_norm, Real, 0.0)
    # None: fresh OS entropy, never numpy's global generator
    rng = check_random_state(random_state) if random_state is not None else generator(np.random.SeedSequence())
    norm = float(canary_norm) if canary_norm is not None else (_public_norm(estimator) or 1.0)
    if X is None:
        X, y = _default_background(estimator, norm, rng)
    elif y is None:
        raise ValueError("y must be given with X.")
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or len(X) != len(y):
        raise ValueError(f"X must be 2-D with one row per label, got X {X.shape} and y {y.shape}.")
    label = _canary_label(estimator, y) if canary_label is None else canary_label
    worlds = _canary_worlds(X, y, norm, label)
    points = np.zeros((2, X.shape[1] + 1))
    points[0, -1] = norm
    seeds = rng.randint(0, 2**31 - 1, size=(2, int(n_fits)))
    start = time.perf_counter()
    jobs = [delayed(_fit_score)(estimator, Xw, yw, seed, points, float(noise_multiplier))
            for (Xw, yw), row in zip(worlds, seeds) for seed in row]
    scores = np.asarray(Parallel(n_jobs=n_jobs, verbose=verbose)(jobs), dtype=float).reshape(2, int(n_fits))
    elapsed = time.perf_counter() - start
    test = epsilon_lower_bound(scores[0], scores[1], delta, confidence, threshold)
    return AuditResult(
        estimator=_describe(estimator), claimed_epsilon=float(eps), claimed_delta=float(delta),
        epsilon_lower_bound=test["epsilon"], confidence=float(confidence), n_fits=int(n_fits),
        mu_lower_bound=_gdp_mu_lower(test["fpr_upper"], test["fnr_upper"]),
        claimed_mu=gdp_mu_for(float(eps), float(delta)), threshold=test["threshold"],
        orientation=test["orientation"], fpr=test["fpr"], fnr=test["fnr"], fpr_upper=test["fpr_upper"],
        fnr_upper=test["fnr_upper"], noise_multiplier=float(noise_multiplier), elapsed=elapsed,
        scores_in=scores[0], scores_out=scores[1],
    )


def _describe(est):
    params = est.get_params(deep=False)
    solver = params.get("solver")
    return f"{type(est).__name__}(solver={solver!r})" if solver is not None else type(est).__name__


# ---------------------------------------------------------------------------------------
# every solver
# ---------------------------------------------------------------------------------------
def _solver_cases(epsilon, delta):
    """Per solver: an estimator and background where the canary test is close to the worst case.

    The background rows are all zero (their gradients vanish, so only the
    canary moves the output), the loss is the squared loss where the solver
    supports it (at ``w = 0`` the canary's gradient ``y x`` has exactly the
    norm ``K B`` the gradient solvers' sensitivity uses; the logistic
    gradient there is only half of its bound), few iterations, full batches
    where a solver lets us choose, and a strong ridge penalty for the
    minimiser-perturbation solvers (their sensitivity ``2G/(n alpha)`` is then
    nearly attained). The canary test has little power against solvers whose
    analysis is loose for every pair of datasets (Frank-Wolfe's
    variance-reduction term, subsampled inner loops with a hidden state,
    objective perturbation's Jacobian term): their positive control needs
    far less than a quarter of the noise to be flagged.
    """

    X0, y0 = np.zeros((40, 2)), np.zeros(40)
    c0 = np.arange(40) % 2
    Xfw, yfw = np.zeros((11, 2)), np.zeros(11)
    common = dict(epsilon=epsilon, delta=delta, data_norm=1.0, fit_intercept=False)

    def ridge(solver, data=(X0, y0), alpha=0.1, coef_norm=3.0, **kw):
        return DPRidge(solver=solver, alpha=alpha, label_bound=1.0, coef_norm=coef_norm, **common, **kw), data

    cases = {
        "dp_gd": ridge("dp_gd", max_iter=3),
        "output_pert": ridge("output_pert", alpha=1.0, max_iter=40),
        "obj_pert": ridge("obj_pert", alpha=1.0, coef_norm=0.3),
        "dp_svrg": ridge("dp_svrg", max_iter=1),
        "dp_svrg_pp": ridge("dp_svrg_pp", max_iter=1),
        "dp_accmd": ridge("dp_accmd", max_iter=3),
        "noisy_sgd": ridge("noisy_sgd", max_iter=5, solver_options={"batch_size": 41}),  # q = 1
        "phased_sgd": ridge("phased_sgd", solver_options={"batch_size": 41}),  # one step per phase
        # smoothing is post-processing of the noisy gradient; it spreads the canary over neighbouring
        # coordinates, which a one-coordinate score would miss, so the audit runs the DP-SGD core
        "dp_lssgd": ridge("dp_lssgd", max_iter=5, solver_options={"batch_size": 41, "ls_sigma": 0.0}),
        # R rounds out of N: the canary's influence on w_R grows with R; N small keeps R near N
        "rrpsgd": ridge("rrpsgd", max_iter=3, solver_options={"batch_size": 41}),
        # momentum 1: every release is a clipped full-batch gradient, the bound 2 C1 is attained at w = 0
        "dp_srm": ridge("dp_srm", max_iter=3, solver_options={"batch_size": 41, "momentum": 1.0,
                                                              "iterate": "last"}),
        # a small radius makes the Lipschitz bound L0 = R (R r + B) nearly the canary's gradient R B
        "noisy_sfw": ridge("noisy_sfw", data=(np.zeros((3, 2)), np.zeros(3)), coef_norm=0.1,
                           solver_options={"batch_size": 2}),
        "noisy_sfw_lp": ridge("noisy_sfw_lp", data=(Xfw, yfw), solver_options={"batch_size": 8, "n_phases": 1}),
        "obj_pert_svrg": (DPLogisticRegression(solver="obj_pert_svrg", alpha=1.0, classes=[0, 1], coef_norm=0.3,
                                               **common), (X0, c0)),
        # a small radius makes the envelope's smoothing beta large, so its gradient is the hinge's, |x|
        "nsgd_moreau": (DPLinearSVC(solver="nsgd_moreau", alpha=0.1, classes=[0, 1], coef_norm=0.3, max_iter=2,
                                    solver_options={"batch_size": 41}, **common), (X0, c0)),
    }
    for solver in ("dp_ight", "dpsl_kt", "dp_fw_l1", "two_stage"):
        est = DPSparseLinearRegression(
            epsilon=epsilon, delta=delta, n_nonzero_coefs=2, solver=solver, clip_norm=1.0, label_bound=1.0,
            fit_intercept=False, max_iter={"dp_ight": 3, "dp_fw_l1": 1}.get(solver),
            solver_options={"two_stage": {"n_blocks": 4}}.get(solver))
        cases[solver] = (est, (X0, y0))
    # noisy_iht: the mirrored canary moves the scores |v_j| alike in both worlds, so its selections cannot be
    # seen; one iteration with most of the budget on the released values is the Gaussian step the canary
    # test can measure (the canary's column is among the 2 of 3 selected about 2/3 of the time)
    cases["noisy_iht"] = (DPSparseLinearRegression(
        epsilon=epsilon, delta=delta, n_nonzero_coefs=2, solver="noisy_iht", clip_norm=1.0, label_bound=1.0,
        fit_intercept=False, max_iter=1, solver_options={"selection_share": 0.05}), (X0, y0))
    # a registered solver without a tuned setting gets the generic one of its estimator family (its
    # defaults on the same zero background), so a new solver is audited without editing this function

    for name, s in SOLVERS.items():
        if name in cases:
            continue
        if s.constraint == "l0":
            cases[name] = (DPSparseLinearRegression(epsilon=epsilon, delta=delta, n_nonzero_coefs=2, solver=name,
                                                    clip_norm=1.0, label_bound=1.0, fit_intercept=False), (X0, y0))
        elif "squared" in s.losses:
            cases[name] = ridge(name)
        elif "logistic" in s.losses:
            cases[name] = (DPLogisticRegression(solver=name, alpha=0.1, classes=[0, 1], coef_norm=3.0, **common),
                           (X0, c0))
        elif "hinge" in s.losses:
            cases[name] = (DPLinearSVC(solver=name, alpha=0.1, classes=[0, 1], coef_norm=3.0, **common), (X0, c0))
    return cases


def _audited_solvers(cases, solvers):
    """The solver names to audit (every registered one when ``solvers`` is ``None``), each with a setting."""

    names = sorted(SOLVERS) if solvers is None else list(solvers)
    missing = [s for s in names if s not in cases]
    if missing:
        raise ValueError(f"No audit setting for solver(s) {missing}; known: {sorted(cases)}.")
    return names


def audit_solvers(epsilon=2.0, delta=1e-5, *, n_fits=2000, solvers=None, noise_multiplier=1.0, n_jobs=None,
                  random_state=0, verbose=0):
    """Audit every registered solver (or ``solvers``) in its worst-case canary setting.

    Returns a list of :class:`AuditResult` in the order of :func:`skdp.list_solvers`.
    Run it with ``noise_multiplier=0.25`` for the positive control.
    """
    cases = _solver_cases(epsilon, delta)
    results = []
    for name in _audited_solvers(cases, solvers):
        est, (X, y) = cases[name]
        results.append(audit(est, X, y, n_fits=n_fits, canary_norm=1.0, noise_multiplier=noise_multiplier,
                             n_jobs=n_jobs, random_state=random_state, verbose=verbose))
    return results


# ---------------------------------------------------------------------------------------
# the event-level audit
# ---------------------------------------------------------------------------------------
_GAUSSIAN = ("gaussian", "discrete_gaussian")
#: selections: Gumbel report-noisy-max, and the exact exponential mechanism of ``secure_noise`` (no noise values:
#: its scale is the one it recorded)
_SELECTIONS = ("gumbel", "exponential")
_MEASURE = {"gaussian": "mu", "objective": "mu", "selection": "epsilon", "laplace": "epsilon",
            "l2_laplace": "epsilon"}
#: relative slack for floating-point round-off in the shifts (not a statistical margin)
_ROUNDOFF = 1e-7
#: relative residual below which an objective perturbation's noise counts as inverted
_INVERT_TOL = 1e-6


@dataclass
class EventBound:
    """One row of :class:`EventAuditResult`: the tightest empirical bound of one kind of release.

    ``kind`` is ``"gaussian"`` (the Gaussian releases of the fit composed: a
    mu-GDP bound), ``"objective"`` (the Gaussian noise of one objective
    perturbation: mu of the noise term, against the ``mu`` that the noise's
    share of its ``ApproxDPEvent`` pays for), ``"selection"``
    (report-noisy-max: bounded-range epsilon of one selection), ``"laplace"``
    (L1 Laplace: epsilon of one release) or ``"l2_laplace"``. ``empirical`` is
    a lower confidence bound on the parameter of the mechanism the code ran;
    ``claimed`` is the same parameter computed from ``privacy_events_``.
    """

    kind: str
    measure: str
    claimed: float
    empirical: float
    releases: int
    detail: str = ""

    @property
    def exceeds(self):
        """The empirical bound is above the claim (beyond floating-point round-off): a violation."""
        return self.empirical > self.claimed * (1 + _ROUNDOFF)

    @property
    def ratio(self):
        return self.empirical / self.claimed if self.claimed > 0 else (math.inf if self.empirical > 0 else 0.0)


@dataclass
class EventAuditResult:
    """What :func:`audit_events` found: one :class:`EventBound` per kind of release, and what it could not pair.

    ``passed`` is true when no bound exceeds its claim. ``unpaired`` counts the
    draws of one fit that are in no row (a noise not added to a value the audit
    could see, and not an objective perturbation it could invert); their
    releases are not audited.
    """

    estimator: str
    bounds: list
    n_fits: int
    confidence: float
    noise_multiplier: float
    unpaired: int
    elapsed: float

    @property
    def passed(self):
        return not any(b.exceeds for b in self.bounds)

    @property
    def ratio(self):
        """Largest empirical / claimed over the rows (above 1: a violation)."""
        return max((b.ratio for b in self.bounds), default=0.0)

    def __repr__(self):
        control = "" if self.noise_multiplier == 1 else f", POSITIVE CONTROL: noise x {self.noise_multiplier:g}"
        verdict = "consistent with the claim" if self.passed else "VIOLATES the claim"
        lines = [f"EventAuditResult({self.estimator}{control}): {verdict}",
                 f"  {'release':<11}{'measure':>8}{'claimed':>10}{'empirical':>11}{'ratio':>7}  per fit"]
        for b in self.bounds:
            lines.append(f"  {b.kind:<11}{b.measure:>8}{b.claimed:>10.4g}{b.empirical:>11.4g}{b.ratio:>7.2f}"
                         f"  {b.releases}{'  ' + b.detail if b.detail else ''}")
        lines.append(f"  {self.n_fits} fit pairs, {100 * self.confidence:g}% confidence, {self.unpaired} unpaired "
                     f"draw(s) per fit; {self.elapsed:.1f} s")
        return "\n".join(lines)


def _scale_upper(kind, noises, level):
    """Upper confidence bound (at ``1 - level``) on the scale of noise of ``kind`` from the values drawn."""
    if kind in _GAUSSIAN:  # sum x^2 / sigma^2 ~ chi2(m)
        x = np.concatenate([np.ravel(v) for v in noises])
        return math.sqrt(float(np.sum(x * x)) / _chi2.ppf(level, x.size))
    if kind == "laplace":  # sum |x| / b ~ Gamma(m)
        x = np.concatenate([np.ravel(v) for v in noises])
        return float(np.sum(np.abs(x))) / _gamma.ppf(level, x.size)
    if kind == "l2_laplace":  # ||x|| / s ~ Gamma(d), independent draws
        total = sum(float(np.linalg.norm(v)) for v in noises)
        return total / _gamma.ppf(level, sum(np.size(v) for v in noises))
    if kind == "gumbel":  # mean of G^2 is c2 beta^2 with variance (c4 - c2^2) beta^4 / m: normal approximation
        x = np.concatenate([np.ravel(v) for v in noises])
        c2, c4 = 1.978111990655945, 23.561474084025605
        shrink = c2 - _norm.isf(level) * math.sqrt((c4 - c2 * c2) / x.size)
        return math.sqrt(float(np.mean(x * x)) / shrink) if shrink > 0 else math.inf
    raise ValueError(kind)  # pragma: no cover - every sampler kind is listed


def _objective_claim(model, epsilon, delta):
    """``mu`` of the Gaussian noise term of one objective perturbation priced ``ApproxDPEvent(epsilon, delta)``.

    The noise term of the replace-one objective perturbation (Kifer, Smith and
    Thakurta 2012, Thm 2, as calibrated by :mod:`skdp.privacy.objective`) is a
    Gaussian with ``sigma = 2 zeta f(eps_N, delta_N)`` for the noise's share
    ``(eps_N, delta_N)`` of the event, ``2 zeta`` being the replace-one
    sensitivity of the summed gradients; so it claims ``mu = 1 / f`` along the
    gradient shift. The share is ``(1 - jacobian_fraction) epsilon`` of the
    event, except for ``obj_pert_svrg``, whose event chains its first stage
    ``(eps / 2, delta / (2 e^(eps / 4)))`` with an output noise.
    """

    if getattr(model, "solver_", None) == "obj_pert_svrg":
        epsilon, _, delta, _ = ObjectivePerturbationSVRG.split(PrivacyBudget(epsilon, delta))
    jf = (getattr(model, "solver_options", None) or {}).get("jacobian_fraction", 0.5)
    sigma, _ = objective_perturbation_gaussian(0.5, 0.0, 1, 1.0, epsilon, delta, jf)  # 2 zeta = 1
    return 1.0 / sigma


def _claims(model):
    """Per kind: the claim of the fit's events (Gaussian: composed mu; others: one value per release, in order)."""

    mu2, gauss = 0.0, False
    per = {"selection": [], "laplace": [], "l2_laplace": [], "objective": []}
    for e in model.privacy_events_:
        if isinstance(e, GaussianEvent):
            mu2, gauss = mu2 + e.count * (e.sensitivity / e.sigma) ** 2, True
        elif isinstance(e, PoissonGaussianEvent):  # given the sampled rows: one row moves the sum by 2C
            mu2, gauss = mu2 + e.count * (2.0 / e.noise_multiplier) ** 2, True
        elif isinstance(e, ZCDPEvent):  # a Gaussian release is (mu^2 / 2)-zCDP
            mu2, gauss = mu2 + e.count * 2.0 * e.rho, True
        elif isinstance(e, BoundedRangeEvent):
            per["selection"] += [e.epsilon] * e.count
        elif isinstance(e, LaplaceEvent):
            per["laplace"] += [e.epsilon] * e.count
        elif isinstance(e, L2LaplaceEvent):
            per["l2_laplace"] += [e.epsilon] * e.count
        elif isinstance(e, ApproxDPEvent) and e.delta > 0:
            per["objective"] += [_objective_claim(model, e.epsilon, e.delta)] * e.count
    claims = {k: v for k, v in per.items() if v}
    if gauss:
        claims["gaussian"] = math.sqrt(mu2)
    return claims


def _fit_recorded(est, X, y, seed, multiplier, replay=None, fit_params=None):
    model = clone(est)
    if "random_state" in model.get_params(deep=False):
        model.set_params(random_state=int(seed))
    with record_draws(audit=True, replay=replay) as draws, scaled_noise(multiplier):
        model.fit(X, y, **(fit_params or {}))
    return model, draws


def _output(model):
    coef = np.ravel(np.asarray(model.coef_, dtype=float))
    return np.concatenate([coef, np.ravel(np.asarray(getattr(model, "intercept_", 0.0), dtype=float))])


def _replay_of(draws):
    """What world B replays of world A: every released value and every selection."""
    out = []
    for d in draws:
        if d.kind in _SELECTIONS:
            out.append({"index": d.audit["index"]})
        elif "released" in d.audit:
            out.append({"released": d.audit["released"]})
        else:
            out.append(None)
    return out


def _invert_objectives(est, X, y, seed, multiplier, replay, ts, draws_a, model_a, fit_params=None, max_iter=8):
    """Noises of the draws ``ts`` (not added to a visible value: objective perturbations) that make world B
    release world A's value, by Newton's method with a finite-difference Jacobian.

    Returns the shift of each draw's noise and the relative residual, or ``None`` when the release does not
    determine the noise (e.g. a minimiser on the boundary of its ball)."""
    later = [u for u in range(max(ts) + 1, len(draws_a)) if "query" in draws_a[u].audit]
    target = draws_a[later[0]].audit["query"].ravel() if later else _output(model_a)
    shapes = [draws_a[t].audit["noise"].shape for t in ts]
    cuts = np.cumsum([0] + [int(np.prod(sh)) for sh in shapes])

    def release(b):
        plan = list(replay)
        for i, t in enumerate(ts):
            plan[t] = {"noise": b[cuts[i]:cuts[i + 1]].reshape(shapes[i])}
        model, draws = _fit_recorded(est, X, y, seed, multiplier, plan, fit_params)
        return draws[later[0]].audit["query"].ravel() if later else _output(model)

    b0 = np.concatenate([draws_a[t].audit["noise"].ravel() for t in ts])
    b = b0.copy()
    h = 1e-6 * max(float(np.linalg.norm(b0)), 1e-12)
    tol = 1e-9 * max(1.0, float(np.linalg.norm(target)))
    r = release(b) - target
    for _ in range(max_iter):
        if np.linalg.norm(r) <= tol:
            break
        J = np.column_stack([(release(b + h * e) - target - r) / h for e in np.eye(b.size)])
        sv = np.linalg.svd(J, compute_uv=False)
        if not sv[-1] > 1e-5 * sv[0]:  # the release does not determine the noise (a constraint is active)
            return None
        b = b + np.linalg.lstsq(J, -r, rcond=None)[0]
        r = release(b) - target
    resid = float(np.linalg.norm(r)) / max(1.0, float(np.linalg.norm(target)))
    if not resid <= _INVERT_TOL:
        return None
    return [float(np.linalg.norm(b[cuts[i]:cuts[i + 1]] - b0[cuts[i]:cuts[i + 1]])) for i in range(len(ts))], resid


def audit_events(estimator, X=None, y=None, *, worlds=None, n_fits=20, canary_norm=None, canary_label=None,
                 confidence=0.95, noise_multiplier=1.0, fit_params=None, random_state=0):
    """Event-level audit: every noisy release of a fit, tested against the privacy event it was priced as.

    The fit is run on two replace-one neighbours with the recording point of
    :mod:`skdp.privacy.mechanisms` on (:func:`~skdp.privacy.mechanisms.record_draws`
    with ``audit=True``). World A runs normally; world B runs with the same
    seed and **world A's released history replayed**: each noisy value it
    releases is replaced by world A's, so both worlds compute every mechanism
    input on the same iterate, the same sampled rows and the same earlier
    selections, and the two noiseless values differ only through the rows the
    worlds differ in. For each release:

    * an additive Gaussian release: the shift ``||q_A - q_B||_2`` of its
      noiseless value over the noise's standard deviation; the releases of a
      fit compose to ``mu = sqrt(sum_t (shift_t / sigma_t)^2)``, compared with
      the ``mu`` of the fit's Gaussian events (``sensitivity / sigma`` each;
      ``2 / noise_multiplier`` for a Poisson-subsampled step, i.e. given the
      rows sampled, which the replay keeps; ``sqrt(2 rho)`` for zCDP);
    * a selection (report-noisy-max / exponential mechanism): the
      bounded-range epsilon ``(max_j D_j - min_j D_j) / beta`` of the score
      differences ``D``, compared with its ``BoundedRangeEvent``;
    * a Laplace release: ``||q_A - q_B||_1 / b`` (``_2`` for the L2-Laplace);
    * an objective perturbation (a noise that is not added to a value but
      enters an optimisation): the noise world B needs to release world A's
      value, found by Newton's method; its shift over sigma is compared with
      the ``mu`` of a Gaussian mechanism at the event's (epsilon, delta).

    The shifts are exact; the noise scales are not read from the code but
    estimated from the values drawn (world A, pooled over the fits), and an
    upper confidence bound is used, so each ``empirical`` value is a lower
    bound on the parameter of the mechanism that ran, with ``confidence``
    (Bonferroni over the noise scales). Half the noise doubles it, a removed
    clip or a wrong sensitivity shows in the shift; a canary close to the
    worst case makes it reach the claim.

    Parameters
    ----------
    estimator : skdp estimator
        Cloned for every fit; ``random_state`` is set per fit pair.
    X, y : background data or None
        As in :func:`audit` (a canary column is appended; ``None``: 40
        synthetic rows). Ignored when ``worlds`` is given.
    worlds : ((X_a, y_a), (X_b, y_b)) or None
        The two neighbours, when not built from a background and a canary.
    n_fits : int, default=20
        Fit pairs (different seeds, so different histories); the bound is
        the largest over them.
    canary_norm, canary_label : as in :func:`audit`.
    confidence : float, default=0.95
    noise_multiplier : float, default=1.0
        Positive control (:func:`~skdp.privacy.mechanisms.scaled_noise`):
        ``0.25`` draws a quarter of the noise while the events are unchanged.
    fit_params : dict or None
        Passed to every ``fit`` (e.g. ``parties`` of a multi-party estimator;
        the same in both worlds, so the canary, the last row, keeps its place).
    random_state : int, RandomState instance or None, default=0
        Seeds the background and the fits.

    Returns
    -------
    EventAuditResult

    References
    ----------
    Nasr, Song, Thakurta, Papernot and Carlini 2021, "Adversary
    instantiation: lower bounds for differentially private machine learning"
    (the adversary that inserts a crafted gradient at each step, which the
    replay of the released history emulates); Steinke, Nasr and Jagielski
    2023, "Privacy auditing with one (1) training run".

    Examples
    --------
    >>> from skdp import DPRidge
    >>> from skdp.audit import audit_events
    >>> est = DPRidge(epsilon=1.0, data_norm=1.0, label_bound=1.0, fit_intercept=False, max_iter=3)
    >>> audit_events(est, n_fits=5).passed
    True
    >>> audit_events(est, n_fits=5, noise_multiplier=0.25).passed  # a quarter of the noise is caught
    False
    """
    _check("n_fits", n_fits, Integral, 0)
    _check("confidence", confidence, Real, 0.0, 1.0)
    _check("noise_multiplier", noise_multiplier, Real, 0.0)
    rng = check_random_state(random_state) if random_state is not None else generator(np.random.SeedSequence())
    if worlds is None:
        norm = float(canary_norm) if canary_norm is not None else (_public_norm(estimator) or 1.0)
        if X is None:
            X, y = _default_background(estimator, norm, rng)
        elif y is None:
            raise ValueError("y must be given with X.")
        X, y = np.asarray(X, dtype=float), np.asarray(y)
        if X.ndim != 2 or len(X) != len(y):
            raise ValueError(f"X must be 2-D with one row per label, got X {X.shape} and y {y.shape}.")
        label = _canary_label(estimator, y) if canary_label is None else canary_label
        worlds = _canary_worlds(X, y, norm, label)
    (Xa, ya), (Xb, yb) = worlds
    m = float(noise_multiplier)
    start = time.perf_counter()
    seeds = rng.randint(0, 2**31 - 1, size=int(n_fits))
    fits, claims, unpaired = [], None, 0
    for seed in seeds:
        model_a, draws_a = _fit_recorded(estimator, Xa, ya, seed, m, None, fit_params)
        replay = _replay_of(draws_a)
        _, draws_b = _fit_recorded(estimator, Xb, yb, seed, m, replay, fit_params)
        if claims is None:
            claims = _claims(model_a)
        if [d.kind for d in draws_a] != [d.kind for d in draws_b]:
            raise RuntimeError("the two worlds drew different noise although world B replayed world A's history: "
                               f"{[d.kind for d in draws_a]} vs {[d.kind for d in draws_b]}.")
        rows, missing = [], 0
        objective = [t for t, d in enumerate(draws_a)
                     if d.kind in _GAUSSIAN and "query" not in d.audit and "objective" in claims]
        inverted = (_invert_objectives(estimator, Xb, yb, seed, m, replay, objective, draws_a, model_a, fit_params)
                    if objective else None)
        for t, (a, b) in enumerate(zip(draws_a, draws_b)):
            if a.kind in _SELECTIONS:
                qa, qb = a.audit["query"], b.audit["query"]
                live = np.isfinite(qa) | np.isfinite(qb)  # a candidate excluded (-inf) in both worlds never wins
                with np.errstate(invalid="ignore"):
                    diff = np.where(qa[live] == qb[live], 0.0, qa[live] - qb[live])
                rows.append(("selection", a, float(np.max(diff) - np.min(diff)), None))
            elif "query" in a.audit:
                if "query" not in b.audit or not np.array_equal(a.audit["released"], b.audit["released"]):
                    raise RuntimeError(f"draw {t}: world B did not release world A's value under replay.")
                diff = a.audit["query"] - b.audit["query"]
                if a.kind in _GAUSSIAN and "gaussian" in claims:
                    rows.append(("gaussian", a, float(np.linalg.norm(diff)), None))
                elif a.kind == "laplace" and "laplace" in claims:
                    rows.append(("laplace", a, float(np.sum(np.abs(diff))), None))
                elif a.kind == "l2_laplace" and "l2_laplace" in claims:
                    rows.append(("l2_laplace", a, float(np.linalg.norm(diff)), None))
                else:
                    missing += 1
            elif t in objective and inverted is not None:
                rows.append(("objective", a, inverted[0][objective.index(t)], inverted[1]))
            else:
                missing += 1
        unpaired = max(unpaired, missing)
        fits.append(rows)
    level = (1 - float(confidence))
    groups = {}
    for rows in fits:
        for _, d, _, _ in rows:
            groups.setdefault((d.kind, round(d.scale, 12)), []).append(d.audit["noise"])
    upper = {key: key[1] if key[0] == "exponential" else _scale_upper(key[0], noises, level / max(1, len(groups)))
             for key, noises in groups.items()}
    bounds = []
    for kind in ("gaussian", "objective", "selection", "laplace", "l2_laplace"):
        per_fit = [[(d, shift, resid) for k, d, shift, resid in rows if k == kind] for rows in fits]
        if not any(per_fit):
            continue
        if kind == "gaussian":
            values = [math.sqrt(sum((s / upper[(d.kind, round(d.scale, 12))]) ** 2 for d, s, _ in rows))
                      for rows in per_fit]
            k = int(np.argmax(values))
            resid = max((r for rows in per_fit for _, _, r in rows if r is not None), default=None)
            detail = "" if resid is None else f"inversion residual {resid:.1e}"
            bounds.append(EventBound(kind, _MEASURE[kind], float(claims[kind]), float(values[k]), len(per_fit[k]),
                                     detail))
        else:  # one claim per release, paired in order with the draws of that kind
            best = (-1.0, 0.0, 0.0)
            for rows in per_fit:
                for (d, s, _), claim in zip(rows, claims[kind]):
                    emp = s / upper[(d.kind, round(d.scale, 12))]
                    if emp / claim > best[0]:
                        best = (emp / claim, claim, emp)
            resid = max((r for rows in per_fit for _, _, r in rows if r is not None), default=None)
            detail = "worst single release" + ("" if resid is None else f", inversion residual {resid:.1e}")
            bounds.append(EventBound(kind, _MEASURE[kind], float(best[1]), float(best[2]), len(per_fit[0]), detail))
    return EventAuditResult(_describe(estimator), bounds, int(n_fits), float(confidence), m, unpaired,
                            time.perf_counter() - start)


#: zero columns of the event-level settings (the noise of every coordinate estimates sigma; the canary uses one)
_WIDTH = 10
#: settings kept narrow: a top-s selection must pick the canary's column, or the inversion costs a fit per column
_NARROW = ("noisy_iht", "dpsl_kt", "obj_pert", "obj_pert_svrg", "two_stage")


def _event_cases(epsilon, delta):
    """Per solver: the estimator and the keyword arguments of :func:`audit_events` (background or worlds).

    The settings of :func:`audit_solvers` (zero background, mirrored canary on
    its own direction), except where the event-level audit needs another:
    ``dp_svrg`` / ``dp_svrg_pp`` with full batches (a mirrored canary moves
    the anchor gradient by ``2C`` but never the gradient differences, so with
    ``q < 1`` the claim for the steps that did not sample it is unreachable),
    ``obj_pert`` on 2000 rows with a small radius (the perturbed minimiser must
    stay inside the ball for the noise to be inverted, and ``2 zeta`` nearly
    equals the canary's gradient shift), and ``two_stage`` on four features
    with a canary that moves its block's support (world B holds a zero row).
    """

    cases = {}
    for name, (est, (X, y)) in _solver_cases(epsilon, delta).items():
        if not X.any() and name not in _NARROW:  # more zero columns: more noise values to estimate sigma from
            X = np.zeros((X.shape[0], _WIDTH))
        cases[name] = (est, {"X": X, "y": y, "canary_norm": 1.0})
    common = dict(epsilon=epsilon, delta=delta, data_norm=1.0, fit_intercept=False, label_bound=1.0)
    X0, y0 = np.zeros((40, _WIDTH)), np.zeros(40)
    for name in ("dp_svrg", "dp_svrg_pp"):
        cases[name] = (DPRidge(solver=name, alpha=0.1, coef_norm=3.0, max_iter=3,
                               solver_options={"batch_size": 41}, **common), {"X": X0, "y": y0, "canary_norm": 1.0})
    # adassp: a mirrored canary leaves X^T X unchanged (x x^T = (-x)(-x)^T); canaries on two directions with
    # opposite labels move X^T X by its full sensitivity and X^T y by 1/sqrt(2) of its
    Xw = np.zeros((40, _WIDTH + 2))
    a, b = np.zeros((1, _WIDTH + 2)), np.zeros((1, _WIDTH + 2))
    a[0, -2], b[0, -1] = 1.0, 1.0
    cases["adassp"] = (cases["adassp"][0], {"worlds": ((np.vstack([Xw, a]), np.append(y0, 1.0)),
                                                       (np.vstack([Xw, b]), np.append(y0, -1.0)))})
    cases["obj_pert"] = (DPRidge(solver="obj_pert", alpha=1.0, coef_norm=0.1, **common),
                         {"X": np.zeros((2000, 2)), "y": np.zeros(2000), "canary_norm": 1.0})
    # two_stage: the canary's block fits the canary (features 2, 3) instead of the weak signal on features 0, 1
    # that the other blocks and world B's block select, so the votes move by 2s/k (their L1 sensitivity)
    rng = np.random.RandomState(0)
    Xb = rng.uniform(-0.5, 0.5, size=(1599, 4))
    yb = 0.02 * (Xb[:, 0] + Xb[:, 1])
    canary = np.array([[0.3, 0.3, 0.6, 0.6]])
    worlds = ((np.vstack([Xb, canary]), np.append(yb, 1.0)), (np.vstack([Xb, 0 * canary]), np.append(yb, 1.0)))
    cases["two_stage"] = (DPSparseLinearRegression(
        epsilon=epsilon, delta=delta, n_nonzero_coefs=2, solver="two_stage", clip_norm=1.0, label_bound=1.0,
        fit_intercept=False), {"worlds": worlds})
    return cases


def audit_solvers_events(epsilon=2.0, delta=1e-5, *, n_fits=20, solvers=None, noise_multiplier=1.0,
                         confidence=0.95, random_state=0):
    """:func:`audit_events` for every registered solver (or ``solvers``) in a worst-case canary setting.

    The settings are those of :func:`audit_solvers` except where the
    event-level audit needs another (see ``_event_cases``). Returns a list of
    :class:`EventAuditResult` in the order of :func:`skdp.list_solvers`.
    """
    cases = _event_cases(epsilon, delta)
    results = []
    for name in _audited_solvers(cases, solvers):
        est, kwargs = cases[name]
        results.append(audit_events(est, **kwargs, n_fits=n_fits, noise_multiplier=noise_multiplier,
                                    confidence=confidence, random_state=random_state))
    return results
