"""Guarantees afterwards: the generated sweeps of an adjoint, rewritten so numba compiles them
in nopython mode: no ``_rt.Tape`` object, one typed stack per taped variable, adjoint
accumulators typed from their primal, and (for the entry function) the forward and backward
sweeps fused into one function ``<name>_grad(*params) -> (value, gradients)``.

The input is the ``_make(_rt, helpers...)`` factory that transforms/reverse.py emits, as an
``ast`` tree. Why per-variable stacks are sound: the reverse pass pushes a variable right
before the forward sweep overwrites it and pops it back into the same variable at the
mirrored place of the backward sweep, so the pops of one name see that name's pushes in
reverse order, exactly as on one shared tape. ``check_tape_pairs`` refuses any other use
of the tape rather than assume it.
"""
from __future__ import annotations

__all__ = ["JitRewriteError", "Sweeps", "forward_only", "fuse", "matmul_operators",
           "integer_powers", "reductions_along_an_axis", "shared_locals_checks", "simd_math", "split", "tape_to_stacks"]

import ast
import copy
from typing import NamedTuple

from ..codegen import COMMENT_PREFIX
from ..transforms import astutil as A

TAPE = "_tape"


class JitRewriteError(Exception):
    """A generated construct with no compiled form: ``what`` names it, ``node`` locates it."""

    def __init__(self, what: str, node: ast.AST | None = None):
        super().__init__(what)
        self.what = what
        self.node = node


class Sweeps(NamedTuple):
    """The parts of one ``_make`` factory."""

    make: ast.FunctionDef
    fwd: ast.FunctionDef
    bwd: ast.FunctionDef


def split(module: ast.Module) -> Sweeps:
    """The factory and its forward and backward functions."""
    make = module.body[0]
    defs = [s for s in make.body if isinstance(s, ast.FunctionDef)]
    if not isinstance(make, ast.FunctionDef) or len(defs) != 2:
        raise JitRewriteError("a generated module of unexpected shape (a srcgrad bug)")
    return Sweeps(make, defs[0], defs[1])


def _is_comment(stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
            and stmt.value.value.startswith(COMMENT_PREFIX))


def comment(text: str) -> ast.Expr:
    return ast.Expr(value=ast.Constant(value=f"{COMMENT_PREFIX} {text}"))


def _names(tree) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``... the first not in ``taken`` (which gets it)."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _located(new, old):
    return ast.copy_location(new, old)


class _DropStandIns(ast.NodeTransformer):
    """``_rt.shape_like(x)`` -> ``x``: the interpreted sweeps save a stand-in of an array read
    only for its shape, to free its memory early; a compiled sweep keeps the array itself
    (a reference, not a copy) and so needs no stand-in type."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if A.called_attr(node, "_rt") == "shape_like" and len(node.args) == 1:
            return node.args[0]
        return node


class _DropDeletes(ast.NodeTransformer):
    """``del _t8``: the interpreted sweeps free values early; numba frees by liveness and
    refuses ``del`` of a variable."""

    def visit_Delete(self, node):
        if all(isinstance(t, ast.Name) for t in node.targets):
            return None
        return node


def drop_stand_ins(module: ast.Module) -> ast.Module:
    """Without the interpreted sweeps' memory devices (stand-ins, ``del``)."""
    module = _DropDeletes().visit(_DropStandIns().visit(module))
    for node in ast.walk(module):  # (a block whose only statement was a del)
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef)) \
                and not node.body:
            node.body = [ast.Pass()]
    return module


# -- the tape ----------------------------------------------------------------------------

class _TapeRewriter(ast.NodeTransformer):
    """``_tape.push(v)`` -> ``_stack_v.append(v)``; pops likewise, from ``_stack_v``."""

    def __init__(self, taken: set[str]):
        self.taken = taken
        self.stacks: dict[str, str] = {}  # variable -> its stack
        self.pushed: set[str] = set()
        self.popped: set[str] = set()

    def stack(self, var: str) -> str:
        if var not in self.stacks:
            self.stacks[var] = fresh_name(f"_stack{var}" if var.startswith("_")
                                      else f"_stack_{var}", self.taken)
        return self.stacks[var]

    def visit_Assign(self, node):
        if A.called_attr(node.value, "_rt") == "Tape":
            return None  # the stacks are created at the top of the function
        if A.called_attr(node.value, TAPE) == "pop":
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise JitRewriteError("a tape pop into something other than a variable", node)
            var = node.targets[0].id
            self.popped.add(var)
            stack = ast.Name(id=self.stack(var), ctx=ast.Load())
            call = ast.Call(func=ast.Attribute(value=stack, attr="pop", ctx=ast.Load()),
                            args=[], keywords=[])
            return _located(ast.Assign(targets=node.targets, value=call), node)
        return self.generic_visit(node)

    def visit_Expr(self, node):
        if A.called_attr(node.value, TAPE) == "push":
            args = node.value.args
            if len(args) != 1 or not isinstance(args[0], ast.Name):
                raise JitRewriteError("a tape push of something other than a variable", node)
            var = args[0].id
            self.pushed.add(var)
            call = ast.Call(func=ast.Attribute(value=ast.Name(id=self.stack(var), ctx=ast.Load()),
                                               attr="append", ctx=ast.Load()),
                            args=[ast.Name(id=var, ctx=ast.Load())], keywords=[])
            return _located(ast.Expr(value=call), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == TAPE:
            raise JitRewriteError("a use of the tape other than push and pop", node)
        return node


def tape_to_stacks(body: list, taken: set[str]) -> tuple[list, dict[str, str]]:
    """``body`` with the tape replaced by per-variable stacks (created first), and the stacks."""
    rewriter = _TapeRewriter(taken)
    out = [rewriter.visit(s) for s in body]
    out = [s for s in out if s is not None]
    check_tape_pairs(rewriter)
    created = [ast.Assign(targets=[ast.Name(id=stack, ctx=ast.Store())],
                          value=ast.List(elts=[], ctx=ast.Load()))
               for stack in sorted(rewriter.stacks.values())]
    return created + out, rewriter.stacks


def check_tape_pairs(rewriter: _TapeRewriter) -> None:
    """Every variable pushed is popped back into itself, and nothing else is popped."""
    if rewriter.popped - rewriter.pushed:
        raise JitRewriteError(f"tape pops into {sorted(rewriter.popped - rewriter.pushed)} "
                              f"that were never pushed (a srcgrad bug)")


def _tape_shape(stmts: list, op: str) -> tuple:
    """The tape operations ``op`` ("push" or "pop") of ``stmts`` as a tree: a variable name
    per operation, ``("loop", ...)`` and ``("if", then, else)`` for the blocks holding some."""
    items = []
    for stmt in stmts:
        if op == "push" and isinstance(stmt, ast.Expr) \
                and A.called_attr(stmt.value, TAPE) == "push":
            arg = stmt.value.args[0] if stmt.value.args else None
            items.append(arg.id if isinstance(arg, ast.Name) else "?")
        elif op == "pop" and isinstance(stmt, ast.Assign) \
                and A.called_attr(stmt.value, TAPE) == "pop":
            target = stmt.targets[0]
            items.append(target.id if isinstance(target, ast.Name) else "?")
        elif isinstance(stmt, (ast.For, ast.While)):
            body = _tape_shape(stmt.body, op)
            if stmt.orelse and _tape_shape(stmt.orelse, op):
                items.append(("else-of-loop",))  # (never mirrored: refused)
            if body:
                items.append(("loop", body))
        elif isinstance(stmt, ast.If):
            then, other = _tape_shape(stmt.body, op), _tape_shape(stmt.orelse, op)
            if then or other:
                items.append(("if", then, other))
        elif isinstance(stmt, (ast.With, ast.Try)):
            if any(A.called_attr(n, TAPE) == op for n in ast.walk(stmt)):
                items.append(("block",))  # (never mirrored: refused)
    return tuple(items)


def _mirror(items: tuple) -> tuple:
    out = []
    for item in reversed(items):
        if isinstance(item, tuple) and item[0] == "loop":
            out.append(("loop", _mirror(item[1])))
        elif isinstance(item, tuple) and item[0] == "if":
            out.append(("if", _mirror(item[1]), _mirror(item[2])))
        else:
            out.append(item)
    return tuple(out)


def check_mirrored(fwd_body: list, bwd_body: list) -> None:
    """The backward sweep pops, block by block, exactly the variables the forward sweep
    pushed, in reverse: the condition under which one stack per variable holds the same
    values a shared tape would. Anything else is refused, never assumed."""
    if _tape_shape(bwd_body, "pop") != _mirror(_tape_shape(fwd_body, "push")):
        raise JitRewriteError("a tape whose pops do not mirror its pushes (a layout of the "
                              "generated sweeps the compiled variant does not know)")


# -- adjoint accumulators ----------------------------------------------------------------

class _ZeroTyper(ast.NodeTransformer):
    """``bx = 0.0`` (the lazy zero adjoint of ``x``) -> ``bx = _rt.zeros_like(x)``: numba needs
    one type per variable, and an array's adjoint must not start as a float."""

    def __init__(self, primals: set[str], adjoint_of: dict[str, str],
                 seeds: frozenset = frozenset()):
        self.primals = primals
        self.adjoint_of = adjoint_of
        self.seeds = seeds

    def visit_Assign(self, node):
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and node.value.value == 0.0
                and type(node.value.value) is float):
            name = node.targets[0].id
            primal = self.adjoint_of.get(name, name[1:])
            if name in self.seeds and primal not in self.primals:
                primal = name  # (typed from the cotangent passed in: see compiled_pair)
            if name.startswith("b") and (primal in self.primals or primal == name):
                value = ast.Call(func=ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()),
                                                    attr="zeros_like", ctx=ast.Load()),
                                 args=[ast.Name(id=primal, ctx=ast.Load())], keywords=[])
                return _located(ast.Assign(targets=node.targets, value=value), node)
        return node


def type_zero_adjoints(body: list, primals: set[str], adjoint_of: dict[str, str],
                       seeds: frozenset = frozenset()) -> list:
    """``body`` with each lazy zero adjoint typed from its primal; ``adjoint_of`` maps an
    adjoint's name to its primal's (the namer's table: ``bx_1`` may be the adjoint of ``x``).
    ``seeds``: adjoints passed in, typed from themselves where ``primals`` lacks theirs."""
    typer = _ZeroTyper(primals, adjoint_of, seeds)
    return [typer.visit(s) for s in body]


def _assigned(tree) -> set[str]:
    out = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


# -- helper calls ------------------------------------------------------------------------

class _CalleeRewriter(ast.NodeTransformer):
    """``helper_adj.fwd(...)`` -> ``helper_adj_fwd(...)``: the callee's compiled sweeps."""

    def __init__(self, callees: set[str]):
        self.callees = callees

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id in self.callees:
            if node.attr not in ("fwd", "bwd"):
                raise JitRewriteError(f"'{node.value.id}.{node.attr}'", node)
            return _located(ast.Name(id=f"{node.value.id}_{node.attr}", ctx=node.ctx), node)
        return node


def rename_callees(body: list, callees: set[str]) -> list:
    rewriter = _CalleeRewriter(callees)
    return [rewriter.visit(s) for s in body]


def runtime_calls(tree) -> list[tuple[str, ast.AST]]:
    """Every ``_rt.<name>`` the tree uses, with its node."""
    return [(n.attr, n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "_rt"]


# -- one function, or a compiled pair ----------------------------------------------------

def _returns(func: ast.FunctionDef) -> list[ast.Return]:
    return [n for n in ast.walk(func) if isinstance(n, ast.Return)]


def _unpack_saved(bwd: ast.FunctionDef) -> tuple[int, ast.Assign]:
    """Where the backward sweep unpacks the saved values, as ``a, b, ... = _saved`` (a single
    value, ``a = _saved[0]``, is returned in that form; none at all as ``() = _saved``)."""
    saved = bwd.args.args[0].arg
    for k, stmt in enumerate(bwd.body):
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        value = stmt.value
        if isinstance(value, ast.Name) and value.id == saved:
            return k, stmt
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) \
                and value.value.id == saved and isinstance(value.slice, ast.Constant) \
                and value.slice.value == 0:
            single = ast.Tuple(elts=[stmt.targets[0]], ctx=ast.Store())
            return k, ast.Assign(targets=[single], value=ast.Name(id=saved, ctx=ast.Load()))
    if not any(isinstance(n, ast.Name) and n.id == saved for n in ast.walk(bwd)):
        empty = ast.Assign(targets=[ast.Tuple(elts=[], ctx=ast.Store())],
                           value=ast.Name(id=saved, ctx=ast.Load()))
        return -1, empty
    raise JitRewriteError("a backward sweep that does not unpack what the forward one saved")


def _check_shapes(sweeps: Sweeps) -> None:
    for func in (sweeps.fwd, sweeps.bwd):
        if any(isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)) and n is not func
               for n in ast.walk(func)):
            node = next(n for n in ast.walk(func) if isinstance(
                n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)) and n is not func)
            raise JitRewriteError("a function or lambda defined inside the function", node)
        if len(_returns(func)) != 1 or not isinstance(func.body[-1], ast.Return):
            raise JitRewriteError("a return other than one at the end (a srcgrad bug)")
    ret = sweeps.fwd.body[-1].value
    if not (isinstance(ret, ast.Tuple) and len(ret.elts) == 2
            and isinstance(ret.elts[1], ast.Tuple)):
        raise JitRewriteError("a forward sweep returning something other than "
                              "(value, saved) (a srcgrad bug)")
    if len(sweeps.bwd.args.args) != 2:
        raise JitRewriteError("a backward sweep taking other than (saved, g)")


def fuse(module: ast.Module, callees: set[str], adjoint_of: dict[str, str],
         cotangent: bool = False, floats: frozenset = frozenset(),
         keep_tape: bool = False) -> tuple[ast.Module, str]:
    """The factory of one function ``<name>_grad(*params) -> (value, gradients)`` running
    the forward sweep, seeding the output's adjoint, then the backward sweep; and its name.
    With ``cotangent``, ``<name>_vjp(*params, _g)``: the seed is the cotangent ``_g``.
    ``floats``: parameters known to hold floats in every loop (see ``preallocate``).
    ``keep_tape``: plain interpreted Python instead (the tape, ``_rt.grad_seed``, lazy zero
    adjoints), which forward mode differentiates again (second.py)."""
    module = drop_stand_ins(copy.deepcopy(module))
    sweeps = split(module)
    _check_shapes(sweeps)
    taken = _names(module)
    fwd, bwd = sweeps.fwd, sweeps.bwd
    value, saved = fwd.body[-1].value.elts
    check_mirrored(fwd.body, bwd.body)
    k, unpack = _unpack_saved(bwd)
    value_name = fresh_name("_value", taken)
    seed_name = bwd.args.args[1].arg
    body = list(fwd.body[:-1])
    body.append(ast.Assign(targets=[ast.Name(id=value_name, ctx=ast.Store())], value=value))
    seed_args = [ast.Name(id=value_name, ctx=ast.Load())]
    if cotangent:
        g_name = fresh_name("_g", taken)
        fwd.args.args = fwd.args.args + [ast.arg(arg=g_name)]
        seed_args.append(ast.Name(id=g_name, ctx=ast.Load()))
    body.append(ast.Assign(
        targets=[ast.Name(id=seed_name, ctx=ast.Store())],
        value=ast.Call(func=ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()),
                                          attr="cotangent" if cotangent else
                       "grad_seed" if keep_tape else "seed",
                                          ctx=ast.Load()),
                       args=seed_args, keywords=[])))
    back = [s for s in bwd.body[:max(k, 0)] if not _is_comment(s)]
    targets = unpack.targets[0].elts if isinstance(unpack.targets[0], ast.Tuple) else []
    if len(targets) != len(saved.elts):
        raise JitRewriteError("saved values that do not match their unpacking (a srcgrad bug)")
    for target, source in zip(targets, saved.elts):
        same = isinstance(source, ast.Name) and isinstance(target, ast.Name) \
            and source.id == target.id
        if not same:
            back.append(ast.Assign(targets=[target], value=source))
    body.append(comment("backward sweep"))
    # (only the backward sweep's: a user's own 'bx = 0.0' in the forward sweep stays)
    back = back + bwd.body[k + 1:-1]
    body.extend(back if keep_tape else type_zero_adjoints(back, _assigned(fwd), adjoint_of))
    grads = bwd.body[-1].value
    body.append(ast.Return(value=ast.Tuple(elts=[ast.Name(id=value_name, ctx=ast.Load()),
                                                 grads], ctx=ast.Load())))
    if not keep_tape:
        body, stacks = tape_to_stacks(body, taken)
        body = preallocate(body, {v: stacks[v] for v in floats if v in stacks}, taken)
        body = rename_callees(body, callees)
    suffix = "_vjp" if cotangent else "_grad"
    name = _entry_name(fwd.name, suffix)
    fused = copy.copy(fwd)
    fused.name, fused.body = name, body
    make = sweeps.make
    make.args = _callee_args(make.args, callees)
    make.body = [fused, ast.Return(value=ast.Name(id=name, ctx=ast.Load()))]
    return module, name


def _entry_name(fwd_name: str, suffix: str) -> str:
    return fwd_name.removesuffix("_fwd") + suffix


class _DropPushes(ast.NodeTransformer):
    """The forward sweep without its tape: pushes and the tape's creation removed."""

    def visit_Expr(self, node):
        return None if A.called_attr(node.value, TAPE) == "push" else node

    def visit_Assign(self, node):
        return None if A.called_attr(node.value, "_rt") == "Tape" else self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == TAPE:
            raise JitRewriteError("a use of the tape other than push and pop", node)
        return node


def forward_only(module: ast.Module, callees: set[str]) -> ast.Module:
    """The factory of ``<name>_value(*params) -> value``: the forward sweep alone, with no
    tape (nothing pops it), what vjp returns before any cotangent is known."""
    module = drop_stand_ins(copy.deepcopy(module))
    sweeps = split(module)
    _check_shapes(sweeps)
    fwd = sweeps.fwd
    value = fwd.body[-1].value.elts[0]
    body = fwd.body[:-1] + [ast.Return(value=value)]
    dropper = _DropPushes()
    body = [s for s in (dropper.visit(s) for s in body) if s is not None]
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With)) and not node.body:
            node.body = [ast.Pass()]
    body = rename_callees(body, callees)
    name = _entry_name(fwd.name, "_value")
    fwd.name, fwd.body = name, body
    make = sweeps.make
    make.args = _callee_args(make.args, callees)
    make.body = [fwd, ast.Return(value=ast.Name(id=name, ctx=ast.Load()))]
    return module


def compiled_pair(module: ast.Module, callees: set[str],
                  adjoint_of: dict[str, str]) -> ast.Module:
    """The factory of a callee's forward and backward sweeps, each compilable: the tape in
    the saved values becomes the tuple of its stacks."""
    module = drop_stand_ins(copy.deepcopy(module))
    sweeps = split(module)
    _check_shapes(sweeps)
    taken = _names(module)
    fwd, bwd = sweeps.fwd, sweeps.bwd
    check_mirrored(fwd.body, bwd.body)
    # (the return carries the tape itself: rewritten below, after the pushes)
    body, stacks = tape_to_stacks(fwd.body[:-1], taken)
    fwd.body = body + fwd.body[-1:]
    k, unpack = _unpack_saved(bwd)
    if k >= 0:
        bwd.body[k] = unpack  # (in the ``a, b, ... = _saved`` form)
    for tup, ctx in ((fwd.body[-1].value.elts[1], ast.Load), (unpack.targets[0], ast.Store)):
        if not isinstance(tup, ast.Tuple):
            continue
        elts = []
        for e in tup.elts:
            if isinstance(e, ast.Name) and e.id == TAPE:
                elts.append(ast.Tuple(elts=[ast.Name(id=s, ctx=ctx())
                                            for s in sorted(stacks.values())], ctx=ctx()))
            else:
                elts.append(e)
        tup.elts = elts
    bwd.body = bwd.body[:k + 1] + pop_only(bwd.body[k + 1:], stacks, taken)
    # (the backward sweep reads only what it is given: a lazy zero of the returned value's
    # adjoint, whose primal stays in the forward sweep, is typed from the cotangent passed
    # in, of that value's type; '_retval1' there was a NameError, fuzzer seed 60 program 55)
    bound = _assigned(bwd)
    seeds = frozenset(a.arg for a in bwd.args.args[1:])
    bwd.body = type_zero_adjoints(bwd.body, _assigned(fwd) & bound, adjoint_of, seeds)
    fwd.body = rename_callees(fwd.body, callees)
    bwd.body = rename_callees(bwd.body, callees)
    make = sweeps.make
    make.args = _callee_args(make.args, callees)
    return module


def pop_only(body: list, stacks: dict[str, str], taken: set[str]) -> list:
    """A backward sweep's pops, from the stacks the forward sweep made (also a callee's
    tapes handed between its compiled sweeps' jvps, second.py)."""
    rewriter = _TapeRewriter(taken)
    rewriter.stacks = dict(stacks)
    out = [rewriter.visit(s) for s in body]
    if set(rewriter.stacks) != set(stacks):
        raise JitRewriteError("a backward sweep popping what its forward sweep never pushed")
    return out


def _callee_args(args: ast.arguments, callees: set[str]) -> ast.arguments:
    params = []
    for a in args.args:
        if a.arg in callees:
            params += [ast.arg(arg=f"{a.arg}_fwd"), ast.arg(arg=f"{a.arg}_bwd")]
        else:
            params.append(a)
    args.args = params
    return args


class _MatmulOperator(ast.NodeTransformer):
    """``np.matmul(a, b)`` (forward mode's tangent of ``a @ b``) -> ``a @ b``: numba compiles
    the operator (1-d and 2-d operands), not the function."""

    def __init__(self, numpy_names: set[str]):
        self.numpy_names = numpy_names

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "matmul" \
                and isinstance(func.value, ast.Name) and func.value.id in self.numpy_names \
                and len(node.args) == 2 and not node.keywords:
            return _located(ast.BinOp(left=node.args[0], op=ast.MatMult(),
                                      right=node.args[1]), node)
        return node


def matmul_operators(module: ast.Module, numpy_names: set[str]) -> ast.Module:
    """``module`` with each ``<numpy>.matmul(a, b)`` written ``a @ b``; ``numpy_names`` are
    the global names bound to the numpy module."""
    return _MatmulOperator(numpy_names).visit(module)


class _SimdMath(ast.NodeTransformer):
    """``np.tanh(a)`` -> ``_rt.tanh(a)`` (also ``exp``, ``log``, ``sin``, ``cos``): the
    compiled helper computes a float64 array with SIMD calls (simd.py), anything else as
    numba's ``np.tanh`` does. Also ``math.ldexp(x, i)`` (or ``ldexp(x, i)`` imported from
    ``math``) -> ``_rt.ldexp(x, i)``, ``arity`` 2: it raises Python's errors, numba's not."""

    def __init__(self, module_names: set[str], functions: tuple, arity: int, direct: dict):
        self.module_names = module_names
        self.functions = functions
        self.arity = arity
        self.direct = direct

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        attr = None
        if isinstance(func, ast.Attribute) and func.attr in self.functions \
                and isinstance(func.value, ast.Name) and func.value.id in self.module_names:
            attr = func.attr
        elif isinstance(func, ast.Name) and func.id in self.direct:
            attr = self.direct[func.id]
        if attr is not None and len(node.args) == self.arity and not node.keywords \
                and not any(isinstance(a, ast.Starred) for a in node.args):
            rt = ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()), attr=attr,
                               ctx=ast.Load())
            return _located(ast.Call(func=_located(rt, func), args=node.args, keywords=[]),
                            node)
        return node


def simd_math(module: ast.Module, module_names: set[str], functions: tuple,
              arity: int = 1, direct: dict | None = None) -> ast.Module:
    """``module`` with each ``<numpy>.<f>(a)`` of ``functions`` called through ``_rt``;
    ``module_names`` are the global names bound to the numpy module (none of them assigned
    in ``module``: a local ``np`` is left alone); also ``<math>.<f>(a, b)`` of the ``math``
    module's names, ``arity`` 2, and ``direct``: ``{global name: f}`` of the functions
    themselves (``from math import ldexp``)."""
    assigned = _assigned(module)
    names = module_names - assigned
    direct = {k: v for k, v in (direct or {}).items() if k not in assigned}
    if not (names or direct):
        return module
    return _SimdMath(names, functions, arity, direct).visit(module)


_ALONG_AN_AXIS = {"max": "max_along", "amax": "max_along", "min": "min_along",
                  "amin": "min_along", "mean": "mean_along", "sum": "sum_along"}


_METHODS = frozenset({"max", "min", "mean", "sum"})  # (ndarray has no .amax, .amin)


def _local_value(node, modules: set[str]) -> bool:
    """Whether ``node``, a method's receiver, is a value of the sweeps (a name, not one
    bound to a module: ``mymod.mean(x, axis=0)`` is a function call)."""
    return isinstance(node, ast.Name) and node.id not in modules


class _Reductions(ast.NodeTransformer):
    """``np.max(a, axis=k)`` -> ``_rt.max_along(a, k, False)`` (also ``min``, and ``mean``
    and ``sum`` with ``keepdims=``), which numba lacks: compiled loops (runtime.py). A
    ``np.sum``/``np.mean`` without ``keepdims`` stays numba's own where it has one."""

    def __init__(self, numpy_names: set[str], modules: set[str]):
        self.numpy_names = numpy_names
        self.modules = modules

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in _ALONG_AN_AXIS):
            return node
        if isinstance(func.value, ast.Name) and func.value.id in self.numpy_names:
            given = dict(zip(("a", "axis", "out", "keepdims"), node.args))
        elif func.attr in _METHODS and len(node.args) <= 1 and _local_value(func.value,
                                                                            self.modules):
            # a method: ``a.max(axis, out, keepdims)``, ``a.mean(axis, dtype, out, keepdims)``
            # (only the axis is positional here); a receiver numba types as no float64
            # array is refused by the compiled helper, as numpy's function would differ
            given = {"a": func.value, **dict(zip(("axis",), node.args))}
        else:
            return node
        for k in node.keywords:
            if k.arg is None or k.arg in given:
                return node  # (**kwargs, or a repeated argument: Python's error)
            given[k.arg] = k.value
        if set(given) - {"a", "axis", "keepdims"} or "axis" not in given or "a" not in given:
            return node
        if func.attr == "sum" and "keepdims" not in given:
            return node  # (numba's np.sum along an axis)
        keep = given.get("keepdims") or _located(ast.Constant(value=False), node)
        rt = _located(ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()),
                                    attr=_ALONG_AN_AXIS[func.attr], ctx=ast.Load()), func)
        return _located(ast.Call(func=rt, args=[given["a"], given["axis"], keep],
                                 keywords=[]), node)


def reductions_along_an_axis(module: ast.Module, numpy_names: set[str],
                             module_names: set[str] = frozenset()) -> ast.Module:
    """``module`` with each numpy reduction along an axis numba lacks, function
    (``np.max(a, axis=0)``) or array method (``a.max(axis=0)``), called through ``_rt``;
    ``numpy_names`` as for ``simd_math``, ``module_names`` the global names bound to any
    module (whose ``.mean(...)`` is no method of an array)."""
    names = numpy_names - _assigned(module)
    return _Reductions(names, set(module_names) | set(numpy_names)).visit(module)


class _OrderedReshapes(ast.NodeTransformer):
    """Reshapes in C order -> ``_rt.reshape_c(a, shape)``: ``np.reshape(a, shape,
    order='C')`` (the adjoint of a reshape: numba's ``np.reshape`` takes no ``order``),
    ``np.reshape(a, shape)`` and ``a.reshape(shape)`` / ``a.reshape(d0, d1, ...)`` of the
    user's code (numba reshapes only contiguous arrays, and raises NotImplementedError at run
    time on others, ``x.T.reshape(-1)``, where numpy copies)."""

    def __init__(self, numpy_names: set[str]):
        self.numpy_names = numpy_names

    @staticmethod
    def _c_order(keywords) -> bool:
        return not keywords or len(keywords) == 1 and keywords[0].arg == "order" \
            and isinstance(keywords[0].value, ast.Constant) and keywords[0].value.value == "C"

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "reshape" \
                or not self._c_order(node.keywords) \
                or any(isinstance(a, ast.Starred) for a in node.args):
            return node
        if isinstance(func.value, ast.Name) and func.value.id in self.numpy_names:
            if len(node.args) != 2:
                return node
            args = node.args
        elif node.args:
            shape = node.args[0] if len(node.args) == 1 else _located(
                ast.Tuple(elts=node.args, ctx=ast.Load()), node)
            args = [func.value, shape]
        else:
            return node
        rt = _located(ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()),
                                    attr="reshape_c", ctx=ast.Load()), func)
        return _located(ast.Call(func=rt, args=args, keywords=[]), node)


def c_order_reshapes(module: ast.Module, numpy_names: set[str]) -> ast.Module:
    """``module`` with ``np.reshape(a, shape, order='C')`` called through ``_rt``."""
    return _OrderedReshapes(numpy_names - _assigned(module)).visit(module)


class _IntegerPowers(ast.NodeTransformer):
    """``a ** b`` -> ``_rt.power(a, b, "file:line")``: numba computes an int to an int
    power in int64, where Python gives a float for a negative exponent (``2 ** -1`` is 0.5,
    0 in numba) and a big int beyond int64 (numba wraps around). The compiled helper is
    ``a ** b`` for any other types, and raises for those two cases of ints (runtime.py)."""

    def __init__(self, locate):
        self.locate = locate

    def power(self, base, exponent, node):
        rt = _located(ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()), attr="power",
                                    ctx=ast.Load()), node)
        line = _located(ast.Constant(value=self.locate(node)), node)
        return _located(ast.Call(func=rt, args=[base, exponent, line], keywords=[]), node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            return self.power(node.left, node.right, node)
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow) and isinstance(node.target, ast.Name):
            load = _located(ast.Name(id=node.target.id, ctx=ast.Load()), node)
            return _located(ast.Assign(targets=[node.target],
                                       value=self.power(load, node.value, node)), node)
        return node


def integer_powers(module: ast.Module, locate) -> ast.Module:
    """``module`` with each ``a ** b`` computed by ``_rt.power`` (Python's result, or an
    error, for ints); ``locate(node)`` is the user's "file:line" of a node."""
    return _IntegerPowers(locate).visit(module)


# -- float tapes preallocated from trip counts -------------------------------------------

def _trip_count(before, loop) -> str | None:
    """The variable holding ``loop``'s trip count, when the statement ``before`` it
    computes it as the generated sweeps do: ``_n1 = len(range(n))`` (or ``_n1 = 1000``) right
    before ``for i in range(n)`` (or ``range(1000)``)."""
    if not (isinstance(before, ast.Assign) and len(before.targets) == 1
            and isinstance(before.targets[0], ast.Name) and isinstance(loop, ast.For)
            and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
            and loop.iter.func.id == "range" and not loop.orelse):
        return None
    value = before.value
    counted = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
        and value.func.id == "len" and len(value.args) == 1 \
        and ast.dump(value.args[0]) == ast.dump(loop.iter)
    constant = isinstance(value, ast.Constant) and type(value.value) is int \
        and len(loop.iter.args) == 1 and isinstance(loop.iter.args[0], ast.Constant) \
        and loop.iter.args[0].value == value.value
    return before.targets[0].id if counted or constant else None


def _pushes_of(loop: ast.For, stack: str, whole: list) -> int:
    """How many times each iteration of ``loop`` appends to ``stack``: the appends must be
    statements of its body itself, and none be anywhere else in ``whole``; else 0."""
    here = [s for s in loop.body if isinstance(s, ast.Expr)
            and A.called_attr(s.value, stack) == "append"]
    everywhere = [n for s in whole for n in ast.walk(s) if A.called_attr(n, stack) == "append"]
    exits = any(isinstance(n, (ast.Break, ast.Continue, ast.Return)) for n in ast.walk(loop))
    return 0 if exits or len(here) != len(everywhere) else len(here)


class _ArrayTape(ast.NodeTransformer):
    """``_stack_x.append(x)`` -> ``_stack_x[_pos_x] = x; _pos_x += 1`` and
    ``x = _stack_x.pop()`` -> ``_pos_x -= 1; x = _stack_x[_pos_x]``."""

    def __init__(self, stack: str, pos: str):
        self.stack, self.pos = stack, pos

    def _index(self, ctx):
        return ast.Subscript(value=ast.Name(id=self.stack, ctx=ast.Load()),
                             slice=ast.Name(id=self.pos, ctx=ast.Load()), ctx=ctx)

    def _step(self, op):
        return ast.AugAssign(target=ast.Name(id=self.pos, ctx=ast.Store()), op=op,
                             value=ast.Constant(value=1))

    def visit_Expr(self, node):
        if A.called_attr(node.value, self.stack) == "append":
            store = ast.Call(func=ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()),
                                                attr="tape_store", ctx=ast.Load()),
                             args=[ast.Name(id=self.stack, ctx=ast.Load()),
                                   ast.Name(id=self.pos, ctx=ast.Load()),
                                   node.value.args[0]], keywords=[])
            return [_located(ast.Expr(value=store), node),
                    _located(self._step(ast.Add()), node)]
        return node

    def visit_Assign(self, node):
        if A.called_attr(node.value, self.stack) == "pop":
            load = ast.Assign(targets=node.targets, value=self._index(ast.Load()))
            return [_located(self._step(ast.Sub()), node), _located(load, node)]
        return self.generic_visit(node)


def preallocate(body: list, stacks: dict[str, str], taken: set[str]) -> list:
    """``body`` with the stacks of ``stacks`` (variable -> stack) that hold floats, pushed once
    or more per iteration of a top-level ``for`` loop whose trip count is computed before it,
    made float64 arrays of that size indexed by a position (numba's list append and pop
    cost about 12% of a scalar loop's gradient). Only variables known to hold floats in
    every iteration are given (a float64 tape holds a float32 exactly); ``_rt.tape_store``
    refuses, at compile time, any other value, rather than convert it."""
    for var, stack in sorted(stacks.items()):
        for k in range(1, len(body)):
            count_var = _trip_count(body[k - 1], body[k])
            count = _pushes_of(body[k], stack, body) if count_var else 0
            if count:
                break
        else:
            continue
        pos = fresh_name(f"_pos{var}" if var.startswith("_") else f"_pos_{var}", taken)
        size = ast.Name(id=count_var, ctx=ast.Load())
        if count > 1:
            size = ast.BinOp(left=size, op=ast.Mult(), right=ast.Constant(value=count))
        alloc = ast.Call(func=ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()),
                                            attr="float_tape", ctx=ast.Load()),
                         args=[size], keywords=[])
        start = [ast.Assign(targets=[ast.Name(id=stack, ctx=ast.Store())], value=alloc),
                 ast.Assign(targets=[ast.Name(id=pos, ctx=ast.Store())],
                            value=ast.Constant(value=0))]
        body = [s for s in body if not (isinstance(s, ast.Assign) and isinstance(
            s.targets[0], ast.Name) and s.targets[0].id == stack and isinstance(
            s.value, ast.List))]
        k = next(i for i, s in enumerate(body) if i > 0
                 and _trip_count(body[i - 1], s) == count_var and _pushes_of(s, stack, body))
        body = body[:k] + start + body[k:]
        rewriter = _ArrayTape(stack, pos)
        out = []
        for s in body:
            new = rewriter.visit(s)
            out.extend(new if isinstance(new, list) else [new])
        body = out
    return body


# -- in-place updates checked against the function's variables -------------------------

class _SharedLocals:
    """``_rt.refuse_shared_locals(x, locals(), ('a', 'b'), (G,), message)`` ->
    ``_rt.refuse_viewed(x, (a, b, G), message)``, with only the names that may be bound
    there. The interpreted check looks those names up in ``locals()``, which numba lacks, and
    skips the unbound ones; here a name is passed when an assignment to it may run before the
    check (earlier in the text, or anywhere in a loop around it). One that is still unbound
    when the check runs is, in numba, a zeroed value (numba's documented lowering of an
    undefined variable: an empty array shares nothing), so both checks see the same
    arrays; where numba cannot tell (a name bound only later in the same loop, and no
    stand-in ``z = None`` before it), it refuses to compile: "Variable 'z' is not
    defined", located like its other errors. ``_rt.refuse_shared_item(root, keys, inplace,
    locals(), names, outside, message)`` keeps its first three arguments and gets the same
    tuple of values (built_lists.py compiles it for the lists it rewrites)."""

    def block(self, stmts: list, bound: set) -> set:
        """Rewrites the checks in ``stmts``; the names that may be bound after them."""
        for s in stmts:
            if isinstance(s, (ast.For, ast.While)):
                bound = bound | _assigned(s)  # (a later iteration sees the whole loop's)
                self.block(s.body, bound)
                self.block(s.orelse, bound)
            elif isinstance(s, ast.If):  # (a name the test binds, ':=', is bound in both)
                self.block(s.body, bound | _assigned(s.test))
                self.block(s.orelse, bound | _assigned(s.test))
            elif isinstance(s, (ast.With, ast.Try)):
                items = [_assigned(item) for item in getattr(s, "items", ())]
                inner = self.block(s.body, bound.union(*items))
                for handler in getattr(s, "handlers", ()):
                    self.block(handler.body, set(inner))
                self.block(getattr(s, "orelse", []), set(inner))
                self.block(getattr(s, "finalbody", []), set(inner))
            elif isinstance(s, ast.Expr) \
                    and A.called_attr(s.value, "_rt") == "refuse_shared_locals":
                s.value = self.rewritten(s.value, bound)
            elif isinstance(s, ast.Expr) \
                    and A.called_attr(s.value, "_rt") == "refuse_shared_item" \
                    and len(s.value.args) == 7:  # (root, keys, inplace, then as above)
                root, keys, inplace = s.value.args[:3]
                rest = ast.copy_location(ast.Call(func=s.value.func, args=s.value.args[3:],
                                                  keywords=[]), s.value)
                check = self.rewritten(rest, bound)
                s.value.args = [root, keys, inplace] + check.args[1:]
            bound = bound | _assigned(s)
        return bound

    def rewritten(self, call: ast.Call, bound: set) -> ast.Call:
        value, frame, names, outside, message = [None] * (5 - len(call.args)) + call.args
        if not (isinstance(frame, ast.Call) and isinstance(frame.func, ast.Name)
                and frame.func.id == "locals" and isinstance(names, ast.Tuple)
                and isinstance(outside, ast.Tuple)
                and all(isinstance(e, ast.Constant) for e in names.elts)):
            raise JitRewriteError("an in-place update check of an unexpected form (a srcgrad "
                                  "bug)", call)
        loads = [ast.Name(id=e.value, ctx=ast.Load()) for e in names.elts
                 if e.value in bound]
        views = ast.Tuple(elts=loads + list(outside.elts), ctx=ast.Load())
        func = ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()), attr="refuse_viewed",
                             ctx=ast.Load())
        return _located(ast.Call(func=func, args=[value, views, message], keywords=[]), call)


def shared_locals_checks(module: ast.Module) -> ast.Module:
    """Every function's ``refuse_shared_locals`` check in a form numba compiles (see
    ``_SharedLocals``)."""
    for func in [n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)]:
        params = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
        _SharedLocals().block(func.body, params)
    return module
