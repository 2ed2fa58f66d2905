"""The README fits a screen, its code runs as pasted, and its two commands are the ones the docs and CI use."""

import re
import warnings
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

#: the README's budget, in words as ``wc -w`` counts them (whitespace-separated)
MAX_WORDS = 1200


def _fenced(text, language):
    """The bodies of the Markdown code blocks of ``text`` fenced as ``language``."""
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.M | re.S)


def _commands(text):
    """The ``install && run`` command lines of the README's bash blocks."""
    return [line.strip() for block in _fenced(text, "bash") for line in block.splitlines() if " && " in line]


def _literal_lines(rst):
    """The lines of the literal blocks (``::`` and ``code-block``) of reStructuredText ``rst``, dedented."""
    lines, out = rst.splitlines(), []
    for i, line in enumerate(lines):
        if line.rstrip().endswith("::") or re.match(r"\s*\.\. code-block::", line):
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith(" ")):
                out.append(lines[j].strip())
                j += 1
    return [line for line in out if line]


def test_readme_fits_a_screen():
    words = len(README.split())
    assert words <= MAX_WORDS, f"README.md has {words} words; at most {MAX_WORDS} (move the rest into doc/)"


def test_readme_has_runnable_python():
    assert _fenced(README, "python"), "README.md has no ```python block"


def test_readme_python_blocks_run_as_pasted():
    """Every ```python block runs, in order, in one fresh namespace, with no warning; what it fits is private."""
    pytest.importorskip("pandas")
    from skdp import pipeline_privacy_spent

    namespace = {"__name__": "readme"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for number, block in enumerate(_fenced(README, "python"), 1):
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
    fitted = [v for v in namespace.values() if isinstance(v, BaseEstimator) and hasattr(v, "n_features_in_")]
    assert fitted, "the README's example fits nothing"
    for estimator in fitted:
        spent = pipeline_privacy_spent(estimator)
        assert spent.epsilon <= 1.0 + 1e-9 and spent.delta <= 1e-5, spent


def test_readme_example_is_on_a_dataframe_with_its_bounds_defined():
    code = "\n".join(_fenced(README, "python"))
    assert "as_frame=True" in code or "DataFrame" in code
    assert re.search(r"^(lower, upper|bounds) = ", code, flags=re.M), "the example defines no bounds"


def test_readme_two_commands():
    demo, tests = _commands(README)
    assert demo == 'python3 -m pip install -e ".[examples]" && python3 examples/quickstart.py'
    assert tests == 'python3 -m pip install -e ".[test,accounting,examples,dask]" && python3 -m pytest -q -n 2'


def test_readme_test_command_is_what_ci_runs():
    """``.ci/run`` runs the README's test command inside its fresh virtual environment (where ``python`` is
    ``python3``), with pip's ``--quiet``; apart from those two spellings the commands are the same."""
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line]
    assert len(ci) == 1
    normalise = lambda command: " ".join(command.replace("python3 ", "python ").replace(" --quiet", "").split())
    assert normalise(ci[0]) == normalise(_commands(README)[1])


def test_getting_started_gives_the_readmes_two_commands():
    literal = _literal_lines((ROOT / "doc" / "getting_started.rst").read_text(encoding="utf-8"))
    commands = [line for line in literal if " && " in line]
    assert commands == _commands(README)


def test_getting_started_example_is_the_readmes():
    literal = _literal_lines((ROOT / "doc" / "getting_started.rst").read_text(encoding="utf-8"))
    readme = [line.strip() for block in _fenced(README, "python") for line in block.splitlines() if line.strip()]
    assert [line for line in literal if line in readme] == readme


@pytest.mark.parametrize("topic, page", [("defaults", "doc/user_guide/defaults.rst"),
                                         ("solvers", "doc/user_guide/solvers.rst"),
                                         ("benchmarks", "doc/benchmarks.rst"),
                                         ("guarantees", "doc/user_guide/guarantees.rst")])
def test_readme_links_to_the_docs(topic, page):
    links = re.findall(r"\]\(([^)]+)\)", README)
    assert page in links, f"README.md does not link to the {topic} page {page}"
    assert (ROOT / page).is_file()
    assert all((ROOT / link).exists() for link in links if "://" not in link), links
