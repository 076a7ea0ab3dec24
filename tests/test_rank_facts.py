"""grad's lean sweeps built for the ranks of their arguments (transforms/rank_facts.py, issue
11): where the facts prove a helper's fast path the backward sweep runs that one numpy
operation (the same bits); where they do not (a 1-d operand, a dimension of 1, anything not
an exact ndarray) it keeps the helper. One build per kind of arguments, each right."""
import numpy as np
import pytest
from fdcheck import check_grad

import srcgrad
from srcgrad import api
from srcgrad.api import argument_facts, get_entry_adjoint, get_lean_adjoint
from srcgrad.transforms import rank_facts as R


def rnn(Wh, Wx, b, xs, h0):
    h = h0
    for t in range(6):
        h = np.tanh(h @ Wh + xs[t] @ Wx + b)
    return np.sum(h * h)


def _rnn_args(batch=4, rows=None, bias=None, dtypes=(np.float64,) * 5):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((5, 5)) * 0.4, rng.standard_normal((3, 5)) * 0.4,
            rng.standard_normal(bias or (5,)) * 0.1, rng.standard_normal((6, batch, 3)),
            rng.standard_normal((rows or batch, 5)) * 0.1]
    return [a.astype(d) for a, d in zip(args, dtypes)]


def _specialised_source(fn, wrt, args):
    return get_lean_adjoint(fn, wrt, False, argument_facts(tuple(args))).source


def _ordinary(fn, wrt, args):
    """The gradients of the sweeps a gradient differentiated again runs (no lean pass)."""
    adj = get_entry_adjoint(fn, wrt)
    value, saved = adj.fwd(*args)
    return adj.bwd(saved, api.grad_seed_of(fn, value))


def _unspecialised(fn, wrt, args):
    """The gradients of grad's lean sweeps as built for every kind of argument."""
    fwd, bwd = get_lean_adjoint(fn, wrt, False).functions_for(fn)
    value, saved = fwd(*args)
    return bwd(saved, api.grad_seed_of(fn, value))


def _same_bits(got, *wants):
    for want in wants:
        for a, b in zip(got, want):
            assert type(a) is type(b) and np.shape(a) == np.shape(b)
            assert np.asarray(a).dtype == np.asarray(b).dtype
            assert np.array_equal(a, b), np.max(np.abs(np.asarray(a) - np.asarray(b)))


def _check(fn, wrt, args, fd=True):
    """grad's answer: the bits of the unspecialised and the ordinary sweeps, and finite
    differences."""
    got = srcgrad.grad(fn, wrt=wrt)(*args)
    got = got if isinstance(got, tuple) else (got,)
    _same_bits(got, _unspecialised(fn, wrt, args), _ordinary(fn, wrt, args))
    if fd:
        check_grad(fn, list(args), wrt=wrt, grads=list(got))
    return got


# -- the RNN: products and the bias's reduction inline -----------------------------------------

def test_the_rnn_built_for_matrices_runs_the_products_and_the_reduction_inline():
    src = _specialised_source(rnn, (0, 1, 2), _rnn_args())
    assert "bh = b_t5 @ Wh.T" in src
    # (float64 throughout, the seed's dtype too: added in place, test_accumulate_in_place.py)
    assert "bWh += h.T @ b_t5" in src
    assert "bWx += _t2.T @ b_t5" in src
    assert "bb += _rt.add_reduce(b_t5, 0)" in src
    assert "plain_matmul" not in src.split("def rnn_bwd")[1] and "unbroadcast" not in src
    # built for every kind of argument: the helpers
    plain = get_lean_adjoint(rnn, (0, 1, 2), value=False).source
    assert "bh = plain_matmul_left(b_t5, h, Wh)" in plain and "_rt.unbroadcast(b_t5, b)" in plain


@pytest.mark.parametrize("dtypes", [(np.float64,) * 5, (np.float32,) * 5,
                                    (np.float32, np.float64, np.float64, np.float64,
                                     np.float32)])
def test_the_rnn_built_for_matrices_gives_the_same_bits(dtypes):
    args = _rnn_args(dtypes=dtypes)
    assert "b_t5 @ Wh.T" in _specialised_source(rnn, (0, 1, 2), args)
    _check(rnn, (0, 1, 2), args, fd=dtypes[0] is np.float64)


def test_a_one_row_start_broadcast_over_the_batch_keeps_the_helpers():
    """h0 of one row against a batch of 4: h @ Wh is one row the first step, its cotangent
    four, so ``b_t5 @ Wh.T`` would be wrong there; a dimension of 1 proves nothing."""
    args = _rnn_args(rows=1)
    src = _specialised_source(rnn, (0, 1, 2), args)
    assert "plain_matmul_left(b_t5, h, Wh)" in src
    _check(rnn, (0, 1, 2), args)


@pytest.mark.parametrize("bias", [(5,), (1, 5)])
def test_a_bias_of_one_row_is_summed_by_the_helper_a_vector_inline(bias):
    args = _rnn_args(bias=bias)
    src = _specialised_source(rnn, (0, 1, 2), args)
    if bias == (5,):
        assert "bb += _rt.add_reduce(b_t5, 0)" in src
    else:  # (of a shape with a 1: not proven, nor added in place)
        assert "bb = bb + _rt.unbroadcast(b_t5, b)" in src
    _check(rnn, (0, 1, 2), args)


def test_a_batch_of_one_keeps_the_helpers():
    args = _rnn_args(batch=1)
    assert "plain_matmul_left(b_t5, h, Wh)" in _specialised_source(rnn, (0, 1, 2), args)
    _check(rnn, (0, 1, 2), args)


# -- other ranks, numbers and 0-d arrays -------------------------------------------------------

def layer(W, b, x, s):
    return np.sum(np.tanh(x @ W + b) * s)


@pytest.mark.parametrize("x_shape", [(4, 3), (3,)])
@pytest.mark.parametrize("s", [0.5, np.array(0.5), np.float64(0.5)])
def test_a_1d_operand_numbers_and_0d_arrays(x_shape, s):
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal(x_shape),
            s]
    src = _specialised_source(layer, (0, 1, 2), args)
    if len(x_shape) == 2 and type(s) is float:
        assert "@ W.T" in src and "_rt.add_reduce(" in src
    elif len(x_shape) == 2:  # (a numpy number or a 0-d array: its product is not known)
        assert "plain_matmul_left(" in src
    else:  # (a 1-d x: the product is 1-d, its cotangent too)
        assert "plain_matmul_left(" in src and "@ W.T" not in src
    _check(layer, (0, 1, 2), args)


def vector_times_matrix(W, v):
    return np.sum(np.tanh(W @ v))


def test_a_1d_right_operand_keeps_the_helpers():
    rng = np.random.default_rng(6)
    args = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    assert "plain_matmul_" in _specialised_source(vector_times_matrix, (0, 1), args)
    _check(vector_times_matrix, (0, 1), args)


def test_one_function_called_with_two_ranks_has_two_builds_both_right():
    def f(W, b, x):
        return np.sum(np.tanh(x @ W + b) ** 2)

    rng = np.random.default_rng(7)
    W, b = rng.standard_normal((3, 2)), rng.standard_normal(2)
    g = srcgrad.grad(f, wrt=(0, 1))
    for x in (rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((5, 3))):
        got = g(W, b, x)
        _same_bits(got, _unspecialised(f, (0, 1), (W, b, x)), _ordinary(f, (0, 1), (W, b, x)))
        check_grad(f, [W, b, x], wrt=(0, 1), grads=list(got))
    builds = [built for slot, made in api._CACHE[f.__code__].items() for built in made
              if getattr(slot[3], "arg_facts", ())]
    assert sorted(b.arg_facts for b in builds) == [(2, 1, 1), (2, 1, 2)]


def _count_facts(monkeypatch) -> list:
    """The arguments of each call of api.argument_facts from now on."""
    counted = []
    facts = api.argument_facts

    def counting(args):
        counted.append(args)
        return facts(args)

    monkeypatch.setattr(api, "argument_facts", counting)
    return counted


def test_a_function_without_candidates_computes_facts_once(monkeypatch):
    counted = _count_facts(monkeypatch)

    def f(x):
        return np.sum(np.tanh(x) * x)

    g = srcgrad.grad(f)
    for _ in range(3):
        assert np.allclose(g(np.ones(3)), np.tanh(1.0) + 1.0 - np.tanh(1.0) ** 2)
    assert len(counted) == 1
    assert not [slot for slot in api._CACHE[f.__code__] if getattr(slot[3], "arg_facts", ())]


def test_argument_facts():
    assert argument_facts((np.ones((2, 3)), np.ones((1, 3)), 2.0, np.array(1.0), 3)) \
        == (2, -2, "f", 0, 0)
    assert argument_facts((2.0, np.array(1.0), [np.ones(2)])) is None
    sub = np.ones(3).view(np.matrix)
    assert argument_facts((sub,)) is None


# -- the abstract values -----------------------------------------------------------------------

S0, S1 = ("s", 0, 0), ("s", 1, 0)


@pytest.mark.parametrize("a, b, want", [
    (1, S0, S0), (S0, 1, S0), (S0, S1, S0), ("?", S1, S1), (S0, "?", S0), ("nz", "?", "nz"),
    ("?", "?", "?"), (1, "?", "?"), (1, 1, 1)])
def test_broadcast_of_two_dimensions(a, b, want):
    assert R._broadcast_dim(a, b) == want


def test_join_forgets_what_differs():
    a, b = R.Val("nd", (S0, 1), False), R.Val("nd", (S1, 1), False)
    assert R.join(a, b) == R.Val("nd", ("nz", 1), False)
    assert R.join(a, R.Val("nd", (S0, "?"), False)) == R.Val("nd", (S0, "?"), False)
    assert R.join(a, R.NONE) == a._replace(none=True)
    assert R.join(a, R.Val("nd", (S0,), False)) == R.TOP
    assert R.join(a, R.FLOAT) == R.TOP


def test_arithmetic_of_a_0d_result_is_not_an_array():
    assert R.arith(R.FLOAT, R.Val("nd", (), False)) == R.TOP  # (a numpy scalar)
    assert R.arith(R.FLOAT, R.Val("nd", (S0,), False)) == R.Val("nd", (S0,), False)
    assert R.arith(R.Val("nd", (S0,), True), R.FLOAT) == R.TOP  # (it may be None)


def test_a_name_taking_another_rank_in_a_loop_proves_nothing():
    def f(W, x):
        h = x
        for i in range(2):
            h = np.tanh(h @ W)
            h = h[0]
        return np.sum(h)

    rng = np.random.default_rng(8)
    args = [rng.standard_normal((3, 3)), rng.standard_normal((2, 2, 3))]
    # (h: 3-d, then 2-d, then 1-d: no rank to rely on; x @ W with a 3-d x is a batch)
    assert "plain_matmul_left(" in _specialised_source(f, (0, 1), args)
    _check(f, (0, 1), args)


def mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_mlp_under_a_mean_squared_error_runs_its_products_inline(dtype):
    rng = np.random.default_rng(10)
    args = [rng.standard_normal(s).astype(dtype) * 0.3
            for s in ((6, 5), (5,), (5, 3), (3,), (4, 6), (4, 3))]
    src = _specialised_source(mlp, (0, 1, 2, 3), args)
    for line in ("bb2 = _rt.add_reduce(b_t4, 0)", "bh = b_t4 @ W2.T", "bW2 = h.T @ b_t4",
                 "bb1 = _rt.add_reduce(b_t2, 0)", "bW1 = x.T @ b_t2"):
        assert line in src
    _check(mlp, (0, 1, 2, 3), args, fd=dtype is np.float64)


def test_a_name_bound_in_a_loop_over_a_list_is_unknown():
    def f(W, x, scales):
        s = 1.0
        for s in scales:
            x = x * s
        return np.sum(np.tanh(x @ W) * s)

    rng = np.random.default_rng(11)
    for scales in ([2.0, np.ones((2, 1, 1))], [0.5]):
        args = [rng.standard_normal((3, 2)), rng.standard_normal((4, 3)), scales]
        src = _specialised_source(f, (0, 1), args)
        assert "plain_matmul_left(" in src  # (s, then x: anything)
        got = srcgrad.grad(f, wrt=(0, 1))(*args)
        _same_bits(got, _unspecialised(f, (0, 1), args), _ordinary(f, (0, 1), args))


_SCALE = np.array([1.0, 2.0, 3.0])


def test_a_gradient_whose_build_proves_nothing_stops_computing_facts(monkeypatch):
    """(the tutorial's while loop: its one reduction is against a global of unknown rank)"""
    counted = _count_facts(monkeypatch)

    def f(x):
        y = x * 2
        while np.linalg.norm(y) < 100:
            y = y * 2
        return np.sum(y * _SCALE)

    g = srcgrad.grad(f)
    x = np.array([0.3, -1.2, 0.5])
    for _ in range(3):
        assert np.array_equal(g(x), _unspecialised(f, (0,), (x,))[0])
    assert len(counted) == 1


def test_a_gradient_keeps_computing_facts_after_a_dimension_of_1():
    g = srcgrad.grad(rnn, wrt=(0, 1, 2))
    for args in (_rnn_args(batch=1), _rnn_args()):
        got = g(*args)
        _same_bits(got, _unspecialised(rnn, (0, 1, 2), args), _ordinary(rnn, (0, 1, 2), args))
    builds = [built for slot, made in api._CACHE[rnn.__code__].items() for built in made
              if getattr(slot[3], "arg_facts", ())]
    assert any(b.rank_rewrites for b in builds) and any(not b.rank_rewrites for b in builds)


def shifted_sum(x, c):
    return np.sum(x * 2.0 + c)


def test_a_probe_of_a_probe_has_the_broadcast_shape():
    """``x * 2.0`` is probed (only its shape is read), then ``+ c``: the sum's shape is x's,
    not c's, so c's cotangent is summed over the rows (a probe taken for a number gave
    ``bc = b_t2``, a (5, 4) gradient for a (4,) c)."""
    rng = np.random.default_rng(13)
    args = [rng.standard_normal((5, 4)), rng.standard_normal(4)]
    src = _specialised_source(shifted_sum, (0, 1), args)
    assert "_rt.probe(add, _t1, c)" in src and "bc = _rt.add_reduce(b_t2, 0)" in src
    _check(shifted_sum, (0, 1), args)


def test_a_probe_in_arithmetic_is_unknown():
    probe = R.Val("probe", (S0,), False)
    assert R.arith(probe, R.Val("nd", (S1,), False)) == R.TOP
    assert R.arith(probe, R.FLOAT) == R.TOP


def branchy(W, h, k):
    for i in range(3):
        if i < k:
            h = np.tanh(h @ W)
        else:
            h = h * 0.5
    return np.sum(h * h)


def step(W, h):
    if np.sum(h) > 0.0:
        h = np.tanh(h @ W)
    return h * 0.5


def calls_inner(W, h):
    for i in range(2):
        h = step(W, h)
    return np.sum(h * h)


@pytest.mark.parametrize("k", [0, 2, 3])
def test_a_branch_in_the_loop_restores_each_name_from_the_tape(k):
    rng = np.random.default_rng(14)
    args = [rng.standard_normal((3, 3)) * 0.5, rng.standard_normal((4, 3)), k]
    assert "bh = b_t1 @ W.T" in _specialised_source(branchy, (0, 1), args)
    _check(branchy, (0, 1), args)
    _check(calls_inner, (0, 1), args[:2])
