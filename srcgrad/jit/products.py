"""Compiled forward mode of the matrix product's adjoint helpers, for compiled Hessian-vector
products: the gradient of ``x @ y`` calls ``matmul_left(g, x, y)`` and
``matmul_right(g, x, y)`` (srcgrad.rules.operators), which forward mode differentiates as
source; their bodies (shape tests on Python attributes, ``product_like``) have no compiled
form, but their compiled versions (jit/runtime.py) do. Each is linear in two of its
arguments and reads the third only for its shape (``matmul_left(g, x, y) = g @ y.T`` with
numpy's promotions: linear in ``g`` and in ``y``), so its jvp is the helper itself applied
to one tangent at a time, summed: what differentiating its body computes.
"""
from __future__ import annotations

__all__ = ["HAND_WRITTEN", "hand_written", "helper_jvp"]

from numba import types
from numba.extending import overload

from .. import codegen
from . import caching
from . import runtime as jit_runtime

# helper name -> the positions of the two arguments it is linear in (the third: a shape)
HAND_WRITTEN = {"matmul_left": (0, 2), "matmul_right": (0, 1)}
_PARAMS = ("g", "x", "y")
_MADE: dict = {}  # (helper name, wrt) -> (text, filename, dispatcher)


def _term(name: str, position: int):
    """A compiled ``term(d, g, x, y)``: the helper ``name`` with the tangent ``d`` in place
    of its argument at ``position``; 0.0 when ``d`` is the lazy zero (a number where the
    argument is an array: forward mode's tangent of what does not depend on the inputs)."""
    helper = jit_runtime.RULE_HELPERS[name]

    def term(d, g, x, y):
        raise RuntimeError("srcgrad.jit.products terms run only inside compiled code")

    @overload(term)
    def _compiled(d, g, x, y):
        if isinstance((g, x, y)[position], types.Array) and isinstance(d, types.Number):
            return lambda d, g, x, y: 0.0
        if position == 0:
            return lambda d, g, x, y: helper(d, x, y)
        if position == 1:
            return lambda d, g, x, y: helper(g, d, y)
        return lambda d, g, x, y: helper(g, x, d)

    term.__name__ = term.__qualname__ = f"{name}_in_{_PARAMS[position]}"
    term.__srcgrad_made__ = f"{__name__}._term({name!r}, {position})"  # (caching.py: the
    # same for every term of these arguments, so a jvp calling it can be cached)
    return term


def _text(name: str, wrt: tuple) -> tuple[str, dict]:
    """The jvp's text and the terms it calls."""
    terms = {f"{name}_in_{_PARAMS[i]}": _term(name, i) for i in HAND_WRITTEN[name]
             if i in wrt}
    tangents = [f"d{_PARAMS[i]}" for i in wrt]
    added = " + ".join(f"{term}(d{term[-1]}, g, x, y)" for term in terms) or "0.0"
    text = (f"def {name}_jvp({', '.join(tangents + list(_PARAMS))}):\n"
            f"    # linear in {' and '.join(_PARAMS[i] for i in HAND_WRITTEN[name])}: the "
            f"helper applied to each tangent\n"
            f"    value = {name}(g, x, y)\n"
            f"    return value, _rt.densify({added}, value)\n")
    return text, terms


def hand_written(func) -> bool:
    """Whether ``func`` is one of srcgrad's rule helpers with a jvp here."""
    return getattr(func, "__name__", None) in HAND_WRITTEN and getattr(
        func, "__module__", "") == "srcgrad.rules.operators"


def helper_jvp(name: str, wrt: tuple) -> tuple:
    """``(text, filename, dispatcher)``: the compiled ``<name>_jvp(*tangents, g, x, y) ->
    (value, tangent)`` of the rule helper ``name`` for the argument positions ``wrt``."""
    key = (name, tuple(wrt))
    made = _MADE.get(key)
    if made is None:
        text, terms = _text(name, key[1])
        make, filename = codegen.compile_factory(
            text, ["_rt", name, *terms], [f"{name}_jvp"], f"{name} jvp")
        function = make(jit_runtime, jit_runtime.RULE_HELPERS[name], *terms.values())[0]
        made = _MADE[key] = (text, filename, caching.njit_cached(text, [function])[0])
    return made
