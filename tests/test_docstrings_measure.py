"""Docstrings explain, the documentation measures.

A docstring says what a rule does and why (the mathematics, the trade-off in words, the paper it comes
from); the measurements that chose it live in the generated pages of ``doc/`` next to the script that
produces them (:doc:`/user_guide/defaults`, :doc:`/benchmarks`, :doc:`/user_guide/verifying`). So no
docstring of the package names a benchmark script or quotes a measured score, timing or experiment size:
numbers copied into a docstring go stale when a default changes, and the page regenerated from the script
does not.

Every module that :mod:`pkgutil` finds is read twice: with :mod:`ast` (module, class, function and method
docstrings, nested and private ones included, plus Sphinx attribute docs, the ``#:`` comments and the
string that follows an assignment) and with :mod:`inspect` (the runtime ``__doc__`` of every module,
class, function and method, which includes docstrings assembled at import time).
"""

import ast
import importlib
import inspect
import io
import pkgutil
import re
import tokenize
from pathlib import Path

import pytest

import skdp

#: what a docstring may not contain, each with what it catches
FORBIDDEN = {
    "a benchmark script": re.compile(r"benchmarks/"),
    "an R^2 score": re.compile(r"R\^2 (?:of )?-?\d+\.\d"),
    "an accuracy": re.compile(r"accuracy (?:of )?\d\.\d\d"),
    "a timing in ms": re.compile(r"\d+(?:\.\d+)? ms\b"),
    "a timing in us": re.compile(r"\d+(?:\.\d+)? (?:us|microseconds?)\b"),
    "a speed ratio": re.compile(r"\d+(?:\.\d+)? times (?:slower|faster|the fit time)"),
    "an experiment's size": re.compile(r"\b\d+ (?:seeds|splits)\b"),
    "a measurement's report": re.compile(r"\b[Mm]easured (?:at|on|with|against|in)\b"),
}

#: modules whose docstrings still quote measurements, each with its reason; the lead empties this list
ALLOWED_MODULES = {}


def _module_names():
    names = [skdp.__name__]
    for info in pkgutil.walk_packages(skdp.__path__, prefix=skdp.__name__ + "."):
        names.append(info.name)
    return sorted(names)


MODULES = _module_names()


def _ast_docs(module):
    """``(where, text)`` for every docstring and attribute doc in ``module``'s source."""
    path = Path(inspect.getsourcefile(module))
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((f"{path.name}:{getattr(node, 'lineno', 1)}", doc))
        body = getattr(node, "body", None)
        if isinstance(body, list):  # attribute docs: a string right after an assignment
            for before, after in zip(body, body[1:]):
                if (
                    isinstance(before, (ast.Assign, ast.AnnAssign))
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    found.append((f"{path.name}:{after.lineno}", after.value.value))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.string.startswith("#:"):
            found.append((f"{path.name}:{token.start[0]}", token.string))
    return found


def _runtime_docs(module):
    """``(where, text)`` for the runtime ``__doc__`` of ``module`` and of what it defines."""
    found = [(module.__name__, module.__doc__ or "")]
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj):
            found.append((f"{module.__name__}.{name}", obj.__doc__ or ""))
            for attr, member in vars(obj).items():
                member = getattr(member, "__func__", member)  # classmethod, staticmethod
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member) and member.__doc__:
                    found.append((f"{module.__name__}.{name}.{attr}", member.__doc__))
        elif inspect.isfunction(obj) and obj.__doc__:
            found.append((f"{module.__name__}.{name}", obj.__doc__))
    return found


def _violations(docs):
    out = []
    for where, text in docs:
        for what, pattern in FORBIDDEN.items():
            for match in pattern.finditer(text):
                line = text[: match.start()].count("\n")
                out.append(f"{where} (+{line}): {what}: {match.group(0)!r}")
    return out


def test_walk_finds_the_package():
    # the walk reaches the estimators, the solvers and the privacy modules (a silent empty walk passes nothing)
    for name in ("skdp.linear_model._ridge", "skdp.solvers.gradient", "skdp.privacy.discrete", "skdp._blas"):
        assert name in MODULES


def test_allow_list_names_existing_modules():
    assert set(ALLOWED_MODULES) <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstrings_quote_no_benchmark_or_measurement(name):
    if name in ALLOWED_MODULES:
        pytest.skip(ALLOWED_MODULES[name])
    module = importlib.import_module(name)
    found = sorted(set(_violations(_ast_docs(module) + _runtime_docs(module))))
    assert not found, (
        "docstrings explain, the docs measure: move these to a page of doc/ (naming the script that "
        "prints them) and point there with a Sphinx reference:\n" + "\n".join(found)
    )


def test_patterns_catch_what_they_should():
    # each pattern fires on the kind of passage it is for, and stays quiet on prose that explains
    measured = [
        "chosen on ``benchmarks/bench_utility.py``",
        "R^2 0.305 against 0.277",
        "R^2 -0.11 at epsilon 0.5",
        "accuracy 0.921 against 0.95",
        "32 / 37 ms as skdp runs it",
        "about 2 us per coordinate",
        "4.6 to 7.8 times the fit time",
        "20 seeds on diabetes",
        "40 splits",
        "Measured at epsilon = 1: 8.5% more noise",
    ]
    for text in measured:
        assert _violations([("example", text)]), text
    explained = [
        "the private R^2 approaches least squares as epsilon grows",
        "see :doc:`/user_guide/defaults` for the measurements",
        "the seeds of the random state",
        "``T = min(100, max(10, ceil(2 ln(n epsilon))))``",
    ]
    for text in explained:
        assert not _violations([("example", text)]), text
