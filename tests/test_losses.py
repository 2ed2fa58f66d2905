"""skdp/losses.py: derivatives, the constants the DP proofs use, per-example clipping.

Derivatives are checked against central finite differences of ``value``; every
constant a loss reports (per-example gradient bound, smoothness, gradient at
``w = 0``) is checked against a brute-force maximum over random points within
the bounds: the reported constant must be >= what is observed (soundness) and
not much larger (tightness: a loose constant is wasted noise).
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import optimize

from skdp.bounds import bound_features
from skdp.losses import (
    HingeLoss,
    LogisticLoss,
    MultinomialLoss,
    SquaredLoss,
    clip_derivatives,
    clipped_mean_gradient,
    moreau_hinge_derivative,
)

K, B, M = 1.7, 2.5, 3.0  # row bound, label bound, coefficient-ball radius used for the brute-force checks
TIGHT = 0.97  # brute force must reach this fraction of a reported constant


def _labels(loss, rng, n):
    """Labels in the loss's encoding: +-1 (binary), class indices (multinomial), reals in [-B, B] (squared)."""
    if isinstance(loss, MultinomialLoss):
        return rng.randint(0, loss.n_classes, n)
    if isinstance(loss, SquaredLoss):
        return rng.uniform(-B, B, n)
    return rng.choice([-1.0, 1.0], n)


def _rows(rng, n, d, bound=K):
    """Random rows with norms uniform in [0, bound], a quarter of them exactly on the bound."""
    U = rng.randn(n, d)
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    r = rng.uniform(0, bound, n)
    r[: n // 4] = bound
    return U * r[:, None]


LOSSES = [LogisticLoss(), MultinomialLoss(3), SquaredLoss(), HingeLoss()]
IDS = ["logistic", "multinomial", "squared", "hinge"]


# ------------------------------------------------------------------------------------------
# derivatives
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_derivative_matches_finite_differences_of_value(loss):
    rng = np.random.RandomState(0)
    n, h = 200, 1e-6
    y = _labels(loss, rng, n)
    if isinstance(loss, MultinomialLoss):
        Z = rng.uniform(-6, 6, (n, loss.n_classes))
        num = np.column_stack([(loss.value(Z + h * e, y) - loss.value(Z - h * e, y)) / (2 * h)
                               for e in np.eye(loss.n_classes)])
    else:
        Z = rng.uniform(-6, 6, n)
        if isinstance(loss, HingeLoss):
            Z = np.where(np.abs(1 - y * Z) < 1e-3, Z + 0.01, Z)  # away from the kink: a plain derivative
        num = (loss.value(Z + h, y) - loss.value(Z - h, y)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(Z, y), num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("loss", [LogisticLoss(), SquaredLoss()], ids=["logistic", "squared"])
def test_curvature_at_matches_finite_differences_and_the_bound(loss):
    rng = np.random.RandomState(1)
    n, h = 200, 1e-5
    y = _labels(loss, rng, n)
    Z = rng.uniform(-6, 6, n)
    num = (loss.derivative(Z + h, y) - loss.derivative(Z - h, y)) / (2 * h)
    np.testing.assert_allclose(loss.curvature_at(Z, y), num, rtol=1e-6, atol=1e-9)
    assert np.all(loss.curvature_at(Z, y) <= loss.curvature)


@pytest.mark.parametrize("sparse_input", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("loss", LOSSES[:3], ids=IDS[:3])
def test_unclipped_mean_gradient_is_the_gradient_of_the_mean_loss(loss, sparse_input):
    rng = np.random.RandomState(2)
    n, p, h = 50, 4, 1e-6
    X = rng.randn(n, p)
    y = _labels(loss, rng, n)
    shape = (p, loss.n_classes) if isinstance(loss, MultinomialLoss) else (p,)
    w = rng.randn(*shape)

    def mean_loss(v):
        return float(np.mean(loss.value(X @ v, y)))

    num = np.zeros(shape)
    for idx in np.ndindex(*shape):
        e = np.zeros(shape)
        e[idx] = h
        num[idx] = (mean_loss(w + e) - mean_loss(w - e)) / (2 * h)
    Xin = sp.csr_matrix(X) if sparse_input else X
    g = clipped_mean_gradient(loss, Xin, y, w, None, None)
    assert g.shape == shape
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------------------------------
# the constants, against brute force within the bounds
# ------------------------------------------------------------------------------------------
def _per_example_gradient_norms(loss, rng, n=20000, d=2):
    """||grad_w phi(<w, x>, y)|| for random w (on ||w|| <= M for the squared loss), ||x|| <= K, y in range."""
    X = _rows(rng, n, d)
    y = _labels(loss, rng, n)
    if isinstance(loss, MultinomialLoss):
        Z = rng.uniform(-30, 30, (n, loss.n_classes))  # any coefficients: logits are unrestricted
        S = loss.derivative(Z, y)
        return np.linalg.norm(S, axis=1) * np.linalg.norm(X, axis=1)
    if isinstance(loss, SquaredLoss):
        W = _rows(rng, n, d, bound=M)
        y = np.where(rng.rand(n) < 0.5, rng.choice([-B, B], n), y)
        Z = np.einsum("ij,ij->i", W, X)
    else:
        Z = rng.uniform(-30, 30, n)
    return np.abs(loss.derivative(Z, y)) * np.linalg.norm(X, axis=1)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_lipschitz_bound_is_sound_and_tight(loss):
    rng = np.random.RandomState(3)
    G = loss.lipschitz(K, label_bound=B, coef_norm=M)
    observed = _per_example_gradient_norms(loss, rng).max()
    assert observed <= G * (1 + 1e-12)
    assert observed >= TIGHT * G
    if isinstance(loss, SquaredLoss):
        assert G == pytest.approx(K * (K * M + B), rel=1e-12)  # the module's table


def test_only_the_squared_loss_needs_the_domain_for_its_bound():
    for loss in LOSSES:
        if loss.globally_lipschitz:
            assert loss.derivative_bound() > 0  # no label, coefficient or data bound needed
        else:
            with pytest.raises(ValueError, match="label_bound"):
                loss.derivative_bound(label_bound=B)
    assert [loss.globally_lipschitz for loss in LOSSES] == [True, True, False, True]
    # and the squared loss's per-example gradient really is unbounded without a coefficient ball
    assert abs(SquaredLoss().derivative(np.array([1e8]), np.array([0.0]))[0]) > 1e7


def _per_example_hessian(loss, x, y, w, h=1e-5):
    """Hessian of phi(<w, x>, y) in w (flattened), by central differences of the per-example gradient."""
    X = x[None, :]
    yy = np.atleast_1d(y)

    def grad(v):
        return clipped_mean_gradient(loss, X, yy, v.reshape(w.shape), None, None).ravel()

    cols = []
    for j in range(w.size):
        e = np.zeros(w.size)
        e[j] = h
        cols.append((grad(w.ravel() + e) - grad(w.ravel() - e)) / (2 * h))
    H = np.column_stack(cols)
    return (H + H.T) / 2


@pytest.mark.parametrize("loss", LOSSES[:3], ids=IDS[:3])
def test_smoothness_is_sound_tight_and_the_hessian_rank_is_as_declared(loss):
    rng = np.random.RandomState(4)
    d = 3
    beta = loss.smoothness(K)
    assert loss.hessian_bound(K) == beta
    multi = isinstance(loss, MultinomialLoss)
    largest, ranks = 0.0, set()
    for i in range(300):
        x = _rows(rng, 1, d)[0] if i % 2 else K * np.eye(d)[i % d]
        y = _labels(loss, rng, 1)[0]
        w = rng.randn(d, loss.n_classes) if multi else rng.randn(d)
        w *= rng.choice([0.01, 0.3, 3.0])  # logits near 0 (where the curvature peaks) and far from it
        H = _per_example_hessian(loss, x, y, w)
        eig = np.linalg.eigvalsh(H)
        assert eig.min() >= -1e-6  # convex
        largest = max(largest, eig.max())
        ranks.add(int(np.sum(eig > 1e-7 * beta)))  # finite-difference noise is ~1e-11
    assert largest <= beta * (1 + 1e-6)
    assert largest >= TIGHT * beta
    assert loss.rank_one_hessian == (max(ranks) <= 1)
    if multi:
        assert max(ranks) == loss.n_classes - 1


def test_hinge_loss_is_not_smooth():
    loss = HingeLoss()
    assert math.isinf(loss.smoothness(K))
    # the derivative jumps at the kink y z = 1: no finite smoothness constant holds
    y = np.array([1.0, 1.0])
    jump = loss.derivative(np.array([1 - 1e-9, 1 + 1e-9]), y)
    assert jump[0] - jump[1] == -1.0


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_initial_derivative_bound_is_the_largest_derivative_at_zero(loss):
    rng = np.random.RandomState(5)
    n = 2000
    y = _labels(loss, rng, n)
    if isinstance(loss, SquaredLoss):
        y[:2] = [-B, B]
    if isinstance(loss, MultinomialLoss):
        observed = np.linalg.norm(loss.derivative(np.zeros((n, loss.n_classes)), y), axis=1).max()
    else:
        observed = np.abs(loss.derivative(np.zeros(n), y)).max()
    assert loss.initial_derivative_bound(label_bound=B) == pytest.approx(observed, rel=1e-12)


# ------------------------------------------------------------------------------------------
# per-example clipping
# ------------------------------------------------------------------------------------------
def test_clip_derivatives_scalar_rows():
    rng = np.random.RandomState(6)
    n, clip = 500, 0.8
    S = rng.randn(n) * 3
    norms = np.abs(rng.randn(n))
    norms[:5] = 0.0  # empty rows: nothing to clip, no division by zero
    S_before = S.copy()
    out = clip_derivatives(S, norms, clip)
    np.testing.assert_array_equal(S, S_before)  # not modified in place
    assert np.all(np.abs(out) * norms <= clip * (1 + 1e-12))
    small = np.abs(S) * norms <= clip
    np.testing.assert_array_equal(out[small], S[small])
    assert small.sum() < n  # some rows really are clipped...
    np.testing.assert_allclose(np.abs(out[~small]) * norms[~small], clip, rtol=1e-12)  # ...to exactly clip
    assert np.all(np.sign(out) == np.sign(S))


def test_clip_derivatives_columns_are_clipped_separately():
    rng = np.random.RandomState(7)
    S = rng.randn(300, 2) * 3
    norms = np.abs(rng.randn(300))
    out = clip_derivatives(S, norms, 0.5)
    for j in range(2):
        np.testing.assert_array_equal(out[:, j], clip_derivatives(S[:, j], norms, 0.5))


def test_clip_derivatives_vector_rows_keep_their_direction():
    rng = np.random.RandomState(8)
    S = rng.randn(300, 3) * 3
    norms = np.abs(rng.randn(300))
    out = clip_derivatives(S, norms, 0.5, vector=True)
    g = np.linalg.norm(out, axis=1) * norms
    assert np.all(g <= 0.5 * (1 + 1e-12))
    small = np.linalg.norm(S, axis=1) * norms <= 0.5
    np.testing.assert_array_equal(out[small], S[small])
    np.testing.assert_allclose(g[~small], 0.5, rtol=1e-12)
    cos = np.einsum("ij,ij->i", out, S) / (np.linalg.norm(out, axis=1) * np.linalg.norm(S, axis=1))
    np.testing.assert_allclose(cos, 1.0, rtol=1e-12)


def test_clipped_mean_gradient_of_a_batch_divides_by_the_public_size():
    """``rows`` picks a batch, ``n_total`` is the public denominator: the sum of the clipped per-example
    gradients of the batch, divided by ``n_total`` (never by the realised batch size)."""
    rng = np.random.RandomState(9)
    n, p = 80, 5
    X = rng.randn(n, p)
    y = rng.choice([-1.0, 1.0], n)
    w = 3 * rng.randn(p)
    norms = np.linalg.norm(X, axis=1)
    rows = np.array([3, 17, 17, 40, 79])
    loss = LogisticLoss()
    per_example = [clipped_mean_gradient(loss, X[[i]], y[[i]], w, norms[[i]], 0.3) for i in rows]
    g = clipped_mean_gradient(loss, X, y, w, norms, 0.3, n_total=12.5, rows=rows)
    np.testing.assert_allclose(g, np.sum(per_example, axis=0) / 12.5, rtol=1e-12)
    g_csr = clipped_mean_gradient(loss, sp.csr_matrix(X), y, w, norms, 0.3, n_total=12.5, rows=rows)
    np.testing.assert_allclose(g_csr, g, rtol=1e-12)


def test_clipped_gradients_respect_the_bound(clf_data):
    """Every per-example gradient the solvers see has norm <= G (seed000 hook 8)."""
    X, y = clf_data
    b = bound_features(X * 5, 3.0, True, 1.0)
    rng = np.random.RandomState(0)
    for loss, yy, shape in ((LogisticLoss(), np.where(y == 1, 1.0, -1.0), (6,)),
                            (MultinomialLoss(3), y + (X[:, 2] > 1), (6, 3)),
                            (SquaredLoss(), 3 * rng.randn(len(y)), (6,))):
        w = 10 * rng.randn(*shape)
        G = 0.7
        for i in range(0, len(y), 37):
            g = clipped_mean_gradient(loss, b.X, yy, w, b.row_norms, G, rows=np.array([i]), n_total=1)
            assert np.linalg.norm(g) <= G * (1 + 1e-12)


# ------------------------------------------------------------------------------------------
# the hinge loss's Moreau envelope (nsgd_moreau)
# ------------------------------------------------------------------------------------------
def test_moreau_hinge_gradient_matches_numerical_prox():
    rng = np.random.RandomState(0)
    beta = 3.0
    for _ in range(30):
        x = rng.randn(4)
        w = rng.randn(4)
        y = rng.choice([-1.0, 1.0])

        def env(v):
            return max(0.0, 1 - y * (v @ x)) + 0.5 * beta * np.sum((v - w) ** 2)

        # prox by 1-d search along x: the minimiser is w + t y x
        t = optimize.minimize_scalar(lambda t: env(w + t * y * x), bounds=(-10, 10), method="bounded",
                                     options={"xatol": 1e-12}).x
        grad_num = beta * (w - (w + t * y * x))
        c = moreau_hinge_derivative(np.array([w @ x]), np.array([y]), np.array([x @ x]), beta)[0]
        assert np.allclose(c * x, grad_num, atol=1e-6)
        assert np.linalg.norm(c * x) <= np.linalg.norm(x) + 1e-12
