"""Rules of Python's arithmetic operators (``operator.add`` is what ``a + b`` resolves to).

Also the builtins ``abs``, ``min``/``max`` of two values and ``sum`` of a sequence. The numpy
ufunc twins (``np.add``...) reuse these formulas; see ``numpy_elementwise``.
"""
import operator

import numpy as np

from ..runtime import ZERO, broadcast_like, is_zero, unbroadcast
from ._helpers import like_sequence, product_like
from .domains import BROADCAST_PAIRS, away_from, binary, draw, unary
from .registry import defrule


def add_vjp(g, ans, x, y):
    return unbroadcast(g, x), unbroadcast(g, y)


def add_jvp(dx, dy, ans, x, y):
    return broadcast_like(dx, ans), broadcast_like(dy, ans)


def sub_vjp(g, ans, x, y):
    return unbroadcast(g, x), unbroadcast(-g, y)


def sub_jvp(dx, dy, ans, x, y):
    return broadcast_like(dx, ans), broadcast_like(-dy, ans)


def mul_vjp(g, ans, x, y):
    return unbroadcast(g * y, x), unbroadcast(g * x, y)


def mul_jvp(dx, dy, ans, x, y):
    return broadcast_like(dx * y, ans), broadcast_like(x * dy, ans)


def truediv_vjp(g, ans, x, y):
    return unbroadcast(g / y, x), unbroadcast(-g * ans / y, y)


def truediv_jvp(dx, dy, ans, x, y):
    return broadcast_like(dx / y, ans), broadcast_like(-dy * ans / y, ans)


def neg_vjp(g, ans, x):
    return (-g,)


def neg_jvp(dx, ans, x):
    return (-dx,)


def pos_vjp(g, ans, x):
    return (g,)


def pos_jvp(dx, ans, x):
    return (dx,)


defrule(operator.add, add_vjp, diff_args=(0, 1), jvp=add_jvp, domain=binary(), linear=True)
defrule(operator.sub, sub_vjp, diff_args=(0, 1), jvp=sub_jvp, domain=binary(), linear=True)
defrule(operator.mul, mul_vjp, diff_args=(0, 1), jvp=mul_jvp, domain=binary())
defrule(operator.truediv, truediv_vjp, diff_args=(0, 1), jvp=truediv_jvp,
        domain=binary(low2=0.5, high2=2.0))
defrule(operator.neg, neg_vjp, jvp=neg_jvp, domain=unary(), linear=True)
defrule(operator.pos, pos_vjp, jvp=pos_jvp, domain=unary(), linear=True)


# --------------------------------------------------------------------------- power, quotients

def pow_base_grad(x, y):
    """d(x**y)/dx = y * x**(y - 1), exactly 0 where y == 0 (x**0 is constant, also at x = 0,
    where the plain formula divides by zero)."""
    if isinstance(y, (int, float)) and y != 0:
        return y * x ** (y - 1)
    return y * x ** np.where(y == 0, 1, y - 1)


def pow_vjp(g, ans, x, y):
    # d/dy = x**y log x, taken as 0 where x <= 0 (there x**y is real only for integer y).
    return (unbroadcast(g * pow_base_grad(x, y), x),
            unbroadcast(g * ans * np.log(np.where(x > 0, x, 1.0)), y))


def builtin_pow_vjp(g, ans, base, exp):
    # pow(base, exp) is base ** exp (with a third argument, integer arithmetic)
    return pow_vjp(g, ans, base, exp)


def builtin_pow_jvp(dbase, dexp, ans, base, exp):
    return pow_jvp(dbase, dexp, ans, base, exp)


def pow_jvp(dx, dy, ans, x, y):
    return (broadcast_like(dx * pow_base_grad(x, y), ans),
            broadcast_like(dy * ans * np.log(np.where(x > 0, x, 1.0)), ans))


def floordiv_vjp(g, ans, x, y):
    # x // y is piecewise constant: its derivative is zero wherever it exists.
    return unbroadcast(0.0 * g, x), unbroadcast(0.0 * g, y)


def floordiv_jvp(dx, dy, ans, x, y):
    return broadcast_like(0.0 * dx, ans), broadcast_like(0.0 * dy, ans)


def mod_vjp(g, ans, x, y):
    # x % y == x - floor(x / y) * y, with floor(x / y) locally constant.
    return unbroadcast(g, x), unbroadcast(-g * np.floor(x / y), y)


def mod_jvp(dx, dy, ans, x, y):
    return broadcast_like(dx, ans), broadcast_like(-dy * np.floor(x / y), ans)


# --------------------------------------------------------------------------- matmul

def matmul_left(g, x, y):
    """Cotangent of ``x`` in ``x @ y`` (numpy's 1-D promotion and batch broadcasting). ``g``
    may also be the cotangent of the product broadcast to a larger shape (grad's sweeps
    pass a sum's cotangent on unreduced: transforms/unreduced.py)."""
    # the common case, without reshapes (attribute reads: np.ndim twice and np.swapaxes
    # cost ~2 us, a fifth of a 16x64 @ 64x64 product; rule code keeps numpy functions, not
    # '.T', so the facade's Tensors pass through it and the rule is differentiated again)
    if getattr(x, "ndim", 0) == 2 and getattr(y, "ndim", 0) == 2:
        if getattr(g, "shape", None) != (x.shape[0], y.shape[1]):
            g = unbroadcast(g, product_like(x, y))
        return np.matmul(g, np.transpose(y))
    g = unbroadcast(g, product_like(x, y))
    x2 = np.expand_dims(x, 0) if np.ndim(x) == 1 else x
    y2 = np.expand_dims(y, -1) if np.ndim(y) == 1 else y
    g2 = np.expand_dims(g, -1) if np.ndim(y) == 1 else g
    g2 = np.expand_dims(g2, -2) if np.ndim(x) == 1 else g2
    return np.reshape(unbroadcast(np.matmul(g2, np.swapaxes(y2, -1, -2)), x2), np.shape(x))


def matmul_right(g, x, y):
    """Cotangent of ``y`` in ``x @ y`` (``g`` as for ``matmul_left``)."""
    if getattr(x, "ndim", 0) == 2 and getattr(y, "ndim", 0) == 2:
        if getattr(g, "shape", None) != (x.shape[0], y.shape[1]):
            g = unbroadcast(g, product_like(x, y))
        return np.matmul(np.transpose(x), g)
    g = unbroadcast(g, product_like(x, y))
    x2 = np.expand_dims(x, 0) if np.ndim(x) == 1 else x
    y2 = np.expand_dims(y, -1) if np.ndim(y) == 1 else y
    g2 = np.expand_dims(g, -1) if np.ndim(y) == 1 else g
    g2 = np.expand_dims(g2, -2) if np.ndim(x) == 1 else g2
    return np.reshape(unbroadcast(np.matmul(np.swapaxes(x2, -1, -2), g2), y2), np.shape(y))


# The two below are no rules: grad's own backward sweeps call them in the rules' place
# (transforms/plain_products.py), and those sweeps are never differentiated again, so they may
# use '.T' and '@', which rule code may not. Each computes exactly what its rule does (the same
# product of the same operands), one check cheaper: ~1 us of the ~4 a 16x64 @ 64x64 cotangent
# takes through the rule, three times per step of an RNN's backward loop.
_ndarray = np.ndarray


def plain_matmul_left(g, x, y):
    """``matmul_left(g, x, y)``: ``g @ y.T`` when ``x``, ``y`` and ``g`` are ndarrays (no
    subclass), ``x`` and ``y`` matrices and ``g`` shaped as their product; the rule otherwise
    (a 1-d or batched operand, a cotangent broadcast to a larger shape, anything else)."""
    if type(g) is _ndarray and type(x) is _ndarray and type(y) is _ndarray \
            and x.ndim == 2 and y.ndim == 2 and g.shape == (x.shape[0], y.shape[1]):
        return g @ y.T
    return matmul_left(g, x, y)


def plain_matmul_right(g, x, y):
    """``matmul_right(g, x, y)``: ``x.T @ g`` under ``plain_matmul_left``'s conditions."""
    if type(g) is _ndarray and type(x) is _ndarray and type(y) is _ndarray \
            and x.ndim == 2 and y.ndim == 2 and g.shape == (x.shape[0], y.shape[1]):
        return x.T @ g
    return matmul_right(g, x, y)


def matmul_vjp(g, ans, x, y):
    """Cotangents of ``x @ y``; one helper per operand, so only active ones are computed."""
    return matmul_left(g, x, y), matmul_right(g, x, y)


def matmul_jvp(dx, dy, ans, x, y):
    # an operand without a tangent gets the lazy zero 0.0, which matmul refuses (0-d)
    return (ZERO if is_zero(dx) else np.matmul(dx, y),
            ZERO if is_zero(dy) else np.matmul(x, dy))


# --------------------------------------------------------------------------- abs, min, max, sum

def max_vjp(g, ans, x, y):
    # Builtin max(x, y) returns x unless y > x: the gradient follows the returned value.
    return (0.0 * g if y > x else g, g if y > x else 0.0 * g)


def max_jvp(dx, dy, ans, x, y):
    return (0.0 * dx if y > x else dx, dy if y > x else 0.0 * dy)


def min_vjp(g, ans, x, y):
    # Builtin min(x, y) returns x unless y < x.
    return (0.0 * g if y < x else g, g if y < x else 0.0 * g)


def min_jvp(dx, dy, ans, x, y):
    return (0.0 * dx if y < x else dx, dy if y < x else 0.0 * dy)


def spread_sum(g, iterable):
    """Cotangent of builtin ``sum(iterable)``: ``g`` for every item, in the same container."""
    if isinstance(iterable, (list, tuple)):
        return like_sequence(iterable, [unbroadcast(g, item) for item in iterable])
    # An array is summed over its first axis, like a sequence of its rows.
    return np.broadcast_to(g, np.shape(iterable))


def sum_vjp(g, ans, iterable, start=0):
    # sum(iterable, start) is start + item + item + ...: start takes the whole cotangent
    return spread_sum(g, iterable), unbroadcast(g, start)


def sum_jvp(d_iterable, d_start, ans, iterable, start=0):
    # (a tangent may be the lazy zero when only the other operand varies)
    by_items = ZERO if is_zero(d_iterable) else sum(d_iterable)
    return broadcast_like(by_items, ans), broadcast_like(d_start, ans)


def quotient_points(rng):
    """Pairs (x, y) with x / y well inside (k, k + 1): floor and mod are smooth there."""
    points = []
    for xs, ys in BROADCAST_PAIRS:
        full = np.broadcast_shapes(xs or (), ys or ())
        q = rng.integers(-3, 3, size=full) + rng.uniform(0.2, 0.8, size=full)
        if (xs or ()) == full:  # x has the full shape: x = q * y
            y = draw(rng, ys, 0.5, 2.0) * rng.choice([-1.0, 1.0])
            x = q * y
            x = float(x) if xs is None else x
        elif (ys or ()) == full:  # y has the full shape: y = x / q
            x = away_from(rng, xs, [0.0], 0.3)
            y = x / q
        else:
            continue
        points.append(((x, y), {}))
    return points


def power_points(rng):
    """Positive bases with any exponent, and any base with integer exponents."""
    points = binary(0.5, 2.0, -2.0, 2.0)(rng)
    for n in (2, 3, -1):
        points.append(((away_from(rng, (3,), [0.0], 0.3), n), {}))
    points.append(((away_from(rng, None, [0.0], 0.3), 2), {}))
    return points


def matmul_points(rng):
    pairs = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
             ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)),
             ((5, 2, 3), (3,)), ((3,), (5, 3, 2))]
    return [((draw(rng, a), draw(rng, b)), {}) for a, b in pairs]


def _scalar_pairs(rng):
    """Untied pairs of scalars in both orders (Python floats and 0-d arrays)."""
    a, b = draw(rng, None), draw(rng, None)
    if abs(a - b) < 0.2:
        b = a + 0.5
    return [((a, b), {}), ((b, a), {}), ((np.array(a), b), {}), ((a, np.array(b)), {})]


def _sequences(rng):
    return [(([draw(rng, (2, 3)), draw(rng, (2, 3)), draw(rng, (2, 3))],), {}),
            (([draw(rng, (3,)), draw(rng, None)], draw(rng, (2, 3))), {}),
            (([draw(rng, None), draw(rng, None)], draw(rng, None)), {}),
            (((draw(rng, (3,)), draw(rng, None), draw(rng, (2, 3))),), {}),
            (([draw(rng, None), draw(rng, None)],), {}),
            ((draw(rng, (4, 3)),), {})]


defrule(operator.pow, pow_vjp, diff_args=(0, 1), jvp=pow_jvp, domain=power_points)
defrule(pow, builtin_pow_vjp, diff_args=(0, 1), jvp=builtin_pow_jvp, domain=power_points)
defrule(operator.floordiv, floordiv_vjp, diff_args=(0, 1), jvp=floordiv_jvp,
        domain=quotient_points)
defrule(operator.mod, mod_vjp, diff_args=(0, 1), jvp=mod_jvp, domain=quotient_points)
defrule(operator.matmul, matmul_vjp, diff_args=(0, 1), jvp=matmul_jvp, domain=matmul_points)
defrule(max, max_vjp, diff_args=(0, 1), jvp=max_jvp, domain=_scalar_pairs)
defrule(min, min_vjp, diff_args=(0, 1), jvp=min_jvp, domain=_scalar_pairs)
defrule(sum, sum_vjp, diff_args=(0, 1), jvp=sum_jvp, domain=_sequences, linear=True)
