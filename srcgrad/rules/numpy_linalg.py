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
"""
import string

import numpy as np

from ..runtime import ZERO, broadcast_like, is_zero, unbroadcast
from . import operators as ops
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
    return np.tensordot(da, b, axes), np.tensordot(a, db, axes)


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
    return np.vdot(da, b), np.vdot(a, db)


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
    if rest and (isinstance(rest[0], str) or (len(rest) > 1 and isinstance(rest[1], list))):
        return args[:EINSUM_ARGS], rest
    n = (len(args) - 1) // 2
    return args[:n], args[n + 1:]


# --------------------------------------------------------------------------- np.linalg

def _mT(x):
    return np.swapaxes(x, -1, -2)


def solve_vjp(g, ans, a, b):
    vector = np.ndim(b) == 1  # numpy >= 2: only a 1-D b is a vector
    x = np.expand_dims(ans, -1) if vector else ans
    g2 = np.expand_dims(g, -1) if vector else g
    gb = np.linalg.solve(_mT(a), g2)
    ga = -np.matmul(gb, _mT(x))
    return unbroadcast(ga, a), unbroadcast(gb[..., 0] if vector else gb, b)


def solve_jvp(da, db, ans, a, b):
    vector = np.ndim(b) == 1
    x = np.expand_dims(ans, -1) if vector else ans
    dx_a = -np.linalg.solve(a, np.matmul(da, x))
    return (dx_a[..., 0] if vector else dx_a,
            broadcast_like(np.linalg.solve(a, db), ans))


def inv_vjp(g, ans, a):
    return (-np.matmul(_mT(ans), np.matmul(g, _mT(ans))),)


def inv_jvp(da, ans, a):
    return (-np.matmul(ans, np.matmul(da, ans)),)


def det_vjp(g, ans, a):
    return (np.expand_dims(g * ans, (-2, -1)) * _mT(np.linalg.inv(a)),)


def det_jvp(da, ans, a):
    return (ans * np.sum(_mT(np.linalg.inv(a)) * da, axis=(-2, -1)),)


def slogdet_vjp(g, ans, a):
    return (np.expand_dims(g[1], (-2, -1)) * _mT(np.linalg.inv(a)),)


def slogdet_jvp(da, ans, a):
    return ((0.0 * ans[0], np.sum(_mT(np.linalg.inv(a)) * da, axis=(-2, -1))),)


def _phi(x):
    """The lower triangle of ``x`` with its diagonal halved."""
    return np.tril(x) - 0.5 * x * np.eye(np.shape(x)[-1])


def cholesky_lower_vjp(g, low):
    """Cotangent of ``A`` given that of ``L = cholesky(A)``, when only tril(A) is read."""
    low_inv = np.linalg.inv(low)
    s = np.matmul(_mT(low_inv), np.matmul(_phi(np.matmul(_mT(low), g)), low_inv))
    return np.tril(s + _mT(s), -1) + s * np.eye(np.shape(s)[-1])


def cholesky_lower_jvp(da, low):
    sym = np.tril(da) + _mT(np.tril(da, -1))  # the symmetric matrix the lower triangle means
    low_inv = np.linalg.inv(low)
    return np.matmul(low, _phi(np.matmul(low_inv, np.matmul(sym, _mT(low_inv)))))


def cholesky_vjp(g, ans, a, *, upper=False):
    # With upper=True numpy reads the upper triangle: the transpose of the lower case.
    if upper:
        return (_mT(cholesky_lower_vjp(_mT(g), _mT(ans))),)
    return (cholesky_lower_vjp(g, ans),)


def cholesky_jvp(da, ans, a, *, upper=False):
    if upper:
        return (_mT(cholesky_lower_jvp(_mT(da), _mT(ans))),)
    return (cholesky_lower_jvp(da, ans),)


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


def _invertible(rng, shape, sign=1.0):
    a = draw(rng, shape, -1.0, 1.0) + 3.0 * np.eye(shape[-1])
    if sign < 0:
        a[..., 0, :] *= -1.0
    return a


def _spd(rng, shape):
    b = draw(rng, shape, -1.0, 1.0)
    return np.matmul(b, np.swapaxes(b, -1, -2)) + shape[-1] * np.eye(shape[-1])


def _solve_points(rng):
    return [((_invertible(rng, (3, 3)), draw(rng, (3,))), {}),
            ((_invertible(rng, (3, 3)), draw(rng, (3, 2))), {}),
            ((_invertible(rng, (2, 3, 3)), draw(rng, (2, 3, 2))), {}),
            ((_invertible(rng, (2, 3, 3)), draw(rng, (3,))), {}),
            ((_invertible(rng, (3, 3)), draw(rng, (2, 3, 2))), {})]


def _square_points(rng):
    return [((_invertible(rng, (3, 3)),), {}), ((_invertible(rng, (2, 3, 3)),), {}),
            ((_invertible(rng, (3, 3), -1.0),), {}), ((_invertible(rng, (1, 1)),), {})]


def _spd_points(rng):
    return [((_spd(rng, (3, 3)),), {}), ((_spd(rng, (2, 3, 3)),), {}),
            ((_spd(rng, (3, 3)),), {"upper": True}), ((_spd(rng, (3, 3)) + np.triu(
                draw(rng, (3, 3)), 1),), {})]


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
