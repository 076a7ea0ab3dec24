"""Compiling rewritten sweeps with numba: the factory's text, its helpers, the dispatcher.

One ``Compiled`` per generated build (an adjoint, its scalar variant, a forward-mode build)
and variant: for an entry function the fused ``<name>_grad`` (seeded with 1), ``<name>_vjp``
(seeded with a cotangent argument) or ``<name>_value`` (the forward sweep without a tape);
for a callee the ``(fwd, bwd)`` pair; the forward mode's ``<name>_jvp`` as generated. All are
``numba.njit`` dispatchers made from the text that ``srcgrad.source`` shows, registered with
linecache (numba reads the source from there for its messages; srcgrad maps those lines back
to the user's).
"""
from __future__ import annotations

__all__ = ["Compiled", "Guard", "compiled_forward", "compiled_gradient", "compiled_pair",
           "compiled_second", "generated_tree", "guard", "is_adjoint", "shown_text"]

import ast
import math
import os
import sys
import threading
import types
import weakref
from typing import Any, NamedTuple

import gast
import numba
import numpy as np

from .. import codegen
from ..generated import describe, runtime_alias
from ..transforms import normalize, prepare
from ..transforms.context import UNBOUND
from . import runtime as jit_runtime
from . import caching, products, second, simd
from .booleans import Pipeline
from .errors import JitUnsupportedError, located_error, location
from .indices import constant_index_lists
from .built_lists import built_lists
from .joined import joined_lists
from .inputs import RefusedRead, check_passed, external_reads
from .lifting import lift_local_functions
from .sweeps import (
    JitRewriteError,
    drop_stand_ins,
    forward_only,
    fresh_name,
    fuse,
    integer_powers,
    matmul_operators,
    reductions_along_an_axis, c_order_reshapes,
    runtime_calls,
    shared_locals_checks,
    simd_math,
)
from .sweeps import compiled_pair as pair_tree

_LOCK = threading.RLock()
# build -> {variant: Compiled}; variants: "grad", "vjp", "value" (entry functions), "pair"
# (a callee's sweeps), "jvp" and "jvp callee" (forward mode), "hvp" and "hvp callee"
# (second.py, hvp.py)
_COMPILED: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()
_BUILDING: set = set()
_ENTRY_VARIANTS = ("grad", "vjp", "value", "jvp", "hvp")


class Compiled(NamedTuple):
    """A compiled variant of one adjoint."""

    source: str  # the text shown by srcgrad.source: a header, then the compiled functions
    filename: str  # its linecache pseudo-filename
    functions: tuple  # numba dispatchers: (grad,), (vjp,), (value,), (jvp,) or (fwd, bwd)
    key: tuple  # (source, build) of the interpreted adjoint it was made from
    inputs: tuple  # Sources of the values passed on every call, in parameter order (after
    # the user's for an entry, before them for a callee's pair): see inputs.py
    frozen: tuple  # (Source, value) of what numba froze into the code, its callees' too:
    # rebuilt when one is rebound (numba reads a global once; Python on every call)
    callees: tuple  # (adjoint, its build) of each callee compiled in: rebuilt when one is
    parts: tuple  # the Compiled of each callee, shown after this one by srcgrad.source

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
        """The values passed after the user's arguments, read now (refused when one has
        become an array of a dtype numba computes with differently from numpy)."""
        values = [source.read(fn) for source in self.inputs]
        check_passed(self.inputs, values, fn)
        return values


class Guard(NamedTuple):
    """Identity checks that, while they all hold (and the rules are at ``version``), imply
    ``compiled.current(adj, fn)`` and ``adj.serves(fn)``: each ``namespace[name] is value``.
    Made once, so that a call checks a few dictionary entries, not the builds again."""

    version: int
    code: Any  # fn.__code__ when made (code can be reassigned)
    checks: tuple  # ((namespace dict, name, value), ...)

    def holds(self, version: int, fn) -> bool:
        if version != self.version or fn.__code__ is not self.code:
            return False
        for namespace, name, value in self.checks:
            # (UNBOUND: a build's assumption that a name is no global, as generated.py reads it)
            if namespace.get(name, UNBOUND) is not value:
                return False
        return True


def guard(compiled: Compiled, adj, fn, version: int) -> Guard | None:
    """A ``Guard`` for calling ``compiled`` (current for ``adj``) on behalf of ``fn``, or
    None when the checks need more than global names (closure cells, module attributes):
    then every call checks the builds."""
    if adj._closure_assumptions or getattr(fn, "__closure__", None):
        return None
    checks, builds, todo = [], [adj], [compiled]
    while todo:  # (the callees' callees too)
        part = todo.pop()
        builds.extend(callee for callee, _ in part.callees)
        todo.extend(part.parts)
    for build in builds:
        if build._closure_assumptions:
            return None
        checks.extend((build._globals, name, obj) for name, obj in build._assumptions)
    for source, value in compiled.frozen:
        if source.where != "global" or len(source.path) != 1:
            return None
        checks.append((source.namespace, source.path[0], value))
    return Guard(version, fn.__code__, tuple(checks))


def _build_of(adj):
    """What changes each time an adjoint is (re)built: its compiled factory."""
    return getattr(adj, "_make", None)


def is_adjoint(obj) -> bool:
    """Whether ``obj`` is one of srcgrad's builds (an adjoint, a forward-mode build)."""
    return all(hasattr(obj, a) for a in ("generate", "fn", "wrt", "scalar_mode"))


def _is_call_site(obj) -> bool:
    """A forward-mode call site (api_forward's): calls the jvp of ``obj.func`` for ``obj.wrt``."""
    return type(obj).__name__ == "CallSite" and hasattr(obj, "func") and hasattr(obj, "wrt")


def _is_forward_call(obj) -> bool:
    """A forward-mode call site, or one picking its jvp per call by the tangents that are
    zero (api_forward's SparseCallSite: same signature)."""
    return _is_call_site(obj) or (type(obj).__name__ == "SparseCallSite"
                                  and hasattr(obj, "fn") and hasattr(obj, "wrt"))


def generated_tree(adj) -> tuple[ast.Module, Any]:
    """The build's generated ``_make`` module as an ``ast`` tree, and its context."""
    ctx = prepare(adj.fn, adj.wrt)
    ctx.rt = runtime_alias(ctx)  # (as the build did: a generated function's own _rt)
    lift_local_functions(ctx)  # (local functions only called: module-level helpers)
    ctx.scalar_mode = adj.scalar_mode
    module = adj.generate(normalize(ctx), ctx)
    return gast.gast_to_ast(module), ctx


class _Helpers(NamedTuple):
    """What a factory's parameters get, and the callees compiled in."""

    callees: set  # factory parameters naming a callee's sweeps (``helper_adj``)
    calls: dict  # name called in the compiled code -> the callee's Compiled
    values: list  # the factory's arguments, in order
    adjoints: tuple  # (callee build, its build) of each callee
    parts: tuple  # the callees' Compiled, once each


def _bind_helpers(tree: ast.Module, ctx, adj, variant: str, resolve) -> _Helpers:
    """The compiled callees and the values the factory's parameters get; ``resolve`` gives
    the forward-mode build a call site of generated jvp code calls. In a compiled hvp (and
    its callees) every tangent is dense (second.py types the lazy zeros), so a call site
    picking its jvp by the tangents that are zero calls the one for all of them (hvp.py)."""
    entry = variant in _ENTRY_VARIANTS
    dense = variant in ("hvp", "hvp callee")
    read = sorted(n for n, v in (getattr(ctx, "closure", None) or {}).items()
                  if not (dense and _srcgrad_own(v)))
    if read and not entry:
        raise JitUnsupportedError(
            f"{adj.fn.__qualname__}() reads variables of an enclosing function "
            f"({', '.join(read)}) and is called from a compiled gradient; "
            f"compiled callees need module-level functions: pass those values as arguments, "
            f"or use jit=False.")
    callees, calls, values, adjoints, parts = set(), {}, [jit_runtime], [], []
    params = [a.arg for a in tree.body[0].args.args]
    for name, obj in zip(params[1:], ctx.helpers.values()):
        if is_adjoint(obj) and obj.kind == "adjoint":
            try:
                pair = _callee_pair(obj)
            except JitUnsupportedError as e:
                raise _at_the_call(e, obj, ctx, _use_of(tree, name), "gradient") from None
            callees.add(name)
            calls.update({f"{name}_fwd": pair, f"{name}_bwd": pair})
            values.extend(pair.functions)
            adjoints.append((obj, _build_of(obj)))
            parts.append(pair)
        elif dense and _is_forward_call(obj) and products.hand_written(
                getattr(obj, "func", obj.fn)):
            callee = _hand_written_jvp(obj)  # (the adjoint of '@': products.py)
            calls[name] = callee
            values.extend(callee.functions)
            parts.append(callee)
        elif resolve is not None and (_is_call_site(obj) or (dense and _is_forward_call(obj))):
            built = resolve(obj)
            try:
                callee = _cached(built, "hvp callee" if dense else "jvp callee",
                                 resolve=resolve)
            except JitUnsupportedError as e:
                raise _at_the_call(e, built, ctx, _use_of(tree, name), "derivative") from None
            calls[name] = callee
            values.extend(callee.functions)
            adjoints.append((built, _build_of(built)))
            parts.append(callee)
        elif getattr(obj, "__name__", None) in jit_runtime.RULE_HELPERS and \
                getattr(obj, "__module__", "").startswith("srcgrad.rules"):
            values.append(jit_runtime.RULE_HELPERS[obj.__name__])
        elif getattr(obj, "__srcgrad_lifted__", False):
            values.append(obj)  # (what resolved calls of a lifted local function: lifting.py)
        elif type(obj).__name__ == "SparseCallSite":
            raise located_error(
                f"forward mode calls {obj.fn.__qualname__}() here with tangents that may be "
                f"zero at run time, picking the helper's jvp per call, which has no compiled "
                f"form yet", ctx, _use_of(tree, name))
        else:
            label = f"the forward mode of {obj.func.__qualname__}()" if _is_call_site(obj) \
                else getattr(obj, "__qualname__", type(obj).__name__)
            raise located_error(
                f"the {'derivative' if resolve else 'gradient'} here needs '{label}', which "
                f"has no compiled form (a rule helper numba cannot run, a function passed in "
                f"or made at run time, a method)", ctx, _use_of(tree, name))
    # the closure's cells, as the factory's last parameters: what numba may freeze
    # (modules, functions) is checked per call; data is passed instead (inputs.py)
    # (a generated function's cells may hold rule helpers: their compiled versions)
    values.extend(_compiled_helper(ctx.closure[name])
                  for name in params[1 + len(ctx.helpers):])
    unique = tuple({id(p): p for p in parts}.values())
    return _Helpers(callees, calls, values, tuple(adjoints), unique)


def _hand_written_jvp(site) -> Compiled:
    """The compiled jvp of a rule helper that products.py writes by hand."""
    name = getattr(site, "func", site.fn).__name__
    text, filename, function = products.helper_jvp(name, tuple(site.wrt))
    header = (f"# srcgrad: compiled forward mode (jvp) of srcgrad.rules.operators.{name} (the "
              f"adjoint of '@'), with respect to its arguments {tuple(site.wrt)}\n")
    return Compiled(header + text, filename, (function,), (None, None), (), (), (), ())


def _srcgrad_own(value) -> bool:
    """Whether ``value`` is srcgrad's (its runtime, a rule helper, a callee's sweeps): what
    the closure of a generated sweep holds, bound once when the sweep was made."""
    name = value.__name__ if isinstance(value, types.ModuleType) else getattr(
        value, "__module__", None)
    return isinstance(name, str) and name.split(".")[0] == "srcgrad"


def _compiled_helper(obj):
    """The compiled version of a rule helper, else ``obj``."""
    if getattr(obj, "__name__", None) in jit_runtime.RULE_HELPERS and \
            getattr(obj, "__module__", "").startswith("srcgrad.rules"):
        return jit_runtime.RULE_HELPERS[obj.__name__]
    return obj


def _at_the_call(e: JitUnsupportedError, built, ctx, node, what: str) -> JitUnsupportedError:
    """``e``, a callee's refusal, located at the line that calls it where the callee is
    srcgrad's own code (a rule's vjp differentiated again for an hvp) or the standard
    library's (``statistics.median``): its line there alone told the user little."""
    fn = getattr(built, "fn", None)
    module = getattr(fn, "__module__", None) or ""
    if _srcgrad_own(fn):
        whose = "srcgrad's "
    elif module.split(".")[0] in sys.stdlib_module_names:
        whose = f"{module}."
    else:
        return e
    reason = str(e).split(", in compiled code of ")[0]
    return located_error(f"the {what} here differentiates {whose}{fn.__qualname__}(), which "
                         f"numba cannot compile ({reason})", ctx, node)


def _use_of(tree, name: str):
    return next((n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
                 and getattr(n, "lineno", None)), None)


def _callee_pair(adj) -> Compiled:
    """The compiled ``(fwd, bwd)`` of a callee adjoint."""
    if is_adjoint(adj) and type(adj).__name__ != "Adjoint":
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


_TITLES = {
    "grad": "compiled gradient of {f}, with respect to {wrt}",
    "vjp": "compiled vjp of {f} (seeded with the cotangent _g), with respect to {wrt}",
    "value": "compiled forward sweep of {f}, without a tape (the value vjp returns)",
    "pair": "compiled forward and backward sweeps of {f}, with respect to {wrt}",
    "jvp": "compiled forward mode (jvp) of {f}, with respect to {wrt}",
    "jvp callee": "compiled forward mode (jvp) of {f}, with respect to {wrt}",
    "hvp callee": "compiled forward mode (jvp) of {f}, with respect to {wrt}, every tangent "
                  "dense",
    "hvp": "compiled forward mode (jvp) of {f}, with respect to {wrt}: Hessian-vector "
           "products",
}


def _header(ctx, adj, variant: str, params: list, values: list, inputs: tuple) -> list:
    """The comment above the shown compiled functions: what they are, what each name the
    factory binds stands for, and the parameters added for values read on every call."""
    src = ctx.src
    name = adj.fn.__qualname__.replace("_make.<locals>.", "")  # (a generated function's)
    where = f"{name} ({os.path.basename(src.filename)}:{src.first_line})"
    title = _TITLES[variant].format(f=where, wrt=", ".join(ctx.wrt_names) or "nothing")
    scalar = ", for scalar arguments" if adj.scalar_mode else ""
    lines = [f"srcgrad: {title}{scalar}; numba nopython mode", "names srcgrad binds:"]
    for name, value in zip(params, values):
        if value is jit_runtime:
            what = "srcgrad.jit.runtime (numba versions of srcgrad.runtime's helpers)"
        elif isinstance(value, numba.core.registry.CPUDispatcher) or hasattr(value, "py_func"):
            what = f"compiled {getattr(value, '__name__', name)} (shown below)"
        else:
            what = describe(value)
        lines.append(f"  {name} = {what}")
    if inputs:
        labels = ", ".join(source.label() for source in inputs)
        lines.append(f"parameters added for data read from outside, passed on every call: "
                     f"{labels}")
    return lines


def _compile(tree: ast.Module, ctx, adj, values: list, variant: str,
             inputs: tuple) -> tuple[str, str, tuple]:
    """The text of ``tree``'s functions as shown, its pseudo-filename, and njit dispatchers
    of the functions its factory returns, compiled from that text."""
    factory = codegen.take_apart(tree)
    make_params = [a.arg for a in tree.body[0].args.args]
    values = [values[make_params.index(p)] for p in factory.params]  # (deduplicated)
    header = _header(ctx, adj, variant, factory.params, values, inputs)
    source = codegen.show(factory.functions, header)
    src = ctx.src
    lines = codegen.line_map(ast.Module(body=factory.functions, type_ignores=[]), source,
                             lambda node: src.first_line + node.lineno - 1)
    label = f"{adj.fn.__name__} {'scalar ' if adj.scalar_mode else ''}jit {variant}"
    make, filename = codegen.compile_factory(
        source, factory.params, factory.returned, label,
        codegen.UserLines(src.filename, adj.fn.__name__, lines))
    make = type(make)(make.__code__, getattr(adj.fn, "__globals__", {}), "_make")
    made = make(*values)
    # a callee's functions are called only from compiled code: no Python entry point (numba
    # cannot box a tuple of lists, the stacks in a callee's saved values)
    options = {} if variant in _ENTRY_VARIANTS else {"no_cpython_wrapper": True}
    options["pipeline_class"] = Pipeline  # (refuses arithmetic on bools: booleans.py)
    # numpy raises IndexError where numba, unchecked, reads or writes past the array: a
    # number where the interpreted gradient raises (x[5] of 3 elements gave [0, 0, 0])
    options["boundscheck"] = True
    return source, filename, caching.njit_cached(source, made, **options)


def _pass_inputs(tree: ast.Module, ctx, adj, entry: bool, calls: dict) -> tuple:
    """The compiled functions of ``tree`` taking, as parameters, every array (and other
    data) they or their callees read from outside (inputs.py): the sources of those
    parameters, in order, and of what stays frozen in the code."""
    make = tree.body[0]
    funcs = [s for s in make.body if isinstance(s, ast.FunctionDef)]
    bound = {a.arg for a in make.args.args}
    try:
        reads = external_reads(funcs, bound, set(ctx.closure), adj.fn,
                               lambda node: location(ctx, node))
    except RefusedRead as e:
        raise located_error(e.what, ctx, e.node) from None
    params = {source.key: param for param, source in reads.passed}
    sources = [source for _, source in reads.passed]
    frozen = list(reads.frozen)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)} | set(params.values())
    for callee in {id(c): c for c in calls.values()}.values():
        frozen.extend(callee.frozen)  # (what a callee reads, its caller passes it)
        for source in callee.inputs:
            if source.key not in params:
                params[source.key] = fresh_name("_" + "_".join(source.path), taken)
                sources.append(source)
    _pass_to_callees(funcs, calls, params)
    new = [ast.arg(arg=params[source.key]) for source in sources]
    for func in funcs:
        if entry:  # (the wrapper passes every argument, defaults applied)
            func.args.args = func.args.args + new
            func.args.defaults = []
        else:
            func.args.args = new + func.args.args
    return tuple(sources), tuple(frozen)


def _pass_to_callees(funcs: list, calls: dict, params: dict) -> None:
    """Each call of a callee's compiled function gets, first, the values that callee reads."""
    for func in funcs:
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in calls:
                first = [ast.Name(id=params[s.key], ctx=ast.Load())
                         for s in calls[node.func.id].inputs]
                node.args = first + node.args


def _rewrite(tree: ast.Module, ctx, adj, variant: str, helpers: _Helpers) -> ast.Module:
    """``tree`` (the generated factory) rewritten into the compiled ``variant``."""
    adjoint_of = {b: x for x, b in ctx.namer.adjoints.items()}
    namespace = getattr(adj.fn, "__globals__", {})
    numpy_names = {name for name, value in namespace.items() if value is np}
    module_names = {name for name, value in namespace.items()
                    if isinstance(value, types.ModuleType)}
    try:
        tree = shared_locals_checks(tree)
        if variant in ("grad", "vjp"):
            # (the scalar variant runs only on float or int arguments, the differentiated
            # ones floats: those parameters' tapes can be float64 arrays)
            floats = frozenset(ctx.wrt_names) if adj.scalar_mode else frozenset()
            tree, _ = fuse(tree, helpers.callees, adjoint_of, cotangent=variant == "vjp",
                           floats=floats)
        elif variant == "value":
            tree = forward_only(tree, helpers.callees)
        elif variant == "pair":
            tree = pair_tree(tree, helpers.callees, adjoint_of)
            _give_defaults(tree, adj.fn, ctx)
        elif variant == "hvp":  # forward mode over a fused gradient: tapes of tangents
            tree = matmul_operators(drop_stand_ins(tree), numpy_names)
            tree = second.tangent_tapes(tree, second.adjoint_names(adj.fn), ctx.namer.tangents)
        else:  # forward mode: no tape; a callee's defaults as a pair's
            tree = matmul_operators(drop_stand_ins(tree), numpy_names)
            tree = second.default_keepdims(tree, numpy_names)
            if variant in ("jvp callee", "hvp callee"):
                _give_defaults(tree, adj.fn, ctx)
            if variant == "hvp callee":  # (a sweep's tape and its tangent's: second.py)
                tree = second.callee_tapes(tree, adj.fn, ctx.namer.tangents, _adjoint_names)
    except JitRewriteError as e:
        raise located_error(e.what, ctx, e.node) from None
    if variant in ("grad", "vjp", "value", "pair"):  # (not forward mode: no list_append)
        readers = {name: (position, kind) for kind in ("unstack", "spread")
                   for name, position in _rule_helpers_reading(
                       ctx, namespace, {"unstack": 1} if kind == "unstack"
                       else {"spread_sum": 1}).items()}
        tree = built_lists(tree, numpy_names, readers, lambda node: location(ctx, node),
            {name for name in ("len", "sum") if name in namespace}, adjoint_of)
    # (np.ndim too, which numba lacks: the adjoint of np.transpose with axes calls it)
    tree = simd_math(tree, numpy_names, simd.FUNCTIONS + jit_runtime.NUMPY_FUNCTIONS)
    tree = simd_math(tree, {name for name, value in namespace.items() if value is math},
                     jit_runtime.MATH_FUNCTIONS, 2, _math_functions(namespace))
    tree = reductions_along_an_axis(tree, numpy_names, module_names)
    tree = c_order_reshapes(tree, numpy_names)
    tree = joined_lists(tree, numpy_names, _rule_helpers_reading(
        ctx, namespace, {"unstack": 1, "vstack_vjp": 2}))
    tree = constant_index_lists(tree)
    return integer_powers(tree, lambda node: location(ctx, node))


def _math_functions(namespace: dict) -> dict[str, str]:
    """``{global name: its name in math}`` of the names bound to a function of
    ``jit_runtime.MATH_FUNCTIONS`` (``from math import ldexp``)."""
    functions = {id(getattr(math, f)): f for f in jit_runtime.MATH_FUNCTIONS}
    return {name: functions[id(value)] for name, value in namespace.items()
            if id(value) in functions}


def _adjoint_names(adj) -> dict[str, str]:
    """``{adjoint name: primal name}`` of an adjoint's generated sweeps (its namer's table)."""
    return {b: x for x, b in generated_tree(adj)[1].namer.adjoints.items()}


def _rule_helpers_reading(ctx, namespace: dict, positions: dict) -> dict[str, int]:
    """The names the generated code calls the rule helpers named in ``positions`` by
    (``unstack``, the adjoint of ``np.stack``), with the position of their argument
    holding a list (joined.py, built_lists.py)."""
    return {name: positions[obj.__name__]
            for name, obj in [*ctx.helpers.items(), *namespace.items()]
            if getattr(obj, "__name__", None) in positions
            and getattr(obj, "__module__", "").startswith("srcgrad.rules")}


def _build(adj, variant: str, resolve=None) -> Compiled:
    key = (adj.source, _build_of(adj))
    entry = variant in _ENTRY_VARIANTS
    with _LOCK:
        if (id(adj), variant) in _BUILDING:
            raise JitUnsupportedError(
                f"{adj.fn.__qualname__}() is recursive; numba cannot compile recursive "
                f"gradients here: use jit=False.")
        _BUILDING.add((id(adj), variant))
        try:
            tree, ctx = generated_tree(adj)
            helpers = _bind_helpers(tree, ctx, adj, variant, resolve)
            tree = _rewrite(tree, ctx, adj, variant, helpers)
            _check_runtime_calls(tree, ctx)
            inputs, frozen = _pass_inputs(tree, ctx, adj, entry, helpers.calls)
            source, filename, functions = _compile(tree, ctx, adj, helpers.values, variant,
                                                   inputs)
            return Compiled(source, filename, functions, key, inputs, frozen,
                            helpers.adjoints, helpers.parts)
        finally:
            _BUILDING.discard((id(adj), variant))


def _cached(adj, variant: str, fn=None, resolve=None) -> Compiled:
    with _LOCK:
        variants = _COMPILED.setdefault(adj, {})
        found = variants.get(variant)
        if found is None or not found.current(adj, fn):
            found = variants[variant] = _build(adj, variant, resolve)
        return found


def compiled_gradient(adj, fn=None, variant: str = "grad") -> Compiled:
    """The compiled ``variant`` ("grad", "vjp" or "value") of an entry function's adjoint,
    for ``fn`` (a function sharing its build, whose closure cells it reads; by default
    ``adj.fn``)."""
    return _cached(adj, variant, fn)


def compiled_pair(adj) -> Compiled:
    """The compiled forward and backward sweeps of a callee's adjoint."""
    return _cached(adj, "pair")


def compiled_forward(built, resolve, fn=None) -> Compiled:
    """The compiled jvp function of a forward-mode build; ``resolve(call_site)`` is the
    forward-mode build a call site in its code calls (compiled too)."""
    return _cached(built, "jvp", fn, resolve)


def compiled_second(built, fn=None, resolve=None) -> Compiled:
    """The compiled jvp function of a forward-mode build of a fused gradient (second.py);
    ``resolve`` as for ``compiled_forward`` (the calls of a callee's sweeps in it)."""
    return _cached(built, "hvp", fn, resolve)


def shown_text(compiled: Compiled) -> str:
    """What ``srcgrad.source`` shows: the compiled functions, then each callee's, once."""
    shown, todo = [], [compiled]
    while todo:
        part = todo.pop(0)
        if any(part is s for s in shown):
            continue
        shown.append(part)
        todo.extend(part.parts)
    return "\n\n".join(part.source for part in shown)
