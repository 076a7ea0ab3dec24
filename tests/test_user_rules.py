"""User rules written as a vjp alone are differentiated at every order (issue 9): a vjp that
returns its cotangent bare, a vjp that is a closure, and forward mode (jvp, hessians) by
transposing the vjp, which is linear in its cotangent."""
import numpy as np
import pytest

import srcgrad

rng = np.random.default_rng(5)
X = np.array([0.5, -1.0, 2.0])
EPS = 1e-6


def _cube(x):
    return x ** 3


@srcgrad.rule(_cube)
def _cube_vjp(g, ans, x):
    return g * 3.0 * x ** 2  # bare, not a 1-tuple


def cube_loss(x):
    return np.sum(_cube(x) * np.sin(x))


def _make_scaled_sine(scale):
    def scaled_sine(x):
        return scale * np.sin(x)

    @srcgrad.rule(scaled_sine)
    def vjp(g, ans, x):
        return (g * scale * np.cos(x),)  # reads the closure's 'scale'
    return scaled_sine


_scaled_sine = _make_scaled_sine(2.5)


def closure_rule_loss(x):
    return np.sum(_scaled_sine(x) ** 2)


def _weighted_product(a, b, weight=1.0):
    return weight * a * b


@srcgrad.rule(_weighted_product)
def _weighted_product_vjp(g, ans, a, b, weight=1.0):
    return g * weight * b, g * weight * a


def two_argument_rule_loss(x):
    return np.sum(_weighted_product(x, np.exp(x), weight=0.5) ** 2)


CASES = [cube_loss, closure_rule_loss, two_argument_rule_loss]


def _fd_grad(f, x):
    return np.array([(f(x + EPS * e) - f(x - EPS * e)) / (2 * EPS) for e in np.eye(x.size)])


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_first_order_forward_mode_and_hessians(f):
    g = srcgrad.grad(f)
    assert np.allclose(g(X), _fd_grad(f, X), rtol=1e-6, atol=1e-8)
    v = rng.standard_normal(X.size)
    _, tangent = srcgrad.jvp(f, (X,), (v,))
    assert np.isclose(tangent, g(X) @ v, rtol=1e-10)
    numeric = np.stack([_fd_grad(lambda y: g(y)[i], X) for i in range(X.size)])
    hessian = srcgrad.hessian(f)(X)
    assert np.allclose(hessian, numeric, rtol=1e-5, atol=1e-6)
    # reverse over reverse agrees with forward over reverse
    directional = srcgrad.grad(lambda y: np.sum(g(y) * v))(X)
    assert np.allclose(directional, hessian @ v, rtol=1e-8, atol=1e-10)


def test_a_closure_vjp_is_called_not_inlined():
    text = srcgrad.source(srcgrad.grad(closure_rule_loss))
    # the free variable 'scale' stays inside the rule's own function, which is called
    assert " = vjp(b_t1, _t1, x)" in text and "scale *" not in text
