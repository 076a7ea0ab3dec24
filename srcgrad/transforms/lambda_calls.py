"""Guarantees afterwards: a lambda called where it is written (``(lambda t: t * c)(v)``), or
called through a name this function binds to it once at its top level (``g = lambda t: t *
c`` then ``g(v)``, also in a comprehension), is its body with the arguments put for its
parameters.

Python evaluates a lambda's free variables when it is called, so its body written at the call
reads what the call would. The calls become plain expressions the sweeps differentiate to any
order; as calls of a function known only at run time they were differentiated twice at most
(a third derivative was refused). Only calls that keep Python's meaning are rewritten: plain
positional parameters and arguments, no default, a body without nested scopes or ``:=``, an
argument that calls nothing unless its parameter is read exactly once, and, for a named
lambda, free variables bound at most once, at the top level, and not rebound by a
comprehension around the call.
"""
from __future__ import annotations

import gast

from . import astutil as A
from .context import Context

_SCOPES = (gast.Lambda, gast.FunctionDef, gast.ListComp, gast.SetComp, gast.DictComp,
           gast.GeneratorExp, gast.NamedExpr, gast.Yield, gast.YieldFrom, gast.Await)
_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def inline_lambda_calls(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    named = _named_lambdas(tree)
    tree.body = [_rewrite(s, named, frozenset()) for s in tree.body]
    return tree


def _params(lam: gast.Lambda) -> list[str] | None:
    """The parameter names of a lambda with plain positional parameters only."""
    args = lam.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults \
            or not all(isinstance(a, gast.Name) for a in args.args):
        return None
    if any(isinstance(n, _SCOPES) for n in gast.walk(lam.body)):
        return None
    return [a.id for a in args.args]


def _stores(tree) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in gast.walk(tree):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            counts[n.id] = counts.get(n.id, 0) + 1
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            for name in n.names:
                counts[name] = counts.get(name, 0) + 2  # (never inlined)
        elif isinstance(n, gast.FunctionDef) and n is not tree:
            counts[n.name] = counts.get(n.name, 0) + 2
    return counts


def _named_lambdas(tree: gast.FunctionDef) -> dict:
    """``{name: (lambda, line)}`` for ``name = lambda ...`` statements of the top level whose
    name and free variables no other statement binds (each a parameter, or bound once, by a
    statement of the top level: a loop's target would be rebound)."""
    counts = _stores(tree)
    top = {t.id for s in tree.body if isinstance(s, gast.Assign) for t in s.targets
           if isinstance(t, gast.Name)}
    out = {}
    for s in tree.body:
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda)):
            continue
        name, lam = s.targets[0].id, s.value
        params = _params(lam)
        if params is None or counts.get(name) != 1:
            continue
        free = A.names_read(lam.body) - set(params)
        if all(counts.get(v, 0) == 0 or counts.get(v) == 1 and v in top for v in free):
            out[name] = (lam, getattr(s, "lineno", 0))
    return out


def _inlined(call: gast.Call, lam: gast.Lambda):
    """``lam``'s body with ``call``'s arguments for its parameters, or None."""
    params = _params(lam)
    if params is None or call.keywords or len(call.args) != len(params) \
            or any(isinstance(a, gast.Starred) for a in call.args):
        return None
    for p, arg in zip(params, call.args):
        reads = sum(isinstance(n, gast.Name) and n.id == p for n in gast.walk(lam.body))
        if any(isinstance(n, _SCOPES) for n in gast.walk(arg)) or reads != 1 and any(
                isinstance(n, gast.Call) for n in gast.walk(arg)):
            return None
    body = A.substitute(lam.body, dict(zip(params, call.args)))
    return A.located(body, call) if not hasattr(body, "lineno") else body


def _rewrite(node, named: dict, bound: frozenset):
    """``node`` with the calls it evaluates in this function's scope inlined; ``bound``:
    the names comprehensions around it bind."""
    if isinstance(node, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
        return node  # (their own scope)
    if isinstance(node, _COMPREHENSIONS):
        bound = bound | {n.id for g in node.generators for n in gast.walk(g.target)
                         if isinstance(n, gast.Name)}
    for field, value in gast.iter_fields(node):
        if isinstance(value, list):
            setattr(node, field, [_rewrite(v, named, bound) if isinstance(v, gast.AST) else v
                                  for v in value])
        elif isinstance(value, gast.AST):
            setattr(node, field, _rewrite(value, named, bound))
    if not isinstance(node, gast.Call):
        return node
    if isinstance(node.func, gast.Lambda):
        return _inlined(node, node.func) or node
    if isinstance(node.func, gast.Name) and node.func.id in named \
            and node.func.id not in bound:
        lam, line = named[node.func.id]
        free = A.names_read(lam.body) - set(_params(lam) or ())
        if getattr(node, "lineno", 0) > line and not free & bound:
            return _inlined(node, lam) or node
    return node
