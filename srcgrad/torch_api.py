"""The ``torch``-like namespace of the Tensor facade (``import srcgrad as torch``).

Creation functions, dtypes, function forms of Tensor methods, grad modes and printing options.
Names taken by the transformer API (``grad``, ``vjp``, ``jvp``, ``source``) are not defined
here: ``torch.autograd.grad`` lives in ``srcgrad.autograd``.
"""
from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Sequence

import numpy as np

from . import autograd
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,
                                 set_grad_enabled)
from .autograd.ops import OPS, promote_types
from .autograd.printing import set_printoptions
from .autograd.dispatch import apply, binary, raw_data, wrap
from .autograd.dispatch import matmul as _record_matmul
from .autograd.generator import Generator, default_generator
from .autograd.dtypes import shape_args as _shape_args
from .autograd.tensor_data import make_leaf as _make
from ._tensor import (Size, Tensor, as_dtype, bool_, complex64, complex128, device, dtype,
                      float16, float32, float64, get_default_dtype, int8, int16, int32, int64,
                      tensor_from_data, uint8)

__all__ = [
    # types
    "Tensor", "Size", "dtype", "device", "Generator",
    "float32", "float", "float64", "double", "float16", "half", "int64", "long", "int32",
    "int", "int16", "short", "int8", "uint8", "bool", "complex64", "cfloat", "complex128",
    "cdouble", "get_default_dtype", "is_tensor", "is_floating_point", "numel", "cuda",
    # creation
    "tensor", "as_tensor", "from_numpy", "ones", "zeros", "full", "empty", "eye", "arange",
    "linspace", "randn", "rand", "randint", "ones_like", "zeros_like", "full_like",
    "empty_like", "randn_like", "rand_like", "manual_seed", "seed", "initial_seed",
    # arithmetic and elementwise
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg",
    "negative", "pow", "square", "reciprocal", "exp", "log", "log1p", "expm1", "sin", "cos",
    "tan", "tanh", "sigmoid", "relu", "sqrt", "rsqrt", "abs", "absolute", "clamp", "clip",
    "clamp_min", "clamp_max", "maximum", "minimum", "where",
    # linear algebra
    "matmul", "mm", "bmm", "mv", "dot", "outer",
    # reductions
    "sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "var", "std", "argmax",
    "argmin", "softmax", "log_softmax", "logsumexp",
    # shapes and joining
    "reshape", "transpose", "swapaxes", "permute", "flatten", "unsqueeze", "squeeze", "t",
    "broadcast_to", "cat", "concat", "concatenate", "stack", "clone", "detach",
    # comparisons
    "eq", "ne", "lt", "le", "gt", "ge", "equal", "allclose", "isclose", "all", "any", "isnan",
    "isfinite", "logical_not",
    # autograd
    "autograd", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "inference_mode",
    # printing
    "set_printoptions",
]

_bool, _int, _float = builtins.bool, builtins.int, builtins.float

# --------------------------------------------------------------------------- dtypes

float = float32  # noqa: A001  (torch.float)
double = float64
half = float16
long = int64
int = int32  # noqa: A001  (torch.int)
short = int16
bool = bool_  # noqa: A001  (torch.bool)
cfloat = complex64
cdouble = complex128


def is_tensor(obj: Any) -> _bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> _bool:
    return input.is_floating_point()


def numel(input: Tensor) -> _int:
    return input.numel()


class _Cuda:
    """``torch.cuda`` of a build without CUDA: ``is_available()`` is False."""

    @staticmethod
    def is_available() -> _bool:
        return False

    @staticmethod
    def device_count() -> _int:
        return 0

    def __repr__(self) -> str:
        return "<srcgrad: no CUDA>"


cuda = _Cuda()


# --------------------------------------------------------------------------- random


_GENERATOR = default_generator


def manual_seed(seed: _int) -> Generator:
    """Seed the default generator: later draws are reproducible (and PyTorch's own)."""
    return _GENERATOR.manual_seed(seed)


def seed() -> _int:
    return _GENERATOR.seed()


def initial_seed() -> _int:
    return _GENERATOR.initial_seed()


def _float_dtype(dt: Any) -> np.dtype:
    d = as_dtype(dt) if dt is not None else float32
    return d.np


def randn(*size: Any, dtype: Any = None, requires_grad: _bool = False,
          generator: Generator | None = None, device: Any = None, **_: Any) -> Tensor:
    """Standard normal draws of shape ``size`` (PyTorch's numbers for the same seed)."""
    shape = _shape_args(size)
    data = (generator or _GENERATOR).normal(math.prod(shape), _float_dtype(dtype))
    return _make(data.reshape(shape), requires_grad)


def rand(*size: Any, dtype: Any = None, requires_grad: _bool = False,
         generator: Generator | None = None, device: Any = None, **_: Any) -> Tensor:
    """Uniform draws in [0, 1) of shape ``size`` (PyTorch's numbers for the same seed)."""
    shape = _shape_args(size)
    data = (generator or _GENERATOR).uniform(math.prod(shape), _float_dtype(dtype))
    return _make(data.reshape(shape), requires_grad)


def randint(low: _int = 0, high: _int | None = None, size: Any = None, *,
            dtype: Any = None, generator: Generator | None = None, requires_grad: _bool = False,
            device: Any = None) -> Tensor:
    """Integers in ``[low, high)`` of shape ``size`` (``randint(high, size)`` also works)."""
    if size is None:
        low, high, size = 0, low, high
    shape = _shape_args((size,))
    data = (generator or _GENERATOR).integers(_int(low), _int(high), math.prod(shape))
    data = data.reshape(shape)
    return _make(data.astype(as_dtype(dtype).np) if dtype is not None else data, requires_grad)


def randn_like(input: Tensor, *, dtype: Any = None, requires_grad: _bool = False,
               **_: Any) -> Tensor:
    return randn(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def rand_like(input: Tensor, *, dtype: Any = None, requires_grad: _bool = False,
              **_: Any) -> Tensor:
    return rand(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


# --------------------------------------------------------------------------- creation


def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: _bool = False,
           pin_memory: _bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (floats become float32, ints int64)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
    return _make(tensor_from_data(data, dtype), requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    return wrap(tensor_from_data(data, dtype, copy=False))


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return wrap(tensor_from_data(array, copy=False))


def _filled(size: tuple, value: Any, dt: Any, requires_grad: _bool) -> Tensor:
    target = as_dtype(dt).np if dt is not None else float32.np
    return _make(np.full(_shape_args(size), value, dtype=target), requires_grad)


def ones(*size: Any, dtype: Any = None, requires_grad: _bool = False, **_: Any) -> Tensor:
    return _filled(size, 1, dtype, requires_grad)


def zeros(*size: Any, dtype: Any = None, requires_grad: _bool = False, **_: Any) -> Tensor:
    return _filled(size, 0, dtype, requires_grad)


def empty(*size: Any, dtype: Any = None, requires_grad: _bool = False, **_: Any) -> Tensor:
    """Like ``zeros`` (srcgrad never hands out uninitialized memory)."""
    return _filled(size, 0, dtype, requires_grad)


def full(size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: _bool = False,
         **_: Any) -> Tensor:
    if dtype is None:
        dtype = bool_ if isinstance(fill_value, _bool) else \
            int64 if isinstance(fill_value, (_int, np.integer)) else float32
    return _filled((size,), raw_data(fill_value), dtype, requires_grad)


def _like(input: Tensor, value: Any, dt: Any, requires_grad: _bool) -> Tensor:
    return _filled(input.shape, value, dt or input.dtype, requires_grad)


def ones_like(input: Tensor, *, dtype: Any = None, requires_grad: _bool = False,
              **_: Any) -> Tensor:
    return _like(input, 1, dtype, requires_grad)


def zeros_like(input: Tensor, *, dtype: Any = None, requires_grad: _bool = False,
               **_: Any) -> Tensor:
    return _like(input, 0, dtype, requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, requires_grad: _bool = False,
               **_: Any) -> Tensor:
    return _like(input, 0, dtype, requires_grad)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None,
              requires_grad: _bool = False, **_: Any) -> Tensor:
    return _like(input, fill_value, dtype, requires_grad)


def eye(n: _int, m: _int | None = None, *, dtype: Any = None, requires_grad: _bool = False,
        **_: Any) -> Tensor:
    return _make(np.eye(n, n if m is None else m, dtype=_float_dtype(dtype) if dtype is None
                        else as_dtype(dtype).np), requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           requires_grad: _bool = False, **_: Any) -> Tensor:
    """``[start, end)`` by ``step``: int64 for integer arguments, float32 otherwise."""
    if end is None:
        start, end = 0, start
    start, end, step = (raw_data(v) for v in (start, end, step))
    if dtype is None:
        integral = builtins.all(isinstance(v, (_int, np.integer)) for v in (start, end, step))
        dtype = int64 if integral else float32
    n = builtins.max(_int(np.ceil((end - start) / step)), 0)
    data = (start + np.arange(n, dtype=np.float64 if not as_dtype(dtype).np.kind in "iu"
                              else np.int64) * step).astype(as_dtype(dtype).np)
    return _make(data, requires_grad)


def linspace(start: Any, end: Any, steps: _int, *, dtype: Any = None,
             requires_grad: _bool = False, **_: Any) -> Tensor:
    data = np.linspace(raw_data(start), raw_data(end), steps).astype(_float_dtype(dtype))
    return _make(data, requires_grad)


# --------------------------------------------------------------------------- function forms


def _t(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else tensor(x)


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return _t(input).add(other, alpha=alpha)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return _t(input).sub(other, alpha=alpha)


subtract = sub


def mul(input: Any, other: Any) -> Tensor:
    return binary(OPS["mul"], input, other)


multiply = mul


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    return _t(input).div(other, rounding_mode=rounding_mode)


divide = true_divide = div


def neg(input: Tensor) -> Tensor:
    return input.neg()


negative = neg


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001
    return input ** exponent if isinstance(input, Tensor) else exponent.__rpow__(input)


def square(input: Tensor) -> Tensor:
    return input.square()


def reciprocal(input: Tensor) -> Tensor:
    return input.reciprocal()


def exp(input: Tensor) -> Tensor:
    return input.exp()


def log(input: Tensor) -> Tensor:
    return input.log()


def log1p(input: Tensor) -> Tensor:
    return input.log1p()


def expm1(input: Tensor) -> Tensor:
    return input.expm1()


def sin(input: Tensor) -> Tensor:
    return input.sin()


def cos(input: Tensor) -> Tensor:
    return input.cos()


def tan(input: Tensor) -> Tensor:
    return input.tan()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def relu(input: Tensor) -> Tensor:
    return input.relu()


def sqrt(input: Tensor) -> Tensor:
    return input.sqrt()


def rsqrt(input: Tensor) -> Tensor:
    return input.rsqrt()


def abs(input: Tensor) -> Tensor:  # noqa: A001
    return input.abs()


absolute = abs


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    return input.clamp(min, max)


clip = clamp


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    return input.clamp_min(min)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    return input.clamp_max(max)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    return input.maximum(other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    return input.minimum(other)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    """Elements of ``input`` where ``condition`` holds, else of ``other``."""
    if input is None and other is None:
        return tuple(wrap(i) for i in np.nonzero(raw_data(condition)))
    a, b = raw_data(input), raw_data(other)
    out = apply(OPS["where"], (raw_data(condition), input, other))
    want = promote_types(*(v for v in (a, b)))
    if out._data.dtype != want and out.grad_fn is None:
        out._data = out._data.astype(want)
    return out


def matmul(input: Any, other: Any) -> Tensor:
    return _record_matmul(input, other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    return input.mm(mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    return input.bmm(mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    return input.mv(vec)


def dot(input: Tensor, other: Tensor) -> Tensor:
    return input.dot(other)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    return input.unsqueeze(1) * vec2.unsqueeze(0)


def sum(input: Tensor, dim: Any = None, keepdim: _bool = False, *,  # noqa: A001
        dtype: Any = None) -> Tensor:
    return input.sum(dim, keepdim, dtype=dtype)


def mean(input: Tensor, dim: Any = None, keepdim: _bool = False, *, dtype: Any = None):
    return input.mean(dim, keepdim, dtype=dtype)


def max(input: Tensor, dim: Any = None, keepdim: _bool = False, *, out: Any = None):  # noqa
    return input.max(dim, keepdim)


def min(input: Tensor, dim: Any = None, keepdim: _bool = False, *, out: Any = None):  # noqa
    return input.min(dim, keepdim)


def amax(input: Tensor, dim: Any = (), keepdim: _bool = False) -> Tensor:
    return input.amax(dim, keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: _bool = False) -> Tensor:
    return input.amin(dim, keepdim)


def prod(input: Tensor, dim: Any = None, keepdim: _bool = False, *, dtype: Any = None):
    return input.prod(dim, keepdim, dtype=dtype)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: _bool = False,
         dtype: Any = None) -> Tensor:
    return input.norm(p, dim, keepdim, dtype)


def var(input: Tensor, dim: Any = None, unbiased: _bool = True, keepdim: _bool = False, *,
        correction: Any = None) -> Tensor:
    return input.var(dim, unbiased, keepdim, correction=correction)


def std(input: Tensor, dim: Any = None, unbiased: _bool = True, keepdim: _bool = False, *,
        correction: Any = None) -> Tensor:
    return input.std(dim, unbiased, keepdim, correction=correction)


def argmax(input: Tensor, dim: Any = None, keepdim: _bool = False) -> Tensor:
    return input.argmax(dim, keepdim)


def argmin(input: Tensor, dim: Any = None, keepdim: _bool = False) -> Tensor:
    return input.argmin(dim, keepdim)


def softmax(input: Tensor, dim: _int, dtype: Any = None) -> Tensor:
    return input.softmax(dim, dtype)


def log_softmax(input: Tensor, dim: _int, dtype: Any = None) -> Tensor:
    return input.log_softmax(dim, dtype)


def logsumexp(input: Tensor, dim: Any, keepdim: _bool = False) -> Tensor:
    return input.logsumexp(dim, keepdim)


def reshape(input: Tensor, shape: Sequence[_int]) -> Tensor:
    return input.reshape(shape)


def transpose(input: Tensor, dim0: _int, dim1: _int) -> Tensor:
    return input.transpose(dim0, dim1)


swapaxes = transpose


def permute(input: Tensor, dims: Sequence[_int]) -> Tensor:
    return input.permute(dims)


def flatten(input: Tensor, start_dim: _int = 0, end_dim: _int = -1) -> Tensor:
    return input.flatten(start_dim, end_dim)


def unsqueeze(input: Tensor, dim: _int) -> Tensor:
    return input.unsqueeze(dim)


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    return input.squeeze(dim)


def t(input: Tensor) -> Tensor:
    return input.t()


def broadcast_to(input: Tensor, size: Sequence[_int]) -> Tensor:
    return input.expand(size)


def _joined(tensors: Sequence, name: str) -> list:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        "(Tensor, ), but expected a tuple or list of Tensors")
    items = [_t(x) for x in tensors]
    if not items:
        raise ValueError(f"torch.{name}(): expected a non-empty list of Tensors")
    want = promote_types(*(x._data if x._data.ndim else x._data.reshape(1) for x in items))
    return [x if x._data.dtype == want else x.to(as_dtype(want)) for x in items]


def cat(tensors: Sequence[Tensor], dim: _int = 0) -> Tensor:
    """Join tensors along an existing dimension ``dim``."""
    items = _joined(tensors, "cat")
    ndim = items[0].ndim
    if ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    axis = items[0]._dim(dim)
    for i, x in enumerate(items[1:], 1):
        if x.ndim != ndim or builtins.any(a != b for k, (a, b) in
                                          enumerate(zip(x.shape, items[0].shape)) if k != axis):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {axis}. Expected size "
                f"{_mismatch(items[0], x, axis)} for tensor number {i} in the list.")
    return apply(OPS["concatenate"], (items,), {"axis": axis})


def _mismatch(first: Tensor, other: Tensor, axis: _int) -> str:
    for k, (a, b) in enumerate(zip(first.shape, other.shape)):
        if k != axis and a != b:
            return f"{a} but got size {b}"
    return f"{first.ndim} dims but got {other.ndim}"


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: _int = 0) -> Tensor:
    """Join same-shaped tensors along a new dimension ``dim``."""
    items = _joined(tensors, "stack")
    n = items[0].ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    for i, x in enumerate(items[1:], 1):
        if x.shape != items[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(items[0].shape)} at entry 0 and {list(x.shape)} at "
                               f"entry {i}")
    return apply(OPS["stack"], (items,), {"axis": dim % n})


def clone(input: Tensor) -> Tensor:
    return input.clone()


def detach(input: Tensor) -> Tensor:
    return input.detach()


def eq(input: Tensor, other: Any) -> Tensor:
    return input.eq(other)


def ne(input: Tensor, other: Any) -> Tensor:
    return input.ne(other)


def lt(input: Tensor, other: Any) -> Tensor:
    return input.lt(other)


def le(input: Tensor, other: Any) -> Tensor:
    return input.le(other)


def gt(input: Tensor, other: Any) -> Tensor:
    return input.gt(other)


def ge(input: Tensor, other: Any) -> Tensor:
    return input.ge(other)


def equal(input: Tensor, other: Tensor) -> _bool:
    return input.equal(other)


def allclose(input: Tensor, other: Tensor, rtol: builtins.float = 1e-05,
             atol: builtins.float = 1e-08, equal_nan: _bool = False) -> _bool:
    return input.allclose(other, rtol, atol, equal_nan)


def isclose(input: Tensor, other: Tensor, rtol: builtins.float = 1e-05,
            atol: builtins.float = 1e-08, equal_nan: _bool = False) -> Tensor:
    return input.isclose(other, rtol, atol, equal_nan)


def all(input: Tensor, dim: Any = None, keepdim: _bool = False) -> Tensor:  # noqa: A001
    return input.all(dim, keepdim)


def any(input: Tensor, dim: Any = None, keepdim: _bool = False) -> Tensor:  # noqa: A001
    return input.any(dim, keepdim)


def isnan(input: Tensor) -> Tensor:
    return input.isnan()


def isfinite(input: Tensor) -> Tensor:
    return input.isfinite()


def logical_not(input: Tensor) -> Tensor:
    return input.logical_not()


from . import nn  # noqa: E402,F401  (torch.nn; imported last: it uses the names above)

__all__.append("nn")
