"""grad's lean sweeps add to an accumulator in place (``b += c``, transforms/rank_facts.py,
issue 11) only where the facts prove it the same as ``b = b + c``: the accumulator starts from
a number and is read by nothing but its own additions and the sweep's return, and every
contribution is an exact ndarray of one float dtype (the seed's dtype included) and of one
shape made of the arguments' dimensions. Everything else keeps ``b = b + c``; either way the
gradients are the unspecialised build's to the bit."""
import gast
import numpy as np
import pytest
from fdcheck import check_grad

import srcgrad
from srcgrad import api
from srcgrad.api import argument_facts, get_lean_adjoint
from srcgrad.transforms import rank_facts as R

F8, F4 = np.float64, np.float32


def rnn(Wh, Wx, b, xs, h0):
    h = h0
    for t in range(6):
        h = np.tanh(h @ Wh + xs[t] @ Wx + b)
    return np.sum(h * h)


def _rnn_args(dtypes=(F8,) * 5, bias=(5,), rows=4):
    rng = np.random.default_rng(11)
    args = [rng.standard_normal((5, 5)) * 0.4, rng.standard_normal((3, 5)) * 0.4,
            rng.standard_normal(bias) * 0.1, rng.standard_normal((6, 4, 3)),
            rng.standard_normal((rows, 5)) * 0.1]
    return [a.astype(d) for a, d in zip(args, dtypes)]


def _backward(fn, wrt, args) -> str:
    """The backward sweep grad runs for these arguments."""
    src = get_lean_adjoint(fn, wrt, False, argument_facts(tuple(args))).source
    return src.split("_bwd(")[1]


def _unspecialised(fn, wrt, args):
    fwd, bwd = get_lean_adjoint(fn, wrt, False).functions_for(fn)
    value, saved = fwd(*args)
    return bwd(saved, api.grad_seed_of(fn, value))


def _same_bits(got, want):
    for a, b in zip(got, want):
        assert type(a) is type(b) and np.shape(a) == np.shape(b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
        assert np.array_equal(a, b), np.max(np.abs(np.asarray(a) - np.asarray(b)))


def _check(fn, wrt, args, fd=True):
    """grad's gradients: the unspecialised build's bits, finite differences, and the
    arguments left as they were."""
    before = [np.copy(a) for a in args]
    got = srcgrad.grad(fn, wrt=wrt)(*args)
    got = got if isinstance(got, tuple) else (got,)
    _same_bits(got, _unspecialised(fn, wrt, args))
    for a, b in zip(args, before):
        assert np.array_equal(a, b)
    if fd:
        check_grad(fn, [np.asarray(a, F8) if isinstance(a, np.ndarray) else a for a in args],
                   wrt=wrt, grads=[np.asarray(g, F8) for g in got])
    return got


# -- where it is proven ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F8, F4])
def test_the_rnn_of_one_float_dtype_adds_in_place(dtype):
    args = _rnn_args((dtype,) * 5)
    src = _backward(rnn, (0, 1, 2), args)
    assert "bWh += h.T @ b_t5" in src and "bWx += _t2.T @ b_t5" in src
    assert "bb += _rt.add_reduce(b_t5, 0)" in src
    got = _check(rnn, (0, 1, 2), args, fd=dtype is F8)
    assert all(g.dtype == dtype for g in got)


def test_int_inputs_under_float_weights_add_in_place():
    # (xs of ints: _t2.T @ b_t5 is float64 all the same)
    args = _rnn_args((F8, F8, F8, np.int64, F8))
    args[3] = (args[3] * 3).astype(np.int64)
    assert "bWx += _t2.T @ b_t5" in _backward(rnn, (0, 1, 2), args)
    _check(rnn, (0, 1, 2), args)


def test_float32_inputs_under_float64_weights_add_in_place():
    args = _rnn_args((F8, F8, F8, F4, F8))
    assert "bWx += _t2.T @ b_t5" in _backward(rnn, (0, 1, 2), args)
    _check(rnn, (0, 1, 2), args)


def test_an_accumulated_alias_of_another_adjoint_is_left_as_it_was():
    # bW's contribution is bc itself (the same array, returned as b's gradient): bW's
    # first addition makes a new array, later ones add to that one only
    def f(W, b):
        c = b
        for t in range(3):
            c = c + W
        return np.sum(c * c)

    W, b = np.linspace(-1.0, 1.0, 12).reshape(3, 4), np.linspace(0.5, 2.0, 12).reshape(3, 4)
    assert "bW += b_t1" in _backward(f, (0, 1), [W, b])
    gW, gb = _check(f, (0, 1), [W, b])
    want_b = 2 * (((b + W) + W) + W)
    assert np.array_equal(gb, want_b) and np.array_equal(gW, ((0.0 + want_b) + want_b) + want_b)


def _accumulators(body: str) -> dict:
    tree = gast.parse("def f_bwd(_saved, b_t1):\n    W, x = _saved\n"
                      + "".join("    " + line + "\n" for line in body.strip().splitlines()))
    return {k: len(v) for k, v in R._owned_accumulators(tree.body[0], "_rt").items()}


def test_only_an_accumulator_starting_from_a_number_and_read_by_nothing_else_is_owned():
    loop = "for i in range(3):\n    bW = bW + x * i\n"
    done = "return (_rt.densify(bW, W),)"
    assert _accumulators("bW = 0.0\n" + loop + done) == {"bW": 1}
    assert _accumulators("bW = 0\nbW = bW + x\n" + loop + done) == {"bW": 2}
    # starting as a user's array or another adjoint: its first + would add into that one
    assert _accumulators("bW = x\n" + loop + done) == {}
    assert _accumulators("bW = b_t1\n" + loop + done) == {}
    # read by anything else: a name for the same array, a call, a push, a nested function
    for read in ("bx = bW", "_tape.push(bW)", "print(bW)", "g = lambda: bW"):
        assert _accumulators("bW = 0.0\n" + loop + read + "\n" + done) == {}
    assert _accumulators("bW = 0.0\n" + loop + "return bW") == {}
    # bound another way
    assert _accumulators("bW = 0.0\n" + loop + "for bW in x:\n    pass\n" + done) == {}
    assert _accumulators("bW = 0.0\n" + loop + "bW, c = x\n" + done) == {}
    # (the contribution reading the accumulator: not an accumulation)
    assert _accumulators("bW = 0.0\nbW = bW + bW * x\n" + done) == {}


def test_python_floats_and_0d_arrays_as_arguments():
    def f(Wh, Wx, b, xs, h0, s):
        h = h0
        for t in range(6):
            h = np.tanh(h @ Wh + (xs[t] @ Wx) * s + b)
        return np.sum(h * h)

    for s in (0.5, np.array(0.5), np.float64(0.5), np.array(0.5, F4), np.float32(0.5)):
        _check(f, (0, 1, 2), _rnn_args() + [s], fd=False)
    _check(f, (0, 1, 2), _rnn_args() + [0.5])


# -- where it is not ---------------------------------------------------------------------------
def test_a_float32_start_under_float64_weights_changes_dtype_and_is_not_in_place():
    # h is float32 at the last step back, float64 before: bWh's contributions are of
    # neither dtype for sure
    args = _rnn_args((F8, F8, F8, F8, F4))
    src = _backward(rnn, (0, 1, 2), args)
    assert "+=" not in src and "bWh = bWh + h.T @ b_t5" in src
    _check(rnn, (0, 1, 2), args)


def test_float32_weights_from_a_float64_start_add_float64_in_place():
    # h @ Wh of a float64 h is float64 at every step: so are h, the value, the seed and
    # every contribution (float32 weights get float64 gradients, as unspecialised)
    args = _rnn_args((F4, F4, F4, F4, F8))
    assert "bWh += h.T @ b_t5" in _backward(rnn, (0, 1, 2), args)
    got = _check(rnn, (0, 1, 2), args, fd=False)
    assert all(g.dtype == F8 for g in got)


def test_a_bias_of_one_row_is_not_in_place():
    args = _rnn_args(bias=(1, 5))
    src = _backward(rnn, (0, 1, 2), args)
    assert "bb = bb + _rt.unbroadcast(b_t5, b)" in src and "bWh += h.T @ b_t5" in src
    _check(rnn, (0, 1, 2), args)


def test_a_one_row_start_is_not_in_place():
    # h0 of one row: the products' cotangents are broadcast, their shapes not proven
    args = _rnn_args(rows=1)
    assert "+=" not in _backward(rnn, (0, 1, 2), args)
    _check(rnn, (0, 1, 2), args)


def test_an_accumulator_read_elsewhere_is_not_in_place():
    # bA is added to bW after the loop: read by something else than its own additions
    def f(W, x):
        A = W
        for t in range(3):
            x = np.tanh(x @ A) @ W
        return np.sum(x * x)

    rng = np.random.default_rng(2)
    args = [rng.standard_normal((4, 4)) * 0.4, rng.standard_normal((3, 4))]
    src = _backward(f, (0, 1), args)
    assert "bA = bA + " in src and "bA +=" not in src
    _check(f, (0, 1), args)


def test_one_function_called_with_three_dtypes_in_one_process():
    g = srcgrad.grad(rnn, wrt=(0, 1, 2))
    for dtypes in [(F8,) * 5, (F4,) * 5, (F8, F8, F8, F8, F4), (F8,) * 5, (F4,) * 5]:
        args = _rnn_args(dtypes)
        got = g(*args)
        _same_bits(got, _unspecialised(rnn, (0, 1, 2), args))
    builds = [slot[3] for slot in api._CACHE[rnn.__code__] if getattr(slot[3], "arg_facts", ())]
    assert {b.arg_facts for b in builds} >= {(2, 2, 1, 3, 2),
                                            ((2, "<f4"), (2, "<f4"), (1, "<f4"), (3, "<f4"),
                                             (2, "<f4")),
                                            (2, 2, 1, 3, (2, "<f4"))}


def test_argument_facts_carry_the_dtype():
    assert argument_facts((np.ones((2, 3)), np.ones((1, 3), F4), np.ones(2, ">f8"), 2.0,
                           np.ones(3, np.int64))) \
        == (2, (-2, "<f4"), (1, ">f8"), "f", (1, "<i8"))


# -- the facts ---------------------------------------------------------------------------------
def test_result_dtype_is_numpys():
    nd = lambda d: R.Val("nd", (("s", 0, 0),), False, np.dtype(d))  # noqa: E731
    assert R.result_dtype(np.add, [nd(F4), R.FLOAT]) == np.dtype(F4)  # (a weak float)
    assert R.result_dtype(np.add, [nd(F4), nd(F8)]) == np.dtype(F8)
    assert R.result_dtype(np.add, [nd(F4), R.Val("nd", (), False, np.dtype(F8))]) \
        == np.dtype(F8)  # (a 0-d array is not weak)
    assert R.result_dtype(np.true_divide, [nd(np.int64), R.INT]) == np.dtype(F8)
    assert R.result_dtype(np.tanh, [nd(np.int32)]) == np.dtype(F8)
    assert R.result_dtype(np.add, [nd(F4), R.TOP]) is None
    assert R.result_dtype(np.negative, [nd(bool)]) is None  # (numpy refuses it)


def test_the_seed_is_the_values_dtype():
    assert R.seed_of(R.Val("num", None, False, np.dtype(F4))) \
        == R.Val("nd", (), False, np.dtype(F4))
    assert R.seed_of(R.FLOAT) == R.FLOAT
    assert R.seed_of(R.Val("num", None, False, np.dtype(np.float16))) == R.TOP
    assert R.seed_of(None) == R.TOP
    for v, want in [(0.5, 1.0), (np.float32(0.5), np.array(1.0, F4)),
                    (np.float64(0.5), np.array(1.0, F8))]:
        seed = api.grad_seed_of(rnn, v)
        assert type(seed) is type(want) and np.asarray(seed).dtype == np.asarray(want).dtype


def test_join_forgets_a_dtype_that_differs():
    a = R.Val("nd", (("s", 0, 0),), False, np.dtype(F4))
    assert R.join(a, a._replace(dtype=np.dtype(F8))).dtype is None
    assert R.join(a, a).dtype == np.dtype(F4)


def test_a_count_of_unknown_objects_may_be_a_numpy_integer():
    # (np.int64 is not weak: a float32 array divided by it is float64)
    nd = R.Val("nd", (("s", 0, 0),), False, np.dtype(F4))
    assert R.result_dtype(np.true_divide, [nd, R.INT]) == np.dtype(F4)
    assert R.result_dtype(np.true_divide, [nd, R.SOME_INT]) is None
    assert (np.ones(2, F4) / np.int64(2)).dtype == F8
    assert R.join(R.INT, R.SOME_INT) == R.SOME_INT
