"""User-defined vector spaces: classes whose objects may be differentiated with respect to.

``register_vspace(cls, zeros=..., add=...)`` tells srcgrad how to compute with objects of
``cls`` as derivatives: a function-valued object (an RKHS function holding a dict
of coefficients), a polynomial, anything closed under addition and scaling. srcgrad cannot see
inside such an object: it reaches it only through

* functions with a derivative rule (``@srcgrad.rule(cls.__call__)``, a rule on a method or
  on a plain function taking the object), whose vjp returns the cotangent as an object of
  ``cls`` and whose jvp (``.defjvp``) receives its tangent as one;
* the registered operations, which the runtime uses where it accumulates two contributions
  (``add``) or needs a zero cotangent or tangent (``zeros``). Nothing else: scaling a
  cotangent by a number is the rules' business (they build their cotangents), so there is no
  ``scale`` to register (autograd's VSpace has one; srcgrad would never call it).

Reading the object's attributes, or applying arithmetic operators to it, in code being
differentiated is refused at the user's line: those would run the class's own code on
cotangents as if they were values. Classes not registered keep the argument checks of
boundary.py.

This module sits with the runtime (the values layer): it imports nothing of srcgrad's but
its errors.
"""
from __future__ import annotations

__all__ = ["VSpace", "REGISTERED", "register_vspace", "space_of", "registered_spaces"]

from typing import Any, Callable, NamedTuple

from .errors import SrcgradError


class VSpace(NamedTuple):
    """How srcgrad computes with derivatives that are objects of ``cls``."""

    cls: type
    zeros: Callable[[Any], Any]  # zeros(x): the zero of x's space (x's kernel, shape...)
    add: Callable[[Any, Any], Any]  # add(a, b): a + b


# class -> its operations; the runtime reads it (one dict test on its generic paths), only
# register_vspace writes it
REGISTERED: dict[type, VSpace] = {}


def register_vspace(cls: type, *, zeros: Callable, add: Callable) -> type:
    """Let ``grad``, ``value_and_grad``, ``vjp`` and ``jvp`` differentiate with respect to
    objects of ``cls`` (exactly that class: a subclass is registered on its own).

    ``zeros(x)`` returns the zero object of ``x``'s space and ``add(a, b)`` the sum of two
    objects; each returns a new object and leaves its operands alone. Registering a class again replaces its operations.
    Returns ``cls``.
    """
    if not isinstance(cls, type):
        raise SrcgradError(f"register_vspace() takes a class first; got "
                           f"{type(cls).__name__} {cls!r:.60}")
    if cls.__module__ == "builtins" or cls.__module__.partition(".")[0] == "numpy":
        raise SrcgradError(f"register_vspace() cannot register {cls.__qualname__}: srcgrad "
                           f"already computes with numbers, arrays and containers itself")
    for name, op in (("zeros", zeros), ("add", add)):
        if not callable(op):
            raise SrcgradError(f"register_vspace({cls.__qualname__}): {name}= must be a "
                               f"function; got {type(op).__name__}")
    REGISTERED[cls] = VSpace(cls, zeros, add)
    return cls


def space_of(x) -> VSpace | None:
    """The registered space of ``x``'s class, or None (the common case: one dict lookup)."""
    return REGISTERED.get(type(x)) if REGISTERED else None


def registered_spaces() -> dict[type, VSpace]:
    """The registered classes and their operations (a copy)."""
    return dict(REGISTERED)
