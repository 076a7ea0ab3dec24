"""Guarantees afterwards: the function uses only constructs the later passes support.

Every unsupported construct is collected, then all are reported together in one
``UnsupportedSyntaxError`` naming the user's file, line and construct, with a hint.
"""
from __future__ import annotations

import gast

from .context import Context

_UNSUPPORTED = {
    gast.Yield: ("'yield' (a generator)", "Return a list instead of yielding values."),
    gast.YieldFrom: ("'yield from' (a generator)", "Return a list instead of yielding values."),
    gast.Await: ("'await'", "Differentiate a synchronous function."),
    gast.AsyncFunctionDef: ("'async def'", "Differentiate a synchronous function."),
    gast.AsyncFor: ("'async for'", "Use a plain for loop."),
    gast.AsyncWith: ("'async with'", "Use a plain with block, outside the function."),
    gast.Try: ("'try' around differentiable code",
               "Move the try/except outside the differentiated function."),
    gast.Global: ("'global'", "Pass the value in as an argument and return it instead."),
    gast.Nonlocal: ("'nonlocal'", "Pass the value in as an argument and return it instead."),
    gast.ClassDef: ("a class definition inside the function",
                    "Define the class at module level."),
    gast.SetComp: ("a set comprehension", "Use a list comprehension."),
}


def validate(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Collect every unsupported construct of ``tree`` and raise them together."""
    for node in gast.walk(tree):
        entry = _UNSUPPORTED.get(type(node))
        if entry is not None:
            ctx.problem(node, *entry)
        elif isinstance(node, gast.With) and not is_no_grad_block(node, ctx):
            ctx.problem(node, "a 'with' block (other than 'with srcgrad.no_grad():')",
                        "Move it outside the differentiated function.")
        elif isinstance(node, gast.Match):
            ctx.problem(node, "a 'match' statement", "Use if/elif/else.")
        elif isinstance(node, gast.Delete) and not all(
                isinstance(t, gast.Name) for t in node.targets):
            ctx.problem(node, "'del' of an element or attribute",
                        "Build a new array or container instead of deleting from one.")
        elif isinstance(node, gast.FunctionDef) and node is not tree and node.decorator_list:
            ctx.problem(node, "a decorated nested function",
                        "Define the decorated function outside.")
    args = tree.args
    if args.vararg is not None or args.kwarg is not None:
        ctx.problem(tree, "'*args' or '**kwargs' parameters in the differentiated function",
                    "Name each parameter.")
    ctx.raise_problems()
    return tree


def is_no_grad_block(node, ctx: Context) -> bool:
    """``with srcgrad.no_grad():`` (or ``torch.no_grad()`` of the facade): values computed
    inside carry no gradient."""
    from ..autograd.grad_mode import no_grad
    if len(node.items) != 1 or node.items[0].optional_vars is not None:
        return False
    expr = node.items[0].context_expr
    if not isinstance(expr, gast.Call) or expr.args or expr.keywords:
        return False
    try:
        from .resolve import static_value
        return static_value(expr.func, ctx) is no_grad
    except KeyError:
        return False
