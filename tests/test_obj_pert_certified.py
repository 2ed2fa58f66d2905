"""Objective perturbation releases only a certified minimiser (dense and CSR input)."""

import numpy as np
import pytest
from scipy import sparse

from skdp import DPLogisticRegression, DPSparseLinearRegression, DPSparseLogisticRegression, fit_diagnostics
from skdp.solvers import perturbation


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 5) * (rng.rand(300, 5) < 0.5)  # half zeros: a genuinely sparse design
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.randn(300) > 0).astype(int)
    y3 = np.digitize(X[:, 0] + 0.3 * rng.randn(300), [-0.3, 0.3])
    return X, y, y3


def _obj_pert(**kw):
    p = dict(solver="obj_pert", epsilon=1.0, data_norm=3.0, classes=[0, 1], random_state=0, alpha=0.01)
    p.update(kw)
    return DPLogisticRegression(**p)


def _cripple_optimiser(monkeypatch):
    """Stop L-BFGS after one iteration and allow no Newton step: the point is far from the minimiser."""
    real = perturbation.optimize.minimize

    def one_step(*a, **k):
        k["options"] = dict(k.get("options", {}), maxiter=1)
        return real(*a, **k)

    monkeypatch.setattr(perturbation.optimize, "minimize", one_step)
    monkeypatch.setattr(perturbation, "NEWTON_STEPS", 0)


def test_forced_early_stop_is_refused_not_released(data, monkeypatch):
    # The old code only warned (RuntimeWarning) and released the inexact point; this test failed there.
    X, y, _ = data
    _cripple_optimiser(monkeypatch)
    est = _obj_pert()
    with pytest.raises(RuntimeError, match="could not certify"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")


def test_two_stage_inherits_the_certificate(monkeypatch):
    rng = np.random.RandomState(1)
    X = rng.uniform(-1, 1, size=(400, 10))
    y = X[:, 0] - X[:, 1] + 0.1 * rng.randn(400)
    est = DPSparseLinearRegression(solver="two_stage", epsilon=2.0, label_bound=3.0, n_nonzero_coefs=2,
                                   random_state=0)
    ok = est.fit(X, y)
    assert "stage2_kkt_residual" not in ok.solver_info_
    assert fit_diagnostics(ok)["stage2_kkt_residual"] <= perturbation.CERTIFICATE_TOL * 10
    monkeypatch.setattr(perturbation, "_certify", lambda resid, lin: (_ for _ in ()).throw(
        RuntimeError("obj_pert could not certify")))
    with pytest.raises(RuntimeError, match="could not certify"):
        DPSparseLinearRegression(solver="two_stage", epsilon=2.0, label_bound=3.0, n_nonzero_coefs=2).fit(X, y)


@pytest.mark.parametrize("multiclass", [False, True])
def test_csr_input_gives_the_dense_minimiser(data, multiclass):
    X, y, y3 = data
    target, classes = (y3, [0, 1, 2]) if multiclass else (y, [0, 1])
    dense = _obj_pert(classes=classes).fit(X, target)
    csr = _obj_pert(classes=classes).fit(sparse.csr_matrix(X), target)
    np.testing.assert_allclose(csr.coef_, dense.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(csr.intercept_, dense.intercept_, rtol=1e-6, atol=1e-9)
    assert "kkt_residual" not in csr.solver_info_
    assert fit_diagnostics(csr)["kkt_residual"] <= perturbation.CERTIFICATE_TOL


def test_csr_newton_polish_certifies(data, monkeypatch):
    """L-BFGS stopped early, Newton steps allowed: the sparse Hessian path must finish the job."""
    X, y, _ = data
    reference = _obj_pert().fit(X, y)
    real = perturbation.optimize.minimize

    def one_step(*a, **k):
        k["options"] = dict(k.get("options", {}), maxiter=1)
        return real(*a, **k)

    monkeypatch.setattr(perturbation.optimize, "minimize", one_step)
    calls = []
    real_hessian = perturbation._hessian
    monkeypatch.setattr(perturbation, "_hessian", lambda X, c, lam: calls.append(sparse.issparse(X))
                        or real_hessian(X, c, lam))
    polished = _obj_pert().fit(sparse.csr_matrix(X), y)
    assert calls and all(calls)  # the polish ran, on the sparse design
    np.testing.assert_allclose(polished.coef_, reference.coef_, rtol=1e-6, atol=1e-9)


def test_sparse_logistic_two_stage_has_no_residual_attribute():
    rng = np.random.RandomState(2)
    X = rng.uniform(-1, 1, size=(400, 8))
    y = (X[:, 0] > 0).astype(int)
    est = DPSparseLogisticRegression(epsilon=2.0, n_nonzero_coefs=2, classes=[0, 1], random_state=0).fit(X, y)
    assert not [k for k in est.solver_info_ if "residual" in k]
