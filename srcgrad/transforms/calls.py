"""Guarantees afterwards: no call unpacks differentiable values (``*xs``, ``**d``), calls a
function value that may carry differentiable data, or builds a ``functools.partial`` of
differentiable values; those became ``_rt.apply(f, args, kwargs)`` and ``_rt.bind(...)``.

``apply`` runs at run time as a fixed-arity adapter (srcgrad/adapters.py), so the tuple
``args``, the dict ``kwargs`` and the values a ``Bound`` carries get their gradients like
any container's items. Calls of local defs and lambdas the function calls by name keep their
direct form (their captured values are passed as keywords, see desugar.lift_closures).
"""
from __future__ import annotations

import functools
import types

import gast

from . import astutil as A
from ..rules.registry import lookup
from .activity import varied_names
from .context import Context
from .resolve import known_value


def route_calls(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    if getattr(ctx.fn, "__srcgrad_adapter__", False):
        return tree  # an adapter's own calls are the fixed-arity ones
    # earlier passes made new values from varied ones (closure conversion's binds)
    ctx.varied |= varied_names(tree, ctx)
    local_functions = {n.name for n in gast.walk(tree)
                       if isinstance(n, gast.FunctionDef) and n is not tree}
    local_functions |= {t.id for n in gast.walk(tree) if isinstance(n, gast.Assign)
                        and isinstance(n.value, gast.Lambda) for t in n.targets
                        if isinstance(t, gast.Name)}
    _Router(ctx, local_functions).visit_body(tree)
    return tree


class _Router(gast.NodeTransformer):
    def __init__(self, ctx: Context, local_functions: set):
        self.ctx, self.local_functions = ctx, local_functions

    def visit_body(self, tree):
        tree.body = [self.visit(s) for s in tree.body]

    def visit_FunctionDef(self, node):
        return node  # transformed on its own when called

    visit_Lambda = visit_FunctionDef

    def varied(self, node) -> bool:
        return bool(A.names_read(node) & self.ctx.varied)

    def visit_Call(self, node):
        self.generic_visit(node)
        rt = self.ctx.rt
        spread = [a for a in node.args if isinstance(a, gast.Starred)] + \
            [k for k in node.keywords if k.arg is None]
        if self._is(node.func, functools.partial) and node.args and self.varied(node):
            args, kwargs = _packed(node.args[1:], node.keywords, rt)
            helper = "bind_again" if self.varied(node.args[0]) else "bind"
            return A.located(A.call(A.attr(rt, helper), node.args[0], args, kwargs), node)
        if not spread and node.args and not node.keywords and self.varied(node) \
                and self._is(node.func, zip):
            # zip(xs, ys) of differentiable sequences: the items of their lists, transposed
            # (unzip's rule gives each sequence its items' cotangents back)
            rows = gast.List(elts=[A.call(A.attr(rt, "as_list"), a) for a in node.args],
                             ctx=gast.Load())
            return A.located(A.call(A.attr(rt, "unzip"), rows), node)
        if spread and any(self.varied(s.value) for s in spread):
            if self._is(node.func, zip) and len(node.args) == 1 and not node.keywords:
                return A.located(A.call(A.attr(rt, "unzip"), A.call(
                    A.attr(rt, "as_list"), node.args[0].value)), node)
            return self.applied(node)
        if spread and self.varied(node) and (self._user_function(node.func) or self.varied_late(
                node) and not (isinstance(node.func, gast.Attribute) and self.varied(
                    node.func.value))):
            # constants spread into a differentiated function, or a varied operand after a
            # spread: the parameters they fill are known only at run time. (A rule's call
            # with varied operands before the spread only keeps its form: reverse and forward
            # mode pass the spread operands through to its vjp and jvp.)
            return self.applied(node)
        if self.varied(node.func) and not isinstance(node.func, gast.Attribute) and not (
                isinstance(node.func, gast.Name) and node.func.id in self.local_functions):
            return self.applied(node)  # the value may be a Bound: its data get gradients
        return node

    def applied(self, node):
        rt = self.ctx.rt
        args, kwargs = _packed(node.args, node.keywords, rt)
        return A.located(A.call(A.attr(rt, "apply"), node.func, args, kwargs), node)

    def varied_late(self, node) -> bool:
        """Whether a positional operand after ``node``'s first ``*xs`` is varied."""
        first = next(i for i, a in enumerate(node.args + [None]) if a is None
                     or isinstance(a, gast.Starred))
        return any(self.varied(a) for a in node.args[first:] if not isinstance(a, gast.Starred))

    def _user_function(self, func) -> bool:
        """Whether ``func`` names a Python function without a derivative rule (one that is
        differentiated from its source)."""
        if isinstance(func, gast.Name) and func.id in self.local_functions:
            return False
        value = known_value(func, self.ctx)
        return isinstance(value, types.FunctionType) and lookup(value) is None

    def _is(self, func, obj) -> bool:
        return known_value(func, self.ctx) is obj


def _packed(args, keywords, rt: str):
    """A tuple expression of positional ``args`` (``*xs`` spliced) and a dict display of
    ``keywords`` (``**d`` spliced)."""
    parts, run = [], []
    for a in args:
        if isinstance(a, gast.Starred):
            if run:
                parts.append(gast.Tuple(elts=run, ctx=gast.Load()))
                run = []
            parts.append(A.call(A.attr(rt, "as_tuple"), a.value))
        else:
            run.append(a)
    if run or not parts:
        parts.append(gast.Tuple(elts=run, ctx=gast.Load()))
    packed = parts[0]
    for p in parts[1:]:
        packed = A.call(A.attr(rt, "seq_concat"), packed, p)
    kwargs = gast.Dict(keys=[None if k.arg is None else A.const(k.arg) for k in keywords],
                       values=[k.value for k in keywords])
    return packed, kwargs

