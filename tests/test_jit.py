"""Compiled gradients (srcgrad.grad(f, jit=True)): every supported construct against the
interpreted gradient and finite differences; refusals located at the user's line.

Compiled gradients are made once per module (numba's compile time dominates these tests).
"""
import math
import types
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.errors import SrcgradError, UnsupportedFeatureError  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

from fdcheck import check_grad  # noqa: E402


# -- user-style functions ----------------------------------------------------------------

def euler(x):
    for i in range(200):
        x = x + 0.01 * math.sin(x)
    return x


def damped(x, k):
    v = 0.0
    t = 0
    while x > 0.1 and t < 500:  # data-dependent trip count
        v = v - k * x * 0.01
        x = x + v * 0.01
        t = t + 1
    return x * x + v


def kink(a, b):
    return a * math.exp(b) - b


def branches(x, y):
    z = 0.0
    for i in range(8):
        if x > 0.3:
            z = z + kink(x, y)  # a user helper: compiled too
        elif x > 0.1:
            z = z - x * y
        else:
            z = z + math.cos(x)
        x = x * 0.8
    return z


def elementwise(x):
    return np.sum(np.sin(x) * x + np.exp(-x) / (1.0 + x * x))


def broadcasting(x, y):
    return np.sum(np.tanh(x[:, None] * y + y)) + np.mean(x ** 2)


def doubling(y):
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y)


def mlp(W1, b1, W2, b2, x):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean(out ** 2)


def rnn(W, U, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U)
    return np.sum(h)


def pick(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * x[i] * (i + 1)
    return s


def springs(pos, vel, k):
    # particles on springs, stepped until the first one passes x = 2: a data-dependent stop
    t = 0
    while pos[0] < 2.0 and t < 10000:
        acc = 0.5 - k * pos
        vel = vel + 0.01 * acc
        pos = pos + 0.01 * vel
        t = t + 1
    return np.sum(pos ** 2) + np.sum(vel)


@numba.njit
def njit_step(x):
    for i in range(50):
        x = x - 0.1 * math.tanh(x)
    return x * x


RNG = np.random.default_rng(0)
ARRAYS = {
    "x5": RNG.uniform(0.1, 1.0, 5),
    "y3": RNG.uniform(-1.0, 1.0, 3),
    "W1": RNG.standard_normal((3, 4)) * 0.5, "b1": RNG.standard_normal(4),
    "W2": RNG.standard_normal((4, 2)) * 0.5, "b2": RNG.standard_normal(2),
    "X": RNG.standard_normal((6, 3)),
    "W": RNG.standard_normal((4, 4)) * 0.3, "U": RNG.standard_normal((2, 4)) * 0.3,
    "xs": RNG.standard_normal((5, 2)), "h0": RNG.standard_normal(4) * 0.1,
}
A = ARRAYS

CASES = {
    "euler": (euler, (0.7,), (0,)),
    "damped": (damped, (1.5, 2.0), (0, 1)),
    "branches": (branches, (0.9, 0.4), (0, 1)),
    "elementwise": (elementwise, (A["x5"],), (0,)),
    "broadcasting": (broadcasting, (A["x5"], A["y3"]), (0, 1)),
    "doubling": (doubling, (A["y3"],), (0,)),
    "mlp": (mlp, (A["W1"], A["b1"], A["W2"], A["b2"], A["X"]), (0, 1, 2, 3)),
    "rnn": (rnn, (A["W"], A["U"], A["xs"], A["h0"]), (0, 1, 3)),
    "pick": (pick, (A["x5"],), (0,)),
    "springs": (springs, (np.linspace(0.0, 1.0, 4), np.zeros(4), 1.5), (0, 1, 2)),
}


@pytest.fixture(scope="module")
def compiled():
    """One compiled gradient per case, shared by the tests of this module."""
    return {name: srcgrad.grad(f, wrt=wrt, jit=True) for name, (f, args, wrt) in CASES.items()}


def _as_tuple(g):
    return g if isinstance(g, tuple) else (g,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_interpreted_and_finite_differences(compiled, name):
    f, args, wrt = CASES[name]
    got = _as_tuple(compiled[name](*args))
    want = _as_tuple(srcgrad.grad(f, wrt=wrt)(*args))
    assert len(got) == len(want)
    for g, w, i in zip(got, want, wrt):
        assert np.shape(g) == np.shape(args[i])
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    check_grad(f, args, wrt=wrt, grads=got, rtol=1e-5)


def test_data_dependent_trip_counts_recompute(compiled):
    # other trip counts through the same compiled code: stacks are sized at run time
    g = compiled["damped"]
    for x0 in (0.5, 3.0):
        want = srcgrad.grad(damped, wrt=(0, 1))(x0, 2.0)
        np.testing.assert_allclose(g(x0, 2.0), want, rtol=1e-10)
    y = A["y3"] * 1e-3
    (got,) = compiled["doubling"](y)  # (wrt=(0,): a tuple of one gradient)
    np.testing.assert_allclose(got, srcgrad.grad(doubling)(y))


def test_uses_compiled_code(compiled):
    compiled["euler"](0.3)
    text = srcgrad.source(compiled["euler"])
    assert "def euler_grad(x):" in text
    # (x, a float parameter, pushed once per iteration of a loop of known trip count: its
    # tape is a float64 array of that size)
    assert "_stack_x = _rt.float_tape(_n1)" in text and "x = _stack_x[_pos_x]" in text
    assert "_rt.Tape" not in text and "# backward sweep" in text


def test_value_and_grad_and_elementwise():
    vg = srcgrad.value_and_grad(euler, jit=True)
    value, g = vg(0.7)
    assert value == pytest.approx(euler(0.7), rel=1e-12)
    assert g == pytest.approx(srcgrad.grad(euler)(0.7), rel=1e-12)

    def square_sin(x):
        return np.sin(x) * x

    eg = srcgrad.elementwise_grad(square_sin, jit=True)
    x = A["x5"]
    np.testing.assert_allclose(eg(x), np.cos(x) * x + np.sin(x), rtol=1e-12)


def test_njit_function_is_differentiable():
    interpreted = srcgrad.grad(njit_step)(0.8)
    compiled = srcgrad.grad(njit_step, jit=True)(0.8)
    assert compiled == pytest.approx(interpreted, rel=1e-12)
    check_grad(njit_step.py_func, (0.8,), grads=(compiled,))


def test_array_gradient_of_scalar_closed_function_with_array_argument(compiled):
    # the scalar specialization is chosen per call: an array argument takes the general code
    def poly(x):
        return np.sum(x * x * 3.0 + x)
    g = srcgrad.grad(poly, jit=True)
    np.testing.assert_allclose(g(A["x5"]), 6.0 * A["x5"] + 1.0)
    assert g(2.0) == pytest.approx(13.0)


# -- refusals ------------------------------------------------------------------------------

def uses_dict(x):
    d = {"a": x, "b": 2.0}
    return d["a"] * d["b"]


def mixed_types(x, flag):
    if flag > 0:
        y = x * 2.0
    else:
        y = np.ones(3) * x
    return np.sum(y)


def test_unsupported_construct_is_located():
    g = srcgrad.grad(uses_dict, jit=True)
    with pytest.raises(UnsupportedFeatureError) as info:
        g(1.5)
    message = str(info.value)
    assert "test_jit.py:" in message and "uses_dict" in message and "jit=False" in message


def test_numba_typing_error_is_translated_and_located():
    g = srcgrad.grad(mixed_types, jit=True)
    with pytest.raises(JitUnsupportedError) as info:
        g(1.5, 1)
    message = str(info.value)
    line = mixed_types.__code__.co_firstlineno
    assert any(f"test_jit.py:{line + k}" in message for k in range(1, 6)), message
    assert "'y'" in message and "one type per variable" in message
    assert isinstance(info.value, SrcgradError)


def test_auto_falls_back_with_a_warning():
    g = srcgrad.grad(uses_dict, jit="auto")
    with pytest.warns(RuntimeWarning, match="interpreted gradient"):
        assert g(1.5) == pytest.approx(2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the decision is remembered: no second warning
        assert g(2.5) == pytest.approx(2.0)


def test_closure_values_are_read_per_call():
    # closures made by one def share a build: each reads its own cells, on every call
    def make(scale, weights):
        def scaled(x):
            return np.sum(weights * x) * scale
        return scaled
    x = A["x5"]
    w = np.ones(5)
    g3 = srcgrad.grad(make(3.0, w), jit=True)
    g4 = srcgrad.grad(make(4.0, w), jit=True)
    np.testing.assert_allclose(g3(x), 3.0 * w)
    np.testing.assert_allclose(g4(x), 4.0 * w)
    w[1] = 10.0  # changed in place: seen by both
    np.testing.assert_allclose(g3(x), 3.0 * w)
    np.testing.assert_allclose(g4(x), 4.0 * w)


def test_bad_option():
    with pytest.raises(SrcgradError, match="jit= takes"):
        srcgrad.grad(euler, jit="yes")


def test_non_scalar_output_is_refused():
    with pytest.raises(SrcgradError, match="scalar"):
        srcgrad.grad(lambda x: x * 2.0, jit=True)(A["x5"])


def test_integer_input_gets_the_interpreted_error():
    with pytest.raises(SrcgradError):
        srcgrad.grad(euler, jit=True)(3)


def own_zero_named_like_an_adjoint(x):
    bx = 0.0  # a user variable named like the adjoint of x: stays a float
    for i in range(3):
        bx = bx + x[i]
    return bx * bx


def test_user_variable_named_like_an_adjoint():
    x = A["x5"]
    g = srcgrad.grad(own_zero_named_like_an_adjoint, jit=True)
    np.testing.assert_allclose(g(x), srcgrad.grad(own_zero_named_like_an_adjoint)(x),
                               rtol=1e-12)


def gather(x):
    return np.sum(x[np.array([0, 0, 3])] * 2.0) + x[1] * x[2] + np.sum(x[2:5] ** 2)


def test_repeated_fancy_indices_accumulate():
    # numpy's out[idx] += g drops repeats; the adjoint of x[idx] must add each one
    x = A["x5"]
    got = srcgrad.grad(gather, jit=True)(x)
    np.testing.assert_allclose(got, srcgrad.grad(gather)(x), rtol=1e-12)
    assert got[0] == pytest.approx(4.0)
    check_grad(gather, (x,), grads=(got,))


def uses_unsupported_rule_helper(x):
    return np.sum(np.transpose(x) @ x)


def test_rule_helper_without_compiled_form_is_located():
    x = A["X"]
    try:
        g = srcgrad.grad(uses_unsupported_rule_helper, jit=True)(x)
    except JitUnsupportedError as e:
        line = uses_unsupported_rule_helper.__code__.co_firstlineno + 1
        assert f"test_jit.py:{line}" in str(e)
    else:  # (compiled: then it must be right)
        np.testing.assert_allclose(g, srcgrad.grad(uses_unsupported_rule_helper)(x))


def _accumulate(x, n):
    s = 0.0
    for i in range(n):
        s = s + math.sin(x * i)
    return s


def calls_helper_with_loop(x):
    return _accumulate(x, 4) * x + abs(x - 0.5) + x ** 3


def loop_over_rows(x):
    total = 0.0
    for row in x:
        total = total + np.sum(row ** 2) * np.sum(np.abs(row))
    return total


def early_exit(x):
    for i in range(10):
        if x > 2.0:
            return x * i
        x = x * 1.3
    return -x


@pytest.mark.parametrize("f, args", [
    (calls_helper_with_loop, (0.7,)),
    (loop_over_rows, (A["X"],)),
    (early_exit, (0.5,)),
    (early_exit, (5.0,)),
])
def test_more_constructs(f, args):
    got = srcgrad.grad(f, jit=True)(*args)
    np.testing.assert_allclose(got, srcgrad.grad(f)(*args), rtol=1e-12)
    check_grad(f, args, grads=(got,))


def two_products(W, x):
    return np.sum(np.tanh(x @ W) * (x @ W))


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_matmul_adjoints_for_every_layout(layout):
    """The adjoints of ``@`` hand C- and Fortran-ordered operands to BLAS transposed, without
    a copy; strided ones are copied first."""
    rng = np.random.default_rng(4)
    W, x = rng.standard_normal((6, 4)), rng.standard_normal((5, 6))
    if layout == "F":
        W, x = np.asfortranarray(W), np.asfortranarray(x)
    elif layout == "strided":
        W, x = rng.standard_normal((6, 8))[:, ::2], rng.standard_normal((5, 12))[:, 1::2]
    got = srcgrad.grad(two_products, wrt=(0, 1), jit=True)(W, x)
    want = srcgrad.grad(two_products, wrt=(0, 1))(W, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    check_grad(two_products, (W, x), grads=got, wrt=(0, 1))


RATE = 0.5


def uses_global_rate(x):
    return x * x * RATE


def test_rebinding_a_global_recompiles():
    # numba freezes a global's value at compile time; Python reads it on every call
    global RATE
    g = srcgrad.grad(uses_global_rate, jit=True)
    assert g(2.0) == pytest.approx(2.0)
    RATE = 3.0
    try:
        assert g(2.0) == pytest.approx(12.0)
    finally:
        RATE = 0.5


# -- in-place updates checked against the other variables (refuse_shared_locals) --------------
# The interpreted sweeps check `y += ...` against the variables bound at that point, read from
# locals(), which numba lacks; compiled, the check names the variables an assignment may have
# bound before it (numba's zeroed value stands for one not bound yet: it shares nothing).

G3 = np.array([1.0, 2.0, 3.0])


def alias_made_in_the_loop(x):
    y = x * 2.0
    for i in range(2):
        y += 1.0                 # the second time, z is y: numpy would change z too
        z = y
    return np.sum(z * x)


def copy_made_in_the_loop(x):
    y = x * 2.0
    for i in range(2):
        y += 1.0
        z = y.copy()
    return np.sum(z * x)


def view_made_in_a_branch(x):
    y = x * 2.0
    v = x[1:]
    if x[0] > 0.0:
        v = y[:2]
    y += x
    return np.sum(y * x) + np.sum(v)  # (v read after: unread, it would see nothing)


def view_kept_in_a_tuple(x):
    y = x * 2.0
    kept = (y[1:], x)
    if x[0] > 0.0:
        kept = (x, x)  # (a tuple sharing nothing with y)
    y += x
    return np.sum(y * x) * len(kept)  # (kept read after the update)


def global_or_a_new_array(x):
    v = G3
    if x[0] > 0.0:
        v = x * 1.0
    v += x                       # numpy would change G3 when v is G3
    return np.sum(v * x)


def matrix_updated_in_place(m):
    y = np.eye(3)
    for i in range(2):
        y @= m
    return np.sum(y)


POSITIVE, NEGATIVE = np.array([0.5, 1.5, -0.7]), np.array([-0.5, 1.5, -0.7])


@pytest.mark.parametrize("fn, x, shared", [
    (alias_made_in_the_loop, POSITIVE, True),
    (copy_made_in_the_loop, POSITIVE, False),
    (view_made_in_a_branch, POSITIVE, True),
    (view_made_in_a_branch, NEGATIVE, False),
    (view_kept_in_a_tuple, NEGATIVE, True),
    (view_kept_in_a_tuple, POSITIVE, False),
    (global_or_a_new_array, NEGATIVE, True),
    (global_or_a_new_array, POSITIVE, False),
    (matrix_updated_in_place, np.arange(9.0).reshape(3, 3) / 10.0, False),
])
def test_in_place_updates_compile_and_refuse_shared_data_as_interpreted(fn, x, shared):
    interpreted, compiled = srcgrad.grad(fn), srcgrad.grad(fn, jit=True)
    if shared:
        with pytest.raises(srcgrad.UnsupportedSyntaxError, match="share|view") as want:
            interpreted(x.copy())
        with pytest.raises(srcgrad.UnsupportedSyntaxError) as got:
            compiled(x.copy())
        # (the same located message; the interpreted one adds where its generated code raised)
        assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
    else:
        np.testing.assert_allclose(compiled(x.copy()), interpreted(x.copy()), rtol=1e-12)
        check_grad(fn, (x,), grads=[compiled(x.copy())])
    np.testing.assert_array_equal(G3, [1.0, 2.0, 3.0])


def test_compiled_overlap_test_is_numpys_bounds_check():
    from srcgrad.jit.runtime import may_share as compiled_may_share
    may_share = numba.njit(lambda a, b: compiled_may_share(a, b))
    base = np.arange(60.0).reshape(6, 10)
    views = [base, base[1:3], base[:, 4:], base[::-1], base[::2, ::-3], base.T, base[5:, 9:],
             base[2:2], base[3, 1:], base[0, ::-1], base[4:, :2].T, np.arange(4.0)]
    for a in views:
        for b in views:
            assert may_share(a, b) == np.may_share_memory(a, b), (a.strides, b.strides)


@pytest.mark.parametrize("g_shape, x_shape", [
    ((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), (3, 1)), ((2, 3, 4), (3, 1)), ((5,), ())])
def test_compiled_unbroadcast_sums_in_c_order(g_shape, x_shape):
    from srcgrad.jit import runtime as jit_runtime
    unbroadcast = numba.njit(lambda g, x: jit_runtime.unbroadcast(g, x))
    g = np.random.default_rng(1).standard_normal((4, 5, 6))[:2, ::-1].T  # (strided)
    g = np.ascontiguousarray(g.ravel()[:int(np.prod(g_shape))].reshape(g_shape))
    for operand in (g, g[..., ::-1]):  # (C-ordered, strided)
        x = np.zeros(x_shape)
        want = np.zeros(x_shape)  # (each element the sum, in C order, of those broadcast)
        lead = operand.ndim - x.ndim
        for index in np.ndindex(*operand.shape):
            want[tuple(0 if n == 1 else i for i, n in zip(index[lead:], x_shape))] += \
                operand[index]
        got = unbroadcast(operand, x)
        assert got.shape == x.shape and got.flags.c_contiguous
        assert np.array_equal(got, want)  # (bit for bit)
        np.testing.assert_allclose(got, np.sum(operand, axis=tuple(range(lead)))
                                   .sum(axis=tuple(k for k, n in enumerate(x_shape) if n == 1),
                                        keepdims=True) if x_shape else np.sum(operand),
                                   rtol=1e-12)


def test_shared_locals_check_names_only_variables_that_may_be_bound():
    import ast
    from srcgrad.jit.sweeps import shared_locals_checks
    tree = ast.parse(
        "def f(x):\n"
        "    if c:\n        v = x\n"
        "    for i in r:\n"
        "        _rt.refuse_shared_locals(y, locals(), ('i', 'v', 'w', 'z'), (G,), 'm')\n"
        "        w = y\n"
        "    z = y\n"
        "    if (k := c):\n"
        "        _rt.refuse_shared_locals(y, locals(), ('k', 'u'), (), 'n')\n"
        "    else:\n        u = x\n")
    text = ast.unparse(shared_locals_checks(tree))
    assert "_rt.refuse_viewed(y, (i, v, w, G), 'm')" in text  # (z: bound only after)
    assert "_rt.refuse_viewed(y, (k,), 'n')" in text  # (u: bound in the other branch)
    assert "locals" not in text


# -- the whole corpus (opt-in: about 90 compiles) -----------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not __import__("os").environ.get("SRCGRAD_JIT_CORPUS"),
                    reason="set SRCGRAD_JIT_CORPUS=1 to compile the whole corpus (minutes)")
def test_corpus_compiled_or_refused_never_wrong():
    """Every corpus function: the compiled gradient equals the interpreted one, or the
    compilation is refused with a located JitUnsupportedError; never another outcome."""
    from corpus import CASES
    compiled = 0
    for case in CASES:
        if case.kwargs:
            continue
        try:
            want = srcgrad.grad(case.fn, wrt=case.wrt)(*case.args)
        except Exception:
            continue  # (the interpreted gradient's own errors are tested elsewhere)
        try:
            got = srcgrad.grad(case.fn, wrt=case.wrt, jit=True)(*case.args)
        except JitUnsupportedError as e:
            assert ".py:" in str(e) or "jit=False" in str(e), (case.id, str(e))
            continue
        for g, w in zip(got, want):
            assert np.shape(g) == np.shape(w), case.id
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=case.id)
        compiled += 1
    assert compiled >= 80


def _inner(x):
    return x * x


def calls_inner(x):
    return _inner(x) + x


def test_rebinding_a_called_helper_recompiles():
    global _inner
    g = srcgrad.grad(calls_inner, jit=True)
    assert g(3.0) == pytest.approx(7.0)
    original = _inner

    def cube(x):
        return x * x * x
    _inner = cube
    try:
        assert g(3.0) == pytest.approx(28.0)
    finally:
        _inner = original
    assert g(3.0) == pytest.approx(7.0)


def test_stacks_per_variable_only_when_pops_mirror_pushes():
    import ast
    from srcgrad.jit.sweeps import JitRewriteError, check_mirrored
    fwd = ast.parse("for i in r:\n    _tape.push(x)\n    x = f(x)\n    _tape.push(y)\n"
                    "_tape.push(_n1)").body
    good = ast.parse("_n1 = _tape.pop()\nfor k in range(_n1):\n    y = _tape.pop()\n"
                     "    x = _tape.pop()").body
    check_mirrored(fwd, good)
    swapped = ast.parse("_n1 = _tape.pop()\nfor k in range(_n1):\n    x = _tape.pop()\n"
                        "    y = _tape.pop()").body
    with pytest.raises(JitRewriteError):
        check_mirrored(fwd, swapped)
    outside = ast.parse("_n1 = _tape.pop()\ny = _tape.pop()\nfor k in range(_n1):\n"
                        "    x = _tape.pop()").body
    with pytest.raises(JitRewriteError):
        check_mirrored(fwd, outside)


def _partial_sum(x, n):
    s = 0.0
    for i in range(n):
        s = s + math.sin(x * i)
    return s


def helper_with_loop_in_a_loop(x):
    t = 0.0
    for j in range(5):
        t = t + _partial_sum(x, j) * x
    return t


def test_callee_with_its_own_stacks_called_in_a_loop():
    got = srcgrad.grad(helper_with_loop_in_a_loop, jit=True)(0.7)
    assert got == pytest.approx(srcgrad.grad(helper_with_loop_in_a_loop)(0.7), rel=1e-12)
    check_grad(helper_with_loop_in_a_loop, (0.7,), grads=(got,))


# -- values read from outside the arguments: never frozen stale (numba bakes globals in) ------

WEIGHTS = np.ones(3)
PAIR = (np.ones(3), 2.0)
COEFFS = [1.0, 2.0]
params = types.ModuleType("jit_test_params")  # a module whose attributes the code reads
params.W = np.ones(3)
params.RATE = 0.5


def reads_global_array(x):
    return np.sum(WEIGHTS * x ** 2)


def reads_module_attribute(x):
    return np.sum(params.W * x ** 2) * params.RATE


def reads_tuple_of_arrays(x):
    return np.sum(PAIR[0] * x) * PAIR[1]


def _weighted(x):
    return np.sum(WEIGHTS * x * x)


def calls_reader(x):
    return _weighted(x) + np.sum(x)


def reads_list(x):
    return x * COEFFS[1]


X3 = np.array([1.0, 2.0, 3.0])


def _check_against_interpreted(g, f, *args):
    want = srcgrad.grad(f)(*args)
    np.testing.assert_allclose(g(*args), want, rtol=1e-12)
    return want


@pytest.mark.parametrize("f", [reads_global_array, calls_reader])
def test_global_array_changed_in_place_is_seen(f):
    g = srcgrad.grad(f, jit=True)
    _check_against_interpreted(g, f, X3)
    WEIGHTS[0] = 5.0
    try:
        assert _check_against_interpreted(g, f, X3)[0] > 9.0
    finally:
        WEIGHTS[0] = 1.0
    _check_against_interpreted(g, f, X3)


def test_global_array_rebound_to_another_shape_and_dtype():
    global WEIGHTS
    g = srcgrad.grad(reads_global_array, jit=True)
    original = WEIGHTS
    try:
        WEIGHTS = np.arange(6).reshape(2, 3)  # (broadcasts; int64: float32 is refused)
        _check_against_interpreted(g, reads_global_array, X3)
    finally:
        WEIGHTS = original


def test_module_attribute_array_changed_in_place_or_rebound_is_seen():
    g = srcgrad.grad(reads_module_attribute, jit=True)
    _check_against_interpreted(g, reads_module_attribute, X3)
    params.W[2] = 7.0
    params.RATE = 3.0  # a frozen constant, rebound: recompiled
    try:
        got = _check_against_interpreted(g, reads_module_attribute, X3)
        assert got[2] == pytest.approx(3.0 * 7.0 * 6.0)
    finally:
        params.W[2] = 1.0
        params.RATE = 0.5
    _check_against_interpreted(g, reads_module_attribute, X3)


def test_tuple_of_arrays_changed_in_place_is_seen():
    g = srcgrad.grad(reads_tuple_of_arrays, jit=True)
    _check_against_interpreted(g, reads_tuple_of_arrays, X3)
    PAIR[0][1] = 4.0
    try:
        assert _check_against_interpreted(g, reads_tuple_of_arrays, X3)[1] == 8.0
    finally:
        PAIR[0][1] = 1.0


def test_global_list_is_refused_at_its_line():
    with pytest.raises(JitUnsupportedError) as info:
        srcgrad.grad(reads_list, jit=True)(1.5)
    line = reads_list.__code__.co_firstlineno + 1
    assert f"test_jit.py:{line}" in str(info.value) and "'COEFFS' is a list" in str(info.value)


SCALE = 2.0


def _scaled(x):
    return x * SCALE


def calls_scaled(x):
    return _scaled(x) * x


def test_rebinding_a_global_a_callee_reads_recompiles():
    global SCALE
    g = srcgrad.grad(calls_scaled, jit=True)
    assert g(1.5) == pytest.approx(6.0)
    SCALE = 5.0
    try:
        assert g(1.5) == pytest.approx(15.0)
    finally:
        SCALE = 2.0


def test_closure_cell_rebound_is_seen():
    def make():
        w = np.ones(3)

        def f(x):
            return np.sum(w * x)

        def rebind():
            nonlocal w
            w = np.full(3, 2.0)
        return f, rebind
    f, rebind = make()
    g = srcgrad.grad(f, jit=True)
    np.testing.assert_allclose(g(X3), np.ones(3))
    rebind()
    np.testing.assert_allclose(g(X3), np.full(3, 2.0))


# -- argument kinds: compiled and interpreted gradients agree (or the compiled one refuses) ---

def square_sines(x):
    return np.sum(np.sin(x) * x + 0.5 * x * x)


def scalar_sines(x):
    return x * math.sin(x) + 0.5 * x * x


def scaled_by(x, k):
    return x * k / 3 + k ** 2 * x


def _agree(g, f, args, rtol=1e-12):
    want = srcgrad.grad(f)(*args)
    got = g(*args)
    assert type(got) is type(want), (type(got), type(want))
    assert np.shape(got) == np.shape(want) and np.result_type(got) == np.result_type(want)
    np.testing.assert_allclose(got, want, rtol=rtol)


def test_argument_kinds_and_dtypes_changing_between_calls():
    g = srcgrad.grad(square_sines, jit=True)
    x = np.linspace(0.1, 1.0, 12)
    readonly = x.copy()
    readonly.flags.writeable = False
    # (float32 arguments are refused: test_float32_arguments_are_refused_or_run_interpreted)
    for arg, rtol in [(x, 1e-12), (x, 1e-12),
                      (x.reshape(3, 4).T, 1e-12), (x[::3], 1e-12), (readonly, 1e-12),
                      (np.array(0.7), 1e-12)]:
        _agree(g, square_sines, (arg,), rtol)
    s = srcgrad.grad(scalar_sines, jit=True)
    for arg, rtol in [(0.3, 1e-12), (np.float64(0.3), 1e-12), (0.3, 1e-12)]:
        _agree(s, scalar_sines, (arg,), rtol)


def branch_on_a_python_float(x):
    c = 2.0
    if x[0] > 0.3:
        c = 5.0
    return np.sum(x * c)


def test_float32_arguments_are_refused_or_run_interpreted():
    """numpy compares float32(0.3) with the Python float 0.3 in float32 (equal, NEP 50),
    numba in float64 (greater): compiled, the branch went the other way and the value and
    gradient were 4.0 and 5 where 1.6 and 2 are right. float32/float16 arguments are now
    refused (jit=True) or run interpreted with a warning (jit="auto")."""
    x = np.array([0.3, 0.5], np.float32)
    want = srcgrad.value_and_grad(branch_on_a_python_float)(x)
    assert want[0] == pytest.approx(1.6) and np.allclose(want[1], 2.0)
    for arg in (x, x.astype(np.float16), np.float32(0.3)):
        with pytest.raises(JitUnsupportedError, match="float"):
            srcgrad.grad(scalar_sines if np.ndim(arg) == 0 else branch_on_a_python_float,
                         jit=True)(arg)
    with pytest.warns(RuntimeWarning, match="float32"):
        got = srcgrad.value_and_grad(branch_on_a_python_float, jit="auto")(x)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    with pytest.raises(JitUnsupportedError, match="float32"):
        srcgrad.vjp(branch_on_a_python_float, x, jit=True)


def test_integer_arguments_not_differentiated():
    g = srcgrad.grad(scaled_by, jit=True)
    for k in (7, 7.0, 2 ** 40, -(2 ** 62), np.int64(7)):  # (big ints: numba's wrap around)
        assert g(0.5, k) == pytest.approx(srcgrad.grad(scaled_by)(0.5, k), rel=1e-12)


def test_external_reads_passes_arrays_freezes_constants_refuses_lists():
    import ast

    from srcgrad.jit.inputs import RefusedRead, external_reads
    func = ast.parse("def g(x):\n    return WEIGHTS * x + RATE + params.W.sum() + np.sum(x) "
                     "+ len(x)").body[0]
    reads = external_reads([func], set(), set(), reads_global_array)  # (this module's globals)
    assert [param for param, _ in reads.passed] == ["WEIGHTS", "_params_W"]
    assert [s.path for s, _ in reads.frozen] == [("RATE",), ("params",), ("np",)]
    assert "_params_W.sum()" in ast.unparse(func) and "np.sum(x)" in ast.unparse(func)
    listed = ast.parse("def g(x):\n    return x * COEFFS[0]").body[0]
    with pytest.raises(RefusedRead, match="'COEFFS' is a list"):
        external_reads([listed], set(), set(), reads_global_array)


def draws_noise(x):
    return np.sum(x * np.random.normal(0.0, 1.0, x.shape))


def test_random_numbers_are_refused():
    # numba's generator is not numpy's: np.random.seed would not make them agree
    with pytest.raises(JitUnsupportedError, match="draws random numbers") as info:
        srcgrad.grad(draws_noise, jit=True)(X3)
    assert f"test_jit.py:{draws_noise.__code__.co_firstlineno + 1}" in str(info.value)


with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    MATRIX = np.matrix(np.eye(2))


def reads_matrix(x):
    return np.sum(MATRIX * x)


def test_array_subclasses_are_refused():
    import ast

    from srcgrad.jit.inputs import RefusedRead, external_reads
    # numba types an np.matrix as a plain 2-d array: its '*' would become elementwise
    with pytest.raises(SrcgradError, match="matrix"):  # (the transformer's own refusal)
        srcgrad.grad(reads_matrix, jit=True)(np.ones((2, 2)))
    with pytest.raises(RefusedRead, match="'MATRIX' is a matrix"):
        external_reads([ast.parse("def g(x):\n    return MATRIX[0, 0] * x").body[0]],
                       set(), set(), reads_matrix)
    with pytest.raises(JitUnsupportedError, match="np.asarray"):
        srcgrad.grad(square_sines, jit=True)(MATRIX * 0.5)


# -- compiled rule helpers of reductions: expand_reduced, extremum_weights, greater_weight --

def extrema(x):
    return np.max(x) * 2.0 + np.min(x * x) + np.sum(np.maximum(x, 0.3) * x) \
        + np.sum(np.minimum(x, x[0]) * x)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4)])
def test_extrema_and_maximum_compiled(shape):
    x = np.random.default_rng(len(shape)).normal(size=shape)  # (no ties: finite differences)
    got = srcgrad.grad(extrema, jit=True)(x)
    np.testing.assert_array_equal(got, srcgrad.grad(extrema)(x))
    check_grad(extrema, (x,), grads=(got,))
    assert "greater_weight = srcgrad.jit.runtime" in srcgrad.source(srcgrad.grad(extrema,
                                                                                 jit=True))


def test_extrema_ties_split_as_interpreted():
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.5, 0.3]])  # max tied 3 times, x == 0.3
    np.testing.assert_array_equal(srcgrad.grad(extrema, jit=True)(x),
                                  srcgrad.grad(extrema)(x))


def test_float32_maximum_with_a_python_float_is_refused():
    # numpy ties float32(0.3) with 0.3 (NEP 50 compares in float32), numba would not:
    # the weight at that element would be 1, not 1/2
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.5, 0.3]], np.float32)
    with pytest.raises(JitUnsupportedError, match="float32"):
        srcgrad.grad(extrema, jit=True)(x)


@pytest.fixture(scope="module")
def reduction_helpers():
    from srcgrad.jit import runtime as rt

    @numba.njit
    def expand(g, x, axis):
        return rt.expand_reduced(g, x, axis)

    @numba.njit
    def expand_kept(g, x, axis):
        return rt.expand_reduced(g, x, axis, True)

    @numba.njit
    def weights(a, ans, axis):
        return rt.extremum_weights(a, ans, axis)

    @numba.njit
    def weights_kept(a, ans, axis):
        return rt.extremum_weights(a, ans, axis, True)

    return expand, expand_kept, weights, weights_kept


@pytest.mark.parametrize("shape, axis, dtype", [  # (each type signature compiles again)
    ((5,), -1, np.float64), ((3, 4), 0, np.float32), ((2, 3, 4), -3, np.float64),
    ((2, 3, 4), (-1, 0), np.float64), ((1, 3, 1), 2, np.float64), ((3, 4), None, np.float32)])
def test_compiled_reduction_helpers_match_interpreted(reduction_helpers, shape, axis, dtype):
    from srcgrad.rules import _helpers
    expand, expand_kept, weights, weights_kept = reduction_helpers
    x = (np.arange(np.prod(shape)).reshape(shape) % 3).astype(dtype)  # (ties)
    for keepdims, expand_fn, weights_fn in ((False, expand, weights),
                                            (True, expand_kept, weights_kept)):
        ans = np.max(x, axis=axis, keepdims=keepdims)
        want = _helpers.expand_reduced(ans, x, axis, keepdims)
        got = expand_fn(ans, x, axis)
        assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)
        want = _helpers.extremum_weights(x, ans, axis, keepdims)
        got = weights_fn(x, ans, axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_compiled_maximum_weights_match_interpreted():
    from srcgrad.jit import runtime as rt
    from srcgrad.rules import _helpers

    @numba.njit
    def weight(x, y):
        return rt.greater_weight(x, y)

    x = np.array([[1.0, np.nan, 2.0], [0.5, 2.0, -1.0]])
    for y in (x[0], x[:, :1], 2.0, x.astype(np.float32), np.float32(1.0), 2):
        for a, b in ((x, y), (y, x)):
            want = _helpers.greater_weight(a, b)
            got = weight(a, b)
            assert np.shape(got) == want.shape and np.asarray(got).dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert weight(2.0, 2.0) == 0.5 and weight(3.0, 2.0) == 1.0 and weight(1.0, 2.0) == 0.0
    with pytest.raises(numba.core.errors.TypingError, match="narrower float"):
        weight(x.astype(np.float32), 0.3)


def norms(x):
    return np.linalg.norm(x) * np.linalg.norm(x[0]) + np.linalg.norm(x * 0.5 - 1.0) ** 2


def transposed(x):
    w = np.arange(24.0).reshape(3, 4, 2)
    return np.sum(np.transpose(x, (1, -1, 0)) * w) + np.sum(np.transpose(x) ** 2)


@pytest.mark.parametrize("f, x", [
    (norms, np.linspace(-1.0, 2.0, 6).reshape(2, 3)),
    (norms, np.linspace(-1.0, 2.0, 4).reshape(4, 1)),
    (transposed, np.linspace(-1.0, 2.0, 24).reshape(2, 3, 4)),
])
def test_norm_and_transpose_with_axes_compiled(f, x):
    got = srcgrad.grad(f, jit=True)(x)
    np.testing.assert_allclose(got, srcgrad.grad(f)(x), rtol=1e-13, atol=0)
    check_grad(f, (x,), grads=(got,))


def test_norm_of_a_vector_row_of_a_vector_is_refused_at_its_line():
    # (x[0] of a 1-d x is a number: numba has no np.linalg.norm of one)
    line = norms.__code__.co_firstlineno + 1
    with pytest.raises(JitUnsupportedError, match=f"test_jit.py:{line}"):
        srcgrad.grad(norms, jit=True)(np.array([1.0, 2.0]))


def test_compiled_inverse_axes_and_ndim():
    from srcgrad.jit import runtime as rt
    from srcgrad.rules.numpy_shape import inverse_axes

    @numba.njit
    def inverse(axes, a):
        return rt.inverse_axes(axes, rt.ndim(a))

    a = np.zeros((2, 3, 4, 5))
    for axes in ((0, 1, 2, 3), (3, 1, 0, 2), (-1, -3, 0, 2), (2, 3, 1, 0)):
        assert inverse(axes, a) == inverse_axes(axes, 4)


def stacked(x):
    s = np.stack((x, x * 2.0, x), axis=-1)
    w = np.stack((x * 3.0, x))
    v = np.vstack((x, x ** 2))
    u = np.vstack((x[None, :] * 1.0, x[None, :]))  # (numba's vstack: items of one rank)
    return np.sum(s * s * np.arange(3.0)) + np.sum(v * v) + np.sum(w * w * w) + np.sum(u ** 3)


def test_stack_and_vstack_compiled():
    x = np.linspace(-1.0, 2.0, 3)
    got = srcgrad.grad(stacked, jit=True)(x)
    np.testing.assert_array_equal(got, srcgrad.grad(stacked)(x))
    check_grad(stacked, (x,), grads=(got,))


def test_compiled_cuts_match_interpreted():
    from srcgrad.jit import runtime as rt
    from srcgrad.rules import numpy_shape

    @numba.njit
    def unstack(g, arrays, axis):
        return rt.unstack(g, arrays, axis)

    @numba.njit
    def vstack_vjp(g, ans, tup):
        return rt.vstack_vjp(g, ans, tup)

    @numba.njit
    def add(a, b):
        return rt.add(a, b)

    a = np.zeros((2, 3))
    for axis in (0, 1, 2, -1, -3):
        g = np.random.default_rng(axis + 3).normal(size=np.stack((a, a, a, a), axis).shape)
        for got, want in zip(unstack(g, (a, a, a, a), axis),
                             numpy_shape.unstack(g, (a, a, a, a), axis), strict=True):
            np.testing.assert_array_equal(got, want)
    tup = (np.zeros((2, 3)), np.zeros(3), np.zeros((1, 3)))
    g = np.arange(12.0).reshape(4, 3)
    (got,), (want,) = vstack_vjp(g, g, tup), numpy_shape.vstack_vjp(g, g, tup)
    for piece, expected in zip(got, want, strict=True):
        assert piece.shape == expected.shape
        np.testing.assert_array_equal(piece, expected)
    # (tuple adjoints add item by item, as srcgrad.runtime.add does; Python's + would join)
    from srcgrad import runtime as interpreted
    for got, want in zip(add((g, g * 2.0), (g, g)), interpreted.add((g, g * 2.0), (g, g)),
                         strict=True):
        np.testing.assert_array_equal(got, want)


# -- dtypes numba computes with differently from numpy: refused, never a wrong number ------

THRESHOLDS = np.array([0.3, 0.5])  # rebound to float32 and other dtypes by the tests


def branch_on_a_global(x):
    c = 2.0
    if THRESHOLDS[0] > 0.3:  # float32(0.3) > 0.3 is False in numpy (NEP 50), True in numba
        c = 5.0
    return np.sum(x * c) + THRESHOLDS[1] * np.sum(x)


def _reads_thresholds(x):
    return THRESHOLDS[0] * x[0]


def helper_reads_global(x):
    return _reads_thresholds(x) + np.sum(x * x)


def _rebound_thresholds(value):
    global THRESHOLDS
    old, THRESHOLDS = THRESHOLDS, value
    return old


def _low_values():
    low = np.array([0.3, 0.5], np.float32)
    return [low, low.astype(np.float16), np.array([0, 1], np.int32),
            (np.float32(0.3), np.float32(0.5))]  # (a tuple of numpy scalars: frozen)


@pytest.mark.parametrize("k", range(4))
def test_low_precision_global_array_is_refused_located(k):
    """A float32 array read from a global: compiled, the branch went the other way (value
    4.0 and gradient 5 where numpy gives 1.6 and 2)."""
    value = _low_values()[k]
    old = _rebound_thresholds(value)
    try:
        x = np.array([0.2, 0.2])
        want = srcgrad.value_and_grad(branch_on_a_global)(x)
        if k == 0:
            assert want[0] == pytest.approx(0.2 * 2 * 2 + 0.5 * 0.4) and np.allclose(want[1],
                                                                                     2.5)
        line = branch_on_a_global.__code__.co_firstlineno + 2
        with pytest.raises(JitUnsupportedError, match=rf":{line}: 'THRESHOLDS' holds (float|int)"):
            srcgrad.value_and_grad(branch_on_a_global, jit=True)(x)
        with pytest.warns(RuntimeWarning, match="THRESHOLDS"):
            got = srcgrad.value_and_grad(branch_on_a_global, jit="auto")(x)
        assert got[0] == want[0] and np.array_equal(got[1], want[1])
    finally:
        _rebound_thresholds(old)


def test_global_rebound_to_low_precision_after_compiling_is_refused():
    """Arrays read from outside are passed on every call: one rebound to float32 after the
    first call is caught at that call, jit=True and jit="auto" alike, helpers too."""
    x = np.array([0.2, 0.2])
    for f in (branch_on_a_global, helper_reads_global):
        g = srcgrad.value_and_grad(f, jit=True)
        auto = srcgrad.value_and_grad(f, jit="auto")
        np.testing.assert_allclose(g(x)[1], srcgrad.value_and_grad(f)(x)[1], rtol=1e-12)
        auto(x)
        old = _rebound_thresholds(np.array([0.3, 0.5], np.float32))
        try:
            want = srcgrad.value_and_grad(f)(x)
            with pytest.raises(JitUnsupportedError, match="'THRESHOLDS'.*float32"):
                g(x)
            with pytest.warns(RuntimeWarning, match="float32"):
                got = auto(x)
            assert got[0] == want[0] and np.array_equal(got[1], want[1])
            with pytest.raises(JitUnsupportedError, match="float32"):
                srcgrad.vjp(f, x, jit=True)
        finally:
            _rebound_thresholds(old)
        np.testing.assert_allclose(g(x)[1], srcgrad.value_and_grad(f)(x)[1], rtol=1e-12)


def test_low_precision_closure_and_numpy_scalar_are_refused():
    def make(t):
        def f(x):
            c = 2.0
            if t > 0.3:
                c = 5.0
            return np.sum(x * c)
        return f
    x = np.array([0.2, 0.2])
    for t in (np.float32(0.3), np.array([0.3], np.float32)[0:1].reshape(()),
              np.float16(0.3)):
        f = make(t)
        assert srcgrad.value_and_grad(f)(x)[0] == pytest.approx(0.8)
        with pytest.raises(JitUnsupportedError, match=r"'t'.*float"):
            srcgrad.value_and_grad(f, jit=True)(x)
    f = make(0.25)
    np.testing.assert_allclose(srcgrad.grad(f, jit=True)(x), srcgrad.grad(f)(x), rtol=1e-12)


def float32_made_in_the_body(x):
    c = 2.0
    if np.float32(x[0]) > 0.3:
        c = 5.0
    return np.sum(x * c)


def float32_array_made_in_the_body(x):
    t = np.full(2, 0.3, np.float32)
    c = 2.0
    if t[0] > 0.3:
        c = 5.0
    return np.sum(x * c)


def float32_array_named_by_a_string(x):
    t = np.full(2, 0.3, "float32")
    c = 2.0
    if t[0] > 0.3:
        c = 5.0
    return np.sum(x * c)


def int32_made_in_the_body(x, k):
    n = np.int32(k) * np.int32(k)  # wraps in int32 in numpy, not in numba's int64
    return x * n


@pytest.mark.parametrize("f, args", [
    (float32_made_in_the_body, (np.array([0.3, 0.5]),)),
    (float32_array_made_in_the_body, (np.array([0.3, 0.5]),)),
    (float32_array_named_by_a_string, (np.array([0.3, 0.5]),)),
    (int32_made_in_the_body, (0.5, 100000))])
def test_low_precision_dtypes_named_in_the_body_are_refused(f, args):
    want = srcgrad.grad(f)(*args)
    line = f.__code__.co_firstlineno + (2 if f is float32_made_in_the_body else 1)
    with pytest.raises(JitUnsupportedError, match=rf":{line}: .*(float|int)32 values"):
        srcgrad.grad(f, jit=True)(*args)
    with pytest.warns(RuntimeWarning):
        got = srcgrad.grad(f, jit="auto")(*args)
    np.testing.assert_array_equal(got, want)


def scaled_by_an_index_array(x, idx):
    return np.sum(x * (idx + 2147483647)[0])  # numpy adds in idx's dtype (int32: wraps)


def scaled_by_a_squared_index(x, idx):
    return np.sum(x * (idx * idx)[0])  # (int8: 100 * 100 wraps in numpy)


def bool_scalars_added(x, mask):
    return x * (mask[0] + mask[1])  # np.bool_ + np.bool_ is a logical or in numpy


@pytest.mark.parametrize("f, extra", [
    (scaled_by_an_index_array, np.array([1], np.int32)),
    (scaled_by_an_index_array, np.array([1], np.uint64)),
    (scaled_by_a_squared_index, np.array([100], np.int8))])
def test_narrow_and_unsigned_integer_arrays_are_refused(f, extra):
    x = np.array([0.5, 1.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (numpy's overflow warnings)
        want = srcgrad.grad(f)(x, extra)
        with pytest.raises(JitUnsupportedError, match=str(extra.dtype)):
            srcgrad.grad(f, jit=True)(x, extra)
        with pytest.warns(RuntimeWarning, match=str(extra.dtype)):
            got = srcgrad.grad(f, jit="auto")(x, extra)
    np.testing.assert_array_equal(got, want)


def int64_arithmetic(x, idx, k):
    return (x * (idx[0] // -3) + x * (idx[1] % -3) + x * (idx[0] / idx[1])
            + x * (idx[0] > 2.5) + x * np.sum(idx) + x * np.mean(idx) + x * (k // -3)
            + x * (k % -3) + x * (x // -0.3) + (x % -0.3) * x)


def test_int64_and_bool_arrays_compute_as_numpy():
    x = np.array([0.5, 1.5])
    idx = np.array([1, 2])
    np.testing.assert_array_equal(srcgrad.grad(scaled_by_an_index_array, jit=True)(x, idx),
                                  srcgrad.grad(scaled_by_an_index_array)(x, idx))
    g = srcgrad.grad(int64_arithmetic, jit=True)
    for a, k in [(np.array([7, 2]), 7), (np.array([-7, -2]), -8), (np.array([2, 7]), 2)]:
        assert g(1.7, a, k) == srcgrad.grad(int64_arithmetic)(1.7, a, k)
    mask = np.array([True, True])
    want = srcgrad.grad(bool_scalars_added)(0.5, mask)
    assert want == 1.0  # (True + True is True in numpy, 2 in Python and numba)
    with pytest.raises(JitUnsupportedError, match="bool"):
        srcgrad.grad(bool_scalars_added, jit=True)(0.5, mask)


def int_to_a_negative_power(x, k):
    return x * k ** -1  # 0.5 for k = 2 in Python, 0 in numba's int64


def int_power_beyond_int64(x, k):
    m = k
    m **= 3  # 2**90 in Python; wraps around to 0 in numba's int64
    return x * m


def int_powers_that_fit(x, k):
    return x * k ** 3 + x ** k + x ** -k + 2.0 ** k


@pytest.mark.parametrize("f, line", [(int_to_a_negative_power, 1),
                                     (int_power_beyond_int64, 2)])
def test_int_powers_python_and_numba_disagree_on_are_refused(f, line):
    want = srcgrad.grad(f)(0.5, 2 ** 30)
    assert want != 0.0
    line = f.__code__.co_firstlineno + line
    with pytest.raises(JitUnsupportedError, match=rf":{line}: an int to an int power"):
        srcgrad.grad(f, jit=True)(0.5, 2 ** 30)
    with pytest.warns(RuntimeWarning, match="an int to an int power"):
        assert srcgrad.grad(f, jit="auto")(0.5, 2 ** 30) == want
    small = 3  # (fits: compiled, as Python computes it)
    if f is int_power_beyond_int64:
        assert srcgrad.grad(f, jit=True)(0.5, small) == srcgrad.grad(f)(0.5, small) == 27.0


def test_int_powers_that_fit_compute_as_python():
    g = srcgrad.grad(int_powers_that_fit, jit=True)
    for k in (0, 1, 3, 7):
        assert g(0.7, k) == pytest.approx(srcgrad.grad(int_powers_that_fit)(0.7, k), rel=1e-12)
    check_grad(lambda x: int_powers_that_fit(x, 3), (0.7,),
               grads=(g(0.7, 3),))


# -- reductions along an axis numba lacks: compiled loops (_rt.max_along, ...) -------------

def reductions_along_axes(x):
    rows = np.max(x, axis=1) * np.sum(np.min(x, axis=0))
    centred = x - np.mean(x, axis=-1, keepdims=True)
    return np.sum(rows) + np.sum(centred ** 2) + np.sum(np.sum(x, axis=0, keepdims=True) ** 2) \
        + np.sum(np.mean(x, axis=0)) + np.sum(np.amax(x, 0, keepdims=True))


def test_reductions_numba_lacks_compile_and_agree():
    rng = np.random.default_rng(3)
    g = srcgrad.value_and_grad(reductions_along_axes, jit=True)
    text = srcgrad.source(g)
    for helper in ("max_along", "min_along", "mean_along", "sum_along"):
        assert f"_rt.{helper}(" in text
    for x in (rng.normal(size=(3, 4)), rng.normal(size=(1, 5)),
              np.array([[1.0, 3.0, 3.0], [3.0, -0.0, 0.0]])):  # (ties, signed zeros)
        want = srcgrad.value_and_grad(reductions_along_axes)(x)
        got = g(x)
        assert got[0] == pytest.approx(want[0], rel=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)
        if x.shape == (3, 4):
            check_grad(reductions_along_axes, (x,), grads=(got[1],))
    x = rng.normal(size=(3, 4))
    x[1, 2] = np.nan  # (propagates through max and min, as numpy's)
    want, got = srcgrad.value_and_grad(reductions_along_axes)(x), g(x)
    assert np.isnan(want[0]) and np.isnan(got[0])
    np.testing.assert_array_equal(np.isnan(got[1]), np.isnan(want[1]))


def test_reduction_helpers_match_numpy_exactly():
    from srcgrad.jit import runtime as rt

    @numba.njit
    def along(x, axis):
        return (rt.max_along(x, axis, False), rt.min_along(x, axis, True),
                rt.mean_along(x, axis, False), rt.sum_along(x, axis, True))
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3, 4))
    x[0, 1, 2] = np.nan
    for axis in (0, 1, 2, -1, -3):
        mx, mn, mean, total = along(x, axis)
        np.testing.assert_array_equal(mx, np.max(x, axis=axis))
        np.testing.assert_array_equal(mn, np.min(x, axis=axis, keepdims=True))
        np.testing.assert_allclose(mean, np.mean(x, axis=axis), rtol=1e-14)
        np.testing.assert_allclose(total, np.sum(x, axis=axis, keepdims=True), rtol=1e-14)
    with pytest.raises(ValueError, match="axis"):
        along(x, 3)


def method_reductions(x):
    m = x.max(axis=0, keepdims=True)
    rows = x.min(1) * x.mean(axis=-1)
    return np.sum((x - m) ** 2) + np.sum(rows) + np.sum(x.sum(axis=1, keepdims=True) ** 2) \
        + np.sum(x.mean(0, keepdims=True))


def test_method_reductions_along_an_axis_compile_and_agree():
    # numba lacks a.max(axis=...), a.mean(axis=...) and keepdims=: the methods are called
    # through the same compiled loops as the numpy functions (before: refused at the line)
    rng = np.random.default_rng(5)
    g = srcgrad.value_and_grad(method_reductions, jit=True)
    for x in (rng.normal(size=(3, 4)), np.array([[1.0, 3.0, 3.0], [3.0, -0.0, 0.0]])):
        want, got = srcgrad.value_and_grad(method_reductions)(x), g(x)
        assert got[0] == pytest.approx(want[0], rel=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)
        check_grad(method_reductions, (x,), grads=(got[1],))
    text = srcgrad.source(g)
    for helper in ("max_along", "min_along", "mean_along", "sum_along"):
        assert f"_rt.{helper}(" in text
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "x.m" in line]  # (no method call left)


def method_mean_of_ints(x, n):
    k = np.arange(n).reshape((2, 3))
    return np.sum(x * k.mean(axis=0))  # (numpy: a float64 mean of an int array)


def method_with_dtype(x):
    return np.sum(x.sum(0, np.float64))


def test_method_reductions_only_of_float64_arrays_and_an_axis():
    x = np.arange(3.0) + 0.5
    # an int array's mean along an axis: the compiled loop takes float64 arrays only
    with pytest.raises(JitUnsupportedError, match="mean_along"):
        srcgrad.grad(method_mean_of_ints, jit=True)(x, 6)
    with pytest.warns(RuntimeWarning, match="mean_along"):
        got = srcgrad.grad(method_mean_of_ints, jit="auto")(x, 6)
    np.testing.assert_array_equal(got, [1.5, 2.5, 3.5])
    # a second positional argument (the dtype) is left to numba's own method
    x = np.arange(6.0).reshape((2, 3))
    g = srcgrad.grad(method_with_dtype, jit=True)
    np.testing.assert_array_equal(g(x), srcgrad.grad(method_with_dtype)(x))
    assert "_along" not in srcgrad.source(g)


# -- arithmetic on bools made in the body: refused at its line, or computed as numpy ----------

def _bools_of(x):
    return x > 0.0  # (numpy bools: x is an array)


def bool_sum(x):
    m = x > 0.0
    return np.sum(x) * (m[0] + m[1])  # True in numpy, 2 in numba


def bool_difference(x):
    m = x > 0.0
    return np.sum(x) * (m[0] - m[1])  # raises in numpy


def bool_product_summed(x):
    m = x > 0.0
    return np.sum(x) * (m[0] * m[1] + m[0] * m[1])  # True in numpy, 2 in numba


def bool_quotient(x):
    m = x > 0.0
    return np.sum(x) * (m[0] / m[1])


def bool_floor_quotient(x):
    m = x > 0.0
    return np.sum(x) * (m[0] // m[1])  # int8 in numpy


def bool_remainder(x):
    m = x > 0.0
    return np.sum(x) * (m[0] % m[1] + 1)


def bool_power(x):
    m = x > 0.0
    return np.sum(x) * (m[0] ** m[1])


def bool_added_in_place(x):
    m = x > 0.0
    k = m[0]
    k += m[1]
    return np.sum(x) * k


def bool_negated(x):
    m = x > 0.0
    return np.sum(x) * (-m[0])  # raises in numpy


def bool_absolute_summed(x):
    m = x > 0.0
    return np.sum(x) * (abs(m[0]) + abs(m[1]))  # True in numpy, 2 in numba


def bool_array_difference(x):
    m = x > 0.0
    return np.sum(x * (m - m))  # raises in numpy, int8 in numba


def bool_array_quotient(x):
    m = x > 0.0
    return np.sum(x * (m / (x > -1.0)))  # float64 in numpy, float32 in numba


def bool_array_floor_quotient(x):
    m = x > 0.0
    return np.sum(x * ((m // m) * 300))  # int8 in numpy


def bool_array_negated(x):
    m = x > 0.0
    return np.sum(x * -m)  # raises in numpy


def bool_python_scalars(x):
    a = x[0] > 0.0
    return x[1] * (a + a)  # (a numpy bool here too)


@pytest.mark.parametrize("f", [bool_sum, bool_difference, bool_product_summed, bool_quotient,
                               bool_floor_quotient, bool_remainder, bool_power,
                               bool_added_in_place, bool_negated, bool_absolute_summed,
                               bool_array_difference, bool_array_quotient,
                               bool_array_floor_quotient, bool_array_negated,
                               bool_python_scalars])
def test_arithmetic_on_bools_made_in_the_body_is_refused_at_its_line(f):
    x = np.array([0.5, 1.5, 2.0])
    lines = [i for i, text in enumerate(__import__("inspect").getsource(f).splitlines())
             if "return" in text or "+=" in text]
    line = f.__code__.co_firstlineno + lines[0]
    with pytest.raises(JitUnsupportedError, match=rf":{line}: .*bool"):
        srcgrad.grad(f, jit=True)(x)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = srcgrad.grad(f)(x)
    except (TypeError, OverflowError):  # numpy refuses it: so does auto
        return
    with pytest.warns(RuntimeWarning, match="bool"):
        got = srcgrad.grad(f, jit="auto")(x)
    np.testing.assert_array_equal(got, want)


def bools_as_numpy_computes_them(x):
    m = x > 0.0
    n = x > 1.0
    s = (m + n) * 1.0 + (m * n) * 2.0 + (m & n) * 3.0 + (m | n) * 4.0 + (m ^ n) * 5.0 \
        + (~m) * 6.0 + (m[0] + n) * 7.0 + (m[1] * n) * 8.0
    c = (m[0] & n[1]) * 1.5 + (m[1] | n[0]) * 2.5 + (m[0] ^ n[0]) * 3.5 + (m[0] + 1) * 4.5 \
        + (m[1] * 2.5) + np.sum(m) + np.sum(m * n) + (m[0] == n[0]) * 5.5 + (1 - m[2]) * 6.5
    return np.sum(x * s) + x[0] * c


def test_bool_arithmetic_numpy_and_numba_agree_on_compiles():
    g = srcgrad.grad(bools_as_numpy_computes_them, jit=True)
    for x in (np.array([0.5, 1.5, -2.0]), np.array([-0.5, 0.7, 2.0]), np.array([1.5, 1.5, 1.5])):
        np.testing.assert_array_equal(g(x), srcgrad.grad(bools_as_numpy_computes_them)(x))


def bool_array_square_root(x):
    m = x > 0.0
    return np.sum(x * np.sqrt(m))  # float16 in numpy, float32 in numba


def bool_exp(x):
    m = x > 0.0
    return x[0] * np.exp(m[0])  # float16 in numpy, float64 in numba


def bool_ufunc_subtract(x):
    m = x > 0.0
    return np.sum(x * np.subtract(m, m))  # raises in numpy


def bool_ufuncs_computing_alike(x):
    m = x > 0.0
    n = x > 1.0
    return np.sum(x * np.logical_and(m, n)) + np.sum(x * np.maximum(m, n)) \
        + np.sum(np.where(m, x, 0.0)) + np.sum(x * np.add(m, 1.0)) + x[0] * np.sqrt(m[0] + 1.0)


@pytest.mark.parametrize("f", [bool_array_square_root, bool_exp, bool_ufunc_subtract])
def test_ufuncs_of_bools_numpy_computes_otherwise_are_refused(f):
    test_arithmetic_on_bools_made_in_the_body_is_refused_at_its_line(f)


def test_ufuncs_of_bools_numpy_and_numba_agree_on_compile():
    g = srcgrad.grad(bool_ufuncs_computing_alike, jit=True)
    for x in (np.array([0.5, 1.5, -2.0]), np.array([-0.5, 0.7, 2.0])):
        np.testing.assert_array_equal(g(x), srcgrad.grad(bool_ufuncs_computing_alike)(x))


def _returns_early(x):
    if np.sum(x) > 100.0:
        return np.sin(x)
    return x * 2.0


def calls_a_helper_returning_early(x):
    return np.sum(np.sin(_returns_early(x)))


@pytest.mark.parametrize("x", [np.array([0.3, -1.2, 0.7]), np.array([50.0, 40.0, 30.0])])
def test_a_helper_returning_from_a_branch_compiles(x):
    # fuzzer seed 60 program 55: the helper's backward sweep typed the lazy zero of its
    # returned value's adjoint from '_retval1', which only its forward sweep binds (numba:
    # NameError, refused); it is typed from the cotangent passed in now
    want = srcgrad.grad(calls_a_helper_returning_early)(x)
    got = srcgrad.grad(calls_a_helper_returning_early, jit=True)(x)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grad(calls_a_helper_returning_early, (x,), grads=(got,))
