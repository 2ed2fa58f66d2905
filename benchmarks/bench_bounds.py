"""Private bounds where the data sit between grid points, and heavy-tailed labels (issue 33, item 4).

Two tables:

* ``concentrated``: rows whose norms are uniform on ``[2.28, 3.29]`` (20,000 rows,
  the issue's design), then on ``[a, 1.3 a]`` (2,000 rows) for ``a`` at
  several offsets from the points of the public norm grid
  (``skdp.privacy.quantile.DEFAULT_NORM_GRID``, ratio 1.47), 20 fits of the
  default ``DPLogisticRegression(epsilon=1)`` each: the range of
  ``data_norm_`` over the median row norm, and how many fits predict a
  single class.
* ``heavy``: a synthetic regression with heavy-tailed labels (20,000
  training rows, 10 standard normal features; lognormal labels
  ``exp(0.4 x.w + 0.8 e)``, and negative-binomial counts with mean
  ``exp(0.5 + 0.3 x.w)``), default ``DPRidge`` at several epsilons against
  sklearn's ``Ridge()`` on 10,000 test rows (mean test R^2 of 5 fits), with
  the mean selected label range.

    python benchmarks/bench_bounds.py                 # both tables (about a minute)
    python benchmarks/bench_bounds.py heavy --seeds 3
"""

import argparse
import warnings

import numpy as np
from sklearn.linear_model import Ridge

import skdp
from skdp.bounds import row_norms
from skdp.exceptions import PrivacyLeakWarning
from skdp.privacy.quantile import DEFAULT_NORM_GRID

#: offsets of ``a`` from a grid point, as a fraction of the grid's log-ratio (0: on a point)
OFFSETS = (0.0, 0.25, 0.5, 0.75)


def concentrated_design(a, n=2000, d=5, seed=0, ratio=1.3):
    """Rows with norms uniform on ``[a, ratio a]`` (random directions) and labels of a noisy linear rule."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    X *= (rng.uniform(a, ratio * a, n) / np.linalg.norm(X, axis=1))[:, None]
    y = (X @ rng.randn(d) + 0.3 * a * rng.randn(n) > 0).astype(int)
    return X, y


def concentrated(seeds=20, epsilon=1.0):
    step = np.log(DEFAULT_NORM_GRID[1] / DEFAULT_NORM_GRID[0])
    print(f"| a | median norm | data_norm_ / median (min, max) | single-class fits (of {seeds}) |")
    print("|---|---|---|---|")
    # the design (min-max scaled numbers and one-hot columns: norms in [2.28, 3.29]) at n = 20,000, then
    # n = 2,000 with norms on [a, 1.3 a] at several offsets from three grid points
    designs = [(2.28, 20_000, 3.29 / 2.28)] + [(base * np.exp(off * step), 2000, 1.3) for base in (
        DEFAULT_NORM_GRID[12], DEFAULT_NORM_GRID[20], DEFAULT_NORM_GRID[27]) for off in OFFSETS]
    for a, n, ratio in designs:
        X, y = concentrated_design(a, n=n, ratio=ratio)
        med = np.median(row_norms(X))
        ratios, single = [], 0
        for s in range(seeds):
            m = skdp.DPLogisticRegression(epsilon=epsilon, random_state=s).fit(X, y)
            ratios.append(m.data_norm_ / med)
            single += np.unique(m.predict(X)).size < 2
        print(f"| {a:.4g} (n = {n}) | {med:.4g} | {min(ratios):.3g}, {max(ratios):.3g} | {single} |", flush=True)


def heavy_data(kind, seed, n=20_000, n_test=10_000, d=10):
    rng = np.random.RandomState(seed)
    X = rng.randn(n + n_test, d)
    w = rng.randn(d) / np.sqrt(d)
    if kind == "lognormal":
        y = np.exp(0.4 * (X @ w) + 0.8 * rng.randn(n + n_test))
    else:  # negative binomial counts, dispersion 0.5 (variance mu + 2 mu^2)
        mu = np.exp(0.5 + 0.3 * (X @ w) * np.sqrt(d))
        y = rng.negative_binomial(0.5, 0.5 / (0.5 + mu)).astype(float)
    return X[:n], X[n:], y[:n], y[n:]


def heavy(seeds=5, epsilons=(1.0, 10.0, 100.0, 1e4)):
    print("| labels | sklearn Ridge | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " | label range at the largest ε |")
    print("|---|---|" + "---|" * len(epsilons) + "---|")
    for kind in ("lognormal", "negative binomial"):
        ref, cells, ranges = [], [], []
        for e in epsilons:
            scores = []
            for s in range(seeds):
                Xtr, Xte, ytr, yte = heavy_data(kind, s)
                if e == epsilons[0]:
                    ref.append(Ridge().fit(Xtr, ytr).score(Xte, yte))
                with warnings.catch_warnings():
                    warnings.simplefilter("error", PrivacyLeakWarning)
                    m = skdp.DPRidge(epsilon=e, random_state=s).fit(Xtr, ytr)
                scores.append(m.score(Xte, yte))
                if e == epsilons[-1]:
                    ranges.append((*m.label_bound_, np.quantile(ytr, 0.999)))
            cells.append(f"{np.mean(scores):.4f}")
        lo, hi, q = np.mean(ranges, axis=0)
        print(f"| {kind} | {np.mean(ref):.4f} | " + " | ".join(cells)
              + f" | [{lo:.3g}, {hi:.3g}] (0.999-quantile {q:.3g}) |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="*", default=["concentrated", "heavy"])
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args()
    for name in args.tables:
        fn = {"concentrated": concentrated, "heavy": heavy}[name]
        fn() if args.seeds is None else fn(args.seeds)
        print()


if __name__ == "__main__":
    main()
