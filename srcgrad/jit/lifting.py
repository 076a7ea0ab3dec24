"""Local functions the compiled code calls as module-level helpers (lambda lifting).

A nested ``def`` or a lambda bound to a name is, in the interpreted sweeps, a closure made at
run time and differentiated when called (``_rt.call_fwd``), which numba cannot compile. When
such a function is only ever called by name, after its definition, its closure is just a way
of reading the enclosing function's variables at call time: the same function written at
module level, taking those variables as its first parameters, called with their current
values (``sq(x)`` -> ``sq(y, x)``), computes the same. ``lift_local_functions`` rewrites the
tree of a compiled build that way, and calls, through a helper name, such a module-level function (its
source the user's lines, registered with ``source.register_source``), which the compiled code
then calls as any helper: a compiled forward/backward pair, gradients flowing back to the
captured variables as to any argument.

Lifted only when that is exactly Python's meaning (else left as it is, and refused as
before): bound once, by a statement of the function's body, no decorators, defaults that are
constants, no ``*args``/``**kwargs``; every other use of the name a call (no unpacking, no
keyword naming a captured variable) in a later statement of the body, outside nested
functions, classes, and comprehensions rebinding a captured name; the function captures no
other local function (nor itself) nor ``__class__``, declares nothing ``global``/``nonlocal``
and changes no captured object in place.
"""
from __future__ import annotations

__all__ = ["lift_local_functions"]

import copy
import types
import weakref
from typing import NamedTuple

import gast

from ..source import FunctionSource, compile_definition, register_source
from ..transforms import astutil as A

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
# calls that read local variables by name, unseen by a walk of the tree
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir"})
_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
# fn -> (fn.__code__, {(name, line): lifted function}): one module-level function per local
# function and code, so that its compiled pair is built once
_LIFTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Local(NamedTuple):
    index: int  # of its statement in the body
    name: str
    node: gast.AST  # the FunctionDef, or the Lambda
    captured: tuple  # the enclosing function's variables it reads (its code's free names)


def lift_local_functions(ctx) -> None:
    """Rewrite ``ctx.src.tree`` (of ``ctx.fn``) so that local functions that are only called
    are module-level functions, helpers of ``ctx`` (see the module docstring)."""
    fn, tree = ctx.fn, ctx.src.tree
    code = getattr(fn, "__code__", None)
    if code is None or not isinstance(getattr(fn, "__globals__", None), dict):
        return
    _drop_unused(tree)
    locals_ = [found for found in (_local(i, stmt, tree, ctx, code)
                                   for i, stmt in enumerate(tree.body)) if found]
    names = {n.name for n in gast.walk(tree) if isinstance(n, gast.FunctionDef)} | {
        local.name for local in locals_}
    lifted = [local for local in locals_ if _liftable(local, tree, names)]
    if not lifted:
        return
    made, calls = _made_for(fn), {}
    for local in lifted:
        key = (local.name, local.node.lineno)
        if key not in made:
            made[key] = _module_level(local, ctx)
        calls[local.name] = (ctx.helper(made[key], local.name), local.captured)
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id in calls:
            helper, captured = calls[node.func.id]
            node.func = A.located(A.load(helper), node.func)
            node.args = [A.located(A.load(v), node) for v in captured] + node.args
    dropped = {local.index for local in lifted}
    tree.body = [stmt for i, stmt in enumerate(tree.body) if i not in dropped]


def _drop_unused(tree) -> None:
    """Definitions of local functions nobody reads (in a branch, a loop) become ``pass``:
    making a function runs nothing of its body, and constant defaults evaluate to nothing."""
    names = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
             and not isinstance(n.ctx, (gast.Store, gast.Param))}
    if names & _INTROSPECTION or any(isinstance(n, (gast.Global, gast.Nonlocal))
                                     for n in gast.walk(tree)):
        return
    for node in A.own_nodes(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            for i, stmt in enumerate(stmts):
                defined = _defined(stmt)
                if defined is not None and defined[0] not in names \
                        and _constant_defaults(defined[1].args):
                    stmts[i] = gast.copy_location(gast.Pass(), stmt)


def _defined(stmt):
    """``(name, FunctionDef or Lambda)`` when ``stmt`` defines a local function, else None."""
    if isinstance(stmt, gast.FunctionDef) and not stmt.decorator_list:
        return stmt.name, stmt
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Lambda):
        return stmt.targets[0].id, stmt.value
    return None


def _constant_defaults(a) -> bool:
    return all(isinstance(d, gast.Constant) for d in a.defaults + [
        d for d in a.kw_defaults if d is not None])


def _made_for(fn) -> dict:
    code, made = _LIFTED.get(fn, (None, None))
    if code is not fn.__code__:
        made = {}
        _LIFTED[fn] = (fn.__code__, made)
    return made


def _local(index: int, stmt, tree, ctx, code) -> _Local | None:
    """The local function ``stmt`` defines, with what it captures, or None."""
    defined = _defined(stmt)
    if defined is None:
        return None
    name, node = defined
    co_name = "<lambda>" if isinstance(node, gast.Lambda) else name
    line = ctx.src.real_line(node)
    inner = [c for c in code.co_consts if isinstance(c, types.CodeType)
             and c.co_name == co_name and c.co_firstlineno == line]
    if len(inner) != 1:  # (two lambdas on one line: which is which is not worth guessing)
        return None
    return _Local(index, name, node, tuple(inner[0].co_freevars))


def _liftable(local: _Local, tree, local_functions: set) -> bool:
    node, name = local.node, local.name
    if set(local.captured) & (local_functions | {"__class__"}):
        return False
    a = node.args
    if a.vararg is not None or a.kwarg is not None or not _constant_defaults(a):
        return False
    if any(isinstance(n, (gast.Global, gast.Nonlocal, gast.Yield, gast.YieldFrom,
                          gast.Await)) for n in gast.walk(node)):
        return False
    if _changes_in_place(node, set(local.captured)):
        return False
    if name in (a.id for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs
                + [tree.args.vararg, tree.args.kwarg] if a is not None):
        return False
    if any(isinstance(n, (gast.Global, gast.Nonlocal)) and name in n.names
           for n in gast.walk(tree)):
        return False
    bindings = sum(1 for n in gast.walk(tree) if (
        isinstance(n, gast.Name) and n.id == name and not isinstance(n.ctx, gast.Load)) or (
        isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n.name == name) or (
        isinstance(n, gast.alias) and (n.asname or n.name) == name))
    if bindings != 1:
        return False
    captured = set(local.captured)
    for i, stmt in enumerate(tree.body):
        if i == local.index:
            continue
        if not _only_called(stmt, name, captured, i > local.index, frozenset()):
            return False
    return True


# methods of arrays that change nothing: any other method called on a captured variable
# may change it in place, and the lifting is then not attempted
_READING_METHODS = frozenset({"sum", "mean", "max", "min", "prod", "dot", "reshape", "copy",
                              "ravel", "flatten", "transpose", "astype", "std", "var", "any",
                              "all", "item"})


def _changes_in_place(fn, captured: set) -> bool:
    """Whether ``fn`` may change an object a captured variable holds (a store into an item
    or attribute of it, an augmented one, a method call other than a reading one)."""
    for node in gast.walk(fn):
        targets = node.targets if isinstance(node, gast.Assign) else \
            [node.target] if isinstance(node, gast.AugAssign) else []
        for t in targets:
            root = t
            while isinstance(root, (gast.Subscript, gast.Attribute)):
                root = root.value
            if root is not t and isinstance(root, gast.Name) and root.id in captured:
                return True
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                and isinstance(node.func.value, gast.Name) and node.func.value.id in captured \
                and node.func.attr not in _READING_METHODS:
            return True
    return False


def _only_called(node, name: str, captured: set, after: bool, bound: frozenset) -> bool:
    """Whether every use of ``name`` in ``node`` is a plain call the lifting can rewrite:
    ``after`` the definition, not in a nested scope, no captured variable rebound around it
    (``bound``: comprehension variables in force there)."""
    if isinstance(node, gast.Name) and node.id == name:
        return False  # (a use other than a call's function: those are checked below)
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
            and node.func.id == name:
        if not after or bound & captured or any(isinstance(a, gast.Starred)
                                                for a in node.args) \
                or any(k.arg is None or k.arg in captured for k in node.keywords):
            return False
        children = node.args + [k.value for k in node.keywords]
    elif isinstance(node, _SCOPES):
        return not any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(node))
    elif isinstance(node, _COMPREHENSIONS):
        bound = bound | {n.id for g in node.generators for n in gast.walk(g.target)
                         if isinstance(n, gast.Name)}
        children = list(gast.iter_child_nodes(node))
    else:
        children = list(gast.iter_child_nodes(node))
    return all(_only_called(child, name, captured, after, bound) for child in children)


def _module_level(local: _Local, ctx):
    """``local`` as a module-level function of ``ctx.fn``'s globals taking what it captures
    as its first parameters; its source the user's lines."""
    node = copy.deepcopy(local.node)
    if isinstance(node, gast.Lambda):
        ret = gast.copy_location(gast.Return(value=node.body), node.body)
        node = gast.copy_location(gast.FunctionDef(
            name=local.name, args=node.args, body=[ret], decorator_list=[], returns=None,
            type_comment=None, type_params=[]), node)
    params = [gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None)
              for v in local.captured]
    if node.args.posonlyargs:
        node.args.posonlyargs = params + node.args.posonlyargs
    else:
        node.args.args = params + node.args.args
    for n in gast.walk(node):  # (annotations may name what is not bound at module level)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Param):
            n.annotation = None
    node.returns = None
    src = ctx.src
    inner = compile_definition(node, src)
    defaults = tuple(d.value for d in node.args.defaults) or None
    lifted = types.FunctionType(inner, ctx.fn.__globals__, local.name, defaults)
    kwdefaults = {a.id: d.value for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults)
                  if d is not None}
    lifted.__kwdefaults__ = kwdefaults or None
    lifted.__qualname__ = f"{ctx.fn.__qualname__}.<locals>.{local.name}"
    lifted.__module__ = ctx.fn.__module__
    lifted.__srcgrad_lifted__ = True  # (build.py: a name the compiled calls resolve through)
    register_source(lifted.__code__, FunctionSource(node, src.filename, src.first_line,
                                                    src.lines))
    return lifted
