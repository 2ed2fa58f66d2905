"""Dask (``skdp[dask]``): fits on Dask input and the multi-party fit with one party per row chunk.

The multi-party fit on Dask: each row chunk is a party; bit-identical to the in-process fit (``skdp[dask]``).

Fits on Dask input (``skdp[dask]``): the same release as in memory, X never gathered on the client.

A 2-worker ``LocalCluster`` runs the passes; each test fits the same rows in
memory and on Dask with one seed and checks the privacy events, the price and
the coefficients (equal up to the order of floating-point summation), and
that nothing the size of X came back to the client.
"""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import skdp._dask as skdp_dask  # noqa: E402
from skdp import (BudgetExceededError, DPLogisticRegression, DPRidge, DPStandardScaler, PrivacyLedger,  # noqa: E402
                  fit_diagnostics)
from skdp.distributed import MultiPartyDPLogisticRegression  # noqa: E402
from skdp.privacy.quantile import DEFAULT_NORM_GRID, WIDE_SIGNED_GRID, grid_counts  # noqa: E402

PARTY_CHUNKS = (700, 800, 500, 1000)


def _party_data():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (sum(PARTY_CHUNKS), 5)) / 2
    y = (X[:, 0] - X[:, 2] > 0).astype(int)
    return X, y


def _in_process(X, y, mechanism):
    labels = np.repeat(np.arange(len(PARTY_CHUNKS)), PARTY_CHUNKS)
    return MultiPartyDPLogisticRegression(1.0, solver=mechanism, classes=[0, 1], random_state=3).fit(
        X, y, parties=labels)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("mechanism", ["mpc_grad_pert", "mpc_output_pert"])
def test_two_worker_local_cluster_equals_in_process(client, mechanism):
    X, y = _party_data()
    ref = _in_process(X, y, mechanism)
    est = MultiPartyDPLogisticRegression(1.0, solver=mechanism, classes=[0, 1], random_state=3).fit(
        da.from_array(X, chunks=(PARTY_CHUNKS, 5)), y)
    assert est.backend_ == "dask" and est.party_sizes_.tolist() == list(PARTY_CHUNKS)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)
    assert est.privacy_events_ == ref.privacy_events_
    assert fit_diagnostics(est)["n_rows_clipped"] == fit_diagnostics(ref)["n_rows_clipped"] > 0
    assert not hasattr(est, "n_rows_clipped_") and est.noise_source_ == ref.noise_source_
    assert len(client.nthreads()) == 2  # asked of the scheduler (scheduler_info() may return a cached summary)


def test_local_scheduler_and_dask_labels():
    X, y = _party_data()
    ref = _in_process(X, y, "mpc_grad_pert")
    est = MultiPartyDPLogisticRegression(1.0, classes=[0, 1], random_state=3).fit(
        # column chunks are merged
        da.from_array(X, chunks=(PARTY_CHUNKS, 2)), da.from_array(y, chunks=(PARTY_CHUNKS,)))
    np.testing.assert_array_equal(est.coef_, ref.coef_)


def test_dask_input_errors():
    X, y = _party_data()
    dx = da.from_array(X, chunks=(PARTY_CHUNKS, 5))
    with pytest.raises(ValueError, match="chunks are the parties"):
        MultiPartyDPLogisticRegression(classes=[0, 1]).fit(dx, y, parties=np.zeros(len(y)))
    with pytest.raises(ValueError, match="one label per row"):
        MultiPartyDPLogisticRegression(classes=[0, 1]).fit(dx, y[:-1])
    bad = X.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MultiPartyDPLogisticRegression(classes=[0, 1]).fit(da.from_array(bad, chunks=(PARTY_CHUNKS, 5)), y)


def test_weighted_dask_fit_equals_in_process():
    """sample_weight is split with the row chunks (each party holds its records' weights)."""
    X, y = _party_data()
    w = np.random.RandomState(1).uniform(0, 2, len(y))
    labels = np.repeat(np.arange(len(PARTY_CHUNKS)), PARTY_CHUNKS)
    make = lambda: MultiPartyDPLogisticRegression(1.0, classes=[0, 1], random_state=3,  # noqa: E731
                                                  max_sample_weight=2.0)
    ref = make().fit(X, y, sample_weight=w, parties=labels)
    est = make().fit(da.from_array(X, chunks=(PARTY_CHUNKS, 5)), y, sample_weight=w)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    assert not np.array_equal(ref.coef_, make().fit(X, y, parties=labels).coef_)


CHUNKS = (1100, 900, 1500, 500)  # uneven row blocks
N, D = sum(CHUNKS), 6


@pytest.fixture
def passes(monkeypatch):
    """Every result a Dask fit computes on the client, in order (the reduced statistics of its passes)."""
    seen = []
    compute = skdp_dask._compute

    def spy(*graphs):
        out = compute(*graphs)
        seen.append(out)
        return out

    monkeypatch.setattr(skdp_dask, "_compute", spy)
    return seen


def _lengths(obj):
    """Every axis length of the arrays in a computed result."""
    if isinstance(obj, (tuple, list)):
        return set().union(*map(_lengths, obj)) if obj else set()
    if hasattr(obj, "labels"):
        return _lengths((obj.labels, obj.counts))
    return set(np.shape(obj))


def _data(seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(N, D) * np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0])
    y = (X[:, 0] - X[:, 2] + 0.5 * rng.randn(N) > 0).astype(int)
    y3 = np.digitize(X[:, 0] + 0.3 * rng.randn(N), [-0.5, 0.5])
    yr = X @ np.linspace(-1, 1, D) + 3.0 + rng.randn(N)
    return X, y, y3, yr


def _dask(a):
    return da.from_array(a, chunks=(CHUNKS,) + ((3,) if a.ndim == 2 else ()))  # column blocks are merged


def _assert_same_release(mem, dsk, attrs):
    assert dsk.privacy_events_ == mem.privacy_events_
    assert dsk.privacy_spent_ == mem.privacy_spent_ and dsk.accountant_ == mem.accountant_
    assert dsk.noise_source_ == mem.noise_source_
    np.testing.assert_array_equal(dsk.noise_scale_, mem.noise_scale_)
    for name in attrs:
        a, b = np.asarray(getattr(mem, name), dtype=float), np.asarray(getattr(dsk, name), dtype=float)
        assert a.shape == b.shape, name
        assert np.allclose(a, b, rtol=1e-9, atol=1e-12), (name, np.abs(a - b).max())
    assert fit_diagnostics(dsk).get("n_rows_clipped") == fit_diagnostics(mem).get("n_rows_clipped")


CASES = [
    # (estimator, target, expected passes as a function of the fitted model, fitted attributes compared)
    # the default path: dp_gd with data_norm="auto" and classes="auto" (fewer steps than its default 100); a Dask
    # fit makes no feature_scaling release (documented), so the in-memory fit is compared without it where its
    # budget would plan one
    (lambda: DPLogisticRegression(max_iter=20, random_state=3), "y", lambda m: 1 + m.n_iter_[0], ["coef_", "intercept_"]),
    (lambda: DPLogisticRegression(solver="output_pert", max_iter=15, random_state=3), "y", lambda m: 1 + m.n_iter_[0],
     ["coef_", "intercept_"]),
    (lambda: DPLogisticRegression(epsilon=5.0, max_iter=15, feature_scaling=None, random_state=3), "y3", lambda m: 1 + m.n_iter_[0],
     ["coef_", "intercept_"]),
    (lambda: DPLogisticRegression(data_norm=4.0, classes=[0, 1], max_iter=10, random_state=3), "y",
     lambda m: 1 + m.n_iter_[0], ["coef_", "intercept_"]),
    # dp_gd's private curvature release: one more pass (X^T X), then the steps
    (lambda: DPLogisticRegression(epsilon=5.0, max_iter=10, solver_options={"curvature": True}, feature_scaling=None,
                                  random_state=3),
     "y", lambda m: 2 + m.n_iter_[0], ["coef_", "intercept_"]),
    (lambda: DPRidge(random_state=3), "yr", lambda m: 3, ["coef_", "intercept_", "label_bound_"]),
    (lambda: DPRidge(solver="dp_gd", max_iter=15, random_state=3), "yr", lambda m: 2 + m.n_iter_[0],
     ["coef_", "intercept_", "label_bound_"]),
    (lambda: DPRidge(solver="output_pert", data_norm=10.0, label_bound=(-10, 15), max_iter=8, random_state=3),
     "yr", lambda m: m.n_iter_[0], ["coef_", "intercept_"]),
    (lambda: DPStandardScaler(random_state=3), None, lambda m: 2, ["mean_", "scale_", "bounds_"]),
    (lambda: DPStandardScaler(clip_norm="auto", random_state=3), None, lambda m: 3, ["mean_", "scale_"]),
]


@pytest.mark.parametrize("make, target, n_passes, attrs", CASES)
def test_dask_fit_equals_in_memory_fit(client, passes, make, target, n_passes, attrs):
    X, y, y3, yr = _data()
    t = {"y": y, "y3": y3, "yr": yr, None: None}[target]
    mem = make().fit(X, t)
    dsk = make().fit(_dask(X), None if t is None else _dask(t))
    _assert_same_release(mem, dsk, attrs)
    if hasattr(mem, "classes_"):
        np.testing.assert_array_equal(dsk.classes_, mem.classes_)
    for name in ("data_norm_", "solver_", "n_iter_", "n_features_in_"):
        np.testing.assert_equal(getattr(dsk, name, None), getattr(mem, name, None), err_msg=name)
    # every pass is one reduction whose result is a small statistic, never the rows
    assert len(passes) == n_passes(dsk)
    # (statistics have the sizes of a grid, p or p x p: no axis has a block's or X's length)
    assert not set().union(*map(_lengths, passes)) & (set(CHUNKS) | {N})
    assert len(client.nthreads()) == 2


def test_solver_sees_a_dask_design_and_numpy_labels_align(client, passes, monkeypatch):
    """The solver's problem holds the lazy design (never an ndarray); NumPy labels are split by X's blocks."""
    X, y, _, _ = _data(1)
    seen = []
    run = skdp_dask.DaskProblem.mean_gradient

    def spy(problem, coef, rows=None, n_total=None):
        seen.append(type(problem.X))
        return run(problem, coef, rows, n_total)

    monkeypatch.setattr(skdp_dask.DaskProblem, "mean_gradient", spy)
    est = DPLogisticRegression(max_iter=5, random_state=0).fit(_dask(X), y)
    assert seen == [skdp_dask.DaskDesign] * 5
    ref = DPLogisticRegression(max_iter=5, random_state=0).fit(X, y)
    assert np.allclose(est.coef_, ref.coef_, rtol=1e-9, atol=1e-12)


class _Frame:
    """The part of a Dask DataFrame the fit uses (schema and ``to_dask_array``), where pyarrow is missing."""

    __module__ = "dask.dataframe.dask_expr._collection"

    def __init__(self, df, chunks):
        self.columns, self._meta, self._array = df.columns, df.iloc[:0], da.from_array(df.to_numpy(), chunks)

    def to_dask_array(self, lengths=False):
        return self._array


def test_dask_dataframe_and_float32(client):
    pd = pytest.importorskip("pandas")
    X, _, _, yr = _data(2)
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(D)])
    try:
        import dask.dataframe as dd
        frames = [(dd.from_pandas(df, npartitions=3), dd.from_pandas(pd.Series(yr, name="t"), npartitions=2))]
    except ImportError:  # dask.dataframe needs pyarrow
        frames = []
    for ddf, ys in frames + [(_Frame(df, (CHUNKS, D)), _dask(yr))]:
        mem, dsk = DPRidge(random_state=1).fit(df, yr), DPRidge(random_state=1).fit(ddf, ys)
        assert list(dsk.feature_names_in_) == list(df.columns)
        _assert_same_release(mem, dsk, ["coef_", "intercept_"])
    X32 = X.astype(np.float32)
    mem = DPStandardScaler(random_state=1).fit(X32)
    dsk = DPStandardScaler(random_state=1).fit(_dask(X32))
    _assert_same_release(mem, dsk, ["mean_", "scale_"])


def test_a_given_bound_that_clips_most_rows_is_warned_as_in_memory(client):
    """The rows clipped to a given ``data_norm`` are counted by the solver's passes on the workers; the fit warns
    (one bit, the count only in fit_diagnostics) exactly when the in-memory fit on the same rows does."""
    X, y, _, _ = _data(2)
    for norm, warns in ((0.05, True), (100.0, False)):
        fits = []
        for rows in (X, _dask(X)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est = DPLogisticRegression(data_norm=norm, classes=[0, 1], random_state=0).fit(rows, y)
            fits.append((any("clips more than half of the rows" in str(w.message) for w in caught),
                         fit_diagnostics(est)["n_rows_clipped"]))
        assert fits[0] == fits[1] and fits[0][0] is warns, fits


def test_labels_are_validated_when_every_bound_is_public():
    """With public bounds a Dask ridge fit makes no first pass: the solver's passes refuse NaN and inf labels
    block by block, as the in-memory fit refuses them (no model of NaN, no silently clipped inf)."""
    X, _, _, yr = _data(2)
    for bad in (np.nan, np.inf):
        y = yr.copy()
        y[7] = bad
        for rows in (X, _dask(X)):
            with pytest.raises(ValueError, match="NaN|infinity"):
                DPRidge(data_norm=4.0, label_bound=(-10.0, 10.0), random_state=0).fit(rows, y)


def test_multi_party_labels_misaligned_with_the_chunks_are_refused_before_the_charge():
    X, y, _, _ = _data(2)
    ledger = PrivacyLedger(10.0, 1e-3)
    for labels in (y[:-1], None):
        with pytest.raises(ValueError, match="one label per row"):
            MultiPartyDPLogisticRegression(data_norm=4.0, classes=[0, 1], random_state=0).fit(
                _dask(X), labels, privacy_ledger=ledger)
    assert ledger.n_fits == 0


def test_ledger_is_charged_before_the_passes(client):
    X, y, _, _ = _data()
    ledger = PrivacyLedger(1.2, 1e-5)  # one fit at epsilon = 1 fits, two (about 1.45 together) do not
    est = DPLogisticRegression(max_iter=3, random_state=0).fit(_dask(X), _dask(y), privacy_ledger=ledger)
    assert ledger.spent().epsilon == pytest.approx(est.privacy_spent_.epsilon)
    with pytest.raises(BudgetExceededError):
        DPLogisticRegression(max_iter=3, random_state=1).fit(_dask(X), _dask(y), privacy_ledger=ledger)


def test_unsupported_paths_are_refused_before_any_pass(passes):
    X, y, _, yr = _data()
    dX = _dask(X)
    for est, t, match in [
        (DPLogisticRegression(solver="noisy_sgd"), y, "does not support Dask input"),
        (DPLogisticRegression(solver="obj_pert"), y, "does not support Dask input"),
        (DPRidge(solver="dp_svrg"), yr, "does not support Dask input"),
        (DPLogisticRegression(data_norm=None), y, "data_norm=None"),
        (DPLogisticRegression(classes=None), y, "classes=None"),
        (DPRidge(label_bound=None), yr, "label_bound=None"),
        (DPStandardScaler(bounds=None), None, "bounds=None"),
        (DPLogisticRegression(), y[:-1], "one label per row"),
        (DPRidge(), None, "y is required"),
    ]:
        with pytest.raises(ValueError, match=match):
            est.fit(dX, t)
    w = np.ones(X.shape[0])
    for est, t, kw, match in [
        (DPLogisticRegression(), y, {"sample_weight": w}, "sample_weight"),
        (DPLogisticRegression(class_weight={0: 2.0}), y, {}, "class_weight"),
        (DPRidge(), yr, {"sample_weight": w}, "sample_weight"),
        (DPRidge(), np.column_stack([yr, yr]), {}, "one target"),
        (DPStandardScaler(), None, {"sample_weight": w}, "sample_weight"),
    ]:
        with pytest.raises(ValueError, match=match):
            est.fit(dX, t, **kw)
    assert passes == []


def test_bad_values_raise_on_the_workers():
    X, y, _, yr = _data()
    bad = X.copy()
    bad[1500, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPLogisticRegression().fit(_dask(bad), y)
    with pytest.raises(ValueError, match="NaN"):
        DPRidge(data_norm=5.0, label_bound=10.0).fit(_dask(bad), yr)
    with pytest.raises(ValueError, match="Unknown label type"):
        DPLogisticRegression().fit(_dask(X), yr)


def test_counts_of_blocks_add_up_to_the_counts_of_the_whole():
    """The statistic the bound mechanisms read is a sum over rows (what makes the Dask path exact)."""
    rng = np.random.RandomState(0)
    v, X = rng.lognormal(size=1000), rng.standard_cauchy((1000, 3))
    assert np.array_equal(grid_counts(v[:300], DEFAULT_NORM_GRID) + grid_counts(v[300:], DEFAULT_NORM_GRID),
                          grid_counts(v, DEFAULT_NORM_GRID))
    parts = grid_counts(X[:10], WIDE_SIGNED_GRID, "left") + grid_counts(X[10:], WIDE_SIGNED_GRID, "left")
    assert np.array_equal(parts, grid_counts(X, WIDE_SIGNED_GRID, "left"))
    assert parts.shape == (3, WIDE_SIGNED_GRID.size) and parts[:, -1].max() <= 1000


def test_core_imports_and_fits_without_dask():
    code = ("import sys; sys.modules['dask'] = None\n"
            "import numpy as np, skdp\n"
            "X = np.random.RandomState(0).randn(500, 3); y = (X[:, 0] > 0).astype(int)\n"
            "skdp.DPLogisticRegression(classes=[0, 1], data_norm=3.0, random_state=0).fit(X, y)\n"
            "assert sys.modules['dask'] is None\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
