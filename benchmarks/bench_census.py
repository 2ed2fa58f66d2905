"""Mixed-type DataFrames end to end: the census-like table through a private ColumnTransformer (issue 33).

Data: :func:`skdp.datasets.make_census_like` (generated, no download), 20,000
training rows and 10,000 test rows; 5 numeric columns with the public bounds
of ``CENSUS_LIKE_BOUNDS``, 8 string columns. Pipelines:

* ``dp``: ``DPStandardScaler(bounds=<public bounds>)`` on the numbers,
  ``DPOneHotEncoder()`` (private category selection) on the strings, then
  ``DPLogisticRegression()``; one budget by ``set_pipeline_budget(epsilon,
  delta, n_samples=..., feature_names=...)``;
* ``given``: the same with sklearn's ``OneHotEncoder(categories=<public
  lists>)`` (learns nothing, costs nothing);
* ``dp_given``: the same with ``DPOneHotEncoder(categories=<public lists>)``;
* ``sklearn``: ``StandardScaler`` + ``OneHotEncoder(handle_unknown="ignore")``
  + ``LogisticRegression(max_iter=1000)``.

For each: the reported ``pipeline_privacy_spent`` (epsilon at the pipeline's
delta), the price of the fitted steps' ``privacy_events_`` recomputed with
``skdp.privacy.price``, the mean test accuracy over ``--fits`` fits, and the
median fit time (``set_pipeline_budget`` timed apart: its median, and its first call, before the
planning cache of ``skdp._utils.width_free_events`` holds the verdicts). Then ``DPGridSearchCV``
(``cv=3``) over the ``dp`` pipeline, and (``--sweep``) the accuracy of the
``dp`` pipeline at several epsilons.

    python benchmarks/bench_census.py                # 10 fits each (about a minute)
    python benchmarks/bench_census.py --fits 3 --sweep
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skdp import DPLogisticRegression, DPStandardScaler, pipeline_privacy_spent, set_pipeline_budget
from skdp.datasets import CENSUS_LIKE_BOUNDS, census_like_categories, make_census_like
from skdp.model_selection import DPGridSearchCV
from skdp.preprocessing import DPOneHotEncoder
from skdp.privacy import price

DELTA = 1e-6
N_TRAIN, N_TEST = 20000, 10000


def census_data(seed=0):
    """``(X_train, y_train, X_test, y_test, numeric columns, string columns)`` of the census-like table."""
    X, y = make_census_like(N_TRAIN + N_TEST, random_state=seed)
    num = list(CENSUS_LIKE_BOUNDS)
    cat = [c for c in X.columns if c not in num]
    return X.iloc[:N_TRAIN], y.iloc[:N_TRAIN], X.iloc[N_TRAIN:], y.iloc[N_TRAIN:], num, cat


def public_bounds(num):
    """Per-column ``(lower, upper)`` arrays from the published bounds (never from the data)."""
    return (np.array([CENSUS_LIKE_BOUNDS[c][0] for c in num], dtype=float),
            np.array([CENSUS_LIKE_BOUNDS[c][1] for c in num], dtype=float))


def make(kind, num, cat):
    """One of the pipelines of the module docstring (unfitted, no budget set)."""
    given = [census_like_categories()[c] for c in cat]
    if kind == "sklearn":
        return make_pipeline(make_column_transformer((StandardScaler(), num),
                                                     (OneHotEncoder(handle_unknown="ignore"), cat)),
                             LogisticRegression(max_iter=1000))
    encoder = {"dp": DPOneHotEncoder(), "given": OneHotEncoder(categories=given, handle_unknown="ignore"),
               "dp_given": DPOneHotEncoder(categories=given)}[kind]
    return make_pipeline(make_column_transformer((DPStandardScaler(bounds=public_bounds(num)), num),
                                                 (encoder, cat)),
                         DPLogisticRegression())


def fitted_dp_steps(pipe):
    """The fitted DP steps of a census pipeline (the ColumnTransformer's clones, then the model)."""
    ct = pipe[0]
    return [t for t in ct.named_transformers_.values() if hasattr(t, "privacy_events_")] + [pipe[-1]]


def run_kind(kind, data, epsilon, fits):
    """Mean accuracy, reported and recomputed epsilon, budget and fit times of ``fits`` fits."""
    X, y, Xt, yt, num, cat = data
    accs, times, budget_times, reported, recomputed = [], [], [], [], []
    for _ in range(fits):
        pipe = make(kind, num, cat)
        if kind != "sklearn":
            t0 = time.perf_counter()
            set_pipeline_budget(pipe, epsilon, DELTA, n_samples=len(X), feature_names=list(X.columns))
            budget_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            pipe.fit(X, y)
        times.append(time.perf_counter() - t0)
        accs.append(pipe.score(Xt, yt))
        if kind != "sklearn":
            spent = pipeline_privacy_spent(pipe)
            reported.append(spent.epsilon)
            events = [ev for s in fitted_dp_steps(pipe) for ev in s.privacy_events_]
            recomputed.append(price(events, spent.delta).budget.epsilon)
    return dict(kind=kind, acc=float(np.mean(accs)), acc_sd=float(np.std(accs)), fit_s=float(np.median(times)),
                budget_s=float(np.median(budget_times)) if budget_times else float("nan"),
                budget_first_s=budget_times[0] if budget_times else float("nan"),
                eps=max(reported) if reported else float("nan"),
                eps_min=min(reported) if reported else float("nan"),
                eps_recomputed=max(recomputed) if recomputed else float("nan"))


def run_search(data, epsilon, seed=0):
    """DPGridSearchCV (cv=3) over the ``dp`` pipeline: its spent budget, best alpha, test accuracy, time."""
    X, y, Xt, yt, num, cat = data
    search = DPGridSearchCV(make("dp", num, cat), {"dplogisticregression__alpha": [1e-4, 1e-3, 1e-2]},
                            epsilon=epsilon, delta=DELTA, cv=3, random_state=seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, y)
    return dict(spent=search.privacy_spent_, best=search.best_params_, acc=search.score(Xt, yt),
                fit_s=time.perf_counter() - t0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=10)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--sweep", action="store_true", help="accuracy of the dp pipeline at several epsilons")
    args = parser.parse_args()
    data = census_data()
    print(f"census-like: {N_TRAIN} training rows, {N_TEST} test rows; epsilon={args.epsilon}, delta={DELTA}, "
          f"{args.fits} fits each")
    print(f"{'pipeline':<10} {'accuracy':>9} {'sd':>7} {'reported eps':>13} {'recomputed':>11} "
          f"{'fit s':>7} {'budget s':>9} {'first':>7}")
    rows = [run_kind(k, data, args.epsilon, args.fits) for k in ("sklearn", "dp", "given", "dp_given")]
    for r in rows:
        print(f"{r['kind']:<10} {r['acc']:>9.4f} {r['acc_sd']:>7.4f} {r['eps']:>13.6f} {r['eps_recomputed']:>11.6f} "
              f"{r['fit_s']:>7.3f} {r['budget_s']:>9.3f} {r['budget_first_s']:>7.3f}")
    sk = rows[0]
    for r in rows[1:]:
        print(f"{r['kind']}: accuracy {r['acc'] - sk['acc']:+.4f} against sklearn, fit time "
              f"{r['fit_s'] / sk['fit_s']:.2f}x sklearn's (with a first, uncached set_pipeline_budget "
              f"{(r['fit_s'] + r['budget_first_s']) / sk['fit_s']:.2f}x); reported epsilon in "
              f"[{r['eps_min']:.6f}, {r['eps']:.6f}]")
    s = run_search(data, args.epsilon)
    print(f"DPGridSearchCV(cv=3, epsilon={args.epsilon}): spent {s['spent']}, best {s['best']}, test accuracy "
          f"{s['acc']:.4f}, {s['fit_s']:.2f} s")
    if args.sweep:
        print(f"{'epsilon':>8} {'dp accuracy':>12}")
        for eps in (0.1, 0.3, 1.0, 3.0, 10.0):
            r = run_kind("dp", data, eps, args.fits)
            print(f"{eps:>8g} {r['acc']:>12.4f}")


if __name__ == "__main__":
    main()
