"""DPOneHotEncoder: one-hot encoding whose category sets are selected privately.

References
----------
.. [1] A. Korolova, K. Kenthapadi, N. Mishra and A. Ntoulas, "Releasing search queries and
   clicks privately", WWW 2009.
.. [2] D. Desfontaines, J. Voss, B. Gipson and C. Mandayam, "Differentially private partition
   selection", Proceedings on Privacy Enhancing Technologies 2022.
.. [3] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy", Journal of the Royal
   Statistical Society Series B 84(1), 2022. <https://arxiv.org/abs/1905.02383>
.. [4] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions,
   and lower bounds", TCC 2016. <https://arxiv.org/abs/1605.02065>
"""

import functools
import math
import warnings
from numbers import Real

import numpy as np
from scipy import sparse
from sklearn import get_config
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from . import diagnostics
from ._fit import Bounds, Ran, private_fit
from ._plan import transformer_plan
from ._warnings import caller_stacklevel as _caller_stacklevel
from .privacy import PrivacyBudget, calibrate
from .privacy.events import scale_event_count
from .privacy.label_set import (gaussian_label_set_events, gaussian_label_set_threshold,
                                private_label_set_gaussian_from_counts)

__all__ = ["DPOneHotEncoder", "category_selection_plan", "category_selection_events"]

#: share of ``delta`` given to the thresholds (the rest to the Gaussian noise of the counts): the threshold
#: ``tau`` is within 0.5% of its minimum over this share at epsilon in [0.1, 4], delta in {1e-5, 1e-6} and
#: 1 to 40 columns (it is flat between 0.3 and 0.6)
THRESHOLD_DELTA_SHARE = 0.4

#: the column name of the values that are not in ``categories_`` (sklearn's name for its infrequent column)
INFREQUENT = "infrequent_sklearn"


def category_selection_events(n_columns, sigma, column_delta):
    """The events of selecting the categories of ``n_columns`` columns (see :class:`DPOneHotEncoder`).

    ``n_columns`` copies of :func:`skdp.privacy.label_set.gaussian_label_set_events`
    ``(sigma, column_delta)``: ``GaussianEvent(sqrt(2), sigma, count=d)``
    (the joint count vector moves by at most ``sqrt(2 d)`` in L2) and
    ``ApproxDPEvent(ln(1/(1 - column_delta)), column_delta, count=d)`` (a
    category present in one neighbour only, at most one per column).
    """
    return [scale_event_count(ev, int(n_columns)) for ev in gaussian_label_set_events(sigma, column_delta)]


@functools.lru_cache(maxsize=256)
def category_selection_plan(n_columns, epsilon, delta):
    """``(sigma, column_delta, tau)`` of an ``(epsilon, delta)`` selection over ``n_columns`` columns.

    ``column_delta = THRESHOLD_DELTA_SHARE * delta / n_columns`` is the
    probability that a category carried by one row is released; ``sigma``
    is the smallest noise for which the accountant prices
    :func:`category_selection_events` at ``(epsilon, delta)``
    (:func:`skdp.privacy.calibrate`); ``tau = 1 + sigma Phi^{-1}(1 -
    column_delta)``. Public quantities only.

    Examples
    --------
    >>> sigma, column_delta, tau = category_selection_plan(8, 1.0, 1e-5)
    >>> round(sigma, 2), round(tau, 1), float(f"{column_delta:.3g}")
    (15.38, 76.2, 5e-07)
    """
    d, epsilon, delta = int(n_columns), float(epsilon), float(delta)
    column_delta = THRESHOLD_DELTA_SHARE * delta / d
    sigma, _ = calibrate(lambda s: category_selection_events(d, s, column_delta), epsilon, delta,
                         initial=math.sqrt(2.0 * d) * 4.0 / epsilon)
    return sigma, column_delta, gaussian_label_set_threshold(sigma, column_delta)


def _is_missing(value):
    """Whether one value of an object column is a missing value (None, NaN, pandas' NA / NaT)."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")


def _refuse_infinite(name):
    raise ValueError(f"DPOneHotEncoder does not support infinite values (inf): column {name} of X holds some. "
                     "Missing values (NaN, None) are supported: they are never a category and encode as zeros.")


def _missing_mask(column):
    """Which entries of one validated column are missing values (NaN, None, pandas' NA / NaT)."""
    if column.dtype.kind in "fc":
        return np.isnan(column)
    if column.dtype.kind != "O":
        return np.zeros(column.shape[0], dtype=bool)
    return np.fromiter((_is_missing(v) for v in column.tolist()), dtype=bool, count=column.shape[0])


def _distinct(column, name):
    """The sorted distinct observed values of one validated column (missing values left out), refusing
    infinite values and mixed types.

    Messages name the column and the value types, never a value or a count.
    """
    if column.dtype.kind != "O":
        if column.dtype.kind in "fc" and np.any(np.isinf(column)):
            _refuse_infinite(name)
        return np.unique(column[~_missing_mask(column)])
    try:
        values = set(column.tolist())
    except TypeError:  # an unhashable value
        values = None
    if values is not None:
        values = {v for v in values if not _is_missing(v)}
    try:
        if values is None:
            raise TypeError
        return np.array(sorted(values), dtype=object)
    except TypeError:
        types = sorted({type(v).__qualname__ for v in column.tolist() if not _is_missing(v)})
        raise TypeError(f"Encoders require their input argument must be uniformly strings or numbers. Got "
                        f"{types} in column {name} of X.") from None


def column_namer(estimator):
    """``j -> name`` of column ``j`` for messages: its quoted name when ``X`` had string column names, else ``j``."""
    names = getattr(estimator, "feature_names_in_", None)
    return (lambda j: repr(str(names[j]))) if names is not None else (lambda j: str(j))


def _codes(column, categories):
    """Index of every value of ``column`` in ``categories`` (-1 where it is not one of them)."""
    if categories.size == 0:
        return np.full(column.shape[0], -1, dtype=np.intp)
    if column.dtype.kind == "O" or categories.dtype.kind == "O":
        index = {c: i for i, c in enumerate(categories.tolist())}
        return np.fromiter((index.get(v, -1) for v in column.tolist()), dtype=np.intp, count=column.shape[0])
    order = np.argsort(categories, kind="stable")
    ordered = categories[order]
    pos = np.clip(np.searchsorted(ordered, column), 0, ordered.size - 1)
    return np.where(ordered[pos] == column, order[pos], -1)


class DPOneHotEncoder(TransformerMixin, BaseEstimator):
    """Encode categorical features one-hot, with each column's categories selected privately.

    The encoding is that of :class:`sklearn.preprocessing.OneHotEncoder`
    (``drop=None``); what differs is where ``categories_`` comes from.

    * ``categories="auto"``: for every column, the categories present in the
      rows are counted, Gaussian noise ``N(0, sigma^2)`` is added to every
      count, and a category is kept iff its noisy count exceeds ``tau = 1 +
      sigma Phi^{-1}(1 - delta_c)`` (partition selection by thresholding;
      Korolova, Kenthapadi, Mishra and Ntoulas 2009; Desfontaines, Voss,
      Gipson and Mandayam 2022; the same mechanism as the classifiers'
      ``classes="auto"``, :mod:`skdp.privacy.label_set`). Only the sorted set of
      kept categories is released, never a count, and a category absent from
      the rows is never output (the domain need not be known).
    * a list of arrays: the categories are public, nothing is learned from the
      rows, no budget is spent (``privacy_spent_`` is ``(0, 0)``) and the output
      is exactly :class:`~sklearn.preprocessing.OneHotEncoder`'s with the same
      ``categories``.

    **Privacy of the selection** (replace-one neighbours, ``n`` public). With
    ``d`` columns, replacing one row changes, in every column, at most two
    counts, each by 1 (its old category loses it, the new one gains it), so
    the vector of all columns' counts moves by at most ``sqrt(2 d)`` in L2.
    At most one category per column is present in one neighbour only (count
    1); it clears the threshold with probability exactly ``delta_c``. Let
    ``E`` be the event that the release on ``D`` holds none of the
    categories absent from ``D'``: the columns' noises are independent, so
    ``P[not E] <= 1 - (1 - delta_c)^d <= d delta_c``. Given ``E`` (and
    ``E'``) both releases are thresholds of the counts of the categories
    present in both neighbours plus independent Gaussian noise, a
    post-processing of a Gaussian release of L2 sensitivity ``sqrt(2 d)``,
    i.e. ``d`` releases of sensitivity ``sqrt(2)`` (GDP composition is exact,
    Dong, Roth and Su 2022, so one joint release and ``d`` separate
    selections price the same; a Laplace version would need L1 sensitivity
    ``2 d``). As in :mod:`skdp.privacy.label_set` (the decomposition of
    approximate zCDP, Bun and Steinke 2016, Def. 8.1), the selection is
    priced by the accountant as ``GaussianEvent(sqrt(2), sigma, count=d)``
    plus ``ApproxDPEvent(ln(1/(1 - delta_c)), delta_c, count=d)`` (epsilons
    ``d ln(1/(1 - delta_c)) >= ln(1/P[E])`` and deltas ``d delta_c >= P[not
    E]`` add). ``delta_c = 0.4 delta / d`` (:data:`THRESHOLD_DELTA_SHARE`,
    which nearly minimises ``tau``), and ``sigma`` is the smallest noise the
    accountant prices at ``(epsilon, delta)`` with it
    (:func:`category_selection_plan`). At ``(1, 1e-5)`` and 8 columns:
    ``sigma = 15.4``, ``tau = 76``: a category with about 110 rows or more is
    kept with probability 0.99, one row's category with probability ``5e-7``.
    The guarantee covers ``categories_`` and everything fitted after it
    (adaptively) on the same rows, composed by the accountant
    (:doc:`/user_guide/accounting`). No floating-point-safe (discrete) variant
    exists yet: the ``delta_c`` of a singleton is the continuous Gaussian's
    tail.

    **Missing values** (NaN, None, pandas' NA) are ignored by the fit, as
    scikit-learn's scalers ignore them: they are no category, are never
    counted and never selected, and :meth:`transform` encodes them as zeros in
    their column's block (also with ``handle_unknown="infrequent_if_exist"``:
    a missing value is not an infrequent category). ``n`` stays the public
    number of rows. The sensitivity above holds unchanged: replacing one row
    can also turn a missing entry into an observed one, or the reverse, which
    moves one count of that column by 1 (less than the two counts of a
    replacement between categories), and a category present in one neighbour
    only still has count 1 there.

    **The output width is private.** With ``"auto"`` the number of output
    columns is a released quantity. A DP model after this step plans its
    noise with the width once the encoder is fitted (one-hot rows have
    norm ``sqrt(d)`` at most, a public bound for the model's ``data_norm``).
    The encoder's own :meth:`planned_events` depends only on the number of
    columns, never on the data.

    **In a pipeline** the encoder is a DP step like the scalers
    (``epsilon``, ``delta``, ``random_state``, :meth:`planned_events`,
    ``privacy_events_``): its selection reads the same rows as the other
    steps, so the accountant composes it with them, and ``set_pipeline_budget``
    gives it a share of the one budget. With given categories it plans
    ``[]`` (no share is needed) and draws no noise.

    Parameters
    ----------
    categories : "auto" or list of array-like, default="auto"
        ``"auto"``: selected privately (above). A list: ``categories[j]`` holds
        the public categories of column ``j`` (sorted when numeric), as in
        :class:`~sklearn.preprocessing.OneHotEncoder`; the budget is then unused.
    epsilon : float, default=1.0
        Budget of the selection (> 0; ``inf`` is refused). Unused when
        ``categories`` are given.
    delta : float, default=1e-5
        Must be > 0 with ``categories="auto"``: a category seen in one row only
        cannot be released under pure epsilon-DP. Unused when ``categories``
        are given.
    handle_unknown : {"ignore", "infrequent_if_exist"}, default="ignore"
        What :meth:`transform` does with a value not in ``categories_[j]`` (a
        category not selected, or never seen). ``"ignore"``: zeros in column
        ``j``'s block, as sklearn. ``"infrequent_if_exist"``: with
        ``categories="auto"`` every column gets one extra output column
        (named ``"<feature>_infrequent_sklearn"``, sklearn's name), set to 1
        for such values; it always exists, since whether some category was left
        out is not released. With given categories no category is infrequent,
        so no such column exists and the values are ignored (as sklearn).
    sparse_output : bool, default=True
        A SciPy CSR matrix (or array, by ``sklearn.get_config()``'s
        ``sparse_interface``), else a dense ndarray. Pandas output
        (``set_output(transform="pandas")``) needs ``sparse_output=False``.
    dtype : number type, default=np.float64
        The output's dtype.
    feature_name_combiner : "concat" or callable, default="concat"
        As sklearn's: ``"concat"`` names column ``feature + "_" + str(category)``.
    random_state : int, RandomState instance or None, default=None
        ``None``: the noise of every fit comes from 128 bits of fresh OS
        entropy. A seed makes the fit reproducible; the guarantee then assumes
        it is secret and used for one release (see ``noise_source_``).

    Attributes
    ----------
    categories_ : list of ndarray
        The categories of every column, in the order of the output columns:
        the sorted selected ones (private, released) or the given ones.
    drop_idx_ : None
        No category is dropped (sklearn's attribute for ``drop=None``).
    privacy_spent_ : PrivacyBudget
        ``(epsilon, delta)`` of the selection as the accountant prices it;
        ``(0, 0)`` with given categories.
    privacy_nominal_ : PrivacyBudget
        The same (no bound is ever read from the data).
    privacy_events_ : list
        :func:`category_selection_events` (empty with given categories).
    accountant_ : str
        The accountant's method (``"none"`` with given categories).
    noise_scale_ : float
        ``sigma`` of the counts' noise (0 with given categories).
    threshold_ : float or None
        ``tau`` (public); ``None`` with given categories.
    noise_source_ : str or None
        ``"os-entropy"`` when the noise came from fresh OS entropy, else
        ``"seed:<digest>"`` of the seeded generator; ``None`` with given
        categories (no noise is drawn).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has string column names.

    See Also
    --------
    sklearn.preprocessing.OneHotEncoder : the non-private encoder.
    skdp.preprocessing.DPStandardScaler : the numeric columns' DP step.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPOneHotEncoder
    >>> X = np.repeat([["red"], ["green"], ["blue"]], [600, 300, 2], axis=0)
    >>> enc = DPOneHotEncoder(epsilon=1.0, sparse_output=False, random_state=0).fit(X)
    >>> [c.tolist() for c in enc.categories_]       # "blue" (2 rows) is not selected
    [['green', 'red']]
    >>> enc.transform([["red"], ["blue"]])
    array([[0., 1.],
           [0., 0.]])
    >>> enc.get_feature_names_out().tolist()
    ['x0_green', 'x0_red']
    >>> enc.privacy_spent_.epsilon <= 1.0
    True
    >>> public = DPOneHotEncoder(categories=[["blue", "green", "red"]]).fit(X)
    >>> public.privacy_spent_
    PrivacyBudget(epsilon=0.0, delta=0.0, relation='replace_one')
    """

    _parameter_constraints: dict = {
        "categories": [StrOptions({"auto"}), list],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "handle_unknown": [StrOptions({"ignore", "infrequent_if_exist"})],
        "sparse_output": ["boolean"],
        "dtype": "no_validation",
        "feature_name_combiner": [StrOptions({"concat"}), callable],
        "random_state": ["random_state"],
    }

    def __init__(self, categories="auto", *, epsilon=1.0, delta=1e-5, handle_unknown="ignore", sparse_output=True,
                 dtype=np.float64, feature_name_combiner="concat", random_state=None):
        self.categories = categories
        self.epsilon = epsilon
        self.delta = delta
        self.handle_unknown = handle_unknown
        self.sparse_output = sparse_output
        self.dtype = dtype
        self.feature_name_combiner = feature_name_combiner
        self.random_state = random_state

    def _auto(self):
        return isinstance(self.categories, str)

    def _check_budget(self):
        """Refuse a budget the selection cannot use (before any data is read)."""
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}.")
        if self._auto() and self.delta == 0:
            raise ValueError("DPOneHotEncoder(categories='auto') selects the categories privately, which needs "
                             "delta > 0 (a category seen in one row cannot be released with pure epsilon-DP). "
                             "With delta=0, pass the public categories as categories=[...].")

    def planned_events(self, n_samples, n_features=None):
        """The events a fit on ``n_samples`` rows of ``n_features`` columns releases.

        ``[]`` with given categories (nothing is learned). With
        ``categories="auto"``, :func:`category_selection_events` of the
        ``n_features`` columns (needed); they depend on ``(epsilon, delta,
        n_features)`` only, not on ``n_samples`` nor on the data.
        """
        self._validate_params()
        self._check_budget()
        if not self._auto():
            return []
        if n_features is None:
            raise ValueError("n_features is needed to plan DPOneHotEncoder(categories='auto'): its selection "
                             "covers every column.")
        d = int(n_features)
        if d < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features!r}.")
        sigma, column_delta, _ = category_selection_plan(d, float(self.epsilon), float(self.delta))
        return category_selection_events(d, sigma, column_delta)

    # ------------------------------------------------------------------ input
    def _columns(self, X, reset):
        """The validated columns of ``X`` (dtypes kept per column, as sklearn's encoders), ``n`` and ``d``."""
        if hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2:  # a DataFrame: column by column, keeping dtypes
            validate_data(self, X=X, reset=reset, skip_check_array=True)
            if X.shape[1] == 0:
                raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                                 "required by DPOneHotEncoder.")
            columns = [check_array(X.iloc[:, j], ensure_2d=False, dtype=None, ensure_all_finite=False)
                       for j in range(X.shape[1])]
        else:  # infinite values are refused by _distinct, with the column's name
            array = check_array(X, dtype=None, ensure_all_finite=False)
            if not hasattr(X, "dtype") and np.issubdtype(array.dtype, np.str_):
                array = check_array(X, dtype=object, ensure_all_finite=False)
            validate_data(self, X=array, reset=reset, skip_check_array=True)
            columns = [array[:, j] for j in range(array.shape[1])]
        return columns, columns[0].shape[0], len(columns)

    def _names(self):
        return column_namer(self)

    def _given_categories(self, columns):
        """The public categories as arrays of the columns' dtypes, checked as sklearn checks them."""
        if len(self.categories) != len(columns):
            raise ValueError(f"categories must hold one array per column of X (shape mismatch: {len(columns)} "
                             f"columns, {len(self.categories)} arrays of categories).")
        name, out = self._names(), []
        for j, (given, column) in enumerate(zip(self.categories, columns)):
            dtype = object if column.dtype.kind in "OUS" else column.dtype
            try:
                cats = np.array(given, dtype=dtype)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"categories[{j}] must be an array of the values of column {name(j)}.") from exc
            if cats.ndim != 1:
                raise ValueError(f"categories[{j}] must be 1-D, got shape {cats.shape}.")
            if any(_is_missing(v) for v in cats.tolist()):
                raise ValueError(f"categories[{j}] holds a missing value (None, NaN): DPOneHotEncoder encodes missing "
                                 "values as zeros, never as a category. To give them a column of their own, impute "
                                 "a constant category first (e.g. 'missing') and list it.")
            if len(set(cats.tolist())) != cats.size:
                raise ValueError(f"In column {j}, the predefined categories contain duplicate elements.")
            if dtype is not object and np.any(np.sort(cats) != cats):
                raise ValueError(f"Unsorted categories are not supported for numerical categories (column {j}).")
            out.append(cats)
        return out

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, privacy_ledger=None):
        """Select the categories of every column (privately with ``categories="auto"``).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Strings or numbers per column (a DataFrame keeps each column's
            dtype: object, string, category or numeric). Missing values (NaN,
            None, pandas' NA) are ignored: they are never counted nor selected
            (see the class docstring).
        y : None
            Ignored.
        privacy_ledger : PrivacyLedger or None, default=None
            Charged before the data is read (or the active ``with ledger:``);
            nothing is charged with given categories.

        Returns
        -------
        self : object
        """
        if not self._auto():  # public categories: learns nothing, costs nothing, draws no noise
            return self._fit_given(X)
        return private_fit(self, X, privacy_ledger=privacy_ledger)

    def _fit_given(self, X):
        """The fit with public ``categories``: the input checked, nothing charged, drawn or released."""
        self._check_budget()
        diagnostics.reset(self)
        columns, _, _ = self._columns(X, reset=True)
        for j, column in enumerate(columns):
            _distinct(column, self._names()(j))  # refuses infinite values and mixed types, as "auto"
        self.categories_ = self._given_categories(columns)
        self._set_public_attributes()
        return self

    # -- categories="auto": skdp._fit.private_fit calls _plan_fit, _read, _select_bounds, _run, _set_fitted ------
    def _plan_fit(self, X, y):
        """The fit's plan from the shape of ``X`` and the parameters (checked first); no row is read."""
        self._check_budget()
        return transformer_plan(self, X)

    def _read(self, plan, X, y):
        """The validated columns and the sorted distinct observed values of each (infinite values and mixed
        types refused, naming the column only)."""
        columns, _, _ = self._columns(X, reset=True)
        name = self._names()
        return columns, [_distinct(column, name(j)) for j, column in enumerate(columns)]

    def _select_bounds(self, plan, data, rng):
        """Nothing to bound: the category selection is the fit's release (:meth:`_run`); empty :class:`Bounds`."""
        return Bounds()

    def _run(self, plan, data, bounds, rng):
        """The private category selection of every column (the release): thresholded noisy counts."""
        columns, distinct = data
        d = len(columns)
        sigma, column_delta, tau = category_selection_plan(d, float(self.epsilon), float(self.delta))
        categories = []
        for column, labels in zip(columns, distinct):
            codes = _codes(column, labels)
            counts = np.bincount(codes[codes >= 0], minlength=labels.size)  # missing values: code -1, not counted
            kept, _ = private_label_set_gaussian_from_counts(labels, counts, sigma, column_delta, rng)
            categories.append(kept)
        return Ran(category_selection_events(d, sigma, column_delta), sigma,
                   values=dict(categories=categories, threshold=float(tau)))

    def _set_fitted(self, plan, data, bounds, ran):
        """The selected categories; warns about a column without one (the released sets and public
        quantities only)."""
        self.categories_ = ran.values["categories"]
        self.drop_idx_ = None
        self.threshold_ = tau = ran.values["threshold"]
        name = self._names()
        empty = [name(j) for j, cats in enumerate(self.categories_) if cats.size == 0]
        if empty:
            warnings.warn(
                f"DPOneHotEncoder selected no category in column(s) {', '.join(empty)}: at epsilon="
                f"{self.epsilon:g} over {len(self.categories_)} column(s) a category needs roughly {tau:.0f} rows "
                "to be selected privately. Pass the public categories as categories=[...], use a larger epsilon, "
                "or handle_unknown='infrequent_if_exist' to keep one column for the values left out.",
                UserWarning, stacklevel=_caller_stacklevel())

    def _set_public_attributes(self):
        self.drop_idx_ = None
        self.threshold_ = None
        self.noise_source_ = None
        self.privacy_events_ = []
        self.accountant_ = "none"
        self.privacy_spent_ = self.privacy_nominal_ = PrivacyBudget(0.0, 0.0)
        self.noise_scale_ = 0.0

    # ------------------------------------------------------------------ transform
    def _has_infrequent(self):
        return self._auto() and self.handle_unknown == "infrequent_if_exist"

    def _block_sizes(self):
        extra = int(self._has_infrequent())
        return [cats.size + extra for cats in self.categories_]

    def transform(self, X):
        """Encode ``X`` one-hot with the fitted categories.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        X_out : sparse matrix or ndarray of shape (n_samples, n_encoded_features)
            Values not in ``categories_[j]`` give zeros in column ``j``'s block
            (``handle_unknown="ignore"``) or a 1 in its infrequent column; a
            missing value gives zeros in either case.
        """
        check_is_fitted(self)
        output = _get_output_config("transform", estimator=self)["dense"]
        if output != "default" and self.sparse_output:
            raise ValueError(f"{output.capitalize()} output does not support sparse data. Set sparse_output=False "
                             f"to output {output} dataframes or disable {output.capitalize()} output via "
                             'enc.set_output(transform="default").')
        columns, n, d = self._columns(X, reset=False)
        name, sizes = self._names(), self._block_sizes()
        offsets = np.cumsum([0] + sizes)
        codes = np.empty((n, d), dtype=np.intp)
        for j, (column, cats) in enumerate(zip(columns, self.categories_)):
            _distinct(column, name(j))  # refuses infinite values and mixed types
            code = _codes(column, cats)
            if self._has_infrequent():
                code[code < 0] = cats.size
            code[_missing_mask(column)] = -1  # a missing value is no category, not even an infrequent one
            codes[:, j] = code
        mask = codes >= 0
        indices = (codes + offsets[:-1])[mask]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(mask.sum(axis=1), out=indptr[1:])
        index_dtype = np.int32 if max(indptr[-1], offsets[-1]) < np.iinfo(np.int32).max else np.int64
        shape = (n, int(offsets[-1]))
        data = np.ones(indices.size, dtype=self.dtype)
        if get_config().get("sparse_interface", "spmatrix") == "sparray":
            out = sparse.csr_array((data, indices.astype(index_dtype), indptr.astype(index_dtype)), shape=shape)
        else:
            out = sparse.csr_matrix((data, indices.astype(index_dtype), indptr.astype(index_dtype)), shape=shape)
        return out if self.sparse_output else out.toarray()

    def inverse_transform(self, X):
        """Map one-hot rows back to categories (as sklearn's).

        A block of zeros gives ``None``; a 1 in the infrequent column gives
        ``"infrequent_sklearn"``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_encoded_features)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = check_array(X, accept_sparse="csr")
        sizes = self._block_sizes()
        if X.shape[1] != sum(sizes):
            raise ValueError(f"Shape of the passed X data is not correct. Expected {sum(sizes)} columns, got "
                             f"{X.shape[1]}.")
        blocks = [np.append(c.astype(object), INFREQUENT) if self._has_infrequent() else c for c in self.categories_]
        dtype = np.result_type(*[b.dtype for b in blocks]) if blocks else object
        out = np.empty((X.shape[0], len(blocks)), dtype=dtype)
        start, unknown = 0, {}
        for j, block in enumerate(blocks):
            sub = X[:, start:start + block.size]
            start += block.size
            zero = np.asarray(sub.sum(axis=1) == 0).ravel()
            if block.size:
                out[:, j] = block[np.asarray(sub.argmax(axis=1)).ravel()]
            if zero.any():
                unknown[j] = zero
        if unknown:
            out = out.astype(object)
            for j, zero in unknown.items():
                out[zero, j] = None
        return out

    def get_feature_names_out(self, input_features=None):
        """Output feature names: ``<feature>_<category>``, then ``<feature>_infrequent_sklearn`` if any.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            As sklearn's (``feature_names_in_`` or ``x0, x1, ...``).

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        input_features = _check_feature_names_in(self, input_features)
        if self.feature_name_combiner == "concat":
            combine = lambda feature, category: feature + "_" + str(category)  # noqa: E731
        else:
            combine = self.feature_name_combiner
            if not isinstance(combine("feature", "category"), str):
                raise TypeError("When `feature_name_combiner` is a callable, it should return a Python string.")
        names = []
        for feature, cats in zip(input_features, self.categories_):
            names += [combine(feature, c) for c in cats.tolist()]
            if self._has_infrequent():
                names.append(combine(feature, INFREQUENT))
        return np.asarray(names, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        return tags
