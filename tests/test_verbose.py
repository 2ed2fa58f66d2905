"""``verbose``: progress lines (one per epoch / phase, with the elapsed time) for long fits; silence at 0.

A fit prints progress only once its solver has run ``PROGRESS_AFTER`` seconds
(1 s); the tests lower that threshold instead of making fits slow, so nothing
here depends on timing.
"""

import numpy as np
import pytest

import skdp.solvers._problem as solver_base
from skdp.solvers import get_solver
from skdp import (DPLasso, DPLinearSVC, DPLogisticRegression, DPRidge, DPSparseLinearRegression,
                  DPSparseLogisticRegression)

ESTIMATORS = [
    (DPLogisticRegression, dict(max_iter=4), "clf"),
    (DPLogisticRegression, dict(solver="obj_pert"), "clf"),
    (DPLogisticRegression, dict(solver="noisy_sgd", max_iter=30), "clf"),
    (DPRidge, dict(), "reg"),
    (DPRidge, dict(solver="dp_gd", max_iter=4), "reg"),
    (DPLasso, dict(max_iter=4), "reg"),
    (DPLinearSVC, dict(max_iter=30), "clf"),
    (DPSparseLinearRegression, dict(n_nonzero_coefs=2), "reg"),
    (DPSparseLogisticRegression, dict(n_nonzero_coefs=2), "clf"),
]


def _data(kind):
    rng = np.random.RandomState(0)
    X = rng.randn(600, 4)
    y = X @ np.array([1.0, -0.5, 0.0, 0.2]) + 0.1 * rng.randn(600)
    return X, ((y > 0).astype(int) if kind == "clf" else y)


@pytest.fixture
def threshold(monkeypatch):
    """``threshold(after, interval)`` sets the progress threshold and the verbose=1 interval (seconds)."""

    def set_(after, interval=0.0):
        monkeypatch.setattr(solver_base, "PROGRESS_AFTER", after)
        monkeypatch.setattr(solver_base, "PROGRESS_INTERVAL", interval)

    return set_


def _progress_lines(out, name):
    return [line for line in out.splitlines() if line.startswith(f"[{name}]") and "elapsed" in line]


@pytest.mark.parametrize("cls, params, kind", ESTIMATORS, ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_verbose_zero_prints_nothing_even_for_a_long_fit(cls, params, kind, threshold, capsys):
    threshold(0.0)  # every fit counts as long
    X, y = _data(kind)
    cls(1.0, random_state=0, verbose=0, **params).fit(X, y)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("cls, params, kind", ESTIMATORS, ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_verbose_prints_progress_lines_for_a_long_fit(cls, params, kind, threshold, capsys):
    threshold(0.0)
    X, y = _data(kind)
    est = cls(1.0, random_state=0, verbose=1, **params).fit(X, y)
    lines = _progress_lines(capsys.readouterr().out, est.solver_)
    if get_solver(est.solver_).public_schedule:
        assert any(line.startswith(f"[{est.solver_}] epoch ") for line in lines), lines
        assert lines[-1].startswith(f"[{est.solver_}] done (")
    else:  # solved to a tolerance: how many passes it took depends on the data and is not printed
        assert [line.split(",")[0] for line in lines] == [f"[{est.solver_}] done"]
    elapsed = [float(line.rsplit("elapsed ", 1)[1].split(" s")[0]) for line in lines]
    assert elapsed == sorted(elapsed)


def test_short_fits_print_no_progress(threshold, capsys):
    threshold(1e9)  # no fit is long
    X, y = _data("clf")
    est = DPLogisticRegression(1.0, random_state=0, verbose=2, max_iter=4).fit(X, y)
    out = capsys.readouterr().out
    assert _progress_lines(out, est.solver_) == []
    assert out.startswith("[DPLogisticRegression] solver=dp_gd")  # the one summary line of a verbose fit


def test_verbose_one_is_rate_limited_and_two_prints_every_epoch(threshold, capsys):
    X, y = _data("clf")
    threshold(0.0, interval=1e9)
    DPLogisticRegression(1.0, random_state=0, verbose=1, max_iter=6).fit(X, y)
    assert [line for line in capsys.readouterr().out.splitlines() if "] epoch" in line] == []
    DPLogisticRegression(1.0, random_state=0, verbose=2, max_iter=6).fit(X, y)
    epochs = [line.split(",")[0] for line in capsys.readouterr().out.splitlines() if "] epoch" in line]
    assert epochs == [f"[dp_gd] epoch {k}" for k in range(1, 7)]  # one full-batch gradient per step
