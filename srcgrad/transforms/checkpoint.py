"""Guarantees afterwards: no loop marked ``checkpointed(...)``/``checkpointed_while(...)``
remains; each became a call of the checkpointed-loop primitive (srcgrad/checkpoint.py) on a
nested function of the loop body.

The loop ``for i in checkpointed(range(n), K): <body>`` becomes::

    def f_loop(i, x, y, a):          # (index, loop-carried state, read-only inputs)
        <body>
        return (x, y)                # the new state, then values read only after the loop
    x, y, _run = checkpointed.loop(_spec, f_loop, range(n), K, (x, y), (a,))

Loop-carried names are those the body assigns and reads before assigning (or the ``while``
test reads); the names it assigns that are read only after the loop come back from the last
step; inputs are the function's names the body reads without assigning. The primitive runs
the body untaped and keeps at most K states; its derivative rule replays the body from them.
"""
from __future__ import annotations

import copy
from typing import NamedTuple

import gast

from .. import checkpoint
from ..errors import SrcgradError
from ..source import FunctionSource, get_source
from . import astutil as A
from .activity import mutated_parameters
from .context import Context
from .resolve import known_value, static_value

# methods that change their object in place: on a checkpointed state they would change the
# stored checkpoint too
_MUTATING = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
             "update", "setdefault", "popitem", "fill", "resize", "put", "itemset",
             "setflags", "partition", "add", "discard"}


def lower_checkpointed(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Replace each marked loop of ``tree`` (not of its nested functions) by the primitive."""
    if not any(_marker(n, ctx) for n in A.own_nodes(tree) if isinstance(n, (gast.For,
                                                                          gast.While))):
        return tree
    _Lowering(tree, ctx).block_of(tree)
    return tree


def _marker(loop, ctx: Context):
    """The marker call of a marked loop (``checkpointed(...)`` as a ``for`` loop's iterable,
    ``checkpointed_while(...)`` as a ``while`` loop's test), or None."""
    call = loop.iter if isinstance(loop, gast.For) else loop.test
    if not isinstance(call, gast.Call):
        return None
    obj = known_value(call.func, ctx)
    if obj is None:
        return None
    want = checkpoint.checkpointed if isinstance(loop, gast.For) \
        else checkpoint.checkpointed_while
    other = checkpoint.checkpointed_while if isinstance(loop, gast.For) \
        else checkpoint.checkpointed
    if obj is other:
        kind = "while" if isinstance(loop, gast.For) else "for"
        ctx.problem(loop, f"checkpointed{'_while' if kind == 'while' else ''}(...) on a "
                          f"'{'for' if kind == 'while' else 'while'}' loop",
                    "Use checkpointed(iterable, K) in a for loop and "
                    "checkpointed_while(condition, K) in a while loop.")
        return None
    return call if obj is want else None


class _Lowering:
    def __init__(self, tree: gast.FunctionDef, ctx: Context):
        self.tree, self.ctx = tree, ctx

    def block_of(self, node) -> None:
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list):
                setattr(node, name, self.block(stmts))
        for handler in getattr(node, "handlers", []) or []:
            self.block_of(handler)
        for case in getattr(node, "cases", []) or []:
            self.block_of(case)

    def block(self, stmts: list) -> list:
        out = []
        for stmt in stmts:
            marker = _marker(stmt, self.ctx) if isinstance(stmt, (gast.For, gast.While)) \
                else None
            if marker is not None:
                out.extend(self.lower(stmt, marker))
            else:
                if not isinstance(stmt, (gast.FunctionDef, gast.Lambda)):
                    self.block_of(stmt)
                out.append(stmt)
        return out

    def lower(self, loop, marker: gast.Call) -> list:
        ctx = self.ctx
        is_for = isinstance(loop, gast.For)
        if not _check_loop(loop, marker, ctx):
            return [loop]
        flow = loop_names(loop, self.tree, ctx)
        if _mutations(loop, flow, ctx):
            return [loop]
        base = f"{ctx.fn.__name__.replace('<lambda>', 'lambda')}_loop"
        body_name = ctx.namer.unique(base)
        params = []
        pre = []
        if is_for:
            if isinstance(loop.target, gast.Name):
                params.append(loop.target.id)
            else:
                item = ctx.namer.unique("_item")
                params.append(item)
                pre.append(A.assign(copy.deepcopy(loop.target), A.load(item), at=loop))
        params += list(flow.state) + list(flow.inputs)
        results = gast.Tuple(elts=[A.load(n) for n in flow.state + flow.outputs],
                             ctx=gast.Load())
        body_def = _function(body_name, params, pre + [copy.deepcopy(s) for s in loop.body]
                             + [A.located(gast.Return(value=results), loop)], loop)
        stmts = [body_def]
        spec = checkpoint.LoopSpec(kind="for" if is_for else "while",
                                   location=ctx.user_location(loop), state=flow.state,
                                   outputs=flow.outputs, inputs=flow.inputs)
        spec.body_source = self.source_of(body_def)
        spec_name = ctx.helper(spec, "_checkpointed")
        functions = [A.load(spec_name), A.load(body_name)]
        if is_for:
            items = copy.deepcopy(marker.args[0])
        else:
            cond_name = ctx.namer.unique(f"{base}_test")
            cond_def = _function(cond_name, list(flow.state) + list(flow.inputs),
                                 [A.located(gast.Return(value=copy.deepcopy(marker.args[0])),
                                            loop)], loop)
            spec.cond_source = self.source_of(cond_def)
            stmts.append(cond_def)
            functions.append(A.load(cond_name))
            items = A.const(None)
        # (the spec and the local functions in one tuple: the backward sweep gets it saved)
        call = A.call(A.attr(copy.deepcopy(marker.func), "loop"),
                      gast.Tuple(elts=functions, ctx=gast.Load()), items, _k_argument(marker),
                      gast.Tuple(elts=[A.load(n) for n in flow.state], ctx=gast.Load()),
                      gast.Tuple(elts=[A.load(n) for n in flow.inputs], ctx=gast.Load()))
        run = ctx.namer.unique("_run")
        targets = gast.Tuple(elts=[A.store(n) for n in flow.state + flow.outputs]
                             + [A.store(run)], ctx=gast.Store())
        stmts.append(A.assign(targets, call, at=loop))
        stmts.extend(self.block(loop.orelse))  # (no break: the else part always runs)
        for s in stmts:
            _locate_all(s, loop)
        return stmts

    def source_of(self, fdef: gast.FunctionDef) -> FunctionSource:
        src = self.ctx.src
        return FunctionSource(copy.deepcopy(fdef), src.filename, src.first_line, src.lines)


def _k_argument(marker: gast.Call):
    if len(marker.args) > 1:
        return copy.deepcopy(marker.args[1])
    for kw in marker.keywords:
        if kw.arg == "checkpoints":
            return copy.deepcopy(kw.value)
    return A.const(None)


def _function(name: str, params: list[str], body: list, at) -> gast.FunctionDef:
    return A.located(A.function_def(name, A.parameters(params), body), at)


def _locate_all(node, at) -> None:
    for n in gast.walk(node):
        if isinstance(n, (gast.stmt, gast.expr)) and getattr(n, "lineno", None) is None:
            gast.copy_location(n, at)


def _check_loop(loop, marker: gast.Call, ctx: Context) -> bool:
    """Record a problem for each construct a checkpointed loop does not support."""
    ok = True
    if marker.keywords and any(k.arg not in ("checkpoints",) for k in marker.keywords) or \
            not marker.args or len(marker.args) > 2 or any(
            isinstance(a, gast.Starred) for a in marker.args):
        ctx.problem(loop, "this form of the checkpointed(...) marker",
                    "Write checkpointed(iterable, K) or checkpointed_while(condition, K).")
        ok = False
    for node in _walk_loop_body(loop):
        what = _exit_kind(node)
        if what:
            ctx.problem(node, f"'{what}' inside a checkpointed loop",
                        "Compute a flag and test it in the loop condition "
                        "(checkpointed_while(not done and ..., K)), or move the code out of "
                        "the checkpointed loop.")
            ok = False
        elif isinstance(node, (gast.Nonlocal, gast.Global)):
            ctx.problem(node, f"'{type(node).__name__.lower()}' inside a checkpointed loop",
                        "Pass the value in and assign it after the loop.")
            ok = False
        elif isinstance(node, (gast.Yield, gast.YieldFrom, gast.Await)):
            ctx.problem(node, "'yield' inside a checkpointed loop",
                        "Collect the values in the loop state instead.")
            ok = False
        elif isinstance(node, (gast.For, gast.While)) and _marker(node, ctx) is not None:
            ctx.problem(node, "a checkpointed loop inside another checkpointed loop",
                        "Mark only one of the two loops.")
            ok = False
    return ok


def _walk_loop_body(loop):
    """Nodes of the loop's body and test, outside nested functions; each with whether it
    sits in an inner loop (where break and continue are the inner loop's)."""
    stack = [(s, False) for s in loop.body]
    while stack:
        node, inner = stack.pop()
        if isinstance(node, (gast.Break, gast.Continue)) and inner:
            continue
        yield node
        for child in gast.iter_child_nodes(node):
            if isinstance(child, (gast.FunctionDef, gast.Lambda)):
                continue
            # (break and continue in an inner loop's body are its own, not in its else part)
            in_body = isinstance(node, (gast.For, gast.While)) and any(
                child is s for s in node.body)
            stack.append((child, inner or in_body))


def _exit_kind(node) -> str | None:
    if isinstance(node, gast.Break):
        return "break"
    if isinstance(node, gast.Continue):
        return "continue"
    if isinstance(node, gast.Return):
        return "return"
    return None


# -- the names that flow through a loop ----------------------------------------------------
class LoopNames(NamedTuple):
    """Loop-carried state, outputs read only after the loop, and read-only inputs."""

    state: tuple
    outputs: tuple
    inputs: tuple


def loop_names(loop, tree: gast.FunctionDef, ctx: Context) -> LoopNames:
    """The names flowing through ``loop`` (a statement of ``tree``)."""
    assigned = _assigned(loop.body)
    targets = _target_names(loop.target) if isinstance(loop, gast.For) else set()
    exposed = exposed_reads(loop.body, set(targets))
    test_reads = A.names_read(loop.test) if isinstance(loop, gast.While) else set()
    outside = _reads_outside(tree, loop)
    state = sorted((assigned - targets) & (exposed | test_reads))
    outputs = sorted(((assigned | targets) & outside) - set(state))
    reads = _all_reads(loop.body) | test_reads
    function_names = ctx.local_names | set(ctx.params) | set(ctx.closure)
    inputs = sorted((reads - assigned - targets) & function_names)
    return LoopNames(tuple(state), tuple(outputs), tuple(inputs))


def _target_names(target) -> set[str]:
    return {n.id for n in gast.walk(target) if isinstance(n, gast.Name)}


def _assigned(stmts) -> set[str]:
    out = set()
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            out.add(node.id)
        elif isinstance(node, (gast.Import, gast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        if isinstance(node, gast.FunctionDef):
            out.add(node.name)
            continue
        if not isinstance(node, gast.Lambda):
            stack.extend(gast.iter_child_nodes(node))
    return out


def _all_reads(stmts) -> set[str]:
    """Names read by the statements, nested functions included (their free names)."""
    out = set()
    for stmt in stmts:
        out |= A.names_read(stmt)
    return out


def _reads_outside(tree, loop) -> set[str]:
    """Names read anywhere in the function but in ``loop`` (conservatively: a read before
    the loop in an enclosing loop counts, since it sees the value of the last iteration)."""
    out = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if node is loop:
            continue
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            out.add(node.id)
        stack.extend(gast.iter_child_nodes(node))
    return out


def exposed_reads(stmts, defined: set[str]) -> set[str]:
    """Names the statements may read before assigning them (upward-exposed uses), given the
    names ``defined`` on entry."""
    exposed: set[str] = set()
    _exposed_block(stmts, set(defined), exposed)
    return exposed


def _exposed_block(stmts, defined: set, exposed: set) -> set:
    for stmt in stmts:
        defined = _exposed_stmt(stmt, defined, exposed)
    return defined


def _reads_of(node, defined: set, exposed: set) -> None:
    exposed |= A.names_read(node) - defined


def _exposed_stmt(stmt, defined: set, exposed: set) -> set:
    if isinstance(stmt, gast.If):
        _reads_of(stmt.test, defined, exposed)
        a = _exposed_block(stmt.body, set(defined), exposed)
        b = _exposed_block(stmt.orelse, set(defined), exposed)
        return a & b
    if isinstance(stmt, (gast.For, gast.While)):
        head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
        _reads_of(head, defined, exposed)
        inner = set(defined) | (_target_names(stmt.target) if isinstance(stmt, gast.For)
                                else set())
        # a read before its assignment in the body sees the previous iteration's value,
        # which on the first iteration is the one from before the loop
        _exposed_block(stmt.body, inner, exposed)
        _exposed_block(stmt.orelse, set(defined), exposed)
        return defined
    if isinstance(stmt, gast.Assign):
        _reads_of(stmt.value, defined, exposed)
        for t in stmt.targets:
            if not isinstance(t, gast.Name):
                _reads_of(t, defined, exposed)  # x[i] = v reads x
        return defined | {n.id for t in stmt.targets for n in gast.walk(t)
                          if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    if isinstance(stmt, gast.AugAssign):
        _reads_of(stmt.value, defined, exposed)
        exposed |= {n.id for n in gast.walk(stmt.target) if isinstance(n, gast.Name)} - defined
        return defined | ({stmt.target.id} if isinstance(stmt.target, gast.Name) else set())
    if isinstance(stmt, gast.AnnAssign):
        if stmt.value is not None:
            _reads_of(stmt.value, defined, exposed)
            return defined | _target_names(stmt.target)
        return defined
    if isinstance(stmt, gast.FunctionDef):
        _reads_of(stmt, defined | {stmt.name}, exposed)
        return defined | {stmt.name}
    if isinstance(stmt, gast.With):
        for item in stmt.items:
            _reads_of(item.context_expr, defined, exposed)
            if item.optional_vars is not None:
                defined = defined | _target_names(item.optional_vars)
        return _exposed_block(stmt.body, set(defined), exposed)
    if hasattr(gast, "Match") and isinstance(stmt, gast.Match):
        _reads_of(stmt.subject, defined, exposed)
        after = None
        for case in stmt.cases:
            bound = {n for n in _pattern_names(case.pattern)}
            inner = set(defined) | bound
            if case.guard is not None:
                _reads_of(case.guard, inner, exposed)
            result = _exposed_block(case.body, inner, exposed)
            after = result if after is None else after & result
        irrefutable = stmt.cases and isinstance(stmt.cases[-1].pattern, gast.MatchAs) \
            and stmt.cases[-1].pattern.pattern is None
        return after if irrefutable and after is not None else defined
    if isinstance(stmt, gast.Try) or hasattr(stmt, "body"):
        # conservatively: every read counts, nothing is surely assigned
        for child in gast.iter_child_nodes(stmt):
            _reads_of(child, defined, exposed)
        return defined
    _reads_of(stmt, defined, exposed)
    return defined | {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name)
                      and isinstance(n.ctx, gast.Store)}


def _pattern_names(pattern) -> set[str]:
    """Names a match pattern binds (``case Point(x=a) as p``: a, p)."""
    out = set()
    for node in gast.walk(pattern):
        for field in ("name", "rest"):
            value = getattr(node, field, None)
            if isinstance(value, str):
                out.add(value)
    return out


def _mutations(loop, flow: LoopNames, ctx: Context) -> bool:
    """Record a problem for each in-place change of a loop-carried value or input that the
    body has not rebound before (it would change a stored checkpoint too), directly or by a
    function it passes the value to; True if any."""
    found = False
    defined: set = set()
    for stmt in loop.body:
        watched = set(flow.inputs) | (set(flow.state) - defined)
        found |= _mutations_in(stmt, watched, ctx)
        found |= _mutating_calls(stmt, watched, ctx)
        defined = _exposed_stmt(stmt, defined, set())
    return found


def _mutating_calls(stmt, watched: set, ctx: Context) -> bool:
    """Calls of the user's functions that change an argument in ``watched`` in place."""
    found = False
    for node in _walk_loop_body(gast.While(test=None, body=[stmt], orelse=[])):
        if not isinstance(node, gast.Call):
            continue
        passed = [(i, a.id) for i, a in enumerate(node.args)
                  if isinstance(a, gast.Name) and a.id in watched]
        passed += [(k.arg, k.value.id) for k in node.keywords
                   if isinstance(k.value, gast.Name) and k.value.id in watched]
        if not passed:
            continue
        try:
            fn = static_value(node.func, ctx)
            code = fn.__code__
            mutated = mutated_parameters(get_source(fn).tree)
        except (KeyError, AttributeError, TypeError, SrcgradError):
            continue  # not a Python function whose source srcgrad reads (a rule, a builtin)
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        for where, name in passed:
            param = names[where] if isinstance(where, int) and where < len(names) else where
            if param in mutated:
                ctx.problem(node, f"{getattr(fn, '__name__', 'a function')}() changing "
                                  f"'{name}' in place inside a checkpointed loop",
                            "The loop is replayed from stored states: return the new value "
                            f"and assign it ({name} = ...) instead.")
                found = True
    return found


def _mutations_in(stmt, watched: set, ctx: Context) -> bool:
    found = False
    for node in _walk_loop_body(gast.While(test=None, body=[stmt], orelse=[])):
        root = None
        if isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            continue  # (x += v on an array: the primitive copies the states it stores)
        if isinstance(node, gast.AugAssign):
            root = _root(node.target)
        elif isinstance(node, (gast.Assign, gast.Delete)):
            roots = [_root(t) for t in node.targets
                     if isinstance(t, (gast.Subscript, gast.Attribute))]
            root = next((r for r in roots if r in watched), None)
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                and node.func.attr in _MUTATING and isinstance(node.func.value, gast.Name):
            root = node.func.value.id
        if root is not None and root in watched:
            ctx.problem(node, f"changing '{root}' in place inside a checkpointed loop",
                        "A stored checkpoint would change with it: build a new value "
                        f"({root} = np.where(...), or {root} = {root}.copy() first) instead.")
            found = True
    return found


def _root(target) -> str | None:
    while isinstance(target, (gast.Subscript, gast.Attribute)):
        target = target.value
    return target.id if isinstance(target, gast.Name) else None


