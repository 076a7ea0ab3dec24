"""User-defined differentiable operations: ``torch.autograd.Function`` subclasses.

As in PyTorch, ``forward(ctx, *args)`` runs with recording disabled and ``backward(ctx,
*grads)`` returns one gradient per ``forward`` argument (``None`` for non-differentiable ones).
The context *is* the graph node, named ``<ClassName>Backward``.

``MyFunction.as_rule()`` registers the subclass in the rule registry under
``MyFunction.apply`` (on first call), so that the source transformer can differentiate calls to
it with the same ``backward``. That vjp has no context from the forward pass, so it re-runs
``forward`` to get one; the Tensor facade keeps the context of the actual call instead.
Registration is explicit: every registered rule must carry a test domain and a jvp (the
registry's meta-tests check it), which a user's Function does not have.
"""
from __future__ import annotations

__all__ = ["Function", "FunctionCtx", "once_differentiable"]

import functools
import inspect
from typing import Any

import numpy as np

from .. import rules as _rules
from .grad_mode import STATE
from .graph import FREED_MESSAGE, Node
from ..errors import UnsupportedFeatureError
from . import dispatch
from .dispatch import raw_data, wrap


class _Grads(list):
    """Per-output gradients of a multi-output function; ``+`` adds them position by position."""

    def __add__(self, other):
        return _Grads(b if a is None else a if b is None else a + b
                      for a, b in zip(self, other))


class FunctionCtx(Node):
    """Context of one call of a Function: saved tensors and flags for ``backward``.

    Instances are the graph nodes of the calls (their class is ``<Name>Backward``); they
    accept arbitrary attributes (``ctx.constant = 3``), as in PyTorch.
    """

    _function: type = None  # the Function subclass, set on each node class
    saves = False  # becomes True for a node once tensors are saved

    @property
    def rule(self):  # a context is its own rule (``vjp`` below)
        return self

    def pullback(self, *args: Any, **kwargs: Any) -> tuple:
        return self.vjp(*args, **kwargs)

    def save_for_backward(self, *tensors: Any) -> None:
        self._saved = tuple(tensors)
        saved = [(t, t._vc, t._vc[0]) for t in tensors if isinstance(t, dispatch.Tensor)]
        self.vers = tuple(saved) or None
        self.saves = bool(saved)

    @property
    def saved_tensors(self) -> tuple:
        if self.raw is None:
            raise RuntimeError(FREED_MESSAGE)
        return getattr(self, "_saved", ())

    saved_variables = saved_tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self._non_differentiable = {id(t) for t in tensors}

    def mark_dirty(self, *tensors: Any) -> None:
        self._dirty = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = bool(value)

    def vjp(self, g: Any, ans: Any, *args: Any, **kwargs: Any) -> tuple:
        """Run the user's ``backward`` with Tensor gradients; raw arrays back unless recording."""
        create = isinstance(g, dispatch.Tensor) or (isinstance(g, _Grads) and any(
            isinstance(x, dispatch.Tensor) for x in g))
        grads = list(g) if isinstance(g, _Grads) else [g]
        like = ans if isinstance(ans, tuple) else (ans,)
        if getattr(self, "_materialize", True):
            grads = [np.zeros_like(a) if gi is None else gi for gi, a in zip(grads, like)]
        grads = [gi if gi is None or isinstance(gi, dispatch.Tensor) else wrap(np.asarray(gi))
                 for gi in grads]
        prev = STATE.enabled
        STATE.enabled = create
        try:
            result = self._function.backward(self, *grads)
        finally:
            STATE.enabled = prev
        result = result if isinstance(result, tuple) else (result,)
        n = len(self.args)
        if len(result) < n:
            raise RuntimeError(f"function {type(self).__name__} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(result)})")
        out = []
        for gi, arg in zip(result, self.args):
            if gi is None or not isinstance(arg, dispatch.Tensor):
                out.append(None)
                continue
            if isinstance(gi, dispatch.Tensor) and gi._data.shape != arg._data.shape:
                raise RuntimeError(f"Function {type(self).__name__} returned an invalid gradient "
                                   f"at index {len(out)} - got {list(gi._data.shape)} but "
                                   f"expected shape compatible with {list(arg._data.shape)}")
            out.append(gi if create else raw_data(gi))
        return tuple(out)


class _OutputPort(Node):
    """Routes the gradient of output ``index`` of a multi-output call to its context."""

    __slots__ = ("index", "count")
    saves = False

    @property
    def rule(self):
        return self

    def pullback(self, *args: Any, **kwargs: Any) -> tuple:
        return self.vjp(*args, **kwargs)

    def vjp(self, g: Any, ans: Any, *args: Any, **kwargs: Any) -> tuple:
        grads = _Grads([None] * self.count)
        grads[self.index] = g
        return (grads,)


class _FunctionMeta(type):
    """Gives each Function subclass its node classes (`<Name>Backward`)."""

    def __init__(cls, name: str, bases: tuple, namespace: dict):
        super().__init__(name, bases, namespace)
        # Named and placed as in PyTorch: <srcgrad.autograd.function.MyFnBackward object ...>
        cls._backward_cls = type(f"{name}Backward", (FunctionCtx,),
                                 {"_function": cls, "__module__": __name__})
        cls._port_cls = type(f"{name}Backward", (_OutputPort,),
                             {"__slots__": (), "__module__": __name__})


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable operations; call them with ``MyFunction.apply``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedFeatureError("You must implement the forward function for custom "
                                      "autograd.Function.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise UnsupportedFeatureError("You must implement either the backward or vjp method for "
                                      "your custom autograd.Function to use it with backward "
                                      "mode AD.")

    @classmethod
    def as_rule(cls):
        """The registry rule of ``cls.apply`` (registered on the first call)."""
        rule = _rules.lookup(cls.apply)
        return rule if rule is not None else _register_rule(cls)

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = _new_ctx(cls, args, kwargs)
        prev = STATE.enabled
        STATE.enabled = False
        try:
            outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            STATE.enabled = prev
        if not (prev and any(ctx.needs_input_grad)):
            return outputs
        return _connect(cls, ctx, args, outputs)


def _new_ctx(cls: type, args: tuple, kwargs: dict) -> FunctionCtx:
    ctx = object.__new__(cls._backward_cls)
    ctx.args = args
    ctx.raw = ()
    ctx.kw = {}
    ctx.ans = None
    ctx.hooks = None
    ctx.vers = None
    ctx.needs_input_grad = tuple(isinstance(a, dispatch.Tensor) and a._rg for a in args)
    ctx.edges = [(i, None, a.grad_fn or a) for i, a in enumerate(args)
                 if isinstance(a, dispatch.Tensor) and a._rg]
    ctx.diff_args = tuple(range(len(args)))
    ctx.kwargs = kwargs
    return ctx


def _connect(cls: type, ctx: FunctionCtx, args: tuple, outputs: Any) -> Any:
    """Attach the outputs of a recorded call to its context node."""
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    skip = getattr(ctx, "_non_differentiable", set())
    ids = {id(a) for a in args}
    tensors = []
    for out in outs:
        if isinstance(out, dispatch.Tensor) and id(out) in ids:
            out = out.detach()  # an input returned as is: a new alias carries the history
        tensors.append(out)
    ctx.ans = tuple(o._data if isinstance(o, dispatch.Tensor) else np.asarray(o) for o in tensors) \
        if not single else tensors[0]._data
    for i, out in enumerate(tensors):
        if not isinstance(out, dispatch.Tensor) or id(outs[i]) in skip or \
                out._data.dtype.kind not in "fc":
            continue
        if single:
            out.grad_fn = ctx
        else:
            port = object.__new__(cls._port_cls)
            port.index, port.count = i, len(tensors)
            port.args = (None,)
            port.raw = ()
            port.kw = {}
            port.ans = out._data
            port.hooks = None
            port.vers = None
            port.edges = [(0, None, ctx)]
            out.grad_fn = port
        out._rg = True
    return tensors[0] if single else tuple(tensors)


def once_differentiable(fn):
    """Decorator of ``backward`` (accepted for compatibility; srcgrad does not enforce it)."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        return fn(ctx, *args)
    return wrapper


# --------------------------------------------------------------------------- registry rule


def _register_rule(cls: type):
    """Register ``cls.apply`` in the rule registry (for the source transformer)."""
    params = list(inspect.signature(cls.forward).parameters.values())[1:]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        n = 1
    else:
        n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)

    def forward_on_arrays(*args, **kwargs):
        result = cls.apply(*[wrap(np.asarray(a)) if isinstance(a, np.ndarray) else a
                             for a in args], **kwargs)
        return raw_data(result) if not isinstance(result, tuple) else \
            tuple(raw_data(r) for r in result)

    def vjp(g, ans, *args, **kwargs):
        wrapped = [wrap(np.asarray(a)) if isinstance(a, np.ndarray) else a for a in args]
        for w in wrapped:
            if isinstance(w, dispatch.Tensor) and w._data.dtype.kind in "fc":
                w._rg = True
        ctx = _new_ctx(cls, tuple(wrapped), kwargs)
        prev = STATE.enabled
        STATE.enabled = False
        try:
            cls.forward(ctx, *wrapped, **kwargs)
        finally:
            STATE.enabled = prev
        ctx.ans = ans
        grads = ctx.vjp(g if not isinstance(g, tuple) else _Grads(g), ans, *args)
        return tuple(grads)[:n]

    vjp.__name__ = f"{cls.__name__}_vjp"
    forward_on_arrays.__name__ = f"{cls.__name__}_forward"
    rule = _rules.defrule(cls.apply, vjp, diff_args=tuple(range(n)),
                          name=f"{cls.__module__}.{cls.__qualname__}.apply")
    # Generated code passes numpy arrays; the user's forward expects Tensors.
    rule.fn = forward_on_arrays
    return rule
