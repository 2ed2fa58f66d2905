"""Multi-party private logistic regression: ``mpc_grad_pert`` and ``mpc_output_pert`` (Wang 2021, dissertation, ch. 6)."""

import functools
import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import optimize, special
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import _num_samples, validate_data

from .._plan import FitPlan, PublicFit, RowsElsewhere, make_plan, public_fit, rows_elsewhere
from .._fit import Bounds, Ran, private_fit
from .._classes import check_class_set, class_selection_events, fit_classes
from .._ovr import ovr_budget, ovr_targets
from .._predict import ProbabilisticClassifierMixin
from .._protocol import n_iter_attribute
from ..privacy.search import plan_after
from .._weights import (CLASS_WEIGHT_CONSTRAINTS, WEIGHT_CONSTRAINTS, check_weight_params, class_weighted,
                        sample_weights, weight_bound)
from ..bounds import bound_features
from ..losses import weigh
from ..privacy import (
    GaussianEvent,
    L2LaplaceEvent,
    calibrate_gaussian,
    gaussian_noise,
    l2_laplace_noise,
    pure_noise_scale,
)
from ._mpc import SEED_BITS, FixedPointRing, SecureAggregator, party_seed, secret_share, seeded_generator

__all__ = ["MultiPartyDPLogisticRegression", "split_parties"]

def _clipped_mean_gradient(X, ys, norms, theta, G, column=None, weights=None):
    """One party's mean logistic gradient, per-example clipped to ``G`` (runs where the party's rows are).

    ``column``: the one-vs-rest class whose labels ``ys[:, column]`` are used; ``weights``: the rows'
    weights (``None``: all 1), applied after clipping."""
    ys = ys if column is None else ys[:, column]
    S = -ys * special.expit(-ys * (X @ theta))
    S = weigh(S * np.minimum(1.0, G / np.maximum(np.abs(S) * norms, 1e-300)), weights)
    return X.T @ S / X.shape[0]


def _local_solve(X, ys, norms, lam, tau, column=None, weights=None):
    """One party's exact regularised (weighted) ERM (L-BFGS), certified to gradient norm ``tau`` (as above)."""
    ys = ys if column is None else ys[:, column]

    def f(w):
        z = X @ w
        val = np.mean(weigh(np.logaddexp(0, -ys * z), weights)) + 0.5 * lam * w @ w
        grad = X.T @ weigh(-ys * special.expit(-ys * z), weights) / X.shape[0] + lam * w
        return val, grad

    w = np.zeros(X.shape[1])
    for _ in range(5):
        w = optimize.minimize(f, w, jac=True, method="L-BFGS-B",
                              options={"gtol": tau / 10, "ftol": 0.0, "maxiter": 10000}).x
        if np.linalg.norm(f(w)[1]) <= tau:
            return w
    raise RuntimeError("a party's local solve did not reach its certified tolerance; nothing was "
                       "released (increase tol).")  # pragma: no cover - strongly convex, smooth


def _bound_rows(data_norm, fit_intercept, Xp):
    """One party's rows clipped to ``data_norm`` with the intercept column (row-wise: any split agrees)."""
    Xp = np.asarray(Xp, dtype=np.float64)
    if not np.all(np.isfinite(Xp)):
        raise ValueError("Input X contains NaN or infinity.")
    bounded = bound_features(Xp, float(data_norm), fit_intercept, None, 0.5)
    return bounded.X, bounded.row_norms, bounded.n_clipped


def _is_dask(X):
    return type(X).__module__.split(".")[0] == "dask"


#: the protocols by what they share: True for noisy gradient descent (the parties share clipped mean gradients
#: every round), False for output perturbation (they share one local minimiser each)
_GRADIENT_PROTOCOL = {"mpc_grad_pert": True, "mpc_output_pert": False}


class _PartyChunks(RowsElsewhere):
    """A 2-D dask array whose row chunks are the parties: read where it lives (``n``, ``d`` and the chunk
    sizes are public), as the input of :func:`skdp._fit.private_fit`."""

    def __init__(self, X):
        self.X = X
        self.n, self.d = int(X.shape[0]), int(X.shape[1])
        self.parties = np.repeat(np.arange(len(X.chunks[0])), X.chunks[0])


class _DaskParties:
    """Each row chunk of a ``dask.array`` is a party; its rows are bounded and kept where they live.

    Local computations run as Dask tasks on the chunks (on a ``distributed.Client``'s workers when one is
    active); only their results (the vectors each party secret-shares) come back to the driver, which runs
    the aggregation exactly as the in-process simulation does, so the fit is bit-identical to
    ``fit(X.compute(), y, parties=<chunk labels>)`` for the same seed.
    """

    name = "dask"

    def __init__(self, X, ys, bound, weights=None):
        import dask

        self._dask = dask
        X = X.rechunk({1: -1}) if X.numblocks[1] != 1 else X
        sizes = [int(c) for c in X.chunks[0]]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        parts = []
        for k, block in enumerate(X.to_delayed().ravel()):
            y_part = ys[offsets[k]:offsets[k + 1]]
            w_part = None if weights is None else weights[offsets[k]:offsets[k + 1]]
            parts.append(dask.delayed(_bind_party)(block, y_part, bound, w_part))
        self._data = list(dask.persist(*parts))
        self.n_rows_clipped = int(sum(dask.compute(*[dask.delayed(_clipped_count)(part) for part in self._data])))
        self.sizes = sizes
        self.n_features = int(X.shape[1])

    def map(self, fn, *args):
        tasks = [self._dask.delayed(_apply_party)(fn, part, args) for part in self._data]
        return list(self._dask.compute(*tasks))


def _bind_party(block, y_part, bound, w_part=None):
    Xb, norms, n_clipped = bound(block)
    return Xb, norms, y_part, n_clipped, w_part


def _clipped_count(part):
    return part[3]


def _apply_party(fn, part, args):
    Xp, norms, yp, _, wp = part
    return fn(Xp, yp, norms, *args, weights=wp)


class _InProcessParties:
    """Parties simulated in this process: each holds its bounded rows; ``map`` runs a local computation."""

    name = "inprocess"

    def __init__(self, raw, bound):
        self._data = [_bind_party(Xp, yp, bound, wp) for Xp, yp, wp in raw]
        self.sizes = [part[0].shape[0] for part in self._data]
        self.n_rows_clipped = sum(part[3] for part in self._data)
        self.n_features = raw[0][0].shape[1]

    def map(self, fn, *args):
        return [_apply_party(fn, part, args) for part in self._data]


def split_parties(n_samples, n_parties=None, parties=None):
    """Row indices of each party: from ``parties`` labels, or ``n_parties`` contiguous, near-equal blocks."""
    if parties is not None:
        parties = np.asarray(parties)
        if parties.shape != (n_samples,):
            raise ValueError(f"parties must have one label per row ({n_samples}), got shape {parties.shape}.")
        labels = np.unique(parties)
        return [np.flatnonzero(parties == lab) for lab in labels]
    m = int(n_parties)
    if not 1 <= m <= n_samples:
        raise ValueError(f"n_parties must be in [1, n_samples={n_samples}], got {n_parties!r}.")
    return [np.asarray(block) for block in np.array_split(np.arange(n_samples), m)]


class MultiPartyDPLogisticRegression(ProbabilisticClassifierMixin, ClassifierMixin, BaseEstimator):
    """Logistic regression trained privately across parties, each holding its own rows (one-vs-rest for more classes).

    Wang 2021 (dissertation), ch. 6 (see :doc:`/papers/wang2021`): the objective is
    ``J(theta) = (1/m) sum_j (1/n_j) sum_i l(theta; x_i^(j), y_i^(j)) + (alpha/2) ||theta||^2``
    (every party weighted equally; with equal sizes this is the pooled ERM). The parties' sizes ``n_j`` are
    public; the unit of privacy is **one record of one party**, replace-one. Vectors are combined only through
    :class:`~skdp.distributed.SecureAggregator` (additive secret sharing over a 64-bit fixed-point ring; the
    noise is drawn once inside the aggregate from randomness every party contributed; only the noisy average
    is revealed). The fixed-point rounding can move a party's vector by ``sqrt(d) 2^-(f+1)`` on top of the
    data's own sensitivity; that is added to every sensitivity below (``frac_bits = f``).

    Solvers (``solver=``):

    * ``"mpc_grad_pert"`` (Sec. 6.3.2, Thm 6.3.4): ``T`` rounds of full-batch gradient descent; in each, every party
      computes the mean of its per-example gradients clipped to ``G = data_norm / 2`` (the largest logistic
      gradient norm at 0, a convex Huber-type surrogate beyond), the aggregate adds ``N(0, sigma^2 I)``, and
      ``theta <- theta - eta (g_hat + alpha theta)`` publicly. Replace-one sensitivity of the average
      ``Delta = 2 G / (m n_min)``; the ``T`` releases are exactly ``mu``-GDP and ``sigma`` is the analytic
      exact Gaussian-DP calibration of the ``T`` releases (Dong, Roth and Su 2022; 38% less noise than the dissertation's (6.3.1)). Needs ``delta > 0``.
    * ``"mpc_output_pert"`` (Sec. 6.3.1, Thm 6.3.1): every party solves its own ``alpha``-strongly convex ERM (exact
      logistic loss, ``G = data_norm``) to gradient norm ``tau = tol * 2 G / n_min``, the aggregate averages
      the models and adds noise for ``Delta = (2 G / (n_min alpha) + 2 tau / alpha) / m`` (Chaudhuri et al.
      Cor. 8, plus skdp's allowance for the inexact solve): the L2-Laplace (Gamma-norm) mechanism for ``delta = 0``
      (the paper's experiments used i.i.d. Laplace at this scale, which is only ``sqrt(d) eps``-DP; see :doc:`/papers/wang2021`),
      the analytic Gaussian for ``delta > 0``. The intercept column is penalised like every coordinate.

    ``n_parties=1`` is the single-party baseline run by the same code: one party holding every row.

    **More than two classes** are fitted one-vs-rest: the protocol above runs once per class (that class
    labelled ``+1``, the rest ``-1``), inside the same secure aggregation (the same parties' seeds and share
    generators; every class's noisy aggregates are further releases of the same noise generator), so the
    trust model is unchanged. Every class's fit reads every record, so the ``k`` fits compose; the budget
    is split before the data is read by :func:`skdp._ovr.ovr_budget`: each class gets ``delta / k``
    and the largest epsilon such that the shared accountant prices the ``k`` fits (with the label-set
    selection) at what one binary fit costs, so ``privacy_spent_`` is the same for any number of classes.
    For ``mpc_grad_pert`` that is the exact GDP calibration of ``k T`` releases (``sigma`` grows by about
    ``sqrt(k)``); for ``mpc_output_pert`` with ``delta = 0``, ``epsilon / k`` per class.

    Parameters
    ----------
    epsilon, delta : float
        Privacy-loss target (> 0 and finite; ``inf`` is refused: a fit
        without privacy is scikit-learn's own estimator) and failure
        probability.
    solver : {"mpc_grad_pert", "mpc_output_pert"}, default="mpc_grad_pert"
        The protocol (as ``solver=`` of every skdp estimator).
    mechanism : str, default="deprecated"
        Former name of ``solver``; still accepted with a ``FutureWarning`` and removed in a future
        release.
    alpha : float, default=1e-3
        Strength of the L2 penalty ``(alpha/2) ||theta||^2`` (the dissertation's ``lambda``; > 0 for output perturbation).
    data_norm : float, default=1.0
        Public row-norm bound (intercept column included); rows are clipped to it.
    fit_intercept : bool, default=True
    n_parties : int, default=2
        Used when ``fit`` gets no ``parties``: rows are split into this many contiguous blocks.
    classes : array-like of shape (n_classes,), "auto" or None, default="auto"
        Public class labels. ``"auto"`` selects them privately (as in :class:`skdp.DPLogisticRegression`;
        needs ``delta > 0``; the protocol's noise is calibrated (:func:`skdp.privacy.search.plan_after`) so that
        the accountant prices the selection and the fit together at exactly ``epsilon``, never more, as
        the in-memory models do; the fit is planned and charged as a binary fit,
        which costs what the one-vs-rest fit of any number of selected labels costs; in this simulation
        the noisy label counts are computed centrally). ``None`` reads them from the data with a
        :class:`~skdp.PrivacyLeakWarning`.
    max_iter : int or None
        Rounds ``T`` of ``mpc_grad_pert`` (default ``min(40, max(2, ceil(n eps / 30)))``, as ``dp_gd``).
    tol : float, default=1e-6
        Local-solve accuracy of ``mpc_output_pert`` relative to one record's influence ``2 G / n_min``.
    frac_bits : int, default=32
        Fractional bits of the fixed-point ring.
    random_state : int, RandomState instance or None
        ``None`` (default): every fit draws 128 bits of fresh OS entropy, from which each party's own
        ``SeedSequence`` is derived (its 128-bit contribution to the aggregate's noise seed and the
        128-bit seed of its share generator); two such fits never share noise. An ``int`` or
        ``RandomState`` makes the fit reproducible; the guarantee then assumes the seed is secret and
        used for this one release (see ``noise_source_``).
    max_sample_weight : float, default=1.0
        Public bound on the ``sample_weight`` of a record (> 0): larger weights are clipped to it. Every
        sensitivity (and the public bound on the shared vectors) is proportional to it (to it times the
        largest class weight with ``class_weight``), whether or not ``fit`` gets weights. Without
        ``sample_weight`` each record's weight is 1 before the clip, so every record weighs
        ``min(1, max_sample_weight)`` (in process and on Dask input): below 1 that scales every loss term by
        it, as a larger penalty would (with a ``UserWarning``); see :doc:`/user_guide/weights`.
    class_weight : dict or None, default=None
        Public weights ``{label: weight}`` (``>= 0``; a label without an entry has weight 1) that multiply
        each record's ``sample_weight``, as in scikit-learn. ``"balanced"`` is refused: it needs the
        private class counts.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    multi_class_ : {"binary", "ovr"}
        ``predict_proba`` normalises the one-vs-rest sigmoids with ``"ovr"``.
    n_parties_ : int
    party_sizes_ : ndarray
    privacy_spent_ : PrivacyBudget
        (epsilon, delta) from the accountant for the released aggregates, replace-one within a party;
        ``epsilon=inf`` if ``classes`` was read from the data.
    privacy_nominal_ : PrivacyBudget
        The same, assuming the class set had been public.
    privacy_events_ : list
        What was released (equal to :meth:`planned_events` for the same shape and parties).
    accountant_ : str
        The accountant's method (``"gdp_exact"`` for ``mpc_grad_pert``, ...).
    noise_scale_ : float
        The noise's std (scale for the L2-Laplace mechanism) of each release (of each class's fit).
    n_iter_ : ndarray of shape (1,)
        Rounds ``T`` (of each class's fit), shaped as ``LogisticRegression.n_iter_``.
    noise_source_ : str
        ``"os-entropy"`` when the noise came from fresh OS entropy (``random_state=None``), else a digest of
        the seed (``"seed:<digest>"``); composition tools report ``epsilon=inf`` for releases that share a
        digest.

    Exact statistics of the data (the number of rows clipped to ``data_norm``, summed over parties) are not
    attributes: they are not private, and the data holders read them with :func:`skdp.fit_diagnostics`
    (``fit_diagnostics(clf)["n_rows_clipped"]``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.distributed import MultiPartyDPLogisticRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, (4000, 3)) / 2
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = MultiPartyDPLogisticRegression(epsilon=1.0, n_parties=10, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    >>> clf.privacy_spent_.epsilon <= 1.0
    True
    """

    #: ``n_iter_`` as ``LogisticRegression``'s: an array of shape (1,)
    _n_iter_style = "array"

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "solver": [StrOptions({"mpc_grad_pert", "mpc_output_pert"})],
        "mechanism": [StrOptions({"mpc_grad_pert", "mpc_output_pert"}), Hidden(StrOptions({"deprecated"}))],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "data_norm": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "n_parties": [Interval(Integral, 1, None, closed="left")],
        "classes": ["array-like", StrOptions({"auto"}), None],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "frac_bits": [Interval(Integral, 8, 48, closed="both")],
        "random_state": ["random_state"],
        **WEIGHT_CONSTRAINTS,
        **CLASS_WEIGHT_CONSTRAINTS,
    }

    def __init__(self, epsilon=1.0, delta=1e-5, *, solver="mpc_grad_pert", mechanism="deprecated", alpha=1e-3,
                 data_norm=1.0,
                 fit_intercept=True, n_parties=2, classes="auto", max_iter=None, tol=1e-6, frac_bits=32,
                 random_state=None, max_sample_weight=1.0, class_weight=None):
        self.epsilon = epsilon
        self.delta = delta
        self.solver = solver
        self.mechanism = mechanism
        self.alpha = alpha
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.n_parties = n_parties
        self.classes = classes
        self.max_iter = max_iter
        self.tol = tol
        self.frac_bits = frac_bits
        self.random_state = random_state
        self.max_sample_weight = max_sample_weight
        self.class_weight = class_weight

    # -- calibration (public quantities only) ----------------------------------------------
    def _rounding(self, d):
        return math.sqrt(d) * 2.0 ** (-int(self.frac_bits))

    def _steps(self, n):
        if self.max_iter:
            return int(self.max_iter)
        return int(min(40, max(2, math.ceil(n * self.epsilon / 30.0))))

    def _calibration(self, sizes, d, n_classes=2):
        """(sensitivity of the released average, noise scale, events, T); one-vs-rest for ``n_classes > 2``."""
        m, n_min, n = len(sizes), int(min(sizes)), int(sum(sizes))
        K = float(self.data_norm)
        W = weight_bound(self)  # a record of weight <= W: every per-record bound below is W times larger
        # classes="auto": the label-set selection comes first; the solver gets the rest of (epsilon, delta)
        selection = class_selection_events(self, n)
        if _GRADIENT_PROTOCOL[self._solver()]:
            if self.delta == 0:
                raise ValueError("solver='mpc_grad_pert' needs delta > 0 (Gaussian noise); use "
                                 "'mpc_output_pert' for pure epsilon-DP.")
            T = self._steps(n)
            sens = (2 * (K / 2) * W / n_min + self._rounding(d)) / m

            def events_for(b):
                return [GaussianEvent(sens, calibrate_gaussian(T * sens**2, b.epsilon, b.delta), T)]
        else:
            if not self.alpha > 0:
                raise ValueError("solver='mpc_output_pert' needs alpha > 0 (strong convexity bounds its "
                                 "sensitivity).")
            T = 1
            tau = self.tol * 2 * K * W / n_min
            sens = (2 * K * W / (n_min * self.alpha) + 2 * tau / self.alpha + self._rounding(d)) / m

            def events_for(b):
                if self.delta == 0:
                    return [L2LaplaceEvent(sens, pure_noise_scale(sens, b.epsilon))]
                return [GaussianEvent(sens, calibrate_gaussian(sens**2, b.epsilon, b.delta))]
        # one-vs-rest: k fits (one per class) priced together like one binary fit (skdp._ovr.ovr_budget)
        fits = 1 if n_classes <= 2 else int(n_classes)
        # the binary release's budget, priced with the selection by the accountant at exactly (epsilon, delta)
        budget = plan_after(events_for, selection, self.epsilon, self.delta)
        class_budget, events = ovr_budget(events_for, fits, budget, selection, self.delta)
        one = events_for(class_budget)[0]
        return sens, (one.scale if isinstance(one, L2LaplaceEvent) else one.sigma), selection + events, T

    # -- fitting -------------------------------------------------------------------------------
    def _plan(self, public):
        """The fit's :class:`~skdp._plan.FitPlan`: the public party sizes, the label-set selection's and the
        protocol's events (one-vs-rest over the public classes), the noise scale and the step count."""
        sizes = [len(b) for b in split_parties(int(public.n_samples), self.n_parties, public.parties)]
        d = int(public.n_features) + int(self.fit_intercept)
        k = self._public_n_classes()
        sens, scale, events, T = self._calibration(sizes, d, k)
        return FitPlan(public, guaranteed=self.classes is not None, release_events=events,
                       spec=dict(sizes=sizes, d=d, n_classes=k, calibration=(sens, scale, events, T)))

    def planned_events(self, n_samples, n_features=None, parties=None):
        """The privacy events a fit on ``(n_samples, n_features)`` releases, without any data.

        The noise depends on the public party sizes (``parties`` as in :meth:`fit`, or
        ``n_parties`` contiguous blocks) and, through the fixed-point rounding, on
        ``n_features``. ``None`` when ``classes`` is left to be read from the data.
        """
        self._validate_params()
        self._check_params()
        if n_features is None:
            raise ValueError("planned_events needs n_features (the fixed-point rounding enters the sensitivity).")
        return make_plan(self, PublicFit(int(n_samples), int(n_features), parties=parties)).events

    def _public_n_classes(self):
        """Number of public classes; 2 when the set is chosen in the fit (a binary plan costs the same)."""
        classes = check_class_set(self)
        return 2 if classes is None else classes.size

    def _solver(self):
        """``solver``, or the deprecated ``mechanism`` when it is given (warned once, in ``_check_params``)."""
        return self.solver if self.mechanism == "deprecated" else self.mechanism

    def _check_params(self):
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        if self.mechanism != "deprecated":
            warnings.warn("MultiPartyDPLogisticRegression's 'mechanism' was renamed 'solver' (as in every skdp "
                          "estimator); 'mechanism' will be removed.", FutureWarning, stacklevel=3)
        check_class_set(self)
        check_weight_params(self)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, parties=None, privacy_ledger=None):
        """Fit across parties.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or dask array
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Record weights in ``[0, max_sample_weight]`` (larger ones are clipped to it, with a
            ``UserWarning``; negative ones raise ``ValueError``), held by the record's party: its loss
            term is weighted (``(1/n_j) sum_i w_i l_i``), a weight 0 removes a record's influence and
            weights of 1 give the unweighted fit.
        parties : array-like of shape (n_samples,) or None
            The party holding each row (the sizes are public). ``None``: ``n_parties`` contiguous blocks;
            with a dask array the row chunks are the parties.
        privacy_ledger : PrivacyLedger or None, default=None
            Charge this fit to the ledger before the data is used (``None``: the active ledger, if any).

        Returns
        -------
        self : object
        """
        if _is_dask(X):
            if parties is not None:
                raise ValueError("With a dask array the row chunks are the parties; do not pass parties.")
            if X.ndim != 2:
                raise ValueError(f"Expected a 2D array, got a {X.ndim}-D dask array.")
            X = _PartyChunks(X)
        return private_fit(self, X, y, sample_weight=sample_weight, parties=parties, privacy_ledger=privacy_ledger)

    # -- the fit: skdp._fit.private_fit calls _plan_fit, _read, _select_bounds, _run, _set_fitted -------------
    def _plan_fit(self, X, y, sample_weight=None, parties=None):
        """The plan from the parameters and the public party sizes (a dask array's row chunks are the parties)."""
        self._check_params()
        if rows_elsewhere(X):
            parties = X.parties
            n_labels = None if y is None else (y.shape[0] if hasattr(y, "shape") else len(y))
            if n_labels is None or (n_labels == n_labels and n_labels != X.n):  # an unknown length is checked in _read
                raise ValueError(f"y must have one label per row of X ({X.n}), got "
                                 f"{'None' if y is None else f'{n_labels} labels'}.")
        public = public_fit(X, parties=parties)
        return None if public is None else make_plan(self, public)  # public facts only: before any row is read

    def _read(self, plan, X, y, sample_weight=None, parties=None):
        """``(X, y, weights, blocks)``; sample_weight and parties are refused before the label-set selection
        spends budget. A dask array's labels are validated centrally in this simulation (``blocks=None``)."""
        if rows_elsewhere(X):
            y = np.asarray(y.compute() if _is_dask(y) else y)
            if y.shape != (X.n,):
                raise ValueError(f"y must have one label per row of X ({X.n}), got shape {y.shape}.")
            if sample_weight is not None:
                sample_weight = np.asarray(sample_weight.compute() if _is_dask(sample_weight) else sample_weight)
            self.n_features_in_ = X.d
            return X, y, sample_weights(self, sample_weight, np.empty((X.n, 0))), None
        X, y = validate_data(self, X, y, dtype=np.float64)
        weights = sample_weights(self, sample_weight, X)
        return X, y, weights, split_parties(X.shape[0], self.n_parties, parties)

    def _select_bounds(self, plan, data, rng):
        """The label set (``classes="auto"``: private; its events are the first of the protocol's)."""
        y = data[1]
        ys, derived = self._encode_labels(y, rng)
        return Bounds(class_selection_events(self, _num_samples(y)), derived=derived, values=dict(labels=ys))

    def _run(self, plan, data, bounds, rng):
        """The parties' protocol on the class-weighted records (in process, or on the dask array's chunks)."""
        X, y, weights, blocks = data
        ys = bounds.values["labels"]
        weights = class_weighted(self, weights, y, self.classes_)
        if blocks is None:
            backend = _DaskParties(X.X, ys, self._bound, weights)
        else:
            backend = _InProcessParties([(X[b], ys[b], None if weights is None else weights[b]) for b in blocks],
                                        self._bound)
        return self._fit_parties(plan, backend, rng, n_selections=len(bounds.events))

    def _encode_labels(self, y, rng):
        """``(ys, derived)``: labels in {-1, +1} (shape (n, k) of one-vs-rest labels for ``k > 2``
        classes), and 0 for the rows whose label ``classes="auto"`` did not select (their logistic loss
        is the constant ln 2 and their gradient zero, so they contribute nothing while n stays public).
        The selection runs centrally in this simulation; a deployment would aggregate the parties'
        label counts securely and add the same noise."""
        selection = fit_classes(self, y, rng)
        if selection.classes.size > 2:
            return ovr_targets(selection, y, inactive=0.0), selection.derived
        ys = np.where(y == selection.classes[1], 1.0, -1.0)
        if selection.active is not None:
            ys = np.where(selection.active, ys, 0.0)
        return ys, selection.derived

    @property
    def _bound(self):
        return functools.partial(_bound_rows, float(self.data_norm), bool(self.fit_intercept))

    def _c0(self):
        return 0.5 * float(self.data_norm) if self.fit_intercept else 0.0

    def _fit_parties(self, plan, backend, rng, n_selections=0):
        """The protocol, given parties that compute locally (in process or on Dask workers): a :class:`Ran`.

        Its events follow the ``n_selections`` events of the label-set selection (made before, in the plan's
        calibration too).

        The calibration is the plan's, unless ``classes="auto"`` selected another number of classes than
        planned (the one-vs-rest fits are then calibrated to the same price, see :func:`skdp._ovr.ovr_budget`).
        """
        sizes = np.asarray(backend.sizes)
        d = backend.n_features + int(self.fit_intercept)
        k = self.classes_.size
        if k == plan.spec["n_classes"] or (k <= 2 and plan.spec["n_classes"] <= 2):
            sens, scale, events, T = plan.spec["calibration"]
        else:
            sens, scale, events, T = self._calibration(sizes, d, k)
        m = len(sizes)
        # 128 bits from the fit's generator root every party's own SeedSequence; each party splits its own
        # into a 128-bit contribution to the aggregate's noise seed and the seed of its share generator
        root = np.random.SeedSequence([int(w) for w in rng.randint(0, 2**32, size=SEED_BITS // 32,
                                                                   dtype=np.uint64)])
        own = [party.spawn(2) for party in root.spawn(m)]
        party_seeds = [party_seed(noise_seq) for noise_seq, _ in own]
        party_rngs = [seeded_generator(share_seq) for _, share_seq in own]
        ring = FixedPointRing(self.frac_bits)
        # public bound on every shared entry (a clipped mean gradient, or a local minimiser, ||theta|| <= G/alpha):
        # the sum of m of them must fit the ring, or the reconstruction would wrap around
        bound = float(self.data_norm) * weight_bound(self)
        bound = bound if _GRADIENT_PROTOCOL[self._solver()] else bound / self.alpha
        if m * bound >= ring.limit:
            raise ValueError(f"frac_bits={self.frac_bits} leaves too little integer range for {m} parties' "
                             f"values up to {bound:g}; lower frac_bits.")
        agg = SecureAggregator(ring, party_seeds)

        def shares_of(vectors):
            return [secret_share(party_rngs[j], ring.encode(v), m) for j, v in enumerate(vectors)]

        # one binary fit, or one per class (one-vs-rest) inside the same aggregation
        thetas = [self._run_protocol(backend, agg, shares_of, scale, T, d, sizes, column)
                  for column in ([None] if k == 2 else range(k))]
        return Ran(events[n_selections:], scale, n_clipped=backend.n_rows_clipped,
                   values=dict(theta=np.stack(thetas), sizes=sizes, backend=backend.name, n_iter=T))

    def _set_fitted(self, plan, data, bounds, ran):
        theta = ran.values["theta"]  # (1 or k, d)
        if self.fit_intercept:
            self.coef_, self.intercept_ = theta[:, :-1].copy(), theta[:, -1] * self._c0()
        else:
            self.coef_, self.intercept_ = theta.copy(), np.zeros(theta.shape[0])
        self.multi_class_ = "binary" if theta.shape[0] == 1 else "ovr"
        self.n_parties_ = len(ran.values["sizes"])
        self.party_sizes_ = ran.values["sizes"]
        self.backend_ = ran.values["backend"]
        self.n_iter_ = n_iter_attribute(self, ran.values["n_iter"])

    def _run_protocol(self, backend, agg, shares_of, scale, T, d, sizes, column):
        """One binary fit (labels ``ys[:, column]`` for one-vs-rest): its released aggregates' result."""
        if _GRADIENT_PROTOCOL[self._solver()]:
            G = float(self.data_norm) / 2  # the clip of one record's unweighted gradient
            eta = 1.9 / (weight_bound(self) * float(self.data_norm) ** 2 / 4 + self.alpha)

            def noise(r, shape):
                return gaussian_noise(r, scale, shape)

            theta = np.zeros(d)
            for _ in range(T):
                local = backend.map(_clipped_mean_gradient, theta, G, column)
                g_hat = agg.noisy_average(shares_of(local), noise)
                theta = theta - eta * (g_hat + self.alpha * theta)
            return theta
        local = backend.map(_local_solve, float(self.alpha),
                            self.tol * 2 * float(self.data_norm) * weight_bound(self) / sizes.min(), column)

        def noise(r, shape):
            if self.delta == 0:
                return l2_laplace_noise(r, scale, shape)
            return gaussian_noise(r, scale, shape)

        return agg.noisy_average(shares_of(local), noise)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags
