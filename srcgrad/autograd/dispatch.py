"""Running registry rules on Tensors and recording them: the forward half of the facade.

Nothing here knows a derivative: an op is recorded by keeping what ``backward`` needs to call
its registry rule's ``vjp`` later.

How an op is recorded
---------------------
An op is an ``ops.Op`` (``ops.OPS["exp"]``, or ``op_for(np.exp)`` for any numpy function with
a rule). Call one of:

``apply(op, args, kw=NO_KWARGS, cls=None, view_of=None) -> Tensor``
    the general case: runs ``rule.fn(*raw_args, **kw)`` (``raw_args`` are the numpy data of
    the Tensors in ``args``; numbers, lists and numpy values pass through). When grad mode is
    on, the result is a float and some argument requires grad, the returned Tensor gets a
    graph node (``grad_fn``) of class ``cls`` (default ``op.cls``, e.g. ``ExpBackward0``)
    holding the rule, the arguments, their raw data, ``kw`` and the result. ``view_of`` marks
    the result as a view of that tensor (it shares its version counter).
``unary(op, a, cls=None)`` and ``binary(op, a, b, cls=None)``
    the fast paths of an elementwise function of one tensor and of ``a <op> b`` (one of them
    may be a Python number); same result as ``apply``.
``matmul(a, b)`` and ``power(a, b)``
    ``binary`` with PyTorch's node name for the operand kinds (``MmBackward0``...).
``call_numpy(func, args, kwargs, differentiable) -> Any``
    a numpy function called on Tensors (``Tensor.__array_ufunc__``/``__array_function__``):
    recorded through ``func``'s rule when it has one, else run on raw data; a missing rule
    raises ``MissingRuleError`` when a gradient would be needed.

Each returns a new Tensor that owns its result. ``wrap(data)`` makes a Tensor with no history
and ``raw_data(x)`` takes the numpy data back out.

The Tensor class is defined in ``srcgrad._tensor``, above this module: it hands the class over
with ``bind(Tensor, dtypes)`` when it is imported, and the modules between the two
(``engine``, ``function``, ``backward_source``) read it as ``dispatch.Tensor``.
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Iterable

import numpy as np

from ..errors import MissingRuleError
from ..rules import is_nondifferentiable, lookup, rule_name
from . import graph, specialize
from .grad_mode import STATE as _STATE
from .graph import node_class
from .ops import OPS, Op, promote_types

__all__ = ["ADD", "DIV", "MUL", "NONDIFFERENTIABLE_UFUNCS", "NO_INDEX", "NO_KWARGS", "RSUB_NODE",
           "STRUCTURAL_FUNCTIONS", "SUB", "Meta", "NodeHooks", "Tensor", "apply", "binary", "bind",
           "broadcast_error", "call_numpy", "index_error", "index_node", "matmul", "op_for",
           "power", "raw_data", "raw_index", "strip_tensors", "unary", "wrap"]

Tensor: Any = None  # srcgrad._tensor.Tensor, set by bind()
SUPPORTED_DTYPES: frozenset = frozenset()

_ndarray = np.ndarray
_asarray = np.asarray
_new = object.__new__
NO_KWARGS: dict = {}
_F32 = np.dtype(np.float32)


def bind(tensor_class: type, dtypes: Iterable) -> None:
    """Called once by ``srcgrad._tensor``: the class of the tensors made here, and the numpy
    dtypes they can hold."""
    global Tensor, SUPPORTED_DTYPES
    Tensor = tensor_class
    SUPPORTED_DTYPES = frozenset(dtypes)
    graph.bind(tensor_class)


# --------------------------------------------------------------------------- construction


def wrap(data: np.ndarray, cls: type | None = None) -> "Tensor":
    """A Tensor (no history) around ``data``, which it owns from now on."""
    t = _new(cls or Tensor)
    t._data = data
    t._rg = False
    t.grad_fn = None
    t._grad = None
    t._vc = [0]
    t._meta = None
    return t


def strip_tensors(data: Any) -> Any:
    """Nested lists with each Tensor replaced by its data (``torch.tensor([t1, t2])``)."""
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [strip_tensors(x) for x in data]
    return data


# --------------------------------------------------------------------------- recording


NO_INDEX = object()
"""``Meta.index`` of a view that is not ``base[index]`` (reshape, transpose...)."""


class Meta:
    """Rarely used per-tensor state: leaf hooks, the base (and index) of a view, how to make
    the view again from its base, and the live views of this tensor."""

    __slots__ = ("hooks", "base", "index", "remake", "views")

    def __init__(self):
        self.hooks = None
        self.base = None
        self.index = NO_INDEX
        self.remake = None  # (op, arguments after the base, keywords, node class)
        self.views = None  # the live views made of this tensor (a WeakSet)


def _register_view(out: "Tensor", base: "Tensor", op: Op, rest: tuple, kw: dict,
                   cls: type | None) -> None:
    """Mark ``out`` as a view of ``base`` when numpy made it one (it shares memory): an
    in-place update of ``base`` then gives ``out`` a new history, as PyTorch does."""
    if not np.may_share_memory(out._data, base._data):
        return
    if out._meta is None:
        out._meta = Meta()
    out._meta.base = base
    out._meta.remake = (op, rest, kw, cls)
    meta = base._meta
    if meta is None:
        meta = base._meta = Meta()
    if meta.views is None:
        meta.views = weakref.WeakSet()  # (dead views leave it: x[i] in a long loop)
    meta.views.add(out)


class NodeHooks:
    """Tensor hooks and retain_grad of a non-leaf tensor, kept on the node that made it."""

    __slots__ = ("pre", "retain")

    def __init__(self):
        self.pre = {}
        self.retain = None


def _saved_versions(op: Op, args: tuple, out: "Tensor") -> tuple | None:
    """(tensor, counter, version) of each argument the vjp reads, and of the output."""
    reads, reads_ans = op.reads
    saved = []
    for i in reads:
        if i < len(args):
            a = args[i]
            if isinstance(a, Tensor):
                saved.append((a, a._vc, a._vc[0]))
            elif isinstance(a, (list, tuple)):
                saved.extend((t, t._vc, t._vc[0]) for t in a if isinstance(t, Tensor))
    if reads_ans:
        saved.append((None, out._vc, 0))
    return tuple(saved) or None


def _edges(rule, args: tuple) -> list:
    """(vjp output index, item index or None, target) for each input that requires grad."""
    edges = []
    for j, pos in enumerate(rule.diff_args):
        if pos >= len(args):
            continue
        a = args[pos]
        if isinstance(a, Tensor):
            if a._rg:
                edges.append((j, None, a.grad_fn or a))
        elif isinstance(a, (list, tuple)):
            for k, t in enumerate(a):
                if isinstance(t, Tensor) and t._rg:
                    edges.append((j, k, t.grad_fn or t))
    return edges


def _any_requires_grad(args: Iterable) -> bool:
    for a in args:
        if isinstance(a, Tensor):
            if a._rg:
                return True
        elif isinstance(a, (list, tuple)) and _any_requires_grad(a):
            return True
    return False


def raw_data(a: Any) -> Any:
    """The numpy data of a Tensor, or of the Tensors in a list or tuple; anything else as is."""
    if isinstance(a, Tensor):
        return a._data
    if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
        items = [raw_data(x) for x in a]
        return type(a)(items) if type(a) in (list, tuple) else items
    return a


def _record(op: Op, cls: type, rule, args: tuple, raw: tuple, kw: dict, ans: np.ndarray,
            out: "Tensor") -> None:
    """Attach a node of class ``cls`` running ``rule`` to the fresh output ``out``."""
    node = _new(cls)
    node.rule = rule
    node.args = args
    node.raw = raw
    node.kw = kw
    node.ans = ans
    node.hooks = None
    node.edges = _edges(rule, args)
    needed = tuple(any(e[0] == j for e in node.edges) for j in range(len(rule.diff_args)))
    node.pullback = _pullback(op, rule, needed)
    node.vers = _saved_versions(op, args, out) if cls.saves else None
    out.grad_fn = node
    out._rg = True


def apply(op: Op, args: tuple, kw: dict = NO_KWARGS, cls: type | None = None,
          view_of: "Tensor | None" = None) -> "Tensor":
    """Run ``op``'s rule on the raw data of ``args`` and record it when a gradient is needed."""
    a = args[0]
    if len(args) == 1 and isinstance(a, Tensor):
        return _apply1(op, a, kw, cls, view_of)
    rule = op.rule or op.resolve()
    raw = tuple(raw_data(a) for a in args)
    ans = rule.fn(*raw, **kw)
    if type(ans) is not _ndarray:
        ans = _asarray(ans)
    out = wrap(ans)
    if view_of is not None:
        out._vc = view_of._vc
    if _STATE.enabled and ans.dtype.kind in "fc" and _any_requires_grad(args):
        _record(op, cls or op.cls, rule, args, raw, kw, ans, out)
    if view_of is not None:
        _register_view(out, view_of, op, args[1:], kw, cls)
    return out


def _apply1(op: Op, a: "Tensor", kw: dict, cls: type | None, view_of: "Tensor | None"):
    """``apply`` of a rule whose only positional argument is the tensor ``a``."""
    rule = op.rule or op.resolve()
    ad = a._data
    ans = rule.fn(ad, **kw) if kw else rule.fn(ad)
    if type(ans) is not _ndarray:
        ans = _asarray(ans)
    out = _new(Tensor)
    out._data = ans
    out._grad = None
    out._vc = [0] if view_of is None else view_of._vc
    out._meta = None
    if a._rg and _STATE.enabled and ans.dtype.kind in "fc":
        cls = cls or op.cls
        node = _new(cls)
        node.rule = rule
        node.pullback = rule.vjp
        node.args = (a,)
        node.raw = (ad,)
        node.kw = kw
        node.ans = ans
        node.hooks = None
        node.edges = [(0, None, a.grad_fn or a)]
        node.vers = _saved_versions(op, node.args, out) if cls.saves else None
        out.grad_fn = node
        out._rg = True
    else:
        out.grad_fn = None
        out._rg = False
    if view_of is not None:
        _register_view(out, view_of, op, (), kw, cls)
    return out


def unary(op: Op, a: "Tensor", cls: type | None = None) -> "Tensor":
    """Fast path of an elementwise function of one tensor."""
    rule = op.rule or op.resolve()
    ad = a._data
    ans = rule.fn(ad)
    if type(ans) is not _ndarray:
        ans = _asarray(ans)
    if ans.dtype is not ad.dtype:
        ans = _fix_unary_dtype(ans, ad)
    out = _new(Tensor)
    out._data = ans
    out._grad = None
    out._vc = [0]
    out._meta = None
    if a._rg and _STATE.enabled:
        cls = cls or op.cls
        node = _new(cls)
        node.rule = rule
        node.pullback = rule.vjp
        node.args = (a,)
        node.raw = (ad,)
        node.kw = NO_KWARGS
        node.ans = ans
        node.hooks = None
        node.edges = [(0, None, a.grad_fn or a)]
        if cls.saves:
            saved = [(a, a._vc, a._vc[0])] if op.read0 else []
            if op.read_ans:
                saved.append((None, out._vc, 0))
            node.vers = saved or None
        else:
            node.vers = None
        out.grad_fn = node
        out._rg = True
    else:
        out.grad_fn = None
        out._rg = False
    return out


def _fix_unary_dtype(ans: np.ndarray, ad: np.ndarray) -> np.ndarray:
    if ans.dtype.kind == "f":
        if ad.dtype.kind == "f":
            return ans.astype(ad.dtype)
        if ans.dtype != _F32:
            return ans.astype(_F32)
    return ans


def binary(op: Op, a: Any, b: Any, cls: type | None = None) -> "Tensor":
    """Fast path of ``a <op> b`` where ``a`` or ``b`` is a Tensor (the other may be a number)."""
    ta = isinstance(a, Tensor)
    tb = isinstance(b, Tensor)
    ad = a._data if ta else a
    bd = b._data if tb else b
    rule = op.rule or op.resolve()
    try:
        ans = rule.fn(ad, bd)
    except ValueError:
        raise broadcast_error(op, ad, bd) from None
    if type(ans) is not _ndarray:
        ans = _asarray(ans)
    if ta:
        if ans.dtype is not ad.dtype or (tb and bd.dtype is not ad.dtype):
            ans = _fix_binary_dtype(op, ans, ad, bd)
    elif ans.dtype is not bd.dtype:
        ans = _fix_binary_dtype(op, ans, ad, bd)
    out = _new(Tensor)
    out._data = ans
    out._grad = None
    out._vc = [0]
    out._meta = None
    if _STATE.enabled and ((ta and a._rg) or (tb and b._rg)) and ans.dtype.kind in "fc":
        cls = cls or op.cls
        node = _new(cls)
        node.rule = rule
        node.args = (a, b)
        node.raw = (ad, bd)
        node.kw = NO_KWARGS
        node.ans = ans
        node.hooks = None
        if ta and a._rg:
            if tb and b._rg:
                node.edges = [(0, None, a.grad_fn or a), (1, None, b.grad_fn or b)]
                node.pullback = rule.vjp
                needed = 3
            else:
                node.edges = [(0, None, a.grad_fn or a)]
                node.pullback = op.pullbacks.get(_FIRST) or _pullback(op, rule, _FIRST)
                needed = 2
        else:
            node.edges = [(1, None, b.grad_fn or b)]
            node.pullback = op.pullbacks.get(_SECOND) or _pullback(op, rule, _SECOND)
            needed = 1
        if cls.saves:
            read0, read1, read_ans = op.binary_reads[needed]
            saved = []
            if ta and read0:
                saved.append((a, a._vc, a._vc[0]))
            if tb and read1:
                saved.append((b, b._vc, b._vc[0]))
            if read_ans:
                saved.append((None, out._vc, 0))
            node.vers = saved or None
        else:
            node.vers = None
        out.grad_fn = node
        out._rg = True
    else:
        out.grad_fn = None
        out._rg = False
    return out


_FIRST = (True, False)
_SECOND = (False, True)


def _pullback(op: Op, rule, needed: tuple) -> Any:
    """The rule's vjp, or its copy that computes only the ``needed`` cotangents (cached)."""
    if all(needed):
        return rule.vjp
    fn = op.pullbacks.get(needed)
    if fn is None:
        fn = op.pullbacks[needed] = specialize.pullback(rule.vjp, needed)
    return fn


def _fix_binary_dtype(op: Op, ans: np.ndarray, ad: Any, bd: Any) -> np.ndarray:
    want = promote_types(ad, bd, true_divide=op.label == "div")
    if op.label == "div" and want.kind in "biu":
        want = _F32
    if ans.dtype != want and ans.dtype.kind != "b":
        return ans.astype(want)
    return ans


def broadcast_error(op: Op, ad: Any, bd: Any) -> Exception:
    """PyTorch's message for operands whose shapes do not broadcast."""
    sa, sb = np.shape(ad), np.shape(bd)
    if op.label == "matmul":
        return _matmul_error(sa, sb)
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + tuple(sa)
    pb = (1,) * (n - len(sb)) + tuple(sb)
    for dim in range(n - 1, -1, -1):
        if pa[dim] != pb[dim] and pa[dim] != 1 and pb[dim] != 1:
            return RuntimeError(f"The size of tensor a ({pa[dim]}) must match the size of "
                                f"tensor b ({pb[dim]}) at non-singleton dimension {dim}")
    return RuntimeError(f"operands could not be broadcast together with shapes {sa} {sb}")


def _matmul_error(sa: tuple, sb: tuple) -> Exception:
    if len(sa) == 1 and len(sb) == 1:
        return RuntimeError(
            f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have "
            f"the same number of elements, but got {sa[0]} and {sb[0]} elements respectively")
    if len(sa) == 0 or len(sb) == 0:
        return RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                            f"{len(sa)}D and {len(sb)}D")
    a2 = sa if len(sa) > 1 else (1,) + tuple(sa)
    b2 = sb if len(sb) > 1 else tuple(sb) + (1,)
    if len(sa) == 2 and len(sb) == 1:
        return RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({sa[0]}x{sa[1]}), "
                            f"vec ({sb[0]})")
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                        f"({math.prod(a2[:-1])}x{a2[-1]} and {b2[-2]}x{b2[-1]})")


# The ops of Python's arithmetic operators, and the node of ``number - tensor``.
ADD, SUB, MUL, DIV, _POW, _MATMUL = (OPS[k] for k in ("add", "sub", "mul", "div", "pow",
                                                      "matmul"))
RSUB_NODE = node_class("RsubBackward1")
_POW1 = node_class("PowBackward1")
_POW2 = node_class("PowBackward2")
_MATMUL_NODES = {(2, 2): node_class("MmBackward0"), (2, 1): node_class("MvBackward0"),
                 (1, 1): node_class("DotBackward0"), (1, 2): node_class("SqueezeBackward4")}
_UNSAFE_VIEW = node_class("UnsafeViewBackward0", saves=True)  # stands for the batched matmul


def matmul(a: Any, b: Any) -> "Tensor":
    cls = _MATMUL_NODES.get((np.ndim(raw_data(a)), np.ndim(raw_data(b))), _UNSAFE_VIEW)
    return binary(_MATMUL, a, b, cls)


def power(a: Any, b: Any) -> "Tensor":
    if not isinstance(b, Tensor):
        return binary(_POW, a, b)
    return binary(_POW, a, b, _POW1 if isinstance(a, Tensor) else _POW2)


# --------------------------------------------------------------------------- numpy dispatch

_FUNC_OPS: dict[Any, Op] = {}
for _o in OPS.values():
    for _k in _o.keys:
        if not isinstance(_k, str):
            _FUNC_OPS.setdefault(_k, _o)
del _o, _k

# Functions and ufuncs that only inspect or produce non-differentiable values.
STRUCTURAL_FUNCTIONS = {
    np.shape, np.ndim, np.size, np.result_type, np.zeros_like, np.ones_like, np.empty_like,
    np.full_like, np.iscomplexobj, np.isrealobj, np.shares_memory, np.may_share_memory,
    np.array_equal, np.allclose, np.isclose, np.argmax, np.argmin, np.argsort, np.nonzero,
    np.count_nonzero, np.any, np.all, np.searchsorted, np.isscalar, np.copyto,
    np.broadcast_shapes}
NONDIFFERENTIABLE_UFUNCS = {
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.isnan, np.isinf,
    np.isfinite, np.sign, np.floor, np.ceil, np.trunc, np.rint, np.signbit, np.bitwise_and,
    np.bitwise_or, np.bitwise_xor, np.invert}


def op_for(func: Any) -> Op | None:
    """The op of numpy function ``func``, made on first use from its registry rule; None when
    it has no rule."""
    op = _FUNC_OPS.get(func)
    if op is None and lookup(func) is not None:
        name = getattr(func, "__name__", "Op")
        node = "".join(p[:1].upper() + p[1:] for p in name.split("_")) + "Backward0"
        op = Op(name, (func,), node)
        _FUNC_OPS[func] = op
    return op


def _wrap_result(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return wrap(value)
    if isinstance(value, np.generic) and value.dtype in SUPPORTED_DTYPES:
        return wrap(np.asarray(value))
    if isinstance(value, tuple):
        return type(value)(*map(_wrap_result, value)) if hasattr(value, "_fields") \
            else tuple(map(_wrap_result, value))
    if isinstance(value, list):
        return [_wrap_result(v) for v in value]
    return value


def _deep_raw(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_deep_raw(v) for v in value) if type(value) in (list, tuple) \
            else [_deep_raw(v) for v in value]
    if isinstance(value, dict):
        return {k: _deep_raw(v) for k, v in value.items()}
    return value


def call_numpy(func: Any, args: tuple, kwargs: dict, differentiable: bool) -> Any:
    """Numpy function ``func`` called on Tensors: recorded through its rule when it has one."""
    op = op_for(func) if differentiable else None
    if op is not None:
        return apply(op, tuple(args), kwargs or NO_KWARGS)
    needs_grad = (differentiable and _STATE.enabled
                  and (_any_requires_grad(args) or _any_requires_grad(kwargs.values())))
    if needs_grad and not is_nondifferentiable(func):
        raise MissingRuleError(rule_name(func))
    result = func(*_deep_raw(args), **_deep_raw(kwargs))
    return _wrap_result(result)


# --------------------------------------------------------------------------- indexing

_SELECT = node_class("SelectBackward0")
_SLICE = node_class("SliceBackward0")
_INDEX = node_class("IndexBackward0")
_ALIAS = node_class("AliasBackward0")
_UNSQUEEZE = node_class("UnsqueezeBackward0")


def raw_index(index: Any) -> tuple[Any, bool]:
    """The numpy index for a Tensor index, and whether it is advanced (copies, may repeat)."""
    if isinstance(index, Tensor):
        return index._data, True
    if isinstance(index, tuple):
        parts = [raw_index(i) for i in index]
        return tuple(p for p, _ in parts), any(adv for _, adv in parts)
    if isinstance(index, (list, np.ndarray)):
        return (np.asarray(strip_tensors(index)) if isinstance(index, list) else index), True
    if isinstance(index, bool):
        return index, True
    return index, False


def index_node(index: Any, advanced: bool) -> type:
    """PyTorch's node for basic indexing is the one of its last non-trivial step."""
    if advanced:
        return _INDEX
    parts = index if isinstance(index, tuple) else (index,)
    cls = None
    for p in parts:
        if p is None:
            cls = _UNSQUEEZE
        elif isinstance(p, slice):
            if p != slice(None) or len(parts) == 1:
                cls = _SLICE
        elif p is not Ellipsis:
            cls = _SELECT
    return cls or _ALIAS


def index_error(shape: tuple, index: Any) -> Exception | None:
    """PyTorch's IndexError for an integer index out of range of ``shape``, or None."""
    parts = index if isinstance(index, tuple) else (index,)
    dim = 0
    for p in parts:
        if p is Ellipsis:
            return None
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool) and dim < len(shape):
            if not -shape[dim] <= p < shape[dim]:
                return IndexError(f"index {p} is out of bounds for dimension {dim} with size "
                                  f"{shape[dim]}")
        if p is not None:
            dim += 1
    return None
