"""Generated code on dask arrays: the gradient of a loss over a chunked dataset is one lazy
dask graph (nothing is computed while srcgrad runs), equal to the in-memory gradient."""
import numpy as np
import pytest

import srcgrad

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from dask.callbacks import Callback  # noqa: E402

rng = np.random.default_rng(0)
N, D, CHUNK = 4000, 6, 250  # 16 chunks


class CountComputes(Callback):
    """Counts the graphs dask computes while active."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, dsk):
        self.count += 1


def least_squares(w, X, y):
    r = X @ w - y
    return np.sum(r ** 2) / X.shape[0]


def logistic(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, -y * z)) + 0.01 * np.sum(w ** 2)


def mlp(params, X, y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    h = np.maximum(h, 0.1 * h)
    out = h @ params["w2"]
    return np.mean((out - y) ** 2) + 1e-3 * np.sum(params["W1"] ** 2)


def robust(w, X, y):
    r = X @ w - y
    huber = np.where(np.abs(r) < 1.0, 0.5 * r ** 2, np.abs(r) - 0.5)
    return np.mean(huber) + np.sum(np.sqrt(w ** 2 + 1.0)) + np.max(X[:, 0] * w[0])


def softmax_regression(W, X, labels):
    z = X @ W
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(logp * labels, axis=1))


def data():
    Xn = rng.standard_normal((N, D))
    yn = np.sign(Xn @ rng.standard_normal(D) + 0.1 * rng.standard_normal(N))
    return Xn, yn, da.from_array(Xn, chunks=(CHUNK, D)), da.from_array(yn, chunks=CHUNK)


def params_for(f):
    if f is mlp:
        return {"W1": rng.standard_normal((D, 4)), "b1": rng.standard_normal(4),
                "w2": rng.standard_normal(4)}
    if f is softmax_regression:
        return rng.standard_normal((D, 3))
    return rng.standard_normal(D)


def assert_tree_close(lazy, eager):
    if isinstance(eager, dict):
        for k in eager:
            assert_tree_close(lazy[k], eager[k])
        return
    assert isinstance(lazy, da.Array), type(lazy)
    np.testing.assert_allclose(lazy.compute(scheduler="threads"), eager, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("f", [least_squares, logistic, mlp, robust, softmax_regression])
def test_gradient_is_one_lazy_graph_equal_to_the_in_memory_gradient(f):
    Xn, yn, X, y = data()
    if f is softmax_regression:
        yn = np.eye(3)[rng.integers(0, 3, N)]
        y = da.from_array(yn, chunks=(CHUNK, 3))
    assert X.numblocks[0] >= 10  # the dataset is at least 10 chunks
    w = params_for(f)
    with CountComputes() as counter:
        g = srcgrad.grad(f)(w, X, y)
    assert counter.count == 0, "srcgrad computed part of the dask graph"
    assert_tree_close(g, srcgrad.grad(f)(w, Xn, yn))


def test_value_and_gradient_compute_together_on_the_threaded_scheduler():
    Xn, yn, X, y = data()
    w = params_for(logistic)
    value, g = srcgrad.value_and_grad(logistic)(w, X, y)
    value, g = dask.compute(value, g, scheduler="threads")
    want_value, want_g = srcgrad.value_and_grad(logistic)(w, Xn, yn)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(g, want_g, rtol=1e-10, atol=1e-12)


def test_gradient_with_respect_to_the_dataset_stays_chunked():
    Xn, yn, X, y = data()
    w = params_for(least_squares)
    with CountComputes() as counter:
        gX = srcgrad.grad(least_squares, wrt=1)(w, X, y)
    assert counter.count == 0
    assert isinstance(gX, da.Array) and gX.chunks == X.chunks
    np.testing.assert_allclose(gX.compute(), srcgrad.grad(least_squares, wrt=1)(w, Xn, yn),
                               rtol=1e-10, atol=1e-14)


def test_item_assignment_and_forward_mode_stay_lazy():
    Xn, yn, X, y = data()

    def masked(w, X, y):
        r = X @ w - y
        r[:10] = 0.0
        return np.sum(r ** 2)
    w = params_for(least_squares)
    with CountComputes() as counter:
        g = srcgrad.grad(masked)(w, X, y)
        _, t = srcgrad.jvp(least_squares, (w, X, y), (np.ones(D), None, None))
    assert counter.count == 0
    np.testing.assert_allclose(g.compute(), srcgrad.grad(masked)(w, Xn, yn), rtol=1e-10)
    _, want_t = srcgrad.jvp(least_squares, (w, Xn, yn), (np.ones(D), None, None))
    np.testing.assert_allclose(t.compute(), want_t, rtol=1e-10)
