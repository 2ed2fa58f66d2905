"""Generalised-linear-model losses and the constants their DP proofs need.

Each loss is ``phi(z_i, y_i)`` of the linear predictor ``z_i = <w, x_i>``
(a vector of ``k`` logits for the multinomial loss). Per-example gradients are
``phi'(z_i, y_i) x_i^T``, so every bound follows from the row bound ``K`` and a
bound on ``phi'`` (the constants used by Wang, Ye and Xu 2017 and by Zhang,
Zheng, Mou and Wang 2017 for these losses).

Constants, for rows with ``||x|| <= K``:

=============  =====================================  ==============  =====================
loss           per-example gradient bound G           smoothness      curvature ``phi''``
=============  =====================================  ==============  =====================
logistic       ``K``                                  ``K^2/4``       ``<= 1/4``, rank 1
multinomial    ``sqrt(2) K``                          ``K^2/2``       rank ``k - 1``
squared        ``K (K M + B)`` on ``||w|| <= M``      ``K^2``         ``= 1``, rank 1
=============  =====================================  ==============  =====================

References
----------
.. [1] D. Wang, M. Ye and J. Xu, "Differentially private empirical risk minimization revisited:
   faster and more general", NeurIPS 2017. <https://arxiv.org/abs/1802.05251>
.. [2] J. Zhang, K. Zheng, W. Mou and L. Wang, "Efficient private ERM for smooth objectives",
   IJCAI 2017. <https://arxiv.org/abs/1703.09947>
.. [3] R. Bassily, V. Feldman, K. Talwar and A. Thakurta, "Private stochastic convex
   optimization with optimal rates", NeurIPS 2019. <https://arxiv.org/abs/1908.09970>
"""

import math

import numpy as np
from scipy import special

__all__ = ["LogisticLoss", "MultinomialLoss", "SquaredLoss", "HingeLoss", "moreau_hinge_derivative", "clip_derivatives",
           "clipped_mean_gradient", "ScreenedSquaredGradient", "weigh", "take_rows", "LOSSES", "CAPABILITIES",
           "register_loss", "get_loss"]

#: What a solver's proof may need from a loss, and what each means. A loss has a
#: capability when the attribute of that name is true (see :class:`_GLMLoss`);
#: a solver declares the ones it needs in ``Solver.requires``.
CAPABILITIES = {
    "smooth": "a smooth loss (a finite bound on phi'')",
    "scalar": "one linear predictor per row (binary classification or regression, not multinomial)",
    "globally_lipschitz": "a gradient bounded for every coefficient vector (not the squared loss)",
    "moreau_envelope": "a closed-form Moreau envelope (the hinge loss)",
    "quadratic": "a quadratic loss (constant phi'': the minimiser solves a linear system; the squared loss)",
}

#: The registered losses, by name, in registration order.
LOSSES = {}


def register_loss(cls):
    """Class decorator: register a GLM loss under its ``name`` (solvers find it by its capabilities)."""
    LOSSES[cls.name] = cls
    return cls


def get_loss(name):
    """The registered loss class called ``name``."""
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}; registered: {sorted(LOSSES)}.") from None


class _GLMLoss:
    """Base class of the GLM losses: the constants of the DP proofs and the capabilities solvers check."""

    name = None
    #: whether the per-example Hessian has rank <= 1 (objective perturbation needs it)
    rank_one_hessian = True
    #: bound on phi'' (the per-example Hessian is phi'' x x^T)
    curvature = None
    #: True when ||phi'|| is bounded independently of w (globally Lipschitz)
    globally_lipschitz = True
    #: one linear predictor per row (False for the multinomial loss's k logits)
    scalar = True
    #: phi'' is constant, so the curvature bound is attained everywhere and the objective is a
    #: quadratic: longer steps amplify noise along the top eigendirection; exact minimisers solve a
    #: linear system
    quadratic = False
    #: the loss has a closed-form Moreau envelope gradient (see :func:`moreau_hinge_derivative`)
    moreau_envelope = False

    @property
    def smooth(self):
        """Whether ``phi''`` is bounded (finite ``curvature``)."""
        return math.isfinite(self.curvature)

    @classmethod
    def capabilities(cls):
        """The :data:`CAPABILITIES` this loss has."""
        loss = cls.__new__(cls)
        return frozenset(c for c in CAPABILITIES if getattr(loss, c))

    def n_outputs(self, n_classes):
        return 1

    def derivative_bound(self, label_bound=None, coef_norm=None, data_norm=None):
        """Bound on ``||phi'(z, y)||`` over the domain."""
        raise NotImplementedError

    def initial_derivative_bound(self, label_bound=None):
        """Largest ``||phi'(0, y)||``: per-example gradients at ``w = 0`` have norm <= this times ``K``."""
        raise NotImplementedError

    def lipschitz(self, data_norm, label_bound=None, coef_norm=None):
        """Per-example gradient norm bound ``G``."""
        return data_norm * self.derivative_bound(label_bound, coef_norm, data_norm)

    def smoothness(self, data_norm):
        """Smoothness ``beta`` of each per-example loss (and so of their mean)."""
        return self.curvature * data_norm**2

    def hessian_bound(self, data_norm):
        """Largest eigenvalue ``lambda_H`` of one per-example Hessian."""
        return self.curvature * data_norm**2


@register_loss
class LogisticLoss(_GLMLoss):
    """Binary logistic loss ``log(1 + exp(-y z))`` with ``y`` in {-1, +1}."""

    name = "logistic"
    curvature = 0.25

    def derivative_bound(self, label_bound=None, coef_norm=None, data_norm=None):
        return 1.0

    def initial_derivative_bound(self, label_bound=None):
        return 0.5

    def value(self, Z, y):
        return np.logaddexp(0.0, -y * Z)

    def derivative(self, Z, y):
        # d/dz log(1 + e^{-yz}) = -y sigmoid(-y z), computed in one buffer (same values, fewer temporaries)
        S = np.multiply(y, Z)
        np.negative(S, out=S)
        special.expit(S, out=S)
        S *= y
        return np.negative(S, out=S)

    def curvature_at(self, Z, y):
        s = special.expit(Z)
        return s * (1 - s)


@register_loss
class MultinomialLoss(_GLMLoss):
    """Softmax cross-entropy over ``k`` classes; ``y`` holds class indices 0..k-1.

    The gradient with respect to the logits is ``p - e_y`` whose L2 norm is at
    most ``sqrt(2)``; the Hessian ``diag(p) - p p^T`` has eigenvalues <= 1/2.
    """

    name = "multinomial"
    curvature = 0.5
    rank_one_hessian = False
    scalar = False

    def __init__(self, n_classes=2):
        self.n_classes = int(n_classes)

    def n_outputs(self, n_classes):
        return n_classes

    def derivative_bound(self, label_bound=None, coef_norm=None, data_norm=None):
        return math.sqrt(2.0)

    def initial_derivative_bound(self, label_bound=None):
        # p = uniform at w = 0: ||p - e_y|| = sqrt(1 - 1/k)
        return math.sqrt(1.0 - 1.0 / self.n_classes)

    def value(self, Z, y):
        return special.logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), y]

    def derivative(self, Z, y):
        P = special.softmax(Z, axis=1)
        P[np.arange(Z.shape[0]), y] -= 1.0
        return P


@register_loss
class SquaredLoss(_GLMLoss):
    """Squared loss ``(z - y)^2 / 2``.

    It is not globally Lipschitz: the gradient bound ``K (K M + B)`` needs the
    coefficients on the ball ``||w|| <= M`` and labels ``|y| <= B``
    (Wang, Ye and Xu 2017 assume both bounds; objective perturbation must
    therefore solve on that ball, see :doc:`/papers/bassily_feldman_talwar_thakurta2019`).
    """

    name = "squared"
    curvature = 1.0
    globally_lipschitz = False
    quadratic = True

    def derivative_bound(self, label_bound=None, coef_norm=None, data_norm=None):
        if label_bound is None or coef_norm is None or data_norm is None:
            raise ValueError("The squared loss needs label_bound, coef_norm and data_norm for its bound.")
        return data_norm * coef_norm + label_bound

    def initial_derivative_bound(self, label_bound=None):
        return float(label_bound)

    def value(self, Z, y):
        return 0.5 * (Z - y) ** 2

    def derivative(self, Z, y):
        return Z - y

    def curvature_at(self, Z, y):
        return np.ones_like(Z)


@register_loss
class HingeLoss(_GLMLoss):
    """Hinge loss ``max(0, 1 - y z)`` with ``y`` in {-1, +1} (linear SVM).

    Convex and ``K``-Lipschitz but not smooth: ``derivative`` returns a
    subgradient. Solvers whose proofs need smoothness refuse it; ``noisy_sgd``
    (privacy needs no smoothness) and ``nsgd_moreau`` (which smooths it) take it.
    """

    name = "hinge"
    curvature = math.inf
    moreau_envelope = True

    def derivative_bound(self, label_bound=None, coef_norm=None, data_norm=None):
        return 1.0

    def initial_derivative_bound(self, label_bound=None):
        return 1.0

    def value(self, Z, y):
        return np.maximum(0.0, 1.0 - y * Z)

    def derivative(self, Z, y):
        return np.where(y * Z < 1.0, -y, 0.0)


def moreau_hinge_derivative(Z, y, sq_norms, beta):
    """Scalar ``c_i`` with ``grad f_beta(w; x_i) = c_i y_i x_i`` for the hinge loss's Moreau envelope.

    Bassily-Feldman-Talwar-Thakurta 2019, section 4 (noisy SGD on the Moreau
    envelope), here in the closed form of the unconstrained envelope for a GLM: with ``u0 = y <w, x>`` and ``tau = ||x||^2 / beta``, ``c = -1`` if
    ``u0 < 1 - tau``, ``(u0 - 1)/tau`` on ``[1 - tau, 1]`` and ``0`` above; so
    ``|c| <= 1`` and the envelope gradient has norm ``<= ||x||`` (it is a
    subgradient of the hinge at the prox point). Rows with ``x = 0`` get 0.
    Returns the derivative with respect to ``z`` (``c * y``).
    """
    u0 = y * Z
    tau = np.asarray(sq_norms, dtype=float) / float(beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        mid = np.where(tau > 0, (u0 - 1.0) / np.where(tau > 0, tau, 1.0), 0.0)
    c = np.where(u0 > 1.0, 0.0, np.where(u0 < 1.0 - tau, -1.0, mid))
    c = np.clip(c, -1.0, 0.0)
    return c * y


def clip_derivatives(S, norms, clip, vector=False):
    """Rescale per-example loss derivatives so each gradient ``S_i x_i^T`` has L2 norm ``<= clip``.

    ``S`` holds ``phi'_i`` (shape ``(n,)``, or ``(n, k)`` with ``vector=True``
    for a vector of logits per row), or several scalar derivatives per row
    (shape ``(n, m)``, ``vector=False``: each column clipped on its own, e.g.
    the same rows at two iterates). ``norms`` are the row norms ``||x_i||``.
    The one clipping rule every gradient solver uses.
    """
    norms = np.asarray(norms)
    if vector:
        factor = np.minimum(1.0, clip / np.maximum(np.linalg.norm(S, axis=1) * norms, 1e-300))
        return S * factor[:, None]
    scale = norms if S.ndim == 1 else norms[:, None]
    factor = np.abs(S)  # min(1, clip / max(|S| norm, 1e-300)), in one buffer
    factor *= scale
    np.maximum(factor, 1e-300, out=factor)
    np.divide(clip, factor, out=factor)
    np.minimum(factor, 1.0, out=factor)
    factor *= S
    return factor


def take_rows(a, rows):
    """``a[rows]`` along the first axis: ``np.take`` for an index array (the same values, faster than fancy indexing)."""
    if isinstance(rows, np.ndarray) and rows.dtype.kind in "iu":
        return a.take(rows, axis=0)
    return a[rows]


def weigh(S, sample_weight):
    """Per-example derivatives ``S`` (shape ``(n,)`` or ``(n, k)``) times the row weights (``None``: unchanged).

    Weights multiply a row's derivative **after** clipping, so a row of weight
    ``w_i <= W`` contributes at most ``W`` times the clip norm: every
    sensitivity built on a per-example bound scales with the public ``W``
    (:attr:`skdp.solvers.PublicProblem.max_sample_weight`).
    """
    if sample_weight is None:
        return S
    w = np.asarray(sample_weight)
    return S * (w if np.ndim(S) == 1 else w[:, None])


def clipped_mean_gradient(loss, X, y, coef, norms, clip, n_total=None, rows=None, sample_weight=None):
    """Mean of per-example gradients, each clipped to L2 norm ``clip``, then weighted.

    Vectorised: the per-example gradient is ``phi'_i x_i^T`` so its norm is
    ``||phi'_i|| ||x_i||`` and clipping rescales ``phi'_i``. ``clip=None`` skips
    clipping (only when the loss is provably ``G``-Lipschitz on the data).

    Parameters
    ----------
    loss : loss object
    X : array or CSR matrix (n, p), rows already bounded
    y : labels in the loss's encoding
    coef : (p,) or (p, k)
    norms : (n,) row norms of X, or None when ``clip`` is None
    clip : float or None
    n_total : float, optional
        Public denominator (default ``X.shape[0]``); a Poisson-sampled batch
        divides by its expected size, never by the realised one.
    rows : index array, optional
        Restrict to these rows (a sampled batch).
    sample_weight : (n,) array or None
        Row weights, applied after clipping (:func:`weigh`); ``None``: every weight 1.

    Returns
    -------
    grad : same shape as ``coef``
    """
    if hasattr(X, "gradient_sum"):  # a lazy design: one fused pass, or one gather of the batch
        def derivative(Z, block):
            S = loss.derivative(Z, take_rows(y, block))
            S = S if clip is None else clip_derivatives(S, take_rows(norms, block), clip, vector=S.ndim == 2)
            return S if sample_weight is None else weigh(S, take_rows(sample_weight, block))

        if rows is None:
            m = X.shape[0]
        else:
            rows = np.asarray(rows)
            m = int(np.count_nonzero(rows)) if rows.dtype == bool else rows.size
        return X.gradient_sum(coef, derivative, rows=rows) / (m if n_total is None else n_total)
    if rows is not None:
        X = X[rows]
        y = y[rows]
        norms = None if norms is None else norms[rows]
        sample_weight = None if sample_weight is None else sample_weight[rows]
    Z = X @ coef
    S = loss.derivative(Z, y)
    if clip is not None:
        S = clip_derivatives(S, norms, clip, vector=S.ndim == 2)
    S = weigh(S, sample_weight)
    denom = X.shape[0] if n_total is None else n_total
    return np.asarray(X.T @ S) / denom


class ScreenedSquaredGradient:
    """Repeated full-batch clipped mean gradients of the squared loss, mostly without a pass over the rows.

    The same values as :func:`clipped_mean_gradient` (up to floating-point
    summation order) for the squared loss on a lazy design (it needs
    ``X.gram`` and ``X.gradient_sum``, see :class:`skdp.bounds.BoundedDesign`):
    with ``r_i = <w, x_i> - y_i`` the per-example derivative, the clipped sum is
    ``X^T X w - X^T y + sum_{i clipped} (clip(r_i) - r_i) x_i``. The sufficient
    statistics ``X^T X``, ``X^T y`` take one pass; a row can only be clipped if
    ``(|r0_i| + ||x_i|| ||w - w0||) ||x_i|| > clip``, with ``r0`` the exact
    derivatives at a reference point ``w0`` (``-y`` at ``w = 0``), so only those
    candidate rows are gathered and their exact ``r_i`` computed. When the
    candidates are more than ``refresh_fraction`` of the rows, one fused pass
    computes the gradient and makes ``w`` the new reference.
    Which rows are clipped is decided exactly, row by row, as in the direct
    computation, so the result (and every bound) is the same; only the work differs.
    """

    #: candidates above this share of the rows: a full fused pass (and a new reference point)
    refresh_fraction = 0.05
    #: full passes made before the sufficient statistics are worth their one pass
    passes_before_statistics = 2
    #: cost of the sufficient statistics in fused passes (``X^T X`` is about this many passes' time): with no
    #: more full gradients than this left to compute, fused passes are cheaper
    statistics_cost = 4

    def __init__(self, X, y, norms, clip):
        self.X, self.y, self.clip = X, np.asarray(y, dtype=float), float(clip)
        self.norms = np.asarray(norms, dtype=float)
        self.sq_norms = self.norms**2
        self._reference(np.zeros(X.shape[1]), -self.y)
        self.passes, self.XtX, self.Xty = 0, None, None
        self._bound = np.empty_like(self.norms)  # work buffers of the screening (no allocation per step)
        self._over = np.empty(self.norms.shape, dtype=bool)

    def _reference(self, w, r):
        self.w0 = np.array(w, dtype=float)
        self.t0 = np.abs(r) * self.norms

    def _clip(self, S, rows):
        return clip_derivatives(S, self.norms[rows], self.clip)

    def __call__(self, w, n_total=None, remaining=None):
        """Sum of the clipped per-example gradients at ``w`` divided by ``n_total`` (default ``n``).

        ``remaining``: how many full gradients the caller's public schedule
        still computes, this one included (``None``: unknown); with
        :attr:`statistics_cost` or fewer left, the statistics are not built.
        """
        n = self.X.shape[0]
        denom = n if n_total is None else n_total
        delta = float(np.linalg.norm(w - self.w0))
        np.multiply(self.sq_norms, delta, out=self._bound)
        self._bound += self.t0  # a bound on |r_i| ||x_i|| at w, row by row
        candidates = np.flatnonzero(np.greater(self._bound, self.clip, out=self._over))
        if candidates.size > self.refresh_fraction * n or (self.XtX is None and (
                self.passes < self.passes_before_statistics
                or (remaining is not None and remaining <= self.statistics_cost))):
            return self._full_pass(w) / denom
        if self.XtX is None:
            G = self.X.gram(extra=self.y)
            p = self.X.shape[1]
            self.XtX, self.Xty = G[:p, :p], G[:p, p]
        grad = self.XtX @ w - self.Xty
        if candidates.size:
            y = self.y

            def correction(Z, rows):
                S = Z - y[rows]
                return self._clip(S, rows) - S

            grad = grad + self.X.gradient_sum(w, correction, rows=candidates)
        return grad / denom

    def _full_pass(self, w):
        self.passes += 1
        r = np.empty_like(self.y)
        y = self.y

        def derivative(Z, rows):
            r[rows] = S = Z - y[rows]
            return self._clip(S, rows)

        out = self.X.gradient_sum(w, derivative)
        self._reference(w, r)
        return out
