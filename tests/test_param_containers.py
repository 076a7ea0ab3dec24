"""Containers of parameters as numerical code passes them around: lists of (W, b) tuples,
dicts of arrays, optimiser state, at first order, forward mode, forward over reverse and
reverse over reverse, each against central differences."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from test_language import _fd_gradient, check_all_orders

rng = np.random.default_rng(131)
X3 = rng.uniform(0.5, 1.5, 3)


def _check(f, x=X3):
    assert np.isclose(srcgrad.value_and_grad(f)(x)[0], f(x.copy()))
    check_all_orders(f, x)
    numeric = np.stack([_fd_gradient(lambda y: srcgrad.grad(f)(y)[i], x)
                        for i in range(x.size)])
    assert np.allclose(srcgrad.jacrev(srcgrad.grad(f))(x), numeric, rtol=1e-5, atol=1e-6)


# -- a tuple stored into a list slot: reverse over reverse raised numpy's inhomogeneous-shape
# ValueError from runtime.broadcast_like (the vjp of the unbroadcast a slot store's value
# adjoint passes through: np.shape of a tuple of arrays of different shapes) --------------------
def tuple_into_a_list_slot(x):
    params = [(np.outer(x, x), x * 1.0), (np.eye(3) * x, x ** 2)]
    params[-1] = (params[-1][0] * 0.5, np.tanh(params[-1][1]))
    return np.sum(params[-1][0] @ params[0][1])


def layers_updated_in_a_loop(x):
    params = [(np.outer(x, x) * 0.3, x * 1.0), (np.eye(3) * x, x ** 2)]
    for step in range(2):
        for i in range(len(params)):
            W, b = params[i]
            params[i] = (W - 0.1 * np.sin(W), b - 0.1 * b ** 2)
    a = x
    for W, b in params:
        a = np.tanh(W @ a + b)
    return np.sum(a ** 2)


@pytest.mark.parametrize("f", [tuple_into_a_list_slot, layers_updated_in_a_loop])
def test_a_tuple_in_a_list_slot_at_every_order(f):
    _check(f)


def test_broadcast_like_passes_a_containers_tangent_through():
    from srcgrad import runtime as rt
    pair = (np.ones((3, 3)), np.ones(3))
    assert rt.broadcast_like(pair, pair) is pair
    assert rt.broadcast_like([pair[1]], [np.zeros(3)])[0] is pair[1]



def _forward(layers, h):
    for layer in layers:  # a list of dicts
        h = np.tanh(layer["W"] @ h + layer["b"])
    return h


def list_of_layer_dicts(x):
    layers = [{"W": np.outer(x, x) * 0.3, "b": x * 1.0}, {"W": np.eye(3) * x, "b": np.cos(x)}]
    return np.sum(_forward(layers, x) * x)


def test_a_list_of_dicts_iterated_at_every_order():
    # reverse over reverse raised TypeError from runtime.densify: the adjoint of an item (a
    # dict) met a lazy-zero accumulator item and was taken for an object's attributes
    _check(list_of_layer_dicts)
