"""Rules written once: elementwise rules from their derivative, linear jvps from the function.

Most vjp/jvp pairs are mechanical twins. Two helpers derive them instead:

* ``elementwise(fn, domain)`` decorates ``derivative(ans, x)`` (or ``(ans, x1, x2)``
  returning the two partials) and registers ``fn`` with the vjp ``g * f'(x)`` and the jvp
  ``dx * f'(x)`` (summed to each operand's shape, broadcast to the result's);
* ``deflinear(fn, vjp, domain)`` registers a function linear in its first argument with the
  jvp ``fn(dx, *rest)``: a linear map's tangent is the map of the tangent.

The derived rules are real Python source, generated from the derivative's expression and
registered with ``linecache`` under ``<srcgrad rule NAME>``: the transformer inlines them like
hand-written rules, tracebacks show them, and they can be differentiated again.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from typing import Callable

import numpy as np

from ..errors import SrcgradError
from .registry import defrule, rule_name

__all__ = ["elementwise", "deflinear", "compile_rule"]


def compile_rule(source: str, name: str, scope: dict, label: str) -> Callable:
    """Define function ``name`` from ``source`` with globals ``scope`` (a module's namespace),
    its text registered so ``inspect.getsource`` and tracebacks can read it."""
    filename = f"<srcgrad rule {label}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), scope, namespace)  # noqa: S102 (our own source)
    return namespace[name]


def _returned_expressions(derivative: Callable) -> tuple[list[str], list[ast.expr]]:
    """The parameters of ``derivative`` and the expression(s) its single ``return`` returns."""
    fdef = ast.parse(textwrap.dedent(inspect.getsource(derivative))).body[0]
    body = [s for s in fdef.body if not (isinstance(s, ast.Expr)
                                         and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        raise SrcgradError(f"derivative {derivative.__name__} must be one 'return' of an "
                           "expression (or of one expression per argument)")
    value = body[0].value
    params = [a.arg for a in fdef.args.args]
    return params, (value.elts if isinstance(value, ast.Tuple) else [value])


def _scaled(tangent: str, expr: ast.expr) -> str:
    """Source of ``tangent * expr``, read like hand-written code: ``-t * e`` for ``-e``,
    ``t / e`` for ``1.0 / e``, ``t`` for ``1.0``."""
    negative = isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub)
    expr = expr.operand if negative else expr
    t = ast.UnaryOp(ast.USub(), ast.Name(tangent)) if negative else ast.Name(tangent)
    if _is_one(expr):
        product = t
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div) and _is_one(expr.left):
        product = ast.BinOp(t, ast.Div(), expr.right)
    else:
        product = ast.BinOp(t, ast.Mult(), expr)
    return ast.unparse(product)


def _is_one(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == 1


def elementwise(fns, domain, *, broadcasting: bool = True, linear: bool = False):
    """Decorator: register each of ``fns`` (a function or a tuple of aliases) from
    ``derivative(ans, *xs)``, which returns f'(x) for one argument, one partial per argument
    otherwise. The derivative may read the result ``ans`` (``exp``'s is ``ans``). Operands of
    ``broadcasting`` functions get their cotangents summed back to their own shape."""
    fns = fns if isinstance(fns, tuple) else (fns,)

    def register(derivative: Callable) -> Callable:
        params, partials = _returned_expressions(derivative)
        xs = params[1:]
        if params[0] != "ans" or len(xs) != len(partials):
            raise SrcgradError(f"{derivative.__name__}: expected (ans, {', '.join(xs)}) "
                               f"returning {len(xs)} partial(s)")
        for fn in fns:
            vjp, jvp = _elementwise_rules(fn, xs, partials, derivative.__globals__,
                                          broadcasting)
            defrule(fn, vjp, diff_args=tuple(range(len(xs))), jvp=jvp, domain=domain,
                    linear=linear)
        return derivative

    return register


def _elementwise_rules(fn, xs, partials, scope, broadcasting):
    label = rule_name(fn)
    base = getattr(fn, "__name__", "fn")
    args = ", ".join(xs)
    if len(xs) == 1 or not broadcasting:
        vjp_terms = [_scaled("g", p) for p in partials]
        jvp_terms = [_scaled("d" + x, p) for x, p in zip(xs, partials)]
    else:  # broadcasting operands: sum back to each operand, spread to the result
        for helper in ("unbroadcast", "broadcast_like"):
            if helper not in scope:
                raise SrcgradError(f"{label}: import {helper} from srcgrad.runtime in the "
                                   "module defining its derivative")
        vjp_terms = [f"unbroadcast({_scaled('g', p)}, {x})" for x, p in zip(xs, partials)]
        jvp_terms = [f"broadcast_like({_scaled('d' + x, p)}, ans)"
                     for x, p in zip(xs, partials)]
    tangents = ", ".join("d" + x for x in xs)
    vjp_src = f"def {base}_vjp(g, ans, {args}):\n    return ({', '.join(vjp_terms)},)\n"
    jvp_src = f"def {base}_jvp({tangents}, ans, {args}):\n    return ({', '.join(jvp_terms)},)\n"
    return (compile_rule(vjp_src, f"{base}_vjp", scope, label + " vjp"),
            compile_rule(jvp_src, f"{base}_jvp", scope, label + " jvp"))


def deflinear(fn, vjp: Callable, domain, *, name: str | None = None,
              shape_args: tuple[int, ...] = ()):
    """Register ``fn``, linear in its first argument, with ``vjp`` (its transpose) and the
    jvp ``fn(dx, *rest)`` derived from the vjp's signature (``g, ans, x, *rest``)."""
    jvp = linear_jvp(fn, vjp)
    return defrule(fn, vjp, jvp=jvp, domain=domain, linear=True, name=name,
                   shape_args=shape_args)


def linear_jvp(fn, vjp: Callable) -> Callable:
    """``fn`` applied to the tangent, with the signature of ``vjp`` (tangent instead of g)."""
    fdef = ast.parse(textwrap.dedent(inspect.getsource(vjp))).body[0]
    args = fdef.args
    params = args.args
    first = params[2].arg
    tangent = "d" + first
    n_required = len(params) - len(args.defaults)
    call_args = [tangent] + [p.arg for p in params[3:n_required]]
    call_args += [f"{p.arg}={p.arg}" for p in params[max(n_required, 3):]]
    if args.vararg is not None:
        call_args.append("*" + args.vararg.arg)
    call_args += [f"{p.arg}={p.arg}" for p in args.kwonlyargs]
    if args.kwarg is not None:
        call_args.append("**" + args.kwarg.arg)
    params[0] = ast.arg(tangent)
    fdef.name = vjp.__name__.replace("_vjp", "") + "_jvp"
    fdef.body = [ast.Return(ast.parse(f"({_reference(fn, vjp.__globals__)}"
                                      f"({', '.join(call_args)}),)", mode="eval").body)]
    fdef.decorator_list = []
    source = ast.unparse(ast.fix_missing_locations(fdef)) + "\n"
    return compile_rule(source, fdef.name, vjp.__globals__, rule_name(fn) + " jvp")


def _reference(fn, scope: dict) -> str:
    """Source text naming ``fn`` from a module whose globals are ``scope``."""
    for prefix, module in (("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft)):
        if scope.get("np") is np and getattr(module, getattr(fn, "__name__", ""), None) is fn:
            return f"{prefix}.{fn.__name__}"
    for name, value in scope.items():
        if value is fn and not name.startswith("_"):
            return name
    raise SrcgradError(f"cannot name {rule_name(fn)} in the rule module: import it there")
