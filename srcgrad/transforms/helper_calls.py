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
