"""Guarantees afterwards: a generated gradient wrapper (``value, saved = f_fwd(...); grads =
f_bwd(saved, seed)``) is one function holding the statements of the sweeps it calls and of
the helper sweeps those call, with the tuples they pass each other taken apart into names.

Differentiated again (``grad`` called inside differentiated code, issue 9), the wrapper's
sweeps are then one function to the transformation instead of a chain of generated
functions, each called with a tuple it packs and the next one unpacks, each fetched and
differentiated on its own: the transformation sees which saved values the inner backward
sweep reads, and differentiates straight-line code.

What is inlined is chosen by the caller (``inlinable``: a callee object and the sweep
attribute, or a function bound to a name, to its parsed definition and the names its factory
binds). A sweep is inlined only when its body is plain statements ending in its one
``return``: no nested function, lambda, class, ``global``/``nonlocal`` or generator. Its
parameters become assignments from the call's arguments (evaluated in the same order, before
the body, as a call would), every local is renamed apart (keeping its name as a prefix: the
passes recognise a sweep's tape by its ``_tape`` prefix), the names its factory binds get the
merged factory's names (one per object), and ``del`` statements are dropped (they only free
memory early; the transformation of the whole function places its own).

A tuple display assigned once at the function's top level and read only by unpacking, by
constant subscripts or by being copied into a name assigned once at the top level is taken
apart: each item is assigned (in order) to a name of its own and the readers read those.
Copies of such names into names assigned once are propagated, and copies nobody reads are
dropped; so is a ``densify`` of a value ``densify`` made for the same argument (an inlined
backward sweep's densified gradient, densified again by its caller: densify is idempotent). Only the top level is touched: a name assigned there once holds one value from that
point on, which is what makes replacing a read by the value's other name sound.
"""
from __future__ import annotations

__all__ = ["Sweep", "flatten_wrapper", "origin_lines"]

import ast
import copy
from typing import Callable, NamedTuple

from .. import runtime


class Sweep(NamedTuple):
    """A generated sweep to inline: its definition and the objects its factory binds."""

    definition: ast.FunctionDef
    helpers: dict  # name the definition reads -> the object bound to it
    free: frozenset  # the other names it reads (globals, builtins)
    key: object  # identifies the sweep (no sweep is inlined into itself)
    filename: str  # the generated file ``definition``'s line numbers are lines of


# what makes a sweep's body more than plain statements of one scope
_OPAQUE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Global,
           ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await, ast.Import, ast.ImportFrom,
           ast.AsyncFor, ast.AsyncWith)

STATEMENT_LIMIT = 600  # a larger flattened wrapper is not made (its transformation would be slow)


class _Flattener:
    def __init__(self, inlinable: Callable, taken: set[str], helpers: dict):
        self.inlinable = inlinable
        self.taken = set(taken)  # every name the merged function or its globals use
        self.made: set[str] = set(taken)  # the names of the merged function's locals, helpers
        self.helpers = helpers  # merged factory name -> object
        self.statements = 0
        self.inlined = 0
        # id(statement) -> (statement, (generated file, function, line) it comes from); the
        # statement is held so that its id is not reused
        self.origins: dict = {}

    def fresh(self, base: str) -> str:
        k = 1
        while f"{base}_i{k}" in self.taken:
            k += 1
        name = f"{base}_i{k}"
        self.taken.add(name)
        self.made.add(name)
        return name

    def helper_name(self, name: str, obj) -> str:
        for known, value in self.helpers.items():
            if value is obj:
                return known
        merged = name if name not in self.taken else self.fresh(name)
        self.taken.add(merged)
        self.made.add(merged)
        self.helpers[merged] = obj
        return merged

    def expand(self, body: list, bound: dict, stack: tuple) -> list | None:
        """``body`` with every inlinable sweep call replaced by the sweep's statements;
        ``bound``: the objects the names of this body's factory are bound to."""
        out = []
        for stmt in body:
            inlined = self.inline_statement(stmt, bound, stack)
            if inlined is None:
                return None
            out.extend(inlined)
        return out

    def inline_statement(self, stmt, bound: dict, stack: tuple) -> list | None:
        call = None
        if isinstance(stmt, (ast.Assign, ast.Expr)) and isinstance(stmt.value, ast.Call):
            call = stmt.value
        sweep = self.sweep_of(call, bound) if call is not None else None
        if sweep is not None and sweep.key not in stack:
            inlined = self.inline_call(sweep, call, stack)
            if inlined is not None:
                stmts, result = inlined
                if isinstance(stmt, ast.Assign):
                    return stmts + [ast.Assign(targets=stmt.targets, value=result)]
                return stmts
        # statements holding blocks: expand the blocks
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                expanded = self.expand(block, bound, stack)
                if expanded is None:
                    return None
                setattr(stmt, field, expanded)
        for handler in getattr(stmt, "handlers", ()):
            expanded = self.expand(handler.body, bound, stack)
            if expanded is None:
                return None
            handler.body = expanded
        return [stmt]

    def sweep_of(self, call: ast.Call, bound: dict) -> Sweep | None:
        if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        func = call.func
        if isinstance(func, ast.Name) and func.id in bound:
            return self.inlinable(bound[func.id], None)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in bound:
            return self.inlinable(bound[func.value.id], func.attr)
        return None

    def inline_call(self, sweep: Sweep, call: ast.Call, stack: tuple):
        """``(statements, result expression)`` of ``sweep`` called by ``call``."""
        if sweep.free & self.made:
            return None  # (a global it reads is a name the merged function gave another value)
        self.taken |= sweep.free
        fdef = copy.deepcopy(sweep.definition)
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults \
                or len(args.args) != len(call.args):
            return None
        body = [s for s in fdef.body if not (isinstance(s, ast.Expr)
                                             and isinstance(s.value, ast.Constant))]
        if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
            return None
        nodes = [n for s in body for n in ast.walk(s)]
        if any(isinstance(n, _OPAQUE) for n in nodes) \
                or sum(isinstance(n, ast.Return) for n in nodes) != 1:
            return None
        self.statements += sum(isinstance(n, ast.stmt) for n in nodes)
        if self.statements > STATEMENT_LIMIT:
            return None
        params = [a.arg for a in args.args]
        local = set(params) | {n.id for n in nodes if isinstance(n, ast.Name)
                               and isinstance(n.ctx, (ast.Store, ast.Del))}
        local |= {n.name for n in nodes if isinstance(n, ast.ExceptHandler) and n.name}
        renames = {name: self.fresh(name) for name in sorted(local)}
        for name in sorted(sweep.helpers):
            if name not in local:
                renames[name] = self.helper_name(name, sweep.helpers[name])
        for node in nodes:
            if isinstance(node, ast.stmt):
                self.origins[id(node)] = (node, (sweep.filename, fdef.name, node.lineno))
        _rename(body, renames)
        body = _without_del(body)
        bound = {renames[n]: v for n, v in sweep.helpers.items() if n in renames}
        stmts = [ast.Assign(targets=[ast.Name(id=renames[p], ctx=ast.Store())], value=a)
                 for p, a in zip(params, call.args)]
        expanded = self.expand(body[:-1], bound, stack + (sweep.key,))
        if expanded is None:
            return None
        self.inlined += 1
        return stmts + expanded, body[-1].value


def _rename(body: list, renames: dict) -> None:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id in renames:
                node.id = renames[node.id]
            elif isinstance(node, ast.ExceptHandler) and node.name in renames:
                node.name = renames[node.name]


def _without_del(body: list) -> list:
    out = []
    for stmt in body:
        if isinstance(stmt, ast.Delete):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(stmt, field, _without_del(block) or [ast.Pass()])
        for handler in getattr(stmt, "handlers", ()):
            handler.body = _without_del(handler.body) or [ast.Pass()]
        out.append(stmt)
    return out


def flatten_wrapper(wrapper: ast.FunctionDef, bound: dict,
                    inlinable: Callable) -> tuple[ast.FunctionDef, dict, dict] | None:
    """The flattened ``wrapper``, the objects its factory binds (name -> object) and where
    its statements come from (``origins``), or None when it calls no sweep that can be
    inlined. ``bound``: what the wrapper's free names
    that are not globals are bound to (they keep their names); ``inlinable(obj,
    attribute)``: the ``Sweep`` that calling ``obj.attribute`` (or ``obj`` itself, with
    None) runs, or None."""
    wrapper = copy.deepcopy(wrapper)
    names = {n.id for n in ast.walk(wrapper) if isinstance(n, ast.Name)}
    names |= {a.arg for a in wrapper.args.args + wrapper.args.kwonlyargs}
    flat = _Flattener(inlinable, names | set(bound), dict(bound))
    body = flat.expand(wrapper.body, dict(bound), ())
    if body is None or flat.inlined == 0:
        return None
    wrapper.body = _fold_tuples(body, {a.arg for a in wrapper.args.args}, flat)
    used = {n.id for n in ast.walk(wrapper) if isinstance(n, ast.Name)}
    return ast.fix_missing_locations(wrapper), {k: v for k, v in flat.helpers.items()
                                                 if k in used}, flat.origins


def origin_lines(definition: ast.FunctionDef, text: str, origins: dict) -> dict:
    """``{line of text: (generated file, function, line)}`` for the statements of
    ``definition`` (printed as ``text``) inlined from generated sweeps, so that tracebacks
    through the flattened wrapper lead to the user's lines as the sweeps' own do."""
    made = [n for n in ast.walk(definition) if isinstance(n, ast.stmt)]
    printed = [n for n in ast.walk(ast.parse(text).body[0]) if isinstance(n, ast.stmt)]
    if len(made) != len(printed):
        return {}
    return {b.lineno: origins[id(a)][1] for a, b in zip(made, printed)
            if id(a) in origins and type(a) is type(b)}


# -- taking tuples apart ---------------------------------------------------------------------
def _stores(body: list) -> dict:
    """How many times each name is assigned (or deleted) anywhere in ``body``."""
    counts: dict = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                counts[node.id] = counts.get(node.id, 0) + 1
            elif isinstance(node, ast.ExceptHandler) and node.name:
                counts[node.name] = counts.get(node.name, 0) + 1
            elif isinstance(node, (ast.AugAssign,)) and isinstance(node.target, ast.Name):
                counts[node.target.id] = counts.get(node.target.id, 0) + 1
    return counts


def _single(stmt) -> str | None:
    """The name a top-level ``name = value`` statement assigns, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _fold_tuples(body: list, params: set, flat: _Flattener) -> list:
    body = _unpacked_displays(body, flat)
    changed = True
    while changed:  # (a copy of a tuple taken apart is a display, taken apart next round)
        changed = False
        stores = _stores(body)
        i = 0
        while i < len(body):
            stmt = body[i]
            name = _single(stmt)
            if name is None or stores.get(name) != 1 or name in params \
                    or not isinstance(stmt.value, ast.Tuple) \
                    or any(isinstance(e, ast.Starred) for e in stmt.value.elts) \
                    or not _foldable_reads(body, i, name, len(stmt.value.elts), stores):
                i += 1
                continue
            parts = [flat.fresh(name) for _ in stmt.value.elts]
            body = body[:i] + [ast.Assign(targets=[ast.Name(id=p, ctx=ast.Store())], value=e)
                               for p, e in zip(parts, stmt.value.elts)] + \
                _read_parts(body[i + 1:], name, parts)
            i += len(parts)
            changed = True
    body = _propagate_copies(_renamed_apart(body, params, flat), params)
    # (after the copies: each sweep densifies for its own copy of the parameter)
    return _propagate_copies(_densified_once(body, params, flat.helpers), params)


def _renamed_apart(body: list, params: set, flat: _Flattener) -> list:
    """A local every assignment of which is a top-level ``name = value`` (an inlined sweep's
    accumulation ``br = br + ...``) gets a fresh name from its second assignment on, the
    reads after each assignment (up to the next) reading its name: one name per value, so the
    transformation saves no overwritten value on a tape (a push and a pop per assignment,
    differentiated again at higher order). Not done in a body holding a function or class,
    which could read the name later."""
    if any(isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
           for stmt in body for n in ast.walk(stmt)):
        return body
    top: dict = {}
    for stmt in body:
        name = _single(stmt)
        if name is not None:
            top[name] = top.get(name, 0) + 1
    stores = _stores(body)
    renamed = {n for n, k in top.items() if k > 1 and stores.get(n) == k and n not in params}
    if not renamed:
        return body
    current: dict = {}  # name -> the name of its value now
    for stmt in body:
        name = _single(stmt)
        for node in ast.walk(stmt.value if name is not None else stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and node.id in current:
                node.id = current[node.id]
        if name in renamed:
            if name in current:
                current[name] = stmt.targets[0].id = flat.fresh(name)
            else:
                current[name] = name
    return body


def _densified_once(body: list, params: set, helpers: dict) -> list:
    """Top-level ``b = _rt.densify(a, x)`` as the copy ``b = a`` where ``a``, read only there,
    is assigned once, at the top level before, ``_rt.densify(g, x)`` of the same ``x`` (a
    parameter never assigned, or a name assigned once before ``a``). ``densify`` is
    idempotent: what it returns for ``x`` it returns again (an array or number itself, a
    lazy zero as the zero it made, a container item by item). An inlined backward sweep
    returns its densified gradients and its caller densifies them again: one pair per level,
    a call, and when differentiated its adjoint and a zero guard."""
    stores = _stores(body)
    reads: dict = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads[node.id] = reads.get(node.id, 0) + 1
    densified: dict = {}  # a name assigned once, by densify(_, x), and read once -> x
    assigned: set = set()
    out = []
    for stmt in body:
        name = _single(stmt)
        x = _densify_of(stmt.value, helpers) if name is not None else None
        once = name is not None and stores.get(name) == 1 and name not in params
        if once and x is not None and (x in params and x not in stores
                                       or stores.get(x) == 1 and x in assigned):
            a = stmt.value.args[0]
            if isinstance(a, ast.Name) and densified.get(a.id) == x:
                stmt = ast.copy_location(ast.Assign(targets=stmt.targets, value=a), stmt)
            elif reads.get(name) == 1:  # (nothing else sees the container densify made)
                densified[name] = x
        if once:
            assigned.add(name)
        out.append(stmt)
    return out


def _densify_of(value, helpers: dict) -> str | None:
    """The name ``x`` of a ``_rt.densify(g, x)`` call (``_rt`` bound to the runtime)."""
    if isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords \
            and isinstance(value.func, ast.Attribute) and value.func.attr == "densify" \
            and isinstance(value.func.value, ast.Name) \
            and helpers.get(value.func.value.id) is runtime \
            and isinstance(value.args[1], ast.Name):
        return value.args[1].id
    return None


def _unpacked_displays(body: list, flat: _Flattener) -> list:
    """Top-level ``a, b = (e0, e1)`` (what an inlined sweep's ``return`` leaves) as
    ``t0 = e0; t1 = e1; a = t0; b = t1``: the items evaluated first, in order, then
    assigned, as the unpacking does."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple) \
                and len(stmt.targets[0].elts) == len(stmt.value.elts) \
                and not any(isinstance(e, ast.Starred)
                            for e in stmt.targets[0].elts + stmt.value.elts):
            items = [flat.fresh("_u") for _ in stmt.value.elts]
            out.extend(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=e)
                       for n, e in zip(items, stmt.value.elts))
            out.extend(ast.Assign(targets=[t], value=ast.Name(id=n, ctx=ast.Load()))
                       for t, n in zip(stmt.targets[0].elts, items))
        else:
            out.append(stmt)
    return out


def _foldable_reads(body: list, at: int, name: str, size: int, stores: dict) -> bool:
    """Whether every read of ``name`` after statement ``at`` unpacks it at the top level
    into ``size`` targets, subscripts it by a constant index, or copies it into a name
    assigned once there."""
    allowed = set()
    for stmt in body[at + 1:]:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.value, ast.Name) and stmt.value.id == name:
            target = stmt.targets[0]
            if isinstance(target, ast.Tuple) and len(target.elts) == size and not any(
                    isinstance(e, ast.Starred) for e in target.elts):
                allowed.add(id(stmt.value))
            elif isinstance(target, ast.Name) and stores.get(target.id) == 1:
                allowed.add(id(stmt.value))
    for stmt in body[at + 1:]:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                    and node.value.id == name and isinstance(node.ctx, ast.Load) \
                    and _index(node.slice, size) is not None:
                allowed.add(id(node.value))
            elif isinstance(node, ast.Name) and node.id == name and id(node) not in allowed:
                return False
    return True


def _index(node, size: int) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and -size <= node.value < size:
        return node.value % size
    return None


def _read_parts(body: list, name: str, parts: list) -> list:
    """``body`` with each read of the taken-apart ``name`` reading its parts."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.value, ast.Name) and stmt.value.id == name:
            target = stmt.targets[0]
            if isinstance(target, ast.Tuple):
                out.extend(ast.Assign(targets=[t], value=ast.Name(id=p, ctx=ast.Load()))
                           for t, p in zip(target.elts, parts))
            else:  # a copy: a tuple display of the parts, taken apart in its turn
                out.append(ast.Assign(targets=[target], value=ast.Tuple(
                    elts=[ast.Name(id=p, ctx=ast.Load()) for p in parts], ctx=ast.Load())))
            continue
        _Parts(name, parts).visit(stmt)
        out.append(stmt)
    return out


class _Parts(ast.NodeTransformer):
    def __init__(self, name: str, parts: list):
        self.name, self.parts = name, parts

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.name:
            return ast.Name(id=self.parts[_index(node.slice, len(self.parts))], ctx=ast.Load())
        return self.generic_visit(node)


def _propagate_copies(body: list, params: set) -> list:
    """Drop top-level copies ``a = b`` (``b`` a local assigned once at the top level before,
    or a parameter never assigned; ``a`` assigned once), reading ``b`` where ``a`` was read;
    then copies and constants nobody reads."""
    stores = _stores(body)
    alias: dict = {}
    assigned: set = set()  # the names assigned once so far at the top level
    out = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and node.id in alias:
                node.id = alias[node.id]
        name = _single(stmt)
        if name is not None and stores.get(name) == 1 and name not in params:
            value = stmt.value
            if isinstance(value, ast.Name) and (
                    (value.id in params and value.id not in stores)
                    or (stores.get(value.id) == 1 and value.id in assigned)):
                alias[name] = value.id
                continue
            assigned.add(name)
        out.append(stmt)
    while True:  # copies and constants nobody reads (one dropped may leave another unread)
        reads: dict = {}
        for stmt in out:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    reads[node.id] = reads.get(node.id, 0) + 1
        kept = [s for s in out if not (
            _single(s) is not None and stores.get(_single(s)) == 1 and _single(s) not in params
            and not reads.get(_single(s)) and isinstance(s.value, (ast.Name, ast.Constant)))]
        if len(kept) == len(out):
            return kept
        out = kept
