"""The library's imports run one way (docs/layout.md): read from the source with ``ast`` --
every import, at module top and inside functions -- and checked against the declared order.

- no import cycle among ``re2_tf``'s modules;
- no import against the order below (a module imports its own level or lower);
- no ``re2_tf`` module imports the lab (``re2_lab``);
- an import inside a function says why it is not at module top (a ``# lazy:`` comment on it or
  on the line above its group): start-up time or an optional extra;
- the lab imports the library's public names only (no ``_private`` module or name).

Each check is also run on a small planted graph, so a check that cannot fail would be seen.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIBRARY = "re2_tf"
LAB = "re2_lab"

#: The declared order, lowest first: (module prefix, level). A module's level is that of its
#: longest matching prefix. docs/layout.md shows the same table.
ORDER = (
    ("re2_tf.errors", 0),
    ("re2_tf.machine", 0),
    ("re2_tf._compat", 0),
    ("re2_tf.metrics", 0),
    ("re2_tf.serving.files", 0),
    ("re2_tf.layers", 1),
    ("re2_tf.models", 2),
    ("re2_tf.data", 3),
    ("re2_tf.config", 4),
    ("re2_tf.train_flags", 4),
    ("re2_tf.runs", 4),
    ("re2_tf.training", 4),
    ("re2_tf.evaluation", 4),
    ("re2_tf.serving", 5),
    ("re2_tf.benchmarking", 5),
    ("re2_tf.api", 6),
    ("re2_tf.matcher", 6),
    ("re2_tf.inference", 6),
    ("re2_tf.analysis", 6),
    ("re2_tf.cli", 7),
    ("re2_tf.train", 8),
    ("re2_tf.analyze", 8),
    ("re2_tf.benchmark", 8),
    ("re2_tf", 8),
)


def module_name(path, root):
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules_of(package):
    root = REPO / package
    return {module_name(p, root): p for p in sorted(root.rglob("*.py")) if "tests" not in p.parts}


def _resolve(name, known):
    """The longest prefix of ``name`` that is a known module (``from re2_tf import runs`` is
    an import of ``re2_tf.runs``; ``from re2_tf.runs import load_config`` of ``re2_tf.runs``)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in known:
            return ".".join(parts[:k])
    return None


def imports_of(path, name, known):
    """``[(imported module, line, names, statement node, in a function)]`` of one file: every
    ``import``/``from ... import`` anywhere in it, resolved to modules of ``known`` or kept as
    written for others."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_function = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function.update(id(sub) for sub in ast.walk(node) if sub is not node)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        local = id(node) in in_function
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((_resolve(alias.name, known) or alias.name, node, [], local))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package this file is in
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [alias.name for alias in node.names]
            targets = {
                _resolve(f"{base}.{n}", known) or _resolve(base, known) or base for n in names
            }
            for target in sorted(targets):
                found.append((target, node, names, local))
    return found


def graph(package):
    mods = modules_of(package)
    known = set(mods) | set(modules_of(LAB)) | set(modules_of(LIBRARY))
    edges = {}
    for name, path in mods.items():
        edges[name] = imports_of(path, name, known)
    return mods, edges


def level(module):
    best = None
    for prefix, value in ORDER:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, value)
    return None if best is None else best[1]


def cycles(nodes, edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def internal_edges(mods, edges):
    """``{module: {imported re2_tf module}}``, without a module's imports of its own parent
    packages (importing ``re2_tf.models.spec`` runs ``re2_tf.models/__init__`` anyway)."""
    out = {}
    for name, found in edges.items():
        targets = set()
        for target, *_ in found:
            if target in mods and target != name and not name.startswith(target + "."):
                targets.add(target)
        out[name] = targets
    return out


def upward(edges):
    return sorted(
        (src, dst, level(src), level(dst))
        for src, dsts in edges.items()
        for dst in dsts
        if level(src) is not None and level(dst) is not None and level(dst) > level(src)
    )


def unexplained_local_imports(mods, edges):
    """Imports inside functions without a ``# lazy:`` comment on their line or in the comment
    lines just above their group of imports."""
    missing = []
    for name, found in edges.items():
        lines = mods[name].read_text(encoding="utf-8").splitlines()
        for _, node, _, local in found:
            if not local:
                continue
            own = " ".join(lines[node.lineno - 1 : node.end_lineno])
            k = node.lineno - 2
            while k >= 0 and lines[k].lstrip().startswith(("import ", "from ")):
                k -= 1
            comment = []  # the comment lines just above the group of imports
            while k >= 0 and lines[k].lstrip().startswith("#"):
                comment.append(lines[k].strip())
                k -= 1
            if "# lazy:" not in own and not any(c.startswith("# lazy:") for c in comment):
                missing.append(f"{mods[name].relative_to(REPO)}:{node.lineno}")
    return sorted(set(missing))


@pytest.fixture(scope="module")
def library():
    mods, edges = graph(LIBRARY)
    return mods, edges, internal_edges(mods, edges)


def test_every_library_module_has_a_declared_level(library):
    mods, _, _ = library
    assert [m for m in mods if level(m) is None] == []


def test_the_library_has_no_import_cycle(library):
    mods, _, internal = library
    assert cycles(mods, internal) == []


def test_no_library_import_goes_up_the_declared_order(library):
    _, _, internal = library
    assert upward(internal) == []


def test_the_library_never_imports_the_lab(library):
    _, edges, _ = library
    assert [
        (name, target)
        for name, found in edges.items()
        for target, *_ in found
        if target == LAB or target.startswith(LAB + ".")
    ] == []


def test_every_import_inside_a_function_says_why(library):
    mods, edges, _ = library
    assert unexplained_local_imports(mods, edges) == []


def test_the_lab_uses_the_librarys_public_names_only():
    mods, edges = graph(LAB)
    private = []
    for name, found in edges.items():
        for target, node, names, _ in found:
            if not (target == LIBRARY or target.startswith(LIBRARY + ".")):
                continue
            written = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            hidden = [p for p in written.split(".") if p.startswith("_")]
            hidden += [n for n in names if n.startswith("_")]
            if hidden:
                private.append(f"{mods[name].relative_to(REPO)}:{node.lineno} {hidden}")
    assert private == []


# ------------------------------------------------------------------ the checks can fail
def test_the_checks_find_a_planted_cycle_an_upward_import_and_an_unexplained_lazy_import(
    tmp_path, monkeypatch
):
    package = tmp_path / "re2_tf"
    (package / "layers").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "layers" / "__init__.py").write_text("")
    (package / "layers" / "a.py").write_text("from re2_tf.models import b\n")  # 1 imports 2
    (package / "models").mkdir()
    (package / "models" / "__init__.py").write_text("")
    (package / "models" / "b.py").write_text(
        "def f():\n    from re2_tf.layers import a\n"  # a cycle, and a function-local import
        "\n\ndef g():\n    # lazy: start-up\n    import json\n"  # explained
    )
    monkeypatch.setattr(__import__(__name__), "REPO", tmp_path)
    mods, edges = graph("re2_tf")
    internal = internal_edges(mods, edges)
    assert cycles(mods, internal) == [["re2_tf.layers.a", "re2_tf.models.b"]]
    assert upward(internal) == [("re2_tf.layers.a", "re2_tf.models.b", 1, 2)]
    assert unexplained_local_imports(mods, edges) == ["re2_tf/models/b.py:2"]
