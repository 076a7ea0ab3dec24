"""The shared context every pass reads and writes: the only channel besides the tree."""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any, Callable

import gast
import numpy as np

from .. import codegen
from ..errors import Location, UnsupportedSyntaxError
from ..naming import Namer
from ..source import FunctionSource
from . import astutil as A


@dataclass
class Resolved:
    """What a call or attribute refers to, found by the resolve pass."""

    kind: str  # 'rule' | 'nondiff' | 'user' | 'method' | 'unknown' | 'attribute'
    obj: Any = None  # the function (or rule key) it refers to
    name: str = ""  # readable name for messages


UNBOUND = object()  # marks a name that was not a global when resolved
# values whose identity no transformation decision depends on (only callees and modules are
# resolved statically)
_PLAIN_DATA = (int, float, complex, bool, str, bytes, type(None), tuple, list, dict, set,
               np.ndarray, np.generic)


class DynamicCall:
    """A call whose callee is known only at run time (a function passed in, a local def or
    lambda, a method of a user object): generated code goes through runtime.call_fwd."""

    def __init__(self, kind: str):
        self.kind = kind  # 'call' (f(...)) or 'method' (obj.name(...))


@dataclass
class Context:
    """Facts about one function being transformed, shared by all passes."""

    fn: Callable
    src: FunctionSource
    wrt: tuple[int, ...]
    namer: Namer
    params: list[str] = field(default_factory=list)
    globals: dict = field(default_factory=dict)
    closure: dict = field(default_factory=dict)
    local_names: set[str] = field(default_factory=set)
    # temporaries a pass made to carry values to the statements right after it (the tuple a
    # call of a function rebinding 'nonlocal' variables returns, nonlocals.py): read there
    # only, so never another name seeing an array an in-place update changes (desugar.py)
    transient: set[str] = field(default_factory=set)
    # side tables (keyed by id of the node; the node itself is kept alive by the tree)
    resolved: dict[int, Resolved] = field(default_factory=dict)
    # names of values depending on wrt inputs, and of those that also reach the result
    varied: set[str] = field(default_factory=set)
    active: set[str] = field(default_factory=set)
    # objects generated code refers to, by the name it uses for them (factory parameters)
    helpers: dict[str, Any] = field(default_factory=dict)
    problems: list[tuple[Location, str, str]] = field(default_factory=list)
    debug: bool = False
    rt: str = "_rt"  # the name generated code uses for srcgrad.runtime
    # given scalar arguments, every value is a scalar (see scalar.py); in scalar mode the
    # reverse pass relies on it and emits no unbroadcasting
    scalar_closed: bool = False
    scalar_mode: bool = False
    # the function differentiated by an API call itself (not a helper it calls): its
    # parameters hold the caller's arguments, which it may then update in place (desugar.py)
    entry: bool = False
    # parameters whose argument the call site hands over (``x = helper(x)``, the caller's x
    # read no more): the function may update them in place too, like an entry (desugar.py)
    consumed: frozenset = frozenset()
    # the sweeps a ``grad`` call runs itself, seeded with one and never differentiated again:
    # the backward sweep may skip products by ones and accumulate in place (unit_seed.py,
    # inplace.py)
    lean: bool = False
    # ... and the value is discarded too (grad, not value_and_grad): the forward sweep may
    # probe what only makes the value (dead_values.py)
    discard_value: bool = False
    # grad's lean sweeps built for arguments of these kinds, one per positional parameter
    # (api.argument_facts: an exact ndarray's rank, negated when a dimension is 1, paired with
    # its dtype's str unless float64; "f" for a Python float; 0 for anything else;
    # transforms/rank_facts.py)
    arg_facts: tuple = ()
    # ... and how many calls the facts proved could be rewritten
    rank_rewrites: int = 0
    # globals the transformation resolved, with the objects they were bound to
    assumptions: dict = field(default_factory=dict)
    # closure variables whose value the transformation read (a function it resolved, a
    # module): functions made by one 'def' whose cells hold other objects need their own build
    closure_assumptions: dict = field(default_factory=dict)

    @property
    def wrt_names(self) -> list[str]:
        return [self.params[i] for i in self.wrt]

    def location(self, node) -> Location:
        return Location(self.src.filename, self.src.real_line(node), self.fn.__name__)

    def problem(self, node, construct: str, hint: str = "") -> None:
        self.problems.append((self.user_location(node), construct, hint))

    def user_location(self, node) -> Location:
        """``location(node)``, and for a generated sweep being transformed again (higher
        derivatives), the user's line its statement comes from, through sweeps of sweeps."""
        where = self.location(node)
        for _ in range(8):
            if not where.filename.startswith("<srcgrad"):
                break
            mapped = codegen.user_line(where.filename, where.lineno)
            if mapped is None:
                break
            where = Location(mapped[0], mapped[2], mapped[1])
        return where

    def raise_problems(self) -> None:
        if self.problems:
            problems, self.problems = self.problems, []
            raise UnsupportedSyntaxError(problems)

    @property
    def own_code(self) -> bool:
        """Whether the function is srcgrad's own code (a generated sweep, a rule function),
        which passes values to rules' non-differentiable positions only for their shapes."""
        module = getattr(self.fn, "__module__", "") or ""
        return self.src.filename.startswith("<srcgrad") or module.startswith("srcgrad.")

    def is_tape(self, name: str) -> bool:
        """Whether ``name`` is the tape of a generated sweep being transformed again (for
        higher derivatives): its ``pop()`` stays a pop, not a functional list update."""
        return self.src.filename.startswith("<srcgrad") and name.startswith("_tape")

    def bind_locals(self, tree) -> None:
        """Count the names ``tree`` binds as locals: those the passes so far introduced (a
        comprehension's renamed variable, ANF's ``_t1``) are never the module's globals."""
        self.local_names |= {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
                             and isinstance(n.ctx, (gast.Store, gast.Del))}

    def lookup_static(self, name: str):
        """The object a free name refers to (closure, global, builtin), or raise KeyError."""
        if name in self.local_names:
            raise KeyError(name)
        if name in self.helpers:  # (a pass bound it: gradient_calls.py)
            return self.helpers[name]
        if name in self.closure:
            value = self.closure[name]
            if not isinstance(value, _PLAIN_DATA):  # data is read at run time, per instance
                self.closure_assumptions[name] = value
            return value
        if name in self.globals:
            # the generated code is valid while this global keeps this value (see
            # Generated.functions_for, which rebuilds when one was rebound)
            self.assumptions[name] = self.globals[name]
            return self.globals[name]
        self.assumptions.setdefault(name, UNBOUND)  # a builtin, unless a global shadows it
        return getattr(builtins, name)

    def helper(self, obj: Any, preferred: str) -> str:
        """A name generated code can use for ``obj``: a global of the user's module when it
        is bound there to the same object, else a factory parameter under a fresh name."""
        if preferred not in self.local_names and self.globals.get(preferred) is obj \
                and preferred not in self.closure:
            return preferred
        for name, value in self.helpers.items():
            if value is obj:
                return name
        name = self.namer.unique(preferred)
        self.helpers[name] = obj
        return name


def factory_module(ctx: Context, functions: list, returned: list[str]) -> gast.Module:
    """``def _make(_rt, helpers..., closure vars...): <functions>; return (<returned>,)``: the
    module a generator hands to codegen. Helpers no function reads (the cleanup pass rewrote
    their every use away) are dropped from ``ctx.helpers`` and not passed in."""
    used = set().union(*[A.names_read(f) for f in functions])
    ctx.helpers = {name: obj for name, obj in ctx.helpers.items() if name in used}
    args = A.parameters([ctx.rt] + list(ctx.helpers) + sorted(ctx.closure))
    ret = gast.Return(value=gast.Tuple(elts=[A.load(n) for n in returned], ctx=gast.Load()))
    return gast.Module(body=[A.function_def("_make", args, list(functions) + [ret])],
                       type_ignores=[])
