"""Compiled gradients (jit=True) against interpreted srcgrad and hand-written numpy gradients.

Run: taskset -c 1 python benchmarks/bench_jit.py (add --fresh for each first call in a
fresh process instead, numba's and JAX's start-up included, srcgrad's with numba's on-disk
cache empty and filled; --second for hvp and hessian). Prints the steady-state time per gradient
call of each (best of several repeats), as ratios to the hand-written gradient, and the first
call's time (numba's compile included); then, when jax is installed (never a dependency of
srcgrad), jax.jit(jax.grad(f)) on the same workloads: steady state and first call (trace and
XLA compile), or the error JAX raises (reverse mode through a data-dependent while).
"""
from __future__ import annotations

import math
import os
import time

import numpy as np

import srcgrad

# -- workloads ---------------------------------------------------------------------------


def euler(x):
    for i in range(1000):
        x = x + 0.001 * math.sin(x)
    return x


def euler_hand(x):
    xs = []
    for i in range(1000):
        xs.append(x)
        x = x + 0.001 * math.sin(x)
    g = 1.0
    for x in reversed(xs):
        g = g * (1.0 + 0.001 * math.cos(x))
    return g


def doubling(y):
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y)


def doubling_hand(y):
    n = 0
    while np.linalg.norm(y) < 1000:
        y = y * 2
        n += 1
    return np.full(y.shape, 2.0 ** n)


def rnn(W, U, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U)
    return np.sum(h)


def rnn_hand(W, U, xs, h):
    hs = [h]
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U)
        hs.append(h)
    gW, gU, gh = np.zeros_like(W), np.zeros_like(U), np.ones_like(h)
    for t in range(xs.shape[0] - 1, -1, -1):
        ga = gh * (1.0 - hs[t + 1] ** 2)
        gW += hs[t].T @ ga
        gU += xs[t].T @ ga
        gh = ga @ W.T
    return gW, gU


def particle(v0, drag):
    """A projectile with quadratic drag, stepped until it falls back to the ground."""
    x = 0.0
    y = 0.0
    vx = v0
    vy = v0
    t = 0
    while y >= 0.0 and t < 100000:
        speed = math.sqrt(vx * vx + vy * vy)
        vx = vx - 0.001 * drag * speed * vx
        vy = vy - 0.001 * (9.81 + drag * speed * vy)
        x = x + 0.001 * vx
        y = y + 0.001 * vy
        t = t + 1
    return x


def particle_hand(v0, drag):
    x = y = 0.0
    vx = vy = v0
    states = []
    t = 0
    while y >= 0.0 and t < 100000:
        states.append((vx, vy))
        speed = math.sqrt(vx * vx + vy * vy)
        vx, vy = vx - 0.001 * drag * speed * vx, vy - 0.001 * (9.81 + drag * speed * vy)
        x += 0.001 * vx
        y += 0.001 * vy
        t += 1
    # adjoints of (x, y, vx, vy) and of the parameters; v0 enters through vx and vy
    bx, by, bvx, bvy, bdrag = 1.0, 0.0, 0.0, 0.0, 0.0
    for vx, vy in reversed(states):
        s = math.sqrt(vx * vx + vy * vy)
        gvx = bvx + 0.001 * bx  # adjoint of the new vx (x += dt*vx, after the update)
        gvy = bvy + 0.001 * by
        ds_dvx, ds_dvy = vx / s, vy / s
        bvx = gvx * (1 - 0.001 * drag * (s + vx * ds_dvx)) - gvy * 0.001 * drag * vy * ds_dvx
        bvy_new = gvy * (1 - 0.001 * drag * (s + vy * ds_dvy)) - gvx * 0.001 * drag * vx * ds_dvy
        bdrag += -gvx * 0.001 * s * vx - gvy * 0.001 * s * vy
        bvy = bvy_new
    return bvx + bvy, bdrag


def mlp(W1, b1, W2, b2, x):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean(out ** 2)


def mlp_hand(W1, b1, W2, b2, x):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    gout = 2.0 * out / out.size
    gh = gout @ W2.T
    ga = gh * (1.0 - h * h)
    return x.T @ ga, ga.sum(0), h.T @ gout, gout.sum(0)


rng = np.random.default_rng(0)
WORKLOADS = [
    ("Euler loop, 1000 steps on floats", euler, euler_hand, (0.5,), (0,)),
    ("while norm(y) < 1000: y = y * 2", doubling, doubling_hand,
     (rng.standard_normal(100) * 1e-3,), (0,)),
    ("RNN, 50 steps, hidden 64, batch 16", rnn, rnn_hand,
     (rng.standard_normal((64, 64)) * 0.1, rng.standard_normal((32, 64)) * 0.1,
      rng.standard_normal((50, 16, 32)), np.zeros((16, 64))), (0, 1)),
    ("particle with drag until it lands", particle, particle_hand, (20.0, 0.05), (0, 1)),
    ("2-layer MLP, 256x64 -> 128 -> 10", mlp, mlp_hand,
     (rng.standard_normal((64, 128)) * 0.1, np.zeros(128), rng.standard_normal((128, 10)) * 0.1,
      np.zeros(10), rng.standard_normal((256, 64))), (0, 1, 2, 3)),
]


def best_time(fn, args, repeat=5, min_time=0.2) -> float:
    """Seconds per call: the best of ``repeat`` runs of enough calls to take ``min_time``."""
    fn(*args)
    n, t = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn(*args)
        t = time.perf_counter() - start
        if t > min_time / repeat or n > 10**6:
            break
        n *= 4
    best = t / n
    for _ in range(repeat - 1):
        start = time.perf_counter()
        for _ in range(n):
            fn(*args)
        best = min(best, (time.perf_counter() - start) / n)
    return best


def check(got, want, name):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        if not np.allclose(g, w, rtol=1e-6, atol=1e-9):
            raise AssertionError(f"{name}: gradients disagree")


# -- JAX: the same workloads written with jax.numpy --------------------------------------

def jax_workloads(jax):
    """``name -> (function, how)`` for ``jax.jit(jax.grad(function, argnums))``; ``how`` says
    how the loop is written. Python loops are unrolled at trace time (the same source as the
    srcgrad workload); a data-dependent ``while`` needs ``lax.while_loop``, which JAX cannot
    differentiate in reverse mode: that one is expected to raise."""
    jnp, lax = jax.numpy, jax.lax

    def euler_unrolled(x):
        for i in range(1000):
            x = x + 0.001 * jnp.sin(x)
        return x

    def euler_fori(x):
        return lax.fori_loop(0, 1000, lambda i, x: x + 0.001 * jnp.sin(x), x)

    def doubling_while(y):
        y = lax.while_loop(lambda y: jnp.linalg.norm(y) < 1000, lambda y: y * 2, y)
        return jnp.sum(y)

    def rnn_jax(W, U, xs, h):
        for t in range(xs.shape[0]):
            h = jnp.tanh(h @ W + xs[t] @ U)
        return jnp.sum(h)

    def particle_while(v0, drag):
        def step(s):
            x, y, vx, vy, t = s
            speed = jnp.sqrt(vx * vx + vy * vy)
            vx2 = vx - 0.001 * drag * speed * vx
            vy2 = vy - 0.001 * (9.81 + drag * speed * vy)
            return x + 0.001 * vx2, y + 0.001 * vy2, vx2, vy2, t + 1
        s = lax.while_loop(lambda s: (s[1] >= 0.0) & (s[4] < 100000), step,
                           (0.0 * v0, 0.0 * v0, v0, v0, 0))
        return s[0]

    def particle_masked(v0, drag):
        # JAX's workaround for a data-dependent stop: scan the bound, freeze once landed
        def step(s, _):
            x, y, vx, vy, t = s
            go = (y >= 0.0) & (t < 100000)
            speed = jnp.sqrt(vx * vx + vy * vy)
            vx2 = vx - 0.001 * drag * speed * vx
            vy2 = vy - 0.001 * (9.81 + drag * speed * vy)
            new = (x + 0.001 * vx2, y + 0.001 * vy2, vx2, vy2, t + 1)
            return tuple(jnp.where(go, n, o) for n, o in zip(new, s)), None
        s, _ = lax.scan(step, (0.0 * v0, 0.0 * v0, v0, v0, 0), None, length=PARTICLE_BOUND)
        return s[0]

    def mlp_jax(W1, b1, W2, b2, x):
        h = jnp.tanh(x @ W1 + b1)
        out = h @ W2 + b2
        return jnp.mean(out ** 2)

    return {
        "Euler loop, 1000 steps on floats": [(euler_unrolled, "Python loop, unrolled"),
                                             (euler_fori, "lax.fori_loop")],
        "while norm(y) < 1000: y = y * 2": [(doubling_while, "lax.while_loop")],
        "RNN, 50 steps, hidden 64, batch 16": [(rnn_jax, "Python loop, unrolled")],
        "particle with drag until it lands": [(particle_while, "lax.while_loop"),
                                              (particle_masked, f"lax.scan over a bound of {PARTICLE_BOUND} "
                                                                "steps, masked")],
        "2-layer MLP, 256x64 -> 128 -> 10": [(mlp_jax, "")],
    }


PARTICLE_BOUND = 3000  # (the projectile lands after 2690 steps; the source's bound is
# 100000, which the masked scan would run in full)


def jax_columns():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def time_jax(jax, fn, how, args, wrt, hand, name, clock=time.perf_counter) -> dict:
    """First call (trace and compile, timed by ``clock``) and steady state of
    jax.jit(jax.grad(fn)), or the error it raises."""
    g = jax.jit(jax.grad(fn, argnums=wrt if len(wrt) > 1 else wrt[0]))

    def call(*a):
        return jax.block_until_ready(g(*a))
    start = clock()
    try:
        got = call(*args)
    except Exception as e:  # noqa: BLE001 (reverse mode through lax.while_loop)
        return {"how": how, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:90]}"}
    first = clock() - start
    got = tuple(np.asarray(v) for v in got) if isinstance(got, tuple) else np.asarray(got)
    check(got, hand(*args), f"{name} (jax, {how})")
    return {"how": how, "first": first, "steady": best_time(call, args)}


def main() -> None:
    load = os.getloadavg()
    jax = jax_columns()
    jax_fns = jax_workloads(jax) if jax is not None else {}
    rows = []
    for name, f, hand, args, wrt in WORKLOADS:
        interpreted = srcgrad.grad(f, wrt=wrt)
        compiled = srcgrad.grad(f, wrt=wrt, jit=True)
        start = time.perf_counter()
        got = compiled(*args)
        first = time.perf_counter() - start
        check(got, interpreted(*args), name)
        check(got, hand(*args), name + " (hand-written)")
        t_hand = best_time(hand, args)
        t_interp = best_time(interpreted, args)
        t_jit = best_time(compiled, args)
        jaxes = [time_jax(jax, fn, how, args, wrt, hand, name)
                 for fn, how in jax_fns.get(name, [])]
        rows.append((name, t_hand, t_interp, t_jit, first, jaxes))
    print(f"load average before: {load}, after: {os.getloadavg()}")
    print("| workload | hand-written | srcgrad interpreted | srcgrad jit | jit speed-up over "
          "interpreted | jit first call |")
    print("|---|---|---|---|---|---|")
    for name, t_hand, t_interp, t_jit, first, _ in rows:
        print(f"| {name} | {_us(t_hand)} (1.00x) | {t_interp / t_hand:.2f}x | "
              f"{t_jit / t_hand:.3f}x ({_us(t_jit)}) | {t_interp / t_jit:.1f}x | {first:.2f} s |")
    primal_bound()
    other_apis()
    if not _jax_table(jax, ["workload", "jax.jit(jax.grad(f)), written as", "jax steady state",
                            "srcgrad jit / jax", "jax first call",
                            "srcgrad jit first call / jax"]):
        return
    for name, t_hand, t_interp, t_jit, first, jaxes in rows:
        for j in jaxes:
            if "error" in j:
                print(f"| {name} | {j['how']} | raises {j['error']} | - | - | - |")
            else:
                print(f"| {name} | {j['how'] or 'as is'} | {_us(j['steady'])} "
                      f"({j['steady'] / t_hand:.3f}x hand-written) | {t_jit / j['steady']:.2f} | "
                      f"{j['first']:.2f} s | {first / j['first']:.2f} |")


def _jax_table(jax, columns: list) -> bool:
    """Print the title and header of a table of JAX's numbers; False without jax."""
    if jax is None:
        print("\n(jax is not installed: no jax.jit column)")
        return False
    print(f"\njax {jax.__version__}, CPU, float64 (jax_enable_x64)\n")
    print("| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")
    return True


def primal_bound() -> None:
    """What bounds the compiled Euler gradient: the function itself, compiled by numba with
    no gradient at all (1000 dependent sines: latency-bound)."""
    import numba
    primal = numba.njit(euler)
    t_primal = best_time(primal, (0.5,))
    t_interp = best_time(srcgrad.grad(euler), (0.5,))
    print(f"\nEuler loop: numba-compiled primal, no gradient: {_us(t_primal)}, "
          f"{t_interp / t_primal:.1f}x faster than the interpreted gradient (the most any "
          f"gradient, which also needs 1000 cosines, could gain)")


def other_apis() -> None:
    """jit= on vjp and jvp (the Euler loop): interpreted against compiled, first call too."""
    print("\n| Euler loop, 1000 steps | interpreted | jit | jit speed-up | jit first call |")
    print("|---|---|---|---|---|")
    cases = [("vjp, value and pullback(1.0)",
              lambda jit: srcgrad.vjp(euler, 0.5, jit=jit)[1](1.0)),
             ("jvp", lambda jit: srcgrad.jvp(euler, (0.5,), (1.0,), jit=jit))]
    for name, run in cases:
        start = time.perf_counter()
        got = run(True)
        first = time.perf_counter() - start
        check(got, run(False), name)
        t_interp = best_time(run, (False,))
        t_jit = best_time(run, (True,))
        print(f"| {name} | {_us(t_interp)} | {_us(t_jit)} | {t_interp / t_jit:.1f}x | "
              f"{first:.2f} s |")


# -- second order: hvp and hessian (--second) ----------------------------------------------

def doubling_cubes(y):
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y * y * y)


def doubling_cubes_hvp(y, v):
    """By hand: y is scaled by 2**n, so the Hessian is diagonal, 6 * 8**n * y."""
    n = 0
    while np.linalg.norm(y * 2.0 ** n) < 1000:
        n += 1
    return 6.0 * 8.0 ** n * y * v


def dense_layer(W, b, h):
    return np.tanh(W @ h + b)


MLP_RNG = np.random.default_rng(12)  # (its own: the other workloads' data stay as they were)
MLP_X = MLP_RNG.standard_normal((16, 64))
MLP_B1 = MLP_RNG.standard_normal((32, 1)) * 0.1
MLP_W2 = MLP_RNG.standard_normal((8, 32)) / np.sqrt(32)
MLP_B2 = MLP_RNG.standard_normal((8, 1)) * 0.1
MLP_Y = MLP_RNG.standard_normal((8, 64)) * 0.5


def mlp_layers_loss(W1):
    """A 2-layer MLP written with a layer() helper, on a batch of 64: the loss as a function
    of the first layer's weights (a Newton-CG step's Hessian-vector products)."""
    h = dense_layer(W1, MLP_B1, MLP_X)
    out = dense_layer(MLP_W2, MLP_B2, h)
    return np.sum((out - MLP_Y) ** 2)


def jax_second_order(jax):
    """``name -> [(api, function, how)]``, jitted: JAX's hvp is forward over reverse (``jvp``
    of ``grad``), its hessian ``jacfwd(jacrev)``; the while loop needs ``lax.while_loop``,
    whose reverse mode JAX lacks, so there its Hessian is forward over forward
    (``jacfwd(jacfwd)``), and an hvp is that Hessian times v. (The Hessian of the unrolled
    Euler loop is left out: its compile ran out of this machine's 23 GB.)"""
    jnp, lax = jax.numpy, jax.lax
    (euler_unrolled, _), (euler_fori, _) = jax_workloads(jax)[WORKLOADS[0][0]]

    def doubling_while(y):
        y = lax.while_loop(lambda y: jnp.linalg.norm(y) < 1000, lambda y: y * 2, y)
        return jnp.sum(y * y * y)

    def hvp(f):
        return jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])

    def twice_forward(f):
        return jax.jit(jax.jacfwd(jax.jacfwd(f)))

    def dense_layer_jax(W, b, h):
        return jnp.tanh(W @ h + b)

    def mlp_layers_jax(W1):
        h = dense_layer_jax(W1, MLP_B1, MLP_X)
        return jnp.sum((dense_layer_jax(MLP_W2, MLP_B2, h) - MLP_Y) ** 2)

    return {"euler": [("hvp", hvp(euler_unrolled), "Python loop, unrolled"),
                      ("hvp", hvp(euler_fori), "lax.fori_loop"),
                      ("hessian", jax.jit(jax.hessian(euler_fori)), "lax.fori_loop")],
            "doubling": [("hvp", hvp(doubling_while), "lax.while_loop, jvp of grad"),
                         ("hessian", jax.jit(jax.hessian(doubling_while)),
                          "lax.while_loop, jacfwd(jacrev)"),
                         ("hvp", jax.jit(lambda x, v: twice_forward(doubling_while)(x) @ v),
                          "lax.while_loop, jacfwd(jacfwd)(x) @ v"),
                         ("hessian", twice_forward(doubling_while),
                          "lax.while_loop, jacfwd(jacfwd)")],
            "mlp": [("hvp", hvp(mlp_layers_jax), "layer() helper, jvp of grad")]}


def _first_and_steady(fn, args) -> tuple:
    start = time.perf_counter()
    try:
        got = fn(*args)
    except Exception as e:  # noqa: BLE001 (JAX: reverse mode through lax.while_loop)
        return None, None, f"raises {type(e).__name__}"
    return got, time.perf_counter() - start, best_time(fn, args)


def second_order() -> None:
    """Compiled hvp and hessian against the interpreted ones and jax.jit's, on the Euler loop
    (a float) and the while loop (100 elements): steady state and first call."""
    load = os.getloadavg()
    x = rng.standard_normal(100) * 1e-3
    v = rng.standard_normal(100)
    w1 = MLP_RNG.standard_normal((32, 16)) / 4.0
    cases = [("euler", "Euler loop, 1000 steps on floats", euler, 0.5, 1.0, None),
             ("doubling", "while norm(y) < 1000: y = y * 2, sum(y**3), 100 elements",
              doubling_cubes, x, v, doubling_cubes_hvp),
             ("mlp", "2-layer MLP with a layer() helper, 16 -> 32 -> 8, batch 64, wrt W1",
              mlp_layers_loss, w1, MLP_RNG.standard_normal(w1.shape), None)]
    apis = {"mlp": ("hvp",)}  # (its Hessian: 512 products)
    jax = jax_columns()
    jaxes = jax_second_order(jax) if jax is not None else {}
    print("| workload | api | interpreted | jit | jit speed-up | jit first call |")
    print("|---|---|---|---|---|---|")
    steady = {}
    for key, name, f, x0, v0, hand in cases:
        runs = {"hvp": lambda jit: srcgrad.hvp(f, (x0,), (v0,), jit=jit),
                "hessian": lambda jit: srcgrad.hessian(f, jit=jit)(x0)}
        for api, run in runs.items():
            if api not in apis.get(key, runs):
                continue
            got, first, t_jit = _first_and_steady(run, (True,))
            want = run(False)
            check(got, want, f"{name} {api}")
            if api == "hvp" and hand is not None:
                check(got, hand(x0, v0), f"{name} {api} (by hand)")
            t_interp = best_time(run, (False,))
            steady[key, api] = (t_jit, first)
            print(f"| {name} | {api} | {_us(t_interp)} | {_us(t_jit)} | "
                  f"{t_interp / t_jit:.1f}x | {first:.2f} s |", flush=True)
    print(f"load average before: {load}, after: {os.getloadavg()}")
    if not _jax_table(jax, ["workload", "JAX written as", "api", "jax steady state",
                            "srcgrad jit / jax", "jax first call",
                            "srcgrad jit first call / jax"]):
        return
    for key, name, f, x0, v0, _ in cases:
        for api, fn, how in jaxes[key]:
            args = (x0, v0) if api == "hvp" else (x0,)
            got, first, t = _first_and_steady(lambda *a: jax.block_until_ready(fn(*a)), args)
            if first is None:
                print(f"| {name} | {how} | {api} | {t} | - | - | - |")
                continue
            want = srcgrad.hvp(f, (x0,), (v0,)) if api == "hvp" else srcgrad.hessian(f)(x0)
            check(np.asarray(got), want, f"{name} {api} (jax, {how})")
            ours, our_first = steady[key, api]
            print(f"| {name} | {how} | {api} | {_us(t)} | {ours / t:.2f} | {first:.2f} s "
                  f"| {our_first / first:.2f} |", flush=True)


def first_call(kind: str, index: int, variant: int) -> float:
    """CPU seconds (every thread's: XLA compiles on several) of the first call of workload
    ``index``'s compiled gradient in this process: srcgrad's (``kind`` "srcgrad") or JAX's
    ``variant``-th version (``kind`` "jax"); or, for ``kind`` "srcgrad hvp" and "jax hvp",
    of the MLP-with-layer() hvp (--second's)."""
    if kind.endswith("hvp"):
        w1 = MLP_RNG.standard_normal((32, 16)) / 4.0
        v = MLP_RNG.standard_normal(w1.shape)
        if kind == "srcgrad hvp":
            start = time.process_time()
            srcgrad.hvp(mlp_layers_loss, (w1,), (v,), jit=True)
            return time.process_time() - start
        hvp = jax_second_order(jax_columns())["mlp"][0][1]
        start = time.process_time()
        jax_columns().block_until_ready(hvp(w1, v))
        return time.process_time() - start
    name, f, hand, args, wrt = WORKLOADS[index]
    if kind == "srcgrad":
        g = srcgrad.grad(f, wrt=wrt, jit=True)
        start = time.process_time()
        g(*args)
        return time.process_time() - start
    jax = jax_columns()
    fn, how = jax_workloads(jax)[name][variant]
    return time_jax(jax, fn, how, args, wrt, hand, name, clock=time.process_time).get(
        "first", float("nan"))


def fresh_first_calls(repeat: int = 3) -> None:
    """Each first call in a fresh process (median of ``repeat``): numba's and JAX's one-time
    start-up included, which the in-process column pays only on the first workload (and
    later workloads there reuse helpers compiled for earlier ones). srcgrad's twice: with
    numba's on-disk cache empty (each run its own ``NUMBA_CACHE_DIR``: everything compiled)
    and filled by an earlier process (srcgrad/jit/caching.py: its helpers and, where it can
    be cached, the generated gradient loaded instead of compiled). CPU seconds, every
    thread's (first_call): on a shared machine, wall time measures the other users too."""
    import statistics
    import subprocess
    import sys
    import tempfile
    jax = jax_columns()
    print(f"\nload average {os.getloadavg()}; CPU seconds of each first call")
    print("\n| workload | srcgrad jit first call, fresh process: cache empty / filled "
          "| JAX first call, fresh process | srcgrad / JAX: cache empty / filled |")
    print("|---|---|---|---|")

    def once(kind, index, variant, cache_dir):
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
        out = subprocess.run([sys.executable, __file__, "--first", kind, str(index),
                              str(variant)], capture_output=True, text=True, check=True,
                             env=env)
        return float(out.stdout.split()[-1])

    with tempfile.TemporaryDirectory() as tmp:
        def median(kind, index, variant=0, cache="cold"):
            if cache == "warm":
                once(kind, index, variant, os.path.join(tmp, "warm"))  # (fills it)
            return statistics.median(
                once(kind, index, variant, os.path.join(tmp, f"{cache}{i}" if cache == "cold"
                                                        else "warm"))
                for i in range(repeat))

        for index, (name, *_) in enumerate(WORKLOADS):
            cold, warm = median("srcgrad", index), median("srcgrad", index, cache="warm")
            ours = f"{cold:.2f} s / {warm:.2f} s"
            versions = jax_workloads(jax)[name] if jax is not None else []
            for variant, (_, how) in enumerate(versions):
                theirs = median("jax", index, variant)
                if math.isnan(theirs):  # (reverse mode through lax.while_loop)
                    print(f"| {name} | {ours} | {how}: raises | - |")
                else:
                    print(f"| {name} | {ours} | {how or 'as is'}: {theirs:.2f} s | "
                          f"{cold / theirs:.2f} / {warm / theirs:.2f} |")
            if not versions:
                print(f"| {name} | {ours} | - | - |")
        cold, warm = median("srcgrad hvp", 0), median("srcgrad hvp", 0, cache="warm")
        name = "MLP hvp, layer() helper (--second)"
        if jax is None:
            print(f"| {name} | {cold:.2f} s / {warm:.2f} s | - | - |")
        else:
            theirs = median("jax hvp", 0)
            print(f"| {name} | {cold:.2f} s / {warm:.2f} s | jvp of grad: {theirs:.2f} s | "
                  f"{cold / theirs:.2f} / {warm / theirs:.2f} |")


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["--first"]:  # (one first call, in the process fresh_first_calls made)
        print(first_call(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    elif sys.argv[1:] == ["--fresh"]:
        fresh_first_calls()
    elif sys.argv[1:] == ["--second"]:
        second_order()
    else:
        main()
