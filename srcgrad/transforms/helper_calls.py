"""The user's helpers a function calls, read from its source: the one walk the analyses that
follow a helper into the helpers it calls (what it changes in place, outside its variables,
or calls on its parameters) share."""
from __future__ import annotations

import types

import gast

from ..errors import SrcgradError
from ..rules import lookup
from ..source import get_source


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
    it imports (``helpers.step(a)``), not ``fn`` itself and not a rule's function."""
    for call in gast.walk(tree):
        if not isinstance(call, gast.Call):
            continue
        func, callee = call.func, None
        if isinstance(func, gast.Name):
            callee = fn.__globals__.get(func.id)
        elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                and isinstance(fn.__globals__.get(func.value.id), types.ModuleType):
            callee = getattr(fn.__globals__[func.value.id], func.attr, None)
        if isinstance(callee, types.FunctionType) and callee is not fn \
                and lookup(callee) is None:
            yield call, callee
