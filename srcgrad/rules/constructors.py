"""Rules of array constructors whose values come from their arguments: ``np.full``,
``np.full_like`` (the fill value), ``np.linspace`` and ``np.logspace`` (the ends)."""
import numpy as np

from ..errors import UnsupportedFeatureError
from ..runtime import broadcast_like, unbroadcast, written_adjoint
from ._helpers import cast_to
from .domains import draw
from .registry import defrule


# an integer or boolean array filled with a float truncates it: no derivative (full: its
# dtype=; full_like: also a's dtype, read from ans, saved as a stand-in)
def full_vjp(g, ans, shape, fill_value, dtype=None, order="C"):
    return (unbroadcast(cast_to(g, dtype), fill_value),)


def full_jvp(dfill, ans, shape, fill_value, dtype=None, order="C"):
    return (cast_to(broadcast_like(dfill, ans), dtype),)


def full_like_vjp(g, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    return (unbroadcast(written_adjoint(g, ans), fill_value),)


def full_like_jvp(dfill, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    return (written_adjoint(broadcast_like(dfill, ans), ans),)


def linspace_weights(g, num, endpoint, retstep, axis):
    """Where each of ``num`` points lies between start (0) and stop (1), shaped to multiply
    ``g`` along its first axis."""
    if retstep or axis != 0:
        raise UnsupportedFeatureError("differentiating np.linspace/np.logspace with retstep "
                                      "or a nonzero axis is not supported")
    t = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    return np.reshape(t, (-1,) + (1,) * (np.ndim(g) - 1))


def linspace_vjp(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    t = linspace_weights(g, num, endpoint, retstep, axis)
    g = cast_to(g, dtype)
    return (unbroadcast(np.sum(g * (1.0 - t), axis=0), start),
            unbroadcast(np.sum(g * t, axis=0), stop))


def linspace_jvp(dstart, dstop, ans, start, stop, num=50, endpoint=True, retstep=False,
                 dtype=None, axis=0):
    t = linspace_weights(ans, num, endpoint, retstep, axis)
    return (cast_to(broadcast_like(dstart * (1.0 - t), ans), dtype),
            cast_to(broadcast_like(dstop * t, ans), dtype))


def logspace_vjp(g, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    # ans = base ** linspace(start, stop): d ans = ans * ln(base) * d linspace
    t = linspace_weights(g, num, endpoint, False, axis)
    h = cast_to(g, dtype) * ans * np.log(base)
    return (unbroadcast(np.sum(h * (1.0 - t), axis=0), start),
            unbroadcast(np.sum(h * t, axis=0), stop))


def logspace_jvp(dstart, dstop, ans, start, stop, num=50, endpoint=True, base=10.0,
                 dtype=None, axis=0):
    t = linspace_weights(ans, num, endpoint, False, axis)
    scale = cast_to(ans * np.log(base), dtype)
    return (broadcast_like(dstart * (1.0 - t) * scale, ans),
            broadcast_like(dstop * t * scale, ans))


def _full_domain(rng):
    return [(((2, 3), draw(rng, None)), {}), (((2, 3), draw(rng, (3,))), {})]


def _full_like_domain(rng):
    return [((draw(rng, (2, 3)), draw(rng, None)), {})]


def _space_domain(rng):
    return [((draw(rng, None), draw(rng, None), 5), {}),
            ((draw(rng, None), draw(rng, None), 4), {"endpoint": False}),
            ((draw(rng, (2,)), draw(rng, (2,)), 3), {})]


defrule(np.full, full_vjp, diff_args=(1,), jvp=full_jvp, domain=_full_domain, linear=True)
defrule(np.full_like, full_like_vjp, diff_args=(1,), jvp=full_like_jvp,
        domain=_full_like_domain, linear=True, shape_args=(0,))
defrule(np.linspace, linspace_vjp, diff_args=(0, 1), jvp=linspace_jvp, domain=_space_domain,
        linear=True)
defrule(np.logspace, logspace_vjp, diff_args=(0, 1), jvp=logspace_jvp, domain=_space_domain)
