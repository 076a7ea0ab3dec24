"""The on-disk cache of compiled code (srcgrad/jit/caching.py): what a later process loads
instead of compiling, and that it is never stale. Each end-to-end test runs fresh Python
processes on a copy of the package (or a cache directory of its own), so that the cache
starts empty and a changed source is seen as a user would change it.
"""
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

numba = pytest.importorskip("numba")
pytest.importorskip("fcntl")

import srcgrad  # noqa: E402
from srcgrad.jit import caching, runtime  # noqa: E402
from numba.core.caching import FunctionCache  # noqa: E402

PACKAGE = os.path.dirname(srcgrad.__file__)

# A user's module: a global number numba freezes into the code, and a call of a helper.
USER = """
import math
import numpy as np
K = {k}

def f(x):
    for i in range(20):
        x = x + 0.1 * math.sin(x) * K
    return x

def g(a):
    return np.sum(np.tanh(a) * K)
"""

# The start of a script run in a fresh process: n[0] counts the functions numba compiles
# (srcgrad's and its own).
COUNTING = """
import sys, numpy as np
from numba.core import event
import srcgrad, user
n = [0]
class Count(event.Listener):
    def on_start(self, ev): n[0] += 1
    def on_end(self, ev): pass
event.register("numba:compile", Count())
"""

# Prints, for f at 0.5 and g at [0.1, 0.2, 0.3], the compiled gradient next to the
# interpreted one, and how many functions numba compiled.
SCRIPT = COUNTING + """
a = np.array([0.1, 0.2, 0.3])
jit_f, f = srcgrad.grad(user.f, jit=True)(0.5), srcgrad.grad(user.f)(0.5)
jit_g, g = srcgrad.grad(user.g, jit=True)(a), srcgrad.grad(user.g)(a)
print(repr(jit_f), repr(f), repr(float(np.max(np.abs(jit_g - g)))), n[0], srcgrad.__file__)
"""


def run(tmp_path, k: float, env_extra=None, package=None) -> tuple:
    """One fresh process: (compiled df, interpreted df, max |compiled dg - interpreted dg|,
    functions numba compiled)."""
    (tmp_path / "user.py").write_text(USER.format(k=k))
    root = package or os.path.dirname(PACKAGE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), root]),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"), OPENBLAS_NUM_THREADS="1")
    env.pop("SRCGRAD_JIT_CACHE", None)
    env.update(env_extra or {})
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    jit_f, f, dg, compiled, where = out.stdout.split()
    assert where.startswith(root)
    return float(jit_f), float(f), float(dg), int(compiled)


@pytest.mark.slow
def test_second_process_loads_everything_and_a_changed_global_is_seen(tmp_path):
    first = run(tmp_path, 2.0)
    assert first[0] == first[1] and first[2] < 1e-12 and first[3] > 5
    second = run(tmp_path, 2.0)
    assert second[:3] == first[:3]
    assert second[3] == 0  # (every function loaded from the cache)
    # numba's own cache would keep K = 2.0 frozen in the loaded code: here it is a new key
    changed = run(tmp_path, 3.0)
    assert changed[0] == changed[1] and changed[0] != first[0] and changed[2] < 1e-12
    assert changed[3] > 0
    assert run(tmp_path, 2.0, {"SRCGRAD_JIT_CACHE": "0"})[3] >= first[3]  # (turned off)


@pytest.mark.slow
def test_a_changed_helper_is_recompiled(tmp_path):
    """A runtime helper whose code changed (here, wrongly: the seed of a scalar result 2.0
    instead of 1.0) is compiled again, not loaded as it was: the gradient doubles."""
    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE, copy / "srcgrad", ignore=shutil.ignore_patterns("__pycache__"))
    before = run(tmp_path, 2.0, package=str(copy))
    path = copy / "srcgrad" / "jit" / "runtime.py"
    text = path.read_text()
    seed = "    if is_scalar_type(value):\n        return lambda value: 1.0\n"
    assert seed in text
    path.write_text(text.replace(seed, seed.replace("1.0", "2.0")))
    after = run(tmp_path, 2.0, package=str(copy))
    assert after[0] == pytest.approx(2 * before[0], rel=1e-15)
    # an edit elsewhere in the package (a module the helper may call) is a new stamp too
    other = copy / "srcgrad" / "jit" / "dtypes.py"
    before_stamp = _stamp_of(copy)
    other.write_text(other.read_text() + "\n# edited\n")
    assert _stamp_of(copy) != before_stamp


def _stamp_of(copy) -> str:
    env = dict(os.environ, PYTHONPATH=str(copy))
    stamp, where = subprocess.run([sys.executable, "-c", "from srcgrad.jit import caching; "
                           "print(caching.package_stamp(), caching.__file__)"], env=env,
                         capture_output=True, text=True, check=True, cwd=copy).stdout.split()
    assert where.startswith(str(copy))
    return stamp


@pytest.mark.slow
def test_two_processes_compiling_at_once(tmp_path):
    """Two processes fill one empty cache at the same time (the same helpers, for scalars
    and arrays); a third loads what they left and computes the same numbers."""
    (tmp_path / "user.py").write_text(USER.format(k=2.0))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.path.dirname(PACKAGE)]),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"), OPENBLAS_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    firsts = [out.split()[:3] for out, _ in outs]
    assert firsts[0] == firsts[1]
    third = run(tmp_path, 2.0)
    assert [repr(v) for v in third[:3]] == firsts[0]
    assert third[3] == 0


def test_helpers_are_stamped_with_the_whole_package():
    cache = FunctionCache(runtime.zeros_like)  # (any function of srcgrad/jit/runtime.py)
    locator = cache._impl.locator
    assert type(locator) in (caching._UserProvided, caching._InTree, caching._UserWide)
    assert locator.get_source_stamp() == caching.package_stamp()
    assert os.path.basename(cache.cache_path) == "srcgrad-jit"


def test_read_only_package_falls_back_to_the_user_cache(monkeypatch):
    """Where srcgrad/jit/__pycache__ cannot be written (an install owned by root), numba's
    user-wide directory is used (as root, a read-only directory is simulated)."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")

    def refused(self):
        raise PermissionError("read-only")
    monkeypatch.setattr(caching._InTree, "ensure_cache_path", refused)
    locator = FunctionCache(runtime.zeros_like)._impl.locator
    assert type(locator) is caching._UserWide
    assert not locator.get_cache_path().startswith(PACKAGE)


def test_other_functions_are_left_to_numba():
    def mine(x):
        return x
    assert caching._InTree.from_function(mine, __file__) is None
    assert caching._UserWide.from_function(mine, __file__) is None


def test_generated_code_reading_a_compiled_function_is_not_cached():
    helper = numba.njit(lambda x: x)
    scope = {"helper": helper, "math": __import__("math"), "K": 2.5}
    exec("def uses_helper(x):\n    return helper(x)\n"
         "def uses_constants(x):\n    return math.sin(x) * K\n", scope)
    assert caching.generated_cache("text", [scope["uses_helper"]]) is None
    assert caching.generated_cache("text", [scope["uses_constants"]]) is not None
    reads = caching._described_reads(scope["uses_constants"])
    assert ("K", "float 2.5") in reads and ("math", "module math") in reads


def test_the_lock_excludes_another_holder(tmp_path):
    order = []

    def other():
        with caching._lock(str(tmp_path)):
            order.append("other")
    with caching._lock(str(tmp_path)):
        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.2)
        order.append("first")
    thread.join()
    assert order == ["first", "other"]


def test_source_text_is_part_of_the_stamp():
    scope = {}
    exec("def h(x):\n    return x\n", scope)
    one = caching.generated_cache("one", [scope["h"]])[0]
    two = caching.generated_cache("two", [scope["h"]])[0]
    assert one._impl.locator.get_source_stamp() != two._impl.locator.get_source_stamp()
    assert one._impl.filename_base != two._impl.filename_base


def test_user_modules_classes_and_functions_are_not_cached():
    """numba freezes ``config.K`` into the code: a user's module (or class, or plain
    function) read by generated code turns the cache off for it."""
    import types as pytypes
    config = pytypes.ModuleType("config")
    config.K = 2.0

    class Point:
        pass

    def plain(x):
        return x
    for value in (config, Point, plain):
        scope = {"value": value}
        exec("def reads(x):\n    return value\n", scope)
        assert caching.generated_cache("text", [scope["reads"]]) is None, value
    import numpy as np
    scope = {"np": np, "float64": np.float64, "tup": (1, 2.5, "a")}
    exec("def reads(x):\n    return np.sum(x) + float64(1) + tup[0]\n", scope)
    assert caching.generated_cache("text", [scope["reads"]]) is not None
