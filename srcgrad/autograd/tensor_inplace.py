"""Tensor methods updating it in place: ``add_``, ``t[i] = v``, ``fill_``, ``+=``...

An in-place update is recorded as its out-of-place op on a copy of the old value, whose
history the tensor then takes over (its version counter goes up, so a node that saved the old
value refuses to run). On a view made by indexing it is written as ``base[i] = new``.
"""
from __future__ import annotations

__all__ = ["LEAF_INPLACE", "VIEW_OF_LEAF_INPLACE", "InplaceMethods"]

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UnsupportedFeatureError
from . import dispatch
from .dispatch import NO_INDEX, apply, raw_data, raw_index, wrap
from .dtypes import SCALAR_TYPE_NAMES
from .generator import default_generator
from .grad_mode import STATE as _STATE
from .ops import OPS

if TYPE_CHECKING:  # annotations name the class these methods are mixed into
    from .._tensor import Tensor

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = ("a view of a leaf Variable that requires grad is being used in an "
                        "in-place operation.")


class InplaceMethods:
    """Mixed into ``Tensor``: in-place updates."""

    __slots__ = ()

    # ----------------------------------------------------------------- in place

    def __setitem__(self, index: Any, value: Any) -> None:
        raw, _ = raw_index(index)
        if _STATE.enabled and (self._rg or (isinstance(value, dispatch.Tensor) and value._rg)):
            if self._rg and self.grad_fn is None:  # PyTorch writes through a view here
                raise RuntimeError(VIEW_OF_LEAF_INPLACE)
            # Recorded as the functional update runtime.setitem (PyTorch: CopySlices).
            self._inplace(lambda before: apply(OPS["setitem"], (before, raw, value)))
            return
        self._data[raw] = raw_data(value)
        self._vc[0] += 1

    def _check_inplace(self) -> None:
        if not _STATE.enabled:
            return
        if self._rg and self.grad_fn is None:
            raise RuntimeError(LEAF_INPLACE)
        meta = self._meta
        if meta is not None and meta.base is not None:
            root = meta.base
            while root._meta is not None and root._meta.base is not None:
                root = root._meta.base
            if root._rg and root.grad_fn is None:
                raise RuntimeError(VIEW_OF_LEAF_INPLACE)
            if meta.index is NO_INDEX and self._rg:
                raise UnsupportedFeatureError(
                    "srcgrad records in-place operations on views made by indexing; this view "
                    "was made by a reshape or a transpose: use the out-of-place operation")

    def _inplace(self, compute) -> "Tensor":
        """Apply ``compute(value) -> Tensor`` in place, rebasing history like PyTorch."""
        self._check_inplace()
        meta = self._meta
        if _STATE.enabled and meta is not None and meta.base is not None:
            return self._inplace_view(compute)
        if _STATE.enabled:
            before = wrap(self._data.copy())
            before.grad_fn, before._rg = self.grad_fn, self._rg
            result = compute(before)
        else:
            result = compute(self.detach())
        data = result._data
        if data.dtype != self._data.dtype and not np.can_cast(data.dtype, self._data.dtype,
                                                              "same_kind"):
            raise RuntimeError(
                f"result type {SCALAR_TYPE_NAMES.get(data.dtype.name, data.dtype.name)} can't "
                f"be cast to the desired output type "
                f"{SCALAR_TYPE_NAMES.get(self._data.dtype.name, self._data.dtype.name)}")
        if self._data.shape != data.shape:
            data = np.broadcast_to(data, self._data.shape) \
                if np.broadcast_shapes(data.shape, self._data.shape) == self._data.shape \
                else None
            if data is None:
                raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match "
                                   f"the broadcast shape {list(result._data.shape)}")
        np.copyto(self._data, data, casting="unsafe")
        self._vc[0] += 1
        if result.grad_fn is not None:
            self.grad_fn = result.grad_fn
            self._rg = True
        return self

    def _inplace_view(self, compute) -> "Tensor":
        """In-place update of ``view = base[index]``: written as ``base[index] = new``, so the
        base's history records it (PyTorch's CopySlices); the view then reads from it anew."""
        base, index = self._meta.base, self._meta.index
        before = wrap(self._data.copy())
        before.grad_fn, before._rg = self.grad_fn, self._rg
        base[index] = compute(before)
        fresh = base[index]
        self.grad_fn, self._rg = fresh.grad_fn, fresh._rg
        return self

    def add_(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        return self._inplace(lambda v: v.add(other, alpha=alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        return self._inplace(lambda v: v.sub(other, alpha=alpha))

    def mul_(self, other: Any) -> "Tensor":
        return self._inplace(lambda v: v * other)

    def div_(self, other: Any) -> "Tensor":
        return self._inplace(lambda v: v / other)

    def pow_(self, exponent: Any) -> "Tensor":
        return self._inplace(lambda v: v ** exponent)

    def clamp_(self, min: Any = None, max: Any = None) -> "Tensor":
        return self._inplace(lambda v: v.clamp(min, max))

    def neg_(self) -> "Tensor":
        return self._inplace(lambda v: -v)

    def exp_(self) -> "Tensor":
        return self._inplace(lambda v: v.exp())

    def zero_(self) -> "Tensor":
        return self.fill_(0)

    def fill_(self, value: Any) -> "Tensor":
        recorded = self._rg or (isinstance(value, dispatch.Tensor) and value._rg) or \
            (self._meta is not None and self._meta.base is not None)
        if _STATE.enabled and recorded:
            # A zero gradient to the old value, as PyTorch's FillBackward0 gives.
            return self._inplace(lambda v: v * 0 + value)
        self._data[...] = raw_data(value)
        self._vc[0] += 1
        return self

    def copy_(self, src: Any) -> "Tensor":
        if isinstance(src, dispatch.Tensor) and src._rg and _STATE.enabled:
            return self._inplace(lambda v: v * 0 + src)
        return self.fill_(src)

    def uniform_(self, a: float = 0.0, b: float = 1.0) -> "Tensor":
        draws = default_generator.uniform(self._data.size, self._data.dtype)
        return self.copy_(wrap(draws.reshape(self._data.shape)) * (b - a) + a)

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> "Tensor":
        draws = default_generator.normal(self._data.size, self._data.dtype)
        return self.copy_(wrap(draws.reshape(self._data.shape)) * std + mean)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)
