"""Guarantees afterwards: a lambda called where it is written (``(lambda t: t * c)(v)``), or
called through a name this function binds to it once at its top level (``g = lambda t: t *
c`` or ``def g(t): return t * c``, then ``g(v)``, also in a comprehension), is its body with
the arguments put for its parameters.

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
    # (a comprehension's variable is its own, it does not rebind the function's)
    own = {id(n) for c in gast.walk(tree) if isinstance(c, gast.comprehension)
           for n in gast.walk(c.target)}
    for n in gast.walk(tree):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)) \
                and id(n) not in own:
            counts[n.id] = counts.get(n.id, 0) + 1
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            for name in n.names:
                counts[name] = counts.get(name, 0) + 2  # (never inlined)
        elif isinstance(n, gast.FunctionDef) and n is not tree:
            counts[n.name] = counts.get(n.name, 0) + 2
    return counts


def _named_lambdas(tree: gast.FunctionDef) -> dict:
    """``{name: (lambda, line)}`` for ``name = lambda ...`` statements (and ``def name(...):
    return ...``) of the top level whose
    name and free variables no other statement binds (each a parameter, or bound once, by a
    statement of the top level: a loop's target would be rebound)."""
    counts = _stores(tree)
    top = {t.id for s in tree.body if isinstance(s, gast.Assign) for t in s.targets
           if isinstance(t, gast.Name)}
    out = {}
    for s in tree.body:
        if isinstance(s, gast.FunctionDef):
            name, lam, times = s.name, _as_lambda(s), 2  # (_stores counts a def twice)
        elif isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda):
            name, lam, times = s.targets[0].id, s.value, 1
        else:
            continue
        params = _params(lam) if lam is not None else None
        if params is None or counts.get(name) != times:
            continue
        free = A.names_read(lam.body) - set(params)
        if all(counts.get(v, 0) == 0 or counts.get(v) == 1 and v in top for v in free):
            out[name] = (lam, getattr(s, "lineno", 0))
    return out


def _as_lambda(fn: gast.FunctionDef) -> gast.Lambda | None:
    """The lambda a nested ``def g(t): return expr`` (an optional docstring before the
    return, no decorator) is equivalent to, or None."""
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], gast.Expr) \
        and isinstance(fn.body[0].value, gast.Constant) else fn.body
    if fn.decorator_list or len(body) != 1 or not isinstance(body[0], gast.Return) \
            or body[0].value is None:
        return None
    return gast.Lambda(args=fn.args, body=body[0].value)


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
        # the first source is evaluated in the enclosing scope, the rest in the
        # comprehension's, where its variables hide the function's
        first = node.generators[0]
        first.iter = _rewrite(first.iter, named, bound)
        bound = bound | {n.id for g in node.generators for n in gast.walk(g.target)
                         if isinstance(n, gast.Name)}
        first.ifs = [_rewrite(c, named, bound) for c in first.ifs]
        node.generators[1:] = [_rewrite(g, named, bound) for g in node.generators[1:]]
        for field in ("elt", "key", "value"):
            if getattr(node, field, None) is not None:
                setattr(node, field, _rewrite(getattr(node, field), named, bound))
        return node
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
