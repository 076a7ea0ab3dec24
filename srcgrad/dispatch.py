"""Calls whose target is known only at run time (a function passed in, a local def, a
lambda, a method): what ``runtime.call_fwd``/``method_fwd``/``call_bwd`` and their forward-mode
twins do, and how those helpers are themselves differentiated when a generated sweep is
transformed again (reverse over reverse: ``_redispatch_fwd`` and the ``_call_*_*`` pairs).

Generated code calls the helpers through ``_rt`` like every runtime helper, but running a
call means building the callee's adjoint: the API layer, above the runtime. So the helpers in
runtime.py are stubs that forward here, and this module installs itself with
``runtime.connect_dispatch`` when srcgrad is imported (no import from the runtime upwards).

Records: ``call_fwd`` returns ``(value, record)``, the record one of the types in
call_records.py (``UserCall``, ``RuleCall``, ``ApplyCall``, ``ReceiverlessCall``, and
``Redispatch`` for a differentiated helper).
"""
from __future__ import annotations

import inspect
import sys
from typing import Any, NamedTuple

import numpy as np

from . import runtime
from .adapters import route
from .api import dynamic_backward, dynamic_forward, nondifferentiable_rule, user_sweeps
from .api_forward import dynamic_backward_jvp, dynamic_forward_jvp, dynamic_jvp
from .call_records import (RULE_ARGS, RULE_VALUE, USER_SAVED, ApplyCall,
                           ReceiverlessCall, Redispatch, RuleCall, UserCall,
                           record_derivative)
from .errors import MissingRuleError, UnsupportedFeatureError, UnsupportedSyntaxError, unnested_api
from .rules import lookup
from .runtime import ZERO, container_method, add, is_zero, part, receiver_of
from .transforms.binding import rule_cotangents
from .transforms.desugar import changes_self

__all__ = ["call_fwd", "method_fwd", "call_bwd", "call_jvp", "method_jvp", "call_fwd_jvp",
           "method_fwd_jvp", "call_bwd_jvp"]


def call_fwd(fn, *args, **kwargs):
    """Forward sweep of a call to a function value (argument, local def, lambda): returns
    ``(value, record)``; ``call_bwd(record, g)`` gives ``(positional, keyword)`` gradients."""
    if fn is runtime.call_fwd or fn is runtime.method_fwd or fn is runtime.call_bwd:
        return _redispatch_fwd(fn, args, kwargs)
    refuse_unnested(fn)
    return dynamic_forward(fn, args, kwargs)


def refuse_unnested(fn) -> None:
    """Refuse to differentiate a call of one of srcgrad's entry points whose machinery is not
    differentiable (``__srcgrad_not_nested__``: vjp, jvp, hvp, a function vmap made), or of
    a Python function numpy applies element by element (``np.vectorize(f)``: numpy's loop,
    not source srcgrad can follow; it was refused inside numpy's own source, naming its
    ``*args``. ``np.frompyfunc(f, ...)`` makes a ufunc, for which a rule may be registered:
    a missing rule); the traceback's note names the user's line."""
    api = getattr(fn, "__srcgrad_not_nested__", None)
    if api is not None:
        what, hint = unnested_api(api)
        raise UnsupportedFeatureError(f"{what} is not supported. {hint}")
    if isinstance(fn, np.vectorize):
        raise UnsupportedFeatureError(
            "calling a function made by np.vectorize(f) with differentiable values is not "
            "supported: numpy applies f element by element in its own loop, which srcgrad "
            "cannot differentiate. Write f with numpy operations on whole arrays (it then "
            "applies to arrays as it is), or apply it in a comprehension "
            "(np.array([f(t) for t in x])).")


def refuse_third_order(fn, args) -> None:
    """Refuse to differentiate one of the dispatch helpers again: a call known only at run
    time, differentiated twice already (its second derivative calls them through
    ``call_fwd``), would need this module's Python differentiated, which srcgrad cannot do.
    The traceback's note names the user's line."""
    if not (fn is runtime.call_fwd or fn is runtime.method_fwd or fn is runtime.call_bwd):
        return
    callee = _callee_name(fn, args)
    how = "make it in the call, srcgrad.grad(f)(...) of a module-level f" \
        if callee.startswith("a gradient") else "call a module-level function by its name"
    raise UnsupportedFeatureError(
        f"a third derivative through {callee}, a function known only at run time (a "
        f"parameter, a local or closure variable, a method), is not supported: srcgrad "
        f"differentiates such calls twice at most, in reverse or forward mode. Instead, "
        f"{how} in the differentiated code: srcgrad then differentiates it as a known "
        f"callee, to any order.")


def _callee_name(helper, args) -> str:
    """How a message names the function a dispatch helper's call stands for."""
    while helper is runtime.call_fwd and args and callable(args[0]) and args[0] in (
            runtime.call_fwd, runtime.method_fwd, runtime.call_bwd):
        helper, args = args[0], args[1:]
    if helper is runtime.method_fwd and len(args) >= 2:
        return f"{type(args[0]).__name__}.{args[1]}()"
    if helper is runtime.call_fwd and len(args) > 1 and args[0] is runtime.apply:
        args = args[1:]  # (a call spreading arguments, or passing a closure's captures)
    if helper is runtime.call_fwd and args:
        name = getattr(args[0], '__qualname__', type(args[0]).__name__)
        # a local function's qualname runs through the generated sweeps that define it
        name = f"{name.rpartition('<locals>.')[2]}()"
        made = getattr(args[0], "__srcgrad_grad__", None)  # (wraps copies f's name)
        return f"a gradient of {name}" if made is not None else name
    return "a call"


def method_fwd(obj, name, *args, **kwargs):
    """Like ``call_fwd`` for ``obj.name(...)``: gradients include ``obj`` as argument 0."""
    special = container_method(obj, name)
    if special is not None:
        return dynamic_forward(special, (obj,) + args, kwargs)
    if _receiverless(obj, name):
        # no instance argument: the receiver gets no gradient
        value, record = dynamic_forward(getattr(obj, name), args, kwargs)
        return value, ReceiverlessCall(record)
    return dynamic_forward(_method_target(obj, name), (obj,) + args, kwargs)


def call_bwd(record, g):
    if isinstance(record, Redispatch):
        return record.backward(record.data, g)
    if isinstance(record, ReceiverlessCall):
        positional, keyword = dynamic_backward(record.record, g)
        return [None] + list(positional), keyword
    return dynamic_backward(record, g)


def call_jvp(fn, tangents, kw_tangents, *args, **kwargs):
    """``(value, tangent)`` of a call to a function value known only at run time (argument,
    local def, lambda); ``tangents`` align with ``args`` (lazy zeros allowed), ``kw_tangents``
    maps keyword names to tangents."""
    refuse_unnested(fn)
    refuse_third_order(fn, args)
    return dynamic_jvp(fn, args, kwargs, tangents, kw_tangents)


def method_jvp(obj, d_obj, name, tangents, kw_tangents, *args, **kwargs):
    """Like ``call_jvp`` for ``obj.name(...)``, ``d_obj`` being the tangent of ``obj``."""
    if _receiverless(obj, name):  # a static or class method: obj is not an argument
        return dynamic_jvp(getattr(obj, name), args, kwargs, tuple(tangents), kw_tangents)
    return dynamic_jvp(_method_target(obj, name), (obj,) + args, kwargs,
                       (d_obj,) + tuple(tangents), kw_tangents)


def call_fwd_jvp(tangents, kw_tangents, fn, *args, **kwargs):
    """Forward mode of ``call_fwd``: ``((value, record), (d_value, d_record))``;
    ``tangents`` align with ``(fn,) + args``."""
    refuse_third_order(fn, args)
    return dynamic_forward_jvp(fn, args, kwargs, tuple(tangents[1:]), kw_tangents,
                               tangents[0])  # (an object with __call__ has a tangent)


def method_fwd_jvp(tangents, kw_tangents, obj, name, *args, **kwargs):
    """Forward mode of ``method_fwd``; ``tangents`` align with ``(obj, name) + args``."""
    if _receiverless(obj, name):  # as method_fwd: a ReceiverlessCall record
        (value, record), (d_value, d_record) = dynamic_forward_jvp(
            getattr(obj, name), args, kwargs, tuple(tangents[2:]), kw_tangents)
        return (value, ReceiverlessCall(record)), \
            (d_value, record_derivative(ReceiverlessCall, record=d_record))
    return dynamic_forward_jvp(_method_target(obj, name), (obj,) + args, kwargs,
                               (tangents[0],) + tuple(tangents[2:]), kw_tangents)


def call_bwd_jvp(tangents, kw_tangents, record, g):
    """Forward mode of ``call_bwd``; ``tangents`` are those of ``(record, g)``."""
    return dynamic_backward_jvp(record, g, tangents[0], tangents[1])


# -- reverse over reverse of the dispatch helpers above ----------------------------------------
# A generated sweep differentiated again in reverse mode calls ``call_fwd``, ``method_fwd``
# and ``call_bwd`` through ``call_fwd`` itself (the transformer treats them as calls known
# only at run time). Each runs the same computation through ``api.dynamic_forward`` of the
# generated sweep or rule vjp it stands for, so that the (value, record) pairs they return
# can be differentiated; the record is a ``Redispatch``, whose ``data`` ``call_bwd`` hands
# to its ``backward``. Gradients align with the helper's own arguments.

class _CallFwdData(NamedTuple):
    """What ``_call_fwd_bwd`` needs of a ``call_fwd``/``method_fwd`` call: the record of
    running the callee's forward function (``inner``) and how the helper's arguments line
    up with the callee's."""

    inner: Any  # RuleCall of the rule's forward, or the record of the callee's fwd sweep
    n_args: int
    lead: int  # helper arguments before the callee's: 1 (call_fwd) or 2 (method_fwd)
    receiver: bool  # method_fwd: obj is the callee's first argument
    n_self: int = 0  # a bound method's instance, before the call's arguments
    called_object: bool = False  # call_fwd(obj, ...) of an object with __call__ (or of a
    # method bound to obj): its gradient is the callee's self's (runtime.is_receiver_method)


def _redispatch_fwd(helper, args, kwargs):
    if helper is runtime.call_fwd:
        return _call_fwd_fwd(args[0], args[1:], kwargs, 1)
    if helper is runtime.method_fwd:
        obj, name = args[0], args[1]
        if _receiverless(obj, name):  # as method_fwd: obj.name(*rest), a ReceiverlessCall
            (value, record), inner = _call_fwd_fwd(getattr(obj, name), tuple(args[2:]),
                                                   kwargs, 1)
            return (value, ReceiverlessCall(record)), Redispatch(_receiverless_fwd_bwd, inner)
        return _call_fwd_fwd(_method_target(obj, name), (obj,) + tuple(args[2:]), kwargs, 2,
                             receiver=True)
    return _call_bwd_fwd(args[0], args[1])


def _receiverless(obj, name) -> bool:
    """Whether method_fwd calls ``obj.name`` without ``obj``: a static or class method, or
    any function read from a class (``Cls.method(a, ...)`` of a class known only at run time,
    a class defined in the function: its arguments are the whole call)."""
    if isinstance(obj, type):
        return True
    return container_method(obj, name) is None and isinstance(
        inspect.getattr_static(type(obj), name, None), (staticmethod, classmethod))


def _receiverless_fwd_bwd(inner, g):
    """Gradients of ``method_fwd(obj, name, *rest)``'s arguments, for a static or class
    method, from the cotangent of its ``(value, ReceiverlessCall(record))``: none for obj
    and the name, the call's for the rest (``inner`` ran it as ``call_fwd(fn, *rest)``)."""
    grads, g_kwargs = inner.backward(inner.data, (part(g, 0), part(part(g, 1), 0)))
    return [ZERO, ZERO] + list(grads[1:]), g_kwargs


def _method_target(obj, name):
    """The function ``method_fwd`` calls for ``obj.name(...)`` (with ``obj`` first)."""
    method = container_method(obj, name)
    if method is not None:
        return method
    method = getattr(type(obj), name, None)
    if method is None or not hasattr(method, "__code__"):
        raise MissingRuleError(f"{type(obj).__name__}.{name}")
    if method_changes_receiver(type(obj), name):
        raise UnsupportedSyntaxError.from_message(
            f"'{type(obj).__name__}.{name}(...)' changes its object in place (it stores into "
            f"self, or changes what self holds), called on an object of a class srcgrad "
            f"could not tell from the function's source (a parameter, a helper's result) "
            f"with differentiable values or on one holding them: srcgrad differentiates the "
            f"call, not the change, which the object's later reads would miss (a wrong "
            f"gradient). Make the object in the function by calling its class (m = "
            f"{type(obj).__name__}(...)), or write the method as a function returning the new "
            f"values (m.W = scaled(m.W, v)).")
    return method



def _call_fwd_fwd(fn, args, kwargs, lead, receiver=False):
    """``call_fwd(fn, *args)`` (``lead`` = 1) or ``method_fwd(obj, name, *rest)`` (``lead`` =
    2, ``args`` = ``(obj,) + rest``) whose ``(value, record)`` can be differentiated."""
    refuse_third_order(fn, args)
    fn = route(fn, args, kwargs)
    if lookup(fn) is not None or nondifferentiable_rule(fn) is not None:
        value, record = dynamic_forward(fn, args, kwargs)
        data = _CallFwdData(record, len(args), lead, receiver)
        return (value, record), Redispatch(_call_fwd_bwd, data)
    self_args, names, wrt, fwd, bwd = user_sweeps(fn, args, kwargs)
    (value, saved), inner = dynamic_forward(fwd, self_args + tuple(args), kwargs)
    record = UserCall(bwd, saved, len(self_args), names, len(args), kwargs, wrt)
    data = _CallFwdData(inner, len(args), lead, receiver, len(self_args),
                        called_object=bool(self_args) and self_args[0] is receiver_of(fn))
    return (value, record), Redispatch(_call_fwd_bwd, data)


def _call_fwd_bwd(data, g):
    """Gradients of ``call_fwd``/``method_fwd``'s arguments from the cotangent ``g`` of
    their ``(value, record)``."""
    g_value, g_record = part(g, 0), part(g, 1)
    if isinstance(data.inner, RuleCall):
        # the record is the RuleCall itself: its args and value pass through as such
        g_value = add(g_value, part(g_record, RULE_VALUE))
        g_args, g_kwargs = [ZERO] * data.n_args, {}
        if not is_zero(g_value):
            g_args, g_kwargs = dynamic_backward(data.inner, g_value)
        g_record_args = part(g_record, RULE_ARGS)
        g_args = [add(_zero_if_none(a), part(g_record_args, i)) for i, a in enumerate(g_args)]
        g_kwargs = {k: _zero_if_none(v) for k, v in g_kwargs.items()}
    else:
        # a UserCall: its value and saved come from the callee's fwd
        grads, g_kwargs = dynamic_backward(data.inner, (g_value, part(g_record, USER_SAVED)))
        g_args = [_zero_if_none(a) for a in grads[data.n_self:]]
        g_kwargs = {k: _zero_if_none(v) for k, v in g_kwargs.items()}
        if data.called_object:  # call_fwd(obj, *args): obj's gradient is its __call__'s self's
            return [_zero_if_none(grads[0])] + g_args, g_kwargs
    if data.receiver:  # method_fwd(obj, name, *rest): obj's gradient first, none for the name
        return [g_args[0], ZERO] + g_args[1:], g_kwargs
    return [ZERO] + g_args, g_kwargs


def _call_bwd_fwd(record, g):
    """``call_bwd(record, g)`` whose ``(positional, keyword)`` result can be differentiated."""
    if isinstance(record, ReceiverlessCall):  # a static or class method: no obj gradient
        (positional, keyword), inner = _call_bwd_fwd(record.record, g)
        return ([None] + list(positional), keyword), \
            Redispatch(_receiverless_bwd_bwd, (inner, len(positional)))
    if isinstance(record, ApplyCall):  # apply(f, args, kwargs) of a plain f
        (positional, keyword), inner = _call_bwd_fwd(record.record, g)
        result = [None, tuple(ZERO if p is None else p for p in positional),
                  {k: ZERO if v is None else v for k, v in keyword.items()}], {}
        return result, Redispatch(_apply_bwd_bwd, (inner, len(positional), tuple(keyword)))
    if isinstance(record, RuleCall):
        grads, inner = dynamic_forward(record.rule.vjp, (g, record.value) + tuple(record.args),
                                       record.kwargs)
        return rule_cotangents(record.rule, record.args, record.kwargs, grads), \
            Redispatch(_call_bwd_bwd, (inner, record))
    wrt_grads, inner = dynamic_forward(record.bwd, (record.saved, g), {})
    grads = record.at_call(record.per_parameter(wrt_grads))
    return grads, Redispatch(_call_bwd_bwd, (inner, record))


def _call_bwd_bwd(data, g):
    """Gradients of ``call_bwd``'s ``(record, g)`` from the cotangent of its result."""
    inner, record = data
    g_positional, g_keyword = part(g, 0), part(g, 1)
    if isinstance(record, RuleCall):
        g_grads = tuple(part(g_positional, i) if i < len(record.args) else ZERO
                        for i in record.rule.diff_args)
        grads, _ = dynamic_backward(inner, g_grads)  # of rule.vjp(g, value, *args)
        grads = [_zero_if_none(x) for x in grads]
        g_record = record_derivative(RuleCall, args=tuple(grads[2:]), value=grads[1])
        return [g_record, grads[0]], {}
    names = record.names
    g_grads = [ZERO] * len(names)
    for i in range(record.n_args):
        g_grads[record.n_self + i] = part(g_positional, i)
    for k in record.kwargs:
        if k in names:
            j = names.index(k)
            g_grads[j] = add(g_grads[j], part(g_keyword, k))
    (g_saved, g_g), _ = dynamic_backward(inner, tuple(g_grads[i] for i in record.wrt))
    g_record = record_derivative(UserCall, saved=_zero_if_none(g_saved))
    return [g_record, _zero_if_none(g_g)], {}


def _receiverless_bwd_bwd(data, g):
    """Gradients of ``call_bwd``'s ``(ReceiverlessCall(record), g)`` from the cotangent of
    its ``([None, *positional], keyword)`` result."""
    inner, n = data
    g_positional = part(g, 0)
    inner_cotangent = ([part(g_positional, i + 1) for i in range(n)], part(g, 1))
    (g_record, g_g), _ = inner.backward(inner.data, inner_cotangent)
    return [record_derivative(ReceiverlessCall, record=g_record), g_g], {}


def _apply_bwd_bwd(data, g):
    """Gradients of ``call_bwd``'s ``(ApplyCall(record), g)`` from the cotangent of its
    ``([_, positional, keyword], {})`` result."""
    inner, n, keys = data
    grads = part(g, 0)
    g_positional, g_keyword = part(grads, 1), part(grads, 2)
    inner_cotangent = ([part(g_positional, i) for i in range(n)],
                       {k: part(g_keyword, k) for k in keys})
    (g_record, g_g), _ = inner.backward(inner.data, inner_cotangent)
    return [record_derivative(ApplyCall, record=g_record), g_g], {}


def _zero_if_none(g):
    return ZERO if g is None else g


_RECEIVER_CHANGES: dict = {}


def method_changes_receiver(cls, name: str) -> bool:
    """Whether the method ``cls.name`` (a Python function) changes its object in place,
    itself or through other methods of self (desugar.changes_self, the check of a class
    known at transform time), remembered per class and name."""
    changes = _RECEIVER_CHANGES.get((cls, name))
    if changes is None:
        changes = _RECEIVER_CHANGES[cls, name] = changes_self(cls, name, set())
    return changes


runtime.connect_dispatch(sys.modules[__name__])
