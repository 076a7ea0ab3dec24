"""Rules of the ``math`` module's functions of Python floats.

The vjps use ``math`` functions themselves: they are scalar code, fast on floats, and every
function they call has a rule here, so the transformer can differentiate them again. They also
accept 0-d arrays, as the primals do. ``math.log``'s base and ``math.hypot`` with more than two
coordinates are not differentiable (the base is a constant; ``hypot`` takes two values).
"""
import math

from .derive import elementwise
from .domains import away_from, draw
from .numpy_elementwise import (cbrt_derivative, exp2_derivative, exp_derivative,
                                expm1_derivative, log1p_derivative, log2_derivative,
                                log10_derivative, sqrt_derivative, tan_derivative,
                                tanh_derivative)
from .registry import defrule

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


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


defrule(math.log, log_vjp, jvp=log_jvp, domain=_log_points)
defrule(math.pow, pow_vjp, diff_args=(0, 1), jvp=pow_jvp, domain=_pow_points)


# --------------------------------------------------------------------------- from derivatives
# Formulas that call no function of their own are numpy's (numpy_elementwise).

for _fn, _derivative, _domain in [
        (math.tan, tan_derivative, scalars(-1.2, 1.2)), (math.tanh, tanh_derivative, scalars()),
        (math.exp, exp_derivative, scalars()),
        (getattr(math, "exp2", None), exp2_derivative, scalars()),  # Python 3.11+
        (math.expm1, expm1_derivative, scalars()),
        (math.log1p, log1p_derivative, scalars(-0.8, 2.0)),
        (math.log2, log2_derivative, scalars(0.2, 3.0)),
        (math.log10, log10_derivative, scalars(0.2, 3.0)),
        (math.sqrt, sqrt_derivative, scalars(0.2, 3.0)),
        (getattr(math, "cbrt", None), cbrt_derivative, scalars(avoid=(0.0,)))]:  # 3.11+
    if _fn is not None:
        elementwise(_fn, _domain)(_derivative)
del _fn, _derivative, _domain


@elementwise(math.sin, scalars())
def sin_derivative(ans, x):
    return math.cos(x)


@elementwise(math.cos, scalars())
def cos_derivative(ans, x):
    return -math.sin(x)


@elementwise(math.asin, scalars(-0.9, 0.9))
def asin_derivative(ans, x):
    return 1.0 / math.sqrt(1.0 - x * x)


@elementwise(math.acos, scalars(-0.9, 0.9))
def acos_derivative(ans, x):
    return -1.0 / math.sqrt(1.0 - x * x)


@elementwise(math.atan, scalars())
def atan_derivative(ans, x):
    return 1.0 / (1.0 + x * x)


@elementwise(math.sinh, scalars())
def sinh_derivative(ans, x):
    return math.cosh(x)


@elementwise(math.cosh, scalars())
def cosh_derivative(ans, x):
    return math.sinh(x)


@elementwise(math.asinh, scalars())
def asinh_derivative(ans, x):
    return 1.0 / math.sqrt(x * x + 1.0)


@elementwise(math.acosh, scalars(1.2, 3.0))
def acosh_derivative(ans, x):
    return 1.0 / math.sqrt(x * x - 1.0)


@elementwise(math.atanh, scalars(-0.9, 0.9))
def atanh_derivative(ans, x):
    return 1.0 / (1.0 - x * x)


@elementwise(math.fabs, scalars(avoid=(0.0,)))
def fabs_derivative(ans, x):
    # The subgradient at 0 is taken as 0.
    return float(x > 0) - float(x < 0)


@elementwise(math.erf, scalars())
def erf_derivative(ans, x):
    return TWO_OVER_SQRT_PI * math.exp(-x * x)


@elementwise(math.erfc, scalars())
def erfc_derivative(ans, x):
    return -TWO_OVER_SQRT_PI * math.exp(-x * x)


@elementwise(math.degrees, scalars(), linear=True)
def degrees_derivative(ans, x):
    return 180.0 / math.pi


@elementwise(math.radians, scalars(), linear=True)
def radians_derivative(ans, x):
    return math.pi / 180.0


@elementwise(math.hypot, scalar_pairs(0.3, 2.0), broadcasting=False)
def hypot_derivative(ans, x, y):
    return x / ans, y / ans


@elementwise(math.atan2, scalar_pairs(-2.0, 2.0, 0.3, 2.0), broadcasting=False)
def atan2_derivative(ans, y, x):
    return x / (x * x + y * y), -y / (x * x + y * y)
