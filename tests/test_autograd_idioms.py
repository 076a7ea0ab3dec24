"""Idioms found failing by a survey of published autograd example programs (issue 9),
each written anew for this suite and checked against central differences at first and
second order and in forward mode. None is copied from those programs."""
import numpy as np
import pytest

import srcgrad
from fdcheck import check_grad, check_orders

rng = np.random.default_rng(27)
EPS = 1e-6


def _fd_grad_along(f, x, v, eps=EPS):
    """Central difference of srcgrad.grad(f) along v (the Hessian-vector product)."""
    g = srcgrad.grad(f)
    return (g(x + eps * v) - g(x - eps * v)) / (2 * eps)


# -- np.linalg.solve whose matrix is built inside the function from constants ---------------
# Forward mode handed the solve rule the lazy zero as the matrix's tangent, and the rule
# multiplied it as a matrix (a bare numpy error). A GP's predictive mean at the query points,
# with its kernel matrix of the (constant) training inputs, differentiated in the queries.
_TRAIN = np.linspace(-1.0, 1.0, 5)
_TARGETS = np.cos(3 * _TRAIN)


def _kernel(a, b):
    return np.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / 0.3)


def predictive_mean(queries):
    k_tt = _kernel(_TRAIN, _TRAIN) + 0.01 * np.eye(len(_TRAIN))
    k_tq = _kernel(_TRAIN, queries)
    return np.sum(np.linalg.solve(k_tt, k_tq).T @ _TARGETS)


def solve_vector_rhs(b):
    m = np.diag(np.arange(1.0, 4.0)) + 0.1
    return np.sum(np.linalg.solve(m, b * b) ** 2)


def solve_both_active(x):
    m = np.outer(x, x) + 2.0 * np.eye(3)
    return np.sum(np.linalg.solve(m, np.sin(x)))


@pytest.mark.parametrize("f", [predictive_mean, solve_vector_rhs, solve_both_active])
def test_solve_with_a_constant_matrix_forward_and_second_order(f):
    x = rng.uniform(-0.9, 0.9, 3)
    check_orders(f, x, direction=rng.standard_normal(3), hessian=True)
    v = rng.standard_normal(3)
    assert np.allclose(srcgrad.hvp(f, (x,), (v,)), _fd_grad_along(f, x, v), rtol=1e-5, atol=1e-6)


# -- hvp of a loss whose integer argument picks the data batch ------------------------------
# hvp differentiated with respect to every primal, the integer too, so the batch index
# computed from it became active and indexing the data with it was refused.
_DATA = rng.standard_normal((6, 3))


def _batch(step):
    k = step % 3
    return slice(2 * k, 2 * k + 2)


def batch_loss(w, step):
    rows = _DATA[_batch(step)]
    return np.sum(np.tanh(rows @ w) ** 2)


def scaled_loss(w, step):
    return np.sum(w ** 3) * step


def test_hvp_leaves_an_unvaried_integer_argument_out():
    w, v = rng.standard_normal(3), rng.standard_normal(3)
    hw, hstep = srcgrad.hvp(batch_loss, (w, 4), (v, None))
    assert hstep is None
    g = srcgrad.grad(batch_loss)
    fd = (g(w + EPS * v, 4) - g(w - EPS * v, 4)) / (2 * EPS)
    assert np.allclose(hw, fd, rtol=1e-5, atol=1e-7)
    # the integer still scales the product; 0.0 marks it unvaried as None does
    hw2, none = srcgrad.hvp(scaled_loss, (w, 5), (v, 0.0))
    assert none is None and np.allclose(hw2, 5 * 6 * w * v)


def test_hvp_of_a_float_argument_without_tangent_is_still_computed():
    def f(x, y):
        return np.sum(x * x * y)
    x, y, v = rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal(2)
    hx, hy = srcgrad.hvp(f, (x, y), (v, None))
    assert np.allclose(hx, 2 * y * v) and np.allclose(hy, 2 * x * v)


# -- srcgrad's pytree functions inside differentiated code -----------------------------------
# tree_leaves/tree_flatten/tree_unflatten were transformed as source (their helper appends to
# a list parameter, the rebuild walks an iterator) and refused. Now each has a rule.
def _layers():
    return [(rng.standard_normal((3, 4)), rng.standard_normal(4)),
            (rng.standard_normal((4, 2)), rng.standard_normal(2))]


_X = rng.standard_normal((5, 3))


def penalised(params):
    flat = np.concatenate([np.ravel(p) for p in srcgrad.tree_leaves(params)])
    h = _X
    for w, b in params:
        h = np.tanh(h @ w + b)
    return np.sum(h ** 2) + 0.1 * np.dot(flat, flat)


def flatten_pair(params):
    leaves, treedef = srcgrad.tree_flatten(params)
    return sum(np.sum(np.sin(leaf)) for leaf in leaves) * len(treedef.children)


_TEMPLATE = {"scale": 1.0, "shift": np.zeros(3), "mix": np.zeros((3, 3))}
_LEAVES, _TREEDEF = srcgrad.tree_flatten(_TEMPLATE)
_SIZES = [int(np.size(leaf)) for leaf in _LEAVES]


def unflatten(vector):
    parts, start = [], 0
    for leaf, n in zip(_LEAVES, _SIZES):
        parts.append(np.reshape(vector[start:start + n], np.shape(leaf)))
        start += n
    return srcgrad.tree_unflatten(_TREEDEF, parts)


def model(params):
    return np.sum(np.tanh(_X @ params["mix"] + params["shift"]) * params["scale"] ** 2)


def flat_objective(vector):
    return model(unflatten(vector))


def test_tree_leaves_of_parameters_first_and_second_order():
    params = _layers()
    check_grad(penalised, (params,))
    v = [(rng.standard_normal((3, 4)), rng.standard_normal(4)),
         (rng.standard_normal((4, 2)), rng.standard_normal(2))]
    _, tangent = srcgrad.jvp(penalised, (params,), (v,))
    plus = [(w + EPS * dw, b + EPS * db) for (w, b), (dw, db) in zip(params, v)]
    minus = [(w - EPS * dw, b - EPS * db) for (w, b), (dw, db) in zip(params, v)]
    assert np.isclose(tangent, (penalised(plus) - penalised(minus)) / (2 * EPS), rtol=1e-6)
    h = srcgrad.hvp(penalised, (params,), (v,))
    g = srcgrad.grad(penalised)
    for (hw, hb), (gpw, gpb), (gmw, gmb) in zip(h, g(plus), g(minus)):
        assert np.allclose(hw, (gpw - gmw) / (2 * EPS), rtol=1e-5, atol=1e-6)
        assert np.allclose(hb, (gpb - gmb) / (2 * EPS), rtol=1e-5, atol=1e-6)


def test_tree_flatten_of_a_dict():
    params = {"a": rng.standard_normal(3), "b": [rng.standard_normal((2, 2)), 0.3]}
    check_grad(flatten_pair, (params,))


def test_objective_of_a_flat_vector_through_tree_unflatten():
    x = rng.standard_normal(1 + 3 + 9)
    check_orders(flat_objective, x, direction=rng.standard_normal(x.size), hessian=True)
    v = rng.standard_normal(x.size)
    assert np.allclose(srcgrad.hvp(flat_objective, (x,), (v,)),
                       _fd_grad_along(flat_objective, x, v), rtol=1e-5, atol=1e-6)
    # reverse over reverse: the gradient of a component of the gradient
    h_row = srcgrad.grad(lambda y: srcgrad.grad(flat_objective)(y)[0])(x)
    assert np.allclose(h_row, srcgrad.hessian(flat_objective)(x)[0], rtol=1e-8, atol=1e-10)


def test_gradient_comes_back_through_tree_unflatten_in_the_leaves_structure():
    # 'mix' is never read: its cotangent is missing from the dict's, a zero leaf here
    def first_leaf_squared(leaves):
        tree = srcgrad.tree_unflatten(_TREEDEF, leaves)
        return tree["scale"] ** 2 * np.sum(tree["shift"])
    leaves = [np.zeros((3, 3)), 2.0, np.ones(3)]  # sorted keys: mix, scale, shift
    g = srcgrad.grad(first_leaf_squared)(leaves)
    assert np.allclose(g[0], 0.0) and np.isclose(g[1], 2 * 2.0 * 3) and np.allclose(g[2], 4.0)
