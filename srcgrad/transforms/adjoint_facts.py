"""Facts the reverse pass reads about a normalized function, computed once from its tree.

``analyze`` returns a frozen ``ReverseFacts``; nothing here emits code or touches the namer,
so each fact can be checked on a three-line function. What it finds:

- overwrites: names assigned more than once or in a loop, which assignments must push the
  value they overwrite, and which names may be read before any assignment ran;
- loop invariants: an assignment computing the same value in every iteration needs no push;
- sequences (``+`` concatenates) and numeric names (``+`` accumulates their adjoints);
- shape roots: a name whose shape a value always has.

Facts about statements are keyed by ``id`` of the node (``ReverseFacts.pushes_value`` takes
the node itself).
"""
from __future__ import annotations

__all__ = ["ReverseFacts", "analyze", "hands_lazy_items", "loop_invariant"]

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import gast
import numpy as np

from .. import runtime
from . import astutil as A
from .context import Context


@dataclass(frozen=True)
class ReverseFacts:
    overwritten: frozenset[str]  # assigned more than once, or in a loop
    pushes: frozenset[int]  # ids of assignments that push the value they overwrite
    maybe_unbound: frozenset[str]  # first assigned in a branch or loop that may not run
    none_init: frozenset[str]  # overwritten and maybe unbound: pre-bound to None
    in_loop: frozenset[int]  # ids of statements inside a loop
    nested: frozenset[int]  # ids of statements inside a branch or loop
    sequences: frozenset[str]  # every definition a tuple or list
    numeric: frozenset[str]  # every definition arithmetic or a rule call
    shape_root: Mapping[str, str]  # a name whose shape the value always has

    def pushes_value(self, assign: gast.Assign) -> bool:
        return id(assign) in self.pushes


def analyze(tree: gast.FunctionDef, ctx: Context) -> ReverseFacts:
    """The facts about ``tree`` (normalized, ending with ``return name``)."""
    overwrites = _Overwrites(tree, ctx)
    sequences = frozenset(_sequence_names(tree, ctx))
    return ReverseFacts(
        overwritten=frozenset(overwrites.overwritten),
        pushes=frozenset(overwrites.pushes),
        maybe_unbound=frozenset(overwrites.first_nested),
        none_init=frozenset(overwrites.first_nested & overwrites.overwritten),
        in_loop=frozenset(overwrites.in_loop),
        nested=frozenset(overwrites.nested),
        sequences=sequences,
        numeric=frozenset(_numeric_names(tree, ctx) - sequences),
        shape_root=MappingProxyType(_shape_roots(tree, ctx)))


# -- overwrites and loop invariants ---------------------------------------------------------
class _Overwrites:
    """Names assigned more than once or in a loop; assignments that must push the old value;
    names whose first assignment may not run."""

    def __init__(self, tree, ctx: Context):
        self.ctx = ctx
        self.in_loop: set[int] = set()
        self.nested: set[int] = set()
        self.count: dict[str, int] = {p: 1 for p in ctx.params}
        self.assigned_in_loop: set[str] = set()
        self.first_top: set[int] = set()
        self.first_nested: set[str] = set()
        self.seen: set[str] = set(ctx.params)
        self.outermost: dict[int, gast.stmt] = {}  # statement id -> outermost enclosing loop
        self.stores: dict[int, set[str]] = {}  # id(loop) -> names assigned in it
        self.walk(tree.body, 0, False)
        self.overwritten = {v for v, n in self.count.items() if n > 1} | self.assigned_in_loop
        self.pushes = {id(node) for node in gast.walk(tree) if self.must_push(node)}

    def walk(self, stmts, depth: int, looping: bool, outer=None) -> None:
        for s in stmts:
            if looping:
                self.in_loop.add(id(s))
                self.outermost[id(s)] = outer
            if depth:
                self.nested.add(id(s))
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                self.assigned(s, s.targets[0].id, depth, looping)
            elif isinstance(s, (gast.For, gast.While)):
                if isinstance(s, gast.For) and s.target.id not in self.seen:
                    self.seen.add(s.target.id)
                    self.first_nested.add(s.target.id)  # unbound if the loop never runs
                self.walk(s.body, depth + 1, True, outer or s)
                self.walk(s.orelse, depth + 1, looping, outer)
            elif isinstance(s, gast.If):
                self.walk(s.body, depth + 1, looping, outer)
                self.walk(s.orelse, depth + 1, looping, outer)

    def assigned(self, s, v: str, depth: int, looping: bool) -> None:
        self.count[v] = self.count.get(v, 0) + 1
        if looping:
            self.assigned_in_loop.add(v)
        if v not in self.seen:
            self.seen.add(v)
            if depth == 0:
                self.first_top.add(id(s))
            else:
                self.first_nested.add(v)

    def must_push(self, node) -> bool:
        if not (isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name)):
            return False
        v = node.targets[0].id
        return v in self.overwritten and id(node) not in self.first_top and not (
            self.count[v] == 1 and loop_invariant(node, self.stored_in(node), self.ctx))

    def stored_in(self, s) -> set[str] | None:
        """The names the outermost loop around ``s`` assigns (None outside loops)."""
        loop = self.outermost.get(id(s))
        if loop is None:
            return None
        if id(loop) not in self.stores:
            self.stores[id(loop)] = {n.id for n in gast.walk(loop) if isinstance(n, gast.Name)
                                     and isinstance(n.ctx, gast.Store)}
        return self.stores[id(loop)]


def loop_invariant(s: gast.Assign, loop_stores: set[str] | None, ctx: Context) -> bool:
    """Whether ``s`` computes the same value in every iteration of its outermost enclosing
    loop, which assigns ``loop_stores``: a pure operation on names no enclosing loop
    assigns. Its one assignment then needs no saving: every backward iteration reads the
    same value."""
    if loop_stores is None:
        return False
    value = s.value
    if isinstance(value, gast.Call):
        r = ctx.resolved.get(id(value))
        if r is None or r.kind not in ("rule", "method"):
            return False
    elif not isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Name, gast.Constant,
                                gast.Attribute, gast.Subscript)):
        return False
    if any(isinstance(n, (gast.Call, gast.Lambda)) and n is not value
           for n in gast.walk(value)):
        return False
    return not (A.names_read(value) & loop_stores)


# -- kinds of values ------------------------------------------------------------------------
def _definitions(tree) -> dict[str, list]:
    defs: dict[str, list] = {}
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            defs.setdefault(node.targets[0].id, []).append(node.value)
    return defs


def _sequence_names(tree, ctx: Context) -> set[str]:
    """Names every definition of which is a tuple or list (so ``+`` concatenates)."""
    defs = _definitions(tree)
    seqs: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in defs.items():
            if name not in seqs and all(_is_sequence(v, seqs, ctx) for v in values):
                seqs.add(name)
                changed = True
    return seqs


def _is_sequence(value, seqs, ctx: Context) -> bool:
    if isinstance(value, (gast.Tuple, gast.List)):
        return True
    if isinstance(value, gast.Name):
        return value.id in seqs
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add):
        return any(isinstance(o, gast.Name) and o.id in seqs
                   for o in (value.left, value.right))
    if isinstance(value, gast.Call):
        r = ctx.resolved.get(id(value))
        return r is not None and r.obj in (runtime.list_append, runtime.list_extend,
                                           runtime.list_insert, runtime.list_delete,
                                           runtime.as_list, runtime.as_tuple)
    return False


def _is_numeric_value(v, ctx: Context) -> bool:
    if isinstance(v, (gast.BinOp, gast.UnaryOp)):
        return True
    r = ctx.resolved.get(id(v)) if isinstance(v, gast.Call) else None
    # the runtime's adjoint helpers (unbroadcast, part...) with rules also pass lists and
    # dicts through: generated sweeps differentiated again
    return r is not None and r.kind in ("rule", "method") \
        and getattr(r.obj, "__module__", None) != runtime.__name__


def _numeric_names(tree, ctx: Context) -> set[str]:
    """Names every definition of which is arithmetic or a rule call: plain ``+`` is a valid
    accumulation for their adjoints (others go through ``_rt.add``)."""
    numeric = {name for name, values in _definitions(tree).items()
               if name not in ctx.params and all(_is_numeric_value(v, ctx) for v in values)}
    # an operand of arithmetic is a number or an array (the rules assume so anyway)
    for node in gast.walk(tree):
        if isinstance(node, gast.BinOp) and not isinstance(node.op, gast.MatMult):
            numeric |= {o.id for o in (node.left, node.right) if isinstance(o, gast.Name)}
        elif isinstance(node, gast.UnaryOp) and isinstance(node.operand, gast.Name):
            numeric.add(node.operand.id)
    return numeric


# -- shape roots ----------------------------------------------------------------------------
def _shape_roots(tree, ctx: Context) -> dict[str, str]:
    """For each name, a name whose shape it always has (itself when nothing better is
    known): copies, unary elementwise operations, and elementwise operations with
    constants or with operands of one shape keep their operand's shape. Every definition
    of a name must agree, so a name assigned in a loop gets a root only if each
    iteration's value has that same shape."""
    defs: dict[str, list] = {p: [None] for p in ctx.params}
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            defs.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, gast.For):
            defs.setdefault(node.target.id, []).append(None)
    root = {name: name for name in defs}
    changed = True
    while changed:
        changed = False
        for name, values in defs.items():
            if None in values:  # a parameter or loop target: its own root
                continue
            candidates = {_root_of(v, root, ctx) for v in values}
            new = candidates.pop() if len(candidates) == 1 and None not in candidates \
                else name
            if root[name] != new:
                root[name] = new
                changed = True
    return root


def _root_of(value, root: dict[str, str], ctx: Context):
    if isinstance(value, gast.Name):
        return root.get(value.id)
    operands = _elementwise_operands(value, ctx)
    if operands is None:
        return None
    if any(not isinstance(o, (gast.Name, gast.Constant)) for o in operands) \
            or any(isinstance(o, gast.Constant) and not isinstance(o.value, (int, float))
                   for o in operands):
        return None
    roots = {root.get(o.id) for o in operands if isinstance(o, gast.Name)}
    return roots.pop() if len(roots) == 1 and None not in roots else None


def _elementwise_operands(value, ctx: Context):
    """The operands of an elementwise operation (whose result has their broadcast shape)."""
    if isinstance(value, gast.UnaryOp) and not isinstance(value.op, gast.Not):
        return [value.operand]
    if isinstance(value, gast.BinOp) and not isinstance(value.op, gast.MatMult):
        return [value.left, value.right]
    if isinstance(value, gast.Call) and not value.keywords:
        r = ctx.resolved.get(id(value))
        if r is not None and r.kind == "rule" and isinstance(r.obj, np.ufunc) \
                and r.obj.nin == len(value.args) and r.obj.nout == 1:
            return list(value.args)
    return None


def hands_lazy_items(rule) -> bool:
    """Whether ``rule``'s vjp may hand an operand the lazy zero: the runtime's container
    helpers (list_append, element, setitem...) do for an item nobody read."""
    return rule.name.startswith("runtime.")
