"""The user's helpers a function calls, read from its source: the one walk the analyses that
follow a helper into the helpers it calls (what it changes in place, outside its variables,
or calls on its parameters) share."""
from __future__ import annotations

import os
import sysconfig
import types

import gast

from ..errors import SrcgradError
from ..rules import lookup
from ..source import get_source
from . import astutil as A
from .activity import methods_called, methods_reached, shared_roots, sharing


_LIBRARY_DIRS = tuple(os.path.realpath(sysconfig.get_paths()[k])
                      for k in ("stdlib", "platstdlib", "purelib", "platlib"))


def library_file(filename: str) -> bool:
    """Installed code (site-packages, the standard library) or srcgrad's generated code."""
    return filename.startswith("<srcgrad") or os.path.realpath(filename).startswith(
        _LIBRARY_DIRS)


def source_tree(fn) -> gast.FunctionDef | None:
    """``fn``'s parsed source, or None when it cannot be read (a builtin, a lambda typed at
    the prompt...)."""
    try:
        return get_source(fn).tree
    except (SrcgradError, OSError, TypeError, SyntaxError):
        return None


def user_calls(fn, tree):
    """``(call, callee)`` for each call in ``tree`` (``fn``'s source) of a plain function
    of the user's that ``fn`` names as a global (``step(a)``) or as an attribute of a module
    it imports (``helpers.step(a)``, not an installed library's), not ``fn`` itself and not
    a rule's function."""
    for call in gast.walk(tree):
        if not isinstance(call, gast.Call):
            continue
        func, callee = call.func, None
        if isinstance(func, gast.Name):
            callee = fn.__globals__.get(func.id)
        elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                and isinstance(fn.__globals__.get(func.value.id), types.ModuleType):
            callee = getattr(fn.__globals__[func.value.id], func.attr, None)
            if isinstance(callee, types.FunctionType) \
                    and library_file(callee.__code__.co_filename):
                continue  # (np.linalg.norm's own source: numpy's, not the user's helper)
        if isinstance(callee, types.FunctionType) and callee is not fn \
                and lookup(callee) is None:
            yield call, callee


_METHODS: dict = {}  # code object -> methods_on_parameters(fn)


def methods_on_parameters(fn, depth: int = 0) -> dict[str, set[tuple[str, bool]]]:
    """For each parameter of ``fn``, ``(method, within)`` for the methods ``fn``, or a
    helper of the user's it hands the parameter (or an object it holds) to, calls on its
    object (within False: activity.methods_called) or on an object it holds or may be
    (within True: activity.methods_reached), once per code object."""
    code = fn.__code__
    known = _METHODS.get(code)
    if known is not None:
        return known
    _METHODS[code] = {}  # (recursion)
    tree = source_tree(fn)
    if tree is None:
        return {}
    params = set(A.parameters_of(fn))
    found: dict[str, set[tuple[str, bool]]] = {}
    for within, table in ((False, methods_called(tree, params)),
                          (True, methods_reached(tree, params))):
        for p, methods in table.items():
            found.setdefault(p, set()).update((m, within) for m in methods)
    held = sharing(tree, params)
    for call, callee in user_calls(fn, tree) if depth < 8 else ():
        inner = methods_on_parameters(callee, depth + 1)
        names = A.parameters_of(callee)
        for i, arg in A.bind_arguments(names, 0, call) or ():
            if i >= len(names) or names[i] not in inner:
                continue
            itself = isinstance(arg, gast.Name) and arg.id in params
            reached = set().union(set(), *[held.get(n, set()) for n in shared_roots(arg)])
            for p in reached & params:
                found.setdefault(p, set()).update(
                    (m, within or not itself) for m, within in inner[names[i]])
    _METHODS[code] = found
    return found
