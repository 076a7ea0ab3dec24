"""Guarantees afterwards: in a ``grad`` backward sweep built for arguments of known ranks
and dtypes (api.LeanAdjoint's ``arg_facts``), a matrix product's cotangent helper or a
reduction ``_rt.unbroadcast`` whose operands are PROVEN plain matrices (or a bias and its
batch) is written as the one numpy operation the helper would run on them, and an
accumulator PROVEN to get contributions of its own dtype and shape is added to in place; all
else is unchanged.

Facts per argument: an exact ``np.ndarray`` of rank r, whether a dimension of it is 1
(``ArgFact``) and its dtype; a Python float; anything else is unknown. Each name gets one
abstract value per sweep (the join of everything assigned to it anywhere in that sweep, to a
fixed point): an exact ndarray of known rank whose dimensions are each 1, a symbol (an
argument's dimension, known not 1), "not 1" or unknown, and of a known dtype or not; a numpy
floating number of a known dtype; a Python int or float; or unknown. Dtypes are numpy's own
resolution (``ufunc.resolve_dtypes``: a Python number is weak, a 0-d array is not). The
backward sweep reads the forward one's values through the saved list, and through the
tape: a pop into a name gives a value the forward sweep pushed of that name, when every push
and pop is of a name (what reverse mode restores), else any value pushed; a tape read in any
other way gives unknown. Its seed is what ``api.grad_seed_of`` makes of the forward sweep's value
(a 0-d array of a numpy float32 or float64 value's dtype, 1.0 for a Python float). Broadcasting two dimensions known not to be 1 succeeded, so they are equal (the
result keeps the symbol); a dimension of unknown size against one not 1 gives that one.

Rewrites, each exactly the fast path of the helper it replaces (so the same bits):

- ``plain_matmul_left(g, x, y)`` -> ``g @ y.T`` (``plain_matmul_right``: ``x.T @ g``) when
  ``g``, ``x`` and ``y`` are exact 2-d ndarrays and both dimensions of the product are known
  not to be 1: a lean sweep's cotangent of ``x @ y`` has a shape the product broadcasts to
  (unreduced.py), which for a rank-2 ``g`` and such a product is the product's shape;
- ``_rt.unbroadcast(g, x)`` -> ``g`` (same ranks) or ``_rt.add_reduce(g, 0)`` (``g`` one rank
  more: ``np.add.reduce(g, axis=0)``) when both are exact ndarrays and no dimension of ``x``
  may be 1 (the two fast paths of ``runtime.unbroadcast``);
- ``b = b + c`` -> ``b += c`` when ``b`` is owned (``_owned_accumulators``: bound only to a
  number or to ``b + c``, read by nothing but these additions and the sweep's return) and
  every ``c`` added to it is an exact ndarray of one float dtype ``d`` and one shape of
  arguments' dimensions, with ``number + c`` and ``c + c`` of dtype ``d``: the first ``+=``
  on the number is ``number + c`` (a new array nothing else holds), every later one is
  ``np.add(b, c, out=b)``, the same bits as ``b + c`` into the same dtype and shape.

An operand of a matrix product that may be None is taken as not None: the forward sweep's
``x @ y`` would have raised.
"""
from __future__ import annotations

__all__ = ["ArgFact", "rank_candidates", "specialise_sweeps"]

import operator
from typing import NamedTuple

import gast
import numpy as np

from ..rules._helpers import expand_to, reduced_count
from ..rules.operators import plain_matmul_left, plain_matmul_right
from . import astutil as A


class ArgFact(NamedTuple):
    """An argument that is an exact ``np.ndarray``: its rank, and whether a dimension is 1."""
    ndim: int
    has_one: bool


class Val(NamedTuple):
    """An abstract value: ``kind`` 'nd' (exact ndarray, ``dims`` one fact per axis: 1, a
    symbol ('s', i, axis), 'nz' (not 1) or '?'), 'num' (a numpy floating scalar), 'int',
    'float', 'none' (only None) or '?'; ``none``: it may be None; ``dtype``: the numpy dtype
    of an 'nd' or 'num', or ``int``/``float`` for a Python number of those kinds, when known,
    else None."""
    kind: str
    dims: tuple | None
    none: bool
    dtype: np.dtype | None = None


TOP = Val("?", None, True)
NONE = Val("none", None, True)
INT = Val("int", None, False, int)  # (a Python int: weak in numpy's arithmetic, NEP 50)
FLOAT = Val("float", None, False, float)
SOME_INT = Val("int", None, False)  # (a Python int or a numpy integer: of rank 0)


def _nonone(d) -> bool:
    return d == "nz" or isinstance(d, tuple)


def _join_dim(a, b):
    if a == b:
        return a
    return "nz" if _nonone(a) and _nonone(b) else "?"


def join(a: Val, b: Val) -> Val:
    if a.kind == "none":
        return b._replace(none=True)
    if b.kind == "none":
        return a._replace(none=True)
    if a.kind != b.kind:
        return TOP
    none = a.none or b.none
    dtype = a.dtype if a.dtype == b.dtype else None
    if a.kind not in ("nd", "probe"):
        return Val(a.kind, None, none, dtype)
    if len(a.dims) != len(b.dims):
        return TOP
    return Val(a.kind, tuple(_join_dim(x, y) for x, y in zip(a.dims, b.dims)), none, dtype)


def _broadcast_dim(a, b):
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, tuple):
        return a  # (b is not 1 or may be 1: the broadcast succeeded, so the result is a)
    if isinstance(b, tuple):
        return b
    return "nz" if "nz" in (a, b) else "?"


_SCALAR_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


def _nd(dims: tuple, dtype: np.dtype | None = None) -> Val:
    """An exact ndarray of these dims; a 0-d result of numpy arithmetic is a numpy scalar
    (a 'num' when it is a float32 or float64 one)."""
    if dims:
        return Val("nd", dims, False, dtype)
    return Val("num", None, False, dtype) if dtype is not None and dtype in _SCALAR_DTYPES \
        else TOP  # (np.dtype(float) == None holds: None is checked first)


_OPERANDS = ("nd", "num", "int", "float")
# the ufunc each arithmetic operator calls on ndarrays (for the result's dtype)
_UFUNCS = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
           gast.Div: np.true_divide, gast.Pow: np.power, gast.MatMult: np.matmul,
           operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
           operator.truediv: np.true_divide, operator.pow: np.power,
           operator.neg: np.negative}


def result_dtype(ufunc, operands: list) -> np.dtype | None:
    """The dtype of ``ufunc`` applied to operands of these abstract values: numpy's own type
    resolution (a Python int or float is a weak scalar, NEP 50), or None when an operand's
    dtype is unknown or numpy resolves none."""
    if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or len(operands) != ufunc.nin:
        return None
    types = []
    for v in operands:
        if v.kind in ("nd", "num", "probe") and v.dtype is not None:
            types.append(v.dtype)
        elif v.kind in ("int", "float") and not v.none and v.dtype in (int, float):
            types.append(v.dtype)
        else:
            return None
    try:
        return ufunc.resolve_dtypes((*types, None))[-1]
    except (TypeError, ValueError):  # (numpy has no loop for them: the call would raise)
        return None


def arith(a: Val, b: Val, ufunc=None) -> Val:
    """An elementwise operation of two operands (neither may be None, nor a probe: see
    ``_Facts._runtime_call``), by ``ufunc`` (None: the result's dtype unknown)."""
    if a.none or b.none or a.kind not in _OPERANDS or b.kind not in _OPERANDS \
            or "nd" not in (a.kind, b.kind) and "num" not in (a.kind, b.kind):
        return TOP  # (Python numbers alone: not numpy's arithmetic)
    da = a.dims if a.kind == "nd" else ()
    db = b.dims if b.kind == "nd" else ()
    n = max(len(da), len(db))
    da, db = (1,) * (n - len(da)) + da, (1,) * (n - len(db)) + db
    return _nd(tuple(_broadcast_dim(x, y) for x, y in zip(da, db)),
               result_dtype(ufunc, [a, b]))


def _matrix(v: Val) -> Val | None:
    """``v`` as an exact 2-d ndarray (None dropped: see the module docstring), or None."""
    if v.kind == "nd" and len(v.dims) == 2:
        return v._replace(none=False)
    return None


class _Facts:
    """The abstract value of each name over a forward and a backward sweep."""

    def __init__(self, fwd: gast.FunctionDef, bwd: gast.FunctionDef, facts: tuple,
                 callees: dict, rt: str, tape: str, resolve):
        self.fwd, self.bwd, self.callees, self.rt, self.tape = fwd, bwd, callees, rt, tape
        self.resolve = resolve
        self.env: dict[str, Val] = {}
        self.tape_val = Val("none", None, True)
        self.tape_escapes = False
        self.fwd_env: dict | None = None  # (the forward sweep's, once at its fixed point)
        for i, (arg, fact) in enumerate(zip(fwd.args.args, facts)):
            if fact == "f":
                self.env[arg.id] = FLOAT
            elif fact:
                rank, dtype = fact if isinstance(fact, tuple) else (fact, "<f8")
                fact = ArgFact(abs(rank), rank < 0)
                dims = tuple("?" if fact.has_one else ("s", i, k) for k in range(fact.ndim))
                self.env[arg.id] = Val("nd", dims, False, np.dtype(dtype))
            else:
                self.env[arg.id] = TOP
        # the forward sweep's value, what grad's seed is made from (None: not returned yet)
        self.result: Val | None = None
        self.saved = self._saved_values()
        self.pops_by_name = self._pops_by_name()
        self.local = {n.id for f in (fwd, bwd) for n in gast.walk(f)
                      if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
        self.local |= {n.name for f in (fwd, bwd) for n in gast.walk(f)
                       if isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n is not f}

    def _is_pop(self, node) -> bool:
        return A.called_attr(node, self.tape) == "pop" and not node.args and not node.keywords

    def _pops_by_name(self) -> bool:
        """Whether every push is of a name and every pop assigned to a name pushed: the
        backward sweep restores each name to a value it held (what reverse mode is)."""
        pushed, popped = set(), set()
        for f in (self.fwd, self.bwd):
            for n in gast.walk(f):
                if A.called_attr(n, self.tape) == "push":
                    if len(n.args) != 1 or not isinstance(n.args[0], gast.Name) \
                            or f is self.bwd:
                        return False
                    pushed.add(n.args[0].id)
                elif isinstance(n, gast.Assign) and self._is_pop(n.value):
                    if len(n.targets) != 1 or not isinstance(n.targets[0], gast.Name):
                        return False
                    popped.add(n.targets[0].id)
        pops = sum(1 for f in (self.fwd, self.bwd) for n in gast.walk(f) if self._is_pop(n))
        assigned = sum(1 for f in (self.fwd, self.bwd) for n in gast.walk(f)
                       if isinstance(n, gast.Assign) and self._is_pop(n.value))
        return pops == assigned and popped <= pushed

    def _saved_values(self) -> list | None:
        """The forward sweep's saved list, when it returns ``value, [names...]`` once."""
        returns = [n for n in gast.walk(self.fwd) if isinstance(n, gast.Return)]
        if len(returns) != 1 or not isinstance(returns[0].value, gast.Tuple) \
                or len(returns[0].value.elts) != 2 \
                or not isinstance(returns[0].value.elts[1], (gast.List, gast.Tuple)):
            return None
        return returns[0].value.elts[1].elts

    def run(self) -> None:
        """Each sweep to its fixed point: the forward one, then the backward one, which
        reads it through the saved list and the tape."""
        fwd_env = dict(self.env)
        self.env = self._fixed_point(self.fwd, fwd_env)
        self.fwd_env = self.env
        self.env = self._fixed_point(self.bwd, {})

    def _fixed_point(self, f: gast.FunctionDef, env: dict) -> dict:
        self.env = env
        stored = {n.id for n in gast.walk(f)
                  if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        if f is self.bwd:
            stored |= {a.id for a in f.args.args}
        for _ in range(100):
            before = (dict(self.env), self.tape_val)
            self.handled: set[str] = set()
            if f is self.bwd and len(f.args.args) == 2:
                self._assign(f.args.args[1].id, seed_of(self.result))
            for s in f.body:
                self._stmt(s)
            for name in stored - self.handled:
                self.env[name] = TOP  # bound by something not modelled
            if self.tape_escapes:
                self.tape_val = TOP
            if (dict(self.env), self.tape_val) == before:
                return self.env
        raise RuntimeError("rank_facts: no fixed point")  # (a finite lattice: unreachable)

    def _assign(self, name: str, v: Val) -> None:
        self.handled.add(name)
        old = self.env.get(name)
        self.env[name] = v if old is None else join(old, v)

    def _stmt(self, s) -> None:
        for part in ("value", "test", "iter"):  # (a name an expression binds: ':=')
            if isinstance(getattr(s, part, None), gast.AST):
                self._unknown(getattr(s, part))
        if isinstance(s, gast.Assign) and len(s.targets) == 1:
            target = s.targets[0]
            if isinstance(target, gast.Name):
                if self.pops_by_name and self._is_pop(s.value) and self.fwd_env is not None \
                        and self.env is not self.fwd_env:
                    # a value this name held in the forward sweep
                    self._assign(target.id, TOP if self.tape_escapes
                                 else self.fwd_env.get(target.id, TOP))
                    return
                self._assign(target.id, self.value(s.value))
                return
            if isinstance(target, gast.Tuple) and all(isinstance(t, gast.Name)
                                                      for t in target.elts):
                self._unpack(target.elts, s.value)
                return
        if isinstance(s, gast.Expr):
            self.value(s.value)
            return
        if isinstance(s, gast.For):
            if isinstance(s.target, gast.Name) and isinstance(s.iter, gast.Call) \
                    and isinstance(s.iter.func, gast.Name) and s.iter.func.id == "range" \
                    and "range" not in self.local and self._builtin("range") is range:
                for a in s.iter.args + [k.value for k in s.iter.keywords]:
                    self.value(a)
                self._assign(s.target.id, INT)
            else:
                self.value(s.iter)
                self._unknown(s.target)
            for b in s.body + s.orelse:
                self._stmt(b)
            return
        if isinstance(s, (gast.While, gast.If)):
            self.value(s.test)
            for b in s.body + s.orelse:
                self._stmt(b)
            return
        if isinstance(s, gast.Return) and self.saved is not None and s.value is not None \
                and isinstance(s.value, gast.Tuple) and len(s.value.elts) == 2 \
                and getattr(s.value.elts[1], "elts", None) is self.saved:
            value = self.value(s.value.elts[0])
            self.result = value if self.result is None else join(self.result, value)
            for v in self.saved:  # (the tape handed to the backward sweep in the list)
                if not (isinstance(v, gast.Name) and v.id == self.tape):
                    self.value(v)
            return
        if isinstance(s, gast.Return):
            if s.value is not None:
                self.value(s.value)
            return
        if isinstance(s, gast.Delete) and all(isinstance(t, gast.Name) for t in s.targets):
            return
        for n in gast.walk(s):  # anything else: what it reads may escape (the tape)
            if isinstance(n, gast.Name) and n.id == self.tape:
                self.tape_escapes = True
        self._unknown(s)

    def _unknown(self, node) -> None:
        """Whatever ``node`` binds may be anything."""
        for n in gast.walk(node):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                self._assign(n.id, TOP)

    def _unpack(self, targets: list, value) -> None:
        if isinstance(value, gast.Name) and value.id == self.bwd.args.args[0].id \
                and self.saved is not None and len(self.saved) == len(targets) \
                and self.fwd_env is not None and self.env is not self.fwd_env:
            env = self.env
            values = []
            self.env = self.fwd_env  # (the saved list's values are the forward sweep's)
            try:
                values = [TOP if isinstance(v, gast.Name) and v.id == self.tape
                          else self.value(v) for v in self.saved]
            finally:
                self.env = env
            for t, v in zip(targets, values):
                self._assign(t.id, v)
            return
        self.value(value)  # (what it reads: the tape, escaping)
        for t in targets:
            self._assign(t.id, TOP)

    def value(self, node) -> Val:
        """The abstract value of expression ``node`` (the tape's uses recorded)."""
        if isinstance(node, gast.Name):
            if node.id == self.tape:
                self.tape_escapes = True  # (read other than by push and pop)
                return TOP
            return self.env.get(node.id, TOP)
        if isinstance(node, gast.Constant):
            v = node.value
            return NONE if v is None else FLOAT if type(v) is float \
                else INT if type(v) is int else TOP
        if isinstance(node, gast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(node.op, (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)):
                return arith(left, right, _UFUNCS[type(node.op)])
            if isinstance(node.op, gast.MatMult):
                x, y = _matrix(left), _matrix(right)
                return _nd((x.dims[0], y.dims[1]), result_dtype(np.matmul, [x, y])) \
                    if x and y else TOP
            return TOP
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
            v = self.value(node.operand)
            return v._replace(dtype=result_dtype(np.negative, [v])) \
                if v.kind == "nd" and not v.none else TOP
        if isinstance(node, gast.Subscript):
            v, index = self.value(node.value), self.value(node.slice)
            if v.kind == "nd" and not v.none and len(v.dims) >= 2 and index == INT:
                return _nd(v.dims[1:], v.dtype)
            return TOP
        if isinstance(node, gast.Call):
            return self._call(node)
        for n in gast.walk(node):
            if isinstance(n, gast.Name) and n.id == self.tape:
                self.tape_escapes = True
        return TOP

    def _call(self, call: gast.Call) -> Val:
        func = call.func
        method = A.called_attr(call, self.tape)
        if method is not None:
            if method == "pop" and not call.args and not call.keywords:
                return TOP if self.tape_escapes else self.tape_val
            if method == "push" and len(call.args) == 1 and not call.keywords:
                self.tape_val = join(self.tape_val, self.value(call.args[0]))
                return NONE
            self.tape_escapes = True  # (another method: what it does is not modelled)
            return TOP
        args = [self.value(a) for a in call.args]
        for k in call.keywords:
            self.value(k.value)
        if call.keywords:
            return TOP
        helper = A.called_attr(call, self.rt)
        if helper is not None:
            return self._runtime_call(helper, args, call)
        obj = self._callee(func)
        if obj is None:
            return TOP
        if obj is reduced_count and len(args) == 2:
            # (a number of rank 0: the sizes of numpy's arrays and numbers and of Python's
            # numbers are Python ints, another object's may not be)
            return INT if all(a.kind in ("nd", "num", "int", "float") and not a.none
                              for a in args) else SOME_INT
        if obj is expand_to and len(args) == 2 and args[1].kind == "nd" \
                and not args[1].none and args[1].dims:
            # (x's shape; the cotangent's dtype when it is an ndarray, a 0-d one included)
            g = args[0]
            return args[1]._replace(dtype=g.dtype if g.kind == "nd" and not g.none else None)
        if obj is plain_matmul_left or obj is plain_matmul_right:
            proved = self.product(args)
            if proved:  # (g @ y.T, x.T @ g)
                g, x, y = proved
                if obj is plain_matmul_left:
                    return x._replace(dtype=result_dtype(np.matmul, [g, y]))
                return y._replace(dtype=result_dtype(np.matmul, [x, g]))
            return TOP
        if isinstance(obj, np.ufunc) and obj.nin == 1 and obj.nout == 1 and len(args) == 1 \
                and args[0].kind == "nd" and not args[0].none and args[0].dims:
            # (an exact ndarray of the operand's shape)
            return args[0]._replace(dtype=result_dtype(obj, args))
        if (obj is np.sum or obj is np.mean) and len(args) == 1:
            return _float_total(args[0])
        return TOP

    def _runtime_call(self, attr: str, args: list, call: gast.Call) -> Val:
        if attr == "shape_like" and len(args) == 1:
            v = args[0]  # (a probe's stand-in: an exact ndarray of its shape)
            return v._replace(kind="nd") if v.kind in ("nd", "probe") and v.dims else \
                TOP if v.kind in ("nd", "probe") else v
        if attr == "probe" and len(args) >= 2:
            fn = self._callee(call.args[0])
            if (fn is np.sum or fn is np.mean) and len(args) == 2:
                return _float_total(args[1])  # (probed or computed: a number of that dtype)
            if not _elementwise(fn):
                return TOP
            # an elementwise operation, computed or as a Probe of its result's shape (an
            # operand that is a probe stands for an array of its shape)
            args = [a._replace(kind="nd") if a.kind == "probe" else a for a in args]
            ufunc = _UFUNCS.get(fn, fn)
            result = args[1]
            for a in args[2:]:
                result = arith(result, a)
            if len(args) == 2:
                result = result if result.kind == "nd" and not result.none else TOP
            if result.kind != "nd":
                return TOP
            return result._replace(kind="probe", dtype=result_dtype(ufunc, args[1:]))
        if attr == "probed_result" and len(args) == 1:
            return args[0] if args[0].kind in ("num", "float") and not args[0].none else TOP
        if attr == "times_unit" and len(args) == 2:  # (y itself only when of one * y's dtype)
            return arith(args[0], args[1], np.multiply)
        if attr == "seed_scalar" and len(args) >= 2:
            # the number g or its spread over x: taken as the spread (expand_to's value),
            # which is what the reads of it see (scalar_seed.py: only chains of elementwise
            # arithmetic inside shaped_like, whose result, the broadcast of the chain's
            # operands and x, of the spread's dtype by NEP 50, is the same either way)
            g, x = args[0], args[1]
            if x.kind == "nd" and not x.none and x.dims:
                return x._replace(dtype=g.dtype if g.kind in ("nd", "num") and not g.none
                                  else None)
            return TOP
        if attr == "shaped_like" and len(args) == 2:
            r, x = args  # (r broadcast to x's shape, keeping r's dtype)
            if r.kind in ("nd", "num") and not r.none and x.kind == "nd" and not x.none \
                    and x.dims:
                return arith(r, x._replace(dtype=None))._replace(dtype=r.dtype)
            return TOP
        if attr == "unbroadcast" and len(args) == 2:
            g, x = args
            if g.kind == "nd" and x.kind == "nd" and not (g.none or x.none) and x.dims:
                # (g itself or its sum over the first axis: g's dtype where that is proven)
                return x._replace(dtype=g.dtype if self.reduction(args) else None)
        return TOP

    def _builtin(self, name: str):
        try:
            return self.resolve(name)
        except (KeyError, AttributeError):
            return None

    def _callee(self, func):
        if isinstance(func, gast.Name):
            if func.id in self.local:
                return None
            return self.callees.get(func.id)
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                and func.value.id not in self.local and func.value.id not in self.callees:
            try:
                module = self.resolve(func.value.id)
            except (KeyError, AttributeError):
                return None
            if module is np:
                return getattr(np, func.attr, None)
        return None

    def product(self, args: list):
        """``(g, x, y)`` when ``plain_matmul_*(g, x, y)`` is proven to take its fast path."""
        if len(args) != 3:
            return None
        g, x, y = args
        x, y = _matrix(x), _matrix(y)
        if g.kind != "nd" or g.none or len(g.dims) != 2 or not x or not y:
            return None
        if not all(_nonone(d) for d in (x.dims[0], y.dims[1]) + g.dims):
            return None
        return g, x, y

    def in_place(self, sites: list) -> bool:
        """Whether every ``b = b + c`` of ``sites`` (one name's, starting from a number) may
        be ``b += c``: each ``c`` an exact ndarray of the same float dtype and the same shape
        (each dimension an argument's), so that ``b``, from its first ``+`` on an array of
        that shape and dtype, is what ``b + c`` would be. (A number plus ``c``, the first
        time, is ``b + c`` under ``+=`` too.)"""
        values = [self.value(_accumulation(s)) for s in sites]
        first = values[0]
        if first.kind != "nd" or first.none or not first.dims or first.dtype is None \
                or first.dtype.kind != "f" \
                or not all(isinstance(d, tuple) for d in first.dims):
            return False
        dtype = first.dtype
        if result_dtype(np.add, [Val("nd", first.dims, False, dtype)] * 2) != dtype \
                or result_dtype(np.add, [FLOAT, first]) != dtype \
                or result_dtype(np.add, [INT, first]) != dtype:
            return False
        return all(v.kind == "nd" and not v.none and v.dims == first.dims and v.dtype == dtype
                   for v in values)

    def reduction(self, args: list) -> str | None:
        """'same' or 'lead' when ``_rt.unbroadcast(g, x)`` is proven to return ``g`` or
        ``np.add.reduce(g, axis=0)``."""
        if len(args) != 2:
            return None
        g, x = args
        if g.kind != "nd" or x.kind != "nd" or g.none or x.none or not x.dims \
                or not all(_nonone(d) for d in x.dims + g.dims[-len(x.dims):]):
            return None
        if len(g.dims) == len(x.dims):
            return "same"
        return "lead" if len(g.dims) == len(x.dims) + 1 else None


def _accumulation(node, name: str | None = None):
    """``c`` when ``node`` is ``name = name + c`` (any name when None) with ``c`` not
    reading it, else None."""
    if isinstance(node, gast.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0], gast.Name) and isinstance(node.value, gast.BinOp) \
            and isinstance(node.value.op, gast.Add) and isinstance(node.value.left, gast.Name) \
            and node.value.left.id == node.targets[0].id \
            and (name is None or node.targets[0].id == name) \
            and node.targets[0].id not in A.names_read(node.value.right):
        return node.value.right
    return None


def _number_start(node, name: str) -> bool:
    """Whether ``node`` is ``name = <an int or float constant>``."""
    return isinstance(node, gast.Assign) and len(node.targets) == 1 \
        and isinstance(node.targets[0], gast.Name) and node.targets[0].id == name \
        and isinstance(node.value, gast.Constant) and type(node.value.value) in (int, float)


def _owned_accumulators(bwd: gast.FunctionDef, rt: str) -> dict[str, list]:
    """Per name of ``bwd`` bound only to a number constant (``b = 0.0``) or to ``b + c``, and
    read only as that ``b`` or as ``rt.densify(b, x)`` in the sweep's last statement (its
    return): the ``b = b + c`` statements. Such a name's array is made by its first ``+``
    and seen by nothing else until it is returned, so adding to it in place changes no value
    anything else reads."""
    nested = {n.id for d in gast.walk(bwd) if d is not bwd and isinstance(
        d, (gast.FunctionDef, gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
            gast.GeneratorExp)) for n in gast.walk(d) if isinstance(n, gast.Name)}
    nested |= {name for d in gast.walk(bwd) if isinstance(d, (gast.Global, gast.Nonlocal))
               for name in d.names}
    nested |= {a.id for a in bwd.args.args}
    sites: dict[str, list] = {}
    for node in gast.walk(bwd):
        if _accumulation(node) is not None:
            sites.setdefault(node.targets[0].id, []).append(node)
    returned = bwd.body[-1] if bwd.body and isinstance(bwd.body[-1], gast.Return) else None
    densified = [c.args[0] for c in gast.walk(returned) if A.called_attr(c, rt) == "densify"
                 and len(c.args) == 2 and not c.keywords] if returned else []
    owned = {}
    for name, found in sites.items():
        if name in nested:
            continue
        allowed_loads = {id(s.value.left) for s in found} \
            | {id(a) for a in densified if isinstance(a, gast.Name) and a.id == name}
        allowed_stores = {id(s.targets[0]) for s in found}
        ok = True
        for node in gast.walk(bwd):
            if isinstance(node, gast.Assign) and _number_start(node, name):
                allowed_stores.add(id(node.targets[0]))
        for node in gast.walk(bwd):
            if isinstance(node, gast.Name) and node.id == name:
                if isinstance(node.ctx, gast.Load) and id(node) not in allowed_loads \
                        or isinstance(node.ctx, gast.Store) and id(node) not in allowed_stores:
                    ok = False
                    break
        if ok:
            owned[name] = found
    return owned


def _float_total(v: Val) -> Val:
    """``np.sum(v)`` or ``np.mean(v)`` without an axis: for a float32 or float64 exact
    ndarray, a numpy number of its dtype (what ``runtime.probe`` samples too)."""
    if v.kind in ("nd", "probe") and not v.none and v.dims \
            and v.dtype is not None and v.dtype in (np.dtype(np.float64), np.dtype(np.float32)):
        return Val("num", None, False, v.dtype)
    return TOP


def seed_of(result: Val | None) -> Val:
    """What ``api.grad_seed_of`` makes of a value of ``result``: 1.0 for a Python float, a 0-d
    array of one of its dtype for a numpy float32 or float64 number."""
    if result is not None and not result.none:
        if result == FLOAT:
            return FLOAT
        # (`is not None` first: np.dtype(np.float64) == None holds, numpy reading None as
        # its default dtype)
        if result.kind == "num" and result.dtype is not None \
                and result.dtype in (np.dtype(np.float64), np.dtype(np.float32)):
            return Val("nd", (), False, result.dtype)
    return TOP


def _elementwise(fn) -> bool:
    """An arithmetic operator or a numpy ufunc of one result: of its operands' broadcast shape."""
    return fn in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
                  operator.neg) \
        or isinstance(fn, np.ufunc) and fn.nout == 1


def _transposed(node):
    return gast.copy_location(gast.Attribute(value=node, attr="T", ctx=gast.Load()), node)


class _Rewrite(gast.NodeTransformer):
    def __init__(self, facts: _Facts, in_place: set):
        self.facts = facts
        self.in_place = in_place  # (the ids of ``b = b + c`` statements to write ``b += c``)
        self.count = 0

    def visit_Assign(self, node):
        self.generic_visit(node)
        if id(node) not in self.in_place:
            return node
        self.count += 1
        target = node.targets[0]
        return gast.copy_location(gast.AugAssign(
            target=gast.copy_location(gast.Name(id=target.id, ctx=gast.Store(), annotation=None,
                                                type_comment=None), target),
            op=gast.Add(), value=node.value.right), node)

    def visit_Call(self, call):
        self.generic_visit(call)
        f = self.facts
        if call.keywords:
            return call
        func = call.func
        if A.called_attr(call, f.rt) == "unbroadcast":
            how = f.reduction([f.value(a) for a in call.args])
            if how == "same":
                self.count += 1
                return call.args[0]
            if how == "lead":
                self.count += 1
                return gast.copy_location(A.call(A.attr(f.rt, "add_reduce"), call.args[0],
                                                 A.const(0)), call)
            return call
        obj = f._callee(func)
        if (obj is plain_matmul_left or obj is plain_matmul_right) \
                and f.product([f.value(a) for a in call.args]):
            self.count += 1
            g, x, y = call.args
            left, right = (g, _transposed(y)) if obj is plain_matmul_left \
                else (_transposed(x), g)
            return gast.copy_location(gast.BinOp(left=left, op=gast.MatMult(), right=right),
                                      call)
        return call


def specialise_sweeps(fwd: gast.FunctionDef, bwd: gast.FunctionDef, facts: tuple,
                      callees: dict, rt: str, tape: str, resolve) -> int:
    """Rewrite ``bwd`` (in place) where ``facts`` (one per parameter of ``fwd``, as
    api.argument_facts gives them: the rank of an exact ndarray, negated when a dimension is
    1, paired with its dtype's ``str`` unless float64; "f" for a Python float, 0 for anything
    else) prove a helper's fast path or an accumulation in place; the number of rewrites."""
    analysis = _Facts(fwd, bwd, facts, callees, rt, tape, resolve)
    analysis.run()
    in_place = {id(s) for sites in _owned_accumulators(bwd, rt).values()
                if analysis.in_place(sites) for s in sites}
    rewrite = _Rewrite(analysis, in_place)
    bwd.body = [rewrite.visit(s) for s in bwd.body]
    return rewrite.count


def rank_candidates(module, helpers: dict, rt: str) -> bool:
    """Whether generated ``module`` calls what ``specialise_sweeps`` may rewrite, or adds to
    a name (``b = b + c``) it may add to in place."""
    products = {name for name, obj in helpers.items()
                if obj is plain_matmul_left or obj is plain_matmul_right}
    for n in gast.walk(module):
        if _accumulation(n) is not None:
            return True
        if isinstance(n, gast.Call):
            func = n.func
            if isinstance(func, gast.Name) and func.id in products:
                return True
            if A.called_attr(n, rt) == "unbroadcast":
                return True
    return False
