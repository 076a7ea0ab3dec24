"""grad's lean sweeps keep the cotangent of a whole-array sum or mean a number where only
elementwise products, quotients and negations consume it (transforms/scalar_seed.py, issue
11): ``_rt.seed_scalar`` instead of the spread, each consumer's chain wrapped in
``_rt.shaped_like``. The gradients must be the same bits as the same lean sweeps without the
pass (which spread the seed), close to the ordinary (non-lean) sweeps to rounding, and right
against finite differences and torch."""
import numpy as np
import pytest
from fdcheck import check_grad

import srcgrad
from srcgrad import api, runtime
from srcgrad.api import argument_facts, get_lean_adjoint
from srcgrad.transforms import reverse

F8, F4 = np.float64, np.float32


# -- functions -----------------------------------------------------------------------------------
def mse(x, w):
    return np.mean((x * w - 1.0) ** 2)


def summed(x, w):
    return np.sum(x * w)


def summed_method(x, w):
    return (x * w).sum()


def mean_method(x, w):
    return (np.tanh(x) * w).mean()


def quotient(x, w):
    return np.mean(w / (x * x + 1.0))


def negated(x, w):
    return np.sum(-(x * w) * 0.5)


def mean_twice(x, w):
    m = np.mean(x * w)
    return m * m + m


def two_reductions(x, w):
    return np.sum(x * w) / 3.0 + np.mean(np.tanh(x) * x)


def axis_given(x, w):
    return np.sum(np.mean(x * w, axis=0) ** 2)


def keepdims(x, w):
    return np.sum(np.sum(x * w, axis=-1, keepdims=True) * 2.0)


def bare_copy(x, w):
    return np.mean(x - w)  # (bx = b_t: nothing to gain, kept as it was)


def to_matmul(x, w):
    return np.mean((x @ w) ** 2)


def mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def divided(x, w):
    return np.mean(x / (w + 3.0))  # (w's cotangent: -(g * x) / d ** 2, a power beside)


def scaled_sum(x, w):
    return np.sum(np.exp(x) * w) / 7.0  # (a seed of one / 7: the products are not skipped)


def cubed(x, w):
    return np.mean(x ** 3 * w)


def through_a_call(x, w):
    return np.sum(np.abs(x) * w)  # (np.sign(x) in the chain: left spread)


def in_loop(x, w):
    s = 0.0
    for _ in range(3):
        s = s + np.mean(x * w)
    return s


PAIRS = [mse, summed, summed_method, mean_method, quotient, negated, mean_twice,
         two_reductions, axis_given, keepdims, bare_copy, in_loop, divided, scaled_sum, cubed,
         through_a_call]
# shapes of (x, w): equal, a row broadcast, a column against a row, dimensions of 1, 3-d
SHAPES = [((5,), (5,)), ((4, 3), (3,)), ((4, 1), (1, 3)), ((1, 6), (1, 6)),
          ((2, 3, 4), (4,)), ((3, 2), (3, 2))]


# -- oracles ------------------------------------------------------------------------------------
def _lean_source(fn, wrt, args) -> str:
    return get_lean_adjoint(fn, wrt, False, argument_facts(tuple(args))).source


def _grad(fn, wrt, args):
    got = srcgrad.grad(fn, wrt=wrt)(*args)
    return got if isinstance(got, tuple) else (got,)


def _without_pass(fn, wrt, args, monkeypatch):
    """grad's gradients from lean sweeps built without scalar_seed.py (the seed spread)."""
    with monkeypatch.context() as m:
        m.setattr(reverse, "keep_scalar_seeds", lambda stmts, *rest: stmts)
        api._CACHE.clear()
        try:
            return _grad(fn, wrt, args)
        finally:
            api._CACHE.clear()


def _plain(fn, wrt, args):
    """The ordinary sweeps' gradients (EntryAdjoint: no lean pass at all)."""
    fwd, bwd = api.get_entry_adjoint(fn, wrt).functions_for(fn)
    value, saved = fwd(*args)
    return bwd(saved, api.grad_seed_of(fn, value))


def _same_bits(got, want):
    for a, b in zip(got, want, strict=True):
        assert type(a) is type(b) and np.shape(a) == np.shape(b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
        assert np.array_equal(a, b), np.max(np.abs(np.asarray(a) - np.asarray(b)))


def _close(got, want, dtype):
    rtol, atol = (1e-13, 1e-15) if dtype is F8 else (2e-6, 1e-7)
    for a, b in zip(got, want, strict=True):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _args(shapes, dtypes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(d) for s, d in zip(shapes, dtypes)]


def _check(fn, args, monkeypatch, wrt=(0, 1)):
    before = [np.copy(a) for a in args]
    got = _grad(fn, wrt, args)
    for a, b in zip(args, before):
        assert np.array_equal(a, b)  # (nothing written into an argument)
    _same_bits(got, _without_pass(fn, wrt, args, monkeypatch))
    dtype = F4 if all(np.asarray(g).dtype == F4 for g in got) else F8
    _close(got, _plain(fn, wrt, args), dtype)
    if dtype is F8:
        check_grad(fn, list(args), wrt=wrt, grads=list(got))
    for g, a in zip(got, [args[i] for i in wrt]):
        assert np.shape(g) == np.shape(a)
    return got


# -- gradients ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("fn", PAIRS, ids=lambda f: f.__name__)
def test_float64(fn, shapes, monkeypatch):
    _check(fn, _args(shapes, (F8, F8)), monkeypatch)


@pytest.mark.parametrize("shapes", SHAPES[:4], ids=str)
@pytest.mark.parametrize("fn", PAIRS, ids=lambda f: f.__name__)
def test_float32(fn, shapes, monkeypatch):
    got = _check(fn, _args(shapes, (F4, F4)), monkeypatch)
    assert all(g.dtype == F4 for g in got)


@pytest.mark.parametrize("fn", [mse, summed, quotient, mean_twice], ids=lambda f: f.__name__)
def test_mixed_precision_and_integers(fn, monkeypatch):
    # a float32 x against float64 weights: the spread's dtype is the float64 seed's
    _check(fn, _args(((4, 3), (3,)), (F4, F8)), monkeypatch)
    # an int x: only w is differentiated
    x = np.arange(12).reshape(4, 3) - 5
    _check(fn, [x, _args(((3,),), (F8,))[0]], monkeypatch, wrt=(1,))


@pytest.mark.parametrize("dtype", [F8, F4])
@pytest.mark.parametrize("shapes", [((4, 3), (3, 5)), ((1, 3), (3, 5)), ((4, 1), (1, 1))],
                         ids=str)
def test_a_mean_of_a_matrix_product(shapes, dtype, monkeypatch):
    _check(to_matmul, _args(shapes, (dtype, dtype)), monkeypatch)


def test_zero_d_and_scalar_inputs(monkeypatch):
    _check(mse, [np.array(0.7), np.array(-1.3)], monkeypatch)
    _check(summed, [np.array(0.7), 2.5], monkeypatch, wrt=(0,))


# -- what is rewritten --------------------------------------------------------------------------
def _mlp_args(dtype=F8):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((12, 8)) * 0.3, rng.standard_normal(8) * 0.1,
            rng.standard_normal((8, 4)) * 0.3, rng.standard_normal(4) * 0.1,
            rng.standard_normal((6, 12)), rng.standard_normal((6, 4))]
    return [a.astype(dtype) for a in args]


@pytest.mark.parametrize("dtype", [F8, F4])
def test_the_mlp_mean_seed_is_a_number(dtype, monkeypatch):
    args = _mlp_args(dtype)
    src = _lean_source(mlp, (0, 1, 2, 3), args)
    assert "_rt.seed_scalar(b_t6, _t5, _t4) / reduced_count(_t5, _t6)" in src
    assert "b_t4 = _rt.shaped_like(b_t5 * 2 * _t4, _t5)" in src
    assert "expand_to(" not in src.split("_bwd(")[1]
    # the products proven as before (rank_facts.py models the two helpers)
    assert "bh = b_t4 @ W2.T" in src and "bW2 = h.T @ b_t4" in src
    got = _grad(mlp, (0, 1, 2, 3), args)
    _same_bits(got, _without_pass(mlp, (0, 1, 2, 3), args, monkeypatch))
    _close(got, _plain(mlp, (0, 1, 2, 3), args), dtype)
    assert all(g.dtype == dtype for g in got)
    if dtype is F8:
        check_grad(mlp, args, wrt=(0, 1, 2, 3), grads=list(got))


def test_a_dimension_of_one_reaches_the_matmul_rule(monkeypatch):
    # one row: the products are not proven plain, the matmul rules get the shaped cotangent
    args = _mlp_args()
    args[4], args[5] = args[4][:1], args[5][:1]
    src = _lean_source(mlp, (0, 1, 2, 3), args)
    assert "_rt.seed_scalar(" in src and "plain_matmul_left(b_t4" in src
    got = _grad(mlp, (0, 1, 2, 3), args)
    _same_bits(got, _without_pass(mlp, (0, 1, 2, 3), args, monkeypatch))
    check_grad(mlp, args, wrt=(0, 1, 2, 3), grads=list(got))


def test_a_row_consumer_is_broadcast_back():
    x, w = _args(((4, 3), (3,)), (F8, F8))
    src = _lean_source(summed, (0, 1), [x, w])
    assert "bx = _rt.shaped_like(b_t1 * w, _t1)" in src
    gx, gw = _grad(summed, (0, 1), [x, w])
    assert gx.shape == (4, 3) and np.array_equal(gx, np.broadcast_to(w, (4, 3)))
    assert gx.flags.writeable and gx.flags.c_contiguous  # (a new array, like spread * w)
    assert np.array_equal(gw, x.sum(axis=0))


def row_weighted(x, W, v):
    return np.sum((x @ W) * v)


@pytest.mark.parametrize("rows", [1, 5])
@pytest.mark.parametrize("fn", [row_weighted, lambda x, W, v: np.mean(v * (x @ W)) * 2.0],
                         ids=["sum", "mean"])
def test_a_row_consumer_reaching_a_matmul_is_broadcast_first(fn, rows, monkeypatch):
    # the seed times a row v is a row: shaped_like makes it the product's shape before the
    # matmul's rules, which would otherwise make a gradient of the wrong shape
    x, W, v = _args(((rows, 4), (4, 3), (3,)), (F8, F8, F8))
    _check(fn, [x, W, v], monkeypatch, wrt=(0, 1, 2))


@pytest.mark.parametrize("fn", [axis_given, keepdims], ids=lambda f: f.__name__)
def test_a_reduction_along_an_axis_stays_spread(fn):
    # the outer whole-array sum's cotangent is a number, the inner one's is spread
    src = _lean_source(fn, (0, 1), _args(((4, 3), (3,)), (F8, F8)))
    assert "b_t3 = _rt.seed_scalar(b_t4, _t3" in src
    assert "b_t1 = expand_to(b_t2, _t1, axis=" in src


def test_a_copied_cotangent_stays_spread():
    src = _lean_source(bare_copy, (0, 1), _args(((4, 3), (3,)), (F8, F8)))
    assert "seed_scalar" not in src and "shaped_like" not in src


def test_a_gradient_of_a_sum_itself_stays_spread():
    def f(x):
        return np.sum(x) + np.mean(x * 2.0)
    x = _args(((4, 3),), (F8,))[0]
    src = _lean_source(f, (0,), [x])
    assert "expand_to(b_t1, x))" in src and "_rt.seed_scalar(" in src
    g = srcgrad.grad(f)(x)
    assert np.array_equal(g, np.full((4, 3), 1.0 + 2.0 / 12))


def test_a_second_derivative_is_untouched():
    # sweeps differentiated again are not grad's lean ones: no seed kept as a number there
    def f(x):
        return np.mean(x ** 3)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(srcgrad.grad(lambda v: np.sum(srcgrad.grad(f)(v)))(x),
                               6 * x / 3, rtol=1e-14)
    assert "seed_scalar" not in api.get_entry_adjoint(f, (0,)).source


# -- the runtime helpers -------------------------------------------------------------------------
def test_seed_scalar_gives_the_number_only_where_it_is_the_same():
    x = np.ones((3, 2))
    g = np.array(1.0)
    assert runtime.seed_scalar(g, x, x, 2, 2.0, np.float32(1)) is g
    s = runtime.seed_scalar(1.0, x)
    assert type(s) is np.ndarray and s.ndim == 0 and s.dtype == F8
    assert runtime.seed_scalar(np.float32(2), x) == np.float32(2)
    for g, operands in [(np.array(1.0), (np.array([1, 2], dtype=object),)),  # object dtype
                        (np.array(1.0), (np.ones(2, np.complex128),)),        # complex
                        (np.array(1.0), (np.ones(2, np.float16),)),           # float16
                        (np.array(1.0), ([1.0, 2.0],)),                       # a list
                        (np.array(1 + 0j), ()), (np.array(1, np.int64), ()),  # the number's
                        (np.ones(1), ())]:                                    # not 0-d
        spread = runtime.seed_scalar(g, x, *operands)
        assert spread.shape == x.shape and np.array_equal(spread, np.broadcast_to(g, x.shape))
    assert runtime.seed_scalar(np.array(1.0), [[1.0, 2.0]]).shape == (1, 2)  # (not an ndarray)


def test_shaped_like():
    x = np.zeros((2, 3))
    r = np.arange(6.0).reshape(2, 3)
    assert runtime.shaped_like(r, x) is r
    row = runtime.shaped_like(np.arange(3.0), x)
    assert row.shape == (2, 3) and row.flags.writeable and np.array_equal(row[1], [0, 1, 2])
    big = np.ones((4, 2, 3))
    assert runtime.shaped_like(big, x) is big
    n = runtime.shaped_like(np.float32(2.5), x)
    assert n.shape == (2, 3) and n.dtype == F4 and np.all(n == 2.5)
    assert runtime.shaped_like(np.float64(3.0), np.zeros(())) == 3.0
    marker = object()
    assert runtime.shaped_like(marker, x) is marker  # (computed from a spread: as it is)


# -- torch --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F8, F4])
def test_mlp_against_torch(dtype):
    torch = pytest.importorskip("torch")
    args = _mlp_args(dtype)
    got = _grad(mlp, (0, 1, 2, 3), args)
    ts = [torch.tensor(a, requires_grad=i < 4) for i, a in enumerate(args)]
    h = torch.tanh(ts[4] @ ts[0] + ts[1])
    loss = torch.mean((h @ ts[2] + ts[3] - ts[5]) ** 2)
    loss.backward()
    rtol = 1e-12 if dtype is F8 else 1e-4
    for g, t in zip(got, ts[:4]):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=rtol, atol=rtol * 1e-3)
