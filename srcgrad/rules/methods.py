"""How array methods and attributes map onto functions with rules.

The transformer sees ``x.sum(axis=0)`` and ``x.T``; it rewrites them as calls of
``ARRAY_METHODS["sum"](x, axis=0)`` and ``ARRAY_ATTRIBUTES["T"](x)``, functions keyed in the
registry. Method names in ``NONDIFF_METHODS`` and attributes in ``NONDIFF_ATTRIBUTES`` return
values that never carry a gradient.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .numpy_shape import (astype_method, item_method, reshape_method, tolist_method,
                          transpose_method)

__all__ = ["ARRAY_METHODS", "ARRAY_ATTRIBUTES", "NONDIFF_METHODS", "NONDIFF_ATTRIBUTES"]

# f(self, *args, **kwargs) == self.name(*args, **kwargs); every value has a registered rule.
ARRAY_METHODS: dict[str, Callable] = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "std": np.std,
    "var": np.var,
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "dot": np.dot,
    "clip": np.clip,
    "ravel": np.ravel,
    "flatten": np.ravel,  # a copy instead of a view: the same values and derivative
    "squeeze": np.squeeze,
    "swapaxes": np.swapaxes,
    "repeat": np.repeat,
    "trace": np.trace,
    "diagonal": np.diagonal,
    "copy": np.copy,
    "conj": np.conjugate,
    "conjugate": np.conjugate,
    "reshape": reshape_method,
    "transpose": transpose_method,
    "astype": astype_method,
    "item": item_method,
    "tolist": tolist_method,
}

# f(self) == self.name
ARRAY_ATTRIBUTES: dict[str, Callable] = {
    "T": np.transpose,
    "mT": np.matrix_transpose,
    "real": np.real,
    "imag": np.imag,
}

NONDIFF_METHODS: frozenset[str] = frozenset({
    "argmax", "argmin", "argsort", "nonzero", "all", "any", "round", "searchsorted",
    "__len__",
})

NONDIFF_ATTRIBUTES: frozenset[str] = frozenset({
    "shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides",
})
