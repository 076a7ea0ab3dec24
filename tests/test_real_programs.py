"""Idioms of real numerical programs that srcgrad refused or crashed on (issue 9), each
checked against finite differences at first order, and at second order where it applies.
Written for this suite after a survey of published example programs; none is copied."""
import numpy as np
import pytest

import srcgrad
from fdcheck import check_grad

rng = np.random.default_rng(11)


# -- a method called through a list of objects: the receiver holds only metadata ------------
class _Slots:
    def __init__(self):
        self.table = {"w": (slice(0, 4), (2, 2)), "b": (slice(4, 6), (2,))}

    def get(self, v, name):
        where, shape = self.table[name]
        return np.reshape(v[where], shape)


class _Dense:
    def __init__(self):
        self.slots = _Slots()

    def forward(self, x, v):
        return np.tanh(x @ self.slots.get(v, "w") + self.slots.get(v, "b"))


_LAYERS = [_Dense(), _Dense()]


def layers_from_a_list(v, x):
    for layer in _LAYERS:
        x = layer.forward(x, v)
    return np.sum(x ** 2)


def test_method_of_an_object_holding_slices_and_shapes():
    v, x = rng.standard_normal(6), rng.standard_normal((3, 2))
    check_grad(layers_from_a_list, (v, x), wrt=(0,))
    h = srcgrad.hessian(layers_from_a_list)(v, x)
    g = srcgrad.grad(layers_from_a_list)
    fd = np.stack([(g(v + 1e-6 * e, x) - g(v - 1e-6 * e, x)) / 2e-6 for e in np.eye(6)])
    assert np.allclose(h, fd, rtol=1e-5, atol=1e-6)


# -- zip(*...) of arrays: each array's gradient is an array ---------------------------------
def _two_views(x):
    return x * 2.0, np.sin(x)


def zipped_star(x, y):
    total = 0.0
    for a, b in zip(*(x, y)):
        total = total + a * b
    for a, b in zip(*_two_views(x)):
        total = total + a * b
    return total


def test_zip_star_of_arrays_gives_array_gradients():
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    gx, gy = srcgrad.grad(zipped_star, wrt=(0, 1))(x, y)
    assert isinstance(gx, np.ndarray) and isinstance(gy, np.ndarray)
    check_grad(zipped_star, (x, y), wrt=(0, 1))


# -- sorted(): over a dict's keys, and over differentiable values ------------------------------
def sum_over_sorted_keys(params):
    return sum(np.sum(params[k] ** 2) for k in sorted(params))


def sorted_values(x):
    ordered = sorted([x[0] * 2.0, x[1], x[2] ** 2])
    top = sorted([x[0], x[1] * 3.0], key=abs, reverse=True)
    return ordered[0] * 3.0 + ordered[2] + top[0] * ordered[1]


def test_sorted_keys_and_values():
    params = {"b": rng.standard_normal(2), "a": 0.7}
    got = srcgrad.grad(sum_over_sorted_keys)(params)
    assert np.allclose(got["b"], 2 * params["b"]) and np.isclose(got["a"], 1.4)
    x = np.array([0.3, -0.8, 1.1])
    check_grad(sorted_values, (x,))
    v = rng.standard_normal(3)
    _, tangent = srcgrad.jvp(sorted_values, (x,), (v,))
    assert np.isclose(tangent, srcgrad.grad(sorted_values)(x) @ v)


# -- list(d.keys()) and list.sort() of keys ------------------------------------------------
def keys_listed(d):
    keys = list(d.keys())
    keys.sort()
    return sum(d[k] ** 2 for k in keys)


def test_keys_of_a_differentiable_dict():
    assert srcgrad.grad(keys_listed)({"b": 2.0, "a": 1.0}) == {"a": 2.0, "b": 4.0}


# -- a nested function advancing a position kept in a list of the enclosing function --------
def _split(v):
    pos = [0]

    def take(n):
        out = v[pos[0]:pos[0] + n]
        pos[0] += n
        return out
    return take(2), take(3)


def split_by_cursor(v):
    a, b = _split(v)
    return np.sum(a ** 2) + np.sum(np.sin(b))


def _leaky(v):
    acc = [0.0]

    def add(t):
        acc[0] = acc[0] + t  # a differentiable value stored into the enclosing list
    add(v[0])
    return acc[0]


def test_nested_function_updating_an_enclosing_list():
    v = rng.standard_normal(5)
    check_grad(split_by_cursor, (v,))
    with pytest.raises(srcgrad.SrcgradError, match="variable of the enclosing function"):
        srcgrad.grad(_leaky)(v)


# -- return xs.pop(i) --------------------------------------------------------------------------
def _first(items):
    return items.pop(0)


def popped(x):
    return _first([x * 2.0, x]) ** 2 + _first([np.sin(x)])


def test_return_of_a_pop():
    check_grad(popped, (0.7,))
    assert np.isclose(srcgrad.hessian(popped)(0.7), 8.0 - np.sin(0.7))


# -- second order through a rule whose vjp takes *args (np.atleast_2d) -----------------------
def column_cubes(h):
    return np.sum(np.atleast_2d(h).T ** 3)


def test_hvp_through_atleast_2d():
    x, v = np.array([0.5, -1.0, 2.0]), rng.standard_normal(3)
    assert np.allclose(srcgrad.hvp(column_cubes, (x,), (v,)), 6 * x * v)


# -- scipy.integrate.odeint: gradients by the adjoint method, tangents by sensitivities -------
try:
    from scipy.integrate import odeint
except ImportError:  # scipy is optional
    odeint = None


def _ode_loss(y0, k):
    times = np.linspace(0.0, 1.0, 5)
    sol = odeint(lambda y, t, k: -k * y + 0.1 * np.sin(t) * y ** 2, y0, times, args=(k,),
                 rtol=1e-12, atol=1e-12)
    return np.sum(sol[-1] ** 2) + np.sum(sol[2])


def test_odeint_gradient_and_tangent():
    pytest.importorskip("scipy.integrate")
    y0, k = np.array([0.8, 0.5]), 0.6
    gy, gk = srcgrad.grad(_ode_loss, wrt=(0, 1))(y0, k)
    eps = 1e-6
    fd_y = np.array([(_ode_loss(y0 + eps * e, k) - _ode_loss(y0 - eps * e, k)) / (2 * eps)
                     for e in np.eye(2)])
    fd_k = (_ode_loss(y0, k + eps) - _ode_loss(y0, k - eps)) / (2 * eps)
    assert np.allclose(gy, fd_y, rtol=1e-6) and np.isclose(gk, fd_k, rtol=1e-6)
    v = np.array([0.3, -0.2])
    _, tangent = srcgrad.jvp(_ode_loss, (y0, k), (v, 0.5))
    assert np.isclose(tangent, fd_y @ v + 0.5 * fd_k, rtol=1e-6)


# -- a complex cotangent reaching a slice of a real input --------------------------------------
def spectrum_of_a_slice(x):
    return np.sum(np.abs(np.fft.rfft(x[1:])) ** 2) + np.sum(np.real((1 + 2j) * np.exp(x[:1])))


def test_complex_cotangent_into_a_slice_of_a_real_input():
    x = np.array([0.3, 0.5, -0.2, 0.9])
    g = srcgrad.grad(spectrum_of_a_slice)(x)
    assert g.dtype == np.float64
    check_grad(spectrum_of_a_slice, (x,))


def _tiny_net(y, t, params):
    (w1, b1), (w2, b2) = params
    return np.tanh(y @ w1 + b1) @ w2 + b2


def _ode_net_loss(params, y0):
    times = np.linspace(0.0, 0.5, 3)
    pred = odeint(_tiny_net, y0, times, tuple((params,)), rtol=1e-11, atol=1e-11)
    return np.sum(pred[-1] ** 2)


def test_odeint_of_a_network_with_nested_parameters():
    pytest.importorskip("scipy.integrate")
    r = np.random.default_rng(4)
    params = [(0.5 * r.standard_normal((2, 3)), 0.1 * r.standard_normal(3)),
              (0.5 * r.standard_normal((3, 2)), 0.1 * r.standard_normal(2))]
    y0 = np.array([0.4, -0.3])
    grads = srcgrad.grad(_ode_net_loss)(params, y0)
    assert isinstance(grads, list) and grads[0][0].shape == (2, 3)
    check_grad(_ode_net_loss, (params, y0))


# -- np.meshgrid and np.gradient in a program (autograd's test_numpy idioms, written anew) ------
def grid_field_energy(x):
    gx, gy = np.meshgrid(x[:3], np.tanh(x[3:]))
    field = np.sin(gx * gy) + gx ** 2
    dy, dx = np.gradient(field, 0.5)
    sparse = np.meshgrid(x[:2], x[2:4], x[4:], indexing="ij", sparse=True)
    return np.sum(dx * dy) + np.sum(sparse[0] * sparse[1] * sparse[2])


def test_meshgrid_and_gradient_in_a_program():
    from fdcheck import check_orders
    x = np.linspace(-0.8, 0.9, 6)
    check_orders(grid_field_energy, x, direction=np.cos(np.arange(6.0)), hessian=True)
