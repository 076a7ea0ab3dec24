"""Pullbacks that compute only the cotangents a node needs, cut from the rule's own source.

A rule's vjp returns a cotangent for every differentiable argument, also for a Python number
in ``x * 3`` or a tensor that does not require grad, where the facade throws the result away.
When the vjp body is a single ``return (a, b, ...)`` (the form the transformer inlines), the
facade compiles a copy of that function whose unneeded elements are ``None``: the same
expressions from the same registry entry, minus dead work. Anything else uses ``rule.vjp``.
"""
from __future__ import annotations

__all__ = ["pullback", "vjp_return"]

import copy
import inspect
import linecache
import textwrap
from typing import Any, Callable

import gast

from .. import codegen

_PARSED: dict[Any, Any] = {}
_PULLBACKS: dict[tuple, Callable] = {}


def vjp_return(fn: Any):
    """(function tree, parameter names, defaults, tuple elements) when ``fn``'s body is one
    ``return (a, b...)`` (a docstring aside), else None."""
    if fn in _PARSED:
        return _PARSED[fn]
    result = None
    try:
        # A wrapper (functools.wraps) would show the source of the function it wraps.
        if inspect.isfunction(fn) and not hasattr(fn, "__wrapped__"):
            tree = gast.parse(textwrap.dedent(inspect.getsource(fn)))
            func = tree.body[0]
            body = [s for s in func.body
                    if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant))]
            if isinstance(func, gast.FunctionDef) and len(body) == 1 and \
                    isinstance(body[0], gast.Return) and \
                    isinstance(body[0].value, gast.Tuple) and func.args.vararg is None and \
                    func.name == fn.__name__:
                params = [a.id for a in func.args.args]
                defaults = dict(zip(params[len(params) - len(func.args.defaults):],
                                    func.args.defaults))
                result = (func, params, defaults, body[0].value.elts)
    except (OSError, TypeError, SyntaxError, IndexError):
        result = None
    _PARSED[fn] = result
    return result


def pullback(vjp: Callable, needed: tuple[bool, ...]) -> Callable:
    """``vjp`` itself, or a copy computing only the cotangents flagged in ``needed``."""
    key = (vjp, needed)
    fn = _PULLBACKS.get(key)
    if fn is None:
        fn = _compile(vjp, needed) or vjp
        _PULLBACKS[key] = fn
    return fn


def _compile(vjp: Callable, needed: tuple[bool, ...]) -> Callable | None:
    if all(needed) or getattr(vjp, "__code__", None) is None or vjp.__code__.co_freevars:
        return None
    parsed = vjp_return(vjp)
    if parsed is None or len(parsed[3]) != len(needed):
        return None
    func = copy.deepcopy(parsed[0])
    elts = func.body[-1].value.elts
    for i, keep in enumerate(needed):
        if not keep:
            elts[i] = gast.Constant(value=None, kind=None)
    func.body = [func.body[-1]]
    func.decorator_list = []
    func.name = f"{vjp.__name__}_only_{''.join('1' if k else '0' for k in needed)}"
    source = codegen.to_source(gast.Module(body=[func], type_ignores=[]))
    filename = f"<srcgrad: pullback {vjp.__module__}.{func.name}>"
    # In linecache, so that tracebacks through the copy show its source.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    try:
        # The vjp's own globals: free names resolve exactly as in the rule's module.
        exec(compile(source, filename, "exec"), vjp.__globals__, namespace)
    except Exception:  # noqa: BLE001 - fall back to the rule's vjp, which is always right
        return None
    fn = namespace[func.name]
    fn.__defaults__ = vjp.__defaults__
    fn.__kwdefaults__ = vjp.__kwdefaults__
    return fn
