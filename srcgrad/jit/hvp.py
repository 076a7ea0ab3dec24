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

from .. import codegen, runtime
from .build import compiled_second, generated_tree, is_adjoint
from .errors import located_error
from .second import remember_adjoint_names
from .sweeps import JitRewriteError, fuse

# adjoint -> (its build, the fused gradient function made from it)
_FUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _refusal(adj, ctx) -> str | None:
    callees = [o.fn.__qualname__ for o in ctx.helpers.values() if is_adjoint(o)
               and o.kind == "adjoint"]
    if callees:
        return (f"{adj.fn.__qualname__}() calls {', '.join(sorted(set(callees)))}(), and a "
                f"compiled Hessian-vector product does not compile calls of user functions "
                f"yet")
    if ctx.closure:
        return (f"{adj.fn.__qualname__}() reads variables of an enclosing function "
                f"({', '.join(sorted(ctx.closure))}), which a compiled Hessian-vector "
                f"product does not read yet: pass them as arguments or make them globals")
    return None


def plain_gradient(adj):
    """``<name>_grad(*params) -> (value, gradients)``: forward sweep, seed and backward
    sweep of the adjoint ``adj`` in one interpreted Python function with its tape, a closure
    over srcgrad.runtime and the rule helpers (as the sweeps are), which forward mode can
    differentiate."""
    build = getattr(adj, "_make", None)
    made = _FUSED.get(adj)
    if made is not None and made[0] is build and not adj.stale():
        return made[1]
    tree, ctx = generated_tree(adj)
    refusal = _refusal(adj, ctx)
    if refusal is not None:
        raise located_error(refusal, ctx)
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
    fused = make(*[bound[p] for p in factory.params])[0]
    remember_adjoint_names(fused, adjoint_of)
    _FUSED[adj] = (build, fused)
    return fused


def compiled_hvp(adj, forward_of):
    """``(Compiled, fused gradient)``: the compiled jvp function ``<name>_grad_jvp(*tangents,
    *params, *passed) -> ((value, gradients), (its tangent, Hessian-vector products))``;
    ``forward_of(fn, wrt)`` is the forward-mode build of ``fn``. Calls in it of functions
    forward mode differentiates (the rule helper ``matmul_right`` of '@', say) are refused
    at their line (build._bind_helpers): compiling their jvps would need compiled forms of
    the rules' own helpers."""
    fused = plain_gradient(adj)
    return compiled_second(forward_of(fused, adj.wrt), fused), fused
