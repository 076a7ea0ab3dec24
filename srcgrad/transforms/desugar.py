"""Guarantees afterwards: no augmented, chained or unpacking assignments; no comprehensions;
no in-place mutation of values that depend on wrt (subscript stores and list methods become
functional updates through runtime helpers); loops over varied sequences iterate indices.
"""
from __future__ import annotations

import bisect
import copy
import dataclasses
import heapq
import inspect
import operator
import random
import types

import gast
import numpy as np

from . import astutil as A
from ..codegen import to_source
from ..errors import InternalError
from .. import runtime
from ..runtime import function_reads
from ..rules import lookup
from .astutil import own_nodes
from .activity import (match_bindings, methods_called, methods_reached, mutated_parameters,
                       object_changes)
from .anf import is_static_ref
from .context import Context
from .method_effects import (CHANGING, CHANGING_INSIDE, HANDLED, IN_PLACE_OPERATORS,
                             LENGTH_CHANGING, LIST_UNFOLLOWED, UNFOLLOWED)
from .gradient_calls import is_maker
from .helper_calls import library_file, methods_on_parameters, source_tree, user_calls
from .gradient_values import call_gradients_where_called
from .iterator_idioms import (accumulate_statements, flattened, is_none, islice_subscript,
                              iterator_kind, keyword, product_comprehension)
from .resolve import known_value, static_value
from .validate import is_no_grad_block
from .writeback import (augmented_only, kept_parameters, merged_parameters, same_object_mark, surely_mutated,
                        writeback_mark, writeback_parameters)

_LIST_METHODS = {"append": "list_append", "extend": "list_extend", "insert": "list_insert",
                 "reverse": "list_reverse"}


def desugar(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    _positional_start(tree, ctx)
    lower_generator(tree, ctx)
    call_gradients_where_called(tree, ctx)
    lift_closures(tree, ctx)
    desugaring = _Desugar(ctx, tree)
    tree.body = desugaring.entry_guards(tree) + desugaring.block(tree.body)
    _explicit_super(tree)  # (after the checks, which take super() for no variable's read)
    return tree



def _positional_start(tree, ctx: Context) -> None:
    """``enumerate(xs, start=k)`` as ``enumerate(xs, k)``, the form the loop lowering knows
    (with the keyword, a loop over differentiable values was refused as constructing an
    enumerate object)."""
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "enumerate" and len(node.args) == 1 \
                and [k.arg for k in node.keywords] == ["start"]:
            plain = A.call("enumerate", *node.args)
            if _builtin_call(plain, ctx) == "enumerate":  # (not a function of the user's)
                node.args = node.args + [node.keywords[0].value]
                node.keywords = []


def _explicit_super(tree) -> None:
    """``super()`` in a method as ``super(__class__, self)``: Python's form without
    arguments takes the generated function's first parameter, which is not self in a jvp
    (``__init___jvp(dw, self, w)``: a TypeError)."""
    params = tree.args.posonlyargs + tree.args.args
    if not params or not isinstance(params[0], gast.Name):
        return
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "super" and not node.args and not node.keywords:
            node.args = [A.located(A.load("__class__"), node),
                         A.located(A.load(params[0].id), node)]


def _rebound_names(stmts) -> set[str]:
    """Names the statements bind anew (``x = ...``, a loop target), not those they update
    with ``x += ...``, which on an array changes the object a loop is iterating."""
    out = set()
    for stmt in stmts:
        for node in gast.walk(stmt):
            if isinstance(node, gast.Assign):
                out |= {n.id for t in node.targets for n in gast.walk(t)
                        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
            elif isinstance(node, (gast.For, gast.comprehension)):
                out |= {n.id for n in gast.walk(node.target) if isinstance(n, gast.Name)}
            elif isinstance(node, gast.NamedExpr):
                out.add(node.target.id)
    return out


_ITERATOR_BUILTINS = {"zip", "enumerate", "reversed"}  # (those _builtin_call knows)


def _changed_in_place(fn, name: str):
    """The first node of ``fn`` changing the object ``name`` holds in place (a list
    method, an element store or augmented element store), or None."""
    for node in gast.walk(fn):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                and isinstance(node.func.value, gast.Name) and node.func.value.id == name \
                and node.func.attr in HANDLED:
            return node
        targets = node.targets if isinstance(node, gast.Assign) else \
            [node.target] if isinstance(node, gast.AugAssign) else []
        for t in targets:
            if isinstance(t, (gast.Subscript, gast.Attribute)) and _root(t) == name:
                return node
    return None


def _length_changed(stmts, names) -> list[str]:
    """Those of ``names`` whose list the statements may lengthen or shorten in place
    (``xs.append(v)``, ``xs.pop()``, ``xs += [v]``, ``xs[1:] = ...``), which a loop over
    ``xs`` sees."""
    out = []
    for stmt in stmts:
        for node in gast.walk(stmt):
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                    and isinstance(node.func.value, gast.Name) \
                    and node.func.attr in LENGTH_CHANGING:
                out.append(node.func.value.id)
            elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name) \
                    and isinstance(node.value, (gast.List, gast.ListComp, gast.Tuple)):
                out.append(node.target.id)
            elif isinstance(node, gast.Assign):
                out += [t.value.id for t in node.targets if isinstance(t, gast.Subscript)
                        and isinstance(t.value, gast.Name) and isinstance(t.slice, gast.Slice)]
    return [n for n in dict.fromkeys(out) if n in names]


def _start(node) -> tuple | None:
    line = getattr(node, "lineno", None)
    return None if line is None else (line, getattr(node, "col_offset", 0) or 0)


def _end(node) -> tuple | None:
    line = getattr(node, "end_lineno", None)
    return None if line is None else (line, getattr(node, "end_col_offset", 0) or 0)


_MUTATED: dict = {}
_STARRED = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS  # (*args, **kwargs: fixed-arity adapters)


def _mutated_parameters(fn, depth: int = 0, find=mutated_parameters, cache=_MUTATED
                        ) -> frozenset:
    """The parameters ``fn`` updates in place (activity.mutated_parameters of its source;
    ``find``), or passes to a function of the user's that does (``a = step(a, g)``), once
    per code object; none when its source cannot be read."""
    code = fn.__code__
    known = cache.get(code)
    if known is not None:
        return known
    cache[code] = frozenset()  # (recursion)
    tree = source_tree(fn)
    if tree is None:
        return frozenset()
    out = set(find(tree))
    own = A.parameters_of(fn)
    params = {*own, own.vararg, own.kwarg} - {None}
    if find is mutated_parameters or find is surely_mutated:
        out |= _changed_by_methods(fn, tree, params)
    for call, callee in user_calls(fn, tree) if depth < 8 else ():
        inner = _mutated_parameters(callee, depth + 1, find, cache)
        names = A.parameters_of(callee)
        out |= {arg.id for i, arg in A.bind_arguments(names, 0, call) or []
                if isinstance(arg, gast.Name) and arg.id in params and names[i] in inner}
        out |= {n for n in _gathered_names(names, call, inner) if n in params}
    known = cache[code] = frozenset(out)
    return known


def _changed_by_methods(fn, tree, params: set[str]) -> set[str]:
    """The parameters ``p`` of ``fn`` on which it calls ``p.method(...)`` where a class of the
    user's that ``fn`` can name has a method of that name changing its object
    (``changes_self``): the parameter's class is not known here, so any such class counts
    (``m.set_w(v)`` inside a helper, its value unread by the caller, ran as plain Python and
    lost the change's gradient). Library classes' methods do not count (``rs.randn(3)``)."""
    calls = [(call.func.value.id, call.func.attr) for call in gast.walk(tree)
             if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
             and isinstance(call.func.value, gast.Name) and call.func.value.id in params]
    if not calls:
        return set()
    classes = [v for v in fn.__globals__.values() if isinstance(v, type)
               and (getattr(v, "__module__", None) or "").split(".")[0] not in _LIBRARIES
               and v.__module__ != "builtins"]
    return {name for name, method in calls
            if any(changes_self(cls, method, set()) for cls in classes)}


def _gathered_names(params, call, changed) -> set[str]:
    """The variables a call passes into ``*args`` or ``**kwargs`` (or through an unpacking,
    which may reach any parameter) of a function that changes that parameter in place
    (``changed``: its mutated parameters)."""
    out = set()
    unpacked = any(isinstance(a, gast.Starred) for a in call.args) \
        or any(k.arg is None for k in call.keywords)
    if unpacked and changed or params.vararg in changed:
        out |= {a.id for a in call.args[params.positional if not unpacked else 0:]
                if isinstance(a, gast.Name)}
        out |= {a.value.id for a in call.args
                if isinstance(a, gast.Starred) and isinstance(a.value, gast.Name)}
    if unpacked and changed or params.kwarg in changed:
        out |= {k.value.id for k in call.keywords
                if (k.arg is None or k.arg not in params) and isinstance(k.value, gast.Name)}
    return out


_ITEMS_UPDATED: dict = {}
_ARRAY_ITEMS_UPDATED: dict = {}
_SURELY_MUTATED: dict = {}
_TAKEN_BACK: dict = {}


def _taken_back(fn) -> frozenset:
    """The parameters of ``fn`` a call site may take back (writeback.writeback_parameters:
    changed in place by ``fn`` or a helper it hands them to, never rebound), once per code
    object."""
    known = _TAKEN_BACK.get(fn.__code__)
    if known is None:
        tree = source_tree(fn)
        known = frozenset() if tree is None else writeback_parameters(
            tree, _mutated_parameters(fn, 0, surely_mutated, _SURELY_MUTATED)) \
            | augmented_only(tree)
        _TAKEN_BACK[fn.__code__] = known
    return known


def _rebinds_numbers(fn) -> frozenset:
    """The parameters of ``fn`` a call site takes back (``_taken_back``) that it changes by
    augmented assignment alone: Python changes the caller's object only when it has an
    in-place operator."""
    tree = source_tree(fn)
    if tree is None:
        return frozenset()
    return augmented_only(tree) - _mutated_parameters(fn, 0, surely_mutated, _SURELY_MUTATED)



_KEPT: dict = {}


def _kept(fn) -> frozenset:
    """writeback.kept_parameters of ``fn``, once per code object (none without source)."""
    known = _KEPT.get(fn.__code__)
    if known is None:
        tree = source_tree(fn)
        known = frozenset() if tree is None else kept_parameters(tree)
        _KEPT[fn.__code__] = known
    return known


def _same_objects(fn, params: list, bound: list) -> dict[str, list[str]]:
    """For each variable ``bound`` passes to several parameters of ``fn`` (``h(xs, xs)``)
    all of which name their object throughout (_kept), those parameters in order: the
    helper's build reads them all through the first (writeback.merge_same_objects)."""
    by_name: dict[str, list[str]] = {}
    for i, arg in bound:
        if isinstance(arg, gast.Name):
            by_name.setdefault(arg.id, []).append(params[i])
    kept = _kept(fn)
    return {n: ps for n, ps in by_name.items() if len(ps) > 1 and set(ps) <= kept}


def _same_object_marks(same: dict) -> frozenset:
    return frozenset(same_object_mark(p, ps[0]) for ps in same.values() for p in ps[1:])


def _items_updated(tree: gast.FunctionDef) -> frozenset:
    """The parameters whose items ``tree`` changes in place: ``p[k] += v`` (on an array
    item), ``p[k][i] = v``, ``p[k].append(v)``. Python changes those objects themselves,
    which whoever else holds them sees; replacing a slot (``p[k] = v``) does not."""
    params = {a.id for a in tree.args.args + tree.args.posonlyargs + tree.args.kwonlyargs
              if isinstance(a, gast.Name)}
    out = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.AugAssign) and isinstance(node.target,
                                                            (gast.Subscript, gast.Attribute)):
            out.add(_root(node.target))  # (p.W += v: on an array, in place)
        elif isinstance(node, gast.Assign):  # (p.b.W = v: changes the object p.b holds)
            out |= {_root(t) for t in node.targets if isinstance(t, (gast.Subscript,
                                                                     gast.Attribute))
                    and isinstance(t.value, (gast.Subscript, gast.Attribute))}
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                and isinstance(node.func.value, (gast.Subscript, gast.Attribute)):
            out.add(_root(node.func.value))
        elif isinstance(node, gast.Call) and (stored := A.setattr_arguments(node)) \
                and isinstance(stored[0], (gast.Subscript, gast.Attribute)):
            out.add(_root(stored[0]))  # setattr(p.b, "W", v)
    return frozenset(out & params)


# methods that change a list, dict or set held in an object, never an array's data
_CONTAINER_ONLY = {"append", "extend", "insert", "pop", "update", "setdefault", "popitem",
                   "add", "discard", "remove", "clear", "reverse"}


def _array_items_updated(tree: gast.FunctionDef) -> frozenset:
    """The parameters of ``tree`` through whose items it may change an array's data in place
    (``p.W += v``, ``p.W[0] = v``, ``p.W.fill(0)``): _items_updated less the changes of the
    lists, dicts and objects only (``p.hs.append(v)``, ``p.b.W = v``), which leave the
    arrays they hold as they are (whoever else holds one sees no change)."""
    params = {a.id for a in tree.args.args + tree.args.posonlyargs + tree.args.kwonlyargs
              if isinstance(a, gast.Name)}
    held = (gast.Subscript, gast.Attribute)
    out = set()
    for node in gast.walk(tree):
        if isinstance(node, gast.AugAssign) and isinstance(node.target, held):
            out.add(_root(node.target))
        elif isinstance(node, gast.Assign):
            out |= {_root(t) for t in node.targets if isinstance(t, gast.Subscript)
                    and isinstance(t.value, held)}
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                and isinstance(node.func.value, held) and node.func.attr not in _CONTAINER_ONLY:
            out.add(_root(node.func.value))
    return frozenset(out & params)


def _root(target) -> str | None:
    """The variable an element store ``x[i][j] = v`` changes."""
    while isinstance(target, (gast.Subscript, gast.Attribute)):
        target = target.value
    return target.id if isinstance(target, gast.Name) else None


def changes_self(cls, method: str, seen: set) -> bool:
    """Whether ``cls.method``, a plain function, changes its first parameter's object in
    place (activity.mutated_parameters), itself or through the methods it calls on it."""
    fn = inspect.getattr_static(cls, method, None)
    if not isinstance(fn, types.FunctionType) or not fn.__code__.co_argcount \
            or fn.__code__ in seen:
        return False
    seen.add(fn.__code__)
    me = fn.__code__.co_varnames[0]
    if me in _mutated_parameters(fn):
        return True
    tree = source_tree(fn)
    return tree is not None and any(changes_self(cls, call.func.attr, seen) for call in gast.walk(tree)
               if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
               and isinstance(call.func.value, gast.Name) and call.func.value.id == me)


def _holds_data(value) -> bool:
    """Whether a global's value is data an in-place change may reach (an array, a list, a
    dict, an object), not a module, a class or a function."""
    return isinstance(value, (np.ndarray, list, tuple, dict, types.SimpleNamespace)) \
        or hasattr(type(value), "__dict__") and type(value).__module__ not in (
            "builtins", "types") and not isinstance(value, (type, types.ModuleType)) \
        and not callable(value)


def _reads_data(fn, seen: set | None = None) -> bool:
    """Whether ``fn`` is a function of the user's (not a library's) whose code reads a global
    holding data, itself or through the user's functions it reads (runtime.function_reads)."""
    if not isinstance(fn, types.FunctionType) or (
            getattr(fn, "__module__", None) or "").split(".")[0] in _LIBRARIES:
        return False
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return False
    seen.add(id(fn))
    return any(_holds_data(v) or _reads_data(v, seen) for v in function_reads(fn))


def _held_path(target) -> tuple[str, list] | None:
    """``m.W[0]`` -> ``("m", [("a", "W"), ("i", <0>)])``: the variable a store through
    ``target`` starts at, and the attribute names ("a") and item indices ("i") after it."""
    steps = []
    while isinstance(target, (gast.Attribute, gast.Subscript)):
        steps.insert(0, ("a", target.attr) if isinstance(target, gast.Attribute)
                     else ("i", target.slice))
        target = target.value
    return (target.id, steps) if isinstance(target, gast.Name) else None


def _attribute_form(target, ctx: Context):
    """``target`` with ``vars(m)["W"]`` and ``m.__dict__["W"]`` written ``m.W`` (the same
    store on an object of a plain class, which the attribute store checks)."""
    if not isinstance(target, (gast.Attribute, gast.Subscript)):
        return target
    target.value = _attribute_form(target.value, ctx)
    if not (isinstance(target, gast.Subscript) and isinstance(target.slice, gast.Constant)
            and isinstance(target.slice.value, str) and target.slice.value.isidentifier()):
        return target
    holder = target.value
    if isinstance(holder, gast.Call) and isinstance(holder.func, gast.Name) \
            and holder.func.id == "vars" and _builtin("vars", ctx) \
            and len(holder.args) == 1 and not holder.keywords:
        holder = holder.args[0]
    elif isinstance(holder, gast.Attribute) and holder.attr == "__dict__":
        holder = holder.value
    else:
        return target
    return A.located(gast.Attribute(value=holder, attr=target.slice.value, ctx=target.ctx),
                     target)


# numpy functions writing into their first argument
_IN_PLACE_FUNCTIONS = (np.copyto, np.put, np.place, np.putmask, np.fill_diagonal,
                       np.random.shuffle,
                       np.put_along_axis, heapq.heappush, heapq.heappop, heapq.heapify,
                       heapq.heapreplace, heapq.heappushpop, bisect.insort,
                       bisect.insort_left, bisect.insort_right, random.shuffle,
                       operator.delitem, operator.iadd, operator.isub, operator.imul,
                       operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow,
                       operator.imatmul, operator.iconcat)
# methods of a random generator shuffling their argument in place (rng.shuffle(xs))
_SHUFFLING_METHODS = frozenset({"shuffle"})


def _attribute_name(call, args: list) -> str | None:
    """The attribute a ``setattr``-like ``call`` with arguments ``args``
    (astutil.setattr_arguments) sets, when written as an identifier string; else None."""
    if len(args) != 3 or call.keywords or any(isinstance(a, gast.Starred) for a in args[1:]):
        return None
    name = args[1]
    if isinstance(name, gast.Constant) and isinstance(name.value, str) \
            and name.value.isidentifier():
        return name.value
    return None


def _own_walk(node):
    """The nodes of ``node``, not entering nested defs (their statements are visited on
    their own) but entering lambdas."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for child in gast.iter_child_nodes(n):
            if not isinstance(child, gast.FunctionDef):
                todo.append(child)


def _is_statement_call(fn, call) -> bool:
    """``call`` is the whole value of an expression statement of ``fn``."""
    return any(isinstance(n, gast.Expr) and n.value is call for n in gast.walk(fn))


def _local_names(fn: gast.FunctionDef) -> set[str]:
    """The names local to ``fn``: its parameters and what its own body assigns, less the
    names it declares nonlocal or global."""
    args = fn.args
    params = [a for a in args.posonlyargs + args.args + args.kwonlyargs] \
        + [a for a in (args.vararg, args.kwarg) if a is not None]
    names = {a.id for a in params if isinstance(a, gast.Name)}
    declared = set()
    for stmt in fn.body:
        for node in own_nodes(stmt):
            if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
                names.add(node.id)
            elif isinstance(node, (gast.Nonlocal, gast.Global)):
                declared |= set(node.names)
            elif isinstance(node, gast.FunctionDef):
                names.add(node.name)
    return names - declared


def scope_functions(tree):
    """The functions defined in ``tree``'s own scope (not inside other nested functions)."""
    return [c for n in own_nodes(tree) for c in gast.iter_child_nodes(n)
            if isinstance(c, gast.FunctionDef)]


def lower_generator(tree: gast.FunctionDef, ctx: Context) -> None:
    """A generator function (validated finite, its yields statements) builds and returns the
    list of what it yields: differentiated code consumes it at once (a for loop, sum, list,
    zip), which a list serves as well as the generator."""
    if not any(isinstance(n, (gast.Yield, gast.YieldFrom)) for n in own_nodes(tree)):
        return
    out = ctx.namer.fresh("_yielded")

    class Lower(gast.NodeTransformer):
        def visit_FunctionDef(self, node):
            if node is not tree:
                return node
            self.generic_visit(node)
            return node

        visit_Lambda = visit_FunctionDef

        def visit_Expr(self, node):
            if isinstance(node.value, (gast.Yield, gast.YieldFrom)):
                method = "append" if isinstance(node.value, gast.Yield) else "extend"
                value = node.value.value if node.value.value is not None else A.const(None)
                return A.expr_stmt(A.call(A.attr(out, method), value), at=node)
            return node

        def visit_Return(self, node):
            return A.located(gast.Return(value=A.load(out)), node)

    Lower().visit(tree)
    if any(A.names_read(n.value.args[0]) & ctx.varied for n in own_nodes(tree)
           if isinstance(n, gast.Expr) and isinstance(n.value, gast.Call)
           and isinstance(n.value.func, gast.Attribute)
           and isinstance(n.value.func.value, gast.Name) and n.value.func.value.id == out):
        ctx.varied.add(out)
    tree.body = [A.assign(out, gast.List(elts=[], ctx=gast.Load()), at=tree)] + tree.body
    if not isinstance(tree.body[-1], gast.Return):
        tree.body.append(A.located(gast.Return(value=A.load(out)), tree.body[-1]))


def lift_closures(tree: gast.FunctionDef, ctx: Context) -> None:
    """Nested defs and lambdas that read varied variables of the enclosing function take
    them as keyword-only parameters instead, passed at each call: gradients then flow back
    to those variables through the call like through any argument."""
    lifted: dict[str, list[str]] = {}
    assigned_lambdas = {id(n.value) for n in gast.walk(tree) if isinstance(n, gast.Assign)
                        and isinstance(n.value, gast.Lambda)}
    # the functions defined in this function's own scope: those nested deeper are lifted
    # when the function defining them is transformed (it receives the values as parameters)
    for node in scope_functions(tree) + list(own_nodes(tree)):
        if isinstance(node, gast.FunctionDef) and node is not tree:
            fn, name = node, node.name
        elif isinstance(node, gast.Assign) and isinstance(node.value, gast.Lambda) \
                and isinstance(node.targets[0], gast.Name):
            fn, name = node.value, node.targets[0].id
        else:
            continue
        defaults = [d for d in fn.args.defaults + fn.args.kw_defaults if d is not None]
        read_by_defaults = set().union(*[A.names_read(d) for d in defaults]) if defaults \
            else set()
        for v in sorted(read_by_defaults & ctx.varied & ctx.local_names):
            ctx.problem(node, f"a default value of '{name}' reading the differentiable "
                              f"variable '{v}'",
                        f"Pass {v} to {name} as an argument when calling it.")
        own = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        own |= {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Store)}
        free = sorted({n.id for n in gast.walk(fn) if isinstance(n, gast.Name)
                       and isinstance(n.ctx, gast.Load)} - own)
        captured = [v for v in free if v in ctx.varied and v in ctx.local_names]
        if not captured:
            continue
        for v in captured:
            changed = _changed_in_place(fn, v)
            if changed is not None:
                # the value comes in as a parameter: the change would stay inside the call
                ctx.problem(changed, f"'{name}' changing '{v}', a differentiable variable of "
                                     f"the enclosing function, in place",
                            f"Declare it nonlocal and rebind it to a new value (nonlocal {v}; "
                            f"{v} = ...), or return the new value and assign it in the caller.")
        lifted[name] = captured
        for v in captured:
            fn.args.kwonlyargs.append(gast.Name(id=v, ctx=gast.Param(), annotation=None,
                                                type_comment=None))
            fn.args.kw_defaults.append(None)
        ctx.varied.add(name)
    values = _FunctionValues(ctx, lifted, assigned_lambdas, tree)
    tree.body = [values.visit(stmt) for stmt in tree.body]
    if not lifted:
        return
    for node, shadowed in _calls_in_scope(tree, frozenset()):
        if isinstance(node.func, gast.Name) \
                and node.func.id in lifted and id(node.func) not in values.bound:
            hidden = sorted(shadowed & set(lifted[node.func.id]))
            if hidden:
                # (passed as v=v there, it read the comprehension's v: a wrong gradient)
                ctx.problem(node, f"a call of '{node.func.id}' inside a comprehension whose "
                                  f"variable '{hidden[0]}' hides the variable of that name "
                                  f"'{node.func.id}' reads",
                            f"Rename the comprehension's variable ({hidden[0]}_).")
                continue
            node.keywords += [gast.keyword(arg=v, value=A.load(v)) for v in lifted[node.func.id]]


def _calls_in_scope(node, shadowed: frozenset):
    """``(call, names)`` for each call in ``node``, with the names the comprehensions around
    it bind (hiding the function's variables of those names there). A comprehension's first
    source is evaluated in the enclosing scope, where its variables hide nothing."""
    if isinstance(node, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
        first_source = node.generators[0].iter
        yield from _calls_in_scope(first_source, shadowed)
        shadowed = shadowed | {n.id for g in node.generators for n in gast.walk(g.target)
                               if isinstance(n, gast.Name)}
        for child in gast.iter_child_nodes(node):
            if child is not node.generators[0]:
                yield from _calls_in_scope(child, shadowed)
        for child in gast.iter_child_nodes(node.generators[0]):
            if child is not first_source:
                yield from _calls_in_scope(child, shadowed)
        return
    if isinstance(node, gast.Call):
        yield node, shadowed
    for child in gast.iter_child_nodes(node):
        yield from _calls_in_scope(child, shadowed)


def _store_counts(tree: gast.FunctionDef) -> dict[str, int]:
    """How many values each variable of ``tree`` may take, 2 standing for "several": a bound
    function value reads its variables once, when it is made, where Python reads them when
    it is called, so those two agree only for a variable never given another value. A
    parameter has its first; a loop's variable and what a loop body assigns take one per
    iteration (a statement in a loop is counted again by the loop enclosing it)."""
    a = tree.args
    params = a.posonlyargs + a.args + a.kwonlyargs + [v for v in (a.vararg, a.kwarg) if v]
    stores = {p.id: 1 for p in params}

    def add(names, n):
        for name in names:
            stores[name] = stores.get(name, 0) + n

    for node in gast.walk(tree):
        if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.NamedExpr,
                             gast.While)):
            add(A.names_written(node), 1)
        elif isinstance(node, gast.For):
            add(A.names_written(node.target), 2)
            add(set().union(*[A.names_written(b) for b in node.body + node.orelse]), 1)
        elif isinstance(node, gast.comprehension):
            add(A.names_written(node), 2)
    return stores


class _FunctionValues(gast.NodeTransformer):
    """Closure conversion: a lambda or nested def reading differentiable variables of the
    enclosing function, used as a value (stored, passed, returned) rather than called by
    name, becomes ``_rt.bind(fn, (), {'x': x, ...})``: a callable carrying those values as
    explicit keyword arguments, so their gradients flow through whoever calls it."""

    def __init__(self, ctx: Context, lifted: dict, assigned_lambdas: set, tree):
        self.ctx, self.lifted, self.assigned = ctx, lifted, assigned_lambdas
        self.bound: set[int] = set()  # the Name nodes now inside a bind (no keywords added)
        # lambdas that map(...) consumed at once will inline (_CompHoister.visit_map): their
        # body runs right there, reading the variables as they are, so nothing to bind
        self.inlined: set[int] = set()
        for node in A.own_nodes(tree):
            calls = [node.iter] if isinstance(node, gast.For) else node.args if (
                isinstance(node, gast.Call) and _consumes_at_once(node, ctx)) else []
            for call in calls:
                if _is_map_call(call, ctx) and _plain_lambda(call.args[0], len(call.args) - 1):
                    call.args[0].srcgrad_inlined = True
                    self.inlined.add(id(call.args[0]))
        self.stores = _store_counts(tree)
        # functions whose gradient is made and called in one expression (grad(inner)(c)):
        # gradient_calls passes the captured values at that call, read as Python reads them
        self.called_now = {id(n.func.args[0]) for n in gast.walk(tree) if isinstance(
            n, gast.Call) and isinstance(n.func, gast.Call) and n.func.args
            and is_maker(n.func.func, ctx)}

    def bind(self, fn, captured: list, at, defaults=None):
        for v in captured:
            if self.stores.get(v, 0) > 1 and id(fn) not in self.called_now:
                self.ctx.problem(at, f"a function value reading the differentiable variable "
                                     f"'{v}', which is assigned more than once (a parameter "
                                     f"assigned again, or in a loop; Python reads its value "
                                     f"when the function is called)",
                                 f"Pass {v} to the function as an argument, or copy it to a "
                                 f"name assigned once.")
        defaults = defaults or {}
        kwargs = gast.Dict(keys=[A.const(v) for v in captured] + [A.const(k) for k in defaults],
                           values=[A.load(v) for v in captured] + list(defaults.values()))
        return A.located(A.call(A.attr(self.ctx.rt, "bind"), fn,
                                gast.Tuple(elts=[], ctx=gast.Load()), kwargs), at)

    def visit_Call(self, node):
        if isinstance(node.func, gast.Name) and node.func.id in self.lifted:
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node  # called by name: its captures are passed as keywords
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.lifted:
            self.bound.add(id(node))
            return self.bind(node, self.lifted[node.id], node)
        return node

    def visit_FunctionDef(self, node):
        return node  # its own body: transformed when it is called

    def visit_Lambda(self, node):
        if id(node) in self.assigned:
            return node
        if id(node) in self.inlined:
            node.body = self.visit(node.body)
            return node
        defaults = self.varied_defaults(node)
        own = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        captured = sorted((A.names_read(node.body) - own) & self.ctx.varied
                          & self.ctx.local_names)
        if not captured and not defaults:
            return node
        for v in captured:
            node.args.kwonlyargs.append(gast.Name(id=v, ctx=gast.Param(), annotation=None,
                                                  type_comment=None))
            node.args.kw_defaults.append(None)
        return self.bind(node, captured, node, defaults)

    def varied_defaults(self, node: gast.Lambda) -> dict:
        """``lambda y, a=a: ...`` with a default reading a differentiable variable: that
        parameter and those after it become keyword-only without defaults, and the lambda's
        value binds the defaults' values, read where the lambda is made as Python reads them
        (they were constants of the lambda before: their gradient was lost without an error).
        Passing one of them by position then raises TypeError instead of binding another."""
        a = node.args
        first = len(a.args) - len(a.defaults)
        moved = next((i for i, d in enumerate(a.defaults) if A.names_read(d) & self.ctx.varied
                      & self.ctx.local_names), None)
        kw = [i for i, d in enumerate(a.kw_defaults) if d is not None
              and A.names_read(d) & self.ctx.varied & self.ctx.local_names]
        bound = {}
        for i in kw:
            bound[a.kwonlyargs[i].id], a.kw_defaults[i] = a.kw_defaults[i], None
        if moved is None:
            return bound
        params, values = a.args[first + moved:], a.defaults[moved:]
        a.args, a.defaults = a.args[:first + moved], a.defaults[:moved]
        for p, d in zip(params, values):
            if A.names_read(d) & self.ctx.varied & self.ctx.local_names:
                a.kwonlyargs.append(p)
                a.kw_defaults.append(None)
                bound[p.id] = d
            else:
                a.kwonlyargs.append(p)
                a.kw_defaults.append(d)
        return bound


class _Desugar:
    def __init__(self, ctx: Context, tree=None):
        self.ctx = ctx
        # names that share their value with another name (y = x): an element assignment
        # through one would, in Python, change the other too
        self.aliased: set[str] = set()
        # where each alias or view was made (see made_before), and the names an assignment
        # made each name share its object with (v = y: v and y; alias_guard)
        self.sites: dict[str, list] = {}
        self.partners: dict[str, set[str]] = {}
        # nested defs calling methods on this function's variables: closure_method_guards
        self.closure_methods: dict[str, list] = {}
        for node in gast.walk(tree) if tree is not None else ():
            names = set()
            if isinstance(node, gast.Assign) and isinstance(node.value, gast.Name):
                for t in node.targets:
                    if isinstance(t, gast.Name):
                        names |= {t.id, node.value.id}
            elif isinstance(node, gast.Assign) and len(node.targets) > 1:
                names |= {t.id for t in node.targets if isinstance(t, gast.Name)}
            elif isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Tuple) \
                    and isinstance(node.value, gast.Tuple) \
                    and len(node.targets[0].elts) == len(node.value.elts):
                for t, v in zip(node.targets[0].elts, node.value.elts):  # a, b = y, e
                    if isinstance(t, gast.Name) and isinstance(v, gast.Name):
                        names |= {t.id, v.id}
            self.aliased |= names
            for name in names:
                self.sites.setdefault(name, []).append(_start(node))
                self.partners.setdefault(name, set()).update(names)
        # parameters hold the caller's objects until a statement dominating the current one
        # rebinds them (block() keeps this set so): updating one in place (an array: '+=',
        # an element store) changes the caller's too, which the functional rewrite would
        # not; refused at run time for arrays (a dict passes). (A parameter rebound anywhere
        # used to count as the function's own, also before the rebinding: a silent wrong
        # gradient for `a -= 1.0; a = a * 2.0`.)
        self.callers = set(ctx.params) if tree is not None else set()
        # The function an API call differentiates (not a helper) may update its parameters
        # in place: rewritten as new values, as autograd's boxes and JAX's immutable arrays
        # do, the result and gradient are those of the plain call; only the caller's arrays
        # keep their values. entry_guards refuses, at run time, an argument sharing data with
        # another argument or a global array the function reads, which would see the change.
        # A helper's parameter its call site hands over (x = helper(x), the caller's x read
        # no more, see hand_over) may be updated in place the same way.
        self.owned = self.callers if ctx.entry else self.callers & set(ctx.consumed)
        # the names this function's own statements bind (comprehension variables and nested
        # functions' parameters live in scopes of their own)
        in_comprehensions = {id(n) for c in gast.walk(tree) if isinstance(c, gast.comprehension)
                             for n in gast.walk(c.target)} if tree is not None else set()
        self.scope_names = set(ctx.params) | {
            n.id for n in (own_nodes(tree) if tree is not None else ())
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
            and id(n) not in in_comprehensions}
        self.scope_names -= merged_parameters(ctx.consumed)  # (h(xs, xs): one name for both)
        self.callers = self.callers - self.owned
        # owned parameters no statement binds anew: the caller's list or dict, handed over
        # (or the differentiated function's own argument), item_guard checks at run time
        self.kept_params = self.owned - _rebound_names(tree.body if tree is not None else [])
        # the calls write_back made take back containers, by id: the parameters taken back
        self.taken_back: dict[int, tuple[str, ...]] = {}
        self.taken_back_if_in_place: set[tuple[int, str]] = set()  # (taken_back_targets)
        # the calls lift_item_arguments passed an item's temporary, by id: its parameter
        self.items_handed: dict[int, str] = {}
        self.items_pending: set[str] = set()  # (those temporaries not taken back yet)
        # 'for layer in layers' loops being desugared whose target a call may change in
        # place: target -> (sequence, the index loop's counter), and those used (visit_For)
        self.loop_aliases: dict[str, tuple[str, str]] = {}
        self.aliases_written: set[str] = set()
        self.alias_calls: set[tuple[int, str]] = set()  # (id(call), target) written back
        self.tree = tree
        # where each name is read (line, column), the names nested functions read, and the
        # spans of loops and try statements: what hand_over needs to know a name is dead
        self.reads: dict[str, list[tuple]] = {}
        self.captured: set[str] = set()
        self.spans: list[tuple] = []
        for node in gast.walk(tree) if tree is not None else ():
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                self.reads.setdefault(node.id, []).append(_start(node))
            elif isinstance(node, (gast.Lambda, gast.FunctionDef)) and node is not tree:
                self.captured |= A.names_read(node)
            elif isinstance(node, gast.Try):
                self.spans.append((_start(node), _end(node)))
        self.loop_nodes = [n for n in gast.walk(tree) if isinstance(n, (gast.For, gast.While))
                           ] if tree is not None else []
        self.loops = [(_start(n), _end(n)) for n in self.loop_nodes]
        # every relation "may see the data of" any statement makes, wherever it is (view_of
        # keeps only those of the statements dominating the current one): what a view made
        # in a branch, or later in a loop, may still see (unseen_views_guard)
        self.may_share: dict[str, set[str]] = {}
        for node in gast.walk(tree) if tree is not None else ():
            relation = _view_relation(node) if isinstance(node, gast.stmt) else None
            for view in relation[0] if relation else ():
                for base in relation[1] - {view}:
                    self.may_share.setdefault(view, set()).add(base)
                    self.may_share.setdefault(base, set()).add(view)
        # views assigned earlier in the statements that dominate the current one, by the
        # array they view (y -> {v} after v = y[:1]): updating y in place changes v
        self.view_of: dict[str, set[str]] = {}
        # arrays that meet differentiable values somewhere (m in x * m): an element store into
        # one is a functional update too, so the tape saves the value the backward sweep reads
        self.meets_varied: set[str] = set()
        for node in gast.walk(tree) if tree is not None else ():
            if isinstance(node, (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)):
                names = A.names_read(node)
                if names & ctx.varied:
                    self.meets_varied |= names
        # lists and dicts every binding of which makes a new one here (a display, a
        # comprehension, list(...)): an update of an item of one is rewritten as new
        # containers when, at run time, nothing else holds what it changes (item_guard)
        self.built = _built_containers(tree, ctx) if tree is not None else set()
        # arrays every binding of which calls numpy (v = np.zeros(...)): no list or dict a
        # copy shares items with (item_guardable; its check would cost jit the compiled form)
        self.numpy_made = _built_containers(tree, ctx, _numpy_call) \
            if tree is not None else set()
        # objects every binding of which calls their class (m = Model()): an attribute
        # store into one is rewritten as a new object when nothing else holds it
        self.built_objects = _built_containers(tree, ctx, _new_object) \
            if tree is not None else set()
        # names that may be numpy views of another array (a slice, a row, a reshape): an
        # in-place update through them changes that array too
        self.nested: list[set[str]] = []  # local names of the nested defs being desugared
        self.object_stores: set[int] = set()  # object.__setattr__(m, "W", v) as m.W = v
        self.views: set[str] = set()
        for node in gast.walk(tree) if tree is not None else ():
            if isinstance(node, gast.Assign) and _may_be_view(node.value) \
                    and not _fresh_chain(node.value):
                names = {t.id for t in node.targets if isinstance(t, gast.Name)}
            elif isinstance(node, gast.For) and isinstance(node.target, gast.Name) \
                    and A.names_read(node.iter) & ctx.varied:
                names = {node.target.id}  # the rows of an array
            else:
                continue
            self.views |= names
            for name in names:
                self.sites.setdefault(name, []).append(_start(node))

    def block(self, stmts: list) -> list:
        outer = {k: set(v) for k, v in self.view_of.items()}
        callers = set(self.callers)
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
            self.record_view(s)
            if isinstance(s, gast.Assign) and self.fresh(s.value):
                # p = p * 2: no longer the caller's object (an alias or a view made by
                # p = q, p = p[:2], p = np.asarray(p) is tracked as such)
                self.callers -= set().union(*[A.names_written(t) for t in s.targets])
        self.view_of = outer  # views made in a nested block do not dominate what follows
        self.callers = callers  # nor do rebindings
        return out

    def record_view(self, s) -> None:
        """After ``v = y[:1]`` (or ``y.T``, ``y.reshape(...)``): ``v`` may see ``y``'s data. So
        may whatever else is made from ``y`` other than by an operator: what a function
        returns (``v = first(y)``), a container holding it (``d = [y[:2], 1.0]``), a loop's
        target (``for r in [y]``). Which of them really shares data is decided at run time
        (``refuse_viewed``, np.may_share_memory), so taking in too many costs a check.
        After ``del v`` no name reaches ``v``'s data through ``v`` any more (and a run-time
        check naming it would fail: generated code deletes its temporaries)."""
        if isinstance(s, gast.Delete):
            gone = set().union(*[A.names_written(t) for t in s.targets])
            for name in gone:
                self.view_of.pop(name, None)
            for names in self.view_of.values():
                names -= gone
            return
        relation = _view_relation(s)
        if relation is None:
            return
        views, bases = relation
        for view in views:
            for base in bases - {view}:
                for root in [base] + [b for b, vs in self.view_of.items() if base in vs]:
                    self.view_of.setdefault(root, set()).add(view)

    def entry_guards(self, tree) -> list:
        """At the top of an entry function: for each parameter it updates in place, refuse
        an argument that shares data with another argument or with an array (or a container)
        the function reads from its globals or closure."""
        if not self.owned:
            return []
        outside = [n for n in sorted(A.names_read(tree)) if self.is_global(n)]
        guards = []
        merged = merged_parameters(self.ctx.consumed)  # (read through another's name)
        for p in sorted(mutated_parameters(tree) & self.owned):
            others = [n for n in self.ctx.params if n != p and n not in merged] + outside
            if not others:
                continue
            which = others[0] if len(others) == 1 else f"one of {', '.join(others)}"
            message = (f"{self.ctx.user_location(tree)}: {self.ctx.fn.__name__}() updates its "
                       f"argument '{p}' in place, and '{p}' shares its data with {which} "
                       f"(another argument, or an array the function reads), which numpy "
                       f"would change too; srcgrad does not support that. Pass a copy "
                       f"({p}.copy()) or write {p} = ... in the function.")
            guards.append(self.refuse_sharing(p, others, message, tree.body[0]))
        return guards

    def sources_of(self, name: str) -> list[str]:
        """The names ``name``'s value was made from by the statements dominating this one
        (``y`` after ``v = y[:2]``), and the other names made from those: what an in-place
        update of ``name`` may also change."""
        bases = self.through_transient({b for b, vs in self.view_of.items() if name in vs})
        bases -= {name}
        related = set(bases)
        for b in bases:
            related |= self.view_of.get(b, set())
        # only names of this function's scope (a dominating statement read them, so they are
        # bound) or its globals: not a lambda's parameter or a comprehension's variable
        related -= {name} | self.ctx.transient
        return sorted(n for n in related if n in self.scope_names or self.is_global(n))

    def through_transient(self, names: set[str]) -> set[str]:
        """``names`` with each of the passes' transient temporaries (the tuple holding what
        a call rebinding 'nonlocal' variables made) replaced by the names it was made from:
        the temporary holds the array itself, which a run-time check would take for a view."""
        out, todo, seen = set(), list(names), set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in self.ctx.transient:
                todo += [b for b, vs in self.view_of.items() if n in vs]
            else:
                out.add(n)
        return out

    def sources_guard(self, name: str, sources: list[str], s) -> list:
        """Before ``name`` changes in place: raise at run time if it still shares data with
        one of the names it was made from (it is a view of one of them) that something reads
        afterwards."""
        sources = self.read_later(sources, s)
        if not sources:
            return []
        which = sources[0] if len(sources) == 1 else f"one of {', '.join(sources)}"
        message = (f"{self.ctx.user_location(s)}: an in-place update of '{name}', which shares its "
                   f"data with {which} (a view of it), is not supported (in "
                   f"{self.ctx.fn.__name__}()): numpy would change both. Copy it first "
                   f"({name} = {name}.copy()) or write {name} = ... to make a new array.")
        return [self.refuse_sharing(name, sources, message, s)]

    def hand_over(self, s) -> list:
        """A call of a helper that updates a parameter in place, passed a variable ``x`` of
        this function that nothing reads after the call (``x = helper(x)``, ``return
        helper(x)``): the helper may then update it as a new value, as the differentiated
        function itself may (its build is keyed on the handed-over parameters, read from the
        call node's ``srcgrad_consumed``). Python would also change whatever else shares
        ``x``'s data: refused at run time if another variable of this function, or an array
        it reads from its globals, does."""
        if not isinstance(s, (gast.Assign, gast.AugAssign, gast.Return, gast.Expr)) \
                or s.value is None or self.nested or _start(s) is None:
            return []
        guards = []
        for call in gast.walk(s.value):
            if not isinstance(call, gast.Call):
                continue
            fn = self.static_function(call.func)
            mutated = _mutated_parameters(fn) if fn is not None else frozenset()
            if not mutated:
                continue
            params = A.parameters_of(fn)
            handed = set()
            bound = A.bind_arguments(params, 0, call) or []
            same = _same_objects(fn, params, bound)
            for i, arg in bound:
                group = same.get(arg.id, ()) if isinstance(arg, gast.Name) else ()
                if params[i] not in mutated and not set(group) & mutated:
                    continue
                if isinstance(arg, gast.Name) and not isinstance(s, gast.AugAssign) \
                        and ((id(call), arg.id) in self.taken_back_if_in_place
                             or self.dead_after(arg.id, s, call)):  # (x += h(x) reads x)
                    handed.add(params[i])
                    guards += self.loop_alias_guards(arg.id, fn, s) \
                        if (id(call), arg.id) in self.alias_calls else \
                        [self.handed_over_guard(arg.id, fn, params[i], s)]
                elif self.fresh(arg) and not _may_be_view(arg) and (
                        self.fresh_items(arg)
                        or params[i] not in _mutated_parameters(fn, 0, _items_updated,
                                                                _ITEMS_UPDATED)):
                    # step(x * 1.0, g): a new array nothing else holds; step([x], g): a new
                    # list, unless the helper changes its items in place (x itself)
                    handed.add(params[i])
            handed |= {writeback_mark(p) for p in self.taken_back.get(id(call), ())}
            # h(xs, xs): one object through two parameters, one name for it in h's build
            handed |= _same_object_marks(same)
            if id(call) in self.items_handed:  # (lift_item_arguments: a temporary's object)
                handed.add(self.items_handed[id(call)])
            if handed:
                call.srcgrad_consumed = frozenset(handed)
        return guards

    def write_back(self, s) -> list | None:
        """``r = helper(xs, ...)`` or ``helper(xs, ...)``, where the helper changes the list,
        dict or array ``xs`` (a variable of this function) in place and something reads
        ``xs`` afterwards: ``_r, xs = helper(xs, ...); r = _r``, the helper's build
        returning ``xs`` after its result (writeback.py), as Python's caller sees the object
        it changed. A call inside an expression (``n = n + helper(xs)``) is taken out first
        when nothing else in the statement reads ``xs``. hand_over then checks, at run time,
        that no other name of this function holds that object. None when nothing is taken
        back: an attribute, an item or an expression passed (refused in the helper, as
        before), a name read elsewhere in the call, a callee looked up at run time (a
        closure's cell), a call carrying no gradient (run as Python, it changes ``xs``)."""
        if isinstance(s, gast.If) and not self.nested and _start(s) is not None \
                and any(self.may_take_back(c) for c in gast.walk(s.test)):
            return self.hoisted_test(s)
        if not isinstance(s, (gast.Expr, gast.Assign, gast.AugAssign, gast.Return)) \
                or s.value is None or self.nested or _start(s) is None:
            return None
        conditional = self.conditional_takers(s.value, s)
        if conditional:
            return self.lowered_conditional(s, conditional[0])
        before, after = [], []
        for call in _called_once(s.value):
            if not isinstance(s, gast.Return):
                before, after = self.lift_item_arguments(call, s)
            back = self.taken_back_names(call, s)
            if back:
                break
        else:
            return None
        result = self.ctx.namer.fresh("_r")
        elts, kept = self.taken_back_targets(call, back, s)
        target = gast.Tuple(elts=[A.store(result)] + elts, ctx=gast.Store())
        self.taken_back[id(call)] = tuple(p for p, _ in back)
        after += self.loop_alias_writes([n for _, n in back], s, call)
        out = before + [A.assign(target, call, at=s)] + kept
        if call is s.value and isinstance(s, gast.Expr):
            return out + after
        s.value = _replaced(s.value, call, A.located(A.load(result), call))
        return out + [s] + after

    def taken_back_targets(self, call, back, s) -> tuple[list, list]:
        """The targets of what ``call`` hands back: each variable, but a temporary for a
        parameter the helper changes by ``p op= e`` alone, which is in place only on an
        object with an in-place operator (an array, a list), a new value on a number: the
        variable takes it only then (``if _rt.updated_in_place(v): v = _wb``)."""
        rebinds = _rebinds_numbers(self.static_function(call.func))
        elts, kept = [], []
        for param, name in back:
            if param not in rebinds:
                elts.append(A.store(name))
                continue
            tmp = self.ctx.namer.fresh("_wb")
            if self.items_handed.get(id(call)) != param:  # (an item's temporary: handed)
                self.taken_back_if_in_place.add((id(call), name))
            self.ctx.local_names.add(tmp)
            if name in self.ctx.varied:
                self.ctx.varied.add(tmp)
            elts.append(A.store(tmp))
            test = A.call(A.attr(self.ctx.rt, "updated_in_place"), A.load(name))
            kept.append(A.located(gast.If(test=test, body=[A.assign(name, A.load(tmp), at=s)],
                                          orelse=[]), s))
        return elts, kept

    def may_take_back(self, call) -> bool:
        """Whether ``call`` is of a helper with a parameter its call site may take back
        (write_back), passed a variable or an item of one."""
        fn = self.static_function(call.func) if isinstance(call, gast.Call) else None
        if fn is None or call.func.id in self.ctx.closure:
            return False
        params = A.parameters_of(fn)
        return any(params[i] in _taken_back(fn) and (
            isinstance(arg, gast.Name) or _item_path(arg) is not None)
            for i, arg in A.bind_arguments(params, 0, call) or [])

    def conditional_takers(self, value, s) -> list:
        """The 'and'/'or' and conditional expressions of ``value`` (evaluated once) a part
        of which, evaluated only sometimes, calls a helper whose call site may take back
        what it changes: those lowered_conditional can lower into 'if' statements with
        Python's order of evaluation. That holds when nothing else in ``s`` calls a
        function or assigns an expression (which would run after them instead of before)
        or reads what those helpers are passed."""
        found = [node for node in _evaluated_once(value)
                 if isinstance(node, (gast.BoolOp, gast.IfExp)) and any(
                     self.may_take_back(c) for part in _sometimes(node)
                     for c in _evaluated_once(part))]
        if not found:
            return []
        inside = {id(n) for n in gast.walk(found[0])}
        passed = set().union(*[A.names_read(a) for c in gast.walk(found[0])
                               if isinstance(c, gast.Call) for a in c.args
                               + [k.value for k in c.keywords]])
        rest = [n for n in gast.walk(s) if id(n) not in inside]
        if any(isinstance(n, (gast.Call, gast.NamedExpr, gast.Await, gast.Yield,
                              gast.YieldFrom)) for n in rest) \
                or passed & {n.id for n in rest if isinstance(n, gast.Name)}:
            return []
        return found[:1]

    def hoisted_test(self, s) -> list:
        """``if cond and helper(xs):`` -> ``_cond = cond and helper(xs)`` then ``if
        _cond:``, which write_back lowers further (the test is evaluated once, first)."""
        cond = self.ctx.namer.fresh("_cond")
        if A.names_read(s.test) & self.ctx.varied:
            self.ctx.varied.add(cond)
        out = [A.assign(cond, s.test, at=s.test)]
        s.test = A.located(A.load(cond), s.test)
        return out + [s]

    def lowered_conditional(self, s, node) -> list:
        """``ok = cond and helper(xs)`` -> ``_cond = cond; if _cond: _cond = helper(xs)``,
        ``ok = _cond``: the helper's call a statement of its own, taken back by write_back
        on the path that runs it only, as Python changes ``xs`` only when it runs."""
        value = self.ctx.namer.fresh("_cond")
        if A.names_read(node) & self.ctx.varied:
            self.ctx.varied.add(value)
        out = self.lowered_value(node, value, s)
        s.value = _replaced(s.value, node, A.located(A.load(value), node))
        return out + [s]

    def lowered_value(self, node, name: str, at) -> list:
        """Statements assigning ``node``'s value to ``name``, an 'and'/'or' or conditional
        expression as 'if' statements evaluating each part only when Python does."""
        if isinstance(node, gast.IfExp):
            return [A.located(gast.If(test=node.test,
                                      body=self.lowered_value(node.body, name, at),
                                      orelse=self.lowered_value(node.orelse, name, at)), at)]
        if not isinstance(node, gast.BoolOp):
            return [A.assign(name, node, at=at)]
        out = self.lowered_value(node.values[0], name, at)
        rest = node.values[1:]
        tail = rest[0] if len(rest) == 1 else A.located(gast.BoolOp(op=node.op, values=rest), at)
        test = A.load(name) if isinstance(node.op, gast.And) else \
            gast.UnaryOp(op=gast.Not(), operand=A.load(name))
        return out + [A.located(gast.If(test=test, body=self.lowered_value(tail, name, at),
                                        orelse=[]), at)]

    def slot_chain(self, name: str) -> list[tuple[str, str, str]]:
        """``(target, sequence, index)`` of the loop being desugared binding ``name``, then of
        the loop around it binding that sequence (``for group in groups: for layer in
        group``), and so on outward: the slots ``groups[_i][_j]`` that hold ``name``'s
        object. [] when no such loop binds ``name``."""
        chain = []
        while name in self.loop_aliases and len(chain) < len(self.loop_aliases):
            seq, index = self.loop_aliases[name]
            chain.append((name, seq, index))
            name = seq
        return chain

    def loop_alias_writes(self, names, s, call) -> list:
        """``layers[_i] = layer`` for each of ``names`` the target of a loop ``for layer in
        layers`` being desugared (visit_For): Python's ``layers`` holds the object a helper
        changed through ``layer``, which the call site takes back. Through each level of
        nested loops (``for group in groups: for layer in group``): ``group =
        _rt.setitem(group, _j, layer)``, then ``groups[_i] = group``, as Python's ``group``
        and ``groups[_i]`` are the one list holding the changed object."""
        out = []
        for name in names:
            if (id(call), name) not in self.alias_calls:  # (not taken back as a loop's target)
                continue
            chain = self.slot_chain(name)
            for k, (target, seq, index) in enumerate(chain):
                self.aliases_written.add(target)
                if k + 1 < len(chain):  # (seq: the target of the loop around, checked to be
                    # held by its slot only, so a functional store needs no guard of its own)
                    new = A.call(A.attr(self.ctx.rt, "setitem"), A.load(seq), A.load(index),
                                 A.load(target))
                    out.append(A.assign(seq, A.located(new, s), at=s))
                    continue
                slot = gast.Subscript(value=A.load(seq), slice=A.load(index), ctx=gast.Store())
                out.append(A.assign(A.located(slot, s), A.located(A.load(target), s), at=s))
        return out

    def loop_alias_guards(self, name: str, fn, s) -> list:
        """Before a helper changes ``name``, the target of ``for name in seq`` (or of loops
        nested so, ``groups[_i][_j]``), in place: refuse at run time a slot that no longer
        holds the object the loop bound (a statement replaced it), and an object something
        else holds too (another slot, another variable, a global), which Python would
        change as well."""
        chain = self.slot_chain(name)
        root = chain[-1][1]
        keys = [A.load(index) for _, _, index in reversed(chain)]
        targets = gast.Tuple(elts=[A.load(t) for t, _, _ in reversed(chain)], ctx=gast.Load())
        path = root + "[...]" * len(chain)
        replaced = (f"{self.ctx.user_location(s)}: {fn.__name__}() changes in place the object "
                    f"the loop bound to {name}, and the loop has replaced that item of "
                    f"{path}: Python would change the old object, which the list no longer "
                    f"holds; srcgrad does not support that (in {self.ctx.fn.__name__}()). "
                    f"Call {fn.__name__}() before replacing the item, or replace it after.")
        identity = self.check("refuse_replaced_slot", A.load(root),
                              gast.Tuple(elts=keys, ctx=gast.Load()), targets,
                              message=replaced, at=s)
        guard = self.slot_guard(root, [A.deepcopy(k) for k in keys],
                                {root} | {t for t, _, _ in chain}, s, fn.__name__,
                                f"the item of {chain[0][1]} the loop binds to {name}")
        guard.value.args.append(A.const(True))  # (iterated: not a dict's keys)
        return [identity, guard]

    def slot_guard(self, root: str, keys: list, mine: set, s, callee: str, what: str):
        """``_rt.refuse_shared_slot(root, (keys...), ...)``: before ``callee`` changes in
        place the object at ``root[keys]`` (``what``), which the call site writes back into
        its slot, refuse one held by another name than those of ``mine``, another slot or a
        global, or held in a tuple."""
        outside = [A.load(n) for n in sorted(A.names_read(self.tree)) if self.is_global(n)]
        others = [A.const(n) for n in sorted(self.scope_names - mine)]
        message = (f"{self.ctx.user_location(s)}: {callee}() changes in place {what}, and "
                   f"something else also holds it (another item, another variable, a global) or it is "
                   f"held in a tuple, which Python would change too; srcgrad does not support "
                   f"that (in {self.ctx.fn.__name__}()). Pass a copy, or hold the object in "
                   f"one list or dict only.")
        return self.check("refuse_shared_slot", A.load(root),
                          gast.Tuple(elts=keys, ctx=gast.Load()), A.call(A.load("locals")),
                          gast.Tuple(elts=others, ctx=gast.Load()),
                          gast.Tuple(elts=outside, ctx=gast.Load()), message=message, at=s)

    def loop_alias(self, s, rebinds: set[str], grown: list[str]) -> tuple | None:
        """``(target, sequence, index)`` of ``for target in sequence`` (index None) or ``for
        index, target in enumerate(sequence)`` over a list of this function that the body
        rebinds none of, nor lengthens: a helper the body calls changing ``target`` in place
        changes the sequence's item, which write_back writes back."""
        target, it, index = s.target, s.iter, None
        if _builtin_call(it, self.ctx) == "enumerate" and len(it.args) == 1 \
                and not it.keywords and isinstance(target, gast.Tuple) \
                and len(target.elts) == 2 and isinstance(target.elts[0], gast.Name):
            (index, target), it = [t.id for t in target.elts[:1]] + target.elts[1:], it.args[0]
        if not (isinstance(target, gast.Name) and isinstance(it, gast.Name)) \
                or self.nested or grown or s.orelse:
            return None
        target, seq = target.id, it.id
        if len({target, seq, index} - {None}) < 2 + (index is not None) \
                or {target, seq, index} & (rebinds | self.captured) \
                or not self.own_variable(seq) or not self.own_variable(target):
            return None
        return target, seq, index

    def lift_item_arguments(self, call, s) -> tuple[list, list]:
        """``h(state["xs"])`` (an item, at a path of constant or variable keys, of a list or
        dict of this function), where ``h`` changes that parameter in place but none of its
        items: ``_item = state["xs"]`` before, the call reading ``_item`` (which
        taken_back_names then takes back), ``state["xs"] = _item`` after, as Python's
        ``state`` holds the changed object; a run-time check first refuses an object held
        elsewhere too (another slot, another variable, a global), which Python would change
        as well. ``([], [])`` when there is nothing to lift."""
        fn = self.static_function(call.func) if isinstance(call, gast.Call) else None
        if fn is None or call.func.id in self.ctx.closure \
                or not A.names_read(call) & self.ctx.varied:
            return [], []
        params = A.parameters_of(fn)
        changes_items = _mutated_parameters(fn, 0, _items_updated, _ITEMS_UPDATED)
        for i, arg in A.bind_arguments(params, 0, call) or []:
            path = _item_path(arg)
            if params[i] not in _taken_back(fn) or params[i] in changes_items or path is None:
                continue
            root, keys = path
            # (another argument may read the root when it is a new value: h(xs[k], xs[k][0] * 2))
            inside = {id(n) for a in [arg] + [a for _, a in A.bind_arguments(params, 0, call)
                                                if a is not arg and self.fresh(a)
                                                and not _may_be_view(a)]
                      for n in gast.walk(a)}
            elsewhere = {n.id for n in gast.walk(s) if isinstance(n, gast.Name)
                         and id(n) not in inside}
            if not self.own_variable(root) or root in elsewhere \
                    or set().union(*[A.names_read(k) for k in keys]) & A.names_written(s):
                continue
            return self.lifted_item(call, arg, root, keys, params[i], s)
        return [], []

    def lifted_item(self, call, arg, root: str, keys: list, param: str, s):
        item = self.ctx.namer.fresh("_item")
        if A.names_read(arg) & self.ctx.varied:
            self.ctx.varied.add(item)
        _replaced(call, arg, A.located(A.load(item), arg))
        self.items_handed[id(call)] = param
        self.items_pending.add(item)
        guard = self.slot_guard(root, [A.deepcopy(k) for k in keys], {root}, s,
                                call.func.id, f"the object passed as {to_source(arg).strip()}")
        store = A.deepcopy(arg)
        store.ctx = gast.Store()
        return ([guard, A.assign(item, A.deepcopy(arg), at=s)],
                [A.assign(A.located(store, s), A.located(A.load(item), s), at=s)])

    def taken_back_names(self, call, s) -> list[tuple[str, str]]:
        """``(parameter, variable)`` for what ``call`` (in ``s``) takes back, sorted as the
        helper returns them; [] for none."""
        if not isinstance(call, gast.Call) or not A.names_read(call) & self.ctx.varied \
                or id(call) in self.taken_back:  # (its statement, made by write_back)
            return []
        fn = self.static_function(call.func)
        if fn is None or call.func.id in self.ctx.closure:
            return []
        params = A.parameters_of(fn)
        taken = _taken_back(fn)
        changes_items = _mutated_parameters(fn, 0, _items_updated, _ITEMS_UPDATED)
        bound = A.bind_arguments(params, 0, call) or []
        inside = {id(n) for n in gast.walk(call)}
        # (s's other parts: an augmented target is read before the call)
        outside = {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and id(n) not in
                   inside and (isinstance(n.ctx, gast.Load) or isinstance(s, gast.AugAssign))}
        passed = [a.id for _, a in bound if isinstance(a, gast.Name)]
        same = _same_objects(fn, params, bound)  # (h(xs, xs): taken back through the first)
        back = []
        for i, arg in bound:
            if isinstance(arg, gast.Name) and arg.id in self.loop_aliases \
                    and not {q for _, q, _ in self.slot_chain(arg.id)} & A.names_read(s) \
                    and params[i] in taken and passed.count(arg.id) == 1 \
                    and arg.id not in outside and params[i] not in changes_items \
                    and not (isinstance(s, gast.Assign) and arg.id in A.names_written(s)):
                back.append((params[i], arg.id))  # (written into its slot: write_back)
                self.alias_calls.add((id(call), arg.id))
                continue
            if isinstance(arg, gast.Name) and arg.id in self.items_pending:
                self.items_pending.discard(arg.id)  # (lift_item_arguments' temporary)
                back.append((params[i], arg.id))
                continue
            names = same.get(arg.id, [params[i]]) if isinstance(arg, gast.Name) else []
            if names[:1] != [params[i]] or not set(names) & taken \
                    or passed.count(arg.id) > len(names) \
                    or arg.id in outside or not self.own_variable(arg.id) \
                    or self.dead_after(arg.id, s, call):
                continue
            # another argument reading xs must be a new value (not xs[0], which the helper
            # would see change), unless the helper changes no item of xs in place
            if not set(names) & changes_items \
                    or all(self.fresh(a) and not _may_be_view(a) for _, a in bound
                           if a is not arg and arg.id in A.names_read(a)):
                back.append((params[i], arg.id))
        return sorted(back)

    def taken_back_in(self, stmts, names) -> list[str]:
        """Those of ``names`` the statements pass to a helper that changes them in place,
        which write_back may take back (rebinding the name to the changed object)."""
        out = []
        for stmt in stmts:
            for call in gast.walk(stmt):
                fn = self.static_function(call.func) if isinstance(call, gast.Call) else None
                if fn is None:
                    continue
                params = A.parameters_of(fn)
                out += [a.id for i, a in A.bind_arguments(params, 0, call) or []
                        if isinstance(a, gast.Name) and a.id in names
                        and params[i] in _taken_back(fn)]
        return list(dict.fromkeys(out))

    def fresh(self, value) -> bool:
        """Whether ``value`` is certainly a new object: not a name, an item or attribute, a
        conditional one of those, nor what a Python function of the user's (which may return
        its argument) or an unresolved callee returns. (Views, ``np.asarray(p)``, are
        tracked as views.)"""
        if isinstance(value, gast.Subscript) and _copying_index(value.slice):
            return True  # y[[0, 2]]: advanced indexing copies
        if isinstance(value, (gast.Name, gast.Subscript, gast.Attribute, gast.IfExp,
                              gast.NamedExpr, gast.Starred)):
            return False
        if not isinstance(value, gast.Call):
            return True
        func = value.func
        if isinstance(func, gast.Attribute) and func.attr in ("copy", "astype"):
            return True
        root = func
        while isinstance(root, gast.Attribute):
            root = root.value
        if not isinstance(root, gast.Name):
            return False
        try:
            obj = self.ctx.lookup_static(root.id)
        except (KeyError, AttributeError):
            return False  # a local function value, a method of a local object
        if isinstance(obj, types.ModuleType):
            return (obj.__name__.partition(".")[0]) in _LIBRARIES
        return root is func and not isinstance(obj, (types.FunctionType, types.MethodType,
                                                     type)) or (
            getattr(obj, "__module__", None) or "").partition(".")[0] in _LIBRARIES

    def fresh_items(self, value) -> bool:
        """Whether every item of the list, tuple or dict display ``value`` is new (and those
        of the displays in it): nothing outside holds them. (Not a display: True.)"""
        if isinstance(value, (gast.List, gast.Tuple, gast.Set)):
            items = value.elts
        elif isinstance(value, gast.Dict):
            items = value.values
        elif isinstance(value, (gast.ListComp, gast.DictComp, gast.SetComp)):
            return False  # ([a for a in xs] holds xs's arrays)
        elif isinstance(value, gast.Call):  # list(xs), dict(a=x) hold xs's items, x
            return not (isinstance(value.func, gast.Name) and _builtin(value.func.id, self.ctx))
        else:
            return True
        return all(self.fresh(v) and not _may_be_view(v) and self.fresh_items(v)
                   for v in items)

    def static_function(self, func) -> types.FunctionType | None:
        """The plain Python function ``func`` (a name) refers to, if it is one srcgrad
        transforms (not a rule, not one srcgrad made)."""
        if not isinstance(func, gast.Name):
            return None
        try:
            fn = self.ctx.lookup_static(func.id)
        except (KeyError, AttributeError):
            return None
        if not isinstance(fn, types.FunctionType) or hasattr(fn, "__srcgrad_grad__") \
                or fn.__code__.co_flags & _STARRED or lookup(fn) is not None:
            return None
        return fn

    def dead_after(self, name: str, s, call) -> bool:
        """Whether nothing reads ``name`` after ``call`` in ``s`` returns: ``s`` rebinds it
        (``x = helper(x)``), or no later line reads it and ``s`` is in no loop (whose next
        iteration would) and no try statement (whose handler could). Reads in the call's
        arguments come before it; ``s`` must read ``name`` nowhere else. A variable of this
        function only: not a parameter holding the caller's object, not one a nested
        function reads."""
        if not self.own_variable(name):
            return False
        inside = {id(n) for n in gast.walk(call)}
        if any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
               and id(n) not in inside for n in gast.walk(s)):
            return False
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and s.value is call and any(
                isinstance(t, gast.Name) and t.id == name for t in (
                    s.targets[0].elts if isinstance(s.targets[0], gast.Tuple)
                    else [s.targets[0]])):
            return True  # x = helper(x), x, g = helper(x): bound anew by s itself
        start, end = _start(s), _end(s)
        if end is None or any(at > end for at in self.reads.get(name, ())):
            return False
        if any(a <= start and end <= b for a, b in self.spans):
            return False  # (a handler could read it)
        loops = [n for n in self.loop_nodes if n.body and _start(n.body[0]) is not None
                 and _start(n.body[0]) <= start and _end(n.body[-1]) is not None
                 and end <= _end(n.body[-1])]
        # (a loop's else block runs once: only the loops whose body holds s repeat it)
        return not loops or self.rebound_first(name, max(loops, key=_start), start)

    def own_variable(self, name: str) -> bool:
        """Whether ``name`` is a variable of this function only: not a parameter holding
        the caller's object (a helper's, even rebound, unless its call site hands it over),
        not one a nested function reads."""
        return name in self.scope_names and name not in self.captured and not (
            name in self.ctx.params and not self.ctx.entry and name not in self.owned)

    def rebound_first(self, name: str, loop, start: tuple) -> bool:
        """Whether each iteration of ``loop`` binds ``name`` anew before anything reads it
        (``a = step(x)`` first in its body, then ``x, y = helper(a, b)`` at ``start``), so
        that no read, in any iteration of this loop or of one around it, can see the array
        a helper was handed earlier: every read of ``name`` lies between that binding and
        ``start``. (dead_after has already checked that nothing reads it after.)"""
        for stmt in loop.body:
            at = _start(stmt)
            if at is None or at >= start:
                return False
            if name in A.names_read(stmt):
                return False
            if name in A.names_written(stmt):
                if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], gast.Name)
                        and stmt.targets[0].id == name):
                    return False
                return all(at <= read for read in self.reads.get(name, ()))
        return False

    def handed_over_guard(self, name: str, fn, param: str, s) -> gast.stmt:
        outside = [n for n in sorted(A.names_read(self.tree)) if self.is_global(n)]
        others = sorted(self.scope_names - {name})
        message = (f"{self.ctx.user_location(s)}: {fn.__name__}() updates its argument '{param}' "
                   f"in place, and the array (or list, dict or object) passed as {name} shares "
                   f"its data with another variable of {self.ctx.fn.__name__}() or a global it "
                   f"reads, which Python would change too; srcgrad does not support that. "
                   f"Pass a copy ({name}.copy(); for an array held in a list or dict, a "
                   f"copy of it).")
        frame = A.call(A.load("locals"))
        names = gast.Tuple(elts=[A.const(n) for n in others], ctx=gast.Load())
        values = gast.Tuple(elts=[A.load(n) for n in outside], ctx=gast.Load())
        held = param in _mutated_parameters(fn, 0, _items_updated, _ITEMS_UPDATED)
        arrays = param in _mutated_parameters(fn, 0, _array_items_updated, _ARRAY_ITEMS_UPDATED)
        check = "refuse_shared_locals" if not held else "refuse_shared_held" if arrays \
            else "refuse_shared_containers"
        return self.check(check, A.load(name), frame, names, values, message=message, at=s)

    def resolves(self, name: str) -> bool:
        """Whether ``name`` names a global or closure variable of the function."""
        try:
            self.ctx.lookup_static(name)
        except (KeyError, AttributeError):
            return False
        return True

    def is_global(self, name: str) -> bool:
        """Whether ``name`` is a global or closure variable holding data (an array, a list,
        a tuple, a dict: not a module), or a function of the user's reading such globals
        (``def get(): return G``: ``w = get()`` holds ``G``, which Python changes with w)."""
        if name in self.ctx.local_names:
            return False
        try:
            value = self.ctx.lookup_static(name)
        except (KeyError, AttributeError):  # (not a global: a lambda's parameter, say)
            return False
        return _holds_data(value) or _reads_data(value)

    def refuse_sharing(self, name: str, others: list[str], message: str, at) -> gast.stmt:
        """``_rt.refuse_viewed(name, (others...), message)``: raise at run time if ``name``
        holds an array that shares data with one of ``others`` (or with an item of one)."""
        names = gast.Tuple(elts=[A.load(n) for n in others], ctx=gast.Load())
        return self.check("refuse_viewed", A.load(name), names, message=message, at=at)

    def check(self, helper: str, *operands, message: str, at) -> gast.stmt:
        """``_rt.<helper>(operands..., message)``: a refusal decided at run time, where only
        the values tell (an array or a number, a view still sharing data...)."""
        return A.expr_stmt(A.call(A.attr(self.ctx.rt, helper), *operands, A.const(message)),
                           at=at)

    def parameter_guard(self, name: str, s) -> list:
        """Before an element store into parameter ``name``: refused at run time when it is
        an array, a list or a dict, the caller's, which Python would change too and the
        functional rewrite would not. (A dict used to pass: `state["h"] = 2 * x` in a helper
        left the caller's dict unchanged, a silent wrong value and gradient.)"""
        loc = self.ctx.user_location(s)
        message = (f"{loc}: assignment into an element of the parameter '{name}', the "
                   f"caller's array, list or dict (Python would change the caller's too), is "
                   f"not supported (in {self.ctx.fn.__name__}()). Copy it first ({name} = "
                   f"{name}.copy()) or return the new value ({name} = "
                   f"{self.ctx.fn.__name__}({name}, ...) at the call hands it over).")
        return [self.check("refuse_mutable", A.load(name), message=message, at=s)]

    def view_guard(self, name: str, s) -> list:
        """Before ``name`` changes in place: raise at run time if a view of it made earlier
        (``v = name[:1]``) still shares its data, or if it is the caller's array."""
        views = self.read_later(sorted(self.view_of.get(name, set()) - {name}
                                       - self.ctx.transient), s)
        if not views:
            return []
        loc = self.ctx.user_location(s)
        message = (f"{loc}: an in-place update of '{name}' while {', '.join(views)} may be a "
                   f"view of it (numpy would change both) is not supported (in "
                   f"{self.ctx.fn.__name__}()). Copy the view ({views[0]} = "
                   f"{name}[...].copy()) or write {name} = ... to make a new array.")
        return [self.refuse_sharing(name, views, message, s)]

    def visit_FunctionDef(self, s):
        """A nested def's body, knowing its own local names: an update of a variable of the
        enclosing function must not become a rebinding inside it (UnboundLocalError)."""
        self.nested.append(_local_names(s))
        try:
            s.body = self.block(s.body)
        finally:
            self.nested.pop()
        return [s]

    def enclosing_store(self, name: str, s) -> list | None:
        """``s`` changes ``name``, a variable of an enclosing function, in place from a nested
        def: the statements that keep it so, or None when ``name`` is the def's own. Whether
        the stored value is differentiable is known only at run time (the def's parameters
        are not analysed here): a float is refused there, an integer (a cursor) passes."""
        if not self.nested or name in self.nested[-1]:
            return None
        loc = self.ctx.user_location(s)
        message = (f"{loc}: a nested function storing a float into '{name}', a variable of "
                   f"the enclosing function, is not supported: srcgrad cannot follow a "
                   f"gradient through it. Return the value from the nested function instead.")
        if isinstance(s, gast.Assign):
            tmp = self.ctx.namer.fresh()
            stored = [A.assign(tmp, s.value, at=s)]
            s.value = A.load(tmp)
            values = [A.load(tmp)]
        else:  # xs.append(v) and the other list methods
            stored, values = [], [A.deepcopy(a) for a in s.value.args]
        guards = [self.check("refuse_float_operand", v, message=message, at=s)
                  for v in values]
        return stored + guards + [s]

    def stmt(self, s) -> list:
        if isinstance(s, gast.While) and (_has_walrus(s.test) or not self.nested and any(
                self.may_take_back(c) for c in gast.walk(s.test))):
            return self.block(self.loop_with_lowered_test(s))
        pre = self.hoist_walrus(s)
        pre += self.hoist_comprehensions(s)
        pre += self.methods_as_functions(s)
        taken = self.write_back(s)
        if taken is not None:
            return pre + [out for t in taken for out in self.stmt(t)]
        pre += self.hand_over(s)
        self.refuse_varied_guarded(s)
        pre += self.refuse_hidden_stores(s)
        self.refuse_closure_changes(s)
        pre += self.closure_method_guards(s)
        method = getattr(self, "visit_" + type(s).__name__, None)
        if method is not None:
            return pre + method(s)
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, self.block(getattr(s, field)))
        return pre + [s]

    def refuse_closure_changes(self, s) -> None:
        """Refuse what changes a variable of an enclosing function in place where no
        statement of that function runs, in a way the nested def's run-time checks
        (enclosing_store: ``acc[i] = v``, ``acc.append(v)`` as statements of their own) do
        not see: a lambda doing it (``lambda v: acc.append(v)``), a nested def doing it
        through another name (``b = a; b[0] = v``) or a writing call (``np.copyto(a, v)``),
        and a changing method taken as a value (``push = acc.append``, ``map(acc.append,
        xs)``). Python changes the object; srcgrad's rewrite would lose the gradient
        through it (a silently wrong gradient before, 27 Nov 2026)."""
        called = {id(c.func) for c in gast.walk(s) if isinstance(c, gast.Call)}
        scope = self.ctx.local_names | set(self.ctx.params)
        for node in _own_walk(s):
            if isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Load) \
                    and id(node) not in called and isinstance(node.value, gast.Name) \
                    and node.value.id in scope and node.attr in CHANGING:
                self.ctx.problem(s, f"'{node.value.id}.{node.attr}', a method changing "
                                    f"'{node.value.id}' in place, taken as a value",
                                 f"Call it where it is used ({node.value.id}.{node.attr}(v)),"
                                 f" or build a new list or array (a comprehension).")
        statements = {id(n.value) for n in gast.walk(s) if isinstance(n, gast.Expr)}
        for call in _own_walk(s):
            if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                    and isinstance(call.func.value, gast.Name) \
                    and call.func.value.id in scope and call.func.attr in CHANGING_INSIDE \
                    and id(call) not in statements and A.names_read(call) & self.ctx.varied:
                text = f"{call.func.value.id}.{call.func.attr}(...)"
                self.ctx.problem(s, f"'{text}', changing '{call.func.value.id}' in place, "
                                    f"inside an expression",
                                 f"Call it as a statement of its own ({text}), or build a "
                                 f"new list (a comprehension).")
        fns = [s] if isinstance(s, gast.FunctionDef) else []
        fns += [n for n in _own_walk(s) if isinstance(n, gast.Lambda)]
        for fn in fns:
            own = _local_names(fn) if isinstance(fn, gast.FunctionDef) else {
                a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs
                if isinstance(a, gast.Name)}
            outer = (A.names_read(fn) - own) & scope
            for node, root, name in object_changes(fn, outer):
                if isinstance(fn, gast.FunctionDef) and name == root and (
                        isinstance(node, (gast.Subscript, gast.Attribute))
                        or isinstance(node, gast.Call) and _is_statement_call(fn, node)
                        and isinstance(node.func, gast.Attribute)
                        and isinstance(node.func.value, gast.Name)
                        and node.func.attr in {*_LIST_METHODS, "update"}):
                    continue  # (enclosing_store's run-time check, in the def's own body)
                kind = "lambda" if isinstance(fn, gast.Lambda) else f"nested def {fn.name}()"
                via = "" if name == root else f" through '{name}'"
                self.ctx.problem(s, f"a {kind} changing '{root}', a variable of the enclosing "
                                    f"function, in place{via}",
                                 "Return the new value from the nested function and assign "
                                 "it in the enclosing one.")
                break

    def closure_method_guards(self, s) -> list:
        """A nested def or lambda calling a method on a variable of the enclosing function
        (``def inner(v): m.set_w(v)``): the method may change that object in place, where no
        statement of this function does (run as plain Python, the gradient through it was
        lost). Refused here when the variable's class is known (``m = Model()``); else
        checked from the object's type at run time, before each statement with
        differentiable values that names the def (calls it, passes it on) or holds the
        lambda."""
        scope = self.ctx.local_names | set(self.ctx.params)
        named = {id(s.value): s.targets[0].id} if isinstance(s, gast.Assign) \
            and isinstance(s.value, gast.Lambda) and isinstance(s.targets[0], gast.Name) else {}
        fns = [(s, s.name)] if isinstance(s, gast.FunctionDef) else []
        # (the lambdas of this statement itself: those in an if's or a loop's blocks are
        # checked before their own statements, where the variables they read are bound)
        fns += [(n, named.get(id(n))) for n in A.header_nodes(s) if isinstance(n, gast.Lambda)]
        varied = bool(A.names_read(s) & self.ctx.varied)
        guards = []
        for fn, name in fns:
            own = _local_names(fn) if isinstance(fn, gast.FunctionDef) else {
                a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs
                if isinstance(a, gast.Name)}
            outer = (A.names_read(fn) - own) & scope
            called = [(var, method, False) for var, methods in methods_called(fn, outer).items()
                      for method in methods - CHANGING]  # (those: refuse_closure_changes)
            called += [(var, method, True) for var, methods in methods_reached(fn, outer).items()
                       for method in methods if not hasattr(np.ndarray, method)]
            for var, method, within in sorted(called):
                kind = f"nested def {name}()" if isinstance(fn, gast.FunctionDef) else "lambda"
                on = f"an object '{var}' holds" if within else f"'{var}'"
                what = (f"a {kind} calling '{method}(...)' on {on}, '{var}' a variable of the "
                        f"enclosing function, a method changing its object in place")
                hint = ("srcgrad does not follow a method's changes of self (the gradient "
                        "through them would be lost): return the new value from the nested "
                        "function and assign it in the enclosing one.")
                if not within and self.method_changes_receiver(var, method):
                    self.ctx.problem(fn, what, hint)
                elif not within and (self.class_known(var) or hasattr(np.ndarray, method)):
                    continue  # (an array's method name: see refuse_hidden_stores)
                elif name is None and varied and not isinstance(s, gast.FunctionDef):
                    guards.append(self.closure_method_check(var, method, within, what, hint, s))
                elif name is not None:
                    self.closure_methods.setdefault(name, []).append(
                        (var, method, within, what, hint))
        if varied and not isinstance(s, gast.FunctionDef):
            for name in sorted({n.id for n in A.header_nodes(s) if isinstance(n, gast.Name)}
                               & self.closure_methods.keys()):
                guards += [self.closure_method_check(*entry, s)
                           for entry in self.closure_methods[name]]
        return guards

    def held_method_checks(self, var: str, method: str, s) -> list:
        """``var.method(...)``, ``var`` of a class known here whose method does not change
        ``var`` itself but calls methods on objects it holds (``self.sub.set_w(v)``): the
        run-time checks that none of those changes its object (refuse_changing_method_within,
        as for a helper's argument), which the plain run would lose."""
        cls = self.known_class(var) if not self.ctx.src.filename.startswith("<srcgrad") \
            else None
        fn = inspect.getattr_static(cls, method, None) if cls is not None else None
        if not (isinstance(fn, types.FunctionType) and fn.__code__.co_argcount):
            return []
        me = fn.__code__.co_varnames[0]
        reached = sorted(m for m, within in methods_on_parameters(fn).get(me, ()) if within)
        return [self.check("refuse_changing_method_within", A.load(var), A.const(inner),
                           message=f"{self.ctx.user_location(s)}: '{var}.{method}(...)' calls "
                                   f"'{inner}(...)' on an object '{var}' holds, a method "
                                   f"changing its object in place, with differentiable "
                                   f"values, which is not supported (in "
                                   f"{self.ctx.fn.__name__}()): srcgrad does not follow a "
                                   f"method's changes of self (the gradient through them "
                                   f"would be lost). Store the attributes in the method "
                                   f"instead ({me}.sub.W = ...).", at=s)
                for inner in reached]

    def object_receiver(self, node) -> bool:
        """Whether ``node.method(...)`` may be a method of an object, one whose class may
        change it: not a module's function or a class's (``np.linalg.norm``, ``Cls.f``),
        nor one srcgrad's generated code calls (``helper_adj.fwd``: the user's checks are in
        that code already, and compiled code could not hold the object)."""
        if self.ctx.src.filename.startswith("<srcgrad"):
            return False
        value = known_value(node, self.ctx)
        if value is None:
            return True  # (a local's, or a call's result)
        try:  # a library's object (scipy.stats.multivariate_normal), as for a helper's
            library = library_file(inspect.getfile(type(value)))
        except (TypeError, OSError):
            library = True  # (a builtin class)
        return not (library or isinstance(value, (types.ModuleType, type, types.FunctionType,
                                                  types.BuiltinFunctionType, np.ufunc)))

    def closure_method_check(self, var: str, method: str, within: bool, what: str, hint: str,
                             s):
        message = (f"{self.ctx.user_location(s)}: {what}, with differentiable values, is not "
                   f"supported (in {self.ctx.fn.__name__}()). {hint}")
        check = "refuse_changing_method_within" if within else "refuse_changing_method"
        return self.check(check, A.load(var), A.const(method), message=message, at=s)

    def refuse_hidden_stores(self, s) -> list:
        """Refuse what stores differentiable values into an object where no variable is
        rebound: a method changing an attribute's or an item's object in place
        (``s.hs.append(v)``, ``d["hs"].append(v)``), ``setattr`` with a name not written in
        the call, ``obj.__setattr__``. Python changes that object, which the rewrite as new
        values of a variable cannot follow; left alone, the gradient through it was lost.
        Returns the run-time checks of ``v.sort()``-like calls, where only the values tell (a
        list of keys may be sorted; an array of differentiable values may not)."""
        guards = []
        for call in A.header_nodes(s):
            if not (isinstance(call, gast.Call) and A.names_read(call) & self.ctx.varied):
                continue
            func = call.func
            if any(k.arg == "out" and not (isinstance(k.value, gast.Constant)
                                           and k.value.value is None) for k in call.keywords) \
                    and not self.transformed_callee(func) \
                    and not self.is_writing_statement(call, s):
                self.ctx.problem(s, "a call writing its result into an existing array "
                                    "(out=...) with differentiable values",
                                 "Assign the result instead (y = np.multiply(a, b)).")
                continue
            if self.is_list_pop(call) and not (isinstance(s, (gast.Assign, gast.Return,
                                                              gast.Expr)) and s.value is call):
                # (as a statement's whole value it is rewritten: see visit_Assign)
                self.ctx.problem(s, f"'{func.value.id}.pop(...)' of differentiable values "
                                    f"inside an expression",
                                 f"Pop in a statement of its own first (v = "
                                 f"{func.value.id}.pop()), then use v.")
                continue
            if isinstance(func, gast.Attribute) and func.attr in IN_PLACE_OPERATORS:
                # (counted as a change by activity, so a helper doing it is differentiated,
                # where the change carried no gradient: a silently wrong gradient before)
                self.ctx.problem(s, f"'{to_source(func).strip()}(...)', an in-place operator "
                                    f"called as a method, with differentiable values",
                                 "Write the operator (a += v), which srcgrad follows.")
                continue
            what = self.writes_in_place(call)
            if what is not None and isinstance(func, gast.Attribute) \
                    and func.attr in LIST_UNFOLLOWED:
                message = (f"{self.ctx.user_location(s)}: {what} changes in place a list or array "
                           f"holding differentiable values, which srcgrad does not follow (in "
                           f"{self.ctx.fn.__name__}()). Assign a new value instead (v = "
                           f"sorted(v), v = np.sort(v), v = v[::-1]).")
                guards.append(self.check("refuse_differentiable_change",
                                         A.load(func.value.id), message=message, at=s))
                continue
            if what is not None and not self.is_writing_statement(call, s):
                self.ctx.problem(s, f"{what}, which changes an array or list in place, with "
                                    f"differentiable values",
                                 "Compute a new value and assign it (v = np.sort(v); "
                                 "v = np.where(mask, new, v); v = v.copy() first and "
                                 "x[i] = ... for an element).")
                continue
            if A.setattr_arguments(call, self.builtin) is not None:
                if not (isinstance(s, gast.Expr) and s.value is call
                        and self.attribute_store_of(call, s) is not None):
                    self.ctx.problem(s, "setting an attribute to a differentiable value "
                                        "under a name not written out, or inside an "
                                        "expression", "Write the attribute out as its own "
                                        "statement (obj.W = v), or keep the values in a "
                                        "dict (d[name] = v).")
            elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                    and func.attr not in {*HANDLED, *_LIST_METHODS, "pop"} - _UNREWRITTEN \
                    and (isinstance(s, gast.Expr) and s.value is call
                         or not hasattr(np.ndarray, func.attr)) \
                    and func.value.id in self.ctx.local_names \
                    and not self.method_changes_receiver(func.value.id, func.attr) \
                    and not self.class_known(func.value.id):
                # an object of a class not known here (a parameter, a helper's result): the
                # same question, asked of its class at run time (a call whose value is read
                # where nothing differentiates it, y = m.set_w(v) with y unused, ran as
                # plain Python and lost the change; one differentiated is dispatched at run
                # time, where dispatch._method_target asks it again). Not for a value read
                # of an array's method name (a.reshape(...), a.sum(axis=0)): none changes
                # its array, and a check before each would cost vmap and jit their form
                name = func.value.id
                message = (f"{self.ctx.user_location(s)}: '{name}.{func.attr}(...)', a method "
                           f"changing its object '{name}' in place, with differentiable "
                           f"values, is not supported (in {self.ctx.fn.__name__}()). srcgrad "
                           f"does not follow a method's changes of self (the gradient through "
                           f"them would be lost). Write it as a function of the object (def "
                           f"{func.attr}(m, ...): m.W = ...), whose changes srcgrad takes back "
                           f"at the call, or store the attributes here ({name}.W = ...).")
                guards.append(self.check("refuse_changing_method", A.load(name),
                                         A.const(func.attr), message=message, at=s))
            elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                    and func.attr not in HANDLED \
                    and self.method_changes_receiver(func.value.id, func.attr):
                # (also with the object unread after: w = m.W earlier sees the change)
                name = func.value.id
                self.ctx.problem(s, f"'{name}.{func.attr}(...)', a method changing its object "
                                    f"'{name}' in place, with differentiable values",
                                 f"srcgrad does not follow a method's changes of self (the "
                                 f"gradient through them was lost). Write it as a function "
                                 f"of the object (def {func.attr}(m, ...): m.W = ...), whose "
                                 f"changes srcgrad takes back at the call, or store the "
                                 f"attributes here ({name}.W = ...).")
            elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                    and func.value.id in self.ctx.local_names \
                    and func.attr not in {*HANDLED, *_LIST_METHODS, "pop"} \
                    and (isinstance(s, gast.Expr) and s.value is call
                         or not hasattr(np.ndarray, func.attr)):
                guards += self.held_method_checks(func.value.id, func.attr, s)
            elif isinstance(func, gast.Attribute) \
                    and func.attr not in {*HANDLED, *_LIST_METHODS, "pop"} - _UNREWRITTEN \
                    and (isinstance(s, gast.Expr) and s.value is call
                         or not hasattr(np.ndarray, func.attr)) \
                    and not (isinstance(func.value, gast.Name)
                             and func.value.id in self.ctx.local_names) \
                    and self.object_receiver(func.value):
                # the same question of an object a variable holds (m.sub.set_w(v)), a global
                # one (G.set_w(v)) or one a call returns (m.get().set_w(v)): plain Python
                # ran it and the change was lost
                text = to_source(func.value).strip()
                if isinstance(func.value, gast.Name) and text.startswith("_") \
                        and text not in self.ctx.local_names:  # (m.add(u).add(v): write_back's
                    text = "<the object a call returned>"  # temporary holds m.add(u)'s value)
                message = (f"{self.ctx.user_location(s)}: '{text}.{func.attr}(...)', a "
                           f"method changing its object '{text}' in place, with "
                           f"differentiable values, is not supported (in "
                           f"{self.ctx.fn.__name__}()). srcgrad does not follow a method's "
                           f"changes of self (the gradient through them would be lost). "
                           f"Store the attributes here ({text}.W = ...), or keep the object "
                           f"in a variable of its own made here (s = Sub(...)) and write the "
                           f"method as a function of it (def {func.attr}(s, ...): s.W = ...; "
                           f"{func.attr}(s, ...)), whose changes srcgrad takes back at the "
                           f"call.")
                if text == "super()":  # (super().__init__(w): the parent's method)
                    message = (f"{self.ctx.user_location(s)}: 'super().{func.attr}(...)', "
                               f"the parent class's method changing self in place, with "
                               f"differentiable values, is not supported (in "
                               f"{self.ctx.fn.__name__}()). srcgrad does not follow a "
                               f"method's changes of self (the gradient through them would "
                               f"be lost). Store the attributes in this method (self.W = "
                               f"...), as the parent's {func.attr}() does.")
                receiver = func.value
                if not A.pure_reference(receiver):
                    if not (isinstance(s, gast.Expr) and s.value is call):
                        continue  # (a value read: differentiated, dispatch asks it again)
                    held = self.ctx.namer.fresh()  # (computed once, as Python does)
                    guards.append(A.assign(held, receiver, at=s))
                    func.value = receiver = A.load(held)
                guards.append(self.check("refuse_changing_method", A.deepcopy(receiver),
                                         A.const(func.attr), message=message, at=s))
            elif isinstance(func, gast.Attribute) and func.attr in HANDLED \
                    and not isinstance(func.value, gast.Name) \
                    and is_static_ref(func.value, self.ctx) \
                    and isinstance(known_value(func.value, self.ctx), (list, dict, set)):
                # Registry.items.append(self) in an __init__: a class's (or a module's)
                # list, which outlives the call; run as plain Python, the gradient through
                # what it holds was lost
                text = to_source(func.value).strip()
                self.ctx.problem(s, f"'{text}.{func.attr}(...)' with differentiable values on "
                                    f"'{text}', which is not a variable of "
                                    f"{self.ctx.fn.__name__}() (a class's or a module's)",
                                 "Build the list in a variable of the function and return "
                                 "it, or pass it in as an argument.")
            elif isinstance(func, gast.Attribute) and func.attr in HANDLED \
                    and not isinstance(func.value, gast.Name) \
                    and not is_static_ref(func.value, self.ctx) \
                    and not (isinstance(s, (gast.Expr, gast.Assign, gast.Return))
                             and s.value is call and self.held_method(s) is not None
                             and (not isinstance(s, gast.Assign)
                                  or isinstance(s.targets[0], gast.Name))):
                text = to_source(func.value).strip()
                if func.attr == "pop" and self.held_path(func.value, 1) is not None:
                    self.ctx.problem(s, f"'{text}.pop(...)' of differentiable values inside "
                                        f"an expression",
                                     f"Pop in a statement of its own first (v = "
                                     f"{text}.pop()), then use v.")
                    continue
                self.ctx.problem(s, f"'{text}.{func.attr}(...)' changing the object "
                                    f"{text} in place with differentiable values",
                                 f"srcgrad follows in-place changes of variables only. Build "
                                 f"the list or dict in a variable (hs = []; hs.{func.attr}"
                                 f"(...)) and store or read it from there.")
        return guards

    def visit_With(self, s):
        """``with no_grad():``: its body, every value it assigns wrapped in
        ``_rt.stop_gradient`` so that none carries a gradient. Any other manager:
        ``_cm = manager; v = _rt.enter_context(_cm, where)``, the body,
        ``_rt.exit_context(_cm)`` (regrouped into a real 'with' in the forward sweep)."""
        if not is_no_grad_block(s, self.ctx):
            return self.context_block(s)
        body = self.block(s.body)
        for node in body:
            for n in gast.walk(node):
                if isinstance(n, gast.Assign):
                    n.value = A.located(A.call(A.attr(self.ctx.rt, "stop_gradient"), n.value), n)
        return body

    def refuse_varied_guarded(self, s) -> None:
        """``_rt.enter_guarded(_cm)`` (a ``with`` in a try body, trycatch.py) of a manager
        made from differentiable values."""
        value = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
        if A.called_attr(value, self.ctx.rt) == "enter_guarded" \
                and A.names_read(value) & self.ctx.varied:
            self.ctx.problem(s, *_VARIED_MANAGER)

    def context_block(self, s) -> list:
        item, rest = s.items[0], s.items[1:]
        body = [A.located(gast.With(items=rest, body=s.body, type_comment=None), s)] \
            if rest else s.body
        if A.names_read(item.context_expr) & self.ctx.varied:
            self.ctx.problem(s, *_VARIED_MANAGER)
            return [s]
        target = item.optional_vars
        if target is not None and A.names_read(target) & self.ctx.varied:
            self.ctx.problem(s, "a 'with ... as' target that reads differentiable values",
                             "Bind the managed value to a plain name.")
            return [s]
        manager = self.ctx.namer.fresh("_cm")
        where = A.const(str(self.ctx.user_location(s)))
        enter = A.call(A.attr(self.ctx.rt, "enter_context"), A.load(manager), where)
        out = self.visit_Assign(A.assign(manager, item.context_expr, at=s))
        out += self.visit_Assign(A.assign(target, enter, at=s)) if target is not None \
            else [A.expr_stmt(enter, at=s)]
        out += self.block(body)
        return out + [A.expr_stmt(A.call(A.attr(self.ctx.rt, "exit_context"),
                                         A.load(manager)), at=s)]

    # -- match statements -------------------------------------------------------------------
    def visit_Match(self, s):
        """``match`` as ifs: each case tests its pattern's structure (no gradient), binds
        its names by plain assignments, then checks its guard; ``_matched`` skips the rest.
        The branches record which case ran like any if."""
        self.ctx.local_names |= match_bindings(s)
        subject, matched = self.ctx.namer.fresh("_subject"), self.ctx.namer.fresh("_matched")
        out = self.visit_Assign(A.assign(subject, s.subject, at=s))
        if A.names_read(s.subject) & self.ctx.varied:
            self.ctx.varied |= {subject} | match_bindings(s)
        out.append(A.assign(matched, A.const(False), at=s))
        for case in s.cases:
            tests, binds = [], []
            self.pattern(case.pattern, A.load(subject), tests, binds, case.pattern)
            inner = binds + ([A.located(gast.If(test=case.guard, body=[], orelse=[]), case.guard)]
                             if case.guard is not None else [])
            done = [A.assign(matched, A.const(True), at=case.pattern)] + case.body
            if case.guard is not None:
                inner[-1].body = done
            else:
                inner += done
            if tests:
                inner = [A.located(gast.If(test=_conjunction(tests), body=inner, orelse=[]),
                                   case.pattern)]
            not_yet = A.located(gast.UnaryOp(op=gast.Not(), operand=A.load(matched)), s)
            out += self.block([A.located(gast.If(test=not_yet, body=inner, orelse=[]),
                                         case.pattern)])
        return out

    def pattern(self, p, value, tests, binds, at) -> None:
        """Append to ``tests`` the conditions for ``value`` to match ``p`` (each may read
        the parts the earlier ones checked), to ``binds`` the assignments of its names."""
        rt = lambda name, *args: A.call(A.attr(self.ctx.rt, name), *args)  # noqa: E731
        if isinstance(p, gast.MatchValue):
            tests.append(gast.Compare(left=value, ops=[gast.Eq()], comparators=[p.value]))
        elif isinstance(p, gast.MatchSingleton):
            tests.append(gast.Compare(left=value, ops=[gast.Is()],
                                      comparators=[A.const(p.value)]))
        elif isinstance(p, gast.MatchAs):
            if p.pattern is not None:
                self.pattern(p.pattern, value, tests, binds, at)
            if p.name is not None:
                binds.append(A.assign(p.name, A.deepcopy(value), at=at))
        elif isinstance(p, gast.MatchOr):
            if any(isinstance(n, (gast.MatchAs, gast.MatchStar)) and n.name
                   for n in gast.walk(p)):
                self.ctx.problem(p, "an or-pattern that binds names", "Write one case each.")
            alternatives = []
            for alt in p.patterns:
                alt_tests = []
                self.pattern(alt, A.deepcopy(value), alt_tests, [], at)
                alternatives.append(_conjunction(alt_tests))
            tests.append(gast.BoolOp(op=gast.Or(), values=alternatives))
        elif isinstance(p, gast.MatchSequence):
            stars = [i for i, q in enumerate(p.patterns) if isinstance(q, gast.MatchStar)]
            n = len(p.patterns) - len(stars)
            tests.append(rt("is_match_sequence", A.deepcopy(value)))
            tests.append(gast.Compare(left=A.call("len", A.deepcopy(value)),
                                      ops=[gast.GtE() if stars else gast.Eq()],
                                      comparators=[A.const(n)]))
            for i, q in enumerate(p.patterns):
                after = len(p.patterns) - 1 - i
                if isinstance(q, gast.MatchStar):
                    if q.name is not None:
                        part = gast.Slice(lower=A.const(i), upper=A.const(-after) if after
                                          else None, step=None)
                        rest = gast.Subscript(value=A.deepcopy(value), slice=part,
                                              ctx=gast.Load())
                        binds.append(A.assign(q.name, rt("as_list", rest), at=at))
                    continue
                index = i if not stars or i < stars[0] else -after - 1
                item = gast.Subscript(value=A.deepcopy(value), slice=A.const(index),
                                      ctx=gast.Load())
                self.pattern(q, item, tests, binds, at)
        elif isinstance(p, gast.MatchMapping):
            if p.rest is not None:
                self.ctx.problem(p, "'**rest' in a mapping pattern", "Read the keys you need.")
            tests.append(rt("is_match_mapping", A.deepcopy(value)))
            for key, q in zip(p.keys, p.patterns):
                tests.append(gast.Compare(left=key, ops=[gast.In()],
                                          comparators=[A.deepcopy(value)]))
                item = gast.Subscript(value=A.deepcopy(value), slice=A.deepcopy(key),
                                      ctx=gast.Load())
                self.pattern(q, item, tests, binds, at)
        elif isinstance(p, gast.MatchClass):
            tests.append(A.call("isinstance", A.deepcopy(value), p.cls))
            attrs = list(p.kwd_attrs)
            parts = [(a, q) for a, q in zip(attrs, p.kwd_patterns)]
            for i, q in enumerate(p.patterns):
                parts.insert(i, (i, q))
            for attr, q in parts:
                if isinstance(attr, int):  # positional: __match_args__, or the value itself
                    attr = self.match_arg(p, attr)
                if attr is None:
                    continue
                if attr == "":
                    item = A.deepcopy(value)
                else:
                    tests.append(A.call("hasattr", A.deepcopy(value), A.const(attr)))
                    item = gast.Attribute(value=A.deepcopy(value), attr=attr, ctx=gast.Load())
                self.pattern(q, item, tests, binds, at)
        else:
            self.ctx.problem(p, f"a '{type(p).__name__}' pattern", "Use if/elif/else.")

    def match_arg(self, p, i: int) -> str | None:
        """The attribute ``case cls(...)`` matches its i-th positional pattern against (''
        for the subject itself, as builtins like float(v) do); None after a problem."""
        cls = known_value(p.cls, self.ctx)
        if cls in (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str,
                   tuple) and i == 0:
            return ""
        names = getattr(cls, "__match_args__", None) if isinstance(cls, type) else None
        if names is None or i >= len(names):
            self.ctx.problem(p, "a positional class pattern whose attribute is not known "
                                "before the call", "Name the attributes: Cls(x=px).")
            return None
        return names[i]

    # -- assignments -----------------------------------------------------------------------
    def shares_data(self, name: str, s=None) -> bool:
        """Whether, at ``s``, ``name`` may hold its caller's object, or one another name
        holds or views (an alias or a view made by a statement that may run before ``s``)."""
        if name in self.callers:
            return True
        return (name in self.aliased or name in self.views) and self.made_before(name, s)

    def alias_guard(self, name: str, sources: list[str], message: str, s):
        """For ``name``, which an assignment made share its object with other names (``v =
        y``) but is neither a parameter holding the caller's object nor a view: the run-time
        check that none of those names (those bound then, or globals), nor the names it was
        made from, shares its data. None when one of them cannot be checked from here."""
        if name in self.callers or name in self.views:
            return None
        partners, todo = set(), [name]
        while todo:  # (a = b; c = a: a, b and c share one object)
            for other in self.partners.get(todo.pop(), ()):
                if other not in partners:
                    partners.add(other)
                    todo.append(other)
        partners = (partners | set(sources)) - {name} - self.ctx.transient
        local = sorted(p for p in partners if p in self.scope_names)
        outside = sorted(p for p in partners - set(local) if self.is_global(p))
        if not partners or set(local) | set(outside) != partners:
            return None
        local = self.read_later(local, s)
        if not local and not outside:
            return []  # (v = y; y += 1.0, v read no more: nobody sees the change)
        return [self.check("refuse_shared_locals", A.load(name), A.call(A.load("locals")),
                           gast.Tuple(elts=[A.const(n) for n in local], ctx=gast.Load()),
                           gast.Tuple(elts=[A.load(n) for n in outside], ctx=gast.Load()),
                           message=message, at=s)]

    def read_later(self, names, s) -> list[str]:
        """Those of ``names`` (variables that may share data with one ``s`` changes in
        place) something may read after ``s`` changes it: not a variable of this function
        no statement reads any more (``v = y; y += 1.0`` with ``v`` unread after), which
        sees the change no more than the functional rewrite's old value."""
        return [n for n in names if not self.unread_after(n, s)]

    def unread_after(self, name: str, s) -> bool:
        """Whether nothing reads ``name`` once ``s`` has evaluated its value: dead_after, or
        no statement of the loops around ``s`` reads it at all (bound before them)."""
        value = getattr(s, "value", None)
        if value is None or _start(s) is None:
            return False
        if self.dead_after(name, s, value):
            return True
        if name not in self.scope_names or name in self.captured or name in self.ctx.params:
            return False
        inside = {id(n) for n in gast.walk(value)}
        if any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
               and id(n) not in inside for n in gast.walk(s)):
            return False
        start, end = _start(s), _end(s)
        if end is None or any(a <= start and end <= b for a, b in self.spans):
            return False
        around = [a for a, b in self.loops if a is not None and b is not None
                  and a <= start and end <= b]
        return bool(around) and all(at < min(around) for at in self.reads.get(name, ()))

    def unseen_views_guard(self, name: str, s, guards: list) -> list:
        """Before ``name`` changes in place: the run-time check against every name that may
        share its data by any statement of the function (a view made in a branch, or later
        in a loop, which the dominating facts of ``view_of`` do not have), less those the
        ``guards`` already check. ``refuse_shared_locals`` skips the names not bound then."""
        checked = {name}
        for g in guards:
            call = g.value if isinstance(g, gast.Expr) else None
            helper = getattr(getattr(call, "func", None), "attr", None)
            if helper == "refuse_shared_array":
                return []  # every array is refused
            for arg in call.args if helper in ("refuse_viewed", "refuse_shared_locals") else ():
                if isinstance(arg, gast.Tuple):
                    checked |= {e.id if isinstance(e, gast.Name) else e.value
                                for e in arg.elts}
        component, todo = set(), [name]
        while todo:
            for other in self.may_share.get(todo.pop(), ()):
                if other not in component:
                    component.add(other)
                    todo.append(other)
        component -= checked | self.ctx.transient
        local = self.read_later(sorted(n for n in component if n in self.scope_names), s)
        outside = sorted(n for n in component
                         if n not in self.scope_names and self.is_global(n))
        if not local and not outside:
            return []
        which = ", ".join(local + outside)
        message = (f"{self.ctx.user_location(s)}: an in-place update of '{name}' while {which} may "
                   f"share its data (numpy would change both) is not supported (in "
                   f"{self.ctx.fn.__name__}()). Copy it first ({name} = {name}.copy()) or "
                   f"write {name} = ... to make a new array.")
        return [self.check("refuse_shared_locals", A.load(name), A.call(A.load("locals")),
                           gast.Tuple(elts=[A.const(n) for n in local], ctx=gast.Load()),
                           gast.Tuple(elts=[A.load(n) for n in outside], ctx=gast.Load()),
                           message=message, at=s)]

    def made_before(self, name: str, s) -> bool:
        """Whether a statement making ``name`` an alias or a view may run before ``s``: it
        comes earlier in the text, or a loop holds both (an alias made after an in-place
        update cannot see it, unless a next iteration updates again)."""
        start = _start(s) if s is not None else None
        sites = self.sites.get(name) or [None]
        return start is None or any(
            at is None or at < start or any(a <= at <= b and a <= start <= b
                                              for a, b in self.loops) for at in sites)

    def visit_AugAssign(self, s):
        target = s.target = _attribute_form(s.target, self.ctx)
        guard, inplace, unbuilt = [], False, False
        sources = self.sources_of(target.id) if isinstance(target, gast.Name) else []
        if isinstance(target, gast.Name) and not self.shares_data(target.id, s) and sources:
            # made from other names by a call, a display...: numpy changes them too if it is
            # a view of one of them (v = helper(y) returning y[:2])
            guard = self.sources_guard(target.id, sources, s)
        elif isinstance(target, gast.Name) and self.shares_data(target.id, s) \
                and (A.names_read(s.value) | {target.id}) & self.ctx.varied:
            # On an array, '+=' updates in place what another name may also see; on a number
            # it rebinds. Which one only the run time knows: it refuses the array case.
            loc = self.ctx.user_location(s)
            message = (f"{loc}: an in-place update of '{target.id}', which may share its data "
                       f"with another array (an alias, a slice, a row, a reshape), is not "
                       f"supported (in {self.ctx.fn.__name__}()). Write {target.id} = "
                       f"{target.id} {_op_text(s.op)} ... to make a new array, or copy it "
                       f"first ({target.id} = {target.id}.copy())."
                       + (f" A caller may also hand the array over: y = "
                          f"{self.ctx.fn.__name__}(y, ...), y read no more after the call."
                          if target.id in self.ctx.params and not self.ctx.entry else ""))
            aliases = self.alias_guard(target.id, sources, message, s)
            if sources and target.id not in self.callers | self.aliased:
                # where its value came from is known: refused only if it still shares data
                # with one of those (a slice does, a fancy index or an operator's result not)
                guard = [self.refuse_sharing(target.id, sources, message, s)]
            elif aliases is not None:  # v = y earlier: refused only if they still share
                guard = aliases
            else:
                guard = [self.check("refuse_shared_array", A.load(target.id),
                                    message=message, at=s)]
        if isinstance(target, gast.Name):
            guard = self.view_guard(target.id, s) + guard
            if (A.names_read(s.value) | {target.id}) & self.ctx.varied:
                guard += self.unseen_views_guard(target.id, s, guard)
        elif isinstance(target, gast.Subscript) and (A.names_read(s) & self.ctx.varied) \
                and (self.item_checkable(target) or self.held_path(target, 2) is not None):
            inplace = True  # visit_Assign's item_guard (path_guard) checks what '+=' changes
        elif isinstance(target, gast.Attribute):
            inplace = True  # (visit_Assign's object_guard: the array or list m.W holds)
        elif isinstance(target, gast.Subscript) and (A.names_read(s) & self.ctx.varied):
            loc = self.ctx.user_location(s)
            message = (f"{loc}: an in-place update of an array held in a container "
                       f"('{_root(target)}[...] {_op_text(s.op)}= ...') is not supported (in "
                       f"{self.ctx.fn.__name__}()): numpy would change the array itself, which "
                       f"other names may hold. Write {_root(target)}[...] = "
                       f"{_root(target)}[...] {_op_text(s.op)} ... to store a new array.")
            container, item = _as_load(A.deepcopy(target.value)), _as_load(A.deepcopy(target))
            guard = [self.check("refuse_item_update", container, item, message=message,
                                at=s)] + guard
            unbuilt = self.item_guardable(target)  # (b = a.copy(); b[0] += [v]: a[0] too)
        load_target = _as_load(A.deepcopy(s.target))
        value = A.located(gast.BinOp(left=load_target, op=s.op, right=s.value), s)
        lowered = A.assign(s.target, value, at=s)
        if unbuilt:
            guard = [self.item_guard(target, lowered, True)] + guard
        return guard + self.visit_Assign(lowered, inplace)

    def visit_Return(self, s):
        """``return xs.pop(i)`` of a differentiable list: the pop as an assignment first."""
        call = s.value
        if self.is_list_pop(call) or self.held_method(s) is not None:
            tmp = self.ctx.namer.fresh()
            s.value = A.load(tmp)
            return self.visit_Assign(A.assign(tmp, call, at=s)) + [s]
        return [s]

    def visit_AnnAssign(self, s):
        if s.value is None:
            return []
        return self.visit_Assign(A.assign(s.target, s.value, at=s))

    def visit_Assign(self, s, inplace: bool = False):
        """(``inplace``: ``s`` is what ``target op= value`` became, which Python runs as an
        in-place update of the item.)"""
        if len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and isinstance(s.value, gast.Name) and s.value.id == s.targets[0].id:
            return []  # x = x: nothing happens (the adjoint pass would count x twice)
        lowered = self.constructor_stores(s)
        if lowered is not None:
            return [out for t in lowered for out in self.visit_Assign(t)]
        if len(s.targets) > 1:  # a = b = e  ->  a = e; b = a
            first, rest = s.targets[0], s.targets[1:]
            out = self.visit_Assign(A.assign(first, s.value, at=s))
            if not isinstance(first, gast.Name):
                tmp = self.ctx.namer.fresh()
                out = self.visit_Assign(A.assign(tmp, s.value, at=s))
                first = A.store(tmp)
                rest = s.targets
            for t in rest:
                out += self.visit_Assign(A.assign(t, _as_load(A.deepcopy(first)), at=s))
            return out
        target = s.targets[0]
        call = s.value
        if self.is_list_pop(call):
            return self.list_pop(target, call, s)
        path = self.held_method(s) if isinstance(target, gast.Name) else None
        if path is not None:  # v = s.hs.pop()
            return self.held_pop(target, call, path, s)
        if isinstance(target, (gast.Tuple, gast.List)):
            return self.unpack(target, s.value, s)
        target = s.targets[0] = _attribute_form(target, self.ctx)
        if isinstance(target, (gast.Subscript, gast.Attribute)) \
                and self.held_varied(target, s.value):
            path = self.held_path(target, 2)
            if path is not None and any(kind == "a" for kind, _ in path[1]):
                # m.W[0] = v, a.b.W = v: new objects and containers along the path
                text = f"{to_source(target).strip()} {_op_text(self.op_of(s)) + '=' if inplace else '='} ..."
                return self.held_store(path, s.value, s, inplace, text)
        if isinstance(target, gast.Subscript) and self.nested:
            kept = self.enclosing_store(_root(target), s)
            if kept is not None:
                return kept
        if isinstance(target, gast.Subscript) and self.is_varied_store(target, s.value):
            base = target
            while isinstance(base, gast.Subscript):
                base = base.value
            if isinstance(base, gast.Attribute):  # m.W[0] = v: Python changes m.W itself
                text = to_source(target.value).strip()
                self.ctx.problem(s, f"assignment into an element of {text}, held by an "
                                    f"attribute",
                                 f"srcgrad cannot store into attributes, and Python changes "
                                 f"the object {text} in place, which outlives the call. Copy "
                                 f"it into a variable first (v = {text}.copy()), change v and "
                                 f"read v afterwards.")
                return [s]
            if isinstance(base, gast.Name) and base.id not in self.ctx.params \
                    and self.is_global(base.id):
                self.ctx.problem(s, f"assignment into an element of '{base.id}', a global or "
                                    f"closure variable",
                                 f"Python changes that object, which outlives the call. "
                                 f"Copy it into a variable first (v = {base.id}.copy()), "
                                 f"change v and read v afterwards.")
                return [s]
            if isinstance(base, gast.Name) and base.id in self.callers \
                    and base.id not in self.aliased | self.views:
                return self.parameter_guard(base.id, s) + self.functional_setitem(
                    target, s.value, s)
            shared = []
            if isinstance(base, gast.Name) and self.shares_data(base.id, s):
                sources = self.sources_of(base.id)
                what = (f"assignment into an element of '{base.id}', which may share its "
                        f"data with another array (an alias, a slice, a row, a reshape)")
                hint = (f"Copy it first ({base.id} = {base.id}.copy()), so the update "
                        f"cannot silently apply to one name only.")
                message = (f"{self.ctx.user_location(s)}: {what} is not supported (in "
                           f"{self.ctx.fn.__name__}()). {hint}")
                aliases = self.alias_guard(base.id, sources, message, s)
                if aliases is not None and (base.id in self.aliased or not sources):
                    shared = aliases  # v = y earlier: refused only if they still share
                elif not sources or base.id in self.callers | self.aliased:
                    self.ctx.problem(s, what, hint)
                    return [s]
                else:  # where its value came from is known: refused at run time only if
                    # it still shares data with one of those
                    shared = [self.refuse_sharing(base.id, sources, message, s)]
            if isinstance(base, gast.Name) and not shared:
                sources = self.sources_of(base.id)
                if sources:
                    shared = self.sources_guard(base.id, sources, s)
            guard = shared + (self.view_guard(base.id, s) if isinstance(base, gast.Name)
                              else [])
            if isinstance(base, gast.Name):
                guard += self.unseen_views_guard(base.id, s, guard)
            if (inplace or isinstance(target.value, gast.Subscript)
                    or self.container_shared(target)) and self.item_checkable(target):
                guard.append(self.item_guard(target, s, inplace))
            elif isinstance(target.value, gast.Subscript):  # items[0][1] = e: into an item
                inner = target.value
                message = (f"{self.ctx.user_location(s)}: assignment into an element of an array "
                           f"held in a container ('{_root(target)}[...][...] = ...') is not "
                           f"supported (in {self.ctx.fn.__name__}()): numpy would change the "
                           f"array itself, which other names may hold. Copy the item first.")
                guard.append(self.check("refuse_item_update", _as_load(A.deepcopy(inner.value)),
                                        _as_load(A.deepcopy(inner)), message=message, at=s))
                if self.item_guardable(target):  # (b = a.copy(); b[0][0] = v: a[0] too)
                    guard.append(self.item_guard(target, s, inplace))
            return guard + self.functional_setitem(target, s.value, s)
        if isinstance(target, gast.Attribute) and (
                self.is_varied_store(target, s.value) or self.object_checkable(target)
                and self.held_varied(target, s.value)):  # (a helper may change m later)
            if self.object_checkable(target):
                root = target.value.id
                store = "with_attr_object" if id(s) in self.object_stores else "with_attr"
                new = A.located(A.call(A.attr(self.ctx.rt, store), A.load(root),
                                       A.const(target.attr), s.value), s)
                return [self.object_guard(target, s, inplace), A.assign(root, new, at=s)]
            self.ctx.problem(s, "assignment to an attribute of an object in differentiated "
                                "code, unless the object is a variable of the function made "
                                "there by calling its class (m = Model()), or a parameter "
                                "its caller hands over",
                             "Make the object in this function (m = Model(); m.W = v), or "
                             "keep the value in a local variable or a dict.")
            return [s]
        return [s]

    def constructor_stores(self, s) -> list | None:
        """``m = SimpleNamespace(a=v)`` or ``m = Layer(v, 0.5)`` (a plain dataclass) with
        differentiable arguments, ``m`` an object this function makes (built_objects): the
        object made with ``None`` for those, then ``m.a = v``, stores into a new object (what
        the class's ``__init__`` does); else None."""
        if not (len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id in self.built_objects and isinstance(s.value, gast.Call)
                and A.names_read(s.value) & self.ctx.varied and not self.nested):
            return None
        call = s.value
        try:
            fields = _init_fields(static_value(call.func, self.ctx))
        except KeyError:
            return None
        named = _bind_fields(call, fields)
        if named is None:
            return None
        stores = []
        for i, (field, arg) in enumerate(named):
            if A.names_read(arg) & self.ctx.varied:
                target = A.located(gast.Attribute(value=A.load(s.targets[0].id), attr=field,
                                                  ctx=gast.Store()), s)
                stores.append(A.assign(target, arg, at=s))
                if i < len(call.args):
                    call.args[i] = A.located(A.const(None), arg)
                else:
                    next(k for k in call.keywords if k.arg == field).value = \
                        A.located(A.const(None), arg)
        return [s] + stores

    def class_known(self, name: str) -> bool:
        """Whether every binding of ``name`` calls a class known here (``m = Model()``):
        method_changes_receiver then answered for it at transform time."""
        values = [node.value for node in gast.walk(self.tree) if isinstance(node, gast.Assign)
                  and any(isinstance(t, gast.Name) and t.id == name for t in node.targets)]
        return bool(values) and name not in self.ctx.params and all(
            isinstance(v, gast.Call) and isinstance(known_value(v.func, self.ctx), type)
            for v in values) and len(values) == sum(
            isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
            for n in gast.walk(self.tree))

    def methods_as_functions(self, s) -> None:
        """``m.set_x(i, v)`` with differentiable values, ``m`` a variable of this function
        every binding of which calls one class (``m = Model(...)``) whose method changes its
        object in place (``self.xs[i] = v``, ``self.W[i] = v``): ``Model.set_x(m, i, v)``,
        the plain function it calls, so that write_back takes ``m`` back at the call as for
        any helper changing its parameter (it was refused: srcgrad does not follow a
        method's changes of self)."""
        if self.nested:
            return []
        guards = []
        for call in _evaluated_once(s.value) if isinstance(
                s, (gast.Expr, gast.Assign, gast.Return)) and s.value is not None else []:
            func = call.func if isinstance(call, gast.Call) else None
            # (also a method named like a container's, m.add(v): one of a user's class is
            # a plain function, which no list, dict or set method is; it ran as plain
            # Python, a silently wrong gradient before)
            if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                    and A.names_read(call) & self.ctx.varied):
                continue
            cls = self.known_class(func.value.id)
            fn = inspect.getattr_static(cls, func.attr, None) if cls is not None else None
            if isinstance(fn, types.FunctionType) and not fn.__code__.co_flags & _STARRED \
                    and changes_self(cls, func.attr, set()):
                name = self.ctx.helper(fn, f"{cls.__name__}_{func.attr}")
                if func.value.id in self.ctx.params:
                    guards.append(self.overriding_guard(func.value.id, func.attr, name, s))
                call.args.insert(0, A.located(A.load(func.value.id), func.value))
                call.func = A.located(A.load(name), func)
        return guards

    def overriding_guard(self, receiver: str, method: str, helper: str, s) -> gast.stmt:
        """Before ``self.push(v)`` run as ``Stack.push(self, v)`` in a method of ``Stack``:
        refused at run time when ``self``'s class (a subclass) has a ``push`` of its own,
        which Python would call instead."""
        message = (f"{self.ctx.user_location(s)}: '{receiver}.{method}(...)' on an object "
                   f"whose class overrides {method}(), a method changing its object in place, "
                   f"with differentiable values, is not supported (in "
                   f"{self.ctx.fn.__name__}()). srcgrad runs {method}() of the class "
                   f"defining {self.ctx.fn.__name__}(). Call the method from a function of "
                   f"the object's own class, or write it as a function of the object (def "
                   f"{method}(m, ...): m.W = ...).")
        return self.check("refuse_overridden", A.load(receiver), A.const(method),
                          A.load(helper), message=message, at=s)

    def receiver_class(self, name: str) -> type | None:
        """The class defining the method this function is (``Stack.push_twice``), when
        ``name`` is its first parameter (``self``) and never rebound; else None."""
        fn = self.ctx.fn
        if not self.ctx.params or name != self.ctx.params[0] or "<locals>" in getattr(
                fn, "__qualname__", "<locals>") or any(
                isinstance(n, gast.Name) and n.id == name and not isinstance(n.ctx, gast.Load)
                for n in gast.walk(self.tree) if n is not self.tree.args.args[0]):
            return None
        owner = getattr(fn, "__globals__", {})
        *path, method = fn.__qualname__.split(".")
        for part in path:
            owner = owner.get(part) if isinstance(owner, dict) else getattr(owner, part, None)
        if isinstance(owner, type) and owner.__dict__.get(method) is fn:
            return owner
        return None

    def known_class(self, name: str) -> type | None:
        """The class every binding of ``name`` calls (class_known), when they all call the
        same one and it makes its objects with ``object.__new__``; else None. In a method
        of a class, ``self``'s class is that class (or a subclass: methods_as_functions
        checks at run time that it does not override the method called)."""
        receiver = self.receiver_class(name)
        if receiver is not None:
            return receiver
        if not self.class_known(name):
            return None
        classes = {known_value(node.value.func, self.ctx) for node in gast.walk(self.tree)
                   if isinstance(node, gast.Assign) and any(
                       isinstance(t, gast.Name) and t.id == name for t in node.targets)}
        cls = classes.pop() if len(classes) == 1 else None
        return cls if isinstance(cls, type) and cls.__new__ is object.__new__ else None

    def method_changes_receiver(self, name: str, method: str) -> bool:
        """Whether ``name.method(...)`` may change ``name``'s object in place: a method of
        the class one of ``name``'s bindings calls (``m = Model()``) that stores into
        ``self`` or changes what it holds (``self.W[0] = v``, ``self.hs.append(v)``),
        itself or through another method of ``self``."""
        for node in gast.walk(self.tree):
            if isinstance(node, gast.Assign) and isinstance(node.value, gast.Call) \
                    and any(isinstance(t, gast.Name) and t.id == name for t in node.targets):
                cls = known_value(node.value.func, self.ctx)
                if isinstance(cls, type) and changes_self(cls, method, set()):
                    return True
        return False

    def held_path(self, target, least: int) -> tuple[str, list] | None:
        """(root, steps) (_held_path) of a store through ``target`` that held_store rewrites:
        ``least`` steps at least past a variable of this function's own scope every binding
        of which makes a new object, list or dict (or a parameter it owns and never rebinds,
        as item_checkable), with keys calling nothing; else None."""
        path = _held_path(target)
        if path is None or len(path[1]) < least:
            return None
        root = path[0]
        if not ((root in self.built | self.built_objects or root in self.kept_params)
                and not self.nested and root not in self.captured):
            return None
        if any(isinstance(n, (gast.Call, gast.NamedExpr, gast.Lambda)) for n in gast.walk(target)):
            return None
        return path

    def held_varied(self, target, value) -> bool:
        """Whether a store through ``target`` carries a differentiable value or changes what a
        differentiable computation read (``m.W * x`` earlier: the tape holds that array)."""
        root = _root(target)
        return bool((A.names_read(target) | A.names_read(value)) & self.ctx.varied) or (
            root in self.meets_varied and root in self.ctx.local_names)

    def held_method(self, s) -> tuple | None:
        """(root, steps) when ``s`` is ``s.hs.append(v)``, ``d["k"].append(v)``,
        ``s.d.update(e)`` (a list method or ``update`` on an attribute or an item of a
        variable held_path accepts) with differentiable values, else None."""
        call = s.value if isinstance(s, (gast.Expr, gast.Assign, gast.Return)) else None
        if isinstance(s, (gast.Assign, gast.Return)) and not self.is_held_pop(call):
            return None  # (only a pop has a value to assign)
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr in {*_LIST_METHODS, "update", "pop"} and not call.keywords
                and not any(isinstance(a, gast.Starred) for a in call.args)
                and (call.func.attr != "pop" or len(call.args) <= 2)
                and self.held_varied(call.func.value, call)):
            return None
        return self.held_path(call.func.value, 1)

    @staticmethod
    def is_held_pop(call) -> bool:
        """``s.hs.pop(...)``, ``d["k"].pop(...)``: a pop from an attribute's or an item's
        list or dict (held_method says whether held_store can rewrite it)."""
        return (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr == "pop" and not isinstance(call.func.value, gast.Name))

    def held_pop(self, target, call, path, s) -> list:
        """``v = s.hs.pop(i)`` as ``v = s.hs[i]`` (``d.pop(k, default)``: dict_get), then
        ``s = with_attr(s, "hs", list_delete(s.hs, i))`` (held_store); as a statement of its
        own, only the second."""
        out, rest = self.popped(_as_load(A.deepcopy(call.func.value)), target, call, s)
        text = f"{to_source(call.func.value).strip()}.pop(...)"
        return out + self.held_store(path, rest, s, True, text, "list|dict")

    def popped(self, holder, target, call, at) -> tuple[list, gast.expr]:
        """For ``target = holder.pop(i)``: the assignment of the item to ``target`` (none
        without a target; ``d.pop(k, default)``: dict_get), and the container left without it
        (list_delete)."""
        index = call.args[0] if call.args else A.const(-1)
        out = []
        if target is not None:
            if len(call.args) == 2:  # d.pop(k, default): a dict's
                item = A.call(A.attr(self.ctx.rt, "dict_get"), A.deepcopy(holder),
                              A.deepcopy(index), call.args[1])
            else:
                item = gast.Subscript(value=A.deepcopy(holder), slice=A.deepcopy(index),
                                      ctx=gast.Load())
            out += self.visit_Assign(A.assign(target, A.located(item, at), at=at))
        rest = A.located(A.call(A.attr(self.ctx.rt, "list_delete"), holder, index,
                                *[A.const(True)] * (len(call.args) == 2)), at)
        return out, rest

    def held_store(self, path, value, s, inplace: bool, text: str,
                   receiver: str = "") -> list:
        """``m.W[0] = v`` as ``m = _rt.with_attr(m, "W", _rt.setitem(m.W, 0, v))``: new
        objects and containers along the path ``(root, steps)``, after path_guard has
        checked at run time that nothing else holds what Python would change in place."""
        root, steps = path
        self.ctx.varied.add(root)
        guard = self.path_guard(root, steps, s, inplace, text, receiver)
        return [guard, A.assign(root, self.held_value(A.load(root), steps, value, s), at=s)]

    def held_value(self, holder, steps: list, value, at):
        """The new value of ``holder`` once the store at ``steps`` past it is done."""
        if not steps:
            return value
        (kind, key), rest = steps[0], steps[1:]
        if kind == "a":
            child = gast.Attribute(value=A.deepcopy(holder), attr=key, ctx=gast.Load())
            store = "with_attr_object" if not rest and id(at) in self.object_stores \
                else "with_attr"
            new = A.call(A.attr(self.ctx.rt, store), holder, A.const(key),
                         self.held_value(A.located(child, at), rest, value, at))
        else:
            child = gast.Subscript(value=A.deepcopy(holder), slice=_as_load(A.deepcopy(key)),
                                   ctx=gast.Load())
            new = A.call(A.attr(self.ctx.rt, "setitem"), holder,
                         index_value(_as_load(A.deepcopy(key))),
                         self.held_value(A.located(child, at), rest, value, at))
        return A.located(new, at)

    def path_guard(self, root: str, steps: list, s, inplace: bool, text: str,
                   receiver: str) -> gast.stmt:
        """``_rt.refuse_shared_path(root, kinds, keys, inplace, locals(), names, globals,
        message)`` before held_store's rewrite."""
        names = sorted(self.scope_names - {root} - self.ctx.transient)
        outside = [n for n in sorted(A.names_read(self.tree)) if self.is_global(n)]
        message = (f"{self.ctx.user_location(s)}: '{text}' changes in place an object, list, dict "
                   f"or array that something else also holds (another variable, an item or "
                   f"attribute of one, a global, a view), which Python would change too; "
                   f"srcgrad does not support that (in {self.ctx.fn.__name__}()). Copy what it "
                   f"changes first, so that only {root} holds it (m.W = m.W.copy(), "
                   f"s.hs = list(s.hs)), or make it in this function.")
        kinds = "".join(kind for kind, _ in steps)
        keys = [A.const(key) if kind == "a" else index_value(_as_load(A.deepcopy(key)))
                for kind, key in steps]
        return self.check("refuse_shared_path", A.load(root), A.const(kinds),
                          gast.Tuple(elts=keys, ctx=gast.Load()), A.const(inplace),
                          A.call(A.load("locals")),
                          gast.Tuple(elts=[A.const(n) for n in names], ctx=gast.Load()),
                          gast.Tuple(elts=[A.load(n) for n in outside], ctx=gast.Load()),
                          A.const(receiver), message=message, at=s)

    def object_checkable(self, target) -> bool:
        """Whether an attribute store ``m.W = v`` is into a variable of this function's own
        scope (not a global, nor one a nested function reads) every binding of which makes
        a new object by calling its class, or a parameter it owns and never rebinds (as
        item_checkable): object_guard can then decide at run time whether anything else
        holds the object, which Python would change too."""
        if not isinstance(target.value, gast.Name):
            return False
        root = target.value.id
        return ((root in self.built_objects or root in self.kept_params) and not self.nested
                and root not in self.captured)

    def object_guard(self, target, s, inplace: bool) -> gast.stmt:
        """``_rt.refuse_shared_object(m, "W", inplace, locals(), names, globals, message)``
        before ``m.W = v`` (``+=``), rewritten as a new object."""
        root = target.value.id
        names = sorted(self.scope_names - {root} - self.ctx.transient)
        outside = [n for n in sorted(A.names_read(self.tree)) if self.is_global(n)]
        text = f"{root}.{target.attr} {_op_text(self.op_of(s)) + '=' if inplace else '='}"
        message = (f"{self.ctx.user_location(s)}: '{text} ...' changes an object that something "
                   f"else also holds (another variable, a container, a global)"
                   + (", or an array or list that something else holds" if inplace else "")
                   + f", which Python would change too; srcgrad does not support that (in "
                   f"{self.ctx.fn.__name__}()). Make the object in this function and keep "
                   f"its only name{'' if not inplace else f', or write {root}.{target.attr} = {root}.{target.attr} ... to store a new value'}.")
        return self.check("refuse_shared_object", A.load(root), A.const(target.attr),
                          A.const(inplace), A.call(A.load("locals")),
                          gast.Tuple(elts=[A.const(n) for n in names], ctx=gast.Load()),
                          gast.Tuple(elts=[A.load(n) for n in outside], ctx=gast.Load()),
                          message=message, at=s)

    def unpack(self, target, value, at) -> list:
        tmp = self.ctx.namer.fresh()
        varied = bool(A.names_read(value) & self.ctx.varied)
        if not varied and _builtin_call(value, self.ctx) in _ITERATOR_BUILTINS:
            # a, b = zip(*pairs): the items are read by index below, which an iterator has
            # not (a differentiable one is a list already: its rule makes one)
            value = A.located(A.call("tuple", value), at)
        out = [A.assign(tmp, value, at=at)]
        if varied:
            self.ctx.varied.add(tmp)
        stars = [i for i, elt in enumerate(target.elts) if isinstance(elt, gast.Starred)]
        after = len(target.elts) - 1 - stars[0] if stars else 0
        for i, elt in enumerate(target.elts):
            if stars and i == stars[0]:
                # first, *rest, last = v: rest is a list, as Python makes it
                part = gast.Slice(lower=A.const(i), upper=A.const(-after) if after else None,
                                  step=None)
                rest = gast.Subscript(value=A.load(tmp), slice=part, ctx=gast.Load())
                item = A.call(A.attr(self.ctx.rt, "as_list"), A.located(rest, at))
                elt = elt.value
            else:  # items after the starred one count from the end
                index = i if not stars or i < stars[0] else i - len(target.elts)
                item = gast.Subscript(value=A.load(tmp), slice=A.const(index), ctx=gast.Load())
            out += self.visit_Assign(A.assign(elt, A.located(item, at), at=at))
        return out

    def item_checkable(self, target) -> bool:
        """Whether a store or update through ``target`` (``rows[k][1:]``) starts at a list or
        dict this function built, bound in its own scope (not a global, a variable a nested
        function reads), or at a parameter it owns and never rebinds (the differentiated
        function's argument; a helper's, its call site handing it over: ``p = step(p, g)``),
        with indices that call nothing: item_guard can then decide at run time whether
        anything else sees what it changes (the caller's other variables: its
        handed_over_guard)."""
        root = _root(target)
        return ((root in self.built or root in self.kept_params) and not self.nested
                and root not in self.captured
                and not any(isinstance(n, (gast.Call, gast.NamedExpr, gast.Lambda))
                            for n in gast.walk(target)))

    def item_guardable(self, target) -> bool:
        """Whether item_guard can check a store through ``target`` whose root this function
        did not certainly build (``b = a.copy()``, ``b = a[:]``, ``b = copy.copy(a)``, a
        call's result: the items are the original's, which Python changes too): a name of its
        own scope, indices that call nothing. What it looks for is what the function's own
        variables and the globals hold."""
        base = target
        while isinstance(base, gast.Subscript):
            base = base.value
        root = base.id if isinstance(base, gast.Name) else None
        return root is not None and not self.nested and root not in self.captured \
            and root in self.scope_names and root not in self.numpy_made \
            and not any(isinstance(n, (gast.Call, gast.NamedExpr, gast.Lambda))
                        for n in gast.walk(target))

    def container_shared(self, target) -> bool:
        """Whether another name may hold the container ``target`` stores into (``s2 = state``,
        ``outer = [state]``), which Python would then change too."""
        root = _root(target)
        return root in self.aliased | self.views or bool(self.may_share.get(root)) \
            or any(root in vs for vs in self.view_of.values())

    def item_guard(self, target, s, inplace: bool) -> gast.stmt:
        """``_rt.refuse_shared_item(root, (k1, ..., kn), inplace, locals(), names, globals,
        message)`` before ``root[k1]...[kn] = v`` (``+=``): srcgrad stores into new lists,
        dicts and arrays, so it raises at run time when another slot, variable or global
        holds one of those Python would change in place."""
        keys, node = [], target
        while isinstance(node, gast.Subscript):
            keys.insert(0, index_value(_as_load(A.deepcopy(node.slice))))
            node = node.value
        root = node.id
        names = sorted(self.scope_names - {root} - self.ctx.transient)
        outside = [n for n in sorted(A.names_read(self.tree)) if self.is_global(n)]
        text = f"{root}{'[...]' * len(keys)} {_op_text(self.op_of(s)) + '=' if inplace else '='}"
        message = (f"{self.ctx.user_location(s)}: '{text} ...' changes in place a list, dict or "
                   f"array that something else also holds (another item, another variable, "
                   f"a global, a view), which Python would change too; srcgrad does not "
                   f"support that (in {self.ctx.fn.__name__}()). Copy what it changes first "
                   f"so that only {root} holds it: {root} = {root}.copy() for the container, "
                   f"{root}[k] = {root}[k].copy() for an array in it.")
        return self.check("refuse_shared_item", A.load(root),
                          gast.Tuple(elts=keys, ctx=gast.Load()), A.const(inplace),
                          A.call(A.load("locals")),
                          gast.Tuple(elts=[A.const(n) for n in names], ctx=gast.Load()),
                          gast.Tuple(elts=[A.load(n) for n in outside], ctx=gast.Load()),
                          message=message, at=s)

    @staticmethod
    def op_of(s):
        """The operator of ``target op= value`` after it became ``target = target op value``."""
        return s.value.op if isinstance(s.value, gast.BinOp) else None

    def is_varied_store(self, target, value) -> bool:
        names = A.names_read(target) | A.names_read(value)
        if isinstance(target, gast.Subscript):
            base = target
            while isinstance(base, gast.Subscript):
                base = base.value
            if isinstance(base, gast.Name) and base.id in self.meets_varied \
                    and base.id in self.ctx.local_names:
                return True
        return bool(names & self.ctx.varied)

    def functional_setitem(self, target, value, at) -> list:
        """``x[i] = v`` -> ``x = _rt.setitem(x, i, v)`` (nested targets recursively)."""
        container = target.value
        new = A.call(A.attr(self.ctx.rt, "setitem"), _as_load(A.deepcopy(container)),
                     index_value(target.slice), value)
        A.located(new, at)
        if isinstance(container, gast.Name):
            return [A.assign(container.id, new, at=at)]
        if isinstance(container, gast.Subscript):
            return self.functional_setitem(container, new, at)
        self.ctx.problem(at, "assignment into an element of an attribute or call result",
                         "Assign the container to a local variable first.")
        return []

    def visit_Expr(self, s):
        call = s.value
        store = self.attribute_store_of(call, s) or self.writing_call_store(call, s)
        if store is not None:  # setattr(m, "W", v) is m.W = v
            return self.visit_Assign(store)
        path = self.held_method(s)
        if path is not None and call.func.attr == "pop":
            return self.held_pop(None, call, path, s)
        if path is not None:  # s.hs.append(v): s = with_attr(s, "hs", list_append(s.hs, v))
            method = call.func.attr
            helper = _LIST_METHODS.get(method, "dict_update")
            value = A.located(A.call(A.attr(self.ctx.rt, helper),
                                     _as_load(A.deepcopy(call.func.value)), *call.args), s)
            text = f"{to_source(call.func.value).strip()}.{method}(...)"
            return self.held_store(path, value, s, True, text,
                                   "dict" if method == "update" else "list")
        if (self.nested and isinstance(call, gast.Call)
                and isinstance(call.func, gast.Attribute)
                and isinstance(call.func.value, gast.Name)
                and call.func.attr in {*_LIST_METHODS, "update"}):
            kept = self.enclosing_store(call.func.value.id, s)
            if kept is not None:
                return kept
        if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and isinstance(call.func.value, gast.Name)
                and call.func.attr in {*_LIST_METHODS, "pop"}
                and (A.names_read(call) & self.ctx.varied)):
            name = call.func.value.id
            if name not in self.ctx.local_names and self.resolves(name):
                # (a global's or a closure's list: rebinding the name would make it local)
                self.ctx.problem(s, f"'{name}.{call.func.attr}(...)' with differentiable "
                                    f"values on '{name}', which is not a variable of "
                                    f"{self.ctx.fn.__name__}() (a global or a closure's)",
                                 f"Build the list in a variable of the function and return "
                                 f"it ({name} = []; ...; return {name}).")
                return [s]
            if name in self.aliased:
                self.ctx.problem(s, f"'{name}.{call.func.attr}(...)' on a list another variable "
                                    f"also refers to", f"Copy it first ({name} = list({name})).")
                return [s]
            if name in self.callers:  # (the rewrite below would leave the caller's unchanged)
                self.ctx.problem(s, f"'{name}.{call.func.attr}(...)' on the parameter '{name}', "
                                    f"the caller's list (Python would change the caller's too)",
                                 f"Copy it first ({name} = list({name})), or return it and "
                                 f"hand it over at the call ({name} = "
                                 f"{self.ctx.fn.__name__}({name}, ...)).")
                return [s]
            guards = self.shared_container_guards(name, s)
            if call.func.attr == "pop":
                return guards + self.list_pop(None, call, s)
            helper = A.attr(self.ctx.rt, _LIST_METHODS[call.func.attr])
            new = A.located(A.call(helper, A.load(name), *call.args), s)
            return guards + [A.assign(name, new, at=s)]
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                and call.func.attr == "update" and isinstance(call.func.value, gast.Name) \
                and (A.names_read(call) & self.ctx.varied):
            name = call.func.value.id
            if name in self.callers:
                self.ctx.problem(s, f"'{name}.update(...)' on the parameter '{name}', the "
                                    f"caller's dict (Python would change the caller's too)",
                                 f"Copy it first ({name} = dict({name})), or return it and "
                                 f"hand it over at the call.")
                return [s]
            # d.update(pairs, k=v): the pairs' dict, then the keywords' (as Python applies them)
            others = [A.call(A.attr(self.ctx.rt, "dict_copy"), a) if not isinstance(
                a, gast.Dict) else a for a in call.args]
            if call.keywords:
                others.append(gast.Dict(keys=[None if k.arg is None else A.const(k.arg)
                                              for k in call.keywords],
                                        values=[k.value for k in call.keywords]))
            updates = [A.assign(name, A.located(A.call(A.attr(self.ctx.rt, "dict_update"),
                                                       A.load(name), other), s), at=s)
                       for other in others]
            return self.shared_container_guards(name, s) + updates
        return [s]

    def transformed_callee(self, func) -> bool:
        """Whether ``func`` is a Python function of the user's (not numpy's): srcgrad
        differentiates its source, where a write it does is seen, so its own ``out=``
        parameter (``summary(x, out="mean")``) is an ordinary argument."""
        fn = known_value(func, self.ctx)
        return isinstance(fn, types.FunctionType) \
            and not (getattr(fn, "__module__", None) or "").startswith("numpy")

    def writes_in_place(self, call) -> str | None:
        """The text of ``call`` when it changes an array or list in place that srcgrad would
        not see change (``np.copyto(v, x)``, ``np.add.at(v, i, x)``, ``v.sort()`` on a
        differentiable ``v``), else None."""
        func = call.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                and func.attr in UNFOLLOWED and func.value.id in self.ctx.varied \
                and func.value.id in self.ctx.local_names:
            return f"'{func.value.id}.{func.attr}(...)'"
        if isinstance(func, gast.Attribute) and func.attr in _SHUFFLING_METHODS and call.args \
                and A.names_read(call.args[0]) & self.ctx.varied:
            return f"'{to_source(func).strip()}(...)'"
        fn = known_value(func, self.ctx)
        if fn is None:
            return None
        if any(fn is f for f in _IN_PLACE_FUNCTIONS) or (
                isinstance(func, gast.Attribute) and func.attr == "at"
                and isinstance(getattr(fn, "__self__", None), np.ufunc)):
            return f"'{to_source(func).strip()}(...)'"
        return None

    def builtin(self, name: str) -> bool:
        return _builtin(name, self.ctx)

    def attribute_store_of(self, call, at):
        """``obj.name = v`` for ``setattr(obj, "name", v)``, ``obj.__setattr__("name", v)``
        or ``object.__setattr__(obj, "name", v)`` storing a differentiable value, else None."""
        if not (isinstance(call, gast.Call) and A.names_read(call) & self.ctx.varied):
            return None
        args = A.setattr_arguments(call, self.builtin)
        name = None if args is None else _attribute_name(call, args)
        if name is None:
            return None
        target = A.located(gast.Attribute(value=args[0], attr=name, ctx=gast.Store()), at)
        store = A.assign(target, args[2], at=at)
        if isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name) \
                and call.func.value.id == "object":
            self.object_stores.add(id(store))  # (bypasses the class's __setattr__)
        return store

    def is_writing_statement(self, call, s) -> bool:
        """``call`` is statement ``s``'s whole value and rewritten as an element assignment
        (writing_call_store)."""
        return isinstance(s, gast.Expr) and s.value is call \
            and self.writing_call_store(call, s) is not None

    def writing_call_store(self, call, at):
        """The element assignment a numpy call writing into an array is, for such a call as a
        statement of its own with differentiable values, else None: ``a[...] = v`` for
        ``np.copyto(a, v)``, ``a[...] = f(x, y)`` for ``f(x, y, out=a)``, ``a[...] =
        _rt.scatter_add(a, index, values)`` for ``np.add.at(a, index, values)``
        (``np.subtract.at`` adds ``-values``). Element assignment differentiates the store
        (and checks for other holders of ``a``) like any other."""
        if not (isinstance(call, gast.Call) and A.names_read(call) & self.ctx.varied
                and not any(isinstance(a, gast.Starred) for a in call.args)
                and all(k.arg is not None for k in call.keywords)):
            return None
        fn = known_value(call.func, self.ctx)
        outs = [k for k in call.keywords if k.arg == "out"]
        if outs and (getattr(fn, "__module__", None) or "").startswith("numpy") \
                or isinstance(fn, np.ufunc):
            target = outs[0].value if outs else None
            if isinstance(target, gast.Tuple) and len(target.elts) == 1:
                target = target.elts[0]
            value = gast.Call(func=call.func, args=call.args,
                              keywords=[k for k in call.keywords if k.arg != "out"])
        elif fn is np.copyto and len(call.args) == 2 and not call.keywords:
            target, value = call.args
        elif fn is np.fill_diagonal and len(call.args) == 2 and not call.keywords:
            target, value = call.args  # a[_rt.diagonal_index(a)] = v (wrap=: refused)
            index = A.call(A.attr(self.ctx.rt, "diagonal_index"), _as_load(A.deepcopy(target)))
            if not isinstance(target, (gast.Name, gast.Attribute, gast.Subscript)):
                return None
            store = A.located(gast.Subscript(value=_as_load(A.deepcopy(target)),
                                             slice=index, ctx=gast.Store()), at)
            return A.assign(store, A.located(value, at), at=at)
        elif (fn is operator.setitem and len(call.args) == 3 or isinstance(
                call.func, gast.Attribute) and call.func.attr == "__setitem__"
                and len(call.args) == 2) and not call.keywords:
            # operator.setitem(a, i, v) and a.__setitem__(i, v) are a[i] = v
            container, index, value = call.args if fn is operator.setitem \
                else [call.func.value] + call.args
            store = A.located(gast.Subscript(value=_as_load(A.deepcopy(container)),
                                             slice=index, ctx=gast.Store()), at)
            return A.assign(store, value, at=at) \
                if isinstance(container, (gast.Name, gast.Attribute, gast.Subscript)) else None
        elif isinstance(getattr(fn, "__self__", None), np.ufunc) and call.func.attr == "at" \
                and fn.__self__ in (np.add, np.subtract) and len(call.args) == 3 \
                and not call.keywords:
            target, index, values = call.args
            if fn.__self__ is np.subtract:
                values = gast.UnaryOp(op=gast.USub(), operand=values)
            value = A.call(A.attr(self.ctx.rt, "scatter_add"), _as_load(A.deepcopy(target)),
                           index, values)
        else:
            return None
        if not isinstance(target, (gast.Name, gast.Attribute, gast.Subscript)):
            return None
        store = A.located(gast.Subscript(value=_as_load(A.deepcopy(target)),
                                         slice=A.const(Ellipsis), ctx=gast.Store()), at)
        return A.assign(store, A.located(value, at), at=at)

    def shared_container_guards(self, name: str, s) -> list:
        """Before ``name.append(v)`` (a list method, ``d.update(...)``), rewritten as a new
        container: raise at run time if a name it was made from, or one made from it, is or
        holds the same list or dict (``q = ident(ws); q.append(v)`` changes ``ws`` too)."""
        sources = self.sources_of(name)
        guards = self.sources_guard(name, sources, s) if sources else []
        return guards + self.view_guard(name, s)

    def is_list_pop(self, call) -> bool:
        """``xs.pop(...)`` of a differentiable variable (not one of srcgrad's tapes)."""
        return (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and isinstance(call.func.value, gast.Name) and call.func.attr == "pop"
                and call.func.value.id in self.ctx.varied
                and not self.ctx.is_tape(call.func.value.id))

    def list_pop(self, target, call, at) -> list:
        name = call.func.value.id
        if name in self.callers:
            self.ctx.problem(at, f"'{name}.pop(...)' on the parameter '{name}', the caller's "
                                 f"list (Python would change the caller's too)",
                             f"Copy it first ({name} = list({name})).")
            return [at]
        out, rest = self.popped(A.load(name), target, call, at)
        return out + [A.assign(name, rest, at=at)]

    # -- loops -----------------------------------------------------------------------------
    def visit_For(self, s):
        # read before the body is desugared: there 'y *= 2' is an update (which, on an
        # array, the loop's iterator sees), not yet a rebinding 'y = y * 2'
        rebinds = _rebound_names(s.body + s.orelse)
        # (read before too: there 'xs.append(v)' is not yet 'xs = ...append...')
        grown = _length_changed(s.body, A.names_read(s.iter))
        # a helper the body calls may lengthen the list too, which write_back takes back
        taken = self.taken_back_in(s.body, A.names_read(s.iter))
        grown += [n for n in taken if n not in grown]
        self.refuse_updates_of_iterated_views(s)
        alias = None if _is_range(s.iter, self.ctx) else self.loop_alias(s, rebinds, grown)
        index = None
        if alias is not None:
            index = alias[2] or self.ctx.namer.fresh("_i")
            self.loop_aliases[alias[0]] = (alias[1], index)
        try:
            s.body = self.block(s.body)
        finally:
            if alias is not None:
                del self.loop_aliases[alias[0]]
        s.orelse = self.block(s.orelse)
        if alias is not None and alias[0] in self.aliases_written:
            self.aliases_written.discard(alias[0])
            return self.index_loop(s, rebinds, grown, index)
        if not (A.names_read(s.iter) & self.ctx.varied) and not taken \
                or _is_range(s.iter, self.ctx):
            # a range yields integers: nothing differentiable to iterate
            if not isinstance(s.target, gast.Name):
                # for a, b in pairs  ->  for _t in pairs: a, b = _t
                tmp = self.ctx.namer.fresh("_e")
                s.body = self.visit_Assign(A.assign(s.target, A.load(tmp), at=s)) + s.body
                s.target = A.store(tmp)
            return [s]
        return self.index_loop(s, rebinds, grown)

    def live_length_loop(self, s, seq: str, idx_target, elt_target, start, fn) -> list:
        """``for t in xs`` (or ``enumerate(xs)``) whose body appends to or removes from the
        list ``xs``: Python's iterator reads the list's length again before each item, so
        the loop is ``_i = -1; while _i + 1 < len(xs): _i += 1; t = xs[_i]; body``, reading
        ``xs`` as the body's functional updates leave it."""
        index = self.ctx.namer.fresh("_i")
        step = A.located(gast.BinOp(left=A.load(index), op=gast.Add(), right=A.const(1)), s)
        test = gast.Compare(left=A.deepcopy(step), ops=[gast.Lt()],
                            comparators=[A.call("len", A.load(seq))])
        body = [A.assign(index, step, at=s)]
        if idx_target is not None:
            value = A.load(index) if start is None else A.located(
                gast.BinOp(left=A.load(index), op=gast.Add(), right=start), s)
            body += self.visit_Assign(A.assign(idx_target, value, at=s))
        item = gast.Subscript(value=A.load(seq), slice=A.load(index), ctx=gast.Load()) \
            if fn == "enumerate" else A.call(A.attr(self.ctx.rt, "element"), A.load(seq),
                                             A.load(index))
        body += self.visit_Assign(A.assign(elt_target, A.located(item, s), at=s))
        loop = gast.While(test=A.located(test, s), body=body + s.body, orelse=s.orelse)
        return [A.assign(index, A.const(-1), at=s), A.located(loop, s)]

    def refuse_updates_of_iterated_views(self, s) -> None:
        """``for b in zip(u, y.reshape(3)): ... y *= 2``: numpy's iterator reads the view
        lazily and sees the update, a copy would not; refused."""
        it = s.iter
        seqs = list(it.args) if isinstance(it, gast.Call) and _builtin_call(it, self.ctx) in (
            "zip", "enumerate", "reversed") else [it]
        updated = {n for stmt in s.body for node in gast.walk(stmt)
                   for n in ([_root(node.target)] if isinstance(node, gast.AugAssign) else
                             [_root(t) for t in node.targets if isinstance(t, gast.Subscript)]
                             if isinstance(node, gast.Assign) else [])}
        rebound = _rebound_names(s.body)
        for seq in {A.names_read(q).pop() if isinstance(q, gast.Name) else id(q): q
                    for q in seqs}.values():  # (zip(x, x): once)
            if isinstance(seq, gast.Name) and seq.id in updated & rebound \
                    and A.names_read(s) & self.ctx.varied:
                # 'x *= ...' changes the array being iterated until 'x = ...' rebinds x
                self.ctx.problem(s, f"a loop over '{seq.id}' whose body both updates "
                                    f"'{seq.id}' in place and rebinds it",
                                 f"Write {seq.id} = {seq.id} * ... instead of the in-place "
                                 f"update, or loop over a copy.")
            base = _viewed_name(seq) if _may_be_view(seq) else None
            if base is not None and base in updated and A.names_read(s) & self.ctx.varied:
                self.ctx.problem(s, f"a loop over a view of '{base}' whose body updates "
                                    f"'{base}' in place",
                                 f"Loop over a copy ({base}.reshape(...).copy()), or write "
                                 f"{base} = ... in the body.")

    def index_loop(self, s, rebinds: set[str], grown: list[str], index=None) -> list:
        """``for t in X`` over a varied X -> ``for _i in range(len(X)): t = X[_i]``;
        ``rebinds``: the names the loop body binds anew; ``grown``: the lists read by the
        loop's sequence that its body lengthens or shortens in place; ``index``: the
        counter's name, when the body reads it already (loop_alias_writes)."""
        namer = self.ctx.namer
        it, target = s.iter, s.target
        fn = _builtin_call(it, self.ctx)
        pre = []
        start = None
        if fn == "enumerate" and 1 <= len(it.args) <= 2 and isinstance(target, gast.Tuple) \
                and len(target.elts) == 2:
            seqs, idx_target, elt_targets = [it.args[0]], target.elts[0], [target.elts[1]]
            start = it.args[1] if len(it.args) == 2 else None
        elif fn == "zip" and isinstance(target, gast.Tuple) \
                and len(target.elts) == len(it.args):
            seqs, idx_target, elt_targets = list(it.args), None, list(target.elts)
        else:
            seqs, idx_target, elt_targets = [it], None, [target]
        reverse = False
        if fn == "reversed" and len(it.args) == 1:
            seqs, reverse = [it.args[0]], True
        seq_names = []
        # the loop iterates the sequence of its start: a name the target or the body
        # rebinds is read once, into a temporary
        targets_written = A.names_written(target) | rebinds
        # (a dict's items(), keys() or values() view is iterable, not indexable either)
        seqs = [A.located(A.call("list", q), q)
                if _generator_call(q, self.ctx) or _dict_view_call(q) else q for q in seqs]
        for seq in seqs:
            if _builtin_call(seq, self.ctx) == "reversed" and len(seq.args) == 1:
                # zip(x, reversed(y)): the reversed sequence as a value, y[::-1]
                seq = A.located(gast.Subscript(
                    value=seq.args[0], slice=gast.Slice(lower=None, upper=None,
                                                        step=A.const(-1)),
                    ctx=gast.Load()), s)
            if isinstance(seq, gast.Name) and seq.id not in targets_written:
                seq_names.append(seq.id)
            else:
                tmp = namer.fresh()
                pre += self.visit_Assign(A.assign(tmp, seq, at=s))
                seq_names.append(tmp)
        grown = [n for n in grown if n in seq_names or n in targets_written]
        if grown:
            if fn in ("zip", "reversed") or set(seq_names) - {q.id for q in seqs
                                                               if isinstance(q, gast.Name)}:
                self.ctx.problem(s, f"a loop over '{grown[0]}' (zipped, reversed or rebound) "
                                    f"whose body adds or removes its items",
                                 f"Iterate over a copy (list({grown[0]})), or loop over an "
                                 f"index: while i < len({grown[0]}): ...")
                return [s]
            return pre + self.live_length_loop(s, seq_names[0], idx_target, elt_targets[0],
                                               start, fn)
        if index is None:
            index = idx_target.id if isinstance(idx_target, gast.Name) and start is None \
                else namer.fresh("_i")
        lengths = [A.call("len", A.load(n)) for n in seq_names]
        length = lengths[0] if len(lengths) == 1 else A.call("min", *lengths)
        rng = A.call("range", length)
        if reverse:
            rng = A.call("reversed", rng)
        body = []
        if start is not None:  # enumerate(x, start): the user's index is offset
            offset = A.located(gast.BinOp(left=A.load(index), op=gast.Add(), right=start), s)
            body += self.visit_Assign(A.assign(idx_target, offset, at=s))
        for name, t in zip(seq_names, elt_targets):
            if fn == "reversed":
                item = gast.Subscript(value=A.load(name), slice=A.load(index), ctx=gast.Load())
            else:  # 'for t in X' (also zipped, enumerated) iterates a dict over its keys
                item = A.call(A.attr(self.ctx.rt, "element"), A.load(name), A.load(index))
            A.located(item, s)
            body += self.visit_Assign(A.assign(t, item, at=s))
        loop = gast.For(target=A.store(index), iter=A.located(rng, s), body=body + s.body,
                        orelse=s.orelse, type_comment=None)
        return pre + [A.located(loop, s)]

    # -- assignment expressions -------------------------------------------------------------
    def hoist_walrus(self, s) -> list:
        """``(n := e)`` in a statement's expressions: ``n = e`` before it, ``n`` in its place."""
        found = []
        hoister = _WalrusHoister(self.ctx, found)
        for field in ("value", "test", "iter"):
            node = getattr(s, field, None)
            if isinstance(node, gast.AST) and not isinstance(s, gast.While) \
                    and _has_walrus(node):
                setattr(s, field, hoister.visit(node))
        return self.block(found)

    def loop_with_lowered_test(self, s) -> list:
        """``while test: body`` whose test assigns (``(n := e) > 0``) or calls a helper whose
        call site takes back what it changes (``while push(xs, v):``) -> ``while True: if not
        test: break; body``: the test becomes an 'if' test, run before each iteration and
        once more when it fails, as Python runs it (hoist_walrus, write_back). An 'else'
        block runs after the loop when the test failed (a flag), not after a 'break'."""
        test = A.located(gast.UnaryOp(op=gast.Not(), operand=s.test), s)
        stop, after = [A.located(gast.Break(), s)], []
        if s.orelse:
            ran_out = self.ctx.namer.fresh("_ran_out")
            stop.insert(0, A.assign(ran_out, A.const(True), at=s))
            after = [A.located(gast.If(test=A.load(ran_out), body=s.orelse, orelse=[]), s)]
            before = [A.assign(ran_out, A.const(False), at=s)]
        else:
            before = []
        check = A.located(gast.If(test=test, body=stop, orelse=[]), s)
        loop = A.located(gast.While(test=A.const(True), body=[check] + s.body, orelse=[]), s)
        return before + [loop] + after

    # -- comprehensions --------------------------------------------------------------------
    def hoist_comprehensions(self, s) -> list:
        """Lift list/dict comprehensions in ``s``'s expressions into loops before ``s``."""
        pre = []
        hoister = _CompHoister(self, pre, s)
        for field in ("value", "test", "iter", "subject"):
            node = getattr(s, field, None)
            if isinstance(node, gast.AST) and not isinstance(s, gast.While):
                setattr(s, field, hoister.visit(node))
        return pre


def _called_once(value):
    """The calls ``value`` evaluates exactly once, whatever its values: not those under
    'and'/'or' after the first operand, in a conditional expression's branches, in a lambda or
    a comprehension."""
    return (node for node in _evaluated_once(value) if isinstance(node, gast.Call))


def _evaluated_once(value):
    """The nodes of ``value`` evaluated exactly once, whatever its values (as
    _called_once): the first operand of 'and'/'or' and a conditional expression's test, not
    the other parts; not inside a lambda or a comprehension."""
    yield value
    if isinstance(value, gast.BoolOp):
        children = value.values[:1]
    elif isinstance(value, gast.IfExp):
        children = [value.test]
    elif isinstance(value, (gast.Lambda, gast.ListComp, gast.DictComp, gast.SetComp,
                            gast.GeneratorExp)):
        children = []
    else:
        children = list(gast.iter_child_nodes(value))
    for child in children:
        yield from _evaluated_once(child)


def _sometimes(node) -> list:
    """The parts of an 'and'/'or' or conditional expression evaluated only sometimes."""
    return node.values[1:] if isinstance(node, gast.BoolOp) else [node.body, node.orelse]


def _item_path(node) -> tuple[str, list] | None:
    """``("state", [k1, ..., kn])`` for ``state[k1]...[kn]``, each key a constant, a
    variable or a negated constant (evaluated again by the store that writes the item
    back, to the same key); None for anything else."""
    keys = []
    while isinstance(node, gast.Subscript):
        key = node.slice
        if not (isinstance(key, (gast.Constant, gast.Name)) or (
                isinstance(key, gast.UnaryOp) and isinstance(key.op, gast.USub)
                and isinstance(key.operand, gast.Constant))):
            return None
        keys.insert(0, key)
        node = node.value
    return (node.id, keys) if keys and isinstance(node, gast.Name) else None


def _replaced(tree, old, new):
    """``tree`` with the node ``old`` (by identity) replaced by ``new``."""
    class Replace(gast.NodeTransformer):
        def visit(self, node):
            return new if node is old else self.generic_visit(node)
    return Replace().visit(tree)


def _conjunction(tests):
    if not tests:
        return A.const(True)
    return tests[0] if len(tests) == 1 else gast.BoolOp(op=gast.And(), values=tests)


def _has_walrus(node) -> bool:
    return any(isinstance(n, gast.NamedExpr) for n in gast.walk(node))


class _WalrusHoister(gast.NodeTransformer):
    """Lifts assignment expressions out of one statement's expressions, in evaluation order;
    those evaluated only sometimes ('and'/'or' operands after the first, conditional
    expression branches) are refused rather than evaluated always."""

    def __init__(self, ctx: Context, found: list):
        self.ctx, self.found = ctx, found

    def visit_NamedExpr(self, node):
        value = self.visit(node.value)
        self.found.append(A.assign(node.target.id, value, at=node))
        return A.located(A.load(node.target.id), node)

    def _conditional(self, parts, node):
        for part in parts:
            if _has_walrus(part):
                self.ctx.problem(part, "':=' in a part of an expression that is evaluated "
                                       "only sometimes", "Assign in a separate statement.")
        return node

    def visit_BoolOp(self, node):
        node.values[0] = self.visit(node.values[0])
        return self._conditional(node.values[1:], node)

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        return self._conditional([node.body, node.orelse], node)

    def visit_Lambda(self, node):  # their own scope, or lowered later with their own loops
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda


class _CompHoister(gast.NodeTransformer):
    def __init__(self, owner: _Desugar, pre: list, at):
        self.owner, self.pre, self.at = owner, pre, at
        # generator expressions whose consumer takes all their items at once
        self.consumed: set[int] = set()
        if isinstance(at, gast.For):
            self.consume(at.iter)

    def visit_IfExp(self, node):
        """``a if c else b`` with a comprehension (or reduce, map) in a branch: that branch's
        loops run only when it is taken, as ``if c: _c = a else: _c = b`` before the
        statement (hoisted out of the expression, they would run, and may raise, always)."""
        node.test = self.visit(node.test)
        if not any(self.hoists(p) for p in (node.body, node.orelse)):
            return self.generic_visit(node)
        return self.branches(node.test, node.body, node.orelse, node)

    def visit_BoolOp(self, node):
        """``a and b`` / ``a or b`` with something to hoist after the first operand: each
        later operand evaluated only when the ones before let it, as Python does."""
        first = self.visit(node.values[0])
        rest = node.values[1:]
        if not any(self.hoists(p) for p in rest):
            node.values = [first] + [self.visit(v) for v in rest]
            return node
        kept = A.located(gast.BoolOp(op=node.op, values=rest), node) if len(rest) > 1 \
            else rest[0]
        if isinstance(node.op, gast.And):  # a and b: b when a is true, else a
            return self.branches(first, kept, first, node)
        return self.branches(first, first, kept, node)

    def branches(self, test, body, orelse, at):
        """A fresh name holding ``body`` when ``test`` is true, else ``orelse``, each hoisted
        into its own branch of an ``if`` before the statement. (``test`` is read twice when
        it is also a branch, as and/or do: a value, evaluated once.)"""
        ctx = self.owner.ctx
        # (not "_c": a generated sweep's _c<N> are its branch decisions, which the activity
        # analysis of a second derivative takes for booleans: these values may be active)
        if not isinstance(test, gast.Name):
            held = ctx.namer.fresh("_if")
            self.pre.append(A.assign(held, test, at=self.at))
            if A.names_read(test) & ctx.varied:
                ctx.varied.add(held)
            body = A.load(held) if body is test else body
            orelse = A.load(held) if orelse is test else orelse
            test = A.load(held)
        out = ctx.namer.fresh("_if")
        blocks = []
        for part in (body, orelse):
            pre = []
            hoister = _CompHoister(self.owner, pre, self.at)
            hoister.consumed = self.consumed
            value = hoister.visit(part) if part is not test else A.load(test.id)
            if A.names_read(value) & ctx.varied:
                ctx.varied.add(out)
            blocks.append(pre + [A.assign(out, value, at=self.at)])
        self.pre.append(A.located(gast.If(test=A.load(test.id), body=blocks[0],
                                          orelse=blocks[1]), at))
        return A.load(out)

    def hoists(self, node) -> bool:
        """Whether visiting ``node`` moves loops before the statement."""
        todo = [node]
        while todo:
            n = todo.pop()
            if isinstance(n, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)) \
                    or isinstance(n, gast.Call) and (self.is_reduce(n) or _is_map_call(
                        n, self.owner.ctx) or iterator_kind(n, self.owner.ctx)
                        or self.is_setdefault(n)):
                return True
            if not isinstance(n, gast.Lambda):
                todo.extend(gast.iter_child_nodes(n))
        return False

    def consume(self, node) -> None:
        """``node`` is iterated to its end at once: a generator expression or map there (also
        one zipped or enumerated there) may be the list of its items."""
        if isinstance(node, gast.GeneratorExp) or _is_map_call(node, self.owner.ctx):
            self.consumed.add(id(node))
        elif _builtin_call(node, self.owner.ctx) in ("zip", "enumerate"):
            for a in node.args:
                self.consume(a)
        elif iterator_kind(node, self.owner.ctx) is not None:
            self.consumed.add(id(node))

    def visit_Lambda(self, node):
        return node  # its body runs later, in its own scope

    def visit_ListComp(self, node):
        return self.lower(node, gast.List(elts=[], ctx=gast.Load()), [node.elt])

    def visit_GeneratorExp(self, node):
        """A generator expression consumed at once (an argument of sum, list, np.array, ...,
        or the sequence of a for loop) is the list of its items; anywhere else, reading
        differentiable values, it is refused."""
        if id(node) in self.consumed and A.names_read(node) & self.owner.ctx.varied:
            comp = gast.ListComp(elt=node.elt, generators=node.generators)
            return self.visit_ListComp(A.located(comp, node))
        if A.names_read(node) & self.owner.ctx.varied:
            self.owner.ctx.problem(node, "a generator expression over differentiable values "
                                         "that is not consumed at once",
                                   "Pass it straight to sum/list/tuple/np.array/... or a for "
                                   "loop, or use a list comprehension: [... for ... in ...].")
        return node

    def visit_Call(self, node):
        if _consumes_at_once(node, self.owner.ctx):
            for a in node.args:
                self.consume(a)
        pairs = self.zipped_dict(node)
        if pairs is not None:
            return self.visit_DictComp(A.located(pairs, node))
        if self.is_reduce(node):
            return self.reduce_loop(node)
        if self.is_setdefault(node):
            return self.setdefault_item(node)
        kind = iterator_kind(node, self.owner.ctx)
        if kind is not None and id(node) in self.consumed \
                and A.names_read(node) & self.owner.ctx.varied:
            return self.iterator_items(node, kind)
        return self.visit_map(node)

    def is_setdefault(self, node) -> bool:
        """``d.setdefault(k[, default])`` on a dict variable of this function (one it made,
        a parameter, a helper's result: the item stores it becomes are checked and taken
        back as any are), in a statement that reads differentiable values."""
        func, ctx = node.func, self.owner.ctx
        return (isinstance(func, gast.Attribute) and func.attr == "setdefault"
                and isinstance(func.value, gast.Name) and (
                    func.value.id in self.owner.built or func.value.id in ctx.params
                    or func.value.id in ctx.local_names)
                and 1 <= len(node.args) <= 2 and not node.keywords
                and not any(isinstance(a, gast.Starred) for a in node.args)
                and bool(A.names_read(self.at) & ctx.varied)
                # (an object of a user's class with a setdefault method of its own: a call
                # as any, `'a' not in s` raised a TypeError)
                and self.owner.known_class(func.value.id) is None)

    def setdefault_item(self, node):
        """``d.setdefault(k, v)`` as ``if k not in d: d[k] = v`` before the statement and
        ``d[k]`` in its place: the item, which ``d.setdefault(k, []).append(x)`` then
        changes as ``d[k].append(x)`` does. (``v`` is evaluated always, as Python does,
        unless it is a constant or a display of constants.)"""
        ctx, at = self.owner.ctx, self.at
        name = node.func.value.id
        key, default = [self.visit(a) for a in node.args] + [A.const(None)] * (
            2 - len(node.args))
        if not isinstance(key, (gast.Name, gast.Constant)):
            key = A.load(self.held(key))
        if not _constant_display(default):
            default = A.load(self.held(default))
        if A.names_read(default) & ctx.varied:
            ctx.varied.add(name)
        if name not in self.owner.built:
            # (a parameter or a helper's result: a dict only at run time, when its
            # setdefault is dict's)
            message = (f"{ctx.user_location(at)}: '{name}.setdefault(...)' with "
                       f"differentiable values on an object that is not a dict (its class "
                       f"has a setdefault of its own) is not supported (in "
                       f"{ctx.fn.__name__}()). Call it on a dict, or give the method another "
                       f"name.")
            self.pre.append(self.owner.check(
                "refuse_overridden", A.load(name), A.const("setdefault"),
                A.attr(A.load("dict"), "setdefault"), message=message, at=at))
        missing = gast.Compare(left=A.deepcopy(key), ops=[gast.NotIn()],
                               comparators=[A.load(name)])
        store = A.assign(gast.Subscript(value=A.load(name), slice=A.deepcopy(key),
                                        ctx=gast.Store()), default, at=at)
        self.pre.extend(self.owner.block([A.located(gast.If(
            test=A.located(missing, at), body=[store], orelse=[]), at)]))
        return A.located(gast.Subscript(value=A.load(name), slice=A.deepcopy(key),
                                        ctx=gast.Load()), node)

    def iterator_items(self, node, kind: str):
        """An ``itertools`` call consumed at once, as its items (iterator_idioms)."""
        ctx = self.owner.ctx
        sequences = node.args[:1] if kind in ("islice", "accumulate") else node.args
        for a in sequences:
            self.consume(a)
        sequences = [self.visit(a) for a in sequences]
        if kind == "chain":
            parts = A.located(gast.Tuple(elts=sequences, ctx=gast.Load()), node)
            return self.visit_ListComp(flattened(parts, ctx.namer, node))
        if kind == "from_iterable":
            return self.visit_ListComp(flattened(sequences[0], ctx.namer, node))
        if kind == "islice":
            node.args[1:] = [self.visit(a) for a in node.args[1:]]
            return islice_subscript(node, sequences[0])
        if kind == "product":
            return self.visit_ListComp(product_comprehension(
                node, [self.held(seq) for seq in sequences], ctx.namer))
        func = node.args[1] if len(node.args) == 2 else keyword(node, "func")
        initial = keyword(node, "initial")
        func = None if func is None or is_none(func) else self.visit(func)
        if func is not None and not (isinstance(func, (gast.Name, gast.Attribute))
                                     and A.names_read(func).isdisjoint(ctx.local_names)):
            func = A.load(self.held(func))  # (a lambda or other value: evaluated once, first)
        initial = None if initial is None or is_none(initial) else self.visit(initial)
        statements, out = accumulate_statements(node, sequences[0], func, initial, ctx)
        self.pre.extend(self.owner.block(statements))
        return A.load(out)

    def held(self, value) -> str:
        """A fresh name bound to ``value`` before the statement (evaluated once, here)."""
        ctx = self.owner.ctx
        name = ctx.namer.fresh("_s")
        if A.names_read(value) & ctx.varied:
            ctx.varied.add(name)
        self.pre.extend(self.owner.block([A.assign(name, value, at=self.at)]))
        return name

    def is_reduce(self, node) -> bool:
        """``functools.reduce(f, xs[, start])`` of differentiable values, arguments as
        written (no keywords, no ``*``)."""
        import functools
        ctx = self.owner.ctx
        if not (2 <= len(node.args) <= 3 and not node.keywords
                and not any(isinstance(a, gast.Starred) for a in node.args)
                and A.names_read(node) & ctx.varied):
            return False
        return known_value(node.func, ctx) is functools.reduce

    def reduce_loop(self, node):
        """``reduce(f, xs, start)`` as the loop it runs before the statement, ``_r = start;
        for _v in xs: _r = f(_r, _v)`` (without ``start``: xs's first item, and the same
        TypeError on an empty xs), read where the call was."""
        ctx, at = self.owner.ctx, self.at
        namer = ctx.namer
        fn, seq = node.args[0], node.args[1]
        self.consume(seq)
        seq = self.visit(seq)
        fn = self.visit(fn)
        acc, item = namer.fresh("_r"), namer.unique("_v")
        if not (isinstance(fn, (gast.Name, gast.Attribute)) and A.names_read(fn).isdisjoint(
                ctx.local_names)):
            f_name = namer.fresh("_f")  # (a lambda or other value: evaluated once, first)
            self.pre.append(A.assign(f_name, fn, at=at))
            fn = A.load(f_name)
        step = A.assign(acc, A.located(gast.Call(func=fn, args=[A.load(acc), A.load(item)],
                                                 keywords=[]), node), at=at)
        if len(node.args) == 3:
            start, items = [A.assign(acc, self.visit(node.args[2]), at=at)], seq
        else:
            whole = namer.fresh("_s")
            ctx.varied.add(whole)
            empty = A.located(gast.Raise(exc=A.call("TypeError", A.const(
                "reduce() of empty iterable with no initial value")), cause=None), at)
            start = [A.assign(whole, A.call("list", seq), at=at),
                     A.located(gast.If(test=gast.UnaryOp(op=gast.Not(), operand=A.load(whole)),
                                       body=[empty], orelse=[]), at),
                     A.assign(acc, gast.Subscript(value=A.load(whole), slice=A.const(0),
                                                  ctx=gast.Load()), at=at)]
            items = gast.Subscript(value=A.load(whole), slice=gast.Slice(
                lower=A.const(1), upper=None, step=None), ctx=gast.Load())
        loop = A.located(gast.For(target=A.store(item), iter=items, body=[step], orelse=[],
                                  type_comment=None), at)
        ctx.varied |= {acc, item}
        self.pre.extend(self.owner.block(start + [loop]))
        return A.load(acc)

    def zipped_dict(self, node):
        """``dict(zip(ks, vs))`` of differentiable values as ``{k: v for k, v in zip(ks,
        vs)}``: the same pairs in the same order (a repeated key keeps its last value in
        both), built by the comprehension's lowering, which has adjoints."""
        ctx = self.owner.ctx
        if not (isinstance(node.func, gast.Name) and node.func.id == "dict"
                and _builtin("dict", ctx) and len(node.args) == 1 and not node.keywords):
            return None
        inner = node.args[0]
        if not (isinstance(inner, gast.Call) and isinstance(inner.func, gast.Name)
                and inner.func.id == "zip" and _builtin("zip", ctx) and len(inner.args) == 2
                and not inner.keywords
                and not any(isinstance(a, gast.Starred) for a in inner.args)
                and A.names_read(inner) & ctx.varied):
            return None
        k, v = ctx.namer.unique("_k"), ctx.namer.unique("_v")
        target = gast.Tuple(elts=[A.store(k), A.store(v)], ctx=gast.Store())
        return gast.DictComp(key=A.load(k), value=A.load(v), generators=[
            gast.comprehension(target=target, iter=inner, ifs=[], is_async=0)])

    def visit_map(self, node):
        """``map(f, xs)`` of differentiable values consumed at once (like a generator
        expression) is ``[f(v) for v in xs]``. Anywhere else its single-pass iterator would
        differ from a list (a second ``sum(m)`` is 0), so it is left to be refused."""
        varied = _is_map_call(node, self.owner.ctx) and bool(
            A.names_read(node) & self.owner.ctx.varied)
        if varied and id(node) in self.consumed and (
                len(node.args) == 2 or _builtin("zip", self.owner.ctx)):
            fn = node.args[0]
            if _plain_lambda(fn, len(node.args) - 1):
                # map(lambda u: e, xs) is [e for u in xs]: the lambda runs at once, reading
                # the variables it closes over as they are now, as the comprehension does
                items = [a.id for a in fn.args.args]
            else:
                items = [self.owner.ctx.namer.unique("_v") for _ in node.args[1:]]
            if len(items) == 1:  # map(f, xs)
                target, seq = A.store(items[0]), node.args[1]
            else:  # map(f, xs, ys): zip's items, as long as the shortest
                target = gast.Tuple(elts=[A.store(v) for v in items], ctx=gast.Store())
                seq = gast.Call(func=A.load("zip"), args=node.args[1:], keywords=[])
            elt = fn.body if _plain_lambda(fn, len(items)) else \
                gast.Call(func=fn, args=[A.load(v) for v in items], keywords=[])
            comp = gast.ListComp(
                elt=elt,
                generators=[gast.comprehension(target=target, iter=seq, ifs=[], is_async=0)])
            return self.visit_ListComp(A.located(comp, node))
        if varied and getattr(node.args[0], "srcgrad_inlined", False):
            # its captured variables were not bound, counting on this lowering
            raise InternalError("desugar", "a map(lambda ...) marked for inlining was not "
                                "lowered", self.owner.ctx.user_location(node))
        self.generic_visit(node)
        return node

    def visit_DictComp(self, node):
        return self.lower(node, gast.Dict(keys=[], values=[]), [node.key, node.value])

    def lower(self, node, empty, parts):
        # only the first sequence is evaluated out here; the rest, the conditions and the
        # items (and comprehensions nested in them) are lowered inside the loops
        self.consume(node.generators[0].iter)
        node.generators[0].iter = self.visit(node.generators[0].iter)
        ctx, namer, at = self.owner.ctx, self.owner.ctx.namer, self.at
        result = namer.fresh("_l")
        # comprehension variables get fresh names: they must not clobber the function's
        renames = {}
        for gen in node.generators:
            for n in gast.walk(gen.target):
                if isinstance(n, gast.Name):
                    renames.setdefault(n.id, A.load(namer.unique("_" + n.id)))
        rename = A.NameReplacer(renames)

        def fix(e):
            e = rename.visit(e)
            for n in gast.walk(e):
                if isinstance(n, gast.Name) and n.id in renames:
                    n.id = renames[n.id].id
            return e

        inner_varied = set(ctx.varied)
        for gen in node.generators:  # the loop variables of varied sequences vary too
            if A.names_read(gen.iter) & inner_varied:
                names = A.names_written(gen.target)
                inner_varied |= names
                ctx.varied |= {renames[n].id for n in names if n in renames}
        varied = bool(A.names_read(node) & ctx.varied)
        if isinstance(empty, gast.List):
            elt = fix(parts[0])
            if varied:
                add = [A.assign(result, A.call(A.attr(ctx.rt, "list_append"), A.load(result),
                                               elt), at=at)]
            else:
                add = [A.expr_stmt(A.call(A.attr(result, "append"), elt), at=at)]
        else:
            key, value = fix(parts[0]), fix(parts[1])
            if varied:
                add = [A.assign(result, A.call(A.attr(ctx.rt, "setitem"), A.load(result), key,
                                               value), at=at)]
            else:
                add = [A.assign(gast.Subscript(value=A.load(result), slice=key,
                                               ctx=gast.Store()), value, at=at)]
        body = add
        for gen in reversed(node.generators):
            for cond in reversed(gen.ifs):
                body = [A.located(gast.If(test=fix(cond), body=body, orelse=[]), at)]
            loop = gast.For(target=fix(gen.target), iter=fix(gen.iter) if gen is not
                            node.generators[0] else gen.iter, body=body, orelse=[],
                            type_comment=None)
            body = [A.located(loop, at)]
        if varied:
            ctx.varied.add(result)
        self.pre.append(A.assign(result, empty, at=at))
        self.pre.extend(self.owner.block(body))
        return A.load(result)


def _numpy_call(value, ctx: Context) -> bool:
    """``value`` calls one of numpy's functions (an array, never a list or dict)."""
    if not isinstance(value, gast.Call):
        return False
    fn = known_value(value.func, ctx)
    return (getattr(fn, "__module__", None) or "").split(".")[0] == "numpy" \
        or isinstance(fn, np.ufunc)


def _built_containers(tree, ctx: Context, makes=None) -> set[str]:
    """The names of ``tree``'s own scope every binding of which makes a new list or dict: a
    display, a comprehension, ``list(...)``/``dict(...)``, ``[...] * n``. (Not a parameter,
    nor a name bound any other way too: a loop target, an unpacking, a call's result. On a
    list or dict, ``rows += [...]`` and ``d |= {...}`` change the object, not the binding.)
    ``makes(value, ctx)``: whether a bound value is new, instead (``_new_object``)."""
    makes = makes or _new_container
    stores: dict[str, int] = {}
    made: dict[str, int] = {}
    declared = set(ctx.params)
    extended = {id(n.target) for n in own_nodes(tree) if isinstance(n, gast.AugAssign)}
    for node in own_nodes(tree):
        if isinstance(node, (gast.Global, gast.Nonlocal)):
            declared |= set(node.names)
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) \
                and id(node) not in extended:
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, gast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], gast.Name) and makes(node.value, ctx):
            made[node.targets[0].id] = made.get(node.targets[0].id, 0) + 1
    return {n for n, count in made.items() if count == stores[n] and n not in declared}


def _init_fields(cls) -> tuple | None:
    """The parameters of ``cls(...)`` that only store their argument in the attribute of
    that name, in order: ``None`` for any keyword of ``SimpleNamespace``; the fields of a
    plain dataclass (its own ``__init__``, no ``__post_init__``, not frozen, no init-only
    variables); else raises KeyError."""
    import dataclasses
    if cls is types.SimpleNamespace:
        return None
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)
            and not hasattr(cls, "__post_init__") and cls.__setattr__ is object.__setattr__
            and "__init__" in vars(cls) and not hasattr(cls, "__slots__")):
        raise KeyError(cls)
    code = getattr(vars(cls)["__init__"], "__code__", None)
    if code is None or code.co_filename != "<string>":  # (the user's own __init__)
        raise KeyError(cls)
    names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    params = tuple(inspect.signature(cls).parameters)
    if params != names:  # (an InitVar, or an __init__ of the user's)
        raise KeyError(cls)
    return names


def _bind_fields(call, fields) -> list | None:
    """``[(attribute, argument)]`` of ``call`` to a class whose parameters are ``fields``
    (None: keywords only), or None when it passes ``*``/``**`` or unknown names."""
    if any(isinstance(a, gast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return None
    if fields is None:
        return None if call.args else [(k.arg, k.value) for k in call.keywords]
    if len(call.args) > len(fields) or any(k.arg not in fields for k in call.keywords):
        return None
    return list(zip(fields, call.args)) + [(k.arg, k.value) for k in call.keywords]


def _new_object(value, ctx: Context) -> bool:
    """``value`` calls a user's class (or ``SimpleNamespace``), making a new object with a
    ``__dict__`` of its own."""
    if not isinstance(value, gast.Call):
        return False
    cls = known_value(value.func, ctx)
    if cls in _COPIERS and value.args or _users_function(cls):
        # (a helper's result may be an object something else holds, as a copy's attributes
        # may: the run-time checks look for it from the variables, the globals and what the
        # user's functions read, runtime.function_reads)
        return True
    if cls is runtime.new_instance:  # (adapters.constructor_adapter)
        return True
    return isinstance(cls, type) and cls.__new__ is object.__new__ \
        and not issubclass(cls, (np.ndarray, BaseException)) \
        or cls is types.SimpleNamespace


# calls that always return a new object (a shallow copy's attributes may be held elsewhere
# too: a store through one is checked at run time, refuse_shared_path, as for any object)
_COPIERS = (copy.copy, copy.deepcopy, dataclasses.replace, object.__new__)


def _users_function(fn) -> bool:
    """Whether ``fn`` is a plain function of the user's (not a library's)."""
    return isinstance(fn, types.FunctionType) and (
        getattr(fn, "__module__", None) or "").split(".")[0] not in _LIBRARIES


def _constant_display(node) -> bool:
    """A constant, or a list/tuple/dict display of constants: evaluating it has no effect
    but making the value."""
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, (gast.List, gast.Tuple)):
        return all(_constant_display(e) for e in node.elts)
    return isinstance(node, gast.Dict) and all(
        k is not None and _constant_display(k) for k in node.keys) and all(
        _constant_display(v) for v in node.values)


def _new_container(value, ctx: Context) -> bool:
    """``value`` certainly makes a new list or dict (its items may be anybody's)."""
    if isinstance(value, (gast.List, gast.Dict, gast.ListComp, gast.DictComp)):
        return True
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Mult):
        return isinstance(value.left, gast.List) or isinstance(value.right, gast.List)
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
        and (_is_builtin(value.func.id, "list", ctx) or _is_builtin(value.func.id, "dict", ctx))


def index_value(node):
    """An index as an ordinary expression: ``a:b`` becomes ``slice(a, b, None)``."""
    if isinstance(node, gast.Slice):
        parts = [A.const(None) if p is None else p for p in (node.lower, node.upper, node.step)]
        return A.call("slice", *parts)
    if isinstance(node, gast.Tuple):
        return gast.Tuple(elts=[index_value(e) for e in node.elts], ctx=gast.Load())
    return node


def _as_load(node):
    for n in gast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = gast.Load()
    return node


def _builtin_call(node, ctx: Context) -> str | None:
    """'enumerate', 'zip', 'reversed' when ``node`` calls that builtin."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
            and node.func.id in ("enumerate", "zip", "reversed") \
            and node.func.id not in ctx.local_names and not node.keywords:
        import builtins
        try:
            return node.func.id if ctx.lookup_static(node.func.id) is getattr(
                builtins, node.func.id) else None
        except (KeyError, AttributeError):
            return None
    return None


def _dict_view_call(node) -> bool:
    """``d.items()``, ``d.keys()`` or ``d.values()``: a view, which has no items by index."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
        and node.func.attr in ("items", "keys", "values") and not node.args \
        and not node.keywords


def _generator_call(node, ctx: Context) -> bool:
    """``node`` calls a generator function (whose result has no len())."""
    import inspect
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)):
        return False
    try:
        return inspect.isgeneratorfunction(ctx.lookup_static(node.func.id))
    except (KeyError, AttributeError):
        return False


def _is_range(node, ctx: Context) -> bool:
    """``range(...)`` of the builtin range."""
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and node.func.id == "range"):
        return False
    try:
        import builtins
        return ctx.lookup_static("range") is builtins.range
    except (KeyError, AttributeError):
        return False


def _is_map_call(node, ctx: Context) -> bool:
    """``node`` is ``map(f, xs, ...)`` (builtin map, also under another name)."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and len(node.args) >= 2 and not node.keywords
            and not any(isinstance(a, gast.Starred) for a in node.args)
            and _is_builtin(node.func.id, "map", ctx))


def _plain_lambda(fn, n: int) -> bool:
    """``lambda a, b: ...`` taking exactly ``n`` positional parameters, nothing else."""
    a = getattr(fn, "args", None)
    return (isinstance(fn, gast.Lambda) and len(a.args) == n and not a.posonlyargs
            and a.vararg is None and a.kwarg is None and not a.kwonlyargs and not a.defaults)


def _consumers() -> frozenset:
    """Functions that read every item of an iterable argument once, during the call, and keep
    no iterator over it: a generator or map there may be the list of its items."""
    import builtins
    import functools
    import math
    import statistics
    names = ("sum", "list", "tuple", "set", "frozenset", "sorted", "min", "max", "any", "all",
             "dict")
    spreads = ("mean", "fmean", "median", "variance", "pvariance", "stdev", "pstdev")
    return frozenset(id(f) for f in (
        *(getattr(builtins, n) for n in names), *(getattr(statistics, n) for n in spreads),
        math.fsum, math.prod, functools.reduce, np.fromiter))
# (np.array of a generator is a 0-d object array, np.stack/concatenate refuse one: not here)


_CONSUMERS = _consumers()


def _consumes_at_once(call, ctx: Context) -> bool:
    fn = known_value(call.func, ctx)
    return fn is not None and id(fn) in _CONSUMERS


def _is_builtin(name: str, builtin: str, ctx: Context) -> bool:
    """``name`` refers to the builtin ``builtin`` (``_map = map`` counts) in the function's
    scope."""
    import builtins
    try:  # (a local name raises KeyError)
        return ctx.lookup_static(name) is getattr(builtins, builtin)
    except (KeyError, AttributeError):
        return False


def _builtin(name: str, ctx: Context) -> bool:
    """``name`` refers to the builtin of that name in the function's scope."""
    return _is_builtin(name, name, ctx)


# container methods no rewrite follows on differentiable values (a set's): one of these
# called on an object of a class not known here may be a user's method changing it
_UNREWRITTEN = {"add", "discard", "popitem"}

# methods after which their object holds what their arguments hold
_STORING_METHODS = {"append", "extend", "insert", "update", "setdefault", "add", "__setitem__"}

# values that never hold another variable's data (booleans, numbers, strings)
# libraries whose functions return new arrays unless they make views (tracked as views)
_LIBRARIES = {"numpy", "scipy", "math", "builtins", "srcgrad"}

_NO_SHARED_DATA = (gast.Compare, gast.BoolOp, gast.Constant, gast.JoinedStr)

_VIEW_FUNCTIONS = {"reshape", "ravel", "transpose", "swapaxes", "moveaxis", "squeeze",
                   "expand_dims", "broadcast_to", "view", "T", "real", "imag", "diagonal",
                   "asarray", "atleast_1d", "atleast_2d", "atleast_3d", "flat"}


def _view_relation(s):
    """``(views, bases)`` of a statement: after it, each name in ``views`` may see the data of
    each name in ``bases`` (``v = y[:1]``, ``d[k] = v``, ``xs.append(v)``, a loop target...),
    or None when it makes no such relation."""
    if isinstance(s, gast.For):
        views, bases = A.names_written(s.target), A.names_read(s.iter)
    elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) \
            and isinstance(s.value.func, gast.Attribute) \
            and s.value.func.attr in _STORING_METHODS:
        # xs.append(v), d.update(...): the container now holds what its arguments hold
        views = {_root(s.value.func.value)} - {None}
        bases = set().union(*[A.names_read(a) for a in s.value.args],
                            *[A.names_read(k.value) for k in s.value.keywords])
    elif isinstance(s, gast.Assign) and len(s.targets) == 1 \
            and isinstance(s.targets[0], (gast.Subscript, gast.Attribute)):
        views, bases = {_root(s.targets[0])} - {None}, A.names_read(s.value)  # d[k] = v
    elif isinstance(s, gast.AugAssign):  # xs += [v]: a list extended in place
        views, bases = {_root(s.target)} - {None}, A.names_read(s.value)
    elif isinstance(s, gast.Assign) and (len(s.targets) > 1 or not isinstance(
            s.targets[0], gast.Name)):  # a, b = y, e; a = b = y
        views = set().union(*[A.names_written(t) for t in s.targets])
        bases = A.names_read(s.value)
    elif isinstance(s, gast.Assign) and len(s.targets) == 1 \
            and isinstance(s.targets[0], gast.Name):
        views = {s.targets[0].id}
        if _may_be_view(s.value) and _fresh_chain(s.value):
            return None
        if _may_be_view(s.value):
            # (names read, when which one is viewed is not known: more checks, never
            # a view missed)
            bases = _viewed_names(s.value) or A.names_read(s.value)
        elif isinstance(s.value, _NO_SHARED_DATA):
            return None
        else:
            bases = A.names_read(s.value)
    else:
        return None
    return views, bases


def _viewed_names(value) -> set[str]:
    """The variables whose data a view expression may share: ``_viewed_name``'s, and for
    ``a if c else b`` those of each branch that may be a view or is a name (an alias)."""
    if isinstance(value, gast.IfExp):
        out = set()
        for branch in (value.body, value.orelse):
            if isinstance(branch, gast.Name):
                out.add(branch.id)
            elif _may_be_view(branch):
                out |= _viewed_names(branch)
        return out
    name = _viewed_name(value)
    return set() if name is None else {name}


def _viewed_name(value) -> str | None:
    """The variable whose data a view expression (``y[:1]``, ``y.T``, ``y.reshape(...)``,
    ``np.reshape(y, ...)``) may share."""
    if isinstance(value, gast.IfExp):
        names = sorted(_viewed_names(value))
        return names[0] if names else None
    if isinstance(value, (gast.Subscript, gast.Attribute)):
        return _view_root(value.value)
    if isinstance(value, gast.Call):
        func = value.func
        if isinstance(func, gast.Attribute) and not (isinstance(func.value, gast.Name)
                                                     and func.value.id in ("np", "numpy")):
            return _view_root(func.value)  # y.reshape(...)
        if value.args:
            return _view_root(value.args[0])  # np.reshape(y, ...)
    return None


def _view_root(value) -> str | None:
    """The variable at the root of a chain of views: ``y`` in ``y[0]``,
    ``y.reshape(1, 3).reshape(3)``, ``np.transpose(y.T)``. (A chain through anything else,
    an operator or another call, makes new data: None.)"""
    if isinstance(value, gast.Name):
        return value.id
    if _may_be_view(value):
        return _viewed_name(value)
    return None


def _copying_index(index) -> bool:
    """An index numpy's advanced indexing reads, which always copies: a list or a list
    comprehension, ``np.array([...])``, also as one part of a tuple (``y[[0, 2]]``,
    ``y[:, [0]]``, ``y[np.array([True, False])]``)."""
    if isinstance(index, gast.Tuple):
        return any(_copying_index(e) for e in index.elts)
    if isinstance(index, (gast.List, gast.ListComp)):
        return True
    return (isinstance(index, gast.Call) and isinstance(index.func, gast.Attribute)
            and isinstance(index.func.value, gast.Name) and index.func.value.id in ("np", "numpy")
            and index.func.attr == "array" and len(index.args) == 1
            and isinstance(index.args[0], gast.List))


def _fresh_chain(value) -> bool:
    """A chain of views whose bottom makes new data (``a[[-1]].reshape(3)``, ``(a + 1).T``):
    it shares no variable's data."""
    while _may_be_view(value) and not isinstance(value, gast.IfExp):
        if isinstance(value, (gast.Subscript, gast.Attribute)):
            value = value.value
        elif isinstance(value.func, gast.Attribute) and not (
                isinstance(value.func.value, gast.Name)
                and value.func.value.id in ("np", "numpy")):
            value = value.func.value
        elif value.args:
            value = value.args[0]
        else:
            return False
    return isinstance(value, (gast.BinOp, gast.UnaryOp)) or (
        isinstance(value, gast.Subscript) and _copying_index(value.slice))


def _may_be_view(value) -> bool:
    """A value that may share memory with another: indexing, or a function or method known
    to return views (reshape, transpose, ...); a conditional expression one of whose branches
    may be a view or is another variable."""
    if isinstance(value, gast.IfExp):
        return any(isinstance(b, gast.Name) or _may_be_view(b)
                   for b in (value.body, value.orelse))
    if isinstance(value, gast.Subscript):
        return not _copying_index(value.slice)
    if isinstance(value, gast.Attribute):
        return value.attr in _VIEW_FUNCTIONS
    if isinstance(value, gast.Call):
        func = value.func
        name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", "")
        return name in _VIEW_FUNCTIONS
    return False


_OP_TEXT = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**",
            gast.MatMult: "@", gast.FloorDiv: "//", gast.Mod: "%"}


def _op_text(op) -> str:
    return _OP_TEXT.get(type(op), "op")


_VARIED_MANAGER = ("a context manager made from differentiable values",
                   "Enter it outside the differentiated function, or build it from values "
                   "that carry no gradient.")


def is_context_marker(s, rt: str, kind: str):
    """The call of ``_rt.enter_context`` (``kind='enter'``) or ``_rt.exit_context`` in ``s``."""
    value = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
    return value if A.called_attr(value, rt) == f"{kind}_context" else None


def regroup_contexts(stmts: list, rt: str) -> list:
    """Generated code: each ``enter_context`` ... ``exit_context`` run of statements of one
    block becomes ``with _rt.managed(cm, where) as v:``, so that the manager exits (and sees
    the exception) when its body raises."""
    out, i = [], 0
    while i < len(stmts):
        s = stmts[i]
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, regroup_contexts(getattr(s, field), rt))
        enter = is_context_marker(s, rt, "enter")
        if enter is None:
            out.append(s)
            i += 1
            continue
        manager = enter.args[0].id
        j = i + 1
        while j < len(stmts):
            other = is_context_marker(stmts[j], rt, "exit")
            if other is not None and other.args[0].id == manager:
                break
            j += 1
        body = regroup_contexts(stmts[i + 1:j], rt) or [gast.Pass()]
        target = A.store(s.targets[0].id) if isinstance(s, gast.Assign) else None
        item = gast.withitem(context_expr=A.call(A.attr(rt, "managed"), *enter.args),
                             optional_vars=target)
        out.append(A.located(gast.With(items=[item], body=body, type_comment=None), s))
        i = j + 1
    return out
