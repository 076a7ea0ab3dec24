"""Rules of ``np.fft``: fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn,
irfftn, hfft, ihfft, fftshift and ifftshift, with ``n``/``s``, ``axis``/``axes`` and ``norm``.

Every transform is linear, so each jvp is the transform of the tangent, and each vjp is the
transpose of the transform in the pairing of complex values ``Re(sum(c * dz))`` (JAX's
convention, see ``numpy_complex``):

* the DFT matrix is symmetric, so the transpose of fft, ifft and their n-dimensional forms is
  the same transform of the cotangent (not of its conjugate), cropped or zero-padded back to
  the input's length where ``n``/``s`` padded or cropped it;
* rfft is fft of a real input keeping the first ``n // 2 + 1`` frequencies: its transpose is
  the real part of the fft of the cotangent zero-padded to ``n``;
* irfft reads its input through the Hermitian extension (each frequency but the first, and
  the last one for even ``n``, counts twice; the imaginary parts of those two are ignored):
  its transpose is the ifft of the cotangent, cut to ``n // 2 + 1`` frequencies and weighted
  by those counts;
* hfft is irfft of the conjugate, ihfft the conjugate of rfft (with the other scaling).

A real input's gradient is real. The vjps are transforms again, so all have a second order.
"""
import numpy as np

from .derive import deflinear
from .domains import draw
from .numpy_complex import complex_draw
from .registry import defrule, nondifferentiable

# --------------------------------------------------------------------------- helpers


@nondifferentiable
def transform_axes(a, s, axes):
    """The non-negative axes a transform of ``a`` runs over (numpy's defaults for None)."""
    ndim = np.ndim(a)
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    return tuple(int(axis) % ndim for axis in axes)


@nondifferentiable
def transform_lengths(a, s, axes):
    """The length of the transform along each of ``axes``: ``s``, or the input's lengths."""
    if s is not None:
        return tuple(int(n) for n in s)
    return tuple(np.shape(a)[axis] for axis in axes)


@nondifferentiable
def one_length(n):
    """``n`` of a one-dimensional transform as the ``s`` of an n-dimensional one."""
    return None if n is None else (n,)


@nondifferentiable
def crop_index(ndim, axis, length):
    """The index keeping the first ``length`` entries along ``axis``."""
    index = [slice(None)] * ndim
    index[axis] = slice(0, length)
    return tuple(index)


@nondifferentiable
def pad_widths(ndim, axis, extra):
    """np.pad widths adding ``extra`` zeros at the end of ``axis``."""
    widths = [(0, 0)] * ndim
    widths[axis] = (0, extra)
    return widths


@nondifferentiable
def hermitian_weights(ndim, axis, n):
    """How often each of the first ``n // 2 + 1`` frequencies counts in a length-``n`` Hermitian
    spectrum, shaped to broadcast along ``axis``."""
    weights = np.full(n // 2 + 1, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    shape = [1] * ndim
    shape[axis] = n // 2 + 1
    return np.reshape(weights, shape)


@nondifferentiable
def swapped_norm(norm):
    """The scaling of the other direction: how hfft and ihfft call irfft and rfft."""
    return {None: "forward", "backward": "forward", "forward": "backward",
            "ortho": "ortho"}[norm]


def resized(z, length, axis):
    """``z`` cut or zero-padded to ``length`` along ``axis`` (the transpose of what ``n`` or
    ``s`` did to the input)."""
    have = np.shape(z)[axis]
    if have > length:
        return z[crop_index(np.ndim(z), axis, length)]
    if have < length:
        return np.pad(z, pad_widths(np.ndim(z), axis, length - have))
    return z


def fitted(z, a, axes):
    """A cotangent ``z`` back in the shape of the input ``a`` along ``axes``; real for a real
    input."""
    for axis in axes:
        z = resized(z, np.shape(a)[axis], axis)
    return z if np.iscomplexobj(a) else np.real(z)


def half_spectrum(z, axis):
    """The transpose of irfft's Hermitian extension along ``axis`` (``z`` is as long as the
    output): the first ``n // 2 + 1`` frequencies, weighted by how often each counts."""
    n = np.shape(z)[axis]
    return z[crop_index(np.ndim(z), axis, n // 2 + 1)] * hermitian_weights(np.ndim(z), axis, n)


# --------------------------------------------------------------------------- complex transforms

def fft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return (fitted(np.fft.fft(g, axis=axis, norm=norm), a, (axis,)),)


def fft_jvp(da, ans, a, n=None, axis=-1, norm=None, out=None):
    return (np.fft.fft(da, n, axis, norm),)


def ifft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return (fitted(np.fft.ifft(g, axis=axis, norm=norm), a, (axis,)),)


def ifft_jvp(da, ans, a, n=None, axis=-1, norm=None, out=None):
    return (np.fft.ifft(da, n, axis, norm),)


def fft2_vjp(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return (fitted(np.fft.fft2(g, axes=axes, norm=norm), a, transform_axes(a, s, axes)),)


def fft2_jvp(da, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return (np.fft.fft2(da, s, axes, norm),)


def ifft2_vjp(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return (fitted(np.fft.ifft2(g, axes=axes, norm=norm), a, transform_axes(a, s, axes)),)


def ifft2_jvp(da, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return (np.fft.ifft2(da, s, axes, norm),)


def fftn_vjp(g, ans, a, s=None, axes=None, norm=None, out=None):
    axes = transform_axes(a, s, axes)
    return (fitted(np.fft.fftn(g, axes=axes, norm=norm), a, axes),)


def fftn_jvp(da, ans, a, s=None, axes=None, norm=None, out=None):
    return (np.fft.fftn(da, s, axes, norm),)


def ifftn_vjp(g, ans, a, s=None, axes=None, norm=None, out=None):
    axes = transform_axes(a, s, axes)
    return (fitted(np.fft.ifftn(g, axes=axes, norm=norm), a, axes),)


def ifftn_jvp(da, ans, a, s=None, axes=None, norm=None, out=None):
    return (np.fft.ifftn(da, s, axes, norm),)


# --------------------------------------------------------------------------- real transforms

def real_spectrum_adjoint(g, a, s, axes, norm):
    """Cotangent of ``a`` from that of ``rfftn(a, s, axes, norm)``: the real part of the fft
    of ``g`` zero-padded to the transform's lengths."""
    axes = transform_axes(a, s, axes)
    lengths = transform_lengths(a, s, axes)
    return fitted(np.real(np.fft.fftn(g, s=lengths, axes=axes, norm=norm)), a, axes)


def real_signal_adjoint(g, a, s, axes, norm):
    """Cotangent of ``a`` from that of ``irfftn(a, s, axes, norm)`` (``g`` is real and has the
    output's lengths)."""
    axes = transform_axes(a, s, axes)
    spectrum = half_spectrum(np.fft.ifftn(g, axes=axes, norm=norm), axes[-1])
    return fitted(spectrum, a, axes)


def rfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return (real_spectrum_adjoint(g, a, one_length(n), (axis,), norm),)


def rfft_jvp(da, ans, a, n=None, axis=-1, norm=None, out=None):
    return (np.fft.rfft(da, n, axis, norm),)


def irfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return (real_signal_adjoint(g, a, one_length(n), (axis,), norm),)


def irfft_jvp(da, ans, a, n=None, axis=-1, norm=None, out=None):
    return (np.fft.irfft(da, n, axis, norm),)


def rfft2_vjp(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return (real_spectrum_adjoint(g, a, s, axes, norm),)


def rfft2_jvp(da, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return (np.fft.rfft2(da, s, axes, norm),)


def irfft2_vjp(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return (real_signal_adjoint(g, a, s, axes, norm),)


def irfft2_jvp(da, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return (np.fft.irfft2(da, s, axes, norm),)


def rfftn_vjp(g, ans, a, s=None, axes=None, norm=None, out=None):
    return (real_spectrum_adjoint(g, a, s, axes, norm),)


def rfftn_jvp(da, ans, a, s=None, axes=None, norm=None, out=None):
    return (np.fft.rfftn(da, s, axes, norm),)


def irfftn_vjp(g, ans, a, s=None, axes=None, norm=None, out=None):
    return (real_signal_adjoint(g, a, s, axes, norm),)


def irfftn_jvp(da, ans, a, s=None, axes=None, norm=None, out=None):
    return (np.fft.irfftn(da, s, axes, norm),)


def hfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    # hfft(a) is irfft(conj(a)) with the other scaling
    return (np.conj(real_signal_adjoint(g, np.conj(a), one_length(n), (axis,),
                                        swapped_norm(norm))),)


def hfft_jvp(da, ans, a, n=None, axis=-1, norm=None, out=None):
    return (np.fft.hfft(da, n, axis, norm),)


def ihfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    # ihfft(a) is conj(rfft(a)) with the other scaling
    return (real_spectrum_adjoint(np.conj(g), a, one_length(n), (axis,), swapped_norm(norm)),)


def ihfft_jvp(da, ans, a, n=None, axis=-1, norm=None, out=None):
    return (np.fft.ihfft(da, n, axis, norm),)


def fftshift_vjp(g, ans, x, axes=None):
    return (np.fft.ifftshift(g, axes),)


def ifftshift_vjp(g, ans, x, axes=None):
    return (np.fft.fftshift(g, axes),)


# --------------------------------------------------------------------------- domains

def _signals(rng, shapes_and_kwargs, kind="mixed"):
    """Points of complex (and, unless ``kind`` is 'real' or 'complex', real) signals."""
    points = []
    for shape, kwargs in shapes_and_kwargs:
        if kind != "real":
            points.append(((complex_draw(rng, shape),), kwargs))
        if kind != "complex":
            points.append(((draw(rng, shape),), kwargs))
    return points


_ONE_DIM = [((5,), {}), ((6,), {"n": 4}), ((5,), {"n": 8}), ((4, 3), {"axis": 0}),
            ((2, 5), {"norm": "ortho"}), ((3, 4), {"n": 3, "axis": -1, "norm": "forward"}),
            ((4,), {"norm": "backward"})]
_TWO_DIM = [((3, 4), {}), ((2, 3, 4), {"s": (2, 5), "axes": (0, 2)}),
            ((3, 4), {"norm": "ortho"}), ((4, 3), {"s": (5, 2), "norm": "forward"})]
_N_DIM = [((2, 3, 4), {}), ((2, 3, 4), {"s": (4, 2), "axes": (1, 2)}),
          ((2, 3, 4), {"axes": (0, 2)}), ((3, 4), {"axes": (1,), "norm": "ortho"}),
          ((2, 3, 3), {"s": (3, 5), "axes": (2, 0), "norm": "forward"})]
# irfft's output length n against its input's m = n // 2 + 1 entries: even, odd, cut, padded
_INVERSE_REAL = [((4,), {}), ((4,), {"n": 7}), ((4,), {"n": 5}), ((5,), {"n": 4}),
                 ((3,), {"n": 10}), ((4, 3), {"axis": 0}), ((2, 4), {"norm": "ortho"}),
                 ((2, 5), {"n": 9, "norm": "forward"})]
_INVERSE_REAL_N_DIM = [((3, 4), {}), ((2, 3, 4), {"s": (3, 5), "axes": (1, 2)}),
                       ((3, 4, 2), {"axes": (0, 1)}),
                       ((3, 3), {"s": (4, 4), "axes": (0, 1), "norm": "ortho"}),
                       ((2, 3, 3), {"axes": (2, 0), "norm": "forward"})]
_INVERSE_REAL_TWO_DIM = [((3, 4), {}), ((2, 3, 4), {"s": (2, 5), "axes": (0, 2)}),
                         ((3, 3), {"norm": "ortho"})]


def _points(cases, kind="mixed"):
    def domain(rng):
        return _signals(rng, cases, kind)
    return domain


def _shift_points(rng):
    return [((draw(rng, (5,)),), {}), ((complex_draw(rng, (3, 4)),), {}),
            ((draw(rng, (3, 4)),), {"axes": 0}), ((draw(rng, (2, 3, 4)),), {"axes": (0, 2)})]


# --------------------------------------------------------------------------- registration

for _fn, _vjp, _jvp, _cases, _kind in [
        (np.fft.fft, fft_vjp, fft_jvp, _ONE_DIM, "mixed"),
        (np.fft.ifft, ifft_vjp, ifft_jvp, _ONE_DIM, "mixed"),
        (np.fft.fft2, fft2_vjp, fft2_jvp, _TWO_DIM, "mixed"),
        (np.fft.ifft2, ifft2_vjp, ifft2_jvp, _TWO_DIM, "mixed"),
        (np.fft.fftn, fftn_vjp, fftn_jvp, _N_DIM, "mixed"),
        (np.fft.ifftn, ifftn_vjp, ifftn_jvp, _N_DIM, "mixed"),
        (np.fft.rfft, rfft_vjp, rfft_jvp, _ONE_DIM, "real"),
        (np.fft.rfft2, rfft2_vjp, rfft2_jvp, _TWO_DIM, "real"),
        (np.fft.rfftn, rfftn_vjp, rfftn_jvp, _N_DIM, "real"),
        (np.fft.irfft, irfft_vjp, irfft_jvp, _INVERSE_REAL, "mixed"),
        (np.fft.irfft2, irfft2_vjp, irfft2_jvp, _INVERSE_REAL_TWO_DIM, "mixed"),
        (np.fft.irfftn, irfftn_vjp, irfftn_jvp, _INVERSE_REAL_N_DIM, "mixed"),
        (np.fft.hfft, hfft_vjp, hfft_jvp, _INVERSE_REAL, "mixed"),
        (np.fft.ihfft, ihfft_vjp, ihfft_jvp, _ONE_DIM, "real")]:
    defrule(_fn, _vjp, jvp=_jvp, domain=_points(_cases, _kind), linear=True,
            name=f"numpy.fft.{_fn.__name__}")
deflinear(np.fft.fftshift, fftshift_vjp, _shift_points, name="numpy.fft.fftshift")
deflinear(np.fft.ifftshift, ifftshift_vjp, _shift_points, name="numpy.fft.ifftshift")
del _fn, _vjp, _jvp, _cases, _kind
