"""Head-to-head: skdp vs diffprivlib vs sklearn's non-private models, same data, splits, seeds and bounds.

    python benchmarks/compare_peers.py            # 10 seeds; creates .peer-venv/ on first run
    python benchmarks/compare_peers.py --seeds 3  # quick look

diffprivlib's latest release needs scikit-learn <= 1.7.2, so it runs in its own virtual environment
(``.peer-venv/``, created here with ``pip install diffprivlib "scikit-learn<=1.7.2"``) as a worker process
that receives the task as JSON and answers with scores and fit times; skdp and sklearn run in this process.

Protocol (identical for every library): 70/30 split (stratified for classification, split seed 0); features
standardised with the training split's mean and std (a non-private stand-in for public scaling, as in
bench_utility.py), then every library gets the same public bounds: row norm ``sqrt(d)`` (data_norm), each
standardised feature in ``[-3, 3]`` where a library wants per-feature bounds (diffprivlib's LinearRegression),
the label range a priori (diabetes: (25, 346)), and the class set. Datasets: breast_cancer, digits, diabetes from
sklearn, and wine (a real dataset shipped inside scikit-learn's wheel; no network at run time).

Privacy notions differ: diffprivlib's models are pure epsilon-DP (delta = 0), skdp's default is
(epsilon, 1e-5)-DP. The table shows both skdp's default and its pure-DP mode (``delta=0``: ``output_pert``
with L2-Laplace noise), so the comparison at delta = 0 is like for like.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_wine
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, DPRidge

EPS = [0.1, 0.5, 1.0, 2.0, 5.0]
ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".peer-venv"
DATASETS = {  # name: (loader, task, label range)
    "breast_cancer": (load_breast_cancer, "clf", None),
    "digits": (load_digits, "clf", None),
    "wine": (load_wine, "clf", None),
    "diabetes": (load_diabetes, "reg", (25.0, 346.0)),
}

WORKER = r'''
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from diffprivlib.models import LinearRegression, LogisticRegression
task = json.load(sys.stdin)
Xtr, Xte = np.array(task["Xtr"]), np.array(task["Xte"])
ytr, yte = np.array(task["ytr"]), np.array(task["yte"])
out = {}
for eps in task["eps"]:
    scores, times = [], []
    for seed in task["seeds"]:
        if task["task"] == "clf":
            m = LogisticRegression(epsilon=eps, data_norm=task["data_norm"], random_state=seed)
        else:
            lo, hi = task["label_range"]
            m = LinearRegression(epsilon=eps, bounds_X=(-3.0, 3.0), bounds_y=(lo, hi), random_state=seed)
        t = time.perf_counter()
        m.fit(Xtr, ytr)
        times.append(time.perf_counter() - t)
        scores.append(float(m.score(Xte, yte)))
    out[str(eps)] = {"score": scores, "time": times}
json.dump(out, sys.stdout)
'''


def ensure_venv():
    py = VENV / "bin" / "python"
    if py.exists() and subprocess.run([str(py), "-c", "import diffprivlib"], capture_output=True).returncode == 0:
        return py
    print(f"creating {VENV} with diffprivlib (scikit-learn <= 1.7.2) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "diffprivlib", "scikit-learn<=1.7.2"], check=True)
    return py


def split(name):
    loader, task, label_range = DATASETS[name]
    X, y = loader(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0,
                                          stratify=y if task == "clf" else None)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = np.clip(sc.transform(Xtr), -3, 3), np.clip(sc.transform(Xte), -3, 3)
    return Xtr, Xte, ytr, yte, task, label_range


def run_skdp(make, Xtr, Xte, ytr, yte, seeds):
    res = {}
    for eps in EPS:
        scores, times = [], []
        for s in seeds:
            m = make(eps, s)
            t = time.perf_counter()
            m.fit(Xtr, ytr)
            times.append(time.perf_counter() - t)
            assert m.privacy_spent_.epsilon <= eps * (1 + 1e-9)
            scores.append(m.score(Xte, yte))
        res[eps] = (np.mean(scores), np.mean(times))
    return res


def main(seeds):
    warnings.simplefilter("ignore")
    py = ensure_venv()
    seeds = list(range(seeds))
    table = {}
    for name in DATASETS:
        Xtr, Xte, ytr, yte, task, label_range = split(name)
        d = Xtr.shape[1]
        dn = float(np.sqrt(d))
        classes = sorted(set(ytr.tolist()))
        if task == "clf":
            sk = LogisticRegression(max_iter=2000)
            rows = {
                "skdp (eps, 1e-5)": lambda e, s: DPLogisticRegression(e, data_norm=dn, classes=classes,
                                                                       random_state=s),
                "skdp pure (delta=0)": lambda e, s: DPLogisticRegression(e, 0.0, data_norm=dn, classes=classes,
                                                                          random_state=s),
            }
        else:
            sk = LinearRegression()
            rows = {
                "skdp (eps, 1e-5)": lambda e, s: DPRidge(e, data_norm=dn, label_bound=label_range, random_state=s),
                "skdp pure (delta=0)": lambda e, s: DPRidge(e, 0.0, data_norm=dn, label_bound=label_range,
                                                            random_state=s),
            }
        t = time.perf_counter()
        base = sk.fit(Xtr, ytr).score(Xte, yte)
        t_sk = time.perf_counter() - t
        results = {label: run_skdp(make, Xtr, Xte, ytr, yte, seeds) for label, make in rows.items()}
        task_json = {"Xtr": Xtr.tolist(), "Xte": Xte.tolist(), "ytr": ytr.tolist(), "yte": yte.tolist(),
                     "eps": EPS, "seeds": seeds, "task": task, "data_norm": dn, "label_range": label_range}
        proc = subprocess.run([str(py), "-c", WORKER], input=json.dumps(task_json), capture_output=True, text=True,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if proc.returncode != 0:
            raise RuntimeError(f"diffprivlib worker failed:\n{proc.stderr[-2000:]}")
        dpl = json.loads(proc.stdout)
        results["diffprivlib (pure)"] = {e: (np.mean(dpl[str(e)]["score"]), np.mean(dpl[str(e)]["time"]))
                                         for e in EPS}
        metric = "accuracy" if task == "clf" else "R^2"
        print(f"\n{name} ({metric}; n_train={len(ytr)}, d={d}; sklearn {base:.3f} in {t_sk * 1e3:.0f} ms; "
              f"mean of {len(seeds)} seeds)")
        print("| library | " + " | ".join(f"eps={e:g}" for e in EPS) + " | fit time / sklearn |")
        print("|---" * (len(EPS) + 2) + "|")
        for label, res in results.items():
            cells = " | ".join(f"{res[e][0]:.3f}" for e in EPS)
            ratio = np.mean([res[e][1] for e in EPS]) / max(t_sk, 1e-9)
            print(f"| {label} | {cells} | {ratio:.1f} |", flush=True)
        for label in rows:
            behind = [e for e in EPS if results[label][e][0] <= results["diffprivlib (pure)"][e][0]]
            print(f"{label} vs diffprivlib: " + ("ahead at every epsilon" if not behind else
                                                 f"not ahead at epsilon {behind}"))
        table[name] = (results, base, metric)
    plot(table)


def plot(table):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    fig, axes = plt.subplots(1, len(table), figsize=(4 * len(table), 3.4))
    for ax, (name, (results, base, metric)) in zip(axes, table.items()):
        for label, res in results.items():
            ax.plot(EPS, [res[e][0] for e in EPS], marker="o", label=label)
        ax.axhline(base, color="k", linestyle="--", label="sklearn (non-private)")
        ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("epsilon")
        ax.set_ylabel(metric)
        if metric == "R^2":
            ax.set_ylim(-1, 1)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    out = Path(__file__).with_suffix(".png")
    fig.savefig(out, dpi=120)
    print(f"plot saved to {out}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    main(ap.parse_args().seeds)
