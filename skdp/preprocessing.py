"""DP preprocessing: DPStandardScaler, and the budget of a pipeline of DP steps."""

import math
import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from ._utils import dp_steps
from .exceptions import PrivacyLeakWarning
from .linear_model._base import _make_rng
from .privacy import (
    GaussianEvent,
    L2LaplaceEvent,
    PrivacyBudget,
    active_ledger,
    calibrate_gaussian,
    gaussian_noise,
    l2_laplace_noise,
    price,
    pure_noise_scale,
)

__all__ = ["DPStandardScaler", "pipeline_privacy_spent", "set_pipeline_budget"]


class DPStandardScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Standardise features with differentially private means and standard deviations.

    Each feature is clipped to public bounds ``[lower_j, upper_j]`` and
    rescaled to ``z_j = (x_j - lower_j) / r_j`` in ``[0, 1]`` (``r_j`` the range),
    so every feature gets noise in proportion to its own range. Two vectors
    are released with the Gaussian mechanism (the L2-Laplace mechanism when
    ``delta=0``): the means of ``z``, whose L2 sensitivity under **replace-one**
    neighbours with public ``n`` is ``sqrt(d)/n``, and the means of
    ``(z - 1/2)^2`` (each in ``[0, 1/4]``), sensitivity ``sqrt(d)/(4n)``. The
    two releases share the budget equally (each ``mu*/sqrt(2)``-GDP, together
    exactly ``(epsilon, delta)``; ``privacy_core.md`` section 2) by default
    (``mean_fraction``), or split epsilon when ``delta=0``. The variance is the noisy second
    moment minus the squared noisy mean offset, clamped to
    ``[max(1e-4, 2 s) r^2, r^2/4]`` with ``s`` the second-moment noise scale
    (variances below the noise level are not resolved). :meth:`transform`
    clips to the public bounds first, like the fit. Tight public bounds
    matter: the noise is a fixed fraction of each range.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float, default=1e-5
    bounds : (lower, upper) or None, default=None
        Public per-feature bounds, scalars or arrays of shape (n_features,).
        ``None`` reads them from the data (min/max) with a
        :class:`~skdp.PrivacyLeakWarning`; ``privacy_spent_`` is then infinite.
    with_mean : bool, default=True
    with_std : bool, default=True
    mean_fraction : float, default=0.85
        Share of the budget for the means (of ``mu*^2`` when ``delta > 0``, of
        ``epsilon`` when ``delta = 0``); the rest goes to the second moments.
        The default favours the means: for a downstream linear model a wrong
        centre shifts every row, a wrong scale only reweights one feature
        (chosen on breast_cancer, ``benchmarks/bench_utility.py``).
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    scale_ : ndarray of shape (n_features,)
    var_ : ndarray of shape (n_features,)
    bounds_ : tuple of ndarrays
    privacy_spent_ : PrivacyBudget
    privacy_events_ : list
    noise_scale_ : ndarray
        Noise std (or L2-Laplace scale) of the mean and second-moment releases.
    n_rows_clipped_ : int
        Rows with a value outside ``bounds`` (clipped to them). **Not
        private**: a diagnostic for the data holder, not covered by
        ``privacy_spent_``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPStandardScaler
    >>> X = np.random.RandomState(0).uniform(0, 10, size=(5000, 2))
    >>> sc = DPStandardScaler(epsilon=1.0, bounds=(0, 10), random_state=0).fit(X)
    >>> np.round(sc.mean_, 1), np.round(sc.scale_, 1)
    (array([5., 5.]), array([2.9, 2.9]))
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "bounds": [tuple, list, None],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "mean_fraction": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, epsilon=1.0, delta=1e-5, *, bounds=None, with_mean=True, with_std=True,
                 mean_fraction=0.85, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.with_mean = with_mean
        self.with_std = with_std
        self.mean_fraction = mean_fraction
        self.random_state = random_state

    def _public_bounds(self, n_features):
        if self.bounds is None:
            return None
        if len(self.bounds) != 2:
            raise ValueError(f"bounds must be a pair (lower, upper), got {self.bounds!r}.")
        lo = np.broadcast_to(np.asarray(self.bounds[0], dtype=float), (n_features,)).copy()
        hi = np.broadcast_to(np.asarray(self.bounds[1], dtype=float), (n_features,)).copy()
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
            raise ValueError(f"bounds must be finite with lower < upper for every feature, got {self.bounds!r}.")
        return lo, hi

    def _sensitivities(self, lo, hi, n):
        # Released in units of each feature's range: z = (clip(x) - lower) / r in [0, 1].
        d = lo.size
        return math.sqrt(d) / n, math.sqrt(d) / (4 * n)

    def _events(self, sens):
        """Events and noise scales for the two releases (mean, second moment)."""
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        if self.delta == 0:
            f = self.mean_fraction
            scales = [pure_noise_scale(sens[0], f * self.epsilon), pure_noise_scale(sens[1], (1 - f) * self.epsilon)]
            return [L2LaplaceEvent(s, b) for s, b in zip(sens, scales)], scales
        # GDP split: the mean gets a share f of mu*^2, the second moment 1 - f.
        unit = calibrate_gaussian(1.0, self.epsilon, self.delta)  # = 1 / mu*
        f = self.mean_fraction
        scales = [sens[0] * unit / math.sqrt(f), sens[1] * unit / math.sqrt(1 - f)]
        return [GaussianEvent(s, b) for s, b in zip(sens, scales)], scales

    def planned_events(self, n_samples, n_features=None):
        """Events a fit on ``n_samples`` rows releases (``None``: bounds come from the data)."""
        self._validate_params()
        if self.bounds is None:
            return None
        nf = n_features if n_features is not None else np.size(self.bounds[0])
        pb = self._public_bounds(max(int(nf), 1))
        return self._events(self._sensitivities(*pb, int(n_samples)))[0]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, privacy_ledger=None):
        """Compute the private mean and scale.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
        privacy_ledger : PrivacyLedger or None, default=None
            Charged before the data is read (or the active ``with ledger:``).

        Returns
        -------
        self : object
        """
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        ledger = privacy_ledger if privacy_ledger is not None else active_ledger()
        if ledger is not None:
            nf = X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else None
            ledger.charge(self.planned_events(_num_samples(X), nf), label="DPStandardScaler")
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=True)
        n, d = X.shape
        pb = self._public_bounds(d)
        derived = pb is None
        if derived:
            pb = (X.min(axis=0).astype(float), X.max(axis=0).astype(float))
            pb = (pb[0], np.where(pb[1] > pb[0], pb[1], pb[0] + 1.0))
            warnings.warn(
                "bounds were not given, so they were read from the data; this voids the privacy "
                "guarantee (privacy_spent_.epsilon is inf). Pass public bounds.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
        lo, hi = pb
        sens = self._sensitivities(lo, hi, n)
        events, scales = self._events(sens)
        rng = _make_rng(self.random_state)
        r = hi - lo
        Z = (np.clip(X, lo, hi) - lo) / r  # each feature in [0, 1]
        self.n_rows_clipped_ = int(np.count_nonzero(np.any((X < lo) | (X > hi), axis=1)))
        draw = gaussian_noise if self.delta > 0 else l2_laplace_noise
        zmean = np.clip(Z.mean(axis=0) + draw(rng, scales[0], d), 0.0, 1.0)
        zsecond = Z.var(axis=0) + (Z.mean(axis=0) - 0.5) ** 2  # mean of (z - 1/2)^2, in [0, 1/4]
        zsecond = zsecond + draw(rng, scales[1], d)
        # Variances below the noise level of their estimate are not resolved: floor them
        # there (post-processing of public quantities), so no feature is blown up.
        floor = max(1e-4, 2.0 * float(scales[1]))
        zvar = np.clip(zsecond - (zmean - 0.5) ** 2, min(floor, 0.25), 0.25)
        mean = lo + r * zmean
        var = zvar * r**2
        self.bounds_ = (lo, hi)
        self.mean_ = mean if self.with_mean else np.zeros(d)
        self.var_ = var
        self.scale_ = np.sqrt(var) if self.with_std else np.ones(d)
        self.privacy_events_ = events
        self.noise_scale_ = np.asarray(scales)
        spent = price(events, self.delta).budget
        self.privacy_spent_ = PrivacyBudget(math.inf, self.delta) if derived else spent
        return self

    def transform(self, X):
        """Standardise with the private statistics."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False, copy=True)
        return (np.clip(X, *self.bounds_) - self.mean_) / self.scale_

    def inverse_transform(self, X):
        """Undo :meth:`transform`."""
        check_is_fitted(self)
        X = np.asarray(X, dtype=float)
        return X * self.scale_ + self.mean_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def pipeline_privacy_spent(pipeline, delta=None):
    """Total (epsilon, delta) of a fitted Pipeline's DP steps, composed by the accountant.

    All steps are fitted on the same rows (each on the output of the previous,
    DP-released, transform), so their events compose sequentially. ``delta``
    defaults to the sum of the steps' deltas. ``epsilon`` is infinite if a
    step read a bound from the data.
    """
    steps = dp_steps(pipeline)
    if not steps:
        raise TypeError("The pipeline contains no skdp step.")
    for s in steps:
        check_is_fitted(s, "privacy_spent_")
    if delta is None:
        delta = min(math.fsum(s.delta for s in steps), 1 - 1e-12)
    if any(not s.privacy_spent_.is_finite for s in steps):
        return PrivacyBudget(math.inf, delta)
    return price([ev for s in steps for ev in s.privacy_events_], delta).budget


def set_pipeline_budget(pipeline, epsilon, delta, weights=None, n_samples=None, n_features=None):
    """Give a Pipeline one total budget, split across its DP steps.

    Step ``i`` gets ``(s w_i epsilon, w_i delta)`` with ``w`` normalised to sum
    to one (equal shares by default). Without ``n_samples``, ``s = 1``: basic
    composition, so the pipeline is ``(epsilon, delta)``-DP. With
    ``n_samples`` (and ``n_features`` for a :class:`DPStandardScaler`), ``s >= 1``
    is the largest factor for which the accountant prices the steps' planned
    events together at ``<= epsilon`` (Gaussian steps compose far better than
    by adding epsilons). Returns the pipeline.
    """
    steps = dp_steps(pipeline)
    if not steps:
        raise TypeError("The pipeline contains no skdp step.")
    w = np.ones(len(steps)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(steps),) or np.any(w <= 0):
        raise ValueError(f"weights must be {len(steps)} positive numbers, got {weights!r}.")
    w = w / w.sum()

    def assign(scale):
        for st, wi in zip(steps, w):
            st.set_params(epsilon=float(scale * wi * epsilon), delta=float(wi * delta))

    assign(1.0)
    if n_samples is None:
        return pipeline

    def total(scale):
        assign(scale)
        events = []
        for st in steps:
            ev = st.planned_events(n_samples, n_features)
            if ev is None:
                return math.inf
            events.extend(ev)
        return price(events, delta).budget.epsilon

    lo, hi = 1.0, 1.0
    if total(1.0) > epsilon:  # pragma: no cover - basic composition is always valid
        raise RuntimeError("basic split exceeds the budget")
    while total(hi * 2) <= epsilon and hi < 1 / w.max():
        lo, hi = hi * 2, hi * 2
    hi = min(hi * 2, 1 / w.max() + 1e-12)
    for _ in range(40):
        mid = (lo + hi) / 2
        if total(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-6:
            break
    assign(lo)
    return pipeline
