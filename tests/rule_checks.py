"""Reusable checks of derivative rules: finite differences, shapes, second order, and a lint.

* ``check_vjp`` / ``check_jvp``: dot-product tests against central finite differences along
  random directions, ``<u, J v>`` numerically against ``<J^T u, v>`` and ``<u, (J v)>``.
* ``check_second_order``: the vjp is itself differentiated by ``Dual``, a forward-mode tracer
  that evaluates every numpy call through the registry's jvps, and compared with finite
  differences of the vjp. This proves that the vjp is built only from functions with rules.
* ``undifferentiable_calls``: a static lint of a vjp/jvp's source for calls with no rule,
  array methods, and in-place mutation.

Values may be arrays, Python floats, or (nested) lists, tuples and dicts of them.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
from dataclasses import dataclass

import numpy as np

from srcgrad import runtime
from srcgrad.rules import is_nondifferentiable, lookup, rule_name

EPS = 1e-6
RTOL = 1e-6

# --------------------------------------------------------------------------- structures


def is_float_leaf(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def is_container(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def tree_map(fn, *trees):
    """Apply ``fn`` to corresponding leaves of trees shaped like the first one."""
    first = trees[0]
    if isinstance(first, dict):
        return {k: tree_map(fn, *[t[k] if isinstance(t, dict) and k in t else None
                                  for t in trees]) for k in first}
    if isinstance(first, (list, tuple)):
        items = [tree_map(fn, *[t[i] if isinstance(t, (list, tuple)) else None for t in trees])
                 for i in range(len(first))]
        if isinstance(first, tuple) and hasattr(first, "_fields"):
            return type(first)(*items)
        return type(first)(items)
    return fn(*trees)


def leaves(tree):
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in leaves(v)]
    return [tree]


def random_like(rng, x, floats_only=True):
    """A random direction shaped like ``x``; None for leaves that are not floats.

    With ``floats_only=False`` every numeric leaf gets a float direction (for cotangents of
    integer outputs, whose derivative is zero).
    """
    def leaf(v):
        if is_float_leaf(v) or (not floats_only and isinstance(v, (int, np.number, np.ndarray))):
            if np.iscomplexobj(v):  # complex values get complex directions
                shape = np.shape(v)
                d = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
                return d if isinstance(v, np.ndarray) else complex(d)
            if isinstance(v, np.ndarray):
                return rng.standard_normal(v.shape)
            return float(rng.standard_normal())
        return None
    return tree_map(leaf, x)


def axpy(x, v, s):
    """``x + s * v`` leafwise; leaves whose direction is None stay as they are."""
    def leaf(xi, vi):
        if vi is None:
            return xi
        out = xi + s * vi
        if isinstance(xi, np.ndarray):
            return np.asarray(out)
        return float(out) if isinstance(xi, float) else out
    return tree_map(leaf, x, v)


def inner(a, b) -> float:
    """Sum of elementwise products over matching leaves; None and lazy zeros count as zero."""
    if a is None or b is None:
        return 0.0
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return _container_vs_zero(a, b)
        return sum(inner(a.get(k), b.get(k)) for k in set(a) | set(b))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
            return _container_vs_zero(a, b)
        assert len(a) == len(b), f"containers of different lengths: {len(a)} vs {len(b)}"
        return sum(inner(x, y) for x, y in zip(a, b))
    # complex values pair as Re(c * dz) (JAX's convention; see rules/numpy_complex.py)
    return float(np.real(np.sum(_numeric(a) * _numeric(b))))


def _numeric(a):
    a = np.asarray(a)
    if a.dtype.kind in "fc":
        return a
    if a.dtype.kind in "USO" and not _numbers(a):  # a structure's metadata (tree_flatten's
        return np.zeros(a.shape)  # TreeDef: names, classes) carries no derivative
    return a.astype(float)


def _numbers(a) -> bool:
    try:
        a.astype(float)
    except (TypeError, ValueError):
        return False
    return True


def _container_vs_zero(a, b) -> float:
    scalar = b if is_container(a) else a
    assert scalar is runtime.ZERO, f"a container against a non-container: {a!r:.80} / {b!r:.80}"
    return 0.0


def norm(a) -> float:
    return float(np.sqrt(max(inner(a, tree_map(_conj, a)), 0.0)))


def _conj(v):
    return np.conj(v) if isinstance(v, (complex, np.complexfloating, np.ndarray)) else v


def difference(plus, minus, eps=EPS):
    def leaf(p, m):
        if p is None:
            return None
        return (_numeric(p) - _numeric(m)) / (2 * eps)
    return tree_map(leaf, plus, minus)


def tree_sum(trees):
    """Leafwise sum of several values of the same structure (``runtime.add`` semantics)."""
    total = runtime.ZERO
    for t in trees:
        total = runtime.add(total, t)
    return total


def zeros_like(x):
    return runtime.zeros_like(x)


def shape_mismatches(value, like, where="") -> list[str]:
    """Where ``value`` is not structured and shaped like ``like`` (a lazy ZERO is fine)."""
    if value is runtime.ZERO and not isinstance(like, (int, float)):
        return []
    if isinstance(like, dict):
        if not isinstance(value, dict):
            return [f"{where}: expected a dict, got {type(value).__name__}"]
        return [m for k in value for m in shape_mismatches(value[k], like[k], f"{where}[{k!r}]")]
    if isinstance(like, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(like):
            return [f"{where}: expected a {type(like).__name__} of {len(like)}, got {value!r:.60}"]
        return [m for i, (v, x) in enumerate(zip(value, like))
                for m in shape_mismatches(v, x, f"{where}[{i}]")]
    if np.shape(value) != np.shape(like):
        return [f"{where}: shape {np.shape(value)} != {np.shape(like)}"]
    return []


# --------------------------------------------------------------------------- one check point

@dataclass
class Point:
    """One domain point of a rule, with random directions drawn for it."""

    rule: object
    args: tuple
    kwargs: dict
    rng: np.random.Generator
    # the differentiable positions that carry a tangent (None: every one given); the others
    # get generated code's lazy zero 0.0 (``all_tangents``) and stay fixed in ``numeric_jv``
    active: tuple | None = None

    def __post_init__(self):
        # differentiable positions given (a None operand, like clip's absent bound, is not
        # an operand); ``slots`` are their indices among the rule's vjp results / tangents
        self.given = [i for i in self.rule.diff_args
                      if i < len(self.args) and self.args[i] is not None]
        self.positions = [i for i in self.given if self.active is None or i in self.active]
        self.slots = [self.rule.diff_args.index(i) for i in self.positions]
        self.ans = self.call(self.args)
        self.directions = [random_like(self.rng, self.args[i]) for i in self.positions]
        self.u = random_like(self.rng, self.ans, floats_only=False)

    def call(self, args):
        return self.rule.fn(*args, **self.kwargs)

    def shifted(self, s, directions=None):
        args = list(self.args)
        for i, v in zip(self.positions, directions or self.directions):
            args[i] = axpy(args[i], v, s)
        return args

    def numeric_jv(self):
        """(f(x + eps v) - f(x - eps v)) / (2 eps)."""
        return difference(self.call(self.shifted(EPS)), self.call(self.shifted(-EPS)))

    def tangents(self):
        """The directions as tangents: zeros for arguments that are not floats."""
        return [zeros_like(self.args[i]) if all(leaf is None for leaf in leaves(v)) else
                tree_map(lambda d, x: zeros_like(x) if d is None else d, v, self.args[i])
                for i, v in zip(self.positions, self.directions)]

    def all_tangents(self):
        """One tangent per differentiable position of the rule, 0.0 for those not given, as
        generated code passes them."""
        given = dict(zip(self.slots, self.tangents()))
        return [given.get(k, 0.0) for k in range(len(self.rule.diff_args))]

    def select(self, results: tuple, what: str) -> tuple:
        """The entries of a vjp/jvp result tuple that belong to the given positions."""
        assert isinstance(results, tuple), f"{self.rule.name}: {what} must return a tuple"
        if len(results) == len(self.given):  # one result per operand given
            return tuple(results[self.given.index(i)] for i in self.positions)
        assert len(results) >= max(self.slots, default=-1) + 1, (
            f"{self.rule.name}: {what} returned {len(results)} results for diff args "
            f"{self.positions}")
        return tuple(results[k] for k in self.slots)

    def describe(self) -> str:
        def brief(a):
            if isinstance(a, np.ndarray):
                return f"array{a.shape}"
            if is_container(a):
                return type(a).__name__ + "[" + ", ".join(brief(x) for x in
                                                          (a.values() if isinstance(a, dict)
                                                           else a)) + "]"
            return repr(a)
        kw = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.rule.name}({', '.join(brief(a) for a in self.args)}{', ' if kw else ''}{kw})"


def assert_close(a: float, b: float, scale: float, what: str, point: Point, rtol=RTOL):
    tol = rtol * (max(abs(a), abs(b)) + scale)
    assert abs(a - b) <= tol, (f"{what} at {point.describe()}: {a!r} vs {b!r} "
                               f"(|diff| {abs(a - b):.3g} > tol {tol:.3g})")


def noise_scale(u, value) -> float:
    """Round-off of a central difference of ``value`` seen through ``u``, in units of rtol."""
    return 1e-3 * norm(u) * (1.0 + norm(value))


def check_vjp(point: Point) -> float:
    """The vjp's shapes and ``<J^T u, v>`` against finite differences; returns <J^T u, v>."""
    rule = point.rule
    cts = point.select(rule.vjp(point.u, point.ans, *point.args, **point.kwargs), "vjp")
    for i, ct in zip(point.positions, cts):
        problems = shape_mismatches(ct, point.args[i], f"cotangent of arg {i}")
        assert not problems, f"{point.describe()}: " + "; ".join(problems)
    analytic = sum(inner(ct, v) for ct, v in zip(cts, point.directions))
    numeric = inner(point.u, point.numeric_jv())
    assert_close(numeric, analytic, noise_scale(point.u, point.ans), "vjp vs finite differences",
                 point)
    return analytic


def check_jvp(point: Point) -> float:
    """The jvp's contributions' shapes and ``<u, J v>`` against finite differences."""
    rule = point.rule
    contributions = jvp_contributions(point)
    for i, c in zip(point.positions, contributions):
        problems = shape_mismatches(c, point.ans, f"jvp contribution of arg {i}")
        assert not problems, f"{point.describe()}: " + "; ".join(problems)
    analytic = inner(point.u, tree_sum(contributions))
    numeric = inner(point.u, point.numeric_jv())
    assert_close(numeric, analytic, noise_scale(point.u, point.ans), "jvp vs finite differences",
                 point)
    if rule.linear and all(is_float_leaf(x) for x in leaves(point.ans)):
        check_linear(point, contributions)
    return analytic


def jvp_contributions(point: Point) -> tuple:
    rule = point.rule
    contributions = rule.jvp(*point.all_tangents(), point.ans, *point.args, **point.kwargs)
    return point.select(contributions, "jvp")


def check_linear(point: Point, contributions):
    """A rule marked linear: f(tangents) == the sum of its jvp contributions."""
    args = list(point.args)
    for i in point.given:  # operands without a tangent count as zero
        args[i] = zeros_like(args[i])
    for i, t in zip(point.positions, point.tangents()):
        # strings (a dict's keys in key-value pairs) stay what they are
        args[i] = tree_map(lambda ti, xi: xi if isinstance(xi, str) else ti, t, point.args[i])
    direct = point.call(args)
    total = tree_sum(contributions)

    def compare(x, y):
        y = 0.0 if y is None else y  # an entry a sparse contribution leaves out (dict_update)
        np.testing.assert_allclose(np.broadcast_to(_numeric(y), np.shape(x)), x,
                                   rtol=1e-12, atol=1e-12,
                                   err_msg=f"{point.describe()} is marked linear but "
                                           f"f(tangents) != sum of jvp contributions")
    tree_map(compare, direct, total)


def check_consistency(point: Point, vjp_value: float, jvp_value: float):
    """``<u, J v> == <J^T u, v>`` up to rounding."""
    assert_close(vjp_value, jvp_value, 1e-6 * norm(point.u) * sum(norm(v) for v in
                                                                   point.directions),
                 "jvp vs vjp", point, rtol=1e-9)


# --------------------------------------------------------------------------- second order

class TracerError(AssertionError):
    """A vjp did something a differentiable program cannot (no rule, conversion, mutation)."""


class Dual:
    """A value with a tangent: forward-mode AD through the registry's jvps.

    numpy calls reach ``__array_ufunc__``/``__array_function__``; Python operators map to the
    ``operator`` rules; comparisons compare primals. Anything without a rule raises.
    """

    __array_priority__ = 1000
    __hash__ = None

    def __init__(self, primal, tangent):
        self.primal = primal
        self.tangent = tangent

    shape = property(lambda self: np.shape(self.primal))
    ndim = property(lambda self: np.ndim(self.primal))
    size = property(lambda self: np.size(self.primal))
    dtype = property(lambda self: np.asarray(self.primal).dtype)
    T = property(lambda self: apply(np.transpose, (self,), {}))

    def __repr__(self):
        return f"Dual({self.primal!r}, {self.tangent!r})"

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None:
            raise TracerError(f"np.{ufunc.__name__}.{method} or out= is not differentiable")
        return apply(ufunc, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return apply(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        raise TracerError("converting a traced value to a plain array drops its tangent")

    def __float__(self):
        raise TracerError("float() of a traced value drops its tangent")

    def __bool__(self):
        return bool(self.primal)

    def __len__(self):
        return len(self.primal)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        return apply(operator.getitem, (self, index), {})

    def __setitem__(self, index, value):
        raise TracerError("in-place assignment into a traced value")


def _binary(op):
    return (lambda self, other: apply(op, (self, other), {}),
            lambda self, other: apply(op, (other, self), {}))


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("pow", operator.pow),
                   ("floordiv", operator.floordiv), ("mod", operator.mod),
                   ("matmul", operator.matmul)]:
    _forward, _reflected = _binary(_op)
    setattr(Dual, f"__{_name}__", _forward)
    setattr(Dual, f"__r{_name}__", _reflected)
for _name, _op in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge), ("eq", operator.eq), ("ne", operator.ne)]:
    setattr(Dual, f"__{_name}__", (lambda op: lambda self, other: op(
        primal(self), primal(other)))(_op))
Dual.__neg__ = lambda self: apply(operator.neg, (self,), {})
Dual.__pos__ = lambda self: apply(operator.pos, (self,), {})
Dual.__abs__ = lambda self: apply(abs, (self,), {})


def primal(tree):
    if isinstance(tree, Dual):
        return tree.primal
    if isinstance(tree, dict):
        return {k: primal(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        items = [primal(v) for v in tree]
        if isinstance(tree, tuple) and hasattr(tree, "_fields"):
            return type(tree)(*items)
        return type(tree)(items)
    return tree


def has_dual(tree) -> bool:
    if isinstance(tree, Dual):
        return True
    if isinstance(tree, dict):
        return any(has_dual(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return any(has_dual(v) for v in tree)
    return False


def tangent(tree, like=None):
    """The tangent of a traced value; zeros (shaped like its primal) for constants."""
    if isinstance(tree, Dual):
        return tree.tangent
    if isinstance(tree, dict):
        return {k: tangent(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        items = [tangent(v) for v in tree]
        if isinstance(tree, tuple) and hasattr(tree, "_fields"):
            return type(tree)(*items)
        return type(tree)(items)
    return zeros_like(tree)


def make_dual(value, t):
    """Attach tangent ``t`` to each float leaf of ``value``."""
    if isinstance(value, (list, tuple)):
        items = [make_dual(v, t[i] if isinstance(t, (list, tuple)) else t)
                 for i, v in enumerate(value)]
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*items)
        return type(value)(items)
    if isinstance(value, dict):
        return {k: make_dual(v, t[k] if isinstance(t, dict) else t) for k, v in value.items()}
    if is_float_leaf(value):
        return Dual(value, t)
    return value


def apply(fn, args, kwargs):
    """Evaluate ``fn`` on traced arguments: primal by ``fn``, tangent by its rule's jvp."""
    plain_args, plain_kwargs = primal(tuple(args)), primal(dict(kwargs))
    if is_nondifferentiable(fn):
        return fn(*plain_args, **plain_kwargs)
    r = lookup(fn)
    if r is None:
        raise TracerError(f"'{rule_name(fn)}' has no derivative rule: a vjp calling it cannot "
                          f"be differentiated again")
    ans = fn(*plain_args, **plain_kwargs)
    active = [i for i in r.diff_args if i < len(args) and has_dual(args[i])]
    if not active:
        return ans
    # one tangent per differentiable position, 0.0 for those not passed (as generated code)
    tangents = [tangent(args[i]) if i < len(args) else 0.0 for i in r.diff_args]
    contributions = r.jvp(*tangents, ans, *plain_args, **plain_kwargs)
    total = tree_sum(c for i, c in zip(r.diff_args, contributions) if i in active)
    return make_dual(ans, total)


def check_second_order(point: Point):
    """Differentiate the vjp (as a function of the primal inputs) with ``Dual`` and compare
    with finite differences of the vjp."""
    rule = point.rule
    u, kwargs = point.u, point.kwargs

    def vjp_at(args):
        return rule.vjp(u, rule.fn(*args, **kwargs), *args, **kwargs)

    traced = list(point.args)
    for i, v, t in zip(point.positions, point.directions, point.tangents()):
        traced[i] = make_dual_tree(point.args[i], v, t)
    ans_tangent = tree_sum(jvp_contributions(point))
    out = rule.vjp(u, make_dual(point.ans, ans_tangent), *traced, **kwargs)
    analytic_tangent = tangent(out)
    base = vjp_at(point.args)
    w = random_like(point.rng, base, floats_only=False)
    numeric = inner(w, difference(vjp_at(point.shifted(EPS)), vjp_at(point.shifted(-EPS))))
    analytic = inner(w, analytic_tangent)
    assert_close(numeric, analytic, noise_scale(w, base), "second order (vjp of vjp)", point)


def make_dual_tree(x, v, t):
    """Trace the float leaves of argument ``x`` that have a direction."""
    def leaf(xi, vi, ti):
        return Dual(xi, ti) if vi is not None else xi
    return tree_map(leaf, x, v, t)


# --------------------------------------------------------------------------- static lint

ARRAY_METHOD_NAMES = {"sum", "mean", "prod", "max", "min", "std", "var", "dot", "reshape",
                      "transpose", "ravel", "flatten", "squeeze", "clip", "astype", "copy",
                      "cumsum", "item", "tolist", "swapaxes", "fill", "sort", "T", "real",
                      "conj", "round", "repeat", "trace", "diagonal", "__setitem__",
                      "__iadd__"}
_STRUCTURAL = {tuple, list, dict, set, frozenset, zip, enumerate, sorted, reversed, iter, next,
               getattr, any, all, map, filter, slice, object, NotImplementedError, ValueError,
               TypeError, dict.fromkeys}


def undifferentiable_calls(fn, _seen=None) -> list[str]:
    """Problems in ``fn``'s source that stop it from being differentiated again.

    Calls must reach functions with rules, non-differentiable functions, structural builtins,
    or srcgrad helpers (checked recursively). Array methods and in-place stores are flagged.
    """
    seen = set() if _seen is None else _seen
    if fn in seen:
        return []
    seen.add(fn)
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return []
    tree = ast.parse(source)
    definition = tree.body[0]
    if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        tree = ast.Module(body=definition.body, type_ignores=[])  # not its decorators
    namespace = dict(vars(builtins))
    namespace.update(getattr(fn, "__globals__", {}))
    problems = []
    where = getattr(fn, "__qualname__", repr(fn))
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) or (isinstance(node, ast.Assign) and any(
                isinstance(t, (ast.Subscript, ast.Attribute)) for t in node.targets)):
            # x += y mutates an array in place; x[i] = y always does.
            problems.append(f"{where}: in-place store at line {node.lineno}")
        if isinstance(node, ast.Attribute) and node.attr in ARRAY_METHOD_NAMES:
            if _resolve(node.value, namespace) is None:
                problems.append(f"{where}: '.{node.attr}' on a value at line {node.lineno}; "
                                f"use the numpy function")
        if isinstance(node, ast.Call):
            target = _resolve(node.func, namespace)
            if target is not None:
                problems += _check_target(target, where, node.lineno, seen)
    return problems


def _resolve(node, namespace):
    """The object a Name or dotted Attribute chain of module-level names refers to."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, namespace)
        if base is not None and (inspect.ismodule(base) or isinstance(base, type)):
            return getattr(base, node.attr, None)
    return None


def _check_target(target, where, lineno, seen) -> list[str]:
    if inspect.ismodule(target):
        return []
    try:
        if lookup(target) is not None or is_nondifferentiable(target) or target in _STRUCTURAL:
            return []
    except TypeError:
        pass
    module = getattr(target, "__module__", "") or ""
    if inspect.isfunction(target) and module.startswith("srcgrad"):
        return undifferentiable_calls(target, seen)
    if isinstance(target, type) and issubclass(target, BaseException):
        return []
    return [f"{where}: calls '{rule_name(target)}' (line {lineno}), which has no rule"]
