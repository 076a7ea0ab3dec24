"""Lists of integers used only as indices become integer arrays in compiled code.

``x[[2, 0, 1]]`` reaches the sweeps as ``_t1 = [2, 0, 1]; _t2 = x[_t1]`` (and the adjoint's
``_rt.add_at(bx, x, _t1, g)``). numpy indexes with a list of ints exactly as with the
integer array made from it; numba indexes only with the array. ``constant_index_lists``
rewrites ``_t1 = [i, 0, 1]`` into ``_t1 = _rt.index_array((i, 0, 1))`` when every value the
variable holds is a list display (or ``None``, or one popped from its own stack) and every
read of it is an index: a subscript's (alone or in a tuple), ``add_at``'s, or a push on its
stack. Any other read (``len``, iteration, ``+``) keeps the list, which numba then refuses.
An element store's ``_rt.setitem(v, _t1, e)`` and its adjoint's ``setitem_zeroed`` and
``last_writes`` read it as an index too.
``index_array`` compiles only for items numba types as signed integers (runtime.py): a float
or a bool item, which numpy would refuse or read as a mask, is refused. numba reads out of
bounds where numpy raises IndexError (x[[5]] of three elements): every compiled function
has numba's bounds checks (build.py). A list display written as the index itself
(``y[[0, 2]]``, ``y[:, [1]]``: code the sweeps keep as written, such as an ``if``
condition) is read by nothing else and becomes an ``index_array`` too.
"""
from __future__ import annotations

__all__ = ["constant_index_lists", "list_displays_read_only_by"]

import ast
from typing import Callable

from ..transforms import astutil as A


def constant_index_lists(module: ast.Module) -> ast.Module:
    saved = _saved_for_the_backward_sweep(module)
    for func in (n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)):
        for name in list_displays_read_only_by(func, _index_reads, saved.get(id(func))):
            for node in ast.walk(func):
                if isinstance(node, ast.Assign) and _targets(node) == name \
                        and isinstance(node.value, ast.List):
                    node.value = _index_array(node.value)
    return _DisplayedIndices().visit(module)


class _DisplayedIndices(ast.NodeTransformer):
    """``x[[0, 2]]``, ``x[:, [1]]`` and ``add_at``'s ``[0, 2]`` -> ``_rt.index_array(...)``:
    a list display written as the index itself (a condition's ``y[[0, 2]] @ y``, which
    the sweeps keep as the user wrote it) is read by nothing else."""

    def visit_Subscript(self, node):
        self.generic_visit(node)
        node.slice = _displays_as_arrays(node.slice)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if A.called_attr(node, "_rt") == "add_at" and len(node.args) == 4:
            node.args[2] = _displays_as_arrays(node.args[2])
        return node


def _displays_as_arrays(index):
    """``index`` with a list display that is it, or a part of the tuple it is, made an
    ``index_array``."""
    if _int_list(index):
        return _index_array(index)
    if isinstance(index, ast.Tuple):
        index.elts = [_index_array(e) if _int_list(e) else e for e in index.elts]
    return index


def list_displays_read_only_by(func: ast.FunctionDef,
                               allowed: Callable[[ast.AST, str], list[int]],
                               passed: dict[str, int] | None = None) -> set[str]:
    """The variables of ``func`` that hold list displays (or ``None``, or values popped
    from their own stacks) whose reads are all ``allowed`` ones, at least one, or pushes on
    their own stacks; ``allowed(node, name)`` gives the ids of the reads of ``name`` that
    ``node`` makes in an allowed way. ``passed``: name -> the id of one more read allowed
    (a forward sweep's saving it for a backward sweep that reads it in allowed ways only)."""
    listed, other = set(), set()
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            name = _targets(node)
            if name is None:
                other.update(n.id for t in node.targets for n in ast.walk(t)
                             if isinstance(n, ast.Name))
            elif _int_list(node.value):
                listed.add(name)
            elif not (_is_none(node.value) or _popped(node.value)):
                other.add(name)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr,
                               ast.withitem, ast.comprehension)):
            target = getattr(node, "target", None) or getattr(node, "optional_vars", None)
            other.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name)) \
                if target is not None else None
        elif isinstance(node, ast.arguments):
            other.update(a.arg for a in node.posonlyargs + node.args + node.kwonlyargs)
    candidates = listed - other
    passed = passed or {}
    return {name for name in candidates
            if _read_only_by(func, name, allowed, passed.get(name))}


def _saved_for_the_backward_sweep(module: ast.Module) -> dict[int, dict[str, int]]:
    """id of a callee's forward sweep -> {name: id of its read in the saved tuple} for the
    names the backward sweep unpacks from the saved tuple and reads only as indices
    (``_index_reads``), binding them nowhere else: a list display saved so may become an
    index array on both sides (in a helper's compiled pair the forward sweep returns
    ``(value, (x, _t1, ...))`` once and the backward sweep starts ``x, _t1, ... =
    _saved``)."""
    out = {}
    for make in module.body:
        defs = [s for s in getattr(make, "body", ()) if isinstance(s, ast.FunctionDef)]
        if not isinstance(make, ast.FunctionDef) or len(defs) != 2:
            continue
        fwd, bwd = defs
        returns = [n for n in ast.walk(fwd) if isinstance(n, ast.Return)]
        if len(returns) != 1 or not (isinstance(returns[0].value, ast.Tuple)
                                     and len(returns[0].value.elts) == 2
                                     and isinstance(returns[0].value.elts[1], ast.Tuple)):
            continue
        sent = returns[0].value.elts[1].elts
        unpack = _unpacking(bwd)
        if unpack is None or len(unpack.targets[0].elts) != len(sent):
            continue
        received = unpack.targets[0].elts
        channels = {}
        for here, there in zip(sent, received):
            if isinstance(here, ast.Name) and isinstance(there, ast.Name) \
                    and _indexed_only(bwd, there.id, unpack):
                channels[here.id] = id(here)
        out[id(fwd)] = channels
    return out


def _unpacking(bwd: ast.FunctionDef) -> ast.Assign | None:
    """The backward sweep's ``x, _t1, ... = _saved`` (its first parameter; only the names
    at its top level are matched with the forward sweep's)."""
    if not bwd.args.args:
        return None
    saved = bwd.args.args[0].arg
    for stmt in bwd.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) \
                and stmt.value.id == saved and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Tuple):
            return stmt  # (its items: names, or tuples of a loop's stacks, ``(_stack_x,)``)
    return None


def _indexed_only(func: ast.FunctionDef, name: str, unpack: ast.Assign) -> bool:
    """Whether ``name`` is bound in ``func`` by ``unpack`` only and read only as an index."""
    bound_by_unpack = {id(t) for t in unpack.targets[0].elts}
    using = set()
    for node in ast.walk(func):
        using.update(_index_reads(node, name))
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load):
                continue
            if id(node) not in bound_by_unpack:
                return False
        elif isinstance(node, ast.arg) and node.arg == name:
            return False
    return all(id(n) in using for n in ast.walk(func)
               if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))


def _targets(node: ast.Assign) -> str | None:
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _int_list(value) -> bool:
    """A list display (its items' types are checked when numba types ``index_array``)."""
    return isinstance(value, ast.List) and bool(value.elts) and not any(
        isinstance(e, ast.Starred) for e in value.elts)


def _is_none(value) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def _popped(value) -> bool:
    """``_stack_x.pop()``: a value the variable held before (its own stack: checked by the
    pushes being the variable's only other reads)."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr == "pop" and not value.args and not value.keywords \
        and isinstance(value.func.value, ast.Name) \
        and value.func.value.id.startswith("_stack_")


def _index_reads(node, name: str) -> list[int]:
    """The reads of ``name`` as an index that ``node`` makes: a subscript's, ``add_at``'s,
    an element store's (``setitem``, ``setitem_zeroed``, ``last_writes``)."""
    if isinstance(node, ast.Subscript):
        return _index_parts(node.slice, name)
    helper = A.called_attr(node, "_rt")
    if helper is not None:
        position = _INDEX_POSITIONS.get(helper)
        if position is not None and len(node.args) == position[1]:
            return _index_parts(node.args[position[0]], name)
    return []


# _rt helpers reading an index: name -> (its position, the number of arguments). The
# compiled setitem, setitem_zeroed and last_writes index with the array as numpy with the
# list (a repeated position: the last write, runtime.py and containers.py)
_INDEX_POSITIONS = {"add_at": (2, 4), "setitem": (1, 3), "setitem_zeroed": (2, 3),
                    "last_writes": (1, 2)}


def _read_only_by(func: ast.FunctionDef, name: str, allowed, passed: int | None = None) \
        -> bool:
    """Whether ``name`` is read in ``allowed`` ways, and otherwise only pushed on its own
    stacks (or read by the node of id ``passed``)."""
    using, pushed, stacks = set(), set(), set()
    if passed is not None:
        pushed.add(passed)
    for node in ast.walk(func):
        using.update(allowed(node, name))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "append" and _stack_of(node, name):
            pushed.add(id(node.args[0]))
            stacks.add(node.func.value.id)
    reads = {id(node) for node in ast.walk(func) if isinstance(node, ast.Name)
             and node.id == name and isinstance(node.ctx, ast.Load)}
    # (a list nobody reads so, such as one never read, stays a list)
    return bool(reads & using) and reads <= using | pushed and all(
        _own_stack(func, stack, name) for stack in stacks)


def _stack_of(call: ast.Call, name: str) -> bool:
    """``_stack_<...>.append(name)``."""
    return isinstance(call.func.value, ast.Name) and call.func.value.id.startswith("_stack_") \
        and len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Name) \
        and call.args[0].id == name


def _own_stack(func: ast.FunctionDef, stack: str, name: str) -> bool:
    """Whether ``stack`` holds values of ``name`` only: its reads are pushes of ``name``
    and pops into ``name``."""
    pushes = {id(n.func.value) for n in ast.walk(func) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
              and _stack_of(n, name) and n.func.value.id == stack}
    pops = {id(n.value.func.value) for n in ast.walk(func) if isinstance(n, ast.Assign)
            and _targets(n) == name and _popped(n.value) and n.value.func.value.id == stack}
    return all(id(n) in pushes | pops for n in ast.walk(func)
               if isinstance(n, ast.Name) and n.id == stack and isinstance(n.ctx, ast.Load))


def _index_parts(index, name: str) -> list[int]:
    """ids of the reads of ``name`` that are ``index`` or a part of the tuple ``index``."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return [id(p) for p in parts if isinstance(p, ast.Name) and p.id == name]


def _index_array(value: ast.List) -> ast.Call:
    values = ast.Tuple(elts=value.elts, ctx=ast.Load())
    call = ast.Call(func=ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()),
                                       attr="index_array", ctx=ast.Load()),
                    args=[values], keywords=[])
    for node in ast.walk(call):
        ast.copy_location(node, value)
    return call
