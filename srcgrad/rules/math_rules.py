"""Rules of the ``math`` module's functions of Python floats.

The vjps use ``math`` functions themselves: they are scalar code, fast on floats, and every
function they call has a rule here, so the transformer can differentiate them again. They also
accept 0-d arrays, as the primals do. ``math.log``'s base and ``math.hypot`` with more than two
coordinates are not differentiable (the base is a constant; ``hypot`` takes two values).
"""
import math

from .domains import away_from, draw
# Formulas that call no function of their own (they use the result or arithmetic only) are
# the same for math and numpy: written once, in numpy_elementwise.
from .numpy_elementwise import (cbrt_jvp, cbrt_vjp, exp2_jvp, exp2_vjp, exp_jvp, exp_vjp,
                                expm1_jvp, expm1_vjp, log1p_jvp, log1p_vjp, log2_jvp, log2_vjp,
                                log10_jvp, log10_vjp, sqrt_jvp, sqrt_vjp, tan_jvp, tan_vjp,
                                tanh_jvp, tanh_vjp)
from .registry import defrule

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def sin_vjp(g, ans, x):
    return (g * math.cos(x),)


def sin_jvp(dx, ans, x):
    return (dx * math.cos(x),)


def cos_vjp(g, ans, x):
    return (-g * math.sin(x),)


def cos_jvp(dx, ans, x):
    return (-dx * math.sin(x),)


def asin_vjp(g, ans, x):
    return (g / math.sqrt(1.0 - x * x),)


def asin_jvp(dx, ans, x):
    return (dx / math.sqrt(1.0 - x * x),)


def acos_vjp(g, ans, x):
    return (-g / math.sqrt(1.0 - x * x),)


def acos_jvp(dx, ans, x):
    return (-dx / math.sqrt(1.0 - x * x),)


def atan_vjp(g, ans, x):
    return (g / (1.0 + x * x),)


def atan_jvp(dx, ans, x):
    return (dx / (1.0 + x * x),)


def atan2_vjp(g, ans, y, x):
    return (g * x / (x * x + y * y), -g * y / (x * x + y * y))


def atan2_jvp(dy, dx, ans, y, x):
    return (dy * x / (x * x + y * y), -dx * y / (x * x + y * y))


def sinh_vjp(g, ans, x):
    return (g * math.cosh(x),)


def sinh_jvp(dx, ans, x):
    return (dx * math.cosh(x),)


def cosh_vjp(g, ans, x):
    return (g * math.sinh(x),)


def cosh_jvp(dx, ans, x):
    return (dx * math.sinh(x),)


def asinh_vjp(g, ans, x):
    return (g / math.sqrt(x * x + 1.0),)


def asinh_jvp(dx, ans, x):
    return (dx / math.sqrt(x * x + 1.0),)


def acosh_vjp(g, ans, x):
    return (g / math.sqrt(x * x - 1.0),)


def acosh_jvp(dx, ans, x):
    return (dx / math.sqrt(x * x - 1.0),)


def atanh_vjp(g, ans, x):
    return (g / (1.0 - x * x),)


def atanh_jvp(dx, ans, x):
    return (dx / (1.0 - x * x),)


def log_vjp(g, ans, x, base=math.e):
    # The base is a constant; math.log(math.e) == 1.0 exactly.
    return (g / (x * math.log(base)),)


def log_jvp(dx, ans, x, base=math.e):
    return (dx / (x * math.log(base)),)


def pow_vjp(g, ans, x, y):
    # d/dy = x**y log x, taken as 0 where x <= 0.
    return (g * y * math.pow(x, y - 1.0), g * ans * (math.log(x) if x > 0 else 0.0))


def pow_jvp(dx, dy, ans, x, y):
    return (dx * y * math.pow(x, y - 1.0), dy * ans * (math.log(x) if x > 0 else 0.0))


def hypot_vjp(g, ans, x, y):
    return (g * x / ans, g * y / ans)


def hypot_jvp(dx, dy, ans, x, y):
    return (dx * x / ans, dy * y / ans)


def fabs_vjp(g, ans, x):
    # The subgradient at 0 is taken as 0.
    return (g * (float(x > 0) - float(x < 0)),)


def fabs_jvp(dx, ans, x):
    return (dx * (float(x > 0) - float(x < 0)),)


def erf_vjp(g, ans, x):
    return (g * TWO_OVER_SQRT_PI * math.exp(-x * x),)


def erf_jvp(dx, ans, x):
    return (dx * TWO_OVER_SQRT_PI * math.exp(-x * x),)


def erfc_vjp(g, ans, x):
    return (-g * TWO_OVER_SQRT_PI * math.exp(-x * x),)


def erfc_jvp(dx, ans, x):
    return (-dx * TWO_OVER_SQRT_PI * math.exp(-x * x),)


def degrees_vjp(g, ans, x):
    return (g * (180.0 / math.pi),)


def degrees_jvp(dx, ans, x):
    return (dx * (180.0 / math.pi),)


def radians_vjp(g, ans, x):
    return (g * (math.pi / 180.0),)


def radians_jvp(dx, ans, x):
    return (dx * (math.pi / 180.0),)


# --------------------------------------------------------------------------- domains

def scalars(low=-2.0, high=2.0, avoid=()):
    """Python floats (and one 0-d array) in [low, high], away from ``avoid``."""
    def domain(rng):
        xs = [away_from(rng, None, avoid, low=low, high=high) if avoid
              else draw(rng, None, low, high) for _ in range(3)]
        return [((x,), {}) for x in xs] + [((away_from(rng, (), avoid, low=low, high=high),),
                                            {})]
    return domain


def scalar_pairs(low=-2.0, high=2.0, low2=None, high2=None):
    def domain(rng):
        low_2 = low if low2 is None else low2
        high_2 = high if high2 is None else high2
        return [((draw(rng, None, low, high), draw(rng, None, low_2, high_2)), {})
                for _ in range(4)]
    return domain


def _log_points(rng):
    return scalars(0.2, 3.0)(rng) + [((draw(rng, None, 0.2, 3.0), 2.0), {}),
                                     ((draw(rng, None, 0.2, 3.0), 10), {})]


def _pow_points(rng):
    return scalar_pairs(0.5, 2.0, -2.0, 2.0)(rng) + [((away_from(rng, None, [0.0], 0.3), 2), {}),
                                                     ((-1.5, 3), {})]


_UNARY = [
    (math.sin, sin_vjp, sin_jvp, scalars()),
    (math.cos, cos_vjp, cos_jvp, scalars()),
    (math.tan, tan_vjp, tan_jvp, scalars(-1.2, 1.2)),
    (math.asin, asin_vjp, asin_jvp, scalars(-0.9, 0.9)),
    (math.acos, acos_vjp, acos_jvp, scalars(-0.9, 0.9)),
    (math.atan, atan_vjp, atan_jvp, scalars()),
    (math.sinh, sinh_vjp, sinh_jvp, scalars()),
    (math.cosh, cosh_vjp, cosh_jvp, scalars()),
    (math.tanh, tanh_vjp, tanh_jvp, scalars()),
    (math.asinh, asinh_vjp, asinh_jvp, scalars()),
    (math.acosh, acosh_vjp, acosh_jvp, scalars(1.2, 3.0)),
    (math.atanh, atanh_vjp, atanh_jvp, scalars(-0.9, 0.9)),
    (math.exp, exp_vjp, exp_jvp, scalars()),
    (math.exp2, exp2_vjp, exp2_jvp, scalars()),
    (math.expm1, expm1_vjp, expm1_jvp, scalars()),
    (math.log, log_vjp, log_jvp, _log_points),
    (math.log1p, log1p_vjp, log1p_jvp, scalars(-0.8, 2.0)),
    (math.log2, log2_vjp, log2_jvp, scalars(0.2, 3.0)),
    (math.log10, log10_vjp, log10_jvp, scalars(0.2, 3.0)),
    (math.sqrt, sqrt_vjp, sqrt_jvp, scalars(0.2, 3.0)),
    (math.cbrt, cbrt_vjp, cbrt_jvp, scalars(avoid=(0.0,))),
    (math.fabs, fabs_vjp, fabs_jvp, scalars(avoid=(0.0,))),
    (math.erf, erf_vjp, erf_jvp, scalars()),
    (math.erfc, erfc_vjp, erfc_jvp, scalars()),
]
for _fn, _vjp, _jvp, _domain in _UNARY:
    defrule(_fn, _vjp, jvp=_jvp, domain=_domain)
del _fn, _vjp, _jvp, _domain

defrule(math.degrees, degrees_vjp, jvp=degrees_jvp, domain=scalars(), linear=True)
defrule(math.radians, radians_vjp, jvp=radians_jvp, domain=scalars(), linear=True)
defrule(math.atan2, atan2_vjp, diff_args=(0, 1), jvp=atan2_jvp,
        domain=scalar_pairs(-2.0, 2.0, 0.3, 2.0))
defrule(math.pow, pow_vjp, diff_args=(0, 1), jvp=pow_jvp, domain=_pow_points)
defrule(math.hypot, hypot_vjp, diff_args=(0, 1), jvp=hypot_jvp, domain=scalar_pairs(0.3, 2.0))
