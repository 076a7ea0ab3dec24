"""What compiled sweeps call through ``_rt``: numba-compiled versions of srcgrad.runtime's
tape-free helpers and of the rule helpers generated code names (``expand_to``, ...).

Each helper is a plain function with a numba ``overload``: numba picks the implementation
from the argument types when it compiles a sweep, so the scalar/array distinction the
interpreted runtime checks on every call costs nothing here (a float's ``unbroadcast`` is
the identity, compiled away). Called from Python (never the case in compiled sweeps) they
raise. Their implementations are cached on disk (caching.py); those written out with ``exec``
get this module's ``__name__``, which numba's cache needs to pickle the closures that hold
them.
"""
from __future__ import annotations

__all__ = ["SUPPORTED", "RULE_HELPERS"]

import math

import numpy as np
from numba import types
from numba.np import numpy_support
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, register_jitable

from ..errors import SrcgradError, UnsupportedSyntaxError
from .caching import overload


def make_stub(name: str):
    def stub(*args):
        raise RuntimeError(f"srcgrad.jit.runtime.{name} runs only inside compiled sweeps")
    stub.__name__ = stub.__qualname__ = name
    return stub


zeros_like = make_stub("zeros_like")
seed = make_stub("seed")
is_zero = make_stub("is_zero")
unbroadcast = make_stub("unbroadcast")
densify = make_stub("densify")
add = make_stub("add")
expand_to = make_stub("expand_to")
reduced_count = make_stub("reduced_count")
matmul_left = make_stub("matmul_left")
matmul_right = make_stub("matmul_right")
add_at = make_stub("add_at")

SUPPORTED = frozenset({"zeros_like", "seed", "is_zero", "unbroadcast", "densify", "add",
                       "add_at"})
"""``_rt.<name>`` calls a compiled sweep may make."""

RULE_HELPERS = {"expand_to": expand_to, "reduced_count": reduced_count,
                "matmul_left": matmul_left, "matmul_right": matmul_right}
"""Rule helpers (by the name of the original in srcgrad.rules) with a compiled version."""


def is_scalar_type(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean))


def unwrap_type(t):
    return t.type if isinstance(t, types.Optional) else t


def float_dtype(t):
    """The dtype of an adjoint of a value of numba type ``t``."""
    dtype = t.dtype if isinstance(t, types.Array) else t
    if isinstance(dtype, (types.Float, types.Complex)):
        return dtype
    return types.float64


# -- zeros, seeds, lazy zeros ------------------------------------------------------------

@overload(zeros_like)
def _zeros_like(x):
    x = unwrap_type(x)
    if isinstance(x, types.Array):
        dtype = float_dtype(x)
        return lambda x: np.zeros(x.shape, dtype)
    if isinstance(x, types.Complex):
        return lambda x: 0j
    if is_scalar_type(x):
        return lambda x: 0.0
    if _containers.item_tuple(x):
        return _containers.tuple_zeros(x)
    if _containers.argument_list(x):
        return _containers.list_zeros(x)
    raise TypingError(f"srcgrad: no compiled zero adjoint for a value of type {x}")


@overload(seed)
def _seed(value):
    if isinstance(value, types.Optional) and is_scalar_type(value.type):
        return lambda value: 1.0  # (None there is refused when the value is returned)
    if isinstance(value, types.Array):
        dtype = float_dtype(value)
        return lambda value: np.ones(value.shape, dtype)
    if is_scalar_type(value):
        return lambda value: 1.0
    raise TypingError(f"srcgrad: grad needs a scalar result; the function returns {value}")


@overload(is_zero)
def _is_zero(g):
    if is_scalar_type(g):
        return lambda g: g == 0
    if isinstance(g, types.List):  # (the compiled lazy zero of a list: built_lists.py)
        return lambda g: len(g) == 0
    return lambda g: False


@overload(add)
def _add(a, b):
    if isinstance(a, types.List) and isinstance(b, types.List):
        return _add_lists
    if isinstance(a, types.BaseTuple) and isinstance(b, types.BaseTuple) \
            and len(a) == len(b) > 0:
        return _containers.tuple_add(a)
    if isinstance(a, (types.BaseTuple, types.List)) or isinstance(b, (types.BaseTuple,
                                                                       types.List)):
        # (Python's + joins them: the adjoints of their items must be added instead)
        raise TypingError(f"srcgrad: compiled sums of container adjoints ({a}, {b}) are not "
                          f"supported")
    return lambda a, b: a + b


# -- shapes ------------------------------------------------------------------------------

_UNBROADCASTS: dict = {}


def _unbroadcast_array(g_ndim: int, ndim: int):
    """``unbroadcast(g, x)`` of a ``g_ndim``-d array adjoint and an ``ndim``-d operand: ``g``
    itself (C-contiguous) when the shapes are equal, else ``g`` summed down to ``x``'s shape
    under numpy's broadcasting rules, each element of the result the sum, in C order, of
    the elements of ``g`` that broadcast from it. Written out for the ranks, as nested loops
    with constant indices into the shapes, in one function: numba compiles it about twice
    as fast as a loop over flat views (reshape, shapes indexed at run time) in a helper of
    its own, and it is compiled into the first gradient of a process with array sums."""
    key = (g_ndim, ndim)
    if key not in _UNBROADCASTS:
        lead = g_ndim - ndim
        indent = "    " * (g_ndim + 1)
        index = ", ".join(f"0 if shape[{k}] == 1 else i{k + lead}" for k in range(ndim))
        lines = ["def impl(g, x):", "    shape = x.shape"]
        if g_ndim == 0:  # (then x is 0-d too)
            lines += ["    return np.ascontiguousarray(g)"]
        elif lead == 0:
            lines += ["    if g.shape == shape:", "        return np.ascontiguousarray(g)"]
        if g_ndim:
            lines += ["    out = np.zeros(shape, g.dtype)"]
            lines += [f"{'    ' * (d + 1)}for i{d} in range(g.shape[{d}]):"
                      for d in range(g_ndim)]
            lines += [f"{indent}out[{index or '()'}] += "
                      f"g[{', '.join(f'i{d}' for d in range(g_ndim))}]", "    return out"]
        scope = {"np": np, "__name__": __name__}
        exec("\n".join(lines), scope)
        _UNBROADCASTS[key] = scope["impl"]
    return _UNBROADCASTS[key]


@overload(unbroadcast)
def _unbroadcast(g, x):
    x = unwrap_type(x)
    if is_scalar_type(g):
        if isinstance(x, types.Array):
            # (a scalar adjoint meets an array operand only when the result was a scalar
            # computed from a 0-d array)
            return lambda g, x: g
        return lambda g, x: g
    if isinstance(g, types.Array):
        if is_scalar_type(x):
            return lambda g, x: g.sum()
        if isinstance(x, types.Array):
            if g.ndim < x.ndim:
                raise TypingError("srcgrad: an adjoint of lower rank than its operand")

            return _unbroadcast_array(g.ndim, x.ndim)
    raise TypingError(f"srcgrad: cannot unbroadcast an adjoint of type {g} to {x}")


@overload(densify)
def _densify(g, x):
    x = unwrap_type(x)
    if isinstance(g, types.Optional):
        # (a compiled hvp's tangent of a variable bound to None before a loop, popped from
        # its stack: zero_tangent(None) is None, the lazy zero, as interpreted)
        def maybe(g, x):
            if g is None:
                return densify(0.0, x)
            return densify(present(g), x)
        return maybe
    if isinstance(x, types.Array):
        if is_scalar_type(g):
            dtype = float_dtype(x)

            def full(g, x):
                out = np.empty(x.shape, dtype)
                out[...] = g
                return out
            return full
        if isinstance(g, types.Array) and g.ndim == x.ndim:
            def same(g, x):
                if g.shape != x.shape:
                    raise ValueError("srcgrad: a gradient's shape differs from its input's")
                return g
            return same
    if is_scalar_type(x):
        if is_scalar_type(g):
            return lambda g, x: g
        if isinstance(g, types.Array):
            def one(g, x):
                if g.size != 1:
                    raise ValueError("srcgrad: a scalar input got an array gradient")
                return g.reshape(1)[0]
            return one
    if _containers.item_tuple(x):
        return _containers.tuple_densify(g, x)
    if _containers.argument_list(x):
        return _containers.list_densify(g, x)
    raise TypingError(f"srcgrad: no compiled gradient of type {g} for an input of type {x}")


# -- rule helpers ------------------------------------------------------------------------

@overload(expand_to)
def _expand_to(g, x, axis=None, keepdims=False):
    x = unwrap_type(x)
    if is_scalar_type(x):
        return lambda g, x, axis=None, keepdims=False: g
    if not isinstance(x, types.Array):
        raise TypingError(f"srcgrad: expand_to of {x}")
    dtype = float_dtype(g)
    if axis is None or isinstance(axis, (types.NoneType, types.Omitted)):
        if is_scalar_type(g):
            def spread(g, x, axis=None, keepdims=False):
                out = np.empty(x.shape, dtype)
                out[...] = g
                return out
            return spread

        def spread0(g, x, axis=None, keepdims=False):
            out = np.empty(x.shape, dtype)
            out[...] = g.reshape(g.size)[0]
            return out
        return spread0
    if isinstance(axis, types.Integer) and x.ndim == 2 and isinstance(g, types.Array):
        def along(g, x, axis=None, keepdims=False):
            out = np.empty(x.shape, dtype)
            flat = np.ascontiguousarray(g).reshape(g.size)
            a = axis + 2 if axis < 0 else axis
            if a == 0:
                for i in range(x.shape[0]):
                    out[i, :] = flat
            else:
                for j in range(x.shape[1]):
                    out[:, j] = flat
            return out
        return along
    if isinstance(axis, types.Integer) and x.ndim == 1:
        def along1(g, x, axis=None, keepdims=False):
            out = np.empty(x.shape, dtype)
            out[:] = np.asarray(g).reshape(1)[0] if np.asarray(g).size == 1 else g
            return out
        return along1
    raise TypingError(f"srcgrad: compiled gradients of reductions along axis {axis} of "
                      f"{x.ndim}-d arrays are not supported")


@overload(reduced_count)
def _reduced_count(x, ans):
    xs = "x.size" if isinstance(unwrap_type(x), types.Array) else "1"
    ans_s = "ans.size" if isinstance(unwrap_type(ans), types.Array) else "1"
    if xs == "x.size" and ans_s == "ans.size":
        return lambda x, ans: x.size // max(ans.size, 1)
    if xs == "x.size":
        return lambda x, ans: x.size
    return lambda x, ans: 1


def _ndim(t) -> int:
    t = unwrap_type(t)
    return t.ndim if isinstance(t, types.Array) else 0


def _contiguous(t) -> bool:
    """Whether an array of numba type ``t`` (and so its transpose) is C- or Fortran-ordered,
    as numba's ``np.dot`` of 2-d arrays needs (it passes either to BLAS without a copy)."""
    t = unwrap_type(t)
    return isinstance(t, types.Array) and t.layout in ("C", "F")


@overload(matmul_left)
def _matmul_left(g, x, y):
    nx, ny = _ndim(x), _ndim(y)
    if nx == 2 and ny == 2:
        if _contiguous(g) and _contiguous(y):  # (BLAS reads y.T as a transposed y)
            return lambda g, x, y: np.dot(g, y.T)
        return lambda g, x, y: np.dot(np.ascontiguousarray(g), np.ascontiguousarray(y.T))
    if nx == 1 and ny == 2:
        return lambda g, x, y: np.dot(y, np.ascontiguousarray(g))
    if nx == 2 and ny == 1:
        return lambda g, x, y: np.outer(g, y)
    if nx == 1 and ny == 1:
        return lambda g, x, y: g * y
    raise TypingError(f"srcgrad: compiled gradients of '@' on {nx}-d and {ny}-d arrays are "
                      f"not supported")


@overload(matmul_right)
def _matmul_right(g, x, y):
    nx, ny = _ndim(x), _ndim(y)
    if nx == 2 and ny == 2:
        if _contiguous(x) and _contiguous(g):
            return lambda g, x, y: np.dot(x.T, g)
        return lambda g, x, y: np.dot(np.ascontiguousarray(x.T), np.ascontiguousarray(g))
    if nx == 1 and ny == 2:
        return lambda g, x, y: np.outer(x, g)
    if nx == 2 and ny == 1:
        return lambda g, x, y: np.dot(np.ascontiguousarray(x.T), np.ascontiguousarray(g))
    if nx == 1 and ny == 1:
        return lambda g, x, y: g * x
    raise TypingError(f"srcgrad: compiled gradients of '@' on {nx}-d and {ny}-d arrays are "
                      f"not supported")


def index_kind(index) -> str | None:
    """How ``out[index] += g`` must be compiled for an index of numba type ``index``:
    ``"plain"`` (ints, slices, masks: no element is selected twice), ``"gather"`` (an integer
    array: repeated indices must accumulate, as np.add.at does), or None (refused)."""
    index = unwrap_type(index)  # (a variable of a loop's stack starts as None: indices.py's)
    if isinstance(index, (types.Integer, types.SliceType)):
        return "plain"
    if isinstance(index, types.BaseTuple) and all(
            isinstance(t, (types.Integer, types.SliceType, types.NoneType, types.EllipsisType))
            for t in index.types):
        return "plain"
    if isinstance(index, types.Array) and index.ndim == 1:
        if isinstance(index.dtype, types.Boolean):
            return "plain"
        if isinstance(index.dtype, types.Integer):
            return "gather"
    return None


@register_jitable
def _gather_add(out, index, g):
    n = out.shape[0]
    for k in range(index.shape[0]):
        i = index[k]
        if i >= n or i < -n:  # (numpy's IndexError; numba would write past the array)
            raise IndexError("index out of bounds")
        out[i] += g[k]


@overload(add_at)
def _add_at(acc, x, index, g):
    acc_t, x_t = unwrap_type(acc), unwrap_type(x)
    if isinstance(index, types.Optional) and isinstance(index.type, types.BaseTuple):
        unoptional = _containers.unoptional  # (a tuple index from a stack)
        return lambda acc, x, index, g: add_at(acc, x, unoptional(index), g)
    if _containers.item_tuple(x_t) and isinstance(unwrap_type(index), types.Integer):
        if _containers.uniform_tuple(x_t) or isinstance(index, types.IntegerLiteral):
            return _containers.tuple_add_at(acc, x_t, index, ("acc", "x", "index", "g"))
        return None  # (numba types the call again with the index's literal value)
    if _containers.argument_list(x_t) and isinstance(unwrap_type(index), types.Integer):
        return _containers.list_add_at_argument(acc, x_t)
    if _containers.argument_list(x_t) and isinstance(index, types.SliceType) \
            and isinstance(unwrap_type(g), types.List):
        return _containers.list_add_at_slice(acc, x_t)
    kind = index_kind(index)
    if kind is None or not isinstance(x_t, types.Array):
        raise TypingError(f"srcgrad: compiled gradients of indexing {x_t} with {index} are "
                          f"not supported")
    if isinstance(acc_t, types.Array):
        if kind == "gather":
            def gather_into(acc, x, index, g):
                out = acc.copy()  # (adjoints may alias: never update one in place)
                _gather_add(out, index, g)
                return out
            return gather_into

        def into(acc, x, index, g):
            out = acc.copy()
            out[index] += g
            return out
        return into
    if is_scalar_type(acc_t):
        dtype = float_dtype(x_t)
        if kind == "gather":
            def gather_fresh(acc, x, index, g):
                out = np.zeros(x.shape, dtype)
                _gather_add(out, index, g)
                return out
            return gather_fresh

        def fresh(acc, x, index, g):
            out = np.zeros(x.shape, dtype)
            out[index] += g
            return out
        return fresh
    raise TypingError(f"srcgrad: compiled gradients of indexing into {x_t} are not supported")


# -- more rule helpers and loop-over-array helpers ---------------------------------------

pow_base_grad = make_stub("pow_base_grad")
conj_sign = make_stub("conj_sign")
spread_sum = make_stub("spread_sum")
dot_vjp = make_stub("dot_vjp")
element = make_stub("element")
add_element = make_stub("add_element")

SUPPORTED = SUPPORTED | {"element", "add_element"}
RULE_HELPERS.update(pow_base_grad=pow_base_grad, conj_sign=conj_sign, spread_sum=spread_sum,
                    dot_vjp=dot_vjp)


@overload(pow_base_grad)
def _pow_base_grad(x, y):
    """d(x**y)/dx, exactly 0 where y == 0 (as the interpreted rule)."""
    if is_scalar_type(y):
        if is_scalar_type(x):
            return lambda x, y: 0.0 * x if y == 0 else y * x ** (y - 1)

        def array_base(x, y):
            if y == 0:
                return np.zeros(x.shape)
            return y * x ** (y - 1)
        return array_base
    if isinstance(y, types.Array):
        return lambda x, y: y * x ** np.where(y == 0, 1, y - 1)
    raise TypingError(f"srcgrad: no compiled derivative of a power with exponent {y}")


@overload(conj_sign)
def _conj_sign(x):
    t = x.dtype if isinstance(x, types.Array) else x
    if isinstance(t, types.Complex):
        raise TypingError("srcgrad: compiled gradients of abs() of complex values are not "
                          "supported")
    return lambda x: np.sign(x)


@overload(spread_sum)
def _spread_sum(g, iterable):
    if isinstance(iterable, types.Array):
        dtype = float_dtype(g)

        def spread(g, iterable):
            out = np.empty(iterable.shape, dtype)
            out[...] = g
            return out
        return spread
    raise TypingError("srcgrad: compiled gradients of sum() over a list are not supported")


@overload(dot_vjp)
def _dot_vjp(g, ans, a, b, out=None):
    na, nb = _ndim(a), _ndim(b)
    if na in (1, 2) and nb in (1, 2):
        return lambda g, ans, a, b, out=None: (matmul_left(g, a, b), matmul_right(g, a, b))
    if na == 0 or nb == 0:
        return lambda g, ans, a, b, out=None: (g * b, g * a)
    raise TypingError(f"srcgrad: compiled gradients of np.dot on {na}-d and {nb}-d arrays are "
                      f"not supported")


@overload(element)
def _element(xs, i):
    if isinstance(unwrap_type(xs), types.Array):
        return lambda xs, i: xs[i]
    if (_containers.uniform_tuple(xs) or _containers.argument_list(xs) and xs.reflected) \
            and isinstance(i, types.Integer):
        return lambda xs, i: xs[i]  # (the item itself, as interpreted)
    raise TypingError(f"srcgrad: compiled loops over {xs} are not supported (arrays only)")


@overload(add_element)
def _add_element(acc, xs, i, g):
    if _containers.uniform_tuple(unwrap_type(xs)):
        return _containers.tuple_add_at(acc, xs)
    if _containers.argument_list(unwrap_type(xs)):
        return _containers.list_add_at_argument(acc, unwrap_type(xs), ("acc", "xs", "i", "g"))
    return lambda acc, xs, i, g: add_at(acc, xs, i, g)


unindex = make_stub("unindex")
RULE_HELPERS["unindex"] = unindex


@overload(unindex)
def _unindex(g, x, index):
    """``rules._helpers.unindex``: zeros like ``x`` with ``g`` added at ``index`` (forward
    mode's tangent of an indexing adjoint, in a compiled Hessian-vector product)."""
    return lambda g, x, index: add_at(0.0, x, index, g)


zero_tangent = make_stub("zero_tangent")
SUPPORTED = SUPPORTED | {"zero_tangent"}


@overload(zero_tangent)
def _zero_tangent(x):
    """Forward mode's lazy zero tangent of ``x`` (in a compiled Hessian-vector product),
    typed as ``x``'s tangent: float zeros for an array, the number 0.0 for ints and bools,
    None for None (a variable bound later: its tangent then is None too where numba types it
    as maybe None, ``Optional``, as it types the variable; a None read by arithmetic raises
    at run time, it is never a number), and zeros or None for such an ``Optional`` array."""
    if isinstance(x, types.Optional) and isinstance(x.type, types.Array):
        dtype = float_dtype(x.type)

        def maybe(x):
            if x is None:
                return None
            return np.zeros(present(x).shape, dtype)
        return maybe
    if isinstance(x, types.NoneType):
        return lambda x: None
    return _zeros_like(x)


@intrinsic
def present(typingctx, x):
    """``x`` itself, typed as its value when numba types it as maybe None (``Optional``): a
    callee's saved values popped from a stack whose first push was the ``None`` they were
    bound to before a loop, read by its backward sweep's jvp. numba's cast raises
    ``TypeError`` at run time if it is None; its item reads on an ``Optional`` tuple do not
    lower. (Forward mode's code only, compiled Hessian-vector products: second.py.)"""
    value = x.type if isinstance(x, types.Optional) else x

    def codegen(context, builder, signature, args):
        # (a new reference, as numba's functions return: the argument's is borrowed)
        return impl_ret_borrowed(context, builder, value,
                                 context.cast(builder, args[0], x, value))
    return value(x), codegen


SUPPORTED = SUPPORTED | {"present"}


tangent_item = make_stub("tangent_item")
SUPPORTED = SUPPORTED | {"tangent_item"}


@overload(tangent_item)
def _tangent_item(d, x, index):
    """Forward mode's tangent of ``x[index]`` for a tuple ``x`` (a callee's result and its
    saved values, in a compiled Hessian-vector product): ``d[index]``; the zero of the item
    when ``d`` is the lazy zero. For an array, ``d[index]`` when ``d`` has ``x``'s shape
    (as compiled tangents of an hvp have: broadcast_like, zero_tangent), else the item of
    ``d`` broadcast to it, as interpreted. Lists are refused."""
    x = unwrap_type(x)
    if isinstance(x, types.BaseTuple) and isinstance(index, types.IntegerLiteral):
        at = index.literal_value
        if isinstance(d, types.BaseTuple):
            return lambda d, x, index: d[at]
        if is_scalar_type(d):
            return lambda d, x, index: zero_tangent(x[at])
    if isinstance(x, types.Array) and is_scalar_type(d):
        return lambda d, x, index: zero_tangent(x[index])
    if isinstance(x, types.Array) and isinstance(d, types.Array) and d.ndim == x.ndim:
        def item(d, x, index):
            if d.shape != x.shape:
                return np.broadcast_to(d, x.shape)[index]
            return d[index]
        return item
    raise TypingError(f"srcgrad: no compiled tangent of an item of a {x} (tangent {d})")


# -- structured adjoints, element stores and their guards ----------------------------------

part = make_stub("part")
setitem = make_stub("setitem")
refuse_shared_array = make_stub("refuse_shared_array")
refuse_item_update = make_stub("refuse_item_update")

SUPPORTED = SUPPORTED | {"part", "setitem", "refuse_shared_array", "refuse_item_update"}


@overload(part)
def _part(g, key):
    """``g[key]`` of a tuple adjoint (a helper's tuple result); a scalar is the lazy zero."""
    if is_scalar_type(g):
        return lambda g, key: 0.0
    if isinstance(g, types.BaseTuple) and isinstance(key, types.IntegerLiteral):
        index = key.literal_value
        return lambda g, key: g[index]
    if isinstance(g, (types.UniTuple, types.List)) and isinstance(key, types.Integer):
        return lambda g, key: g[key]
    raise TypingError(f"srcgrad: compiled gradients of a {g} in parts are not supported")


@overload(setitem)
def _setitem(x, index, value):
    """A copy of array ``x`` with ``x[index] = value``."""
    if not isinstance(x, types.Array):
        raise TypingError(f"srcgrad: compiled element stores into {x} are not supported "
                          f"(arrays only)")
    value_kind = value.dtype if isinstance(value, types.Array) else value
    if isinstance(x.dtype, types.Integer) and isinstance(value_kind, (types.Float,
                                                                       types.Complex)):
        raise TypingError("srcgrad: compiled stores of a float into an integer array (numpy "
                          "truncates it) are not supported: create the array with a float "
                          "dtype, or store int(v)")

    def store(x, index, value):
        out = x.copy()
        out[index] = value
        return out
    return store


def _literal_text(message) -> str:
    return message.literal_value if isinstance(message, types.StringLiteral) else \
        "an in-place update of an array another name may share"


@overload(refuse_shared_array)
def _refuse_shared_array(value, message):
    """Raises where the interpreted check does: when the update runs on an array (a
    refusal at compile time would refuse branches never taken too)."""
    if isinstance(value, types.Optional) and isinstance(value.type, types.Array):
        def maybe(value, message):
            if value is not None:
                raise SharedDataError(message)
        return maybe
    if isinstance(value, types.Array):
        def refuse(value, message):
            raise SharedDataError(message)
        return refuse
    return lambda value, message: None


@overload(refuse_item_update)
def _refuse_item_update(container, item, message):
    if isinstance(container, (types.List, types.BaseTuple)) and isinstance(item, types.Array):
        raise TypingError(f"srcgrad: {_literal_text(message)}")
    return lambda container, item, message: None


# -- in-place updates of data another variable shares ------------------------------------

refuse_viewed = make_stub("refuse_viewed")
refuse_changing_method = make_stub("refuse_changing_method")
refuse_changing_method_within = make_stub("refuse_changing_method_within")
refuse_operator_object = make_stub("refuse_operator_object")
refuse_overridden = make_stub("refuse_overridden")
SUPPORTED = SUPPORTED | {"refuse_viewed", "refuse_changing_method",
                         "refuse_changing_method_within", "refuse_operator_object",
                         "refuse_overridden"}


@overload(refuse_operator_object)
def _refuse_operator_object(value, message):
    """Nothing: compiled code holds no object of a user's class (srcgrad.runtime.
    refuse_operator_object)."""
    return lambda value, message: None


@overload(refuse_overridden)
def _refuse_overridden(obj, name, method, message):
    """Nothing: compiled code holds no object of a user's class with methods."""
    return lambda obj, name, method, message: None


@overload(refuse_changing_method)
@overload(refuse_changing_method_within)
def _refuse_changing_method(obj, name, message):
    """Nothing: compiled code holds arrays, numbers and lists, none of them an object of a
    user's class whose method srcgrad.runtime.refuse_changing_method (or _within) asks
    about."""
    return lambda obj, name, message: None


class SharedDataError(UnsupportedSyntaxError):
    """What compiled code raises where srcgrad.runtime.refuse_viewed raises, with its
    message."""

    def __init__(self, message: str):
        self.problems = []
        SrcgradError.__init__(self, message)


@register_jitable
def _extent(a):
    """The bytes an array's elements span, ``(low, high)``; empty for an empty array (also
    numba's zeroed stand-in of a variable not bound yet), as numpy's bounds check has it."""
    if a.size == 0:
        return 0, 0
    low = high = a.ctypes.data
    for k in range(a.ndim):
        step = a.strides[k] * (a.shape[k] - 1)
        if step > 0:
            high += step
        else:
            low += step
    return low, high + a.itemsize


@register_jitable
def may_share(a, b) -> bool:
    """``np.may_share_memory(a, b)``: whether the extents overlap."""
    low_a, high_a = _extent(a)
    low_b, high_b = _extent(b)
    return low_a < high_b and low_b < high_a


def _holds_arrays(t) -> bool:
    if isinstance(t, types.Array):
        return True
    if isinstance(t, types.BaseTuple):
        return any(_holds_arrays(item) for item in t.types)
    if isinstance(t, (types.List, types.ListType, types.Set)):
        return _holds_arrays(t.dtype)
    if isinstance(t, types.DictType):
        return _holds_arrays(t.key_type) or _holds_arrays(t.value_type)
    if isinstance(t, types.Optional):
        return _holds_arrays(t.type)
    return False


def _sharing_tests(expr: str, t, depth: int, indent: str) -> list[str]:
    """Lines raising when ``expr`` (of type ``t``), or an item of it ``depth`` levels down,
    may share ``value``'s data: srcgrad.runtime._shares_data, unrolled over the type. An
    optional value (a variable the sweeps first bind to None) is tested when not None."""
    if isinstance(t, types.Optional) and _holds_arrays(t.type):
        inner = _sharing_tests(expr, t.type, depth, indent + "    ")
        return [f"{indent}if {expr} is not None:"] + inner
    if isinstance(t, types.Array):
        return [f"{indent}if may_share({expr}, value):",
                f"{indent}    raise _SharedDataError(message)"]
    if depth == 0 or not _holds_arrays(t):
        return []
    if isinstance(t, types.BaseTuple):
        return [line for k, item in enumerate(t.types)
                for line in _sharing_tests(f"{expr}[{k}]", item, depth - 1, indent)]
    if isinstance(t, (types.List, types.ListType)):
        item = f"_item{depth}"
        inner = _sharing_tests(item, t.dtype, depth - 1, indent + "    ")
        return [f"{indent}for {item} in {expr}:"] + inner if inner else []
    # (a dict or a set of arrays: refused rather than checked differently)
    raise TypingError(f"srcgrad: compiled checks of in-place updates against a {t} are not "
                      f"supported")


@overload(refuse_viewed)
def _refuse_viewed(value, views, message):
    """Raises, as srcgrad.runtime.refuse_viewed does, when ``value`` is an array one of
    ``views`` (or an item of one, three levels down) may share data with."""
    array = value.type if isinstance(value, types.Optional) else value
    if not isinstance(array, types.Array):
        return lambda value, views, message: None
    lines = ["def check(value, views, message):"]
    if array is not value:
        lines += ["    if value is None:", "        return None"]
    for k, t in enumerate(views.types):
        lines += _sharing_tests(f"views[{k}]", t, 3, "    ")
    lines.append("    return None")
    scope = {"may_share": may_share, "_SharedDataError": SharedDataError,
             "__name__": __name__}
    exec("\n".join(lines), scope)
    return scope["check"]


setitem_zeroed = make_stub("setitem_zeroed")
SUPPORTED = SUPPORTED | {"setitem_zeroed"}


@overload(setitem_zeroed)
def _setitem_zeroed(g, x, index):
    """``g`` with the elements at ``index`` zeroed: the adjoint of an overwritten slot. A
    scalar ``g`` is the lazy zero (its adjoint was never written): zero stays zero."""
    if is_scalar_type(g):
        return lambda g, x, index: g
    if isinstance(index, types.Optional) and isinstance(index.type, types.BaseTuple):
        unoptional = _containers.unoptional  # (a tuple index from a stack)
        return lambda g, x, index: setitem_zeroed(g, x, unoptional(index))
    if isinstance(g, types.Array):
        def zeroed(g, x, index):
            out = g.copy()
            out[index] = 0
            return out
        return zeroed
    raise TypingError(f"srcgrad: compiled gradients of element stores into {g} are not "
                      f"supported")


# -- vjp's cotangent, forward mode's tangents ----------------------------------------------

cotangent = make_stub("cotangent")
tangent_like = make_stub("tangent_like")
broadcast_like = make_stub("broadcast_like")
SUPPORTED = SUPPORTED | {"cotangent", "tangent_like", "broadcast_like"}


@overload(cotangent)
def _cotangent(value, g):
    """The seed of a compiled vjp: the cotangent ``g`` (checked against the value's shape
    before the call, and again here for arrays), a float for a scalar output."""
    value = unwrap_type(value)
    if is_scalar_type(value) and is_scalar_type(g):
        if isinstance(g, types.Complex) or isinstance(value, types.Complex):
            raise TypingError("srcgrad: compiled vjps of complex values are not supported")
        return lambda value, g: float(g)
    if isinstance(value, types.Array) and isinstance(g, types.Array) and g.ndim == value.ndim:
        def same(value, g):
            if g.shape != value.shape:
                raise ValueError("srcgrad: the cotangent's shape differs from the output's")
            return np.ascontiguousarray(g)
        return same
    raise TypingError(f"srcgrad: a cotangent of type {g} for an output of type {value}")


@overload(tangent_like)
def _tangent_like(d, x):
    """A tangent passed to a callee: an array smaller than its value broadcast to the
    value's shape (a scalar, the lazy zero, stays one)."""
    x = unwrap_type(x)
    if is_scalar_type(d) or not isinstance(x, types.Array):
        return lambda d, x: d
    if isinstance(d, types.Array) and d.ndim == x.ndim:
        return lambda d, x: broadcast_like(d, x)
    raise TypingError(f"srcgrad: a tangent of type {d} for a value of type {x}")



def _spread_onto(dtype):
    """A compiled ``spread(d, shape)``: ``d`` broadcast to ``shape`` in a new array of
    ``dtype``, as ``out = np.empty(shape, dtype); out[...] = d``. For real dtypes written
    ``d * np.ones(shape, dtype)``, the same numbers (``x * 1.0`` is ``x``, signed zeros, infs
    and NaNs alike): numba's ``out[...] = d`` compiles its shape error's message formatting
    (str and repr of tuples), ~20 s of a compiled hvp's first call under load."""
    if isinstance(dtype, types.Complex):  # ((a + bj) * 1 is not a + bj when b is inf)
        def assigned(d, shape):
            out = np.empty(shape, dtype)
            out[...] = d
            return out
        return register_jitable(assigned)

    def multiplied(d, shape):
        out = d * np.ones(shape, dtype)
        if out.shape != shape:  # (d larger than the value: out[...] = d raises)
            raise ValueError("srcgrad: a tangent that does not broadcast to its value's shape")
        return out
    return register_jitable(multiplied)


@overload(broadcast_like)
def _broadcast_like(d, ans):
    """A tangent contribution ``d`` broadcast to the shape of the result ``ans``."""
    ans = unwrap_type(ans)
    if not isinstance(ans, types.Array):
        if is_scalar_type(d):
            return lambda d, ans: d
        raise TypingError(f"srcgrad: a tangent of type {d} for a scalar result")
    dtype = float_dtype(d)
    spread = _spread_onto(dtype)
    if isinstance(d, types.Array) and d.ndim == ans.ndim:
        def same_rank(d, ans):
            if d.shape == ans.shape:
                return np.ascontiguousarray(d)
            return spread(d, ans.shape)
        return same_rank
    if is_scalar_type(d) or (isinstance(d, types.Array) and d.ndim < ans.ndim):
        return lambda d, ans: spread(d, ans.shape)
    raise TypingError(f"srcgrad: a tangent of type {d} for a result of type {ans}")


# -- constant lists of ints used as indices (indices.py) -----------------------------------

index_array = make_stub("index_array")
SUPPORTED = SUPPORTED | {"index_array"}


@overload(index_array)
def _index_array(values):
    """The int64 array of a tuple of ints: numpy indexes with ``[i, 0, 1]`` as with it,
    numba only with the array. Anything but signed ints (bools: a mask; floats: refused by
    numpy) is refused."""
    if isinstance(values, types.BaseTuple) and all(
            isinstance(t, types.Integer) and t.signed and t.bitwidth <= 64
            for t in values.types):
        return lambda values: np.array(values, np.int64)
    raise TypingError(f"srcgrad: an index list of {values}, not of ints, has no compiled form")


# -- float tapes preallocated from trip counts (sweeps.preallocate) -------------------------

float_tape = make_stub("float_tape")
tape_store = make_stub("tape_store")
SUPPORTED = SUPPORTED | {"float_tape", "tape_store"}


@overload(float_tape)
def _float_tape(n):
    # (n is a trip count, len(range(...)) or a constant, times the pushes per iteration:
    # never negative; a max(n, 0) here was one more function numba compiled)
    return lambda n: np.empty(n, np.float64)


@overload(tape_store)
def _tape_store(tape, pos, value):
    """``tape[pos] = value`` for a float (float64 holds a float32 exactly); anything else is
    refused: storing it would convert it."""
    if isinstance(value, types.Float):
        def store(tape, pos, value):
            tape[pos] = value
        return store
    raise TypingError(f"srcgrad: a float parameter becomes a {value} inside a loop; the "
                      f"compiled scalar gradient keeps such loops' values as floats")


# -- elementwise transcendentals of float64 arrays with SIMD calls (sweeps.simd_math) -----

from .simd import cos, exp, log, sin, tanh  # noqa: F401 (what _rt.tanh(a) names)

SUPPORTED = SUPPORTED | {"cos", "exp", "log", "sin", "tanh"}


# -- reductions along axes: expand_reduced, extremum_weights; maximum's weights -------------

expand_reduced = make_stub("expand_reduced")
extremum_weights = make_stub("extremum_weights")
greater_weight = make_stub("greater_weight")
norm_partials = make_stub("norm_partials")
inverse_axes = make_stub("inverse_axes")
unstack = make_stub("unstack")
vstack_vjp = make_stub("vstack_vjp")
RULE_HELPERS.update(expand_reduced=expand_reduced, extremum_weights=extremum_weights,
                    greater_weight=greater_weight, norm_partials=norm_partials,
                    inverse_axes=inverse_axes, unstack=unstack, vstack_vjp=vstack_vjp)

_KEPT_SHAPES: dict = {}


def _axes_kind(axis) -> int | None:
    """How many axes an ``axis`` argument of numba type ``axis`` names: -1 for None (all),
    1 for an int, k for a tuple of k ints; None when it is something else (refused)."""
    if axis is None or isinstance(axis, (types.NoneType, types.Omitted)):
        return -1
    if isinstance(axis, types.Integer):
        return 1
    if isinstance(axis, types.UniTuple) and isinstance(axis.dtype, types.Integer):
        return axis.count
    return None


def _keepdims(keepdims) -> bool | None:
    """A ``keepdims`` known when the sweep is compiled (omitted, a literal), else None."""
    if isinstance(keepdims, bool):  # (numba passes an omitted argument's default itself)
        return keepdims
    if isinstance(keepdims, types.Omitted):
        return bool(keepdims.value)
    if isinstance(keepdims, types.BooleanLiteral):
        return bool(keepdims.literal_value)
    if isinstance(keepdims, types.IntegerLiteral):
        return bool(keepdims.literal_value)
    return None


def _kept_shape(ndim: int, count: int):
    """A jitable ``kept(shape, axis)``: ``shape`` (of an ``ndim``-d array) with the axes
    ``axis`` names (``count`` of them; -1: all) set to 1, as _helpers.kept_shape, raising
    numpy's AxisError message for an axis out of range."""
    key = (ndim, count)
    if key not in _KEPT_SHAPES:
        lines = ["def kept(shape, axis):"]
        if count == -1:
            lines.append(f"    return ({'1, ' * ndim})")
        else:
            names = [f"a{k}" for k in range(count)]
            given = ["axis"] if count == 1 else [f"axis[{k}]" for k in range(count)]
            for name, expr in zip(names, given):
                lines += [f"    {name} = {expr}",
                          f"    if not -{ndim} <= {name} < {ndim}:",
                          "        raise ValueError('axis out of bounds')",
                          f"    {name} = {name} + {ndim} if {name} < 0 else {name}"]
            dims = [f"1 if ({' or '.join(f'{n} == {d}' for n in names)}) else shape[{d}]"
                    for d in range(ndim)]
            lines.append(f"    return ({''.join(d + ', ' for d in dims)})")
        scope: dict = {"__name__": __name__}
        exec("\n".join(lines), scope)
        _KEPT_SHAPES[key] = register_jitable(scope["kept"])
    return _KEPT_SHAPES[key]


def _reduced_shape_plan(x, axis, keepdims, name: str):
    """``(ndim, count, keep)`` for a compiled reduction helper of ``x``, or a TypingError."""
    x = unwrap_type(x)
    count, keep = _axes_kind(axis), _keepdims(keepdims)
    if not isinstance(x, types.Array) or count is None or keep is None or x.ndim == 0:
        raise TypingError(f"srcgrad: compiled {name} of a {x} along axis {axis} "
                          f"(keepdims {keepdims}) is not supported")
    return x.ndim, count, keep


@overload(expand_reduced)
def _expand_reduced(g, x, axis=None, keepdims=False):
    """``g`` reshaped so it broadcasts against ``x``: the reduced axes put back, size 1."""
    ndim, count, keep = _reduced_shape_plan(x, axis, keepdims, "expand_reduced")
    if keep:
        return lambda g, x, axis=None, keepdims=False: g
    kept = _kept_shape(ndim, count)
    if is_scalar_type(g):
        dtype = g if isinstance(g, (types.Float, types.Complex)) else types.float64

        def filled(g, x, axis=None, keepdims=False):
            out = np.empty(kept(x.shape, axis), dtype)
            out[...] = g
            return out
        return filled
    if isinstance(g, types.Array):
        return lambda g, x, axis=None, keepdims=False: np.ascontiguousarray(g).reshape(
            kept(x.shape, axis))
    raise TypingError(f"srcgrad: compiled expand_reduced of a {g}")


@overload(extremum_weights)
def _extremum_weights(a, ans, axis=None, keepdims=False):
    """Where a max/min of ``a`` is attained, 1/k among k ties: the interpreted helper's
    ``hit / np.sum(hit, axis, keepdims=True)`` in float64, then in ``a``'s weight dtype."""
    ndim, count, keep = _reduced_shape_plan(a, axis, keepdims, "extremum_weights")
    a_dtype = unwrap_type(a).dtype
    dtype = np.result_type(numpy_support.as_dtype(a_dtype), np.float32)
    kept = _kept_shape(ndim, count)

    def weights(a, ans, axis=None, keepdims=False):
        hit = (a == expand_reduced(ans, a, axis, keepdims)).astype(np.float64)
        ties = unbroadcast(hit, np.empty(kept(a.shape, axis), np.float64))
        return (hit / ties).astype(dtype)
    return weights


def _weight_dtype(*ts):
    """_helpers._weight_dtype for numba types: float32 stays float32, a Python float
    (float64 here) makes it float64."""
    dtypes = [numpy_support.as_dtype(t.dtype if isinstance(t, types.Array) else t)
              for t in ts]
    return np.result_type(*dtypes, np.float32)


def _narrower_float_meets_wider_scalar(t, scalar) -> bool:
    """Whether ``t`` (an array or a number) has a float type narrower than ``scalar``'s."""
    dtype = t.dtype if isinstance(t, types.Array) else t
    return isinstance(scalar, types.Float) and isinstance(dtype, types.Float) \
        and dtype.bitwidth < scalar.bitwidth


@overload(greater_weight)
def _greater_weight(x, y):
    """1 where ``x > y``, 1/2 where they tie, else 0 (NaN: 0), in the weight dtype."""
    x_, y_ = unwrap_type(x), unwrap_type(y)
    if not all(isinstance(t, (types.Array, types.Float, types.Integer, types.Boolean))
               for t in (x_, y_)) or any(isinstance(getattr(t, "dtype", t), types.Complex)
                                         for t in (x_, y_)):
        raise TypingError(f"srcgrad: compiled maximum/minimum weights of {x} and {y}")
    if _narrower_float_meets_wider_scalar(x_, y_) or _narrower_float_meets_wider_scalar(y_, x_):
        # numpy compares a float32 with a Python float in float32 (NEP 50), numba in
        # float64, and the two tie differently (float32(0.3) == 0.3 only in numpy); numba
        # cannot tell a Python float from an np.float64, which numpy compares in float64
        raise TypingError(f"srcgrad: compiled maximum/minimum of a {x} and a {y} (numpy "
                          f"compares them in the narrower float type, numba in the wider)")
    dtype = _weight_dtype(x_, y_)
    if is_scalar_type(x_) and is_scalar_type(y_):
        return lambda x, y: 1.0 if x > y else (0.5 if x == y else 0.0)
    # (exactly one of the two terms is nonzero, or neither: the sum is the chosen weight)
    return lambda x, y: ((x > y) * 1.0 + (x == y) * 0.5).astype(dtype)


@overload(norm_partials)
def _norm_partials(x, ans, ord=None, axis=None, keepdims=False):
    """d norm(x)/dx for the default order (2-norm of vectors, Frobenius of matrices): both
    ``x / norm`` with the norm spread back over ``x``'s reduced axes. Other orders are
    refused."""
    if not (ord is None or isinstance(ord, (types.NoneType, types.Omitted))):
        raise TypingError(f"srcgrad: compiled gradients of np.linalg.norm with ord {ord} are "
                          f"not supported (only the default order)")
    _reduced_shape_plan(x, axis, keepdims, "norm_partials")
    return lambda x, ans, ord=None, axis=None, keepdims=False: x / expand_reduced(
        ans, x, axis, keepdims)


_INVERSES: dict = {}


@overload(inverse_axes)
def _inverse_axes(axes, ndim):
    """The permutation undoing ``np.transpose(x, axes)``, a tuple as long as ``axes``
    (None stays None: a reversal undoes itself)."""
    if axes is None or isinstance(axes, (types.NoneType, types.Omitted)):
        return lambda axes, ndim: None
    if not (isinstance(axes, types.UniTuple) and isinstance(axes.dtype, types.Integer)):
        raise TypingError(f"srcgrad: compiled gradients of np.transpose with axes {axes} are "
                          f"not supported (a tuple of ints)")
    n = axes.count
    if n not in _INVERSES:
        # (axes is a permutation, or the forward np.transpose raised: inverse[axes[k]] = k)
        lines = ["def inverse(axes, ndim):", f"    out = np.empty({n}, np.int64)",
                 f"    for k in range({n}):", "        out[axes[k] % ndim] = k",
                 f"    return ({''.join(f'out[{k}], ' for k in range(n))})"]
        scope = {"np": np, "__name__": __name__}
        exec("\n".join(lines), scope)
        _INVERSES[n] = scope["inverse"]
    return _INVERSES[n]


# -- numpy functions numba lacks, called through _rt (sweeps.simd_math rewrites them) -------

ndim = make_stub("ndim")
NUMPY_FUNCTIONS = ("ndim",)
"""numpy functions of one argument a compiled sweep calls as ``_rt.<name>``."""
SUPPORTED = SUPPORTED | set(NUMPY_FUNCTIONS)


@overload(ndim)
def _ndim_overload(x):
    """``np.ndim`` of an array or a number, known when the sweep is compiled."""
    x = unwrap_type(x)
    if isinstance(x, types.Array):
        n = x.ndim
        return lambda x: n
    if is_scalar_type(x):
        return lambda x: 0
    raise TypingError(f"srcgrad: compiled np.ndim of a {x} is not supported")


# -- the adjoints of np.stack and np.vstack: pieces of g, one per item joined ----------------

_CUTS: dict = {}


def _axis_first(ndim: int):
    """A jitable ``first(g, axis)``: ``np.moveaxis(g, axis, 0)`` of an ``ndim``-d ``g``."""
    if ndim not in _CUTS:
        rest = "".join(f"{j - 1} if {j - 1} < a else {j}, " for j in range(1, ndim))
        lines = ["def first(g, axis):", f"    if not -{ndim} <= axis < {ndim}:",
                 "        raise ValueError('axis out of bounds')",
                 f"    a = axis + {ndim} if axis < 0 else axis",
                 f"    return np.transpose(g, (a, {rest}))"]
        scope = {"np": np, "__name__": __name__}
        exec("\n".join(lines), scope)
        _CUTS[ndim] = register_jitable(scope["first"])
    return _CUTS[ndim]


def _array_items(arrays) -> bool:
    """Whether ``arrays`` is a tuple of arrays (numba's np.stack and np.vstack take no
    lists)."""
    return isinstance(arrays, types.BaseTuple) and all(isinstance(t, types.Array)
                                                       for t in arrays.types)


def _pieces(arrays, piece) -> str:
    """A line returning the tuple of ``piece(k, x)`` (the text of an expression of the
    item's position and the item) for each item of the tuple ``arrays``."""
    return "    return (" + "".join(f"{piece(str(k), f'arrays[{k}]')}, "
                                    for k in range(arrays.count)) + ")"


def _row_starts(arrays) -> str:
    """Lines computing ``rows``: where each item's rows start in their ``np.vstack`` (a
    1-d item is one row), and where the last ends."""
    return "\n".join(["    rows = np.zeros(len(arrays) + 1, np.int64)"] + [
        f"    rows[{k + 1}] = rows[{k}] + {f'arrays[{k}].shape[0]' if t.ndim >= 2 else '1'}"
        for k, t in enumerate(arrays.types)])


@overload(unstack)
def _unstack(g, arrays, axis=0):
    """``g`` cut along ``axis`` into one piece per stacked item, a tuple (the items are
    views of ``g``, as numpy's are). Only the items' count is read, from the type: a tuple
    the sweeps first bound to None (optional: pushed on a tape in a loop) is the tuple
    ``np.stack`` joined in the forward sweep."""
    items = unwrap_type(arrays)
    if not (isinstance(g, types.Array) and _array_items(items)):
        raise TypingError(f"srcgrad: compiled gradients of np.stack of a {arrays} are not "
                          f"supported (a tuple of arrays)")
    first = _axis_first(g.ndim)
    lines = ["def cut(g, arrays, axis=0):", "    moved = first(g, axis)",
             _pieces(items, lambda k, x: f"moved[{k}]")]
    scope = {"first": first, "__name__": __name__}
    exec("\n".join(lines), scope)
    return scope["cut"]


@overload(vstack_vjp)
def _vstack_vjp(g, ans, tup, dtype=None, casting="same_kind"):
    """``g`` cut into row blocks, one per item (a 1-d item was one row), each shaped as its
    item: ``(pieces,)``, ``pieces`` a tuple."""
    if not (isinstance(g, types.Array) and g.ndim >= 2 and _array_items(tup)) or \
            min(t.ndim for t in tup.types) < 1:
        raise TypingError(f"srcgrad: compiled gradients of np.vstack of a {tup} are not "
                          f"supported (a tuple of arrays)")

    def piece(k, x):
        return f"np.ascontiguousarray(g[rows[{k}]:rows[{k} + 1]]).reshape({x}.shape)"

    pieces = _pieces(tup, piece)
    lines = ["def cut(g, ans, arrays, dtype=None, casting='same_kind'):", _row_starts(tup),
             pieces.replace("return ", "return (", 1) + ",)"]
    scope = {"np": np, "__name__": __name__}
    exec("\n".join(lines).replace("arrays", "tup"), scope)  # (the parameter's name)
    return scope["cut"]


# -- math functions whose errors numba's lack, called through _rt (sweeps.simd_math) -------

ldexp = make_stub("ldexp")
MATH_FUNCTIONS = ("ldexp",)
"""``math`` functions of two arguments a compiled sweep calls as ``_rt.<name>``."""
SUPPORTED = SUPPORTED | set(MATH_FUNCTIONS)


@overload(ldexp)
def _ldexp_overload(x, i):
    """``math.ldexp(x, i)``, with Python's OverflowError where the result of a finite ``x``
    overflows: numba's gives inf, and the compiled gradient went on with it (inf or nan
    where the interpreted one raises)."""
    def impl(x, i):
        out = math.ldexp(x, i)
        if math.isinf(out) and not math.isinf(x):
            raise OverflowError("math range error")
        return out
    return impl


# -- an int to an int power: Python's result or an error, never numba's int64 one ----------

power = make_stub("power")
SUPPORTED = SUPPORTED | {"power"}

INT_POWER = "srcgrad: an int to an int power"
"""How the message of the OverflowError ``power`` raises begins (srcgrad/jit/__init__.py
turns it into a JitUnsupportedError, so that jit="auto" runs the interpreted code)."""

_INT64_SAFE = 2.0 ** 62  # (a float64 estimate below it: the exact int64 power fits)


@overload(power)
def _power_overload(a, b, line):
    """``a ** b``; for ints ``a`` and ``b`` (also bools) an OverflowError where Python's
    result is no int64: a negative exponent (a float in Python, 0 or 1 in numba) or a
    power beyond int64 (a big int in Python, wrapped around in numba)."""
    a, b = unwrap_type(a), unwrap_type(b)
    integer = (types.Integer, types.Boolean)
    if not (isinstance(a, integer) and isinstance(b, integer)):
        return lambda a, b, line: a ** b
    if not isinstance(line, types.StringLiteral):
        return None  # (numba then types the call again with the literal "file:line")
    where = line.literal_value
    negative = f"{INT_POWER} with a negative exponent (a float in Python, 0 in numba's " \
               f"int64) at {where}"
    beyond = f"{INT_POWER} beyond int64 (numba would wrap around) at {where}"

    def impl(a, b, line):
        if b < 0:
            raise OverflowError(negative)
        if abs(float(a)) ** b >= _INT64_SAFE:
            raise OverflowError(beyond)
        return a ** b
    return impl


# -- reductions along one axis numba lacks: np.max/np.min, np.mean, keepdims= ------------

max_along = make_stub("max_along")
min_along = make_stub("min_along")
mean_along = make_stub("mean_along")
sum_along = make_stub("sum_along")
SUPPORTED = SUPPORTED | {"max_along", "min_along", "mean_along", "sum_along"}

_DROPPED_SHAPES: dict = {}


def _dropped_shape(ndim: int):
    """A jitable ``dropped(shape, a)``: ``shape`` (of an ``ndim``-d array) without axis
    ``a`` (0 <= a < ndim), a tuple written out for the rank."""
    if ndim not in _DROPPED_SHAPES:
        dims = [f"shape[{d}] if {d} < a else shape[{d + 1}]" for d in range(ndim - 1)]
        scope: dict = {"__name__": __name__}
        exec(f"def dropped(shape, a):\n    return ({''.join(d + ', ' for d in dims)})", scope)
        _DROPPED_SHAPES[ndim] = register_jitable(scope["dropped"])
    return _DROPPED_SHAPES[ndim]


@register_jitable
def _three_axes(a, k):
    """``a`` (C-ordered) seen as (before axis ``k``, along it, after it)."""
    before, after = 1, 1
    for d in range(k):
        before *= a.shape[d]
    for d in range(k + 1, a.ndim):
        after *= a.shape[d]
    return np.ascontiguousarray(a).reshape((before, a.shape[k], after))


_SUM, _MEAN, _MAX, _MIN = 0, 1, 2, 3


@register_jitable
def _fold(v, kind):
    """``v`` (3-d) reduced along its middle axis: a sum, a mean, or the max or min (NaN
    propagating, as numpy's), in float64."""
    before, n, after = v.shape
    extremum = kind == _MAX or kind == _MIN
    if extremum and n == 0:
        raise ValueError("zero-size array to reduction operation which has no identity")
    out = np.empty((before, after), np.float64)
    for i in range(before):
        for j in range(after):
            acc = v[i, 0, j] if extremum else 0.0
            for m in range(1 if extremum else 0, n):
                e = v[i, m, j]
                if not extremum:
                    acc += e
                elif np.isnan(acc):
                    break
                elif (not acc >= e) if kind == _MAX else (not acc <= e):
                    acc = e
            out[i, j] = acc / n if kind == _MEAN else acc
    return out


def _along(name: str, kind: int):
    """The overload of ``_rt.<name>(a, axis, keepdims)`` for a float64 array and one int
    axis: ``_fold`` of the array seen as (before, along, after)."""
    def typer(a, axis, keepdims):
        a = unwrap_type(a)
        ndim, count, keep = _reduced_shape_plan(a, axis, keepdims, name)
        if count != 1 or a.dtype != types.float64:
            raise TypingError(f"srcgrad: compiled {name} of a {a} along axis {axis} is "
                              f"not supported (float64 arrays, one axis)")
        kept, dropped = _kept_shape(ndim, 1), _dropped_shape(ndim)
        if keep:
            def kept_dims(a, axis, keepdims):
                shape = kept(a.shape, axis)  # (numpy's error for an axis out of range)
                return _fold(_three_axes(a, axis + ndim if axis < 0 else axis),
                             kind).reshape(shape)
            return kept_dims

        def dropped_dims(a, axis, keepdims):
            kept(a.shape, axis)
            k = axis + ndim if axis < 0 else axis
            return _fold(_three_axes(a, k), kind).reshape(dropped(a.shape, k))
        return dropped_dims
    return typer


overload(max_along)(_along("max_along", _MAX))
overload(min_along)(_along("min_along", _MIN))
overload(mean_along)(_along("mean_along", _MEAN))
overload(sum_along)(_along("sum_along", _SUM))


# -- lists built in the body (built_lists.py) --------------------------------------------
# A list the sweeps build by appending is a numba reflected list of float64 numbers or of
# float64/int64 arrays of one rank; its adjoint is a list of the items' adjoints, and the
# lazy zero of that adjoint is the empty list (a list adjoint of a nonempty list is never
# empty, and an empty list's adjoint is zero either way).

list_item = make_stub("list_item")
list_slice = make_stub("list_slice")
list_sum = make_stub("list_sum")
stack_list = make_stub("stack_list")
list_zero = make_stub("list_zero")
spread_list = make_stub("spread_list")
unstack_list = make_stub("unstack_list")
list_element = make_stub("list_element")
list_add_at = make_stub("list_add_at")
EMPTY_SUM = "srcgrad: sum() of an empty list"
SUPPORTED = SUPPORTED | {"list_item", "list_slice", "list_sum", "stack_list", "list_zero",
                         "spread_list", "unstack_list", "list_element", "list_add_at"}
# (only built_lists.py calls list_zero, spread_list, unstack_list, list_sum and stack_list,
# on the lists it rewrites: a list passed in or made otherwise meets zeros_like, spread_sum
# and unstack, which refuse lists as before)


def is_built_list(t) -> bool:
    """A list made in compiled code (a reflected list is one passed in: refused)."""
    return isinstance(t, types.List) and not t.reflected


def list_item_kind(t) -> str | None:
    """"number" or "array" for the items a compiled list may hold (their arithmetic is
    numpy's in numba: float64 numbers, float64 and int64 arrays), else None."""
    t = unwrap_type(t)
    if isinstance(t, types.Float) and t.bitwidth == 64:
        return "number"
    if isinstance(t, types.Array) and t.dtype in (types.float64, types.int64):
        return "array"
    return None


@overload(list_item)
def _list_item_overload(value):
    """``value``, appended to a compiled list: refused unless ``list_item_kind`` accepts it
    (numba would convert an int among floats to a float, sum ints in wrapping int64, ...)."""
    if list_item_kind(value) is None:
        raise TypingError(f"srcgrad: compiled lists of {value} items are not supported "
                          f"(float64 numbers or float64/int64 arrays)")
    return lambda value: value


@overload(list_zero)
def _zero_list(x):
    """The lazy zero adjoint of the list ``x``: an empty list of its items' adjoints."""
    kind = list_item_kind(x.dtype) if is_built_list(x) else None
    if kind == "number":
        return lambda x: [0.0 for _ in range(0)]
    if kind == "array":
        shape, dtype = (0,) * x.dtype.ndim, float_dtype(x.dtype)
        return lambda x: [np.zeros(shape, dtype) for _ in range(0)]
    raise TypingError(f"srcgrad: no compiled zero adjoint for a {x}")


@register_jitable
def _add_lists(a, b):
    """``add`` of two list adjoints, the empty one being the lazy zero; as interpreted
    (``zip``), the shorter length otherwise."""
    if len(a) == 0:
        return b
    if len(b) == 0:
        return a
    return [add(a[k], b[k]) for k in range(min(len(a), len(b)))]


@overload(spread_list)
def _spread_list(g, iterable):
    """``spread_sum`` to a list: ``g`` unbroadcast to each item."""
    kind = list_item_kind(iterable.dtype) if is_built_list(iterable) else None
    if kind == "number" and isinstance(g, types.Float):
        return lambda g, iterable: [g for _ in range(len(iterable))]
    if kind == "array":
        return lambda g, iterable: [np.ascontiguousarray(unbroadcast(g, item))
                                    for item in iterable]
    raise TypingError(f"srcgrad: compiled gradients of sum() of a {iterable} (cotangent "
                      f"{g}) are not supported")


@overload(list_slice)
def _list_slice(g, start, stop):
    if isinstance(g, types.List):
        return lambda g, start, stop: g[start:stop]
    raise TypingError(f"srcgrad: no compiled slice of a list adjoint {g}")


@overload(list_sum)
def _list_sum(xs, line):
    """Builtin ``sum(xs)``: ``0 + xs[0] + xs[1] + ...`` in that order, as Python adds; an
    empty list (whose sum is the int 0 in Python) raises, naming the user's ``line``."""
    if not (is_built_list(xs) and list_item_kind(xs.dtype)):
        raise TypingError(f"srcgrad: compiled sum() of a {xs} is not supported")
    if not isinstance(line, types.StringLiteral):
        return None  # (numba then types the call again with the literal "file:line")
    empty = f"{EMPTY_SUM} (the int 0 in Python) at {line.literal_value}"

    def total(xs, line):
        if len(xs) == 0:
            raise ValueError(empty)
        acc = 0 + xs[0]
        for k in range(1, len(xs)):
            acc = acc + xs[k]
        return acc
    return total


@overload(stack_list)
def _stack_list(xs):
    """``np.stack(xs)`` along the first axis, numpy's errors for no items and for items of
    different shapes."""
    if not (is_built_list(xs) and list_item_kind(xs.dtype) == "array"):
        raise TypingError(f"srcgrad: compiled np.stack of a {xs} is not supported")

    def stacked(xs):
        if len(xs) == 0:
            raise ValueError("need at least one array to stack")
        first = xs[0]
        out = np.empty((len(xs),) + first.shape, first.dtype)
        for k in range(len(xs)):
            if xs[k].shape != first.shape:
                raise ValueError("all input arrays must have the same shape")
            out[k] = xs[k]
        return out
    return stacked


@overload(unstack_list)
def _unstack_list(g, arrays, axis=0):
    """``unstack`` to a list: one contiguous piece of ``g`` per item."""
    if not (is_built_list(arrays) and isinstance(g, types.Array)
            and list_item_kind(arrays.dtype) == "array"):
        raise TypingError(f"srcgrad: compiled gradients of np.stack of a {arrays} are not "
                          f"supported")
    first = _axis_first(g.ndim)

    def cut_list(g, arrays, axis=0):
        moved = first(g, axis)
        return [np.ascontiguousarray(moved[k]) for k in range(len(arrays))]
    return cut_list


@overload(list_element)
def _list_element(xs, i):
    """``element``: the ``i``-th item a ``for`` loop over the list ``xs`` binds."""
    if is_built_list(xs) and list_item_kind(xs.dtype) and isinstance(i, types.Integer):
        return lambda xs, i: xs[i]
    raise TypingError(f"srcgrad: compiled loops over a {xs} are not supported")


@overload(list_add_at)
def _list_add_at(acc, xs, index, g):
    """``add_at``/``add_element`` of the item ``xs[index]``: ``g`` added to that item's
    adjoint in ``acc`` (a list of one adjoint per item; the lazy zero ``0.0`` or the empty
    list). Items no read reached get zero adjoints of their shapes (the interpreted lazy
    ``0.0``: the same sums, and ``part`` of them the same numbers)."""
    kind = list_item_kind(xs.dtype) if is_built_list(xs) else None
    acc_t = unwrap_type(acc)
    if kind is None or not isinstance(index, types.Integer) or not (
            is_scalar_type(acc_t) or isinstance(acc_t, types.List)):
        raise TypingError(f"srcgrad: compiled gradients of items of a {xs} (index {index}, "
                          f"adjoint {acc}) are not supported")
    if kind == "number":
        def zeros(xs):
            return [0.0 for _ in range(len(xs))]
    else:
        dtype = float_dtype(xs.dtype)

        def zeros(xs):
            return [np.zeros(item.shape, dtype) for item in xs]
    zeros = register_jitable(zeros)

    if is_scalar_type(acc_t):
        def fresh(acc, xs, index, g):
            return _add_item(zeros(xs), index, g)
        return fresh

    def into(acc, xs, index, g):
        if len(acc) == 0:
            return _add_item(zeros(xs), index, g)
        return _add_item([item for item in acc], index, g)  # (a new list: adjoints alias)
    return into


@register_jitable
def _add_item(out, index, g):
    if index < -len(out) or index >= len(out):
        raise IndexError("list index out of range")
    out[index] = add(out[index], g)
    return out


# (more helpers, in their own module: the adjoint of an element store's value, ...)
from . import containers as _containers  # noqa: E402
from .containers import (display_element, last_writes, list_last_writes,  # noqa: E402,F401
                         list_setitem_zeroed, list_shared_item, reshape_c, as_list,
                         written_adjoint)

SUPPORTED = SUPPORTED | _containers.SUPPORTED
RULE_HELPERS["items_adjoint"] = _containers.items_adjoint


cast_to = make_stub("cast_to")
RULE_HELPERS["cast_to"] = cast_to


def _cast_kind(dtype_t):
    """The numba type a ``dtype`` argument names (np.float64, int, np.dtype(...)), or None."""
    if isinstance(dtype_t, types.NumberClass):
        return dtype_t.instance_type
    if isinstance(dtype_t, types.DType):
        return dtype_t.dtype
    if isinstance(dtype_t, types.Function) and dtype_t.typing_key in (int, float, bool, complex):
        return {int: types.int64, float: types.float64, bool: types.boolean,
                complex: types.complex128}[dtype_t.typing_key]
    return None


@overload(cast_to)
def _cast_to(g, dtype=None):
    """As srcgrad.rules._helpers.cast_to: ``g``, or zero for an integer or boolean dtype."""
    if dtype is None or isinstance(dtype, (types.NoneType, types.Omitted)):
        return lambda g, dtype=None: g
    kind = _cast_kind(dtype)
    if isinstance(kind, (types.Float, types.Complex)):
        return lambda g, dtype=None: g
    if isinstance(kind, (types.Integer, types.Boolean)):
        return lambda g, dtype=None: g * 0.0
    raise TypingError(f"srcgrad: compiled gradients of a computation in dtype {dtype} are not "
                      f"supported")
