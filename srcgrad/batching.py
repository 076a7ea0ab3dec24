"""Run-time support of batched code (see transforms/batch.py and vmap.py).

A *batched* value holds one value per example: an array whose axis 0 is the batch axis, or a
container (tuple, list, dict) whose every array leaf has the batch axis first. Unbatched
values are the same for every example and have no batch axis. The helpers here apply an
operation written for one example to batched operands, mostly in one numpy call (axes
shifted by one, operands aligned for broadcasting); ``per_example`` is the always-correct
fallback that loops over the batch.

Numpy only: this module sits beside ``runtime`` in the values layer.
"""
from __future__ import annotations

__all__ = ["batch_size", "lift", "take", "stack", "per_example", "apply", "apply_method",
           "attribute", "getitem", "pack", "shape_of", "len_of", "BATCH_RULES",
           "register", "select", "logical_not", "Unbatchable", "matmul_cotangent", "expand_to_rule", "expand_reduced_rule",
           "map_leaves", "is_constant", "really_batched"]

import operator
import types

import numpy as np

from . import runtime
from .errors import UnsupportedFeatureError
from .runtime import ZERO, Tape, add, copy_saved, is_zero


class Unstackable(UnsupportedFeatureError):
    """The examples' results of a function run once per example differ in structure or
    shape (the two sides of a data-dependent branch saved different values for the
    backward sweep): the caller runs once per example instead, where results agree."""

_CONTAINERS = (tuple, list, dict)


def _is_leaf_array(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "ndim")


def _leaves(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v)
    elif isinstance(x, (tuple, list)):
        for v in x:
            yield from _leaves(v)
    elif _is_leaf_array(x):
        yield x


def batch_size(*values) -> int:
    """The batch size of the batched ``values`` (their leaves' common axis-0 length)."""
    for v in values:
        for leaf in _leaves(v):
            if leaf.ndim:
                return leaf.shape[0]
    raise ValueError("vmap: no batched array among the batched arguments")


def map_leaves(fn, x):
    """``fn`` applied to each leaf of a container (arrays and numbers)."""
    if isinstance(x, dict):
        return {k: map_leaves(fn, v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[map_leaves(fn, v) for v in x])
    if isinstance(x, (tuple, list)):
        return type(x)(map_leaves(fn, v) for v in x)
    if _is_leaf_array(x) or isinstance(x, (int, float, complex, np.number, bool)):
        return fn(x)
    return x  # None, strings, functions: the same for every example


# Python numbers are the same for every example even inside batched values: generated code
# tells the lazy zero adjoint (the float 0.0) from arrays by its type, so it must stay one.
_PY_SCALARS = (float, int, bool, complex)


def is_constant(x) -> bool:
    """Whether ``x`` is a Python number, the same for every example (see ``_PY_SCALARS``)."""
    return type(x) in _PY_SCALARS


def lift(x, size: int):
    """Unbatched ``x`` as a batched value: every numeric leaf repeated ``size`` times (a
    broadcast view, no copy); Python numbers stay as they are (see ``_PY_SCALARS``)."""
    def one(leaf):
        if is_constant(leaf):
            return leaf
        if not _is_leaf_array(leaf):
            leaf = np.asarray(leaf)
        return np.broadcast_to(leaf, (size,) + tuple(leaf.shape))  # dask dispatches this
    return map_leaves(one, x)


def take(x, b: int):
    """Example ``b`` of batched ``x``."""
    return map_leaves(lambda leaf: leaf if is_constant(leaf) else leaf[b], x)


def stack(values: list):
    """Batched value from a list of per-example values with one structure."""
    first = values[0]
    if isinstance(first, dict):
        return {k: stack([v[k] for v in values]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*[stack([v[i] for v in values]) for i in range(len(first))])
    if isinstance(first, (tuple, list)):
        return type(first)(stack([v[i] for v in values]) for i in range(len(first)))
    if first is None or isinstance(first, str) or callable(first) and not _users_object(first):
        return first
    if is_constant(first) and all(type(v) is type(first) and v == first for v in values):
        return first
    leaves = [np.asarray(v) if not _is_leaf_array(v) else v for v in values]
    if any(np.shape(v) != np.shape(leaves[0]) for v in leaves):
        raise Unstackable(f"vmap: the examples' results differ in shape "
                          f"({', '.join(str(np.shape(v)) for v in leaves[:4])}): they cannot "
                          f"be stacked into one batched value")
    return np.stack(leaves)


def _users_object(x) -> bool:
    """An object of a user's class defining ``__call__`` in Python: a value like any
    object, stacked example by example. (Returned as example 0's, as a function is, every
    example read example 0's fields: a Hessian's columns all came from its first.)"""
    call = getattr(type(x), "__call__", None)
    return isinstance(call, types.FunctionType) and hasattr(x, "__dict__") \
        and not (type(x).__module__ or "").startswith("srcgrad")


def _split(args, kwargs, batched):
    """The positional and keyword arguments of example ``b``, as a function of ``b``.

    Each example gets its own copy of the tapes in unbatched arguments (the saved values
    of a generated forward sweep): a backward sweep pops them."""

    def at(b):
        a = [take(v, b) if i in batched else copy_saved(v) for i, v in enumerate(args)]
        k = {n: take(v, b) if n in batched else copy_saved(v) for n, v in kwargs.items()}
        return a, k
    return at


def per_example(fn, args, kwargs, batched, size: int):
    """``fn`` called once per example, results stacked: correct for any pure ``fn``."""
    at = _split(args, kwargs, batched)
    results = []
    for b in range(size):
        a, k = at(b)
        results.append(fn(*a, **k))
    return stack(results)


# -- batch rules: one numpy call for a whole batch -------------------------------------------
def _pe_ndim(x, is_batched: bool) -> int:
    return np.ndim(x) - 1 if is_batched else np.ndim(x)


def _align(args, batched):
    """Batched array operands padded with unit axes after the batch axis, so that numpy's
    right-aligned broadcasting pairs per-example axes with per-example axes."""
    flags = [i in batched for i in range(len(args))]
    target = max(_pe_ndim(a, f) for a, f in zip(args, flags))
    out = []
    for a, f in zip(args, flags):
        if f and _pe_ndim(a, f) < target:
            shape = np.shape(a)
            a = a.reshape(shape[:1] + (1,) * (target - len(shape) + 1) + shape[1:])
        out.append(a)
    return out


def _elementwise(fn, args, kwargs, batched, size):
    if any(isinstance(a, _CONTAINERS) for a in args) or any(k in batched for k in kwargs):
        return NotImplemented
    aligned = _align(list(args), batched)
    out = fn(*aligned, **kwargs)
    return out if np.ndim(out) >= 1 and np.shape(out)[0] == size else NotImplemented


def _shift_axis(axis, ndim_pe: int):
    """A per-example ``axis`` (int, tuple or None) on the batched array."""
    if axis is None:
        return tuple(range(1, ndim_pe + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(_shift_axis(a, ndim_pe)[0] for a in axis)
    axis = operator.index(axis)
    if not -ndim_pe <= axis < max(ndim_pe, 1):
        raise np.exceptions.AxisError(axis, ndim_pe)
    return (axis % max(ndim_pe, 1) + 1,)


def _reduction(accepts_tuple: bool):
    def rule(fn, args, kwargs, batched, size):
        if batched != {0} or not args or isinstance(args[0], _CONTAINERS):
            return NotImplemented
        args, kwargs = list(args), dict(kwargs)
        x = args[0]
        if len(args) > 1:
            axis = args.pop(1)
        else:
            axis = kwargs.pop("axis", None)
        ndim_pe = np.ndim(x) - 1
        if ndim_pe == 0 and axis in (None, 0, -1, (), (0,), (-1,)):
            # a number per example: reducing it changes nothing (axis=() reduces no axis:
            # sum, max... return it, std and var zeros); the batch axis is never reduced
            if not accepts_tuple:  # argmax/argmin/cumsum/cumprod of one number
                return np.zeros(size, dtype=np.intp) if fn in (np.argmax, np.argmin) \
                    else fn(x[:, None], *args[1:], axis=1, **kwargs)  # (B, 1): an array each
            return fn(x, *args[1:], axis=(), **kwargs)
        if axis is None and not accepts_tuple:
            if ndim_pe > 1:
                return NotImplemented  # argmax etc. over a flattened example
            axis = 0
        axes = _shift_axis(axis, ndim_pe)
        kwargs["axis"] = axes if accepts_tuple else axes[0]
        return fn(x, *args[1:], **kwargs)
    return rule


def _matmul(fn, args, kwargs, batched, size):
    if len(args) != 2 or kwargs:
        return NotImplemented
    a, b = args
    ba, bb = 0 in batched, 1 in batched
    na, nb = _pe_ndim(a, ba), _pe_ndim(b, bb)
    if na == 0 or nb == 0 or na > 2 or nb > 2:
        return NotImplemented
    if na == 1:
        a = a[..., None, :]
    if nb == 1:
        b = b[..., :, None]
    out = np.matmul(a, b)
    if nb == 1:
        out = out[..., 0]
    if na == 1:
        out = out[..., 0] if nb == 1 else out[..., 0, :]
    return out


def _dot(fn, args, kwargs, batched, size):
    if len(args) != 2 or kwargs:
        return NotImplemented
    na, nb = _pe_ndim(args[0], 0 in batched), _pe_ndim(args[1], 1 in batched)
    if na == 0 or nb == 0:
        return _elementwise(np.multiply, args, {}, batched, size)
    return _matmul(np.matmul, args, kwargs, batched, size)


def _einsum(fn, args, kwargs, batched, size):
    if not args or not isinstance(args[0], str) or 0 in batched or \
            any(isinstance(k, str) for k in batched) or set(kwargs) - {"optimize"}:
        return NotImplemented
    spec = args[0].replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(args) - 1:
        return NotImplemented
    used = set(spec)
    letter = next((c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"
                   if c not in used), None)
    if letter is None:
        return NotImplemented
    if not arrow:
        counts = {c: inputs.count(c) for c in inputs if c.isalpha()}
        output = ("..." if "..." in inputs else "") + "".join(
            sorted(c for c, n in counts.items() if n == 1))
    terms = [letter + t if i + 1 in batched else t for i, t in enumerate(terms)]
    return fn(",".join(terms) + "->" + letter + output, *args[1:], **kwargs)


def _reshape(fn, args, kwargs, batched, size):
    if batched != {0} or len(args) != 2:
        return NotImplemented
    shape = args[1]
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return fn(args[0], (size,) + shape, **kwargs)


def _transpose(fn, args, kwargs, batched, size):
    if batched != {0} or isinstance(args[0], _CONTAINERS):
        return NotImplemented
    x = args[0]
    axes = args[1] if len(args) > 1 else kwargs.get("axes")
    ndim_pe = np.ndim(x) - 1
    if ndim_pe == 0:
        return x
    if axes is None:
        axes = tuple(range(ndim_pe))[::-1]
    return np.transpose(x, (0,) + tuple(a % ndim_pe + 1 for a in axes))


def _stack(fn, args, kwargs, batched, size):
    """``np.stack``/``np.concatenate`` of a batched list, along a shifted axis."""
    if batched != {0} or len(args) > 1 or not isinstance(args[0], (list, tuple)):
        return NotImplemented
    axis = kwargs.get("axis", 0)
    if axis is None:
        return NotImplemented
    ndim_pe = np.ndim(args[0][0]) - 1 + (fn is np.stack) if len(args[0]) else 1
    kwargs = dict(kwargs, axis=_shift_axis(axis, ndim_pe)[0])
    return fn(args[0], **kwargs)


def _where(fn, args, kwargs, batched, size):
    if len(args) != 3 or kwargs:
        return NotImplemented
    return _elementwise(fn, args, {}, batched, size)


def _unbroadcast(fn, args, kwargs, batched, size):
    """``runtime.unbroadcast(g, x)`` per example: sum ``g`` down to one example of ``x``."""
    if kwargs or len(args) != 2 or 0 not in batched or isinstance(args[0], _CONTAINERS):
        return NotImplemented
    g, x = args
    if not hasattr(g, "shape") and not isinstance(g, np.generic):
        return NotImplemented
    shape = np.shape(x)[1:] if 1 in batched else np.shape(x)
    gshape = np.shape(g)[1:]
    extra = len(gshape) - len(shape)
    if extra < 0:
        return NotImplemented
    if extra:
        g = np.sum(g, axis=tuple(range(1, extra + 1)))
    axes = tuple(i + 1 for i, n in enumerate(shape) if n == 1 and np.shape(g)[i + 1] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    return g


def _same_shape(fn, args, kwargs, batched, size):
    """``zeros_like``/``ones_like``: the batched input's shape is the batched output's."""
    if batched != {0} or isinstance(args[0], _CONTAINERS):
        return NotImplemented
    return fn(*args, **kwargs)


def _lifted(out, batched_out: bool, size: int):
    return out if batched_out else lift(out, size)


def matmul_cotangent(which: int):
    """Batch rule of ``matmul_left(g, x, y)`` (``which=0``) or ``matmul_right`` (1): the
    per-example cotangents of ``x @ y`` for 1-D and 2-D examples, as one einsum."""
    specs = {  # (x ndim, y ndim): (left spec, right spec) over operands (g, y) / (x, g)
        (2, 2): ("nm,km->nk", "nk,nm->km"), (1, 2): ("m,km->k", "k,m->km"),
        (2, 1): ("n,k->nk", "nk,n->k"), (1, 1): (",k->k", "k,->k")}

    def rule(fn, args, kwargs, batched, size):
        if len(args) != 3 or kwargs:
            return NotImplemented
        g, x, y = args
        key = (_pe_ndim(x, 1 in batched), _pe_ndim(y, 2 in batched))
        if key not in specs:
            return NotImplemented
        operands, flags = ((g, y), (0, 2)) if which == 0 else ((x, g), (1, 0))
        mask = {i + 1 for i, f in enumerate(flags) if f in batched}
        out = _einsum(np.einsum, (specs[key][which],) + operands, {}, mask, size)
        return _lifted(out, bool(mask), size)
    return rule


def expand_reduced_rule(fn, args, kwargs, batched, size):
    """Batch rule of ``expand_reduced(g, x, axis, keepdims)``: a reduction's result with
    unit axes where each example was reduced."""
    return expand_to_rule(fn, args, kwargs, batched, size, spread=False)


def expand_to_rule(fn, args, kwargs, batched, size, spread=True):
    """Batch rule of ``expand_to(g, x, axis, keepdims)``: a reduction's cotangent spread
    over the reduced axes of each example."""
    names = ("g", "x", "axis", "keepdims")
    bound = dict(zip(names, args), **kwargs)
    if set(bound) - set(names) or batched - {0, 1, "g", "x"}:
        return NotImplemented
    g = bound["g"] if batched & {0, "g"} else lift(bound["g"], size)
    shape = np.shape(bound["x"])[1:] if batched & {1, "x"} else np.shape(bound["x"])
    axis = bound.get("axis")
    if not bound.get("keepdims", False):
        axes = range(len(shape)) if axis is None else \
            {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
        g = np.reshape(g, (size,) + tuple(1 if i in axes else n for i, n in enumerate(shape)))
    return np.broadcast_to(g, (size,) + tuple(shape)) if spread else g


def _grad_seed(fn, args, kwargs, batched, size):
    value = args[0]
    if batched != {0} or not isinstance(value, np.ndarray) or value.size != size:
        return NotImplemented
    return np.ones_like(value, dtype=value.dtype if value.dtype.kind == "f" else float)


def _densify(fn, args, kwargs, batched, size):
    """Batch rule of ``runtime.densify(g, x)`` for arrays and dicts, lists, tuples of them."""
    g, x = args
    if kwargs:
        return NotImplemented
    if isinstance(x, (dict, list, tuple)) and not hasattr(x, "_fields") and (
            is_zero(g) or type(g) is type(x)):
        keys = x.keys() if isinstance(x, dict) else range(len(x))
        parts = [_densify(fn, (_item(g, k), x[k]), {}, batched if not is_zero(
            _item(g, k)) else batched - {0}, size) for k in keys]
        if any(p is NotImplemented for p in parts):
            return NotImplemented
        return dict(zip(keys, parts)) if isinstance(x, dict) else type(x)(parts)
    if not isinstance(x, np.ndarray) or np.iscomplexobj(x) or \
            not (is_zero(g) or isinstance(g, np.ndarray)) or np.iscomplexobj(g):
        return NotImplemented
    shape = x.shape if 1 in batched else (size,) + x.shape
    if is_zero(g):
        return np.zeros(shape, dtype=x.dtype if x.dtype.kind == "f" else float)
    if 0 not in batched:
        g = lift(g, size)
    pad = len(shape) - g.ndim
    if pad > 0:
        g = g.reshape(g.shape[:1] + (1,) * pad + g.shape[1:])
    return np.broadcast_to(g, shape) if g.shape != shape else g


def _item(g, key):
    if is_zero(g):
        return ZERO
    return g.get(key, ZERO) if isinstance(g, dict) else g[key]


def _add_at(fn, args, kwargs, batched, size):
    """Batch rule of ``runtime.add_at(acc, x, index, g)`` for a dict or array ``x``."""
    acc, x, index, g = args
    if kwargs or 2 in batched or not (0 in batched or is_zero(acc)):
        return NotImplemented
    if 3 not in batched:
        g = lift(g, size)
    if isinstance(x, dict) and isinstance(index, str):
        out = dict(acc) if isinstance(acc, dict) else {}
        previous = out.get(index, ZERO)
        out[index] = apply(add, (previous, g), {}, {1} | ({0} if not is_zero(previous)
                                                          else set()), size)
        return out
    if isinstance(x, np.ndarray) and 1 in batched and _basic_index(index):
        out = np.zeros(x.shape, np.result_type(x.dtype, np.float32)) if is_zero(acc) \
            else np.array(acc, copy=True)
        items = (slice(None),) + (index if isinstance(index, tuple) else (index,))
        region = out[items]
        pad = region.ndim - np.ndim(g)
        if pad < 0:
            return NotImplemented
        out[items] += np.reshape(g, np.shape(g)[:1] + (1,) * pad + np.shape(g)[1:])
        return out
    return NotImplemented


def _add(fn, args, kwargs, batched, size):
    """Batch rule of ``runtime.add``: the lazy zero passes the other operand through."""
    a, b = args
    if is_zero(a) and 1 in batched:
        return b
    if is_zero(b) and 0 in batched:
        return a
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return _elementwise(np.add, args, {}, batched, size)
    return NotImplemented


def _element(fn, args, kwargs, batched, size):
    """``runtime.element(xs, i)``: the item a loop binds, of a batched array or list."""
    if kwargs or 1 in batched or isinstance(args[0], dict):
        return NotImplemented
    return getitem(args[0], args[1], {0}, size)


def _part(fn, args, kwargs, batched, size):
    """``runtime.part(g, key)`` and ``runtime.tangent_item(d, x, key)``: an item of a
    batched structured adjoint or tangent (an array tangent may need broadcasting first)."""
    g, key = args[0], args[-1]
    if kwargs or len(args) - 1 in batched or 0 not in batched:
        return NotImplemented
    if isinstance(g, dict):
        return g.get(key, ZERO)
    if isinstance(g, (list, tuple)):
        return g[key]
    if not isinstance(g, np.ndarray):
        return NotImplemented
    if len(args) == 3 and isinstance(args[1], np.ndarray):  # tangent_item: x's shape
        shape = args[1].shape[1:] if 1 in batched else args[1].shape
        if g.shape[1:] != shape:
            g = _broadcast_like(None, (g, np.empty(0)), {}, {0}, size, shape=shape)
    return getitem(g, key, {0}, size)


def _broadcast_like(fn, args, kwargs, batched, size, shape=None):
    """``runtime.broadcast_like(d, ans)``: a tangent contribution broadcast to one
    example's result shape."""
    d, ans = args
    if shape is None:
        if kwargs or not hasattr(ans, "shape") and not isinstance(ans, _PY_SCALARS):
            return NotImplemented
        shape = np.shape(ans)[1:] if 1 in batched else np.shape(ans)
    if 0 not in batched:
        d = lift(d, size)
    if is_constant(d) or np.ndim(d) - 1 > len(shape):
        return NotImplemented
    pad = len(shape) - (np.ndim(d) - 1)
    if pad:
        d = np.reshape(d, np.shape(d)[:1] + (1,) * pad + np.shape(d)[1:])
    return np.broadcast_to(d, (size,) + tuple(shape))


def _list_append(fn, args, kwargs, batched, size):
    """``runtime.list_append(xs, v)`` of a batched list: the item lifted if need be."""
    xs, value = args
    if kwargs or 0 not in batched or not isinstance(xs, list):
        return NotImplemented
    return list(xs) + [value if 1 in batched else lift(value, size)]


def _setitem(fn, args, kwargs, batched, size):
    """``runtime.setitem(x, index, v)`` for a batched array and a basic index."""
    x, index, value = args
    if kwargs or 1 in batched or 0 not in batched or not isinstance(x, np.ndarray) \
            or not _basic_index(index) or np.iscomplexobj(value) and not np.iscomplexobj(x):
        return NotImplemented
    items = (slice(None),) + (index if isinstance(index, tuple) else (index,))
    out = x.copy() if x.dtype.kind not in "biu" else x.astype(np.result_type(x, value))
    region = out[items]
    if 2 in batched:
        pad = region.ndim - np.ndim(value)
        if pad < 0:
            return NotImplemented
        value = np.reshape(value, np.shape(value)[:1] + (1,) * pad + np.shape(value)[1:])
    out[items] = value
    return out


def register(fn, rule) -> None:
    """Add a batch rule (``rule(fn, args, kwargs, batched_keys, size)``, returning the
    batched result or NotImplemented) for ``fn``; used by layers above this one."""
    BATCH_RULES[fn] = rule


def _rules() -> dict:
    table = {}
    for name in ("sum", "mean", "prod", "max", "min", "amax", "amin", "std", "var", "any",
                 "all", "nansum", "nanmean", "nanmax", "nanmin"):
        table[getattr(np, name)] = _reduction(accepts_tuple=True)
    for name in ("argmax", "argmin", "cumsum", "cumprod"):
        table[getattr(np, name)] = _reduction(accepts_tuple=False)
    table[np.matmul] = table[operator.matmul] = _matmul
    table[np.dot] = _dot
    table[np.einsum] = _einsum
    table[np.reshape] = _reshape
    table[np.transpose] = _transpose
    table[np.stack] = table[np.concatenate] = _stack
    table[np.where] = _where
    for name in ("zeros_like", "ones_like", "empty_like"):
        table[getattr(np, name)] = _same_shape
    for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
               operator.floordiv, operator.mod, operator.lt, operator.le, operator.gt,
               operator.ge, operator.eq, operator.ne, operator.neg, operator.pos):
        table[op] = _elementwise
    table[runtime.unbroadcast] = _unbroadcast
    table[runtime.grad_seed] = _grad_seed
    table[runtime.densify] = _densify
    table[runtime.add] = _add
    table[runtime.add_at] = _add_at
    table[runtime.list_append] = _list_append
    table[runtime.part] = table[runtime.tangent_item] = _part
    table[runtime.broadcast_like] = _broadcast_like
    table[runtime.element] = _element
    table[runtime.setitem] = _setitem
    return table


BATCH_RULES: dict = _rules()


def really_batched(args, kwargs, batched) -> set:
    """The batched keys whose values are not Python numbers (which never vary)."""
    return {k for k in batched
            if not is_constant(kwargs[k] if isinstance(k, str) else args[k])}


def apply(fn, args, kwargs, batched, size: int):
    """``fn(*args, **kwargs)`` per example, by a batch rule when one applies."""
    batched = really_batched(args, kwargs, batched)
    if not batched:
        return lift(fn(*args, **kwargs), size)
    rule = BATCH_RULES.get(fn)
    if rule is None and isinstance(fn, np.ufunc) and not kwargs:
        rule = _elementwise
    if rule is not None:
        try:
            out = rule(fn, args, kwargs, set(batched), size)
        except (TypeError, ValueError, IndexError):
            # an argument the rule did not expect: the loop computes it (or raises the
            # error the user's code raises for some example)
            out = NotImplemented
        if out is not NotImplemented:
            return out
    return per_example(fn, args, kwargs, set(batched), size)


# array methods and the functions that compute them (the receiver is argument 0)
_METHODS = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
            "std": np.std, "var": np.var, "any": np.any, "all": np.all, "argmax": np.argmax,
            "argmin": np.argmin, "cumsum": np.cumsum, "cumprod": np.cumprod, "dot": np.dot}
_MUTATORS = {"append", "push", "extend", "insert"}


def apply_method(obj, name: str, args, kwargs, batched, size: int):
    """``obj.name(*args, **kwargs)`` per example; ``-1`` in ``batched`` marks ``obj``."""
    batched = {k for k in batched if not is_constant(obj if k == -1 else kwargs[k]
                                                     if isinstance(k, str) else args[k])}
    if not batched:
        return lift(getattr(obj, name)(*args, **kwargs), size)
    if isinstance(obj, (list, Tape)) and name in _MUTATORS and -1 in batched:
        # a batched list: keep every element batched
        args = [a if i in batched else lift(a, size) for i, a in enumerate(args)]
        return getattr(obj, name)(*args, **kwargs)
    if -1 in batched and isinstance(obj, np.ndarray):
        fn = _METHODS.get(name)
        if name in ("ravel", "flatten") and not args and not kwargs:
            return obj.reshape(size, -1)
        if name in ("copy", "astype", "conj", "conjugate") and batched == {-1}:
            return getattr(obj, name)(*args, **kwargs)  # the layout stays as it is
        if name == "transpose" and batched == {-1} and not kwargs:
            axes = args[0] if len(args) == 1 else (args or None)
            return _transpose(np.transpose, (obj, axes), {}, {0}, size)
        if name == "reshape":
            shape = args[0] if len(args) == 1 else args
            return _reshape(np.reshape, (obj, shape), kwargs, {0} | {
                i + 1 for i in batched if i >= 0}, size)
        if fn is not None:
            return apply(fn, (obj,) + tuple(args), kwargs,
                         {0} | {i + 1 if isinstance(i, int) else i for i in batched
                                if i != -1}, size)
    positions = {i + 1 if isinstance(i, int) else i for i in batched}
    return per_example(lambda o, *a, **k: getattr(o, name)(*a, **k), (obj,) + tuple(args),
                       kwargs, positions, size)


def attribute(x, name: str, size: int):
    """``x.name`` of batched ``x``."""
    if isinstance(x, np.ndarray) or (_is_leaf_array(x) and not isinstance(x, _CONTAINERS)):
        if name == "shape":
            return tuple(x.shape[1:])
        if name == "ndim":
            return x.ndim - 1
        if name == "size":
            return x.size // size if size else 0
        if name == "dtype":
            return x.dtype
        if name in ("T", "mT"):
            n = x.ndim - 1
            axes = tuple(range(1, n + 1))[::-1] if name == "T" else \
                tuple(range(1, n - 1)) + (n, n - 1)
            return np.transpose(x, (0,) + axes)
        if name in ("real", "imag"):
            return getattr(x, name)
    return per_example(lambda o: getattr(o, name), (x,), {}, {0}, size)


def getitem(x, index, batched, size: int):
    """``x[index]`` per example (``batched`` holds 0 for ``x``, 1 for ``index``)."""
    batched = really_batched((x, index), {}, batched)
    if not batched:
        return lift(x[index], size)
    if batched == {0}:
        if isinstance(x, (tuple, list, dict)):
            return x[index]  # a batched container: its items are batched
        if isinstance(x, np.ndarray) and (_basic_index(index) or _adjacent_arrays(index)):
            return x[(slice(None),) + (index if isinstance(index, tuple) else (index,))]
    if batched == {1} and isinstance(x, np.ndarray) and _int_array(index):
        return x[index]  # one integer-array index: the batch axis leads the result
    return per_example(operator.getitem, (x, index), {}, batched, size)


def _basic_index(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, np.integer, slice))
               for i in items)


def _adjacent_arrays(index) -> bool:
    """Whether the array (and then integer) items of an index are adjacent: numpy then puts
    their result axes where they stand, also behind a leading batch axis."""
    items = index if isinstance(index, tuple) else (index,)
    kinds = [isinstance(i, np.ndarray) and i.dtype.kind in "iub" for i in items]
    if not any(kinds):
        return False
    advanced = [k for k, (i, a) in enumerate(zip(items, kinds))
                if a or isinstance(i, (int, np.integer))]
    simple = all(a or i is None or i is Ellipsis or isinstance(i, (int, np.integer, slice))
                 for i, a in zip(items, kinds))
    return simple and advanced == list(range(advanced[0], advanced[-1] + 1))


def _int_array(index) -> bool:
    return isinstance(index, np.ndarray) and index.dtype.kind in "iu"


def pack(items, batched, size: int):
    """A tuple, list or dict literal holding batched values: its other items lifted."""
    if isinstance(items, dict):
        return {k: v if i in batched else lift(v, size)
                for i, (k, v) in enumerate(items.items())}
    out = [v if i in batched else lift(v, size) for i, v in enumerate(items)]
    return type(items)(out)


class Unbatchable(Exception):
    """Examples whose values cannot share one batched value (an array in some, None in
    others): the caller runs the function once per example instead."""


def select(cond, a, b, batched, size: int):
    """Per example, ``a`` where the per-example truth value ``cond`` holds, else ``b``
    (``batched`` holds 0 for ``a``, 1 for ``b``): the join of a lowered ``if``."""
    if is_constant(cond):
        return _select(np.full(size, bool(cond)), a, 0 in batched, b, 1 in batched, size)
    if not hasattr(cond, "shape"):  # a list's truth is its length, not its items'
        raise Unbatchable(f"the condition of an 'if' is a {type(cond).__name__}")
    c = cond
    if tuple(c.shape) != (size,):
        if c.size != size:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        c = c.reshape(size)
    return _select(c.astype(bool), a, 0 in batched, b, 1 in batched, size)


def logical_not(x, size: int):
    """``not x`` for each example of batched ``x`` (each must have one truth value)."""
    if is_constant(x):
        return not x
    if np.size(x) != size:
        raise ValueError("The truth value of an array with more than one element is "
                         "ambiguous. Use a.any() or a.all()")
    return np.logical_not(np.reshape(x, (size,)))


def _select(c, a, a_batched: bool, b, b_batched: bool, size: int):
    if a is b and a_batched == b_batched:
        return a
    if is_constant(a) and type(a) is type(b) and a == b:
        return a
    numeric = (np.ndarray, np.generic) + _PY_SCALARS
    if isinstance(a, numeric) and isinstance(b, numeric):
        a = a if a_batched or is_constant(a) else lift(a, size)
        b = b if b_batched or is_constant(b) else lift(b, size)
        shapes = {np.shape(v) if is_constant(v) else np.shape(v)[1:] for v in (a, b)}
        if len(shapes) > 1:  # examples would get values of different shapes
            raise Unbatchable(f"the branches of an 'if' give values of shapes "
                              f"{' and '.join(map(str, sorted(shapes)))}")
        depth = max([np.ndim(v) for v in (a, b)] + [1])
        return np.where(c.reshape((size,) + (1,) * (depth - 1)), a, b)
    if isinstance(a, (tuple, list)) and type(a) is type(b) and len(a) == len(b):
        return type(a)(_select(c, x, a_batched, y, b_batched, size) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return {k: _select(c, a[k], a_batched, b[k], b_batched, size) for k in a}
    if c.all():
        return a if a_batched else lift(a, size)
    if not c.any():
        return b if b_batched else lift(b, size)
    raise Unbatchable(f"the branches of an 'if' leave a {type(a).__name__} in some "
                      f"examples and a {type(b).__name__} in others")


def shape_of(x):
    """``np.shape`` of one example of batched ``x``."""
    return tuple(np.shape(x)[1:])


def len_of(x):
    """``len`` of one example of batched ``x``."""
    if isinstance(x, (tuple, list, dict)):
        return len(x)
    return np.shape(x)[1]
