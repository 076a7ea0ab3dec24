"""The PyTorch autograd tutorial's loop, differentiated by source transformation.

    y = x * 2
    while norm(y) < 1000:
        y = y * 2

The loop runs a data-dependent number of times k, so y = x * 2**k and the vector-Jacobian
product with v is v * 2**k. srcgrad counts the trips in the forward sweep, hands the count to
the backward sweep in its saved values, and replays the loop backwards there; the printed
source shows both.
"""
import numpy as np

import srcgrad


def doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def main():
    x = np.array([0.3, -1.2, 0.5])
    v = np.array([0.1, 1.0, 0.0001])
    y, pullback = srcgrad.vjp(doubling, x)
    (gx,) = pullback(v)
    k = round(np.log2(np.linalg.norm(y) / np.linalg.norm(x)))
    print("x          =", x)
    print("y          =", y)
    print(f"k          = {k}  (y = x * 2**k)")
    print("v^T dy/dx  =", gx)
    print("v * 2**k   =", v * 2.0 ** k)
    assert np.allclose(gx, v * 2.0 ** k)

    # A scalar loss through the same loop, with srcgrad.grad
    loss = srcgrad.grad(lambda x: np.sum(doubling(x) * np.array([0.1, 1.0, 0.0001])))
    print("grad of v.y =", loss(x))
    print("\nGenerated source (srcgrad.source):\n")
    print(srcgrad.source(pullback))


if __name__ == "__main__":
    main()
