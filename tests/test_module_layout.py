"""The package's layout rules, read from the source: no import cycle between skdp's modules, no import of
skdp inside a function (to dodge one), no solver module reading another module's private attributes, and no
branch on a solver's or a loss's name (capabilities say what differs)."""

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "skdp"
MODULES = sorted(ROOT.rglob("*.py"))


def _name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(path):
    name = _name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _resolve(path, node):
    """The skdp modules a ``from ... import`` or ``import`` node names (submodules included), or ``[]``."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "skdp"]
    if node.level:
        base = _package(path).split(".")
        base = base[:len(base) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    if module.split(".")[0] != "skdp":
        return []
    names = {_name(p) for p in MODULES}
    return [module] + [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in names]


def _module_level_imports(path):
    tree = ast.parse(path.read_text())
    found = set()
    for node in tree.body:  # module level only (an ``if``/``try`` at the top included)
        for inner in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                found.update(_resolve(path, inner))
    return found


def test_no_import_cycle_between_modules():
    graph = {_name(p): _module_level_imports(p) for p in MODULES}
    for name, deps in graph.items():
        # importing a package's submodule runs the package first: that is not an edge back to the importer
        graph[name] = {d for d in deps if d in graph and d != name and not name.startswith(d + ".")}
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                cycle = stack[stack.index(dep):] + [dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_no_skdp_import_inside_a_function():
    """Optional dependencies (dask, dp-accounting) are imported lazily; skdp's own modules never are."""
    offenders = []
    for path in MODULES:
        tree = ast.parse(path.read_text())
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(func):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and _resolve(path, node):
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def _own_private_names(tree):
    """The private names a module defines: its functions, classes, class attributes and ``self._x`` assignments."""
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            own.add(node.target.id)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        own.add(t.id)
                    elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        own.add(t.attr)
    return own


def test_solvers_read_no_private_attribute_of_another_module():
    """``x._name`` in skdp/solvers reads only a private name its own module defines (a solver reads a bounded
    design through its public properties, never its private fields)."""
    offenders = []
    for path in sorted((ROOT / "solvers").glob("*.py")):
        tree = ast.parse(path.read_text())
        own = _own_private_names(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and node.attr not in own):
                offenders.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert not offenders, offenders


#: the registered solver and loss ids (a comparison with one of them is a branch on a name)
_IDS = r"(dp_\w+|noisy_\w+|obj_pert\w*|output_pert|adassp|two_stage|dpsl_kt|phased_sgd|rrpsgd|nsgd_moreau|mpc_\w+|" \
       r"logistic|squared|hinge|multinomial)"


_BRANCH = re.compile(r"(solver|name|loss|mechanism)[\w.()\[\]\"']*\s*(==|!=|\bin\b)\s*[\(\[{]?\s*\"" + _IDS + "\"")


def _branches_on_a_name(line):
    return bool(_BRANCH.search(line)) and not re.match(r"\s*for\b", line)  # a loop over a table is no branch


def test_the_branch_detector_finds_branches():
    assert _branches_on_a_name('        if solver.name == "dp_gd":')
    assert _branches_on_a_name('    clip = 1.0 if loss.name in ("logistic", "hinge") else None')
    assert _branches_on_a_name('        if self._solver() != "mpc_grad_pert":')
    assert not _branches_on_a_name('    for solver in ("dp_ight", "two_stage"):')
    assert not _branches_on_a_name('        if solver.explicit_penalty:')


def test_no_branch_on_a_solver_or_loss_name():
    offenders = [f"{path.relative_to(ROOT)}:{i}" for path in MODULES
                 for i, line in enumerate(path.read_text().splitlines(), 1) if _branches_on_a_name(line)]
    assert not offenders, offenders
