"""Tensor methods updating it in place: ``add_``, ``t[i] = v``, ``fill_``, ``+=``...

An in-place update is recorded as its out-of-place op on a copy of the old value, whose
history the tensor then takes over (its version counter goes up, so a node that saved the old
value refuses to run). On a view made by indexing it is written as ``base[i] = new``.
"""
from __future__ import annotations

__all__ = ["LEAF_INPLACE", "RESHAPED_VIEW_INPLACE", "VIEW_OF_LEAF_INPLACE", "InplaceMethods",
           "refresh_views"]

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UnsupportedFeatureError
from . import dispatch
from .dispatch import NO_INDEX, NO_KWARGS, apply, raw_data, raw_index, wrap
from .dtypes import SCALAR_TYPE_NAMES
from .generator import default_generator
from .grad_mode import STATE as _STATE
from .ops import OPS

if TYPE_CHECKING:  # annotations name the class these methods are mixed into
    from .._tensor import Tensor

RESHAPED_VIEW_INPLACE = (
    "srcgrad records in-place operations on views made by indexing, reshapes and transposes; "
    "this view repeats elements of its base (expand): use the out-of-place operation")
PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation.")
OVERLAPPING_INPLACE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation.")
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = ("a view of a leaf Variable that requires grad is being used in an "
                        "in-place operation.")


class InplaceMethods:
    """Mixed into ``Tensor``: in-place updates."""

    __slots__ = ()

    # ----------------------------------------------------------------- in place

    def __setitem__(self, index: Any, value: Any) -> None:
        raw, advanced = raw_index(index)
        # (PyTorch writes a basic index through the view self[index], copy_ of the value)
        check_overlap(self._data if advanced else self._data[raw], value)
        if _STATE.enabled and (self._rg or (isinstance(value, dispatch.Tensor) and value._rg)):
            if self._rg and self.grad_fn is None:  # PyTorch writes through a view here
                raise RuntimeError(VIEW_OF_LEAF_INPLACE)
            # Recorded as the functional update runtime.setitem (PyTorch: CopySlices).
            self._inplace(lambda before: apply(OPS["setitem"], (before, raw, value)))
            return
        self._data[raw] = raw_data(value)
        self._vc[0] += 1

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

    def _inplace(self, compute) -> "Tensor":
        """Apply ``compute(value) -> Tensor`` in place, rebasing history like PyTorch."""
        if not self._data.flags.writeable:  # (numpy's expanded views are read-only)
            raise RuntimeError(OVERLAPPING_INPLACE)
        self._check_inplace()
        meta = self._meta
        view = meta is not None and meta.base is not None
        if _STATE.enabled and view and meta.index is not NO_INDEX:
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
        if _STATE.enabled and view and result._rg:  # the base must record the history
            return self._inplace_reshaped(result)
        np.copyto(self._data, data, casting="unsafe")
        self._vc[0] += 1
        if result.grad_fn is not None:
            rebase(self, result.grad_fn, True)
        if _STATE.enabled:
            refresh_views(self)
        return self

    def _inplace_view(self, compute) -> "Tensor":
        """In-place update of ``view = base[index]``: written as ``base[index] = new``, so the
        base's history records it (PyTorch's CopySlices); the view then reads from it anew."""
        base, index = self._meta.base, self._meta.index
        before = wrap(self._data.copy())
        before.grad_fn, before._rg = self.grad_fn, self._rg
        base[index] = compute(before)
        if base._rg:  # (refresh_views did it, unless numpy's index copied)
            rebase(self, *view_history(self, base))
        return self

    def _inplace_reshaped(self, result: "Tensor") -> "Tensor":
        """In-place update of a view made by a reshape, transpose, permute, (un)squeeze...:
        each element of the view is one element of its base, so the base's new value is the
        view's new value (``result``) put back in the base's order, recorded as an indexing
        of ``result``; the view then takes its history from the base (``refresh_views``)."""
        base = self._meta.base
        order = base_order(self, base)
        if order is None:  # one element of the base appears twice (not made by the ops here)
            raise UnsupportedFeatureError(RESHAPED_VIEW_INPLACE)
        if result.shape != self.shape:
            result = result.expand(self.shape)
        flat = result.reshape(-1)
        base._inplace(lambda before: flat[order].reshape(base.shape))
        return self

    def add_(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        check_overlap(self, other)
        return self._inplace(lambda v: v.add(other, alpha=alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        check_overlap(self, other)
        return self._inplace(lambda v: v.sub(other, alpha=alpha))

    def mul_(self, other: Any) -> "Tensor":
        check_overlap(self, other)
        return self._inplace(lambda v: v * other)

    def div_(self, other: Any) -> "Tensor":
        check_overlap(self, other)
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
        recorded = self._rg or (isinstance(value, dispatch.Tensor) and value._rg) or \
            (self._meta is not None and self._meta.base is not None)
        if _STATE.enabled and recorded:
            # A zero gradient to the old value, as PyTorch's FillBackward0 gives.
            return self._inplace(lambda v: v * 0 + value)
        self._data[...] = raw_data(value)
        self._vc[0] += 1
        return self

    def copy_(self, src: Any) -> "Tensor":
        check_overlap(self, src)
        if isinstance(src, dispatch.Tensor) and src._rg and _STATE.enabled:
            return self._inplace(lambda v: v * 0 + src)
        return self.fill_(src)

    def uniform_(self, a: float = 0.0, b: float = 1.0) -> "Tensor":
        draws = default_generator.uniform(self._data.size, self._data.dtype)
        return self.copy_(wrap(draws.reshape(self._data.shape)) * (b - a) + a)

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> "Tensor":
        draws = default_generator.normal(self._data.size, self._data.dtype)
        return self.copy_(wrap(draws.reshape(self._data.shape)) * std + mean)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)


def refresh_views(t: "Tensor") -> None:
    """After ``t`` changed in place, give each live view of it (and their views) the history
    of the same view taken of ``t`` now, as PyTorch regenerates a view's ``grad_fn``: their
    data is ``t``'s memory, so they already hold the new values."""
    meta = t._meta
    if meta is None or not meta.views:
        return
    for view in list(meta.views):
        if view._meta is None or view._meta.base is not t:
            continue
        if t._rg:
            rebase(view, *view_history(view, t))
        refresh_views(view)


def view_history(view: "Tensor", base: "Tensor") -> tuple:
    """(grad_fn, requires grad) of ``view`` taken again of ``base`` as it is now."""
    meta = view._meta
    if meta.index is not NO_INDEX:
        fresh = apply(OPS["getitem"], (base, meta.index), NO_KWARGS,
                      cls=dispatch.index_node(meta.index, False))
    else:
        op, rest, kw, cls = meta.remake
        fresh = apply(op, (base,) + rest, kw, cls=cls)
    return fresh.grad_fn, fresh._rg


def base_order(view: "Tensor", base: "Tensor") -> np.ndarray | None:
    """For a view made of ``base`` by a reshape-like op: the position in the flattened view of
    each element of the flattened base, or None when the view does not hold each element of
    the base exactly once."""
    op, rest, kw, _ = view._meta.remake
    rule = op.rule or op.resolve()
    positions = np.asarray(rule.fn(np.arange(base._data.size).reshape(base._data.shape),
                                   *rest, **kw)).ravel()
    if positions.size != base._data.size:
        return None
    order = np.full(base._data.size, -1)
    order[positions] = np.arange(positions.size)
    return None if np.any(order < 0) else order


def rebase(t: "Tensor", node: Any, requires_grad: bool) -> None:
    """Give ``t`` the history ``node`` after an in-place change. ``retain_grad`` moves to the
    new node (``.grad`` is the gradient of the new value, as in PyTorch); hooks registered
    before stay with the old value's node."""
    old = t.grad_fn
    if old is not node and old is not None and old.hooks is not None and \
            old.hooks.retain is not None and old.hooks.retain() is t:
        old.hooks.retain = None
        if node is not None:
            if node.hooks is None:
                node.hooks = dispatch.NodeHooks()
            node.hooks.retain = weakref.ref(t)
    t.grad_fn, t._rg = node, requires_grad


def check_overlap(target: Any, operand: Any) -> None:
    """PyTorch's refusal of an in-place update reading memory it partly writes (``y.add_(y.T)``,
    ``y[1:] = y[:2]``): numpy would compute it, but the program means something else there.
    As in PyTorch, only dense memory is compared and the same memory exactly is fine."""
    if not isinstance(operand, dispatch.Tensor):
        return
    a, b = getattr(target, "_data", target), operand._data
    if not isinstance(a, np.ndarray):  # (a numpy scalar: an element read by a basic index)
        return
    span_a, span_b = _dense_span(a), _dense_span(b)
    if span_a is None or span_b is None or span_a[1] <= span_b[0] or span_b[1] <= span_a[0]:
        return
    if span_a == span_b and a.shape == b.shape and a.strides == b.strides:
        return
    raise RuntimeError(PARTIAL_OVERLAP)


def _dense_span(a: np.ndarray) -> tuple | None:
    """The bytes ``a`` covers, when it covers each of them once (no gaps, no repeats)."""
    if a.size == 0 or any(s == 0 for n, s in zip(a.shape, a.strides) if n > 1):
        return None
    start = a.__array_interface__["data"][0]
    low = start + sum(min(0, (n - 1) * s) for n, s in zip(a.shape, a.strides))
    high = start + sum(max(0, (n - 1) * s) for n, s in zip(a.shape, a.strides)) + a.itemsize
    return (low, high) if high - low == a.size * a.itemsize else None
