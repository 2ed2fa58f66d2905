"""Regenerate the tables of numbers in the README and the documentation from the code and the benchmarks.

Every generated table sits between two markers, in Markdown (README.md)::

    <!-- generated: NAME (python benchmarks/readme_tables.py NAME) -->
    ...
    <!-- end generated: NAME -->

or in reStructuredText (the doc pages of ``PAGES``), as two comments around a ``list-table``::

    .. generated: NAME (python benchmarks/readme_tables.py NAME)

    ...

    .. end generated: NAME

and is rewritten by this script, so no page can drift from what the benchmarks measure. Each ``NAME``
appears exactly once among the README and ``PAGES``. ``NAME`` is one of:

* ``solvers``: the solver table, from :func:`skdp.list_solvers` (instant;
  ``tests/test_docs.py`` checks it is current; in ``doc/user_guide/tour.rst``);
* ``utility``: test accuracy / R^2 of four solvers on breast_cancer and
  diabetes, 20 seeds (``bench_utility.py``'s protocol; about two minutes; in ``doc/benchmarks.rst``);
* ``defaults``: every estimator at its defaults (only ``epsilon``) against its
  sklearn counterpart, 20 seeds (``bench_defaults.py``; a few minutes; in ``doc/user_guide/defaults.rst``);
* ``speed``: fit time over sklearn's on n = 200,000, d = 50 (``bench_speed.py``'s
  design and fits: the defaults, the defaults with public bounds and every dense
  solver, best of 5; a few minutes; in ``doc/benchmarks.rst``). Timings depend on the machine and its
  load: run it on the machine whose numbers the docs should show.

A generator returns its table(s) as Markdown (cells with Markdown code spans); :func:`to_rst` turns
them into ``list-table`` directives for the doc pages.

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
ROOT = HERE.parent
README = ROOT / "README.md"
#: every file that may hold a generated block (README.md in Markdown, the rest in reStructuredText)
PAGES = (README, ROOT / "doc" / "benchmarks.rst", ROOT / "doc" / "user_guide" / "defaults.rst",
         ROOT / "doc" / "user_guide" / "tour.rst")
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


#: fits per timing in the speed table of doc/benchmarks.rst (the best is kept; more than the script's default of 3,
#: since the mini-batch rows' times vary by a third from run to run on the 2-core machine that makes the table)
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


MD_BLOCK = re.compile(r"(<!-- generated: (\w+) \(python benchmarks/readme_tables\.py \2\) -->\n)(.*?)"
                      r"(\n<!-- end generated: \2 -->)", flags=re.S)
RST_BLOCK = re.compile(r"(\.\. generated: (\w+) \(python benchmarks/readme_tables\.py \2\)\n\n)(.*?)"
                       r"(\n\n\.\. end generated: \2\n)", flags=re.S)
#: the Markdown pattern (the README's), kept under its former name
BLOCK = MD_BLOCK


def _pattern(path):
    return MD_BLOCK if Path(path).suffix == ".md" else RST_BLOCK


def blocks(text, path=README):
    """``{name: content}`` of every generated block in ``text`` (the content of file ``path``)."""
    return {m.group(2): m.group(3) for m in _pattern(path).finditer(text)}


def parse_md(content):
    """The Markdown tables of ``content`` as lists of rows (lists of cells), header row first."""
    tables, rows = [], []
    for line in content.splitlines() + [""]:
        if line.startswith("|"):
            if not re.fullmatch(r"(\|-+)+\|", line):
                rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def _rst_cell(cell):
    cell = re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", cell)  # Markdown code spans -> rst literals
    return r"\-" if cell == "-" else cell  # a lone "-" would start a bullet list


def to_rst(content):
    """The Markdown tables of ``content`` as reStructuredText ``list-table`` directives."""
    out = []
    for rows in parse_md(content):
        lines = [".. list-table::", "   :header-rows: 1", ""]
        for row in rows:
            lines += [f"   * - {_rst_cell(row[0])}"] + [f"     - {_rst_cell(c)}" for c in row[1:]]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def render(content, path):
    """A generator's Markdown ``content`` as it is written into ``path``."""
    return content if Path(path).suffix == ".md" else to_rst(content)


def where(name, texts):
    """The one page (among ``texts``, ``{path: text}``) holding block ``name`` (``LookupError`` if not one)."""
    found = [p for p, t in texts.items() for n in blocks(t, p) if n == name]
    marks = [p for p, t in texts.items() for _ in re.finditer(rf"generated: {name} \(", t)]
    if len(found) != 1 or len(marks) != 1:
        raise LookupError(f"exactly one of {[str(p.relative_to(ROOT)) for p in texts]} must have one "
                          f"'{name}' block; found {len(marks)}.")
    return found[0]


def replace(text, name, content, path=README):
    """``text`` (of file ``path``) with the content of its one ``name`` block replaced by ``content``."""
    pattern = _pattern(path)
    if list(blocks(text, path)).count(name) != 1:
        raise SystemExit(f"{Path(path).name} must have exactly one '{name}' block.")
    return pattern.sub(lambda m: m.group(1) + content + m.group(4) if m.group(2) == name else m.group(0), text)


def main(names, check):
    warnings.simplefilter("ignore")
    texts = {p: p.read_text() for p in PAGES}
    new = dict(texts)
    try:
        for name in names:
            where(name, texts)
    except LookupError as exc:
        raise SystemExit(str(exc)) from None
    for name in names:
        path = where(name, texts)
        print(f"generating {name} into {path.relative_to(ROOT)} ...", file=sys.stderr)
        new[path] = replace(new[path], name, render(GENERATORS[name](), path), path)
    if check:
        changed = [(n, p) for n in names for p in [where(n, texts)]
                   if blocks(new[p], p).get(n) != blocks(texts[p], p).get(n)]
        for n, p in changed:
            print(f"--- {p.relative_to(ROOT)} {n}\n{blocks(texts[p], p).get(n)}\n+++ generated {n}\n"
                  f"{blocks(new[p], p)[n]}")
        return 1 if changed else 0
    for p in PAGES:
        if new[p] != texts[p]:
            p.write_text(new[p])
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
