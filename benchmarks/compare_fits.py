"""Seeded fits of every public estimator x solver, saved and compared across code versions.

A refactor must leave every seeded fit unchanged: ``save`` fits, with
``random_state=0`` on small synthetic data, every public estimator of skdp
with every solver it accepts (the solver ids come from each estimator's
``_parameter_constraints["solver"]``, i.e. from the registry behind
:func:`skdp.list_solvers`; the multi-party estimator's from its
``StrOptions``):

* ``DPLogisticRegression``: binary (classes given, ``classes="auto"``,
  ``data_norm`` given and ``"auto"``, float32, CSR, ``sample_weight``,
  ``class_weight``) and 3 classes (multinomial; a solver without that loss
  refuses, which is recorded), plus the default solver with rare labels;
* ``DPRidge``: one and two targets, public and private ``label_bound`` /
  ``data_norm``, float32, CSR, ``sample_weight``;
* ``DPLasso`` (float32, CSR, ``sample_weight``), ``DPLinearSVC`` (binary and
  3 classes, one-vs-rest),
  ``DPSparseLinearRegression`` and ``DPSparseLogisticRegression`` (binary and
  3 classes, one-vs-rest) with every solver, ``sample_weight`` and
  ``class_weight``;
* ``DPStandardScaler`` and ``DPMinMaxScaler`` (public and private bounds,
  ``sample_weight`` where accepted), ``DPOneHotEncoder`` (categories
  ``"auto"`` and given);
* ``skdp.distributed.MultiPartyDPLogisticRegression`` (each solver, binary
  and 3 classes);
* the Dask path (``X`` as a ``dask.array``, synchronous scheduler) for the
  estimators and solvers that accept it, when dask imports;
* a few fits inside ``with skdp.PrivacyLedger(...)`` and with
  ``privacy_ledger=`` (distinct seeds; the last fit of each is refused, and
  each ledger's ``spent()`` and ``n_fits`` are recorded too).

For each fit it stores, under ``"<fit>|<attribute>"``: every public fitted
ndarray attribute ending in ``_`` (``coef_``, ``intercept_``, ``classes_``,
``mean_``, ... ; a list of arrays such as ``categories_`` as ``categories_[i]``;
object arrays as the ``repr`` of their items), ``noise_scale_``,
``privacy_spent_`` as ``[epsilon, delta]`` and ``repr(privacy_events_)`` as a
string array. A fit that raises is stored as ``"<fit>|ERR"`` holding the
string ``"ERR <type>: <message>"``, so errors are compared too. Warnings are
silenced.

``compare`` prints one line per key: ``identical``, ``within 1e-12``
(relative to the largest magnitude of the first array; same shape and dtype)
or ``DIFFERENT`` (strings: any inequality), and ``MISSING in A`` / ``MISSING
in B``; it exits with status 1 if any key is DIFFERENT or missing (``-q``
prints only those lines and the summary).

The skdp that is measured is the first one on ``sys.path``: the directory in
the environment variable ``SKDP_ROOT`` if set, else the ``PYTHONPATH``
entries, are put first explicitly (ahead of an editable install), and the
``skdp.__file__`` used is printed.

Usage::

    PYTHONPATH=/path/to/checkout_before python benchmarks/compare_fits.py save before.npz
    PYTHONPATH=/path/to/checkout_after python benchmarks/compare_fits.py save after.npz
    python benchmarks/compare_fits.py compare before.npz after.npz
"""

import os
import sys

_ROOTS = [os.environ["SKDP_ROOT"]] if os.environ.get("SKDP_ROOT") else [
    p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
for _p in reversed(_ROOTS):
    sys.path.insert(0, os.path.abspath(_p))

import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import skdp  # noqa: E402
from skdp import (DPLasso, DPLinearSVC, DPLogisticRegression, DPMinMaxScaler, DPOneHotEncoder,  # noqa: E402
                  DPRidge, DPSparseLinearRegression, DPSparseLogisticRegression, DPStandardScaler,
                  PrivacyLedger)
from skdp.distributed import MultiPartyDPLogisticRegression  # noqa: E402
from skdp.preprocessing import DPSimpleImputer  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

try:
    import dask
    import dask.array as da
except ImportError:  # pragma: no cover - dask is optional
    da = None

#: the solvers that need a public ball radius (their constraint is an l1 / lp ball)
_BALL = {r["solver"] for r in skdp.list_solvers() if r["constraint"] in ("l1", "lp", "l1|l2")}


def solvers_of(cls):
    """The solver ids ``cls`` accepts (``"auto"`` excluded), from its ``solver`` constraint."""
    constraint = cls._parameter_constraints["solver"][0]
    if hasattr(constraint, "solver_ids"):
        return constraint.solver_ids()
    return sorted(set(constraint.options) - {"auto"})


def _ball(name, **kw):
    if name in _BALL:
        kw.setdefault("coef_norm", 5.0)
    return kw


def _arrays(est):
    """The stored record of a fitted estimator (a pipeline: of each step, prefixed): name -> ndarray."""
    if hasattr(est, "steps"):
        return {f"{step}.{k}": v for step, part in est.steps for k, v in _arrays(part).items()}
    rec = {}
    for name, val in sorted(vars(est).items()):
        if not name.endswith("_") or name.startswith("_") or name in ("noise_scale_", "privacy_spent_",
                                                                        "privacy_events_"):
            continue
        if isinstance(val, np.ndarray):
            rec[name] = val
        elif isinstance(val, (list, tuple)) and val and all(isinstance(v, np.ndarray) for v in val):
            for i, v in enumerate(val):
                rec[f"{name}[{i}]"] = v
    for name, val in list(rec.items()):
        if val.dtype == object:
            rec[name] = np.array([repr(v) for v in val.ravel()]).reshape(val.shape)
    if hasattr(est, "noise_scale_"):
        rec["noise_scale_"] = np.asarray(est.noise_scale_, dtype=float)
    if hasattr(est, "privacy_spent_"):
        ps = est.privacy_spent_
        rec["privacy_spent_"] = np.array([float(ps.epsilon), float(ps.delta)])
    if hasattr(est, "privacy_events_"):
        rec["privacy_events_"] = np.array(repr(est.privacy_events_))
    return rec


def save(path):
    warnings.simplefilter("ignore")
    if da is not None:
        dask.config.set(scheduler="synchronous")
    t0 = time.perf_counter()
    rng = np.random.RandomState(1)
    n, d = 2000, 8
    X = rng.randn(n, d) / np.sqrt(d) * (1 + rng.rand(n, 1))
    w = rng.randn(d)
    yc = (X @ w + 0.3 * rng.randn(n) > 0).astype(int)
    y3 = np.where(rng.rand(n) < 0.4, 2, yc)
    y4 = y3.copy()
    y4[:3] = 7  # a rare label: not selected by classes="auto"
    yr = X @ w + 0.3 * rng.randn(n)
    Yr = np.column_stack([yr, X @ rng.randn(d) + 0.3 * rng.randn(n)])
    sw = rng.uniform(0.2, 1.0, n)
    # sparse designs: a 3-sparse truth, features in [-1, 1]
    Xs = rng.uniform(-1, 1, (n, 16))
    ws = np.zeros(16)
    ws[[0, 3, 7]] = [1.5, -1.0, 0.8]
    ysr = Xs @ ws + 0.2 * rng.randn(n)
    ysc = (Xs @ ws + 0.3 * rng.randn(n) > 0).astype(int)
    ys3 = np.where(Xs[:, 1] > 0.5, 2, ysc)
    Xcat = np.column_stack([rng.choice(["a", "b", "c", "z"], n, p=[0.5, 0.3, 0.199, 0.001]),
                            rng.choice(["x", "y"], n)])
    out = {}
    counts = {}

    def rec(key, est, Xf, yf=None, **fit_kw):
        assert not any(k.startswith(key + "|") for k in out), key
        counts[type(est).__name__] = counts.get(type(est).__name__, 0) + 1
        try:
            est.fit(Xf, yf, **fit_kw) if yf is not None else est.fit(Xf, **fit_kw)
        except Exception as e:  # noqa: BLE001 - errors are part of the record
            msg = f"ERR {type(e).__name__}: {e}"
            out[f"{key}|ERR"] = np.array(msg)
            print(key, msg[:160])
            return est
        for name, val in _arrays(est).items():
            out[f"{key}|{name}"] = val
        return est

    # --- DPLogisticRegression -----------------------------------------------------------------
    for s in solvers_of(DPLogisticRegression):
        kw = _ball(s, random_state=0, solver=s)
        rec(f"log/{s}", DPLogisticRegression(1.0, data_norm=1.5, classes=[0, 1], **kw), X, yc)
        rec(f"log_auto/{s}", DPLogisticRegression(1.0, **kw), X, yc)
        rec(f"log32/{s}", DPLogisticRegression(1.0, data_norm=1.5, classes=[0, 1], **kw), X.astype(np.float32), yc)
        rec(f"logsp/{s}", DPLogisticRegression(1.0, data_norm=1.5, classes=[0, 1], **kw), sp.csr_matrix(X), yc)
        rec(f"log_sw/{s}", DPLogisticRegression(1.0, data_norm=1.5, classes=[0, 1], **kw), X, yc, sample_weight=sw)
        rec(f"log_cw/{s}", DPLogisticRegression(1.0, data_norm=1.5, classes=[0, 1], class_weight={0: 1.0, 1: 0.5},
                                                **kw), X, yc)
        # 3 classes: multinomial where the solver has that loss, one-vs-rest otherwise
        rec(f"log3/{s}", DPLogisticRegression(2.0, data_norm=1.5, classes=[0, 1, 2], **kw), X, y3)
        rec(f"log3_auto/{s}", DPLogisticRegression(2.0, **kw), X, y4)
    rec("log/default", DPLogisticRegression(1.0, random_state=0), X, yc)
    rec("log/default_inactive", DPLogisticRegression(1.0, random_state=0), X, y4)
    rec("log/default_inactive_nofi", DPLogisticRegression(1.0, random_state=0, fit_intercept=False), X, y4)
    rec("log/default_is", DPLogisticRegression(1.0, random_state=0, intercept_scaling=0.3), X, yc)
    rec("log/default_cw_balanced", DPLogisticRegression(1.0, random_state=0, class_weight="balanced"), X, y3)
    rec("log/nonconvex", DPLogisticRegression(1.0, random_state=0, penalty="nonconvex", solver="dp_gd", alpha=0.1),
        X, yc)
    rec("log/pure", DPLogisticRegression(1.0, 0.0, data_norm=1.5, classes=[0, 1], random_state=0), X, yc)

    # --- DPRidge ------------------------------------------------------------------------------
    for s in solvers_of(DPRidge):
        kw = _ball(s, random_state=0, solver=s)
        pub = dict(data_norm=1.5, label_bound=4.0)
        rec(f"ridge/{s}", DPRidge(1.0, **pub, **kw), X, yr)
        rec(f"ridge32/{s}", DPRidge(1.0, **pub, **kw), X.astype(np.float32), yr)
        rec(f"ridgesp/{s}", DPRidge(1.0, **pub, **kw), sp.csr_matrix(X), yr)
        rec(f"ridge_sw/{s}", DPRidge(1.0, **pub, **kw), X, yr, sample_weight=sw)
        rec(f"ridge_auto/{s}", DPRidge(1.0, **kw), X, yr)
        rec(f"ridge_autonorm/{s}", DPRidge(1.0, label_bound=4.0, **kw), X, yr)
        rec(f"ridge_autolabel/{s}", DPRidge(1.0, data_norm=1.5, **kw), X, yr)
        rec(f"ridge2/{s}", DPRidge(1.0, data_norm=1.5, label_bound=[4.0, 4.0], **kw), X, Yr)
        rec(f"ridge2_auto/{s}", DPRidge(1.0, **kw), X, Yr)
    rec("ridge/default", DPRidge(1.0, random_state=0), X, yr)
    rec("ridge/default_small", DPRidge(1.0, random_state=0), X[:300], yr[:300])
    rec("ridge/nofi", DPRidge(1.0, random_state=0, fit_intercept=False, solver="dp_gd"), X, yr)
    rec("ridge/nonconvex", DPRidge(1.0, random_state=0, penalty="nonconvex", solver="dp_gd", alpha=0.1), X, yr)

    # --- DPLasso ------------------------------------------------------------------------------
    for s in solvers_of(DPLasso):
        rec(f"lasso/{s}", DPLasso(1.0, solver=s, random_state=0), X, yr)
        rec(f"lasso_pub/{s}", DPLasso(1.0, solver=s, coef_norm=5.0, label_bound=4.0, random_state=0), X, yr)
        rec(f"lasso_sw/{s}", DPLasso(1.0, solver=s, random_state=0), X, yr, sample_weight=sw)
        rec(f"lasso32/{s}", DPLasso(1.0, solver=s, random_state=0), X.astype(np.float32), yr)
        rec(f"lassosp/{s}", DPLasso(1.0, solver=s, random_state=0), sp.csr_matrix(X), yr)

    # --- DPLinearSVC --------------------------------------------------------------------------
    for s in solvers_of(DPLinearSVC):
        rec(f"svc/{s}", DPLinearSVC(1.0, solver=s, random_state=0), X, yc)
        rec(f"svc_pub/{s}", DPLinearSVC(1.0, solver=s, data_norm=1.5, classes=[0, 1], random_state=0), X, yc)
        rec(f"svc3/{s}", DPLinearSVC(2.0, solver=s, random_state=0), X, y3)
        rec(f"svc_sw/{s}", DPLinearSVC(1.0, solver=s, random_state=0), X, yc, sample_weight=sw)
        rec(f"svc_cw/{s}", DPLinearSVC(1.0, solver=s, classes=[0, 1], class_weight={0: 1.0, 1: 0.5},
                                       random_state=0), X, yc)
        rec(f"svc3_pub/{s}", DPLinearSVC(2.0, solver=s, data_norm=1.5, classes=[0, 1, 2], random_state=0), X, y3)

    # --- sparse estimators --------------------------------------------------------------------
    for s in solvers_of(DPSparseLinearRegression):
        kw = dict(n_nonzero_coefs=3, solver=s, random_state=0)
        rec(f"sparse_reg/{s}", DPSparseLinearRegression(1.0, **kw), Xs, ysr)
        rec(f"sparse_reg_pub/{s}", DPSparseLinearRegression(1.0, label_bound=5.0, clip_norm=4.0, **kw), Xs, ysr)
        rec(f"sparse_reg_sw/{s}", DPSparseLinearRegression(1.0, label_bound=5.0, **kw), Xs, ysr, sample_weight=sw)
    for s in solvers_of(DPSparseLogisticRegression):
        kw = dict(n_nonzero_coefs=3, solver=s, random_state=0)
        rec(f"sparse_log/{s}", DPSparseLogisticRegression(1.0, **kw), Xs, ysc)
        rec(f"sparse_log_pub/{s}", DPSparseLogisticRegression(1.0, classes=[0, 1], clip_norm=4.0, **kw), Xs, ysc)
        rec(f"sparse_log3/{s}", DPSparseLogisticRegression(2.0, **kw), Xs, ys3)
        rec(f"sparse_log_sw/{s}", DPSparseLogisticRegression(1.0, classes=[0, 1], **kw), Xs, ysc,
            sample_weight=sw)
        rec(f"sparse_log_cw/{s}", DPSparseLogisticRegression(1.0, classes=[0, 1], class_weight={0: 1.0, 1: 0.5},
                                                             **kw), Xs, ysc)
        rec(f"sparse_log3_pub/{s}", DPSparseLogisticRegression(2.0, classes=[0, 1, 2], **kw), Xs, ys3)

    # --- preprocessing ------------------------------------------------------------------------
    Xu = rng.uniform(0, 10, (n, 3))
    rec("std/auto", DPStandardScaler(1.0, random_state=0), Xu)
    rec("std/public", DPStandardScaler(1.0, bounds=(0, 10), random_state=0), Xu)
    rec("std/public_sw", DPStandardScaler(1.0, bounds=(0, 10), random_state=0), Xu, sample_weight=sw)
    rec("std/auto_sw", DPStandardScaler(1.0, random_state=0), Xu, sample_weight=sw)
    rec("std/clip_auto", DPStandardScaler(1.0, bounds=(0, 10), clip_norm="auto", random_state=0), Xu)
    rec("std/no_mean", DPStandardScaler(1.0, bounds=(0, 10), with_mean=False, random_state=0), Xu)
    rec("minmax/auto", DPMinMaxScaler(1.0, random_state=0), Xu)
    rec("minmax/public", DPMinMaxScaler(1.0, bounds=(0, 10), random_state=0), Xu)
    rec("minmax/public_range", DPMinMaxScaler(1.0, bounds=(0, 10), feature_range=(-1, 1), random_state=0), Xu)
    rec("onehot/auto", DPOneHotEncoder(epsilon=1.0, sparse_output=False, random_state=0), Xcat)
    rec("onehot/given", DPOneHotEncoder(categories=[["a", "b", "c", "z"], ["x", "y"]], random_state=0), Xcat)
    # missing values: the imputer's strategies, and NaN passed through the scalers
    Xnan = Xu.copy()
    Xnan[rng.rand(n, 3) < 0.1] = np.nan
    for strategy in ("mean", "median", "most_frequent", "constant"):
        kw = dict(fill_value=0.0) if strategy == "constant" else dict(bounds=(0, 10)) if strategy == "mean" else {}
        if strategy == "most_frequent":
            rec("impute/most_frequent", DPSimpleImputer(strategy, random_state=0), np.round(Xnan))
            continue
        rec(f"impute/{strategy}", DPSimpleImputer(strategy, random_state=0, **kw), Xnan)
    rec("impute/mean_public", DPSimpleImputer("mean", bounds=(0, 10), add_indicator=True, random_state=0), Xnan)
    rec("std/nan", DPStandardScaler(1.0, random_state=0), Xnan)
    rec("minmax/nan", DPMinMaxScaler(1.0, bounds=(0, 10), random_state=0), Xnan)
    # raw feature scales: the private feature-scaling histograms are released and the map applied
    Xraw = X * np.array([1.0, 1000.0, 1.0, 0.01, 1.0, 50.0, 1.0, 1.0])
    rec("log/feature_scaling", DPLogisticRegression(1000.0, random_state=0), Xraw, yc)
    rec("log/feature_scaling_cls", DPLogisticRegression(1000.0, classes=[0, 1], random_state=0), Xraw, y3 > 0)
    # a pipeline with a private scaler in front (its budget split by the planner)
    rec("pipe/std_log", make_pipeline(DPStandardScaler(0.5, random_state=0), DPLogisticRegression(0.5, random_state=1)),
        Xraw, yc)

    # --- multi-party --------------------------------------------------------------------------
    Xm = X / np.max(np.linalg.norm(X, axis=1))
    for s in solvers_of(MultiPartyDPLogisticRegression):
        rec(f"mpc/{s}", MultiPartyDPLogisticRegression(1.0, solver=s, n_parties=4, classes=[0, 1], random_state=0),
            Xm, yc)
        rec(f"mpc_auto/{s}", MultiPartyDPLogisticRegression(1.0, solver=s, n_parties=3, random_state=0), Xm, yc)
        rec(f"mpc3/{s}", MultiPartyDPLogisticRegression(2.0, solver=s, n_parties=4, classes=[0, 1, 2],
                                                        random_state=0), Xm, y3)
        rec(f"mpc_sw/{s}", MultiPartyDPLogisticRegression(1.0, solver=s, n_parties=2, classes=[0, 1],
                                                          random_state=0), Xm, yc, sample_weight=sw)

    # --- Dask ---------------------------------------------------------------------------------
    if da is not None:
        from skdp._dask import DASK_SOLVERS
        Xd, Xud, Xmd = (da.from_array(a, chunks=(500, a.shape[1])) for a in (X, Xu, Xm))
        for s in DASK_SOLVERS:
            if s in solvers_of(DPLogisticRegression):
                rec(f"dask_log/{s}", DPLogisticRegression(1.0, data_norm=1.5, classes=[0, 1], solver=s,
                                                          random_state=0), Xd, yc)
                rec(f"dask_log_auto/{s}", DPLogisticRegression(1.0, solver=s, random_state=0), Xd, yc)
                rec(f"dask_log3/{s}", DPLogisticRegression(2.0, solver=s, random_state=0), Xd, y4)
            if s in solvers_of(DPRidge):
                rec(f"dask_ridge/{s}", DPRidge(1.0, data_norm=1.5, label_bound=4.0, solver=s, random_state=0), Xd, yr)
                rec(f"dask_ridge_auto/{s}", DPRidge(1.0, solver=s, random_state=0), Xd, yr)
        rec("dask_std/auto", DPStandardScaler(1.0, random_state=0), Xud)
        rec("dask_std/public", DPStandardScaler(1.0, bounds=(0, 10), random_state=0), Xud)
        for s in solvers_of(MultiPartyDPLogisticRegression):
            rec(f"dask_mpc/{s}", MultiPartyDPLogisticRegression(1.0, solver=s, classes=[0, 1], random_state=0),
                Xmd, yc)

    # --- ledgers ------------------------------------------------------------------------------
    # distinct seeds: two fits with one seed share their noise, and a ledger refuses the second
    tmp = tempfile.TemporaryDirectory()
    ledger = PrivacyLedger(10.0, 1e-5, path=os.path.join(tmp.name, "ctx.jsonl"))
    with ledger:
        rec("ledger_ctx/log", DPLogisticRegression(0.5, data_norm=1.5, classes=[0, 1], random_state=0), X, yc)
        rec("ledger_ctx/ridge", DPRidge(0.5, random_state=1), X, yr)
        rec("ledger_ctx/std", DPStandardScaler(0.5, random_state=2), Xu)
        rec("ledger_ctx/sparse", DPSparseLinearRegression(0.5, n_nonzero_coefs=3, random_state=3), Xs, ysr)
        rec("ledger_ctx/log_again", DPLogisticRegression(0.5, random_state=0), X, yc)  # refused: same seed
    out["ledger_ctx|spent"] = np.array([ledger.spent().epsilon, ledger.spent().delta], dtype=float)
    out["ledger_ctx|n_fits"] = np.array(ledger.n_fits)
    ledger = PrivacyLedger(2.0, 1e-5, path=os.path.join(tmp.name, "arg.jsonl"))
    rec("ledger_arg/log", DPLogisticRegression(0.5, random_state=0), X, yc, privacy_ledger=ledger)
    rec("ledger_arg/lasso", DPLasso(0.5, random_state=1), X, yr, privacy_ledger=ledger)
    rec("ledger_arg/minmax", DPMinMaxScaler(0.5, random_state=2), Xu, privacy_ledger=ledger)
    rec("ledger_arg/mpc", MultiPartyDPLogisticRegression(0.5, classes=[0, 1], random_state=3), Xm, yc,
        privacy_ledger=ledger)
    rec("ledger_arg/svc", DPLinearSVC(3.0, random_state=4), X, yc, privacy_ledger=ledger)  # over the budget
    out["ledger_arg|spent"] = np.array([ledger.spent().epsilon, ledger.spent().delta], dtype=float)
    out["ledger_arg|n_fits"] = np.array(ledger.n_fits)
    tmp.cleanup()

    np.savez(path, **out)
    fits = sum(counts.values())
    errs = sum(k.endswith("|ERR") for k in out)
    print("skdp from", skdp.__file__)
    print(fits, "fits,", errs, "errors,", len(out), "keys saved to", path, f"in {time.perf_counter() - t0:.1f} s")
    for name, c in sorted(counts.items()):
        print(f"  {name:<32} {c}")
    print(f"  {'(of which on Dask input)':<32} {sum(k.startswith('dask_') for k in {k.split('|')[0] for k in out})}")


def _status(x, y):
    if x.dtype.kind == "U" and y.dtype.kind == "U" and x.shape == y.shape:  # any string length
        return ("identical", "") if np.array_equal(x, y) else ("DIFFERENT", "strings differ")
    if x.shape != y.shape or x.dtype != y.dtype:
        return "DIFFERENT", f"shape/dtype {x.shape} {x.dtype} vs {y.shape} {y.dtype}"
    if x.dtype.kind == "b" or x.dtype.kind in "iu":
        return ("identical", "") if np.array_equal(x, y) else ("DIFFERENT", "")
    if np.array_equal(x, y, equal_nan=True):
        return "identical", ""
    xf, yf = x.astype(float), y.astype(float)
    if not np.array_equal(np.isfinite(xf), np.isfinite(yf)) or not np.array_equal(xf[~np.isfinite(xf)],
                                                                                    yf[~np.isfinite(yf)]):
        return "DIFFERENT", "non-finite entries differ"
    fin = np.isfinite(xf)
    scale = max(float(np.max(np.abs(xf[fin]), initial=0.0)), 1e-300)
    rel = float(np.max(np.abs(xf[fin] - yf[fin]), initial=0.0)) / scale
    return ("within 1e-12" if rel <= 1e-12 else "DIFFERENT"), f"relative {rel:.2e}"


def compare(path_a, path_b, quiet=False):
    a, b = np.load(path_a), np.load(path_b)
    tally = {}
    for k in sorted(set(a.files) | set(b.files)):
        if k not in a.files or k not in b.files:
            flag, note = ("MISSING in A" if k not in a.files else "MISSING in B"), ""
        else:
            flag, note = _status(a[k], b[k])
            if flag == "DIFFERENT" and a[k].dtype.kind == "U":
                note += f": {str(a[k])[:100]!r} vs {str(b[k])[:100]!r}"
        tally[flag] = tally.get(flag, 0) + 1
        if not quiet or flag not in ("identical", "within 1e-12"):
            print(f"{k:<60} {flag:<13} {note}")
    fits_a = len({k.split("|")[0] for k in a.files})
    print(f"keys {len(a.files)} vs {len(b.files)}, fits and ledger records {fits_a}:",
          ", ".join(f"{v} {k}" for k, v in sorted(tally.items())))
    bad = sum(v for k, v in tally.items() if k == "DIFFERENT" or k.startswith("MISSING"))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "save":
        save(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], "-q" in sys.argv))
    else:
        raise SystemExit(__doc__)
