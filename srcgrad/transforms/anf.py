"""Guarantees afterwards: every statement that reads a varied name performs one operation on
names and constants (A-normal form); an assignment's target is never one of its operands;
conditional expressions are if-statements; the final ``return`` returns a name.
"""
from __future__ import annotations

import builtins
import dataclasses

import gast

from . import astutil as A
from .context import Context
from .resolve import static_value


def to_anf(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    # the locals earlier passes introduced (a comprehension's renamed variable) are locals
    # too: `_u.real.T` must be split like `u.real.T`, not kept as a static `np.linalg.norm`
    ctx.bind_locals(tree)
    tree.body = _ANF(ctx).block(tree.body)
    return tree


def is_static_ref(node, ctx: Context) -> bool:
    """``np.linalg.norm``-like chains rooted at a name that is not a local variable."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name) and node.id not in ctx.local_names


class _ANF:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s) -> list:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            if not (A.names_read(s.value) & self.ctx.varied):
                return [s]
            pre: list = []
            op = self.op(s.value, pre, s)
            target = s.targets[0].id
            if target in A.names_read(op) and not isinstance(op, gast.Name):
                tmp = self.ctx.namer.fresh()
                pre.append(A.assign(tmp, op, at=s))
                op = A.load(tmp)
            return pre + [A.assign(target, op, at=s)]
        if isinstance(s, gast.Return) and not isinstance(s.value, gast.Name):
            pre = []
            value = self.atom(s.value, pre, s)
            if not isinstance(value, (gast.Name, gast.Constant)):  # return -1.27
                tmp = self.ctx.namer.fresh()
                pre.append(A.assign(tmp, value, at=s))
                value = A.load(tmp)
            return pre + [A.located(gast.Return(value=value), s)]
        if isinstance(s, (gast.If, gast.For, gast.While)):
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
        return [s]

    def atom(self, e, pre, at):
        # a tuple of names is an operand only inside an index (x[i, j]); elsewhere it is a
        # value of its own whose elements get adjoints
        if A.is_atomic(e) and not isinstance(e, gast.Tuple):
            return e
        op = self.op(e, pre, at)
        tmp = self.ctx.namer.fresh()
        pre.append(A.assign(tmp, op, at=at))
        return A.load(tmp)

    def op(self, e, pre, at):
        """``e`` as a single operation whose operands are atomic, lifting the rest to ``pre``."""
        atom = lambda x: self.atom(x, pre, at)  # noqa: E731
        if isinstance(e, gast.BinOp):
            return A.located(gast.BinOp(left=atom(e.left), op=e.op, right=atom(e.right)), e)
        if isinstance(e, gast.UnaryOp) and not isinstance(e.op, gast.Not):
            if A.is_atomic(e):
                return e
            return A.located(gast.UnaryOp(op=e.op, operand=atom(e.operand)), e)
        if isinstance(e, gast.Call) and self.builtin_call(e, ("list", "tuple"), 1) \
                and A.names_read(e) & self.ctx.varied:
            # list(xs) / tuple(xs) of differentiable items: the runtime's forms have rules
            name = "as_list" if self.builtin_call(e, ("list",), 1) else "as_tuple"
            call = A.located(A.call(A.attr(self.ctx.rt, name), e.args[0]), e)
            return self.op(call, pre, at)
        if isinstance(e, gast.Call) and self.builtin_call(e, ("dict",), 1, keywords=True) \
                and all(k.arg is not None for k in e.keywords) \
                and A.names_read(e) & self.ctx.varied:
            # dict(d) / dict(pairs): a copy (other iterables are refused at run time);
            # dict(d, k=v) the copy updated with the literal {'k': v}
            call = A.located(A.call(A.attr(self.ctx.rt, "dict_copy"), e.args[0]), e)
            if e.keywords:
                literal = gast.Dict(keys=[A.const(k.arg) for k in e.keywords],
                                    values=[k.value for k in e.keywords])
                call = A.located(A.call(A.attr(self.ctx.rt, "dict_update"), call,
                                        A.located(literal, e)), e)
            return self.op(call, pre, at)
        if isinstance(e, gast.Call) and self.builtin_call(e, ("dict",), 0, keywords=True) \
                and all(k.arg is not None for k in e.keywords):
            # dict(a=x, b=y) is the literal {'a': x, 'b': y}
            literal = gast.Dict(keys=[A.const(k.arg) for k in e.keywords],
                                values=[k.value for k in e.keywords])
            return self.op(A.located(literal, e), pre, at)
        if isinstance(e, gast.Dict) and None in e.keys:
            return self.op(self.merged_dict(e), pre, at)
        if isinstance(e, gast.Call) and self.field_replacement(e) is not None:
            # dataclasses.replace(m, W=v) / p._replace(a=v): the runtime's form, which has a
            # rule (dataclasses' and collections' own code calls getattr and map)
            names = gast.Tuple(elts=[A.const(k.arg) for k in e.keywords], ctx=gast.Load())
            values = gast.Tuple(elts=[k.value for k in e.keywords], ctx=gast.Load())
            call = A.call(A.attr(self.ctx.rt, "replaced"), self.field_replacement(e),
                          A.located(names, e), A.located(values, e))
            return self.op(A.located(call, e), pre, at)
        if isinstance(e, gast.Call) and self.builtin_extremum(e):
            # max(xs) / max(a, b, c) / max(xs, key=k): the runtime's sequence form, which
            # has a rule
            items = e.args[0] if len(e.args) == 1 else gast.Tuple(elts=e.args, ctx=gast.Load())
            name = "seq_max" if e.func.id == "max" else "seq_min"
            keys = [k.value for k in e.keywords]
            name += "_by" if keys else ""
            return self.op(A.located(A.call(A.attr(self.ctx.rt, name), items, *keys), e),
                           pre, at)
        if isinstance(e, gast.Call):
            func = e.func
            if isinstance(func, gast.Attribute) and not is_static_ref(func, self.ctx):
                func = gast.Attribute(value=atom(func.value), attr=func.attr, ctx=gast.Load())
            elif not isinstance(func, (gast.Name, gast.Attribute)):
                func = atom(func)
            args = [gast.Starred(value=atom(a.value), ctx=gast.Load())
                    if isinstance(a, gast.Starred) else atom(a) for a in e.args]
            keywords = [gast.keyword(arg=k.arg, value=atom(k.value)) for k in e.keywords]
            call = gast.Call(func=func, args=args, keywords=keywords)
            gast.copy_location(call, e)
            if hasattr(e, "srcgrad_consumed"):  # (desugar.hand_over's mark)
                call.srcgrad_consumed = e.srcgrad_consumed
            return A.located(call, e)
        if isinstance(e, gast.Subscript):
            return A.located(gast.Subscript(value=atom(e.value), slice=self.index(e.slice, pre, at),
                                            ctx=gast.Load()), e)
        if isinstance(e, gast.Attribute):
            if is_static_ref(e, self.ctx):
                return e
            return A.located(gast.Attribute(value=atom(e.value), attr=e.attr, ctx=gast.Load()), e)
        if isinstance(e, (gast.Tuple, gast.List)) and \
                any(isinstance(x, gast.Starred) for x in e.elts):
            return self.op(self.spread_display(e), pre, at)
        if isinstance(e, (gast.Tuple, gast.List)):
            return A.located(type(e)(elts=[atom(x) for x in e.elts], ctx=gast.Load()), e)
        if isinstance(e, gast.Dict):
            keys = [None if k is None else atom(k) for k in e.keys]
            return A.located(gast.Dict(keys=keys, values=[atom(v) for v in e.values]), e)
        if isinstance(e, gast.BoolOp) and A.names_read(e) & self.ctx.varied:
            # 'a or b' is 'a if a else b'; 'a and b' is 'b if a else a': the value is an
            # operand, so it carries that operand's gradient
            return self.op(_boolop_as_ifexp(e), pre, at)
        if isinstance(e, gast.IfExp):
            tmp = self.ctx.namer.fresh()
            body, orelse = [], []
            body.append(A.assign(tmp, self.op(e.body, body, at), at=at))
            orelse.append(A.assign(tmp, self.op(e.orelse, orelse, at), at=at))
            pre.append(A.located(gast.If(test=e.test, body=body, orelse=orelse), at))
            return A.load(tmp)
        return e

    def merged_dict(self, e):
        """``{**d, 'k': v}`` as ``dict_update(dict_update({}, d), {'k': v})``."""
        parts, literal = [], None
        for k, v in zip(e.keys, e.values):
            if k is None:
                parts.append(v)
                literal = None
            else:
                if literal is None:
                    literal = gast.Dict(keys=[], values=[])
                    parts.append(literal)
                literal.keys.append(k)
                literal.values.append(v)
        merged = gast.Dict(keys=[], values=[])
        for part in parts:
            merged = A.located(A.call(A.attr(self.ctx.rt, "dict_update"), merged, part), e)
        return merged

    def spread_display(self, e):
        """``[a, *xs, b]`` as ``[a] + as_list(xs) + [b]`` (tuples alike): a starred item
        is no operand of its own (the temporary ``_t = *xs`` is no Python), and the
        concatenation's parts all have rules."""
        kind, name = type(e), "as_list" if isinstance(e, gast.List) else "as_tuple"
        parts, run = [], None
        for x in e.elts:
            if isinstance(x, gast.Starred):
                parts.append(A.located(A.call(A.attr(self.ctx.rt, name), x.value), e))
                run = None
            else:
                if run is None:
                    run = A.located(kind(elts=[], ctx=gast.Load()), e)
                    parts.append(run)
                run.elts.append(x)
        joined = parts[0]
        for part in parts[1:]:
            joined = A.located(gast.BinOp(left=joined, op=gast.Add(), right=part), e)
        return joined

    def builtin_call(self, e, names, nargs, keywords=False) -> bool:
        """``e`` calls one of the builtins ``names`` with ``nargs`` plain arguments (under
        its own name or another: ``from builtins import list as ag_list``)."""
        if not (isinstance(e.func, gast.Name) and (keywords or not e.keywords)
                and len(e.args) == nargs
                and not any(isinstance(a, gast.Starred) for a in e.args)):
            return False
        try:
            value = self.ctx.lookup_static(e.func.id)
        except (KeyError, AttributeError):
            return False
        return any(value is getattr(builtins, name) for name in names)

    def field_replacement(self, e):
        """The object of ``dataclasses.replace(obj, n=v, ...)`` or ``obj._replace(n=v, ...)``
        with differentiable values and named keywords only; else None."""
        if not (e.keywords and all(k.arg is not None for k in e.keywords)
                and not any(isinstance(a, gast.Starred) for a in e.args)
                and A.names_read(e) & self.ctx.varied):
            return None
        if isinstance(e.func, gast.Attribute) and e.func.attr == "_replace" and not e.args:
            return e.func.value
        if len(e.args) == 1 and isinstance(e.func, (gast.Name, gast.Attribute)):
            try:
                if static_value(e.func, self.ctx) is dataclasses.replace:
                    return e.args[0]
            except (KeyError, AttributeError):
                return None
        return None

    def builtin_extremum(self, e) -> bool:
        keyed = [k.arg for k in e.keywords] == ["key"]
        if not (isinstance(e.func, gast.Name) and e.func.id in ("max", "min")
                and (not e.keywords or keyed) and (len(e.args) == 1 or len(e.args) > 2 or keyed)
                and not any(isinstance(a, gast.Starred) for a in e.args)):
            return False
        try:
            return self.ctx.lookup_static(e.func.id) is getattr(builtins, e.func.id)
        except (KeyError, AttributeError):
            return False

    def index(self, s, pre, at):
        if isinstance(s, gast.Slice):
            parts = [None if p is None else self.atom(p, pre, at)
                     for p in (s.lower, s.upper, s.step)]
            return gast.Slice(lower=parts[0], upper=parts[1], step=parts[2])
        if isinstance(s, gast.Tuple):
            return gast.Tuple(elts=[self.index(x, pre, at) for x in s.elts], ctx=gast.Load())
        if A.is_atomic(s):
            return s
        return self.atom(s, pre, at)


def _boolop_as_ifexp(e: gast.BoolOp):
    """Right-nested conditional expressions equivalent to a (non-short-circuit-sensitive)
    'and'/'or' chain: each operand is evaluated at most once per branch taken."""
    first, rest = e.values[0], e.values[1:]
    tail = rest[0] if len(rest) == 1 else gast.BoolOp(op=e.op, values=rest)
    if isinstance(e.op, gast.Or):
        node = gast.IfExp(test=first, body=A.deepcopy(first), orelse=tail)
    else:
        node = gast.IfExp(test=first, body=tail, orelse=A.deepcopy(first))
    return A.located(node, e)
