"""Train a small MLP on scikit-learn's bundled handwritten digits with plain SGD.

Parameters live in a dict; ``srcgrad.grad`` returns the gradient as a dict of the same
shape. Needs the optional extra: ``pip install -e '.[examples]'`` (scikit-learn for the
offline dataset, matplotlib for the loss-curve plot).
"""
import numpy as np

import srcgrad


def init_params(rng, sizes):
    params = {}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"W{i}"] = rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / n_in)
        params[f"b{i}"] = np.zeros(n_out)
    return params


def predict(params, x):
    h = np.tanh(x @ params["W0"] + params["b0"])
    return h @ params["W1"] + params["b1"]


def loss(params, x, labels_onehot):
    logits = predict(params, x)
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(log_probs * labels_onehot, axis=1))


def main(epochs=60, batch=32, lr=0.1, seed=0):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.data / 16.0
    y = digits.target
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25,
                                                        random_state=seed, stratify=y)
    onehot = np.eye(10)[y_train]
    rng = np.random.default_rng(seed)
    params = init_params(rng, [64, 64, 10])
    dloss = srcgrad.value_and_grad(loss)
    curve = []
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        total = 0.0
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            value, grads = dloss(params, x_train[idx], onehot[idx])
            for k in params:
                params[k] = params[k] - lr * grads[k]
            total += value * len(idx)
        curve.append(total / len(x_train))
        if epoch % 10 == 0 or epoch == epochs - 1:
            accuracy = np.mean(np.argmax(predict(params, x_test), axis=1) == y_test)
            print(f"epoch {epoch:3d}  loss {curve[-1]:.4f}  test accuracy {accuracy:.3f}")
    accuracy = np.mean(np.argmax(predict(params, x_test), axis=1) == y_test)
    print(f"final test accuracy: {accuracy:.3f}")
    _plot(curve)
    return accuracy


def _plot(curve):
    from _plots import save_plot

    def draw(ax):
        ax.plot(np.arange(1, len(curve) + 1), curve)
        ax.set_xlabel("epoch")
        ax.set_ylabel("training loss (cross-entropy)")
        ax.set_yscale("log")
    save_plot("train_mlp_loss.png", draw)


if __name__ == "__main__":
    assert main() >= 0.95
