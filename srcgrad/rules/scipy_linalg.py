"""Rules of ``scipy.linalg``: solve, solve_triangular, cholesky, cho_factor/cho_solve,
lu_factor/lu_solve, inv, det, expm, sqrtm and solve_sylvester.

Imported by the registry once ``scipy.linalg`` is (scipy is optional).

Each rule differentiates what the function *reads*: ``solve(a, b, assume_a="pos")`` reads one
triangle of ``a`` (the upper one unless ``lower=True``), ``solve_triangular`` and
``cho_solve`` one triangle of their matrix (with ``unit_diagonal=True``, not even its
diagonal), so the gradient is zero elsewhere. For symmetric perturbations this agrees with the
symmetric gradient other libraries report. ``cho_factor`` returns ``(c, lower)`` where the
triangle ``c`` does not use holds ``a``'s own entries there: they get the identity gradient.

Derivatives are written with numpy functions that have rules (``np.linalg.solve`` on the
matrix a triangular or Cholesky solve reads), and with ``expm``/``solve_sylvester`` under
names that tracers intercept, so that every rule has a second order.
"""
import numpy as np
import scipy
import scipy.linalg as sla

from ..errors import UnsupportedFeatureError
from ..runtime import ZERO, broadcast_like, is_zero, unbroadcast
from . import numpy_linalg as npl
from ._helpers import dispatches, first_operand, first_two_operands
from .domains import draw
from .registry import defrule, nondifferentiable

matrix_transpose = npl.matrix_transpose

# --------------------------------------------------------------------------- what is read

_SYMMETRIC = {"sym", "symmetric", "her", "hermitian", "pos", "positive definite"}
_GENERAL = {None, "gen", "general"}


def read_matrix(a, assume_a=None, lower=False):
    """The matrix ``solve(a, ..., assume_a, lower)`` actually uses: linear in ``a``."""
    if assume_a in _GENERAL or is_zero(a):
        return a
    if assume_a in _SYMMETRIC:
        triangle = np.tril(a) if lower else np.triu(a)
        return triangle + matrix_transpose(np.tril(a, -1) if lower else np.triu(a, 1))
    if assume_a == "upper triangular":
        return np.triu(a)
    if assume_a == "lower triangular":
        return np.tril(a)
    if assume_a == "diagonal":
        return np.tril(np.triu(a))
    if assume_a == "tridiagonal":
        return np.tril(np.triu(a, -1), 1)
    raise UnsupportedFeatureError(f"differentiating scipy.linalg.solve with assume_a="
                                  f"{assume_a!r} is not supported; use assume_a='gen'")


def read_matrix_adjoint(g, assume_a=None, lower=False):
    """The adjoint of ``read_matrix``: the cotangent of ``a`` from that of the matrix read."""
    if assume_a in _SYMMETRIC:
        return (np.tril(g) + np.tril(matrix_transpose(g), -1)) if lower else (np.triu(g) + np.triu(matrix_transpose(g), 1))
    return read_matrix(g, assume_a, lower)  # a projection: its own adjoint



def _as_matrix(x):
    """A right-hand side (or a solution) as a stack of matrices: a 1-D one as a column."""
    return np.expand_dims(x, -1) if np.ndim(x) == 1 else x


def _like_rhs(x, b):
    return x[..., 0] if np.ndim(b) == 1 else x


def linear_solve_vjp(g, x, m, b, transposed=False):
    """Cotangents of ``m`` and ``b`` where ``x = solve(op(m), b)``, op a transpose or not."""
    g2, x2 = _as_matrix(g), _as_matrix(x)
    gb = np.linalg.solve(m if transposed else matrix_transpose(m), g2)
    gm = -np.matmul(x2, matrix_transpose(gb)) if transposed else -np.matmul(gb, matrix_transpose(x2))
    return unbroadcast(gm, m), unbroadcast(_like_rhs(gb, b), b)


def linear_solve_jvp(dm, db, x, m, b, transposed=False):
    """Tangent contributions of ``m`` and ``b`` (either may be the lazy zero: inactive)."""
    op = matrix_transpose(m) if transposed else m
    by_m = ZERO if is_zero(dm) else _like_rhs(-np.linalg.solve(op, np.matmul(
        matrix_transpose(dm) if transposed else dm, _as_matrix(x))), b)
    by_b = ZERO if is_zero(db) else broadcast_like(_like_rhs(
        np.linalg.solve(op, _as_matrix(db)), b), x)
    return by_m, by_b


# --------------------------------------------------------------------------- solve

def solve_vjp(g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False,
              check_finite=True, assume_a=None, transposed=False):
    gm, gb = linear_solve_vjp(g, ans, read_matrix(a, assume_a, lower), b, transposed)
    return read_matrix_adjoint(gm, assume_a, lower), gb


def solve_jvp(da, db, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False,
              check_finite=True, assume_a=None, transposed=False):
    return linear_solve_jvp(read_matrix(da, assume_a, lower), db, ans,
                            read_matrix(a, assume_a, lower), b, transposed)


def triangle(a, lower, unit_diagonal=False):
    """The triangular matrix ``solve_triangular`` reads from ``a``."""
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        return t - np.tril(np.triu(a)) + np.eye(np.shape(a)[-1])
    return t


def triangle_adjoint(g, lower, unit_diagonal=False):
    if is_zero(g):
        return g
    t = np.tril(g) if lower else np.triu(g)
    return t - np.tril(np.triu(g)) if unit_diagonal else t


@nondifferentiable
def is_transposed(trans) -> bool:
    if trans in (0, "N"):
        return False
    if trans in (1, "T", 2, "C"):  # real matrices: the conjugate transpose is the transpose
        return True
    raise ValueError(f"invalid trans {trans!r}")


def solve_triangular_vjp(g, ans, a, b, trans=0, lower=False, unit_diagonal=False,
                         overwrite_b=False, check_finite=True):
    gm, gb = linear_solve_vjp(g, ans, triangle(a, lower, unit_diagonal), b,
                              is_transposed(trans))
    return triangle_adjoint(gm, lower, unit_diagonal), gb


def solve_triangular_jvp(da, db, ans, a, b, trans=0, lower=False, unit_diagonal=False,
                         overwrite_b=False, check_finite=True):
    return linear_solve_jvp(triangle_adjoint(da, lower, unit_diagonal), db, ans,
                            triangle(a, lower, unit_diagonal), b, is_transposed(trans))


# --------------------------------------------------------------------------- Cholesky

def cholesky_vjp(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    return npl.cholesky_vjp(g, ans, a, upper=not lower)


def cholesky_jvp(da, ans, a, lower=False, overwrite_a=False, check_finite=True):
    return npl.cholesky_jvp(da, ans, a, upper=not lower)


# c holds the factor in one triangle; in the other, scipy up to 1.17 leaves a's own entries
# (1.0: they carry a's derivative) and scipy 1.18 zeros (0.0)
_OTHER_TRIANGLE_IS_A = float(sla.cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))[0][1, 0] != 0.0)


def cho_factor_vjp(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    gc = g[0]
    factor = triangle(ans[0], lower)
    (from_factor,) = npl.cholesky_vjp(triangle(gc, lower), factor, a, upper=not lower)
    return (from_factor + _OTHER_TRIANGLE_IS_A * (gc - triangle(gc, lower)),)


def cho_factor_jvp(da, ans, a, lower=False, overwrite_a=False, check_finite=True):
    factor = triangle(ans[0], lower)
    (d_factor,) = npl.cholesky_jvp(da, factor, a, upper=not lower)
    return ((d_factor + _OTHER_TRIANGLE_IS_A * (da - triangle(da, lower)), 0.0 * ans[1]),)


def cho_matrix(c, lower):
    """The matrix a Cholesky factor (one triangle of ``c``) stands for."""
    factor = triangle(c, lower)
    return np.matmul(factor, matrix_transpose(factor)) if lower else np.matmul(matrix_transpose(factor), factor)


def cho_solve_vjp(g, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    c, lower = c_and_lower
    factor = triangle(c, lower)
    gm, gb = linear_solve_vjp(g, ans, cho_matrix(c, lower), b)
    sym = gm + matrix_transpose(gm)
    gc = triangle(np.matmul(sym, factor) if lower else np.matmul(factor, sym), lower)
    return (gc, ZERO), gb


def cho_solve_jvp(dc_and_lower, db, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    c, lower = c_and_lower
    factor = triangle(c, lower)
    if is_zero(dc_and_lower):
        return linear_solve_jvp(ZERO, db, ans, cho_matrix(c, lower), b)
    d_factor = triangle(dc_and_lower[0], lower)
    if lower:
        dm = np.matmul(d_factor, matrix_transpose(factor)) + np.matmul(factor, matrix_transpose(d_factor))
    else:
        dm = np.matmul(matrix_transpose(d_factor), factor) + np.matmul(matrix_transpose(factor), d_factor)
    return linear_solve_jvp(dm, db, ans, cho_matrix(c, lower), b)


# --------------------------------------------------------------------------- LU

@nondifferentiable
def pivot_permutation(piv, n):
    """The row order ``perm`` with ``a[perm] = L @ U`` from LAPACK's row interchanges."""
    perm = list(range(n))
    for i, p in enumerate(piv):
        perm[i], perm[int(p)] = perm[int(p)], perm[i]
    return np.array(perm)


def lu_parts(lu):
    """The unit lower factor and the upper factor packed in ``lu``."""
    n = np.shape(lu)[-1]
    return np.tril(lu, -1) + np.eye(n), np.triu(lu)


def lu_factor_vjp(g, ans, a, overwrite_a=False, check_finite=True):
    # P a = L U with F = L^-1 P da U^-1: dL = L tril(F, -1), dU = triu(F) U
    lu, piv = ans
    low, up = lu_parts(lu)
    m = (np.tril(np.matmul(matrix_transpose(low), np.tril(g[0], -1)), -1)
         + np.triu(np.matmul(np.triu(g[0]), matrix_transpose(up))))
    gpa = np.linalg.solve(matrix_transpose(low), matrix_transpose(np.linalg.solve(up, matrix_transpose(m))))
    perm = pivot_permutation(piv, np.shape(lu)[-1])
    return (gpa[np.argsort(perm)],)


def lu_factor_jvp(da, ans, a, overwrite_a=False, check_finite=True):
    lu, piv = ans
    low, up = lu_parts(lu)
    perm = pivot_permutation(piv, np.shape(lu)[-1])
    f = np.linalg.solve(low, matrix_transpose(np.linalg.solve(matrix_transpose(up), matrix_transpose(da[perm]))))
    return ((np.matmul(low, np.tril(f, -1)) + np.matmul(np.triu(f), up), 0.0 * piv),)


def lu_matrix(lu, piv):
    """The matrix ``a`` an LU factorization stands for: P^T L U."""
    low, up = lu_parts(lu)
    perm = pivot_permutation(piv, np.shape(lu)[-1])
    return np.matmul(low, up)[np.argsort(perm)]


def lu_solve_vjp(g, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    lu, piv = lu_and_piv
    gm, gb = linear_solve_vjp(g, ans, lu_matrix(lu, piv), b, is_transposed(trans))
    # a = P^T L U: the cotangent of the packed factors
    low, up = lu_parts(lu)
    gpa = gm[pivot_permutation(piv, np.shape(lu)[-1])]
    return (np.tril(np.matmul(gpa, matrix_transpose(up)), -1) + np.triu(np.matmul(matrix_transpose(low), gpa)), ZERO), gb


def lu_solve_jvp(dlu_and_piv, db, ans, lu_and_piv, b, trans=0, overwrite_b=False,
                 check_finite=True):
    lu, piv = lu_and_piv
    if is_zero(dlu_and_piv):
        return linear_solve_jvp(ZERO, db, ans, lu_matrix(lu, piv), b, is_transposed(trans))
    low, up = lu_parts(lu)
    dlu = dlu_and_piv[0]
    d_pa = np.matmul(np.tril(dlu, -1), up) + np.matmul(low, np.triu(dlu))
    dm = d_pa[np.argsort(pivot_permutation(piv, np.shape(lu)[-1]))]
    return linear_solve_jvp(dm, db, ans, lu_matrix(lu, piv), b, is_transposed(trans))


# --------------------------------------------------------------------------- inv, det

def inv_vjp(g, ans, a, overwrite_a=False, check_finite=True):
    return npl.inv_vjp(g, ans, a)


def inv_jvp(da, ans, a, overwrite_a=False, check_finite=True):
    return npl.inv_jvp(da, ans, a)


def det_vjp(g, ans, a, overwrite_a=False, check_finite=True):
    return npl.det_vjp(g, ans, a)


def det_jvp(da, ans, a, overwrite_a=False, check_finite=True):
    return npl.det_jvp(da, ans, a)


# --------------------------------------------------------------------------- expm, sqrtm

@dispatches(first_operand)
def expm(A):
    """``scipy.linalg.expm``, under a name tracers intercept (derivative rules call it)."""
    return sla.expm(A)


def expm_frechet(a, e):
    """The derivative of expm at ``a`` along ``e``: the top right block of
    expm([[a, e], [0, a]])."""
    n = np.shape(a)[-1]
    top = np.concatenate([a, e], axis=-1)
    bottom = np.concatenate([0.0 * a, a], axis=-1)
    return expm(np.concatenate([top, bottom], axis=-2))[..., :n, n:]


def expm_vjp(g, ans, A):
    return (expm_frechet(matrix_transpose(A), g),)


def expm_jvp(dA, ans, A):
    return (expm_frechet(A, dA),)


@dispatches(first_two_operands)
def sylvester(a, b, q):
    """``scipy.linalg.solve_sylvester``, under a name tracers intercept."""
    return sla.solve_sylvester(a, b, q)


def solve_sylvester_vjp(g, ans, a, b, q):
    # a x + x b = q: the adjoint equation is a^T y + y b^T = g
    y = sylvester(matrix_transpose(a), matrix_transpose(b), g)
    return -np.matmul(y, matrix_transpose(ans)), -np.matmul(matrix_transpose(ans), y), y


def solve_sylvester_jvp(da, db, dq, ans, a, b, q):
    # each tangent may be the lazy zero 0.0 (an argument not varied): no solve for it
    return (ZERO if is_zero(da) else sylvester(a, b, -np.matmul(da, ans)),
            ZERO if is_zero(db) else sylvester(a, b, -np.matmul(ans, db)),
            ZERO if is_zero(dq) else sylvester(a, b, dq))


def sqrtm_vjp(g, ans, A):
    # x x = A: x dx + dx x = dA
    return (sylvester(matrix_transpose(ans), matrix_transpose(ans), g),)


def sqrtm_jvp(dA, ans, A):
    return (sylvester(ans, ans, dA),)


# --------------------------------------------------------------------------- domains

def _solve_points(rng):
    a, s = npl.invertible_matrix(rng, (3, 3)), npl.spd_matrix(rng, (3, 3)) + np.triu(draw(rng, (3, 3)), 1)
    batched = [((npl.invertible_matrix(rng, (2, 3, 3)), draw(rng, (2, 3, 2))), {})]
    if np.lib.NumpyVersion(scipy.__version__) < "1.16.0":  # solve batches from scipy 1.16
        batched = []
    return [((a, draw(rng, (3,))), {}), ((a, draw(rng, (3, 2))), {}), *batched,
            ((a, draw(rng, (3, 2))), {"transposed": True}),
            ((s, draw(rng, (3,))), {"assume_a": "pos"}),
            ((s, draw(rng, (3, 2))), {"assume_a": "sym", "lower": True}),
            ((a, draw(rng, (3,))), {"assume_a": "upper triangular"}),
            ((a, draw(rng, (3,))), {"assume_a": "diagonal"})]


def _triangular_points(rng):
    a = npl.invertible_matrix(rng, (3, 3))
    return [((a, draw(rng, (3,))), {}), ((a, draw(rng, (3, 2))), {"lower": True}),
            ((a, draw(rng, (3, 2))), {"trans": 1}), ((a, draw(rng, (3,))), {"trans": "T",
                                                                            "lower": True}),
            ((a, draw(rng, (3,))), {"unit_diagonal": True}),
            ((a, draw(rng, (3, 2)), 0, True, True), {})]


def _spd_points(rng):
    s = npl.spd_matrix(rng, (3, 3))
    return [((s,), {}), ((s,), {"lower": True}), ((s + np.triu(draw(rng, (3, 3)), 1),), {}),
            ((s + np.tril(draw(rng, (3, 3)), -1),), {"lower": True})]


def _cho_solve_points(rng):
    s = npl.spd_matrix(rng, (3, 3))
    return [(((sla.cho_factor(s)[0], False), draw(rng, (3,))), {}),
            (((sla.cho_factor(s, lower=True)[0], True), draw(rng, (3, 2))), {})]


def _lu_solve_points(rng):
    a = draw(rng, (4, 4))  # pivoting rows
    lu_piv = sla.lu_factor(a)
    return [((lu_piv, draw(rng, (4,))), {}), ((lu_piv, draw(rng, (4, 2))), {"trans": 1})]


def _square_points(rng):
    return [((npl.invertible_matrix(rng, (3, 3)),), {}), ((npl.invertible_matrix(rng, (3, 3), -1.0),), {})]


def _lu_points(rng):
    return [((draw(rng, (4, 4)),), {}), ((npl.invertible_matrix(rng, (3, 3)),), {})]


def _expm_points(rng):
    return [((draw(rng, (3, 3), -1.0, 1.0),), {}), ((draw(rng, (1, 1)),), {}),
            ((draw(rng, (2, 3, 3), -1.0, 1.0),), {})]


def _sqrtm_points(rng):
    return [((npl.spd_matrix(rng, (3, 3)),), {}), ((npl.invertible_matrix(rng, (3, 3)) + 2.0 * np.eye(3),),
                                              {})]


def _sylvester_points(rng):
    return [((npl.invertible_matrix(rng, (3, 3)), npl.invertible_matrix(rng, (3, 3)), draw(rng, (3, 3))),
             {}), ((npl.invertible_matrix(rng, (3, 3)), npl.invertible_matrix(rng, (2, 2)),
                    draw(rng, (3, 2))), {})]


# --------------------------------------------------------------------------- banded solves
# ``ab`` holds a banded matrix by diagonals: ``A[i, j] = ab[u + i - j, j]`` (scipy's layout).

def _banded_operands(l_and_u, ab, b, *args, **kwargs):
    return (ab, b)


@dispatches(_banded_operands)
def banded(l_and_u, ab, b):
    """``scipy.linalg.solve_banded``, under a name tracers intercept."""
    return sla.solve_banded(l_and_u, ab, b)


@nondifferentiable
def band_widths(l_and_u):
    lower, upper = l_and_u
    return int(lower), int(upper)


def band_shift(v, s):
    """``v`` moved by ``s`` rows: row ``i`` of the result is row ``i - s`` of ``v``, zeros where
    that is outside."""
    m = np.shape(v)[0]
    k = min(abs(s), m)
    pad = np.zeros((k,) + np.shape(v)[1:])
    if s >= 0:
        return np.concatenate([pad, v[:m - k]], axis=0)
    return np.concatenate([v[k:], pad], axis=0)


def _by_row(row, x):
    """A band row (one entry per column of the matrix) lined up with ``x``'s rows."""
    return row if np.ndim(x) == 1 else np.expand_dims(row, -1)


def band_matmul(ab, x, lower, upper):
    """``A @ x`` of the banded ``A``."""
    total = 0.0
    for r in range(lower + upper + 1):
        total = total + band_shift(_by_row(ab[r], x) * x, r - upper)
    return total


def band_transpose(ab, lower, upper):
    """The band of ``A.T`` (``upper`` diagonals below, ``lower`` above)."""
    return np.stack([band_shift(ab[lower + upper - r], lower - r)
                     for r in range(lower + upper + 1)])


def solve_banded_vjp(g, ans, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False,
                     check_finite=True):
    lower, upper = band_widths(l_and_u)
    gb = banded((upper, lower), band_transpose(ab, lower, upper), g)
    rows = []
    for r in range(lower + upper + 1):  # dA = -gb x^T, read on the band
        product = band_shift(gb, upper - r) * ans
        rows.append(-(product if np.ndim(ans) == 1 else np.sum(product, axis=-1)))
    return np.stack(rows), gb


def solve_banded_jvp(dab, db, ans, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False,
                     check_finite=True):
    lower, upper = band_widths(l_and_u)
    by_ab = 0.0 if is_zero(dab) else -banded((lower, upper), ab,
                                               band_matmul(dab, ans, lower, upper))
    by_b = 0.0 if is_zero(db) else banded((lower, upper), ab, db)
    return by_ab, by_b


def _banded_points(rng):
    def band(lower, upper, m):
        ab = draw(rng, (lower + upper + 1, m))
        return np.concatenate([ab[:upper], ab[upper:upper + 1] + 5.0, ab[upper + 1:]])
    return [(((1, 1), band(1, 1, 5), draw(rng, (5,))), {}),
            (((2, 0), band(2, 0, 4), draw(rng, (4, 2))), {}),
            (((0, 2), band(0, 2, 4), draw(rng, (4,))), {}),
            (((1, 2), band(1, 2, 6), draw(rng, (6, 3))), {})]


# --------------------------------------------------------------------------- registration

def _register(fn, vjp, jvp, domain, diff_args=(0,), name=None):
    defrule(fn, vjp, diff_args=diff_args, jvp=jvp, domain=domain,
            name=name or f"scipy.linalg.{fn.__name__}")


_register(sla.solve, solve_vjp, solve_jvp, _solve_points, (0, 1))
_register(sla.solve_triangular, solve_triangular_vjp, solve_triangular_jvp, _triangular_points,
          (0, 1))
_register(sla.cholesky, cholesky_vjp, cholesky_jvp, _spd_points)
_register(sla.cho_factor, cho_factor_vjp, cho_factor_jvp, _spd_points)
_register(sla.cho_solve, cho_solve_vjp, cho_solve_jvp, _cho_solve_points, (0, 1))
_register(sla.lu_factor, lu_factor_vjp, lu_factor_jvp, _lu_points)
_register(sla.lu_solve, lu_solve_vjp, lu_solve_jvp, _lu_solve_points, (0, 1))
_register(sla.solve_banded, solve_banded_vjp, solve_banded_jvp, _banded_points, (1, 2))
_register(banded, solve_banded_vjp, solve_banded_jvp, _banded_points, (1, 2),
          name="srcgrad.rules.scipy_linalg.banded")
_register(sla.inv, inv_vjp, inv_jvp, _square_points)
_register(sla.det, det_vjp, det_jvp, _square_points)
_register(sla.expm, expm_vjp, expm_jvp, _expm_points)
_register(expm, expm_vjp, expm_jvp, _expm_points, name="srcgrad.rules.scipy_linalg.expm")
_register(sla.sqrtm, sqrtm_vjp, sqrtm_jvp, _sqrtm_points)
_register(sla.solve_sylvester, solve_sylvester_vjp, solve_sylvester_jvp, _sylvester_points,
          (0, 1, 2))
_register(sylvester, solve_sylvester_vjp, solve_sylvester_jvp, _sylvester_points, (0, 1, 2),
          name="srcgrad.rules.scipy_linalg.sylvester")
