"""Rules of complex numbers: ``real``, ``imag``, ``conj``, ``angle``, ``real_if_close``, and
``abs`` of complex values.

Convention (JAX's): a cotangent ``c`` of a complex value ``z`` is the linear functional
``dz -> Re(c * dz)``. Holomorphic rules are then the real formulas unchanged
(``g * f'(z)``, no conjugate), the gradient of a real ``f`` of complex ``z`` is
``df/dx - i df/dy`` (what ``jax.grad`` returns), and the gradient of a real input is the real
part of its cotangent. A real value computed from complex ones (``abs``, ``real``, ``imag``,
``angle``) reads only the real part of its cotangent: operations mixing real and complex
operands leave an imaginary part there that carries no meaning.
"""
import numpy as np

from ._helpers import conj_sign
from .derive import deflinear
from .domains import draw, unary
from .registry import defrule


def real_vjp(g, ans, val):
    return (np.real(g),)


def imag_vjp(g, ans, val):
    return (-1j * np.real(g),)


def conj_vjp(g, ans, x):
    return (np.conj(g),)


def real_if_close_vjp(g, ans, a, tol=100):
    # The result is real only when the imaginary part is negligible: then it is ``real``.
    return (np.real(g) if np.isrealobj(ans) else g,)


def real_if_close_jvp(da, ans, a, tol=100):
    return (np.real(da) if np.isrealobj(ans) else da,)


def angle_vjp(g, ans, z, deg=False):
    # angle = atan2(y, x): d angle = (x dy - y dx) / |z|^2 = Re(-i conj(z) dz) / |z|^2.
    return (np.real(g) * angle_weight(z, deg),)


def angle_jvp(dz, ans, z, deg=False):
    return (np.real(angle_weight(z, deg) * dz),)


def angle_weight(z, deg=False):
    """d angle(z) in the pairing ``Re(c dz)``: ``-i conj(z) / |z|^2``, whose real part
    (the only one a real input keeps) is 0: the angle of a real number is constant."""
    scale = 180.0 / np.pi if deg else 1.0
    return -1j * scale * np.conj(z) / np.where(z == 0, 1.0, np.real(z * np.conj(z)))


def absolute_vjp(g, ans, x):
    # The subgradient at 0 is taken as 0; complex x: d|z| = Re(conj(z) dz) / |z|.
    return (np.real(g) * conj_sign(x),)


def absolute_jvp(dx, ans, x):
    return (np.real(conj_sign(x) * dx),)


# --------------------------------------------------------------------------- domains

def complex_draw(rng, shape, low=-2.0, high=2.0):
    if shape is None:
        return complex(draw(rng, None, low, high), draw(rng, None, low, high))
    return draw(rng, shape, low, high) + 1j * draw(rng, shape, low, high)


def _complex_points(rng):
    return [((complex_draw(rng, s),), {}) for s in (None, (3,), (2, 3))]


def _mixed_points(rng):
    """Complex and real points (a real input's rules must hold too)."""
    return _complex_points(rng) + [((draw(rng, (3,)),), {}), ((draw(rng, None),), {})]


def _angle_points(rng):
    return _complex_points(rng) + [((complex_draw(rng, (3,)),), {"deg": True})]


def _real_if_close_points(rng):
    return _complex_points(rng) + [((draw(rng, (3,)) + 0j,), {})]


def _nonzero_points(rng):
    return [((z + np.where(np.abs(z) < 0.2, 0.5, 0.0),), {}) for (z,), _ in
            _complex_points(rng)] + [((np.array([0.7, -1.3, 2.0]),), {})]


# --------------------------------------------------------------------------- registration

deflinear(np.real, real_vjp, _mixed_points)
deflinear(np.imag, imag_vjp, _complex_points)
deflinear(np.conjugate, conj_vjp, _mixed_points)  # np.conj is np.conjugate
defrule(np.real_if_close, real_if_close_vjp, jvp=real_if_close_jvp,
        domain=_real_if_close_points)
defrule(np.angle, angle_vjp, jvp=angle_jvp, domain=_angle_points)
for _fn in (np.absolute, abs):  # np.abs is np.absolute
    defrule(_fn, absolute_vjp, jvp=absolute_jvp, domain=_nonzero_points)
defrule(np.fabs, absolute_vjp, jvp=absolute_jvp, domain=unary(avoid=(0.0,)))  # reals only
del _fn
