"""Rules of products (dot, outer, inner, tensordot, einsum) and of ``np.linalg``.

``np.matmul`` shares ``operator.matmul``'s rule (see ``operators``).

* einsum: subscripts as a string or in the sublist form (``einsum(a, [0, 1], b, [1, 2])``),
  any number of operands, implicit or explicit output, ``...``, repeated indices. Every
  operand is a differentiable argument.
* slogdet returns ``(sign, logabsdet)``; only ``logabsdet`` carries a gradient, so the vjp
  reads ``g[1]`` and the tangent of ``sign`` is zero.
* cholesky reads only one triangle of its input (the lower one, or the upper one with
  ``upper=True``), so the exact gradient is zero on the other triangle and doubled off the
  diagonal of the triangle read. For symmetric perturbations it agrees with the symmetric
  gradient other libraries report.
* svd, svdvals, eigh, eigvalsh, eig, eigvals, qr, pinv, lstsq, matrix_power (and norm's
  ``ord`` 2, -2 and ``'nuc'``, through ``spectral_norm_partials``): real matrices, stacked
  along leading axes (eig and eigvals also complex ones). Every float output is
  differentiable; a tuple result (``U, S, Vh``, ``eigenvalues, eigenvectors``, ``Q, R``,
  lstsq's ``x, residuals, rank, s``) takes a cotangent per item, unused items being the lazy
  zero.

  - svd: ``compute_uv=False``, or the reduced factors (``full_matrices=False``). The full
    factors of a non-square matrix are not unique: their derivative raises, in reverse mode
    only when ``U`` or ``Vh`` is used. ``hermitian=True`` reads the lower triangle, as
    numpy's eigh does.
  - The derivatives of singular vectors and eigenvectors do not exist where singular values
    or eigenvalues are repeated (the formulas divide by their gaps, giving inf/NaN there),
    nor, for a non-square svd, where a singular value is zero.
  - eigh and eigvalsh read the ``UPLO`` triangle only (as cholesky does, above).
  - eig returns the eigenvectors LAPACK normalizes: unit norm, largest entry real. Their
    derivatives keep that normalization, so they match finite differences of numpy's own
    output; the derivative of any phase-invariant quantity (``abs(v)``) is the usual one.
  - qr: ``mode='reduced'`` (and ``'complete'`` of a square matrix) or ``'r'``, for square
    and tall matrices.
  - pinv and lstsq assume full rank (the rank does not change nearby); lstsq's ``residuals``
    are differentiable too (at the optimum ``a.T @ r = 0``).
  - matrix_power: any integer ``n``, negative through the inverse.
"""
import string

import numpy as np

from .. import runtime as rt
from ..errors import UnsupportedFeatureError
from ..runtime import ZERO, broadcast_like, is_zero, unbroadcast
from . import operators as ops
from ._helpers import like_sequence
from .derive import compile_rule
from .domains import draw
from .registry import defrule, nondifferentiable

# --------------------------------------------------------------------------- tensordot, dot


def tensordot_axes(axes, ndim_a, ndim_b):
    """The contracted axes of ``a`` and of ``b`` (non-negative lists) of a tensordot."""
    if isinstance(axes, (int, np.integer)):
        return list(range(ndim_a - axes, ndim_a)), list(range(axes))
    axes_a, axes_b = axes
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    return [int(i) % ndim_a for i in axes_a], [int(i) % ndim_b for i in axes_b]


def tensordot_vjp(g, ans, a, b, axes=2):
    """Cotangents of ``np.tensordot(a, b, axes)``: contract ``g`` with the other operand."""
    summed_a, summed_b = tensordot_axes(axes, np.ndim(a), np.ndim(b))
    free_a = [i for i in range(np.ndim(a)) if i not in summed_a]
    free_b = [i for i in range(np.ndim(b)) if i not in summed_b]
    g_free_b = list(range(len(free_a), np.ndim(g)))
    # tensordot leaves the other operand's remaining axes in increasing order.
    ga = np.tensordot(g, b, axes=(g_free_b, free_b))
    ga_order = free_a + [summed_a[summed_b.index(j)] for j in sorted(summed_b)]
    gb = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    gb_order = [summed_b[summed_a.index(i)] for i in sorted(summed_a)] + free_b
    return (np.transpose(ga, tuple([int(i) for i in np.argsort(ga_order)])),
            np.transpose(gb, tuple([int(i) for i in np.argsort(gb_order)])))


def tensordot_jvp(da, db, ans, a, b, axes=2):
    # (the lazy zero of an operand without a tangent has no axes to contract)
    return (ZERO if is_zero(da) else np.tensordot(da, b, axes),
            ZERO if is_zero(db) else np.tensordot(a, db, axes))


def dot_axes(a, b):
    """``np.dot(a, b)`` as ``tensordot``: a's last axis with b's second-to-last (or only) one."""
    return [np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]


def dot_vjp(g, ans, a, b, out=None):
    if np.ndim(a) == 0 or np.ndim(b) == 0:  # np.dot of a scalar is multiplication
        return ops.mul_vjp(g, ans, a, b)
    return tensordot_vjp(g, ans, a, b, dot_axes(a, b))


def dot_jvp(da, db, ans, a, b, out=None):
    return np.dot(da, b), np.dot(a, db)


def inner_vjp(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return ops.mul_vjp(g, ans, a, b)
    return tensordot_vjp(g, ans, a, b, ([np.ndim(a) - 1], [np.ndim(b) - 1]))


def inner_jvp(da, db, ans, a, b):
    return np.inner(da, b), np.inner(a, db)


def outer_vjp(g, ans, a, b, out=None):
    return (np.reshape(np.dot(g, np.ravel(b)), np.shape(a)),
            np.reshape(np.dot(np.ravel(a), g), np.shape(b)))


def outer_jvp(da, db, ans, a, b, out=None):
    return np.outer(da, b), np.outer(a, db)


def vdot_vjp(g, ans, a, b):
    return (np.reshape(g * np.ravel(b), np.shape(a)), np.reshape(g * np.ravel(a), np.shape(b)))


def vdot_jvp(da, db, ans, a, b):
    # (vdot flattens both operands: the lazy zero 0.0 has one element, not a's many)
    return (ZERO if is_zero(da) else np.vdot(da, b),
            ZERO if is_zero(db) else np.vdot(a, db))


# --------------------------------------------------------------------------- einsum

def einsum_spec(subscripts: str, operands) -> tuple[list[str], str]:
    """The input subscripts and the output subscript of an einsum, ``...`` spelled out."""
    spec = subscripts.replace(" ", "")
    inputs_part, arrow, output = spec.partition("->")
    inputs = inputs_part.split(",")
    if len(inputs) != len(operands):
        raise ValueError(f"einsum subscripts {subscripts!r} name {len(inputs)} operands, "
                         f"got {len(operands)}")
    free = [c for c in string.ascii_letters if c not in spec]
    spans = [np.ndim(op) - (len(s) - 3) for s, op in zip(inputs, operands) if "..." in s]
    ellipsis = "".join(free[:max(spans, default=0)])
    inputs = [s.replace("...", ellipsis[len(ellipsis) - (np.ndim(op) - (len(s) - 3)):])
              if "..." in s else s for s, op in zip(inputs, operands)]
    if arrow:
        return inputs, output.replace("...", ellipsis)
    letters = inputs_part.replace("...", "").replace(",", "")
    return inputs, ellipsis + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))


@nondifferentiable
def einsum_form(subscripts, operands):
    """``(spec, arrays, positions)`` of an einsum call in either form: the subscripts string,
    the operand arrays, and their positions among the call's arguments. The sublist form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is spelled as a string."""
    if isinstance(subscripts, str):
        return subscripts, list(operands), list(range(1, len(operands) + 1))
    args = (subscripts,) + tuple(operands)
    arrays, sublists = list(args[0::2]), list(args[1::2])
    output = None
    if len(sublists) < len(arrays):  # an odd count: the last item is the output sublist
        output = arrays.pop()

    def spell(sublist):
        return "".join("..." if s is Ellipsis else string.ascii_letters[int(s)]
                       for s in sublist)

    spec = ",".join(spell(s) for s in sublists)
    if output is not None:
        spec += "->" + spell(output)
    return spec, arrays, list(range(0, 2 * len(arrays), 2))


@nondifferentiable
def einsum_plan(subscripts, operands, position):
    """How to build the cotangent of the einsum argument at ``position`` (None for the
    subscripts and sublists): ``(contractions, expansions)``.

    The cotangent contracts ``g`` with the other operands one at a time
    (``contractions``: (spec, argument position) pairs, each keeping the indices still
    needed), then broadcasts back indices only this operand has and puts repeated indices
    back on the diagonal (``expansions``: (spec, constant or None) with ones and identities).
    """
    spec, arrays, positions = einsum_form(subscripts, operands)
    if position not in positions:
        return None
    inputs, output = einsum_spec(spec, arrays)
    k = positions.index(position)
    subscript = inputs[k]
    others = [(inputs[j], positions[j]) for j in range(len(arrays)) if j != k]
    available = set(output).union(*[s for s, _ in others])
    kept = "".join(dict.fromkeys([c for c in subscript if c in available]))
    contractions, current = [], output
    for i, (other, at) in enumerate(others):
        needed = set(kept).union(*[s for s, _ in others[i + 1:]])
        result = "".join(dict.fromkeys([c for c in current + other if c in needed]))
        contractions.append((f"{current},{other}->{result}", at))
        current = result
    expansions = [(f"{current}->{kept}", None)] if current != kept else []
    sizes = dict(zip(subscript, np.shape(arrays[k])))
    fresh = iter([c for c in string.ascii_letters if c not in "".join(inputs) + output])
    target, current = [], kept
    for c in subscript:
        if c in target:  # a repeated index: back onto the diagonal
            new = next(fresh)
            expansions.append((f"{current},{c}{new}->{current}{new}", np.eye(sizes[c])))
            current, target = current + new, target + [new]
        else:
            target.append(c)
            if c not in available:  # summed over by this operand alone
                expansions.append((f"{current},{c}->{current}{c}", np.ones(sizes[c])))
                current += c
    if current != "".join(target):
        expansions.append((f"{current}->{''.join(target)}", None))
    return contractions, expansions


def einsum_argument(subscripts, operands, position):
    """The einsum call's argument at ``position`` (0 is the subscripts or first operand)."""
    return subscripts if position == 0 else operands[position - 1]


def einsum_cotangent_at(g, subscripts, operands, position):
    """Cotangent of einsum's argument at ``position`` (zero for subscripts and sublists)."""
    plan = einsum_plan(subscripts, operands, position)
    if plan is None:
        return ZERO
    contractions, expansions = plan
    cotangent = g
    for spec, at in contractions:
        cotangent = np.einsum(spec, cotangent, einsum_argument(subscripts, operands, at))
    for spec, constant in expansions:
        if constant is None:
            cotangent = np.einsum(spec, cotangent)
        else:
            cotangent = np.einsum(spec, cotangent, constant)
    return unbroadcast(cotangent, einsum_argument(subscripts, operands, position))


EINSUM_ARGS = 33  # positions the rule reserves (see the registration)

# One cotangent per reserved position, written out so that generated code inlines the
# cotangents of the active operands only, each a call of einsum_cotangent_at.
einsum_vjp = compile_rule(
    "def einsum_vjp(g, ans, subscripts, *operands, **kwargs):\n    return (" + ", ".join(
        f"einsum_cotangent_at(g, subscripts, operands, {i})" for i in range(EINSUM_ARGS))
    + ")\n", "einsum_vjp", globals(), "numpy.einsum vjp")


def einsum_jvp(*args, **kwargs):
    # Called as einsum_jvp(*tangents, ans, *call_args); lazy-zero tangents contribute nothing.
    tangents, call_args = einsum_jvp_parts(args)
    spec, arrays, positions = einsum_form(call_args[0], call_args[1:])
    return tuple(einsum_tangent(spec, arrays, positions, tangents, p)
                 for p in range(len(tangents)))


def einsum_tangent(spec, arrays, positions, tangents, position):
    """The contribution of the tangent at argument ``position``: einsum with that operand
    replaced by its tangent (zero for subscripts, sublists and lazy-zero tangents)."""
    if position not in positions or is_zero(tangents[position]):
        return ZERO
    k = positions.index(position)
    return np.einsum(spec, *arrays[:k], tangents[position], *arrays[k + 1:])


@nondifferentiable
def einsum_jvp_parts(args):
    """``(tangents, call_args)`` of einsum_jvp's arguments: generated code passes a tangent
    for every reserved position, a direct call one per argument of the einsum call."""
    rest = args[EINSUM_ARGS + 1:]
    if rest and (isinstance(rest[0], str)
                 or (len(rest) > 1 and isinstance(rest[1], (list, tuple)))):  # sublists
        return args[:EINSUM_ARGS], rest
    n = (len(args) - 1) // 2
    return args[:n], args[n + 1:]


# --------------------------------------------------------------------------- np.linalg

def matrix_transpose(x):
    return np.swapaxes(x, -1, -2)


def solve_vjp(g, ans, a, b):
    vector = np.ndim(b) == 1  # numpy >= 2: only a 1-D b is a vector
    x = np.expand_dims(ans, -1) if vector else ans
    g2 = np.expand_dims(g, -1) if vector else g
    gb = np.linalg.solve(matrix_transpose(a), g2)
    ga = -np.matmul(gb, matrix_transpose(x))
    return unbroadcast(ga, a), unbroadcast(gb[..., 0] if vector else gb, b)


def solve_jvp(da, db, ans, a, b):
    """Tangent contributions of ``a`` and ``b``; either may be the lazy zero (an inactive
    argument, e.g. a matrix built from constants), for which no solve runs."""
    by_a, by_b = ZERO, ZERO
    if not is_zero(da):
        vector = np.ndim(b) == 1
        x = np.expand_dims(ans, -1) if vector else ans
        dx_a = -np.linalg.solve(a, np.matmul(da, x))
        by_a = dx_a[..., 0] if vector else dx_a
    if not is_zero(db):
        by_b = broadcast_like(np.linalg.solve(a, db), ans)
    return by_a, by_b


def inv_vjp(g, ans, a):
    return (-np.matmul(matrix_transpose(ans), np.matmul(g, matrix_transpose(ans))),)


def inv_jvp(da, ans, a):
    return (-np.matmul(ans, np.matmul(da, ans)),)


def det_vjp(g, ans, a):
    return (np.expand_dims(g * ans, (-2, -1)) * matrix_transpose(np.linalg.inv(a)),)


def det_jvp(da, ans, a):
    return (ans * np.sum(matrix_transpose(np.linalg.inv(a)) * da, axis=(-2, -1)),)


def slogdet_vjp(g, ans, a):
    return (np.expand_dims(g[1], (-2, -1)) * matrix_transpose(np.linalg.inv(a)),)


def slogdet_jvp(da, ans, a):
    # like_sequence: the tangent is a SlogdetResult too, so ``.logabsdet`` reads it
    return (like_sequence(ans, (0.0 * ans[0], np.sum(matrix_transpose(np.linalg.inv(a)) * da,
                                                     axis=(-2, -1)))),)


def _phi(x):
    """The lower triangle of ``x`` with its diagonal halved."""
    return np.tril(x) - 0.5 * x * np.eye(np.shape(x)[-1])


def cholesky_lower_vjp(g, low):
    """Cotangent of ``A`` given that of ``L = cholesky(A)``, when only tril(A) is read."""
    low_inv = np.linalg.inv(low)
    s = np.matmul(matrix_transpose(low_inv), np.matmul(_phi(np.matmul(matrix_transpose(low), g)), low_inv))
    return np.tril(s + matrix_transpose(s), -1) + s * np.eye(np.shape(s)[-1])


def cholesky_lower_jvp(da, low):
    sym = np.tril(da) + matrix_transpose(np.tril(da, -1))  # the symmetric matrix the lower triangle means
    low_inv = np.linalg.inv(low)
    return np.matmul(low, _phi(np.matmul(low_inv, np.matmul(sym, matrix_transpose(low_inv)))))


def cholesky_vjp(g, ans, a, *, upper=False):
    # With upper=True numpy reads the upper triangle: the transpose of the lower case.
    if upper:
        return (matrix_transpose(cholesky_lower_vjp(matrix_transpose(g), matrix_transpose(ans))),)
    return (cholesky_lower_vjp(g, ans),)


def cholesky_jvp(da, ans, a, *, upper=False):
    if upper:
        return (matrix_transpose(cholesky_lower_jvp(matrix_transpose(da), matrix_transpose(ans))),)
    return (cholesky_lower_jvp(da, ans),)


# --------------------------------------------------------------------------- decompositions
# Real matrices, stacked along leading axes. Formulas: Townsend, "Differentiating the singular
# value decomposition" (2016); Giles, "An extended collection of matrix derivative results"
# (2008); Golub & Pereyra (1973) for the pseudo-inverse. Every vjp and jvp is written with
# functions that have rules (the decompositions themselves among them, read from ``ans``), so
# all of them have a second order.

def diag_matrix(v):
    """The diagonal matrices with the entries of ``v`` on their diagonal (batched)."""
    return np.expand_dims(v, -1) * np.eye(np.shape(v)[-1])


def diagonal_of(x):
    return np.diagonal(x, axis1=-2, axis2=-1)


def gap_inverse(w):
    """``F[..., i, j] = 1 / (w_j - w_i)`` off the diagonal, 0 on it. Infinite where two values
    coincide: the derivatives of eigenvectors and singular vectors do not exist there."""
    eye = np.eye(np.shape(w)[-1])
    return (1.0 - eye) / (np.expand_dims(w, -2) - np.expand_dims(w, -1) + eye)


def read_symmetric(a, UPLO="L"):
    """The symmetric matrix that eigh-like functions read from the ``UPLO`` triangle of ``a``."""
    if UPLO in ("U", "u"):
        return np.triu(a) + matrix_transpose(np.triu(a, 1))
    return np.tril(a) + matrix_transpose(np.tril(a, -1))


def read_symmetric_adjoint(g, UPLO="L"):
    """The adjoint of ``read_symmetric``: zero on the triangle not read."""
    if UPLO in ("U", "u"):
        return np.triu(g) + np.triu(matrix_transpose(g), 1)
    return np.tril(g) + np.tril(matrix_transpose(g), -1)


@nondifferentiable
def refuse_complex(a, what):
    if np.iscomplexobj(a):
        raise UnsupportedFeatureError(f"the derivative of {what} of a complex matrix is not "
                                      f"implemented; only real matrices are supported")


@nondifferentiable
def refuse_full_matrices(a, uses_vectors=True):
    """Raise for the full factors of a non-square matrix, unless only ``S`` is used."""
    if uses_vectors and np.shape(a)[-1] != np.shape(a)[-2]:
        raise UnsupportedFeatureError(
            "the derivative of the singular vectors of numpy.linalg.svd with "
            "full_matrices=True (the default) of a non-square matrix is not defined: the "
            "vectors beyond min(m, n) are arbitrary. Pass full_matrices=False")


def zeros_if_lazy(g, like):
    """``g``, or zeros shaped like ``like`` when ``g`` is the lazy zero of an unused output."""
    if is_zero(g):
        return np.zeros_like(like)
    return g


# --- svd

def singular_values_adjoint(gs, u, vh):
    """Cotangent of ``A`` from that of its singular values: ``U diag(gs) V^T``."""
    return np.matmul(u * np.expand_dims(gs, -2), vh)


def svd_adjoint(gu, gs, gvh, u, s, vh, shape):
    """Cotangent of ``A`` (m x n) from those of its reduced SVD ``U, S, V^T`` (Townsend).
    ``gu`` and ``gvh`` may be the lazy zero: when only ``S`` is used, the gradient exists
    even at repeated singular values."""
    m, n = shape[-2], shape[-1]
    k = np.shape(s)[-1]
    s_row, s_col = np.expand_dims(s, -2), np.expand_dims(s, -1)
    core = diag_matrix(gs)
    if not is_zero(gu):
        ut_gu = np.matmul(matrix_transpose(u), gu)
        core = core + gap_inverse(s * s) * (ut_gu - matrix_transpose(ut_gu)) * s_row
    if not is_zero(gvh):
        vt_gv = np.matmul(vh, matrix_transpose(gvh))
        core = core + s_col * (gap_inverse(s * s) * (vt_gv - matrix_transpose(vt_gv)))
    ga = np.matmul(u, np.matmul(core, vh))
    if m > k and not is_zero(gu):  # the part of gu outside the column space of U
        ga = ga + np.matmul((gu - np.matmul(u, ut_gu)) / s_row, vh)
    if n > k and not is_zero(gvh):  # the part of gv outside the row space of A
        ga = ga + np.matmul(u, (gvh - np.matmul(matrix_transpose(vt_gv), vh)) / s_col)
    return ga


def svd_tangents(da, u, s, vh):
    """Tangents of ``U, S, V^T`` (reduced SVD) along ``da`` (Townsend)."""
    m, n = np.shape(u)[-2], np.shape(vh)[-1]
    k = np.shape(s)[-1]
    v = matrix_transpose(vh)
    dp = np.matmul(matrix_transpose(u), np.matmul(da, v))
    f = gap_inverse(s * s)
    s_row, s_col = np.expand_dims(s, -2), np.expand_dims(s, -1)
    du = np.matmul(u, f * (dp * s_row + s_col * matrix_transpose(dp)))
    dv = np.matmul(v, f * (s_col * dp + matrix_transpose(dp) * s_row))
    if m > k:
        du = du + (np.matmul(da, v) - np.matmul(u, dp)) / s_row
    if n > k:
        dv = dv + (np.matmul(matrix_transpose(da), u) - np.matmul(v, matrix_transpose(dp))) / s_row
    return du, diagonal_of(dp), matrix_transpose(dv)


def svd_vjp(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    refuse_complex(a, "numpy.linalg.svd")
    if not compute_uv:
        u, s, vh = np.linalg.svd(a, full_matrices=False, hermitian=hermitian)
        ga = singular_values_adjoint(g, u, vh)
    else:
        u, s, vh = ans
        gu, gvh = rt.part(g, 0), rt.part(g, 2)
        if full_matrices:  # only the first min(m, n) singular vectors are defined
            refuse_full_matrices(a, not (is_zero(gu) and is_zero(gvh)))
            u, vh = u[..., :np.shape(s)[-1]], vh[..., :np.shape(s)[-1], :]
        ga = svd_adjoint(gu, zeros_if_lazy(rt.part(g, 1), s), gvh, u, s, vh, np.shape(a))
    if hermitian:  # numpy computes it with eigh, which reads the lower triangle
        ga = read_symmetric_adjoint(ga)
    return (ga,)


def svd_jvp(da, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    refuse_complex(a, "numpy.linalg.svd")
    if hermitian:
        da = read_symmetric(da)
    if not compute_uv:
        u, s, vh = np.linalg.svd(a, full_matrices=False, hermitian=hermitian)
        return (diagonal_of(np.matmul(matrix_transpose(u), np.matmul(da, matrix_transpose(vh)))),)
    if full_matrices:
        refuse_full_matrices(a)
    u, s, vh = ans
    return (like_sequence(ans, svd_tangents(da, u, s, vh)),)


def svdvals_vjp(g, ans, x):
    return svd_vjp(g, ans, x, compute_uv=False)


def svdvals_jvp(dx, ans, x):
    return svd_jvp(dx, ans, x, compute_uv=False)


def spectral_norm_partials(x, ord, axis):
    """d norm(x, ord, axis) / dx for the matrix norms of singular values: ``ord`` 2 (the
    largest), -2 (the smallest) or 'nuc' (their sum), over the two ``axis``."""
    m = np.moveaxis(x, axis, (-2, -1))
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    if ord == "nuc":
        d = np.matmul(u, vh)
    else:
        k = 0 if ord == 2 else np.shape(s)[-1] - 1
        d = np.matmul(u[..., :, k:k + 1], vh[..., k:k + 1, :])
    return np.moveaxis(d, (-2, -1), axis)


# --- eigh, eigvalsh

def eigh_adjoint(gw, gv, w, v):
    """Cotangent of a symmetric matrix from those of its eigenvalues and eigenvectors (``gv``
    may be the lazy zero: then repeated eigenvalues are fine)."""
    core = diag_matrix(gw)
    if not is_zero(gv):
        core = core + gap_inverse(w) * np.matmul(matrix_transpose(v), gv)
    return np.matmul(v, np.matmul(core, matrix_transpose(v)))


def eigh_tangents(dm, w, v):
    """Tangents of the eigenvalues and eigenvectors of a symmetric matrix along ``dm``."""
    p = np.matmul(matrix_transpose(v), np.matmul(dm, v))
    return diagonal_of(p), np.matmul(v, gap_inverse(w) * p)


def eigh_vjp(g, ans, a, UPLO="L"):
    refuse_complex(a, "numpy.linalg.eigh")
    w, v = ans
    ga = eigh_adjoint(zeros_if_lazy(rt.part(g, 0), w), rt.part(g, 1), w, v)
    return (read_symmetric_adjoint(ga, UPLO),)


def eigh_jvp(da, ans, a, UPLO="L"):
    refuse_complex(a, "numpy.linalg.eigh")
    w, v = ans
    return (like_sequence(ans, eigh_tangents(read_symmetric(da, UPLO), w, v)),)


def eigvalsh_vjp(g, ans, a, UPLO="L"):
    refuse_complex(a, "numpy.linalg.eigvalsh")
    w, v = np.linalg.eigh(a, UPLO)
    return (read_symmetric_adjoint(np.matmul(v * np.expand_dims(g, -2), matrix_transpose(v)), UPLO),)


def eigvalsh_jvp(da, ans, a, UPLO="L"):
    refuse_complex(a, "numpy.linalg.eigvalsh")
    w, v = np.linalg.eigh(a, UPLO)
    return (diagonal_of(np.matmul(matrix_transpose(v), np.matmul(read_symmetric(da, UPLO), v))),)


# --- eig, eigvals
# LAPACK scales each eigenvector to unit norm and makes its largest component real: the
# tangents below keep both (dv stays orthogonal to v in the real sense, and its component at
# that entry real), so they are the derivatives of the vectors numpy returns.

@nondifferentiable
def largest_component_mask(v):
    """1 at the entry of largest modulus of each column of ``v``, else 0."""
    index = np.argmax(np.abs(v), axis=-2)
    return (np.arange(np.shape(v)[-2])[:, None] == np.expand_dims(index, -2)).astype(float)


def as_input_kind(x, like):
    """``x`` as a real array when ``like`` is real (a real value's derivative is real)."""
    return x if np.iscomplexobj(like) else np.real(x)


def eig_tangents(da, w, v):
    """Tangents of the eigenvalues and (normalized) eigenvectors of ``a`` along ``da``."""
    p = np.matmul(np.linalg.inv(v), np.matmul(da, v))
    dv = np.matmul(v, gap_inverse(w) * p)
    dv = dv - v * np.real(np.sum(np.conj(v) * dv, axis=-2, keepdims=True))  # unit norm
    mask = largest_component_mask(v)
    pivot = np.real(np.sum(v * mask, axis=-2, keepdims=True))
    dv = dv - 1j * v * np.imag(np.sum(dv * mask, axis=-2, keepdims=True)) / pivot  # real entry
    return as_input_kind(diagonal_of(p), w), as_input_kind(dv, v)


def eig_adjoint(gw, gv, w, v):
    """Cotangent of ``a`` from those of its eigenvalues and eigenvectors (transpose of
    ``eig_tangents`` in the pairing ``Re(sum(c * dz))``; ``gv`` may be the lazy zero)."""
    core = diag_matrix(gw)
    if not is_zero(gv):
        mask = largest_component_mask(v)
        pivot = np.real(np.sum(v * mask, axis=-2, keepdims=True))
        gv = gv - 1j * mask * np.imag(np.sum(gv * v, axis=-2, keepdims=True)) / pivot
        gv = gv - np.conj(v) * np.real(np.sum(gv * v, axis=-2, keepdims=True))
        core = core + gap_inverse(w) * np.matmul(matrix_transpose(v), gv)
    return np.matmul(matrix_transpose(np.linalg.inv(v)), np.matmul(core, matrix_transpose(v)))


def eig_vjp(g, ans, a):
    w, v = ans
    ga = eig_adjoint(zeros_if_lazy(rt.part(g, 0), w), rt.part(g, 1), w, v)
    return (as_input_kind(ga, a),)


def eig_jvp(da, ans, a):
    w, v = ans
    return (like_sequence(ans, eig_tangents(da, w, v)),)


@nondifferentiable
def matching_order(values, w):
    """Indices putting the eigenvalues ``w`` in the order of ``values`` (LAPACK may order the
    eigenvalues it computes with and without eigenvectors differently)."""
    distance = np.abs(np.expand_dims(values, -1) - np.expand_dims(w, -2))
    return np.expand_dims(np.argmin(distance, axis=-1), -2)


def eigenvectors_for(a, values):
    """The eigenvectors of ``a``, one column per entry of ``values`` (its eigenvalues)."""
    w, v = np.linalg.eig(a)
    return np.take_along_axis(v, matching_order(values, w), axis=-1)


def eigvals_vjp(g, ans, a):
    v = eigenvectors_for(a, ans)
    core = diag_matrix(g)
    return (as_input_kind(np.matmul(matrix_transpose(np.linalg.inv(v)), np.matmul(core, matrix_transpose(v))), a),)


def eigvals_jvp(da, ans, a):
    v = eigenvectors_for(a, ans)
    return (as_input_kind(diagonal_of(np.matmul(np.linalg.inv(v), np.matmul(da, v))), ans),)


# --- qr

@nondifferentiable
def refuse_qr_mode(a, mode):
    m, n = np.shape(a)[-2], np.shape(a)[-1]
    if m < n:
        raise UnsupportedFeatureError(
            "the derivative of numpy.linalg.qr is implemented for square and tall matrices "
            f"(m >= n), not {m} x {n}; factor the transpose instead")
    if mode not in ("reduced", "r") and not (mode == "complete" and m == n):
        raise UnsupportedFeatureError(f"the derivative of numpy.linalg.qr with mode={mode!r} "
                                      f"is not implemented; use mode='reduced' or 'r'")


def right_solve(x, r):
    """``x @ inv(r).T``, by a solve."""
    return matrix_transpose(np.linalg.solve(r, matrix_transpose(x)))


def qr_adjoint(gq, gr, q, r):
    """Cotangent of ``A = QR`` (m >= n) from those of ``Q`` and ``R``."""
    m = np.matmul(gr, matrix_transpose(r)) - np.matmul(matrix_transpose(q), gq)
    copied = np.triu(m) + matrix_transpose(np.triu(m, 1))  # symmetric, from the upper triangle
    return right_solve(gq + np.matmul(q, copied), r)


def qr_tangents(da, q, r):
    """Tangents of ``Q`` and ``R`` along ``da``."""
    x = matrix_transpose(np.linalg.solve(matrix_transpose(r), matrix_transpose(da)))  # da @ inv(r)
    c = np.matmul(matrix_transpose(q), x)
    low = np.tril(c, -1)
    omega = low - matrix_transpose(low)  # q.T @ dq, antisymmetric
    return np.matmul(q, omega) + x - np.matmul(q, c), np.matmul(c - omega, r)


def qr_vjp(g, ans, a, mode="reduced"):
    refuse_complex(a, "numpy.linalg.qr")
    refuse_qr_mode(a, mode)
    if mode == "r":
        q, r = np.linalg.qr(a)
        return (qr_adjoint(np.zeros_like(q), g, q, r),)
    q, r = ans
    return (qr_adjoint(zeros_if_lazy(rt.part(g, 0), q), zeros_if_lazy(rt.part(g, 1), r), q, r),)


def qr_jvp(da, ans, a, mode="reduced"):
    refuse_complex(a, "numpy.linalg.qr")
    refuse_qr_mode(a, mode)
    if mode == "r":
        q, r = np.linalg.qr(a)
        return (qr_tangents(da, q, r)[1],)
    q, r = ans
    return (like_sequence(ans, qr_tangents(da, q, r)),)


# --- pinv, lstsq (full rank: the rank does not change nearby)

def pinv_adjoint(g, a, x):
    """Cotangent of ``A`` from that of ``X = pinv(A)`` (Golub & Pereyra)."""
    xt = matrix_transpose(x)
    beside_a = np.eye(np.shape(a)[-2]) - np.matmul(a, x)  # projects off the range of A
    beside_x = np.eye(np.shape(a)[-1]) - np.matmul(x, a)  # projects off the range of A.T
    return (-np.matmul(xt, np.matmul(g, xt))
            + np.matmul(beside_a, np.matmul(matrix_transpose(g), np.matmul(x, xt)))
            + np.matmul(np.matmul(xt, x), np.matmul(matrix_transpose(g), beside_x)))


def pinv_tangent(da, a, x):
    """Tangent of ``X = pinv(A)`` along ``da``."""
    xt = matrix_transpose(x)
    beside_a = np.eye(np.shape(a)[-2]) - np.matmul(a, x)
    beside_x = np.eye(np.shape(a)[-1]) - np.matmul(x, a)
    return (-np.matmul(x, np.matmul(da, x))
            + np.matmul(np.matmul(x, xt), np.matmul(matrix_transpose(da), beside_a))
            + np.matmul(beside_x, np.matmul(matrix_transpose(da), np.matmul(xt, x))))


def pinv_vjp(g, ans, a, rcond=None, hermitian=False, *, rtol=None):
    refuse_complex(a, "numpy.linalg.pinv")
    if hermitian:  # computed with eigh, which reads the lower triangle
        return (read_symmetric_adjoint(pinv_adjoint(g, read_symmetric(a), ans)),)
    return (pinv_adjoint(g, a, ans),)


def pinv_jvp(da, ans, a, rcond=None, hermitian=False, *, rtol=None):
    refuse_complex(a, "numpy.linalg.pinv")
    if hermitian:
        return (pinv_tangent(read_symmetric(da), read_symmetric(a), ans),)
    return (pinv_tangent(da, a, ans),)


def as_columns(x, b):
    """``x`` (shaped like a right-hand side ``b``) as a matrix of columns."""
    return np.expand_dims(x, -1) if np.ndim(b) == 1 else x


def like_rhs(x, b):
    """A matrix of columns back in the shape of ``b``."""
    return x[..., 0] if np.ndim(b) == 1 else x


def lstsq_vjp(g, ans, a, b, rcond=None):
    refuse_complex(a, "numpy.linalg.lstsq")
    x, residuals, rank, s = ans
    pinv = np.linalg.pinv(a)
    gx = as_columns(zeros_if_lazy(rt.part(g, 0), x), b)
    b2, x2 = as_columns(b, b), as_columns(x, b)
    gb = np.matmul(matrix_transpose(pinv), gx)
    ga = pinv_adjoint(np.matmul(gx, matrix_transpose(b2)), a, pinv)
    gres = rt.part(g, 1)
    if not is_zero(gres) and np.size(residuals) > 0:
        # at the optimum a.T @ r = 0: d|r|^2 = 2 r.T (db - da x)
        g_r = 2.0 * (b2 - np.matmul(a, x2)) * gres
        gb = gb + g_r
        ga = ga - np.matmul(g_r, matrix_transpose(x2))
    gs = rt.part(g, 3)
    if not is_zero(gs):
        u, s2, vh = np.linalg.svd(a, full_matrices=False)
        ga = ga + singular_values_adjoint(gs, u, vh)
    return ga, like_rhs(gb, b)


class TupleTangent(tuple):
    """A tangent contribution to a tuple of outputs that adds item by item. Generated code
    sums the contributions of several active arguments with ``+``, which would concatenate
    plain tuples."""

    __slots__ = ()  # no __dict__: the runtime treats it as a tuple, not as a user object

    def __add__(self, other):
        return rt.add(self, other)

    __radd__ = __add__


def tuple_tangent(items):
    """``items`` as a ``TupleTangent`` (the identity on their values)."""
    return TupleTangent(items)


def tuple_tangent_vjp(g, ans, items):
    return (g,)


def tuple_tangent_jvp(ditems, ans, items):
    return (tuple_tangent(ditems),)


def lstsq_jvp(da, db, ans, a, b, rcond=None):
    refuse_complex(a, "numpy.linalg.lstsq")
    x, residuals, rank, s = ans
    pinv = np.linalg.pinv(a)
    r = as_columns(b, b) - np.matmul(a, as_columns(x, b))
    by_a, by_b = ZERO, ZERO
    if not is_zero(da):
        by_a = tuple_tangent(lstsq_tangent_by_a(da, a, b, x, residuals, pinv, r))
    if not is_zero(db):
        by_b = tuple_tangent((np.matmul(pinv, db), residual_tangent(r, as_columns(db, b),
                                                                     residuals), ZERO, ZERO))
    return by_a, by_b


def lstsq_tangent_by_a(da, a, b, x, residuals, pinv, r):
    """The tangent of lstsq's ``(x, residuals, rank, s)`` along ``da``."""
    x_by_a = like_rhs(np.matmul(pinv_tangent(da, a, pinv), as_columns(b, b)), b)
    # at the optimum a.T @ r = 0, so the residual changes only through da at fixed x
    residuals_by_a = residual_tangent(r, -np.matmul(da, as_columns(x, b)), residuals)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    s_by_a = diagonal_of(np.matmul(matrix_transpose(u), np.matmul(da, matrix_transpose(vh))))
    return x_by_a, residuals_by_a, ZERO, s_by_a


def residual_tangent(r, dr, residuals):
    """Tangent of the squared residual norms (numpy returns none when a is not tall and
    of full rank)."""
    if np.size(residuals) == 0:
        return np.zeros_like(residuals)
    return 2.0 * np.sum(r * dr, axis=-2)


# --- matrix_power

def power_sum_adjoint(g, base, k):
    """Cotangent of ``base`` from that of ``base ** k`` (k >= 1)."""
    total = np.zeros_like(base)
    for i in range(k):
        total = total + np.matmul(matrix_transpose(np.linalg.matrix_power(base, i)),
                                  np.matmul(g, matrix_transpose(np.linalg.matrix_power(base, k - 1 - i))))
    return total


def power_sum_tangent(d, base, k):
    """Tangent of ``base ** k`` (k >= 1) along ``d``."""
    total = np.zeros_like(base)
    for i in range(k):
        total = total + np.matmul(np.linalg.matrix_power(base, i),
                                  np.matmul(d, np.linalg.matrix_power(base, k - 1 - i)))
    return total


def matrix_power_vjp(g, ans, a, n):
    if n == 0:
        return (np.zeros_like(a),)
    if n > 0:
        return (power_sum_adjoint(g, a, n),)
    inverse = np.linalg.inv(a)
    g_inverse = power_sum_adjoint(g, inverse, -n)
    return (-np.matmul(matrix_transpose(inverse), np.matmul(g_inverse, matrix_transpose(inverse))),)


def matrix_power_jvp(da, ans, a, n):
    if n == 0:
        return (np.zeros_like(ans),)
    if n > 0:
        return (power_sum_tangent(da, a, n),)
    inverse = np.linalg.inv(a)
    return (power_sum_tangent(-np.matmul(inverse, np.matmul(da, inverse)), inverse, -n),)


# --------------------------------------------------------------------------- domains

def _pairs(shapes):
    def domain(rng):
        return [((draw(rng, a), draw(rng, b)), kw) for a, b, kw in shapes]
    return domain


_DOT = [((3,), (3,), {}), ((2, 3), (3,), {}), ((3,), (3, 4), {}), ((2, 3), (3, 4), {}),
        ((2, 2, 3), (3,), {}), ((2, 2, 3), (4, 3, 2), {}), ((3,), (2, 3, 4), {}),
        (None, (2, 3), {}), ((2, 3), None, {}), ((), (3,), {})]
_INNER = [((3,), (3,), {}), ((2, 3), (3,), {}), ((2, 3), (4, 3), {}), ((2, 2, 3), (4, 3), {}),
          (None, (2, 3), {}), ((2, 3), (), {})]
_OUTER = [((3,), (4,), {}), ((2, 3), (4,), {}), ((3,), (2, 2), {}), (None, (3,), {})]
_TENSORDOT = [((2, 3, 4), (3, 4, 5), {}), ((2, 3, 4), (4, 5), {"axes": 1}),
              ((2, 3), (4, 5), {"axes": 0}), ((2, 3, 4), (4, 2, 5), {"axes": ([0, 2], [1, 0])}),
              ((2, 3, 4), (3, 5), {"axes": (1, 0)}), ((3, 4), (4, 3), {"axes": ([-1, 0], [0, -1])})]
_VDOT = [((3,), (3,), {}), ((2, 3), (6,), {}), ((2, 2), (2, 2), {})]


def _einsum_points(rng):
    cases = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
             ("i,i->", [(3,), (3,)]), ("i,j->ij", [(3,), (2,)]), ("ij->", [(2, 3)]),
             ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ba", [(2, 3)]), ("ij->ji", [(2, 3)]),
             ("bij,bjk->bik", [(4, 2, 3), (4, 3, 2)]), ("...ij,...jk->...ik", [(4, 2, 3), (3, 2)]),
             ("...ij,...jk", [(1, 2, 3), (5, 3, 2)]), ("ij,ij->i", [(2, 3), (2, 3)]),
             ("ijk,k->ij", [(2, 3, 4), (4,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
             ("iij,j->i", [(3, 3, 2), (2,)]), ("ij,k->ijk", [(2, 3), (2,)]),
             ("i,i,i->", [(3,), (3,), (3,)]), ("...i,...i->...", [(2, 3), (3,)])]
    sublists = [((draw(rng, (2, 3)), [0, 1], draw(rng, (3, 4)), [1, 2], [0, 2]), {}),
                ((draw(rng, (2, 3)), [0, 1], draw(rng, (3,)), [1]), {}),
                ((draw(rng, (3, 3)), [0, 0]), {}),
                ((draw(rng, (4, 2, 3)), [Ellipsis, 0, 1], draw(rng, (3,)), [1],
                  [Ellipsis, 0]), {})]
    return [((spec,) + tuple(draw(rng, s) for s in shapes), {})
            for spec, shapes in cases] + sublists


def invertible_matrix(rng, shape, sign=1.0):
    a = draw(rng, shape, -1.0, 1.0) + 3.0 * np.eye(shape[-1])
    if sign < 0:
        a[..., 0, :] *= -1.0
    return a


def spd_matrix(rng, shape):
    b = draw(rng, shape, -1.0, 1.0)
    return np.matmul(b, np.swapaxes(b, -1, -2)) + shape[-1] * np.eye(shape[-1])


def _solve_points(rng):
    return [((invertible_matrix(rng, (3, 3)), draw(rng, (3,))), {}),
            ((invertible_matrix(rng, (3, 3)), draw(rng, (3, 2))), {}),
            ((invertible_matrix(rng, (2, 3, 3)), draw(rng, (2, 3, 2))), {}),
            ((invertible_matrix(rng, (2, 3, 3)), draw(rng, (3,))), {}),
            ((invertible_matrix(rng, (3, 3)), draw(rng, (2, 3, 2))), {})]


def _square_points(rng):
    return [((invertible_matrix(rng, (3, 3)),), {}), ((invertible_matrix(rng, (2, 3, 3)),), {}),
            ((invertible_matrix(rng, (3, 3), -1.0),), {}), ((invertible_matrix(rng, (1, 1)),), {})]


def _spd_points(rng):
    return [((spd_matrix(rng, (3, 3)),), {}), ((spd_matrix(rng, (2, 3, 3)),), {}),
            ((spd_matrix(rng, (3, 3)),), {"upper": True}), ((spd_matrix(rng, (3, 3)) + np.triu(
                draw(rng, (3, 3)), 1),), {})]



def _orthogonal(rng, n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q


def _separated(rng, shape, values):
    """A matrix of ``shape`` with singular values ``values`` (well apart)."""
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    batch = shape[:-2]
    out = np.empty(shape)
    for index in np.ndindex(*batch):
        left, right = _orthogonal(rng, m)[:, :k], _orthogonal(rng, n)[:, :k]
        out[index] = (left * np.asarray(values[:k])) @ right.T
    return out


def _svd_points(rng):
    values = [3.0, 1.9, 1.1, 0.5]
    points = [(shape, kw) for shape in ((3, 3), (4, 3), (3, 4), (2, 4, 3))
              for kw in ({"full_matrices": False}, {"compute_uv": False})]
    points += [((3, 3), {}), ((2, 3), {"compute_uv": False, "full_matrices": True})]
    out = [((_separated(rng, shape, values),), kw) for shape, kw in points]
    sym = _symmetric_separated(rng, 3, [2.5, -1.5, 0.7])
    return out + [((sym,), {"hermitian": True}),
                  ((sym,), {"hermitian": True, "compute_uv": False})]


def _symmetric_separated(rng, n, eigenvalues, batch=()):
    """A matrix whose lower triangle holds a symmetric matrix with ``eigenvalues``; random
    above the diagonal (where eigh does not read)."""
    out = np.empty(batch + (n, n))
    for index in np.ndindex(*batch):
        q = _orthogonal(rng, n)
        out[index] = (q * np.asarray(eigenvalues)) @ q.T
    return np.tril(out) + np.triu(draw(rng, batch + (n, n)), 1)


def _eigh_points(rng):
    values = [-1.2, 0.4, 1.5, 3.0]
    return [((_symmetric_separated(rng, 3, values[:3]),), {}),
            ((_symmetric_separated(rng, 4, values, (2,)),), {}),
            ((matrix_transpose(_symmetric_separated(rng, 3, values[1:])),), {"UPLO": "U"})]


def _eig_points(rng):
    def similar(values):
        p = draw(rng, (len(values), len(values)), -1.0, 1.0) + 2.0 * np.eye(len(values))
        return (p * np.asarray(values)) @ np.linalg.inv(p)
    rotation = np.array([[0.5, -1.5, 0.2], [1.2, 0.3, -0.4], [0.1, 0.6, 2.0]])
    complex_input = similar([1.0 + 1.0j, -0.5 + 0.2j, 2.0 - 0.7j])
    return [((similar([1.0, -0.6, 2.2]),), {}), ((rotation,), {}),
            ((complex_input,), {}), ((np.stack([rotation, similar([0.5, 1.5, 3.0])]),), {})]


def _qr_points(rng):
    return [((draw(rng, shape),), kw) for shape, kw in (
        ((3, 3), {}), ((4, 3), {}), ((2, 4, 3), {}), ((4, 3), {"mode": "r"}),
        ((3, 3), {"mode": "complete"}), ((3, 1), {}))]


def _pinv_points(rng):
    values = [2.0, 1.2, 0.6]
    return [((_separated(rng, shape, values),), {}) for shape in ((4, 3), (3, 4), (3, 3),
                                                                 (2, 4, 2))] + [
        ((_symmetric_separated(rng, 3, [2.0, -1.0, 0.5]),), {"hermitian": True})]


def _matrix_power_points(rng):
    def moderate(shape):
        return draw(rng, shape, -0.5, 0.5) + np.eye(shape[-1])
    return [((moderate((3, 3)), n), {}) for n in (0, 1, 2, 3, -1, -2)] + [
        ((moderate((2, 3, 3)), 3), {}), ((moderate((2, 3, 3)), -2), {})]


def _lstsq_points(rng):
    values = [2.0, 1.2, 0.6]
    return [((_separated(rng, (5, 3), values), draw(rng, (5,))), {}),
            ((_separated(rng, (5, 3), values), draw(rng, (5, 2))), {}),
            ((_separated(rng, (3, 3), values), draw(rng, (3,))), {}),
            ((_separated(rng, (2, 4), values), draw(rng, (2, 2))), {})]


nondifferentiable(tensordot_axes)
nondifferentiable(dot_axes)

defrule(np.dot, dot_vjp, diff_args=(0, 1), jvp=dot_jvp, domain=_pairs(_DOT))
defrule(np.inner, inner_vjp, diff_args=(0, 1), jvp=inner_jvp, domain=_pairs(_INNER))
defrule(np.outer, outer_vjp, diff_args=(0, 1), jvp=outer_jvp, domain=_pairs(_OUTER))
defrule(np.vdot, vdot_vjp, diff_args=(0, 1), jvp=vdot_jvp, domain=_pairs(_VDOT))
defrule(np.tensordot, tensordot_vjp, diff_args=(0, 1), jvp=tensordot_jvp,
        domain=_pairs(_TENSORDOT))
# Every operand of einsum is differentiable, at any position (0, 2, 4... in the sublist form,
# 1, 2, 3... after a subscripts string): the rule takes up to 32 arguments.
defrule(np.einsum, einsum_vjp, diff_args=tuple(range(EINSUM_ARGS)), jvp=einsum_jvp,
        domain=_einsum_points)
defrule(np.linalg.solve, solve_vjp, diff_args=(0, 1), jvp=solve_jvp, domain=_solve_points,
        name="numpy.linalg.solve")
defrule(np.linalg.inv, inv_vjp, jvp=inv_jvp, domain=_square_points, name="numpy.linalg.inv")
defrule(np.linalg.det, det_vjp, jvp=det_jvp, domain=_square_points, name="numpy.linalg.det")
defrule(np.linalg.slogdet, slogdet_vjp, jvp=slogdet_jvp, domain=_square_points,
        name="numpy.linalg.slogdet")
defrule(np.linalg.cholesky, cholesky_vjp, jvp=cholesky_jvp, domain=_spd_points,
        name="numpy.linalg.cholesky")
# Repeated singular values or eigenvalues (and zero singular values where U or V has a part
# outside the square core) have no derivative: the formulas divide by their gaps there.
defrule(np.linalg.svd, svd_vjp, jvp=svd_jvp, domain=_svd_points, name="numpy.linalg.svd")
defrule(np.linalg.svdvals, svdvals_vjp, jvp=svdvals_jvp, name="numpy.linalg.svdvals",
        domain=lambda rng: [((_separated(rng, shape, [3.0, 1.9, 1.1]),), {})
                            for shape in ((3, 3), (4, 3), (2, 2, 3))])
defrule(np.linalg.eigh, eigh_vjp, jvp=eigh_jvp, domain=_eigh_points, name="numpy.linalg.eigh")
defrule(np.linalg.eigvalsh, eigvalsh_vjp, jvp=eigvalsh_jvp, domain=_eigh_points,
        name="numpy.linalg.eigvalsh")
defrule(np.linalg.eig, eig_vjp, jvp=eig_jvp, domain=_eig_points, name="numpy.linalg.eig")
defrule(np.linalg.eigvals, eigvals_vjp, jvp=eigvals_jvp, domain=_eig_points,
        name="numpy.linalg.eigvals")
defrule(np.linalg.qr, qr_vjp, jvp=qr_jvp, domain=_qr_points, name="numpy.linalg.qr")
defrule(np.linalg.pinv, pinv_vjp, jvp=pinv_jvp, domain=_pinv_points, name="numpy.linalg.pinv")
defrule(np.linalg.lstsq, lstsq_vjp, diff_args=(0, 1), jvp=lstsq_jvp, domain=_lstsq_points,
        name="numpy.linalg.lstsq")
defrule(tuple_tangent, tuple_tangent_vjp, jvp=tuple_tangent_jvp, linear=True,
        domain=lambda rng: [(((draw(rng, (2,)), draw(rng, None), 0.0),), {})])
defrule(np.linalg.matrix_power, matrix_power_vjp, jvp=matrix_power_jvp,
        domain=_matrix_power_points, name="numpy.linalg.matrix_power")
