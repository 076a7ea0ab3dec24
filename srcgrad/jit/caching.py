"""numba's on-disk cache for srcgrad's compiled helpers and for the code it generates.

A function numba compiled once, for one signature, is loaded from disk by later processes
(and by later dispatchers of the same function in this one) instead of being typed and
lowered again, with what it calls (numba's own ``np.dot`` or ``np.zeros`` inside it) linked
in. Two kinds are cached:

- the overloads of runtime.py (``overload`` below; not simd.py's, whose code names libmvec's
  symbols, registered with LLVM only when its overload is typed);
- the functions generated from the user's code (``generated_cache``), only when everything
  they read besides their arguments can be written down (numbers, strings, tuples of them,
  numpy's and math's modules, types and functions, srcgrad's runtime helpers, and compiled
  callees srcgrad generated and cached, by their own stamps): not when they call a user's
  ``@njit`` helper or read a user's module or class, whose code or attributes the stamp
  could not see change.

numba's cache would be stale or wrong here in four ways, all closed by this module:

- it checks only the modification stamp of the file defining the function, while a helper
  calls helpers of other srcgrad modules: a cached helper's stamp is a hash of every source
  file of the srcgrad package and numpy's version instead (and numba keys each entry on its
  own version, the signature, the CPU and the helper's bytecode and closure);
- numba freezes the globals a function reads into its code, and its cache does not check
  them: a generated function's stamp is a hash of its text, of what each name it reads is
  bound to (module names, the values of numbers and strings), of the package and of numpy's
  version;
- two processes compiling the same helper at once may both number their entry 1, one
  writing the index and the other the data file: a later process could load code compiled
  for other types. Saving and loading an entry hold a lock on the cache directory;
- numba names machine code by an id counted from 1 in every process, and cached code keeps
  its ids: two generated functions of one name and argument types, one loaded and one
  compiled here, could share a symbol and call each other's code. Ids here count from a
  random start (``_symbols_apart``).

Where the cache goes: ``NUMBA_CACHE_DIR`` when set, else, for the helpers, ``__pycache__``
beside srcgrad/jit when it is writable and numba's user-wide cache directory otherwise (a
read-only install), for generated code that user-wide directory; ``SRCGRAD_JIT_CACHE=0``
turns both off.
"""
from __future__ import annotations

__all__ = ["overload", "generated_cache", "njit_cached", "package_stamp", "enabled"]

import builtins
import contextlib
import functools
import hashlib
import itertools
import os
import secrets
import sys
import types

import numba
import numpy as np
from numba.core import caching
from numba.core.runtime import rtsys
from numba.extending import overload as numba_overload

try:
    import fcntl
except ImportError:  # (no POSIX file locks: no cache, rather than one that can race)
    fcntl = None

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SUBDIR = "srcgrad-jit"  # (the cache directories' last part, where the lock applies)


def enabled() -> bool:
    return fcntl is not None and os.environ.get("SRCGRAD_JIT_CACHE", "1") != "0" \
        and _symbols_apart()


def _symbols_apart() -> bool:
    """Whether this process's compiled functions get symbol names no other process gave to
    other code (numba's counter of function ids starts at a random point here): False, and
    no cache, where numba's counter is not where this expects it.

    numba names a function's machine code by its module, qualified name, argument types and
    an id counted from 1 in each process ("the mangled name *must* be unique, else the
    wrong function can be chosen at link time"), and a cached function's code carries the
    ids of the process that compiled it, its callees' code linked in as weak symbols. Every
    generated function is ``_make.<locals>.<name>``: a cached gradient whose callee
    ``matmul_left_jvp`` (one variant) was id 43 in the process that compiled it, loaded
    beside a ``matmul_left_jvp`` (another variant, same argument types) this process
    compiled as id 43, shared one symbol, and either caller could run the other's callee:
    a wrong Hessian-vector product, with no error (tests/test_jit_symbols.py). Ids counted
    from a random 48-bit start keep two processes' symbols apart (overlapping only if two
    starts fall within the number of functions compiled, about 2**-30 for a pair)."""
    global _SPREAD
    if _SPREAD is None:
        from numba.core import bytecode
        identity = getattr(bytecode, "FunctionIdentity", None)
        _SPREAD = isinstance(getattr(identity, "_unique_ids", None), itertools.count)
        if _SPREAD:
            identity._unique_ids = itertools.count((secrets.randbits(48) | 1 << 48))
    return _SPREAD


_SPREAD: bool | None = None


@functools.lru_cache(maxsize=None)
def package_stamp() -> str:
    """A hash of every source file of the srcgrad package (paths and contents) and of
    numpy's version (numba's typing of numpy's functions may depend on it; numba's own version
    is checked by numba)."""
    digest = hashlib.sha256(np.__version__.encode() + b"\0")
    for root, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                digest.update(os.path.relpath(path, _PACKAGE).encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read() + b"\0")
    return digest.hexdigest()


def _is_ours(py_file: str) -> bool:
    return os.path.abspath(py_file).startswith(os.path.join(_PACKAGE, ""))


class _Stamped:
    """A locator of srcgrad's files only, stamped with the whole package's hash."""

    def get_source_stamp(self):
        return package_stamp()

    def get_cache_path(self):
        return os.path.join(super().get_cache_path(), _SUBDIR)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _is_ours(py_file):
            return None
        return super().from_function(py_func, py_file)


class _UserProvided(_Stamped, caching.UserProvidedCacheLocator):
    pass


class _InTree(_Stamped, caching.InTreeCacheLocator):
    pass


class _UserWide(_Stamped, caching.UserWideCacheLocator):
    pass


def _install() -> None:
    """Put srcgrad's locators first in numba's list (they claim srcgrad's files only), and
    lock the cache files of their directories."""
    classes = caching.CacheImpl._locator_classes
    if _UserProvided not in classes:
        classes[:0] = [_UserProvided, _InTree, _UserWide]
    cache_file = caching.IndexDataCacheFile
    if getattr(cache_file, "_srcgrad_locked", False):
        return
    cache_file.save = _locked(cache_file.save)
    cache_file.load = _locked(cache_file.load)
    cache_file._srcgrad_locked = True
    caching.Cache.load_overload = _never_failing(caching.Cache.load_overload)
    caching.Cache.save_overload = _never_failing(caching.Cache.save_overload)


def _ours(path: str) -> bool:
    return os.path.basename(path).startswith(_SUBDIR)


def _locked(method):
    @functools.wraps(method)
    def wrapper(self, *args):
        if not _ours(self._cache_path):
            return method(self, *args)  # (another cache than srcgrad's: as numba does)
        with _lock(self._cache_path):
            return method(self, *args)
    return wrapper


def _never_failing(method):
    """A load or save of srcgrad's caches that fails (a closure numba cannot pickle for its
    key, a full disk) compiles, and saves nothing, instead of failing the compile."""
    @functools.wraps(method)
    def wrapper(self, *args):
        if not _ours(self._cache_path):
            return method(self, *args)
        try:
            return method(self, *args)
        except Exception:  # noqa: BLE001 (then numba compiles, as without a cache)
            return None
    return wrapper


@contextlib.contextmanager
def _lock(directory: str):
    with open(os.path.join(directory, "lock"), "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def overload(func, **kwargs):
    """numba's ``overload``, its implementations cached on disk (module docstring)."""
    if not enabled():
        return numba_overload(func, **kwargs)
    _install()
    kwargs["jit_options"] = {**kwargs.get("jit_options", {}), "cache": True}

    def decorate(typer):
        @functools.wraps(typer)
        def typed(*args, **kws):
            return _in_a_file(typer(*args, **kws), typer)
        numba_overload(func, **kwargs)(typed)
        return typer
    return decorate


def _in_a_file(impl, typer):
    """``impl``, or, when its code was written out with ``exec`` (runtime.py writes some out
    per rank), the same code named as ``typer``'s file and line: numba caches only functions
    of a file (the stamp is the package's, the key the bytecode, so the name is only where
    the entry goes)."""
    if not isinstance(impl, types.FunctionType) or os.path.isfile(impl.__code__.co_filename):
        return impl
    code = impl.__code__.replace(co_filename=typer.__code__.co_filename,
                                 co_firstlineno=typer.__code__.co_firstlineno)
    made = types.FunctionType(code, impl.__globals__, impl.__name__, impl.__defaults__,
                              impl.__closure__)
    made.__qualname__ = f"{typer.__qualname__}.<locals>.{impl.__name__}"
    return made


# -- generated code ------------------------------------------------------------------------

class _GeneratedLocator(caching._CacheLocator):
    """Where the generated functions of one text go, stamped with ``stamp``."""

    def __init__(self, py_func, stamp: str):
        self._py_file = py_func.__code__.co_filename  # (numba names it in its warnings)
        self._lineno = py_func.__code__.co_firstlineno
        self._stamp = stamp
        base = numba.config.CACHE_DIR or caching.AppDirs(
            appname="numba", appauthor=False).user_cache_dir
        self._cache_path = os.path.join(base, _SUBDIR + "-generated")

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return self._stamp

    def get_disambiguator(self):
        return self._stamp[:24]

    @classmethod
    def from_function(cls, py_func, py_file):
        return None  # (never chosen from numba's list: generated_cache makes it)


class _GeneratedImpl(caching.CompileResultCacheImpl):
    def __init__(self, py_func, stamp: str):  # (numba's finds a locator from the file)
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = _GeneratedLocator(py_func, stamp)
        # (not the pseudo-filename: its counter differs from process to process)
        self._filename_base = self.get_filename_base("srcgrad." + py_func.__qualname__,
                                                     getattr(sys, "abiflags", ""))


class _GeneratedCache(caching.FunctionCache):
    def __init__(self, py_func, stamp: str):
        self._name = repr(py_func)
        self._py_func = py_func
        self.stamp = stamp
        self._impl = _GeneratedImpl(py_func, stamp)
        self._cache_path = self._impl.locator.get_cache_path()
        self._cache_file = caching.IndexDataCacheFile(
            cache_path=self._cache_path, filename_base=self._impl.filename_base,
            source_stamp=stamp)
        self.enable()

    @_never_failing
    def load_overload(self, sig, target_context):
        """numba's load, without its refresh of the target context first: that imports and
        registers every implementation numba has (0.3 s of CPU, once per process, most of a
        first call whose gradient is loaded), which loaded machine code does not need; it
        needs numba's runtime (NRT) only. A compile later refreshes, as numba always does."""
        rtsys.initialize(target_context)
        return self._load_overload(sig, target_context)

    def _index_key(self, sig, codegen):
        """numba's key, with the stamp in place of the pickled closure cells: the stamp
        describes them (``_described_reads``), while a pickled compiled callee differs from
        process to process (numba names each dispatcher by a random uuid), which would make
        every caller of one a new key."""
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (sig, codegen.magic_tuple(), (code, self.stamp))


def njit_cached(text: str, functions, **options) -> tuple:
    """``numba.njit(fn, **options)`` of each of ``functions`` (made from the generated
    ``text``), each with its on-disk cache when ``generated_cache`` gives them one."""
    dispatchers = tuple(numba.njit(fn, **options) for fn in functions)
    caches = generated_cache(text, functions)  # (None: compiled in this process only)
    if caches is not None:
        from . import simd
        simd.available()  # (a cached function may call libmvec: its symbols registered first)
        for dispatcher, cache in zip(dispatchers, caches):
            dispatcher._cache = cache  # (what numba.njit(cache=True) sets, with our stamp)
    return dispatchers


def generated_cache(text: str, functions) -> list | None:
    """numba caches for ``functions``, made from the generated ``text`` (one each), or None
    when one of them reads something besides its arguments that cannot be written down, or
    the cache is off or cannot be written."""
    if not enabled():
        return None
    described = []
    for fn in functions:
        names = _described_reads(fn)
        if names is None:
            return None
        described.append(names)
    digest = hashlib.sha256()
    for part in (package_stamp(), np.__version__, numba.__version__, text, repr(described)):
        digest.update(part.encode() + b"\0")
    stamp = digest.hexdigest()
    _install()
    try:
        caches = [_GeneratedCache(fn, stamp) for fn in functions]
        caches[0]._impl.locator.ensure_cache_path()
    except OSError:
        return None
    return caches


def _described_reads(fn) -> list | None:
    """``[(name, description), ...]`` of each global and closure cell ``fn``'s code reads
    (nested code too), in order; None when one cannot be described."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    out = []
    for name in _names(fn.__code__):
        if name in cells:
            try:
                value = cells[name].cell_contents
            except ValueError:  # (an empty cell)
                return None
        elif name in fn.__globals__:
            value = fn.__globals__[name]
        elif hasattr(builtins, name):
            value = getattr(builtins, name)
        else:
            continue  # (an attribute name, or unbound: numba refuses that itself)
        description = _describe(value)
        if description is None:
            return None
        out.append((name, description))
    return out


def _names(code) -> list:
    names = list(code.co_names) + list(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.extend(_names(const))
    return sorted(set(names))


# Modules whose attributes numba may freeze into generated code without the stamp seeing
# them change: only libraries whose versions are in the stamp or fixed with Python's (a
# user's module read as ``config.K`` is not one: K's value would be frozen unseen).
_LIBRARIES = frozenset({"builtins", "math", "cmath", "operator", "numpy", "numba", "srcgrad"})


def _describe(value) -> str | None:
    """A text that tells ``value`` apart from any other value numba would compile
    differently, or None."""
    cache = getattr(value, "_cache", None)
    if isinstance(cache, _GeneratedCache) and type(value).__module__.startswith("numba."):
        # a compiled callee (another sweep's, a helper's jvp) cached itself: by its stamp,
        # which changes with its text and with everything it reads, its callees' stamps too
        return f"compiled {value.py_func.__qualname__} {cache.stamp}"
    made = getattr(value, "__srcgrad_made__", None)
    if isinstance(made, str) and isinstance(value, types.FunctionType) \
            and _is_ours(value.__code__.co_filename):
        return f"made by srcgrad: {made}"  # (a function srcgrad makes per key: products.py)
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}" if _is_library(value.__name__) else None
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, tuple):
        parts = [_describe(v) for v in value]
        return None if None in parts else f"tuple ({', '.join(parts)})"
    if isinstance(value, np.generic):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, (type, np.ufunc, types.BuiltinFunctionType, types.FunctionType)):
        module = getattr(value, "__module__", None) or ""
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "")
        if not _is_library(module) or (isinstance(value, types.FunctionType)
                                        and not _is_ours(value.__code__.co_filename)):
            return None  # (a user's class or function: its code is not in the stamp)
        return _importable(value, module, name)
    return None


def _is_library(module: str) -> bool:
    return module.split(".")[0] in _LIBRARIES


def _importable(value, module: str, name: str) -> str | None:
    """``"module.name"`` when that import path leads to ``value`` itself, else None."""
    found = sys.modules.get(module)
    for part in name.split("."):
        found = getattr(found, part, None)
    return f"{module}.{name}" if found is value and module and name else None
