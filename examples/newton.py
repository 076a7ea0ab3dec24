"""Newton's method on the Rosenbrock function with srcgrad.hessian.

The Hessian comes from forward mode over the generated gradient (``jacfwd(grad(f))``): no
hand-written derivatives. Each step solves H p = -g (with H shifted to be positive definite
where it is not) and prints the convergence; near the minimum it is quadratic. The plot
(newton_convergence.png) shows |grad| and the distance to the minimum per step, with the
path through the Rosenbrock valley.

    python examples/newton.py
"""
import numpy as np

import srcgrad


def rosenbrock(x):
    total = 0.0
    for i in range(len(x) - 1):
        total = total + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return total


def positive_definite(H):
    """H, or H + mu I when H is not positive definite (away from the minimum the Rosenbrock
    Hessian can be indefinite, and the plain Newton step then points uphill)."""
    mu = 0.0
    while True:
        try:
            np.linalg.cholesky(H + mu * np.eye(len(H)))
            return H + mu * np.eye(len(H))
        except np.linalg.LinAlgError:
            mu = max(2 * mu, 1e-3 * np.abs(H).max())


def newton(f, x, steps=50, tol=1e-10, path=None):
    gradient = srcgrad.grad(f)
    hessian = srcgrad.hessian(f)
    print(f"{'step':>4}  {'f(x)':>12}  {'|grad|':>10}  x")
    for step in range(steps):
        g = gradient(x)
        if path is not None:
            path.append((x, np.linalg.norm(g)))
        print(f"{step:>4}  {f(x):>12.4e}  {np.linalg.norm(g):>10.3e}  {np.round(x, 6)}")
        if np.linalg.norm(g) < tol:
            break
        p = np.linalg.solve(positive_definite(hessian(x)), -g)
        # backtracking keeps each step a descent step far from the minimum
        t = 1.0
        while f(x + t * p) > f(x) and t > 1e-8:
            t *= 0.5
        x = x + t * p
    return x


def plot(path):
    from _plots import save_plot
    xs = np.array([p[0] for p in path])
    norms = np.array([p[1] for p in path])

    def draw(axes):
        left, right = axes
        steps = np.arange(len(path))
        left.semilogy(steps, norms, marker="o", label="|grad f|")
        left.semilogy(steps, np.linalg.norm(xs - 1.0, axis=1), marker=".",
                      label="|x - x*|")
        left.set_xlabel("Newton step")
        left.legend()
        u, v = np.meshgrid(np.linspace(-1.5, 1.5, 200), np.linspace(-0.5, 1.5, 200))
        right.contour(u, v, np.log1p(100 * (v - u ** 2) ** 2 + (1 - u) ** 2), 15,
                      linewidths=0.5)
        right.plot(xs[:, 0], xs[:, 1], "o-", markersize=3, color="C3")
        right.plot([1.0], [1.0], "k*")
        right.set_title("path through the valley", fontsize=9)

    save_plot("newton_convergence.png", draw, size=(7.5, 3.0), ncols=2)


if __name__ == "__main__":
    path = []
    x = newton(rosenbrock, np.array([-1.2, 1.0]), path=path)  # the classic start
    print("minimum found at", np.round(x, 8), "(the global minimum is at (1, 1))")
    plot(path)
