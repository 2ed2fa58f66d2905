"""Sphinx configuration for skdp (``make -C doc html``; needs ``pip install -e ".[docs]"``)."""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("MPLBACKEND", "Agg")

import skdp  # noqa: E402
from skdp import list_solvers  # noqa: E402

project = "skdp"
author = "the skdp developers"
copyright = "2026, the skdp developers"
release = skdp.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
# document what skdp defines; sklearn's generated request setters and mixin methods (whose docstrings
# cross-reference sklearn's own docs) are left to sklearn's documentation
autodoc_default_options = {
    "members": True,
    "inherited-members": False,
    "exclude-members": ",".join([
        "set_fit_request", "set_score_request", "set_predict_request", "set_transform_request",
        "set_inverse_transform_request", "set_partial_fit_request", "set_split_request", "set_output",
        "get_metadata_routing", "get_params", "set_params", "score", "fit_transform", "get_feature_names_out",
    ]),
}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
templates_path = ["_templates"]
exclude_patterns = ["_build", "sg_execution_times.rst", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]
html_theme = "alabaster"
html_static_path = []
nitpicky = False

sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py|quickstart\.py",
    "write_computation_times": False,
    "download_all_examples": False,
    "plot_gallery": "True",
    "within_subsection_order": "FileNameSortKey",
}


def _solver_table():
    """The solver table of the user guide, generated from :func:`skdp.list_solvers` at build time."""
    rows = list_solvers()
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 12 24 14 8 18 24", "",
             "   * - solver", "     - source", "     - losses", "     - set", "     - privacy", "     - defaults"]
    for r in rows:
        page = r["reference"][len("doc"):-len(".rst")]  # "doc/papers/wang2021.rst" -> "/papers/wang2021"
        lines += [f"   * - ``{r['solver']}``", f"     - {r['source']} (:doc:`deviations <{page}>`)",
                  f"     - {', '.join(r['losses'])}",
                  f"     - {r['constraint']}", f"     - {r['privacy']}", f"     - {r['defaults']}"]
    (HERE / "user_guide" / "solver_table.inc").write_text("\n".join(lines) + "\n")


_solver_table()
