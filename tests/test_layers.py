"""The package reads bottom-up (issue 14): no module imports one of a higher layer, at module
level or inside a function, except the known crossings listed here, which issue 14 removes.
A new upward import fails this test; removing a listed one fails it too, so the list shrinks.
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "srcgrad"

# lower number = lower layer; a module may import its own layer and those below
LAYERS = [
    (0, ("srcgrad.errors", "srcgrad.naming", "srcgrad.codegen", "srcgrad.source")),
    (1, ("srcgrad.runtime",)),  # values: tape, zeros, accumulation, unbroadcast
    (1, ("srcgrad.vspace",)),  # registered vector spaces: their zeros, add and scale
    (2, ("srcgrad.rules", "srcgrad.batching")),  # derivative rules, batch rules
    (2, ("srcgrad.adapters",)),  # fixed-arity twins of *args functions, compiled source
    (2, ("srcgrad.signature",)),  # function keys, parameter names, wrt, integer arguments
    (2, ("srcgrad.checkpoint",)),  # checkpointed loops: markers, schedules, loop primitive
    (2, ("srcgrad.tree",)),  # pytrees: flatten/unflatten (rules/trees.py differentiates them)
    (3, ("srcgrad.transforms",)),
    (4, ("srcgrad.generated", "srcgrad.boundary", "srcgrad.tracebacks",
         "srcgrad.call_records")),  # (call_records: what run-time dispatch records)
    (4, ("srcgrad.jit",)),  # compiled gradients: rewrites generated sweeps, api delegates
    (5, ("srcgrad.api", "srcgrad.api_forward", "srcgrad.vmap", "srcgrad.show",
         "srcgrad.dispatch")),  # dispatch: calls resolved at run time (runtime.call_fwd...)
    # the Tensor facade, bottom-up: no Tensor; recording ops; the backward pass; the class
    (6, ("srcgrad.autograd.grad_mode", "srcgrad.autograd.graph", "srcgrad.autograd.ops",
         "srcgrad.autograd.specialize", "srcgrad.autograd.dtypes", "srcgrad.autograd.printing",
         "srcgrad.autograd.generator")),
    (7, ("srcgrad.autograd.dispatch",)),  # receives the Tensor class through bind()
    (8, ("srcgrad.autograd.engine", "srcgrad.autograd.function",
         "srcgrad.autograd.backward_source")),
    (8, ("srcgrad.autograd",)),  # the package (torch.autograd) imports the modules above
    (9, ("srcgrad._tensor", "srcgrad.autograd.tensor_autograd", "srcgrad.autograd.tensor_data",
         "srcgrad.autograd.tensor_math", "srcgrad.autograd.tensor_reduce",
         "srcgrad.autograd.tensor_shape", "srcgrad.autograd.tensor_inplace")),  # Tensor, methods
    (10, ("srcgrad.torch_api", "srcgrad.nn", "srcgrad.function")),
    (11, ("srcgrad.__init__", "srcgrad.__main__")),
    (11, ("srcgrad",)),  # the package itself, imported whole
]

# (importer, imported): the crossings that exist today, each inside a function
KNOWN: set = set()  # (run-time dispatch moved out of runtime.py: srcgrad/dispatch.py)


def layer_of(module: str) -> int:
    best = None
    for level, prefixes in LAYERS:
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (level, len(prefix))
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return best[0]


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts)


def import_source(node: ast.ImportFrom, package: str) -> str:
    """The module ``from ... import`` reads, written in ``package``."""
    if not node.level:
        return node.module or ""
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _nodes_in_functions(tree):
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                             ast.AsyncFunctionDef))]
    return list({id(n): n for f in functions for n in ast.walk(f)}.values())


def imported_modules(path: pathlib.Path, in_functions: bool = False):
    """Every srcgrad module ``path`` imports (``from . import x`` names submodules); with
    ``in_functions``, those it imports inside a function."""
    package = module_name(path).rpartition(".")[0]  # (srcgrad.x.__init__ -> srcgrad.x)
    tree = ast.parse(path.read_text())
    for node in _nodes_in_functions(tree) if in_functions else ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = import_source(node, package)
            if not target.startswith("srcgrad"):
                continue
            if node.module is None:  # from . import x: x is a submodule
                for alias in node.names:
                    yield f"{target}.{alias.name}"
            else:
                yield target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("srcgrad"):
                    yield alias.name


def crossings():
    found = set()
    for path in sorted(ROOT.rglob("*.py")):
        importer = module_name(path)
        for imported in imported_modules(path):
            if layer_of(imported) > layer_of(importer):
                found.add((importer, imported))
    return found


def test_no_module_imports_a_higher_layer():
    new = crossings() - KNOWN
    assert not new, "upward imports (a lower layer must not import a higher one):\n" + \
        "\n".join(f"  {a} imports {b}" for a, b in sorted(new))


def test_the_known_crossings_still_exist():
    gone = KNOWN - crossings()
    assert not gone, "remove these from KNOWN, they are fixed:\n" + \
        "\n".join(f"  {a} -> {b}" for a, b in sorted(gone))


@pytest.mark.parametrize("module", ["srcgrad.runtime", "srcgrad.rules.registry"])
def test_low_layers_import_only_numpy_and_lower_layers_at_module_level(module):
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    for node in top:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
        for name in names:
            if node.__class__ is ast.ImportFrom and node.level:
                continue  # relative: checked by the layer test
            assert not (name or "").startswith("srcgrad.api"), (module, name)


def _dispatch_names_imported(path: pathlib.Path):
    """Names ``path`` takes from srcgrad.autograd.dispatch, by import or as ``dispatch.x``."""
    package = module_name(path).rpartition(".")[0]
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = (f"{base}.{node.module}" if node.module else base) if node.level \
                else node.module
            if target == "srcgrad.autograd.dispatch":
                yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "dispatch":
            yield node.attr


def test_no_module_uses_private_names_of_the_op_recording_api():
    """autograd/dispatch.py documents its public API (apply, binary, wrap...); the rest of it
    may change without notice."""
    private = []
    for path in sorted(ROOT.rglob("*.py")):
        if module_name(path) == "srcgrad.autograd.dispatch":
            continue
        private += [f"{module_name(path)}: {name}" for name in _dispatch_names_imported(path)
                    if name.startswith("_")]
    assert not private, "private names of autograd.dispatch used:\n  " + "\n  ".join(private)


FACADE = ("srcgrad._tensor", "srcgrad.autograd", "srcgrad.torch_api", "srcgrad.nn")


def test_the_facade_imports_the_package_at_module_level_only():
    """An import inside a function hides a layer crossing (or a cycle) until it runs."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        name = module_name(path)
        if not name.startswith(FACADE):
            continue
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                own = isinstance(node, ast.ImportFrom) and \
                    (node.level or (node.module or "").startswith("srcgrad"))
                own = own or (isinstance(node, ast.Import) and
                              any(a.name.startswith("srcgrad") for a in node.names))
                if own:
                    found.append(f"{name}:{node.lineno} in {fn.name}()")
    assert not found, "function-level imports of srcgrad modules:\n  " + "\n  ".join(found)


# -- imports inside functions only where the layers cannot order them ---------------------------
# A function-level import of a lower layer hides a dependency the module could state at its
# top. Those left inside functions import a module of the same layer that imports them back
# (api <-> api_forward <-> vmap: a gradient differentiated again), or jit/build.py, which
# imports numba, an optional extra, when a compiled gradient is first asked for.
LAZY_DOWNWARD: set = set()


def lazy_downward_imports() -> set:
    found = set()
    for path in sorted(ROOT.rglob("*.py")):
        importer = module_name(path)
        for imported in imported_modules(path, in_functions=True):
            if layer_of(imported) < layer_of(importer):
                found.add((importer, imported))
    return found


def test_lower_layers_are_imported_at_the_top():
    new = lazy_downward_imports() - LAZY_DOWNWARD
    assert not new, "import these at the top of the module (a lower layer cannot import it " \
        "back):\n" + "\n".join(f"  {a} imports {b} in a function" for a, b in sorted(new))


def test_the_allowed_lazy_imports_still_exist():
    gone = LAZY_DOWNWARD - lazy_downward_imports()
    assert not gone, "remove these from LAZY_DOWNWARD, they are fixed:\n" + \
        "\n".join(f"  {a} -> {b}" for a, b in sorted(gone))


# -- no module reaches into another's private names -------------------------------------------
# (importer, imported module): underscore names that still cross modules. Each is owned by
# work on that code in progress (issue 14): the Tensor facade and autograd/ share their
# private dispatch helpers, and transforms/reverse.py is being split; remove an entry when
# its names become public.
PRIVATE_CROSSINGS = {
    # pickles of tensors made before the facade's split name _tensor._rebuild
    ("srcgrad._tensor", "srcgrad.autograd.tensor_data"),
}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(source: str, module: str):
    """``(imported module, name)`` for each underscore name the source of ``module`` takes
    from a srcgrad module: ``from .m import _x``, and ``m._x`` on an imported module ``m``. A
    private submodule (``from ..rules import _helpers``) is a module, not a private name."""
    package = module.rpartition(".")[0]  # (srcgrad.x.__init__ -> srcgrad.x)
    tree = ast.parse(source)
    modules = {}  # local name -> srcgrad module it is bound to
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        target = import_source(node, package)
        if not target.startswith("srcgrad"):
            continue
        for alias in node.names:
            submodule = f"{target}.{alias.name}"
            if (ROOT.parent / (submodule.replace(".", "/") + ".py")).exists() or \
                    (ROOT.parent / submodule.replace(".", "/")).is_dir():
                modules[alias.asname or alias.name] = submodule
            elif _is_private(alias.name):
                yield target, alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in modules and _is_private(node.attr):
            yield modules[node.value.id], node.attr


def private_crossings() -> dict:
    found: dict = {}
    for path in sorted(ROOT.rglob("*.py")):
        importer = module_name(path)
        for imported, name in private_imports(path.read_text(), importer):
            if imported != importer:
                found.setdefault((importer, imported), set()).add(name)
    return found


def test_no_module_imports_another_modules_private_names():
    new = {k: v for k, v in private_crossings().items() if k not in PRIVATE_CROSSINGS}
    assert not new, "private names used across modules (make them public, with a " \
        "docstring, or move them to a module both can import):\n" + \
        "\n".join(f"  {a} uses {b}: {', '.join(sorted(names))}"
                  for (a, b), names in sorted(new.items()))


def test_the_allowed_private_crossings_still_exist():
    gone = PRIVATE_CROSSINGS - set(private_crossings())
    assert not gone, "remove these from PRIVATE_CROSSINGS, they are fixed:\n" + \
        "\n".join(f"  {a} -> {b}" for a, b in sorted(gone))


def test_the_private_name_check_sees_both_spellings():
    source = ("from .api import _hidden, public\nfrom . import runtime\n"
              "from .rules import _helpers\nx = runtime._tape, _helpers.dispatches\n")
    found = set(private_imports(source, "srcgrad.sample"))
    assert found == {("srcgrad.api", "_hidden"), ("srcgrad.runtime", "_tape")}
