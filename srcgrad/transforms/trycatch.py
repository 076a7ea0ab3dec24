"""``try`` statements, in two passes.

``lower_try`` (before desugaring) guarantees afterwards: no ``try`` statement. Its body stands
between ``_rt.try_begin(_catch1)`` and ``_rt.try_end(_catch1)`` markers, ``_catch1`` being a
``runtime.Catching`` made for this execution of the statement; the handlers, ``else`` and
``finally`` become plain code deciding on ``_catch1.ok`` and ``_catch1.error``, which the
backward sweep reverses like any branch::

    _catch1 = _rt.Catching(_rt.exception_types(ValueError))
    _rt.try_begin(_catch1)
    <body>
    _rt.try_end(_catch1)
    _handled1 = _catch1.ok
    if not _catch1.ok:
        if isinstance(_catch1.error, ...): _handled1 = True; <handler>
    if _catch1.ok: <else>
    <finally>
    if not _handled1: raise _catch1.error

``return``/``break``/``continue`` leaving the body raise ``runtime.TryExit`` there (the
catcher records it like a handled exception) and run after the ``finally``.

``protect_try_bodies`` (after ANF) guarantees afterwards: no ``try_begin``/``try_end``
markers. Each statement of a marked body runs only while ``_catch1.ok`` holds, inside the
catcher (a ``with`` in the forward sweep) which records a handled exception instead of
letting it through; an assignment's value goes to a temporary first and reaches its target
only if it did not raise. So the forward sweep records exactly which statements ran, and the
backward sweep reverses those and no others. A generated sweep differentiated again meets
those ``with`` blocks and protects their statements in turn (``reopen_protected``).
"""
from __future__ import annotations

import gast

from .. import runtime
from . import astutil as A
from .context import Context
from .desugar import own_nodes
from .resolve import known_value
from .validate import is_no_grad_block

_REFUSED = (gast.Yield, gast.YieldFrom)


def lower_try(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    tree.body = _block(tree.body, ctx)
    return tree


def _block(stmts: list, ctx: Context, in_try: bool = False) -> list:
    """``stmts`` with every ``try`` lowered; ``in_try``: they stand in a try body, where a
    ``with`` block is lowered too (its manager must see the exception its body raises)."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Try):
            out.extend(_lower(s, ctx, in_try))
            continue
        if in_try and isinstance(s, gast.With) and not is_no_grad_block(s, ctx):
            out.extend(_lower_with(s, ctx))
            continue
        reopened = reopen_protected(s, ctx)
        if reopened is not None:
            out.extend(reopened)
            continue
        if not isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            A.map_blocks(s, lambda block: _block(block, ctx, in_try))
        out.append(s)
    return out


class _Region:
    """The protected body of one ``try`` (or of a ``with`` inside a try body): its catcher,
    which records any exception (handlers decide afterwards which they handle, the others
    are raised again after the ``finally``, as Python does), and the ``return``/``break``/
    ``continue`` leaving it."""

    def __init__(self, s, body: list, ctx: Context):
        namer, rt = ctx.namer, ctx.rt
        self.s, self.ctx, self.rt = s, ctx, rt
        self.value = namer.fresh("_tryval")
        self.catcher, self.handled = namer.fresh("_catch"), namer.fresh("_handled")
        self.left = namer.fresh("_left")
        ctx.local_names |= {self.catcher, self.handled, self.left, self.value}
        self.leaving = _Leaving(rt, self.value)
        body = [out for b in body for out in _as_list(self.leaving.visit(b))]
        for node in (n for b in body for n in own_nodes(b)):
            if isinstance(node, _REFUSED):
                ctx.problem(node, f"'{type(node).__name__.lower()}' in a 'try' body",
                            "Move it after the try statement (set a flag in the body and "
                            "act on it afterwards), or into a helper function called from "
                            "the body.")
        self.body = _block(body, ctx, in_try=True)

    def protected(self) -> list:
        """The catcher, then the body between the markers ``protect_try_bodies`` reads."""
        s, rt, catcher = self.s, self.rt, self.catcher
        return ([A.assign(catcher, A.call(A.attr(rt, "Catching"), A.load("BaseException")),
                          at=s),
                 A.expr_stmt(A.call(A.attr(rt, "try_begin"), A.load(catcher)), at=s)]
                + self.body
                + [A.expr_stmt(A.call(A.attr(rt, "try_end"), A.load(catcher)), at=s)])

    def leaving_first(self, dispatch: list) -> list:
        """``dispatch`` (deciding what handles an exception) unless a return/break/continue
        of this region left it, which counts as handled until it runs after the finally."""
        if not self.leaving.used:
            return dispatch
        s = self.s
        left = A.assign(self.left, A.call(A.attr(self.rt, "try_exit"), A.load(self.catcher),
                                          A.const(self.value)), at=s)
        left_body = gast.Compare(left=A.load(self.left), ops=[gast.IsNot()],
                                 comparators=[A.const(None)])
        return [left, A.located(gast.If(test=left_body, body=[
            A.assign(self.handled, A.const(True), at=s)], orelse=dispatch), s)]

    def finish(self) -> list:
        """An exception nobody handled raised again; then the return/break/continue that
        left the body."""
        s = self.s
        reraise = A.located(gast.Raise(exc=A.attr(self.catcher, "error"), cause=None), s)
        out = [A.located(gast.If(test=gast.UnaryOp(op=gast.Not(), operand=A.load(self.handled)),
                                 body=[reraise], orelse=[]), s)]
        for kind, node in (("return", gast.Return(value=A.load(self.value))),
                           ("break", gast.Break()), ("continue", gast.Continue())):
            if kind in self.leaving.used:
                test = gast.Compare(left=A.load(self.left), ops=[gast.Eq()],
                                    comparators=[A.const(kind)])
                out.append(A.located(gast.If(test=test, body=[A.located(node, s)], orelse=[]),
                                     s))
        return out


def _lower(s: gast.Try, ctx: Context, in_try: bool) -> list:
    """The body protected, then the handlers and ``else``, the ``finally``, and what left the
    body. With a ``finally``, the handlers and ``else`` are protected too (their own region):
    a ``return``/``break``/``continue`` or an exception leaving them runs after the
    ``finally``, as in Python (it was skipped, a silently wrong value before session 33).
    """
    region = _Region(s, s.body, ctx)
    out = region.protected()
    after = [A.assign(region.handled, A.attr(region.catcher, "ok"), at=s)]
    after += region.leaving_first(_dispatch(s, region.catcher, region.handled, ctx, in_try))
    if s.orelse:
        after.append(A.located(gast.If(test=A.attr(region.catcher, "ok"),
                                       body=_block(s.orelse, ctx, in_try), orelse=[]),
                               s.orelse[0]))
    if not s.finalbody or not (s.handlers or s.orelse):
        # (handlers and ``else`` may leave through any statement: numpy under np.errstate,
        # int("z"), a division; their region was skipped when they held no raise and no
        # call of the user's, and so was the finally an exception of theirs has to run: a
        # silently wrong gradient when an outer try caught it)
        return out + after + _block(s.finalbody, ctx, in_try) + region.finish()
    handling = _Region(s, after, ctx)  # lowered already: only its exits are new
    out += handling.protected()
    out.append(A.assign(handling.handled, A.attr(handling.catcher, "ok"), at=s))
    out += handling.leaving_first([])
    return out + _block(s.finalbody, ctx, in_try) + handling.finish() + region.finish()


def _dispatch(s: gast.Try, catcher: str, handled: str, ctx: Context, in_try: bool) -> list:
    """The handlers of ``s`` as plain code deciding on what ``catcher`` recorded."""
    dispatch = []
    for h in reversed(s.handlers):
        body = [A.assign(handled, A.const(True), at=h)]
        if h.name is not None:
            ctx.local_names.add(h.name.id)
            body.append(A.assign(h.name.id, A.attr(catcher, "error"), at=h))
        body += _with_reraise(_block(h.body, ctx, in_try), catcher)
        test = A.call(A.attr(ctx.rt, "caught"), A.load(catcher),
                      h.type or A.load("BaseException"))
        dispatch = [A.located(gast.If(test=test, body=body, orelse=dispatch), h)]
    if dispatch:
        dispatch = [A.located(gast.If(test=_failed(catcher), body=dispatch, orelse=[]), s)]
    return dispatch


def _with_reraise(stmts: list, catcher: str) -> list:
    """A bare ``raise`` left in lowered handlers (a nested try's were taken by its own)
    raises what ``catcher`` recorded: no exception is active there any more."""
    class Reraise(gast.NodeTransformer):
        def visit_FunctionDef(self, node):
            return node

        visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Raise(self, node):
            if node.exc is None:
                node.exc = A.attr(catcher, "error")
            return node

    return [Reraise().visit(st) for st in stmts]


def _lower_with(s: gast.With, ctx: Context) -> list:
    """``with cm as v: body`` in a try body: ``_cm = cm``, ``v = _rt.enter_guarded(_cm)``,
    the body protected like a try body, then ``_rt.exit_guarded(_cm, _catchN)`` hands the
    manager the exception the body raised (it may suppress it, as in Python)."""
    item, rest = s.items[0], s.items[1:]
    body = [A.located(gast.With(items=rest, body=s.body, type_comment=None), s)] \
        if rest else s.body
    manager = ctx.namer.fresh("_cm")
    ctx.local_names.add(manager)
    enter = A.call(A.attr(ctx.rt, "enter_guarded"), A.load(manager))
    out = [A.assign(manager, item.context_expr, at=s),
           A.located(gast.Assign(targets=[item.optional_vars], value=enter, type_comment=None),
                     s) if item.optional_vars is not None else A.expr_stmt(enter, at=s)]
    region = _Region(s, body, ctx)
    out += region.protected()
    out.append(A.assign(region.handled, A.call(A.attr(ctx.rt, "exit_guarded"),
                                               A.load(manager), A.load(region.catcher)), at=s))
    return out + region.leaving_first([]) + region.finish()


def _as_list(x):
    return x if isinstance(x, list) else [x]


class _Leaving(gast.NodeTransformer):
    """``return v`` / ``break`` / ``continue`` leaving a try body become ``_tryval = v`` and a
    raise of ``runtime.TryExit`` (caught like a handled exception; the statement itself runs
    after the ``finally``)."""

    def __init__(self, rt: str, value: str):
        self.rt, self.value, self.used, self.depth = rt, value, set(), 0  # value names the try

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_FunctionDef

    def loop(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        return node

    visit_For = visit_While = loop

    def leave(self, node, kind: str, before=()):
        self.used.add(kind)
        signal = A.call(A.attr(self.rt, "TryExit"), A.const(kind), A.const(self.value))
        return list(before) + [A.located(gast.Raise(exc=signal, cause=None), node)]

    def visit_Return(self, node):
        value = node.value if node.value is not None else A.const(None)
        return self.leave(node, "return", [A.assign(self.value, value, at=node)])

    def visit_Break(self, node):
        return node if self.depth else self.leave(node, "break")

    def visit_Continue(self, node):
        return node if self.depth else self.leave(node, "continue")


def _failed(catcher: str):
    return gast.UnaryOp(op=gast.Not(), operand=A.attr(catcher, "ok"))


def reopen_protected(s, ctx: Context):
    """In a generated sweep differentiated again: ``with _rt.managed(_catchN, where):`` around
    a protected statement is a try body again (its statements are protected in turn)."""
    if not (ctx.own_code and isinstance(s, gast.With) and len(s.items) == 1):
        return None
    expr = s.items[0].context_expr
    if isinstance(expr, gast.Call) and known_value(expr.func, ctx) is runtime.managed \
            and expr.args and isinstance(expr.args[0], gast.Name) \
            and expr.args[0].id.startswith("_catch"):
        catcher = expr.args[0].id
        return ([A.expr_stmt(A.call(A.attr(ctx.rt, "try_begin"), A.load(catcher)), at=s)]
                + _block(s.body, ctx)
                + [A.expr_stmt(A.call(A.attr(ctx.rt, "try_end"), A.load(catcher)), at=s)])
    return None


# -- after ANF: each statement of a marked body protected on its own ------------------------
def protect_try_bodies(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    tree.body = _Protector(ctx).block(tree.body)
    return tree


def _marker(s, ctx: Context, name: str):
    value = s.value if isinstance(s, gast.Expr) else None
    return value if A.called_attr(value, ctx.rt) == name else None


class _Protector:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def block(self, stmts: list) -> list:
        out, i = [], 0
        while i < len(stmts):
            s = stmts[i]
            begin = _marker(s, self.ctx, "try_begin")
            if begin is None:
                for field in ("body", "orelse"):
                    if isinstance(getattr(s, field, None), list):
                        setattr(s, field, self.block(getattr(s, field)))
                out.append(s)
                i += 1
                continue
            catcher, j = self.region_end(stmts, i)
            out += self.protect(stmts[i + 1:j], catcher)
            i = j + 1
        return out

    def region_end(self, stmts: list, i: int) -> tuple[str, int]:
        """The catcher of the region ``stmts[i]`` opens, and the index of its end marker
        (a region nested in it has its own catcher)."""
        catcher = _marker(stmts[i], self.ctx, "try_begin").args[0].id
        j = i + 1
        while True:
            end = _marker(stmts[j], self.ctx, "try_end")
            if end is not None and end.args[0].id == catcher:
                return catcher, j
            j += 1

    def protect(self, stmts: list, catcher: str) -> list:
        out, i = [], 0
        while i < len(stmts):
            s = stmts[i]
            i += 1
            if _marker(s, self.ctx, "try_begin") is not None:
                # a try (or with) nested in this body: its own catcher records every
                # exception of its statements, so none leaves them; they run while this
                # body's catcher holds, like any other statement of it
                inner, j = self.region_end(stmts, i - 1)
                out.append(self.guard(catcher, self.protect(stmts[i:j], inner) or [gast.Pass()],
                                      s))
                i = j + 1
            elif isinstance(s, gast.If):
                s.body = self.protect(s.body, catcher) or [gast.Pass()]
                s.orelse = self.protect(s.orelse, catcher)
                out.append(self.guard(catcher, [s], s))
            elif isinstance(s, (gast.For, gast.While)):
                last = s.body[-1] if s.body else None
                if isinstance(last, gast.If) and len(last.body) == 1 and not last.orelse \
                        and isinstance(last.body[0], gast.Break):  # exits' final check
                    s.body = self.protect(s.body[:-1], catcher) + [last]
                    last.test = gast.BoolOp(op=gast.Or(), values=[last.test,
                                                                  _failed(catcher)])
                else:
                    s.body = self.protect(s.body, catcher)
                    s.body.append(A.located(gast.If(test=_failed(catcher),
                                                    body=[gast.Break()], orelse=[]), s))
                out.append(self.guard(catcher, [s], s))
            else:
                out += self.one(s, catcher)
        return out

    def one(self, s, catcher: str) -> list:
        """``s`` run inside the catcher, only while nothing was raised; an assignment to a
        name goes through a temporary committed only when its value did not raise."""
        ctx, rt = self.ctx, self.ctx.rt
        where = A.const(str(ctx.user_location(s)))
        commit = []
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name):
            tmp = ctx.namer.fresh()
            ctx.local_names.add(tmp)
            if s.targets[0].id in ctx.varied:
                ctx.varied.add(tmp)
            commit = [A.assign(s.targets[0].id, A.load(tmp), at=s)]
            s = A.assign(tmp, s.value, at=s)
        attempt = [
            A.expr_stmt(A.call(A.attr(rt, "enter_context"), A.load(catcher), where), at=s),
            s,
            A.expr_stmt(A.call(A.attr(rt, "exit_context"), A.load(catcher)), at=s)]
        out = [self.guard(catcher, attempt, s)]
        if commit:
            out.append(self.guard(catcher, commit, s))
        return out

    @staticmethod
    def guard(catcher: str, body: list, at):
        return A.located(gast.If(test=A.attr(catcher, "ok"), body=body, orelse=[]), at)
