"""Guarantees afterwards: a local name bound once to a gradient of a nested function reading
the caller's differentiable variables (``g = grad(inner)``, ``g = value_and_grad(lambda y:
x * y)``) with constant options, and otherwise only called, in the function's own scope and
after it in the same block (the body, or a loop's or branch's), is gone: each call makes the
gradient where it calls it (``grad(inner)(c)``).

Python reads a closure's variables when it is called, not when its gradient is made, so
``g = grad(inner); x = 2 * x; g(c)`` differentiates ``inner`` reading the new ``x``. Made
at the call, the gradient reads them there too, exactly, however often they were assigned in
between; and the made-and-called form is what transforms/gradient_calls.py differentiates,
passing the captured values to the gradient at that call. A gradient name with any other use
(passed, stored, returned, read by a nested function) is left as written: gradient_calls
makes it a bound function value, which reads the captured values when it is made.
"""
from __future__ import annotations

import copy

import gast

from . import astutil as A
from .context import Context
from .gradient_calls import constant_options, is_maker


def call_gradients_where_called(tree: gast.FunctionDef, ctx: Context) -> None:
    local_functions = _local_functions_read_varied(tree, ctx)
    for block in _blocks(tree):
        for index, stmt in enumerate(block):
            made = _made_gradient(stmt, local_functions, ctx)
            if made is None:
                continue
            name, value = made
            calls = _only_calls(tree, block, index, name)
            if calls is None:
                continue
            for call in calls:
                call.func = A.located(copy.deepcopy(value), call.func)
            block[index] = A.located(gast.Pass(), stmt)


def _blocks(tree: gast.FunctionDef) -> list[list]:
    """The statement lists of ``tree``'s own scope (its body, loops', branches', ...)."""
    return [getattr(n, field) for n in A.own_nodes(tree)
            for field in ("body", "orelse", "finalbody")
            if isinstance(getattr(n, field, None), list)]


def _made_gradient(stmt, local_functions: set, ctx: Context):
    """``(g, maker call)`` for ``g = maker(fn, constant options)``, ``fn`` a nested function
    reading the caller's differentiable variables or a lambda without defaults."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Call)):
        return None
    call = stmt.value
    if not (call.args and is_maker(call.func, ctx) and constant_options(call)):
        return None
    fn = call.args[0]
    if isinstance(fn, gast.Name) and fn.id in local_functions or isinstance(
            fn, gast.Lambda) and not fn.args.defaults and not any(fn.args.kw_defaults) \
            and A.names_read(fn.body) & ctx.varied & ctx.local_names:
        return stmt.targets[0].id, call
    return None


def _local_functions_read_varied(tree: gast.FunctionDef, ctx: Context) -> set[str]:
    """Names of the functions ``def``'d once in ``tree``'s own scope and bound by nothing
    else, whose bodies read differentiable variables of ``tree``."""
    defs = [c for n in A.own_nodes(tree) for c in gast.iter_child_nodes(n)
            if isinstance(c, gast.FunctionDef)]
    counts: dict[str, int] = {}
    for n in defs:
        counts[n.name] = counts.get(n.name, 0) + 1
    written = A.names_written(tree)
    return {n.name for n in defs if counts[n.name] == 1 and n.name not in written
            and A.names_read(n) & ctx.varied & ctx.local_names}


def _only_calls(tree: gast.FunctionDef, block: list, index: int, name: str):
    """The calls ``name(...)`` in the statements after ``block[index]`` in its block, when
    those are all the uses of ``name`` in ``tree`` and it is bound nowhere else; None
    otherwise. (Then every call runs after the gradient is made, in the same pass of a loop.)"""
    stores = [n for n in gast.walk(tree) if isinstance(n, gast.Name) and n.id == name
              and not isinstance(n.ctx, gast.Load)]
    if len(stores) != 1 or any(isinstance(n, (gast.Global, gast.Nonlocal)) and name in n.names
                               for n in gast.walk(tree)):
        return None  # (a parameter's is a Param store)
    later = [n for stmt in block[index + 1:] if not isinstance(stmt, gast.FunctionDef)
             for n in A.own_nodes(stmt)]
    calls = [n for n in later if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
             and n.func.id == name]
    loads = [n for n in gast.walk(tree) if isinstance(n, gast.Name) and n.id == name
             and isinstance(n.ctx, gast.Load)]
    if len(loads) != len(calls) or not calls:
        return None  # (also read elsewhere: before, as a value, or by a nested function)
    return calls
