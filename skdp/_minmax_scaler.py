"""``DPMinMaxScaler``: private per-feature ranges mapped to ``feature_range``.

References
----------
.. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
.. [2] M. Cesar and R. Rogers, "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT 2021. <https://arxiv.org/abs/2004.07223>
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._fit import Bounds, Ran, private_fit
from ._plan import transformer_plan
from .privacy import BoundedRangeEvent, calibrate_bounded_range
from .privacy.discrete import secure_selection_plan
from .privacy.quantile import grid_counts, private_quantile_from_counts
from ._scaling import (is_auto_bounds, public_bounds, given_bounds, missing_aware_feature_ranges, planned_features,
                       scaler_rows, warn_unlocated)

__all__ = ["DPMinMaxScaler"]


class DPMinMaxScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Scale each feature to ``feature_range`` using private low and high quantiles.

    For every feature, the ``quantile`` and ``1 - quantile`` quantiles are
    chosen by the exponential mechanism over a public grid: ``n_grid`` points
    spanning public ``bounds`` (:func:`skdp.privacy.private_quantile`:
    score ``-|#{x_ij <= t} - q n|``), or with ``bounds="auto"`` (the default)
    the wide geometric grid on ``[-1e12, 1e12]``
    (:func:`skdp.privacy.quantile.private_feature_ranges`); the score
    sensitivity is 1 under **replace-one** neighbours with public ``n``. The ``2 d`` selections are
    ``eps0``-bounded-range each, with ``eps0`` the largest value whose
    composition the accountant prices at ``(epsilon, delta)``
    (Cesar-Rogers 2021, bounded range to zCDP; the same calibration as the Frank-Wolfe
    solvers). Quantiles rather than the minimum and maximum: the extremes have
    unbounded sensitivity in rank terms and would be chosen nearly at random.
    :meth:`transform` clips to the private range, so every output lies in
    ``feature_range`` (a public bound for the next step, e.g. a
    ``data_norm`` of ``sqrt(d) * max|feature_range|``).

    Missing values (NaN) are ignored by the fit and kept by :meth:`transform`,
    as scikit-learn's ``MinMaxScaler`` does; ``n`` stays public. For the low
    quantile a missing entry counts above every candidate, for the high one
    below every candidate, so both bounds land ``q n`` observed values inside
    the observed range. Replacing one row moves each of these counts by at
    most 1 (a value moves, or an entry turns missing or observed): the score
    sensitivity stays 1 and the events are unchanged.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy-loss target of the fit, > 0 and finite (``inf`` is refused:
        a scaler without privacy is scikit-learn's ``MinMaxScaler``).
    delta : float, default=1e-5
        ``0`` gives pure epsilon-DP (basic composition of the selections).
    bounds : "auto", (lower, upper) or None, default="auto"
        ``"auto"``: no public range; the candidates are the public geometric
        grid on ``[-1e12, 1e12]`` (relative step 1%, 11111 points), and the
        level is raised where ``n`` is too small to locate the ``quantile``
        (see ``quantile``). A pair: public per-feature bounds (scalars or
        arrays); the candidate grid spans them. ``None`` reads them from the
        data with a :class:`~skdp.PrivacyLeakWarning`; ``privacy_spent_`` is
        then infinite.
    feature_range : (min, max), default=(0, 1)
    quantile : float, default=0.02
        The private range is ``[q-quantile, (1-q)-quantile]``; values outside
        are clipped. With ``bounds="auto"``, ``q = max(quantile, q_min)``
        with ``q_min`` the public level of
        :func:`skdp.privacy.quantile.range_quantile_level` (candidates beyond
        the data all score ``-q n``; below ``q_min`` one of the thousands of
        them would likely win; a ``UserWarning`` says when even 0.25 is too
        little).
    n_grid : int, default=64
        Public candidates per feature (evenly spaced over ``bounds``; unused
        with ``"auto"``).
    random_state : int, RandomState instance or None, default=None
        ``None``: the noise of every fit comes from 128 bits of fresh OS entropy,
        never from numpy's global generator. A seed makes the fit reproducible;
        the guarantee then assumes it is secret and used for one release (see
        ``noise_source_``).

    Attributes
    ----------
    data_min_, data_max_, data_range_ : ndarray of shape (n_features,)
        The private range.
    scale_, min_ : ndarray of shape (n_features,)
        ``transform(X) = clip(X, data_min_, data_max_) * scale_ + min_``.
    bounds_ : tuple of ndarrays
        The public bounds, or with ``"auto"`` the private range
        ``(data_min_, data_max_)``.
    quantile_ : float
        The quantile level used (public).
    privacy_spent_ : PrivacyBudget
        One fit's cost; a search's or cross-validation's fits compose (see ``search_privacy_cost``).
    privacy_nominal_ : PrivacyBudget
        The accountant's price, as if the bounds had been public.
    privacy_events_ : list
    accountant_ : str
        The accountant's method.
    noise_scale_ : float
        Gumbel scale ``2 / eps0`` of each quantile selection (report-noisy-max).
    selection_epsilon_ : float
        ``eps0`` of each of the ``2 d`` selections.
    noise_source_ : str
        ``"os-entropy"`` when the noise came from fresh OS entropy
        (``random_state=None``), else ``"seed:<digest>"`` of the generator
        state the fit started from. Releases with equal digests share their
        noise; skdp's composition tools report them as ``epsilon=inf``.
    n_samples_seen_ : int
        The number of rows ``n`` (public).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPMinMaxScaler
    >>> X = np.random.RandomState(0).uniform(0, 10, size=(5000, 2))
    >>> sc = DPMinMaxScaler(epsilon=1.0, bounds=(0, 10), random_state=0).fit(X)
    >>> bool(np.all(sc.transform(X) >= 0) and np.all(sc.transform(X) <= 1))
    True
    >>> sc.privacy_spent_.epsilon <= 1.0
    True
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "bounds": [tuple, list, StrOptions({"auto"}), None],
        "feature_range": [tuple, list],
        "quantile": [Interval(Real, 0, 0.5, closed="neither")],
        "n_grid": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, epsilon=1.0, delta=1e-5, *, bounds="auto", feature_range=(0, 1), quantile=0.02, n_grid=64,
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.feature_range = feature_range
        self.quantile = quantile
        self.n_grid = n_grid
        self.random_state = random_state

    def _check(self):
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        fr = self.feature_range
        if len(fr) != 2 or not all(isinstance(v, Real) and math.isfinite(v) for v in fr) or not fr[0] < fr[1]:
            raise ValueError(f"feature_range must be (min, max) with min < max, got {fr!r}.")

    def _selection_epsilon(self, n_features):
        return calibrate_bounded_range(2 * int(n_features), self.epsilon, self.delta)

    def planned_events(self, n_samples, n_features=None):
        """Events a fit releases (``None``: bounds come from the data)."""
        self._validate_params()
        self._check()
        if self.bounds is None:
            return None
        nf = planned_features(self, n_features)
        public_bounds(self.bounds, nf)
        return [BoundedRangeEvent(self._selection_epsilon(nf), 2 * nf)]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, privacy_ledger=None):
        """Choose the private range of every feature.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
        privacy_ledger : PrivacyLedger or None, default=None

        Returns
        -------
        self : object
        """
        return private_fit(self, X, privacy_ledger=privacy_ledger)

    # -- the fit: skdp._fit.private_fit calls _plan_fit, _read, _select_bounds, _run, _set_fitted -------------
    def _plan_fit(self, X, y):
        """The fit's plan from the shape of ``X`` and the parameters (checked first); no row is read."""
        self._check()
        return transformer_plan(self, X)

    def _read(self, plan, X, y):
        """The validated rows (missing values kept: they are ignored by the selections)."""
        return scaler_rows(self, X)

    def _select_bounds(self, plan, X, rng):
        """The span of the candidate grids: public ``bounds``, or with ``bounds=None`` read from the data.

        Nothing is selected privately here: with ``bounds="auto"`` the private
        range is the fit's release itself (:meth:`_run`), and the span is
        ``None``.
        """
        lo, hi, derived = given_bounds(self, X)
        return Bounds(values=dict(lower=lo, upper=hi), derived=derived)

    def _run(self, plan, X, bounds, rng):
        """The ``2 d`` private quantile selections (the release): the low and high end of every feature's range.

        Over the wide public grid with ``bounds="auto"`` (at a level ``n`` can
        locate), else over ``n_grid`` points spanning the bounds.
        """
        n, d = X.shape
        eps0 = self._selection_epsilon(d)
        lo, hi = bounds.values["lower"], bounds.values["upper"]
        quantile = float(self.quantile)
        if is_auto_bounds(self.bounds):  # no public range: the wide public grid, at a level n can locate
            quantile = max(quantile, warn_unlocated(self, n, eps0))
            data_min, data_max, _ = missing_aware_feature_ranges(X, quantile, eps0, rng)
            lo, hi = data_min, data_max
        else:
            data_min, data_max = np.empty(d), np.empty(d)
            for j in range(d):
                grid = np.linspace(lo[j], hi[j], int(self.n_grid))
                col = np.clip(X[:, j], lo[j], hi[j])
                # #{x_ij <= c} over the observed values; the missing ones count as below every candidate for
                # the high quantile (see missing_aware_feature_ranges): each count still moves by 1 at most
                below, n_missing = grid_counts(col, grid), int(np.count_nonzero(np.isnan(col)))
                data_min[j] = private_quantile_from_counts(below, n, self.quantile, eps0, rng, grid,
                                                           secure=False)[0]
                data_max[j] = private_quantile_from_counts(below + n_missing, n, 1 - self.quantile, eps0, rng,
                                                           grid, secure=False)[0]
                if data_max[j] <= data_min[j]:  # post-processing: one grid step at least
                    step = grid[1] - grid[0]
                    data_min[j], data_max[j] = min(data_min[j], data_max[j]), max(data_min[j], data_max[j]) + step
        # the per-feature selections are Gumbel draws (see DPStandardScaler.fit)
        return Ran([BoundedRangeEvent(eps0, 2 * d)], secure_selection_plan(1.0, eps0, False)[0],
                   n_clipped=np.count_nonzero(np.any((X < lo) | (X > hi), axis=1)),
                   values=dict(data_min=data_min, data_max=data_max, bounds=(lo.copy(), hi.copy()),
                               quantile=quantile, selection_epsilon=eps0, n_samples=n))

    def _set_fitted(self, plan, X, bounds, ran):
        """The range and the affine map to ``feature_range`` (post-processing of the selected range)."""
        a, b = (float(v) for v in self.feature_range)
        data_min, data_max = ran.values["data_min"], ran.values["data_max"]
        self.quantile_ = ran.values["quantile"]
        self.bounds_ = ran.values["bounds"]
        self.data_min_, self.data_max_ = data_min, data_max
        self.data_range_ = data_max - data_min
        self.scale_ = (b - a) / self.data_range_
        self.min_ = a - data_min * self.scale_
        self.selection_epsilon_ = ran.values["selection_epsilon"]
        self.n_samples_seen_ = int(ran.values["n_samples"])

    def transform(self, X):
        """Scale with the private range (values outside it are clipped)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False, copy=True,
                          ensure_all_finite="allow-nan")
        low, high = self.feature_range
        # in feature_range by construction; the clip removes the last bit that rounding can add (a public bound
        # the next step relies on, e.g. its data_norm)
        return np.clip(np.clip(X, self.data_min_, self.data_max_) * self.scale_ + self.min_, low, high)

    def inverse_transform(self, X):
        """Undo :meth:`transform` (inside the private range)."""
        check_is_fitted(self)
        X = np.asarray(X, dtype=float)
        return (X - self.min_) / self.scale_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags
