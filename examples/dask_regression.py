"""Logistic regression over a chunked dask dataset: the gradient is one lazy dask graph.

srcgrad's generated code calls numpy functions, which dispatch to dask through numpy's
``__array_function__``/``__array_ufunc__`` protocols, so the same gradient function that runs
on numpy arrays builds a dask graph when the data are dask arrays: nothing is computed until
dask's scheduler runs it, one chunk at a time. The data here are generated chunk by chunk
(never whole in memory); with ``--rows 100_000_000`` the dataset (8 GB) exceeds this
machine's memory share and the gradient is still computed, streaming.

    pip install -e '.[dask]' && python examples/dask_regression.py [--rows N] [--chunk C]
"""
import argparse
import time

import numpy as np

import srcgrad

try:
    import dask
    import dask.array as da
except ImportError:  # an optional extra
    da = None

FEATURES = 10


def loss(w, X, y):
    """Mean logistic loss with a small ridge penalty (labels y are -1 or +1)."""
    z = X @ w
    return np.mean(np.logaddexp(0.0, -y * z)) + 1e-3 * np.sum(w ** 2)


def make_data(rows: int, chunk: int, seed: int = 0):
    """A synthetic dataset, generated lazily chunk by chunk."""
    state = da.random.RandomState(seed)
    X = state.standard_normal((rows, FEATURES), chunks=(chunk, FEATURES))
    w_true = np.linspace(-1.0, 1.0, FEATURES)
    y = np.sign(X @ w_true + 0.5 * state.standard_normal(rows, chunks=chunk))
    return X, y


def main(rows=400_000, chunk=20_000, steps=25, lr=2.0):
    if da is None:
        print("this example needs dask: pip install 'srcgrad[dask]'")
        return None
    X, y = make_data(rows, chunk)
    print(f"dataset: {rows:,} rows x {FEATURES} features in {X.numblocks[0]} chunks of "
          f"{chunk:,} rows ({X.nbytes / 1e6:,.0f} MB)")
    w = np.zeros(FEATURES)
    value_and_grad = srcgrad.value_and_grad(loss)

    value, g = value_and_grad(w, X, y)  # builds the graph: nothing is computed yet
    print(f"gradient: a lazy {type(g).__module__}.{type(g).__name__} of shape {g.shape}, "
          f"{len(g.__dask_graph__()):,} tasks")
    start = time.perf_counter()
    value, g = dask.compute(value, g, scheduler="threads")
    print(f"computed by dask's threaded scheduler in {time.perf_counter() - start:.2f} s: "
          f"loss {value:.6f}")

    if X.nbytes <= 1e9:  # small enough to hold: compare with the in-memory gradient
        Xn, yn = dask.compute(X, y)
        value_np, g_np = value_and_grad(w, Xn, yn)
        error = np.max(np.abs(g - g_np))
        print(f"in-memory numpy gradient: max difference {error:.2e}, loss difference "
              f"{abs(value - value_np):.2e}")
        assert error < 1e-10 and abs(value - value_np) < 1e-10

    curve = []
    for step in range(steps):  # gradient descent: one dask graph per step
        value, g = dask.compute(*value_and_grad(w, X, y), scheduler="threads")
        curve.append(value)
        w = w - lr * g
    print(f"after {steps} steps of gradient descent: loss {curve[-1]:.4f}, "
          f"w = {np.round(w, 2)}")
    _plot(curve)
    return curve


def _plot(curve):
    from _plots import save_plot

    def draw(ax):
        ax.plot(np.arange(len(curve)), curve, marker=".")
        ax.set_xlabel("gradient descent step")
        ax.set_ylabel("logistic loss (dask)")
    save_plot("dask_regression_loss.png", draw)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--chunk", type=int, default=20_000)
    args = parser.parse_args()
    main(rows=args.rows, chunk=args.chunk)
