"""Finite-difference checks of gradients, for any nesting of dicts/lists/tuples of floats."""
from __future__ import annotations

import numpy as np


def flatten(x):
    """Leaves of a structure as a list of arrays (floats become 0-d arrays)."""
    if isinstance(x, dict):
        return [leaf for k in sorted(x, key=str) for leaf in flatten(x[k])]
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in flatten(v)]
    if hasattr(x, "__dict__") and not isinstance(x, np.ndarray):
        return [leaf for k in sorted(vars(x)) for leaf in flatten(vars(x)[k])]
    return [np.asarray(x, dtype=float)]


def perturb(x, direction, eps, it=None):
    """``x + eps * direction`` where direction is a flat list of leaf arrays."""
    it = iter(direction) if it is None else it
    if isinstance(x, dict):
        return {k: perturb(x[k], None, eps, it) for k in sorted(x, key=str)}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[perturb(v, None, eps, it) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(perturb(v, None, eps, it) for v in x)
    if hasattr(x, "__dict__") and not isinstance(x, np.ndarray):
        import copy
        out = copy.copy(x)
        for k in sorted(vars(x)):
            setattr(out, k, perturb(vars(x)[k], None, eps, it))
        return out
    d = next(it)
    if isinstance(x, np.ndarray):
        return x + eps * d
    return float(x + eps * d)


def check_grad(f, args, wrt=(0,), grads=None, seed=0, eps=1e-6, rtol=1e-6, atol=1e-8,
               kwargs=None):
    """Dot-product test: <grad, v> against (f(x + eps v) - f(x - eps v)) / 2 eps."""
    import srcgrad
    kwargs = kwargs or {}
    if grads is None:
        g = srcgrad.grad(f, wrt=tuple(wrt))(*args, **kwargs)
    else:
        g = grads
    rng = np.random.default_rng(seed)
    for _ in range(2):
        plus, minus = list(args), list(args)
        predicted = 0.0
        for k, i in enumerate(wrt):
            leaves = flatten(args[i])
            direction = [rng.standard_normal(leaf.shape) for leaf in leaves]
            gleaves = flatten(g[k])
            assert len(gleaves) == len(leaves), (len(gleaves), len(leaves))
            for gl, d, leaf in zip(gleaves, direction, leaves):
                assert np.shape(gl) == leaf.shape, (np.shape(gl), leaf.shape)
                predicted += float(np.sum(gl * d))
            plus[i] = perturb(args[i], direction, eps)
            minus[i] = perturb(args[i], direction, -eps)
        numeric = (float(np.sum(f(*plus, **kwargs))) - float(np.sum(f(*minus, **kwargs)))) \
            / (2 * eps)
        scale = max(abs(numeric), abs(predicted), 1.0)
        assert abs(numeric - predicted) <= rtol * scale + atol, \
            f"finite differences {numeric!r} vs gradient {predicted!r}"
    return g


def check_orders(f, x, direction=None, hessian=False, eps=1e-6):
    """``f``'s gradient (check_grad), its jvp along ``direction`` (ones by default) and, with
    ``hessian``, its Hessian, each against central differences: the first and second order
    and forward mode of a scalar function of one array."""
    import srcgrad
    check_grad(f, (x,))
    v = np.ones_like(x) if direction is None else direction
    _, tangent = srcgrad.jvp(f, (x,), (v,))
    numeric = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
    assert np.isclose(tangent, numeric, rtol=1e-6, atol=1e-8), (tangent, numeric)
    if hessian:
        g = srcgrad.grad(f)
        numeric_h = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps)
                              for e in np.eye(x.size).reshape((x.size,) + x.shape)])
        assert np.allclose(srcgrad.hessian(f)(x), numeric_h.reshape(x.shape + x.shape),
                           rtol=1e-5, atol=1e-6)
