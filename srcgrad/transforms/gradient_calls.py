"""Guarantees afterwards: a gradient made and called in one expression from a function known
at transform time (``srcgrad.grad(f)(x)``, ``value_and_grad(f, argnums=1)(x, y)``) is called
through a name bound to that gradient function.

Such a call is then a call of a known function: differentiating the code around it
differentiates the gradient's generated wrapper (``api_forward.source_function``) through
its sweeps, like any helper's, instead of making the gradient and dispatching the call at
run time (``runtime.call_fwd``) on every call, and again at every higher order. ``grad``
returns the same function for the same ``f`` and options, so calling the one made here is
what the user's code would have done; the names ``f`` and ``srcgrad`` are watched like every
global a transformation resolved (a rebinding rebuilds the code).

A gradient of a local def or lambda reading differentiable variables of the enclosing
function (``grad(lambda y: x * y)(c)``, ``grad(inner)(c)``: the closure form of perturbation
confusion) reaches this pass closure-converted by desugar, ``_rt.apply(grad(_rt.bind(inner,
(), {'x': x})), (c,), {})``: ``inner`` reads ``x`` through a keyword parameter of its own.
Such a call is made to pass the captured values at the call instead, ``_rt.apply(grad(
_rt.stop_gradient(inner)), (c,), {'x': x})``: the gradient is taken with respect to the
positional arguments the user's call differentiates, and ``x`` is an argument of the call to
the gradient, which differentiating the code around it differentiates like any other
(dispatched at run time, ``runtime.call_fwd``, twice at most). ``inner`` itself then carries no
gradient: all it reads of the caller's differentiable values are those keywords. A gradient of
such a function made and not called at once (``g = grad(inner)``) is refused at the line.
"""
from __future__ import annotations

import types

import gast

from ..errors import SrcgradError
from . import astutil as A
from .context import Context
from .resolve import static_value

# options of grad/value_and_grad/elementwise_grad that only choose which gradient is made
# (verbose prints, jit compiles, checkpoint changes how: those calls stay as written)
_OPTIONS = frozenset({"wrt", "argnums", "has_aux", "preserve_result", "holomorphic"})


def fold_gradient_calls(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Call):
            made = _made_gradient(node.func, ctx)
            if made is not None:
                name = f"{made[1].__name__.replace('<lambda>', 'lambda')}_{made[2]}"
                node.func = A.located(A.load(ctx.helper(made[0], name)), node.func)
        elif A.called_attr(node, ctx.rt) == "apply" and len(node.args) == 3 and not node.keywords:
            _pass_captures(node, ctx)
    _refuse_bound_gradients(tree, ctx)
    return tree


def _pass_captures(apply: gast.Call, ctx: Context) -> None:
    """``_rt.apply(grad(_rt.bind(f, (), {'x': x})), args, {...})`` made to read
    ``_rt.apply(grad(_rt.stop_gradient(f)), args, {..., 'x': x})`` (see the module's doc)."""
    made, _, kwargs = apply.args
    if not (isinstance(made, gast.Call) and made.args and _is_maker(made.func, ctx)
            and A.called_attr(made.args[0], ctx.rt) == "bind"):
        return
    bound = made.args[0]
    if len(bound.args) != 3 or bound.keywords:
        return
    fn, positional, captured = bound.args
    if not (isinstance(positional, gast.Tuple) and not positional.elts
            and _constant_keys(captured) and _constant_keys(kwargs)):
        return
    if {k.value for k in captured.keys} & {k.value for k in kwargs.keys}:
        return  # (a keyword named like a captured variable: the call raises, as written)
    made.args[0] = A.located(A.call(A.attr(ctx.rt, "stop_gradient"), fn), bound)
    kwargs.keys += captured.keys
    kwargs.values += captured.values


def _refuse_bound_gradients(tree, ctx: Context) -> None:
    """A gradient made of a function value carrying differentiable values (a closure over
    them not called where the gradient is made, a ``functools.partial`` of them)."""
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and _is_maker(node.func, ctx) and any(
                A.called_attr(a, ctx.rt) in ("bind", "bind_again")
                for a in node.args):
            ctx.problem(node, "a gradient of a function reading differentiable values of "
                              "its caller, made here but not called at once",
                        "Call the gradient where it is made (grad(inner)(y)), or pass those "
                        "values to the function as arguments.")


def _is_maker(func, ctx: Context) -> bool:
    if not _static(func, ctx):
        return False
    try:
        return getattr(static_value(func, ctx), "__srcgrad_makes_gradient__", False)
    except KeyError:
        return False


def _constant_keys(node) -> bool:
    return isinstance(node, gast.Dict) and all(
        isinstance(k, gast.Constant) and isinstance(k.value, str) for k in node.keys)


def _made_gradient(call: gast.Call, ctx: Context):
    """``(gradient, f, maker name)`` for ``call`` making a gradient of a function known at
    transform time with constant options; None for any other call."""
    if any(isinstance(a, gast.Starred) for a in call.args) or not call.args \
            or len(call.args) > 2:
        return None
    if any(k.arg not in _OPTIONS for k in call.keywords):
        return None
    if not all(_static(n, ctx) for n in [call.func, call.args[0]]):
        return None
    try:
        maker = static_value(call.func, ctx)
        if not getattr(maker, "__srcgrad_makes_gradient__", False):
            return None
        f = static_value(call.args[0], ctx)
        if not isinstance(f, types.FunctionType):
            return None
        options = [_constant(a) for a in call.args[1:]]
        keywords = {k.arg: _constant(k.value) for k in call.keywords}
        made = maker(f, *options, **keywords)
    except (SrcgradError, KeyError, TypeError, ValueError):
        # not constant, or grad refuses it: then it refuses it at run time, as written
        return None
    if getattr(made, "__srcgrad_grad__", None) is None:
        return None  # (made some other way, e.g. for a function with *args)
    return made, f, maker.__name__


def _static(node, ctx: Context) -> bool:
    """Whether ``node`` is a name or attribute chain whose value is fixed for this build: not
    a local, and not a closure's cell, which differs between closures sharing a build (as
    resolve does; srcgrad's own generated code has one fixed set)."""
    root = node
    while isinstance(root, gast.Attribute):
        root = root.value
    if not isinstance(root, gast.Name) or root.id in ctx.local_names:
        return False
    return root.id not in ctx.closure or ctx.own_code or isinstance(
        ctx.closure[root.id], types.ModuleType)


def _constant(node):
    """The value of a constant option (a number, a name string, a tuple of those)."""
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, (gast.Tuple, gast.List)):
        return tuple(_constant(e) for e in node.elts)
    raise ValueError("not a constant")
