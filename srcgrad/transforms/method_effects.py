"""One table of the methods that change their object in place (lists', dicts', sets',
numpy arrays', the in-place operators' special methods) and what else each does. The
analyses looking for such changes read a call's method by name, before names are resolved
(a same-named method of another class counted as a change costs a specialization or a
run-time check, never a gradient); each derives the set it needs from here."""
from __future__ import annotations

__all__ = ["CHANGING", "LENGTH_CHANGING", "HANDLED", "UNFOLLOWED", "LIST_UNFOLLOWED",
           "CHANGING_INSIDE", "IN_PLACE_OPERATORS"]

LENGTH = "length"  # changes a list's length: a loop over it sees that
RETURNS = "returns"  # returns a value (xs.pop()): rewritten only as a statement's value
LIST = "list"  # a list has it (an array's, a dict's or a set's otherwise)
HANDLED_HERE = "handled"  # desugar rewrites or refuses it itself, on a variable
NOT_FOLLOWED = "unfollowed"  # no rewrite follows it: refused on differentiable values
OPERATOR = "operator"  # an in-place operator's special method (a.__iadd__(v) is a += v)
SETATTR = "setattr"  # obj.__setattr__(name, v): recognised with setattr (attribute_store_of)

_EFFECTS: dict[str, frozenset[str]] = {name: frozenset(tags) for name, tags in {
    "append": {LENGTH, LIST, HANDLED_HERE},
    "extend": {LENGTH, LIST, HANDLED_HERE},
    "insert": {LENGTH, LIST, HANDLED_HERE},
    "pop": {LENGTH, LIST, RETURNS, HANDLED_HERE},
    "remove": {LENGTH, LIST, HANDLED_HERE, NOT_FOLLOWED},
    "clear": {LENGTH, LIST, HANDLED_HERE, NOT_FOLLOWED},
    "sort": {LIST, HANDLED_HERE, NOT_FOLLOWED},
    "reverse": {LIST, HANDLED_HERE},
    "update": {HANDLED_HERE},
    "setdefault": {RETURNS, HANDLED_HERE},
    "popitem": {RETURNS, HANDLED_HERE},
    "add": {HANDLED_HERE},
    "discard": {HANDLED_HERE},
    "__setitem__": {HANDLED_HERE},
    "__delitem__": set(),
    "fill": {HANDLED_HERE, NOT_FOLLOWED},
    "resize": {HANDLED_HERE, NOT_FOLLOWED},
    "put": {NOT_FOLLOWED},
    "itemset": {NOT_FOLLOWED},
    "partition": {NOT_FOLLOWED},
    "__iadd__": {OPERATOR},
    "__isub__": {OPERATOR},
    "__imul__": {OPERATOR},
    "__itruediv__": {OPERATOR},
    "__ifloordiv__": {OPERATOR},
    "__imod__": {OPERATOR},
    "__ipow__": {OPERATOR},
    "__imatmul__": {OPERATOR},
    "__setattr__": {SETATTR},
}.items()}


def _with(*tags: str, without: tuple = ()) -> frozenset[str]:
    return frozenset(name for name, has in _EFFECTS.items()
                     if set(tags) <= has and not has & set(without))


# every method here changes its object: called, or taken as a value (push = acc.append)
CHANGING = frozenset(_EFFECTS)
LENGTH_CHANGING = _with(LENGTH)
# those desugar rewrites or refuses itself when called on a variable (not a user's method)
HANDLED = _with(HANDLED_HERE)
# array and list methods changing their object that no rewrite follows
UNFOLLOWED = _with(NOT_FOLLOWED)
# those of them lists have too (keys.sort() is fine: decided on the values)
LIST_UNFOLLOWED = _with(NOT_FOLLOWED, LIST)
# changing methods rewritten only as statements of their own (xs.pop() has its own rules)
CHANGING_INSIDE = _with(without=(RETURNS, OPERATOR, SETATTR))
# in-place operators called as methods: no rewrite follows them (write a += v)
IN_PLACE_OPERATORS = _with(OPERATOR)
