"""``vmap``: a function mapped over a batch axis of its arguments, by source transformation.

The function's source is rewritten once per choice of batched parameters
(transforms/batch.py) so that whole batches flow through numpy calls; functions it calls
are rewritten the same way when called with batched arguments, including functions made by
srcgrad (``vmap(grad(f))`` gives per-example gradients). A body that cannot be batched
(a branch on batched data, say) runs once per example instead, with a
``VmapFallbackWarning`` naming the line and the construct.
"""
from __future__ import annotations

__all__ = ["vmap", "VmapFallbackWarning", "batched_call"]

import functools
import inspect
import os
import warnings
import weakref
from typing import Any, Callable

import gast
import numpy as np

from . import batching
from . import runtime
from .api_forward import CallSite, SparseCallSite, get_forward, source_function
from .adapters import has_starred_parameters
from .errors import SrcgradError
from .generated import BuildCache, Generated, cached_build, consuming, own_attributes
from .rules import lookup
from .rules._helpers import expand_reduced, expand_to
from .rules.operators import matmul_left, matmul_right
from .signature import function_key, parameter_names
from .transforms.batch import batch


def _register_helper_rules() -> None:
    """Batch rules for the helpers generated adjoints call (vmap(grad(f)) runs them)."""
    batching.register(expand_reduced, batching.expand_reduced_rule)
    batching.register(expand_to, batching.expand_to_rule)
    batching.register(matmul_left, batching.matmul_cotangent(0))
    batching.register(matmul_right, batching.matmul_cotangent(1))
    # run-time refusals of in-place updates (desugar.py): on the whole batch, a slice of an
    # array is a slice of the batch of it, and a copy is a copy
    for check, checked in ((runtime.refuse_viewed, 0), (runtime.refuse_shared_array, 0),
                           (runtime.refuse_item_update, 1), (runtime.refuse_shared_locals, 0),
                           (runtime.refuse_changing_method, 0),
                           (runtime.refuse_changing_method_within, 0),
                           (runtime.refuse_operator_object, 0)):
        batching.register(check, functools.partial(_on_the_batch, checked))
    batching.register(runtime.refuse_mutable, _per_example)


def _per_example(fn, args, kwargs, batched, size):
    """A batch of numbers is an array: check the first example's value instead."""
    value = args[0][0] if 0 in batched else args[0]
    return fn(value, *args[1:], **kwargs)


def _on_the_batch(checked, fn, args, kwargs, batched, size):
    """The check on the whole batch, except when the value it is about (argument
    ``checked``) is a batch of numbers: each example is then a numpy scalar, which an
    update rebinds and nothing shares, though the batch of them is one array."""
    value = args[checked]
    if checked in batched and isinstance(value, np.ndarray) and value.ndim == 1:
        return None
    return fn(*args, **kwargs)


_register_helper_rules()

_CACHE = BuildCache()
# why a function cannot be batched, by code object and batched positions
_FAILED: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


class VmapFallbackWarning(UserWarning):
    """A function given to vmap (or called from one) runs once per example."""


class Batched(Generated):
    """The generated batched version of one function, for one set of batched parameters."""

    kind = "vmap"

    speculative = False  # runs both sides of some branches (see batched_call)

    def generate(self, tree, ctx):
        inputs = tuple(ctx.params[i] for i in self.wrt)
        module = batch(tree, ctx, inputs, batched_call)
        self.speculative = any(isinstance(n, gast.Attribute) and n.attr == "select"
                               for n in gast.walk(module))
        return module


def get_batched(fn: Callable, positions: tuple[int, ...], quiet: bool = False,
                consumed: frozenset = frozenset()):
    """``(build, None)`` for ``fn`` with parameters ``positions`` batched, or ``(None, why)``
    when its body cannot be batched (with a warning unless ``quiet``). ``consumed``: the
    parameters its call site hands over (Context.consumed)."""
    func = function_key(fn)
    failed = _FAILED.get(func.__code__, {})
    if (positions, consumed) in failed:
        return None, failed[positions, consumed]
    try:
        return cached_build(_CACHE, consuming(Batched, consumed), func, positions), None
    except SrcgradError as e:
        why = str(e)
        _FAILED.setdefault(func.__code__, {})[positions, consumed] = why
        if quiet:
            return None, why
        name = getattr(func, "__qualname__", "f")
        warnings.warn(f"vmap: {name}() runs once per example (a Python loop), not as one "
                      f"batched computation:\n{why}", VmapFallbackWarning, stacklevel=4)
        return None, why


def _transformable(fn) -> bool:
    """Whether calls of ``fn`` are batched by transforming its source (user code, generated
    code, functions made by srcgrad); numpy, scipy and srcgrad's own helpers are not."""
    if hasattr(fn, "__srcgrad_grad__") or hasattr(getattr(fn, "__self__", None), "adj"):
        return True
    func = function_key(fn)
    code = getattr(func, "__code__", None)
    if code is None or not inspect.isfunction(func):
        return False
    if code.co_filename.startswith("<srcgrad"):
        return True
    if has_starred_parameters(func):  # (its *args tuple mixes batched and unbatched items:
        return False                  # such a helper runs once per example)
    module = getattr(func, "__module__", "") or ""
    return module.split(".")[0] not in ("numpy", "scipy", "srcgrad")


def batched_call(fn, args, kwargs, batched, size: int, consumed: tuple = ()):
    """``fn(*args, **kwargs)`` for every example at once; ``batched`` names the positions
    and keywords holding batched values, ``consumed`` the parameters the call site hands
    over. Generated batched code calls this."""
    batched = batching.really_batched(args, kwargs, batched)
    if not batched:  # only Python numbers, the same for every example
        return batching.lift(fn(*args, **kwargs), size)
    if isinstance(fn, SparseCallSite):
        return _sparse_site_call(fn, args, kwargs, batched, size)
    if isinstance(fn, CallSite) and not fn.bound:  # generated jvp code's call of a jvp
        fn = get_forward(fn.func, fn.wrt, consumed=fn.consumed).function_for(fn.func)
    if lookup(fn) is not None or fn in batching.BATCH_RULES or not _transformable(fn):
        return batching.apply(fn, args, kwargs, batched, size)
    fn = source_function(fn)
    bound = (fn.__self__,) if inspect.ismethod(fn) else ()
    func = function_key(fn)
    names = parameter_names(func)
    positions = set()
    for key in batched:
        if isinstance(key, str):
            if key not in names:
                return batching.per_example(fn, args, kwargs, set(batched), size)
            positions.add(names.index(key))
        else:
            positions.add(key + len(bound))
    built, _ = get_batched(func, tuple(sorted(positions)), consumed=frozenset(consumed))
    if built is None:
        return batching.per_example(fn, args, kwargs, set(batched), size)
    if not built.speculative:
        try:
            return built.functions_for(func)[0](*bound, *args, **kwargs)
        except batching.Unstackable:
            # a callee it ran once per example saved different values per example: this
            # function's own results may still agree (a gradient has the input's shape)
            return batching.per_example(fn, args, kwargs, set(batched), size)
    try:
        return built.functions_for(func)[0](*bound, *args, **kwargs)
    except Exception as e:
        # both sides of a data-dependent branch ran for every example, and one failed (or
        # the examples' values differ in kind): what a loop computes is the answer
        code = func.__code__
        warnings.warn(f"vmap: {func.__qualname__}() ({os.path.basename(code.co_filename)}:"
                      f"{code.co_firstlineno}) runs once per example (a Python loop) for "
                      f"this batch: running both sides of its data-dependent 'if' for every "
                      f"example raised {type(e).__name__}: {e}", VmapFallbackWarning,
                      stacklevel=3)
        return batching.per_example(fn, args, kwargs, set(batched), size)


def _sparse_site_call(site, args, kwargs, batched, size: int):
    """A jvp call site choosing by which tangents are the lazy zero: that zero is a Python
    number, the same for every example, so one choice serves the whole batch."""
    n = len(site.wrt)
    live = tuple(not runtime.is_zero(t) for t in args[:n])
    keep = [i for i in range(n) if live[i]] + list(range(n, len(args)))
    target = site.sites.get(live)
    if target is None:
        target = site.sites[live] = CallSite(
            site.fn, tuple(w for w, on in zip(site.wrt, live) if on), site.consumed)
    positions = {keep.index(k) for k in batched if isinstance(k, int) and k in keep}
    positions |= {k for k in batched if isinstance(k, str)}
    return batched_call(target, tuple(args[i] for i in keep), kwargs, positions, size)


# -- in_axes and out_axes -----------------------------------------------------------------
def _per_argument(in_axes, n: int) -> list:
    if in_axes is None or isinstance(in_axes, (int, np.integer)) and not isinstance(
            in_axes, bool):
        return [in_axes] * n
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != n:
            raise SrcgradError(f"vmap: in_axes has {len(in_axes)} entries but the function "
                               f"got {n} positional arguments")
        return list(in_axes)
    raise SrcgradError(f"vmap: in_axes must be an int, None, or a tuple with one entry per "
                       f"argument (an int, None, or a dict/list of those matching the "
                       f"argument); got {in_axes!r}")


def _leaf_axis(leaf, axis, where: str, sizes: list):
    if not hasattr(leaf, "ndim"):
        raise SrcgradError(f"vmap: in_axes={axis} for {where}, a {type(leaf).__name__}, "
                           f"which has no axis {axis}; give it in_axes=None")
    if not -leaf.ndim <= axis < leaf.ndim:
        raise SrcgradError(f"vmap: in_axes={axis} for {where}, of shape {leaf.shape}: "
                           f"there is no such axis")
    sizes.append((leaf.shape[axis], where))
    return leaf if axis == 0 else np.moveaxis(leaf, axis, 0)


def _move_in(x, spec, where: str, sizes: list):
    """``x`` with the batch axis of each leaf moved first, or None where not batched;
    ``(value, batched leaves mask)``."""
    if spec is None:
        return x, False
    if isinstance(spec, (int, np.integer)):
        if isinstance(x, (dict, list, tuple)):
            return batching.map_leaves(lambda leaf: _leaf_axis(leaf, int(spec), where, sizes),
                                 x), True
        return _leaf_axis(x, int(spec), where, sizes), True
    if isinstance(spec, dict) and isinstance(x, dict) and set(spec) <= set(x):
        parts = {k: _move_in(v, spec.get(k), f"{where}[{k!r}]", sizes)
                 for k, v in x.items()}
        return {k: v for k, (v, _) in parts.items()}, {k: b for k, (_, b) in parts.items()}
    if isinstance(spec, (list, tuple)) and isinstance(x, (list, tuple)) \
            and len(spec) == len(x):
        parts = [_move_in(v, s, f"{where}[{i}]", sizes)
                 for i, (v, s) in enumerate(zip(x, spec))]
        return type(x)(v for v, _ in parts), [b for _, b in parts]
    raise SrcgradError(f"vmap: in_axes entry {spec!r} does not match {where}")


def _lift_partial(x, mask, size: int):
    """A container batched in some leaves: the others lifted, so all are batched."""
    if mask is True or mask is False:
        return x if mask else batching.lift(x, size)
    if isinstance(x, dict):
        return {k: _lift_partial(v, mask[k], size) for k, v in x.items()}
    return type(x)(_lift_partial(v, m, size) for v, m in zip(x, mask))


def _any(mask) -> bool:
    if isinstance(mask, dict):
        return any(_any(m) for m in mask.values())
    if isinstance(mask, list):
        return any(_any(m) for m in mask)
    return bool(mask)


def _move_out(leaf, axis: int, size: int):
    if batching.is_constant(leaf):
        leaf = np.full(size, leaf)
    if isinstance(leaf, np.ndarray) and not leaf.flags.writeable:
        leaf = leaf.copy()  # a lifted broadcast view: give the caller its own array
    return leaf if axis == 0 else np.moveaxis(leaf, 0, axis)


def vmap(f: Callable, in_axes=0, out_axes: int = 0) -> Callable:
    """``f`` mapped over a batch axis of its positional arguments, JAX-style.

    ``in_axes``: an int (the batch axis of every argument), None (not batched), or a tuple
    with one entry per argument, each an int, None, or a dict/list of those matching that
    argument's structure. ``out_axes``: where the batch axis goes in every output array.
    Keyword arguments are not batched. The body is rewritten to compute the whole batch at
    once (``srcgrad.source(vmap(f))`` shows the code); what cannot be batched runs once per
    example, with a ``VmapFallbackWarning``.
    """
    if not isinstance(out_axes, (int, np.integer)) or isinstance(out_axes, bool):
        raise SrcgradError(f"vmap: out_axes must be an int; got {out_axes!r}")
    _per_argument(in_axes, len(in_axes) if isinstance(in_axes, (tuple, list)) else 0)
    state: dict = {}

    @functools.wraps(f)
    def batched(*args, **kwargs):
        sizes: list = []
        moved, masks = [], []
        for i, (a, spec) in enumerate(zip(args, _per_argument(in_axes, len(args)))):
            value, mask = _move_in(a, spec, f"argument {i}", sizes)
            moved.append(value)
            masks.append(mask)
        if not sizes:
            raise SrcgradError("vmap: in_axes maps no argument over a batch axis")
        size = sizes[0][0]
        for n, where in sizes[1:]:
            if n != size:
                raise SrcgradError(f"vmap: the batch axes disagree: size {size} for "
                                   f"{sizes[0][1]}, size {n} for {where}")
        moved = [_lift_partial(v, m, size) if _any(m) else v for v, m in zip(moved, masks)]
        positions = tuple(i for i, m in enumerate(masks) if _any(m))
        state["positions"] = positions
        out = batched_call(f, tuple(moved), kwargs, positions, size)
        return batching.map_leaves(lambda leaf: _move_out(leaf, out_axes, size), out)

    batched = own_attributes(batched, lambda: [_SourceView(f, state, in_axes)])
    batched.__srcgrad_not_nested__ = "vmap(f)"  # (dispatch.py refuses to differentiate it)
    return batched


class _SourceView:
    """What ``srcgrad.source(vmap(f))`` shows: the batched code, or why there is none."""

    def __init__(self, f, state, in_axes):
        positions = state.get("positions")
        target = source_function(f)
        if positions is None:  # not called yet: as in_axes says (an int: every parameter)
            axes = in_axes if isinstance(in_axes, (tuple, list)) else _per_argument(
                in_axes, len(parameter_names(target)))
            positions = tuple(i for i, s in enumerate(axes) if s is not None)
        if inspect.ismethod(target):
            positions = tuple(p + 1 for p in positions)
        built, why = get_batched(target, positions)
        self.source = built.source if built is not None else "# runs once per example:\n" \
            + "".join(f"# {line}\n" for line in why.splitlines())
