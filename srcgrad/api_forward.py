"""Forward mode and higher derivatives: jvp, jacfwd, jacrev, hessian, hvp.

``jvp`` runs a generated function with tangent code interleaved (transforms/forward.py).
Functions made by srcgrad (``grad(f)``...) are differentiated again through their generated
sweeps: each gets a small generated Python wrapper calling those sweeps (see
``source_function``), which the transformers read like any user function.
"""
from __future__ import annotations

__all__ = ["jvp", "jacfwd", "jacrev", "jacobian", "hessian", "hvp", "get_forward",
           "source_function"]

import ast
import builtins
import functools
import inspect
import itertools
import types
import os
import warnings
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import codegen, runtime
from .adapters import has_starred_parameters, route
from .boundary import (argument_label, as_function, callee_function, unbind, check_argument,
                       check_shaped_argument,
                       check_sequence, signature_text as _signature, structure_shape)
from .tracebacks import user_tracebacks
from .api import (FIRST, Adjoint, BoundAdjoint, GradSpec, dynamic_wrt, get_adjoint, grad_seed_of,
                  get_entry_adjoint, grad, nondifferentiable_rule, pick_wrt, split_aux)
from .call_records import (APPLY_RECORD, RULE_ARGS, RULE_VALUE, USER_SAVED, ApplyCall,
                           ReceiverlessCall, RuleCall, UserCall, record_derivative)
from .errors import (MissingRuleError, NonDifferentiableError, SourceUnavailableError,
                     SrcgradError)
from .rules import is_nondifferentiable, lookup, registry
from .signature import (SCALAR_TYPES, Wrt, function_key, integer_leaf, normalize_wrt,
                        parameter_names)
from .generated import (BuildCache, Generated, cached_build, consuming, own_attributes, remember,
                        remembered)
from .jit import check_option, jit_forward, second_order
from .transforms import astutil as A
from .transforms import check_calls
from .transforms.binding import (bind_rule_call, nondiff_message, refuse_beyond_rule,
                                 scatter_rule_grads)
from .transforms.context import UNBOUND
from .transforms.forward import forward
from .transforms.flat_shapes import stand_in_shapes
from .transforms.number_shapes import number_shapes
from .transforms.nonzero_guards import drop_nonzero_guards
from .transforms.inline_sweeps import Sweep, flatten_wrapper, origin_lines

_CACHE = BuildCache()


class Forward(Generated):
    """The generated jvp function of one function, for one choice of wrt.

    ``function_for(fn)(*tangents, *args, **kwargs)`` returns ``(value, tangent)``, with one
    tangent per wrt parameter, in parameter order.
    """

    kind = "jvp"

    def generate(self, tree, ctx):
        return forward(tree, ctx, check_calls(tree, ctx, lambda fn, call: _Callee(
            fn, getattr(call, "srcgrad_consumed", frozenset()))))

    def function_for(self, fn=None):
        """The jvp function for ``fn``, a function sharing this one's code."""
        return self.functions_for(fn)[0]


def get_forward(fn: Callable, wrt: tuple[int, ...], debug: bool = False,
                consumed: frozenset = frozenset()) -> Forward:
    """The (cached) jvp function of ``fn`` for ``wrt``; built on first use. ``consumed``: the
    parameters its call site hands over (Context.consumed)."""
    return cached_build(_CACHE, consuming(Forward, consumed), function_key(fn), wrt, debug)


class EntryForward(Forward):
    """The jvp code of the function an API call (jvp, jacfwd) differentiates itself, not as
    a helper: like api.EntryAdjoint, it may update its own parameters in place, which become
    new values (the caller's arrays keep theirs)."""

    entry = True


def get_entry_forward(fn: Callable, wrt: tuple[int, ...]) -> Forward:
    """``get_forward`` for the function an API call differentiates itself."""
    return cached_build(_CACHE, EntryForward, function_key(fn), wrt)


# -- calls of user functions from generated jvp code -----------------------------------------
class _Callee:
    """A statically known user function called with differentiable arguments; the forward
    generator asks it which parameter each argument binds to, then for a call site."""

    def __init__(self, fn: Callable, consumed: frozenset = frozenset()):
        self.consumed = consumed
        self.fn = source_function(fn)
        func = function_key(self.fn)
        if getattr(func, "__code__", None) is None:
            raise SourceUnavailableError(f"no source for {fn!r}")
        self.params = parameter_names(func)
        self.offset = 1 if inspect.ismethod(self.fn) else 0

    def bind_positions(self, call) -> list:
        """``(parameter index, argument node)`` for each argument of ``call``."""
        return A.bind_arguments(self.params, self.offset, call) or []

    def site(self, wrt: tuple[int, ...], sparse: bool = False):
        name = getattr(function_key(self.fn), "__name__", "f").replace("<lambda>", "lambda")
        site = (SparseCallSite if sparse else CallSite)(self.fn, wrt, self.consumed)
        return site, f"{name}_jvp"


class CallSite:
    """Calls the jvp function of ``fn`` for ``wrt``, built on first call (recursion)."""

    def __init__(self, fn, wrt, consumed: frozenset = frozenset()):
        self.fn, self.wrt, self.consumed = fn, wrt, consumed
        self.func = function_key(fn)
        self.bound = (fn.__self__,) if inspect.ismethod(fn) else ()
        self._resolved = None

    def __call__(self, *args, **kwargs):
        f = self._resolved
        if f is None:
            fwd = get_forward(self.func, self.wrt, consumed=self.consumed)
            f = fwd.function_for(self.func)
            if not fwd._has_closure:
                self._resolved = f
        if self.bound:
            n = len(self.wrt)
            return f(*args[:n], *self.bound, *args[n:], **kwargs)
        return f(*args, **kwargs)


class SparseCallSite:
    """Like ``CallSite``, for tangents that may be the lazy zero at run time: each call goes
    to the jvp for the arguments whose tangent is not zero (one build per such subset)."""

    def __init__(self, fn, wrt, consumed: frozenset = frozenset()):
        self.fn, self.wrt, self.consumed = fn, wrt, consumed
        self.sites: dict[tuple, CallSite] = {}

    def __call__(self, *args, **kwargs):
        n = len(self.wrt)
        tangents, primals = args[:n], args[n:]
        live = tuple(not runtime.is_zero(t) for t in tangents)
        site = self.sites.get(live)
        if site is None:
            site = self.sites[live] = CallSite(
                self.fn, tuple(i for i, keep in zip(self.wrt, live) if keep), self.consumed)
        return site(*[t for t, keep in zip(tangents, live) if keep], *primals, **kwargs)


def dynamic_jvp(fn, args, kwargs, tangents, kw_tangents):
    """``(value, tangent)`` of ``fn(*args, **kwargs)``; see runtime.call_jvp."""
    fn = route(fn, args, kwargs)
    rule = lookup(fn)
    if rule is not None:
        return _rule_jvp(rule, fn, args, kwargs, tangents, kw_tangents)
    if is_nondifferentiable(fn):
        return fn(*args, **kwargs), runtime.ZERO
    fn = callee_function(source_function(fn))
    func = function_key(fn)
    if not hasattr(func, "__code__"):
        raise MissingRuleError(getattr(fn, "__qualname__", repr(fn)))
    names = parameter_names(func)
    bound = (fn.__self__,) if inspect.ismethod(fn) else ()
    offset = len(bound)
    by_index = {}
    for i, t in enumerate(tangents):
        if not runtime.is_zero(t):
            by_index[i + offset] = (t, args[i])
    for k, t in kw_tangents.items():
        if not runtime.is_zero(t):
            by_index[names.index(k)] = (t, kwargs[k])
    wrt = tuple(sorted(by_index))
    if not wrt:
        return fn(*args, **kwargs), runtime.ZERO
    dense = [runtime.densify(*by_index[i]) for i in wrt]
    f = get_forward(func, wrt).function_for(func)
    return f(*dense, *bound, *args, **kwargs)


_VJP_CALLERS: dict = {}


def _vjp_caller(n_args: int, keywords: tuple):
    """``def call_vjp(g, ans, a0, .., k=.., vjp): return vjp(g, ans, a0, .., k=k)``, generated
    once per arity: a fixed-arity function srcgrad can differentiate in ``g``."""
    made = _VJP_CALLERS.get((n_args, keywords))
    if made is None:
        params = [f"a{i}" for i in range(n_args)] + list(keywords)
        passed = [f"a{i}" for i in range(n_args)] + [f"{k}={k}" for k in keywords]
        source = (f"def call_vjp(g, ans, {''.join(p + ', ' for p in params)}vjp):\n"
                  f"    return vjp(g, ans{''.join(', ' + p for p in passed)})\n")
        namespace = codegen.compile_source(source, f"call_vjp {n_args} {keywords}", {})
        made = _VJP_CALLERS[(n_args, keywords)] = namespace["call_vjp"]
    return made


def _transposed_vjp(rule, value, args, kwargs, ds, bound):
    """``J @ d`` for a rule that has only its vjp ``g -> J^T g``: the vjp is linear in ``g``,
    so its own vjp, taken by reverse mode at ``g = 0`` with cotangent ``d``, is ``J d``. This
    gives forward mode and forward-over-reverse (hessians) to rules users wrote as a vjp."""
    dense = tuple(runtime.densify(d, operand)
                  for d, (_, _, operand, _) in zip(ds, bound.diff))
    caller = _vjp_caller(len(args), tuple(kwargs))
    fwd, bwd = get_adjoint(caller, (0,)).sweeps_for(caller)
    _, saved = fwd(np.zeros_like(value), value, *args, *kwargs.values(), rule.vjp)
    return bwd(saved, dense)[0]


def _rule_jvp(rule, fn, args, kwargs, tangents, kw_tangents):
    refuse_beyond_rule(rule, args)
    value = fn(*args, **kwargs)
    bound = bind_rule_call(rule, args, kwargs)

    def tangent_at(where):
        if isinstance(where, str):
            return kw_tangents.get(where, runtime.ZERO)
        return tangents[where] if where < len(tangents) else runtime.ZERO

    # (the runtime's own helpers read their other operands only for shapes, like generated
    # code's calls of rules: see Context.own_code)
    for what, where, _ in () if rule.name.startswith("runtime.") else bound.nondiff:
        if not runtime.is_zero(tangent_at(where)):
            raise NonDifferentiableError(nondiff_message(rule, what))
    ds = [runtime.ZERO] * len(rule.diff_args)
    any_active = [False] * len(rule.diff_args)
    for k, i, operand, name in bound.diff:
        t = tangent_at(name or i)
        any_active[k] = not runtime.is_zero(t)
        ds[k] = runtime.densify(t, operand) if any_active[k] else t
    if not any(any_active):
        return value, runtime.ZERO
    if rule.jvp is None:
        return value, _transposed_vjp(rule, value, args, kwargs, ds, bound)
    parts = rule.jvp(*ds, value, *args, **kwargs)
    total = runtime.ZERO
    for part, active in zip(parts, any_active):
        if active:
            total = runtime.add(total, part)
    return value, total


# -- forward mode of the runtime's dispatch (api.dynamic_forward/dynamic_backward records) ----
def dynamic_forward_jvp(fn, args, kwargs, tangents, kw_tangents, fn_tangent=runtime.ZERO):
    """``((value, record), (d_value, d_record))``: forward mode of ``api.dynamic_forward``,
    whose record's saved values get tangents (for differentiating generated sweeps).
    ``fn_tangent``: the tangent of ``fn`` itself, an object with ``__call__`` whose method
    runs with ``fn`` as ``self``."""
    called = fn
    fn = route(fn, args, kwargs)
    zero = runtime.ZERO
    rule = lookup(fn)
    if rule is not None:
        value, d_value = _rule_jvp(rule, fn, args, kwargs, tangents, kw_tangents)
    elif nondifferentiable_rule(fn) is not None:
        rule, value, d_value = nondifferentiable_rule(fn), fn(*args, **kwargs), zero
    if rule is not None:
        d_record = record_derivative(RuleCall, args=tuple(tangents), kwargs=dict(kw_tangents),
                                     value=d_value)
        return (value, RuleCall(rule, args, kwargs, value)), (d_value, d_record)
    fn = callee_function(source_function(fn))
    func = function_key(fn)
    if not hasattr(func, "__code__"):
        raise MissingRuleError(getattr(fn, "__qualname__", repr(fn)))
    names = parameter_names(func)
    self_args = (fn.__self__,) if inspect.ismethod(fn) else ()
    wrt = dynamic_wrt(func, self_args, args, kwargs)
    fwd, bwd = get_adjoint(func, wrt).sweeps_for(func)
    d_self = (fn_tangent if self_args[0] is runtime.receiver_of(called) else zero,) \
        if self_args else ()
    (value, saved), d_pair = dynamic_jvp(fwd, self_args + tuple(args), kwargs,
                                         d_self + tuple(tangents), kw_tangents)
    record = UserCall(bwd, saved, len(self_args), names, len(args), kwargs, wrt)
    d_value, d_saved = runtime.part(d_pair, 0), runtime.part(d_pair, 1)
    return (value, record), (d_value, record_derivative(UserCall, saved=d_saved))


def dynamic_backward_jvp(record, g, d_record, d_g):
    """Forward mode of ``api.dynamic_backward``: ``((positional, keyword), tangents)``."""
    zero = runtime.ZERO
    if isinstance(record, ReceiverlessCall):  # a static or class method: None for obj
        (positional, keyword), (d_positional, d_keyword) = dynamic_backward_jvp(
            record.record, g, runtime.part(d_record, 0), d_g)
        return ([None] + list(positional), keyword), ([zero] + list(d_positional), d_keyword)
    if isinstance(record, ApplyCall):  # apply(f, args, kwargs) of a plain f
        (positional, keyword), (d_positional, d_keyword) = dynamic_backward_jvp(
            record.record, g, runtime.part(d_record, APPLY_RECORD), d_g)
        none = lambda v: zero if v is None else v  # noqa: E731
        return (([None, tuple(map(none, positional)), {k: none(v) for k, v in keyword.items()}],
                 {}), ([zero, tuple(d_positional), dict(d_keyword)], {}))
    if isinstance(record, RuleCall):
        return _rule_call_backward_jvp(record, g, d_record, d_g)
    wrt_grads, wrt_d_grads = dynamic_jvp(record.bwd, (record.saved, g), {},
                                         (runtime.part(d_record, USER_SAVED), d_g), {})
    # one gradient per parameter (None and the lazy zero where it has none)
    grads = record.per_parameter(wrt_grads)
    d_grads = record.per_parameter([runtime.part(wrt_d_grads, k)
                                    for k in range(len(record.wrt))], missing=zero)
    return record.at_call(grads), record.at_call(d_grads, missing=zero)


def _rule_call_backward_jvp(record, g, d_record, d_g):
    """``dynamic_backward_jvp`` of a ``RuleCall``: the rule's vjp run in forward mode."""
    rule, args, kwargs = record.rule, record.args, record.kwargs
    d_args = runtime.part(d_record, RULE_ARGS)
    d_args = tuple(runtime.part(d_args, i) for i in range(len(args)))
    grads, d_grads = dynamic_jvp(rule.vjp, (g, record.value) + tuple(args), kwargs,
                                 (d_g, runtime.part(d_record, RULE_VALUE)) + d_args, {})
    d_grads = [runtime.part(d_grads, k) for k in range(len(rule.diff_args))]
    positional, keyword = scatter_rule_grads(rule, args, kwargs, grads)
    d_positional, d_keyword = scatter_rule_grads(rule, args, kwargs, d_grads)
    zero = runtime.ZERO
    return (positional, keyword), ([zero if d is None else d for d in d_positional], d_keyword)


# -- functions made by srcgrad, as generated source ------------------------------------------
def source_function(fn, scalar: bool = False, flat: bool = False, numbers: bool = False):
    """``fn`` itself, or for a function made by srcgrad (``grad(f)``, a pullback) an
    equivalent generated Python function calling its sweeps, which can be transformed.
    ``scalar``: the caller passes only scalars, so scalar-specialized sweeps may serve.
    ``flat``: for reverse mode, a gradient's wrapper with its sweeps inlined when they can
    be (``transforms/inline_sweeps.py``); with ``numbers``, for a caller passing float64
    numbers only (transforms/number_shapes.py: ``__srcgrad_guards__`` names the globals it
    must check are float64 ndarrays first), never differentiated."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, BoundAdjoint):
        return _bound_sweep(owner, fn.__name__)
    spec = getattr(fn, "__srcgrad_grad__", None)
    if spec is None:
        return fn
    if isinstance(spec, JacobianSpec):
        return _jacobian_wrapper(*spec)
    attribute = "__srcgrad_scalar_source_fn__" if scalar else "__srcgrad_source_fn__"
    if flat:
        attribute = attribute.replace("source", "flat_numbers_source" if numbers
                                      else "flat_source")
    defaults = _defaults_of(spec.f)
    made = getattr(fn, attribute, None)
    # the wrapper copies the function's defaults when it is made: made again after
    # ``f.__defaults__ = ...`` (the gradient itself reads them at each call); and its text
    # holds the sweeps of one build of ``f``: made again when that build went stale (a
    # global ``f`` calls was rebound; the builds of code that differentiated the wrapper
    # depend on it, see GeneratedCode.stale). Tagged with ``fn``: ``grad(fn)`` copies fn's
    # __dict__ (functools.wraps), and must not take fn's wrapper for its own (its derivative
    # was then one order short)
    if made is None or made[2] is not fn or not _same_defaults(made[1], defaults) \
            or made[0].__srcgrad_depends__.stale():
        wrapper = _grad_wrapper(*spec, scalar=scalar, flat=flat, numbers=numbers)
        wrapper.__srcgrad_remake__ = functools.partial(source_function, fn, scalar, flat,
                                                       numbers)
        made = (wrapper, defaults, fn)
        try:
            setattr(fn, attribute, made)
        except AttributeError:
            pass
    return made[0]


def flat_source_current(fn, wrapper) -> bool:
    """Whether ``source_function(fn, flat=True)`` stands for the gradient ``fn`` by
    ``wrapper`` still (made for ``fn``, with the defaults its function has now), apart from
    whether the sweeps ``wrapper`` holds went stale, which its build checks on each call."""
    made = getattr(fn, "__srcgrad_flat_source_fn__", None)
    spec = getattr(fn, "__srcgrad_grad__", None)
    return made is not None and made[0] is wrapper and made[2] is fn \
        and isinstance(spec, GradSpec) and _same_defaults(made[1], _defaults_of(spec.f))


def _defaults_of(f) -> tuple:
    """The objects ``f``'s defaults are now (positional, then keyword-only items)."""
    f = getattr(f, "__func__", f)
    kw = getattr(f, "__kwdefaults__", None) or {}
    return tuple(getattr(f, "__defaults__", None) or ()), tuple(kw.items())


def _same_defaults(a: tuple, b: tuple) -> bool:
    return len(a[0]) == len(b[0]) and all(x is y for x, y in zip(a[0], b[0])) \
        and len(a[1]) == len(b[1]) and all(k == j and x is y
                                            for (k, x), (j, y) in zip(a[1], b[1]))


_serial = itertools.count(1)


def _docstring(what: str, f) -> str:
    """A docstring naming the wrapped function, with a serial number: caches are keyed by
    code objects, which compare equal for equal text, and each wrapper has its own globals."""
    code = getattr(function_key(f), "__code__", None)
    where = f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})" if code else ""
    return repr(f"Generated {what} of {getattr(f, '__qualname__', 'f')}{where}, "
                f"wrapper #{next(_serial)}.")


def _bound_sweep(owner, which: str):
    """A generated function equivalent to ``BoundAdjoint.fwd`` or ``.bwd`` of ``owner``
    (a method's sweeps with ``self`` bound)."""
    cache = owner.__dict__.setdefault("_srcgrad_source_sweeps", {})
    if which in cache:
        return cache[which]
    adj = owner.adj
    name = getattr(adj.fn, "__name__", "method")
    fwd, bwd = adj.sweeps_for(adj.fn)
    if which == "fwd":
        params, call, namespace = _signature(adj.fn, skip=1)
        source = (f"def {name}_bound_fwd({params}):\n"
                  f"    {_docstring('forward sweep', adj.fn)}\n"
                  f"    return {name}_fwd(_self, {call})\n")
        namespace.update({f"{name}_fwd": fwd, "_self": owner.obj})
    else:
        source = (f"def {name}_bound_bwd(_saved, _g):\n"
                  f"    {_docstring('backward sweep', adj.fn)}\n"
                  f"    _grads = {name}_bwd(_saved, _g)\n"
                  f"    return _grads{'[1:]' if owner.drop_self else ''}\n")
        namespace = {f"{name}_bwd": bwd}
    namespace = codegen.compile_source(source, f"{name} bound {which}", namespace)
    cache[which] = namespace[f"{name}_bound_{which}"]
    return cache[which]


def _grad_wrapper(f, indices, single, mode, scalar=False, flat=False, numbers=False):
    """Generate ``def f_grad(x, ...): value, saved = f_fwd(...); grads = f_bwd(...)``;
    with ``scalar``, around the sweeps specialized to scalar arguments. ``mode`` is the
    gradient's api.GradMode (what it returns besides the gradient, how it is seeded).
    ``flat``: with the sweeps' statements inlined when they can be (``_flat_wrapper``)."""
    func, lead = unbind(f)  # a bound method: its self is passed first, not differentiated
    adj = get_entry_adjoint(func, tuple(i + len(lead) for i in indices))
    if scalar and not mode.has_aux:
        adj = adj.scalar_variant()
    fwd, bwd = adj.sweeps_for(func)
    name = getattr(f, "__name__", "f").replace("<lambda>", "lambda")
    params, call, namespace = _signature(f)
    if lead:
        namespace["_self"] = lead[0]
        call = f"_self, {call}" if call else "_self"
    grads = ", ".join(f"_grads[{i}]" for i in range(len(indices)))
    result = "_grads[0]" if single else f"({grads},)"
    out = "_value[0]" if mode.has_aux else "_value"
    seed = f"_ones_like({out})" if mode.elementwise else f"_rt.grad_seed({out})"
    if numbers:  # (run by grad itself: its own seed, which refuses what grad refuses)
        seed = f"_seed_of({out})"
        namespace["_seed_of"] = functools.partial(grad_seed_of, f)
        namespace["_seed_of"].__srcgrad_seed__ = True  # (runtime.makes_seed)
    if mode.has_aux:
        seed = f"({seed}, 0.0)"  # the lazy zero cotangent of aux: its adjoint code is skipped
    if mode.value_first:
        result = f"(_value, {result})"
    elif mode.has_aux:
        result = f"({result}, _value[1])"
    fwd_name, bwd_name = f"{name}_fwd", f"{name}_bwd"
    source = (f"def {name}_grad({params}):\n"
              f"    {_docstring('gradient', f)}\n"
              f"    _value, _saved = {fwd_name}({call})\n"
              f"    _grads = {bwd_name}(_saved, {seed})\n"
              f"    return {result}\n")
    namespace.update({fwd_name: fwd, bwd_name: bwd, "_rt": runtime,
                      "_ones_like": np.ones_like})
    made = _flat_wrapper(source, namespace, adj, func, numbers) if flat and not lead \
        else None
    if made is None:
        made = codegen.compile_source(source, f"{name} gradient", namespace)[f"{name}_grad"]
    # the builds whose sweeps the wrapper calls or holds inlined (GeneratedCode.stale)
    made.__srcgrad_depends__ = Depends((adj,) + getattr(made, "__srcgrad_inlined__", ()))
    return made


class Depends(tuple):
    """Builds a gradient's generated wrapper was made from, each with the generation it had
    then: stale when one of them is, or was rebuilt since (by another of its users)."""

    def __new__(cls, builds):
        made = super().__new__(cls, tuple((b, b.generation) for b in builds))
        made._checks = None  # (rules' version, every (build, generation), every global)
        return made

    def stale(self) -> bool:
        # (what each build's stale() checks, and the builds those depend on, gathered once
        # into one pass: run before every call of a gradient of numbers, it cost a Python
        # call per build, ~1 us of a ~6 us gradient)
        checks = self._checks
        if checks is None:
            checks = self._checks = self._gathered()
            if checks is None:
                return True
        if checks[0] != registry.changes:
            return True
        for build, generation in checks[1]:
            if build.generation != generation:
                return True
        for scope, name, obj in checks[2]:
            if scope.get(name, UNBOUND) is not obj:
                return True
        return False

    def _gathered(self):
        """What stale() checks, gathered over these builds and the builds they depend on
        (each with the generation recorded where it was depended on: a build rebuilt since
        depends on others); None when one of them is stale now."""
        pairs, assumed, seen, todo = [], {}, set(), list(self)
        while todo:
            build, generation = todo.pop()
            if build.generation != generation or build._rules_version != registry.changes:
                return None
            pairs.append((build, generation))
            if id(build) in seen:
                continue
            seen.add(id(build))
            for name, obj in build._assumptions:  # (all as now: one check per global serves)
                if build._globals.get(name, UNBOUND) is not obj:
                    return None
                assumed[id(build._globals), name] = (build._globals, name, obj)
            if build._depends is not None:
                todo.extend(build._depends)
        return registry.changes, tuple(pairs), tuple(assumed.values())


def _flat_wrapper(source: str, namespace: dict, adj, func, numbers: bool = False):
    """The wrapper ``source`` (its free names bound in ``namespace``) with the sweeps it calls
    inlined, and the sweeps those call (issue 9: ``grad`` inside differentiated code costs
    what the derivative written out does only when its transformation sees through them),
    compiled as a factory's function reading ``func``'s globals; None when the sweeps cannot
    be inlined (their functions are then called, as the plain wrapper does)."""
    if numbers and hasattr(func, "__srcgrad_grad__"):
        func = adj.fn  # (a gradient's: its flattened wrapper, whose sweeps adj are)
    scope = getattr(func, "__globals__", None)
    if scope is None or adj.fn is not func:
        return None
    wrapper = ast.parse(source).body[0]
    fwd, bwd = namespace[f"{wrapper.name[:-len('_grad')]}_fwd"], \
        namespace[f"{wrapper.name[:-len('_grad')]}_bwd"]
    sweeps = {id(fwd): (adj, 0), id(bwd): (adj, 1)}
    inlined = []  # the builds whose sweeps' text the flat wrapper holds

    def inlinable(obj, attribute):
        if attribute is None:
            owner, index = sweeps.get(id(obj), (None, None))
        else:
            owner, index = obj, {"fwd": 0, "bwd": 1}.get(attribute)
        parsed = _parsed_sweeps(owner, scope) if index is not None else None
        if parsed is None:
            return None
        inlined.append(owner)
        definition, helpers, free = parsed[index]
        return Sweep(definition, helpers, free, (id(owner), index), owner.filename)

    flat = flatten_wrapper(wrapper, namespace, inlinable)
    if flat is None:
        return None
    definition, helpers, origins = flat
    names = _flat_names(definition, helpers, scope)
    definition = stand_in_shapes(definition, *names)
    definition = drop_nonzero_guards(definition, names[0])
    guards = ()
    if numbers:
        definition, guards = number_shapes(definition, names[0])
    text = ast.unparse(definition) + "\n"
    lines = codegen.UserLines(adj.filename, definition.name,
                              origin_lines(definition, text, origins))
    make, _ = codegen.compile_factory(text, list(helpers), [definition.name],
                                      f"{wrapper.name[:-len('_grad')]} flat gradient", lines)
    make = types.FunctionType(make.__code__, scope, "_make")
    made = make(*helpers.values())[0]
    made.__srcgrad_inlined__ = tuple({id(b): b for b in inlined}.values())
    made.__srcgrad_guards__ = guards
    return made


def _flat_names(definition: ast.FunctionDef, helpers: dict, scope: dict):
    """``(resolve, helper)`` for transforms/flat_shapes.py: the object a name or module
    attribute of the flattened ``definition`` is bound to (its factory's ``helpers``, then
    ``scope``'s globals and builtins; None for its locals and the unknown), and a name bound
    to an object, added to ``helpers`` when none is."""
    local = {a.arg for a in definition.args.args + definition.args.kwonlyargs} | {
        n.id for n in ast.walk(definition) if isinstance(n, ast.Name)
        and not isinstance(n.ctx, ast.Load)}
    used = {n.id for n in ast.walk(definition) if isinstance(n, ast.Name)}

    def resolve(node):
        if isinstance(node, ast.Name):
            if node.id in local:
                return None
            if node.id in helpers:
                return helpers[node.id]
            if node.id in scope:
                return scope[node.id]
            return getattr(builtins, node.id, None)
        if isinstance(node, ast.Attribute):
            owner = resolve(node.value)
            return getattr(owner, node.attr, None) if isinstance(owner, types.ModuleType) \
                else None
        return None

    def helper(obj, base: str) -> str:
        for name, value in helpers.items():
            if value is obj:
                return name
        name, k = base, 1
        while name in used or name in helpers or name in scope or hasattr(builtins, name):
            name, k = f"{base}_{k}", k + 1
        helpers[name] = obj
        return name

    return resolve, helper


def _parsed_sweeps(adj, scope: dict):
    """``[(definition, helpers, globals read)]`` of the forward and backward sweeps of
    ``adj`` for inlining, or None when they cannot be: not an ordinary adjoint's, another
    module's, made per default objects or per closure (but a generated sweep's, whose cells
    are fixed)."""
    if not isinstance(adj, Adjoint) or adj.lean or adj._make is None \
            or getattr(adj.fn, "__globals__", None) is not scope:
        return None
    fn = adj.fn
    functions = adj.functions_for(fn)  # (rebuilt first if stale)
    values: list = []
    if adj._per_instance:
        # a closure's cells are read per call, except a generated sweep's (a gradient's
        # flattened wrapper, differentiated again), which nothing rebinds
        if not adj._fixed_cells or fn.__defaults__ or fn.__kwdefaults__:
            return None
        values = [fn.__closure__[i].cell_contents for i in adj._closure_at]
    known = adj.__dict__.get("_parsed_sweeps")
    if known is not None and known[0] is adj._make:
        return known[1]
    code = adj._make.__code__
    names = list(code.co_varnames[:code.co_argcount])
    helpers = dict(zip(names, adj._helpers + values))
    module = ast.parse(adj.source)
    defs = {d.name: d for d in module.body if isinstance(d, ast.FunctionDef)}
    parsed = None
    if len(names) == len(adj._helpers) + len(values) and len(module.body) == len(defs) == 2 \
            and len(functions) == 2 and all(f.__name__ in defs for f in functions):
        parsed = []
        for f in functions:
            d = defs[f.__name__]
            local = {a.arg for a in d.args.args} | {
                n.id for n in ast.walk(d) if isinstance(n, ast.Name)
                and isinstance(n.ctx, (ast.Store, ast.Del))}
            free = {n.id for n in ast.walk(d) if isinstance(n, ast.Name)} - local - set(helpers)
            parsed.append((d, helpers, frozenset(free)))
    adj.__dict__["_parsed_sweeps"] = (adj._make, parsed)
    return parsed


class JacobianSpec(NamedTuple):
    """What ``source_function`` needs to differentiate a Jacobian (``jacfwd``, ``jacrev``,
    ``hessian``) again: the function, its wrt indices, whether one Jacobian is returned. Set
    as the result's ``__srcgrad_grad__``, like a gradient's ``api.GradSpec``."""
    f: Callable
    indices: tuple
    single: bool
    api: str  # the function that made it, for messages
    has_aux: bool = False


def _jacobian_wrapper(f, indices, single, api, has_aux=False):
    """Generate ``def f_jacobian(x, ...)``: one forward and one backward sweep per element of
    ``f``'s value, seeded with the unit cotangents, the rows stacked and reshaped to
    ``out.shape + x.shape``. Plain code calling the sweeps, so it can be transformed again
    (``jacfwd(hessian(f))``, ``jacrev(jacrev(f))``, ``grad`` of a Jacobian's sum). It is
    what a Jacobian differentiated again runs; the Jacobian itself is computed by the
    batched code of jacfwd/jacrev."""
    if has_aux:
        raise SrcgradError(f"differentiating {api}({_name(f)}, has_aux=True) again is not "
                           f"supported: differentiate {api} of a function returning the "
                           f"value alone, and compute the aux output separately")
    fn, lead = unbind(source_function(f))
    adj = get_entry_adjoint(fn, tuple(i + len(lead) for i in indices))
    fwd, bwd = adj.sweeps_for(function_key(fn))
    name = getattr(f, "__name__", "f").replace("<lambda>", "lambda")
    name = name if name.isidentifier() else "f"
    params, call, namespace = _signature(f)
    names = [p.name for p in inspect.signature(f).parameters.values()]
    if lead:
        namespace["_self"] = lead[0]
        call = f"_self, {call}" if call else "_self"
    rows = [f"_rows{j}" for j in range(len(indices))]
    jacobians = [f"_np.reshape(_np.stack({r}), _rt.jacobian_shape(_value, {names[i]}))"
                 for r, i in zip(rows, indices)]
    result = jacobians[0] if single else f"({', '.join(jacobians)},)"
    lines = [f"def {name}_jacobian({params}):",
             f"    {_docstring('Jacobian', f)}",
             f"    _value, _saved = {name}_fwd({call})",
             *[f"    {r} = []" for r in rows],
             "    for _k in range(_rt.size_of(_value)):",
             f"        _value_k, _saved_k = {name}_fwd({call})",
             f"        _grads = {name}_bwd(_saved_k, _rt.unit_cotangent(_value_k, _k))",
             *[f"        {r}.append(_grads[{j}])" for j, r in enumerate(rows)],
             f"    return {result}"]
    namespace.update({f"{name}_fwd": fwd, f"{name}_bwd": bwd, "_rt": runtime, "_np": np})
    namespace = codegen.compile_source("\n".join(lines) + "\n", f"{name} Jacobian", namespace)
    return namespace[f"{name}_jacobian"]


# -- public API ----------------------------------------------------------------------------
def _differentiable(x) -> bool:
    """Whether ``x`` can carry a tangent: not an integer, string, None, or a function or
    class (an object that merely defines __call__ can: its attributes may)."""
    return integer_leaf(x) is None and not isinstance(x, (str, type(None))) \
        and not isinstance(x, (types.FunctionType, types.BuiltinFunctionType,
                               types.MethodType, type, np.ufunc, functools.partial))


@user_tracebacks
def jvp(f: Callable, primals: Sequence, tangents: Sequence, *,
        jit: bool | str = False) -> tuple[Any, Any]:
    """``(value, tangent)``: ``f(*primals)`` and its directional derivative along
    ``tangents`` (one per primal, structured like it), by forward mode.

    A tangent of ``None`` (or the scalar ``0.0``) marks an argument as not varied: no tangent
    code runs for it, which is cheaper than an array of zeros. Primals that cannot carry a
    derivative (integers, bools, strings, None, functions) ignore their tangent.
    ``jit=True``/``"auto"``: compiled by numba, as for ``grad`` (docs/jit.md).
    """
    primals = check_sequence("jvp", "primals", primals)
    tangents = check_sequence("jvp", "tangents", tangents)
    given = f
    f = as_function(f, "jvp")
    if len(primals) != len(tangents):
        raise SrcgradError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
    func, lead = unbind(f)  # a bound method: self is a primal that is not varied
    if lead:
        f, primals, tangents = func, lead + primals, (None,) + tangents
    scalar = all(type(a) in SCALAR_TYPES for a in primals)
    # a function with *args (or its gradient): the fixed-arity form for these arguments
    fn = source_function(route(f, primals, {}), scalar=scalar)
    wrt = tuple(i for i, a in enumerate(primals)
                if _differentiable(a) and not runtime.is_zero(tangents[i]))
    for i in wrt:
        check_argument(primals[i], f, i)
        _check_tangent(primals[i], tangents[i], i)
    built = get_entry_forward(fn, wrt)
    if scalar and built.scalar_closed:
        built = built.scalar_variant()
    jf = built.function_for(function_key(fn))
    if jit is not False:  # numba-compiled (srcgrad/jit)
        jf, built = jit_forward(built, fn, jf, jit, lambda site: get_forward(
            site.func, site.wrt, consumed=site.consumed), primals)
    remember(given, "jvp", [built])  # srcgrad.source(f, "jvp")
    value, tangent = jf(*[tangents[i] for i in wrt], *primals)
    return value, runtime.densify(tangent, value)


def _check_tangent(x, t, i):
    sx, st = structure_shape(x), structure_shape(t)
    if sx != st:
        raise SrcgradError(f"jvp: the tangent of argument {i} must have the primal's "
                           f"structure and shape; primal {sx}, tangent {st}")


def _name(f) -> str:
    return getattr(f, "__qualname__", getattr(f, "__name__", type(f).__name__))


def _check_wrt_argument(f, index, args) -> None:
    if index >= len(args):
        raise SrcgradError(f"{_name(f)}() was called with {len(args)} arguments, but it is "
                           f"differentiated with respect to argument {index}")
    check_argument(args[index], f, index)
    check_shaped_argument(args[index], f, index)  # (a registered vector space: vspace.py)
    _refuse_unshaped_argument(f, index, args[index])


def _refuse_unshaped_argument(f, index, x) -> None:
    """A Jacobian is laid out as ``out.shape + in.shape``: a list or tuple of numbers reads as
    a vector, but a dict, or a list of arrays, has no shape (numpy would stack equal-shaped
    arrays, and the basis tangents would not fit the argument: a bare numpy error)."""
    if not isinstance(x, (list, tuple, dict)):
        return
    items = x.values() if isinstance(x, dict) else x
    if not isinstance(x, dict) and all(np.ndim(v) == 0 and not isinstance(v, (list, tuple, dict))
                                       for v in items):
        return
    kind = type(x).__name__
    what = "a dict" if isinstance(x, dict) else f"a {kind} holding arrays"
    raise NonDifferentiableError(
        f"jacfwd, jacrev and hessian lay their result out as out.shape + in.shape, and "
        f"{argument_label(f, index)} is {what}, which has no such shape. "
        f"Pass its arrays as separate arguments (wrt=...), or one array you split inside; or "
        f"use grad, vjp, jvp or hvp, which take a {kind}.")


def _wrt_indices(api: str, f, wrt, argnums) -> tuple[tuple[int, ...], bool]:
    """The argument indices ``wrt``/``argnums`` name, and whether a single one was given."""
    return normalize_wrt(f, pick_wrt(api, wrt, argnums))


def _one_or_tuple(parts: list, single: bool):
    return parts[0] if single else tuple(parts)


def jacfwd(f: Callable, wrt: Wrt = FIRST, *, argnums: Wrt | None = None,
           has_aux: bool = False) -> Callable:
    """The Jacobian of array-valued ``f`` with respect to argument ``wrt`` (or JAX's
    ``argnums``) by forward mode: shape ``out.shape + in.shape``; a tuple of
    Jacobians for a tuple of arguments. With ``has_aux=True``, ``f`` returns
    ``(out, aux)`` and the result is ``(jacobian, aux)``.

    The jvp function is batched over the basis tangents by ``vmap`` (one run for all
    columns); a jvp whose body cannot be batched runs once per column.
    """
    f = as_function(f, "jacfwd")
    indices, single = _wrt_indices("jacfwd", source_function(f), wrt, argnums)
    target = _value_part(f) if has_aux else f

    @functools.wraps(f)
    @user_tracebacks
    def jacobian_fwd(*args):
        for index in indices:
            _check_wrt_argument(f, index, args)
        func, lead = unbind(target)
        jacobians = [_jacfwd(func, index + len(lead), lead + args) for index in indices]
        jac = _one_or_tuple(jacobians, single)
        if has_aux:
            # (the jvp runs on the value alone: aux is computed by one plain call)
            return jac, split_aux(f, f(*args), "jacfwd(has_aux=True)")[1]
        return jac

    def shown():  # srcgrad.source(jacfwd(f)): the jvp function each column runs
        fn = _fixed_arity(target, "jacfwd")
        func, lead = unbind(fn)
        return [get_entry_forward(func, (index + len(lead),)) for index in indices]

    return _differentiable_jacobian(own_attributes(jacobian_fwd, shown),
                                    f if has_aux else target, indices, single, "jacfwd",
                                    has_aux)


def _differentiable_jacobian(jacobian, f, indices, single, api, has_aux):
    """``jacobian`` marked so that differentiating it again (jacfwd of a hessian...) runs
    its generated equivalent (``_jacobian_wrapper``), or under has_aux says it cannot."""
    jacobian.__srcgrad_grad__ = JacobianSpec(f, tuple(indices), single, api, has_aux)
    return jacobian


def _fixed_arity(f, api: str):
    """``source_function(f)``, refused for a function with ``*args``, whose generated code
    depends on each call's arguments."""
    if has_starred_parameters(f):
        raise SrcgradError(f"srcgrad.source({api}({_name(f)})): {_name(f)}() takes *args or "
                           f"**kwargs, so its code is generated per call shape; show "
                           f"srcgrad.source({_name(f)}, 'jvp') after srcgrad.jvp, or name "
                           f"each parameter")
    return source_function(f)


def _value_part(f):
    """``def f_value(<f's parameters>): return _f(...)[0]``: the value of a has_aux
    function, without its aux."""
    name = getattr(getattr(f, "__func__", f), "__name__", "f").replace("<lambda>", "lambda")
    name = name if name.isidentifier() else "f"
    params, call, namespace = _signature(f)
    namespace["_f"] = f
    source = f"def {name}_value({params}):\n    return _f({call})[0]\n"
    return codegen.compile_source(source, f"{name} value", namespace)[f"{name}_value"]


def _batched(fn, positions: tuple[int, ...]):
    """``fn`` batched over the arguments at ``positions`` (see vmap.py), or None when its
    body cannot be batched."""
    from .vmap import VmapFallbackWarning, get_batched  # (vmap sits above this module)
    built, _ = get_batched(fn, positions, quiet=True)
    if built is None:
        return None
    function = built.functions_for(function_key(fn))[0]

    def quietly(*args):
        # functions it calls may run once per example: right, and no news to the caller
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapFallbackWarning)
            try:
                return function(*args)
            except Exception:  # (a batched step that failed: the loop is the reference)
                return None
    return quietly


def _float_dtype(x) -> np.dtype:
    """The real floating dtype derivatives of ``x`` keep (float32 stays float32)."""
    dtype = getattr(x, "dtype", None)
    return dtype if dtype is not None and dtype.kind == "f" else np.dtype(np.float64)


def _dense(t) -> np.ndarray:
    """A derivative as a float array, keeping float32."""
    t = np.asarray(t)
    return t if t.dtype.kind == "f" else t.astype(float)


def _as_batch(t, n: int, out_shape) -> np.ndarray:
    """Batched tangents or cotangents ``t`` (``n`` of them) as a dense float array; a lazy
    zero was lifted to ``n`` zeros."""
    t = _dense(t)
    if t.shape != (n,) + tuple(out_shape):
        t = np.broadcast_to(t.reshape(t.shape + (1,) * (len(out_shape) + 1 - t.ndim)),
                            (n,) + tuple(out_shape))
    return t


def _jacfwd(f, index, args):
    fn = source_function(route(f, args, {}))
    x = np.asarray(args[index], dtype=_float_dtype(args[index]))
    wrt = tuple(i for i, a in enumerate(args) if i == index)
    jf = get_entry_forward(fn, wrt).function_for(function_key(fn))
    primals = list(args)
    primals[index] = x if isinstance(args[index], np.ndarray) else args[index]
    n = x.size
    basis = np.eye(n, dtype=x.dtype).reshape((n,) + x.shape)
    batched = _batched(jf, (0,)) if n > 1 else None
    result = batched(basis, *primals) if batched is not None else None
    if result is not None:
        values, tangents = result
        value = runtime.part(values, 0) if isinstance(values, (tuple, list, dict)) \
            else values[0]
        out_shape = np.shape(value)
        columns = _as_batch(tangents, n, out_shape)
        return np.moveaxis(columns, 0, -1).reshape(out_shape + x.shape)
    return _jacfwd_loop(jf, x, primals)


def _jacfwd_loop(jf, x, primals):
    """The Jacobian one jvp (column) at a time."""
    columns = []
    value = None
    for k in range(x.size):
        e = np.zeros(x.size, dtype=x.dtype)
        e[k] = 1.0
        e = e.reshape(x.shape) if x.shape else x.dtype.type(1.0)
        value, col = jf(e, *primals)
        columns.append(_dense(runtime.densify(col, value)))
    out_shape = np.shape(value)
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


def jacrev(f: Callable, wrt: Wrt = FIRST, *, argnums: Wrt | None = None,
           has_aux: bool = False) -> Callable:
    """The Jacobian of array-valued ``f`` with respect to argument ``wrt`` (or JAX's
    ``argnums``) by reverse mode: shape ``out.shape + in.shape``; a tuple of
    Jacobians for a tuple of arguments. With ``has_aux=True``, ``f`` returns
    ``(out, aux)`` and the result is ``(jacobian, aux)``; aux is not differentiated.

    The forward sweep runs once; the backward sweep is batched over the rows of the identity
    by ``vmap`` (or, when its body cannot be batched, runs once per output element, each
    time on a copy of the saved tapes).
    """
    f = as_function(f, "jacrev")
    indices, single = _wrt_indices("jacrev", source_function(f), wrt, argnums)

    @functools.wraps(f)
    @user_tracebacks
    def jacobian_rev(*args):
        for index in indices:
            _check_wrt_argument(f, index, args)
        fn, lead = unbind(source_function(f))
        adj = get_entry_adjoint(fn, tuple(index + len(lead) for index in indices))
        fwd, bwd = adj.sweeps_for(function_key(fn))
        value, saved = fwd(*lead, *args)
        out, aux = split_aux(f, value, "jacrev(has_aux=True)") if has_aux else (value, None)
        xs = [args[index] for index in indices]
        rows = _jacrev_rows(bwd if not has_aux else _with_zero_aux(bwd), saved, xs, out)
        jac = _one_or_tuple(rows, single)
        return (jac, aux) if has_aux else jac

    def shown():  # srcgrad.source(jacrev(f)): the sweeps each row runs
        fn, lead = unbind(_fixed_arity(f, "jacrev"))
        return [get_entry_adjoint(fn, tuple(index + len(lead) for index in indices))]

    return _differentiable_jacobian(own_attributes(jacobian_rev, shown), f, indices, single,
                                    "jacrev", has_aux)


def _with_zero_aux(bwd):
    """``bwd`` with the cotangent of ``(out, aux)`` made of one for ``out`` and the lazy zero
    for aux (whose adjoint code then does not run)."""
    def bwd_of_value(saved, g):
        return bwd(saved, (g, runtime.ZERO))
    return bwd_of_value


def _jacrev_rows(bwd, saved, xs: list, out) -> list:
    """One Jacobian per ``xs``: the backward sweep batched over the rows of the identity
    (``vmap``), or one row at a time when it cannot be batched."""
    out_shape = np.shape(out)
    m = int(np.prod(out_shape))
    batched = _batched(bwd, (1,)) if m > 1 else None
    seeds = np.eye(m, dtype=_float_dtype(out)).reshape((m,) + out_shape)
    result = batched(runtime.copy_saved(saved), seeds) if batched is not None else None
    if result is not None:
        return [_as_batch(r, m, np.shape(x)).reshape(out_shape + np.shape(x))
                for r, x in zip(result, xs)]
    return _jacrev_loop(bwd, saved, xs, out_shape, seeds.dtype, several=True)


def _jacrev_loop(bwd, saved, x, out_shape, dtype=np.float64, *, several: bool = False):
    """The Jacobian with respect to ``x`` one backward sweep (row) at a time; with
    ``several``, ``x`` is the list of wrt arguments and one Jacobian per argument is
    returned."""
    xs = x if several else [x]
    dtype = np.dtype(dtype)
    m = int(np.prod(out_shape))
    rows: list = [[] for _ in xs]
    for k in range(m):
        seed = np.zeros(m, dtype=dtype)
        seed[k] = 1.0
        seed = seed.reshape(out_shape) if out_shape else dtype.type(1.0)
        grads = bwd(runtime.copy_saved(saved), seed)
        for acc, row, arg in zip(rows, grads, xs):
            acc.append(_dense(runtime.densify(row, arg)))
    jacobians = [np.stack(acc).reshape(out_shape + np.shape(arg))
                 for acc, arg in zip(rows, xs)]
    return jacobians if several else jacobians[0]


jacobian = jacrev


def hessian(f: Callable, wrt: Wrt = FIRST, *, argnums: Wrt | None = None,
            jit: bool | str = False) -> Callable:
    """The Hessian of scalar ``f`` with respect to argument ``wrt`` (or JAX's ``argnums``):
    forward mode over the generated gradient (``jacfwd(grad(f, wrt))``), shape
    ``in.shape + in.shape``. For a tuple of arguments, a nested tuple of blocks:
    ``result[i][j]`` differentiates with respect to argument i, then argument j.
    ``jit=True``/``"auto"``: one compiled Hessian-vector product per element of the
    arguments (docs/jit.md)."""
    check_option(jit)
    f = as_function(f, "hessian")
    indices, single = _wrt_indices("hessian", f, wrt, argnums)
    if single:
        interpreted = jacfwd(grad(f, wrt=indices[0]), wrt=indices[0])
    else:
        blocks = [jacfwd(grad(f, wrt=i), wrt=indices) for i in indices]

        @functools.wraps(f)
        def hessian_blocks(*args):
            return tuple(block(*args) for block in blocks)

        interpreted = own_attributes(hessian_blocks, lambda: [
            b for block in blocks for b in block.__srcgrad_source__()])
    return interpreted if jit is False else _compiled_hessian(f, indices, single, jit,
                                                              interpreted)


def _second_order(api, f, primals, wrt, jit):
    """jit/__init__.second_order for ``f``, with the builds it differentiates."""
    scalars = all(type(a) in SCALAR_TYPES for a in primals)

    def adjoint_for(fn, indices, scalars):
        adj = get_entry_adjoint(fn, indices)
        return adj.scalar_variant() if scalars and adj.scalar_closed else adj

    def forward_of(fn, indices):
        built = get_entry_forward(fn, indices)
        return built.scalar_variant() if scalars and built.scalar_closed else built

    def resolve(site):  # (a call of a user function in the forward mode: its forward build;
        # a SparseCallSite's for all of its arguments: jit/build.py _bind_helpers)
        return get_forward(function_key(site.fn), site.wrt, consumed=site.consumed)

    return second_order(api, f, tuple(primals), wrt, jit, adjoint_for, forward_of, resolve)


def _unit_tangents(primals, indices):
    """``(j, k, tangents)`` for each element k of each argument j of ``indices``: 1 there,
    0 in every other tangent (floats for numbers, float arrays for arrays)."""
    zeros = [np.zeros(np.shape(primals[i]), _float_dtype(primals[i]))
             if isinstance(primals[i], np.ndarray) else 0.0 for i in indices]
    for j, i in enumerate(indices):
        for k in range(int(np.size(primals[i]))):
            tangents = list(zeros)
            if isinstance(primals[i], np.ndarray):
                unit = np.zeros(primals[i].size, _float_dtype(primals[i]))
                unit[k] = 1.0
                tangents[j] = unit.reshape(primals[i].shape)
            else:
                tangents[j] = 1.0
            yield j, tangents


def _compiled_hessian(f, indices, single, jit, interpreted):
    """``hessian(f, jit=...)``: the Hessian's columns from one compiled Hessian-vector
    product per element of the arguments; ``interpreted`` where it cannot run."""
    shown: list = []

    @functools.wraps(f)
    @user_tracebacks
    def hessian_jit(*args):
        for index in indices:
            _check_wrt_argument(f, index, args)
        products = _second_order("hessian", f, args, tuple(indices), jit)
        if products is None:
            return interpreted(*args)
        columns: list = [[[] for _ in indices] for _ in indices]
        for j, tangents in _unit_tangents(args, indices):
            result = products(tuple(tangents))
            if result is None:  # (jit="auto": numba could not compile it, with a warning)
                return interpreted(*args)
            for i, column in enumerate(result):
                columns[i][j].append(_dense(column))
        shown[:] = [products.view]
        shapes = [np.shape(args[i]) for i in indices]
        blocks = tuple(tuple(np.stack(columns[a][b], axis=-1).reshape(shapes[a] + shapes[b])
                             for b in range(len(indices))) for a in range(len(indices)))
        return blocks[0][0] if single else blocks

    return own_attributes(hessian_jit, lambda: shown or interpreted.__srcgrad_source__())


def hvp(f: Callable, primals: Sequence, tangents: Sequence, *,
        jit: bool | str = False) -> Any:
    """The Hessian-vector product of scalar ``f`` at ``primals`` along ``tangents`` (one per
    primal): forward mode over the generated gradient with respect to every primal. Returns
    one product per primal (a single value when there is one primal); None for a primal that
    cannot carry a derivative (an integer, a string) given a tangent of None or 0.0, which is
    left out of the gradient. ``jit=True``/"auto":
    compiled by numba, forward mode over the gradient fused into one function
    (docs/jit.md)."""
    primals = check_sequence("hvp", "primals", primals)
    tangents = check_sequence("hvp", "tangents", tangents)
    f = as_function(f, "hvp")
    if jit is not False and len(primals) == len(tangents):
        for i, (x, t) in enumerate(zip(primals, tangents)):
            _check_tangent(x, t, i)
        products = _second_order("hvp", f, primals, tuple(range(len(primals))), jit)
        result = None if products is None else products(tuple(
            _float_tangent(t) for t in tangents))
        if result is not None:
            remember(f, "hvp", [products.view])  # srcgrad.source(f, "hvp")
            return result[0] if len(result) == 1 else result
    # A primal that cannot carry a derivative (an integer batch index, a string) and is not
    # varied stays out of the gradient: differentiating with respect to it would make
    # everything it reaches active (an index computed from it would be refused). Its
    # product is None.
    wrt = tuple(i for i, (x, t) in enumerate(zip(primals, tangents))
                if _differentiable(x) or not runtime.is_zero(t)) or tuple(range(len(primals)))
    g = grad(f, wrt=wrt[0] if len(wrt) == 1 else wrt)
    _, product = jvp(g, primals, tangents)
    remember(f, "hvp", remembered(g, "jvp"))  # srcgrad.source(f, "hvp")
    if len(wrt) == len(primals):
        return product
    products = dict(zip(wrt, (product,) if len(wrt) == 1 else product))
    return tuple(products.get(i) for i in range(len(primals)))


def _float_tangent(t):
    """A tangent as the compiled code takes it: floats (an int 1 is 1.0)."""
    if isinstance(t, np.ndarray):
        return t if t.dtype.kind in "fc" else t.astype(np.float64)
    return float(t) if isinstance(t, (int, np.integer)) else t
