"""DPLogisticRegression."""

import functools
import math
from numbers import Real

import numpy as np
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets

from ..losses import LogisticLoss, MultinomialLoss
from ..solvers import SOLVERS, SolverChoice
from .. import _dask
from .._dask import ClassTargets, DaskRows, check_solver, first_pass, is_dask_collection
from .._classes import check_class_set, class_indices, classes_from_counts, fit_classes, refused_after_selection
from .._fit import Bounds, private_fit
from .._predict import ProbabilisticClassifierMixin
from .._weights import CLASS_WEIGHT_CONSTRAINTS, class_weighted
from ._base import DPLinearModel

__all__ = ["DPLogisticRegression"]

#: ``alpha=None`` with a solver whose noise or coefficient ball scales with ``1/alpha``
_SOLVER_ALPHA = 0.01


class DPLogisticRegression(ProbabilisticClassifierMixin, ClassifierMixin, DPLinearModel):
    """Differentially private logistic regression (binary and multinomial).

    Minimises ``(1/n) sum_i log-loss(x_i, y_i) + (alpha/2) ||w||^2`` over the
    coefficients *and* the intercept (the intercept is a constant column of
    value ``intercept_scaling`` and is penalised like every other coordinate,
    as the strongly convex sensitivity proofs require), with one of skdp's DP
    solvers. The fitted model is (epsilon, delta)-differentially private with
    respect to **replace-one** neighbouring datasets with the number of rows
    public: changing one row (features and label) changes the distribution
    of the fitted model by at most the reported ``privacy_spent_``.

    The guarantee needs public bounds: ``data_norm`` (every row, intercept
    column included, is clipped to this L2 norm) and ``classes`` (the label
    set). The default ``data_norm="auto"`` pays ``bound_budget_fraction`` of the
    budget for a private choice, and the default ``classes="auto"`` selects
    the label set privately. When a bound is set to ``None`` it is read
    from the data, a :class:`~skdp.PrivacyLeakWarning` is emitted and
    ``privacy_spent_`` has ``epsilon=inf``; ``classes=None`` does this for the
    label set.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy-loss target, > 0 and finite (``inf`` is refused: a fit without privacy is scikit-learn's own estimator).
    delta : float, default=1e-5
        Failure probability in [0, 1). The default suits datasets of up to
        about 10^4-10^5 rows (keep ``delta`` well below ``1/n``). ``delta=0``
        selects a pure epsilon-DP variant (``output_pert`` or ``obj_pert``);
        ``dp_gd`` and ``dp_svrg`` have none and refuse it.
    solver : {"auto", "dp_accmd", "dp_gd", "dp_lssgd", "dp_srm", "dp_svrg", "dp_svrg_pp", \
            "noisy_sfw", "noisy_sfw_lp", "noisy_sgd", "obj_pert", "obj_pert_svrg", "output_pert", \
            "phased_sgd", "rrpsgd"}, default="auto"
        DP optimisation algorithm; ``list_solvers(DPLogisticRegression)``
        describes each (source paper, privacy notion, what it needs, whether
        it fits more than two classes). ``"auto"`` uses ``"dp_gd"``
        (``"output_pert"`` when ``delta=0``): its noise does not depend on
        ``alpha`` or a coefficient ball, and it was the most accurate at small
        ``n`` (:doc:`/benchmarks`, :doc:`/user_guide/defaults`). ``obj_pert_svrg`` and the
        constrained solvers (``dp_accmd``, ``noisy_sfw``, ``noisy_sfw_lp``,
        ``noisy_sgd``, ``phased_sgd``) are binary only.
    alpha : float or None, default=None
        L2 regularisation on the mean loss. sklearn's ``C`` corresponds to
        ``alpha = 1/(C n)``. ``output_pert`` and ``dp_svrg`` need ``alpha > 0``.
        ``None``: ``1/n`` (sklearn's default ``C = 1``) with ``dp_gd``, whose
        noise does not depend on ``alpha``; ``0.01`` with the other solvers,
        whose noise or coefficient ball grows like ``1/alpha``.
    penalty : {"l2", "nonconvex"}, default="l2"
        ``"l2"``: ``(alpha/2) ||w||^2``. ``"nonconvex"``: the papers' nonconvex
        penalty ``alpha * sum_j w_j^2 / (1 + w_j^2)`` (Wang 2021, dissertation, Sec. 4.7.1,
        :class:`skdp.penalties.NonconvexPenalty`), accepted by the gradient
        solvers that take it explicitly: ``dp_gd``, ``dp_lssgd``, ``rrpsgd``,
        ``dp_srm``. Both cover the intercept too; both are data-independent.
    fit_intercept : bool, default=True
        Whether to fit an (penalised) intercept.
    intercept_scaling : float or None, default=None
        Value of the constant intercept column; must be < ``data_norm``.
        ``None`` uses ``data_norm / sqrt(d + 1)`` with ``d`` features: the
        column is one more feature of average size (stored in
        ``intercept_scaling_``).
    data_norm : float, "auto" or None, default="auto"
        Public bound on the L2 norm of each row (intercept column included).
        Rows above it are scaled down (counted by :func:`skdp.fit_diagnostics`).
        ``"auto"`` chooses it privately (see ``bound_budget_fraction``);
        ``None`` reads it from the data and voids the guarantee.
    bound_budget_fraction : float, default=0.05
        With ``data_norm="auto"``, the share of ``epsilon`` spent choosing the
        row bound privately: the raw rows are clipped to 0.7 times an
        exponential-mechanism median of the row norms over a public geometric
        grid (:func:`skdp.privacy.private_quantile`; clipping below the median
        trades a little bias for less noise, :doc:`/user_guide/defaults`). At small ``n``
        the selection gets at least ``45.5 / n`` (enough to locate the median
        with probability about 0.999; at most half of ``epsilon``, with a
        ``UserWarning`` when that is not enough). The solver is then
        calibrated so that the accountant's price of everything is
        ``epsilon``. 0.05 rather than a larger share: the exponential
        mechanism locates a median with a small budget (the selected rank is
        off by about ``ln(grid size) / epsilon`` of the ``n`` rows), and the
        rest goes to the model. No data-derived
        bound is read in the clear, so there is no ``PrivacyLeakWarning``.
    classes : array-like, "auto" or None, default="auto"
        The set of class labels. An array is public: labels outside it raise
        an error. ``"auto"`` selects the set privately by Gaussian thresholding
        of the label counts (:func:`skdp.privacy.label_set.private_label_set_gaussian`,
        replace-one, needs ``delta > 0``), with noise that costs 0.15 of the
        budget's zCDP ``rho`` and a tenth of ``delta`` (less at large n; the
        solver gets the rest, composed by the accountant with the selection,
        which is priced in ``privacy_spent_`` as a ``GaussianEvent`` plus an
        ``ApproxDPEvent``). At ``(1, 1e-5)`` the threshold is 71 rows and a
        label with 117 rows is kept with probability 0.999; a label absent
        from ``y`` is never output. Rows whose label is not
        kept stay in the data (n is public) but contribute a constant to the
        loss. Fewer than 2 kept labels raise ``ValueError``. Pass the labels
        when they are public (they cost nothing). ``None`` reads the set from
        the data: a :class:`~skdp.PrivacyLeakWarning` and ``epsilon=inf``.
    coef_norm : float or None, default=None
        Radius of the coefficient ball of the constrained solvers, in the
        solver's own norm: L1 for ``noisy_sfw`` and ``dp_accmd`` (``"l1"``
        geometry), l_p for ``noisy_sfw_lp``, L2 for ``noisy_sgd``,
        ``phased_sgd`` and ``dp_accmd`` with ``geometry="l2"``. Public: never
        tune it on the private data without paying for it. ``None`` uses
        ``sqrt(2 ln 2 / alpha)``, which bounds the L2 norm of the penalised
        optimum (``alpha/2 ||w||^2 <= loss(0) = ln 2``); it then needs
        ``alpha > 0``. Unconstrained solvers ignore it.
    max_iter : int or None, default=None
        Iterations (epochs for ``dp_svrg``); ``None`` uses the solver's default.
        Fixed in advance: no solver stops early.
    feature_clip : float, "auto" or None, default="auto"
        Every feature is clipped to ``[-feature_clip, feature_clip]`` before
        the rows are clipped to their norm bound, in ``fit`` and when scoring
        (``decision_function``, ``predict``, ``predict_proba``), so the model
        sees the same features both times. ``"auto"`` is ``3 K_x / sqrt(d)``,
        ``K_x`` the bound on the raw rows' norm (``data_norm_`` less the
        intercept column) and ``d`` the number of features: about three times
        a feature's typical size when the rows are near their bound. A rare
        feature whose standardised values are huge otherwise inflates the row
        norm bound, and so the noise, for every row (the measured gain:
        :doc:`/user_guide/defaults`). The clip reads nothing
        but the public or released row bound and changes no sensitivity.
        ``None`` clips only the rows, and ``decision_function`` is then
        exactly ``X @ coef_.T + intercept_``.
    feature_scaling : "auto" or None, default="auto"
        ``"auto"``: with ``data_norm="auto"``, a private per-feature affine
        map fixes raw, unstandardised scales inside ``fit``. One Gaussian
        release of every column's counts in public geometric bins (edges
        ``+-2^(k/4)``, ``1.5e-5 .. 1.05e6``; replace-one sensitivity
        ``sqrt(2 d)``), calibrated to ``sqrt(0.02)`` times the ``mu`` of
        ``(epsilon, delta)``, so the model's own noise grows by about 1% and
        the price is the same at every width (a model behind
        ``DPOneHotEncoder`` is planned exactly). It is planned only where ``n``
        and the budget let a column's quartiles be located (public: large ``n
        * epsilon``); otherwise nothing is released. From the noisy counts
        (post-processing): if the quartiles are trusted at this width and the
        columns' magnitudes differ by more than a factor 20, every column
        whose middle half is not already standard-like is centred at its
        quartiles' midpoint and divided by their half-distance (one-hot,
        binary, zero-heavy and already standardised columns are left alone);
        otherwise the map is the identity (and the release was still paid).
        ``coef_`` and ``intercept_`` are in the user's units; the feature clip
        becomes a box per feature (``feature_box_``). Scaling privately
        yourself (``DPStandardScaler``) costs a budget share too, but works at
        small ``n * epsilon``, where this does not. ``None``: no release, no
        map. Dask inputs are fitted without it.
    solver_options : dict or None, default=None
        Solver-specific settings, validated against the solver's
        ``option_keys`` (see :func:`skdp.list_solvers`), e.g.
        ``{"batch_size": 64}`` or ``{"p": 1.5}`` for ``noisy_sfw_lp``.
    random_state : int, RandomState instance or None, default=None
        ``None``: the noise of every fit comes from 128 bits of fresh OS entropy,
        never from numpy's global generator. A seed makes the fit reproducible;
        the guarantee then assumes it is secret and used for one release (see
        ``noise_source_``).
    verbose : int, default=0
        ``0``: silent. ``1``: once the solver has run for a second, progress
        lines with the elapsed time (one per epoch, at most every half second,
        and one per phase), then a summary line (noise scale, privacy spent).
        ``2``: every epoch. Only public quantities are printed.
    max_sample_weight : float, default=1.0
        Public bound on the ``sample_weight`` of a row (> 0): larger weights
        are clipped to it, with a ``UserWarning``. Every sensitivity, and so
        the noise, is proportional to it (to it times the largest class weight
        with ``class_weight``), whether or not ``fit`` gets weights. Without
        ``sample_weight`` each row's weight is 1 before the clip, so every row
        weighs ``min(1, max_sample_weight)`` (in memory and on Dask input):
        below 1 that scales every loss term by it, as a larger penalty would
        (with a ``UserWarning``); see :doc:`/user_guide/weights`.
    class_weight : dict or None, default=None
        Public weights ``{label: weight}`` (``>= 0``; a label without an entry
        has weight 1) that multiply each row's ``sample_weight``, as in
        scikit-learn. The largest of them (at least 1) times
        ``max_sample_weight`` bounds every row's weight, and the noise scales
        with it. ``"balanced"`` is refused: it needs the private class counts.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : ndarray of shape (1,)
        The solver's number of iterations (a public schedule; one-vs-rest
        fits run the same schedule for every class), shaped as
        ``LogisticRegression.n_iter_``.
    privacy_spent_ : PrivacyBudget
        One fit's cost; a search's or cross-validation's fits compose (see ``search_privacy_cost``).
        (epsilon, delta) from the accountant for what the solver released,
        under replace-one neighbours; ``epsilon=inf`` if a bound was read from
        the data.
        With a user-given ``random_state`` the guarantee assumes the seed is
        secret and used for this one release (see ``noise_source_``). Exact
        statistics of the data (rows clipped, ...) are not attributes: the
        data holder reads them with :func:`skdp.fit_diagnostics`.
    privacy_nominal_ : PrivacyBudget
        The same, assuming the data-derived bounds had been public.
    noise_scale_ : float
        Standard deviation (Gaussian) or scale (L2-Laplace) of the noise added.
    accountant_ : str
        The accountant's method (``"gdp_exact"``, ``"rdp"``, ``"basic"``, ...).
    data_norm_ : float
        The row bound used.
    intercept_scaling_ : float
        The value of the intercept column.
    feature_clip_ : float or None
        The radius the features were clipped to (see ``feature_clip``), in the
        scaled units when ``feature_scale_`` is set.
    feature_center_, feature_scale_ : ndarray of shape (n_features,) or None
        The private affine map ``z = (x - center) / scale`` the fit used
        (``feature_scaling="auto"``), ``None`` when it was the identity.
    feature_box_ : tuple of two ndarrays or None
        With a map and a feature clip: the per-feature box ``center -+
        feature_clip_ * scale`` that ``decision_function`` clips to.
    noise_source_ : str
        ``"os-entropy"`` when the noise came from fresh OS entropy
        (``random_state=None``), else ``"seed:<digest>"`` of the generator
        state the fit started from. Releases with equal digests share their
        noise; skdp's composition tools report them as ``epsilon=inf``.
    solver_ : str
        The solver that ran (resolves ``"auto"``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    DPRidge : DP ridge regression.
    sklearn.linear_model.LogisticRegression : the non-private model.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdp import DPLogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)  # a real pipeline fits this on public data
    >>> clf = DPLogisticRegression(epsilon=1.0, data_norm=6.0, classes=[0, 1],
    ...                            random_state=0).fit(X, y)
    >>> print(clf.privacy_spent_)
    (epsilon=1, delta=1e-05) [replace_one]
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        **DPLinearModel._parameter_constraints,
        "solver": [SolverChoice(lambda s: s.constraint is None and "logistic" in s.losses)],
        "classes": ["array-like", StrOptions({"auto"}), None],
        "coef_norm": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="left"), None],
        "feature_clip": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "feature_scaling": [StrOptions({"auto"}), None],
        **CLASS_WEIGHT_CONSTRAINTS,
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        *,
        solver="auto",
        alpha=None,
        penalty="l2",
        fit_intercept=True,
        intercept_scaling=None,
        data_norm="auto",
        bound_budget_fraction=0.05,
        classes="auto",
        coef_norm=None,
        max_iter=None,
        feature_clip="auto",
        solver_options=None,
        random_state=None,
        verbose=0,
        max_sample_weight=1.0,
        class_weight=None,
        feature_scaling="auto",
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.solver = solver
        self.alpha = alpha
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.data_norm = data_norm
        self.bound_budget_fraction = bound_budget_fraction
        self.classes = classes
        self.coef_norm = coef_norm
        self.max_iter = max_iter
        self.feature_clip = feature_clip
        self.solver_options = solver_options
        self.random_state = random_state
        self.verbose = verbose
        self.max_sample_weight = max_sample_weight
        self.class_weight = class_weight
        self.feature_scaling = feature_scaling

    multinomial = True
    #: ``n_iter_`` as ``LogisticRegression``'s: an array of shape (1,) (:func:`skdp._protocol.n_iter_attribute`)
    _n_iter_style = "array"
    #: ``feature_clip="auto"``: each raw feature is clipped to this many times ``K_x / sqrt(d)``
    _FEATURE_CLIP_FACTOR = 3.0

    def _intercept_fraction_for(self, n_features):
        """``1 / sqrt(d + 1)``: the intercept column is one more feature of average size (not half of ``K``)."""
        return 1.0 / math.sqrt(n_features + 1.0)

    def _feature_clip_radius(self, raw_bound, n_features):
        """``feature_clip``: ``"auto"`` is ``3 K_x / sqrt(d)`` (``K_x`` the raw rows' bound), a number is itself."""
        if self.feature_clip is None:
            return None
        if self.feature_clip == "auto":
            return self._FEATURE_CLIP_FACTOR * raw_bound / math.sqrt(max(n_features, 1))
        return float(self.feature_clip)

    def _constraint_radius(self, solver, coef_norm):
        if self.coef_norm is not None:
            return float(self.coef_norm)
        alpha = self._alpha_for(solver)
        if not alpha > 0:
            raise ValueError(
                f"solver={solver.name!r} constrains the coefficients to a ball: set coef_norm, or alpha > 0 "
                "for the default radius sqrt(2 ln 2 / alpha)."
            )
        return math.sqrt(2 * math.log(2) / alpha)

    def _alpha_for(self, solver, n_samples=None, data_norm=None):
        """``alpha=None``: sklearn's ``C = 1`` (``alpha = 1/n``) for ``dp_gd``, ``0.01`` for the other solvers.

        ``dp_gd``'s noise does not depend on ``alpha`` (its schedule handles the
        noise), so it minimises sklearn's default objective and approaches
        ``LogisticRegression()`` as ``n * epsilon`` grows; at small budgets the
        noise, not the penalty, limits the fit, so the smaller penalty costs
        nothing there (:doc:`/user_guide/defaults`). The other solvers' noise or
        coefficient ball scales with ``1/alpha``.
        """
        if self.alpha is not None:
            return self.alpha
        if solver is not None and solver.fits_default_alpha and getattr(self, "penalty", "l2") == "l2":
            return 1.0 / n_samples if n_samples else _SOLVER_ALPHA
        return _SOLVER_ALPHA

    def _plan_spec(self, public, shape):
        classes = check_class_set(self)
        # classes="auto" (or None): the number of classes is known after the fit reads the labels; every
        # solver calibrates its noise to the same budget for any number of classes, so the binary plan
        # costs the same
        k = 2 if classes is None else classes.size
        loss = LogisticLoss() if k == 2 else MultinomialLoss(k)
        return dict(solver=self._resolve_solver(loss.name, shape, public), loss=loss, n_outputs=(1 if k == 2 else k),
                    label_bound=None, coef_norm=None, guaranteed=self.classes is not None)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, privacy_ledger=None):
        """Fit the model with differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, dask DataFrame} of shape (n_samples, n_features)
            A Dask collection is fitted where it lives: every pass over the
            rows is a Dask reduction and only the reduced statistic reaches
            this process, where the noise is added (same privacy events and,
            for a seed, the same coefficients up to summation order as in
            memory). Solvers ``dp_gd``, ``output_pert`` only; see
            :doc:`/user_guide/dask`.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in ``[0, max_sample_weight]`` (larger ones are clipped
            to it, with a ``UserWarning``; negative ones raise ``ValueError``).
            The loss is ``(1/n) sum_i w_i phi_i`` with ``n`` the public number
            of rows: a weight 0 removes a row's influence, weights of 1 give the
            unweighted fit.
        privacy_ledger : PrivacyLedger or None, default=None
            Charge this fit to the ledger before touching the data; raises
            :class:`~skdp.BudgetExceededError` if it would exceed the ledger's
            budget. ``None`` uses the ledger of an enclosing ``with ledger:``
            block, if any.

        Returns
        -------
        self : object
        """
        if is_dask_collection(X):  # the rows stay where they live: every pass over them is a reduction
            _dask.refuse_unsupported(self, sample_weight)
            X = DaskRows(X, y)
        return private_fit(self, X, y, sample_weight=sample_weight, privacy_ledger=privacy_ledger)

    _reduced_public_bounds = ("data_norm", "classes")

    def _first_pass(self, rows):
        """Rows read where they live: validated block by block, with the counts the bound choices read."""
        norm_counts, label_counts, _ = rows.reduce(first_pass, rows.dtype, self.data_norm == "auto", True, None,
                                                   False)
        check_classification_targets(label_counts.labels)
        return dict(norms=norm_counts, labels=label_counts)

    def _select_bounds(self, plan, data, rng):
        """The label set (``classes="auto"``: private), then the feature scaling and the row bound."""
        if data.reduced:
            labels = data.counts["labels"]
            selection = classes_from_counts(self, labels.labels, labels.counts, data.n, rng)
        else:
            selection = fit_classes(self, data.y, rng)
        k = selection.classes.size
        loss, n_out = (LogisticLoss(), 1) if k == 2 else (MultinomialLoss(k), k)
        with refused_after_selection(self, selection.events):
            solver = plan.solver if loss.name == plan.spec["loss"].name else self._resolve_solver(loss.name)
            if data.reduced:
                check_solver(self, solver)
            bounds = self._select_row_bound(plan, data, rng, Bounds(list(selection.events), derived=selection.derived))
        bounds.values.update(selection=selection, loss=loss, n_outputs=n_out, solver=solver)
        return bounds

    def _run(self, plan, data, bounds, rng):
        """The bounded rows and the solver (multinomial for more than two classes where it has that loss)."""
        selection = bounds.values["selection"]
        k = selection.classes.size
        fit = functools.partial(self._bound_and_solve, plan, data, bounds, rng, bounds.values["loss"],
                                bounds.values["n_outputs"], bounds.values["solver"])
        if data.reduced:
            return fit(targets=ClassTargets(selection.classes, k == 2, isinstance(self.classes, str)))
        y_idx = class_indices(selection, data.y)
        return fit(y=np.where(y_idx == 1, 1.0, -1.0) if k == 2 else y_idx, active=selection.active,
                   sample_weight=class_weighted(self, data.weights, data.y, selection.classes))

    def _set_fitted(self, plan, data, bounds, ran):
        self._set_bounds_fitted(bounds, ran)
        self.coef_, self.intercept_ = self._split_coef(ran.result.coef)
        binary = bounds.values["selection"].classes.size == 2
        self.multi_class_ = "binary" if binary else ("ovr" if self.solver_info_.get("one_vs_rest") else "multinomial")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # accuracy > 0.83 on make_blobs(n=300) is not guaranteed at epsilon=1
        tags.classifier_tags.poor_score = True
        solver = SOLVERS.get(self.solver) if isinstance(self.solver, str) else None  # tags never raise
        if solver is not None and "multinomial" not in solver.losses:
            tags.classifier_tags.multi_class = False  # e.g. the L1-ball solvers: binary only
        return tags
