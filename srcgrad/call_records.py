"""What a call dispatched at run time leaves for its backward sweep (``runtime.call_fwd``
returns ``(value, record)``, ``runtime.call_bwd(record, g)`` reads it).

Records flow through generated code and, when a sweep is differentiated again, get
cotangents and tangents of their own: tuples with one entry per field, in field order,
where the lazy zero stands for "nothing". Such a cotangent may be a plain tuple (or the lazy
zero itself), so read it with ``runtime.part`` and the field's position (``RULE_ARGS``...),
and build one with ``record_derivative``: never by a bare number.
"""
from __future__ import annotations

__all__ = ["APPLY_RECORD", "RULE_ARGS", "RULE_VALUE", "USER_SAVED", "ApplyCall", "CallRecord",
           "ReceiverlessCall", "Redispatch", "RuleCall", "UserCall", "record_derivative"]

from collections.abc import Callable
from typing import Any, NamedTuple

from .runtime import ZERO


class RuleCall(NamedTuple):
    """A call of a function with a registered rule: the rule's vjp needs the operands and
    the value."""

    rule: Any  # rules.Rule
    args: tuple
    kwargs: dict
    value: Any


class UserCall(NamedTuple):
    """A call of user code through its generated sweeps: the backward sweep, what the
    forward sweep saved, and how the sweep's gradients (one per ``wrt`` parameter) map back
    to the call's arguments."""

    bwd: Callable
    saved: Any
    n_self: int  # 1 for a bound method (its instance came first), else 0
    names: list  # the callee's parameter names
    n_args: int  # positional arguments at the call
    kwargs: dict  # keyword arguments at the call (their names matter)
    wrt: tuple  # the parameters ``bwd`` gives gradients for

    def per_parameter(self, wrt_values, missing=None) -> list:
        """One value per callee parameter, from one per ``wrt`` parameter (what ``bwd``
        returns); ``missing`` for the others."""
        values = [missing] * len(self.names)
        for i, value in zip(self.wrt, wrt_values):
            values[i] = value
        return values

    def at_call(self, per_parameter: list, missing=None) -> tuple[list, dict]:
        """``(positional, keyword)``: values per callee parameter lined up with the call's
        own arguments (a bound method's instance dropped); ``missing`` for keyword
        arguments the callee has no parameter for."""
        positional = list(per_parameter[self.n_self:self.n_self + self.n_args])
        by_name = dict(zip(self.names, per_parameter))
        return positional, {k: by_name.get(k, missing) for k in self.kwargs}


class ApplyCall(NamedTuple):
    """``runtime.apply(f, args, kwargs)`` of a plain function ``f``: gradients come out
    aligned with ``apply``'s own three arguments."""

    record: Any  # the record of ``f(*args, **kwargs)``


class ReceiverlessCall(NamedTuple):
    """``obj.name(...)`` of a static or class method: the receiver gets no gradient."""

    record: Any  # the record of the method's call without ``obj``


class Redispatch(NamedTuple):
    """A dispatch helper (``call_fwd``, ``call_bwd``...) called from a sweep differentiated
    again: ``backward(data, g)`` gives the helper's own gradients."""

    backward: Callable
    data: Any


CallRecord = RuleCall | UserCall | ApplyCall | ReceiverlessCall | Redispatch

# positions of fields in a record's cotangent or tangent (which may be a plain tuple)
RULE_ARGS = RuleCall._fields.index("args")
RULE_VALUE = RuleCall._fields.index("value")
USER_SAVED = UserCall._fields.index("saved")
APPLY_RECORD = ApplyCall._fields.index("record")


def record_derivative(kind: type, **fields) -> tuple:
    """A cotangent (or tangent) of a ``kind`` record: ``fields`` by name, the lazy zero for
    the others."""
    unknown = set(fields) - set(kind._fields)
    if unknown:
        raise TypeError(f"{kind.__name__} has no field {', '.join(sorted(unknown))}")
    return tuple(fields.get(name, ZERO) for name in kind._fields)
