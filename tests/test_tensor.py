"""The Tensor facade on its own: creation, ops, gradients, grad modes, in-place, autograd API.

Gradients are checked against central finite differences (dot-product test along random
directions) and against the registry rules called directly; PyTorch comparisons live in
``test_tensor_oracle.py``.
"""
import threading
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad.rules import lookup

if hasattr(srcgrad, "Tensor"):
    torch = srcgrad
else:  # until srcgrad/__init__.py re-exports the torch-like namespace
    import srcgrad.torch_api as torch

F = torch.nn.functional


def t64(a, requires_grad=True):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


# --------------------------------------------------------------------------- creation


def test_creation_dtypes_follow_pytorch():
    assert torch.tensor([1, 2]).dtype is torch.int64
    assert torch.tensor([1.0, 2]).dtype is torch.float32
    assert torch.tensor(True).dtype is torch.bool
    assert torch.tensor(np.array([1.0])).dtype is torch.float64
    assert torch.ones(2).dtype is torch.float32 is torch.float
    assert torch.double is torch.float64 and torch.long is torch.int64
    assert torch.full((2,), 3).dtype is torch.int64
    assert torch.full((2,), 3.0).dtype is torch.float32
    assert torch.arange(3).dtype is torch.int64
    assert torch.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert torch.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert torch.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert torch.zeros(2, 3).shape == torch.Size([2, 3]) == (2, 3)
    assert torch.ones((2, 3)).shape == torch.ones([2, 3]).shape == torch.ones(2, 3).shape


def test_seeded_draws_print_what_pytorch_prints():
    torch.manual_seed(0)
    assert repr(torch.randn(2, 2)) == ("tensor([[ 1.5410, -0.2934],\n"
                                       "        [-2.1788,  0.5684]])")
    assert repr(torch.rand(3)) == "tensor([0.4556, 0.6323, 0.3489])"
    assert repr(torch.randint(0, 10, (4,))) == "tensor([6, 6, 9, 8])"


def test_like_functions_and_random_draws():
    x = torch.ones(2, 3, dtype=torch.float64)
    assert torch.zeros_like(x).dtype is torch.float64
    assert torch.ones_like(x, requires_grad=True).requires_grad
    torch.manual_seed(0)
    a = torch.randn(3)
    torch.manual_seed(0)
    assert torch.randn(3).equal(a)
    r = torch.rand(1000)
    assert 0.0 <= r.min().item() and r.max().item() < 1.0
    assert a.dtype is torch.float32 and not a.requires_grad
    assert torch.randn(2, 2, requires_grad=True).requires_grad


def test_metadata_and_conversions():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.size() == torch.Size([2, 3]) and x.size(1) == 3 and x.size(-1) == 3
    assert x.ndim == x.dim() == 2 and x.numel() == 6 and len(x) == 2
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert x.sum().item() == 21.0 and isinstance(x.sum().item(), float)
    assert float(x[0, 0]) == 1.0 and int(x[1, 2]) == 6 and bool(x[0, 0])
    assert x.numpy().shape == (2, 3)
    assert x.T.shape == (3, 2) and x.t().shape == (3, 2)
    assert x.float() is x and x.double().dtype is torch.float64
    assert x.long().dtype is torch.int64 and x.to(torch.float64).dtype is torch.float64
    assert [row.tolist() for row in x] == x.tolist()
    assert str(x.dtype) == "torch.float32" and str(x.device) == "cpu"


def test_comparisons_are_bool_tensors():
    x = torch.tensor([1.0, 2.0, 3.0])
    y = x.detach()
    assert x.eq(y).all().item() is True
    assert (x > 1.5).tolist() == [False, True, True]
    assert (x == 2).dtype is torch.bool
    assert (x != y).any().item() is False
    assert torch.equal(x, y) and x.allclose(y + 1e-9)


# --------------------------------------------------------------------------- gradients


def _numeric_directional(f, arrays, directions, eps=1e-6):
    plus = f(*[a + eps * d for a, d in zip(arrays, directions)])
    minus = f(*[a - eps * d for a, d in zip(arrays, directions)])
    return (plus - minus) / (2 * eps)


def _check_fd(program, shapes, positive=False, seed=0):
    """<grad, v> from backward against the central difference of f along v."""
    rng = np.random.default_rng(seed)
    low = 0.5 if positive else -2.0
    arrays = [rng.uniform(low, 2.0, s) for s in shapes]
    xs = [t64(a) for a in arrays]
    out = program(*xs)
    u = rng.standard_normal(tuple(out.shape))
    (out * t64(u, False)).sum().backward()
    directions = [rng.standard_normal(a.shape) for a in arrays]

    def scalar(*values):
        with torch.no_grad():
            return float((program(*[t64(v, False) for v in values]) * t64(u, False)).sum())

    numeric = _numeric_directional(scalar, arrays, directions)
    analytic = sum(float(np.sum(x.grad.numpy() * d)) for x, d in zip(xs, directions))
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)


FD_PROGRAMS = {
    "add broadcast": ([(2, 3), (3,)], False, lambda a, b: a + b * 2 - 1),
    "sub scalar both sides": ([(2, 3)], False, lambda a: 3 - a - 1),
    "mul broadcast": ([(2, 1), (1, 3)], False, lambda a, b: a * b),
    "div broadcast": ([(2, 3), (3,)], True, lambda a, b: a / b + 1 / a),
    "pow": ([(3,), (3,)], True, lambda a, b: a ** b + a ** 2 + 2 ** b),
    "matmul batch": ([(4, 2, 3), (3, 2)], False, lambda a, b: a @ b),
    "matmul vectors": ([(3,), (3, 2), (2,)], False, lambda u, m, v: (u @ m) * (m @ v).sum()),
    "unary chain": ([(3,)], True, lambda x: x.exp().log().sin().cos().tanh().sqrt()),
    "sigmoid relu abs": ([(2, 3)], False, lambda x: x.sigmoid() + (x - 0.1).relu() + x.abs()),
    "clamp": ([(2, 3)], False, lambda x: x.clamp(-0.7, 0.9) * x),
    "reductions": ([(2, 3, 4)], True, lambda x: x.sum(0) * x.mean((0, 2), keepdim=True)[0]
                   + x.prod(2).sum()),
    "max min": ([(3, 4)], False, lambda x: x.max(1).values + x.min(0)[0].sum() + x.max()),
    "norm": ([(3, 4)], False, lambda x: x.norm() + x.norm(dim=0).sum()),
    "shapes": ([(2, 3, 4)], False, lambda x: x.reshape(6, 4).t().permute(1, 0).flatten()
               .unsqueeze(0).squeeze(0).view(2, 12).transpose(0, 1)),
    "indexing": ([(4, 3)], False, lambda x: x[1:3, ::2].sum() + x[[0, 0, 3]] * x[-1]
                 + x[x > 0].sum()),
    "cat stack": ([(2, 3), (2, 3)], False, lambda a, b: torch.cat([a, b * 2], 1)
                  + torch.stack([a, b]).sum(0).repeat_interleave(2, 1)
                  if hasattr(a, "repeat_interleave") else torch.cat([a, b * 2], 0)
                  + torch.stack([a, b]).reshape(4, 3)),
    "softmaxes": ([(2, 3)], False, lambda x: x.softmax(1) * x.log_softmax(0)
                  + x.logsumexp(1, keepdim=True)),
    "losses": ([(4, 3), (4, 3)], False, lambda a, b: F.cross_entropy(a, torch.tensor([0, 2, 1, 1]))
               + F.mse_loss(a, b) + F.linear(a, b[:2], b[0, :2]).sum()),
    "where": ([(3,), (3,)], False, lambda a, b: torch.where(a > 0, a * b, b)),
}


@pytest.mark.parametrize("name", sorted(FD_PROGRAMS))
def test_gradients_match_finite_differences(name):
    shapes, positive, program = FD_PROGRAMS[name]
    _check_fd(program, shapes, positive)


@pytest.mark.parametrize("fn, method", [
    (np.exp, "exp"), (np.log, "log"), (np.sin, "sin"), (np.tanh, "tanh"), (np.sqrt, "sqrt"),
])
def test_backward_runs_the_registry_rule(fn, method):
    x = np.array([0.5, 1.5, 2.5])
    g = np.array([1.0, -2.0, 0.25])
    t = t64(x)
    out = getattr(t, method)()
    out.backward(t64(g, False))
    (expected,) = lookup(fn).vjp(g, fn(x), x)
    np.testing.assert_array_equal(t.grad.numpy(), expected)
    assert out.grad_fn.rule is lookup(fn)


def test_binary_backward_runs_the_registry_rule_with_python_scalars():
    x = np.array([[0.5, 1.5, 2.5]])
    t = t64(x)
    (t / 3.0).backward(t64(np.ones((1, 3)), False))
    expected, _ = lookup(np.divide).vjp(np.ones((1, 3)), x / 3.0, x, 3.0)
    np.testing.assert_array_equal(t.grad.numpy(), expected)


def test_repeated_indices_accumulate():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_grad_accumulates_and_zero_resets():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        (x * x).sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]
    x.grad.zero_()
    assert x.grad.tolist() == [0.0, 0.0]
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_backward_with_gradient_of_any_shape_and_retain_graph():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * x
    y.backward(torch.tensor([[1.0, 0.0], [0.5, 2.0]]), retain_graph=True)
    assert x.grad.tolist() == [[2.0, 0.0], [3.0, 16.0]]
    y.backward(torch.ones(2, 2))
    assert x.grad.tolist() == [[4.0, 4.0], [9.0, 24.0]]


def test_while_loop_doubling_gradient_is_a_power_of_two():
    torch.manual_seed(1)
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    k = 1
    while y.data.norm() < 1000:
        y = y * 2
        k += 1
    v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
    y.backward(v)
    np.testing.assert_allclose(x.grad.numpy(), v.numpy() * 2.0 ** k, rtol=1e-6)


def test_float32_gradients_stay_float32():
    x = torch.ones(2, 2, requires_grad=True)
    (x.sigmoid() * 2).sum().backward()
    assert x.grad.dtype is torch.float32


# --------------------------------------------------------------------------- grad modes


def test_no_grad_context_decorator_nesting_and_exceptions():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        assert not (x * 2).requires_grad
        with torch.enable_grad():
            assert (x * 2).requires_grad
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and torch.is_grad_enabled()
    with pytest.raises(ValueError):
        with torch.no_grad():
            raise ValueError("boom")
    assert torch.is_grad_enabled()


def test_set_grad_enabled_as_function_and_context():
    x = torch.ones(2, requires_grad=True)
    torch.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


def test_grad_mode_is_thread_local():
    seen = []
    with torch.no_grad():
        thread = threading.Thread(target=lambda: seen.append(torch.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]


def test_detach_and_data_share_memory():
    x = torch.ones(3, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    with torch.no_grad():
        d[0] = 5.0
    assert x[0].item() == 5.0
    x.data.mul_(2)
    assert x.tolist() == [10.0, 2.0, 2.0]


# --------------------------------------------------------------------------- in place


def test_inplace_on_leaf_allowed_under_no_grad():
    w = torch.ones(2, requires_grad=True)
    (w * 3).sum().backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    assert w.requires_grad and w.is_leaf
    np.testing.assert_allclose(w.numpy() if not w.requires_grad else w.detach().numpy(),
                               [0.7, 0.7], rtol=1e-6)


def test_inplace_with_history_rebases_grad_fn():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.add_(1)
    assert type(y.grad_fn).__name__ == "AddBackward0"
    y.mul_(x)
    y.sum().backward()
    # y = (2x + 1) x, dy/dx = 4x + 1
    assert x.grad.tolist() == [5.0, 9.0]


def test_inplace_ops_on_plain_tensors():
    a = torch.tensor([1.0, 2.0])
    a.add_(1).mul_(3).sub_(1, alpha=2)
    assert a.tolist() == [4.0, 7.0]
    a.fill_(2)
    assert a.tolist() == [2.0, 2.0]
    a += torch.tensor([1.0, 1.0])
    assert a.tolist() == [3.0, 3.0]


def test_view_of_leaf_inplace_is_refused():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        x[0:2].add_(1)


def test_requires_grad_flag_on_leaves():
    a = torch.ones(2)
    a.requires_grad = True
    assert a.requires_grad and a.is_leaf
    assert a.requires_grad_(False) is a and not a.requires_grad
    y = torch.ones(2, requires_grad=True) * 2
    assert not y.is_leaf and y.requires_grad_(True) is y


# --------------------------------------------------------------------------- autograd API


def test_autograd_grad_basic_and_options():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    unused = torch.ones(2, requires_grad=True)
    out = (x * w).sum()
    gx, gw, gu = torch.autograd.grad(out, [x, w, unused], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0] and gu is None
    assert x.grad is None  # returned, not accumulated
    (gx,) = torch.autograd.grad(x * w, x, grad_outputs=torch.tensor([1.0, -1.0]))
    assert gx.tolist() == [3.0, -4.0]
    (gz,) = torch.autograd.grad(out, [unused], allow_unused=True, materialize_grads=True)
    assert gz.tolist() == [0.0, 0.0]


def test_autograd_grad_with_respect_to_an_intermediate():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    out = (h * h).sum()
    (gh,) = torch.autograd.grad(out, h)
    assert gh.tolist() == [6.0, 12.0]


def test_autograd_backward_with_several_outputs_and_inputs_argument():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([1.0, 1.0], requires_grad=True)
    a, b = (x * w).sum(), (x * x).sum()
    torch.autograd.backward([a, b], retain_graph=True)
    assert x.grad.tolist() == [3.0, 5.0] and w.grad.tolist() == [1.0, 2.0]
    x.grad = w.grad = None
    b.backward(inputs=[x])
    assert x.grad.tolist() == [2.0, 4.0] and w.grad is None


def test_create_graph_second_derivative_of_cube():
    x = torch.tensor([0.5, 1.5, -2.0], requires_grad=True)
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.requires_grad
    (h,) = torch.autograd.grad(g.sum(), x, retain_graph=True)
    np.testing.assert_allclose(h.numpy(), 6 * x.detach().numpy(), rtol=1e-6)
    (third,) = torch.autograd.grad(
        torch.autograd.grad(g.sum(), x, create_graph=True)[0].sum(), x)
    np.testing.assert_allclose(third.numpy(), [6.0, 6.0, 6.0], rtol=1e-6)


def test_nonleaf_grad_is_none_with_warning_unless_retained():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    z = y * 3
    y.retain_grad()
    z.sum().backward()
    assert y.grad.tolist() == [3.0, 3.0] and y.retains_grad
    with pytest.warns(UserWarning, match="is not a leaf Tensor"):
        assert z.grad is None


# --------------------------------------------------------------------------- hooks


def test_hooks_on_leaves_and_intermediates():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(("x", g.tolist())))
    y = x * 2
    handle = y.register_hook(lambda g: g * 10)
    y.retain_grad()
    y.sum().backward()
    assert y.grad.tolist() == [10.0, 10.0]
    assert x.grad.tolist() == [20.0, 20.0]
    assert seen == [("x", [20.0, 20.0])]
    handle.remove()
    x.grad = None
    y2 = x * 2
    y2.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_leaf_hook_may_replace_gradient_and_be_removed():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 0 + 7)
    (x * 5).sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]
    h.remove()
    (x * 5).sum().backward()
    assert x.grad.tolist() == [12.0, 12.0]


def test_next_functions_walk_the_graph():
    x = torch.ones(2, requires_grad=True)
    out = (x.exp() * 2).sum()
    (mul, _), = out.grad_fn.next_functions
    assert type(mul).__name__ == "MulBackward0"
    (exp, _), (none, _) = mul.next_functions[0], (None, 0)
    assert type(exp).__name__ == "ExpBackward0" and none is None
    (acc, _), = exp.next_functions
    assert acc.variable is x


# --------------------------------------------------------------------------- warnings


def test_T_of_a_vector_warns_like_pytorch():
    with pytest.warns(UserWarning, match="x.T"):
        torch.ones(3).T


def test_tensor_of_tensor_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.tensor(torch.ones(2))
    assert any("sourceTensor.detach().clone()" in str(w.message) for w in caught)


# --------------------------------------------------------------------------- two faces


def _numpy_program(x, w):
    h = np.tanh(x @ w)
    return np.sum(h * h) + np.mean(np.exp(-x)) + np.max(x[0]) * 0.5 - np.linalg.norm(w)


def test_transformer_and_facade_agree_on_the_same_numpy_code():
    """One engine, two faces: numpy code run on Tensors records the rules the transformer
    inlines, so both gradients agree to the last bit."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    gx, gw = srcgrad.grad(_numpy_program, wrt=(0, 1))(x, w)
    tx, tw = t64(x), t64(w)
    out = _numpy_program(tx, tw)
    assert isinstance(out, torch.Tensor) and out.requires_grad
    out.backward()
    np.testing.assert_allclose(tx.grad.numpy(), gx, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(tw.grad.numpy(), gw, rtol=1e-13, atol=1e-15)


def test_numpy_function_without_rule_on_tensors_that_require_grad_is_an_error():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(srcgrad.MissingRuleError):
        np.unwrap(x)
    assert np.unwrap(x.detach()).shape == (3,)
