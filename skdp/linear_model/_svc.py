"""DPLinearSVC: hinge loss through Moreau smoothing."""

import math
from numbers import Real

import numpy as np
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..losses import HingeLoss
from ..solvers import SolverChoice
from .._classes import check_class_set, fit_classes, refused_after_selection
from .._fit import Bounds, private_fit
from .._ovr import one_vs_rest, ovr_targets
from .._predict import LinearClassifierMixin
from .._weights import CLASS_WEIGHT_CONSTRAINTS, class_weighted
from ._base import DPLinearModel

__all__ = ["DPLinearSVC"]



class DPLinearSVC(LinearClassifierMixin, ClassifierMixin, DPLinearModel):
    """Differentially private linear support vector classifier (hinge loss, one-vs-rest for more classes).

    Minimises the mean hinge loss ``max(0, 1 - y (<w, x> + b))`` plus
    ``(alpha/2) ||(w, b)||^2`` over the L2 ball ``||(w, b)|| <= coef_norm``.
    The default solver ``noisy_sgd`` runs Poisson-sampled noisy SGD on the hinge
    subgradient (private, since privacy needs no smoothness; Bassily, Feldman,
    Talwar and Thakurta 2019, Alg. 1); ``nsgd_moreau`` runs it on the loss's
    Moreau envelope (a Huberised hinge per example; section 4 of the same paper,
    see :doc:`/papers/bassily_feldman_talwar_thakurta2019`), which has the better theoretical rate but was
    less accurate on every benchmark we ran (:doc:`/user_guide/defaults`). The fitted
    model is (epsilon, delta)-differentially private for **replace-one**
    neighbouring datasets with the number of rows public.

    More than two classes are fitted one-vs-rest, as sklearn's ``LinearSVC``
    does: one binary problem per class (that class against the rest), each on
    every row, so the ``k`` releases compose. The budget left to the solver
    (after the private bound choices) is split before the data is read: each
    class gets ``delta / k`` and the largest epsilon such that the shared
    accountant prices the ``k`` fits together at the solver's budget
    (:func:`skdp._ovr.ovr_budget`); ``privacy_spent_`` is the whole fit's
    price, and ``solver_info_`` holds the per-class ``class_epsilon`` and
    ``class_delta``. ``predict`` is the argmax of the ``k`` scores.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy-loss target, > 0 and finite (``inf`` is refused: a fit without privacy is scikit-learn's own estimator).
    delta : float, default=1e-5
        Must be > 0.
    solver : {"auto", "noisy_sgd", "nsgd_moreau"}, default="auto"
        ``"auto"`` uses ``"noisy_sgd"``.
    alpha : float, default=0.01
        L2 penalty on the mean loss (sklearn's ``C`` is ``1/(alpha n)``).
    fit_intercept : bool, default=True
        The intercept is a constant column (``intercept_scaling``) in the same
        ball and penalty as the other coefficients.
    intercept_scaling : float or None, default=None
        ``None`` uses ``data_norm / 2``.
    data_norm : float, "auto" or None, default="auto"
        Public L2 bound on each row (see :class:`DPLogisticRegression`).
    bound_budget_fraction : float, default=0.05
        Share of ``epsilon`` for the private row bound (see :class:`DPLogisticRegression`).
    classes : array-like of shape (n_classes,), "auto" or None, default="auto"
        Public label set. ``"auto"`` selects it privately (as in
        :class:`DPLogisticRegression`; it needs ``delta > 0``); the fit is
        planned and charged as a binary fit, which costs the same budget as
        the one-vs-rest fit of any number of selected labels. ``None`` reads
        it from the data with a :class:`~skdp.PrivacyLeakWarning`
        (``privacy_spent_`` then ``epsilon=inf``).
    coef_norm : float or None, default=None
        Radius ``M`` of the L2 coefficient ball. ``None``: ``sqrt(2/alpha)``
        (the penalised optimum has ``alpha/2 ||w||^2 <= hinge(0) = 1``).
    max_iter : int or None, default=None
        Number of SGD steps; ``None`` uses the solver's default.
    solver_options : dict or None, default=None
        ``{"batch_size": m, "learning_rate": eta}``.
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
        weighs ``min(1, max_sample_weight)``: below 1 that scales every loss
        term by it, as a larger penalty would (with a ``UserWarning``); see
        :doc:`/user_guide/weights`.
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
        Binary: one row (the score of ``classes_[1]``); more classes: one
        row per class (one-vs-rest).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    privacy_spent_ : PrivacyBudget
        One fit's cost; a search's or cross-validation's fits compose (see ``search_privacy_cost``).
        (epsilon, delta) under replace-one neighbours.
        With a user-given ``random_state`` the guarantee assumes the seed is
        secret and used for this one release (see ``noise_source_``). Exact
        statistics of the data (rows clipped, ...) are not attributes: the
        data holder reads them with :func:`skdp.fit_diagnostics`.
    noise_scale_ : float
        Std of the noise on each step's mean gradient (of each class's fit).
    noise_source_ : str
        ``"os-entropy"`` when the noise came from fresh OS entropy
        (``random_state=None``), else ``"seed:<digest>"`` of the generator
        state the fit started from. Releases with equal digests share their
        noise; skdp's composition tools report them as ``epsilon=inf``.
    solver_ : str
    n_iter_ : int
    n_features_in_ : int

    See Also
    --------
    DPLogisticRegression
    sklearn.svm.LinearSVC : the non-private model.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdp import DPLinearSVC
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = DPLinearSVC(epsilon=1.0, data_norm=6.0, classes=[0, 1], random_state=0).fit(X, y)
    >>> bool(clf.privacy_spent_.epsilon <= 1.0)  # the accountant may price it a little below epsilon
    True
    >>> bool(clf.score(X, y) > 0.6)
    True

    Three classes (one-vs-rest), the budget shared by the three fits:

    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = DPLinearSVC(epsilon=1.0, data_norm=3.0, classes=[0, 1, 2], random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.intercept_.shape
    ((3, 4), (3,))
    >>> bool(clf.privacy_spent_.epsilon <= 1.0)
    True
    """

    _parameter_constraints: dict = {
        **DPLinearModel._parameter_constraints,
        "solver": [SolverChoice(lambda s: s.constraint is None and "hinge" in s.losses)],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "classes": ["array-like", StrOptions({"auto"}), None],
        "coef_norm": [Interval(Real, 0, None, closed="neither"), None],
        **CLASS_WEIGHT_CONSTRAINTS,
    }

    def __init__(self, epsilon=1.0, delta=1e-5, *, solver="auto", alpha=0.01, fit_intercept=True,
                 intercept_scaling=None, data_norm="auto", bound_budget_fraction=0.05, classes="auto",
                 coef_norm=None, max_iter=None, solver_options=None, random_state=None, verbose=0,
                 max_sample_weight=1.0, class_weight=None):
        self.epsilon = epsilon
        self.delta = delta
        self.solver = solver
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.data_norm = data_norm
        self.bound_budget_fraction = bound_budget_fraction
        self.classes = classes
        self.coef_norm = coef_norm
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.random_state = random_state
        self.verbose = verbose
        self.max_sample_weight = max_sample_weight
        self.class_weight = class_weight

    default_solver = "noisy_sgd"

    def _auto_solver(self, loss_name, shape=None):
        return self.default_solver

    def _constraint_radius(self, solver, coef_norm):
        if self.coef_norm is not None:
            return float(self.coef_norm)
        if not self.alpha > 0:
            raise ValueError("DPLinearSVC needs coef_norm, or alpha > 0 for the default radius sqrt(2/alpha).")
        return math.sqrt(2.0 / self.alpha)

    def _n_public_classes(self):
        """Number of public classes, or 2 when unknown before the fit (``"auto"`` plans as binary)."""
        classes = check_class_set(self)
        return 2 if classes is None else classes.size

    def _solver_budget(self, solver, view, pre_events):
        # one-vs-rest (public classes): the k fits are priced with the bound choices made before them, at the
        # binary fit's budget (what a fit whose label set is chosen in the fit is planned and charged as)
        price_with = getattr(solver, "price_with", None)
        if price_with is not None:
            price_with(pre_events, self.delta)
            return super()._solver_budget(solver.solver, view, pre_events)[0], None
        return super()._solver_budget(solver, view, pre_events)

    def _plan_spec(self, public, shape):
        classes = check_class_set(self)
        # "auto" plans like public classes: the binary fit and the one-vs-rest fit of any number of
        # selected labels are calibrated to the same budget (see ovr_budget)
        solver = one_vs_rest(self._resolve_solver("hinge", shape, public), 2 if classes is None else classes.size)
        return dict(solver=solver, loss=HingeLoss(), n_outputs=1, label_bound=None, coef_norm=None,
                    guaranteed=self.classes is not None)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, privacy_ledger=None):
        """Fit the classifier with differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in ``[0, max_sample_weight]`` (larger ones are clipped
            to it, with a ``UserWarning``; negative ones raise ``ValueError``).
            The loss is ``(1/n) sum_i w_i phi_i`` with ``n`` the public number
            of rows: a weight 0 removes a row's influence, weights of 1 give the
            unweighted fit.
        privacy_ledger : PrivacyLedger or None, default=None

        Returns
        -------
        self : object
        """
        return private_fit(self, X, y, sample_weight=sample_weight, privacy_ledger=privacy_ledger)

    def _select_bounds(self, plan, data, rng):
        """The label set (``classes="auto"``: private), then the row bound."""
        selection = fit_classes(self, data.y, rng)
        with refused_after_selection(self, selection.events):
            bounds = self._select_row_bound(plan, data, rng, Bounds(list(selection.events), derived=selection.derived))
        bounds.values["selection"] = selection
        return bounds

    def _run(self, plan, data, bounds, rng):
        """The hinge loss on the bounded rows; one-vs-rest for more than two classes."""
        selection = bounds.values["selection"]
        k = selection.classes.size
        if k == 2:
            y_enc = np.where(data.y == selection.classes[1], 1.0, -1.0)
        else:  # one-vs-rest: column c labels class c against the rest (unselected rows are zeroed)
            y_enc = ovr_targets(selection, data.y)
        planned_k = getattr(plan.solver, "n_classes", 2)
        solver = plan.solver if planned_k == k else one_vs_rest(getattr(plan.solver, "solver", plan.solver), k)
        weights = class_weighted(self, data.weights, data.y, selection.classes)
        return self._bound_and_solve(plan, data, bounds, rng, HingeLoss(), 1, solver, y=y_enc,
                                     active=selection.active, sample_weight=weights)

    def _set_fitted(self, plan, data, bounds, ran):
        self._set_bounds_fitted(bounds, ran)
        self.coef_, self.intercept_ = self._split_coef(ran.result.coef)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags
