"""Guarantees afterwards: a flattened gradient wrapper made for float64 numbers as arguments
sums no cotangent down to the shape it has already, makes no seed of a value known to be a
float64 number, and computes no stand-in nobody reads.

``grad`` called with numbers (issue 9: ``rprime(r) = grad(loglike)(r, p(r))``) runs the
flattened wrapper of the gradient (api_forward.source_function) built for arguments that are
Python floats or numpy float64 scalars (``numbers=True``). Its parameters then have shape
``()`` and dtype float64, and so do its number constants; a global read that was a float64
ndarray when the wrapper was made has shape ``S`` (a symbol: the value is not known, only
that the global stands for one shape) and dtype float64 (``guards``: the caller checks both
on every call and runs the lean sweeps otherwise; only reads no call of an unknown function
precedes, which might rebind it: all of them read the object checked). From those, for the
names assigned once, by a top-level assignment (the branches of the ``is_zero`` guards left
unknown), the shapes that numpy's broadcasting makes without possibly raising: ``bc(S, ()) =
S``, ``bc(S, S) = S``; of an arithmetic operator, an elementwise ufunc with a float64 loop, a
``stand_in_of`` of either, ``np.sum``/``np.mean`` or ``stand_in_of`` of them without an axis
(``()``), ``unbroadcast(g, x)``, ``broadcast_like(g, x)`` and ``expand_to(g, x)`` (the shape
of ``x``), ``densify(g, x)`` of equal shapes, ``shape_like(x)``, a seed. Then:

- ``_rt.unbroadcast(g, x)`` or ``broadcast_like(g, x)`` with ``g`` and ``x`` of the same
  known shape is ``g`` (what they return for ndarrays and numbers of equal shapes: only those
  occur under the facts);
- the shape argument of those and of ``expand_to``, of known shape ``S`` or ``()``, reads the
  local copy of the global read standing for ``S`` or the first parameter instead (either has
  that shape), so the stand-in it was is read no more;
- a seed (``runtime.makes_seed``) of a float64 value of shape ``()`` is ``1.0``;
- a *unit*, a value every element of which is exactly ``1.0`` or ``-1.0`` (the seed, its
  ``expand_to``/``broadcast_like`` over a float64 array, an alias or negation of one), is
  not multiplied by nor summed: ``u * v`` (or ``v * u``) with ``v`` float64 of the product's
  shape is ``v`` (``-v``), and ``unbroadcast(u, x)`` onto a number ``x`` is
  ``runtime.unit_total(holder, sign)``, the element count: what numpy's sum of ones gives
  exactly (counts below 2**53), without spreading the seed over the data and summing it back;
- a top-level assignment nobody reads of a value whose computation has no other effect (its
  shape known, so no broadcast raises; no ``/`` or ``**`` of numbers only, where Python raises
  on division by zero and overflow) is dropped: the stand-ins, and the value the gradient
  does not return (its floating-point warnings are not raised).

A function with a nested scope, ``global`` or ``nonlocal`` is left as it is; what is not
known is not rewritten.
"""
from __future__ import annotations

__all__ = ["number_shapes"]

import ast
import operator
from typing import Callable

import numpy as np

from .. import runtime
from ..rules import _helpers as rule_helpers

_SCALAR = frozenset()  # the shape () (a known shape: a frozenset of at most one symbol)
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.Pow: operator.pow}
_ELEMENTWISE = frozenset(_OPERATORS.values()) | {operator.neg}
_RAISING_ON_NUMBERS = (operator.truediv, operator.pow)
# (g, x) -> g summed down or broadcast to the shape of x; g itself when the shapes agree
_TO_SHAPE_OF = (runtime.unbroadcast, runtime.broadcast_like, rule_helpers.expand_to)


def _broadcast(a, b):
    """The broadcast of two known shapes when it cannot raise, else None."""
    if a is None or b is None:
        return None
    if not a or a == b:
        return b
    return a if not b else None


def _float64_loop(fn) -> bool:
    return isinstance(fn, np.ufunc) and fn.nout == 1 and fn.signature is None \
        and any(t == "d" * fn.nin + "->d" for t in fn.types)


class _Facts:
    """Shapes and float64-ness (True; "weak" for Python number constants) of expressions."""

    def __init__(self, params: set, resolve: Callable):
        self.params = params
        self._resolve = resolve
        self.names: dict = {}  # local name -> (shape, f64)
        self.aliases: dict = {}  # local name assigned a function once -> the function
        self.globals_used: set = set()  # the globals read as float64 arrays
        self.trusted: set = set()  # ids of the global reads no unknown call precedes
        self.holders: dict = {}  # shape symbol -> the local name holding that global's read
        self.copies: dict = {}  # shape symbol -> a local name to bind to the global on entry
        self.taken: set = set()  # the names fdef binds or reads
        self.units: dict = {}  # local name -> 1.0 or -1.0, every element of its value

    def resolve(self, node):
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return self.aliases[node.id]
        return self._resolve(node)

    def of(self, node):
        if isinstance(node, ast.Name):
            if node.id in self.params:
                return _SCALAR, True
            if node.id in self.names:
                return self.names[node.id]
            value = self.resolve(node) if id(node) in self.trusted else None
            if type(value) is np.ndarray and value.dtype == np.float64:
                self.globals_used.add(node.id)
                # (a shape per global: every trusted read of it is the object the caller
                # checked, as no call that might rebind it precedes any of them)
                return frozenset({(node.id,)}), True
            return None
        if isinstance(node, ast.Constant):
            return (_SCALAR, "weak") if type(node.value) in (int, float) else None
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return self._combine([node.left, node.right])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self.of(node.operand)
        if isinstance(node, ast.IfExp):
            body, orelse = self.of(node.body), self.of(node.orelse)
            return body if body == orelse else None
        if isinstance(node, ast.Call) and not node.keywords \
                and not any(isinstance(a, ast.Starred) for a in node.args):
            return self._call(node)
        return None

    def holder(self, symbol):
        """A local name holding the global read ``symbol`` stands for: one the function binds
        to it (``x = DATA``), or a copy bound on entry (the read is trusted: no call that
        might rebind it precedes it, and the caller checks it then)."""
        name = self.holders.get(symbol)
        if name is None:
            base = f"_held_{symbol[0]}"
            name, k = base, 1
            while name in self.taken:
                name, k = f"{base}_{k}", k + 1
            self.taken.add(name)
            self.holders[symbol] = self.copies[symbol] = name
            self.names[name] = frozenset({symbol}), True
        return name

    def unit(self, node):
        """1.0 or -1.0 when every element of ``node``'s value (of known shape, float64) is
        exactly that number, else None."""
        if isinstance(node, ast.Name):
            return self.units.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign = self.unit(node.operand)
            return -sign if sign is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) \
                and self.of(node) is not None:
            left, right = self.unit(node.left), self.unit(node.right)
            return left * right if left is not None and right is not None else None
        if not isinstance(node, ast.Call) or node.keywords or self.of(node) is None:
            return None
        fn, args = self.resolve(node.func), node.args
        if runtime.makes_seed(fn) and len(args) == 1:
            return 1.0  # (of a float64 number: the facts say so)
        if any(fn is f for f in _TO_SHAPE_OF) and len(args) == 2:
            # (a number spread over x's shape, or g of x's shape: each element is g's)
            g, x = args[0], self.of(args[1])
            if isinstance(g, ast.Constant) and type(g.value) is float and g.value in (1.0, -1.0):
                return g.value
            fact = self.of(g)
            if fact is not None and fact[1] is True and x is not None \
                    and (fact[0] == x[0] or not fact[0]):
                return self.unit(g)
        return None

    def _combine(self, operands):
        shape, f64 = _SCALAR, "weak"
        for a in operands:
            fact = self.of(a)
            if fact is None:
                return None
            shape = _broadcast(shape, fact[0])
            if shape is None:
                return None
            f64 = True if fact[1] is True else f64
        return shape, f64

    def _call(self, node):
        fn, args = self.resolve(node.func), node.args
        if fn is runtime.stand_in_of and args:
            fn, args = self.resolve(args[0]), args[1:]
        if (fn is np.sum or fn is np.mean) and len(args) == 1:
            fact = self.of(args[0])
            return (_SCALAR, fact[1]) if fact is not None and fact[1] is True else None
        if any(fn is op for op in _ELEMENTWISE) or _float64_loop(fn):
            return self._combine(args)
        if fn is runtime.shape_like and len(args) == 1:
            return self.of(args[0])  # (a stand-in of the shape and dtype, or the number)
        if runtime.makes_seed(fn) and len(args) == 1:
            return (_SCALAR, True) if self.of(args[0]) == (_SCALAR, True) else None
        if fn is runtime.unit_total:
            return _SCALAR, True
        if any(fn is f for f in _TO_SHAPE_OF) and len(args) == 2:
            g, x = self.of(args[0]), self.of(args[1])
            return (x[0], g[1]) if g is not None and x is not None else None
        if fn is runtime.densify and len(args) == 2:
            # (g itself, or for the lazy zero 0.0, zeros shaped like x: either of x's shape
            # when g's is x's)
            g, x = self.of(args[0]), self.of(args[1])
            return x if g is not None and x is not None and g[0] == x[0] and g[1] is True \
                and x[1] is True else None
        return None


def _assigned_once(fdef: ast.FunctionDef):
    """The names assigned exactly once in ``fdef``, by a top-level assignment to the name
    alone; None when ``fdef`` holds a scope or a declaration these facts cannot follow."""
    top = {}
    for stmt in fdef.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            top[name] = top.get(name, 0) + 1
    for node in ast.walk(fdef):
        if node is not fdef and isinstance(node, _SCOPES):
            return None
    stores = {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    return {n for n, k in top.items() if k == 1 and stores.get(n) == 1}


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Global,
           ast.Nonlocal, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def number_shapes(fdef: ast.FunctionDef, resolve: Callable[[ast.expr], object]):
    """``(fdef rewritten, the global names whose reads it assumed float64 ndarrays)`` for a
    flattened wrapper called with float64 numbers only; ``(fdef, ())`` when nothing was
    rewritten. ``resolve(expr)``: as for transforms/flat_shapes.py."""
    args = fdef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or not args.args:
        return fdef, ()
    params = {a.arg for a in args.args}
    stored = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)
              and not isinstance(n.ctx, ast.Load)}
    if stored & params or _assigned_once(fdef) is None:
        return fdef, ()
    folded = _FoldTypeTests(params, resolve)
    fdef.body = folded.visit_body(fdef.body)
    once = _assigned_once(fdef)
    facts = _Facts(params, resolve)
    for stmt in fdef.body:  # (a global's type is checked at the call: no call rebinds it)
        if any(isinstance(n, ast.Call) and not _known_call(n, facts) for n in ast.walk(stmt)):
            break
        facts.trusted |= {id(n) for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    for stmt in fdef.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id in once:
            name = stmt.targets[0].id
            fact = facts.of(stmt.value)
            if fact is not None:
                facts.names[name] = fact
                sign = facts.unit(stmt.value)
                if sign is not None:
                    facts.units[name] = sign
                if isinstance(stmt.value, ast.Name) and fact[0] and stmt.value.id not in once:
                    facts.holders.setdefault(next(iter(fact[0])), name)  # (``x = DATA``)
            elif isinstance(stmt.value, (ast.Name, ast.Attribute)) \
                    and callable(facts.resolve(stmt.value)):
                facts.aliases[name] = facts.resolve(stmt.value)  # (``_t1 = np.log``)
    facts.taken = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)} | params
    first = args.args[0].arg
    changed = _Rewrite(facts, first).visit_body(fdef.body)
    folded.constants = {s.targets[0].id: s.value.value for s in fdef.body
                        if isinstance(s, ast.Assign) and len(s.targets) == 1
                        and isinstance(s.targets[0], ast.Name) and s.targets[0].id in once
                        and isinstance(s.value, ast.Constant) and type(s.value.value) is bool}
    fdef.body = folded.visit_body(fdef.body)  # (``if c:`` of ``c = not is_zero(unit)``)
    changed |= _drop_unread(fdef, facts, once)
    if not changed and not folded.changed:
        return fdef, ()
    used = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)}
    at = 1 if fdef.body and isinstance(fdef.body[0], ast.Expr) \
        and isinstance(fdef.body[0].value, ast.Constant) else 0  # (after the docstring)
    fdef.body[at:at] = [ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                   value=ast.Name(id=symbol[0], ctx=ast.Load()))
                        for symbol, name in sorted(facts.copies.items()) if name in used]
    return ast.fix_missing_locations(fdef), tuple(sorted(facts.globals_used & used))


class _FoldTypeTests(ast.NodeTransformer):
    """``isinstance(p, T)`` of a parameter ``p`` (a Python float or a numpy float64, never
    rebound) is known when both types answer alike (``(list, tuple, dict)``: False); an
    ``if`` or ``if``-expression testing it is the branch that runs (the sweeps of generated
    code differentiated again test whether a cotangent is a container's)."""

    def __init__(self, params: set, resolve: Callable):
        self.params = params
        self.resolve = resolve
        self.changed = False
        self.constants: dict = {}  # a name assigned once -> the bool constant it holds

    def known(self, test):
        if isinstance(test, ast.Name) and test.id in self.constants:
            return self.constants[test.id]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            value = self.known(test.operand)
            return None if value is None else not value
        if not (isinstance(test, ast.Call) and len(test.args) == 2 and not test.keywords
                and self.resolve(test.func) is isinstance
                and isinstance(test.args[0], ast.Name) and test.args[0].id in self.params):
            return None
        kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        kinds = [self.resolve(k) for k in kinds]
        if not all(isinstance(k, type) for k in kinds):
            return None
        as_float = any(issubclass(float, k) for k in kinds)
        return as_float if as_float == any(issubclass(np.float64, k) for k in kinds) else None

    def visit_body(self, body: list) -> list:
        out = []
        for stmt in body:
            if isinstance(stmt, ast.If) and self.known(stmt.test) is not None:
                self.changed = True
                out.extend(self.visit_body(stmt.body if self.known(stmt.test) else stmt.orelse))
                continue
            if not isinstance(stmt, _COMPOUND):
                out.append(self.visit(stmt))
                continue
            for field in ("test", "iter"):  # (the expressions a compound statement holds)
                if getattr(stmt, field, None) is not None:
                    setattr(stmt, field, self.visit(getattr(stmt, field)))
            for field in ("body", "orelse", "finalbody"):  # (a body is never left empty)
                if getattr(stmt, field, None):
                    setattr(stmt, field, self.visit_body(getattr(stmt, field))
                            or ([ast.Pass()] if field == "body" else []))
            for handler in getattr(stmt, "handlers", ()):
                handler.body = self.visit_body(handler.body) or [ast.Pass()]
            out.append(stmt)
        return out

    def visit_IfExp(self, node):
        self.generic_visit(node)
        value = self.known(node.test)
        if value is None:
            return node
        self.changed = True
        return node.body if value else node.orelse


_COMPOUND = (ast.If, ast.For, ast.While, ast.Try, ast.With)


def _known_call(call: ast.Call, facts: _Facts) -> bool:
    """A call of numpy's elementwise or summing functions, of srcgrad's runtime or rule
    helpers, or of a seed: none of them rebinds a global."""
    fn = facts.resolve(call.func)
    return isinstance(fn, np.ufunc) or fn is np.sum or fn is np.mean \
        or runtime.makes_seed(fn) \
        or getattr(fn, "__module__", None) in ("srcgrad.runtime", "srcgrad.rules._helpers")


class _Rewrite(ast.NodeTransformer):
    def __init__(self, facts: _Facts, first: str):
        self.facts = facts
        self.first = first
        self.changed = False

    def visit_body(self, body) -> bool:
        for stmt in body:
            self.visit(stmt)
        return self.changed

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Constant):
            return ast.copy_location(ast.Constant(value=not node.operand.value), node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Mult):
            return node
        facts = self.facts
        for unit, other in ((node.left, node.right), (node.right, node.left)):
            sign, fact, whole = facts.unit(unit), facts.of(other), facts.of(node)
            if sign is not None and fact is not None and fact[1] is True \
                    and whole is not None and whole[0] == fact[0]:
                self.changed = True  # (1.0 * v is v, -1.0 * v is -v, bit for bit)
                return other if sign == 1.0 else ast.copy_location(
                    ast.UnaryOp(op=ast.USub(), operand=other), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        facts = self.facts
        fn = facts.resolve(node.func)
        if node.keywords or len(node.args) not in (1, 2):
            return node
        if fn is runtime.is_zero and len(node.args) == 1 and facts.unit(node.args[0]):
            self.changed = True  # (a unit is never the lazy zero)
            return ast.copy_location(ast.Constant(value=False), node)
        if fn is runtime.unbroadcast and len(node.args) == 2 \
                and facts.of(node.args[1]) == (_SCALAR, True):
            sign, g = facts.unit(node.args[0]), facts.of(node.args[0])
            holder = facts.holder(next(iter(g[0]))) if g is not None and g[0] else None
            if sign is not None and holder is not None:
                self.changed = True
                return ast.copy_location(ast.Call(
                    func=ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()),
                                       attr="unit_total", ctx=ast.Load()),
                    args=[ast.Name(id=holder, ctx=ast.Load()), ast.Constant(value=sign)],
                    keywords=[]), node)
        if runtime.makes_seed(fn) and len(node.args) == 1 \
                and facts.of(node.args[0]) == (_SCALAR, True):
            self.changed = True
            return ast.copy_location(ast.Constant(value=1.0), node)
        if any(fn is f for f in _TO_SHAPE_OF) and len(node.args) == 2:
            g, x = facts.of(node.args[0]), facts.of(node.args[1])
            if x is None:
                return node
            if fn is not rule_helpers.expand_to and g is not None and g[0] == x[0]:
                self.changed = True
                return node.args[0]
            stand_for = self.first if not x[0] else facts.holder(next(iter(x[0])))
            if stand_for is not None and not (isinstance(node.args[1], ast.Name)
                                              and node.args[1].id == stand_for):
                self.changed = True
                node.args[1] = ast.copy_location(ast.Name(id=stand_for, ctx=ast.Load()),
                                                 node.args[1])
        return node


def _droppable(value, facts: _Facts) -> bool:
    """Whether computing ``value`` has no effect but its value: its shape is known (so no
    broadcast raises), and it divides or raises to a power only where an array operand
    makes numpy's operator (which warns) serve rather than Python's (which raises)."""
    if isinstance(value, (ast.Name, ast.Constant)):
        return True
    fact = facts.of(value)
    if fact is None:
        return False
    if isinstance(value, ast.BinOp):
        return (not isinstance(value.op, (ast.Div, ast.Pow)) or bool(fact[0])) \
            and _droppable(value.left, facts) and _droppable(value.right, facts)
    if isinstance(value, ast.UnaryOp):
        return _droppable(value.operand, facts)
    if not isinstance(value, ast.Call):
        return False
    fn, args = facts.resolve(value.func), value.args
    if fn is runtime.stand_in_of:
        fn, args = facts.resolve(args[0]), args[1:]
        if any(fn is f for f in _RAISING_ON_NUMBERS) and not fact[0]:
            return False
    elif any(fn is f for f in _RAISING_ON_NUMBERS) \
            or any(fn is f for f in _TO_SHAPE_OF) and not _spreads(args, facts, fn):
        return False
    return all(_droppable(a, facts) for a in args)


def _spreads(args, facts: _Facts, fn) -> bool:
    """Whether ``fn(g, x)`` (of _TO_SHAPE_OF) cannot raise: the shapes are equal, or a number
    is spread over (or an array summed onto) the other's shape."""
    g, x = facts.of(args[0]), facts.of(args[1])
    return g[0] == x[0] or not g[0] or fn is runtime.unbroadcast and not x[0]


def _drop_unread(fdef: ast.FunctionDef, facts: _Facts, once: set) -> bool:
    """Drop top-level assignments (of names assigned once) nobody reads whose value is
    droppable, until none is."""
    dropped = False
    while True:
        reads: dict = {}
        for n in ast.walk(fdef):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                reads[n.id] = reads.get(n.id, 0) + 1
        keep = [s for s in fdef.body
                if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                        and isinstance(s.targets[0], ast.Name) and s.targets[0].id in once
                        and s.targets[0].id not in reads and _droppable(s.value, facts))]
        if len(keep) == len(fdef.body):
            return dropped
        fdef.body[:] = keep
        dropped = True
