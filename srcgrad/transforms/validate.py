"""Guarantees afterwards: the function uses only constructs the later passes support.

Every unsupported construct is collected, then all are reported together in one
``UnsupportedSyntaxError`` naming the user's file, line and construct, with a hint.
"""
from __future__ import annotations

import gast

from . import astutil as A
from .context import Context
from .resolve import known_value

_UNSUPPORTED = {
    gast.Await: ("'await'", "Differentiate a synchronous function."),
    gast.AsyncFunctionDef: ("'async def'", "Differentiate a synchronous function."),
    gast.AsyncFor: ("'async for'", "Use a plain for loop."),
    gast.AsyncWith: ("'async with'", "Use a plain with block, outside the function."),
    gast.Global: ("'global'", "Pass the value in as an argument and return it instead."),
    gast.SetComp: ("a set comprehension", "Use a list comprehension."),
}


def validate(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Collect every unsupported construct of ``tree`` and raise them together."""
    methods = {id(m) for c in gast.walk(tree) if isinstance(c, gast.ClassDef)
               for m in c.body if isinstance(m, gast.FunctionDef)}
    for node in gast.walk(tree):
        entry = _UNSUPPORTED.get(type(node))
        if entry is not None:
            ctx.problem(node, *entry)
        elif isinstance(node, gast.ClassDef):
            _check_local_class(node, ctx)
        elif isinstance(node, gast.Delete) and not all(
                isinstance(t, gast.Name) for t in node.targets):
            ctx.problem(node, "'del' of an element or attribute",
                        "Build a new array or container instead of deleting from one.")
        elif isinstance(node, gast.FunctionDef) and node is not tree and node.decorator_list \
                and id(node) not in methods:  # (a local class's methods run as Python)
            ctx.problem(node, "a decorated nested function",
                        "Define the decorated function outside.")
    _check_generator(tree, ctx)
    args = tree.args
    if args.vararg is not None or args.kwarg is not None:
        ctx.problem(tree, "'*args' or '**kwargs' parameters in the differentiated function",
                    "Name each parameter.")
    ctx.raise_problems()
    return tree


def _check_local_class(cls: gast.ClassDef, ctx: Context) -> None:
    """A class defined inside the function runs as plain Python (its construction and method
    calls are dispatched at run time, adapters.constructor_adapter): refused when its body
    or a method reads a variable of the function, whose gradient would not flow through the
    class (a class attribute holding it, a method's closure)."""
    outer = ctx.local_names - {cls.name}
    read = set()
    for s in cls.body:
        if isinstance(s, gast.FunctionDef):
            bound = {a.id for a in gast.walk(s.args) if isinstance(a, gast.Name)} | {
                n.id for n in gast.walk(s) if isinstance(n, gast.Name)
                and isinstance(n.ctx, (gast.Store, gast.Del))}
            read |= {n.id for n in gast.walk(s) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, gast.Load)} - bound
        else:
            read |= {n.id for n in gast.walk(s) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, gast.Load)}
    read |= {n.id for e in cls.bases + cls.keywords + cls.decorator_list
             for n in gast.walk(e) if isinstance(n, gast.Name)}
    names = sorted(read & outer)
    if names:
        ctx.problem(cls, f"the class {cls.name} defined inside the function reading its "
                         f"variable '{names[0]}'",
                    f"Pass the value in instead ({cls.name}({names[0]}), a method's "
                    f"argument), or define the class at module level.")


def is_no_grad_block(node, ctx: Context) -> bool:
    """``with srcgrad.no_grad():`` (or ``torch.no_grad()`` of the facade): values computed
    inside carry no gradient."""
    if len(node.items) != 1 or node.items[0].optional_vars is not None:
        return False
    expr = node.items[0].context_expr
    if not isinstance(expr, gast.Call) or expr.args or expr.keywords:
        return False
    manager = known_value(expr.func, ctx)
    return isinstance(manager, type) and getattr(manager, "__srcgrad_stops_gradient__", False)


def _check_generator(tree, ctx: Context) -> None:
    """A generator function is differentiated as the list it yields: each yield must be a
    statement of its own (no values sent in), and the generator must end."""
    yields = {id(n) for n in A.own_nodes(tree) if isinstance(n, (gast.Yield, gast.YieldFrom))}
    if not yields:
        return
    for node in A.own_nodes(tree):
        if isinstance(node, gast.Expr) and id(node.value) in yields:
            yields.discard(id(node.value))
        elif isinstance(node, gast.While) and isinstance(node.test, gast.Constant) \
                and node.test.value and _loop_yields_forever(node):
            ctx.problem(node, "an infinite generator ('while True' that yields and never "
                              "stops)", "Yield a bounded number of values: give the generator "
                                        "the count its consumer takes (islice(gen(x), n) "
                                        "becomes gen(x, n) looping 'for k in range(n)'), "
                                        "or take the values with a loop outside.")
    for node in A.own_nodes(tree):
        if id(node) in yields:
            ctx.problem(node, "a 'yield' whose value is used (values sent into a generator)",
                        "Make each yield a statement of its own.")


def _loop_yields_forever(loop) -> bool:
    exits, stack = False, list(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (gast.Return, gast.Raise)) or (
                isinstance(node, gast.Break)):
            exits = True
        if not isinstance(node, (gast.FunctionDef, gast.Lambda, gast.For, gast.While)):
            stack.extend(gast.iter_child_nodes(node))
    return not exits and any(isinstance(n, (gast.Yield, gast.YieldFrom))
                             for n in A.own_nodes(loop))
