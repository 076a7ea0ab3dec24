"""Guarantees afterwards: ``ctx.varied`` holds the names that depend on the ``wrt`` inputs and
``ctx.active`` those that also reach the returned value through differentiable operations.

Flow-insensitive over names: a name is active if any of its definitions is. Only active
names get adjoints; everything else is plain forward code.
"""
from __future__ import annotations

import re

import gast

from ..rules import lookup
from .astutil import setattr_arguments
from .binding import bind_rule_call
from .context import Context
from .method_effects import CHANGING

_NONDIFF_EXPR = (gast.Compare, gast.BoolOp)

# A generated sweep names its branch decisions _c<N> and its trip counts _n<N>: booleans and
# integers, never differentiable, though they travel on tapes whose other entries are.
_DISCRETE = re.compile(r"_[cn]\d+(_\d+)*")


def rename_decision_like(tree: gast.FunctionDef) -> list:
    """Rename the user's variables named like a generated sweep's decisions or trip counts
    (``_c1``, ``_n2``: _DISCRETE) to ``_c1v``...: a second derivative differentiates the
    generated sweep, whose variables they become, and would take them for booleans and
    integers (no derivative: silently wrong). Every ``Name`` of the id is renamed, nested
    scopes alike; a parameter keeps its name in the signature and is copied to the new name
    first (``_c1v = _c1``: a parameter is no definition there). Returns the nodes that
    cannot be renamed (a name declared global or nonlocal, or also a keyword argument's
    name) for a refusal."""
    stored = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
              and not isinstance(n.ctx, gast.Load) and _DISCRETE.fullmatch(n.id)}
    if not stored:
        return []
    args = tree.args
    params = [a for a in args.posonlyargs + args.args + args.kwonlyargs
              + [args.vararg, args.kwarg] if a is not None]
    fixed = {n for node in gast.walk(tree) if isinstance(node, (gast.Global, gast.Nonlocal))
             for n in node.names} | {k.arg for node in gast.walk(tree)
                                     if isinstance(node, gast.Call) for k in node.keywords}
    taken = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}
    kept = [n for n in gast.walk(tree) if isinstance(n, gast.Name) and n.id in stored
            and n.id in fixed]
    new = {}
    for name in sorted(stored - fixed):
        renamed = name + "v"
        while renamed in taken:
            renamed += "v"
        taken.add(renamed)
        new[name] = renamed
    signature = {id(a) for a in params}
    for node in gast.walk(tree):
        if isinstance(node, gast.Name) and node.id in new and id(node) not in signature:
            node.id = new[node.id]
    tree.body[:0] = [gast.copy_location(gast.Assign(
        targets=[gast.Name(id=new[a.id], ctx=gast.Store(), annotation=None,
                           type_comment=None)],
        value=gast.Name(id=a.id, ctx=gast.Load(), annotation=None, type_comment=None),
        type_comment=None), tree.body[0]) for a in params if a.id in new]
    return kept


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
            stored = setattr_arguments(node.value)
            if stored:  # setattr(m, "W", v), object.__setattr__(m, "W", v): m's value
                yield {n for n in _target_names(stored[0])
                       if local_names is None or n in local_names}, node.value
            elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and (
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


# numpy functions writing into their first argument (``np.copyto(p, v)``), read by name:
# these analyses run before names are resolved, and counting a same-named function of
# another module as a change only costs a specialization, never a gradient
_WRITES_FIRST_ARGUMENT = frozenset({
    "copyto", "put", "place", "putmask", "put_along_axis", "fill_diagonal", "shuffle", "at",
    "heappush", "heappop", "heapify", "heapreplace", "heappushpop", "insort", "insort_left",
    "insort_right", "setitem", "delitem", "iadd", "isub", "imul", "itruediv", "ifloordiv",
    "imod", "ipow", "imatmul", "iconcat"})


def _changed_by_call(call) -> set:
    """``(name, depth)`` (``_root_and_depth``, the object changed counting as one level) for
    the objects ``call`` may change in place: ``p.append(...)``-like methods, ``setattr(p,
    ...)``, numpy's writing functions (``np.copyto(p, v)``, ``np.add.at(p, i, v)``) and
    ``out=p``."""
    func = call.func
    changed = set()
    stored = setattr_arguments(call)
    if stored:
        changed.add(_deeper(stored[0]))
    if isinstance(func, gast.Attribute) and func.attr in CHANGING:
        changed.add(_deeper(func.value))
    name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", None)
    if name in _WRITES_FIRST_ARGUMENT and call.args:
        changed.add(_deeper(call.args[0]))
    for k in call.keywords:
        if k.arg == "out":
            outs = k.value.elts if isinstance(k.value, (gast.Tuple, gast.List)) else [k.value]
            changed.update(_deeper(o) for o in outs)
    return changed


def _deeper(node) -> tuple[str | None, int]:
    """The root and depth of a store into the object ``node`` is (one level below it)."""
    root, depth = _root_and_depth(node)
    return root, depth + 1


def changed_parameters(tree: gast.FunctionDef) -> frozenset[str]:
    """Parameters the function rebinds or changes in place (``p = ...``, ``p[i] = ...``,
    ``p.attr = ...``, ``p.append(...)``, also through another name: ``_objects_changed``):
    such a parameter can become differentiable inside the function even when its argument is
    not, so a call site never specializes it away."""
    params = _parameter_names(tree)
    rebound = {node.id for node in gast.walk(tree)
               if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del))}
    return frozenset((rebound & params) | _objects_changed(tree, params, augmented=False))


def mutated_parameters(tree: gast.FunctionDef, augmented: bool = True) -> frozenset[str]:
    """Parameters whose object the function changes in place (``p[i] = ...``, ``p.a = ...``,
    ``p += ...`` on an array, ``p.append(...)``, ``np.copyto(p, v)``, also through another
    name: ``_objects_changed``): the caller sees those changes. Without ``augmented``, ``p +=
    ...`` does not count: on a number it rebinds ``p``, and only the argument's value tells.
    ``*args`` and ``**kwargs`` count by their own names."""
    return frozenset(_objects_changed(tree, _parameter_names(tree), augmented)
                     | _changed_through_super(tree))


def _changed_through_super(tree) -> set[str]:
    """The first parameter (self) of a method calling ``super().__init__(...)``, which
    changes self (storing ``self.w``): the caller takes back self then, and the call's own
    check asks the parent's method (runtime.refuse_changing_method). Before, a subclass's
    ``__init__`` doing nothing else ran as plain Python: its fields' gradients were lost.
    (Another method of the parent's called through super() has no rule: refused as such.)"""
    params = tree.args.posonlyargs + tree.args.args
    if not params or not isinstance(params[0], gast.Name):
        return set()
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                and isinstance(node.func.value, gast.Call) \
                and isinstance(node.func.value.func, gast.Name) \
                and node.func.value.func.id == "super" and not node.func.value.args \
                and node.func.attr == "__init__":
            return {params[0].id}
    return set()


def _parameter_names(tree) -> set[str]:
    a = tree.args
    return {p.id for p in a.args + a.posonlyargs + a.kwonlyargs + [a.vararg, a.kwarg]
            if isinstance(p, gast.Name)}


# Calls whose result is, or holds, an object its argument holds: numpy's views, Python's
# iteration helpers and new containers of the same items. Read by name, like
# _WRITES_FIRST_ARGUMENT: a same-named function elsewhere costs a specialization only.
_SHARING_FUNCTIONS = frozenset({
    "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "reshape", "ravel",
    "transpose", "matrix_transpose", "permute_dims", "squeeze", "expand_dims", "atleast_1d",
    "atleast_2d", "atleast_3d", "swapaxes", "moveaxis", "broadcast_to", "diagonal", "real",
    "imag", "flip", "fliplr", "flipud", "rot90", "split", "array_split", "hsplit", "vsplit",
    "dsplit", "unstack", "enumerate", "zip", "reversed", "iter", "next", "list", "tuple",
    "sorted", "dict", "vars", "getattr", "copy", "filter", "map", "chain"})
# Methods whose result holds nothing of the receiver's (numpy's copies and reductions,
# containers' counts); any other method's result (m.layer(0), p.reshape(...), d.values())
# may be an object the receiver holds.
_FRESH_METHODS = frozenset({
    "copy", "astype", "tolist", "item", "sum", "mean", "prod", "max", "min", "std", "var",
    "dot", "cumsum", "cumprod", "round", "clip", "conj", "conjugate", "any", "all", "argmax",
    "argmin", "argsort", "nonzero", "count", "index", "trace", "ptp", "tobytes", "deepcopy"})


def shared_roots(value) -> set[str]:
    """The names whose objects (or objects they hold) ``value`` may be or hold."""
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, (gast.Subscript, gast.Attribute, gast.Starred)):
        return shared_roots(value.value)
    if isinstance(value, (gast.Tuple, gast.List, gast.Set)):
        return set().union(*[shared_roots(e) for e in value.elts]) if value.elts else set()
    if isinstance(value, gast.Dict):
        return set().union(set(), *[shared_roots(v) for v in value.values])
    if isinstance(value, gast.IfExp):
        return shared_roots(value.body) | shared_roots(value.orelse)
    if isinstance(value, gast.BoolOp):
        return set().union(*[shared_roots(v) for v in value.values])
    if isinstance(value, gast.NamedExpr):
        return shared_roots(value.value)
    if isinstance(value, gast.Call):
        func = value.func
        if isinstance(func, gast.Attribute) and func.attr not in _FRESH_METHODS:
            out = shared_roots(func.value)
        else:
            out = set()
        name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", None)
        if name in _SHARING_FUNCTIONS:
            for a in value.args:
                out |= shared_roots(a)
        return out
    return set()


def _objects_changed(tree, params: set[str], augmented: bool) -> set[str]:
    """The parameters whose objects, or objects they hold, the function may change in place:
    through the parameter itself, or through any name bound to one of those objects (``b =
    p``, a view ``b = p[:2]``, ``b = p.T``, a row ``for row in p``, an item ``w = p["W"]``,
    ``b = vars(p)``), or to a new container of its items (``q = list(p)``, ``q = p.copy()``:
    changing ``q[0][1]`` changes an item of ``p``; changing ``q[0]`` does not). An
    over-approximation: a name counted that is not a view only costs a specialization."""
    return {root for _, root, _ in object_changes(tree, params, augmented)}


def object_changes(tree, roots: set[str], augmented: bool = True) -> list:
    """``(node, root, name)`` for each ``node`` of ``tree`` that may change in place an
    object of the variable ``root`` (or one it holds), through the variable ``name`` (root
    itself, or a name bound to its objects: see ``_objects_changed``)."""
    shares, copies = _sharing_names(tree, roots)
    out = []
    for node in gast.walk(tree):
        for name, depth in _changed_objects(node, augmented):
            reached = shares.get(name, set()) | (copies.get(name, set()) if depth >= 2
                                                  else set())
            out += [(node, root, name) for root in sorted(reached & roots)]
    return out


def methods_called(tree, roots: set[str]) -> dict[str, set[str]]:
    """For each of ``roots``, the names of the methods ``tree`` calls on its object
    (``m.set_w(v)``): whether one changes that object depends on its class, which only the
    caller or the run time may know (runtime.refuse_changing_method)."""
    out: dict[str, set[str]] = {}
    for call in gast.walk(tree):
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                and isinstance(call.func.value, gast.Name) and call.func.value.id in roots:
            out.setdefault(call.func.value.id, set()).add(call.func.attr)
    return out


def sharing(tree, roots: set[str]) -> dict[str, set[str]]:
    """For each name of ``tree``, the ``roots`` whose objects it may be or hold, itself or
    through a new container of their items (``_sharing_names``)."""
    shares, copies = _sharing_names(tree, roots)
    return {n: shares.get(n, set()) | copies.get(n, set()) for n in shares.keys() | copies}


def methods_reached(tree, roots: set[str]) -> dict[str, set[str]]:
    """For each of ``roots``, the names of the methods ``tree`` calls on an object its
    object holds or may be, other than itself: through a path (``m.sub.set_w(v)``,
    ``d["s"].set_w(v)``), a name bound to such an object (``w = m.sub; w.set_w(v)``) or a
    loop over its items (``for s in ms: s.set_w(v)``). Which object that is, only the run
    time knows (runtime.refuse_changing_method_within asks every object ``root`` reaches)."""
    held = sharing(tree, roots)
    rebound = {n.id for n in gast.walk(tree)
               if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del))}
    out: dict[str, set[str]] = {}
    for call in gast.walk(tree):
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)):
            continue
        receiver = call.func.value
        for name in shared_roots(receiver):
            reached = held.get(name, set()) & roots
            if isinstance(receiver, gast.Name) and receiver.id in roots - rebound:
                reached = reached - {receiver.id}  # (itself: methods_called)
            for root in reached:
                out.setdefault(root, set()).add(call.func.attr)
    return out


def _sharing_names(tree, roots: set[str]) -> tuple[dict, dict]:
    """``(shares, copies)``: for each name of ``tree``, the ``roots`` whose objects it may be
    or hold, and those whose items a new container it names holds."""
    shares = {r: {r} for r in roots}  # name -> the roots whose objects it may be or hold
    copies: dict[str, set] = {}  # name -> the roots whose items its new container holds
    bindings = []
    for node in gast.walk(tree):
        if isinstance(node, (gast.Assign, gast.AnnAssign, gast.NamedExpr)) \
                and node.value is not None:
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            bindings += [(_bound_names(t), node.value, False) for t in targets]
        elif isinstance(node, (gast.For, gast.comprehension)):
            bindings.append((_bound_names(node.target), node.iter, True))
        elif isinstance(node, gast.withitem) and node.optional_vars is not None:
            bindings.append((_bound_names(node.optional_vars), node.context_expr, False))
    grown = True
    while grown:
        grown = False
        for names, value, items in bindings:
            sources = shared_roots(value)
            found = set().union(set(), *[shares.get(r, ()) for r in sources])
            held = set().union(set(), *[copies.get(r, ()) for r in sources])
            if items:  # a loop target is an item: of a copy, an item of the original
                found |= held
                held = set()
            elif _new_container_of_items(value):
                held |= found
                found = set()
            for n in names:
                if not found <= shares.get(n, set()) or not held <= copies.get(n, set()):
                    shares.setdefault(n, set()).update(found)
                    copies.setdefault(n, set()).update(held)
                    grown = True
    return shares, copies


def _bound_names(target) -> set[str]:
    """The variables a target binds (``a``, ``a, *b``), not those it stores into (``p[0]``,
    ``p.W``: a change of ``p``, found as one)."""
    if isinstance(target, gast.Name):
        return {target.id}
    if isinstance(target, gast.Starred):
        return _bound_names(target.value)
    if isinstance(target, (gast.Tuple, gast.List)):
        return set().union(set(), *[_bound_names(e) for e in target.elts])
    return set()


def _new_container_of_items(value) -> bool:
    """``list(p)``, ``tuple(p)``, ``sorted(p)``, ``dict(p)``, ``copy.copy(p)``, ``p.copy()``,
    ``p[:]`` of a list... a new container: changing it does not change ``p``, changing an item
    of it does."""
    if isinstance(value, gast.Call):
        func = value.func
        name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", None)
        return name in ("list", "tuple", "sorted", "dict", "copy", "set", "frozenset")
    return isinstance(value, (gast.List, gast.Tuple, gast.Set, gast.Dict))


def _changed_objects(node, augmented: bool):
    """``(name, depth)`` for each object ``node`` changes in place, reached from the variable
    ``name`` through ``depth`` subscripts or attributes (``b[0][1] = v``: b, 2)."""
    if isinstance(node, (gast.Subscript, gast.Attribute)) \
            and isinstance(node.ctx, (gast.Store, gast.Del)):
        yield _root_and_depth(node)
    elif augmented and isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
        yield node.target.id, 0
    elif isinstance(node, gast.Call):
        for changed in _changed_by_call(node):
            yield changed



def _root_and_depth(node) -> tuple[str | None, int]:
    depth = 0
    while True:
        if isinstance(node, (gast.Subscript, gast.Attribute)):
            node, depth = node.value, depth + 1
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "vars" and len(node.args) == 1:
            node = node.args[0]  # vars(m)["W"] = v changes m
        else:
            return (node.id if isinstance(node, gast.Name) else None), depth
