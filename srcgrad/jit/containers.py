"""Compiled forms of more ``_rt`` helpers: the adjoint of an element store's value
(``last_writes``), item stores into the lists built_lists.py rewrites (their in-place
check ``list_shared_item``, the adjoints ``list_setitem_zeroed``, ``list_last_writes``), and
``list(ws)`` / ``v, *rest = ws`` of lists passed in and tuples (``as_list``, the rule helper
``items_adjoint``, ``add_at`` of a list at a slice).

Imported at the end of runtime.py, whose ``_rt`` namespace re-exports each stub here, so
that the compiled sweeps call them as ``_rt.<name>`` like the others.
"""
from __future__ import annotations

import numpy as np
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload, register_jitable

from numba import types

from .runtime import (SharedDataError, is_built_list, float_dtype, index_kind, is_scalar_type,
                      list_item_kind, may_share, make_stub, unwrap_type, densify, refuse_viewed)

last_writes = make_stub("last_writes")
written_adjoint = make_stub("written_adjoint")
list_shared_item = make_stub("list_shared_item")
list_setitem_zeroed = make_stub("list_setitem_zeroed")
list_last_writes = make_stub("list_last_writes")

display_element = make_stub("display_element")
reshape_c = make_stub("reshape_c")
as_list = make_stub("as_list")
items_adjoint = make_stub("items_adjoint")

SUPPORTED = frozenset({"last_writes", "written_adjoint", "list_shared_item", "list_setitem_zeroed",
                       "list_last_writes", "display_element", "reshape_c", "as_list"})


@register_jitable
def _keep_last(g, index, dtype):
    """``g[index]`` for a 1-d integer array ``index`` with the rows of positions written
    again later zeroed: numpy keeps the last write."""
    n = g.shape[0]
    seen = np.zeros(n, np.bool_)
    last = np.zeros(index.shape[0], np.bool_)
    for k in range(index.shape[0] - 1, -1, -1):
        p = index[k] + n if index[k] < 0 else index[k]
        if p < 0 or p >= n:  # (numpy's IndexError, before any read)
            raise IndexError("index out of bounds")
        last[k] = not seen[p]
        seen[p] = True
    out = g[index].astype(dtype)
    for k in range(index.shape[0]):
        if not last[k]:
            out[k] = 0
    return out


@overload(last_writes)
def _last_writes(g, index):
    """``g[index]``, the adjoint of the values a store ``x[index] = v`` wrote (as
    ``srcgrad.runtime.last_writes``): where an integer array repeats a position only its
    last write gets ``g``; a scalar ``g`` is the lazy zero."""
    g_t = unwrap_type(g)
    if is_scalar_type(g_t):
        return lambda g, index: 0.0
    if isinstance(index, types.Optional) and isinstance(index.type, types.BaseTuple):
        return lambda g, index: last_writes(g, unoptional(index))  # (from a stack)
    kind = index_kind(index)
    if not isinstance(g_t, types.Array) or kind is None:
        raise TypingError(f"srcgrad: compiled gradients of element stores into {g_t} at "
                          f"{index} are not supported")
    if kind == "plain":
        return lambda g, index: g[index]
    dtype = float_dtype(g_t)

    return lambda g, index: _keep_last(g, index, dtype)


@overload(written_adjoint)
def _written_adjoint(g, ans):
    """``g``, or the lazy zero when ``ans`` is an integer or boolean array (as
    ``srcgrad.runtime.written_adjoint``: numpy cast the stored values to its dtype)."""
    ans_t = unwrap_type(ans)
    if isinstance(ans_t, types.Array) and isinstance(ans_t.dtype, (types.Integer, types.Boolean)):
        return lambda g, ans: 0.0
    return lambda g, ans: g


# -- item stores into a built list (``xs[i] = v``, ``xs[i] *= v``, ``xs[i][j] = v``) ------

@overload(list_shared_item)
def _list_shared_item(root, keys, inplace, views, message):
    """``srcgrad.runtime.refuse_shared_item`` before a store into the item ``root[keys[0]]``
    of a list built in the body, which nothing else holds (built_lists.py): the store
    changes the array item in place (``inplace``, or indexed further) only where no other
    item of ``root`` and none of ``views`` (the variables that may be bound, and globals)
    may share its data; a number item, or the item replaced, changes only the list."""
    kind = list_item_kind(root.dtype) if is_built_list(root) else None
    if kind is None or not (isinstance(keys, types.BaseTuple) and len(keys) > 0
                            and isinstance(keys.types[0], types.Integer)):
        raise TypingError(f"srcgrad: compiled in-place updates of items of a {root} at "
                          f"{keys} are not supported")
    if kind == "number":
        return lambda root, keys, inplace, views, message: None
    further = len(keys) > 1

    def check(root, keys, inplace, views, message):
        n = len(root)
        i = keys[0] + n if keys[0] < 0 else keys[0]
        if not (further or inplace) or i < 0 or i >= n:
            return None  # (Python's store raises IndexError itself)
        item = root[i]
        for k in range(n):
            if k != i and may_share(root[k], item):
                raise SharedDataError(message)
        refuse_viewed(item, views, message)
        return None
    return check


@overload(list_setitem_zeroed)
def _list_setitem_zeroed(g, x, index):
    """``setitem_zeroed`` of a list adjoint: a new list, the item at ``index`` zero (of its
    shape); the lazy zero (a number, an empty list) stays zero."""
    if is_scalar_type(g):
        return lambda g, x, index: g
    if not (isinstance(g, types.List) and isinstance(index, types.Integer)):
        raise TypingError(f"srcgrad: compiled gradients of item stores into {g} at {index} "
                          f"are not supported")
    number = is_scalar_type(g.dtype)

    def zeroed(g, x, index):
        if len(g) == 0:
            return g
        out = [item for item in g]  # (a new list: adjoints alias)
        out[index] = 0.0 if number else np.zeros_like(out[index])
        return out
    return zeroed


@overload(list_last_writes)
def _list_last_writes(g, index):
    """``last_writes`` of a list adjoint at an integer: the item's adjoint."""
    if is_scalar_type(g):
        return lambda g, index: 0.0
    if not (isinstance(g, types.List) and isinstance(index, types.Integer)):
        raise TypingError(f"srcgrad: compiled gradients of item stores into {g} at {index} "
                          f"are not supported")
    return lambda g, index: g[index]


# -- loops over tuples --------------------------------------------------------------------

def uniform_tuple(t) -> bool:
    """A tuple of float64 numbers or of float64/int64 arrays of one rank (numba's UniTuple:
    one item type, so no item converted), which a loop indexes at run time."""
    return isinstance(t, types.UniTuple) and list_item_kind(t.dtype) is not None


def _compiled(lines: list, **scope):
    exec("\n".join(lines), scope)
    return scope[lines[0].split()[1].split("(")[0]]


def item_tuple(t) -> bool:
    """A tuple of float64 numbers and float64/int64 arrays (its adjoint: a tuple of their
    adjoints)."""
    return isinstance(t, types.BaseTuple) and len(t) > 0 \
        and all(list_item_kind(item) is not None for item in t.types)


def tuple_zeros(t):
    """The implementation of ``zeros_like`` of an ``item_tuple`` type: a tuple of zeros
    (of each item's shape), as interpreted."""
    items = ", ".join("0.0" if list_item_kind(item) == "number"
                      else f"np.zeros(x[{k}].shape, np.float64)"
                      for k, item in enumerate(t.types))
    return _compiled(["def zeros(x):", f"    return ({items},)"], np=np)


def tuple_add_at(acc, xs, index=None, names=("acc", "xs", "i", "g")):
    """The implementation of ``add_element(acc, xs, i, g)`` (and ``add_at``) for an
    ``item_tuple`` ``xs``: a new tuple of the items' adjoints, ``g`` added at ``i`` (from
    zeros for the lazy zero ``acc``); ``i`` a literal unless ``xs`` is a ``uniform_tuple``
    (numba indexes only those at run time); ``names`` the overload's parameters."""
    acc = unwrap_type(acc)
    n = len(xs)
    if not (is_scalar_type(acc) or isinstance(acc, types.BaseTuple) and len(acc) == n):
        raise TypingError(f"srcgrad: compiled gradients of items of a {xs} (adjoint {acc}) "
                          f"are not supported")
    start = "zeros(xs)" if is_scalar_type(acc) else "acc"
    if isinstance(index, types.IntegerLiteral):
        k = index.literal_value
        if not -n <= k < n:
            raise TypingError(f"srcgrad: tuple index {k} out of range for {xs}")
        k %= n
        items = ", ".join(f"start[{j}] + g" if j == k else f"start[{j}]" for j in range(n))
        check = []
    else:
        items = ", ".join(f"start[{j}] + g if i == {j} else start[{j}]" for j in range(n))
        check = [f"    if i < -{n} or i >= {n}:",
                 "        raise IndexError('tuple index out of range')",
                 f"    i = i + {n} if i < 0 else i"]
    return _compiled([
        f"def add_at({', '.join(names)}):",
        f"    acc, xs, i, g = {', '.join(names)}",
        f"    start = {start}",
        *check,
        f"    return ({items},)"], zeros=register_jitable(tuple_zeros(xs)))


def tuple_densify(g, x):
    """The implementation of ``densify(g, x)`` for an ``item_tuple`` ``x``: zeros of its
    items for the lazy zero, else each item's adjoint densified (a tuple, as interpreted)."""
    if is_scalar_type(g):
        zeros = register_jitable(tuple_zeros(x))
        return lambda g, x: zeros(x)
    if not (isinstance(g, types.BaseTuple) and len(g) == len(x)):
        raise TypingError(f"srcgrad: no compiled gradient of type {g} for an input of type "
                          f"{x}")
    items = ", ".join(f"densify(g[{k}], x[{k}])" for k in range(len(x)))
    return _compiled(["def dense(g, x):", f"    return ({items},)"], densify=densify)


def tuple_add(a):
    """The implementation of ``add(a, b)`` of two tuple adjoints of one length: item by
    item, as interpreted."""
    from .runtime import add
    items = ", ".join(f"add(a[{k}], b[{k}])" for k in range(len(a)))
    return _compiled(["def added(a, b):", f"    return ({items},)"], add=add)


# -- list arguments read by index ---------------------------------------------------------

def argument_list(t) -> bool:
    """A list passed in (numba's reflected list), or a list display whose items are guarded
    by ``list_item`` (built_lists.py, for a loop over it), of float64 numbers, of
    float64/int64 arrays of one rank, or of such tuples: its adjoint is a list of its
    items' adjoints. (Lists built_lists.py rewrites have their own helpers.)"""
    return isinstance(t, types.List) \
        and (list_item_kind(t.dtype) is not None or item_tuple(t.dtype))


def _item_zero(t):
    """A jitted function of one item of type ``t``: its zero adjoint."""
    if item_tuple(t):
        return register_jitable(tuple_zeros(t))
    if list_item_kind(t) == "number":
        return register_jitable(lambda item: 0.0)
    return register_jitable(lambda item: np.zeros(item.shape, np.float64))


def list_zeros(x):
    """The implementation of ``zeros_like`` of an ``argument_list``: one zero per item (the
    interpreted ``zeros_like`` of a list)."""
    zero = _item_zero(x.dtype)
    return lambda x: [zero(item) for item in x]


def _items_of(acc, x, what: str):
    """A jitted ``start(acc, x)``: a new list of the adjoints of the items of an
    ``argument_list`` ``x``, from ``acc`` (zeros for the lazy zero): adjoints alias, so
    never updated in place."""
    zero = _item_zero(x.dtype)
    acc = unwrap_type(acc)
    if not (is_scalar_type(acc) or isinstance(acc, types.List)):
        raise TypingError(f"srcgrad: compiled gradients of {what} of a {x} (adjoint {acc}) "
                          f"are not supported")
    if is_scalar_type(acc):
        return register_jitable(lambda acc, x: [zero(item) for item in x])
    return register_jitable(lambda acc, x: [item for item in acc])


def list_add_at_argument(acc, x, names=("acc", "x", "index", "g")):
    """The implementation of ``add_at(acc, x, index, g)`` (or ``add_element``: its
    parameters ``names``) of an item of an ``argument_list`` ``x``: a new list of the items'
    adjoints, ``g`` added at ``index``."""
    from .runtime import add
    start = _items_of(acc, x, "items")

    def into(acc, x, index, g):
        out = start(acc, x)
        if index < -len(out) or index >= len(out):
            raise IndexError("list index out of range")
        out[index] = add(out[index], g)
        return out
    return _compiled([f"def add_at({', '.join(names)}):",
                      f"    return into({', '.join(names)})"], into=register_jitable(into))


def list_add_at_slice(acc, x):
    """The implementation of ``add_at(acc, x, index, g)`` of the items of an
    ``argument_list`` ``x`` at the slice ``index`` (``v, *rest = ws``): ``g``, a list, added
    item by item from the slice's first position on, as interpreted (``zip``: the shorter
    of the two)."""
    from .runtime import add
    begin = _items_of(acc, x, "slices")

    def into(acc, x, index, g):
        out = begin(acc, x)
        start, stop, step = index.indices(len(x))
        j = 0
        for k in range(start, stop, step):
            if j >= len(g):
                break
            out[k] = add(out[k], g[j])
            j += 1
        return out
    return into


@overload(as_list)
def _as_list(xs):
    """``list(xs)`` of a list passed in (or a slice of it) or a tuple of one item type: a
    new list holding the same items, as Python's."""
    if isinstance(xs, types.Optional):
        return lambda xs: as_list(unoptional(xs))
    if argument_list(xs) or uniform_tuple(xs):
        return lambda xs: [item for item in xs]
    raise TypingError(f"srcgrad: compiled list() of a {xs} is not supported (lists and "
                      f"tuples of float64 numbers or of float64/int64 arrays of one rank)")


@overload(items_adjoint)
def _items_adjoint(xs, g):
    """The rule helper ``items_adjoint``: the adjoint of ``xs`` from ``g``, the list
    adjoint of ``list(xs)``; the lazy zero stays zero; for a list a new list of the items'
    adjoints, for a tuple a tuple (``zip``'s length, as interpreted)."""
    if is_scalar_type(unwrap_type(g)):
        return lambda xs, g: 0.0
    if isinstance(xs, types.Optional):  # (a variable of a loop's stack starts as None)
        return lambda xs, g: items_adjoint(unoptional(xs), g)
    if isinstance(g, types.List) and argument_list(xs):
        return lambda xs, g: [densify(g[k], xs[k]) for k in range(min(len(g), len(xs)))]
    if isinstance(g, types.List) and uniform_tuple(xs):
        n = len(xs)
        items = ", ".join(f"densify(g[{k}], xs[{k}])" for k in range(n))
        return _compiled([
            "def adjoint(xs, g):",
            f"    if len(g) != {n}:",
            "        raise ValueError('srcgrad: a tuple adjoint of another length')",
            f"    return ({items},)"], densify=densify)
    raise TypingError(f"srcgrad: compiled gradients of list() of a {xs} (adjoint {g}) are "
                      f"not supported")


def list_densify(g, x):
    """The implementation of ``densify(g, x)`` of an ``argument_list`` ``x``."""
    if is_scalar_type(g):
        return list_zeros(x)
    if not isinstance(g, types.List):
        raise TypingError(f"srcgrad: no compiled gradient of type {g} for an input of type "
                          f"{x}")

    def dense(g, x):
        if len(g) != len(x):
            raise ValueError("srcgrad: a list's gradient has another length than the list")
        return g
    return dense


@overload(display_element)
def _display_element(xs, i):
    """``element`` of a list display whose items ``list_item`` guards (built_lists.py: numba
    would convert an int among floats to a float): the item itself."""
    if argument_list(xs) and isinstance(i, types.Integer):
        return lambda xs, i: xs[i]
    raise TypingError(f"srcgrad: compiled loops over a {xs} are not supported")


@intrinsic
def unoptional(typingctx, x):
    """The value of an optional ``x`` (a variable the sweeps first bind to None, holding a
    value where it is read); numba raises a TypeError should it be None."""
    if not isinstance(x, types.Optional):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], x, x.type)
        return impl_ret_borrowed(context, builder, x.type, value)  # (a new reference)
    return x.type(x), codegen


@overload(reshape_c)
def _reshape_c(a, shape):
    """``np.reshape(a, shape, order='C')`` (numba's takes no ``order``): the elements in C
    order, of a copy where ``a`` is not C-contiguous."""
    if isinstance(a, types.Array):
        return lambda a, shape: np.ascontiguousarray(a).reshape(shape)
    if is_scalar_type(a):
        return lambda a, shape: np.asarray(a).reshape(shape)
    raise TypingError(f"srcgrad: compiled reshapes of a {a} are not supported")
