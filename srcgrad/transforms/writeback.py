"""Guarantees afterwards: a helper whose call site takes back the containers it changes in
place (``Context.consumed``'s written-back parameters) returns them after its own result.

A helper that changes its caller's list or dict (``def push(stack, v): stack.append(v)``)
is rewritten, like every in-place update, as new values; Python would change the caller's
object, which the caller reads afterwards. So the call site asks for the new containers
back: ``r = push(xs, v)`` becomes ``_r, xs = push(xs, v); r = _r`` (desugar.write_back), and
this build of ``push`` returns ``(result, stack)`` from every ``return`` and at its end.
Python's other names for the caller's object (another variable, a container holding it)
would see the change too: desugar.hand_over's run-time check refuses those, as for a
handed-over argument.
"""
from __future__ import annotations

__all__ = ["augmented_only", "WRITTEN_BACK", "written_back", "writeback_mark", "writeback_parameters",
           "surely_mutated", "return_written_back", "same_object_mark", "kept_parameters",
           "merge_same_objects", "merged_parameters"]

import gast

from . import astutil as A
from .activity import mutated_parameters
from .context import Context

# the mark a written-back parameter's name carries in Context.consumed (not an identifier,
# so it never meets a parameter's own name there)
WRITTEN_BACK = "->"


def writeback_mark(param: str) -> str:
    return param + WRITTEN_BACK


# the mark of a parameter its call site passes the object of an earlier parameter (h(xs, xs))
SAME_OBJECT = "="


def same_object_mark(param: str, first: str) -> str:
    return param + SAME_OBJECT + first


def kept_parameters(tree: gast.FunctionDef) -> frozenset:
    """The parameters of ``tree`` that name their argument's object throughout: its own
    statements never bind them anew, no nested function or lambda reads them, and it is not
    a generator. Two of them passed one object (``h(xs, xs)``) are one name for it."""
    params = {a.id for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs
              if isinstance(a, gast.Name)}
    return writeback_parameters(tree, frozenset(params))


def merged_parameters(consumed) -> frozenset:
    """The parameters merge_same_objects reads through an earlier one's name (unread
    after it): no other name of the helper for the object they hold."""
    return frozenset(n.split(SAME_OBJECT, 1)[0] for n in consumed if SAME_OBJECT in n)


def merge_same_objects(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Guarantees afterwards: a parameter whose call site passes it the object of an earlier
    one (``same_object_mark`` in ``Context.consumed``: ``h(xs, xs)``) is read through that
    parameter's name, so an in-place change through either is one change of one value, as
    Python's helper sees one object through both. (The call site checked both are
    kept_parameters: each names that object throughout.)"""
    merged = dict(n.split(SAME_OBJECT, 1) for n in ctx.consumed if SAME_OBJECT in n)
    if not merged:
        return tree
    for node in A.own_nodes(tree):
        if isinstance(node, gast.Name) and node.id in merged \
                and not isinstance(node.ctx, gast.Param):
            node.id = merged[node.id]
    return tree


def written_back(consumed) -> tuple[str, ...]:
    """The parameters of ``consumed`` (Context.consumed) whose call site takes them back, in
    the order the helper returns them."""
    return tuple(sorted(n[:-len(WRITTEN_BACK)] for n in consumed if n.endswith(WRITTEN_BACK)))


def writeback_parameters(tree: gast.FunctionDef, changed: frozenset) -> frozenset:
    """The parameters of the function ``tree`` a call site may take back: ``changed``
    (those it surely changes in place, itself or through a helper it hands them to) that its
    own statements never bind anew (``xs = xs[1:]`` would return another list than the one
    Python changes), that no nested function or lambda reads, of a plain function (not a
    generator)."""
    return _takeable(tree, frozenset(changed), frozenset())


def augmented_only(tree: gast.FunctionDef) -> frozenset:
    """The parameters of ``tree`` its own statements change only by augmented assignment
    (``p -= e``): in place on an array or a list, which a call site may then take back
    (``writeback.conditional``), a new value on a number. None of a generator, nor read by
    a nested function or lambda."""
    augments = [n for n in A.own_nodes(tree) if isinstance(n, gast.AugAssign)]
    augmented = {n.target.id for n in augments if isinstance(n.target, gast.Name)}
    params = {a.id for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs
              if isinstance(a, gast.Name)}
    return _takeable(tree, frozenset(augmented & params),
                     frozenset(id(n.target) for n in augments))


def _takeable(tree: gast.FunctionDef, names: frozenset, allowed_stores: frozenset) -> frozenset:
    """``names`` less those ``tree``'s own statements bind (other than at the Name nodes whose
    ids are ``allowed_stores``) and those a nested function or lambda reads; none when
    ``tree`` is a generator."""
    if any(isinstance(n, (gast.Yield, gast.YieldFrom)) for n in A.own_nodes(tree)):
        return frozenset()
    rebound = {n.id for n in A.own_nodes(tree) if isinstance(n, gast.Name)
               and isinstance(n.ctx, (gast.Store, gast.Del)) and id(n) not in allowed_stores}
    nested = set()
    for node in gast.walk(tree):
        if isinstance(node, (gast.FunctionDef, gast.Lambda)) and node is not tree:
            nested |= {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    return names - rebound - nested


def surely_mutated(tree: gast.FunctionDef) -> frozenset:
    """``mutated_parameters`` without ``p += ...`` (on a number it rebinds ``p``: taking it
    back would change the caller's variable, which Python does not)."""
    return mutated_parameters(tree, augmented=False)


def _blocks(tree):
    """The statement lists of ``tree``'s own scope (not of nested functions)."""
    for node in A.own_nodes(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                yield block


def return_written_back(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Each ``return e`` of ``tree``'s own scope -> ``return (e, p1, ..., pk)`` for the
    written-back parameters, and ``return (None, p1, ..., pk)`` at its end."""
    names = written_back(ctx.consumed)
    if not names:
        return tree

    def packed(value, at):
        elts = [value if value is not None else A.const(None)] + [A.load(n) for n in names]
        return A.located(gast.Tuple(elts=elts, ctx=gast.Load()), at)

    for block in list(_blocks(tree)):  # (collected before they change)
        for k in reversed(range(len(block))):
            node = block[k]
            if isinstance(node, gast.Return) and any(
                    isinstance(n, (gast.Call, gast.NamedExpr)) for n in gast.walk(node.value)):
                # the value first, then the parameters as it left them (return xs.pop())
                value = ctx.namer.fresh("_value")
                block[k:k + 1] = [A.assign(value, node.value, at=node), node]
                node.value = packed(A.located(A.load(value), node), node)
            elif isinstance(node, gast.Return):  # (reading changes nothing: in place)
                node.value = packed(node.value, node)
    last = tree.body[-1]
    if not isinstance(last, gast.Return):
        # placed just past where the body ends: what reads the parameters comes after
        # every statement (desugar orders reads by position)
        end = gast.Return(value=None)
        end.lineno, end.col_offset = last.end_lineno, last.end_col_offset + 1
        end.end_lineno, end.end_col_offset = end.lineno, end.col_offset
        end.value = packed(None, end)
        tree.body.append(end)
    return tree
