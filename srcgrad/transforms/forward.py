"""Guarantees afterwards: the tree is a module defining ``_make(...)``, which returns the jvp
function: the user's code with tangent statements interleaved, returning ``(value, tangent)``.

The jvp function takes one tangent per ``wrt`` parameter first, then the user's parameters:
``def f_jvp(dx, x, n):``. Only active names get a tangent (``dx`` for ``x``), assigned right
after the primal statement that defines ``x``. No tape: branches and loops run once, with
tangent code inside them.

Zero tangents: a tangent known to be zero is never materialized. Generation tracks, for each
active name, whether its tangent is *zero* (no variable), *dense* (holds a real tangent) or
*maybe* (may hold the lazy zero ``0.0``, e.g. after a branch where one side left it zero, or
an element of a container whose tangent has lazy entries). A *maybe* tangent is densified in
place (``dx = _rt.densify(dx, x)``) before a rule reads it.

Tape operations (``t.push(v)``, ``v = t.pop()``, ``t = _rt.Tape()``) on active tapes carry a
parallel tangent tape, so generated sweeps can be differentiated again (forward over reverse).
"""
from __future__ import annotations

import os

import gast

from .. import codegen, runtime
from ..errors import InternalError, MissingRuleError, SrcgradError
from ..rules import lookup
from . import astutil as A
from . import adjoint_tape_op, inline
from .adjoint_facts import concatenation, is_none_constant
from .binding import bind_rule_call, nondiff_guard, split_spread
from .cleanup import simplify
from .desugar import regroup_contexts
from .context import Context, DynamicCall, factory_module
from .resolve import BINOPS, UNARYOPS

__all__ = ["forward"]

DENSE, MAYBE = "dense", "maybe"  # tangent kinds; a name absent from the state has zero tangent
ZERO = 0.0


class _State:
    """Tangent kind of each active name at one point of the generated code."""

    def __init__(self, kinds=None):
        self.kinds: dict[str, str] = dict(kinds or {})

    def kind(self, name: str) -> str | None:
        return self.kinds.get(name)

    def set(self, name: str, kind: str | None) -> None:
        if kind is None:
            self.kinds.pop(name, None)
        else:
            self.kinds[name] = kind

    def copy(self) -> "_State":
        return _State(self.kinds)


def _join(a: _State, b: _State) -> _State:
    """Kinds where control flow merges: equal kinds stay, different ones become *maybe*."""
    out = {}
    for name in set(a.kinds) | set(b.kinds):
        ka, kb = a.kind(name), b.kind(name)
        out[name] = ka if ka == kb else MAYBE
    return _State(out)


_ELEMENTWISE = {"operator.add", "operator.sub", "operator.mul", "operator.truediv",
                "operator.pow", "numpy.add", "numpy.subtract", "numpy.multiply",
                "numpy.divide", "numpy.true_divide", "numpy.power"}


# Elementwise rules whose jvp only multiplies, adds and broadcasts the tangents: a tangent
# that may be the lazy 0.0 (or smaller than its primal but broadcastable) needs no
# densifying; the result may then be lazy itself.
_ZERO_SAFE = _ELEMENTWISE | {
    "operator.neg", "operator.pos", "numpy.negative", "numpy.sin", "numpy.cos", "numpy.exp",
    "numpy.log", "numpy.tanh", "numpy.sqrt", "numpy.square", "numpy.log1p", "numpy.expm1",
    "math.sin", "math.cos", "math.exp", "math.log", "math.tanh", "math.sqrt"}


def _sums_to_result_shape(rule, operand: dict, active) -> bool:
    """Whether the tangent contributions of a broadcasting elementwise operation, each at
    least as large as its own operand, already sum to the result's shape: when every
    operand is active, or the inactive ones are numeric constants (Python scalars)."""
    if rule.name not in _ELEMENTWISE:
        return False
    for k, a in operand.items():  # (operands the call leaves out are the defaults)
        if k in active:
            continue
        if not (isinstance(a, gast.Constant) and type(a.value) in (int, float)):
            return False
    return True


def _is_runtime_rule(rule) -> bool:
    """Rules of runtime helpers work on structured, lazily-zero tangents: their
    contributions are summed with ``_rt.add`` and may themselves be the lazy zero."""
    return getattr(rule.fn, "__module__", "") == runtime.__name__


class ForwardGenerator:
    def __init__(self, tree: gast.FunctionDef, ctx: Context, user_calls: dict):
        self.tree = tree
        self.ctx = ctx
        self.user_calls = user_calls  # id(call) -> callee handle or DynamicCall
        self.filename = os.path.basename(ctx.src.filename)
        self.sequences = _sequence_names(tree)
        self.strict = not ctx.own_code  # see Context.own_code
        self.read_outside: dict[int, set[str]] = {}  # id(loop) -> names read outside it

    # -- helpers ---------------------------------------------------------------------------
    def tan(self, name: str) -> str:
        return self.ctx.namer.tangent(name)

    def rt(self, name: str) -> gast.Attribute:
        return A.attr(self.ctx.rt, name)

    def kind_of(self, node, st: _State) -> str | None:
        """Tangent kind of an operand (None: zero)."""
        if isinstance(node, gast.Name):
            return st.kind(node.id) if node.id in self.ctx.active else None
        if isinstance(node, gast.Starred):  # (refused by the caller when active)
            return self.kind_of(node.value, st)
        if isinstance(node, A.SPLIT_BY_ANF) and A.names_read(node) & self.ctx.active:
            # never a silently missing tangent (nested calls of helpers without a derivative,
            # `_rt.shape_like(t)` in generated sweeps, stay whole and carry none)
            raise InternalError("forward", f"the active operand of {type(node).__name__} is "
                                f"not a name after normalization")
        return None

    def tangent(self, node, st: _State):
        """The tangent of an operand as an expression, lazily zero allowed; None when zero."""
        if self.kind_of(node, st) is None:
            return None
        return A.load(self.tan(node.id))

    def tangent_or_zero(self, node, st: _State):
        t = self.tangent(node, st)
        return A.const(ZERO) if t is None else t

    def dense(self, node, st: _State, out: list, at):
        """The tangent of an operand, densified in place first if it may be lazy."""
        kind = self.kind_of(node, st)
        if kind is None:
            return None
        d = self.tan(node.id)
        if kind == MAYBE:
            out.append(A.assign(d, A.call(self.rt("densify"), A.load(d), A.load(node.id)),
                                at=at))
            st.set(node.id, DENSE)
        return A.load(d)

    def comment_for(self, node) -> gast.stmt:
        return codegen.comment(f"{self.filename}:{self.ctx.src.real_line(node)}  "
                               f"{self.ctx.src.text_of(node)}")

    def zero_assigns(self, names, at) -> list:
        return [A.assign(self.tan(n), A.const(ZERO), at=at) for n in sorted(names)]

    # -- blocks ----------------------------------------------------------------------------
    def block(self, stmts, st: _State) -> list:
        out = []
        last_line = None
        for s in stmts:
            code = self.stmt(s, st)
            line = getattr(s, "lineno", None)
            if code and line is not None and line != last_line and not _is_exit_if(s):
                out.append(self.comment_for(s))
                last_line = line
            if isinstance(s, (gast.If, gast.For, gast.While)):
                last_line = None
            out.extend(code)
        return out

    def stmt(self, s, st: _State) -> list:
        if isinstance(s, gast.Assign):
            return self.assign(s, st)
        if isinstance(s, gast.Expr):
            return self.expr(s, st)
        if isinstance(s, gast.If):
            return self.branch(s, st)
        if isinstance(s, (gast.For, gast.While)):
            return self.loop(s, st)
        return [s]

    # -- control flow ----------------------------------------------------------------------
    def branch(self, s, st: _State) -> list:
        if _is_exit_if(s):
            return [s]
        body_st, else_st = st.copy(), st.copy()
        body = self.block(s.body, body_st)
        orelse = self.block(s.orelse, else_st)
        joined = _join(body_st, else_st)
        body += self.zero_assigns([n for n in joined.kinds if body_st.kind(n) is None], s)
        if s.orelse or any(else_st.kind(n) is None for n in joined.kinds):
            orelse += self.zero_assigns([n for n in joined.kinds if else_st.kind(n) is None],
                                        s)
        st.kinds = joined.kinds
        node = gast.If(test=s.test, body=body or [gast.Pass()], orelse=orelse)
        return [A.located(node, s)]

    def loop(self, s, st: _State) -> list:
        entry = st.copy()
        top = entry.copy()
        while True:  # fixed point of the kinds at the top of the body
            snap = self.snapshot()
            trial = top.copy()
            self.block(s.body, trial)
            self.restore(snap)
            joined = _join(top, trial)
            if joined.kinds == top.kinds:
                break
            top = joined
        end = top.copy()
        body = self.block(s.body, end)
        # Only tangents the body may read before assigning, or code after the loop may
        # read, need a value where the iterations merge.
        live = _upward_exposed(s.body) | self.names_read_outside(s)
        fix = self.zero_assigns([n for n in top.kinds if end.kind(n) is None and n in live],
                                s)
        at = len(body) - 1 if body and _is_exit_if(body[-1]) else len(body)
        body[at:at] = fix
        before = self.zero_assigns([n for n in top.kinds if entry.kind(n) is None
                                    and n in live], s)
        st.kinds = top.kinds
        if isinstance(s, gast.For):
            node = gast.For(target=s.target, iter=s.iter, body=body or [gast.Pass()],
                            orelse=[], type_comment=None)
        else:
            node = gast.While(test=s.test, body=body or [gast.Pass()], orelse=[])
        return before + [A.located(node, s)]

    def names_read_outside(self, loop) -> set[str]:
        if id(loop) not in self.read_outside:
            inner = {id(n) for n in gast.walk(loop)}
            self.read_outside[id(loop)] = {
                n.id for n in gast.walk(self.tree) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load) and id(n) not in inner}
        return self.read_outside[id(loop)]

    def snapshot(self):
        namer = self.ctx.namer
        return (dict(namer.counters), set(namer.taken), dict(namer.tangents),
                dict(self.ctx.helpers), len(self.ctx.problems))

    def restore(self, snap) -> None:
        namer = self.ctx.namer
        namer.counters, namer.taken, namer.tangents = dict(snap[0]), set(snap[1]), dict(snap[2])
        self.ctx.helpers = dict(snap[3])
        del self.ctx.problems[snap[4]:]

    # -- statements ------------------------------------------------------------------------
    def expr(self, s, st: _State) -> list:
        call = s.value
        if isinstance(call, gast.Constant):
            return []  # a docstring
        if _method_call(call, "push", 1) and self.kind_of(call.func.value, st) is not None:
            # pushing on an active tape pushes the tangent too, zero or not: pops stay aligned
            out = [s]
            d = self.tangent_tape(call.func.value, st, out, s)
            out.append(A.expr_stmt(A.call(A.attr(d, "push"),
                                          self.tangent_or_zero(call.args[0], st)), at=s))
            return out
        if _method_call(call, "pop", 0) and self.kind_of(call.func.value, st) is not None:
            out = [s]
            d = self.tangent_tape(call.func.value, st, out, s)
            out.append(A.expr_stmt(A.call(A.attr(d, "pop")), at=s))
            return out
        if adjoint_tape_op(call, self.ctx) == "pop" and call.args[0].id in self.ctx.active:
            return [s, A.expr_stmt(self.adjoint_pop_tangent(call, st), at=s)]
        return [s]

    # A tape of adjoints (``_rt.adjoint_push``/``adjoint_pop``, in a backward sweep being
    # differentiated again) carries a parallel tape of tangents, made by its first push.
    def adjoint_pop_tangent(self, call, st: _State):
        return A.call(self.rt("adjoint_pop"), self.tangent_or_zero(call.args[0], st))

    def adjoint_push_tangent(self, s, st: _State) -> list:
        target, (tape, item) = s.targets[0].id, s.value.args
        push = A.call(self.rt("adjoint_push"), self.tangent_or_zero(tape, st),
                      self.tangent_or_zero(item, st))
        st.set(target, DENSE)
        return [s, A.assign(self.tan(target), push, at=s)]

    def tangent_tape(self, tape, st: _State, out: list, at):
        """The tangent tape of an active tape; one that may be the lazy zero is replaced
        once by a real tape or the zero tape (``_rt.tangent_tape``), so pops stay C calls."""
        d = self.tan(tape.id)
        if self.kind_of(tape, st) == MAYBE:
            out.append(A.assign(d, A.call(self.rt("tangent_tape"), A.load(d)), at=at))
            st.set(tape.id, DENSE)
        return A.load(d)

    def assign(self, s, st: _State) -> list:
        target = s.targets[0]
        value = s.value
        if not isinstance(target, gast.Name):
            if any(st.kind(n) is not None for n in A.names_read(s) & self.ctx.active):
                self.ctx.problem(s, "storing a differentiable value into an attribute or "
                                    "element of a non-differentiable object",
                                 "Keep the value in a local variable or a container that "
                                 "depends on the differentiated input.")
            return [s]
        v = target.id
        if _method_call(value, "pop", 0) and self.kind_of(value.func.value, st) is not None:
            out = [s]
            pop = A.call(A.attr(self.tangent_tape(value.func.value, st, out, s), "pop"))
            if v not in self.ctx.active:
                return out + [A.expr_stmt(pop, at=s)]
            st.set(v, MAYBE)
            return out + [A.assign(self.tan(v), pop, at=s)]
        op = adjoint_tape_op(value, self.ctx)
        if op == "pop" and value.args[0].id in self.ctx.active:
            pop = self.adjoint_pop_tangent(value, st)
            if v not in self.ctx.active:
                return [s, A.expr_stmt(pop, at=s)]
            st.set(v, MAYBE)
            return [s, A.assign(self.tan(v), pop, at=s)]
        if op == "push" and v in self.ctx.active:
            return self.adjoint_push_tangent(s, st)
        if v not in self.ctx.active:
            return [s]
        if isinstance(value, gast.Call):
            r = self.ctx.resolved.get(id(value))
            if r is not None and r.kind == "class" and r.obj is runtime.Tape:
                st.set(v, DENSE)
                return [s, A.assign(self.tan(v), A.call(self.rt("Tape")), at=s)]
        if not any(st.kind(n) is not None for n in A.names_read(value) & self.ctx.active):
            st.set(v, None)
            return [s]
        out = [s]
        kind = self.tangent_value(value, v, st, s, out)
        st.set(v, kind)
        return out

    def tangent_value(self, value, v: str, st: _State, s, out: list) -> str | None:
        """Append the statements giving ``dv`` for ``v = value`` (after the primal one, which
        some cases replace); return the kind of ``dv``."""
        dv = self.tan(v)
        if isinstance(value, gast.Name):
            kind = self.kind_of(value, st)
            if kind is not None:
                out.append(A.assign(dv, A.load(self.tan(value.id)), at=s))
            return kind
        if isinstance(value, gast.BinOp):
            fn = BINOPS[type(value.op)]
            if isinstance(value.op, gast.Add):
                # (the reverse generator's decision: a left operand that may be None first,
                # ``l = None`` then ``l = l + [a]``, concatenates through runtime.plus)
                fn = concatenation(value, self.sequences) or fn
            return self.rule_tangent(fn, [value.left, value.right], {}, v, st, s, out)
        if isinstance(value, gast.UnaryOp) and type(value.op) in UNARYOPS:
            return self.rule_tangent(UNARYOPS[type(value.op)], [value.operand], {}, v, st, s,
                                     out)
        if isinstance(value, gast.Subscript):
            return self.subscript_tangent(value, dv, st, s, out)
        if isinstance(value, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in value.elts):
                self.ctx.problem(s, "'*' unpacking of a differentiable value in a display",
                                 "Build the sequence with + or explicit elements.")
                return None
            elts = [self.tangent_or_zero(e, st) for e in value.elts]
            out.append(A.assign(dv, type(value)(elts=elts, ctx=gast.Load()), at=s))
            return DENSE
        if isinstance(value, gast.Dict):
            if any(k is None for k in value.keys):
                self.ctx.problem(s, "'**' unpacking of a differentiable dict in a display",
                                 "Use dict(a, **b) outside, or set keys one by one.")
                return None
            values = [self.tangent_or_zero(e, st) for e in value.values]
            keys = [A.deepcopy(k) for k in value.keys]
            out.append(A.assign(dv, gast.Dict(keys=keys, values=values), at=s))
            return DENSE
        if isinstance(value, gast.Attribute):
            return self.attribute_tangent(value, v, st, s, out)
        if isinstance(value, gast.Call):
            return self.call_tangent(value, v, st, s, out)
        return None  # constants, comparisons, lambdas, f-strings: no derivative

    def subscript_tangent(self, value, dv, st, s, out) -> str | None:
        base = value.value
        kind = self.kind_of(base, st)
        if kind is None:
            return None
        d = A.load(self.tan(base.id))
        if kind == DENSE:
            item = gast.Subscript(value=d, slice=A.deepcopy(value.slice), ctx=gast.Load())
        else:
            item = A.call(self.rt("tangent_item"), d, A.load(base.id), _index_expr(value.slice))
        out.append(A.assign(dv, item, at=s))
        return MAYBE  # an entry of a container's tangent may be the lazy zero

    def attribute_tangent(self, value, v, st, s, out) -> str | None:
        r = self.ctx.resolved.get(id(value))
        if r is not None and r.kind == "rule":
            return self.rule_tangent(r.obj, [value.value], {}, v, st, s, out)
        if r is not None and r.kind in ("nondiff", "constant", "class"):
            return None
        base = value.value
        if self.kind_of(base, st) is None:
            return None
        call = A.call(self.rt("tangent_attr"), A.load(self.tan(base.id)), A.const(value.attr),
                      A.load(base.id))
        out.append(A.assign(self.tan(v), call, at=s))
        return MAYBE

    # -- calls -----------------------------------------------------------------------------
    def call_tangent(self, call, v, st, s, out) -> str | None:
        r = self.ctx.resolved.get(id(call))
        split = split_spread(call)
        args, keywords = split.args, split.keywords
        operands = args + list(keywords.values())
        if isinstance(call.func, gast.Attribute):
            operands.append(call.func.value)  # the receiver of a method call
        if not any(self.kind_of(a, st) is not None for a in operands + split.values):
            return None
        spread = None
        if split.rest or split.double:
            if (r is None or r.kind not in ("rule", "method")
                    or (r.kind == "rule" and lookup(r.obj).jvp is None)
                    or any(self.kind_of(a, st) is not None for a in split.values)):
                self.ctx.problem(s, "'*args' or '**kwargs' in a call with differentiable "
                                    "arguments", "Pass each argument explicitly.")
                return None
            spread = split
        if r is None:
            raise InternalError("forward", "a call was not resolved", self.ctx.user_location(s))
        if r.kind == "method":
            return self.rule_tangent(r.obj, [call.func.value] + args, keywords, v, st, s, out,
                                     spread)
        if r.kind == "rule" and lookup(r.obj).jvp is None:
            # a user's rule with only a vjp: the runtime transposes it (api_forward)
            out.pop()
            return self.dynamic_call(call, DynamicCall("call"), v, st, s, out)
        if r.kind == "rule":
            return self.rule_tangent(r.obj, args, keywords, v, st, s, out, spread)
        if r.kind == "nondiff":
            return None
        if r.kind == "user" and _dispatch_name(r.obj) is not None:
            out.pop()  # the primal statement: the runtime gives value and tangent
            return self.dispatch_call(call, _dispatch_name(r.obj), v, st, s, out)
        if id(call) in self.user_calls:
            callee = self.user_calls[id(call)]
            out.pop()  # the primal statement: one call gives both value and tangent
            if isinstance(callee, DynamicCall):
                return self.dynamic_call(call, callee, v, st, s, out)
            return self.user_call(call, callee, v, st, s, out)
        raise MissingRuleError(r.name, self.ctx.user_location(s))

    def rule_tangent(self, fn, args, keywords, v, st, s, out, spread=None) -> str | None:
        """The tangent of ``v = fn(*args, **keywords)``; ``spread`` (a ``SpreadCall``) holds
        the call's spread operands, which carry none and are passed through to the jvp."""
        rule = lookup(fn)
        ctx = self.ctx
        if rule is None:
            raise MissingRuleError(getattr(fn, "__name__", repr(fn)), ctx.user_location(s))
        if rule.jvp is None:
            raise SrcgradError(f"{ctx.user_location(s)}: the rule of '{rule.name}' has no "
                               f"forward-mode (jvp) part. Attach one with "
                               f"srcgrad.rules.defjvp({rule.name}, jvp).")
        args, keywords = list(args), dict(keywords)
        bound = bind_rule_call(rule, args, keywords)
        # an active operand the rule does not differentiate would silently get no tangent
        out.extend(nondiff_guard(ctx, rule, what, a, s) for what, _, a in bound.nondiff
                   if self.strict and self.kind_of(a, st) is not None)
        operand = {k: a for k, _, a, _ in bound.diff}
        active = [k for k, a in operand.items() if self.kind_of(a, st) is not None]
        if not active:
            return None
        zero_safe = rule.name in _ZERO_SAFE
        maybe_in = any(self.kind_of(operand[k], st) == MAYBE for k in active)
        tangents = []
        for k in range(len(rule.diff_args)):
            if k not in active:
                d = None
            elif zero_safe:  # arithmetic: a lazy 0.0 or a smaller broadcastable tangent is fine
                d = self.tangent(operand[k], st)
            else:
                d = self.dense(operand[k], st, out, s)
            tangents.append(A.const(ZERO) if d is None else d)
        ans = A.load(v)
        tmpl = inline.template(rule.jvp)
        mapping = inline.bind(tmpl, tangents + [ans], args, keywords) if spread is None else None
        if tmpl.elements is not None and mapping is not None:
            parts = [inline.instantiate(rule.jvp, tmpl.elements[k], mapping, ctx)
                     for k in active]
            if not zero_safe:  # the active tangents passed are dense: no lazy-zero guards
                dense = {t.id for k, t in enumerate(tangents)
                         if k in active and isinstance(t, gast.Name)}
                parts = [self.unguarded(p, dense) for p in parts]
        else:
            tmp = ctx.namer.fresh()
            fname = ctx.helper(rule.jvp, rule.jvp.__name__)
            kw = [gast.keyword(arg=k, value=A.deepcopy(val)) for k, val in keywords.items()]
            rest = [] if spread is None else spread.rest
            kw += [] if spread is None else [A.deepcopy(k) for k in spread.double]
            call = A.call(A.load(fname), *tangents, ans, *[A.deepcopy(a) for a in args + rest],
                          keywords=kw)
            out.append(A.assign(tmp, call, at=s))
            parts = [gast.Subscript(value=A.load(tmp), slice=A.const(k), ctx=gast.Load())
                     for k in active]
        if ctx.scalar_mode or (spread is None and _sums_to_result_shape(rule, operand, active)):
            parts = [self.strip_broadcast(p) for p in parts]
        structural = _is_runtime_rule(rule)
        total = parts[0]
        for p in parts[1:]:
            # arithmetic adds with '+'; other rules may return tuples (lstsq, slogdet), whose
            # contributions '+' would concatenate: runtime.add adds them item by item
            total = gast.BinOp(left=total, op=gast.Add(), right=p) if zero_safe \
                and not structural else A.call(self.rt("add"), total, p)
        out.append(A.assign(self.tan(v), total, at=s))
        return MAYBE if structural or (zero_safe and maybe_in) else DENSE

    def unguarded(self, part, dense: set):
        """``e`` for a contribution ``_rt.ZERO if _rt.is_zero(d) else e`` whose tangent ``d``
        is known dense here. Rules guard a tangent that may be the lazy zero (an operand
        without one, when the rule is called); inlined, the guard would only be noise, and
        compiled code (jit) has no lazy zero."""
        if isinstance(part, gast.IfExp) and A.called_attr(part.test, self.ctx.rt) == "is_zero" \
                and len(part.test.args) == 1 and isinstance(part.test.args[0], gast.Name) \
                and part.test.args[0].id in dense:
            return part.orelse
        return part

    def strip_broadcast(self, part):
        """``e`` for ``_rt.broadcast_like(e, ans)``: numpy broadcasts the sum itself."""
        if A.called_attr(part, self.ctx.rt) == "broadcast_like":
            return part.args[0]
        return part

    def user_call(self, call, callee, v, st, s, out) -> str:
        """``v, dv = f_jvp(dargs..., args...)`` through the callee's own jvp function.

        Tangents that may be the lazy zero at run time are passed as they are to a call
        site that leaves the zero ones out of the callee's jvp (forward over reverse meets
        this for every input that is not differentiated, e.g. the data of a loss), instead
        of pushing arrays of zeros through.
        """
        positions = callee.bind_positions(call)
        wrt = tuple(i for i, a in positions if self.kind_of(a, st) is not None)
        sparse = any(self.kind_of(a, st) == MAYBE for i, a in positions if i in wrt)
        obj, preferred = callee.site(wrt, sparse=sparse)
        tangents = [self.tangent(a, st) if sparse else self.dense(a, st, out, s)
                    for i, a in positions if i in wrt]
        # arithmetic with a lazy zero leaves a tangent smaller than its value (dx[1] + 0.0
        # for x[1] + v): the callee indexes it as its value, so it gets the value's shape
        tangents = [A.call(self.rt("tangent_like"), d, A.load(a.id))
                    if isinstance(a, gast.Name) and d is not None else d
                    for d, (i, a) in zip(tangents, [(i, a) for i, a in positions if i in wrt])]
        fn = A.load(self.ctx.helper(obj, preferred))
        new = gast.Call(func=fn, args=tangents + list(call.args), keywords=call.keywords)
        target = gast.Tuple(elts=[A.store(v), A.store(self.tan(v))], ctx=gast.Store())
        out.append(A.assign(target, new, at=s))
        return MAYBE

    def dispatch_call(self, call, jvp_name, v, st, s, out) -> str:
        """``v, dv = _rt.call_fwd_jvp(dargs, dkwargs, args...)`` for the runtime's dispatch
        helpers (``call_fwd``, ``method_fwd``, ``call_bwd``), whose records carry tangents."""
        targs = gast.Tuple(elts=[self.tangent_or_zero(a, st) for a in call.args],
                           ctx=gast.Load())
        active_kw = [k for k in call.keywords if self.kind_of(k.value, st) is not None]
        tkw = gast.Dict(keys=[A.const(k.arg) for k in active_kw],
                        values=[self.tangent_or_zero(k.value, st) for k in active_kw])
        new = gast.Call(func=self.rt(jvp_name), args=[targs, tkw] + call.args,
                        keywords=call.keywords)
        target = gast.Tuple(elts=[A.store(v), A.store(self.tan(v))], ctx=gast.Store())
        out.append(A.assign(target, new, at=s))
        return MAYBE

    def dynamic_call(self, call, dyn, v, st, s, out) -> str:
        """``v, dv = _rt.call_jvp(f, dargs, dkwargs, args...)``: dispatched at run time."""
        targs = gast.Tuple(elts=[self.tangent_or_zero(a, st) for a in call.args],
                           ctx=gast.Load())
        active_kw = [k for k in call.keywords if self.kind_of(k.value, st) is not None]
        tkw = gast.Dict(keys=[A.const(k.arg) for k in active_kw],
                        values=[self.tangent_or_zero(k.value, st) for k in active_kw])
        if dyn.kind == "method":
            func = call.func
            head = [func.value, self.tangent_or_zero(func.value, st), A.const(func.attr)]
            new = gast.Call(func=self.rt("method_jvp"), args=head + [targs, tkw] + call.args,
                            keywords=call.keywords)
        else:
            new = gast.Call(func=self.rt("call_jvp"), args=[call.func, targs, tkw] + call.args,
                            keywords=call.keywords)
        target = gast.Tuple(elts=[A.store(v), A.store(self.tan(v))], ctx=gast.Store())
        out.append(A.assign(target, new, at=s))
        return MAYBE


def _sequence_names(tree) -> set[str]:
    """Names every definition of which is a tuple or list display, or ``+`` of such a name:
    ``+`` on them concatenates (the reverse generator makes the same analysis). ``None``
    definitions do not count against a name (``l = None`` before ``l = l + [a]``, and the
    ``_t1 = None`` a generated forward sweep starts with): ``+`` on None fails in Python."""
    defs: dict[str, list] = {}
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            defs.setdefault(node.targets[0].id, []).append(node.value)

    def is_sequence(value, seqs):
        if is_none_constant(value):
            return True
        if isinstance(value, (gast.Tuple, gast.List)):
            return True
        if isinstance(value, gast.Name):
            return value.id in seqs
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute):
            return value.func.attr in ("as_list", "as_tuple", "list_append", "list_extend")
        return isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add) and any(
            isinstance(o, gast.Name) and o.id in seqs for o in (value.left, value.right))

    seqs: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in defs.items():
            if name not in seqs and all(is_sequence(v, seqs) for v in values) \
                    and not all(is_none_constant(v) for v in values):
                seqs.add(name)
                changed = True
    return seqs


def _upward_exposed(stmts) -> set[str]:
    """Names a block may read before writing them (so their value comes from before)."""
    exposed: set[str] = set()
    written: set[str] = set()

    def visit(block, written):
        for s in block:
            if isinstance(s, gast.Assign):
                exposed.update(A.names_read(s.value) - written)
                for t in s.targets:
                    exposed.update(A.names_read(t) - written)
                written |= A.names_written(s)
            elif isinstance(s, (gast.If, gast.While)):
                exposed.update(A.names_read(s.test) - written)
                visit(s.body, set(written))
                visit(s.orelse, set(written))
            elif isinstance(s, gast.For):
                exposed.update(A.names_read(s.iter) - written)
                visit(s.body, written | A.names_written(s.target))
            else:
                exposed.update(A.names_read(s) - written)
                written |= A.names_written(s)

    visit(stmts, written)
    return exposed


# runtime helpers of generated sweeps that dispatch at run time, and their forward modes
_DISPATCH = {"call_fwd": "call_fwd_jvp", "method_fwd": "method_fwd_jvp",
             "call_bwd": "call_bwd_jvp"}


def _dispatch_name(obj) -> str | None:
    for name, jvp_name in _DISPATCH.items():
        if getattr(runtime, name, None) is obj:
            return jvp_name
    return None


def _method_call(node, name: str, nargs: int) -> bool:
    """``recv.name(<nargs positional args>)`` on a local name."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr == name and isinstance(node.func.value, gast.Name)
            and len(node.args) == nargs and not node.keywords)


def _is_exit_if(s) -> bool:
    return isinstance(s, gast.If) and len(s.body) == 1 and isinstance(s.body[0], gast.Break) \
        and not s.orelse


def _index_expr(node):
    """A Load-context copy of an index (slices become ``slice(...)`` calls)."""
    if isinstance(node, gast.Slice):
        parts = [A.const(None) if p is None else A.deepcopy(p)
                 for p in (node.lower, node.upper, node.step)]
        return A.call("slice", *parts)
    if isinstance(node, gast.Tuple):
        return gast.Tuple(elts=[_index_expr(e) for e in node.elts], ctx=gast.Load())
    return A.deepcopy(node)


def forward(tree: gast.FunctionDef, ctx: Context, user_calls: dict) -> gast.Module:
    """Build ``_make(...)`` returning the jvp function of ``tree`` for ``ctx.wrt``."""
    ret = tree.body[-1]
    if not (isinstance(ret, gast.Return) and isinstance(ret.value, (gast.Name, gast.Constant))):
        raise InternalError("forward", "the body does not end with 'return name'")
    name = tree.name if tree.name != "_lambda" else "lambda"
    fn_name = ctx.namer.unique(f"{name}_jvp")  # reserved: helpers must not shadow it
    gen = ForwardGenerator(tree, ctx, user_calls)
    wrt_names = ctx.wrt_names
    state = _State({p: DENSE for p in wrt_names if p in ctx.active})
    body = regroup_contexts(simplify(gen.block(tree.body[:-1], state)), ctx.rt)
    ctx.raise_problems()
    result = ret.value
    d_result = A.const(ZERO)
    if isinstance(result, gast.Name) and state.kind(result.id) is not None:
        d_result = A.load(gen.tan(result.id))
    value = gast.Tuple(elts=[A.deepcopy(result), d_result], ctx=gast.Load())
    body = [codegen.comment("forward mode")] + body
    body.append(A.located(gast.Return(value=value), ret))

    args = A.signature_of(tree.args)
    tangent_params = [gast.Name(id=ctx.namer.tangent(p), ctx=gast.Param(), annotation=None,
                                type_comment=None) for p in wrt_names]
    if args.posonlyargs:
        args.posonlyargs = tangent_params + args.posonlyargs
    else:
        args.args = tangent_params + args.args
    fn = A.function_def(fn_name, args, body)
    return factory_module(ctx, [fn], [fn.name])
