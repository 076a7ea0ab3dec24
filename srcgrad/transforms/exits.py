"""Guarantees afterwards: the function body ends with its only ``return``, and loops contain
no ``continue`` and no ``break`` except a final ``if flag: break``.

Early exits become flags (``_ret``, ``_brk1``, ``_cont1``) that guard the statements after
them; the reverse pass then only sees structured if/for/while, whose decisions it records.
"""
from __future__ import annotations

import gast

from . import astutil as A
from .context import Context
from .desugar import is_context_marker




def lower_exits(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    returns = [n for n in A.own_nodes(tree) if isinstance(n, gast.Return)]
    simple_return = (len(returns) == 1 and tree.body and tree.body[-1] is returns[0])
    lowering = _Lowering(ctx, returns_needed=not simple_return)
    body = lowering.block(tree.body, loop=None)
    if simple_return:
        tree.body = body
        if tree.body[-1].value is None:
            tree.body[-1].value = A.const(None)
        return tree
    ret_value = lowering.ret_value
    start = [A.assign(ret_value, A.const(None), at=tree)]
    if lowering.ret_flag_used:
        start.append(A.assign(lowering.ret_flag, A.const(False), at=tree))
    end = A.located(gast.Return(value=A.load(ret_value)), tree.body[-1] if tree.body else tree)
    tree.body = start + body + [end]
    return tree


class _Loop:
    def __init__(self, ctx: Context):
        self.brk = ctx.namer.fresh("_brk")
        self.cont = ctx.namer.fresh("_cont")
        self.brk_used = False
        self.cont_used = False


class _Lowering:
    def __init__(self, ctx: Context, returns_needed: bool):
        self.ctx = ctx
        self.ret_flag = ctx.namer.fresh("_ret") if returns_needed else None
        self.ret_value = ctx.namer.fresh("_retval") if returns_needed else None
        self.ret_flag_used = False

    def flags_set_by(self, s, loop) -> list[str]:
        """Flags that executing ``s`` may set and that the code after it must check."""
        flags = []
        if isinstance(s, (gast.For, gast.While)):
            s_inner = []  # a loop's own break/continue do not escape it
        else:
            s_inner = _walk_same_loop(s)
        for n in s_inner:
            if isinstance(n, gast.Return) and self.ret_flag:
                flags.append(self.ret_flag)
            elif isinstance(n, gast.Break) and loop is not None:
                flags.append(loop.brk)
            elif isinstance(n, gast.Continue) and loop is not None:
                flags.append(loop.cont)
        # returns inside nested loops also escape
        for n in A.own_nodes(s):
            if isinstance(n, gast.Return) and self.ret_flag and self.ret_flag not in flags:
                flags.append(self.ret_flag)
        return list(dict.fromkeys(flags))

    def block(self, stmts, loop) -> list:
        out = []
        for i, s in enumerate(stmts):
            flags = self.flags_set_by(s, loop)
            out.extend(self.stmt(s, loop))
            rest = stmts[i + 1:]
            if flags and rest:
                out += self.guarded(rest, flags, loop)
                break
        return out

    def guarded(self, rest, flags, loop) -> list:
        """``rest`` run only if none of ``flags`` is set, except the exits of the 'with'
        blocks the flag-setting statement is in: those run whatever it did."""
        out = []
        while rest:
            ends = self.outer_exits(rest)
            j = ends[0] if ends else len(rest)
            guarded = self.block(rest[:j], loop)
            if guarded:
                out.append(A.located(gast.If(test=_none_of(flags), body=guarded, orelse=[]),
                                     rest[0]))
            if not ends:
                break
            out.append(rest[j])
            flags = list(dict.fromkeys(flags + [f for r in rest[:j]
                                                for f in self.flags_set_by(r, loop)]))
            rest = rest[j + 1:]
        return out

    def outer_exits(self, rest) -> list[int]:
        """Where in ``rest`` a 'with' block entered before it exits (a block entered and
        exited within ``rest`` is skipped with the rest: its exit is guarded too)."""
        entered, ends = set(), []
        for j, r in enumerate(rest):
            enter = is_context_marker(r, self.ctx.rt, "enter")
            leave = is_context_marker(r, self.ctx.rt, "exit")
            if enter is not None:
                entered.add(_manager(enter))
            elif leave is not None and _manager(leave) not in entered:
                ends.append(j)
        return ends

    def stmt(self, s, loop) -> list:
        if isinstance(s, gast.Return):
            if self.ret_flag is None:
                return [s]
            self.ret_flag_used = True
            value = s.value if s.value is not None else A.const(None)
            return [A.assign(self.ret_value, value, at=s),
                    A.assign(self.ret_flag, A.const(True), at=s)]
        if isinstance(s, gast.Break):
            loop.brk_used = True
            return [A.assign(loop.brk, A.const(True), at=s)]
        if isinstance(s, gast.Continue):
            loop.cont_used = True
            return [A.assign(loop.cont, A.const(True), at=s)]
        if isinstance(s, gast.If):
            s.body = self.block(s.body, loop) or [gast.Pass()]
            s.orelse = self.block(s.orelse, loop)
            return [s]
        if isinstance(s, (gast.For, gast.While)):
            return self.loop(s)
        return [s]

    def loop(self, s) -> list:
        info = _Loop(self.ctx)
        returns_inside = any(isinstance(n, gast.Return) for n in A.own_nodes(s))
        body = self.block(s.body, info)
        exits = []
        if info.brk_used:
            exits.append(info.brk)
        if self.ret_flag and returns_inside:
            exits.append(self.ret_flag)
        if info.cont_used:
            body = [A.assign(info.cont, A.const(False), at=s)] + body
        if exits:
            body.append(A.located(gast.If(test=_any_of(exits), body=[gast.Break()],
                                          orelse=[]), s))
        orelse = self.block(s.orelse, None) if s.orelse else []
        s.body, s.orelse = body, []
        out = []
        if info.brk_used:
            out.append(A.assign(info.brk, A.const(False), at=s))
        out.append(s)
        if orelse:
            if exits:
                out.append(A.located(gast.If(test=_none_of(exits), body=orelse, orelse=[]), s))
            else:
                out.extend(orelse)
        return out


def _manager(marker) -> str | None:
    """The name of the manager an enter_context/exit_context call reads."""
    arg = marker.args[0] if marker.args else None
    return arg.id if isinstance(arg, gast.Name) else None


def _walk_same_loop(node):
    """Nodes of ``node`` not inside a nested loop (whose break/continue are its own)."""
    yield node
    for child in gast.iter_child_nodes(node):
        if isinstance(child, (gast.For, gast.While, gast.FunctionDef, gast.Lambda)):
            continue
        yield from _walk_same_loop(child)


def _any_of(flags):
    names = [A.load(f) for f in flags]
    return names[0] if len(names) == 1 else gast.BoolOp(op=gast.Or(), values=names)


def _none_of(flags):
    return gast.UnaryOp(op=gast.Not(), operand=_any_of(flags))
