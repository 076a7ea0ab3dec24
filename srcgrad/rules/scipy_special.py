"""Rules of ``scipy.special``: gamma and beta families, error functions, Bessel functions,
information measures, logistic functions and ``logsumexp``/``softmax``/``log_softmax``.

Imported by the registry once ``scipy.special`` is (scipy is optional). Every derivative is
written with scipy ufuncs that have rules themselves, so the rules compose to any order: the
derivatives of ``digamma`` and ``polygamma`` go through the Hurwitz ``zeta(s, q)`` (a rule in
``q``), ``polygamma(n, x) = (-1)**(n + 1) * n! * zeta(n + 1, x)`` for ``n >= 1``.

Orders and counts (``polygamma``'s ``n``, the Bessel order ``v``, ``multigammaln``'s ``d``)
and the shape parameters of the regularized incomplete functions (``gammainc``'s ``a``,
``betainc``'s ``a`` and ``b``) are not differentiable: their derivatives have no closed form
in scipy, and an argument that depends on the differentiated input raises.
"""
import numpy as np
import scipy.special as sp

from ..runtime import ZERO, unbroadcast
from . import numpy_elementwise  # noqa: F401  (registers the numpy twins read below)
from ._helpers import dispatches, expand_reduced, first_two_operands
from .domains import binary, draw, unary
from .registry import defrule, lookup, nondifferentiable

SQRT_PI = float(np.sqrt(np.pi))
SQRT_2PI = float(np.sqrt(2.0 * np.pi))
LN10 = float(np.log(10.0))

# --------------------------------------------------------------------------- logistic


def expit_vjp(g, ans, x):
    return (g * ans * (1.0 - ans),)


def expit_jvp(dx, ans, x):
    return (dx * ans * (1.0 - ans),)


def logit_vjp(g, ans, x):
    return (g / (x * (1.0 - x)),)


def logit_jvp(dx, ans, x):
    return (dx / (x * (1.0 - x)),)


def log_expit_vjp(g, ans, x):
    return (g * sp.expit(-x),)


def log_expit_jvp(dx, ans, x):
    return (dx * sp.expit(-x),)


def softplus_vjp(g, ans, x):
    return (g * sp.expit(x),)


def softplus_jvp(dx, ans, x):
    return (dx * sp.expit(x),)


# --------------------------------------------------------------------------- gamma family

def gammaln_vjp(g, ans, x):
    return (g * sp.digamma(x),)


def gammaln_jvp(dx, ans, x):
    return (dx * sp.digamma(x),)


def gamma_vjp(g, ans, x):
    return (g * ans * sp.digamma(x),)


def gamma_jvp(dx, ans, x):
    return (dx * ans * sp.digamma(x),)


def rgamma_vjp(g, ans, x):
    return (-g * ans * sp.digamma(x),)


def rgamma_jvp(dx, ans, x):
    return (-dx * ans * sp.digamma(x),)


@dispatches(first_two_operands)
def hurwitz_zeta(x, q):
    """``scipy.special.zeta(x, q)``, which derivative rules call: a scipy Python function, so
    tracers intercept it (through ``__array_function__``) only under this name."""
    return sp.zeta(x, q)


def digamma_vjp(g, ans, x):
    return (g * hurwitz_zeta(2.0, x),)  # the trigamma function


def digamma_jvp(dx, ans, x):
    return (dx * hurwitz_zeta(2.0, x),)


def polygamma_slope(n, x):
    """d/dx polygamma(n, x) = polygamma(n + 1, x) = (-1)**n (n + 1)! zeta(n + 2, x)."""
    return (-1.0) ** n * sp.gamma(n + 2.0) * hurwitz_zeta(n + 2.0, x)


def polygamma_vjp(g, ans, n, x):
    return (unbroadcast(g * polygamma_slope(n, x), x),)


def polygamma_jvp(dx, ans, n, x):
    return (dx * polygamma_slope(n, x),)


def zeta_vjp(g, ans, x, q=None):
    # the Hurwitz zeta(x, q) is differentiable in q: d/dq = -x zeta(x + 1, q)
    return (unbroadcast(-g * x * hurwitz_zeta(x + 1.0, q), q),)


def zeta_jvp(dq, ans, x, q=None):
    return (-dq * x * hurwitz_zeta(x + 1.0, q),)


def multigammaln_vjp(g, ans, a, d):
    return (g * np.sum(sp.digamma(np.expand_dims(a, -1) - 0.5 * np.arange(d)), axis=-1),)


def multigammaln_jvp(da, ans, a, d):
    return (da * np.sum(sp.digamma(np.expand_dims(a, -1) - 0.5 * np.arange(d)), axis=-1),)


def betaln_vjp(g, ans, a, b):
    total = sp.digamma(a + b)
    return (unbroadcast(g * (sp.digamma(a) - total), a),
            unbroadcast(g * (sp.digamma(b) - total), b))


def betaln_jvp(da, db, ans, a, b):
    total = sp.digamma(a + b)
    return (da * (sp.digamma(a) - total), db * (sp.digamma(b) - total))


def beta_vjp(g, ans, a, b):
    total = sp.digamma(a + b)
    return (unbroadcast(g * ans * (sp.digamma(a) - total), a),
            unbroadcast(g * ans * (sp.digamma(b) - total), b))


def beta_jvp(da, db, ans, a, b):
    total = sp.digamma(a + b)
    return (da * ans * (sp.digamma(a) - total), db * ans * (sp.digamma(b) - total))


def gammainc_density(a, x):
    """d/dx gammainc(a, x): the gamma(a) density at x."""
    return np.exp((a - 1.0) * np.log(x) - x - sp.gammaln(a))


def gammainc_vjp(g, ans, a, x):
    return (unbroadcast(g * gammainc_density(a, x), x),)


def gammainc_jvp(dx, ans, a, x):
    return (dx * gammainc_density(a, x),)


def gammaincc_vjp(g, ans, a, x):
    return (unbroadcast(-g * gammainc_density(a, x), x),)


def gammaincc_jvp(dx, ans, a, x):
    return (-dx * gammainc_density(a, x),)


def betainc_density(a, b, x):
    """d/dx betainc(a, b, x): the beta(a, b) density at x."""
    return np.exp((a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - sp.betaln(a, b))


def betainc_vjp(g, ans, a, b, x):
    return (unbroadcast(g * betainc_density(a, b, x), x),)


def betainc_jvp(dx, ans, a, b, x):
    return (dx * betainc_density(a, b, x),)


# --------------------------------------------------------------------------- error functions

def erf_vjp(g, ans, x):
    return (g * (2.0 / SQRT_PI) * np.exp(-x * x),)


def erf_jvp(dx, ans, x):
    return (dx * (2.0 / SQRT_PI) * np.exp(-x * x),)


def erfc_vjp(g, ans, x):
    return (-g * (2.0 / SQRT_PI) * np.exp(-x * x),)


def erfc_jvp(dx, ans, x):
    return (-dx * (2.0 / SQRT_PI) * np.exp(-x * x),)


def erfcx_vjp(g, ans, x):
    return (g * (2.0 * x * ans - 2.0 / SQRT_PI),)


def erfcx_jvp(dx, ans, x):
    return (dx * (2.0 * x * ans - 2.0 / SQRT_PI),)


def erfinv_vjp(g, ans, x):
    return (g * (0.5 * SQRT_PI) * np.exp(ans * ans),)


def erfinv_jvp(dx, ans, x):
    return (dx * (0.5 * SQRT_PI) * np.exp(ans * ans),)


def erfcinv_vjp(g, ans, x):
    return (-g * (0.5 * SQRT_PI) * np.exp(ans * ans),)


def erfcinv_jvp(dx, ans, x):
    return (-dx * (0.5 * SQRT_PI) * np.exp(ans * ans),)


def dawsn_vjp(g, ans, x):
    return (g * (1.0 - 2.0 * x * ans),)


def dawsn_jvp(dx, ans, x):
    return (dx * (1.0 - 2.0 * x * ans),)


def ndtr_vjp(g, ans, x):
    return (g * np.exp(-0.5 * x * x) / SQRT_2PI,)


def ndtr_jvp(dx, ans, x):
    return (dx * np.exp(-0.5 * x * x) / SQRT_2PI,)


def log_ndtr_vjp(g, ans, x):
    # the normal density over its cdf, in logs so that it stays finite far in the left tail
    return (g * np.exp(-0.5 * x * x - ans) / SQRT_2PI,)


def log_ndtr_jvp(dx, ans, x):
    return (dx * np.exp(-0.5 * x * x - ans) / SQRT_2PI,)


def ndtri_vjp(g, ans, x):
    return (g * SQRT_2PI * np.exp(0.5 * ans * ans),)


def ndtri_jvp(dx, ans, x):
    return (dx * SQRT_2PI * np.exp(0.5 * ans * ans),)


# --------------------------------------------------------------------------- exponentials, logs

def exp10_vjp(g, ans, x):
    return (g * ans * LN10,)


def exp10_jvp(dx, ans, x):
    return (dx * ans * LN10,)


def cosm1_vjp(g, ans, x):
    return (-g * np.sin(x),)


def cosm1_jvp(dx, ans, x):
    return (-dx * np.sin(x),)


def exp1_vjp(g, ans, x):
    return (-g * np.exp(-x) / x,)


def exp1_jvp(dx, ans, x):
    return (-dx * np.exp(-x) / x,)


def expi_vjp(g, ans, x):
    return (g * np.exp(x) / x,)


def expi_jvp(dx, ans, x):
    return (dx * np.exp(x) / x,)


# --------------------------------------------------------------------------- information

def entr_vjp(g, ans, x):
    return (-g * (np.log(x) + 1.0),)


def entr_jvp(dx, ans, x):
    return (-dx * (np.log(x) + 1.0),)


def xlogy_vjp(g, ans, x, y):
    # scipy defines xlogy(0, y) = 0 for every y: the slope in y is x / y, 0 where x is 0
    return (unbroadcast(g * np.log(y), x), unbroadcast(g * x / y, y))


def xlogy_jvp(dx, dy, ans, x, y):
    return (dx * np.log(y), dy * x / y)


def xlog1py_vjp(g, ans, x, y):
    return (unbroadcast(g * np.log1p(y), x), unbroadcast(g * x / (1.0 + y), y))


def xlog1py_jvp(dx, dy, ans, x, y):
    return (dx * np.log1p(y), dy * x / (1.0 + y))


def rel_entr_vjp(g, ans, x, y):
    return (unbroadcast(g * (np.log(x / y) + 1.0), x), unbroadcast(-g * x / y, y))


def rel_entr_jvp(dx, dy, ans, x, y):
    return (dx * (np.log(x / y) + 1.0), -dy * x / y)


def kl_div_vjp(g, ans, x, y):
    return (unbroadcast(g * np.log(x / y), x), unbroadcast(g * (1.0 - x / y), y))


def kl_div_jvp(dx, dy, ans, x, y):
    return (dx * np.log(x / y), dy * (1.0 - x / y))


# --------------------------------------------------------------------------- Bessel functions

def j0_vjp(g, ans, x):
    return (-g * sp.j1(x),)


def j0_jvp(dx, ans, x):
    return (-dx * sp.j1(x),)


def j1_vjp(g, ans, x):
    return (g * 0.5 * (sp.j0(x) - sp.jv(2.0, x)),)


def j1_jvp(dx, ans, x):
    return (dx * 0.5 * (sp.j0(x) - sp.jv(2.0, x)),)


def y0_vjp(g, ans, x):
    return (-g * sp.y1(x),)


def y0_jvp(dx, ans, x):
    return (-dx * sp.y1(x),)


def y1_vjp(g, ans, x):
    return (g * 0.5 * (sp.y0(x) - sp.yv(2.0, x)),)


def y1_jvp(dx, ans, x):
    return (dx * 0.5 * (sp.y0(x) - sp.yv(2.0, x)),)


def jv_vjp(g, ans, v, z):
    return (unbroadcast(g * 0.5 * (sp.jv(v - 1.0, z) - sp.jv(v + 1.0, z)), z),)


def jv_jvp(dz, ans, v, z):
    return (dz * 0.5 * (sp.jv(v - 1.0, z) - sp.jv(v + 1.0, z)),)


def yv_vjp(g, ans, v, z):
    return (unbroadcast(g * 0.5 * (sp.yv(v - 1.0, z) - sp.yv(v + 1.0, z)), z),)


def yv_jvp(dz, ans, v, z):
    return (dz * 0.5 * (sp.yv(v - 1.0, z) - sp.yv(v + 1.0, z)),)


def yn_vjp(g, ans, n, x):
    return (unbroadcast(g * 0.5 * (sp.yn(n - 1, x) - sp.yn(n + 1, x)), x),)


def yn_jvp(dx, ans, n, x):
    return (dx * 0.5 * (sp.yn(n - 1, x) - sp.yn(n + 1, x)),)


def i0_vjp(g, ans, x):
    return (g * sp.i1(x),)


def i0_jvp(dx, ans, x):
    return (dx * sp.i1(x),)


def i1_vjp(g, ans, x):
    return (g * 0.5 * (sp.i0(x) + sp.iv(2.0, x)),)


def i1_jvp(dx, ans, x):
    return (dx * 0.5 * (sp.i0(x) + sp.iv(2.0, x)),)


def iv_vjp(g, ans, v, z):
    return (unbroadcast(g * 0.5 * (sp.iv(v - 1.0, z) + sp.iv(v + 1.0, z)), z),)


def iv_jvp(dz, ans, v, z):
    return (dz * 0.5 * (sp.iv(v - 1.0, z) + sp.iv(v + 1.0, z)),)


# The exponentially scaled ive(v, z) = iv(v, z) exp(-|z|) (real z).
def i0e_vjp(g, ans, x):
    return (g * (sp.i1e(x) - np.sign(x) * ans),)


def i0e_jvp(dx, ans, x):
    return (dx * (sp.i1e(x) - np.sign(x) * ans),)


def i1e_vjp(g, ans, x):
    return (g * (0.5 * (sp.i0e(x) + sp.ive(2.0, x)) - np.sign(x) * ans),)


def i1e_jvp(dx, ans, x):
    return (dx * (0.5 * (sp.i0e(x) + sp.ive(2.0, x)) - np.sign(x) * ans),)


def ive_vjp(g, ans, v, z):
    return (unbroadcast(g * (0.5 * (sp.ive(v - 1.0, z) + sp.ive(v + 1.0, z))
                                   - np.sign(z) * ans), z),)


def ive_jvp(dz, ans, v, z):
    return (dz * (0.5 * (sp.ive(v - 1.0, z) + sp.ive(v + 1.0, z)) - np.sign(z) * ans),)


def k0_vjp(g, ans, x):
    return (-g * sp.k1(x),)


def k0_jvp(dx, ans, x):
    return (-dx * sp.k1(x),)


def k1_vjp(g, ans, x):
    return (-g * 0.5 * (sp.k0(x) + sp.kv(2.0, x)),)


def k1_jvp(dx, ans, x):
    return (-dx * 0.5 * (sp.k0(x) + sp.kv(2.0, x)),)


def kv_vjp(g, ans, v, z):
    return (unbroadcast(-g * 0.5 * (sp.kv(v - 1.0, z) + sp.kv(v + 1.0, z)), z),)


def kv_jvp(dz, ans, v, z):
    return (-dz * 0.5 * (sp.kv(v - 1.0, z) + sp.kv(v + 1.0, z)),)


# kve(v, z) = kv(v, z) exp(z)
def k0e_vjp(g, ans, x):
    return (g * (ans - sp.k1e(x)),)


def k0e_jvp(dx, ans, x):
    return (dx * (ans - sp.k1e(x)),)


def k1e_vjp(g, ans, x):
    return (g * (ans - 0.5 * (sp.k0e(x) + sp.kve(2.0, x))),)


def k1e_jvp(dx, ans, x):
    return (dx * (ans - 0.5 * (sp.k0e(x) + sp.kve(2.0, x))),)


def kve_vjp(g, ans, v, z):
    return (unbroadcast(g * (ans - 0.5 * (sp.kve(v - 1.0, z) + sp.kve(v + 1.0, z))), z),)


def kve_jvp(dz, ans, v, z):
    return (dz * (ans - 0.5 * (sp.kve(v - 1.0, z) + sp.kve(v + 1.0, z))),)


# --------------------------------------------------------------------------- reductions

def lse_weights(ans, a, axis, b, keepdims, return_sign):
    """d logsumexp / d a, shaped like ``a``: b exp(a - lse), signed when the sum may be < 0."""
    lse = ans[0] if return_sign else ans
    weights = np.exp(a - expand_reduced(lse, a, axis, keepdims))
    if return_sign:
        weights = weights * expand_reduced(ans[1], a, axis, keepdims)
    return weights


def logsumexp_vjp(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    weights = lse_weights(ans, a, axis, b, keepdims, return_sign)
    spread = expand_reduced(g[0] if return_sign else g, a, axis, keepdims) * weights
    if b is None:
        return (spread, ZERO)
    return (unbroadcast(spread * b, a), unbroadcast(spread, b))


def logsumexp_jvp(da, db, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    weights = lse_weights(ans, a, axis, b, keepdims, return_sign)
    scale = 1.0 if b is None else b
    by_a = np.sum(da * scale * weights, axis=axis, keepdims=keepdims)
    by_b = ZERO if b is None else np.sum(db * weights, axis=axis, keepdims=keepdims)
    if return_sign:  # the sign is piecewise constant
        return ((by_a, 0.0 * ans[1]), (by_b, 0.0 * ans[1]))
    return (by_a, by_b)


def softmax_vjp(g, ans, x, axis=None):
    return (ans * (g - np.sum(g * ans, axis=axis, keepdims=True)),)


def softmax_jvp(dx, ans, x, axis=None):
    return (ans * (dx - np.sum(dx * ans, axis=axis, keepdims=True)),)


def log_softmax_vjp(g, ans, x, axis=None):
    return (g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True),)


def log_softmax_jvp(dx, ans, x, axis=None):
    return (dx - np.sum(np.exp(ans) * dx, axis=axis, keepdims=True),)


# --------------------------------------------------------------------------- domains

def _orders(orders, low, high, shapes=((3,), (2, 3))):
    """Points ``(order, x)`` of a function of a fixed order and an argument in [low, high]."""
    def domain(rng):
        return [((n, draw(rng, s, low, high)), {}) for n in orders for s in (None,) + shapes]
    return domain


def _incomplete(rng):
    return [((draw(rng, s, 0.5, 3.0), draw(rng, s, 0.2, 4.0)), {})
            for s in (None, (3,), (2, 3))] + [((2.5, draw(rng, (4,), 0.2, 4.0)), {})]


def _betainc_points(rng):
    return [((draw(rng, s, 0.8, 3.0), draw(rng, s, 0.8, 3.0), draw(rng, s, 0.1, 0.9)), {})
            for s in (None, (3,))] + [((1.5, 2.5, draw(rng, (2, 3), 0.1, 0.9)), {})]


def _multigammaln_points(rng):
    return [((draw(rng, s, 3.0, 5.0), d), {}) for s in (None, (3,), (2, 3)) for d in (1, 3)]


def _logsumexp_points(rng):
    # b is a differentiable position: every point passes it positionally (None: no weights)
    x = draw(rng, (3, 4), -3.0, 3.0)
    return [((x, None, None), {}), ((x, 1, None), {}), ((x, 0, None, True), {}),
            ((draw(rng, (2, 3, 4)), (0, 2), None), {}),
            ((draw(rng, (5,)) + 500.0, None, None), {}),
            ((x, 0, draw(rng, (3, 4), 0.5, 2.0)), {}),
            ((x, -1, draw(rng, (4,), 0.5, 2.0), True), {}),
            ((x, 1, draw(rng, (3, 4), -2.0, 2.0)), {"return_sign": True}),
            ((x, None, draw(rng, (3, 4), -2.0, 2.0), False, True), {}),
            ((draw(rng, None), None, None), {})]


def _softmax_points(rng):
    return [((draw(rng, (5,)),), {}), ((draw(rng, (3, 4)),), {}), ((draw(rng, (3, 4)), 0), {}),
            ((draw(rng, (2, 3, 4)),), {"axis": (0, 2)}), ((draw(rng, (3, 4)) - 300.0,), {}),
            ((draw(rng, (3, 4)),), {"axis": -1})]


# --------------------------------------------------------------------------- registration

_POSITIVE = unary(0.3, 3.0)


def _numpy_twin(fn) -> tuple:
    """The vjp and jvp of the numpy ufunc scipy.special duplicates (one formula, two names)."""
    rule = lookup(fn)
    return rule.vjp, rule.jvp


_UNARY = [
    (sp.expit, expit_vjp, expit_jvp, unary(-4.0, 4.0)),
    (sp.logit, logit_vjp, logit_jvp, unary(0.1, 0.9)),
    (sp.log_expit, log_expit_vjp, log_expit_jvp, unary(-4.0, 4.0)),
    (sp.softplus, softplus_vjp, softplus_jvp, unary(-4.0, 4.0)),
    (sp.gammaln, gammaln_vjp, gammaln_jvp, _POSITIVE),
    (sp.loggamma, gammaln_vjp, gammaln_jvp, _POSITIVE),
    (sp.gamma, gamma_vjp, gamma_jvp, _POSITIVE),
    (sp.rgamma, rgamma_vjp, rgamma_jvp, _POSITIVE),
    (sp.digamma, digamma_vjp, digamma_jvp, _POSITIVE),  # sp.psi is sp.digamma
    (sp.erf, erf_vjp, erf_jvp, unary()),
    (sp.erfc, erfc_vjp, erfc_jvp, unary()),
    (sp.erfcx, erfcx_vjp, erfcx_jvp, unary()),
    (sp.erfinv, erfinv_vjp, erfinv_jvp, unary(-0.9, 0.9)),
    (sp.erfcinv, erfcinv_vjp, erfcinv_jvp, unary(0.1, 1.9)),
    (sp.dawsn, dawsn_vjp, dawsn_jvp, unary()),
    (sp.ndtr, ndtr_vjp, ndtr_jvp, unary(-3.0, 3.0)),
    (sp.log_ndtr, log_ndtr_vjp, log_ndtr_jvp, unary(-6.0, 3.0)),
    (sp.ndtri, ndtri_vjp, ndtri_jvp, unary(0.05, 0.95)),
    (sp.expm1, *_numpy_twin(np.expm1), unary()),
    (sp.exp2, *_numpy_twin(np.exp2), unary()),
    (sp.exp10, exp10_vjp, exp10_jvp, unary()),
    (sp.log1p, *_numpy_twin(np.log1p), unary(-0.8, 2.0)),
    (sp.cbrt, *_numpy_twin(np.cbrt), unary(0.3, 2.0)),
    (sp.cosm1, cosm1_vjp, cosm1_jvp, unary()),
    (sp.exp1, exp1_vjp, exp1_jvp, _POSITIVE),
    (sp.expi, expi_vjp, expi_jvp, _POSITIVE),
    (sp.entr, entr_vjp, entr_jvp, _POSITIVE),
    (sp.j0, j0_vjp, j0_jvp, unary(0.2, 20.0)),
    (sp.j1, j1_vjp, j1_jvp, unary(0.2, 20.0)),
    (sp.y0, y0_vjp, y0_jvp, unary(0.2, 20.0)),
    (sp.y1, y1_vjp, y1_jvp, unary(0.2, 20.0)),
    (sp.i0, i0_vjp, i0_jvp, unary(-5.0, 5.0)),
    (sp.i1, i1_vjp, i1_jvp, unary(-5.0, 5.0)),
    (sp.i0e, i0e_vjp, i0e_jvp, unary(0.2, 20.0)),
    (sp.i1e, i1e_vjp, i1e_jvp, unary(0.2, 20.0)),
    (sp.k0, k0_vjp, k0_jvp, unary(0.2, 5.0)),
    (sp.k1, k1_vjp, k1_jvp, unary(0.2, 5.0)),
    (sp.k0e, k0e_vjp, k0e_jvp, unary(0.2, 20.0)),
    (sp.k1e, k1e_vjp, k1e_jvp, unary(0.2, 20.0)),
]
for _fn, _vjp, _jvp, _domain in _UNARY:
    defrule(_fn, _vjp, jvp=_jvp, domain=_domain, name=f"scipy.special.{_fn.__name__}")

_BINARY = [  # (function, vjp, jvp, domain, differentiable positions)
    (sp.xlogy, xlogy_vjp, xlogy_jvp, binary(-2.0, 2.0, 0.3, 3.0), (0, 1)),
    (sp.xlog1py, xlog1py_vjp, xlog1py_jvp, binary(-2.0, 2.0, -0.7, 3.0), (0, 1)),
    (sp.rel_entr, rel_entr_vjp, rel_entr_jvp, binary(0.3, 3.0), (0, 1)),
    (sp.kl_div, kl_div_vjp, kl_div_jvp, binary(0.3, 3.0), (0, 1)),
    (sp.betaln, betaln_vjp, betaln_jvp, binary(0.5, 3.0), (0, 1)),
    (sp.beta, beta_vjp, beta_jvp, binary(0.5, 3.0), (0, 1)),
    (sp.zeta, zeta_vjp, zeta_jvp, _orders((2.0, 3.5), 0.5, 3.0), (1,)),
    (hurwitz_zeta, zeta_vjp, zeta_jvp, _orders((2.0, 3.5), 0.5, 3.0), (1,)),
    (sp.gammainc, gammainc_vjp, gammainc_jvp, _incomplete, (1,)),
    (sp.gammaincc, gammaincc_vjp, gammaincc_jvp, _incomplete, (1,)),
    (sp.betainc, betainc_vjp, betainc_jvp, _betainc_points, (2,)),
    (sp.jv, jv_vjp, jv_jvp, _orders((0.0, 1.5, 3.0), 0.5, 10.0), (1,)),  # sp.jn is sp.jv
    (sp.yv, yv_vjp, yv_jvp, _orders((0.0, 1.5, 3.0), 0.5, 10.0), (1,)),
    (sp.yn, yn_vjp, yn_jvp, _orders((1, 2), 0.5, 10.0), (1,)),
    (sp.iv, iv_vjp, iv_jvp, _orders((0.0, 1.0, 3.0), -4.0, 4.0), (1,)),  # integer v: real for z < 0
    (sp.ive, ive_vjp, ive_jvp, _orders((0.0, 1.5, 3.0), 0.3, 20.0), (1,)),
    (sp.kv, kv_vjp, kv_jvp, _orders((0.0, 1.5, 3.0), 0.3, 5.0), (1,)),
    (sp.kve, kve_vjp, kve_jvp, _orders((0.0, 1.5, 3.0), 0.3, 20.0), (1,)),
]
for _fn, _vjp, _jvp, _domain, _diff in _BINARY:
    defrule(_fn, _vjp, diff_args=_diff, jvp=_jvp, domain=_domain,
            name=f"scipy.special.{_fn.__name__}")

defrule(sp.polygamma, polygamma_vjp, diff_args=(1,), jvp=polygamma_jvp,
        domain=_orders((0, 1, 2), 0.3, 3.0), name="scipy.special.polygamma")
defrule(sp.multigammaln, multigammaln_vjp, jvp=multigammaln_jvp, domain=_multigammaln_points,
        name="scipy.special.multigammaln")
defrule(sp.logsumexp, logsumexp_vjp, diff_args=(0, 2), jvp=logsumexp_jvp,
        domain=_logsumexp_points, name="scipy.special.logsumexp")
defrule(sp.softmax, softmax_vjp, jvp=softmax_jvp, domain=_softmax_points,
        name="scipy.special.softmax")
defrule(sp.log_softmax, log_softmax_vjp, jvp=log_softmax_jvp, domain=_softmax_points,
        name="scipy.special.log_softmax")

# Piecewise constant: no gradient.
for _fn in (sp.gammasgn, sp.round):
    nondifferentiable(_fn)

del _fn, _vjp, _jvp, _domain, _diff
