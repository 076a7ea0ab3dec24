"""Custom ``autograd.Function`` subclasses and ``Tensor._backward_source()``."""
import numpy as np
import pytest

import srcgrad
from srcgrad.rules import lookup

if hasattr(srcgrad, "Tensor"):
    torch = srcgrad
else:  # until srcgrad/__init__.py re-exports the torch-like namespace
    import srcgrad.torch_api as torch

from srcgrad.autograd import Function


class MyReLU(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


class Exp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class ScaledSum(Function):
    """Two inputs, a constant, flags and two outputs (one of them non-differentiable)."""

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.scale = scale
        ctx.flags = ctx.needs_input_grad
        total = (a * scale + b).sum()
        count = torch.tensor(float(a.numel()))
        ctx.mark_non_differentiable(count)
        return total, count

    @staticmethod
    def backward(ctx, g_total, g_count):
        return g_total * ctx.scale * torch.ones_like(g_total).expand(2), \
            g_total * torch.ones(2), None


def test_custom_function_forward_backward_and_node_name():
    x = torch.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    y = MyReLU.apply(x)
    assert repr(y) == "tensor([0., 2., 3.], grad_fn=<MyReLUBackward>)"
    (y * y).sum().backward()
    assert x.grad.tolist() == [0.0, 4.0, 6.0]


def test_saved_tensors_are_freed_after_backward():
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    z = Exp.apply(x).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.0, 1.0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()


def test_custom_function_twice_differentiable_through_saved_output():
    x = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), np.exp([0.0, 1.0, 2.0]), rtol=1e-6)


def test_needs_input_grad_multiple_outputs_and_non_differentiable():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0])
    total, count = ScaledSum.apply(a, b, 3.0)
    assert total.requires_grad and not count.requires_grad
    assert total.grad_fn is not None and type(total.grad_fn).__name__ == "ScaledSumBackward"
    (total * 2).backward()
    assert a.grad.tolist() == [6.0, 6.0]


def test_function_without_grad_inputs_records_nothing():
    y = MyReLU.apply(torch.tensor([-1.0, 1.0]))
    assert y.grad_fn is None and not y.requires_grad


@pytest.fixture
def registered():
    """Registers Functions' rules for a test, then removes them: the registry's meta-tests
    require every rule to carry a test domain and a jvp, which these do not."""
    from srcgrad.rules import registry

    keys = []

    def register(function):
        keys.append(function.apply)
        return function.as_rule()

    yield register
    for key in keys:
        registry._RULES.pop(key, None)


def test_function_can_register_itself_in_the_rule_registry(registered):
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    assert lookup(Cube.apply) is None  # registration is explicit
    rule = registered(Cube)
    assert lookup(Cube.apply) is rule and Cube.as_rule() is rule
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(rule.fn(x), x ** 3)
    (gx,) = rule.vjp(np.ones(2), x ** 3, x)
    np.testing.assert_allclose(gx, 3 * x ** 2)


def test_registered_function_rule_recomputes_forward(registered):
    rule = registered(Exp)
    x = np.array([0.5, 1.0])
    ans = rule.fn(x)
    np.testing.assert_allclose(ans, np.exp(x))
    (gx,) = rule.vjp(np.ones(2), ans, x)
    np.testing.assert_allclose(gx, np.exp(x))


# --------------------------------------------------------------------------- backward source


def test_backward_source_of_the_tutorial_graph():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    src = out._backward_source()
    assert src.startswith("def out_backward(b_out=1.0):")
    assert "# MeanBackward0: out = np.mean(z)" in src
    assert "# MulBackward0: z = np.multiply(_t1, 3)" in src
    assert "# AddBackward0: y = np.add(x, 2)" in src
    lines = src.splitlines()
    order = [i for i, line in enumerate(lines) if "Backward0" in line]
    assert [lines[i].split(":")[0].strip() for i in order] == [
        "# MeanBackward0", "# MulBackward0", "# MulBackward0", "# AddBackward0"]
    assert "b_y = b_y + " in src and src.rstrip().endswith("return b_x")
    grad = src.run()
    out.backward()
    np.testing.assert_allclose(grad, x.grad.numpy())


def test_backward_source_is_deterministic():
    x = torch.ones(3, requires_grad=True)
    first = (x.sin() * x).sum()._backward_source()
    second = (x.sin() * x).sum()._backward_source()
    assert str(first) == str(second)


def test_backward_source_runs_and_reproduces_grad_of_an_mlp():
    torch.manual_seed(0)
    w1 = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    b1 = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    w2 = torch.randn(1, 4, dtype=torch.float64, requires_grad=True)
    inputs = torch.randn(5, 3, dtype=torch.float64)
    target = torch.tensor([0, 2, 1, 3, 3])
    hidden = (inputs @ w1.T + b1).tanh()
    logits = torch.cat([hidden, hidden[:, :1] * w2.sum()], 1)
    loss = torch.nn.functional.cross_entropy(logits, target) + (hidden[[0, 0]] ** 2).sum()
    src = loss._backward_source()
    assert src.inputs[0] is w1 and src.inputs[1] is b1 and src.inputs[2] is w2
    got = src.run()
    loss.backward()
    for value, leaf in zip(got, (w1, b1, w2)):
        np.testing.assert_allclose(value, leaf.grad.numpy(), rtol=1e-10)


def test_backward_source_with_explicit_names_and_function_nodes():
    a = torch.tensor([0.5, 1.5], requires_grad=True)
    out = Exp.apply(a * 2).sum()
    src = out._backward_source(names={"a": a, "loss": out})
    assert "def loss_backward(b_loss=1.0):" in src and "# ExpBackward:" in src
    np.testing.assert_allclose(src.run(), 2 * np.exp([1.0, 3.0]), rtol=1e-6)


def test_backward_source_after_free_raises():
    x = torch.ones(2, requires_grad=True)
    out = (x * x).sum()
    out.backward()
    with pytest.raises(RuntimeError, match="second time"):
        out._backward_source()


# --------------------------------------------------------------------------- nn.Parameter


def test_parameter_is_a_leaf_that_requires_grad():
    p = torch.nn.Parameter(torch.ones(2))
    assert p.requires_grad and p.is_leaf and isinstance(p, torch.Tensor)
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0, 3.0]
