"""DPSimpleImputer: missing values replaced by per-column statistics released with differential privacy."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from . import diagnostics
from ._encoders import (_distinct, _is_missing, _missing_mask, category_selection_events, category_selection_plan,
                        column_namer)
from ._fit import Bounds, Ran, private_fit
from ._plan import transformer_plan
from ._scaling import bounds_from_data
from ._warnings import caller_stacklevel as _caller_stacklevel
from .privacy import (BoundedRangeEvent, GaussianEvent, LaplaceEvent, PrivacyBudget, calibrate_bounded_range,
                      calibrate_gaussian, gaussian_noise, laplace_noise, pure_noise_scale, weight_coordinate_scale)
from .privacy.discrete import secure_selection_plan, select
from .privacy.quantile import WIDE_SIGNED_GRID, grid_counts, private_quantile_from_counts, range_quantile_level

__all__ = ["DPSimpleImputer"]

_NUMERIC = ("mean", "median")


def _public_pair(bounds, d):
    """Per-column ``(lower, upper)`` from public ``bounds`` (scalars or arrays of shape (d,)), checked."""
    if isinstance(bounds, str) or len(bounds) != 2:
        raise ValueError(f"bounds must be 'auto', None or a pair (lower, upper), got {bounds!r}.")
    try:
        lo = np.broadcast_to(np.asarray(bounds[0], dtype=float), (d,)).copy()
        hi = np.broadcast_to(np.asarray(bounds[1], dtype=float), (d,)).copy()
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be numbers or arrays of shape ({d},).") from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        raise ValueError("bounds must be finite with lower < upper for every feature.")
    return lo, hi


class DPSimpleImputer(TransformerMixin, BaseEstimator):
    """Replace missing values by per-column statistics released with differential privacy.

    The private counterpart of :class:`sklearn.impute.SimpleImputer`. Each
    column's statistic is computed from its **observed** values and released
    with noise; missing entries are then replaced by it. No row is ever
    dropped: ``n`` stays the public number of rows (dropping incomplete rows
    would make it a function of the data, and every guarantee here is for
    **replace-one** neighbours with public ``n``). A replacement of one row
    may change a value, or turn an observed entry into a missing one or the
    reverse; every sensitivity below covers all three.

    * ``"mean"``: per column ``j``, with public bounds ``[l_j, u_j]`` (range
      ``r_j``, midpoint ``c_j``), the observed values are clipped and centred,
      ``v_ij = (clip(x_ij) - c_j) / r_j`` in ``[-1/2, 1/2]``, and two sums
      are released together: ``S_j = sum_{i observed} v_ij`` and the observed
      count ``m_j``. The count is data-dependent, so it is released too, in
      the same draw: the vector ``(S_j, k m_j)_j`` gets Gaussian noise of std
      ``sigma`` (Laplace noise of scale ``b`` with ``delta = 0``). Replace-one
      moves, per column, ``(S_j, m_j)`` by ``(|dS| <= 1, 0)`` (a value
      changes) or ``(|dS| <= 1/2, 1)`` (an entry turns missing or observed).
      With ``k = sqrt(3)/2`` both give ``dS^2 + k^2 dm^2 <= 1``, so the L2
      sensitivity of the whole vector is ``sqrt(d)``, that of the sums alone
      (:func:`skdp.privacy.weight_coordinate_scale` with sensitivity 1,
      row norm 1/2 and step 1: the count rides for free). With ``delta = 0``,
      ``k = 1/2`` gives ``|dS| + k |dm| <= 1``: L1 sensitivity ``d``.
      ``sigma = sqrt(d) / mu*(epsilon, delta)``
      (:func:`skdp.privacy.calibrate_gaussian`), priced as
      ``GaussianEvent(sqrt(d), sigma)`` (``LaplaceEvent(d, b)``, ``b = d /
      epsilon``). The statistic is ``c_j + r_j clip(S~_j / max(m~_j, 1), -1/2,
      1/2)`` (post-processing). Neither the sums nor the counts depend on
      ``n``.
    * ``"median"``: per column, the exponential-mechanism median over a public
      grid (``n_grid`` points spanning ``bounds``, or with ``bounds="auto"``
      the wide public grid on ``[-1e12, 1e12]`` of
      :func:`skdp.privacy.quantile.private_feature_ranges`), scored by
      :func:`skdp.privacy.quantile.point_scores` at level 1/2 on the counts
      ``R(c) = #{observed x_ij <= c} + m'_j / 2`` (``m'_j`` the column's missing
      count: half of the missing entries count below every candidate, half
      above, so the level ``n/2`` is the median of the observed values
      whatever ``m'_j`` is). Replace-one moves ``R(c)`` by at most 1 (a value
      moves: 1; an entry turns missing: ``1/2`` for the missing half, and at
      most 1 for the observed count, with opposite signs or 0): score
      sensitivity 1, each selection ``eps0``-bounded-range, ``d`` of them
      priced as ``BoundedRangeEvent(eps0, d)`` with ``eps0`` the largest the
      accountant prices at ``(epsilon, delta)``
      (:func:`skdp.privacy.calibrate_bounded_range`).
    * ``"most_frequent"``: with public ``categories`` (one list per column),
      the exponential mechanism over them, score the observed count of each
      category (replace-one moves each count by at most 1: sensitivity 1),
      ``BoundedRangeEvent(eps0, d)`` as for the median. With
      ``categories="auto"`` (no public list), the private selection of
      :class:`~skdp.DPOneHotEncoder`: the observed categories' counts get
      Gaussian noise, those above its threshold ``tau`` are kept, and the
      statistic is the kept category with the largest noisy count (a
      post-processing of the thresholded noisy counts, which that selection's
      analysis covers: :func:`skdp._encoders.category_selection_events`);
      a column with no category kept is filled with ``fill_value``.
      Needs ``delta > 0``.
    * ``"constant"``: ``fill_value`` (public); nothing is learned, nothing is
      spent (``privacy_spent_`` is ``(0, 0)``, no noise is drawn), and in a
      pipeline the step takes no share of the budget.

    The exact number of missing values per column is never stored on the
    model; the data holder reads it from :func:`skdp.fit_diagnostics`
    (``n_missing``).

    Parameters
    ----------
    strategy : {"mean", "median", "most_frequent", "constant"}, default="mean"
    epsilon : float, default=1.0
        Budget of the fit (> 0; ``inf`` is refused). Unused with ``"constant"``.
    delta : float, default=1e-5
        ``0`` gives pure epsilon-DP (``"mean"``: Laplace noise; ``"median"``
        and ``"most_frequent"`` with given categories: basic composition).
    bounds : "auto", (lower, upper) or None, default="auto"
        Public per-column bounds (scalars or arrays of shape (n_features,)):
        ``"mean"`` clips to them, ``"median"`` spans its grid over them.
        ``"auto"``: ``"median"`` uses the wide public grid (no bounds needed);
        ``"mean"`` cannot (its noise is proportional to the range) and refuses
        it (``ValueError``): give public bounds (a codebook's), or use the
        median. ``None`` reads them from the data (minimum and maximum of the
        observed values) with a :class:`~skdp.PrivacyLeakWarning`;
        ``privacy_spent_`` is then infinite.
    categories : "auto" or list of array-like, default="auto"
        ``"most_frequent"`` only: the public categories of every column, or
        ``"auto"`` (selected privately, above).
    fill_value : str or number, default=None
        ``"constant"``: the value imputed (``None``: 0 for numbers,
        ``"missing_value"`` for strings, as scikit-learn's). ``"most_frequent"``
        with ``categories="auto"``: the value of a column where no category was
        selected (same default).
    add_indicator : bool, default=False
        Append one missing-value indicator column per feature (for **every**
        feature, as ``MissingIndicator(features="all")``: which columns have
        missing values is not released, so the width is public, ``2 d``).
    n_grid : int, default=256
        ``"median"`` with public bounds: the number of candidates per column.
    random_state : int, RandomState instance or None, default=None
        ``None``: the noise of every fit comes from 128 bits of fresh OS
        entropy. A seed makes the fit reproducible; the guarantee then
        assumes it is secret and used for one release (see ``noise_source_``).

    Attributes
    ----------
    statistics_ : ndarray of shape (n_features,)
        The value imputed in every column (released, private).
    privacy_spent_ : PrivacyBudget
        The fit's cost; ``(0, 0)`` with ``"constant"``.
    privacy_nominal_ : PrivacyBudget
        The accountant's price, as if the bounds had been public.
    privacy_events_ : list
    accountant_ : str
    noise_scale_ : float
        ``"mean"``: the std (Laplace scale) of the sums' noise (the counts'
        is ``1/k`` times it); ``"median"`` / ``"most_frequent"``: the
        selection's Gumbel scale, or with ``categories="auto"`` the std of
        the counts' noise; 0 with ``"constant"``.
    noise_source_ : str or None
        ``"os-entropy"``, ``"seed:<digest>"``, or ``None`` (``"constant"``:
        no noise is drawn).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has string column names.

    See Also
    --------
    sklearn.impute.SimpleImputer : the non-private imputer (its ``"constant"``
        strategy is free in a private pipeline too).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPSimpleImputer
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(0, 10, size=(5000, 2))
    >>> X[rng.uniform(size=X.shape) < 0.1] = np.nan
    >>> imp = DPSimpleImputer(strategy="mean", bounds=(0, 10), random_state=0).fit(X)
    >>> np.round(imp.statistics_, 1)
    array([5., 5.])
    >>> bool(np.isnan(imp.transform(X)).any()), imp.transform(X).shape
    (False, (5000, 2))
    >>> imp.privacy_spent_.epsilon <= 1.0
    True
    >>> DPSimpleImputer(strategy="constant", fill_value=-1).fit(X).privacy_spent_
    PrivacyBudget(epsilon=0.0, delta=0.0, relation='replace_one')
    """

    _parameter_constraints: dict = {
        "strategy": [StrOptions({"mean", "median", "most_frequent", "constant"})],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "bounds": [tuple, list, StrOptions({"auto"}), None],
        "categories": [StrOptions({"auto"}), list],
        "fill_value": "no_validation",
        "add_indicator": ["boolean"],
        "n_grid": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, strategy="mean", *, epsilon=1.0, delta=1e-5, bounds="auto", categories="auto",
                 fill_value=None, add_indicator=False, n_grid=256, random_state=None):
        self.strategy = strategy
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.categories = categories
        self.fill_value = fill_value
        self.add_indicator = add_indicator
        self.n_grid = n_grid
        self.random_state = random_state

    # ------------------------------------------------------------------ the plan (public quantities only)
    def _check(self):
        """Refuse parameters the strategy cannot use, before any data is read."""
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        if self.strategy == "mean" and isinstance(self.bounds, str):
            raise ValueError("DPSimpleImputer(strategy='mean') needs public bounds=(lower, upper) (the noise of a "
                             "mean is proportional to its range); bounds='auto' is available for "
                             "strategy='median'.")
        if self.strategy == "most_frequent" and isinstance(self.categories, str) and self.delta == 0:
            raise ValueError("DPSimpleImputer(strategy='most_frequent', categories='auto') selects the categories "
                             "privately, which needs delta > 0. With delta=0, pass the public categories.")

    def _width(self, n_features):
        if n_features is not None:
            d = int(n_features)
        elif self.strategy in _NUMERIC and not isinstance(self.bounds, str) and self.bounds is not None:
            d = max(int(np.size(self.bounds[0])), int(np.size(self.bounds[1])))
        elif self.strategy == "most_frequent" and not isinstance(self.categories, str):
            d = len(self.categories)
        else:
            raise ValueError(f"n_features is needed to plan DPSimpleImputer(strategy={self.strategy!r}): its "
                             "releases cover every column.")
        if d < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features!r}.")
        return d

    def _count_factor(self):
        """``k`` of the ``"mean"`` release (class docstring), from :func:`skdp.privacy.weight_coordinate_scale`."""
        gaussian = self.delta > 0
        return 1.0 / weight_coordinate_scale(1.0, 1.0, 0.5, 1.0, gaussian=gaussian)

    def _release_plan(self, d):
        """``(events, scale)`` of a fit on ``d`` columns (``scale``: see ``noise_scale_``)."""
        eps, delta = float(self.epsilon), float(self.delta)
        if self.strategy == "constant":
            return [], 0.0
        if self.strategy == "mean":
            if delta > 0:
                sigma = calibrate_gaussian(float(d), eps, delta)
                return [GaussianEvent(math.sqrt(d), sigma)], sigma
            b = pure_noise_scale(float(d), eps)
            return [LaplaceEvent(float(d), b)], b
        if self.strategy == "most_frequent" and isinstance(self.categories, str):
            sigma, column_delta, _ = category_selection_plan(d, eps, delta)
            return category_selection_events(d, sigma, column_delta), sigma
        eps0 = calibrate_bounded_range(d, eps, delta)
        secure = self.strategy == "most_frequent"  # a few public categories: the exact exponential mechanism
        return [BoundedRangeEvent(eps0, d)], secure_selection_plan(1.0, eps0, secure)[0]

    def planned_events(self, n_samples, n_features=None):
        """The events a fit on ``n_samples`` rows of ``n_features`` columns releases.

        ``[]`` with ``"constant"`` (nothing is learned); ``None`` when the
        bounds are read from the data (``bounds=None``: no finite guarantee).
        The events depend on the parameters and ``n_features`` only, never on
        ``n_samples`` nor on the data.
        """
        self._validate_params()
        self._check()
        if self.strategy == "constant":
            return []
        if self.strategy in _NUMERIC and self.bounds is None:
            return None
        d = self._width(n_features)
        if self.strategy in _NUMERIC and not isinstance(self.bounds, str):
            _public_pair(self.bounds, d)
        if self.strategy == "most_frequent" and not isinstance(self.categories, str) and len(self.categories) != d:
            raise ValueError(f"categories must hold one list per column ({d} columns, {len(self.categories)} "
                             "lists).")
        return self._release_plan(d)[0]

    # ------------------------------------------------------------------ fit
    def _validated(self, X, reset):
        numeric = self.strategy in _NUMERIC
        dtype = [np.float64, np.float32] if numeric else None
        if not numeric and hasattr(X, "iloc"):  # keep a DataFrame's column types as an object array
            validate_data(self, X=X, reset=reset, skip_check_array=True)
            return np.asarray(X.astype(object)).copy()
        X = validate_data(self, X, dtype=dtype, reset=reset, ensure_all_finite="allow-nan", copy=True)
        if not numeric and X.dtype.kind in "US":
            X = X.astype(object)
        return X

    def _default_fill(self, X):
        if self.fill_value is not None:
            return self.fill_value
        return 0 if X.dtype.kind in "fiub" else "missing_value"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, privacy_ledger=None):
        """Release every column's statistic privately (nothing with ``"constant"``).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Missing values are NaN (or None / pandas' NA in object columns).
            ``"mean"`` and ``"median"`` need numbers.
        y : None
            Ignored.
        privacy_ledger : PrivacyLedger or None, default=None
            Charged before the data is read (or the active ``with ledger:``);
            nothing is charged with ``"constant"``.

        Returns
        -------
        self : object
        """
        if self.strategy == "constant":  # learns nothing, costs nothing, draws no noise
            return self._fit_constant(X)
        return private_fit(self, X, privacy_ledger=privacy_ledger)

    def _fit_constant(self, X):
        """The fit of ``"constant"``: the input checked, nothing charged, drawn or released."""
        self._check()
        diagnostics.reset(self)
        X = self._validated(X, reset=True)
        d = X.shape[1]
        fill = self._default_fill(X)
        self.statistics_ = np.full(d, fill, dtype=object if isinstance(fill, str) else float)
        self.noise_source_ = None
        self.privacy_events_, self.accountant_, self.noise_scale_ = [], "none", 0.0
        self.privacy_spent_ = self.privacy_nominal_ = PrivacyBudget(0.0, 0.0)
        return self

    # -- the other strategies: skdp._fit.private_fit calls _plan_fit, _read, _select_bounds, _run, _set_fitted --
    def _plan_fit(self, X, y):
        """The fit's plan from the shape of ``X`` and the parameters (checked first); no row is read."""
        self._check()
        return transformer_plan(self, X)

    def _read(self, plan, X, y):
        """The validated rows (a copy) and the mask of their missing entries."""
        X = self._validated(X, reset=True)
        n, d = X.shape
        missing = np.column_stack([_missing_mask(X[:, j]) for j in range(d)]) if d else np.zeros((n, 0), bool)
        return X, missing

    def _select_bounds(self, plan, data, rng):
        """``"mean"`` and ``"median"``: the span of each column's values (:meth:`_bounds`; read from the data
        with ``bounds=None``, ``derived``). Nothing is selected privately: each statistic is the release."""
        if self.strategy not in _NUMERIC:
            return Bounds()
        lo, hi, derived = self._bounds(*data)
        return Bounds(values=dict(lower=lo, upper=hi), derived=derived)

    def _run(self, plan, data, bounds, rng):
        """Every column's statistic, released (the noisy mean, the private median or the private mode)."""
        X, missing = data
        events, scale = self._release_plan(X.shape[1])
        found, n_clipped = dict(n_missing=np.count_nonzero(missing, axis=0)), None
        if self.strategy == "mean":
            lo, hi = bounds.values["lower"], bounds.values["upper"]
            statistics = self._mean(X, missing, lo, hi, scale, rng)
            n_clipped = np.count_nonzero(np.any((X < lo) | (X > hi), axis=1))
        elif self.strategy == "median":
            statistics = self._median(X, missing, bounds.values["lower"], bounds.values["upper"],
                                      events[0].epsilon, rng)
        else:
            statistics = self._most_frequent(X, missing, events, rng)
        return Ran(events, scale, n_clipped=n_clipped, diagnostics=found, values=dict(statistics=statistics))

    def _set_fitted(self, plan, data, bounds, ran):
        self.statistics_ = ran.values["statistics"]

    def _bounds(self, X, missing):
        """``(lower, upper, derived)``: public bounds, ``None`` (the wide grid) or read from the data (warned)."""
        d = X.shape[1]
        if isinstance(self.bounds, str):
            return None, None, False
        if self.bounds is not None:
            lo, hi = _public_pair(self.bounds, d)
            return lo, hi, False
        return (*bounds_from_data(X), True)

    def _mean(self, X, missing, lo, hi, scale, rng):
        """The joint release of the centred sums and the observed counts (class docstring)."""
        d = X.shape[1]
        r, mid = hi - lo, (lo + hi) / 2
        V = np.where(missing, 0.0, (np.clip(X, lo, hi) - mid) / r)
        k = self._count_factor()
        query = np.concatenate([V.sum(axis=0), k * np.count_nonzero(~missing, axis=0)])
        draw = gaussian_noise if self.delta > 0 else laplace_noise
        noisy = query + draw(rng, scale, 2 * d)
        sums, counts = noisy[:d], noisy[d:] / k
        return mid + r * np.clip(sums / np.maximum(counts, 1.0), -0.5, 0.5)

    def _median(self, X, missing, lo, hi, eps0, rng):
        """The exponential-mechanism median of every column over its public grid (class docstring)."""
        n, d = X.shape
        out = np.empty(d)
        if lo is None and not range_quantile_level(n, eps0)[1]:
            warnings.warn(f"DPSimpleImputer(strategy='median', bounds='auto'): {n} rows are too few to locate a "
                          f"median among {WIDE_SIGNED_GRID.size} candidates at a selection epsilon of {eps0:.3g}, "
                          "so a statistic may land far from the data. Give public bounds or a larger epsilon.",
                          UserWarning, stacklevel=_caller_stacklevel())
        for j in range(d):
            grid = WIDE_SIGNED_GRID if lo is None else np.linspace(lo[j], hi[j], int(self.n_grid))
            col = X[:, j] if lo is None else np.clip(X[:, j], lo[j], hi[j])
            below = grid_counts(col, grid) + 0.5 * np.count_nonzero(missing[:, j])  # NaN counted nowhere
            out[j] = private_quantile_from_counts(below, n, 0.5, eps0, rng, grid, secure=False)[0]
        return out

    def _most_frequent(self, X, missing, events, rng):
        """The private mode of every column (class docstring)."""
        n, d = X.shape
        fill = self._default_fill(X)
        out = np.empty(d, dtype=object)
        names = column_namer(self)
        if isinstance(self.categories, str):
            sigma, column_delta, tau = category_selection_plan(d, float(self.epsilon), float(self.delta))
            for j in range(d):
                labels = _distinct(X[:, j], names(j))
                codes = _codes_of(X[:, j], labels)
                counts = np.bincount(codes[codes >= 0], minlength=labels.size)
                noisy = counts + gaussian_noise(rng, sigma, labels.size)
                kept = noisy > tau
                out[j] = labels[kept][np.argmax(noisy[kept])] if kept.any() else fill
        else:
            eps0 = events[0].epsilon
            plan = secure_selection_plan(1.0, eps0, True)
            for j in range(d):
                cats = np.asarray(self.categories[j], dtype=object)
                if cats.ndim != 1 or cats.size == 0 or any(_is_missing(v) for v in cats.tolist()):
                    raise ValueError(f"categories[{j}] must be a non-empty 1-D list of categories without missing "
                                     "values.")
                codes = _codes_of(X[:, j], cats)
                counts = np.bincount(codes[codes >= 0], minlength=cats.size).astype(float)
                out[j] = cats[select(rng, counts, *plan)]
        if X.dtype.kind in "fc":
            return out.astype(float)
        return out

    # ------------------------------------------------------------------ transform
    def transform(self, X):
        """Replace the missing values of every column by its statistic.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        X_out : ndarray of shape (n_samples, n_features), or (n_samples, 2 n_features) with ``add_indicator``
            A new array (``X`` is not modified); with ``add_indicator`` the
            indicator columns (1.0 where the value was missing) follow.
        """
        check_is_fitted(self)
        X = self._validated(X, reset=False)
        d = X.shape[1]
        missing = np.column_stack([_missing_mask(X[:, j]) for j in range(d)]) if d else np.zeros((len(X), 0), bool)
        if X.dtype.kind in "fc" and self.statistics_.dtype == object:  # a string fill_value for numbers
            X = X.astype(object)
        for j in range(d):
            X[missing[:, j], j] = self.statistics_[j]
        if not self.add_indicator:
            return X
        return np.hstack([X, missing.astype(X.dtype if X.dtype.kind in "fc" else float)])

    def get_feature_names_out(self, input_features=None):
        """Output feature names: the input names, then ``missingindicator_<name>`` with ``add_indicator``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        names = list(_check_feature_names_in(self, input_features))
        if self.add_indicator:
            names += [f"missingindicator_{name}" for name in names]
        return np.asarray(names, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = self.strategy not in _NUMERIC
        tags.input_tags.categorical = self.strategy not in _NUMERIC
        return tags


def _codes_of(column, categories):
    """Index of every value in ``categories`` (-1 where it is missing or not one of them)."""
    index = {c: i for i, c in enumerate(categories.tolist())}
    codes = np.fromiter((index.get(v, -1) for v in column.tolist()), dtype=np.intp, count=column.shape[0])
    codes[_missing_mask(column)] = -1
    return codes
