"""Public entry points: grad, value_and_grad, elementwise_grad, vjp, custom_vjp and
custom_jvp; the cache of generated adjoints. (``source`` lives in show.py.)"""
from __future__ import annotations

__all__ = ["grad", "value_and_grad", "elementwise_grad", "vjp", "stop_gradient",
           "custom_vjp", "custom_jvp", "Wrt", "Adjoint", "get_adjoint"]

import functools
import inspect
import types
import weakref
from typing import Any, Callable, NamedTuple

import gast
import numpy as np

from . import codegen, runtime
from .boundary import (as_function, callee_function, check_argument, check_cotangent,
                       signature_text, unbind)
from .tracebacks import user_tracebacks
from .runtime import stop_gradient
from .adapters import has_starred_parameters, instance_call, receiver_method, route
from .call_records import ApplyCall, RuleCall, UserCall
from .checkpoint import checkpoint_options, default_checkpoints
from .errors import MissingRuleError, SrcgradError, SourceUnavailableError
from .generated import (BuildCache, Generated, LastBuild, LastMadeBuild, cached_build,
                        consuming, remember)
from .transforms import check_calls
from .rules import Rule, defrule, is_nondifferentiable, lookup, nondifferentiable, rule_name
from .rules import registry
from .signature import (SCALAR_TYPES, Wrt, function_key, integer_leaf, normalize_wrt,
                        parameter_names)
from .source import get_source
from .transforms.activity import changed_parameters
from .transforms.astutil import bind_arguments, names_read
from .transforms.binding import refuse_beyond_rule, rule_cotangents
from .transforms.rank_facts import rank_candidates
from .transforms.reverse import reverse
from .jit import jit_gradient, jit_vjp, unwrap_numba

_CACHE = BuildCache()


class Adjoint(Generated):
    """The generated forward and backward sweeps of one function, for one choice of wrt.

    ``fwd(*args)`` runs the user's code and returns ``(value, saved)``; ``bwd(saved, g)``
    returns one gradient per wrt parameter.
    """

    kind = "adjoint"
    # a lean build whose backward sweep has what a build for its arguments' ranks may
    # rewrite (LeanAdjoint); in a build for them, how many calls were rewritten
    specialisable = False
    rank_rewrites = 0

    def __init__(self, fn: Callable, wrt: tuple[int, ...], scalar_mode: bool = False):
        super().__init__(fn, wrt, scalar_mode)
        self.params: list[str] = parameter_names(fn)
        name = f"{getattr(fn, '__name__', 'f').replace('<lambda>', 'lambda')}_adj"
        if len(wrt) < len(self.params) and all(i < len(self.params) for i in wrt):
            name += "".join(f"_{self.params[i]}" for i in wrt)  # helper_adj_x: w.r.t. x
        self.helper_name = name

    def generate(self, tree, ctx):
        calls = check_calls(tree, ctx,
                            lambda fn, call: get_callee_adjoint(fn, call, frozenset(ctx.active)))
        return reverse(tree, ctx, calls)

    def sweeps_for(self, fn=None):
        """``(fwd, bwd)`` for ``fn``, a function sharing this adjoint's code."""
        return self.functions_for(fn)

    @property
    def fwd(self):
        return self.functions_for()[0]

    @property
    def bwd(self):
        # (the forward sweep's fetch checked the build: the backward sweep pairs with it)
        return self.current_functions()[1]

    def bind_positions(self, call: gast.Call) -> list:
        """For a call node of this function, the argument node bound to each wrt parameter."""
        bound: dict[str, Any] = {}
        fn = self.fn
        names = self.params
        offset = 1 if inspect.ismethod(fn) else 0
        for name, a in zip(names[offset:], call.args):
            bound[name] = a
        for k in call.keywords:
            bound[k.arg] = k.value
        return [bound.get(names[i]) for i in self.wrt]


class EntryAdjoint(Adjoint):
    """The sweeps of the function an API call (grad, value_and_grad, vjp...) differentiates
    itself, not as a helper: it may update its own parameters in place (Context.entry)."""

    kind = "adjoint"
    entry = True


class LeanAdjoint(EntryAdjoint):
    """The sweeps ``grad`` runs itself for a gradient: seeded with one, the value and the
    arrays of the backward sweep seen by nobody else, never differentiated again (a gradient
    differentiated again runs an ``EntryAdjoint``'s): products by ones skipped, adjoints
    accumulated in place (Context.lean)."""

    lean = True
    # the arguments' kinds it is built for (Context.arg_facts): a subclass per tuple, so that
    # cached_build keys the builds apart (_specialised)
    arg_facts: tuple = ()

    def generate(self, tree, ctx):
        ctx.arg_facts = self.arg_facts
        module = super().generate(tree, ctx)
        # (only then does a call compute its arguments' facts: ~0.2 us an argument)
        self.specialisable = not self.arg_facts and not ctx.scalar_mode \
            and rank_candidates(module, ctx.helpers, ctx.rt)
        self.rank_rewrites = ctx.rank_rewrites
        return module


class ValuelessAdjoint(LeanAdjoint):
    """``LeanAdjoint`` for ``grad`` without the value: what only makes the value is probed
    rather than computed (Context.discard_value)."""

    discard_value = True


def get_lean_adjoint(fn: Callable, wrt: tuple[int, ...], value: bool = True,
                     facts: tuple | None = None) -> Adjoint:
    """``get_entry_adjoint``'s sweeps in their ``grad``-only form (``LeanAdjoint``; without
    ``value``, a ``ValuelessAdjoint``), specialised to arguments of ``facts``
    (``argument_facts``) when given."""
    if hasattr(fn, "__srcgrad_grad__") or hasattr(getattr(fn, "__self__", None), "adj"):
        return get_adjoint(fn, wrt)
    cls = LeanAdjoint if value else ValuelessAdjoint
    return cached_build(_CACHE, _specialised(cls, facts) if facts else cls,
                        function_key(fn), wrt)


_SPECIALISED: dict = {}


def _specialised(cls: type, facts: tuple) -> type:
    """``cls`` built for arguments of ``facts``: one subclass per pair, made once."""
    made = _SPECIALISED.get((cls, facts))
    if made is None:
        made = _SPECIALISED[cls, facts] = type(cls.__name__, (cls,), {"arg_facts": facts})
    return made


_ndarray = np.ndarray
# arguments of which grad runs a gradient's flattened wrapper (api_forward._flat_wrapper: the
# sweeps inlined into one function, values read only for shapes not computed): numbers, whose
# adjoints are numbers, so the lean sweeps' in-place accumulation and rank facts gain nothing
_FLAT_TYPES = frozenset({float, np.float64})
_NOT_RUN = object()


def _all_numbers(args) -> bool:
    """Every argument a float64 number (_FLAT_TYPES)."""
    for a in args:
        if type(a) not in _FLAT_TYPES:
            return False
    return True
_float64 = np.dtype(np.float64)


def argument_facts(args: tuple) -> tuple | None:
    """What grad's lean sweeps are specialised on (transforms/rank_facts.py): per argument,
    for an exact ndarray its rank, negated when a dimension is 1, alone for a float64 array
    (the common case: one identity check) and paired with its dtype's ``str`` otherwise;
    "f" for a Python float; 0 for anything else. None when no argument is an ndarray of rank
    1 or more (nothing to prove about)."""
    facts = []
    arrays = False
    for a in args:
        if type(a) is _ndarray and a.ndim:
            rank = -a.ndim if 1 in a.shape else a.ndim
            dtype = a.dtype
            facts.append(rank if dtype is _float64 else (rank, dtype.str))
            arrays = True
        else:
            facts.append("f" if type(a) is float else 0)
    return tuple(facts) if arrays else None


def get_entry_adjoint(fn: Callable, wrt: tuple[int, ...]) -> Adjoint:
    """``get_adjoint`` for the function an API call differentiates itself. A function made by
    srcgrad (a gradient differentiated again) keeps its ordinary adjoint."""
    if hasattr(fn, "__srcgrad_grad__") or hasattr(getattr(fn, "__self__", None), "adj"):
        return get_adjoint(fn, wrt)
    return cached_build(_CACHE, EntryAdjoint, function_key(fn), wrt)


def get_adjoint(fn: Callable, wrt: tuple[int, ...], debug: bool = False,
                consumed: frozenset = frozenset()) -> Adjoint:
    """The (cached) adjoint of ``fn`` for ``wrt``; built on first use. ``consumed``: the
    parameters its call site hands over (Context.consumed)."""
    if hasattr(fn, "__srcgrad_grad__") or hasattr(getattr(fn, "__self__", None), "adj"):
        # made by srcgrad (a gradient, a bound method's sweep): its generated equivalent
        from .api_forward import source_function
        fn = source_function(fn, flat=True)
    return cached_build(_CACHE, consuming(Adjoint, consumed), function_key(fn), wrt, debug)


def get_callee_adjoint(fn: Callable, call: gast.Call | None = None,
                       active: frozenset = frozenset()) -> Adjoint:
    """Adjoint of a function called from differentiated code, with respect to the parameters
    that the arguments ``active`` at ``call`` reach (all of them when that is unknown). An
    object passed along (a RandomState, a config, a data batch) is then an ordinary constant
    inside the callee, and costs no cotangent."""
    if hasattr(fn, "__srcgrad_grad__") or isinstance(getattr(fn, "__self__", None),
                                                     BoundAdjoint):
        # made by srcgrad (a gradient, a bound method's sweep): its generated form
        from .api_forward import source_function
        fn = source_function(fn, flat=True)
    func = function_key(fn)
    code = getattr(func, "__code__", None)
    if code is None:
        raise SourceUnavailableError(f"no source for {fn!r}")
    n = code.co_argcount + code.co_kwonlyargcount
    wrt = tuple(range(n))
    bound = None if call is None else bind_arguments(
        parameter_names(func), 1 if inspect.ismethod(fn) else 0, call)
    if bound is not None:
        names = parameter_names(func)
        keep = _changed_parameters(func)
        reached = {i for i, node in bound if names_read(node) & active}
        reached |= {i for i, name in enumerate(names) if name in keep}
        if inspect.ismethod(fn):
            reached.discard(0)
        wrt = tuple(sorted(reached)) or wrt
    adj = get_adjoint(func, wrt, consumed=getattr(call, "srcgrad_consumed", frozenset()))
    if inspect.ismethod(fn):
        return BoundAdjoint(adj, fn.__self__)
    if adj.fn is not func and getattr(func, "__closure__", None):
        return _InstanceAdjoint(adj, func)
    return adj


class _InstanceAdjoint:
    """The adjoint of one of the closures a ``def`` made, whose build another made first:
    generated code calls its ``fwd``/``bwd``, which must read this closure's cells."""

    def __init__(self, adj: Adjoint, fn):
        self.adj, self.instance = adj, fn
        self.helper_name, self.wrt, self.params = adj.helper_name, adj.wrt, adj.params
        self._made = (None, None)

    def _sweeps(self) -> tuple:
        if self._made[0] is not self.adj._make or self.adj.stale():
            sweeps = self.adj.sweeps_for(self.instance)  # (rebuilds a stale build first)
            self._made = (self.adj._make, sweeps)
        return self._made[1]

    @property
    def fwd(self):
        return self._sweeps()[0]

    @property
    def bwd(self):
        return self._sweeps()[1]

    def bind_positions(self, call) -> list:
        return self.adj.bind_positions(call)


_CHANGED: "weakref.WeakKeyDictionary[Any, frozenset]" = weakref.WeakKeyDictionary()


def _changed_parameters(func) -> frozenset:
    """``activity.changed_parameters`` of ``func``'s definition, once per code object."""
    known = _CHANGED.get(func.__code__)
    if known is None:
        try:
            known = changed_parameters(get_source(func).tree)
        except SrcgradError:  # made by srcgrad (a gradient): its generated form changes none
            known = frozenset()
        _CHANGED[func.__code__] = known
    return known


class BoundAdjoint:
    """A method's adjoint with ``self`` already bound (``obj.method(x)`` call sites); ``self``
    gets no gradient."""

    def __init__(self, adj: Adjoint, obj):
        self.adj, self.obj = adj, obj
        self.helper_name = adj.helper_name
        self.drop_self = bool(adj.wrt) and adj.wrt[0] == 0
        self.wrt = adj.wrt[1:] if self.drop_self else adj.wrt
        self.params = adj.params

    def fwd(self, *args, **kwargs):
        return self.adj.fwd(self.obj, *args, **kwargs)

    def bwd(self, saved, g):
        grads = self.adj.bwd(saved, g)
        return grads[1:] if self.drop_self else grads

    def bind_positions(self, call):
        bound = dict(zip(self.params[1:], call.args))
        bound.update({k.arg: k.value for k in call.keywords})
        return [bound.get(self.params[i]) for i in self.wrt]


# -- argument handling ---------------------------------------------------------------------
def _check_differentiable(fn, wrt, args) -> None:
    for i in wrt:
        if i < len(args):
            check_argument(args[i], fn, i)


def grad_seed_of(fn, value, holomorphic=False):
    """The seed ``grad`` gives ``fn``'s result ``value``: a one of its type and dtype; a
    located error for what grad refuses (a complex result unless ``holomorphic``, an array of
    more than one element, a container)."""
    kind = type(value)
    if kind is float:  # the common cases first: a few microseconds of checks per gradient
        return 1.0
    if kind is np.float64 or kind is np.float32:
        # what np.ones_like gives below; np.array, because np.ones takes ~0.8 us here
        return np.array(1.0, kind)
    if np.iscomplexobj(value) and not holomorphic:
        raise SrcgradError(
            f"grad requires {fn.__qualname__}() to return a real value, but it returned a "
            f"complex one. Differentiate a real function of it (np.abs, np.real), or pass "
            f"holomorphic=True if {fn.__qualname__}() is holomorphic: the gradient is then "
            f"its complex derivative f'(z).")
    if runtime.size_of(value) != 1 or isinstance(value, (list, tuple, dict)):
        shape = np.shape(value) if not isinstance(value, dict) else "a dict"
        raise SrcgradError(
            f"grad requires {fn.__qualname__}() to return a scalar, but it returned a value "
            f"of shape {shape}. For non-scalar outputs use srcgrad.vjp(f, *args), which "
            f"returns a pullback taking a cotangent of the output's shape.")
    if isinstance(value, (np.ndarray, np.floating)):
        # same dtype as the value: float32 functions get float32 gradients
        return np.ones_like(value, dtype=value.dtype if value.dtype.kind in "fc" else float)
    return 1.0


# -- public API ----------------------------------------------------------------------------
class _FirstArgument(int):
    """The default of ``wrt``: 0, told apart from an explicit ``wrt=0`` (which, with
    ``argnums=``, is an error)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "0"


FIRST: Wrt = _FirstArgument(0)


def pick_wrt(api: str, wrt: Wrt, argnums: Wrt | None) -> Wrt:
    """``argnums`` (JAX's name) or ``wrt``, which mean the same; 0 when neither is given."""
    if argnums is None:
        return tuple(wrt) if isinstance(wrt, list) else wrt
    if wrt is not FIRST:
        raise SrcgradError(f"{api}() takes wrt= or argnums= (the same thing under JAX's "
                           f"name), not both; got wrt={wrt!r} and argnums={argnums!r}")
    # (a list as a tuple: the cache of gradients keys on it)
    return tuple(argnums) if isinstance(argnums, list) else argnums


class GradMode(NamedTuple):
    """What a gradient function returns, besides the gradient."""

    value_first: bool = False  # (value, gradient), like value_and_grad
    has_aux: bool = False  # f returns (value, aux); aux is passed through undifferentiated
    holomorphic: bool = False
    elementwise: bool = False  # the gradient of sum(f(x)): seeded with ones


class GradSpec(NamedTuple):
    """How a gradient function was made (read by api_forward.source_function to
    differentiate it again)."""

    f: Callable
    indices: tuple[int, ...]
    single: bool
    mode: GradMode


def grad(f: Callable | None = None, wrt: Wrt = FIRST, *, argnums: Wrt | None = None,
         has_aux: bool = False, preserve_result: bool = False, verbose: bool = False,
         holomorphic: bool = False, checkpoint: int | None = None,
         jit: bool | str = False) -> Callable:
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``wrt``.

    ``wrt`` (or JAX's ``argnums``) is an index, a parameter name, or a tuple of those (then a
    tuple of gradients is returned). With ``has_aux=True``, ``f`` returns ``(value, aux)``
    and the result is ``(gradient, aux)``; aux is not differentiated. With
    ``preserve_result=True`` the result is ``(value, gradient)``, as from ``value_and_grad``.
    Usable as ``@srcgrad.grad`` or ``srcgrad.grad(f, wrt=1)``.

    Complex numbers follow JAX: for real ``f`` of complex ``z`` the gradient is
    ``df/dx - i df/dy``; a complex-valued ``f`` needs ``holomorphic=True`` and then gets its
    complex derivative ``f'(z)``. A real input's gradient is always real.

    ``checkpoint=K``: loops marked ``srcgrad.checkpointed(...)`` that give no K keep at most
    K states (docs/checkpointing.md).

    ``jit=True`` compiles the gradient with numba, ``jit="auto"`` falls back to the
    interpreted one with a warning where numba cannot (docs/jit.md).
    """
    plain = type(f) is types.FunctionType and wrt is FIRST and argnums is None \
        and not (has_aux or preserve_result or verbose or holomorphic) \
        and checkpoint is None and jit is False
    if plain:  # (grad(f)(x) on every call of a function: its gradient, without the lookups)
        kept = f.__dict__.get(_PLAIN_GRAD)
        if kept is not None and kept[0] == id(f) and kept[1] == registry.changes \
                and kept[2] is getattr(f, "__srcgrad_entry__", None):
            return kept[3]
    if f is None:
        return functools.partial(grad, wrt=wrt, argnums=argnums, has_aux=has_aux,
                                 preserve_result=preserve_result, verbose=verbose,
                                 holomorphic=holomorphic, checkpoint=checkpoint, jit=jit)
    mode = GradMode(value_first=preserve_result, has_aux=has_aux, holomorphic=holomorphic)
    made = _make_grad(as_function(unwrap_numba(f), "grad"), pick_wrt("grad", wrt, argnums),
                      mode, verbose)
    if plain:
        # what the lines above give while no rule changes (as_function reads the registry)
        # and f's traceback wrapper is the same; tagged with f's id, as _made_for's
        f.__dict__[_PLAIN_GRAD] = (id(f), registry.changes,
                                   getattr(f, "__srcgrad_entry__", None), made)
    return _with_jit(checkpoint_options(made, checkpoint), jit)


_PLAIN_GRAD = "__srcgrad_plain_grad__"


def value_and_grad(f: Callable | None = None, wrt: Wrt = FIRST, *,
                   argnums: Wrt | None = None, has_aux: bool = False, verbose: bool = False,
                   holomorphic: bool = False, checkpoint: int | None = None,
                   jit: bool | str = False) -> Callable:
    """Like ``grad`` but returns ``(value, gradient)``; with ``has_aux=True``,
    ``((value, aux), gradient)``."""
    if f is None:
        return functools.partial(value_and_grad, wrt=wrt, argnums=argnums, has_aux=has_aux,
                                 verbose=verbose, holomorphic=holomorphic,
                                 checkpoint=checkpoint, jit=jit)
    mode = GradMode(value_first=True, has_aux=has_aux, holomorphic=holomorphic)
    made = _make_grad(as_function(unwrap_numba(f), "value_and_grad"),
                      pick_wrt("value_and_grad", wrt, argnums), mode, verbose)
    return _with_jit(checkpoint_options(made, checkpoint), jit)


def elementwise_grad(f: Callable | None = None, wrt: Wrt = FIRST, *,
                     argnums: Wrt | None = None, jit: bool | str = False) -> Callable:
    """autograd's ``elementwise_grad``: the gradient of ``sum(f(x))``, i.e. the vjp of ``f``
    with a cotangent of ones. For ``f`` acting elementwise this is ``f'`` at every element."""
    if f is None:
        return functools.partial(elementwise_grad, wrt=wrt, argnums=argnums, jit=jit)
    return _with_jit(_make_grad(as_function(unwrap_numba(f), "elementwise_grad"),
                                pick_wrt("elementwise_grad", wrt, argnums),
                                GradMode(elementwise=True), False), jit)


# what the gradient_calls pass folds in ``grad(f)(x)`` (the same gradient for the same f)
for _maker in (grad, value_and_grad, elementwise_grad):
    _maker.__srcgrad_makes_gradient__ = True


def _with_jit(gradient, jit):
    """``jit=True``/``"auto"``: ``gradient`` compiled by numba (srcgrad/jit, docs/jit.md)."""
    return gradient if jit is False else jit_gradient(gradient, jit)


# gradients already made, by function and options: code that calls grad(f) on every call
# (grad inside a function being differentiated, a Newton step) gets the same function back,
# with its generated code and the wrappers that differentiate it again. Kept in the function's
# own __dict__ when it has one: a gradient refers to its function, so a global table of them
# would keep every function ever differentiated alive; an attribute makes a cycle the garbage
# collector frees with the function. (Tagged with the function's id: functools.wraps copies
# __dict__ to a wrapper, which must not get this function's gradients.)
_GRADIENTS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_MADE = "__srcgrad_made__"


def _made_for(f) -> dict | None:
    """The gradients already made for ``f``, by options (a dict to add to), or None when
    they cannot be kept."""
    if type(f) is types.FunctionType:  # (a bound method would reach its function's)
        attrs = f.__dict__
        tagged = attrs.get(_MADE)
        if tagged is None or tagged[0] != id(f):
            tagged = attrs[_MADE] = (id(f), {})
        return tagged[1]
    try:  # (a builtin, a bound method, a partial, a callable object: as before)
        return _GRADIENTS.setdefault(f, {})
    except TypeError:  # not weakly referable
        return None


def _make_grad(f, wrt, mode: GradMode, verbose: bool):
    options = (wrt, mode)
    made_for = None if verbose else _made_for(f)
    try:
        made = None if made_for is None else made_for.get(options)
    except TypeError:  # an unhashable wrt
        return _new_grad(f, wrt, mode, verbose)
    if made is None:
        made = _new_grad(f, wrt, mode, verbose)
        if made_for is not None:
            made_for[options] = made
    return made


def split_aux(f, value, api: str = "has_aux=True"):
    """``(value, aux)`` of what ``f`` returned under ``has_aux=True``."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise SrcgradError(
            f"{api} requires {_label(f)}() to return a pair (value, aux); it returned "
            f"{type(value).__name__}" + (f" of length {len(value)}"
                                         if isinstance(value, (tuple, list)) else ""))
    return value[0], value[1]


def _label(f) -> str:
    return getattr(f, "__qualname__", getattr(f, "__name__", type(f).__name__))


def _elementwise_seed(value):
    """Ones shaped like ``value``: the cotangent whose vjp is the gradient of its sum."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.ones_like(value, dtype=value.dtype if value.dtype.kind in "fc" else float)
    if isinstance(value, (int, float)):
        return 1.0
    raise SrcgradError(f"elementwise_grad requires f to return a float or an array; it "
                       f"returned {type(value).__name__}")


def _run_grad(f, mode: GradMode, fwd, bwd, args, kwargs):
    """``(value, gradients, aux)``: the forward sweep, then the backward one seeded for
    ``mode``; under has_aux the aux output gets the lazy zero cotangent, so none of the
    adjoint code of aux runs."""
    value, saved = fwd(*args, **kwargs)
    out, aux = split_aux(f, value) if mode.has_aux else (value, None)
    if mode.has_aux:
        return value, bwd(saved, (grad_seed_of(f, out, mode.holomorphic), runtime.ZERO)), aux
    # (the seed made in the call's arguments: only the backward sweep holds it, which lets
    # it go after its last use)
    return value, bwd(saved, _elementwise_seed(out) if mode.elementwise
                      else grad_seed_of(f, out, mode.holomorphic)), aux


def _new_grad(f, wrt, mode: GradMode, verbose: bool):
    if has_starred_parameters(f):
        return _starred_grad(f, wrt, mode, verbose)
    indices, single = normalize_wrt(f, wrt)
    state: dict = {}
    # a bound method: its function, with the instance passed first (never differentiated)
    bound = (f.__self__,) if inspect.ismethod(f) else ()
    func = f.__func__ if bound else f
    func_indices = tuple(i + len(bound) for i in indices)

    # the last build each kind of call got, handed out again while it holds (LastBuild; of a
    # gradient differentiated again, built from the generated function standing for it)
    from .api_forward import flat_source_current
    if hasattr(func, "__srcgrad_grad__"):
        last = LastMadeBuild(_CACHE, flat_source_current)
        last_lean = LastMadeBuild(_CACHE, flat_source_current)
    else:
        last, last_lean = LastBuild(_CACHE), LastBuild(_CACHE)
    # seeded with one (a real one: not under has_aux or holomorphic), whose sweeps nothing
    # else sees: the lean sweeps (LeanAdjoint)
    lean = not (mode.has_aux or mode.holomorphic or mode.elementwise)

    def entry_lookup():
        return get_entry_adjoint(func, func_indices)

    def lean_lookup():
        return get_lean_adjoint(func, func_indices, mode.value_first)

    # per kind of arguments (argument_facts): the last build specialised to it and its
    # lookup, as last_lean and lean_lookup; None where it proved nothing
    last_specialised: dict = {}

    def specialised(facts):
        """The lean build for arguments of ``facts`` when it proves something, else None."""
        nonlocal specialising
        held = last_specialised.get(facts, False)
        if held is None:
            return None
        if held is False:
            if not last_lean.get(func, lean_lookup).specialisable:
                specialising = False  # (nothing to rewrite, whatever the arguments)
                return None
            if len(last_specialised) >= 64:  # (a function called with many kinds: not held)
                last_specialised.clear()
            held = last_specialised[facts] = (LastBuild(_CACHE), functools.partial(
                get_lean_adjoint, func, func_indices, mode.value_first, facts))
        built = held[0].get(func, held[1])
        if built.rank_rewrites:
            return built
        last_specialised[facts] = None
        if all(f == "f" or (f if type(f) is int else f[0]) >= 0 for f in facts):
            # nothing proven of arguments with no dimension of 1: not worth their facts on
            # each call (~0.2 us an argument) from now on
            specialising = False
        return None

    def adjoint(lean: bool = False):
        # looked up on every call (the last build, checked): the cache decides when code is
        # rebuilt
        if verbose:  # (the sweeps srcgrad.source shows, of which the lean ones are a variant)
            shown = last.get(func, entry_lookup)
            if state.get("shown") is not shown:
                state["shown"] = shown
                print(shown.source)
        if lean:
            return last_lean.get(func, lean_lookup)
        return last.get(func, entry_lookup)

    quick = lean and not verbose  # (adjoint(True), without its call: ~0.2 us of ~6)
    specialising = quick  # (builds for the arguments' ranks: specialised)
    # a gradient (no value) of float64 numbers: the flattened wrapper made for them
    # (flat_gradient), while it holds inlined sweeps and the function keeps its code and
    # defaults; each argument passed (a default's value may be anything)
    flattening = quick and not mode.value_first and not bound \
        and getattr(func, "__kwdefaults__", None) is None and hasattr(func, "__globals__")
    made_gradient = hasattr(func, "__srcgrad_grad__")  # (of a gradient: made from its
    # flattened wrapper, which must still stand for it)
    # (wrapper, the function's code and defaults, the builds it holds, the globals it assumed
    # float64 ndarrays, its parameter count, the function its sweeps are of)
    flat_held = None

    def flat_gradient():
        """The flattened wrapper of this gradient for float64 numbers
        (api_forward.source_function, made again when the sweeps it holds went stale), or
        None (from then on) when it inlined nothing, the function's code or defaults were
        replaced since, or its lean sweeps have a scalar form (``scalar_variant``)."""
        nonlocal flattening, flat_held
        from .api_forward import source_function
        try:
            made = source_function(gradient, flat=True, numbers=True)
        except SrcgradError:  # (what the lean sweeps refuse, they refuse with their message)
            flattening, flat_held = False, None
            return None
        code, defaults = state.setdefault("flat_made_for", (func.__code__, func.__defaults__))
        if code is not func.__code__ or defaults is not func.__defaults__ \
                or not getattr(made, "__srcgrad_inlined__", ()) \
                or last_lean.get(func, lean_lookup).scalar_closed:
            flattening, flat_held = False, None
            return None
        flat_held = (made, code, defaults, made.__srcgrad_depends__, made.__srcgrad_guards__,
                     made.__code__.co_argcount, made.__srcgrad_depends__[0][0].fn)
        return made

    def run_flat(args):
        """The gradient at float64 numbers ``args``, by the flattened wrapper; _NOT_RUN when
        it does not serve."""
        held = flat_held  # (checked here: source_function's checks cost ~2 us a call)
        if held is None or held[1] is not func.__code__ or held[2] is not func.__defaults__ \
                or held[3].stale() or made_gradient and not flat_source_current(func, held[6]):
            if flat_gradient() is None:
                return _NOT_RUN
            held = flat_held
        if len(args) != held[5]:  # (a default's value may be anything)
            return _NOT_RUN
        scope = held[0].__globals__
        for name in held[4]:  # (transforms/number_shapes.py assumed these float64 arrays)
            value = scope.get(name)
            if type(value) is not _ndarray or value.dtype is not _float64:
                return _NOT_RUN  # (the lean sweeps, which assume nothing of it)
        return held[0](*args)

    @functools.wraps(f)
    @user_tracebacks
    def gradient(*args, **kwargs):
        if flattening and not kwargs and type(args[0] if args else None) in _FLAT_TYPES:
            # (the first argument alone first: a generator over all of them allocated ~300
            # bytes on every array gradient, tests/test_scaling_loops.py measures the peak;
            # float64 numbers pass _check_differentiable: not called for them)
            g = run_flat(args) if _all_numbers(args) else _NOT_RUN
            if g is not _NOT_RUN:
                return g
        _check_differentiable(f, indices, args)
        adj = None
        if specialising and not kwargs:  # (the build for these arguments: checked as last_lean)
            facts = argument_facts(bound + args)
            if facts is not None:
                adj = specialised(facts)
        if adj is None:
            adj = last_lean.get(func, lean_lookup) if quick else adjoint(lean)
        if adj.scalar_closed and not kwargs and all(type(a) in SCALAR_TYPES for a in args) \
                and not mode.has_aux:
            adj = adj.scalar_variant()
        fwd, bwd = adj.functions_for(func)
        value, grads, aux = _run_grad(f, mode, fwd, bwd, bound + args, kwargs)
        g = grads[0] if single else tuple(grads)
        if mode.value_first:
            return value, g  # (under has_aux, value is the pair (value, aux))
        return (g, aux) if mode.has_aux else g

    gradient.__srcgrad_adjoint__ = adjoint
    # what srcgrad.api_forward.source_function needs to differentiate this gradient again
    gradient.__srcgrad_grad__ = GradSpec(f, indices, single, mode)
    return gradient


def _starred_grad(f, wrt, mode: GradMode, verbose: bool):
    """``grad`` of a function with ``*args``/``**kwargs``: ``wrt`` indexes the positional
    arguments of each call, whose shape picks a fixed-arity adapter (adapters.py) to
    differentiate."""
    by_shape: dict = {}

    def for_call(args, kwargs):
        target = route(f, args, kwargs)
        made = by_shape.get(target)
        if made is None:
            made = by_shape[target] = _make_grad(target, wrt, mode, verbose)
        return made

    @functools.wraps(f)
    def gradient(*args, **kwargs):
        return for_call(args, kwargs)(*args, **kwargs)

    # differentiated again (adapters.route): the gradient of the adapter for that call
    gradient.__srcgrad_starred__ = for_call
    return gradient


@user_tracebacks
def vjp(f: Callable, *args, has_aux: bool = False, checkpoint: int | None = None,
        jit: bool | str = False, **kwargs) -> tuple:
    """``(value, pullback)``: ``pullback(g)`` returns one gradient per positional argument.

    Arguments that cannot carry a gradient (integers, bools, strings, None) get ``None``.
    With ``has_aux=True``, ``f`` returns ``(value, aux)`` and the result is
    ``(value, pullback, aux)``; aux is not differentiated. ``jit=True``/``"auto"``: compiled
    by numba, as for ``grad`` (docs/jit.md).
    """
    f = as_function(unwrap_numba(f), "vjp")
    wrt = tuple(i for i, a in enumerate(args) if integer_leaf(a) is None
                and not isinstance(a, (str, type(None))))
    _check_differentiable(f, wrt, args)
    if has_starred_parameters(f):
        f = route(f, args, kwargs)
    func, lead = unbind(f)  # a bound method: self first, not differentiated
    adj = get_entry_adjoint(func, tuple(i + len(lead) for i in wrt))
    made = None if jit is False else jit_vjp(adj, f, args, kwargs, wrt, jit, has_aux=has_aux,
                                             bound_method=bool(lead), checkpoint=checkpoint)
    if made is not None:
        return made
    fwd, bwd = adj.sweeps_for(func)
    with default_checkpoints(checkpoint):  # K of marked loops that give none
        value, saved = fwd(*lead, *args, **kwargs)
    out, aux = split_aux(f, value, "vjp(has_aux=True)") if has_aux else (value, None)

    @user_tracebacks
    def pullback(g):
        # the backward sweep pops its tape: each call pops its own copy (the values are
        # shared), so a pullback can be called any number of times
        check_cotangent(g, out)
        grads = bwd(runtime.copy_saved(saved), (g, runtime.ZERO) if has_aux else g)
        result: list = [None] * len(args)
        for i, gi in zip(wrt, grads):
            result[i] = gi
        return tuple(result)

    pullback.__srcgrad_adjoint__ = lambda: adj
    remember(f, "vjp", [adj])  # srcgrad.source(f, "vjp")
    return (out, pullback, aux) if has_aux else (value, pullback)


# -- per-function derivative rules (JAX's custom_vjp / custom_jvp) ---------------------------
def _custom_parameters(fun, api: str) -> list[str]:
    """The positional parameters of a ``custom_vjp``/``custom_jvp`` function; every one is
    differentiable, like JAX's without ``nondiff_argnums``."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        raise SrcgradError(f"@srcgrad.{api} needs a function with a signature; got "
                           f"{fun!r}") from None
    odd = [p.name for p in params
           if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if odd:
        raise SrcgradError(f"@srcgrad.{api}: {_label(fun)}() has parameter(s) "
                           f"{', '.join(odd)} that are not plain positional ones; a custom "
                           f"rule takes a fixed list of arguments, each differentiable")
    names = [p.name for p in params]
    clash = [n for n in names if n.startswith("_")]
    if clash:
        raise SrcgradError(f"@srcgrad.{api}: rename parameter(s) {', '.join(clash)} of "
                           f"{_label(fun)}(): names starting with '_' are the generated "
                           f"rule's own")
    return names


def _facade_tensor(args):
    """The first argument that is a Tensor of the facade (known by its attributes), or
    None."""
    for a in args:
        if hasattr(type(a), "requires_grad_") and hasattr(type(a), "__array_function__") \
                and hasattr(a, "grad_fn"):
            return a
    return None


def _compile_rule(source: str, label: str, namespace: dict) -> Callable:
    """A generated rule function (real source in linecache: it can be inlined, shown in
    tracebacks and differentiated again)."""
    name = source.split("(", 1)[0][len("def "):]
    return codegen.compile_source(source, label, namespace)[name]


class _CustomRule:
    """What ``custom_vjp`` and ``custom_jvp`` share: a callable running ``fun``, whose
    derivative is the rule registered for this object in the one registry (rules.defrule),
    so generated code and the Tensor facade both use it."""

    api = "custom rule"

    def __init__(self, fun: Callable):
        if not callable(fun):
            raise SrcgradError(f"@srcgrad.{self.api} decorates a function; got {fun!r:.60}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.params = _custom_parameters(fun, self.api)
        self.name = getattr(fun, "__name__", "f").replace("<lambda>", "lambda")

    def __call__(self, *args, **kwargs):
        tensor = _facade_tensor(args)
        if tensor is not None and lookup(self) is not None:
            # the Tensor facade records the call with this object's registry rule, as it does
            # a numpy function's: asked through numpy's protocol, so this layer does not
            # import the facade's
            types_ = tuple({type(a) for a in args if hasattr(type(a), "__array_function__")})
            result = tensor.__array_function__(self, types_, args, kwargs)
            if result is not NotImplemented:
                return result
        return self.fun(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<srcgrad.{self.api} {_label(self.fun)}>"

    def _signature(self) -> tuple[str, str, dict]:
        return signature_text(self.fun)


class custom_vjp(_CustomRule):
    """A function with its own reverse-mode derivative, in JAX's style::

        @srcgrad.custom_vjp
        def clip_gradient(x):
            return x

        def clip_fwd(x):
            return x, None  # (output, residuals for the backward pass)

        def clip_bwd(residuals, g):
            return (np.clip(g, -1.0, 1.0),)  # one cotangent per argument

        clip_gradient.defvjp(clip_fwd, clip_bwd)

    The rule goes into srcgrad's one registry (like ``@srcgrad.rule``). ``fwd`` runs when the
    backward sweep reaches the call, to recompute the residuals: a registry rule receives
    the arguments and the output, not a separate forward pass. Forward mode (``jvp``,
    ``hessian``) transposes the vjp, so ``fwd`` and ``bwd`` should be differentiable Python.
    """

    api = "custom_vjp"

    def defvjp(self, fwd: Callable, bwd: Callable) -> "custom_vjp":
        """Register ``fwd(*args) -> (out, residuals)`` and ``bwd(residuals, g) -> tuple of
        cotangents`` (one per argument) as this function's derivative."""
        params, call, namespace = self._signature()
        source = (f"def {self.name}_vjp(_g, _ans, {params}):\n"
                  f"    _residuals = _fwd({call})[1]\n"
                  f"    return _bwd(_residuals, _g)\n")
        namespace.update({"_fwd": fwd, "_bwd": bwd})
        vjp_fn = _compile_rule(source, f"{self.name} custom_vjp", namespace)
        self.fwd, self.bwd = fwd, bwd
        defrule(self, vjp_fn, diff_args=tuple(range(len(self.params))),
                name=rule_name(self.fun))
        return self


class custom_jvp(_CustomRule):
    """A function with its own forward-mode derivative, in JAX's style::

        @srcgrad.custom_jvp
        def softplus(x):
            return np.log1p(np.exp(x))

        @softplus.defjvp
        def softplus_jvp(primals, tangents):
            (x,), (dx,) = primals, tangents
            return softplus(x), dx / (1.0 + np.exp(-x))

    Reverse mode (``grad``, ``vjp``) transposes the jvp, which is linear in the tangents:
    the gradient of ``<g, jvp(primals, tangents)[1]>`` with respect to the tangents. The
    output must be a float or an array. The rule goes into srcgrad's one registry.
    """

    api = "custom_jvp"

    def defjvp(self, jvp: Callable) -> Callable:
        """Register ``jvp(primals, tangents) -> (out, tangent_out)``; returns ``jvp``, so it
        can be used as a decorator."""
        params, call, namespace = self._signature()
        primals = f"({call},)"
        n = len(self.params)
        namespace.update({"_jvp": jvp, "_zeros": runtime.zeros_like, "_np": np})
        # the registry's jvp: one contribution per argument, each with only its tangent
        parts = []
        for k in range(n):
            tangents = ", ".join(f"_d{k}" if j == k else f"_zeros({name})"
                                 for j, name in enumerate(self.params))
            parts.append(f"_jvp({primals}, ({tangents},))[1]")
        ds = "".join(f"_d{k}, " for k in range(n))
        jvp_fn = _compile_rule(f"def {self.name}_jvp({ds}_ans, {params}):\n"
                               f"    return ({', '.join(parts)},)\n",
                               f"{self.name} custom_jvp", dict(namespace))
        # the transposed jvp: <g, tangent_out> differentiated in the tangents
        all_ds = ", ".join(f"_d{k}" for k in range(n))
        inner = _compile_rule(f"def {self.name}_tangent_dot({ds}_g, {params}):\n"
                              f"    return _np.sum(_g * _jvp({primals}, ({all_ds},))[1])\n",
                              f"{self.name} custom_jvp transpose", dict(namespace))
        namespace["_transpose"] = grad(inner, wrt=tuple(range(n)))
        zeros = "".join(f"_zeros({name}), " for name in self.params)
        vjp_fn = _compile_rule(f"def {self.name}_vjp(_g, _ans, {params}):\n"
                               f"    return _transpose({zeros}_g, {call})\n",
                               f"{self.name} custom_jvp vjp", namespace)
        self.jvp = jvp
        defrule(self, vjp_fn, diff_args=tuple(range(n)), jvp=jvp_fn,
                name=rule_name(self.fun))
        return jvp


# -- calls resolved only at run time (functions passed in, local defs, lambdas, methods) -----
def dynamic_forward(fn, args, kwargs):
    """Run ``fn(*args, **kwargs)`` recording how to differentiate it; see runtime.call_fwd."""
    if fn is runtime.apply and not isinstance(args[0], runtime.Bound) and \
            instance_call(args[0]) is None and not receiver_method(args[0]):
        # a plain function value: called as such (no adapter layer at first order)
        value, record = dynamic_forward(args[0], tuple(args[1]), args[2])
        return value, ApplyCall(record)
    fn = route(fn, args, kwargs)
    rule = lookup(fn)
    if rule is not None:
        refuse_beyond_rule(rule, args)
    rule = rule or nondifferentiable_rule(fn)
    if rule is not None:
        value = fn(*args, **kwargs)
        return value, RuleCall(rule, args, kwargs, value)
    self_args, names, wrt, fwd, bwd = user_sweeps(fn, args, kwargs)
    value, saved = fwd(*self_args, *args, **kwargs)
    return value, UserCall(bwd, saved, len(self_args), names, len(args), kwargs, wrt)


def user_sweeps(fn, args, kwargs):
    """For a call ``fn(*args, **kwargs)`` of user code known at run time: ``(self_args,
    names, wrt, fwd, bwd)``, the bound instance (if any), the parameter names, the
    parameters its arguments make differentiable, and the sweeps for them."""
    fn = callee_function(fn)  # a partial, an object with __call__: Python code to run
    func = function_key(fn)
    if not hasattr(func, "__code__"):
        raise MissingRuleError(getattr(fn, "__qualname__", repr(fn)))
    self_args = (fn.__self__,) if inspect.ismethod(fn) else ()
    wrt = dynamic_wrt(func, self_args, args, kwargs)
    fwd, bwd = get_adjoint(func, wrt).sweeps_for(func)
    return self_args, parameter_names(func), wrt, fwd, bwd


def _no_gradient(g, ans, *args, **kwargs):
    """The vjp of a function registered as non-differentiable: no operand gets a gradient."""
    return ()


nondifferentiable(_no_gradient)
_NONDIFF_RULES: dict = {}


def nondifferentiable_rule(fn) -> Rule | None:
    """For a function registered as non-differentiable (``dict_keys``, ``len``), a rule that
    gives no operand a gradient, so that calls dispatched at run time treat it like any
    ruled function instead of reading its source; None for other functions."""
    try:
        if not is_nondifferentiable(fn):
            return None
        made = _NONDIFF_RULES.get(fn)
    except TypeError:  # unhashable
        return None
    if made is None:
        made = _NONDIFF_RULES[fn] = Rule(fn=fn, name=rule_name(fn), vjp=_no_gradient,
                                         diff_args=())
    return made


def dynamic_wrt(func, self_args: tuple, args, kwargs) -> tuple[int, ...]:
    """The parameters of a call known only at run time to differentiate: those whose
    argument may carry a gradient (runtime.may_carry_gradient), and those the callee changes
    in place; a bound method's ``self`` never. Like a static call site's specialization."""
    names = parameter_names(func)
    offset = len(self_args)
    wrt = {i + offset for i, a in enumerate(args) if runtime.may_carry_gradient(a)}
    wrt |= {names.index(k) for k, v in kwargs.items()
            if k in names and runtime.may_carry_gradient(v)}
    changed = _changed_parameters(func)
    wrt |= {i for i, name in enumerate(names) if name in changed and i >= offset}
    wrt = {i for i in wrt if i < len(names)}
    return tuple(sorted(wrt)) or tuple(range(len(names)))


def dynamic_backward(record, g):
    """Gradients ``(positional, keyword)`` of a call recorded by ``dynamic_forward``."""
    if isinstance(record, ApplyCall):  # apply(f, args, kwargs) of a plain function f
        positional, keyword = dynamic_backward(record.record, g)
        return [None, tuple(runtime.ZERO if p is None else p for p in positional),
                {k: runtime.ZERO if v is None else v for k, v in keyword.items()}], {}
    if isinstance(record, RuleCall):
        rule, args, kwargs = record.rule, record.args, record.kwargs
        return rule_cotangents(rule, args, kwargs, rule.vjp(g, record.value, *args, **kwargs))
    return record.at_call(record.per_parameter(record.bwd(record.saved, g)))
