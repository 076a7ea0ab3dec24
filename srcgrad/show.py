"""``srcgrad.source``: the generated code behind anything srcgrad returns, as Python.

Each generated file is shown as its functions under a short header naming what srcgrad binds
in them (``_rt`` is ``srcgrad.runtime``, then rules' helpers and closure variables); the
text is the one registered with linecache and compiled, so it is exactly what runs.
"""
from __future__ import annotations

__all__ = ["source", "KINDS"]

from typing import Any

from .api import get_adjoint
from .api_forward import CallSite, SparseCallSite, get_forward
from .errors import SrcgradError
from .generated import remembered
from .signature import function_key

# what ``source(f, kind)`` can show for a plain function: the code the last call of
# ``srcgrad.<kind>(f, ...)`` ran (these return values, not functions to ask)
KINDS = ("vjp", "jvp", "hvp")


def source(obj: Any, kind: str | None = None) -> str:
    """The generated source srcgrad runs for ``obj``.

    ``obj`` is one of:

    - a function made by ``grad``, ``value_and_grad`` or ``elementwise_grad``: its forward
      and backward sweeps (``f_fwd``, ``f_bwd``; called with Python or numpy scalars only, a
      gradient may run a variant of them specialized to scalars, without unbroadcasting,
      and ``grad``/``value_and_grad`` otherwise run a lean variant seeded with one, which
      skips products by ones and accumulates in place: ``api.get_lean_adjoint(f, wrt)``);
    - a pullback returned by ``vjp``: the sweeps it runs;
    - a function made by ``jacfwd``: the forward-mode function ``f_jvp``; by ``jacrev`` or
      ``jacobian``: the sweeps; by ``hessian``: forward mode over the generated gradient
      (``f_grad_jvp``), followed by the forward mode of each sweep it calls. These run
      batched over the basis vectors (``vmap``) when the body can be batched;
    - a function made by ``vmap``: its batched code;
    - a ``Tensor``: the backward pass ``.backward()`` would run;
    - a plain function ``f``: its sweeps with respect to its first parameter; with
      ``kind="jvp"``, ``"hvp"`` or ``"vjp"``, the code the last ``srcgrad.jvp(f, ...)``,
      ``srcgrad.hvp(f, ...)`` or ``srcgrad.vjp(f, ...)`` ran, e.g.
      ``srcgrad.jvp(f, (x,), (v,)); print(srcgrad.source(f, "jvp"))``.

    Raises ``SrcgradError`` for other objects, and for a ``kind`` nothing has run yet.
    Functions with ``*args`` are generated per call shape: show them after a call.
    """
    if kind is not None:
        return _by_kind(obj, kind)
    backward_source = getattr(obj, "_backward_source", None)
    if callable(backward_source):
        return backward_source()
    # (checked before __srcgrad_adjoint__: functools.wraps copies a wrapped gradient's)
    shown = getattr(obj, "__srcgrad_source__", None)
    if shown is not None:
        return _text(shown())
    get = getattr(obj, "__srcgrad_adjoint__", None)
    if get is not None:
        return get().source
    if callable(obj) and hasattr(function_key(obj), "__code__"):
        return get_adjoint(obj, (0,)).source
    raise SrcgradError(f"srcgrad.source() takes a function made by srcgrad (grad, vjp's "
                       f"pullback, jacfwd, jacrev, hessian, vmap...), a Python function or a "
                       f"Tensor; got {type(obj).__name__}")


def _by_kind(obj, kind: str) -> str:
    name = getattr(obj, "__name__", "f")
    if kind not in KINDS:
        raise SrcgradError(f"srcgrad.source({name}, kind): kind is one of "
                           f"{', '.join(map(repr, KINDS))} (the code the last srcgrad.<kind>("
                           f"{name}, ...) call ran); got {kind!r}")
    builds = remembered(obj, kind)
    if not builds:
        raise SrcgradError(
            f"srcgrad.source({name}, {kind!r}) shows the code the last call of srcgrad."
            f"{kind}({name}, ...) ran, and there has been none: call srcgrad.{kind}({name}, "
            f"...) first, then srcgrad.source({name}, {kind!r}).")
    return _text(builds)


def _text(builds: list) -> str:
    """The sources of ``builds`` (generated files), each followed by the forward mode of
    the generated functions it calls, each file once, two blank lines apart."""
    shown: list = []
    todo = list(builds)
    while todo:
        build = todo.pop(0)
        if any(build is b for b in shown):
            continue
        shown.append(build)
        todo += _forward_callees(build)
    return "\n\n".join(b.source for b in shown)


def _forward_callees(build) -> list:
    """The forward-mode builds a forward-mode build calls (``f_fwd_jvp`` in
    ``f_grad_jvp``): the ones its call sites ran, or would run."""
    if getattr(build, "kind", None) != "jvp":
        return []
    sites = []
    for helper in getattr(build, "_helpers", ()):
        if isinstance(helper, CallSite):
            sites.append(helper)
        elif isinstance(helper, SparseCallSite):
            sites += list(helper.sites.values())
    return [get_forward(site.func, site.wrt, consumed=site.consumed) for site in sites]
