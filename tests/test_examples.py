"""Example scripts run to completion (with the optional ``examples`` extra installed).

The gallery scripts (``examples/plot_*.py``) are executed by the documented docs job (``bash .ci/docs``:
sphinx-gallery runs every one of them, about a minute); here CI runs the README's demo and one gallery script,
and checks that every script at least compiles, which keeps the test suite within its time budget.
"""

import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))
RUN_IN_CI = ["quickstart.py", "plot_audit.py"]


def test_there_are_examples():
    assert len(EXAMPLES) >= 6
    assert all(name in {p.name for p in EXAMPLES} for name in RUN_IN_CI)


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_compiles(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"), doraise=True)


@pytest.mark.parametrize("name", RUN_IN_CI)
def test_example_runs(name, tmp_path):
    pytest.importorskip("matplotlib")
    script = EXAMPLES[0].parent / name
    env = {**os.environ, "MPLBACKEND": "Agg"}
    # run from a temporary directory so that nothing is written into the checkout
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
