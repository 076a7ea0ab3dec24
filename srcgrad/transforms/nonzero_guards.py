"""Guarantees afterwards: a flattened gradient wrapper tests no adjoint it knows is not the
lazy zero: ``if not _rt.is_zero(v): body else: rest`` on such a ``v`` is ``body``.

A gradient's backward sweep guards the contributions of an adjoint that may be the lazy zero
at run time (reverse.py, ``guarded_contributions``): a sweep called from elsewhere gets its
seed from its caller. Inlined into a gradient's flattened wrapper (inline_sweeps.py), the
seed is ``_rt.grad_seed(...)``, never the lazy zero (``runtime.is_zero``: None or the float
``0.0``), and neither is what unbroadcasting or negating it gives: the guards on those always
pass, yet cost a call each, and a branch that the wrapper's own derivative (``grad`` of a
gradient differentiated again, issue 9) records on a tape and replays.

Known not to be the lazy zero, statement by statement at the top level of the wrapper and of
the bodies inlined here: the result of ``_rt.grad_seed`` (a one or an array of ones); of
``_rt.unbroadcast(v, ...)``, ``_rt.broadcast_like(v, ...)``, ``-v`` and ``v`` itself, for
``v`` known (an array, a numpy scalar, or ``v`` itself when it is a number: never the float
``0.0``); of ``a if c else b`` for both known. Anything else (a product may underflow to
``0.0``) is unknown, and so is a name once assigned or deleted in a statement this pass
leaves (a loop, a branch). Only guards are removed: the statements that run are the same, so
the gradient is the same to the bit.
"""
from __future__ import annotations

__all__ = ["drop_nonzero_guards"]

import ast
from typing import Callable

from .. import runtime

# runtime functions whose result is not the lazy zero when their first argument is not
_KEEPS_NONZERO = (runtime.unbroadcast, runtime.broadcast_like)


def drop_nonzero_guards(fdef: ast.FunctionDef,
                        resolve: Callable[[ast.expr], object]) -> ast.FunctionDef:
    """``fdef`` without the ``is_zero`` guards on adjoints known not to be the lazy zero.
    ``resolve(expr)``: the object a name or module attribute is bound to (None for locals)."""
    fdef.body = _block(fdef.body, set(), resolve)
    return fdef


def _block(body: list, known: set, resolve) -> list:
    out: list = []
    for s in body:
        kept = _guarded_body(s, known, resolve)
        if kept is not None:  # (its statements, the facts they make included)
            out += _block(kept, known, resolve)
            continue
        out.append(s)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name):
            nonzero = _nonzero(s.value, known, resolve)
            (known.add if nonzero else known.discard)(s.targets[0].id)
        else:
            known -= {n.id for n in ast.walk(s) if isinstance(n, ast.Name)
                      and isinstance(n.ctx, (ast.Store, ast.Del))}
    return out


def _guarded_body(s, known: set, resolve) -> list | None:
    """The body of ``s`` when it is ``if not _rt.is_zero(v)`` for ``v`` in ``known``."""
    if not (isinstance(s, ast.If) and isinstance(s.test, ast.UnaryOp)
            and isinstance(s.test.op, ast.Not) and isinstance(s.test.operand, ast.Call)):
        return None
    call = s.test.operand
    if resolve(call.func) is not runtime.is_zero or len(call.args) != 1 or call.keywords:
        return None
    arg = call.args[0]
    return s.body if isinstance(arg, ast.Name) and arg.id in known else None


def _nonzero(value, known: set, resolve) -> bool:
    """Whether ``value`` is never the lazy zero, given the names ``known`` not to be."""
    if isinstance(value, ast.Name):
        return value.id in known
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        return _nonzero(value.operand, known, resolve)
    if isinstance(value, ast.IfExp):
        return _nonzero(value.body, known, resolve) and _nonzero(value.orelse, known, resolve)
    if isinstance(value, ast.Call) and not value.keywords:
        fn = resolve(value.func)
        if runtime.makes_seed(fn):
            return True
        if any(fn is k for k in _KEEPS_NONZERO) and value.args:
            return _nonzero(value.args[0], known, resolve)
    return False
