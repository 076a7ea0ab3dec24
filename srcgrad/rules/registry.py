"""The one registry of derivative rules, shared by the source transformer and the Tensor facade.

A rule is ordinary runnable Python keyed by the primal function object:

* ``vjp(g, ans, *args, **kwargs)`` returns a tuple with one cotangent per differentiable
  argument (in the order of ``diff_args``), each already reduced to that argument's shape.
* ``jvp(*tangents, ans, *args, **kwargs)`` takes one tangent per differentiable argument and
  returns a tuple with one *contribution* per differentiable argument (each linear in its own
  tangent, each with the shape of ``ans``); the output tangent is their sum. Keeping the
  contributions apart lets the transformer emit only those of active arguments.
* ``domain(rng)`` returns a list of ``(args, kwargs)`` test points where the rule is smooth,
  so that every rule is checked against finite differences.

When a vjp/jvp body is a single ``return`` of a tuple, the transformer inlines the tuple's
elements into generated code; otherwise it emits a call.
"""
from __future__ import annotations

__all__ = [
    "Rule",
    "defrule",
    "defjvp",
    "lookup",
    "is_nondifferentiable",
    "nondifferentiable",
    "rule",
    "all_rules",
    "rule_name",
    "defer",
    "load_deferred",
    "version",
    "changes",
]

import ast
import functools
import importlib
import importlib.util
import inspect
import sys
import textwrap
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import SrcgradError


@dataclass
class Rule:
    """Derivative rule of one primal function."""

    fn: Callable
    name: str
    vjp: Callable
    diff_args: tuple[int, ...] = (0,)
    jvp: Callable | None = None
    domain: Callable | None = None
    linear: bool = False  # linear in its differentiable args: jvp contributions = fn(tangent)
    second_order: bool = True  # vjp is itself differentiable (checked by the second-order tests)
    builtin: bool = False  # one of srcgrad's own rules (not a user's or a Function's)
    # positions read only for their shape (full_like's array): no gradient, and no error
    # when they depend on the differentiated input
    shape_args: tuple[int, ...] = ()
    # Parameter names of the primal, read from the vjp signature (after g, ans): used to bind
    # keyword arguments to positions when generated code calls the rule.
    params: tuple[str, ...] = field(default=())

    def __post_init__(self):
        if not self.params:
            sig = inspect.signature(self.vjp)
            names = [p.name for p in sig.parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            self.params = tuple(names[2:])


_RULES: dict[Any, Rule] = {}
_NONDIFF: set[Any] = set()


def _key(fn: Any) -> Any:
    # Bound methods of the same function compare equal but are new objects each time;
    # functions and ufuncs are keyed by identity through their hash.
    return fn


def rule_name(fn: Any) -> str:
    """Readable dotted name of a function, for messages and rule names."""
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    if isinstance(fn, type(abs)) and module == "builtins":
        return name
    if not module and type(fn).__name__ == "ufunc" and getattr(
            sys.modules.get("numpy"), name, None) is fn:
        module = "numpy"  # numpy's ufuncs have a __module__ from numpy 2.2 on
    if module.startswith("numpy"):
        # public submodules keep their name (numpy.fft, numpy.linalg); private
        # implementation modules (numpy._core.fromnumeric) read as plain numpy
        public = [p for p in module.split(".") if not p.startswith("_") and p != "core"]
        module = ".".join(public)
    if module == "_operator":
        module = "operator"
    return f"{module}.{name}" if module else name


def defrule(fn: Callable, vjp: Callable, *, diff_args: tuple[int, ...] = (0,),
            jvp: Callable | None = None, domain: Callable | None = None,
            linear: bool = False, second_order: bool = True, name: str | None = None,
            shape_args: tuple[int, ...] = ()) -> Rule:
    """Register the derivative rule of ``fn``.

    A user's rule replaces the user's earlier rule of the same function (re-running a
    notebook cell), with a ``UserWarning`` when the vjp or jvp differs. A built-in rule is
    never replaced, and srcgrad's own rule modules registering one function twice raise.
    """
    key = _key(fn)
    if _sealed:
        _load_imported_libraries()  # a built-in rule of scipy's is protected before it loads
    old = _RULES.get(key)
    if old is not None and (old.builtin or not _sealed):
        raise SrcgradError(
            f"a derivative rule for '{rule_name(fn)}' is already registered"
            + (" as one of srcgrad's built-in rules, and built-in rules cannot be replaced; "
               "wrap the function in one of your own and register a rule for that"
               if old.builtin and _sealed else ""))
    r = Rule(fn=fn, name=name or rule_name(fn), vjp=vjp, diff_args=tuple(diff_args), jvp=jvp,
             domain=domain, linear=linear, second_order=second_order, builtin=not _sealed,
             shape_args=tuple(shape_args))
    if old is not None:
        _warn_if_changed(r.name, "vjp", old.vjp, vjp)
        if jvp is not None:
            _warn_if_changed(r.name, "jvp", old.jvp, jvp)
    _RULES[key] = r
    _changed()
    return r


def defjvp(fn: Callable, jvp: Callable) -> None:
    """Attach a forward-mode rule to the already registered rule of ``fn``."""
    r = lookup(fn)
    if r is None:
        raise SrcgradError(f"no rule registered for '{rule_name(fn)}'; register its vjp first")
    r.jvp = jvp
    _changed()


# how many times users' rules changed after srcgrad loaded (what ``version()`` returns; read
# as the variable where a call would cost: once per build checked on each call of a sweep)
changes = 0


def version() -> int:
    """A counter that changes whenever users' rules change after srcgrad loaded: code
    generated earlier may have inlined the old rule (generated.py rebuilds it)."""
    return changes


def _changed() -> None:
    global changes
    if _sealed:
        changes += 1


def _warn_if_changed(name: str, which: str, old: Callable | None, new: Callable,
                     stacklevel: int = 4) -> None:
    """Warn when a re-registered rule differs (stacklevel 4: the user's ``@rule`` line)."""
    if old is not None and _source_of(old) != _source_of(new):
        warnings.warn(f"the derivative rule for '{name}' is replaced by a different {which}",
                      UserWarning, stacklevel=stacklevel)


def _source_of(fn: Callable) -> Any:
    """What a rule's function says: its source text, or its code when there is none."""
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return getattr(inspect.unwrap(fn), "__code__", fn)


def lookup(fn: Any) -> Rule | None:
    """The rule of ``fn``, or None."""
    try:
        found = _RULES.get(_key(fn))
        if found is None and _load_imported_libraries():
            found = _RULES.get(_key(fn))
        return found
    except TypeError:  # unhashable callables have no rule
        return None


# Rule modules of optional libraries (scipy): ``(library, rule module)`` pairs, imported the
# first time a lookup misses while the library is imported. Importing srcgrad never imports
# them (scipy.stats alone takes a second), yet a function the user got from the library finds
# its rule, because the user imported the library to get it.
_DEFERRED: list[tuple[str, str]] = []


def defer(library: str, rule_module: str) -> None:
    """Register ``rule_module``'s rules once ``library`` is imported (srcgrad's own rules)."""
    _DEFERRED.append((library, rule_module))


def _load_imported_libraries() -> bool:
    """Import the deferred rule modules whose library is imported; True if any was."""
    ready = [entry for entry in _DEFERRED if entry[0] in sys.modules]
    for entry in ready:
        _import_rules(entry)
    return bool(ready)


def load_deferred() -> list[str]:
    """Import every deferred rule module whose library is installed (the rule tests walk them
    all); returns the libraries that are missing."""
    missing = []
    for entry in list(_DEFERRED):
        if importlib.util.find_spec(entry[0].partition(".")[0]) is None:
            missing.append(entry[0])
        else:
            _import_rules(entry)
    return missing


def _import_rules(entry: tuple[str, str]) -> None:
    global _sealed
    _DEFERRED.remove(entry)
    sealed, _sealed = _sealed, False  # srcgrad's own rules, tested like the others
    try:
        importlib.import_module(entry[1])
    finally:
        _sealed = sealed


def all_rules(builtin_only: bool = False) -> list[Rule]:
    """Every registered rule, in registration order; only srcgrad's own with
    ``builtin_only`` (users' rules need no test domain or jvp)."""
    return [r for r in _RULES.values() if r.builtin or not builtin_only]


_sealed = False


def seal_builtins() -> None:
    """Called once srcgrad's rule modules are imported: later rules are users'."""
    global _sealed
    _sealed = True


def nondifferentiable(fn: Callable) -> Callable:
    """Mark ``fn`` as having no derivative: values it returns never carry a gradient."""
    _NONDIFF.add(_key(fn))
    _changed()
    return fn


def is_nondifferentiable(fn: Any) -> bool:
    try:
        return _key(fn) in _NONDIFF or (_load_imported_libraries() and _key(fn) in _NONDIFF)
    except TypeError:
        return False


def rule(fn: Callable, *, diff_args: tuple[int, ...] | None = None,
         domain: Callable | None = None):
    """Decorator registering a user's vjp for ``fn``.

    ::

        @srcgrad.rule(my_fn)
        def my_fn_vjp(g, ans, x, y):
            return g * y, g * x

    ``diff_args`` defaults to every positional parameter of the vjp after ``g, ans``. The
    returned function gains ``.defjvp`` to attach a forward-mode rule.
    """

    def register(vjp: Callable) -> Callable:
        n = len(Rule(fn=fn, name="", vjp=vjp).params)
        diff = tuple(range(n)) if diff_args is None else tuple(diff_args)
        impl = vjp
        if len(diff) == 1 and not _returns_tuple(vjp):
            # one differentiable argument: returning the cotangent itself is accepted
            impl = _as_tuple(vjp)
        replaced = _RULES.get(_key(fn))
        r = defrule(fn, impl, diff_args=diff, domain=domain)

        def attach_jvp(jvp: Callable) -> Callable:
            if replaced is not None:  # the cell that registered the rule ran again
                _warn_if_changed(r.name, "jvp", replaced.jvp, jvp, stacklevel=3)
            r.jvp = jvp
            _changed()
            return jvp

        vjp.defjvp = attach_jvp
        return vjp

    return register


def _as_tuple(vjp: Callable) -> Callable:
    """A vjp returning its one cotangent bare, as one returning a 1-tuple (a def with
    source, so that srcgrad can differentiate it again)."""
    @functools.wraps(vjp)
    def one_cotangent(*args, **kwargs):
        return (vjp(*args, **kwargs),)
    return one_cotangent


def _returns_tuple(fn) -> bool:
    """Whether every ``return`` in ``fn``'s source returns a tuple display."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r.value, ast.Tuple) for r in returns)
