"""What a drop-in user gets: every estimator at its defaults (only ``epsilon`` given) vs sklearn.

Protocol (issue "accurate and private by default"): 70/30 splits, a non-private
``StandardScaler`` fitted on the training split for the real datasets, the
synthetic design as generated; ``--seeds`` seeds (default 20); mean test score
and its standard error. The synthetic regression gets the public label range
``(-4, 4)`` (its labels are about N(0, 1.1)); everything else is at defaults.
A fit that emits ``PrivacyLeakWarning`` or reports more than it was given is
an error. A fit that refuses (``ValueError``, e.g. ``classes="auto"`` keeps
fewer than two labels at a small budget) is counted as "refused" for that
epsilon. The "monotone" column says whether the mean score is non-decreasing
in epsilon (over the budgets where every seed fitted) within one standard error.

    python benchmarks/bench_defaults.py              # the full table (a few minutes on 2 cores)
    python benchmarks/bench_defaults.py --seeds 3    # a quick look
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.linear_model import Lasso, LogisticRegression, OrthogonalMatchingPursuit, Ridge
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import skdp
from skdp.exceptions import PrivacyLeakWarning

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0, 100.0)


def _real(loader):
    def split(seed):
        X, y = loader(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
        scaler = StandardScaler().fit(Xtr)
        return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte
    return split


def _synthetic(seed, n=100_000, d=50):
    """X ~ N(0, I/d), w ~ N(0, I), noise 0.3."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) / np.sqrt(d)
    y = X @ rng.randn(d) + 0.3 * rng.randn(n)
    return train_test_split(X, y, test_size=0.3, random_state=seed)


#: (estimator, dataset, data, skdp factory, sklearn factory)
CASES = [
    ("DPRidge", "synthetic n=100k d=50", _synthetic,
     lambda e, s: skdp.DPRidge(epsilon=e, label_bound=(-4, 4), random_state=s), lambda: Ridge()),
    ("DPRidge", "diabetes", _real(load_diabetes),
     lambda e, s: skdp.DPRidge(epsilon=e, random_state=s), lambda: Ridge()),
    ("DPLasso", "diabetes", _real(load_diabetes),
     lambda e, s: skdp.DPLasso(epsilon=e, random_state=s), lambda: Lasso()),
    ("DPLogisticRegression", "breast_cancer", _real(load_breast_cancer),
     lambda e, s: skdp.DPLogisticRegression(epsilon=e, random_state=s), lambda: LogisticRegression()),
    ("DPLogisticRegression", "digits", _real(load_digits),
     lambda e, s: skdp.DPLogisticRegression(epsilon=e, random_state=s), lambda: LogisticRegression(max_iter=1000)),
    ("DPLinearSVC", "breast_cancer", _real(load_breast_cancer),
     lambda e, s: skdp.DPLinearSVC(epsilon=e, random_state=s), lambda: LinearSVC()),
    # the sparse models' default sparsity is 10% of the features: 1 on diabetes (sklearn: OMP at 1), 3 on
    # breast_cancer (no l0-constrained sklearn classifier: the dense one as the reference)
    ("DPSparseLinearRegression", "diabetes", _real(load_diabetes),
     lambda e, s: skdp.DPSparseLinearRegression(epsilon=e, random_state=s),
     lambda: OrthogonalMatchingPursuit(n_nonzero_coefs=1)),
    ("DPSparseLogisticRegression", "breast_cancer", _real(load_breast_cancer),
     lambda e, s: skdp.DPSparseLogisticRegression(epsilon=e, random_state=s), lambda: LogisticRegression()),
]


def _fit_score(make, data, seed):
    Xtr, Xte, ytr, yte = data(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        model = make().fit(Xtr, ytr)
    return model, model.score(Xte, yte)


def run(seeds, epsilons, only=None):
    header = ["estimator", "dataset", "sklearn"] + [f"eps={e:g}" for e in epsilons] + ["monotone", "s/fit"]
    rows = []
    for name, dataset, data, make_dp, make_sk in CASES:
        if only and only not in name:
            continue
        sk = [_fit_score(make_sk, data, s)[1] for s in range(min(seeds, 5))]
        means, ses, cells, t0, fits = [], [], [], time.perf_counter(), 0
        for eps in epsilons:
            scores, refused = [], 0
            for s in range(seeds):
                try:
                    model, score = _fit_score(lambda: make_dp(eps, s), data, s)
                except ValueError:  # e.g. classes="auto" keeps fewer than two labels at this budget
                    refused += 1
                    continue
                spent = model.privacy_spent_
                if not spent.epsilon <= eps * (1 + 1e-9):
                    raise AssertionError(f"{name} on {dataset} reported {spent} for epsilon={eps}")
                scores.append(score)
                fits += 1
            if refused:
                cells.append(f"refused {refused}/{seeds}")
                continue
            means.append(np.mean(scores))
            ses.append(np.std(scores, ddof=1) / np.sqrt(seeds) if seeds > 1 else 0.0)
            cells.append(f"{means[-1]:.3f} ± {ses[-1]:.3f}")
        monotone = all(means[i + 1] >= means[i] - max(ses[i], ses[i + 1]) for i in range(len(means) - 1))
        row = [name, dataset, f"{np.mean(sk):.3f}"] + cells
        rows.append(row + ["yes" if monotone else "NO", f"{(time.perf_counter() - t0) / max(fits, 1):.2f}"])
        print(" | ".join(rows[-1]), flush=True)
    return header, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--eps", type=float, nargs="*", default=list(EPSILONS))
    parser.add_argument("--only", default=None, help="run the estimators whose name contains this")
    args = parser.parse_args()
    header, rows = run(args.seeds, args.eps, args.only)
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
