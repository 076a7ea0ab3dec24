"""Guarantees afterwards: a value whose dtype numba computes with differently from numpy is
named, so that it can be refused (compiled code never gives another number than the plain
call).

Why: numpy keeps an array's (or numpy scalar's) dtype when it meets a Python number (NEP
50), numba converts both to a common type first. ``float32(0.3) > 0.3`` is False in numpy
(compared in float32) and True in numba (in float64), so compiled code took the other branch
(value 4.0 and gradient 5 where 1.6 and 2 are right). The same holds for float16 and
complex64, for integers narrower than int64 (``int32 + 2**31 - 1`` wraps in numpy, not in
numba's int64; ``int32 * int32`` too), for unsigned ones (``uint64 + 1`` is a float64 in
numba) and for numpy bools (``bool_ + bool_`` is a logical or in numpy, the integer 2 in
numba). float64, complex128 and int64 compute alike (tests/test_jit.py checks them).
"""
from __future__ import annotations

__all__ = ["dtype_mismatch", "explain", "mismatch", "named_mismatch"]

import numpy as np


def dtype_mismatch(dtype: np.dtype) -> str | None:
    """``dtype``'s name when numba computes with its values differently from numpy."""
    kind, size = dtype.kind, dtype.itemsize
    if kind in "ub" or (kind in "fi" and size < 8) or (kind == "c" and size < 16):
        return dtype.name
    return None


def mismatch(value) -> str | None:
    """The dtype name of ``value`` (a numpy array or scalar, or a tuple holding one) when
    numba computes with it differently from numpy, else None."""
    if isinstance(value, tuple):
        for item in value:
            found = mismatch(item)
            if found is not None:
                return found
        return None
    if isinstance(value, (np.ndarray, np.generic)):
        return dtype_mismatch(value.dtype)
    return None


def named_mismatch(value) -> str | None:
    """The dtype's name when ``value`` names such a dtype (``np.float32``, a ``np.dtype``,
    a string such as ``"float32"``): code that makes values of it."""
    try:
        if isinstance(value, str) or isinstance(value, np.dtype) or (
                isinstance(value, type) and issubclass(value, np.generic)):
            return dtype_mismatch(np.dtype(value))
    except TypeError:  # (a string that names no dtype)
        return None
    return None


def explain(dtype: str) -> str:
    """Why a value of ``dtype`` is refused, and what to do."""
    wide = "int64" if dtype.startswith(("int", "uint")) else "complex128" \
        if dtype.startswith("complex") else "float64"
    if dtype == "bool":
        return ("numba computes with numpy bools as Python does (bool_ + bool_ is 2), numpy "
                "as bools (a logical or), so sums and branches could differ from the plain "
                "call; pass an int64 or float64 array (m.astype(np.int64))")
    return (f"numba computes with {dtype} values and Python numbers in {wide} where numpy "
            f"keeps {dtype} (NEP 50), so comparisons, overflows and branches could differ "
            f"from the plain call; use {wide} (x.astype(np.{wide}))")
