"""``nn.Parameter``: a leaf tensor that requires grad by default."""
from __future__ import annotations

__all__ = ["Parameter"]

from typing import Any

import numpy as np

from .._tensor import Tensor, tensor_from_data
from ..autograd.tensor_data import make_leaf


class Parameter(Tensor):
    """A trainable leaf tensor; prints as ``Parameter containing:`` and its values."""

    __slots__ = ()

    def __new__(cls, data: Any = None, requires_grad: bool = True):
        raw = np.zeros((0,), np.float32) if data is None else \
            (data._data if isinstance(data, Tensor) else tensor_from_data(data))
        return make_leaf(raw, requires_grad, cls)

    def __init__(self, data: Any = None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__
