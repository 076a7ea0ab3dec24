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

__all__ = ["adjoint_names", "callee_tapes", "remember_adjoint_names", "remember_sweeps",
           "tangent_tapes"]

import ast
import linecache
import re
import weakref

from ..codegen import COMMENT_PREFIX
from ..transforms import astutil as A
from .errors import through_generated
from .sweeps import (TAPE, JitRewriteError, check_mirrored, drop_stand_ins, fresh_name,
                     tape_to_stacks)
from .sweeps import pop_only as stacks_for  # (the pushes and pops, onto given stacks)
from .sweeps import type_zero_adjoints

# fused gradient function -> {adjoint name: primal name} of the gradient it fuses (the
# first-order namer's table, which the forward-mode build of it no longer has)
_ADJOINT_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def remember_adjoint_names(fused, adjoint_of: dict[str, str]) -> None:
    _ADJOINT_NAMES[fused] = dict(adjoint_of)


def adjoint_names(fused) -> dict[str, str]:
    return _ADJOINT_NAMES.get(fused, {})


# a callee's sweep function (interpreted) -> the adjoint whose sweeps it is
_SWEEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def remember_sweeps(helpers) -> None:
    """The callee adjoints among ``helpers`` (what a fused gradient's factory binds), and
    their callees', by their sweep functions: their jvps are compiled as functions of the
    sweeps (call sites), and the backward sweep's jvp needs its adjoint's names."""
    todo, seen = list(helpers), set()
    while todo:
        obj = todo.pop()
        if getattr(obj, "kind", None) != "adjoint" or not hasattr(obj, "functions_for") \
                or id(obj) in seen:
            continue
        seen.add(id(obj))
        for sweep in obj.functions_for():
            _SWEEPS[sweep] = obj
        todo.extend(getattr(obj, "_helpers", ()))


def _method(stmt, owner: str, method: str):
    """The call ``owner.method(...)`` that ``stmt`` is (an expression statement, or the value
    of an assignment), else None."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    return value if A.called_attr(value, owner) == method else None


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


# -- a callee's sweeps: the tape handed from its forward sweep to its backward sweep ------

def _sweep_layout(sweep) -> tuple[str, ...]:
    """The variables a callee's interpreted forward sweep pushes on its tape, sorted: the
    order of their stacks in the saved values, in the jvps of both sweeps alike. ``sweep``
    is either sweep; both are read from the one generated module that made them, and the
    backward sweep's pops are checked to mirror the pushes (else refused), so the two jvps,
    compiled apart, agree on which stack is which."""
    lines = linecache.getlines(sweep.__code__.co_filename)
    if not lines:
        raise JitRewriteError("a callee's sweeps whose generated text is gone (a srcgrad bug)")
    # (the text as shown: the two functions, fwd then bwd)
    # (without stand-ins, as the jvps were rewritten: ``_tape.push(_rt.shape_like(x))``)
    module = drop_stand_ins(ast.parse("".join(lines)))
    defs = [s for s in module.body if isinstance(s, ast.FunctionDef)]
    if len(defs) != 2 or not (defs[0].name.endswith("_fwd") and defs[1].name.endswith("_bwd")):
        raise JitRewriteError("a callee's sweeps of unexpected shape (a srcgrad bug)")
    fwd, bwd = defs
    check_mirrored(fwd.body, bwd.body)
    pushed = {call.args[0].id for node in ast.walk(fwd) if (call := _method(
        node, TAPE, "push")) is not None and call.args and isinstance(call.args[0], ast.Name)}
    return tuple(sorted(pushed))


class _TapeInSaved(ast.NodeTransformer):
    """``(_tape, v, ...)`` -> ``((_stack_a, _stack_b), v, ...)`` in the saved values a forward
    sweep returns and its backward sweep unpacks; the tangent tape's likewise."""

    def __init__(self, stacks: dict[str, tuple]):
        self.stacks = stacks  # tape name -> its stacks' names, in the layout's order

    def unpacked(self, name: ast.Name, ctx) -> ast.Tuple:
        return ast.copy_location(ast.Tuple(
            elts=[ast.Name(id=s, ctx=ctx()) for s in self.stacks[name.id]], ctx=ctx()), name)

    def visit_Assign(self, node):  # (``_tape = _saved[0]`` in a backward sweep's jvp)
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in self.stacks:
            node.targets = [self.unpacked(node.targets[0], ast.Store)]
        return node

    def visit_Tuple(self, node):
        self.generic_visit(node)
        node.elts = [self.unpacked(e, type(node.ctx)) if isinstance(e, ast.Name)
                     and e.id in self.stacks else e for e in node.elts]
        return node


def callee_tapes(module: ast.Module, sweep, tangents: dict[str, str],
                 names_of) -> ast.Module:
    """``module`` (the forward-mode factory of one of a callee's sweeps, ``sweep``) with its
    tape and tangent tape as stacks (one per taped variable, as ``tangent_tapes`` makes them
    in one function), handed between the two sweeps' jvps inside the saved values and their
    tangents as tuples of stacks, in ``_sweep_layout``'s order; lazy zero tangents typed from
    their primal, and in the backward sweep's jvp its lazy zero adjoints (``names_of(adj)``:
    the adjoint's ``{adjoint name: primal name}``). A tape holding no values with tangents
    has no tangent tape from forward mode: the forward sweep's jvp then pushes zeros
    (``_zeros_beside_pushes``), and a backward sweep's jvp that pops no tangent leaves the
    one handed to it unread."""
    func = next(s for s in module.body[0].body if isinstance(s, ast.FunctionDef))
    owner = _SWEEPS.get(sweep)
    if owner is not None and sweep is owner.functions_for()[1]:
        func.body = type_zero_adjoints(func.body, _assigned(func), names_of(owner))
    d_tape = tangents.get(TAPE)
    if not any(isinstance(n, ast.Name) and n.id == TAPE for n in ast.walk(func)):
        return _typed_zeros(module, func, tangents)
    layout = _sweep_layout(sweep)
    taken = _names(module)
    made = any(_method(s, "_rt", "Tape") is not None for s in func.body)
    if d_tape is None and made:  # (nothing pushed has a tangent: zeros handed over)
        d_tape = _zeros_beside_pushes(func, fresh_name("d_tape", taken))
    if made:
        _typed_saved_tangent(func, d_tape, tangents)
    stacks = {}
    for var in layout:
        stacks[var] = fresh_name(f"_stack{var}" if var.startswith("_") else f"_stack_{var}",
                                 taken)
    in_saved = {TAPE: tuple(stacks[v] for v in layout)}
    tapes = _TangentTape(d_tape or "", taken)  # (no tangent tape: no stacks of it)
    if d_tape is not None:
        for var in layout:
            tapes.stack(var)
        func.body = tapes.block(func.body)
        if set(tapes.stacks) != set(layout):
            raise JitRewriteError("a callee's tangent tape used for other variables than its "
                                  "tape (a srcgrad bug)")
        in_saved[d_tape] = tuple(tapes.stacks[v] for v in layout)
    # (else a backward sweep's jvp that reads no tangent of what it pops: forward mode made
    # it no tangent tape, and the one in the saved values' tangent stays unread)
    body = [_TapeInSaved(in_saved).visit(s) for s in func.body]
    if any(isinstance(n, ast.Name) and n.id == d_tape for s in body for n in ast.walk(s)):
        raise JitRewriteError("a use of the tangent tape other than push, pop and the saved "
                              "values")
    body = [s for s in stacks_for(body, stacks, taken) if s is not None]
    body = _present_saved(body, {*stacks.values(), *tapes.stacks.values()})
    if made:  # (the forward sweep's jvp: the stacks start empty there)
        body = [ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                           value=ast.List(elts=[], ctx=ast.Load()))
                for var in layout for name in (stacks[var], tapes.stacks[var])] + body
    func.body = body
    return _typed_zeros(module, func, tangents)


def _zeros_beside_pushes(func, d_tape: str) -> str:
    """``d_tape``, a tangent tape of zeros in a forward sweep's jvp where forward mode made
    none (every value the sweep pushes is a constant of the differentiated inputs: a loop
    count, a condition, a value of data only): ``d_tape.push(0.0)`` after each push on the
    tape (the lazy zero, typed from the value pushed as forward mode's own are), handed over
    in the saved values' tangent (``_typed_saved_tangent``). The backward sweep's jvp,
    compiled apart, may read tangents of what it pops (it does not know they are zero):
    this hands it stacks of the layout it expects. (Zeros are allocated for array pushes
    even where that jvp reads none.)"""
    def beside(stmts: list) -> list:
        out = []
        for stmt in stmts:
            if isinstance(stmt, (ast.For, ast.While, ast.If)):
                stmt.body, stmt.orelse = beside(stmt.body), beside(stmt.orelse)
            out.append(stmt)
            if _method(stmt, TAPE, "push") is not None:
                push = ast.Call(func=ast.Attribute(value=ast.Name(id=d_tape, ctx=ast.Load()),
                                                   attr="push", ctx=ast.Load()),
                                args=[ast.Constant(value=0.0)], keywords=[])
                out.append(ast.copy_location(ast.Expr(value=push), stmt))
        return out

    func.body = beside(func.body)
    return d_tape


def _typed_saved_tangent(func, d_tape: str, tangents: dict[str, str]) -> None:
    """In a forward sweep's jvp, the lazy zeros (the number 0.0) in the tangent of the saved
    values (the tuple holding the tape) -> the tangent tape at the tape's place, and
    ``_rt.zero_tangent(x)`` at the place of a saved ``x``: the backward sweep's jvp, compiled
    apart, binds ``dw = d_saved[5]`` and later ``dw = d_tape.pop()`` (a value of data only,
    saved and taped), and numba needs one type for both."""
    saved = {stmt.targets[0].id: stmt.value.elts for stmt in ast.walk(func)
             if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
             and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Tuple)
             and any(isinstance(e, ast.Name) and e.id == TAPE for e in stmt.value.elts)}
    primals = {tangents[name]: elts for name, elts in saved.items() if name in tangents}
    for stmt in ast.walk(func):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in primals
                and isinstance(stmt.value, ast.Tuple)):
            continue
        elts = stmt.value.elts
        for k, primal in enumerate(primals[stmt.targets[0].id]):
            if not (isinstance(elts[k], ast.Constant) and elts[k].value == 0
                    and isinstance(primal, ast.Name)):
                continue
            zero = ast.Name(id=d_tape, ctx=ast.Load()) if primal.id == TAPE else _rt_call(
                "zero_tangent", ast.Name(id=primal.id, ctx=ast.Load()))
            elts[k] = ast.copy_location(zero, elts[k])


def _present_saved(body: list, stacks) -> list:
    """``_t2 = _saved`` -> ``_t2 = _rt.present(_saved)`` where a backward sweep's jvp takes
    its stacks out of ``_t2`` (``(_stack_s, ...) = _t2[0]``): see jit/runtime.py ``present``."""
    stacks = set(stacks)
    holders = {stmt.value.value.id for stmt in body if isinstance(stmt, ast.Assign)
               and isinstance(stmt.targets[0], ast.Tuple) and stmt.targets[0].elts
               and all(isinstance(e, ast.Name) and e.id in stacks
                       for e in stmt.targets[0].elts)
               and isinstance(stmt.value, ast.Subscript)
               and isinstance(stmt.value.value, ast.Name)}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in holders \
                and isinstance(stmt.value, ast.Name):
            stmt.value = ast.copy_location(_rt_call("present", stmt.value), stmt.value)
    return body


def _typed_zeros(module, func, tangents: dict[str, str]) -> ast.Module:
    primal_of = {d: x for x, d in tangents.items()}
    zeros = _ZeroTangents(primal_of, _assigned(func))
    func.body = [zeros.visit(s) for s in func.body]
    return ast.fix_missing_locations(module)


def _names(tree) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
