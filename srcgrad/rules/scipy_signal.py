"""Rules of ``scipy.signal``: ``convolve``, ``correlate`` and ``fftconvolve`` of real arrays.

Imported by the registry once ``scipy.signal`` is (scipy is optional). All three are
bilinear. The cotangent of a ``"same"`` or ``"valid"`` result is first placed, zero-padded,
where that result sits in the ``"full"`` one; the full convolution's cotangent of each operand
is then the ``"valid"`` convolution of it with the other operand reversed along every axis.
``correlate(a, b)`` equals ``convolve(a, b reversed)`` in every mode, and its rules are written
so. Derivatives are written with ``convolve`` itself, so the rules compose to any order.
Complex operands are refused (their cotangents would need the conjugate convention).
"""
import numpy as np
import scipy.signal as ss

from ..errors import UnsupportedFeatureError
from ..runtime import is_zero
from ._helpers import dispatches, first_two_operands
from .domains import draw
from .registry import defrule, nondifferentiable


@dispatches(first_two_operands)
def convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve``, under a name tracers intercept (derivative rules call it)."""
    return ss.convolve(in1, in2, mode, method)


@nondifferentiable
def full_placement(shape1, shape2, shape, mode):
    """``np.pad`` widths putting a ``mode`` result of ``shape`` where it sits in the full
    convolution of operands of ``shape1`` and ``shape2`` (scipy centres ``"same"`` on the
    first operand and cuts ``"valid"`` where the shorter operand fits)."""
    widths = []
    for n1, n2, n in zip(shape1, shape2, shape):
        full = n1 + n2 - 1
        start = {"full": 0, "same": (full - n1) // 2, "valid": min(n1, n2) - 1}[mode]
        widths.append((start, full - n - start))
    return widths


@nondifferentiable
def refuse_complex(*arrays):
    if any(np.iscomplexobj(a) for a in arrays):
        raise UnsupportedFeatureError("derivatives of scipy.signal's convolutions of complex "
                                      "arrays are not supported")


def convolve_vjp(g, ans, in1, in2, mode="full", method="auto"):
    refuse_complex(g, in1, in2)
    full = np.pad(g, full_placement(np.shape(in1), np.shape(in2), np.shape(ans), mode))
    return (convolve(full, np.flip(in2), "valid", method),
            convolve(full, np.flip(in1), "valid", method))


def convolve_jvp(d1, d2, ans, in1, in2, mode="full", method="auto"):
    t1 = 0.0 if is_zero(d1) else convolve(d1, in2, mode, method)
    t2 = 0.0 if is_zero(d2) else convolve(in1, d2, mode, method)
    return (t1, t2)


def correlate_vjp(g, ans, in1, in2, mode="full", method="auto"):
    g1, g2 = convolve_vjp(g, ans, in1, np.flip(in2), mode, method)
    return (g1, np.flip(g2))


def correlate_jvp(d1, d2, ans, in1, in2, mode="full", method="auto"):
    return convolve_jvp(d1, 0.0 if is_zero(d2) else np.flip(d2), ans, in1, np.flip(in2), mode,
                        method)


def fftconvolve_vjp(g, ans, in1, in2, mode="full", axes=None):
    if axes is not None:
        raise UnsupportedFeatureError("derivatives of scipy.signal.fftconvolve with 'axes' "
                                      "are not supported; convolve over every axis")
    return convolve_vjp(g, ans, in1, in2, mode, "fft")


def fftconvolve_jvp(d1, d2, ans, in1, in2, mode="full", axes=None):
    if axes is not None:
        raise UnsupportedFeatureError("derivatives of scipy.signal.fftconvolve with 'axes' "
                                      "are not supported; convolve over every axis")
    return convolve_jvp(d1, d2, ans, in1, in2, mode, "fft")


def _convolve_points(rng):
    return [((draw(rng, (5,)), draw(rng, (3,))), {}), ((draw(rng, (4,)), draw(rng, (2,)), "same"), {}),
            ((draw(rng, (3,)), draw(rng, (6,))), {"mode": "valid"}),
            ((draw(rng, (6,)), draw(rng, (4,))), {"mode": "same", "method": "direct"}),
            ((draw(rng, (4, 3)), draw(rng, (2, 2))), {"mode": "valid"}),
            ((draw(rng, (5, 4)), draw(rng, (4, 1)), "same"), {}),
            ((draw(rng, (3, 4)), draw(rng, (2, 3))), {"method": "fft"})]


def _fftconvolve_points(rng):
    return [((draw(rng, (5,)), draw(rng, (3,))), {}), ((draw(rng, (4, 3)), draw(rng, (2, 2))),
                                                         {"mode": "same"}),
            ((draw(rng, (5,)), draw(rng, (2,)), "valid"), {})]


defrule(ss.convolve, convolve_vjp, diff_args=(0, 1), jvp=convolve_jvp,
        domain=_convolve_points, name="scipy.signal.convolve")
defrule(convolve, convolve_vjp, diff_args=(0, 1), jvp=convolve_jvp, domain=_convolve_points,
        name="srcgrad.rules.scipy_signal.convolve")
defrule(ss.correlate, correlate_vjp, diff_args=(0, 1), jvp=correlate_jvp,
        domain=_convolve_points, name="scipy.signal.correlate")
defrule(ss.fftconvolve, fftconvolve_vjp, diff_args=(0, 1), jvp=fftconvolve_jvp,
        domain=_fftconvolve_points, name="scipy.signal.fftconvolve")
