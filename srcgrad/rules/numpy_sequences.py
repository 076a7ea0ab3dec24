"""Rules of numpy's functions of 1-D sequences: ``ediff1d``, ``trim_zeros``, ``polyval``,
``vander``, ``interp`` and ``histogram``.

* ``trim_zeros`` keeps a slice of its input: the slice's bounds depend on which values are
  exactly 0, which no perturbation of a kept value changes, so the gradient flows to the kept
  values and the trimmed zeros get 0 (the result has no element for them).
* ``interp`` is differentiable in ``x`` (the slope of the segment ``x`` falls in: the right
  one at a knot; 0 outside the knots, where the value is ``fp[0]``/``fp[-1]`` or the constant
  ``left``/``right``) and, linearly, in ``fp``. Knots ``xp`` and ``left``/``right`` are
  constants (srcgrad refuses them at the call when they depend on the input); ``period`` is
  refused.
* ``polyval`` is differentiable in the coefficients (a 1-D sequence) and in ``x``.
"""
import numpy as np

from ..errors import SrcgradError
from ..runtime import ZERO, densify, is_zero, part
from ._helpers import extremum_weights, like_sequence, unindex
from .domains import away_from, draw
from .numpy_layout import undiff
from .numpy_linalg import tuple_tangent
from .registry import defrule, nondifferentiable

# --------------------------------------------------------------------------- ediff1d


@nondifferentiable
def zeros_or_none(values):
    """Zeros as long as ``values`` (flattened), or None for None: an end's zero tangent."""
    return None if values is None else np.zeros(np.size(values))


@nondifferentiable
def ediff1d_lengths(ary, to_end, to_begin):
    """How many leading, middle and trailing elements ``np.ediff1d`` returns."""
    begin = 0 if to_begin is None else np.size(to_begin)
    end = 0 if to_end is None else np.size(to_end)
    return begin, max(np.size(ary) - 1, 0), end


def ediff1d_vjp(g, ans, ary, to_end=None, to_begin=None):
    begin, middle, end = ediff1d_lengths(ary, to_end, to_begin)
    g_ary = np.reshape(undiff(g[begin:begin + middle], np.ravel(ary)), np.shape(ary))
    g_end = ZERO if to_end is None else np.reshape(g[begin + middle:], np.shape(to_end))
    g_begin = ZERO if to_begin is None else np.reshape(g[:begin], np.shape(to_begin))
    return g_ary, g_end, g_begin


def ediff1d_jvp(dary, dto_end, dto_begin, ans, ary, to_end=None, to_begin=None):
    zero_end, zero_begin = zeros_or_none(to_end), zeros_or_none(to_begin)
    flat = np.zeros(np.size(ary))
    return (np.ediff1d(densify(dary, ary), to_end=zero_end, to_begin=zero_begin),
            ZERO if to_end is None or is_zero(dto_end) else
            np.ediff1d(flat, to_end=dto_end, to_begin=zero_begin),
            ZERO if to_begin is None or is_zero(dto_begin) else
            np.ediff1d(flat, to_end=zero_end, to_begin=dto_begin))


# --------------------------------------------------------------------------- trim_zeros


@nondifferentiable
def trimmed_slice(filt, trim="fb"):
    """The slice of ``filt`` that ``np.trim_zeros(filt, trim)`` keeps."""
    if getattr(filt, "ndim", 1) != 1:  # (a list, or an array: not converted, so traceable)
        raise SrcgradError("the derivative of np.trim_zeros is written for 1-D sequences; "
                           "trim a differentiable N-D array with a slice of your own")
    nonzero = np.flatnonzero([v != 0 for v in filt])
    if not len(nonzero):
        return slice(0, 0)
    trim = trim.lower()
    start = int(nonzero[0]) if "f" in trim else 0
    stop = int(nonzero[-1]) + 1 if "b" in trim else len(filt)
    return slice(start, stop)


def trim_zeros_vjp(g, ans, filt, trim="fb"):
    return (unindex(g, filt, trimmed_slice(filt, trim)),)


def trim_zeros_jvp(dfilt, ans, filt, trim="fb"):
    return (densify(dfilt, filt)[trimmed_slice(filt, trim)],)


# --------------------------------------------------------------------------- polynomials


def like_items(seq, g):
    """The 1-D cotangent ``g`` of ``seq`` as a list or tuple when ``seq`` is one."""
    if isinstance(seq, (list, tuple)):
        return like_sequence(seq, [g[k] for k in range(len(seq))])
    return g


def horner(coefficients, x):
    """The polynomial with ``coefficients`` (highest power first) at ``x``, as ``np.polyval``
    computes it (plain arithmetic: traced and differentiated like any other code)."""
    y = 0.0 * x
    for c in coefficients:
        y = y * x + c
    return y


def polyder_coefficients(p):
    """The coefficients of the derivative of the polynomial ``p`` (highest power first)."""
    return [p[k] * (len(p) - 1 - k) for k in range(len(p) - 1)]


def polyval_vjp(g, ans, p, x):
    powers = np.expand_dims(x, -1) ** np.arange(len(p) - 1, -1, -1)
    g_p = np.sum(np.expand_dims(g, -1) * powers, axis=tuple(range(np.ndim(x))))
    return like_items(p, g_p), g * horner(polyder_coefficients(p), x)


def polyval_jvp(dp, dx, ans, p, x):
    return horner(densify(dp, p), x), dx * horner(polyder_coefficients(p), x)


def vander_slopes(x, N=None, increasing=False):
    """d vander(x, N, increasing)[i, j] / d x[i]: p x**(p - 1) for each column's power p."""
    n = len(x) if N is None else N
    lower = np.concatenate([np.zeros((len(x), 1)), np.vander(x, n - 1, increasing=True)],
                           axis=1) * np.arange(n)
    return lower if increasing else lower[:, ::-1]


def vander_vjp(g, ans, x, N=None, increasing=False):
    return (np.sum(g * vander_slopes(x, N, increasing), axis=1),)


def vander_jvp(dx, ans, x, N=None, increasing=False):
    return (dx[:, None] * vander_slopes(x, N, increasing),)


# --------------------------------------------------------------------------- interp


@nondifferentiable
def interp_segment(x, xp, left=None, right=None, period=None):
    """For each ``x``: the index ``i`` of its segment's right knot (``xp[i - 1] <= x <
    xp[i]``, clipped to the first and last segments) and 1.0 where the value comes from
    ``fp`` (0.0 where it is the constant ``left``/``right``)."""
    if period is not None:
        raise SrcgradError("the derivative of np.interp with period= is not written; "
                           "reduce x modulo the period and interpolate on one period")
    xp = np.asarray(xp)
    i = np.clip(np.searchsorted(xp, x, side="right"), 1, len(xp) - 1)
    kept = np.ones(np.shape(x))
    if left is not None:
        kept = np.where(x < xp[0], 0.0, kept)
    if right is not None:
        kept = np.where(x > xp[-1], 0.0, kept)
    return i, kept


@nondifferentiable
def interp_inside(x, xp):
    """1.0 where ``x`` lies within the knots (the value varies with ``x``), else 0.0."""
    return np.logical_and(x >= xp[0], x <= xp[-1]) * 1.0


def interp_slope(x, xp, fp, i):
    values, knots = (np.stack(fp) if isinstance(fp, (list, tuple)) else fp), np.asarray(xp)
    return (values[i] - values[i - 1]) / (knots[i] - knots[i - 1]) * interp_inside(x, knots)


def interp_vjp(g, ans, x, xp, fp, left=None, right=None, period=None):
    i, kept = interp_segment(x, xp, left, right, period)
    knots = np.asarray(xp)
    t = np.clip((x - knots[i - 1]) / (knots[i] - knots[i - 1]), 0.0, 1.0)
    zeros = np.zeros(len(xp))
    g_fp = unindex(g * (1.0 - t) * kept, zeros, i - 1) + unindex(g * t * kept, zeros, i)
    return g * interp_slope(x, xp, fp, i), like_items(fp, g_fp)


def interp_jvp(dx, dfp, ans, x, xp, fp, left=None, right=None, period=None):
    i, kept = interp_segment(x, xp, left, right, period)
    zero_left = None if left is None else 0.0
    zero_right = None if right is None else 0.0
    return (dx * interp_slope(x, xp, fp, i),
            np.interp(x, xp, densify(dfp, fp), left=zero_left, right=zero_right))


# --------------------------------------------------------------------------- domains

def _ediff1d_points(rng):
    return [((draw(rng, (4,)),), {}), ((draw(rng, (2, 3)),), {}),
            ((draw(rng, (4,)), draw(rng, (2,)), draw(rng, None)), {}),
            ((draw(rng, (3,)), None, draw(rng, (2,))), {})]


def _trim_zeros_points(rng):
    # (no zeros: a perturbed zero is kept, so the result's length changes; trimming is
    # checked in tests/test_library_rules.py)
    inner = away_from(rng, (4,), [0.0])
    return [((inner,), {}), ((inner, "f"), {}), (([float(v) for v in inner],), {})]


def _polyval_points(rng):
    return [((draw(rng, (3,)), draw(rng, None)), {}), ((draw(rng, (4,)), draw(rng, (3,))), {}),
            (([draw(rng, None), draw(rng, None)], draw(rng, (2, 3))), {}),
            ((draw(rng, (1,)), draw(rng, (2,))), {})]


def _vander_points(rng):
    return [((draw(rng, (3,)),), {}), ((draw(rng, (4,)), 2), {}),
            ((draw(rng, (3,)), 4, True), {})]


def _interp_points(rng):
    xp = np.array([-1.0, 0.0, 0.5, 1.5])
    x = np.array([-0.7, -0.2, 0.3, 0.8, 1.2, 1.7, -1.4])  # away from the knots
    return [((x, xp, draw(rng, (4,))), {}), ((0.3, xp, draw(rng, (4,))), {}),
            ((x, xp, draw(rng, (4,)), -3.0, 2.0), {}),
            ((x[:3], [-1.0, 0.0, 1.0], [draw(rng, None) for _ in range(3)]), {})]


defrule(np.ediff1d, ediff1d_vjp, diff_args=(0, 1, 2), jvp=ediff1d_jvp, linear=True,
        domain=_ediff1d_points)
defrule(np.trim_zeros, trim_zeros_vjp, jvp=trim_zeros_jvp, linear=True,
        domain=_trim_zeros_points)
defrule(np.polyval, polyval_vjp, diff_args=(0, 1), jvp=polyval_jvp, domain=_polyval_points)
defrule(np.vander, vander_vjp, jvp=vander_jvp, domain=_vander_points)
defrule(np.interp, interp_vjp, diff_args=(0, 2), jvp=interp_jvp, domain=_interp_points)


# --------------------------------------------------------------------------- histogram
# np.histogram(a, bins, range, density, weights) returns (hist, bin_edges). The counts are
# locally constant in ``a``; the edges are not when numpy takes them from the data (``range``
# None, ``bins`` a count): they run from min(a) to max(a), so the minimum and maximum carry
# the edges' cotangent, and with ``density`` the heights' too (they divide by the span).
# Weights enter linearly (and through the total with ``density``).


@nondifferentiable
def histogram_layout(a, edges, bins, range_):
    """Each value's bin (clipped into the bins), 1.0 where it falls in one, and whether the
    edges move with the data."""
    if isinstance(bins, str) and range_ is None:
        raise SrcgradError(f"the derivative of np.histogram with bins={bins!r} is not "
                           "written (its edges follow the data by an estimator): pass "
                           "range= or a count of bins")
    count = len(edges) - 1
    index = np.clip(np.searchsorted(edges, a, side="right") - 1, 0, count - 1)
    inside = np.logical_and(a >= edges[0], a <= edges[-1]) * 1.0
    return index, inside, range_ is None and np.ndim(bins) == 0


def histogram_vjp(g, ans, a, bins=10, range=None, density=None, weights=None):
    hist, edges = ans
    g_hist, g_edges = densify(part(g, 0), hist) * 1.0, densify(part(g, 1), edges)
    index, inside, moving = histogram_layout(a, edges, bins, range)
    span = edges[-1] - edges[0]
    heights = np.sum(g_hist * hist) if density else 0.0
    g_a = ZERO
    if moving:
        s = np.linspace(0.0, 1.0, len(edges))
        d_lo = np.sum(g_edges * (1.0 - s)) + heights / span
        d_hi = np.sum(g_edges * s) - heights / span
        g_a = extremum_weights(a, np.min(a)) * d_lo + extremum_weights(a, np.max(a)) * d_hi
    if weights is None:
        return g_a, ZERO
    if density:
        total = np.sum(weights * inside)
        widths = np.diff(edges)
        return g_a, inside * (g_hist[index] / (total * widths[index]) - heights / total)
    return g_a, inside * g_hist[index]


def histogram_jvp(da, dweights, ans, a, bins=10, range=None, density=None, weights=None):
    hist, edges = ans
    index, inside, moving = histogram_layout(a, edges, bins, range)
    span = edges[-1] - edges[0]
    by_a = tuple_tangent((0.0 * hist, 0.0 * edges))  # (a pair: its items can be read)
    if moving and not is_zero(da):
        s = np.linspace(0.0, 1.0, len(edges))
        d_lo = np.sum(da * extremum_weights(a, np.min(a)))
        d_hi = np.sum(da * extremum_weights(a, np.max(a)))
        d_hist = -hist * (d_hi - d_lo) / span if density else 0.0 * hist
        by_a = tuple_tangent((d_hist, d_lo * (1.0 - s) + d_hi * s))
    by_weights = ZERO
    if weights is not None and not is_zero(dweights):
        summed = unindex(dweights * inside, np.zeros(len(hist)), index)
        if density:
            total = np.sum(weights * inside)
            summed = summed / (total * np.diff(edges)) - hist * np.sum(dweights * inside) / total
        by_weights = tuple_tangent((summed, 0.0 * edges))
    return by_a, by_weights


def _histogram_points(rng):
    a = draw(rng, (12,))
    return [((a, 4), {}), ((a, 3, (-2.5, 2.5)), {}), ((a, 5, None, True), {}),
            ((a, 4, None, False, draw(rng, (12,), 0.5, 2.0)), {}),
            ((a, 3, (-2.5, 2.5), True, draw(rng, (12,), 0.5, 2.0)), {}),
            ((a, np.array([-3.0, -0.5, 0.5, 3.0])), {})]


defrule(np.histogram, histogram_vjp, diff_args=(0, 4), jvp=histogram_jvp,
        domain=_histogram_points)
