"""Guarantees afterwards: no compiled sweep does arithmetic whose operands are all bools (numpy
computes it otherwise); numba's typing of it is refused at the user's line.

Why: the dtypes refused in dtypes.py are those of values the sweeps read (arguments, globals,
dtypes named in the body). Bools are also made in the body (``m = x > 0``), where only
numba's types show them. numpy computes ``bool_ + bool_`` as a logical or (True), numba as
Python ints (2); ``bool_ * bool_`` is a bool in numpy, an int in numba (so a later sum
differs); ``bool_ // bool_``, ``%`` and ``**`` are int8 in numpy, int64 in numba;
``bool_ - bool_``, ``-bool_`` and ``+bool_`` raise in numpy and give ints in numba;
``abs(bool_)`` is a bool in numpy; ``bool_ / bool_`` is float64 in numpy and float32 for
arrays in numba. A numpy ufunc of bools only (``np.sqrt(m)``, ``np.exp(m[0])``) is float16 in
numpy, float32 (arrays) or float64 in numba, ``np.subtract(m, m)`` raises in numpy: ufuncs of
bools only are refused unless their result is a bool (``np.logical_and``, ``np.maximum``). Of arrays of bools, ``+`` and ``*`` (and ``&``, ``|``, ``^``, ``~``,
comparisons, sums with Python numbers) compute alike (tests/test_jit.py checks them), so
only those are compiled. A Python bool (``x > 0`` for a float ``x``) computes as numba does,
but numba types both alike, so both are refused.

Done as a numba compiler pass run right after type inference: it reads the typed IR of each
function srcgrad compiles (only srcgrad's generated text; the user's own ``@njit`` helpers and
srcgrad's runtime overloads are compiled by numba's pipeline as before).
"""
from __future__ import annotations

__all__ = ["Pipeline"]

import operator

import numpy as np
from numba.core import ir, types
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.errors import TypingError
from numba.core.typed_passes import NopythonTypeInference

from . import simd

# operator -> its symbol, for arithmetic numpy computes otherwise on bools
_ARITHMETIC = {operator.add: "+", operator.sub: "-", operator.mul: "*",
               operator.truediv: "/", operator.floordiv: "//", operator.mod: "%",
               operator.pow: "**"}
_ALIKE_ON_ARRAYS = (operator.add, operator.mul)  # (bool arrays: numpy's loops, both)
_UNARY = {operator.neg: "-", operator.pos: "+"}
# _rt.tanh(a) and the like (sweeps.simd_math): the numpy ufunc each stands for
_UFUNC_STUBS = {getattr(simd, name): getattr(np, name) for name in simd.FUNCTIONS}


def _bool_kind(t) -> str | None:
    """``"scalar"`` or ``"array"`` when numba type ``t`` holds bools, else None."""
    if isinstance(t, types.Boolean):
        return "scalar"
    if isinstance(t, types.Array) and isinstance(t.dtype, types.Boolean):
        return "array"
    return None


def _refused(expr: ir.Expr, typemap: dict, result) -> str | None:
    """What ``expr`` (of numba type ``result``) does to bools that numpy computes
    otherwise, else None."""
    if expr.op in ("binop", "inplace_binop"):
        fn = expr.fn if expr.op == "binop" else expr.immutable_fn
        symbol = _ARITHMETIC.get(fn)
        kinds = (_bool_kind(typemap.get(expr.lhs.name)), _bool_kind(typemap.get(expr.rhs.name)))
        if symbol is None or None in kinds:
            return None
        if "array" in kinds and fn in _ALIKE_ON_ARRAYS:
            return None
        return f"'{symbol}' of two bools"
    if expr.op == "unary" and expr.fn in _UNARY:
        if _bool_kind(typemap.get(expr.value.name)) is not None:
            return f"unary '{_UNARY[expr.fn]}' of a bool"
    if expr.op == "call" and expr.args:
        key = getattr(typemap.get(expr.func.name), "typing_key", None)
        key = _UFUNC_STUBS.get(key, key) if callable(key) else key
        kinds = [_bool_kind(typemap.get(a.name)) for a in expr.args]
        if key is abs and kinds == ["scalar"]:
            return "abs() of a bool"
        if isinstance(key, np.ufunc) and None not in kinds and \
                _bool_kind(result) is None:
            return f"np.{key.__name__}() of bools"
    return None


@register_pass(mutates_CFG=False, analysis_only=True)
class RefuseBoolArithmetic(FunctionPass):
    """Raises numba's TypingError (``srcgrad: ...``, at the statement) for arithmetic on
    bools that numpy computes otherwise; errors.translate locates it at the user's line."""

    _name = "srcgrad_refuse_bool_arithmetic"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        typemap = state.typemap
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
                    what = _refused(stmt.value, typemap, typemap.get(stmt.target.name))
                    if what is not None:
                        raise TypingError(
                            f"srcgrad: {what}, which numpy computes as bools (bool_ + bool_ "
                            f"is True, bool_ - bool_ raises) and numba as ints (2, 0); "
                            f"convert first (m.astype(np.int64), float(m[0]))",
                            loc=stmt.loc)
        return False


class Pipeline(CompilerBase):
    """numba's nopython pipeline with ``RefuseBoolArithmetic`` after type inference."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(RefuseBoolArithmetic, NopythonTypeInference)
        pm.finalize()
        return [pm]
