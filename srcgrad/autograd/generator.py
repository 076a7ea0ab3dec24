"""Random draws that reproduce PyTorch's CPU generator, so seeded tutorials print the same.

PyTorch's CPU generator is a 32-bit Mersenne Twister seeded with ``seed mod 2**32``. On top
of it:

* uniform floats take the low 24 bits of one draw (float32) or the low 53 bits of two draws
  joined high-first (float64), scaled by 2**-24 or 2**-53;
* normals of fewer than 16 elements come one at a time from Box-Muller on two float64
  uniforms, ``sqrt(-2 log1p(-u2))`` times ``cos(2 pi u1)``, the ``sin`` twin being kept for the
  next normal draw;
* normals of 16 elements or more are filled in blocks of 16 from float uniforms (the last
  block redrawn when the size is not a multiple of 16);
* integers in ``[low, high)`` are ``draw mod (high - low) + low``.

numpy's ``MT19937`` bit generator supplies the raw 32-bit draws once given the same state.
Draws of fewer than 16 normals, uniform draws and integers are bit-identical to PyTorch's;
blocks of 16 or more float32 normals agree to a few ulps (PyTorch evaluates them with
vectorized approximations of log, sin and cos).

Deliberate difference: without ``manual_seed``, PyTorch starts from a seed that changes from
process to process; srcgrad starts from 67280421310721 (PyTorch's historical default), so
unseeded runs are reproducible.
"""
from __future__ import annotations

__all__ = ["Generator", "DEFAULT_SEED", "default_generator"]

import math

import numpy as np

DEFAULT_SEED = 67280421310721
_MASK32 = 0xFFFFFFFF
_U64 = np.uint64


def _mt19937(seed: int) -> np.random.MT19937:
    """numpy's MT19937 in the state ``std::mt19937(seed)`` starts from."""
    x = seed & _MASK32
    key = np.empty(624, dtype=np.uint32)
    key[0] = x
    for i in range(1, 624):
        x = (1812433253 * (x ^ (x >> 30)) + i) & _MASK32
        key[i] = x
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
    return bits


class Generator:
    """Source of random draws (``torch.Generator``); ``manual_seed`` makes them reproducible."""

    def __init__(self, device: object = "cpu"):
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed)
        self._bits = _mt19937(self._seed)
        self._next_normal: float | None = None
        return self

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Reseed from fresh entropy; returns the new seed."""
        self.manual_seed(int(np.random.SeedSequence().entropy) % (2 ** 63))
        return self._seed

    # ------------------------------------------------------------------ raw bits

    def _draws32(self, n: int) -> np.ndarray:
        return self._bits.random_raw(n).astype(_U64)

    def _draws64(self, n: int) -> np.ndarray:
        pairs = self._draws32(2 * n)
        return (pairs[0::2] << _U64(32)) | pairs[1::2]

    # ------------------------------------------------------------------ distributions

    def uniform(self, n: int, dtype: np.dtype) -> np.ndarray:
        """``n`` uniform draws in [0, 1) as PyTorch makes them for ``dtype``."""
        if np.dtype(dtype) == np.float64:
            bits, scale = self._draws64(n) & _U64((1 << 53) - 1), 2.0 ** -53
        else:
            bits, scale = self._draws32(n) & _U64((1 << 24) - 1), 2.0 ** -24
        return (bits.astype(np.float64) * scale).astype(dtype)

    def normal(self, n: int, dtype: np.dtype) -> np.ndarray:
        """``n`` standard normal draws of ``dtype``."""
        dtype = np.dtype(dtype)
        if n < 16:
            return np.array([self._normal_one() for _ in range(n)], dtype=np.float64) \
                .astype(dtype)
        work = np.float32 if dtype != np.float64 else np.float64
        data = self.uniform(n, work)
        whole = n - n % 16
        _box_muller_16(data[:whole].reshape(-1, 16))
        if n % 16:
            data[n - 16:] = self.uniform(16, work)
            _box_muller_16(data[n - 16:].reshape(1, 16))
        return data.astype(dtype)

    def integers(self, low: int, high: int, n: int) -> np.ndarray:
        span = high - low
        if span <= 0:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={low} >= to={high}")
        draws = self._draws64(n) if span >= 1 << 32 else self._draws32(n)
        return ((draws % _U64(span)).astype(np.int64) + low).astype(np.int64)

    def _normal_one(self) -> float:
        if self._next_normal is not None:
            value, self._next_normal = self._next_normal, None
            return value
        u1, u2 = (float(u) for u in self.uniform(2, np.float64))
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self._next_normal = radius * math.sin(theta)
        return radius * math.cos(theta)


def _box_muller_16(blocks: np.ndarray) -> None:
    """Turn rows of 16 uniforms into normals in place: columns (j, j + 8) are a pair."""
    if blocks.dtype == np.float64:
        # The C library's log, sin and cos, as PyTorch calls them for doubles.
        for row in blocks:
            for j in range(8):
                radius = math.sqrt(-2.0 * math.log(1.0 - float(row[j])))
                theta = 2.0 * math.pi * float(row[j + 8])
                row[j], row[j + 8] = radius * math.cos(theta), radius * math.sin(theta)
        return
    kind = blocks.dtype.type
    radius = np.sqrt(kind(-2) * np.log(kind(1) - blocks[:, :8]))
    theta = kind(2.0 * math.pi) * blocks[:, 8:]
    blocks[:, :8] = radius * np.cos(theta)
    blocks[:, 8:] = radius * np.sin(theta)


default_generator = Generator()
"""The generator of ``torch.rand``, ``torch.randn``, ``Tensor.uniform_``... (``manual_seed``)."""
