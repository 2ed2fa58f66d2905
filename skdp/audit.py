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

Reference: the hypothesis-testing characterisation of (epsilon, delta)-DP
(Wasserman and Zhou 2010; Kairouz, Oh and Viswanath 2015) and the canary
audits of Jagielski, Ullman and Oprea 2020 and Nasr et al. 2021, which turn
Clopper-Pearson bounds on the error rates into an epsilon lower bound; see the
skdp documentation page :doc:`/user_guide/verifying`.
"""

import math
import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import beta as _beta
from scipy.stats import norm as _norm
from scipy.optimize import brentq
from sklearn.base import clone, is_classifier
from sklearn.utils import check_random_state

from ._random import generator
from .privacy.mechanisms import scaled_noise

__all__ = ["AuditResult", "audit", "audit_solvers", "epsilon_lower_bound", "gdp_mu_for"]


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
    n, d = X.shape
    background = np.hstack([X, np.zeros((n, 1))])
    worlds = []
    for sign in (1.0, -1.0):  # world 0 holds the canary, world 1 its mirror image
        row = np.zeros((1, d + 1))
        row[0, d] = sign * norm
        worlds.append((np.vstack([background, row]), np.append(y, label)))
    points = np.zeros((2, d + 1))
    points[0, d] = norm
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
    from .linear_model import DPLinearSVC, DPLogisticRegression, DPRidge, DPSparseLinearRegression

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
            solver_options={"n_blocks": 4} if solver == "two_stage" else None)
        cases[solver] = (est, (X0, y0))
    # noisy_iht: the mirrored canary moves the scores |v_j| alike in both worlds, so its selections cannot be
    # seen; one iteration with most of the budget on the released values is the Gaussian step the canary
    # test can measure (the canary's column is among the 2 of 3 selected about 2/3 of the time)
    cases["noisy_iht"] = (DPSparseLinearRegression(
        epsilon=epsilon, delta=delta, n_nonzero_coefs=2, solver="noisy_iht", clip_norm=1.0, label_bound=1.0,
        fit_intercept=False, max_iter=1, solver_options={"selection_share": 0.05}), (X0, y0))
    # a registered solver without a tuned setting gets the generic one of its estimator family (its
    # defaults on the same zero background), so a new solver is audited without editing this function
    from .solvers import SOLVERS

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


def audit_solvers(epsilon=2.0, delta=1e-5, *, n_fits=2000, solvers=None, noise_multiplier=1.0, n_jobs=None,
                  random_state=0, verbose=0):
    """Audit every registered solver (or ``solvers``) in its worst-case canary setting.

    Returns a list of :class:`AuditResult` in the order of :func:`skdp.list_solvers`.
    Run it with ``noise_multiplier=0.25`` for the positive control.
    """
    from .solvers import SOLVERS

    cases = _solver_cases(epsilon, delta)
    names = sorted(SOLVERS) if solvers is None else list(solvers)
    missing = [s for s in names if s not in cases]
    if missing:
        raise ValueError(f"No audit setting for solver(s) {missing}; known: {sorted(cases)}.")
    results = []
    for name in names:
        est, (X, y) = cases[name]
        results.append(audit(est, X, y, n_fits=n_fits, canary_norm=1.0, noise_multiplier=noise_multiplier,
                             n_jobs=n_jobs, random_state=random_state, verbose=verbose))
    return results
