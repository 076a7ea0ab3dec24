"""Graph nodes of the Tensor facade: one ``Node`` per recorded operation.

A node keeps the registry rule that computed its output, the raw (numpy) arguments, the
original arguments (Tensors included, for ``create_graph``), keyword arguments, the raw output
``ans``, and ``edges`` to the nodes (or leaf Tensors) that receive its input gradients. The
backward engine calls ``rule.vjp(g, ans, *raw, **kw)``; nothing here knows a derivative.

Node classes carry PyTorch's names (``MulBackward0``...): that is presentation only, chosen by
the facade per operation. ``saves`` tells whether PyTorch's node of that name keeps saved
tensors, which decides whether a second backward without ``retain_graph`` raises.
"""
from __future__ import annotations

__all__ = ["Node", "node_class", "AccumulateGrad", "RemovableHandle", "FREED_MESSAGE"]

import itertools
from typing import Any, Callable

from ..errors import UnsupportedFeatureError

# The facade's Tensor class, which this module sits below: handed over by dispatch.bind().
_tensor_class: Any = None


def bind(tensor_class: type) -> None:
    """Called by ``dispatch.bind``: the class whose instances may be node arguments."""
    global _tensor_class
    _tensor_class = tensor_class

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)

# PyTorch nodes that keep no saved tensors: a second backward through them works.
_SAVES_NOTHING = frozenset({
    "AddBackward0", "SubBackward0", "RsubBackward1", "NegBackward0", "SumBackward0",
    "SumBackward1", "MeanBackward0", "MeanBackward1", "ViewBackward0", "ReshapeAliasBackward0",
    "TransposeBackward0", "PermuteBackward0", "TBackward0", "UnsqueezeBackward0",
    "SqueezeBackward0", "SqueezeBackward1", "SelectBackward0", "SliceBackward0",
    "AliasBackward0", "CatBackward0", "StackBackward0", "CloneBackward0", "ToCopyBackward0",
    "ExpandBackward0", "UnsafeViewBackward0", "AddBackward1", "SubBackward1",
})


_WRAPS_NUMBERS = frozenset({"AddBackward0", "SubBackward0", "MulBackward0", "DivBackward0"})


class Node:
    """Base class of graph nodes (PyTorch calls them ``grad_fn``)."""

    # pullback: rule.vjp, or its copy computing only the needed cotangents (specialize.py)
    __slots__ = ("rule", "pullback", "args", "raw", "kw", "ans", "edges", "vers", "hooks",
                 "__weakref__")
    saves = True

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        """``((node_or_AccumulateGrad_or_None, 0), ...)`` per input, as in PyTorch."""
        if self.args is None:  # freed: only the inputs that receive gradients are known
            return tuple((t if isinstance(t, Node) else AccumulateGrad(t), 0)
                         for _, _, t in self.edges)
        # PyTorch wraps a Python number operand of + - * / into a tensor: it shows as None.
        numbers_count = type(self).__name__ in _WRAPS_NUMBERS
        out = []
        for arg in self.args:
            items = arg if isinstance(arg, (list, tuple)) else (arg,)
            for item in items:
                if isinstance(item, _tensor_class):
                    if item.grad_fn is not None:
                        out.append((item.grad_fn, 0))
                    elif item.requires_grad:
                        out.append((AccumulateGrad(item), 0))
                    else:
                        out.append((None, 0))
                elif numbers_count and isinstance(item, (int, float)):
                    out.append((None, 0))
        return tuple(out)

    def register_hook(self, hook: Callable) -> "RemovableHandle":
        """Hook ``hook(grad_inputs, grad_outputs)`` is not supported; use Tensor hooks."""
        raise UnsupportedFeatureError(
            "srcgrad nodes support Tensor.register_hook only; register the hook on the tensor")


_CLASSES: dict[tuple[str, bool], type] = {}


def node_class(name: str, saves: bool | None = None) -> type:
    """The Node subclass called ``name`` (created once, then cached).

    ``saves`` defaults to what PyTorch's node of that name does; a facade node standing for
    several PyTorch nodes (matmul of batches: ``UnsafeViewBackward0`` over ``BmmBackward0``)
    passes it explicitly.
    """
    if saves is None:
        saves = name not in _SAVES_NOTHING
    cls = _CLASSES.get((name, saves))
    if cls is None:
        # Module "builtins", as PyTorch's node classes: the default repr then reads
        # <MulBackward0 object at 0x...> (and IPython's <MulBackward0 at 0x...>).
        cls = type(name, (Node,), {"__slots__": (), "saves": saves, "__module__": "builtins"})
        _CLASSES[name, saves] = cls
    return cls


class AccumulateGrad:
    """The sink of a leaf tensor's gradient, shown in ``next_functions`` as in PyTorch."""

    __slots__ = ("variable",)
    __module__ = "builtins"  # prints as <AccumulateGrad object at 0x...>

    def __init__(self, variable: Any):
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    @property
    def next_functions(self) -> tuple:
        return ()



_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(_handle_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
