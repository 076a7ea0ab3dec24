"""Turning a rule's vjp/jvp into expressions in generated code.

A rule whose body is a single ``return (e0, e1, ...)`` is inlined element by element, its
parameters replaced by the call's operands (a ``*args`` parameter by a tuple display of the
extra positional operands, ``**kwargs`` by a dict display of the extra keywords); any other
rule is called. Names the rule's module uses (``np``, runtime helpers) are bound through
``Context.helper`` so generated code never depends on a merged namespace. An argument of a
call in the inlined expression that equals the callee's default is left out, and other
arguments of parameters with defaults are passed by keyword: ``expand_to(g, x)`` and
``expand_to(g, x, axis=1, keepdims=True)``, not ``expand_to(g, x, None, False)``.
"""
from __future__ import annotations

import builtins
import inspect
import textwrap
import types
from dataclasses import dataclass
from functools import lru_cache

import gast

from .. import runtime
from . import astutil as A
from .context import Context


@dataclass
class Template:
    params: list[str]  # every parameter name, in order (g, ans, ... for vjp)
    defaults: dict  # parameter name -> default value node
    elements: list | None  # the returned tuple's expressions, or None if not inlinable
    positional: int = 0  # how many of ``params`` can be given positionally
    vararg: str | None = None  # the name of a ``*args`` parameter
    kwarg: str | None = None  # the name of a ``**kwargs`` parameter
    readable: bool = True  # False when the source could not be read


@lru_cache(maxsize=None)
def template(fn) -> Template:
    """Parse a rule function once into an inlining template."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        fdef = gast.parse(src).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        sig = inspect.signature(fn)
        return Template(list(sig.parameters), {}, None, readable=False)
    args = fdef.args
    positional = [a.id for a in args.posonlyargs + args.args]
    params = positional + [a.id for a in args.kwonlyargs]
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults.update({a.id: d for a, d in zip(args.kwonlyargs, args.kw_defaults)
                     if d is not None})
    body = [s for s in fdef.body if not (isinstance(s, gast.Expr)
                                         and isinstance(s.value, gast.Constant))]
    elements = None
    # a closure's free variables have no name in generated code: such a rule is called
    closure = bool(getattr(getattr(fn, "__code__", None), "co_freevars", ()))
    if (not closure and isinstance(fdef, gast.FunctionDef) and len(body) == 1
            and isinstance(body[0], gast.Return) and isinstance(body[0].value, gast.Tuple)
            and not any(isinstance(n, (gast.Lambda, gast.ListComp, gast.DictComp))
                        for n in gast.walk(body[0]))):
        elements = body[0].value.elts
    return Template(params, defaults, elements, len(positional),
                    args.vararg.id if args.vararg is not None else None,
                    args.kwarg.id if args.kwarg is not None else None)


def bind(tmpl: Template, leading: list, args: list, keywords: dict):
    """Map each template parameter to an expression node, or None if binding fails."""
    if not tmpl.readable:
        return None
    values = list(leading) + list(args)
    names = tmpl.params
    positional = names[:tmpl.positional]
    if len(values) > len(positional) and tmpl.vararg is None:
        return None
    mapping = dict(zip(positional, values))
    extra_keywords = {}
    for k, v in keywords.items():
        if k in mapping or (k not in names and tmpl.kwarg is None):
            return None
        if k in names:
            mapping[k] = v
        else:
            extra_keywords[k] = v
    # ``*args`` and ``**kwargs`` become a tuple and a dict display of what they collect
    if tmpl.vararg is not None:
        mapping[tmpl.vararg] = gast.Tuple(elts=values[len(positional):], ctx=gast.Load())
    if tmpl.kwarg is not None:
        mapping[tmpl.kwarg] = gast.Dict(keys=[A.const(k) for k in extra_keywords],
                                        values=list(extra_keywords.values()))
    for name in names:
        if name not in mapping:
            if name not in tmpl.defaults:
                return None
            mapping[name] = tmpl.defaults[name]
    return mapping


def instantiate(fn, element, mapping: dict, ctx: Context):
    """One element of ``fn``'s template with parameters substituted and globals bound."""
    free = _names_in(element) - set(mapping)
    renames = {name: global_ref(fn, name, ctx) for name in sorted(free)}
    if _passes_defaults(fn, element):
        element = A.deepcopy(element)  # (templates are cached and shared: tidy a copy)
        scope = getattr(fn, "__globals__", {})
        for call in [n for n in gast.walk(element) if isinstance(n, gast.Call)]:
            _leave_out_defaults(call, scope, mapping)
        element = _IdentityCalls(scope).visit(element)
    # one simultaneous substitution: the user's operands are never renamed themselves
    return A.substitute(element, {**mapping, **renames})


_PASSES_DEFAULTS: dict[int, bool] = {}


def _passes_defaults(fn, element) -> bool:
    """Whether a call in (immutable, cached) ``element`` of rule function ``fn`` gives an
    argument to a parameter that has a default."""
    known = _PASSES_DEFAULTS.get(id(element))
    if known is None:
        scope = getattr(fn, "__globals__", {})
        known = _PASSES_DEFAULTS[id(element)] = any(
            any(p.default is not p.empty for p in _parameters(n.func, scope)[:len(n.args)])
            or bool(n.keywords) for n in gast.walk(element) if isinstance(n, gast.Call))
    return known


def _parameters(func, scope: dict) -> list:
    """The parameters of the callee ``func`` names in ``scope``; [] when unknown."""
    try:
        return list(inspect.signature(_resolve(func, scope)).parameters.values())
    except (TypeError, ValueError):
        return []


def _leave_out_defaults(call: gast.Call, scope: dict, mapping: dict) -> None:
    """Drop the arguments of ``call`` (a template's, in the rule's module ``scope``) that
    are bound to constants equal to the callee's defaults, and pass the other arguments of
    parameters with defaults by keyword. Calls of callees without a readable signature,
    with ``*args``, or with positional-only parameters are left alone."""
    params = _parameters(call.func, scope)
    if not params or any(isinstance(a, gast.Starred) for a in call.args) \
            or len(call.args) > len(params) \
            or any(p.kind is p.POSITIONAL_ONLY for p in params[:len(call.args)]):
        return
    by_name = {p.name: p for p in params}

    def is_default(node, param) -> bool:
        if isinstance(node, gast.Name):
            node = mapping.get(node.id, node)
        return isinstance(node, gast.Constant) and param is not None \
            and param.default is not param.empty and type(node.value) is type(param.default) \
            and node.value == param.default

    positional, keywords = [], []
    for node, param in zip(call.args, params):
        if param.kind is param.VAR_POSITIONAL:
            return
        if param.default is param.empty:
            positional.append(node)
        elif not is_default(node, param):
            keywords.append(gast.keyword(arg=param.name, value=node))
    keywords += [k for k in call.keywords if k.arg is None
                 or not is_default(k.value, by_name.get(k.arg))]
    call.args, call.keywords = positional, keywords


class _IdentityCalls(gast.NodeTransformer):
    """``f(e)`` -> ``e`` for a helper ``f`` marked ``identity_when_defaulted`` whose other
    arguments were all left out as defaults (``cast_to(g)``: no cast)."""

    def __init__(self, scope: dict):
        self.scope = scope

    def visit_Call(self, node):
        self.generic_visit(node)
        if len(node.args) == 1 and not node.keywords \
                and not isinstance(node.args[0], gast.Starred) \
                and getattr(_resolve(node.func, self.scope), "identity_when_defaulted", False):
            return node.args[0]
        return node


def _resolve(func, scope: dict):
    """The object a callee expression names in ``scope``: a name, or an attribute of a
    module; None for anything else."""
    if isinstance(func, gast.Name):
        return scope[func.id] if func.id in scope else getattr(builtins, func.id, None)
    if isinstance(func, gast.Attribute):
        owner = _resolve(func.value, scope)
        if isinstance(owner, types.ModuleType):
            return getattr(owner, func.attr, None)
    return None


def global_ref(fn, name: str, ctx: Context):
    """An expression generated code can use for global ``name`` of ``fn``'s module."""
    scope = getattr(fn, "__globals__", {})
    if name in scope:
        obj = scope[name]
    elif hasattr(builtins, name):
        return A.load(name) if name not in ctx.local_names else A.load(
            ctx.helper(getattr(builtins, name), name))
    else:
        return A.load(name)
    if obj is runtime:
        return A.load(ctx.rt)
    if getattr(runtime, name, None) is obj and not isinstance(obj, types.ModuleType):
        return A.attr(ctx.rt, name)
    return A.load(ctx.helper(obj, name))


_NAMES: dict[int, frozenset] = {}


def _names_in(element) -> frozenset:
    """Names an (immutable, cached) template element mentions."""
    names = _NAMES.get(id(element))
    if names is None:
        names = _NAMES[id(element)] = frozenset(
            n.id for n in gast.walk(element) if isinstance(n, gast.Name))
    return names
