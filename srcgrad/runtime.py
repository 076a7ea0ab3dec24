"""Runtime support called by generated code (through the alias ``_rt``) and by the rules.

Everything generated code needs at run time lives here: the tape (a per-call stack), shape
helpers (unbroadcast), and accumulation of adjoints that may be lazily zero or structured
(lists, tuples, dicts of arrays).
"""
from __future__ import annotations

__all__ = [
    "Tape",
    "spread_total", "spread_scalar", "is_spread_scalar",
    "unbroadcast",
    "broadcast_like",
    "refuse_shared_slot",
    "refuse_replaced_slot",
    "add",
    "add_at",
    "zeros_like",
    "densify",
    "add_into",
    "subtract_into",
    "times_unit",
    "seed_scalar",
    "shaped_like",
    "negated_product", "twice_negated_product",
    "Probe",
    "probe",
    "computed",
    "probed_result",
    "scaled_repeatedly",
    "ZERO",
    "is_zero",
    "part",
    "add_attr",
    "with_attr", "with_attr_object", "attrs_without", "attr_only", "refuse_shared_object",
    "refuse_shared_path",
    "refuse_differentiable_change",
    "setitem",
    "list_append",
    "list_extend",
    "list_insert",
    "list_delete",
    "dict_update",
    "ZeroTape",
    "ZERO_TAPE",
    "tangent_tape",
    "tangent_item",
    "tangent_attr",
    "call_jvp",
    "method_jvp",
    "call_fwd_jvp",
    "method_fwd_jvp",
    "call_bwd_jvp",
    "adjoint_push",
    "adjoint_pop",
    "grad_seed",
    "makes_seed",
    "copy_saved",
    "index_concat",
    "refuse_foreign_array",
    "index_slice",
    "is_foreign_array",
    "size_of",
]

import collections.abc
import copy
import dataclasses
import inspect
import math
import operator as _operator
import struct
import sys
import threading
import types
from typing import Any, NamedTuple

import numpy as np

from .errors import (InternalError, MissingRuleError, NonDifferentiableError,
                     UnsupportedFeatureError,
                     UnsupportedSyntaxError)
from .vspace import REGISTERED, space_of


_ndarray = np.ndarray
_generic = np.generic
_float64 = np.float64
_add_reduce = np.add.reduce
add_reduce = _add_reduce
"""``np.add.reduce``: what ``ndarray.sum`` calls, without its Python wrapper (~0.3-0.5 us);
the sum over the first axis transforms/rank_facts.py writes for a proven ``unbroadcast``."""
_np_add = np.add
_np_subtract = np.subtract
_getrefcount = sys.getrefcount
# References to an adjoint array owned by one generated frame while add_at runs: the
# frame's variable, add_at's parameter, and getrefcount's own argument.
_OWNED_REFS = 3


class Tape(list):
    """A push/pop stack of values the backward sweep needs.

    Each call of a generated forward function makes its own tape, so nested calls, recursion
    and threads never share entries, and an exception simply drops the tape with its frame.
    ``push``/``pop`` are the list's own C methods: no Python call overhead.
    """

    __slots__ = ()
    push = list.append


ZERO = 0.0
"""The lazy zero adjoint: neutral for ``+`` with any array, materialized only when needed."""


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x`` (undoing numpy broadcasting)."""
    if type(g) is _ndarray and type(x) is _ndarray:
        gshape, shape = g.shape, x.shape
        if gshape == shape:
            return g  # the commonest case, once per operand of each step: attribute reads only
        if gshape[1:] == shape and len(gshape) == len(shape) + 1 and shape:
            return _add_reduce(g, axis=0)  # a bias added to a batch: what the path below
            # computes, without its bookkeeping (~0.5 us, a third of a 16x64 reduction)
    if type(g) is not _ndarray:
        # A scalar adjoint belongs to a scalar result, whose operands were scalars too.
        # (This is the hot path of scalar code: one type check.)
        if type(g) is float or isinstance(g, _generic):
            return g
        if isinstance(g, (list, tuple, dict)):
            # a container's adjoint (a tuple stored into a list) is never broadcast; one of
            # another length belongs to a list that '+' joined or '*' repeated
            if isinstance(x, (list, tuple)) and len(g) != len(x):
                refuse_sequence_arithmetic(x)
            if type(g) is dict and not isinstance(x, (list, tuple, dict)) \
                    and any(hasattr(type(x), op) for op in _ADDING):
                refuse_object_arithmetic(x)
            return g
        refuse_foreign_array(g)
    # getattr is several times cheaper than np.shape on scalars: this runs once per operand
    shape = getattr(x, "shape", None)
    if shape is None:  # (a Python number's, without np.shape's two calls: every scalar r)
        shape = () if type(x) is float or type(x) is int else np.shape(x)
    gshape = getattr(g, "shape", None)
    if gshape is None:
        gshape = np.shape(g)
    if gshape == shape:
        return g
    # np.add.reduce, not np.sum, on ndarrays: np.sum's Python wrapper costs about as much as
    # the reduction of a small array (foreign arrays keep np.sum's dispatch)
    reduce = _add_reduce if type(g) is _ndarray else np.sum
    extra = len(gshape) - len(shape)
    if extra:
        g = reduce(g, axis=tuple(range(extra)))
        gshape = gshape[extra:]
        if gshape == shape and shape:
            return g  # (a bias added to a batch: only leading axes were broadcast)
    # (a number's: no axes left, without the generator's call)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and gshape[i] != 1) if shape else ()
    if axes:
        g = reduce(g, axis=axes, keepdims=True)
    if not shape and isinstance(g, np.ndarray):
        # A Python scalar argument gets a 0-d array back: keep numpy scalars as such.
        return g[()]
    return g


def broadcast_like(d, ans):
    """Broadcast a tangent contribution ``d`` to the shape of the result ``ans``."""
    # attribute reads are several times cheaper than np.shape: the scalar fast path
    shape = getattr(ans, "shape", None)
    if shape is None:
        if type(d) is float or isinstance(d, _generic):
            return d  # a scalar result's contributions are scalars
        if isinstance(ans, (list, tuple, dict)) or isinstance(d, (list, tuple, dict)):
            # a container's tangent or adjoint (of a tuple stored into a list slot: what
            # unbroadcast passed through at first order) is never broadcast; np.shape of a
            # tuple of arrays of different shapes raises. (``ans`` may be a lazy zero number
            # standing for a zero container: a list's adjoint that was zero at first order.)
            return d
        if type(ans) is float and ans == 0.0 and type(d) is _ndarray and d.ndim:
            # a lazy zero number standing for an array adjoint (a list adjoint's zero item,
            # last_writes of it, passed through unbroadcast at first order): d has the
            # array's shape (a genuine number's cotangent is a number)
            return d
        shape = () if type(ans) is float else np.shape(ans)
    if type(d) is not _ndarray and type(d) is not float and not isinstance(d, _generic):
        refuse_foreign_array(d)  # (a number is not: the contribution of a sum, at higher order)
    dshape = getattr(d, "shape", None)
    if dshape is None:
        dshape = np.shape(d)
    if dshape == shape:
        return d
    if not dshape:
        spread = spread_number(d, shape)
        if spread is not None:
            return spread
    return np.broadcast_to(d, shape)


_FLOAT64 = np.dtype(np.float64)
_pack_float = struct.Struct("d").pack
_SPREAD_KINDS = frozenset("biufc")


def spread_number(d, shape):
    """``np.broadcast_to(d, shape)`` for a number ``d`` of a numeric dtype (Python float,
    numpy scalar, 0-d array), built directly (np.broadcast_to costs ~5 us): the same
    read-only zero-stride array, over the bytes of a scalar's one element (immutable, as the
    scalar is) or, like numpy's broadcast, a view of a 0-d array's element, which sees later
    writes to it. None for other values."""
    kind = type(d)
    if kind is float:
        return _ndarray(shape, _FLOAT64, _pack_float(d), 0, (0,) * len(shape))
    if kind is _ndarray:
        if d.ndim or d.dtype.kind not in _SPREAD_KINDS:
            return None
        out = _ndarray(shape, d.dtype, d, 0, (0,) * len(shape))
        out.flags.writeable = False
        return out
    if isinstance(d, _generic) and d.dtype.kind in _SPREAD_KINDS:
        return _ndarray(shape, d.dtype, d.tobytes(), 0, (0,) * len(shape))
    return None


_SPREAD_FILLED = 16  # elements: smaller spreads are new arrays, filled with g


def unit_total(x, sign: float):
    """The sum of ``sign`` (1.0 or -1.0) spread over every element of the float64 array
    ``x``: ``sign`` times its element count, the float64 number numpy's sum of ones gives
    (exact below 2**53 elements). transforms/number_shapes.py writes it for the sum of a
    seed spread over the data."""
    return _float64(sign * x.size + 0.0)  # (+ 0.0: an empty array's sum is 0.0, not -0.0)


def is_spread_scalar(g) -> bool:
    """A number or a 0-d array (of no object dtype): what ``spread_scalar`` spreads (a 0-d
    array too: grad seeds a numpy scalar result with one)."""
    return type(g) is float or isinstance(g, _generic) or (
        type(g) is _ndarray and g.ndim == 0 and not g.dtype.hasobject)


def spread_total(g, x):
    """The cotangent ``g`` of a whole-array reduction of ``x`` (``np.sum(x)``) spread over
    every element of ``x`` (rules' ``expand_to(g, x)`` without an axis)."""
    shape = x.shape if type(x) is _ndarray else np.shape(x)  # (np.shape costs a view)
    if is_spread_scalar(g):
        return spread_scalar(g, shape)
    return np.broadcast_to(np.reshape(g, (1,) * len(shape)), shape)


def spread_scalar(g, shape):
    """``np.broadcast_to(g, shape)`` for a number or a 0-d array ``g``: the same read-only
    zero-stride view (of ``g``'s own element when it is an array), built directly
    (np.broadcast_to costs ~5 us; every ``np.sum``/``np.mean`` of a whole array spreads its
    cotangent this way once per backward sweep). Up to ``_SPREAD_FILLED`` elements, a new
    array of those values instead: a view takes its buffer through the buffer protocol,
    whose bookkeeping numpy keeps on ``g`` as long as ``g`` lives (~0.3 kB, more than the
    elements) and which costs more time than filling them."""
    if math.prod(shape) <= _SPREAD_FILLED:
        value = g if type(g) is np.ndarray else np.asarray(g)
        out = np.empty(shape, value.dtype)
        out.fill(value)
        return out
    out = spread_number(g, shape)
    return np.broadcast_to(g, shape) if out is None else out  # (a dtype no number has)


def refuse_sequence_arithmetic(x) -> None:
    """Raise for the adjoint of ``a + b`` or ``a * n`` on a list or tuple of differentiable
    values that srcgrad could not tell from an array (a parameter, a call's result): the
    operator's rule treats it as numbers added or multiplied, a wrong gradient."""
    kind = type(x).__name__
    raise UnsupportedSyntaxError.from_message(
        f"'+' joining or '*' repeating a {kind} that holds differentiable values is not "
        f"supported where srcgrad cannot tell the {kind} from an array (a parameter, a "
        f"call's result): the gradient would be wrong. Join with [*a, *b] (or "
        f"list(a) + list(b)); repeat with a comprehension.")


_ADDING = ("__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__")


def refuse_object_arithmetic(x) -> None:
    """Raise for the adjoint of ``a + b`` on an object of a class of the user's: the operator
    ran the class's ``__add__``, whatever it computes, which the rule of ``+`` on numbers does
    not follow (the object's adjoint went through it unchanged: a silently wrong gradient
    before session 33)."""
    kind = type(x).__name__
    raise UnsupportedSyntaxError.from_message(
        f"an arithmetic operator on a {kind} (its own __add__, __sub__, ...) with "
        f"differentiable values is not supported: srcgrad differentiates the operator as on "
        f"numbers, not the method. Call a method doing the same instead (a.add(b)).")


_ARITHMETIC_METHODS = frozenset({
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__",
    "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__",
    "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__",
    "__rmatmul__", "__neg__", "__pos__"})


def refuse_operator_object(value, message: str) -> None:
    """Before ``u.w`` where ``u`` is an arithmetic operator's result
    (transforms/operator_objects.py): raise when it is an object of a class of the user's
    defining arithmetic of its own, which ran instead of the operator srcgrad
    differentiates."""
    cls = type(value)
    if cls is _ndarray or cls is float or cls is _float64 or isinstance(value, (
            np.ndarray, np.generic, int, float, complex, list, tuple)):
        return
    if any(_ARITHMETIC_METHODS.intersection(vars(c)) for c in cls.__mro__
           if c is not object and c.__module__ != "builtins"):
        raise UnsupportedSyntaxError.from_message(message)


def refuse_foreign_array(value) -> None:
    """Raise when a derivative became an array type whose operators differ from an
    ndarray's (np.matrix: '*' is a product; masked arrays drop entries; pandas aligns by
    label): an operand of that type met a differentiable value, and the rules, written for
    arrays, would compute a wrong derivative."""
    if space_of(value) is not None:  # (vspace hook) a registered class's object
        refuse_vspace_operator(value)
    if isinstance(value, np.matrix):
        kind = "an np.matrix"
    elif isinstance(value, np.ma.MaskedArray):
        kind = "a masked array"
    elif type(value).__module__.startswith("pandas"):
        kind = f"a pandas {type(value).__name__}"
    else:
        return
    raise UnsupportedFeatureError(
        f"a differentiable value met {kind}, whose operations differ from an array's, so its "
        f"derivative would be wrong. Convert that operand with np.asarray(...) (pandas: "
        f".to_numpy()) before it meets the differentiated input.")


def zeros_like(x):
    """A zero adjoint with the structure of ``x`` (arrays, numbers, lists, tuples, dicts)."""
    if isinstance(x, np.ndarray):
        return np.zeros_like(x, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    if isinstance(x, (float, int, complex, np.number, bool)):
        return 0.0
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[zeros_like(v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(zeros_like(v) for v in x)
    if is_foreign_array(x):  # (np.zeros_like dispatches to the array's library)
        return np.zeros_like(x, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    if hasattr(x, "__array__"):
        return np.zeros_like(np.asarray(x), dtype=np.float64)
    if isinstance(x, _FUNCTION_TYPES):  # a function value carries no gradient of its own
        return None
    space = space_of(x)  # (vspace hook) a registered class: its own zero
    if space is not None:
        return space.zeros(x)
    if _is_object(x):
        return _densify_object({}, x)
    return None


# function values carry no gradient of their own (a Bound's bound values do)
_FUNCTION_TYPES = (types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                   types.BuiltinMethodType, types.MethodWrapperType, np.ufunc)


def is_zero(g) -> bool:
    """Whether ``g`` is the lazy zero (``0.0`` written by generated code, or None)."""
    return g is None or (type(g) is float and g == 0.0)


class NotDifferentiated:
    """The cotangent of an operand a rule does not differentiate but which holds floats, in
    a call resolved at run time (``np.interp(*args)``, ``f(**kw)``, a function value): a
    value that raises NonDifferentiableError where the backward sweep uses it, which it does
    only when the operand depends on the differentiated input (a constant's cotangent is
    never read). (Such a gradient was dropped, silently, before session 34.)"""

    __slots__ = ("message",)
    __array_ufunc__ = None  # (numpy's operators hand over to the reflected ones below)

    def __init__(self, message: str):
        self.message = message

    def _refuse(self, *args, **kwargs):
        raise NonDifferentiableError(self.message)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _refuse
    __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __rpow__ = __neg__ = _refuse
    __getitem__ = __iter__ = __len__ = __float__ = __bool__ = __array__ = _refuse

    def __repr__(self):
        return f"NotDifferentiated({self.message!r})"


def densify(g, x):
    """Turn a lazy zero adjoint into real zeros shaped like ``x``; other values pass."""
    if type(g) is _ndarray and type(x) is _ndarray and g.shape == x.shape and \
            g.dtype.kind in "fiu" and x.dtype.kind != "O":
        return g  # the common case, once per input and per saved array at higher order
    if type(g) is float and type(x) is float:  # scalars: what the checks below return
        return g or ZERO
    if type(g) is _float64 and (type(x) is float or type(x) is _float64):
        return g
    if isinstance(x, (type, _FUNCTION_TYPES)):  # a class (the cls of a classmethod) or a
        if type(x) is types.MethodType and not is_zero(g):  # function value carries no
            return densify(g, x.__self__)  # gradient; a bound method's is its receiver's
        return None
    if isinstance(g, Tape):  # a tape's adjoint (higher derivatives): a tape of adjoints
        return g
    if is_zero(g):
        return zeros_like(x)
    if type(g) is NotDifferentiated:  # an input reached a rule's non-differentiable operand
        g._refuse()
    if isinstance(x, (list, tuple, dict)):
        if isinstance(x, (list, tuple)) and isinstance(g, (list, tuple)) and len(g) != len(x):
            refuse_sequence_arithmetic(x)  # (x * 2 of a list: its adjoint g * 2 repeats g)
        return _densify_struct(g, x)
    if (isinstance(g, (list, tuple, dict)) or _is_object(g)) and is_zero(x):
        # the cotangent of a lazy-zero accumulator (higher derivatives) that became a
        # container: it keeps the container's structure (a dict: the adjoint of a list of
        # dicts' item, 'for layer in layers', was taken for an object's attributes; an
        # object, a list of callable objects' item: vars() of the zero raised)
        return g
    if REGISTERED and (type(g) in REGISTERED or type(x) in REGISTERED):  # (vspace hook)
        return vspace_densify(g, x)
    if isinstance(g, dict) and not isinstance(x, dict):
        return _densify_object(g, x)
    if _is_object(g):
        return _densify_object(vars(g), x)
    if type(g) is _ndarray and g.dtype.kind == "O" and not (
            type(x) is _ndarray and x.dtype.kind == "O"):
        # numpy made an object array: an operand of the derivative was an object whose own
        # operators computed each element; the rules assume numbers and arrays
        raise UnsupportedFeatureError(
            "a derivative became an array of Python objects: a differentiable value met an "
            "object with its own operators (or an object array), whose derivative srcgrad "
            "cannot know. Compute with the arrays such objects hold.")
    if isinstance(x, np.ndarray) and np.shape(g) != x.shape:
        g = np.broadcast_to(g, x.shape).copy()
    elif is_foreign_array(x) and np.shape(g) != x.shape:
        g = np.broadcast_to(g, x.shape)
    if type(g) is not float and np.iscomplexobj(g) and not np.iscomplexobj(x):
        # a real input's gradient is the real part of its cotangent (rules/numpy_complex.py)
        return np.real(g)
    return g


def densify_saved(g, x):
    """``densify`` for the cotangent of an input of a backward sweep differentiated again
    (its saved tuple, its seed): a tuple's items that are zero stay the lazy zero instead of
    becoming arrays of zeros, which the generated code reading them (``part``, ``is_zero``)
    would then compute with. Another value is densified as such. A namedtuple's cotangent
    (a call record's, call_records.py) is a plain tuple like the records' own."""
    if not isinstance(x, tuple):
        return densify(g, x)
    return _densify_items(g, x)


def _densify_items(g, x):
    if is_zero(g):
        return ZERO
    if not (isinstance(x, tuple) and isinstance(g, (tuple, list))):
        return densify(g, x)
    # (most items of a saved tuple's cotangent are zero, and most others a number's: tested
    # here, not by a call each; what densify returns for them)
    out = []
    for gi, xi in zip(g, x):
        kind = type(gi)
        if gi is None or (kind is float and gi == 0.0):
            out.append(ZERO)
        elif kind is _float64 and (type(xi) is float or type(xi) is _float64):
            out.append(gi)
        elif kind is tuple or kind is list:
            out.append(_densify_items(gi, xi))
        else:
            out.append(densify(gi, xi))
    return tuple(out)


_THREAD = threading.local()  # .densifying: ids of objects being densified (a cycle), per thread


def _densify_object(g: dict, x):
    """Gradient of an object's attributes: an object of the same class holding them. An
    attribute without an adjoint that could carry one gets zeros of its structure: a copy of
    the primal list or object there was read as its cotangent (``m.make()`` reading ``m.W``
    gave ``m.xs``'s values as their own gradient). Integers, strings and the like stay."""
    densifying = getattr(_THREAD, "densifying", None)
    if densifying is None:
        densifying = _THREAD.densifying = set()
    if id(x) in densifying:  # reached again through its own attributes: no new gradient
        return ZERO
    densifying.add(id(x))
    try:
        out = copy.copy(x)
        for name, value in vars(x).items():
            if name in g:
                object.__setattr__(out, name, densify(g[name], value))
            elif isinstance(value, (float, np.ndarray, np.floating)) or (
                    isinstance(value, (list, tuple, dict)) or _is_object(value)) \
                    and may_carry_gradient(value):
                object.__setattr__(out, name, zeros_like(value))
        return out
    finally:
        densifying.discard(id(x))


def _densify_struct(g, x):
    if isinstance(x, dict):
        return {k: densify(g.get(k, ZERO) if isinstance(g, dict) else ZERO, v)
                for k, v in x.items()}
    items = [densify(gi, xi) for gi, xi in zip(g, x)]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*items)
    return type(x)(items)


def add_into(a, b):
    """``a + b``, computed into ``a``'s own buffer when that gives the same array (``a`` a
    writable ndarray, ``b`` an ndarray of its shape and dtype): the backward sweep's in-place
    accumulation (transforms/inplace.py), which calls it only for an ``a`` the sweep made and
    nothing else refers to. Anything else gets ``a + b`` itself."""
    if type(a) is _ndarray and type(b) is _ndarray and a.shape == b.shape \
            and a.dtype == b.dtype and a.ndim and a.flags.writeable:
        return _np_add(a, b, out=a)
    return a + b


def subtract_into(a, b):
    """``a - b`` as ``add_into`` computes ``a + b``."""
    if type(a) is _ndarray and type(b) is _ndarray and a.shape == b.shape \
            and a.dtype == b.dtype and a.ndim and a.flags.writeable:
        return _np_subtract(a, b, out=a)
    return a - b


_NUMBERS = (float, int, complex)


def negated_product(product, a, b):
    """``a * -b`` given ``product``, the value of ``a * b``: ``-product`` (the same to the last
    bit: rounding is symmetric in sign) when all are numpy arrays or numbers, ``b`` and the
    product real floating ones (negating an integer may wrap around; a complex product's
    zeros may change sign) and ``a`` real; else ``a * -b``.
    transforms/remat.py calls it where the backward sweep computed ``product`` already."""
    if _sign_symmetric(product, a, b):
        return -product
    return a * -b


def twice_negated_product(product, a, b):
    """``a * -b - product`` given ``product``, the value of ``a * b``: ``product * -2`` in one
    pass where ``negated_product`` gives ``-product`` (``-p - p`` is ``-(2p)`` to the last bit:
    doubling is exact), else computed as written. transforms/remat.py calls it for the
    adjoint of ``-v * v``: a negation's read followed by the negation's own contribution."""
    if _sign_symmetric(product, a, b):
        return product * -2.0
    return a * -b - product


def _sign_symmetric(product, a, b) -> bool:
    """Whether ``a * -b`` is ``-product`` to the last bit (see ``negated_product``)."""
    kinds = []
    for v in (product, a, b):
        if type(v) is _ndarray or isinstance(v, _generic):
            kinds.append(v.dtype.kind)
        elif type(v) in _NUMBERS:
            kinds.append("f" if type(v) is float else "c" if type(v) is complex else "i")
        else:
            return False
    return kinds[0] == "f" and kinds[2] == "f" and kinds[1] in "biuf"


def times_unit(one, y):
    """``one * y`` for ``one`` an array of ones or the number one (a ``grad`` seed, or its
    spread over an array): ``y`` itself when that is the same array to the last bit (a real
    floating ndarray the product neither broadcasts nor casts). The result may then be ``y``:
    transforms/unit_seed.py uses it only where it is read as an operand of arithmetic."""
    if type(y) is _ndarray and y.dtype.kind == "f" and (
            type(one) is float or type(one) is _ndarray and one.dtype == y.dtype
            and (one.shape == y.shape or not one.ndim)):
        return y
    return one * y


_SEED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_OPERAND_KINDS = frozenset("biu")  # (and the float dtypes above)
_EXACT_INT = 2 ** 53  # Python ints below this in size convert to float64 exactly, never raise


def seed_scalar(g, x, *operands):
    """The cotangent of a whole-array ``np.sum(x)`` (``expand_to(g, x)``, ``g`` spread over
    ``x``) kept as the number ``g`` when every consumer multiplies, divides or negates it
    elementwise and puts the shape back with ``shaped_like`` (transforms/scalar_seed.py):
    ``g`` as a 0-d value of the spread's dtype, when it is a float32/float64 0-d array or
    numpy number (or a Python float, made a 0-d float64 array like its spread), ``x`` an
    exact ndarray and each of ``operands`` (the consumers' other operands) an exact ndarray
    or numpy number of a bool, integer, float32 or float64 dtype, or a Python number. Each
    element of the consumers' results is then computed by the same operations on the same
    numbers of the same dtypes (NEP 50: a 0-d array or numpy number promotes as the spread
    array does), so the same bits. Otherwise the spread, as ``expand_to`` gives it."""
    kind = type(g)
    if kind is float:
        scalar = np.array(g)
    elif (kind is _ndarray and not g.ndim or isinstance(g, _generic)) \
            and g.dtype in _SEED_DTYPES:
        scalar = g
    else:
        scalar = None
    if scalar is not None and type(x) is _ndarray and all(map(promotes_plainly, operands)):
        return scalar
    return spread_total(g, x)


def promotes_plainly(a) -> bool:
    """Whether ``a`` is an operand that meets a float32 or float64 array (of any shape, 0-d
    included) as numpy promotes that dtype (NEP 50), whatever the array's shape and values:
    a Python float, a Python int or bool converting to float64 exactly (under 2**53 in size:
    never raises), or an exact ndarray or numpy number of a bool, integer, float32 or float64
    dtype (no complex, float16, longdouble or object). What ``seed_scalar`` requires of the
    operands a number meets in place of its spread, and ``stand_in_of`` of the numbers a
    float64 array meets in an operation it does not compute."""
    t = type(a)
    if t is float:
        return True
    if t is int or t is bool:
        return -_EXACT_INT < a < _EXACT_INT
    if t is _ndarray or isinstance(a, _generic):
        return a.dtype.kind in _OPERAND_KINDS or a.dtype in _SEED_DTYPES
    return False


def shaped_like(r, x):
    """``r``, an elementwise result computed from ``seed_scalar``'s number, with the shape
    it has when computed from the spread over ``x``: the broadcast of both shapes (``r``
    itself when it has that shape, else a new array of its values). Other values (computed
    from the spread, where ``seed_scalar`` gave it) are returned as they are."""
    shape = x.shape if type(x) is _ndarray else np.shape(x)
    if type(r) is _ndarray or isinstance(r, _generic):
        own = r.shape
        if own == shape:
            return r
        full = np.broadcast_shapes(own, shape)
        if full != own:
            return np.broadcast_to(r, full).copy()
    return r


def add(a, b):
    """``a + b`` for adjoints, where either may be the lazy zero or a container."""
    if type(a) is _ndarray and type(b) is _ndarray:  # the hot case, checked first
        return a + b
    if a is None or (type(a) is float and a == 0.0):  # (is_zero, without a call: hot too)
        return b
    if b is None or (type(b) is float and b == 0.0):
        return a
    if REGISTERED and (type(a) in REGISTERED or type(b) in REGISTERED):  # (vspace hook)
        return vspace_add(a, b)
    if isinstance(a, dict) or isinstance(b, dict) or _is_object(a):
        a, b = _attr_dict(a), _attr_dict(b)
        out = dict(a)
        for k, v in b.items():
            out[k] = add(out.get(k, ZERO), v)
        return out
    if isinstance(a, Tape) or isinstance(b, Tape):
        return _add_tapes(a, b)
    if isinstance(a, (list, tuple)):
        items = [add(x, y) for x, y in zip(a, b)]
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*items)
        return type(a)(items)
    return a + b


def _add_tapes(a, b):
    """The sum of two adjoints of one tape that two sweeps popped (a saved tape shared at
    higher order). Each holds the adjoints of the entries its sweep popped, the top of the
    tape last, and a sweep may stop before the bottom: they line up from the top."""
    if len(a) < len(b):
        a, b = b, a
    out = Tape(a[:len(a) - len(b)])
    out.extend(add(x, y) for x, y in zip(a[len(a) - len(b):], b))
    return out


def add_at(acc, x, index, g, _owned_refs=_OWNED_REFS):
    """Adjoint of ``y = x[index]``: add ``g`` into ``acc`` (the adjoint of ``x``) at ``index``.

    Repeated fancy indices accumulate (``np.add.at``). Containers get container adjoints.
    """
    if type(x) is tuple and type(index) is int:
        # an item of a tuple (of a sweep's saved tuple, at higher order): what the general
        # case below does, without its checks
        items = _sequence_adjoint(acc, x)
        items[index] = add(items[index], g)
        return tuple(items)
    if isinstance(x, np.ndarray) and type(g) is not _ndarray and not isinstance(
            g, (float, _generic)) and (is_foreign_array(g) or is_foreign_array(acc)) \
            and _is_simple_index(index):
        return _add_at_functional(acc, x, index, g)  # a dask cotangent: keep it lazy
    if isinstance(x, np.ndarray):
        if is_zero(acc):
            acc = np.zeros(x.shape, dtype=np.result_type(x.dtype, np.float32)
                           if x.dtype.kind in "fc" else np.float64)
        elif not (type(acc) is _ndarray and acc.base is None and acc.flags.writeable
                  and _getrefcount(acc) <= _owned_refs and acc.shape == x.shape):
            # someone else may hold this array (an aliased adjoint, a user's array):
            # accumulate into a copy. Otherwise adding in place keeps a loop over the rows
            # of x linear instead of quadratic.
            acc = np.array(acc, copy=True)
        if x.dtype.kind != "c" and np.iscomplexobj(g):
            g = np.real(g)  # a real input's gradient is the real part of its cotangent
        if _is_simple_index(index):
            acc[index] += g
        else:
            np.add.at(acc, index, g)
        return acc
    if isinstance(x, dict):
        acc = dict(acc) if isinstance(acc, dict) else {}
        acc[index] = add(acc.get(index, ZERO), g)
        return acc
    if isinstance(x, (list, tuple)):
        items = _sequence_adjoint(acc, x)
        if isinstance(index, (np.integer,)):
            index = int(index)
        if isinstance(index, slice):
            # a lazy-zero g (the adjoint of a slice no one read) adds nothing
            for i, gi in zip(range(*index.indices(len(x))), [] if is_zero(g) else g):
                items[i] = add(items[i], gi)
        else:
            items[index] = add(items[index], g)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*items)
        return type(x)(items)
    if np.ndim(x) == 0 and isinstance(x, (float, np.floating)):
        raise TypeError("cannot index into a scalar")
    _refuse_own_getitem(x)
    if is_foreign_array(x) and _is_simple_index(index):
        return _add_at_functional(acc, x, index, g)
    return add_at(acc, np.asarray(x), index, g)  # (array indices need np.add.at: computes)


def _sequence_adjoint(acc, x) -> list:
    """The adjoint ``acc`` of a list or tuple ``x`` as a list of per-item adjoints. It may
    be an array already: arithmetic reads a list of numbers as one (``x * W``, W a list),
    and its rule's adjoint, an array of W's shape, must be kept (it used to be replaced by
    zeros, a silent wrong gradient)."""
    if isinstance(acc, (list, tuple)):
        return list(acc)
    if is_zero(acc):
        return [ZERO] * len(x)
    if np.ndim(acc) >= 1 and np.shape(acc)[0] == len(x):
        return list(acc)
    raise InternalError(f"the adjoint of a {type(x).__name__} of {len(x)} items is a "
                        f"{type(acc).__name__} of shape {np.shape(acc)}")


def _add_at_functional(acc, x, index, g):
    """``add_at`` for a simple index without writing in place (dask arrays stay lazy)."""
    dtype = x.dtype if x.dtype.kind in "fc" else np.float64
    # scattered into an array of g's library (x may be numpy, g a dask array)
    out = np.zeros_like(g if is_foreign_array(g) else x, shape=np.shape(x), dtype=dtype)
    out[index] = g
    return out if is_zero(acc) else acc + out


def _refuse_own_getitem(x) -> None:
    """Raise for an indexed object whose own ``__getitem__`` computes the item (a user
    class, pandas): what the item depends on is not visible to srcgrad."""
    refuse_foreign_array(x)
    if not hasattr(x, "__array__") and not isinstance(x, (_generic, dict)):
        raise UnsupportedFeatureError(
            f"indexing a {type(x).__name__} (its own __getitem__) in differentiated code: "
            f"srcgrad cannot tell which of its values the result depends on. Index an array, "
            f"list, tuple or dict instead, or call a method of it (def at(self, i): ...).")


def _is_simple_index(index) -> bool:
    """Integers and slices (no arrays or lists) never repeat an element."""
    if isinstance(index, tuple):
        return all(_is_simple_index(i) for i in index)
    return index is None or index is Ellipsis or isinstance(index, (int, np.integer, slice))


def _is_object(x) -> bool:
    """A user object (its adjoint is a dict of attribute adjoints)."""
    return hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, type)) \
        and not is_foreign_array(x)


def may_carry_gradient(x, depth: int = 6) -> bool:
    """Whether ``x`` can hold a differentiable value: a float or complex number or array, or a
    container or object holding one. Integers, strings, slices, functions, a RandomState are
    constants wherever they are passed."""
    if type(x) is types.MethodType and type(x.__func__) is types.FunctionType:
        # a Python method bound to an object: its derivative is its receiver's
        return may_carry_gradient(x.__self__, depth)
    if isinstance(x, (bool, np.bool_, int, np.integer, str, bytes, slice, range, type(None),
                      type)) or isinstance(x, _FUNCTION_TYPES):
        return False
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return True
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is not None and (isinstance(x, np.ndarray) or is_foreign_array(x)):
        return kind in "fcO"
    if depth == 0:
        return True  # deep structures: assume the worst
    if space_of(x) is not None:  # (vspace hook) a registered class's object, even an empty one
        return True
    if isinstance(x, dict):
        return any(may_carry_gradient(v, depth - 1) for v in x.values())
    if isinstance(x, (list, tuple)):  # (a Bound too: the values it carries)
        return any(may_carry_gradient(v, depth - 1) for v in x)
    if _is_object(x):
        return any(may_carry_gradient(v, depth - 1) for v in vars(x).values())
    return hasattr(x, "__array__")


def size_of(x) -> int:
    """``np.size(x)``, reading an array's own ``size`` (np.size computes a dask array)."""
    size = getattr(x, "size", None)
    return size if isinstance(size, (int, np.integer)) else np.size(x)


def unit_cotangent(value, k: int):
    """The ``k``-th unit cotangent of ``value`` (flat index): its Jacobian's row ``k``."""
    if not isinstance(value, np.ndarray):
        return 1.0
    seed = np.zeros(value.size, dtype=value.dtype if value.dtype.kind in "fc" else float)
    seed[k] = 1.0
    return seed.reshape(value.shape)


def jacobian_shape(value, x) -> tuple:
    """``value.shape + x.shape``: the shape of the Jacobian of ``value`` with respect to x."""
    return np.shape(value) + np.shape(x)


# libraries whose arrays implement numpy's protocols for numpy's own functions only (lazy
# or on a device): srcgrad never converts their arrays, nor dispatches its helpers to them
ARRAY_LIBRARIES = frozenset({"dask", "cupy", "xarray", "sparse"})


def is_foreign_array(x) -> bool:
    """An array of another library speaking numpy's protocols (dask, cupy...): numpy
    functions dispatch to its own, so generated code runs on it unchanged, but
    ``np.asarray``, ``np.array`` and writes in place would compute (or copy) it."""
    t = type(x)
    return t is not _ndarray and hasattr(t, "__array_function__") and \
        (t.__module__ or "").partition(".")[0] in ARRAY_LIBRARIES


def _attr_dict(x):
    return dict(vars(x)) if _is_object(x) else x


def part(g, key):
    """``g[key]`` of a structured adjoint, the lazy zero staying zero. A ``None`` item is
    zero too: at high order a saved slot that no adjoint reads holds ``None``, and the
    cotangent of that slot is ``None`` as well."""
    if g is None or (type(g) is float and g == 0.0):  # (is_zero, without a call)
        return ZERO
    item = g.get(key, ZERO) if isinstance(g, dict) else g[key]
    return ZERO if item is None else item


_NOT_FOUND = object()


def refuse_computed_attribute(obj, name: str) -> None:
    """Raise for ``obj.name`` that the object's class computes (a property, or its
    ``__getattr__`` for a name neither the object nor its class holds): the derivative of
    that code is not srcgrad's to see. In forward mode the tangent object's own attribute was
    read instead (for a property, a silently wrong jvp; for __getattr__, both modes)."""
    if isinstance(obj, tuple) or name in getattr(obj, "__dict__", {}):
        return
    found = inspect.getattr_static(type(obj), name, _NOT_FOUND)
    if isinstance(found, property):
        raise UnsupportedFeatureError(
            f"reading the property '{name}' of a {type(obj).__name__} in differentiated "
            f"code: its gradient cannot reach the attributes it reads. Call a method "
            f"computing it instead (def {name}(self): ...).")
    if found is _NOT_FOUND and hasattr(obj, "__dict__") \
            and inspect.getattr_static(type(obj), "__getattr__", None) is not None:
        raise UnsupportedFeatureError(
            f"reading the attribute '{name}' of a {type(obj).__name__}, which its class's "
            f"__getattr__ computes, in differentiated code: its gradient cannot reach the "
            f"attributes it reads. Call a method computing it instead "
            f"(def {name}(self): ...).")


def add_attr(acc, obj, name: str, g):
    """Adjoint of ``y = obj.name``: attribute adjoints are kept in a dict until densified."""
    if is_zero(g):
        return acc
    if isinstance(obj, (_ndarray, _generic)) or type(obj).__module__.startswith("pandas"):
        raise MissingRuleError(f"{type(obj).__name__}.{name}")
    if space_of(obj) is not None:  # (vspace hook)
        refuse_vspace_attribute(obj, name)
    refuse_computed_attribute(obj, name)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple: by position
        return add_at(acc, obj, obj._fields.index(name), g)
    if is_receiver_method(obj, name):  # a bound method's adjoint is its receiver's
        return add(acc, g)
    # (an accumulator that is an object of the class, a helper's densified cotangent of its
    # parameter: its other attributes' cotangents were dropped, a silently wrong gradient)
    out = dict(acc) if isinstance(acc, dict) else dict(vars(acc)) \
        if not is_zero(acc) and _is_object(acc) else {}
    out[name] = add(out.get(name, ZERO), g)
    return out


# -- functional updates: what ``x[i] = v`` and list methods become on varied values ---------
def setitem(x, index, value):
    """A copy of ``x`` with ``x[index] = value`` (arrays, lists, dicts)."""
    if is_foreign_array(x):
        out = x.copy()  # (dask: a lazy copy, written lazily below)
    elif isinstance(x, np.ndarray):
        # numpy's store casts the value to x's dtype: an integer or boolean array truncates a
        # float, whose derivative is then zero; the rule, which reads neither x nor the
        # result (a loop storing into a list saves no copy of it), cannot tell: refused
        # (before: the array became a float array, value and gradient wrong)
        if x.dtype.kind in "biu" and np.asarray(value).dtype.kind in "fc":
            raise UnsupportedFeatureError(
                f"storing a float into an element of an array of {x.dtype} (numpy truncates "
                f"it, so it has no derivative) in differentiated code. Create the array "
                f"with a float dtype, or store int(v) (or np.round(v)) if truncation is "
                f"meant.")
        out = np.array(x, copy=True)
    elif isinstance(x, (dict, list)):
        out = _shallow_copy(x)
        if isinstance(x, list) and isinstance(index, slice):
            value = list(value)
            _refuse_resizing_slice_store(x, index, value)
    else:
        raise TypeError(f"cannot assign into an element of {type(x).__name__}")
    out[index] = value
    return out


def _refuse_resizing_slice_store(x: list, index: slice, value: list) -> None:
    """Raise for ``x[a:b] = value`` whose value has another length than the slice: the list
    grows or shrinks, its items after the slice move, and the adjoint (the list's after the
    store) no longer lines up with the list's before it."""
    replaced = len(range(*index.indices(len(x))))
    if index.step in (None, 1) and len(value) != replaced:
        raise UnsupportedFeatureError(
            f"a slice store into a list that changes its length ({replaced} items replaced "
            f"by {len(value)}) in differentiated code. Build the new list instead: "
            f"v = v[:a] + [...] + v[b:].")


def scatter_add(x, index, values):
    """A copy of the array ``x`` after ``np.add.at(x, index, values)``: repeated indices add
    every value they index (what ``np.add.at(a, i, v)`` becomes on differentiable values,
    followed by ``a[...] = ``, so the change in place is kept for whoever holds ``a``)."""
    out = np.array(x, copy=True)
    np.add.at(out, index, values)
    return out


def _shallow_copy(xs):
    """A new list or dict holding ``xs``'s items, of ``xs``'s own class: a defaultdict keeps
    its default, an OrderedDict or Counter its kind (stores into it run its own methods)."""
    if isinstance(xs, dict):
        return dict(xs) if type(xs) is dict else copy.copy(xs)
    if not isinstance(xs, list):  # a deque, an array.array...: not a list after the copy
        raise UnsupportedFeatureError(
            f"changing a {type(xs).__name__} holding differentiable values (srcgrad follows "
            f"lists and dicts): build a list instead")
    return copy.copy(xs) if type(xs) is not list else list(xs)


def plain_call(fn, handed: tuple, back: tuple, *args, **kwargs):
    """``fn(*args, **kwargs)`` run as plain Python on copies of the arguments bound to its
    parameters ``handed`` (which it changes in place; the originals, or the arrays they
    hold, may be saved for a backward sweep), and, when ``back`` names some, those copies
    after its result: a call site handing arguments over or taking them back (desugar)
    whose call carries no gradient."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    for name in handed:
        bound.arguments[name] = _fresh_copy(bound.arguments[name])
    value = fn(*bound.args, **bound.kwargs)
    return (value,) + tuple(bound.arguments[n] for n in back) if back else value


def _fresh_copy(value):
    """``value`` with every list, dict, tuple and array in it copied (other objects
    shared)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if type(value) in (list, tuple):
        return type(value)(_fresh_copy(v) for v in value)
    if type(value) is dict:
        return {k: _fresh_copy(v) for k, v in value.items()}
    return value


def list_append(xs, value):
    out = _shallow_copy(xs)
    out.append(value)
    return out


def list_extend(xs, values):
    out = _shallow_copy(xs)
    out.extend(values)
    return out


def list_insert(xs, index, value):
    out = _shallow_copy(xs)
    out.insert(index, value)
    return out


def list_reverse(xs):
    """``xs.reverse()`` as a new list (of xs's own class) holding xs's items in reverse
    order; on anything else than a list, xs's own ``reverse`` (an array has none: Python's
    AttributeError)."""
    out = _shallow_copy(xs) if isinstance(xs, list) else xs
    out.reverse()
    return out


def list_delete(xs, index, missing_ok=False):
    """A copy of the list or dict ``xs`` without its item ``index`` (what ``xs.pop(index)``
    leaves; ``missing_ok``: a dict without that key is copied as it is, as ``d.pop(k,
    default)`` leaves it)."""
    out = _shallow_copy(xs)
    if not (missing_ok and isinstance(out, dict) and index not in out):
        del out[index]
    return out


def dict_update(d, other):
    out = _shallow_copy(d)
    out.update(other)
    return out


def setitem_zeroed(g, x, index):
    """``g`` with the elements at ``index`` set to zero (adjoint of an overwritten slot).
    ``x``, the container written into, is not read (callers may pass None)."""
    if is_zero(g):
        return ZERO
    if isinstance(g, np.ndarray) or is_foreign_array(g):
        out = g.copy()
        out[index] = 0
        return out
    if isinstance(g, (_generic, float, int, complex)):  # of a 0-d array (a[...] = v)
        out = np.array(g)
        out[index] = 0
        return out
    if isinstance(g, dict):
        out = dict(g)
        out.pop(index, None)
        return out
    if _is_recording_array(g):
        keep = np.ones(np.shape(g))
        keep[index] = 0
        return g * keep
    out = list(g)
    if isinstance(index, slice):  # (a slice store x[a:b] = v, which kept x's length)
        out[index] = [ZERO] * len(range(*index.indices(len(out))))
    else:
        out[index] = ZERO
    return out


def list_slice(g, start: int, stop: int):
    """``g[start:stop]`` of a list adjoint, the lazy zero staying zero."""
    if is_zero(g):
        return ZERO
    return list(g[start:stop])


# -- calls whose target is known only at run time ------------------------------------------
# Generated code calls these through _rt like every helper; running them builds the callee's
# adjoint, which is the API layer's work: srcgrad.dispatch does it and installs itself here
# with connect_dispatch() when srcgrad is imported (the runtime imports nothing above it).
_dispatch = None


def connect_dispatch(module) -> None:
    """Install ``module`` (srcgrad.dispatch) as what the run-time call helpers run."""
    global _dispatch
    _dispatch = module


def call_fwd(fn, *args, **kwargs):
    """Forward sweep of a call to a function value (argument, local def, lambda): returns
    ``(value, record)``; ``call_bwd(record, g)`` gives ``(positional, keyword)`` gradients."""
    return _dispatch.call_fwd(fn, *args, **kwargs)


def dict_get(d, key, default=None):
    return d.get(key, default)


def dict_values(d):
    return list(d.values())


def dict_items(d):
    # plain Python without a rule of its own: srcgrad differentiates its source
    return [(k, d[k]) for k in d]


def dict_keys(d):
    return list(d.keys())


def copy_value(x):
    """``x.copy()`` of a list, dict or array."""
    return x.copy()


# methods of builtin containers, as runtime functions with rules
CONTAINER_METHODS = {
    (dict, "get"): dict_get, (dict, "values"): dict_values, (dict, "items"): dict_items,
    (dict, "keys"): dict_keys, (dict, "copy"): copy_value, (list, "copy"): copy_value,
}


def container_method(obj, name: str):
    """The runtime function with a rule for ``obj.name`` (CONTAINER_METHODS), also for the
    standard library's dicts (OrderedDict, defaultdict, Counter: the same views, ``get`` and
    ``copy`` of their own class) and for a user's subclass that keeps the builtin method; None
    for any other method."""
    cls = type(obj)
    for base in (dict, list):
        if isinstance(obj, base) and (base, name) in CONTAINER_METHODS:
            if cls is base or cls.__module__ == "collections" \
                    or getattr(cls, name, None) is getattr(base, name):
                return CONTAINER_METHODS[base, name]
    return None


def method_fwd(obj, name, *args, **kwargs):
    """Like ``call_fwd`` for ``obj.name(...)``: gradients include ``obj`` as argument 0."""
    return _dispatch.method_fwd(obj, name, *args, **kwargs)


def call_bwd(record, g):
    """``(positional, keyword)`` gradients of a ``call_fwd``/``method_fwd`` call from the
    cotangent ``g`` of its value."""
    return _dispatch.call_bwd(record, g)


def seq_concat(a, b):
    """``a + b`` of two tuples or lists (what ``+`` means on sequences)."""
    return a + b


def seq_repeat(a, b):
    """``a * b`` with one operand known to be a tuple or list (``[0.0] * n``, ``3 * xs``):
    the sequence repeated; numpy's product when, at run time, it is neither (its rule then
    differentiates a product)."""
    return a * b


def repeated_items(g, xs, n):
    """The cotangent of the sequence ``xs`` from the cotangent ``g`` of ``xs * n``: each
    item's copies summed, in ``xs``'s own kind (a list or a tuple)."""
    k = len(xs)
    sums = [ZERO] * k
    if not is_zero(g):
        for j in range(k * max(n, 0)):
            sums[j % k] = add(sums[j % k], part(g, j))
    return type(xs)(sums) if isinstance(xs, tuple) else sums


def plus(a, b):
    """``a + b`` whose right operand is known to be a tuple or list and whose left one is
    not (a parameter: ``lst + [v]``, ``args + (c,)``): a concatenation when both are
    sequences (its rule splits the adjoint), numpy's addition otherwise."""
    return a + b


# -- forward mode (jvp) support: tangent tapes, attribute tangents, dynamic jvp calls ----------
class ZeroTape:
    """The tangent tape of a tape whose tangent is zero: pushes zeros, pops zeros."""

    __slots__ = ()

    def push(self, d):
        if not is_zero(d):
            raise TypeError("srcgrad: a nonzero tangent pushed on a tape whose tangent is zero")

    def pop(self):
        return ZERO


ZERO_TAPE = ZeroTape()


def tangent_tape(d):
    """A tangent tape that may be the lazy zero, as a tape (``ZERO_TAPE`` for zero)."""
    return ZERO_TAPE if is_zero(d) else d


def tangent_item(d, x, index):
    """Tangent of ``x[index]`` from a tangent ``d`` of ``x`` that may be the lazy zero, a
    container with lazy entries, or an array smaller than ``x`` that broadcasts to it."""
    if is_zero(d):
        return ZERO
    if isinstance(d, dict):
        return d.get(index, ZERO)
    if isinstance(x, np.ndarray) and np.shape(d) != x.shape:
        return np.broadcast_to(d, x.shape)[index]
    if not isinstance(x, (_ndarray, list, tuple, str)):
        _refuse_own_getitem(x)
    return d[index]


def is_receiver_method(obj, name: str) -> bool:
    """Whether ``obj.name`` is ``obj`` bound to a method of its class (or ``name`` is a bound
    method's ``__self__``). Such a value's derivative (adjoint, tangent) is its receiver's:
    calling it runs the method with ``obj`` as ``self`` (adapters.py), so ``h = m.apply;
    h(x)`` differentiates ``m`` as ``m.apply(x)`` does."""
    if type(obj) is types.MethodType:
        return name == "__self__"
    if name in getattr(obj, "__dict__", ()):
        return False
    return type(inspect.getattr_static(type(obj), name, None)) is types.FunctionType


def receiver_of(fn):
    """The object whose derivative a called ``fn`` carries: a bound method's receiver, or
    ``fn`` itself (an object with ``__call__``)."""
    return fn.__self__ if type(fn) is types.MethodType else fn


def tangent_attr(d, name: str, obj=None):
    """Tangent of ``obj.name`` from the tangent ``d`` of ``obj``: an object of the same class
    holding tangents, a dict of attribute tangents, or the lazy zero; ``d`` itself for a
    bound method of ``obj`` (is_receiver_method)."""
    if is_zero(d):
        return ZERO
    if obj is not None and is_receiver_method(obj, name):
        return d
    if obj is not None and _is_object(obj):
        refuse_computed_attribute(obj, name)
    if isinstance(d, dict):
        return d.get(name, ZERO)
    if isinstance(obj, tuple) and hasattr(obj, "_fields") and isinstance(d, (tuple, list)) \
            and not hasattr(d, name):
        # a namedtuple's tangent held as a plain tuple (add_attr's adjoint of a namedtuple
        # is one, by position): its field by position, not a lazy zero
        return d[obj._fields.index(name)]
    own = getattr(d, "__dict__", None)
    if isinstance(own, dict) and name not in own and not isinstance(d, type):
        # a class attribute read through the tangent object (class P: unit = 1.0): the
        # class's constant, not a tangent (getattr found the class's value: a jvp off by it)
        return ZERO
    return getattr(d, name, ZERO)


def call_jvp(fn, tangents, kw_tangents, *args, **kwargs):
    """``(value, tangent)`` of a call to a function value known only at run time;
    ``tangents`` align with ``args`` (lazy zeros allowed), ``kw_tangents`` maps keyword names
    to tangents."""
    return _dispatch.call_jvp(fn, tangents, kw_tangents, *args, **kwargs)


def method_jvp(obj, d_obj, name, tangents, kw_tangents, *args, **kwargs):
    """Like ``call_jvp`` for ``obj.name(...)``, ``d_obj`` being the tangent of ``obj``."""
    return _dispatch.method_jvp(obj, d_obj, name, tangents, kw_tangents, *args, **kwargs)


def call_fwd_jvp(tangents, kw_tangents, fn, *args, **kwargs):
    """Forward mode of ``call_fwd``: ``((value, record), (d_value, d_record))``;
    ``tangents`` align with ``(fn,) + args``."""
    return _dispatch.call_fwd_jvp(tangents, kw_tangents, fn, *args, **kwargs)


def method_fwd_jvp(tangents, kw_tangents, obj, name, *args, **kwargs):
    """Forward mode of ``method_fwd``; ``tangents`` align with ``(obj, name) + args``."""
    return _dispatch.method_fwd_jvp(tangents, kw_tangents, obj, name, *args, **kwargs)


def call_bwd_jvp(tangents, kw_tangents, record, g):
    """Forward mode of ``call_bwd``; ``tangents`` are those of ``(record, g)``."""
    return _dispatch.call_bwd_jvp(tangents, kw_tangents, record, g)


def adjoint_push(adjoint_tape, g):
    """Adjoint of ``v = tape.pop()`` in a generated sweep differentiated again: push ``v``'s
    adjoint on the tape's adjoint (a tape, made on first use)."""
    if is_zero(adjoint_tape):
        adjoint_tape = Tape()
    # (None: the cotangent of a saved None, a name bound before its first value)
    adjoint_tape.push(ZERO if g is None else g)
    return adjoint_tape


def adjoint_pop(adjoint_tape):
    """Adjoint of ``tape.push(v)``: ``v``'s adjoint, popped from the tape's adjoint."""
    if is_zero(adjoint_tape):
        return ZERO
    return adjoint_tape.pop()


def grad_seed(value):
    """The seed cotangent of a scalar result: ones shaped like it (used by generated
    gradient wrappers, which differentiate through a gradient). A numpy float other than
    float64 (``np.sum`` of a float32 array) gets a one of its dtype, as ``grad`` seeds it: a
    Python ``1.0`` spread over the summed array would be a float64 array, and the float32
    gradient float64."""
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"srcgrad: grad needs a scalar result, got shape {value.shape}")
        return np.ones_like(value, dtype=value.dtype if value.dtype.kind == "f" else float)
    if isinstance(value, np.floating) and type(value) is not _float64:
        return np.array(1.0, value.dtype)
    return 1.0


def makes_seed(fn) -> bool:
    """Whether ``fn`` makes the seed of a gradient's scalar result (a one, never the lazy
    zero): ``grad_seed``, or grad's own seed for a function (marked ``__srcgrad_seed__``,
    which also refuses what grad refuses)."""
    return fn is grad_seed or getattr(fn, "__srcgrad_seed__", False) is True


def copy_saved(saved):
    """A copy of what a forward sweep saved whose tapes can be popped again: tapes (also
    inside tuples, lists and other tapes) are copied, values are shared."""
    if isinstance(saved, Tape):
        return Tape(copy_saved(v) for v in saved)
    if isinstance(saved, tuple):
        items = [copy_saved(v) for v in saved]
        if all(a is b for a, b in zip(items, saved)):
            return saved  # (no tape inside: other namedtuples pass as they are)
        # a namedtuple here is a call record (srcgrad.call_records) holding a callee's tapes
        return type(saved)(*items) if hasattr(saved, "_fields") else tuple(items)
    return saved


def seq_max(items):
    """Builtin ``max`` of a sequence (``max(xs)``, ``max(a, b, c)``)."""
    return max(items)


def seq_min(items):
    """Builtin ``min`` of a sequence."""
    return min(items)


def seq_max_by(items, key):
    """Builtin ``max(xs, key=key)``: the item itself, chosen by ``key`` (which only chooses:
    the gradient reaches the chosen item, none reaches what ``key`` reads)."""
    return max(items, key=key)


def seq_min_by(items, key):
    """Builtin ``min(xs, key=key)``."""
    return min(items, key=key)


def seq_pick(g, items, chosen):
    """Adjoint of picking ``chosen`` out of ``items``: ``g`` at its first occurrence."""
    k = seq_index(items, chosen)
    out = [g if i == k else ZERO for i in range(len(items))]
    return tuple(out) if isinstance(items, tuple) else out


def seq_index(items, chosen) -> int:
    """Position of ``chosen`` in ``items`` (by identity first, then equality)."""
    for i, item in enumerate(items):
        if item is chosen:
            return i
    for i, item in enumerate(items):
        if item == chosen:
            return i
    raise ValueError("value not in sequence")


def dict_with(d, key, g):
    """A dict adjoint of ``d`` holding ``g`` at ``key`` only."""
    if is_zero(g):
        return ZERO
    return {key: g}


def dict_from(d, keys, values):
    """A dict adjoint of ``d`` from adjoints listed in the order of ``keys``."""
    if is_zero(values):
        return ZERO
    return {k: v for k, v in zip(keys, values)}


def element(xs, i):
    """The ``i``-th item a ``for`` loop over ``xs`` binds: a row of an array, an item of a
    list or tuple, a key of a dict (keys carry no gradient)."""
    if isinstance(xs, dict):
        return list(xs)[i]
    return xs[i]


def add_element(acc, xs, i, g):
    """Adjoint of ``element(xs, i)``: ``g`` added at position ``i`` (nothing for dict keys)."""
    if isinstance(xs, dict) or is_zero(g):
        return acc
    # one more reference to an owned accumulator: this function's own parameter
    return add_at(acc, xs, i, g, _OWNED_REFS + 1)


def stop_gradient(x):
    """``x`` itself, as a value that carries no gradient (non-differentiable identity)."""
    return x


# -- function values carrying differentiable data (see transforms/calls.py) -----------------
class Bound(tuple):
    """A callable with some arguments bound: ``(fn, args, kwargs)``.

    What ``functools.partial`` of differentiable values, and a lambda or nested function
    reading differentiable variables used as a value, become in differentiated code (their
    captured values made explicit keyword arguments). A tuple, so that gradients reach the
    bound values like any container's items.
    """

    __slots__ = ()

    def __call__(self, *args, **kwargs):
        fn, bound_args, bound_kwargs = self
        return fn(*bound_args, *args, **{**bound_kwargs, **kwargs})

    def __repr__(self):
        return f"Bound({self[0]!r}, {self[1]!r}, {self[2]!r})"


def bind(fn, args, kwargs):
    """``functools.partial(fn, *args, **kwargs)`` as a differentiable value."""
    return Bound((fn, tuple(args), dict(kwargs)))


def bind_again(fn, args, kwargs):
    """``functools.partial(fn, ...)`` of a function value that may itself be a ``Bound``:
    one ``Bound`` holding both sets of arguments (plain Python: srcgrad differentiates it)."""
    if isinstance(fn, Bound):
        return bind(fn[0], seq_concat(fn[1], args), dict_update(fn[2], kwargs))
    return bind(fn, args, kwargs)


def apply(fn, args, kwargs):
    """``fn(*args, **kwargs)``: a call unpacking differentiable values, or of a function value
    that may carry some (a ``Bound``). Differentiated code reaches it through ``call_fwd``,
    which runs it as a fixed-arity adapter (srcgrad/adapters.py)."""
    return fn(*args, **kwargs)


def unzip(rows):
    """``zip(*rows)`` as a list of tuples (the columns of ``rows``, as many as its shortest
    row has items)."""
    n = min([len(r) for r in rows]) if len(rows) else 0
    return [tuple(r[j] for r in rows) for j in range(n)]


def unzip_transpose(g, rows):
    """The cotangent of ``rows`` from the cotangent ``g`` of ``unzip(rows)`` (transposed
    back; items past the shortest row get zeros). Linear in ``g``, which may be lazy."""
    if is_zero(g):
        return [zeros_like(r) for r in rows]
    n = len(g)
    return [_like_row([densify(part(part(g, j), i), r[j]) if j < n else zeros_like(r[j])
                       for j in range(len(r))], r)
            for i, r in enumerate(rows)]


def _like_row(items: list, row):
    """The cotangent of one row of ``zip(*rows)`` in the row's own kind: an array's items
    stacked back into an array of its shape, a list's as a list, a tuple's as a tuple."""
    if isinstance(row, np.ndarray):
        return np.array(items, dtype=row.dtype if row.dtype.kind in "fc" else np.float64
                        ).reshape(row.shape) if items else np.zeros_like(row, dtype=float)
    if isinstance(row, list):
        return items
    return tuple(items)


# -- sorted(): a permutation of the items -----------------------------------------------------
def sort_order(xs, key=None, reverse=False) -> list:
    """The positions of ``xs``'s items in the order ``sorted(xs, key=key, reverse=reverse)``
    lists them (the same stable sort, applied to the positions)."""
    items = list(xs)
    if key is None:
        return sorted(range(len(items)), key=items.__getitem__, reverse=reverse)
    return sorted(range(len(items)), key=lambda i: key(items[i]), reverse=reverse)


def permute(xs, order) -> list:
    """``[xs[i] for i in order]``: what ``sorted`` returns, given its order."""
    items = list(xs)
    return [items[i] for i in order]


def unpermute(g, xs, order):
    """The cotangent of ``xs`` from the cotangent ``g`` of ``permute(xs, order)``, in the
    kind of ``xs`` (an array's items stacked back into an array). Linear in ``g``."""
    if is_zero(g) or isinstance(xs, (dict, set, frozenset)):  # keys carry no gradient
        return ZERO if isinstance(xs, (dict, set, frozenset)) else zeros_like(xs)
    items = list(xs)
    out = [ZERO] * len(items)
    for j, i in enumerate(order):
        out[i] = densify(part(g, j), items[i])
    if isinstance(xs, np.ndarray):
        return np.array(out, dtype=xs.dtype if xs.dtype.kind in "fc" else np.float64
                        ).reshape(xs.shape)
    return tuple(out) if isinstance(xs, tuple) else out


def as_list(xs):
    """``list(xs)`` (also of an array's rows, or a dict's keys)."""
    return list(xs)


def as_tuple(xs):
    """``tuple(xs)``."""
    return tuple(xs)


def is_record_class(cls) -> bool:
    """``cls`` is a namedtuple class (``collections.namedtuple``, ``typing.NamedTuple``)."""
    return isinstance(cls, type) and issubclass(cls, tuple) \
        and isinstance(getattr(cls, "_fields", None), tuple) and hasattr(cls, "_make")


def constructed_class(cls) -> bool:
    """``cls`` is a user's class whose call srcgrad differentiates as ``self = new_instance(
    cls); cls.__init__(self, ...)``: object's ``__new__``, an ``__init__`` written in Python
    without ``*args``/``**kwargs``, a ``__dict__`` (no ``__slots__``), not an exception or an
    array (adapters.constructor_adapter)."""
    if not isinstance(cls, type) or cls.__new__ is not object.__new__ \
            or issubclass(cls, (BaseException, np.ndarray, tuple, dict, list)) \
            or "__slots__" in vars(cls) or type(cls) is not type or cls in REGISTERED:
        return False  # (a registered vector space's objects are made by its rules)
    init = cls.__init__
    code = getattr(init, "__code__", None)
    return type(init).__name__ == "function" and code is not None \
        and not code.co_flags & 0x0C  # (CO_VARARGS | CO_VARKEYWORDS)


def new_instance(cls):
    """``cls.__new__(cls)``: an object of ``cls`` not initialized yet."""
    return cls.__new__(cls)


def make_record(cls, items):
    """``cls(*items)`` of a namedtuple class: what calling it with differentiable values
    becomes (adapters.record_adapter). A lazy zero (a tangent or cotangent) stays one."""
    if is_zero(items):
        return ZERO
    return cls._make(items)


def record_items(record, cls):
    """The items of a namedtuple of ``cls`` as a tuple, also of its cotangent (a tuple, a
    dict of the fields read, or a lazy zero)."""
    if is_zero(record):
        return ZERO
    if isinstance(record, dict):
        return tuple(record.get(f, ZERO) for f in cls._fields)
    return tuple(record)


def items_as(items, like, cls):
    """``items`` (a tuple of ``cls``'s fields, or a lazy zero) in the form of ``like``: a dict
    of the fields ``like`` has, a plain tuple, or a namedtuple of ``cls`` (record_items's
    transpose, whose cotangent must take the form of its argument)."""
    if is_zero(items):
        return ZERO
    if isinstance(like, dict):
        return {f: v for f, v in zip(cls._fields, items) if f in like}
    if type(like) is tuple:
        return tuple(items)
    return cls._make(items)


def dict_copy(d):
    """``dict(d)`` of a dict, or of a list or tuple of ``(key, value)`` pairs, holding
    differentiable values (its rule passes each value's adjoint through; a pair's key gets
    none). Other iterables of pairs (a generator, ``zip``) are refused: their adjoint would
    have no structure to take."""
    if not isinstance(d, (dict, list, tuple)):
        raise NonDifferentiableError(
            f"dict() of a {type(d).__name__} of key-value pairs holding differentiable "
            f"values is not supported. Build the dict with a literal or a comprehension "
            f"({{k: v for k, v in pairs}}), or pass a list of the pairs.")
    return dict(d)


def refuse_float_operand(value, message: str) -> None:
    """Raise when ``value``, passed where a rule takes no derivative but depending on the
    differentiated input, is a float (or holds floats): its gradient would be lost. An
    integer, bool, None or string carries none, so passes (``axis=axis`` in a helper)."""
    if _holds_floats(value):
        raise NonDifferentiableError(message)


def _holds_floats(value) -> bool:
    if isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc"
    if isinstance(value, (list, tuple)):
        return any(_holds_floats(v) for v in value)
    return False


def refuse_mutable(value, message: str) -> None:
    """Raise unless ``value`` is a number, which ``p *= 2`` in a callee run as plain Python
    rebinds; on an array, a list or a dict it is an in-place change the tape would miss."""
    if not isinstance(value, (int, float, complex, np.generic)):
        raise UnsupportedSyntaxError.from_message(message)


def refuse_shared_array(value, message: str) -> None:
    """Raise when ``value`` is an array: an in-place update of it could change another
    name's value, which srcgrad's functional rewriting would not see."""
    if isinstance(value, np.ndarray):
        raise UnsupportedSyntaxError.from_message(message)


def tangent_like(d, x):
    """A tangent passed to a function: the lazy zero stays lazy, an array smaller than its
    value (``dx[1] + 0.0`` for ``x[1] + v``) is broadcast to the value's shape."""
    if is_zero(d) or type(x) is not _ndarray or np.shape(d) == x.shape:
        return d
    return np.broadcast_to(d, x.shape)


def refuse_item_update(container, item, message: str) -> None:
    """Raise when ``container[k] += v`` would update an array held in a list, tuple or dict
    in place (other names may hold that array); an array's own elements or a number pass."""
    if isinstance(container, (list, tuple, dict)) and isinstance(item, np.ndarray):
        raise UnsupportedSyntaxError.from_message(message)


def refuse_shared_item(root, keys: tuple, inplace: bool, frame: dict, names: tuple,
                       outside: tuple, message: str) -> None:
    """Before ``root[k1]...[kn] = v`` (``inplace``: ``+=``), which srcgrad rewrites as new
    containers (``root = setitem(root, k1, setitem(root[k1], ...))``) where Python changes
    objects in place: raise unless nothing else can see those objects. They are the lists and
    dicts along the path, and the array (or list) the update changes in place: an array item
    indexed further (``rows[k][1:] = v``), or the item itself for ``+=``. Each must be held
    only by its slot on the path: not by another slot (``[a] * 3``), another variable
    (``names``, those bound in ``frame``), a global (``outside``), nor, for an array, share
    data with any array those reach. A root that is no list or dict (an array: its own
    guards) passes."""
    if type(root) not in (list, dict):
        return
    path, obj, rest = [root], root, list(keys)
    while rest and type(obj) in (list, dict, tuple) and not isinstance(rest[0], slice):
        try:
            child = obj[rest[0]]
        except (KeyError, IndexError, TypeError):
            break  # a new key (the store adds it; Python raises an IndexError itself)
        rest.pop(0)
        obj = child
        path.append(obj)
    changed = path[:-1]  # the containers a slot of which is replaced
    if (rest or inplace) and type(obj) in (list, dict):
        changed.append(obj)  # (a new key or a slice of it; a list's own '+=')
    array = obj if (rest or inplace) and isinstance(obj, np.ndarray) else None
    if any(type(c) is tuple for c in changed):
        where = message.split(": '", 1)[0]  # (desugar.item_guard: "<file:line>: '<target> ...")
        raise UnsupportedSyntaxError.from_message(
            f"{where}: an in-place update of an array held in a tuple is not supported: srcgrad "
            f"would rebuild the tuple with the new array. Hold the arrays in a list instead.")
    _refuse_reached(root, changed, array, [frame[n] for n in names if n in frame]
                    + list(outside), message)


def _refuse_reached(root, changed: list, array, others: list, message: str) -> None:
    """Raise unless each object of ``changed`` is reached once from ``root`` and never from
    ``others``, and ``array`` (if any) shares its data with nothing else they reach."""
    seen: dict[int, int] = {}
    arrays: list = []
    _reach(root, seen, arrays)
    if any(seen.get(id(c), 0) > 1 for c in changed) or (
            array is not None and _sharing(arrays, array) > 1):
        raise UnsupportedSyntaxError.from_message(message)
    seen.clear()
    arrays.clear()
    for value in others:
        _reach(value, seen, arrays)
    if any(id(c) in seen for c in changed) or (
            array is not None and _sharing(arrays, array)):
        raise UnsupportedSyntaxError.from_message(message)


def refuse_shared_object(obj, name: str, inplace: bool, frame: dict, names: tuple,
                         outside: tuple, message: str) -> None:
    """Before ``obj.name = v`` (``inplace``: ``obj.name op= v``), which srcgrad rewrites as a
    new object (``obj = with_attr(obj, name, v)``) where Python changes ``obj``: raise unless
    nothing else holds ``obj`` (another variable, ``names`` bound in ``frame``; a global,
    ``outside``; an item or attribute of one), and, in place, nothing else holds the list or
    dict ``obj.name`` holds, nor shares data with its array (Python changes those too)."""
    if _runs_store_code(type(obj), name):
        where = message.split(": '", 1)[0]  # (desugar.object_guard: "<file:line>: '<m.W> =")
        raise UnsupportedFeatureError(f"{where}: {_store_code_message(type(obj), name)}")
    changed = [obj]
    if inplace:
        _refuse_class_attribute(obj, name, message.split(": '", 1)[0])
    item = getattr(obj, name, None) if inplace else None
    array = item if isinstance(item, np.ndarray) else None
    if type(item) in (list, dict):
        changed.append(item)
    _refuse_reached(obj, changed, array, [frame[n] for n in names if n in frame]
                    + list(outside), message)


def refuse_shared_path(root, kinds: str, keys: tuple, inplace: bool, frame: dict,
                       names: tuple, outside: tuple, receiver: str, message: str) -> None:
    """Before a store through attributes and items (``m.W[0] = v``, ``a.b.W = v``,
    ``s.hs.append(v)``: ``kinds`` says which of ``keys`` are attribute names, "a", or items,
    "i"), which srcgrad rewrites as new objects and containers along the path where Python
    changes the last one in place (desugar.lower_held_store). ``inplace``: the object at the
    end of the path is itself changed (a list method, ``+=``). Raise unless nothing else holds
    what Python would change: each object or container on the path (reached once from
    ``root``, never from another variable of ``names`` bound in ``frame``, a global of
    ``outside``), and an array indexed further or changed in place (nothing else shares its
    data). A class running code on the store, or a tuple on the path, is refused too, and
    so is a ``receiver`` ("list", "dict", "list|dict": what a method's rewrite makes) of
    another type."""
    where = message.split(": '", 1)[0]  # (desugar: "<file:line>: '<target> ...")
    changed, obj = [], root
    array = None
    for i, (kind, key) in enumerate(zip(kinds, keys)):
        if isinstance(obj, np.ndarray):
            array = obj  # (the rest of the keys index into it)
            break
        if type(obj) is tuple:
            raise UnsupportedSyntaxError.from_message(
                f"{where}: a store into an object held in a tuple is not supported: srcgrad "
                f"would rebuild the tuple. Hold the objects in a list instead.")
        if kind == "a" and _runs_store_code(type(obj), key):
            raise UnsupportedFeatureError(f"{where}: {_store_code_message(type(obj), key)}")
        if kind == "i" and type(obj) not in (list, dict):
            raise UnsupportedSyntaxError.from_message(
                f"{where}: a store into an item of a {type(obj).__name__} held by an attribute "
                f"or an item is not supported: srcgrad rebuilds lists, dicts and arrays only. "
                f"Copy it into a variable first.")
        changed.append(obj)
        if kind == "a" and (i + 1 < len(keys) or inplace):
            _refuse_class_attribute(obj, key, where)
        try:
            obj = getattr(obj, key) if kind == "a" else obj[key]
        except (AttributeError, KeyError, IndexError, TypeError):
            obj = None  # (a new attribute or key: the store adds it)
            break
    else:
        if receiver and type(obj).__name__ not in receiver.split("|"):
            kinds = receiver.replace("|", " or a ")
            raise UnsupportedSyntaxError.from_message(
                f"{where}: the method changes a {type(obj).__name__} in place, which srcgrad "
                f"cannot rewrite as a new value (it does for a {kinds}). Keep the values in "
                f"a {kinds}.")
        if inplace and isinstance(obj, np.ndarray):
            array = obj
        elif inplace and obj is not None and type(obj) not in _ATOMS:
            changed.append(obj)
    _refuse_reached(root, changed, array, [frame[n] for n in names if n in frame]
                    + list(outside), message)


def _refuse_class_attribute(obj, name: str, where: str) -> None:
    """Raise when ``obj.name``, whose object a store changes in place (``m.W[0] = v``,
    ``m.W *= x``, ``a.b.W = v``), is its class's attribute, not the object's own: Python
    changes what every instance shares, srcgrad's new object would hold a changed copy."""
    own = getattr(obj, "__dict__", None)
    if (own is None or name not in own) and hasattr(type(obj), name) \
            and type(getattr(obj, name)) not in _ATOMS \
            and not isinstance(getattr(obj, name), np.generic):  # (a number: rebound)
        raise UnsupportedSyntaxError.from_message(
            f"{where}: '{name}' is an attribute of the class {type(obj).__name__}, shared by "
            f"all its instances, which this store changes in place; srcgrad does not support "
            f"that. Give the object its own copy first (obj.{name} = obj.{name}.copy()).")


def refuse_changing_method(obj, name: str, message: str) -> None:
    """Before ``obj.name(...)`` with differentiable values, on an object whose class was not
    known at transform time: raise when that method changes its object in place (run as
    plain Python or differentiated, the change carries no gradient)."""
    if _dispatch.method_changes_receiver(_class_called(obj, name), name):
        raise UnsupportedSyntaxError.from_message(message)


def _class_called(obj, name: str) -> type:
    """The class whose method ``obj.name`` is: ``type(obj)``, or for ``super()`` the class
    after its own in the object's MRO that defines ``name`` (``super().__init__(w)``
    changing self went unchecked: super's own class has no such method of a user's)."""
    if type(obj) is not super or obj.__self_class__ is None:
        return type(obj)
    mro = obj.__self_class__.__mro__
    for cls in mro[mro.index(obj.__thisclass__) + 1:]:
        if name in vars(cls):
            return cls
    return type(obj)


def refuse_changing_method_within(obj, name: str, message: str) -> None:
    """Before a helper calls ``.name(...)`` on an object ``obj`` holds or may be
    (``m.sub.set_w(v)``, ``for s in ms: s.set_w(v)``), which only the run time knows: raise
    when any object ``obj`` reaches through attributes and the items of lists, tuples and
    dicts (arrays and numbers hold no object with methods of a user's class) has a method of
    that name changing its object."""
    seen: set[int] = set()
    todo = [(obj, 0)]
    while todo:
        item, depth = todo.pop()
        if id(item) in seen or type(item) in _ATOMS or isinstance(item, (np.ndarray, np.generic,
                                                                        type, types.ModuleType)):
            continue
        seen.add(id(item))
        refuse_changing_method(item, name, message)
        if depth >= 8 or len(seen) > 100_000:
            continue
        if isinstance(item, dict):
            todo += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            todo += [(v, depth + 1) for v in item]
        else:
            own = getattr(item, "__dict__", None)
            if isinstance(own, dict):
                todo += [(v, depth + 1) for v in own.values()]


def refuse_overridden(obj, name: str, method, message: str) -> None:
    """Before ``self.name(...)`` run as ``method(self, ...)`` (the function of the class
    whose method is being differentiated): raise when ``obj``'s class has another ``name``,
    which Python would call instead."""
    if inspect.getattr_static(type(obj), name, None) is not method:
        raise UnsupportedFeatureError(message)


def refuse_differentiable_change(value, message: str) -> None:
    """Before ``v.sort()`` (an in-place method no rewrite follows): raise when ``v`` holds
    differentiable values (not a list of keys, of integers)."""
    if may_carry_gradient(value):
        raise UnsupportedSyntaxError.from_message(message)


def with_attr(obj, name: str, value):
    """A copy of ``obj`` with ``obj.name = value``: what ``m.W = v`` becomes on a
    differentiable value (refuse_shared_object checked that nothing else holds ``obj``). A
    class running code of its own on the store (``__setattr__``, a property) is refused: its
    derivative is not the stored value's."""
    if _runs_store_code(type(obj), name):
        raise UnsupportedFeatureError(_store_code_message(type(obj), name))
    out = copy.copy(obj)
    setattr(out, name, value)
    return out


def with_attr_object(obj, name: str, value):
    """``with_attr`` for ``object.__setattr__(obj, name, value)``, which bypasses the class's
    ``__setattr__`` (a frozen dataclass's ``__init__`` and ``__post_init__`` store so). A
    property (or other data descriptor) on ``name`` is still refused."""
    if hasattr(inspect.getattr_static(type(obj), name, None), "__set__"):
        raise UnsupportedFeatureError(_store_code_message(type(obj), name))
    out = copy.copy(obj)
    object.__setattr__(out, name, value)
    return out


def _runs_store_code(cls, name: str) -> bool:
    """Whether ``obj.name = v`` runs code of ``cls`` (``__setattr__``, a property). A frozen
    dataclass's ``__setattr__`` only raises (with_attr's setattr raises too, as Python
    does; object.__setattr__ bypasses it, with_attr_object)."""
    return cls.__setattr__ is not object.__setattr__ and cls is not types.SimpleNamespace \
        and not is_frozen_dataclass(cls) \
        or hasattr(inspect.getattr_static(cls, name, None), "__set__")


def _store_code_message(cls, name: str) -> str:
    return (f"storing the attribute '{name}' of a {cls.__name__} in differentiated code is not "
            f"supported: its class runs code of its own on the store (__setattr__ or a "
            f"property), whose derivative srcgrad cannot know. Keep the value in a variable "
            f"or a dict.")


def plain_dataclass_fields(cls, frozen: bool = False, post_init: bool = False
                           ) -> tuple | None:
    """The init parameters of a plain dataclass, in order, each of which its generated
    ``__init__`` only stores in the attribute of that name (its own generated ``__init__``, no
    ``__post_init__`` unless ``post_init``, not frozen unless ``frozen``, no init-only,
    ``init=False`` or default_factory fields, no ``__slots__``); None for any other class."""
    init = getattr(vars(cls).get("__init__"), "__code__", None) if isinstance(cls, type) \
        else None
    if not (init is not None and init.co_filename == "<string>"
            and dataclasses.is_dataclass(cls) and not hasattr(cls, "__slots__")
            and (post_init or not hasattr(cls, "__post_init__"))
            and (cls.__setattr__ is object.__setattr__ or frozen and is_frozen_dataclass(cls))):
        return None
    fields = dataclasses.fields(cls)
    names = tuple(f.name for f in fields)
    if any(not f.init or f.default_factory is not dataclasses.MISSING for f in fields) \
            or tuple(inspect.signature(cls).parameters) != names:
        return None  # (an InitVar, a field __init__ computes)
    return names


def is_frozen_dataclass(cls) -> bool:
    """``@dataclass(frozen=True)``: its ``__setattr__`` only refuses stores (dataclasses'
    generated code), which ``object.__setattr__`` bypasses."""
    params = getattr(cls, "__dataclass_params__", None)
    return bool(params is not None and params.frozen
                and getattr(vars(cls).get("__setattr__"), "__code__", None) is not None
                and vars(cls)["__setattr__"].__code__.co_filename == "<string>")


def replaced(obj, names: tuple, values: tuple):
    """``dataclasses.replace(obj, n=v, ...)`` of a plain dataclass, or ``obj._replace(n=v,
    ...)`` of a namedtuple (transforms/anf.py): a copy with the fields ``names`` set to
    ``values``. Other objects are refused: their derivative is not the stored values'."""
    changes = dict(zip(names, values))
    if is_record_class(type(obj)):
        return obj._replace(**changes)
    if plain_dataclass_fields(type(obj), frozen=True) is not None:
        return dataclasses.replace(obj, **changes)
    raise UnsupportedFeatureError(
        f"replacing fields of a {type(obj).__name__} with differentiable values: srcgrad "
        f"differentiates dataclasses.replace of a dataclass with no __post_init__, "
        f"init-only or default_factory fields (frozen or not) and _replace of a "
        f"namedtuple: replace would run __post_init__ unseen. Build the new object by "
        f"calling its class ({type(obj).__name__}(field=..., ...)), which srcgrad follows "
        f"through __post_init__.")


def fields_without(g, obj, names: tuple):
    """The adjoint (or tangent) ``g`` of ``obj``, a dataclass or a namedtuple, with the
    fields ``names`` zero: a dict of the others', or a tuple by position for a namedtuple."""
    if is_zero(g):
        return ZERO
    if is_record_class(type(obj)):
        return tuple(ZERO if f in names else tangent_attr(g, f, obj) for f in obj._fields)
    return {k: v for k, v in _attr_dict(g).items() if k not in names}


def fields_of(g, obj, names: tuple):
    """The adjoints (or tangents) of the fields ``names`` of ``obj`` from its ``g``."""
    return tuple(tangent_attr(g, n, obj) for n in names)


def fields_only(values, obj, names: tuple):
    """The adjoint (or tangent) of ``obj`` whose fields ``names`` have ``values`` and the
    others none (as fields_without holds it)."""
    if is_zero(values):
        return ZERO
    if is_record_class(type(obj)):
        return tuple(part(values, names.index(f)) if f in names else ZERO
                     for f in obj._fields)
    return {n: part(values, i) for i, n in enumerate(names)}


def attrs_without(g, name: str):
    """The adjoint (or tangent) ``g`` of an object (a dict of attribute adjoints, an object
    of its class, the lazy zero) without the attribute ``name``, as a dict."""
    if is_zero(g):
        return ZERO
    return {k: v for k, v in _attr_dict(g).items() if k != name}


def attr_only(name: str, g):
    """The adjoint (or tangent) of an object whose attribute ``name`` has adjoint ``g`` and
    the others none."""
    return ZERO if is_zero(g) else {name: g}


def refuse_shared_slot(root, keys: tuple, frame: dict, names: tuple, outside: tuple,
                       message: str, iterated: bool = False) -> None:
    """Before a helper changes in place the object at ``root[k1]...[kn]``, which its call
    site then writes back into that slot (desugar.lift_item_arguments, a loop's target):
    refuse_shared_item for an in-place update of it, and raise for a root that is no list,
    dict or array (a tuple's slot cannot be written back; Python changes the object it
    holds, which other names may hold too), or, ``iterated`` by a loop whose target is that
    object, a dict (whose loop binds its keys, not the objects at them)."""
    if iterated and type(root) is dict:
        raise UnsupportedSyntaxError.from_message(message)
    holder = root
    for key in keys[:-1]:  # (the containers along the path: none may be a tuple)
        if type(holder) not in (list, dict):
            break
        holder = holder[key]
    if type(holder) not in (list, dict) and not isinstance(holder, np.ndarray):
        raise UnsupportedSyntaxError.from_message(message)
    refuse_shared_item(root, keys, True, frame, names, outside, message)


def refuse_replaced_slot(root, keys: tuple, targets: tuple, message: str) -> None:
    """Before a helper changes in place the object a loop bound (``for layer in layers``,
    nested: ``targets`` outermost first, at ``root[k1]...[kn]``), which its call site then
    writes back into that slot: raise when a list's slot no longer holds the loop's object
    (the body replaced the item: Python would change the old object, not the list's), or
    when a container is a dict (its loop binds keys). An array's rows are views: they pass."""
    holder = root
    for key, target in zip(keys, targets):
        if isinstance(holder, dict) or (isinstance(holder, (list, tuple))
                                        and holder[key] is not target):
            raise UnsupportedSyntaxError.from_message(message)
        holder = target


def _sharing(arrays, array) -> int:
    """How many of ``arrays`` may share ``array``'s data (np.may_share_memory), answered at
    once for an array owning its data (its own allocation) that is not ``array``'s owner."""
    owner = array
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    exact = owner.base is not None  # (memory numpy did not allocate: compare bounds)
    return sum(1 for a in arrays if a is owner or ((exact or a.base is not None)
                                                   and np.may_share_memory(a, array)))


_ATOMS = {int, float, complex, str, bytes, bool, type(None), slice, range}


def _reach(value, seen: dict, arrays: list) -> None:
    """Count in ``seen`` (by id) each time a list, tuple, dict or object is reached from
    ``value``, through items, attributes and closure cells, and collect the arrays reached
    (each time). Too deep a structure to follow is refused."""
    todo = [(value, 0)]
    while todo:
        value, depth = todo.pop()
        kind = type(value)
        if kind in _ATOMS:
            continue
        if kind is np.ndarray or isinstance(value, np.ndarray):
            arrays.append(value)
            continue
        if isinstance(value, (np.generic, types.ModuleType, type)):
            continue
        key = id(value)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            continue
        if depth > 32:
            raise UnsupportedSyntaxError.from_message(
                "srcgrad: a container nested more than 32 levels deep cannot be checked for "
                "other references before an in-place update of an item; copy the item first.")
        if kind is list or kind is tuple or isinstance(value, (list, tuple, set, frozenset)):
            children = value
        elif isinstance(value, dict):
            children = value.values()
        elif isinstance(value, types.FunctionType):
            children = function_reads(value)
        elif kind.__module__.split(".")[0] in _MACHINERY:
            continue  # (a helper's adjoint, a cache, numba's objects: no data of the user's)
        else:  # (a wrapper may answer __dict__ with something else than a dict)
            attrs = getattr(value, "__dict__", None)
            children = attrs.values() if isinstance(attrs, dict) else ()
        todo.extend((child, depth + 1) for child in children)


_LIBRARY_MODULES = {"numpy", "scipy", "srcgrad", "builtins", "math"}


# modules whose objects the sharing check does not walk into (srcgrad's own containers of
# user values, Bound and tapes, are tuples and lists, walked before this is asked)
_MACHINERY = {"srcgrad", "numba", "llvmlite"}


def function_reads(fn) -> list:
    """What a function reaches besides its arguments: its closure cells and defaults, and,
    for a user's function (not numpy's, scipy's or srcgrad's), the globals its code reads
    (``def get(): return G``: the array ``G``, which ``w = get()`` then holds too)."""
    out = [c.cell_contents for c in fn.__closure__ or () if _cell_filled(c)]
    out += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
    if (getattr(fn, "__module__", None) or "").split(".")[0] in _LIBRARY_MODULES:
        return out
    scope = fn.__globals__
    return out + [scope[n] for n in _code_names(fn.__code__) if n in scope]


def _code_names(code) -> tuple:
    """The global (and attribute) names a code object and those nested in it read."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _code_names(const)
    return tuple(dict.fromkeys(names))


def _cell_filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def refuse_viewed(value, views, message: str) -> None:
    """Raise when ``value`` is an array one of ``views`` still shares data with, or a list or
    dict one of them is or holds: updating it in place would change that view too, which
    srcgrad's functional rewriting would not."""
    if isinstance(value, np.ndarray) and any(_shares_data(v, value, 3) for v in views):
        raise UnsupportedSyntaxError.from_message(message)
    if type(value) in (list, dict):  # s2 = state (or [state]), then state[k] = v
        seen: dict[int, int] = {}
        for v in views:
            _reach(v, seen, [])
        if id(value) in seen:
            raise UnsupportedSyntaxError.from_message(message)


def refuse_shared_locals(value, frame: dict, names: tuple, outside: tuple, message: str) -> None:
    """Before an in-place update of ``value`` that srcgrad rewrites as a new value (a helper
    handed the array, desugar.hand_over; an alias updated, desugar.alias_guard): raise when
    it is an array that another variable (``names``, those bound in the function's
    ``frame``) or a global array (``outside``) shares data with, or a list or dict one of
    those is or holds. Python would change those too; the rewrite would not."""
    if isinstance(value, np.ndarray) or type(value) in (list, dict):
        refuse_viewed(value, [frame[n] for n in names if n in frame] + list(outside), message)
    elif _is_plain_object(value):  # (a helper storing into its attributes: m.W = v)
        seen: dict[int, int] = {}
        for v in [frame[n] for n in names if n in frame] + list(outside):
            _reach(v, seen, [])
        if id(value) in seen:
            raise UnsupportedSyntaxError.from_message(message)


def _is_plain_object(value) -> bool:
    """A user's object holding attributes (not a module, function or class)."""
    return _is_object(value) and not isinstance(value, (types.ModuleType, types.FunctionType,
                                                        types.MethodType))


def refuse_shared_held(value, frame: dict, names: tuple, outside: tuple, message: str) -> None:
    """refuse_shared_locals, and before a callee updates in place the arrays (and lists) a
    list or dict ``value`` holds (``p["a"] -= g`` in ``p = step(p, g)``): raise when another
    variable or a global holds one of them or shares an array's data."""
    _refuse_shared_items(value, frame, names, outside, message, True)


def refuse_shared_containers(value, frame: dict, names: tuple, outside: tuple,
                             message: str) -> None:
    """refuse_shared_held before a callee that changes only the lists, dicts and objects
    ``value`` holds (``self.hs.append(v)``), never an array's data: another variable may
    hold the arrays they hold."""
    _refuse_shared_items(value, frame, names, outside, message, False)


def _refuse_shared_items(value, frame: dict, names: tuple, outside: tuple, message: str,
                         arrays: bool) -> None:
    refuse_shared_locals(value, frame, names, outside, message)
    if type(value) not in (list, dict) and not _is_plain_object(value):
        return
    held: list = []
    seen: dict[int, int] = {}
    _reach(value, seen, held)
    inner = {key for key in seen if key != id(value)}
    others_seen: dict[int, int] = {}
    others: list = []
    for v in [frame[n] for n in names if n in frame] + list(outside):
        _reach(v, others_seen, others)
    if inner & set(others_seen) or arrays and any(_sharing(others, a) for a in held):
        raise UnsupportedSyntaxError.from_message(message)


def _shares_data(v, array, depth: int) -> bool:
    """Whether ``v``, or an item of it (lists, tuples, dicts, a few levels down), may share
    ``array``'s data."""
    if isinstance(v, np.ndarray):
        return np.may_share_memory(v, array)
    if depth and isinstance(v, (list, tuple)):
        return any(_shares_data(item, array, depth - 1) for item in v)
    if depth and isinstance(v, dict):
        return any(_shares_data(item, array, depth - 1) for item in v.values())
    if depth and isinstance(v, types.FunctionType):  # (the globals it reads: a helper's G)
        return any(_shares_data(item, array, depth - 1) for item in function_reads(v))
    return False


def diagonal_index(a):
    """The index of the elements ``np.fill_diagonal(a, v)`` writes (without ``wrap``), so
    that the call becomes the element store ``a[diagonal_index(a)] = v``."""
    shape = np.shape(a)
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    k = np.arange(min(shape))
    return (k,) * len(shape)


def written_adjoint(g, ans):
    """``g``, the adjoint of the values a store wrote into ``ans``, or zero when ``ans`` is an
    integer or boolean array: numpy cast the values to its dtype (``a[0] = 2.7`` stores 2),
    which is locally constant."""
    if isinstance(ans, np.ndarray) and ans.dtype.kind in "biu":
        return ZERO
    return g


def last_writes(g, index):
    """``g[index]`` as the adjoint of the values a store ``x[index] = v`` wrote: where a
    fancy index repeats a position, numpy keeps the last write, so only it gets ``g``."""
    if isinstance(g, (_generic, float, int, complex)) and not is_zero(g):
        g = np.asarray(g)  # of a 0-d array (a[...] = v, a[()] = v)
    if is_zero(g) or not (isinstance(g, np.ndarray) or _is_recording_array(g)):
        return part(g, index)
    written = g[index]
    if _is_simple_index(index):
        return written
    return np.where(last_write_mask(np.shape(g), index), written, 0.0)


def _is_recording_array(g) -> bool:
    """An array-like that records numpy calls on it (a Tensor of the facade running a vjp
    with ``create_graph=True``): not a container to copy item by item."""
    return not isinstance(g, (list, tuple, dict, np.ndarray)) and \
        hasattr(type(g), "__array_ufunc__") and hasattr(g, "shape")


def last_write_mask(shape, index):
    """For ``x[index]`` with ``x`` of ``shape``: True where a position is written last."""
    positions = np.arange(int(np.prod(shape))).reshape(shape)[index]
    flat = np.ravel(positions)
    _, last_from_end = np.unique(flat[::-1], return_index=True)
    keep = np.zeros(flat.size, dtype=bool)
    keep[flat.size - 1 - last_from_end] = True
    return np.reshape(keep, np.shape(positions))


# -- 'with' blocks in differentiated code ---------------------------------------------------
# desugar flattens ``with cm as v: body`` to ``v = enter_context(cm, where)``, body,
# ``exit_context(cm)``, so the passes see plain statements; the forward sweep regroups them
# into ``with managed(cm, where) as v:`` so that the manager also exits on an exception.
def enter_context(manager, where: str = ""):
    return manager.__enter__()


def exit_context(manager) -> None:
    manager.__exit__(None, None, None)


class managed:
    """``manager`` as a context manager that may not swallow an exception: the statements
    after the one that raised did not run, and the backward sweep cannot know which."""

    def __init__(self, manager, where: str = ""):
        self.manager, self.where = manager, where
        # a Catching manager (or, in a generated sweep differentiated again, this wrapper of
        # one) suppresses an exception after which the statements that ran are known
        self.records_exceptions = isinstance(manager, Catching) or getattr(
            manager, "records_exceptions", False)

    def __enter__(self):
        return self.manager.__enter__()

    def __exit__(self, kind, exc, tb):
        swallowed = self.manager.__exit__(kind, exc, tb)
        if self.records_exceptions:  # one statement of a try body: what ran is recorded
            return swallowed
        if swallowed and exc is not None:
            raise UnsupportedSyntaxError.from_message(
                f"{self.where}: the context manager suppressed a {kind.__name__} raised in "
                f"its body, part-way through differentiated code; srcgrad cannot reverse "
                f"statements that ran only in part. Catch the exception outside the "
                f"differentiated function, or use try/except inside it.") from exc
        return False


_INPLACE_OPERATORS = ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                      "__imod__", "__ipow__", "__imatmul__", "__iand__", "__ior__", "__ixor__",
                      "__ilshift__", "__irshift__")


def updated_in_place(value) -> bool:
    """Whether ``p op= e`` in a helper changes the caller's ``value`` itself (an array, a
    list: it has in-place operators) rather than binding the helper's ``p`` to a new value
    (a number, a tuple): what the call site takes back (transforms/desugar.write_back)."""
    kind = type(value)
    return any(hasattr(kind, name) for name in _INPLACE_OPERATORS)


# -- try statements (transforms/trycatch.py) --------------------------------------------------
class Catching:
    """The context manager around one statement of a ``try`` body: an exception of the
    handled ``types`` is recorded (``ok``, ``error``) and suppressed, so that the statements
    after it do not run and the backward sweep knows which did."""

    __slots__ = ("types", "ok", "error")

    def __init__(self, types):
        self.types, self.ok, self.error = types, True, None

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None and isinstance(exc, self.types):
            self.ok, self.error = False, exc
            return True
        return False


class TryExit(BaseException):
    """``return``/``break``/``continue`` leaving a ``try`` body, raised there in generated
    code so that it ends the body like an exception (transforms/trycatch.py). ``owner``
    names the try statement it leaves: a try nested in its body passes it on."""

    def __init__(self, kind: str, owner: str = ""):
        super().__init__(kind)
        self.kind, self.owner = kind, owner


def try_exit(catcher, owner: str = ""):
    """``'return'``, ``'break'`` or ``'continue'`` when that left the try body ``owner``
    names, else None."""
    error = catcher.error
    return error.kind if isinstance(error, TryExit) and error.owner == owner else None


def caught(catcher, *types) -> bool:
    """Whether an ``except`` clause naming ``types`` handles what ``catcher`` recorded (a
    ``return``/``break``/``continue`` leaving the body is no exception to it)."""
    error = catcher.error
    return isinstance(error, exception_types(*types)) and not isinstance(error, TryExit)


def exception_types(*types) -> tuple:
    """The classes an ``except`` clause names, as one flat tuple."""
    out = []
    for t in types:
        out.extend(exception_types(*t) if isinstance(t, tuple) else [t])
    return tuple(out)


def enter_guarded(manager):
    """``with manager`` in a try body: its ``__enter__`` (``exit_guarded`` exits it)."""
    return manager.__enter__()


def exit_guarded(manager, catcher) -> bool:
    """The exit of a ``with`` block in a try body, whose statements ``catcher`` protected:
    the manager sees the exception they raised, and True when there was none or the manager
    suppressed it (a return/break/continue leaving the block exits it as no exception)."""
    error = catcher.error
    if catcher.ok or isinstance(error, TryExit):
        manager.__exit__(None, None, None)
        return catcher.ok
    return bool(manager.__exit__(type(error), error, error.__traceback__))


def try_begin(catcher) -> None:
    """Marks where a ``try`` body starts until the statements in it are protected."""


def try_end(catcher) -> None:
    """Marks where a ``try`` body ends."""


# -- match statements -----------------------------------------------------------------------
def is_match_sequence(value) -> bool:
    """What a sequence pattern ``case [a, b]:`` matches (not str, bytes, nor an array)."""
    return isinstance(value, collections.abc.Sequence) \
        and not isinstance(value, (str, bytes, bytearray))


def is_match_mapping(value) -> bool:
    return isinstance(value, collections.abc.Mapping)


index_slice = slice  # ``np.r_[a:b]`` in normalized code: the slice object, built by a call


def index_concat(maker, items):
    """``maker[items]`` for numpy's index-tricks concatenators (``np.r_``, ``np.c_``): what
    the subscript becomes in normalized code, so that it has a derivative rule."""
    value = maker[items]
    if isinstance(value, np.matrix):
        raise UnsupportedFeatureError(
            "the 'r'/'c' directives of np.r_ make an np.matrix, which srcgrad does not "
            "differentiate (its '*' is a matrix product); use np.atleast_2d or reshape")
    return value


# -- lean generated code (issue 11) ------------------------------------------------------------
# (shape, id(dtype)) -> (dtype, stand-in): read-only, so one can be shared; keyed by the
# dtype's id, whose hash costs more than the rest of the lookup, and checked to be that dtype
_STAND_INS: dict = {}
_STAND_IN_LIMIT = 1024  # distinct shapes kept; beyond that, stand-ins are made each time


def shape_like(x):
    """What a backward sweep that reads ``x`` only for its shape and dtype saves instead of
    ``x``: a read-only array of that shape and dtype whose elements all share one buffer
    element (a few bytes, whatever the shape), so that ``x`` itself is freed as soon as
    nothing else holds it, however small. Other values are returned unchanged; a ``Probe``
    gives the stand-in of the array it describes."""
    if type(x) is _ndarray:
        dtype = x.dtype
        kept = _STAND_INS.get((x.shape, id(dtype)))
        if kept is not None and kept[0] is dtype:
            return kept[1]
        return _stand_in(x.shape, dtype)
    if type(x) is Probe:  # (of a number: its one element, of the number's type)
        return _stand_in(x.shape, x.sample.dtype) if x.shape else x.sample
    return x


def _stand_in(shape, dtype):
    key = (shape, id(dtype))
    kept = _STAND_INS.get(key)
    if kept is not None and kept[0] is dtype:
        return kept[1]
    one = np.zeros(1, dtype)
    one.flags.writeable = False
    stand_in = _ndarray(shape, dtype, one, 0, (0,) * len(shape))
    if len(_STAND_INS) < _STAND_IN_LIMIT:
        _STAND_INS[key] = (dtype, stand_in)
    return stand_in


# -- backward loops of products by a constant (transforms/scaling_loops.py) --------------------
_SCALED_AT_ONCE = (float, complex, _float64, np.complex128)
_TINY = sys.float_info.min  # the smallest normal float64


def scaled_repeatedly(g, c, n):
    """``g`` multiplied ``n`` times by the number ``c``, as a backward loop whose body is
    ``g = g * c`` computes it: for a float64 or complex128 ``g`` (number or array) one
    product by ``c ** n`` when that power is a normal float (the repeated product rounds at
    every step; this one rounds twice); otherwise, or for other types and dtypes (whose
    product would round ``c ** n`` to their own precision), the loop itself."""
    if n == 1:
        return g * c
    if n <= 0:
        return g
    kind = type(g)
    if kind in _SCALED_AT_ONCE or kind is _ndarray and g.dtype.char in "dD":
        try:
            power = float(c) ** int(n)  # (a numpy integer would make it a numpy float)
        except OverflowError:
            power = math.inf
        if _TINY <= abs(power) < math.inf:
            return g * power
    for _ in range(n):
        g = g * c
    return g


# -- values nobody reads (transforms/dead_values.py) -------------------------------------------

class Probe(NamedTuple):
    """What the forward sweep of a ``grad`` keeps of a value that only feeds its discarded
    result, or the shape the backward sweep reads: the shape, one element computed like the
    value's first (so of its dtype), and how to compute the whole value if something needs
    it after all. It never leaves the generated sweeps."""

    sample: Any
    shape: tuple
    fn: Any
    args: tuple


_PROBED = 4096  # elements: smaller results are computed, as cheap as probing them
_np_sum, _np_mean, _new_probe = np.sum, np.mean, tuple.__new__


def probe(fn, *args):
    """``fn(*args)`` for an elementwise ``fn`` (an arithmetic operator, a numpy ufunc) or
    ``np.sum``/``np.mean`` without an axis, as a ``Probe`` when its operands are numpy
    arrays, probes and numbers and the result is large; else computed (operands that are
    probes first)."""
    if (fn is _np_sum or fn is _np_mean) and len(args) == 1 and type(args[0]) is _ndarray \
            and args[0].dtype.kind in "fc":
        # (of any size: a reduction costs ~2 us and ~1 kB of numpy's temporaries even on a
        # few elements; a float array's sum and mean are numbers of its dtype)
        return _new_probe(Probe, (args[0].dtype.type(0), (), fn, args))
    for a in args:  # (the common case first: small operands, computed at once)
        if type(a) is Probe or type(a) is _ndarray and a.size >= _PROBED:
            break
    else:
        return fn(*args)
    samples, shapes = [], []
    for a in args:
        t = type(a)
        if t is Probe:
            samples.append(a.sample)
            shapes.append(a.shape)
        elif t is _ndarray and a.dtype.kind in "biufc":
            samples.append(a[(slice(0, 1),) * a.ndim])  # (empty if a is: its dtype counts)
            shapes.append(a.shape)
        elif t in (float, int, bool, complex) or isinstance(a, (np.number, np.bool_)):
            samples.append(a)
            shapes.append(())
        else:
            return fn(*[computed(a) for a in args])
    shape = () if fn is np.sum or fn is np.mean else np.broadcast_shapes(*shapes)
    if math.prod(shape if shape else shapes[0]) < _PROBED:
        return fn(*[computed(a) for a in args])
    return Probe(fn(*samples), shape, fn, args)


def computed(value):
    """The value a ``Probe`` describes, computed; other values as they are."""
    if type(value) is Probe:
        return value.fn(*[computed(a) for a in value.args])
    return value


def probed_result(value):
    """A function's result as ``grad`` sees it in a sweep that does not compute it: for a
    probe of a number (``np.sum`` of an array), its one element, of the type and dtype the
    result has; other values (a probe of an array included, which grad then refuses for
    its shape) computed."""
    if type(value) is Probe and not value.shape:
        return value.sample
    return computed(value)


# -- shapes without values, in flattened gradient wrappers (transforms/flat_shapes.py) ---------
# function -> how many operands its fast path takes: the arithmetic operators, and the ufuncs
# with a float64 loop (so float64 operands pass), added when first seen (-1: none)
_SHAPE_OPS: dict = {_operator.add: 2, _operator.sub: 2, _operator.mul: 2,
                    _operator.truediv: 2, _operator.pow: 2, _operator.neg: 1}
_F64_STAND_INS: dict = {}  # shape -> the float64 stand-in of that shape


def _shape_arity(fn) -> int:
    n = _SHAPE_OPS.get(fn)
    if n is None:
        n = -1
        if type(fn) is np.ufunc and fn.nout == 1 and fn.signature is None \
                and any(t.startswith("d" * fn.nin + "->") for t in fn.types):
            n = fn.nin
        if len(_SHAPE_OPS) < _STAND_IN_LIMIT:
            _SHAPE_OPS[fn] = n
    return n


def stand_in_of(fn, *args):
    """``shape_like(fn(*args))`` for a value read only for its shape (and, made by ``np.sum``
    or ``np.mean`` without an axis, by ``grad_seed``): ``fn`` an arithmetic operator or a
    numpy ufunc, of float64 arrays and real numbers, is not computed, its result's shape
    being the operands' broadcast shape (a stand-in of float64 dtype: nothing reads the
    dtype); the sum or mean of a real or complex array is a zero of its dtype (what
    ``grad_seed`` reads: a number). Anything else is computed, operands that are stand-ins
    included (only the result's shape is read). Floating-point warnings of a value not
    computed are not raised."""
    n = _SHAPE_OPS.get(fn)  # (inlined calls: this runs once per value not computed)
    if n is None:
        n = _shape_arity(fn)
    if n != len(args):
        if (fn is _np_sum or fn is _np_mean) and n == -1 and len(args) == 1 \
                and type(args[0]) is _ndarray and args[0].dtype.kind in "fc":
            return args[0].dtype.type(0)
        return shape_like(fn(*args))
    shape = None
    for a in args:
        t = type(a)
        if t is _ndarray:
            if a.dtype is not _FLOAT64:
                return shape_like(fn(*args))
            if shape is None or shape == a.shape:
                shape = a.shape
            else:  # (raises numpy's ValueError when the operation would)
                shape = np.broadcast_shapes(shape, a.shape)
        elif t is not float and t is not _float64 and not promotes_plainly(a):
            # (Python and numpy floats, the commonest: no call)
            return shape_like(fn(*args))
    if shape is None:  # (numbers only: computed, as cheap)
        return shape_like(fn(*args))
    if not shape:  # (0-d arrays give a number)
        return _FLOAT64.type(0.0)
    kept = _F64_STAND_INS.get(shape)
    if kept is None:
        kept = _stand_in(shape, _FLOAT64)
        if len(_F64_STAND_INS) < _STAND_IN_LIMIT:
            _F64_STAND_INS[shape] = kept
    return kept


# -- registered vector spaces (vspace.py): the hooks above call these ----------------------
# Only objects of a class given to srcgrad.register_vspace reach them; everything else keeps
# the paths above.
def vspace_add(a, b):
    """``a + b`` of two contributions to the derivative of an object of a registered class
    (neither is the lazy zero): the class's registered ``add``."""
    space = space_of(a) or space_of(b)
    if type(a) is not type(b):
        _refuse_vspace_mismatch(space.cls, b if type(a) is space.cls else a)
    return space.add(a, b)


def vspace_densify(g, x):
    """``densify`` where ``g`` or ``x`` is an object of a registered class (``g`` is not the
    lazy zero: that became ``zeros(x)``): an object of ``x``'s class passes as it is."""
    if type(g) is type(x):
        return g
    if space_of(x) is None and is_zero(x):  # a lazy-zero accumulator's cotangent
        return g
    space = space_of(x)
    if space is None:
        raise UnsupportedFeatureError(
            f"a derivative with respect to a {type(x).__name__} came out as an object of "
            f"{type(g).__name__}, a registered vector space: a derivative rule returned it "
            f"for an argument that is not one. Return a {type(x).__name__} there.")
    _refuse_vspace_mismatch(space.cls, g)


def _refuse_vspace_mismatch(cls: type, other) -> None:
    what = "its attributes' derivatives" if isinstance(other, dict) else \
        f"a {type(other).__name__}"
    raise UnsupportedFeatureError(
        f"a derivative with respect to an object of {cls.__qualname__} (a registered vector "
        f"space) came out as {what}: the derivative rules it flows through must return "
        f"{cls.__qualname__} objects for it (their vjp's cotangent, their jvp's tangent), "
        f"built with the class's own operations.")


def refuse_vspace_attribute(obj, name: str) -> None:
    """Raise for an attribute of an object of a registered class read in differentiated code
    where a derivative reaches it: its derivative is an object of the class, which only the
    class's rules can build from attribute derivatives."""
    cls = type(obj).__qualname__
    _refuse_vspace_use(f"reading the attribute '{name}' of", cls,
                       f"srcgrad cannot turn derivatives of its attributes into a {cls} object",
                       f"a function or method that has a derivative rule "
                       f"(@srcgrad.rule({cls}.method)) returning {cls} cotangents")


def refuse_vspace_operator(value) -> None:
    """Raise for an arithmetic operator whose derivative met an object of a registered class:
    srcgrad's operator rules assume numbers and arrays."""
    cls = type(value).__qualname__
    _refuse_vspace_use("an arithmetic operator applied to", cls,
                       f"srcgrad's rules for operators assume numbers and arrays, and would "
                       f"run {cls}'s own operators on its derivatives",
                       "a function with a derivative rule (@srcgrad.rule(...))")


def _refuse_vspace_use(what: str, cls: str, why: str, instead: str) -> None:
    raise UnsupportedFeatureError(
        f"{what} an object of {cls}, a registered vector space (srcgrad.register_vspace), in "
        f"differentiated code: {why}. Compute with it in {instead}.")
