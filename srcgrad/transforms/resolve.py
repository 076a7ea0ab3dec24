"""Guarantees afterwards: ``ctx.resolved`` says, for every call and attribute read, whether it
is a derivative rule, a non-differentiable helper, a user function to transform, an array
method or attribute (mapped to a rule), or unknown.
"""
from __future__ import annotations

import functools
import operator
import types

import gast

from .. import runtime
from ..rules import (ARRAY_ATTRIBUTES, ARRAY_METHODS, NONDIFF_ATTRIBUTES, NONDIFF_METHODS,
                     is_nondifferentiable, lookup, rule_name)
from .context import Context, Resolved

BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
          gast.Div: operator.truediv, gast.Pow: operator.pow, gast.FloorDiv: operator.floordiv,
          gast.Mod: operator.mod, gast.MatMult: operator.matmul}
UNARYOPS = {gast.USub: operator.neg, gast.UAdd: operator.pos}


def known_value(node, ctx: Context):
    """``static_value(node, ctx)``, or None where it is not known at transform time."""
    try:
        return static_value(node, ctx)
    except KeyError:
        return None


def static_value(node, ctx: Context):
    """The object a name or attribute chain refers to at transform time; KeyError if local
    or unresolvable."""
    if isinstance(node, gast.Name):
        if node.id == ctx.rt:
            return runtime
        try:
            return ctx.lookup_static(node.id)
        except AttributeError:
            raise KeyError(node.id) from None
    if isinstance(node, gast.Attribute):
        base = static_value(node.value, ctx)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise KeyError(node.attr) from None
    raise KeyError(type(node).__name__)


def classify(obj) -> Resolved:
    if lookup(obj) is not None:
        return Resolved("rule", obj, rule_name(obj))
    if is_nondifferentiable(obj):
        return Resolved("nondiff", obj, rule_name(obj))
    if runtime.is_record_class(obj) or runtime.constructed_class(obj):
        # a namedtuple class, a class with an __init__ of its own: made at run time
        # (adapters.record_adapter, constructor_adapter)
        return Resolved("dynamic", obj, obj.__name__)
    if isinstance(obj, type):
        return Resolved("class", obj, obj.__name__)
    func = getattr(obj, "__func__", obj)
    if hasattr(func, "__code__"):
        return Resolved("user", obj, getattr(func, "__qualname__", repr(obj)))
    if isinstance(obj, functools.partial) or isinstance(
            getattr(type(obj), "__call__", None), types.FunctionType):
        # a partial, an object whose class defines __call__: Python code, dispatched at run
        # time like a closure's callee (runtime.call_fwd)
        return Resolved("dynamic", obj, rule_name(obj))
    if callable(obj):
        return Resolved("unknown", obj, rule_name(obj))
    return Resolved("constant", obj, repr(obj))


def resolve(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    methods, attributes = ARRAY_METHODS, ARRAY_ATTRIBUTES
    nondiff_attrs, nondiff_methods = set(NONDIFF_ATTRIBUTES), set(NONDIFF_METHODS)
    # the temporaries earlier passes bound (ANF's _t1) are locals: a module global of the same
    # name (_t1 = np.sin) must not be taken for what a call of them runs
    ctx.bind_locals(tree)
    for node in gast.walk(tree):
        if isinstance(node, gast.Call):
            ctx.resolved[id(node)] = _resolve_call(node, ctx, methods, nondiff_methods)
        elif isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Load):
            ctx.resolved.setdefault(id(node), _resolve_attribute(node, ctx, attributes,
                                                                  nondiff_attrs))
    return tree


def _resolve_call(node, ctx, methods, nondiff_methods) -> Resolved:
    func = node.func
    root = func
    while isinstance(root, gast.Attribute):
        root = root.value
    if isinstance(root, gast.Name) and root.id in ctx.closure and not ctx.own_code \
            and not isinstance(ctx.closure[root.id], types.ModuleType):
        # Closures made by one 'def' share an adjoint, but what they captured differs
        # between them: whatever a captured name calls is looked up at run time. (Generated
        # sweeps are exempt: each compiled factory gets one fixed set of helpers.)
        return Resolved("dynamic", None, root.id)
    try:
        return classify(static_value(func, ctx))
    except KeyError:
        pass
    if isinstance(func, gast.Attribute):
        ctx.resolved[id(func)] = Resolved("method-ref", None, func.attr)
        if func.attr in methods:
            target = methods[func.attr]
            return Resolved("method", target, f"ndarray.{func.attr}")
        if func.attr in nondiff_methods:
            return Resolved("nondiff", None, f"ndarray.{func.attr}")
        return Resolved("unknown", None, f".{func.attr}()")
    name = func.id if isinstance(func, gast.Name) else type(func).__name__
    return Resolved("unknown", None, name)


def _resolve_attribute(node, ctx, attributes, nondiff_attrs) -> Resolved:
    try:
        return classify(static_value(node, ctx)) if not callable(
            static_value(node, ctx)) else Resolved("constant", static_value(node, ctx))
    except KeyError:
        pass
    if node.attr in attributes:
        return Resolved("rule", attributes[node.attr], f"ndarray.{node.attr}")
    if node.attr in nondiff_attrs:
        return Resolved("nondiff", None, f"ndarray.{node.attr}")
    return Resolved("attribute", None, node.attr)
