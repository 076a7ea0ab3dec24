"""Rules of ``divmod`` and ``np.divmod``: ``(x // y, x % y)`` in one call.

The quotient is locally constant (its derivative is zero wherever it is defined); the
remainder is ``x - q * y`` with that constant ``q``, read from the result itself (not
recomputed as ``floor(x / y)``, which rounding can make differ from numpy's ``q``). The
tangent is a ``tuple_tangent``, which adds item by item when both operands are active.
"""
import numpy as np

from ..runtime import broadcast_like, part, unbroadcast
from .numpy_linalg import tuple_tangent
from .operators import quotient_points
from .registry import defrule


def divmod_vjp(g, ans, x, y):
    g_rem = part(g, 1)
    return unbroadcast(g_rem, x), unbroadcast(-g_rem * ans[0], y)


def divmod_jvp(dx, dy, ans, x, y):
    q, rem = ans
    return (tuple_tangent((0.0 * q, broadcast_like(dx, rem))),
            tuple_tangent((0.0 * q, broadcast_like(-dy * q, rem))))


defrule(divmod, divmod_vjp, diff_args=(0, 1), jvp=divmod_jvp, domain=quotient_points)
defrule(np.divmod, divmod_vjp, diff_args=(0, 1), jvp=divmod_jvp, domain=quotient_points,
        name="numpy.divmod")
