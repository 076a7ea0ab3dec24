"""Rules of numpy's elementwise functions (ufuncs), plus ``np.clip`` and ``np.where``.

Arithmetic ufuncs (``np.add``, ``np.power``...) share the formulas of their Python operators.
Kinks (``abs``, ``maximum``, ``clip``) take the subgradient documented at each rule; ties of
``maximum``/``minimum`` split the gradient evenly.
"""

import numpy as np

from ..runtime import broadcast_like, unbroadcast
from . import operators as ops
from ._helpers import fmax_weight, greater_weight
from .domains import away_from, binary, draw, unary
from .derive import elementwise
from .registry import defrule

LN2 = float(np.log(2.0))
LN10 = float(np.log(10.0))


# --------------------------------------------------------------------------- domains

def _arctan2_points(rng):
    # Keep away from the origin and from the branch cut (x2 < 0, x1 = 0).
    return binary(0.3, 2.0, 0.3, 2.0)(rng) + binary(-2.0, 2.0, 0.3, 2.0)(rng)


def _untied(low=-2.0, high=2.0):
    def domain(rng):
        points = binary(low, high)(rng)
        out = []
        for (x1, x2), kw in points:
            gap = np.asarray(x1) - np.asarray(x2)
            if np.all(np.abs(gap) > 0.05):
                out.append(((x1, x2), kw))
        return out
    return domain


# --------------------------------------------------------------------------- trigonometric
# Each function is registered from its derivative (see ``derive.elementwise``).

@elementwise(np.sin, unary())
def sin_derivative(ans, x):
    return np.cos(x)


@elementwise(np.cos, unary())
def cos_derivative(ans, x):
    return -np.sin(x)


@elementwise(np.tan, unary(-1.2, 1.2))
def tan_derivative(ans, x):
    return 1.0 + ans * ans


@elementwise(np.arcsin, unary(-0.9, 0.9))
def arcsin_derivative(ans, x):
    return 1.0 / np.sqrt(1.0 - x * x)


@elementwise(np.arccos, unary(-0.9, 0.9))
def arccos_derivative(ans, x):
    return -1.0 / np.sqrt(1.0 - x * x)


@elementwise(np.arctan, unary())
def arctan_derivative(ans, x):
    return 1.0 / (1.0 + x * x)


@elementwise(np.sinc, unary(avoid=(0.0,)))
def sinc_derivative(ans, x):
    # d/dx sin(pi x)/(pi x) = (cos(pi x) - sinc(x)) / x, which tends to 0 at x = 0.
    return (np.cos(np.pi * x) - ans) / np.where(x == 0, 1.0, x)


# --------------------------------------------------------------------------- hyperbolic

@elementwise(np.sinh, unary())
def sinh_derivative(ans, x):
    return np.cosh(x)


@elementwise(np.cosh, unary())
def cosh_derivative(ans, x):
    return np.sinh(x)


@elementwise(np.tanh, unary())
def tanh_derivative(ans, x):
    return 1.0 - ans * ans


@elementwise(np.arcsinh, unary())
def arcsinh_derivative(ans, x):
    return 1.0 / np.sqrt(x * x + 1.0)


@elementwise(np.arccosh, unary(1.2, 3.0))
def arccosh_derivative(ans, x):
    return 1.0 / np.sqrt(x * x - 1.0)


@elementwise(np.arctanh, unary(-0.9, 0.9))
def arctanh_derivative(ans, x):
    return 1.0 / (1.0 - x * x)


# --------------------------------------------------------------------------- exp and log

@elementwise(np.exp, unary())
def exp_derivative(ans, x):
    return ans


@elementwise(np.exp2, unary())
def exp2_derivative(ans, x):
    return ans * LN2


@elementwise(np.expm1, unary())
def expm1_derivative(ans, x):
    return ans + 1.0


@elementwise(np.log, unary(0.2, 3.0))
def log_derivative(ans, x):
    return 1.0 / x


@elementwise(np.log2, unary(0.2, 3.0))
def log2_derivative(ans, x):
    return 1.0 / (x * LN2)


@elementwise(np.log10, unary(0.2, 3.0))
def log10_derivative(ans, x):
    return 1.0 / (x * LN10)


@elementwise(np.log1p, unary(-0.8, 2.0))
def log1p_derivative(ans, x):
    return 1.0 / (1.0 + x)


# --------------------------------------------------------------------------- powers

@elementwise(np.sqrt, unary(0.2, 3.0))
def sqrt_derivative(ans, x):
    return 0.5 / ans


@elementwise(np.cbrt, unary(avoid=(0.0,)))
def cbrt_derivative(ans, x):
    return 1.0 / (3.0 * ans * ans)


@elementwise(np.square, unary())
def square_derivative(ans, x):
    return 2.0 * x


@elementwise(np.reciprocal, unary(avoid=(0.0,)))
def reciprocal_derivative(ans, x):
    return -ans * ans


# --------------------------------------------------------------------------- linear, real

@elementwise((np.deg2rad, np.radians), unary(), linear=True)
def deg2rad_derivative(ans, x):
    return np.pi / 180.0


@elementwise((np.rad2deg, np.degrees), unary(), linear=True)
def rad2deg_derivative(ans, x):
    return 180.0 / np.pi


# --------------------------------------------------------------------------- binary

@elementwise(np.arctan2, _arctan2_points)
def arctan2_derivative(ans, x1, x2):
    # ans = atan2(x1, x2) is the angle of the point (x2, x1).
    return x2 / (x1 * x1 + x2 * x2), -x1 / (x1 * x1 + x2 * x2)


@elementwise(np.hypot, binary(0.3, 2.0))
def hypot_derivative(ans, x1, x2):
    return x1 / ans, x2 / ans


@elementwise(np.logaddexp, binary())
def logaddexp_derivative(ans, x1, x2):
    return np.exp(x1 - ans), np.exp(x2 - ans)


@elementwise(np.logaddexp2, binary())
def logaddexp2_derivative(ans, x1, x2):
    return np.exp2(x1 - ans), np.exp2(x2 - ans)


@elementwise(np.maximum, _untied())
def maximum_derivative(ans, x1, x2):
    return greater_weight(x1, x2), greater_weight(x2, x1)


@elementwise(np.minimum, _untied())
def minimum_derivative(ans, x1, x2):
    return greater_weight(x2, x1), greater_weight(x1, x2)


@elementwise(np.fmax, _untied())
def fmax_derivative(ans, x1, x2):
    return fmax_weight(x1, x2), fmax_weight(x2, x1)


@elementwise(np.fmin, _untied())
def fmin_derivative(ans, x1, x2):
    return fmax_weight(-x1, -x2), fmax_weight(-x2, -x1)


@elementwise(np.fmod, ops.quotient_points)
def fmod_derivative(ans, x1, x2):
    # fmod(x1, x2) == x1 - trunc(x1 / x2) * x2, with the quotient locally constant.
    return 1.0, -np.trunc(x1 / x2)


# --------------------------------------------------------------------------- clip, where

def clip_vjp(g, ans, a, a_min=None, a_max=None, out=None, **kwargs):
    # The gradient goes to the operand the result equals: to a where it was not clipped (also
    # at the bounds themselves), else to the bound that clipped it.
    return (unbroadcast(g * (ans == a), a),
            _clip_bound_part(g, ans, a, a_min, None, unbroadcast),
            _clip_bound_part(g, ans, a, a_max, a_min, unbroadcast))


def clip_jvp(da, dmin, dmax, ans, a, a_min=None, a_max=None, out=None, **kwargs):
    return (broadcast_like(da * (ans == a), ans),
            _clip_bound_part(dmin, ans, a, a_min, None, broadcast_like, ans),
            _clip_bound_part(dmax, ans, a, a_max, a_min, broadcast_like, ans))


def _clip_bound_part(t, ans, a, bound, earlier, shape_to, like=None):
    """``t`` where clip's result came from ``bound`` (not from ``a``, nor from the
    ``earlier`` bound when both are equal), shaped by ``shape_to`` like ``like`` (or
    ``bound``); None for an absent bound."""
    if bound is None:
        return None
    taken = (ans == bound) & (ans != a)
    if earlier is not None:
        taken = taken & (ans != earlier)
    return shape_to(t * taken, bound if like is None else like)


def where_vjp(g, ans, condition, x, y):
    return (unbroadcast(np.where(condition, g, 0.0), x),
            unbroadcast(np.where(condition, 0.0, g), y))


def where_jvp(dx, dy, ans, condition, x, y):
    return (broadcast_like(np.where(condition, dx, 0.0), ans),
            broadcast_like(np.where(condition, 0.0, dy), ans))


# --------------------------------------------------------------------------- domains

def _clip_points(rng):
    def x(shape):
        return away_from(rng, shape, [-1.0, 1.0])
    bounds = draw(rng, (2, 3), 0.5, 1.5)
    bounds = np.where(np.abs(bounds - 1.0) < 0.1, 1.3, bounds)
    return [((x(None), -1.0, 1.0), {}), ((x((2, 3)), -1.0, 1.0), {}),
            ((x((3,)), None, 1.0), {}), ((x((3,)), -1.0, None), {}),
            ((x((3,)), -1.0, np.array([0.5, 1.0, 1.5])), {}),
            ((x((3,)), -bounds, bounds), {}),
            ((x((2, 3)),), {"min": -1.0, "max": 1.0})]


def _where_points(rng):
    points = []
    for cs, xs, ys in [((3,), (3,), (3,)), ((2, 3), (3,), (2, 1)), ((2, 3), None, (2, 3)),
                       ((3,), (2, 3), None), ((), None, None), ((2, 1), (1, 3), (3,))]:
        condition = rng.uniform(size=cs) > 0.5
        points.append(((condition, draw(rng, xs), draw(rng, ys)), {}))
    return points


# --------------------------------------------------------------------------- registration

defrule(np.negative, ops.neg_vjp, jvp=ops.neg_jvp, domain=unary(), linear=True)
defrule(np.positive, ops.pos_vjp, jvp=ops.pos_jvp, domain=unary(), linear=True)

# The ufunc twins of Python's operators. np.divide is np.true_divide, np.mod is np.remainder,
# np.pow is np.power: each object is registered once.
defrule(np.add, ops.add_vjp, diff_args=(0, 1), jvp=ops.add_jvp, domain=binary(), linear=True)
defrule(np.subtract, ops.sub_vjp, diff_args=(0, 1), jvp=ops.sub_jvp, domain=binary(),
        linear=True)
defrule(np.multiply, ops.mul_vjp, diff_args=(0, 1), jvp=ops.mul_jvp, domain=binary())
defrule(np.divide, ops.truediv_vjp, diff_args=(0, 1), jvp=ops.truediv_jvp,
        domain=binary(low2=0.5, high2=2.0))
defrule(np.power, ops.pow_vjp, diff_args=(0, 1), jvp=ops.pow_jvp, domain=ops.power_points)
defrule(np.float_power, ops.pow_vjp, diff_args=(0, 1), jvp=ops.pow_jvp,
        domain=binary(0.5, 2.0, -2.0, 2.0))
defrule(np.floor_divide, ops.floordiv_vjp, diff_args=(0, 1), jvp=ops.floordiv_jvp,
        domain=ops.quotient_points)
defrule(np.remainder, ops.mod_vjp, diff_args=(0, 1), jvp=ops.mod_jvp, domain=ops.quotient_points)
defrule(np.matmul, ops.matmul_vjp, diff_args=(0, 1), jvp=ops.matmul_jvp,
        domain=ops.matmul_points)


defrule(np.clip, clip_vjp, diff_args=(0, 1, 2), jvp=clip_jvp, domain=_clip_points)
defrule(np.where, where_vjp, diff_args=(1, 2), jvp=where_jvp, domain=_where_points, linear=True)

