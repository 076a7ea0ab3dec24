"""Tensor methods changing the shape, and indexing: reshape, transpose, expand, ``t[i]``.

They are views, as in PyTorch: the result shares its version counter with the tensor it was
made from (``apply(..., view_of=self)``), and ``t[i]`` remembers ``(t, i)`` so that an
in-place update of the view can be written back into ``t`` (see ``tensor_inplace``).
"""
from __future__ import annotations

__all__ = ["ShapeMethods"]

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UnsupportedFeatureError
from .dispatch import NO_KWARGS, Meta, apply, index_error, index_node, raw_index
from .dtypes import dtype, shape_args
from .graph import node_class
from .ops import OPS

if TYPE_CHECKING:  # annotations name the class these methods are mixed into
    from .._tensor import Tensor


NOT_A_VIEW = ("view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")


class ShapeMethods:
    """Mixed into ``Tensor``: views and indexing."""

    __slots__ = ()

    # ----------------------------------------------------------------- shapes

    def _view_op(self, label: str, args: tuple, kw: dict, cls: type | None = None):
        return apply(OPS[label], (self,) + args, kw, cls=cls, view_of=self)

    def reshape(self, *shape: Any) -> "Tensor":
        shape = shape_args(shape)
        self._check_shape(shape)
        return self._view_op("reshape", (shape,), NO_KWARGS)

    def view(self, *shape: Any) -> "Tensor":
        if len(shape) == 1 and isinstance(shape[0], (dtype, type)):
            raise UnsupportedFeatureError("view(dtype) is not supported by srcgrad")
        shape = shape_args(shape)
        self._check_shape(shape)
        try:  # numpy refuses where the memory layout needs a copy, as PyTorch's view does
            np.reshape(self._data, shape, copy=False)
        except ValueError:
            raise RuntimeError(NOT_A_VIEW) from None
        return self._view_op("reshape", (shape,), NO_KWARGS)

    def view_as(self, other: "Tensor") -> "Tensor":
        return self.view(other.shape)

    def reshape_as(self, other: "Tensor") -> "Tensor":
        return self.reshape(other.shape)

    def _check_shape(self, shape: tuple) -> None:
        n = self._data.size
        known = math.prod(d for d in shape if d != -1)
        bad = shape.count(-1) > 1 or (shape.count(-1) == 0 and known != n) or \
            (shape.count(-1) == 1 and (known == 0 or n % known))
        if bad:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")

    def transpose(self, dim0: int, dim1: int) -> "Tensor":
        if self._data.ndim < 2:
            return self._view_op("transpose", (None,), NO_KWARGS,
                                 cls=node_class("TransposeBackward0"))
        axes = list(range(self._data.ndim))
        a, b = self._dim(dim0), self._dim(dim1)
        axes[a], axes[b] = axes[b], axes[a]
        return self._view_op("transpose", (tuple(axes),), NO_KWARGS,
                             cls=node_class("TransposeBackward0"))

    swapaxes = swapdims = transpose

    def permute(self, *dims: Any) -> "Tensor":
        dims = tuple(self._dim(d) for d in shape_args(dims))
        if sorted(dims) != list(range(self._data.ndim)):
            raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input "
                               "does not match the length of the desired ordering of dimensions "
                               "i.e. input.dim() = "
                               f"{self._data.ndim} is not equal to len(dims) = {len(dims)}")
        return self._view_op("transpose", (dims,), NO_KWARGS)

    def t(self) -> "Tensor":
        if self._data.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self._data.ndim}D")
        return self._view_op("transpose", (None,), NO_KWARGS, cls=node_class("TBackward0"))

    @property
    def T(self) -> "Tensor":
        if self._data.ndim != 2:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse "
                          "their shape is deprecated and it will throw an error in a future "
                          "release. Consider `x.mT` to transpose batches of matrices or "
                          "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                          "dimensions of a tensor.", UserWarning, stacklevel=2)
        return self._view_op("transpose", (None,), NO_KWARGS)

    @property
    def mT(self) -> "Tensor":
        return self.transpose(-2, -1)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "Tensor":
        if self._data.ndim == 0:
            return self.reshape(1)
        s, e = self._dim(start_dim), self._dim(end_dim)
        shape = self._data.shape
        if s >= e:
            return self
        new = shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:]
        return self._view_op("reshape", (new,), NO_KWARGS)

    def unsqueeze(self, dim: int) -> "Tensor":
        n = self._data.ndim + 1
        if not -n <= dim < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {dim})")
        return self._view_op("expand_dims", (dim % n,), NO_KWARGS)

    def squeeze(self, dim: Any = None) -> "Tensor":
        if dim is None:
            return self._view_op("squeeze", (), NO_KWARGS)
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        axes = tuple(d for d in (self._dim(d) for d in dims) if self._data.shape[d] == 1)
        return self._view_op("squeeze", (axes,), NO_KWARGS, cls=node_class(
            "SqueezeBackward1" if not isinstance(dim, (tuple, list)) else "SqueezeBackward2"))

    def expand(self, *sizes: Any) -> "Tensor":
        sizes = shape_args(sizes)
        shape = self._data.shape
        lead = len(sizes) - len(shape)
        full = tuple(shape[i - lead] if n == -1 else n for i, n in enumerate(sizes))
        return self._view_op("broadcast_to", (full,), NO_KWARGS)

    def expand_as(self, other: "Tensor") -> "Tensor":
        return self.expand(other.shape)

    def __getitem__(self, index: Any) -> "Tensor":
        raw, advanced = raw_index(index)
        error = None if advanced else index_error(self._data.shape, raw)
        if error is not None:
            raise error
        cls = index_node(raw, advanced)
        try:
            if advanced:
                return apply(OPS["getitem"], (self, raw), NO_KWARGS, cls=cls)
            raw = as_view_index(raw)
            view = apply(OPS["getitem"], (self, raw), NO_KWARGS, cls=cls, view_of=self)
        except IndexError as e:
            raise IndexError(str(e)) from None
        # Remember where the view came from: an in-place update of it updates the base too.
        if view._meta is None:
            view._meta = Meta()
        view._meta.base, view._meta.index = self, raw
        return view


def as_view_index(index: Any) -> tuple:
    """A basic index with a trailing ``...``: numpy then returns a view even where it would
    return a copied scalar (``a[0]`` of a vector), so the result shares the tensor's memory
    as PyTorch's does and sees its in-place updates."""
    if type(index) is not tuple:
        return index if index is Ellipsis else (index, Ellipsis)
    return index if Ellipsis in index else index + (Ellipsis,)
