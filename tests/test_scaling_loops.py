"""grad's backward loops that only scale an adjoint by a number (transforms/scaling_loops.py,
runtime.scaled_repeatedly): one product by ``c ** n`` where that is safe, the loop itself
elsewhere; and every other loop shape still replayed as before."""
import math
import os
import sys
import textwrap

import gast
import numpy as np
import pytest
from fdcheck import check_grad, check_orders

import srcgrad
from srcgrad import runtime
from srcgrad.api import get_entry_adjoint, get_lean_adjoint
from srcgrad.codegen import comment, to_source
from srcgrad.transforms.scaling_loops import collapse_scaling_loops

# the while loop of benchmarks/bench_memory.py, its hand-written gradient, and how that
# benchmark measures peak memory
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from bench_grad import _WEIGHTS as _W, doubling, doubling_by_hand  # noqa: E402
from bench_memory import peak_bytes  # noqa: E402


def _collapsed(src: str) -> str:
    body = collapse_scaling_loops(gast.parse(textwrap.dedent(src)).body, "_rt")
    return to_source(gast.Module(body=body, type_ignores=[])).strip()


# -- the pass ---------------------------------------------------------------------------------

def test_a_loop_scaling_one_adjoint_by_a_literal_becomes_one_call():
    assert _collapsed("""
        for _k1 in range(_n1):
            by = by * 2
        for _k2 in range(3):
            bz = 0.5 * bz
    """) == "by = _rt.scaled_repeatedly(by, 2, _n1)\nbz = _rt.scaled_repeatedly(bz, 0.5, 3)"


def test_nested_loops_and_branches_are_searched():
    out = _collapsed("""
        for _k1 in range(_n1):
            _n2 = _tape.pop()
            for _k2 in range(_n2):
                by = by * 3.0
        if c:
            for _k3 in range(n):
                by = by * 2
    """)
    assert "for _k2" not in out and "for _k3" not in out and "for _k1 in range(_n1)" in out
    assert "by = _rt.scaled_repeatedly(by, 3.0, _n2)" in out
    assert "by = _rt.scaled_repeatedly(by, 2, n)" in out


@pytest.mark.parametrize("src", [
    "for _k1 in range(n):\n    by = by * by",  # not a number
    "for _k1 in range(n):\n    by = by * w",  # a name: may change, or not be a number
    "for _k1 in range(n):\n    by = by * 2j",  # (complex: left alone)
    "for _k1 in range(n):\n    by = by * True",
    "for _k1 in range(n):\n    by = bz * 2",  # another adjoint
    "for _k1 in range(n):\n    by = by + 2",
    "for _k1 in range(n):\n    by = by * _k1",  # reads the index
    "for _k1 in range(n):\n    by = by * 2\n    bz = bz * 2",  # two statements
    "for _k1 in range(n):\n    y = _tape.pop()\n    by = by * 2",
    "for _k1 in range(n):\n    by = by * 2\nelse:\n    pass",
    "for _k1 in range(n, m):\n    by = by * 2",
    "for _k1 in range(len(xs)):\n    by = by * 2",
    "for _k1 in xs:\n    by = by * 2",
    "for _k1 in range(by):\n    by = by * 2",
    "for _k1 in range(n):\n    by = by * 2\nprint(_k1)",  # the index read afterwards
    "while c:\n    by = by * 2",
])
def test_other_loops_stay(src):
    assert _collapsed(src) == to_source(gast.parse(src)).strip()


def test_comments_of_the_body_are_kept():
    loop = gast.parse("for _k1 in range(n):\n    by = by * 2").body[0]
    loop.body.insert(0, comment("f.py:3  y = y * 2"))
    out = to_source(gast.Module(body=collapse_scaling_loops([loop], "_rt"), type_ignores=[]))
    assert out.strip().splitlines() == ["# f.py:3  y = y * 2",
                                        "by = _rt.scaled_repeatedly(by, 2, n)"]


# -- the runtime helper -----------------------------------------------------------------------

def _looped(g, c, n):
    for _ in range(n):
        g = g * c
    return g


def test_scaled_repeatedly_is_the_loop():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(5)
    for g in (a, a[::2], a + 1j * a, 1.5, -2.5 + 1j, np.float64(0.25), np.complex128(1j),
              np.array(3.0), 0.0, -0.0):
        for c in (2, 0.5, -3, 0.9999, 1, -1.0):
            for n in (0, 1, 2, 7, 300):
                got, want = runtime.scaled_repeatedly(g, c, n), _looped(g, c, n)
                assert type(got) is type(want) and np.shape(got) == np.shape(want)
                assert np.asarray(got).dtype == np.asarray(want).dtype
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
                if c in (2, 0.5, 1, -1.0) or n < 2:  # (exact products)
                    assert np.array_equal(got, want)
    g = np.ones(3)
    assert runtime.scaled_repeatedly(g, 2, 0) is g  # (no copy, as the loop)
    assert type(runtime.scaled_repeatedly(1.5, 2, np.int64(3))) is float


def test_scaled_repeatedly_runs_the_loop_when_the_power_is_not_a_normal_float():
    assert runtime.scaled_repeatedly(1e-300, 10, 400) == pytest.approx(1e100, rel=1e-12)
    assert runtime.scaled_repeatedly(1e300, 0.1, 400) == pytest.approx(1e-100, rel=1e-12)
    big = runtime.scaled_repeatedly(np.array([1e-300, -1e-300]), 2, 1100)  # 2 ** 1100: inf
    assert big.tolist() == [math.ldexp(1e-300, 1100), -math.ldexp(1e-300, 1100)]
    assert runtime.scaled_repeatedly(np.array([3.0]), 0, 5).tolist() == [0.0]
    with np.errstate(over="ignore"):
        assert runtime.scaled_repeatedly(1.0, 10.0, 400) == np.inf


@pytest.mark.parametrize("g", [np.ones(3, np.float32), np.ones(2, np.float16), [1.0], 3,
                               np.ones(2, int), np.float32(1.5)])
def test_scaled_repeatedly_of_other_types_and_dtypes_is_the_loop_to_the_bit(g):
    for c in (2,) if isinstance(g, list) else (2, 0.9999):
        n = 3 if isinstance(g, list) else 50
        with np.errstate(over="ignore"):  # (float16)
            got, want = runtime.scaled_repeatedly(g, c, n), _looped(g, c, n)
        assert type(got) is type(want) and np.array_equal(got, want)
        assert np.asarray(got).dtype == np.asarray(want).dtype


# -- end to end: grad's sweeps, and the ordinary ones differentiated again ---------------------

def decaying(x, n):
    for i in range(n):
        x = 0.9 * x
    return np.sum(x * x)


def squaring(x):
    y = x
    while np.max(np.abs(y)) < 100:
        y = y * y + 1.0
    return np.sum(y)


def with_sin(x):
    y = x
    while np.sum(y) < 10:
        y = np.sin(y) + y * 2
    return np.sum(y)


def branching(x):
    y = x * 1.0
    while np.linalg.norm(y) < 50:
        if y[0] > 0:
            y = y * 2
        else:
            y = y * 3
    return np.sum(y * _W)


def breaking(x):
    y = x * 1.0
    k = 0
    while True:
        y = y * 2
        k = k + 1
        if np.linalg.norm(y) > 100 or k > 50:
            break
    return np.sum(y * _W)


def nested(x):
    y = x * 1.0
    for i in range(3):
        j = 0
        while j < i + 2:
            y = y * 1.5
            j = j + 1
        y = np.sin(y)
    return np.sum(y * _W)


def test_grad_of_the_doubling_loop_is_one_product():
    source = get_lean_adjoint(doubling, (0,), value=False).source
    assert "by = _rt.scaled_repeatedly(by, 2, _n1)" in source and "for _k" not in source
    x = np.array([0.3, -1.2, 0.5])
    k = 1
    while np.linalg.norm(x * 2 ** k) < 1000:
        k += 1
    assert np.array_equal(srcgrad.grad(doubling)(x), _W * 2.0 ** k)
    # (the ordinary sweeps, which are differentiated again, keep their loop)
    assert "for _k" in get_entry_adjoint(doubling, (0,)).source


@pytest.mark.parametrize("x", [np.array([0.3, -1.2, 0.5]), np.array([600.0, 1.0, 0.0]),
                               np.array([2000.0, 0.0, 0.0])])  # (runs 10, 1 and 0 times)
def test_doubling_any_number_of_times(x):
    want = get_entry_adjoint(doubling, (0,))
    value, saved = want.fwd(x)
    assert np.array_equal(srcgrad.grad(doubling)(x), want.bwd(saved, 1.0)[0])
    value, g = srcgrad.value_and_grad(doubling)(x)
    assert value == doubling(x) and np.array_equal(g, srcgrad.grad(doubling)(x))
    out, pullback = srcgrad.vjp(doubling, x)
    assert out == doubling(x) and np.array_equal(pullback(1.0)[0], g)


@pytest.mark.parametrize("n", [0, 1, 5, 40])
def test_a_for_loop_scaling_by_a_constant(n):
    x = np.array([0.7, -0.2])
    assert "scaled_repeatedly(bx, 0.9, " in get_lean_adjoint(decaying, (0,), value=False).source
    np.testing.assert_allclose(srcgrad.grad(decaying)(x, n), 2 * x * 0.81 ** n, rtol=1e-13)
    check_grad(decaying, (x, n))


def test_a_loop_that_breaks_or_sits_in_another_is_collapsed_too():
    # (a break ends the forward loop after the iteration that counted itself: n products)
    assert "by = _rt.scaled_repeatedly(by, 2, _n1)" in _lean(breaking)
    inner = _lean(nested)
    assert "by = _rt.scaled_repeatedly(by, 1.5, _n2)" in inner and "by * np.cos(y)" in inner
    assert "scaled_repeatedly" not in _lean(branching)  # (a branch in the body: a loop)


def _lean(f) -> str:
    return get_lean_adjoint(f, (0,), value=False).source


@pytest.mark.parametrize("f", [squaring, with_sin, branching, breaking, nested])
def test_other_loop_bodies_replay_as_before(f):
    x = np.array([0.3, -0.6, 0.8])
    check_grad(f, (x,))
    want = get_entry_adjoint(f, (0,))
    value, saved = want.fwd(x)
    np.testing.assert_allclose(srcgrad.grad(f)(x), want.bwd(saved, 1.0)[0], rtol=1e-13)


@pytest.mark.parametrize("f", [doubling, branching, nested])
def test_second_order_through_the_loop(f):
    x = np.array([0.3, -0.6, 0.8])
    check_orders(f, x, hessian=True)
    g2 = srcgrad.grad(lambda x: np.sum(srcgrad.grad(f)(x) * x))(x)
    np.testing.assert_allclose(g2, srcgrad.grad(f)(x) + srcgrad.hvp(f, (x,), (x,)),
                               rtol=1e-8, atol=1e-8)


# -- what the while loop's gradient keeps alive -------------------------------------------------

def test_the_seed_is_let_go_after_its_last_use():
    lean = get_lean_adjoint(doubling, (0,), value=False).source
    # (grad makes the seed in the call and holds it not; scalar_seed.py keeps it a number)
    assert "_rt.seed_scalar(b_t3, _t2, _WEIGHTS)\n    del b_t3\n" in lean
    ordinary = get_entry_adjoint(doubling, (0,)).source.splitlines()
    assert not any("b_t3" in line for line in ordinary if line.strip().startswith("del "))


def test_the_while_loops_gradient_keeps_no_more_than_by_hand():
    # the value (np.sum's reduction: ~1 kB of temporaries), the seed, its spread view and
    # the last y kept for its shape each came on top of the loop's own two arrays
    x = np.array([0.3, -1.2, 0.5])
    assert peak_bytes(srcgrad.grad(doubling), (x,)) <= 1.15 * peak_bytes(doubling_by_hand, (x,))
