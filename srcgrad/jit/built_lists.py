"""Lists built in the body by appending are appended to in place in compiled code.

The sweeps append functionally: ``xs.append(v)`` reaches them as ``_t2 =
_rt.list_append(xs, v)`` (a new list, ``list(xs) + [v]``), the old list pushed on its stack
and ``xs = _t2``. numba types an empty list only from an ``append`` on that same variable,
so ``built_lists`` rewrites the three statements into ``_stack_xs.append(xs.copy());
xs.append(_rt.list_item(v))``: the same values, since every other holder of the list gets
a copy. That holds when every value ``xs`` holds is a list display, a value popped from its
own stack or a copy, and every read of it is one that keeps no reference: the functional
append itself, a push on its own stack (made a copy), ``M = xs`` for another such list
(made a copy), ``len``, ``sum`` (``_rt.list_sum``), ``np.stack`` (``_rt.stack_list``), the
adjoints of those (``spread_sum``, ``unstack``), ``_rt.zeros_like``, the check
``_rt.refuse_viewed`` (which raises only when another value holds the list), an item read
``xs[i]`` and ``_rt.element`` (a ``for`` loop's item: the item, the same object in both
lists) and their adjoints (``_rt.list_add_at``). Any other read (a slice, an item update, a
call) keeps the functional append,
refused as before. ``_rt.list_item`` refuses items numba computes with otherwise than
Python (ints, bools, float32, ...): float64 numbers and float64/int64 arrays only.
"""
from __future__ import annotations

__all__ = ["built_lists"]

import ast
from dataclasses import dataclass

from ..transforms import astutil as A


@dataclass(frozen=True)
class _Append:
    """``temp = _rt.list_append(name, value)`` at ``body[at]``, followed by the push of
    ``name`` on ``stack`` (or no push: ``stack`` None) and ``name = temp``."""
    body: list
    at: int
    name: str
    temp: str
    value: ast.expr
    stack: str | None
    index: ast.expr | None = None  # (an item store ``temp = _rt.setitem(name, index, value)``)


def built_lists(module: ast.Module, numpy_names: set[str], helpers: dict[str, int],
                locate, shadowed: set[str], adjoint_of: dict[str, str]) -> ast.Module:
    """``module`` with the lists built by appending that nothing else holds appended to
    in place; ``numpy_names`` the global names bound to numpy, ``helpers`` the names of the
    adjoint helpers of ``sum`` and ``np.stack`` (``spread_sum``, ``unstack``) with the
    position of their list argument and the helper's own name (called as
    ``_rt.<name>_list`` on a rewritten list: ``spread_sum`` and ``unstack`` refuse lists); ``locate(node)`` the user's "file:line" of a node
    (named by the compiled ``sum()`` of an empty list, which raises); ``shadowed`` the
    builtins the function's globals rebind (``sum = np.sum``: not the builtin);
    ``adjoint_of`` maps adjoints' names to their primals'."""
    assigned = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)} | set(shadowed)
    numpy = set(numpy_names) - assigned
    readers = {k: v for k, (v, _) in helpers.items() if k not in assigned}
    kinds = {k: f"{kind}_list" for k, (_, kind) in helpers.items() if k in readers}
    readers.update((b, 0) for b in ("len", "sum") if b not in assigned)
    functions = [n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)]
    temps: dict[str, str] = {}
    built: set[str] = set()
    for func in functions:
        appends = _appends(func)
        names = _unshared(func, appends, numpy, readers)
        if names:
            kept = [a for a in appends if a.name in names]
            _rewrite(func, kept, names, numpy, readers, locate)
            temps.update((a.temp, a.name) for a in kept)
            built |= names
    for func in functions:  # (a helper's backward sweep: the lists its forward sweep built)
        _type_list_zeros(func, temps, adjoint_of)
        _adjoint_reads(func, built | set(temps), temps, readers, kinds, adjoint_of)
        _iterated_displays(func)
    return module


def _iterated_displays(func) -> None:
    """``for v in [a, b]`` (``_rt.element(_t1, i)`` of a list display bound once):
    ``_rt.display_element``, each item guarded by ``_rt.list_item`` (numba's list holds one
    type: an int among floats would become a float)."""
    stores = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    displays = {_assign_to(n): n.value for n in ast.walk(func)
                if isinstance(n, ast.Assign) and _assign_to(n)
                and isinstance(n.value, ast.List) and n.value.elts
                and not any(isinstance(e, ast.Starred) for e in n.value.elts)}
    for node in ast.walk(func):
        if A.called_attr(node, "_rt") == "element" and len(node.args) == 2 \
                and stores.get(_name_of(node.args[0])) == 1 \
                and _name_of(node.args[0]) in displays:
            display = displays[node.args[0].id]
            if not all(A.called_attr(e, "_rt") == "list_item" for e in display.elts):
                display.elts = [_call("_rt", "list_item", [e], e) for e in display.elts]
            node.func.attr = "display_element"


def _adjoint_reads(func, names: set[str], temps: dict, readers: dict, kinds: dict,
                   adjoint_of: dict) -> None:
    """The adjoint helpers' reads of the built lists ``names``: ``_rt.list_zero``,
    ``_rt.spread_list``, ``_rt.unstack_list`` (``spread_sum``, ``unstack`` and
    ``_rt.zeros_like`` refuse lists, such as those passed in), and of their adjoints: an
    item store's ``_rt.list_setitem_zeroed``, ``_rt.list_last_writes``."""
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        first = _name_of(node.args[0]) if node.args else None
        if A.called_attr(node, "_rt") in ("setitem_zeroed", "last_writes") and first \
                and adjoint_of.get(first, first[1:]) in names:
            node.func.attr = "list_" + node.func.attr
            continue
        if A.called_attr(node, "_rt") in ("add_at", "add_element") and len(node.args) == 4 \
                and _name_of(node.args[1]) in names:
            node.func.attr = "list_add_at"
        elif A.called_attr(node, "_rt") == "element" and len(node.args) == 2 \
                and _name_of(node.args[0]) in names:
            node.func.attr = "list_element"
        elif A.called_attr(node, "_rt") == "zeros_like" and len(node.args) == 1 \
                and _name_of(node.args[0]) in names:
            node.args[0].id = temps.get(node.args[0].id, node.args[0].id)
            node.func.attr = "list_zero"
        elif isinstance(node.func, ast.Name) and node.func.id in kinds \
                and len(node.args) > readers[node.func.id] \
                and _name_of(node.args[readers[node.func.id]]) in names:
            node.func = _call("_rt", kinds[node.func.id], [], node).func


def _type_list_zeros(func, temps: dict[str, str], adjoint_of: dict[str, str]) -> None:
    """``b_t2 = 0.0``, the lazy zero adjoint of an append's (dropped) temporary ``_t2``
    in a helper's backward sweep, which the forward sweep's list ``xs`` had: ``b_t2 =
    _rt.zeros_like(xs)`` where the backward sweep binds ``xs`` (an empty list of the
    items' adjoints: only its type is read)."""
    bound = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store)} | {a.arg for a in ast.walk(func)
                                                  if isinstance(a, ast.arg)}
    for node in ast.walk(func):
        target = _assign_to(node)
        if target is None or not (isinstance(node.value, ast.Constant)
                                  and type(node.value.value) is float
                                  and node.value.value == 0.0):
            continue
        name = temps.get(adjoint_of.get(target, target[1:]))
        if name in bound:
            node.value = _call("_rt", "list_zero", [ast.Name(id=name, ctx=ast.Load())],
                               node)


def _name_of(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _assign_to(stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return _name_of(stmt.targets[0])
    return None


def _push_of(stmt) -> tuple[str, str] | None:
    """(stack, name) of ``_stack_<..>.append(name)``."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Attribute) and call.func.attr == "append" \
                and _name_of(call.func.value) and call.func.value.id.startswith("_stack_") \
                and len(call.args) == 1 and not call.keywords and _name_of(call.args[0]):
            return call.func.value.id, call.args[0].id
    return None


def _appends(func: ast.FunctionDef) -> list[_Append]:
    found = []
    for node in ast.walk(func):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                found.extend(_appends_in(body))
    return found


def _appends_in(body: list) -> list[_Append]:
    found = []
    for at, stmt in enumerate(body):
        temp = _assign_to(stmt)
        if temp is None or not isinstance(stmt.value, ast.Call) or stmt.value.keywords:
            continue
        store = A.called_attr(stmt.value, "_rt") == "setitem" and len(stmt.value.args) == 3 \
            and not _is_slice(stmt.value.args[1])
        if not (store or A.called_attr(stmt.value, "_rt") == "list_append"
                and len(stmt.value.args) == 2):
            continue
        name = _name_of(stmt.value.args[0])
        rest = body[at + 1:at + 3]
        push = _push_of(rest[0]) if rest else None
        stack = push[0] if push and push[1] == name else None
        last = rest[1] if stack else rest[0] if rest else None
        if name and name != temp and _assign_to(last) == name \
                and _name_of(last.value) == temp:
            args = stmt.value.args
            found.append(_Append(body, at, name, temp, args[-1], stack,
                                 args[1] if store else None))
    return found


def _unshared(func, appends: list[_Append], numpy: set[str], readers: dict) -> set[str]:
    """The names of ``appends`` whose values nothing else holds (see the module's
    docstring); a fixed point, as a list may be given only to others of them."""
    names = {a.name for a in appends}
    temps = {a.temp: a for a in appends}
    aliases = [(_assign_to(n), n.value.id) for n in ast.walk(func)
               if isinstance(n, ast.Assign) and _assign_to(n) and _name_of(n.value)]
    while True:  # (a list given to another name: ``xs = _l1`` after a comprehension)
        more = {target for target, source in aliases if source in names} - names
        if not more:
            break
        names |= more
    while True:
        kept = {n for n in names if _only_fresh(func, n, names, temps)
                and _reads_keep_nothing(func, n, names, appends, numpy, readers)}
        kept = {n for n in kept if all(_temp_read_only_there(func, a)
                                       for a in appends if a.name == n)}
        if kept == names:
            return names
        names = kept


def _only_fresh(func, name: str, names: set[str], temps: dict) -> bool:
    """Every value ``name`` holds is a list display, popped from its own stack, the result
    of its own functional append, or another such list (copied)."""
    for node in ast.walk(func):
        if isinstance(node, ast.arg) and node.arg == name:
            return False
        if isinstance(node, ast.Assign) and _assign_to(node) == name:
            value = node.value
            popped = isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr == "pop" and not value.args \
                and (_name_of(value.func.value) or "").startswith("_stack_")
            own = _name_of(value) in temps and temps[value.id].name == name
            if not (isinstance(value, ast.List) or popped or own
                    or _name_of(value) in names):
                return False
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For,
                               ast.NamedExpr, ast.withitem, ast.comprehension)):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [getattr(node, "target", None) or getattr(node, "optional_vars", None)]
            if any(isinstance(n, ast.Name) and n.id == name
                   for t in targets if t is not None for n in ast.walk(t)):
                return False
    return True


def _reads_keep_nothing(func, name: str, names: set[str], appends: list[_Append],
                        numpy: set[str], readers: dict) -> bool:
    allowed: set[int] = set()
    for a in appends:
        if a.name == name:
            allowed.add(id(a.body[a.at].value.args[0]))
            if a.stack:
                allowed.add(id(a.body[a.at + 1].value.args[0]))
    for node in ast.walk(func):
        push = _push_of(node) if isinstance(node, ast.Expr) else None
        if push and push[1] == name and _own_stack(func, push[0], name):
            allowed.add(id(node.value.args[0]))
        elif isinstance(node, ast.Assign) and _assign_to(node) in names \
                and _name_of(node.value) == name:
            allowed.add(id(node.value))
        elif isinstance(node, ast.Call):
            allowed.update(_reading_call(node, name, numpy, readers))
        elif _item_read(node, name):
            allowed.add(id(node.value))
    reads = {id(n) for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)}
    return reads <= allowed | _returned(func)


def _returned(func) -> set[int]:
    """The ids of the names a ``return`` of ``func`` reads: after it nothing appends (a
    helper's forward sweep returns its lists and stacks to its backward sweep)."""
    return {id(n) for r in ast.walk(func) if isinstance(r, ast.Return) and r.value
            for n in ast.walk(r.value) if isinstance(n, ast.Name)}


def _reading_call(call: ast.Call, name: str, numpy: set[str], readers: dict) -> list[int]:
    """The ids of the reads of ``name`` that ``call`` makes keeping no reference."""
    args = call.args
    if any(isinstance(a, ast.Starred) for a in args):
        return []
    func, helper = call.func, A.called_attr(call, "_rt")
    if _is_stack(call, numpy):
        position = 0
    elif helper == "zeros_like" and len(args) == 1:
        position = 0
    elif helper == "refuse_viewed":  # (it raises when another holds the list: none)
        position = 0
    elif helper == "refuse_shared_item" and len(args) == 5:  # (sweeps._SharedLocals)
        position = 0  # (-> list_shared_item: the item's data checked, the list held by none)
    elif helper == "element" and len(args) == 2:  # (an item: see _item_read)
        position = 0
    elif helper in ("add_at", "add_element") and len(args) == 4 \
            and not _is_slice(args[2]):  # (the adjoint of an item read: reads the length)
        position = 1
    elif isinstance(func, ast.Name) and func.id in readers and not call.keywords \
            and (func.id not in ("len", "sum") or len(args) == 1):
        position = readers[func.id]
    else:
        return []
    if position < len(args) and _name_of(args[position]) == name:
        return [id(args[position])]
    return []


def _item_read(node, name: str) -> bool:
    """``name[index]`` read, an index that is no slice: the item, not the list (it is the
    same object in the compiled list as in the interpreted one: appends in place and the
    shallow copies pushed keep the items themselves, as ``list(xs) + [v]`` does)."""
    return isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
        and _name_of(node.value) == name and not _is_slice(node.slice)


def _is_slice(index) -> bool:
    return any(isinstance(n, ast.Slice) for n in ast.walk(index))


def _is_stack(call: ast.Call, numpy: set[str]) -> bool:
    """``<numpy>.stack(items)``, along the first axis."""
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr == "stack" \
        and _name_of(func.value) in numpy and len(call.args) == 1 and not call.keywords


def _own_stack(func, stack: str, name: str) -> bool:
    """Whether ``stack`` holds values of ``name`` only (pushes of it, pops into it)."""
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and node.id == stack:
            continue
        push = _push_of(node) if isinstance(node, ast.Expr) else None
        if push and push[0] == stack and push[1] != name:
            return False
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) \
                and _name_of(node.value.func.value) == stack \
                and _assign_to(node) != name:
            return False
    methods = {id(n.value) for n in ast.walk(func) if isinstance(n, ast.Attribute)
               and _name_of(n.value) == stack and n.attr in ("append", "pop")}
    methods |= _returned(func)  # (the copies it holds: given to a backward sweep)
    return all(id(n) in methods for n in ast.walk(func)  # (not passed on otherwise)
               if isinstance(n, ast.Name) and n.id == stack and isinstance(n.ctx, ast.Load))


def _temp_read_only_there(func, a: _Append) -> bool:
    """The append's temporary is bound only there and read only by ``name = temp`` and
    ``_rt.zeros_like(temp)`` (a lazy zero adjoint typed from it)."""
    last = a.body[a.at + (2 if a.stack else 1)]
    allowed = {id(last.value)} | {id(n.args[0]) for n in ast.walk(func)
                                   if A.called_attr(n, "_rt") == "zeros_like" and len(n.args) == 1}
    stores = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == a.temp
              and isinstance(n.ctx, ast.Store)]
    reads = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == a.temp
             and isinstance(n.ctx, ast.Load)]
    return len(stores) == 1 and all(id(n) in allowed for n in reads)


def _call(owner: str, attr: str, args: list, where) -> ast.Call:
    call = ast.Call(func=ast.Attribute(value=ast.Name(id=owner, ctx=ast.Load()), attr=attr,
                                       ctx=ast.Load()), args=args, keywords=[])
    for node in ast.walk(call):
        ast.copy_location(node, where)
    return call


def _copy(name: str, where) -> ast.Call:
    return _call(name, "copy", [], where)


def _rewrite(func, appends: list[_Append], names: set[str], numpy: set[str],
             readers: dict, locate) -> None:
    temps = {a.temp: a.name for a in appends}
    for a in sorted(appends, key=lambda a: (id(a.body), -a.at)):  # (later ones first)
        stmt = a.body[a.at]
        item = _call("_rt", "list_item", [a.value], stmt)
        if a.index is None:
            new = [ast.Expr(value=_call(a.name, "append", [item], stmt))]
        else:  # (numba's list raises IndexError out of range, as Python's)
            new = [ast.Assign(targets=[ast.Subscript(
                value=ast.Name(id=a.name, ctx=ast.Load()), slice=a.index, ctx=ast.Store())],
                value=item)]
        if a.stack:
            new.insert(0, ast.Expr(value=_call(a.stack, "append", [_copy(a.name, stmt)],
                                               stmt)))
        for s in new:
            for node in ast.walk(s):
                ast.copy_location(node, stmt)
        a.body[a.at:a.at + (3 if a.stack else 2)] = new
    for node in ast.walk(func):
        push = _push_of(node) if isinstance(node, ast.Expr) else None
        if push and push[1] in names and not _is_copy(node.value.args[0]):
            node.value.args[0] = _copy(push[1], node)
        elif isinstance(node, ast.Assign) and _assign_to(node) in names \
                and _name_of(node.value) in names:
            node.value = _copy(node.value.id, node)
        elif isinstance(node, ast.Call) and len(node.args) == 1 \
                and _name_of(node.args[0]) in names | set(temps):
            if isinstance(node.func, ast.Name) and node.func.id == "sum" \
                    and node.func.id in readers:
                node.func = _call("_rt", "list_sum", [], node).func
                node.args.append(ast.copy_location(ast.Constant(value=locate(node)), node))
            elif _is_stack(node, numpy):
                node.func = _call("_rt", "stack_list", [], node).func
        if A.called_attr(node, "_rt") == "refuse_shared_item" and len(node.args) == 5 \
                and _name_of(node.args[0]) in names:
            node.func.attr = "list_shared_item"


def _is_copy(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == "copy"
