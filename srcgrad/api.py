"""Public entry points: grad, value_and_grad, vjp, source; the cache of generated adjoints."""
from __future__ import annotations

__all__ = ["grad", "value_and_grad", "vjp", "source", "stop_gradient", "Adjoint",
           "get_adjoint"]

import functools
import inspect
import weakref
from typing import Any, Callable

import gast
import numpy as np

from . import runtime
from .boundary import (as_function, callee_function, check_argument, check_cotangent,
                       unbind)
from .tracebacks import user_tracebacks
from .runtime import stop_gradient
from .adapters import has_starred_parameters, route
from .errors import NonDifferentiableError, SrcgradError, SourceUnavailableError
from .generated import Generated, cached_build
from .transforms import check_calls
from .rules import Rule, is_nondifferentiable, nondifferentiable, rule_name
from .source import get_source
from .transforms.activity import changed_parameters
from .transforms.astutil import bind_arguments, names_read
from .transforms.binding import scatter_rule_grads
from .transforms.reverse import reverse

_CACHE: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


class Adjoint(Generated):
    """The generated forward and backward sweeps of one function, for one choice of wrt.

    ``fwd(*args)`` runs the user's code and returns ``(value, saved)``; ``bwd(saved, g)``
    returns one gradient per wrt parameter.
    """

    kind = "adjoint"

    def __init__(self, fn: Callable, wrt: tuple[int, ...], scalar_mode: bool = False):
        super().__init__(fn, wrt, scalar_mode)
        self.params: list[str] = _param_names(fn)
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
        return self.functions_for()[1]

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


def _func_key(fn):
    return getattr(fn, "__func__", fn)


def get_adjoint(fn: Callable, wrt: tuple[int, ...], debug: bool = False) -> Adjoint:
    """The (cached) adjoint of ``fn`` for ``wrt``; built on first use."""
    if hasattr(fn, "__srcgrad_grad__") or hasattr(getattr(fn, "__self__", None), "adj"):
        # made by srcgrad (a gradient, a bound method's sweep): its generated equivalent
        from .api_forward import source_function
        fn = source_function(fn)
    return cached_build(_CACHE, Adjoint, _func_key(fn), wrt, debug)


def get_callee_adjoint(fn: Callable, call: gast.Call | None = None,
                       active: frozenset = frozenset()) -> Adjoint:
    """Adjoint of a function called from differentiated code, with respect to the parameters
    that the arguments ``active`` at ``call`` reach (all of them when that is unknown). An
    object passed along (a RandomState, a config, a data batch) is then an ordinary constant
    inside the callee, and costs no cotangent."""
    if hasattr(fn, "__srcgrad_grad__") or isinstance(getattr(fn, "__self__", None),
                                                     _BoundAdjoint):
        # made by srcgrad (a gradient, a bound method's sweep): its generated form
        from .api_forward import source_function
        fn = source_function(fn)
    func = _func_key(fn)
    code = getattr(func, "__code__", None)
    if code is None:
        raise SourceUnavailableError(f"no source for {fn!r}")
    n = code.co_argcount + code.co_kwonlyargcount
    wrt = tuple(range(n))
    bound = None if call is None else bind_arguments(
        _param_names(func), 1 if inspect.ismethod(fn) else 0, call)
    if bound is not None:
        names = _param_names(func)
        keep = _changed_parameters(func)
        reached = {i for i, node in bound if names_read(node) & active}
        reached |= {i for i, name in enumerate(names) if name in keep}
        if inspect.ismethod(fn):
            reached.discard(0)
        wrt = tuple(sorted(reached)) or wrt
    adj = get_adjoint(func, wrt)
    if inspect.ismethod(fn):
        return _BoundAdjoint(adj, fn.__self__)
    return adj


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


class _BoundAdjoint:
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
def _param_names(fn) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _normalize_wrt(fn, wrt) -> tuple[tuple[int, ...], bool]:
    """``wrt`` as a tuple of parameter indices, and whether the user gave a single one."""
    names = _param_names(fn)
    single = not isinstance(wrt, (tuple, list))
    items = [wrt] if single else list(wrt)
    out = []
    for w in items:
        if isinstance(w, str):
            if w not in names:
                raise SrcgradError(f"{fn.__qualname__}() has no parameter '{w}' "
                                   f"(its parameters: {', '.join(names)})")
            out.append(names.index(w))
        elif isinstance(w, (int, np.integer)) and not isinstance(w, bool):
            # (with *args, an index past the named parameters is one of the extra
            # positional arguments of each call)
            if not 0 <= w < len(names) and not (w >= 0 and has_starred_parameters(fn)):
                raise SrcgradError(f"wrt={w} is out of range: {fn.__qualname__}() has "
                                   f"{len(names)} parameters")
            out.append(int(w))
        else:
            raise SrcgradError(f"wrt must be a parameter index, a name, or a tuple of those; "
                               f"got {w!r}")
    return tuple(out), single


def _check_differentiable(fn, wrt, args) -> None:
    for i in wrt:
        if i < len(args):
            check_argument(args[i], fn, i)


def _integer_leaf(x):
    if isinstance(x, (bool, np.bool_)):
        return "a bool"
    if isinstance(x, (int, np.integer)):
        return "an integer"
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is not None and (isinstance(x, np.ndarray) or runtime.is_foreign_array(x)):
        if kind in "biu":  # (numpy arrays, and dask's, whose attributes hold integers)
            what = "a bool" if kind == "b" else "an integer"
            return f"{what} array (dtype {x.dtype})"
        return None
    if isinstance(x, dict):
        for v in x.values():
            r = _integer_leaf(v)
            if r:
                return r
    elif isinstance(x, (list, tuple)):
        for v in x:
            r = _integer_leaf(v)
            if r:
                return r
    elif hasattr(x, "__dict__") and not isinstance(x, (type, np.ndarray)) \
            and not callable(x):
        for v in vars(x).values():  # plain objects and dataclasses: their attributes
            if isinstance(v, (np.ndarray, float, int, np.number, list, tuple, dict)):
                r = _integer_leaf(v)
                if r:
                    return r
    return None


def _seed(fn, value, holomorphic=False):
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


# argument types for which a scalar-closed function computes only scalars
_SCALARS = frozenset({float, int, np.float64, np.float32, np.int64})


# -- public API ----------------------------------------------------------------------------
def grad(f: Callable | None = None, wrt=0, *, preserve_result: bool = False,
         verbose: bool = False, holomorphic: bool = False):
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``wrt``.

    ``wrt`` is an index, a parameter name, or a tuple of those (then a tuple of gradients is
    returned). With ``preserve_result=True`` the result is ``(gradient, value)``. Usable as
    ``@srcgrad.grad`` or ``srcgrad.grad(f, wrt=1)``.

    Complex numbers follow JAX: for real ``f`` of complex ``z`` the gradient is
    ``df/dx - i df/dy``; a complex-valued ``f`` needs ``holomorphic=True`` and then gets its
    complex derivative ``f'(z)``. A real input's gradient is always real.
    """
    if f is None:
        return functools.partial(grad, wrt=wrt, preserve_result=preserve_result,
                                 verbose=verbose, holomorphic=holomorphic)
    return _make_grad(as_function(f, "grad"), wrt, preserve_result, verbose,
                      value_first=False, holomorphic=holomorphic)


def value_and_grad(f: Callable | None = None, wrt=0, *, verbose: bool = False):
    """Like ``grad`` but returns ``(value, gradient)``."""
    if f is None:
        return functools.partial(value_and_grad, wrt=wrt, verbose=verbose)
    return _make_grad(as_function(f, "value_and_grad"), wrt, True, verbose, value_first=True)


# gradients already made, by function and options: code that calls grad(f) on every call
# (grad inside a function being differentiated, a Newton step) gets the same function back,
# with its generated code and the wrappers that differentiate it again
_GRADIENTS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _make_grad(f, wrt, preserve_result, verbose, value_first, holomorphic=False):
    options = (wrt, preserve_result, value_first, holomorphic)
    try:
        made = None if verbose else _GRADIENTS.get(f, {}).get(options)
    except TypeError:  # an unhashable wrt (a list), or f not weakly referable
        return _new_grad(f, wrt, preserve_result, verbose, value_first, holomorphic)
    if made is None:
        made = _new_grad(f, wrt, preserve_result, verbose, value_first, holomorphic)
        if not verbose:
            _GRADIENTS.setdefault(f, {})[options] = made
    return made


def _new_grad(f, wrt, preserve_result, verbose, value_first, holomorphic=False):
    if has_starred_parameters(f):
        return _starred_grad(f, wrt, preserve_result, verbose, value_first, holomorphic)
    indices, single = _normalize_wrt(f, wrt)
    names = _param_names(f)
    state: dict = {}
    # a bound method: its function, with the instance passed first (never differentiated)
    bound = (f.__self__,) if inspect.ismethod(f) else ()
    func = f.__func__ if bound else f
    func_indices = tuple(i + len(bound) for i in indices)

    def adjoint():
        # looked up on every call (a dict hit): the cache decides when code is rebuilt
        adj = get_adjoint(func, func_indices)
        if verbose and state.get("shown") is not adj:
            state["shown"] = adj
            print(adj.source)
        return adj

    @functools.wraps(f)
    @user_tracebacks
    def gradient(*args, **kwargs):
        _check_differentiable(f, indices, args)
        adj = adjoint()
        if adj.scalar_closed and not kwargs and all(type(a) in _SCALARS for a in args):
            adj = adj.scalar_variant()
        fwd, bwd = adj.sweeps_for(func)
        value, saved = fwd(*bound, *args, **kwargs)
        grads = bwd(saved, _seed(f, value, holomorphic))
        g = grads[0] if single else tuple(grads)
        if value_first:
            return value, g
        return (g, value) if preserve_result else g

    gradient.__srcgrad_adjoint__ = adjoint
    # what srcgrad.api_forward.source_function needs to differentiate this gradient again
    gradient.__srcgrad_grad__ = (f, indices, single, preserve_result, value_first)
    return gradient


def _starred_grad(f, wrt, preserve_result, verbose, value_first, holomorphic):
    """``grad`` of a function with ``*args``/``**kwargs``: ``wrt`` indexes the positional
    arguments of each call, whose shape picks a fixed-arity adapter (adapters.py) to
    differentiate."""
    by_shape: dict = {}

    def for_call(args, kwargs):
        target = route(f, args, kwargs)
        made = by_shape.get(target)
        if made is None:
            made = by_shape[target] = _make_grad(target, wrt, preserve_result, verbose,
                                                 value_first, holomorphic)
        return made

    @functools.wraps(f)
    def gradient(*args, **kwargs):
        return for_call(args, kwargs)(*args, **kwargs)

    # differentiated again (adapters.route): the gradient of the adapter for that call
    gradient.__srcgrad_starred__ = for_call
    return gradient


@user_tracebacks
def vjp(f: Callable, *args, **kwargs):
    """``(value, pullback)``: ``pullback(g)`` returns one gradient per positional argument.

    Arguments that cannot carry a gradient (integers, bools, strings, None) get ``None``.
    """
    f = as_function(f, "vjp")
    wrt = tuple(i for i, a in enumerate(args) if _integer_leaf(a) is None
                and not isinstance(a, (str, type(None))))
    _check_differentiable(f, wrt, args)
    if has_starred_parameters(f):
        f = route(f, args, kwargs)
    func, lead = unbind(f)  # a bound method: self first, not differentiated
    adj = get_adjoint(func, tuple(i + len(lead) for i in wrt))
    fwd, bwd = adj.sweeps_for(func)
    value, saved = fwd(*lead, *args, **kwargs)
    used = []

    @user_tracebacks
    def pullback(g):
        # the backward sweep pops its tape: each call pops its own copy (the values are
        # shared), so a pullback can be called any number of times
        check_cotangent(g, value)
        grads = bwd(runtime.copy_saved(saved), g)
        used.append(True)
        out: list = [None] * len(args)
        for i, gi in zip(wrt, grads):
            out[i] = gi
        return tuple(out)

    pullback.__srcgrad_adjoint__ = lambda: adj
    return value, pullback


def source(obj) -> str:
    """The generated source of anything srcgrad produced: a gradient function, a pullback,
    or a Tensor (the backward pass ``.backward()`` would run)."""
    backward_source = getattr(obj, "_backward_source", None)
    if callable(backward_source):
        return backward_source()
    get = getattr(obj, "__srcgrad_adjoint__", None)
    if get is not None:
        return get().source
    if callable(obj) and hasattr(_func_key(obj), "__code__"):
        return get_adjoint(obj, (0,)).source
    raise SrcgradError(f"srcgrad.source() takes a function made by srcgrad.grad/vjp/jvp or a "
                       f"Tensor; got {type(obj).__name__}")


# -- calls resolved only at run time (functions passed in, local defs, lambdas, methods) -----
def dynamic_forward(fn, args, kwargs):
    """Run ``fn(*args, **kwargs)`` recording how to differentiate it; see runtime.call_fwd."""
    from .rules import lookup
    if fn is runtime.apply and not isinstance(args[0], runtime.Bound):
        # a plain function value: called as such (no adapter layer at first order)
        value, record = dynamic_forward(args[0], tuple(args[1]), args[2])
        return value, ("apply", record)
    fn = route(fn, args, kwargs)
    rule = lookup(fn) or nondifferentiable_rule(fn)
    if rule is not None:
        value = fn(*args, **kwargs)
        return value, ("rule", rule, args, kwargs, value)
    fn = callee_function(fn)  # a partial, an object with __call__: Python code to run
    func = _func_key(fn)
    if not hasattr(func, "__code__"):
        from .errors import MissingRuleError
        raise MissingRuleError(getattr(fn, "__qualname__", repr(fn)))
    names = _param_names(func)
    self_args = (fn.__self__,) if inspect.ismethod(fn) else ()
    wrt = dynamic_wrt(func, self_args, args, kwargs)
    fwd, bwd = get_adjoint(func, wrt).sweeps_for(func)
    value, saved = fwd(*self_args, *args, **kwargs)
    return value, ("user", bwd, saved, len(self_args), names, len(args), kwargs, wrt)


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
    names = _param_names(func)
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
    if record[0] == "apply":  # apply(f, args, kwargs) of a plain function f
        positional, keyword = dynamic_backward(record[1], g)
        return [None, tuple(runtime.ZERO if p is None else p for p in positional),
                {k: runtime.ZERO if v is None else v for k, v in keyword.items()}], {}
    if record[0] == "rule":
        _, rule, args, kwargs, value = record
        return scatter_rule_grads(rule, args, kwargs, rule.vjp(g, value, *args, **kwargs))
    _, bwd, saved, n_self, names, n_args, kwargs, wrt = record
    grads = [None] * len(names)
    for i, gi in zip(wrt, bwd(saved, g)):
        grads[i] = gi
    positional = list(grads[n_self:n_self + n_args])
    by_name = dict(zip(names, grads))
    return positional, {k: by_name.get(k) for k in kwargs}
