"""``torch.nn.functional`` of the Tensor facade.

Activations and softmaxes run their registry rules (``srcgrad.rules.nn``) as single nodes;
the losses and ``linear`` are compositions of recorded operations whose last node carries
PyTorch's name (``NllLossBackward0``, ``MseLossBackward0``, ``AddmmBackward0``), which is
presentation only: their gradients come from the rules of the composed operations.
"""
from __future__ import annotations

__all__ = ["softmax", "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "linear",
           "relu", "sigmoid", "tanh"]

import warnings
from typing import Any

import numpy as np

from ..autograd.graph import node_class
from ..autograd.ops import OPS
from ..autograd.dispatch import apply, binary, unary, wrap
from .._tensor import Tensor
from ..autograd.dtypes import SCALAR_TYPE_NAMES, Size
from ..errors import UnsupportedFeatureError

_REDUCTIONS = ("mean", "sum", "none")


def _implicit_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim)
    return input.softmax(dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim)
    return input.log_softmax(dim, dtype)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``."""
    out = input @ weight.t()
    if bias is None:
        return out
    name = "AddmmBackward0" if input.ndim == 2 else "ViewBackward0"
    return binary(OPS["add"], out, bias, node_class(name))


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Any = None) -> Tensor:
    """Mean (or sum, or elementwise) squared error."""
    _check_reduction(reduction)
    if tuple(np.shape(target._data if isinstance(target, Tensor) else target)) != \
            tuple(input.shape):
        warnings.warn(f"Using a target size ({_size(target)}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=2)
    squared = (input - target) ** 2
    name = node_class("MseLossBackward0")
    if reduction == "mean":
        out = apply(OPS["mean"], (squared,), cls=name)
    elif reduction == "sum":
        out = apply(OPS["sum"], (squared,), cls=name)
    else:
        out = squared
    return _saving(out, input, target)


def _saving(out: Tensor, *saved: Any) -> Tensor:
    """``out`` whose node also claims ``saved`` as PyTorch's loss node saves them: changing
    one in place before backward then raises, as it does there (srcgrad's own nodes read the
    difference, which is not changed)."""
    node = out.grad_fn
    if node is not None:
        node.vers = list(node.vers or ()) + [(t, t._vc, t._vc[0]) for t in saved
                                              if isinstance(t, Tensor)]
    return out


def _size(t: Any):
    return Size(np.shape(t._data if isinstance(t, Tensor) else t))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input``.

    ``input`` is ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``; classes run along dim 1.
    """
    _check_reduction(reduction)
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(t.dtype)}")
    logp = input if input.ndim < 2 else _classes_last(input)
    n_classes = logp.shape[-1]
    flat_t = t.reshape(-1)
    keep = flat_t != ignore_index
    if np.any((flat_t[keep] < 0) | (flat_t[keep] >= n_classes)):
        bad = int(flat_t[keep][(flat_t[keep] < 0) | (flat_t[keep] >= n_classes)][0])
        raise IndexError(f"Target {bad} is out of bounds.")
    safe = np.where(keep, flat_t, 0)
    rows = logp.reshape(-1, n_classes)
    picked = rows[np.arange(rows.shape[0]), safe]
    w = np.ones(n_classes, rows._data.dtype) if weight is None else \
        (weight._data if isinstance(weight, Tensor) else np.asarray(weight))
    coef = (w[safe] * keep).astype(rows._data.dtype)
    losses = picked * wrap(coef)
    name = node_class("NllLossBackward0")
    if reduction == "none":
        return unary(OPS["neg"], losses.reshape(t.shape), name)
    total = losses.sum()
    if reduction == "sum":
        return unary(OPS["neg"], total, name)
    return binary(OPS["div"], unary(OPS["neg"], total), float(coef.sum()), name)


def _classes_last(input: Tensor) -> Tensor:
    if input.ndim == 2:
        return input
    return input.permute(0, *range(2, input.ndim), 1)


def _scalar_name(dt: np.dtype) -> str:
    return SCALAR_TYPE_NAMES.get(dt.name, dt.name)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``input`` (classes along dim 1) and class-index ``target``.

    Class-probability targets (a float ``target`` shaped like ``input``) are supported too;
    ``label_smoothing`` is not.
    """
    if label_smoothing:
        raise UnsupportedFeatureError("label_smoothing is not supported by srcgrad")
    class_dim = 0 if input.ndim == 1 else 1
    logp = input.log_softmax(class_dim)
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind == "f":
        _check_reduction(reduction)
        per = -(logp * target).sum(class_dim)
        if weight is not None:
            raise UnsupportedFeatureError("weight with probability targets is not supported")
        if reduction == "none":
            return per
        total = per.sum() if reduction == "sum" else per.mean()
        return total
    return nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
