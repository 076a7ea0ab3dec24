"""What a tensor's values are, apart from the values: dtypes, ``Size`` and the CPU ``device``.

PyTorch's names for numpy's dtypes (``torch.float32``...), the conversions between the two,
and the shape tuple that prints as ``torch.Size([2, 3])``. Nothing here knows a Tensor.
"""
from __future__ import annotations

__all__ = ["BY_NAME", "BY_NUMPY", "CPU", "SCALAR_TYPE_NAMES", "Size", "as_dtype", "bool_",
           "complex64", "complex128", "device", "dtype", "dtype_of", "float16", "float32",
           "float64", "get_default_dtype", "int8", "int16", "int32", "int64",
           "printing_dtype_name", "shape_args", "type_label", "uint8"]

import builtins
import math
from typing import Any

import numpy as np


class dtype:
    """A tensor element type; prints as ``torch.float32``."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize")

    def __init__(self, name: str, np_type: Any):
        self.name = name
        self.np = np.dtype(np_type)
        self.is_floating_point = self.np.kind == "f"
        self.is_complex = self.np.kind == "c"
        self.is_signed = self.np.kind in "fic"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))

    def to_real(self) -> "dtype":
        return {"complex64": float32, "complex128": float64}.get(self.name, self)


float32 = dtype("float32", np.float32)
float64 = dtype("float64", np.float64)
float16 = dtype("float16", np.float16)
int64 = dtype("int64", np.int64)
int32 = dtype("int32", np.int32)
int16 = dtype("int16", np.int16)
int8 = dtype("int8", np.int8)
uint8 = dtype("uint8", np.uint8)
bool_ = dtype("bool", np.bool_)
complex64 = dtype("complex64", np.complex64)
complex128 = dtype("complex128", np.complex128)

BY_NUMPY = {d.np: d for d in (float32, float64, float16, int64, int32, int16, int8, uint8,
                              bool_, complex64, complex128)}
BY_NAME = {d.name: d for d in BY_NUMPY.values()}
BY_NAME.update(float=float32, double=float64, half=float16, long=int64, int=int32,
               short=int16, cfloat=complex64, cdouble=complex128)
_F32 = np.dtype(np.float32)
SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                     "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                     "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                     "complex128": "ComplexDouble"}


def get_default_dtype() -> dtype:
    """The dtype of tensors made from Python floats (float32)."""
    return float32


def as_dtype(d: Any) -> dtype:
    """A srcgrad dtype from a dtype, its name, a numpy dtype or a Python type."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, str) and d in BY_NAME:
        return BY_NAME[d]
    if d is builtins.float:
        return float64
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool_
    try:
        return BY_NUMPY[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"unsupported dtype: {d!r}") from None


def dtype_of(data: np.ndarray) -> dtype:
    d = BY_NUMPY.get(data.dtype)
    if d is None:
        raise TypeError(f"numpy dtype {data.dtype} has no tensor counterpart")
    return d


class Size(tuple):
    """The shape of a tensor: a tuple that prints as ``torch.Size([2, 2])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        return math.prod(self)

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out


class device:
    """The only device of srcgrad: ``device(type='cpu')``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str = "cpu", index: int | None = None):
        if isinstance(type, device):
            type, index = type.type, type.index
        kind = str(type).split(":")[0]
        if kind != "cpu":
            raise RuntimeError(f"srcgrad runs on the CPU only; device '{type}' is not available")
        self.type = "cpu"
        self.index = index

    def __repr__(self) -> str:
        return "device(type='cpu')"

    def __str__(self) -> str:
        return "cpu"

    def __eq__(self, other) -> bool:
        return isinstance(other, (device, str)) and str(other).split(":")[0] == "cpu"

    def __hash__(self) -> int:
        return hash("cpu")


CPU = device("cpu")
"""The device of every tensor."""


def printing_dtype_name(dt: np.dtype) -> str:
    return "torch." + _numpy_dtype_name(dt)


def _numpy_dtype_name(dt: np.dtype) -> str:
    d = BY_NUMPY.get(dt)
    return d.name if d is not None else dt.name


def type_label(t: Any) -> str:
    """PyTorch's ``[torch.FloatTensor [2, 3]]`` description of a tensor in messages."""
    name = SCALAR_TYPE_NAMES.get(t._data.dtype.name, "Float")
    shape = ", ".join(map(str, t._data.shape))
    return f"[torch.{name}Tensor [{shape}]]"


def shape_args(size: tuple) -> tuple[int, ...]:
    """``ones(2, 3)``, ``ones((2, 3))``, ``ones([2, 3])`` and ``ones(Size)`` all mean (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(n) for n in size)
