"""The documentation cites only files a user gets, and no internal algorithm card.

Every docstring of the package (module, class, function and method docstrings, private ones included,
read with :mod:`ast` from each module that :mod:`pkgutil` finds, plus the runtime ``__doc__`` of every
member and the solver table's text), every comment of its source, every page under ``doc/``, the
README and the docstrings and comments of the examples and benchmarks may name a file only if that
file is in the repository. Internal notes kept outside it (``../shared/...``) must be cited as the
paper they come from, or as a page of ``doc/``.
"""

import ast
import importlib
import inspect
import io
import os
import pkgutil
import re
import tokenize
from pathlib import Path

import pytest

import skdp

ROOT = Path(__file__).resolve().parents[1]

#: extensions that make a token a file name; module paths such as ``np.linalg`` never end in one
EXTENSIONS = ("md", "py", "rst", "txt", "csv", "json", "toml", "cfg", "ini", "yaml", "yml", "ipynb", "pdf")
#: a path-like token: optional ``./`` or ``../`` parts, then ``dir/`` parts, then ``name.ext``
FILE_TOKEN = re.compile(
    r"(?<![\w./\\-])((?:\.{1,2}/)*(?:[\w.-]+/)*[\w.-]*\w\.(?:" + "|".join(EXTENSIONS) + r"))(?![\w/-])"
)
URL = re.compile(r"\w+://\S+")
#: tokens that look like file names but are not, each with a one-line reason (none needed so far;
#: sphinx-gallery's ``:ref:`sphx_glr_..._x.py``` labels are recognised in :func:`_exists`)
ALLOWED = {}
HEADER = "cites a file that is not in the repository, or an internal algorithm card:\n"
SKIP_DIRS = {".git", ".venv", ".peer-venv", "build", "dist", "_build", "__pycache__", "generated", "auto_examples"}


def _repo_files():
    names = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        names.update(files)
    return names


REPO_FILE_NAMES = _repo_files()


def _exists(token, where):
    """``token`` names a file of the repository, relative to its root or to the citing file's folder.

    A bare name (no ``/``) may also name a repository file in any folder (``quickstart.py``).
    """
    if token.startswith("sphx_glr_"):  # sphinx-gallery ``:ref:`` label, not a file
        return True
    for base in (ROOT, where.parent):
        path = (base / token).resolve()
        if path.is_relative_to(ROOT) and path.exists():
            return True
    return "/" not in token and token in REPO_FILE_NAMES


def _file_tokens(text):
    text = URL.sub(" ", text)
    return [m.group(1) for m in FILE_TOKEN.finditer(text)]


#: "card 3.4", "the card's ...": the internal algorithm cards are not shipped; cite the paper or a doc page.
#: The solver attribute and table column named ``card`` (in backticks, or ``card :`` in a numpydoc list) are fine.
CARD = re.compile(r"(?<![`\w])[Cc]ards?\b(?!`| :)")
#: an internal card's short name (``seed004``); the paper pages are ``papers/wang2021`` (a toctree line is fine)
SEED = re.compile(r"(?<![/\w])seed0\d\d\b")
DOC_ROLE = re.compile(r":doc:`(?:[^`<]*<)?([^`>]+)>?`")


def _doc_target_exists(target, where):
    """A ``:doc:`` target names a page of ``doc/``: absolute (``/papers/wang2021``) from ``doc/``,
    relative from the citing page. Docstrings must use absolute targets (their generated pages
    live in ``doc/generated/``)."""
    doc = ROOT / "doc"
    if target.startswith("/"):
        page = doc / (target.lstrip("/") + ".rst")
    elif where.suffix == ".rst" and where.is_relative_to(doc):
        page = where.parent / (target + ".rst")
    else:
        return False
    return page.resolve().is_relative_to(doc) and page.exists()


def _missing(text, where, line, label):
    """``(place, token)`` for every file name or ``:doc:`` page in ``text`` that is not in the repository."""
    out = []
    for offset, chunk in enumerate(text.splitlines()):
        place = f"{where.relative_to(ROOT)}:{line + offset} ({label})"
        for token in _file_tokens(chunk):
            if token in ALLOWED:
                continue
            if "../shared" in token or not _exists(token, where):
                out.append((place, token))
        if CARD.search(chunk) or any(m.group(0) != chunk.strip() for m in SEED.finditer(chunk)):
            out.append((place, "cites an internal card: " + chunk.strip()))
        for target in DOC_ROLE.findall(chunk):
            # generated gallery pages exist only after a build
            if "auto_examples" not in target.split("/") and not _doc_target_exists(target, where):
                out.append((place, f":doc:`{target}`"))
    return out


def _python_texts(path):
    """``(text, line, label)`` for every docstring and comment of a Python source file."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                yield body[0].value.value, body[0].lineno, "docstring"
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.string, tok.start[0], "comment"


def _package_modules():
    names = ["skdp"] + [m.name for m in pkgutil.walk_packages(skdp.__path__, prefix="skdp.")]
    return [importlib.import_module(name) for name in sorted(names)]


def _runtime_docs(module):
    """``(qualname, doc)`` of every class, function, method and property defined in ``module``."""
    seen = set()
    stack = [obj for obj in vars(module).values() if getattr(obj, "__module__", None) == module.__name__]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        doc = inspect.getdoc(obj) if not isinstance(obj, property) else obj.__doc__
        if doc:
            yield getattr(obj, "__qualname__", repr(obj)), doc
        if inspect.isclass(obj):
            for member in vars(obj).values():
                member = getattr(member, "__func__", member)
                if inspect.isfunction(member) or inspect.isclass(member) or isinstance(member, property):
                    stack.append(member)


def test_file_token_pattern():
    found = _file_tokens(
        "np.linalg.norm, skdp.privacy, e.g. the x.md file, ``benchmarks/bench_utility.py``, "
        "(``../shared/algorithms/README.md``), doc/papers/wang2021.rst, examples/plot_*.py, "
        "https://example.org/notes.md, 1.5 and card 3.4b"
    )
    assert found == ["x.md", "benchmarks/bench_utility.py", "../shared/algorithms/README.md",
                     "doc/papers/wang2021.rst"]


def test_exists_resolution():
    where = ROOT / "doc" / "user_guide" / "bounds.rst"
    assert _exists("benchmarks/bench_utility.py", where)
    assert _exists("../papers/wang2021.rst", where)  # relative to the citing page
    assert _exists("quickstart.py", where)  # bare name of a repository file
    assert not _exists("privacy_core.md", where)
    assert not _exists("../../../shared/algorithms/README.md", where)  # outside the repository
    assert _missing("see ``../shared/algorithms/README.md``", where, 1, "text")
    assert not _missing("see :doc:`../papers/wang2021` and :doc:`guarantees`", where, 1, "text")
    assert _missing("see :doc:`../papers/seed999`", where, 1, "text")
    docstring = ROOT / "skdp" / "losses.py"
    assert not _missing("see :doc:`/papers/bassily_feldman_talwar_thakurta2019` and :doc:`the guide </user_guide/bounds>`", docstring, 1, "")
    assert _missing("see :doc:`papers/bassily_feldman_talwar_thakurta2019`", docstring, 1, "")  # relative: broken on generated pages
    assert _missing("(card section 3.3)", docstring, 1, "") and _missing("the card's step", docstring, 1, "")
    assert not _missing("``card`` (the deviations); card : str; discarded", docstring, 1, "")
    assert _missing("penalty (``seed004`` ch. 4)", docstring, 1, "")
    assert not _missing(":doc:`/papers/wang2021`, doc/papers/wang2021.rst", docstring, 1, "")
    assert not _missing("   seed004", ROOT / "doc" / "papers" / "index.rst", 1, "")  # toctree entry


def test_package_docstrings_cite_only_repository_files():
    missing = []
    for module in _package_modules():
        path = Path(module.__file__)
        checked = set()
        for text, line, label in _python_texts(path):
            missing += _missing(text, path, line, label)
            checked.add(inspect.cleandoc(text))
        for qualname, doc in _runtime_docs(module):  # docstrings set at run time, or inherited
            if doc not in checked:
                missing += [(f"{module.__name__}.{qualname} (__doc__)", token)
                            for _, token in _missing(doc, path, 1, "")]
    from skdp.solvers import list_solvers

    for row in list_solvers():
        for key, value in row.items():
            if isinstance(value, str):
                missing += [(f"list_solvers()[{row['solver']!r}][{key!r}]", token)
                            for _, token in _missing(value, ROOT / "skdp" / "solvers" / "__init__.py", 1, "")]
    if missing:
        pytest.fail(HEADER + "\n".join(f"{place}: {token}" for place, token in sorted(set(missing))))


def _documentation_files():
    files = [ROOT / "README.md"]
    files += sorted(p for p in (ROOT / "doc").rglob("*") if p.suffix in (".rst", ".py")
                    and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts))
    files += sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "examples").glob("*.rst"))
    files += sorted((ROOT / "benchmarks").glob("*.py"))
    return files


@pytest.mark.parametrize("path", _documentation_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_documentation_cites_only_repository_files(path):
    if path.suffix == ".py":
        texts = list(_python_texts(path))
    else:
        texts = [(path.read_text(encoding="utf-8"), 1, "text")]
    missing = [m for text, line, label in texts for m in _missing(text, path, line, label)]
    if missing:
        pytest.fail(HEADER + "\n".join(f"{place}: {token}" for place, token in missing))


def test_every_solver_cites_its_paper_page():
    from skdp.solvers import list_solvers

    for row in list_solvers():
        assert row["source"] and row["card"], row["solver"]
        assert row["reference"].startswith("doc/papers/") and (ROOT / row["reference"]).is_file(), row["solver"]


# ----------------------------------------------------------------------------- solver lists vs the registry
def _estimators_with_solvers():
    from skdp.solvers import estimator_solvers

    out = []
    for name in sorted(skdp.__all__):
        obj = getattr(skdp, name)
        if inspect.isclass(obj) and estimator_solvers(obj):
            out.append(obj)
    return out


@pytest.mark.parametrize("est", _estimators_with_solvers(), ids=lambda e: e.__name__)
def test_docstring_solver_list_is_the_registry(est):
    """The ``solver : {...}`` line of every estimator's docstring names exactly what it accepts."""
    from skdp.solvers import estimator_solvers, list_solvers

    match = re.search(r"^\s*solver : \{([^}]*)\}", est.__doc__, flags=re.M)
    assert match, f"{est.__name__}'s docstring has no 'solver : {{...}}' line"
    documented = re.findall(r'"([a-z0-9_]+)"', match.group(1))
    assert documented == ["auto"] + estimator_solvers(est), (
        f"{est.__name__}'s docstring lists {documented}; the registry gives {['auto'] + estimator_solvers(est)}")
    defaults = [r["solver"] for r in list_solvers(est) if r["default"]]
    assert len(defaults) == 1
    text = " ".join(est.__doc__.split())
    assert any(f'``"auto"`` {verb} ``"{defaults[0]}"``' in text for verb in ("uses", "is")), (
        f"{est.__name__}'s docstring does not say that solver='auto' runs {defaults[0]!r}")


def test_every_registered_solver_is_reachable_from_an_estimator():
    from skdp.solvers import SOLVERS, estimator_solvers

    reachable = {s for est in _estimators_with_solvers() for s in estimator_solvers(est)}
    assert reachable == set(SOLVERS)


# ----------------------------------------------------------------------------- tables of numbers come from code
def _readme_tables():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "benchmarks" / "readme_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generated_pages(tables):
    return {path: path.read_text() for path in tables.PAGES}


def test_solver_table_is_generated_from_the_registry():
    tables = _readme_tables()
    texts = _generated_pages(tables)
    page = tables.where("solvers", texts)
    assert tables.blocks(texts[page], page)["solvers"] == tables.render(tables.solvers(), page), (
        f"{page.relative_to(ROOT)}'s solver table is stale: run python benchmarks/readme_tables.py solvers")


def _rst_table_lines(text):
    """The lines of every table in reStructuredText ``text``: ``list-table`` / ``csv-table`` / ``table``
    directive bodies, grid tables (``+---+`` / ``| a |``) and simple tables (between ``===  ===`` borders)."""
    lines, out, i = text.splitlines(), [], 0
    border = re.compile(r"^\s*=+( +=+)+\s*$")
    while i < len(lines):
        line = lines[i]
        directive = re.match(r"^(\s*)\.\. (list-table|csv-table|table)::", line)
        if directive:
            indent = len(directive.group(1))
            i += 1
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                out.append(lines[i])
                i += 1
            continue
        if line.lstrip().startswith(("+-", "+=", "|")):
            out.append(line)
        elif border.match(line):
            j = i + 1
            while j < len(lines) and lines[j].strip():
                out.append(lines[j])
                j += 1
        i += 1
    return out


def test_rst_table_lines_finds_every_kind_of_table():
    text = ("Text 1.5 outside.\n\n.. list-table::\n   :header-rows: 1\n\n   * - a\n     - 0.25\n\nAfter 2.5.\n\n"
            "+-----+\n| 3.5 |\n+-----+\n\n=====  =====\nx      4.5\n=====  =====\n")
    found = [line for line in _rst_table_lines(text) if re.search(r"\d\.\d", line)]
    assert found == ["     - 0.25", "| 3.5 |", "x      4.5"]


def test_tables_of_numbers_are_generated():
    """Every table row with a measured number (a decimal) in the README and in the doc pages that hold the
    generated tables sits in a block the benchmark script writes, and every block is on exactly one page."""
    tables = _readme_tables()
    texts = _generated_pages(tables)
    for name in tables.GENERATORS:
        tables.where(name, texts)  # LookupError unless exactly one page holds exactly one such block
    found = {name for path, text in texts.items() for name in tables.blocks(text, path)}
    assert found == set(tables.GENERATORS)
    typed = []
    for path, text in texts.items():
        outside = tables._pattern(path).sub("", text)
        rows = ([line for line in outside.splitlines() if line.startswith("|")] if path.suffix == ".md"
                else _rst_table_lines(outside))
        typed += [f"{path.relative_to(ROOT)}: {line}" for line in rows if re.search(r"\d\.\d", line)]
    assert not typed, f"table rows typed by hand (generate them in benchmarks/readme_tables.py): {typed}"


def test_generated_rst_tables_keep_every_cell():
    """The doc pages' tables are the generators' Markdown, cell for cell."""
    tables = _readme_tables()
    md = "| a | b |\n|---|---|\n| `x` | - |\n| 0.5 ± 0.1 | l1|l2 |\n\n| c |\n|---|\n| 2 |"
    rst = tables.to_rst(md)
    assert rst.count(".. list-table::") == 2
    cells = re.findall(r"^   (?:\* |  )- (.*)$", rst, flags=re.M)
    assert cells == ["a", "b", "``x``", r"\-", "0.5 ± 0.1", "l1|l2", "c", "2"]
