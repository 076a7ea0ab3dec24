"""Per-example gradients with ``vmap(grad(f))``, as DP-SGD needs them (clip each example's
gradient, then average).

``srcgrad.vmap`` rewrites the generated gradient's source once more, so the whole batch goes
through each numpy call together; the result matches a Python loop over the examples. The
batched code is printed; the plot shows the per-example gradient norms before clipping.

    python examples/per_example_gradients.py
"""
import time

import numpy as np

import srcgrad


def loss(params, x, y):
    """Softmax cross-entropy of a one-hidden-layer network on one example."""
    h = np.tanh(params["W1"] @ x + params["b1"])
    logits = params["W2"] @ h
    shifted = logits - np.max(logits)
    return np.log(np.sum(np.exp(shifted))) - shifted @ y


def main(batch=256, clip=6.0, seed=0):
    rng = np.random.default_rng(seed)
    params = {"W1": rng.standard_normal((32, 20)) * 0.3, "b1": np.zeros(32),
              "W2": rng.standard_normal((5, 32)) * 0.3}
    X = rng.standard_normal((batch, 20))
    Y = np.eye(5)[rng.integers(0, 5, batch)]

    per_example = srcgrad.vmap(srcgrad.grad(loss), in_axes=(None, 0, 0))
    grads = per_example(params, X, Y)  # each leaf has a leading batch axis
    print(srcgrad.source(srcgrad.vmap(loss, in_axes=(None, 0, 0))))  # the batched loss

    start = time.perf_counter()
    for _ in range(10):
        grads = per_example(params, X, Y)
    batched = (time.perf_counter() - start) / 10
    g = srcgrad.grad(loss)
    start = time.perf_counter()
    looped = [g(params, x, y) for x, y in zip(X, Y)]
    loop_time = time.perf_counter() - start
    error = max(np.max(np.abs(grads[k][i] - looped[i][k])) for i in range(batch)
                for k in params)
    print(f"{batch} per-example gradients: vmap {batched * 1e3:.1f} ms, Python loop "
          f"{loop_time * 1e3:.1f} ms ({loop_time / batched:.0f}x); max difference {error:.1e}")
    assert error < 1e-12

    norms = np.sqrt(sum(np.sum(grads[k] ** 2, axis=tuple(range(1, grads[k].ndim)))
                        for k in params))
    scale = np.minimum(1.0, clip / norms)
    clipped = {k: np.mean(grads[k] * scale.reshape((-1,) + (1,) * (grads[k].ndim - 1)),
                          axis=0) for k in params}
    print(f"gradient norms: median {np.median(norms):.3f}, max {norms.max():.3f}; "
          f"{np.mean(norms > clip):.0%} clipped to {clip}")
    print("clipped mean gradient norm:",
          f"{np.sqrt(sum(np.sum(v ** 2) for v in clipped.values())):.4f}")
    _plot(norms, clip)
    return clipped


def _plot(norms, clip):
    from _plots import save_plot

    def draw(ax):
        ax.hist(norms, bins=30)
        ax.axvline(clip, color="k", linestyle=":", label="clip")
        ax.set_xlabel("per-example gradient norm")
        ax.set_ylabel("examples")
        ax.legend()
    save_plot("per_example_gradient_norms.png", draw)


if __name__ == "__main__":
    main()
