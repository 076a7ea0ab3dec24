"""Objects whose class defines ``__call__``, called as ``m(x)`` in differentiated code.

The call runs ``type(m).__call__(m, x)``, as ``m.__call__(x)`` does, so the object's
attributes get their derivatives: bound to the object instead, they were constants of the
call and ``m(x)`` gave a zero gradient where ``m.__call__(x)`` gave the right one.
"""
import numpy as np
import pytest

import srcgrad


class Scale:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.w * x


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class WithOperators(Scale):  # its own operators: never differentiated with respect to here
    def __add__(self, other):
        return WithOperators(self.w + other.w)


def called(m, x):
    return m(x) ** 2


def called_as_method(m, x):
    return m.__call__(x) ** 2


def stacked(layers, x):
    for layer in layers:
        x = layer(x)
    return np.sum(x ** 2)


def _central(fun, x0, eps=1e-6):
    x0 = np.asarray(x0, dtype=float)
    out = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        out[i] = (fun(x0 + d) - fun(x0 - d)) / (2 * eps)
    return out


@pytest.mark.parametrize("f", [called, called_as_method])
def test_an_argument_called_gets_the_derivative_of_its_attributes(f):
    gm, gx = srcgrad.grad(f, wrt=(0, 1))(Scale(2.0), 3.0)
    assert gm.w == pytest.approx(36.0) and gx == pytest.approx(24.0)  # d/dw (w x)^2 = 2 w x^2
    assert srcgrad.grad(f)(Scale(2.0), 3.0).w == pytest.approx(36.0)


def test_a_list_of_callable_layers_against_finite_differences():
    rng = np.random.default_rng(0)
    W1, b1, W2, b2 = (rng.normal(size=s) for s in ((3, 4), (4,), (4, 2), (2,)))
    x = rng.normal(size=(5, 3))
    layers = [Dense(W1, b1), Dense(W2, b2)]
    g_layers, g_x = srcgrad.grad(stacked, wrt=(0, 1))(layers, x)

    def with_W1(W):
        return stacked([Dense(W, b1), Dense(W2, b2)], x)

    def with_b2(b):
        return stacked([Dense(W1, b1), Dense(W2, b)], x)

    np.testing.assert_allclose(g_layers[0].W, _central(with_W1, W1), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g_layers[1].b, _central(with_b2, b2), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g_x, _central(lambda v: stacked(layers, v), x),
                               rtol=1e-6, atol=1e-9)


def test_forward_mode_and_second_order_through_a_called_object():
    rng = np.random.default_rng(1)
    layer = Dense(rng.normal(size=(3, 3)), rng.normal(size=3))
    x, v = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))

    def loss(x):
        return np.sum(layer(x) ** 2)

    _, tangent = srcgrad.jvp(loss, (x,), (v,))
    grad = srcgrad.grad(loss)
    assert tangent == pytest.approx(np.sum(grad(x) * v), rel=1e-10)
    hv = srcgrad.hvp(loss, (x,), (v,))
    np.testing.assert_allclose(hv, (grad(x + 1e-6 * v) - grad(x - 1e-6 * v)) / 2e-6,
                               rtol=1e-5, atol=1e-8)


def test_a_constant_object_with_its_own_operators_is_only_called():
    m = WithOperators(3.0)
    assert srcgrad.grad(lambda x: called(m, x))(2.0) == pytest.approx(36.0)  # 2 w^2 x


def test_second_order_with_respect_to_a_called_objects_attribute():
    # d/dw of d/dx (w x)^2 = d/dw 2 w^2 x = 4 w x
    mixed = srcgrad.grad(lambda m, x: srcgrad.grad(called, wrt=1)(m, x))(Scale(2.0), 3.0)
    assert mixed.w == pytest.approx(24.0)


# -- a method bound to a differentiated object, used as a value ------------------------------
# Its derivative is its receiver's (runtime.is_receiver_method): calling it runs the method
# with the object as self. Bound to the object instead, the receiver's attributes were
# constants of the call, and the gradient was zero.

class Affine(Scale):
    def apply(self, x):
        return self.w * x + 1.0


def through_a_name(m, x):
    h = m.apply
    return h(x) ** 2


def _call_it(fn, x):
    return fn(x) ** 2


def passed_to_a_helper(m, x):
    return _call_it(m.apply, x)


def mapped(m, xs):
    return sum(map(m.apply, xs)) ** 2


@pytest.mark.parametrize("f", [through_a_name, passed_to_a_helper])
def test_a_bound_method_value_differentiates_its_receiver(f):
    m, x = Affine(2.0), 3.0
    # f = (w x + 1)^2: d/dw = 2 (w x + 1) x = 42, d/dx = 2 (w x + 1) w = 28
    gm, gx = srcgrad.grad(f, wrt=(0, 1))(m, x)
    assert gm.w == pytest.approx(42.0) and gx == pytest.approx(28.0)
    # d/dw d/dx = d/dw 2 w (w x + 1) = 4 w x + 2 = 26, by reverse over reverse and forward
    # over reverse
    mixed = srcgrad.grad(lambda m, x: srcgrad.grad(f, wrt=1)(m, x))(m, x)
    assert mixed.w == pytest.approx(26.0)
    _, tangent = srcgrad.jvp(srcgrad.grad(f, wrt=1), (m, x), (Affine(1.0), 0.0))
    assert tangent == pytest.approx(26.0)


def test_a_bound_method_mapped_over_data():
    m, xs = Affine(0.5), [1.0, 2.0, -4.0]
    s = sum(0.5 * x + 1.0 for x in xs)
    assert srcgrad.grad(mapped)(m, xs).w == pytest.approx(2 * s * sum(xs))
    assert srcgrad.grad(mapped, wrt=1)(m, xs) == pytest.approx([2 * s * 0.5] * 3)


def test_a_constant_objects_bound_method_stays_a_constant():
    m = Affine(2.0)
    assert srcgrad.grad(lambda x: passed_to_a_helper(m, x))(3.0) == pytest.approx(28.0)
