"""Facts the reverse pass reads about a normalized function, computed once from its tree.

``analyze`` returns a frozen ``ReverseFacts``; nothing here emits code or touches the namer,
so each fact can be checked on a three-line function. What it finds:

- overwrites: names assigned more than once or in a loop, which assignments must push the
  value they overwrite, and which names may be read before any assignment ran;
- loop invariants: an assignment computing the same value in every iteration needs no push;
- sequences (``+`` concatenates) and numeric names (``+`` accumulates their adjoints);
- shape roots: a name whose shape a value always has;
- zero adjoints: a dataflow analysis over the backward sweep, in the order it runs, of the
  adjoints known to be zero (never materialized) and of those that may hold the lazy zero
  ``0.0`` at run time. Loops are solved as a fixed point over these sets, so the emitter
  reads the state at the top of each backward loop body instead of generating the body
  until it settles.

Facts about statements are keyed by ``id`` of the node (``ReverseFacts.pushes_value``,
``ReverseFacts.loop_top`` take the node itself). Adjoint states hold primal names: ``x``
stands for ``bx``.
"""
from __future__ import annotations

__all__ = ["AdjointSets", "AdjointState", "ReverseFacts", "analyze", "contribution_targets",
           "hands_lazy_items", "join", "loop_invariant"]

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import gast
import numpy as np

from .. import runtime
from ..rules import lookup
from . import adjoint_tape_op, is_tape_op
from . import astutil as A
from .binding import bind_rule_call, split_spread
from .cleanup import number
from .context import Context, DynamicCall
from .resolve import BINOPS, UNARYOPS

# how a contribution changes its operand's adjoint: PLAIN makes it a real value; ITEM (an
# item read out of a container's adjoint) a value that is the lazy zero if nobody read it
PLAIN, ITEM = "plain", "item"


@dataclass(frozen=True)
class AdjointState:
    """Adjoints (by primal name) known to be zero, and those that may be the lazy zero."""

    zero: frozenset[str] = frozenset()
    maybe: frozenset[str] = frozenset()


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
    not_sequences: frozenset[str]  # adjoints needing no check for lists (_never_sequences)
    shape_root: Mapping[str, str]  # a name whose shape the value always has
    loop_tops: Mapping[int, AdjointState]  # id(loop) -> state at the top of its backward body
    end: AdjointState  # after the whole backward sweep

    def pushes_value(self, assign: gast.Assign) -> bool:
        return id(assign) in self.pushes

    def loop_top(self, loop: gast.stmt) -> AdjointState:
        return self.loop_tops[id(loop)]


def analyze(tree: gast.FunctionDef, ctx: Context, user_calls: dict) -> ReverseFacts:
    """The facts about ``tree`` (normalized, ending with ``return name``) and its adjoint.

    ``user_calls`` maps ``id(call)`` to the adjoint (or ``DynamicCall``) of each call whose
    backward sweep is another generated function's."""
    body = tree.body[:-1]
    ret = tree.body[-1].value
    overwrites = _Overwrites(tree, ctx)
    sequences = frozenset(_sequence_names(tree, ctx))
    start = set(ctx.active) | set(ctx.wrt_names)
    if isinstance(ret, gast.Name):
        start.discard(ret.id)  # the seed: the only adjoint given at the start
    flow = _ZeroFlow(ctx, user_calls, sequences)
    state = AdjointSets(start)
    flow.block(body, state)
    return ReverseFacts(
        overwritten=frozenset(overwrites.overwritten),
        pushes=frozenset(overwrites.pushes),
        maybe_unbound=frozenset(overwrites.first_nested),
        none_init=frozenset(overwrites.first_nested & overwrites.overwritten),
        in_loop=frozenset(overwrites.in_loop),
        nested=frozenset(overwrites.nested),
        sequences=sequences,
        numeric=frozenset((_numeric_names(tree, ctx) | _product_operands(tree, ctx))
                          - sequences - _joined_with_sequences(tree, sequences)),
        not_sequences=frozenset(_never_sequences(tree, ctx)),
        shape_root=MappingProxyType(_shape_roots(tree, ctx)),
        loop_tops=MappingProxyType(dict(flow.loop_tops)),
        end=state.frozen())


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
    """Names every definition of which is a tuple or list (so ``+`` concatenates). The
    largest such set: ``rows = [a]`` then ``rows = rows + [b]`` (``rows += [b]``) and
    ``rows = setitem(rows, k, v)`` keep ``rows`` a list, though each of the latter reads it
    (counting only definitions already known to be lists left it out, and its adjoint was
    split as if '+' added numbers: a wrong gradient for ``b``). A parameter, or a name bound
    other than by a plain assignment (a loop target...), may hold anything."""
    defs = _definitions(tree)
    plain = {id(node.targets[0]) for node in gast.walk(tree)
             if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name)}
    other = {node.id for node in gast.walk(tree) if isinstance(node, gast.Name)
             and isinstance(node.ctx, gast.Store) and id(node) not in plain}
    # None definitions do not count against a name (``l = None`` before ``l = l + [a]``, and
    # the ``_t1 = None`` a generated forward sweep starts with: '+' on None fails in Python)
    only_none = {name for name, values in defs.items()
                 if all(is_none_constant(v) for v in values)}
    seqs = set(defs) - other - only_none - set(ctx.params) - {a.id for a in _parameters(tree)}
    vararg = tree.args.vararg
    if vararg is not None and vararg.id not in defs and vararg.id not in other:
        seqs.add(vararg.id)  # *args: a tuple, never rebound
    changed = True
    while changed:
        changed = False
        for name in sorted(seqs):
            if not all(_is_sequence(v, seqs, ctx) for v in defs.get(name, ())):
                seqs.discard(name)
                changed = True
    return seqs


def concatenation(value: gast.BinOp, sequences):
    """The runtime function whose rule differentiates ``a + b`` as a concatenation: the
    left operand known to be a tuple or list (``seq_concat``), or only the right one
    (``plus``, which decides at run time); None when neither is known to be one."""
    def known(node) -> bool:
        return isinstance(node, gast.Name) and node.id in sequences
    if known(value.left):
        return runtime.seq_concat
    return runtime.plus if known(value.right) else None


def binop_rule(value: gast.BinOp, sequences):
    """The function whose rule differentiates ``value``: the operator's, or, on operands
    known to be tuples or lists, concatenation's or repetition's."""
    fn = BINOPS[type(value.op)]
    if isinstance(value.op, gast.Add):
        return concatenation(value, sequences) or fn
    if isinstance(value.op, gast.Mult):
        return repetition(value, sequences) or fn
    return fn


def repetition(value: gast.BinOp, sequences):
    """``runtime.seq_repeat`` for ``a * b`` with an operand known to be a tuple or list
    (``[0.0] * n``: its adjoint sums the copies' cotangents; as a product of numbers, the
    list cotangent times n was repeated instead); None when neither is known to be one."""
    if any(isinstance(o, gast.Name) and o.id in sequences for o in (value.left, value.right)):
        return runtime.seq_repeat
    return None


def _parameters(tree) -> list:
    args = tree.args
    return [a for a in args.posonlyargs + args.args + args.kwonlyargs
            + [args.vararg, args.kwarg] if a is not None]


def is_none_constant(node) -> bool:
    """Whether ``node`` is the constant None (a definition '+' never reaches: see
    ``_sequence_names``)."""
    return isinstance(node, gast.Constant) and node.value is None


def _is_sequence(value, seqs, ctx: Context) -> bool:
    if isinstance(value, (gast.Tuple, gast.List)) or is_none_constant(value):
        return True
    if isinstance(value, gast.Name):
        return value.id in seqs
    if isinstance(value, gast.BinOp) and isinstance(value.op, (gast.Add, gast.Mult)):
        return any(isinstance(o, gast.Name) and o.id in seqs
                   for o in (value.left, value.right))
    if isinstance(value, gast.Call):
        r = ctx.resolved.get(id(value))
        if r is not None and r.obj is runtime.setitem:  # an item stored into a list
            return bool(value.args) and isinstance(value.args[0], gast.Name) \
                and value.args[0].id in seqs
        return r is not None and r.obj in (runtime.list_append, runtime.list_extend,
                                           runtime.list_insert, runtime.list_delete,
                                           runtime.as_list, runtime.as_tuple)
    return False


def _never_sequences(tree, ctx: Context) -> set[str]:
    """Names whose adjoint may skip unbroadcast's check for a list joined or repeated
    (``a + a``, ``a * 2``): the parameters, whose adjoints densify checks the same way, and
    the names every definition of which is a numpy ufunc's result (one output), or
    arithmetic of such names and numbers, or one of them. A list there is a parameter's, or made from one by
    arithmetic: its adjoint grows, repeated or joined, on the way back to that parameter,
    where densify finds its length wrong and refuses."""
    defs = _definitions(tree)
    stored = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
              and isinstance(n.ctx, gast.Store)}
    assigned = {n.targets[0].id for n in gast.walk(tree) if isinstance(n, gast.Assign)
                and isinstance(n.targets[0], gast.Name)}
    params = set(ctx.params)
    # (a name also bound otherwise, a loop target or an unpacking, may hold anything)
    out = (set(defs) - (stored - assigned) - params) | params

    def fine(v) -> bool:
        if isinstance(v, gast.Name):
            return v.id in out
        if isinstance(v, (gast.UnaryOp, gast.BinOp)):
            operands = [v.operand] if isinstance(v, gast.UnaryOp) else [v.left, v.right]
            return all(isinstance(o, gast.Name) and o.id in out or number(o) is not None
                       for o in operands)
        if isinstance(v, gast.Call):
            r = ctx.resolved.get(id(v))
            return r is not None and isinstance(r.obj, np.ufunc) and r.obj.nout == 1
        return False

    changed = True
    while changed:
        changed = False
        for name in sorted(out - params):
            if not all(fine(v) for v in defs[name]):
                out.discard(name)
                changed = True
    return out


def _is_numeric_value(v, ctx: Context) -> bool:
    if isinstance(v, (gast.BinOp, gast.UnaryOp)):
        return True
    r = ctx.resolved.get(id(v)) if isinstance(v, gast.Call) else None
    # the runtime's adjoint helpers (unbroadcast, part...) with rules also pass lists and
    # dicts through: generated sweeps differentiated again
    return r is not None and r.kind in ("rule", "method") \
        and getattr(r.obj, "__module__", None) != runtime.__name__


_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ListComp, gast.SetComp,
           gast.DictComp, gast.GeneratorExp, gast.ClassDef)


def _numeric_names(tree, ctx: Context) -> set[str]:
    """Names every definition of which is arithmetic or a rule call: plain ``+`` is a valid
    accumulation for their adjoints (others go through ``_rt.add``)."""
    numeric = {name for name, values in _definitions(tree).items()
               if name not in ctx.params and all(_is_numeric_value(v, ctx) for v in values)}
    # an operand of arithmetic is a number or an array (the rules assume so anyway), but a
    # list or tuple is one too (x + W, W a list): what a call it is handed to gives its
    # adjoint is then a list, which '+' would concatenate with another call's
    operands = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.BinOp) and not isinstance(node.op, gast.MatMult):
            operands |= {o.id for o in (node.left, node.right) if isinstance(o, gast.Name)}
        elif isinstance(node, gast.UnaryOp) and isinstance(node.operand, gast.Name):
            operands.add(node.operand.id)
    return numeric | (operands - _handed_to_calls(tree, ctx) - _read_as_sequence(tree))


def _joined_with_sequences(tree, sequences) -> set[str]:
    """Names joined by ``+`` with a known tuple or list (``a + [v]``, ``a`` a helper's list
    result or an inlined helper's parameter): they are sequences too, and the adjoints of two
    such joins are lists, which '+' would concatenate (silently wrong before session 33)."""
    out = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
            pair = (node.left, node.right)
            if any(isinstance(o, gast.Name) and o.id in sequences for o in pair):
                out |= {o.id for o in pair if isinstance(o, gast.Name)}
    return out


def _read_as_sequence(tree) -> set[str]:
    """Names indexed (``W[1]``), iterated or unpacked: a list operand (``x * W``, W a list
    of arrays) then also gets a list adjoint, which ``+`` would not add to an array one."""
    out = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name):
            out.add(node.value.id)
        elif isinstance(node, (gast.For, gast.comprehension)) and isinstance(node.iter, gast.Name):
            out.add(node.iter.id)
        elif isinstance(node, gast.Starred) and isinstance(node.value, gast.Name):
            out.add(node.value.id)
        elif isinstance(node, gast.Assign) and isinstance(node.value, gast.Name) \
                and isinstance(node.targets[0], (gast.Tuple, gast.List)):
            out.add(node.value.id)
    return out


def _handed_to_calls(tree, ctx: Context) -> set[str]:
    """Names passed to a call that is not a rule's (a user function's, whose adjoint for a
    list argument is a list), or read in a nested scope."""
    handed = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.Call):
            r = ctx.resolved.get(id(node))
            if r is None or r.kind not in ("rule", "nondiff"):
                args = list(node.args) + [k.value for k in node.keywords]
                handed |= {n.id for a in args for n in gast.walk(a) if isinstance(n, gast.Name)}
        elif node is not tree and isinstance(node, _SCOPES):
            handed |= {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    return handed


def _product_operands(tree, ctx: Context) -> set[str]:
    """In ``grad``'s own sweeps (Context.lean), the names read only as operands of
    arithmetic, at least once of a matrix product: every contribution to their adjoints is
    then an arithmetic rule's array or number, and plain ``+`` accumulates them (~0.2 us a
    step cheaper than ``_rt.add`` in an RNN's backward loop). Being an operand of ``@`` is not
    enough by itself, unlike other arithmetic: a list is one (``x @ W``), and the adjoints
    another use of it gets (a call's) are lists, which ``+`` would concatenate."""
    if not ctx.lean:
        return set()
    operands: set[int] = set()  # ids of the Name nodes that are operands of arithmetic
    products: set[str] = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.BinOp):
            for o in (node.left, node.right):
                if isinstance(o, gast.Name):
                    operands.add(id(o))
                    if isinstance(node.op, gast.MatMult):
                        products.add(o.id)
        elif isinstance(node, gast.UnaryOp) and isinstance(node.operand, gast.Name):
            operands.add(id(node.operand))
    # a name read any other way, or anywhere in a nested scope (its own adjoint code)
    nested = [n for s in tree.body for n in gast.walk(s) if isinstance(n, _SCOPES)]
    inner = {id(n) for scope in nested for n in gast.walk(scope)}
    other = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Load) and (id(n) not in operands or id(n) in inner)}
    return products - other


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


# -- zero adjoints --------------------------------------------------------------------------
class AdjointSets:
    """The state carried through a backward sweep, over names (primal names here, adjoint
    names in the emitter): adjoints known to be zero, and those maybe the lazy zero."""

    def __init__(self, zero, maybe=frozenset()):
        self.zero = set(zero)
        self.maybe = set(maybe) - self.zero

    def copy(self) -> AdjointSets:
        return AdjointSets(self.zero, self.maybe)

    def frozen(self) -> AdjointState:
        return AdjointState(frozenset(self.zero), frozenset(self.maybe))

    def written(self, name: str) -> None:
        """``name`` now holds a real value."""
        self.zero.discard(name)
        self.maybe.discard(name)

    def zeroed(self, name: str) -> None:
        """``name`` is zero again (its contributions were all passed on)."""
        self.zero.add(name)
        self.maybe.discard(name)

    def reset(self, names) -> None:
        """``names`` were set to the lazy zero on some path."""
        self.zero -= set(names)
        self.maybe |= set(names)

    def contribute(self, name: str, kind: str) -> None:
        """A contribution of ``kind`` (PLAIN or ITEM) was added to ``name``."""
        first = name in self.zero
        self.written(name)
        if kind == ITEM and first:
            self.maybe.add(name)


def join(a, b) -> tuple[set, set]:
    """``(zero, maybe)`` where control flow merges ``a`` and ``b``: zero only if zero on
    both paths, maybe zero if maybe zero on either or zero on one only."""
    zero = a.zero & b.zero
    maybe = (a.maybe | b.maybe | (a.zero - zero) | (b.zero - zero)) - zero
    return zero, maybe


class _ZeroFlow:
    """Runs the backward sweep's effect on the zero-adjoint state, statement by statement,
    in the order the backward sweep runs them (the mirror of ``ReverseGenerator``)."""

    def __init__(self, ctx: Context, user_calls: dict, sequences: frozenset[str]):
        self.ctx = ctx
        self.user_calls = user_calls
        self.sequences = sequences
        self.loop_tops: dict[int, AdjointState] = {}
        # (id(loop), state on entry) -> (top of the body, tops of the loops inside): a loop
        # met again with the same state (an enclosing loop's next trial) is not solved again
        self.solved: dict[tuple, tuple[AdjointState, dict]] = {}
        self.inner_loops: dict[int, list[int]] = {}  # id(loop) -> ids of the loops in it

    def block(self, stmts, state: AdjointSets) -> None:
        for s in reversed(stmts):
            self.stmt(s, state)

    def stmt(self, s, state: AdjointSets) -> None:
        ctx = self.ctx
        if isinstance(s, gast.Assign):
            self.assign(s, state)
        elif isinstance(s, gast.If):
            body, orelse = state.copy(), state.copy()
            self.block(s.body, body)
            self.block(s.orelse, orelse)
            state.zero, state.maybe = join(body, orelse)
        elif isinstance(s, (gast.For, gast.While)):
            self.loop(s, state)
        elif isinstance(s, gast.Expr) and is_tape_op(s.value, "push", ctx):
            tape, item = s.value.func.value, s.value.args[0]
            if tape.id in ctx.active and tape.id not in state.zero and self.is_active(item):
                state.contribute(item.id, PLAIN)
        elif isinstance(s, gast.Expr) and adjoint_tape_op(s.value, ctx) == "pop" \
                and s.value.args[0].id in ctx.active:
            state.written(s.value.args[0].id)

    def loop(self, s, state: AdjointSets) -> None:
        key = (id(s), frozenset(state.zero), frozenset(state.maybe))
        if key not in self.solved:
            entry = state.copy()
            while True:
                trial = entry.copy()
                self.block(s.body, trial)
                zero, maybe = join(entry, trial)
                if zero == entry.zero and maybe == entry.maybe:
                    break
                entry = AdjointSets(zero, maybe)
            if id(s) not in self.inner_loops:
                self.inner_loops[id(s)] = [id(n) for n in gast.walk(s) if n is not s
                                           and isinstance(n, (gast.For, gast.While))]
            inner = {i: self.loop_tops[i] for i in self.inner_loops[id(s)]
                     if i in self.loop_tops}
            self.solved[key] = (entry.frozen(), inner)
        top, inner = self.solved[key]
        self.loop_tops.update(inner)  # (as found for this state, the last one met)
        self.loop_tops[id(s)] = top
        state.zero, state.maybe = set(top.zero), set(top.maybe)

    def is_active(self, node) -> bool:
        return isinstance(node, gast.Name) and node.id in self.ctx.active

    def assign(self, s, state: AdjointSets) -> None:
        ctx = self.ctx
        if not isinstance(s.targets[0], gast.Name):
            return
        v, value = s.targets[0].id, s.value
        op = adjoint_tape_op(value, ctx)
        if is_tape_op(value, "pop", ctx) and value.func.value.id in ctx.active:
            self.tape_pop(value.func.value.id, v, state)
        elif op == "pop" and value.args[0].id in ctx.active:
            self.tape_pop(value.args[0].id, v, state)
        elif op == "push":
            self.adjoint_push(v, *value.args, state)
        elif v in ctx.active and not A.names_read(value) & ctx.active:
            state.zeroed(v)
        elif v in ctx.active:
            if v in state.maybe:  # contributions guarded by 'if not is_zero(bv)'
                inner = state.copy()
                self.contribute(s, v, inner)
                assigned = state.zero - inner.zero
                state.zero &= inner.zero
                state.reset(assigned)
            elif v not in state.zero:
                self.contribute(s, v, state)
            state.zeroed(v)

    def tape_pop(self, tape: str, v: str, state: AdjointSets) -> None:
        state.written(tape)
        if v in self.ctx.active:
            state.zeroed(v)

    def adjoint_push(self, target: str, tape, item, state: AdjointSets) -> None:
        live = target in self.ctx.active and target not in state.zero
        if live and self.is_active(item):
            state.contribute(item.id, PLAIN)
        if not (isinstance(tape, gast.Name) and tape.id == target):
            if self.is_active(tape) and target not in state.zero:
                state.contribute(tape.id, PLAIN)
            state.zeroed(target)  # a new stack: its adjoint starts here

    def contribute(self, s, v: str, state: AdjointSets) -> None:
        for name, kind in contribution_targets(s.value, self.ctx, self.user_calls,
                                               self.sequences):
            state.contribute(name, kind)


def contribution_targets(value, ctx: Context, user_calls: dict,
                         sequences=frozenset()) -> list[tuple[str, str]]:
    """``(name, PLAIN or ITEM)`` for each operand of ``v = value`` whose adjoint the
    backward sweep adds ``bv``'s contribution to, in the order it does."""
    def active(node) -> bool:
        return isinstance(node, gast.Name) and node.id in ctx.active

    if isinstance(value, gast.Name):
        return [(value.id, PLAIN)] if active(value) else []
    if isinstance(value, gast.BinOp):
        return _rule_targets(binop_rule(value, sequences), [value.left, value.right], {},
                             active)
    if isinstance(value, gast.UnaryOp):
        return _rule_targets(UNARYOPS[type(value.op)], [value.operand], {}, active)
    if isinstance(value, (gast.Tuple, gast.List, gast.Dict)):
        items = value.values if isinstance(value, gast.Dict) else value.elts
        return [(e.id, ITEM) for e in items if active(e)]
    if isinstance(value, gast.Attribute):
        r = ctx.resolved.get(id(value))
        if r is not None and r.kind == "rule":
            return _rule_targets(r.obj, [value.value], {}, active)
    if isinstance(value, (gast.Subscript, gast.Attribute)):
        return [(value.value.id, PLAIN)] if active(value.value) else []
    if isinstance(value, gast.Call):
        return _call_targets(value, ctx, user_calls, active)
    return []


def _call_targets(call, ctx: Context, user_calls: dict, active) -> list[tuple[str, str]]:
    r = ctx.resolved.get(id(call))
    if r is not None and r.obj is runtime.element and len(call.args) == 2:
        return [(call.args[0].id, PLAIN)] if active(call.args[0]) else []
    split = split_spread(call)
    args, keywords = split.args, split.keywords
    receiver = [call.func.value] if isinstance(call.func, gast.Attribute) else []
    if r is None or not any(active(a) for a in args + list(keywords.values()) + receiver
                            + split.values):
        return []
    if split.rest or split.double:
        if r.kind not in ("rule", "method") or any(active(a) for a in split.values):
            return []  # (refused by the emitter)
    if r.kind == "method":
        return _rule_targets(r.obj, receiver + args, keywords, active)
    if r.kind == "rule":
        return _rule_targets(r.obj, args, keywords, active)
    adjoint = user_calls.get(id(call))
    if r.kind not in ("user", "dynamic", "unknown", "attribute") or adjoint is None:
        return []
    if isinstance(adjoint, DynamicCall):
        operands = (receiver if adjoint.kind == "method" else []) + args \
            + [k.value for k in call.keywords]
    else:
        operands = adjoint.bind_positions(call)
    return [(a.id, PLAIN) for a in operands if a is not None and active(a)]


def _rule_targets(fn, args, keywords, active) -> list[tuple[str, str]]:
    rule = lookup(fn)
    if rule is None:
        return []  # (the emitter raises MissingRuleError)
    kind = ITEM if hands_lazy_items(rule) else PLAIN
    return [(a.id, kind) for _, _, a, _ in bind_rule_call(rule, args, keywords).diff
            if active(a)]


def hands_lazy_items(rule) -> bool:
    """Whether ``rule``'s vjp may hand an operand the lazy zero: the runtime's container
    helpers (list_append, element, setitem...) do for an item nobody read."""
    return rule.name.startswith("runtime.")
