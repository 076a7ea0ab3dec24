"""Callees are differentiated with respect to the arguments active at each call site (issue 9).

An object that does not depend on the input (a RandomState, a parser holding shapes, a data
batch) is a constant inside the helper it is passed to: it is never differentiated, and its
cotangent is never computed.
"""
import numpy as np

import srcgrad
from fdcheck import check_grad

rng = np.random.default_rng(3)


def _sample(mean, rs):
    return mean + rs.rand(3)


def noisy_mean(m):
    rs = np.random.RandomState(0)
    return np.sum(_sample(m, rs) ** 2)


class _Parser:
    def __init__(self):
        self.idxs = {"w": slice(0, 6), "b": slice(6, 8)}
        self.shapes = {"w": (3, 2), "b": (2,)}

    def get(self, vect, name):
        return np.reshape(vect[self.idxs[name]], self.shapes[name])


def _unpack(parser, vect, name):
    return np.reshape(vect[parser.idxs[name]], parser.shapes[name])


def parsed_parameters(v):
    parser = _Parser()
    x = np.array([[0.5, -1.0, 2.0]])
    w, b = _unpack(parser, v, "w"), parser.get(v, "b")
    return np.sum(np.tanh(x @ w + b))


def _layer(W, b, x):
    return np.tanh(x @ W + b)


DATA = rng.standard_normal((4, 3))


def mlp_with_helpers(params):
    W1, b1, W2, b2 = params
    h = _layer(W1, b1, DATA)
    return np.sum(_layer(W2, b2, h) ** 2)


PARAMS = [rng.standard_normal((3, 5)), rng.standard_normal(5),
          rng.standard_normal((5, 2)), rng.standard_normal(2)]


def test_an_object_passed_to_a_helper_is_a_constant_there():
    m = np.array([0.1, -0.2, 0.3])
    check_grad(noisy_mean, (m,))
    check_grad(parsed_parameters, (rng.standard_normal(8),))


def test_a_helper_is_differentiated_only_in_its_active_arguments():
    g = srcgrad.grad(mlp_with_helpers)
    check_grad(mlp_with_helpers, (PARAMS,))
    text = srcgrad.source(g)
    # the first call's data batch gets no cotangent; the second call's x (the hidden layer)
    # depends on W1 and b1, so that call needs all three
    assert "_layer_adj_W_b.fwd(W1, b1, DATA)" in text and "_layer_adj.fwd(W2, b2, h)" in text


def test_call_site_specialization_at_every_order():
    v = rng.standard_normal(3)
    m = np.array([0.1, -0.2, 0.3])
    _, tangent = srcgrad.jvp(noisy_mean, (m,), (v,))
    eps = 1e-6
    assert np.isclose(tangent, (noisy_mean(m + eps * v) - noisy_mean(m - eps * v)) / (2 * eps),
                      rtol=1e-6)
    hess = srcgrad.hessian(noisy_mean)(m)
    assert np.allclose(hess, 2 * np.eye(3), atol=1e-10)
    directional = srcgrad.grad(lambda y: np.sum(srcgrad.grad(noisy_mean)(y) * v))(m)
    assert np.allclose(directional, 2 * v)


# -- grad called inside differentiated code (autograd's negative binomial example) ----------
def _loglike(r, data):
    return np.sum(np.log(r + data) * data - r * np.log1p(r))


DATA_POS = np.array([1.0, 3.0, 2.0, 5.0])


def score(r):
    return srcgrad.grad(_loglike)(r, DATA_POS * r)


def test_grad_of_the_same_function_is_the_same_function():
    assert srcgrad.grad(_loglike) is srcgrad.grad(_loglike)
    assert srcgrad.grad(_loglike, wrt=1) is not srcgrad.grad(_loglike)


def test_grad_inside_differentiated_code_builds_once(monkeypatch):
    from srcgrad.generated import Generated

    second = srcgrad.grad(score)
    eps = 1e-6
    assert np.isclose(second(1.3), (score(1.3 + eps) - score(1.3 - eps)) / (2 * eps),
                      rtol=1e-6)
    builds = []
    original = Generated.build
    monkeypatch.setattr(Generated, "build",
                        lambda self, *a, **k: builds.append(self) or original(self, *a, **k))
    for r in (0.7, 1.1, 2.0):
        second(r)
    assert builds == []  # every call reuses the code generated for the first
