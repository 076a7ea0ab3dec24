"""Elementwise ``tanh``, ``exp``, ``log``, ``sin`` and ``cos`` of float64 arrays in compiled
sweeps, four elements per call of glibc's SIMD math library (libmvec).

numba computes ``np.tanh(a)`` of an array with one scalar libm call per element (its
llvmlite is built without a vector math library), about 4x slower than numpy's SIMD loops:
array-heavy gradients (an RNN's ``tanh``) were slower compiled than interpreted.
``simd_math`` (sweeps) rewrites ``np.tanh(a)`` in the compiled text into ``_rt.tanh(a)``;
its overload here calls libmvec's AVX2 function (``_ZGVdN4v_tanh``: four doubles in one
``ymm`` register) on blocks of four elements, the last block padded, so an element's
result does not depend on its position. libmvec's functions are accurate to 4 ulp (as
numpy's SIMD loops are to theirs); ``tests/test_jit_simd.py`` checks each against
``math`` and numpy, special values included.

Used only where it is certain to be called correctly: x86-64 with AVX2 enabled in numba's
code generation (the vector is passed in a ``ymm`` register only then) and a libmvec that
has the function (glibc >= 2.35 for ``tanh``). Anywhere else, and for any argument that is
not a float64 array of rank >= 1, the overload is numba's own ``np.<name>``, as before.
"""
from __future__ import annotations

__all__ = ["FUNCTIONS", "LANES", "available"]

import ctypes
import ctypes.util

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

LANES = 4  # doubles per libmvec call (the AVX2 variant, "d")
FUNCTIONS = ("tanh", "exp", "log", "sin", "cos")
"""numpy functions of one array that a compiled sweep computes here."""


def _symbol(name: str) -> str:
    return f"_ZGVdN{LANES}v_{name}"  # (the x86-64 vector ABI's mangled name)


def _numba_has_avx2() -> bool:
    """Whether numba's code generation targets AVX2 (a 4-double vector argument then goes
    in a ymm register, as libmvec's "d" functions take it)."""
    import llvmlite.binding as ll
    if not ll.get_process_triple().startswith("x86_64"):
        return False
    try:
        from numba.core.registry import cpu_target
        features = cpu_target.target_context.codegen()._tm_features
    except Exception:  # noqa: BLE001 (numba internals moved: no SIMD path)
        return False
    enabled = {f[1:] for f in str(features).split(",") if f.startswith("+")}
    return {"avx", "avx2"} <= enabled


def _load() -> frozenset:
    """The names of FUNCTIONS whose libmvec symbol is registered with LLVM; empty when
    libmvec or AVX2 is missing."""
    path = ctypes.util.find_library("mvec")
    if path is None or not _numba_has_avx2():
        return frozenset()
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return frozenset()
    import llvmlite.binding as ll
    found = set()
    for name in FUNCTIONS:
        address = getattr(lib, _symbol(name), None)
        if address is not None:
            ll.add_symbol(_symbol(name), ctypes.cast(address, ctypes.c_void_p).value)
            found.add(name)
    return frozenset(found)


_AVAILABLE: frozenset | None = None


def available() -> frozenset:
    """The functions computed with libmvec here (checked once, on first use)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        _AVAILABLE = _load()
    return _AVAILABLE


def _loop_intrinsic(name: str):
    """``loop(src, dst)``: ``dst.flat[i] = name(src.flat[i])`` for every element, four per
    libmvec call, the last partial block through a buffer padded with 0.5 (in every
    function's domain); ``src`` and ``dst`` C-contiguous float64 arrays of one size. One
    intrinsic, so that numba types and lowers no array code of its own here (the shape
    checks of slices and reshapes compile their error messages: a second per call site)."""
    symbol = _symbol(name)

    @intrinsic
    def loop(typingctx, src, dst):
        def codegen(context, builder, signature, args):
            double = ir.DoubleType()
            vector = ir.VectorType(double, LANES)
            fn = cgutils.get_or_insert_function(builder.module,
                                                ir.FunctionType(vector, [vector]), symbol)
            a, b = (context.make_array(t)(context, builder, v)
                    for t, v in zip(signature.args, args))
            n = a.nitems
            lanes = ir.Constant(n.type, LANES)
            whole = builder.sub(n, builder.srem(n, lanes))

            def call(load_from, store_to):
                value = builder.load(builder.bitcast(load_from, vector.as_pointer()), align=1)
                builder.store(builder.call(fn, [value]),
                              builder.bitcast(store_to, vector.as_pointer()), align=1)

            with cgutils.for_range_slice(builder, ir.Constant(n.type, 0), whole, lanes,
                                         n.type) as (k, _):
                call(builder.gep(a.data, [k]), builder.gep(b.data, [k]))
            rest = builder.sub(n, whole)
            with builder.if_then(builder.icmp_signed(">", rest, ir.Constant(n.type, 0))):
                pad = cgutils.alloca_once(builder, vector)
                builder.store(ir.Constant(vector, [0.5] * LANES), pad)
                lane = builder.bitcast(pad, double.as_pointer())
                with cgutils.for_range(builder, rest) as j:
                    builder.store(builder.load(builder.gep(a.data, [builder.add(whole,
                                                                                 j.index)])),
                                  builder.gep(lane, [j.index]))
                call(pad, pad)
                with cgutils.for_range(builder, rest) as j:
                    builder.store(builder.load(builder.gep(lane, [j.index])),
                                  builder.gep(b.data, [builder.add(whole, j.index)]))
            return context.get_dummy_value()
        return types.void(src, dst), codegen
    return loop


def make_stub(name: str):
    def stub(x):
        raise RuntimeError(f"srcgrad.jit.runtime.{name} runs only inside compiled sweeps")
    stub.__name__ = stub.__qualname__ = name
    return stub


def _simd_array(loop, contiguous: bool):
    """The compiled ``name(x)`` of a float64 array of rank >= 1 (C-contiguous result)."""
    if contiguous:
        def apply_c(x):
            out = np.empty(x.shape, np.float64)
            loop(x, out)
            return out
        return apply_c

    def apply(x):
        src = np.ascontiguousarray(x)
        out = np.empty(x.shape, np.float64)
        loop(src, out)
        return out
    return apply


def _register(name: str):
    stub = make_stub(name)
    numpy_fn = getattr(np, name)
    loop = _loop_intrinsic(name)

    @overload(stub)
    def _impl(x):
        if name in available() and isinstance(x, types.Array) and x.ndim >= 1 \
                and x.dtype == types.float64:
            return _simd_array(loop, x.layout == "C")
        return lambda x: numpy_fn(x)  # (numba's own, as without the rewrite)
    return stub


tanh, exp, log, sin, cos = (_register(name) for name in FUNCTIONS)
