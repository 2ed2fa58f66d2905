"""The multi-party fit on Dask: each row chunk is a party; bit-identical to the in-process fit (``skdp[dask]``)."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from skdp import fit_diagnostics  # noqa: E402
from skdp.distributed import MultiPartyDPLogisticRegression  # noqa: E402

CHUNKS = (700, 800, 500, 1000)


def _data():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (sum(CHUNKS), 5)) / 2
    y = (X[:, 0] - X[:, 2] > 0).astype(int)
    return X, y


def _in_process(X, y, mechanism):
    labels = np.repeat(np.arange(len(CHUNKS)), CHUNKS)
    return MultiPartyDPLogisticRegression(1.0, solver=mechanism, classes=[0, 1], random_state=3).fit(
        X, y, parties=labels)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("mechanism", ["mpc_grad_pert", "mpc_output_pert"])
def test_two_worker_local_cluster_equals_in_process(client, mechanism):
    X, y = _data()
    ref = _in_process(X, y, mechanism)
    est = MultiPartyDPLogisticRegression(1.0, solver=mechanism, classes=[0, 1], random_state=3).fit(
        da.from_array(X, chunks=(CHUNKS, 5)), y)
    assert est.backend_ == "dask" and est.party_sizes_.tolist() == list(CHUNKS)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)
    assert est.privacy_events_ == ref.privacy_events_
    assert fit_diagnostics(est)["n_rows_clipped"] == fit_diagnostics(ref)["n_rows_clipped"] > 0
    assert not hasattr(est, "n_rows_clipped_") and est.noise_source_ == ref.noise_source_
    assert len(client.nthreads()) == 2  # asked of the scheduler (scheduler_info() may return a cached summary)


def test_local_scheduler_and_dask_labels():
    X, y = _data()
    ref = _in_process(X, y, "mpc_grad_pert")
    est = MultiPartyDPLogisticRegression(1.0, classes=[0, 1], random_state=3).fit(
        da.from_array(X, chunks=(CHUNKS, 2)), da.from_array(y, chunks=(CHUNKS,)))  # column chunks are merged
    np.testing.assert_array_equal(est.coef_, ref.coef_)


def test_dask_input_errors():
    X, y = _data()
    dx = da.from_array(X, chunks=(CHUNKS, 5))
    with pytest.raises(ValueError, match="chunks are the parties"):
        MultiPartyDPLogisticRegression(classes=[0, 1]).fit(dx, y, parties=np.zeros(len(y)))
    with pytest.raises(ValueError, match="one label per row"):
        MultiPartyDPLogisticRegression(classes=[0, 1]).fit(dx, y[:-1])
    bad = X.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MultiPartyDPLogisticRegression(classes=[0, 1]).fit(da.from_array(bad, chunks=(CHUNKS, 5)), y)


def test_weighted_dask_fit_equals_in_process():
    """sample_weight is split with the row chunks (each party holds its records' weights)."""
    X, y = _data()
    w = np.random.RandomState(1).uniform(0, 2, len(y))
    labels = np.repeat(np.arange(len(CHUNKS)), CHUNKS)
    make = lambda: MultiPartyDPLogisticRegression(1.0, classes=[0, 1], random_state=3,  # noqa: E731
                                                  max_sample_weight=2.0)
    ref = make().fit(X, y, sample_weight=w, parties=labels)
    est = make().fit(da.from_array(X, chunks=(CHUNKS, 5)), y, sample_weight=w)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    assert not np.array_equal(ref.coef_, make().fit(X, y, parties=labels).coef_)
