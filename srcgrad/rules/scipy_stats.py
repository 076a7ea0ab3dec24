"""Rules of ``scipy.stats`` distributions: ``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``,
``logsf``, ``ppf`` and ``isf`` of norm, t, gamma, beta, chi2, expon, laplace, cauchy and
logistic with their ``loc``/``scale``; poisson's ``pmf``/``logpmf``/``cdf``/``logcdf``/``sf``/
``logsf`` in ``mu``; multivariate_normal's and dirichlet's ``logpdf``/``pdf``.

Imported by the registry once ``scipy.stats`` is (scipy is optional). A continuous
distribution is its standard form (``z = (x - loc) / scale``) with a log-density written in
numpy and ``scipy.special`` functions that have rules, so every derivative below has a second
order. Densities are differentiable in every argument; the distribution functions (cdf, sf
and their logs) and the quantiles (ppf, isf) in ``x``/``q``, ``loc`` and ``scale``: their
derivatives in shape parameters (``t``'s ``df``, ``gamma``'s ``a``...) have no closed form,
and such an argument that depends on the differentiated input raises.

multivariate_normal reads the lower triangle of ``cov`` (scipy factors it with ``eigh``), so
its gradient in ``cov`` is zero above the diagonal and doubled below it; a scalar ``cov``
means ``cov * I``, a vector ``np.diag(cov)``. dirichlet's ``x`` may leave out its last
component (scipy then takes it as one minus the others' sum).
"""
import numpy as np
import scipy.special as sp
import scipy.stats as st

from ..errors import UnsupportedFeatureError
from ..runtime import ZERO, is_zero, unbroadcast
from .domains import draw
from .registry import defrule, nondifferentiable
from .numpy_linalg import matrix_transpose

LOG_2PI = float(np.log(2.0 * np.pi))
LOG_PI = float(np.log(np.pi))
LOG_2 = float(np.log(2.0))

# --------------------------------------------------------------------------- standard forms
# logpdf(z, shapes) and its partials (d/dz, (d/dshape, ...)) of each standard distribution


class Norm:
    def logpdf(self, z, shapes):
        return -0.5 * z * z - 0.5 * LOG_2PI

    def partials(self, z, shapes):
        return -z, ()


class Expon:
    def logpdf(self, z, shapes):
        return -z

    def partials(self, z, shapes):
        return -1.0 + 0.0 * z, ()


class Laplace:
    def logpdf(self, z, shapes):
        return -np.abs(z) - LOG_2

    def partials(self, z, shapes):
        return -np.sign(z), ()


class Cauchy:
    def logpdf(self, z, shapes):
        return -np.log1p(z * z) - LOG_PI

    def partials(self, z, shapes):
        return -2.0 * z / (1.0 + z * z), ()


class Logistic:
    def logpdf(self, z, shapes):
        return -z - 2.0 * np.log1p(np.exp(-z))

    def partials(self, z, shapes):
        return 1.0 - 2.0 * sp.expit(z), ()


class StudentT:
    def logpdf(self, z, shapes):
        df = shapes[0]
        return (sp.gammaln(0.5 * (df + 1.0)) - sp.gammaln(0.5 * df) - 0.5 * (np.log(df) + LOG_PI)
                - 0.5 * (df + 1.0) * np.log1p(z * z / df))

    def partials(self, z, shapes):
        df = shapes[0]
        by_df = (0.5 * (sp.digamma(0.5 * (df + 1.0)) - sp.digamma(0.5 * df) - 1.0 / df
                        - np.log1p(z * z / df))
                 + 0.5 * (df + 1.0) * z * z / (df * (df + z * z)))
        return -(df + 1.0) * z / (df + z * z), (by_df,)


class Gamma:
    def logpdf(self, z, shapes):
        a = shapes[0]
        return (a - 1.0) * np.log(z) - z - sp.gammaln(a)

    def partials(self, z, shapes):
        a = shapes[0]
        return (a - 1.0) / z - 1.0, (np.log(z) - sp.digamma(a),)


class Chi2:
    def logpdf(self, z, shapes):
        df = shapes[0]
        return (0.5 * df - 1.0) * np.log(z) - 0.5 * z - 0.5 * df * LOG_2 - sp.gammaln(0.5 * df)

    def partials(self, z, shapes):
        df = shapes[0]
        return ((0.5 * df - 1.0) / z - 0.5,
                (0.5 * (np.log(z) - LOG_2 - sp.digamma(0.5 * df)),))


class Beta:
    def logpdf(self, z, shapes):
        a, b = shapes
        return (a - 1.0) * np.log(z) + (b - 1.0) * np.log1p(-z) - sp.betaln(a, b)

    def partials(self, z, shapes):
        a, b = shapes
        total = sp.digamma(a + b)
        return ((a - 1.0) / z - (b - 1.0) / (1.0 - z),
                (np.log(z) - sp.digamma(a) + total, np.log1p(-z) - sp.digamma(b) + total))


# --------------------------------------------------------------------------- methods

_DENSITIES = ("logpdf", "pdf")
_DISTRIBUTION_FUNCTIONS = ("cdf", "logcdf", "sf", "logsf")
_QUANTILES = ("ppf", "isf")


class ContinuousRule:
    """The rule of one method of one distribution: ``vjp``/``jvp`` (bound methods, named
    like the method's parameters in the subclasses) from the elementwise partial derivatives
    in each differentiable argument."""

    def __init__(self, standard, method):
        self.standard, self.method = standard, method

    def diff_args(self, n_shapes):
        every = tuple(range(n_shapes + 3))
        return every if self.method in _DENSITIES else (0, n_shapes + 1, n_shapes + 2)

    def partials(self, ans, x, shapes, loc, scale):
        """d(method)/d(argument) for each differentiable argument, elementwise."""
        if self.method in _QUANTILES:
            z = (ans - loc) / scale
            density = np.exp(self.standard.logpdf(z, shapes)) / scale
            sign = 1.0 if self.method == "ppf" else -1.0
            return [sign / density, 1.0 + 0.0 * z, z]
        z = (x - loc) / scale
        if self.method in _DENSITIES:
            by_z, by_shapes = self.standard.partials(z, shapes)
            out = [by_z / scale] + list(by_shapes) + [-by_z / scale, -(by_z * z + 1.0) / scale]
            return out if self.method == "logpdf" else [ans * p for p in out]
        log_density = self.standard.logpdf(z, shapes) - np.log(scale)
        if self.method in ("logcdf", "logsf"):
            log_density = log_density - ans  # over the cdf (or sf) itself
        by_x = np.exp(log_density) * (1.0 if self.method in ("cdf", "logcdf") else -1.0)
        return [by_x, -by_x, -by_x * z]

    def cotangents(self, g, ans, x, shapes, loc, scale):
        args = (x,) + tuple(shapes) + (loc, scale)
        chosen = self.diff_args(len(shapes))
        parts = self.partials(ans, x, shapes, loc, scale)
        return tuple([unbroadcast(g * p, args[i]) for i, p in zip(chosen, parts)])

    def jvp(self, *args, **kwargs):
        """Called as ``jvp(*tangents, ans, x, *shapes, loc, scale)``."""
        n = len(self.diff_args(self.n_shapes))
        tangents, ans, primal = args[:n], args[n], self.bind(*args[n + 1:], **kwargs)
        parts = self.partials(ans, *primal)
        return tuple([ZERO if is_zero(t) else t * p for t, p in zip(tangents, parts)])


class LocScale(ContinuousRule):
    n_shapes = 0

    def bind(self, x, loc=0.0, scale=1.0):
        return x, (), loc, scale

    def vjp(self, g, ans, x, loc=0.0, scale=1.0):
        return self.cotangents(g, ans, x, (), loc, scale)


class DfLocScale(ContinuousRule):
    n_shapes = 1

    def bind(self, x, df, loc=0.0, scale=1.0):
        return x, (df,), loc, scale

    def vjp(self, g, ans, x, df, loc=0.0, scale=1.0):
        return self.cotangents(g, ans, x, (df,), loc, scale)


class ALocScale(ContinuousRule):
    n_shapes = 1

    def bind(self, x, a, loc=0.0, scale=1.0):
        return x, (a,), loc, scale

    def vjp(self, g, ans, x, a, loc=0.0, scale=1.0):
        return self.cotangents(g, ans, x, (a,), loc, scale)


class ABLocScale(ContinuousRule):
    n_shapes = 2

    def bind(self, x, a, b, loc=0.0, scale=1.0):
        return x, (a, b), loc, scale

    def vjp(self, g, ans, x, a, b, loc=0.0, scale=1.0):
        return self.cotangents(g, ans, x, (a, b), loc, scale)


# --------------------------------------------------------------------------- poisson

class PoissonRule:
    """pmf-family of ``poisson`` in ``mu`` (``k`` and ``loc`` are integers)."""

    def __init__(self, method):
        self.method = method

    def partial(self, ans, k, mu, loc):
        k = k - loc
        if self.method in ("logpmf", "pmf"):
            by_mu = k / mu - 1.0
            return by_mu if self.method == "logpmf" else ans * by_mu
        # P(K <= k) = gammaincc(floor(k) + 1, mu): its slope in mu is -pmf(floor(k), mu)
        j = np.floor(k)
        log_slope = j * np.log(mu) - mu - sp.gammaln(j + 1.0)
        if self.method in ("logcdf", "logsf"):
            log_slope = log_slope - ans
        return np.exp(log_slope) * (-1.0 if self.method in ("cdf", "logcdf") else 1.0)

    def vjp(self, g, ans, k, mu, loc=0):
        return (unbroadcast(g * self.partial(ans, k, mu, loc), mu),)

    def jvp(self, dmu, ans, k, mu, loc=0):
        return (dmu * self.partial(ans, k, mu, loc),)


# --------------------------------------------------------------------------- multivariate

def full_cov(cov, dim):
    """The covariance matrix scipy reads: lower triangle mirrored; ``cov * I`` for a scalar,
    ``diag(cov)`` for a vector."""
    if np.ndim(cov) == 0:
        return cov * np.eye(dim)
    if np.ndim(cov) == 1:
        return np.diag(cov)
    if np.ndim(cov) != 2:
        raise UnsupportedFeatureError("multivariate_normal's cov must be a scalar, a vector "
                                      "or a matrix")
    return np.tril(cov) + matrix_transpose(np.tril(cov, -1))


def full_cov_adjoint(g, cov):
    """The adjoint of ``full_cov``: a cotangent of the matrix as one of ``cov``."""
    if np.ndim(cov) == 0:
        return np.trace(g)
    if np.ndim(cov) == 1:
        return np.diagonal(g)
    return np.tril(g) + np.tril(matrix_transpose(g), -1)


@nondifferentiable
def mvn_dim(x, mean, cov):
    if mean is not None:
        return np.size(mean) if np.ndim(mean) else np.shape(cov)[-1]
    return np.shape(cov)[-1] if np.ndim(cov) == 2 else np.shape(x)[-1]


@nondifferentiable
def mvn_pseudo_inverse(c):
    """scipy's pseudo-inverse of a covariance matrix of deficient rank (``allow_singular``:
    eigenvalues within ``1e6 * eps * max|eigenvalue|`` of zero left out), or None when the
    matrix has full rank."""
    s, u = np.linalg.eigh(c)
    cut = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s))
    if np.all(s > cut):
        return None
    kept = s > cut
    return np.matmul(u[:, kept] / s[kept], matrix_transpose(u[:, kept]))


def mvn_parts(x, mean, cov, allow_singular=False):
    """``(residual, C^-1 residual, C^-1, singular)`` of a multivariate normal's log-density;
    with ``allow_singular`` and a covariance of deficient rank, ``C^-1`` is scipy's
    pseudo-inverse and ``singular`` is True."""
    c = full_cov(cov, mvn_dim(x, mean, cov))
    r = x - (0.0 if mean is None else mean)
    pseudo = mvn_pseudo_inverse(c) if allow_singular else None
    c_inv = np.linalg.inv(c) if pseudo is None else pseudo
    return r, np.matmul(r, c_inv), c_inv, pseudo is not None


@nondifferentiable
def nan_like(value):
    """NaNs shaped like ``value``, carrying no gradient (``value * nan`` would pass NaN to
    every cotangent of ``value`` at the next order, even a zero one)."""
    return np.full(np.shape(value), np.nan)


def undefined_if(singular, value):
    """``value``, or NaNs shaped like it where a derivative does not exist: the density on a
    singular covariance's support jumps when the covariance gains rank, so its derivative
    with respect to the covariance is undefined (the ones in ``x`` and ``mean``, along the
    support, are not)."""
    if singular:
        return nan_like(value)
    return value


def mvn_logpdf_vjp(g, ans, x, mean=None, cov=1, allow_singular=False):
    _, sol, c_inv, singular = mvn_parts(x, mean, cov, allow_singular)
    gsol = np.expand_dims(g, -1) * sol
    dim = np.shape(c_inv)[-1]
    outer = np.matmul(matrix_transpose(np.reshape(gsol, (-1, dim))), np.reshape(sol, (-1, dim)))
    gc = 0.5 * (outer - np.sum(g) * c_inv)
    gmean = ZERO if mean is None else unbroadcast(gsol, mean)
    return -gsol, gmean, undefined_if(singular, full_cov_adjoint(gc, cov))


def mvn_logpdf_jvp(dx, dmean, dcov, ans, x, mean=None, cov=1, allow_singular=False):
    r, sol, c_inv, singular = mvn_parts(x, mean, cov, allow_singular)
    by_c = 0.0
    if not is_zero(dcov):
        dc = full_cov(dcov, np.shape(c_inv)[-1])
        by_c = undefined_if(singular, 0.5 * (np.sum(np.matmul(sol, dc) * sol, axis=-1)
                                             - np.sum(c_inv * dc)))
    return (-np.sum(sol * dx, axis=-1), np.sum(sol * dmean, axis=-1), by_c)


def mvn_pdf_vjp(g, ans, x, mean=None, cov=1, allow_singular=False):
    return mvn_logpdf_vjp(g * ans, ans, x, mean, cov, allow_singular)


def mvn_pdf_jvp(dx, dmean, dcov, ans, x, mean=None, cov=1, allow_singular=False):
    return tuple([ans * t for t in mvn_logpdf_jvp(dx, dmean, dcov, ans, x, mean, cov,
                                                   allow_singular)])


def mvn_entropy_vjp(g, ans, mean=None, cov=1):
    # entropy = (dim log(2 pi e) + log det C) / 2 reads only C
    c = full_cov(cov, np.shape(cov)[-1] if np.ndim(cov) else mvn_dim(None, mean, cov))
    return ZERO, full_cov_adjoint(0.5 * g * matrix_transpose(np.linalg.inv(c)), cov)


def mvn_entropy_jvp(dmean, dcov, ans, mean=None, cov=1):
    if is_zero(dcov):
        return 0.0, 0.0
    c = full_cov(cov, np.shape(cov)[-1] if np.ndim(cov) else mvn_dim(None, mean, cov))
    dc = full_cov(dcov, np.shape(c)[-1])
    return 0.0, 0.5 * np.sum(matrix_transpose(np.linalg.inv(c)) * dc)


def dirichlet_full(x, alpha):
    """``x`` with its last component filled in when scipy would (one minus the others)."""
    if np.shape(x)[0] + 1 == np.shape(alpha)[0]:
        return np.concatenate([x, 1.0 - np.sum(x, axis=0, keepdims=True)], axis=0)
    return x


def dirichlet_partials(x, alpha):
    """d logpdf / d x (for the components given) and d logpdf / d alpha, per sample."""
    full = dirichlet_full(x, alpha)
    a = np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(full) - 1))
    by_full = (a - 1.0) / full
    if np.shape(x)[0] + 1 == np.shape(alpha)[0]:
        by_x = by_full[:-1] - by_full[-1:]
    else:
        by_x = by_full
    by_alpha = np.log(full) + sp.digamma(np.sum(alpha)) - sp.digamma(a)
    return by_x, by_alpha


def dirichlet_logpdf_vjp(g, ans, x, alpha):
    by_x, by_alpha = dirichlet_partials(x, alpha)
    return g * by_x, np.reshape(np.sum(g * by_alpha, axis=tuple(range(1, np.ndim(by_alpha)))),
                                np.shape(alpha))


def dirichlet_logpdf_jvp(dx, dalpha, ans, x, alpha):
    # either tangent may be the lazy zero 0.0 (an argument not varied)
    by_x, by_alpha = dirichlet_partials(x, alpha)
    from_x = ZERO if is_zero(dx) else np.sum(dx * by_x, axis=0)
    from_alpha = ZERO
    if not is_zero(dalpha):
        da = np.reshape(dalpha, np.shape(alpha) + (1,) * (np.ndim(by_alpha) - 1))
        from_alpha = np.sum(da * by_alpha, axis=0)
    return from_x, from_alpha


def dirichlet_pdf_vjp(g, ans, x, alpha):
    return dirichlet_logpdf_vjp(g * ans, ans, x, alpha)


def dirichlet_pdf_jvp(dx, dalpha, ans, x, alpha):
    return tuple([ZERO if is_zero(t) else ans * t
                  for t in dirichlet_logpdf_jvp(dx, dalpha, ans, x, alpha)])


# --------------------------------------------------------------------------- domains

_CONTINUOUS = [  # (scipy distribution, standard form, rule class, shape domains, z range)
    (st.norm, Norm(), LocScale, (), (-2.5, 2.5)),
    (st.expon, Expon(), LocScale, (), (0.2, 3.0)),
    (st.laplace, Laplace(), LocScale, (), (0.2, 2.0)),
    (st.cauchy, Cauchy(), LocScale, (), (-3.0, 3.0)),
    (st.logistic, Logistic(), LocScale, (), (-3.0, 3.0)),
    (st.t, StudentT(), DfLocScale, ((2.5, 6.0),), (-2.5, 2.5)),
    (st.gamma, Gamma(), ALocScale, ((1.5, 4.0),), (0.3, 4.0)),
    (st.chi2, Chi2(), DfLocScale, ((2.5, 6.0),), (0.3, 5.0)),
    (st.beta, Beta(), ABLocScale, ((1.5, 4.0), (1.5, 4.0)), (0.1, 0.9)),
]


def _continuous_points(dist, shape_ranges, z_range, method):
    def domain(rng):
        points = []
        for shape in ((), (3,), (2, 3)):
            shapes = [draw(rng, shape, lo, hi) for lo, hi in shape_ranges]
            loc, scale = draw(rng, shape, -1.0, 1.0), draw(rng, shape, 0.5, 2.0)
            z = draw(rng, shape, *z_range)
            x = loc + scale * z
            if method in _QUANTILES:
                x = dist.cdf(x, *shapes, loc, scale)
                x = x if method == "ppf" else 1.0 - x
            points.append(((x, *shapes, loc, scale), {}))
        return points
    return domain


def _poisson_points(rng):
    return [((np.array([0.0, 1.0, 3.0, 5.0]), draw(rng, (4,), 0.5, 4.0)), {}),
            ((np.array([[0.0, 2.0, 4.0]]), draw(rng, (2, 1), 0.5, 4.0)), {}),
            ((2.0, draw(rng, None, 0.5, 4.0)), {}),
            ((np.array([3.0, 4.0]), draw(rng, (2,), 0.5, 4.0), 1), {})]


def _mvn_points(rng):
    spd = draw(rng, (3, 3))
    spd = spd @ spd.T + 3.0 * np.eye(3)
    skewed = spd + np.triu(draw(rng, (3, 3)), 1)  # scipy reads the lower triangle only
    return [((draw(rng, (3,)), draw(rng, (3,)), spd), {}),
            ((draw(rng, (5, 3)), draw(rng, (3,)), skewed), {}),
            ((draw(rng, (4, 3)), draw(rng, (3,)), draw(rng, None, 0.5, 2.0)), {}),
            ((draw(rng, (3,)), draw(rng, (3,)), draw(rng, (3,), 0.5, 2.0)), {})]


def _mvn_entropy_points(rng):
    spd = draw(rng, (3, 3))
    spd = spd @ spd.T + 3.0 * np.eye(3)
    return [((draw(rng, (3,)), spd), {}), ((draw(rng, (3,)), spd + np.triu(draw(rng, (3, 3)), 1)), {}),
            ((draw(rng, (2,)), draw(rng, (2,), 0.5, 2.0)), {})]


def _dirichlet_points(rng):
    alpha = draw(rng, (4,), 1.2, 3.0)
    # the last component is left out: perturbations of the others stay on the simplex
    x = rng.dirichlet(alpha)
    xs = rng.dirichlet(alpha, size=3).T
    return [((x[:-1], alpha), {}), ((xs[:-1], alpha), {})]


# --------------------------------------------------------------------------- registration

def _register_continuous():
    for dist, standard, kind, shape_ranges, z_range in _CONTINUOUS:
        for method in _DENSITIES + _DISTRIBUTION_FUNCTIONS + _QUANTILES:
            r = kind(standard, method)
            rule = defrule(getattr(dist, method), r.vjp, diff_args=r.diff_args(kind.n_shapes),
                           jvp=r.jvp,
                           domain=_continuous_points(dist, shape_ranges, z_range, method),
                           name=f"scipy.stats.{dist.name}.{method}")
            if method in _QUANTILES:  # the first parameter is a probability, named q
                rule.params = ("q",) + rule.params[1:]


def _register_poisson():
    for method in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
        r = PoissonRule(method)
        defrule(getattr(st.poisson, method), r.vjp, diff_args=(1,), jvp=r.jvp,
                domain=_poisson_points, name=f"scipy.stats.poisson.{method}")


_register_continuous()
_register_poisson()
defrule(st.multivariate_normal.logpdf, mvn_logpdf_vjp, diff_args=(0, 1, 2), jvp=mvn_logpdf_jvp,
        domain=_mvn_points, name="scipy.stats.multivariate_normal.logpdf")
defrule(st.multivariate_normal.pdf, mvn_pdf_vjp, diff_args=(0, 1, 2), jvp=mvn_pdf_jvp,
        domain=_mvn_points, name="scipy.stats.multivariate_normal.pdf")
defrule(st.multivariate_normal.entropy, mvn_entropy_vjp, diff_args=(0, 1), jvp=mvn_entropy_jvp,
        domain=_mvn_entropy_points, name="scipy.stats.multivariate_normal.entropy")
defrule(st.dirichlet.logpdf, dirichlet_logpdf_vjp, diff_args=(0, 1), jvp=dirichlet_logpdf_jvp,
        domain=_dirichlet_points, name="scipy.stats.dirichlet.logpdf")
defrule(st.dirichlet.pdf, dirichlet_pdf_vjp, diff_args=(0, 1), jvp=dirichlet_pdf_jvp,
        domain=_dirichlet_points, name="scipy.stats.dirichlet.pdf")
