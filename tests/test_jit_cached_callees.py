"""Compiled gradients that call other compiled functions (a user helper's sweeps, the jvp of
a matrix product's adjoint in a compiled hvp) are cached on disk too, each callee under its
own stamp, which its caller's stamp includes (srcgrad/jit/caching.py): a second process
loads instead of compiling, and a callee whose code changed makes its callers new keys.
Each end-to-end test runs fresh Python processes with a cache directory of their own.
"""
import os
import subprocess
import sys

import pytest

numba = pytest.importorskip("numba")
pytest.importorskip("fcntl")

import srcgrad  # noqa: E402
from srcgrad.jit import caching  # noqa: E402
from test_jit_first_call import COUNTING  # noqa: E402

PACKAGE_ROOT = os.path.dirname(os.path.dirname(srcgrad.__file__))

# A two-layer network written with a layer() helper: the entry gradient calls the helper's
# compiled sweeps; the hvp calls their forward mode and the jvp of matmul's adjoint helpers.
USER = """
import numpy as np
import settings
rng = np.random.default_rng(3)
X = rng.standard_normal((5, 7))
B1 = rng.standard_normal((4, 1))
W2 = rng.standard_normal((3, 4))
B2 = rng.standard_normal((3, 1))

def layer(W, b, h):
    return np.tanh(W @ h + {scale} * b)

def loss(W1):
    out = layer(W2, B2, layer(W1, B1, X))
    return np.sum(out * out)

def extra(x):
    return np.sum(np.sin(x) * settings.SCALE)
"""

# Prints the compiled gradient and hvp next to the interpreted ones, and how many functions
# numba compiled for them in this process.
SCRIPT = COUNTING + """
w = np.linspace(-1.0, 1.0, 20).reshape(4, 5)
v = np.cos(np.arange(20.0)).reshape(4, 5)
g = srcgrad.grad(user.loss, jit=True)(w)
h = srcgrad.hvp(user.loss, (w,), (v,), jit=True)
g0 = srcgrad.grad(user.loss)(w)
h0 = srcgrad.hvp(user.loss, (w,), (v,))
loaded = n[0]
# then a gradient never cached (it reads a user's module), compiled after the loads, which
# skip numba's refresh of its registries (caching.py): numba refreshes them for this compile
x = np.linspace(0.1, 0.4, 4)
extra = srcgrad.grad(user.extra, jit=True)(x)
assert np.max(np.abs(extra - srcgrad.grad(user.extra)(x))) < 1e-14, extra
assert n[0] > loaded
print(repr(float(g[1, 2])), repr(float(np.max(np.abs(g - g0)))), repr(float(h[1, 2])),
      repr(float(np.max(np.abs(h - h0)))), loaded, srcgrad.__file__)
"""


def run(tmp_path, scale: float) -> tuple:
    """One fresh process: (g[1, 2], max |g - interpreted|, hvp[1, 2], max |hvp -
    interpreted|, functions numba compiled)."""
    (tmp_path / "user.py").write_text(USER.format(scale=scale))
    (tmp_path / "settings.py").write_text("SCALE = 1.5\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), PACKAGE_ROOT]),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"), OPENBLAS_NUM_THREADS="1")
    env.pop("SRCGRAD_JIT_CACHE", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    *numbers, compiled, where = out.stdout.split()
    assert where.startswith(PACKAGE_ROOT)
    return (*(float(x) for x in numbers), int(compiled))


@pytest.mark.slow
def test_callers_of_compiled_callees_load_and_a_changed_callee_recompiles(tmp_path):
    first = run(tmp_path, 0.5)
    assert first[1] < 1e-12 and first[3] < 1e-10 and first[4] > 5
    second = run(tmp_path, 0.5)
    assert second[:4] == first[:4]
    assert second[4] == 0  # (the gradient, the hvp and their callees all loaded)
    # the helper changed, its callers' text did not: they are compiled again, with it
    changed = run(tmp_path, 2.0)
    assert changed[4] > 0
    assert changed[0] != first[0] and changed[2] != first[2]
    assert changed[1] < 1e-12 and changed[3] < 1e-10


def _compiled(text: str, scope: dict):
    exec(text, scope)
    name = text.split("(")[0].removeprefix("def ")
    return caching.njit_cached(text, [scope[name]])[0]


def test_a_cached_callee_is_described_by_its_stamp(monkeypatch, tmp_path):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SRCGRAD_JIT_CACHE", raising=False)
    one = _compiled("def callee(x):\n    return x + 1.0\n", {})
    two = _compiled("def callee(x):\n    return x + 2.0\n", {})
    assert caching._describe(one) != caching._describe(two)
    assert one._cache.stamp in caching._describe(one)
    caller = _compiled("def caller(x):\n    return callee(x) * 2.0\n", {"callee": one})
    assert isinstance(caller._cache, caching._GeneratedCache)
    other = _compiled("def caller(x):\n    return callee(x) * 2.0\n", {"callee": two})
    assert caller._cache.stamp != other._cache.stamp  # (a changed callee: a new key)
    assert caller(1.0) == 4.0 and other(1.0) == 6.0
    # a user's compiled function has no stamp: its callers are not cached
    users = numba.njit(lambda x: x)
    assert caching._describe(users) is None
    scope = {"callee": users}
    exec("def reads_users(x):\n    return callee(x)\n", scope)
    assert caching.generated_cache("t", [scope["reads_users"]]) is None


def test_the_key_does_not_pickle_compiled_callees(monkeypatch, tmp_path):
    """numba's key hashes the pickled closure, in which a dispatcher carries a random uuid:
    each process (here: each dispatcher of the same callee) would make a new key. The stamp
    stands for the closure instead."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SRCGRAD_JIT_CACHE", raising=False)
    text = "def caller(x):\n    return callee(x) * 2.0\n"
    codegen = numba.core.registry.cpu_target.target_context.codegen()
    keys, numbas = [], []
    for _ in range(2):
        callee = _compiled("def callee(x):\n    return x + 1.0\n", {})
        scope = {}
        exec("def make(callee):\n" + "".join("    " + line + "\n" for line in
                                             text.splitlines()) + "    return caller\n", scope)
        cache = caching.generated_cache(text, [scope["make"](callee)])[0]
        keys.append(cache._index_key((numba.float64,), codegen))
        numbas.append(super(caching._GeneratedCache, cache)._index_key((numba.float64,),
                                                                        codegen))
        assert callee(1.0) == 2.0
    assert keys[0] == keys[1]
    assert numbas[0] != numbas[1]  # (what numba's own key would have done)
