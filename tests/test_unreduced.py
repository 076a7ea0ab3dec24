"""grad's backward sweeps do not sum an adjoint down that is summed down again, nor the
cotangent of a matrix product that its rules sum down themselves (transforms/unreduced.py,
issue 11); the forward sweep then stops saving the shapes those reductions read. Before/after
tests of the pass, of the matmul rules it relies on, and end to end against the ordinary
sweeps (which keep every reduction), finite differences and second derivatives."""
import textwrap

import gast
import numpy as np
import pytest
from fdcheck import check_grad

import srcgrad
from srcgrad import runtime
from srcgrad.api import grad_seed_of, get_entry_adjoint, get_lean_adjoint
from srcgrad.codegen import to_source
from srcgrad.rules.operators import matmul_left, matmul_right
from srcgrad.transforms.unreduced import fold_reductions


def _fold(src: str, products=frozenset({"matmul_left", "matmul_right"})) -> tuple[str, set]:
    stmts = gast.parse(textwrap.dedent(src)).body
    out, shapes = fold_reductions(stmts, "_rt", set(products), lambda v: "b" + v)
    return to_source(gast.Module(body=out, type_ignores=[])).strip(), shapes


# -- the pass ---------------------------------------------------------------------------------

def test_a_sum_of_products_passes_its_cotangent_on_unreduced():
    out, shapes = _fold("""
        b_t4 = _rt.unbroadcast(b_t5, _t4)
        bb = bb + _rt.unbroadcast(b_t5, b)
        b_t1 = _rt.unbroadcast(b_t4, _t1)
        b_t3 = _rt.unbroadcast(b_t4, _t3)
        bWx = _rt.add(bWx, matmul_right(b_t3, _t2, Wx))
        bh = matmul_left(b_t1, h, Wh)
        bWh = _rt.add(bWh, matmul_right(b_t1, h, Wh))
    """)
    assert out.splitlines() == [
        "bb = bb + _rt.unbroadcast(b_t5, b)",
        "bWx = _rt.add(bWx, matmul_right(b_t5, _t2, Wx))",
        "bh = matmul_left(b_t5, h, Wh)",
        "bWh = _rt.add(bWh, matmul_right(b_t5, h, Wh))"]
    assert shapes == {"_t1", "_t3", "_t4"}


def test_inside_a_loop_body():
    out, _ = _fold("""
        for _k in range(n):
            b_t1 = _rt.unbroadcast(b_t2, _t1)
            bh = matmul_left(b_t1, h, W)
            h = _tape.pop()
    """)
    assert "unbroadcast" not in out and "matmul_left(b_t2, h, W)" in out


@pytest.mark.parametrize("use", [
    "bz = b_t1 * 2",                    # arithmetic needs the reduced shape
    "bz = f(b_t1, x, y)",               # an unknown call
    "bz = matmul_left(x, b_t1, y)",     # not the cotangent argument
    "bz = _rt.unbroadcast(-b_t1, x)",   # (a difference's second operand)
    "bz = matmul_left(b_t1, x, y, z)",
    "bz = b_t1"])
def test_other_reads_keep_the_reduction(use):
    out, shapes = _fold(f"""
        b_t1 = _rt.unbroadcast(g, _t1)
        {use}
    """)
    assert "b_t1 = _rt.unbroadcast(g, _t1)" in out and not shapes


def test_reads_before_elsewhere_or_across_iterations_keep_the_reduction():
    for src in ["""
            bz = matmul_left(b_t1, x, y)
            b_t1 = _rt.unbroadcast(g, _t1)
        """, """
            b_t1 = _rt.unbroadcast(g, _t1)
            if c:
                bz = matmul_left(b_t1, x, y)
            bw = matmul_left(b_t1, x, y)
            b_t1 = _rt.unbroadcast(g, _t1)
        """, """
            for _k in range(n):
                bz = matmul_left(b_t1, x, y)
                b_t1 = _rt.unbroadcast(g, _t1)
        """, """
            if c:
                b_t1 = _rt.unbroadcast(g, _t1)
            bz = matmul_left(b_t1, x, y)
        """]:
        out, shapes = _fold(src)
        assert "b_t1 = _rt.unbroadcast(g, _t1)" in out and not shapes, src


def test_the_cotangent_passed_on_must_keep_its_value():
    out, _ = _fold("""
        b_t1 = _rt.unbroadcast(g, _t1)
        g = g * 2
        bz = matmul_left(b_t1, x, y)
    """)
    assert "b_t1 = _rt.unbroadcast(g, _t1)" in out


def test_only_an_adjoint_reduced_to_its_own_value_and_named_arguments():
    for src in ["b_t1 = _rt.unbroadcast(g, _t2)", "b_t1 = _rt.unbroadcast(g * 2, _t1)",
                "b_t1 = _rt.unbroadcast(g, y[0])", "b_t1 = other.unbroadcast(g, _t1)",
                "bz = _rt.unbroadcast(g, _t1)"]:
        out, _ = _fold(src + "\nbw = matmul_left(b_t1, x, y)\nbv = matmul_left(bz, x, y)")
        assert src in out, src


def test_a_product_rule_by_another_name_is_not_known():
    out, _ = _fold("""
        b_t1 = _rt.unbroadcast(g, _t1)
        bz = matmul_left(b_t1, x, y)
    """, products=set())
    assert "unbroadcast" in out


# -- the matmul rules take a larger cotangent -------------------------------------------------

PRODUCTS = [  # x shape, y shape, the shape the product was broadcast to
    ((1, 3), (3, 4), (5, 4)),
    ((5, 3), (3, 1), (5, 4)),
    ((2, 5, 3), (3, 4), (6, 2, 5, 4)),
    ((3,), (3, 4), (5, 4)),
    ((5, 3), (3,), (2, 5)),
    ((3,), (3,), (4,)),
    ((1, 1, 3), (4, 3, 2), (2, 4, 5, 2)),
    ((5, 3), (3, 4), (5, 4)),
]


@pytest.mark.parametrize("xs, ys, gs", PRODUCTS)
def test_matmul_rules_sum_a_larger_cotangent_down(xs, ys, gs):
    rng = np.random.default_rng(0)
    x, y, g = rng.standard_normal(xs), rng.standard_normal(ys), rng.standard_normal(gs)
    reduced = runtime.unbroadcast(g, np.matmul(x, y))
    for rule in (matmul_left, matmul_right):
        got, want = rule(g, x, y), rule(reduced, x, y)
        assert np.shape(got) == np.shape(want)
        assert np.allclose(got, want, rtol=1e-13, atol=1e-13)
    # the adjoint of x (of y) in <g, broadcast(x @ y)>, by finite differences along ones
    eps = 1e-6
    for i, rule in enumerate((matmul_left, matmul_right)):
        args = [x, y]
        v = np.ones(np.shape(args[i]))
        plus, minus = list(args), list(args)
        plus[i], minus[i] = args[i] + eps * v, args[i] - eps * v
        numeric = (np.sum(g * np.matmul(*plus)) - np.sum(g * np.matmul(*minus))) / (2 * eps)
        assert np.isclose(np.sum(rule(g, x, y) * v), numeric, rtol=1e-6)


def test_matmul_rules_keep_float32():
    x = np.ones((1, 3), np.float32)
    y = np.ones((3, 2), np.float32)
    g = np.ones((4, 2), np.float32)
    assert matmul_left(g, x, y).dtype == np.float32 == matmul_right(g, x, y).dtype


# -- end to end -------------------------------------------------------------------------------

def _ordinary(f, wrt, *args):
    adj = get_entry_adjoint(f, wrt)
    value, saved = adj.fwd(*args)
    return adj.bwd(saved, grad_seed_of(f, value))


def _close_to_ordinary(f, args, wrt, exact=False):
    """``grad(f)``: the ordinary sweeps' gradients (to the last bit where nothing is
    broadcast, else up to the order of a reduction's additions), arguments unwritten, no
    gradient sharing memory with an argument or another gradient."""
    before = [np.copy(a) for a in args]
    got = srcgrad.grad(f, wrt=wrt)(*args)
    want = _ordinary(f, wrt, *args)
    for a, b in zip(args, before):
        assert np.array_equal(a, b), "an argument was written"
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype
        if exact:
            assert np.array_equal(g, w)
        else:
            assert np.allclose(g, w, rtol=1e-12, atol=1e-14)
        for other in list(args) + [h for h in got if h is not g]:
            if isinstance(g, np.ndarray) and isinstance(other, np.ndarray):
                assert not np.shares_memory(g, other), "a gradient shares memory"
    return got


def rnn(Wh, Wx, b, xs, h0):
    h = h0
    for t in range(len(xs)):
        h = np.tanh(h @ Wh + xs[t] @ Wx + b)
    return np.sum(h * h)


def _rnn_args(steps, batch=4, rng=None, dtype=np.float64):
    rng = rng or np.random.default_rng(7)
    return tuple(a.astype(dtype) for a in (
        rng.standard_normal((5, 5)) * 0.3, rng.standard_normal((3, 5)) * 0.3,
        rng.standard_normal(5) * 0.1, rng.standard_normal((steps, batch, 3)),
        rng.standard_normal((batch, 5)) * 0.1))


def test_the_rnn_saves_no_shapes_per_step():
    source = get_lean_adjoint(rnn, (0, 1, 2), value=False).source
    loop = source[source.index("for t in"):source.index("return", source.index("for t in"))]
    assert "shape_like" not in loop and loop.count("_tape.push") == 2
    assert "matmul_left(b_t5, h, Wh)" in source
    assert "shape_like(_t1)" in get_entry_adjoint(rnn, (0, 1, 2)).source


@pytest.mark.parametrize("steps", [0, 1, 2, 6])
def test_rnn_gradients(steps):
    args = _rnn_args(steps)
    _close_to_ordinary(rnn, args, (0, 1, 2, 4), exact=True)
    check_grad(rnn, args, wrt=(0, 1, 2, 4))


def test_rnn_float32():
    args = _rnn_args(3, dtype=np.float32)
    got = _close_to_ordinary(rnn, args, (0, 1, 2), exact=True)
    assert all(g.dtype == np.float32 for g in got)


def test_rnn_broadcasting_state_and_unit_bias():
    rng = np.random.default_rng(3)
    Wh, Wx, _, xs, _ = _rnn_args(4, rng=rng)
    h0 = rng.standard_normal((1, 5))  # one row, broadcast against the batch at the first step
    b = np.array([0.2])                # a (1,) bias
    args = (Wh, Wx, b, xs, h0)
    _close_to_ordinary(rnn, args, (0, 1, 2, 4))
    check_grad(rnn, args, wrt=(0, 1, 2, 4))


def test_rnn_views_of_inputs():
    Wh, Wx, b, xs, h0 = _rnn_args(3)
    args = (Wh.T, Wx, b, xs[:, ::2], h0[::2])  # a transposed and strided views
    _close_to_ordinary(rnn, args, (0, 1, 2, 4), exact=True)


def broadcast_products(x, W, c, d):
    return np.sum(np.sin((x @ W + c) + d))


@pytest.mark.parametrize("shapes", [
    ((1, 3), (3, 4), (5, 4), (4,)),      # the product's one row broadcast over five
    ((3,), (3, 4), (5, 4), (2, 1, 1)),   # a vector's product, batch axes added after
    ((2, 5, 3), (3, 4), (4,), (3, 1, 1, 1)),
    ((5, 3), (3, 1), (5, 4), (1,)),
    ((3,), (3,), (4,), (2, 4)),          # a number broadcast to a matrix
])
def test_products_broadcast_in_two_stages(shapes):
    rng = np.random.default_rng(11)
    args = tuple(rng.standard_normal(s) for s in shapes)
    _close_to_ordinary(broadcast_products, args, (0, 1, 2, 3))
    check_grad(broadcast_products, args, wrt=(0, 1, 2, 3))


def with_floats(x, W):
    return np.sum((x @ W + 1.5) * 2.0 + 0.5)


def test_python_floats_and_zero_d_results():
    rng = np.random.default_rng(5)
    x, W = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    _close_to_ordinary(with_floats, (x, W), (0, 1), exact=True)
    v = rng.standard_normal(3)
    _close_to_ordinary(with_floats, (v, v), (0, 1), exact=True)  # one array passed twice


def reused(W, x, n, m):
    h = x
    for i in range(n):
        for j in range(m):
            h = np.tanh(h @ W + x)
    return np.sum(h * x) + np.sum(x @ W + x)


@pytest.mark.parametrize("n, m", [(0, 0), (1, 0), (0, 2), (1, 1), (2, 3)])
def test_nested_loops_and_an_input_used_in_every_iteration_and_after(n, m):
    rng = np.random.default_rng(9)
    W, x = rng.standard_normal((4, 4)) * 0.4, rng.standard_normal((2, 4))
    _close_to_ordinary(reused, (W, x, n, m), (0, 1), exact=True)
    check_grad(reused, (W, x, n, m), wrt=(0, 1))


def returned_twice(x, W):
    y = x @ W + x
    return np.sum(y * y) + np.sum(y @ W.T + x)


def test_an_adjoint_read_twice():
    rng = np.random.default_rng(4)
    x, W = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    _close_to_ordinary(returned_twice, (x, W), (0, 1), exact=True)
    _close_to_ordinary(returned_twice, (W, W), (0, 1), exact=True)


def test_grad_of_grad_hessian_and_hvp_differentiate_the_ordinary_sweeps():
    rng = np.random.default_rng(8)
    Wh, Wx, b, xs, h0 = _rnn_args(2, batch=2, rng=rng)

    def of_wh(W):
        return rnn(W, Wx, b, xs, h0)

    inner = srcgrad.grad(of_wh)
    check_grad(lambda W: np.sum(inner(W) * W), (Wh,), rtol=1e-5)
    h = srcgrad.hessian(of_wh)(Wh)
    v = rng.standard_normal(Wh.shape)
    eps = 1e-6
    numeric = (inner(Wh + eps * v) - inner(Wh - eps * v)) / (2 * eps)
    assert np.allclose(np.tensordot(h, v, axes=2), numeric, rtol=1e-5, atol=1e-7)
    assert np.allclose(srcgrad.hvp(of_wh, (Wh,), (v,)), numeric, rtol=1e-5, atol=1e-7)


def test_value_and_grad_and_vjp_keep_the_ordinary_sweeps():
    args = _rnn_args(3)
    value, grads = srcgrad.value_and_grad(rnn, wrt=(0, 1, 2))(*args)
    assert value == rnn(*args)
    for g, w in zip(grads, _ordinary(rnn, (0, 1, 2), *args)):
        assert np.array_equal(g, w)
    Wh, Wx, b, xs, h0 = args

    def of_wh(W):
        return rnn(W, Wx, b, xs, h0)

    out, pullback = srcgrad.vjp(of_wh, Wh)
    assert out == rnn(*args)
    assert np.array_equal(pullback(1.0)[0], _ordinary(rnn, (0,), *args)[0])
