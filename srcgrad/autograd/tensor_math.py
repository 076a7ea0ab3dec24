"""Tensor methods computing elementwise: operators, comparisons, math functions.

Each differentiable one is recorded by ``dispatch`` (``binary``, ``unary``, ``apply``) through
the registry rule of its op; comparisons and logical operators give tensors with no history.
"""
from __future__ import annotations

__all__ = ["MathMethods"]

from typing import TYPE_CHECKING, Any

import numpy as np

from .dispatch import (ADD, DIV, MUL, RSUB_NODE, SUB, apply, binary, broadcast_error, matmul,
                       op_for, power, raw_data, unary, wrap)
from .graph import node_class
from .ops import OPS

if TYPE_CHECKING:  # annotations name the class these methods are mixed into
    from .._tensor import Tensor

_asarray = np.asarray


class MathMethods:
    """Mixed into ``Tensor``: arithmetic, comparisons and elementwise functions."""

    __slots__ = ()

    # ----------------------------------------------------------------- arithmetic

    def __add__(self, other):
        return binary(ADD, self, other)

    def __radd__(self, other):
        return binary(ADD, other, self)

    def __sub__(self, other):
        return binary(SUB, self, other)

    def __rsub__(self, other):
        return binary(SUB, other, self, RSUB_NODE)

    def __mul__(self, other):
        return binary(MUL, self, other)

    def __rmul__(self, other):
        return binary(MUL, other, self)

    def __truediv__(self, other):
        return binary(DIV, self, other)

    def __rtruediv__(self, other):
        return binary(DIV, other, self)

    def __pow__(self, other):
        return power(self, other)

    def __rpow__(self, other):
        return power(other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __floordiv__(self, other):
        return apply(op_for(np.floor_divide), (self, other))

    def __rfloordiv__(self, other):
        return apply(op_for(np.floor_divide), (other, self))

    def __mod__(self, other):
        return apply(op_for(np.remainder), (self, other))

    def __rmod__(self, other):
        return apply(op_for(np.remainder), (other, self))

    def __neg__(self):
        return unary(OPS["neg"], self)

    def __pos__(self):
        return self

    def __abs__(self):
        return unary(OPS["abs"], self)

    def add(self, other, *, alpha: Any = 1):
        return binary(ADD, self, other if alpha == 1 else other * alpha)

    def sub(self, other, *, alpha: Any = 1):
        return binary(SUB, self, other if alpha == 1 else other * alpha)

    subtract = sub

    def mul(self, other):
        return binary(MUL, self, other)

    multiply = mul

    def div(self, other, *, rounding_mode: str | None = None):
        if rounding_mode is None:
            return binary(DIV, self, other)
        q = binary(DIV, self, other).detach()
        return wrap(np.floor(q._data) if rounding_mode == "floor" else np.trunc(q._data))

    divide = true_divide = div

    def pow(self, exponent):
        return power(self, exponent)

    def neg(self):
        return unary(OPS["neg"], self)

    negative = neg

    def matmul(self, other):
        return matmul(self, other)

    def mm(self, mat2):
        if self._data.ndim != 2:
            raise RuntimeError("self must be a matrix")
        if raw_data(mat2).ndim != 2:
            raise RuntimeError("mat2 must be a matrix")
        return matmul(self, mat2)

    def bmm(self, mat2):
        if self._data.ndim != 3:
            raise RuntimeError("batch1 must be a 3D tensor")
        if raw_data(mat2).ndim != 3:
            raise RuntimeError("batch2 must be a 3D tensor")
        if self._data.shape[0] != raw_data(mat2).shape[0]:
            raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{self._data.shape[0]}, {self._data.shape[2]}] but got: "
                               f"[{raw_data(mat2).shape[0]}, {raw_data(mat2).shape[1]}].")
        return matmul(self, mat2)

    def mv(self, vec):
        if self._data.ndim != 2 or raw_data(vec).ndim != 1:
            raise RuntimeError("vector + matrix @ vector expected, got "
                               f"{raw_data(vec).ndim}, {self._data.ndim}, {raw_data(vec).ndim}")
        return matmul(self, vec)

    def dot(self, other):
        if self._data.ndim != 1 or raw_data(other).ndim != 1:
            raise RuntimeError(f"1D tensors expected, but got {self._data.ndim}D and "
                               f"{raw_data(other).ndim}D tensors")
        return matmul(self, other)

    # ----------------------------------------------------------------- comparisons

    def _compare(self, fn, other) -> "Tensor":
        od = raw_data(other)
        try:
            return wrap(_asarray(fn(self._data, od)))
        except ValueError:
            raise broadcast_error(OPS["add"], self._data, od) from None

    def __eq__(self, other):
        return self._compare(np.equal, other)

    def __ne__(self, other):
        return self._compare(np.not_equal, other)

    def __lt__(self, other):
        return self._compare(np.less, other)

    def __le__(self, other):
        return self._compare(np.less_equal, other)

    def __gt__(self, other):
        return self._compare(np.greater, other)

    def __ge__(self, other):
        return self._compare(np.greater_equal, other)

    __hash__ = object.__hash__  # (defining __eq__ would otherwise make tensors unhashable)

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__
    greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne

    def __and__(self, other):
        return self._compare(np.logical_and if self._data.dtype.kind == "b"
                             else np.bitwise_and, other)

    def __or__(self, other):
        return self._compare(np.logical_or if self._data.dtype.kind == "b"
                             else np.bitwise_or, other)

    def __xor__(self, other):
        return self._compare(np.logical_xor if self._data.dtype.kind == "b"
                             else np.bitwise_xor, other)

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __invert__(self):
        if self._data.dtype.kind == "b":
            return wrap(np.logical_not(self._data))
        return wrap(np.invert(self._data))

    def logical_not(self):
        return wrap(np.logical_not(self._data))

    def isnan(self):
        return wrap(np.isnan(self._data))

    def isfinite(self):
        return wrap(np.isfinite(self._data))

    def equal(self, other) -> bool:
        od = raw_data(other)
        return self._data.shape == np.shape(od) and bool(np.all(self._data == od))

    def allclose(self, other, rtol: float = 1e-05, atol: float = 1e-08,
                 equal_nan: bool = False) -> bool:
        return bool(np.allclose(self._data, raw_data(other), rtol=rtol, atol=atol,
                                equal_nan=equal_nan))

    def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> "Tensor":
        return wrap(np.isclose(self._data, raw_data(other), rtol=rtol, atol=atol,
                               equal_nan=equal_nan))

    def all(self, dim: Any = None, keepdim: bool = False) -> "Tensor":
        return wrap(_asarray(np.all(self._data, axis=dim, keepdims=keepdim)))

    def any(self, dim: Any = None, keepdim: bool = False) -> "Tensor":
        return wrap(_asarray(np.any(self._data, axis=dim, keepdims=keepdim)))

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> "Tensor":
        return wrap(_asarray(np.argmax(self._data, axis=dim, keepdims=keepdim), np.int64))

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> "Tensor":
        return wrap(_asarray(np.argmin(self._data, axis=dim, keepdims=keepdim), np.int64))

    # ----------------------------------------------------------------- elementwise

    def exp(self):
        return unary(OPS["exp"], self)

    def log(self):
        return unary(OPS["log"], self)

    def sin(self):
        return unary(OPS["sin"], self)

    def cos(self):
        return unary(OPS["cos"], self)

    def tan(self):
        return unary(OPS["tan"], self)

    def tanh(self):
        return unary(OPS["tanh"], self)

    def sigmoid(self):
        return unary(OPS["sigmoid"], self)

    def relu(self):
        return unary(OPS["relu"], self)

    def sqrt(self):
        return unary(OPS["sqrt"], self)

    def abs(self):
        return unary(OPS["abs"], self)

    absolute = abs

    def log1p(self):
        return unary(OPS["log1p"], self)

    def expm1(self):
        return unary(OPS["expm1"], self)

    def square(self):
        return power(self, 2)

    def reciprocal(self):
        return unary(OPS["reciprocal"], self)

    def rsqrt(self):
        return binary(DIV, 1.0, unary(OPS["sqrt"], self))

    def clamp(self, min: Any = None, max: Any = None) -> "Tensor":
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        return apply(OPS["clip"], (self, raw_data(min), raw_data(max)))

    clip = clamp

    def clamp_min(self, min: Any) -> "Tensor":
        return apply(OPS["clip"], (self, raw_data(min), None), cls=node_class("ClampMinBackward0"))

    def clamp_max(self, max: Any) -> "Tensor":
        return apply(OPS["clip"], (self, None, raw_data(max)), cls=node_class("ClampMaxBackward0"))

    def maximum(self, other):
        return binary(OPS["maximum"], self, other)

    def minimum(self, other):
        return binary(OPS["minimum"], self, other)

    def softmax(self, dim: int, dtype: Any = None) -> "Tensor":
        return apply(OPS["softmax"], (self.to(dtype) if dtype else self,),
                     {"axis": self._dim(dim)})

    def log_softmax(self, dim: int, dtype: Any = None) -> "Tensor":
        return apply(OPS["log_softmax"], (self.to(dtype) if dtype else self,),
                     {"axis": self._dim(dim)})

    def logsumexp(self, dim: Any, keepdim: bool = False) -> "Tensor":
        return apply(OPS["logsumexp"], (self,), {"axis": self._axes(dim),
                                                 "keepdims": keepdim})
