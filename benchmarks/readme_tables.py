"""Regenerate the tables of README.md from the code and the benchmark scripts.

Every table of numbers in the README sits between two markers::

    <!-- generated: NAME (python benchmarks/readme_tables.py NAME) -->
    ...
    <!-- end generated: NAME -->

and is rewritten by this script, so the README cannot drift from what the
benchmarks measure. ``NAME`` is one of:

* ``solvers``: the solver table, from :func:`skdp.list_solvers` (instant;
  ``tests/test_docs.py`` checks it is current);
* ``utility``: test accuracy / R^2 of four solvers on breast_cancer and
  diabetes, 20 seeds (``bench_utility.py``'s protocol; about two minutes);
* ``defaults``: every estimator at its defaults (only ``epsilon``) against its
  sklearn counterpart, 20 seeds (``bench_defaults.py``; a few minutes);
* ``speed``: fit time over sklearn's on n = 200,000, d = 50 (``bench_speed.py``'s
  design and fits: the defaults, the defaults with public bounds and every dense
  solver, best of 3; a few minutes). Timings depend on the machine and its load:
  run it on the machine whose numbers the README should show.

Usage: python benchmarks/readme_tables.py [NAME ...] [--check]
(no NAME: all of them; ``--check`` prints the differences and exits 1 instead of writing).
"""

import argparse
import re
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
sys.path.insert(0, str(HERE))

UTILITY_SOLVERS = ("dp_gd", "output_pert", "obj_pert", "dp_svrg")
UTILITY_EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)


def solvers():
    from skdp import list_solvers

    lines = ["| solver | source | losses | constraint | privacy | defaults |", "|---|---|---|---|---|---|"]
    for r in list_solvers():
        lines.append(f"| `{r['solver']}` | {r['source']} | {', '.join(r['losses'])} | {r['constraint']} | "
                     f"{r['privacy']} | {r['defaults']} |")
    return "\n".join(lines)


def utility(seeds=20):
    import bench_utility

    out = []
    for title, data, baseline, _, make in bench_utility.tasks():
        Xtr, Xte, ytr, yte = data
        ref = baseline.fit(Xtr, ytr).score(Xte, yte)
        name = title.split(" ")[0]
        metric = "accuracy" if "accuracy" in title else "R²"
        out.append(f"| {name} {metric} (sklearn {ref:.3f}) | "
                   + " | ".join(f"ε = {e:g}" for e in UTILITY_EPSILONS) + " |")
        out.append("|---" * (len(UTILITY_EPSILONS) + 1) + "|")
        for solver in UTILITY_SOLVERS:
            cells = [f"{np.mean(bench_utility.scores(data, make, solver, e, seeds)):.3f}" for e in UTILITY_EPSILONS]
            label = f"`{solver}`" + (" (default)" if solver == "dp_gd" else "")
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip()


#: fits per timing in the README's speed table (the best is kept; more than the script's default of 3, since
#: the mini-batch rows' times vary by a third from run to run on the 2-core machine that makes the table)
SPEED_REPEAT = 5


def speed():
    """One column per estimator, one row per fit (defaults, defaults with public bounds, every dense solver)."""
    import bench_speed

    names, bases, ratios, labels = [], [], {}, []
    for task in bench_speed.tasks():
        base, rows = bench_speed.measure(task, SPEED_REPEAT)
        names.append(task[0].split(" vs ")[0])
        bases.append(base)
        for label, _, ratio, solver, _ in rows:
            key = f"{label} (`{solver}`)" if label in (bench_speed.DEFAULTS, bench_speed.DEFAULTS_PUBLIC) else f"`{label}`"
            if key not in labels:
                labels.append(key)
            ratios[key, len(names) - 1] = ratio
    lines = ["| fit time / sklearn's (n = 200,000, d = 50) | " + " | ".join(names) + " |",
             "|---" * (len(names) + 1) + "|",
             "| sklearn (`LogisticRegression()`, `Ridge()`) | " + " | ".join(f"{b * 1e3:.0f} ms" for b in bases) + " |"]
    for key in labels:
        cells = [f"{ratios[key, j]:.1f}x" if (key, j) in ratios else "-" for j in range(len(names))]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def defaults(seeds=20):
    import bench_defaults

    header, rows = bench_defaults.run(seeds, bench_defaults.EPSILONS)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


GENERATORS = {"solvers": solvers, "utility": utility, "speed": speed, "defaults": defaults}


BLOCK = re.compile(r"(<!-- generated: (\w+) \(python benchmarks/readme_tables\.py \2\) -->\n)(.*?)"
                   r"(\n<!-- end generated: \2 -->)", flags=re.S)


def blocks(text):
    """``{name: content}`` of every generated block in ``text``."""
    return {m.group(2): m.group(3) for m in BLOCK.finditer(text)}


def replace(text, name, content):
    """``text`` with the content of its one ``name`` block replaced by ``content``."""
    if list(blocks(text)).count(name) != 1 or len(re.findall(rf"<!-- generated: {name} ", text)) != 1:
        raise SystemExit(f"README.md must have exactly one '{name}' block.")
    return BLOCK.sub(lambda m: m.group(1) + content + m.group(4) if m.group(2) == name else m.group(0), text)


def main(names, check):
    warnings.simplefilter("ignore")
    text = README.read_text()
    new = text
    for name in names:
        print(f"generating {name} ...", file=sys.stderr)
        new = replace(new, name, GENERATORS[name]())
    if check:
        changed = [n for n in names if blocks(new).get(n) != blocks(text).get(n)]
        for n in changed:
            print(f"--- README {n}\n{blocks(text).get(n)}\n+++ generated {n}\n{blocks(new)[n]}")
        return 1 if changed else 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", help=f"blocks to regenerate, among {sorted(GENERATORS)} (default: all)")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    unknown = sorted(set(args.names) - set(GENERATORS))
    if unknown:
        ap.error(f"unknown block(s) {unknown}; choose among {sorted(GENERATORS)}")
    sys.exit(main(args.names or list(GENERATORS), args.check))
