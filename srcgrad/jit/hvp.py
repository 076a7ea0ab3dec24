"""Compiled Hessian-vector products: the gradient fused into one plain Python function that
keeps its tape (``sweeps.fuse(keep_tape=True)``), its forward mode built by the usual
forward-mode transformation (the caller's ``forward_of``), and that jvp function compiled
with its tapes as typed stacks (second.py, variant "hvp" of build.py): forward over reverse,
as the interpreted ``srcgrad.hvp``, in one compiled function.
"""
from __future__ import annotations

__all__ = ["compiled_hvp", "plain_gradient"]

import ast
import os
import weakref
from typing import Any, NamedTuple

from .. import codegen, runtime
from ..errors import InternalError
from .build import compiled_second, generated_tree
from .errors import located_error
from .second import remember_adjoint_names, remember_sweeps
from .sweeps import JitRewriteError, fuse

# adjoint -> the _Fused made from it
_FUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# fused factory -> {adjoint name: primal name} of the gradient it fuses
_ADJOINT_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Fused(NamedTuple):
    """The fused gradient's factory made from one build of an adjoint, and the instance it
    made last."""

    build: Any  # the adjoint's build (``adj._make``) it was made from
    make: Any  # the factory: its parameters' values -> (fused,)
    params: tuple  # the factory's parameters
    bound: dict  # what the parameters that are not closure variables get
    closure: tuple  # the others: the user function's closure variables it reads, in order
    last: list  # [closure values, fused function] made last


def _cell(fn, name: str):
    return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents


def plain_gradient(adj, fn=None):
    """``<name>_grad(*params) -> (value, gradients)``: forward sweep, seed and backward
    sweep of the adjoint ``adj`` in one interpreted Python function with its tape, a closure
    over srcgrad.runtime and the rule helpers (as the sweeps are), which forward mode can
    differentiate. For a closure ``fn`` (sharing ``adj``'s build; by default ``adj.fn``),
    a function of that one factory closing over ``fn``'s current closure values: a new one
    when they are other objects, so the compiled code, which passes data it reads from a
    closure on every call (inputs.py), reads ``fn``'s."""
    fn = adj.fn if fn is None else fn
    made = _FUSED.get(adj)
    if made is None or made.build is not getattr(adj, "_make", None) or adj.stale():
        made = _FUSED[adj] = _factory(adj)
    values = [_cell(fn, name) for name in made.closure]
    if made.last and len(made.last[0]) == len(values) and all(
            old is new for old, new in zip(made.last[0], values)):
        return made.last[1]
    given = dict(zip(made.closure, values), **made.bound)
    fused = made.make(*[given[p] for p in made.params])[0]
    remember_adjoint_names(fused, _ADJOINT_NAMES[made.make])
    made.last[:] = [values, fused]
    return fused


def _factory(adj) -> _Fused:
    build = getattr(adj, "_make", None)
    tree, ctx = generated_tree(adj)
    adjoint_of = {b: x for x, b in ctx.namer.adjoints.items()}
    try:
        module, name = fuse(tree, set(), adjoint_of, keep_tape=True)
    except JitRewriteError as e:
        raise located_error(e.what, ctx, e.node) from None
    factory = codegen.take_apart(module)
    src = ctx.src
    where = f"{adj.fn.__qualname__} ({os.path.basename(src.filename)}:{src.first_line})"
    source = codegen.show(factory.functions, [
        f"srcgrad: the gradient of {where} in one function, with its tape (differentiated "
        f"again by forward mode for compiled Hessian-vector products)"])
    lines = codegen.line_map(ast.Module(body=factory.functions, type_ignores=[]),
                             source, lambda node: src.first_line + node.lineno - 1)
    make, _ = codegen.compile_factory(
        source, factory.params, factory.returned, f"{adj.fn.__name__} fused gradient",
        codegen.UserLines(src.filename, adj.fn.__name__, lines))
    make = type(make)(make.__code__, getattr(adj.fn, "__globals__", {}), "_make")
    bound = {ctx.rt: runtime, **ctx.helpers}
    remember_sweeps(ctx.helpers.values())  # (their jvps' builds look them up: second.py)
    closure = tuple(p for p in factory.params if p not in bound)
    if set(closure) - set(ctx.closure):
        raise InternalError("jit hvp", f"the fused gradient's factory takes "
                                       f"{factory.params}; srcgrad binds {list(bound)} and "
                                       f"the closure variables {sorted(ctx.closure)}")
    _ADJOINT_NAMES[make] = adjoint_of
    return _Fused(build, make, tuple(factory.params), bound, closure, [])


def compiled_hvp(adj, forward_of, resolve, fn=None):
    """``(Compiled, fused gradient)``: the compiled jvp function ``<name>_grad_jvp(*tangents,
    *params, *passed) -> ((value, gradients), (its tangent, Hessian-vector products))``;
    ``forward_of(fn, wrt)`` is the forward-mode build of ``fn``, ``resolve(call_site)`` the
    forward-mode build a call in one calls: the jvps of a callee's sweeps, compiled with it
    (build._bind_helpers; the adjoint helpers of '@': products.py); ``fn`` the function
    differentiated (a closure sharing ``adj``'s build: its cells are read)."""
    fused = plain_gradient(adj, fn)
    return compiled_second(forward_of(fused, adj.wrt), fused, resolve), fused
