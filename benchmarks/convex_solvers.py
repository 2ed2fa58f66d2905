"""Issue-4 solvers: utility on breast_cancer / diabetes for eps in {0.1, 0.5, 1, 2, 5}, noisy_sfw speed,
and DPLasso vs DPRidge on a high-dimensional sparse design. Prints tables.

    python benchmarks/convex_solvers.py            # everything (a few minutes)
    python benchmarks/convex_solvers.py --quick    # 2 seeds, smaller speed problem
"""

import sys
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import Lasso
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLasso, DPLinearSVC, DPLogisticRegression, DPRidge
from skdp.losses import SquaredLoss, clipped_mean_gradient

QUICK = "--quick" in sys.argv
SEEDS = range(2 if QUICK else 5)
EPS = [0.1, 0.5, 1, 2, 5]
CLF = ["dp_gd", "noisy_sfw", "noisy_sfw_lp", "dp_accmd", "phased_sgd", "noisy_sgd", "dp_svrg_pp", "obj_pert_svrg"]
REG = ["dp_gd", "noisy_sfw", "noisy_sfw_lp", "dp_accmd", "phased_sgd", "noisy_sgd", "dp_svrg_pp"]


def utility():
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    sc = StandardScaler().fit(Xtr)  # stands in for public scaling
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    print("breast_cancer, test accuracy (mean over seeds); every fit checked privacy_spent_ <= request")
    print("| solver | " + " | ".join(f"eps={e}" for e in EPS) + " |")
    print("|---" * (len(EPS) + 1) + "|")
    rows = [(s, lambda e, s=s, r=0: DPLogisticRegression(epsilon=e, solver=s, data_norm=6.0, classes=[0, 1],
                                                         random_state=r)) for s in CLF]
    rows += [("DPLinearSVC nsgd_moreau", lambda e, r=0: DPLinearSVC(epsilon=e, data_norm=6.0, classes=[0, 1],
                                                                    random_state=r))]
    for name, make in rows:
        cells = []
        for e in EPS:
            accs = []
            for seed in SEEDS:
                m = make(e)
                m.set_params(random_state=seed).fit(Xtr, ytr)
                assert m.privacy_spent_.epsilon <= e * (1 + 1e-9), (name, e, m.privacy_spent_)
                accs.append(m.score(Xte, yte))
            cells.append(f"{np.mean(accs):.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")

    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    print("\ndiabetes, test R^2 (label range (25, 346) public)")
    print("| solver | " + " | ".join(f"eps={e}" for e in EPS) + " |")
    print("|---" * (len(EPS) + 1) + "|")
    for s in REG:
        cells = []
        for e in EPS:
            r2 = []
            for seed in SEEDS:
                m = DPRidge(epsilon=e, solver=s, data_norm=5.0, label_bound=(25, 346), random_state=seed).fit(Xtr, ytr)
                assert m.privacy_spent_.epsilon <= e * (1 + 1e-9), (s, e)
                r2.append(m.score(Xte, yte))
            cells.append(f"{np.mean(r2):.3f}")
        print(f"| {s} | " + " | ".join(cells) + " |")


def speed():
    n, d = (50000, 200) if QUICK else (200000, 200)
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (n, d))
    w = np.zeros(d)
    w[:10] = 1
    y = X @ w + 0.1 * rng.randn(n)
    def best(f, k):  # best of k: the machine's noise only ever adds time
        times = []
        for _ in range(k):
            t = time.perf_counter()
            out = f()
            times.append(time.perf_counter() - t)
        return min(times), out

    t_fit, m = best(lambda: DPLasso(epsilon=1, coef_norm=10, label_bound=6, random_state=0).fit(X, y), 5)
    t_grad, _ = best(lambda: clipped_mean_gradient(SquaredLoss(), X, y, np.zeros(d), None, None), 5)
    t_lasso, _ = best(lambda: Lasso(alpha=0.01).fit(X, y), 3)
    passes = m.solver_info_["passes"]
    print(f"\nnoisy_sfw speed, n={n}, d={d}")
    print("| DPLasso fit (s, best of 5) | full gradient (s, best of 5) | passes | fit / (gradient x passes) | sklearn Lasso (s) |")
    print("|---|---|---|---|---|")
    print(f"| {t_fit:.3f} | {t_grad:.4f} | {passes:.2f} | {t_fit / (t_grad * passes):.2f} | {t_lasso:.3f} |")


def high_dim():
    n, d = 2000, 10000
    rng = np.random.RandomState(0)
    w = np.zeros(d)
    w[:10] = np.where(np.arange(10) % 2, -1.0, 1.0)
    X = rng.uniform(-1, 1, (n, d))
    y = X @ w + 0.1 * rng.randn(n)
    Xt = rng.uniform(-1, 1, (2000, d))
    yt = Xt @ w + 0.1 * rng.randn(2000)
    print(f"\nhigh-dimensional sparse design n={n}, d={d}, 10-sparse, eps=2; test MSE "
          f"(null model: {np.mean((yt - np.mean(yt)) ** 2):.3f})")
    print("| model | solver | test MSE |")
    print("|---|---|---|")
    for solver in ["dp_accmd", "noisy_sfw"]:
        mse = [np.mean((DPLasso(epsilon=2, solver=solver, coef_norm=3, label_bound=8, random_state=s).fit(X, y)
                        .predict(Xt) - yt) ** 2) for s in SEEDS]
        print(f"| DPLasso | {solver} | {np.mean(mse):.3f} |")
    for solver in ["dp_gd", "output_pert", "noisy_sgd", "phased_sgd"]:
        mse = [np.mean((DPRidge(epsilon=2, solver=solver, data_norm=float(np.sqrt(d / 3)), label_bound=8,
                                random_state=s).fit(X, y).predict(Xt) - yt) ** 2) for s in SEEDS]
        print(f"| DPRidge | {solver} | {np.mean(mse):.3f} |")


if __name__ == "__main__":
    utility()
    speed()
    high_dim()
