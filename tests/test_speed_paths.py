"""The fast paths of a fit compute what the direct computations compute.

A dense fit runs on :class:`skdp.bounds.BoundedDesign` (the clipped, augmented
design without a copy of X), the squared loss's repeated full-batch gradients
on :class:`skdp.losses.ScreenedSquaredGradient`, and the private quantile
counts without sorting. Each is checked here against the plain array / the
direct formula, to floating-point summation order (the clipping decisions, and
so every bound and sensitivity, must be exactly the same).
"""

import numpy as np
import pytest

from skdp.bounds import BoundedDesign, bound_features, row_norms
from skdp.losses import LogisticLoss, MultinomialLoss, ScreenedSquaredGradient, SquaredLoss, clipped_mean_gradient
from skdp.privacy.quantile import DEFAULT_NORM_GRID, DEFAULT_SIGNED_GRID, _counts_at_most


def _rows(seed=0, n=700, d=6, dtype=np.float64):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * rng.gamma(1.0, 1.0, size=(n, 1))  # row norms of every size
    X[3] = 0.0
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("zeroed", [False, True])
def test_bounded_design_matches_the_clipped_array(dtype, fit_intercept, zeroed):
    X = _rows(dtype=dtype)
    X_before = X.copy()
    dense = bound_features(X.astype(np.float64), 2.0, fit_intercept, None)
    lazy = bound_features(X, 2.0, fit_intercept, None, lazy=True)
    assert isinstance(lazy.X, BoundedDesign) and lazy.n_clipped == dense.n_clipped > 0
    A, D = lazy.X, dense.X
    if zeroed:
        keep = np.random.RandomState(1).rand(X.shape[0]) < 0.8
        A, D = A.with_rows_zeroed(keep), np.where(keep[:, None], D, 0.0)
    BoundedDesign._block, block = 64, BoundedDesign._block  # several blocks, a ragged last one
    try:
        rng = np.random.RandomState(2)
        p = D.shape[1]
        w, W, v = rng.randn(p), rng.randn(p, 3), rng.randn(X.shape[0])
        rows = rng.randint(0, X.shape[0], size=50)
        np.testing.assert_allclose(A.toarray(), D, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(A[rows], D[rows], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(A[5], D[5], rtol=1e-12, atol=1e-14)
        for r in (rows, rows[:7]):
            np.testing.assert_allclose(A.gather(r).toarray(), D[r], rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(A.gather(r) @ W, D[r] @ W, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(A.gather(r).T @ v[r], D[r].T @ v[r], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(A @ w, D @ w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(A @ W, D @ W, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(A.T @ v, D.T @ v, rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(A.T @ A, D.T @ D, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(A.gram(weights=np.abs(v)), D.T @ (D * np.abs(v)[:, None]), rtol=1e-10, atol=1e-10)
        G = A.gram(extra=v)
        np.testing.assert_allclose(G[:p, p], D.T @ v, rtol=1e-10, atol=1e-11)
        for loss, y, coef in [(LogisticLoss(), np.sign(v), w), (SquaredLoss(), v, w),
                              (MultinomialLoss(3), rng.randint(0, 3, X.shape[0]), W)]:
            for r in (None, rows, rng.randint(0, X.shape[0], size=600), rows[:5]):
                got = clipped_mean_gradient(loss, A, y, coef, lazy.row_norms, 0.3, rows=r)
                want = clipped_mean_gradient(loss, D, y, coef, dense.row_norms, 0.3, rows=r)
                np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
    finally:
        BoundedDesign._block = block
    np.testing.assert_array_equal(X, X_before)  # the caller's array is only read
    np.testing.assert_allclose(lazy.row_norms, dense.row_norms, rtol=1e-12)


def test_screened_squared_gradient_equals_the_direct_clipped_gradient():
    """Along a path of iterates (small and large moves, so both the screened and the full passes run)."""
    X = _rows(n=900, d=5)
    b = bound_features(X, 2.0, True, None, lazy=True)
    rng = np.random.RandomState(3)
    y = np.clip(b.X @ rng.randn(6) * 0.3 + 0.3 * rng.randn(900), -1, 1)
    clip = 2.0 * 1.0  # K B: the "initial" clip of DPRidge (labels in units where |y| <= 1)
    screened = ScreenedSquaredGradient(b.X, y, b.row_norms, clip)
    screened.refresh_fraction = 0.5  # screen even with many candidate rows
    gathered = []
    gradient_sum = b.X.gradient_sum

    def spy(w, derivative, rows=None):
        if rows is not None:
            gathered.append(len(rows))
        return gradient_sum(w, derivative, rows=rows)

    b.X.gradient_sum = spy
    w, kinds = np.zeros(6), set()
    for step in range(30):
        passes = screened.passes
        got = screened(w)
        kinds.add("pass" if screened.passes > passes else "screened")
        want = clipped_mean_gradient(SquaredLoss(), b.X.toarray(), y, w, b.row_norms, clip)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        w = w + (0.5 if step % 7 == 0 else 0.01) * rng.randn(6)
    assert kinds == {"pass", "screened"} and max(gathered) > 0


def test_screened_squared_gradient_builds_no_statistics_for_the_last_few_gradients():
    """With at most ``statistics_cost`` full gradients left (a public schedule), fused passes, not X^T X."""
    X = _rows(n=500, d=4)
    b = bound_features(X, 2.0, True, None, lazy=True)
    y = 0.3 * np.clip(X[:, 0], -1, 1)  # no row near the clip: the screened path applies
    w = np.full(5, 0.01)
    want = clipped_mean_gradient(SquaredLoss(), b.X.toarray(), y, w, b.row_norms, 2.0)
    screened = ScreenedSquaredGradient(b.X, y, b.row_norms, 2.0)
    cost = screened.statistics_cost
    for left in range(cost + 3, 0, -1):
        np.testing.assert_allclose(screened(w, remaining=left), want, rtol=1e-10, atol=1e-13)
        assert (screened.XtX is None) == (left > cost + 1)  # built on the third call (two passes first)
    late = ScreenedSquaredGradient(b.X, y, b.row_norms, 2.0)
    for left in range(cost, 0, -1):
        np.testing.assert_allclose(late(w, remaining=left), want, rtol=1e-10, atol=1e-13)
    assert late.XtX is None and late.passes == cost


def test_quantile_counts_without_sorting():
    rng = np.random.RandomState(4)
    for grid in (DEFAULT_NORM_GRID, DEFAULT_SIGNED_GRID):
        for values in (rng.rand(5000) * 3, rng.randn(5000) * 100, np.concatenate([grid, grid[:5], [0.0, -1e9, 1e9]])):
            np.testing.assert_array_equal(_counts_at_most(values, grid),
                                          np.searchsorted(np.sort(values), grid, side="right"))


def test_row_norms_computed_once_per_fit(monkeypatch):
    """``data_norm="auto"``: the private bound and the clipping share one computation of the row norms."""
    import skdp.bounds
    import skdp.linear_model._base as base
    from skdp import DPLogisticRegression

    calls = []

    def counting(X):
        calls.append(X.shape)
        return row_norms(X)

    monkeypatch.setattr(base, "row_norms", counting)
    monkeypatch.setattr(skdp.bounds, "row_norms", counting)
    X = _rows(n=400)
    y = (X[:, 0] > 0).astype(int)
    DPLogisticRegression(1.0, random_state=0, classes=[0, 1], feature_clip=None).fit(X, y)
    assert calls == [X.shape]
    # winsorising the features changes the rows: the norms of the winsorised rows once more, by blocks and
    # without a copy of X (the private bound used the raw ones)
    calls.clear()
    clipped = []
    monkeypatch.setattr(base, "clipped_row_norms", lambda X, r: clipped.append(X.shape) or skdp.bounds.clipped_row_norms(X, r))
    est = DPLogisticRegression(1.0, random_state=0, classes=[0, 1]).fit(X, y)
    assert calls == [X.shape] and clipped == [X.shape]
    assert not np.shares_memory(est.coef_, X)


def test_winsorised_design_is_lazy_and_equals_the_clipped_copy():
    from skdp.bounds import BoundedDesign, bound_features, clip_features, clipped_row_norms

    rng = np.random.RandomState(0)
    X = rng.standard_t(2, size=(9000, 4))  # heavy tails: many entries beyond the radius
    r = 1.5
    norms = clipped_row_norms(X, r)
    np.testing.assert_allclose(norms, row_norms(clip_features(X, r)[0]), rtol=1e-14)
    lazy = bound_features(X, 2.5, True, None, 0.5, norms=norms, lazy=True, feature_clip=r)
    eager = bound_features(clip_features(X, r)[0], 2.5, True, None, 0.5, lazy=False)
    A, B = lazy.X, eager.X
    assert isinstance(A, BoundedDesign) and A._X is X  # no copy of the caller's array
    np.testing.assert_allclose(A.toarray(), B, rtol=1e-14)
    w, v = rng.randn(5), rng.randn(9000)
    np.testing.assert_allclose(A @ w, B @ w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(A.T @ v, B.T @ v, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(A.gram(), B.T @ B, rtol=1e-12, atol=1e-9)
    rows = rng.choice(9000, 700, replace=False)
    np.testing.assert_allclose(A.gather(rows).toarray(), B[rows], rtol=1e-14)
    np.testing.assert_allclose(A[rows[:50]], B[rows[:50]], rtol=1e-14)
    np.testing.assert_allclose(lazy.row_norms, eager.row_norms, rtol=1e-14)
    # the fused passes, full and mini-batch, see the winsorised rows
    def der(Z, r):
        return np.tanh(Z)

    np.testing.assert_allclose(A.gradient_sum(w, der), B.T @ np.tanh(B @ w), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(A.gradient_sum(w, der, rows=rows), B[rows].T @ np.tanh(B[rows] @ w),
                               rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_winsorised_blocks_left_unchanged_are_read_as_they_are_on_later_passes(dtype):
    """Each full pass gives the clipped copy's products, whether a block needed winsorising or not."""
    from skdp.bounds import BoundedDesign, bound_features, clip_features, clipped_row_norms

    rng = np.random.RandomState(1)
    X = (rng.randn(300, 4) * 0.2).astype(dtype)
    X[130:140] *= 40.0  # entries beyond the radius in a few blocks only
    r = 1.0
    lazy = bound_features(X, 2.5, True, None, 0.5, norms=clipped_row_norms(X, r), lazy=True, feature_clip=r)
    D = bound_features(clip_features(X.astype(np.float64), r)[0], 2.5, True, None, 0.5).X
    A = lazy.X
    A._block = 32
    w, v = rng.randn(5), rng.randn(300)
    for _ in range(3):  # the first pass records which blocks the winsorising left unchanged
        np.testing.assert_allclose(A @ w, D @ w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(A.T @ v, D.T @ v, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(A.gradient_sum(w, lambda Z, b: np.tanh(Z)), D.T @ np.tanh(D @ w),
                                   rtol=1e-12, atol=1e-12)
    assert A._unchanged == {(lo, min(lo + 32, 300)): lo != 128 for lo in range(0, 300, 32)}
    assert isinstance(A, BoundedDesign)


@pytest.mark.parametrize("solver", ["dp_gd", "obj_pert", "noisy_sgd"])
def test_float32_input_fits_as_the_float64_copy_of_its_values(solver):
    """float32 rows stay float32 in memory, but every product is computed in float64."""
    from skdp import DPLogisticRegression, DPRidge

    X = _rows(n=500).astype(np.float32)
    yc = (X[:, 0] > 0).astype(int)
    kw = dict(solver=solver, random_state=0, data_norm=2.0)
    for est, y in [(DPLogisticRegression(1.0, classes=[0, 1], **kw), yc),
                   (DPRidge(1.0, label_bound=3.0, **kw), X[:, 1].astype(float))]:
        a = est.fit(X, y).coef_.copy()
        b = est.fit(X.astype(np.float64), y).coef_
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["lazy", "float32", "winsorised", "array", "csr"])
@pytest.mark.parametrize("weighted", [False, True])
def test_mini_batch_gradients_equal_mean_gradient(kind, weighted):
    """``Problem.batch_gradient`` / ``batch_gradient_difference`` (one gather, one product per point) are
    ``mean_gradient`` on the rows / the difference of two of them, for a scalar loss."""
    import scipy.sparse as sp

    from skdp.penalties import L2Penalty
    from skdp.solvers import Problem

    rng = np.random.RandomState(4)
    X = _rows(n=800, d=5, dtype=np.float32 if kind == "float32" else np.float64)
    b = bound_features(sp.csr_matrix(X) if kind == "csr" else X, 2.0, True, None,
                       lazy=kind in ("lazy", "float32", "winsorised"),
                       feature_clip=1.0 if kind == "winsorised" else None)
    y = np.clip(b.X @ rng.randn(6) * 0.3 + 0.3 * rng.randn(800), -1, 1)
    weights = rng.rand(800) if weighted else None
    for loss, labels in [(SquaredLoss(), y), (LogisticLoss(), np.where(y > 0, 1.0, -1.0))]:
        problem = Problem(X=b.X, y=labels, norms=b.row_norms, loss=loss, penalty=L2Penalty(0.0), data_norm=2.0,
                          label_bound=1.0, coef_norm=3.0, clip_norm=0.3, sample_weight=weights)
        for size in (0, 1, 37):
            rows = np.sort(rng.choice(800, size, replace=False))
            w1, w0 = rng.randn(6), rng.randn(6)
            want = problem.mean_gradient(w1, rows=rows, n_total=30.0)
            np.testing.assert_allclose(problem.batch_gradient(w1, rows, 30.0), want, rtol=1e-12, atol=1e-15)
            g1, g0 = problem.mean_gradient_pair(w1, w0, rows, n_total=30.0)
            np.testing.assert_allclose(problem.batch_gradient_difference(w1, w0, rows, 30.0), g1 - g0,
                                       rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("solver", ["noisy_sgd", "dp_svrg", "dp_svrg_pp", "dp_srm", "dp_lssgd", "rrpsgd"])
def test_rows_gathered_ahead_give_the_same_fit(monkeypatch, solver):
    """The mini-batch rows gathered on the worker thread (`skdp.solvers._base.RowPrefetch`) are the rows a step
    would gather itself: the fit is bit-identical, every step takes its rows from the worker, and no worker is
    left running after the fit."""
    import threading

    import skdp.solvers._problem as base
    from skdp import DPLogisticRegression, DPRidge

    rng = np.random.RandomState(3)
    X = rng.randn(3000, 8) / 2.0
    y = X @ rng.randn(8) + 0.2 * rng.randn(3000)
    served = []
    get = base.RowPrefetch.get

    def counting_get(self, rows):
        out = get(self, rows)
        served.append(out is not None)
        return out

    def fits():
        kw = dict(solver=solver, data_norm=2.0, random_state=5)
        return [DPRidge(1.0, label_bound=4.0, **kw).fit(X, y).coef_,
                DPLogisticRegression(1.0, classes=[0, 1], **kw).fit(X, (y > 0).astype(int)).coef_]

    monkeypatch.setattr(base, "PREFETCH_MIN_BYTES", 1 << 62)
    direct = fits()
    monkeypatch.setattr(base, "PREFETCH_MIN_BYTES", 0)
    monkeypatch.setattr(base, "PREFETCH_BLOCK_BYTES", 3000)  # many blocks of a few steps each
    monkeypatch.setattr(base.RowPrefetch, "get", counting_get)
    monkeypatch.setattr(base, "cpus", lambda: 1)  # one CPU: no worker
    assert all(np.array_equal(a, b) for a, b in zip(direct, fits()))
    assert not served
    monkeypatch.setattr(base, "cpus", lambda: 2)
    ahead = fits()
    for a, b in zip(direct, ahead):
        np.testing.assert_array_equal(a, b)
    assert served and all(served)
    assert not [t for t in threading.enumerate() if t.name.startswith("skdp-rows")]


def test_row_prefetch_serves_only_the_registered_arrays():
    """A step's rows are looked up by the very array registered (a copy with the same values is not served,
    so a caller can never be handed rows it did not ask for), in blocks of whole steps."""
    from skdp.solvers._base import RowPrefetch

    source = np.arange(40.0).reshape(20, 2)
    table = np.arange(20.0)[:, None] * 10
    steps = [np.array([1, 5]), np.array([0, 2, 19]), np.array([], dtype=int), np.array([7])]
    prefetch = RowPrefetch(source, table)
    try:
        prefetch.add(steps)
        assert prefetch.get(steps[1].copy()) is None
        for rows in steps:
            got_source, got_table = prefetch.get(rows)
            np.testing.assert_array_equal(got_source, source[rows])
            np.testing.assert_array_equal(got_table, table[rows].T)
    finally:
        prefetch.close()


@pytest.mark.parametrize("weighted", [False, True])
def test_gram_split_over_two_threads_equals_the_direct_product(monkeypatch, weighted):
    """A narrow design's sufficient statistics, the halves of its row blocks summed on two threads, are
    ``[A, y]^T W [A, y]`` of the clipped array (to summation order), and the same bits on one CPU as on two."""
    import skdp.bounds as bounds

    rng = np.random.RandomState(8)
    X = _rows(n=700, d=6)
    b = bound_features(X, 2.0, True, None, lazy=True)
    y, w = rng.randn(700), (rng.rand(700) if weighted else None)
    A = np.column_stack([bound_features(X, 2.0, True, None).X, y])
    want = A.T @ (A * (1.0 if w is None else w[:, None]))
    monkeypatch.setattr(BoundedDesign, "_block", 64)  # 11 blocks: split in two
    grams = []
    for n_cpus in (1, 2):
        monkeypatch.setattr(bounds, "cpus", lambda: n_cpus)
        got = b.X.gram(weights=w, extra=y)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got, got.T)
        grams.append(got)
    np.testing.assert_array_equal(grams[0], grams[1])  # the same bits on one CPU as on two


def test_one_blas_thread_limit_is_set_and_restored_by_the_main_thread_only(monkeypatch):
    """The one-thread BLAS limit is process-wide and OpenBLAS may ignore changes made from other threads, so only
    the main thread sets it (once for nested contexts) and restores it; a context in another thread (a fit run
    in a thread) and a wide product leave BLAS as it is. With the real BLAS, the limit holds inside and is undone
    after."""
    import threading

    from threadpoolctl import threadpool_info

    import skdp._blas as blas

    def blas_threads():
        return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})

    before = blas_threads()
    with blas.blas_threads_for(10):
        assert blas_threads() in ([1], [])
    assert blas_threads() == before

    log = []

    class Limiter:
        def __init__(self):
            log.append("limit")

        def restore_original_limits(self):
            log.append("restore")

    class Controller:
        def limit(self, limits, user_api):
            assert (limits, user_api) == (1, "blas")
            return Limiter()

    monkeypatch.setattr(blas, "_controller", Controller())

    def in_a_thread():
        with blas.blas_threads_for(10):
            log.append("thread inside")

    with blas.blas_threads_for(10):
        with blas.blas_threads_for(10):
            worker = threading.Thread(target=in_a_thread)
            worker.start()
            worker.join(5)
        assert log == ["limit", "thread inside"]
    assert log == ["limit", "thread inside", "restore"]
    worker = threading.Thread(target=in_a_thread)  # another thread alone: no limit
    worker.start()
    worker.join(5)
    with blas.blas_threads_for(10 ** 6):  # a wide product: no limit
        pass
    assert log == ["limit", "thread inside", "restore", "thread inside"]
    in_a_thread()  # the main thread
    assert log == ["limit", "thread inside", "restore", "thread inside", "limit", "thread inside", "restore"]


def test_prefetch_is_not_used_for_several_targets_and_stops_when_a_fit_raises(monkeypatch):
    """A 2-D ``y`` (several regression targets) fits as without the worker, and a fit that raises mid-run leaves
    no worker thread behind, even while its exception (and so its suspended batch generator) is kept."""
    import threading

    import skdp.solvers._problem as base
    from skdp import DPRidge

    rng = np.random.RandomState(4)
    X = rng.randn(2000, 6) / 2.0
    Y = X @ rng.randn(6, 3) + 0.2 * rng.randn(2000, 3)
    kw = dict(data_norm=2.0, label_bound=4.0, random_state=2)
    monkeypatch.setattr(base, "cpus", lambda: 2)
    for solver in ("dp_svrg", "dp_srm", "dp_lssgd", "rrpsgd"):
        monkeypatch.setattr(base, "PREFETCH_MIN_BYTES", 1 << 62)
        want = DPRidge(1.0, solver=solver, **kw).fit(X, Y).coef_
        monkeypatch.setattr(base, "PREFETCH_MIN_BYTES", 0)
        np.testing.assert_array_equal(DPRidge(1.0, solver=solver, **kw).fit(X, Y).coef_, want)

    calls = []
    batch_sum = base.Problem.batch_sum

    def failing(self, *args):
        calls.append(1)
        if len(calls) == 10:
            raise RuntimeError("stop")
        return batch_sum(self, *args)

    monkeypatch.setattr(base.Problem, "batch_sum", failing)
    for solver in ("noisy_sgd", "dp_svrg", "dp_srm", "dp_lssgd"):
        calls.clear()
        with pytest.raises(RuntimeError, match="stop") as kept:
            DPRidge(1.0, solver=solver, **kw).fit(X, Y[:, 0])
        assert kept.value is not None
        assert not [t for t in threading.enumerate() if t.name.startswith("skdp-rows")], solver
