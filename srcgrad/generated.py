"""Generated code of one function for one choice of wrt: building, compiling, caching.

``Adjoint`` (reverse mode, api.py) and ``Forward`` (forward mode, api_forward.py) differ only
in the generator they run on the normalized tree; everything around it lives here once.
"""
from __future__ import annotations

__all__ = ["Generated", "cached_build"]

import abc
import sys
import threading
from typing import Any, Callable

from . import codegen, runtime
from .errors import InternalError, SrcgradError
from .rules import registry
from .transforms import normalize, prepare
from .transforms.context import _UNBOUND

_LOCK = threading.RLock()


class Generated(abc.ABC):
    """A compiled ``_make(...)`` factory and the functions it returns.

    The functions see the user's module globals (not a merged namespace); srcgrad's own
    objects arrive as the factory's arguments, and the values of a closure's cells too, so
    closures made by one ``def`` share one build and read their own cells per call.
    """

    kind = "generated"  # shown in the linecache pseudo-filename

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
        self._functions: tuple = ()
        self._has_closure = bool(getattr(fn, "__closure__", None))
        self._closure_assumptions: dict = {}

    @abc.abstractmethod
    def generate(self, tree, ctx):
        """The generated module for the normalized ``tree``: the subclass's generator."""

    def build(self, debug: bool = False) -> None:
        self._rules_version = registry.version()
        ctx = prepare(self.fn, self.wrt, debug)
        ctx.scalar_mode = self.scalar_mode
        try:
            tree = normalize(ctx)
            module = self.generate(tree, ctx)
        except InternalError as e:
            raise e.at(ctx.location(ctx.src.tree)) from e
        except SrcgradError:
            raise
        except Exception as e:  # a broken invariant in a pass: say where, and that it is ours
            raise InternalError("build", f"{type(e).__name__}: {e}",
                                ctx.location(ctx.src.tree)) from e
        self.scalar_closed = ctx.scalar_closed
        self.source = codegen.to_source(module)
        if debug:
            print(self.source, file=sys.stderr)
        label = f"{self.fn.__name__} {'scalar ' if self.scalar_mode else ''}{self.kind}"
        src = ctx.src
        lines = codegen.line_map(module, self.source,
                                 lambda node: src.first_line + node.lineno - 1)
        namespace = codegen.compile_source(
            self.source, label, {},
            codegen.UserLines(src.filename, getattr(self.fn, "__name__", "f"), lines))
        self.filename = namespace["__srcgrad_file__"]
        make = namespace["_make"]
        self._make = type(make)(make.__code__, getattr(self.fn, "__globals__", {}), "_make")
        self._helpers = [runtime] + list(ctx.helpers.values())
        self._closure_names = sorted(ctx.closure)
        self._assumptions = list(ctx.assumptions.items())
        self._closure_assumptions = dict(ctx.closure_assumptions)
        self._globals = getattr(self.fn, "__globals__", {})
        self.__dict__.pop("_scalar", None)
        # functions made by one 'def' may differ in their closure cells and in their
        # defaults (lambda v, i=i: ... in a loop): those get their own instance per call
        self._per_instance = self._has_closure or bool(
            self.fn.__defaults__ or self.fn.__kwdefaults__)
        if not self._per_instance:
            self._functions = self._make(*self._helpers)

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
        if self._rules_version != registry.version():
            return True
        g = self._globals
        return any(g.get(name, _UNBOUND) is not obj for name, obj in self._assumptions)

    def functions_for(self, fn: Callable | None = None) -> tuple:
        """The generated functions for ``fn``, a function sharing this build's code."""
        if self.stale():
            with _LOCK:
                if self.stale():
                    self.build()
        if not self._per_instance:
            return self._functions
        if fn is None or getattr(fn, "__code__", None) is not self.fn.__code__:
            fn = self.fn  # (a caller may name the function this build was made for by proxy)
        values = []
        if self._has_closure:
            cells = dict(zip(fn.__code__.co_freevars, fn.__closure__))
            values = [cells[n].cell_contents for n in self._closure_names]
        return self._with_defaults(self._make(*self._helpers, *values), fn)

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
    slot = (id(code), id(getattr(fn, "__globals__", None)), wrt, rules_version)
    with _LOCK:
        # the outer key compares code objects by equality; builds hold their function, so
        # the identities in ``slot`` stay valid while a build is stored
        per_code = cache.get(code)
        if per_code is None:
            per_code = cache[code] = {}
        for old in [s for s in per_code if s[-1] != rules_version]:
            del per_code[old]
        builds = per_code.setdefault(slot, [])
        for built in builds:
            if built.serves(fn):
                if not debug:
                    return built
                builds.remove(built)
                break
        built = cls(fn, wrt)
        builds.append(built)
        try:
            built.build(debug)
        except BaseException:
            builds.remove(built)
            raise
        return built
