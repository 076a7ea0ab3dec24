"""Guarantees afterwards: the tree is a module defining ``_make(...)``, which returns the
forward sweep (the user's code plus tape pushes, returning the value and what the backward
sweep needs) and the backward sweep (adjoints in reverse order, returning the gradients).

Values: the backward sweep sees every primal variable with the value it had at the same
point of the forward sweep. Straight-line code needs nothing for that; a variable that is
overwritten (reassigned, or assigned in a loop) and read by the backward sweep is pushed on
the tape before each overwrite and popped back after the adjoint of that assignment. Branch
decisions and loop trip counts are pushed after the statement and popped before its adjoint.

Adjoints: ``bx`` for ``x``. An adjoint known to be zero is never materialized: its first
contribution is assigned, later ones added; ``0.0`` stands for zero where control flow merges.

Generation reads the facts of adjoint_facts.py (overwrites, loop invariants, shape roots,
and the adjoints known to be zero at the top of each backward loop, a dataflow fixed point)
and emits the backward sweep once; ``finish`` then drops the restores of values the whole
sweep never reads, and the ifs and loops that leaves with nothing to do (issue 14).

Lean code (issue 11), each step a pass of its own run on the generated sweeps: copies
propagated (copies.py), repeated contributions combined (combine.py), pops nobody reads
dropped with their pushes (prune_tape.py), values read only for their shape saved as
stand-ins (shape_reads.py), trip counts pushed once saved in the saved tuple instead
(tape_once.py), temporaries deleted after their last use (release.py). The sweeps ``grad``
runs itself (Context.lean) also skip products by the seed's ones (unit_seed.py), keep a
whole-array sum's or mean's cotangent a number where elementwise products consume it
(scalar_seed.py), do not sum
an adjoint down that is summed down again (unreduced.py), accumulate in place (inplace.py),
compute saved negations again (remat.py), scale by ``c ** n`` once where a backward loop only
scales an adjoint by a number (scaling_loops.py), compute plain matrices' products' cotangents
without the matmul rules' generality (plain_products.py), write those helpers and reductions
as single numpy operations where the arguments' ranks prove their fast path (rank_facts.py)
and, when the value is discarded, probe what only makes it (dead_values.py).
"""
from __future__ import annotations

import operator
import os

import gast
import numpy as np

from .. import codegen, runtime
from ..errors import InternalError, MissingRuleError, UnsupportedFeatureError
from ..rules import lookup
from ..rules._helpers import expand_to
from ..rules.operators import matmul_left, matmul_right, plain_matmul_left, plain_matmul_right
from . import adjoint_tape_op, inline, is_tape_op
from . import astutil as A
from .adjoint_facts import (
    binop_rule,
    AdjointSets,
    AdjointState,
    ReverseFacts,
    analyze,
    hands_lazy_items,
    join,
)
from .binding import bind_rule_call, nondiff_guard, split_spread
from .cleanup import number, simplify
from .combine import combine_contributions
from .context import Context, DynamicCall, factory_module
from .copies import propagate_copies
from .dead_values import probe_dead_values
from .desugar import regroup_contexts
from .inplace import accumulate_in_place
from .plain_products import plain_products
from .rank_facts import specialise_sweeps
from .prune_tape import dead_restores, remove_statements
from .release import release_dead
from .remat import recompute_negations
from .resolve import BINOPS, UNARYOPS
from .scaling_loops import collapse_scaling_loops
from .shape_reads import shape_only_names
from .tape_once import saved_once
from .scalar_seed import keep_scalar_seeds
from .unit_seed import skip_unit_products
from .unreduced import fold_reductions

ZERO = A.const(0.0)


class ReverseGenerator:
    def __init__(self, tree: gast.FunctionDef, ctx: Context, user_calls,
                 facts: ReverseFacts):
        self.tree = tree
        self.ctx = ctx
        self.user_calls = user_calls  # id(call) -> Adjoint of the callee
        self.facts = facts
        namer = ctx.namer
        self.tape = namer.unique("_tape")
        self.saved_name = namer.unique("_saved")
        self.cond_names: dict[int, str] = {}  # id(If) -> saved decision name
        self.count_names: dict[int, str] = {}  # id(loop) -> trip count name
        self.call_saves: dict[int, str] = {}  # id(Assign of a user call) -> callee's saved
        self.needed: set[str] = set()  # primal names the backward sweep reads
        self.recorded: set[int] = set()  # ids of ifs/loops whose backward is not empty
        self.filename = os.path.basename(ctx.src.filename)
        # primal names the backward sweep reads only for their shape: saved as stand-ins
        self.shape_only: frozenset[str] = frozenset()
        # pops restoring an overwritten value: id(pop) -> (pop, key); keys of the dead ones,
        # whose pushes the forward sweep omits
        self.restore_pops: dict[int, tuple] = {}
        self.pruned: set = set()
        # What emission leaves to ``finish``, which knows what the whole sweep reads:
        # id(pop) -> (pop, name) of each restore, kept only if the sweep reads the name;
        # id(code) -> (code, user statement) of the code each statement emitted (comments);
        # id(node) -> (node, statement, statements before it, optional) of each backward if
        # or loop, dropped with those statements when optional and left empty
        self.restores: dict[int, tuple[gast.stmt, str]] = {}
        self.origin: dict[int, tuple] = {}
        self.constructs: dict[int, tuple] = {}
        for node in gast.walk(tree):  # names for decisions
            if isinstance(node, gast.If):
                self.cond_names[id(node)] = ctx.namer.fresh("_c")
            elif isinstance(node, (gast.For, gast.While)):
                self.count_names[id(node)] = ctx.namer.fresh("_n")

    # -- helpers ---------------------------------------------------------------------------
    def adj(self, name: str) -> str:
        return self.ctx.namer.adjoint(name)

    def is_active(self, node) -> bool:
        return isinstance(node, gast.Name) and node.id in self.ctx.active

    def read(self, node):
        """Record the primal names an adjoint expression reads (they must be available)."""
        self.needed |= A.names_read(node)
        return node

    def accumulate(self, name: str, contribution, state: AdjointSets, at) -> gast.stmt:
        b = self.adj(name)
        if b in state.zero:
            state.written(b)
            return A.assign(b, contribution, at=at)
        state.maybe.discard(b)  # 0.0 + c is c
        if name in self.facts.numeric:
            value = gast.BinOp(left=A.load(b), op=gast.Add(), right=contribution)
        else:
            value = A.call(A.attr(self.ctx.rt, "add"), A.load(b), contribution)
        return A.assign(b, value, at=at)

    def accumulate_item(self, name: str, contribution, state: AdjointSets, at) -> gast.stmt:
        """``accumulate`` of an item's adjoint read out of a container's: an item nobody
        read has the lazy zero there, so a first write may be zero at run time (rules that
        need an array then run only when it is not)."""
        first = self.adj(name) in state.zero
        stmt = self.accumulate(name, contribution, state, at)
        if first:
            state.maybe.add(self.adj(name))
        return stmt

    def comment_for(self, node) -> gast.stmt:
        return codegen.comment(f"{self.filename}:{self.ctx.src.real_line(node)}  "
                               f"{self.ctx.src.text_of(node)}")

    # -- backward sweep --------------------------------------------------------------------
    def backward_block(self, stmts, state: AdjointSets) -> list:
        """The adjoints of ``stmts`` in reverse order, each piece of code tagged with the
        statement it comes from (``finish`` then drops what the sweep does not need)."""
        out = []
        for s in reversed(stmts):
            code = self.backward_stmt(s, state)
            for c in code:
                self.origin[id(c)] = (c, s)
            out.extend(code)
        return out

    def finish(self, code: list) -> list:
        """``code`` without the restores of values the sweep never reads, nor the ifs and
        loops left with nothing to do, with a comment pointing at the user's line before
        the code of each statement, and the backward loops' counters named."""
        kept = []
        for c in code:
            if id(c) in self.restores and self.restores[id(c)][1] not in self.needed:
                continue
            if id(c) in self.constructs:
                node, s, before, optional = self.constructs[id(c)]
                node.body, node.orelse = self.finish(node.body), self.finish(node.orelse)
                if optional and not node.body and not node.orelse:
                    kept = [k for k in kept if not any(k is b for b in before)]
                    continue
                self.recorded.add(id(s))
                node.body = node.body or [gast.Pass()]
                if isinstance(node, gast.For):  # (named in the order the loops are kept)
                    node.target.id = self.ctx.namer.fresh("_k")
            kept.append(c)
        return self.with_comments(kept)

    def with_comments(self, code: list) -> list:
        """``code`` with ``# file:line  text`` before the code of each user statement (once
        per line: anf splits one line into several statements)."""
        out = []
        last_line = current = None
        for c in code:
            origin = self.origin.get(id(c))
            s = origin[1] if origin is not None and origin[0] is c else None
            if s is not None and s is not current:  # the first piece of a statement's code
                current = s
                line = getattr(s, "lineno", None)
                if isinstance(s, (gast.If, gast.For, gast.While)):
                    last_line = None
                elif line is not None and line != last_line:
                    out.append(self.comment_for(s))
                    last_line = line
            out.append(c)
        return out

    def backward_stmt(self, s, state: AdjointSets) -> list:
        if isinstance(s, gast.Assign):
            return self.backward_assign(s, state)
        if isinstance(s, gast.If):
            return self.backward_if(s, state)
        if isinstance(s, (gast.For, gast.While)):
            return self.backward_loop(s, state)
        if isinstance(s, gast.Expr) and is_tape_op(s.value, "push", self.ctx):
            return self.backward_tape_push(s, state)
        if isinstance(s, gast.Expr) and adjoint_tape_op(s.value, self.ctx) == "pop" \
                and s.value.args[0].id in self.ctx.active:
            return self.backward_tape_pop(s, state, s.value.args[0])
        return []

    # Tapes of generated sweeps transformed again (higher derivatives): the adjoint of a tape
    # is a tape of adjoints. A pop's adjoint pushes, a push's adjoint pops: the backward sweep
    # of the sweep that popped runs before that of the sweep that pushed, in the same order.
    def backward_tape_push(self, s, state: AdjointSets) -> list:
        tape, item = s.value.func.value, s.value.args[0]
        bt = self.adj(tape.id)
        if tape.id not in self.ctx.active or bt in state.zero:
            return []
        popped = A.call(A.attr(self.ctx.rt, "adjoint_pop"), A.load(bt))
        if self.is_active(item):
            return [self.accumulate(item.id, popped, state, s)]
        return [A.expr_stmt(popped, at=s)]

    def backward_tape_pop(self, s, state: AdjointSets, tape=None) -> list:
        """``v = t.pop()`` (or ``v = _rt.adjoint_pop(t)``, or that pop as a statement): push
        ``v``'s adjoint (zero included, so the stacks stay aligned) on ``t``'s adjoint."""
        tape = s.value.func.value if tape is None else tape
        v = s.targets[0].id if isinstance(s, gast.Assign) else None
        bt, b = self.adj(tape.id), self.adj(v) if v else None
        g = A.load(b) if v in self.ctx.active and b not in state.zero else A.const(0.0)
        acc = A.const(0.0) if bt in state.zero else A.load(bt)
        state.written(bt)
        if v in self.ctx.active:
            state.zeroed(b)
        push = A.call(A.attr(self.ctx.rt, "adjoint_push"), acc, g)
        return [A.assign(bt, push, at=s)] + (self.pop_restore(s) if v else [])

    def backward_adjoint_push(self, s, state: AdjointSets) -> list:
        """``t = _rt.adjoint_push(t, g)`` (a backward sweep differentiated again): like a
        push, ``g``'s adjoint pops from ``t``'s adjoint, which stays the same stack."""
        target, (tape, item) = s.targets[0].id, s.value.args
        bt = self.adj(target)
        out = []
        if target in self.ctx.active and bt not in state.zero:
            popped = A.call(A.attr(self.ctx.rt, "adjoint_pop"), A.load(bt))
            out.append(self.accumulate(item.id, popped, state, s) if self.is_active(item)
                       else A.expr_stmt(popped, at=s))
        if not (isinstance(tape, gast.Name) and tape.id == target):
            if self.is_active(tape) and bt not in state.zero:
                # the same stack under another name (normalization's temporary)
                out.append(self.accumulate(tape.id, A.load(bt), state, s))
            state.zeroed(bt)  # a new stack: its adjoint starts here
        return out + self.pop_restore(s)

    def pop_restore(self, s) -> list:
        out = []
        if id(s) in self.call_saves and id(s) in self.facts.in_loop:
            out.append(A.assign(self.call_saves[id(s)], A.call(A.attr(self.tape, "pop")),
                                at=s))
        if self.facts.pushes_value(s):
            out.append(self.restore(s.targets[0].id, s, ("assign", id(s))))
        return out

    def restore(self, name: str, s, key) -> gast.stmt:
        """``name = _tape.pop()``, which ``finish`` keeps only if the sweep reads ``name``."""
        pop = A.assign(name, A.call(A.attr(self.tape, "pop")), at=s)
        self.restore_pops[id(pop)] = (pop, key)
        self.restores[id(pop)] = (pop, name)
        return pop

    def backward_assign(self, s, state: AdjointSets) -> list:
        target = s.targets[0]
        if not isinstance(target, gast.Name):
            if not A.names_read(s) & self.ctx.active:
                return []  # an element store into an array that carries no gradient
            raise InternalError("reverse", f"assignment to {type(target).__name__} after "
                                           f"normalization")
        v = target.id
        if is_tape_op(s.value, "pop", self.ctx) and s.value.func.value.id in self.ctx.active:
            return self.backward_tape_pop(s, state)
        op = adjoint_tape_op(s.value, self.ctx)
        if op == "pop" and s.value.args[0].id in self.ctx.active:
            return self.backward_tape_pop(s, state, s.value.args[0])
        if op == "push":
            return self.backward_adjoint_push(s, state)
        out = []
        if v in self.ctx.active and not A.names_read(s.value) & self.ctx.active:
            # a value that carries no gradient (v = np.sin(np.cos(1.0)), left nested by the
            # anf pass): nothing flows back, and v's adjoint is zero before it
            b = self.adj(v)
            state.zeroed(b)
        elif v in self.ctx.active:
            _check_normalized(s, v, self.ctx)
            b = self.adj(v)
            if b in state.zero:
                pass  # nothing flows back into this definition
            elif b in state.maybe:
                out += self.guarded_contributions(s, v, b, state)
            else:
                out += self.contributions(s, v, state)
            state.zeroed(b)
        return out + self.pop_restore(s)

    def guarded_contributions(self, s, v: str, b: str, state: AdjointSets) -> list:
        """Contributions of an adjoint that may be the lazy zero at run time: they run only
        when it is not (rules such as matmul's need an array), and the adjoints they would
        have assigned first are the lazy zero otherwise."""
        inner = state.copy()
        body = self.contributions(s, v, inner)
        if not body:
            return []
        assigned = state.zero - inner.zero
        test = gast.UnaryOp(op=gast.Not(), operand=A.call(A.attr(self.ctx.rt, "is_zero"),
                                                           A.load(b)))
        node = A.located(gast.If(test=test, body=body, orelse=_reset(assigned, s)), s)
        state.zero &= inner.zero
        state.reset(assigned)
        return [node]

    def contributions(self, s, v: str, state: AdjointSets) -> list:
        """Statements adding the adjoint of ``v = value`` into its operands' adjoints."""
        value, bv = s.value, A.load(self.adj(v))
        ctx = self.ctx
        if isinstance(value, gast.Name):
            return [self.accumulate(value.id, bv, state, s)] if self.is_active(value) else []
        if isinstance(value, gast.BinOp):
            fn = binop_rule(value, self.facts.sequences)
            return self.rule_contributions(fn, [value.left, value.right], {}, v, state, s)
        if isinstance(value, gast.UnaryOp):
            fn = UNARYOPS[type(value.op)]
            return self.rule_contributions(fn, [value.operand], {}, v, state, s)
        if isinstance(value, gast.Subscript):
            return self.subscript_contributions(value, v, state, s)
        if isinstance(value, (gast.Tuple, gast.List)):
            out = []
            for i, e in enumerate(value.elts):
                if self.is_active(e):
                    part = A.call(A.attr(ctx.rt, "part"), bv, A.const(i))
                    out.append(self.accumulate_item(e.id, part, state, s))
            return out
        if isinstance(value, gast.Dict):
            out = []
            for k, e in zip(value.keys, value.values):
                if self.is_active(e):
                    part = A.call(A.attr(ctx.rt, "part"), bv, self.read(A.deepcopy(k)))
                    out.append(self.accumulate_item(e.id, part, state, s))
            return out
        if isinstance(value, gast.Attribute):
            return self.attribute_contributions(value, v, state, s)
        if isinstance(value, gast.Call) and self.is_element_call(value):
            return self.element_contributions(value, v, state, s)
        if isinstance(value, gast.Call):
            return self.call_contributions(value, v, state, s)
        self.unnormalized(value, s)
        return []  # constants, comparisons, lambdas, f-strings: no derivative

    def unnormalized(self, node, s) -> None:
        """An expression reading active names in a form the normalization should have split:
        an internal error, never a silently missing contribution."""
        if isinstance(node, A.SPLIT_BY_ANF) and A.names_read(node) & self.ctx.active:
            raise InternalError("reverse", f"the active operand of {type(node).__name__} is "
                                f"not a name after normalization", self.ctx.user_location(s))

    def subscript_contributions(self, value, v, state, s) -> list:
        base = value.value
        if not self.is_active(base):
            self.unnormalized(base, s)
            return []
        b = self.adj(base.id)
        acc = ZERO if b in state.zero else A.load(b)
        index = self.read(_index_expr(value.slice))
        self.read(base)
        call = A.call(A.attr(self.ctx.rt, "add_at"), acc, A.load(base.id), index,
                      A.load(self.adj(v)))
        state.written(b)
        return [A.assign(b, call, at=s)]

    def is_element_call(self, call) -> bool:
        r = self.ctx.resolved.get(id(call))
        return r is not None and r.obj is runtime.element and len(call.args) == 2

    def element_contributions(self, call, v, state, s) -> list:
        """``v = _rt.element(xs, i)`` (a loop's item): accumulate in place like indexing."""
        base, index = call.args
        if not self.is_active(base):
            return []
        b = self.adj(base.id)
        acc = ZERO if b in state.zero else A.load(b)
        self.read(base)
        self.read(index)
        add = A.call(A.attr(self.ctx.rt, "add_element"), acc, A.load(base.id),
                     A.deepcopy(index), A.load(self.adj(v)))
        state.written(b)
        return [A.assign(b, add, at=s)]

    def attribute_contributions(self, value, v, state, s) -> list:
        r = self.ctx.resolved.get(id(value))
        if r is not None and r.kind == "rule":
            return self.rule_contributions(r.obj, [value.value], {}, v, state, s)
        base = value.value
        if not self.is_active(base):
            self.unnormalized(base, s)
            return []
        b = self.adj(base.id)
        acc = ZERO if b in state.zero else A.load(b)
        self.read(base)
        call = A.call(A.attr(self.ctx.rt, "add_attr"), acc, A.load(base.id),
                      A.const(value.attr), A.load(self.adj(v)))
        state.written(b)
        return [A.assign(b, call, at=s)]

    def call_contributions(self, call, v, state, s) -> list:
        r = self.ctx.resolved.get(id(call))
        split = split_spread(call)
        args, keywords = split.args, split.keywords
        operands = args + list(keywords.values())
        if isinstance(call.func, gast.Attribute):
            operands.append(call.func.value)  # the receiver of a method call
        active_args = [a for a in operands + split.values if self.is_active(a)]
        if not active_args:
            return []
        spread = None
        if split.rest or split.double:
            if r.kind not in ("rule", "method") or any(self.is_active(a) for a in split.values):
                self.ctx.problem(s, "'*args' or '**kwargs' in a call with differentiable "
                                    "arguments", "Pass each argument explicitly.")
                return []
            spread = split
        if r.kind == "method":
            args = [call.func.value] + args
            return self.rule_contributions(r.obj, args, keywords, v, state, s, spread)
        if r.kind == "rule":
            return self.rule_contributions(r.obj, args, keywords, v, state, s, spread)
        if r.kind in ("user", "dynamic", "unknown", "attribute") and id(s) in self.call_saves:
            return self.user_call_contributions(call, v, state, s)
        if r.kind == "nondiff":
            return []
        raise InternalError("reverse", f"unresolved call {r.name} with active arguments",
                            self.ctx.user_location(s))

    def rule_contributions(self, fn, args, keywords, v, state, s, spread=None) -> list:
        """The contributions of ``v = fn(*args, **keywords)`` to its operands' adjoints;
        ``spread`` (a ``SpreadCall``) holds the call's spread operands, which carry no
        gradient and are passed through to the rule's vjp."""
        rule = lookup(fn)
        ctx = self.ctx
        if rule is None:
            raise MissingRuleError(getattr(fn, "__name__", repr(fn)), ctx.user_location(s))
        for a in list(args) + list(keywords.values()):
            self.unnormalized(a, s)
        bound = bind_rule_call(rule, args, keywords)
        # an active operand the rule does not differentiate would silently get no gradient
        out = [nondiff_guard(ctx, rule, what, a, s) for what, _, a in bound.nondiff
               if self.is_active(a) and not ctx.own_code]
        for guard in out:
            self.read(guard.value)
        active = [(k, a) for k, _, a, _ in bound.diff if self.is_active(a)]
        if not active:
            return out
        bv, ans = A.load(self.adj(v)), A.load(v)
        tmpl = inline.template(rule.vjp)
        unknown = [k for k in keywords if k not in tmpl.params] if tmpl.kwarg is None else []
        if unknown and tmpl.readable:
            raise UnsupportedFeatureError(
                f"{ctx.user_location(s)}: the argument '{unknown[0]}' of '{rule.name}' is not "
                f"supported in differentiated code (its derivative rule does not take it).")
        mapping = inline.bind(tmpl, [bv, ans], args, keywords) if spread is None else None
        if tmpl.elements is not None and mapping is not None:
            exprs = {k: inline.instantiate(rule.vjp, tmpl.elements[k], mapping, ctx)
                     for k, _ in active}
        else:
            tmp = ctx.namer.fresh()
            fname = ctx.helper(rule.vjp, rule.vjp.__name__)
            kw = [gast.keyword(arg=k, value=val) for k, val in keywords.items()]
            rest = [] if spread is None else [A.deepcopy(a) for a in spread.rest]
            kw += [] if spread is None else [A.deepcopy(k) for k in spread.double]
            call = A.call(A.load(fname), bv, ans, *args, *rest, keywords=kw)
            self.read(call)
            out.append(A.assign(tmp, call, at=s))
            exprs = {k: gast.Subscript(value=A.load(tmp), slice=A.const(k), ctx=gast.Load())
                     for k, _ in active}
        elementwise = _elementwise(fn) and spread is None  # (spread operands' shapes unseen)
        operands = list(args) + list(keywords.values())
        same = elementwise and self.same_shapes(operands)
        # 'a * 2' and 'a + a' repeat or join lists: there unbroadcast refuses a list, unless
        # facts.not_sequences says another check does (rank_facts drops it where a is proven
        # an array)
        joins = (fn is operator.mul and any(type(number(o)) is int for o in operands)
                 or fn is operator.add and same and all(number(o) is None for o in operands)) \
            and not all(isinstance(o, gast.Name) and o.id in self.facts.not_sequences
                        or number(o) is not None for o in operands)
        for k, a in active:
            # an elementwise result has the operand's shape when the others are numbers
            if ctx.scalar_mode or not joins and (same or elementwise and all(
                    number(o) is not None for o in operands if o is not a)):
                exprs[k] = self.same_shape(exprs[k], a)
            self.read(exprs[k])
            add = self.accumulate_item if hands_lazy_items(rule) else self.accumulate
            out.append(add(a.id, exprs[k], state, s))
        return out

    def same_shapes(self, args) -> bool:
        """Whether every name among ``args`` has, by construction, the same shape (so an
        elementwise operation on them broadcasts nothing)."""
        roots = {self.facts.shape_root.get(a.id) for a in args if isinstance(a, gast.Name)}
        others = [a for a in args if not isinstance(a, gast.Name) and number(a) is None]
        return len(roots) == 1 and None not in roots and not others

    def same_shape(self, expr, operand):
        """``unbroadcast(e, x)`` is ``e`` when every other operand is a constant scalar."""
        if (A.called_attr(expr, self.ctx.rt) == "unbroadcast" and len(expr.args) == 2
                and isinstance(expr.args[1], gast.Name) and expr.args[1].id == operand.id):
            return expr.args[0]
        return expr

    def user_call_contributions(self, call, v, state, s) -> list:
        adjoint = self.user_calls[id(call)]
        saved = self.call_saves[id(s)]
        if isinstance(adjoint, DynamicCall):
            return self.dynamic_call_contributions(call, adjoint, saved, v, state, s)
        self.read(A.load(saved))
        tmp = self.ctx.namer.fresh()
        bwd = A.attr(A.load(self.ctx.helper(adjoint, adjoint.helper_name)), "bwd")
        out = [A.assign(tmp, A.call(bwd, A.load(saved), A.load(self.adj(v))), at=s)]
        for i, a in enumerate(adjoint.bind_positions(call)):
            if a is not None and self.is_active(a):
                part = gast.Subscript(value=A.load(tmp), slice=A.const(i), ctx=gast.Load())
                out.append(self.accumulate(a.id, part, state, s))
        return out

    def dynamic_call_contributions(self, call, dyn, saved, v, state, s) -> list:
        self.read(A.load(saved))
        tmp = self.ctx.namer.fresh()
        bwd = A.call(A.attr(self.ctx.rt, "call_bwd"), A.load(saved), A.load(self.adj(v)))
        out = [A.assign(tmp, bwd, at=s)]
        positional = ([call.func.value] if dyn.kind == "method" else []) + list(call.args)
        for i, a in enumerate(positional):
            if self.is_active(a):
                part = A.parse_expr(f"{tmp}[0][{i}]")
                out.append(self.accumulate(a.id, part, state, s))
        for k in call.keywords:
            if self.is_active(k.value):
                part = A.parse_expr(f"{tmp}[1][{k.arg!r}]")
                out.append(self.accumulate(k.value.id, part, state, s))
        return out

    def forward_call(self, call):
        """The forward-sweep call returning ``(value, saved)`` for a user or dynamic call."""
        adjoint = self.user_calls[id(call)]
        rt = self.ctx.rt
        if isinstance(adjoint, DynamicCall):
            if adjoint.kind == "method":
                func = call.func
                args = [func.value, A.const(func.attr)] + list(call.args)
                return gast.Call(func=A.attr(rt, "method_fwd"), args=args,
                                 keywords=call.keywords)
            return gast.Call(func=A.attr(rt, "call_fwd"), args=[call.func] + list(call.args),
                             keywords=call.keywords)
        fwd = A.attr(A.load(self.ctx.helper(adjoint, adjoint.helper_name)), "fwd")
        return gast.Call(func=fwd, args=list(call.args), keywords=call.keywords)

    # -- control flow ----------------------------------------------------------------------
    def backward_if(self, s, state: AdjointSets) -> list:
        cond = self.cond_names[id(s)]
        body_state, else_state = state.copy(), state.copy()
        body = self.backward_block(s.body, body_state)
        orelse = self.backward_block(s.orelse, else_state)
        # (a branch that zeroes an adjoint, x = <no gradient>, needs the if even if empty)
        optional = body_state.zero == else_state.zero and body_state.maybe == else_state.maybe
        state.zero, state.maybe = join(body_state, else_state)
        body += _reset(body_state.zero - state.zero, s)
        orelse += _reset(else_state.zero - state.zero, s)
        node = A.located(gast.If(test=A.load(cond), body=body, orelse=orelse), s)
        pop = A.assign(cond, A.call(A.attr(self.tape, "pop")), at=s)
        self.constructs[id(node)] = (node, s, [pop], optional)
        return [pop, node]

    def backward_loop(self, s, state: AdjointSets) -> list:
        count = self.count_names[id(s)]
        target_pop = []
        if isinstance(s, gast.For):
            target_pop = [self.restore(s.target.id, s, ("target", id(s)))]
        # what is known at the top of the backward body: zero there only if zero on entering
        # and after every iteration; maybe zero if reset on some path
        entry = self.adjoint_state(self.facts.loop_top(s))
        body_state = entry.copy()
        body = self.backward_block(s.body, body_state)
        if join(entry, body_state) != (entry.zero, entry.maybe) or not (
                entry.zero <= state.zero and state.maybe <= entry.maybe):
            raise InternalError("reverse", "the zero adjoints found at the top of a loop do "
                                "not hold for the code generated", self.ctx.user_location(s))
        resets = _reset(body_state.zero - entry.zero, s)
        materialize = _reset(state.zero - entry.zero, s)
        state.zero, state.maybe = set(entry.zero), set(entry.maybe)
        # (an adjoint the body zeroes, x = <no gradient>, needs the loop even if empty)
        loop = gast.For(target=A.store("_k"), iter=A.call("range", A.load(count)),
                        body=target_pop + body + resets, orelse=[], type_comment=None)
        loop = A.located(loop, s)
        pop = A.assign(count, A.call(A.attr(self.tape, "pop")), at=s)
        self.constructs[id(loop)] = (loop, s, [pop] + materialize, not resets)
        return [pop] + materialize + [loop]

    def adjoint_state(self, facts: AdjointState) -> AdjointSets:
        """The state of ``facts`` (primal names) over adjoint names."""
        return AdjointSets({self.adj(n) for n in facts.zero}, {self.adj(n) for n in facts.maybe})

    def counted_by_range(self, s, body) -> bool:
        """A ``for`` over ``range`` of names and constants, with no ``break`` of its own."""
        if not (isinstance(s, gast.For) and isinstance(s.iter, gast.Call)
                and isinstance(s.iter.func, gast.Name) and s.iter.func.id == "range"
                and not s.iter.keywords and all(A.is_atomic(a) for a in s.iter.args)):
            return False
        r = self.ctx.resolved.get(id(s.iter))
        if r is None or r.obj is not range:
            return False
        return not any(isinstance(n, gast.Break) for st in body for n in _own_loop_nodes(st))

    # -- forward sweep ---------------------------------------------------------------------
    def forward_block(self, stmts) -> list:
        out = []
        for s in stmts:
            out.extend(self.forward_stmt(s))
        return out

    def push(self, name: str, at) -> gast.stmt:
        return A.expr_stmt(A.call(A.attr(self.tape, "push"), self.saved_value(name)), at=at)

    def saved_value(self, name: str):
        """What the forward sweep saves of ``name``: the value, or a stand-in of its shape
        when the backward sweep reads nothing else of it."""
        if name in self.shape_only:
            return A.call(A.attr(self.ctx.rt, "shape_like"), A.load(name))
        return A.load(name)

    def forward_stmt(self, s) -> list:
        if isinstance(s, gast.Assign):
            out = []
            if self.facts.pushes_value(s) and s.targets[0].id in self.needed \
                    and ("assign", id(s)) not in self.pruned:
                out.append(self.push(s.targets[0].id, s))
            if id(s) in self.call_saves and id(s) in self.facts.in_loop:
                out.append(self.push(self.call_saves[id(s)], s))
            if id(s) in self.call_saves:
                new_call = self.forward_call(s.value)
                target = gast.Tuple(elts=[A.store(s.targets[0].id),
                                          A.store(self.call_saves[id(s)])], ctx=gast.Store())
                out.append(A.assign(target, new_call, at=s))
            else:
                out.append(s)
            return out
        if isinstance(s, gast.If):
            s.body = self.forward_block(s.body) or [gast.Pass()]
            s.orelse = self.forward_block(s.orelse)
            if id(s) not in self.recorded:
                return [s]
            cond = self.cond_names[id(s)]
            decide = A.assign(cond, s.test, at=s)
            s.test = A.load(cond)
            return [decide, s, self.push(cond, s)]
        if isinstance(s, (gast.For, gast.While)):
            body = self.forward_block(s.body)
            if id(s) not in self.recorded:
                s.body = body or [gast.Pass()]
                s.orelse = self.forward_block(s.orelse)
                return [s]
            count = self.count_names[id(s)]
            if isinstance(s, gast.For) and s.target.id in self.needed \
                    and ("target", id(s)) not in self.pruned:
                # pushed last in the iteration, so it is popped first in the backward one
                # (before the final 'if flag: break' that exits lowering may have added)
                at = len(body) - 1 if body and _is_exit_if(body[-1]) else len(body)
                body.insert(at, self.push(s.target.id, s))
            s.orelse = self.forward_block(s.orelse)
            if self.counted_by_range(s, body):
                # a range loop that cannot exit early runs len(range(...)) times: no counter
                s.body = body
                trips = _trip_count(s.iter)
                return [A.assign(count, trips, at=s), s, self.push(count, s)]
            start = [A.assign(count, gast.BinOp(left=A.load(count), op=gast.Add(),
                                                right=A.const(1)), at=s)]
            s.body = start + body
            return [A.assign(count, A.const(0), at=s), s, self.push(count, s)]
        if isinstance(s, gast.Delete):
            kept = [t for t in s.targets if t.id not in self.needed]
            if not kept:
                return []
            s.targets = kept
            return [s]
        return [s]


def _trip_count(iter_call):
    """``len(range(...))``, or the number itself when the bounds are integer literals."""
    bounds = [number(a) for a in iter_call.args]
    if all(type(b) is int for b in bounds) and 1 <= len(bounds) <= 3 and (
            len(bounds) < 3 or bounds[2] != 0):
        return A.const(len(range(*bounds)))
    return A.call("len", A.deepcopy(iter_call))


def _is_exit_if(s) -> bool:
    return isinstance(s, gast.If) and len(s.body) == 1 and isinstance(s.body[0], gast.Break)


def _index_expr(node):
    """A Load-context copy of an index (slices become ``slice(...)`` calls)."""
    if isinstance(node, gast.Slice):
        parts = [A.const(None) if p is None else A.deepcopy(p)
                 for p in (node.lower, node.upper, node.step)]
        return A.call("slice", *parts)
    if isinstance(node, gast.Tuple):
        return gast.Tuple(elts=[_index_expr(e) for e in node.elts], ctx=gast.Load())
    return A.deepcopy(node)


def _reset(names, at) -> list:
    return [A.assign(b, A.const(0.0), at=at) for b in sorted(names)]


def _primal_names(tree, ctx: Context) -> set[str]:
    names = set(ctx.params)
    for node in gast.walk(tree):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            names.add(node.id)
    return names


def reverse(tree: gast.FunctionDef, ctx: Context, user_calls: dict) -> gast.Module:
    """Build ``_make(...)`` returning the forward and backward sweeps of ``tree``."""
    ret = tree.body[-1]
    if not (isinstance(ret, gast.Return) and isinstance(ret.value, (gast.Name, gast.Constant))):
        raise InternalError("reverse", "the body does not end with 'return name'")
    body = tree.body[:-1]
    gen = ReverseGenerator(tree, ctx, user_calls, analyze(tree, ctx, user_calls))
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and isinstance(node.value, gast.Call) \
                and id(node.value) in user_calls:
            gen.call_saves[id(node)] = ctx.namer.fresh("_s")
    result = ret.value.id if isinstance(ret.value, gast.Name) else None
    seed = ctx.namer.adjoint(result) if result else ctx.namer.unique("b_result")
    all_adjoints = {ctx.namer.adjoint(v) for v in sorted(ctx.active | set(ctx.wrt_names))}

    state = AdjointSets(all_adjoints - {seed})
    backward = gen.backward_block(body, state)
    end = gen.adjoint_state(gen.facts.end)
    if (state.zero, state.maybe) != (end.zero, end.maybe):
        raise InternalError("reverse", "the zero adjoints found for the backward sweep do "
                                       "not hold for the code generated")
    backward = simplify(gen.finish(backward))
    backward = propagate_copies(backward, {ctx.namer.adjoint(p) for p in ctx.wrt_names})
    backward = combine_contributions(backward)
    lean = ctx.lean and not ctx.scalar_mode  # (grad's own sweeps: see api.LeanAdjoint)
    if lean:
        backward = _folded_reductions(gen, backward)
    backward = _prune_restores(gen, backward, body)
    if lean:
        backward = _lean_accumulation(ctx, backward, seed, all_adjoints)
    gen.shape_only = shape_only_names(backward, ctx.rt, _callees(ctx, backward)) \
        - set(ctx.params)
    if lean:
        backward = _recomputed_negations(gen, tree, body, backward)
        backward = collapse_scaling_loops(backward, ctx.rt)
        backward = plain_products(backward, _callees(ctx, backward), ctx.helper,
                                  {matmul_left: plain_matmul_left,
                                   matmul_right: plain_matmul_right})
    forward = regroup_contexts(gen.forward_block(body), ctx.rt)
    ctx.raise_problems()
    forward, backward, once = saved_once(forward, backward, gen.tape,
                                         set(gen.count_names.values()))

    primal = _primal_names(tree, ctx) | set(gen.call_saves.values())
    uses_tape = any(isinstance(n, gast.Attribute) and n.attr == "push"
                    and isinstance(n.value, gast.Name) and n.value.id == gen.tape
                    for s in forward for n in gast.walk(s))
    # a wrt parameter the body assigns again: its gradient is densified against the value
    # it came in with (kept by reference at entry), not the last one it held
    rebound = {n for s in body for n in A.names_written(s)}
    initial = {p: ctx.namer.unique(f"_{p}_in") for p in ctx.wrt_names if p in rebound}
    saved = sorted(((gen.needed & primal) | set(once)) - set(ctx.params) - {gen.tape},
                   key=_natural)
    saved = [p for p in ctx.params if p in gen.needed or p in ctx.wrt_names] \
        + [initial[p] for p in ctx.wrt_names if p in initial] + saved
    if uses_tape:
        saved = [gen.tape] + saved
    rt = ctx.rt

    fwd_body = [codegen.comment("forward sweep")]
    if uses_tape:
        fwd_body.append(A.assign(gen.tape, A.call(A.attr(rt, "Tape"))))
    # names the forward sweep saves or pushes before a first assignment that may not run
    facts = gen.facts
    nested_saves = {gen.call_saves[i] for i in gen.call_saves if i in facts.nested}
    unbound = ((facts.none_init & gen.needed) | facts.maybe_unbound | nested_saves) \
        & (set(saved) | (facts.none_init & gen.needed) | nested_saves)
    for v in sorted(unbound - set(ctx.params), key=_natural):
        fwd_body.append(A.assign(v, A.const(None)))
    fwd_body += [A.assign(initial[p], A.load(p)) for p in ctx.wrt_names if p in initial]
    fwd_body += forward
    result_expr = A.load(result) if result else A.deepcopy(ret.value)
    # (the lean sweeps run their backward once: a list it empties, so that each saved array
    # is freed after its last use rather than held by the caller until the sweep ends)
    saved_tuple = (gast.List if lean else gast.Tuple)(
        elts=[gen.saved_value(n) for n in saved], ctx=gast.Load())
    fwd_body.append(A.located(gast.Return(value=gast.Tuple(elts=[result_expr, saved_tuple],
                                                             ctx=gast.Load())), ret))

    if lean and ctx.discard_value:
        fwd_body = probe_dead_values(fwd_body, ctx)

    bwd_body = [codegen.comment("backward sweep")]
    if saved:
        target = gast.Tuple(elts=[A.store(n) for n in saved], ctx=gast.Store()) \
            if len(saved) > 1 else A.store(saved[0])
        value = A.load(gen.saved_name) if len(saved) > 1 else gast.Subscript(
            value=A.load(gen.saved_name), slice=A.const(0), ctx=gast.Load())
        bwd_body.append(A.assign(target, value))
        if lean:
            bwd_body.append(A.expr_stmt(A.call(A.attr(gen.saved_name, "clear"))))
    bwd_body += backward
    grads = []
    sweep_inputs = _sweep_inputs(ctx)
    for p in ctx.wrt_names:
        b = ctx.namer.adjoint(p)
        value = A.load(initial.get(p, p))
        if p in sweep_inputs:
            # the inputs of a backward sweep differentiated again (its saved tuple, its
            # seed): only generated code reads their cotangents, tuples item by item
            # (through _rt.part), so a tuple's zero items stay lazy zeros
            grads.append(A.call(A.attr(rt, "densify_saved"),
                                A.const(0.0) if b in state.zero else A.load(b), value))
        elif b in state.zero:
            grads.append(A.call(A.attr(rt, "zeros_like"), value))
        else:
            grads.append(A.call(A.attr(rt, "densify"), A.load(b), value))
    bwd_body.append(gast.Return(value=gast.Tuple(elts=grads, ctx=gast.Load())))

    name = tree.name if tree.name != "_lambda" else "lambda"
    if not ctx.scalar_mode:  # (scalars: nothing to free, and each del costs time)
        counters = set(gen.count_names.values()) | set(gen.cond_names.values())  # numbers
        fwd_body = release_dead(fwd_body, counters)
        # (grad's own sweeps: its seed too, which grad makes in the call and holds not)
        bwd_body = release_dead(bwd_body, counters, unpacked=lean,
                                entry=(seed,) if lean else ())
    fwd = A.function_def(f"{name}_fwd", A.signature_of(tree.args), fwd_body)
    bwd = A.function_def(f"{name}_bwd", A.parameters([gen.saved_name, seed]), bwd_body)
    if lean and ctx.arg_facts:
        ctx.rank_rewrites = specialise_sweeps(fwd, bwd, ctx.arg_facts,
                                              _callees(ctx, fwd.body + bwd.body), ctx.rt,
                                              gen.tape, ctx.lookup_static)
    return factory_module(ctx, [fwd, bwd], [fwd.name, bwd.name])


def _sweep_inputs(ctx: Context) -> set[str]:
    """The parameters of ``ctx``'s function that only generated code passes, when it is a
    generated backward sweep ``f_bwd(_saved, b_result)`` (or another generated function
    taking a ``_saved`` tuple): the saved tuple, and the backward sweep's seed."""
    if not ctx.src.filename.startswith("<srcgrad"):
        return set()
    inputs = {p for p in ctx.params if p.startswith("_saved")}
    if len(ctx.params) == 2 and ctx.params[0].startswith("_saved"):
        inputs.add(ctx.params[1])
    return inputs


def _prune_restores(gen: ReverseGenerator, backward: list, body: list) -> list:
    """Drop the backward sweep's pops whose value nothing reads (and, through
    ``gen.pruned``, the forward sweep's matching pushes)."""
    ctx = gen.ctx
    rebound = {n for s in body for n in A.names_written(s)}
    # read after the backward sweep: the wrt parameters its gradients are densified against
    live_out = set(ctx.wrt_names) - rebound
    gen.pruned = dead_restores(backward, live_out, gen.restore_pops)
    if not gen.pruned:
        return backward
    doomed = {i for i, (_, key) in gen.restore_pops.items() if key in gen.pruned}
    return remove_statements(backward, doomed)


def _folded_reductions(gen: ReverseGenerator, backward: list) -> list:
    """``grad``'s backward sweep without reductions that others repeat (unreduced.py); the
    values they alone read for their shapes are no longer needed (``gen.needed``)."""
    ctx = gen.ctx
    products = {name for name, obj in _callees(ctx, backward).items()
                if obj is matmul_left or obj is matmul_right}
    backward, shapes = fold_reductions(backward, ctx.rt, products, ctx.namer.adjoint)
    read = {n for s in backward for n in A.names_read(s)}
    gen.needed -= shapes - read
    return backward


def _lean_accumulation(ctx: Context, backward: list, seed: str, adjoints: set[str]) -> list:
    """``grad``'s backward sweep: products by its seed's ones skipped, whole-array sums'
    cotangents kept as numbers, accumulations into arrays it owns made in place."""
    grads = {ctx.namer.adjoint(p) for p in ctx.wrt_names}
    spread = ctx.helper(expand_to, "expand_to")  # (dropped later if the sweep reads it not)
    backward = skip_unit_products(backward, seed, ctx.rt, spread, grads)
    backward = keep_scalar_seeds(backward, ctx.rt, spread, grads)
    return accumulate_in_place(backward, adjoints, ctx.rt)


def _recomputed_negations(gen: ReverseGenerator, tree, body: list, backward: list) -> list:
    """``grad``'s backward sweep computing saved negations again (``gen.needed`` updated)."""
    ctx = gen.ctx
    stores = [n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
              and isinstance(n.ctx, (gast.Store, gast.Del))]
    once = {n for n in stores if stores.count(n) == 1} - gen.facts.overwritten \
        - set(ctx.params)
    return recompute_negations(backward, body, gen.needed, ctx.params, once, gen.shape_only,
                               ctx.rt)


def _callees(ctx: Context, stmts: list) -> dict:
    """What the names ``stmts`` call stand for: the factory's helpers, and the user's globals
    that ``Context.helper`` used for them (bound there to the same objects)."""
    called = {n.func.id for s in stmts for n in gast.walk(s)
              if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)}
    out = {name: ctx.globals[name] for name in called if name in ctx.globals
           and name not in ctx.local_names and name not in ctx.closure}
    return {**out, **ctx.helpers}


def _elementwise(fn) -> bool:
    """Operators and numpy ufuncs: their result has the broadcast shape of their operands."""
    return fn in BINOPS.values() or fn in UNARYOPS.values() or isinstance(fn, np.ufunc)


def _natural(name: str):
    """Sort key putting _t2 before _t10."""
    stem = name.rstrip("0123456789")
    digits = name[len(stem):]
    return (stem, int(digits) if digits else -1)


def _own_loop_nodes(node):
    """Nodes of a loop body statement, not descending into nested loops or functions."""
    yield node
    for child in gast.iter_child_nodes(node):
        if not isinstance(child, (gast.For, gast.While, gast.FunctionDef, gast.Lambda)):
            yield from _own_loop_nodes(child)


def _check_normalized(s, v: str, ctx: Context) -> None:
    """What the anf pass guarantees for an active assignment; a breach would give wrong
    adjoints, so it is an internal error rather than a silent one."""
    value = s.value
    problem = None
    if v in A.names_read(value) and not isinstance(value, gast.Name):
        problem = f"'{v}' is both the target and an operand"
    elif isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Call)):
        operands = ([value.left, value.right] if isinstance(value, gast.BinOp)
                    else [value.operand] if isinstance(value, gast.UnaryOp)
                    else [a.value if isinstance(a, gast.Starred) else a for a in value.args]
                    + [k.value for k in value.keywords])
        if not all(A.is_atomic(o) for o in operands):
            problem = "an operand is not a name or a constant"
    if problem:
        raise InternalError("reverse", f"{problem} in the active assignment to '{v}' at "
                                       f"{ctx.user_location(s)}")
