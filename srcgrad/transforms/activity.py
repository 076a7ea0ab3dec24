"""Guarantees afterwards: ``ctx.varied`` holds the names that depend on the ``wrt`` inputs and
``ctx.active`` those that also reach the returned value through differentiable operations.

Flow-insensitive over names: a name is active if any of its definitions is. Only active
names get adjoints; everything else is plain forward code.
"""
from __future__ import annotations

import re

import gast

from ..rules import lookup
from .binding import bind_rule_call
from .context import Context

_NONDIFF_EXPR = (gast.Compare, gast.BoolOp)

# A generated sweep names its branch decisions _c<N> and its trip counts _n<N>: booleans and
# integers, never differentiable, though they travel on tapes whose other entries are.
_DISCRETE = re.compile(r"_[cn]\d+(_\d+)*")


def _discrete_names(defs, ctx: Context) -> set[str]:
    if not ctx.src.filename.startswith("<srcgrad"):
        return set()
    return {n for targets, _ in defs for n in targets if _DISCRETE.fullmatch(n)}


def definitions(tree, local_names=None):
    """``(targets, value_node)`` for each place a name gets a value."""
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign):
            targets = set()
            for t in node.targets:
                targets |= _target_names(t)
            yield targets, node.value
        elif isinstance(node, gast.AugAssign):
            yield _target_names(node.target), node
        elif isinstance(node, gast.AnnAssign) and node.value is not None:
            yield _target_names(node.target), node.value
        elif isinstance(node, (gast.For, gast.comprehension)):
            yield _target_names(node.target), node.iter
        elif isinstance(node, gast.NamedExpr):
            yield _target_names(node.target), node.value
        elif isinstance(node, gast.Match):  # case [a, *rest]: binds parts of the subject
            yield match_bindings(node), node.subject
        elif isinstance(node, gast.Expr) and isinstance(node.value, gast.Call):
            # mutating method calls: lst.append(v), x.extend(...), d.update(...)
            func = node.value.func
            if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and (
                    local_names is None or func.value.id in local_names):
                yield {func.value.id}, node.value


def match_bindings(node) -> set[str]:
    """Names the patterns of a match statement bind."""
    return {n.name for n in gast.walk(node) if isinstance(n, (gast.MatchAs, gast.MatchStar))
            and n.name is not None} | {n.rest for n in gast.walk(node)
                                       if isinstance(n, gast.MatchMapping) and n.rest}


def _target_names(t) -> set[str]:
    if isinstance(t, gast.Name):
        return {t.id}
    if isinstance(t, (gast.Tuple, gast.List)):
        out = set()
        for e in t.elts:
            out |= _target_names(e)
        return out
    if isinstance(t, (gast.Subscript, gast.Attribute, gast.Starred)):
        return _target_names(t.value)
    return set()


def _reads(value, ctx: Context, precise: bool) -> set[str]:
    if precise:
        if isinstance(value, _NONDIFF_EXPR):
            return set()
        if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.Not):
            return set()
        if isinstance(value, gast.Call):
            r = ctx.resolved.get(id(value))
            if r is not None and r.kind == "nondiff":
                return set()
            if r is not None and r.kind == "rule" and ctx.own_code:
                reads = _differentiated_reads(value, r.obj)
                if reads is not None:
                    return reads
        if isinstance(value, gast.Attribute):
            r = ctx.resolved.get(id(value))
            if r is not None and r.kind == "nondiff":
                return set()
    return {n.id for n in gast.walk(value)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _differentiated_reads(call: gast.Call, fn) -> set[str] | None:
    """The names a call of a rule's function reads in its callee and at the positions the
    rule differentiates; None when the operands cannot be bound statically (``*args``,
    ``**kwargs``).

    Only for srcgrad's own code (a generated sweep differentiated again), which passes values
    to a rule's other positions only for their shapes or structure (``expand_to(b_t2, _t1)``,
    ``unbroadcast(g, x)``): reverse mode gives those operands no gradient there (no
    nondiff_guard), so a value computed from one alone is no more differentiable than one
    computed from a constant. Without this, a seed spread over a saved array's shape made
    the spread active, and the callee it was passed to was differentiated with respect to
    it: the cotangents of a gradient's seed, computed and then dropped, at every order."""
    rule = lookup(fn)
    if rule is None or any(isinstance(a, gast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return None
    bound = bind_rule_call(rule, list(call.args), {k.arg: k.value for k in call.keywords})
    reads = set()
    for node in [call.func] + [a for _, _, a, _ in bound.diff]:
        reads |= {n.id for n in gast.walk(node)
                  if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    return reads


def varied_names(tree, ctx: Context, precise: bool = False) -> set[str]:
    """Names whose value may depend on a wrt parameter."""
    defs = [(targets, _reads(value, ctx, precise))
            for targets, value in definitions(tree, ctx.local_names)]
    varied = set(ctx.wrt_names)
    discrete = _discrete_names(defs, ctx)
    changed = True
    while changed:
        changed = False
        for targets, reads in defs:
            if reads & varied and not targets <= varied | discrete:
                varied |= targets - discrete
                changed = True
    return varied


def useful_names(tree, ctx: Context, results: set[str]) -> set[str]:
    """Names that can influence ``results`` through differentiable operations."""
    defs = [(targets, _reads(value, ctx, True))
            for targets, value in definitions(tree, ctx.local_names)]
    useful = set(results)
    changed = True
    while changed:
        changed = False
        for targets, reads in defs:
            if targets & useful and not reads <= useful:
                useful |= reads
                changed = True
    return useful


def mark_varied(tree, ctx: Context):
    """Pre-pass on the user's tree: over-approximate which names depend on wrt."""
    ctx.varied = varied_names(tree, ctx, precise=False)
    return tree


def mark_active(tree, ctx: Context, results: set[str]):
    """Exact pass on the normalized tree: varied and useful."""
    ctx.varied = varied_names(tree, ctx, precise=True)
    ctx.active = ctx.varied & useful_names(tree, ctx, results)
    return tree


# methods that change their receiver in place (lists, dicts, sets, arrays)
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "popitem", "sort", "reverse", "fill", "put", "resize",
                       "itemset", "add", "discard", "__setitem__", "__delitem__"})


def _set_object(call) -> str | None:
    """The variable whose object ``setattr(p, ...)``, ``object.__setattr__(p, ...)`` or
    ``p.__setattr__(...)`` changes, else None."""
    func = call.func
    if isinstance(func, gast.Name) and func.id == "setattr" and call.args:
        return _root_name(call.args[0])
    if isinstance(func, gast.Attribute) and func.attr == "__setattr__":
        if isinstance(func.value, gast.Name) and func.value.id == "object" and call.args:
            return _root_name(call.args[0])
        return _root_name(func.value)
    return None


# numpy functions writing into their first argument (``np.copyto(p, v)``), read by name:
# these analyses run before names are resolved, and counting a same-named function of
# another module as a change only costs a specialization, never a gradient
_WRITES_FIRST_ARGUMENT = frozenset({"copyto", "put", "place", "putmask", "put_along_axis",
                                    "fill_diagonal", "shuffle", "at"})


def _changed_by_call(call) -> set:
    """The variables whose objects ``call`` may change in place: ``p.append(...)``-like
    methods, ``setattr(p, ...)``, numpy's writing functions (``np.copyto(p, v)``,
    ``np.add.at(p, i, v)``) and ``out=p``."""
    func = call.func
    changed = {_set_object(call)}
    if isinstance(func, gast.Attribute) and func.attr in _MUTATORS:
        changed.add(_root_name(func.value))
    name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", None)
    if name in _WRITES_FIRST_ARGUMENT and call.args:
        changed.add(_root_name(call.args[0]))
    for k in call.keywords:
        if k.arg == "out":
            outs = k.value.elts if isinstance(k.value, (gast.Tuple, gast.List)) else [k.value]
            changed.update(_root_name(o) for o in outs)
    return changed


def _root_name(node) -> str | None:
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def changed_parameters(tree: gast.FunctionDef) -> frozenset[str]:
    """Parameters the function rebinds or changes in place (``p = ...``, ``p[i] = ...``,
    ``p.attr = ...``, ``p.append(...)``): such a parameter can become differentiable inside
    the function even when its argument is not, so a call site never specializes it away."""
    params = {a.id for a in tree.args.args + tree.args.posonlyargs + tree.args.kwonlyargs
              if isinstance(a, gast.Name)}
    changed = set()
    for node in gast.walk(tree):
        if isinstance(node, (gast.Name, gast.Subscript, gast.Attribute)) \
                and isinstance(node.ctx, (gast.Store, gast.Del)):
            changed.add(_root_name(node))
        elif isinstance(node, gast.Call):
            changed |= _changed_by_call(node)
    return frozenset(changed & params)


def mutated_parameters(tree: gast.FunctionDef, augmented: bool = True) -> frozenset[str]:
    """Parameters whose object the function changes in place (``p[i] = ...``, ``p.a = ...``,
    ``p += ...`` on an array, ``p.append(...)``): the caller sees those changes. Without
    ``augmented``, ``p += ...`` does not count: on a number it rebinds ``p``, and only the
    argument's value tells."""
    params = {a.id for a in tree.args.args + tree.args.posonlyargs + tree.args.kwonlyargs
              if isinstance(a, gast.Name)}
    changed = set()
    for node in gast.walk(tree):
        if isinstance(node, (gast.Subscript, gast.Attribute)) \
                and isinstance(node.ctx, (gast.Store, gast.Del)):
            changed.add(_root_name(node))
        elif augmented and isinstance(node, gast.AugAssign) \
                and isinstance(node.target, gast.Name):
            changed.add(node.target.id)
        elif isinstance(node, gast.Call):
            changed |= _changed_by_call(node)
    return frozenset(changed & params)
