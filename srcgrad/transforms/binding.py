"""Binding the operands of a call to a derivative rule's parameters, once for both modes.

A rule declares its differentiable operands by position (``diff_args``) and reads the
primal's parameter names from its vjp signature (``Rule.params``). A call may pass an
operand positionally, by keyword, or not at all (the primal's default). ``bind_rule_call``
says, for each differentiable position, which operand (if any) the call passes there, and
lists every other operand, so that reverse mode, forward mode and the run-time dispatch
(``api.dynamic_backward``) agree on which gradient belongs to which operand, and refuse the
same non-differentiable ones. Operands are whatever the caller works with: AST nodes in the
transformer, values at run time.
"""
from __future__ import annotations

__all__ = ["BoundCall", "SpreadCall", "bind_rule_call", "scatter_rule_grads", "nondiff_guard",
           "split_spread", "nondiff_message", "rule_cotangents", "refuse_beyond_rule"]

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any

import gast

from .. import runtime
from ..errors import UnsupportedFeatureError
from . import astutil as A


@dataclass
class BoundCall:
    """The operands of one call of a rule, sorted by what the rule does with them."""

    # (k, position, operand, keyword name or None) for each differentiable position the call
    # passes: k indexes the rule's vjp results and jvp tangents
    diff: list[tuple[int, int, Any, str | None]] = field(default_factory=list)
    # (description, where, operand) for operands the rule does not differentiate (shape-only
    # positions excluded), ``where`` their index among the positional operands or their
    # keyword: one that depends on the differentiated input must be refused
    nondiff: list[tuple[str, Any, Any]] = field(default_factory=list)


@dataclass
class SpreadCall:
    """A call's operands split where their positions stop being known: ``args`` before the
    first ``*xs`` and the named ``keywords`` bind to a rule's parameters; ``rest`` (the
    positional arguments from the first ``*xs`` on) and ``double`` (the ``**kw`` keyword
    nodes) are passed through as written. ``values`` are the expressions of the latter."""

    args: list
    keywords: dict
    rest: list
    double: list

    @property
    def values(self) -> list:
        return ([a.value if isinstance(a, gast.Starred) else a for a in self.rest]
                + [k.value for k in self.double])


def split_spread(call) -> SpreadCall:
    """``call``'s operands, split at its first ``*xs`` (see ``SpreadCall``).

    A rule's derivative is taken only with respect to operands whose parameter is known
    when the code is generated: the spread ones must carry no gradient (the callers check),
    and are handed to the rule's vjp or jvp as the primal call spread them.
    """
    args = list(call.args)
    first = next((i for i, a in enumerate(args) if isinstance(a, gast.Starred)), len(args))
    return SpreadCall(args=args[:first],
                      keywords={k.arg: k.value for k in call.keywords if k.arg is not None},
                      rest=args[first:], double=[k for k in call.keywords if k.arg is None])


def bind_rule_call(rule, args: list, keywords: dict) -> BoundCall:
    """Sort the operands of ``rule.fn(*args, **keywords)``; see the module docstring."""
    bound = BoundCall()
    position_of = {name: i for i, name in enumerate(rule.params)}
    given = {}  # position -> (operand, keyword name or None)
    for i, a in enumerate(args):
        given[i] = (a, None)
    for name, a in keywords.items():
        i = position_of.get(name)
        if i is None or i in given:
            # not a parameter the rule names (caught by **kwargs) or bound twice (a
            # TypeError of the primal itself): never a differentiable operand
            bound.nondiff.append((f"'{name}'", name, a))
        else:
            given[i] = (a, name)
    for k, i in enumerate(rule.diff_args):
        if i in given:
            a, name = given[i]
            bound.diff.append((k, i, a, name))
    for i, (a, name) in sorted(given.items()):
        if i not in rule.diff_args and i not in rule.shape_args:
            bound.nondiff.append((f"'{name}'", name, a) if name else (str(i + 1), i, a))
    return bound


def scatter_rule_grads(rule, args, kwargs: dict, grads) -> tuple[list, dict]:
    """The rule's vjp results ``grads`` (one per differentiable position) as
    ``(positional, keyword)`` gradients of the operands of ``rule.fn(*args, **kwargs)``."""
    positional: list = [None] * len(args)
    keyword: dict = {}
    for k, i, _, name in bind_rule_call(rule, args, kwargs).diff:
        if name is None:
            positional[i] = grads[k]
        else:
            keyword[name] = grads[k]
    return positional, keyword


def rule_cotangents(rule, args, kwargs: dict, grads) -> tuple[list, dict]:
    """``scatter_rule_grads`` for a call resolved at run time (``np.interp(*table)``,
    ``f(**kw)``, a function value), with a ``runtime.NotDifferentiated`` cotangent for each
    operand holding floats that the rule does not differentiate (``math.hypot``'s
    seventeenth coordinate, ``np.interp``'s ``xp``): the sweep raises where it reads one,
    which it does only for an operand depending on the differentiated input. (Generated
    code checks the operands it writes out, nondiff_guard; these it cannot see.)"""
    positional, keyword = scatter_rule_grads(rule, args, kwargs, grads)
    if not rule.diff_args or rule.name.startswith("runtime."):
        # (a function marked non-differentiable: zero is its derivative; srcgrad's own
        # helpers read their other operands for shapes)
        return positional, keyword
    for what, where, operand in bind_rule_call(rule, args, kwargs).nondiff:
        if runtime.may_carry_gradient(operand):
            lost = runtime.NotDifferentiated(nondiff_message(rule, what))
            if isinstance(where, str):
                keyword[where] = lost
            else:
                positional[where] = lost
    return positional, keyword


def refuse_beyond_rule(rule, args) -> None:
    """Raise when a rule whose vjp takes a fixed number of operands is called, at run time,
    with more (``max(*xs)`` of three items, through the builtin's two-operand rule: the
    vjp's TypeError before)."""
    if len(args) > len(rule.params) and not takes_more(rule.vjp):
        raise UnsupportedFeatureError(
            f"'{rule.name}' called with {len(args)} positional operands (a '*' spreading "
            f"them, or a function value) is not supported: srcgrad's rule for it takes "
            f"{len(rule.params)}. Pass them as written in the rule's signature "
            f"({rule.name}({', '.join(rule.params)})), or as one sequence where the function "
            f"takes one (max(xs)).")


def nondiff_guard(ctx, rule, what: str, operand, at):
    """``_rt.refuse_float_operand(operand, message)``: a statement of generated code for an
    operand the rule does not differentiate but which depends on the differentiated input.
    Whether it carries a gradient is known only at run time: an integer (``axis=axis`` in a
    helper differentiated with respect to all its parameters) carries none."""
    message = f"{ctx.user_location(at)}: {nondiff_message(rule, what)}"
    call = A.call(A.attr(ctx.rt, "refuse_float_operand"), A.deepcopy(operand),
                  A.const(message))
    return A.expr_stmt(call, at=at)


def nondiff_message(rule, what: str) -> str:
    """Why the operand ``what`` (a 1-based position or a quoted keyword) of a call of
    ``rule.fn`` depending on the differentiated input is refused; for a position its vjp
    takes through ``*args`` beyond those it differentiates (``math.hypot``'s seventeenth
    coordinate), how many it does."""
    message = (f"argument {what} of '{rule.name}' is not differentiable, but it depends on "
               f"the differentiated input.")
    if what.isdigit() and int(what) > len(rule.params) and rule.diff_args \
            and takes_more(rule.vjp):
        n = len(rule.diff_args)
        which = (("its first argument" if n == 1 else f"its first {n} arguments")
                 if rule.diff_args == tuple(range(n)) else
                 "arguments " + ", ".join(str(i + 1) for i in rule.diff_args))
        message += (f" srcgrad's rule for it differentiates {which} only: pass fewer, or "
                    f"register a rule of your own for a function calling it (@srcgrad.rule).")
    return message


@functools.lru_cache(maxsize=None)
def takes_more(vjp) -> bool:
    """Whether ``vjp`` takes any number of operands (``*args``)."""
    try:
        parameters = inspect.signature(vjp).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_POSITIONAL for p in parameters)
