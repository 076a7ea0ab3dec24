"""The pipeline: small passes, in this order, from user source to adjoint module.

Each pass takes the tree and the shared ``Context`` and returns the tree. With
``debug=True`` the source after each pass is printed.
"""
from __future__ import annotations

__all__ = ["PIPELINE", "prepare", "normalize"]

from collections import Counter
import copy
import inspect
import numbers
import sys
import types
from typing import Callable

import gast
import numpy as np

from .. import runtime
from ..adapters import has_starred_parameters
from ..codegen import to_source
from ..errors import MissingRuleError, SourceUnavailableError, SrcgradError, unnested_api
from ..naming import Namer
from ..source import get_source
from . import astutil as A
from .activity import (mark_active, mark_varied, mutated_parameters,
                       object_changes, rename_decision_like)
from .anf import to_anf
from .calls import route_calls
from .checkpoint import lower_checkpointed
from .context import Context, DynamicCall, Resolved
from .desugar import desugar
from .exits import lower_exits
from .helper_calls import library_file, methods_on_parameters, source_tree, user_calls
from .gradient_calls import fold_gradient_calls
from .index_tricks import lower_index_tricks
from .lambda_calls import inline_lambda_calls
from .nonlocals import lower_nonlocal
from .operator_objects import guard_operator_objects
from .resolve import BINOPS, UNARYOPS, resolve
from .scalar import mark_scalar_closed
from .trycatch import lower_try, protect_try_bodies
from .validate import validate
from .writeback import merge_same_objects, return_written_back, written_back

# The passes that normalize user code, in order; the mode-specific generator comes after.
PIPELINE: list[tuple[str, Callable]] = [
    ("validate", validate),
    ("merge_same_objects", merge_same_objects),
    ("return_written_back", return_written_back),
    ("lower_checkpointed", lower_checkpointed),
    ("lower_nonlocal", lower_nonlocal),
    ("inline_lambda_calls", inline_lambda_calls),
    ("lower_try", lower_try),
    ("mark_varied", mark_varied),
    ("desugar", desugar),
    ("guard_operator_objects", guard_operator_objects),
    ("route_calls", route_calls),
    ("lower_exits", lower_exits),
    ("index_tricks", lower_index_tricks),
    ("fold_gradient_calls", fold_gradient_calls),
    ("anf", to_anf),
    ("protect_try_bodies", protect_try_bodies),
    ("resolve", resolve),
]


def prepare(fn, wrt: tuple[int, ...], debug: bool = False) -> Context:
    """Read ``fn``'s source and make the context the passes share."""
    src = get_source(fn)
    tree = src.tree
    kept = [] if src.filename.startswith("<srcgrad") else rename_decision_like(tree)
    namer = Namer.for_tree(tree)
    args = tree.args
    params = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
    closure = {}
    if getattr(fn, "__closure__", None):
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell: the variable is not bound yet
                pass
    local_names = set(params) | {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
                                 and isinstance(n.ctx, (gast.Store, gast.Del))}
    local_names |= {n.name for n in gast.walk(tree)
                    if isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n is not tree}
    ctx = Context(fn=fn, src=src, wrt=tuple(wrt), namer=namer, params=params,
                  globals=getattr(fn, "__globals__", {}), closure=closure,
                  local_names=local_names, debug=debug)
    ctx.rt = namer.unique("_rt")
    for node in kept[:1]:
        ctx.problem(node, f"a variable named {node.id}, like the branch decisions and trip "
                          f"counts of srcgrad's generated code, which its higher derivatives "
                          f"take it for, here a global or nonlocal variable, or also a "
                          f"keyword argument's name",
                    "Rename it (e.g. without the leading underscore).")
    ctx.raise_problems()
    return ctx


def normalize(ctx: Context) -> gast.FunctionDef:
    """Run the pipeline, then activity analysis; check every active call can be handled."""
    tree = ctx.src.tree
    for name, run in PIPELINE:
        tree = run(tree, ctx)
        ctx.raise_problems()
        if ctx.debug:
            print(f"# --- after {name} ---\n{to_source(tree)}", file=sys.stderr)
    ctx.bind_locals(tree)  # (names introduced by the last passes are locals too)
    ret = tree.body[-1]
    results = {ret.value.id} if isinstance(ret.value, gast.Name) else set()
    mark_active(tree, ctx, results)
    _refuse_unnested_apis(tree, ctx)
    mark_scalar_closed(tree, ctx)
    return tree


def _refuse_unnested_apis(tree: gast.FunctionDef, ctx: Context) -> None:
    """srcgrad's entry points whose own machinery cannot be differentiated (vjp, jvp, hvp,
    vmap: ``__srcgrad_not_nested__``), called on differentiable values: refused at the
    user's line rather than inside srcgrad's source."""
    for node in gast.walk(tree):
        if not isinstance(node, gast.Call):
            continue
        obj = getattr(ctx.resolved.get(id(node)), "obj", None)
        api = getattr(obj, "__srcgrad_not_nested__", None)
        if api is not None and A.names_read(node) & ctx.active:
            ctx.problem(node, *unnested_api(api))
        elif getattr(obj, "__srcgrad_makes_gradient__", False) and node.args \
                and A.names_read(node.args[0]) & ctx.active:
            # (what gradient_calls could not make of a function known here: a gradient
            # made earlier, a function value passed in; its machinery is not source)
            ctx.problem(node, "a gradient of a function value carrying differentiable "
                              "values (a gradient made earlier, a closure passed in)",
                        "Make the gradient of the function itself where its variables are "
                        "(g = grad(inner); gg = grad(inner2) with inner2 calling g), or pass "
                        "those values to a module-level function as arguments.")
    ctx.raise_problems()


def active_calls(tree: gast.FunctionDef, ctx: Context):
    """``(statement, call, resolved)`` for each assignment of an active value from a call."""
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and isinstance(node.value, gast.Call) \
                and isinstance(node.targets[0], gast.Name) \
                and node.targets[0].id in ctx.active:
            call = node.value
            operands = list(call.args) + [k.value for k in call.keywords]
            if isinstance(call.func, gast.Attribute):
                operands.append(call.func.value)
            if any(isinstance(a, gast.Name) and a.id in ctx.active for a in operands):
                yield node, call, ctx.resolved[id(call)]


def is_tape_op(call, name: str, ctx: Context) -> bool:
    """``t.push(v)`` / ``t.pop()`` on the tape of a generated sweep being transformed again."""
    return (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and call.func.attr == name and isinstance(call.func.value, gast.Name)
            and ctx.is_tape(call.func.value.id))


def adjoint_tape_op(call, ctx: Context) -> str | None:
    """``"push"`` for ``bt = _rt.adjoint_push(bt, g)``, ``"pop"`` for ``_rt.adjoint_pop(bt)``:
    the tapes of adjoints that a backward sweep keeps for its tape's pops, met when that
    sweep is differentiated again (third order and up). They are stacks like the sweeps' own
    tapes, so their derivatives are tape operations too, never a transformed call (whose
    functional ``list.pop`` would leave the stack unpopped)."""
    if not isinstance(call, gast.Call):
        return None
    obj = getattr(ctx.resolved.get(id(call)), "obj", None)
    if obj is runtime.adjoint_push and len(call.args) == 2 and not call.keywords:
        return "push"
    if obj is runtime.adjoint_pop and len(call.args) == 1 and not call.keywords \
            and isinstance(call.args[0], gast.Name):
        return "pop"
    return None


def _local_callee(func, ctx: Context) -> bool:
    base = func
    while isinstance(base, gast.Attribute):
        base = base.value
    return isinstance(base, gast.Name) and (base.id in ctx.local_names
                                            or base.id in ctx.closure)


def _redispatched(obj) -> bool:
    """The runtime's dispatch helpers, met in generated sweeps differentiated again: they go
    through ``call_fwd`` themselves, which knows how to differentiate them. So do
    ``runtime.apply`` and functions with ``*args``/``**kwargs`` parameters, which it runs as
    fixed-arity adapters (srcgrad/adapters.py)."""
    return obj is runtime.call_fwd or obj is runtime.method_fwd or obj is runtime.call_bwd \
        or obj is runtime.apply or has_starred_parameters(obj)


# expressions the generators differentiate (calls are checked by check_calls), and those
# whose value carries no derivative whatever their operands
_DIFFERENTIATED = (gast.Name, gast.BinOp, gast.UnaryOp, gast.Subscript, gast.Tuple, gast.List,
                   gast.Dict, gast.Attribute, gast.Call, gast.Constant,
                   gast.Lambda)  # (a lambda: through the calls of it)
_NO_DERIVATIVE = (gast.Compare, gast.BoolOp, gast.JoinedStr, gast.FormattedValue)


def check_plain_calls(tree: gast.FunctionDef, ctx: Context) -> None:
    """A user function whose result carries no gradient runs as plain Python: record a
    problem when it changes a differentiable argument in place (the tape would not see it)."""
    differentiated = {id(node.value) for node in gast.walk(tree)
                      if isinstance(node, gast.Assign) and isinstance(node.value, gast.Call)
                      and isinstance(node.targets[0], gast.Name)
                      and node.targets[0].id in ctx.active}
    statements = {id(c): stmt for stmt in gast.walk(tree) if isinstance(stmt, gast.stmt)
                  for c in gast.walk(stmt) if isinstance(c, gast.Call)}
    guards: dict[int, list] = {}
    reads = Counter(n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
                    and isinstance(n.ctx, gast.Load))
    taking_back = []
    read_here = set(reads)
    for call in gast.walk(tree):  # (calls in 'if' tests and other expressions too)
        if not isinstance(call, gast.Call) or id(call) in differentiated \
                or adjoint_tape_op(call, ctx):
            continue  # differentiated: the callee's own transformation checks it
        node, r = statements.get(id(call), tree), _plain_callee(call, ctx)
        if r is None:
            _check_plain_constructor(call, node, ctx, tree)
            continue
        if getattr(call, "srcgrad_consumed", ()):
            taking_back.append(call)
        bound = A.bind_arguments(_param_names(r.obj), 0, call)
        varied = [(i, a) for i, a in bound or () if A.names_read(a) & ctx.varied]
        if not varied:
            continue
        try:
            callee = get_source(r.obj).tree
        except SrcgradError:
            continue
        mutated = mutated_parameters(callee)
        surely = mutated_parameters(callee, augmented=False)  # (p += ... alone: by value)
        names = _param_names(r.obj)
        whole = isinstance(node, (gast.Expr, gast.Assign)) and node.value is call
        handed = getattr(call, "srcgrad_consumed", frozenset())
        # an argument carrying no gradient may be given one: helper(state, x) storing x * 2
        # into state, which the function reads afterwards (the tape would not see it)
        inside = Counter(n.id for n in gast.walk(call) if isinstance(n, gast.Name)
                         and isinstance(n.ctx, gast.Load))
        read_elsewhere = {n for n, count in reads.items() if count > inside[n]}
        filled = [(i, a) for i, a in bound or () if (i, a) not in varied
                  and A.names_read(a) & read_elsewhere and not isinstance(a, gast.Constant)]
        outside = [what for name, what in _changed_outside(r.obj) if name in read_here]
        if outside:
            ctx.problem(node, f"{r.name}() changing {outside[0]} in place, which "
                              f"{ctx.fn.__name__}() reads, while it is passed "
                              f"differentiable values",
                        f"srcgrad does not follow what a helper changes outside its own "
                        f"variables and arguments: return the new value from "
                        f"{r.name}() and assign it.")
        gathered = _gathered_arguments(names, call, mutated)
        if any(A.names_read(a) & (ctx.varied | read_elsewhere) for a in gathered):
            through = f"*{names.vararg}" if names.vararg in mutated else \
                f"**{names.kwarg}" if names.kwarg in mutated else "an unpacking (*, **)"
            ctx.problem(node, f"{r.name}() changing in place an argument it receives through "
                              f"{through}, while differentiable values are involved",
                        f"Name the parameter in {r.name}()'s definition, or return the "
                        f"changed value and assign it.")
        for i, a in varied + filled:
            if i >= len(names) or names[i] not in mutated or names[i] in handed:
                continue  # (a new array, or a variable read no more: desugar.hand_over)
            what = (f"{r.name}() changing its differentiable argument '{names[i]}' in place"
                    if (i, a) in varied else
                    f"{r.name}() changing its argument '{names[i]}' in place while it is "
                    f"passed differentiable values")
            hint = ("Return the new value instead, or pass a copy." if (i, a) in varied else
                    f"Return the changed argument instead and assign it ({names[i]} = "
                    f"{r.name}({names[i]}, ...)), so that its gradient is followed.")
            hint = _aliasing_hint(a, bound, names, r.name) or hint
            if names[i] in surely or not (isinstance(a, gast.Name) or whole):
                ctx.problem(node, what, hint)
                continue
            # on a number, p *= 2 rebinds p: refused at run time for anything else
            if not isinstance(a, gast.Name):  # the call is the statement: its arguments
                guards.setdefault(id(node), []).extend(_hoist_arguments(call, ctx, node))
                a = dict(A.bind_arguments(names, 0, call))[i]
            guards.setdefault(id(node), []).append(A.expr_stmt(A.call(
                A.attr(ctx.rt, "refuse_mutable"), A.load(a.id),
                A.const(f"{ctx.user_location(node)}: {what} is not supported. {hint}")), at=node))
        guards.setdefault(id(node), []).extend(
            _method_guards(r, names, [(i, a) for i, a in varied + filled
                                      if i < len(names) and names[i] not in mutated], node, ctx))
    if guards:
        _insert_before(tree, guards)
    for call in taking_back:
        _run_as_python(call, ctx)


def _method_guards(r: Resolved, names, bound, at, ctx: Context) -> list:
    """``_rt.refuse_changing_method(arg, "set_w", ...)`` before a plain-run call of the
    helper ``r``, for each method it (or a helper it calls) calls on the parameter an
    argument of ``bound`` reaches: whether that method changes its object (a change Python
    makes and the tape never sees) depends on the argument's class, which the helper's
    module may not name (a class of another module, or one passed in), so the object's own
    type answers it at run time. A method called on an object the parameter's object holds
    (``m.sub.set_w(v)``, ``for s in ms: s.set_w(v)``) is asked of every object the argument
    reaches (refuse_changing_method_within)."""
    methods = methods_on_parameters(r.obj)
    out = []
    for i, arg in bound:
        if not A.pure_reference(arg):
            continue  # (a new object, Store(): nothing else holds what the method changes)
        for method, within in sorted(methods.get(names[i], ())):
            on = f"an object '{names[i]}' holds" if within else f"'{names[i]}'"
            message = (f"{ctx.user_location(at)}: {r.name}() calling '{method}(...)' on {on} "
                       f"(here '{to_source(arg).strip()}'), a method changing its object in "
                       f"place, with differentiable values, is not supported (in "
                       f"{ctx.fn.__name__}()): srcgrad does not follow a method's changes of "
                       f"self (the gradient through them would be lost). Write it as a "
                       f"function of the object (def {method}(m, ...): m.W = ...), whose "
                       f"changes srcgrad takes back at the call, or return the new value "
                       f"from {r.name}() and assign it.")
            check = "refuse_changing_method_within" if within else "refuse_changing_method"
            out.append(A.expr_stmt(A.call(A.attr(ctx.rt, check), copy.deepcopy(arg),
                                          A.const(method), A.const(message)), at=at))
    return out


def _aliasing_hint(arg, bound, names: list[str], callee: str) -> str | None:
    """What to do about an argument whose change a call site cannot take back (desugar.
    write_back) because Python's aliasing would show it where the rewrite cannot: an
    attribute (the object keeps the changed list after the call), or a variable passed
    twice (the helper sees one object through two parameters). None for other arguments."""
    if isinstance(arg, gast.Attribute):
        text = to_source(arg).strip()
        return (f"Python changes the object {text} in place, which outlives the call; srcgrad "
                f"cannot store into attributes. Copy it into a variable first (v = "
                f"list({text}) or {text}.copy()), pass that, and read v afterwards.")
    if isinstance(arg, gast.Name):
        twice = [names[i] for i, a in bound or () if isinstance(a, gast.Name)
                 and a.id == arg.id and i < len(names)]
        if len(twice) > 1:
            return (f"'{arg.id}' is passed as both {' and '.join(repr(n) for n in twice)}: "
                    f"{callee}() sees one object through both, which srcgrad follows only "
                    f"when {callee}() never binds either parameter anew ({twice[0]} = ...) "
                    f"nor reads one in a nested function or lambda. Pass it once, or pass "
                    f"a copy (list({arg.id}) or {arg.id}.copy()) where that is what you "
                    f"mean.")
    return None


def _plain_callee(call: gast.Call, ctx: Context) -> Resolved | None:
    """The user function ``call`` runs when it carries no gradient: the one it resolved to,
    or the function a closure's cell holds now (a 'dynamic' call; the closures one 'def'
    makes share its code, so what it changes in place is the same for each), or None."""
    r = ctx.resolved.get(id(call))
    if r is not None and r.kind == "dynamic" and isinstance(call.func, gast.Name) \
            and inspect.isfunction(ctx.closure.get(call.func.id)):
        r = Resolved("user", ctx.closure[call.func.id], r.name)
    return r if r is not None and r.kind == "user" and inspect.isfunction(r.obj) else None


def _run_as_python(call: gast.Call, ctx: Context) -> None:
    """A call carrying no gradient whose site hands arguments over (desugar.hand_over) or
    takes them back (desugar.write_back): ``_rt.plain_call(helper, (handed...), (taken
    back...), args...)`` runs the helper itself on copies of what is handed over, which it
    changes in place as Python would change the originals (those, or the arrays they hold,
    may be saved for the backward sweep), and returns those taken back after its result,
    as the helper's build for the call site would."""
    consumed = call.srcgrad_consumed
    handed = sorted(n for n in consumed if n.isidentifier())
    names = [gast.Tuple(elts=[A.const(n) for n in group], ctx=gast.Load())
             for group in (handed, written_back(consumed))]
    call.args = [call.func] + names + call.args
    call.func = A.located(A.attr(ctx.rt, "plain_call"), call)
    del call.srcgrad_consumed
    ctx.resolved[id(call)] = Resolved("nondiff", runtime.plain_call, "plain_call")


def _hoist_arguments(call, ctx: Context, at) -> list:
    """``t1 = a1; t2 = a2...`` for the arguments of ``call`` that are not names yet, which
    then reads the temporaries; in order, so each is evaluated when it was."""
    out = []
    for holder, attr in [(call.args, i) for i in range(len(call.args))] + \
            [(k, "value") for k in call.keywords]:
        value = holder[attr] if isinstance(holder, list) else getattr(holder, attr)
        if isinstance(value, (gast.Name, gast.Constant)):
            continue
        tmp = ctx.namer.fresh()
        out.append(A.assign(tmp, value, at=at))
        if isinstance(holder, list):
            holder[attr] = A.load(tmp)
        else:
            setattr(holder, attr, A.load(tmp))
    return out


def _insert_before(tree, guards: dict) -> None:
    """Put ``guards[id(statement)]`` before each such statement, in every block of ``tree``."""
    for node in gast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and any(id(s) in guards for s in block):
                setattr(node, field, [g for s in block for g in guards.pop(id(s), []) + [s]])


_OUTSIDE: dict = {}


def _changed_outside(fn, depth: int = 0) -> list[tuple[str, str]]:
    """What ``fn`` (or a helper it calls by a global name) changes in place among the
    objects it reads from its globals or closure (``G[0] = v``, ``LOG.append(v)``, ``b = G;
    b[0] = v``) or rebinds as a ``global``: ``[("G", "the global 'G'"), ...]``, once per
    code object. Modules, functions and classes do not count (``np.random.seed(0)``)."""
    code = fn.__code__
    known = _OUTSIDE.get(code)
    if known is not None:
        return known
    _OUTSIDE[code] = []  # (recursion)
    tree = source_tree(fn)
    if tree is None:
        return []
    cells = {name: c.cell_contents for name, c in zip(code.co_freevars, fn.__closure__ or ())
             if _cell_bound(c)}
    declared = {n for node in gast.walk(tree) if isinstance(node, (gast.Global, gast.Nonlocal))
                for n in node.names}
    local = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
             and isinstance(n.ctx, (gast.Store, gast.Del, gast.Param))} - declared
    free = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)} - local
    found = []
    for name in sorted(free):
        value = cells[name] if name in cells else fn.__globals__.get(name, None)
        data = not isinstance(value, (types.ModuleType, types.FunctionType, type,
                                      types.BuiltinFunctionType, numbers.Number, str, bytes))
        where = "the closure variable" if name in cells else "the global"
        if name in declared and any(isinstance(n, gast.Name) and n.id == name and isinstance(
                n.ctx, gast.Store) for n in gast.walk(tree)):
            found.append((name, f"{where} '{name}' (rebound)"))
        elif data and value is not None and object_changes(tree, {name}):
            found.append((name, f"{where} '{name}'"))
    for _, callee in user_calls(fn, tree) if depth < 8 and not found else ():
        found += [(name, f"{what} (in {callee.__name__}())")
                  for name, what in _changed_outside(callee, depth + 1)[:1]]
    _OUTSIDE[code] = found
    return found


def _check_plain_constructor(call: gast.Call, node, ctx: Context, fn_tree) -> None:
    """``Registry(x * 2.0)`` whose object carries no gradient (it is not used) runs as plain
    Python: a problem when its ``__init__`` changes, in place, a class of the user's that
    the function reads (``Registry.items.append(self)``, then ``for r in Registry.items``):
    the gradient through what it holds would be lost, as it was, silently, before session
    34. (A constructor whose object is used is differentiated, and refused there.)"""
    r = ctx.resolved.get(id(call))
    init = getattr(r.obj, "__init__", None) if r is not None and isinstance(r.obj, type) \
        else None
    if not isinstance(init, types.FunctionType) or not any(
            A.names_read(a) & ctx.varied for a in [*call.args, *call.keywords]):
        return
    tree = source_tree(init)
    if tree is None:
        return
    called = {id(c.func) for c in gast.walk(fn_tree) if isinstance(c, gast.Call)}
    read_here = {n.id for n in gast.walk(fn_tree) if isinstance(n, gast.Name)
                 and isinstance(n.ctx, gast.Load) and id(n) not in called}
    local = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
             and not isinstance(n.ctx, gast.Load)}
    for name in sorted({n.id for n in gast.walk(tree) if isinstance(n, gast.Name)} - local):
        value = init.__globals__.get(name)
        if name in read_here and isinstance(value, type) and not library_file(
                inspect.getsourcefile(value) or "<srcgrad>") and object_changes(tree, {name}):
            ctx.problem(node, f"{r.name}() changing the class '{name}' in place, which "
                              f"{ctx.fn.__name__}() reads, while it is passed differentiable "
                              f"values",
                        "srcgrad does not follow what a constructor whose object is unused "
                        "changes outside the object: keep the objects in a list of the "
                        "function's own and read that.")
            return


def _cell_bound(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _gathered_arguments(params, call, changed) -> list:
    """The arguments of ``call`` that reach a ``*args`` or ``**kwargs`` parameter the callee
    changes in place (``changed``), or any parameter through an unpacking."""
    unpacked = any(isinstance(a, gast.Starred) for a in call.args) \
        or any(k.arg is None for k in call.keywords)
    out = []
    if unpacked and changed or params.vararg in changed:
        out += call.args[0 if unpacked else params.positional:]
    if unpacked and changed or params.kwarg in changed:
        out += [k.value for k in call.keywords if k.arg is None or k.arg not in params]
    return out


def _param_names(fn) -> list[str]:
    return A.parameters_of(fn)


def check_no_lost_activity(tree: gast.FunctionDef, ctx: Context) -> None:
    """Record a problem for each assignment whose differentiable operands the generators
    would give no derivative to: a subscript of an inactive object by a differentiable index,
    an operator without a rule, an expression kind they do not differentiate."""
    check_plain_calls(tree, ctx)
    for node in gast.walk(tree):
        if not (isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name)
                and node.targets[0].id in ctx.active):
            continue
        value = node.value
        if not A.names_read(value) & ctx.active or isinstance(value, _NO_DERIVATIVE):
            continue
        if isinstance(value, gast.Subscript) and not A.names_read(value.value) & ctx.active \
                and not ctx.own_code:
            base = value.value
            what = f"'{base.id}'" if isinstance(base, gast.Name) and not base.id.startswith(
                "_") else "an object that carries no gradient"
            ctx.problem(node, f"indexing {what} with a differentiable value",
                        "An index carries no gradient: compute it from values that do not "
                        "depend on the differentiated input, or call a function with a "
                        "derivative rule instead.")
        elif isinstance(value, gast.BinOp) and type(value.op) not in BINOPS or isinstance(
                value, gast.UnaryOp) and not isinstance(value.op, gast.Not) \
                and type(value.op) not in UNARYOPS:
            ctx.problem(node, f"the operator '{_symbol(value.op)}' on a differentiable "
                              f"value", "It has no derivative rule.")
        elif isinstance(value, gast.BinOp) and _foreign_operand(value, ctx):
            ctx.problem(node, f"the operator '{_symbol(value.op)}' between a "
                              f"differentiable value and a {_foreign_operand(value, ctx)}",
                        "Its derivative rule is written for numbers and arrays; convert the "
                        "operand (np.asarray(...), .to_numpy()) or compute with arrays.")
        elif not isinstance(value, _DIFFERENTIATED):
            ctx.problem(node, f"{type(value).__name__} of a differentiable value",
                        "Compute it in plain statements.")


_SYMBOLS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//",
            gast.Mod: "%", gast.Pow: "**", gast.MatMult: "@", gast.BitAnd: "&", gast.BitOr: "|",
            gast.BitXor: "^", gast.LShift: "<<", gast.RShift: ">>", gast.Invert: "~",
            gast.USub: "-", gast.UAdd: "+"}


def _symbol(op) -> str:
    return _SYMBOLS.get(type(op), type(op).__name__)


_NUMERIC = (numbers.Number, np.generic, list, tuple, str, bytes, type(None))


def _foreign_operand(value: gast.BinOp, ctx: Context) -> str | None:
    """The type name of an operand of ``value`` that is a global or closure value of a type
    the operator rules do not describe (an np.matrix, a masked array, pandas, a user class
    with its own operators), read without recording an assumption; else None."""
    for operand in (value.left, value.right):
        if not isinstance(operand, gast.Name) or operand.id in ctx.local_names:
            continue
        if operand.id in ctx.closure:
            obj = ctx.closure[operand.id]
        elif operand.id in ctx.globals:
            obj = ctx.globals[operand.id]
        else:
            continue
        if isinstance(obj, _NUMERIC) or type(obj) is np.ndarray or isinstance(obj, np.memmap):
            continue
        if isinstance(obj, (types.ModuleType, type)) or callable(obj):
            continue
        return type(obj).__name__
    return None


def _never_called(tree) -> set[int]:
    """ids of the nested functions and lambdas bound to a name nothing reads (a generated
    sweep keeps the user's unused lambda, then deletes it): their bodies never run, so
    nothing in them is differentiated. None when the code could read names indirectly."""
    checked = {id(n) for c in gast.walk(tree) if isinstance(c, gast.Call)
               and isinstance(c.func, gast.Attribute) and c.func.attr == "refuse_shared_locals"
               for a in c.args for n in gast.walk(a)}  # (compares arrays, calls nothing)
    loaded = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
              and isinstance(n.ctx, gast.Load) and id(n) not in checked}
    loaded |= {name for n in gast.walk(tree) if isinstance(n, (gast.Global, gast.Nonlocal))
               for name in n.names}  # (bound there, others may call it)
    if loaded & {"locals", "vars", "eval", "exec", "globals"}:
        return set()
    top = tree.body[0] if isinstance(tree, gast.Module) else tree
    dead = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and isinstance(node.value, gast.Lambda) and all(
                isinstance(t, gast.Name) and t.id not in loaded for t in node.targets):
            dead.add(id(node.value))
        elif isinstance(node, gast.FunctionDef) and node is not top \
                and node.name not in loaded and not node.decorator_list:
            dead.add(id(node))
    return dead


def _walk_live(tree, dead: set[int]):
    """``gast.walk(tree)`` without the nodes inside the functions ``dead`` names."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if id(node) not in dead:
            todo.extend(gast.iter_child_nodes(node))


def check_calls(tree, ctx: Context, get_adjoint) -> dict:
    """Map each active call of a user function to its callee's adjoint (``get_adjoint(fn,
    call)``, specialized on the arguments active at that call); raise for calls nothing can
    differentiate."""
    user_calls = {}
    # (a local def or lambda is differentiated on its own when called, with its own routing
    # of spread calls: its body is not this function's to check)
    top = tree.body[0] if isinstance(tree, gast.Module) else tree
    nested = {id(n) for n in gast.walk(tree) if isinstance(n, (gast.FunctionDef, gast.Lambda))
              and n is not top}
    for node in _walk_live(tree, nested):
        if isinstance(node, gast.Call):
            spread = [a.value for a in node.args if isinstance(a, gast.Starred)]
            spread += [k.value for k in node.keywords if k.arg is None]
            if any(A.names_read(v) & ctx.active for v in spread):
                ctx.problem(node, "'*args' or '**kwargs' unpacking of differentiable values "
                                  "in a call", "Pass each argument explicitly.")
    check_no_lost_activity(tree, ctx)
    for stmt, call, r in active_calls(tree, ctx):
        if r.kind in ("rule", "method", "nondiff"):
            continue
        if is_tape_op(call, "pop", ctx) or adjoint_tape_op(call, ctx):
            continue  # generated code's tapes: the generators handle them
        if r.kind == "user" and _redispatched(r.obj):
            user_calls[id(call)] = DynamicCall("call")
            continue
        if r.kind == "user":
            try:
                user_calls[id(call)] = get_adjoint(r.obj, call)
            except SourceUnavailableError:
                raise MissingRuleError(r.name, ctx.user_location(stmt)) from None
            except SrcgradError as e:  # refused inside the callee: say how it was reached
                e.reached_from(ctx.user_location(stmt), not library_file(ctx.src.filename))
                raise
            continue
        if r.kind == "dynamic" or (r.kind in ("unknown", "attribute") and _local_callee(
                call.func, ctx)):
            user_calls[id(call)] = DynamicCall(
                "method" if isinstance(call.func, gast.Attribute) else "call")
            continue
        if r.kind == "class" and getattr(r.obj, "__module__", None) == "itertools":
            ctx.problem(stmt, f"an itertools.{r.name} iterator over differentiable values "
                              f"that is not consumed at once",
                        f"Pass it straight to sum/list/tuple/... or a for loop, or make a "
                        f"list of it where it is made: list(itertools.{r.name}(...)).")
            continue
        if r.kind == "class" and r.obj is super:  # (super(__class__, self): desugar)
            ctx.problem(stmt, "calling a method of the parent class through super() on an "
                              "object with differentiable values",
                        "Call the parent's method as a function of the object: "
                        "Base.method(self, ...).")
            continue
        if r.kind == "class":
            ctx.problem(stmt, f"constructing '{r.name}' from differentiable values",
                        "Build a tuple, list or dict instead, or register a rule.")
            continue
        raise MissingRuleError(r.name, ctx.user_location(stmt))
    ctx.raise_problems()
    return user_calls
