"""Compiling rewritten sweeps with numba: the factory's text, its helpers, the dispatcher.

One ``Compiled`` per adjoint (and per scalar variant): the fused ``<name>_grad`` for an
entry function, or the ``(fwd, bwd)`` pair for a callee, both ``numba.njit`` dispatchers
made from the factory's text registered with linecache (numba reads the source from there
for its messages; srcgrad maps those lines back to the user's).
"""
from __future__ import annotations

__all__ = ["Compiled", "compiled_gradient", "compiled_pair"]

import ast
import threading
import types
import weakref
from typing import Any, NamedTuple

import gast
import numba

from .. import codegen
from ..transforms import normalize, prepare
from . import runtime as jit_runtime
from .errors import JitUnsupportedError, located_error
from .inputs import RefusedRead, external_reads
from .sweeps import JitRewriteError, fresh_name, fuse, runtime_calls
from .sweeps import compiled_pair as pair_tree

_LOCK = threading.RLock()
_ENTRIES: "weakref.WeakKeyDictionary[Any, Compiled]" = weakref.WeakKeyDictionary()
_PAIRS: "weakref.WeakKeyDictionary[Any, Compiled]" = weakref.WeakKeyDictionary()
_BUILDING: set = set()


class Compiled(NamedTuple):
    """A compiled variant of one adjoint."""

    source: str  # the text shown by srcgrad.source (the factory and what it returns)
    filename: str  # its linecache pseudo-filename
    functions: tuple  # numba dispatchers: (grad,) or (fwd, bwd)
    key: tuple  # (source, build) of the interpreted adjoint it was made from
    inputs: tuple  # Sources of the values passed on every call, in parameter order (after
    # the user's for an entry, before them for a callee's pair): see inputs.py
    frozen: tuple  # (Source, value) of what numba froze into the code, its callees' too:
    # rebuilt when one is rebound (numba reads a global once; Python on every call)
    callees: tuple  # (adjoint, its build) of each callee compiled in: rebuilt when one is

    def current(self, adj, fn=None) -> bool:
        """Whether this is still what ``adj`` compiles to: same build of the adjoint (a
        rebound helper or a new rule rebuilds it), of its callees, same frozen values (read
        for ``fn``, whose closure cells may differ from ``adj.fn``'s)."""
        # (loops, not all(...) over generators: this runs before every compiled call)
        if adj.stale():
            adj.functions_for()  # (rebuilds the interpreted sweeps first)
        if self.key[1] is not _build_of(adj) or self.key[0] != adj.source:
            return False
        for callee, build in self.callees:
            if callee.stale() or _build_of(callee) is not build:
                return False
        fn = adj.fn if fn is None else fn
        try:
            for source, value in self.frozen:
                if source.read(fn) is not value:
                    return False
        except Exception:  # noqa: BLE001 (deleted, an empty cell: the rebuild says what)
            return False
        return True

    def arguments(self, fn) -> list:
        """The values passed after the user's arguments, read now."""
        return [source.read(fn) for source in self.inputs]


def _build_of(adj):
    """What changes each time an adjoint is (re)built: its compiled factory."""
    return getattr(adj, "_make", None)


def _is_adjoint(obj) -> bool:
    return all(hasattr(obj, a) for a in ("generate", "fn", "wrt", "scalar_mode"))


def _generated_tree(adj) -> tuple[ast.Module, Any]:
    """The adjoint's generated ``_make`` module as an ``ast`` tree, and its context."""
    ctx = prepare(adj.fn, adj.wrt)
    ctx.scalar_mode = adj.scalar_mode
    module = adj.generate(normalize(ctx), ctx)
    return gast.gast_to_ast(module), ctx


def _bind_helpers(tree: ast.Module, ctx, adj, entry: bool) -> tuple[dict, list, tuple]:
    """The callee adjoints' compiled pairs by name, the values the factory's parameters get,
    and the callee adjoints with their builds."""
    if getattr(ctx, "closure", None) and not entry:
        raise JitUnsupportedError(
            f"{adj.fn.__qualname__}() reads variables of an enclosing function "
            f"({', '.join(sorted(ctx.closure))}) and is called from a compiled gradient; "
            f"compiled callees need module-level functions: pass those values as arguments, "
            f"or use jit=False.")
    callees, values, adjoints = {}, [jit_runtime], []
    params = [a.arg for a in tree.body[0].args.args]
    for name, obj in zip(params[1:], ctx.helpers.values()):
        if _is_adjoint(obj):
            callees[name] = _callee_pair(obj)
            values.extend(callees[name].functions)
            adjoints.append((obj, _build_of(obj)))
        elif getattr(obj, "__name__", None) in jit_runtime.RULE_HELPERS and \
                getattr(obj, "__module__", "").startswith("srcgrad.rules"):
            values.append(jit_runtime.RULE_HELPERS[obj.__name__])
        else:
            label = getattr(obj, "__qualname__", type(obj).__name__)
            use = next((n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
                        and getattr(n, "lineno", None)), None)
            raise located_error(
                f"the gradient here needs '{label}', which has no compiled form (a rule "
                f"helper numba cannot run, a function passed in or made at run time, a "
                f"method)", ctx, use)
    # the closure's cells, as the factory's last parameters: what numba may freeze
    # (modules, functions) is checked per call; data is passed instead (inputs.py)
    values.extend(ctx.closure[name] for name in params[1 + len(ctx.helpers):])
    return callees, values, tuple(adjoints)


def _callee_pair(adj) -> Compiled:
    """The compiled ``(fwd, bwd)`` of a callee adjoint."""
    if _is_adjoint(adj) and type(adj).__name__ != "Adjoint":
        raise JitUnsupportedError(f"a call of {adj.fn.__qualname__}() bound at run time")
    return compiled_pair(adj)


def _give_defaults(tree: ast.Module, fn, ctx) -> None:
    """A callee's compiled forward sweep with ``fn``'s defaults (numbers, bools, None),
    written into its signature: numba binds omitted and keyword arguments at compile time."""
    if fn.__kwdefaults__:
        raise located_error(f"{fn.__qualname__}() has keyword-only parameters", ctx)
    defaults = fn.__defaults__ or ()
    if not all(d is None or isinstance(d, (bool, int, float)) for d in defaults):
        raise located_error(f"{fn.__qualname__}() has a default that is not a number, a "
                            f"bool or None", ctx)
    fwd = next(s for s in tree.body[0].body if isinstance(s, ast.FunctionDef))
    fwd.args.defaults = [ast.Constant(value=d) for d in defaults]


def _check_runtime_calls(tree: ast.Module, ctx) -> None:
    unsupported = [(name, node) for name, node in runtime_calls(tree)
                   if name not in jit_runtime.SUPPORTED]
    if unsupported:
        name, node = unsupported[0]
        raise located_error(
            f"this needs srcgrad.runtime.{name}, which has no compiled form "
            f"(containers, objects, in-place updates, calls resolved at run time)",
            ctx, node)


def _compile(tree: ast.Module, ctx, adj, values: list, label: str) -> tuple[str, str, tuple]:
    """The text of ``tree``, its pseudo-filename, and njit dispatchers of what it makes."""
    source = codegen.to_source(tree)
    src = ctx.src
    lines = codegen.line_map(tree, source, lambda node: src.first_line + node.lineno - 1)
    namespace = codegen.compile_source(
        source, label, {}, codegen.UserLines(src.filename, adj.fn.__name__, lines))
    filename = namespace["__srcgrad_file__"]
    make = namespace["_make"]
    make = types.FunctionType(make.__code__, getattr(adj.fn, "__globals__", {}), "_make")
    made = make(*values)
    made = made if isinstance(made, tuple) else (made,)
    # a callee's sweeps are called only from compiled code: no Python entry point (numba
    # cannot box a tuple of lists, the stacks in a callee's saved values)
    options = {} if len(made) == 1 else {"no_cpython_wrapper": True}
    return source, filename, tuple(numba.njit(fn, **options) for fn in made)


def _pass_inputs(tree: ast.Module, ctx, adj, entry: bool, callees: dict) -> tuple:
    """The compiled functions of ``tree`` taking, as parameters, every array (and other
    data) they or their callees read from outside (inputs.py): the sources of those
    parameters, in order, and of what stays frozen in the code."""
    make = tree.body[0]
    funcs = [s for s in make.body if isinstance(s, ast.FunctionDef)]
    bound = {a.arg for a in make.args.args}
    try:
        reads = external_reads(funcs, bound, set(ctx.closure), adj.fn)
    except RefusedRead as e:
        raise located_error(e.what, ctx, e.node) from None
    params = {source.key: param for param, source in reads.passed}
    sources = [source for _, source in reads.passed]
    frozen = list(reads.frozen)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)} | set(params.values())
    for pair in callees.values():  # (what a callee reads, its caller passes it)
        frozen.extend(pair.frozen)
        for source in pair.inputs:
            if source.key not in params:
                params[source.key] = fresh_name("_" + "_".join(source.path), taken)
                sources.append(source)
    _pass_to_callees(funcs, callees, params)
    new = [ast.arg(arg=params[source.key]) for source in sources]
    for func in funcs:
        if entry:  # (the wrapper passes every argument, defaults applied)
            func.args.args = func.args.args + new
            func.args.defaults = []
        else:
            func.args.args = new + func.args.args
    return tuple(sources), tuple(frozen)


def _pass_to_callees(funcs: list, callees: dict, params: dict) -> None:
    """Each call of a callee's compiled sweep gets, first, the values that callee reads."""
    sweeps = {f"{name}_{part}": pair for name, pair in callees.items()
              for part in ("fwd", "bwd")}
    for func in funcs:
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in sweeps:
                first = [ast.Name(id=params[s.key], ctx=ast.Load())
                         for s in sweeps[node.func.id].inputs]
                node.args = first + node.args


def _build(adj, entry: bool) -> Compiled:
    key = (adj.source, _build_of(adj))
    with _LOCK:
        if id(adj) in _BUILDING:
            raise JitUnsupportedError(
                f"{adj.fn.__qualname__}() is recursive; numba cannot compile recursive "
                f"gradients here: use jit=False.")
        _BUILDING.add(id(adj))
        try:
            tree, ctx = _generated_tree(adj)
            callees, values, adjoints = _bind_helpers(tree, ctx, adj, entry)
            adjoint_of = {b: x for x, b in ctx.namer.adjoints.items()}
            try:
                if entry:
                    tree, _ = fuse(tree, callees, adjoint_of)
                else:
                    tree = pair_tree(tree, callees, adjoint_of)
                    _give_defaults(tree, adj.fn, ctx)
            except JitRewriteError as e:
                raise located_error(e.what, ctx, e.node) from None
            _check_runtime_calls(tree, ctx)
            inputs, frozen = _pass_inputs(tree, ctx, adj, entry, callees)
            kind = "jit" if entry else "jit pair"
            label = f"{adj.fn.__name__} {'scalar ' if adj.scalar_mode else ''}{kind}"
            source, filename, functions = _compile(tree, ctx, adj, values, label)
            return Compiled(source, filename, functions, key, inputs, frozen, adjoints)
        finally:
            _BUILDING.discard(id(adj))


def _cached(cache, adj, entry: bool, fn=None) -> Compiled:
    with _LOCK:
        found = cache.get(adj)
        if found is None or not found.current(adj, fn):
            found = cache[adj] = _build(adj, entry)
        return found


def compiled_gradient(adj, fn=None) -> Compiled:
    """The fused, compiled ``<name>_grad`` of an entry function's adjoint, for ``fn`` (a
    function sharing its build, whose closure cells it reads; by default ``adj.fn``)."""
    return _cached(_ENTRIES, adj, True, fn)


def compiled_pair(adj) -> Compiled:
    """The compiled forward and backward sweeps of a callee's adjoint."""
    return _cached(_PAIRS, adj, False)
