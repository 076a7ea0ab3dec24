"""The PyTorch-compatible ``Tensor``: define-by-run recording over the shared rule registry.

Every differentiable operation runs the registry rule of a numpy function or Python operator
(``srcgrad.rules.lookup(np.exp)``...): the forward is ``rule.fn(*raw_args, **kw)`` on numpy
data, and the graph node keeps the rule, the raw arguments and ``ans`` so that ``backward``
calls ``rule.vjp``. There is no second set of derivative formulas here.

``__array_ufunc__`` and ``__array_function__`` route numpy calls on Tensors back into these
operations, so running a vjp body on Tensors (``create_graph=True``) records it too.

Deliberate differences from PyTorch (what users see is otherwise meant to be identical):

* ``2 / x`` shows ``DivBackward0`` (PyTorch records a reciprocal and ``MulBackward0``).
* In-place updates of a view made by indexing are recorded on its base as ``base[i] = new``
  (``CopySlices``), as PyTorch does; on views made by a reshape or a transpose of a tensor
  with history they raise ``UnsupportedFeatureError``.
* ``max(dim)``/``min(dim)`` share the gradient among tied elements, as the registry rule of
  ``np.max`` does; PyTorch sends it to the returned index only.
* Float sums use numpy's pairwise summation, so the last bit can differ from PyTorch's.
* More gradient accumulated into a ``.grad`` that has history (``create_graph=True``) gives
  ``AddBackward0``; PyTorch shows ``CopyBackwards``.
* Random draws come from numpy's generator: reproducible with ``manual_seed``, but not
  PyTorch's numbers.
"""
from __future__ import annotations

__all__ = ["Tensor", "dtype", "Size", "device", "tensor_from_data",
           "float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8",
           "bool_", "complex64", "complex128", "get_default_dtype", "as_dtype"]

import builtins
import math
import warnings
import weakref
from typing import Any

import numpy as np

from .autograd import dispatch, engine, printing
from .autograd.backward_source import backward_source
from .autograd.dispatch import (ADD, DIV, MUL, NO_INDEX, NO_KWARGS, NONDIFFERENTIABLE_UFUNCS,
                                RSUB_NODE, STRUCTURAL_FUNCTIONS, SUB, Meta, NodeHooks, apply,
                                binary, broadcast_error, call_numpy, index_error, index_node,
                                matmul, op_for, power, raw_data, raw_index, strip_tensors, unary,
                                wrap)
from .autograd.dtypes import (BY_NAME, BY_NUMPY, CPU, SCALAR_TYPE_NAMES, Size, as_dtype, bool_,
                              complex64, complex128, device, dtype, dtype_of, float16, float32,
                              float64, get_default_dtype, int8, int16, int32, int64,
                              printing_dtype_name, shape_args, uint8)
from .autograd.grad_mode import STATE as _STATE
from .autograd.graph import RemovableHandle, node_class
from .autograd.ops import OPS
from .errors import UnsupportedFeatureError

_asarray = np.asarray
_F32 = np.dtype(np.float32)


# --------------------------------------------------------------------------- messages

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = ("a view of a leaf Variable that requires grad is being used in an "
                        "in-place operation.")
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


# --------------------------------------------------------------------------- construction


def tensor_from_data(data: Any, dt: Any = None, copy: bool = True) -> np.ndarray:
    """The numpy array PyTorch's ``torch.tensor(data, dtype=dt)`` would hold.

    Python floats become float32 (the default dtype), ints int64, bools bool; numpy arrays
    keep their dtype.
    """
    target = as_dtype(dt).np if dt is not None else None
    if isinstance(data, Tensor):
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


# --------------------------------------------------------------------------- Tensor


class Tensor:
    """A multi-dimensional array that records operations for reverse-mode differentiation.

    Only float tensors can require grad. The default dtype of floats is float32, as in
    PyTorch. ``torch.Tensor(data)`` (the legacy constructor) makes a float32 tensor.
    """

    __slots__ = ("_data", "_rg", "grad_fn", "_grad", "_vc", "_meta", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, *args: Any):
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            data = tensor_from_data(args[0], float32)
        else:
            data = np.zeros(shape_args(args), dtype=np.float32)
        self._data = data
        self._rg = False
        self.grad_fn = None
        self._grad = None
        self._vc = [0]
        self._meta = None

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
            if not isinstance(value, Tensor):
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
        self._data = value._data if isinstance(value, Tensor) else np.asarray(value)

    def detach(self) -> "Tensor":
        t = wrap(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> "Tensor":
        self.grad_fn = None
        self._rg = False
        return self

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
            if not (issubclass(t, (Tensor, np.ndarray))):
                return NotImplemented
        return call_numpy(func, args, kwargs, func not in STRUCTURAL_FUNCTIONS)

    def to(self, *args: Any, **kwargs: Any) -> "Tensor":
        """Cast to a dtype (``x.to(torch.float64)``); devices other than the CPU are refused."""
        target = kwargs.get("dtype")
        for a in args:
            if isinstance(a, Tensor):
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
        return self

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

    __hash__ = object.__hash__

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
        if isinstance(dim, Tensor) and other is None:
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
        ddof = (1 if unbiased else 0) if correction is None else correction
        return apply(op_for(np.var), (self,), {"axis": self._axes(dim), "ddof": ddof,
                                               "keepdims": keepdim},
                     cls=node_class("VarBackward0"))

    def std(self, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
            correction: Any = None) -> "Tensor":
        ddof = (1 if unbiased else 0) if correction is None else correction
        return apply(op_for(np.std), (self,), {"axis": self._axes(dim), "ddof": ddof,
                                               "keepdims": keepdim},
                     cls=node_class("StdBackward0"))

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
        return self.reshape(*shape)

    def view_as(self, other: "Tensor") -> "Tensor":
        return self.reshape(other.shape)

    reshape_as = view_as

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
            view = apply(OPS["getitem"], (self, raw), NO_KWARGS, cls=cls, view_of=self)
        except IndexError as e:
            raise IndexError(str(e)) from None
        # Remember where the view came from: an in-place update of it updates the base too.
        if view._meta is None:
            view._meta = Meta()
        view._meta.base, view._meta.index = self, raw
        return view

    def __setitem__(self, index: Any, value: Any) -> None:
        raw, _ = raw_index(index)
        if _STATE.enabled and (self._rg or (isinstance(value, Tensor) and value._rg)):
            if self._rg and self.grad_fn is None:  # PyTorch writes through a view here
                raise RuntimeError(VIEW_OF_LEAF_INPLACE)
            # Recorded as the functional update runtime.setitem (PyTorch: CopySlices).
            self._inplace(lambda before: apply(OPS["setitem"], (before, raw, value)))
            return
        self._data[raw] = raw_data(value)
        self._vc[0] += 1

    # ----------------------------------------------------------------- in place

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
        recorded = self._rg or (isinstance(value, Tensor) and value._rg) or \
            (self._meta is not None and self._meta.base is not None)
        if _STATE.enabled and recorded:
            # A zero gradient to the old value, as PyTorch's FillBackward0 gives.
            return self._inplace(lambda v: v * 0 + value)
        self._data[...] = raw_data(value)
        self._vc[0] += 1
        return self

    def copy_(self, src: Any) -> "Tensor":
        if isinstance(src, Tensor) and src._rg and _STATE.enabled:
            return self._inplace(lambda v: v * 0 + src)
        return self.fill_(src)

    def uniform_(self, a: float = 0.0, b: float = 1.0) -> "Tensor":
        from . import torch_api
        return self.copy_(torch_api.rand(self.shape, dtype=self.dtype) * (b - a) + a)

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> "Tensor":
        from . import torch_api
        return self.copy_(torch_api.randn(self.shape, dtype=self.dtype) * std + mean)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    @property
    def _version(self) -> int:
        return self._vc[0]


dispatch.bind(Tensor, BY_NUMPY)


def _rebuild(data: np.ndarray, requires_grad: bool) -> Tensor:
    t = wrap(data)
    t._rg = requires_grad
    return t


def make_leaf(data: np.ndarray, requires_grad: bool = False, cls: type | None = None) -> Tensor:
    """A fresh leaf around ``data``, with PyTorch's check of ``requires_grad``."""
    t = wrap(data, cls)
    if requires_grad:
        t._set_requires_grad(True, INT_REQUIRES_GRAD)
    return t


class _ReturnType(tuple):
    """``torch.return_types.max(values=..., indices=...)``: a named pair."""

    __slots__ = ()
    _name = "max"

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]

    def __repr__(self) -> str:
        return f"torch.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


_RETURN_TYPES: dict[str, type] = {}


def return_types(name: str, values: Tensor, indices: Tensor) -> tuple:
    cls = _RETURN_TYPES.get(name)
    if cls is None:
        cls = type(name, (_ReturnType,), {"__slots__": (), "_name": name,
                                          "__module__": "torch.return_types"})
        _RETURN_TYPES[name] = cls
    return cls((values, indices))
