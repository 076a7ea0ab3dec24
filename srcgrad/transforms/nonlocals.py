"""Guarantees afterwards: no nested function of this one declares ``nonlocal``.

A nested function that rebinds variables of the enclosing one (``nonlocal acc``) takes
their values as keyword-only parameters and returns their new values with its result:
``def add(v, *, acc): acc = acc + v; return (None, (acc,))``. Each call, a statement of its
own, becomes ``_r = add(x, acc=acc)`` then ``acc, = _r[1]`` (and ``y = _r[0]``). The data
flow is then explicit, so gradients follow it like any assignment's.
"""
from __future__ import annotations

import gast

from . import astutil as A
from .context import Context
from .desugar import own_nodes, scope_functions


def lower_nonlocal(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    for node in own_nodes(tree):
        if isinstance(node, gast.Nonlocal):
            ctx.problem(node, "'nonlocal' in the differentiated function itself (its "
                              "writes would change a variable outside what is differentiated)",
                        "Pass the value in as an argument and return it, or differentiate "
                        "the enclosing function.")
    updaters = {}
    for fn in scope_functions(tree):
        names = [n for s in own_nodes(fn) if isinstance(s, gast.Nonlocal) for n in s.names]
        if names:
            updaters[fn.name] = list(dict.fromkeys(names))
            _return_updates(fn, updaters[fn.name], ctx)
    if updaters:
        _CallSites(ctx, updaters).rewrite(tree)
    return tree


def _return_updates(fn, names: list, ctx: Context) -> None:
    """``fn`` takes ``names`` as keyword-only parameters and returns ``(result, names)``."""
    def updated(value, at):
        new = gast.Tuple(elts=[A.load(n) for n in names], ctx=gast.Load())
        return A.located(gast.Tuple(elts=[value, new], ctx=gast.Load()), at)

    class Returns(gast.NodeTransformer):
        def visit_FunctionDef(self, node):
            if node is not fn:
                return node
            self.generic_visit(node)
            return node

        visit_Lambda = visit_FunctionDef

        def visit_Nonlocal(self, node):
            return None

        def visit_Return(self, node):
            value = node.value if node.value is not None else A.const(None)
            return A.located(gast.Return(value=updated(value, node)), node)

    Returns().visit(fn)
    fn.body = fn.body or [gast.Pass()]
    fn.body.append(A.located(gast.Return(value=updated(A.const(None), fn.body[-1])),
                             fn.body[-1]))
    for n in names:
        fn.args.kwonlyargs.append(gast.Name(id=n, ctx=gast.Param(), annotation=None,
                                            type_comment=None))
        fn.args.kw_defaults.append(None)


class _CallSites:
    def __init__(self, ctx: Context, updaters: dict):
        self.ctx, self.updaters = ctx, updaters

    def rewrite(self, tree) -> None:
        done: set[int] = set()
        self.block(tree, done)
        for node in own_nodes(tree):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) \
                    and node.id in self.updaters and id(node) not in done:
                self.ctx.problem(node, f"'{node.id}', which rebinds 'nonlocal' variables, "
                                       f"used other than in a call statement of its own",
                                 f"Call it in a statement of its own: "
                                 f"'y = {node.id}(...)' or '{node.id}(...)'.")

    def block(self, node, done) -> None:
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                setattr(node, field, [out for s in stmts for out in self.stmt(s, done)])
        for handler in getattr(node, "handlers", ()):
            self.block(handler, done)
        for case in getattr(node, "cases", ()):
            self.block(case, done)

    def stmt(self, s, done) -> list:
        if isinstance(s, (gast.FunctionDef, gast.Lambda)):
            return [s]
        self.block(s, done)
        value = s.value if isinstance(s, (gast.Expr, gast.Assign)) else None
        if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Name)
                and value.func.id in self.updaters):
            return [s]
        if isinstance(s, gast.Assign) and len(s.targets) != 1:
            return [s]
        name = value.func.id
        done.add(id(value.func))
        names = self.updaters[name]
        value.keywords += [gast.keyword(arg=n, value=A.load(n)) for n in names]
        result = self.ctx.namer.fresh("_updated")
        self.ctx.local_names.add(result)
        self.ctx.transient.add(result)
        out = [A.assign(result, value, at=s)]
        targets = gast.Tuple(elts=[A.store(n) for n in names], ctx=gast.Store())
        out.append(A.assign(targets, _item(result, 1), at=s))
        if isinstance(s, gast.Assign):
            out.append(A.assign(s.targets[0], _item(result, 0), at=s))
        return out


def _item(name: str, i: int):
    return gast.Subscript(value=A.load(name), slice=A.const(i), ctx=gast.Load())
