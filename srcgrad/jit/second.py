"""Guarantees afterwards: the forward mode (jvp) of a fused gradient, which is the forward
sweep, the seed and the backward sweep in one function keeping its tape
(``sweeps.fuse(keep_tape=True)``), rewritten so numba compiles it: the tape and its tangent
tape become one typed stack per taped variable and one per its tangent, lazy zero adjoints
and tangents are typed from their primal, and the seed is the compiled one.

Why the tangent stacks are sound: forward mode pushes on the tangent tape right after each
push on the tape (the tangent of the value pushed, or zero) and pops from it right after
each pop (transforms/forward.py), so the tangent stack of ``x`` is pushed and popped exactly
when ``x``'s stack is. ``tangent_tapes`` checks that pairing statement by statement and
refuses anything else; the pushes and pops of the tape itself were checked mirrored
(``sweeps.check_mirrored``) when the gradient was fused.
"""
from __future__ import annotations

__all__ = ["adjoint_names", "remember_adjoint_names", "tangent_tapes"]

import ast
import re
import weakref

from ..codegen import COMMENT_PREFIX
from .errors import through_generated
from .sweeps import TAPE, JitRewriteError, fresh_name, tape_to_stacks, type_zero_adjoints

# fused gradient function -> {adjoint name: primal name} of the gradient it fuses (the
# first-order namer's table, which the forward-mode build of it no longer has)
_ADJOINT_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def remember_adjoint_names(fused, adjoint_of: dict[str, str]) -> None:
    _ADJOINT_NAMES[fused] = dict(adjoint_of)


def adjoint_names(fused) -> dict[str, str]:
    return _ADJOINT_NAMES.get(fused, {})


def _method(stmt, owner: str, method: str):
    """The call ``owner.method(...)`` that ``stmt`` is (an expression statement, or the value
    of an assignment), else None."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and isinstance(value.func.value, ast.Name) and value.func.value.id == owner \
            and value.func.attr == method:
        return value
    return None


def _rt_call(attr: str, *args) -> ast.Call:
    return ast.Call(func=ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()), attr=attr,
                                       ctx=ast.Load()), args=list(args), keywords=[])


class _TangentTape:
    """Rewrites the tangent tape ``d_tape`` into stacks paired with ``_tape``'s variables."""

    def __init__(self, d_tape: str, taken: set[str]):
        self.d_tape, self.taken = d_tape, taken
        self.stacks: dict[str, str] = {}

    def stack(self, var: str) -> str:
        if var not in self.stacks:
            self.stacks[var] = fresh_name(f"_dstack{var}" if var.startswith("_")
                                          else f"_dstack_{var}", self.taken)
        return self.stacks[var]

    def dropped(self, stmt) -> bool:
        """``d_tape = _rt.Tape()`` or ``d_tape = _rt.tangent_tape(d_tape)``."""
        return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == self.d_tape \
            and (_method(stmt, "_rt", "Tape") is not None
                 or _method(stmt, "_rt", "tangent_tape") is not None)

    def block(self, stmts: list) -> list:
        out, pending = [], None  # pending: (op, variable) of the last tape operation
        for stmt in stmts:
            if isinstance(stmt, (ast.For, ast.While, ast.If)):
                stmt.body = self.block(stmt.body) or [ast.Pass()]
                stmt.orelse = self.block(stmt.orelse)
            if self.dropped(stmt):
                continue
            push, pop = _method(stmt, self.d_tape, "push"), _method(stmt, self.d_tape, "pop")
            if push is not None or pop is not None:
                out.append(self.paired(stmt, push, pop, pending))
                pending = None
                continue
            pending = self.tape_op(stmt)
            out.append(stmt)
        if pending is not None:
            raise JitRewriteError("a tape operation without its tangent's (a srcgrad bug)")
        return out

    @staticmethod
    def tape_op(stmt):
        if _method(stmt, TAPE, "push") is not None:
            arg = stmt.value.args[0]
            return ("push", arg.id) if isinstance(arg, ast.Name) else ("?", None)
        if isinstance(stmt, ast.Assign) and _method(stmt, TAPE, "pop") is not None:
            target = stmt.targets[0]
            return ("pop", target.id) if isinstance(target, ast.Name) else ("?", None)
        return None

    def paired(self, stmt, push, pop, pending):
        op = "push" if push is not None else "pop"
        if pending is None or pending[0] != op:
            raise JitRewriteError("a tangent tape operation not paired with the tape's",
                                  stmt)
        var = pending[1]
        stack = ast.Name(id=self.stack(var), ctx=ast.Load())
        if op == "push":
            item = push.args[0]
            if isinstance(item, ast.Constant) and item.value == 0:  # (the lazy zero)
                item = _rt_call("zero_tangent", ast.Name(id=var, ctx=ast.Load()))
            call = ast.Call(func=ast.Attribute(value=stack, attr="append", ctx=ast.Load()),
                            args=[item], keywords=[])
            return ast.copy_location(ast.Expr(value=call), stmt)
        call = ast.Call(func=ast.Attribute(value=stack, attr="pop", ctx=ast.Load()),
                        args=[], keywords=[])
        stmt.value = call
        return stmt


class _Seed(ast.NodeTransformer):
    """``_rt.grad_seed(v)`` -> ``_rt.seed(v)`` (the compiled seed)."""

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "_rt" \
                and node.attr == "grad_seed":
            node.attr = "seed"
        return node


class _ZeroTangents(ast.NodeTransformer):
    """``dx = 0.0`` (a lazy zero tangent) -> ``dx = _rt.zero_tangent(x)``: numba needs one type
    per variable. Where a rule reads a tangent that may be the lazy zero, forward mode
    densifies it first, so a dense zero computes the same."""

    def __init__(self, primal_of: dict[str, str], assigned: set[str]):
        self.primal_of, self.assigned = primal_of, assigned

    def visit_Assign(self, node):
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Constant) \
                and type(node.value.value) is float and node.value.value == 0.0:
            primal = self.primal_of.get(target.id)
            if primal in self.assigned:
                value = _rt_call("zero_tangent", ast.Name(id=primal, ctx=ast.Load()))
                return ast.copy_location(ast.Assign(targets=node.targets, value=value), node)
        return self.generic_visit(node)


_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod", "std", "var",
                         "any", "all"})


class _DefaultKeepdims(ast.NodeTransformer):
    """``np.sum(d, keepdims=False)`` (forward mode's tangent of a whole-array reduction) ->
    ``np.sum(d)``: the default, which numba has without the keyword. Only numpy's reductions
    (``modules``: the names numpy is bound to; any name when None), whose default it is: a
    function of the user's may default to ``keepdims=True``."""

    def __init__(self, modules: frozenset | None = None):
        self.modules = modules

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _REDUCTIONS \
                and isinstance(func.value, ast.Name) \
                and (self.modules is None or func.value.id in self.modules) \
                and len(node.args) == 1 and any(
                k.arg == "keepdims" for k in node.keywords) and all(
                k.arg == "keepdims" and isinstance(k.value, ast.Constant)
                and k.value.value is False for k in node.keywords):
            node.keywords = []
        return node


def default_keepdims(tree: ast.Module, modules: frozenset) -> ast.Module:
    """``tree`` with numpy reductions' ``keepdims=False`` dropped (_DefaultKeepdims): forward
    mode writes it in the tangent of a whole-array reduction."""
    return _DefaultKeepdims(frozenset(modules) | {"np", "numpy"}).visit(tree)


_GENERATED_LINE = re.compile(r"(<srcgrad: [^>]*>):(\d+)")


class _UserComments(ast.NodeTransformer):
    """``# <srcgrad: f fused gradient #2>:5  _tape.push(x)`` -> ``# f.py:14  _tape.push(x)``:
    forward mode's comments point at lines of the fused gradient it differentiated; each is
    shown at the user's line that fused line came from."""

    def visit_Expr(self, node):
        text = node.value.value if isinstance(node.value, ast.Constant) else None
        if isinstance(text, str) and text.startswith(COMMENT_PREFIX):
            found = _GENERATED_LINE.search(text)
            if found is not None:
                filename, line = found.group(1), int(found.group(2))
                where = "{}:{}".format(*through_generated(filename, line))
                node.value = ast.Constant(value=text[:found.start()] + where
                                          + text[found.end():])
        return node


def _assigned(tree) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)} | {a.arg for a in ast.walk(tree)
                                                  if isinstance(a, ast.arg)}


def tangent_tapes(module: ast.Module, adjoint_of: dict[str, str],
                  tangents: dict[str, str]) -> ast.Module:
    """``module`` (the forward-mode factory of a fused gradient) in the compiled form (see
    the module docstring); ``adjoint_of`` maps the gradient's adjoint names to their
    primals, ``tangents`` forward mode's primal names to their tangents."""
    make = module.body[0]
    func = next(s for s in make.body if isinstance(s, ast.FunctionDef))
    taken = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(module) if isinstance(a, ast.arg)}
    d_tape = tangents.get(TAPE)
    body = func.body
    if d_tape is not None:
        rewriter = _TangentTape(d_tape, taken)
        body = rewriter.block(body)
        created = [ast.Assign(targets=[ast.Name(id=stack, ctx=ast.Store())],
                              value=ast.List(elts=[], ctx=ast.Load()))
                   for stack in sorted(rewriter.stacks.values())]
        body = created + body
        if any(isinstance(n, ast.Name) and n.id == d_tape
               for s in body for n in ast.walk(s)):
            raise JitRewriteError("a use of the tangent tape other than push and pop")
    body, _ = tape_to_stacks(body, taken)
    assigned = _assigned(func)
    seeded = next((k for k, s in enumerate(body) if any(
        isinstance(n, ast.Attribute) and n.attr == "grad_seed" for n in ast.walk(s))), None)
    if seeded is None:
        raise JitRewriteError("a fused gradient without its seed (a srcgrad bug)")
    # (the backward sweep's lazy zero adjoints: a user's own 'bx = 0.0' before stays)
    body = body[:seeded + 1] + type_zero_adjoints(body[seeded + 1:], assigned, adjoint_of)
    primal_of = {d: x for x, d in tangents.items()}
    zeros = _ZeroTangents(primal_of, assigned)
    func.body = [_UserComments().visit(_DefaultKeepdims().visit(_Seed().visit(zeros.visit(s))))
                 for s in body]
    return ast.fix_missing_locations(module)
