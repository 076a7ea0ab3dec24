"""Guarantees afterwards: every value a compiled sweep reads from outside its arguments (a
module global, a closure variable, an attribute of a module) is either a parameter of the
compiled function, read afresh on every call, or frozen into the code with a check that it
is still the same object; anything else is refused at the user's line.

Why: numba reads a global (or a closure cell, or ``mod.attr``) once, when it compiles, and
bakes the value in: an array changed in place afterwards would never be seen, a silent wrong
gradient. So arrays, and tuples holding arrays, are passed as arguments; modules, functions
and immutable constants (numbers, strings, ``None``, tuples of those) are frozen and checked
by identity before each call (rebinding one recompiles); lists, dicts, sets and other objects,
which can change without being rebound and which numba cannot take by value, are refused.
Closure variables holding data are always passed (closures made by one ``def`` share a build
but not their cells).
"""
from __future__ import annotations

__all__ = ["Reads", "RefusedRead", "Source", "check_passed", "external_reads", "kind_of"]

import ast
import enum
import types
from typing import Any, NamedTuple

import numpy as np

from .dtypes import explain, mismatch, named_mismatch
from .errors import refusal
from .sweeps import fresh_name

_CONSTANTS = (bool, int, float, complex, str, bytes, type(None), np.generic, np.dtype,
              enum.Enum)
_UNBOUND = object()


class Source(NamedTuple):
    """Where a value read by compiled code lives: a global of ``namespace`` or a cell of the
    function's closure (``where``), then attributes (``path[1:]``)."""

    where: str  # "global" or "closure"
    path: tuple  # (name, attr, ...)
    namespace: Any  # the globals dict (for "global"), else None
    line: str = ""  # "file:line" of the user's line that reads it first, for messages

    @property
    def key(self) -> tuple:
        return (self.where, id(self.namespace), self.path)

    def read(self, fn) -> Any:
        """Its value now, for the function ``fn`` (whose closure cells are read)."""
        name = self.path[0]
        if self.where == "global":
            try:
                value = self.namespace[name]
            except KeyError:
                raise NameError(f"name '{name}' is not defined") from None
        else:
            code = fn.__code__
            value = fn.__closure__[code.co_freevars.index(name)].cell_contents
        for attr in self.path[1:]:
            value = getattr(value, attr)
        return value

    def label(self) -> str:
        return ".".join(self.path)


class Reads(NamedTuple):
    """What one compiled function reads from outside: passed values (parameter name and
    source, in parameter order) and frozen ones (source and the value compiled in)."""

    passed: tuple  # ((param, Source), ...)
    frozen: tuple  # ((Source, value), ...)


def kind_of(value) -> str:
    """How compiled code may read ``value``: "pass" (data that can change in place: an
    array, a tuple holding one), "freeze" (a module, a function, an immutable constant),
    or "refuse" (a list, dict, set, other object, or an array subclass such as np.matrix)."""
    if type(value) is np.ndarray or isinstance(value, np.memmap):
        return "pass"  # (numba types an np.matrix as a plain array: '*' would change meaning)
    if isinstance(value, tuple):
        kinds = {kind_of(v) for v in value}
        return "refuse" if "refuse" in kinds else "pass" if "pass" in kinds else "freeze"
    if isinstance(value, (_CONSTANTS, types.ModuleType)) or callable(value):
        return "freeze"
    return "refuse"


def _dtype_refusal(label: str, value) -> str | None:
    """Why compiled code may not read ``value`` (reached as ``label``) for its dtype: one
    numba computes with differently from numpy (dtypes.py)."""
    dtype = mismatch(value)
    if dtype is not None:
        return f"'{label}' holds {dtype} values: {explain(dtype)}"
    dtype = named_mismatch(value)
    if dtype is not None:
        return f"'{label}' makes {dtype} values: {explain(dtype)}"
    return None


def check_passed(sources: tuple, values: list, fn) -> None:
    """``JitUnsupportedError`` when a value passed to compiled code (read now: an array
    rebound since the build) has a dtype numba computes with differently from numpy."""
    for source, value in zip(sources, values):
        if type(value) is not np.ndarray and not isinstance(value, (tuple, np.generic)):
            continue
        why = _dtype_refusal(source.label(), value)
        if why is not None:
            raise refusal(source.line, why, fn)


class RefusedRead(Exception):
    """A value compiled code would freeze although it can change: ``node`` locates it."""

    def __init__(self, what: str, node):
        super().__init__(what)
        self.what, self.node = what, node


_RANDOM_MODULES = ("random", "numpy.random")


def _draws_random_numbers(value, path, fn) -> bool:
    """Whether ``value`` (reached through ``path``) is the random module or one of its
    functions, or a method of a numpy or Python random generator."""
    owner = getattr(value, "__self__", None)
    if isinstance(owner, (np.random.RandomState, np.random.Generator)) or \
            type(owner).__module__ == "random":
        return True
    if getattr(value, "__name__", None) in _RANDOM_MODULES and \
            isinstance(value, types.ModuleType):
        return True
    namespace = getattr(fn, "__globals__", {})
    root = namespace.get(path[0])
    return isinstance(root, types.ModuleType) and root.__name__ in _RANDOM_MODULES


def _chain(node) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"]; None for anything but names and attributes."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + names[::-1]


def _local_names(func: ast.FunctionDef) -> set[str]:
    out = {a.arg for a in ast.walk(func) if isinstance(a, ast.arg)}
    out |= {n.id for n in ast.walk(func) if isinstance(n, ast.Name)
            and isinstance(n.ctx, (ast.Store, ast.Del))}
    return out


class _Finder(ast.NodeTransformer):
    """Replaces each passed read by its parameter's name; records frozen ones."""

    def __init__(self, free, closure: set[str], fn, taken: set[str], locate):
        self.free, self.closure, self.fn, self.taken = free, closure, fn, taken
        self.locate = locate  # node -> "file:line" of the user's line
        self.node = None  # the node being resolved
        self.passed: dict[tuple, tuple] = {}  # key -> (param, Source)
        self.frozen: dict[tuple, tuple] = {}  # key -> (Source, value)

    def source(self, path) -> Source:
        line = self.locate(self.node)
        if path[0] in self.closure:
            return Source("closure", tuple(path), None, line)
        return Source("global", tuple(path), getattr(self.fn, "__globals__", {}), line)

    def resolve(self, node, chain: list[str]):
        """The node replacing ``node`` (a name or attribute chain of a free root)."""
        self.node = node
        root = self.source(chain[:1])
        try:
            value = root.read(self.fn)
        except (NameError, ValueError):  # a builtin (numba resolves it) or an empty cell
            return None
        if isinstance(value, types.ModuleType):  # (rebinding 'np' itself recompiles)
            self.frozen.setdefault(root.key, (root, value))
        k = 1
        while k < len(chain) and isinstance(value, types.ModuleType) \
                and hasattr(value, chain[k]):
            value = getattr(value, chain[k])
            k += 1
        source = self.source(chain[:k])
        if _draws_random_numbers(value, chain[:k], self.fn):
            raise RefusedRead(
                f"'{'.'.join(chain)}' draws random numbers, and compiled code draws them from "
                f"numba's own generator, which np.random.seed and random.seed do not seed: "
                f"draw them outside and pass them as an argument", node)
        kind = kind_of(value)
        if kind == "refuse":
            raise RefusedRead(
                f"'{source.label()}' is a {type(value).__name__}, which numba would read once, "
                f"when it compiles, so a later change to it would not be seen: pass it as an "
                f"argument, or make it a numpy array or a tuple", node)
        closure_data = source.where == "closure" and k == 1 and not (
            isinstance(value, types.ModuleType) or callable(value))
        if kind == "pass" or closure_data:
            if source.key not in self.passed:
                param = chain[0] if k == 1 else fresh_name("_" + "_".join(chain[:k]),
                                                           self.taken)
                self.passed[source.key] = (param, source)
            name = ast.Name(id=self.passed[source.key][0], ctx=ast.Load())
            replaced = ast.copy_location(name, node)
            for attr in chain[k:]:
                replaced = ast.copy_location(
                    ast.Attribute(value=replaced, attr=attr, ctx=ast.Load()), node)
            return replaced
        why = _dtype_refusal(source.label(), value)  # (data passed: checked per call)
        if why is not None:
            raise RefusedRead(why, node)
        if k == 1 or isinstance(value, (*_CONSTANTS, tuple)):
            # (functions reached through a module, np.sum, are numba's to resolve)
            self.frozen.setdefault(source.key, (source, value))
        return None

    def visit_Call(self, node):
        """A dtype named by a string (``x.astype("float32")``, ``dtype="f4"``)."""
        named = [k.value for k in node.keywords if k.arg == "dtype"]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "astype":
            named += node.args[:1]
        elif _chain(node.func) is not None and _chain(node.func)[0] in ("np", "numpy"):
            named += node.args[1:]  # (np.zeros(3, "f4"), np.array(x, "float32"))
        for value in named:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                why = _dtype_refusal(repr(value.value), value.value)
                if why is not None:
                    raise RefusedRead(why, node)
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        chain = _chain(node)
        if chain is None or chain[0] not in self.free or not isinstance(node.ctx, ast.Load):
            return self.generic_visit(node)
        return self.resolve(node, chain) or node

    def visit_Name(self, node):
        if node.id in self.free and isinstance(node.ctx, ast.Load):
            return self.resolve(node, [node.id]) or node
        return node




def external_reads(funcs: list[ast.FunctionDef], bound: set[str], closure: set[str],
                   fn, locate=lambda node: "") -> Reads:
    """What ``funcs`` (compiled functions of ``fn``'s factory) read from outside, their
    trees rewritten in place so that each passed value is read from a parameter (not yet
    added: the caller decides where). ``bound`` are the factory's own parameters (srcgrad's
    helpers), ``closure`` the names of ``fn``'s closure variables."""
    taken = set().union(*(_local_names(f) for f in funcs)) | bound | closure
    passed, frozen = {}, {}
    for func in funcs:
        free = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)} \
            - _local_names(func) - (bound - closure)
        finder = _Finder(free, closure, fn, taken, locate)
        finder.passed = passed
        finder.frozen = frozen
        func.body = [finder.visit(s) for s in func.body]
    return Reads(tuple(passed.values()), tuple(frozen.values()))
