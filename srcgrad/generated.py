"""Generated code of one function for one choice of wrt: building, compiling, caching.

``Adjoint`` (reverse mode, api.py) and ``Forward`` (forward mode, api_forward.py) differ only
in the generator they run on the normalized tree; everything around it lives here once.
"""
from __future__ import annotations

__all__ = ["Generated", "BuildCache", "cached_build", "LastBuild", "runtime_alias", "describe",
           "remember", "remembered", "own_attributes"]

import abc
import ast
import dis
import functools
import os
import sys
import types
import threading
import weakref
from typing import Any, Callable

import numpy as np

from . import codegen, runtime
from .errors import InternalError, SrcgradError
from .rules import registry
from .transforms import normalize, prepare
from .transforms.context import UNBOUND

_LOCK = threading.RLock()


class Generated(abc.ABC):
    """A compiled ``_make(...)`` factory and the functions it returns.

    The functions see the user's module globals (not a merged namespace); srcgrad's own
    objects arrive as the factory's arguments, and the values of a closure's cells too, so
    closures made by one ``def`` share one build and read their own cells per call.
    """

    kind = "generated"  # shown in the linecache pseudo-filename
    entry = False  # built for the function an API call differentiates itself (Context.entry)
    consumed: frozenset = frozenset()  # parameters its call site hands over (Context.consumed)
    lean = False  # the sweeps a grad call runs itself, never differentiated again (Context.lean)
    discard_value = False  # ... whose value it discards (Context.discard_value)

    def __init__(self, fn: Callable, wrt: tuple[int, ...], scalar_mode: bool = False):
        self.fn = fn
        self.wrt = wrt
        self.scalar_mode = scalar_mode
        self.scalar_closed = False
        self.source = ""
        self.filename = ""
        self._make = None
        self._helpers: list = []
        self._closure_names: list[str] = []
        self._closure_at: tuple = ()
        self._functions: tuple = ()
        self._instance = None  # (make, defaults, kwdefaults, closure values, functions, cells)
        self._has_closure = bool(getattr(fn, "__closure__", None))
        self._closure_assumptions: dict = {}
        # the build whose sweeps a gradient's generated wrapper (self.fn) calls or inlines:
        # stale when that build is (api_forward.source_function)
        self._depends = None
        self.generation = 0  # how many times it was built (Depends: rebuilt since?)

    @abc.abstractmethod
    def generate(self, tree, ctx):
        """The generated module for the normalized ``tree``: the subclass's generator."""

    def build(self, debug: bool = False) -> None:
        remake = getattr(self.fn, "__srcgrad_remake__", None)
        if remake is not None and self._depends is not None and self._depends.stale():
            # a gradient's generated wrapper whose sweeps' build went stale (a global its
            # function called was rebound): its text holds the old sweeps, so make it again
            self.fn = remake()
        self._depends = getattr(self.fn, "__srcgrad_depends__", None)
        self.generation += 1
        self._rules_version = registry.version()
        ctx = prepare(self.fn, self.wrt, debug)
        ctx.rt = runtime_alias(ctx)
        ctx.scalar_mode = self.scalar_mode
        ctx.entry = self.entry
        ctx.consumed = self.consumed
        ctx.lean = self.lean
        ctx.discard_value = self.discard_value
        try:
            tree = normalize(ctx)
            module = self.generate(tree, ctx)
            factory = codegen.take_apart(module)
        except InternalError as e:
            raise e.at(ctx.location(ctx.src.tree)) from e
        except SrcgradError:
            raise
        except Exception as e:  # a broken invariant in a pass: say where, and that it is ours
            raise InternalError("build", f"{type(e).__name__}: {e}",
                                ctx.location(ctx.src.tree)) from e
        self.scalar_closed = ctx.scalar_closed
        closure = [n for n in sorted(ctx.closure) if n != ctx.rt]
        bound = {ctx.rt: runtime, **ctx.helpers}
        if factory.params != list(bound) + closure:
            raise InternalError("build", f"the factory takes {factory.params}, but srcgrad "
                                         f"passes {list(bound) + closure}",
                                ctx.location(ctx.src.tree))
        self.source = codegen.show(factory.functions, self._header(ctx, bound, closure))
        if debug:
            print(self.source, file=sys.stderr)
        label = f"{self.fn.__name__} {'scalar ' if self.scalar_mode else ''}{self.kind}"
        src = ctx.src
        lines = codegen.line_map(ast.Module(body=factory.functions, type_ignores=[]),
                                 self.source, lambda node: src.first_line + node.lineno - 1)
        make, self.filename = codegen.compile_factory(
            self.source, factory.params, factory.returned, label,
            codegen.UserLines(src.filename, getattr(self.fn, "__name__", "f"), lines))
        self._make = type(make)(make.__code__, getattr(self.fn, "__globals__", {}), "_make")
        self._helpers = [runtime] + list(ctx.helpers.values())
        self._closure_names = closure
        # where each closure name's cell sits in a function of this code (functions_for
        # reads the cells by position: no dict of them per call)
        freevars = self.fn.__code__.co_freevars if self._has_closure else ()
        self._closure_at = tuple(freevars.index(n) for n in closure) if freevars else ()
        self._assumptions = list(ctx.assumptions.items())
        self._closure_assumptions = dict(ctx.closure_assumptions)
        self._globals = getattr(self.fn, "__globals__", {})
        self.__dict__.pop("_scalar", None)
        # functions made by one 'def' may differ in their closure cells and in their
        # defaults (lambda v, i=i: ... in a loop): those get their own instance per call
        self._per_instance = self._has_closure or bool(
            self.fn.__defaults__ or self.fn.__kwdefaults__)
        # a sweep srcgrad generated (a gradient differentiated again) is a closure whose cells
        # are its factory's parameters, which nothing rebinds: the same cells hold the same
        # values, so its instance serves again without reading them (~0.5 us a fetch, 29
        # fetches per call of a third derivative through grad called inside)
        self._fixed_cells = self._has_closure and self.fn.__code__.co_filename.startswith(
            "<srcgrad") and not _rebinds_cells(self.fn.__code__)
        if not self._per_instance:
            self._functions = self._make(*self._helpers)

    def _header(self, ctx, bound: dict, closure: list[str]) -> list[str]:
        """The comment above the shown functions: what they are, and what each name the
        factory binds stands for (srcgrad.runtime, rules' helpers, closure variables)."""
        where = f"{_qualname(self.fn)} " \
                f"({os.path.basename(ctx.src.filename)}:{ctx.src.first_line})"
        title = _TITLES.get(self.kind, "{kind} of {f}, in {wrt}").format(
            kind=self.kind, f=where, wrt=", ".join(ctx.wrt_names) or "nothing")
        if self.scalar_mode:
            title += ", for scalar arguments"
        lines = [f"srcgrad: {title}"]
        names = [f"  {name} = {describe(obj)}" for name, obj in bound.items()]
        for name in closure:  # (an object the build resolved, or data read per call)
            what = describe(ctx.closure_assumptions[name]) + ", from" \
                if name in ctx.closure_assumptions else ": a variable of"
            names.append(f"  {name}{' = ' if what[0] != ':' else ''}{what} the closure of "
                         f"{_qualname(self.fn)}")
        return lines + ["names srcgrad binds:"] + names

    @staticmethod
    def _with_defaults(functions: tuple, fn) -> tuple:
        """The first generated function has the user's signature: give it ``fn``'s own
        default objects, so a mutated default is seen as Python would see it."""
        if functions and (fn.__defaults__ or fn.__kwdefaults__):
            functions[0].__defaults__ = fn.__defaults__
            functions[0].__kwdefaults__ = fn.__kwdefaults__
        return functions

    def serves(self, fn: Callable) -> bool:
        """Whether this build is right for ``fn``: same code and globals, and the closure
        values the transformation resolved are the ones in ``fn``'s cells."""
        if getattr(fn, "__code__", None) is not self.fn.__code__ or getattr(
                fn, "__globals__", None) is not getattr(self.fn, "__globals__", None):
            return False
        if not self._closure_assumptions:
            return True
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        for name, obj in self._closure_assumptions.items():
            try:
                if cells[name].cell_contents is not obj:
                    return False
            except (KeyError, ValueError):
                return False
        return True

    def stale(self) -> bool:
        """Whether a global the transformation resolved (a function it called, a module)
        has been rebound since, so Python would call the new one, or a user's derivative
        rule was registered or replaced since (the build may have inlined the old one)."""
        # (registry.version() read as its variable: this runs for every build a sweep's
        # fetch depends on, ~15 times a call of a gradient of a gradient)
        if self._rules_version != registry.changes:
            return True
        if self._depends is not None and self._depends.stale():
            return True
        g = self._globals
        for name, obj in self._assumptions:  # (a loop: any() of a generator costs ~1 us)
            if g.get(name, UNBOUND) is not obj:
                return True
        return False

    def functions_for(self, fn: Callable | None = None) -> tuple:
        """The generated functions for ``fn``, a function sharing this build's code."""
        if self.stale():
            with _LOCK:
                if self.stale():
                    self.build()
        if not self._per_instance:  # (the common case, without a call)
            return self._functions
        return self.current_functions(fn)

    def current_functions(self, fn: Callable | None = None) -> tuple:
        """``functions_for(fn)`` without checking whether the build went stale: for the
        backward sweep, which must be the one of the forward sweep that just ran (checked
        then; a build remade in between would not read the saved values it made)."""
        if self._make is None:  # (never built)
            return self.functions_for(fn)
        if not self._per_instance:
            return self._functions
        if fn is None or getattr(fn, "__code__", None) is not self.fn.__code__:
            fn = self.fn  # (a caller may name the function this build was made for by proxy)
        # the functions made last serve again for the same build, closure values and default
        # objects: the sweeps of a generated sweep (a gradient differentiated again) are
        # closures, whose callers fetch them on every call
        made = self._instance
        if made is not None and self._fixed_cells and made[5] is fn.__closure__ \
                and made[0] is self._make and made[1] is fn.__defaults__ \
                and made[2] is fn.__kwdefaults__:
            return made[4]
        values = []
        if self._has_closure:
            cells = fn.__closure__
            values = [cells[i].cell_contents for i in self._closure_at]
        if made is not None and made[0] is self._make and made[1] is fn.__defaults__ \
                and made[2] is fn.__kwdefaults__ and len(made[3]) == len(values):
            for old, new in zip(made[3], values):
                if old is not new:
                    break
            else:
                return made[4]
        functions = self._with_defaults(self._make(*self._helpers, *values), fn)
        self._instance = (self._make, fn.__defaults__, fn.__kwdefaults__, values, functions,
                          fn.__closure__)
        return functions

    def scalar_variant(self) -> "Generated":
        """This build specialized to scalar arguments (no broadcasting, so no unbroadcast),
        when the function computes only scalars from scalars; else this build itself."""
        if not self.scalar_closed or self.scalar_mode:
            return self
        variant = self.__dict__.get("_scalar")
        if variant is None:
            variant = type(self)(self.fn, self.wrt, scalar_mode=True)
            variant.build()
            self._scalar = variant
        return variant


def _rebinds_cells(code: types.CodeType) -> bool:
    """Whether ``code``, or a function defined in it, may rebind a variable of an enclosing
    scope (``nonlocal``: a STORE_DEREF or DELETE_DEREF of one of its free variables)."""
    free = set(code.co_freevars)
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in free:
            return True
    return any(_rebinds_cells(c) for c in code.co_consts if isinstance(c, types.CodeType))


_TITLES = {
    "adjoint": "forward and backward sweeps of {f}, with respect to {wrt}",
    "jvp": "forward mode (jvp) of {f}, with respect to {wrt}",
    "vmap": "{f} batched over {wrt}",
}


def runtime_alias(ctx) -> str:
    """The name generated code uses for srcgrad.runtime: ``_rt``, also when the function
    being transformed reads srcgrad.runtime under that name itself (a generated sweep or
    wrapper differentiated again), so that one alias serves both; else the fresh name the
    context chose."""
    if ctx.rt == "_rt" or "_rt" in ctx.local_names:
        return ctx.rt
    value = ctx.closure["_rt"] if "_rt" in ctx.closure else ctx.globals.get("_rt", UNBOUND)
    return "_rt" if value is runtime else ctx.rt


def describe(obj) -> str:
    """What a name bound in generated code stands for, in a few words."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    inner = getattr(obj, "adj", obj)  # (a method's sweeps with self bound, a closure's)
    if isinstance(inner, Generated):
        return f"the {_KINDS.get(inner.kind, inner.kind)} of {_where(inner.fn)}" \
               f"{_wrt_text(inner.fn, inner.wrt)}"
    fn = getattr(obj, "fn", None)
    if fn is not None and hasattr(obj, "wrt") and callable(obj):  # a generated call site
        return f"the forward mode (jvp) of {_where(fn)}{_wrt_text(fn, obj.wrt)}"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(name, str):
        module = getattr(obj, "__module__", None)
        if module is None and isinstance(obj, np.ufunc):
            module = "numpy"
        return f"{module}.{name}" if module and module != "builtins" else name
    return f"a {type(obj).__name__} object"


_KINDS = {"adjoint": "sweeps", "jvp": "forward mode (jvp)", "vmap": "batched code"}


def _where(fn) -> str:
    """``name() (file.py:line)`` of a function."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    where = f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})" if code else ""
    return f"{_qualname(fn)}(){where}"


def _wrt_text(fn, wrt: tuple) -> str:
    """``, with respect to x, y`` naming ``fn``'s parameters at ``wrt``."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return ""
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return ", with respect to " + ", ".join(names[i] if i < len(names) else f"#{i}"
                                             for i in wrt) if wrt else ""


def _qualname(fn) -> str:
    """``fn``'s qualified name, without the factory's ``_make.<locals>.`` that generated
    functions have."""
    return getattr(fn, "__qualname__", "f").replace("_make.<locals>.", "")


@functools.lru_cache(maxsize=None)
def consuming(cls: type, consumed: frozenset) -> type:
    """``cls`` for a call site that hands the parameters ``consumed`` over to the callee
    (Context.consumed): a subclass per set, so ``cached_build`` keys its builds apart."""
    if not consumed:
        return cls
    return type(cls.__name__, (cls,), {"consumed": consumed, "__module__": cls.__module__,
                                       "__doc__": cls.__doc__})


def cached_build(cache, cls: type, fn: Callable, wrt: tuple[int, ...],
                 debug: bool = False) -> Any:
    """The cached ``cls`` build of ``fn`` for ``wrt``, built on first use.

    Keyed by what the generated code depends on: the code object and the globals it runs in
    (by identity: equal text in two modules is two builds), and the closure values the
    transformation resolved (see ``serves``). Closures, local defs and decorators' wrappers
    made by one ``def`` otherwise share a build and read their own cells per call. It is
    stored before building, so recursion finds it. The version of the users' rules is part
    of the key: a rule registered or replaced since a build makes a new one.
    """
    code = fn.__code__
    rules_version = registry.version()
    slot = (id(code), id(getattr(fn, "__globals__", None)), wrt, cls, rules_version)
    with _LOCK:
        # the outer key compares code objects by equality; builds hold their function, so
        # the identities in ``slot`` stay valid while a build is stored
        per_code = cache.get(code)
        if per_code is None:
            per_code = cache[code] = {}
        for old in [s for s in per_code if s[-1] != rules_version]:
            del per_code[old]
            cache.changed()
        builds = per_code.setdefault(slot, [])
        for built in builds:
            if built.serves(fn):
                if not debug:
                    return built
                builds.remove(built)
                cache.changed()
                break
        built = cls(fn, wrt)
        builds.append(built)
        try:
            built.build(debug)
        except BaseException:
            builds.remove(built)
            raise
        return built


class BuildCache(weakref.WeakKeyDictionary):
    """The builds of one kind, by code object (see ``cached_build``). ``epoch`` changes
    whenever builds leave it (cleared, popped, replaced), so that a call site remembering
    the build it got last (``LastBuild``) looks it up again."""

    def __init__(self):
        super().__init__()
        self.epoch = 0

    def changed(self) -> None:
        self.epoch += 1

    def clear(self) -> None:
        self.changed()
        super().clear()

    def pop(self, key, *default):
        self.changed()
        return super().pop(key, *default)

    def popitem(self):
        self.changed()
        return super().popitem()

    def __delitem__(self, key) -> None:
        self.changed()
        super().__delitem__(key)


class LastBuild:
    """The build ``cached_build`` gave one call site (a gradient function) last, handed
    out again without the cache's lookups (~2 us per call) while the cache would give the
    same: the function runs the same code object (``f.__code__`` can be assigned, and a
    build holding ``f`` itself would not see it), no build left ``cache`` since (its
    epoch), no user's rule changed since (all read before the lookup, so a change during
    it makes a miss), and the build ``serves`` the function: globals and resolved closure
    values. Whether a global the build resolved was rebound is checked per call as before,
    by ``functions_for`` (``stale``)."""

    __slots__ = ("_cache", "_last")

    def __init__(self, cache: BuildCache):
        self._cache = cache
        # (build, code, epoch, rules version), assigned at once: threads see all or none
        self._last: tuple | None = None

    def get(self, fn: Callable, lookup: Callable[[], Generated]) -> Generated:
        """The remembered build if it still holds for ``fn``, else ``lookup()``'s."""
        last = self._last
        if last is not None and last[1] is fn.__code__ and last[2] == self._cache.epoch \
                and last[3] == registry.changes and last[0].serves(fn):
            return last[0]
        code, epoch, version = fn.__code__, self._cache.epoch, registry.version()
        built = lookup()
        remember = built.serves(fn) and built.fn.__code__ is code
        self._last = (built, code, epoch, version) if remember else None
        return built


class LastMadeBuild(LastBuild):
    """``LastBuild`` for a function srcgrad made (a gradient differentiated again), whose
    build is of the generated function standing for it (api_forward.source_function), not of
    its own code: handed out again while no build left the cache, no user's rule changed, and
    ``current(fn, built.fn)`` says the same generated function stands for ``fn`` (skipping
    the lookup's ~10 us: the wrapper's defaults and sweeps checked, its build found again).
    Whether the sweeps that function holds went stale is checked per call as before, by
    ``functions_for``, which makes it again then."""

    __slots__ = ("_current",)

    def __init__(self, cache: BuildCache, current: Callable[[Callable, Callable], bool]):
        super().__init__(cache)
        self._current = current

    def get(self, fn: Callable, lookup: Callable[[], Generated]) -> Generated:
        last = self._last
        if last is not None and last[2] == self._cache.epoch \
                and last[3] == registry.changes and self._current(fn, last[0].fn):
            return last[0]
        epoch, version = self._cache.epoch, registry.changes
        built = lookup()
        self._last = (built, None, epoch, version) if self._current(fn, built.fn) else None
        return built


# what the last srcgrad.jvp(f, ...), hvp or vjp call ran, by function and kind: these return
# values, so srcgrad.source(f, "jvp") is the one way to show their code
_RAN: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def remember(fn, kind: str, builds: list) -> None:
    """Record that ``srcgrad.<kind>(fn, ...)`` ran ``builds`` (Generated objects), weakly:
    the caches keep builds alive, and a build holds its function, the key here."""
    try:
        _RAN.setdefault(getattr(fn, "__func__", fn), {})[kind] = [weakref.ref(b)
                                                                   for b in builds]
    except TypeError:  # (an object that cannot be weakly referenced: nothing to show later)
        pass


def remembered(fn, kind: str) -> list:
    """The builds the last ``srcgrad.<kind>(fn, ...)`` ran (and still alive), or []."""
    try:
        refs = _RAN.get(getattr(fn, "__func__", fn), {}).get(kind, [])
    except TypeError:
        return []
    builds = [ref() for ref in refs]
    return builds if all(b is not None for b in builds) else []


def own_attributes(wrapper: Callable, shown: Callable[[], list]) -> Callable:
    """``wrapper`` (made with ``functools.wraps``, which copies the wrapped function's
    ``__dict__``) without the ``__srcgrad_*`` attributes it copied from a function srcgrad
    made: they describe that function (a gradient), not this one, which would otherwise be
    shown, and differentiated again, as that gradient. ``shown`` becomes its
    ``__srcgrad_source__``: the builds ``srcgrad.source(wrapper)`` shows."""
    for name in [n for n in vars(wrapper) if n.startswith("__srcgrad_")]:
        delattr(wrapper, name)
    wrapper.__srcgrad_source__ = shown
    return wrapper
