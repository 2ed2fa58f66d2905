"""Planning time of the Poisson-subsampled solvers, before and after the fast accountant (issue 19).

Each number is one cold run in a fresh Python process (imports excluded): ``planned_events(3000, 6)``
at epsilon = 0.8 for every subsampled solver, and a whole default ``DPLinearSVC().fit`` on 3000 x 6.
"before" runs the package as it was at ``--before`` (extracted with ``git archive``, read-only for
the repository); "after" runs the working tree.

Usage: python benchmarks/bench_accounting.py [--before 3e3da09]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [
    ("DPLinearSVC", None), ("DPLinearSVC", "nsgd_moreau"), ("DPLogisticRegression", "dp_svrg"),
    ("DPLogisticRegression", "dp_svrg_pp"), ("DPLogisticRegression", "rrpsgd"),
    ("DPLogisticRegression", "dp_srm"), ("DPLogisticRegression", "dp_lssgd"),
]

CHILD = r"""
import json, sys, time, warnings
import numpy as np
import skdp
from sklearn.datasets import make_classification
warnings.simplefilter("ignore")
est, solver = sys.argv[1], (None if sys.argv[2] == "-" else sys.argv[2])
if est == "fit":
    X, y = make_classification(3000, 6, random_state=0)
    e = skdp.DPLinearSVC(random_state=0)
    t = time.perf_counter(); e.fit(X, y); dt = time.perf_counter() - t
    out = {"time": dt, "epsilon": e.privacy_spent_.epsilon}
else:
    e = getattr(skdp, est)(epsilon=0.8, classes=[0, 1], **({} if solver is None else {"solver": solver}))
    t = time.perf_counter(); ev = e.planned_events(3000, 6); dt = time.perf_counter() - t
    out = {"time": dt, "epsilon": skdp.privacy.price(ev, 1e-5).budget.epsilon}
print(json.dumps(out))
"""


def run(path, est, solver):
    env = dict(os.environ, PYTHONPATH=path)
    res = subprocess.run([sys.executable, "-c", CHILD, est, solver or "-"], env=env, cwd=path,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="3e3da09", help="git revision of the 'before' column")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.before, "skdp"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
        print(f"{'planning (n=3000, d=6, eps=0.8)':<44}{'before':>10}{'after':>10}{'eps before':>14}{'eps after':>14}")
        for est, solver in CASES + [("fit", None)]:
            b, a = run(old, est, solver), run(ROOT, est, solver)
            label = "DPLinearSVC().fit (default, whole fit)" if est == "fit" else f"{est} {solver or '(default)'}"
            print(f"{label:<44}{b['time']:>9.3f}s{a['time']:>9.3f}s{b['epsilon']:>14.9f}{a['epsilon']:>14.9f}")


if __name__ == "__main__":
    main()
