"""Guarantees afterwards: the tree is a module defining ``_make(...)``, which returns one
function computing the user's function for a whole batch at once (every batched value
carries its batch axis first), or ``ctx.problems`` says why the body cannot be batched.

Which values are batched is decided flow-insensitively over names, like activity analysis:
a name is batched if any of its definitions reads a batched value (shapes and lengths of
batched values are not batched). A definition of a batched name from unbatched values is
lifted (repeated along a batch axis, a broadcast view), so a name holds one layout
everywhere. Operations on batched values become calls of ``srcgrad.batching`` through the
alias ``_bv`` (``_bv.apply(np.sum, (x,), {'axis': 0}, (0,), _B)``: the function, its
arguments, which of them are batched, the batch size), which apply a batch rule or loop
over the examples; calls of user functions go to ``call`` (given by the caller), which
batches them by this same transformation. Branches and loops whose condition or iterable is
batched, and other data-dependent constructs, are problems: the caller then loops.
"""
from __future__ import annotations

__all__ = ["batch", "batched_names"]

import builtins
import operator

import gast
import numpy as np

from .. import batching
from . import astutil as A
from .activity import definitions
from .context import Context, factory_module
from .resolve import BINOPS, static_value

_COMPARES = {gast.Lt: operator.lt, gast.LtE: operator.le, gast.Gt: operator.gt,
             gast.GtE: operator.ge, gast.Eq: operator.eq, gast.NotEq: operator.ne}
# calls whose result describes a batched argument's shape, the same for every example
_SHAPE_CALLS = {len: "len_of", np.shape: "shape_of"}
_SHAPE_ATTRS = {"shape", "ndim", "size", "dtype"}


def _rewritten_shape(value, ctx: Context) -> bool:
    """A shape of a batched value already rewritten to read one example's."""
    if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute)
            and isinstance(value.func.value, gast.Name)
            and ctx.helpers.get(value.func.value.id) is batching):
        return False
    if value.func.attr == "attribute":
        return isinstance(value.args[1], gast.Constant) and value.args[1].value in _SHAPE_ATTRS
    return value.func.attr in _SHAPE_CALLS.values()


def _shape_only(value, ctx: Context) -> bool:
    if isinstance(value, gast.Attribute) and value.attr in _SHAPE_ATTRS:
        return True
    if _rewritten_shape(value, ctx):
        return True
    if isinstance(value, gast.Call):
        try:
            return static_value(value.func, ctx) in _SHAPE_CALLS
        except (KeyError, TypeError):
            return False
    return False


def value_reads(node, ctx: Context) -> set[str]:
    """The names ``node`` reads for their values, not only for their shapes."""
    if _shape_only(node, ctx):
        return set()
    if isinstance(node, gast.Name):
        return {node.id} if isinstance(node.ctx, gast.Load) else set()
    out = set()
    for child in gast.iter_child_nodes(node):
        out |= value_reads(child, ctx)
    return out


def batched_names(tree, ctx: Context, inputs: set[str]) -> set[str]:
    """Names holding batched values: the batched parameters and all they flow into."""
    batched = set(inputs)
    defs = list(definitions(tree, ctx.local_names))
    # a name assigned under a condition on batched values differs between examples too
    guarded = [(node.test if isinstance(node, (gast.If, gast.While)) else node.iter,
                {n for s in node.body + node.orelse for n in A.names_written(s)})
               for node in gast.walk(tree) if isinstance(node, (gast.If, gast.While, gast.For))]
    changed = True
    while changed:
        changed = False
        for targets, value in defs:
            if targets <= batched or _shape_only(value, ctx):
                continue
            if value_reads(value, ctx) & batched:
                batched |= targets
                changed = True
        for test, targets in guarded:
            if not targets <= batched and value_reads(test, ctx) & batched:
                batched |= targets
                changed = True
    return batched


class _Batcher:
    """Rewrites the statements of one normalized function (see the module docstring)."""

    def __init__(self, ctx: Context, batched: set[str], size: str):
        self.ctx, self.batched, self.size = ctx, batched, size
        self.bound = set(ctx.params)  # names certainly bound at the statement being rewritten
        self.selects = 0  # branches lowered to a choice per example
        self.bv = ctx.helper(batching, "_bv")
        self.op = ctx.helper(operator, "operator")

    def is_batched(self, node) -> bool:
        return bool(value_reads(node, self.ctx) & self.batched)

    def unbatch_shapes(self, node):
        """``node`` with each shape of a batched value (``len(x)``, ``x.shape``) read as
        one example's."""
        if _rewritten_shape(node, self.ctx):
            return node
        if _shape_only(node, self.ctx) and A.names_read(node) & self.batched:
            return self.expression(node, node)
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.AST):
                setattr(node, field, self.unbatch_shapes(value))
            elif isinstance(value, list):
                setattr(node, field, [self.unbatch_shapes(v) if isinstance(v, gast.AST)
                                      else v for v in value])
        return node

    def helper(self, name: str, *args) -> gast.Call:
        return A.call(A.attr(self.bv, name), *args, A.load(self.size))

    def mask(self, items) -> gast.Tuple:
        """The tuple of keys (positions, keyword names) of batched items."""
        return gast.Tuple(elts=[A.const(k) for k, v in items if self.is_batched(v)],
                          ctx=gast.Load())

    # -- statements -----------------------------------------------------------------------
    def block(self, body: list, top: bool = False) -> list:
        out = []
        outer = set(self.bound)
        for stmt in body:
            out.extend(self.statement(stmt))
            if isinstance(stmt, gast.Assign):
                self.bound |= A.names_written(stmt)
        if not top:  # what a branch or loop body assigns may be unbound after it
            self.bound = outer
        return out

    def statement(self, stmt) -> list:
        if isinstance(stmt, (gast.Assign, gast.Return, gast.Expr)) and stmt.value is not None:
            # shapes first: np.zeros(x.shape) must get one example's shape
            stmt.value = self.unbatch_shapes(stmt.value)
            pre: list = []
            self.atomize_operands(stmt.value, pre, stmt)
            if pre:
                return self.block(pre) + self.statement(stmt)
        if isinstance(stmt, gast.Assign):
            return [self.assign(stmt)]
        if isinstance(stmt, gast.Return):
            return [self.return_(stmt)]
        if isinstance(stmt, (gast.If, gast.With)) and self._in_try(stmt) \
                and self.is_batched(stmt):
            # one example raising would send every example to the handler
            self.ctx.problem(stmt, "a 'try' body computing a batched value",
                             "Each example may raise on its own: this runs per example.")
        if isinstance(stmt, gast.If) and self.is_batched(stmt.test):
            lowered = self.select_branches(stmt)
            if lowered is not None:
                return lowered
        if isinstance(stmt, (gast.If, gast.While)):
            if self.is_batched(stmt.test):
                kind = "if" if isinstance(stmt, gast.If) else "while"
                self.ctx.problem(stmt, f"'{kind}' on a batched value",
                                 "Use np.where(cond, a, b) to choose per example.")
            stmt.test = self.unbatch_shapes(stmt.test)
            stmt.body, stmt.orelse = self.block(stmt.body), self.block(stmt.orelse)
            return [stmt]
        if isinstance(stmt, gast.For):
            if self.is_batched(stmt.iter):  # (desugar made 'for v in x' a loop over a range)
                self.ctx.problem(stmt, "a 'for' loop over a batched value",
                                 "Loop over a range of its length instead.")
            stmt.iter = self.unbatch_shapes(stmt.iter)
            stmt.body, stmt.orelse = self.block(stmt.body), self.block(stmt.orelse)
            return [stmt]
        if isinstance(stmt, gast.Expr):
            if isinstance(stmt.value, gast.Call) and self.is_batched(stmt.value):
                stmt.value = self.call(stmt.value, stmt)
            return [stmt]
        if isinstance(stmt, (gast.With, gast.Try)):
            for field in ("body", "orelse", "finalbody"):
                if hasattr(stmt, field):
                    setattr(stmt, field, self.block(getattr(stmt, field)))
            for handler in getattr(stmt, "handlers", []):
                handler.body = self.block(handler.body)
            if isinstance(stmt, gast.With) and any(self.is_batched(i) for i in stmt.items):
                self.ctx.problem(stmt, "a 'with' statement on a batched value")
            return [stmt]
        if self.is_batched(stmt):
            self.ctx.problem(stmt, f"'{type(stmt).__name__}' reading a batched value")
        return [stmt]

    def _in_try(self, stmt) -> bool:
        """A statement of a lowered ``try`` body: it enters the statement's catcher
        (``_rt.enter_context(_catchN, ...)`` or ``with _rt.managed(_catchN, ...)``)."""
        return any(A.called_attr(n, self.ctx.rt) in ("enter_context", "managed") and n.args
                   and isinstance(n.args[0], gast.Name) and n.args[0].id.startswith("_catch")
                   for n in gast.walk(stmt))

    def select_branches(self, stmt: gast.If):
        """``if c: a = ... else: a = ...`` whose condition is batched, when both branches
        only assign names: both run for every example, then each name takes, per example,
        the value of the branch that example takes (``_bv.select``, np.where). None when the
        branches do anything else, or assign a name that may be unbound before."""
        branches = (stmt.body, stmt.orelse)
        if not all(isinstance(s, gast.Assign) and len(s.targets) == 1
                   and isinstance(s.targets[0], gast.Name) for b in branches for s in b):
            return None
        assigned = [{s.targets[0].id for s in b} for b in branches]
        read_after = self.reads_outside(stmt)
        # names one branch assigns and nothing outside reads (its temporaries) need no choice
        names = sorted(n for n in assigned[0] | assigned[1] if n in read_after
                       or n in self.bound or n in assigned[0] & assigned[1])
        if any(n not in self.bound and not (n in assigned[0] and n in assigned[1])
               for n in names):
            return None
        cond = self.ctx.namer.fresh()
        self.batched.add(cond)
        out = self.statement(A.assign(cond, stmt.test, at=stmt))
        results = []
        for branch in branches:
            renamed: dict = {}
            for s in branch:
                value = A.substitute(s.value, renamed)
                tmp = self.ctx.namer.fresh()
                if self.is_batched(value):
                    self.batched.add(tmp)
                out += self.statement(A.assign(tmp, value, at=s))
                renamed[s.targets[0].id] = A.load(tmp)
            results.append(renamed)
        for n in names:
            a, b = (r.get(n, A.load(n)) for r in results)
            out.append(A.assign(n, self.helper("select", A.load(cond), a, b, self.mask(
                [(0, a), (1, b)])), at=stmt))
        self.selects += 1
        return out

    def reads_outside(self, stmt) -> set[str]:
        """Names the function reads anywhere but inside ``stmt``."""
        inside = {id(n) for n in gast.walk(stmt)}
        return {n.id for n in gast.walk(self.tree) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load) and id(n) not in inside}

    def atomize_operands(self, node, pre: list, stmt) -> None:
        """Give each operand of ``node`` that computes from batched values its own
        assignment in ``pre`` (the anf pass leaves expressions the activity analysis deemed
        constant, such as comparisons, nested; every batched operation must be rewritten)."""
        def atom(child):
            if child is None or isinstance(child, (gast.Name, gast.Constant, gast.Slice)) \
                    or _shape_only(child, self.ctx) or not self.is_batched(child):
                return child
            tmp = self.ctx.namer.fresh()
            self.batched.add(tmp)
            pre.append(A.assign(tmp, child, at=stmt))
            return A.load(tmp)

        if isinstance(node, gast.BinOp):
            node.left, node.right = atom(node.left), atom(node.right)
        elif isinstance(node, gast.UnaryOp):
            node.operand = atom(node.operand)
        elif isinstance(node, gast.Compare):
            node.left = atom(node.left)
            node.comparators = [atom(c) for c in node.comparators]
        elif isinstance(node, gast.Call):
            node.args = [atom(a) for a in node.args]
            for k in node.keywords:
                k.value = atom(k.value)
            if isinstance(node.func, gast.Attribute):
                node.func.value = atom(node.func.value)
        elif isinstance(node, gast.Attribute):
            node.value = atom(node.value)
        elif isinstance(node, gast.Subscript):
            node.value = atom(node.value)
            parts = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
            for part in parts:
                if isinstance(part, gast.Slice):
                    part.lower, part.upper, part.step = (atom(part.lower), atom(part.upper),
                                                         atom(part.step))
            if isinstance(node.slice, gast.Tuple):
                node.slice.elts = [atom(e) for e in node.slice.elts]
            else:
                node.slice = atom(node.slice)
        elif isinstance(node, (gast.Tuple, gast.List)):
            node.elts = [atom(e) for e in node.elts]
        elif isinstance(node, gast.Dict):
            node.values = [atom(v) for v in node.values]

    def assign(self, stmt: gast.Assign):
        target = stmt.targets[0]
        if not isinstance(target, gast.Name) or len(stmt.targets) > 1:
            if self.is_batched(stmt):
                self.ctx.problem(stmt, "an assignment of a batched value to an attribute or "
                                       "item of an object",
                                 "Return the value instead of storing it.")
            return stmt
        if _shape_only(stmt.value, self.ctx) or not self.is_batched(stmt.value):
            # a batched value's shape (the same for all examples)
            stmt.value = self.unbatch_shapes(stmt.value)
            if target.id in self.batched:
                stmt.value = self.helper("lift", stmt.value)
            return stmt
        stmt.value = self.expression(stmt.value, stmt)
        return stmt

    def return_(self, stmt: gast.Return):
        if stmt.value is not None and not self.is_batched(stmt.value):
            stmt.value = self.helper("lift", stmt.value)
        elif stmt.value is not None:
            stmt.value = self.expression(stmt.value, stmt)
        return stmt

    # -- expressions (atomic operands after the anf pass) ---------------------------------
    def expression(self, value, stmt):
        if isinstance(value, (gast.Name, gast.Constant)):
            return value
        if isinstance(value, gast.BinOp):
            fn = A.attr(self.op, BINOPS[type(value.op)].__name__)
            return self.apply(fn, [value.left, value.right], [], stmt)
        if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.Not):
            return self.helper("logical_not", value.operand)  # (each example's truth value)
        if isinstance(value, gast.UnaryOp):
            return value  # -x, +x, ~x keep every axis where it is
        if isinstance(value, gast.Compare) and len(value.ops) == 1 \
                and type(value.ops[0]) in _COMPARES:
            fn = A.attr(self.op, _COMPARES[type(value.ops[0])].__name__)
            return self.apply(fn, [value.left, value.comparators[0]], [], stmt)
        if isinstance(value, gast.Call):
            return self.call(value, stmt)
        if isinstance(value, gast.Attribute):
            return self.helper("attribute", value.value, A.const(value.attr))
        if isinstance(value, gast.Subscript):
            index = _index_value(value.slice)
            if index is not None:
                return self.helper("getitem", value.value, index,
                                   self.mask([(0, value.value), (1, index)]))
        if isinstance(value, (gast.Tuple, gast.List)) and not any(
                isinstance(e, gast.Starred) for e in value.elts):
            return self.helper("pack", value, self.mask(list(enumerate(value.elts))))
        if isinstance(value, gast.Dict) and None not in value.keys:
            return self.helper("pack", value, self.mask(list(enumerate(value.values))))
        self.ctx.problem(stmt, f"'{type(value).__name__}' on a batched value",
                         "Write it with numpy operations on whole arrays.")
        return value

    def call(self, call: gast.Call, stmt):
        if any(isinstance(a, gast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            self.ctx.problem(stmt, "'*args' or '**kwargs' unpacking of batched values",
                             "Pass each argument explicitly.")
            return call
        func = call.func
        if self.is_batched(func) and not isinstance(func, gast.Attribute):
            self.ctx.problem(stmt, "calling a batched value")
            return call
        try:
            target = static_value(func, self.ctx)
        except (KeyError, TypeError):
            target = None
        if isinstance(target, np.ufunc) and target.nin == 1 and len(call.args) == 1 \
                and not call.keywords:
            return call  # np.tanh(x) and the like keep every axis where it is
        if target in _SHAPE_CALLS and len(call.args) == 1:
            return A.call(A.attr(self.bv, _SHAPE_CALLS[target]), call.args[0])
        if target is None and isinstance(func, gast.Attribute):  # a method of a local value
            items = [(-1, func.value)] + list(enumerate(call.args)) + \
                [(k.arg, k.value) for k in call.keywords]
            return self.helper("apply_method", func.value, A.const(func.attr),
                               _tuple(call.args), _dict(call.keywords), self.mask(items))
        return self.apply(func, call.args, call.keywords, stmt,
                          getattr(call, "srcgrad_consumed", ()))

    def apply(self, fn, args, keywords, stmt, consumed=()) -> gast.Call:
        """``batched_call(fn, args, kwargs, batched, size[, handed over])``; the names of the
        parameters the call site hands over (desugar.hand_over) go along, so the callee's
        batched build may update them in place too."""
        items = list(enumerate(args)) + [(k.arg, k.value) for k in keywords]
        extra = [_tuple([A.const(n) for n in sorted(consumed)])] if consumed else []
        return A.call(A.load(self.ctx_call), fn, _tuple(args), _dict(keywords),
                      self.mask(items), A.load(self.size), *extra)


def _tuple(items) -> gast.Tuple:
    return gast.Tuple(elts=list(items), ctx=gast.Load())


def _dict(keywords) -> gast.Dict:
    return gast.Dict(keys=[A.const(k.arg) for k in keywords],
                     values=[k.value for k in keywords])


def _index_value(node):
    """An index expression as a value (slices become ``slice(...)`` calls)."""
    if isinstance(node, gast.Slice):
        parts = [p if p is not None else A.const(None)
                 for p in (node.lower, node.upper, node.step)]
        return A.call(A.load("slice"), *parts)
    if isinstance(node, gast.Tuple):
        elts = [_index_value(e) for e in node.elts]
        return None if any(e is None for e in elts) else _tuple(elts)
    if isinstance(node, gast.Starred):
        return None
    return node


def batch(tree: gast.FunctionDef, ctx: Context, inputs: tuple[str, ...],
          call_helper) -> gast.Module:
    """``_make(...)`` returning ``<name>_batched``: ``tree`` run on batched ``inputs``.

    ``call_helper`` is the function generated code calls for each function call with
    batched arguments: ``call(fn, args, kwargs, batched_keys, size)``.
    """
    batched = batched_names(tree, ctx, set(inputs))
    size = ctx.namer.unique("_B")
    batcher = _Batcher(ctx, batched, size)
    batcher.ctx_call = ctx.helper(call_helper, "batched_call")
    batcher.tree = tree
    if builtins.slice is not ctx.globals.get("slice", builtins.slice):
        ctx.problem(tree, "a global named 'slice' shadowing the builtin")
    if ctx.src.filename.startswith("<srcgrad") and any(
            isinstance(n, gast.Name) and "_tape" in n.id or isinstance(n, gast.Attribute)
            and "tape" in n.attr for n in gast.walk(tree)):
        # a generated sweep's tape holds loop counts and branch flags, which decide control
        # flow: batched, they would be data-dependent branches
        ctx.problem(tree, "a generated sweep with a tape (the function has a loop or branch)")
    body = batcher.block(tree.body, top=True)
    ctx.raise_problems()
    first = [A.assign(size, A.call(A.attr(batcher.bv, "batch_size"),
                                   *[A.load(n) for n in inputs]))]
    # a parameter passed unbatched but assigned batched values later (a loop-carried state):
    # lifted at entry, so that a batched name always holds a batched value
    first += [A.assign(p, batcher.helper("lift", A.load(p)))
              for p in ctx.params if p in batched and p not in inputs]
    name = tree.name if tree.name != "_lambda" else "lambda"
    docstring = body[:1] if body and isinstance(body[0], gast.Expr) and isinstance(
        body[0].value, gast.Constant) and isinstance(body[0].value.value, str) else []
    fn = A.function_def(f"{name}_batched", A.signature_of(tree.args),
                   docstring + first + body[len(docstring):])
    return factory_module(ctx, [fn], [fn.name])
