"""Rules of the ``math`` module's functions of Python floats.

The vjps use ``math`` functions themselves: they are scalar code, fast on floats, and every
function they call has a rule here, so the transformer can differentiate them again. They also
accept 0-d arrays, as the primals do. ``math.log``'s base is a constant, not differentiable.

Functions of sequences (``fsum``, ``prod``, ``dist``) give cotangents of the same kind of
container. Piecewise functions take the derivative of their smooth pieces: ``fmod(x, y)`` is
``x - trunc(x/y) y`` and ``remainder(x, y)`` is ``x - rint(x/y) y``, so their ``y``-derivative
is ``-trunc(x/y)`` (resp. ``-rint(x/y)``), a subgradient where the quotient's rounding jumps;
``copysign(x, y)``'s derivative in ``y`` is 0, and in ``x`` at 0 it is taken from the sign of
0.0 (+1 for 0.0, -1 for -0.0). ``dist`` of equal points has the gradient nan, like
``np.linalg.norm`` at 0. ``gamma`` and ``lgamma`` read the digamma function from ``polygamma``,
written here in plain Python (recurrence, then the asymptotic series) with its own rule, so
it has derivatives of every order.
"""
import math

import numpy as np

from ..runtime import ZERO, densify, is_zero, unbroadcast
from ._helpers import like_sequence
from .derive import elementwise
from .domains import away_from, draw
from .numpy_elementwise import (cbrt_derivative, exp2_derivative, exp_derivative,
                                expm1_derivative, log1p_derivative, log2_derivative,
                                log10_derivative, sqrt_derivative, tan_derivative,
                                tanh_derivative)
from .registry import defrule, nondifferentiable

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


def _quotient_points(low, high):
    """Pairs (x, y) whose quotient x / y is an integer plus [low, high]: away from the
    jumps of its truncation (fmod: low > 0) or of its rounding (remainder)."""
    def domain(rng):
        points = []
        for k in (-2, -1, 0, 1, 2):
            y = draw(rng, None, 0.5, 2.0) * (1.0 if k % 2 else -1.0)
            points.append(((float((k + rng.uniform(low, high)) * y), y), {}))
        return points + [((np.array(points[0][0][0]), points[0][0][1]), {})]
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


@elementwise(math.atan2, scalar_pairs(-2.0, 2.0, 0.3, 2.0), broadcasting=False)
def atan2_derivative(ans, y, x):
    return x / (x * x + y * y), -y / (x * x + y * y)


@elementwise(math.fmod, _quotient_points(0.2, 0.8), broadcasting=False)
def fmod_derivative(ans, x, y):
    # fmod(x, y) = x - trunc(x / y) * y; int() truncates toward zero (also 0-d arrays)
    return 1.0, -int(x / y)


@elementwise(math.remainder, _quotient_points(-0.3, 0.3), broadcasting=False)
def remainder_derivative(ans, x, y):
    # remainder(x, y) = x - rint(x / y) * y (the quotient rounded half to even)
    return 1.0, -np.rint(x / y)


@elementwise(math.copysign, scalar_pairs(), broadcasting=False)
def copysign_derivative(ans, x, y):
    return math.copysign(1.0, x) * math.copysign(1.0, y), 0.0


@elementwise(math.gamma, scalars(-2.8, 3.0, avoid=(-2.0, -1.0, 0.0)))
def gamma_derivative(ans, x):
    return ans * polygamma(0, x)


@elementwise(math.lgamma, scalars(-2.8, 3.0, avoid=(-2.0, -1.0, 0.0)))
def lgamma_derivative(ans, x):
    return polygamma(0, x)


def ldexp_vjp(g, ans, x, i):
    return (g * 2.0 ** i,)


def ldexp_jvp(dx, ans, x, i):
    return (dx * 2.0 ** i,)


defrule(math.ldexp, ldexp_vjp, jvp=ldexp_jvp, linear=True,
        domain=lambda rng: [((draw(rng, None), 3), {}), ((draw(rng, None), -2), {}),
                            ((draw(rng, ()), 0), {})])


# --------------------------------------------------------------------------- polygamma

# Bernoulli numbers B_2, B_4, ..., B_16 of the asymptotic series
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


@nondifferentiable
def polygamma_shift(x) -> int:
    """How many steps of the recurrence bring ``x`` to 20 or more."""
    m = 0
    while x + m < 20.0:
        m += 1
    return m


def polygamma(n, x):
    """The ``n``-th derivative of the digamma function at real ``x`` (not 0, -1, -2...):
    psi_n(x) = psi_n(x + m) - sum_k (-1)^n n! / (x + k)^(n + 1), then the asymptotic
    series at x + m >= 20 (eight Bernoulli terms: about 1e-16 relative for small n)."""
    m = polygamma_shift(x)
    sign = 1.0 - 2.0 * (n % 2)  # (-1)^n
    scale = sign * math.factorial(n)
    total = 0.0
    for k in range(m):
        total = total - scale / (x + k) ** (n + 1)
    z = x + m
    if n == 0:
        series = np.log(z) - 0.5 / z
        for k in range(len(_BERNOULLI)):
            series = series - _BERNOULLI[k] / ((2 * k + 2) * z ** (2 * k + 2))
    else:
        series = math.factorial(n - 1) / z ** n + math.factorial(n) / (2.0 * z ** (n + 1))
        for k in range(len(_BERNOULLI)):
            j = 2 * k + 2
            series = series + _BERNOULLI[k] * math.factorial(j + n - 1) / (
                math.factorial(j) * z ** (j + n))
        series = -sign * series
    return total + series


def polygamma_vjp(g, ans, n, x):
    return (g * polygamma(n + 1, x),)


def polygamma_jvp(dx, ans, n, x):
    return (dx * polygamma(n + 1, x),)


defrule(polygamma, polygamma_vjp, diff_args=(1,), jvp=polygamma_jvp,
        domain=lambda rng: [((n, away_from(rng, None, [-2.0, -1.0, 0.0], 0.2, -2.8, 4.0)), {})
                            for n in (0, 1, 2, 3)])


# --------------------------------------------------------------------------- hypot

def hypot_vjp(g, ans, *coordinates):
    ans = np.float64(ans)  # (at the origin: nan, as np.linalg.norm's, not ZeroDivisionError)
    return tuple([g * (c / ans) for c in coordinates])


def hypot_jvp(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12, d13, d14, d15, ans,
              *coordinates):
    # (one tangent per differentiable position the rule declares: up to sixteen coordinates)
    tangents = (d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12, d13, d14, d15)
    ans = np.float64(ans)
    return tuple([tangents[k] * (c / ans) for k, c in enumerate(coordinates)])


def _hypot_points(rng):
    return [(tuple(draw(rng, None, 0.3, 2.0) for _ in range(n)), {}) for n in (1, 2, 3, 5, 16)] + \
        [((draw(rng, None, 0.3, 2.0), draw(rng, (), -2.0, -0.3)), {})]


defrule(math.hypot, hypot_vjp, diff_args=tuple(range(16)), jvp=hypot_jvp,
        domain=_hypot_points)


# --------------------------------------------------------------------------- sequences

def fsum_vjp(g, ans, seq):
    return (like_sequence(seq, [unbroadcast(g, item) for item in seq]),)


def fsum_jvp(dseq, ans, seq):
    return (ZERO if is_zero(dseq) else math.fsum(densify(dseq, seq)),)


def all_but(seq, i):
    """The items of ``seq`` except the ``i``-th, as a list."""
    return [seq[j] for j in range(len(seq)) if j != i]


def prod_vjp(g, ans, iterable, start=1):
    # each item's partial is the product of the others (exact when another item is 0)
    items = [g * start * math.prod(all_but(iterable, i)) for i in range(len(iterable))]
    return like_sequence(iterable, items), g * math.prod(iterable)


def prod_jvp(diterable, dstart, ans, iterable, start=1):
    d = densify(diterable, iterable)
    by_items = math.fsum([d[i] * math.prod(all_but(iterable, i)) for i in range(len(iterable))])
    return start * by_items, dstart * math.prod(iterable)


def dist_partials(p, q, ans):
    """d dist(p, q) / d p as an array (nan where p == q, like np.linalg.norm's at 0)."""
    return (np.asarray(p) - np.asarray(q)) / np.float64(ans)


def dist_vjp(g, ans, p, q):
    r = dist_partials(p, q, ans)
    return (like_sequence(p, [g * r[i] for i in range(len(p))]),
            like_sequence(q, [-g * r[i] for i in range(len(q))]))


def dist_jvp(dp, dq, ans, p, q):
    r = dist_partials(p, q, ans)
    return (np.sum(np.asarray(densify(dp, p)) * r), -np.sum(np.asarray(densify(dq, q)) * r))


def _sequence_points(rng):
    return [(([draw(rng, None) for _ in range(n)],), {}) for n in (1, 3, 4)] + \
        [(((draw(rng, None), draw(rng, ())),), {}), ((draw(rng, (3,)),), {})]


def _prod_points(rng):
    return _sequence_points(rng) + [(([draw(rng, None), 0.0, draw(rng, None)],), {}),
                                    (([draw(rng, None), draw(rng, None)],),
                                     {"start": draw(rng, None)})]


def _dist_points(rng):
    return [(([draw(rng, None) for _ in range(n)], [draw(rng, None) for _ in range(n)]), {})
            for n in (1, 2, 3)] + [((draw(rng, (3,)), (draw(rng, None),) * 3), {})]


defrule(math.fsum, fsum_vjp, jvp=fsum_jvp, linear=True, domain=_sequence_points)
defrule(math.prod, prod_vjp, diff_args=(0, 1), jvp=prod_jvp, domain=_prod_points)
defrule(math.dist, dist_vjp, diff_args=(0, 1), jvp=dist_jvp, domain=_dist_points)
