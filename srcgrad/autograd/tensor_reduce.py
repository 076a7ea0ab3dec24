"""Tensor methods reducing over dimensions: sum, mean, max (with indices), norm, var...

PyTorch names the node of a reduction over given dimensions ``SumBackward1`` (the one of a
full reduction ``SumBackward0``); ``max(dim)`` returns a ``torch.return_types.max`` pair.
"""
from __future__ import annotations

__all__ = ["ReductionMethods", "return_types"]

from typing import TYPE_CHECKING, Any

import numpy as np

from . import dispatch
from .dispatch import NO_KWARGS, apply, binary, op_for, wrap
from .dtypes import SCALAR_TYPE_NAMES, int64
from .graph import node_class
from .ops import OPS

if TYPE_CHECKING:  # annotations name the class these methods are mixed into
    from .._tensor import Tensor

_asarray = np.asarray


class _ReturnType(tuple):
    """``torch.return_types.max(values=..., indices=...)``: a named pair."""

    __slots__ = ()
    _name = "max"

    @property
    def values(self) -> "Tensor":
        return self[0]

    @property
    def indices(self) -> "Tensor":
        return self[1]

    def __repr__(self) -> str:
        return f"torch.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


_RETURN_TYPES: dict[str, type] = {}


def return_types(name: str, values: "Tensor", indices: "Tensor") -> tuple:
    cls = _RETURN_TYPES.get(name)
    if cls is None:
        cls = type(name, (_ReturnType,), {"__slots__": (), "_name": name,
                                          "__module__": "torch.return_types"})
        _RETURN_TYPES[name] = cls
    return cls((values, indices))


class ReductionMethods:
    """Mixed into ``Tensor``: reductions."""

    __slots__ = ()

    # ----------------------------------------------------------------- reductions

    def _axes(self, dim: Any):
        if dim is None:
            return None
        if isinstance(dim, (tuple, list)):
            return tuple(self._dim(d) for d in dim)
        return self._dim(dim)

    def _reduce(self, label: str, dim: Any, keepdim: bool, dtype: Any = None) -> "Tensor":
        x = self if dtype is None else self.to(dtype)
        op = OPS[label]
        if dim is None:
            return apply(op, (x,), NO_KWARGS, cls=op.cls)
        kw = {"axis": self._axes(dim), "keepdims": keepdim}
        return apply(op, (x,), kw, cls=node_class(op.node[:-1] + "1"))

    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> "Tensor":
        if dtype is None and self._data.dtype.kind in "biu":
            dtype = int64
        return self._reduce("sum", dim, keepdim, dtype)

    def mean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> "Tensor":
        if dtype is None and self._data.dtype.kind not in "fc":
            name = SCALAR_TYPE_NAMES[self._data.dtype.name]
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: {name}")
        return self._reduce("mean", dim, keepdim, dtype)

    def prod(self, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None):
        if dtype is None and self._data.dtype.kind in "biu":
            dtype = int64
        return self._reduce("prod", dim, keepdim, dtype)

    def _extremum(self, label: str, dim: Any, keepdim: bool, other: Any):
        if isinstance(dim, dispatch.Tensor) and other is None:
            dim, other = None, dim
        if other is not None:
            return binary(OPS["maximum" if label == "max" else "minimum"], self, other)
        if self._data.size == 0:
            raise RuntimeError(f"{label}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        op = OPS[label]
        if dim is None:
            return apply(op, (self,), NO_KWARGS)
        d = self._dim(dim)
        values = apply(op, (self,), {"axis": d, "keepdims": keepdim},
                       cls=node_class(op.node[:-1] + "0"))
        pick = np.argmax if label == "max" else np.argmin
        indices = wrap(_asarray(pick(self._data, axis=d, keepdims=keepdim), np.int64))
        return return_types(label, values, indices)

    def max(self, dim: Any = None, keepdim: bool = False, *, other: Any = None):
        return self._extremum("max", dim, keepdim, other)

    def min(self, dim: Any = None, keepdim: bool = False, *, other: Any = None):
        return self._extremum("min", dim, keepdim, other)

    def amax(self, dim: Any = (), keepdim: bool = False):
        return self._reduce("max", dim if dim != () else None, keepdim)

    def amin(self, dim: Any = (), keepdim: bool = False):
        return self._reduce("min", dim if dim != () else None, keepdim)

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False,
             dtype: Any = None) -> "Tensor":
        x = self if dtype is None else self.to(dtype)
        ord_ = None if p in ("fro", 2, 2.0, None) else p
        if dim is None:
            if ord_ is not None and x.ndim > 1:
                x = x.reshape(-1)
            kw = {} if ord_ is None else {"ord": ord_}
        else:
            axes = self._axes(dim)
            if isinstance(axes, tuple) and len(axes) == 1:
                axes = axes[0]
            kw = {"ord": ord_, "axis": axes, "keepdims": keepdim}
        return apply(OPS["norm"], (x,), kw)

    def var(self, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
            correction: Any = None) -> "Tensor":
        return self._spread(np.var, "VarBackward0", dim, unbiased, keepdim, correction)

    def std(self, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
            correction: Any = None) -> "Tensor":
        return self._spread(np.std, "StdBackward0", dim, unbiased, keepdim, correction)

    def _spread(self, func: Any, node: str, dim: Any, unbiased: bool, keepdim: bool,
                correction: Any) -> "Tensor":
        """``var`` or ``std``; ``correction`` (the newer argument) overrides ``unbiased``."""
        ddof = (1 if unbiased else 0) if correction is None else correction
        kw = {"axis": self._axes(dim), "ddof": ddof, "keepdims": keepdim}
        return apply(op_for(func), (self,), kw, cls=node_class(node))
