"""srcgrad.grad against hand-written gradients (and PyTorch when installed), as ratios measured
in the same run; plus the one-off transform time and the cached lookup time.

    python benchmarks/bench_grad.py [--quick]
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

import srcgrad
from srcgrad.api import get_adjoint


def best(fn, number, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def pair(a, b, number, repeat=7):
    """Best times of ``a`` and ``b``, measured in alternation so that both see the same
    machine load (the ratio is what matters, on a shared machine)."""
    ta = tb = float("inf")
    for _ in range(repeat):
        ta = min(ta, timeit.timeit(a, number=number) / number)
        tb = min(tb, timeit.timeit(b, number=number) / number)
    return ta, tb


# -- (a) 2-layer tanh MLP loss, batch 64, 784 -> 128 -> 10 ----------------------------------
def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def mlp_grad_by_hand(W1, b1, W2, b2, x, y):
    a = x @ W1 + b1
    h = np.tanh(a)
    out = h @ W2 + b2
    d = out - y
    dout = 2.0 * d / d.size
    gW2 = h.T @ dout
    gb2 = dout.sum(axis=0)
    dh = dout @ W2.T
    da = dh * (1.0 - h * h)
    gW1 = x.T @ da
    gb1 = da.sum(axis=0)
    return gW1, gb1, gW2, gb2


def _layer(W, b, x):
    return np.tanh(x @ W + b)


def mlp_loss_with_helpers(W1, b1, W2, b2, x, y):
    """``mlp_loss`` written with a helper per layer (issue 9: it must cost what inline does)."""
    h = _layer(W1, b1, x)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


# -- (b) sum(tanh(x)*x + exp(-x*x)) on 10^6 elements ----------------------------------------
def elementwise(x):
    return np.sum(np.tanh(x) * x + np.exp(-x * x))


def elementwise_by_hand(x):
    t = np.tanh(x)
    e = np.exp(-x * x)
    return t + x * (1.0 - t * t) - 2.0 * x * e


# -- (c) 1,000 Euler steps on floats ----------------------------------------------------------
def euler(x, a):
    for _ in range(1000):
        x = x + 0.001 * a * np.sin(x)
    return x


def euler_by_hand(x, a):
    xs = []
    for _ in range(1000):
        xs.append(x)
        x = x + 0.001 * a * np.sin(x)
    g = 1.0
    for x in reversed(xs):
        g = g * (1.0 + 0.001 * a * np.cos(x))
    return g


# -- (d) 50-step RNN, hidden 64, batch 16 ------------------------------------------------------
def rnn_loss(Wh, Wx, b, xs, h0):
    h = h0
    for t in range(50):
        h = np.tanh(h @ Wh + xs[t] @ Wx + b)
    return np.sum(h * h)


def rnn_grad_by_hand(Wh, Wx, b, xs, h0):
    hs = [h0]
    h = h0
    for t in range(50):
        h = np.tanh(h @ Wh + xs[t] @ Wx + b)
        hs.append(h)
    gh = 2.0 * h
    gWh = np.zeros_like(Wh)
    gWx = np.zeros_like(Wx)
    gb = np.zeros_like(b)
    for t in range(49, -1, -1):
        da = gh * (1.0 - hs[t + 1] ** 2)
        gWh += hs[t].T @ da
        gWx += xs[t].T @ da
        gb += da.sum(axis=0)
        gh = da @ Wh.T
    return gWh, gWx, gb


# -- (e) the PyTorch tutorial's loop (examples/norm_doubling.py) under a scalar loss ----------
_WEIGHTS = np.array([0.1, 1.0, 0.0001])


def doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y * _WEIGHTS)


def doubling_by_hand(x):
    y = x * 2
    k = 1
    while np.linalg.norm(y) < 1000:
        y = y * 2
        k += 1
    return _WEIGHTS * 2.0 ** k


def linear_loop(x):
    for i in range(10000):
        x = x * 0.9999 + 0.001
    return x


def nonlinear_loop(x):
    for i in range(10000):
        x = x + 0.0001 * np.sin(x)
    return x


def main(quick: bool = False):
    rng = np.random.default_rng(0)
    n = 3 if quick else 7
    rows = []

    W1 = rng.standard_normal((784, 128)) * 0.05
    b1 = np.zeros(128)
    W2 = rng.standard_normal((128, 10)) * 0.1
    b2 = np.zeros(10)
    x = rng.standard_normal((64, 784))
    y = rng.standard_normal((64, 10))
    g = srcgrad.grad(mlp_loss, wrt=(0, 1, 2, 3))
    ref = mlp_grad_by_hand(W1, b1, W2, b2, x, y)
    for a, b in zip(g(W1, b1, W2, b2, x, y), ref):
        assert np.allclose(a, b)
    t_src, t_hand = pair(lambda: g(W1, b1, W2, b2, x, y),
                         lambda: mlp_grad_by_hand(W1, b1, W2, b2, x, y), 20, 3 * n)
    rows.append(("MLP 784-128-10, batch 64", t_src, t_hand))
    peer = _torch_mlp(W1, b1, W2, b2, x, y, n)
    W1L = rng.standard_normal((784, 1024)) * 0.05
    b1L = np.zeros(1024)
    W2L = rng.standard_normal((1024, 10)) * 0.1
    for a, b in zip(g(W1L, b1L, W2L, b2, x, y), mlp_grad_by_hand(W1L, b1L, W2L, b2, x, y)):
        assert np.allclose(a, b)
    rows.append(("MLP 784-1024-10, batch 64",
                 *pair(lambda: g(W1L, b1L, W2L, b2, x, y),
                       lambda: mlp_grad_by_hand(W1L, b1L, W2L, b2, x, y), 4, 2 * n)))
    gh = srcgrad.grad(mlp_loss_with_helpers, wrt=(0, 1, 2, 3))
    for a, b in zip(gh(W1, b1, W2, b2, x, y), ref):
        assert np.allclose(a, b)
    t_helpers, t_inline = pair(lambda: gh(W1, b1, W2, b2, x, y),
                               lambda: g(W1, b1, W2, b2, x, y), 20, 3 * n)

    xe = rng.standard_normal(10 ** 6)
    ge = srcgrad.grad(elementwise)
    assert np.allclose(ge(xe), elementwise_by_hand(xe))
    rows.append(("sum(tanh(x)*x + exp(-x*x)), 1e6",
                 *pair(lambda: ge(xe), lambda: elementwise_by_hand(xe), 3, n)))

    gu = srcgrad.grad(euler)
    assert np.allclose(gu(0.5, 2.0), euler_by_hand(0.5, 2.0))
    rows.append(("1,000 Euler steps on floats",
                 *pair(lambda: gu(0.5, 2.0), lambda: euler_by_hand(0.5, 2.0), 5, 2 * n)))

    Wh = rng.standard_normal((64, 64)) * 0.1
    Wx = rng.standard_normal((32, 64)) * 0.1
    bb = np.zeros(64)
    xs = rng.standard_normal((50, 16, 32))
    h0 = np.zeros((16, 64))
    gr = srcgrad.grad(rnn_loss, wrt=(0, 1, 2))
    for a, b in zip(gr(Wh, Wx, bb, xs, h0), rnn_grad_by_hand(Wh, Wx, bb, xs, h0)):
        assert np.allclose(a, b)
    rows.append(("RNN 50 steps, hidden 64, batch 16",
                 *pair(lambda: gr(Wh, Wx, bb, xs, h0),
                       lambda: rnn_grad_by_hand(Wh, Wx, bb, xs, h0), 5, 2 * n)))

    gd = srcgrad.grad(doubling)
    x3 = np.array([0.3, -1.2, 0.5])
    assert np.allclose(gd(x3), doubling_by_hand(x3))
    rows.append(("while norm(y) < 1000: y = y * 2",
                 *pair(lambda: gd(x3), lambda: doubling_by_hand(x3), 500, 2 * n)))

    print(f"{'benchmark':<36}{'srcgrad':>12}{'by hand':>12}{'ratio':>8}")
    for name, a, b in rows:
        print(f"{name:<36}{a * 1e6:>10.1f}us{b * 1e6:>10.1f}us{a / b:>8.2f}")
    print(f"{'MLP with a layer() helper / inline':<36}{t_helpers * 1e6:>10.1f}us"
          f"{t_inline * 1e6:>10.1f}us{t_helpers / t_inline:>8.2f}  (both srcgrad)")
    if peer is not None:
        print(f"{'PyTorch eager MLP (same inputs)':<36}{peer * 1e6:>10.1f}us"
              f"{'':>12}{peer / rows[0][2]:>8.2f}  (vs by hand)")

    # one-off transform cost and cached lookup
    import srcgrad.api as api

    def fresh_transform():
        api._CACHE.pop(mlp_loss.__code__, None)
        get_adjoint(mlp_loss, (0, 1, 2, 3))

    t_transform = best(fresh_transform, 5, n)
    get_adjoint(mlp_loss, (0, 1, 2, 3))
    t_lookup = best(lambda: srcgrad.grad(mlp_loss, wrt=(0, 1, 2, 3)), 2000, n)
    t_cached = best(lambda: get_adjoint(mlp_loss, (0, 1, 2, 3)), 2000, n)
    print(f"transform (MLP loss, uncached): {t_transform * 1e3:.2f} ms")
    print(f"srcgrad.grad(f) (cached): {t_lookup * 1e6:.2f} us; adjoint lookup: "
          f"{t_cached * 1e6:.2f} us")

    # tapes of 10,000-iteration loops: only values an adjoint reads are recorded
    for fn, x0, what in ((linear_loop, 0.5, "x = x * 0.9999 + 0.001 (floats)"),
                         (nonlinear_loop, 0.5, "x = x + 0.0001 * sin(x) (floats)"),
                         (nonlinear_loop, np.full(100, 0.5), "same on a 100-vector")):
        adj = get_adjoint(fn, (0,))
        if np.ndim(x0) == 0:
            adj = adj.scalar_variant()
        value, saved = adj.fwd(x0)
        tape = saved[0] if saved and isinstance(saved[0], list) else []
        nbytes = sum(np.asarray(v).nbytes for v in tape)
        print(f"tape, 10,000 iterations of {what}: {len(tape)} entries, {nbytes} bytes")


def _torch_mlp(W1, b1, W2, b2, x, y, n):
    try:
        import torch
    except ImportError:
        return None
    ts = [torch.tensor(a, requires_grad=True) for a in (W1, b1, W2, b2)]
    tx, ty = torch.tensor(x), torch.tensor(y)

    def step():
        for t in ts:
            t.grad = None
        loss = ((torch.tanh(tx @ ts[0] + ts[1]) @ ts[2] + ts[3] - ty) ** 2).mean()
        loss.backward()
    return best(step, 50, n)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
