"""Tensor methods about the data it holds: metadata, conversions, printing, Python protocols.

Also the constructors' helpers: ``tensor_from_data`` (what ``torch.tensor(data)`` holds) and
``make_leaf`` (a fresh tensor, checked for ``requires_grad``).
"""
from __future__ import annotations

__all__ = ["DataMethods", "make_leaf", "tensor_from_data"]

import builtins
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dispatch, printing
from .dispatch import (NONDIFFERENTIABLE_UFUNCS, STRUCTURAL_FUNCTIONS, apply, call_numpy, raw_data,
                       strip_tensors, wrap)
from .dtypes import (BY_NAME, BY_NUMPY, CPU, SCALAR_TYPE_NAMES, Size, as_dtype, bool_, device,
                     dtype, dtype_of, float16, float32, float64, int32, int64, printing_dtype_name,
                     shape_args)
from .grad_mode import STATE as _STATE
from .ops import OPS
from .tensor_autograd import INT_REQUIRES_GRAD

if TYPE_CHECKING:  # annotations name the class these methods are mixed into
    from .._tensor import Tensor

_F32 = np.dtype(np.float32)


def tensor_from_data(data: Any, dt: Any = None, copy: bool = True) -> np.ndarray:
    """The numpy array PyTorch's ``torch.tensor(data, dtype=dt)`` would hold.

    Python floats become float32 (the default dtype), ints int64, bools bool; numpy arrays
    keep their dtype.
    """
    target = as_dtype(dt).np if dt is not None else None
    if isinstance(data, dispatch.Tensor):
        arr = data._data
    elif isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        arr = np.array(strip_tensors(data))
        if target is None:
            if arr.dtype.kind == "f" and arr.dtype != np.float16:
                target = _F32
            elif arr.dtype.kind in "iu":
                target = np.dtype(np.int64)
            elif arr.dtype.kind == "c":
                target = np.dtype(np.complex64)
            elif arr.dtype.kind not in "b":
                raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    if target is not None and arr.dtype != target:
        return arr.astype(target)
    if arr.dtype not in BY_NUMPY:
        raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype}. The only "
                        "supported types are: float64, float32, float16, complex64, "
                        "complex128, int64, int32, int16, int8, uint8, and bool.")
    return np.array(arr, copy=True) if copy else arr


def _rebuild(data: np.ndarray, requires_grad: bool) -> "Tensor":
    t = wrap(data)
    t._rg = requires_grad
    return t


def make_leaf(data: np.ndarray, requires_grad: bool = False, cls: type | None = None) -> "Tensor":
    """A fresh leaf around ``data``, with PyTorch's check of ``requires_grad``."""
    t = wrap(data, cls)
    if requires_grad:
        t._set_requires_grad(True, INT_REQUIRES_GRAD)
    return t



class DataMethods:
    """Mixed into ``Tensor``: shape and dtype, conversions, printing, Python protocols."""

    __slots__ = ()

    # ----------------------------------------------------------------- metadata

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[self._dim(dim)]

    @property
    def dtype(self) -> dtype:
        return dtype_of(self._data)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def device(self) -> device:
        return CPU

    @property
    def is_cuda(self) -> bool:
        return False

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def _dim(self, dim: int) -> int:
        n = max(self._data.ndim, 1)
        if not -n <= dim < n:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-n}, {n - 1}], but got {dim})")
        return dim % n

    # ----------------------------------------------------------------- conversion

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._data.item()

    def tolist(self):
        return self._data.tolist()

    def numpy(self, force: bool = False) -> np.ndarray:
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._rg:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if dtype is not None and np.dtype(dtype) != self._data.dtype:
            return self._data.astype(dtype)
        return self._data.copy() if copy else self._data

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None:
            return NotImplemented
        kwargs.pop("out", None)
        return call_numpy(ufunc, inputs, kwargs, ufunc not in NONDIFFERENTIABLE_UFUNCS)

    def __array_function__(self, func, types, args, kwargs):
        for t in types:
            if not (issubclass(t, (dispatch.Tensor, np.ndarray))):
                return NotImplemented
        return call_numpy(func, args, kwargs, func not in STRUCTURAL_FUNCTIONS)

    def to(self, *args: Any, **kwargs: Any) -> "Tensor":
        """Cast to a dtype (``x.to(torch.float64)``); devices other than the CPU are refused."""
        target = kwargs.get("dtype")
        for a in args:
            if isinstance(a, dispatch.Tensor):
                target = a.dtype
            elif isinstance(a, (dtype, type)) or (isinstance(a, str) and a in BY_NAME):
                target = a
            else:
                device(a)
        if "device" in kwargs:
            device(kwargs["device"])
        if target is None:
            return self
        return self._cast(as_dtype(target))

    def type(self, dt: Any = None):
        if dt is None:
            return f"torch.{SCALAR_TYPE_NAMES[self._data.dtype.name]}Tensor"
        return self._cast(as_dtype(dt))

    def _cast(self, target: dtype) -> "Tensor":
        if target.np == self._data.dtype:
            return self
        if target.np.kind not in "fc" or not (self._rg and _STATE.enabled):
            out = wrap(self._data.astype(target.np))
            return out
        return apply(OPS["astype"], (self, target.np))

    def float(self) -> "Tensor":
        return self._cast(float32)

    def double(self) -> "Tensor":
        return self._cast(float64)

    def half(self) -> "Tensor":
        return self._cast(float16)

    def long(self) -> "Tensor":
        return self._cast(int64)

    def int(self) -> "Tensor":
        return self._cast(int32)

    def bool(self) -> "Tensor":
        return self._cast(bool_)

    def cpu(self) -> "Tensor":
        return self

    def cuda(self, *args: Any, **kwargs: Any) -> "Tensor":
        raise AssertionError("Torch not compiled with CUDA enabled")

    def contiguous(self, memory_format: Any = None) -> "Tensor":
        """Itself when its memory is in row-major order, else a row-major copy (which
        ``view`` accepts): a transpose's ``.contiguous().view(-1)``."""
        if self._data.flags.c_contiguous:
            return self
        return apply(OPS["copy"], (self,), {"order": "C"})

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return bool(self._data.flags.c_contiguous)

    def clone(self, memory_format: Any = None) -> "Tensor":
        return apply(OPS["copy"], (self,))

    def type_as(self, other: "Tensor") -> "Tensor":
        return self._cast(other.dtype)

    def new_tensor(self, data: Any, dtype: Any = None, requires_grad: bool = False):
        return make_leaf(tensor_from_data(data, dtype or self.dtype), requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None, requires_grad: bool = False):
        return make_leaf(np.zeros(shape_args(size), (as_dtype(dtype) if dtype else self.dtype).np),
                         requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, requires_grad: bool = False):
        return make_leaf(np.ones(shape_args(size), (as_dtype(dtype) if dtype else self.dtype).np),
                         requires_grad)

    def new_full(self, size: Any, fill_value: Any, dtype: Any = None,
                 requires_grad: bool = False):
        return make_leaf(np.full(shape_args((size,)), fill_value,
                                 (as_dtype(dtype) if dtype else self.dtype).np), requires_grad)

    # ----------------------------------------------------------------- printing

    def __repr__(self, *, prefix: str = "tensor(") -> str:
        node = self.grad_fn
        dt = self._data.dtype
        return printing.tensor_repr(
            self._data, printing_dtype_name(dt),
            dt.name in ("float32", "int64", "bool", "complex64"),
            None if node is None else node.name(), self._rg, prefix)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return self._data.item().__format__(spec)
        return format(repr(self), spec)

    # ----------------------------------------------------------------- Python protocol

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.item())

    def _scalar(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._data.item()

    def __float__(self) -> float:
        return builtins.float(self._scalar())

    def __int__(self) -> int:
        return builtins.int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return builtins.int(self._data.item())

    def __contains__(self, element: Any) -> bool:
        return bool(np.any(self._data == raw_data(element)))

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self._data, self._rg))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = wrap(self._data.copy(), type(self))
        t._rg = self._rg
        if self._grad is not None:
            t._grad = wrap(self._grad._data.copy())
        memo[id(self)] = t
        return t
