"""Tensor methods of autograd: requires_grad, .grad, hooks, backward, detach.

The state they read and write is the tensor's: ``_rg`` (requires grad), ``grad_fn`` (the node
that made it, None on a leaf), ``_grad`` (the accumulated gradient) and ``_meta`` (hooks of a
leaf); a non-leaf's hooks and retain_grad live on its node (``dispatch.NodeHooks``).
"""
from __future__ import annotations

__all__ = ["INT_REQUIRES_GRAD", "INT_REQUIRES_GRAD_", "NONLEAF_FLAG", "NONLEAF_GRAD",
           "AutogradMethods"]

import warnings
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dispatch, engine
from .backward_source import backward_source
from .dispatch import Meta, NodeHooks, wrap
from .graph import RemovableHandle

if TYPE_CHECKING:  # annotations name the class these methods are mixed into
    from .._tensor import Tensor

NONLEAF_FLAG = ("you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
NONLEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
                "mistake, make sure you access the leaf Tensor instead. See "
                "github.com/pytorch/pytorch/pull/30531 for more information.")
INT_REQUIRES_GRAD = "Only Tensors of floating point and complex dtype can require gradients"
INT_REQUIRES_GRAD_ = "only Tensors of floating point dtype can require gradients"


class AutogradMethods:
    """Mixed into ``Tensor``: its autograd state and ``backward``."""

    __slots__ = ()

    # ----------------------------------------------------------------- autograd state

    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._set_requires_grad(bool(value), INT_REQUIRES_GRAD_)

    def _set_requires_grad(self, value: bool, int_message: str) -> None:
        if self.grad_fn is not None:
            if not value:
                raise RuntimeError(NONLEAF_FLAG)
            return
        if value and self._data.dtype.kind not in "fc":
            raise RuntimeError(int_message)
        self._rg = value

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self._set_requires_grad(bool(requires_grad), INT_REQUIRES_GRAD_)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self) -> "Tensor | None":
        """The accumulated gradient of a leaf (or of a non-leaf after ``retain_grad()``).

        On other non-leaves it is None with PyTorch's UserWarning, less the C++ location
        PyTorch appends ("Triggered internally at ...").
        """
        if self.grad_fn is not None and not self.retains_grad and self._grad is None:
            warnings.warn(NONLEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: "Tensor | None") -> None:
        if value is not None:
            if not isinstance(value, dispatch.Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad "
                                f"of type {type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        node = self.grad_fn
        return (node is not None and node.hooks is not None and node.hooks.retain is not None
                and node.hooks.retain() is self)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` during backward."""
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return
        hooks = self._node_hooks()
        hooks.retain = weakref.ref(self)

    def _node_hooks(self) -> NodeHooks:
        node = self.grad_fn
        if node.hooks is None:
            node.hooks = NodeHooks()
        return node.hooks

    def register_hook(self, hook) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned Tensor
        replaces the gradient. Returns a handle whose ``remove()`` unregisters it."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self.grad_fn is not None:
            hooks = self._node_hooks().pre
        else:
            if self._meta is None:
                self._meta = Meta()
            if self._meta.hooks is None:
                self._meta.hooks = {}
            hooks = self._meta.hooks
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into the ``.grad`` of every leaf that requires grad."""
        if gradient is None and not create_graph and inputs is None:
            engine.backward_scalar(self, bool(retain_graph))
        else:
            engine.backward((self,), None if gradient is None else (gradient,),
                            retain_graph, create_graph, inputs)

    def _backward_source(self, names: dict | None = None):
        """Readable straight-line Python of the backward pass ``self.backward()`` would run.

        Names come from the caller's variables (``b_out`` is the adjoint of ``out``), or from
        ``names`` (name -> Tensor). The returned string has ``.namespace`` (the saved values)
        and ``.run(g=1.0)``, which executes the source and returns the leaf gradients.
        """
        return backward_source(self, names, depth=2)

    @property
    def data(self) -> "Tensor":
        return wrap(self._data)

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._data = value._data if isinstance(value, dispatch.Tensor) else np.asarray(value)

    def detach(self) -> "Tensor":
        t = wrap(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> "Tensor":
        self.grad_fn = None
        self._rg = False
        return self

    @property
    def _version(self) -> int:
        return self._vc[0]
