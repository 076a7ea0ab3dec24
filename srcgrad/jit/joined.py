"""Lists of arrays read only by ``np.stack``-like joins become tuples in compiled code.

``np.stack([v, v ** 2])`` reaches the sweeps as ``_t2 = [v, _t1]; s = np.stack(_t2)``, and
its adjoint as ``b_t2 = unstack(bs, _t2)`` (``vstack_vjp(bw, w, _t4)`` for ``np.vstack``).
numpy joins a list exactly as the tuple of the same items, and the adjoint's pieces are the
same arrays, in a list or a tuple alike; numba's ``np.stack``, ``np.vstack``, ``np.hstack``
and ``np.concatenate`` take tuples only. ``joined_lists`` rewrites ``_t2 = [v, _t1]`` into
``_t2 = (v, _t1)`` when every value the variable holds is a list display (or ``None``, or
one popped from its own stack) and every read of it is the sequence argument of one of
those joins, of the compiled ``unstack``/``vstack_vjp``, or a push on its own stack (the
analysis of indices.py). Any other read (``len``, ``sum``, iteration, indexing, ``+``, an
item update) keeps the list, which numba refuses where it cannot compile it. Items numba
cannot join alike (a number among arrays, arrays of other ranks) are refused by numba's
typing of the join or of the adjoint's helpers.
"""
from __future__ import annotations

__all__ = ["JOINS", "joined_lists"]

import ast

from .indices import list_displays_read_only_by

JOINS = ("stack", "vstack", "hstack", "concatenate")
"""numpy functions whose first argument, a list display, is compiled as a tuple."""


def joined_lists(module: ast.Module, numpy_names: set[str],
                 helpers: dict[str, int]) -> ast.Module:
    """``module`` with the list displays read only by joins written as tuples;
    ``numpy_names`` are the global names bound to numpy (none assigned in ``module``),
    ``helpers`` the names of the adjoint helpers reading such a list, with the position of
    that argument (``unstack(g, arrays)``: 1)."""
    assigned = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    names = set(numpy_names) - assigned

    def allowed(node, name: str) -> list[int]:
        if not (isinstance(node, ast.Call) and node.args) \
                or any(isinstance(a, ast.Starred) for a in node.args):
            return []
        func, position = node.func, None
        if _is_join(node, names):
            position = 0
        elif isinstance(func, ast.Name) and func.id in helpers and func.id not in assigned:
            position = helpers[func.id]
        if position is None or position >= len(node.args):
            return []
        arg = node.args[position]
        return [id(arg)] if isinstance(arg, ast.Name) and arg.id == name else []

    for node in ast.walk(module):  # (a display written as the argument: read only there)
        if _is_join(node, names) and isinstance(node.args[0], ast.List) \
                and not any(isinstance(e, ast.Starred) for e in node.args[0].elts):
            node.args[0] = ast.copy_location(ast.Tuple(elts=node.args[0].elts,
                                                       ctx=ast.Load()), node.args[0])
    for func in (n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)):
        for name in list_displays_read_only_by(func, allowed):
            for node in ast.walk(func):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name) \
                        and node.targets[0].id == name and isinstance(node.value, ast.List):
                    node.value = ast.copy_location(
                        ast.Tuple(elts=node.value.elts, ctx=ast.Load()), node.value)
    return module


def _is_join(node, numpy_names: set[str]) -> bool:
    """``<numpy>.stack(items, ...)`` (or another of ``JOINS``), ``items`` given."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr in JOINS and isinstance(node.func.value, ast.Name) \
        and node.func.value.id in numpy_names and bool(node.args)
