"""The per-step costs of a matrix product's backward code in grad's sweeps (issue 11, the RNN):
``unbroadcast`` sums a batch axis without its general bookkeeping, and the adjoint of a name
read only by arithmetic, a matrix product among it, is accumulated with ``+``, not
``_rt.add``. Each shortcut is tested where its facts hold (the path taken, the same bits as
the general code) and where they do not (the general code's answer, against an oracle). The
matmul rules keep np.matmul and np.transpose (no ``.T``: they are differentiated again, see
test_rules.test_vjps_and_jvps_are_differentiable_code); their general cases are checked here
against an oracle too."""
import numpy as np
import pytest
from fdcheck import check_grad

import srcgrad
from srcgrad import runtime
from srcgrad.api import get_entry_adjoint, get_lean_adjoint
from srcgrad.rules.operators import (
    matmul_left,
    matmul_right,
    plain_matmul_left,
    plain_matmul_right,
)


# -- the matmul rules -------------------------------------------------------------------------

class _Sub(np.ndarray):
    pass


# (x shape, y shape, g shape): the facts the shortcut needs fail in each
NOT_PLAIN = [
    ((3,), (3, 4), (4,)),  # a 1-d x: x.T @ g would be a dot product, not an outer one
    ((5, 3), (3,), (5,)),  # a 1-d y: g @ y.T would be a number
    ((2, 5, 3), (3, 4), (2, 5, 4)),  # a batch of x
    ((5, 3), (2, 3, 4), (2, 5, 4)),  # a batch of y: x's cotangent sums over it
    ((1, 3), (3, 4), (5, 4)),  # g broadcast beyond the product (grad's unreduced sums)
]


def _oracle(g, x, y, i):
    """The cotangent of operand ``i`` of ``sum(g * (x @ y))``, one element at a time by
    central differences (exact up to rounding: the product is linear in each operand)."""
    args = [np.asarray(x, float), np.asarray(y, float)]
    out = np.zeros(args[i].shape)
    for k in np.ndindex(out.shape):
        plus, minus = [a.copy() for a in args], [a.copy() for a in args]
        plus[i][k] += 1.0
        minus[i][k] -= 1.0
        out[k] = (np.sum(g * np.matmul(*plus)) - np.sum(g * np.matmul(*minus))) / 2.0
    return out


@pytest.mark.parametrize("xs, ys, gs", NOT_PLAIN)
def test_other_ranks_and_a_larger_cotangent(xs, ys, gs):
    rng = np.random.default_rng(1)
    x, y, g = rng.standard_normal(xs), rng.standard_normal(ys), rng.standard_normal(gs)
    for i, rule in enumerate((matmul_left, matmul_right)):
        got = rule(g, x, y)
        assert np.shape(got) == np.shape((x, y)[i])
        assert np.allclose(got, _oracle(g, x, y, i), rtol=1e-12, atol=1e-12)


def test_a_subclass_or_a_list_operand():
    rng = np.random.default_rng(2)
    x, y, g = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    for xx, yy in ((x.view(_Sub), y), (x, y.view(_Sub)), (x.tolist(), y), (x, y.tolist())):
        left, right = matmul_left(g, xx, yy), matmul_right(g, xx, yy)
        assert np.allclose(left, _oracle(g, x, y, 0), rtol=1e-12, atol=1e-12)
        assert np.allclose(right, _oracle(g, x, y, 1), rtol=1e-12, atol=1e-12)
    sub = matmul_left(g.view(_Sub), x, y)  # (a subclass cotangent too)
    assert np.allclose(sub, _oracle(g, x, y, 0), rtol=1e-12, atol=1e-12)


def test_tensors_still_differentiate_the_rules_again():
    """The facade's Tensors are no ndarrays: the rules keep the numpy functions they
    override, so a second derivative through a matrix product is still right."""
    import srcgrad.torch_api as torch
    rng = np.random.default_rng(3)
    xv, Wv, V = rng.standard_normal((2, 3)), rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    x = torch.tensor(xv, requires_grad=True)
    W = torch.tensor(Wv, requires_grad=True)
    (g,) = torch.autograd.grad(((x @ W) ** 3).sum(), W, create_graph=True)
    (h,) = torch.autograd.grad((g * torch.tensor(V)).sum(), x)
    p, q = xv @ Wv, xv @ V  # d/dx sum(x^T 3(xW)^2 * V) = 6 (xW)(xV) W^T + 3 (xW)^2 V^T
    np.testing.assert_allclose(g.detach().numpy(), xv.T @ (3 * p ** 2), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), 6 * p * q @ Wv.T + 3 * p ** 2 @ V.T, rtol=1e-12)


# -- plain_matmul_left/right: grad's sweeps call them in the rules' place ---------------------

def _same(got, want):
    """The same value to the bit: type, shape, dtype and elements."""
    assert type(got) is type(want) and np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.array_equal(got, want)


@pytest.mark.parametrize("xs, ys, gs", NOT_PLAIN + [
    ((5, 3), (3, 4), (5, 4)),  # plain matrices: the shortcut
    ((1, 3), (3, 4), (1, 4)),
    ((5, 1), (1, 4), (5, 4)),
    ((5, 3), (3, 1), (5, 7)),  # g broadcast along the product's size-1 axis
    ((5, 3), (3, 4), (2, 5, 4)),  # g broadcast along a leading axis
    ((3,), (3,), ()),  # two vectors: a number
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_the_plain_helpers_give_the_rules_bits(xs, ys, gs, dtype):
    """Whatever the ranks and shapes, each helper returns what its rule returns, to the bit:
    the shortcut where its facts hold, the rule itself where they do not."""
    rng = np.random.default_rng(6)
    x, y, g = (rng.standard_normal(s).astype(dtype) for s in (xs, ys, gs))
    if dtype is np.complex128:
        x, y, g = x + 1j * rng.standard_normal(xs), y - 1j, g * (1 + 2j)
    _same(plain_matmul_left(g, x, y), matmul_left(g, x, y))
    _same(plain_matmul_right(g, x, y), matmul_right(g, x, y))
    if dtype is np.complex128:
        return
    for i, helper in enumerate((plain_matmul_left, plain_matmul_right)):
        assert np.allclose(helper(g, x, y), _oracle(g, x, y, i), rtol=1e-5, atol=1e-5)


def test_a_cotangent_broadcast_over_a_one_row_product_is_summed():
    """``x`` of one row, ``g`` of five (grad passes a sum's cotangent on unreduced): ``g @
    y.T`` would run and give five rows; the rule sums ``g`` down to one row first."""
    rng = np.random.default_rng(7)
    x, y, g = rng.standard_normal((1, 3)), rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    got = plain_matmul_left(g, x, y)
    assert got.shape == (1, 3)
    assert np.allclose(got, _oracle(g, x, y, 0), rtol=1e-12, atol=1e-12)


def test_the_plain_helpers_leave_subclasses_lists_and_tensors_to_the_rules(monkeypatch):
    rng = np.random.default_rng(8)
    x, y, g = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    import srcgrad.rules.operators as operators
    calls = []
    monkeypatch.setattr(operators, "matmul_left", lambda *a: calls.append("left") or 0)
    monkeypatch.setattr(operators, "matmul_right", lambda *a: calls.append("right") or 0)
    for args in ((g, x.view(_Sub), y), (g, x, y.view(_Sub)), (g.view(_Sub), x, y),
                 (g, x.tolist(), y), (g, x, y.tolist()), (g.tolist(), x, y)):
        plain_matmul_left(*args)
        plain_matmul_right(*args)
    assert calls == ["left", "right"] * 6
    calls.clear()
    plain_matmul_left(g, x, y)  # plain matrices: no rule called
    plain_matmul_right(g, x, y)
    assert calls == []


def test_the_pass_renames_calls_of_the_rules_by_whatever_name_they_are_bound():
    import textwrap

    import gast

    from srcgrad.codegen import to_source
    from srcgrad.transforms.plain_products import plain_products
    stmts = gast.parse(textwrap.dedent("""
        for _k in range(n):
            bh = ml(g, h, W)
            bW = bW + matmul_right(g, h, W)
            z = other(g, h, W)
    """)).body
    helpers = {}

    def helper(obj, preferred):
        helpers[preferred] = obj
        return preferred
    callees = {"ml": matmul_left, "matmul_right": matmul_right, "other": [1]}  # (unhashable)
    out = plain_products(stmts, callees, helper, {matmul_left: plain_matmul_left,
                                                  matmul_right: plain_matmul_right})
    src = to_source(gast.Module(body=out, type_ignores=[]))
    assert "bh = plain_matmul_left(g, h, W)" in src
    assert "bW = bW + plain_matmul_right(g, h, W)" in src and "z = other(g, h, W)" in src
    assert helpers == {"plain_matmul_left": plain_matmul_left,
                       "plain_matmul_right": plain_matmul_right}


def test_grads_own_sweeps_call_the_plain_helpers_and_the_ordinary_ones_the_rules():
    lean = get_lean_adjoint(rnn, (0, 1, 2), value=False).source
    assert "bh = plain_matmul_left(b_t5, h, Wh)" in lean
    assert "bWh = bWh + plain_matmul_right(b_t5, h, Wh)" in lean
    assert " matmul_left(" not in lean and " matmul_right(" not in lean
    ordinary = get_entry_adjoint(rnn, (0, 1, 2)).source  # (differentiated again: the rules)
    assert "plain_matmul" not in ordinary and "matmul_left(" in ordinary


def vector_chain(W, v, U):
    """Products of 1-d and 2-d operands, a batch and a broadcast cotangent: each misses one
    fact of the shortcut."""
    h = np.tanh(v @ W)           # a 1-d x
    z = W @ h                    # a 1-d y
    B = np.stack([W, W * 0.5])   # a batch of x
    c = (B @ U).sum(axis=0)
    r = np.ones((1, 3)) @ U + c  # a one-row product, its cotangent broadcast to c's rows
    return np.sum(z * z) + np.sum(r ** 2) + np.sum(h)


def test_other_ranks_through_grads_sweeps_match_the_ordinary_ones_and_finite_differences():
    rng = np.random.default_rng(9)
    args = [rng.standard_normal((3, 3)) * 0.5, rng.standard_normal(3), rng.standard_normal((3, 3))]
    assert "plain_matmul" in get_lean_adjoint(vector_chain, (0, 1, 2), value=False).source
    got = srcgrad.grad(vector_chain, wrt=(0, 1, 2))(*args)
    adj = get_entry_adjoint(vector_chain, (0, 1, 2))
    _, saved = adj.fwd(*args)
    for a, b in zip(got, adj.bwd(saved, 1.0)):
        _same(a, b)
    check_grad(vector_chain, args, wrt=(0, 1, 2), grads=list(got))


@pytest.mark.parametrize("dtypes", [(np.float32,) * 5, (np.float32, np.float64, np.float64,
                                                       np.float64, np.float32)])
def test_the_rnn_through_the_plain_helpers_is_the_ordinary_sweeps_bits(dtypes):
    """Matrices all through (the shortcut every step), in float32 and in mixed precision."""
    args = [a.astype(d) for a, d in zip(_rnn_args(), dtypes)]
    got = srcgrad.grad(rnn, wrt=(0, 1, 2))(*args)
    adj = get_entry_adjoint(rnn, (0, 1, 2))
    _, saved = adj.fwd(*args)
    for a, b in zip(got, adj.bwd(saved, np.float32(1.0) if dtypes[0] is np.float32 else 1.0)):
        _same(a, b)


def test_second_derivatives_through_a_product_still_differentiate_the_rules():
    """A gradient differentiated again runs the ordinary sweeps (the rules), not grad's."""
    def f(W, x):
        return np.sum(np.tanh(x @ W) ** 2)

    rng = np.random.default_rng(10)
    W, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    V = rng.standard_normal((3, 2))
    gradient = srcgrad.grad(f, wrt=0)
    hv = srcgrad.grad(lambda W: np.sum(gradient(W, x) * V))(W)
    eps = 1e-6
    fd = (gradient(W + eps * V, x) - gradient(W - eps * V, x)) / (2 * eps)  # H V (symmetric)
    assert np.allclose(hv, fd, rtol=1e-6, atol=1e-8)


# -- unbroadcast ------------------------------------------------------------------------------

def test_a_batch_axis_is_summed_by_one_reduction(monkeypatch):
    rng = np.random.default_rng(4)
    g, b = rng.standard_normal((16, 64)), np.zeros(64)
    want = np.add.reduce(g, axis=(0,))
    calls = []

    def reduce(a, axis=None, **kwargs):
        calls.append((axis, kwargs))
        return np.add.reduce(a, axis=axis, **kwargs)

    monkeypatch.setattr(runtime, "_add_reduce", reduce)
    got = runtime.unbroadcast(g, b)
    assert calls == [(0, {})]  # (the general path reduces over the tuple (0,))
    assert np.array_equal(got, want) and got.dtype == want.dtype


@pytest.mark.parametrize("gs, xs", [
    ((16, 64), (1, 64)),  # a size-1 axis, not a leading one
    ((2, 3, 4), (4,)),  # two leading axes
    ((5,), ()),  # a 0-d array: a number back
    ((3, 4), (3, 1)),
    ((2, 1, 4), (3, 4)),  # (numpy would not have broadcast these: unbroadcast's answer)
])
def test_other_shapes_keep_the_general_path(gs, xs):
    g, x = np.arange(np.prod(gs), dtype=float).reshape(gs), np.zeros(xs)
    got = runtime.unbroadcast(g, x)
    if xs == (3, 4):
        assert np.shape(got) == (1, 4)
        return
    want = np.sum(g, axis=tuple(range(len(gs) - len(xs))))
    want = np.sum(want, axis=tuple(i for i, n in enumerate(xs) if n == 1), keepdims=True)
    assert np.shape(got) == xs and np.array_equal(got, want)
    assert type(got) is (np.float64 if not xs else np.ndarray)


# -- '+' for the adjoints of a product's operands ---------------------------------------------

def rnn(Wh, Wx, b, xs, h0):
    h = h0
    for t in range(6):
        h = np.tanh(h @ Wh + xs[t] @ Wx + b)
    return np.sum(h * h)


def _rnn_args():
    rng = np.random.default_rng(5)
    return (rng.standard_normal((4, 4)) * 0.3, rng.standard_normal((3, 4)) * 0.3,
            rng.standard_normal(4) * 0.1, rng.standard_normal((6, 2, 3)), np.zeros((2, 4)))


def test_the_weights_of_an_rnn_accumulate_with_plus():
    src = get_lean_adjoint(rnn, (0, 1, 2), value=False).source
    assert "bWh = bWh + plain_matmul_right(" in src and "bWx = bWx + plain_matmul_right(" in src
    assert "_rt.add(" not in src
    # the ordinary sweeps (differentiated again) keep _rt.add
    assert "bWh = _rt.add(bWh, " in get_entry_adjoint(rnn, (0, 1, 2)).source


def test_the_rnn_gradient_is_the_ordinary_sweeps_and_finite_differences():
    args = _rnn_args()
    got = srcgrad.grad(rnn, wrt=(0, 1, 2))(*args)
    adj = get_entry_adjoint(rnn, (0, 1, 2))
    _, saved = adj.fwd(*args)
    want = adj.bwd(saved, 1.0)
    for a, b in zip(got, want):
        assert a.shape == b.shape and np.array_equal(a, b)
    check_grad(rnn, list(args), wrt=(0, 1, 2), grads=list(got))


def _helper_first(W):
    return W[0] * 2.0


def _helper_second(W):
    return W[1] * 3.0


def product_and_calls(x, W):
    return np.sum(x @ W) + _helper_first(W) + _helper_second(W)


def product_and_lambda(x, W):
    scale = (lambda: W[0])()
    return np.sum(x @ W) * scale


@pytest.mark.parametrize("W", [[1.0, 2.0], (1.0, 2.0), np.array([1.0, 2.0])])
def test_an_operand_read_otherwise_keeps_rt_add(W):
    """A list read by ``@`` and passed to calls: their adjoints are lists, which ``+``
    would concatenate; ``_rt.add`` adds them item by item."""
    assert "_rt.add(bW, " in get_lean_adjoint(product_and_calls, (1,), value=False).source
    x = np.array([1.0, 1.0])
    got = srcgrad.grad(product_and_calls, wrt=1)(x, W)
    assert np.allclose(np.asarray(got, float), [3.0, 4.0])


def test_an_operand_read_in_a_nested_scope_keeps_rt_add():
    src = get_lean_adjoint(product_and_lambda, (1,), value=False).source
    assert "bW = bW + " not in src
    x, W = np.array([1.0, 2.0]), np.array([0.5, 2.0])
    check_grad(product_and_lambda, [x, W], wrt=(1,),
               grads=[srcgrad.grad(product_and_lambda, wrt=1)(x, W)])


def test_plus_keeps_float32():
    args = [a.astype(np.float32) for a in _rnn_args()]
    got = srcgrad.grad(rnn, wrt=(0, 1, 2))(*args)
    assert all(g.dtype == np.float32 for g in got)
