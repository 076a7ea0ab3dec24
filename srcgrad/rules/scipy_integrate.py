"""Rule of ``scipy.integrate.odeint``: gradients by the adjoint method, tangents by forward
sensitivities.

Imported by the registry once ``scipy.integrate`` is (scipy is optional).

For ``y' = f(y, t, *args)`` solved at times ``t[0..T-1]`` with cotangent ``g`` of the solution:
the adjoint state ``a`` starts at ``g[T-1]`` and is integrated backwards from ``t[i]`` to
``t[i-1]`` together with ``y`` and the parameters' adjoint ``p``, by the published system
``y' = f``, ``a' = -a^T df/dy``, ``p' = -a^T df/dargs``; on reaching ``t[i-1]`` the
cotangent ``g[i-1]`` is added to ``a``. ``df/dt`` enters only through the times: the gradient
of ``t[i]`` is ``g[i] . f(y_i, t_i)``, corrected at the first time by ``-a(t0) . f(y0, t0)``.

``f``'s vector-Jacobian and Jacobian-vector products come from srcgrad itself, through the
runtime's dispatch of calls known only at run time (``call_fwd``/``call_bwd``/``call_jvp``),
so ``f`` is any Python function srcgrad can differentiate. The vjp integrates with odeint
again, so it has no second order (``second_order=False``).
"""
import numpy as np
import scipy.integrate

from .. import runtime as rt
from ..errors import UnsupportedFeatureError
from .registry import defrule

_odeint = scipy.integrate.odeint


def _dynamics_call(func, y, t, args, tfirst):
    return (func, (t, y) + tuple(args)) if tfirst else (func, (y, t) + tuple(args))


def _vjp_of_dynamics(func, y, t, args, tfirst, a):
    """``(f(y, t), a^T df/dy, a^T df/dt, [a^T df/darg_k])``."""
    fn, operands = _dynamics_call(func, y, t, args, tfirst)
    value, record = rt.call_fwd(fn, *operands)
    positional, _ = rt.call_bwd(record, a)
    gy, gt = (positional[1], positional[0]) if tfirst else (positional[0], positional[1])
    gargs = positional[2:]
    flat = [v for ga, arg in zip(gargs, args) for v in _flat(arg, ga)]
    return (np.asarray(value, dtype=float), _dense(gy, y), _dense(gt, t),
            np.concatenate(flat) if flat else np.zeros(0))


def _dense(g, like):
    return np.zeros(np.shape(like)) if rt.is_zero(g) else np.asarray(g, dtype=float)


def _flat(x, g) -> list:
    """The leaves of cotangent ``g`` of argument ``x`` (nested lists, tuples and dicts of
    arrays, as network parameters are), raveled, zeros where ``g`` is the lazy zero."""
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flat(x[k], rt.part(g, k))]
    if isinstance(x, (list, tuple)):
        return [v for i, xi in enumerate(x) for v in _flat(xi, rt.part(g, i))]
    return [np.ravel(_dense(g, x))]


def _unflat(x, flat: np.ndarray, start: int = 0):
    """``(cotangent shaped like x, next start)`` from a flat vector of leaves."""
    if isinstance(x, dict):
        out = {}
        for k in sorted(x):
            out[k], start = _unflat(x[k], flat, start)
        return {k: out[k] for k in x}, start
    if isinstance(x, (list, tuple)):
        items = []
        for xi in x:
            item, start = _unflat(xi, flat, start)
            items.append(item)
        return (type(x)(*items) if hasattr(x, "_fields") else type(x)(items)), start
    size = int(np.size(x))
    piece = flat[start:start + size]
    return (float(piece[0]) if np.ndim(x) == 0 else piece.reshape(np.shape(x))), start + size


def _check_options(options):
    if options.get("full_output"):
        raise UnsupportedFeatureError("differentiating odeint(..., full_output=True) is not "
                                      "supported; call it without full_output")


def odeint_vjp(g, ans, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0,
               ml=None, mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0,
               hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0,
               tfirst=False):
    """Cotangents of ``y0``, ``t`` and ``args`` (a tuple, one cotangent per item)."""
    _check_options({"full_output": full_output})
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    y0 = np.asarray(y0, dtype=float)
    n = y0.size
    g = np.asarray(g, dtype=float).reshape(len(t), n)
    n_params = sum(v.size for arg in args for v in _flat(arg, rt.ZERO))
    tol = {"rtol": rtol, "atol": atol}

    def augmented(state, time):
        y, a = state[:n], state[n:2 * n]
        dy, ay, _, aargs = _vjp_of_dynamics(func, y.reshape(y0.shape), time, args, tfirst,
                                            a.reshape(y0.shape))
        return np.concatenate([np.ravel(dy), -np.ravel(ay), -aargs])

    adj_y = g[-1].copy()
    adj_args = np.zeros(n_params)
    adj_t = np.zeros(len(t))
    for i in range(len(t) - 1, 0, -1):
        f_i, _, _, _ = _vjp_of_dynamics(func, ans[i].reshape(y0.shape), t[i], args, tfirst,
                                        np.zeros(y0.shape))
        adj_t[i] = np.dot(g[i], np.ravel(f_i))
        state = np.concatenate([np.ravel(ans[i]), adj_y, adj_args])
        back = _odeint(augmented, state, np.array([t[i], t[i - 1]]), **tol)[-1]
        adj_y = back[n:2 * n] + g[i - 1]
        adj_args = back[2 * n:]
    f_0, _, _, _ = _vjp_of_dynamics(func, y0, t[0], args, tfirst, np.zeros(y0.shape))
    # moving t[0] moves every later state by -f(y0, t0) (the solution at t[0] is y0 itself)
    adj_t[0] = -np.dot(adj_y - g[0], np.ravel(f_0))
    parts, start = [], 0
    for arg in args:
        part, start = _unflat(arg, adj_args, start)
        parts.append(part)
    return adj_y.reshape(y0.shape), adj_t, tuple(parts)


def odeint_jvp(dy0, dt, dargs, ans, func, y0, t, args=(), Dfun=None, col_deriv=0,
               full_output=0, ml=None, mu=None, rtol=None, atol=None, tcrit=None, h0=0.0,
               hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5,
               printmessg=0, tfirst=False):
    """Tangent contributions of ``y0``, ``t`` and ``args``: forward sensitivities
    ``s' = df/dy s + df/dargs dargs`` integrated with the solution."""
    _check_options({"full_output": full_output})
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    y0 = np.asarray(y0, dtype=float)
    n, shape = y0.size, y0.shape
    tol = {"rtol": rtol, "atol": atol}

    def sensitivity(d_y0, d_args):
        def augmented(state, time):
            y, s = state[:n].reshape(shape), state[n:].reshape(shape)
            fn, operands = _dynamics_call(func, y, time, args, tfirst)
            tangents = [ZERO_T] * len(operands)
            tangents[1 if tfirst else 0] = s
            for k, d in enumerate(d_args):
                tangents[2 + k] = d
            value, tangent = rt.call_jvp(fn, tuple(tangents), {}, *operands)
            return np.concatenate([np.ravel(value), np.ravel(_dense(tangent, y))])
        state = np.concatenate([np.ravel(y0), np.ravel(d_y0)])
        out = _odeint(augmented, state, t, **tol)[:, n:]
        return out.reshape(ans.shape)

    zeros = [ZERO_T] * len(args)
    from_y0 = ZERO_T if rt.is_zero(dy0) else sensitivity(dy0, zeros)
    from_t = ZERO_T
    if not rt.is_zero(dt):
        # moving t[i] moves the solution there along f; moving t[0] shifts every later state
        f = np.stack([np.ravel(_vjp_of_dynamics(func, ans[i].reshape(shape), t[i], args,
                                                tfirst, np.zeros(shape))[0])
                      for i in range(len(t))]).reshape(ans.shape)
        dt = np.asarray(dt, dtype=float)
        shift = sensitivity(-dt[0] * f[0].reshape(shape), zeros)
        from_t = dt.reshape((-1,) + (1,) * (ans.ndim - 1)) * f + shift
        from_t[0] = 0.0  # the solution at t[0] is y0, wherever t[0] is
    from_args = ZERO_T
    if not rt.is_zero(dargs):
        dargs = tuple(dargs) if isinstance(dargs, (tuple, list)) else (dargs,)
        if not all(rt.is_zero(d) for d in dargs):
            from_args = sensitivity(np.zeros(shape), list(dargs))
    return from_y0, from_t, from_args


ZERO_T = rt.ZERO


def _decay(y, t, k):
    return -k * y + np.sin(t) * y ** 2 * 0.1


def _pendulum(t, y, damping):
    return np.array([y[1], -np.sin(y[0]) - damping * y[1]])


def _odeint_domain(rng):
    times = np.array([0.0, 0.4, 0.9, 1.5])
    return [((_decay, rng.uniform(0.5, 1.0, 3), times), {"args": (0.7,), "rtol": 1e-13,
                                                          "atol": 1e-13}),
            ((_pendulum, rng.uniform(-0.5, 0.5, 2), times), {"args": (0.3,), "tfirst": True,
                                                             "rtol": 1e-13, "atol": 1e-13})]


defrule(scipy.integrate.odeint, odeint_vjp, diff_args=(1, 2, 3), jvp=odeint_jvp,
        domain=_odeint_domain, second_order=False, name="scipy.integrate.odeint")
