"""``DPStandardScaler``: private means and standard deviations, in memory or on Dask row blocks.

References
----------
.. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
.. [2] M. Cesar and R. Rogers, "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT 2021. <https://arxiv.org/abs/2004.07223>
"""

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy import special
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _dask
from ._dask import DaskRows, is_dask_collection, refuse_none, set_features, validated_block
from ._fit import Bounds, Ran, private_fit
from ._plan import rows_elsewhere, transformer_plan
from .privacy import (BoundedRangeEvent, GaussianEvent, L2LaplaceEvent, gaussian_noise, l2_laplace_noise, laplace_noise,
                      private_quantile, pure_noise_scale, weight_coordinate_scale)
from ._weights import WEIGHT_CONSTRAINTS, check_weight_params, default_weight, row_weights, weight_bound
from .privacy.quantile import (WIDE_SIGNED_GRID, grid_counts, private_feature_ranges_from_counts,
                               private_quantile_from_counts)
from ._scaling import (is_auto_bounds, public_bounds, given_bounds, missing_aware_feature_ranges, scaler_rows, unit_box,
                       clip_unit_rows, planned_features, warn_unlocated, scaler_selection_epsilon, release_unit)

__all__ = ["DPStandardScaler"]


class DPStandardScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Standardise features with differentially private means and standard deviations.

    Each feature is clipped to bounds ``[lower_j, upper_j]`` (by default
    private quantiles, ``bounds="auto"``; or public bounds) and
    mapped to ``u_j = (x_j - m_j) / r_j`` in ``[-1/2, 1/2]`` (``m_j`` the
    midpoint, ``r_j`` the range), so every feature gets noise in proportion to
    its own range. Two vectors are released with the Gaussian mechanism (the
    L2-Laplace mechanism when ``delta=0``): the means of ``u`` and the means of
    ``u**2``. Their L2 sensitivities under **replace-one** neighbours with
    public ``n`` are ``sqrt(d)/n`` and ``sqrt(d)/(4n)`` (each coordinate moves
    by at most 1 and 1/4), times ``max_sample_weight`` (the releases are
    weighted sums; see that parameter). With ``clip_norm`` the rows ``u`` are also clipped
    to the L2 ball of radius ``c`` before the means, which lowers them to
    ``min(2c, sqrt(d))/n`` and ``min(sqrt(2) c^2, c/sqrt(2), sqrt(d)/4)/n``
    (two rows differ by at most ``2c``; the squares ``s = u**2`` are
    non-negative with ``||s||_2 <= ||u||^2 <= c^2`` and
    ``||s||_2^2 <= ||u||^2 / 4``, and ``||s - s'||^2 <= ||s||^2 + ||s'||^2``).
    The releases split the budget by ``mean_fraction`` (a share of ``mu*^2``
    of the analytic Gaussian mechanism, together exactly ``(epsilon,
    delta)`` by Dong-Roth-Su 2022, Cor. 3.3; a share of epsilon when
    ``delta=0``). The variance is the noisy second moment minus the squared
    noisy mean, clamped to ``[max(1e-4, 2 s) r^2, r^2/4]`` with ``s`` the
    second-moment noise scale (variances below the noise level are not
    resolved). :meth:`transform` clips to the public bounds first, like the
    fit (never to ``clip_norm``, which only serves the estimate). Tight public
    bounds matter: the noise is a fixed fraction of each range.

    **Missing values** (NaN) are ignored by the fit and kept by
    :meth:`transform`, as scikit-learn's ``StandardScaler`` does, and ``n``
    stays the public number of rows (no row is dropped). A missing entry adds
    ``u = 0`` to both sums, so the means are taken over each column's
    observed entries: that needs the observed counts, which are data. They
    are released in the same draw as the means: per column the mean release
    carries ``k e_j`` with ``e_j = (1/n) #{i : x_ij missing}`` and ``k =
    sqrt(3) c / 2`` (``c = min(1, max_sample_weight)``). Per column a
    replacement moves ``(c u-sum / n, e)`` by ``(<= W/n, 0)`` (a value
    changes) or ``(<= W/(2n), 1/n)`` (an entry turns missing or observed), so
    ``k`` makes both at most ``W/n`` in L2: the joint vector has the L2
    sensitivity ``sqrt(d) W / n`` of the means alone and is priced by the same
    event (:func:`skdp.privacy.weight_coordinate_scale`; the mean release is a
    vector of ``2 d`` coordinates in every fit, the second half zeros where
    the fractions are not carried). The second moments' sensitivity is
    unchanged (``u**2`` in ``[0, 1/4]``, and a missing entry counts 0). The
    noisy fractions below their noise's ``1 - 1e-6`` quantile are set to 0
    (post-processing), so a complete table gives the fit without missing
    values; the sums are divided by the estimated observed counts, and
    ``n_samples_seen_`` is then one estimated count per feature. With
    ``bounds="auto"`` the missing entries count above every candidate for the
    low bound and below every candidate for the high one
    (:func:`missing_aware_feature_ranges`: each count still moves by 1). With
    ``clip_norm`` or ``sample_weight`` (rows, not columns, carry the weights
    there) missing values are refused (``ValueError``): impute them first.

    ``clip_norm`` trades a bias for less noise. With few rows or a small
    epsilon the box sensitivity makes the means noisy (diabetes, ``n = 309``,
    ``d = 10``, bounds 20% wider than the data, epsilon about 0.5: the means
    are off by about half a standard deviation per feature), and clipping the
    rows at a private quantile of their norms removes most of that noise (the
    measurements are in :doc:`/user_guide/defaults`). With many rows the noise is negligible and
    the clipping bias is not (``scale_`` then underestimates the standard
    deviation of heavy rows), so the default is ``None``, which converges to
    sklearn's ``StandardScaler``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy-loss target of the fit, > 0 and finite (``inf`` is refused:
        a scaler without privacy is scikit-learn's ``StandardScaler``).
    delta : float, default=1e-5
    bounds : "auto", (lower, upper) or None, default="auto"
        Per-feature bounds. ``"auto"``: chosen privately, as each feature's
        ``q``- and ``(1 - q)``-quantiles by the exponential mechanism over a
        public geometric grid on ``[-1e12, 1e12]`` (relative step 1%, 11111
        points; :func:`skdp.privacy.quantile.private_feature_ranges`, score
        sensitivity 1 under replace-one), ``2 d`` bounded-range selections
        paid with ``bound_budget_fraction``. The level ``q`` is a public
        function of ``n``, the selection epsilon and the grid
        (:func:`skdp.privacy.quantile.range_quantile_level`: 0.01 with many rows,
        up to 0.25 with few); with too few rows for ``q = 0.25`` a bound may land
        far outside the data, and a ``UserWarning`` says so. A pair: public
        bounds, scalars or arrays of shape (n_features,) (domain knowledge;
        the whole budget then goes to the means and scales, and tight public
        bounds are the most accurate choice). ``None`` reads them from the
        data (min/max) with a :class:`~skdp.PrivacyLeakWarning`;
        ``privacy_spent_`` is then infinite.
    with_mean : bool, default=True
    with_std : bool, default=True
    mean_fraction : float, default=0.85
        Share of the budget for the means (of ``mu*^2`` when ``delta > 0``, of
        ``epsilon`` when ``delta = 0``); the rest goes to the second moments.
        The default favours the means: for a downstream linear model a wrong
        centre shifts every row, a wrong scale only reweights one feature
        (see :doc:`/user_guide/defaults`).
    clip_norm : float, "auto" or None, default=None
        Radius ``c`` of the L2 ball the rows ``u`` (units of each feature's
        range, centred at the midpoint of the bounds; ``||u|| <= sqrt(d)/2``
        always) are clipped to before the means are taken. ``None``: no
        clipping. ``"auto"``: ``c`` is the 0.75-quantile of the row norms
        ``||u_i||``, chosen by the exponential mechanism over a public geometric
        grid on ``[sqrt(d)/200, sqrt(d)/2]`` (:func:`skdp.privacy.private_quantile`,
        score sensitivity 1 under replace-one), one of the selections paid
        with ``bound_budget_fraction`` (below); ``privacy_spent_`` is the
        accountant's price of all of them and the two releases. A noisy choice errs towards the top of the grid, i.e.
        towards no clipping, never towards a larger sensitivity.
    bound_budget_fraction : float or "auto", default="auto"
        Share of ``epsilon`` spent on the private selections (``bounds="auto"``:
        ``2 d`` quantiles; ``clip_norm="auto"``: the radius ``c``): each
        selection gets the same ``eps0``, the largest for which the accountant
        prices them all at ``bound_budget_fraction * epsilon``. The two
        releases are then calibrated so that the fit as a whole costs exactly
        ``(epsilon, delta)`` (the accountant composes bounded-range and
        Gaussian events more tightly than by adding epsilons). Unused when
        neither is ``"auto"``. ``"auto"``: 0.7 with ``bounds="auto"``, 0.2
        with public bounds and ``clip_norm="auto"``: private bounds are what
        limits the pipeline (they decide how much of each feature survives
        the clipping, and the noise of the means is proportional to their
        range), while a radius alone is cheap to locate (the comparison is in
        :doc:`/user_guide/defaults`).
    random_state : int, RandomState instance or None, default=None
        ``None``: the noise of every fit comes from 128 bits of fresh OS entropy,
        never from numpy's global generator. A seed makes the fit reproducible;
        the guarantee then assumes it is secret and used for one release (see
        ``noise_source_``).
    max_sample_weight : float, default=1.0
        Public bound ``W`` on the weight of a row (> 0; larger
        weights are clipped to it, with a ``UserWarning``). Both releases are
        the weighted sums ``(1/n) sum w_i u_i`` and ``(1/n) sum w_i u_i^2``, so
        both sensitivities, and the noise, are ``W`` times the unweighted ones,
        whether or not ``fit`` gets weights (as every skdp estimator; the price
        is the same). Without ``sample_weight`` every row's weight is 1 before
        the clip, so ``w_i = min(1, W)`` (a public total: the sums are divided
        by it, and below 1 the fit is that of ``W = 1``; it is never a row of
        weight 1 under noise priced for ``W < 1``). A weighted
        mean divides by the total weight ``sum w_i``, which is private: the fit
        with ``sample_weight`` also releases the **deficit** ``(1/n) sum (1 -
        w_i)`` (0 when every weight is 1) with independent noise of the scale
        :func:`skdp.privacy.weight_coordinate_scale` gives, which makes the
        pair (means, deficit) exactly as private as the means alone (Gaussian
        std ``(2 / sqrt(3)) (W / n) / mu_1``, ``mu_1`` the mean release's
        Gaussian-DP ``mu``, or Laplace scale ``2 (W / n) b_1 / S_1`` when
        ``delta = 0``): the fit with weights costs what the fit without
        costs, and ``privacy_events_`` are the same. The noisy deficit ``e``
        is set to 0 where ``|e| <= tau``, the public level its noise exceeds
        with probability ``1e-6`` (``4.9`` standard deviations; ``13.8``
        Laplace scales), and the sums are divided by ``t = 1 - e``
        (post-processing), reported as ``n_samples_seen_ = n t``. So weights
        all equal to 1 give the unweighted fit, bit for bit for a seed, except
        with probability ``1e-6``; for other weights the total is unbiased
        (std about 4.7 weight units at ``epsilon = 1``, ``W = 1``, whatever
        ``n``) when it is more than about ``tau`` (23 weight units there) away
        from ``n``, and within ``tau`` of the truth otherwise (``t = 1``:
        relative error ``<= tau / n``, 2.3% at ``n = 1000``, which moves
        ``mean_`` by at most ``tau / (2 n)`` of the range, 1.3 noise standard
        deviations there in the worst case of a mean at a bound). See
        :doc:`/user_guide/weights`.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    scale_ : ndarray of shape (n_features,)
    var_ : ndarray of shape (n_features,)
    bounds_ : tuple of ndarrays
        The bounds the features are clipped to: the public ones, or with
        ``"auto"`` the private quantiles (part of the release).
    quantile_ : float or None
        With ``bounds="auto"``, the public quantile level ``q``.
    selection_epsilon_ : float
        Epsilon ``eps0`` of each private selection (0 without one).
    privacy_spent_ : PrivacyBudget
        One fit's cost; a search's or cross-validation's fits compose (see ``search_privacy_cost``).
    privacy_nominal_ : PrivacyBudget
        The accountant's price, as if the bounds had been public.
    privacy_events_ : list
    accountant_ : str
        The accountant's method.
    noise_scale_ : ndarray
        Noise std (or L2-Laplace scale) of the mean and second-moment releases.
    n_samples_seen_ : float or ndarray of shape (n_features,)
        The total weight the weighted sums were divided by, as scikit-learn's
        sum of the weights: without ``sample_weight`` ``n min(1,
        max_sample_weight)`` (public; ``n`` at the default), with it the
        estimate ``n t`` (private: post-processing of the noisy deficit; see
        ``max_sample_weight``). Where the estimated missing fractions are not
        all 0, one estimated observed count per feature (private: noisy).
    clip_norm_ : float or None
        The radius ``c`` used (in units of the ranges), ``None`` without
        clipping. Private with ``"auto"`` (part of the release).
    noise_source_ : str
        ``"os-entropy"`` when the noise came from fresh OS entropy
        (``random_state=None``), else ``"seed:<digest>"`` of the generator
        state the fit started from. Releases with equal digests share their
        noise; skdp's composition tools report them as ``epsilon=inf``.
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
        "bounds": [tuple, list, StrOptions({"auto"}), None],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "mean_fraction": [Interval(Real, 0, 1, closed="neither")],
        "clip_norm": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "bound_budget_fraction": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "random_state": ["random_state"],
        **WEIGHT_CONSTRAINTS,
    }

    #: clip_norm="auto": the quantile of the row norms ||u_i|| chosen privately
    _auto_clip_quantile = 0.75
    #: bound_budget_fraction="auto": the share with bounds="auto", and with only clip_norm="auto"
    _auto_fraction_bounds = 0.7
    _auto_fraction_clip = 0.2

    def __init__(self, epsilon=1.0, delta=1e-5, *, bounds="auto", with_mean=True, with_std=True,
                 mean_fraction=0.85, clip_norm=None, bound_budget_fraction="auto", random_state=None,
                 max_sample_weight=1.0):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.with_mean = with_mean
        self.with_std = with_std
        self.mean_fraction = mean_fraction
        self.clip_norm = clip_norm
        self.bound_budget_fraction = bound_budget_fraction
        self.random_state = random_state
        self.max_sample_weight = max_sample_weight

    def _public_bounds(self, n_features):
        return public_bounds(self.bounds, n_features)

    @staticmethod
    def _sensitivities(d, n, radius=None, weight=1.0):
        """L2 sensitivities (replace-one, public ``n``) of ``(1/n) sum w_i u_i`` and ``(1/n) sum w_i u_i**2``.

        ``u`` in ``[-1/2, 1/2]^d``, and ``||u|| <= radius`` when a radius is given
        (the derivation is in the class docstring); every weight in ``[0, W]``,
        ``W = weight`` (1 and all weights 1: the means). Each is ``W`` times the
        unweighted one: a row's vector is ``w_i`` times a vector of the
        unweighted argument, so two rows differ by at most ``W`` times as much
        (``||w v - w' v'||`` is convex in ``(w, w')``: its maximum over
        ``[0, W]^2`` is at a vertex, where it is ``W ||v - v'||`` or ``W ||v||``,
        and ``||v|| <= max ||v - v'||`` here since ``-v`` is a possible row).
        """
        W = float(weight)
        box_mean, box_square = math.sqrt(d), math.sqrt(d) / 4
        if radius is None:
            return W * box_mean / n, W * box_square / n
        c = float(radius)
        return W * min(2 * c, box_mean) / n, W * min(math.sqrt(2) * c * c, c / math.sqrt(2), box_square) / n

    @staticmethod
    def _row_norm(d, radius=None):
        """The largest ``||u||`` of a row in the unit box (clipped to ``radius`` when given)."""
        return math.sqrt(d) / 2 if radius is None else min(float(radius), math.sqrt(d) / 2)

    def _auto_grid(self, d):
        """Public candidates for ``clip_norm="auto"``: 25 geometric points on ``[sqrt(d)/200, sqrt(d)/2]``."""
        top = math.sqrt(d) / 2
        return np.geomspace(top / 100, top, 25)

    def _n_selections(self, d):
        """How many private selections a fit on ``d`` features makes (2 d quantiles, the radius)."""
        return 2 * int(d) * is_auto_bounds(self.bounds) + int(isinstance(self.clip_norm, str))

    def _bound_fraction(self):
        """The share of epsilon of the private selections (``"auto"``: by what is selected)."""
        if isinstance(self.bound_budget_fraction, str):
            return self._auto_fraction_bounds if is_auto_bounds(self.bounds) else self._auto_fraction_clip
        return float(self.bound_budget_fraction)

    def _selection_epsilon(self, d):
        """``eps0`` of each private selection (see :func:`skdp._scaling.scaler_selection_epsilon`)."""
        return scaler_selection_epsilon(self._n_selections(d), self._bound_fraction(), float(self.epsilon),
                                  float(self.delta))

    def _selection_events(self, d):
        """Events of the private selections, in the order the fit makes them."""
        eps0 = self._selection_epsilon(d)
        events = [BoundedRangeEvent(eps0, 2 * int(d))] if is_auto_bounds(self.bounds) else []
        return events + ([BoundedRangeEvent(eps0)] if isinstance(self.clip_norm, str) else [])

    def _events(self, sens, d):
        """Events and noise scales of the two releases (mean, second moment).

        Calibrated so that, composed with the private selections of a fit on
        ``d`` features, the fit costs ``(epsilon, delta)``.
        """
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        k, eps0, f = self._n_selections(d), self._selection_epsilon(d), self.mean_fraction
        if self.delta == 0:  # basic composition: the releases get what the selections leave
            epsilon = self.epsilon - k * eps0
            while k and math.fsum([k * eps0, f * epsilon, (1 - f) * epsilon]) > self.epsilon:
                epsilon = math.nextafter(epsilon, 0.0)
            scales = [pure_noise_scale(sens[0], f * epsilon), pure_noise_scale(sens[1], (1 - f) * epsilon)]
            return [L2LaplaceEvent(s, b) for s, b in zip(sens, scales)], scales
        # GDP split: the mean gets a share f of mu*^2, the second moment 1 - f.
        unit = release_unit(k, eps0, float(self.epsilon), float(self.delta), float(f))
        scales = [sens[0] * unit / math.sqrt(f), sens[1] * unit / math.sqrt(1 - f)]
        return [GaussianEvent(s, b) for s, b in zip(sens, scales)], scales

    def planned_events(self, n_samples, n_features=None):
        """Events a fit on ``n_samples`` rows releases (``None``: bounds come from the data).

        The same with and without ``sample_weight`` (see ``max_sample_weight``).
        With ``clip_norm="auto"`` the radius is chosen during the fit; both noise
        scales are proportional to the sensitivities, so the events priced at
        the box sensitivities cost the same. With ``bounds="auto"``,
        ``n_features`` is needed (the ``2 d`` quantile selections come first).
        """
        self._validate_params()
        if self.bounds is None:
            return None
        d = planned_features(self, n_features)
        self._public_bounds(d)
        radius = None if self.clip_norm is None or isinstance(self.clip_norm, str) else self.clip_norm
        sens = self._sensitivities(d, int(n_samples), radius, weight_bound(self))
        return self._selection_events(d) + self._events(sens, d)[0]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, privacy_ledger=None):
        """Compute the private mean and scale.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)
            A Dask collection is fitted where it lives: the private bounds'
            counts and the moments are Dask reductions, the noise is added
            here (see :doc:`/user_guide/dask`).
        y : None
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in ``[0, max_sample_weight]`` (larger ones are clipped
            to it, with a ``UserWarning``; negative ones raise ``ValueError``):
            the weighted mean and variance, as scikit-learn's, from the noisy
            weighted sums and the estimated total weight (see
            ``max_sample_weight``). Weights all equal to 1 give the fit without
            weights (except with probability ``1e-6``).
        privacy_ledger : PrivacyLedger or None, default=None
            Charged before the data is read (or the active ``with ledger:``).

        Returns
        -------
        self : object
        """
        if is_dask_collection(X):  # the rows stay where they live: every pass over them is a reduction
            _dask.refuse_unsupported(self, sample_weight)
            X = DaskRows(X, y_name=None)
        return private_fit(self, X, privacy_ledger=privacy_ledger, sample_weight=sample_weight)

    # -- the fit: skdp._fit.private_fit calls _plan_fit, _read, _select_bounds, _run, _set_fitted -------------
    def _plan_fit(self, X, y, sample_weight=None):
        """The fit's plan from the shape of ``X`` and the parameters (checked first); no row is read.

        Rows read where they live (Dask) need ``bounds`` given or ``"auto"``:
        a reduction never reads them from the data.
        """
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        if rows_elsewhere(X):
            refuse_none(self, "bounds")
        check_weight_params(self)
        return transformer_plan(self, X)

    def _read(self, plan, X, y, sample_weight=None):
        """The validated rows (:class:`_ScalerRows`), their missing entries and row weights.

        Missing values are refused with ``sample_weight`` or ``clip_norm``
        (``ValueError``). Rows read where they live (Dask) are validated
        block by block by the reductions that read them.
        """
        if rows_elsewhere(X):
            set_features(self, X)
            return _ScalerRows(X, X.n, X.d)
        X = scaler_rows(self, X)
        missing = np.isnan(X)
        if missing.any() and (sample_weight is not None or self.clip_norm is not None):
            what = "sample_weight" if sample_weight is not None else "clip_norm"
            raise ValueError(f"DPStandardScaler ignores missing values (NaN) only without {what} (the observed "
                             f"counts ride on the mean release only when neither sample_weight nor clip_norm is "
                             f"used): X holds some. Impute them first (skdp.preprocessing.DPSimpleImputer), or "
                             f"pass {what}=None.")
        weights = None if sample_weight is None else row_weights(self, sample_weight, X)  # None: all 1
        return _ScalerRows(X, *X.shape, missing=missing, weights=weights, weighted=sample_weight is not None)

    def _select_bounds(self, plan, data, rng):
        """The feature bounds and the clip radius (:class:`~skdp._fit.Bounds`; events in the fit's order).

        ``bounds="auto"``: the ``2 d`` private quantiles over the wide public
        grid; public bounds; or ``bounds=None``: read from the data
        (``derived``). ``clip_norm="auto"``: the private quantile of the norms
        of the rows in the unit box; a radius of at least ``sqrt(d)/2`` (the
        box's own bound) is no clipping.
        """
        n, d = data.n, data.d
        eps0 = self._selection_epsilon(d)
        events, quantile, derived = [], None, False
        if data.reduced:
            lo, hi = (None, None) if is_auto_bounds(self.bounds) else self._public_bounds(d)
        else:
            lo, hi, derived = given_bounds(self, data.X)
        if is_auto_bounds(self.bounds):  # 2 d private quantiles over the wide public grid
            quantile = warn_unlocated(self, n, eps0)
            if data.reduced:
                (counts,) = data.X.reduce(_range_counts, data.X.dtype, WIDE_SIGNED_GRID)
                lo, hi, event = private_feature_ranges_from_counts(counts, n, quantile, eps0, rng, secure=False)
            else:  # Gumbel draws: 2 d exact selections over 11,111 candidates each would dominate the fit's time
                lo, hi, event = missing_aware_feature_ranges(data.X, quantile, eps0, rng)
            events.append(event)
        radius = None
        if isinstance(self.clip_norm, str):
            grid = self._auto_grid(d)
            if data.reduced:
                (counts,) = data.X.reduce(_unit_norm_counts, data.X.dtype, lo, hi, grid)
                radius, event = private_quantile_from_counts(counts, n, self._auto_clip_quantile, eps0, rng, grid)
            else:
                norms = np.linalg.norm(_unit_rows(data.X, lo, hi, data.missing), axis=1)
                radius, event = private_quantile(norms, self._auto_clip_quantile, eps0, rng, grid)
            events.append(event)
        elif self.clip_norm is not None:
            radius = float(self.clip_norm)
        if radius is not None and radius >= math.sqrt(d) / 2:
            radius = None  # the box already bounds every row by sqrt(d)/2
        return Bounds(events, values=dict(lower=lo, upper=hi, radius=radius, quantile=quantile,
                                          selection_epsilon=eps0), derived=derived)

    def _run(self, plan, data, bounds, rng):
        """The rows mapped to the unit box and clipped to the radius, their (weighted) moments, and the noise.

        In memory a missing entry adds nothing to the sums; rows read where
        they live (Dask) give their sums by one reduction.
        """
        n, d = data.n, data.d
        lo, hi, radius = bounds.values["lower"], bounds.values["upper"], bounds.values["radius"]
        found, deficit, observed = {}, None, None
        if data.reduced:
            s1, s2, n_clipped = data.X.reduce(_moments, data.X.dtype, lo, hi, radius)
            first, second = s1 / n, s2 / n
        else:
            X, weights = data.X, data.weights
            U = clip_unit_rows(_unit_rows(X, lo, hi, data.missing), radius)
            n_clipped = np.count_nonzero(np.any((X < lo) | (X > hi), axis=1))
            found["n_missing"] = np.count_nonzero(data.missing, axis=0)
            if weights is None:  # no weights (the means, weighted below), or every weight 1 (a deficit of 0)
                first, second = U.mean(axis=0), np.mean(U**2, axis=0)
                deficit = 0.0 if data.weighted else None
            else:  # (1/n) sum w_i u_i, (1/n) sum w_i u_i^2 and the deficit (1/n) sum (1 - w_i)
                first, second, deficit = weights @ U / n, weights @ U**2 / n, math.fsum(1.0 - weights) / n
            observed = 1.0 - data.missing.mean(axis=0)
        events, scales, values = self._noisy_moments(n, d, first, second, radius, rng, deficit=deficit,
                                                     observed=observed)
        return Ran(events, np.asarray(scales), n_clipped=int(n_clipped), diagnostics=found, values=values)

    def _set_fitted(self, plan, data, bounds, ran):
        """Means, variances and scales in the features' units (post-processing of the released moments)."""
        d = data.d
        lo, hi = bounds.values["lower"], bounds.values["upper"]
        r = hi - lo
        mean = lo + r * (ran.values["unit_mean"] + 0.5)
        var = ran.values["unit_var"] * r**2
        self.quantile_ = bounds.values["quantile"]
        self.clip_norm_ = bounds.values["radius"]
        self.selection_epsilon_ = bounds.values["selection_epsilon"]
        self.bounds_ = (lo, hi)
        self.mean_ = mean if self.with_mean else np.zeros(d)
        self.var_ = var
        self.scale_ = np.sqrt(var) if self.with_std else np.ones(d)
        # as scikit-learn's: one number, or one per feature where a column's (estimated) observed count differs
        seen = data.n * np.asarray(ran.values["total"], dtype=float)
        self.n_samples_seen_ = np.float64(seen.flat[0]) if np.all(seen == seen.flat[0]) else seen

    #: sample_weight: the public tail mass beyond the threshold of the noisy deficit (see max_sample_weight)
    _deficit_tail = 1e-6

    def _deficit_scale(self, sens, scale, d, n, radius):
        """Noise scale of the deficit ``(1/n) sum (1 - w_i)`` that the mean release carries for free.

        :func:`skdp.privacy.weight_coordinate_scale` with the mean release's
        sensitivity ``sens`` and noise ``scale``, a row's largest weighted
        vector ``W ||u||_max / n`` and a deficit step of ``W / n``.
        """
        W = weight_bound(self)
        return weight_coordinate_scale(scale, sens, W * self._row_norm(d, radius) / n, W / n,
                                       gaussian=self.delta > 0)

    def _total_weight(self, deficit, noise_scale, n, rng):
        """The estimate ``t`` of ``(1/n) sum w_i`` from the noisy deficit (post-processing).

        ``t = 1 - e`` with ``e`` the noisy deficit set to 0 where ``|e| <= tau``
        (hard threshold; ``tau`` the public ``1 - _deficit_tail/2`` quantile of
        the noise's absolute value), clamped to ``[min(1/n, W), W]``.
        """
        W = weight_bound(self)
        if self.delta > 0:
            noisy = float((deficit + gaussian_noise(rng, noise_scale, 1))[0])  # added first: the audit pairs it
            tau = noise_scale * float(special.ndtri(1.0 - self._deficit_tail / 2))
        else:
            noisy = float((deficit + laplace_noise(rng, noise_scale, 1))[0])
            tau = noise_scale * math.log(1.0 / self._deficit_tail)
        t = 1.0 - (noisy if abs(noisy) > tau else 0.0)
        return min(max(t, min(1.0 / n, W)), W)

    def _count_ratio(self, scale, n):
        """Factor ``k`` by which the missing fractions are multiplied before they ride on the mean release.

        The mean release is ``(1/n) sum_i c o_ij u_ij`` per column ``j`` (``o_ij`` 1 when observed, ``u`` in
        ``[-1/2, 1/2]``, ``c = min(1, W)`` every row's weight), per-column sensitivity ``W/n``; the missing
        fraction ``e_j = (1/n) sum_i (1 - o_ij)`` is affine in the entry's weight ``c o_ij`` in ``[0, W]``
        (step ``W / (c n)``). :func:`skdp.privacy.weight_coordinate_scale` gives the noise scale ``s'`` at
        which the pair costs what the mean release alone costs; releasing ``k e_j`` with ``k = scale / s'``
        and the mean release's own noise is the same mechanism (``k = sqrt(3) c / 2``). Summed over the
        columns the joint vector ``(mean, k e)`` has the L2 sensitivity ``W sqrt(d) / n`` of the mean alone.
        """
        W, c = weight_bound(self), default_weight(self)
        return float(scale) / weight_coordinate_scale(scale, W / n, W / (2 * n), W / (c * n), gaussian=True)

    def _observed_fraction(self, noisy_missing, noise_scale, d, n):
        """The estimate ``t_j`` of each column's observed fraction from its noisy missing fraction (post-processing).

        ``t_j = 1 - e_j`` with ``e_j`` the noisy missing fraction set to 0 where ``|e_j| <= tau`` (``tau`` the
        public ``1 - _deficit_tail / 2`` quantile of a coordinate's noise, a bound on it for the L2-Laplace
        vector of ``2 d`` coordinates), clamped to ``[1/n, 1]``: a complete column gives ``t_j = 1`` except with
        probability ``_deficit_tail``, so without missing values the fit is the one of a complete table.
        """
        if self.delta > 0:
            tau = noise_scale * float(special.ndtri(1.0 - self._deficit_tail / 2))
        else:  # every coordinate is at most the norm, Gamma(2 d, scale)
            tau = noise_scale * float(special.gammainccinv(2 * d, self._deficit_tail))
        e = np.where(np.abs(noisy_missing) > tau, noisy_missing, 0.0)
        return np.clip(1.0 - e, 1.0 / n, 1.0)

    def _noisy_moments(self, n, d, u_mean, u_second, radius, rng, deficit=None, observed=None):
        """Add the noise to the means of ``U`` and ``U**2`` (rows in the unit box, clipped to ``radius``).

        Returns ``(events, scales, values)``: the two releases' events and
        noise scales, and ``values`` with the released moments in unit-box
        terms (``unit_mean``, ``unit_var``) and the total weight ``total``
        they were divided by (post-processing; see :meth:`_set_fitted`).

        ``deficit`` (fits with ``sample_weight``): ``(1/n) sum (1 - w_i)``, released after the two moments
        with the noise of :meth:`_deficit_scale`; the moments (then the weighted sums over ``n``) are divided
        by the estimated total weight of :meth:`_total_weight`. Without it (no ``sample_weight``) the moments
        are unweighted: every row's weight is ``c = min(1, max_sample_weight)``
        (:func:`skdp._weights.default_weight`), so the sums released are ``c`` times them and are divided
        by that public total ``c``.

        ``observed`` (fits without ``sample_weight`` and ``clip_norm``): each column's observed fraction
        ``(1/n) sum_i o_ij`` (1 without missing values; ``None``: 1). Its complement, the missing fraction,
        is released in the same draw as the mean (:meth:`_count_ratio`: at no extra cost), and the sums
        are divided by ``c`` times the estimated observed fraction (:meth:`_observed_fraction`). Whether
        it is released depends on the parameters only, never on whether ``X`` has missing values.
        """
        sens = self._sensitivities(d, n, radius, weight_bound(self))
        events, scales = self._events(sens, d)
        if deficit is None:  # weight 1 clipped to max_sample_weight: every row weighs c (1 when W >= 1)
            total = default_weight(self)
            u_mean, u_second = total * u_mean, total * u_second
        draw = gaussian_noise if self.delta > 0 else l2_laplace_noise
        # The mean release is one draw of 2 d coordinates in every path, so that the paths draw alike (a fit with
        # every weight 1 is the unweighted fit): the means, then the scaled missing fractions where they ride
        # on it (public: no sample_weight, no clip_norm), else zeros (a constant query: nothing is released)
        carry = deficit is None and self.clip_norm is None
        k = self._count_ratio(scales[0], n)
        missing = 1.0 - (np.ones(d) if observed is None else np.asarray(observed, dtype=float))
        joint = np.concatenate([u_mean, k * missing if carry else np.zeros(d)]) + draw(rng, scales[0], 2 * d)
        first = joint[:d]
        usecond = u_second + draw(rng, scales[1], d)  # in [0, 1/4] before the noise (unweighted)
        if deficit is not None:  # drawn last: with every weight 1 the moments are the unweighted fit's
            total = self._total_weight(deficit, self._deficit_scale(sens[0], scales[0], d, n, radius), n, rng)
        if carry:
            total = total * self._observed_fraction(joint[d:] / k, float(scales[0]) / k, d, n)
        first, usecond = first / total, usecond / total
        umean = np.clip(first, -0.5, 0.5)
        # Variances below the noise level of their estimate are not resolved: floor them
        # there (post-processing of public quantities), so no feature is blown up. The
        # estimate is the noisy sum divided by the total weight: its noise is scales[1] / total.
        floor = np.maximum(1e-4, 2.0 * float(scales[1]) / total)
        uvar = np.clip(usecond - umean**2, np.minimum(floor, 0.25), 0.25)
        return events, scales, dict(unit_mean=umean, unit_var=uvar, total=total)

    def transform(self, X):
        """Standardise with the private statistics."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False, copy=True,
                          ensure_all_finite="allow-nan" if self.clip_norm is None else True)
        return (np.clip(X, *self.bounds_) - self.mean_) / self.scale_  # missing values stay missing

    def inverse_transform(self, X):
        """Undo :meth:`transform`."""
        check_is_fitted(self)
        X = np.asarray(X, dtype=float)
        return X * self.scale_ + self.mean_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.clip_norm is None  # with clip_norm, missing values are refused
        return tags


@dataclass
class _ScalerRows:
    """The rows of a :class:`DPStandardScaler` fit (:meth:`DPStandardScaler._read`).

    ``X``: the validated array, or a :class:`~skdp._dask.DaskRows` (rows read
    where they live); ``missing``: the mask of the missing entries and
    ``weights``: the clipped row weights (in memory only; ``None``: every
    weight 1); ``weighted``: ``sample_weight`` was given.
    """

    X: object
    n: int
    d: int
    missing: object = None
    weights: object = None
    weighted: bool = False

    @property
    def reduced(self):
        """Whether the rows are read by reductions where they live (Dask)."""
        return rows_elsewhere(self.X)


def _unit_rows(X, lo, hi, missing):
    """The rows mapped to the unit box, a missing entry at 0 (it adds nothing to the sums; its column's
    observed count is released)."""
    U = unit_box(X, lo, hi)
    U[missing] = 0.0
    return U


# ---------------------------------------------------------------------------------------------
# DPStandardScaler on Dask input: the same steps, every pass a reduction on the workers (skdp._dask)
# ---------------------------------------------------------------------------------------------
def _range_counts(xb, yb, dtype, grid):
    return (grid_counts(validated_block(xb, dtype), grid, side="left"),)


def _unit_norm_counts(xb, yb, dtype, lo, hi, grid):
    U = unit_box(validated_block(xb, dtype), lo, hi)
    return (grid_counts(np.linalg.norm(U, axis=1), grid),)


def _moments(xb, yb, dtype, lo, hi, radius):
    X = validated_block(xb, dtype)
    U = clip_unit_rows(unit_box(X, lo, hi), radius)
    return U.sum(axis=0), (U**2).sum(axis=0), int(np.count_nonzero(np.any((X < lo) | (X > hi), axis=1)))
