"""Compiled code loaded from the on-disk cache never links to another function's machine
code. numba names a function's code by its qualified name, argument types and an id counted
in each process; every generated function is ``_make.<locals>.<name>``, and a cached
function's code carries its callees, linked in as weak symbols, under the ids of the process
that compiled it. With ids counted from 1 everywhere, a cached caller's ``matmul_left_jvp``
(one variant) and a ``matmul_left_jvp`` compiled later (another variant, the same argument
types) could share a symbol, and a compiled Hessian-vector product ran the other variant: a
wrong result, no error (seen once in CI: the compiled Hessian of a function of two matrix
products; reproduced by a sequence of processes sharing a cache, each computing the compiled
hvps of a few such functions). srcgrad/jit/caching.py counts ids from a random start in each
process; the test runs two fresh processes with a cache directory of their own.
"""
import os
import subprocess
import sys

import pytest

numba = pytest.importorskip("numba")
pytest.importorskip("fcntl")

import srcgrad  # noqa: E402

PACKAGE_ROOT = os.path.dirname(os.path.dirname(srcgrad.__file__))

# The symbol numba gives a function compiled after srcgrad's jit runtime is imported.
SYMBOL = """
import numba
import srcgrad.jit.runtime  # noqa: F401
from srcgrad.jit import caching
assert caching.enabled()
f = numba.njit(lambda x: x + 1.0)
f(1.0)
print(next(iter(f.overloads.values())).fndesc.mangled_name)
"""


def _env(tmp_path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), PACKAGE_ROOT]),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"), OPENBLAS_NUM_THREADS="1")
    env.pop("SRCGRAD_JIT_CACHE", None)
    return env


def _run(tmp_path, *args: str) -> str:
    out = subprocess.run([sys.executable, *args], env=_env(tmp_path), capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_two_processes_name_their_compiled_code_apart(tmp_path):
    first, second = (_run(tmp_path, "-c", SYMBOL).strip() for _ in range(2))
    assert first != second  # (the same function, compiled first in each: its id differs)
